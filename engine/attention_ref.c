/*
 * attention_ref.c: the naive twin of attention.c. Plain loops over
 * (b, h, i, j) in double precision, written from the formulas in attention.h
 * with no blocking, no BLAS and per-cell masking (mask_bias_at), so that the
 * fast path has something simple to be compared with.
 */
#include "attention.h"

#include <math.h>
#include <stdlib.h>

#include "mask.h"
#include "sdpa_check.h"
#include "sizes.h"

/* x[b, h, l, d] of a view. */
static double at(struct attn_cview x, size_t b, size_t h, size_t l, size_t d)
{
	return x.data[b * x.batch_stride + h * x.head_stride + l * x.row_stride + d];
}

/* One query row: fills s [Lk] with the masked scores S'' and the optional
 * raw / softcapped views, then turns s into probabilities. */
static void ref_row(const struct attn_sdpa *req, double *s, size_t b, size_t h, size_t i)
{
	size_t kvh = h / (req->H / req->Hkv), Lk = req->Lk;
	size_t cell = ((b * req->H + h) * req->Lq + i) * Lk; /* [b, h, i, 0] */
	double scale = sdpa_scale(req), max = -INFINITY, sum = 0.0;

	for (size_t j = 0; j < Lk; j++) {
		double dot = 0.0, raw, capped;

		for (size_t d = 0; d < req->D; d++)
			dot += at(req->q, b, h, i, d) * at(req->k, b, kvh, j, d);
		raw = (float)(scale * dot);
		capped = req->softcap > 0 ? req->softcap * tanh(raw / req->softcap) : raw;
		/* in float32, as the fast path adds: a sum past -FLT_MAX is -inf there */
		s[j] = (float)(capped + mask_bias_at(req, b, h, i, j));
		if (req->scores_view == ATTN_SCORES_RAW)
			req->scores[cell + j] = (float)raw;
		if (req->scores_view == ATTN_SCORES_SOFTCAP)
			req->scores[cell + j] = (float)capped;
		if (req->scores_view == ATTN_SCORES_MASKED)
			req->scores[cell + j] = (float)s[j];
		max = s[j] > max ? s[j] : max;
	}
	/* +inf or NaN, or every score -inf though the mask leaves a key open
	 * (mask.h): float32 overflow, a NaN row as in the fast path, which
	 * sdpa_check_result then reports */
	if (isnan(max) || max == INFINITY || (max == -INFINITY && mask_row_open(req, b, h, i))) {
		for (size_t j = 0; j < Lk; j++)
			s[j] = NAN;
		return;
	}
	for (size_t j = 0; j < Lk; j++) {
		s[j] = max == -INFINITY ? 0.0 : exp(s[j] - max);
		sum += s[j];
	}
	for (size_t j = 0; j < Lk; j++)
		s[j] = sum > 0 ? s[j] / sum : 0.0;
}

/* Writes the probabilities of row (b, h, i) to the outputs that want them. */
static void ref_store_probs(const struct attn_sdpa *req, const double *p, size_t b, size_t h,
			    size_t i)
{
	size_t Lk = req->Lk;
	size_t cell = ((b * req->H + h) * req->Lq + i) * Lk;

	for (size_t j = 0; j < Lk; j++) {
		if (req->scores_view == ATTN_SCORES_SOFTMAX)
			req->scores[cell + j] = (float)p[j];
		if (req->weights_mode == ATTN_WEIGHTS_PER_HEAD)
			req->weights[cell + j] = (float)p[j];
	}
}

/* weights_mean[b, i, j] = (1/H) sum_h P[b, h, i, j], from the per-head rows. */
static void ref_store_mean(const struct attn_sdpa *req, const double *p_all, size_t b, size_t i)
{
	for (size_t j = 0; j < req->Lk; j++) {
		double acc = 0.0;

		for (size_t h = 0; h < req->H; h++)
			acc += p_all[h * req->Lk + j];
		req->weights[(b * req->Lq + i) * req->Lk + j] = (float)(acc / (double)req->H);
	}
}

/* out[b, h, i, :] = sum_j p[j] v[b, kvh, j, :] */
static void ref_output(const struct attn_sdpa *req, const double *p, size_t b, size_t h,
		       size_t i)
{
	size_t kvh = h / (req->H / req->Hkv);
	float *out_bhi = req->out.data + b * req->out.batch_stride + h * req->out.head_stride +
			 i * req->out.row_stride;

	for (size_t d = 0; d < req->Dv; d++) {
		double acc = 0.0;

		for (size_t j = 0; j < req->Lk; j++)
			acc += p[j] * at(req->v, b, kvh, j, d);
		out_bhi[d] = (float)acc;
	}
}

enum attn_status attn_sdpa_forward_ref(const struct attn_sdpa *req, struct attn_error *err)
{
	enum attn_status st = sdpa_check_request(req, err);
	double *p_all; /* [H, Lk]: one query row of every head */
	size_t bytes;

	if (st != ATTN_OK)
		return st;
	/* the request check bounds B H Lq Lk floats, not H Lk doubles: with
	 * B = Lq = 1 the latter can pass SIZE_MAX while the former fits */
	if (size_mul3(&bytes, req->H, req->Lk, sizeof(double)) != 0)
		return attn_fail(err, ATTN_ERR_OVERFLOW, "k", 0,
				 "[H, Lk] = [%zu, %zu] doubles overflow", req->H, req->Lk);
	st = sdpa_check_values(req, err);
	if (st != ATTN_OK)
		return st;
	p_all = malloc(bytes);
	if (p_all == NULL)
		return attn_fail(err, ATTN_ERR_NOMEM, NULL, 0, "out of memory");
	for (size_t b = 0; b < req->B; b++)
		for (size_t i = 0; i < req->Lq; i++) {
			for (size_t h = 0; h < req->H; h++) {
				double *p = p_all + h * req->Lk;

				ref_row(req, p, b, h, i);
				ref_store_probs(req, p, b, h, i);
				ref_output(req, p, b, h, i);
			}
			if (req->weights_mode == ATTN_WEIGHTS_MEAN)
				ref_store_mean(req, p_all, b, i);
		}
	free(p_all);
	return sdpa_check_result(req, err);
}
