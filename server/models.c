/*
 * models.c: --tokenizer NAME=FILE, and
 * --model NAME=PATH.safetensors[,heads=H][,prefix=P][,vocab=FILE][,tokenizer=T]
 * (one attention layer), or --model NAME=DIR[,tokenizer=T] (a Hugging Face
 * model folder, the whole checkpoint: server/checkpoint_dir.c maps its
 * files; its tokenizer.json, when it has one and no tokenizer= is given,
 * becomes a tokenizer named after the model).
 *
 * The order of a load (models_load):
 *   1. the built-in models, then each --tokenizer;
 *   2. each --model, with the tokenizer it brings (a folder's tokenizer.json
 *      or a tokenizer=FILE), named after the model;
 *   3. the built-in tokenizers whose names steps 1-2 left free: a tokenizer
 *      of one's name, a --tokenizer's or a model's own, stands in its place;
 *      then the built-in checkpoints (mini, with its tokenizer) and one-layer
 *      models (numpy-demo, with its vocabulary) whose names are still free;
 *   4. each model's tokenizer=NAME, which may name a built-in one, mini's
 *      among them (so it waits for step 3);
 *   5. the default.
 * A model's own tokenizer whose name a --tokenizer has is an error: both were
 * asked for, and tokenizer=NAME says which one the model uses.
 *
 * The engine does no I/O, so the file is read whole here (bounded by
 * MODEL_FILE_MAX) and handed to attn_model_from_safetensors; a vocab= file is
 * read whole too (bounded by API_VOCAB_FILE_MAX) and parsed by api/vocab.c
 * against the model's embedding table, after the weights' bytes are freed.
 *
 * Tokenizers are loaded first, so that a model can name one. A tokenizer
 * FILE is a Hugging Face tokenizer.json, unless its name ends in vocab.json
 * or encoder.json (GPT-2's names): then it is a GPT-2 vocabulary and the
 * merges.txt beside it holds its merges. Files are read here and parsed by
 * api/tokenizer_file.c; a big file's bytes are freed before the tokenizer is
 * built from what was read (the two together are most of a load's memory).
 */
#include "models.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/error.h"
#include "checkpoint_dir.h"
#include "engine/safetensors.h"
#include "api/service.h"
#include "api/tokenizer_file.h"
#include "api/vocab.h"

#define MODEL_FILE_MAX (8ULL << 30) /* 8 GiB: one attention layer is far smaller */

struct model_spec {
	char name[80];
	char path[1024];
	char prefix[256];
	char vocab[1024]; /* "" when not given */
	char tokenizer[1024]; /* a --tokenizer NAME or a FILE; "" when not given */
	size_t heads;
};

/* Parses one ",key=value" option of a --model entry. */
static int spec_option(struct model_spec *s, const char *opt, size_t len, char *err, size_t errlen)
{
	char *end = NULL;

	if (len > 6 && strncmp(opt, "heads=", 6) == 0) {
		unsigned long long h = strtoull(opt + 6, &end, 10);

		if (end != opt + len || h == 0 || h > 4096)
			goto bad;
		s->heads = (size_t)h;
		return 0;
	}
	if (len >= 7 && strncmp(opt, "prefix=", 7) == 0 && len - 7 < sizeof s->prefix) {
		memcpy(s->prefix, opt + 7, len - 7);
		s->prefix[len - 7] = '\0';
		return 0;
	}
	if (len > 6 && strncmp(opt, "vocab=", 6) == 0 && len - 6 < sizeof s->vocab) {
		memcpy(s->vocab, opt + 6, len - 6);
		s->vocab[len - 6] = '\0';
		return 0;
	}
	if (len > 10 && strncmp(opt, "tokenizer=", 10) == 0 && len - 10 < sizeof s->tokenizer) {
		memcpy(s->tokenizer, opt + 10, len - 10);
		s->tokenizer[len - 10] = '\0';
		return 0;
	}
bad:
	snprintf(err, errlen,
		 "--model: bad option '%.*s' (heads=H, prefix=P or vocab=FILE); a tokenizer "
		 "is tokenizer=NAME|FILE",
		 (int)len, opt);
	return -1;
}

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int spec_parse(struct model_spec *s, const char *text, char *err, size_t errlen)
{
	const char *eq = strchr(text, '=');
	const char *comma;
	size_t path_len;

	memset(s, 0, sizeof *s);
	if (eq == NULL || eq == text || (size_t)(eq - text) >= sizeof s->name) {
		snprintf(err, errlen,
			 "--model '%s': expected NAME=PATH,heads=H[,prefix=P][,vocab=FILE]"
			 "[,tokenizer=NAME|FILE]",
			 text);
		return -1;
	}
	memcpy(s->name, text, (size_t)(eq - text));
	comma = strchr(eq + 1, ',');
	path_len = comma != NULL ? (size_t)(comma - eq - 1) : strlen(eq + 1);
	if (path_len == 0 || path_len >= sizeof s->path) {
		snprintf(err, errlen, "--model '%s': missing or too long PATH", text);
		return -1;
	}
	memcpy(s->path, eq + 1, path_len);
	while (comma != NULL) {
		const char *next = strchr(comma + 1, ',');
		size_t len = next != NULL ? (size_t)(next - comma - 1) : strlen(comma + 1);

		if (spec_option(s, comma + 1, len, err, errlen) != 0)
			return -1;
		comma = next;
	}
	if (is_dir(s->path)) {
		if (s->heads != 0 || s->prefix[0] != '\0' || s->vocab[0] != '\0') {
			snprintf(err, errlen,
				 "--model %s: %s is a model folder; heads=, prefix= and vocab= "
				 "belong to a one-layer .safetensors file",
				 s->name, s->path);
			return -1;
		}
		return 0;
	}
	if (s->heads == 0) {
		snprintf(err, errlen, "--model %s: heads=H is required (the file does not say)",
			 s->name);
		return -1;
	}
	return 0;
}

/* Checks that f is a regular, non-empty file of at most max bytes (named
 * max_text in the message); its size goes to *size. */
static int file_size(FILE *f, const char *path, unsigned long long max, const char *max_text,
		     size_t *size, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		return -1;
	}
	if (st.st_size <= 0) {
		snprintf(err, errlen, "%s: empty file", path);
		return -1;
	}
	if ((unsigned long long)st.st_size > max || (unsigned long long)st.st_size > SIZE_MAX) {
		snprintf(err, errlen, "%s: %lld bytes, over the %s limit", path,
			 (long long)st.st_size, max_text);
		return -1;
	}
	*size = (size_t)st.st_size;
	return 0;
}

/* Reads a whole file of at most max bytes; *out is malloc'd (caller frees)
 * on success, NULL on failure. */
static int read_file(const char *path, unsigned long long max, const char *max_text,
		     uint8_t **out, size_t *len, char *err, size_t errlen)
{
	/* not blocking, so that a FIFO is refused by file_size instead of
	 * holding start-up in open() (see checkpoint_dir.c's open_sized) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
	uint8_t *data = NULL;
	size_t size = 0;
	int rc = -1;

	*out = NULL;
	if (f == NULL) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
		return -1;
	}
	if (file_size(f, path, max, max_text, &size, err, errlen) != 0)
		goto out;
	data = malloc(size);
	if (data == NULL) {
		snprintf(err, errlen, "%s: out of memory for %zu bytes", path, size);
		goto out;
	}
	if (fread(data, 1, size, f) != size) {
		snprintf(err, errlen, "%s: read failed", path);
		goto out;
	}
	*out = data;
	*len = size;
	data = NULL;
	rc = 0;
out:
	free(data);
	fclose(f);
	return rc;
}

/* Reads and parses s's safetensors file; *model is new (caller frees) on
 * success, NULL on failure. The file's bytes are freed either way. */
static int load_weights(const struct model_spec *s, struct attn_model **model, char *err,
			size_t errlen)
{
	struct attn_safetensors_options opts = { 0 };
	struct attn_error aerr;
	uint8_t *bytes = NULL;
	size_t len = 0;
	int rc = 0;

	*model = NULL;
	if (read_file(s->path, MODEL_FILE_MAX, "8 GiB", &bytes, &len, err, errlen) != 0)
		return -1;
	opts.num_heads = s->heads;
	opts.prefix = s->prefix[0] != '\0' ? s->prefix : NULL;
	memset(&aerr, 0, sizeof aerr);
	if (attn_model_from_safetensors(model, bytes, len, &opts, &aerr) != ATTN_OK) {
		snprintf(err, errlen, "model %s (%s): %s", s->name, s->path, aerr.message);
		rc = -1;
	}
	free(bytes);
	return rc;
}

/* Reads and parses s's vocab= file for model's embedding table; v is filled
 * (caller releases) on success, zeroed on failure. */
static int load_vocab(const struct model_spec *s, const struct attn_model *model,
		      struct api_vocab *v, char *err, size_t errlen)
{
	char msg[512];
	uint8_t *bytes = NULL;
	size_t len = 0;
	int rc;

	memset(v, 0, sizeof *v);
	if (model->vocab == 0) {
		snprintf(err, errlen,
			 "model %s: vocab=%s given, but %s has no embedding table "
			 "(embed_tokens.weight) for its ids to index",
			 s->name, s->vocab, s->path);
		return -1;
	}
	if (read_file(s->vocab, API_VOCAB_FILE_MAX, "64 MiB", &bytes, &len, msg, sizeof msg) != 0) {
		snprintf(err, errlen, "model %s: vocab: %s", s->name, msg);
		return -1;
	}
	rc = api_vocab_parse(v, (const char *)bytes, len, model->vocab, s->vocab, msg, sizeof msg);
	if (rc != 0)
		snprintf(err, errlen, "model %s: vocab: %s", s->name, msg);
	free(bytes);
	return rc;
}

/* ---- tokenizers ----------------------------------------------------------- */

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && strcmp(s + n - t, tail) == 0;
}

/* GPT-2's pair: path names the vocabulary, merges.txt sits beside it. */
static struct tokenizer *load_gpt2(const char *path, char *err, size_t errlen)
{
	char merges[1100];
	const char *slash = strrchr(path, '/');
	uint8_t *vocab = NULL, *mg = NULL;
	size_t vlen = 0, mlen = 0;
	struct tokenizer *tok = NULL;
	struct tok_spec spec;

	snprintf(merges, sizeof merges, "%.*smerges.txt",
		 slash != NULL ? (int)(slash - path + 1) : 0, path);
	if (read_file(path, API_TOKENIZER_FILE_MAX, "256 MiB", &vocab, &vlen, err, errlen) != 0 ||
	    read_file(merges, API_TOKENIZER_FILE_MAX, "256 MiB", &mg, &mlen, err, errlen) != 0)
		goto out;
	if (api_tokenizer_spec_gpt2(&spec, (const char *)vocab, vlen, path, (const char *)mg,
				    mlen, merges, err, errlen) != 0)
		goto out;
	free(vocab);
	free(mg);
	vocab = mg = NULL;
	api_tokenizer_build(&spec, path, &tok, err, errlen);
out:
	free(vocab);
	free(mg);
	return tok;
}

/* A tokenizer.json, or GPT-2's pair (see the top of this file); NULL with
 * the message (naming the file, and the JSON pointer of what is wrong). */
static struct tokenizer *load_tokenizer_file(const char *path, char *err, size_t errlen)
{
	uint8_t *bytes = NULL;
	size_t len = 0;
	struct tokenizer *tok = NULL;
	struct tok_spec spec;
	int rc;

	if (ends_with(path, "vocab.json") || ends_with(path, "encoder.json"))
		return load_gpt2(path, err, errlen);
	if (read_file(path, API_TOKENIZER_FILE_MAX, "256 MiB", &bytes, &len, err, errlen) != 0)
		return NULL;
	rc = api_tokenizer_spec_json(&spec, (const char *)bytes, len, path, err, errlen);
	free(bytes);
	if (rc == 0)
		api_tokenizer_build(&spec, path, &tok, err, errlen);
	return tok;
}

/* Loads FILE and adds it to svc as tokenizer `name`. */
static int add_tokenizer(struct api_service *svc, const char *name, const char *path,
			 const char *what, char *err, size_t errlen)
{
	char msg[512], source[1100];
	struct tokenizer *tok = load_tokenizer_file(path, msg, sizeof msg);
	struct api_error e;

	if (tok == NULL) {
		snprintf(err, errlen, "%s: %s", what, msg);
		return -1;
	}
	snprintf(source, sizeof source, "file:%s", path);
	if (api_service_add_tokenizer(svc, name, tok, source, &e) != 0) {
		snprintf(err, errlen, "%s: %s", what, e.message);
		return -1;
	}
	return 0;
}

/* One --tokenizer NAME=FILE. */
static int load_tokenizer(struct api_service *svc, const char *text, char *err, size_t errlen)
{
	const char *eq = strchr(text, '=');
	char name[80], what[128];

	if (eq == NULL || eq == text || (size_t)(eq - text) >= sizeof name || eq[1] == '\0') {
		snprintf(err, errlen, "--tokenizer '%s': expected NAME=FILE", text);
		return -1;
	}
	memcpy(name, text, (size_t)(eq - text));
	name[eq - text] = '\0';
	snprintf(what, sizeof what, "--tokenizer %s", name);
	return add_tokenizer(svc, name, eq + 1, what, err, errlen);
}

/* A tokenizer= value that is a FILE (holding a '/' or ending in .json), not
 * a tokenizer's NAME. */
static int tokenizer_is_file(const char *t)
{
	return strchr(t, '/') != NULL || ends_with(t, ".json");
}

/* The message for model s's own tokenizer (read from path) when adding it
 * failed with e. The model's name is valid, so a name refused is taken, by a
 * --tokenizer (models' names are unique, and the built-ins come later). */
static void own_tokenizer_failed(const struct model_spec *s, const char *path,
				 const struct api_error *e, char *err, size_t errlen)
{
	if (e->kind == API_E_INVALID_MODEL_NAME)
		snprintf(err, errlen,
			 "model %s: tokenizer: %s would be tokenizer '%s', the name of a "
			 "--tokenizer; give tokenizer=%s to use that one instead",
			 s->name, path, s->name, s->name);
	else
		snprintf(err, errlen, "model %s: tokenizer: %s", s->name, e->message);
}

/* Adds tok (taken, on failure too), read from path, as model s's own
 * tokenizer, named after it, and gives it to the model. */
static int add_own_tokenizer(struct api_service *svc, const struct model_spec *s,
			     struct tokenizer *tok, const char *path, char *err, size_t errlen)
{
	char source[1100];
	struct api_error e;

	snprintf(source, sizeof source, "file:%s", path);
	if (api_service_add_tokenizer(svc, s->name, tok, source, &e) != 0) {
		own_tokenizer_failed(s, path, &e, err, errlen);
		return -1;
	}
	if (api_service_set_model_tokenizer(svc, s->name, s->name, &e) != 0) {
		snprintf(err, errlen, "model %s: tokenizer: %s", s->name, e.message);
		return -1;
	}
	return 0;
}

/* A model's tokenizer=FILE, loaded as a tokenizer named after the model. */
static int file_tokenizer(struct api_service *svc, const struct model_spec *s, char *err,
			  size_t errlen)
{
	char msg[512];
	struct tokenizer *tok = load_tokenizer_file(s->tokenizer, msg, sizeof msg);

	if (tok == NULL) {
		snprintf(err, errlen, "model %s: tokenizer: %s", s->name, msg);
		return -1;
	}
	return add_own_tokenizer(svc, s, tok, s->tokenizer, err, errlen);
}

/* A model's tokenizer=NAME: a --tokenizer's, or a built-in one. */
static int named_tokenizer(struct api_service *svc, const struct model_spec *s, char *err,
			   size_t errlen)
{
	struct api_error e;

	if (api_service_set_model_tokenizer(svc, s->name, s->tokenizer, &e) != 0) {
		snprintf(err, errlen, "model %s: tokenizer: %s", s->name, e.message);
		return -1;
	}
	return 0;
}

/* The mappings a checkpoint points into, released after it (registry.h). */
static void release_dir(void *keep)
{
	struct checkpoint_dir *d = keep;

	d->ck = NULL; /* the service freed it first */
	checkpoint_dir_release(d);
	free(d);
}

/* The folder's tokenizer.json as a tokenizer named after the model. */
static int folder_tokenizer(struct api_service *svc, const struct model_spec *s,
			    struct checkpoint_dir *d, char *err, size_t errlen)
{
	char file[1100], msg[512];
	struct tokenizer *tok = NULL;
	struct tok_spec spec;
	int rc;

	snprintf(file, sizeof file, "%s/tokenizer.json", s->path);
	rc = api_tokenizer_spec_json(&spec, d->tokenizer_json, d->tokenizer_len, file, msg,
				     sizeof msg);
	free(d->tokenizer_json);
	d->tokenizer_json = NULL;
	if (rc == 0)
		rc = api_tokenizer_build(&spec, file, &tok, msg, sizeof msg);
	if (rc != 0) {
		snprintf(err, errlen, "model %s: %s", s->name, msg);
		return -1;
	}
	return add_own_tokenizer(svc, s, tok, file, err, errlen);
}

/* A model folder: the checkpoint, then its tokenizer (tokenizer=, or the
 * folder's tokenizer.json). */
static int load_checkpoint(struct api_service *svc, const struct model_spec *s, char *err,
			   size_t errlen)
{
	struct checkpoint_dir *d = calloc(1, sizeof *d);
	struct attn_checkpoint *ck;
	struct api_error e;
	char source[1100];

	if (d == NULL) {
		snprintf(err, errlen, "model %s: out of memory", s->name);
		return -1;
	}
	if (checkpoint_dir_load(d, s->path, err, errlen) != 0) {
		free(d);
		return -1;
	}
	ck = d->ck;
	snprintf(source, sizeof source, "dir:%s", s->path);
	/* the service takes ck and the mappings, on failure too */
	if (api_service_add_checkpoint(svc, s->name, ck, d->cfg.model_type, release_dir, d,
				       source, &e) != 0) {
		snprintf(err, errlen, "model %s: %s", s->name, e.message);
		return -1;
	}
	if (s->tokenizer[0] != '\0') {
		free(d->tokenizer_json); /* tokenizer= wins over the folder's */
		d->tokenizer_json = NULL;
		/* a NAME is given the model later (models_load, step 4) */
		return tokenizer_is_file(s->tokenizer) ? file_tokenizer(svc, s, err, errlen) : 0;
	}
	if (d->tokenizer_json != NULL)
		return folder_tokenizer(svc, s, d, err, errlen);
	return 0;
}

/* Loads one --model entry into *s: the model, and the tokenizer it brings
 * (a tokenizer=FILE, or its folder's tokenizer.json); a tokenizer=NAME is
 * given it later (named_tokenizer). */
static int load_one(struct api_service *svc, const char *text, struct model_spec *s, char *err,
		    size_t errlen)
{
	struct attn_model *model = NULL;
	struct api_vocab vocab = { 0 };
	struct api_error e;
	char source[1100];
	int rc = -1;

	if (spec_parse(s, text, err, errlen) != 0)
		return -1;
	if (is_dir(s->path))
		return load_checkpoint(svc, s, err, errlen);
	if (load_weights(s, &model, err, errlen) != 0)
		return -1;
	if (s->vocab[0] != '\0' && load_vocab(s, model, &vocab, err, errlen) != 0)
		goto out;
	snprintf(source, sizeof source, "file:%s", s->path);
	/* the service takes the model, on failure too; it copies the tokens */
	rc = api_service_add_model(svc, s->name, model, source,
				   vocab.n > 0 ? (const char *const *)vocab.tokens : NULL, &e);
	model = NULL;
	if (rc != 0)
		snprintf(err, errlen, "model %s: %s", s->name, e.message);
	else if (tokenizer_is_file(s->tokenizer))
		rc = file_tokenizer(svc, s, err, errlen);
out:
	attn_model_free(model);
	api_vocab_release(&vocab);
	return rc;
}

/* Steps 2-4 of a load (the top of this file): the --model entries into
 * specs[cfg->models.n], the built-in tokenizers and checkpoints they left
 * free, then each model's tokenizer=NAME. */
static int load_models(struct api_service *svc, const struct attnd_config *cfg,
		       struct model_spec *specs, char *err, size_t errlen)
{
	struct api_error e;

	for (size_t i = 0; i < cfg->models.n; i++) {
		if (load_one(svc, cfg->models.v[i], &specs[i], err, errlen) != 0)
			return -1;
	}
	if (!cfg->no_builtins && api_service_add_builtin_tokenizers(svc, &e) != 0) {
		snprintf(err, errlen, "%s", e.message);
		return -1;
	}
	/* after the --model entries: one of the same name stands in its place */
	if (!cfg->no_builtins && (api_service_add_builtin_checkpoints(svc, &e) != 0 ||
				  api_service_add_builtin_layers(svc, &e) != 0)) {
		snprintf(err, errlen, "%s", e.message);
		return -1;
	}
	for (size_t i = 0; i < cfg->models.n; i++) {
		const struct model_spec *s = &specs[i];

		if (s->tokenizer[0] != '\0' && !tokenizer_is_file(s->tokenizer) &&
		    named_tokenizer(svc, s, err, errlen) != 0)
			return -1;
	}
	return 0;
}

int models_load(struct api_service *svc, const struct attnd_config *cfg, char *err, size_t errlen)
{
	struct model_spec *specs = calloc(cfg->models.n + 1, sizeof *specs);
	const char *def = cfg->default_model;
	struct api_error e;
	int rc = -1;

	if (specs == NULL) {
		snprintf(err, errlen, "--model: out of memory");
		return -1;
	}
	if (!cfg->no_builtins && api_service_add_builtins(svc, &e) != 0) {
		snprintf(err, errlen, "built-in models: %s", e.message);
		goto out;
	}
	for (size_t i = 0; i < cfg->tokenizers.n; i++) {
		if (load_tokenizer(svc, cfg->tokenizers.v[i], err, errlen) != 0)
			goto out;
	}
	if (load_models(svc, cfg, specs, err, errlen) != 0)
		goto out;
	/* without the built-ins, the first --model is the default (specs[0]'s
	 * name is "" without one: the extra entry) */
	if ((def == NULL || def[0] == '\0') && cfg->no_builtins && specs[0].name[0] != '\0')
		def = specs[0].name;
	if (def != NULL && def[0] != '\0' && api_service_set_default(svc, def, &e) != 0) {
		snprintf(err, errlen, "--default-model %s: %s", def, e.message);
		goto out;
	}
	rc = 0;
out:
	free(specs);
	return rc;
}
