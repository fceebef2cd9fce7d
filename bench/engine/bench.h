/*
 * bench.h: what the parts of bench_engine share (bench/engine/: main.c times
 * the tables, memory.c measures peak memory, common.c holds the helpers).
 *
 * Shapes, outermost first (self-attention, Lq = Lk = L; E = 512, H = 8):
 *   x       [B, L, E]     input, N(0, 1)
 *   out     [B, L, E]     output
 *   weights [B, H, L, L]  per-head attention weights
 *
 * Ownership: a struct bufs owns its four buffers (bench_engine's main.c frees
 * them); struct bench borrows its model and owns its workers and TSV file
 * (main frees and closes them). The helpers below allocate only what they
 * return; die() exits the process.
 */
#ifndef BENCH_ENGINE_BENCH_H
#define BENCH_ENGINE_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/timing.h"
#include "engine/mha.h"
#include "engine/model.h"
#include "engine/workers.h"

enum { BENCH_E = 512, BENCH_H = 8 };

#define SEED 20240601u
#define CELL_BUDGET_S 2.0    /* timed reps per cell aim for about this long */
#define CEILING_BUDGET_S 1.0 /* the same for the sgemm ceiling */
#define MIN_REPS 3	     /* after one warm-up */
#define ROUNDS 7	     /* a row's jobs alternate in up to this many rounds */
#define MAX_REPS 25
#define MAX_REP_S 60.0	   /* a cell whose reps would exceed this is skipped */
#define RUN_BUDGET_S 450.0 /* the whole run: cells that would pass it are skipped */
#define WEIGHTS_MAX_L 4096 /* above this, weights are not benchmarked */
#define TARGET_SGEMM 0.80  /* without weights, L >= 512: >= 80% of sgemm */
#define TARGET_SGEMM_MIN_L 512
#define TARGET_WEIGHTS 1.3 /* with weights <= 1.3x without */
#define TARGET_MEMORY 2.0  /* L = 8192: (ws + in + out) / (in + out) < 2 */
#define MEMORY_L 8192
#define SETTLE_NS 150000000L /* OpenBLAS workers spin ~0.1 s after a call */
/* A 2-thread ceiling under this many times the 1-thread one of its (B, L)
 * ran at one core's speed (seen twice for B = 8, L = 2048 in full runs, never
 * when that row ran alone): the row is timed again, once. */
#define CEILING_SCALING_MIN 1.3

/* How the two cores are split between the engine and OpenBLAS. */
struct variant {
	const char *name;
	size_t engine_threads;
	int blas_threads;
};

enum { N_VARIANTS = 3 };
extern const struct variant variants[N_VARIANTS]; /* eng1, eng2, blas2 */

/* What a memory child reports through its pipe. */
struct mem_result {
	int ok;
	long rss_base_kb, rss_peak_kb; /* ru_maxrss after allocating in/out, and at the end */
};

/* One row of the peak-memory table. */
struct mem_row {
	size_t B;
	int threads, v; /* v: index into variants */
	size_t io, ws;	/* bytes: x + out, and the engine's workspace */
	int ran;	/* the child ran (else skipped for time) */
	struct mem_result r;
};

struct bench {
	const struct attn_model *model;
	struct attn_workers *workers; /* eng2's second thread, kept between calls */
	int quick;
	double t0;			   /* run start, seconds */
	double gflops_seen[N_VARIANTS][2]; /* last measured, to predict cell times */
	double forward_ms[N_VARIANTS];	   /* this B's L = 8192 forward, 0 if skipped */
	int blas_threads;		   /* OpenBLAS's current setting, 0 = unknown */
	double ceiling_1t;		   /* this (B, L)'s 1-thread ceiling, GFLOP/s */
	struct mem_row mem[4];
	int n_mem;
	FILE *tsv;
};

/* The buffers of one (B, L): every pointer owned here, freed by bufs_free. */
struct bufs {
	size_t B, L;
	float *x;	/* [B, L, E] */
	float *out;	/* [B, L, E] */
	float *weights; /* [B, H, L, L], or NULL above WEIGHTS_MAX_L */
	float *ws;	/* the engine's workspace (also C of the ceiling sgemm) */
	size_t ws_bytes;
};

double mib(size_t bytes);

/* 64-byte aligned, every page written (so page faults stay out of the
 * timings); NULL when out of memory. The caller frees it. */
float *alloc_touched(size_t bytes);

/* x [n] ~ N(0, 1), seeded per shape. */
void fill_normal(float *x, size_t n, uint64_t shape);

/* Prints what failed (err's message, or errno's) and exits 1. */
void die(const char *what, const struct attn_error *err);

/* The forward pass of b's shape: self-attention, per-head weights when with. */
struct attn_mha make_request(const struct bench *bn, const struct bufs *b, int with,
			     size_t engine_threads);

/* After a B's L = 8192 timings: the peak-memory rows of threads 1 and 2. */
void memory_shape(struct bench *bn, size_t B);

/* The peak-memory table of every row memory_shape measured. */
void print_memory(const struct bench *bn);

#endif
