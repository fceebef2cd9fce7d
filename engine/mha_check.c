/* mha_check.c: request validation for attn_mha_* (see mha_check.h). */
#include "mha_check.h"

#include <math.h>
#include <stdint.h>

#include "sizes.h"

static enum attn_status check_positions(const double *list, size_t n, const char *field,
					struct attn_error *err)
{
	if (list == NULL)
		return ATTN_OK;
	for (size_t i = 0; i < n; i++)
		if (!isfinite(list[i]) || list[i] < 0 || list[i] > 1e9)
			return attn_fail(err, ATTN_ERR_POSITION, field, i,
					 "position %zu must be a finite number in [0, 1e9]", i);
	return ATTN_OK;
}

static enum attn_status check_positional(const struct attn_mha *req, struct attn_error *err)
{
	const struct attn_positional *pos = &req->pos;
	enum attn_status st;
	size_t R;

	if ((unsigned)pos->kind > ATTN_POS_ALIBI || (unsigned)pos->style > ATTN_ROPE_HALF)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "positional", 0,
				 "unknown positional encoding");
	if (!isfinite(pos->theta) || pos->theta < 0 || pos->theta == 1.0 ||
	    !isfinite(pos->scaling) || pos->scaling < 0)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "positional", 0,
				 "theta must be > 0 and != 1, scaling >= 0 (0 = default)");
	if (pos->offset > (size_t)1e9)
		return attn_fail(err, ATTN_ERR_POSITION, "offset", 0,
				 "offset %zu exceeds 1e9", pos->offset);
	if (pos->kind == ATTN_POS_ROPE) {
		st = attn_rope_dim(pos, req->model->D, &R, err);
		if (st != ATTN_OK)
			return st;
	}
	st = check_positions(pos->q_positions, req->Lq, "q_positions", err);
	if (st == ATTN_OK)
		st = check_positions(pos->k_positions, req->Lk, "k_positions", err);
	return st;
}

/* True when [a, a + na) and [b, b + nb) floats overlap. */
static int overlaps(const float *a, size_t na, const float *b, size_t nb)
{
	uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;

	return b != NULL && a0 < b0 + nb * sizeof(float) && b0 < a0 + na * sizeof(float);
}

enum attn_status mha_check_request(const struct attn_mha *req, struct attn_error *err)
{
	size_t n;

	if (req == NULL || req->model == NULL)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "model", 0, "a model is required");
	if (req->B == 0)
		return attn_fail(err, ATTN_ERR_DIMENSION, "batch", 0, "batch must be positive");
	if (req->Lq == 0 || req->Lk == 0)
		return attn_fail(err, ATTN_ERR_EMPTY, req->Lq == 0 ? "query" : "key", 0,
				 "empty sequence: Lq = %zu, Lk = %zu", req->Lq, req->Lk);
	if (req->key == NULL && (req->value != NULL || req->Lk != req->Lq))
		return attn_fail(err, ATTN_ERR_DIMENSION, "key", 0,
				 "self-attention needs Lk == Lq and no value without a key");
	if (size_mul3(&n, req->B, req->Lq > req->Lk ? req->Lq : req->Lk, req->model->E) != 0 ||
	    size_mul(&n, n, 4 * sizeof(float)) != 0 || !size_fits_int(req->B * req->Lq) ||
	    !size_fits_int(req->B * req->Lk))
		return attn_fail(err, ATTN_ERR_OVERFLOW, "query", 0,
				 "B = %zu, L = %zu is too large", req->B,
				 req->Lq > req->Lk ? req->Lq : req->Lk);
	n = req->B * req->Lq * req->model->E;
	if (req->out != NULL && (overlaps(req->out, n, req->query, n) ||
	    overlaps(req->out, n, req->key, req->B * req->Lk * req->model->E) ||
	    overlaps(req->out, n, req->value, req->B * req->Lk * req->model->E)))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "out", 0,
				 "out must not overlap the query, key or value");
	return check_positional(req, err);
}

enum attn_status mha_check_values(const struct attn_mha *req, struct attn_error *err)
{
	size_t E = req->model->E;
	enum attn_status st;

	if (req->query == NULL)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "query", 0, "query is required");
	if (req->out == NULL)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "out", 0, "out is required");
	st = attn_check_finite(req->query, req->B * req->Lq * E, "query", err);
	if (st == ATTN_OK && req->key)
		st = attn_check_finite(req->key, req->B * req->Lk * E, "key", err);
	if (st == ATTN_OK && req->value && req->value != req->key)
		st = attn_check_finite(req->value, req->B * req->Lk * E, "value", err);
	return st;
}

const double *mha_k_positions(const struct attn_mha *req)
{
	return req->key ? req->pos.k_positions : req->pos.q_positions;
}
