/*
 * gemm.c: small products by a plain kernel, the rest by sgemm (see gemm.h).
 *
 * The vector kernel (AVX2 and FMA, chosen at run time) first copies B, as
 * [k, n] whichever way it is stored (B [n, k] by gathers, RUN rows at once),
 * into a buffer on its stack whose rows are padded with zeros to a multiple
 * of RUN; then walks C a row at a time, RUN columns at once, one vector of
 * accumulators while k goes by in order:
 *   acc [RUN] += a[p] Bp[p, j0 .. j0 + RUN)
 * and keeps the columns that exist. The scalar twin sums each element
 * straight from A and B in the same order (fmaf, one rounding a step), so
 * both give the same bits.
 */
#include "gemm.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_GEMM_FMA 1
#endif

enum {
	RUN = 8,                          /* columns of C summed at once: one ymm */
	PACK_FLOATS = GEMM_SMALL_PACK,    /* B packed, [k, n rounded up to RUN] */
	GATHER_LD_MAX = INT32_MAX / RUN,  /* B's row stride a gather's 32-bit offsets reach */
};

/* *c = alpha acc, rounded once, where beta is 0 (*c not read, as in sgemm:
 * C may hold NaN there, or nothing written yet); else alpha acc + beta *c
 * in one rounding. */
static inline void finish(float *c, float acc, float alpha, float beta)
{
	if (beta == 0.0f)
		*c = alpha * acc;
	else
		*c = fmaf(alpha, acc, beta == 1.0f ? *c : beta * *c);
}

/* The twin: each element's chain straight from A and B. */
void gemm_small_twin(int b_trans, size_t m, size_t n, size_t k, float alpha, const float *A,
		     size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc)
{
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < n; j++) {
			float acc = 0.0f;

			for (size_t p = 0; p < k; p++)
				acc = fmaf(A[i * lda + p], b_trans ? B[j * ldb + p] : B[p * ldb + j],
					   acc);
			finish(C + i * ldc + j, acc, alpha, beta);
		}
}

static size_t padded(size_t n)
{
	return (n + RUN - 1) / RUN * RUN;
}

#ifdef HAVE_GEMM_FMA
/* Bp [k, npad] = B [n, k] transposed, zeros in columns n .. npad: each
 * run of RUN columns of a row of Bp gathered from RUN rows of B at once. */
__attribute__((target("avx2,fma"))) static void gather_bt(float *Bp, size_t npad, size_t n,
							   size_t k, const float *B, size_t ldb)
{
	const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	__m256i rows = _mm256_mullo_epi32(lanes, _mm256_set1_epi32((int)ldb));

	for (size_t j0 = 0; j0 < n; j0 += RUN) {
		/* lanes past n read nothing and hold 0 */
		__m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - j0)), lanes);
		const float *b = B + j0 * ldb; /* B[j0, :] */

		for (size_t p = 0; p < k; p++)
			_mm256_storeu_ps(Bp + p * npad + j0,
					 _mm256_mask_i32gather_ps(_mm256_setzero_ps(), b + p, rows,
								  _mm256_castsi256_ps(in), 4));
	}
}

/* Bp [k, npad] = B as [k, n], zeros in columns n .. npad. */
__attribute__((target("avx2,fma"))) static void pack_b(float *Bp, size_t npad, int b_trans,
							size_t n, size_t k, const float *B,
							size_t ldb)
{
	if (b_trans && ldb <= GATHER_LD_MAX) {
		gather_bt(Bp, npad, n, k, B, ldb);
		return;
	}
	for (size_t p = 0; p < k; p++)
		for (size_t j = n; j < npad; j++)
			Bp[p * npad + j] = 0.0f;
	if (b_trans) /* B [n, k]: row j of B is column j of Bp */
		for (size_t j = 0; j < n; j++)
			for (size_t p = 0; p < k; p++)
				Bp[p * npad + j] = B[j * ldb + p];
	else
		for (size_t p = 0; p < k; p++)
			memcpy(Bp + p * npad, B + p * ldb, n * sizeof(float));
}

/* C[i, j0 .. j0 + w) = alpha acc + beta C there, as finish does, from a
 * vector of sums: whole runs with vector instructions, a short one by
 * finish. */
__attribute__((target("avx2,fma"))) static void store_run(float *c, size_t w, __m256 acc,
							   float alpha, float beta)
{
	float sums[RUN];

	if (w == RUN && beta == 0.0f) {
		_mm256_storeu_ps(c, _mm256_mul_ps(_mm256_set1_ps(alpha), acc));
		return;
	}
	if (w == RUN && beta == 1.0f) {
		_mm256_storeu_ps(c, _mm256_fmadd_ps(_mm256_set1_ps(alpha), acc, _mm256_loadu_ps(c)));
		return;
	}
	_mm256_storeu_ps(sums, acc);
	for (size_t j = 0; j < w; j++)
		finish(c + j, sums[j], alpha, beta);
}

__attribute__((target("avx2,fma"))) void gemm_small(int b_trans, size_t m, size_t n, size_t k,
						    float alpha, const float *A, size_t lda,
						    const float *B, size_t ldb, float beta,
						    float *C, size_t ldc)
{
	float Bp[PACK_FLOATS]; /* [k, npad] */
	size_t npad = padded(n);

	pack_b(Bp, npad, b_trans, n, k, B, ldb);
	for (size_t i = 0; i < m; i++) {
		const float *a = A + i * lda; /* A[i, :] */
		float *c = C + i * ldc;       /* C[i, :] */

		for (size_t j0 = 0; j0 < n; j0 += RUN) {
			__m256 acc = _mm256_setzero_ps();

			for (size_t p = 0; p < k; p++)
				acc = _mm256_fmadd_ps(_mm256_set1_ps(a[p]),
						      _mm256_loadu_ps(Bp + p * npad + j0), acc);
			store_run(c + j0, n - j0 < RUN ? n - j0 : RUN, acc, alpha, beta);
		}
	}
}
#else
void gemm_small(int b_trans, size_t m, size_t n, size_t k, float alpha, const float *A,
		size_t lda, const float *B, size_t ldb, float beta, float *C, size_t ldc)
{
	gemm_small_twin(b_trans, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
#endif

static int have_fma(void)
{
#ifdef HAVE_GEMM_FMA
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
	return 0;
#endif
}

int gemm_small_taken(size_t m, size_t n, size_t k)
{
	/* m n k <= GEMM_SMALL_MACS without overflowing the product */
	if (m == 0 || n == 0 || k == 0)
		return 0;
	if (m > GEMM_SMALL_MACS || n > GEMM_SMALL_MACS / m || k > GEMM_SMALL_MACS / (m * n))
		return 0;
	if (k > PACK_FLOATS / padded(n)) /* B packed must fit gemm_small's stack */
		return 0;
	return have_fma();
}

void gemm(int b_trans, size_t m, size_t n, size_t k, float alpha, const float *A, size_t lda,
	  const float *B, size_t ldb, float beta, float *C, size_t ldc)
{
	if (gemm_small_taken(m, n, k)) {
		gemm_small(b_trans, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
		return;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, b_trans ? CblasTrans : CblasNoTrans, (int)m,
		    (int)n, (int)k, alpha, A, (int)lda, B, (int)ldb, beta, C, (int)ldc);
}
