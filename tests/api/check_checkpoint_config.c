/*
 * check_checkpoint_config.c: config.json into struct attn_checkpoint_config
 * (api/checkpoint_config.c).
 *
 *   families  gpt2 (and GPT2Config's other names for its sizes), bert, roberta,
 *             llama (4.x rope_scaling and 5.x rope_parameters),
 *             mistral and qwen2 configs as the Hub ships them, and their
 *             defaults when keys are left out (num_key_value_heads: each
 *             class's own)
 *   refused   what the stack cannot run, each by name with the file and the
 *             JSON pointer: an unknown model_type, an activation, a rope_type,
 *             scale_attn_by_inverse_layer_idx, a relative position embedding,
 *             BERT's add_cross_attention (transformers refuses it too),
 *             a layer type other than full or sliding attention, a sliding
 *             layer without a window, a partial_rotary_factor other than 1,
 *             pruned_heads; missing and mistyped keys; broken JSON
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "api/checkpoint_config.h"
#include "tests/lib/suite_main.h"

static char err[256];

static int parse(struct attn_checkpoint_config *cfg, const char *json)
{
	err[0] = '\0';
	return api_checkpoint_config(cfg, json, strlen(json), "config.json", err, sizeof err);
}

/* json is refused with exactly the message want. */
static void assert_refused(const char *json, const char *want)
{
	struct attn_checkpoint_config cfg;

	ck_assert_int_eq(parse(&cfg, json), -1);
	ck_assert_str_eq(err, want);
}

/* gpt2's config.json on the Hub (the keys that matter, and a few that do not). */
static const char gpt2_json[] =
    "{\"activation_function\": \"gelu_new\", \"architectures\": [\"GPT2LMHeadModel\"],"
    " \"attn_pdrop\": 0.1, \"bos_token_id\": 50256, \"layer_norm_epsilon\": 1e-05,"
    " \"model_type\": \"gpt2\", \"n_ctx\": 1024, \"n_embd\": 768, \"n_head\": 12,"
    " \"n_layer\": 12, \"n_positions\": 1024, \"task_specific_params\": {\"text-generation\":"
    " {\"do_sample\": true, \"max_length\": 50}}, \"vocab_size\": 50257}";

START_TEST(gpt2)
{
	struct attn_checkpoint_config cfg;

	ck_assert_int_eq(parse(&cfg, gpt2_json), 0);
	ck_assert_int_eq(cfg.family, ATTN_FAMILY_GPT2);
	ck_assert_uint_eq(cfg.n_layers, 12);
	ck_assert_uint_eq(cfg.E, 768);
	ck_assert_uint_eq(cfg.H, 12);
	ck_assert_uint_eq(cfg.Hkv, 12);
	ck_assert_uint_eq(cfg.D, 64);
	ck_assert_uint_eq(cfg.F, 3072); /* n_inner absent: 4 E */
	ck_assert_uint_eq(cfg.vocab, 50257);
	ck_assert_uint_eq(cfg.max_positions, 1024);
	ck_assert_float_eq(cfg.norm_eps, 1e-5f);
	ck_assert_int_eq(cfg.act, ATTN_ACT_GELU_TANH);
	ck_assert_int_eq(cfg.scale_attn, 1);
	ck_assert_int_eq(parse(&cfg, "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 8,"
				     " \"n_head\": 2, \"n_inner\": null, \"activation_function\":"
				     " \"gelu\", \"scale_attn_weights\": false}"),
			 0);
	ck_assert_uint_eq(cfg.F, 32);
	ck_assert_uint_eq(cfg.vocab, 0); /* the weights tell */
	ck_assert_uint_eq(cfg.max_positions, 0);
	ck_assert_int_eq(cfg.act, ATTN_ACT_GELU_ERF);
	ck_assert_int_eq(cfg.scale_attn, 0);
	/* GPT2Config's attribute_map: the other names win over n_* */
	ck_assert_msg(parse(&cfg, "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 8,"
				  " \"n_head\": 2, \"n_positions\": 32, \"num_hidden_layers\": 3,"
				  " \"hidden_size\": 16, \"num_attention_heads\": 4,"
				  " \"max_position_embeddings\": 64}") == 0,
		      "%s", err);
	ck_assert_uint_eq(cfg.n_layers, 3);
	ck_assert_uint_eq(cfg.E, 16);
	ck_assert_uint_eq(cfg.H, 4);
	ck_assert_uint_eq(cfg.D, 4);
	ck_assert_uint_eq(cfg.F, 64);
	ck_assert_uint_eq(cfg.max_positions, 64);
}
END_TEST

static const char bert_json[] =
    "{\"architectures\": [\"BertForMaskedLM\"], \"attention_probs_dropout_prob\": 0.1,"
    " \"hidden_act\": \"gelu\", \"hidden_size\": 768, \"initializer_range\": 0.02,"
    " \"intermediate_size\": 3072, \"layer_norm_eps\": 1e-12, \"max_position_embeddings\": 512,"
    " \"model_type\": \"bert\", \"num_attention_heads\": 12, \"num_hidden_layers\": 12,"
    " \"pad_token_id\": 0, \"position_embedding_type\": \"absolute\", \"torch_dtype\": "
    "\"float32\", \"type_vocab_size\": 2, \"vocab_size\": 30522}";

START_TEST(bert)
{
	struct attn_checkpoint_config cfg;

	ck_assert_int_eq(parse(&cfg, bert_json), 0);
	ck_assert_int_eq(cfg.family, ATTN_FAMILY_BERT);
	ck_assert_uint_eq(cfg.F, 3072);
	ck_assert_uint_eq(cfg.type_vocab, 2);
	ck_assert_uint_eq(cfg.max_positions, 512);
	ck_assert_uint_eq(cfg.vocab, 30522);
	ck_assert_float_eq(cfg.norm_eps, 1e-12f);
	ck_assert_int_eq(cfg.act, ATTN_ACT_GELU_ERF);
	ck_assert_int_eq(parse(&cfg, "{\"model_type\": \"bert\", \"num_hidden_layers\": 1,"
				     " \"hidden_size\": 8, \"num_attention_heads\": 2}"),
			 0);
	ck_assert_uint_eq(cfg.F, 0);
	ck_assert_uint_eq(cfg.type_vocab, 0);
	ck_assert_float_eq(cfg.norm_eps, 1e-12f);
}
END_TEST

/* Llama 3.2 1B, in transformers 4.x's words and in 5.x's: one config. */
static const char llama_4x[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, \"head_dim\": 64,"
    " \"hidden_act\": \"silu\", \"hidden_size\": 2048, \"intermediate_size\": 8192,"
    " \"max_position_embeddings\": 131072, \"mlp_bias\": false, \"model_type\": \"llama\","
    " \"num_attention_heads\": 32, \"num_hidden_layers\": 16, \"num_key_value_heads\": 8,"
    " \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05, \"rope_scaling\": {\"factor\": 32.0,"
    " \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0,"
    " \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"},"
    " \"rope_theta\": 500000.0, \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\","
    " \"vocab_size\": 128256}";
static const char llama_5x[] =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false, \"dtype\":"
    " \"bfloat16\", \"head_dim\": 64, \"hidden_act\": \"silu\", \"hidden_size\": 2048,"
    " \"intermediate_size\": 8192, \"max_position_embeddings\": 131072, \"mlp_bias\": false,"
    " \"model_type\": \"llama\", \"num_attention_heads\": 32, \"num_hidden_layers\": 16,"
    " \"num_key_value_heads\": 8, \"rms_norm_eps\": 1e-05, \"rope_parameters\": {\"factor\":"
    " 32.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0,"
    " \"original_max_position_embeddings\": 8192, \"rope_theta\": 500000.0, \"rope_type\":"
    " \"llama3\"}, \"vocab_size\": 128256}";

START_TEST(llama_versions)
{
	struct attn_checkpoint_config a, b;

	ck_assert_int_eq(parse(&a, llama_4x), 0);
	ck_assert_int_eq(a.family, ATTN_FAMILY_LLAMA);
	ck_assert_uint_eq(a.H, 32);
	ck_assert_uint_eq(a.Hkv, 8);
	ck_assert_uint_eq(a.D, 64);
	ck_assert_uint_eq(a.F, 8192);
	ck_assert_uint_eq(a.max_positions, 131072);
	ck_assert_int_eq(a.act, ATTN_ACT_SILU);
	ck_assert_int_eq(a.rope_type, ATTN_ROPE_LLAMA3);
	ck_assert_double_eq(a.rope_theta, 500000.0);
	ck_assert_double_eq(a.rope_factor, 32.0);
	ck_assert_double_eq(a.rope_low_freq_factor, 1.0);
	ck_assert_double_eq(a.rope_high_freq_factor, 4.0);
	ck_assert_uint_eq(a.rope_original_max_positions, 8192);
	ck_assert_int_eq(a.attention_bias + a.mlp_bias + a.qkv_bias, 0);
	ck_assert_uint_eq(a.window, 0);
	ck_assert_int_eq(parse(&b, llama_5x), 0);
	ck_assert_mem_eq(&a, &b, sizeof a);
}
END_TEST

START_TEST(llama_defaults)
{
	struct attn_checkpoint_config cfg;

	ck_assert_int_eq(parse(&cfg, "{\"model_type\": \"llama\", \"num_hidden_layers\": 2,"
				     " \"hidden_size\": 64, \"num_attention_heads\": 4,"
				     " \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2},"
				     " \"attention_bias\": true, \"mlp_bias\": true}"),
			 0);
	ck_assert_uint_eq(cfg.Hkv, 4);
	ck_assert_uint_eq(cfg.D, 16);
	ck_assert_uint_eq(cfg.max_positions, 2048);
	ck_assert_float_eq(cfg.norm_eps, 1e-6f);
	ck_assert_double_eq(cfg.rope_theta, 10000.0);
	ck_assert_int_eq(cfg.rope_type, ATTN_ROPE_LINEAR);
	ck_assert_double_eq(cfg.rope_factor, 2.0);
	ck_assert_int_eq(cfg.attention_bias, 1);
	ck_assert_int_eq(cfg.mlp_bias, 1);
	ck_assert_int_eq(cfg.qkv_bias, 0);
	ck_assert_int_eq(parse(&cfg, "{\"model_type\": \"llama\", \"num_hidden_layers\": 2,"
				     " \"hidden_size\": 64, \"num_attention_heads\": 4,"
				     " \"rope_parameters\": {\"rope_type\": \"default\","
				     " \"rope_theta\": 1000000}}"),
			 0);
	ck_assert_int_eq(cfg.rope_type, ATTN_ROPE_DEFAULT);
	ck_assert_double_eq(cfg.rope_theta, 1e6);
	/* partial_rotary_factor 1 (or null) rotates every dimension, as without it */
	ck_assert_int_eq(parse(&cfg, "{\"model_type\": \"llama\", \"num_hidden_layers\": 2,"
				     " \"hidden_size\": 64, \"num_attention_heads\": 4,"
				     " \"partial_rotary_factor\": 1.0, \"rope_parameters\":"
				     " {\"partial_rotary_factor\": null}}"),
			 0);
}
END_TEST

/* num_key_value_heads left out: the class default (llama: the heads,
 * mistral 8, qwen2 32); null: the heads, in all three. */
START_TEST(kv_heads_default)
{
	static const struct {
		const char *type, *kv;
		size_t want;
	} cases[] = {
	    {"llama", "", 64},
	    {"mistral", "", 8},
	    {"qwen2", "", 32},
	    {"llama", ", \"num_key_value_heads\": null", 64},
	    {"mistral", ", \"num_key_value_heads\": null", 64},
	    {"qwen2", ", \"num_key_value_heads\": null", 64},
	};
	struct attn_checkpoint_config cfg;
	char json[512];

	snprintf(json, sizeof json,
		 "{\"model_type\": \"%s\", \"num_hidden_layers\": 2, \"hidden_size\": 4096,"
		 " \"num_attention_heads\": 64%s}",
		 cases[_i].type, cases[_i].kv);
	ck_assert_msg(parse(&cfg, json) == 0, "%s", err);
	ck_assert_uint_eq(cfg.Hkv, cases[_i].want);
}
END_TEST

START_TEST(mistral_window)
{
	static const char *const window[] = {"", ", \"sliding_window\": null",
					     ", \"sliding_window\": 4096",
					     ", \"sliding_window\": 16"};
	static const size_t want[] = {4096, 0, 4096, 16};
	struct attn_checkpoint_config cfg;
	char json[512];

	snprintf(json, sizeof json,
		 "{\"model_type\": \"mistral\", \"num_hidden_layers\": 2, \"hidden_size\": 64,"
		 " \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
		 " \"attention_bias\": true%s}",
		 window[_i]);
	ck_assert_int_eq(parse(&cfg, json), 0);
	ck_assert_uint_eq(cfg.window, want[_i]);
	ck_assert_uint_eq(cfg.Hkv, 2);
	ck_assert_uint_eq(cfg.max_positions, 131072);
	ck_assert_int_eq(cfg.attention_bias, 0); /* MistralConfig has no such key */
}
END_TEST

START_TEST(qwen2)
{
	static const char *const window[] = {
	    "", ", \"use_sliding_window\": true, \"max_window_layers\": 28",
	    ", \"use_sliding_window\": true, \"max_window_layers\": 0"};
	static const size_t want[] = {0, 0, 32768};
	struct attn_checkpoint_config cfg;
	char json[512];

	snprintf(
	    json, sizeof json,
	    "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 24, \"hidden_size\": 896,"
	    " \"num_attention_heads\": 14, \"num_key_value_heads\": 2, \"rope_theta\": 1000000.0,"
	    " \"sliding_window\": 32768, \"torch_dtype\": \"bfloat16\"%s}",
	    window[_i]);
	ck_assert_int_eq(parse(&cfg, json), 0);
	ck_assert_int_eq(cfg.qkv_bias, 1);
	ck_assert_int_eq(cfg.attention_bias, 0);
	ck_assert_uint_eq(cfg.D, 64);
	ck_assert_uint_eq(cfg.window, want[_i]);
	ck_assert_uint_eq(cfg.max_positions, 32768);
	ck_assert_double_eq(cfg.rope_theta, 1e6);
}
END_TEST

/* distilroberta-base's config.json (the keys that matter, and a few that do
 * not): BERT's reader, positions from pad_token_id 1 on. */
START_TEST(roberta)
{
	static const char json[] =
	    "{\"architectures\": [\"RobertaForMaskedLM\"], \"attention_probs_dropout_prob\": 0.1,"
	    " \"bos_token_id\": 0, \"eos_token_id\": 2, \"hidden_act\": \"gelu\","
	    " \"hidden_size\": 768, \"intermediate_size\": 3072, \"layer_norm_eps\": 1e-05,"
	    " \"max_position_embeddings\": 514, \"model_type\": \"roberta\","
	    " \"num_attention_heads\": 12, \"num_hidden_layers\": 6, \"pad_token_id\": 1,"
	    " \"type_vocab_size\": 1, \"vocab_size\": 50265}";
	struct attn_checkpoint_config cfg;

	ck_assert_msg(parse(&cfg, json) == 0, "%s", err);
	ck_assert_int_eq(cfg.family, ATTN_FAMILY_BERT);
	ck_assert_str_eq(cfg.model_type, "roberta");
	ck_assert_int_eq(cfg.positions_from_ids, 1);
	ck_assert_uint_eq(cfg.pad_id, 1);
	ck_assert_uint_eq(cfg.max_positions, 514);
	ck_assert_uint_eq(cfg.type_vocab, 1);
	ck_assert_float_eq(cfg.norm_eps, 1e-5f);
	ck_assert_int_eq(cfg.act, ATTN_ACT_GELU_ERF);
	ck_assert_int_eq(parse(&cfg, "{\"model_type\": \"bert\", \"num_hidden_layers\": 1,"
				     " \"hidden_size\": 8, \"num_attention_heads\": 2}"),
			 0);
	ck_assert_int_eq(cfg.positions_from_ids, 0); /* BERT counts from 0 */
	ck_assert_int_eq(parse(&cfg, "{\"model_type\": \"bert\", \"num_hidden_layers\": 1,"
				     " \"hidden_size\": 8, \"num_attention_heads\": 2,"
				     " \"pruned_heads\": {\"0\": []}}"),
			 0); /* nothing to prune */
}
END_TEST

/* Qwen2's windows layer by layer: max_window_layers alone, layer_types
 * (which wins over it), and use_sliding_window false (no window at all). */
START_TEST(qwen2_layers)
{
	static const struct {
		const char *keys;
		size_t window;
		unsigned char full[4];
	} cases[] = {
	    {", \"use_sliding_window\": true, \"max_window_layers\": 1", 5, {1, 0, 0, 0}},
	    {", \"use_sliding_window\": true, \"max_window_layers\": 3", 5, {1, 1, 1, 0}},
	    {", \"use_sliding_window\": true, \"max_window_layers\": 1, \"layer_types\":"
	     " [\"sliding_attention\", \"full_attention\", \"sliding_attention\","
	     " \"full_attention\"]",
	     5,
	     {0, 1, 0, 1}},
	    {", \"use_sliding_window\": true, \"layer_types\": [\"full_attention\","
	     " \"full_attention\", \"full_attention\", \"full_attention\"]",
	     0,
	     {1, 1, 1, 1}},
	    {", \"use_sliding_window\": false, \"max_window_layers\": 1", 0, {0, 0, 0, 0}},
	};
	struct attn_checkpoint_config cfg;
	char json[512];

	snprintf(
	    json, sizeof json,
	    "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 4, \"hidden_size\": 64,"
	    " \"num_attention_heads\": 4, \"num_key_value_heads\": 4, \"sliding_window\": 5%s}",
	    cases[_i].keys);
	ck_assert_msg(parse(&cfg, json) == 0, "%s", err);
	ck_assert_uint_eq(cfg.window, cases[_i].window);
	for (size_t l = 0; l < 4 && cfg.window > 0; l++)
		ck_assert_msg(cfg.full_attention[l] == cases[_i].full[l], "case %d layer %zu", _i,
			      l);
}
END_TEST

/* ---- refusals ---------------------------------------------------------------- */

#define LLAMA_HEAD                                                                                 \
	"{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 64,"               \
	" \"num_attention_heads\": 4"

#define QWEN2_HEAD                                                                                 \
	"{\"model_type\": \"qwen2\", \"num_hidden_layers\": 3, \"hidden_size\": 64,"               \
	" \"num_attention_heads\": 4, \"num_key_value_heads\": 2"

#define QWEN2_HEAD_NO_KV                                                                           \
	"{\"model_type\": \"qwen2\", \"num_hidden_layers\": 3, \"hidden_size\": 64,"               \
	" \"num_attention_heads\": 4"

START_TEST(refusals)
{
	assert_refused("{\"model_type\": \"xyz\"}",
		       "config.json: /model_type: unsupported model_type 'xyz' (supported: gpt2, "
		       "bert, roberta, llama, mistral, qwen2)");
	assert_refused("{\"n_layer\": 2}", "config.json: /model_type: missing (expected one of "
					   "gpt2, bert, roberta, llama, mistral, qwen2)");
	assert_refused(
	    "{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 8, \"n_head\": 2,"
	    " \"activation_function\": \"quick_gelu\"}",
	    "config.json: /activation_function: unsupported activation 'quick_gelu' "
	    "(supported: gelu_new, gelu_pytorch_tanh, gelu_fast, gelu, gelu_python, relu, "
	    "silu, swish)");
	assert_refused("{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 8, \"n_head\": 2,"
		       " \"scale_attn_by_inverse_layer_idx\": true}",
		       "config.json: /scale_attn_by_inverse_layer_idx: "
		       "scale_attn_by_inverse_layer_idx true is not supported: scores divided by "
		       "the layer number too");
	assert_refused("{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 8, \"n_head\": 3}",
		       "config.json: /n_head: 3 heads do not divide the hidden size 8");
	assert_refused("{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": \"8\"}",
		       "config.json: /n_embd: expected an integer in [1, 67108864]");
	assert_refused(
	    "{\"model_type\": \"bert\", \"num_hidden_layers\": 1, \"hidden_size\": 8,"
	    " \"num_attention_heads\": 2, \"position_embedding_type\": \"relative_key\"}",
	    "config.json: /position_embedding_type: unsupported position_embedding_type "
	    "'relative_key' (supported: absolute)");
	assert_refused("{\"model_type\": \"roberta\", \"num_hidden_layers\": 1, \"hidden_size\": 8,"
		       " \"num_attention_heads\": 2, \"add_cross_attention\": true}",
		       "config.json: /add_cross_attention: add_cross_attention true is not "
		       "supported: transformers' BertLayer refuses it without is_decoder");
	assert_refused("{\"model_type\": \"bert\", \"num_hidden_layers\": 1,"
		       " \"num_attention_heads\": 2}",
		       "config.json: /hidden_size: missing (expected an integer)");
	assert_refused(LLAMA_HEAD ", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4}}",
		       "config.json: /rope_scaling/rope_type: unsupported rope_type 'yarn' "
		       "(supported: default, linear, llama3)");
	assert_refused(LLAMA_HEAD ", \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 4}}",
		       "config.json: /rope_scaling/type: unsupported rope_type 'dynamic' "
		       "(supported: default, linear, llama3)");
	assert_refused(LLAMA_HEAD ", \"rope_parameters\": {\"rope_type\": \"llama3\", \"factor\":"
				  " 8, \"low_freq_factor\": 1, \"high_freq_factor\": 4}}",
		       "config.json: /rope_parameters/original_max_position_embeddings: missing "
		       "(expected an integer)");
	assert_refused(LLAMA_HEAD ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": -2}}",
		       "config.json: /rope_scaling/factor: expected a positive number");
	/* positive, but 0 or infinity as the float32 the engine divides by */
	assert_refused(LLAMA_HEAD ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 1e-300}}",
		       "config.json: /rope_scaling/factor: 1e-300 is outside float32's range");
	/* llama3's band: factors and old / low_freq_factor are float32s in the engine */
	assert_refused(LLAMA_HEAD ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\":"
				  " 8, \"low_freq_factor\": 1, \"high_freq_factor\": 1e300,"
				  " \"original_max_position_embeddings\": 8192}}",
		       "config.json: /rope_scaling/high_freq_factor: 1e+300 is outside float32's "
		       "range");
	assert_refused(LLAMA_HEAD ", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\":"
				  " 8, \"low_freq_factor\": 1e-40, \"high_freq_factor\": 4,"
				  " \"original_max_position_embeddings\": 8192}}",
		       "config.json: /rope_scaling/low_freq_factor: 1e-40 makes "
		       "original_max_position_embeddings / low_freq_factor overflow float32");
	assert_refused(LLAMA_HEAD ", \"rms_norm_eps\": 1e300}",
		       "config.json: /rms_norm_eps: 1e+300 is outside float32's range");
	/* RoPE's base: 0 as a float32 made every request 422 projection_overflow */
	assert_refused(LLAMA_HEAD ", \"rope_theta\": 1e-300}",
		       "config.json: /rope_theta: 1e-300 is outside float32's range");
	assert_refused(LLAMA_HEAD ", \"rope_parameters\": {\"rope_type\": \"default\","
				  " \"rope_theta\": 1e300}}",
		       "config.json: /rope_parameters/rope_theta: 1e+300 is outside float32's "
		       "range");
	assert_refused(LLAMA_HEAD ", \"rope_parameters\": {\"full_attention\": {\"rope_type\":"
				  " \"default\"}}}",
		       "config.json: /rope_parameters/full_attention: rope parameters per layer "
		       "type are not supported");
	assert_refused(LLAMA_HEAD ", \"partial_rotary_factor\": 0.5}",
		       "config.json: /partial_rotary_factor: partial_rotary_factor 0.5 is not "
		       "supported: RoPE rotates all 16 dimensions of each head");
	assert_refused(LLAMA_HEAD ", \"rope_parameters\": {\"rope_type\": \"default\","
				  " \"rope_theta\": 10000, \"partial_rotary_factor\": 0.25}}",
		       "config.json: /rope_parameters/partial_rotary_factor: partial_rotary_factor "
		       "0.25 is not supported: RoPE rotates all 16 dimensions of each head");
	assert_refused(LLAMA_HEAD ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2,"
				  " \"partial_rotary_factor\": \"half\"}}",
		       "config.json: /rope_scaling/partial_rotary_factor: expected a number");
	assert_refused(LLAMA_HEAD ", \"head_dim\": 15}",
		       "config.json: /head_dim: head size 15 is odd: RoPE rotates pairs");
	assert_refused(LLAMA_HEAD ", \"num_key_value_heads\": 3}",
		       "config.json: /num_key_value_heads: 3 does not divide 4 heads");
	assert_refused(QWEN2_HEAD_NO_KV "}",
		       "config.json: /num_key_value_heads: missing, and qwen2's default 32 does "
		       "not divide 4 heads");
	assert_refused(LLAMA_HEAD ", \"hidden_act\": \"gelu_10\"}",
		       "config.json: /hidden_act: unsupported activation 'gelu_10' (supported: "
		       "gelu_new, gelu_pytorch_tanh, gelu_fast, gelu, gelu_python, relu, silu, "
		       "swish)");
	assert_refused(QWEN2_HEAD
		       ", \"use_sliding_window\": true, \"layer_types\":"
		       " [\"full_attention\", \"chunked_attention\", \"full_attention\"]}",
		       "config.json: /layer_types/1: unsupported layer type 'chunked_attention' "
		       "(supported: full_attention, sliding_attention)");
	assert_refused(QWEN2_HEAD ", \"layer_types\": [\"full_attention\", \"full_attention\"]}",
		       "config.json: /layer_types: 2 entries for 3 layers");
	assert_refused(QWEN2_HEAD ", \"layer_types\": {\"0\": \"full_attention\"}}",
		       "config.json: /layer_types: expected an array of strings");
	assert_refused(QWEN2_HEAD
		       ", \"layer_types\":"
		       " [\"full_attention\", \"sliding_attention\", \"full_attention\"]}",
		       "config.json: /layer_types/1: layer 1 is sliding_attention but no sliding "
		       "window is set (use_sliding_window false or sliding_window null)");
	assert_refused(QWEN2_HEAD ", \"use_sliding_window\": true, \"layer_types\": [1, 2, 3]}",
		       "config.json: /layer_types/0: expected a string");
	assert_refused("{\"model_type\": \"roberta\", \"num_hidden_layers\": 1, \"hidden_size\": 8,"
		       " \"num_attention_heads\": 2, \"max_position_embeddings\": 16,"
		       " \"pad_token_id\": 15}",
		       "config.json: /pad_token_id: positions start at pad_token_id + 1 = 16, past "
		       "max_position_embeddings 16");
	assert_refused("{\"model_type\": \"gpt2\", \"n_layer\": 2, \"n_embd\": 8, \"n_head\": 2,"
		       " \"pruned_heads\": {\"0\": [], \"1\": [1]}}",
		       "config.json: /pruned_heads/1: pruned_heads on layer 1 are not supported: "
		       "every layer runs all 2 heads");
	assert_refused("{\"model_type\": \"bert\", \"num_hidden_layers\": 1, \"hidden_size\": 8,"
		       " \"num_attention_heads\": 2, \"pruned_heads\": {\"0\": [0]}}",
		       "config.json: /pruned_heads/0: pruned_heads on layer 0 are not supported: "
		       "every layer runs all 2 heads");
	assert_refused(LLAMA_HEAD ", \"pruned_heads\": {\"0\": 1}}",
		       "config.json: /pruned_heads/0: expected an array of heads");
	assert_refused("[1]", "config.json: expected a JSON object");
}
END_TEST

START_TEST(broken_json)
{
	struct attn_checkpoint_config cfg;

	ck_assert_int_eq(parse(&cfg, "{\"model_type\": \"gpt2\",\n \"n_layer\": }"), -1);
	ck_assert_msg(strncmp(err, "config.json:2:", 14) == 0, "%s", err);
	ck_assert_int_eq(parse(&cfg, "{\"model_type\": \"gpt2\", \"model_type\": \"bert\"}"), -1);
	ck_assert_msg(strstr(err, "duplicate") != NULL, "%s", err);
}
END_TEST

static Suite *checkpoint_config_suite(void)
{
	Suite *s = suite_create("checkpoint_config");
	TCase *fam = tcase_create("families"), *bad = tcase_create("refused");

	tcase_add_test(fam, gpt2);
	tcase_add_test(fam, bert);
	tcase_add_test(fam, roberta);
	tcase_add_test(fam, llama_versions);
	tcase_add_test(fam, llama_defaults);
	tcase_add_loop_test(fam, kv_heads_default, 0, 6);
	tcase_add_loop_test(fam, mistral_window, 0, 4);
	tcase_add_loop_test(fam, qwen2, 0, 3);
	tcase_add_loop_test(fam, qwen2_layers, 0, 5);
	tcase_add_test(bad, refusals);
	tcase_add_test(bad, broken_json);
	suite_add_tcase(s, fam);
	suite_add_tcase(s, bad);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, checkpoint_config_suite, NULL);
}
