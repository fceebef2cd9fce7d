/*
 * mha_stream.c: the layer without weights or scores, streaming over keys.
 *
 * When nobody asks for the [B, H, Lq, Lk] probabilities, K and V need not be
 * held whole either: keys are taken KEY_BLOCK at a time, projected, and folded
 * into every query's running output with an online softmax (Milakov &
 * Gimelshein 2018; the FlashAttention loop, Dao et al. 2022). Memory is
 *   Q          [B, Lq, H D]     in the caller's `out` (dead before out is written)
 *   acc        [B, Lq, H D]     running sum of p V, then the heads' context
 *   run_max, run_sum [B, H, Lq] online softmax state
 *   kv         [B, KEY_BLOCK, 2 Hkv D]  this block's keys and values
 *   per thread: scores [QUERY_BLOCK, KEY_BLOCK] and an input chunk [CHUNK, E]
 * so peak memory is inputs + outputs + one more [B, Lq, E], whatever Lk is.
 *
 * One team of threads runs the phases with barriers between them:
 *   0. Q = (Xq + pe) Wq^T + bq, RoPE        rows split over threads
 *   for each key block:
 *     1. K, V = (Xk + pe) [Wk; Wv]^T + b, RoPE on K   rows split
 *     2. per (batch, query block) task, per head:
 *        S = scale Q K^T; softcap; mask; P = exp(S - m); acc = alpha acc + P V
 *   3. ctx = acc / run_sum; out = ctx Wo^T + bo     rows split
 * Tasks and row shares depend only on t and T; each output element is summed
 * in key order by one thread, so the thread count changes no number.
 */
#include "mha_stream.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

#include "linear.h"
#include "mask.h"
#include "mha_check.h"
#include "sizes.h"
#include "softmax.h"
#include "team.h"

enum {
	/* query rows per task: OpenBLAS packs each key block again for every
	 * call, so taller query blocks amortise it (64 -> 256 measured +14% at
	 * L = 2048); scores [256, 512] floats still fit L2 */
	QUERY_BLOCK = 256,
	KEY_BLOCK = 512,  /* keys per streaming step */
	CHUNK = 64,       /* input rows per projection sgemm when a pe is added */
};

struct stream {
	const struct attn_mha *req;
	struct attn_sdpa core; /* masks, scale, softcap, ALiBi for mask.c */
	const float *xk, *xv;  /* key and value inputs */
	size_t E, H, Hkv, D, qw, kw;
	size_t n_qblocks, kb_max;
	float *q;               /* [B, Lq, qw], in req->out */
	float *acc;             /* [B, Lq, qw] */
	float *run_max, *run_sum; /* [B, H, Lq] */
	float *kv;              /* [B, kb, 2 kw] for the current block */
	float *scratch;         /* [T, thread_floats] */
	size_t thread_floats;
};

/* The key block of one streaming step: keys [k0, k0 + kb). */
struct key_block {
	size_t k0, kb;
};

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* Floats of the workspace, per layout in the file comment. */
enum attn_status mha_stream_workspace(const struct attn_mha *req, size_t *floats,
				      struct attn_error *err)
{
	const struct attn_model *m = req->model;
	size_t T = req->threads < 1 ? 1 : min_size(req->threads, TEAM_MAX);
	size_t qrows = req->B * req->Lq, kb = min_size(KEY_BLOCK, req->Lk), acc, stats, kv;
	size_t per_thread, total;

	if (size_mul(&acc, qrows, m->H * m->D) != 0 || size_mul3(&stats, 2, qrows, m->H) != 0 ||
	    size_mul3(&kv, req->B, kb, 2 * m->Hkv * m->D) != 0 ||
	    size_add(&per_thread, (size_t)QUERY_BLOCK * kb, (size_t)CHUNK * m->E) != 0 ||
	    size_mul(&per_thread, per_thread, T) != 0 || size_add(&total, acc, stats) != 0 ||
	    size_add(&total, total, kv) != 0 || size_add(&total, total, per_thread) != 0 ||
	    size_add(&total, total, m->H) != 0 || size_mul(&kv, total, sizeof(float)) != 0)
		return attn_fail(err, ATTN_ERR_OVERFLOW, "query", 0,
				 "workspace for B = %zu, Lq = %zu overflows", req->B, req->Lq);
	*floats = total;
	return ATTN_OK;
}

/* Rows [r0, r1) of a [B, L, E] input, with the sinusoidal encoding added when
 * asked, projected by W into out rows (ld_out apart), then rotated (RoPE) when
 * rope is set; chunked so the pe copy needs only [CHUNK, E]. Row r is batch
 * r / L, sequence index r % L. */
static void project_rows(const struct stream *st, float *out, size_t ld_out, const float *x,
			 size_t L, size_t r0, size_t r1, const float *W, const float *bias,
			 size_t width, const double *positions, int rope, float *chunk)
{
	const struct attn_positional *pos = &st->req->pos;
	size_t E = st->E;

	while (r0 < r1) {
		size_t b = r0 / L, l = r0 % L;
		size_t n = min_size(min_size(r1 - r0, L - l), CHUNK); /* one batch item */
		const float *x_rows = x + (b * L + l) * E;

		if (pos->kind == ATTN_POS_SINUSOIDAL) {
			memcpy(chunk, x_rows, n * E * sizeof(float));
			attn_sinusoidal_add(chunk, n, E, l, pos, positions);
			x_rows = chunk;
		}
		linear_rows(out, ld_out, x_rows, E, n, W, bias, width, E);
		if (rope && pos->kind == ATTN_POS_ROPE)
			attn_rope_rows(out, 0, 1, ld_out, n, l, width / st->D, st->D, st->D, pos,
				       positions);
		out += n * ld_out;
		r0 += n;
	}
}

/* Phase 0 for rows [r0, r1) of [B, Lq]: Q, and a fresh online-softmax state. */
static void phase_queries(struct stream *st, size_t r0, size_t r1, float *chunk)
{
	const struct attn_mha *req = st->req;
	const struct attn_model *m = req->model;

	project_rows(st, st->q + r0 * st->qw, st->qw, req->query, req->Lq, r0, r1, m->w_qkv,
		     m->b_qkv, st->qw, req->pos.q_positions, 1, chunk);
	memset(st->acc + r0 * st->qw, 0, (r1 - r0) * st->qw * sizeof(float));
	for (size_t r = r0; r < r1; r++) {
		size_t b = r / req->Lq, i = r % req->Lq;

		for (size_t h = 0; h < st->H; h++) {
			st->run_max[(b * st->H + h) * req->Lq + i] = -INFINITY;
			st->run_sum[(b * st->H + h) * req->Lq + i] = 0.0f;
		}
	}
}

/* Phase 1 for rows [r0, r1) of [B, kb]: this block's K (rotated) and V. */
static void phase_keys(const struct stream *st, struct key_block blk, size_t r0, size_t r1,
		       float *chunk)
{
	const struct attn_mha *req = st->req;
	const struct attn_model *m = req->model;
	const float *Wk = m->w_qkv + st->qw * st->E, *Wv = Wk + st->kw * st->E;
	const float *bk = m->b_qkv ? m->b_qkv + st->qw : NULL;
	const float *bv = m->b_qkv ? bk + st->kw : NULL;
	const double *kpos = mha_k_positions(req);

	while (r0 < r1) {
		size_t b = r0 / blk.kb, jj = r0 % blk.kb, n = min_size(r1 - r0, blk.kb - jj);
		/* the block's row (b, jj) is input row (b, k0 + jj) */
		size_t in_row = b * req->Lk + blk.k0 + jj;
		float *k_rows = st->kv + r0 * 2 * st->kw, *v_rows = k_rows + st->kw;

		project_rows(st, k_rows, 2 * st->kw, st->xk, req->Lk, in_row, in_row + n, Wk, bk,
			     st->kw, kpos, 1, chunk);
		project_rows(st, v_rows, 2 * st->kw, st->xv, req->Lk, in_row, in_row + n, Wv, bv,
			     st->kw, kpos, 0, chunk);
		r0 += n;
	}
}

/* Whether any row i0 .. i0 + m - 1 of batch b sees a key of this block (by
 * causal, window and lengths; the user mask may hide more). */
static int block_visible(const struct stream *st, struct key_block blk, size_t b, size_t i0,
			 size_t m)
{
	for (size_t i = i0; i < i0 + m; i++) {
		size_t lo, hi;

		mask_range(&st->core, b, i, &lo, &hi);
		if (lo < hi && lo < blk.k0 + blk.kb && hi > blk.k0)
			return 1;
	}
	return 0;
}

/* Phase 2 for one head of one task: fold this key block into acc. */
static void fold_head(const struct stream *st, struct key_block blk, float *S, size_t b,
		      size_t h, size_t i0, size_t m)
{
	const struct attn_mha *req = st->req;
	size_t kvh = h / (st->H / st->Hkv), kb = blk.kb, Lq = req->Lq;
	/* seek to q[b, i0, h, :], acc[b, i0, h, :], k[b, 0, kvh, :], v[b, 0, kvh, :] */
	const float *q_bih = st->q + (b * Lq + i0) * st->qw + h * st->D;
	float *acc_bih = st->acc + (b * Lq + i0) * st->qw + h * st->D;
	const float *k_bh = st->kv + b * kb * 2 * st->kw + kvh * st->D;
	const float *v_bh = k_bh + st->kw;
	float scale = st->core.scale != 0.0f ? st->core.scale : (float)(1.0 / sqrt((double)st->D));

	/* S = scale * Q_blk K_blk^T, [m, kb] */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)kb, (int)st->D, scale,
		    q_bih, (int)st->qw, k_bh, (int)(2 * st->kw), 0.0f, S, (int)kb);
	for (size_t r = 0; r < m; r++) {
		float *s_row = S + r * kb, *acc_row = acc_bih + r * st->qw;
		size_t cell = (b * st->H + h) * Lq + i0 + r, lo, hi;
		float alpha;

		if (req->softcap > 0.0f)
			for (size_t j = 0; j < kb; j++)
				s_row[j] = req->softcap * tanhf(s_row[j] / req->softcap);
		mask_apply_span(s_row, &st->core, b, h, i0 + r, blk.k0, kb, &lo, &hi);
		alpha = softmax_online(s_row, kb, lo, hi, &st->run_max[cell], &st->run_sum[cell]);
		if (alpha != 1.0f)
			for (size_t d = 0; d < st->D; d++)
				acc_row[d] *= alpha;
	}
	/* acc_blk += P V_blk, [m, D] */
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)st->D, (int)kb, 1.0f,
		    S, (int)kb, v_bh, (int)(2 * st->kw), 1.0f, acc_bih, (int)st->qw);
}

static void phase_fold(const struct stream *st, struct key_block blk, size_t t, size_t T,
		       float *S)
{
	size_t n_tasks = st->req->B * st->n_qblocks;

	for (size_t task = t; task < n_tasks; task += T) {
		size_t b = task / st->n_qblocks, i0 = (task % st->n_qblocks) * QUERY_BLOCK;
		size_t m = min_size(QUERY_BLOCK, st->req->Lq - i0);

		if (!block_visible(st, blk, b, i0, m))
			continue;
		for (size_t h = 0; h < st->H; h++)
			fold_head(st, blk, S, b, h, i0, m);
	}
}

/* Phase 3 for rows [r0, r1): normalise (rows that saw no key stay 0), project. */
static void phase_output(struct stream *st, size_t r0, size_t r1)
{
	const struct attn_mha *req = st->req;
	const struct attn_model *m = req->model;

	for (size_t r = r0; r < r1; r++) {
		size_t b = r / req->Lq, i = r % req->Lq;

		for (size_t h = 0; h < st->H; h++) {
			float l = st->run_sum[(b * st->H + h) * req->Lq + i];
			float inv = l > 0.0f ? 1.0f / l : 0.0f;
			float *ctx = st->acc + r * st->qw + h * st->D;

			for (size_t d = 0; d < st->D; d++)
				ctx[d] *= inv;
		}
	}
	linear_rows(req->out + r0 * st->E, st->E, st->acc + r0 * st->qw, st->qw, r1 - r0, m->w_o,
		    m->b_o, st->E, st->qw);
}

static void stream_member(void *arg, size_t t, size_t T, struct team *team)
{
	struct stream *st = arg;
	const struct attn_mha *req = st->req;
	float *S = st->scratch + t * st->thread_floats;
	float *chunk = S + (size_t)QUERY_BLOCK * st->kb_max;
	size_t r0, r1, q0, q1;

	team_share(req->B * req->Lq, t, T, &q0, &q1);
	phase_queries(st, q0, q1, chunk);
	for (size_t k0 = 0; k0 < req->Lk; k0 += KEY_BLOCK) {
		struct key_block blk = { k0, min_size(KEY_BLOCK, req->Lk - k0) };

		team_barrier(team); /* Q ready, and every task done with the last block */
		team_share(req->B * blk.kb, t, T, &r0, &r1);
		phase_keys(st, blk, r0, r1, chunk);
		team_barrier(team); /* this block's K and V ready */
		phase_fold(st, blk, t, T, S);
	}
	team_barrier(team);
	phase_output(st, q0, q1);
}

enum attn_status mha_stream_forward(const struct attn_mha *req, const struct attn_sdpa *core,
				    float *ws)
{
	const struct attn_model *m = req->model;
	struct stream st;
	size_t qrows = req->B * req->Lq;

	memset(&st, 0, sizeof(st));
	st.req = req;
	st.core = *core;
	st.E = m->E;
	st.H = m->H;
	st.Hkv = m->Hkv;
	st.D = m->D;
	st.qw = m->H * m->D;
	st.kw = m->Hkv * m->D;
	st.xk = req->key ? req->key : req->query;
	st.xv = req->value ? req->value : st.xk;
	st.n_qblocks = (req->Lq + QUERY_BLOCK - 1) / QUERY_BLOCK;
	st.kb_max = min_size(KEY_BLOCK, req->Lk);
	st.q = req->out;
	st.acc = ws;
	st.run_max = st.acc + qrows * st.qw;
	st.run_sum = st.run_max + qrows * st.H;
	st.kv = st.run_sum + qrows * st.H;
	st.scratch = st.kv + req->B * st.kb_max * 2 * st.kw;
	st.thread_floats = (size_t)QUERY_BLOCK * st.kb_max + (size_t)CHUNK * st.E;
	if (req->pos.kind == ATTN_POS_ALIBI) {
		float *slopes = st.scratch + min_size(req->threads < 1 ? 1 : req->threads, TEAM_MAX) *
						     st.thread_floats;

		attn_alibi_slopes(slopes, m->H);
		st.core.alibi_slopes = slopes;
	}
	team_run(req->threads, stream_member, &st);
	return ATTN_OK;
}
