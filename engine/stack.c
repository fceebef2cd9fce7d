/*
 * stack.c: a transformer stack on BLAS (see stack.h for each family's block).
 *
 * Workspace, in floats, in this order (struct stack_layout), n = B L rows:
 *   x     [B, L, E]             the residual stream
 *   h     [B, L, E]             a norm's output, then a sublayer's
 *   qkv   [B, L, (H + 2 Hkv) D] q, k and v side by side, one row per token
 *   ctx   [B, L, H D]           the heads' outputs, concatenated
 *   up    [B, L, F]             the MLP's hidden layer
 *   gate  [B, L, F]             llama's gate (only llama)
 *   attw  [B, H, L, L]          per-head weights of a captured layer (only
 *                               when a subset of heads or their mean is kept)
 *   atts  [B, H, L, L]          per-head scores of a captured layer (only
 *                               when scores are captured for a subset of heads)
 *   sdpa  the attention core's own workspace
 * A layer, in named steps (stack_layer): norm, attention (project, rotate,
 * attend, capture, o), residual, norm, MLP (up, act, down), residual. The
 * attention core writes a captured layer's weights and masked scores
 * (attention.h) straight into the caller's slabs when every head is kept.
 *
 * Results do not depend on the thread count: the projections go to sgemm in
 * tiles that depend on the shape alone (linear.h), the attention core sums
 * in a fixed order (attention.c), and everything else is row by row
 * (stack_rows.c), each row computed alike on whichever thread takes it.
 */
#include "stack.h"

#include <string.h>

#include "cancel.h"
#include "linear.h"
#include "positional.h"
#include "sizes.h"
#include "stack_check.h"
#include "stack_rows.h"

struct stack_layout {
	size_t n;                 /* B L rows */
	size_t W3;                /* (H + 2 Hkv) D: a row of qkv */
	size_t x, h, qkv, ctx, up, gate, attw, atts, sdpa; /* offsets in floats */
	size_t total;             /* floats */
	size_t sdpa_bytes;
	int scratch;              /* captured weights go through attw */
	int s_scratch;            /* captured scores go through atts */
	size_t slab;              /* floats of one captured layer's weights */
	size_t s_slab;            /* floats of one captured layer's scores */
	size_t p_slab;            /* floats of one captured layer's projections */
	size_t o_slab;            /* floats of one captured layer's head outputs */
	struct attn_sdpa core;    /* views bound to the workspace by bind_views */
};

/* Reserves a * b floats at *off, advancing the running total; -1 on overflow. */
static int reserve(size_t *total, size_t *off, size_t a, size_t b)
{
	size_t n;

	*off = *total;
	return size_mul(&n, a, b) != 0 || size_add(total, *total, n) != 0 ? -1 : 0;
}

/* The attention core's request, views with data at NULL until bind_views. */
static void layout_core(struct stack_layout *lay, const struct attn_stack_run *run)
{
	const struct attn_stack *s = run->stack;
	struct attn_sdpa *c = &lay->core;
	size_t L = run->L;

	memset(c, 0, sizeof(*c));
	c->B = run->B;
	c->H = s->H;
	c->Hkv = s->Hkv;
	c->Lq = c->Lk = L;
	c->D = c->Dv = s->D;
	c->scale = s->scale;
	c->mask.causal = s->family == ATTN_FAMILY_BERT ? ATTN_CAUSAL_NONE : ATTN_CAUSAL_TOP_LEFT;
	c->mask.window = s->window;
	c->mask.kv_lengths = run->lengths;
	/* q, k, v: [B, L, heads, D] inside rows of W3 */
	c->q = (struct attn_cview){ NULL, L * lay->W3, s->D, lay->W3 };
	c->k = c->q;
	c->v = c->q;
	c->out = attn_view_blhd(NULL, s->H, L, s->D);
	c->threads = run->threads;
	c->workers = run->workers;
	c->cancel = run->cancel;
}

/* The core's workspace: the larger of the streaming path and, when a layer
 * is captured, the path with its per-head weights and scores. */
static enum attn_status core_bytes(struct stack_layout *lay, const struct attn_stack_run *run,
				   struct attn_error *err)
{
	size_t with = 0, without = 0;
	enum attn_status st;

	lay->core.weights_mode = ATTN_WEIGHTS_NONE;
	lay->core.scores_view = ATTN_SCORES_NONE;
	st = attn_sdpa_workspace(&lay->core, &without, err);
	lay->core.weights_mode =
		stack_weights_captured(run) ? ATTN_WEIGHTS_PER_HEAD : ATTN_WEIGHTS_NONE;
	lay->core.scores_view = stack_scores_captured(run) ? ATTN_SCORES_MASKED : ATTN_SCORES_NONE;
	if (st == ATTN_OK && stack_n_captured(run) > 0)
		st = attn_sdpa_workspace(&lay->core, &with, err);
	lay->sdpa_bytes = with > without ? with : without;
	return st;
}

static enum attn_status plan_layout(struct stack_layout *lay, const struct attn_stack_run *run,
				    struct attn_error *err)
{
	const struct attn_stack *s = run->stack;
	size_t t = 0, bhll = 0;
	int bad;

	memset(lay, 0, sizeof(*lay));
	lay->scratch = stack_weights_captured(run) &&
		       (run->heads != NULL || run->weights_mode == ATTN_WEIGHTS_MEAN);
	lay->s_scratch = stack_scores_captured(run) && run->heads != NULL;
	bad = size_mul(&lay->n, run->B, run->L) != 0 ||
	      size_mul(&lay->W3, s->H + 2 * s->Hkv, s->D) != 0 ||
	      stack_slab_floats(run, &lay->slab) != 0 ||
	      stack_score_floats(run, &lay->s_slab) != 0 ||
	      stack_projection_floats(run, &lay->p_slab) != 0 ||
	      stack_head_output_floats(run, &lay->o_slab) != 0 ||
	      ((lay->scratch || lay->s_scratch) &&
	       size_mul4(&bhll, run->B, s->H, run->L, run->L) != 0);
	bad = bad || reserve(&t, &lay->x, lay->n, s->E) || reserve(&t, &lay->h, lay->n, s->E) ||
	      reserve(&t, &lay->qkv, lay->n, lay->W3) ||
	      reserve(&t, &lay->ctx, lay->n, s->H * s->D) || reserve(&t, &lay->up, lay->n, s->F) ||
	      reserve(&t, &lay->gate, s->family == ATTN_FAMILY_LLAMA ? lay->n : 0, s->F) ||
	      reserve(&t, &lay->attw, lay->scratch ? bhll : 0, 1) ||
	      reserve(&t, &lay->atts, lay->s_scratch ? bhll : 0, 1);
	if (bad)
		return attn_fail(err, ATTN_ERR_OVERFLOW, "ids", 0,
				 "workspace for B = %zu, L = %zu overflows", run->B, run->L);
	lay->sdpa = t;
	return ATTN_OK;
}

/* The attention core's workspace after the activations (the lengths checked). */
static enum attn_status plan_core(struct stack_layout *lay, const struct attn_stack_run *run,
				  struct attn_error *err)
{
	size_t floats;
	enum attn_status st;

	layout_core(lay, run);
	st = core_bytes(lay, run, err);
	if (st != ATTN_OK)
		return st;
	if (size_add(&lay->total, lay->sdpa,
		     (lay->sdpa_bytes + sizeof(float) - 1) / sizeof(float)) != 0 ||
	    size_mul(&floats, lay->total, sizeof(float)) != 0)
		return attn_fail(err, ATTN_ERR_OVERFLOW, "ids", 0, "workspace overflows");
	return ATTN_OK;
}

/* Scalars, sizes, then the arrays (stack_check.h says why in that order). */
static enum attn_status stack_plan(struct stack_layout *lay, const struct attn_stack_run *run,
				   struct attn_error *err)
{
	enum attn_status st = stack_check_scalars(run, err);

	if (st == ATTN_OK)
		st = plan_layout(lay, run, err);
	if (st == ATTN_OK)
		st = stack_check_arrays(run, err);
	if (st == ATTN_OK)
		st = plan_core(lay, run, err);
	return st;
}

enum attn_status attn_stack_workspace(const struct attn_stack_run *run, size_t *bytes,
				      struct attn_error *err)
{
	struct stack_layout lay;
	enum attn_status st = stack_plan(&lay, run, err);

	if (st == ATTN_OK)
		*bytes = lay.total * sizeof(float);
	return st;
}

/* ---- the steps ---------------------------------------------------------- */

static void run_linear(const struct attn_stack_run *run, float *out, size_t ld_out,
		       const float *x, size_t ld_x, size_t n, const struct attn_linear *lin)
{
	linear_forward_w(out, ld_out, x, ld_x, n, lin->w, lin->in_major, lin->b, lin->out,
			 lin->in, run->threads, run->workers, run->cancel);
}

/* x [m] += y [m] */
static void add_rows(float *x, const float *y, size_t m)
{
	for (size_t k = 0; k < m; k++)
		x[k] += y[k];
}

/* Step 0: x [B, L, E] = wte[id] (+ wtt[type]) (+ wpe[pos]), then bert's
 * norm; pos is l, or for RoBERTa pad_id + the non-pad ids so far (pad_id on
 * a pad id), counted along the item. */
static void stack_embed(const struct attn_stack_run *run, float *x)
{
	const struct attn_stack *s = run->stack;
	size_t E = s->E;

	for (size_t b = 0; b < run->B; b++)
		for (size_t l = 0, seen = 0; l < run->L; l++) {
			size_t r = b * run->L + l, pos = l;
			float *x_bl = x + r * E; /* seek to x[b, l, :] */
			const float *tok = s->wte + (size_t)run->ids[r] * E;
			int pad = s->positions_from_ids && run->ids[r] == (int64_t)s->pad_id;

			seen += !pad;
			if (s->positions_from_ids)
				pos = s->pad_id + (pad ? 0 : seen);
			memcpy(x_bl, tok, E * sizeof(float));
			if (s->family == ATTN_FAMILY_BERT) /* bert adds the type first */
				add_rows(x_bl, s->wtt + (size_t)(run->type_ids ? run->type_ids[r] : 0) * E,
					 E);
			if (s->wpe && s->family != ATTN_FAMILY_LLAMA)
				add_rows(x_bl, s->wpe + pos * E, E);
		}
	rows_norm(run, &s->emb_norm, x, x, run->B * run->L);
}

/* The captured heads of attw [B, H, L, L] into slab [B, Hc, L, L], or with
 * mode MEAN their mean (summed in head order) into slab [B, L, L]. */
static void capture_heads(float *slab, const float *attw, const struct attn_stack_run *run,
			  enum attn_weights_mode mode)
{
	size_t H = run->stack->H, Hc = stack_n_heads(run), LL = run->L * run->L;

	for (size_t b = 0; b < run->B; b++)
		for (size_t i = 0; i < Hc; i++) {
			size_t h = run->heads ? run->heads[i] : i;
			const float *src = attw + (b * H + h) * LL; /* seek to attw[b, h] */

			if (mode == ATTN_WEIGHTS_PER_HEAD)
				memcpy(slab + (b * Hc + i) * LL, src, LL * sizeof(float));
			else if (i == 0)
				memcpy(slab + b * LL, src, LL * sizeof(float));
			else
				add_rows(slab + b * LL, src, LL);
		}
	if (mode == ATTN_WEIGHTS_MEAN)
		for (size_t k = 0; k < run->B * LL; k++)
			slab[k] /= (float)Hc;
}

/* The captured heads' rows of src [B, L, ld] into slab [B, Hc, L, D]:
 * captured head h's D columns start at col0 + (h / group) D (group 1: its
 * own head; H / Hkv: the key head it reads). */
static void gather_heads(float *slab, const float *src, size_t ld, size_t col0, size_t group,
			 const struct attn_stack_run *run)
{
	size_t Hc = stack_n_heads(run), L = run->L, D = run->stack->D;

	for (size_t b = 0; b < run->B; b++)
		for (size_t i = 0; i < Hc; i++) {
			size_t h = run->heads ? run->heads[i] : i, col = col0 + h / group * D;

			for (size_t l = 0; l < L; l++) /* src[b, l, col:] to slab[b, i, l] */
				memcpy(slab + ((b * Hc + i) * L + l) * D, src + (b * L + l) * ld + col,
				       D * sizeof(float));
		}
}

/* The captured heads' q, and the k and v of the key head each reads, from
 * qkv [B, L, W3] (q, k, v side by side; llama's q and k rotated) into slab
 * [3, B, Hc, L, D]. */
static void capture_projections(float *slab, const float *qkv, size_t W3,
				const struct attn_stack_run *run)
{
	const struct attn_stack *s = run->stack;
	size_t part = run->B * stack_n_heads(run) * run->L * s->D, g = s->H / s->Hkv;

	gather_heads(slab, qkv, W3, 0, 1, run);
	gather_heads(slab + part, qkv, W3, s->H * s->D, g, run);
	gather_heads(slab + 2 * part, qkv, W3, (s->H + s->Hkv) * s->D, g, run);
}

/* Where a captured layer's weights, scores, projections and head outputs go
 * (each NULL: not kept): run->attentions, run->scores, run->projections and
 * run->head_outputs, whose captured layers follow one another. */
struct layer_slabs {
	float *weights;     /* [B, Hc, L, L] per head, or [B, L, L] MEAN */
	float *scores;      /* [B, Hc, L, L] */
	float *projections; /* [3, B, Hc, L, D] */
	float *head_outputs; /* [B, Hc, L, D] */
};

/* Attention: out [n, E] = o(attend(rope(qkv(in)))); cap is NULL, or where
 * this layer's weights and scores go. */
static enum attn_status stack_attention(const struct stack_layout *lay,
					const struct attn_stack_run *run,
					const struct attn_block *blk, const float *in, float *out,
					float *ws, const struct layer_slabs *cap,
					struct attn_error *err)
{
	float *slab = cap ? cap->weights : NULL, *s_slab = cap ? cap->scores : NULL;
	const struct attn_stack *s = run->stack;
	float *qkv = ws + lay->qkv, *ctx = ws + lay->ctx;
	size_t col = 0, L = run->L, W3 = lay->W3;
	struct attn_sdpa core = lay->core;
	enum attn_status st;

	for (size_t i = 0; i < blk->n_qkv; i++) { /* project: columns of qkv, in order */
		run_linear(run, qkv + col, W3, in, s->E, lay->n, &blk->qkv[i]);
		col += blk->qkv[i].out;
	}
	if (s->family == ATTN_FAMILY_LLAMA) { /* rotate the q heads, then the k heads */
		attn_rope_table_rows(qkv, L * W3, run->B, W3, L, s->H, s->D, s->D, s->inv_freq,
				     s->rope_attention_scaling);
		attn_rope_table_rows(qkv + s->H * s->D, L * W3, run->B, W3, L, s->Hkv, s->D, s->D,
				     s->inv_freq, s->rope_attention_scaling);
	}
	core.mask.window = blk->full_attention ? 0 : s->window;
	core.q.data = qkv;
	core.k.data = qkv + s->H * s->D;
	core.v.data = qkv + (s->H + s->Hkv) * s->D;
	core.out.data = ctx;
	core.weights_mode = slab ? ATTN_WEIGHTS_PER_HEAD : ATTN_WEIGHTS_NONE;
	core.weights = slab == NULL ? NULL : lay->scratch ? ws + lay->attw : slab;
	core.scores_view = s_slab ? ATTN_SCORES_MASKED : ATTN_SCORES_NONE;
	core.scores = s_slab == NULL ? NULL : lay->s_scratch ? ws + lay->atts : s_slab;
	st = attn_sdpa_forward(&core, ws + lay->sdpa, lay->sdpa_bytes, err);
	if (st != ATTN_OK)
		return st;
	if (slab && lay->scratch)
		capture_heads(slab, ws + lay->attw, run, run->weights_mode);
	if (s_slab && lay->s_scratch)
		capture_heads(s_slab, ws + lay->atts, run, ATTN_WEIGHTS_PER_HEAD);
	if (cap && cap->projections)
		capture_projections(cap->projections, qkv, W3, run);
	if (cap && cap->head_outputs) /* from ctx [B, L, H D], the heads joined */
		gather_heads(cap->head_outputs, ctx, s->H * s->D, 0, 1, run);
	run_linear(run, out, s->E, ctx, s->H * s->D, lay->n, &blk->o);
	return ATTN_OK;
}

/* MLP: out [n, E] = down(act(up(in))), llama down(act(gate(in)) * up(in)). */
static void stack_mlp(const struct stack_layout *lay, const struct attn_stack_run *run,
		      const struct attn_block *blk, const float *in, float *out, float *ws)
{
	const struct attn_stack *s = run->stack;
	float *up = ws + lay->up, *hid = up;

	run_linear(run, up, s->F, in, s->E, lay->n, &blk->up);
	if (blk->gate.w) {
		hid = ws + lay->gate;
		run_linear(run, hid, s->F, in, s->E, lay->n, &blk->gate);
	}
	rows_act(run, up, blk->gate.w ? hid : NULL, lay->n);
	run_linear(run, out, s->E, hid, s->F, lay->n, &blk->down);
}

/* One layer on x, pre-norm (gpt2, llama) or post-norm (bert). */
static enum attn_status stack_layer(const struct stack_layout *lay,
				    const struct attn_stack_run *run,
				    const struct attn_block *blk, float *ws,
				    const struct layer_slabs *cap, struct attn_error *err)
{
	const struct attn_stack *s = run->stack;
	float *x = ws + lay->x, *h = ws + lay->h;
	size_t E = s->E;
	enum attn_status st;

	if (s->family == ATTN_FAMILY_BERT) {
		st = stack_attention(lay, run, blk, x, h, ws, cap, err);
		if (st != ATTN_OK)
			return st;
		rows_add(run, h, x, lay->n, E);
		rows_norm(run, &blk->norm1, x, h, lay->n);
		stack_mlp(lay, run, blk, x, h, ws);
		rows_add(run, h, x, lay->n, E);
		rows_norm(run, &blk->norm2, x, h, lay->n);
		return ATTN_OK;
	}
	rows_norm(run, &blk->norm1, h, x, lay->n);
	st = stack_attention(lay, run, blk, h, h, ws, cap, err);
	if (st != ATTN_OK)
		return st;
	rows_add(run, x, h, lay->n, E);
	rows_norm(run, &blk->norm2, h, x, lay->n);
	stack_mlp(lay, run, blk, h, h, ws);
	rows_add(run, x, h, lay->n, E);
	return ATTN_OK;
}

enum attn_status attn_stack_forward(const struct attn_stack_run *run, void *ws, size_t ws_bytes,
				    struct attn_error *err)
{
	struct stack_layout lay;
	const struct attn_stack *s;
	float *base = ws;
	struct layer_slabs cap;
	enum attn_status st = stack_plan(&lay, run, err);

	if (st == ATTN_OK)
		st = stack_check_outputs(run, err);
	if (st != ATTN_OK)
		return st;
	cap.weights = stack_weights_captured(run) ? run->attentions : NULL;
	cap.scores = stack_scores_captured(run) ? run->scores : NULL;
	cap.projections = stack_projections_captured(run) ? run->projections : NULL;
	cap.head_outputs = stack_head_outputs_captured(run) ? run->head_outputs : NULL;
	if (ws == NULL || ws_bytes < lay.total * sizeof(float))
		return attn_fail(err, ATTN_ERR_WORKSPACE, "workspace", 0,
				 "%zu bytes given, %zu needed", ws_bytes, lay.total * sizeof(float));
	s = run->stack;
	stack_embed(run, base + lay.x);
	for (size_t l = 0; l <= run->last_layer; l++) {
		int keep = stack_captured(run, l);

		st = attn_cancel_check(run->cancel, err); /* before each layer, and after the last */
		if (st == ATTN_OK)
			st = stack_layer(&lay, run, &s->blocks[l], base, keep ? &cap : NULL, err);
		if (st == ATTN_OK)
			st = stack_check_hidden(run, base + lay.x, lay.n, l, err);
		if (st != ATTN_OK)
			return st;
		if (keep && cap.weights)
			cap.weights += lay.slab;
		if (keep && cap.scores)
			cap.scores += lay.s_slab;
		if (keep && cap.projections)
			cap.projections += lay.p_slab;
		if (keep && cap.head_outputs)
			cap.head_outputs += lay.o_slab;
	}
	st = attn_cancel_check(run->cancel, err);
	if (st != ATTN_OK)
		return st;
	if (run->out && run->last_layer + 1 == s->n_layers) {
		rows_norm(run, &s->final_norm, run->out, base + lay.x, lay.n);
		return stack_check_hidden(run, run->out, lay.n, s->n_layers, err);
	}
	if (run->out)
		memcpy(run->out, base + lay.x, lay.n * s->E * sizeof(float));
	return ATTN_OK;
}

double attn_stack_flops(const struct attn_stack_run *run)
{
	const struct attn_stack *s = run->stack;
	double rows = (double)run->B * (double)run->L, total = 0;

	for (size_t l = 0; l <= run->last_layer && l < s->n_layers; l++) {
		const struct attn_block *blk = &s->blocks[l];
		double maps = (double)blk->o.in * blk->o.out + (double)blk->up.in * blk->up.out +
			      (double)blk->down.in * blk->down.out;

		for (size_t i = 0; i < blk->n_qkv; i++)
			maps += (double)blk->qkv[i].in * blk->qkv[i].out;
		if (blk->gate.w)
			maps += (double)blk->gate.in * blk->gate.out;
		total += 2.0 * rows * maps +
			 4.0 * rows * (double)run->L * (double)s->H * (double)s->D;
	}
	return total;
}
