/*
 * check_checkpoint_memory.c: a checkpoint loaded into the caller's memory
 * (engine/checkpoint.h attn_checkpoint_memory): its allocator and copied
 * weights give the same values as a load in place, every weight comes out
 * of the files but the embedding tables, each copied or converted byte is
 * reported done once, in slices of at most 4 MiB, every allocation is
 * released, and a NaN in a later slice is named by its element. The files
 * are tests/lib/ckpt_families.c's, built by tests/lib/ckpt_build.c; the
 * loads in place are check_checkpoint_load.c's.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/checkpoint.h"
#include "tests/lib/ckpt_build.h"
#include "tests/lib/ckpt_families.h"
#include "tests/lib/st_util.h"
#include "tests/lib/suite_main.h"

/* What a load did with the caller's struct attn_checkpoint_memory. */
struct mem_log {
	size_t allocs, releases;
	size_t done_bytes, done_calls, done_max;
	const struct ckb_built *b; /* the files the reports must lie in */
};

static void *log_alloc(void *ctx, size_t bytes)
{
	struct mem_log *m = ctx;
	void *p = malloc(bytes);

	if (p != NULL) {
		memset(p, 0xa5, bytes); /* "any content": not zeroed */
		m->allocs++;
	}
	return p;
}

static void log_release(void *ctx, void *p)
{
	struct mem_log *m = ctx;

	m->releases++;
	free(p);
}

static void log_done(void *ctx, size_t file, size_t at, size_t len)
{
	struct mem_log *m = ctx;

	ck_assert_uint_lt(file, m->b->n_files);
	ck_assert_uint_le(at + len, m->b->files[file].len);
	ck_assert_uint_le(len, (size_t)4 << 20);
	m->done_bytes += len;
	m->done_calls++;
	m->done_max = len > m->done_max ? len : m->done_max;
}

static struct attn_checkpoint_memory log_memory(struct mem_log *m, const struct ckb_built *b)
{
	*m = (struct mem_log){.b = b};
	return (struct attn_checkpoint_memory){
	    .copy_f32 = 1, .alloc = log_alloc, .release = log_release, .done = log_done, .ctx = m};
}

/* The stack's projection matrices, n_qkv + 4 a block (gate NULL but llama's):
 * at most 3 + 4. */
enum { BLOCK_LINEARS = 7 };

static size_t block_linears(const struct attn_block *k,
			    const struct attn_linear *out[BLOCK_LINEARS])
{
	size_t n = 0;

	ck_assert_uint_le(k->n_qkv, 3);
	for (size_t i = 0; i < k->n_qkv; i++)
		out[n++] = &k->qkv[i];
	out[n++] = &k->o;
	out[n++] = &k->up;
	if (k->gate.w != NULL)
		out[n++] = &k->gate;
	out[n++] = &k->down;
	return n;
}

/* The bytes of x [n], asserted out of the files (NULL: absent, 0 bytes). */
static size_t owned(const struct ckb_built *b, const float *x, size_t n)
{
	if (x == NULL)
		return 0;
	ck_assert_msg(!ckb_in_files(b, x), "a tensor of %zu values left in place", n);
	return n * sizeof(float);
}

static size_t owned_norm(const struct ckb_built *b, const struct attn_norm *nm, size_t E)
{
	return owned(b, nm->w, E) + owned(b, nm->b, E);
}

/* Every weight but the embedding tables out of the files, the tables in
 * them; the bytes out of them, which is all that was copied. */
static size_t assert_copied(const struct ckb_built *b)
{
	const struct attn_stack *s = &b->ck->stack;
	size_t bytes = owned_norm(b, &s->emb_norm, s->E) + owned_norm(b, &s->final_norm, s->E);

	ck_assert(ckb_in_files(b, s->wte));
	ck_assert(s->wpe == NULL || ckb_in_files(b, s->wpe));
	ck_assert(s->wtt == NULL || ckb_in_files(b, s->wtt));
	for (size_t l = 0; l < s->n_layers; l++) {
		const struct attn_block *k = &s->blocks[l];
		const struct attn_linear *lin[BLOCK_LINEARS];
		size_t n = block_linears(k, lin);

		bytes += owned_norm(b, &k->norm1, s->E) + owned_norm(b, &k->norm2, s->E);
		for (size_t i = 0; i < n; i++)
			bytes += owned(b, lin[i]->w, lin[i]->out * lin[i]->in) +
				 owned(b, lin[i]->b, lin[i]->out);
	}
	return bytes;
}

/* gpt2, bert, llama with every bias: each as it loads in place, with every
 * weight but the embedding tables copied into the caller's (unzeroed) memory. */
START_TEST(matrices_copied)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg;
	struct attn_checkpoint_memory mem;
	struct mem_log log;
	size_t copied;

	mem = log_memory(&log, &b);
	b.mem = &mem;
	if (_i == 0) {
		cfg = ckf_gpt2_cfg();
		ckf_gpt2_list(&b.l, "", "F32");
	} else if (_i == 1) {
		cfg = ckf_bert_cfg();
		ckf_bert_list(&b.l, "bert.", "F32", 0);
	} else {
		cfg = ckf_llama_cfg(2);
		ckf_llama_list(&b.l, "model.", "F32", 2);
	}
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	if (_i == 0)
		ckf_check_gpt2(&b, "");
	else if (_i == 2)
		ckf_check_llama(&b, "model.", 2);
	copied = assert_copied(&b);
	ck_assert_str_eq(b.ck->dtype, "F32");
	ck_assert_uint_eq(log.done_bytes, copied);
	ck_assert_uint_eq(log.allocs, log.done_calls); /* one slice a small tensor */
	ck_assert_uint_ge(b.ck->owned_bytes, copied);
	ckb_release(&b);
	ck_assert_uint_eq(log.releases, log.allocs);
}
END_TEST

/* gpt2 with F past one slice: c_fc [E, F] in F16 (converted), c_proj [F, E]
 * in F32 (copied), each in two slices reported in order; a NaN in the second
 * slice is named by its element. */
enum { SLICE = 1 << 20, BIG_F = SLICE / G_E + 3 };

static void big_list(struct ckb_list *l)
{
	ckf_gpt2_list(l, "", "F32");
	for (size_t t = 0; t < l->n; t++) {
		if (strstr(l->v[t].name, "mlp.c_fc.weight") != NULL) {
			l->v[t].d[1] = BIG_F;
			l->v[t].dtype = "F16";
		}
		if (strstr(l->v[t].name, "mlp.c_fc.bias") != NULL)
			l->v[t].d[0] = BIG_F;
		if (strstr(l->v[t].name, "mlp.c_proj.weight") != NULL)
			l->v[t].d[0] = BIG_F;
	}
}

START_TEST(slices_reported)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = ckf_gpt2_cfg();
	struct attn_checkpoint_memory mem;
	struct mem_log log;
	const size_t big = (size_t)G_E * BIG_F;
	size_t small, copied;

	mem = log_memory(&log, &b);
	b.mem = &mem;
	big_list(&b.l);
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	copied = assert_copied(&b);
	ckb_assert_tensor(&b, b.ck->stack.blocks[1].up.w, "h.1.mlp.c_fc.weight");
	ckb_assert_tensor(&b, b.ck->stack.blocks[0].down.w, "h.0.mlp.c_proj.weight");
	ck_assert_str_eq(b.ck->dtype, "mixed");
	/* the big two a layer: c_fc's 2 bytes a value, c_proj's 4 */
	small = copied - G_N * 2 * big * sizeof(float);
	ck_assert_uint_eq(log.done_bytes, small + G_N * big * (2 + 4));
	/* a layer's 12 tensors in a slice each, and c_fc's and c_proj's weights
	 * in a second; ln_f's two */
	ck_assert_uint_eq(log.done_calls, G_N * (12 + 2) + 2);
	ck_assert_uint_eq(log.done_max, (size_t)SLICE * 4);
	ckb_release(&b);
	ck_assert_uint_eq(log.releases, log.allocs);
}
END_TEST

/* Block 1's down and up weights, to find their bytes. */
static const float *down_1(const struct attn_stack *s)
{
	return s->blocks[1].down.w;
}

static const float *up_1(const struct attn_stack *s)
{
	return s->blocks[1].up.w;
}

/* b loaded in place first, to find the bytes of the weight `pick` returns,
 * a NaN put at its element SLICE + 5 (in a second slice), then b loaded
 * with the caller's memory: NONFINITE, the weight `name` and the element
 * named, every copy the failed load made freed. */
static void expect_nan_named(struct ckb_built *b, const struct attn_checkpoint_config *cfg,
			     const float *(*pick)(const struct attn_stack *), const char *name)
{
	const float nan = NAN;
	struct attn_checkpoint_memory mem;
	struct mem_log log;
	char want[160];
	size_t at;

	ck_assert_int_eq(ckb_load(b, cfg, 1), ATTN_OK);
	at = (size_t)((const uint8_t *)pick(&b->ck->stack) - b->bytes[0]);
	attn_checkpoint_free(b->ck);
	b->ck = NULL;
	memcpy(b->bytes[0] + at + ((size_t)SLICE + 5) * sizeof(float), &nan, sizeof nan);
	mem = log_memory(&log, b);
	ck_assert_int_eq(attn_checkpoint_load(&b->ck, cfg, b->files, 1, &mem, &b->err),
			 ATTN_ERR_NONFINITE);
	ck_assert_ptr_null(b->ck);
	ck_assert_uint_eq(b->err.index, (size_t)SLICE + 5);
	snprintf(want, sizeof want, "'%s' holds a non-finite value at element 1048581", name);
	ck_assert_msg(strstr(b->err.message, want) != NULL, "%s", b->err.message);
	ck_assert_uint_eq(log.releases, log.allocs); /* the failed load freed its copies */
}

START_TEST(nonfinite_in_later_slice)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = ckf_gpt2_cfg();

	big_list(&b.l);
	expect_nan_named(&b, &cfg, down_1, "h.1.mlp.c_proj.weight");
	ckb_release(&b);
}
END_TEST

/* bert with F past one slice: intermediate.dense [F, E] (whole rows of 8, a
 * second slice of 3 rows) and output.dense [E, F] (7 rows of F a slice, a
 * second of 1), copied into [in, out]: the values in place transposed, each
 * slice's bytes reported done once; on odd runs a NaN in the second slice
 * of intermediate.dense is named by its element in the file's order. */
enum { BIG_BF = SLICE / B_E + 3 };

static void big_bert_list(struct ckb_list *l)
{
	ckf_bert_list(l, "", "F32", 0);
	for (size_t t = 0; t < l->n; t++) {
		if (strstr(l->v[t].name, "intermediate.dense.") != NULL)
			l->v[t].d[0] = BIG_BF; /* weight [F, E], bias [F] */
		if (strstr(l->v[t].name, ".output.dense.weight") != NULL &&
		    strstr(l->v[t].name, "attention") == NULL)
			l->v[t].d[1] = BIG_BF; /* [E, F] */
	}
}

START_TEST(linear_transposed_in_slices)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = ckf_bert_cfg();
	struct attn_checkpoint_memory mem;
	struct mem_log log;
	const struct attn_block *k;

	big_bert_list(&b.l);
	if (_i == 1) {
		expect_nan_named(&b, &cfg, up_1, "encoder.layer.1.intermediate.dense.weight");
		ckb_release(&b);
		return;
	}
	mem = log_memory(&log, &b);
	b.mem = &mem;
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	k = &b.ck->stack.blocks[1];
	ck_assert_int_eq(k->up.in_major, 1);
	ck_assert_int_eq(k->down.in_major, 1);
	ckb_assert_linear(&b, &k->up, "encoder.layer.1.intermediate.dense.weight");
	ckb_assert_linear(&b, &k->down, "encoder.layer.1.output.dense.weight");
	ck_assert_uint_eq(log.done_bytes, assert_copied(&b));
	ck_assert_uint_le(log.done_max, (size_t)SLICE * 4);
	ckb_release(&b);
	ck_assert_uint_eq(log.releases, log.allocs);
}
END_TEST

START_TEST(memory_half_given)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = ckf_gpt2_cfg();
	struct attn_checkpoint_memory mem = {.alloc = log_alloc};

	b.mem = &mem;
	ckf_gpt2_list(&b.l, "", "F32");
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_ERR_ARGUMENT);
	ck_assert_msg(strstr(b.err.message, "alloc and mem->release") != NULL, "%s", b.err.message);
	ckb_release(&b);
}
END_TEST

static Suite *checkpoint_memory_suite(void)
{
	Suite *s = suite_create("checkpoint_memory");
	TCase *mem = tcase_create("memory");

	tcase_add_loop_test(mem, matrices_copied, 0, 3);
	tcase_add_test(mem, slices_reported);
	tcase_add_test(mem, nonfinite_in_later_slice);
	tcase_add_loop_test(mem, linear_transposed_in_slices, 0, 2);
	tcase_add_test(mem, memory_half_given);
	suite_add_tcase(s, mem);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, checkpoint_memory_suite, NULL);
}
