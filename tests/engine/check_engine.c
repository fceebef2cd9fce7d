/*
 * check_engine.c: the fast paths against their naive twins on seeded random
 * shapes, and the engine's statuses for bad requests.
 *
 *   sdpa   attn_sdpa_forward (BLAS, blocked, threaded) vs attn_sdpa_forward_ref
 *   mask   mask_apply_span (key ranges) vs mask_bias_at (per cell)
 * The whole layer's twins (attn_mha_forward) are check_mha_twins'.
 * Tolerance (seeded.h): |fast - ref| <= 1e-5 + 1e-4 |ref|; -inf cells must
 * match exactly. The kernels inside (tile, exp, softmax) have check_kernels.
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/mask.h"
#include "engine/mha.h"
#include "engine/model.h"
#include "engine/prng.h"

#include "tests/lib/expect.h"
#include "tests/lib/light.h"
#include "tests/lib/seeded.h"
#include "tests/lib/suite_main.h"

/* ---- sdpa: fast vs ref ------------------------------------------------ */

struct sdpa_case {
	struct attn_sdpa req;
	float *q, *k, *v, *mask;
	uint8_t *bmask;
	size_t lens[8], qlens[8];
	float slopes[16];
};

/* wide: head dimensions that are multiples of 16 (tile.h's kernels) */
static void sdpa_case_random(struct sdpa_case *c, struct attn_prng *g, int wide)
{
	struct attn_sdpa *r = &c->req;
	size_t group;

	memset(c, 0, sizeof(*c));
	r->B = test_pick(g, 1, 3);
	r->Hkv = test_pick(g, 1, 3);
	group = test_pick(g, 1, 3);
	r->H = r->Hkv * group;
	r->Lq = test_pick(g, 0, 3) == 0 ? 1 : test_pick(g, 1, 150); /* crosses the 64-row block */
	r->Lk = test_pick(g, 0, 3) == 0 ? 1 : test_pick(g, 1, 90);
	r->D = test_pick(g, 0, 4) == 0 ? 1 : test_pick(g, 1, 17);
	r->Dv = test_pick(g, 0, 1) ? r->D : test_pick(g, 1, 11);
	if (wide) {
		r->Lk = test_pick(g, 1, 300);
		r->D = 16 * test_pick(g, 1, 5);
		r->Dv = test_pick(g, 0, 1) ? r->D : 16 * test_pick(g, 1, 3);
	}
	c->q = test_randn(g, r->B * r->H * r->Lq * r->D);
	c->k = test_randn(g, r->B * r->Hkv * r->Lk * r->D);
	c->v = test_randn(g, r->B * r->Hkv * r->Lk * r->Dv);
	if (test_pick(g, 0, 1)) { /* [B, H, L, D] */
		r->q = attn_cview_bhld(c->q, r->H, r->Lq, r->D);
		r->k = attn_cview_bhld(c->k, r->Hkv, r->Lk, r->D);
		r->v = attn_cview_bhld(c->v, r->Hkv, r->Lk, r->Dv);
	} else { /* [B, L, H * D] */
		r->q = attn_cview_blhd(c->q, r->H, r->Lq, r->D);
		r->k = attn_cview_blhd(c->k, r->Hkv, r->Lk, r->D);
		r->v = attn_cview_blhd(c->v, r->Hkv, r->Lk, r->Dv);
	}
	r->scale = test_pick(g, 0, 2) == 0 ? 0.3f : 0.0f;
	r->softcap = test_pick(g, 0, 2) == 0 ? 1.5f : 0.0f;
	r->mask.causal = (enum attn_causal)test_pick(g, 0, 2);
	r->mask.window = test_pick(g, 0, 2) == 0 ? test_pick(g, 1, 9) : 0;
	if (test_pick(g, 0, 2) == 0) {
		for (size_t b = 0; b < r->B; b++) {
			c->lens[b] = test_pick(g, 0, r->Lk);
			c->qlens[b] = test_pick(g, 1, r->Lq);
		}
		r->mask.kv_lengths = c->lens;
		if (test_pick(g, 0, 1)) /* a ragged batch aligns on each item's own lengths */
			r->mask.q_lengths = c->qlens;
	}
	if (test_pick(g, 0, 2) == 0) { /* a user mask [B or 1, 1, Lq, Lk] */
		size_t mb = test_pick(g, 0, 1) ? r->B : 1, n = mb * r->Lq * r->Lk;

		r->mask.user_rank = 4;
		r->mask.user_shape[0] = mb;
		r->mask.user_shape[1] = 1;
		r->mask.user_shape[2] = r->Lq;
		r->mask.user_shape[3] = r->Lk;
		if (test_pick(g, 0, 1)) {
			c->bmask = malloc(n);
			for (size_t i = 0; i < n; i++)
				c->bmask[i] = test_pick(g, 0, 3) != 0;
			r->mask.user_kind = ATTN_USER_MASK_BOOL;
			r->mask.user = c->bmask;
		} else {
			c->mask = test_randn(g, n);
			for (size_t i = 0; i < n; i++)
				if (test_pick(g, 0, 5) == 0)
					c->mask[i] = -INFINITY;
			r->mask.user_kind = ATTN_USER_MASK_ADDITIVE;
			r->mask.user = c->mask;
		}
	}
	if (test_pick(g, 0, 3) == 0) {
		attn_alibi_slopes(c->slopes, r->H);
		r->alibi_slopes = c->slopes;
	}
	r->threads = test_pick(g, 1, 3);
}

static void sdpa_case_free(struct sdpa_case *c)
{
	free(c->q);
	free(c->k);
	free(c->v);
	free(c->mask);
	free(c->bmask);
}

/* Runs fast and ref with the given output modes and compares every output. */
static void sdpa_compare(struct sdpa_case *c, enum attn_weights_mode wm,
			 enum attn_scores_view sv, int iter)
{
	struct attn_sdpa fast = c->req, ref = c->req;
	size_t nout = fast.B * fast.H * fast.Lq * fast.Dv;
	size_t nw = fast.B * fast.H * fast.Lq * fast.Lk, ws_bytes;
	float *out_f = calloc(nout, 4), *out_r = calloc(nout, 4);
	float *w_f = calloc(nw, 4), *w_r = calloc(nw, 4), *s_f = calloc(nw, 4), *s_r = calloc(nw, 4);
	struct attn_error err;
	void *ws;

	fast.out = attn_view_bhld(out_f, fast.H, fast.Lq, fast.Dv);
	ref.out = attn_view_bhld(out_r, fast.H, fast.Lq, fast.Dv);
	fast.weights_mode = ref.weights_mode = wm;
	fast.weights = w_f;
	ref.weights = w_r;
	fast.scores_view = ref.scores_view = sv;
	fast.scores = s_f;
	ref.scores = s_r;
	ck_assert_int_eq(attn_sdpa_workspace(&fast, &ws_bytes, &err), ATTN_OK);
	ws = malloc(ws_bytes ? ws_bytes : 1);
	ck_assert_msg(attn_sdpa_forward(&fast, ws, ws_bytes, &err) == ATTN_OK, "%s", err.message);
	ck_assert_msg(attn_sdpa_forward_ref(&ref, &err) == ATTN_OK, "%s", err.message);
	test_assert_close(out_f, out_r, nout, "sdpa out", iter);
	for (size_t i = 0; i < nout; i++)
		EXPECT_MSG(!isnan(out_f[i]), "sdpa out iter %d [%zu]: NaN", iter, i);
	if (wm != ATTN_WEIGHTS_NONE)
		test_assert_close(w_f, w_r, wm == ATTN_WEIGHTS_MEAN ? nw / fast.H : nw, "weights", iter);
	if (sv != ATTN_SCORES_NONE)
		test_assert_close(s_f, s_r, nw, "scores", iter);
	free(ws);
	free(out_f);
	free(out_r);
	free(w_f);
	free(w_r);
	free(s_f);
	free(s_r);
}

START_TEST(sdpa_fast_matches_ref)
{
	struct attn_prng g;
	struct sdpa_case c;

	attn_prng_seed(&g, 1000 + (uint64_t)_i);
	/* a quarter wide; under valgrind (light) a sixteenth, as they cost most */
	sdpa_case_random(&c, &g, _i % (test_light() ? 16 : 4) == 3);
	sdpa_compare(&c, (enum attn_weights_mode)(_i % 3), (enum attn_scores_view)(_i % 5), _i);
	sdpa_case_free(&c);
}
END_TEST

/* The thread count never changes a number: bit-identical outputs. */
START_TEST(sdpa_threads_bit_identical)
{
	struct attn_prng g;
	struct sdpa_case c;
	size_t nout, nw, ws_bytes;
	float *o1, *o3, *w1, *w3;
	void *ws;

	attn_prng_seed(&g, 77);
	sdpa_case_random(&c, &g, _i); /* 1: the tile kernels too */
	c.req.Lq = 130; /* three query blocks */
	free(c.q);
	c.q = test_randn(&g, c.req.B * c.req.H * c.req.Lq * c.req.D);
	c.req.q = attn_cview_bhld(c.q, c.req.H, c.req.Lq, c.req.D);
	c.req.mask.user_kind = ATTN_USER_MASK_NONE;
	nout = c.req.B * c.req.H * c.req.Lq * c.req.Dv;
	nw = c.req.B * c.req.Lq * c.req.Lk;
	o1 = calloc(nout, 4);
	o3 = calloc(nout, 4);
	w1 = calloc(nw, 4);
	w3 = calloc(nw, 4);
	c.req.weights_mode = ATTN_WEIGHTS_MEAN;
	for (size_t t = 1; t <= 3; t += 2) {
		c.req.threads = t;
		c.req.out = attn_view_bhld(t == 1 ? o1 : o3, c.req.H, c.req.Lq, c.req.Dv);
		c.req.weights = t == 1 ? w1 : w3;
		ck_assert_int_eq(attn_sdpa_workspace(&c.req, &ws_bytes, NULL), ATTN_OK);
		ws = malloc(ws_bytes);
		ck_assert_int_eq(attn_sdpa_forward(&c.req, ws, ws_bytes, NULL), ATTN_OK);
		free(ws);
	}
	ck_assert_mem_eq(o1, o3, nout * 4);
	ck_assert_mem_eq(w1, w3, nw * 4);
	free(o1);
	free(o3);
	free(w1);
	free(w3);
	sdpa_case_free(&c);
}
END_TEST

/* r: one batch item, one head, two queries and two keys of D = Dv = 2. */
static void tiny_sdpa(struct attn_sdpa *r, const float *q, const float *k, const float *v,
		      float *out)
{
	memset(r, 0, sizeof(*r));
	r->B = r->H = r->Hkv = 1;
	r->Lq = r->Lk = 2;
	r->D = r->Dv = 2;
	r->q = attn_cview_bhld(q, 1, 2, 2);
	r->k = attn_cview_bhld(k, 1, 2, 2);
	r->v = attn_cview_bhld(v, 1, 2, 2);
	r->out = attn_view_bhld(out, 1, 2, 2);
}

/* A row with no visible key: zero output and zero weights, never NaN. */
START_TEST(sdpa_fully_masked_row_is_zero)
{
	float q[4] = { 1, 2, 3, 4 }, k[4] = { 1, 1, 1, 1 }, v[4] = { 5, 6, 7, 8 };
	float out[4], w[4], ws[64];
	uint8_t allow[4] = { 0, 0, 1, 1 }; /* row 0 sees nothing */
	struct attn_sdpa r;

	tiny_sdpa(&r, q, k, v, out);
	r.mask.user_kind = ATTN_USER_MASK_BOOL;
	r.mask.user = allow;
	r.mask.user_rank = 2;
	r.mask.user_shape[0] = 2;
	r.mask.user_shape[1] = 2;
	r.weights_mode = ATTN_WEIGHTS_PER_HEAD;
	r.weights = w;
	ck_assert_int_eq(attn_sdpa_forward(&r, ws, sizeof(ws), NULL), ATTN_OK);
	ck_assert(out[0] == 0.0f && out[1] == 0.0f && w[0] == 0.0f && w[1] == 0.0f);
	ck_assert_float_eq_tol(w[2] + w[3], 1.0f, 1e-6f);
	memset(out, 0xff, sizeof(out)); /* NaN bits: the ref must overwrite them */
	ck_assert_int_eq(attn_sdpa_forward_ref(&r, NULL), ATTN_OK);
	ck_assert(out[0] == 0.0f && out[1] == 0.0f);
}
END_TEST

/* ---- kernels ---------------------------------------------------------- */

/* Spans of keys [j0, j0 + n), as the streaming path asks, against single cells. */
START_TEST(mask_spans_match_cells)
{
	struct attn_prng g;
	struct sdpa_case c;
	float *row;

	attn_prng_seed(&g, 9000 + (uint64_t)_i);
	sdpa_case_random(&c, &g, 0);
	row = calloc(c.req.Lk, sizeof(float));
	for (size_t b = 0; b < c.req.B; b++)
		for (size_t h = 0; h < c.req.H; h++)
			for (size_t i = 0; i < c.req.Lq; i++) {
				size_t j0 = test_pick(&g, 0, c.req.Lk - 1);
				size_t n = test_pick(&g, 1, c.req.Lk - j0), lo, hi;

				memset(row, 0, n * sizeof(float));
				mask_apply_span(row, &c.req, b, h, i, j0, n, &lo, &hi);
				EXPECT_MSG(lo <= hi && hi <= n, "span [%zu, %zu) of %zu", lo, hi, n);
				for (size_t j = 0; j < n; j++) {
					float want = mask_bias_at(&c.req, b, h, i, j0 + j);

					EXPECT_MSG(row[j] == want || fabsf(row[j] - want) < 1e-6f,
						   "cell (%zu,%zu,%zu,%zu): %g vs %g", b, h, i, j0 + j,
						   row[j], want);
					EXPECT_MSG((j >= lo && j < hi) || row[j] == -INFINITY,
						   "cell (%zu,%zu,%zu,%zu) outside [%zu, %zu): %g", b, h,
						   i, j0 + j, lo, hi, row[j]);
				}
			}
	free(row);
	sdpa_case_free(&c);
}
END_TEST

/* Causal, window and alignment on a 3 x 5 grid, written out by hand. */
START_TEST(mask_rules_by_hand)
{
	struct attn_sdpa r;
	size_t lo, hi;

	memset(&r, 0, sizeof(r));
	r.B = r.H = 1;
	r.Lq = 3;
	r.Lk = 5;
	r.mask.causal = ATTN_CAUSAL_TOP_LEFT; /* query i sees 0..i */
	mask_range(&r, 0, 1, &lo, &hi);
	ck_assert(lo == 0 && hi == 2);
	r.mask.causal = ATTN_CAUSAL_BOTTOM_RIGHT; /* query i sees 0..i + 2 */
	mask_range(&r, 0, 0, &lo, &hi);
	ck_assert(lo == 0 && hi == 3);
	r.mask.window = 2; /* and only i + 2 - 2 < j */
	mask_range(&r, 0, 2, &lo, &hi);
	ck_assert(lo == 3 && hi == 5);
	r.mask.causal = ATTN_CAUSAL_NONE; /* symmetric window |i - j| < 2 */
	mask_range(&r, 0, 2, &lo, &hi);
	ck_assert(lo == 1 && hi == 4);
}
END_TEST

/* Runs r with a workspace of its own size, then frees model (r's); an
 * answer it accepts has n_out finite outputs. */
static enum attn_status forward_finite(struct attn_mha *r, struct attn_model *model, size_t n_out,
				       struct attn_error *err)
{
	enum attn_status st;
	size_t ws_bytes;
	void *ws;

	ck_assert_int_eq(attn_mha_workspace(r, &ws_bytes, NULL), ATTN_OK);
	ws = malloc(ws_bytes);
	st = attn_mha_forward(r, ws, ws_bytes, err);
	for (size_t i = 0; st == ATTN_OK && i < n_out; i++)
		ck_assert(isfinite(r->out[i]));
	free(ws);
	attn_model_free(model);
	return st;
}

/* x [1, 4, 8] = +-v alternating: at v = 1e30 the seeded tiny model's scores
 * overflow float32 (its projections do not); at 1e18 they do not. */
static enum attn_status tiny_layer(float v, enum attn_weights_mode wm, struct attn_error *err)
{
	struct attn_model_config cfg = { 8, 2, 0, 0, 0 };
	struct attn_model *model;
	float x[32], out[32], w[32];
	struct attn_mha r;

	ck_assert_int_eq(attn_model_new_seeded(&model, &cfg, 42, NULL), ATTN_OK);
	for (size_t i = 0; i < 4; i++)
		for (size_t j = 0; j < 8; j++)
			x[i * 8 + j] = (i + j) % 2 ? -v : v;
	memset(&r, 0, sizeof(r));
	r.model = model;
	r.B = 1;
	r.Lq = r.Lk = 4;
	r.query = x;
	r.out = out;
	r.weights_mode = wm;
	r.weights = w;
	return forward_finite(&r, model, 32, err);
}

START_TEST(overflowing_scores_are_reported)
{
	float q[4] = { 1e30f, 1e30f, 1.0f, 2.0f }, v[4] = { 1, 2, 3, 4 }, out[4], ws[64];
	struct attn_error err;
	struct attn_sdpa r;
	size_t ws_bytes;

	for (int wm = ATTN_WEIGHTS_NONE; wm <= ATTN_WEIGHTS_PER_HEAD; wm++) {
		ck_assert_int_eq(tiny_layer(1e18f, (enum attn_weights_mode)wm, NULL), ATTN_OK);
		ck_assert_int_eq(tiny_layer(1e30f, (enum attn_weights_mode)wm, &err),
				 ATTN_ERR_RESULT_OVERFLOW);
		ck_assert_str_eq(err.field, "query");
		ck_assert_uint_eq(err.index, 0);
		/* at 3e38 the projections overflow: named on every path, the
		 * streaming one (weights none) too, so the API answers
		 * projection_overflow whatever weights says */
		ck_assert_int_eq(tiny_layer(3e38f, (enum attn_weights_mode)wm, &err),
				 ATTN_ERR_NONFINITE);
		ck_assert_msg(strlen(err.field) == 1 && strchr("qkv", err.field[0]), "%s",
			      err.field);
	}
	/* raw attention: q . k = 2e60 in row 0 */
	tiny_sdpa(&r, q, q, v, out);
	ck_assert_int_eq(attn_sdpa_workspace(&r, &ws_bytes, NULL), ATTN_OK);
	ck_assert_uint_le(ws_bytes, sizeof(ws));
	ck_assert_int_eq(attn_sdpa_forward(&r, ws, ws_bytes, &err), ATTN_ERR_RESULT_OVERFLOW);
	ck_assert_str_eq(err.field, "q");
	ck_assert_str_eq(attn_status_str(err.status), "result_overflow");
}
END_TEST

/* W_q = W_k = 0 (every score 0), W_v = I, W_o = 1e30 I, x [1, 2, 2] = 1e10:
 * the heads' outputs are 1e10, finite, and W_O takes them past float32. The
 * error blames W_O, not the scores, on every path. */
START_TEST(overflowing_output_projection_is_named)
{
	struct attn_model_config cfg = { 2, 1, 0, 0, 0 };
	float w_qkv[12] = { 0 }, w_o[4] = { 1e30f, 0, 0, 1e30f }, x[4], out[4], w[4];
	struct attn_error err;

	w_qkv[8] = w_qkv[11] = 1.0f; /* W_v, rows 4 and 5: the identity */
	for (size_t i = 0; i < 4; i++)
		x[i] = 1e10f;
	for (int wm = ATTN_WEIGHTS_NONE; wm <= ATTN_WEIGHTS_PER_HEAD; wm++) {
		struct attn_model *model;
		struct attn_mha r;

		ck_assert_int_eq(
		    attn_model_new_explicit(&model, &cfg, w_qkv, NULL, w_o, NULL, NULL, NULL),
		    ATTN_OK);
		memset(&r, 0, sizeof(r));
		r.model = model;
		r.B = 1;
		r.Lq = r.Lk = 2;
		r.query = x;
		r.out = out;
		r.weights_mode = (enum attn_weights_mode)wm;
		r.weights = w;
		ck_assert_int_eq(forward_finite(&r, model, 4, &err), ATTN_ERR_RESULT_OVERFLOW);
		ck_assert_str_eq(err.field, "query");
		ck_assert_uint_eq(err.index, 0);
		ck_assert_msg(strstr(err.message, "W_O") != NULL, "weights %d: %s", wm, err.message);
	}
}
END_TEST

/* sdpa [1, 1, 2, D] with every q element qv and k element kv, v = 1..; an
 * additive mask [2, 2] of mv when mask != NULL. Runs the fast path and the
 * twin; both must give want, and the same numbers when that is ATTN_OK. */
static void sdpa_uniform(size_t D, float qv, float kv, const float *mask, float scale,
			 enum attn_status want)
{
	float q[32], k[32], v[32], out[32], out_ref[32], ws[4096];
	struct attn_error err;
	struct attn_sdpa r;
	size_t ws_bytes;

	for (size_t x = 0; x < 2 * D; x++) {
		q[x] = qv;
		k[x] = kv;
		v[x] = (float)x + 1.0f;
	}
	memset(&r, 0, sizeof(r));
	r.B = r.H = r.Hkv = 1;
	r.Lq = r.Lk = 2;
	r.D = r.Dv = D;
	r.scale = scale;
	r.q = attn_cview_bhld(q, 1, 2, D);
	r.k = attn_cview_bhld(k, 1, 2, D);
	r.v = attn_cview_bhld(v, 1, 2, D);
	r.out = attn_view_bhld(out, 1, 2, D);
	if (mask != NULL) {
		r.mask.user_kind = ATTN_USER_MASK_ADDITIVE;
		r.mask.user = mask;
		r.mask.user_rank = 2;
		r.mask.user_shape[0] = r.mask.user_shape[1] = 2;
	}
	ck_assert_int_eq(attn_sdpa_workspace(&r, &ws_bytes, NULL), ATTN_OK);
	ck_assert_uint_le(ws_bytes, sizeof(ws));
	ck_assert_int_eq(attn_sdpa_forward(&r, ws, ws_bytes, &err), want);
	if (want == ATTN_ERR_RESULT_OVERFLOW) {
		ck_assert_str_eq(err.field, "q");
		ck_assert_uint_eq(err.index, 0);
	}
	memcpy(out_ref, out, sizeof(out));
	ck_assert_int_eq(attn_sdpa_forward_ref(&r, &err), want);
	for (size_t x = 0; want == ATTN_OK && x < 2 * D; x++)
		ck_assert_float_eq_tol(out[x], out_ref[x], 1e-5f);
}

/* issue 17: scores that overflow to -inf were a zero answer (a row "with no
 * visible key"); now refused like +inf, on the whole-row paths (sgemm, and
 * tile.h's at D = 16) and in the twin, while masking stays zeros. */
START_TEST(negative_overflow_is_reported)
{
	static const float wide[4] = { -3e38f, -3e38f, -3e38f, -3e38f };
	static const float hidden[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
	static const float half[4] = { -INFINITY, -3e38f, -3e38f, -INFINITY };
	static const float none[4] = { 0, 0, 0, 0 };
	size_t dims[2] = { 2, 16 };

	for (size_t d = 0; d < 2; d++) {
		size_t D = dims[d];

		/* q . k = -2e40 * D / 2 past -FLT_MAX, +inf the known case */
		sdpa_uniform(D, 1e20f, -1e20f, NULL, 0.0f, ATTN_ERR_RESULT_OVERFLOW);
		sdpa_uniform(D, 1e20f, 1e20f, NULL, 0.0f, ATTN_ERR_RESULT_OVERFLOW);
		sdpa_uniform(D, 1e18f, -1e18f, NULL, 0.0f, ATTN_OK);
		/* a score of -2e38 / D * D plus a mask value of -3e38 */
		sdpa_uniform(D, 1e19f, -2e19f / (float)D, wide, 1.0f, ATTN_ERR_RESULT_OVERFLOW);
		sdpa_uniform(D, 1e19f, -2e19f / (float)D, none, 1.0f, ATTN_OK);
		sdpa_uniform(D, 1e19f, -2e19f / (float)D, half, 1.0f, ATTN_ERR_RESULT_OVERFLOW);
		/* masked by -inf everywhere: zeros, as before, whatever q . k is */
		sdpa_uniform(D, 1e20f, -1e20f, hidden, 0.0f, ATTN_OK);
	}
}
END_TEST

/* The streaming layer (no weights asked) and the whole-row one, on a model
 * whose projections are the identity (E = D = 2, one head), so that q . k is
 * what the inputs make it: query [1, 2] of qv, keys [n_keys, 2] of kv, the
 * last key (when two) [1, 1], whose score stays finite. */
static enum attn_status identity_layer(float qv, float kv, size_t n_keys,
				       enum attn_weights_mode wm, struct attn_error *err)
{
	struct attn_model_config cfg = { 2, 1, 0, 0, 0 };
	float w_qkv[12] = { 0 }, w_o[4] = { 1, 0, 0, 1 };
	float x[2] = { qv, qv }, keys[4] = { kv, kv, 1, 1 }, out[2], w[2];
	struct attn_model *model;
	struct attn_mha r;

	for (size_t row = 0; row < 6; row++) /* Wq, Wk, Wv: each the identity */
		w_qkv[row * 2 + row % 2] = 1.0f;
	ck_assert_int_eq(attn_model_new_explicit(&model, &cfg, w_qkv, NULL, w_o, NULL, NULL, NULL),
			 ATTN_OK);
	memset(&r, 0, sizeof(r));
	r.model = model;
	r.B = r.Lq = 1;
	r.Lk = n_keys;
	r.query = x;
	r.key = keys;
	r.value = keys;
	r.out = out;
	r.weights_mode = wm;
	r.weights = w;
	return forward_finite(&r, model, 2, err);
}

START_TEST(negative_overflow_is_reported_by_layers)
{
	struct attn_error err;

	for (int wm = ATTN_WEIGHTS_NONE; wm <= ATTN_WEIGHTS_PER_HEAD; wm++) {
		enum attn_weights_mode m = (enum attn_weights_mode)wm;

		/* q . k = -2e40 and +2e40: both refused */
		ck_assert_int_eq(identity_layer(1e20f, -1e20f, 1, m, &err),
				 ATTN_ERR_RESULT_OVERFLOW);
		ck_assert_str_eq(err.field, "query");
		ck_assert_int_eq(identity_layer(1e20f, 1e20f, 1, m, &err),
				 ATTN_ERR_RESULT_OVERFLOW);
		/* -2e36: finite */
		ck_assert_int_eq(identity_layer(1e18f, -1e18f, 1, m, NULL), ATTN_OK);
		/* beside a finite score, -inf weighs 0 as exact arithmetic gives */
		ck_assert_int_eq(identity_layer(1e20f, -1e20f, 2, m, NULL), ATTN_OK);
	}
}
END_TEST

/* ---- weights ---------------------------------------------------------- */

START_TEST(prng_is_splitmix64)
{
	struct attn_prng g;

	/* First outputs of SplitMix64 seeded with 0 (the reference values). */
	attn_prng_seed(&g, 0);
	ck_assert_uint_eq(attn_prng_next(&g), UINT64_C(0xe220a8397b1dcdaf));
	ck_assert_uint_eq(attn_prng_next(&g), UINT64_C(0x6e789e6aa1b965f4));
}
END_TEST

START_TEST(seeded_model_follows_pytorch_init)
{
	struct attn_model_config cfg = { 64, 8, 2, 1, 50 };
	struct attn_model *m, *m2;
	double bound_qkv = sqrt(6.0 / (64 + (8 + 4) * 8)), bound_o = 1.0 / 8.0, sum = 0, sq = 0;
	size_t rows = (8 + 2 * 2) * 8;

	ck_assert_int_eq(attn_model_new_seeded(&m, &cfg, 42, NULL), ATTN_OK);
	ck_assert_int_eq(attn_model_new_seeded(&m2, &cfg, 42, NULL), ATTN_OK);
	ck_assert_mem_eq(m->w_qkv, m2->w_qkv, rows * 64 * sizeof(float));
	for (size_t i = 0; i < rows * 64; i++)
		ck_assert(fabs(m->w_qkv[i]) <= bound_qkv);
	for (size_t i = 0; i < 64 * 64; i++)
		ck_assert(fabs(m->w_o[i]) <= bound_o);
	for (size_t i = 0; i < rows; i++)
		ck_assert(m->b_qkv[i] == 0.0f);
	for (size_t i = 0; i < 50 * 64; i++) {
		sum += m->embed[i];
		sq += m->embed[i] * m->embed[i];
	}
	ck_assert(fabs(sum / 3200) < 0.06 && fabs(sq / 3200 - 1.0) < 0.08); /* N(0, 1) */
	attn_model_free(m);
	attn_model_free(m2);
	attn_model_free(NULL);
}
END_TEST

START_TEST(alibi_slopes_as_bloom)
{
	float s8[8], s6[6];

	attn_alibi_slopes(s8, 8);
	for (size_t h = 0; h < 8; h++)
		ck_assert_float_eq_tol(s8[h], powf(0.5f, (float)(h + 1)), 1e-7f);
	/* H = 6: the 4-head slopes 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3 */
	attn_alibi_slopes(s6, 6);
	ck_assert_float_eq_tol(s6[0], 0.25f, 1e-7f);
	ck_assert_float_eq_tol(s6[3], 1.0f / 256, 1e-9f);
	ck_assert_float_eq_tol(s6[4], 0.5f, 1e-7f);
	ck_assert_float_eq_tol(s6[5], 0.125f, 1e-7f);
}
END_TEST

/* ---- statuses --------------------------------------------------------- */

START_TEST(bad_requests_get_named_statuses)
{
	struct attn_model_config cfg = { 10, 3, 0, 0, 0 };
	struct attn_model *m = NULL;
	struct attn_error err;
	struct attn_mha r;
	float x[16] = { 0 }, out[16];
	size_t bytes;

	ck_assert_int_eq(attn_model_new_seeded(&m, &cfg, 1, &err), ATTN_ERR_HEADS);
	ck_assert_ptr_null(m);
	ck_assert_str_eq(attn_status_str(err.status), "heads_do_not_divide_model_dim");
	cfg = (struct attn_model_config){ 8, 4, 3, 0, 0 };
	ck_assert_int_eq(attn_model_new_seeded(&m, &cfg, 1, &err), ATTN_ERR_KV_HEADS);
	cfg = (struct attn_model_config){ 6, 2, 0, 0, 4 };
	ck_assert_int_eq(attn_model_new_seeded(&m, &cfg, 1, &err), ATTN_OK);
	memset(&r, 0, sizeof(r));
	r.model = m;
	r.B = 1;
	r.Lq = r.Lk = 2;
	r.query = x;
	r.out = out;
	ck_assert_int_eq(attn_mha_workspace(&r, &bytes, &err), ATTN_OK);
	r.pos.kind = ATTN_POS_ROPE; /* D = 3 is odd */
	ck_assert_int_eq(attn_mha_workspace(&r, &bytes, &err), ATTN_ERR_ROPE_DIM);
	ck_assert_str_eq(err.field, "positional"); /* no rotary_dim asked: the choice of RoPE */
	r.pos.rotary_dim = 3;
	ck_assert_int_eq(attn_mha_workspace(&r, &bytes, &err), ATTN_ERR_ROPE_DIM);
	ck_assert_str_eq(err.field, "rotary_dim");
	r.pos.rotary_dim = 2; /* the first pair of channels of each head */
	ck_assert_int_eq(attn_mha_workspace(&r, &bytes, &err), ATTN_OK);
	r.pos.rotary_dim = 0;
	r.pos.kind = ATTN_POS_NONE;
	r.Lq = r.Lk = 0;
	ck_assert_int_eq(attn_mha_workspace(&r, &bytes, &err), ATTN_ERR_EMPTY);
	r.Lq = r.Lk = SIZE_MAX / 2;
	ck_assert_int_eq(attn_mha_workspace(&r, &bytes, &err), ATTN_ERR_OVERFLOW);
	r.Lq = r.Lk = 2;
	x[7] = NAN;
	ck_assert_int_eq(attn_mha_forward_ref(&r, &err), ATTN_ERR_NONFINITE);
	ck_assert_uint_eq(err.index, 7);
	ck_assert_str_eq(err.field, "query");
	ck_assert_int_eq(attn_mha_forward(&r, out, 4, &err), ATTN_ERR_WORKSPACE);
	{
		int64_t ids[3] = { 0, 3, 4 };
		float emb[18];

		ck_assert_int_eq(attn_model_embed(m, emb, ids, 3, &err), ATTN_ERR_TOKEN);
		ck_assert_uint_eq(err.index, 2);
	}
	attn_model_free(m);
}
END_TEST

/* The twin's row of probabilities, [H, Lk] doubles, is sized with a checked
 * multiply: with B = Lq = 1 the request's [B, H, Lq, Lk] floats fit size_t
 * while H Lk doubles do not (H Lk = 2^61 + 2^31), and the twin must refuse
 * before it reads q, k, v (one float each here) or allocates. */
START_TEST(sdpa_ref_checks_its_row_size)
{
	float q[1] = { 0 }, k[1] = { 0 }, v[1] = { 0 }, out[1];
	struct attn_sdpa r;
	struct attn_error err;

	memset(&r, 0, sizeof(r));
	r.B = 1;
	r.H = (size_t)1 << 31;
	r.Hkv = 1;
	r.Lq = 1;
	r.Lk = ((size_t)1 << 30) + 1;
	r.D = r.Dv = 1;
	r.q = attn_cview_bhld(q, r.H, r.Lq, r.D);
	r.k = attn_cview_bhld(k, r.Hkv, r.Lk, r.D);
	r.v = attn_cview_bhld(v, r.Hkv, r.Lk, r.Dv);
	r.out = attn_view_bhld(out, r.H, r.Lq, r.Dv);
	ck_assert_int_eq(attn_sdpa_forward_ref(&r, &err), ATTN_ERR_OVERFLOW);
	ck_assert_str_eq(err.field, "k");
}
END_TEST

/* Without weights the workspace is O(block * Lk), not O(H * Lq * Lk). */
START_TEST(workspace_grows_with_block_not_square)
{
	struct attn_model_config cfg = { 512, 8, 0, 1, 0 };
	struct attn_model *m;
	struct attn_mha r;
	size_t bytes, io = 8192 * 512 * sizeof(float);
	float *in = malloc(io), *out = malloc(io); /* never touched: sizing reads no data */

	ck_assert_int_eq(attn_model_alloc(&m, &cfg, NULL), ATTN_OK);
	memset(&r, 0, sizeof(r));
	r.model = m;
	r.B = 1;
	r.Lq = r.Lk = 8192;
	r.query = in;
	r.out = out;
	ck_assert_int_eq(attn_mha_workspace(&r, &bytes, NULL), ATTN_OK);
	io *= 2; /* input + output */
	/* the key-streaming path: one [B, Lq, E] accumulator and small blocks */
	ck_assert_msg(bytes < io, "workspace %zu bytes vs inputs+outputs %zu", bytes, io);
	free(in);
	free(out);
	attn_model_free(m);
}
END_TEST

static Suite *engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("twins");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, sdpa_fast_matches_ref, 0, 200);
	tcase_add_loop_test(tc, sdpa_threads_bit_identical, 0, 2);
	tcase_add_test(tc, sdpa_fully_masked_row_is_zero);
	tcase_add_loop_test(tc, mask_spans_match_cells, 0, 40);
	tcase_add_test(tc, mask_rules_by_hand);
	tcase_add_test(tc, overflowing_scores_are_reported);
	tcase_add_test(tc, overflowing_output_projection_is_named);
	tcase_add_test(tc, negative_overflow_is_reported);
	tcase_add_test(tc, negative_overflow_is_reported_by_layers);
	suite_add_tcase(s, tc);
	tc = tcase_create("model");
	tcase_add_test(tc, prng_is_splitmix64);
	tcase_add_test(tc, seeded_model_follows_pytorch_init);
	tcase_add_test(tc, alibi_slopes_as_bloom);
	tcase_add_test(tc, bad_requests_get_named_statuses);
	tcase_add_test(tc, workspace_grows_with_block_not_square);
	tcase_add_test(tc, sdpa_ref_checks_its_row_size);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, engine_suite, NULL);
}
