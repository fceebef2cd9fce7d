/*
 * check_checkpoint_daemon.c: whole Hugging Face checkpoints through the real
 * daemon (live_daemon.h), against the PyTorch oracle's answers.
 *
 * Every folder of tests/data/checkpoints/ holding an expected.json (written
 * by tests/checkpoint/oracle/make_checkpoints.py, see the README there) is
 * loaded as a model named after the folder (--model CASE=DIR). For each of
 * its runs:
 *   oracle     POST /v1/attention with the run's ids (or text): every layer's
 *              attention and the output (hidden_states[N]) within 1e-5 abs +
 *              1e-4 rel of the oracle, items of a ragged batch trimmed
 *   scores     where the oracle kept them (one case per family, and
 *              mistral's window): "scores": "masked" gives each layer's
 *              pre-softmax scores within the same tolerance of torch's,
 *              "-Infinity" exactly where torch has finfo(float32).min, and
 *              their softmax is the answer's attentions
 *   selection  layers [0] gives hidden_states[1] as output; a heads subset
 *              and "mean" are the oracle's heads and their mean (the scores
 *              of those heads, per head, with either)
 * and for each case: GET /v1/models/CASE describes the checkpoint (its
 * sliding window and the layers that use it); a sequence one past its
 * context length is 422 (RoBERTa's context is max_position_embeddings -
 * pad_token_id - 1). And once: refusals (an id past the vocabulary, an
 * empty sequence, a one-layer field, a layer out of range, a score view
 * other than masked) are 422 naming the place; scores without weights; the
 * memory check counts
 * the scores. Folders that must stop start-up are check_checkpoint_startup's.
 *
 * Ownership: the case list and the expected answers are ckpt_suite, the
 * daemon ckpt_daemon (tests/lib/checkpoint_cases.h): the suite's setup loads
 * the cases, each test case's unchecked fixture starts the daemon.
 */
#include <check.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/checkpoint_cases.h"
#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

#define ROOT CKPT_ROOT
#define ABS_TOL 1e-5
#define REL_TOL 1e-4

enum { WAIT_MS = 30000 };

/* ---- comparing --------------------------------------------------------- */

/* got and want are nested arrays of numbers of the same shape; where names
 * the place for the message. Returns the count of numbers compared. */
static size_t compare(const json_t *got, const json_t *want, const char *where)
{
	size_t n = 0;

	if (json_is_number(want)) {
		double g, w = json_number_value(want);

		ck_assert_msg(json_is_number(got), "%s: expected a number", where);
		g = json_number_value(got);
		ck_assert_msg(fabs(g - w) <= ABS_TOL + REL_TOL * fabs(w), "%s: got %.9g, want %.9g",
			      where, g, w);
		return 1;
	}
	ck_assert_msg(json_is_array(got) && json_array_size(got) == json_array_size(want),
		      "%s: expected an array of %zu", where, json_array_size(want));
	for (size_t i = 0; i < json_array_size(want); i++) {
		char child[256];

		snprintf(child, sizeof child, "%s/%zu", where, i);
		n += compare(json_array_get(got, i), json_array_get(want, i), child);
	}
	return n;
}

/* got and want are nested scores: where want is finfo(float32).min (torch's
 * hidden key) got is "-Infinity", elsewhere a number within the tolerance.
 * Returns the count of numbers compared. */
static size_t compare_scores(const json_t *got, const json_t *want, const char *where)
{
	size_t n = 0;

	if (json_is_number(want) && json_number_value(want) <= -FLT_MAX) {
		ck_assert_msg(json_is_string(got) &&
				      strcmp(json_string_value(got), "-Infinity") == 0,
			      "%s: expected \"-Infinity\" where torch hides the key", where);
		return 1;
	}
	if (json_is_number(want))
		return compare(got, want, where);
	ck_assert_msg(json_is_array(got) && json_array_size(got) == json_array_size(want),
		      "%s: expected an array of %zu", where, json_array_size(want));
	for (size_t i = 0; i < json_array_size(want); i++) {
		char child[256];

		snprintf(child, sizeof child, "%s/%zu", where, i);
		n += compare_scores(json_array_get(got, i), json_array_get(want, i), child);
	}
	return n;
}

/* A score as answered: a number, or "-Infinity". */
static double score_value(const json_t *v)
{
	if (json_is_string(v)) {
		ck_assert_str_eq(json_string_value(v), "-Infinity");
		return -INFINITY;
	}
	ck_assert_msg(json_is_number(v), "a score is a number or \"-Infinity\"");
	return json_number_value(v);
}

/* Nested answered scores and attentions of one shape: the softmax (in
 * double) of each row of scores is that row of attentions. */
static void check_softmax(const json_t *sc, const json_t *att, const char *where)
{
	size_t L = json_array_size(sc);
	double mx = -INFINITY, sum = 0;

	ck_assert_msg(json_is_array(att) && json_array_size(att) == L, "%s: shapes differ", where);
	if (L > 0 && json_is_array(json_array_get(sc, 0))) {
		for (size_t i = 0; i < L; i++)
			check_softmax(json_array_get(sc, i), json_array_get(att, i), where);
		return;
	}
	for (size_t j = 0; j < L; j++)
		mx = fmax(mx, score_value(json_array_get(sc, j)));
	ck_assert_msg(mx > -INFINITY, "%s: a row sees no key", where);
	for (size_t j = 0; j < L; j++)
		sum += exp(score_value(json_array_get(sc, j)) - mx);
	for (size_t j = 0; j < L; j++) {
		double p = exp(score_value(json_array_get(sc, j)) - mx) / sum;
		double a = json_number_value(json_array_get(att, j));

		ck_assert_msg(fabs(p - a) <= ABS_TOL + REL_TOL * fabs(a),
			      "%s: softmax of the scores %.9g, attentions %.9g", where, p, a);
	}
}

/* want[...][item][head] of every item and layer: the heads in `heads`, or
 * their mean (mean != 0), as the daemon answers them: [layer][item][...]. */
static json_t *select_heads(const json_t *want_layers, const size_t *heads, size_t nh, int mean)
{
	json_t *out = json_array();

	for (size_t l = 0; l < json_array_size(want_layers); l++) {
		const json_t *items = json_array_get(want_layers, l);
		json_t *layer = json_array();

		for (size_t b = 0; b < json_array_size(items); b++) {
			const json_t *hs = json_array_get(json_array_get(items, b), 0);
			size_t L = json_array_size(hs);
			json_t *item = json_array();

			for (size_t k = 0; !mean && k < nh; k++)
				json_array_append(item, json_array_get(json_array_get(items, b),
								       heads[k]));
			for (size_t i = 0; mean && i < L; i++) {
				json_t *row = json_array();

				for (size_t j = 0; j < L; j++) {
					double s = 0;

					for (size_t k = 0; k < nh; k++)
						s += json_number_value(json_array_get(
						    json_array_get(json_array_get(
							json_array_get(items, b), heads[k]), i), j));
					json_array_append_new(row, json_real(s / (double)nh));
				}
				json_array_append_new(item, row);
			}
			json_array_append_new(layer, item);
		}
		json_array_append_new(out, layer);
	}
	return out;
}

/* POSTs body to /v1/attention; the 200 answer parsed. */
static json_t *attention(const char *body)
{
	struct live_resp r = { 0 };
	json_t *v;

	live_post(ckpt_daemon.port, "/v1/attention", "application/json", "", body, strlen(body), &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	v = live_json(&r);
	live_resp_release(&r);
	return v;
}

/* The request of one run: its ids as a batch, or its text. */
static char *run_request(const char *model, const json_t *run, const char *extra)
{
	json_t *req = json_pack("{s:s}", "model", model);
	json_t *text = json_object_get(run, "text");
	char *body;

	if (text != NULL)
		json_object_set(req, "text", text);
	else
		json_object_set(req, "tokens", json_object_get(run, "ids"));
	if (json_object_get(run, "type_ids") != NULL) /* a text is one item, unbatched */
		json_object_set(req, "token_type_ids",
				text ? json_array_get(json_object_get(run, "type_ids"), 0)
				     : json_object_get(run, "type_ids"));
	if (extra != NULL) {
		json_t *more = json_loads(extra, 0, NULL);

		ck_assert_ptr_nonnull(more);
		json_object_update(req, more);
		json_decref(more);
	}
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return body;
}

/* The answer's tensors are per item when the request was a batch: a text run
 * (one item, unbatched) is wrapped to [item] for the comparison. */
static json_t *as_items(json_t *v, int unbatched)
{
	json_t *w;

	if (!unbatched)
		return json_incref(v);
	w = json_array();
	json_array_append(w, v);
	return w;
}

static json_t *layers_as_items(json_t *atts, int unbatched)
{
	json_t *w = json_array();

	for (size_t l = 0; l < json_array_size(atts); l++)
		json_array_append_new(w, as_items(json_array_get(atts, l), unbatched));
	return w;
}

/* The answer's projections (one {"q", "k", "v"} per layer) against a run's
 * (the same, each [items][H][n][D], k and v already per query head), of
 * heads[0 .. nh) when heads is given, else of all. */
static void check_projections(const json_t *ans, const json_t *want_pr, const size_t *heads,
			      size_t nh, int unbatched, const char *what)
{
	static const char *const keys[3] = {"q", "k", "v"};
	const json_t *got = json_object_get(ans, "projections");

	ck_assert_msg(json_array_size(got) == json_array_size(want_pr),
		      "%s: %zu layers of projections, want %zu", what, json_array_size(got),
		      json_array_size(want_pr));
	for (size_t t = 0; t < 3; t++) {
		json_t *g = json_array(), *w = json_array(), *sel;
		char where[160];

		for (size_t l = 0; l < json_array_size(want_pr); l++) {
			json_array_append_new(
			    g, as_items(json_object_get(json_array_get(got, l), keys[t]), unbatched));
			json_array_append(w, json_object_get(json_array_get(want_pr, l), keys[t]));
		}
		sel = heads ? select_heads(w, heads, nh, 0) : json_incref(w);
		snprintf(where, sizeof where, "%s %s", what, keys[t]);
		ck_assert_uint_gt(compare(g, sel, where), 0);
		json_decref(g);
		json_decref(w);
		json_decref(sel);
	}
}

/* One layer's head outputs as the oracle's numbers give them: its attentions
 * [items][H][n][n] times its v [items][H][n][D] (per query head), in double. */
static json_t *weights_times_v(const json_t *att, const json_t *v)
{
	json_t *items = json_array();

	for (size_t b = 0; b < json_array_size(att); b++) {
		json_t *heads = json_array();

		for (size_t h = 0; h < json_array_size(json_array_get(att, b)); h++) {
			const json_t *w = json_array_get(json_array_get(att, b), h);
			const json_t *vh = json_array_get(json_array_get(v, b), h);
			json_t *rows = json_array();

			for (size_t i = 0; i < json_array_size(w); i++) {
				size_t D = json_array_size(json_array_get(vh, 0));
				json_t *row = json_array();

				for (size_t d = 0; d < D; d++) {
					double acc = 0;

					for (size_t j = 0; j < json_array_size(vh); j++)
						acc += json_number_value(json_array_get(
							   json_array_get(w, i), j)) *
						       json_number_value(json_array_get(
							   json_array_get(vh, j), d));
					json_array_append_new(row, json_real(acc));
				}
				json_array_append_new(rows, row);
			}
			json_array_append_new(heads, rows);
		}
		json_array_append_new(items, heads);
	}
	return items;
}

/* The answer's head outputs (one per layer) against the oracle's weights
 * times its v, layer by layer: each head's output before o_proj. */
static void check_head_outputs(const json_t *ans, const json_t *run, int unbatched,
			       const char *what)
{
	const json_t *atts = json_object_get(run, "attentions"), *pr = json_object_get(run, "projections");
	json_t *got = layers_as_items(json_object_get(ans, "head_outputs"), unbatched);
	json_t *want = json_array();

	for (size_t l = 0; l < json_array_size(pr); l++)
		json_array_append_new(want, weights_times_v(json_array_get(atts, l),
							    json_object_get(json_array_get(pr, l), "v")));
	ck_assert_uint_eq(json_array_size(got), json_array_size(pr));
	ck_assert_uint_gt(compare(got, want, what), 0);
	json_decref(got);
	json_decref(want);
}

/* ---- the oracle, run by run -------------------------------------------- */

static void check_run(size_t c, const json_t *run, size_t k)
{
	const json_t *want_sc = json_object_get(run, "scores");
	const json_t *want_pr = json_object_get(run, "projections"); /* with the scores */
	char *body = run_request(ckpt_suite.name[c], run,
				 want_pr ? "{\"scores\": \"masked\", \"projections\": true, "
					   "\"head_outputs\": true}"
				 : want_sc ? "{\"scores\": \"masked\"}" : NULL);
	json_t *ans = attention(body);
	int unbatched = json_object_get(run, "text") != NULL;
	const json_t *hidden = json_object_get(run, "hidden");
	json_t *atts = layers_as_items(json_object_get(ans, "attentions"), unbatched);
	json_t *out = as_items(json_object_get(ans, "output"), unbatched);
	char where[128];
	size_t n;

	if (unbatched)
		compare(json_object_get(ans, "token_ids"),
			json_array_get(json_object_get(run, "ids"), 0), "token_ids");
	snprintf(where, sizeof where, "%s run %zu attentions", ckpt_suite.name[c], k);
	n = compare(atts, json_object_get(run, "attentions"), where);
	snprintf(where, sizeof where, "%s run %zu output", ckpt_suite.name[c], k);
	n += compare(out, json_array_get(hidden, json_array_size(hidden) - 1), where);
	ck_assert_uint_gt(n, 0);
	if (want_sc != NULL) {
		json_t *sc = layers_as_items(json_object_get(ans, "scores"), unbatched);

		snprintf(where, sizeof where, "%s run %zu scores", ckpt_suite.name[c], k);
		ck_assert_uint_gt(compare_scores(sc, want_sc, where), 0);
		check_softmax(sc, atts, where);
		json_decref(sc);
	} else {
		ck_assert_ptr_null(json_object_get(ans, "scores"));
	}
	snprintf(where, sizeof where, "%s run %zu projections", ckpt_suite.name[c], k);
	if (want_pr != NULL) {
		check_projections(ans, want_pr, NULL, 0, unbatched, where);
		snprintf(where, sizeof where, "%s run %zu head_outputs", ckpt_suite.name[c], k);
		check_head_outputs(ans, run, unbatched, where);
	} else {
		ck_assert_ptr_null(json_object_get(ans, "projections"));
		ck_assert_ptr_null(json_object_get(ans, "head_outputs"));
	}
	json_decref(atts);
	json_decref(out);
	json_decref(ans);
	free(body);
}

START_TEST(oracle)
{
	const json_t *runs = json_object_get(ckpt_suite.expected[_i], "runs");

	ck_assert_uint_gt(json_array_size(runs), 0);
	for (size_t k = 0; k < json_array_size(runs); k++)
		check_run((size_t)_i, json_array_get(runs, k), k);
}
END_TEST

/* layers [0]: the first layer's attention and hidden_states[1]. */
static void check_first_layer(size_t c, const json_t *run)
{
	char *body = run_request(ckpt_suite.name[c], run, "{\"layers\": [0]}");
	json_t *ans = attention(body);
	int unbatched = json_object_get(run, "text") != NULL;
	json_t *atts = layers_as_items(json_object_get(ans, "attentions"), unbatched);
	json_t *out = as_items(json_object_get(ans, "output"), unbatched);
	json_t *want = json_array();

	json_array_append(want, json_array_get(json_object_get(run, "attentions"), 0));
	ck_assert_uint_eq(json_array_size(json_object_get(ans, "layers")), 1);
	compare(atts, want, "layers [0] attentions");
	compare(out, json_array_get(json_object_get(run, "hidden"), 0), "layers [0] output");
	json_decref(want);
	json_decref(atts);
	json_decref(out);
	json_decref(ans);
	free(body);
}

/* heads [H-1, 0] (answered ascending) and their mean. */
static void check_heads(size_t c, const json_t *run, int mean)
{
	const json_t *want_layers = json_object_get(run, "attentions");
	size_t H = json_array_size(json_array_get(json_array_get(want_layers, 0), 0));
	size_t heads[2] = { 0, H - 1 };
	char extra[128];
	char *body;
	json_t *ans, *atts, *want;
	int unbatched = json_object_get(run, "text") != NULL;

	const json_t *want_sc = json_object_get(run, "scores");
	const json_t *want_pr = json_object_get(run, "projections");

	snprintf(extra, sizeof extra,
		 "{\"heads\": [%zu, 0], \"weights\": \"%s\", \"output\": false, \"scores\": "
		 "\"%s\", \"projections\": %s}",
		 H - 1, mean ? "mean" : "per_head", want_sc ? "masked" : "none",
		 want_pr ? "true" : "false");
	body = run_request(ckpt_suite.name[c], run, extra);
	ans = attention(body);
	ck_assert_ptr_null(json_object_get(ans, "output"));
	atts = layers_as_items(json_object_get(ans, "attentions"), unbatched);
	want = select_heads(want_layers, heads, H > 1 ? 2 : 1, mean);
	compare(atts, want, mean ? "mean of heads" : "heads subset");
	json_decref(want);
	if (want_sc != NULL) { /* per head, whatever weights says */
		json_t *sc = layers_as_items(json_object_get(ans, "scores"), unbatched);

		want = select_heads(want_sc, heads, H > 1 ? 2 : 1, 0);
		ck_assert_uint_gt(compare_scores(sc, want, "scores of the heads subset"), 0);
		if (!mean)
			check_softmax(sc, atts, "scores of the heads subset");
		json_decref(want);
		json_decref(sc);
	}
	if (want_pr != NULL) /* the heads' q, and the k and v each reads */
		check_projections(ans, want_pr, heads, H > 1 ? 2 : 1, unbatched,
				  "projections of the heads subset");
	json_decref(atts);
	json_decref(ans);
	free(body);
}

START_TEST(selection)
{
	const json_t *run = json_array_get(json_object_get(ckpt_suite.expected[_i], "runs"), 0);

	check_first_layer((size_t)_i, run);
	check_heads((size_t)_i, run, 0);
	check_heads((size_t)_i, run, 1);
}
END_TEST

/* ---- description and refusals ------------------------------------------ */

/* The description's window: mistral_window slides on every layer,
 * qwen2_window_layers from max_window_layers (1) on, the others not at all. */
static void check_window(const char *name, const json_t *v)
{
	const json_t *w = json_object_get(v, "sliding_window");
	char *layers = json_dumps(json_object_get(v, "sliding_layers"), JSON_COMPACT);

	if (strcmp(name, "mistral_window") == 0 || strcmp(name, "qwen2_window_layers") == 0) {
		ck_assert_int_eq(json_integer_value(w), 3);
		ck_assert_str_eq(layers, name[0] == 'm' ? "[0,1]" : "[1,2]");
	} else {
		ck_assert_msg(w == NULL && layers == NULL, "%s: a window", name);
	}
	free(layers);
}

START_TEST(describe)
{
	struct live_resp r = { 0 };
	char path[128];
	json_t *v;

	snprintf(path, sizeof path, "/v1/models/%s", ckpt_suite.name[_i]);
	live_get(ckpt_daemon.port, path, &r);
	ck_assert_int_eq(r.status, 200);
	v = live_json(&r);
	ck_assert_str_eq(json_string_value(json_object_get(v, "kind")), "checkpoint");
	ck_assert_str_eq(json_string_value(json_object_get(v, "family")),
			 json_string_value(json_object_get(ckpt_suite.expected[_i], "model_type")));
	ck_assert_int_gt(json_integer_value(json_object_get(v, "num_layers")), 0);
	ck_assert_int_gt(json_integer_value(json_object_get(v, "context_length")), 0);
	ck_assert_int_gt(json_integer_value(json_object_get(v, "weight_bytes")), 0);
	check_window(ckpt_suite.name[_i], v);
	json_decref(v);
	live_resp_release(&r);
}
END_TEST

/* body, its "@" the first case's name, is refused with status, code and
 * pointer. */
static void refused(const char *tmpl, int status, const char *code, const char *pointer)
{
	struct live_resp r = { 0 };
	const char *at = strchr(tmpl, '@');
	char body[512];
	json_t *v;

	if (at != NULL)
		snprintf(body, sizeof body, "%.*s%s%s", (int)(at - tmpl), tmpl, ckpt_suite.name[0], at + 1);
	else
		snprintf(body, sizeof body, "%s", tmpl);
	live_post(ckpt_daemon.port, "/v1/attention", "application/json", "", body, strlen(body), &r);
	live_assert_error(&r, status, code);
	v = live_json(&r);
	ck_assert_msg(strcmp(json_string_value(json_object_get(json_object_get(v, "error"),
								   "pointer")),
			     pointer) == 0,
		      "%s: pointer %s", body, r.body);
	json_decref(v);
	live_resp_release(&r);
}

START_TEST(refusals)
{
	refused("{\"model\": \"@\", \"tokens\": [1, 2, 999999]}", 422, "token_out_of_range",
		"/tokens/2");
	refused("{\"model\": \"@\", \"tokens\": [[1], []]}", 422, "empty_sequence", "/tokens/1");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"mask\": \"causal\"}", 422,
		"invalid_input", "/mask");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"head_outputs\": 1}", 422,
		"invalid_type", "/head_outputs");
	refused("{\"model\": \"@\", \"embeddings\": [[1, 2]]}", 422, "invalid_input",
		"/embeddings");
	/* both inputs: the second one found is pointed at */
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"text\": \"a\"}", 422,
		"invalid_input", "/text");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"layers\": [0, 99]}", 422,
		"out_of_range", "/layers/1");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"layers\": [0, 0]}", 422,
		"invalid_value", "/layers/1");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"heads\": [99]}", 422, "out_of_range",
		"/heads/0");
	/* 0.5 is within range: its type is at fault (1.0 is 1, OpenAPI 3.1's integer) */
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"layers\": [0, 0.5]}", 422,
		"invalid_type", "/layers/1");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"layers\": [0, 1.0, 1]}", 422,
		"invalid_value", "/layers/2");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"heads\": [\"0\"]}", 422,
		"invalid_type", "/heads/0");
	/* the first case is a BERT: its token types are checked by type, then range */
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"token_type_ids\": [0, 0.5]}", 422,
		"invalid_type", "/token_type_ids/1");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"token_type_ids\": [0, 2.0]}", 422,
		"out_of_range", "/token_type_ids/1");
	refused("{\"model\": \"@\", \"tokens\": [[1, 2]], \"token_type_ids\": [[true, 0]]}",
		422, "invalid_type", "/token_type_ids/0/0");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"token_type_ids\": [0, 99]}", 422,
		"out_of_range", "/token_type_ids/1");
	/* not an array at all is a wrong type too, not a list of the wrong length */
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"token_type_ids\": \"0 1\"}", 422,
		"invalid_type", "/token_type_ids");
	refused("{\"model\": \"@\", \"tokens\": [[1, 2]], \"token_type_ids\": {}}", 422,
		"invalid_type", "/token_type_ids");
	refused("{\"model\": \"@\", \"tokens\": [[1, 2], [3]], \"token_type_ids\": [[0, 0], 0]}",
		422, "invalid_type", "/token_type_ids/1");
	refused("{\"model\": \"@\", \"tokens\": [[1, 2], [3]], \"token_type_ids\": [[0, 0]]}",
		422, "shape_mismatch", "/token_type_ids");
	refused("{\"model\": \"@\", \"tokens\": [\"the\"]}", 422, "unknown_token", "/tokens/0");
	refused("{\"model\": \"@\", \"text\": \"no tokenizer\"}", 422, "no_tokenizer", "/text");
	refused("{\"model\": \"@\", \"tokens\": [1], \"layers\": {}}", 422, "invalid_value",
		"/layers");
	refused("{\"model\": \"@\", \"tokens\": [1], \"heads\": []}", 422, "invalid_type",
		"/heads");
	refused("{\"model\": \"tiny\", \"tokens\": [1, 2], \"layers\": \"last\"}", 422,
		"invalid_input", "/layers");
	refused("{\"model\": \"tiny\", \"tokens\": [1, 2], \"output\": false}", 422,
		"invalid_input", "/output");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"softcap\": 30}", 422,
		"invalid_input", "/softcap");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"scores\": \"raw\"}", 422,
		"invalid_value", "/scores");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"scores\": true}", 422,
		"invalid_value", "/scores");
	refused("{\"model\": \"@\", \"tokens\": [1, 2], \"projections\": \"yes\"}", 422,
		"invalid_type", "/projections");
	refused("{\"model\": \"tiny\", \"tokens\": [1, 2], \"projections\": 1}", 422,
		"invalid_type", "/projections");
}
END_TEST

/* A field's documented default asks for nothing, so either kind of model
 * takes it: a client that fills in every default works on both. */
START_TEST(defaults_on_either_kind)
{
	static const char fields[] = "\"tokens\": [1, 2], \"mask\": \"none\", \"positional\": "
				     "\"none\", \"softcap\": 0, \"layers\": \"all\", "
				     "\"output\": true, \"projections\": false}";
	const char *models[] = {ckpt_suite.name[0], "tiny"};

	for (size_t i = 0; i < 2; i++) {
		struct live_resp r = {0};
		char body[512];

		snprintf(body, sizeof body, "{\"model\": \"%s\", %s", models[i], fields);
		live_post(ckpt_daemon.port, "/v1/attention", "application/json", "", body,
			  strlen(body), &r);
		ck_assert_msg(r.status == 200, "%s: %d %s", body, r.status, r.body);
		live_resp_release(&r);
	}
}
END_TEST

/* The first oracle run of the case called name; *c its index. */
static const json_t *first_run(const char *name, size_t *c)
{
	for (*c = 0; *c < ckpt_suite.n && strcmp(ckpt_suite.name[*c], name) != 0; ++*c)
		;
	ck_assert_msg(*c < ckpt_suite.n, "no oracle case %s", name);
	return json_array_get(json_object_get(ckpt_suite.expected[*c], "runs"), 0);
}

/* "weights": "none" with "scores": "masked": the scores alone, torch's, for
 * the last layer of gpt2_f32's first run. */
START_TEST(scores_without_weights)
{
	size_t c;
	const json_t *run = first_run("gpt2_f32", &c), *want_sc = json_object_get(run, "scores");
	json_t *ans, *want;
	char *body;

	body = run_request(ckpt_suite.name[c], run,
			   "{\"weights\": \"none\", \"scores\": \"masked\", \"layers\": \"last\", "
			   "\"output\": false}");
	ans = attention(body);
	ck_assert_ptr_null(json_object_get(ans, "attentions"));
	ck_assert_ptr_null(json_object_get(ans, "output"));
	want = json_array();
	json_array_append(want, json_array_get(want_sc, json_array_size(want_sc) - 1));
	ck_assert_uint_gt(compare_scores(json_object_get(ans, "scores"), want, "scores alone"), 0);
	json_decref(want);
	json_decref(ans);
	free(body);
}
END_TEST

/* "projections": true alone ("weights": "none", no output): the last layer's
 * q, k and v of llama_f32 (grouped-query: 4 query heads read 2 key heads),
 * heads 3 and 1, answered ascending, each with the key head it reads. */
START_TEST(projections_alone)
{
	static const size_t heads[2] = {1, 3};
	size_t c;
	const json_t *run = first_run("llama_f32", &c), *want_pr = json_object_get(run, "projections");
	json_t *ans, *want;
	char *body;

	ck_assert_ptr_nonnull(want_pr);
	body = run_request(ckpt_suite.name[c], run,
			   "{\"weights\": \"none\", \"projections\": true, \"layers\": \"last\", "
			   "\"heads\": [3, 1], \"output\": false}");
	ans = attention(body);
	ck_assert_ptr_null(json_object_get(ans, "attentions"));
	ck_assert_ptr_null(json_object_get(ans, "scores"));
	ck_assert_ptr_null(json_object_get(ans, "output"));
	want = json_array();
	json_array_append(want, json_array_get(want_pr, json_array_size(want_pr) - 1));
	check_projections(ans, want, heads, 2, json_object_get(run, "text") != NULL,
			  "projections alone");
	json_decref(want);
	json_decref(ans);
	free(body);
}
END_TEST

/* Ids on a checkpoint with a tokenizer come back labelled with its pieces as
 * a person reads them (gpt2_f32's byte-level pieces: 220 is "Ġ", a space). */
START_TEST(id_labels)
{
	const char body[] = "{\"model\": \"gpt2_f32\", \"tokens\": [64, 220, 66], "
			    "\"weights\": \"none\", \"output\": false}";
	json_t *ans = attention(body);
	const json_t *tok = json_object_get(ans, "tokens");

	ck_assert_uint_eq(json_array_size(tok), 3);
	ck_assert_str_eq(json_string_value(json_array_get(tok, 0)), "a");
	ck_assert_str_eq(json_string_value(json_array_get(tok, 1)), " ");
	ck_assert_str_eq(json_string_value(json_array_get(tok, 2)), "c");
	ck_assert_ptr_null(json_object_get(ans, "attentions"));
	ck_assert_ptr_null(json_object_get(ans, "output"));
	json_decref(ans);
}
END_TEST

/* A batch of n copies of a 16-token item on gpt2_f32, as a request body,
 * with scores ("masked") or without ("none"). */
static char *batch_body(size_t n, const char *scores)
{
	json_t *req = json_pack("{s:s,s:[],s:s,s:b,s:s}", "model", "gpt2_f32", "tokens", "weights",
				"per_head", "output", 0, "scores", scores);
	char *body;

	for (size_t b = 0; b < n; b++) {
		json_t *item = json_array();

		for (int i = 0; i < 16; i++)
			json_array_append_new(item, json_integer(i + 1));
		json_array_append_new(json_object_get(req, "tokens"), item);
	}
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	return body;
}

/* The memory and work checks cover every layer, before anything runs. */
START_TEST(limits)
{
	char spec[256];
	struct live_resp r = { 0 };
	char *body;

	snprintf(spec, sizeof spec, "gpt2_f32=" ROOT "/gpt2_f32");
	{
		LIVE_DAEMON(small, "--model", spec, "--max-request-mb", "1");
		body = batch_body(100, "none"); /* 3 layers x 100 x 4 x 16 x 16 weights, as text */
		live_post(small.port, "/v1/attention", "application/json", "", body, strlen(body),
			  &r);
		live_assert_error(&r, 422, "request_too_large");
		free(body);
		body = batch_body(8, "none"); /* fits; with as many scores again it does not */
		live_post(small.port, "/v1/attention", "application/json", "", body, strlen(body),
			  &r);
		ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
		free(body);
		body = batch_body(8, "masked");
		live_post(small.port, "/v1/attention", "application/json", "", body, strlen(body),
			  &r);
		live_assert_error(&r, 422, "request_too_large");
		free(body);
		live_stop(&small);
	}
	{
		LIVE_DAEMON(cheap, "--model", spec, "--max-request-gflop", "1");
		body = batch_body(3000, "none"); /* about 2 GFLOP with the scores' share */
		live_post(cheap.port, "/v1/attention", "application/json", "", body, strlen(body),
			  &r);
		live_assert_error(&r, 422, "request_too_expensive");
		free(body);
		live_stop(&cheap);
	}
	live_resp_release(&r);
}
END_TEST

/* A sequence one past each case's context length is refused; RoBERTa's is
 * max_position_embeddings - pad_token_id - 1 (roberta_f32: 18 - 1 - 1), and
 * its oracle runs a sequence of exactly that many. */
START_TEST(context_length)
{
	struct live_resp r = { 0 };
	char path[128];
	json_t *v, *req;
	char *body;
	json_int_t P;

	snprintf(path, sizeof path, "/v1/models/%s", ckpt_suite.name[_i]);
	live_get(ckpt_daemon.port, path, &r);
	v = live_json(&r);
	P = json_integer_value(json_object_get(v, "context_length"));
	json_decref(v);
	if (strcmp(ckpt_suite.name[_i], "roberta_f32") == 0)
		ck_assert_int_eq(P, 16);
	req = json_pack("{s:s,s:[]}", "model", ckpt_suite.name[_i], "tokens");
	for (json_int_t i = 0; i <= P; i++)
		json_array_append_new(json_object_get(req, "tokens"), json_integer(1));
	body = json_dumps(req, JSON_COMPACT);
	live_post(ckpt_daemon.port, "/v1/attention", "application/json", "", body, strlen(body), &r);
	live_assert_error(&r, 422, "position_out_of_range");
	ck_assert_ptr_nonnull(strstr(r.body, "context length"));
	free(body);
	json_decref(req);
	live_resp_release(&r);
}
END_TEST

static Suite *checkpoint_suite(void)
{
	Suite *s = suite_create("checkpoint_daemon");
	TCase *tc = tcase_create("checkpoints");

	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, ckpt_suite_start, ckpt_suite_stop);
	tcase_add_loop_test(tc, oracle, 0, (int)ckpt_suite.n);
	tcase_add_loop_test(tc, selection, 0, (int)ckpt_suite.n);
	tcase_add_loop_test(tc, describe, 0, (int)ckpt_suite.n);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, defaults_on_either_kind);
	tcase_add_loop_test(tc, context_length, 0, (int)ckpt_suite.n);
	tcase_add_test(tc, id_labels);
	tcase_add_test(tc, scores_without_weights);
	tcase_add_test(tc, projections_alone);
	tcase_add_test(tc, limits);
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

	return suite_main(argc, argv, checkpoint_suite, &opts);
}
