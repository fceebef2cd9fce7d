/*
 * check_checkpoint_types.c: BERT's token types through the Open Inference
 * Protocol: the optional input token_type_ids (INT64 or INT32, the shape of
 * tokens, JSON data or binary) on the real daemon (live_daemon.h) serving the
 * oracle's folders (checkpoint_cases.h):
 *   oracle     every bert_f32 item whose types are not all 0, as tokens
 *              [1, L] and token_type_ids [1, L]: attentions and output
 *              within 1e-5 abs + 1e-4 rel of PyTorch (ckpt_answer.h); the
 *              same as INT32 binary data
 *   v1         the /v2 answer equals /v1/attention's with the same token
 *              types, number for number, and differs from the /v2 answer
 *              with every type 0
 *   metadata   GET /v2/models/CASE lists token_type_ids INT64 [-1, -1] for
 *              bert and roberta folders, and not for the others
 *   refusals   422 naming the input: on a gpt2 or llama model, with text,
 *              a shape other than the tokens', a type past type_vocab_size
 *              (its element's place), an FP32 tensor; on a one-layer model
 *
 * Ownership: the case list and the expected answers are ckpt_suite, the
 * daemon ckpt_daemon (tests/lib/checkpoint_cases.h): the suite's setup loads
 * the cases, each test case's unchecked fixture starts the daemon.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/checkpoint_cases.h"
#include "tests/lib/ckpt_answer.h"
#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

#define JSON_CT "application/json"

/* The index of case `name` (asserted present). */
static size_t case_named(const char *name)
{
	for (size_t c = 0; c < ckpt_suite.n; c++)
		if (strcmp(ckpt_suite.name[c], name) == 0)
			return c;
	ck_abort_msg("no case %s", name);
	return 0;
}

/* POSTs body (stolen) to path; r holds the answer. */
static void post(const char *path, json_t *body, struct live_resp *r)
{
	char *text = json_dumps(body, JSON_COMPACT);

	ck_assert_ptr_nonnull(text);
	live_post(ckpt_daemon.port, path, JSON_CT, "", text, strlen(text), r);
	free(text);
	json_decref(body);
}

/* The /v2 request of one item: tokens INT64 [1, L] = ids, and when types is
 * not NULL token_type_ids [1, its length] of dtype (INT64 or INT32) as JSON
 * data. */
static json_t *v2_request(const json_t *ids, const json_t *types, const char *dtype)
{
	size_t L = json_array_size(ids);
	json_t *req = json_pack("{s:[{s:s,s:s,s:[i,i],s:O}]}", "inputs", "name", "tokens",
				"datatype", "INT64", "shape", 1, (int)L, "data", ids);

	ck_assert_ptr_nonnull(req);
	if (types != NULL)
		json_array_append_new(json_object_get(req, "inputs"),
				      json_pack("{s:s,s:s,s:[i,i],s:O}", "name", "token_type_ids",
						"datatype", dtype, "shape", 1,
						(int)json_array_size(types), "data", types));
	return req;
}

/* A 200 answer of /v2/models/CASE/infer to req (stolen), parsed. */
static json_t *v2_ask(size_t c, json_t *req)
{
	struct live_resp r = { 0 };
	char path[128];
	json_t *v;

	snprintf(path, sizeof path, "/v2/models/%s/infer", ckpt_suite.name[c]);
	post(path, req, &r);
	ck_assert_msg(r.status == 200, "%s: status %d: %s", ckpt_suite.name[c], r.status, r.body);
	v = live_json(&r);
	live_resp_release(&r);
	return v;
}

/* Each item of bert_f32's runs whose types are not all 0, with fn. */
static size_t each_typed_item(void (*fn)(size_t c, const json_t *run, size_t b))
{
	size_t c = case_named("bert_f32"), n = 0;
	const json_t *runs = json_object_get(ckpt_suite.expected[c], "runs");

	for (size_t k = 0; k < json_array_size(runs); k++) {
		const json_t *run = json_array_get(runs, k);
		const json_t *types = json_object_get(run, "type_ids");

		if (types == NULL || ckpt_types_all_zero(run))
			continue;
		for (size_t b = 0; b < json_array_size(types); b++, n++)
			fn(c, run, b);
	}
	return n;
}

/* ---- against the oracle ----------------------------------------------------- */

static void oracle_item(size_t c, const json_t *run, size_t b)
{
	const json_t *ids = json_array_get(json_object_get(run, "ids"), b);
	const json_t *types = json_array_get(json_object_get(run, "type_ids"), b);
	json_t *ans = v2_ask(c, v2_request(ids, types, "INT64"));

	ckpt_check_answer(run, b, 1, ans, 0, "bert_f32 token_type_ids");
	json_decref(ans);
}

START_TEST(oracle)
{
	ck_assert_uint_gt(each_typed_item(oracle_item), 0);
}
END_TEST

/* ids and types as INT64 and INT32 little-endian bytes, after the header. */
static void binary_item(size_t c, const json_t *run, size_t b)
{
	const json_t *ids = json_array_get(json_object_get(run, "ids"), b);
	const json_t *types = json_array_get(json_object_get(run, "type_ids"), b);
	size_t L = json_array_size(ids), at = 0, n;
	unsigned char *body = malloc(1024 + 12 * L);
	char head[1024], path[128], ihcl[64];
	struct live_resp r = { 0 };
	json_t *ans;
	int len;

	ck_assert_ptr_nonnull(body);
	len = snprintf(head, sizeof head,
		       "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[1,%zu],"
		       "\"parameters\":{\"binary_data_size\":%zu}},{\"name\":\"token_type_ids\","
		       "\"datatype\":\"INT32\",\"shape\":[1,%zu],\"parameters\":"
		       "{\"binary_data_size\":%zu}}]}",
		       L, 8 * L, L, 4 * L);
	ck_assert(len > 0 && (size_t)len < sizeof head);
	memcpy(body, head, (size_t)len);
	at = (size_t)len;
	for (size_t i = 0; i < L; i++) /* tokens: int64 little-endian */
		for (int k = 0; k < 8; k++)
			body[at++] = (unsigned char)((uint64_t)json_integer_value(
							 json_array_get(ids, i)) >> (8 * k));
	for (size_t i = 0; i < L; i++) /* token_type_ids: int32 little-endian */
		for (int k = 0; k < 4; k++)
			body[at++] = (unsigned char)((uint32_t)json_integer_value(
							 json_array_get(types, i)) >> (8 * k));
	n = at;
	snprintf(ihcl, sizeof ihcl, "Inference-Header-Content-Length: %d\r\n", len);
	snprintf(path, sizeof path, "/v2/models/%s/infer", ckpt_suite.name[c]);
	live_post(ckpt_daemon.port, path, "application/octet-stream", ihcl, body, n, &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	ans = live_json(&r);
	ckpt_check_answer(run, b, 1, ans, 0, "bert_f32 binary INT32 token_type_ids");
	json_decref(ans);
	live_resp_release(&r);
	free(body);
}

START_TEST(binary)
{
	ck_assert_uint_gt(each_typed_item(binary_item), 0);
}
END_TEST

/* ---- against /v1 ----------------------------------------------------------- */

/* The v1 answer's attentions [N][H][L][L] and output [L][E] of one
 * unbatched item, flat, against v2's [N, 1, H, L, L] and [1, L, E]. */
static void v1_item(size_t c, const json_t *run, size_t b)
{
	const json_t *ids = json_array_get(json_object_get(run, "ids"), b);
	const json_t *types = json_array_get(json_object_get(run, "type_ids"), b);
	json_t *v2 = v2_ask(c, v2_request(ids, types, "INT64"));
	json_t *zero = json_array(), *v2_zero, *v1;
	struct ckpt_flat a1 = { 0 }, a2 = { 0 }, o1 = { 0 }, o2 = { 0 }, az = { 0 };
	struct live_resp r = { 0 };
	double most = 0;

	post("/v1/attention",
	     json_pack("{s:s,s:O,s:O}", "model", ckpt_suite.name[c], "tokens", ids, "token_type_ids", types),
	     &r);
	ck_assert_msg(r.status == 200, "v1: status %d: %s", r.status, r.body);
	v1 = live_json(&r);
	for (size_t i = 0; i < json_array_size(ids); i++)
		json_array_append_new(zero, json_integer(0));
	v2_zero = v2_ask(c, v2_request(ids, zero, "INT64"));
	ckpt_flatten(&a1, json_object_get(v1, "attentions"));
	ckpt_flatten(&o1, json_object_get(v1, "output"));
	ckpt_flatten(&a2, json_object_get(ckpt_output_of(v2, "attentions"), "data"));
	ckpt_flatten(&o2, json_object_get(ckpt_output_of(v2, "output"), "data"));
	ckpt_flatten(&az, json_object_get(ckpt_output_of(v2_zero, "attentions"), "data"));
	ck_assert_uint_eq(a1.n, a2.n);
	ck_assert_uint_eq(o1.n, o2.n);
	for (size_t i = 0; i < a1.n; i++)
		ck_assert_msg(a1.x[i] == a2.x[i], "attentions [%zu]: v1 %.9g, v2 %.9g", i,
			      a1.x[i], a2.x[i]);
	for (size_t i = 0; i < o1.n; i++)
		ck_assert_msg(o1.x[i] == o2.x[i], "output [%zu]: v1 %.9g, v2 %.9g", i, o1.x[i],
			      o2.x[i]);
	for (size_t i = 0; i < a2.n; i++)
		most = fmax(most, fabs(a2.x[i] - az.x[i]));
	ck_assert_msg(most > 1e-3, "types all 0 answer the same (max diff %g)", most);
	ckpt_flat_release(&a1);
	ckpt_flat_release(&a2);
	ckpt_flat_release(&o1);
	ckpt_flat_release(&o2);
	ckpt_flat_release(&az);
	json_decref(zero);
	json_decref(v1);
	json_decref(v2);
	json_decref(v2_zero);
	live_resp_release(&r);
}

START_TEST(same_as_v1)
{
	ck_assert_uint_gt(each_typed_item(v1_item), 0);
}
END_TEST

/* ---- metadata and refusals ------------------------------------------------ */

START_TEST(metadata)
{
	size_t c = (size_t)_i;
	const char *family = json_string_value(json_object_get(ckpt_suite.expected[c], "family"));
	struct live_resp r = { 0 };
	const json_t *in, *last;
	char path[128];
	json_t *v;

	snprintf(path, sizeof path, "/v2/models/%s", ckpt_suite.name[c]);
	live_get(ckpt_daemon.port, path, &r);
	ck_assert_int_eq(r.status, 200);
	v = live_json(&r);
	in = json_object_get(v, "inputs");
	last = json_array_get(in, json_array_size(in) - 1);
	if (strcmp(family, "bert") == 0) {
		ck_assert_str_eq(json_string_value(json_object_get(last, "name")),
				 "token_type_ids");
		ck_assert_str_eq(json_string_value(json_object_get(last, "datatype")), "INT64");
		ck_assert_uint_eq(json_array_size(json_object_get(last, "shape")), 2);
	} else {
		ck_assert_str_ne(json_string_value(json_object_get(last, "name")),
				 "token_type_ids");
	}
	json_decref(v);
	live_resp_release(&r);
}
END_TEST

/* req (stolen) to model `name` is 422 with the v2 error body holding want
 * and, when ptr is not NULL, ptr. */
static void refused(const char *name, json_t *req, const char *want, const char *ptr)
{
	struct live_resp r = { 0 };
	char path[128];
	const char *msg;
	json_t *v;

	snprintf(path, sizeof path, "/v2/models/%s/infer", name);
	post(path, req, &r);
	ck_assert_msg(r.status == 422, "%s: status %d: %s", name, r.status, r.body);
	v = live_json(&r);
	msg = json_string_value(json_object_get(v, "error"));
	ck_assert_msg(msg != NULL && strstr(msg, want) != NULL, "'%s' not in %s", want, r.body);
	ck_assert_msg(ptr == NULL || strstr(msg, ptr) != NULL, "'%s' not in %s", ptr, r.body);
	json_decref(v);
	live_resp_release(&r);
}

START_TEST(refusals)
{
	json_t *ids = json_pack("[i,i,i]", 3, 4, 5), *types = json_pack("[i,i,i]", 0, 1, 0);
	json_t *far = json_pack("[i,i,i]", 0, 2, 0), *two = json_pack("[i,i]", 0, 1);
	json_t *req;

	refused("gpt2_f32", v2_request(ids, types, "INT64"), "token_type_ids", "gpt2");
	refused("llama_f32", v2_request(ids, types, "INT32"),
		"input 'token_type_ids' applies to bert and roberta checkpoints", "llama");
	refused("bert_f32", v2_request(ids, far, "INT64"), "type_vocab_size", "/inputs/1/data/1");
	refused("roberta_f32", v2_request(ids, types, "INT64"), "type_vocab_size",
		"/inputs/1/data/1");
	refused("bert_f32", v2_request(ids, two, "INT64"), "the shape of tokens",
		"/inputs/1/shape");
	refused("bert_f32", v2_request(ids, types, "FP32"), "INT32 or INT64", "/inputs/1/datatype");
	refused("base", v2_request(ids, types, "INT64"), "token_type_ids", "/inputs/1");
	req = json_pack("{s:[{s:s,s:s,s:[i],s:[s]},{s:s,s:s,s:[i,i],s:O}]}", "inputs", "name",
			"text", "datatype", "BYTES", "shape", 1, "data", "the cats", "name",
			"token_type_ids", "datatype", "INT64", "shape", 1, 3, "data", types);
	refused("bert_f32", req, "send token ids", "/inputs/1");
	json_decref(ids);
	json_decref(types);
	json_decref(far);
	json_decref(two);
}
END_TEST

static Suite *checkpoint_types_suite(void)
{
	Suite *s = suite_create("checkpoint_types");
	TCase *tc = tcase_create("types");

	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, ckpt_suite_start, ckpt_suite_stop);
	tcase_add_test(tc, oracle);
	tcase_add_test(tc, binary);
	tcase_add_test(tc, same_as_v1);
	tcase_add_loop_test(tc, metadata, 0, (int)ckpt_suite.n);
	tcase_add_test(tc, refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
		.daemon = true,
		.setup = ckpt_suite_load,
		.teardown = ckpt_suite_release,
	};

	return suite_main(argc, argv, checkpoint_types_suite, &opts);
}
