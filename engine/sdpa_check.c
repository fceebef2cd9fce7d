/* sdpa_check.c: request validation for attn_sdpa_* (see sdpa_check.h). */
#include "sdpa_check.h"

#include <math.h>

#include "mask.h"
#include "sizes.h"

float sdpa_scale(const struct attn_sdpa *req)
{
	return req->scale != 0.0f ? req->scale : (float)(1.0 / sqrt((double)req->D));
}

static enum attn_status check_dims(const struct attn_sdpa *req, struct attn_error *err)
{
	const size_t dims[] = { req->B, req->H, req->Hkv, req->D, req->Dv };
	static const char *const names[] = { "batch", "num_heads", "num_kv_heads", "head_dim",
					     "v_head_dim" };

	for (size_t k = 0; k < sizeof(dims) / sizeof(dims[0]); k++)
		if (dims[k] == 0)
			return attn_fail(err, ATTN_ERR_DIMENSION, names[k], 0,
					 "%s must be positive", names[k]);
	if (req->Lq == 0 || req->Lk == 0)
		return attn_fail(err, ATTN_ERR_EMPTY, req->Lq == 0 ? "q" : "k", 0,
				 "empty sequence: Lq = %zu, Lk = %zu", req->Lq, req->Lk);
	if (req->H % req->Hkv != 0)
		return attn_fail(err, ATTN_ERR_KV_HEADS, "num_kv_heads", 0,
				 "num_heads %zu is not divisible by num_kv_heads %zu", req->H,
				 req->Hkv);
	if (!isfinite(req->scale) || !isfinite(req->softcap) || req->softcap < 0.0f)
		return attn_fail(err, ATTN_ERR_ARGUMENT, !isfinite(req->scale) ? "scale" : "softcap",
				 0, "scale must be finite and softcap finite and >= 0");
	return ATTN_OK;
}

/* Every BLAS dimension and leading dimension must fit an int. */
static enum attn_status check_blas_limits(const struct attn_sdpa *req, struct attn_error *err)
{
	const size_t dims[] = { req->Lq, req->Lk, req->D, req->Dv, req->q.row_stride,
				req->k.row_stride, req->v.row_stride, req->out.row_stride };

	for (size_t k = 0; k < sizeof(dims) / sizeof(dims[0]); k++)
		if (!size_fits_int(dims[k]))
			return attn_fail(err, ATTN_ERR_OVERFLOW, "shape", k,
					 "dimension %zu exceeds the BLAS int limit", dims[k]);
	if (req->q.row_stride < req->D || req->k.row_stride < req->D ||
	    req->v.row_stride < req->Dv || req->out.row_stride < req->Dv)
		return attn_fail(err, ATTN_ERR_DIMENSION, "view", 0,
				 "a view's row stride is shorter than its head dim");
	return ATTN_OK;
}

static enum attn_status check_outputs(const struct attn_sdpa *req, struct attn_error *err)
{
	size_t n;

	if ((unsigned)req->weights_mode > ATTN_WEIGHTS_MEAN ||
	    (unsigned)req->scores_view > ATTN_SCORES_SOFTMAX)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "weights", 0,
				 "unknown weights mode or scores view");
	if (size_mul4(&n, req->B, req->H, req->Lq, req->Lk) != 0 ||
	    size_mul(&n, n, sizeof(float)) != 0)
		return attn_fail(err, ATTN_ERR_OVERFLOW, "weights", 0,
				 "[B, H, Lq, Lk] = [%zu, %zu, %zu, %zu] overflows", req->B, req->H,
				 req->Lq, req->Lk);
	return ATTN_OK;
}

enum attn_status sdpa_check_request(const struct attn_sdpa *req, struct attn_error *err)
{
	enum attn_status st;

	if (req == NULL)
		return attn_fail(err, ATTN_ERR_ARGUMENT, NULL, 0, "no request");
	st = check_dims(req, err);
	if (st == ATTN_OK)
		st = check_blas_limits(req, err);
	if (st == ATTN_OK)
		st = check_outputs(req, err);
	if (st == ATTN_OK)
		st = mask_validate(req, err);
	return st;
}

/* Checks a [B, heads, L, dim] view row by row. */
static enum attn_status check_view(struct attn_cview x, size_t B, size_t heads, size_t L,
				   size_t dim, const char *field, struct attn_error *err)
{
	for (size_t b = 0; b < B; b++)
		for (size_t h = 0; h < heads; h++)
			for (size_t l = 0; l < L; l++) {
				/* seek to x[b, h, l, :] */
				const float *row = x.data + b * x.batch_stride +
						   h * x.head_stride + l * x.row_stride;
				size_t flat = ((b * heads + h) * L + l) * dim;

				if (attn_all_finite(row, dim))
					continue;
				for (size_t d = 0; d < dim; d++)
					if (!isfinite(row[d]))
						return attn_fail(err, ATTN_ERR_NONFINITE, field,
								 flat + d,
								 "%s holds a non-finite value at "
								 "[%zu, %zu, %zu, %zu]",
								 field, b, h, l, d);
			}
	return ATTN_OK;
}

enum attn_status sdpa_check_pointers(const struct attn_sdpa *req, struct attn_error *err)
{
	if (req->q.data == NULL || req->k.data == NULL || req->v.data == NULL ||
	    req->out.data == NULL)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "q", 0, "q, k, v and out are required");
	if ((req->weights_mode != ATTN_WEIGHTS_NONE && req->weights == NULL) ||
	    (req->scores_view != ATTN_SCORES_NONE && req->scores == NULL))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "weights", 0,
				 "weights or scores asked for without a buffer");
	return ATTN_OK;
}

enum attn_status sdpa_check_values(const struct attn_sdpa *req, struct attn_error *err)
{
	enum attn_status st = sdpa_check_pointers(req, err);

	if (st == ATTN_OK)
		st = check_view(req->q, req->B, req->H, req->Lq, req->D, "q", err);
	if (st == ATTN_OK)
		st = check_view(req->k, req->B, req->Hkv, req->Lk, req->D, "k", err);
	if (st == ATTN_OK)
		st = check_view(req->v, req->B, req->Hkv, req->Lk, req->Dv, "v", err);
	return st;
}

enum attn_status sdpa_check_result(const struct attn_sdpa *req, struct attn_error *err)
{
	for (size_t b = 0; b < req->B; b++)
		for (size_t h = 0; h < req->H; h++)
			for (size_t i = 0; i < req->Lq; i++) {
				/* seek to out[b, h, i, :] */
				const float *row = req->out.data + b * req->out.batch_stride +
						   h * req->out.head_stride + i * req->out.row_stride;

				if (!attn_all_finite(row, req->Dv))
					return attn_fail(err, ATTN_ERR_RESULT_OVERFLOW, "q", i,
							 "the scores q . k of batch item %zu, head %zu, "
							 "query %zu overflow float32: scale q or k "
							 "(or the mask values) down",
							 b, h, i);
			}
	return ATTN_OK;
}
