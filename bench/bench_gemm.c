/*
 * bench_gemm.c: engine/gemm.h's small kernel against cblas_sgemm on the
 * products small requests make, one thread.
 *
 * The shapes: the seeds' four-word request on the built-in model tiny
 * (E = 8, H = 2, head size 4): its projections x [4, 8] W^T with W [24, 8]
 * and [8, 8], and per head S = q k^T [4, 4] and P v [4, 4]; then products
 * around GEMM_SMALL_MACS, where gemm() stops taking the small kernel. Each
 * row: nanoseconds a call for both (medians of ROUNDS interleaved rounds of
 * CALLS calls), their ratio, and which one gemm() takes. The outputs are
 * checked to agree (1e-5 of the largest).
 *
 * What the table cannot show: under load both I/O threads call sgemm, and
 * OpenBLAS takes a lock for its buffer on every call; the small kernel takes
 * none.
 *
 * Usage: build/bench/bench_gemm
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>

#include "bench/timing.h"
#include "engine/gemm.h"

enum { ROUNDS = 7, CALLS = 20000, MAX_FLOATS = 4096 };

struct shape {
	const char *what;
	int b_trans;
	size_t m, n, k;
};

static const struct shape shapes[] = {
    {"tiny: x W^T, Q K V", 1, 4, 24, 8},
    {"tiny: x W^T, out", 1, 4, 8, 8},
    {"tiny: q k^T", 1, 4, 4, 4},
    {"tiny: P v", 0, 4, 4, 4},
    {"", 1, 4, 32, 8},
    {"", 0, 8, 16, 8},
    {"", 1, 8, 24, 8},
    {"", 1, 4, 24, 16},
    {"", 1, 16, 16, 16},
    {"", 0, 16, 16, 16},
};

static float A[MAX_FLOATS], B[MAX_FLOATS], C[2][MAX_FLOATS];

static void by_sgemm(const struct shape *s, size_t ldb)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, s->b_trans ? CblasTrans : CblasNoTrans,
		    (int)s->m, (int)s->n, (int)s->k, 1.0f, A, (int)s->k, B, (int)ldb, 0.0f, C[1],
		    (int)s->n);
}

/* Nanoseconds a call of one way (small 1: the kernel; 0: sgemm). */
static double time_calls(const struct shape *s, int small)
{
	size_t ldb = s->b_trans ? s->k : s->n;
	double t0 = bench_now_s();

	for (int c = 0; c < CALLS; c++) {
		if (small)
			gemm_small(s->b_trans, s->m, s->n, s->k, 1.0f, A, s->k, B, ldb, 0.0f, C[0],
				   s->n);
		else
			by_sgemm(s, ldb);
	}
	return (bench_now_s() - t0) / CALLS * 1e9;
}

static int agree(const struct shape *s)
{
	float top = 0.0f, diff = 0.0f;

	for (size_t i = 0; i < s->m * s->n; i++) {
		top = fmaxf(top, fabsf(C[1][i]));
		diff = fmaxf(diff, fabsf(C[0][i] - C[1][i]));
	}
	return diff <= 1e-5f * top;
}

int main(void)
{
	if (!gemm_small_taken(1, 1, 1)) {
		printf("gemm: no AVX2 and FMA here: every product goes to sgemm\n");
		return 0;
	}
	for (size_t i = 0; i < MAX_FLOATS; i++) {
		A[i] = (float)(i % 13) * 0.1f - 0.6f;
		B[i] = (float)(i % 7) * 0.2f - 0.5f;
	}
	(void)time_calls(&shapes[0], 1); /* warm up: the clock, the caches */
	(void)time_calls(&shapes[0], 0);
	printf("gemm.h's small kernel vs cblas_sgemm, one thread, ns a call (median of %d x %d "
	       "calls); gemm() takes the kernel up to %d multiply-adds\n",
	       ROUNDS, CALLS, GEMM_SMALL_MACS);
	printf("%-20s | %-20s | %5s | %8s | %8s | %6s | %s\n", "product", "m x n x k, B", "MACs",
	       "kernel", "sgemm", "ratio", "gemm() takes");
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
		const struct shape *s = &shapes[i];
		double tk[ROUNDS], ts[ROUNDS], ratio[ROUNDS];
		char dims[32];

		for (int r = 0; r < ROUNDS; r++) {
			tk[r] = time_calls(s, 1);
			ts[r] = time_calls(s, 0);
			ratio[r] = ts[r] / tk[r];
		}
		snprintf(dims, sizeof dims, "%zu x %zu x %zu, %s", s->m, s->n, s->k,
			 s->b_trans ? "[n,k]" : "[k,n]");
		printf("%-20s | %-20s | %5zu | %8.0f | %8.0f | %5.2fx | %s%s\n", s->what, dims,
		       s->m * s->n * s->k, bench_median(tk, ROUNDS), bench_median(ts, ROUNDS),
		       bench_median(ratio, ROUNDS),
		       gemm_small_taken(s->m, s->n, s->k) ? "kernel" : "sgemm",
		       agree(s) ? "" : "  (OUTPUTS DIFFER)");
	}
	return 0;
}
