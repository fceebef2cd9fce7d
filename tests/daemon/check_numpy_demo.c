/*
 * check_numpy_demo.c: the built-in model numpy-demo (models/numpy-demo,
 * api/builtin_layers.h) through the real daemon (live_daemon.h): the numpy
 * demo's text answers the demo's own numbers. The expected values are the
 * golden fixture seed_demo_000 (tests/data/fixtures/mha), which
 * make_fixtures.py computed by running the demo's code in float64, apart
 * from models/numpy-demo/make_model.py that wrote the built-in weights: its
 * output, per-head weights, each head's Q, K and V, each head's output
 * before the heads are joined (the demo's head_outputs), and the word each word
 * attends to most in each head (the lines the demo prints). Also: a --model
 * of the same name stands in the built-in one's place, and --no-builtins
 * leaves it out.
 *
 * Ownership: each test starts and stops its own daemon.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

#define FIXTURE "tests/data/fixtures/mha/seed_demo_000.json"
#define OTHER "tests/data/fixtures/safetensors/mha_f32.safetensors" /* 4 heads, no vocab */

static const char demo_request[] =
    "{\"model\":\"numpy-demo\",\"text\":\"나는 맛있는 사과를 먹었다\","
    "\"weights\":\"per_head\",\"projections\":true,\"head_outputs\":true}";

enum { N_MAX = 64 };

/* The numbers of nested arrays v, row-major, into x[N_MAX]; their count. */
static size_t flatten(const json_t *v, double *x, size_t n)
{
	size_t i;
	json_t *e;

	if (json_is_number(v)) {
		ck_assert_uint_lt(n, N_MAX);
		x[n] = json_number_value(v);
		return n + 1;
	}
	ck_assert_msg(json_is_array(v), "expected nested arrays of numbers");
	json_array_foreach(v, i, e)
		n = flatten(e, x, n);
	return n;
}

/* got (nested arrays) equals want (the fixture's flat list) within 1e-5
 * + 1e-5 |want|: the built-in weights are the demo's float64 ones rounded
 * to float32. */
static void assert_near(const char *what, const json_t *got, const json_t *want)
{
	double g[N_MAX], w[N_MAX];
	size_t ng = flatten(got, g, 0), nw = flatten(want, w, 0);

	ck_assert_msg(ng == nw && ng > 0, "%s: %zu numbers, the demo has %zu", what, ng, nw);
	for (size_t i = 0; i < ng; i++)
		ck_assert_msg(fabs(g[i] - w[i]) <= 1e-5 + 1e-5 * fabs(w[i]),
			      "%s[%zu]: %.9g, the demo has %.9g", what, i, g[i], w[i]);
}

static json_t *load_fixture(void)
{
	json_error_t e;
	json_t *fx = json_load_file(FIXTURE, 0, &e);

	ck_assert_msg(fx != NULL, "%s: %s", FIXTURE, e.text);
	return fx;
}

/* The answer to the demo's request on a daemon started with args. */
static json_t *ask(const char *const *args, int want_status)
{
	struct live_daemon d;
	struct live_resp r = { 0 };
	json_t *body;

	live_start(&d, args);
	live_post(d.port, "/v1/attention", "application/json", "", demo_request,
		  strlen(demo_request), &r);
	ck_assert_msg(r.status == want_status, "status %d: %s", r.status, r.body);
	body = live_json(&r);
	live_resp_release(&r);
	live_stop(&d);
	return body;
}

START_TEST(answers_the_demo)
{
	json_t *fx = load_fixture(), *a = ask(NULL, 200);
	const json_t *want = json_object_get(fx, "expected");
	const json_t *proj = json_object_get(a, "projections");
	const json_t *weights = json_object_get(a, "weights");
	const json_t *argmax = json_object_get(fx, "argmax");

	ck_assert(json_equal(json_object_get(a, "tokens"), json_object_get(fx, "tokens")));
	assert_near("output", json_object_get(a, "output"), json_object_get(want, "out"));
	assert_near("weights", weights, json_object_get(want, "weights"));
	assert_near("q", json_object_get(proj, "q"), json_object_get(want, "q"));
	assert_near("k", json_object_get(proj, "k"), json_object_get(want, "k"));
	assert_near("v", json_object_get(proj, "v"), json_object_get(want, "v"));
	/* "Head 합치기": each head's output, [H, L, d_k], before W_O */
	assert_near("head_outputs", json_object_get(a, "head_outputs"),
		    json_object_get(want, "head_outputs"));
	/* "나는 → 맛있는에 주목 (52.7%)": the key each query attends to most */
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 4; i++) {
			double row[N_MAX];
			size_t best = 0, n;

			n = flatten(json_array_get(json_array_get(weights, h), i), row, 0);
			ck_assert_uint_eq(n, 4);
			for (size_t j = 1; j < n; j++)
				if (row[j] > row[best])
					best = j;
			ck_assert_uint_eq(best, (size_t)json_integer_value(
							json_array_get(argmax, h * 4 + i)));
		}
	json_decref(a);
	json_decref(fx);
}
END_TEST

START_TEST(a_model_of_its_name_stands_in)
{
	const char *args[] = { "--model", "numpy-demo=" OTHER ",heads=4", NULL };
	struct live_daemon d;
	struct live_resp r = { 0 };
	json_t *m;

	live_start(&d, args);
	live_get(d.port, "/v1/models/numpy-demo", &r);
	ck_assert_int_eq(r.status, 200);
	m = live_json(&r);
	ck_assert_str_eq(json_string_value(json_object_get(m, "source")), "file:" OTHER);
	ck_assert_int_eq(json_integer_value(json_object_get(m, "num_heads")), 4);
	json_decref(m);
	live_resp_release(&r);
	live_stop(&d);
}
END_TEST

START_TEST(no_builtins_leaves_it_out)
{
	const char *args[] = { "--no-builtins", "--model", "other=" OTHER ",heads=4", NULL };
	json_t *a = ask(args, 404);

	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(a, "error"), "code")),
			 "model_not_found");
	json_decref(a);
}
END_TEST

static Suite *numpy_demo_suite(void)
{
	Suite *s = suite_create("numpy_demo");
	TCase *tc = tcase_create("numpy-demo");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, answers_the_demo);
	tcase_add_test(tc, a_model_of_its_name_stands_in);
	tcase_add_test(tc, no_builtins_leaves_it_out);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = { .daemon = true };

	return suite_main(argc, argv, numpy_demo_suite, &opts);
}
