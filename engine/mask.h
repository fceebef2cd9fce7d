/*
 * mask.h: which keys a query sees, and the additive bias on its scores.
 * Internal to the engine; the rules are stated in attention.h (struct attn_mask).
 *
 * Two ways to ask, kept apart on purpose: mask_apply_row works on a whole score
 * row with key ranges (the fast path), mask_bias_at answers one cell at a time
 * (the reference twin). Tests compare them. Pure functions, nothing allocated.
 */
#ifndef ATTN_MASK_H
#define ATTN_MASK_H

#include <stddef.h>

#include "attention.h"

/* Checks mask sizes and values against the request (user mask shape, additive
 * values finite or -inf, kv_lengths <= Lk, alibi positions). */
enum attn_status mask_validate(const struct attn_sdpa *req, struct attn_error *err);

/* The visible key range [*lo, *hi) of query i in batch b from causal, window
 * and kv_lengths (the user mask may hide more inside it). *lo >= *hi: none. */
void mask_range(const struct attn_sdpa *req, size_t b, size_t i, size_t *lo, size_t *hi);

/* Whether query row (b, h, i) has a key that neither the ranges nor the user
 * mask hide (a user mask cell of -INFINITY or false hides; a finite one does
 * not). A row whose scores all came out -INFINITY although this holds got
 * them from float32 overflow of finite arithmetic (q . k, or a score plus a
 * large negative mask value), not from masking: the callers turn it into NaN,
 * which the forward passes report as ATTN_ERR_RESULT_OVERFLOW, instead of a
 * row of zeros. O(Lk) with a user mask; called only for rows seen all -inf. */
int mask_row_open(const struct attn_sdpa *req, size_t b, size_t h, size_t i);

/* Additive bias of one cell: -INFINITY when hidden, else user mask + ALiBi. */
float mask_bias_at(const struct attn_sdpa *req, size_t b, size_t h, size_t i, size_t j);

/* Adds the bias of query row (b, h, i) to the scores s [n] of keys
 * [j0, j0 + n) in place: -INFINITY outside the visible range and where the user
 * mask forbids, user and ALiBi bias inside. Stores the visible range, relative
 * to j0, in *lo, *hi (empty when *lo == *hi). */
void mask_apply_span(float *s, const struct attn_sdpa *req, size_t b, size_t h, size_t i,
		     size_t j0, size_t n, size_t *lo, size_t *hi);

#endif
