/*
 * checkpoint.c: a Hugging Face checkpoint's safetensors files into a struct
 * attn_stack (checkpoint.h).
 *
 * The load, in passes over the caller's bytes (none reading outside them):
 *   1. each file's header parsed into a table (st_header.c: syntax, offsets,
 *      byte sizes, no duplicate inside a file);
 *   2. the family's prefix found by its embedding table ("transformer.",
 *      "bert.", "roberta.", "model.", or none);
 *   3. the family's tensors looked up by name across every file (a name in
 *      two files is refused), each checked for dtype, exact shape and finite
 *      values, and either used in place (F32, 4-byte aligned, little-endian
 *      host) or converted once into memory the checkpoint owns (F16, BF16,
 *      and F32 but the embedding tables when the caller asks for copies), a
 *      slice at a time, each slice's source bytes reported done to it;
 *   4. attn_stack_check on the stack as a whole.
 * Passes 2 and 3's tables of names live in checkpoint_families.c; this file
 * holds the lookup, the conversions and the memory.
 *
 * Every message starts with the file it is about ("model.safetensors: ...");
 * a tensor that is absent names the files searched instead.
 */
#include "checkpoint.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "checkpoint_ctx.h"
#include "safetensors.h"

/* ---- memory the checkpoint owns: a list of chunks ------------------------ */

/* The header of each chunk; its payload starts CK_CHUNK_HEAD bytes in, so
 * that it keeps the allocator's alignment. */
struct ck_chunk {
	struct ck_chunk *next;
	int callers; /* from memory.alloc (else calloc) */
};

#define CK_CHUNK_HEAD 64

/* A chunk of CK_CHUNK_HEAD + bytes on c->ck's list, from the caller's
 * allocator when callers is set (any content) or calloc (zeroed). */
static void *ck_chunk(struct ck_ctx *c, size_t bytes, int callers)
{
	const struct attn_checkpoint_memory *m = &c->ck->memory;
	struct ck_chunk *chunk;

	if (bytes > SIZE_MAX - CK_CHUNK_HEAD) {
		attn_fail(c->err, ATTN_ERR_OVERFLOW, "files", 0, "an allocation of %zu bytes",
			  bytes);
		return NULL;
	}
	callers = callers && m->alloc != NULL;
	chunk =
	    callers ? m->alloc(m->ctx, CK_CHUNK_HEAD + bytes) : calloc(1, CK_CHUNK_HEAD + bytes);
	if (chunk == NULL) {
		attn_fail(c->err, ATTN_ERR_NOMEM, "files", 0, "out of memory (%zu bytes)", bytes);
		return NULL;
	}
	chunk->next = c->ck->owned;
	chunk->callers = callers;
	c->ck->owned = chunk;
	c->ck->owned_bytes += bytes;
	return (char *)chunk + CK_CHUNK_HEAD;
}

void *ck_alloc(struct ck_ctx *c, size_t bytes)
{
	return ck_chunk(c, bytes, 0);
}

void attn_checkpoint_free(struct attn_checkpoint *ck)
{
	struct ck_chunk *chunk, *next;

	if (ck == NULL)
		return;
	for (chunk = ck->owned; chunk != NULL; chunk = next) {
		next = chunk->next;
		if (chunk->callers)
			ck->memory.release(ck->memory.ctx, chunk);
		else
			free(chunk);
	}
	free(ck);
}

/* ---- names --------------------------------------------------------------- */

const char *ck_name(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return buf;
}

/* prefix + name, made printable, for messages. */
static const char *ck_shown(char out[ST_NAME_SHOWN + 4], const struct ck_ctx *c, const char *name)
{
	char full[256];

	snprintf(full, sizeof full, "%s%s", c->prefix, name);
	return st_printable(out, full, strlen(full));
}

/* File i's name without its folder: the caller's message names the folder
 * (a checkpoint's shards all sit in one). */
static const char *ck_base(const struct ck_ctx *c, size_t i)
{
	const char *slash = strrchr(c->files[i].name, '/');

	return slash != NULL ? slash + 1 : c->files[i].name;
}

/* The files searched, "a.safetensors, b.safetensors", cut with "..." to fit. */
static const char *ck_file_list(char *out, size_t len, const struct ck_ctx *c)
{
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = 0; i < c->n_files; i++) {
		int n = snprintf(out + at, len - at, "%s%s", i ? ", " : "", ck_base(c, i));

		if (n < 0 || (size_t)n >= len - at) {
			snprintf(out + (len > 4 ? len - 4 : 0), 4, "...");
			break;
		}
		at += (size_t)n;
	}
	return out;
}

/* ---- lookup ---------------------------------------------------------------- */

enum attn_status ck_find(struct ck_ctx *c, const char *name, struct ck_found *f)
{
	size_t plen = strlen(c->prefix), nlen = strlen(name);
	char shown[ST_NAME_SHOWN + 4];

	f->t = NULL;
	f->file = 0;
	for (size_t i = 0; i < c->n_files; i++) {
		/* a file holds a name once (st_read_header) */
		const struct st_tensor *t = st_table_find(&c->tabs[i], c->prefix, plen, name, nlen);

		if (t == NULL)
			continue;
		if (f->t != NULL)
			return attn_fail(
			    c->err, ATTN_ERR_FORMAT, "files", 0, "tensor '%s' is in both %s and %s",
			    ck_shown(shown, c, name), ck_base(c, f->file), ck_base(c, i));
		f->t = t;
		f->file = i;
	}
	return ATTN_OK;
}

static enum attn_status ck_missing(struct ck_ctx *c, const char *name)
{
	char shown[ST_NAME_SHOWN + 4], list[120];

	return attn_fail(c->err, ATTN_ERR_MISSING_TENSOR, "tensor", 0,
			 "tensor '%s' not found in %s", ck_shown(shown, c, name),
			 ck_file_list(list, sizeof list, c));
}

/* "[a, b]" for a shape of any rank (dims past the second are not kept). */
static const char *ck_shape(char out[64], size_t rank, size_t d0, size_t d1)
{
	if (rank == 0)
		snprintf(out, 64, "[]");
	else if (rank == 1)
		snprintf(out, 64, "[%zu]", d0);
	else if (rank == 2)
		snprintf(out, 64, "[%zu, %zu]", d0, d1);
	else
		snprintf(out, 64, "[%zu, %zu, ...] (rank %zu)", d0, d1, rank);
	return out;
}

static enum attn_status ck_check(struct ck_ctx *c, const struct ck_found *f, const char *name,
				 size_t rows, size_t cols)
{
	const struct st_tensor *t = f->t;
	const char *file = c->files[f->file].name;
	char shown[ST_NAME_SHOWN + 4], dtype[ST_NAME_SHOWN + 4], want[64], got[64];
	size_t rank = cols == 0 ? 1 : 2;

	if (t->kind != ST_F32 && t->kind != ST_F16 && t->kind != ST_BF16)
		return attn_fail(c->err, ATTN_ERR_DTYPE, "tensor", 0,
				 "%s: tensor '%s' has dtype %s; only F32, F16 and BF16 load", file,
				 ck_shown(shown, c, name),
				 st_printable(dtype, t->dtype, strlen(t->dtype)));
	if (t->rank == rank && t->dims[0] == rows && (rank == 1 || t->dims[1] == cols))
		return ATTN_OK;
	return attn_fail(c->err, ATTN_ERR_SHAPE_MISMATCH, "tensor", 0,
			 "%s: tensor '%s' has shape %s, expected %s", file,
			 ck_shown(shown, c, name), ck_shape(got, t->rank, t->dims[0], t->dims[1]),
			 ck_shape(want, rank, rows, cols));
}

/* ---- data ------------------------------------------------------------------ */

/* n little-endian values at src (any alignment) as float. */
static void ck_convert(float *dst, const uint8_t *src, size_t n, enum st_kind kind)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (kind == ST_F32) { /* the bytes are the floats */
		memcpy(dst, src, n * sizeof *dst);
		return;
	}
#endif
	for (size_t i = 0; i < n; i++) {
		uint32_t bits;

		if (kind == ST_F32) {
			bits = (uint32_t)src[4 * i] | (uint32_t)src[4 * i + 1] << 8 |
			       (uint32_t)src[4 * i + 2] << 16 | (uint32_t)src[4 * i + 3] << 24;
			memcpy(&dst[i], &bits, sizeof bits);
		} else if (kind == ST_F16) {
			dst[i] = attn_f16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
		} else { /* ST_BF16: ck_check let nothing else through */
			dst[i] = attn_bf16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
		}
	}
}

/* F32 bytes that can be read as floats where they lie. */
static int ck_in_place(const struct st_tensor *t, const uint8_t *src)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return t->kind == ST_F32 && (uintptr_t)src % sizeof(float) == 0;
#else
	(void)t;
	(void)src;
	return 0;
#endif
}

/* NONFINITE naming the first non-finite value of x[n], element first + i of
 * the tensor; ATTN_OK when every value is finite. */
static enum attn_status ck_finite(struct ck_ctx *c, const struct ck_found *f, const char *name,
				  const float *x, size_t n, size_t first)
{
	char shown[ST_NAME_SHOWN + 4];

	if (attn_all_finite(x, n))
		return ATTN_OK;
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]))
			return attn_fail(c->err, ATTN_ERR_NONFINITE, "tensor", first + i,
					 "%s: tensor '%s' holds a non-finite value at element %zu",
					 c->files[f->file].name, ck_shown(shown, c, name),
					 first + i);
	return ATTN_OK;
}

/* Values converted a slice at a time: 1 Mi (4 MiB as F32), so that a caller
 * dropping each slice's source pages holds at most one slice of them. */
#define CK_SLICE ((size_t)1 << 20)

/* The tensor's values converted into dst [numel], a slice at a time: each
 * slice checked finite, then its source bytes reported done. */
static enum attn_status ck_fill(struct ck_ctx *c, const struct ck_found *f, const char *name,
				float *dst)
{
	const struct attn_checkpoint_memory *m = &c->ck->memory;
	const struct st_tensor *t = f->t;
	size_t at = c->data_at[f->file] + t->begin;

	for (size_t i = 0; i < t->numel; i += CK_SLICE) {
		size_t n = t->numel - i < CK_SLICE ? t->numel - i : CK_SLICE;
		enum attn_status st;

		ck_convert(dst + i, c->files[f->file].bytes + at, n, t->kind);
		st = ck_finite(c, f, name, dst + i, n, i);
		if (st != ATTN_OK)
			return st;
		if (m->done != NULL)
			m->done(m->ctx, f->file, at, n * t->elem_size);
		at += n * t->elem_size;
	}
	return ATTN_OK;
}

/* dst[k, r0 + o] = src[o, k] for o < nr, k < cols, dst's rows ld apart:
 * sixteen source rows at a time, so that each row of dst gets a line of 16
 * floats and the sixteen rows are read along together. */
static void ck_transpose_rows(float *dst, size_t ld, size_t r0, const float *src, size_t nr,
			      size_t cols)
{
	for (size_t o0 = 0; o0 < nr; o0 += 16) {
		size_t o1 = nr - o0 < 16 ? nr : o0 + 16;

		for (size_t k = 0; k < cols; k++)
			for (size_t o = o0; o < o1; o++)
				dst[k * ld + r0 + o] = src[o * cols + k];
	}
}

/* The tensor [rows, cols] converted into dst [cols, rows], transposed: whole
 * rows a slice (at most CK_SLICE values, or one row), each slice converted,
 * checked finite, moved into place, then its source bytes reported done. */
static enum attn_status ck_fill_transposed(struct ck_ctx *c, const struct ck_found *f,
					   const char *name, float *dst)
{
	const struct attn_checkpoint_memory *m = &c->ck->memory;
	const struct st_tensor *t = f->t;
	size_t rows = t->dims[0], cols = t->dims[1];
	size_t step = CK_SLICE / cols > 0 ? CK_SLICE / cols : 1; /* rows a slice */
	size_t at = c->data_at[f->file] + t->begin;
	float *slice = malloc((step < rows ? step : rows) * cols * sizeof(float));
	enum attn_status st = ATTN_OK;

	if (slice == NULL)
		return attn_fail(c->err, ATTN_ERR_NOMEM, "files", 0,
				 "out of memory (a slice of %s)", name);
	for (size_t r = 0; r < rows && st == ATTN_OK; r += step) {
		size_t nr = rows - r < step ? rows - r : step, n = nr * cols;

		ck_convert(slice, c->files[f->file].bytes + at, n, t->kind);
		st = ck_finite(c, f, name, slice, n, r * cols);
		if (st != ATTN_OK)
			break;
		ck_transpose_rows(dst, rows, r, slice, nr, cols);
		if (m->done != NULL)
			m->done(m->ctx, f->file, at, n * t->elem_size);
		at += n * t->elem_size;
	}
	free(slice);
	return st;
}

/* The tensor's floats: where they lie in the file, or converted into memory
 * the checkpoint owns (also when own asks for a copy). A copy of a matrix
 * is transposed when transposed is not NULL, which is then set to 1. */
static enum attn_status ck_data(struct ck_ctx *c, const struct ck_found *f, const char *name,
				int own, const float **out, int *transposed)
{
	const struct st_tensor *t = f->t;
	const uint8_t *src = c->files[f->file].bytes + c->data_at[f->file] + t->begin;
	enum attn_status st;

	if (!own && ck_in_place(t, src)) {
		/* seek to the tensor's bytes in the caller's file */
		*out = (const float *)(const void *)src;
		st = ck_finite(c, f, name, *out, t->numel, 0);
	} else {
		float *dst = ck_chunk(c, t->numel * sizeof(float), 1);

		if (dst == NULL)
			return c->err != NULL ? c->err->status : ATTN_ERR_NOMEM;
		if (transposed != NULL && t->rank == 2) {
			st = ck_fill_transposed(c, f, name, dst);
			*transposed = 1;
		} else {
			st = ck_fill(c, f, name, dst);
		}
		*out = dst;
	}
	if (st != ATTN_OK)
		return st;
	c->kinds |= 1u << t->kind;
	c->ck->weight_bytes += t->end - t->begin;
	return ATTN_OK;
}

static enum attn_status ck_get_found(struct ck_ctx *c, const struct ck_found *f, const float **out,
				     size_t rows, size_t cols, const char *name, int own,
				     int *transposed)
{
	enum attn_status st = ck_check(c, f, name, rows, cols);

	if (st != ATTN_OK)
		return st;
	return ck_data(c, f, name, own, out, transposed);
}

static enum attn_status ck_get_owned(struct ck_ctx *c, const float **out, size_t rows, size_t cols,
				     const char *name, int own, int *transposed)
{
	struct ck_found f;
	enum attn_status st = ck_find(c, name, &f);

	if (st != ATTN_OK)
		return st;
	if (f.t == NULL)
		return ck_missing(c, name);
	return ck_get_found(c, &f, out, rows, cols, name, own, transposed);
}

enum attn_status ck_get(struct ck_ctx *c, const float **out, size_t rows, size_t cols,
			const char *name)
{
	return ck_get_owned(c, out, rows, cols, name, c->ck->memory.copy_f32, NULL);
}

enum attn_status ck_get_linear(struct ck_ctx *c, const float **out, size_t rows, size_t cols,
			       const char *name, int *in_major)
{
	*in_major = 0;
	return ck_get_owned(c, out, rows, cols, name, c->ck->memory.copy_f32, in_major);
}

enum attn_status ck_get_table(struct ck_ctx *c, const float **out, size_t rows, size_t cols,
			      const char *name)
{
	return ck_get_owned(c, out, rows, cols, name, 0, NULL);
}

enum attn_status ck_get_either(struct ck_ctx *c, const float **out, size_t rows, size_t cols,
			       const char *name, const char *alt)
{
	struct ck_found f;
	enum attn_status st = ck_find(c, name, &f);

	if (st != ATTN_OK)
		return st;
	if (f.t != NULL)
		return ck_get_found(c, &f, out, rows, cols, name, c->ck->memory.copy_f32, NULL);
	st = ck_find(c, alt, &f);
	if (st != ATTN_OK)
		return st;
	if (f.t == NULL)
		return ck_missing(c, name);
	return ck_get_found(c, &f, out, rows, cols, alt, c->ck->memory.copy_f32, NULL);
}

enum attn_status ck_infer(struct ck_ctx *c, size_t *size, const char *name, size_t axis)
{
	struct ck_found f;
	enum attn_status st;

	if (*size != 0)
		return ATTN_OK;
	st = ck_find(c, name, &f);
	if (st != ATTN_OK || f.t == NULL || f.t->rank <= axis || f.t->rank > 2)
		return st;
	if (f.t->dims[axis] == 0) { /* 0 would read as "not known" past here */
		char shown[ST_NAME_SHOWN + 4], got[64];

		return attn_fail(c->err, ATTN_ERR_SHAPE_MISMATCH, "tensor", 0,
				 "%s: tensor '%s' has shape %s: the config gives no size and "
				 "the tensor's axis %zu gives 0",
				 c->files[f.file].name, ck_shown(shown, c, name),
				 ck_shape(got, f.t->rank, f.t->dims[0], f.t->dims[1]), axis);
	}
	*size = f.t->dims[axis];
	return ATTN_OK;
}

/* ---- the load ------------------------------------------------------------ */

/* Pass 1 for file i; a failure's message gets the file's name in front. */
static enum attn_status ck_read_header(struct ck_ctx *c, size_t i)
{
	const struct attn_st_file *f = &c->files[i];
	enum attn_status st = st_read_header(&c->tabs[i], f->bytes, f->len, &c->data_at[i], c->err);
	char msg[sizeof c->err->message];

	if (st == ATTN_OK || c->err == NULL)
		return st;
	memcpy(msg, c->err->message, sizeof msg);
	/* cut to fit: the file's name matters more than the message's tail */
	if (snprintf(c->err->message, sizeof c->err->message, "%s: %s", f->name, msg) < 0)
		c->err->message[0] = '\0';
	return st;
}

/* Pass 2: the family's prefix, found by its embedding table. */
static enum attn_status ck_find_prefix(struct ck_ctx *c)
{
	static const struct {
		const char *prefix, *anchor;
	} fam[] = {
	    [ATTN_FAMILY_GPT2] = {"transformer.", "wte.weight"},
	    [ATTN_FAMILY_BERT] = {"bert.", "embeddings.word_embeddings.weight"},
	    [ATTN_FAMILY_LLAMA] = {"model.", "embed_tokens.weight"},
	};
	const char *prefix = fam[c->cfg->family].prefix, *anchor = fam[c->cfg->family].anchor;
	char list[120];

	if (strcmp(c->cfg->model_type, "roberta") == 0)
		prefix = "roberta."; /* RobertaFor...'s BERT names */
	struct ck_found f;
	enum attn_status st;

	c->prefix = prefix;
	st = ck_find(c, anchor, &f);
	if (st != ATTN_OK || f.t != NULL)
		return st;
	c->prefix = "";
	st = ck_find(c, anchor, &f);
	if (st != ATTN_OK || f.t != NULL)
		return st;
	return attn_fail(c->err, ATTN_ERR_MISSING_TENSOR, "tensor", 0,
			 "no tensor '%s%s' or '%s' in %s", prefix, anchor, anchor,
			 ck_file_list(list, sizeof list, c));
}

static enum attn_status ck_check_args(struct attn_checkpoint **out,
				      const struct attn_checkpoint_config *cfg,
				      const struct attn_st_file *files, size_t n_files,
				      const struct attn_checkpoint_memory *mem,
				      struct attn_error *err)
{
	if (out == NULL || cfg == NULL)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "out", 0, "out and cfg must not be NULL");
	*out = NULL;
	if (cfg->family != ATTN_FAMILY_GPT2 && cfg->family != ATTN_FAMILY_BERT &&
	    cfg->family != ATTN_FAMILY_LLAMA)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "family", 0, "unknown family %d",
				 (int)cfg->family);
	if (files == NULL || n_files == 0)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "files", 0, "no files given");
	for (size_t i = 0; i < n_files; i++)
		if (files[i].name == NULL || (files[i].bytes == NULL && files[i].len != 0))
			return attn_fail(err, ATTN_ERR_ARGUMENT, "files", i,
					 "file %zu has no name or no bytes", i);
	if (mem != NULL && (mem->alloc == NULL) != (mem->release == NULL))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "mem", 0,
				 "mem->alloc and mem->release go together");
	return ATTN_OK;
}

static const char *ck_dtype_name(unsigned kinds)
{
	if (kinds == 1u << ST_F32)
		return "F32";
	if (kinds == 1u << ST_F16)
		return "F16";
	if (kinds == 1u << ST_BF16)
		return "BF16";
	return "mixed";
}

static enum attn_status ck_load(struct ck_ctx *c)
{
	enum attn_status st = ATTN_OK;

	for (size_t i = 0; i < c->n_files && st == ATTN_OK; i++)
		st = ck_read_header(c, i);
	if (st == ATTN_OK)
		st = ck_find_prefix(c);
	if (st != ATTN_OK)
		return st;
	switch (c->cfg->family) {
	case ATTN_FAMILY_GPT2:
		st = ck_fill_gpt2(c);
		break;
	case ATTN_FAMILY_BERT:
		st = ck_fill_bert(c);
		break;
	case ATTN_FAMILY_LLAMA:
		st = ck_fill_llama(c);
		break;
	}
	if (st != ATTN_OK)
		return st;
	c->ck->dtype = ck_dtype_name(c->kinds);
	return attn_stack_check(&c->ck->stack, c->err);
}

enum attn_status attn_checkpoint_load(struct attn_checkpoint **out,
				      const struct attn_checkpoint_config *cfg,
				      const struct attn_st_file *files, size_t n_files,
				      const struct attn_checkpoint_memory *mem,
				      struct attn_error *err)
{
	struct ck_ctx c = {
	    .cfg = cfg, .files = files, .n_files = n_files, .prefix = "", .err = err};
	enum attn_status st = ck_check_args(out, cfg, files, n_files, mem, err);

	if (st != ATTN_OK)
		return st;
	c.ck = calloc(1, sizeof *c.ck);
	c.tabs = calloc(n_files, sizeof *c.tabs);
	c.data_at = calloc(n_files, sizeof *c.data_at);
	if (c.ck == NULL || c.tabs == NULL || c.data_at == NULL) {
		st = attn_fail(err, ATTN_ERR_NOMEM, "files", 0, "out of memory");
		goto out;
	}
	if (mem != NULL)
		c.ck->memory = *mem;
	st = ck_load(&c);
out:
	for (size_t i = 0; c.tabs != NULL && i < n_files; i++)
		st_table_release(&c.tabs[i]);
	free(c.tabs);
	free(c.data_at);
	if (st != ATTN_OK) {
		attn_checkpoint_free(c.ck);
		return st;
	}
	*out = c.ck;
	return ATTN_OK;
}
