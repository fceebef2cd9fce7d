/*
 * main.c: bench_engine, `make bench`'s engine tables (bench/README.md).
 *
 * Shapes, outermost first (self-attention, Lq = Lk = L; E = 512, H = 8, D = E / H):
 *   x       [B, L, E]     input, N(0, 1)
 *   out     [B, L, E]     output
 *   weights [B, H, L, L]  per-head attention weights, owned here
 *
 * For B in {1, 8} and L in {128, 512, 2048, 8192} it times attn_mha_forward with
 * and without per-head weights (L = 8192 without only: the weights would be 2+ GiB)
 * and cblas_sgemm on the projection shape C [B L, 3E] = x [B L, E] W^T, W [3E, E]:
 * the machine's own ceiling. The machine is shared and noisy, so every time is a
 * median, and for each (B, L, thread count) the ceiling and all the engine's cells
 * run interleaved in rounds (time_interleaved): of-sgemm and with/none are the
 * median over rounds of ratios of times taken in the same round, seconds apart
 * (paired_ratio). FLOPs are attn_mha_flops: 8 B L E^2 + 4 B L^2 E.
 *
 * Thread settings (struct variant):
 *   threads 1   engine 1 thread, OpenBLAS 1 thread
 *   threads 2   the better of eng2 (engine 2 threads, OpenBLAS 1 thread) and blas2
 *               (engine 1 thread, OpenBLAS 2 threads); the ceiling uses OpenBLAS 2.
 *               eng2's second thread is an attn_workers thread kept for the whole
 *               run, as OpenBLAS keeps its own (workers.h)
 *
 * OpenBLAS's idle workers busy-wait about 0.1 s after a multi-threaded call
 * (measured here: a full core), which would steal the second core from eng2;
 * so whenever the OpenBLAS thread count goes down the bench sleeps SETTLE_NS.
 * The "other" column is the CPU time other processes (and the hypervisor's
 * steal) took during a row, in % of all cores, from /proc/stat: a row with a
 * large value was measured on a busy machine.
 *
 * Then, for the L = 8192 rows, peak memory (memory.c). Targets are marked PASS / MISS for
information only: the exit
 * status is 0 unless the bench itself fails (allocation, engine error, I/O).
 *
 * Every measured cell is also written to engine.tsv next to the binary (or
 * --tsv PATH) for bench/torch_mha.py: B, L, weights, threads, mode, ms, gflops,
 * sgemm_gflops, reps; for threads 2 the better setting only.
 *
 *   bench_engine [--quick] [--tsv PATH]    --quick: B = 1, L in {128, 512}
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

extern char **environ;

static const size_t batches[] = {1, 8};
static const size_t lengths[] = {128, 512, 2048, 8192};

/* Variants per thread count: threads 1 -> {eng1}, threads 2 -> {eng2, blas2}. */
static const struct {
	int threads, first, count;
} thread_rows[] = {{1, 0, 1}, {2, 1, 2}};

enum { W_NONE = 0, W_WITH = 1 };
static const char *const weights_name[] = {"without", "with"};

/* One timed cell: a median, or a reason it was skipped. */
struct cell {
	double ms;
	int reps;
	int rounds;
	double round_ms[ROUNDS]; /* the median of each round's reps */
	const char *mode;
	char skipped[96]; /* empty when measured */
};

/* ---- the machine ---------------------------------------------------------- */

/* The first "model name" of /proc/cpuinfo into buf, or "unknown". */
static void cpu_model(char *buf, size_t n)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, n, "unknown");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) != 0 || colon == NULL)
			continue;
		colon += 1 + (colon[1] == ' ');
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, n, "%s", colon);
		break;
	}
	fclose(f);
}

static void print_machine(const struct bench *bn)
{
	char model[256];
	int any = 0;

	cpu_model(model, sizeof(model));
	printf("attnd engine benchmark%s\n", bn->quick ? " (--quick)" : "");
	printf("machine: nproc %ld, CPU \"%s\"\n", sysconf(_SC_NPROCESSORS_ONLN), model);
	printf("OpenBLAS: %s (core %s)\n", openblas_get_config(), openblas_get_corename());
	printf("environment:");
	for (char **e = environ; *e != NULL; e++) {
		if (strncmp(*e, "OPENBLAS_", 9) == 0 || strncmp(*e, "OMP_", 4) == 0 ||
		    strncmp(*e, "GOTO_", 5) == 0) {
			printf(" %s", *e);
			any = 1;
		}
	}
	printf("%s\n", any ? "" : " no OPENBLAS_* / OMP_* / GOTO_* variables set");
	printf("layer: self-attention, E = %d, H = %d, seeded weights, x ~ N(0, 1)\n", BENCH_E,
	       BENCH_H);
	printf("targets: without weights, at L >= %d: >= %.0f%% of sgemm | with weights <= "
	       "%.1fx without | L=%d peak memory < %.0fx inputs+outputs\n\n",
	       TARGET_SGEMM_MIN_L, 100 * TARGET_SGEMM, TARGET_WEIGHTS, MEMORY_L, TARGET_MEMORY);
}

/* ---- threads and noise ---------------------------------------------------- */

/* Sets OpenBLAS to n threads; sleeps first when going down, so that no worker
 * of the previous setting is still spinning when the next timing starts. */
static void set_blas_threads(struct bench *bn, int n)
{
	struct timespec settle = {0, SETTLE_NS};

	if (bn->blas_threads == 0 || bn->blas_threads > n)
		nanosleep(&settle, NULL);
	openblas_set_num_threads(n);
	bn->blas_threads = n;
}

/* Wall time, this process's CPU time and the machine's busy time, in seconds. */
struct cpu_mark {
	double wall, self, busy;
};

static struct cpu_mark cpu_mark(void)
{
	struct cpu_mark m = {bench_now_s(), 0, 0};
	unsigned long long v[8] = {0};
	struct rusage ru;
	FILE *f = fopen("/proc/stat", "r");

	getrusage(RUSAGE_SELF, &ru);
	m.self = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
		 (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
	/* cpu  user nice system idle iowait irq softirq steal (USER_HZ ticks) */
	if (f != NULL && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
				&v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
		m.busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) /
			 (double)sysconf(_SC_CLK_TCK);
	if (f != NULL)
		fclose(f);
	return m;
}

/* CPU others used between a and b, in % of every core; negative: unknown. */
static double others_pct(struct cpu_mark a, struct cpu_mark b)
{
	double other = (b.busy - a.busy) - (b.self - a.self);
	double cores = (double)sysconf(_SC_NPROCESSORS_ONLN);

	if (a.busy == 0 || b.wall <= a.wall)
		return -1;
	return 100.0 * (other > 0 ? other : 0) / ((b.wall - a.wall) * cores);
}

/* ---- requests and timing ---------------------------------------------------- */

static void run_forward(const struct attn_mha *req, float *ws, size_t ws_bytes)
{
	struct attn_error err;

	if (attn_mha_forward(req, ws, ws_bytes, &err) != ATTN_OK)
		die("attn_mha_forward", &err);
}

static void run_sgemm(const float *x, const float *w, float *c, size_t M)
{
	/* C [M, 3E] = x [M, E] W^T, W = w_qkv [3E, E]: the engine's projection */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, 3 * BENCH_E, BENCH_E, 1.0f, x,
		    BENCH_E, w, BENCH_E, 0.0f, c, 3 * BENCH_E);
}

/* One timed job of a row: the forward pass or the ceiling sgemm, its OpenBLAS
 * thread count, and its reps. */
struct timed {
	const struct attn_mha *req; /* NULL: the ceiling sgemm */
	const struct bufs *b;
	const float *w_qkv;
	int blas_threads;
	double budget_s; /* its reps aim for about this long */
	int reps;
	double t[MAX_REPS]; /* ms */
	double ms;	    /* median */
	int rounds;
	double round_ms[ROUNDS]; /* the median of each round's reps */
};

static double timed_once_ms(const struct timed *j)
{
	double t = bench_now_s();

	if (j->req != NULL)
		run_forward(j->req, j->b->ws, j->b->ws_bytes);
	else
		run_sgemm(j->b->x, j->w_qkv, j->b->ws, j->b->B * j->b->L);
	return 1e3 * (bench_now_s() - t);
}

/*
 * Times n jobs interleaved: one warm-up each, then up to ROUNDS rounds in which
 * every job runs its share of its reps, so a slow spell of this shared machine
 * hits the ceiling and the engine alike. Sets every job's reps and median.
 */
static void time_interleaved(struct bench *bn, struct timed *jobs, int n)
{
	int rounds = ROUNDS;

	for (int i = 0; i < n; i++) {
		struct timed *j = &jobs[i];
		double warm;

		set_blas_threads(bn, j->blas_threads);
		warm = timed_once_ms(j);
		j->reps = (int)(1e3 * j->budget_s / (warm > 1e-3 ? warm : 1e-3));
		j->reps = j->reps < MIN_REPS ? MIN_REPS : j->reps > MAX_REPS ? MAX_REPS : j->reps;
		rounds = j->reps < rounds ? j->reps : rounds;
	}
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < n; i++) {
			struct timed *j = &jobs[i];

			set_blas_threads(bn, j->blas_threads);
			for (int k = j->reps * r / rounds; k < j->reps * (r + 1) / rounds; k++)
				j->t[k] = timed_once_ms(j);
		}
	}
	for (int i = 0; i < n; i++) {
		struct timed *j = &jobs[i];

		j->rounds = rounds;
		for (int r = 0; r < rounds; r++) {
			int k0 = j->reps * r / rounds, k1 = j->reps * (r + 1) / rounds;

			j->round_ms[r] = bench_median(j->t + k0, k1 - k0);
		}
		j->ms = bench_median(j->t, j->reps);
	}
}

/* The median over rounds of a[r] / b[r] (both timed in round r): a ratio of
 * times taken seconds apart, which a slow spell of the machine moves less
 * than a ratio of medians. */
static double paired_ratio(const double *a, const double *b, int rounds)
{
	double q[ROUNDS];

	for (int r = 0; r < rounds; r++)
		q[r] = a[r] / b[r];
	return bench_median(q, rounds);
}

/* ---- cells ------------------------------------------------------------------- */

/* The FLOPs of the ceiling sgemm, the projection of a [B, L] input. */
static double ceiling_flops(const struct bufs *b)
{
	return 2.0 * (double)(b->B * b->L) * 3.0 * BENCH_E * BENCH_E;
}

/* Times a row's jobs (jobs[0]: the ceiling); a 2-thread ceiling that ran at
 * one core's speed (CEILING_SCALING_MIN) gets the row timed again. */
static void time_row(struct bench *bn, const struct bufs *b, int threads, struct timed *jobs, int n)
{
	double gflops;

	time_interleaved(bn, jobs, n);
	gflops = ceiling_flops(b) / (1e6 * jobs[0].ms);
	if (threads == 1) {
		bn->ceiling_1t = gflops;
		return;
	}
	if (bn->ceiling_1t > 0 && gflops < CEILING_SCALING_MIN * bn->ceiling_1t) {
		printf("(B = %zu, L = %zu, %d threads: the ceiling sgemm ran at %.1f GFLOP/s, "
		       "1 thread's %.1f; timed again)\n",
		       b->B, b->L, threads, gflops, bn->ceiling_1t);
		time_interleaved(bn, jobs, n);
	}
}

/*
 * Sets c->skipped when the cell's predicted time (from the variant's last
 * GFLOP/s) is over a limit, and returns 1 then; else adds the cell's predicted
 * seconds to *planned, the row's cells so far.
 */
static int predict_skip(const struct bench *bn, struct cell *c, int v, int with, double flops,
			double *planned)
{
	double gf = bn->gflops_seen[v][with];
	double rep_s = gf > 0 ? flops / (1e9 * gf) : 0;
	double elapsed = bench_now_s() - bn->t0;

	if (rep_s > MAX_REP_S) {
		snprintf(c->skipped, sizeof(c->skipped), "skipped: est. %.0f s per rep > %.0f s",
			 rep_s, MAX_REP_S);
		return 1;
	}
	if (elapsed + *planned + (1 + MIN_REPS) * rep_s > RUN_BUDGET_S) {
		snprintf(c->skipped, sizeof(c->skipped),
			 "skipped: est. %.0f s, over the %.0f s run budget", (1 + MIN_REPS) * rep_s,
			 RUN_BUDGET_S);
		return 1;
	}
	*planned += (1 + MIN_REPS) * rep_s;
	return 0;
}

/* ---- printing ------------------------------------------------------------------ */

/* One printed row: a thread count and weights mode of one (B, L). */
struct row {
	int threads, with;
	struct cell best, alt;
	double ceiling;	  /* sgemm GFLOP/s, median */
	double of_sgemm;  /* engine GFLOP/s over sgemm's, paired by round */
	double with_none; /* with rows: time over the without row's, paired by round */
	double other;	  /* % CPU of other processes during the row */
};

static void print_header(void)
{
	printf("Engine vs the machine's sgemm (ms: median; GFLOP/s = (8BLE^2 + 4BL^2E) / time; "
	       "sgemm: M = B*L, N = 3E, K = E, same threads,\ntimed interleaved with the row's "
	       "cells in rounds; of-sgemm, with/none: the median over rounds of each round's "
	       "ratio;\nother: CPU used by other processes meanwhile, %% of all cores)\n");
	printf("%2s %5s %3s %-7s %-5s %9s %4s %7s %7s %8s %9s  %-15s %5s  %-12s %s\n", "B", "L",
	       "thr", "weights", "run", "ms", "reps", "GFLOP/s", "sgemm", "of-sgemm", "with/none",
	       "other-run ms", "other", "target", "verdict");
}

/* Target and verdict of a row: none below TARGET_SGEMM_MIN_L without weights. */
static void row_target(char *target, char *verdict, size_t n, int with, size_t L, double of_sgemm,
		       double with_ratio)
{
	snprintf(target, n, "-");
	snprintf(verdict, n, "-");
	if (!with && L >= TARGET_SGEMM_MIN_L) {
		snprintf(target, n, ">=%.0f%% sgemm", 100 * TARGET_SGEMM);
		snprintf(verdict, n, "%s", of_sgemm >= TARGET_SGEMM ? "PASS" : "MISS");
	} else if (with && with_ratio > 0) {
		snprintf(target, n, "<=%.1fx none", TARGET_WEIGHTS);
		snprintf(verdict, n, "%s", with_ratio <= TARGET_WEIGHTS ? "PASS" : "MISS");
	}
}

static void print_row(const struct bench *bn, const struct bufs *b, const struct row *r)
{
	struct attn_mha req = make_request(bn, b, r->with, 1);
	double gf = attn_mha_flops(&req) / (1e6 * r->best.ms);
	double ratio = r->with ? r->with_none : 0;
	char other[32] = "-", ratio_s[16] = "-", target[32], verdict[32], busy[16] = "?";

	printf("%2zu %5zu %3d %-7s ", b->B, b->L, r->threads, weights_name[r->with]);
	if (r->best.ms < 0) {
		printf("%s\n", r->best.skipped);
		return;
	}
	if (r->alt.mode != NULL)
		snprintf(other, sizeof(other), r->alt.ms >= 0 ? "%s %.1f" : "%s skipped",
			 r->alt.mode, r->alt.ms);
	if (ratio > 0)
		snprintf(ratio_s, sizeof(ratio_s), "%.2fx", ratio);
	if (r->other >= 0)
		snprintf(busy, sizeof(busy), "%.0f%%", r->other);
	row_target(target, verdict, sizeof(target), r->with, b->L, r->of_sgemm, ratio);
	printf("%-5s %9.2f %4d %7.1f %7.1f %7.0f%% %9s  %-15s %5s  %-12s %s\n", r->best.mode,
	       r->best.ms, r->best.reps, gf, r->ceiling, 100 * r->of_sgemm, ratio_s, other, busy,
	       target, verdict);
	fprintf(bn->tsv, "%zu\t%zu\t%s\t%d\t%s\t%.4f\t%.3f\t%.3f\t%d\n", b->B, b->L,
		weights_name[r->with], r->threads, r->best.mode, r->best.ms, gf, r->ceiling,
		r->best.reps);
	fflush(stdout);
}

/* ---- one (B, L) ------------------------------------------------------------------ */

static void bufs_free(struct bufs *b)
{
	free(b->x);
	free(b->out);
	free(b->weights);
	free(b->ws);
	memset(b, 0, sizeof(*b));
}

/* The largest workspace over variants and weights modes; at least the ceiling's
 * C [B L, 3E]. */
static size_t workspace_bytes(const struct bench *bn, const struct bufs *b)
{
	size_t need = b->B * b->L * 3 * BENCH_E * sizeof(float);

	for (int v = 0; v < N_VARIANTS; v++) {
		for (int with = 0; with <= (b->weights != NULL); with++) {
			struct attn_mha req = make_request(bn, b, with, variants[v].engine_threads);
			struct attn_error err;
			size_t bytes;

			if (attn_mha_workspace(&req, &bytes, &err) != ATTN_OK)
				die("attn_mha_workspace", &err);
			need = bytes > need ? bytes : need;
		}
	}
	return need;
}

static void bufs_alloc(struct bufs *b, const struct bench *bn, size_t B, size_t L)
{
	size_t n = B * L * BENCH_E;

	memset(b, 0, sizeof(*b));
	b->B = B;
	b->L = L;
	b->x = alloc_touched(n * sizeof(float));
	b->out = alloc_touched(n * sizeof(float));
	if (b->x == NULL || b->out == NULL)
		die("allocating x and out", NULL);
	fill_normal(b->x, n, B * 100000 + L);
	if (L <= WEIGHTS_MAX_L) {
		b->weights = alloc_touched(B * BENCH_H * L * L * sizeof(float));
		if (b->weights == NULL)
			die("allocating weights", NULL);
	}
	b->ws_bytes = workspace_bytes(bn, b);
	b->ws = alloc_touched(b->ws_bytes);
	if (b->ws == NULL)
		die("allocating the workspace", NULL);
}

/* Fills *c from its timed job and records the variant's speed for predictions. */
static void cell_done(struct bench *bn, struct cell *c, const struct timed *j, int v, int with)
{
	c->ms = j->ms;
	c->reps = j->reps;
	c->rounds = j->rounds;
	memcpy(c->round_ms, j->round_ms, sizeof(c->round_ms));
	bn->gflops_seen[v][with] = attn_mha_flops(j->req) / (1e6 * j->ms);
	if (!with && j->b->L == MEMORY_L)
		bn->forward_ms[v] = j->ms;
}

/* The faster of a thread count's (one or two) variants is the row's; the other is alt. */
static void pick_best(struct row *r, const struct cell *cells, int count)
{
	int k = count > 1 && cells[1].ms >= 0 && (cells[0].ms < 0 || cells[1].ms < cells[0].ms);

	r->best = cells[k];
	r->alt.ms = -1;
	if (count > 1)
		r->alt = cells[!k];
}

/*
 * One thread count of one (B, L): the ceiling sgemm and every variant with and
 * without weights, all interleaved (so with/none and of-sgemm are paired in
 * time), then a row per weights mode.
 */
static void bench_threads(struct bench *bn, const struct bufs *b, int row)
{
	int first = thread_rows[row].first, count = thread_rows[row].count;
	int threads = thread_rows[row].threads, n_with = b->weights ? 2 : 1, n = 1;
	int job_of[2][2] = {{0, 0}, {0, 0}}; /* [with][k] index into jobs, 0 = none */
	struct attn_mha reqs[2][2];
	struct timed jobs[5];
	struct cell cells[2][2];
	struct cpu_mark m0 = cpu_mark();
	struct row r[2];
	double planned = 0;

	memset(r, 0, sizeof(r));
	memset(cells, 0, sizeof(cells));
	jobs[0] = (struct timed){.b = b,
				 .w_qkv = bn->model->w_qkv,
				 .blas_threads = threads,
				 .budget_s = CEILING_BUDGET_S};
	for (int with = 0; with < n_with; with++) {
		for (int k = 0; k < count; k++) {
			const struct variant *var = &variants[first + k];
			struct attn_mha *req = &reqs[with][k];

			*req = make_request(bn, b, with, var->engine_threads);
			cells[with][k].ms = -1;
			cells[with][k].mode = var->name;
			if (predict_skip(bn, &cells[with][k], first + k, with, attn_mha_flops(req),
					 &planned))
				continue;
			job_of[with][k] = n;
			jobs[n++] = (struct timed){.req = req,
						   .b = b,
						   .blas_threads = var->blas_threads,
						   .budget_s = CELL_BUDGET_S};
		}
	}
	if (n > 1)
		time_row(bn, b, threads, jobs, n);
	for (int with = 0; with < n_with; with++) {
		for (int k = 0; k < count; k++)
			if (job_of[with][k] > 0)
				cell_done(bn, &cells[with][k], &jobs[job_of[with][k]], first + k,
					  with);
		r[with].threads = threads;
		r[with].with = with;
		r[with].ceiling = ceiling_flops(b) / (1e6 * jobs[0].ms);
		r[with].other = others_pct(m0, cpu_mark());
		pick_best(&r[with], cells[with], count);
		if (r[with].best.ms >= 0) {
			/* sgemm time over engine time, times engine FLOPs over sgemm's */
			double flops = attn_mha_flops(&reqs[with][0]);

			r[with].of_sgemm =
			    paired_ratio(jobs[0].round_ms, r[with].best.round_ms, jobs[0].rounds) *
			    flops / ceiling_flops(b);
		}
	}
	if (n_with > 1 && r[0].best.ms >= 0 && r[1].best.ms >= 0)
		r[1].with_none =
		    paired_ratio(r[1].best.round_ms, r[0].best.round_ms, r[0].best.rounds);
	for (int with = 0; with < n_with; with++)
		print_row(bn, b, &r[with]);
}

/* Both thread counts of one (B, L). */
static void bench_shape(struct bench *bn, size_t B, size_t L)
{
	struct bufs b;

	bufs_alloc(&b, bn, B, L);
	bn->ceiling_1t = 0;
	for (int row = 0; row < (int)(sizeof(thread_rows) / sizeof(thread_rows[0])); row++) {
		bench_threads(bn, &b, row);
		if (b.weights == NULL)
			printf("%2zu %5zu %3d %-7s skipped: weights [B,H,L,L] would be %.1f GiB\n",
			       B, L, thread_rows[row].threads, "with",
			       mib(B * BENCH_H * L * L * sizeof(float)) / 1024.0);
	}
	bufs_free(&b);
}

/* ---- main ------------------------------------------------------------------------------ */

/* engine.tsv next to the binary: dirname(argv0) + "/engine.tsv". */
static FILE *open_tsv(const char *path, const char *argv0)
{
	char buf[4096];
	const char *slash = strrchr(argv0, '/');
	FILE *f;

	if (path == NULL) {
		int dir = slash ? (int)(slash - argv0) : 1;

		snprintf(buf, sizeof(buf), "%.*s/engine.tsv", dir, slash ? argv0 : ".");
		path = buf;
	}
	f = fopen(path, "w");
	if (f == NULL)
		die(path, NULL);
	fprintf(f, "B\tL\tweights\tthreads\tmode\tms\tgflops\tsgemm_gflops\treps\n");
	return f;
}

int main(int argc, char **argv)
{
	struct attn_model_config cfg = {BENCH_E, BENCH_H, 0, 1, 0};
	struct attn_model *model = NULL;
	struct attn_error err;
	struct bench bn;
	const char *tsv = NULL;
	size_t nb = 2, nl = 4;

	memset(&bn, 0, sizeof(bn));
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			bn.quick = 1;
		} else if (strcmp(argv[i], "--tsv") == 0 && i + 1 < argc) {
			tsv = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--quick] [--tsv PATH]\n", argv[0]);
			return 2;
		}
	}
	if (bn.quick) {
		nb = 1;
		nl = 2;
	}
	if (attn_model_new_seeded(&model, &cfg, SEED, &err) != ATTN_OK)
		die("attn_model_new_seeded", &err);
	bn.model = model;
	if (attn_workers_new(&bn.workers, 2, &err) != ATTN_OK)
		die("attn_workers_new", &err);
	bn.tsv = open_tsv(tsv, argv[0]);
	bn.t0 = bench_now_s();
	print_machine(&bn);
	print_header();
	for (size_t i = 0; i < nb; i++) {
		for (size_t k = 0; k < nl; k++) {
			bench_shape(&bn, batches[i], lengths[k]);
			if (lengths[k] == MEMORY_L)
				memory_shape(&bn, batches[i]);
		}
	}
	print_memory(&bn);
	printf("\ntotal %.0f s; results also in the TSV for bench/torch_mha.py\n",
	       bench_now_s() - bn.t0);
	attn_workers_free(bn.workers);
	attn_model_free(model);
	return fclose(bn.tsv) == 0 ? 0 : 1;
}
