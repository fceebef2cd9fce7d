/*
 * norm.c: LayerNorm and RMSNorm on rows (see norm.h).
 *
 * Per row x_r [E], the fast kernels run three passes:
 *   pass 1: a statistic as eight float partial sums (lane k takes the
 *           elements k, k + 8, ...), added lane 0 .. 7 in that order
 *   pass 2: (layer only) the variance the same way, around the mean
 *   pass 3: y = (x - mean) * rstd * w + b, elementwise
 * Without -ffast-math a single float accumulator is a serial chain the
 * compiler must keep; eight independent ones vectorize, and the order of
 * the additions is fixed, so the result does not depend on the machine's
 * vector width.
 *
 * A row whose sum or squares overflow float (|x| past about 1e19, finite
 * all the same: a checkpoint's hidden state can be) would get var = inf,
 * rstd = 0 and come out as b alone, a quiet wrong answer. Such a row is
 * run again on x s, s the power of two that brings its largest |x| near 1,
 * with eps s^2 for eps: the same normalization (numerator and denominator
 * scale alike). Multiplying by a power of two commutes with rounding, so
 * with eps 0 a row x 2^70 comes out with the bits of the row x. Every
 * other row runs at s = 1, where x s and eps s^2 are exact: the same bits
 * as without s.
 */
#include "norm.h"

#include <float.h>
#include <math.h>

enum { NORM_LANES = 8 };

/* Adds the eight lanes in order. */
static float lanes_total(const float acc[NORM_LANES])
{
	float total = 0.0f;

	for (size_t j = 0; j < NORM_LANES; j++)
		total += acc[j];
	return total;
}

/* sum over k of x[k] s */
static float lane_sum(const float *x, size_t E, float s)
{
	float acc[NORM_LANES] = { 0 };
	size_t k = 0;

	for (; k + NORM_LANES <= E; k += NORM_LANES)
		for (size_t j = 0; j < NORM_LANES; j++)
			acc[j] += x[k + j] * s;
	for (size_t j = 0; k < E; k++, j++)
		acc[j] += x[k] * s;
	return lanes_total(acc);
}

/* sum over k of (x[k] s - centre)^2 */
static float lane_squares(const float *x, size_t E, float s, float centre)
{
	float acc[NORM_LANES] = { 0 };
	size_t k = 0;

	for (; k + NORM_LANES <= E; k += NORM_LANES)
		for (size_t j = 0; j < NORM_LANES; j++) {
			float d = x[k + j] * s - centre;

			acc[j] += d * d;
		}
	for (size_t j = 0; k < E; k++, j++) {
		float d = x[k] * s - centre;

		acc[j] += d * d;
	}
	return lanes_total(acc);
}

/* pass 3: out = (x s - centre) * rstd * w + b, one loop per case so each
 * vectorizes without a branch inside */
static void scale_row(float *out, const float *x, size_t E, float s, float centre, float rstd,
		      const float *w, const float *b)
{
	size_t k;

	for (k = 0; k < E; k++)
		out[k] = (x[k] * s - centre) * rstd;
	if (w)
		for (k = 0; k < E; k++)
			out[k] *= w[k];
	if (b)
		for (k = 0; k < E; k++)
			out[k] += b[k];
}

/* The power of two s that brings the largest |x[k]| into [0.5, 1); 1 for a
 * row of zeros or one holding inf or NaN (scaling does not mend those). */
static float row_scale(const float *x, size_t E)
{
	float top = 0.0f;
	int e;

	for (size_t k = 0; k < E; k++)
		top = fmaxf(top, fabsf(x[k]));
	if (top == 0.0f || !isfinite(top))
		return 1.0f;
	frexpf(top, &e);
	return ldexpf(1.0f, -e);
}

/* eps as the row scaled by s sees it: eps s^2, which for a small s
 * underflows; then the least float instead, so that a row of equal values
 * (variance 0) still gets a finite rstd and comes out as b, not 0 * inf */
static float scaled_eps(float eps, float s)
{
	float e = eps * s * s;

	return eps > 0.0f && e < FLT_TRUE_MIN ? FLT_TRUE_MIN : e;
}

/* Passes 1 and 2 of x s: the variance, and the mean in *mean. */
static float layer_stats(const float *x, size_t E, float s, float *mean)
{
	*mean = lane_sum(x, E, s) / (float)E;
	return lane_squares(x, E, s, *mean) / (float)E;
}

void norm_layer_rows(float *out, const float *x, size_t n, size_t E, const float *w,
		     const float *b, float eps)
{
	for (size_t r = 0; r < n; r++) {
		const float *x_r = x + r * E; /* seek to row r */
		float s = 1.0f, mean, var = layer_stats(x_r, E, s, &mean);

		if (!isfinite(var)) { /* see the file comment: scaled near 1 */
			s = row_scale(x_r, E);
			var = layer_stats(x_r, E, s, &mean);
		}
		scale_row(out + r * E, x_r, E, s, mean, 1.0f / sqrtf(var + scaled_eps(eps, s)), w,
			  b);
	}
}

void norm_rms_rows(float *out, const float *x, size_t n, size_t E, const float *w,
		   const float *b, float eps)
{
	for (size_t r = 0; r < n; r++) {
		const float *x_r = x + r * E; /* seek to row r */
		float s = 1.0f;
		float ms = lane_squares(x_r, E, s, 0.0f) / (float)E; /* pass 1 */

		if (!isfinite(ms)) {
			s = row_scale(x_r, E);
			ms = lane_squares(x_r, E, s, 0.0f) / (float)E;
		}
		scale_row(out + r * E, x_r, E, s, 0.0f, 1.0f / sqrtf(ms + scaled_eps(eps, s)), w,
			  b);
	}
}

/* The twins: double sums, one element at a time. */
static void ref_row(float *out, const float *x, size_t E, double centre, double rstd,
		    const float *w, const float *b)
{
	for (size_t k = 0; k < E; k++) {
		double y = ((double)x[k] - centre) * rstd;

		out[k] = (float)(y * (w ? w[k] : 1.0) + (b ? b[k] : 0.0));
	}
}

void norm_layer_rows_ref(float *out, const float *x, size_t n, size_t E, const float *w,
			 const float *b, float eps)
{
	for (size_t r = 0; r < n; r++) {
		const float *x_r = x + r * E;
		double mean = 0, var = 0;

		for (size_t k = 0; k < E; k++)
			mean += x_r[k];
		mean /= (double)E;
		for (size_t k = 0; k < E; k++)
			var += (x_r[k] - mean) * (x_r[k] - mean);
		var /= (double)E;
		ref_row(out + r * E, x_r, E, mean, 1.0 / sqrt(var + eps), w, b);
	}
}

void norm_rms_rows_ref(float *out, const float *x, size_t n, size_t E, const float *w,
		       const float *b, float eps)
{
	for (size_t r = 0; r < n; r++) {
		const float *x_r = x + r * E;
		double ms = 0;

		for (size_t k = 0; k < E; k++)
			ms += (double)x_r[k] * x_r[k];
		ms /= (double)E;
		ref_row(out + r * E, x_r, E, 0.0, 1.0 / sqrt(ms + eps), w, b);
	}
}
