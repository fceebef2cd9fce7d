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
 * The files are built by tests/lib/ckpt_build.c from the lists of
 * tests/lib/ckpt_families.c, each malloc'd at its exact length; the
 * caller's memory is check_checkpoint_memory.c's, the RoPE tables
 * check_rope_table.c's.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/checkpoint.h"
#include "tests/lib/ckpt_build.h"
#include "tests/lib/ckpt_families.h"
#include "tests/lib/memcap.h"
#include "tests/lib/st_util.h"
#include "tests/lib/suite_main.h"

/* ---- tests: the families --------------------------------------------------- */

START_TEST(gpt2_f32_in_place)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = ckf_gpt2_cfg();

	ckf_gpt2_list(&b.l, "", "F32");
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	ckf_check_gpt2(&b, "");
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
	struct attn_checkpoint_config cfg = ckf_gpt2_cfg();

	cfg.scale_attn = 0;
	cfg.vocab = G_V; /* given: checked, not inferred */
	ckf_gpt2_list(&b.l, "transformer.", "F16");
	b.l.prefix = "";
	ckb_add(&b.l, 2, G_V, G_E, "lm_head.weight");
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	ckf_check_gpt2(&b, "transformer.");
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
	struct attn_checkpoint_config cfg = ckf_bert_cfg();
	const char *p = _i ? "bert." : "";
	const struct attn_stack *s;
	char nm[96];

	ckf_bert_list(&b.l, p, _i ? "BF16" : "F32", _i);
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
	struct attn_checkpoint_config cfg = ckf_llama_cfg(bias);
	const char *p = _i % 2 ? "model." : "";

	ckf_llama_list(&b.l, p, "F32", bias);
	ck_assert_int_eq(ckb_load(&b, &cfg, _i == 5 ? 2 : 1), ATTN_OK);
	ckf_check_llama(&b, p, bias);
	ckb_release(&b);
}
END_TEST

/* F16 and BF16 in one file, an odd F16 tensor putting the F32 ones after it
 * off 4-byte alignment: they are copied. */
START_TEST(mixed_and_unaligned)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = ckf_llama_cfg(0);

	ckf_llama_list(&b.l, "model.", "F32", 0);
	b.l.v[0].dtype = "F16";	 /* embed_tokens: 9 x 8 halves, 144 bytes: aligned still */
	b.l.v[1].dtype = "BF16"; /* input_layernorm: 8 halves */
	b.l.v[10].dtype = "F16"; /* layers.0.self_attn.rotary_emb.inv_freq, ignored, */
	b.l.v[10].d[0] = 1;	 /* cut to 2 bytes: every later tensor starts 2 bytes off */
	ck_assert_str_eq(b.l.v[10].name, "model.layers.0.self_attn.rotary_emb.inv_freq");
	ck_assert_int_eq(ckb_load(&b, &cfg, 1), ATTN_OK);
	ckf_check_llama(&b, "model.", 0);
	ck_assert_str_eq(b.ck->dtype, "mixed");
	ck_assert(!ckb_in_files(&b, b.ck->stack.final_norm.w));
	ck_assert(ckb_in_files(&b, b.ck->stack.blocks[0].qkv[0].w));
	ckb_release(&b);
}
END_TEST

/* ---- tests: refusals ------------------------------------------------------- */

START_TEST(missing_tensor)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = ckf_llama_cfg(0);
	size_t t;

	ckf_llama_list(&b.l, "model.", "F32", 0);
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
	struct attn_checkpoint_config cfg = ckf_llama_cfg(0);
	struct memcap cap;

	ckf_llama_list(&b.l, "model.", "F32", 0);
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
	struct attn_checkpoint_config cfg = ckf_llama_cfg(1); /* qwen2: q/k/v biases */

	ckf_llama_list(&b.l, "model.", "F32", 0);
	st_assert_fails(ckb_load(&b, &cfg, 1), b.err, ATTN_ERR_MISSING_TENSOR,
			"'model.layers.0.self_attn.q_proj.bias' not found in model.safetensors");
	ckb_release(&b);
}
END_TEST

START_TEST(missing_embedding)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = ckf_gpt2_cfg();

	ckf_bert_list(&b.l, "bert.", "F32", 0);
	st_assert_fails(ckb_load(&b, &cfg, 1), b.err, ATTN_ERR_MISSING_TENSOR,
			"no tensor 'transformer.wte.weight' or 'wte.weight' in model.safetensors");
	ckb_release(&b);
}
END_TEST

START_TEST(wrong_shape)
{
	struct ckb_built b = {0};
	struct attn_checkpoint_config cfg = ckf_gpt2_cfg();
	size_t t;

	ckf_gpt2_list(&b.l, "transformer.", "F32");
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
	struct attn_checkpoint_config cfg = ckf_bert_cfg();

	if (_i == 0)
		cfg.vocab = B_V + 1;
	else
		cfg.F = 4 * B_E;
	ckf_bert_list(&b.l, "", "F32", 0);
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
	struct attn_checkpoint_config cfg = ckf_llama_cfg(0);
	const char *mlp[3] = {"gate", "up", "down"};

	ckf_llama_list(&b.l, "", "F32", 0);
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
	struct attn_checkpoint_config cfg = ckf_llama_cfg(0);

	ckf_llama_list(&b.l, "model.", "F32", 0);
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
	struct attn_checkpoint_config cfg = ckf_gpt2_cfg();

	ckf_gpt2_list(&b.l, "", "F32");
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
	struct attn_checkpoint_config cfg = ckf_gpt2_cfg();
	size_t at;
	uint8_t *p;
	float nan = NAN;

	ckf_gpt2_list(&b.l, "", "F32");
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
	struct attn_checkpoint_config cfg = ckf_gpt2_cfg();

	ckf_gpt2_list(&b.l, "", "F32");
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
	suite_add_tcase(s, fam);
	suite_add_tcase(s, bad);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, checkpoint_load_suite, NULL);
}
