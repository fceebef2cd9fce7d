/*
 * check_onnx.c: the 76 ONNX Attention conformance cases (opset 23/24) run
 * through the engine's raw entry points, attn_sdpa_forward and its naive twin
 * attn_sdpa_forward_ref.
 *
 * Data: every test_attention_*.json in $ATTN_ONNX_DIR, or by default in
 * tests/data/onnx-attention relative to the working directory (the
 * repo root under `make test`; CI copies shared/ beside its clone). The JSON
 * format and the operator's semantics are in that folder's README.md.
 *
 * Reading a case and the tolerances (README, "Verification") are in
 * onnx_case.h: float32 within 1e-5, float16 within 1 float16 ulp after
 * rounding ours, present_key / present_value exactly. Each case also runs on
 * the fast path with threads = 2, whose Y (and scores) must be bit-identical
 * to threads = 1.
 *
 * Ownership: a case is loaded, run and freed inside its own test. A failure is
 * recorded as a message and asserted only after cleanup, so the suite is
 * leak-free under CK_FORK=no as well.
 */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "tests/lib/case_files.h"
#include "tests/lib/half.h"
#include "tests/lib/onnx_case.h"
#include "tests/lib/suite_main.h"

/* ------------------------------------------------------------------------ */
/* The case as an engine request                                             */
/* ------------------------------------------------------------------------ */

/* Dimensions in the engine's terms (README: Sq = Lq, L = Lk = P + Skv). */
struct dims {
	int rank3; /* Q/K/V/Y are [B, S, heads * dim] */
	size_t B, H, Hkv, Lq, Skv, P, Lk, D, Dv;
};

/* Everything a request points into beyond the case's own tensors. */
struct run {
	struct dims d;
	struct attn_sdpa req;
	float *present_k;   /* [B, Hkv, Lk, D], when past or present is given */
	float *present_v;   /* [B, Hkv, Lk, Dv] */
	size_t *kv_lengths; /* [B] */
	float *y;	    /* [B, H, Lq, Dv] or [B, Lq, H * Dv], the case's layout */
	float *scores;	    /* [B, H, Lq, Lk] when qk_matmul_output is declared */
	float *y_first;	    /* Y of the threads = 1 fast run */
	float *scores_first;
	size_t y_n, scores_n;
};

static void run_release(struct run *r)
{
	free(r->present_k);
	free(r->present_v);
	free(r->kv_lengths);
	free(r->y);
	free(r->scores);
	free(r->y_first);
	free(r->scores_first);
	memset(r, 0, sizeof(*r));
}

/* Q, K, V as 4D [B, heads, S, dim]: the head counts come from the shapes. */
static int dims_4d(struct onnx_case *c, struct dims *d)
{
	const struct onnx_tensor *q = &c->in[ONNX_IN_Q], *k = &c->in[ONNX_IN_K],
				 *v = &c->in[ONNX_IN_V];

	d->B = q->shape[0];
	d->H = q->shape[1];
	d->Lq = q->shape[2];
	d->D = q->shape[3];
	if (k->rank != 4 || v->rank != 4)
		return onnx_case_fail(c, "K and V must be 4D like Q");
	d->Hkv = k->shape[1];
	d->Skv = k->shape[2];
	d->Dv = v->shape[3];
	if (!onnx_tensor_shape_is(k, 4, d->B, d->Hkv, d->Skv, d->D) ||
	    !onnx_tensor_shape_is(v, 4, d->B, d->Hkv, d->Skv, d->Dv))
		return onnx_case_fail(c, "K or V shape disagrees with Q");
	return 0;
}

/* Q, K, V as 3D [B, S, heads * dim], split head-major by the head attributes. */
static int dims_3d(struct onnx_case *c, struct dims *d)
{
	const struct onnx_tensor *q = &c->in[ONNX_IN_Q], *k = &c->in[ONNX_IN_K],
				 *v = &c->in[ONNX_IN_V];

	if (c->attr.q_num_heads <= 0 || c->attr.kv_num_heads <= 0)
		return onnx_case_fail(c, "3D inputs need q_num_heads and kv_num_heads");
	if (k->rank != 3 || v->rank != 3)
		return onnx_case_fail(c, "K and V must be 3D like Q");
	d->rank3 = 1;
	d->B = q->shape[0];
	d->Lq = q->shape[1];
	d->H = (size_t)c->attr.q_num_heads;
	d->Hkv = (size_t)c->attr.kv_num_heads;
	d->Skv = k->shape[1];
	if (q->shape[2] % d->H != 0 || v->shape[2] % d->Hkv != 0)
		return onnx_case_fail(c, "hidden sizes are not divisible by the head counts");
	d->D = q->shape[2] / d->H;
	d->Dv = v->shape[2] / d->Hkv;
	if (!onnx_tensor_shape_is(k, 3, d->B, d->Skv, d->Hkv * d->D, 0) ||
	    !onnx_tensor_shape_is(v, 3, d->B, d->Skv, d->Hkv * d->Dv, 0))
		return onnx_case_fail(c, "K or V shape disagrees with Q");
	return 0;
}

/* Reads the dimensions and checks every input against them. */
static int case_dims(struct onnx_case *c, struct dims *d)
{
	const struct onnx_tensor *pk = &c->in[ONNX_IN_PAST_K], *pv = &c->in[ONNX_IN_PAST_V];
	const struct onnx_tensor *nonpad = &c->in[ONNX_IN_NONPAD];
	int rc;

	if (!c->in[ONNX_IN_Q].present || !c->in[ONNX_IN_K].present || !c->in[ONNX_IN_V].present)
		return onnx_case_fail(c, "Q, K and V are required");
	if (!onnx_tensor_is_float(&c->in[ONNX_IN_Q]) || !onnx_tensor_is_float(&c->in[ONNX_IN_K]) ||
	    !onnx_tensor_is_float(&c->in[ONNX_IN_V]))
		return onnx_case_fail(c, "Q, K and V must be float");
	if (c->in[ONNX_IN_Q].rank == 4)
		rc = dims_4d(c, d);
	else if (c->in[ONNX_IN_Q].rank == 3)
		rc = dims_3d(c, d);
	else
		rc = onnx_case_fail(c, "Q must be 3D or 4D");
	if (rc != 0)
		return rc;
	if (pk->present != pv->present)
		return onnx_case_fail(c, "past_key and past_value come together");
	if (pk->present) {
		d->P = pk->shape[2];
		if (!onnx_tensor_is_float(pk) || !onnx_tensor_is_float(pv) ||
		    !onnx_tensor_shape_is(pk, 4, d->B, d->Hkv, d->P, d->D) ||
		    !onnx_tensor_shape_is(pv, 4, d->B, d->Hkv, d->P, d->Dv))
			return onnx_case_fail(c,
					      "past_key / past_value shape disagrees with K / V");
	}
	if (nonpad->present && (pk->present || nonpad->dtype != ONNX_INT64 ||
				!onnx_tensor_shape_is(nonpad, 1, d->B, 0, 0, 0)))
		return onnx_case_fail(
		    c, "nonpad_kv_seqlen must be int64 [B] and not come with a past");
	if (c->attr.qk_mode < 0 || c->attr.qk_mode > 3 || c->attr.is_causal < 0 ||
	    c->attr.is_causal > 1)
		return onnx_case_fail(c, "is_causal or qk_matmul_output_mode out of range");
	d->Lk = d->P + d->Skv;
	return 0;
}

static float *alloc_floats(size_t n)
{
	return malloc((n ? n : 1) * sizeof(float));
}

static struct attn_cview input_view(const struct dims *d, const struct onnx_tensor *t, size_t heads,
				    size_t len, size_t dim)
{
	if (d->rank3)
		return attn_cview_blhd(t->f, heads, len, dim);
	return attn_cview_bhld(t->f, heads, len, dim);
}

/*
 * K and V: the new keys directly, or present = concat(past, new) along the
 * sequence when a past cache is given or present_* is declared.
 */
static int build_kv(struct onnx_case *c, struct run *r)
{
	const struct dims *d = &r->d;
	struct attn_cview k = input_view(d, &c->in[ONNX_IN_K], d->Hkv, d->Skv, d->D);
	struct attn_cview v = input_view(d, &c->in[ONNX_IN_V], d->Hkv, d->Skv, d->Dv);

	if (!c->in[ONNX_IN_PAST_K].present && !c->out[ONNX_OUT_PRESENT_K].present &&
	    !c->out[ONNX_OUT_PRESENT_V].present) {
		r->req.k = k;
		r->req.v = v;
		return 0;
	}
	r->present_k = alloc_floats(d->B * d->Hkv * d->Lk * d->D);
	r->present_v = alloc_floats(d->B * d->Hkv * d->Lk * d->Dv);
	if (r->present_k == NULL || r->present_v == NULL)
		return onnx_case_fail(c, "out of memory");
	attn_kv_concat(r->present_k, c->in[ONNX_IN_PAST_K].f, k, d->B, d->Hkv, d->P, d->Skv, d->D);
	attn_kv_concat(r->present_v, c->in[ONNX_IN_PAST_V].f, v, d->B, d->Hkv, d->P, d->Skv, d->Dv);
	r->req.k = attn_cview_bhld(r->present_k, d->Hkv, d->Lk, d->D);
	r->req.v = attn_cview_bhld(r->present_v, d->Hkv, d->Lk, d->Dv);
	return 0;
}

/* attn_mask, rank 2..4, right-aligned onto [B, H, Lq, Lk] (the engine checks it). */
static int build_user_mask(struct onnx_case *c, struct attn_mask *m)
{
	const struct onnx_tensor *t = &c->in[ONNX_IN_MASK];

	if (!t->present)
		return 0;
	if (t->rank < 2)
		return onnx_case_fail(c, "attn_mask of rank %zu is not supported", t->rank);
	if (t->dtype == ONNX_BOOL) {
		m->user_kind = ATTN_USER_MASK_BOOL;
		m->user = t->b;
	} else if (onnx_tensor_is_float(t)) {
		m->user_kind = ATTN_USER_MASK_ADDITIVE;
		m->user = t->f;
	} else {
		return onnx_case_fail(c, "attn_mask must be bool or float");
	}
	m->user_rank = t->rank;
	memcpy(m->user_shape, t->shape, sizeof(m->user_shape));
	return 0;
}

/*
 * Causal alignment and key lengths. ONNX lets query i see key j <= i + offset
 * with offset = P for a past cache, nonpad[b] - Lq for an external cache, else
 * 0 (top-left). The engine says the same with top-left plus q_offset = P, and
 * bottom-right over kv_lengths (offset kv_lengths[b] - Lq).
 */
static int build_causal(struct onnx_case *c, struct run *r)
{
	const struct dims *d = &r->d;
	const struct onnx_tensor *nonpad = &c->in[ONNX_IN_NONPAD];
	struct attn_mask *m = &r->req.mask;
	int past = c->in[ONNX_IN_PAST_K].present;

	if (nonpad->present) {
		r->kv_lengths = malloc(d->B * sizeof(*r->kv_lengths));
		if (r->kv_lengths == NULL)
			return onnx_case_fail(c, "out of memory");
		m->kv_lengths = r->kv_lengths;
	}
	for (size_t b = 0; nonpad->present && b < d->B; b++) {
		if (nonpad->i[b] < 0 || (uint64_t)nonpad->i[b] > d->Skv)
			return onnx_case_fail(c, "nonpad_kv_seqlen[%zu] = %lld is outside [0, %zu]",
					      b, (long long)nonpad->i[b], d->Skv);
		r->kv_lengths[b] = (size_t)nonpad->i[b];
	}
	if (!c->attr.is_causal)
		return 0;
	m->causal = nonpad->present ? ATTN_CAUSAL_BOTTOM_RIGHT : ATTN_CAUSAL_TOP_LEFT;
	if (past)
		m->q_offset = (ptrdiff_t)d->P;
	return 0;
}

/* Y in the case's layout and the optional scores [B, H, Lq, Lk]. */
static int build_outputs(struct onnx_case *c, struct run *r)
{
	static const enum attn_scores_view views[4] = {
	    ATTN_SCORES_RAW,
	    ATTN_SCORES_SOFTCAP,
	    ATTN_SCORES_MASKED,
	    ATTN_SCORES_SOFTMAX,
	};
	const struct dims *d = &r->d;
	const struct onnx_tensor *y = &c->out[ONNX_OUT_Y], *qk = &c->out[ONNX_OUT_QK];
	int y_ok = d->rank3 ? onnx_tensor_shape_is(y, 3, d->B, d->Lq, d->H * d->Dv, 0)
			    : onnx_tensor_shape_is(y, 4, d->B, d->H, d->Lq, d->Dv);

	if (!y->present || !y_ok || !onnx_tensor_is_float(y))
		return onnx_case_fail(c, "Y must be declared, float, and shaped like Q with Dv");
	r->y_n = y->n;
	r->y = alloc_floats(r->y_n);
	r->y_first = alloc_floats(r->y_n);
	if (r->y == NULL || r->y_first == NULL)
		return onnx_case_fail(c, "out of memory");
	r->req.out = d->rank3 ? attn_view_blhd(r->y, d->H, d->Lq, d->Dv)
			      : attn_view_bhld(r->y, d->H, d->Lq, d->Dv);
	if (!qk->present)
		return 0;
	if (!onnx_tensor_is_float(qk) || !onnx_tensor_shape_is(qk, 4, d->B, d->H, d->Lq, d->Lk))
		return onnx_case_fail(c, "qk_matmul_output must be float [B, H, Lq, Lk]");
	r->scores_n = qk->n;
	r->scores = alloc_floats(r->scores_n);
	r->scores_first = alloc_floats(r->scores_n);
	if (r->scores == NULL || r->scores_first == NULL)
		return onnx_case_fail(c, "out of memory");
	r->req.scores_view = views[c->attr.qk_mode];
	r->req.scores = r->scores;
	return 0;
}

/* Maps the case onto r->req; softmax_precision is ignored (float32 throughout). */
static int build_request(struct onnx_case *c, struct run *r)
{
	const struct dims *d = &r->d;

	if (case_dims(c, &r->d) != 0)
		return -1;
	r->req.B = d->B;
	r->req.H = d->H;
	r->req.Hkv = d->Hkv;
	r->req.Lq = d->Lq;
	r->req.Lk = d->Lk;
	r->req.D = d->D;
	r->req.Dv = d->Dv;
	r->req.scale = (float)c->attr.scale;
	r->req.softcap = (float)c->attr.softcap;
	r->req.q = input_view(d, &c->in[ONNX_IN_Q], d->H, d->Lq, d->D);
	if (build_kv(c, r) != 0 || build_user_mask(c, &r->req.mask) != 0 || build_causal(c, r) != 0)
		return -1;
	return build_outputs(c, r);
}

/* ------------------------------------------------------------------------ */
/* Running and comparing                                                     */
/* ------------------------------------------------------------------------ */

static void fill_nan(float *x, size_t n)
{
	for (size_t k = 0; k < n; k++)
		x[k] = NAN;
}

/* One forward call; the outputs start as NaN so an unwritten cell shows. */
static int run_forward(struct onnx_case *c, struct run *r, const char *label, int ref,
		       size_t threads)
{
	struct attn_error err;
	enum attn_status st;
	size_t bytes = 0;
	void *ws = NULL;

	memset(&err, 0, sizeof(err));
	fill_nan(r->y, r->y_n);
	if (r->scores != NULL)
		fill_nan(r->scores, r->scores_n);
	r->req.threads = threads;
	if (ref) {
		st = attn_sdpa_forward_ref(&r->req, &err);
	} else {
		st = attn_sdpa_workspace(&r->req, &bytes, &err);
		if (st == ATTN_OK) {
			ws = malloc(bytes ? bytes : 1);
			if (ws == NULL)
				return onnx_case_fail(c, "%s: cannot allocate a %zu-byte workspace",
						      label, bytes);
			st = attn_sdpa_forward(&r->req, ws, bytes, &err);
			free(ws);
		}
	}
	if (st != ATTN_OK)
		return onnx_case_fail(c, "%s: %s (field %s): %s", label, attn_status_str(st),
				      err.field ? err.field : "-", err.message);
	return 0;
}

static int compare_run(struct onnx_case *c, struct run *r, const char *label)
{
	if (onnx_case_compare(c, label, ONNX_OUT_Y, r->y, 0) != 0)
		return -1;
	if (r->scores != NULL)
		return onnx_case_compare(c, label, ONNX_OUT_QK, r->scores, 0);
	return 0;
}

/* Bit-identity of a threaded run with the single-threaded one. */
static int compare_bits(struct onnx_case *c, const char *label, const char *what, const float *got,
			const float *first, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (memcmp(&got[k], &first[k], sizeof(float)) != 0)
			return onnx_case_fail(c,
					      "%s: %s[%zu] = %.9g differs from threads = 1 (%.9g)",
					      label, what, k, (double)got[k], (double)first[k]);
	}
	return 0;
}

/* present_key / present_value (when declared) against the concatenation. */
static int compare_present(struct onnx_case *c, const struct run *r)
{
	const struct dims *d = &r->d;
	const struct onnx_tensor *pk = &c->out[ONNX_OUT_PRESENT_K],
				 *pv = &c->out[ONNX_OUT_PRESENT_V];

	if (pk->present &&
	    (!onnx_tensor_is_float(pk) || !onnx_tensor_shape_is(pk, 4, d->B, d->Hkv, d->Lk, d->D)))
		return onnx_case_fail(c, "present_key must be float [B, Hkv, Lk, D]");
	if (pv->present &&
	    (!onnx_tensor_is_float(pv) || !onnx_tensor_shape_is(pv, 4, d->B, d->Hkv, d->Lk, d->Dv)))
		return onnx_case_fail(c, "present_value must be float [B, Hkv, Lk, Dv]");
	if (pk->present &&
	    onnx_case_compare(c, "attn_kv_concat", ONNX_OUT_PRESENT_K, r->present_k, 1))
		return -1;
	if (pv->present &&
	    onnx_case_compare(c, "attn_kv_concat", ONNX_OUT_PRESENT_V, r->present_v, 1))
		return -1;
	return 0;
}

/* The three runs: fast (threads 1), reference, fast (threads 2, bit-identical). */
static int run_variants(struct onnx_case *c, struct run *r)
{
	if (run_forward(c, r, "fast", 0, 1) != 0 || compare_run(c, r, "fast") != 0)
		return -1;
	memcpy(r->y_first, r->y, r->y_n * sizeof(float));
	if (r->scores != NULL)
		memcpy(r->scores_first, r->scores, r->scores_n * sizeof(float));
	if (run_forward(c, r, "ref", 1, 1) != 0 || compare_run(c, r, "ref") != 0)
		return -1;
	if (run_forward(c, r, "fast threads=2", 0, 2) != 0)
		return -1;
	if (compare_bits(c, "fast threads=2", "Y", r->y, r->y_first, r->y_n) != 0)
		return -1;
	if (r->scores != NULL)
		return compare_bits(c, "fast threads=2", "qk_matmul_output", r->scores,
				    r->scores_first, r->scores_n);
	return 0;
}

/* Loads, maps, runs and checks one file; c->error says why on failure. */
static int run_case(struct onnx_case *c, const char *dir, const char *name)
{
	struct run r;
	int rc = -1;

	memset(&r, 0, sizeof(r));
	if (onnx_case_load(c, dir, name) != 0)
		goto out;
	if (build_request(c, &r) != 0)
		goto out;
	if (compare_present(c, &r) != 0)
		goto out;
	rc = run_variants(c, &r);
out:
	run_release(&r);
	onnx_case_release(c);
	return rc;
}

/* The case files, listed by main. */
static struct case_list cases;

START_TEST(test_case_count)
{
	ck_assert_msg(
	    cases.n == ONNX_CASE_COUNT,
	    "found %zu " ONNX_CASE_PREFIX "*" ONNX_CASE_SUFFIX
	    " files in %s, expected %d%s (set ATTN_ONNX_DIR or put shared/ beside the repo)",
	    cases.n, cases.dir, ONNX_CASE_COUNT, cases.error);
}
END_TEST

START_TEST(test_onnx_case)
{
	struct onnx_case c;
	int rc;

	memset(&c, 0, sizeof(c));
	rc = run_case(&c, cases.dir, cases.names[_i]);
	ck_assert_msg(rc == 0, "%s: %s", c.name, c.error);
}
END_TEST

/*
 * The float16 rounding the comparisons rely on: every finite half round-trips,
 * the midpoint between neighbours goes to the even one, and the floats just
 * either side of it go to the nearer one. This covers subnormals, the carry
 * into the exponent and the overflow to infinity at 65520.
 */
START_TEST(test_half_rounding)
{
	for (uint32_t h = 0; h < 0x7c00u; h++) {
		float f = half_to_float((uint16_t)h);
		/* above 65504 the next step would be 65536, which float16 calls inf */
		float next = h + 1 < 0x7c00u ? half_to_float((uint16_t)(h + 1)) : 65536.0f;
		float mid = (float)(((double)f + (double)next) / 2);
		uint32_t even = (h & 1u) ? h + 1 : h;

		ck_assert_uint_eq(half_from_float(f), h);
		ck_assert_uint_eq(half_from_float(-f), h | 0x8000u);
		ck_assert_uint_eq(half_from_float(mid), even);
		ck_assert_uint_eq(half_from_float(-mid), even | 0x8000u);
		ck_assert_uint_eq(half_from_float(nextafterf(mid, 0.0f)), h);
		ck_assert_uint_eq(half_from_float(nextafterf(mid, INFINITY)), h + 1);
	}
	ck_assert_uint_eq(half_from_float(INFINITY), 0x7c00u);
	ck_assert_uint_eq(half_from_float(-INFINITY), 0xfc00u);
	ck_assert_uint_eq(half_from_float(1e-30f), 0);
	ck_assert_uint_eq(half_from_float(NAN) & 0x7c00u, 0x7c00u);
	ck_assert_uint_ne(half_from_float(NAN) & 0x3ffu, 0);
	ck_assert_int_eq(half_ulps(0x0000u, 0x8000u), 0);
	ck_assert_int_eq(half_ulps(0x0001u, 0x8001u), 2);
	ck_assert_int_eq(half_ulps(0x3c00u, 0x3c01u), 1);
}
END_TEST

static Suite *onnx_suite(void)
{
	Suite *s = suite_create("onnx");
	TCase *files = tcase_create("files");
	TCase *each = tcase_create("cases");

	tcase_add_test(files, test_case_count);
	tcase_add_test(files, test_half_rounding);
	suite_add_tcase(s, files);
	tcase_set_timeout(each, 60); /* generous for sanitizer and valgrind runs */
	tcase_add_loop_test(each, test_onnx_case, 0, (int)cases.n);
	suite_add_tcase(s, each);
	return s;
}

/* After the run: the "cases" TCase produced a result for each of the
 * ONNX_CASE_COUNT files; -1, said on stderr, when fewer (or more) ran. */
static int all_cases_ran(SRunner *sr)
{
	TestResult **results = srunner_results(sr);
	size_t n = (size_t)srunner_ntests_run(sr), ran = 0;

	for (size_t k = 0; results != NULL && k < n; k++) {
		if (strcmp(tr_tcname(results[k]), "cases") == 0)
			ran++;
	}
	free(results);
	if (ran == ONNX_CASE_COUNT)
		return 0;
	fprintf(stderr, "check_onnx: %zu of %d conformance cases ran\n", ran, ONNX_CASE_COUNT);
	return -1;
}

int main(int argc, char **argv)
{
	/* Threads come from attn_sdpa.threads; BLAS itself stays single-threaded. */
	static const struct suite_main_opts opts = {
	    .one_blas_thread = true,
	    .cases = &cases,
	    .list_cases = onnx_case_list,
	    .after_run = all_cases_ran,
	};

	return suite_main(argc, argv, onnx_suite, &opts);
}
