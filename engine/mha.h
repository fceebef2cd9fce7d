/*
 * mha.h: one full multi-head attention layer, as torch.nn.MultiheadAttention
 * (batch_first=True) computes it, with GQA, masks and positional encodings:
 *
 *   Xq' = Xq (+ sinusoidal pe)            [B, Lq, E]
 *   Q   = Xq' Wq^T + bq                   [B, Lq, H D]   (viewed [B, H, Lq, D])
 *   K   = Xk' Wk^T + bk                   [B, Lk, Hkv D]
 *   V   = Xv' Wv^T + bv                   [B, Lk, Hkv D]
 *   Q, K rotated per head (RoPE)
 *   C   = sdpa(Q, K, V; mask, ALiBi)      [B, Lq, H D]   (heads concatenated;
 *                                                        per head: head_outputs)
 *   out = C Wo^T + bo                     [B, Lq, E]
 *
 * Ownership: as attention.h. The model is borrowed read-only; every other
 * buffer belongs to the caller.
 */
#ifndef ATTN_MHA_H
#define ATTN_MHA_H

#include <stddef.h>

#include "attention.h"
#include "model.h"
#include "positional.h"

struct attn_mha {
	const struct attn_model *model;
	size_t B, Lq, Lk;
	const float *query; /* [B, Lq, E] */
	const float *key;   /* [B, Lk, E], or NULL: the query (self-attention, Lk == Lq) */
	const float *value; /* [B, Lk, E], or NULL: the key */

	struct attn_mask mask;     /* kv_lengths / user mask as in attention.h */
	struct attn_positional pos;
	float scale;   /* 0 means 1 / sqrt(D) */
	float softcap; /* 0 means off */

	float *out; /* [B, Lq, E] */
	enum attn_weights_mode weights_mode;
	float *weights; /* [B, H, Lq, Lk] or [B, Lq, Lk] */
	enum attn_scores_view scores_view;
	float *scores; /* [B, H, Lq, Lk] */
	/* The projections as the scores see them (the sinusoidal encoding added
	 * to the inputs, RoPE applied), heads split out. show_projections says
	 * whether they are asked for, as weights_mode does for the weights (a
	 * caller plans before it has the buffers); then each pointer given is
	 * filled, and one left NULL is not wanted. */
	int show_projections;
	float *q_heads; /* [B, H, Lq, D] */
	float *k_heads; /* [B, Hkv, Lk, D] */
	float *v_heads; /* [B, Hkv, Lk, D] */
	/* Each head's output, its weights times V, before the heads are
	 * concatenated into C and W_O applied (the tutorials' head_outputs), or
	 * NULL: not wanted. Either path fills it, keys streamed or not, so it
	 * does not change the plan. */
	float *head_outputs; /* [B, H, Lq, D] */

	size_t threads;                /* as struct attn_sdpa */
	struct attn_workers *workers;  /* as struct attn_sdpa */
	const atomic_int *cancel;      /* as struct attn_sdpa (cancel.h), or NULL */
};

/* Validates the request's dimensions and options (not the input values: query
 * and out may still be NULL, as a caller plans before it has them; key and
 * value only say, by being NULL or equal, whether the layer is self-attention
 * or shares one projection) and stores the workspace size attn_mha_forward
 * needs in *bytes. The forward pass also rejects non-finite inputs. */
enum attn_status attn_mha_workspace(const struct attn_mha *req, size_t *bytes,
				    struct attn_error *err);

/*
 * Runs the layer on BLAS. ws: ws_bytes of scratch (float-aligned). out must
 * not overlap the inputs; it is also used as scratch during the call. Without
 * weights, scores or projections asked for, the keys are streamed in blocks
 * (mha_stream.c) and peak memory is inputs + outputs + [B, Lq, E]; with any
 * of them, K and V are projected whole and the core is attn_sdpa_forward.
 */
enum attn_status attn_mha_forward(const struct attn_mha *req, void *ws, size_t ws_bytes,
				  struct attn_error *err);

/* The naive twin: plain loops (allocates and frees its own scratch). */
enum attn_status attn_mha_forward_ref(const struct attn_mha *req, struct attn_error *err);

/* Floating-point operations of the layer, as the benchmark counts them:
 * projections 2 B E (Lq H D + 2 Lk Hkv D) + output 2 B Lq H D E, plus
 * attention 2 B H Lq Lk (D + D); for self-attention with Hkv = H that is
 * 8 B L E^2 + 4 B L^2 E. A double, so it cannot overflow. */
double attn_mha_flops(const struct attn_mha *req);

#endif
