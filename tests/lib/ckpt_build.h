/*
 * ckpt_build.h: Hugging Face checkpoints' safetensors files built in C from a
 * list of tensors, and loaded with engine/checkpoint.h, for the checkpoint
 * suites (check_checkpoint_load, check_checkpoint_memory; their families are
 * ckpt_families.h's).
 *
 * Tensor t of a list (its index) holds st_tvalue(t, i) at element i
 * (tests/lib/st_util.h), written in its own dtype (F32, F16, BF16; I64 as
 * zeros). Failures inside a helper are Check assertions.
 *
 * Ownership: ckb_file returns a buffer malloc'd at exactly *len bytes (a
 * read past its end is an ASan or valgrind error), which the caller frees;
 * a struct ckb_built owns its files and its checkpoint until ckb_release.
 * Every name here starts with ckb_ / CKB_: the Makefile links this file
 * into every test binary.
 */
#ifndef ATTN_TESTS_CKPT_BUILD_H
#define ATTN_TESTS_CKPT_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "engine/checkpoint.h"

/* One tensor of a list: its full name (with the list's prefix), dtype and
 * shape, outermost first. */
struct ckb_tensor {
	char name[96];
	const char *dtype;
	size_t rank, d[2];
};

#define CKB_MAX 96

struct ckb_list {
	struct ckb_tensor v[CKB_MAX];
	size_t n;
	const char *dtype; /* of the tensors added next */
	const char *prefix;
};

/* Appends prefix + the formatted name, in l->dtype, of the given rank and dims. */
void ckb_add(struct ckb_list *l, size_t rank, size_t d0, size_t d1, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

size_t ckb_numel(const struct ckb_tensor *t);

/* The index of the tensor called name (its values are st_tvalue(index, i)). */
size_t ckb_find(const struct ckb_list *l, const char *name);

/* The tensors i with i % of == shard, in one file malloc'd at exactly *len. */
uint8_t *ckb_file(const struct ckb_list *l, size_t shard, size_t of, size_t *len);

/* Built files and the list they came from; loaded by ckb_load. */
struct ckb_built {
	struct ckb_list l;
	struct attn_st_file files[2];
	uint8_t *bytes[2];
	size_t n_files;
	struct attn_checkpoint *ck;
	struct attn_error err;
	const struct attn_checkpoint_memory *mem; /* NULL: the defaults */
};

/* b->l written as n_files files ("model.safetensors", or two shards named as
 * transformers names them) and loaded with b->mem into b->ck; a failure
 * leaves b->ck NULL and its status in b->err. */
enum attn_status ckb_load(struct ckb_built *b, const struct attn_checkpoint_config *cfg,
			  size_t n_files);

/* Frees b's checkpoint and files. */
void ckb_release(struct ckb_built *b);

/* x[0, n) holds tensor `name`'s values. */
void ckb_assert_tensor(const struct ckb_built *b, const float *x, const char *name);

/* lin's weight holds nn.Linear weight `name` [out, in]: as stored, or
 * transposed [in, out] where lin->in_major says the load copied it so. */
void ckb_assert_linear(const struct ckb_built *b, const struct attn_linear *lin, const char *name);

/* Whether x points into one of b's files (used in place). */
int ckb_in_files(const struct ckb_built *b, const float *x);

/* prefix + name in buf[96]. */
const char *ckb_name(char *buf, const char *prefix, const char *name);

#endif
