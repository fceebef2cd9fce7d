/*
 * mha_ref.c: the naive twin of mha.c. Projections in plain double loops, the
 * attention core by attn_sdpa_forward_ref; positional encodings by the same
 * positional.c functions (they have one implementation, checked against the
 * numpy fixtures).
 */
#include "mha.h"

#include <stdlib.h>
#include <string.h>

#include "mha_check.h"

/* out[r, o] = sum_e x[r, e] W[o, e] + bias[o], for r < n, o < width. */
static void ref_linear(float *out, const float *x, size_t n, const float *W, const float *bias,
		       size_t width, size_t E)
{
	for (size_t r = 0; r < n; r++)
		for (size_t o = 0; o < width; o++) {
			double acc = bias ? bias[o] : 0.0;

			for (size_t e = 0; e < E; e++)
				acc += (double)x[r * E + e] * W[o * E + e];
			out[r * width + o] = (float)acc;
		}
}

/* A copy of x [B, L, E] with the sinusoidal encoding added when asked. */
static float *ref_input(const float *x, size_t B, size_t L, size_t E,
			const struct attn_positional *pos, const double *list)
{
	float *copy = malloc(B * L * E * sizeof(float));

	if (copy == NULL)
		return NULL;
	memcpy(copy, x, B * L * E * sizeof(float));
	if (pos->kind == ATTN_POS_SINUSOIDAL)
		for (size_t b = 0; b < B; b++)
			attn_sinusoidal_add(copy + b * L * E, L, E, 0, pos, list);
	return copy;
}

struct ref_buffers {
	float *xq;     /* [B, Lq, E] the query, sinusoidal encoding added when asked */
	float *xk, *xv; /* [B, Lk, E] the key and the value, the same */
	float *q;      /* [B, Lq, H D] */
	float *k, *v;  /* [B, Lk, Hkv D] */
	float *ctx;    /* [B, Lq, H D] the heads' outputs, concatenated */
	float *slopes; /* [H] ALiBi */
};

static void ref_free(struct ref_buffers *r)
{
	free(r->xq);
	free(r->xk);
	free(r->xv);
	free(r->q);
	free(r->k);
	free(r->v);
	free(r->ctx);
	free(r->slopes);
}

static int ref_alloc(struct ref_buffers *r, const struct attn_mha *req)
{
	const struct attn_model *m = req->model;
	const float *key = req->key ? req->key : req->query;
	const float *value = req->value ? req->value : key;
	size_t nq = req->B * req->Lq, nk = req->B * req->Lk;

	memset(r, 0, sizeof(*r));
	r->xq = ref_input(req->query, req->B, req->Lq, m->E, &req->pos, req->pos.q_positions);
	r->xk = ref_input(key, req->B, req->Lk, m->E, &req->pos, mha_k_positions(req));
	r->xv = ref_input(value, req->B, req->Lk, m->E, &req->pos, mha_k_positions(req));
	r->q = malloc(nq * m->H * m->D * sizeof(float));
	r->k = malloc(nk * m->Hkv * m->D * sizeof(float));
	r->v = malloc(nk * m->Hkv * m->D * sizeof(float));
	r->ctx = malloc(nq * m->H * m->D * sizeof(float));
	r->slopes = malloc(m->H * sizeof(float));
	return r->xq && r->xk && r->xv && r->q && r->k && r->v && r->ctx && r->slopes ? 0 : -1;
}

/* Q, K, V from the packed weights: rows Wq, then Wk, then Wv. */
static void ref_project(struct ref_buffers *r, const struct attn_mha *req)
{
	const struct attn_model *m = req->model;
	size_t E = m->E, qw = m->H * m->D, kw = m->Hkv * m->D;
	const float *b = m->b_qkv;

	ref_linear(r->q, r->xq, req->B * req->Lq, m->w_qkv, b, qw, E);
	ref_linear(r->k, r->xk, req->B * req->Lk, m->w_qkv + qw * E, b ? b + qw : NULL, kw, E);
	ref_linear(r->v, r->xv, req->B * req->Lk, m->w_qkv + (qw + kw) * E,
		   b ? b + qw + kw : NULL, kw, E);
}

/* The projections asked for, [B, heads, L, D] from [B, L, heads D]. */
static void ref_split(float *dst, const float *x, size_t B, size_t heads, size_t L, size_t D)
{
	if (dst == NULL)
		return;
	for (size_t b = 0; b < B; b++)
		for (size_t h = 0; h < heads; h++)
			for (size_t i = 0; i < L; i++)
				for (size_t d = 0; d < D; d++)
					dst[((b * heads + h) * L + i) * D + d] =
						x[(b * L + i) * heads * D + h * D + d];
}

static void ref_show_heads(const struct ref_buffers *r, const struct attn_mha *req)
{
	const struct attn_model *m = req->model;

	if (!req->show_projections)
		return;
	ref_split(req->q_heads, r->q, req->B, m->H, req->Lq, m->D);
	ref_split(req->k_heads, r->k, req->B, m->Hkv, req->Lk, m->D);
	ref_split(req->v_heads, r->v, req->B, m->Hkv, req->Lk, m->D);
}

static enum attn_status ref_core(struct ref_buffers *r, const struct attn_mha *req,
				 struct attn_error *err)
{
	const struct attn_model *m = req->model;
	struct attn_sdpa c;

	memset(&c, 0, sizeof(c));
	c.B = req->B;
	c.H = m->H;
	c.Hkv = m->Hkv;
	c.Lq = req->Lq;
	c.Lk = req->Lk;
	c.D = c.Dv = m->D;
	c.scale = req->scale;
	c.softcap = req->softcap;
	c.mask = req->mask;
	if (req->pos.kind == ATTN_POS_ALIBI) {
		attn_alibi_slopes(r->slopes, m->H);
		c.alibi_slopes = r->slopes;
		c.q_pos = req->pos.q_positions;
		c.k_pos = mha_k_positions(req);
		c.pos_offset = (double)req->pos.offset;
	}
	c.q = attn_cview_blhd(r->q, m->H, req->Lq, m->D);
	c.k = attn_cview_blhd(r->k, m->Hkv, req->Lk, m->D);
	c.v = attn_cview_blhd(r->v, m->Hkv, req->Lk, m->D);
	c.out = attn_view_blhd(r->ctx, m->H, req->Lq, m->D);
	c.weights_mode = req->weights_mode;
	c.weights = req->weights;
	c.scores_view = req->scores_view;
	c.scores = req->scores;
	return attn_sdpa_forward_ref(&c, err);
}

enum attn_status attn_mha_forward_ref(const struct attn_mha *req, struct attn_error *err)
{
	struct ref_buffers r;
	enum attn_status st;
	const struct attn_model *m;

	st = mha_check_request(req, err);
	if (st == ATTN_OK)
		st = mha_check_values(req, err);
	if (st != ATTN_OK)
		return st;
	m = req->model;
	if (ref_alloc(&r, req) != 0) {
		ref_free(&r);
		return attn_fail(err, ATTN_ERR_NOMEM, NULL, 0, "out of memory");
	}
	ref_project(&r, req);
	if (req->pos.kind == ATTN_POS_ROPE) {
		attn_rope_apply(attn_view_blhd(r.q, m->H, req->Lq, m->D), req->B, m->H, req->Lq,
				m->D, &req->pos, req->pos.q_positions);
		attn_rope_apply(attn_view_blhd(r.k, m->Hkv, req->Lk, m->D), req->B, m->Hkv,
				req->Lk, m->D, &req->pos, mha_k_positions(req));
	}
	ref_show_heads(&r, req);
	st = ref_core(&r, req, err);
	if (st == ATTN_OK) {
		ref_split(req->head_outputs, r.ctx, req->B, m->H, req->Lq, m->D);
		ref_linear(req->out, r.ctx, req->B * req->Lq, m->w_o, m->b_o, m->E, m->H * m->D);
	}
	ref_free(&r);
	return st;
}
