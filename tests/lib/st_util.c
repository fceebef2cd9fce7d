/*
 * st_util.c: safetensors files built in C for the check_safetensors_* suites
 * (see st_util.h).
 */
#include "st_util.h"

#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const struct st_spec st_mha_small[ST_N_MHA] = {
    {"in_proj_weight", "F32", 2, {12, 4}},
    {"in_proj_bias", "F32", 1, {12}},
    {"out_proj.weight", "F32", 2, {4, 4}},
    {"out_proj.bias", "F32", 1, {4}},
};

const struct st_spec st_llama_small[ST_N_LLAMA] = {
    {"q_proj.weight", "F32", 2, {8, 8}}, {"k_proj.weight", "F32", 2, {4, 8}},
    {"v_proj.weight", "F32", 2, {4, 8}}, {"o_proj.weight", "F32", 2, {8, 8}},
    {"q_proj.bias", "F32", 1, {8}},	 {"k_proj.bias", "F32", 1, {4}},
    {"v_proj.bias", "F32", 1, {4}},	 {"embed_tokens.weight", "F32", 2, {5, 8}},
};

size_t st_dtype_size(const char *dtype)
{
	if (strcmp(dtype, "F32") == 0)
		return 4;
	if (strcmp(dtype, "F16") == 0 || strcmp(dtype, "BF16") == 0)
		return 2;
	if (strcmp(dtype, "I64") == 0 || strcmp(dtype, "F64") == 0)
		return 8;
	return 1; /* anything else: one byte per element, any content */
}

float st_tvalue(size_t t, size_t i)
{
	return (float)((int)((i * 5 + t * 3) % 17) - 8) * 0.125f;
}

/* Half bits of v; exact for zero and normal halves (all st_tvalue()s). */
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
		memset(p, 0, st_dtype_size(dtype));
	}
}

static size_t numel(const struct st_spec *s)
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

uint8_t *st_raw_file(uint64_t header_len, const char *header, size_t hlen, const uint8_t *data,
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

uint8_t *st_header_file(const char *header, size_t hlen, size_t dlen, size_t *len)
{
	uint8_t *zeros = calloc(dlen ? dlen : 1, 1);
	uint8_t *f;

	ck_assert_ptr_nonnull(zeros);
	f = st_raw_file(hlen, header, hlen, zeros, dlen, len);
	free(zeros);
	return f;
}

uint8_t *st_make_file(const struct st_spec *s, size_t n, const char *extra, size_t *len,
		      size_t *offs)
{
	char header[4096];
	uint8_t *data, *f;
	size_t at = 0, dlen = 0, pos = 0, bytes;

	for (size_t t = 0; t < n; t++)
		dlen += numel(&s[t]) * st_dtype_size(s[t].dtype);
	data = calloc(dlen ? dlen : 1, 1);
	ck_assert_ptr_nonnull(data);
	appendf(header, sizeof(header), &at, "{");
	for (size_t t = 0; t < n; t++) {
		bytes = numel(&s[t]) * st_dtype_size(s[t].dtype);
		appendf(header, sizeof(header), &at, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[",
			t ? "," : "", s[t].name, s[t].dtype);
		for (size_t d = 0; d < s[t].rank; d++)
			appendf(header, sizeof(header), &at, "%s%zu", d ? "," : "", s[t].dims[d]);
		appendf(header, sizeof(header), &at, "],\"data_offsets\":[%zu,%zu]}", pos,
			pos + bytes);
		for (size_t i = 0; i < numel(&s[t]); i++)
			put_value(data + pos + i * st_dtype_size(s[t].dtype), s[t].dtype,
				  st_tvalue(t, i));
		pos += bytes;
	}
	if (extra != NULL)
		appendf(header, sizeof(header), &at, "%s%s", n ? "," : "", extra);
	appendf(header, sizeof(header), &at, "}");
	while (at % 8 != 0)
		appendf(header, sizeof(header), &at, " ");
	f = st_raw_file(at, header, at, data, dlen, len);
	free(data);
	if (offs != NULL) {
		pos = 8 + at;
		for (size_t t = 0; t < n; t++) {
			offs[t] = pos;
			pos += numel(&s[t]) * st_dtype_size(s[t].dtype);
		}
	}
	return f;
}

enum attn_status st_load_opts(const uint8_t *file, size_t len,
			      const struct attn_safetensors_options *opts, struct attn_model **m,
			      struct attn_error *err)
{
	uint8_t *copy = malloc(len ? len : 1);
	enum attn_status st;

	ck_assert_ptr_nonnull(copy);
	if (len != 0)
		memcpy(copy, file, len);
	memset(err, 0, sizeof(*err));
	st = attn_model_from_safetensors(m, copy, len, opts, err);
	free(copy);
	if (st != ATTN_OK) {
		ck_assert_ptr_null(*m);
		ck_assert_int_eq(err->status, st);
		ck_assert(err->message[0] != '\0');
	}
	return st;
}

enum attn_status st_load_bytes(const uint8_t *file, size_t len, size_t H, const char *prefix,
			       struct attn_model **m, struct attn_error *err)
{
	struct attn_safetensors_options opts = {.num_heads = H, .prefix = prefix};

	return st_load_opts(file, len, &opts, m, err);
}

enum attn_status st_load_specs(const struct st_spec *s, size_t n, size_t H, const char *prefix,
			       struct attn_model **m, struct attn_error *err)
{
	size_t len;
	uint8_t *f = st_make_file(s, n, NULL, &len, NULL);
	enum attn_status st = st_load_bytes(f, len, H, prefix, m, err);

	free(f);
	return st;
}
