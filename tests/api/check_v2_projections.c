/*
 * check_v2_projections.c: the Open Inference Protocol's outputs q, k and v
 * (each head's projections, /v1's "projections": true) on the real daemon
 * (live_daemon.h), on a one-layer model with grouped-query attention (the
 * fixture llama_gqa_f32: E 16, H 4, Hkv 2, D 4, vocabulary 11), so that q's
 * heads and k's and v's differ:
 *   metadata  GET /v2/models/gqa lists q [-1, 4, -1, 4], k and v [-1, 2, -1, 4]
 *   json      q, k and v named in outputs (never by default): the shapes of
 *             /v1's batched form ([B, H, Lq, D], [B, Hkv, Lk, D], no B for an
 *             unbatched input) and /v1's numbers bit for bit
 *   binary    the same numbers as raw float32, per output (binary_data) and
 *             for all (binary_data_output)
 *   ragged    a text batch of different word counts: item by item /v1's
 *             trimmed numbers, the rows past each item's length zero (with
 *             sinusoidal positions, which the padded rows' projections would
 *             otherwise carry)
 *   heads     head_outputs (each head's output before W_O, /v1's
 *             "head_outputs": true) [B, H, Lq, D]: /v1's numbers bit for
 *             bit, batched and ragged (rows past an item's queries zero)
 *   checkpoint  the same outputs of every layer of a checkpoint, [layers,
 *             B, H, L, D] (k and v per query head, as /v1 answers them):
 *             the metadata of the built-in mini and of llama (the
 *             test folder llama_f32: H 4, Hkv 2, D 8, 2 layers), /v1's numbers
 *             bit for bit in JSON and binary, a ragged text batch on mini
 *             with each item's rows past its length zero in every layer
 *   layers and heads  the parameters that choose them on a checkpoint, in
 *             the forms a client can send (a list, one index, a string
 *             "0, 2"): /v1's numbers of the same choice; what they refuse
 *
 * Numbers are compared exactly: both routes write the shortest text that
 * reads back to the same float32 (v2_floats_at reads it with strtof).
 */
#include <check.h>
#include <jansson.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"
#include "tests/lib/v2_http.h"

#define FIXTURE "tests/data/fixtures/safetensors/llama_gqa_f32.safetensors"
#define GQA_INFER "/v2/models/gqa/infer"
#define LLAMA_DIR "tests/data/checkpoints/llama_f32"

enum { MAXF = 1024, H = 4, HKV = 2, D = 4 };

static struct live_daemon d; /* the built-in models, gqa and llama, per test case */

static void start(void)
{
	static const char *const args[] = {"--model", "gqa=" FIXTURE ",heads=4",
					   "--model", "llama=" LLAMA_DIR, NULL};

	live_start(&d, args);
}

static void stop(void)
{
	live_stop(&d);
}

/* ---- reading answers ------------------------------------------------------ */

/* v1: the numbers of projections.<name> ("q", "k", "v"). */
static size_t v1_projection(const struct live_resp *r, const char *name, float *out)
{
	const char *at = strstr(r->body, "\"projections\":");
	char pat[16];

	ck_assert_msg(at != NULL, "no projections in %.300s", r->body);
	snprintf(pat, sizeof pat, "\"%s\":", name);
	at = strstr(at, pat);
	ck_assert_ptr_nonnull(at);
	return v2_floats_at(at + strlen(pat), out, MAXF);
}

/* v2: the output named name (borrowed from j), asserted present. */
static json_t *output_of(json_t *j, const char *name)
{
	json_t *outs = json_object_get(j, "outputs");

	for (size_t i = 0; i < json_array_size(outs); i++) {
		json_t *o = json_array_get(outs, i);

		if (strcmp(json_string_value(json_object_get(o, "name")), name) == 0)
			return o;
	}
	ck_abort_msg("no output %s", name);
	return NULL;
}

/* v2: the numbers of the `data` of the output named `name`. */
static size_t v2_data(const char *body, const char *name, float *out)
{
	return v2_output_floats(body, name, out, MAXF);
}

/* Asserts output name is FP32 of this shape (rank dims). */
static void assert_shape(json_t *j, const char *name, size_t rank, const size_t *dims)
{
	json_t *o = output_of(j, name), *shape = json_object_get(o, "shape");

	ck_assert_str_eq(json_string_value(json_object_get(o, "datatype")), "FP32");
	ck_assert_uint_eq(json_array_size(shape), rank);
	for (size_t i = 0; i < rank; i++)
		ck_assert_int_eq(json_integer_value(json_array_get(shape, i)), (json_int_t)dims[i]);
}

static void assert_same(const float *a, size_t na, const float *b, size_t nb, const char *what)
{
	ck_assert_uint_eq(na, nb);
	ck_assert_uint_gt(na, 0);
	ck_assert_msg(memcmp(a, b, na * sizeof(float)) == 0, "%s: the numbers differ", what);
}

/* ---- metadata ------------------------------------------------------------ */

/* q [-1, H, -1, D], k and v [-1, Hkv, -1, D], the model's own numbers. */
START_TEST(test_metadata_lists_projections)
{
	static const char *const names[] = {"q", "k", "v", "head_outputs"};
	struct live_resp r = {0};
	json_t *j, *outs;

	live_get(d.port, "/v2/models/gqa", &r);
	ck_assert_int_eq(r.status, 200);
	j = v2_json_of(r.body, r.body_len);
	outs = json_object_get(j, "outputs");
	ck_assert_uint_eq(json_array_size(outs), 7);
	for (size_t i = 0; i < 4; i++) { /* head_outputs last, of q's shape */
		json_t *o = json_array_get(outs, 3 + i);
		json_t *want = json_pack("[i,i,i,i]", -1, i == 0 || i == 3 ? H : HKV, -1, D);

		ck_assert_str_eq(json_string_value(json_object_get(o, "name")), names[i]);
		ck_assert_str_eq(json_string_value(json_object_get(o, "datatype")), "FP32");
		ck_assert_msg(json_equal(json_object_get(o, "shape"), want), "%s's shape",
			      names[i]);
		json_decref(want);
	}
	json_decref(j);
	live_resp_release(&r);
}
END_TEST

/* ---- the numbers of /v1 ------------------------------------------------------ */

#define TOKENS_2x3 "[[3,1,4],[1,5,9]]"
#define V1_TOKENS                                                                                  \
	"{\"model\":\"gqa\",\"tokens\":" TOKENS_2x3                                                \
	",\"mask\":\"causal\",\"positional\":\"rope\","                                            \
	"\"projections\":true}"
#define V2_TOKENS_IN                                                                               \
	"\"parameters\":{\"causal\":true,\"positional\":\"rope\"},\"inputs\":[{\"name\":"          \
	"\"tokens\",\"datatype\":\"INT64\",\"shape\":[2,3],\"data\":" TOKENS_2x3 "}]"

/* tokens [2, 3], causal, RoPE (q and k after it): q, k and v as JSON equal
 * /v1's projections; absent from the default outputs. */
START_TEST(test_json_equals_v1)
{
	static const size_t q_shape[] = {2, H, 3, D}, kv_shape[] = {2, HKV, 3, D};
	static const char *const names[] = {"q", "k", "v"};
	struct live_resp v1 = {0}, v2 = {0}, dflt = {0};
	float a[MAXF], b[MAXF];
	json_t *j;

	v2_post_json(d.port, "/v1/attention", V1_TOKENS, &v1);
	ck_assert_msg(v1.status == 200, "%s", v1.body);
	v2_post_json(d.port, GQA_INFER,
		     "{" V2_TOKENS_IN ",\"outputs\":[{\"name\":\"v\"},{\"name\":\"q\"},"
		     "{\"name\":\"k\"}]}",
		     &v2);
	ck_assert_msg(v2.status == 200, "%s", v2.body);
	j = v2_json_of(v2.body, v2.body_len);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "outputs")), 3);
	assert_shape(j, "q", 4, q_shape);
	assert_shape(j, "k", 4, kv_shape);
	assert_shape(j, "v", 4, kv_shape);
	json_decref(j);
	for (size_t i = 0; i < 3; i++) {
		size_t na = v1_projection(&v1, names[i], a), nb = v2_data(v2.body, names[i], b);

		ck_assert_uint_eq(na, (i == 0 ? H : HKV) * 2 * 3 * D);
		assert_same(a, na, b, nb, names[i]);
	}
	/* never by default */
	v2_post_json(d.port, GQA_INFER, "{" V2_TOKENS_IN "}", &dflt);
	ck_assert_int_eq(dflt.status, 200);
	ck_assert_ptr_null(strstr(dflt.body, "\"name\":\"q\""));
	ck_assert_ptr_null(strstr(dflt.body, "\"name\":\"k\""));
	ck_assert_ptr_null(strstr(dflt.body, "\"name\":\"v\""));
	live_resp_release(&v1);
	live_resp_release(&v2);
	live_resp_release(&dflt);
}
END_TEST

/* An unbatched input, tokens [3]: [H, Lq, D] and [Hkv, Lk, D], as /v1's. */
START_TEST(test_unbatched_equals_v1)
{
	static const size_t q_shape[] = {H, 3, D}, kv_shape[] = {HKV, 3, D};
	struct live_resp v1 = {0}, v2 = {0};
	float a[MAXF], b[MAXF];
	size_t na, nb;
	json_t *j;

	v2_post_json(d.port, "/v1/attention",
		     "{\"model\":\"gqa\",\"tokens\":[2,7,1],\"projections\":true}", &v1);
	v2_post_json(d.port, GQA_INFER,
		     "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT32\",\"shape\":[3],"
		     "\"data\":[2,7,1]}],\"outputs\":[{\"name\":\"q\"},{\"name\":\"k\"},"
		     "{\"name\":\"output\"}]}",
		     &v2);
	ck_assert_msg(v2.status == 200, "%s", v2.body);
	j = v2_json_of(v2.body, v2.body_len);
	assert_shape(j, "q", 3, q_shape);
	assert_shape(j, "k", 3, kv_shape);
	json_decref(j);
	na = v1_projection(&v1, "q", a);
	nb = v2_data(v2.body, "q", b);
	assert_same(a, na, b, nb, "q");
	na = v1_projection(&v1, "k", a);
	nb = v2_data(v2.body, "k", b);
	assert_same(a, na, b, nb, "k");
	live_resp_release(&v1);
	live_resp_release(&v2);
}
END_TEST

/* The binary section of an answer (after Inference-Header-Content-Length's
 * JSON), asserted to hold exactly n floats, into out. */
static void binary_floats(const struct live_resp *r, float *out, size_t n)
{
	const char *ihcl;
	size_t json_len;

	ck_assert_str_eq(live_header(r, "Content-Type"), V2_OCTET_CT);
	ihcl = live_header(r, "Inference-Header-Content-Length"); /* until the next call */
	ck_assert_ptr_nonnull(ihcl);
	json_len = strtoul(ihcl, NULL, 10);
	ck_assert_uint_eq(r->body_len, json_len + n * sizeof(float));
	memcpy(out, r->body + json_len, n * sizeof(float)); /* x86 / arm64: little-endian */
}

/* binary_data on q and v (k as JSON between them), then binary_data_output
 * for all three: /v1's numbers as raw float32, in the order asked. */
START_TEST(test_binary_equals_v1)
{
	enum { NQ = 2 * H * 3 * D, NKV = 2 * HKV * 3 * D };
	struct live_resp v1 = {0}, some = {0}, all = {0};
	float q[MAXF], k[MAXF], v[MAXF], bin[MAXF], js[MAXF];
	size_t json_len;
	json_t *j;

	v2_post_json(d.port, "/v1/attention", V1_TOKENS, &v1);
	ck_assert_uint_eq(v1_projection(&v1, "q", q), NQ);
	ck_assert_uint_eq(v1_projection(&v1, "k", k), NKV);
	ck_assert_uint_eq(v1_projection(&v1, "v", v), NKV);
	v2_post_json(
	    d.port, GQA_INFER,
	    "{" V2_TOKENS_IN ",\"outputs\":[{\"name\":\"q\",\"parameters\":{\"binary_data\":"
	    "true}},{\"name\":\"k\"},{\"name\":\"v\",\"parameters\":{\"binary_data\":true}}]}",
	    &some);
	ck_assert_msg(some.status == 200, "%.300s", some.body);
	binary_floats(&some, bin, NQ + NKV);
	assert_same(q, NQ, bin, NQ, "binary q");
	assert_same(v, NKV, bin + NQ, NKV, "binary v");
	json_len = strtoul(live_header(&some, "Inference-Header-Content-Length"), NULL, 10);
	j = v2_json_of(some.body, json_len);
	ck_assert_int_eq(json_integer_value(json_object_get(
			     json_object_get(output_of(j, "q"), "parameters"), "binary_data_size")),
			 NQ * 4);
	ck_assert_ptr_null(json_object_get(output_of(j, "q"), "data"));
	json_decref(j);
	some.body[json_len] = '\0'; /* k's JSON data, read as text */
	assert_same(k, NKV, js, v2_data(some.body, "k", js), "json k beside binary");
	v2_post_json(d.port, GQA_INFER,
		     "{\"parameters\":{\"causal\":true,\"positional\":\"rope\","
		     "\"binary_data_output\":true},\"inputs\":[{\"name\":\"tokens\",\"datatype\":"
		     "\"INT64\",\"shape\":[2,3],\"data\":" TOKENS_2x3 "}],\"outputs\":[{\"name\":"
		     "\"k\"},{\"name\":\"v\"},{\"name\":\"q\"}]}",
		     &all);
	ck_assert_msg(all.status == 200, "%.300s", all.body);
	binary_floats(&all, bin, NKV + NKV + NQ);
	assert_same(k, NKV, bin, NKV, "binary_data_output k");
	assert_same(v, NKV, bin + NKV, NKV, "binary_data_output v");
	assert_same(q, NQ, bin + 2 * NKV, NQ, "binary_data_output q");
	live_resp_release(&v1);
	live_resp_release(&some);
	live_resp_release(&all);
}
END_TEST

/* ---- ragged batches ---------------------------------------------------------- */

/* A text batch of 3 and 1 words, sinusoidal positions: v2's [2, heads, 3, D]
 * holds item 0 whole as /v1's, then item 1's one row per head as /v1's and
 * its two padded rows zero. (The padded rows' inputs are the sinusoidal
 * encoding alone, whose projections are not zero: the zeros are v2's.) */
static void assert_ragged(const struct live_resp *v1, const char *v2_body, const char *name,
			  size_t heads)
{
	float a[MAXF], b[MAXF];
	size_t na = v1_projection(v1, name, a), nb = v2_data(v2_body, name, b);
	size_t item0 = heads * 3 * D;

	ck_assert_uint_eq(na, item0 + heads * 1 * D); /* v1 trims each item */
	ck_assert_uint_eq(nb, 2 * item0);
	assert_same(a, item0, b, item0, name);
	for (size_t h = 0; h < heads; h++) {
		const float *row_b = b + item0 + h * 3 * D; /* v2's item 1, head h, row 0 */
		const float *row_a = a + item0 + h * D;	    /* v1's item 1, head h */

		ck_assert_msg(memcmp(row_a, row_b, D * sizeof(float)) == 0, "%s head %zu", name, h);
		for (size_t c = D; c < 3 * D; c++)
			ck_assert_msg(row_b[c] == 0.0f, "%s: item 1 head %zu padded [%zu] = %g",
				      name, h, c, (double)row_b[c]);
	}
}

START_TEST(test_ragged_rows_zeroed)
{
	static const size_t q_shape[] = {2, H, 3, D}, kv_shape[] = {2, HKV, 3, D};
	struct live_resp v1 = {0}, v2 = {0};
	json_t *j;

	v2_post_json(d.port, "/v1/attention",
		     "{\"model\":\"gqa\",\"text\":[\"a b c\",\"d\"],\"positional\":\"sinusoidal\","
		     "\"projections\":true}",
		     &v1);
	ck_assert_msg(v1.status == 200, "%s", v1.body);
	v2_post_json(
	    d.port, GQA_INFER,
	    "{\"parameters\":{\"positional\":\"sinusoidal\"},\"inputs\":[{\"name\":\"text\","
	    "\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"a b c\",\"d\"]}],"
	    "\"outputs\":[{\"name\":\"q\"},{\"name\":\"k\"},{\"name\":\"v\"}]}",
	    &v2);
	ck_assert_msg(v2.status == 200, "%s", v2.body);
	j = v2_json_of(v2.body, v2.body_len);
	assert_shape(j, "q", 4, q_shape);
	assert_shape(j, "k", 4, kv_shape);
	assert_shape(j, "v", 4, kv_shape);
	json_decref(j);
	assert_ragged(&v1, v2.body, "q", H);
	assert_ragged(&v1, v2.body, "k", HKV);
	assert_ragged(&v1, v2.body, "v", HKV);
	live_resp_release(&v1);
	live_resp_release(&v2);
}
END_TEST

/* ---- head_outputs ------------------------------------------------------------- */

/* v1: the numbers of "head_outputs" (a ragged batch's items one after another). */
static size_t v1_head_outputs(const struct live_resp *r, float *out)
{
	const char *at = strstr(r->body, "\"head_outputs\":");

	ck_assert_msg(at != NULL, "no head_outputs in %.300s", r->body);
	return v2_floats_at(at + strlen("\"head_outputs\":"), out, MAXF);
}

/* tokens [2, 3], causal, RoPE: head_outputs [2, H, 3, D] equal /v1's; absent
 * from the default outputs. Both without weights, so both stream the keys
 * (the whole-row path rounds the last bits apart). */
START_TEST(test_head_outputs_equal_v1)
{
	static const size_t shape[] = {2, H, 3, D};
	struct live_resp v1 = {0}, v2 = {0}, dflt = {0};
	float a[MAXF], b[MAXF];
	size_t na, nb;
	json_t *j;

	v2_post_json(d.port, "/v1/attention",
		     "{\"model\":\"gqa\",\"tokens\":" TOKENS_2x3 ",\"mask\":\"causal\","
		     "\"positional\":\"rope\",\"head_outputs\":true,\"weights\":\"none\"}",
		     &v1);
	ck_assert_msg(v1.status == 200, "%s", v1.body);
	v2_post_json(d.port, GQA_INFER, "{" V2_TOKENS_IN ",\"outputs\":[{\"name\":\"head_outputs\"}]}",
		     &v2);
	ck_assert_msg(v2.status == 200, "%s", v2.body);
	j = v2_json_of(v2.body, v2.body_len);
	assert_shape(j, "head_outputs", 4, shape);
	json_decref(j);
	na = v1_head_outputs(&v1, a);
	nb = v2_data(v2.body, "head_outputs", b);
	ck_assert_uint_eq(na, 2 * H * 3 * D);
	assert_same(a, na, b, nb, "head_outputs");
	v2_post_json(d.port, GQA_INFER, "{" V2_TOKENS_IN "}", &dflt);
	ck_assert_msg(dflt.status == 200 && strstr(dflt.body, "head_outputs") == NULL, "%s",
		      dflt.body);
	live_resp_release(&v1);
	live_resp_release(&v2);
	live_resp_release(&dflt);
}
END_TEST

/* A text batch of 3 and 1 words: item 0 as /v1's, item 1's first row as
 * /v1's trimmed item, its rows past it zero. */
START_TEST(test_head_outputs_ragged)
{
	struct live_resp v1 = {0}, v2 = {0};
	float a[MAXF], b[MAXF];
	size_t na, nb;

	v2_post_json(d.port, "/v1/attention",
		     "{\"model\":\"gqa\",\"text\":[\"a b c\",\"d\"],\"head_outputs\":true,"
		     "\"weights\":\"none\"}",
		     &v1);
	ck_assert_msg(v1.status == 200, "%s", v1.body);
	v2_post_json(d.port, GQA_INFER,
		     "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[2],"
		     "\"data\":[\"a b c\",\"d\"]}],\"outputs\":[{\"name\":\"head_outputs\"}]}",
		     &v2);
	ck_assert_msg(v2.status == 200, "%s", v2.body);
	na = v1_head_outputs(&v1, a); /* [H, 3, D] then [H, 1, D] */
	nb = v2_data(v2.body, "head_outputs", b); /* [2, H, 3, D] */
	ck_assert_uint_eq(na, H * 3 * D + H * D);
	ck_assert_uint_eq(nb, 2 * H * 3 * D);
	assert_same(a, H * 3 * D, b, H * 3 * D, "item 0");
	for (size_t h = 0; h < H; h++) {
		const float *row = b + (H + h) * 3 * D; /* item 1, head h */

		assert_same(a + H * 3 * D + h * D, D, row, D, "item 1's row");
		for (size_t c = D; c < 3 * D; c++)
			ck_assert_msg(row[c] == 0.0f, "item 1 head %zu padded [%zu] = %g", h, c,
				      (double)row[c]);
	}
	live_resp_release(&v1);
	live_resp_release(&v2);
}
END_TEST

/* ---- a checkpoint's layers ------------------------------------------------------- */

enum { CK_MAXF = 8192, CK_NAMES = 4 };
static const char *const ck_names[CK_NAMES] = {"q", "k", "v", "head_outputs"};

/* One checkpoint request's shape: C layers, B items of lens[b] tokens
 * (padded to L), H heads of D. */
struct ck_shape {
	size_t C, B, H, L, D, lens[4];
};

/* Past the JSON array that starts at `at` (its numbers hold no brackets). */
static const char *past_array(const char *at)
{
	int depth = 0;

	do
		depth += (*at == '[') - (*at == ']');
	while (*at++ != '\0' && depth > 0);
	return at;
}

/* v1's numbers of output `name` in answered layer c (projections[c].name,
 * or head_outputs[c], attentions[c]): the items trimmed, one after another. */
static size_t ck_v1_layer(const char *body, const char *name, size_t c, float *out)
{
	int projection = strlen(name) == 1; /* q, k or v */
	char key[24];
	const char *at;

	snprintf(key, sizeof key, "\"%s\":", projection ? "projections" : name);
	at = strstr(body, key);
	ck_assert_ptr_nonnull(at);
	if (!projection) { /* [[layer 0], [layer 1], ...] */
		at = strchr(at, '[') + 1;
		for (size_t i = 0; i < c; i++)
			at = past_array(at) + 1; /* and its ',' */
		return v2_floats_at(at, out, CK_MAXF);
	}
	snprintf(key, sizeof key, "\"%s\":", name);
	for (size_t i = 0; i <= c; i++) {
		at = strstr(at + 1, key);
		ck_assert_ptr_nonnull(at);
	}
	return v2_floats_at(at + strlen(key), out, CK_MAXF);
}

/* v2's [C, B, H, L, D] x of output `name` against /v1's layers in
 * v1_body: each item's rows as /v1's, the rows past its length zero. */
static void assert_ck_output(const char *v1_body, const float *x, const struct ck_shape *s,
			     const char *name)
{
	static float a[CK_MAXF];

	for (size_t c = 0; c < s->C; c++) {
		size_t na = ck_v1_layer(v1_body, name, c, a), at = 0;

		for (size_t b = 0; b < s->B; b++)
			for (size_t h = 0; h < s->H; h++)
				for (size_t l = 0; l < s->L; l++) {
					/* x[c, b, h, l] */
					const float *row =
					    x + (((c * s->B + b) * s->H + h) * s->L + l) * s->D;

					for (size_t i = 0; i < s->D; i++)
						ck_assert_msg(l < s->lens[b] ? row[i] == a[at + i]
									     : row[i] == 0.0f,
							      "%s layer %zu item %zu head %zu row %zu "
							      "[%zu]: %g",
							      name, c, b, h, l, i, (double)row[i]);
					at += l < s->lens[b] ? s->D : 0;
				}
		ck_assert_uint_eq(na, at);
	}
}

/* The outputs q, k, v and head_outputs of model's metadata: [-1, -1, -1,
 * -1, D] (the parameters choose the layers and heads). */
static void assert_ck_metadata(const char *model, const struct ck_shape *s)
{
	struct live_resp r = {0};
	char path[64];
	json_t *j, *want = json_pack("[i,i,i,i,i]", -1, -1, -1, -1, (int)s->D);

	snprintf(path, sizeof path, "/v2/models/%s", model);
	live_get(d.port, path, &r);
	ck_assert_int_eq(r.status, 200);
	j = v2_json_of(r.body, r.body_len);
	for (size_t i = 0; i < CK_NAMES; i++) {
		json_t *o = json_array_get(json_object_get(j, "outputs"), 3 + i);

		ck_assert_str_eq(json_string_value(json_object_get(o, "name")), ck_names[i]);
		ck_assert_msg(json_equal(json_object_get(o, "shape"), want), "%s %s", model,
			      ck_names[i]);
	}
	json_decref(want);
	json_decref(j);
	live_resp_release(&r);
}

#define CK_OUTPUTS                                                                                 \
	"\"outputs\":[{\"name\":\"v\"},{\"name\":\"head_outputs\"},{\"name\":\"q\"},"              \
	"{\"name\":\"k\"}]"

/* llama (grouped-query: 2 key heads for 4 query heads), tokens [2, 3]: every
 * layer's q, k, v and head outputs as JSON equal /v1's, then the same as
 * binary_data_output, in the order asked. */
START_TEST(test_checkpoint_equals_v1)
{
	static const struct ck_shape s = {2, 2, 4, 3, 8, {3, 3}};
	static const size_t shape[] = {2, 2, 4, 3, 8};
	static float x[CK_MAXF];
	struct live_resp v1 = {0}, js = {0}, bin = {0};
	size_t n = 2 * 2 * 4 * 3 * 8;
	json_t *j;

	assert_ck_metadata("llama", &s);
	v2_post_json(d.port, "/v1/attention",
		     "{\"model\":\"llama\",\"tokens\":" TOKENS_2x3 ",\"projections\":true,"
		     "\"head_outputs\":true,\"weights\":\"none\"}",
		     &v1);
	ck_assert_msg(v1.status == 200, "%.300s", v1.body);
	v2_post_json(d.port, "/v2/models/llama/infer",
		     "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[2,3],"
		     "\"data\":" TOKENS_2x3 "}]," CK_OUTPUTS "}",
		     &js);
	ck_assert_msg(js.status == 200, "%.300s", js.body);
	j = v2_json_of(js.body, js.body_len);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "outputs")), 4);
	for (size_t i = 0; i < CK_NAMES; i++) {
		assert_shape(j, ck_names[i], 5, shape);
		ck_assert_uint_eq(v2_output_floats(js.body, ck_names[i], x, CK_MAXF), n);
		assert_ck_output(v1.body, x, &s, ck_names[i]);
	}
	json_decref(j);
	v2_post_json(d.port, "/v2/models/llama/infer",
		     "{\"parameters\":{\"binary_data_output\":true},\"inputs\":[{\"name\":"
		     "\"tokens\",\"datatype\":\"INT64\",\"shape\":[2,3],\"data\":" TOKENS_2x3
		     "}]," CK_OUTPUTS "}",
		     &bin);
	ck_assert_msg(bin.status == 200, "%.300s", bin.body);
	binary_floats(&bin, x, 4 * n);
	assert_ck_output(v1.body, x, &s, "v");
	assert_ck_output(v1.body, x + n, &s, "head_outputs");
	assert_ck_output(v1.body, x + 2 * n, &s, "q");
	assert_ck_output(v1.body, x + 3 * n, &s, "k");
	live_resp_release(&v1);
	live_resp_release(&js);
	live_resp_release(&bin);
}
END_TEST

/* The built-in mini, a text batch of 4 and 1 tokens: item 0 as /v1's in
 * every layer, item 1's one row as /v1's trimmed item and its rows past it
 * zero; the same in binary; nothing of them by default. */
START_TEST(test_checkpoint_ragged)
{
	static const struct ck_shape s = {2, 2, 4, 4, 32, {4, 1}};
	static float x[CK_MAXF];
	struct live_resp v1 = {0}, js = {0}, bin = {0}, dflt = {0};
	size_t n = 2 * 2 * 4 * 4 * 32;

	assert_ck_metadata("mini", &s);
	v2_post_json(d.port, "/v1/attention",
		     "{\"model\":\"mini\",\"text\":[\"ab ab ba\",\"a\"],\"projections\":true,"
		     "\"head_outputs\":true,\"weights\":\"none\"}",
		     &v1);
	ck_assert_msg(v1.status == 200 && strstr(v1.body, "\"tokens\":[[\"ab\",\" ab\",\" b\","
							  "\"a\"],[\"a\"]]") != NULL,
		      "%.300s", v1.body);
	v2_post_json(d.port, "/v2/models/mini/infer",
		     "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[2],"
		     "\"data\":[\"ab ab ba\",\"a\"]}]," CK_OUTPUTS "}",
		     &js);
	ck_assert_msg(js.status == 200, "%.300s", js.body);
	for (size_t i = 0; i < CK_NAMES; i++) {
		ck_assert_uint_eq(v2_output_floats(js.body, ck_names[i], x, CK_MAXF), n);
		assert_ck_output(v1.body, x, &s, ck_names[i]);
	}
	v2_post_json(d.port, "/v2/models/mini/infer",
		     "{\"parameters\":{\"binary_data_output\":true},\"inputs\":[{\"name\":"
		     "\"text\",\"datatype\":\"BYTES\",\"shape\":[2],\"data\":[\"ab ab ba\",\"a\"]}],"
		     "\"outputs\":[{\"name\":\"k\"}]}",
		     &bin);
	ck_assert_msg(bin.status == 200, "%.300s", bin.body);
	binary_floats(&bin, x, n);
	assert_ck_output(v1.body, x, &s, "k");
	v2_post_json(d.port, "/v2/models/mini/infer",
		     "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[1],"
		     "\"data\":[\"ab\"]}]}",
		     &dflt);
	ck_assert_msg(dflt.status == 200 && strstr(dflt.body, "\"name\":\"q\"") == NULL &&
			  strstr(dflt.body, "head_outputs") == NULL,
		      "%.300s", dflt.body);
	live_resp_release(&v1);
	live_resp_release(&js);
	live_resp_release(&bin);
	live_resp_release(&dflt);
}
END_TEST

/* The parameters layers and heads: llama's layer 1 (as "-1", as 1 and as
 * [1]) and heads 3 and 1 (as "3, 1" and as [1, 3]) answer /v1's numbers
 * of {"layers": [1], "heads": [1, 3]}, attentions and projections, shaped
 * [1, 2, 2, 3, D]; a list that is no list, an index past the end and a
 * layer word /v1 knows are refused or read as /v1 reads them. */
START_TEST(test_checkpoint_layers_heads)
{
	static const char *const params[] = {"{\"layers\":\"-1\",\"heads\":\"3, 1\"}",
					     "{\"layers\":1,\"heads\":[1,3]}",
					     "{\"layers\":[1],\"heads\":\"1,3\"}"};
	static const struct ck_shape s = {1, 2, 2, 3, 8, {3, 3}}, sa = {1, 2, 2, 3, 3, {3, 3}};
	static const size_t shape[] = {1, 2, 2, 3, 8}, shape_a[] = {1, 2, 2, 3, 3};
	static float x[CK_MAXF];
	struct live_resp v1 = {0}, r = {0};
	char body[512];

	v2_post_json(d.port, "/v1/attention",
		     "{\"model\":\"llama\",\"tokens\":" TOKENS_2x3 ",\"projections\":true,"
		     "\"head_outputs\":true,\"layers\":[1],\"heads\":[1,3]}",
		     &v1);
	ck_assert_msg(v1.status == 200, "%.300s", v1.body);
	for (size_t p = 0; p < sizeof params / sizeof *params; p++) {
		json_t *j;

		snprintf(body, sizeof body,
			 "{\"parameters\":%s,\"inputs\":[{\"name\":\"tokens\",\"datatype\":"
			 "\"INT64\",\"shape\":[2,3],\"data\":" TOKENS_2x3 "}],\"outputs\":["
			 "{\"name\":\"attentions\"},{\"name\":\"q\"},{\"name\":\"k\"},{\"name\":"
			 "\"v\"},{\"name\":\"head_outputs\"}]}",
			 params[p]);
		v2_post_json(d.port, "/v2/models/llama/infer", body, &r);
		ck_assert_msg(r.status == 200, "%s: %.300s", params[p], r.body);
		j = v2_json_of(r.body, r.body_len);
		assert_shape(j, "attentions", 5, shape_a);
		v2_output_floats(r.body, "attentions", x, CK_MAXF);
		assert_ck_output(v1.body, x, &sa, "attentions");
		for (size_t i = 0; i < CK_NAMES; i++) {
			assert_shape(j, ck_names[i], 5, shape);
			v2_output_floats(r.body, ck_names[i], x, CK_MAXF);
			assert_ck_output(v1.body, x, &s, ck_names[i]);
		}
		json_decref(j);
		live_resp_release(&r);
	}
	live_resp_release(&v1);
}
END_TEST

/* What the parameters layers and heads refuse, each where it is. */
START_TEST(test_checkpoint_layers_heads_refused)
{
	static const struct {
		const char *params, *error;
	} cases[] = {
	    {"{\"layers\":\"1,x\"}", "layers is \"all\", \"last\" or layer indices separated "
				     "by commas (at /parameters/layers)"},
	    {"{\"layers\":\"\"}", "layers is \"all\", \"last\" or layer indices separated by "
				  "commas (at /parameters/layers)"},
	    {"{\"layers\":2}", "a layer index is an integer in [-2, 2) (at /parameters/layers)"},
	    {"{\"heads\":\"0,4\"}", "a head index is an integer in [-4, 4) (at /parameters/heads)"},
	    {"{\"heads\":[0,-4]}", "head 0 is listed twice (at /parameters/heads/1)"},
	    {"{\"heads\":[]}", "heads is a non-empty array of head indices, one index, or a "
			       "string of indices separated by commas (at /parameters/heads)"},
	    {"{\"heads\":true}", "heads is a non-empty array of head indices, one index, or a "
				 "string of indices separated by commas (at /parameters/heads)"},
	};
	static const struct {
		const char *fields, *error;
	} v1_cases[] = {
	    {"\"layers\":\"1\"", "\"message\":\"layers is \\\"all\\\", \\\"last\\\" or an array "
				 "of layer indices\",\"pointer\":\"/layers\""},
	    {"\"heads\":3", "\"message\":\"heads is a non-empty array of head indices\","
			    "\"pointer\":\"/heads\""},
	    {"\"heads\":[1,-3]", "\"message\":\"head 1 is listed twice\",\"pointer\":\"/heads/1\""},
	    {"\"layers\":[0,2]", "\"message\":\"a layer index is an integer in [-2, 2)\","
				 "\"pointer\":\"/layers/1\""},
	};
	struct live_resp r = {0};
	char body[512];

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		snprintf(body, sizeof body,
			 "{\"parameters\":%s,\"inputs\":[{\"name\":\"tokens\",\"datatype\":"
			 "\"INT64\",\"shape\":[2,3],\"data\":" TOKENS_2x3 "}]}",
			 cases[i].params);
		v2_post_json(d.port, "/v2/models/llama/infer", body, &r);
		v2_assert_error(&r, 422, cases[i].error);
		live_resp_release(&r);
	}
	v2_post_json(d.port, "/v2/models/llama/infer",
		     "{\"parameters\":{\"layers\":\"last\"},\"inputs\":[{\"name\":\"tokens\","
		     "\"datatype\":\"INT64\",\"shape\":[2,3],\"data\":" TOKENS_2x3 "}]}",
		     &r);
	ck_assert_msg(r.status == 200 && strstr(r.body, "\"shape\":[1,2,4,3,3]") != NULL, "%.400s",
		      r.body);
	live_resp_release(&r);
	/* /v1's fields of those names, read by the same code: lists only */
	for (size_t i = 0; i < sizeof v1_cases / sizeof *v1_cases; i++) {
		snprintf(body, sizeof body, "{\"model\":\"llama\",\"tokens\":[1,2],%s}",
			 v1_cases[i].fields);
		v2_post_json(d.port, "/v1/attention", body, &r);
		ck_assert_msg(r.status == 422 && strstr(r.body, v1_cases[i].error) != NULL,
			      "%s: %d %.300s", v1_cases[i].fields, r.status, r.body);
		live_resp_release(&r);
	}
	/* a model of one layer has none to choose, as /v1 says */
	v2_post_json(d.port, GQA_INFER,
		     "{\"parameters\":{\"heads\":\"0\"},\"inputs\":[{\"name\":\"tokens\","
		     "\"datatype\":\"INT64\",\"shape\":[2,3],\"data\":" TOKENS_2x3 "}]}",
		     &r);
	v2_assert_error(&r, 422,
			"parameter 'heads' applies to checkpoint models; model 'gqa' is one "
			"attention layer (at /parameters/heads)");
	live_resp_release(&r);
}
END_TEST

/* An output name repeated, or unknown: refused as any other's. */
START_TEST(test_refusals)
{
	struct live_resp r = {0};

	v2_post_json(d.port, GQA_INFER,
		     "{" V2_TOKENS_IN ",\"outputs\":[{\"name\":\"q\"},{\"name\":\"q\"}]}", &r);
	v2_assert_error(&r, 422, "output 'q' is asked twice");
	live_resp_release(&r);
	v2_post_json(d.port, GQA_INFER, "{" V2_TOKENS_IN ",\"outputs\":[{\"name\":\"Q\"}]}", &r);
	v2_assert_error(&r, 422,
			"the outputs are output, weights, weights_mean, q, k, v and "
			"head_outputs (one layer), output, attentions, scores, q, k, v and "
			"head_outputs (a checkpoint) (at /outputs/0/name)");
	live_resp_release(&r);
}
END_TEST

static Suite *v2_projections_suite(void)
{
	Suite *s = suite_create("v2_projections");
	TCase *tc = tcase_create("projections");

	tcase_add_checked_fixture(tc, start, stop);
	tcase_add_test(tc, test_metadata_lists_projections);
	tcase_add_test(tc, test_json_equals_v1);
	tcase_add_test(tc, test_unbatched_equals_v1);
	tcase_add_test(tc, test_binary_equals_v1);
	tcase_add_test(tc, test_ragged_rows_zeroed);
	tcase_add_test(tc, test_head_outputs_equal_v1);
	tcase_add_test(tc, test_head_outputs_ragged);
	tcase_add_test(tc, test_checkpoint_equals_v1);
	tcase_add_test(tc, test_checkpoint_ragged);
	tcase_add_test(tc, test_checkpoint_layers_heads);
	tcase_add_test(tc, test_checkpoint_layers_heads_refused);
	tcase_add_test(tc, test_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {.daemon = true};

	return suite_main(argc, argv, v2_projections_suite, &opts);
}
