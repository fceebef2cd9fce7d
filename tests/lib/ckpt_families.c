/* ckpt_families.c: the loader suites' gpt2, bert and llama checkpoints (see
 * ckpt_families.h). */
#include "tests/lib/ckpt_families.h"

#include <check.h>
#include <stdio.h>

#include "tests/lib/st_util.h"

void ckf_gpt2_list(struct ckb_list *l, const char *prefix, const char *dtype)
{
	l->n = 0;
	l->prefix = prefix;
	l->dtype = dtype;
	ckb_add(l, 2, G_V, G_E, "wte.weight");
	ckb_add(l, 2, G_P, G_E, "wpe.weight");
	for (size_t n = 0; n < G_N; n++) {
		ckb_add(l, 1, G_E, 0, "h.%zu.ln_1.weight", n);
		ckb_add(l, 1, G_E, 0, "h.%zu.ln_1.bias", n);
		ckb_add(l, 2, G_E, 3 * G_E, "h.%zu.attn.c_attn.weight", n);
		ckb_add(l, 1, 3 * G_E, 0, "h.%zu.attn.c_attn.bias", n);
		ckb_add(l, 2, G_E, G_E, "h.%zu.attn.c_proj.weight", n);
		ckb_add(l, 1, G_E, 0, "h.%zu.attn.c_proj.bias", n);
		ckb_add(l, 1, G_E, 0, "h.%zu.ln_2.weight", n);
		ckb_add(l, 1, G_E, 0, "h.%zu.ln_2.bias", n);
		ckb_add(l, 2, G_E, G_F, "h.%zu.mlp.c_fc.weight", n);
		ckb_add(l, 1, G_F, 0, "h.%zu.mlp.c_fc.bias", n);
		ckb_add(l, 2, G_F, G_E, "h.%zu.mlp.c_proj.weight", n);
		ckb_add(l, 1, G_E, 0, "h.%zu.mlp.c_proj.bias", n);
		ckb_add(l, 2, 4, 4, "h.%zu.attn.bias", n); /* the causal-mask buffer: ignored */
	}
	ckb_add(l, 1, G_E, 0, "ln_f.weight");
	ckb_add(l, 1, G_E, 0, "ln_f.bias");
}

struct attn_checkpoint_config ckf_gpt2_cfg(void)
{
	return (struct attn_checkpoint_config){.family = ATTN_FAMILY_GPT2,
					       .n_layers = G_N,
					       .E = G_E,
					       .H = G_H,
					       .norm_eps = 1e-5f,
					       .act = ATTN_ACT_GELU_TANH,
					       .scale_attn = 1};
}

void ckf_check_gpt2(const struct ckb_built *b, const char *p)
{
	const struct attn_stack *s = &b->ck->stack;
	char nm[96];

	ck_assert_int_eq(s->family, ATTN_FAMILY_GPT2);
	ck_assert_uint_eq(s->D, G_E / G_H);
	ck_assert_uint_eq(s->F, G_F);
	ck_assert_uint_eq(s->vocab, G_V);
	ck_assert_uint_eq(s->max_positions, G_P);
	ck_assert_int_eq(s->norm_kind, ATTN_NORM_LAYER);
	ckb_assert_tensor(b, s->wte, ckb_name(nm, p, "wte.weight"));
	ckb_assert_tensor(b, s->final_norm.b, ckb_name(nm, p, "ln_f.bias"));
	for (size_t n = 0; n < G_N; n++) {
		const struct attn_block *k = &s->blocks[n];

		ck_assert_uint_eq(k->n_qkv, 1);
		ck_assert_int_eq(k->qkv[0].in_major, 1);
		ck_assert_uint_eq(k->qkv[0].out, 3 * G_E);
		snprintf(nm, sizeof nm, "%sh.%zu.attn.c_attn.weight", p, n);
		ckb_assert_tensor(b, k->qkv[0].w, nm);
		snprintf(nm, sizeof nm, "%sh.%zu.mlp.c_proj.weight", p, n);
		ckb_assert_tensor(b, k->down.w, nm);
		snprintf(nm, sizeof nm, "%sh.%zu.ln_2.bias", p, n);
		ckb_assert_tensor(b, k->norm2.b, nm);
		ck_assert_ptr_null(k->gate.w);
	}
}


/* old: LayerNorm's gamma and beta, as checkpoints from before transformers 4. */
void ckf_bert_list(struct ckb_list *l, const char *prefix, const char *dtype, int old)
{
	const char *w = old ? "gamma" : "weight", *bb = old ? "beta" : "bias";
	const char *lin[4] = {"attention.self.query", "attention.self.key", "attention.self.value",
			      "attention.output.dense"};

	l->n = 0;
	l->prefix = prefix;
	l->dtype = dtype;
	ckb_add(l, 2, B_V, B_E, "embeddings.word_embeddings.weight");
	ckb_add(l, 2, B_P, B_E, "embeddings.position_embeddings.weight");
	ckb_add(l, 2, B_T, B_E, "embeddings.token_type_embeddings.weight");
	ckb_add(l, 1, B_E, 0, "embeddings.LayerNorm.%s", w);
	ckb_add(l, 1, B_E, 0, "embeddings.LayerNorm.%s", bb);
	for (size_t n = 0; n < B_N; n++) {
		for (size_t i = 0; i < 4; i++) {
			ckb_add(l, 2, B_E, B_E, "encoder.layer.%zu.%s.weight", n, lin[i]);
			ckb_add(l, 1, B_E, 0, "encoder.layer.%zu.%s.bias", n, lin[i]);
		}
		ckb_add(l, 1, B_E, 0, "encoder.layer.%zu.attention.output.LayerNorm.%s", n, w);
		ckb_add(l, 1, B_E, 0, "encoder.layer.%zu.attention.output.LayerNorm.%s", n, bb);
		ckb_add(l, 2, B_F, B_E, "encoder.layer.%zu.intermediate.dense.weight", n);
		ckb_add(l, 1, B_F, 0, "encoder.layer.%zu.intermediate.dense.bias", n);
		ckb_add(l, 2, B_E, B_F, "encoder.layer.%zu.output.dense.weight", n);
		ckb_add(l, 1, B_E, 0, "encoder.layer.%zu.output.dense.bias", n);
		ckb_add(l, 1, B_E, 0, "encoder.layer.%zu.output.LayerNorm.%s", n, w);
		ckb_add(l, 1, B_E, 0, "encoder.layer.%zu.output.LayerNorm.%s", n, bb);
	}
	l->prefix = ""; /* BertForPreTraining's heads, outside the prefix: ignored */
	ckb_add(l, 2, B_E, B_E, "%spooler.dense.weight", prefix);
	ckb_add(l, 1, B_V, 0, "cls.predictions.bias");
}

struct attn_checkpoint_config ckf_bert_cfg(void)
{
	return (struct attn_checkpoint_config){.family = ATTN_FAMILY_BERT,
					       .n_layers = B_N,
					       .E = B_E,
					       .H = B_H,
					       .norm_eps = 1e-12f,
					       .act = ATTN_ACT_GELU_ERF,
					       .scale_attn = 1};
}


/* bias: q/k/v (1, qwen2), and o and the MLP too (2, attention_bias + mlp_bias). */
void ckf_llama_list(struct ckb_list *l, const char *prefix, const char *dtype, int bias)
{
	const char *proj[4] = {"q", "k", "v", "o"};
	const size_t rows[4] = {L_H * L_D, L_HKV * L_D, L_HKV * L_D, L_E};
	const char *mlp[3] = {"gate", "up", "down"};

	l->n = 0;
	l->prefix = prefix;
	l->dtype = dtype;
	ckb_add(l, 2, L_V, L_E, "embed_tokens.weight");
	for (size_t n = 0; n < L_N; n++) {
		ckb_add(l, 1, L_E, 0, "layers.%zu.input_layernorm.weight", n);
		for (size_t i = 0; i < 4; i++) {
			ckb_add(l, 2, rows[i], i == 3 ? L_H * L_D : L_E,
				"layers.%zu.self_attn.%s_proj.weight", n, proj[i]);
			if (bias == 2 || (bias == 1 && i < 3))
				ckb_add(l, 1, rows[i], 0, "layers.%zu.self_attn.%s_proj.bias", n,
					proj[i]);
		}
		ckb_add(l, 1, L_E, 0, "layers.%zu.post_attention_layernorm.weight", n);
		for (size_t i = 0; i < 3; i++) {
			ckb_add(l, 2, i == 2 ? L_E : L_F, i == 2 ? L_F : L_E,
				"layers.%zu.mlp.%s_proj.weight", n, mlp[i]);
			if (bias == 2)
				ckb_add(l, 1, i == 2 ? L_E : L_F, 0, "layers.%zu.mlp.%s_proj.bias",
					n, mlp[i]);
		}
		ckb_add(l, 1, L_D / 2, 0, "layers.%zu.self_attn.rotary_emb.inv_freq", n);
	}
	ckb_add(l, 1, L_E, 0, "norm.weight");
	l->prefix = "";
	ckb_add(l, 2, L_V, L_E, "lm_head.weight");
}

struct attn_checkpoint_config ckf_llama_cfg(int bias)
{
	return (struct attn_checkpoint_config){.family = ATTN_FAMILY_LLAMA,
					       .n_layers = L_N,
					       .E = L_E,
					       .H = L_H,
					       .Hkv = L_HKV,
					       .D = L_D,
					       .max_positions = 64,
					       .norm_eps = 1e-6f,
					       .act = ATTN_ACT_SILU,
					       .qkv_bias = bias == 1,
					       .attention_bias = bias == 2,
					       .mlp_bias = bias == 2,
					       .scale_attn = 1,
					       .rope_theta = 10000.0,
					       .rope_type = ATTN_ROPE_DEFAULT};
}

void ckf_check_llama(const struct ckb_built *b, const char *p, int bias)
{
	const struct attn_stack *s = &b->ck->stack;
	char nm[96];

	ck_assert_int_eq(s->family, ATTN_FAMILY_LLAMA);
	ck_assert_int_eq(s->norm_kind, ATTN_NORM_RMS);
	ck_assert_uint_eq(s->F, L_F);
	ck_assert_uint_eq(s->vocab, L_V);
	ck_assert_ptr_nonnull(s->inv_freq);
	ck_assert_float_eq(s->inv_freq[0], 1.0f);
	ck_assert_float_eq(s->inv_freq[1], 0.01f);
	ckb_assert_tensor(b, s->wte, ckb_name(nm, p, "embed_tokens.weight"));
	ckb_assert_tensor(b, s->final_norm.w, ckb_name(nm, p, "norm.weight"));
	ck_assert_ptr_null(s->final_norm.b);
	for (size_t n = 0; n < L_N; n++) {
		const struct attn_block *k = &s->blocks[n];

		ck_assert_uint_eq(k->n_qkv, 3);
		ck_assert_uint_eq(k->qkv[1].out, L_HKV * L_D);
		snprintf(nm, sizeof nm, "%slayers.%zu.self_attn.k_proj.weight", p, n);
		ckb_assert_linear(b, &k->qkv[1], nm);
		snprintf(nm, sizeof nm, "%slayers.%zu.mlp.gate_proj.weight", p, n);
		ckb_assert_linear(b, &k->gate, nm);
		snprintf(nm, sizeof nm, "%slayers.%zu.self_attn.o_proj.weight", p, n);
		ckb_assert_linear(b, &k->o, nm);
		ck_assert_uint_eq(k->o.in, L_H * L_D);
		if (bias >= 1) {
			snprintf(nm, sizeof nm, "%slayers.%zu.self_attn.v_proj.bias", p, n);
			ckb_assert_tensor(b, k->qkv[2].b, nm);
		} else {
			ck_assert_ptr_null(k->qkv[2].b);
		}
		if (bias == 2) {
			snprintf(nm, sizeof nm, "%slayers.%zu.mlp.down_proj.bias", p, n);
			ckb_assert_tensor(b, k->down.b, nm);
			snprintf(nm, sizeof nm, "%slayers.%zu.self_attn.o_proj.bias", p, n);
			ckb_assert_tensor(b, k->o.b, nm);
		} else {
			ck_assert_ptr_null(k->o.b);
			ck_assert_ptr_null(k->down.b);
		}
	}
}
