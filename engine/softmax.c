/*
 * softmax.c: numerically stable row softmax, exp(s - max) / sum.
 *
 * The vector exps reduce as Cephes' expf (S. L. Moshier): n = round(x log2 e),
 * r = x - n ln2 (in two parts), then exp(r) on [-ln2/2, ln2/2] by a
 * polynomial, times 2^n. On 8 floats (AVX2) it is Cephes' own, 2^n built in
 * the exponent bits; on 16 (AVX-512F) a shorter fit with scalef (see
 * exp16). Below -87.34 both return 0 (where expf is subnormal or zero), and
 * NaN stays NaN. The widest the CPU has runs; the scalar twin uses expf.
 */
#include "softmax.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_AVX2_KERNEL 1
#endif

static void zero_outside(float *row, size_t n, size_t lo, size_t hi)
{
	memset(row, 0, lo * sizeof(float));
	memset(row + hi, 0, (n - hi) * sizeof(float));
}

/* Max of x[0, n), NaN if any is NaN; n >= 1. */
static float max_scalar(const float *x, size_t n)
{
	float m = x[0];

	for (size_t i = 0; i < n; i++) {
		if (isnan(x[i]))
			return x[i];
		m = x[i] > m ? x[i] : m;
	}
	return m;
}

/* x = exp(x - m) in place; returns the sum. */
static float exp_sum_scalar(float *x, size_t n, float m)
{
	float sum = 0.0f;

	for (size_t i = 0; i < n; i++) {
		x[i] = expf(x[i] - m);
		sum += x[i];
	}
	return sum;
}

static void scale_scalar(float *x, size_t n, float a)
{
	for (size_t i = 0; i < n; i++)
		x[i] *= a;
}

#ifdef HAVE_AVX2_KERNEL
__attribute__((target("avx2,fma"))) static inline __m256 exp8(__m256 x)
{
	const __m256 lo = _mm256_set1_ps(-87.33654f), hi = _mm256_set1_ps(88.37626f);
	__m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
	__m256 fx, r, p, r2;
	__m256i n;

	x = _mm256_max_ps(lo, _mm256_min_ps(hi, x)); /* NaN, the second operand, stays */
	fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
			     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
	r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), r);
	p = _mm256_set1_ps(1.9875691500e-4f);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
	r2 = _mm256_mul_ps(r, r);
	p = _mm256_fmadd_ps(p, r2, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
	n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)),
			      23);
	p = _mm256_mul_ps(p, _mm256_castsi256_ps(n));
	return _mm256_andnot_ps(under, p);
}

__attribute__((target("avx2,fma"))) static float hsum8(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));

	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
	return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) static float max_avx2(const float *x, size_t n)
{
	__m256 m8 = _mm256_set1_ps(-INFINITY), nan8 = _mm256_setzero_ps();
	float m;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);

		m8 = _mm256_max_ps(m8, v);
		nan8 = _mm256_or_ps(nan8, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
	}
	if (_mm256_movemask_ps(nan8) != 0)
		return NAN;
	{
		__m128 s = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));

		s = _mm_max_ps(s, _mm_movehl_ps(s, s));
		s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
		m = _mm_cvtss_f32(s);
	}
	for (; i < n; i++) {
		if (isnan(x[i]))
			return x[i];
		m = x[i] > m ? x[i] : m;
	}
	return m;
}

__attribute__((target("avx2,fma"))) static float exp_sum_avx2(float *x, size_t n, float m)
{
	__m256 m8 = _mm256_set1_ps(m), s8 = _mm256_setzero_ps();
	float sum;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m8));

		_mm256_storeu_ps(x + i, e);
		s8 = _mm256_add_ps(s8, e);
	}
	sum = hsum8(s8);
	for (; i < n; i++) {
		x[i] = expf(x[i] - m);
		sum += x[i];
	}
	return sum;
}

__attribute__((target("avx2,fma"))) static void scale_avx2(float *x, size_t n, float a)
{
	__m256 a8 = _mm256_set1_ps(a);
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), a8));
	for (; i < n; i++)
		x[i] *= a;
}

__attribute__((target("avx2,fma"))) static void vexp_avx2(float *y, const float *x, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, exp8(_mm256_loadu_ps(x + i)));
	for (; i < n; i++)
		y[i] = expf(x[i]);
}

static int have_avx2(void)
{
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* The same kernels on 16 floats, the tail under a mask (no scalar tail). */
#define AVX512 __attribute__((target("avx512f")))

/*
 * The AVX-512 exp takes the same reduction, r = x - n ln2, but evaluates
 * exp(r) with a degree-6 polynomial fitted for relative error on
 * [-ln2/2, ln2/2] (Lawson-weighted least squares, 1.9e-9 before rounding;
 * 8.9e-8 worst over every float in [-87.3, 88.3] after it) and builds
 * p 2^n with scalef, which needs no clamp: 16 operations where the
 * Cephes form takes 23, and the exp is most of the softmax.
 */
AVX512 static inline __m512 exp16(__m512 x)
{
	/* lanes below -87.34 become 0 (NaN stays NaN) */
	__mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.33654f), _CMP_NLT_UQ);
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x), p;

	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
	p = _mm512_set1_ps(1.3836845756e-3f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3748158067e-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1668225080e-2f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666419804e-1f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.9999991059e-1f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	return _mm512_maskz_scalef_ps(keep, p, n);
}

/* Lanes [0, n - i) of a vector at i, at most 16. */
static inline __mmask16 tail_mask(size_t n, size_t i)
{
	size_t left = n - i;

	return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

AVX512 static float max_avx512(const float *x, size_t n)
{
	__m512 m16 = _mm512_set1_ps(-INFINITY);
	__mmask16 nan = 0;

	for (size_t i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n, i);
		__m512 v = _mm512_maskz_loadu_ps(k, x + i);

		m16 = _mm512_mask_max_ps(m16, k, m16, v);
		nan |= _mm512_mask_cmp_ps_mask(k, v, v, _CMP_UNORD_Q);
	}
	return nan ? NAN : _mm512_reduce_max_ps(m16);
}

AVX512 static float exp_sum_avx512(float *x, size_t n, float m)
{
	__m512 m16 = _mm512_set1_ps(m), s16 = _mm512_setzero_ps();

	for (size_t i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n, i);
		__m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m16));

		_mm512_mask_storeu_ps(x + i, k, e);
		s16 = _mm512_mask_add_ps(s16, k, s16, e);
	}
	return _mm512_reduce_add_ps(s16);
}

AVX512 static void scale_avx512(float *x, size_t n, float a)
{
	__m512 a16 = _mm512_set1_ps(a);

	for (size_t i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n, i);

		_mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), a16));
	}
}

AVX512 static void vexp_avx512(float *y, const float *x, size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n, i);

		_mm512_mask_storeu_ps(y + i, k, exp16(_mm512_maskz_loadu_ps(k, x + i)));
	}
}
#endif

enum softmax_isa softmax_isa_best(void)
{
#ifdef HAVE_AVX2_KERNEL
	if (__builtin_cpu_supports("avx512f"))
		return SOFTMAX_AVX512;
	if (have_avx2())
		return SOFTMAX_AVX2;
#endif
	return SOFTMAX_SCALAR;
}

/* The row kernels of one instruction set. */
static float row_max(const float *x, size_t n, enum softmax_isa isa)
{
#ifdef HAVE_AVX2_KERNEL
	if (isa == SOFTMAX_AVX512)
		return max_avx512(x, n);
	if (isa == SOFTMAX_AVX2)
		return max_avx2(x, n);
#endif
	(void)isa;
	return max_scalar(x, n);
}

static float row_exp_sum(float *x, size_t n, float m, enum softmax_isa isa)
{
#ifdef HAVE_AVX2_KERNEL
	if (isa == SOFTMAX_AVX512)
		return exp_sum_avx512(x, n, m);
	if (isa == SOFTMAX_AVX2)
		return exp_sum_avx2(x, n, m);
#endif
	return exp_sum_scalar(x, n, m);
}

static void row_scale(float *x, size_t n, float a, enum softmax_isa isa)
{
#ifdef HAVE_AVX2_KERNEL
	if (isa == SOFTMAX_AVX512) {
		scale_avx512(x, n, a);
		return;
	}
	if (isa == SOFTMAX_AVX2) {
		scale_avx2(x, n, a);
		return;
	}
#endif
	scale_scalar(x, n, a);
}

/* Whether a row max says the visible scores hold +inf or NaN: q . k
 * overflowed float32. Such a row becomes all NaN (poison), so the failure
 * reaches the output, where the forward passes report it, instead of
 * turning into plausible numbers. */
static int overflowed(float m)
{
	return isnan(m) || m == INFINITY;
}

static void poison(float *row, size_t n)
{
	for (size_t i = 0; i < n; i++)
		row[i] = NAN;
}

/* The row's step once the max m over row[lo, hi) is known. A NaN score
 * that a caller's max did not show makes the sum NaN, and so every cell. */
static void row_step(float *row, size_t n, size_t lo, size_t hi, float m, enum softmax_isa isa)
{
	if (m == -INFINITY) {
		memset(row, 0, n * sizeof(float));
		return;
	}
	if (overflowed(m)) {
		poison(row, n);
		return;
	}
	row_scale(row + lo, hi - lo, 1.0f / row_exp_sum(row + lo, hi - lo, m, isa), isa);
}

float softmax_row_isa(float *row, size_t n, size_t lo, size_t hi, enum softmax_isa isa)
{
	float m;

	if (lo >= hi) {
		memset(row, 0, n * sizeof(float));
		return -INFINITY;
	}
	zero_outside(row, n, lo, hi);
	m = row_max(row + lo, hi - lo, isa);
	row_step(row, n, lo, hi, m, isa);
	return m;
}

void softmax_row_known(float *row, size_t n, float row_max_known)
{
	softmax_row_known_isa(row, n, row_max_known, softmax_isa_best());
}

void softmax_row_known_isa(float *row, size_t n, float row_max_known, enum softmax_isa isa)
{
	row_step(row, n, 0, n, row_max_known, isa);
}

float softmax_row(float *row, size_t n, size_t lo, size_t hi)
{
	return softmax_row_isa(row, n, lo, hi, softmax_isa_best());
}

float softmax_online(float *s, size_t n, size_t lo, size_t hi, float *m, float *l)
{
	return softmax_online_isa(s, n, lo, hi, m, l, softmax_isa_best());
}

/* An online row from now on all NaN (see softmax.h). */
static float poison_online(float *s, size_t n, float *m, float *l)
{
	poison(s, n);
	*m = *l = NAN;
	return NAN;
}

/* The online step once the block's max over s[lo, hi) is known. */
static float online_step(float *s, size_t n, size_t lo, size_t hi, float block_max, float *m,
			 float *l, enum softmax_isa isa)
{
	float m_new, alpha, sum;

	if (block_max == -INFINITY) {
		memset(s, 0, n * sizeof(float));
		return 1.0f;
	}
	if (overflowed(block_max) || isnan(*m))
		return poison_online(s, n, m, l);
	m_new = block_max > *m ? block_max : *m;
	alpha = *m == -INFINITY ? 0.0f : expf(*m - m_new);
	sum = row_exp_sum(s + lo, hi - lo, m_new, isa);
	if (isnan(sum)) /* a NaN score that a caller's max did not show */
		return poison_online(s, n, m, l);
	*l = *l * alpha + sum;
	*m = m_new;
	return alpha;
}

float softmax_online_isa(float *s, size_t n, size_t lo, size_t hi, float *m, float *l,
			 enum softmax_isa isa)
{
	if (lo >= hi) {
		memset(s, 0, n * sizeof(float));
		return 1.0f;
	}
	zero_outside(s, n, lo, hi);
	return online_step(s, n, lo, hi, row_max(s + lo, hi - lo, isa), m, l, isa);
}

float softmax_online_known(float *s, size_t n, float block_max, float *m, float *l)
{
	return softmax_online_known_isa(s, n, block_max, m, l, softmax_isa_best());
}

float softmax_online_known_isa(float *s, size_t n, float block_max, float *m, float *l,
			       enum softmax_isa isa)
{
	return online_step(s, n, 0, n, block_max, m, l, isa);
}

void softmax_vexp(float *y, const float *x, size_t n)
{
	softmax_vexp_isa(y, x, n, softmax_isa_best());
}

void softmax_vexp_isa(float *y, const float *x, size_t n, enum softmax_isa isa)
{
#ifdef HAVE_AVX2_KERNEL
	if (isa == SOFTMAX_AVX512) {
		vexp_avx512(y, x, n);
		return;
	}
	if (isa == SOFTMAX_AVX2) {
		vexp_avx2(y, x, n);
		return;
	}
#endif
	(void)isa;
	for (size_t i = 0; i < n; i++)
		y[i] = expf(x[i]);
}
