/* mask.c: causal, window, key-length, user-mask and ALiBi biases (see mask.h). */
#include "mask.h"

#include <math.h>
#include <stdint.h>

#include "sizes.h"

/* The aligned offset of query rows in batch b: qpos = i + offset (may be < 0). */
static ptrdiff_t query_offset(const struct attn_sdpa *req, size_t b)
{
	size_t len = req->mask.kv_lengths ? req->mask.kv_lengths[b] : req->Lk;
	size_t qlen = req->mask.q_lengths ? req->mask.q_lengths[b] : req->Lq;

	if (req->mask.causal != ATTN_CAUSAL_BOTTOM_RIGHT && !req->mask.bottom_right)
		return req->mask.q_offset;
	return req->mask.q_offset + (ptrdiff_t)len - (ptrdiff_t)qlen;
}

void mask_range(const struct attn_sdpa *req, size_t b, size_t i, size_t *lo, size_t *hi)
{
	const struct attn_mask *m = &req->mask;
	ptrdiff_t qpos = (ptrdiff_t)i + query_offset(req, b);
	ptrdiff_t first = 0, end = (ptrdiff_t)req->Lk;
	ptrdiff_t W = (ptrdiff_t)m->window;

	if (m->kv_lengths && (ptrdiff_t)m->kv_lengths[b] < end)
		end = (ptrdiff_t)m->kv_lengths[b];
	if (m->causal != ATTN_CAUSAL_NONE && qpos + 1 < end)
		end = qpos + 1; /* j <= qpos */
	if (W > 0) {
		if (qpos - W + 1 > first)
			first = qpos - W + 1; /* qpos - W < j */
		if (m->causal == ATTN_CAUSAL_NONE && qpos + W < end)
			end = qpos + W; /* symmetric window: j < qpos + W */
	}
	if (end < first || end <= 0) {
		*lo = *hi = 0;
		return;
	}
	*lo = (size_t)first;
	*hi = (size_t)end;
}

/* Index of (b, h, i, j) in a user mask of rank 1..4 right-aligned onto
 * [B, H, Lq, Lk]; broadcast dims (size 1) contribute 0. Returns -1 when j is
 * past a short last axis. */
static ptrdiff_t user_index(const struct attn_mask *m, size_t b, size_t h, size_t i, size_t j)
{
	size_t coord[4] = { b, h, i, j };
	size_t dims[4] = { 1, 1, 1, 1 };
	size_t idx = 0;

	for (size_t a = 0; a < m->user_rank; a++)
		dims[4 - m->user_rank + a] = m->user_shape[a];
	if (dims[3] > 1 && j >= dims[3])
		return -1;
	for (size_t a = 0; a < 4; a++)
		idx = idx * dims[a] + (dims[a] == 1 ? 0 : coord[a]);
	return (ptrdiff_t)idx;
}

static float user_bias(const struct attn_mask *m, size_t b, size_t h, size_t i, size_t j)
{
	ptrdiff_t idx;

	if (m->user_kind == ATTN_USER_MASK_NONE)
		return 0.0f;
	idx = user_index(m, b, h, i, j);
	if (idx < 0)
		return -INFINITY;
	if (m->user_kind == ATTN_USER_MASK_BOOL)
		return ((const uint8_t *)m->user)[idx] ? 0.0f : -INFINITY;
	return ((const float *)m->user)[idx];
}

static float alibi_bias(const struct attn_sdpa *req, size_t b, size_t h, size_t i, size_t j)
{
	double qpos, kpos;

	if (req->alibi_slopes == NULL)
		return 0.0f;
	if (req->q_pos != NULL)
		qpos = req->q_pos[i];
	else if (req->k_pos != NULL) /* beside the keys' list: offset + index */
		qpos = req->pos_offset + (double)i;
	else
		qpos = (double)((ptrdiff_t)i + query_offset(req, b));
	if (req->k_pos != NULL)
		kpos = req->k_pos[j];
	else if (req->q_pos != NULL) /* beside the queries' list: offset + index */
		kpos = req->pos_offset + (double)j;
	else
		kpos = (double)j;
	return (float)(-(double)req->alibi_slopes[h] * fabs(qpos - kpos));
}

float mask_bias_at(const struct attn_sdpa *req, size_t b, size_t h, size_t i, size_t j)
{
	size_t lo, hi;

	mask_range(req, b, i, &lo, &hi);
	if (j < lo || j >= hi)
		return -INFINITY;
	return user_bias(&req->mask, b, h, i, j) + alibi_bias(req, b, h, i, j);
}

int mask_row_open(const struct attn_sdpa *req, size_t b, size_t h, size_t i)
{
	size_t lo, hi;

	mask_range(req, b, i, &lo, &hi);
	if (lo >= hi)
		return 0;
	if (req->mask.user_kind == ATTN_USER_MASK_NONE)
		return 1;
	for (size_t j = lo; j < hi; j++)
		if (user_bias(&req->mask, b, h, i, j) != -INFINITY)
			return 1;
	return 0;
}

void mask_apply_span(float *s, const struct attn_sdpa *req, size_t b, size_t h, size_t i,
		     size_t j0, size_t n, size_t *lo, size_t *hi)
{
	size_t vlo, vhi;

	mask_range(req, b, i, &vlo, &vhi);
	/* the visible range, relative to the span [j0, j0 + n) */
	*lo = vlo > j0 ? vlo - j0 : 0;
	*hi = vhi > j0 ? vhi - j0 : 0;
	*lo = *lo < n ? *lo : n;
	*hi = *hi < n ? *hi : n;
	if (*hi < *lo)
		*hi = *lo;
	for (size_t j = 0; j < *lo; j++)
		s[j] = -INFINITY;
	for (size_t j = *hi; j < n; j++)
		s[j] = -INFINITY;
	if (req->mask.user_kind == ATTN_USER_MASK_NONE && req->alibi_slopes == NULL)
		return;
	for (size_t j = *lo; j < *hi; j++)
		s[j] += user_bias(&req->mask, b, h, i, j0 + j) + alibi_bias(req, b, h, i, j0 + j);
}

static enum attn_status validate_user_mask(const struct attn_sdpa *req, struct attn_error *err)
{
	const struct attn_mask *m = &req->mask;
	size_t full[4] = { req->B, req->H, req->Lq, req->Lk };
	size_t n = 1;

	if (m->user_kind == ATTN_USER_MASK_NONE)
		return ATTN_OK;
	if (m->user == NULL || m->user_rank < 1 || m->user_rank > 4)
		return attn_fail(err, ATTN_ERR_MASK_SHAPE, "attn_mask", 0,
				 "a mask needs data and rank 1, 2, 3 or 4");
	for (size_t a = 0; a < m->user_rank; a++) {
		size_t d = m->user_shape[a], want = full[4 - m->user_rank + a];
		int last = a + 1 == m->user_rank;

		if (d == 0 || (d != 1 && d != want && !(last && d < want)))
			return attn_fail(err, ATTN_ERR_MASK_SHAPE, "attn_mask", a,
					 "mask axis %zu has size %zu; it must be 1 or %zu", a, d,
					 want);
		if (size_mul(&n, n, d) != 0)
			return attn_fail(err, ATTN_ERR_OVERFLOW, "attn_mask", a,
					 "mask shape overflows");
	}
	if (m->user_kind == ATTN_USER_MASK_ADDITIVE) {
		const float *v = m->user;

		for (size_t k = 0; k < n; k++)
			if (isnan(v[k]) || v[k] == INFINITY)
				return attn_fail(err, ATTN_ERR_NONFINITE, "attn_mask", k,
						 "additive mask value %zu is %s; only finite "
						 "values and -Infinity are allowed",
						 k, isnan(v[k]) ? "NaN" : "+Infinity");
	}
	return ATTN_OK;
}

enum attn_status mask_validate(const struct attn_sdpa *req, struct attn_error *err)
{
	const struct attn_mask *m = &req->mask;

	if ((unsigned)m->causal > ATTN_CAUSAL_BOTTOM_RIGHT ||
	    (unsigned)m->user_kind > ATTN_USER_MASK_ADDITIVE)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "mask", 0, "unknown mask kind");
	if (m->q_offset > (ptrdiff_t)1 << 40 || m->q_offset < -((ptrdiff_t)1 << 40))
		return attn_fail(err, ATTN_ERR_POSITION, "q_offset", 0,
				 "query offset %td is out of range", m->q_offset);
	if (m->kv_lengths)
		for (size_t b = 0; b < req->B; b++)
			if (m->kv_lengths[b] > req->Lk)
				return attn_fail(err, ATTN_ERR_POSITION, "kv_lengths", b,
						 "kv_lengths[%zu] = %zu exceeds the key length %zu",
						 b, m->kv_lengths[b], req->Lk);
	if (m->q_lengths)
		for (size_t b = 0; b < req->B; b++)
			if (m->q_lengths[b] > req->Lq)
				return attn_fail(err, ATTN_ERR_POSITION, "q_lengths", b,
						 "q_lengths[%zu] = %zu exceeds the query length %zu",
						 b, m->q_lengths[b], req->Lq);
	if (req->alibi_slopes) {
		for (size_t h = 0; h < req->H; h++)
			if (!isfinite(req->alibi_slopes[h]))
				return attn_fail(err, ATTN_ERR_NONFINITE, "alibi_slopes", h,
						 "ALiBi slope %zu is not finite", h);
	}
	return validate_user_mask(req, err);
}

/*
 * BLOOM's slopes (build_alibi_tensor): n = the largest power of two <= H;
 * slopes 2^(-8/n * k) for k = 1..n, then for the H - n remaining heads the odd
 * powers 2^(-4/n * k), k = 1, 3, 5, ... of the next power of two's sequence.
 */
void attn_alibi_slopes(float *slopes, size_t H)
{
	size_t n = 1;

	while (n * 2 <= H)
		n *= 2;
	for (size_t k = 1; k <= n && k <= H; k++)
		slopes[k - 1] = (float)pow(2.0, -8.0 / (double)n * (double)k);
	for (size_t k = 0; n + k < H; k++)
		slopes[n + k] = (float)pow(2.0, -4.0 / (double)n * (double)(2 * k + 1));
}
