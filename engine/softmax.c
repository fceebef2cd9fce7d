/*
 * softmax.c: numerically stable row softmax, exp(s - max) / sum.
 *
 * The vector exp is Cephes' expf (S. L. Moshier): n = round(x log2 e),
 * r = x - n ln2 (in two parts), exp(r) by a degree-6 polynomial on
 * [-ln2/2, ln2/2], then scaled by 2^n built in the exponent bits. Below
 * -87.34 it returns 0 (where expf is subnormal or zero).
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

/* Max of x[0, n); n >= 1. */
static float max_scalar(const float *x, size_t n)
{
	float m = x[0];

	for (size_t i = 1; i < n; i++)
		m = x[i] > m ? x[i] : m;
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

	x = _mm256_max_ps(_mm256_min_ps(x, hi), lo);
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
	__m256 m8 = _mm256_set1_ps(-INFINITY);
	float m;
	size_t i = 0;

	for (; i + 8 <= n; i += 8)
		m8 = _mm256_max_ps(m8, _mm256_loadu_ps(x + i));
	{
		__m128 s = _mm_max_ps(_mm256_castps256_ps128(m8), _mm256_extractf128_ps(m8, 1));

		s = _mm_max_ps(s, _mm_movehl_ps(s, s));
		s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
		m = _mm_cvtss_f32(s);
	}
	for (; i < n; i++)
		m = x[i] > m ? x[i] : m;
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
#endif

/* The row kernels, vector or scalar as simd says. */
static float row_max(const float *x, size_t n, int simd)
{
#ifdef HAVE_AVX2_KERNEL
	if (simd)
		return max_avx2(x, n);
#endif
	(void)simd;
	return max_scalar(x, n);
}

static float row_exp_sum(float *x, size_t n, float m, int simd)
{
#ifdef HAVE_AVX2_KERNEL
	if (simd)
		return exp_sum_avx2(x, n, m);
#endif
	return exp_sum_scalar(x, n, m);
}

static void row_scale(float *x, size_t n, float a, int simd)
{
#ifdef HAVE_AVX2_KERNEL
	if (simd) {
		scale_avx2(x, n, a);
		return;
	}
#endif
	scale_scalar(x, n, a);
}

static int simd_available(void)
{
#ifdef HAVE_AVX2_KERNEL
	return have_avx2();
#else
	return 0;
#endif
}

static void softmax_row_with(float *row, size_t n, size_t lo, size_t hi, int simd)
{
	float m;

	if (lo >= hi) {
		memset(row, 0, n * sizeof(float));
		return;
	}
	zero_outside(row, n, lo, hi);
	m = row_max(row + lo, hi - lo, simd);
	if (m == -INFINITY) {
		memset(row, 0, n * sizeof(float));
		return;
	}
	row_scale(row + lo, hi - lo, 1.0f / row_exp_sum(row + lo, hi - lo, m, simd), simd);
}

void softmax_row(float *row, size_t n, size_t lo, size_t hi)
{
	softmax_row_with(row, n, lo, hi, simd_available());
}

void softmax_row_scalar(float *row, size_t n, size_t lo, size_t hi)
{
	softmax_row_with(row, n, lo, hi, 0);
}

float softmax_online(float *s, size_t n, size_t lo, size_t hi, float *m, float *l)
{
	int simd = simd_available();
	float block_max, m_new, alpha;

	if (lo >= hi) {
		memset(s, 0, n * sizeof(float));
		return 1.0f;
	}
	zero_outside(s, n, lo, hi);
	block_max = row_max(s + lo, hi - lo, simd);
	if (block_max == -INFINITY) {
		memset(s, 0, n * sizeof(float));
		return 1.0f;
	}
	m_new = block_max > *m ? block_max : *m;
	alpha = *m == -INFINITY ? 0.0f : expf(*m - m_new);
	*l = *l * alpha + row_exp_sum(s + lo, hi - lo, m_new, simd);
	*m = m_new;
	return alpha;
}

void softmax_vexp(float *y, const float *x, size_t n)
{
#ifdef HAVE_AVX2_KERNEL
	if (have_avx2()) {
		vexp_avx2(y, x, n);
		return;
	}
#endif
	for (size_t i = 0; i < n; i++)
		y[i] = expf(x[i]);
}
