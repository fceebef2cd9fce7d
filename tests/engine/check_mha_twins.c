/*
 * check_mha_twins.c: the whole attention layer's fast path against its naive
 * twin on seeded random layers:
 *
 *   mha    attn_mha_forward (key-streaming without weights, whole rows with
 *          them or with the projections shown) vs attn_mha_forward_ref, every
 *          option combined, head_outputs too (and their W_O product = out)
 * Tolerance (seeded.h): |fast - ref| <= 1e-5 + 1e-4 |ref|. The core (sdpa)
 * and the masks alone are check_engine's.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/mha.h"
#include "engine/model.h"
#include "engine/prng.h"

#include "tests/lib/light.h"
#include "tests/lib/seeded.h"
#include "tests/lib/suite_main.h"

/* Kinds of random layer: small heads, wide heads (D % 16 == 0, the tile
 * kernels' shapes), and wide heads with nothing after Q K^T that changes
 * scores (no softcap or ALiBi), where the tile kernel hands the softmax each
 * row's max, streamed or on whole rows; long windows leave rows that see
 * every key of a block. */
enum twin_kind { TWIN_SMALL, TWIN_WIDE, TWIN_PLAIN };

/* Asks r for its projections into heads: q [nq], then k and v [nk] each. */
static void mha_show(struct attn_mha *r, float *heads, size_t nq, size_t nk)
{
	r->show_projections = 1;
	r->q_heads = heads;
	r->k_heads = heads + nq;
	r->v_heads = heads + nq + nk;
}

/* The meaning of head_outputs [B, H, Lq, D]: concatenated per query and
 * multiplied by W_O (plus b_O), they are the layer's output [B, Lq, E]. */
static void assert_heads_make_out(const struct attn_mha *r, const float *heads, const float *out,
				  int seed)
{
	const struct attn_model *m = r->model;
	size_t HD = m->H * m->D, rows = r->B * r->Lq;
	float *ctx = malloc(rows * HD * sizeof(float)), *made = malloc(rows * m->E * sizeof(float));

	ck_assert(ctx != NULL && made != NULL);
	for (size_t b = 0; b < r->B; b++)
		for (size_t h = 0; h < m->H; h++)
			for (size_t i = 0; i < r->Lq; i++)
				memcpy(ctx + (b * r->Lq + i) * HD + h * m->D,
				       heads + ((b * m->H + h) * r->Lq + i) * m->D, m->D * sizeof(float));
	for (size_t row = 0; row < rows; row++)
		for (size_t e = 0; e < m->E; e++) {
			double acc = m->b_o ? m->b_o[e] : 0.0;

			for (size_t j = 0; j < HD; j++)
				acc += (double)ctx[row * HD + j] * m->w_o[e * HD + j];
			made[row * m->E + e] = (float)acc;
		}
	test_assert_close(made, out, rows * m->E, "head outputs x W_O", seed);
	free(ctx);
	free(made);
}

/*
 * One random layer, fast path against the reference. wide: head dimensions
 * that are multiples of 16 and key lengths past KEY_BLOCK (512), so the
 * streaming path runs tile.h's kernels over several key blocks (on a CPU
 * with AVX-512F; elsewhere its sgemm twin); otherwise D <= 12 (sgemm).
 */
static void mha_twins(int seed, enum twin_kind kind)
{
	int wide = kind != TWIN_SMALL, plain = kind == TWIN_PLAIN;
	struct attn_model_config cfg = { 0 };
	struct attn_model *model = NULL;
	struct attn_mha r;
	struct attn_prng g;
	struct attn_error err;
	float *x, *xk = NULL, *xv = NULL, *out_f, *out_r, *w_f, *w_r;
	float *heads_f = NULL, *heads_r = NULL; /* q, k, v heads, one after another */
	float *outs_f = NULL, *outs_r = NULL;   /* head_outputs [B, H, Lq, D] */
	size_t nw, nq, nk, ws_bytes, lens[8];
	double qpos[1100], kpos[1100]; /* explicit positions, up to the longest wide case */
	void *ws;
	int cross;

	attn_prng_seed(&g, (uint64_t)(plain ? 9000 : wide ? 7000 : 5000) + (uint64_t)seed);
	cfg.H = test_pick(&g, 1, 4);
	cfg.Hkv = cfg.H % 2 == 0 && test_pick(&g, 0, 1) ? cfg.H / 2 : cfg.H;
	cfg.E = cfg.H * (wide ? 16 * test_pick(&g, 1, 5) : 2 * test_pick(&g, 1, 6)); /* even D for RoPE */
	cfg.bias = (int)test_pick(&g, 0, 1);
	ck_assert_int_eq(attn_model_new_seeded(&model, &cfg, (uint64_t)seed, &err), ATTN_OK);
	if (cfg.bias) /* nonzero biases so they are tested */
		for (size_t i = 0; i < (cfg.H + 2 * model->Hkv) * model->D; i++)
			model->b_qkv[i] = (float)attn_prng_normal(&g);
	memset(&r, 0, sizeof(r));
	r.model = model;
	r.B = test_pick(&g, 1, 3);
	r.Lq = test_pick(&g, 1, wide ? 100 : 40);
	cross = (int)test_pick(&g, 0, 2); /* 0 self, 1 key only, 2 key and value */
	r.Lk = cross ? test_pick(&g, 1, wide ? 1100 : 40) : r.Lq;
	if (wide && seed % 8 == 1) { /* streamed two items a step: groups of 2, 2, 1 */
		r.B = 5;
		r.Lq = r.Lk = 200;
		cross = 0;
	}
	x = test_randn(&g, r.B * r.Lq * cfg.E);
	r.query = x;
	if (cross) {
		xk = test_randn(&g, r.B * r.Lk * cfg.E);
		r.key = xk;
	}
	if (cross == 2) {
		xv = test_randn(&g, r.B * r.Lk * cfg.E);
		r.value = xv;
	}
	r.pos.kind = (enum attn_pos_kind)(seed % (plain ? 3 : 4)); /* ALiBi is last */
	r.pos.style = (enum attn_rope_style)test_pick(&g, 0, 1);
	r.pos.rotary_dim = test_pick(&g, 0, 1) ? 0 : 2;
	r.pos.offset = test_pick(&g, 0, 5);
	r.pos.scaling = test_pick(&g, 0, 1) ? 0.0 : 2.0;
	if (test_pick(&g, 0, 3) == 0) {
		for (size_t i = 0; i < 1100; i++) {
			qpos[i] = (double)(3 * i + 1);
			kpos[i] = (double)(2 * i);
		}
		r.pos.q_positions = qpos;
		r.pos.k_positions = kpos;
	}
	r.mask.causal = (enum attn_causal)test_pick(&g, 0, 2);
	r.mask.window = test_pick(&g, 0, 2) == 0 ? test_pick(&g, 1, plain ? 700 : 5) : 0;
	if (test_pick(&g, 0, 1)) {
		for (size_t b = 0; b < r.B; b++)
			lens[b] = test_pick(&g, 1, r.Lk);
		r.mask.kv_lengths = lens;
	}
	r.softcap = test_pick(&g, 0, 3) == 0 && !plain ? 2.0f : 0.0f;
	r.threads = test_pick(&g, 1, 2);
	/* wide: a third each, streaming (none) and whole rows (per head, mean) */
	r.weights_mode = (enum attn_weights_mode)(wide ? (size_t)seed % 3 : test_pick(&g, 0, 2));
	nw = r.B * cfg.H * r.Lq * r.Lk;
	out_f = calloc(r.B * r.Lq * cfg.E, 4);
	out_r = calloc(r.B * r.Lq * cfg.E, 4);
	w_f = calloc(nw, 4);
	w_r = calloc(nw, 4);
	r.weights = w_f;
	r.out = out_f;
	nq = r.B * cfg.H * r.Lq * model->D;
	nk = r.B * model->Hkv * r.Lk * model->D;
	if (seed % 4 == 2) { /* the projections shown: [B, H, Lq, D], [B, Hkv, Lk, D] x 2 */
		heads_f = calloc(nq + 2 * nk, 4);
		heads_r = calloc(nq + 2 * nk, 4);
		mha_show(&r, heads_f, nq, nk);
	}
	if (seed % 3 != 1) { /* with every weights mode: streamed and whole rows */
		outs_f = calloc(nq, 4);
		outs_r = calloc(nq, 4);
		r.head_outputs = outs_f;
	}
	ck_assert_msg(attn_mha_workspace(&r, &ws_bytes, &err) == ATTN_OK, "%s", err.message);
	ws = malloc(ws_bytes);
	ck_assert_msg(attn_mha_forward(&r, ws, ws_bytes, &err) == ATTN_OK, "%s", err.message);
	r.out = out_r;
	r.weights = w_r;
	if (heads_r != NULL)
		mha_show(&r, heads_r, nq, nk);
	if (outs_r != NULL)
		r.head_outputs = outs_r;
	ck_assert_msg(attn_mha_forward_ref(&r, &err) == ATTN_OK, "%s", err.message);
	test_assert_close(out_f, out_r, r.B * r.Lq * cfg.E, "mha out", seed);
	if (heads_r != NULL)
		test_assert_close(heads_f, heads_r, nq + 2 * nk, "mha q, k, v heads", seed);
	if (outs_r != NULL) {
		test_assert_close(outs_f, outs_r, nq, "mha head outputs", seed);
		assert_heads_make_out(&r, outs_r, out_r, seed);
	}
	if (r.weights_mode != ATTN_WEIGHTS_NONE)
		test_assert_close(w_f, w_r, r.weights_mode == ATTN_WEIGHTS_MEAN ? nw / cfg.H : nw,
			     "mha weights", seed);
	free(ws);
	free(x);
	free(xk);
	free(xv);
	free(out_f);
	free(out_r);
	free(w_f);
	free(w_r);
	free(heads_f);
	free(heads_r);
	free(outs_f);
	free(outs_r);
	attn_model_free(model);
}

START_TEST(mha_fast_matches_ref)
{
	mha_twins(_i, TWIN_SMALL);
}
END_TEST

START_TEST(mha_wide_heads_match_ref)
{
	mha_twins(_i, TWIN_WIDE);
}
END_TEST

START_TEST(mha_plain_streams_match_ref)
{
	mha_twins(_i, TWIN_PLAIN);
}
END_TEST

static Suite *mha_twins_suite(void)
{
	Suite *s = suite_create("mha_twins");
	TCase *tc = tcase_create("twins");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, mha_fast_matches_ref, 0, 120);
	tcase_add_loop_test(tc, mha_wide_heads_match_ref, 0, test_light() ? 3 : 24);
	tcase_add_loop_test(tc, mha_plain_streams_match_ref, 0, test_light() ? 3 : 16);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, mha_twins_suite, NULL);
}
