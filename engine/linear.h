/*
 * linear.h: y = x W^T + b on cblas_sgemm, the projections of a layer.
 * Internal to the engine. Buffers belong to the caller; nothing is kept.
 */
#ifndef ATTN_LINEAR_H
#define ATTN_LINEAR_H

#include <stddef.h>

#include "workers.h"

/*
 * out [n, width] (rows ld_out apart) = x [n, E] (rows ld_x apart) W^T + bias,
 * W [width, E] row-major, bias [width] or NULL. n may be 0.
 */
void linear_rows(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		 const float *W, const float *bias, size_t width, size_t E);

/* The same with the rows split over `threads` threads (team.h: on workers
 * when not NULL). */
void linear_forward(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		    const float *W, const float *bias, size_t width, size_t E, size_t threads,
		    struct attn_workers *workers);

#endif
