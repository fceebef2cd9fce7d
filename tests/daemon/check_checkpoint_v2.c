/*
 * check_checkpoint_v2.c: whole Hugging Face checkpoints through the Open
 * Inference Protocol (/v2) of the real daemon (live_daemon.h), against the
 * PyTorch oracle's answers; and the model folders that must stop start-up.
 *
 * Every folder of tests/data/checkpoints/ holding an expected.json (see the
 * README there) is loaded as a model named after the folder (--model
 * CASE=DIR), as check_checkpoint_daemon.c does for /v1. For each case:
 *   metadata   GET /v2/models/CASE: inputs tokens INT64 [-1, -1] (and text
 *              BYTES [-1] when the folder has a tokenizer.json, and
 *              token_type_ids INT64 [-1, -1] for bert and roberta), outputs
 *              output [-1, -1, E], attentions and scores [-1, -1, -1, -1, -1],
 *              q, k, v and head_outputs [-1, -1, -1, -1, D] (the parameters
 *              layers and heads choose those; their numbers are
 *              check_v2_projections')
 *   oracle     POST /v2/models/CASE/infer, tokens INT64 [2, L]: each item of
 *              each run twice (v2 tokens are rectangular, so a ragged run is
 *              sent item by item), or a text run's string as text BYTES [1]:
 *              attentions [N, B, H, L, L] and output [B, L, E] (the last
 *              hidden state) within 1e-5 abs + 1e-4 rel of the oracle. Runs
 *              with token types other than 0 are check_checkpoint_types'
 *              (the token_type_ids input)
 *   mean       parameters.weights "mean": attentions [N, B, L, L], the mean
 *              of the oracle's heads
 *   scores     the output "scores", named (never by default), in binary:
 *              [N, B, H, L, L] of the oracle's pre-softmax scores where it
 *              kept them, -inf exactly where torch has finfo(float32).min,
 *              also with weights "none"; a ragged text batch's rows past an
 *              item's length are -inf (its attentions' rows 0), in every
 *              layer
 *   binary     binary_data_output: the outputs' float32 bytes after the JSON
 *              header (Inference-Header-Content-Length), the oracle's numbers
 * and once: refusals (an embeddings input, a causal parameter, the one-layer
 * outputs "weights" and "weights_mean", an id past the vocabulary) are 422 with
 * the protocol's
 * error body {"error": "..."}. Folders that must stop start-up are
 * check_checkpoint_startup's; what Triton's Python client sends is
 * check_checkpoint_triton's. The comparisons are tests/lib/ckpt_answer.h's.
 *
 * Ownership: the case list and the expected answers are ckpt_suite, the
 * daemon ckpt_daemon (tests/lib/checkpoint_cases.h): the suite's setup loads
 * the cases, each test case's unchecked fixture starts the daemon.
 */
#include <check.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/checkpoint_cases.h"
#include "tests/lib/ckpt_answer.h"
#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

#define ROOT CKPT_ROOT
#define JSON_CT "application/json"

enum { WAIT_MS = 30000, REPEAT = 2 };

/* ---- requests and answers ----------------------------------------------- */

/* POSTs req (stolen) to /v2/models/CASE/infer; r holds the answer. */
static void infer(size_t c, json_t *req, struct live_resp *r)
{
	char path[128];
	char *body = json_dumps(req, JSON_COMPACT);

	ck_assert_ptr_nonnull(body);
	snprintf(path, sizeof path, "/v2/models/%s/infer", ckpt_suite.name[c]);
	live_post(ckpt_daemon.port, path, JSON_CT, "", body, strlen(body), r);
	free(body);
	json_decref(req);
}

/* The request of ids (an array of ints, borrowed) repeated REPEAT times:
 * tokens INT64 [REPEAT, L]; params (may be NULL) stolen. */
static json_t *tokens_request(const json_t *ids, json_t *params)
{
	size_t L = json_array_size(ids);
	json_t *data = json_array();
	json_t *req;

	for (int k = 0; k < REPEAT; k++)
		for (size_t i = 0; i < L; i++)
			json_array_append_new(
			    data, json_integer(json_integer_value(json_array_get(ids, i))));
	req = json_pack("{s:[{s:s,s:s,s:[i,i],s:o}]}", "inputs", "name", "tokens", "datatype",
			"INT64", "shape", REPEAT, (int)L, "data", data);
	ck_assert_ptr_nonnull(req);
	if (params != NULL)
		json_object_set_new(req, "parameters", params);
	return req;
}

/* A text run: text BYTES [1]. */
static json_t *text_request(const json_t *text, json_t *params)
{
	json_t *req = json_pack("{s:[{s:s,s:s,s:[i],s:[O]}]}", "inputs", "name", "text", "datatype",
				"BYTES", "shape", 1, "data", text);

	ck_assert_ptr_nonnull(req);
	if (params != NULL)
		json_object_set_new(req, "parameters", params);
	return req;
}

/* ---- the oracle through /v2 ---------------------------------------------- */

/* One request's answer against item b of run: per head or mean. */
static void check_answer(size_t c, const json_t *run, size_t b, int reps, const json_t *ans,
			 int mean, const char *what)
{
	char where[160];

	snprintf(where, sizeof where, "%s %s", ckpt_suite.name[c], what);
	ckpt_check_answer(run, b, reps, ans, mean, where);
}

/* Item b of run (or its text), with params; 200 expected. */
static json_t *ask(size_t c, const json_t *run, size_t b, json_t *params)
{
	const json_t *text = json_object_get(run, "text");
	struct live_resp r = { 0 };
	json_t *req, *v;

	req = text ? text_request(text, params)
		   : tokens_request(json_array_get(json_object_get(run, "ids"), b), params);
	infer(c, req, &r);
	ck_assert_msg(r.status == 200, "%s: status %d: %s", ckpt_suite.name[c], r.status, r.body);
	v = ckpt_parse(r.body, r.body_len);
	live_resp_release(&r);
	return v;
}

/* Every item of every run that v2 can ask (token types all 0), with fn. */
static size_t each_item(size_t c, void (*fn)(size_t c, const json_t *run, size_t b))
{
	const json_t *runs = json_object_get(ckpt_suite.expected[c], "runs");
	size_t n = 0;

	for (size_t k = 0; k < json_array_size(runs); k++) {
		const json_t *run = json_array_get(runs, k);
		size_t items = json_array_size(json_object_get(run, "ids"));

		if (json_object_get(run, "type_ids") != NULL && !ckpt_types_all_zero(run))
			continue;
		for (size_t b = 0; b < items; b++, n++)
			fn(c, run, b);
	}
	return n;
}

static int reps_of(const json_t *run)
{
	return json_object_get(run, "text") ? 1 : REPEAT;
}

static void per_head(size_t c, const json_t *run, size_t b)
{
	json_t *ans = ask(c, run, b, NULL);

	check_answer(c, run, b, reps_of(run), ans, 0, "per_head");
	json_decref(ans);
}

static void mean(size_t c, const json_t *run, size_t b)
{
	json_t *ans = ask(c, run, b, json_pack("{s:s}", "weights", "mean"));

	check_answer(c, run, b, reps_of(run), ans, 1, "mean");
	json_decref(ans);
}

START_TEST(oracle)
{
	ck_assert_uint_gt(each_item((size_t)_i, per_head), 0);
}
END_TEST

START_TEST(mean_of_heads)
{
	ck_assert_uint_gt(each_item((size_t)_i, mean), 0);
}
END_TEST

/* ---- metadata ------------------------------------------------------------ */

static void assert_meta(const json_t *t, const char *name, const char *dtype,
			const long long *shape, size_t rank)
{
	const json_t *s = json_object_get(t, "shape");

	ck_assert_str_eq(json_string_value(json_object_get(t, "name")), name);
	ck_assert_str_eq(json_string_value(json_object_get(t, "datatype")), dtype);
	ck_assert_msg(json_array_size(s) == rank, "%s: rank %zu", name, json_array_size(s));
	for (size_t i = 0; i < rank; i++)
		ck_assert_msg(json_integer_value(json_array_get(s, i)) == shape[i],
			      "%s: dim %zu is %lld, want %lld", name, i,
			      (long long)json_integer_value(json_array_get(s, i)), shape[i]);
}

START_TEST(metadata)
{
	size_t c = (size_t)_i;
	struct ckpt_geom g =
	    ckpt_geom_of(json_array_get(json_object_get(ckpt_suite.expected[c], "runs"), 0));
	int text = ckpt_case_has(ckpt_suite.name[c], "tokenizer.json");
	int types = strcmp(json_string_value(json_object_get(ckpt_suite.expected[c], "family")), "bert") == 0;
	const long long bl[] = { -1, -1 }, b[] = { -1 }, ble[] = { -1, -1, (long long)g.E };
	const long long nbhll[] = { -1, -1, -1, -1, -1 };
	long long nbhld[] = { -1, -1, -1, -1, 0 };
	static const char *const names[] = { "q", "k", "v", "head_outputs" };
	struct live_resp r = { 0 };
	char path[128];
	json_t *v, *in, *out;

	snprintf(path, sizeof path, "/v2/models/%s", ckpt_suite.name[c]);
	live_get(ckpt_daemon.port, path, &r);
	ck_assert_int_eq(r.status, 200);
	v = ckpt_parse(r.body, r.body_len);
	ck_assert_str_eq(json_string_value(json_object_get(v, "name")), ckpt_suite.name[c]);
	in = json_object_get(v, "inputs");
	out = json_object_get(v, "outputs");
	ck_assert_uint_eq(json_array_size(in), 1 + (size_t)text + (size_t)types);
	assert_meta(json_array_get(in, 0), "tokens", "INT64", bl, 2);
	if (text)
		assert_meta(json_array_get(in, 1), "text", "BYTES", b, 1);
	if (types) /* bert and roberta: segments beside the tokens */
		assert_meta(json_array_get(in, 1 + (size_t)text), "token_type_ids", "INT64", bl, 2);
	ck_assert_uint_eq(json_array_size(out), 7);
	assert_meta(json_array_get(out, 0), "output", "FP32", ble, 3);
	assert_meta(json_array_get(out, 1), "attentions", "FP32", nbhll, 5);
	assert_meta(json_array_get(out, 2), "scores", "FP32", nbhll, 5);
	json_decref(v);
	live_resp_release(&r);
	/* q, k, v and head_outputs [-1, -1, -1, -1, D], D as /v1 says (llama_headdim's
	 * is not E / H) */
	snprintf(path, sizeof path, "/v1/models/%s", ckpt_suite.name[c]);
	live_get(ckpt_daemon.port, path, &r);
	ck_assert_int_eq(r.status, 200);
	v = ckpt_parse(r.body, r.body_len);
	nbhld[4] = json_integer_value(json_object_get(v, "head_dim"));
	ck_assert_int_gt(nbhld[4], 0);
	json_decref(v);
	live_resp_release(&r);
	snprintf(path, sizeof path, "/v2/models/%s", ckpt_suite.name[c]);
	live_get(ckpt_daemon.port, path, &r);
	v = ckpt_parse(r.body, r.body_len);
	out = json_object_get(v, "outputs");
	for (size_t i = 0; i < 4; i++)
		assert_meta(json_array_get(out, 3 + i), names[i], "FP32", nbhld, 5);
	json_decref(v);
	live_resp_release(&r);
}
END_TEST

/* ---- Triton's binary tensor extension ------------------------------------ */

/* The first item v2 can ask (check_answer's) with binary_data_output: the
 * outputs' bytes, in the order of "outputs", after the JSON header. */
static void binary_item(size_t c, const json_t *run, size_t b)
{
	const json_t *text = json_object_get(run, "text");
	json_t *params = json_pack("{s:b}", "binary_data_output", 1);
	json_t *req = text ? text_request(text, params)
			   : tokens_request(json_array_get(json_object_get(run, "ids"), b), params);
	struct live_resp r = { 0 };

	json_object_set_new(req, "outputs",
			    json_pack("[{s:s},{s:s}]", "name", "output", "name", "attentions"));
	infer(c, req, &r);
	ckpt_check_binary(&r, run, b, reps_of(run), 2);
	live_resp_release(&r);
}

static int binary_done;

static void binary_first(size_t c, const json_t *run, size_t b)
{
	if (binary_done++ == 0)
		binary_item(c, run, b);
}

START_TEST(binary)
{
	binary_done = 0;
	ck_assert_uint_gt(each_item((size_t)_i, binary_first), 0);
}
END_TEST

/* ---- scores ---------------------------------------------------------------- */

/* One output of a binary answer r (its JSON header parsed into head): the
 * floats of output i. */
static void binary_output(const struct live_resp *r, size_t i, struct ckpt_flat *f)
{
	size_t json_len = strtoul(live_header(r, "Inference-Header-Content-Length"), NULL, 10);
	json_t *head = ckpt_parse(r->body, json_len);
	const json_t *outs = json_object_get(head, "outputs");
	size_t at = json_len;

	for (size_t k = 0; k <= i; k++) {
		size_t bytes = (size_t)json_integer_value(json_object_get(
		    json_object_get(json_array_get(outs, k), "parameters"), "binary_data_size"));

		ck_assert_uint_le(at + bytes, r->body_len);
		if (k == i)
			ckpt_floats_of(f, (const unsigned char *)r->body + at, bytes / 4);
		at += bytes;
	}
	json_decref(head);
}

/* Item b's scores [N, reps, H, L, L] asked alone (weights none) in binary,
 * against the oracle's: -inf exactly where torch has finfo.min. */
static void scores_item(size_t c, const json_t *run, size_t b)
{
	const json_t *text = json_object_get(run, "text");
	const json_t *sc = json_object_get(run, "scores");
	json_t *params = json_pack("{s:b,s:s}", "binary_data_output", 1, "weights", "none");
	json_t *req = text ? text_request(text, params)
			   : tokens_request(json_array_get(json_object_get(run, "ids"), b), params);
	struct live_resp r = { 0 };
	struct ckpt_flat got = { 0 }, want = { 0 };

	json_object_set_new(req, "outputs", json_pack("[{s:s}]", "name", "scores"));
	infer(c, req, &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	binary_output(&r, 0, &got);
	for (size_t l = 0; l < json_array_size(sc); l++)
		for (int k = 0; k < reps_of(run); k++)
			ckpt_flatten(&want, json_array_get(json_array_get(sc, l), b));
	ck_assert_uint_eq(got.n, want.n);
	for (size_t i = 0; i < want.n; i++) {
		if (want.x[i] <= -FLT_MAX) {
			ck_assert_msg(isinf(got.x[i]) && got.x[i] < 0,
				      "%s scores [%zu]: %g, want -inf", ckpt_suite.name[c], i, got.x[i]);
			got.x[i] = want.x[i]; /* compared */
		}
	}
	ckpt_compare(&got, &want, "scores");
	ckpt_flat_release(&got);
	ckpt_flat_release(&want);
	live_resp_release(&r);
}

static void scores_if_kept(size_t c, const json_t *run, size_t b)
{
	if (json_object_get(run, "scores") != NULL)
		scores_item(c, run, b);
}

START_TEST(scores)
{
	size_t c = (size_t)_i;
	const json_t *run0 = json_array_get(json_object_get(ckpt_suite.expected[c], "runs"), 0);
	json_t *ans = ask(c, run0, 0, NULL);
	const json_t *outs = json_object_get(ans, "outputs");

	for (size_t i = 0; i < json_array_size(outs); i++) /* not by default */
		ck_assert_str_ne(
		    json_string_value(json_object_get(json_array_get(outs, i), "name")), "scores");
	json_decref(ans);
	each_item(c, scores_if_kept);
}
END_TEST

/* A ragged text batch on gpt2_f32: rows past an item's length are -inf in
 * scores and 0 in attentions; the other rows see a key. */
START_TEST(scores_padding)
{
	json_t *req = json_pack("{s:[{s:s,s:s,s:[i],s:[s,s]}],s:[{s:s},{s:s}],s:{s:b}}", "inputs",
				"name", "text", "datatype", "BYTES", "shape", 2, "data", "a cat",
				"a", "outputs", "name", "attentions", "name", "scores",
				"parameters", "binary_data_output", 1);
	struct live_resp r = { 0 };
	struct ckpt_flat att = { 0 }, sc = { 0 };
	size_t c = 0, L = 5, N, H = 4, hidden = 0;

	while (c < ckpt_suite.n && strcmp(ckpt_suite.name[c], "gpt2_f32") != 0)
		c++;
	ck_assert_uint_lt(c, ckpt_suite.n);
	infer(c, req, &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	binary_output(&r, 0, &att);
	binary_output(&r, 1, &sc);
	ck_assert_uint_eq(att.n, sc.n);
	N = att.n / (2 * H * L * L); /* [N, 2, H, 5, 5]: "a cat" is 5 tokens, "a" 1 */
	ck_assert_uint_eq(N * 2 * H * L * L, att.n);
	for (size_t l = 0; l < N; l++)
		for (size_t h = 0; h < H; h++)
			for (size_t i = 1; i < L; i++)
				for (size_t j = 0; j < L; j++) {
					/* seek to [l, 1, h, i, j]: item 1's padded rows */
					size_t at = (((l * 2 + 1) * H + h) * L + i) * L + j;

					ck_assert(isinf(sc.x[at]) && sc.x[at] < 0);
					ck_assert_msg(att.x[at] == 0, "att [%zu] = %g", at,
						      att.x[at]);
					hidden++;
				}
	ck_assert_uint_gt(hidden, 0);
	ck_assert(!isinf(sc.x[((0 * 2 + 1) * H + 0) * L * L])); /* item 1's row 0 sees key 0 */
	ckpt_flat_release(&att);
	ckpt_flat_release(&sc);
	live_resp_release(&r);
}
END_TEST

/* ---- refusals ------------------------------------------------------------ */

/* body (stolen) on the first case is 422 with the protocol's error body, its
 * message holding want. */
static void refused(json_t *req, const char *want)
{
	struct live_resp r = { 0 };
	json_t *v;

	infer(0, req, &r);
	ck_assert_msg(r.status == 422, "status %d: %s", r.status, r.body);
	ck_assert_str_eq(live_header(&r, "Content-Type"), JSON_CT);
	v = ckpt_parse(r.body, r.body_len);
	ck_assert_msg(json_object_size(v) == 1 && json_is_string(json_object_get(v, "error")),
		      "not the v2 error shape: %s", r.body);
	ck_assert_msg(strstr(json_string_value(json_object_get(v, "error")), want) != NULL,
		      "'%s' not in %s", want, r.body);
	json_decref(v);
	live_resp_release(&r);
}

START_TEST(refusals)
{
	json_t *ids = json_pack("[i,i]", 1, 2), *far = json_pack("[i,i]", 1, 999999), *long_ids;
	json_t *req;

	refused(json_pack("{s:[{s:s,s:s,s:[i,i,i],s:[f,f]}]}", "inputs", "name", "embeddings",
			  "datatype", "FP32", "shape", 1, 1, 2, "data", 0.5, 0.5),
		"/inputs/0");
	refused(tokens_request(ids, json_pack("{s:b}", "causal", 1)),
		"parameter 'causal' does not apply to checkpoint model");
	refused(tokens_request(ids, json_pack("{s:f}", "scale", 0.5)),
		"'scale' does not apply to checkpoint model");
	refused(tokens_request(ids, json_pack("{s:i}", "xyz", 1)),
		"unknown field 'xyz' (at /parameters/xyz)");
	/* an input a checkpoint does not take is pointed at as the input, its
	 * data JSON or binary alike */
	req = tokens_request(ids, NULL);
	json_array_append_new(json_object_get(req, "inputs"),
			      json_pack("{s:s,s:s,s:[i],s:[f]}", "name", "key", "datatype", "FP32",
					"shape", 1, "data", 0.5));
	refused(req, "input 'key' does not apply: a checkpoint takes tokens or text "
		     "(and token_type_ids) (at /inputs/1)");
	/* one layer's outputs are unknown to a checkpoint, whatever the weights
	 * parameter says: the name is at fault, not the parameter */
	req = tokens_request(ids, NULL);
	json_object_set_new(req, "outputs", json_pack("[{s:s}]", "name", "weights"));
	refused(req, "output, attentions, scores, q, k, v and head_outputs (a checkpoint) (at "
		     "/outputs/0/name)");
	req = tokens_request(ids, json_pack("{s:s}", "weights", "mean"));
	json_object_set_new(req, "outputs", json_pack("[{s:s}]", "name", "weights_mean"));
	refused(req, "/outputs/0/name");
	refused(tokens_request(far, NULL), "/inputs/0");
	/* an item past the context, in flat data: the data, not its element 0 */
	long_ids = json_array();
	for (int i = 0; i < 300; i++)
		json_array_append_new(long_ids, json_integer(1));
	refused(tokens_request(long_ids, NULL), "(at /inputs/0/data)");
	json_decref(long_ids);
	json_decref(ids);
	json_decref(far);
}
END_TEST

/* The one-layer parameters at their documented defaults ask for nothing and
 * pass, as v1's do: a client that sends one parameter set to every model. */
START_TEST(layer_defaults_pass)
{
	struct live_resp r = { 0 };
	json_t *ids = json_pack("[i,i]", 1, 2);

	infer(0,
	      tokens_request(ids, json_pack("{s:b,s:s,s:s,s:f,s:s}", "causal", 0, "alignment",
					    "top_left", "positional", "none", "softcap", 0.0,
					    "weights", "per_head")),
	      &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	/* Triton's priority and timeout (tritonclient's infer(priority=, timeout=)) */
	infer(0, tokens_request(ids, json_pack("{s:i,s:i}", "priority", 1, "timeout", 100000)), &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	live_resp_release(&r);
	json_decref(ids);
}
END_TEST

static Suite *checkpoint_v2_suite(void)
{
	Suite *s = suite_create("checkpoint_v2");
	TCase *tc = tcase_create("v2");

	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, ckpt_suite_start, ckpt_suite_stop);
	tcase_add_loop_test(tc, metadata, 0, (int)ckpt_suite.n);
	tcase_add_loop_test(tc, oracle, 0, (int)ckpt_suite.n);
	tcase_add_loop_test(tc, mean_of_heads, 0, (int)ckpt_suite.n);
	tcase_add_loop_test(tc, binary, 0, (int)ckpt_suite.n);
	tcase_add_loop_test(tc, scores, 0, (int)ckpt_suite.n);
	tcase_add_test(tc, scores_padding);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, layer_defaults_pass);
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

	return suite_main(argc, argv, checkpoint_v2_suite, &opts);
}
