/*
 * check_v2.c: the Open Inference Protocol (KServe v2) routes, end to end, on
 * the real daemon (live_daemon.h): server and model metadata, health, the
 * /versions/{version} segment, infer with JSON (the numbers of /v1/attention
 * for the same request, bit for bit), INT32 / INT64 / BYTES inputs, output
 * selection, id echo, Triton's binary tensor extension both ways, CORS and
 * metrics; the protocol's errors {"error": "..."} with their statuses are
 * check_v2_errors.c's, and what both share tests/lib/v2_http.h's.
 *
 * Numbers are compared exactly: both routes write the shortest text that
 * reads back to the same float32 (strtof here), and binary outputs are the
 * raw float32 bytes, so the same float must arrive the same way.
 */
#include <check.h>
#include <jansson.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"
#include "tests/lib/v2_http.h"

enum { MAXF = 1024 };

#define SEEDS "나는 맛있는 사과를 먹었다"

static struct live_daemon d; /* the daemon with the built-in models, per test case */

static void start_builtins(void)
{
	live_start(&d, NULL);
}

static void stop_builtins(void)
{
	live_stop(&d);
}

/* ---- reading answers ------------------------------------------------------ */

/* v1: the numbers of top-level field `key` ("output", "weights"). */
static size_t v1_floats(const struct live_resp *r, const char *key, float *out)
{
	char pat[64];
	const char *at;

	snprintf(pat, sizeof pat, "\"%s\":", key);
	at = strstr(r->body, pat);
	ck_assert_msg(at != NULL, "no %s in %.200s", key, r->body);
	return v2_floats_at(at + strlen(pat), out, MAXF);
}

/* v2: the numbers of the `data` of the output named `name`. */
static size_t v2_floats(const char *body, const char *name, float *out)
{
	return v2_output_floats(body, name, out, MAXF);
}

static void assert_same_floats(const float *a, size_t na, const float *b, size_t nb)
{
	ck_assert_uint_eq(na, nb);
	ck_assert_uint_gt(na, 0);
	ck_assert_msg(memcmp(a, b, na * sizeof(float)) == 0, "the numbers differ");
}

/* v1's field `key` and the v2 output `name` hold the same numbers. */
static void assert_v2_as_v1(const struct live_resp *v1, const char *key, const char *v2_body,
			    const char *name)
{
	float a[MAXF], b[MAXF];
	size_t na = v1_floats(v1, key, a), nb = v2_floats(v2_body, name, b);

	assert_same_floats(a, na, b, nb);
}

/* The output named name of a v2 answer (borrowed from j), or NULL. */
static json_t *output_of(json_t *j, const char *name)
{
	json_t *outs = json_object_get(j, "outputs");

	for (size_t i = 0; i < json_array_size(outs); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(outs, i), "name")),
			   name) == 0)
			return json_array_get(outs, i);
	return NULL;
}

/* Asserts output `name` has this shape (rank dims) and datatype FP32. */
static void assert_shape(json_t *j, const char *name, size_t rank, const size_t *dims)
{
	json_t *o = output_of(j, name);
	json_t *shape = json_object_get(o, "shape");

	ck_assert_msg(o != NULL, "no output %s", name);
	ck_assert_str_eq(json_string_value(json_object_get(o, "datatype")), "FP32");
	ck_assert_uint_eq(json_array_size(shape), rank);
	for (size_t i = 0; i < rank; i++)
		ck_assert_int_eq(json_integer_value(json_array_get(shape, i)), (json_int_t)dims[i]);
}

/* ---- metadata and health ---------------------------------------------------- */

START_TEST(test_server_metadata_and_health)
{
	struct live_resp r = {0};
	json_t *j;

	live_get(d.port, "/v2", &r);
	ck_assert_int_eq(r.status, 200);
	j = v2_json_of(r.body, r.body_len);
	ck_assert_str_eq(json_string_value(json_object_get(j, "name")), "attnd");
	ck_assert_ptr_nonnull(json_string_value(json_object_get(j, "version")));
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "extensions"), 0)),
			 "binary_tensor_data");
	json_decref(j);
	live_resp_release(&r);
	live_get(d.port, "/v2/health/live", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "{\"live\":true}");
	live_resp_release(&r);
	live_get(d.port, "/v2/health/ready", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "{\"ready\":true}");
	live_resp_release(&r);
}
END_TEST

START_TEST(test_not_ready_and_api_key)
{
	const char *const args[] = {"--no-builtins", "--api-key", "k3y", NULL};
	struct live_daemon bare;
	struct live_resp r = {0};

	live_start(&bare, args);
	live_get(bare.port, "/v2/health/ready", &r); /* open, and no model: 503 */
	ck_assert_int_eq(r.status, 503);
	ck_assert_str_eq(r.body, "{\"ready\":false}");
	ck_assert_ptr_nonnull(live_header(&r, "Retry-After"));
	live_resp_release(&r);
	live_get(bare.port, "/v2/health/live", &r);
	ck_assert_int_eq(r.status, 200);
	live_resp_release(&r);
	live_get(bare.port, "/v2", &r); /* the transport's refusal, in the v2 body */
	v2_assert_error(&r, 401, "API key");
	live_resp_release(&r);
	live_request(bare.port, "GET /v2/models/tiny HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer k3y\r\n",
		     NULL, 0, &r);
	v2_assert_error(&r, 404, "no model named 'tiny'");
	live_resp_release(&r);
	live_stop(&bare);
}
END_TEST

START_TEST(test_model_metadata)
{
	struct live_resp r = {0}, v = {0};
	json_t *j, *in, *out;

	live_get(d.port, "/v2/models/tiny", &r);
	ck_assert_int_eq(r.status, 200);
	j = v2_json_of(r.body, r.body_len);
	ck_assert_str_eq(json_string_value(json_object_get(j, "name")), "tiny");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "versions"), 0)), "1");
	ck_assert_str_eq(json_string_value(json_object_get(j, "platform")), "attnd");
	in = json_object_get(j, "inputs");
	out = json_object_get(j, "outputs");
	ck_assert_uint_eq(json_array_size(in), 5);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(in, 0), "name")),
			 "embeddings");
	ck_assert_int_eq(json_integer_value(json_array_get(
			     json_object_get(json_array_get(in, 0), "shape"), 2)),
			 8);
	ck_assert_int_eq(json_integer_value(json_array_get(
			     json_object_get(json_array_get(in, 0), "shape"), 0)),
			 -1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(in, 2), "datatype")),
			 "BYTES");
	ck_assert_uint_eq(json_array_size(out), 7);
	ck_assert_int_eq(json_integer_value(json_array_get(
			     json_object_get(json_array_get(out, 1), "shape"), 1)),
			 2); /* weights [-1, H, -1, -1] */
	/* the projections, q [-1, H, -1, D], k and v [-1, Hkv, -1, D], then
	 * head_outputs [-1, H, -1, D] (check_v2_projections: a model with
	 * Hkv < H) */
	for (size_t i = 3; i < 7; i++) {
		static const char *const names[] = {"q", "k", "v", "head_outputs"};
		json_t *o = json_array_get(out, i), *want = json_pack("[i,i,i,i]", -1, 2, -1, 4);

		ck_assert_str_eq(json_string_value(json_object_get(o, "name")), names[i - 3]);
		ck_assert_str_eq(json_string_value(json_object_get(o, "datatype")), "FP32");
		ck_assert(json_equal(json_object_get(o, "shape"), want));
		json_decref(want);
	}
	json_decref(j);
	live_get(d.port, "/v2/models/tiny/versions/1", &v);
	ck_assert_int_eq(v.status, 200);
	ck_assert_str_eq(v.body, r.body);
	live_resp_release(&v);
	live_resp_release(&r);
	live_get(d.port, "/v2/models/tiny/ready", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "{\"name\":\"tiny\",\"ready\":true}");
	live_resp_release(&r);
	live_get(d.port, "/v2/models/tiny/versions/1/ready", &r);
	ck_assert_int_eq(r.status, 200);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_versions_and_unknown_models)
{
	static const char *const missing[] = {
	    "/v2/models/huge", "/v2/models/huge/ready", "/v2/models/tiny/versions/2",
	    "/v2/models/tiny/versions/2/ready", "/v2/models/tiny/versions/latest"};
	struct live_resp r = {0};
	char body[] = "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[1,8],"
		      "\"data\":" V2_ROW0 "}]}";
	char path[400];

	for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
		live_get(d.port, missing[i], &r);
		v2_assert_error(&r, 404, i < 2 ? "no model named 'huge'" : "has no version");
		live_resp_release(&r);
	}
	v2_post_json(d.port, "/v2/models/tiny/versions/1/infer", body, &r);
	ck_assert_int_eq(r.status, 200);
	live_resp_release(&r);
	v2_post_json(d.port, "/v2/models/tiny/versions/7/infer", body, &r);
	v2_assert_error(&r, 404, "no version '7'");
	live_resp_release(&r);
	/* a version too long to read is said to be one, not '' */
	snprintf(path, sizeof path, "/v2/models/tiny/versions/%0300d/infer", 1);
	v2_post_json(d.port, path, body, &r);
	v2_assert_error(&r, 404,
			"model 'tiny' has no version '(a segment of more than 159 bytes)' (only '1')");
	live_resp_release(&r);
	v2_post_json(d.port, "/v2/models/huge/infer", body, &r);
	v2_assert_error(&r, 404, "no model named 'huge'");
	live_resp_release(&r);
	live_get(d.port, "/v2/nothing", &r);
	v2_assert_error(&r, 404, "no route");
	live_resp_release(&r);
	live_get(d.port, V2_INFER, &r);
	v2_assert_error(&r, 405, "does not take GET: it takes POST");
	ck_assert_str_eq(live_header(&r, "Allow"), "POST, OPTIONS");
	live_resp_release(&r);
}
END_TEST

/* ---- infer: the numbers of /v1/attention -------------------------------------- */

/* v2 with embeddings [3, 8] against v1 with the same embeddings: every output. */
START_TEST(test_infer_json_equals_v1)
{
	static const size_t out_shape[] = {3, 8}, w_shape[] = {2, 3, 3}, m_shape[] = {3, 3};
	struct live_resp v1 = {0}, v1m = {0}, v2 = {0};
	json_t *j;

	v2_post_json(d.port, "/v1/attention", "{\"model\":\"tiny\",\"embeddings\":" V2_X3 "}", &v1);
	v2_post_json(d.port, "/v1/attention", "{\"model\":\"tiny\",\"embeddings\":" V2_X3 ",\"weights\":\"mean\"}",
		  &v1m);
	v2_post_json(d.port, V2_INFER,
		  "{\"id\":\"req-7\",\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\","
		  "\"shape\":[3,8],\"data\":" V2_X3 "}]}",
		  &v2);
	ck_assert_int_eq(v1.status, 200);
	ck_assert_int_eq(v2.status, 200);
	j = v2_json_of(v2.body, v2.body_len);
	ck_assert_str_eq(json_string_value(json_object_get(j, "model_name")), "tiny");
	ck_assert_str_eq(json_string_value(json_object_get(j, "model_version")), "1");
	ck_assert_str_eq(json_string_value(json_object_get(j, "id")), "req-7");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "outputs")), 3); /* the default */
	assert_shape(j, "output", 2, out_shape);
	assert_shape(j, "weights", 3, w_shape);
	assert_shape(j, "weights_mean", 2, m_shape);
	json_decref(j);
	assert_v2_as_v1(&v1, "output", v2.body, "output");
	assert_v2_as_v1(&v1, "weights", v2.body, "weights");
	assert_v2_as_v1(&v1m, "weights", v2.body, "weights_mean");
	live_resp_release(&v1);
	live_resp_release(&v1m);
	live_resp_release(&v2);
}
END_TEST

/* KServe's Python client (kserve.InferRequest.to_rest) writes the model's
 * name into every body, beside id; the path names the model, so the field
 * is taken and its value left alone: the client may name the model it
 * built the request for while posting to another path, as KServe's binary
 * tensor example does. */
/* An INT64 element past 64 bits, as JavaScript writes 1e20: named as sent
 * at its element, not taken as its clamped end (2^63 - 1) and refused as a
 * token id no one sent. */
START_TEST(test_infer_int64_past_64_bits)
{
	struct live_resp r = {0};

	v2_post_json(d.port, V2_INFER,
		     "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[2],"
		     "\"data\":[1,100000000000000000000]}]}",
		     &r);
	ck_assert_int_eq(r.status, 422);
	ck_assert_msg(strstr(r.body, "1e+20 is past the range of a 64-bit integer") != NULL &&
			  strstr(r.body, "/inputs/0/data/1") != NULL,
		      "%s", r.body);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_infer_kserve_client_body)
{
	static const size_t out_shape[] = {3, 8};
	struct live_resp r = {0};
	json_t *j;

	v2_post_json(d.port, V2_INFER,
		  "{\"id\":\"9f1c\",\"model_name\":\"mymodel\",\"inputs\":[{\"name\":"
		  "\"embeddings\",\"shape\":[3,8],\"datatype\":\"FP32\",\"data\":" V2_X3 "}],"
		  "\"outputs\":[{\"name\":\"output\"}]}",
		  &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	j = v2_json_of(r.body, r.body_len);
	ck_assert_str_eq(json_string_value(json_object_get(j, "model_name")), "tiny");
	ck_assert_str_eq(json_string_value(json_object_get(j, "id")), "9f1c");
	assert_shape(j, "output", 2, out_shape);
	json_decref(j);
	live_resp_release(&r);
	v2_post_json(d.port, V2_INFER, "{\"model_name\":1,\"inputs\":[]}", &r);
	v2_assert_error(&r, 422, "model_name is a string (at /model_name)");
	live_resp_release(&r);
}
END_TEST

/* text BYTES [1] against v1's batched text; flat and nested data alike. */
START_TEST(test_infer_text_equals_v1)
{
	static const size_t out_shape[] = {1, 4, 8};
	struct live_resp v1 = {0}, v2 = {0};
	json_t *j;

	v2_post_json(d.port, "/v1/attention", "{\"model\":\"tiny\",\"text\":[\"" SEEDS "\"]}", &v1);
	v2_post_json(d.port, V2_INFER,
		  "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[1],"
		  "\"data\":[\"" SEEDS "\"]}]}",
		  &v2);
	ck_assert_int_eq(v2.status, 200);
	j = v2_json_of(v2.body, v2.body_len);
	assert_shape(j, "output", 3, out_shape);
	ck_assert_ptr_null(json_object_get(j, "id")); /* none was given */
	json_decref(j);
	assert_v2_as_v1(&v1, "output", v2.body, "output");
	assert_v2_as_v1(&v1, "weights", v2.body, "weights");
	live_resp_release(&v1);
	live_resp_release(&v2);
}
END_TEST

/* parameters.softcap below float32's smallest positive value caps, as on /v1. */
START_TEST(test_infer_softcap_below_float32)
{
	const char *in = "\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\","
			 "\"shape\":[1,3],\"data\":[3,14,15]}]";
	char body[512];
	struct live_resp v1 = {0}, v2 = {0};

	v2_post_json(d.port, "/v1/attention",
		  "{\"model\":\"tiny\",\"tokens\":[[3,14,15]],\"softcap\":1e-40}", &v1);
	snprintf(body, sizeof body, "{%s,\"parameters\":{\"softcap\":1e-50}}", in);
	v2_post_json(d.port, V2_INFER, body, &v2);
	ck_assert_int_eq(v1.status, 200);
	ck_assert_int_eq(v2.status, 200);
	assert_v2_as_v1(&v1, "weights", v2.body, "weights");
	live_resp_release(&v1);
	live_resp_release(&v2);
}
END_TEST

/* tokens INT64 [2, 3] (nested) and INT32 (flat), causal and RoPE, against v1. */
START_TEST(test_infer_tokens_int64_int32)
{
	static const size_t w_shape[] = {2, 2, 3, 3};
	const char *params = "\"parameters\":{\"causal\":true,\"positional\":\"rope\"}";
	char body[512];
	struct live_resp v1 = {0}, v64 = {0}, v32 = {0}, vr = {0};
	float a[MAXF], b[MAXF], c[MAXF], r[MAXF];
	size_t na, nb, nc, nr;
	json_t *j;

	v2_post_json(d.port, "/v1/attention",
		  "{\"model\":\"tiny\",\"tokens\":[[3,14,15],[9,2,6]],\"mask\":\"causal\","
		  "\"positional\":\"rope\"}",
		  &v1);
	snprintf(body, sizeof body,
		 "{%s,\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[2,3],"
		 "\"data\":[[3,14,15],[9,2,6]]}]}",
		 params);
	v2_post_json(d.port, V2_INFER, body, &v64);
	snprintf(body, sizeof body,
		 "{%s,\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT32\",\"shape\":[2,3],"
		 "\"data\":[3,14,15,9,2,6]}]}",
		 params);
	v2_post_json(d.port, V2_INFER, body, &v32);
	/* whole numbers written as reals are integers (OpenAPI 3.1) */
	snprintf(body, sizeof body,
		 "{%s,\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[2.0,3],"
		 "\"data\":[3.0,14,15,9,2e0,6]}]}",
		 params);
	v2_post_json(d.port, V2_INFER, body, &vr);
	ck_assert_int_eq(v64.status, 200);
	ck_assert_int_eq(v32.status, 200);
	ck_assert_int_eq(vr.status, 200);
	j = v2_json_of(v64.body, v64.body_len);
	assert_shape(j, "weights", 4, w_shape);
	json_decref(j);
	na = v1_floats(&v1, "weights", a);
	nb = v2_floats(v64.body, "weights", b);
	nc = v2_floats(v32.body, "weights", c);
	nr = v2_floats(vr.body, "weights", r);
	assert_same_floats(a, na, b, nb);
	assert_same_floats(a, na, c, nc);
	assert_same_floats(a, na, r, nr);
	ck_assert(b[1] == 0.0f && b[2] == 0.0f); /* causal: query 0 sees key 0 only */
	assert_v2_as_v1(&v1, "output", v64.body, "output");
	live_resp_release(&v1);
	live_resp_release(&v64);
	live_resp_release(&v32);
	live_resp_release(&vr);
}
END_TEST

/* A BYTES batch of different word counts: padded, rows past an item's length zero. */
START_TEST(test_infer_text_batch_padded)
{
	static const size_t m_shape[] = {2, 3, 3};
	struct live_resp v1 = {0}, v2 = {0};
	float a[MAXF], b[MAXF];
	size_t na, nb;
	json_t *j;

	v2_post_json(d.port, "/v1/attention", "{\"model\":\"tiny\",\"text\":[\"a b c\",\"d\"],\"weights\":\"mean\"}",
		  &v1);
	v2_post_json(d.port, V2_INFER,
		  "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[2],"
		  "\"data\":[\"a b c\",\"d\"]}],\"outputs\":[{\"name\":\"weights_mean\"}]}",
		  &v2);
	ck_assert_int_eq(v2.status, 200);
	j = v2_json_of(v2.body, v2.body_len);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "outputs")), 1);
	assert_shape(j, "weights_mean", 3, m_shape);
	json_decref(j);
	na = v1_floats(&v1, "weights", a); /* v1 trims: 9 of item 0, then item 1's one cell */
	nb = v2_floats(v2.body, "weights_mean", b);
	ck_assert_uint_eq(na, 10);
	ck_assert_uint_eq(nb, 18);
	ck_assert(memcmp(a, b, 9 * sizeof(float)) == 0);
	ck_assert(b[9] == a[9] && b[9] == 1.0f); /* item 1: one word sees itself */
	for (size_t k = 10; k < 18; k++)
		ck_assert(b[k] == 0.0f);
	live_resp_release(&v1);
	live_resp_release(&v2);
}
END_TEST

/* outputs lists, the weights parameter, and key / value inputs. */
START_TEST(test_outputs_selection)
{
	const char *in = "\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[3,8],"
			 "\"data\":" V2_X3 "}]";
	char body[1024];
	struct live_resp r = {0};
	json_t *j;

	snprintf(body, sizeof body, "{%s,\"parameters\":{\"weights\":\"none\"}}", in);
	v2_post_json(d.port, V2_INFER, body, &r);
	j = v2_json_of(r.body, r.body_len);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "outputs")), 1);
	ck_assert_ptr_nonnull(output_of(j, "output"));
	json_decref(j);
	live_resp_release(&r);
	snprintf(body, sizeof body, "{%s,\"outputs\":[{\"name\":\"weights_mean\"},{\"name\":\"output\"}]}",
		 in);
	v2_post_json(d.port, V2_INFER, body, &r);
	j = v2_json_of(r.body, r.body_len);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "outputs")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(
			     json_array_get(json_object_get(j, "outputs"), 0), "name")),
			 "weights_mean"); /* in the order asked */
	json_decref(j);
	live_resp_release(&r);
	snprintf(body, sizeof body, "{%s,\"parameters\":{\"weights\":\"mean\"},\"outputs\":[{\"name\":\"weights\"}]}", in);
	v2_post_json(d.port, V2_INFER, body, &r);
	v2_assert_error(&r, 422, "not computed with parameters.weights 'mean'");
	live_resp_release(&r);
	snprintf(body, sizeof body, "{%s,\"outputs\":[{\"name\":\"output\"},{\"name\":\"output\"}]}", in);
	v2_post_json(d.port, V2_INFER, body, &r);
	v2_assert_error(&r, 422, "twice");
	live_resp_release(&r);
	snprintf(body, sizeof body, "{%s,\"outputs\":[{\"name\":\"scores\"}]}", in);
	v2_post_json(d.port, V2_INFER, body, &r);
	v2_assert_error(&r, 422, "/outputs/0/name");
	live_resp_release(&r);
	/* a checkpoint's output is unknown to one layer whatever the weights
	 * parameter, not blamed on it */
	snprintf(body, sizeof body, "{%s,\"outputs\":[{\"name\":\"attentions\"}]}", in);
	v2_post_json(d.port, V2_INFER, body, &r);
	v2_assert_error(&r, 422, "/outputs/0/name");
	live_resp_release(&r);
	/* cross-attention: [3, 8] queries over a [2, 8] key; weights [H, 3, 2] */
	v2_post_json(d.port, V2_INFER,
		  "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[3,8],"
		  "\"data\":" V2_X3 "},{\"name\":\"key\",\"datatype\":\"FP32\",\"shape\":[2,8],\"data\":["
		  V2_ROW0 "," V2_ROW1 "]}],\"outputs\":[{\"name\":\"weights\"}]}",
		  &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "\"shape\":[2,3,2]"));
	live_resp_release(&r);
}
END_TEST

/* ---- Triton's binary tensor extension ------------------------------------------ */

static const char bin_request[] =
    "{\"id\":\"b1\",\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[3,8],"
    "\"parameters\":{\"binary_data_size\":96}}],\"outputs\":[{\"name\":\"weights\","
    "\"parameters\":{\"binary_data\":true}},{\"name\":\"output\"},{\"name\":\"weights_mean\","
    "\"parameters\":{\"binary_data\":true}}]}";

/* Embeddings in as raw float32, weights and weights_mean out as raw float32:
 * the same bits as the JSON answer to the same numbers as JSON. */
START_TEST(test_binary_both_ways)
{
	struct live_resp bin = {0}, js = {0};
	float a[MAXF], b[MAXF];
	size_t json_len, na, nb;
	const char *ihcl;
	json_t *j;

	ck_assert(sizeof v2_x3 == 96);
	v2_post_binary(d.port, V2_INFER, bin_request, v2_x3, sizeof v2_x3, &bin); /* x86 / arm64: little-endian */
	v2_post_json(d.port, V2_INFER,
		  "{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":[3,8],"
		  "\"data\":" V2_X3 "}]}",
		  &js);
	ck_assert_int_eq(bin.status, 200);
	ck_assert_str_eq(live_header(&bin, "Content-Type"), V2_OCTET_CT);
	ihcl = live_header(&bin, "Inference-Header-Content-Length");
	ck_assert_ptr_nonnull(ihcl);
	json_len = strtoul(ihcl, NULL, 10);
	ck_assert_uint_eq(bin.body_len, json_len + (18 + 9) * sizeof(float));
	j = v2_json_of(bin.body, json_len);
	ck_assert_str_eq(json_string_value(json_object_get(j, "id")), "b1");
	ck_assert_int_eq(json_integer_value(json_object_get(
			     json_object_get(output_of(j, "weights"), "parameters"), "binary_data_size")),
			 72);
	ck_assert_ptr_null(json_object_get(output_of(j, "weights"), "data"));
	ck_assert_ptr_nonnull(json_object_get(output_of(j, "output"), "data"));
	json_decref(j);
	/* weights: 18 floats right after the JSON, then weights_mean's 9 */
	na = v2_floats(js.body, "weights", a);
	ck_assert_uint_eq(na, 18);
	memcpy(b, bin.body + json_len, 18 * sizeof(float));
	assert_same_floats(a, na, b, 18);
	na = v2_floats(js.body, "weights_mean", a);
	memcpy(b, bin.body + json_len + 72, 9 * sizeof(float));
	assert_same_floats(a, na, b, 9);
	bin.body[json_len] = '\0'; /* the JSON output, as the JSON request's */
	na = v2_floats(js.body, "output", a);
	nb = v2_floats(bin.body, "output", b);
	assert_same_floats(a, na, b, nb);
	live_resp_release(&bin);
	live_resp_release(&js);
}
END_TEST

/* BYTES and INT64 inputs from the binary section; binary_data_output. */
START_TEST(test_binary_bytes_and_int64)
{
	const char *json_text = "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[2],"
				"\"parameters\":{\"binary_data_size\":19}}]}";
	const char *json_ids = "{\"parameters\":{\"binary_data_output\":true},\"inputs\":[{\"name\":"
			       "\"tokens\",\"datatype\":\"INT64\",\"shape\":[1,3],\"parameters\":{"
			       "\"binary_data_size\":24}}]}";
	/* two strings, each a 4-byte little-endian length and its bytes: 4 + 6 + 4 + 5 */
	const unsigned char strings[] = {6, 0, 0, 0, 'a', ' ', 'b', ' ', 'c', ' ',
					 5, 0, 0, 0, 'x', ' ', ' ', 'y', ' '};
	const unsigned char ids[] = {3, 0, 0, 0, 0, 0, 0, 0, 14, 0, 0, 0, 0, 0, 0, 0,
				     15, 0, 0, 0, 0, 0, 0, 0};
	struct live_resp r = {0}, v1 = {0};
	float a[MAXF], b[MAXF];
	size_t na, json_len;

	v2_post_binary(d.port, V2_INFER, json_text, strings, sizeof strings, &r);
	v2_post_json(d.port, "/v1/attention", "{\"model\":\"tiny\",\"text\":[\"a b c \",\"x  y \"]}", &v1);
	ck_assert_msg(r.status == 200, "%s", r.body);
	ck_assert_str_eq(live_header(&r, "Content-Type"), V2_JSON_CT); /* no binary output */
	ck_assert_ptr_null(live_header(&r, "Inference-Header-Content-Length"));
	ck_assert_ptr_nonnull(strstr(r.body, "\"shape\":[2,3,8]"));
	na = v1_floats(&v1, "output", a);
	ck_assert_uint_eq(na, (3 + 2) * 8);
	ck_assert_uint_eq(v2_floats(r.body, "output", b), 2 * 3 * 8);
	ck_assert(memcmp(a, b, 24 * sizeof(float)) == 0); /* item 0 */
	ck_assert(memcmp(a + 24, b + 24, 16 * sizeof(float)) == 0); /* item 1's two rows */
	live_resp_release(&r);
	live_resp_release(&v1);
	v2_post_binary(d.port, V2_INFER, json_ids, ids, sizeof ids, &r);
	v2_post_json(d.port, "/v1/attention", "{\"model\":\"tiny\",\"tokens\":[[3,14,15]]}", &v1);
	ck_assert_int_eq(r.status, 200);
	json_len = strtoul(live_header(&r, "Inference-Header-Content-Length"), NULL, 10);
	ck_assert_uint_eq(r.body_len, json_len + (24 + 18 + 9) * sizeof(float));
	na = v1_floats(&v1, "output", a);
	memcpy(b, r.body + json_len, 24 * sizeof(float));
	assert_same_floats(a, na, b, 24);
	live_resp_release(&r);
	live_resp_release(&v1);
}
END_TEST

/* ---- the transport around it ------------------------------------------------------ */

/* CORS lets a browser send and read Inference-Header-Content-Length; metrics
 * label the v2 routes. */
START_TEST(test_cors_and_metrics)
{
	struct live_resp r = {0};

	live_request(d.port,
		     "OPTIONS " V2_INFER " HTTP/1.1\r\nHost: t\r\nOrigin: https://app.example\r\n"
		     "Access-Control-Request-Method: POST\r\n",
		     NULL, 0, &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_ptr_nonnull(strstr(live_header(&r, "Access-Control-Allow-Headers"),
				     "Inference-Header-Content-Length"));
	ck_assert_ptr_nonnull(strstr(live_header(&r, "Access-Control-Expose-Headers"),
				     "Inference-Header-Content-Length"));
	live_resp_release(&r);
	v2_post_json(d.port, V2_INFER, V2_EMB("[1,8]", V2_ROW0), &r);
	live_resp_release(&r);
	/* the daemon counts a request once its answer is sent, which the client
	 * may read first: poll */
	for (double until = live_now() + 10;;) {
		live_get(d.port, "/metrics", &r);
		if (strstr(r.body, "attnd_http_requests_total{route=\"/v2/models/{name}/infer\","
				   "code=\"200\"}") != NULL)
			break;
		ck_assert_msg(live_now() < until, "no 200 of v2 infer counted in /metrics");
		nanosleep(&(struct timespec){ .tv_nsec = 10000000 }, NULL);
	}
	live_resp_release(&r);
}
END_TEST

static Suite *v2_suite(void)
{
	Suite *s = suite_create("v2");
	TCase *meta = tcase_create("metadata");
	TCase *infer = tcase_create("infer");
	TCase *binary = tcase_create("binary");
	TCase *transport = tcase_create("transport");
	TCase *cases[] = {meta, infer, binary, transport};

	for (size_t i = 0; i < 4; i++) {
		tcase_set_timeout(cases[i], 120);
		tcase_add_checked_fixture(cases[i], start_builtins, stop_builtins);
		suite_add_tcase(s, cases[i]);
	}
	tcase_add_test(meta, test_server_metadata_and_health);
	tcase_add_test(meta, test_not_ready_and_api_key);
	tcase_add_test(meta, test_model_metadata);
	tcase_add_test(meta, test_versions_and_unknown_models);
	tcase_add_test(infer, test_infer_json_equals_v1);
	tcase_add_test(infer, test_infer_text_equals_v1);
	tcase_add_test(infer, test_infer_tokens_int64_int32);
	tcase_add_test(infer, test_infer_softcap_below_float32);
	tcase_add_test(infer, test_infer_text_batch_padded);
	tcase_add_test(infer, test_outputs_selection);
	tcase_add_test(infer, test_infer_kserve_client_body);
	tcase_add_test(infer, test_infer_int64_past_64_bits);
	tcase_add_test(binary, test_binary_both_ways);
	tcase_add_test(binary, test_binary_bytes_and_int64);
	tcase_add_test(transport, test_cors_and_metrics);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .daemon = true,
	};

	return suite_main(argc, argv, v2_suite, &opts);
}
