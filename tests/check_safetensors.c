/*
 * check_safetensors.c: the safetensors loader (engine/safetensors.h).
 *
 *   convert    attn_f16_to_f32 and attn_bf16_to_f32 on all 65536 codes each,
 *              against ldexp / the float's bit layout, plus named edge values
 *   load       small files built here in C (E = 4 or 8): values land where
 *              model.h says, for both naming schemes, every dtype, a prefix,
 *              an unaligned buffer, skipped tensors, partial biases
 *   malformed  every truncation of a valid file, one byte of the header
 *              mutated at every offset, a table of bad headers, deep nesting,
 *              huge header lengths, bad dtypes, offsets, sizes, names and
 *              shapes, non-finite weights: each fails with its named status
 *   fixtures   tests/fixtures/safetensors/NAME.{safetensors,json}, written by
 *              PyTorch (make_safetensors.py): the tensors equal the JSON's
 *              exactly and attn_mha_forward and attn_mha_forward_ref reproduce
 *              the expected output and per-head weights within
 *              |a - b| <= 1e-5 + 1e-4 |b|
 * Every buffer handed to the loader is malloc'd at its exact length, so a read
 * past its end is an ASan or valgrind error. Fixtures are found under
 * $ATTN_FIXTURES, default tests/fixtures (make test runs from the repo root).
 * Assumes a 64-bit size_t (the overflow cases spell out 2^64).
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mha.h"
#include "model.h"
#include "safetensors.h"

#define TOL_ABS 1e-5
#define TOL_REL 1e-4

/* ---- building files ---------------------------------------------------- */

/* One tensor of a file built here: shape outermost first. */
struct tspec {
	const char *name;
	const char *dtype;
	size_t rank;
	size_t dims[3];
};

static size_t dtype_size(const char *dtype)
{
	if (strcmp(dtype, "F32") == 0)
		return 4;
	if (strcmp(dtype, "F16") == 0 || strcmp(dtype, "BF16") == 0)
		return 2;
	if (strcmp(dtype, "I64") == 0 || strcmp(dtype, "F64") == 0)
		return 8;
	return 1; /* anything else: one byte per element, any content */
}

/* Element i of tensor t: a multiple of 1/8 in [-1, 1], exact in F32, F16, BF16. */
static float tvalue(size_t t, size_t i)
{
	return (float)((int)((i * 5 + t * 3) % 17) - 8) * 0.125f;
}

/* Half bits of v; exact for zero and normal halves (all tvalue()s). */
static uint16_t f16_bits(float v)
{
	uint16_t sign = signbit(v) ? 0x8000 : 0;
	int e;
	double m;

	if (v == 0.0f)
		return sign;
	m = frexp(fabs(v), &e); /* |v| = m 2^e = (2m) 2^(e-1), 2m in [1, 2) */
	return (uint16_t)(sign | (e - 1 + 15) << 10 | (int)((2 * m - 1) * 1024));
}

static uint16_t bf16_bits(float v)
{
	uint32_t u;

	memcpy(&u, &v, sizeof(u));
	return (uint16_t)(u >> 16);
}

/* Little-endian bytes of element value v in dtype at p. */
static void put_value(uint8_t *p, const char *dtype, float v)
{
	uint32_t u;
	uint16_t h;

	if (strcmp(dtype, "F32") == 0) {
		memcpy(&u, &v, sizeof(u));
		for (int k = 0; k < 4; k++)
			p[k] = (uint8_t)(u >> (8 * k));
	} else if (strcmp(dtype, "F16") == 0 || strcmp(dtype, "BF16") == 0) {
		h = dtype[0] == 'F' ? f16_bits(v) : bf16_bits(v);
		p[0] = (uint8_t)h;
		p[1] = (uint8_t)(h >> 8);
	} else {
		memset(p, 0, dtype_size(dtype));
	}
}

static size_t numel(const struct tspec *s)
{
	size_t n = 1;

	for (size_t d = 0; d < s->rank; d++)
		n *= s->dims[d];
	return n;
}

static void appendf(char *buf, size_t cap, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void appendf(char *buf, size_t cap, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + *at, cap - *at, fmt, ap);
	va_end(ap);
	ck_assert(n >= 0 && (size_t)n < cap - *at);
	*at += (size_t)n;
}

/* 8-byte little-endian header length, header, data: malloc'd at exactly *len. */
static uint8_t *raw_file(uint64_t header_len, const char *header, size_t hlen, const uint8_t *data,
			 size_t dlen, size_t *len)
{
	uint8_t *f;

	*len = 8 + hlen + dlen;
	f = malloc(*len);
	ck_assert_ptr_nonnull(f);
	for (int k = 0; k < 8; k++)
		f[k] = (uint8_t)(header_len >> (8 * k));
	memcpy(f + 8, header, hlen);
	if (dlen != 0)
		memcpy(f + 8 + hlen, data, dlen);
	return f;
}

/* A file from a header string and dlen zero bytes of data. */
static uint8_t *header_file(const char *header, size_t hlen, size_t dlen, size_t *len)
{
	uint8_t *zeros = calloc(dlen ? dlen : 1, 1);
	uint8_t *f;

	ck_assert_ptr_nonnull(zeros);
	f = raw_file(hlen, header, hlen, zeros, dlen, len);
	free(zeros);
	return f;
}

/*
 * A file holding specs back to back in spec order, element i of tensor t set
 * to tvalue(t, i), the header padded with spaces to a multiple of 8. extra, if
 * not NULL, is spliced in as further header members. offs[t] receives tensor
 * t's absolute byte offset when offs is not NULL.
 */
static uint8_t *make_file(const struct tspec *s, size_t n, const char *extra, size_t *len,
			  size_t *offs)
{
	char header[4096];
	uint8_t *data, *f;
	size_t at = 0, dlen = 0, pos = 0, bytes;

	for (size_t t = 0; t < n; t++)
		dlen += numel(&s[t]) * dtype_size(s[t].dtype);
	data = calloc(dlen ? dlen : 1, 1);
	ck_assert_ptr_nonnull(data);
	appendf(header, sizeof(header), &at, "{");
	for (size_t t = 0; t < n; t++) {
		bytes = numel(&s[t]) * dtype_size(s[t].dtype);
		appendf(header, sizeof(header), &at, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
			t ? "," : "", s[t].name, s[t].dtype);
		for (size_t d = 0; d < s[t].rank; d++)
			appendf(header, sizeof(header), &at, "%s%zu", d ? "," : "", s[t].dims[d]);
		appendf(header, sizeof(header), &at, "],\"data_offsets\":[%zu,%zu]}", pos,
			pos + bytes);
		for (size_t i = 0; i < numel(&s[t]); i++)
			put_value(data + pos + i * dtype_size(s[t].dtype), s[t].dtype,
				  tvalue(t, i));
		pos += bytes;
	}
	if (extra != NULL)
		appendf(header, sizeof(header), &at, "%s%s", n ? "," : "", extra);
	appendf(header, sizeof(header), &at, "}");
	while (at % 8 != 0)
		appendf(header, sizeof(header), &at, " ");
	f = raw_file(at, header, at, data, dlen, len);
	free(data);
	if (offs != NULL) {
		pos = 8 + at;
		for (size_t t = 0; t < n; t++) {
			offs[t] = pos;
			pos += numel(&s[t]) * dtype_size(s[t].dtype);
		}
	}
	return f;
}

/* Loads a private exact-length copy of file[0, len) (len may be 0). */
static enum attn_status load_bytes(const uint8_t *file, size_t len, size_t H, const char *prefix,
				   struct attn_model **m, struct attn_error *err)
{
	struct attn_safetensors_options opts = {.num_heads = H, .prefix = prefix};
	uint8_t *copy = malloc(len ? len : 1);
	enum attn_status st;

	ck_assert_ptr_nonnull(copy);
	if (len != 0)
		memcpy(copy, file, len);
	memset(err, 0, sizeof(*err));
	st = attn_model_from_safetensors(m, copy, len, &opts, err);
	free(copy);
	if (st != ATTN_OK) {
		ck_assert_ptr_null(*m);
		ck_assert_int_eq(err->status, st);
		ck_assert(err->message[0] != '\0');
	}
	return st;
}

static enum attn_status load_specs(const struct tspec *s, size_t n, size_t H, const char *prefix,
				   struct attn_model **m, struct attn_error *err)
{
	size_t len;
	uint8_t *f = make_file(s, n, NULL, &len, NULL);
	enum attn_status st = load_bytes(f, len, H, prefix, m, err);

	free(f);
	return st;
}

/* Asserts a failure with status st whose message holds want. */
#define ck_assert_fails(got, err, st, want)                                                        \
	do {                                                                                       \
		ck_assert_msg((got) == (st), "status %s, want %s: %s", attn_status_str(got),       \
			      attn_status_str(st), (err).message);                                 \
		ck_assert_msg(strstr((err).message, (want)) != NULL, "message '%s' lacks '%s'",    \
			      (err).message, (want));                                              \
	} while (0)

/* E = 4, H = 2: a PyTorch MultiheadAttention state_dict. */
static const struct tspec mha_small[] = {
    {"in_proj_weight", "F32", 2, {12, 4}},
    {"in_proj_bias", "F32", 1, {12}},
    {"out_proj.weight", "F32", 2, {4, 4}},
    {"out_proj.bias", "F32", 1, {4}},
};
#define N_MHA (sizeof(mha_small) / sizeof(mha_small[0]))

/* E = 8, H = 4, Hkv = 2, D = 2: Llama names, Qwen2-like biases, an embedding. */
static const struct tspec llama_small[] = {
    {"q_proj.weight", "F32", 2, {8, 8}}, {"k_proj.weight", "F32", 2, {4, 8}},
    {"v_proj.weight", "F32", 2, {4, 8}}, {"o_proj.weight", "F32", 2, {8, 8}},
    {"q_proj.bias", "F32", 1, {8}},	 {"k_proj.bias", "F32", 1, {4}},
    {"v_proj.bias", "F32", 1, {4}},	 {"embed_tokens.weight", "F32", 2, {5, 8}},
};
#define N_LLAMA (sizeof(llama_small) / sizeof(llama_small[0]))

/* x[0, n) == tvalue(t, 0..n). */
static void ck_assert_tensor(const float *x, size_t t, size_t n, const char *what)
{
	ck_assert_ptr_nonnull(x);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(x[i] == tvalue(t, i), "%s[%zu] = %g, want %g", what, i, x[i],
			      tvalue(t, i));
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

START_TEST(test_load_mha_dtypes)
{
	struct tspec s[N_MHA];
	struct attn_model *m = NULL;
	struct attn_error err;

	memcpy(s, mha_small, sizeof(s));
	for (size_t t = 0; t < N_MHA; t++)
		s[t].dtype = dtypes[(size_t)_i];
	ck_assert_int_eq(load_specs(s, N_MHA, 2, NULL, &m, &err), ATTN_OK);
	ck_assert_mha_small(m);
	attn_model_free(m);
}
END_TEST

START_TEST(test_load_mixed_dtypes)
{
	struct tspec s[N_MHA];
	struct attn_model *m = NULL;
	struct attn_error err;

	memcpy(s, mha_small, sizeof(s));
	for (size_t t = 0; t < N_MHA; t++)
		s[t].dtype = dtypes[t % 3];
	ck_assert_int_eq(load_specs(s, N_MHA, 2, NULL, &m, &err), ATTN_OK);
	ck_assert_mha_small(m);
	attn_model_free(m);
}
END_TEST

/* Llama rows go q, k, v into w_qkv; the missing o_proj.bias is zeros. */
START_TEST(test_load_llama_layout)
{
	struct attn_model *m = NULL;
	struct attn_error err;

	ck_assert_int_eq(load_specs(llama_small, N_LLAMA, 4, NULL, &m, &err), ATTN_OK);
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

	ck_assert_int_eq(load_specs(llama_small, 4, 4, NULL, &m, &err), ATTN_OK);
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
	struct tspec s[3] = {mha_small[0], mha_small[2], mha_small[3]};
	struct attn_model *m = NULL;
	struct attn_error err;

	ck_assert_int_eq(load_specs(s, 3, 2, NULL, &m, &err), ATTN_OK);
	ck_assert_zeros(m->b_qkv, 12, "b_qkv");
	ck_assert_tensor(m->b_o, 2, 4, "b_o"); /* third spec: t = 2 */
	attn_model_free(m);
}
END_TEST

START_TEST(test_load_prefix)
{
	static const char prefix[] = "model.layers.0.self_attn.";
	char names[N_MHA][64];
	struct tspec s[N_MHA];
	struct attn_model *m = NULL;
	struct attn_error err;

	memcpy(s, mha_small, sizeof(s));
	for (size_t t = 0; t < N_MHA; t++) {
		snprintf(names[t], sizeof(names[t]), "%s%s", prefix, mha_small[t].name);
		s[t].name = names[t];
	}
	ck_assert_int_eq(load_specs(s, N_MHA, 2, prefix, &m, &err), ATTN_OK);
	ck_assert_mha_small(m);
	attn_model_free(m);
	ck_assert_fails(load_specs(s, N_MHA, 2, NULL, &m, &err), err, ATTN_ERR_MISSING_TENSOR,
			"in_proj_weight");
	ck_assert_fails(load_specs(s, N_MHA, 2, "model.layers.1.self_attn.", &m, &err), err,
			ATTN_ERR_MISSING_TENSOR, "model.layers.1.self_attn.in_proj_weight");
	ck_assert_fails(load_specs(mha_small, N_MHA, 2, prefix, &m, &err), err,
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
	uint8_t *f = make_file(mha_small, N_MHA, NULL, &len, NULL);
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
	struct tspec s[N_MHA + 4];
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len;
	uint8_t *f;

	memcpy(s, mha_small, sizeof(mha_small));
	s[N_MHA] = (struct tspec){"position_ids", "I64", 2, {1, 5}};
	s[N_MHA + 1] = (struct tspec){"packed", "F4", 1, {7}};	   /* size unknown */
	s[N_MHA + 2] = (struct tspec){"scalar", "F64", 0, {0}};	   /* shape [] */
	s[N_MHA + 3] = (struct tspec){"empty", "F32", 2, {0, 16}}; /* no bytes */
	f = make_file(s, N_MHA + 4, meta, &len, NULL);
	ck_assert_int_eq(load_bytes(f, len, 2, NULL, &m, &err), ATTN_OK);
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
	uint8_t *f = make_file(mha_small, N_MHA, NULL, &len, NULL);

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

/* ---- malformed --------------------------------------------------------- */

/* Every proper prefix of a valid file fails as TRUNCATED, reading only it. */
START_TEST(test_truncated_everywhere)
{
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len;
	uint8_t *f = make_file(llama_small, N_LLAMA, "\"__metadata__\":{\"a\":\"b\"}", &len, NULL);

	for (size_t cut = 0; cut < len; cut++) {
		enum attn_status st = load_bytes(f, cut, 4, NULL, &m, &err);

		ck_assert_msg(st == ATTN_ERR_TRUNCATED, "cut at %zu of %zu: %s (%s)", cut, len,
			      attn_status_str(st), err.message);
	}
	ck_assert_int_eq(load_bytes(f, len, 4, NULL, &m, &err), ATTN_OK);
	attn_model_free(m);
	free(f);
}
END_TEST

/* One header byte replaced, at every offset, by each of a few bytes: no crash. */
START_TEST(test_mutated_header)
{
	static const uint8_t subst[] = {'{', '}', '[', ']', '"',  '\\', ',',  ':',  '0',
					'9', '-', 'e', ' ', 0x00, 0x1f, 0x80, 0xc3, 0xff};
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len, offs[N_MHA], ok = 0;
	uint8_t *f = make_file(mha_small, N_MHA, NULL, &len, offs);
	uint8_t keep;

	for (size_t at = 8; at < offs[0]; at++) {
		keep = f[at];
		for (size_t k = 0; k < sizeof(subst); k++) {
			f[at] = subst[k];
			if (load_bytes(f, len, 2, NULL, &m, &err) == ATTN_OK) {
				ok++;
				attn_model_free(m);
			}
		}
		f[at] = keep;
	}
	ck_assert_uint_gt(ok, 0); /* e.g. padding ' ' -> ' ', digits in values */
	free(f);
}
END_TEST

/* {"dtype":"F32","shape":[1],"data_offsets":[0,4]} and friends */
#define ENTRY(shape, offsets)                                                                      \
	"{\"dtype\":\"F32\",\"shape\":[" shape "],\"data_offsets\":[" offsets "]}"
#define T1 ENTRY("1", "0,4")
#define X16 "xxxxxxxxxxxxxxxx"

static const struct bad_header {
	const char *header;
	enum attn_status status;
	const char *want; /* in the message */
} bad_headers[] = {
    {"", ATTN_ERR_FORMAT, "length 0"},
    {"[]", ATTN_ERR_FORMAT, "start with '{'"},
    {" {}", ATTN_ERR_FORMAT, "start with '{'"},
    {"{", ATTN_ERR_FORMAT, "expected a string"},
    {"{}x", ATTN_ERR_FORMAT, "after the header"},
    {"{}{}", ATTN_ERR_FORMAT, "after the header"},
    {"{\"a\":" T1, ATTN_ERR_FORMAT, "expected ',' or '}'"},
    {"{\"a\":" T1 ",}", ATTN_ERR_FORMAT, "expected a string"},
    {"{\"a\" " T1 "}", ATTN_ERR_FORMAT, "expected ':'"},
    {"{a:" T1 "}", ATTN_ERR_FORMAT, "expected a string"},
    {"{'a':" T1 "}", ATTN_ERR_FORMAT, "expected a string"},
    {"{\"a\":" T1 " \"b\":" T1 "}", ATTN_ERR_FORMAT, "expected ',' or '}'"},
    {"{\"a\":{}}", ATTN_ERR_FORMAT, "lacks"},
    {"{\"a\":[]}", ATTN_ERR_FORMAT, "expected '{'"},
    {"{\"a\":null}", ATTN_ERR_FORMAT, "expected '{'"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", ATTN_ERR_FORMAT, "lacks"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", ATTN_ERR_FORMAT,
     "unknown key"},
    {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
     ATTN_ERR_FORMAT, "duplicate key"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],}}", ATTN_ERR_FORMAT,
     "expected a string"},
    {"{\"a\":{\"dtype\":\"F32\" \"shape\":[1],\"data_offsets\":[0,4]}}", ATTN_ERR_FORMAT,
     "expected ',' or '}'"},
    {"{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", ATTN_ERR_FORMAT,
     "expected a string"},
    {"{\"a\":" ENTRY("1", "0,4,8") "}", ATTN_ERR_FORMAT, "two integers"},
    {"{\"a\":" ENTRY("1", "0") "}", ATTN_ERR_FORMAT, "two integers"},
    {"{\"a\":" ENTRY("1", "") "}", ATTN_ERR_FORMAT, "integer"},
    {"{\"a\":" ENTRY("-1", "0,4") "}", ATTN_ERR_FORMAT, "non-negative integer"},
    {"{\"a\":" ENTRY("01", "0,4") "}", ATTN_ERR_FORMAT, "leading zero"},
    {"{\"a\":" ENTRY("1.0", "0,4") "}", ATTN_ERR_FORMAT, "expected an integer"},
    {"{\"a\":" ENTRY("1e0", "0,4") "}", ATTN_ERR_FORMAT, "expected an integer"},
    {"{\"a\":" ENTRY("\"1\"", "0,4") "}", ATTN_ERR_FORMAT, "non-negative integer"},
    {"{\"a\":" ENTRY("1,", "0,4") "}", ATTN_ERR_FORMAT, "non-negative integer"},
    {"{\"a\":" ENTRY("[1]", "0,4") "}", ATTN_ERR_FORMAT, "non-negative integer"},
    {"{\"a\":" ENTRY("1 1", "0,4") "}", ATTN_ERR_FORMAT, "in shape"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", ATTN_ERR_FORMAT,
     "'[' for shape"},
    /* strings */
    {"{\"a", ATTN_ERR_FORMAT, "unterminated"},
    {"{\"a\\", ATTN_ERR_FORMAT, "unterminated"},
    {"{\"a\\x\":" T1 "}", ATTN_ERR_FORMAT, "invalid escape"},
    {"{\"a\\u12\":" T1 "}", ATTN_ERR_FORMAT, "invalid escape"},
    {"{\"a\\u12g4\":" T1 "}", ATTN_ERR_FORMAT, "invalid escape"},
    {"{\"\\ud800\":" T1 "}", ATTN_ERR_FORMAT, "high surrogate"},
    {"{\"\\ud800\\u0041\":" T1 "}", ATTN_ERR_FORMAT, "high surrogate"},
    {"{\"\\udc00\":" T1 "}", ATTN_ERR_FORMAT, "low surrogate"},
    {"{\"a\tb\":" T1 "}", ATTN_ERR_FORMAT, "control character"},
    {"{\"a\nb\":" T1 "}", ATTN_ERR_FORMAT, "control character"},
    {"{\"\xff\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},
    {"{\"\xc0\xaf\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},	 /* overlong '/' */
    {"{\"\xe0\x80\xaf\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},	 /* overlong */
    {"{\"\xed\xa0\x80\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},	 /* a surrogate */
    {"{\"\xf4\x90\x80\x80\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"}, /* > U+10FFFF */
    {"{\"\xe2\x82\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},	 /* cut short */
    {"{\"\x80\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},		 /* lone continuation */
    {"{\"\xf5\x80\x80\x80\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"}, /* never a lead byte */
    {"{\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\":" T1 "}", ATTN_ERR_MISSING_TENSOR,
     "in_proj"}, /* valid 2-, 3- and 4-byte UTF-8 */
    /* names */
    {"{\"a\":" T1 ",\"a\":" T1 "}", ATTN_ERR_FORMAT, "duplicate tensor name 'a'"},
    {"{\"\xc3\xa9\":" T1 ",\"\\u00e9\":" T1 "}", ATTN_ERR_FORMAT, "duplicate tensor name"},
    {"{\"a\\u0000\":" T1 ",\"a\":" ENTRY("1", "4,8") "}", ATTN_ERR_MISSING_TENSOR, "q_proj"},
    /* metadata */
    {"{\"__metadata__\":{\"a\":1}}", ATTN_ERR_FORMAT, "expected a string"},
    {"{\"__metadata__\":{\"a\":{}}}", ATTN_ERR_FORMAT, "expected a string"},
    {"{\"__metadata__\":{\"a\":\"b\",}}", ATTN_ERR_FORMAT, "expected a string"},
    {"{\"__metadata__\":{\"a\" \"b\"}}", ATTN_ERR_FORMAT, "expected ':'"},
    {"{\"__metadata__\":[]}", ATTN_ERR_FORMAT, "__metadata__"},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", ATTN_ERR_FORMAT, "duplicate __metadata__"},
    {"{\"__metadata__\":{\"a\":\"b\"} }  ", ATTN_ERR_MISSING_TENSOR, "in_proj_weight"},
    {"{}", ATTN_ERR_MISSING_TENSOR, "in_proj_weight"},
    {"{}      ", ATTN_ERR_MISSING_TENSOR, "q_proj.weight"},
    {"{ }\t\r\n ", ATTN_ERR_MISSING_TENSOR, "q_proj.weight"},
    /* offsets and sizes (64 data bytes follow every header) */
    {"{\"a\":" ENTRY("1", "8,4") "}", ATTN_ERR_FORMAT, "backwards"},
    {"{\"a\":" ENTRY("1", "64,68") "}", ATTN_ERR_TRUNCATED, "past the 64 data bytes"},
    {"{\"a\":" ENTRY("16", "4,68") "}", ATTN_ERR_TRUNCATED, "tensor 'a'"},
    {"{\"a\":" ENTRY("2", "0,4") "}", ATTN_ERR_FORMAT, "make 8 bytes"},
    {"{\"a\":" ENTRY("", "0,8") "}", ATTN_ERR_FORMAT, "make 4 bytes"},
    {"{\"a\":" ENTRY("2,0", "0,4") "}", ATTN_ERR_FORMAT, "make 0 bytes"},
    {"{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,4]}}", ATTN_ERR_FORMAT,
     "dtype I64"},
    {"{\"a\":" ENTRY("2", "0,8") ",\"b\":" ENTRY("2", "4,12") "}", ATTN_ERR_FORMAT,
     "'a' and 'b' overlap"},
    {"{\"b\":" ENTRY("4", "0,16") ",\"a\":" ENTRY("1", "8,12") "}", ATTN_ERR_FORMAT, "overlap"},
    {"{\"a\":" ENTRY("2", "0,8") ",\"b\":" ENTRY("2", "0,8") "}", ATTN_ERR_FORMAT, "overlap"},
    {"{\"a\":" ENTRY("0", "4,4") ",\"b\":" ENTRY("2", "0,8") "}", ATTN_ERR_MISSING_TENSOR,
     "in_proj"}, /* an empty tensor overlaps nothing */
    {"{\"a\":" ENTRY("4294967296,4294967296,16", "0,4") "}", ATTN_ERR_OVERFLOW, "size_t"},
    {"{\"a\":" ENTRY("4611686018427387904", "0,4") "}", ATTN_ERR_OVERFLOW, "overflows"},
    {"{\"a\":" ENTRY("18446744073709551616", "0,4") "}", ATTN_ERR_OVERFLOW, "size_t"},
    {"{\"a\":" ENTRY("1", "0,18446744073709551615") "}", ATTN_ERR_TRUNCATED, "past"},
    {"{\"a\":" ENTRY("1", "0,99999999999999999999999") "}", ATTN_ERR_OVERFLOW, "size_t"},
    /* a long non-ASCII name is quoted safely and cut to 64 characters */
    {"{\"\\u0001" X16 X16 X16 X16 X16 "\":" ENTRY("1", "8,4") "}", ATTN_ERR_FORMAT,
     "'?" X16 X16 X16 "xxxxxxxxxxxxxxx...'"},
};

START_TEST(test_bad_header)
{
	const struct bad_header *c = &bad_headers[_i];
	size_t hlen = strlen(c->header);
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len;
	uint8_t *f = header_file(c->header, hlen, 64, &len);
	enum attn_status st = load_bytes(f, len, 2, NULL, &m, &err);

	free(f);
	ck_assert_msg(st == c->status, "case %d <%s>: %s, want %s: %s", _i, c->header,
		      attn_status_str(st), attn_status_str(c->status), err.message);
	ck_assert_msg(strstr(err.message, c->want) != NULL, "case %d <%s>: message '%s' lacks '%s'",
		      _i, c->header, err.message, c->want);
}
END_TEST

/* 100000 nested brackets wherever a value may start: one error, no recursion. */
START_TEST(test_deep_nesting)
{
	static const char *const openers[] = {
	    "{\"a\":", "{\"a\":{\"shape\":", "{\"__metadata__\":{\"a\":", "{\"a\":{\"dtype\":",
	    "{\"__metadata__\":"};
	const size_t depth = 100000;
	char *h = malloc(depth + 64);
	struct attn_model *m = NULL;
	struct attn_error err;

	ck_assert_ptr_nonnull(h);
	for (size_t k = 0; k < sizeof(openers) / sizeof(openers[0]); k++) {
		for (int bracket = 0; bracket < 2; bracket++) {
			size_t n = strlen(openers[k]), len;
			uint8_t *f;
			enum attn_status st;

			memcpy(h, openers[k], n);
			memset(h + n, bracket ? '[' : '{', depth);
			f = header_file(h, n + depth, 0, &len);
			st = load_bytes(f, len, 2, NULL, &m, &err);
			free(f);
			ck_assert_msg(st == ATTN_ERR_FORMAT, "%s + %c: %s", openers[k],
				      bracket ? '[' : '{', attn_status_str(st));
		}
	}
	free(h);
}
END_TEST

START_TEST(test_header_length)
{
	static const uint64_t lengths[] = {UINT64_C(1) << 63, UINT64_MAX, UINT64_C(1) << 32,
					   UINT64_C(11)};
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len;
	uint8_t *f;

	for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
		f = raw_file(lengths[k], "{}        ", 10, NULL, 0, &len);
		ck_assert_fails(load_bytes(f, len, 2, NULL, &m, &err), err, ATTN_ERR_TRUNCATED,
				"does not fit");
		free(f);
	}
	f = raw_file(0, "{}", 2, NULL, 0, &len);
	ck_assert_fails(load_bytes(f, len, 2, NULL, &m, &err), err, ATTN_ERR_FORMAT, "length 0");
	free(f);
	f = raw_file(3, "{}\0", 3, NULL, 0, &len); /* NUL is not padding */
	ck_assert_fails(load_bytes(f, len, 2, NULL, &m, &err), err, ATTN_ERR_FORMAT,
			"after the header");
	free(f);
	for (size_t n = 0; n < 8; n++) {
		ck_assert_fails(
		    load_bytes((const uint8_t *)"\2\0\0\0\0\0\0\0", n, 2, NULL, &m, &err), err,
		    ATTN_ERR_TRUNCATED, "no header length");
	}
	/* a length that stops inside the JSON: the header ends early */
	f = make_file(mha_small, N_MHA, NULL, &len, NULL);
	f[0] = 16;
	f[1] = f[2] = 0;
	ck_assert_int_eq(load_bytes(f, len, 2, NULL, &m, &err), ATTN_ERR_FORMAT);
	free(f);
}
END_TEST

START_TEST(test_dtype)
{
	static const char *const bad[] = {"I64", "F64", "U8", "BOOL", "F8_E4M3", "F4", "f32"};
	struct tspec s[N_MHA];
	struct attn_model *m = NULL;
	struct attn_error err;

	memcpy(s, mha_small, sizeof(s));
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		for (size_t t = 0; t < N_MHA; t++) {
			s[t].dtype = bad[k];
			ck_assert_fails(load_specs(s, N_MHA, 2, NULL, &m, &err), err,
					ATTN_ERR_DTYPE, mha_small[t].name);
			ck_assert_ptr_nonnull(strstr(err.message, bad[k]));
			ck_assert_str_eq(err.field, mha_small[t].name);
			s[t].dtype = "F32";
		}
	}
}
END_TEST

START_TEST(test_missing)
{
	struct tspec s[N_LLAMA];
	struct attn_model *m = NULL;
	struct attn_error err;

	/* MHA: every required tensor in turn */
	ck_assert_fails(load_specs(mha_small + 1, N_MHA - 1, 2, NULL, &m, &err), err,
			ATTN_ERR_MISSING_TENSOR, "'in_proj_weight' or 'q_proj.weight'");
	memcpy(s, mha_small, sizeof(mha_small));
	s[2] = mha_small[3];
	ck_assert_fails(load_specs(s, N_MHA - 1, 2, NULL, &m, &err), err, ATTN_ERR_MISSING_TENSOR,
			"missing tensor 'out_proj.weight'");
	ck_assert_str_eq(err.field, "out_proj.weight");
	/* Llama: q, k, v, o each dropped (the file order has them first) */
	for (size_t drop = 1; drop < 4; drop++) {
		size_t n = 0;

		for (size_t t = 0; t < N_LLAMA; t++)
			if (t != drop)
				s[n++] = llama_small[t];
		ck_assert_fails(load_specs(s, n, 4, NULL, &m, &err), err, ATTN_ERR_MISSING_TENSOR,
				llama_small[drop].name);
	}
	ck_assert_fails(load_specs(llama_small + 1, N_LLAMA - 1, 4, NULL, &m, &err), err,
			ATTN_ERR_MISSING_TENSOR, "q_proj.weight");
}
END_TEST

/* One spec's shape changed; the load must fail with st naming the tensor. */
static void ck_assert_reshaped(const struct tspec *base, size_t n, size_t H, size_t which,
			       size_t rank, size_t d0, size_t d1, enum attn_status st,
			       const char *want)
{
	struct tspec s[N_LLAMA];
	struct attn_model *m = NULL;
	struct attn_error err;

	memcpy(s, base, n * sizeof(*s));
	s[which].rank = rank;
	s[which].dims[0] = d0;
	s[which].dims[1] = d1;
	s[which].dims[2] = 2;
	ck_assert_fails(load_specs(s, n, H, NULL, &m, &err), err, st, want);
}

START_TEST(test_shapes)
{
	ck_assert_reshaped(mha_small, N_MHA, 2, 2, 2, 4, 3, ATTN_ERR_SHAPE_MISMATCH,
			   "'out_proj.weight' should have shape [4, 4]");
	ck_assert_reshaped(mha_small, N_MHA, 2, 0, 2, 11, 4, ATTN_ERR_SHAPE_MISMATCH,
			   "'in_proj_weight' should have shape [12, 4]");
	ck_assert_reshaped(mha_small, N_MHA, 2, 0, 2, 4, 4, ATTN_ERR_SHAPE_MISMATCH,
			   "in_proj_weight");
	ck_assert_reshaped(mha_small, N_MHA, 2, 0, 3, 12, 4, ATTN_ERR_SHAPE_MISMATCH,
			   "'in_proj_weight' must be a non-empty matrix, has rank 3");
	ck_assert_reshaped(mha_small, N_MHA, 2, 0, 2, 0, 4, ATTN_ERR_SHAPE_MISMATCH, "non-empty");
	ck_assert_reshaped(mha_small, N_MHA, 2, 0, 1, 48, 0, ATTN_ERR_SHAPE_MISMATCH, "rank 1");
	ck_assert_reshaped(mha_small, N_MHA, 2, 1, 1, 11, 0, ATTN_ERR_SHAPE_MISMATCH,
			   "'in_proj_bias' should have shape [12]");
	ck_assert_reshaped(mha_small, N_MHA, 2, 1, 2, 12, 1, ATTN_ERR_SHAPE_MISMATCH,
			   "in_proj_bias");
	ck_assert_reshaped(mha_small, N_MHA, 2, 3, 1, 5, 0, ATTN_ERR_SHAPE_MISMATCH,
			   "out_proj.bias");
	/* E = 4 with 3 heads */
	ck_assert_reshaped(mha_small, N_MHA, 3, 3, 1, 4, 0, ATTN_ERR_HEADS,
			   "E = 4, not divisible by num_heads 3");
	/* Llama, E = 8, H = 4, D = 2: k rows 3 are not whole heads, 6 are 3 kv
	 * heads (not dividing 4), 16 are 8 kv heads */
	ck_assert_reshaped(llama_small, N_LLAMA, 4, 1, 2, 3, 8, ATTN_ERR_KV_HEADS,
			   "'k_proj.weight' has 3 rows");
	ck_assert_reshaped(llama_small, N_LLAMA, 4, 1, 2, 6, 8, ATTN_ERR_KV_HEADS, "k_proj.weight");
	ck_assert_reshaped(llama_small, N_LLAMA, 4, 1, 2, 16, 8, ATTN_ERR_KV_HEADS,
			   "k_proj.weight");
	ck_assert_reshaped(llama_small, N_LLAMA, 4, 1, 2, 4, 7, ATTN_ERR_SHAPE_MISMATCH,
			   "'k_proj.weight' should have shape [4, 8]");
	ck_assert_reshaped(llama_small, N_LLAMA, 4, 2, 2, 8, 8, ATTN_ERR_SHAPE_MISMATCH,
			   "'v_proj.weight' should have shape [4, 8]");
	ck_assert_reshaped(llama_small, N_LLAMA, 4, 0, 2, 4, 8, ATTN_ERR_SHAPE_MISMATCH,
			   "'q_proj.weight' should have shape [8, 8]");
	ck_assert_reshaped(llama_small, N_LLAMA, 4, 3, 2, 8, 4, ATTN_ERR_SHAPE_MISMATCH,
			   "o_proj.weight");
	ck_assert_reshaped(llama_small, N_LLAMA, 4, 5, 1, 8, 0, ATTN_ERR_SHAPE_MISMATCH,
			   "'k_proj.bias' should have shape [4]");
	ck_assert_reshaped(llama_small, N_LLAMA, 4, 7, 2, 5, 7, ATTN_ERR_SHAPE_MISMATCH,
			   "'embed_tokens.weight' should have shape [5, 8]");
	ck_assert_reshaped(llama_small, N_LLAMA, 4, 7, 2, 0, 8, ATTN_ERR_SHAPE_MISMATCH,
			   "embed_tokens.weight");
	ck_assert_reshaped(llama_small, N_LLAMA, 4, 7, 1, 40, 0, ATTN_ERR_SHAPE_MISMATCH,
			   "embed_tokens.weight");
}
END_TEST

START_TEST(test_ambiguous)
{
	struct tspec s[N_MHA + 1];
	struct attn_model *m = NULL;
	struct attn_error err;

	memcpy(s, mha_small, sizeof(mha_small));
	s[N_MHA] = llama_small[0];
	ck_assert_fails(load_specs(s, N_MHA + 1, 2, NULL, &m, &err), err, ATTN_ERR_FORMAT,
			"ambiguous");
}
END_TEST

/* A non-finite element, written over tensor t's element i in a valid file. */
static void ck_assert_nonfinite(const struct tspec *base, size_t n, size_t H, const char *dtype,
				size_t t, size_t i, uint32_t bits)
{
	struct tspec s[N_LLAMA];
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len, offs[N_LLAMA], es = dtype_size(dtype);
	uint8_t *f;
	enum attn_status st;

	memcpy(s, base, n * sizeof(*s));
	for (size_t k = 0; k < n; k++)
		s[k].dtype = dtype;
	f = make_file(s, n, NULL, &len, offs);
	for (size_t k = 0; k < es; k++)
		f[offs[t] + i * es + k] = (uint8_t)(bits >> (8 * k));
	st = load_bytes(f, len, H, NULL, &m, &err);
	free(f);
	ck_assert_fails(st, err, ATTN_ERR_NONFINITE, base[t].name);
	ck_assert_uint_eq(err.index, i);
	ck_assert_str_eq(err.field, base[t].name);
}

START_TEST(test_nonfinite)
{
	ck_assert_nonfinite(mha_small, N_MHA, 2, "F32", 0, 5, 0x7fc00000u);  /* NaN */
	ck_assert_nonfinite(mha_small, N_MHA, 2, "F32", 0, 47, 0xff800000u); /* -Inf, last */
	ck_assert_nonfinite(mha_small, N_MHA, 2, "F32", 1, 0, 0x7f800000u);
	ck_assert_nonfinite(mha_small, N_MHA, 2, "F16", 3, 2, 0x7c00u);
	ck_assert_nonfinite(mha_small, N_MHA, 2, "F16", 2, 9, 0xfe00u);
	ck_assert_nonfinite(llama_small, N_LLAMA, 4, "BF16", 1, 7, 0xff80u);
	ck_assert_nonfinite(llama_small, N_LLAMA, 4, "BF16", 6, 3, 0x7fc1u);
	ck_assert_nonfinite(llama_small, N_LLAMA, 4, "F32", 7, 39, 0x7f800001u);
}
END_TEST

/* ---- fixtures ---------------------------------------------------------- */

static const char *const fixture_names[] = {
    "mha_f32", "mha_f16", "mha_bf16", "llama_gqa_f32", "qwen_prefixed_bf16",
};

/* The first failure of one fixture, asserted after everything is freed. */
struct verdict {
	int failed;
	char msg[512];
};

static void note_fail(struct verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note_fail(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->failed)
		return;
	v->failed = 1;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
	va_end(ap);
}

static void fixture_path(char *out, size_t cap, const char *name, const char *ext)
{
	const char *dir = getenv("ATTN_FIXTURES");

	snprintf(out, cap, "%s/safetensors/%s%s", dir != NULL && dir[0] ? dir : "tests/fixtures",
		 name, ext);
}

/* The whole file, malloc'd at its exact length, or NULL. */
static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (fp == NULL)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) > 0 && fseek(fp, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n);
		if (buf != NULL && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(fp);
	return buf;
}

/* The numbers of a nested JSON array appended to out[*n, cap); -1 on a mismatch. */
static int flatten(json_t *a, float *out, size_t cap, size_t *n)
{
	size_t i;
	json_t *v;

	if (json_is_number(a)) {
		if (*n >= cap)
			return -1;
		out[(*n)++] = (float)json_number_value(a);
		return 0;
	}
	if (!json_is_array(a))
		return -1;
	json_array_foreach(a, i, v)
	{
		if (flatten(v, out, cap, n) != 0)
			return -1;
	}
	return 0;
}

/* A JSON array of exactly n numbers (nested any way) as floats, or NULL. */
static float *json_floats(json_t *a, size_t n)
{
	float *x = malloc((n ? n : 1) * sizeof(float));
	size_t got = 0;

	if (x != NULL && (flatten(a, x, n, &got) != 0 || got != n)) {
		free(x);
		x = NULL;
	}
	return x;
}

/* Where a fixture tensor (name without prefix) lives in the model, and its size. */
static const float *model_tensor(const struct attn_model *m, const char *name, size_t *n)
{
	size_t E = m->E, qd = m->H * m->D, kvd = m->Hkv * m->D, rows = qd + 2 * kvd;
	const struct {
		const char *name;
		const float *at;
		size_t n;
	} map[] = {
	    {"in_proj_weight", m->w_qkv, rows * E},
	    {"in_proj_bias", m->b_qkv, rows},
	    {"out_proj.weight", m->w_o, E * qd},
	    {"out_proj.bias", m->b_o, E},
	    {"q_proj.weight", m->w_qkv, qd * E},
	    {"k_proj.weight", m->w_qkv + qd * E, kvd * E},
	    {"v_proj.weight", m->w_qkv + (qd + kvd) * E, kvd * E},
	    {"o_proj.weight", m->w_o, E * qd},
	    {"q_proj.bias", m->b_qkv, qd},
	    {"k_proj.bias", m->b_qkv ? m->b_qkv + qd : NULL, kvd},
	    {"v_proj.bias", m->b_qkv ? m->b_qkv + qd + kvd : NULL, kvd},
	    {"o_proj.bias", m->b_o, E},
	    {"embed_tokens.weight", m->embed, m->vocab * E},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (strcmp(map[i].name, name) == 0) {
			*n = map[i].n;
			return map[i].at;
		}
	}
	return NULL;
}

static void check_config(struct verdict *v, const char *fx, json_t *doc, const struct attn_model *m)
{
	json_int_t hkv = json_integer_value(json_object_get(doc, "num_kv_heads"));
	json_int_t E = json_integer_value(json_object_get(doc, "embed_dim"));
	json_int_t vocab = json_integer_value(json_object_get(doc, "vocab"));
	int bias = json_is_true(json_object_get(doc, "bias"));

	if ((json_int_t)m->E != E || (json_int_t)m->Hkv != hkv || (json_int_t)m->vocab != vocab ||
	    (m->b_qkv != NULL) != bias || (m->b_o != NULL) != bias ||
	    m->source != ATTN_SOURCE_SAFETENSORS)
		note_fail(v, "%s: model E %zu Hkv %zu vocab %zu bias %d, want %lld %lld %lld %d",
			  fx, m->E, m->Hkv, m->vocab, m->b_qkv != NULL, (long long)E,
			  (long long)hkv, (long long)vocab, bias);
}

/* Every tensor of the JSON equals the model's copy exactly; an absent o bias is 0. */
static void check_tensors(struct verdict *v, const char *fx, json_t *tensors,
			  const struct attn_model *m)
{
	const char *name;
	json_t *values;
	int has_o_bias = 0;

	json_object_foreach(tensors, name, values)
	{
		size_t n = 0;
		const float *at = model_tensor(m, name, &n);
		float *want = at != NULL ? json_floats(values, n) : NULL;

		has_o_bias |=
		    strcmp(name, "out_proj.bias") == 0 || strcmp(name, "o_proj.bias") == 0;
		if (want == NULL) {
			note_fail(v, "%s: tensor %s absent from the model or of the wrong size", fx,
				  name);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			if (at[i] != want[i]) {
				note_fail(v, "%s: %s[%zu] = %a, want %a", fx, name, i, at[i],
					  want[i]);
				break;
			}
		}
		free(want);
	}
	for (size_t i = 0; m->b_o != NULL && !has_o_bias && i < m->E; i++)
		if (m->b_o[i] != 0.0f)
			note_fail(v, "%s: b_o[%zu] = %g, want 0 (no o bias in the file)", fx, i,
				  m->b_o[i]);
}

static void compare(struct verdict *v, const char *fx, const char *what, const float *got,
		    const float *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - (double)want[i]);

		if (!(d <= TOL_ABS + TOL_REL * fabs((double)want[i]))) {
			note_fail(v, "%s: %s[%zu] = %.9g, want %.9g", fx, what, i, got[i], want[i]);
			return;
		}
	}
}

/* attn_mha_forward and the naive twin on the fixture's input. */
static void check_forward(struct verdict *v, const char *fx, json_t *doc,
			  const struct attn_model *m)
{
	json_t *input = json_object_get(doc, "input");
	size_t B = json_array_size(input), L = json_array_size(json_array_get(input, 0));
	size_t nx = B * L * m->E, nw = B * m->H * L * L, ws_bytes = 0;
	float *x = json_floats(input, nx);
	float *want_out = json_floats(json_object_get(doc, "output"), nx);
	float *want_w = json_floats(json_object_get(doc, "weights"), nw);
	float *out = calloc(nx, sizeof(float)), *w = calloc(nw, sizeof(float));
	struct attn_mha req = {.model = m,
			       .B = B,
			       .Lq = L,
			       .Lk = L,
			       .query = x,
			       .out = out,
			       .weights_mode = ATTN_WEIGHTS_PER_HEAD,
			       .weights = w};
	struct attn_error err = {0};
	void *ws = NULL;

	if (B == 0 || L == 0 || !x || !want_out || !want_w || !out || !w) {
		note_fail(v, "%s: input, output or weights malformed in the JSON", fx);
		goto out;
	}
	if (attn_mha_workspace(&req, &ws_bytes, &err) != ATTN_OK ||
	    (ws = malloc(ws_bytes ? ws_bytes : 1)) == NULL ||
	    attn_mha_forward(&req, ws, ws_bytes, &err) != ATTN_OK) {
		note_fail(v, "%s: attn_mha_forward failed: %s", fx, err.message);
		goto out;
	}
	compare(v, fx, "output", out, want_out, nx);
	compare(v, fx, "weights", w, want_w, nw);
	memset(out, 0, nx * sizeof(float));
	memset(w, 0, nw * sizeof(float));
	if (attn_mha_forward_ref(&req, &err) != ATTN_OK) {
		note_fail(v, "%s: attn_mha_forward_ref failed: %s", fx, err.message);
		goto out;
	}
	compare(v, fx, "ref output", out, want_out, nx);
	compare(v, fx, "ref weights", w, want_w, nw);
out:
	free(ws);
	free(x);
	free(want_out);
	free(want_w);
	free(out);
	free(w);
}

START_TEST(test_fixture)
{
	const char *fx = fixture_names[_i];
	struct verdict v = {0};
	struct attn_model *m = NULL;
	struct attn_error err = {0};
	struct attn_safetensors_options opts = {0};
	char path[1024];
	json_error_t jerr;
	json_t *doc;
	uint8_t *buf = NULL;
	size_t len = 0;

	fixture_path(path, sizeof(path), fx, ".json");
	doc = json_load_file(path, 0, &jerr);
	ck_assert_msg(doc != NULL, "%s: %s (line %d)", path, jerr.text, jerr.line);
	fixture_path(path, sizeof(path), fx, ".safetensors");
	buf = read_file(path, &len);
	if (buf == NULL) {
		note_fail(&v, "%s: cannot read", path);
		goto out;
	}
	opts.num_heads = (size_t)json_integer_value(json_object_get(doc, "num_heads"));
	opts.prefix = json_string_value(json_object_get(doc, "prefix"));
	if (attn_model_from_safetensors(&m, buf, len, &opts, &err) != ATTN_OK) {
		note_fail(&v, "%s: load failed: %s", fx, err.message);
		goto out;
	}
	check_config(&v, fx, doc, m);
	check_tensors(&v, fx, json_object_get(doc, "tensors"), m);
	if (!v.failed)
		check_forward(&v, fx, doc, m);
out:
	attn_model_free(m);
	free(buf);
	json_decref(doc);
	ck_assert_msg(!v.failed, "%s", v.msg);
}
END_TEST

/* Every proper prefix of a real file fails as TRUNCATED. */
START_TEST(test_fixture_truncated)
{
	const char *fx = fixture_names[_i];
	struct attn_model *m = NULL;
	struct attn_error err;
	char path[1024];
	size_t len = 0;
	uint8_t *buf;
	const size_t H = 4;

	fixture_path(path, sizeof(path), fx, ".safetensors");
	buf = read_file(path, &len);
	ck_assert_msg(buf != NULL, "%s: cannot read", path);
	for (size_t cut = 0; cut < len; cut++) {
		enum attn_status st = load_bytes(buf, cut, H, NULL, &m, &err);

		if (st != ATTN_ERR_TRUNCATED) {
			free(buf);
			ck_abort_msg("%s cut at %zu: %s", fx, cut, attn_status_str(st));
		}
	}
	free(buf);
}
END_TEST

static Suite *safetensors_suite(void)
{
	Suite *s = suite_create("safetensors");
	TCase *convert = tcase_create("convert");
	TCase *load = tcase_create("load");
	TCase *bad = tcase_create("malformed");
	TCase *fix = tcase_create("fixtures");
	const int nfix = (int)(sizeof(fixture_names) / sizeof(fixture_names[0]));

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
	tcase_add_test(bad, test_truncated_everywhere);
	tcase_add_test(bad, test_mutated_header);
	tcase_add_loop_test(bad, test_bad_header, 0,
			    (int)(sizeof(bad_headers) / sizeof(bad_headers[0])));
	tcase_add_test(bad, test_deep_nesting);
	tcase_add_test(bad, test_header_length);
	tcase_add_test(bad, test_dtype);
	tcase_add_test(bad, test_missing);
	tcase_add_test(bad, test_shapes);
	tcase_add_test(bad, test_ambiguous);
	tcase_add_test(bad, test_nonfinite);
	suite_add_tcase(s, bad);

	tcase_set_timeout(fix, 120);
	tcase_add_loop_test(fix, test_fixture, 0, nfix);
	tcase_add_loop_test(fix, test_fixture_truncated, 0, nfix);
	suite_add_tcase(s, fix);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(safetensors_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
