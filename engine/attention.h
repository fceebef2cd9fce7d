/*
 * attention.h: scaled-dot-product attention, the engine's core.
 *
 * Shape legend, outermost first, row-major everywhere:
 *   B   batch                 Lq  query length        Lk  key length (past + new)
 *   H   query heads           Hkv key/value heads     P   past (cached) key length
 *   D   query/key head dim    Dv  value head dim      E   model dim (= H * D)
 * Query head h reads key/value head h / (H / Hkv) (grouped-query attention).
 *
 * Semantics are those of the ONNX Attention operator (opset 23/24), see
 * tests/data/onnx-attention/README.md:
 *   S   = scale * Q K^T                       scores view RAW     (ONNX mode 0)
 *   S'  = softcap > 0 ? c * tanh(S / c) : S   scores view SOFTCAP (ONNX mode 1)
 *   S'' = S' + bias                           scores view MASKED  (ONNX mode 2)
 *   P   = softmax(S'') over keys              scores view SOFTMAX (ONNX mode 3)
 *   Y   = P V
 * where bias sums the caller's mask, causal / window / key-length masking and
 * ALiBi. A query row whose bias is -inf at every key has no visible key: its P
 * row and its Y row are exactly zero, never NaN (PyTorch's MultiheadAttention
 * returns NaN there). Finite inputs whose S'' leaves float32 are refused with
 * ATTN_ERR_RESULT_OVERFLOW, never answered: a +inf (or NaN) score anywhere in a
 * visible row, and a row whose scores all came out -inf while its bias is not
 * -inf everywhere (q . k below -FLT_MAX, or a score plus a mask value that
 * sums past it). A -inf score beside finite ones weighs 0, as exact
 * arithmetic gives to float32 precision, and is answered.
 *
 * Ownership: the engine never keeps a pointer past the call that received it.
 * Every buffer named in a request belongs to the caller; outputs are written in
 * place. The fast path allocates nothing: the caller asks for the workspace size
 * first and passes that many bytes. The reference twin (attention_ref.c)
 * allocates its own scratch and frees it before returning.
 */
#ifndef ATTN_ATTENTION_H
#define ATTN_ATTENTION_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"
#include "workers.h"

/*
 * A [B, heads, L, dim] tensor addressed by element strides; the innermost dim
 * is contiguous. [B, H, L, D] contiguous is {H*L*D, L*D, D}; the interleaved
 * layout [B, L, H*D] (heads split out of the model dim) is {L*H*D, D, H*D}.
 */
struct attn_view {
	float *data;
	size_t batch_stride, head_stride, row_stride;
};

struct attn_cview {
	const float *data;
	size_t batch_stride, head_stride, row_stride;
};

/* Views of contiguous [B, heads, L, dim] and [B, L, heads * dim] buffers. */
struct attn_view attn_view_bhld(float *data, size_t heads, size_t len, size_t dim);
struct attn_view attn_view_blhd(float *data, size_t heads, size_t len, size_t dim);
struct attn_cview attn_cview_bhld(const float *data, size_t heads, size_t len, size_t dim);
struct attn_cview attn_cview_blhd(const float *data, size_t heads, size_t len, size_t dim);

/* Causal alignment: which key the last query lines up with. */
enum attn_causal {
	ATTN_CAUSAL_NONE = 0,
	ATTN_CAUSAL_TOP_LEFT,     /* query i sees keys j <= i (PyTorch is_causal) */
	ATTN_CAUSAL_BOTTOM_RIGHT, /* query i sees keys j <= i + (Lk_b - Lq) (ONNX with a cache) */
};

enum attn_user_mask {
	ATTN_USER_MASK_NONE = 0,
	ATTN_USER_MASK_BOOL,     /* uint8_t, nonzero = may attend, 0 = -inf */
	ATTN_USER_MASK_ADDITIVE, /* float added to the score; may hold -INFINITY */
};

/*
 * Everything that masks or biases a score. The query's aligned position is
 * qpos(b, i) = i + q_offset + offset_b, with offset_b = 0 for top-left and
 * offset_b = len_b - qlen_b for bottom-right (causal ATTN_CAUSAL_BOTTOM_RIGHT,
 * or bottom_right set: a window or ALiBi without causal),
 * len_b = kv_lengths ? kv_lengths[b] : Lk, qlen_b = q_lengths ? q_lengths[b] : Lq
 * (a ragged batch aligns each item's own last query with its own last key). q_offset is an explicit shift, for
 * ONNX with a past cache of P keys: top-left with q_offset = P (which differs
 * from bottom-right when the new key count differs from Lq).
 * Key j is visible from query i of batch b iff all of these hold:
 *   causal != NONE:  j <= qpos
 *   window  > 0:     qpos - window < j, and without causal also j < qpos + window
 *                    (the Mistral / Hugging Face sliding window; symmetric when
 *                    there is no causal mask)
 *   kv_lengths:      j < kv_lengths[b]
 *   user mask:       bool true, or additive not -inf
 * The user mask has rank 1..4 with dims right-aligned to [B, H, Lq, Lk]; each
 * dim is 1 (broadcast) or the full size, except the last, which may be shorter
 * than Lk: keys past it are not visible (ONNX opset 24 padding). A last axis of
 * size 1 broadcasts (numpy's rule comes first).
 */
struct attn_mask {
	enum attn_causal causal;
	int bottom_right;         /* align bottom-right without causal (implied by it) */
	size_t window;            /* 0 = no sliding window */
	ptrdiff_t q_offset;       /* shift of query positions, usually 0 */
	const size_t *kv_lengths; /* [B] valid keys per batch item, or NULL */
	const size_t *q_lengths;  /* [B] valid queries per item (alignment only), or NULL */
	enum attn_user_mask user_kind;
	const void *user;         /* uint8_t or float, shape user_shape */
	size_t user_rank;         /* 1, 2, 3 or 4 */
	size_t user_shape[4];     /* outermost first, user_rank entries used */
};

enum attn_weights_mode {
	ATTN_WEIGHTS_NONE = 0,
	ATTN_WEIGHTS_PER_HEAD, /* [B, H, Lq, Lk] */
	ATTN_WEIGHTS_MEAN,     /* [B, Lq, Lk], mean over heads */
};

enum attn_scores_view {
	ATTN_SCORES_NONE = 0,
	ATTN_SCORES_RAW,     /* scale * Q K^T */
	ATTN_SCORES_SOFTCAP, /* after softcap, before the mask */
	ATTN_SCORES_MASKED,  /* after softcap and mask (-inf where hidden) */
	ATTN_SCORES_SOFTMAX, /* the probabilities, hidden rows zero */
};

/* One raw attention call: the ONNX operator's core, on views. */
struct attn_sdpa {
	size_t B, H, Hkv, Lq, Lk, D, Dv;
	float scale;   /* 0 means 1 / sqrt(D) */
	float softcap; /* 0 means off */
	struct attn_mask mask;

	/* ALiBi: bias -slope[h] * |qpos - kpos| added after softcap, or NULL.
	 * With no list only distances matter: qpos(b, i) and j. With one
	 * list, the other side is at pos_offset + its index, in the list's
	 * frame (positional.h: positions are offset + index, or the list). */
	const float *alibi_slopes; /* [H] */
	const double *q_pos;       /* [Lq] positions for ALiBi, or NULL */
	const double *k_pos;       /* [Lk] positions for ALiBi, or NULL */
	double pos_offset;         /* the positional offset, read beside one list */

	struct attn_cview q; /* [B, H, Lq, D] */
	struct attn_cview k; /* [B, Hkv, Lk, D] */
	struct attn_cview v; /* [B, Hkv, Lk, Dv] */
	struct attn_view out; /* [B, H, Lq, Dv] */

	enum attn_weights_mode weights_mode;
	float *weights; /* [B, H, Lq, Lk] or [B, Lq, Lk], per weights_mode */
	enum attn_scores_view scores_view;
	float *scores; /* [B, H, Lq, Lk] when scores_view != NONE */

	/*
	 * Worker threads for this call (0 or 1 = the calling thread only). Work is
	 * split over (batch, query block) tasks; each thread calls single-threaded
	 * BLAS, so the caller should set OpenBLAS to one thread when using this.
	 */
	size_t threads;
	/* Threads kept between calls (workers.h), or NULL: start them per call. */
	struct attn_workers *workers;
	/* Set by another thread to stop the call (cancel.h: read between query
	 * blocks and heads; ATTN_ERR_CANCELLED), or NULL: never. */
	const atomic_int *cancel;
};

/*
 * Validates the request's shape and options (the views' data may still be
 * NULL) and stores in *bytes the workspace attn_sdpa_forward needs: a [64, Lk]
 * score block per thread, and where tile.h's kernels run a copy of K and V
 * laid out for them. No [H, Lq, Lk] block is held unless the caller asked
 * for per-head weights or scores, which it owns.
 */
enum attn_status attn_sdpa_workspace(const struct attn_sdpa *req, size_t *bytes,
				     struct attn_error *err);

/*
 * Runs the request (on tile.h's kernels where they run, else gemm.h's
 * gemm). ws holds ws_bytes of scratch (suitably aligned for float). On
 * failure the outputs are unspecified and err says why.
 */
enum attn_status attn_sdpa_forward(const struct attn_sdpa *req, void *ws, size_t ws_bytes,
				   struct attn_error *err);

/* The naive twin: plain loops, same semantics, used to check the fast path. */
enum attn_status attn_sdpa_forward_ref(const struct attn_sdpa *req, struct attn_error *err);

/* ALiBi slopes as in BLOOM, including head counts that are not powers of two. */
void attn_alibi_slopes(float *slopes /* [H] */, size_t H);

/*
 * Copies past [B, Hkv, P, dim] and new [B, Hkv, S, dim] (any view) into
 * present [B, Hkv, P + S, dim] contiguous (the ONNX present_key / value).
 * past may be NULL when P == 0.
 */
void attn_kv_concat(float *present, const float *past, struct attn_cview fresh, size_t B,
		    size_t Hkv, size_t P, size_t S, size_t dim);

/*
 * Returns ATTN_OK when all n values are finite, else ATTN_ERR_NONFINITE with
 * err->index the first bad element and err->field = field.
 */
/* 1 when x[0, n) holds no inf or NaN (a vectorised scan). */
int attn_all_finite(const float *x /* [n], any tensor flattened */, size_t n);

enum attn_status attn_check_finite(const float *x /* [n] */, size_t n, const char *field,
				   struct attn_error *err);

#endif
