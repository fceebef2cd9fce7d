/*
 * linear.h: y = x W^T + b on cblas_sgemm, the projections of a layer.
 * Internal to the engine. Buffers belong to the caller; nothing is kept.
 */
#ifndef ATTN_LINEAR_H
#define ATTN_LINEAR_H

#include <stdatomic.h>
#include <stddef.h>

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

/* linear_forward_w's column tiles for at most LINEAR_FEW_ROWS rows: a short
 * sequence still splits over threads, by columns. (Past it, a single wide
 * sgemm per row block is faster on one thread than column tiles, whose
 * every call packs the rows again.) */
enum { LINEAR_COLS = 256, LINEAR_FEW_ROWS = 64 };

/*
 * out [n, width] (rows ld_out apart) = x [n, E] (rows ld_x apart) W^T + bias,
 * W [width, E] row-major, bias [width] or NULL, one sgemm per LINEAR_BLOCK
 * rows. n may be 0. cancel (cancel.h), when not NULL, is read before each
 * block: once set, the rest of out is left unwritten.
 */
void linear_rows(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		 const float *W, const float *bias, size_t width, size_t E,
		 const atomic_int *cancel);

/* The same with whole blocks of rows split over `threads` threads (team.h:
 * on workers when not NULL). */
void linear_forward(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		    const float *W, const float *bias, size_t width, size_t E, size_t threads,
		    struct attn_workers *workers, const atomic_int *cancel);

/* linear_forward with W's layout chosen: in_major 0 is W [width, E] as above;
 * in_major 1 is W stored [E, width] (TRANSPOSED, GPT-2's Conv1D), out = x W + bias.
 * Its sgemm calls are tiles of LINEAR_BLOCK rows, and when n <= LINEAR_FEW_ROWS
 * of LINEAR_COLS columns, shared by the threads: the tiles depend on the
 * shape alone, so the results do not depend on the thread count. cancel is
 * read before each tile, as in linear_rows. */
void linear_forward_w(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		      const float *W, int in_major, const float *bias, size_t width, size_t E,
		      size_t threads, struct attn_workers *workers, const atomic_int *cancel);

#endif
