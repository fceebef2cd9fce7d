/*
 * check_layers.c: the kernels of a transformer block (stack.h) by hand and
 * against their twins.
 *
 *   norm        LayerNorm and RMSNorm of [1, 2, 3, 4] worked out by hand;
 *               the float-lane kernels vs the double twins on random rows,
 *               and on rows past 1e19 (the scaled path)
 *   activation  gelu (tanh and erf), silu and relu at known points, gated
 *   rope        the inv_freq table's rotation against the formula
 *   linear      in-major weights (GPT-2's Conv1D) give x W + b, by sgemm and
 *               (a few rows) by linear_few, the same bits on 1 and 2 threads
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/activation.h"
#include "engine/linear.h"
#include "engine/norm.h"
#include "engine/positional.h"
#include "engine/prng.h"

#include "tests/lib/expect.h"
#include "tests/lib/seeded.h"
#include "tests/lib/suite_main.h"

static void assert_near(const float *got, const double *want, size_t n, double tol)
{
	for (size_t i = 0; i < n; i++)
		EXPECT_MSG(fabs(got[i] - want[i]) <= tol, "[%zu]: got %.9g want %.9g", i,
			   got[i], want[i]);
}

/* mean 2.5, biased var 1.25: y = (x - 2.5) / sqrt(1.25) */
START_TEST(layer_norm_by_hand)
{
	const float x[4] = { 1, 2, 3, 4 }, w[4] = { 2, 2, 2, 2 }, b[4] = { 1, 1, 1, 1 };
	const double want[4] = { -1.3416407864998738, -0.4472135954999579, 0.4472135954999579,
				 1.3416407864998738 };
	double scaled[4];
	float y[4];

	norm_layer_rows(y, x, 1, 4, NULL, NULL, 0.0f);
	assert_near(y, want, 4, 1e-6);
	norm_layer_rows_ref(y, x, 1, 4, NULL, NULL, 0.0f);
	assert_near(y, want, 4, 1e-6);
	for (size_t i = 0; i < 4; i++)
		scaled[i] = 2 * want[i] + 1;
	norm_layer_rows(y, x, 1, 4, w, b, 0.0f);
	assert_near(y, scaled, 4, 1e-6);
	/* eps 1: y = (x - 2.5) / sqrt(2.25) */
	norm_layer_rows(y, x, 1, 4, NULL, NULL, 1.0f);
	ck_assert_double_eq_tol(y[0], -1.5 / 1.5, 1e-6);
}
END_TEST

/* mean of squares 7.5: y = x / sqrt(7.5) */
START_TEST(rms_norm_by_hand)
{
	const float x[4] = { 1, 2, 3, 4 }, w[4] = { 1, 0.5f, 2, 1 };
	const double r = 1.0 / sqrt(7.5);
	const double want[4] = { 1 * r, 2 * r * 0.5, 3 * r * 2, 4 * r };
	float y[4];

	norm_rms_rows(y, x, 1, 4, w, NULL, 0.0f);
	assert_near(y, want, 4, 1e-6);
	norm_rms_rows_ref(y, x, 1, 4, w, NULL, 0.0f);
	assert_near(y, want, 4, 1e-6);
}
END_TEST

/* Every width up to 40 crosses the eight lanes and their tail. */
START_TEST(norms_match_twins)
{
	struct attn_prng g;
	size_t E = (size_t)_i + 1, n = 3;
	float *x, *w, *b, *y = malloc(n * E * sizeof(float)), *y_ref = malloc(n * E * sizeof(float));

	attn_prng_seed(&g, 40 + (uint64_t)_i);
	x = test_randn(&g, n * E);
	w = test_randn(&g, E);
	b = test_randn(&g, E);
	for (size_t i = 0; i < n * E; i++)
		x[i] = 3 * x[i] + 1; /* a mean away from zero */
	norm_layer_rows(y, x, n, E, w, b, 1e-5f);
	norm_layer_rows_ref(y_ref, x, n, E, w, b, 1e-5f);
	test_assert_close(y, y_ref, n * E, "layer", _i);
	norm_layer_rows(x, x, n, E, w, b, 1e-5f); /* in place: the same bits */
	ck_assert_mem_eq(x, y, n * E * sizeof(float));
	for (size_t i = 0; i < n * E; i++)
		x[i] = 2 * y_ref[i] - 1;
	norm_rms_rows(y, x, n, E, w, NULL, 1e-6f);
	norm_rms_rows_ref(y_ref, x, n, E, w, NULL, 1e-6f);
	test_assert_close(y, y_ref, n * E, "rms", _i);
	free(x), free(w), free(b), free(y), free(y_ref);
}
END_TEST

/* Rows past 1e19, whose squares overflow float: x 2^70 and x 2^120 (its sum
 * near FLT_MAX too) normalize as x does, bit for bit with eps 0, and as
 * the double twins do with eps. */
typedef void norm_fn(float *out, const float *x, size_t n, size_t E, const float *w,
		     const float *b, float eps);

START_TEST(norms_of_huge_rows)
{
	static const struct {
		norm_fn *fast, *twin;
		float eps;
		const char *name;
	} norms[] = {
	    {norm_layer_rows, norm_layer_rows_ref, 1e-5f, "layer"},
	    {norm_rms_rows, norm_rms_rows_ref, 1e-6f, "rms"},
	};
	struct attn_prng g;
	size_t E = (size_t)_i * 7 + 5, n = 2;
	float *x, *big = malloc(n * E * sizeof(float)), *y = malloc(n * E * sizeof(float));
	float *y_big = malloc(n * E * sizeof(float)), *y_ref = malloc(n * E * sizeof(float));

	attn_prng_seed(&g, 90 + (uint64_t)_i);
	x = test_randn(&g, n * E);
	for (size_t i = 0; i < n * E; i++)
		x[i] = 3 * x[i] + 1; /* a mean away from zero */
	for (int p = 70; p <= 120; p += 50) {
		for (size_t i = 0; i < n * E; i++)
			big[i] = ldexpf(x[i], p);
		for (size_t k = 0; k < sizeof norms / sizeof norms[0]; k++) {
			norms[k].fast(y, x, n, E, NULL, NULL, 0.0f);
			norms[k].fast(y_big, big, n, E, NULL, NULL, 0.0f);
			ck_assert_mem_eq(y_big, y, n * E * sizeof(float));
			norms[k].fast(y_big, big, n, E, NULL, NULL, norms[k].eps);
			norms[k].twin(y_ref, big, n, E, NULL, NULL, norms[k].eps);
			test_assert_close(y_big, y_ref, n * E, norms[k].name, p);
		}
	}
	free(x), free(big), free(y), free(y_big), free(y_ref);
}
END_TEST

/* A row of one huge value, whose sum overflows and whose variance is 0:
 * LayerNorm gives b, as the twin does, not 0 * inf = NaN. */
START_TEST(layer_norm_of_huge_constant_row)
{
	enum { E = 8 };
	float x[E], b[E], y[E], y_ref[E];

	for (size_t k = 0; k < E; k++)
		x[k] = ldexpf(1.0f, 126), b[k] = 0.25f;
	norm_layer_rows(y, x, 1, E, NULL, b, 1e-5f);
	norm_layer_rows_ref(y_ref, x, 1, E, NULL, b, 1e-5f);
	for (size_t k = 0; k < E; k++) {
		ck_assert_float_eq(y[k], 0.25f);
		ck_assert_float_eq(y_ref[k], 0.25f);
	}
}
END_TEST

START_TEST(activations_at_known_points)
{
	float up[3] = { 2, 3, -1 }, gate[3] = { 1, 0, -20 };

	ck_assert_double_eq_tol(act_gelu_erf(1.0f), 0.8413447460685429, 1e-7);
	ck_assert_double_eq_tol(act_gelu_tanh(1.0f), 0.8411919906082768, 1e-7);
	ck_assert_double_eq_tol(act_silu(1.0f), 0.7310585786300049, 1e-7);
	ck_assert_double_eq_tol(act_gelu_erf(-1.0f), -0.15865525393145707, 1e-7);
	ck_assert_float_eq(act_relu(-1.0f), 0.0f);
	ck_assert_float_eq(act_relu(2.5f), 2.5f);
	ck_assert_float_eq(act_one(ATTN_ACT_SILU, 0.0f), 0.0f);
	act_gated(gate, up, 3, ATTN_ACT_SILU); /* silu(gate) * up */
	ck_assert_double_eq_tol(gate[0], 2 * 0.7310585786300049, 1e-6);
	ck_assert_float_eq(gate[1], 0.0f);
	ck_assert_double_eq_tol(gate[2], 20.0 / (1.0 + exp(20.0)), 1e-12);
}
END_TEST

/* act_rows' vector forms against the scalar (double) forms, across the
 * range an MLP sees and past the exp's clamp. */
START_TEST(fast_activations_match_scalar)
{
	const enum attn_activation kinds[] = { ATTN_ACT_GELU_TANH, ATTN_ACT_SILU,
					       ATTN_ACT_GELU_ERF, ATTN_ACT_RELU };
	enum { N = 4001 };
	static float x[N + 4], y[N + 4];

	for (size_t i = 0; i < N; i++)
		x[i] = -40.0f + 80.0f * (float)i / (float)(N - 1);
	x[N] = 0.0f, x[N + 1] = 1e30f, x[N + 2] = -1e30f, x[N + 3] = -0.0f;
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		memcpy(y, x, sizeof x);
		act_rows(y, N + 4, kinds[k]);
		for (size_t i = 0; i < N + 4; i++) {
			double want = act_one(kinds[k], x[i]);

			EXPECT_MSG(fabs(y[i] - want) <= 1e-6 * fabs(want) + 1e-7,
				   "kind %zu: act(%g) = %.9g, scalar %.9g", k, x[i], y[i], want);
		}
	}
}
END_TEST

/* Two positions, one head of D = 4, pairs (0, 2) and (1, 3). */
START_TEST(rope_table_rotates_half_pairs)
{
	const float inv_freq[2] = { 1.0f, 0.01f };
	float x[2][4] = { { 1, 2, 3, 4 }, { 1, 2, 3, 4 } };
	double want[4];

	attn_rope_table_rows(&x[0][0], 0, 1, 4, 2, 1, 4, 4, inv_freq, 0.0f);
	assert_near(x[0], (const double[]){ 1, 2, 3, 4 }, 4, 0); /* position 0 */
	for (size_t i = 0; i < 2; i++) {
		double c = cos(inv_freq[i]), s = sin(inv_freq[i]);
		double a = i + 1.0, b = i + 3.0;

		want[i] = a * c - b * s;
		want[i + 2] = b * c + a * s;
	}
	assert_near(x[1], want, 4, 1e-6);
	x[1][0] = 1, x[1][1] = 2, x[1][2] = 3, x[1][3] = 4; /* attention scaling 2 */
	attn_rope_table_rows(&x[0][0], 0, 1, 4, 2, 1, 4, 4, inv_freq, 2.0f);
	for (size_t i = 0; i < 4; i++)
		want[i] *= 2;
	assert_near(x[1], want, 4, 1e-5);
}
END_TEST

/* W [3, 2] in-major is the transpose of [2, 3]: both give x W^T + b. */
START_TEST(linear_in_major_transposes)
{
	const float x[2][3] = { { 1, 2, 3 }, { -1, 0, 2 } };
	const float W[2][3] = { { 1, 0, 1 }, { 2, -1, 0.5f } }; /* [out, in] */
	const float Wt[3][2] = { { 1, 2 }, { 0, -1 }, { 1, 0.5f } }; /* [in, out] */
	const float bias[2] = { 0.5f, -1 };
	const double want[4] = { 4.5, 0.5, 1.5, -2 };
	float y[2][2], yt[2][2];

	linear_forward_w(&y[0][0], 2, &x[0][0], 3, 2, &W[0][0], 0, bias, 2, 3, 1, NULL, NULL);
	linear_forward_w(&yt[0][0], 2, &x[0][0], 3, 2, &Wt[0][0], 1, bias, 2, 3, 2, NULL, NULL);
	assert_near(&y[0][0], want, 4, 1e-6);
	assert_near(&yt[0][0], want, 4, 1e-6);
}
END_TEST

/* W [E, width] in-major against its transpose [width, E] (sgemm's tiles)
 * for row counts on both sides of LINEAR_FEW_MAX and LINEAR_FEW_MAX_AVX2,
 * through each of linear_few's kernels this machine runs and the scalar
 * choice (sgemm at every count): within the tolerance of each other, the
 * same bits on one thread and two (the tiles are the shape's, not the
 * threads'), and the same bits from every kernel that takes the count. */
START_TEST(linear_few_rows_match_sgemm)
{
	static const size_t rows[] = { 1,  16, LINEAR_FEW_MAX_AVX2, LINEAR_FEW_MAX_AVX2 + 1,
				       37, LINEAR_FEW_MAX, LINEAR_FEW_MAX + 1 };
	const size_t E = 150, width = 600; /* two whole 256-column tiles and a part */
	struct attn_prng g;
	size_t n = rows[_i];
	enum few_isa best = linear_few_best();
	float *x, *Wt, *W, *bias, *y, *y1, *y2, *y_best;

	attn_prng_seed(&g, 9300 + (uint64_t)_i);
	x = test_randn(&g, n * E);
	Wt = test_randn(&g, E * width); /* [E, width] */
	W = malloc(width * E * sizeof(float)); /* [width, E] */
	bias = test_randn(&g, width);
	y = malloc(n * width * sizeof(float));
	y1 = malloc(n * width * sizeof(float));
	y2 = malloc(n * width * sizeof(float));
	y_best = malloc(n * width * sizeof(float));
	ck_assert(W != NULL && y != NULL && y1 != NULL && y2 != NULL && y_best != NULL);
	for (size_t k = 0; k < E; k++)
		for (size_t c = 0; c < width; c++)
			W[c * E + k] = Wt[k * width + c];
	linear_forward_w(y, width, x, E, n, W, 0, bias, width, E, 1, NULL, NULL);
	linear_forward_w(y_best, width, x, E, n, Wt, 1, bias, width, E, 1, NULL, NULL);
	for (enum few_isa isa = FEW_SCALAR; isa <= best; isa++) {
		linear_forward_w_isa(y1, width, x, E, n, Wt, 1, bias, width, E, 1, NULL, NULL, isa);
		linear_forward_w_isa(y2, width, x, E, n, Wt, 1, bias, width, E, 2, NULL, NULL, isa);
		test_assert_close(y1, y, n * width, "in-major vs sgemm", _i);
		EXPECT_MSG(memcmp(y1, y2, n * width * sizeof(float)) == 0,
			   "%zu rows, isa %d: one thread and two differ", n, (int)isa);
		if (n <= linear_few_max(isa) && n <= linear_few_max(best))
			EXPECT_MSG(memcmp(y1, y_best, n * width * sizeof(float)) == 0,
				   "%zu rows: linear_few's kernel %d and %d differ", n, (int)isa,
				   (int)best);
	}
	free(x);
	free(Wt);
	free(W);
	free(bias);
	free(y);
	free(y1);
	free(y2);
	free(y_best);
}
END_TEST

static Suite *layers_suite(void)
{
	Suite *s = suite_create("layers");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, layer_norm_by_hand);
	tcase_add_test(tc, rms_norm_by_hand);
	tcase_add_loop_test(tc, norms_match_twins, 0, 40);
	tcase_add_loop_test(tc, norms_of_huge_rows, 0, 6);
	tcase_add_test(tc, layer_norm_of_huge_constant_row);
	tcase_add_test(tc, activations_at_known_points);
	tcase_add_test(tc, fast_activations_match_scalar);
	tcase_add_test(tc, rope_table_rotates_half_pairs);
	tcase_add_test(tc, linear_in_major_transposes);
	tcase_add_loop_test(tc, linear_few_rows_match_sgemm, 0, 7);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = { .one_blas_thread = true };

	return suite_main(argc, argv, layers_suite, &opts);
}
