/*
 * checkpoint_families.c: which tensors each family's stack is built from
 * (the names in checkpoint.h), their shapes from the config, and the RoPE
 * table of the Llama family.
 *
 * Shapes, outermost first, as stored: nn.Linear weights are [out, in];
 * GPT-2's Conv1D weights are [in, out] (TRANSPOSED, in_major in stack.h).
 * A copy of an nn.Linear weight (converted, or copied for the caller's
 * memory) is made [in, out] too (ck_get_linear): the stack's fast path for
 * short sequences reads W that way.
 * A size the config leaves 0 (vocab, max_positions, type_vocab, F) is read
 * from the tensor that holds it; every tensor is then checked against it.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "checkpoint_ctx.h"

#define CK_NAME 160
#define CK_SIZE_MAX ((size_t)1 << 26) /* keeps every product of two sizes exact */

/* A linear map base + what + ".weight" (and ".bias" when bias). */
static enum attn_status ck_linear(struct ck_ctx *c, struct attn_linear *l, const char *base,
				  const char *what, size_t out, size_t in, int in_major, int bias)
{
	char nm[CK_NAME];
	enum attn_status st;

	l->out = out;
	l->in = in;
	l->in_major = in_major;
	ck_name(nm, sizeof nm, "%s%s.weight", base, what);
	if (in_major)
		st = ck_get(c, &l->w, in, out, nm);
	else /* nn.Linear's [out, in]; a copy is made [in, out] */
		st = ck_get_linear(c, &l->w, out, in, nm, &l->in_major);
	if (st != ATTN_OK || !bias)
		return st;
	return ck_get(c, &l->b, out, 0, ck_name(nm, sizeof nm, "%s%s.bias", base, what));
}

/* A LayerNorm's weight and bias (bert's old names gamma and beta too). */
static enum attn_status ck_layer_norm(struct ck_ctx *c, struct attn_norm *n, const char *base,
				      const char *what, size_t E)
{
	char nm[CK_NAME], alt[CK_NAME];
	enum attn_status st;

	st = ck_get_either(c, &n->w, E, 0, ck_name(nm, sizeof nm, "%s%s.weight", base, what),
			   ck_name(alt, sizeof alt, "%s%s.gamma", base, what));
	if (st != ATTN_OK)
		return st;
	return ck_get_either(c, &n->b, E, 0, ck_name(nm, sizeof nm, "%s%s.bias", base, what),
			     ck_name(alt, sizeof alt, "%s%s.beta", base, what));
}

/* An RMSNorm's weight. */
static enum attn_status ck_rms_norm(struct ck_ctx *c, struct attn_norm *n, const char *base,
				    const char *what, size_t E)
{
	char nm[CK_NAME];

	n->b = NULL;
	return ck_get(c, &n->w, E, 0, ck_name(nm, sizeof nm, "%s%s.weight", base, what));
}

/* The config's sizes, before any product of them is taken. */
static enum attn_status ck_sizes(struct ck_ctx *c, const struct attn_stack *s)
{
	const size_t v[] = {s->n_layers, s->E, s->H, s->Hkv, s->D};
	static const char *const names[] = {"n_layers", "E", "H", "Hkv", "D"};

	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		if (v[i] == 0 || v[i] > CK_SIZE_MAX)
			return attn_fail(c->err, ATTN_ERR_DIMENSION, names[i], 0,
					 "config: %s = %zu, expected 1 .. %zu", names[i], v[i],
					 CK_SIZE_MAX);
	if (s->F > CK_SIZE_MAX || s->vocab > CK_SIZE_MAX || s->max_positions > CK_SIZE_MAX ||
	    s->type_vocab > CK_SIZE_MAX)
		return attn_fail(c->err, ATTN_ERR_DIMENSION, "config", 0,
				 "config: a size above %zu (F %zu, vocab %zu, positions %zu)",
				 CK_SIZE_MAX, s->F, s->vocab, s->max_positions);
	return ATTN_OK;
}

/* What every family takes from the config alike. D = E / H when not given. */
static enum attn_status ck_common(struct ck_ctx *c, struct attn_stack *s)
{
	const struct attn_checkpoint_config *cfg = c->cfg;

	s->family = cfg->family;
	s->n_layers = cfg->n_layers;
	s->E = cfg->E;
	s->H = cfg->H;
	s->Hkv = cfg->Hkv != 0 ? cfg->Hkv : cfg->H;
	s->D = cfg->D;
	if (s->D == 0 && cfg->H != 0) {
		if (cfg->E % cfg->H != 0)
			return attn_fail(c->err, ATTN_ERR_HEADS, "H", 0,
					 "config: hidden size %zu is not divisible by %zu heads",
					 cfg->E, cfg->H);
		s->D = cfg->E / cfg->H;
	}
	s->F = cfg->F;
	s->vocab = cfg->vocab;
	s->max_positions = cfg->max_positions;
	s->type_vocab = cfg->type_vocab;
	s->norm_eps = cfg->norm_eps;
	s->act = cfg->act;
	return ATTN_OK;
}

typedef enum attn_status (*ck_layer_fn)(struct ck_ctx *c, struct attn_block *b, size_t l);

/* The stack's blocks, each filled by layer(c, block, l). They are grown
 * as the layers are found, and the checkpoint's copy made once all are:
 * n_layers is the config's word (up to CK_SIZE_MAX, 2^26 layers, 22 GB of
 * blocks), and a folder whose config.json says more layers than its files
 * hold is refused naming the first missing tensor, not by "out of memory"
 * for blocks that would never be filled. */
static enum attn_status ck_layers(struct ck_ctx *c, ck_layer_fn layer)
{
	struct attn_stack *s = &c->ck->stack;
	struct attn_block *found = NULL, *b;
	size_t cap = 0;
	enum attn_status st = ATTN_OK;

	for (size_t l = 0; l < s->n_layers && st == ATTN_OK; l++) {
		if (l == cap) {
			size_t more = cap == 0 ? 16 : 2 * cap; /* within 2 CK_SIZE_MAX */
			void *p;

			more = more < s->n_layers ? more : s->n_layers;
			p = realloc(found, more * sizeof *found);
			if (p == NULL) {
				free(found);
				return attn_fail(c->err, ATTN_ERR_NOMEM, "files", 0,
						 "out of memory (layer %zu)", l);
			}
			found = p;
			cap = more;
		}
		memset(&found[l], 0, sizeof found[l]);
		st = layer(c, &found[l], l);
	}
	b = st == ATTN_OK ? ck_alloc(c, s->n_layers * sizeof *b) : NULL;
	if (b != NULL) {
		memcpy(b, found, s->n_layers * sizeof *b);
		s->blocks = b;
	} else if (st == ATTN_OK) {
		st = c->err != NULL ? c->err->status : ATTN_ERR_NOMEM;
	}
	free(found);
	return st;
}

/* ---- gpt2 ------------------------------------------------------------------ */

static enum attn_status ck_gpt2_layer(struct ck_ctx *c, struct attn_block *b, size_t l)
{
	const struct attn_stack *s = &c->ck->stack;
	size_t E = s->E, F = s->F;
	char base[48];
	enum attn_status st;

	ck_name(base, sizeof base, "h.%zu.", l);
	b->n_qkv = 1;
	st = ck_layer_norm(c, &b->norm1, base, "ln_1", E);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->qkv[0], base, "attn.c_attn", 3 * E, E, 1, 1);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->o, base, "attn.c_proj", E, E, 1, 1);
	if (st == ATTN_OK)
		st = ck_layer_norm(c, &b->norm2, base, "ln_2", E);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->up, base, "mlp.c_fc", F, E, 1, 1);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->down, base, "mlp.c_proj", E, F, 1, 1);
	return st;
}

enum attn_status ck_fill_gpt2(struct ck_ctx *c)
{
	struct attn_stack *s = &c->ck->stack;
	enum attn_status st = ck_common(c, s);

	s->norm_kind = ATTN_NORM_LAYER;
	s->scale = c->cfg->scale_attn ? 0.0f : 1.0f;
	if (st == ATTN_OK)
		st = ck_infer(c, &s->vocab, "wte.weight", 0);
	if (st == ATTN_OK)
		st = ck_infer(c, &s->max_positions, "wpe.weight", 0);
	if (st == ATTN_OK)
		st = ck_infer(c, &s->F, "h.0.mlp.c_fc.weight", 1); /* [E, F] */
	if (st == ATTN_OK)
		st = ck_sizes(c, s);
	if (st == ATTN_OK)
		st = ck_get_table(c, &s->wte, s->vocab, s->E, "wte.weight");
	if (st == ATTN_OK)
		st = ck_get_table(c, &s->wpe, s->max_positions, s->E, "wpe.weight");
	if (st == ATTN_OK)
		st = ck_layer_norm(c, &s->final_norm, "", "ln_f", s->E);
	return st != ATTN_OK ? st : ck_layers(c, ck_gpt2_layer);
}

/* ---- bert ------------------------------------------------------------------ */

static enum attn_status ck_bert_layer(struct ck_ctx *c, struct attn_block *b, size_t l)
{
	const struct attn_stack *s = &c->ck->stack;
	size_t E = s->E, F = s->F, HD = s->H * s->D;
	char base[48];
	enum attn_status st;

	ck_name(base, sizeof base, "encoder.layer.%zu.", l);
	b->n_qkv = 3;
	st = ck_linear(c, &b->qkv[0], base, "attention.self.query", HD, E, 0, 1);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->qkv[1], base, "attention.self.key", HD, E, 0, 1);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->qkv[2], base, "attention.self.value", HD, E, 0, 1);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->o, base, "attention.output.dense", E, HD, 0, 1);
	if (st == ATTN_OK)
		st = ck_layer_norm(c, &b->norm1, base, "attention.output.LayerNorm", E);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->up, base, "intermediate.dense", F, E, 0, 1);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->down, base, "output.dense", E, F, 0, 1);
	if (st == ATTN_OK)
		st = ck_layer_norm(c, &b->norm2, base, "output.LayerNorm", E);
	return st;
}

enum attn_status ck_fill_bert(struct ck_ctx *c)
{
	struct attn_stack *s = &c->ck->stack;
	enum attn_status st = ck_common(c, s);

	s->norm_kind = ATTN_NORM_LAYER;
	s->positions_from_ids = c->cfg->positions_from_ids;
	s->pad_id = c->cfg->pad_id;
	if (st == ATTN_OK)
		st = ck_infer(c, &s->vocab, "embeddings.word_embeddings.weight", 0);
	if (st == ATTN_OK)
		st = ck_infer(c, &s->max_positions, "embeddings.position_embeddings.weight", 0);
	if (st == ATTN_OK)
		st = ck_infer(c, &s->type_vocab, "embeddings.token_type_embeddings.weight", 0);
	if (st == ATTN_OK)
		st = ck_infer(c, &s->F, "encoder.layer.0.intermediate.dense.weight", 0);
	if (st == ATTN_OK)
		st = ck_sizes(c, s);
	if (st == ATTN_OK)
		st = ck_get_table(c, &s->wte, s->vocab, s->E, "embeddings.word_embeddings.weight");
	if (st == ATTN_OK)
		st = ck_get_table(c, &s->wpe, s->max_positions, s->E,
				  "embeddings.position_embeddings.weight");
	if (st == ATTN_OK)
		st = ck_get_table(c, &s->wtt, s->type_vocab, s->E,
				  "embeddings.token_type_embeddings.weight");
	if (st == ATTN_OK)
		st = ck_layer_norm(c, &s->emb_norm, "embeddings.", "LayerNorm", s->E);
	return st != ATTN_OK ? st : ck_layers(c, ck_bert_layer);
}

/* ---- llama (mistral, qwen2) ------------------------------------------------ */

static enum attn_status ck_llama_layer(struct ck_ctx *c, struct attn_block *b, size_t l)
{
	const struct attn_checkpoint_config *cfg = c->cfg;
	const struct attn_stack *s = &c->ck->stack;
	size_t E = s->E, F = s->F, HD = s->H * s->D, KD = s->Hkv * s->D;
	int qkv_bias = cfg->attention_bias || cfg->qkv_bias;
	char base[48];
	enum attn_status st;

	ck_name(base, sizeof base, "layers.%zu.", l);
	b->n_qkv = 3;
	b->full_attention = l < ATTN_CK_LAYER_TYPES && cfg->full_attention[l];
	st = ck_rms_norm(c, &b->norm1, base, "input_layernorm", E);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->qkv[0], base, "self_attn.q_proj", HD, E, 0, qkv_bias);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->qkv[1], base, "self_attn.k_proj", KD, E, 0, qkv_bias);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->qkv[2], base, "self_attn.v_proj", KD, E, 0, qkv_bias);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->o, base, "self_attn.o_proj", E, HD, 0, cfg->attention_bias);
	if (st == ATTN_OK)
		st = ck_rms_norm(c, &b->norm2, base, "post_attention_layernorm", E);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->gate, base, "mlp.gate_proj", F, E, 0, cfg->mlp_bias);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->up, base, "mlp.up_proj", F, E, 0, cfg->mlp_bias);
	if (st == ATTN_OK)
		st = ck_linear(c, &b->down, base, "mlp.down_proj", E, F, 0, cfg->mlp_bias);
	return st;
}

enum attn_status ck_fill_llama(struct ck_ctx *c)
{
	struct attn_stack *s = &c->ck->stack;
	float *inv_freq;
	enum attn_status st = ck_common(c, s);

	s->norm_kind = ATTN_NORM_RMS;
	s->window = c->cfg->window;
	if (st == ATTN_OK)
		st = ck_infer(c, &s->vocab, "embed_tokens.weight", 0);
	if (st == ATTN_OK)
		st = ck_infer(c, &s->F, "layers.0.mlp.gate_proj.weight", 0);
	if (st == ATTN_OK)
		st = ck_sizes(c, s);
	if (st == ATTN_OK)
		st = ck_get_table(c, &s->wte, s->vocab, s->E, "embed_tokens.weight");
	if (st == ATTN_OK)
		st = ck_rms_norm(c, &s->final_norm, "", "norm", s->E);
	if (st != ATTN_OK)
		return st;
	inv_freq = ck_alloc(c, (s->D / 2 > 0 ? s->D / 2 : 1) * sizeof(float));
	if (inv_freq == NULL)
		return c->err != NULL ? c->err->status : ATTN_ERR_NOMEM;
	attn_rope_inv_freq(inv_freq, s->D, c->cfg);
	s->inv_freq = inv_freq;
	return ck_layers(c, ck_llama_layer);
}

/* ---- RoPE ------------------------------------------------------------------ */

/*
 * After transformers' modeling_rope_utils.py, in float32 as torch computes
 * it (a Python scalar meets a float32 tensor as a float; `a / t` is
 * t.reciprocal() * a):
 *   default  inv_freq[i] = 1 / theta ** (2i / D)
 *   linear   inv_freq / factor
 *   llama3   (_compute_llama3_parameters) with wavelen = 2 pi / inv_freq:
 *            wavelen > old / low_freq_factor:   inv_freq / factor
 *            wavelen < old / high_freq_factor:  inv_freq
 *            between: (1 - s) inv_freq / factor + s inv_freq, where
 *            s = (old / wavelen - low) / (high - low)
 * (old = original_max_position_embeddings.) torch's vectorised pow may
 * differ from powf by an ulp: the tests allow for it.
 */
void attn_rope_inv_freq(float *inv_freq, size_t D, const struct attn_checkpoint_config *cfg)
{
	const double two_pi = 6.283185307179586476925;
	float base = (float)cfg->rope_theta;

	for (size_t i = 0; i < D / 2; i++)
		inv_freq[i] = 1.0f / powf(base, (float)(2 * i) / (float)D);
	if (cfg->rope_type == ATTN_ROPE_LINEAR) {
		for (size_t i = 0; i < D / 2; i++)
			inv_freq[i] = inv_freq[i] / (float)cfg->rope_factor;
	} else if (cfg->rope_type == ATTN_ROPE_LLAMA3) {
		float factor = (float)cfg->rope_factor;
		float low = (float)cfg->rope_low_freq_factor;
		float old = (float)cfg->rope_original_max_positions;
		float span = (float)(cfg->rope_high_freq_factor - cfg->rope_low_freq_factor);
		float low_wavelen =
		    (float)((double)cfg->rope_original_max_positions / cfg->rope_low_freq_factor);
		float high_wavelen =
		    (float)((double)cfg->rope_original_max_positions / cfg->rope_high_freq_factor);

		for (size_t i = 0; i < D / 2; i++) {
			float wavelen = (1.0f / inv_freq[i]) * (float)two_pi;
			float f = wavelen > low_wavelen ? inv_freq[i] / factor : inv_freq[i];
			float s = ((1.0f / wavelen) * old - low) / span;
			float smoothed = (1.0f - s) * f / factor + s * f;
			int medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);

			inv_freq[i] = medium ? smoothed : f;
		}
	}
}
