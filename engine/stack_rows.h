/*
 * stack_rows.h: the stack's elementwise steps (norms, residual adds, the
 * MLP's activation), each row by row, split over the run's threads in whole
 * rows. Internal to the engine (stack.c).
 *
 * A row is computed the same way whichever thread takes it, so the results
 * do not depend on the thread count. Steps too small to be worth waking
 * threads for (under ROWS_MIN_FLOATS floats) run on the calling thread.
 * Buffers belong to the caller; nothing is kept.
 */
#ifndef ATTN_STACK_ROWS_H
#define ATTN_STACK_ROWS_H

#include <stddef.h>

#include "stack.h"

enum { ROWS_MIN_FLOATS = 1 << 14 };

/* out [n, E] = norm(x [n, E]) (the stack's kind and eps); an absent norm
 * copies. out may be x. */
void rows_norm(const struct attn_stack_run *run, const struct attn_norm *nm, float *out,
	       const float *x, size_t n);

/* x [n, width] += y [n, width] */
void rows_add(const struct attn_stack_run *run, float *x, const float *y, size_t n,
	      size_t width);

/* up [n, F] = act(up), or with gate: gate [n, F] = act(gate) * up (Llama). */
void rows_act(const struct attn_stack_run *run, float *up, float *gate, size_t n);

#endif
