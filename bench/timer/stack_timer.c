/*
 * stack_timer.c: a whole checkpoint's forward pass for
 * bench/checkpoint_bench.py to time in its own process, beside PyTorch (as
 * attnd_timer.c does for one layer), and the machine's sgemm on the stack's
 * shapes, the ceiling the bench divides by.
 *
 * Shapes (stack.h's legend): ids [1, L], out [1, L, E], attentions
 * [N, 1, H, L, L] when every layer is captured per head.
 *
 * Threads: "eng" runs the engine on `threads` threads (kept workers,
 * workers.h) with OpenBLAS on one; "blas" runs the engine on one thread with
 * OpenBLAS on `threads`. stack_timer_run sets OpenBLAS's count for the call
 * and restores the caller's (sleeping first when it lowers it, so that
 * OpenBLAS's spinning workers are idle, as attnd_timer.c does).
 *
 * Buffers: the attentions sit on 2 MiB pages where the kernel gives them
 * (common/huge_alloc.h, as api/stack_run.c allocates a request's; this VM's
 * THP setting is "madvise"). Every
 * byte of them is written, so RSS is what it was; the workspace, partly
 * untouched at one thread, stays on malloc's pages. On 4 KiB pages, gpt2
 * L = 512 with attentions (151 MB, 37,000 pages written each pass) took
 * 150-250 ms more than without whenever a PyTorch pass had run in between,
 * as checkpoint_bench.py's rounds have: all of it in the first stores to
 * each page (qk_avx512 in perf), none in page faults. On 2 MiB pages the
 * with pass costs what its writes cost (bench/README.md, Checkpoints,
 * 2026-12-03).
 *
 * Ownership: one timer per process (this file keeps the state):
 * stack_timer_load maps the folder (server/checkpoint_dir.h) and makes the
 * workers; stack_timer_free releases them and the buffers of the last run.
 * Every function returns 0 on success, -1 on failure (the message of a
 * failed load goes to the caller's err buffer).
 */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/huge_alloc.h"
#include "engine/stack.h"
#include "engine/workers.h"
#include "server/checkpoint_dir.h"

void openblas_set_num_threads(int n);
int openblas_get_num_threads(void);

static struct {
	struct checkpoint_dir dir;
	int loaded;
	struct attn_workers *workers;
	size_t threads;
	size_t L;
	int capture;
	uint8_t *flags; /* [N] all 1 */
	float *out, *attentions;
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
	free(timer.attentions);
	free(timer.ws);
	timer.out = timer.attentions = NULL;
	timer.ws = NULL;
	timer.L = 0;
}

/* Maps dir; threads: the most the engine will use. *load_ms: the time of
 * checkpoint_dir_load alone. *info gets {N, E, H, Hkv, D, F, V, family}
 * and *mapped the bytes of the safetensors files. */
int stack_timer_load(const char *dir, int threads, double *load_ms, size_t *info, size_t *mapped,
		     char *err, size_t errlen);
int stack_timer_load(const char *dir, int threads, double *load_ms, size_t *info, size_t *mapped,
		     char *err, size_t errlen)
{
	const struct attn_stack *s;
	double t0 = now_ms();

	if (checkpoint_dir_load(&timer.dir, dir, err, errlen) != 0)
		return -1;
	*load_ms = now_ms() - t0;
	timer.loaded = 1;
	s = &timer.dir.ck->stack;
	info[0] = s->n_layers;
	info[1] = s->E;
	info[2] = s->H;
	info[3] = s->Hkv;
	info[4] = s->D;
	info[5] = s->F;
	info[6] = s->vocab;
	info[7] = (size_t)s->family;
	*mapped = timer.dir.mapped_bytes;
	timer.threads = threads < 1 ? 1 : (size_t)threads;
	timer.flags = malloc(s->n_layers);
	if (timer.flags == NULL)
		return -1;
	memset(timer.flags, 1, s->n_layers);
	if (timer.threads > 1 && attn_workers_new(&timer.workers, timer.threads, NULL) != ATTN_OK)
		return -1;
	return 0;
}

static struct attn_stack_run request(const int64_t *ids, size_t threads)
{
	struct attn_stack_run run;
	const struct attn_stack *s = &timer.dir.ck->stack;

	memset(&run, 0, sizeof(run));
	run.stack = s;
	run.B = 1;
	run.L = timer.L;
	run.ids = ids;
	run.last_layer = s->n_layers - 1;
	run.capture = timer.capture ? timer.flags : NULL;
	run.weights_mode = ATTN_WEIGHTS_PER_HEAD;
	run.attentions = timer.attentions;
	run.out = timer.out;
	run.threads = threads;
	run.workers = threads > 1 ? timer.workers : NULL;
	return run;
}

/* Buffers for (L, capture), kept while they stay; 0 on success. */
static int prepare(size_t L, int capture, const int64_t *ids)
{
	const struct attn_stack *s = &timer.dir.ck->stack;
	struct attn_stack_run run;

	if (L == timer.L && capture == timer.capture)
		return 0;
	release_buffers();
	timer.L = L;
	timer.capture = capture;
	timer.out = malloc(L * s->E * sizeof(float));
	timer.attentions = capture ? huge_alloc(s->n_layers * s->H * L * L * sizeof(float)) : NULL;
	run = request(ids, timer.threads);
	if (timer.out == NULL || (capture && timer.attentions == NULL) ||
	    attn_stack_workspace(&run, &timer.ws_bytes, NULL) != ATTN_OK)
		return -1;
	timer.ws = malloc(timer.ws_bytes);
	if (timer.ws == NULL)
		return -1;
	/* first touch here, not in a timed pass: at 2 threads the bench's first
	 * warm-up (eng) took the page faults and the second (blas) won */
	memset(timer.ws, 0, timer.ws_bytes);
	if (timer.attentions)
		memset(timer.attentions, 0, s->n_layers * s->H * L * L * sizeof(float));
	return 0;
}

/* reps forward passes on ids [1, L], every layer's attentions kept when
 * capture; blas_mode 0 = "eng", 1 = "blas" (see the top). Their times (ms)
 * into ms[]; the last pass's hidden state copied to out [L, E] when not
 * NULL; *ws_bytes the workspace used. */
int stack_timer_run(const int64_t *ids, int L, int capture, int blas_mode, int reps, double *ms,
		    float *out, size_t *ws_bytes);
int stack_timer_run(const int64_t *ids, int L, int capture, int blas_mode, int reps, double *ms,
		    float *out, size_t *ws_bytes)
{
	int blas = openblas_get_num_threads(), want = blas_mode ? (int)timer.threads : 1;
	struct timespec settle = {0, 150000000};
	struct attn_stack_run run;
	int rc = 0;

	if (!timer.loaded || L < 1 || prepare((size_t)L, capture != 0, ids) != 0)
		return -1;
	if (want < blas)
		nanosleep(&settle, NULL);
	openblas_set_num_threads(want);
	run = request(ids, blas_mode ? 1 : timer.threads);
	for (int r = 0; r < reps && rc == 0; r++) {
		double t0 = now_ms();

		rc = attn_stack_forward(&run, timer.ws, timer.ws_bytes, NULL) == ATTN_OK ? 0 : -1;
		ms[r] = now_ms() - t0;
	}
	openblas_set_num_threads(blas);
	if (out)
		memcpy(out, timer.out, (size_t)L * timer.dir.ck->stack.E * sizeof(float));
	*ws_bytes = timer.ws_bytes;
	return rc;
}

/* The ceiling: reps calls of cblas_sgemm (RowMajor) C [M, N] = A [M, K] W^T,
 * W [N, K] (or A W with W [K, N] when in_major) on `threads` OpenBLAS
 * threads, on buffers of its own (ones); their times (ms) into ms[]. */
int stack_timer_sgemm(int M, int N, int K, int in_major, int threads, int reps, double *ms);
int stack_timer_sgemm(int M, int N, int K, int in_major, int threads, int reps, double *ms)
{
	int blas = openblas_get_num_threads();
	size_t m = (size_t)M, n = (size_t)N, k = (size_t)K;
	float *a = malloc(m * k * sizeof(float)), *w = malloc(n * k * sizeof(float));
	float *c = malloc(m * n * sizeof(float));
	struct timespec settle = {0, 150000000};
	int rc = a && w && c ? 0 : -1;

	for (size_t i = 0; rc == 0 && i < m * k; i++)
		a[i] = 1.0f;
	for (size_t i = 0; rc == 0 && i < n * k; i++)
		w[i] = 1.0f / (float)K;
	if (threads < blas)
		nanosleep(&settle, NULL);
	openblas_set_num_threads(threads);
	for (int r = 0; r < reps && rc == 0; r++) {
		double t0 = now_ms();

		cblas_sgemm(CblasRowMajor, CblasNoTrans, in_major ? CblasNoTrans : CblasTrans, M, N,
			    K, 1.0f, a, K, w, in_major ? N : K, 0.0f, c, N);
		ms[r] = now_ms() - t0;
	}
	openblas_set_num_threads(blas);
	free(a);
	free(w);
	free(c);
	return rc;
}

void stack_timer_free(void);
void stack_timer_free(void)
{
	release_buffers();
	free(timer.flags);
	attn_workers_free(timer.workers);
	checkpoint_dir_release(&timer.dir);
	memset(&timer, 0, sizeof(timer));
}
