/*
 * stack.h: a whole transformer stack run on token ids (GPT-2, BERT and the
 * Llama family), capturing each layer's attention weights as it goes.
 *
 * Shape legend (outermost first, as attention.h): B batch, L padded sequence
 * length, E d_model, H query heads, Hkv key/value heads, D head dim (H D need
 * not equal E), F MLP width, V vocabulary, N layers.
 *
 * The block of each family, after Hugging Face's modeling code (transformers
 * 4.x, eager attention), for hidden state x [B, L, E]:
 *   gpt2   x = wte[id] + wpe[pos]
 *          each layer: x += attn(LN1(x)); x += down(act(up(LN2(x))))
 *          after the last layer: LN_f(x)
 *   bert   x = LN_emb(wte[id] + wpe[pos] + wtt[type])
 *          each layer: x = LN1(x + attn(x)); x = LN2(x + down(act(up(x))))
 *   llama  x = wte[id]                       (also mistral, qwen2)
 *          each layer: x += attn(RMS1(x)), q and k rotated (RoPE, half-split);
 *                      h = RMS2(x); x += down(act(gate(h)) * up(h))
 *          after the last layer: RMS_f(x)
 * where attn(h) = o(concat_heads(softmax(q k^T * scale + mask) v)) and q, k, v
 * are linear maps of h. Positions are 0 .. L - 1 in every item (right
 * padding). Masks: gpt2 and llama are causal (llama with the sliding window
 * when set); bert sees every key of its item. In every family the keys past
 * an item's length are hidden, so a padded item's valid rows equal those of
 * the item run alone; rows past its length are computed but meaningless (a
 * padded row that sees no key at all, past the window, gets zero weights
 * where Hugging Face's finfo.min mask would spread them evenly).
 *
 * Ownership: a struct attn_stack borrows every weight pointer (the loader,
 * checkpoint.h, owns them); it is read-only and may be shared by concurrent
 * forward passes. A struct attn_stack_run borrows the stack and every buffer.
 */
#ifndef ATTN_STACK_H
#define ATTN_STACK_H

#include <stddef.h>
#include <stdint.h>

#include "attention.h"
#include "status.h"
#include "workers.h"

enum attn_family {
	ATTN_FAMILY_GPT2 = 0,
	ATTN_FAMILY_BERT,
	ATTN_FAMILY_LLAMA,
};

enum attn_norm_kind {
	ATTN_NORM_LAYER = 0, /* (x - mean) / sqrt(var + eps) * w + b, var biased */
	ATTN_NORM_RMS,       /* x / sqrt(mean(x^2) + eps) * w (Llama's RMSNorm) */
};

enum attn_activation {
	ATTN_ACT_GELU_TANH = 0, /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): gelu_new */
	ATTN_ACT_GELU_ERF,      /* 0.5 x (1 + erf(x / sqrt(2))): BERT's gelu */
	ATTN_ACT_SILU,          /* x / (1 + exp(-x)) */
	ATTN_ACT_RELU,
};

/*
 * y = x W^T + b with W [out, in] row-major; when in_major, W is stored
 * [in, out] (TRANSPOSED: GPT-2's Conv1D) and y = x W + b.
 */
struct attn_linear {
	const float *w; /* [out, in], or [in, out] when in_major */
	const float *b; /* [out] or NULL */
	size_t out, in;
	int in_major;
};

struct attn_norm {
	const float *w; /* [E], NULL: the norm is absent */
	const float *b; /* [E] or NULL (RMSNorm has none) */
};

struct attn_block {
	struct attn_norm norm1; /* gpt2 ln_1, llama input_layernorm,
	                           bert attention.output.LayerNorm (after attn) */
	struct attn_norm norm2; /* gpt2 ln_2, llama post_attention_layernorm,
	                           bert output.LayerNorm (after the MLP) */
	/* q, k, v side by side: their outputs are the columns
	 * [H D | Hkv D | Hkv D] of one [B, L, (H + 2 Hkv) D] buffer, in order.
	 * gpt2 has one fused map (c_attn, out = 3 E); the others three. */
	struct attn_linear qkv[3];
	size_t n_qkv;         /* 1 or 3 */
	struct attn_linear o; /* [E, H D] */
	struct attn_linear up;   /* [F, E] (gpt2 c_fc, bert intermediate, llama up_proj) */
	struct attn_linear gate; /* [F, E] llama gate_proj; w NULL elsewhere */
	struct attn_linear down; /* [E, F] */
	int full_attention;	 /* 1: this layer ignores the stack's window (Qwen2's
				    layer_types "full_attention"); 0: the window, if
				    any, applies */
};

struct attn_stack {
	enum attn_family family;
	size_t n_layers, E, H, Hkv, D, F;
	size_t vocab;         /* V: rows of wte */
	size_t max_positions; /* rows of wpe; for llama the context length */
	size_t type_vocab;    /* rows of wtt (bert), else 0 */
	/* RoBERTa (bert family): token i's position is not i but, as
	 * create_position_ids_from_input_ids has it, pad_id + the count of
	 * non-pad ids in positions 0 .. i, and pad_id itself for a pad id; so
	 * the context is max_positions - pad_id - 1 (attn_stack_context). */
	int positions_from_ids;
	size_t pad_id;
	enum attn_norm_kind norm_kind;
	float norm_eps;
	enum attn_activation act;
	float scale;          /* score scale, 0 means 1 / sqrt(D) */
	size_t window;		      /* sliding window (mistral, qwen2), 0 = none; llama only;
					 each block may opt out (full_attention) */
	const float *inv_freq; /* [D / 2] RoPE inverse frequencies (llama), else NULL:
	                          angle of channel pair i at position p = p inv_freq[i] */
	float rope_attention_scaling; /* cos and sin multiplied by it; 0 means 1 */

	const float *wte; /* [V, E] */
	const float *wpe; /* [max_positions, E] or NULL */
	const float *wtt; /* [type_vocab, E] or NULL */
	struct attn_norm emb_norm;   /* bert embeddings.LayerNorm, else absent */
	struct attn_norm final_norm; /* gpt2 ln_f, llama norm; absent for bert */
	const struct attn_block *blocks; /* [N] */
};

/*
 * One forward pass. Layers 0 .. last_layer run; the layers whose capture
 * flag is set write their attention weights (post-softmax, exactly as
 * Hugging Face's output_attentions returns them) into `attentions`, and when
 * asked their scores into `scores`, one slab per captured layer in layer
 * order each.
 *
 * A layer's scores are the softmax's input, attn_sdpa's MASKED view
 * (attention.h): q k^T * scale (llama: q and k after RoPE) where the key is
 * visible, -INFINITY where the family's mask hides it (causal, window, keys
 * past the item's length). Hugging Face adds finfo(float32).min there
 * instead; either way the softmax gives those keys exactly 0, so the weights
 * are softmax(scores) row by row (a row with no visible key: weights 0).
 */
struct attn_stack_run {
	const struct attn_stack *stack;
	size_t B, L;
	const int64_t *ids;      /* [B, L] token ids, padded past lengths[b] (any valid id) */
	const int64_t *type_ids; /* [B, L] bert token types, or NULL: all 0 (other
	                            families ignore them) */
	const size_t *lengths;   /* [B] valid tokens per item (1 .. L), or NULL: all L */
	size_t last_layer;       /* < N */
	const uint8_t *capture;  /* [last_layer + 1] nonzero: capture that layer; NULL: none */
	const size_t *heads;     /* [n_heads] captured heads (each < H), or NULL: all H */
	size_t n_heads;
	enum attn_weights_mode weights_mode; /* PER_HEAD or MEAN (over the captured heads),
	                                        or NONE when only scores are captured */
	float *attentions; /* [C, B, Hc, L, L] PER_HEAD or [C, B, L, L] MEAN, C captured
	                      layers, Hc = n_heads or H; NULL when nothing is captured
	                      or weights_mode is NONE */
	enum attn_scores_view scores_view; /* NONE, or MASKED: capture the scores too */
	float *scores;     /* [C, B, Hc, L, L] per head whatever weights_mode, when
	                      scores_view is MASKED; else NULL */
	int show_projections; /* nonzero: the captured layers' q, k and v too */
	float *projections; /* [C, 3, B, Hc, L, D] when show_projections: each
	                       captured layer's q of each captured head (llama: after
	                       RoPE), then the k and the v of the key head it reads,
	                       h / (H / Hkv), so that head i's masked scores are
	                       scale q[i] k[i]^T where a key is visible; else NULL */
	int show_head_outputs; /* nonzero: the captured layers' head outputs too */
	float *head_outputs; /* [C, B, Hc, L, D] when show_head_outputs: each captured
	                        layer's captured heads' output, their weights times
	                        v, before the heads are joined and o_proj applied
	                        (rows of a padded item's padding included); else
	                        NULL */
	float *out;        /* [B, L, E] hidden state after last_layer, with the final
	                      norm when last_layer == N - 1 (Hugging Face's
	                      hidden_states[last_layer + 1]); or NULL */

	size_t threads;               /* as struct attn_sdpa */
	struct attn_workers *workers; /* as struct attn_sdpa */
	const atomic_int *cancel;     /* as struct attn_sdpa (cancel.h: read between
	                                 layers and projection tiles), or NULL */
};

/* Checks the stack's sizes (E, H, Hkv, D, F, the weights present for its
 * family). Loaders call it once; the forward passes assume it passed.
 * Refusals: ATTN_ERR_DIMENSION (a size zero), ATTN_ERR_KV_HEADS,
 * ATTN_ERR_ROPE_DIM (llama: D odd or no inv_freq), ATTN_ERR_SHAPE_MISMATCH
 * (field "blocks", index the layer: a map missing or of the wrong shape),
 * ATTN_ERR_OVERFLOW (a width past a BLAS int), ATTN_ERR_ARGUMENT (a table
 * the family needs is NULL; a window outside llama). */
enum attn_status attn_stack_check(const struct attn_stack *stack, struct attn_error *err);

/* Validates the run (ids in [0, V), type ids in [0, type_vocab), L within
 * max_positions for gpt2 and bert, lengths in 1 .. L, heads distinct and < H,
 * sizes that fit; the output buffers may still be NULL, as a caller plans
 * before it allocates them) and stores in *bytes the workspace attn_stack_forward needs:
 * about two layers' activations plus one attention call's workspace, and a
 * layer's [B, H, L, L] weights and scores when a subset of heads (or the
 * mean) is kept of them.
 * Refusals, with err->field and err->index:
 *   ATTN_ERR_ARGUMENT  "ids" (stack or ids NULL), "layers" (last_layer >= N,
 *                      index last_layer), "weights_mode" (a layer captured
 *                      and neither PER_HEAD, MEAN nor, with scores, NONE),
 *                      "scores_view" (not NONE or MASKED), "attentions" /
 *                      "scores" (NULL where a layer writes them; found by
 *                      the forward passes), "heads" (n_heads 0 or > H, or
 *                      heads[index] >= H or repeated)
 *   ATTN_ERR_EMPTY     "ids": B or L is 0
 *   ATTN_ERR_POSITION  "ids" (L > max_positions for gpt2 and bert, index
 *                      max_positions), "lengths" (index b: 0 or > L)
 *   ATTN_ERR_TOKEN     "ids" / "type_ids", index b L + l: every position is
 *                      checked, padding too, since the embedding reads it
 *   ATTN_ERR_OVERFLOW  "ids": a size overflows; found before any [B, L]
 *                      array is read. Nothing is allocated. */
enum attn_status attn_stack_workspace(const struct attn_stack_run *run, size_t *bytes,
				      struct attn_error *err);

/* Runs the stack on BLAS (linear.h, attention.h). ws holds ws_bytes of scratch
 * (ATTN_ERR_WORKSPACE when fewer than attn_stack_workspace asks for). The
 * results do not depend on threads. On failure out and attentions are
 * unspecified. Finite weights whose values overflow float32 on this input
 * are refused: ATTN_ERR_NONFINITE (q, k, v) or ATTN_ERR_RESULT_OVERFLOW (the
 * scores; field "hidden", index the layer, for a layer's hidden state or,
 * index N, the final norm's output). */
enum attn_status attn_stack_forward(const struct attn_stack_run *run, void *ws, size_t ws_bytes,
				    struct attn_error *err);

/* The naive twin: plain loops throughout (allocates its own scratch and frees
 * it; ATTN_ERR_NOMEM when it cannot). The same checks as attn_stack_workspace. */
enum attn_status attn_stack_forward_ref(const struct attn_stack_run *run,
					struct attn_error *err);

/* Floating-point operations of the run, a double, over layers 0 .. last_layer:
 * 2 B L (the sum of in * out over the layer's maps) + 4 B H L^2 D. */
double attn_stack_flops(const struct attn_stack_run *run);

/*
 * The stack's own position signal at positions 0 .. L - 1 of an item (of no
 * pad id, for RoBERTa), made by the forward pass's own code
 * (stack_positions.c), into enc [L, dim], dim = attn_stack_position_dim:
 *   gpt2, bert   E: the rows of wpe added to the tokens' embeddings (token
 *                types not included): rows 0 .. L - 1, for RoBERTa's
 *                positions from the ids rows pad_id + 1 .. pad_id + L
 *   llama        D: u, every entry 1 / sqrt(D), rotated as one head's query
 *                at position l (inv_freq, rope_attention_scaling a: each row
 *                has norm a, and row i . row j = a^2 u . R(j - i) u)
 * Refusals: ATTN_ERR_EMPTY ("ids", L = 0), ATTN_ERR_POSITION ("ids", index
 * attn_stack_context: L past it, gpt2 and bert). enc is the caller's and
 * untouched on failure; nothing is allocated.
 */
size_t attn_stack_position_dim(const struct attn_stack *s);
enum attn_status attn_stack_positions(float *enc /* [L, dim] */, const struct attn_stack *s,
				      size_t L, struct attn_error *err);

/* The longest sequence the stack takes: max_positions, less pad_id + 1 when
 * positions come from the ids (RoBERTa); 0 when that leaves none. */
size_t attn_stack_context(const struct attn_stack *s);

#endif
