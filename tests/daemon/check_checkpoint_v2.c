/*
 * check_checkpoint_v2.c: whole Hugging Face checkpoints through the Open
 * Inference Protocol (/v2) of the real daemon (live_daemon.h), against the
 * PyTorch oracle's answers; and the model folders that must stop start-up.
 *
 * Every folder of tests/data/checkpoints/ holding an expected.json (see the
 * README there) is loaded as a model named after the folder (--model
 * CASE=DIR), as check_checkpoint_daemon.c does for /v1. For each case:
 *   metadata   GET /v2/models/CASE: inputs tokens INT64 [-1, -1] (and text
 *              BYTES [-1] when the folder has a tokenizer.json), outputs
 *              output [-1, -1, E], attentions and scores [N, -1, H, -1, -1]
 *   oracle     POST /v2/models/CASE/infer, tokens INT64 [2, L]: each item of
 *              each run twice (v2 tokens are rectangular, so a ragged run is
 *              sent item by item), or a text run's string as text BYTES [1]:
 *              attentions [N, B, H, L, L] and output [B, L, E] (the last
 *              hidden state) within 1e-5 abs + 1e-4 rel of the oracle. Runs
 *              with token types other than 0 are left to /v1 (v2 has no
 *              token_type_ids input)
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
 *   triton     the bytes tritonclient.http's infer sends (no Content-Type;
 *              binary tokens after Inference-Header-Content-Length; outputs
 *              asked in binary, as JSON, or by binary_data_output), on the
 *              first tokens item: the oracle's numbers either way; a
 *              Content-Type that is present but wrong is still 415
 * and once: refusals (an embeddings input, a causal parameter, the one-layer
 * output "weights", an id past the vocabulary) are 422 with the protocol's
 * error body {"error": "..."}. Folders that must stop start-up are
 * check_checkpoint_startup's.
 *
 * Ownership: the case list and the expected answers are this file's statics,
 * made in setup and released in teardown; the daemon is the test case's (an
 * unchecked fixture).
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
#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

#define ROOT CKPT_ROOT
#define ABS_TOL 1e-5
#define REL_TOL 1e-4
#define JSON_CT "application/json"

enum { WAIT_MS = 30000, REPEAT = 2 };

static struct ckpt_cases cc;
static struct live_daemon daemon_;

/* ---- the cases and the daemon ------------------------------------------ */

static int setup(void)
{
	return ckpt_cases_load(&cc);
}

static void teardown(void)
{
	ckpt_cases_release(&cc);
}

/* One daemon for the test case: every folder as a model named after it. */
static void start_daemon(void)
{
	ckpt_cases_start(&cc, &daemon_);
}

static void stop_daemon(void)
{
	live_stop(&daemon_);
}

/* ---- numbers, flat ------------------------------------------------------ */

/* A growable array of doubles: a tensor's numbers, outermost first. */
struct flat {
	double *x;
	size_t n, cap;
};

static void flat_push(struct flat *f, double v)
{
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 1024;
		f->x = realloc(f->x, f->cap * sizeof(double));
		ck_assert_ptr_nonnull(f->x);
	}
	f->x[f->n++] = v;
}

/* Appends the numbers of nested arrays v, in order. */
static void flatten(struct flat *f, const json_t *v)
{
	if (json_is_number(v)) {
		flat_push(f, json_number_value(v));
		return;
	}
	ck_assert_msg(json_is_array(v), "expected.json: not an array of numbers");
	for (size_t i = 0; i < json_array_size(v); i++)
		flatten(f, json_array_get(v, i));
}

static void flat_release(struct flat *f)
{
	free(f->x);
	memset(f, 0, sizeof(*f));
}

static void compare(const struct flat *got, const struct flat *want, const char *where)
{
	ck_assert_msg(got->n == want->n, "%s: %zu numbers, want %zu", where, got->n, want->n);
	for (size_t i = 0; i < want->n; i++) {
		double g = got->x[i], w = want->x[i];

		ck_assert_msg(fabs(g - w) <= ABS_TOL + REL_TOL * fabs(w),
			      "%s [%zu]: got %.9g, want %.9g", where, i, g, w);
	}
}

/* ---- requests and answers ----------------------------------------------- */

static json_t *parse(const char *text, size_t len)
{
	json_error_t jerr;
	json_t *v = json_loadb(text, len, 0, &jerr);

	ck_assert_msg(v != NULL, "answer is not JSON: %s", jerr.text);
	return v;
}

/* POSTs req (stolen) to /v2/models/CASE/infer; r holds the answer. */
static void infer(size_t c, json_t *req, struct live_resp *r)
{
	char path[128];
	char *body = json_dumps(req, JSON_COMPACT);

	ck_assert_ptr_nonnull(body);
	snprintf(path, sizeof path, "/v2/models/%s/infer", cc.name[c]);
	live_post(daemon_.port, path, JSON_CT, "", body, strlen(body), r);
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
			json_array_append_new(data, json_integer(json_integer_value(
							json_array_get(ids, i))));
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
	json_t *req = json_pack("{s:[{s:s,s:s,s:[i],s:[O]}]}", "inputs", "name", "text",
				"datatype", "BYTES", "shape", 1, "data", text);

	ck_assert_ptr_nonnull(req);
	if (params != NULL)
		json_object_set_new(req, "parameters", params);
	return req;
}

/* The output called name of a 200 answer v. */
static const json_t *output_of(const json_t *v, const char *name)
{
	const json_t *outs = json_object_get(v, "outputs");

	for (size_t i = 0; i < json_array_size(outs); i++) {
		const json_t *o = json_array_get(outs, i);

		if (strcmp(json_string_value(json_object_get(o, "name")), name) == 0)
			return o;
	}
	ck_abort_msg("no output '%s'", name);
	return NULL;
}

/* o's shape is want[rank]. */
static void assert_shape(const json_t *o, const size_t *want, size_t rank, const char *where)
{
	const json_t *shape = json_object_get(o, "shape");

	ck_assert_msg(json_array_size(shape) == rank, "%s: rank %zu, want %zu", where,
		      json_array_size(shape), rank);
	for (size_t i = 0; i < rank; i++)
		ck_assert_msg((size_t)json_integer_value(json_array_get(shape, i)) == want[i],
			      "%s: dim %zu is %lld, want %zu", where, i,
			      (long long)json_integer_value(json_array_get(shape, i)), want[i]);
	ck_assert_str_eq(json_string_value(json_object_get(o, "datatype")), "FP32");
}

/* ---- what the oracle says ------------------------------------------------ */

/* A run's geometry: N layers, H heads, E channels, from its numbers. */
struct geom {
	size_t N, H, E;
};

static struct geom geom_of(const json_t *run)
{
	const json_t *att = json_object_get(run, "attentions");
	const json_t *hidden = json_object_get(run, "hidden");
	struct geom g;

	g.N = json_array_size(att);
	g.H = json_array_size(json_array_get(json_array_get(att, 0), 0));
	g.E = json_array_size(json_array_get(json_array_get(json_array_get(hidden, 0), 0), 0));
	return g;
}

/* Whether run's token types (bert_f32) are all 0, as v2 runs them. */
static int types_all_zero(const json_t *run)
{
	struct flat f = { 0 };
	int zero = 1;

	flatten(&f, json_object_get(run, "type_ids"));
	for (size_t i = 0; i < f.n; i++)
		zero = zero && f.x[i] == 0;
	flat_release(&f);
	return zero;
}

/* Item b's attentions [N, reps, H, L, L] (mean: [N, reps, L, L]). */
static void want_attentions(struct flat *f, const json_t *run, size_t b, int reps, int mean)
{
	const json_t *att = json_object_get(run, "attentions");

	for (size_t l = 0; l < json_array_size(att); l++) {
		const json_t *heads = json_array_get(json_array_get(att, l), b);
		size_t H = json_array_size(heads);
		size_t L = json_array_size(json_array_get(heads, 0));

		for (int k = 0; k < reps; k++) {
			if (!mean) {
				flatten(f, heads);
				continue;
			}
			for (size_t i = 0; i < L; i++)
				for (size_t j = 0; j < L; j++) {
					double s = 0;

					for (size_t h = 0; h < H; h++)
						s += json_number_value(json_array_get(
						    json_array_get(json_array_get(heads, h), i), j));
					flat_push(f, s / (double)H);
				}
		}
	}
}

/* Item b's last hidden state, reps times: [reps, L, E]. */
static void want_output(struct flat *f, const json_t *run, size_t b, int reps)
{
	const json_t *hidden = json_object_get(run, "hidden");
	const json_t *last = json_array_get(hidden, json_array_size(hidden) - 1);

	for (int k = 0; k < reps; k++)
		flatten(f, json_array_get(last, b));
}

/* ---- the oracle through /v2 ---------------------------------------------- */

/* One request's answer against item b of run: per head or mean. */
static void check_answer(size_t c, const json_t *run, size_t b, int reps, const json_t *ans,
			 int mean, const char *what)
{
	struct geom g = geom_of(run);
	size_t L = json_array_size(json_array_get(json_object_get(run, "ids"), b));
	size_t att_shape[5] = { g.N, (size_t)reps, g.H, L, L };
	size_t mean_shape[4] = { g.N, (size_t)reps, L, L };
	size_t out_shape[3] = { (size_t)reps, L, g.E };
	const json_t *att = output_of(ans, "attentions"), *out = output_of(ans, "output");
	struct flat got = { 0 }, want = { 0 };
	char where[160];

	snprintf(where, sizeof where, "%s %s item %zu attentions", cc.name[c], what, b);
	if (mean)
		assert_shape(att, mean_shape, 4, where);
	else
		assert_shape(att, att_shape, 5, where);
	flatten(&got, json_object_get(att, "data"));
	want_attentions(&want, run, b, reps, mean);
	compare(&got, &want, where);
	flat_release(&got);
	flat_release(&want);

	snprintf(where, sizeof where, "%s %s item %zu output", cc.name[c], what, b);
	assert_shape(out, out_shape, 3, where);
	flatten(&got, json_object_get(out, "data"));
	want_output(&want, run, b, reps);
	compare(&got, &want, where);
	flat_release(&got);
	flat_release(&want);
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
	ck_assert_msg(r.status == 200, "%s: status %d: %s", cc.name[c], r.status, r.body);
	v = parse(r.body, r.body_len);
	live_resp_release(&r);
	return v;
}

/* Every item of every run that v2 can ask (token types all 0), with fn. */
static size_t each_item(size_t c, void (*fn)(size_t c, const json_t *run, size_t b))
{
	const json_t *runs = json_object_get(cc.expected[c], "runs");
	size_t n = 0;

	for (size_t k = 0; k < json_array_size(runs); k++) {
		const json_t *run = json_array_get(runs, k);
		size_t items = json_array_size(json_object_get(run, "ids"));

		if (json_object_get(run, "type_ids") != NULL && !types_all_zero(run))
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

static void assert_meta(const json_t *t, const char *name, const char *dtype, const long long *shape,
			size_t rank)
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
	struct geom g = geom_of(json_array_get(json_object_get(cc.expected[c], "runs"), 0));
	int text = ckpt_case_has(cc.name[c], "tokenizer.json");
	const long long bl[] = { -1, -1 }, b[] = { -1 }, ble[] = { -1, -1, (long long)g.E };
	const long long nbhll[] = { (long long)g.N, -1, (long long)g.H, -1, -1 };
	struct live_resp r = { 0 };
	char path[128];
	json_t *v, *in, *out;

	snprintf(path, sizeof path, "/v2/models/%s", cc.name[c]);
	live_get(daemon_.port, path, &r);
	ck_assert_int_eq(r.status, 200);
	v = parse(r.body, r.body_len);
	ck_assert_str_eq(json_string_value(json_object_get(v, "name")), cc.name[c]);
	in = json_object_get(v, "inputs");
	out = json_object_get(v, "outputs");
	ck_assert_uint_eq(json_array_size(in), text ? 2 : 1);
	assert_meta(json_array_get(in, 0), "tokens", "INT64", bl, 2);
	if (text)
		assert_meta(json_array_get(in, 1), "text", "BYTES", b, 1);
	ck_assert_uint_eq(json_array_size(out), 3);
	assert_meta(json_array_get(out, 0), "output", "FP32", ble, 3);
	assert_meta(json_array_get(out, 1), "attentions", "FP32", nbhll, 5);
	assert_meta(json_array_get(out, 2), "scores", "FP32", nbhll, 5);
	json_decref(v);
	live_resp_release(&r);
}
END_TEST

/* ---- Triton's binary tensor extension ------------------------------------ */

/* The little-endian float32s at p[0 .. n) as doubles. */
static void floats_of(struct flat *f, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
			     (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
		float x;

		memcpy(&x, &u, sizeof x);
		flat_push(f, x);
	}
}

/* r, a 200 answer with binary outputs, against item b of run (reps times):
 * the JSON header's Inference-Header-Content-Length bytes, then each output's
 * float32 bytes in the order of "outputs"; want is the number of outputs. */
static void check_binary(const struct live_resp *r, const json_t *run, size_t b, int reps,
			 size_t want_outs)
{
	const char *ihcl;
	size_t json_len, at;
	json_t *head, *outs;

	ck_assert_msg(r->status == 200, "status %d: %s", r->status, r->body);
	ck_assert_str_eq(live_header(r, "Content-Type"), "application/octet-stream");
	ihcl = live_header(r, "Inference-Header-Content-Length");
	ck_assert_ptr_nonnull(ihcl);
	json_len = strtoul(ihcl, NULL, 10);
	ck_assert_uint_le(json_len, r->body_len);
	head = parse(r->body, json_len);
	outs = json_object_get(head, "outputs");
	ck_assert_uint_eq(json_array_size(outs), want_outs);
	at = json_len;
	for (size_t i = 0; i < want_outs; i++) {
		const json_t *o = json_array_get(outs, i);
		const char *name = json_string_value(json_object_get(o, "name"));
		size_t bytes = (size_t)json_integer_value(
		    json_object_get(json_object_get(o, "parameters"), "binary_data_size"));
		struct flat got = { 0 }, want = { 0 };

		ck_assert_ptr_nonnull(name);
		ck_assert_ptr_null(json_object_get(o, "data"));
		ck_assert_uint_le(at + bytes, r->body_len);
		floats_of(&got, (const unsigned char *)r->body + at, bytes / 4);
		if (strcmp(name, "output") == 0)
			want_output(&want, run, b, reps);
		else if (strcmp(name, "attentions") == 0)
			want_attentions(&want, run, b, reps, 0);
		else
			ck_abort_msg("unexpected output '%s'", name);
		compare(&got, &want, name);
		flat_release(&got);
		flat_release(&want);
		at += bytes;
	}
	ck_assert_uint_eq(at, r->body_len);
	json_decref(head);
}

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
	check_binary(&r, run, b, reps_of(run), 2);
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
static void binary_output(const struct live_resp *r, size_t i, struct flat *f)
{
	size_t json_len = strtoul(live_header(r, "Inference-Header-Content-Length"), NULL, 10);
	json_t *head = parse(r->body, json_len);
	const json_t *outs = json_object_get(head, "outputs");
	size_t at = json_len;

	for (size_t k = 0; k <= i; k++) {
		size_t bytes = (size_t)json_integer_value(json_object_get(
		    json_object_get(json_array_get(outs, k), "parameters"), "binary_data_size"));

		ck_assert_uint_le(at + bytes, r->body_len);
		if (k == i)
			floats_of(f, (const unsigned char *)r->body + at, bytes / 4);
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
	struct flat got = { 0 }, want = { 0 };

	json_object_set_new(req, "outputs", json_pack("[{s:s}]", "name", "scores"));
	infer(c, req, &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	binary_output(&r, 0, &got);
	for (size_t l = 0; l < json_array_size(sc); l++)
		for (int k = 0; k < reps_of(run); k++)
			flatten(&want, json_array_get(json_array_get(sc, l), b));
	ck_assert_uint_eq(got.n, want.n);
	for (size_t i = 0; i < want.n; i++) {
		if (want.x[i] <= -FLT_MAX) {
			ck_assert_msg(isinf(got.x[i]) && got.x[i] < 0, "%s scores [%zu]: %g, want -inf",
				      cc.name[c], i, got.x[i]);
			got.x[i] = want.x[i]; /* compared */
		}
	}
	compare(&got, &want, "scores");
	flat_release(&got);
	flat_release(&want);
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
	const json_t *run0 = json_array_get(json_object_get(cc.expected[c], "runs"), 0);
	json_t *ans = ask(c, run0, 0, NULL);
	const json_t *outs = json_object_get(ans, "outputs");

	for (size_t i = 0; i < json_array_size(outs); i++) /* not by default */
		ck_assert_str_ne(json_string_value(json_object_get(json_array_get(outs, i), "name")),
				 "scores");
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
	struct flat att = { 0 }, sc = { 0 };
	size_t c = 0, L = 5, N, H = 4, hidden = 0;

	while (c < cc.n && strcmp(cc.name[c], "gpt2_f32") != 0)
		c++;
	ck_assert_uint_lt(c, cc.n);
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
					ck_assert_msg(att.x[at] == 0, "att [%zu] = %g", at, att.x[at]);
					hidden++;
				}
	ck_assert_uint_gt(hidden, 0);
	ck_assert(!isinf(sc.x[((0 * 2 + 1) * H + 0) * L * L])); /* item 1's row 0 sees key 0 */
	flat_release(&att);
	flat_release(&sc);
	live_resp_release(&r);
}
END_TEST

/* ---- what Triton's Python client sends ----------------------------------- */

/*
 * tritonclient.http's InferenceServerClient.infer, byte for byte (client
 * repository, src/python/library/tritonclient/http/: _utils.py
 * _get_inference_request, _infer_input.py, _requested_output.py; the HTTP
 * layer is geventhttpclient's HTTPClient._build_request):
 *   headers   User-Agent (geventhttpclient's default), then the caller's:
 *             Inference-Header-Content-Length when some input is binary,
 *             then Host and Content-Length. No Content-Type, no Accept and
 *             no Accept-Encoding (unless a compression algorithm is asked).
 *   JSON      python-rapidjson's dumps, compact, keys in insertion order:
 *             inputs [{"name","shape","datatype","parameters":
 *             {"binary_data_size"}}] (or "data" instead, for
 *             set_data_from_numpy(binary_data=False)); outputs [{"name",
 *             "parameters":{"binary_data"}}] when outputs are given, else
 *             "parameters":{"binary_data_output":true}; no "id" for "".
 *   binary    each binary input's numpy tobytes(): little-endian here.
 */
#define TRITON_UA "python/gevent-http-client-2.3.3"

/* The first tokens item (not text; token types 0) of the first case: *c,
 * *run, *b. */
static void first_tokens_item(size_t *c, const json_t **run, size_t *b)
{
	for (*c = 0; *c < cc.n; (*c)++) {
		const json_t *runs = json_object_get(cc.expected[*c], "runs");

		for (size_t k = 0; k < json_array_size(runs); k++) {
			*run = json_array_get(runs, k);
			*b = 0;
			if (json_object_get(*run, "text") == NULL &&
			    (json_object_get(*run, "type_ids") == NULL || types_all_zero(*run)))
				return;
		}
	}
	ck_abort_msg("no case with a tokens run");
}

/* ids (borrowed) REPEAT times, as numpy int64 tobytes(): [REPEAT, L]
 * little-endian; *len their count. malloc'd. */
static unsigned char *int64_bytes(const json_t *ids, size_t *len)
{
	size_t L = json_array_size(ids), at = 0;
	unsigned char *p;

	*len = (size_t)REPEAT * L * 8;
	p = malloc(*len);
	ck_assert_ptr_nonnull(p);
	for (int k = 0; k < REPEAT; k++)
		for (size_t i = 0; i < L; i++) {
			uint64_t u = (uint64_t)json_integer_value(json_array_get(ids, i));

			for (int byte = 0; byte < 8; byte++)
				p[at++] = (unsigned char)(u >> (8 * byte));
		}
	return p;
}

/* The tokens tensor as JSON "data" (binary_data=False): [REPEAT * L] ints. */
static void int64_data(char *out, size_t cap, const json_t *ids)
{
	size_t at = 0;

	for (int k = 0; k < REPEAT; k++)
		for (size_t i = 0; i < json_array_size(ids); i++) {
			int n = snprintf(out + at, cap - at, "%s%lld", at ? "," : "",
					 (long long)json_integer_value(json_array_get(ids, i)));

			ck_assert(n > 0 && (size_t)n < cap - at);
			at += (size_t)n;
		}
}

/* POSTs the client's bytes for case c: json, then bin_len bytes of bin
 * (Inference-Header-Content-Length only when bin_len > 0, as the client
 * does); content_type, when not NULL, is added (the client never does). */
static void triton_post(size_t c, const char *content_type, const char *json,
			const unsigned char *bin, size_t bin_len, struct live_resp *r)
{
	char head[1024], ihcl[64] = "", ct[128] = "";
	size_t json_len = strlen(json);
	char *msg;
	int fd, n;

	if (bin_len > 0)
		snprintf(ihcl, sizeof ihcl, "Inference-Header-Content-Length: %zu\r\n", json_len);
	if (content_type != NULL)
		snprintf(ct, sizeof ct, "Content-Type: %s\r\n", content_type);
	n = snprintf(head, sizeof head,
		     "POST /v2/models/%s/infer HTTP/1.1\r\nUser-Agent: " TRITON_UA "\r\n%s"
		     "Host: 127.0.0.1:%u\r\n%sContent-Length: %zu\r\n\r\n",
		     cc.name[c], ihcl, daemon_.port, ct, json_len + bin_len);
	ck_assert(n > 0 && (size_t)n < sizeof head);
	/* in one send: a refusal from the headers alone may close the
	 * connection before a second send */
	msg = malloc((size_t)n + json_len + bin_len);
	ck_assert_ptr_nonnull(msg);
	memcpy(msg, head, (size_t)n);
	memcpy(msg + n, json, json_len);
	if (bin_len > 0)
		memcpy(msg + (size_t)n + json_len, bin, bin_len);
	fd = live_connect(daemon_.port);
	live_send_all(fd, msg, (size_t)n + json_len + bin_len);
	live_read_response(fd, r);
	close(fd);
	free(msg);
}

/* The JSON header: tokens [REPEAT, L] binary (bytes > 0) or as data, then
 * the outputs part, `tail`. */
static void triton_json(char *out, size_t cap, const json_t *ids, size_t bytes, const char *tail)
{
	char data[8192];
	size_t L = json_array_size(ids);
	int n;

	if (bytes > 0) {
		n = snprintf(out, cap,
			     "{\"inputs\":[{\"name\":\"tokens\",\"shape\":[%d,%zu],"
			     "\"datatype\":\"INT64\",\"parameters\":{\"binary_data_size\":%zu}}]%s}",
			     REPEAT, L, bytes, tail);
	} else {
		int64_data(data, sizeof data, ids);
		n = snprintf(out, cap,
			     "{\"inputs\":[{\"name\":\"tokens\",\"shape\":[%d,%zu],"
			     "\"datatype\":\"INT64\",\"data\":[%s]}]%s}",
			     REPEAT, L, data, tail);
	}
	ck_assert(n > 0 && (size_t)n < cap);
}

/* Both outputs asked, in binary: application/octet-stream, the oracle's. */
#define TAIL_BINARY                                                                                \
	",\"outputs\":[{\"name\":\"output\",\"parameters\":{\"binary_data\":true}},"             \
	"{\"name\":\"attentions\",\"parameters\":{\"binary_data\":true}}]"
/* InferRequestedOutput(name, binary_data=False): JSON data. */
#define TAIL_JSON                                                                                  \
	",\"outputs\":[{\"name\":\"output\",\"parameters\":{\"binary_data\":false}},"            \
	"{\"name\":\"attentions\",\"parameters\":{\"binary_data\":false}}]"
/* outputs=None: every output, in binary. */
#define TAIL_DEFAULT ",\"parameters\":{\"binary_data_output\":true}"

START_TEST(triton_client)
{
	size_t c, b, bin_len;
	const json_t *run, *ids;
	struct live_resp r = { 0 };
	unsigned char *bin;
	char json[16384];
	json_t *ans;

	first_tokens_item(&c, &run, &b);
	ids = json_array_get(json_object_get(run, "ids"), b);
	bin = int64_bytes(ids, &bin_len);

	/* binary in, binary out */
	triton_json(json, sizeof json, ids, bin_len, TAIL_BINARY);
	triton_post(c, NULL, json, bin, bin_len, &r);
	check_binary(&r, run, b, REPEAT, 2);

	/* binary in, JSON out */
	triton_json(json, sizeof json, ids, bin_len, TAIL_JSON);
	triton_post(c, NULL, json, bin, bin_len, &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	ck_assert_str_eq(live_header(&r, "Content-Type"), JSON_CT);
	ck_assert_ptr_null(live_header(&r, "Inference-Header-Content-Length"));
	ans = parse(r.body, r.body_len);
	check_answer(c, run, b, REPEAT, ans, 0, "triton json");
	json_decref(ans);

	/* no outputs named: binary_data_output, every output in binary */
	triton_json(json, sizeof json, ids, bin_len, TAIL_DEFAULT);
	triton_post(c, NULL, json, bin, bin_len, &r);
	check_binary(&r, run, b, REPEAT, 2);

	/* JSON alone (binary_data=False everywhere): no Inference-Header-... */
	triton_json(json, sizeof json, ids, 0, TAIL_JSON);
	triton_post(c, NULL, json, NULL, 0, &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	ans = parse(r.body, r.body_len);
	check_answer(c, run, b, REPEAT, ans, 0, "triton json only");
	json_decref(ans);

	/* a Content-Type that is there is still checked */
	triton_json(json, sizeof json, ids, bin_len, TAIL_BINARY);
	triton_post(c, "text/plain", json, bin, bin_len, &r);
	ck_assert_int_eq(r.status, 415);
	triton_post(c, "application/octet-stream", json, bin, bin_len, &r);
	check_binary(&r, run, b, REPEAT, 2);

	free(bin);
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
	v = parse(r.body, r.body_len);
	ck_assert_msg(json_object_size(v) == 1 && json_is_string(json_object_get(v, "error")),
		      "not the v2 error shape: %s", r.body);
	ck_assert_msg(strstr(json_string_value(json_object_get(v, "error")), want) != NULL,
		      "'%s' not in %s", want, r.body);
	json_decref(v);
	live_resp_release(&r);
}

START_TEST(refusals)
{
	json_t *ids = json_pack("[i,i]", 1, 2), *far = json_pack("[i,i]", 1, 999999);
	json_t *req;

	refused(json_pack("{s:[{s:s,s:s,s:[i,i,i],s:[f,f]}]}", "inputs", "name", "embeddings",
			  "datatype", "FP32", "shape", 1, 1, 2, "data", 0.5, 0.5),
		"/inputs/0");
	refused(tokens_request(ids, json_pack("{s:b}", "causal", 1)), "causal");
	req = tokens_request(ids, NULL);
	json_object_set_new(req, "outputs", json_pack("[{s:s}]", "name", "weights"));
	refused(req, "weights");
	refused(tokens_request(far, NULL), "/inputs/0");
	json_decref(ids);
	json_decref(far);
}
END_TEST

static Suite *checkpoint_v2_suite(void)
{
	Suite *s = suite_create("checkpoint_v2");
	TCase *tc = tcase_create("v2");

	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, start_daemon, stop_daemon);
	tcase_add_loop_test(tc, metadata, 0, (int)cc.n);
	tcase_add_loop_test(tc, oracle, 0, (int)cc.n);
	tcase_add_loop_test(tc, mean_of_heads, 0, (int)cc.n);
	tcase_add_loop_test(tc, binary, 0, (int)cc.n);
	tcase_add_loop_test(tc, scores, 0, (int)cc.n);
	tcase_add_test(tc, scores_padding);
	tcase_add_test(tc, triton_client);
	tcase_add_test(tc, refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
		.daemon = true,
		.setup = setup,
		.teardown = teardown,
	};

	return suite_main(argc, argv, checkpoint_v2_suite, &opts);
}
