/*
 * check_pool_base64.c: base64 tensors read through the pool (fastjson.h)
 * mean exactly what they mean read through jansson.
 *
 *   pooled   a tensor object's base64 string under a field is pooled (one
 *            row, the copy shorter) for every padding ("", "=", "=="), in
 *            either key order, with blanks; placeholders of base64 strings
 *            are not rows of numbers (fastjson_row) and the reverse
 *   same     a table of bodies read with and without the pool, each with
 *            every reader flag (none, NONFINITE, NEG_INF, BOOL, INTEGER):
 *            identical tensors, or identical errors (code, pointer,
 *            message): truncated strings, bad characters at the start, the
 *            middle and the end, '=' misplaced, nonzero padding bits, byte
 *            counts that are no whole float32 count, shapes that do not
 *            match, a shape too large, escapes (\/, \u0041, \n) that jansson
 *            reads as base64 or not, non-string values, NaN and infinities
 *            among the values, a forged placeholder, short strings, the
 *            object under no field or inside an array
 *   answers  whole answers of a service with the pool and one without are
 *            identical: /v1/attention with base64 embeddings, key and value
 *            (weights and base64 answers), /v1/sdpa with base64 q, k, v, and
 *            thousands of random mutations of a base64 body
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/fastjson.h"
#include "api/json/json_read.h"
#include "api/json/json_tensor.h"
#include "api/service.h"
#include "common/base64.h"
#include "common/buf.h"
#include "engine/prng.h"
#include "tests/lib/light.h"
#include "tests/lib/pool_twins.h"
#include "tests/lib/suite_main.h"

static struct pool_twins twins; /* pooled and plain services */

/* reproducible test data: the engine's generator (engine/prng.h) */
static struct attn_prng rng_g = {0x2545f4914f6cdd1dULL};

static uint64_t rng(void)
{
	return attn_prng_next(&rng_g);
}

static void setup(void)
{
	pool_twins_start(&twins);
}

static void teardown(void)
{
	pool_twins_stop(&twins);
}

/* ---- building bodies ----------------------------------------------------- */

/* The base64 text (malloc'd, NUL-terminated) of n little-endian float32
 * values: small numbers, or `bits` words at random when bits is nonzero. */
static char *floats_b64(size_t n, int bits)
{
	float *x = malloc(n * sizeof(float) + 1);
	char *text = malloc(base64_encoded_len(n * sizeof(float)) + 1);

	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(text);
	for (size_t k = 0; k < n; k++) {
		uint32_t u = (uint32_t)(rng() >> 32);

		if (bits)
			memcpy(&x[k], &u, 4);
		else
			x[k] = (float)(sin((double)k * 0.37) * 0.5);
	}
	base64_encode_f32le(text, x, n);
	text[base64_encoded_len(n * sizeof(float))] = '\0';
	free(x);
	return text;
}

/* ---- comparing ------------------------------------------------------------- */

static const unsigned all_flags[] = {0, API_T_NONFINITE, API_T_NEG_INF, API_T_BOOL,
				     API_T_INTEGER};

/* same_tensor with every flag; returns the rows pooled (the same each time). */
static size_t same_every_flag(const char *body)
{
	size_t rows = pool_same_tensor(body, "/x", 0);

	for (size_t f = 1; f < sizeof all_flags / sizeof all_flags[0]; f++)
		ck_assert_uint_eq(pool_same_tensor(body, "/x", all_flags[f]), rows);
	return rows;
}

/* ---- pooled ------------------------------------------------------------------ */

/* n floats, 4 n bytes: 4 n mod 3 = 0, 1, 2 are no padding, "==", "=". */
START_TEST(test_pooled_paddings)
{
	static const size_t counts[] = {96, 97, 98, 1000, 1001, 1002};
	struct buf b;

	buf_init(&b, 1 << 20);
	for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
		char *text = floats_b64(counts[c], c % 2);

		buf_reset(&b);
		buf_printf(&b, "{\"x\":{\"shape\":[%zu],\"base64\":\"%s\"}}", counts[c], text);
		ck_assert_uint_eq(same_every_flag(b.data), 1);
		buf_reset(&b); /* base64 first, blanks around, rank 2 */
		buf_printf(&b, "{ \"x\" : {\n \"base64\" :\t\"%s\" ,\r\n \"shape\":[1, %zu] } }",
			   text, counts[c]);
		ck_assert_uint_eq(same_every_flag(b.data), 1);
		free(text);
	}
	buf_release(&b);
}
END_TEST

/* A base64 placeholder is no row of numbers, and a row's is no base64 string. */
START_TEST(test_pooled_kinds)
{
	const char *const fields[] = {"/x", "/y", NULL};
	struct fastjson_pool pool = {0};
	struct buf b;
	char *text = floats_b64(64, 0), *copy;
	json_t *root, *b64, *row;
	size_t len;

	buf_init(&b, 1 << 20);
	buf_printf(&b, "{\"x\":{\"shape\":[64],\"base64\":\"%s\"},\"y\":[[", text);
	for (int i = 0; i < 64; i++)
		buf_printf(&b, "%s%d", i ? "," : "", i);
	buf_puts(&b, "]]}");
	copy = fastjson_scan(b.data, b.len, fields, &pool, &len);
	ck_assert_ptr_nonnull(copy);
	ck_assert_uint_eq(pool.n_rows, 2);
	root = json_loadb(copy, len, 0, NULL);
	ck_assert_ptr_nonnull(root);
	b64 = json_object_get(json_object_get(root, "x"), "base64");
	row = json_array_get(json_object_get(root, "y"), 0);
	ck_assert_ptr_nonnull(fastjson_base64(&pool, b64));
	ck_assert_ptr_null(fastjson_row(&pool, b64));
	ck_assert_ptr_nonnull(fastjson_row(&pool, row));
	ck_assert_ptr_null(fastjson_base64(&pool, row));
	ck_assert_uint_eq(fastjson_base64(&pool, b64)->count, 64);
	ck_assert_uint_eq(fastjson_base64(&pool, b64)->base64_len, strlen(text));
	json_decref(root);
	free(copy);
	fastjson_pool_release(&pool);
	buf_release(&b);
	free(text);
}
END_TEST

/* ---- same ------------------------------------------------------------------- */

/*
 * {"x": {"shape": <shape>, "base64": <string>}} for n floats' text: the
 * string's %s is the text with `cut` characters removed from its end; a
 * string without %s is the value as it stands.
 */
struct edit {
	const char *shape;  /* the shape's text; N for n */
	const char *string; /* the member's value; %s for the text, quotes around it */
	size_t cut;	    /* characters off the end of the text */
	const char *what;
};

static const struct edit edits[] = {
    {"[N]", "\"%s\"", 0, "valid"},
    {"[2,N]", "\"%s\"", 0, "a shape with more elements"},
    {"[N,1]", "\"%s\"", 0, "rank 2"},
    {"[1048576,2048]", "\"%s\"", 0, "too large"},
    {"[N]", "\"%s\"", 1, "one character short"},
    {"[N]", "\"%s\"", 2, "two short"},
    {"[N]", "\"%s\"", 4, "a quantum short"},
    {"[N]", "\"%sAAAA\"", 0, "a quantum more"},
    {"[N]", "\"%sA\"", 0, "a character more"},
    {"[N]", "\"!%s\"", 1, "a bad first character"},
    {"[N]", "\"%s!\"", 1, "a bad last character"},
    {"[N]", "\"%s\\n\"", 1, "an escaped newline"},
    {"[N]", "\"%s\\/\"", 1, "an escaped '/', base64 to jansson"},
    {"[N]", "\"\\u0041%s\"", 1, "an escaped 'A'"},
    {"[N]", "\"%s\\\"\"", 1, "an escaped quote"},
    {"[N]", "\"%s=\"", 1, "padding where data belongs"},
    {"[N]", "\"%s==\"", 2, "two pads"},
    {"[N]", "\"%s\xc3\xa9\"", 2, "UTF-8 in the string"},
    {"[N]", "\"%s\x01\"", 1, "a control character"},
    {"[N]", "null", 0, "null"},
    {"[N]", "12", 0, "a number"},
    {"[N]", "[\"%s\"]", 0, "an array"},
    {"[N]", "{\"\\u0001\":0}", 0, "a forged placeholder"},
    {"[N]", "\"AAAA\"", 0, "a short string"},
};

/* The body of edit e for the base64 text of n floats. */
static void edit_body(struct buf *b, const struct edit *e, const char *text, size_t n)
{
	const char *at_n = strchr(e->shape, 'N');
	char shape[64], *value;
	size_t len = strlen(text) - e->cut;
	struct buf v;

	if (at_n != NULL)
		snprintf(shape, sizeof shape, "%.*s%zu%s", (int)(at_n - e->shape), e->shape, n,
			 at_n + 1);
	else
		snprintf(shape, sizeof shape, "%s", e->shape);
	buf_init(&v, 16 << 20);
	if (strstr(e->string, "%s") != NULL) {
		const char *at = strstr(e->string, "%s");

		buf_printf(&v, "%.*s%.*s%s", (int)(at - e->string), e->string, (int)len, text,
			   at + 2);
	} else {
		buf_puts(&v, e->string);
	}
	value = v.data;
	buf_reset(b);
	buf_printf(b, "{\"x\":{\"shape\":%s,\"base64\":%s}}", shape, value);
	buf_release(&v);
}

START_TEST(test_same_edits)
{
	static const size_t counts[] = {96, 97, 98, 3000};
	struct buf b;

	buf_init(&b, 16 << 20);
	for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
		char *text = floats_b64(counts[c], 0);

		for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
			size_t rows;

			edit_body(&b, &edits[e], text, counts[c]);
			rows = same_every_flag(b.data);
			if (e == 0)
				ck_assert_uint_eq(rows, 1); /* valid: pooled */
		}
		free(text);
	}
	buf_release(&b);
}
END_TEST

/* Bad characters and bytes at every place, in every padding case. */
START_TEST(test_same_bad_bytes)
{
	static const char bad[] = "=!\\\"-_ \x7f";
	struct buf b;

	buf_init(&b, 1 << 20);
	for (size_t n = 96; n < 99; n++) {
		char *text = floats_b64(n, 1);
		size_t len = strlen(text);

		for (size_t at = 0; at < len; at += 1 + at / 8) {
			for (size_t k = 0; k < sizeof bad - 1; k++) {
				char saved = text[at];

				text[at] = bad[k];
				buf_reset(&b);
				buf_printf(&b, "{\"x\":{\"shape\":[%zu],\"base64\":\"%s\"}}", n, text);
				same_every_flag(b.data);
				text[at] = saved;
			}
		}
		free(text);
	}
	buf_release(&b);
}
END_TEST

/* Non-finite values read under each flag: the same element named. */
START_TEST(test_same_nonfinite)
{
	const float specials[] = {NAN, INFINITY, -INFINITY};
	float x[128];
	char text[1024];
	struct buf b;

	buf_init(&b, 1 << 20);
	for (size_t s = 0; s < 3; s++) {
		for (size_t at = 0; at < 128; at += 37) {
			for (size_t k = 0; k < 128; k++)
				x[k] = (float)k * 0.25f;
			x[at] = specials[s];
			base64_encode_f32le(text, x, 128);
			text[base64_encoded_len(sizeof x)] = '\0';
			buf_reset(&b);
			buf_printf(&b, "{\"x\":{\"shape\":[4,32],\"base64\":\"%s\"}}", text);
			ck_assert_uint_eq(same_every_flag(b.data), 1);
		}
	}
	buf_release(&b);
}
END_TEST

/* Objects that are not a field's tensor object stay with jansson. */
START_TEST(test_same_not_pooled)
{
	char *text = floats_b64(100, 0);
	struct buf b;

	buf_init(&b, 1 << 20);
	buf_printf(&b, "{\"x\":[{\"shape\":[100],\"base64\":\"%s\"}]}", text); /* in an array */
	ck_assert_uint_eq(same_every_flag(b.data), 0);
	buf_reset(&b);
	buf_printf(&b, "{\"y\":{\"shape\":[100],\"base64\":\"%s\"}}", text); /* no field */
	ck_assert_uint_eq(same_every_flag(b.data), 0);
	buf_reset(&b);
	buf_printf(&b, "{\"x\":{\"shape\":[100],\"base\\u0036\\u0034\":\"%s\"}}", text);
	ck_assert_uint_eq(same_every_flag(b.data), 0); /* an escaped key */
	buf_reset(&b);
	buf_printf(&b, "{\"x\":{\"shape\":[100],\"base64\":\"%s\",\"base64\":\"%s\"}}", text,
		   text);
	same_every_flag(b.data); /* a duplicate key: jansson's error */
	buf_reset(&b);
	buf_printf(&b, "{\"x\":{\"shape\":[100],\"data\":[1],\"base64\":\"%s\"}}", text);
	same_every_flag(b.data); /* both */
	buf_reset(&b);
	buf_printf(&b, "{\"x\":{\"shape\":[100],\"base64\":\"%s\",\"z\":1}}", text);
	same_every_flag(b.data); /* an unknown member */
	buf_reset(&b);
	buf_printf(&b, "{\"x\":{\"shape\":[100],\"base64\":\"%s\"}, \"n\":\"\\u0001\"}", text);
	ck_assert_uint_eq(same_every_flag(b.data), 0); /* the placeholder key anywhere */
	buf_reset(&b);
	buf_printf(&b, "{\"x\":{\"shape\":[100],\"base64\":\"%s\"}", text);
	same_every_flag(b.data); /* the body ends early */
	buf_release(&b);
	free(text);
}
END_TEST

/* ---- answers ------------------------------------------------------------------ */

START_TEST(test_answers_attention)
{
	char *e = floats_b64(4 * 512, 0), *k = floats_b64(6 * 512, 0);
	struct buf b;

	buf_init(&b, 16 << 20);
	buf_printf(&b,
		   "{\"model\":\"base\",\"embeddings\":{\"shape\":[4,512],\"base64\":\"%s\"},"
		   "\"weights\":\"per_head\",\"encoding\":\"base64\"}",
		   e);
	ck_assert_int_eq(pool_same_answer(&twins, API_ROUTE_ATTENTION, b.data, b.len), 200);
	buf_reset(&b);
	buf_printf(&b,
		   "{\"model\":\"base\",\"embeddings\":{\"shape\":[1,4,512],\"base64\":\"%s\"},"
		   "\"key\":{\"shape\":[1,6,512],\"base64\":\"%s\"},"
		   "\"value\":{\"shape\":[1,6,512],\"base64\":\"%s\"}}",
		   e, k, k);
	ck_assert_int_eq(pool_same_answer(&twins, API_ROUTE_ATTENTION, b.data, b.len), 200);
	buf_reset(&b); /* a shape that does not match the model */
	buf_printf(&b,
		   "{\"model\":\"base\",\"embeddings\":{\"shape\":[8,256],\"base64\":\"%s\"}}", e);
	ck_assert_int_eq(pool_same_answer(&twins, API_ROUTE_ATTENTION, b.data, b.len), 422);
	buf_release(&b);
	free(e);
	free(k);
}
END_TEST

/* An sdpa body with base64 q, k, v [1, 2, 3, 64]. */
static void sdpa_body(struct buf *b)
{
	char *t = floats_b64(2 * 3 * 64, 0);

	buf_printf(b,
		   "{\"q\":{\"shape\":[1,2,3,64],\"base64\":\"%s\"},"
		   "\"k\":{\"shape\":[1,2,3,64],\"base64\":\"%s\"},"
		   "\"v\":{\"shape\":[1,2,3,64],\"base64\":\"%s\"},\"is_causal\":true}",
		   t, t, t);
	free(t);
}

START_TEST(test_answers_sdpa)
{
	struct buf b;

	buf_init(&b, 16 << 20);
	sdpa_body(&b);
	ck_assert_int_eq(pool_same_answer(&twins, API_ROUTE_SDPA, b.data, b.len), 200);
	buf_release(&b);
}
END_TEST

/* Random mutations of a base64 body: whatever comes out, both agree. */
START_TEST(test_answers_mutations)
{
	static const char alphabet[] = "{}[],:\"\\ =A/+z09\x01\xc3u";
	struct buf b;

	buf_init(&b, 16 << 20);
	sdpa_body(&b);
	pool_same_mutated(&twins, API_ROUTE_SDPA, b.data, b.len, alphabet, (int)test_scaled(3000),
			  rng);
	buf_release(&b);
}
END_TEST

static Suite *pool_base64_suite(void)
{
	Suite *s = suite_create("pool_base64");
	TCase *tp = tcase_create("pooled");
	TCase *ts = tcase_create("same");
	TCase *ta = tcase_create("answers");

	tcase_add_test(tp, test_pooled_paddings);
	tcase_add_test(tp, test_pooled_kinds);
	suite_add_tcase(s, tp);
	tcase_add_test(ts, test_same_edits);
	tcase_add_test(ts, test_same_bad_bytes);
	tcase_add_test(ts, test_same_nonfinite);
	tcase_add_test(ts, test_same_not_pooled);
	suite_add_tcase(s, ts);
	tcase_add_unchecked_fixture(ta, setup, teardown);
	tcase_set_timeout(ta, 120);
	tcase_add_test(ta, test_answers_attention);
	tcase_add_test(ta, test_answers_sdpa);
	tcase_add_test(ta, test_answers_mutations);
	suite_add_tcase(s, ta);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, pool_base64_suite, NULL);
}
