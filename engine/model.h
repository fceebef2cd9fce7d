/*
 * model.h: the weights of one multi-head attention layer.
 *
 * Layout follows PyTorch's nn.MultiheadAttention, generalised to grouped-query
 * attention (Hkv key/value heads, Hkv divides H; Hkv == H is plain MHA):
 *   w_qkv [(H + 2 Hkv) D, E]  rows: Wq [H D, E], then Wk [Hkv D, E], then Wv [Hkv D, E]
 *                             (== in_proj_weight [3E, E] when Hkv == H)
 *   b_qkv [(H + 2 Hkv) D]     or NULL (== in_proj_bias)
 *   w_o   [E, H D]            (== out_proj.weight)
 *   b_o   [E]                 or NULL (== out_proj.bias)
 *   embed [vocab, E]          or NULL (token embedding table)
 * with D = E / H.
 *
 * Ownership: a struct attn_model owns all of its arrays. It is built by one of
 * the constructors below, is read-only afterwards and may be shared by any
 * number of concurrent forward passes; attn_model_free releases it (NULL is
 * accepted).
 */
#ifndef ATTN_MODEL_H
#define ATTN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

enum attn_model_source {
	ATTN_SOURCE_SEED = 0,
	ATTN_SOURCE_EXPLICIT,
	ATTN_SOURCE_SAFETENSORS,
};

struct attn_model {
	size_t E, H, Hkv, D;
	float *w_qkv; /* [(H + 2 Hkv) D, E]: Wq, then Wk, then Wv rows */
	float *b_qkv; /* [(H + 2 Hkv) D], or NULL */
	float *w_o;   /* [E, H D] */
	float *b_o;   /* [E], or NULL */
	size_t vocab;
	float *embed; /* [vocab, E], or NULL */
	enum attn_model_source source;
	uint64_t seed; /* when source == ATTN_SOURCE_SEED */
};

struct attn_model_config {
	size_t E, H, Hkv; /* Hkv == 0 means Hkv = H */
	int bias;         /* nonzero: allocate b_qkv and b_o */
	size_t vocab;     /* 0: no embedding table */
};

/*
 * Checks E, H, Hkv (E % H == 0, H % Hkv == 0, sizes fit) and fills *D.
 */
enum attn_status attn_model_config_check(const struct attn_model_config *cfg, size_t *D,
					 struct attn_error *err);

/*
 * A new model with PyTorch's default initialisation drawn from a portable PRNG
 * (see prng.h), so one seed gives the same weights on every machine:
 *   w_qkv: xavier_uniform over the whole packed matrix,
 *          U(-a, a), a = sqrt(6 / (E + (H + 2 Hkv) D))
 *   w_o:   nn.Linear's default, U(-1/sqrt(H D), 1/sqrt(H D))
 *   biases: zero (as MultiheadAttention._reset_parameters does)
 *   embed: N(0, 1) (nn.Embedding's default)
 * Draw order: w_qkv row-major, then w_o, then embed. On success *out owns a
 * new model; on failure *out is NULL.
 */
enum attn_status attn_model_new_seeded(struct attn_model **out,
				       const struct attn_model_config *cfg, uint64_t seed,
				       struct attn_error *err);

/*
 * A new model holding copies of caller weights in the layout above (b_qkv,
 * b_o, embed may be NULL; b_qkv and b_o must be both NULL or both given).
 * Non-finite weights are rejected. On failure *out is NULL.
 */
enum attn_status attn_model_new_explicit(struct attn_model **out,
					 const struct attn_model_config *cfg,
					 const float *w_qkv, const float *b_qkv,
					 const float *w_o, const float *b_o,
					 const float *embed, struct attn_error *err);

/*
 * An empty model of the given configuration with zeroed, allocated arrays
 * (biases when cfg->bias, embed when cfg->vocab), for loaders to fill.
 */
enum attn_status attn_model_alloc(struct attn_model **out, const struct attn_model_config *cfg,
				  struct attn_error *err);

void attn_model_free(struct attn_model *model);

/*
 * Looks up token ids in the embedding table: out [n, E]. Fails with
 * ATTN_ERR_TOKEN (index = position in ids) for an id outside [0, vocab), and
 * ATTN_ERR_ARGUMENT when the model has no table.
 */
enum attn_status attn_model_embed(const struct attn_model *model, float *out /* [n, E] */,
				  const int64_t *ids /* [n] */, size_t n, struct attn_error *err);

#endif
