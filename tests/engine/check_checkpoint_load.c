/*
 * check_checkpoint_load.c: Hugging Face checkpoints (one file or shards) into
 * struct attn_stack (engine/checkpoint.c, engine/checkpoint_families.c).
 *
 *   families  gpt2, bert and llama files built here, with and without their
 *             prefix, in F32, F16, BF16 and a mix: every weight lands where
 *             stack.h says (tensor t's element i is st_tvalue(t, i)), sizes
 *             the config leaves 0 come from the tensors, aligned F32 stays in
 *             the file, unused tensors are ignored, bert's gamma/beta names
 *   shards    a llama split over two files; a name in both is refused
 *   rejected  a missing tensor (naming it and the files searched), a wrong
 *             shape (naming file, tensor, both shapes), a dtype, a NaN, a
 *             config size the tensor contradicts, a broken header
 *   memory    the caller's allocator and copied weights
 *             (attn_checkpoint_memory): the same values as in place, every
 *             weight out of the files but the embedding tables, each
 *             copied or converted byte reported done once, in slices of at
 *             most 4 MiB, every allocation released; a NaN in a later slice
 *             named by its element
 * The files are built by tests/lib/ckpt_build.c, each malloc'd at its exact
 * length; the RoPE tables' suite is check_rope_table.c.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/checkpoint.h"
#include "tests/lib/ckpt_build.h"
#include "tests/lib/memcap.h"
#include "tests/lib/st_util.h"
#include "tests/lib/suite_main.h"

/* ---- the families ---------------------------------------------------------- */

enum { G_E = 8, G_H = 2, G_F = 16, G_V = 11, G_P = 6, G_N = 2 };

static void gpt2_list(struct ckb_list *l, const char *prefix, const char *dtype)
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

static struct attn_checkpoint_config gpt2_cfg(void)
{
	return (struct attn_checkpoint_config){.family = ATTN_FAMILY_GPT2,
					       .n_layers = G_N,
					       .E = G_E,
					       .H = G_H,
					       .norm_eps = 1e-5f,
					       .act = ATTN_ACT_GELU_TANH,
					       .scale_attn = 1};
}

static void check_gpt2(const struct ckb_built *b, const char *p)
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

enum { B_E = 8, B_H = 2, B_F = 12, B_V = 10, B_P = 7, B_T = 2, B_N = 2 };

/* old: LayerNorm's gamma and beta, as checkpoints from before transformers 4. */
static void bert_list(struct ckb_list *l, const char *prefix, const char *dtype, int old)
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

static struct attn_checkpoint_config bert_cfg(void)
{
	return (struct attn_checkpoint_config){.family = ATTN_FAMILY_BERT,
					       .n_layers = B_N,
					       .E = B_E,
					       .H = B_H,
					       .norm_eps = 1e-12f,
					       .act = ATTN_ACT_GELU_ERF,
					       .scale_attn = 1};
}

enum { L_E = 8, L_H = 4, L_HKV = 2, L_D = 4, L_F = 12, L_V = 9, L_N = 2 };

/* bias: q/k/v (1, qwen2), and o and the MLP too (2, attention_bias + mlp_bias). */
static void llama_list(struct ckb_list *l, const char *prefix, const char *dtype, int bias)
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

static struct attn_checkpoint_config llama_cfg(int bias)
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

static void check_llama(const struct ckb_built *b, const char *p, int bias)
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

/* ---- tests: the families --------------------------------------------------- */

START_TEST(gpt2_f32_in_place)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = gpt2_cfg();

	gpt2_list(&b.l, "", "F32");
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	check_gpt2(&b, "");
	ck_assert_str_eq(b.ck->dtype, "F32");
	ck_assert(ckb_in_files(&b, b.ck->stack.wte));
	ck_assert(ckb_in_files(&b, b.ck->stack.blocks[1].qkv[0].w));
	ck_assert_float_eq(b.ck->stack.scale, 0.0f);
	ckb_release(&b);
}
END_TEST

START_TEST(gpt2_prefixed_f16)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = gpt2_cfg();

	cfg.scale_attn = 0;
	cfg.vocab = G_V; /* given: checked, not inferred */
	gpt2_list(&b.l, "transformer.", "F16");
	b.l.prefix = "";
	ckb_add(&b.l, 2, G_V, G_E, "lm_head.weight");
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	check_gpt2(&b, "transformer.");
	ck_assert_str_eq(b.ck->dtype, "F16");
	ck_assert(!ckb_in_files(&b, b.ck->stack.wte));
	ck_assert_uint_gt(b.ck->owned_bytes, (G_V + G_P) * G_E * sizeof(float));
	ck_assert_float_eq(b.ck->stack.scale, 1.0f);
	ckb_release(&b);
}
END_TEST

/* bert under "bert." in BF16 with gamma/beta, or bare in F32 with weight/bias. */
START_TEST(bert_both_names)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = bert_cfg();
	const char *p = _i ? "bert." : "";
	const struct attn_stack *s;
	char nm[96];

	bert_list(&b.l, p, _i ? "BF16" : "F32", _i);
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	s = &b.ck->stack;
	ck_assert_str_eq(b.ck->dtype, _i ? "BF16" : "F32");
	ck_assert_uint_eq(s->type_vocab, B_T);
	ck_assert_uint_eq(s->max_positions, B_P);
	ck_assert_uint_eq(s->F, B_F);
	ck_assert_ptr_null(s->final_norm.w);
	ckb_assert_tensor(&b, s->wtt, ckb_name(nm, p, "embeddings.token_type_embeddings.weight"));
	ckb_assert_tensor(
	    &b, s->emb_norm.b,
	    ckb_name(nm, p, _i ? "embeddings.LayerNorm.beta" : "embeddings.LayerNorm.bias"));
	snprintf(nm, sizeof nm, "%sencoder.layer.1.attention.self.value.weight", p);
	ckb_assert_linear(&b, &s->blocks[1].qkv[2], nm);
	snprintf(nm, sizeof nm, "%sencoder.layer.1.output.LayerNorm.%s", p,
		 _i ? "gamma" : "weight");
	ckb_assert_tensor(&b, s->blocks[1].norm2.w, nm);
	snprintf(nm, sizeof nm, "%sencoder.layer.0.intermediate.dense.bias", p);
	ckb_assert_tensor(&b, s->blocks[0].up.b, nm);
	/* F32 read in place as stored; BF16 converted, into [in, out] */
	ck_assert_int_eq(s->blocks[0].qkv[0].in_major, _i);
	ckb_release(&b);
}
END_TEST

/* llama without biases, qwen2's q/k/v biases, attention_bias + mlp_bias;
 * with "model." on odd runs, over two shards on the last. */
START_TEST(llama_biases)
{
	struct ckb_built b = {0};
	int bias = _i % 3;
	struct attn_checkpoint_config cfg = llama_cfg(bias);
	const char *p = _i % 2 ? "model." : "";

	llama_list(&b.l, p, "F32", bias);
	ck_assert_int_eq(ckb_load(&b, &cfg, _i == 5 ? 2 : 1), ATTN_OK);
	check_llama(&b, p, bias);
	ckb_release(&b);
}
END_TEST

/* F16 and BF16 in one file, an odd F16 tensor putting the F32 ones after it
 * off 4-byte alignment: they are copied. */
START_TEST(mixed_and_unaligned)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = llama_cfg(0);

	llama_list(&b.l, "model.", "F32", 0);
	b.l.v[0].dtype = "F16";	 /* embed_tokens: 9 x 8 halves, 144 bytes: aligned still */
	b.l.v[1].dtype = "BF16"; /* input_layernorm: 8 halves */
	b.l.v[10].dtype = "F16"; /* layers.0.self_attn.rotary_emb.inv_freq, ignored, */
	b.l.v[10].d[0] = 1;	 /* cut to 2 bytes: every later tensor starts 2 bytes off */
	ck_assert_str_eq(b.l.v[10].name, "model.layers.0.self_attn.rotary_emb.inv_freq");
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	check_llama(&b, "model.", 0);
	ck_assert_str_eq(b.ck->dtype, "mixed");
	ck_assert(!ckb_in_files(&b, b.ck->stack.final_norm.w));
	ck_assert(ckb_in_files(&b, b.ck->stack.blocks[0].qkv[0].w));
	ckb_release(&b);
}
END_TEST

/* ---- tests: the caller's memory -------------------------------------------- */

/* What a load did with the caller's struct attn_checkpoint_memory. */
struct mem_log {
	size_t allocs, releases;
	size_t done_bytes, done_calls, done_max;
	const struct ckb_built *b; /* the files the reports must lie in */
};

static void *log_alloc(void *ctx, size_t bytes)
{
	struct mem_log *m = ctx;
	void *p = malloc(bytes);

	if (p != NULL) {
		memset(p, 0xa5, bytes); /* "any content": not zeroed */
		m->allocs++;
	}
	return p;
}

static void log_release(void *ctx, void *p)
{
	struct mem_log *m = ctx;

	m->releases++;
	free(p);
}

static void log_done(void *ctx, size_t file, size_t at, size_t len)
{
	struct mem_log *m = ctx;

	ck_assert_uint_lt(file, m->b->n_files);
	ck_assert_uint_le(at + len, m->b->files[file].len);
	ck_assert_uint_le(len, (size_t)4 << 20);
	m->done_bytes += len;
	m->done_calls++;
	m->done_max = len > m->done_max ? len : m->done_max;
}

static struct attn_checkpoint_memory log_memory(struct mem_log *m, const struct ckb_built *b)
{
	*m = (struct mem_log){.b = b};
	return (struct attn_checkpoint_memory){
	    .copy_f32 = 1, .alloc = log_alloc, .release = log_release, .done = log_done, .ctx = m};
}

/* The stack's projection matrices, n_qkv + 4 a block (gate NULL but llama's):
 * at most 3 + 4. */
enum { BLOCK_LINEARS = 7 };

static size_t block_linears(const struct attn_block *k,
			    const struct attn_linear *out[BLOCK_LINEARS])
{
	size_t n = 0;

	ck_assert_uint_le(k->n_qkv, 3);
	for (size_t i = 0; i < k->n_qkv; i++)
		out[n++] = &k->qkv[i];
	out[n++] = &k->o;
	out[n++] = &k->up;
	if (k->gate.w != NULL)
		out[n++] = &k->gate;
	out[n++] = &k->down;
	return n;
}

/* The bytes of x [n], asserted out of the files (NULL: absent, 0 bytes). */
static size_t owned(const struct ckb_built *b, const float *x, size_t n)
{
	if (x == NULL)
		return 0;
	ck_assert_msg(!ckb_in_files(b, x), "a tensor of %zu values left in place", n);
	return n * sizeof(float);
}

static size_t owned_norm(const struct ckb_built *b, const struct attn_norm *nm, size_t E)
{
	return owned(b, nm->w, E) + owned(b, nm->b, E);
}

/* Every weight but the embedding tables out of the files, the tables in
 * them; the bytes out of them, which is all that was copied. */
static size_t assert_copied(const struct ckb_built *b)
{
	const struct attn_stack *s = &b->ck->stack;
	size_t bytes = owned_norm(b, &s->emb_norm, s->E) + owned_norm(b, &s->final_norm, s->E);

	ck_assert(ckb_in_files(b, s->wte));
	ck_assert(s->wpe == NULL || ckb_in_files(b, s->wpe));
	ck_assert(s->wtt == NULL || ckb_in_files(b, s->wtt));
	for (size_t l = 0; l < s->n_layers; l++) {
		const struct attn_block *k = &s->blocks[l];
		const struct attn_linear *lin[BLOCK_LINEARS];
		size_t n = block_linears(k, lin);

		bytes += owned_norm(b, &k->norm1, s->E) + owned_norm(b, &k->norm2, s->E);
		for (size_t i = 0; i < n; i++)
			bytes += owned(b, lin[i]->w, lin[i]->out * lin[i]->in) +
				 owned(b, lin[i]->b, lin[i]->out);
	}
	return bytes;
}

/* gpt2, bert, llama with every bias: each as it loads in place, with every
 * weight but the embedding tables copied into the caller's (unzeroed) memory. */
START_TEST(matrices_copied)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg;
	struct attn_checkpoint_memory mem;
	struct mem_log log;
	size_t copied;

	mem = log_memory(&log, &b);
	b.mem = &mem;
	if (_i == 0) {
		cfg = gpt2_cfg();
		gpt2_list(&b.l, "", "F32");
	} else if (_i == 1) {
		cfg = bert_cfg();
		bert_list(&b.l, "bert.", "F32", 0);
	} else {
		cfg = llama_cfg(2);
		llama_list(&b.l, "model.", "F32", 2);
	}
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	if (_i == 0)
		check_gpt2(&b, "");
	else if (_i == 2)
		check_llama(&b, "model.", 2);
	copied = assert_copied(&b);
	ck_assert_str_eq(b.ck->dtype, "F32");
	ck_assert_uint_eq(log.done_bytes, copied);
	ck_assert_uint_eq(log.allocs, log.done_calls); /* one slice a small tensor */
	ck_assert_uint_ge(b.ck->owned_bytes, copied);
	ckb_release(&b);
	ck_assert_uint_eq(log.releases, log.allocs);
}
END_TEST

/* gpt2 with F past one slice: c_fc [E, F] in F16 (converted), c_proj [F, E]
 * in F32 (copied), each in two slices reported in order; a NaN in the second
 * slice is named by its element. */
enum { SLICE = 1 << 20, BIG_F = SLICE / G_E + 3 };

static void big_list(struct ckb_list *l)
{
	gpt2_list(l, "", "F32");
	for (size_t t = 0; t < l->n; t++) {
		if (strstr(l->v[t].name, "mlp.c_fc.weight") != NULL) {
			l->v[t].d[1] = BIG_F;
			l->v[t].dtype = "F16";
		}
		if (strstr(l->v[t].name, "mlp.c_fc.bias") != NULL)
			l->v[t].d[0] = BIG_F;
		if (strstr(l->v[t].name, "mlp.c_proj.weight") != NULL)
			l->v[t].d[0] = BIG_F;
	}
}

START_TEST(slices_reported)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = gpt2_cfg();
	struct attn_checkpoint_memory mem;
	struct mem_log log;
	const size_t big = (size_t)G_E * BIG_F;
	size_t small, copied;

	mem = log_memory(&log, &b);
	b.mem = &mem;
	big_list(&b.l);
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	copied = assert_copied(&b);
	ckb_assert_tensor(&b, b.ck->stack.blocks[1].up.w, "h.1.mlp.c_fc.weight");
	ckb_assert_tensor(&b, b.ck->stack.blocks[0].down.w, "h.0.mlp.c_proj.weight");
	ck_assert_str_eq(b.ck->dtype, "mixed");
	/* the big two a layer: c_fc's 2 bytes a value, c_proj's 4 */
	small = copied - G_N * 2 * big * sizeof(float);
	ck_assert_uint_eq(log.done_bytes, small + G_N * big * (2 + 4));
	/* a layer's 12 tensors in a slice each, and c_fc's and c_proj's weights
	 * in a second; ln_f's two */
	ck_assert_uint_eq(log.done_calls, G_N * (12 + 2) + 2);
	ck_assert_uint_eq(log.done_max, (size_t)SLICE * 4);
	ckb_release(&b);
	ck_assert_uint_eq(log.releases, log.allocs);
}
END_TEST

/* Block 1's down and up weights, to find their bytes. */
static const float *down_1(const struct attn_stack *s)
{
	return s->blocks[1].down.w;
}

static const float *up_1(const struct attn_stack *s)
{
	return s->blocks[1].up.w;
}

/* b loaded in place first, to find the bytes of the weight `pick` returns,
 * a NaN put at its element SLICE + 5 (in a second slice), then b loaded
 * with the caller's memory: NONFINITE, the weight `name` and the element
 * named, every copy the failed load made freed. */
static void expect_nan_named(struct ckb_built *b, const struct attn_checkpoint_config *cfg,
			     const float *(*pick)(const struct attn_stack *), const char *name)
{
	const float nan = NAN;
	struct attn_checkpoint_memory mem;
	struct mem_log log;
	char want[160];
	size_t at;

	ck_assert_int_eq(ckb_load(b, cfg, 1), ATTN_OK);
	at = (size_t)((const uint8_t *)pick(&b->ck->stack) - b->bytes[0]);
	attn_checkpoint_free(b->ck);
	b->ck = NULL;
	memcpy(b->bytes[0] + at + ((size_t)SLICE + 5) * sizeof(float), &nan, sizeof nan);
	mem = log_memory(&log, b);
	ck_assert_int_eq(attn_checkpoint_load(&b->ck, cfg, b->files, 1, &mem, &b->err),
			 ATTN_ERR_NONFINITE);
	ck_assert_ptr_null(b->ck);
	ck_assert_uint_eq(b->err.index, (size_t)SLICE + 5);
	snprintf(want, sizeof want, "'%s' holds a non-finite value at element 1048581", name);
	ck_assert_msg(strstr(b->err.message, want) != NULL, "%s", b->err.message);
	ck_assert_uint_eq(log.releases, log.allocs); /* the failed load freed its copies */
}

START_TEST(nonfinite_in_later_slice)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = gpt2_cfg();

	big_list(&b.l);
	expect_nan_named(&b, &cfg, down_1, "h.1.mlp.c_proj.weight");
	ckb_release(&b);
}
END_TEST

/* bert with F past one slice: intermediate.dense [F, E] (whole rows of 8, a
 * second slice of 3 rows) and output.dense [E, F] (7 rows of F a slice, a
 * second of 1), copied into [in, out]: the values in place transposed, each
 * slice's bytes reported done once; on odd runs a NaN in the second slice
 * of intermediate.dense is named by its element in the file's order. */
enum { BIG_BF = SLICE / B_E + 3 };

static void big_bert_list(struct ckb_list *l)
{
	bert_list(l, "", "F32", 0);
	for (size_t t = 0; t < l->n; t++) {
		if (strstr(l->v[t].name, "intermediate.dense.") != NULL)
			l->v[t].d[0] = BIG_BF; /* weight [F, E], bias [F] */
		if (strstr(l->v[t].name, ".output.dense.weight") != NULL &&
		    strstr(l->v[t].name, "attention") == NULL)
			l->v[t].d[1] = BIG_BF; /* [E, F] */
	}
}

START_TEST(linear_transposed_in_slices)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = bert_cfg();
	struct attn_checkpoint_memory mem;
	struct mem_log log;
	const struct attn_block *k;

	big_bert_list(&b.l);
	if (_i == 1) {
		expect_nan_named(&b, &cfg, up_1, "encoder.layer.1.intermediate.dense.weight");
		ckb_release(&b);
		return;
	}
	mem = log_memory(&log, &b);
	b.mem = &mem;
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	k = &b.ck->stack.blocks[1];
	ck_assert_int_eq(k->up.in_major, 1);
	ck_assert_int_eq(k->down.in_major, 1);
	ckb_assert_linear(&b, &k->up, "encoder.layer.1.intermediate.dense.weight");
	ckb_assert_linear(&b, &k->down, "encoder.layer.1.output.dense.weight");
	ck_assert_uint_eq(log.done_bytes, assert_copied(&b));
	ck_assert_uint_le(log.done_max, (size_t)SLICE * 4);
	ckb_release(&b);
	ck_assert_uint_eq(log.releases, log.allocs);
}
END_TEST

START_TEST(memory_half_given)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = gpt2_cfg();
	struct attn_checkpoint_memory mem = {.alloc = log_alloc};

	b.mem = &mem;
	gpt2_list(&b.l, "", "F32");
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_ERR_ARGUMENT);
	ck_assert_msg(strstr(b.err.message, "alloc and mem->release") != NULL, "%s", b.err.message);
	ckb_release(&b);
}
END_TEST

/* ---- tests: refusals ------------------------------------------------------- */

START_TEST(missing_tensor)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = llama_cfg(0);
	size_t t;

	llama_list(&b.l, "model.", "F32", 0);
	t = ckb_find(&b.l, "model.layers.1.mlp.down_proj.weight");
	snprintf(b.l.v[t].name, sizeof b.l.v[t].name, "model.layers.1.mlp.down.weight");
	st_assert_fails(ckb_load(&b, &cfg, 2), b.err, ATTN_ERR_MISSING_TENSOR,
			"tensor 'model.layers.1.mlp.down_proj.weight' not found in "
			"model-00001-of-00002.safetensors, model-00002-of-00002.safetensors");
	ckb_release(&b);
}
END_TEST

/* A config of 2^26 layers (the most ck_sizes takes) over files of two: the
 * loader used to allocate the 2^26 blocks (22 GB) before it looked for
 * layer 2, so with less memory than that the refusal was "out of memory"
 * and not the missing tensor. Under an address-space cap of the process's
 * size + 256 MiB (not under ASan or valgrind, which need the room) it must
 * still name layer 2's first tensor. */
START_TEST(layers_past_the_files)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = llama_cfg(0);
	struct memcap cap;

	llama_list(&b.l, "model.", "F32", 0);
	cfg.n_layers = (size_t)1 << 26;
	memcap_begin(&cap, (size_t)256 << 20);
	enum attn_status st = ckb_load(&b, &cfg, 1);
	memcap_end(&cap);
	st_assert_fails(st, b.err, ATTN_ERR_MISSING_TENSOR,
			"tensor 'model.layers.2.input_layernorm.weight' not found in "
			"model.safetensors");
	ckb_release(&b);
}
END_TEST

START_TEST(missing_bias)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = llama_cfg(1); /* qwen2: q/k/v biases */

	llama_list(&b.l, "model.", "F32", 0);
	st_assert_fails(ckb_load(&b, &cfg, 1), b.err, ATTN_ERR_MISSING_TENSOR,
			"'model.layers.0.self_attn.q_proj.bias' not found in model.safetensors");
	ckb_release(&b);
}
END_TEST

START_TEST(missing_embedding)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = gpt2_cfg();

	bert_list(&b.l, "bert.", "F32", 0);
	st_assert_fails(ckb_load(&b, &cfg, 1), b.err, ATTN_ERR_MISSING_TENSOR,
			"no tensor 'transformer.wte.weight' or 'wte.weight' in model.safetensors");
	ckb_release(&b);
}
END_TEST

START_TEST(wrong_shape)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = gpt2_cfg();
	size_t t;

	gpt2_list(&b.l, "transformer.", "F32");
	t = ckb_find(&b.l, "transformer.h.1.attn.c_attn.weight");
	b.l.v[t].d[0] = 3 * G_E; /* stored [out, in] as nn.Linear would */
	b.l.v[t].d[1] = G_E;
	st_assert_fails(ckb_load(&b, &cfg, 1), b.err, ATTN_ERR_SHAPE_MISMATCH,
			"model.safetensors: tensor 'transformer.h.1.attn.c_attn.weight' has "
			"shape [24, 8], expected [8, 24]");
	ckb_release(&b);
}
END_TEST

/* A config size the tensors contradict: vocab, then F. */
START_TEST(config_contradicted)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = bert_cfg();

	if (_i == 0)
		cfg.vocab = B_V + 1;
	else
		cfg.F = 4 * B_E;
	bert_list(&b.l, "", "F32", 0);
	st_assert_fails(ckb_load(&b, &cfg, 1), b.err, ATTN_ERR_SHAPE_MISMATCH,
			_i == 0 ? "'embeddings.word_embeddings.weight' has shape [10, 8], "
				  "expected [11, 8]"
				: "'encoder.layer.0.intermediate.dense.weight' has shape [12, 8], "
				  "expected [32, 8]");
	ckb_release(&b);
}
END_TEST

/* A size the config leaves out, read from a tensor with 0 along that axis:
 * refused at that tensor, not as a later one's odd rank. */
START_TEST(inferred_size_zero)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = llama_cfg(0);
	const char *mlp[3] = {"gate", "up", "down"};

	llama_list(&b.l, "", "F32", 0);
	for (size_t n = 0; n < L_N; n++)
		for (size_t i = 0; i < 3; i++) {
			char nm[64];

			snprintf(nm, sizeof nm, "layers.%zu.mlp.%s_proj.weight", n, mlp[i]);
			b.l.v[ckb_find(&b.l, nm)].d[i == 2 ? 1 : 0] = 0;
		}
	st_assert_fails(ckb_load(&b, &cfg, 1), b.err, ATTN_ERR_SHAPE_MISMATCH,
			"model.safetensors: tensor 'layers.0.mlp.gate_proj.weight' has shape "
			"[0, 8]: the config gives no size and the tensor's axis 0 gives 0");
	ckb_release(&b);
}
END_TEST

START_TEST(duplicate_across_shards)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = llama_cfg(0);

	llama_list(&b.l, "model.", "F32", 0);
	b.l.prefix = "model.";
	/* another norm.weight, at an index of the other parity: the other shard */
	if ((b.l.n - ckb_find(&b.l, "model.norm.weight")) % 2 == 0)
		ckb_add(&b.l, 1, 1, 0, "padding");
	ckb_add(&b.l, 1, L_E, 0, "norm.weight");
	st_assert_fails(ckb_load(&b, &cfg, 2), b.err, ATTN_ERR_FORMAT,
			"tensor 'model.norm.weight' is in both model-0000");
	ckb_release(&b);
}
END_TEST

START_TEST(bad_dtype)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = gpt2_cfg();

	gpt2_list(&b.l, "", "F32");
	b.l.v[ckb_find(&b.l, "h.0.ln_2.bias")].dtype = "I64";
	st_assert_fails(
	    ckb_load(&b, &cfg, 1), b.err, ATTN_ERR_DTYPE,
	    "model.safetensors: tensor 'h.0.ln_2.bias' has dtype I64; only F32, F16 and BF16 load");
	ckb_release(&b);
}
END_TEST

START_TEST(nonfinite_weight)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = gpt2_cfg();
	size_t at;
	uint8_t *p;
	float nan = NAN;

	gpt2_list(&b.l, "", "F32");
	/* build once to find the tensor's bytes, then poison element 3 */
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	at = (size_t)((const uint8_t *)b.ck->stack.blocks[1].up.b - b.bytes[0]);
	attn_checkpoint_free(b.ck);
	b.ck = NULL;
	p = b.bytes[0] + at + 3 * sizeof(float);
	memcpy(p, &nan, sizeof nan);
	ck_assert_int_eq(attn_checkpoint_load(&b.ck, &cfg, b.files, 1, NULL, &b.err),
			 ATTN_ERR_NONFINITE);
	ck_assert_ptr_null(b.ck);
	ck_assert_uint_eq(b.err.index, 3);
	ck_assert_msg(strstr(b.err.message, "tensor 'h.1.mlp.c_fc.bias' holds a non-finite "
					    "value at element 3") != NULL,
		      "%s", b.err.message);
	ckb_release(&b);
}
END_TEST

START_TEST(broken_header)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = gpt2_cfg();

	gpt2_list(&b.l, "", "F32");
	ck_assert_int_eq(ckb_load(&b, &cfg, 2), ATTN_OK);
	attn_checkpoint_free(b.ck);
	b.ck = NULL;
	b.files[1].len = 12; /* the header cut short */
	ck_assert_int_ne(attn_checkpoint_load(&b.ck, &cfg, b.files, 2, NULL, &b.err), ATTN_OK);
	ck_assert_ptr_null(b.ck);
	ck_assert_msg(strncmp(b.err.message, "model-00002-of-00002.safetensors: ", 34) == 0, "%s",
		      b.err.message);
	ckb_release(&b);
}
END_TEST

static Suite *checkpoint_load_suite(void)
{
	Suite *s = suite_create("checkpoint_load");
	TCase *fam = tcase_create("families"), *bad = tcase_create("rejected");
	TCase *mem = tcase_create("memory");

	tcase_add_test(fam, gpt2_f32_in_place);
	tcase_add_test(fam, gpt2_prefixed_f16);
	tcase_add_loop_test(fam, bert_both_names, 0, 2);
	tcase_add_loop_test(fam, llama_biases, 0, 6);
	tcase_add_test(fam, mixed_and_unaligned);
	tcase_add_test(bad, missing_tensor);
	tcase_add_test(bad, layers_past_the_files);
	tcase_add_test(bad, missing_bias);
	tcase_add_test(bad, missing_embedding);
	tcase_add_test(bad, wrong_shape);
	tcase_add_loop_test(bad, config_contradicted, 0, 2);
	tcase_add_test(bad, inferred_size_zero);
	tcase_add_test(bad, duplicate_across_shards);
	tcase_add_test(bad, bad_dtype);
	tcase_add_test(bad, nonfinite_weight);
	tcase_add_test(bad, broken_header);
	tcase_add_loop_test(mem, matrices_copied, 0, 3);
	tcase_add_test(mem, slices_reported);
	tcase_add_test(mem, nonfinite_in_later_slice);
	tcase_add_loop_test(mem, linear_transposed_in_slices, 0, 2);
	tcase_add_test(mem, memory_half_given);
	suite_add_tcase(s, fam);
	suite_add_tcase(s, bad);
	suite_add_tcase(s, mem);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, checkpoint_load_suite, NULL);
}
