/*
 * memory.c: bench_engine's peak-memory table, for the L = 8192 rows.
 *
 * For threads 1 and 2 it sets the engine's workspace for x [B, 8192, E]
 * against inputs + outputs, and, when the run's time budget allows, forks a
 * child that allocates and touches x and out, takes ru_maxrss as its
 * baseline, then runs the forward pass on an untouched workspace: the
 * growth is what the pass itself made resident.
 */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* Reads every page of the model so its shared pages count in the baseline. */
static void touch_model(const struct attn_model *m)
{
	volatile float sink = 0;
	size_t n_qkv = 3 * m->E * m->E, n_o = m->E * m->E;

	for (size_t i = 0; i < n_qkv; i += 1024)
		sink += m->w_qkv[i];
	for (size_t i = 0; i < n_o; i += 1024)
		sink += m->w_o[i];
	(void)sink;
}

/* In the child: allocate and touch in/out, baseline, then workspace + forward. */
static struct mem_result mem_child(const struct bench *bn, size_t B, const struct variant *v)
{
	struct mem_result r = {0, 0, 0};
	struct bufs b;
	size_t n = B * MEMORY_L * BENCH_E;

	memset(&b, 0, sizeof(b));
	b.B = B;
	b.L = MEMORY_L;
	openblas_set_num_threads(v->blas_threads);
	touch_model(bn->model);
	b.x = alloc_touched(n * sizeof(float));
	b.out = alloc_touched(n * sizeof(float));
	if (b.x == NULL || b.out == NULL)
		return r;
	fill_normal(b.x, n, B);
	r.rss_base_kb = maxrss_kb();
	{
		struct attn_mha req = make_request(bn, &b, 0, v->engine_threads);
		struct attn_error err;

		req.workers = NULL; /* the parent's worker threads are not in this child */
		if (attn_mha_workspace(&req, &b.ws_bytes, &err) != ATTN_OK)
			return r;
		b.ws = malloc(b.ws_bytes); /* untouched: the forward pass decides */
		if (b.ws == NULL || attn_mha_forward(&req, b.ws, b.ws_bytes, &err) != ATTN_OK)
			return r;
	}
	r.rss_peak_kb = maxrss_kb();
	r.ok = 1;
	return r;
}

/* Forks a child running mem_child; its result, or ok = 0 on any failure. */
static struct mem_result mem_fork(const struct bench *bn, size_t B, const struct variant *v)
{
	struct mem_result r = {0, 0, 0};
	int fd[2], status;
	pid_t pid;

	fflush(stdout);
	if (pipe(fd) != 0)
		return r;
	pid = fork();
	if (pid == 0) {
		close(fd[0]);
		r = mem_child(bn, B, v);
		_exit(write(fd[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
	}
	close(fd[1]);
	if (pid > 0 && read(fd[0], &r, sizeof(r)) != (ssize_t)sizeof(r))
		r.ok = 0;
	close(fd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	return r;
}

/* Sizes one L = 8192 row and, when its forward pass fits the budget, forks the child. */
static void memory_measure(struct bench *bn, size_t B, int threads, int v)
{
	struct mem_row *row = &bn->mem[bn->n_mem++];
	struct bufs b = {B, MEMORY_L, NULL, NULL, NULL, NULL, 0};
	struct attn_mha req;
	struct attn_error err;

	memset(row, 0, sizeof(*row));
	row->B = B;
	row->threads = threads;
	row->v = v;
	row->io = 2 * B * MEMORY_L * BENCH_E * sizeof(float);
	b.x = bn->model->w_qkv; /* sizing only: never read; out may be NULL */
	req = make_request(bn, &b, 0, variants[v].engine_threads);
	if (attn_mha_workspace(&req, &row->ws, &err) != ATTN_OK)
		die("attn_mha_workspace", &err);
	if (bn->forward_ms[v] <= 0 ||
	    bench_now_s() - bn->t0 + bn->forward_ms[v] / 1e3 > RUN_BUDGET_S)
		return;
	row->ran = 1;
	row->r = mem_fork(bn, B, &variants[v]);
}

/* After a B's L = 8192 timings: threads 1 (eng1) and threads 2 (the faster run). */
void memory_shape(struct bench *bn, size_t B)
{
	double eng2 = bn->forward_ms[1], blas2 = bn->forward_ms[2];

	memory_measure(bn, B, 1, 0);
	memory_measure(bn, B, 2, blas2 > 0 && (eng2 <= 0 || blas2 < eng2) ? 2 : 1);
	for (int v = 0; v < N_VARIANTS; v++)
		bn->forward_ms[v] = 0;
}

void print_memory(const struct bench *bn)
{
	printf("\nPeak memory at L = %d without weights (in = x [B,L,E], key = value = x; "
	       "out [B,L,E]; MiB = 2^20 B)\n",
	       MEMORY_L);
	printf("%2s %3s %-5s %10s %10s %11s %12s %12s  %-12s %s\n", "B", "thr", "run", "in+out MiB",
	       "ws MiB", "(ws+io)/io", "maxrss +MiB", "(rss+io)/io", "target", "verdict");
	for (int i = 0; i < bn->n_mem; i++) {
		const struct mem_row *m = &bn->mem[i];
		double ratio = (double)(m->ws + m->io) / (double)m->io;
		double grown = m->r.ok ? 1024.0 * (double)(m->r.rss_peak_kb - m->r.rss_base_kb) : 0;
		char rss[24] = "skipped", rss_ratio[24] = "-";

		if (m->ran && !m->r.ok)
			snprintf(rss, sizeof(rss), "failed");
		if (m->r.ok) {
			snprintf(rss, sizeof(rss), "%.1f", grown / (1024.0 * 1024.0));
			snprintf(rss_ratio, sizeof(rss_ratio), "%.2f",
				 (grown + (double)m->io) / (double)m->io);
		}
		printf("%2zu %3d %-5s %10.1f %10.1f %11.2f %12s %12s  %-12s %s\n", m->B, m->threads,
		       variants[m->v].name, mib(m->io), mib(m->ws), ratio, rss, rss_ratio,
		       "< 2x in+out", ratio < TARGET_MEMORY ? "PASS" : "MISS");
	}
	if (bn->n_mem == 0)
		printf("(no L = %d rows in this run)\n", MEMORY_L);
	printf("maxrss +MiB: ru_maxrss growth of a forked child running the forward pass, over "
	       "its baseline taken after\nallocating and touching x and out; it includes "
	       "OpenBLAS buffers and thread stacks. \"skipped\": no time left or no timing.\n");
}
