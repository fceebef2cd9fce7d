/*
 * attnd_timer.c: the engine for bench/torch_mha.py to time in its own
 * process, between PyTorch's reps, so that both are timed in the same
 * seconds of this shared machine (a ratio of times taken minutes apart moves
 * with whatever else the host runs).
 *
 * The layer is bench_engine's: self-attention, E = 512, H = 8, seeded
 * weights, the caller's x [B, L, E]. Threads as bench_engine's eng1 / eng2:
 * the engine splits the work, on kept workers (workers.h), and OpenBLAS runs
 * one thread for it (attnd_timer_ms sets that and restores the caller's
 * count, sleeping first so that OpenBLAS's spinning workers are idle).
 *
 * Ownership: one timer per process (this file, not the engine, keeps state):
 * attnd_timer_setup makes the model and workers, attnd_timer_free frees them
 * and the buffers of the last shape.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/mha.h"
#include "engine/model.h"
#include "engine/workers.h"

void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);

enum { E = 512, H = 8 };

static struct {
	struct attn_model *model;
	struct attn_workers *workers;
	size_t threads;
	size_t B, L;
	int with;
	float *out, *weights;
	void *ws;
	size_t ws_bytes;
} timer;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static void release_buffers(void)
{
	free(timer.out);
	free(timer.weights);
	free(timer.ws);
	timer.out = timer.weights = NULL;
	timer.ws = NULL;
	timer.B = timer.L = 0;
}

/* 0 on success. */
int attnd_timer_setup(int threads, uint64_t seed);
int attnd_timer_setup(int threads, uint64_t seed)
{
	struct attn_model_config cfg = { E, H, 0, 1, 0 };

	timer.threads = threads < 1 ? 1 : (size_t)threads;
	if (attn_model_new_seeded(&timer.model, &cfg, seed, NULL) != ATTN_OK)
		return -1;
	if (timer.threads > 1 && attn_workers_new(&timer.workers, timer.threads, NULL) != ATTN_OK)
		return -1;
	return 0;
}

static struct attn_mha request(const float *x)
{
	struct attn_mha req;

	memset(&req, 0, sizeof(req));
	req.model = timer.model;
	req.B = timer.B;
	req.Lq = req.Lk = timer.L;
	req.query = x;
	req.out = timer.out;
	req.weights_mode = timer.with ? ATTN_WEIGHTS_PER_HEAD : ATTN_WEIGHTS_NONE;
	req.weights = timer.weights;
	req.threads = timer.threads;
	req.workers = timer.workers;
	return req;
}

/* Buffers for (B, L, with) and input x, kept while the shape stays; 0 on success. */
static int prepare(size_t B, size_t L, int with, const float *x)
{
	struct attn_mha req;

	if (B == timer.B && L == timer.L && with == timer.with)
		return 0;
	release_buffers();
	timer.B = B;
	timer.L = L;
	timer.with = with;
	timer.out = malloc(B * L * E * sizeof(float));
	timer.weights = with ? malloc(B * H * L * L * sizeof(float)) : NULL;
	req = request(x);
	if (timer.out == NULL || (with && timer.weights == NULL) ||
	    attn_mha_workspace(&req, &timer.ws_bytes, NULL) != ATTN_OK)
		return -1;
	timer.ws = malloc(timer.ws_bytes);
	return timer.ws == NULL ? -1 : 0;
}

/* reps forward passes of x [B, L, E]; their times (ms) into ms[]; 0 on success. */
int attnd_timer_run(int B, int L, int with, const float *x, int reps, double *ms);
int attnd_timer_run(int B, int L, int with, const float *x, int reps, double *ms)
{
	int blas = openblas_get_num_threads(), rc = 0;
	struct timespec settle = { 0, 150000000 };
	struct attn_mha req;

	if (timer.model == NULL || prepare((size_t)B, (size_t)L, with, x) != 0)
		return -1;
	if (blas > 1) {
		nanosleep(&settle, NULL);
		openblas_set_num_threads(1);
	}
	req = request(x);
	for (int r = 0; r < reps && rc == 0; r++) {
		double t0 = now_ms();

		rc = attn_mha_forward(&req, timer.ws, timer.ws_bytes, NULL) == ATTN_OK ? 0 : -1;
		ms[r] = now_ms() - t0;
	}
	if (blas > 1)
		openblas_set_num_threads(blas);
	return rc;
}

void attnd_timer_free(void);
void attnd_timer_free(void)
{
	release_buffers();
	attn_workers_free(timer.workers);
	attn_model_free(timer.model);
	memset(&timer, 0, sizeof(timer));
}
