/*
 * check_api_sdpa.c: POST /v1/sdpa, through api_handle (api_harness.h): a few
 * cases by hand, and the 76 ONNX Attention conformance cases of
 * tests/data/onnx-attention (or $ATTN_ONNX_DIR) sent as requests,
 * once through api_handle and once over HTTP to the real daemon (live_daemon.h:
 * build/attnd on an ephemeral loopback port), so /v1/sdpa is the ONNX
 * Attention operator over HTTP.
 *
 * The cases are read by onnx_case.c, as for check_onnx, and turned into
 * requests here; their outputs are compared by its rule: float32 within
 * 1e-5, float16 within 1 float16 ulp after rounding ours, present_key /
 * present_value exactly. The cases by hand agree with the maths within
 * 1e-6 + 1e-5 |x|.
 * Ownership: whatever a test allocates is in the harness's arena, the loaded
 * cases too (released by the teardown).
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/api_harness.h"
#include "tests/lib/api_tensor.h"
#include "tests/lib/case_files.h"
#include "tests/lib/live_daemon.h"
#include "tests/lib/onnx_case.h"
#include "tests/lib/suite_main.h"

/* The case files, listed by main. */
static struct case_list cases;

/* ------------------------------------------------------------------------ */
/* ONNX conformance cases as requests                                       */
/* ------------------------------------------------------------------------ */

static void case_free(void *c)
{
	onnx_case_release(c);
	free(c);
}

/* Loads case name, asserting it reads; released by the teardown. */
static struct onnx_case *load(const char *name)
{
	struct onnx_case *c = calloc(1, sizeof(*c));

	ck_assert_msg(c != NULL, "out of memory");
	harness_defer(case_free, c);
	ck_assert_msg(onnx_case_load(c, cases.dir, name) == 0, "%s: %s", name, c->error);
	return c;
}

/* The cells of t as JSON: booleans, integers, or tensor_json_cell floats. */
static json_t *cells_json(const struct onnx_tensor *t)
{
	json_t *arr = json_array();

	for (size_t k = 0; k < t->n; k++) {
		if (t->dtype == ONNX_BOOL)
			json_array_append_new(arr, json_boolean(t->b[k]));
		else if (t->dtype == ONNX_INT64)
			json_array_append_new(arr, json_integer((json_int_t)t->i[k]));
		else
			json_array_append_new(arr, tensor_json_cell(t->f[k]));
	}
	return arr;
}

/* {"shape", "data"} of a case tensor, without its dtype. */
static json_t *tensor_json(const struct onnx_tensor *t)
{
	return tensor_json_obj(cells_json(t), t->rank, t->shape);
}

/* A case tensor as nested arrays. */
static json_t *nested_json(const struct onnx_tensor *t)
{
	json_t *data = cells_json(t), *out;
	size_t pos = 0;

	out = tensor_json_nest(data, t->shape, t->rank, &pos);
	json_decref(data);
	return out;
}

/* An ONNX Attention case (that folder's README) as a /v1/sdpa request. */
static json_t *case_request(const struct onnx_case *c)
{
	static const char *const views[] = {"raw", "softcap", "masked", "softmax"};
	const struct onnx_attrs *at = &c->attr;
	json_t *r = json_pack("{s:o, s:o, s:o}", "q", tensor_json(&c->in[ONNX_IN_Q]), "k",
			      tensor_json(&c->in[ONNX_IN_K]), "v", tensor_json(&c->in[ONNX_IN_V]));

	/* masks travel as nested arrays, the other tensors as objects */
	if (c->in[ONNX_IN_MASK].present)
		json_object_set_new(r, "attn_mask", nested_json(&c->in[ONNX_IN_MASK]));
	if (c->in[ONNX_IN_PAST_K].present) {
		json_object_set_new(r, "past_key", tensor_json(&c->in[ONNX_IN_PAST_K]));
		json_object_set_new(r, "past_value", tensor_json(&c->in[ONNX_IN_PAST_V]));
	}
	if (c->in[ONNX_IN_NONPAD].present)
		json_object_set_new(r, "kv_lengths", cells_json(&c->in[ONNX_IN_NONPAD]));
	if (at->is_causal != 0)
		json_object_set_new(r, "is_causal", json_true());
	if (at->q_num_heads != 0)
		json_object_set_new(r, "num_heads", json_integer(at->q_num_heads));
	if (at->kv_num_heads != 0)
		json_object_set_new(r, "num_kv_heads", json_integer(at->kv_num_heads));
	if (at->scale != 0)
		json_object_set_new(r, "scale", json_real(at->scale));
	if (at->softcap != 0)
		json_object_set_new(r, "softcap", json_real(at->softcap));
	if (c->out[ONNX_OUT_QK].present) {
		ck_assert(at->qk_mode >= 0 && at->qk_mode < 4);
		json_object_set_new(r, "scores", json_string(views[at->qk_mode]));
	}
	return r;
}

/* The answer's tensor key against the case's output slot: the same shape, then onnx_case_compare.
 */
static void compare_slot(struct onnx_case *c, const struct answer *a, const char *key,
			 enum onnx_out slot, int exact)
{
	const struct onnx_tensor *want = &c->out[slot];
	struct flat got = tensor_at(a, key);

	ck_assert_msg(got.rank == want->rank &&
			  memcmp(got.shape, want->shape, got.rank * sizeof(size_t)) == 0,
		      "%s: %s has another shape", c->name, key);
	ck_assert_msg(onnx_case_compare(c, "api", slot, got.x, exact) == 0, "%s: %s", c->name,
		      c->error);
}

START_TEST(test_onnx_count)
{
	ck_assert_msg(cases.n == ONNX_CASE_COUNT, "%zu ONNX cases in %s, want %d%s", cases.n,
		      cases.dir, ONNX_CASE_COUNT, cases.error);
}
END_TEST

START_TEST(test_onnx_case)
{
	struct onnx_case *c = load(cases.names[_i]);
	struct answer a = harness_call_json(API_ROUTE_SDPA, case_request(c));

	ck_assert_msg(a.status == 200, "%s: %d %.300s", c->name, a.status, a.text);
	compare_slot(c, &a, "output", ONNX_OUT_Y, 0);
	if (c->out[ONNX_OUT_PRESENT_K].present) {
		compare_slot(c, &a, "present_key", ONNX_OUT_PRESENT_K, 1);
		compare_slot(c, &a, "present_value", ONNX_OUT_PRESENT_V, 1);
	}
	if (c->out[ONNX_OUT_QK].present)
		compare_slot(c, &a, "scores", ONNX_OUT_QK, 0);
}
END_TEST

/* The same cases over HTTP: one daemon for the test case (unchecked fixture). */
static struct live_daemon daemon_http;

static void daemon_start(void)
{
	live_start(&daemon_http, NULL);
}

static void daemon_stop(void)
{
	live_stop(&daemon_http);
}

START_TEST(test_onnx_case_http)
{
	struct onnx_case *c = load(cases.names[_i]);
	json_t *req = case_request(c);
	char *body = json_dumps(req, JSON_COMPACT);
	struct live_resp r = {0};
	struct answer a;
	json_error_t jerr;

	ck_assert_ptr_nonnull(body);
	live_post(daemon_http.port, "/v1/sdpa", "application/json", "", body, strlen(body), &r);
	free(body);
	json_decref(req);
	memset(&a, 0, sizeof(a));
	a.status = r.status;
	a.text = r.body;
	a.json = json_loadb(r.body, r.body_len, 0, &jerr);
	ck_assert_msg(a.status == 200 && a.json != NULL, "%s over HTTP: %d %.300s", c->name,
		      r.status, r.body);
	compare_slot(c, &a, "output", ONNX_OUT_Y, 0);
	if (c->out[ONNX_OUT_PRESENT_K].present) {
		compare_slot(c, &a, "present_key", ONNX_OUT_PRESENT_K, 1);
		compare_slot(c, &a, "present_value", ONNX_OUT_PRESENT_V, 1);
	}
	if (c->out[ONNX_OUT_QK].present)
		compare_slot(c, &a, "scores", ONNX_OUT_QK, 0);
	json_decref(a.json);
	live_resp_release(&r);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* By hand                                                                  */
/* ------------------------------------------------------------------------ */

/* q = k = v = I [1, 1, 2, 2]: the answer by hand. */
START_TEST(test_sdpa_by_hand)
{
	struct answer none = harness_sdpa(SDPA_QKV "}");
	struct answer per = harness_sdpa(SDPA_QKV ",\"weights\":\"per_head\"}");
	struct answer mean =
	    harness_sdpa(SDPA_QKV ",\"weights\":\"mean\",\"encoding\":\"base64\"}");
	double s = 1 / sqrt(2.0), p = exp(s) / (exp(s) + 1);
	const float want[4] = {(float)p, (float)(1 - p), (float)(1 - p), (float)p};
	const json_t *shape;
	struct flat o, w;

	harness_expect_ok(&none);
	shape = harness_field(none.json, "shape");
	ck_assert_int_eq(harness_int_field(shape, "batch"), 1);
	ck_assert_int_eq(harness_int_field(shape, "num_heads"), 1);
	ck_assert_int_eq(harness_int_field(shape, "key_length"), 2);
	ck_assert_int_eq(harness_int_field(shape, "head_dim"), 2);
	ck_assert_ptr_null(json_object_get(none.json, "weights"));
	ck_assert_ptr_null(json_object_get(none.json, "present_key"));
	o = tensor_at(&none, "output");
	tensor_assert_shape("output", &o, 4, 1, 1, 2, 2);
	tensor_assert_near_n("output", o.x, want, 4, SAME_ABS, SAME_REL);
	harness_expect_ok(&per);
	w = tensor_at(&per, "weights");
	tensor_assert_shape("weights", &w, 4, 1, 1, 2, 2);
	tensor_assert_near_n("weights", w.x, want, 4, SAME_ABS, SAME_REL);
	harness_expect_ok(&mean);
	w = tensor_at(&mean, "weights");
	tensor_assert_shape("mean", &w, 3, 1, 2, 2);
	tensor_assert_near_n("mean", w.x, want, 4, SAME_ABS, SAME_REL);
}
END_TEST

/* 3D [B, L, H * D] splits heads head-major, as the 4D [B, H, L, D] equivalent
 * (which may name its head counts too). */
START_TEST(test_sdpa_3d_layout)
{
	struct answer d3 =
	    harness_sdpa("{\"q\":[[[1,2,3,4],[5,6,7,8]]],\"k\":[[[1,0,0,1],[0,1,1,0]]],"
			 "\"v\":[[[1,2,3,4],[5,6,7,8]]],\"num_heads\":2}");
	struct answer d4 =
	    harness_sdpa("{\"q\":[[[[1,2],[5,6]],[[3,4],[7,8]]]],\"k\":[[[[1,0],[0,1]],[[0,1],"
			 "[1,0]]]],\"v\":[[[[1,2],[5,6]],[[3,4],[7,8]]]]}");
	struct answer d4_named = harness_sdpa(
	    "{\"q\":[[[[1,2],[5,6]],[[3,4],[7,8]]]],\"k\":[[[[1,0],[0,1]],[[0,1],"
	    "[1,0]]]],\"v\":[[[[1,2],[5,6]],[[3,4],[7,8]]]],\"num_heads\":2,\"num_kv_heads\":2}");
	struct flat a, b;

	harness_expect_ok(&d3);
	harness_expect_ok(&d4);
	tensor_assert_same(&d4_named, &d4, "output", 0, 0); /* 4D: the heads it carries, named */
	a = tensor_at(&d3, "output"); /* [1, 2, 4] */
	b = tensor_at(&d4, "output"); /* [1, 2, 2, 2] */
	tensor_assert_shape("3D output", &a, 3, 1, 2, 4);
	for (size_t l = 0; l < 2; l++)
		for (size_t h = 0; h < 2; h++)
			tensor_assert_near_n("3D vs 4D", a.x + l * 4 + h * 2, b.x + (h * 2 + l) * 2,
					     2, 0, 0);
}
END_TEST

/* A boolean attn_mask as {"shape", "data"} is read as boolean, as the nested form. */
START_TEST(test_sdpa_bool_mask_object)
{
	struct answer nested = harness_sdpa(SDPA_QKV ",\"attn_mask\":[[true,false],[true,true]]}");
	struct answer obj =
	    harness_sdpa(SDPA_QKV ",\"attn_mask\":{\"shape\":[2,2],\"data\":[true,false,"
				  "true,true]}}");

	harness_expect_ok(&nested);
	harness_expect_ok(&obj);
	tensor_assert_same(&nested, &obj, "output", 0, 0);
}
END_TEST

/* One query, three keys: a mask's last axis of size 1 broadcasts over every
 * key (numpy's and PyTorch's reading; ONNX's reference pads it as any short
 * axis, the one shape where they differ), one of size 2 hides key 2. */
START_TEST(test_sdpa_short_mask_axis)
{
#define QKV3 "{\"q\":[[[[1,0]]]],\"k\":[[[[1,0],[0,1],[1,1]]]],\"v\":[[[[1,2],[3,4],[5,6]]]]"
	struct answer none = harness_sdpa(QKV3 "}");
	struct answer all = harness_sdpa(QKV3 ",\"attn_mask\":[[true]]}");
	struct answer hidden = harness_sdpa(QKV3 ",\"attn_mask\":[[false]]}");
	struct answer short2 = harness_sdpa(QKV3 ",\"attn_mask\":[[true,true]]}");
	struct answer full3 = harness_sdpa(QKV3 ",\"attn_mask\":[[true,true,false]]}");
	struct flat z;
#undef QKV3

	harness_expect_ok(&all);
	harness_expect_ok(&short2);
	tensor_assert_same(&all, &none, "output", 0, 0);
	tensor_assert_same(&short2, &full3, "output", 0, 0);
	harness_expect_ok(&hidden); /* no key: a zero row */
	z = tensor_at(&hidden, "output");
	ck_assert_msg(z.x[0] == 0.0f && z.x[1] == 0.0f, "%g %g", (double)z.x[0], (double)z.x[1]);
	z = tensor_at(&short2, "output");
	ck_assert_msg(z.x[0] != tensor_at(&none, "output").x[0], "key 2 hidden changes the output");
}
END_TEST

/* A rank-1 attn_mask [Lk] broadcasts over batch, heads and queries, as
 * ONNX (any shape numpy broadcasts to [B, H, Lq, Lk]) and PyTorch read it:
 * the same answer as each query row given the mask. One that does not
 * broadcast is refused at the axis sent, its only one (axis 0). */
START_TEST(test_sdpa_rank1_mask)
{
	struct answer b1 = harness_sdpa(SDPA_QKV ",\"attn_mask\":[true,false]}");
	struct answer b2 = harness_sdpa(SDPA_QKV ",\"attn_mask\":[[true,false],[true,false]]}");
	struct answer a1 = harness_sdpa(SDPA_QKV ",\"attn_mask\":[0,\"-Infinity\"]}");
	struct answer wide = harness_sdpa(SDPA_QKV ",\"attn_mask\":[true,false,true]}");

	harness_expect_ok(&b1);
	harness_expect_ok(&b2);
	harness_expect_ok(&a1);
	harness_expect_error(&wide, 422, "mask_shape", "/attn_mask");
	harness_expect_message(&wide, "mask axis 0 has size 3; it must be 1 or 2");
	tensor_assert_same(&b1, &b2, "output", 0, 0);
	tensor_assert_same(&a1, &b2, "output", 0, 0);
}
END_TEST

/* An empty cache, past_key / past_value [B, Hkv, 0, D] (ONNX's first step
 * of a decode loop; only the {"shape", ...} forms can hold it): the answer
 * of no past, with present_key / present_value the new k and v. */
START_TEST(test_sdpa_empty_past)
{
	struct answer none = harness_sdpa(SDPA_QKV "}");
	struct answer data = harness_sdpa(
	    SDPA_QKV ",\"is_causal\":true,\"past_key\":{\"shape\":[1,1,0,2],\"data\":[]},"
		     "\"past_value\":{\"shape\":[1,1,0,2],\"data\":[]}}");
	struct answer causal = harness_sdpa(SDPA_QKV ",\"is_causal\":true}");
	struct answer b64 = harness_sdpa(
	    SDPA_QKV ",\"past_key\":{\"shape\":[1,1,0,2],\"base64\":\"\"},"
		     "\"past_value\":{\"shape\":[1,1,0,2],\"base64\":\"\"}}");
	const float eye[4] = {1.0f, 0.0f, 0.0f, 1.0f};
	struct flat pk;

	harness_expect_ok(&data);
	harness_expect_ok(&b64);
	tensor_assert_same(&data, &causal, "output", 0, 0);
	tensor_assert_same(&b64, &none, "output", 0, 0);
	pk = tensor_at(&b64, "present_key");
	tensor_assert_shape("present_key", &pk, 4, 1, 1, 2, 2);
	tensor_assert_near_n("present_key", pk.x, eye, 4, 0, 0);
	pk = tensor_at(&data, "present_value");
	tensor_assert_near_n("present_value", pk.x, eye, 4, 0, 0);
}
END_TEST

/* q . k = 2e40 beside 1.4e20: refused without a cap (result_overflow), and
 * answered under softcap 30, which maps both scores to 30, as it maps the
 * true ones: equal weights, the raw view's first score "Infinity". */
START_TEST(test_sdpa_softcap_caps_an_overflowing_score)
{
#define BIG "{\"q\":[[[[1e20,1e20]]]],\"k\":[[[[1e20,1e20],[1,1]]]],\"v\":[[[[1,2],[3,4]]]]"
	struct answer plain = harness_sdpa(BIG ",\"weights\":\"per_head\"}");
	struct answer capped =
	    harness_sdpa(BIG ",\"softcap\":30,\"weights\":\"per_head\",\"scores\":\"raw\"}");
	const float half[2] = {0.5f, 0.5f}, mid[2] = {2.0f, 3.0f};
	struct flat w, o;
#undef BIG

	harness_expect_error(&plain, 422, "result_overflow", "/q");
	harness_expect_ok(&capped);
	w = tensor_at(&capped, "weights");
	o = tensor_at(&capped, "output");
	tensor_assert_near_n("weights", w.x, half, 2, 0, 0);
	tensor_assert_near_n("output", o.x, mid, 2, 0, 0);
	ck_assert_msg(strstr(capped.text, "[[[[\"Infinity\",") != NULL, "%s", capped.text);
}
END_TEST

static Suite *sdpa_suite(void)
{
	Suite *s = suite_create("api_sdpa");
	TCase *tc = harness_tcase(s, "sdpa", 120);

	tcase_add_test(tc, test_sdpa_by_hand);
	tcase_add_test(tc, test_sdpa_3d_layout);
	tcase_add_test(tc, test_sdpa_bool_mask_object);
	tcase_add_test(tc, test_sdpa_short_mask_axis);
	tcase_add_test(tc, test_sdpa_rank1_mask);
	tcase_add_test(tc, test_sdpa_empty_past);
	tcase_add_test(tc, test_sdpa_softcap_caps_an_overflowing_score);
	tcase_add_test(tc, test_onnx_count);
	tcase_add_loop_test(tc, test_onnx_case, 0, (int)cases.n);
	tc = harness_tcase(s, "sdpa_http", 120);
	tcase_add_unchecked_fixture(tc, daemon_start, daemon_stop);
	tcase_add_loop_test(tc, test_onnx_case_http, 0, (int)cases.n);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .daemon = true,
	    .cases = &cases,
	    .list_cases = onnx_case_list,
	    .setup = harness_setup,
	    .teardown = harness_teardown,
	};

	return suite_main(argc, argv, sdpa_suite, &opts);
}
