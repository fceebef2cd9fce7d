/*
 * sdpa_check.h: validation shared by the fast path and its reference twin, so
 * both accept and reject exactly the same requests. Internal to the engine.
 */
#ifndef ATTN_SDPA_CHECK_H
#define ATTN_SDPA_CHECK_H

#include "attention.h"

/* Dimensions, pointers, BLAS int limits, output sizes and the mask. */
enum attn_status sdpa_check_request(const struct attn_sdpa *req, struct attn_error *err);

/* Every element of q, k and v is finite (index = flat [B, heads, L, dim]). */
enum attn_status sdpa_check_values(const struct attn_sdpa *req, struct attn_error *err);

/* The scale in use: req->scale, or 1 / sqrt(D) when it is 0. */
float sdpa_scale(const struct attn_sdpa *req);

#endif
