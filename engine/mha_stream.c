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
 *   kv         [G, kb, 2 Hkv D]  this block's keys and values, G batch items
 *   kt, vh     [G, Hkv, D, ldk], [G, Hkv, kb, D]  the same per head, laid out
 *              for tile.h's kernels (only when they run here)
 * where kb = min(Lk, KEY_BLOCK) and G = KEY_ROWS / kb (at least 1, at most B)
 *   per thread: scores [SUB_ROWS, ldk] and their lane maxima
 *               [SUB_ROWS, TILE_COLS] (tiles), or [QUERY_BLOCK, kb] (sgemm),
 *               and an input chunk [CHUNK, E]
 * so peak memory is inputs + outputs + one more [B, Lq, E], whatever Lk is.
 *
 * One team of threads runs the phases with barriers between them:
 *   0. Q = (Xq + pe) Wq^T + bq, RoPE            rows split over threads
 *   for each group of G batch items, for each key block (kv stays in cache;
 *   short sequences still make sgemms of KEY_ROWS rows):
 *     1. K, V = (Xk + pe) [Wk; Wv]^T + b, RoPE on K   rows split
 *        then kt, vh per head (tile kernels only)     (item, kv head) split
 *     2. per (item, query block, head) task:
 *        S = scale (Q K^T); softcap; mask; P = exp(S - m); acc = alpha acc + P V
 *        with tile.h's kernels (AVX-512F, D % 16 == 0), else gemm.h's gemm;
 *        the tile kernel hands over each row's max where nothing changes
 *        the scores after it (no softcap, ALiBi or user mask) and the row
 *        sees the whole block, which saves the softmax a pass
 *   3. ctx = acc / run_sum; out = ctx Wo^T + bo     rows split
 * Phases 0 and 1 mark a projection of finite inputs that left float32
 * (overflow), so the call names q, k or v as the whole-row path does.
 * Tasks and row shares depend only on t and T, and each element of acc is
 * summed in key order by one thread, so the attention itself does not depend
 * on the thread count. The cancel flag (cancel.h) is read before each
 * projection tile and each fold task: a thread that sees it skips its work
 * but walks the same loops to the same barriers. The projections split rows by thread, and OpenBLAS
 * may round a row differently with the row count of the call (its Haswell
 * and Zen kernels do, SkylakeX's do not): tests compare thread counts with a
 * tolerance (check_fixtures).
 */
#include "mha_stream.h"

#include <math.h>
#include <string.h>

#include "cancel.h"
#include "gemm.h"
#include "linear.h"
#include "mask.h"
#include "mha_check.h"
#include "sizes.h"
#include "softmax.h"
#include "team.h"
#include "tile.h"

enum {
	/* query rows per task: on the sgemm path OpenBLAS packs the key block
	 * again for every call, so taller query blocks amortise it (64 -> 256
	 * measured +14% at L = 2048); the tile path runs them SUB_ROWS at a time */
	QUERY_BLOCK = 256,
	KEY_BLOCK = 512,  /* keys per streaming step */
	KEY_ROWS = 512,   /* and at least this many key rows when items are short */
	SUB_ROWS = 48,    /* query rows per tile kernel pass: their scores
			   * [48, ldk] stay in L2 beside kt and vh */
	CHUNK = 64,       /* input rows per projection sgemm when a pe is added */
};

_Static_assert(LINEAR_BLOCK % CHUNK == 0, "thread boundaries must fall on the chunk grid");

struct stream {
	const struct attn_mha *req;
	struct attn_sdpa core; /* masks, scale, softcap, ALiBi for mask.c */
	const float *xk, *xv;  /* key and value inputs, each [B, Lk, E] */
	size_t E, H, Hkv, D, qw, kw;
	size_t n_qblocks, kb_max;
	size_t group;           /* G: batch items per streaming step */
	float *q;               /* [B, Lq, qw], in req->out */
	float *acc;             /* [B, Lq, qw] */
	float *run_max, *run_sum; /* [B, H, Lq] */
	float *kv;              /* [G, kb, 2 kw]: the current block of G items */
	float *kt, *vh;         /* [G, Hkv, D, ldk], [G, Hkv, kb_max, D]: the same */
	size_t ldk;             /* tile_ld(kb_max): row stride of kt and scores */
	int simd;               /* tile kernels (tile_simd_available) */
	int plain;              /* no softcap, ALiBi or user mask: S is only scale Q K^T */
	float *scratch;         /* [T, thread_floats] */
	size_t thread_floats;
	atomic_uint overflow;   /* OVERFLOW_Q | _K | _V: a projection left float32 */
};

/* Bits of stream.overflow, in the order the whole-row path checks q, k, v. */
enum {
	OVERFLOW_Q = 1u,
	OVERFLOW_K = 2u,
	OVERFLOW_V = 4u,
};

/* The key block of one streaming step: keys [k0, k0 + kb). */
struct key_block {
	size_t k0, kb;
};

/* Sets bit in st->overflow when one of the n rows (ld apart, width floats
 * each) holds a non-finite value: finite inputs whose projection overflowed
 * float32. Threads mark their own rows; the bits are read after the team. */
static void note_overflow(struct stream *st, const float *rows, size_t n, size_t width,
			  size_t ld, unsigned bit)
{
	for (size_t r = 0; r < n; r++) {
		if (!attn_all_finite(rows + r * ld, width)) {
			atomic_fetch_or_explicit(&st->overflow, bit, memory_order_relaxed);
			return;
		}
	}
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* G of the file comment. */
static size_t items_per_step(size_t B, size_t kb)
{
	size_t g = kb > 0 ? KEY_ROWS / kb : 1;

	return g < 1 ? 1 : min_size(g, B);
}

/* Threads the team is asked for (team_run may start fewer). */
static size_t stream_threads(const struct attn_mha *req)
{
	return req->threads < 1 ? 1 : min_size(req->threads, TEAM_MAX);
}

/* Floats of one thread's scores: [SUB_ROWS, ldk + TILE_COLS] on tiles (with
 * their lane maxima), else [QUERY_BLOCK, kb]. */
static size_t score_floats(int simd, size_t kb)
{
	return simd ? (size_t)SUB_ROWS * (tile_ld(kb) + TILE_COLS) : (size_t)QUERY_BLOCK * kb;
}

/* Floats of the workspace, per layout in the file comment. */
enum attn_status mha_stream_workspace(const struct attn_mha *req, size_t *floats,
				      struct attn_error *err)
{
	const struct attn_model *m = req->model;
	int simd = tile_simd_available(m->D);
	size_t kb = min_size(KEY_BLOCK, req->Lk), G = items_per_step(req->B, kb);
	size_t qrows = req->B * req->Lq, acc, stats, kv, packed = 0, per_thread, total, bytes;

	if (size_mul(&acc, qrows, m->H * m->D) != 0 || size_mul3(&stats, 2, qrows, m->H) != 0 ||
	    size_mul3(&kv, G, kb, 2 * m->Hkv * m->D) != 0 ||
	    (simd && size_mul3(&packed, G * m->Hkv, m->D, tile_ld(kb) + kb) != 0) ||
	    size_add(&per_thread, score_floats(simd, kb), (size_t)CHUNK * m->E) != 0 ||
	    size_mul(&per_thread, per_thread, stream_threads(req)) != 0 ||
	    size_add(&total, acc, stats) != 0 || size_add(&total, total, kv) != 0 ||
	    size_add(&total, total, packed) != 0 || size_add(&total, total, per_thread) != 0 ||
	    size_add(&total, total, m->H) != 0 || size_mul(&bytes, total, sizeof(float)) != 0)
		return attn_fail(err, ATTN_ERR_OVERFLOW, "query", 0,
				 "workspace for B = %zu, Lq = %zu overflows", req->B, req->Lq);
	*floats = total;
	return ATTN_OK;
}

/* Rows [r0, r1) of a [B, L, E] input (row r is batch r / L, sequence index
 * r % L) projected by W into out rows (ld_out apart), then the first
 * rope_width columns rotated (RoPE, when that is the encoding). The rows go
 * to sgemm LINEAR_BLOCK at a time across batch items (linear.h: r0 - grid0
 * is a multiple of it); each call packs W again, so short calls cost. With a
 * sinusoidal encoding they go CHUNK at a time through chunk, where the pe is
 * added, never across an item. */
static void project_rows(const struct stream *st, float *out, size_t ld_out, const float *x,
			 size_t L, size_t grid0, size_t r0, size_t r1, const float *W,
			 const float *bias, size_t width, const double *positions,
			 size_t rope_width, float *chunk)
{
	const struct attn_positional *pos = &st->req->pos;
	size_t E = st->E;

	if (pos->kind != ATTN_POS_SINUSOIDAL)
		linear_rows(out, ld_out, x + r0 * E, E, r1 - r0, W, bias, width, E,
			    st->req->cancel);
	while (r0 < r1) {
		size_t l = r0 % L, n = min_size(r1 - r0, L - l); /* within one batch item */

		if (pos->kind == ATTN_POS_SINUSOIDAL) {
			/* chunks on a grid of CHUNK rows from grid0, which thread
			 * boundaries (LINEAR_BLOCK apart) never cut: the same sgemm
			 * calls for every thread count */
			n = min_size(n, CHUNK - (r0 - grid0) % CHUNK);
			memcpy(chunk, x + r0 * E, n * E * sizeof(float));
			attn_sinusoidal_add(chunk, n, E, l, pos, positions);
			linear_rows(out, ld_out, chunk, E, n, W, bias, width, E, st->req->cancel);
		}
		if (rope_width > 0 && pos->kind == ATTN_POS_ROPE)
			attn_rope_rows(out, 0, 1, ld_out, n, l, rope_width / st->D, st->D, st->D, pos,
				       positions);
		out += n * ld_out;
		r0 += n;
	}
}

static float head_scale(const struct stream *st)
{
	return st->core.scale != 0.0f ? st->core.scale : (float)(1.0 / sqrt((double)st->D));
}

/* Phase 0 for rows [r0, r1) of [B, Lq]: Q and a fresh online-softmax state.
 * Q is not scaled here: the scale goes on each product q . k, as on the
 * whole-row path (attention.c), so both give one answer, and a large scale
 * on a small product does not overflow where the score would not. */
static void phase_queries(struct stream *st, size_t r0, size_t r1, float *chunk)
{
	const struct attn_mha *req = st->req;
	const struct attn_model *m = req->model;
	float *q = st->q + r0 * st->qw;

	project_rows(st, q, st->qw, req->query, req->Lq, 0, r0, r1, m->w_qkv, m->b_qkv, st->qw,
		     req->pos.q_positions, st->qw, chunk);
	if (attn_cancelled(req->cancel))
		return;
	note_overflow(st, q, r1 - r0, st->qw, st->qw, OVERFLOW_Q);
	memset(st->acc + r0 * st->qw, 0, (r1 - r0) * st->qw * sizeof(float));
	for (size_t r = r0; r < r1; r++) {
		size_t b = r / req->Lq, i = r % req->Lq;

		for (size_t h = 0; h < st->H; h++) {
			st->run_max[(b * st->H + h) * req->Lq + i] = -INFINITY;
			st->run_sum[(b * st->H + h) * req->Lq + i] = 0.0f;
		}
	}
}

/* Phase 1 for rows [r0, r1) of [g, kb]: K (rotated) and V of batch items
 * b0 .. b0 + g - 1. The block's row r is input row (b0, k0 + r): with g > 1
 * the block holds all of each item's keys (k0 = 0, kb = Lk), so the rows of
 * consecutive items follow each other in the input as in the block. */
static void phase_keys(struct stream *st, size_t b0, struct key_block blk, size_t r0,
		       size_t r1, float *chunk)
{
	const struct attn_mha *req = st->req;
	const struct attn_model *m = req->model;
	const float *Wk = m->w_qkv + st->qw * st->E, *Wv = Wk + st->kw * st->E;
	const float *bk = m->b_qkv ? m->b_qkv + st->qw : NULL;
	const float *bv = m->b_qkv ? bk + st->kw : NULL;
	const double *kpos = mha_k_positions(req);
	size_t grid0 = b0 * req->Lk + blk.k0, in0 = grid0 + r0, in1 = in0 + (r1 - r0);
	float *k_rows = st->kv + r0 * 2 * st->kw, *v_rows = k_rows + st->kw;

	if (st->xk == st->xv) { /* K and V in one sgemm: [Wk; Wv] are adjacent */
		project_rows(st, k_rows, 2 * st->kw, st->xk, req->Lk, grid0, in0, in1, Wk, bk,
			     2 * st->kw, kpos, st->kw, chunk);
	} else {
		project_rows(st, k_rows, 2 * st->kw, st->xk, req->Lk, grid0, in0, in1, Wk, bk,
			     st->kw, kpos, st->kw, chunk);
		project_rows(st, v_rows, 2 * st->kw, st->xv, req->Lk, grid0, in0, in1, Wv, bv,
			     st->kw, kpos, 0, chunk);
	}
	if (attn_cancelled(req->cancel))
		return;
	note_overflow(st, k_rows, r1 - r0, st->kw, 2 * st->kw, OVERFLOW_K);
	note_overflow(st, v_rows, r1 - r0, st->kw, 2 * st->kw, OVERFLOW_V);
}

/* Phase 1b for (item, kv head) pairs [p0, p1) of [g, Hkv]: kt and vh. */
static void phase_pack(const struct stream *st, struct key_block blk, size_t p0, size_t p1)
{
	for (size_t pair = p0; pair < p1; pair++) {
		size_t gi = pair / st->Hkv, kvh = pair % st->Hkv;
		/* seek to k[gi, 0, kvh, :] */
		const float *k = st->kv + gi * blk.kb * 2 * st->kw + kvh * st->D;

		tile_pack_kt(st->kt + pair * st->D * st->ldk, st->ldk, k, 2 * st->kw, blk.kb, st->D);
		tile_pack_v(st->vh + pair * st->kb_max * st->D, k + st->kw, 2 * st->kw, blk.kb, st->D);
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

/* Softcap, mask and the online softmax on the m score rows of S (lds
 * apart) for queries i0 .., then acc rows scaled by each row's alpha.
 * vmax [m, TILE_COLS], the rows' lane maxima from tile_qk, or NULL. */
static void fold_rows(const struct stream *st, struct key_block blk, float *S, size_t lds,
		      const float *vmax, float *acc_bih, size_t b, size_t h, size_t i0, size_t m)
{
	const struct attn_mha *req = st->req;
	size_t kb = blk.kb;

	for (size_t r = 0; r < m; r++) {
		float *s_row = S + r * lds, *acc_row = acc_bih + r * st->qw;
		size_t cell = (b * st->H + h) * req->Lq + i0 + r, lo, hi;
		float alpha;

		if (req->softcap > 0.0f)
			for (size_t j = 0; j < kb; j++)
				s_row[j] = req->softcap * tanhf(s_row[j] / req->softcap);
		mask_apply_span(s_row, &st->core, b, h, i0 + r, blk.k0, kb, &lo, &hi);
		if (vmax != NULL && lo == 0 && hi == kb)
			alpha = softmax_online_known(s_row, kb, tile_row_max(vmax + r * TILE_COLS),
						     &st->run_max[cell], &st->run_sum[cell]);
		else
			alpha = softmax_online(s_row, kb, lo, hi, &st->run_max[cell],
					       &st->run_sum[cell]);
		if (alpha != 1.0f)
			for (size_t d = 0; d < st->D; d++)
				acc_row[d] *= alpha;
	}
}

/* Phase 2 for one head of one task: fold this key block into acc (sgemm). */
static void fold_head_sgemm(const struct stream *st, struct key_block blk, float *S, size_t b,
			    size_t gi, size_t h, size_t i0, size_t m)
{
	size_t kvh = h / (st->H / st->Hkv), kb = blk.kb, Lq = st->req->Lq;
	/* seek to q[b, i0, h, :], acc[b, i0, h, :], k[gi, 0, kvh, :], v[gi, 0, kvh, :] */
	const float *q_bih = st->q + (b * Lq + i0) * st->qw + h * st->D;
	float *acc_bih = st->acc + (b * Lq + i0) * st->qw + h * st->D;
	const float *k_bh = st->kv + gi * kb * 2 * st->kw + kvh * st->D;
	const float *v_bh = k_bh + st->kw;

	/* S = scale Q_blk K_blk^T, [m, kb] */
	gemm(1, m, kb, st->D, head_scale(st), q_bih, st->qw, k_bh, 2 * st->kw, 0.0f, S, kb);
	fold_rows(st, blk, S, kb, NULL, acc_bih, b, h, i0, m);
	/* acc_blk += P V_blk, [m, D] */
	gemm(0, m, st->D, kb, 1.0f, S, kb, v_bh, 2 * st->kw, 1.0f, acc_bih, st->qw);
}

/* The same with tile.h's kernels on kt and vh, SUB_ROWS queries at a time. */
static void fold_head_tiles(const struct stream *st, struct key_block blk, float *S, size_t b,
			    size_t gi, size_t h, size_t i0, size_t m)
{
	size_t kvh = h / (st->H / st->Hkv), Lq = st->req->Lq, pair = gi * st->Hkv + kvh;
	/* seek to kt[gi, kvh], vh[gi, kvh] */
	const float *kt_bh = st->kt + pair * st->D * st->ldk;
	const float *vh_bh = st->vh + pair * st->kb_max * st->D;
	/* seek past the scores [SUB_ROWS, ldk]: the lane maxima, when of use */
	float *vmax = st->plain ? S + (size_t)SUB_ROWS * st->ldk : NULL;

	for (size_t r0 = 0; r0 < m; r0 += SUB_ROWS) {
		size_t n = min_size(SUB_ROWS, m - r0);
		/* seek to q[b, i0 + r0, h, :], acc[b, i0 + r0, h, :] */
		const float *q_bih = st->q + (b * Lq + i0 + r0) * st->qw + h * st->D;
		float *acc_bih = st->acc + (b * Lq + i0 + r0) * st->qw + h * st->D;

		tile_qk(S, st->ldk, vmax, q_bih, st->qw, kt_bh, st->ldk, n, blk.kb, st->D,
			head_scale(st), 1);
		fold_rows(st, blk, S, st->ldk, vmax, acc_bih, b, h, i0 + r0, n);
		tile_pv(acc_bih, st->qw, S, st->ldk, vh_bh, n, blk.kb, st->D, 1);
	}
}

/* Phase 2 for batch items b0 .. b0 + g - 1: tasks (item, query block, head),
 * dealt round-robin (a short sequence still has H tasks for the threads). */
static void phase_fold(const struct stream *st, size_t b0, size_t g, struct key_block blk,
		       size_t t, size_t T, float *S)
{
	size_t per_item = st->n_qblocks * st->H;

	for (size_t task = t; task < g * per_item && !attn_cancelled(st->req->cancel); task += T) {
		size_t gi = task / per_item, h = task % st->H;
		size_t i0 = task % per_item / st->H * QUERY_BLOCK;
		size_t m = min_size(QUERY_BLOCK, st->req->Lq - i0);

		if (!block_visible(st, blk, b0 + gi, i0, m))
			continue;
		if (st->simd)
			fold_head_tiles(st, blk, S, b0 + gi, gi, h, i0, m);
		else
			fold_head_sgemm(st, blk, S, b0 + gi, gi, h, i0, m);
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
			size_t cell = (b * st->H + h) * req->Lq + i;
			float l = st->run_sum[cell];
			float inv = l > 0.0f ? 1.0f / l : 0.0f;

			/* no block saw a finite score, yet the mask leaves a key
			 * open: the scores overflowed to -inf (mask.h), so NaN */
			if (st->run_max[cell] == -INFINITY && mask_row_open(&st->core, b, h, i))
				inv = NAN;
			float *ctx = st->acc + r * st->qw + h * st->D;

			for (size_t d = 0; d < st->D; d++)
				ctx[d] *= inv;
		}
	}
	linear_rows(req->out + r0 * st->E, st->E, st->acc + r0 * st->qw, st->qw, r1 - r0, m->w_o,
		    m->b_o, st->E, st->qw, req->cancel);
}

static void stream_member(void *arg, size_t t, size_t T, struct team *team)
{
	struct stream *st = arg;
	const struct attn_mha *req = st->req;
	float *S = st->scratch + t * st->thread_floats;
	float *chunk = S + score_floats(st->simd, st->kb_max);
	size_t r0, r1, q0, q1;
	int stop = 0;

	team_share_blocks(req->B * req->Lq, LINEAR_BLOCK, t, T, &q0, &q1);
	phase_queries(st, q0, q1, chunk);
	for (size_t b0 = 0; b0 < req->B && !stop; b0 += st->group) {
		size_t g = min_size(st->group, req->B - b0);

		for (size_t k0 = 0; k0 < req->Lk; k0 += KEY_BLOCK) {
			struct key_block blk = { k0, min_size(KEY_BLOCK, req->Lk - k0) };

			/* Q ready, every task done with the last block; and on
			 * cancel the whole team leaves here, together */
			stop = team_barrier_cancel(team, req->cancel);
			if (stop)
				break;
			team_share_blocks(g * blk.kb, LINEAR_BLOCK, t, T, &r0, &r1);
			phase_keys(st, b0, blk, r0, r1, chunk);
			team_barrier(team); /* this block's K and V ready */
			if (st->simd) {
				team_share(g * st->Hkv, t, T, &r0, &r1);
				phase_pack(st, blk, r0, r1);
				team_barrier(team); /* and laid out per head */
			}
			phase_fold(st, b0, g, blk, t, T, S);
		}
	}
	if (stop)
		return;
	team_barrier(team);
	if (!attn_cancelled(req->cancel))
		phase_output(st, q0, q1);
}

enum attn_status mha_stream_forward(const struct attn_mha *req, const struct attn_sdpa *core,
				    float *ws, struct attn_error *err)
{
	const struct attn_model *m = req->model;
	struct stream st;
	size_t qrows = req->B * req->Lq;
	unsigned overflow;
	const char *field;

	memset(&st, 0, sizeof(st));
	atomic_init(&st.overflow, 0u);
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
	st.ldk = tile_ld(st.kb_max);
	st.simd = tile_simd_available(st.D);
	st.group = items_per_step(req->B, st.kb_max);
	/* seek past kv [G, kb, 2 kw]; kt and vh only on the tile path */
	st.kt = st.kv + st.group * st.kb_max * 2 * st.kw;
	st.vh = st.kt + (st.simd ? st.group * st.Hkv * st.D * st.ldk : 0);
	st.scratch = st.vh + (st.simd ? st.group * st.Hkv * st.kb_max * st.D : 0);
	st.thread_floats = score_floats(st.simd, st.kb_max) + (size_t)CHUNK * st.E;
	if (req->pos.kind == ATTN_POS_ALIBI) {
		/* seek past every thread's scratch */
		float *slopes = st.scratch + stream_threads(req) * st.thread_floats;

		attn_alibi_slopes(slopes, m->H);
		st.core.alibi_slopes = slopes;
	}
	st.plain = req->softcap <= 0.0f && st.core.alibi_slopes == NULL &&
		   st.core.mask.user_kind == ATTN_USER_MASK_NONE;
	team_run(req->workers, req->threads, stream_member, &st);
	/* a cut call's rows may be unwritten: the caller reports the cancel */
	overflow = atomic_load(&st.overflow);
	if (overflow == 0 || attn_cancelled(req->cancel))
		return ATTN_OK;
	field = overflow & OVERFLOW_Q ? "q" : overflow & OVERFLOW_K ? "k" : "v";
	return attn_fail(err, ATTN_ERR_NONFINITE, field, 0,
			 "%s holds a non-finite value: its projection overflowed float32", field);
}
