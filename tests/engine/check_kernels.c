/*
 * check_kernels.c: the engine's inner kernels against their scalar twins.
 *
 *   tile    tile.h's AVX-512F products vs their scalar twins, bitwise, and a
 *           double-precision product; the lane maxima tile_qk hands over
 *   few     linear_few's AVX-512F and AVX2 kernels vs their scalar twin,
 *           bitwise, and a double-precision product; nothing outside the
 *           tile written
 *   gemm    gemm.h's small kernel vs its scalar twin, bitwise, both ways of
 *           storing B, alpha and beta as the engine passes them and others;
 *           the twin and gemm itself (either path) vs a double-precision
 *           product; which products take the small kernel
 *   exp     the AVX2 and AVX-512 exp and softmax vs libm expf and the
 *           scalar softmax; the online step with a known max vs without;
 *           the online steps over far-apart blocks vs the whole row
 *   finite  attn_all_finite at every position
 * Kernels this CPU cannot run are skipped (the twin still runs).
 */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/gemm.h"
#include "engine/linear_few.h"
#include "engine/prng.h"
#include "engine/softmax.h"
#include "engine/tile.h"

#include "tests/lib/expect.h"
#include "tests/lib/light.h"
#include "tests/lib/seeded.h"
#include "tests/lib/suite_main.h"

/* got is a float product's double-precision value want, within rounding. */
static int near(double got, double want)
{
	return fabs(got - want) <= 1e-4 + 1e-5 * fabs(want);
}

/* ---- tile kernels ----------------------------------------------------- */

/* tile.h: the vector kernels give the scalar twins' bits (same fma chains),
 * and the twins agree with a double-precision product. */
START_TEST(tile_kernels_match_twins)
{
	struct attn_prng g;
	size_t m, n, D, ldq, ldk, lds;
	float *q, *k, *kt, *v, *vh, *s_vec, *s_sc, *acc_vec, *acc_sc;
	int simd;

	attn_prng_seed(&g, 9000 + (uint64_t)_i);
	D = 16 * test_pick(&g, 1, 9);
	m = test_pick(&g, 1, 50);
	n = test_pick(&g, 1, 600);
	ldq = D + test_pick(&g, 0, 20);
	ldk = tile_ld(n);
	lds = n + test_pick(&g, 0, 20); /* as tight as a weights row, or wider */
	simd = tile_simd_available(D);
	q = test_randn(&g, m * ldq);
	k = test_randn(&g, n * 2 * D); /* rows 2 D apart, as the layer's kv block */
	v = k + D;
	kt = test_randn(&g, D * ldk);
	vh = test_randn(&g, n * D);
	s_vec = calloc(m * lds, sizeof(float));
	s_sc = calloc(m * lds, sizeof(float));
	acc_vec = test_randn(&g, m * ldq);
	acc_sc = malloc(m * ldq * sizeof(float));
	ck_assert_ptr_nonnull(s_vec);
	ck_assert_ptr_nonnull(s_sc);
	ck_assert_ptr_nonnull(acc_sc);
	memcpy(acc_sc, acc_vec, m * ldq * sizeof(float));
	tile_pack_kt(kt, ldk, k, 2 * D, n, D);
	tile_pack_v(vh, v, 2 * D, n, D);
	tile_qk(s_vec, lds, NULL, q, ldq, kt, ldk, m, n, D, 0.1f, simd);
	tile_qk(s_sc, lds, NULL, q, ldq, kt, ldk, m, n, D, 0.1f, 0);
	tile_pv(acc_vec, ldq, s_vec, lds, vh, m, n, D, simd);
	tile_pv(acc_sc, ldq, s_sc, lds, vh, m, n, D, 0);
	for (size_t r = 0; r < m; r++) {
		EXPECT_MSG(memcmp(s_vec + r * lds, s_sc + r * lds, lds * sizeof(float)) == 0,
			   "qk row %zu differs (iter %d)", r, _i);
		EXPECT_MSG(memcmp(acc_vec + r * ldq, acc_sc + r * ldq, D * sizeof(float)) == 0,
			   "pv row %zu differs (iter %d)", r, _i);
		for (size_t j = 0; j < lds; j++) {
			double want = 0.0;

			for (size_t d = 0; j < n && d < D; d++)
				want += (double)q[r * ldq + d] * k[j * 2 * D + d];
			want *= 0.1f; /* not a power of two: where the scale is applied shows */
			EXPECT_MSG(near(s_sc[r * lds + j], want),
				   "qk [%zu, %zu] = %g, want %g", r, j, s_sc[r * lds + j], want);
		}
	}
	free(q);
	free(k);
	free(kt);
	free(vh);
	free(s_vec);
	free(s_sc);
	free(acc_vec);
	free(acc_sc);
}
END_TEST

/* The lane maxima of tile_qk, kept by the kernel (scale 1) or by a pass
 * (any other scale, a negative one too), against the scores it stored. */
START_TEST(tile_lane_max_matches_scores)
{
	const float scales[3] = { 1.0f, 0.1f, -0.5f };
	struct attn_prng g;
	size_t m, n, D, ldk;
	float *q, *k, *kt, *s, *vmax;

	attn_prng_seed(&g, 9100 + (uint64_t)_i);
	D = 16 * test_pick(&g, 1, 5);
	m = test_pick(&g, 1, 50);
	n = _i % 4 == 0 ? test_pick(&g, 1, 15) : test_pick(&g, 1, 600); /* lanes with no key */
	ldk = tile_ld(n);
	q = test_randn(&g, m * D);
	k = test_randn(&g, n * D);
	kt = test_randn(&g, D * ldk);
	s = test_randn(&g, m * n);
	vmax = test_randn(&g, m * TILE_COLS);
	tile_pack_kt(kt, ldk, k, D, n, D);
	for (int simd = 0; simd <= tile_simd_available(D); simd++)
		for (int c = 0; c < 3; c++) {
			tile_qk(s, n, vmax, q, D, kt, ldk, m, n, D, scales[c], simd);
			for (size_t r = 0; r < m; r++) {
				float row = -INFINITY;

				for (size_t l = 0; l < TILE_COLS; l++) {
					float want = -INFINITY;

					for (size_t j = l; j < n; j += TILE_COLS)
						want = fmaxf(want, s[r * n + j]);
					EXPECT_MSG(vmax[r * TILE_COLS + l] == want,
						   "simd %d scale %g row %zu lane %zu: %g vs %g",
						   simd, scales[c], r, l, vmax[r * TILE_COLS + l],
						   want);
					row = fmaxf(row, want);
				}
				EXPECT_MSG(tile_row_max(vmax + r * TILE_COLS) == row, "row %zu max", r);
			}
		}
	free(q);
	free(k);
	free(kt);
	free(s);
	free(vmax);
}
END_TEST

/* ---- few-row projections --------------------------------------------- */

/* Sentinel for the elements linear_few must not write. */
#define UNTOUCHED 1234.5f

/* out [n, ld_out] of UNTOUCHED. */
static float *untouched(size_t n, size_t ld_out)
{
	float *out = malloc(n * ld_out * sizeof(float));

	ck_assert_ptr_nonnull(out);
	for (size_t i = 0; i < n * ld_out; i++)
		out[i] = UNTOUCHED;
	return out;
}

/* One shape of linear_few: out [n, ld_out] = x [n, ld_x] W [E, ldw] (+ a
 * bias when with_bias), W off 64-byte alignment by `skew` floats and
 * allocated to its last element, so that a read past it is the sanitizers'
 * to see. Each vector kernel this machine runs (AVX-512F, AVX2) gives the
 * scalar twin's bits and writes nothing past column w; the twin agrees with
 * a double-precision product. */
static void few_check(struct attn_prng *g, size_t n, size_t w, size_t E, size_t ld_x, size_t ldw,
		      size_t ld_out, size_t skew, int with_bias, int iter)
{
	float *x = test_randn(g, (n - 1) * ld_x + E), *Wbuf = test_randn(g, E * ldw + skew);
	float *W = Wbuf + skew; /* seek past skew floats: W off alignment */
	float *bias = with_bias ? test_randn(g, w) : NULL, *out_vec, *out_sc;
	enum few_isa best = linear_few_best();

	out_sc = untouched(n, ld_out);
	linear_few(out_sc, ld_out, x, ld_x, n, W, ldw, bias, w, E, FEW_SCALAR);
	for (enum few_isa isa = FEW_AVX2; isa <= best; isa++) {
		out_vec = untouched(n, ld_out);
		linear_few(out_vec, ld_out, x, ld_x, n, W, ldw, bias, w, E, isa);
		for (size_t r = 0; r < n; r++) {
			EXPECT_MSG(memcmp(out_vec + r * ld_out, out_sc + r * ld_out,
					  ld_out * sizeof(float)) == 0,
				   "row %zu differs (iter %d, isa %d, n %zu w %zu E %zu)", r, iter,
				   (int)isa, n, w, E);
			for (size_t c = w; c < ld_out; c++)
				EXPECT_MSG(out_vec[r * ld_out + c] == UNTOUCHED,
					   "row %zu column %zu past w = %zu written (isa %d)", r, c,
					   w, (int)isa);
		}
		free(out_vec);
	}
	for (size_t r = 0; r < n; r++)
		for (size_t c = 0; c < w; c++) {
			double want = bias != NULL ? bias[c] : 0.0;

			for (size_t k = 0; k < E; k++)
				want += (double)x[r * ld_x + k] * W[k * ldw + c];
			EXPECT_MSG(near(out_sc[r * ld_out + c], want),
				   "[%zu, %zu] = %g, want %g", r, c, out_sc[r * ld_out + c], want);
		}
	free(x);
	free(Wbuf);
	free(bias);
	free(out_sc);
}

/* few_check over seeded shapes that cross the 16-row packed tiles, the AVX2
 * kernel's 6-row register tiles, groups of 128 rows, 256-row blocks of W,
 * 256-column tiles and 16-column strips; W one float off 64-byte alignment
 * on odd iterations, a tile of a wider W on two in three. */
START_TEST(few_rows_match_twin)
{
	struct attn_prng g;
	size_t n, w, E;

	attn_prng_seed(&g, 9200 + (uint64_t)_i);
	n = _i < 3 ? 16 : test_pick(&g, 1, 70);
	w = _i < 3 ? 256 : test_pick(&g, 1, 400);
	E = _i < 3 ? 768 : test_pick(&g, 1, 600);
	if (_i % 4 == 3) { /* past one group of 128 rows, on a short E */
		n = test_pick(&g, 129, 300);
		E = test_pick(&g, 1, 40);
	}
	few_check(&g, n, w, E, E + test_pick(&g, 0, 9),
		  w + (_i % 3 == 0 ? 0 : test_pick(&g, 1, 40)), w + test_pick(&g, 0, 9),
		  (size_t)(_i % 2), _i % 4 != 1, _i);
}
END_TEST

/* few_check on the tails the seeded shapes may miss in a light run: widths
 * under, at and past one 8-float half and one 16-column strip, rows around
 * the AVX2 kernel's 6-row tile and a packed tile of 16, E at and one past a
 * 256-row block; W exactly as wide as w (no padding to read). */
START_TEST(few_tails_match_twin)
{
	static const size_t rows[] = {5, 6, 7, 17}, widths[] = {1, 7, 8, 9, 17}, depths[] = {256, 257};
	struct attn_prng g;
	int iter = 0;

	attn_prng_seed(&g, 9250);
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		for (size_t j = 0; j < sizeof widths / sizeof widths[0]; j++)
			for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++, iter++)
				few_check(&g, rows[i], widths[j], depths[k], depths[k], widths[j],
					  widths[j], (size_t)(iter % 2), iter % 3 != 0, iter);
}
END_TEST

/* ---- small products --------------------------------------------------- */

/* One seeded product C [m, n] (rows ldc apart) = alpha A [m, k] B + beta C,
 * B [k, n] or [n, k] (b_trans), every stride wider than tight on odd
 * iterations; C's columns past n start UNTOUCHED and must stay so. With
 * beta 0, C starts as NaN: sgemm does not read it then, nor may gemm. */
_Static_assert(40 * 40 <= GEMM_SMALL_PACK, "the seeded B's fit the small kernel's buffer");

START_TEST(gemm_small_matches_twin)
{
	static const float alphas[] = {1.0f, 0.35355339f, -2.5f}, betas[] = {0.0f, 1.0f, 0.5f};
	struct attn_prng g;
	int b_trans = _i % 2, pad = (_i / 2) % 2;
	size_t m, n, k, lda, ldb, ldc;
	float alpha = alphas[_i % 3], beta = betas[(_i / 3) % 3];
	float *A, *B, *C0, *c_twin, *c_small, *c_gemm;

	attn_prng_seed(&g, 9400 + (uint64_t)_i);
	m = test_pick(&g, 1, 12);
	n = test_pick(&g, 1, 40);
	k = test_pick(&g, 1, 40);
	lda = k + (pad ? test_pick(&g, 1, 5) : 0);
	ldb = (b_trans ? k : n) + (pad ? test_pick(&g, 1, 5) : 0);
	ldc = n + test_pick(&g, 1, 5);
	A = test_randn(&g, m * lda);
	B = test_randn(&g, (b_trans ? n : k) * ldb);
	C0 = test_randn(&g, m * ldc);
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < ldc; j++)
			C0[i * ldc + j] = j >= n ? UNTOUCHED : beta == 0.0f ? NAN : C0[i * ldc + j];
	c_twin = malloc(m * ldc * sizeof(float));
	c_small = malloc(m * ldc * sizeof(float));
	c_gemm = malloc(m * ldc * sizeof(float));
	ck_assert_ptr_nonnull(c_twin);
	ck_assert_ptr_nonnull(c_small);
	ck_assert_ptr_nonnull(c_gemm);
	memcpy(c_twin, C0, m * ldc * sizeof(float));
	memcpy(c_small, C0, m * ldc * sizeof(float));
	memcpy(c_gemm, C0, m * ldc * sizeof(float));
	gemm_small_twin(b_trans, m, n, k, alpha, A, lda, B, ldb, beta, c_twin, ldc);
	gemm(b_trans, m, n, k, alpha, A, lda, B, ldb, beta, c_gemm, ldc);
	if (gemm_small_taken(1, 1, 1)) {
		gemm_small(b_trans, m, n, k, alpha, A, lda, B, ldb, beta, c_small, ldc);
		EXPECT_MSG(memcmp(c_small, c_twin, m * ldc * sizeof(float)) == 0,
			   "small kernel differs from its twin (iter %d: m %zu n %zu k %zu)", _i,
			   m, n, k);
	}
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < ldc; j++) {
			double want = 0.0;

			if (j >= n) {
				EXPECT_MSG(c_twin[i * ldc + j] == UNTOUCHED &&
						   c_gemm[i * ldc + j] == UNTOUCHED,
					   "[%zu, %zu] past n = %zu written", i, j, n);
				continue;
			}
			for (size_t p = 0; p < k; p++)
				want += (double)A[i * lda + p] *
					(b_trans ? B[j * ldb + p] : B[p * ldb + j]);
			want = alpha * want + (beta == 0.0f ? 0.0 : (double)beta * C0[i * ldc + j]);
			EXPECT_MSG(near(c_twin[i * ldc + j], want),
				   "twin [%zu, %zu] = %g, want %g", i, j, c_twin[i * ldc + j], want);
			EXPECT_MSG(near(c_gemm[i * ldc + j], want),
				   "gemm [%zu, %zu] = %g, want %g", i, j, c_gemm[i * ldc + j], want);
		}
	free(A);
	free(B);
	free(C0);
	free(c_twin);
	free(c_small);
	free(c_gemm);
}
END_TEST

/* The small kernel takes products up to GEMM_SMALL_MACS multiply-adds whose
 * B fits its buffer, never an empty one, and a product whose m n k
 * overflows size_t goes to sgemm (where the engine checks its sizes). */
START_TEST(gemm_small_takes_only_small_products)
{
	int fma = gemm_small_taken(1, 1, 1);

	EXPECT_MSG(gemm_small_taken(4, 16, GEMM_SMALL_MACS / 64) == fma, "4 x 16 x %d",
		   GEMM_SMALL_MACS / 64);
	EXPECT_MSG(gemm_small_taken(GEMM_SMALL_MACS, 1, 1) == fma, "a column of %d",
		   GEMM_SMALL_MACS);
	EXPECT_MSG(!gemm_small_taken(4, 16, GEMM_SMALL_MACS / 64 + 1), "one step past the bound");
	EXPECT_MSG(!gemm_small_taken(1, 1, GEMM_SMALL_PACK / 8 + 1),
		   "B padded to 8 columns past the kernel's buffer");
	EXPECT_MSG(!gemm_small_taken(0, 4, 4) && !gemm_small_taken(4, 0, 4) &&
			   !gemm_small_taken(4, 4, 0),
		   "an empty product");
	EXPECT_MSG(!gemm_small_taken(SIZE_MAX / 2, 4, 4) && !gemm_small_taken(4, SIZE_MAX / 2, 4),
		   "m n k overflowing");
}
END_TEST

/* ---- exp and softmax -------------------------------------------------- */

static float row_top(const float *x, size_t n)
{
	float top = -INFINITY;

	for (size_t i = 0; i < n; i++)
		top = fmaxf(top, x[i]);
	return top;
}

/* Each vector exp this CPU runs (_i: the instruction set) against expf. */
START_TEST(vector_exp_matches_expf)
{
	enum softmax_isa isa = (enum softmax_isa)_i;
	float x[1000], y[1000];

	if (isa > softmax_isa_best())
		return;
	for (size_t i = 0; i < 1000; i++)
		x[i] = -100.0f + (float)i * 0.0885f; /* -100 .. -11.5, plus the 0 side below */
	x[0] = -INFINITY;
	x[999] = 0.0f;
	x[998] = 1e-8f;
	for (size_t n = 993; n <= 1000; n++) { /* every tail length of 8 */
		memset(y, 0xff, sizeof(y));
		softmax_vexp_isa(y, x + 1000 - n, n, isa);
		for (size_t i = 0; i < n; i++) {
			float want = expf(x[1000 - n + i]);

			EXPECT_MSG(fabsf(y[i] - want) <= 2e-7f * want + 1e-37f,
				   "isa %d exp(%g): %g vs %g", _i, x[1000 - n + i], y[i], want);
		}
	}
	softmax_vexp_isa(y, x, 1000, isa);
	ck_assert(y[0] == 0.0f);
	x[500] = NAN; /* stays NaN: a poisoned score must not become a number */
	softmax_vexp_isa(y, x, 1000, isa);
	ck_assert_msg(isnan(y[500]), "isa %d exp(NaN) = %g", _i, y[500]);
}
END_TEST

/* Each vector softmax (whole rows, and the online form over two blocks)
 * against the scalar twin; _i is the instruction set. */
START_TEST(softmax_fast_matches_scalar)
{
	enum softmax_isa isa = (enum softmax_isa)_i;
	struct attn_prng g;
	float a[301], b[301];

	if (isa > softmax_isa_best())
		return;
	attn_prng_seed(&g, 3);
	for (size_t n = 1; n <= 301; n += 25) {
		size_t lo = n / 7, hi = n - n / 9;
		float ma = -INFINITY, mb = -INFINITY, la = 0.0f, lb = 0.0f, fa, fb;

		for (size_t i = 0; i < n; i++)
			a[i] = b[i] = (float)(10.0 * attn_prng_normal(&g));
		a[n / 2] = b[n / 2] = -INFINITY;
		softmax_row_isa(a, n, 0, n, isa);
		softmax_row_isa(b, n, 0, n, SOFTMAX_SCALAR);
		test_assert_close(a, b, n, "softmax", (int)n);
		for (int block = 0; block < 2; block++) {
			for (size_t i = 0; i < n; i++)
				a[i] = b[i] = (float)(10.0 * attn_prng_normal(&g));
			fa = softmax_online_isa(a, n, lo, hi, &ma, &la, isa);
			fb = softmax_online_isa(b, n, lo, hi, &mb, &lb, SOFTMAX_SCALAR);
			test_assert_close(a, b, n, "online softmax", (int)n);
			ck_assert_msg(fabsf(fa - fb) <= 1e-6f + 1e-5f * fb, "alpha %g vs %g", fa, fb);
			ck_assert_msg(fabsf(la - lb) <= 1e-5f * lb, "sum %g vs %g", la, lb);
			ck_assert(ma == mb);
		}
	}
}
END_TEST

/* The softmax told the row's max (as the attention reads it off tile_qk),
 * online or on a whole row, gives the bits of the one that finds it, each
 * instruction set; a NaN cell its max does not show still poisons the row. */
START_TEST(softmax_known_max_matches_search)
{
	enum softmax_isa isa = (enum softmax_isa)_i;
	struct attn_prng g;
	float a[301], b[301];

	if (isa > softmax_isa_best())
		return;
	attn_prng_seed(&g, 4);
	for (size_t n = 1; n <= 301; n += 20) {
		float ma = -INFINITY, mb = -INFINITY, la = 0.0f, lb = 0.0f;

		for (int block = 0; block < 3; block++) {
			float fa, fb;

			for (size_t i = 0; i < n; i++)
				a[i] = b[i] = (float)(10.0 * attn_prng_normal(&g));
			fa = softmax_online_known_isa(a, n, row_top(a, n), &ma, &la, isa);
			fb = softmax_online_isa(b, n, 0, n, &mb, &lb, isa);
			ck_assert_msg(memcmp(a, b, n * sizeof(float)) == 0, "isa %d n %zu", _i, n);
			ck_assert(fa == fb && ma == mb && la == lb);
		}
		a[n / 2] = NAN;
		ck_assert(isnan(softmax_online_known_isa(a, n, 1.0f, &ma, &la, isa)));
		ck_assert(isnan(ma) && isnan(la) && isnan(a[0]) && isnan(a[n - 1]));

		for (size_t i = 0; i < n; i++)
			a[i] = b[i] = (float)(10.0 * attn_prng_normal(&g));
		softmax_row_known_isa(a, n, row_top(a, n), isa);
		softmax_row_isa(b, n, 0, n, isa);
		ck_assert_msg(memcmp(a, b, n * sizeof(float)) == 0, "row, isa %d n %zu", _i, n);
		b[n / 2] = NAN;
		softmax_row_known_isa(b, n, 1.0f, isa);
		ck_assert(isnan(b[0]) && isnan(b[n - 1]));
	}
}
END_TEST

/* The online softmax over blocks, its running sum rescaled by each alpha as
 * the streamed attention does, gives the whole row's softmax, on every
 * instruction set. The blocks lie far apart (a later block 100 below the
 * first, another 50 above that one): the running max must be kept, since
 * exp of the gap to a lower block's own max is past float32. */
START_TEST(softmax_online_blocks_match_whole_row)
{
	enum { BLOCK = 40, BLOCKS = 3, N = BLOCK * BLOCKS };
	static const float offset[BLOCKS] = { 100.0f, 0.0f, 50.0f };
	enum softmax_isa isa = (enum softmax_isa)_i;
	struct attn_prng g;
	float row[N], whole[N], p[N], block[BLOCK], m = -INFINITY, l = 0.0f;

	if (isa > softmax_isa_best())
		return;
	attn_prng_seed(&g, 5);
	for (size_t j = 0; j < N; j++)
		row[j] = whole[j] = offset[j / BLOCK] + (float)attn_prng_normal(&g);
	softmax_row_isa(whole, N, 0, N, SOFTMAX_SCALAR);
	for (size_t k = 0; k < BLOCKS; k++) {
		float alpha;

		memcpy(block, row + k * BLOCK, sizeof block);
		alpha = softmax_online_isa(block, BLOCK, 0, BLOCK, &m, &l, isa);
		ck_assert_msg(isfinite(alpha) && isfinite(l), "isa %d block %zu: alpha %g, sum %g",
			      _i, k, alpha, l);
		for (size_t j = 0; j < k * BLOCK; j++)
			p[j] *= alpha;
		memcpy(p + k * BLOCK, block, sizeof block);
	}
	ck_assert_msg(m == row_top(row, N), "isa %d: running max %g", _i, m);
	for (size_t j = 0; j < N; j++)
		p[j] /= l;
	test_assert_close(p, whole, N, "online blocks", _i);
}
END_TEST

/* Scores past float32 (+inf, or NaN from inf - inf) poison their row in
 * every twin, and an online row stays poisoned: the failure must reach the
 * output rather than turn into plausible numbers. */
START_TEST(softmax_overflowed_rows_are_nan)
{
	enum softmax_isa isa = (enum softmax_isa)_i;
	const float bad[2] = { INFINITY, NAN };

	if (isa > softmax_isa_best())
		return;
	for (size_t n = 1; n <= 40; n += 13)
		for (int v = 0; v < 2; v++) {
			float row[40], m = 0.5f, l = 2.0f, alpha;

			for (size_t i = 0; i < n; i++)
				row[i] = (float)i - 3.0f;
			row[n - 1 - n / 3] = bad[v];
			softmax_row_isa(row, n, 0, n, isa);
			for (size_t i = 0; i < n; i++)
				ck_assert_msg(isnan(row[i]), "isa %d n %zu: row[%zu] = %g", _i, n, i,
					      row[i]);
			for (size_t i = 0; i < n; i++)
				row[i] = (float)i;
			row[n / 2] = bad[v];
			alpha = softmax_online_isa(row, n, 0, n, &m, &l, isa);
			ck_assert(isnan(alpha) && isnan(m) && isnan(l) && isnan(row[n - 1]));
			for (size_t i = 0; i < n; i++)
				row[i] = 1.0f; /* a later, finite block */
			alpha = softmax_online_isa(row, n, 0, n, &m, &l, isa);
			ck_assert(isnan(alpha) && isnan(row[0]));
		}
}
END_TEST

/* ---- finiteness ------------------------------------------------------- */

/* attn_all_finite (vector body, scalar tail) sees one inf or NaN anywhere,
 * and takes FLT_MAX, subnormals and -0 for finite. */
START_TEST(all_finite_finds_every_position)
{
	const float bad[3] = { INFINITY, -INFINITY, NAN };
	float x[40] = { 0 };

	for (size_t n = 0; n <= 40; n++) {
		for (size_t i = 0; i < n; i++)
			x[i] = i % 3 == 0 ? FLT_MAX : i % 3 == 1 ? 1e-40f : -0.0f;
		ck_assert_int_eq(attn_all_finite(x, n), 1);
		for (size_t p = 0; p < n; p++)
			for (int b = 0; b < 3; b++) {
				float keep = x[p];

				x[p] = bad[b];
				ck_assert_msg(!attn_all_finite(x, n), "n %zu, position %zu", n, p);
				x[p] = keep;
			}
	}
}
END_TEST


static Suite *kernels_suite(void)
{
	Suite *s = suite_create("kernels");
	TCase *tc = tcase_create("tile");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, tile_kernels_match_twins, 0, test_light() ? 6 : 30);
	tcase_add_loop_test(tc, tile_lane_max_matches_scores, 0, test_light() ? 4 : 24);
	tcase_add_loop_test(tc, few_rows_match_twin, 0, test_light() ? 8 : 40);
	tcase_add_test(tc, few_tails_match_twin);
	tcase_add_loop_test(tc, gemm_small_matches_twin, 0, test_light() ? 18 : 72);
	tcase_add_test(tc, gemm_small_takes_only_small_products);
	suite_add_tcase(s, tc);
	tc = tcase_create("softmax");
	tcase_add_loop_test(tc, vector_exp_matches_expf, SOFTMAX_AVX2, SOFTMAX_AVX512 + 1);
	tcase_add_loop_test(tc, softmax_fast_matches_scalar, SOFTMAX_AVX2, SOFTMAX_AVX512 + 1);
	tcase_add_loop_test(tc, softmax_known_max_matches_search, SOFTMAX_SCALAR,
			    SOFTMAX_AVX512 + 1);
	tcase_add_loop_test(tc, softmax_online_blocks_match_whole_row, SOFTMAX_SCALAR,
			    SOFTMAX_AVX512 + 1);
	tcase_add_loop_test(tc, softmax_overflowed_rows_are_nan, SOFTMAX_SCALAR,
			    SOFTMAX_AVX512 + 1);
	tcase_add_test(tc, all_finite_finds_every_position);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, kernels_suite, NULL);
}
