/*
 * mha.c: the multi-head attention layer on BLAS (see mha.h for the math).
 *
 * Workspace, in floats, in this order (struct mha_layout):
 *   xq, xk, xv  inputs with the sinusoidal encoding added  (only with sinusoidal)
 *   q, k, v     projections [B, L, heads * D]; for self-attention one packed
 *               [B, L, (H + 2 Hkv) D] buffer from a single sgemm
 *   ctx         concatenated heads [B, Lq, H D]
 *   slopes      ALiBi slopes [H]
 *   sdpa        the attention core's own workspace
 */
#include "mha.h"

#include <math.h>
#include <string.h>

#include "cancel.h"
#include "linear.h"
#include "mha_check.h"
#include "sdpa_check.h"
#include "mha_stream.h"
#include "sizes.h"

struct mha_layout {
	int self;        /* key and value are the query: one packed projection */
	int shared_kv;   /* value is key: one [Wk; Wv] projection */
	size_t D, qkv_w; /* qkv_w: row width of the packed projection */
	size_t xq, xk, xv, q, k, v, ctx, slopes, sdpa; /* offsets in floats */
	size_t total;    /* floats */
	/* writable q and k of the core's views (for RoPE): q_rows [B, Lq, H D]
	 * and k_rows [B, Lk, Hkv D], rows core.q / core.k.row_stride apart (the
	 * packed [B, L, (H + 2 Hkv) D] buffer in self-attention) */
	float *q_rows, *k_rows;
	struct attn_sdpa core;
};

/* Projection widths: q [H D], k and v [Hkv D]. */
static size_t q_width(const struct attn_model *m)
{
	return m->H * m->D;
}

static size_t kv_width(const struct attn_model *m)
{
	return m->Hkv * m->D;
}

/* Reserves n floats at *off, advancing the running total with overflow checks. */
static int reserve(size_t *total, size_t *off, size_t a, size_t b)
{
	size_t n;

	*off = *total;
	return size_mul(&n, a, b) != 0 || size_add(total, *total, n) != 0 ? -1 : 0;
}

/*
 * The core's views of q, k, v and ctx: [B, L, heads, D] inside row widths
 * qw / kw. Sizing needs only the strides; layout_views points the data into
 * the workspace.
 */
static void layout_strides(struct mha_layout *lay, const struct attn_mha *req)
{
	const struct attn_model *m = req->model;
	size_t kw = lay->self ? lay->qkv_w : lay->shared_kv ? 2 * kv_width(m) : kv_width(m);
	size_t qw = lay->self ? lay->qkv_w : q_width(m);

	lay->core.q = (struct attn_cview){ NULL, req->Lq * qw, m->D, qw };
	lay->core.k = (struct attn_cview){ NULL, req->Lk * kw, m->D, kw };
	lay->core.v = (struct attn_cview){ NULL, req->Lk * kw, m->D, kw };
	lay->core.out = (struct attn_view){ NULL, req->Lq * q_width(m), m->D, q_width(m) };
}

static void layout_views(struct mha_layout *lay, const struct attn_mha *req, float *base)
{
	const struct attn_model *m = req->model;
	float *q = base + lay->q, *k = base + lay->k, *v = base + lay->v;

	if (lay->self) {
		k = q + q_width(m);
		v = k + kv_width(m);
	} else if (lay->shared_kv) {
		v = k + kv_width(m);
	}
	lay->core.q.data = lay->q_rows = q;
	lay->core.k.data = lay->k_rows = k;
	lay->core.v.data = v;
	lay->core.out.data = base + lay->ctx;
}

/* The attention core's request, everything but the views. */
static void layout_core(struct mha_layout *lay, const struct attn_mha *req)
{
	const struct attn_model *m = req->model;
	struct attn_sdpa *c = &lay->core;

	memset(c, 0, sizeof(*c));
	c->B = req->B;
	c->H = m->H;
	c->Hkv = m->Hkv;
	c->Lq = req->Lq;
	c->Lk = req->Lk;
	c->D = c->Dv = m->D;
	c->scale = req->scale;
	c->softcap = req->softcap;
	c->mask = req->mask;
	if (req->pos.kind == ATTN_POS_ALIBI) {
		/* the slopes themselves go into the workspace in attn_mha_forward */
		c->q_pos = req->pos.q_positions;
		c->k_pos = mha_k_positions(req);
		c->pos_offset = (double)req->pos.offset;
	}
	c->weights_mode = req->weights_mode;
	c->weights = req->weights;
	c->scores_view = req->scores_view;
	c->scores = req->scores;
	c->threads = req->threads;
	c->workers = req->workers;
	c->cancel = req->cancel;
}

static enum attn_status plan_layout(struct mha_layout *lay, const struct attn_mha *req,
				    struct attn_error *err)
{
	const struct attn_model *m = req->model;
	int pe = req->pos.kind == ATTN_POS_SINUSOIDAL;
	size_t nq = req->B * req->Lq, nk = req->B * req->Lk, core_bytes, t = 0;
	int bad = 0;

	memset(lay, 0, sizeof(*lay));
	lay->self = req->key == NULL && req->value == NULL;
	lay->shared_kv = !lay->self && (req->value == NULL || req->value == req->key);
	lay->D = m->D;
	lay->qkv_w = q_width(m) + 2 * kv_width(m);
	bad |= reserve(&t, &lay->xq, pe ? nq : 0, m->E);
	bad |= reserve(&t, &lay->xk, pe && !lay->self ? nk : 0, m->E);
	bad |= reserve(&t, &lay->xv, pe && !lay->self && !lay->shared_kv ? nk : 0, m->E);
	bad |= reserve(&t, &lay->q, nq, lay->self ? lay->qkv_w : q_width(m));
	bad |= reserve(&t, &lay->k, lay->self ? 0 : nk, (lay->shared_kv ? 2 : 1) * kv_width(m));
	bad |= reserve(&t, &lay->v, lay->self || lay->shared_kv ? 0 : nk, kv_width(m));
	bad |= reserve(&t, &lay->ctx, nq, q_width(m));
	bad |= reserve(&t, &lay->slopes, req->pos.kind == ATTN_POS_ALIBI ? m->H : 0, 1);
	if (bad)
		return attn_fail(err, ATTN_ERR_OVERFLOW, "query", 0,
				 "workspace for B = %zu, Lq = %zu, Lk = %zu overflows", req->B,
				 req->Lq, req->Lk);
	layout_core(lay, req);
	layout_strides(lay, req);
	{
		enum attn_status st = attn_sdpa_workspace(&lay->core, &core_bytes, err);

		if (st != ATTN_OK)
			return st;
	}
	lay->sdpa = t;
	if (size_add(&lay->total, t, (core_bytes + sizeof(float) - 1) / sizeof(float)) != 0 ||
	    size_mul(&core_bytes, lay->total, sizeof(float)) != 0)
		return attn_fail(err, ATTN_ERR_OVERFLOW, "query", 0, "workspace overflows");
	return ATTN_OK;
}

/* Without weights, scores or projections to show, nothing needs whole rows of
 * P or whole K and V: stream the keys. */
static int use_stream(const struct attn_mha *req)
{
	return req->weights_mode == ATTN_WEIGHTS_NONE && req->scores_view == ATTN_SCORES_NONE &&
	       !req->show_projections;
}

/* Validates and plans; *floats is the workspace of the path that will run. */
static enum attn_status mha_plan(struct mha_layout *lay, const struct attn_mha *req,
				 size_t *floats, struct attn_error *err)
{
	enum attn_status st = mha_check_request(req, err);

	if (st == ATTN_OK)
		st = plan_layout(lay, req, err);
	if (st != ATTN_OK)
		return st;
	if (use_stream(req))
		return mha_stream_workspace(req, floats, err);
	*floats = lay->total;
	return ATTN_OK;
}

enum attn_status attn_mha_workspace(const struct attn_mha *req, size_t *bytes,
				    struct attn_error *err)
{
	struct mha_layout lay;
	size_t floats;
	enum attn_status st = mha_plan(&lay, req, &floats, err);

	if (st == ATTN_OK)
		*bytes = floats * sizeof(float);
	return st;
}

/* x' = x + sinusoidal pe, per batch item, into dst [B, L, E]. */
static const float *with_pe(float *dst, const float *x, size_t B, size_t L, size_t E,
			    const struct attn_positional *pos, const double *list)
{
	memcpy(dst, x, B * L * E * sizeof(float));
	for (size_t b = 0; b < B; b++)
		attn_sinusoidal_add(dst + b * L * E, L, E, 0, pos, list);
	return dst;
}

/* Step 1: inputs, with the sinusoidal encoding added where asked. */
static void mha_inputs(const struct mha_layout *lay, const struct attn_mha *req, float *ws,
		       const float **xq, const float **xk, const float **xv)
{
	const struct attn_model *m = req->model;
	const struct attn_positional *pos = &req->pos;

	*xq = req->query;
	*xk = req->key ? req->key : req->query;
	*xv = req->value ? req->value : *xk;
	if (pos->kind != ATTN_POS_SINUSOIDAL)
		return;
	*xq = with_pe(ws + lay->xq, req->query, req->B, req->Lq, m->E, pos, pos->q_positions);
	if (lay->self) {
		*xk = *xv = *xq;
		return;
	}
	*xk = with_pe(ws + lay->xk, *xk, req->B, req->Lk, m->E, pos, mha_k_positions(req));
	*xv = lay->shared_kv ? *xk
			     : with_pe(ws + lay->xv, *xv, req->B, req->Lk, m->E, pos,
				       mha_k_positions(req));
}

/* Step 2: Q, K, V projections (one sgemm for self-attention). */
static void mha_project(const struct mha_layout *lay, const struct attn_mha *req, float *ws,
			const float *xq, const float *xk, const float *xv)
{
	const struct attn_model *m = req->model;
	size_t E = m->E, qw = q_width(m), kw = kv_width(m);
	size_t nq = req->B * req->Lq, nk = req->B * req->Lk;
	const float *bq = m->b_qkv, *bk = m->b_qkv ? m->b_qkv + qw : NULL;
	const float *bv = m->b_qkv ? m->b_qkv + qw + kw : NULL;
	const float *Wk = m->w_qkv + qw * E, *Wv = Wk + kw * E; /* rows of Wk, Wv */
	size_t T = req->threads;
	struct attn_workers *w = req->workers;
	const atomic_int *c = req->cancel;

	if (lay->self) {
		linear_forward(ws + lay->q, lay->qkv_w, xq, E, nq, m->w_qkv, bq, lay->qkv_w, E, T, w,
			       c);
		return;
	}
	linear_forward(ws + lay->q, qw, xq, E, nq, m->w_qkv, bq, qw, E, T, w, c);
	if (lay->shared_kv) {
		linear_forward(ws + lay->k, 2 * kw, xk, E, nk, Wk, bk, 2 * kw, E, T, w, c);
		return;
	}
	linear_forward(ws + lay->k, kw, xk, E, nk, Wk, bk, kw, E, T, w, c);
	linear_forward(ws + lay->v, kw, xv, E, nk, Wv, bv, kw, E, T, w, c);
}

/* Step 3: rotate Q and K per head (RoPE). */
static void mha_rope(const struct mha_layout *lay, const struct attn_mha *req)
{
	const struct attn_model *m = req->model;
	struct attn_view q = { lay->q_rows, lay->core.q.batch_stride, lay->core.q.head_stride,
			       lay->core.q.row_stride };
	struct attn_view k = { lay->k_rows, lay->core.k.batch_stride, lay->core.k.head_stride,
			       lay->core.k.row_stride };

	attn_rope_apply(q, req->B, m->H, req->Lq, m->D, &req->pos, req->pos.q_positions);
	attn_rope_apply(k, req->B, m->Hkv, req->Lk, m->D, &req->pos, mha_k_positions(req));
}

/* Step 4, when asked: the projections as the core reads them, heads split out. */
static void mha_show_heads(const struct mha_layout *lay, const struct attn_mha *req)
{
	const struct attn_model *m = req->model;

	if (!req->show_projections)
		return;
	if (req->q_heads != NULL)
		attn_kv_concat(req->q_heads, NULL, lay->core.q, req->B, m->H, 0, req->Lq, m->D);
	if (req->k_heads != NULL)
		attn_kv_concat(req->k_heads, NULL, lay->core.k, req->B, m->Hkv, 0, req->Lk, m->D);
	if (req->v_heads != NULL)
		attn_kv_concat(req->v_heads, NULL, lay->core.v, req->B, m->Hkv, 0, req->Lk, m->D);
}

/* Step 5, when asked: the core's output C [B, Lq, H D], heads split out. */
static void mha_show_outputs(const struct attn_mha *req, const float *ctx)
{
	const struct attn_model *m = req->model;

	if (req->head_outputs != NULL)
		attn_kv_concat(req->head_outputs, NULL, attn_cview_blhd(ctx, m->H, req->Lq, m->D),
			       req->B, m->H, 0, req->Lq, m->D);
}

/*
 * Finite inputs can still overflow float32: a projection (inf in q, k or v),
 * the scores q . k, which softmax.h turns into NaN rows, or the output
 * projection W_O (and its bias) of finite head outputs. Each reaches the
 * output, which is checked once here rather than every projection on the
 * way: the projections, when kept (core: the whole-row path), are then
 * scanned to name the one that overflowed (NONFINITE, field q, k or v; the
 * streaming path checks its own as it makes them, mha_stream.h); else the
 * first output row is reported, blaming W_O when its row of the heads'
 * outputs ctx [B, Lq, H D] is finite, the scores otherwise.
 */
static enum attn_status check_output(const struct attn_mha *req, const struct attn_sdpa *core,
				     const float *ctx, struct attn_error *err)
{
	size_t E = req->model->E, width = q_width(req->model);
	enum attn_status st;

	if (attn_all_finite(req->out, req->B * req->Lq * E))
		return ATTN_OK;
	if (core != NULL && (st = sdpa_check_values(core, err)) != ATTN_OK)
		return st;
	for (size_t row = 0; row < req->B * req->Lq; row++) {
		if (attn_all_finite(req->out + row * E, E))
			continue;
		return attn_fail(err, ATTN_ERR_RESULT_OVERFLOW, "query", row,
				 "the output of batch item %zu, query %zu overflows float32 "
				 "(%s): scale the inputs down",
				 row / req->Lq, row % req->Lq,
				 attn_all_finite(ctx + row * width, width)
				     ? "the output projection W_O is too large for the heads' "
				       "outputs"
				     : "the scores q . k are too large");
	}
	return ATTN_OK;
}

enum attn_status attn_mha_forward(const struct attn_mha *req, void *ws_bytes_ptr,
				  size_t ws_bytes, struct attn_error *err)
{
	float *ws = ws_bytes_ptr;
	const float *xq, *xk, *xv;
	struct mha_layout lay;
	enum attn_status st;
	size_t floats;

	st = mha_plan(&lay, req, &floats, err);
	if (st != ATTN_OK)
		return st;
	if (ws_bytes < floats * sizeof(float) || ws == NULL)
		return attn_fail(err, ATTN_ERR_WORKSPACE, "workspace", 0,
				 "workspace of %zu bytes given, %zu needed", ws_bytes,
				 floats * sizeof(float));
	st = attn_cancel_check(req->cancel, err);
	if (st == ATTN_OK)
		st = mha_check_values(req, err);
	if (st != ATTN_OK)
		return st;
	if (use_stream(req)) {
		st = mha_stream_forward(req, &lay.core, ws, err);
		if (st == ATTN_OK)
			st = attn_cancel_check(req->cancel, err);
		if (st != ATTN_OK)
			return st;
		mha_show_outputs(req, ws); /* the stream leaves C at ws */
		return check_output(req, NULL, ws, err);
	}
	layout_views(&lay, req, ws);
	if (req->pos.kind == ATTN_POS_ALIBI) {
		attn_alibi_slopes(ws + lay.slopes, req->model->H);
		lay.core.alibi_slopes = ws + lay.slopes;
	}
	mha_inputs(&lay, req, ws, &xq, &xk, &xv);
	mha_project(&lay, req, ws, xq, xk, xv);
	if (req->pos.kind == ATTN_POS_ROPE)
		mha_rope(&lay, req);
	mha_show_heads(&lay, req);
	st = sdpa_forward_unchecked(&lay.core, ws + lay.sdpa,
				    (lay.total - lay.sdpa) * sizeof(float), err);
	if (st != ATTN_OK)
		return st;
	mha_show_outputs(req, ws + lay.ctx);
	/* out = ctx Wo^T + bo */
	linear_forward(req->out, req->model->E, ws + lay.ctx, q_width(req->model),
		       req->B * req->Lq, req->model->w_o, req->model->b_o, req->model->E,
		       q_width(req->model), req->threads, req->workers, req->cancel);
	st = attn_cancel_check(req->cancel, err); /* a cut projection is no overflow */
	return st != ATTN_OK ? st : check_output(req, &lay.core, ws + lay.ctx, err);
}

double attn_mha_flops(const struct attn_mha *req)
{
	const struct attn_model *m = req->model;
	double B = (double)req->B, Lq = (double)req->Lq, Lk = (double)req->Lk;
	double E = (double)m->E, qw = (double)(m->H * m->D), kw = (double)(m->Hkv * m->D);
	double proj = 2.0 * B * E * (Lq * qw + 2.0 * Lk * kw) + 2.0 * B * Lq * qw * E;
	double attn = 2.0 * B * (double)m->H * Lq * Lk * 2.0 * (double)m->D;

	return proj + attn;
}
