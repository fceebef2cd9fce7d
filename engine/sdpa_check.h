/*
 * sdpa_check.h: validation shared by the fast path and its reference twin, so
 * both accept and reject exactly the same requests, and the entry point of
 * the fast path for a caller that does its own finiteness checks (mha.c).
 * Internal to the engine.
 *
 * Ownership: as attention.h. req, ws and err are borrowed for the call;
 * nothing is allocated or kept.
 */
#ifndef ATTN_SDPA_CHECK_H
#define ATTN_SDPA_CHECK_H

#include "attention.h"

/* Dimensions, BLAS int limits, output modes and the mask (not the data
 * pointers of q, k, v, out: sizing may leave them NULL). */
enum attn_status sdpa_check_request(const struct attn_sdpa *req, struct attn_error *err);

/* q, k, v, out are given (and weights, scores when asked for). */
enum attn_status sdpa_check_pointers(const struct attn_sdpa *req, struct attn_error *err);

/* The same, and every element of q, k, v is finite (index = flat
 * [B, heads, L, dim]). */
enum attn_status sdpa_check_values(const struct attn_sdpa *req, struct attn_error *err);

/* Every row of out is finite. Finite inputs can still give scores q . k
 * past float32, which softmax.h (+inf) and the callers of mask_row_open (a
 * row all -inf that the mask left open) turn into NaN rows: reported as
 * ATTN_ERR_RESULT_OVERFLOW (field q, index the query) rather than returned as
 * numbers or zeros. The first such row in [B, H, Lq] order is named, by the
 * fast path and the reference twin alike. */
enum attn_status sdpa_check_result(const struct attn_sdpa *req, struct attn_error *err);

/* attn_sdpa_forward without its scans of q, k, v and the output for
 * non-finite values (the other checks stay): for mha.c, which scans its own
 * output once and, only when that fails, these views to name the cause. */
enum attn_status sdpa_forward_unchecked(const struct attn_sdpa *req, void *ws, size_t ws_bytes,
					struct attn_error *err);

/* The scale in use: req->scale, or 1 / sqrt(D) when it is 0. */
float sdpa_scale(const struct attn_sdpa *req);

#endif
