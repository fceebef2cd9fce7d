/*
 * stack_ref.c: the naive twin of stack.c. The same blocks (stack.h) as plain
 * loops with double sums: every linear map element by element (honoring
 * in_major), attention with an explicit mask and softmax per query row (its
 * masked scores kept when they are captured), RoPE written out again. It
 * allocates its own scratch, all in one block freed before it returns, and
 * shares only the checks and the norm twins (norm.h).
 */
#include "stack.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "activation.h"
#include "norm.h"
#include "sizes.h"
#include "stack_check.h"

struct ref_bufs {
	float *x, *h;                         /* [B, L, E] each (stack.c's layout) */
	float *qkv;                           /* [B, L, (H + 2 Hkv) D] */
	float *ctx;                           /* [B, L, H D] */
	float *up, *gate;                     /* [B, L, F] each (gate used by llama only) */
	float *attw;                          /* [B, H, L, L] */
	float *atts;                          /* [B, H, L, L] masked scores, when captured */
	double *p;                            /* [L] one row of scores */
	size_t n, W3;
};

/* out [n, lin->out] (rows ld_out apart) = x [n, lin->in] (rows ld_x apart) W^T + b */
static void ref_linear(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		       const struct attn_linear *lin)
{
	for (size_t r = 0; r < n; r++)
		for (size_t o = 0; o < lin->out; o++) {
			double acc = lin->b ? lin->b[o] : 0.0;

			for (size_t i = 0; i < lin->in; i++) {
				/* W[o, i], or W[i, o] when stored in-major */
				float w = lin->in_major ? lin->w[i * lin->out + o]
							: lin->w[o * lin->in + i];

				acc += (double)x[r * ld_x + i] * w;
			}
			out[r * ld_out + o] = (float)acc;
		}
}

static void ref_norm(const struct attn_stack *s, const struct attn_norm *nm, float *out,
		     const float *x, size_t n)
{
	if (nm->w == NULL)
		memmove(out, x, n * s->E * sizeof(float));
	else if (s->norm_kind == ATTN_NORM_RMS)
		norm_rms_rows_ref(out, x, n, s->E, nm->w, nm->b, s->norm_eps);
	else
		norm_layer_rows_ref(out, x, n, s->E, nm->w, nm->b, s->norm_eps);
}

/* Row r's position: r's index in its item, or RoBERTa's
 * create_position_ids_from_input_ids, counted afresh: pad_id for a pad id,
 * else pad_id + the non-pad ids of the item up to and including r. */
static size_t ref_position(const struct attn_stack_run *run, size_t r)
{
	const struct attn_stack *s = run->stack;
	size_t l = r % run->L, n = 0;

	if (!s->positions_from_ids)
		return l;
	if (run->ids[r] == (int64_t)s->pad_id)
		return s->pad_id;
	for (size_t k = r - l; k <= r; k++)
		n += run->ids[k] != (int64_t)s->pad_id;
	return s->pad_id + n;
}

static void ref_embed(const struct attn_stack_run *run, float *x)
{
	const struct attn_stack *s = run->stack;

	for (size_t r = 0; r < run->B * run->L; r++) {
		size_t l = ref_position(run, r);
		size_t type = run->type_ids ? (size_t)run->type_ids[r] : 0;

		for (size_t e = 0; e < s->E; e++) {
			float v = s->wte[(size_t)run->ids[r] * s->E + e];

			if (s->family == ATTN_FAMILY_BERT)
				v += s->wtt[type * s->E + e];
			if (s->family != ATTN_FAMILY_LLAMA)
				v += s->wpe[l * s->E + e];
			x[r * s->E + e] = v;
		}
	}
	ref_norm(s, &s->emb_norm, x, x, run->B * run->L);
}

/* RoPE, half-split, on `heads` heads starting at column c0 of each qkv row. */
static void ref_rope(const struct attn_stack_run *run, float *qkv, size_t W3, size_t c0,
		     size_t heads)
{
	const struct attn_stack *s = run->stack;
	size_t half = s->D / 2;
	float a = s->rope_attention_scaling != 0.0f ? s->rope_attention_scaling : 1.0f;

	for (size_t r = 0; r < run->B * run->L; r++)
		for (size_t h = 0; h < heads; h++)
			for (size_t i = 0; i < half; i++) {
				float angle = s->inv_freq[i] * (float)(r % run->L);
				float c = cosf(angle) * a, sn = sinf(angle) * a;
				float *v = qkv + r * W3 + c0 + h * s->D;
				float x1 = v[i], x2 = v[i + half];

				v[i] = x1 * c - x2 * sn;
				v[i + half] = x2 * c + x1 * sn;
			}
}

/* Whether query i of an item of length len sees key j (stack.h's masks),
 * with the sliding window `window` (0: none) of the layer. */
static int ref_visible(const struct attn_stack *s, size_t window, size_t i, size_t j, size_t len)
{
	int causal = s->family != ATTN_FAMILY_BERT;

	if (j >= len || (causal && j > i))
		return 0;
	if (window > 0 && (j + window <= i || (!causal && j >= i + window)))
		return 0;
	return 1;
}

/* One (b, h, i) row: attw row = softmax(scores), ctx row = attw row V. */
static void ref_attend_row(const struct attn_stack_run *run, struct ref_bufs *rb, size_t window,
			   size_t b, size_t h, size_t i)
{
	const struct attn_stack *s = run->stack;
	size_t L = run->L, D = s->D, len = run->lengths ? run->lengths[b] : L;
	size_t kvh = h / (s->H / s->Hkv);
	const float *q = rb->qkv + (b * L + i) * rb->W3 + h * D;
	float *w = rb->attw + ((b * s->H + h) * L + i) * L;
	double scale = s->scale != 0.0f ? s->scale : 1.0 / sqrt((double)D), mx = -INFINITY;
	double sum = 0;

	for (size_t j = 0; j < L; j++) { /* pass 1: masked scores, their max */
		const float *k = rb->qkv + (b * L + j) * rb->W3 + (s->H + kvh) * D;
		double dot = 0;

		for (size_t d = 0; d < D; d++)
			dot += (double)q[d] * k[d];
		rb->p[j] = ref_visible(s, window, i, j, len) ? dot * scale : -INFINITY;
		mx = rb->p[j] > mx ? rb->p[j] : mx;
		if (rb->atts) /* seek to atts[b, h, i, j] */
			rb->atts[((b * s->H + h) * L + i) * L + j] = (float)rb->p[j];
	}
	for (size_t j = 0; j < L; j++) { /* pass 2: exp and sum (no visible key: zeros) */
		rb->p[j] = mx == -INFINITY ? 0.0 : exp(rb->p[j] - mx);
		sum += rb->p[j];
	}
	for (size_t j = 0; j < L; j++)
		w[j] = (float)(sum > 0 ? rb->p[j] / sum : 0.0);
	for (size_t d = 0; d < D; d++) { /* pass 3: the row of ctx */
		double acc = 0;

		for (size_t j = 0; j < L; j++)
			acc += (double)w[j] *
			       rb->qkv[(b * L + j) * rb->W3 + (s->H + s->Hkv + kvh) * D + d];
		rb->ctx[(b * L + i) * s->H * D + h * D + d] = (float)acc;
	}
}

/* The captured heads, or with mode MEAN their mean, of attw into slab. */
static void ref_capture(const struct attn_stack_run *run, const float *attw, float *slab,
			enum attn_weights_mode mode)
{
	size_t H = run->stack->H, Hc = stack_n_heads(run), LL = run->L * run->L;

	for (size_t b = 0; b < run->B; b++)
		for (size_t k = 0; k < LL; k++) {
			double mean = 0;

			for (size_t i = 0; i < Hc; i++) {
				size_t h = run->heads ? run->heads[i] : i;
				float v = attw[(b * H + h) * LL + k];

				if (mode == ATTN_WEIGHTS_PER_HEAD)
					slab[(b * Hc + i) * LL + k] = v;
				mean += v;
			}
			if (mode == ATTN_WEIGHTS_MEAN)
				slab[b * LL + k] = (float)(mean / (double)Hc);
		}
}

/* Where a captured layer's outputs go, each NULL when not kept. */
struct ref_slabs {
	float *weights;     /* [B, Hc, L, L] or [B, L, L] */
	float *scores;      /* [B, Hc, L, L] */
	float *projections; /* [3, B, Hc, L, D] */
	float *head_outputs; /* [B, Hc, L, D] */
};

/* out [B, Hc, L, D]: element by element, for captured head h the D columns
 * of head first + h / group of src [B, L, ld] (group 1: its own head; H /
 * Hkv: the key head it reads). */
static void ref_gather(const struct attn_stack_run *run, const float *src, size_t ld,
		       size_t first, size_t group, float *out)
{
	size_t Hc = stack_n_heads(run), D = run->stack->D, k = 0;

	for (size_t b = 0; b < run->B; b++)
		for (size_t i = 0; i < Hc; i++) {
			size_t h = run->heads ? run->heads[i] : i, head = first + h / group;

			for (size_t l = 0; l < run->L; l++)
				for (size_t d = 0; d < D; d++)
					out[k++] = src[(b * run->L + l) * ld + head * D + d];
		}
}

/* p [3, B, Hc, L, D]: q of captured head h, k and v of key head
 * h / (H / Hkv), read from qkv [B, L, W3] after RoPE. */
static void ref_capture_projections(const struct attn_stack_run *run, const struct ref_bufs *rb,
				    float *p)
{
	const struct attn_stack *s = run->stack;
	size_t part = run->B * stack_n_heads(run) * run->L * s->D, g = s->H / s->Hkv;

	ref_gather(run, rb->qkv, rb->W3, 0, 1, p);
	ref_gather(run, rb->qkv, rb->W3, s->H, g, p + part);
	ref_gather(run, rb->qkv, rb->W3, s->H + s->Hkv, g, p + 2 * part);
}

static void ref_attention(const struct attn_stack_run *run, const struct attn_block *blk,
			  struct ref_bufs *rb, const float *in, float *out,
			  const struct ref_slabs *cap)
{
	float *slab = cap ? cap->weights : NULL, *s_slab = cap ? cap->scores : NULL;
	const struct attn_stack *s = run->stack;
	size_t col = 0, window = blk->full_attention ? 0 : s->window;

	for (size_t i = 0; i < blk->n_qkv; i++) {
		ref_linear(rb->qkv + col, rb->W3, in, s->E, rb->n, &blk->qkv[i]);
		col += blk->qkv[i].out;
	}
	if (s->family == ATTN_FAMILY_LLAMA) {
		ref_rope(run, rb->qkv, rb->W3, 0, s->H);
		ref_rope(run, rb->qkv, rb->W3, s->H * s->D, s->Hkv);
	}
	for (size_t b = 0; b < run->B; b++)
		for (size_t h = 0; h < s->H; h++)
			for (size_t i = 0; i < run->L; i++)
				ref_attend_row(run, rb, window, b, h, i);
	if (slab)
		ref_capture(run, rb->attw, slab, run->weights_mode);
	if (s_slab)
		ref_capture(run, rb->atts, s_slab, ATTN_WEIGHTS_PER_HEAD);
	if (cap && cap->projections)
		ref_capture_projections(run, rb, cap->projections);
	if (cap && cap->head_outputs) /* captured head h's columns of ctx [B, L, H D] */
		ref_gather(run, rb->ctx, s->H * s->D, 0, 1, cap->head_outputs);
	ref_linear(out, s->E, rb->ctx, s->H * s->D, rb->n, &blk->o);
}

static void ref_mlp(const struct attn_stack_run *run, const struct attn_block *blk,
		    struct ref_bufs *rb, const float *in, float *out)
{
	const struct attn_stack *s = run->stack;
	size_t m = rb->n * s->F;

	ref_linear(rb->up, s->F, in, s->E, rb->n, &blk->up);
	if (blk->gate.w) {
		ref_linear(rb->gate, s->F, in, s->E, rb->n, &blk->gate);
		for (size_t k = 0; k < m; k++)
			rb->up[k] = act_one(s->act, rb->gate[k]) * rb->up[k];
	} else {
		for (size_t k = 0; k < m; k++)
			rb->up[k] = act_one(s->act, rb->up[k]);
	}
	ref_linear(out, s->E, rb->up, s->F, rb->n, &blk->down);
}

static void ref_layer(const struct attn_stack_run *run, const struct attn_block *blk,
		      struct ref_bufs *rb, const struct ref_slabs *cap)
{
	const struct attn_stack *s = run->stack;
	size_t m = rb->n * s->E;

	if (s->family == ATTN_FAMILY_BERT) {
		ref_attention(run, blk, rb, rb->x, rb->h, cap);
		for (size_t k = 0; k < m; k++)
			rb->h[k] += rb->x[k];
		ref_norm(s, &blk->norm1, rb->x, rb->h, rb->n);
		ref_mlp(run, blk, rb, rb->x, rb->h);
		for (size_t k = 0; k < m; k++)
			rb->h[k] += rb->x[k];
		ref_norm(s, &blk->norm2, rb->x, rb->h, rb->n);
		return;
	}
	ref_norm(s, &blk->norm1, rb->h, rb->x, rb->n);
	ref_attention(run, blk, rb, rb->h, rb->h, cap);
	for (size_t k = 0; k < m; k++)
		rb->x[k] += rb->h[k];
	ref_norm(s, &blk->norm2, rb->h, rb->x, rb->n);
	ref_mlp(run, blk, rb, rb->h, rb->h);
	for (size_t k = 0; k < m; k++)
		rb->x[k] += rb->h[k];
}

/* One allocation for every buffer, p's L doubles first; NULL when it fails
 * or its size overflows. */
static void *ref_alloc(struct ref_bufs *rb, const struct attn_stack_run *run)
{
	const struct attn_stack *s = run->stack;
	size_t n = rb->n, L = run->L, sizes[8], total = 2 * L;
	float **dst[8] = { &rb->x,   &rb->h,	&rb->qkv,  &rb->ctx,
			   &rb->up,  &rb->gate, &rb->attw, &rb->atts };
	float *block;
	int bad = size_mul(&sizes[0], n, s->E) || size_mul(&sizes[1], n, s->E) ||
		  size_mul(&sizes[2], n, rb->W3) || size_mul3(&sizes[3], n, s->H, s->D) ||
		  size_mul(&sizes[4], n, s->F) || size_mul(&sizes[5], n, s->F) ||
		  size_mul4(&sizes[6], run->B, s->H, L, L);

	sizes[7] = stack_scores_captured(run) ? sizes[6] : 0;
	for (size_t i = 0; !bad && i < 8; i++)
		bad = size_add(&total, total, sizes[i]);
	if (bad || size_mul(&total, total, sizeof(float)))
		return NULL;
	block = malloc(total);
	if (block == NULL)
		return NULL;
	rb->p = (double *)(void *)block;
	block += 2 * L;
	for (size_t i = 0; i < 8; i++) {
		*dst[i] = sizes[i] ? block : NULL;
		block += sizes[i];
	}
	return rb->p;
}

enum attn_status attn_stack_forward_ref(const struct attn_stack_run *run,
					struct attn_error *err)
{
	struct ref_bufs rb;
	size_t bytes, per = 0, s_per = 0, p_per = 0, o_per = 0;
	struct ref_slabs cap;
	void *block;
	enum attn_status st = attn_stack_workspace(run, &bytes, err); /* the same checks */
	const struct attn_stack *s;

	if (st == ATTN_OK)
		st = stack_check_outputs(run, err);
	if (st != ATTN_OK)
		return st;
	s = run->stack;
	memset(&rb, 0, sizeof(rb));
	rb.n = run->B * run->L;
	rb.W3 = (s->H + 2 * s->Hkv) * s->D;
	block = ref_alloc(&rb, run);
	if (block == NULL)
		return attn_fail(err, ATTN_ERR_NOMEM, "workspace", 0, "out of memory");
	ref_embed(run, rb.x);
	cap.weights = stack_weights_captured(run) ? run->attentions : NULL;
	cap.scores = stack_scores_captured(run) ? run->scores : NULL;
	cap.projections = stack_projections_captured(run) ? run->projections : NULL;
	cap.head_outputs = stack_head_outputs_captured(run) ? run->head_outputs : NULL;
	stack_slab_floats(run, &per); /* checked by the workspace's plan */
	stack_score_floats(run, &s_per);
	stack_projection_floats(run, &p_per);
	stack_head_output_floats(run, &o_per);
	for (size_t l = 0; l <= run->last_layer; l++) {
		int keep = stack_captured(run, l);

		ref_layer(run, &s->blocks[l], &rb, keep ? &cap : NULL);
		st = stack_check_hidden(run, rb.x, rb.n, l, err);
		if (st != ATTN_OK)
			break;
		if (keep && cap.weights)
			cap.weights += per;
		if (keep && cap.scores)
			cap.scores += s_per;
		if (keep && cap.projections)
			cap.projections += p_per;
		if (keep && cap.head_outputs)
			cap.head_outputs += o_per;
	}
	if (st == ATTN_OK && run->out && run->last_layer + 1 == s->n_layers) {
		ref_norm(s, &s->final_norm, run->out, rb.x, rb.n);
		st = stack_check_hidden(run, run->out, rb.n, s->n_layers, err);
	} else if (st == ATTN_OK && run->out) {
		memcpy(run->out, rb.x, rb.n * s->E * sizeof(float));
	}
	free(block);
	return st;
}
