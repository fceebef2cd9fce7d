/*
 * bench_linear.c: a checkpoint's projections at a few rows, linear_few
 * against sgemm (engine/linear_few.h, engine/linear.h).
 *
 * The weights are GPT-2 small's twelve layers of Conv1D maps, W [in, out]:
 * c_attn 768 x 2304, attn c_proj 768 x 768, c_fc 768 x 3072, mlp c_proj
 * 3072 x 768 (340 MB of F32, on 2 MiB pages as a loaded checkpoint's are,
 * common/huge_alloc), so that one pass streams them from memory as a forward
 * pass does. x [n, in] for n in {1, 4, 16, 32, 64, 128, 256, 512}. Per n, in
 * ROUNDS interleaved rounds, one thread:
 *   few     linear_few on each whole map, as the stack calls it on one
 *           thread (its choice up to linear_few_max rows: "stack")
 *   tiles   cblas_sgemm on each 256-column tile (the stack's choice before
 *           linear_few, and the twin it is compared with)
 *   whole   cblas_sgemm on each whole map: OpenBLAS's own rate on these
 *           shapes, the machine's ceiling for them
 *   read    one read of the 340 MB (64-bit xor): the memory's floor
 * Medians of the rounds; few / tiles is paired by round. The outputs of few
 * and tiles are checked to agree (1e-5 abs + 1e-4 rel of the largest).
 *
 * Usage: build/bench/bench_linear [--isa avx2]
 *   --isa avx2  few runs linear_few's AVX2 kernel (the default: the best
 *               this CPU runs). With OPENBLAS_CORETYPE=Haswell too, sgemm
 *               runs OpenBLAS's AVX2 kernels: an AVX2-only machine's view.
 */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/timing.h"
#include "common/huge_alloc.h"
#include "engine/linear.h"
#include "engine/linear_few.h"
#include "engine/prng.h"

enum { LAYERS = 12, MAPS = 4, ROUNDS = 7, TILE = LINEAR_COLS };

static const size_t maps[MAPS][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};
static const size_t rows[] = {1, 4, 16, 32, 64, 128, 256, 512};

struct weights {
	float *w[LAYERS][MAPS]; /* [in, out] each */
	float *b[MAPS];		/* [out] each, shared by the layers */
	size_t floats;		/* of all w */
};

enum way { FEW, TILES, WHOLE, READ, WAYS };

static const char *const way_name[WAYS] = {"few", "tiles", "whole", "read"};

static enum few_isa few_isa; /* linear_few's kernel in `few` */

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static float *filled(struct attn_prng *g, size_t n)
{
	float *p = huge_alloc(n * sizeof(float));

	if (p == NULL) {
		fprintf(stderr, "bench_linear: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		p[i] = 0.02f * attn_prng_normal(g);
	return p;
}

static void weights_init(struct weights *wt, struct attn_prng *g)
{
	wt->floats = 0;
	for (int l = 0; l < LAYERS; l++)
		for (int m = 0; m < MAPS; m++) {
			wt->w[l][m] = filled(g, maps[m][0] * maps[m][1]);
			wt->floats += maps[m][0] * maps[m][1];
		}
	for (int m = 0; m < MAPS; m++)
		wt->b[m] = filled(g, maps[m][1]);
}

/* out [n, width] = x [n, in] W + b, W [in, width], one 256-column tile at
 * a time by linear_few or by sgemm, or by one sgemm. */
static void project(enum way way, float *out, const float *x, size_t n, const float *W,
		    const float *b, size_t in, size_t width)
{
	if (way == FEW) { /* one call, as the stack makes on one thread */
		linear_few(out, width, x, in, n, W, width, b, width, in, few_isa);
		return;
	}
	if (way == WHOLE) {
		for (size_t r = 0; r < n; r++)
			memcpy(out + r * width, b, width * sizeof(float));
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)width, (int)in,
			    1.0f, x, (int)in, W, (int)width, 1.0f, out, (int)width);
		return;
	}
	for (size_t c = 0; c < width; c += TILE) {
		size_t w = width - c < TILE ? width - c : TILE;

		for (size_t r = 0; r < n; r++)
			memcpy(out + r * width + c, b + c, w * sizeof(float));
		/* seek to out[0, c], W[0, c] */
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)w, (int)in,
			    1.0f, x, (int)in, W + c, (int)width, 1.0f, out + c, (int)width);
	}
}

static volatile uint64_t read_sink;

/* One pass of `way` over every layer's maps; outs [MAPS] keep each map's
 * last output. */
static double pass_ms(enum way way, const struct weights *wt, const float *x, size_t n,
		      float *const *outs)
{
	double t0 = now_ms();

	if (way == READ) {
		uint64_t acc = 0;

		for (int l = 0; l < LAYERS; l++)
			for (int m = 0; m < MAPS; m++) {
				const uint64_t *p = (const uint64_t *)(const void *)wt->w[l][m];

				for (size_t i = 0; i < maps[m][0] * maps[m][1] / 2; i++)
					acc ^= p[i];
			}
		read_sink = acc;
		return now_ms() - t0;
	}
	for (int l = 0; l < LAYERS; l++)
		for (int m = 0; m < MAPS; m++)
			project(way, outs[m], x, n, wt->w[l][m], wt->b[m], maps[m][0], maps[m][1]);
	return now_ms() - t0;
}

/* The largest |a - b| over the largest |b|, of n floats. */
static double rel_diff(const float *a, const float *b, size_t n)
{
	double d = 0, top = 0;

	for (size_t i = 0; i < n; i++) {
		d = fmax(d, fabs((double)a[i] - b[i]));
		top = fmax(top, fabs((double)b[i]));
	}
	return top > 0 ? d / top : d;
}

/* outs [MAPS]: each map's output [n, out]; exits when out of memory. */
static void outs_alloc(float **outs, size_t n)
{
	for (int m = 0; m < MAPS; m++) {
		outs[m] = malloc(n * maps[m][1] * sizeof(float));
		if (outs[m] == NULL) {
			fprintf(stderr, "bench_linear: out of memory\n");
			exit(1);
		}
	}
}

static void outs_free(float **outs)
{
	for (int m = 0; m < MAPS; m++)
		free(outs[m]);
}

static int check_agree(float *const *few, float *const *tiles, size_t n)
{
	for (int m = 0; m < MAPS; m++) {
		double d = rel_diff(few[m], tiles[m], n * maps[m][1]);

		if (!(d <= 1e-4)) {
			fprintf(stderr,
				"bench_linear: n %zu map %d: few and tiles differ by %.2g\n", n, m,
				d);
			return 0;
		}
	}
	return 1;
}

static int bench_rows(const struct weights *wt, struct attn_prng *g, size_t n)
{
	double ms[WAYS][ROUNDS], ratio[ROUNDS], med[WAYS];
	float *outs[WAYS][MAPS], *x = filled(g, n * 3072);
	double flops = 2.0 * (double)n * (double)wt->floats;
	int ok;

	for (int w = 0; w < WAYS; w++)
		outs_alloc(outs[w], n);
	for (int r = 0; r < ROUNDS; r++) {
		for (int w = 0; w < WAYS; w++)
			ms[w][r] = pass_ms((enum way)w, wt, x, n, outs[w]);
		ratio[r] = ms[TILES][r] / ms[FEW][r];
	}
	ok = check_agree(outs[FEW], outs[TILES], n);
	for (int w = 0; w < WAYS; w++)
		med[w] = bench_median(ms[w], ROUNDS);
	printf("%5zu %9.2f %9.2f %9.2f %9.2f %8.1f %8.1f %8.1f %8.2fx %8s\n", n, med[FEW],
	       med[TILES], med[WHOLE], med[READ], flops / med[FEW] * 1e-6,
	       flops / med[TILES] * 1e-6, flops / med[WHOLE] * 1e-6, bench_median(ratio, ROUNDS),
	       n <= linear_few_max(few_isa) ? "few" : "tiles");
	for (int w = 0; w < WAYS; w++)
		outs_free(outs[w]);
	free(x);
	return ok;
}

int main(int argc, char **argv)
{
	struct weights wt;
	struct attn_prng g;
	int ok = 1;

	few_isa = linear_few_best();
	if (argc == 3 && strcmp(argv[1], "--isa") == 0 && strcmp(argv[2], "avx2") == 0) {
		few_isa = few_isa >= FEW_AVX2 ? FEW_AVX2 : FEW_SCALAR;
	} else if (argc != 1) {
		fprintf(stderr, "usage: bench_linear [--isa avx2]\n");
		return 2;
	}
	if (few_isa == FEW_SCALAR) {
		printf("bench_linear: no AVX2 here; the stack uses sgemm at every length\n");
		return 0;
	}
	openblas_set_num_threads(1);
	attn_prng_seed(&g, 2024);
	weights_init(&wt, &g);
	printf("bench_linear: GPT-2 small's Conv1D maps, %d layers, %.0f MB of F32 W [in, out], "
	       "1 thread, linear_few on %s;\n%s / %s / %s / %s: ms per pass over every layer, "
	       "median of %d rounds;\nGFLOP/s = 2 n (weights) / ms; "
	       "few/tiles: speedup paired by round; stack: what linear_forward_w runs at n\n",
	       LAYERS, (double)wt.floats * 4e-6, few_isa == FEW_AVX512 ? "AVX-512F" : "AVX2",
	       way_name[FEW], way_name[TILES], way_name[WHOLE], way_name[READ], ROUNDS);
	printf("%5s %9s %9s %9s %9s %8s %8s %8s %9s %8s\n", "n", "few ms", "tiles ms", "whole ms",
	       "read ms", "few GF", "tiles GF", "whole GF", "few/tiles", "stack");
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		ok &= bench_rows(&wt, &g, rows[i]);
	for (int l = 0; l < LAYERS; l++)
		for (int m = 0; m < MAPS; m++)
			free(wt.w[l][m]);
	for (int m = 0; m < MAPS; m++)
		free(wt.b[m]);
	return ok ? 0 : 1;
}
