/*
 * softmax.h: row softmax for the fast path. Internal to the engine.
 *
 * softmax_row normalises row[lo, hi) in place and zeroes the rest; a row whose
 * visible cells are all -inf becomes all zeros (no visible key, no NaN: the
 * caller, which knows the mask, poisons it when the -inf came from overflow,
 * see mask_row_open); one
 * whose visible cells hold +inf or NaN (scores that overflowed float32)
 * becomes all NaN, and so does an online row from then on (*m = *l = NaN,
 * alpha NaN), so that the overflow reaches the output, where
 * attn_sdpa_forward and attn_mha_forward report it. It
 * uses the widest vector exp the CPU has (softmax_isa_best); the *_isa forms
 * take the instruction set, so that the tests can run each one against the
 * scalar twin (SOFTMAX_SCALAR, libm expf).
 * Pure functions on caller buffers; nothing is allocated or kept.
 */
#ifndef ATTN_SOFTMAX_H
#define ATTN_SOFTMAX_H

#include <stddef.h>

enum softmax_isa { SOFTMAX_SCALAR, SOFTMAX_AVX2, SOFTMAX_AVX512 };

/* The widest set this CPU runs; every narrower one runs too. */
enum softmax_isa softmax_isa_best(void);

/* Both return the max of row[lo, hi) they worked from: -INFINITY when the row
 * became zeros, which the caller tells apart from an overflow with
 * mask_row_open (mask.h). */
float softmax_row(float *row /* [n] */, size_t n, size_t lo, size_t hi);
float softmax_row_isa(float *row /* [n] */, size_t n, size_t lo, size_t hi, enum softmax_isa isa);

/*
 * The same for a row whose every cell is visible (lo = 0, hi = n) and whose
 * max the caller already has, row_max_known = max of row[0, n) (read off
 * tile_qk's vmax): one pass fewer. A NaN cell still poisons the row.
 */
void softmax_row_known(float *row /* [n] */, size_t n, float row_max_known);
void softmax_row_known_isa(float *row /* [n] */, size_t n, float row_max_known,
			   enum softmax_isa isa);

/*
 * One key block of an online (streaming) softmax (Milakov & Gimelshein 2018):
 * with the row's running max *m and sum *l over earlier blocks, turns
 * s[lo, hi) into exp(s - m_new) (zero elsewhere), updates *m and *l, and
 * returns alpha = exp(m_old - m_new), the factor the caller applies to its
 * running output. A block with no visible key leaves *m, *l alone and
 * returns 1. Start a row with *m = -INFINITY, *l = 0.
 */
float softmax_online(float *s /* [n] */, size_t n, size_t lo, size_t hi, float *m, float *l);
float softmax_online_isa(float *s /* [n] */, size_t n, size_t lo, size_t hi, float *m, float *l,
			 enum softmax_isa isa);

/*
 * The same step for a block whose every cell is visible (lo = 0, hi = n)
 * and whose max the caller already has, block_max = max of s[0, n) (the
 * streaming layer reads it off tile_qk's vmax): one pass over s instead of
 * two. A NaN cell poisons the row even where block_max does not show it.
 */
float softmax_online_known(float *s /* [n] */, size_t n, float block_max, float *m, float *l);
float softmax_online_known_isa(float *s /* [n] */, size_t n, float block_max, float *m,
			       float *l, enum softmax_isa isa);

/* y[i] = exp(x[i]) for x <= 88 (the vector kernel; scalar fallback). */
void softmax_vexp(float *y, const float *x, size_t n);
void softmax_vexp_isa(float *y, const float *x, size_t n, enum softmax_isa isa);

#endif
