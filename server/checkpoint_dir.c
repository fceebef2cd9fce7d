/*
 * checkpoint_dir.c: a Hugging Face model folder into a struct attn_checkpoint
 * (see checkpoint_dir.h). The steps, each failing with the path at fault:
 *   1. DIR/config.json read whole and parsed (api/checkpoint_config.c);
 *   2. the weights' files named: model.safetensors, or else the shards of
 *      model.safetensors.index.json (api_checkpoint_index), each once;
 *   3. each file mapped read-only, whole;
 *   4. attn_checkpoint_load over the mappings (engine/checkpoint.c), every
 *      weight but the embedding tables copied onto 2 MiB pages (huge_alloc)
 *      when the kernel offers them (checkpoint_dir_copies_weights; else F32 is read in
 *      place, as the copy would buy nothing);
 *   5. DIR/tokenizer.json read whole when the folder has one.
 * Why copy F32 at all: the stack's GEMMs read every matrix once a pass, and
 * from the file's 4 KiB pages at L = 128 that cost gpt2 15-30% of its speed
 * against the same weights on 2 MiB pages (bench/README.md, Checkpoints).
 * The embedding tables stay in the mapping: a request reads a few rows.
 *
 * The engine copies a few MiB at a time and reports each range done; the
 * range leaves the mapping (MADV_DONTNEED: its pages stay in the page cache,
 * out of this process), so resident memory stays about the weights' size
 * during the load, not twice. The range is widened to the 2 MiB boundaries
 * around it: the page cache holds a file in folios of up to 2 MiB, and a
 * fault maps a folio's neighbouring pages too, so the tail of the tensor
 * before would otherwise stay mapped at every boundary (56 MB of gpt2's
 * 498 MB with 4 KiB rounding, on ext4 under Linux 6.18). Dropping a page
 * still to be read costs one more fault; a private read-only mapping is
 * never written, so nothing is lost.
 */
#define _DEFAULT_SOURCE /* madvise, MADV_DONTNEED */
#include "checkpoint_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/checkpoint_config.h"
#include "api/tokenizer_file.h"
#include "common/huge_alloc.h"

#define CKDIR_PATH 4096
#define CKDIR_SHARD_MAX (64ULL << 30) /* one shard: 64 GiB */

/* dir + "/" + name into out[CKDIR_PATH]; -1 when it does not fit. */
static int join(char out[CKDIR_PATH], const char *dir, const char *name, char *err, size_t errlen)
{
	int n = snprintf(out, CKDIR_PATH, "%s/%s", dir, name);

	if (n < 0 || n >= CKDIR_PATH) {
		snprintf(err, errlen, "%s: path too long for %s", dir, name);
		return -1;
	}
	return 0;
}

static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Opens path and checks it is a regular file of at most max bytes. Opened
 * without blocking: a FIFO in its place would otherwise hold start-up in
 * open() until a writer came, before the check could refuse it (the flag
 * changes nothing for a regular file's reads or its mapping). */
static int open_sized(const char *path, unsigned long long max, int *fd, size_t *size, char *err,
		      size_t errlen)
{
	struct stat st;

	*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (*fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto fail;
	}
	if (st.st_size <= 0 || (unsigned long long)st.st_size > max ||
	    (unsigned long long)st.st_size > SIZE_MAX) {
		snprintf(err, errlen, "%s: %lld bytes (expected 1 .. %llu)", path,
			 (long long)st.st_size, max);
		goto fail;
	}
	*size = (size_t)st.st_size;
	return 0;
fail:
	close(*fd);
	*fd = -1;
	return -1;
}

/* A whole small file into a new malloc'd buffer (the caller frees it). */
static int read_whole(const char *path, unsigned long long max, char **out, size_t *len, char *err,
		      size_t errlen)
{
	size_t size = 0, got = 0;
	int fd;
	char *buf;

	*out = NULL;
	if (open_sized(path, max, &fd, &size, err, errlen) != 0)
		return -1;
	buf = malloc(size);
	while (buf != NULL && got < size) {
		ssize_t n = read(fd, buf + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (buf == NULL || got != size) {
		snprintf(err, errlen, "%s: %s", path,
			 buf == NULL ? "out of memory" : "read failed");
		free(buf);
		return -1;
	}
	*out = buf;
	*len = size;
	return 0;
}

/* Maps file i of d, its name (the full path) a new string. */
static int map_file(struct checkpoint_dir *d, const char *dir, const char *name, char *err,
		    size_t errlen)
{
	struct attn_st_file *f = &d->files[d->n_files];
	char path[CKDIR_PATH];
	size_t size = 0;
	void *p;
	int fd;

	if (join(path, dir, name, err, errlen) != 0 ||
	    open_sized(path, CKDIR_SHARD_MAX, &fd, &size, err, errlen) != 0)
		return -1;
	p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd); /* the mapping keeps the file */
	if (p == MAP_FAILED) {
		snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
		return -1;
	}
	f->name = strdup(path);
	if (f->name == NULL) {
		munmap(p, size);
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	f->bytes = p;
	f->len = size;
	d->n_files++;
	d->mapped_bytes += size;
	return 0;
}

/* The single file's name in a new one-entry d->files. */
static int map_single(struct checkpoint_dir *d, const char *dir, char *err, size_t errlen)
{
	d->files = calloc(1, sizeof *d->files);
	if (d->files == NULL) {
		snprintf(err, errlen, "%s: out of memory", dir);
		return -1;
	}
	return map_file(d, dir, "model.safetensors", err, errlen);
}

/* Steps 2 and 3: model.safetensors, or else the index's shards. */
static int map_weights(struct checkpoint_dir *d, const char *dir, char *err, size_t errlen)
{
	char single[CKDIR_PATH], path[CKDIR_PATH], **shards = NULL, *json = NULL;
	size_t n = 0, len = 0;
	int rc = -1;

	if (join(single, dir, "model.safetensors", err, errlen) != 0 ||
	    join(path, dir, "model.safetensors.index.json", err, errlen) != 0)
		return -1;
	if (is_file(single))
		return map_single(d, dir, err, errlen);
	if (!is_file(path)) {
		snprintf(err, errlen, "%s: no model.safetensors or model.safetensors.index.json",
			 dir);
		return -1;
	}
	if (read_whole(path, API_CHECKPOINT_INDEX_MAX, &json, &len, err, errlen) != 0 ||
	    api_checkpoint_index(&shards, &n, json, len, path, err, errlen) != 0)
		goto out;
	d->files = calloc(n, sizeof *d->files);
	if (d->files == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (map_file(d, dir, shards[i], err, errlen) != 0)
			goto out;
	rc = 0;
out:
	api_checkpoint_shards_free(shards, n);
	free(json);
	return rc;
}

static int read_config(struct checkpoint_dir *d, const char *dir, char *err, size_t errlen)
{
	char path[CKDIR_PATH], *json = NULL;
	size_t len = 0;
	int rc;

	if (join(path, dir, "config.json", err, errlen) != 0 ||
	    read_whole(path, API_CHECKPOINT_CONFIG_MAX, &json, &len, err, errlen) != 0)
		return -1;
	rc = api_checkpoint_config(&d->cfg, json, len, path, err, errlen);
	free(json);
	return rc;
}

static int read_tokenizer(struct checkpoint_dir *d, const char *dir, char *err, size_t errlen)
{
	char path[CKDIR_PATH];

	if (join(path, dir, "tokenizer.json", err, errlen) != 0)
		return -1;
	if (!is_file(path))
		return 0;
	return read_whole(path, API_TOKENIZER_FILE_MAX, &d->tokenizer_json, &d->tokenizer_len, err,
			  errlen);
}

int checkpoint_dir_copies_weights(void)
{
	char text[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (f == NULL)
		return 0;
	if (fgets(text, sizeof text, f) == NULL)
		text[0] = '\0';
	fclose(f);
	return huge_pages_mode(text);
}

/* The engine's memory for copied weights: 2 MiB pages from 4 MiB on. */
static void *weights_alloc(void *ctx, size_t bytes)
{
	(void)ctx;
	return huge_alloc(bytes);
}

static void weights_release(void *ctx, void *p)
{
	(void)ctx;
	free(p);
}

#define CKDIR_FOLIO ((uintptr_t)2 << 20)

/* Bytes the engine has copied out of file i leave this process, with the
 * rest of the 2 MiB around them that lies in the file (the opening comment). */
static void weights_done(void *ctx, size_t file, size_t at, size_t len)
{
	const struct checkpoint_dir *d = ctx;
	uintptr_t base = (uintptr_t)d->files[file].bytes, page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t end = base + d->files[file].len;
	uintptr_t from = (base + at) / CKDIR_FOLIO * CKDIR_FOLIO;
	uintptr_t to = (base + at + len + CKDIR_FOLIO - 1) / CKDIR_FOLIO * CKDIR_FOLIO;

	from = from < base ? base : from; /* the mapping starts page-aligned */
	to = to > end ? (end + page - 1) / page * page : to;
	(void)madvise((void *)from, to - from, MADV_DONTNEED); /* a hint; refused, they stay */
}

int checkpoint_dir_load(struct checkpoint_dir *out, const char *dir, char *err, size_t errlen)
{
	struct attn_error e = {0};
	const struct attn_checkpoint_memory mem = {.copy_f32 = checkpoint_dir_copies_weights(),
						   .alloc = weights_alloc,
						   .release = weights_release,
						   .done = weights_done,
						   .ctx = out};

	memset(out, 0, sizeof *out);
	if (read_config(out, dir, err, errlen) != 0 || map_weights(out, dir, err, errlen) != 0)
		goto fail;
	if (attn_checkpoint_load(&out->ck, &out->cfg, out->files, out->n_files, &mem, &e) !=
	    ATTN_OK) {
		/* the engine's message names the file (a full path) and the tensor;
		 * one about the stack as a whole gets the folder in front */
		if (strncmp(e.message, dir, strlen(dir)) == 0)
			snprintf(err, errlen, "%s", e.message);
		else
			snprintf(err, errlen, "%s: %s", dir, e.message);
		goto fail;
	}
	if (read_tokenizer(out, dir, err, errlen) != 0)
		goto fail;
	return 0;
fail:
	checkpoint_dir_release(out);
	return -1;
}

void checkpoint_dir_release(struct checkpoint_dir *d)
{
	attn_checkpoint_free(d->ck); /* first: it points into the mappings */
	for (size_t i = 0; i < d->n_files; i++) {
		munmap((void *)(uintptr_t)d->files[i].bytes, d->files[i].len);
		free((void *)(uintptr_t)d->files[i].name);
	}
	free(d->files);
	free(d->tokenizer_json);
	memset(d, 0, sizeof *d);
}
