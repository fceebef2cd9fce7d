/*
 * bench_tile.c: the attention core's two products on tile.h's kernels
 * against sgemm, one head at a time (engine/tile.h, engine/attention.c).
 *
 * One head of self-attention, q, k, v [L, D] with D = 64 (GPT-2's and
 * Llama's head size), L in {512, 2048, 8192}, one thread, as the whole-row
 * path of attention.c runs it (the softmax left out: the same in both):
 *   tile    K and V laid out once (tile_pack_kt, tile_pack_v), then per
 *           query block of 64 rows S [64, L] = q k^T (tile_qk) and
 *           out = S v (tile_pv, PV_KEYS keys at a time)
 *   sgemm   per query block the same two products by cblas_sgemm, which
 *           packs k and v again on every call
 * GFLOP/s = 4 L^2 D / time; medians of ROUNDS interleaved rounds, and the
 * speedup (sgemm's time over tile's) the median of the rounds' own ratios.
 * The two outputs are checked to agree (1e-4 of the largest).
 *
 * Usage: build/bench/bench_tile (on a CPU without tile.h's AVX-512F
 * kernels it says so: the engine multiplies with sgemm there).
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/timing.h"
#include "engine/prng.h"
#include "engine/tile.h"

enum { D = 64, BLOCK = 64, PV_KEYS = 512, ROUNDS = 7 };

static const size_t lengths[] = {512, 2048, 8192};

/* One head: inputs, the laid-out keys and values, and each way's output. */
struct head {
	size_t L, ldk;
	float *q, *k, *v; /* [L, D] each */
	float *kt, *vh;	  /* [D, ldk], [L, D] */
	float *s;	  /* [BLOCK, L] scores of one query block */
	float *out[2];	  /* [L, D]: tile's, sgemm's */
};

static float *floats(size_t n)
{
	float *p = malloc(n * sizeof(float));

	if (p == NULL) {
		fprintf(stderr, "bench_tile: out of memory\n");
		exit(1);
	}
	return p;
}

static void head_init(struct head *h, size_t L, struct attn_prng *g)
{
	h->L = L;
	h->ldk = tile_ld(L);
	h->q = floats(L * D);
	h->k = floats(L * D);
	h->v = floats(L * D);
	h->kt = floats(D * h->ldk);
	h->vh = floats(L * D);
	h->s = floats(BLOCK * L);
	h->out[0] = floats(L * D);
	h->out[1] = floats(L * D);
	for (size_t i = 0; i < L * D; i++) {
		h->q[i] = attn_prng_symmetric(g, 0.125);
		h->k[i] = attn_prng_symmetric(g, 0.125);
		h->v[i] = attn_prng_symmetric(g, 1.0);
	}
}

static void head_release(struct head *h)
{
	free(h->q);
	free(h->k);
	free(h->v);
	free(h->kt);
	free(h->vh);
	free(h->s);
	free(h->out[0]);
	free(h->out[1]);
}

/* The head on tile.h's vector kernels; milliseconds. */
static double run_tile(struct head *h)
{
	double t0 = bench_now_s();
	size_t L = h->L;

	tile_pack_kt(h->kt, h->ldk, h->k, D, L, D);
	tile_pack_v(h->vh, h->v, D, L, D);
	for (size_t i0 = 0; i0 < L; i0 += BLOCK) {
		size_t m = L - i0 < BLOCK ? L - i0 : BLOCK;
		float *out = h->out[0] + i0 * D;

		tile_qk(h->s, L, NULL, h->q + i0 * D, D, h->kt, h->ldk, m, L, D, 1.0f, 1);
		memset(out, 0, m * D * sizeof(float));
		for (size_t k0 = 0; k0 < L; k0 += PV_KEYS)
			tile_pv(out, D, h->s + k0, L, h->vh + k0 * D, m,
				L - k0 < PV_KEYS ? L - k0 : PV_KEYS, D, 1);
	}
	return 1e3 * (bench_now_s() - t0);
}

/* The head on cblas_sgemm; milliseconds. */
static double run_sgemm(struct head *h)
{
	double t0 = bench_now_s();
	int L = (int)h->L;

	for (int i0 = 0; i0 < L; i0 += BLOCK) {
		int m = L - i0 < BLOCK ? L - i0 : BLOCK;

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, L, D, 1.0f,
			    h->q + (size_t)i0 * D, D, h->k, D, 0.0f, h->s, L);
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, D, L, 1.0f, h->s, L, h->v,
			    D, 0.0f, h->out[1] + (size_t)i0 * D, D);
	}
	return 1e3 * (bench_now_s() - t0);
}

/* 0 when the two outputs agree within 1e-4 of the largest. */
static int outputs_agree(const struct head *h)
{
	float big = 0.0f, worst = 0.0f;

	for (size_t i = 0; i < h->L * D; i++) {
		big = fmaxf(big, fabsf(h->out[1][i]));
		worst = fmaxf(worst, fabsf(h->out[0][i] - h->out[1][i]));
	}
	return worst <= 1e-4f * big ? 0 : -1;
}

int main(void)
{
	struct attn_prng g;

	if (!tile_simd_available(D)) {
		printf("bench_tile: no AVX-512F on this CPU: the engine multiplies with sgemm\n");
		return 0;
	}
	openblas_set_num_threads(1);
	attn_prng_seed(&g, 42);
	printf("\nAttention products, one head (D = %d), tile.h's AVX-512F kernels against sgemm;\n"
	       "1 thread, median of %d rounds; GFLOP/s = 4 L^2 D / ms\n",
	       D, ROUNDS);
	printf("%6s %10s %10s %9s %9s %8s\n", "L", "tile ms", "sgemm ms", "tile GF", "sgemm GF",
	       "speedup");
	for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
		struct head h;
		double t[2][ROUNDS], ratio[ROUNDS], flops, ms[2];

		head_init(&h, lengths[i], &g);
		run_tile(&h); /* warm-up: page faults, caches */
		run_sgemm(&h);
		for (int r = 0; r < ROUNDS; r++) {
			t[0][r] = run_tile(&h);
			t[1][r] = run_sgemm(&h);
			ratio[r] = t[1][r] / t[0][r];
		}
		if (outputs_agree(&h) != 0) {
			fprintf(stderr, "bench_tile: L = %zu: tile and sgemm disagree\n", h.L);
			return 1;
		}
		flops = 4.0 * (double)h.L * (double)h.L * D;
		ms[0] = bench_median(t[0], ROUNDS);
		ms[1] = bench_median(t[1], ROUNDS);
		printf("%6zu %10.3f %10.3f %9.1f %9.1f %7.2fx\n", h.L, ms[0], ms[1],
		       flops / ms[0] * 1e-6, flops / ms[1] * 1e-6, bench_median(ratio, ROUNDS));
		head_release(&h);
	}
	return 0;
}
