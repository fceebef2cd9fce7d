/*
 * mha_check.h: validation shared by attn_mha_forward and its reference twin,
 * so both accept and reject the same requests. Internal to the engine.
 *
 * Ownership: req and err are borrowed for the call; nothing is allocated or
 * kept. mha_k_positions returns a pointer borrowed from req (one of its
 * position lists, or NULL), valid as long as the request's list.
 */
#ifndef ATTN_MHA_CHECK_H
#define ATTN_MHA_CHECK_H

#include "mha.h"

/* The model, dimensions, positional options; query and out may be NULL when sizing. */
enum attn_status mha_check_request(const struct attn_mha *req, struct attn_error *err);

/* query and out are given and every input value is finite (index = flat element). */
enum attn_status mha_check_values(const struct attn_mha *req, struct attn_error *err);

/* Key positions: the caller's k_positions for cross-attention; in
 * self-attention the keys are the query tokens, so they take q_positions. */
const double *mha_k_positions(const struct attn_mha *req);

#endif
