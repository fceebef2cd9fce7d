/*
 * linear.h: y = x W^T + b on gemm.h's gemm (cblas_sgemm, but for tiny
 * products), the projections of a layer.
 * Internal to the engine. Buffers belong to the caller; nothing is kept.
 */
#ifndef ATTN_LINEAR_H
#define ATTN_LINEAR_H

#include <stdatomic.h>
#include <stddef.h>

#include "linear_few.h"

#include "workers.h"

/*
 * Rows go to sgemm LINEAR_BLOCK at a time, and threads share whole blocks:
 * OpenBLAS picks its kernel (and so the rounding) by a call's size, so the
 * calls must not depend on the thread count for the results not to. A
 * caller that splits rows itself hands linear_rows ranges that start on a
 * multiple of LINEAR_BLOCK (team_share_blocks), counted from the row the
 * single-threaded call would start at.
 */
enum { LINEAR_BLOCK = 256 };

/* linear_forward_w's tiles (the stack's projections), a function of the
 * shape alone: for at most LINEAR_FEW_ROWS rows, columns LINEAR_COLS at a
 * time, so a short sequence still splits over threads; past it, LINEAR_TALL
 * rows by half of the columns (rounded up to LINEAR_COL_ALIGN). Each sgemm
 * call packs its columns of W, which for a few hundred rows costs as much
 * as reading the weights: half-width tiles of up to 512 rows pack W once
 * per 512 rows on one thread or two (256-row tiles of every column packed
 * it twice at L = 512), and still give two threads a tile each. */
enum { LINEAR_COLS = 256, LINEAR_FEW_ROWS = 64, LINEAR_TALL = 512, LINEAR_COL_ALIGN = 64 };

/* In-major W (GPT-2's Conv1D, or weights a checkpoint stored so) at up to
 * linear_few_max rows goes to linear_few in LINEAR_FEW_COLS-column tiles of
 * every row, where the machine has a vector kernel: it reads W in place,
 * where sgemm copies each tile of W first (linear_few.h). Past it sgemm
 * packs W once for many rows and is the faster (bench_linear): past
 * LINEAR_FEW_MAX rows with the AVX-512F kernel, past LINEAR_FEW_MAX_AVX2
 * with the AVX2 one (6-row register tiles: 1.03x sgemm at 32 rows, 0.92x
 * at 64). 128 columns split every width of GPT-2 small and the Llama
 * shapes into an even count of tiles (768: 6, where 256 columns made 3 and
 * left one of two threads idle a third of the time). */
enum { LINEAR_FEW_MAX = 128, LINEAR_FEW_MAX_AVX2 = 32, LINEAR_FEW_COLS = 128 };

/* The most rows linear_forward_w gives linear_few's kernel isa (0 for the
 * scalar twin: sgemm then takes every shape). */
size_t linear_few_max(enum few_isa isa);

/*
 * out [n, width] (rows ld_out apart) = x [n, E] (rows ld_x apart) W^T + bias,
 * W [width, E] row-major, bias [width] or NULL, one sgemm per LINEAR_BLOCK
 * rows. n may be 0. cancel (cancel.h), when not NULL, is read before each
 * block: once set, the rest of out is left unwritten.
 */
void linear_rows(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n, const float *W,
		 const float *bias, size_t width, size_t E, const atomic_int *cancel);

/* The same with whole blocks of rows split over `threads` threads (team.h:
 * on workers when not NULL). */
void linear_forward(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		    const float *W, const float *bias, size_t width, size_t E, size_t threads,
		    struct attn_workers *workers, const atomic_int *cancel);

/* linear_forward with W's layout chosen: in_major 0 is W [width, E] as above;
 * in_major 1 is W stored [E, width] (TRANSPOSED, GPT-2's Conv1D), out = x W + bias.
 * Its sgemm calls are the tiles above, shared by the threads, or its
 * linear_few calls (in_major 1 at most linear_few_max(linear_few_best())
 * rows). The tiles depend on the shape alone, so the results do not depend
 * on the thread count. cancel is read before each tile, as in linear_rows. */
void linear_forward_w(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		      const float *W, int in_major, const float *bias, size_t width, size_t E,
		      size_t threads, struct attn_workers *workers, const atomic_int *cancel);

/* linear_forward_w with linear_few's kernel named (at most linear_few_best(),
 * which linear_forward_w passes): for tests, which run each kernel the
 * machine has through the same grid. */
void linear_forward_w_isa(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
			  const float *W, int in_major, const float *bias, size_t width, size_t E,
			  size_t threads, struct attn_workers *workers, const atomic_int *cancel,
			  enum few_isa isa);

#endif
