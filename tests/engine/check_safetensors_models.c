/*
 * check_safetensors_models.c: safetensors tensors onto struct attn_model
 * (engine/safetensors.c, pass 3 and the 16-bit converters).
 *
 *   convert     attn_f16_to_f32 and attn_bf16_to_f32 on all 65536 codes each,
 *               against ldexp / the float's bit layout, plus named edge values
 *   load        small files built in C (E = 4 or 8, tests/st_util.h): values
 *               land where model.h says, for both naming schemes, every dtype,
 *               a prefix, an unaligned buffer, skipped tensors, partial biases
 *   rejected    bad dtypes, missing tensors, wrong shapes, head counts that do
 *               not divide, an ambiguous layout, non-finite weights: each fails
 *               with its named status, naming the tensor
 *   embed_name  the embedding table under its own full name, as real Llama /
 *               Qwen checkpoints keep it, beside a prefixed layer
 * Every buffer handed to the loader is malloc'd at its exact length, so a read
 * past its end is an ASan or valgrind error.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model.h"
#include "engine/safetensors.h"
#include "tests/lib/st_util.h"
#include "tests/lib/suite_main.h"

/* x[0, n) == st_tvalue(t, 0..n). */
static void ck_assert_tensor(const float *x, size_t t, size_t n, const char *what)
{
	ck_assert_ptr_nonnull(x);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(x[i] == st_tvalue(t, i), "%s[%zu] = %g, want %g", what, i, x[i],
			      st_tvalue(t, i));
}

static void ck_assert_zeros(const float *x, size_t n, const char *what)
{
	ck_assert_ptr_nonnull(x);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(x[i] == 0.0f, "%s[%zu] = %g, want 0", what, i, x[i]);
}

static void ck_assert_mha_small(const struct attn_model *m)
{
	ck_assert_uint_eq(m->E, 4);
	ck_assert_uint_eq(m->H, 2);
	ck_assert_uint_eq(m->Hkv, 2);
	ck_assert_uint_eq(m->D, 2);
	ck_assert_uint_eq(m->vocab, 0);
	ck_assert_ptr_null(m->embed);
	ck_assert_int_eq(m->source, ATTN_SOURCE_SAFETENSORS);
	ck_assert_tensor(m->w_qkv, 0, 48, "w_qkv");
	ck_assert_tensor(m->b_qkv, 1, 12, "b_qkv");
	ck_assert_tensor(m->w_o, 2, 16, "w_o");
	ck_assert_tensor(m->b_o, 3, 4, "b_o");
}

/* ---- convert ----------------------------------------------------------- */

/* The value of half h from its definition, in double (exact). */
static double f16_reference(uint16_t h)
{
	int sign = h >> 15, exp = h >> 10 & 0x1f, frac = h & 0x3ff;
	double mag;

	if (exp == 0x1f)
		mag = frac ? NAN : INFINITY;
	else if (exp == 0)
		mag = ldexp(frac, -24); /* subnormal: frac 2^-14 / 2^10 */
	else
		mag = ldexp(1024 + frac, exp - 25); /* (1 + frac/2^10) 2^(exp-15) */
	return sign ? -mag : mag;
}

START_TEST(test_f16_all_codes)
{
	for (uint32_t c = 0; c <= 0xffff; c++) {
		float got = attn_f16_to_f32((uint16_t)c);
		double want = f16_reference((uint16_t)c);

		if (isnan(want)) {
			ck_assert_msg(isnan(got), "0x%04x: %g, want NaN", c, got);
			continue;
		}
		ck_assert_msg((double)got == want, "0x%04x: %a, want %a", c, got, want);
		ck_assert_msg(!signbit(got) == !(c & 0x8000), "0x%04x: sign lost", c);
	}
}
END_TEST

START_TEST(test_f16_named)
{
	uint32_t bits;
	float nan_payload;

	ck_assert(attn_f16_to_f32(0x3c00) == 1.0f);
	ck_assert(attn_f16_to_f32(0xc000) == -2.0f);
	ck_assert(attn_f16_to_f32(0x3555) == 0x1.554p-2f);
	ck_assert(attn_f16_to_f32(0x7bff) == 65504.0f);	    /* largest normal */
	ck_assert(attn_f16_to_f32(0x0400) == 0x1p-14f);	    /* smallest normal */
	ck_assert(attn_f16_to_f32(0x03ff) == 0x1.ff8p-15f); /* largest subnormal */
	ck_assert(attn_f16_to_f32(0x0001) == 0x1p-24f);	    /* smallest subnormal */
	ck_assert(attn_f16_to_f32(0x8001) == -0x1p-24f);
	ck_assert(attn_f16_to_f32(0x0200) == 0x1p-15f);
	ck_assert(isinf(attn_f16_to_f32(0x7c00)) && attn_f16_to_f32(0x7c00) > 0);
	ck_assert(isinf(attn_f16_to_f32(0xfc00)) && attn_f16_to_f32(0xfc00) < 0);
	ck_assert(isnan(attn_f16_to_f32(0x7e00)));
	ck_assert(isnan(attn_f16_to_f32(0x7c01))); /* signalling NaN stays NaN */
	ck_assert(isnan(attn_f16_to_f32(0xfe00)));
	ck_assert(attn_f16_to_f32(0x0000) == 0.0f && !signbit(attn_f16_to_f32(0x0000)));
	ck_assert(attn_f16_to_f32(0x8000) == 0.0f && signbit(attn_f16_to_f32(0x8000)));
	nan_payload = attn_f16_to_f32(0x7c01);
	memcpy(&bits, &nan_payload, sizeof(bits));
	ck_assert_uint_eq(bits, 0x7f802000u); /* payload moved up, not lost */
}
END_TEST

START_TEST(test_bf16_all_codes)
{
	for (uint32_t c = 0; c <= 0xffff; c++) {
		float got = attn_bf16_to_f32((uint16_t)c);
		uint32_t bits;

		memcpy(&bits, &got, sizeof(bits));
		ck_assert_msg(bits == c << 16, "0x%04x: bits 0x%08x", c, bits);
	}
	ck_assert(attn_bf16_to_f32(0x3f80) == 1.0f);
	ck_assert(attn_bf16_to_f32(0xc0a0) == -5.0f);
	ck_assert(attn_bf16_to_f32(0x0080) == 0x1p-126f); /* smallest normal */
	ck_assert(attn_bf16_to_f32(0x0001) == 0x1p-133f); /* smallest subnormal */
	ck_assert(isinf(attn_bf16_to_f32(0x7f80)) && attn_bf16_to_f32(0x7f80) > 0);
	ck_assert(isinf(attn_bf16_to_f32(0xff80)) && attn_bf16_to_f32(0xff80) < 0);
	ck_assert(isnan(attn_bf16_to_f32(0x7fc0)));
	ck_assert(isnan(attn_bf16_to_f32(0x7f81)));
	ck_assert(attn_bf16_to_f32(0x8000) == 0.0f && signbit(attn_bf16_to_f32(0x8000)));
}
END_TEST

/* ---- load -------------------------------------------------------------- */

static const char *const dtypes[] = {"F32", "F16", "BF16"};

/* st_mha_small with tensor t in dtypes[pick[t]] loads to the same model. */
static void ck_assert_mha_dtypes(const size_t pick[ST_N_MHA])
{
	struct st_spec s[ST_N_MHA];
	struct attn_model *m = NULL;
	struct attn_error err;

	memcpy(s, st_mha_small, sizeof(s));
	for (size_t t = 0; t < ST_N_MHA; t++)
		s[t].dtype = dtypes[pick[t]];
	ck_assert_int_eq(st_load_specs(s, ST_N_MHA, 2, NULL, &m, &err), ATTN_OK);
	ck_assert_mha_small(m);
	attn_model_free(m);
}

START_TEST(test_load_mha_dtypes)
{
	const size_t all[ST_N_MHA] = {(size_t)_i, (size_t)_i, (size_t)_i, (size_t)_i};

	ck_assert_mha_dtypes(all);
}
END_TEST

START_TEST(test_load_mixed_dtypes)
{
	const size_t mixed[ST_N_MHA] = {0, 1, 2, 0}; /* t % 3 */

	ck_assert_mha_dtypes(mixed);
}
END_TEST

/* Llama rows go q, k, v into w_qkv; the missing o_proj.bias is zeros. */
START_TEST(test_load_llama_layout)
{
	struct attn_model *m = NULL;
	struct attn_error err;

	ck_assert_int_eq(st_load_specs(st_llama_small, ST_N_LLAMA, 4, NULL, &m, &err), ATTN_OK);
	ck_assert_uint_eq(m->E, 8);
	ck_assert_uint_eq(m->H, 4);
	ck_assert_uint_eq(m->Hkv, 2);
	ck_assert_uint_eq(m->D, 2);
	ck_assert_uint_eq(m->vocab, 5);
	ck_assert_tensor(m->w_qkv, 0, 64, "w_qkv q rows");
	ck_assert_tensor(m->w_qkv + 64, 1, 32, "w_qkv k rows");
	ck_assert_tensor(m->w_qkv + 96, 2, 32, "w_qkv v rows");
	ck_assert_tensor(m->w_o, 3, 64, "w_o");
	ck_assert_tensor(m->b_qkv, 4, 8, "b_qkv q");
	ck_assert_tensor(m->b_qkv + 8, 5, 4, "b_qkv k");
	ck_assert_tensor(m->b_qkv + 12, 6, 4, "b_qkv v");
	ck_assert_zeros(m->b_o, 8, "b_o");
	ck_assert_tensor(m->embed, 7, 40, "embed");
	attn_model_free(m);
}
END_TEST

/* No bias tensors at all: both biases NULL. */
START_TEST(test_load_llama_no_bias)
{
	struct attn_model *m = NULL;
	struct attn_error err;

	ck_assert_int_eq(st_load_specs(st_llama_small, 4, 4, NULL, &m, &err), ATTN_OK);
	ck_assert_ptr_null(m->b_qkv);
	ck_assert_ptr_null(m->b_o);
	ck_assert_ptr_null(m->embed);
	ck_assert_uint_eq(m->Hkv, 2);
	attn_model_free(m);
}
END_TEST

/* Only out_proj.bias: b_qkv exists and is zeros. */
START_TEST(test_load_partial_mha_bias)
{
	struct st_spec s[3] = {st_mha_small[0], st_mha_small[2], st_mha_small[3]};
	struct attn_model *m = NULL;
	struct attn_error err;

	ck_assert_int_eq(st_load_specs(s, 3, 2, NULL, &m, &err), ATTN_OK);
	ck_assert_zeros(m->b_qkv, 12, "b_qkv");
	ck_assert_tensor(m->b_o, 2, 4, "b_o"); /* third spec: t = 2 */
	attn_model_free(m);
}
END_TEST

START_TEST(test_load_prefix)
{
	static const char prefix[] = "model.layers.0.self_attn.";
	char names[ST_N_MHA][64];
	struct st_spec s[ST_N_MHA];
	struct attn_model *m = NULL;
	struct attn_error err;

	memcpy(s, st_mha_small, sizeof(s));
	for (size_t t = 0; t < ST_N_MHA; t++) {
		snprintf(names[t], sizeof(names[t]), "%s%s", prefix, st_mha_small[t].name);
		s[t].name = names[t];
	}
	ck_assert_int_eq(st_load_specs(s, ST_N_MHA, 2, prefix, &m, &err), ATTN_OK);
	ck_assert_mha_small(m);
	attn_model_free(m);
	st_assert_fails(st_load_specs(s, ST_N_MHA, 2, NULL, &m, &err), err, ATTN_ERR_MISSING_TENSOR,
			"in_proj_weight");
	st_assert_fails(st_load_specs(s, ST_N_MHA, 2, "model.layers.1.self_attn.", &m, &err), err,
			ATTN_ERR_MISSING_TENSOR, "model.layers.1.self_attn.in_proj_weight");
	st_assert_fails(st_load_specs(st_mha_small, ST_N_MHA, 2, prefix, &m, &err), err,
			ATTN_ERR_MISSING_TENSOR, prefix);
}
END_TEST

/* The data starts at an odd address: loads read bytes, never words. */
START_TEST(test_load_unaligned)
{
	struct attn_safetensors_options opts = {.num_heads = 2};
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len;
	uint8_t *f = st_make_file(st_mha_small, ST_N_MHA, NULL, &len, NULL);
	uint8_t *shifted = malloc(len + 1);

	ck_assert_ptr_nonnull(shifted);
	memcpy(shifted + 1, f, len);
	ck_assert_int_eq(attn_model_from_safetensors(&m, shifted + 1, len, &opts, &err), ATTN_OK);
	ck_assert_mha_small(m);
	attn_model_free(m);
	free(shifted);
	free(f);
}
END_TEST

/* Tensors of other dtypes, unknown dtypes and metadata are stepped over. */
START_TEST(test_load_skips_others)
{
	static const char meta[] = "\"__metadata__\":{\"format\":\"pt\",\"k\\u00e9y\":"
				   "\"line\\nbreak \\ud83d\\ude00 \\\"q\\\" \\/\",\"\":\"\"}";
	struct st_spec s[ST_N_MHA + 4];
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len;
	uint8_t *f;

	memcpy(s, st_mha_small, sizeof(st_mha_small));
	s[ST_N_MHA] = (struct st_spec){"position_ids", "I64", 2, {1, 5}};
	s[ST_N_MHA + 1] = (struct st_spec){"packed", "F4", 1, {7}};	/* size unknown */
	s[ST_N_MHA + 2] = (struct st_spec){"scalar", "F64", 0, {0}};	/* shape [] */
	s[ST_N_MHA + 3] = (struct st_spec){"empty", "F32", 2, {0, 16}}; /* no bytes */
	f = st_make_file(s, ST_N_MHA + 4, meta, &len, NULL);
	ck_assert_int_eq(st_load_bytes(f, len, 2, NULL, &m, &err), ATTN_OK);
	ck_assert_mha_small(m);
	attn_model_free(m);
	free(f);
}
END_TEST

START_TEST(test_null_error_and_arguments)
{
	struct attn_safetensors_options opts = {.num_heads = 2};
	struct attn_safetensors_options zero = {.num_heads = 0};
	struct attn_model *m = (struct attn_model *)&opts; /* must be reset to NULL */
	struct attn_error err;
	size_t len;
	uint8_t *f = st_make_file(st_mha_small, ST_N_MHA, NULL, &len, NULL);

	ck_assert_int_eq(attn_model_from_safetensors(NULL, f, len, &opts, &err), ATTN_ERR_ARGUMENT);
	ck_assert_int_eq(attn_model_from_safetensors(&m, f, len, NULL, &err), ATTN_ERR_ARGUMENT);
	ck_assert_ptr_null(m);
	ck_assert_int_eq(attn_model_from_safetensors(&m, f, len, &zero, &err), ATTN_ERR_ARGUMENT);
	ck_assert_int_eq(attn_model_from_safetensors(&m, NULL, 5, &opts, &err), ATTN_ERR_ARGUMENT);
	ck_assert_int_eq(attn_model_from_safetensors(&m, NULL, 0, &opts, &err), ATTN_ERR_TRUNCATED);
	/* err may be NULL: the status still says what went wrong */
	ck_assert_int_eq(attn_model_from_safetensors(&m, f, len - 1, &opts, NULL),
			 ATTN_ERR_TRUNCATED);
	ck_assert_ptr_null(m);
	ck_assert_int_eq(attn_model_from_safetensors(&m, f, len, &opts, NULL), ATTN_OK);
	attn_model_free(m);
	free(f);
}
END_TEST

/* ---- rejected tensors -------------------------------------------------- */

START_TEST(test_dtype)
{
	static const char *const bad[] = {"I64", "F64", "U8", "BOOL", "F8_E4M3", "F4", "f32"};
	struct st_spec s[ST_N_MHA];
	struct attn_model *m = NULL;
	struct attn_error err;

	memcpy(s, st_mha_small, sizeof(s));
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		for (size_t t = 0; t < ST_N_MHA; t++) {
			s[t].dtype = bad[k];
			st_assert_fails(st_load_specs(s, ST_N_MHA, 2, NULL, &m, &err), err,
					ATTN_ERR_DTYPE, st_mha_small[t].name);
			ck_assert_ptr_nonnull(strstr(err.message, bad[k]));
			ck_assert_str_eq(err.field, st_mha_small[t].name);
			s[t].dtype = "F32";
		}
	}
}
END_TEST

START_TEST(test_missing)
{
	struct st_spec s[ST_N_LLAMA];
	struct attn_model *m = NULL;
	struct attn_error err;

	/* MHA: every required tensor in turn */
	st_assert_fails(st_load_specs(st_mha_small + 1, ST_N_MHA - 1, 2, NULL, &m, &err), err,
			ATTN_ERR_MISSING_TENSOR, "'in_proj_weight' or 'q_proj.weight'");
	memcpy(s, st_mha_small, sizeof(st_mha_small));
	s[2] = st_mha_small[3];
	st_assert_fails(st_load_specs(s, ST_N_MHA - 1, 2, NULL, &m, &err), err,
			ATTN_ERR_MISSING_TENSOR, "missing tensor 'out_proj.weight'");
	ck_assert_str_eq(err.field, "out_proj.weight");
	/* Llama: q, k, v, o each dropped (the file order has them first) */
	for (size_t drop = 1; drop < 4; drop++) {
		size_t n = 0;

		for (size_t t = 0; t < ST_N_LLAMA; t++)
			if (t != drop)
				s[n++] = st_llama_small[t];
		st_assert_fails(st_load_specs(s, n, 4, NULL, &m, &err), err,
				ATTN_ERR_MISSING_TENSOR, st_llama_small[drop].name);
	}
	st_assert_fails(st_load_specs(st_llama_small + 1, ST_N_LLAMA - 1, 4, NULL, &m, &err), err,
			ATTN_ERR_MISSING_TENSOR, "q_proj.weight");
}
END_TEST

/* One spec's shape changed; the load must fail with st naming the tensor. */
static void ck_assert_reshaped(const struct st_spec *base, size_t n, size_t H, size_t which,
			       size_t rank, size_t d0, size_t d1, enum attn_status st,
			       const char *want)
{
	struct st_spec s[ST_N_LLAMA];
	struct attn_model *m = NULL;
	struct attn_error err;

	memcpy(s, base, n * sizeof(*s));
	s[which].rank = rank;
	s[which].dims[0] = d0;
	s[which].dims[1] = d1;
	s[which].dims[2] = 2;
	st_assert_fails(st_load_specs(s, n, H, NULL, &m, &err), err, st, want);
}

START_TEST(test_shapes)
{
	ck_assert_reshaped(st_mha_small, ST_N_MHA, 2, 2, 2, 4, 3, ATTN_ERR_SHAPE_MISMATCH,
			   "'out_proj.weight' should have shape [4, 4]");
	ck_assert_reshaped(st_mha_small, ST_N_MHA, 2, 0, 2, 11, 4, ATTN_ERR_SHAPE_MISMATCH,
			   "'in_proj_weight' should have shape [12, 4]");
	ck_assert_reshaped(st_mha_small, ST_N_MHA, 2, 0, 2, 4, 4, ATTN_ERR_SHAPE_MISMATCH,
			   "in_proj_weight");
	ck_assert_reshaped(st_mha_small, ST_N_MHA, 2, 0, 3, 12, 4, ATTN_ERR_SHAPE_MISMATCH,
			   "'in_proj_weight' must be a non-empty matrix, has rank 3");
	ck_assert_reshaped(st_mha_small, ST_N_MHA, 2, 0, 2, 0, 4, ATTN_ERR_SHAPE_MISMATCH,
			   "non-empty");
	ck_assert_reshaped(st_mha_small, ST_N_MHA, 2, 0, 1, 48, 0, ATTN_ERR_SHAPE_MISMATCH,
			   "rank 1");
	ck_assert_reshaped(st_mha_small, ST_N_MHA, 2, 1, 1, 11, 0, ATTN_ERR_SHAPE_MISMATCH,
			   "'in_proj_bias' should have shape [12]");
	ck_assert_reshaped(st_mha_small, ST_N_MHA, 2, 1, 2, 12, 1, ATTN_ERR_SHAPE_MISMATCH,
			   "in_proj_bias");
	ck_assert_reshaped(st_mha_small, ST_N_MHA, 2, 3, 1, 5, 0, ATTN_ERR_SHAPE_MISMATCH,
			   "out_proj.bias");
	/* E = 4 with 3 heads */
	ck_assert_reshaped(st_mha_small, ST_N_MHA, 3, 3, 1, 4, 0, ATTN_ERR_HEADS,
			   "E = 4, not divisible by num_heads 3");
	/* Llama, E = 8, H = 4, D = 2: k rows 3 are not whole heads, 6 are 3 kv
	 * heads (not dividing 4), 16 are 8 kv heads */
	ck_assert_reshaped(st_llama_small, ST_N_LLAMA, 4, 1, 2, 3, 8, ATTN_ERR_KV_HEADS,
			   "'k_proj.weight' has 3 rows");
	ck_assert_reshaped(st_llama_small, ST_N_LLAMA, 4, 1, 2, 6, 8, ATTN_ERR_KV_HEADS,
			   "k_proj.weight");
	ck_assert_reshaped(st_llama_small, ST_N_LLAMA, 4, 1, 2, 16, 8, ATTN_ERR_KV_HEADS,
			   "k_proj.weight");
	ck_assert_reshaped(st_llama_small, ST_N_LLAMA, 4, 1, 2, 4, 7, ATTN_ERR_SHAPE_MISMATCH,
			   "'k_proj.weight' should have shape [4, 8]");
	ck_assert_reshaped(st_llama_small, ST_N_LLAMA, 4, 2, 2, 8, 8, ATTN_ERR_SHAPE_MISMATCH,
			   "'v_proj.weight' should have shape [4, 8]");
	ck_assert_reshaped(st_llama_small, ST_N_LLAMA, 4, 0, 2, 4, 8, ATTN_ERR_SHAPE_MISMATCH,
			   "'q_proj.weight' should have shape [8, 8]");
	ck_assert_reshaped(st_llama_small, ST_N_LLAMA, 4, 3, 2, 8, 4, ATTN_ERR_SHAPE_MISMATCH,
			   "o_proj.weight");
	ck_assert_reshaped(st_llama_small, ST_N_LLAMA, 4, 5, 1, 8, 0, ATTN_ERR_SHAPE_MISMATCH,
			   "'k_proj.bias' should have shape [4]");
	ck_assert_reshaped(st_llama_small, ST_N_LLAMA, 4, 7, 2, 5, 7, ATTN_ERR_SHAPE_MISMATCH,
			   "'embed_tokens.weight' should have shape [5, 8]");
	ck_assert_reshaped(st_llama_small, ST_N_LLAMA, 4, 7, 2, 0, 8, ATTN_ERR_SHAPE_MISMATCH,
			   "embed_tokens.weight");
	ck_assert_reshaped(st_llama_small, ST_N_LLAMA, 4, 7, 1, 40, 0, ATTN_ERR_SHAPE_MISMATCH,
			   "embed_tokens.weight");
}
END_TEST

START_TEST(test_ambiguous)
{
	struct st_spec s[ST_N_MHA + 1];
	struct attn_model *m = NULL;
	struct attn_error err;

	memcpy(s, st_mha_small, sizeof(st_mha_small));
	s[ST_N_MHA] = st_llama_small[0];
	st_assert_fails(st_load_specs(s, ST_N_MHA + 1, 2, NULL, &m, &err), err, ATTN_ERR_FORMAT,
			"ambiguous");
}
END_TEST

/* A non-finite element, written over tensor t's element i in a valid file. */
static void ck_assert_nonfinite(const struct st_spec *base, size_t n, size_t H, const char *dtype,
				size_t t, size_t i, uint32_t bits)
{
	struct st_spec s[ST_N_LLAMA];
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len, offs[ST_N_LLAMA], es = st_dtype_size(dtype);
	uint8_t *f;
	enum attn_status st;

	memcpy(s, base, n * sizeof(*s));
	for (size_t k = 0; k < n; k++)
		s[k].dtype = dtype;
	f = st_make_file(s, n, NULL, &len, offs);
	for (size_t k = 0; k < es; k++)
		f[offs[t] + i * es + k] = (uint8_t)(bits >> (8 * k));
	st = st_load_bytes(f, len, H, NULL, &m, &err);
	free(f);
	st_assert_fails(st, err, ATTN_ERR_NONFINITE, base[t].name);
	ck_assert_uint_eq(err.index, i);
	ck_assert_str_eq(err.field, base[t].name);
}

START_TEST(test_nonfinite)
{
	ck_assert_nonfinite(st_mha_small, ST_N_MHA, 2, "F32", 0, 5, 0x7fc00000u);  /* NaN */
	ck_assert_nonfinite(st_mha_small, ST_N_MHA, 2, "F32", 0, 47, 0xff800000u); /* -Inf, last */
	ck_assert_nonfinite(st_mha_small, ST_N_MHA, 2, "F32", 1, 0, 0x7f800000u);
	ck_assert_nonfinite(st_mha_small, ST_N_MHA, 2, "F16", 3, 2, 0x7c00u);
	ck_assert_nonfinite(st_mha_small, ST_N_MHA, 2, "F16", 2, 9, 0xfe00u);
	ck_assert_nonfinite(st_llama_small, ST_N_LLAMA, 4, "BF16", 1, 7, 0xff80u);
	ck_assert_nonfinite(st_llama_small, ST_N_LLAMA, 4, "BF16", 6, 3, 0x7fc1u);
	ck_assert_nonfinite(st_llama_small, ST_N_LLAMA, 4, "F32", 7, 39, 0x7f800001u);
}
END_TEST

/* ---- embed_name -------------------------------------------------------- */

#define LAYER "model.layers.0.self_attn."
#define EMBED "model.embed_tokens.weight"

/* st_llama_small laid out as a real checkpoint: the layer under LAYER, the
 * table (spec 7) at EMBED. s and names hold at least ST_N_LLAMA entries. */
static void checkpoint_specs(struct st_spec *s, char (*names)[64])
{
	memcpy(s, st_llama_small, ST_N_LLAMA * sizeof(*s));
	for (size_t t = 0; t + 1 < ST_N_LLAMA; t++) {
		snprintf(names[t], sizeof(names[t]), "%s%s", LAYER, st_llama_small[t].name);
		s[t].name = names[t];
	}
	s[ST_N_LLAMA - 1].name = EMBED;
}

/* Loads file f with H = 4, prefix LAYER and embed_name (or NULL). */
static enum attn_status load_embed(const uint8_t *f, size_t len, const char *embed_name,
				   struct attn_model **m, struct attn_error *err)
{
	struct attn_safetensors_options opts = {
	    .num_heads = 4, .prefix = LAYER, .embed_name = embed_name};

	return st_load_opts(f, len, &opts, m, err);
}

static enum attn_status load_embed_specs(const struct st_spec *s, size_t n, const char *embed_name,
					 struct attn_model **m, struct attn_error *err)
{
	size_t len;
	uint8_t *f = st_make_file(s, n, NULL, &len, NULL);
	enum attn_status st = load_embed(f, len, embed_name, m, err);

	free(f);
	return st;
}

/* Without embed_name the table is looked for under the prefix (absent: no
 * table); with it, at exactly that name. */
START_TEST(test_embed_name)
{
	struct st_spec s[ST_N_LLAMA];
	char names[ST_N_LLAMA][64];
	struct attn_model *m = NULL;
	struct attn_error err;

	checkpoint_specs(s, names);
	ck_assert_int_eq(load_embed_specs(s, ST_N_LLAMA, NULL, &m, &err), ATTN_OK);
	ck_assert_ptr_null(m->embed);
	ck_assert_uint_eq(m->vocab, 0);
	attn_model_free(m);
	ck_assert_int_eq(load_embed_specs(s, ST_N_LLAMA, EMBED, &m, &err), ATTN_OK);
	ck_assert_uint_eq(m->E, 8);
	ck_assert_uint_eq(m->Hkv, 2);
	ck_assert_uint_eq(m->vocab, 5);
	ck_assert_tensor(m->embed, 7, 40, "embed");
	ck_assert_tensor(m->w_qkv, 0, 64, "w_qkv q rows");
	ck_assert_tensor(m->w_o, 3, 64, "w_o");
	attn_model_free(m);
}
END_TEST

/* Both prefix + "embed_tokens.weight" and EMBED present: embed_name picks. */
START_TEST(test_embed_name_wins)
{
	struct st_spec s[ST_N_LLAMA + 1];
	char names[ST_N_LLAMA][64];
	struct attn_model *m = NULL;
	struct attn_error err;

	checkpoint_specs(s, names);
	s[ST_N_LLAMA] = (struct st_spec){LAYER "embed_tokens.weight", "F32", 2, {3, 8}};
	ck_assert_int_eq(load_embed_specs(s, ST_N_LLAMA + 1, NULL, &m, &err), ATTN_OK);
	ck_assert_uint_eq(m->vocab, 3);
	ck_assert_tensor(m->embed, ST_N_LLAMA, 24, "embed under the prefix");
	attn_model_free(m);
	ck_assert_int_eq(load_embed_specs(s, ST_N_LLAMA + 1, EMBED, &m, &err), ATTN_OK);
	ck_assert_uint_eq(m->vocab, 5);
	ck_assert_tensor(m->embed, 7, 40, "embed at embed_name");
	attn_model_free(m);
}
END_TEST

/* A given embed_name must name a tensor exactly: nothing is added to it. */
START_TEST(test_embed_name_missing)
{
	static const char *const absent[] = {"model.embed_tokens", "embed_tokens.weight",
					     LAYER "embed_tokens.weight", EMBED " ", ""};
	struct st_spec s[ST_N_LLAMA];
	char names[ST_N_LLAMA][64], want[128], longname[201];
	struct attn_model *m = NULL;
	struct attn_error err;

	checkpoint_specs(s, names);
	for (size_t k = 0; k < sizeof(absent) / sizeof(absent[0]); k++) {
		snprintf(want, sizeof(want), "missing tensor '%s' named by embed_name", absent[k]);
		st_assert_fails(load_embed_specs(s, ST_N_LLAMA, absent[k], &m, &err), err,
				ATTN_ERR_MISSING_TENSOR, want);
		ck_assert_str_eq(err.field, "embed_name");
	}
	st_assert_fails(load_embed_specs(s, ST_N_LLAMA - 1, EMBED, &m, &err), err,
			ATTN_ERR_MISSING_TENSOR, "'" EMBED "'");
	/* a long name is quoted cut to 96 characters */
	memset(longname, 'x', 200);
	longname[200] = '\0';
	st_assert_fails(load_embed_specs(s, ST_N_LLAMA, longname, &m, &err), err,
			ATTN_ERR_MISSING_TENSOR, "' named by embed_name");
	ck_assert_uint_eq(strspn(strchr(err.message, '\'') + 1, "x"), 96);
}
END_TEST

/* Errors in the table found by embed_name quote that name. */
START_TEST(test_embed_name_rejected)
{
	struct st_spec s[ST_N_LLAMA];
	char names[ST_N_LLAMA][64];
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len, offs[ST_N_LLAMA];
	const uint32_t nan_bits = 0x7fc00000u;
	uint8_t *f;

	checkpoint_specs(s, names);
	s[7].dims[1] = 7;
	st_assert_fails(load_embed_specs(s, ST_N_LLAMA, EMBED, &m, &err), err,
			ATTN_ERR_SHAPE_MISMATCH, "'" EMBED "' should have shape [5, 8]");
	ck_assert_str_eq(err.field, "embed_tokens.weight");
	s[7] = (struct st_spec){EMBED, "F32", 1, {40}};
	st_assert_fails(load_embed_specs(s, ST_N_LLAMA, EMBED, &m, &err), err,
			ATTN_ERR_SHAPE_MISMATCH,
			"'" EMBED "' must be a non-empty matrix, has rank 1");
	s[7] = (struct st_spec){EMBED, "I64", 2, {5, 8}};
	st_assert_fails(load_embed_specs(s, ST_N_LLAMA, EMBED, &m, &err), err, ATTN_ERR_DTYPE,
			"'" EMBED "' has dtype I64");
	s[7] = st_llama_small[7];
	s[7].name = EMBED;
	f = st_make_file(s, ST_N_LLAMA, NULL, &len, offs);
	for (size_t k = 0; k < 4; k++)
		f[offs[7] + 3 * 4 + k] = (uint8_t)(nan_bits >> (8 * k));
	st_assert_fails(load_embed(f, len, EMBED, &m, &err), err, ATTN_ERR_NONFINITE,
			"'" EMBED "' holds a non-finite value at element 3");
	ck_assert_uint_eq(err.index, 3);
	free(f);
}
END_TEST

static Suite *safetensors_models_suite(void)
{
	Suite *s = suite_create("safetensors_models");
	TCase *convert = tcase_create("convert");
	TCase *load = tcase_create("load");
	TCase *bad = tcase_create("rejected");
	TCase *embed = tcase_create("embed_name");

	tcase_add_test(convert, test_f16_all_codes);
	tcase_add_test(convert, test_f16_named);
	tcase_add_test(convert, test_bf16_all_codes);
	suite_add_tcase(s, convert);

	tcase_add_loop_test(load, test_load_mha_dtypes, 0, 3);
	tcase_add_test(load, test_load_mixed_dtypes);
	tcase_add_test(load, test_load_llama_layout);
	tcase_add_test(load, test_load_llama_no_bias);
	tcase_add_test(load, test_load_partial_mha_bias);
	tcase_add_test(load, test_load_prefix);
	tcase_add_test(load, test_load_unaligned);
	tcase_add_test(load, test_load_skips_others);
	tcase_add_test(load, test_null_error_and_arguments);
	suite_add_tcase(s, load);

	tcase_set_timeout(bad, 120); /* valgrind runs these too */
	tcase_add_test(bad, test_dtype);
	tcase_add_test(bad, test_missing);
	tcase_add_test(bad, test_shapes);
	tcase_add_test(bad, test_ambiguous);
	tcase_add_test(bad, test_nonfinite);
	suite_add_tcase(s, bad);

	tcase_add_test(embed, test_embed_name);
	tcase_add_test(embed, test_embed_name_wins);
	tcase_add_test(embed, test_embed_name_missing);
	tcase_add_test(embed, test_embed_name_rejected);
	suite_add_tcase(s, embed);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, safetensors_models_suite, NULL);
}
