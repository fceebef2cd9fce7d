/*
 * checkpoint_ctx.h: what checkpoint.c (the files, the tensor lookup, the
 * conversions, the memory) shares with checkpoint_families.c (which tensors
 * each family needs, and the RoPE table). Internal to the engine: only those
 * two files include it.
 *
 * Failure: every function returning enum attn_status fills c->err with a
 * message naming the file (and the tensor) and leaves the context
 * releasable; what was allocated stays on c->ck's owned list, freed by
 * attn_checkpoint_free.
 *
 * Ownership: a struct ck_ctx borrows the config, the files and the error;
 * it owns the header tables (ck_ctx_release frees them). Every array handed
 * out by ck_alloc or ck_get is owned by c->ck (or points into a file).
 */
#ifndef ATTN_CHECKPOINT_CTX_H
#define ATTN_CHECKPOINT_CTX_H

#include <stddef.h>

#include "checkpoint.h"
#include "st_header.h"

struct ck_ctx {
	const struct attn_checkpoint_config *cfg;
	const struct attn_st_file *files;
	size_t n_files;
	struct st_table *tabs; /* [n_files] */
	size_t *data_at;       /* [n_files] offset of each file's tensor data */
	const char *prefix;    /* the family's prefix as found, or "" */
	struct attn_checkpoint *ck;
	unsigned kinds; /* 1 << enum st_kind of every tensor used */
	struct attn_error *err;
};

/* A tensor found by its full name: its entry and the file that holds it. */
struct ck_found {
	const struct st_tensor *t; /* NULL: absent */
	size_t file;
};

/* Looks prefix + name up in every file; *f->t is NULL when no file has it.
 * Two files holding it is a FORMAT error naming both. */
enum attn_status ck_find(struct ck_ctx *c, const char *name, struct ck_found *f);

/*
 * The tensor prefix + name as float [rows, cols] (cols == 0: a vector
 * [rows]): dtype F32, F16 or BF16, exactly that shape, finite. *out points
 * into the file (aligned F32) or at a converted copy that c->ck owns (F32
 * too when the load's struct attn_checkpoint_memory says copy_f32).
 * Statuses: MISSING_TENSOR (naming the files searched), DTYPE,
 * SHAPE_MISMATCH, NONFINITE, NOMEM.
 */
enum attn_status ck_get(struct ck_ctx *c, const float **out, size_t rows, size_t cols,
			const char *name);

/* ck_get of an nn.Linear weight [rows, cols] = [out, in]. Where it is
 * copied or converted (not F32 read in place) the copy is stored
 * transposed, [in, out] (TRANSPOSED), and *in_major is set to 1: the stack
 * then reads it as GPT-2's Conv1D, on linear_few at short lengths (no copy
 * of W per call, linear.h). In place it stays [out, in], *in_major 0. */
enum attn_status ck_get_linear(struct ck_ctx *c, const float **out, size_t rows, size_t cols,
			       const char *name, int *in_major);

/* ck_get of an embedding table: F32 stays where it lies even when the
 * load's struct attn_checkpoint_memory says copy_f32 (a request reads a
 * few of its rows; the file is the memory). */
enum attn_status ck_get_table(struct ck_ctx *c, const float **out, size_t rows, size_t cols,
			      const char *name);

/* ck_get of the first of two names present (bert's weight or gamma). */
enum attn_status ck_get_either(struct ck_ctx *c, const float **out, size_t rows, size_t cols,
			       const char *name, const char *alt);

/* *size from dims[axis] of prefix + name when *size is 0 (so that ck_get
 * checks it); a tensor absent or of another rank leaves it to ck_get, one
 * whose dims[axis] is 0 is SHAPE_MISMATCH (no size comes from it). */
enum attn_status ck_infer(struct ck_ctx *c, size_t *size, const char *name, size_t axis);

/* Zeroed memory owned by c->ck (NULL after a NOMEM failure in c->err). */
void *ck_alloc(struct ck_ctx *c, size_t bytes);

/* fmt formatted into buf[len] (a name for ck_get, without the prefix). */
const char *ck_name(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The family's tensors into c->ck->stack (checkpoint_families.c). */
enum attn_status ck_fill_gpt2(struct ck_ctx *c);
enum attn_status ck_fill_bert(struct ck_ctx *c);
enum attn_status ck_fill_llama(struct ck_ctx *c);

#endif
