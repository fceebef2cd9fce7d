/*
 * attention.c: the BLAS fast path of scaled-dot-product attention.
 *
 * Work is split into tasks (b, query block); a task runs every head of its
 * block, so the mean-over-heads weights are summed in one fixed order whatever
 * the thread count (results do not depend on threads). Per head:
 *   pass 1: S = scale * Q_blk K_h^T                 sgemm  [m, Lk]
 *   pass 2: softcap, then bias and mask per row     S'' = S' + bias
 *   pass 3: P = softmax(S'') per row                in place
 *   pass 4: Y_blk = P V_h                           sgemm  [m, Dv]
 * S lives in the caller's per-head weights when those were asked for (no copy),
 * else in a [block, Lk] slice of the workspace, so memory is O(block * Lk) per
 * thread and no [H, Lq, Lk] block is held unless the caller owns it. Beside
 * it, vmax [block, TILE_COLS]: where scale > 0 and nothing changes S after
 * pass 1 (no softcap, ALiBi or user mask), pass 1's tile kernel hands each
 * row's max to pass 3, which then takes one pass fewer over rows that see
 * every key.
 *
 * Where tile.h's kernels run (AVX-512F, D and Dv multiples of 16), passes 1
 * and 4 use them instead of sgemm, on K and V laid out once per call
 *   kt [B, Hkv, D, ldk], vh [B, Hkv, Lk, Dv]     (a phase before the tasks)
 * rather than packed again by sgemm for every (query block, head).
 */
#include "attention.h"

#include <math.h>
#include <string.h>

#include "cancel.h"
#include "gemm.h"
#include "mask.h"
#include "sdpa_check.h"
#include "sizes.h"
#include "softmax.h"
#include "team.h"
#include "tile.h"

/* Query rows per task: a [64, Lk] float block stays in L2 up to Lk ~ 4096. */
enum { QUERY_BLOCK = 64, PV_KEYS = 512 };

struct sdpa_plan {
	const struct attn_sdpa *req;
	float scale;
	size_t block;     /* query rows per task */
	size_t n_blocks;  /* per batch item */
	size_t threads;
	float *ws;        /* [threads, block, Lk + TILE_COLS]: S, then vmax */
	size_t ws_stride; /* floats per thread */
	int tiles;        /* passes 1 and 4 on tile.h (sdpa_tiles) */
	int plain;        /* tiles, scale 1, S only Q K^T: pass 1 keeps vmax */
	size_t ldk;       /* tile_ld(Lk) */
	float *kt, *vh;   /* [B, Hkv, D, ldk], [B, Hkv, Lk, Dv] when tiles */
};

static int sdpa_tiles(const struct attn_sdpa *req)
{
	return tile_simd_available(req->D) && req->Dv % 16 == 0;
}

/* Floats of kt and vh (0 without tiles); -1 on overflow. */
static int packed_floats(const struct attn_sdpa *req, size_t *n)
{
	size_t per_head;

	*n = 0;
	if (!sdpa_tiles(req))
		return 0;
	if (size_mul(&per_head, req->D, tile_ld(req->Lk)) != 0 ||
	    size_mul(n, req->Lk, req->Dv) != 0 || size_add(&per_head, per_head, *n) != 0)
		return -1;
	return size_mul3(n, req->B, req->Hkv, per_head);
}

static size_t plan_threads(const struct attn_sdpa *req)
{
	return req->threads < 1 ? 1 : req->threads > TEAM_MAX ? TEAM_MAX : req->threads;
}

enum attn_status attn_sdpa_workspace(const struct attn_sdpa *req, size_t *bytes,
				     struct attn_error *err)
{
	enum attn_status st = sdpa_check_request(req, err);
	size_t per_thread, packed;

	if (st != ATTN_OK)
		return st;
	if (size_mul(&per_thread, QUERY_BLOCK < req->Lq ? QUERY_BLOCK : req->Lq,
		     req->Lk + TILE_COLS) != 0 ||
	    size_mul(&per_thread, per_thread, plan_threads(req)) != 0 ||
	    packed_floats(req, &packed) != 0 || size_add(&per_thread, per_thread, packed) != 0 ||
	    size_mul(bytes, per_thread, sizeof(float)) != 0)
		return attn_fail(err, ATTN_ERR_OVERFLOW, "k", 0,
				 "workspace for %zu keys overflows", req->Lk);
	return ATTN_OK;
}

/* Copies m rows of a [m, Lk] block into view[b, h, i0:i0+m, :] of [B, H, Lq, Lk]. */
static void copy_view(float *view, const float *S, const struct attn_sdpa *req, size_t b,
		      size_t h, size_t i0, size_t m)
{
	/* seek to view[b, h, i0, 0] */
	float *dst = view + ((b * req->H + h) * req->Lq + i0) * req->Lk;

	memcpy(dst, S, m * req->Lk * sizeof(float));
}

static void softcap_block(float *S, size_t n, float cap)
{
	for (size_t k = 0; k < n; k++)
		S[k] = cap * tanhf(S[k] / cap);
}

/* weights_mean[b, i0:i0+m, :] (+)= P / H; h == 0 writes, later heads add. */
static void accumulate_mean(const struct attn_sdpa *req, const float *P, size_t b, size_t h,
			    size_t i0, size_t m)
{
	/* seek to weights[b, i0, 0] of [B, Lq, Lk] */
	float *w = req->weights + (b * req->Lq + i0) * req->Lk;
	float inv_h = 1.0f / (float)req->H;
	size_t n = m * req->Lk;

	if (h == 0) {
		for (size_t k = 0; k < n; k++)
			w[k] = P[k] * inv_h;
	} else {
		for (size_t k = 0; k < n; k++)
			w[k] += P[k] * inv_h;
	}
}

/* Passes 2 and 3 for m rows of S: mask, the masked view, softmax, the P view.
 * vmax [m, TILE_COLS], the rows' lane maxima from pass 1, or NULL. */
static void mask_and_softmax(float *S, const float *vmax, const struct attn_sdpa *req, size_t b,
			     size_t h, size_t i0, size_t m)
{
	size_t Lk = req->Lk;

	for (size_t r = 0; r < m; r++) {
		float *s_row = S + r * Lk;
		float row_max;
		size_t lo, hi;

		mask_apply_span(s_row, req, b, h, i0 + r, 0, Lk, &lo, &hi);
		if (req->scores_view == ATTN_SCORES_MASKED)
			copy_view(req->scores, s_row, req, b, h, i0 + r, 1);
		if (vmax != NULL && lo == 0 && hi == Lk) {
			row_max = tile_row_max(vmax + r * TILE_COLS);
			softmax_row_known(s_row, Lk, row_max);
		} else {
			row_max = softmax_row(s_row, Lk, lo, hi);
		}
		/* all -inf with a key the mask leaves open: finite scores that
		 * overflowed to -inf, not masking; NaN, so check_result reports it */
		if (row_max == -INFINITY && mask_row_open(req, b, h, i0 + r))
			for (size_t j = 0; j < Lk; j++)
				s_row[j] = NAN;
	}
	if (req->scores_view == ATTN_SCORES_SOFTMAX)
		copy_view(req->scores, S, req, b, h, i0, m);
}

/* kt[b, kvh] and vh[b, kvh] of the tiles' layout. */
static float *packed_kt(const struct sdpa_plan *plan, size_t b, size_t kvh)
{
	return plan->kt + (b * plan->req->Hkv + kvh) * plan->req->D * plan->ldk;
}

static float *packed_vh(const struct sdpa_plan *plan, size_t b, size_t kvh)
{
	return plan->vh + (b * plan->req->Hkv + kvh) * plan->req->Lk * plan->req->Dv;
}

/* K and V of (batch, kv head) pairs [p0, p1) into kt and vh. */
static void pack_pairs(const struct sdpa_plan *plan, size_t p0, size_t p1)
{
	const struct attn_sdpa *req = plan->req;

	for (size_t pair = p0; pair < p1; pair++) {
		size_t b = pair / req->Hkv, kvh = pair % req->Hkv;
		/* seek to k[b, kvh, 0, :], v[b, kvh, 0, :] */
		const float *k_bh = req->k.data + b * req->k.batch_stride + kvh * req->k.head_stride;
		const float *v_bh = req->v.data + b * req->v.batch_stride + kvh * req->v.head_stride;

		tile_pack_kt(packed_kt(plan, b, kvh), plan->ldk, k_bh, req->k.row_stride, req->Lk,
			     req->D);
		tile_pack_v(packed_vh(plan, b, kvh), v_bh, req->v.row_stride, req->Lk, req->Dv);
	}
}

/*
 * The keys a query block computes: past the last key any of its m rows can
 * see (mask_range: causal, window, key lengths; a user mask only hides
 * more), every score is masked to -inf and every weight is 0, so passes 1
 * and 4 stop there (a causal block skips the keys after its diagonal). Not
 * when a view shows scores before the mask, or a softcap reads them: then
 * every score is computed.
 */
static size_t keys_seen(const struct attn_sdpa *req, size_t b, size_t i0, size_t m)
{
	size_t end = 1;

	if (req->softcap > 0.0f || req->scores_view == ATTN_SCORES_RAW ||
	    req->scores_view == ATTN_SCORES_SOFTCAP)
		return req->Lk;
	for (size_t r = 0; r < m; r++) {
		size_t lo, hi;

		mask_range(req, b, i0 + r, &lo, &hi);
		end = hi > end ? hi : end;
	}
	return end < req->Lk ? end : req->Lk;
}

/* Pass 1: S [m, :n] = scale Q_blk K[:n]^T (rows Lk apart), from q rows at
 * q_bhi and K of (b, kvh); vmax [m, TILE_COLS] too, unless NULL (tiles
 * only; read only when n == Lk). */
static void qk_pass(const struct sdpa_plan *plan, float *S, float *vmax, const float *q_bhi,
		    const float *k_bh, size_t b, size_t kvh, size_t m, size_t n)
{
	const struct attn_sdpa *req = plan->req;

	if (plan->tiles) {
		tile_qk(S, req->Lk, vmax, q_bhi, req->q.row_stride, packed_kt(plan, b, kvh),
			plan->ldk, m, n, req->D, plan->scale, 1);
		return;
	}
	gemm(1, m, n, req->D, plan->scale, q_bhi, req->q.row_stride, k_bh, req->k.row_stride, 0.0f,
	     S, req->Lk);
}

/* Pass 4: out rows [m, Dv] at out_bhi = P [m, :n] V[:n] of (b, kvh) (P's
 * columns past n are 0). */
static void pv_pass(const struct sdpa_plan *plan, float *out_bhi, const float *P,
		    const float *v_bh, size_t b, size_t kvh, size_t m, size_t n)
{
	const struct attn_sdpa *req = plan->req;

	if (!plan->tiles) {
		gemm(0, m, req->Dv, n, 1.0f, P, req->Lk, v_bh, req->v.row_stride, 0.0f, out_bhi,
		     req->out.row_stride);
		return;
	}
	for (size_t r = 0; r < m; r++)
		memset(out_bhi + r * req->out.row_stride, 0, req->Dv * sizeof(float));
	/* keys PV_KEYS at a time, so their rows of vh stay in L2 while every
	 * query row passes over them (the same sums, in order) */
	for (size_t k0 = 0; k0 < n; k0 += PV_KEYS)
		tile_pv(out_bhi, req->out.row_stride, P + k0, req->Lk,
			packed_vh(plan, b, kvh) + k0 * req->Dv, m, n - k0 < PV_KEYS ? n - k0 : PV_KEYS,
			req->Dv, 1);
}

/* One head of one query block: the four passes of the file comment. */
static void sdpa_head(const struct sdpa_plan *plan, float *ws, size_t b, size_t h, size_t i0,
		      size_t m)
{
	const struct attn_sdpa *req = plan->req;
	size_t kvh = h / (req->H / req->Hkv);
	/* seek to q[b, h, i0, :], k[b, kvh, 0, :], v[b, kvh, 0, :], out[b, h, i0, :] */
	const float *q_bhi = req->q.data + b * req->q.batch_stride + h * req->q.head_stride +
			     i0 * req->q.row_stride;
	const float *k_bh = req->k.data + b * req->k.batch_stride + kvh * req->k.head_stride;
	const float *v_bh = req->v.data + b * req->v.batch_stride + kvh * req->v.head_stride;
	float *out_bhi = req->out.data + b * req->out.batch_stride + h * req->out.head_stride +
			 i0 * req->out.row_stride;
	float *S = ws;
	/* seek past the thread's [block, Lk] scores */
	float *vmax = plan->plain ? ws + plan->block * req->Lk : NULL;
	size_t n = keys_seen(req, b, i0, m);

	if (req->weights_mode == ATTN_WEIGHTS_PER_HEAD)
		S = req->weights + ((b * req->H + h) * req->Lq + i0) * req->Lk;

	/* pass 1: S = scale * Q_blk K^T, [m, Lk] */
	qk_pass(plan, S, vmax, q_bhi, k_bh, b, kvh, m, n);
	if (req->scores_view == ATTN_SCORES_RAW)
		copy_view(req->scores, S, req, b, h, i0, m);
	/* pass 2: softcap before the mask (Gemma 2), so -inf stays -inf */
	if (req->softcap > 0.0f) {
		softcap_block(S, m * req->Lk, req->softcap);
		if (req->scores_view == ATTN_SCORES_SOFTCAP)
			copy_view(req->scores, S, req, b, h, i0, m);
	} else if (req->scores_view == ATTN_SCORES_SOFTCAP) {
		copy_view(req->scores, S, req, b, h, i0, m);
	}
	/* pass 2 (cont.) and 3: bias, mask, softmax */
	mask_and_softmax(S, vmax, req, b, h, i0, m);
	if (req->weights_mode == ATTN_WEIGHTS_MEAN)
		accumulate_mean(req, S, b, h, i0, m);
	/* pass 4: Y_blk = P V, [m, Dv] */
	pv_pass(plan, out_bhi, S, v_bh, b, kvh, m, n);
}

static void sdpa_task(const struct sdpa_plan *plan, float *ws, size_t task)
{
	const struct attn_sdpa *req = plan->req;
	size_t b = task / plan->n_blocks;
	size_t i0 = (task % plan->n_blocks) * plan->block;
	size_t m = req->Lq - i0 < plan->block ? req->Lq - i0 : plan->block;

	for (size_t h = 0; h < req->H && !attn_cancelled(req->cancel); h++)
		sdpa_head(plan, ws, b, h, i0, m);
}

/* Thread t of T runs tasks t, t + T, t + 2T, ... with its own workspace slice. */
static void sdpa_member(void *arg, size_t t, size_t T, struct team *team)
{
	const struct sdpa_plan *plan = arg;
	size_t n_tasks = plan->req->B * plan->n_blocks, p0, p1;
	float *ws = plan->ws + t * plan->ws_stride;

	if (plan->tiles) {
		team_share(plan->req->B * plan->req->Hkv, t, T, &p0, &p1);
		pack_pairs(plan, p0, p1);
		team_barrier(team); /* every head's K and V laid out */
	}
	/* no barrier follows: a thread that sees the cancel flag may leave */
	for (size_t task = t; task < n_tasks && !attn_cancelled(plan->req->cancel); task += T)
		sdpa_task(plan, ws, task);
}

/* attn_sdpa_forward, with q, k, v and the output scanned for non-finite
 * values or not (sdpa_forward_unchecked). */
static enum attn_status sdpa_forward(const struct attn_sdpa *req, void *ws, size_t ws_bytes,
				     int scan_values, struct attn_error *err)
{
	struct sdpa_plan plan;
	enum attn_status st;
	size_t need;

	st = attn_sdpa_workspace(req, &need, err);
	if (st != ATTN_OK)
		return st;
	if (ws_bytes < need || (need > 0 && ws == NULL))
		return attn_fail(err, ATTN_ERR_WORKSPACE, "workspace", 0,
				 "workspace of %zu bytes given, %zu needed", ws_bytes, need);
	st = attn_cancel_check(req->cancel, err);
	if (st == ATTN_OK)
		st = scan_values ? sdpa_check_values(req, err) : sdpa_check_pointers(req, err);
	if (st != ATTN_OK)
		return st;
	plan.req = req;
	plan.scale = sdpa_scale(req);
	plan.block = QUERY_BLOCK < req->Lq ? QUERY_BLOCK : req->Lq;
	plan.n_blocks = (req->Lq + plan.block - 1) / plan.block;
	plan.threads = plan_threads(req);
	plan.ws = ws;
	plan.ws_stride = plan.block * (req->Lk + TILE_COLS);
	plan.tiles = sdpa_tiles(req);
	plan.plain = plan.tiles && plan.scale > 0.0f && req->softcap <= 0.0f &&
		     req->mask.user_kind == ATTN_USER_MASK_NONE && req->alibi_slopes == NULL;
	plan.ldk = tile_ld(req->Lk);
	/* seek past every thread's score block: kt [B, Hkv, D, ldk], then vh */
	plan.kt = plan.ws + plan.threads * plan.ws_stride;
	plan.vh = plan.kt + req->B * req->Hkv * req->D * plan.ldk;
	team_run(req->workers, plan.threads, sdpa_member, &plan);
	st = attn_cancel_check(req->cancel, err); /* before the outputs are judged */
	if (st != ATTN_OK)
		return st;
	return scan_values ? sdpa_check_result(req, err) : ATTN_OK;
}

enum attn_status attn_sdpa_forward(const struct attn_sdpa *req, void *ws, size_t ws_bytes,
				   struct attn_error *err)
{
	return sdpa_forward(req, ws, ws_bytes, 1, err);
}

enum attn_status sdpa_forward_unchecked(const struct attn_sdpa *req, void *ws, size_t ws_bytes,
					struct attn_error *err)
{
	return sdpa_forward(req, ws, ws_bytes, 0, err);
}
