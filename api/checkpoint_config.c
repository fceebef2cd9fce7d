/*
 * checkpoint_config.c: config.json into struct attn_checkpoint_config (see
 * checkpoint_config.h). One reader per family, each a list of the keys its
 * transformers config class reads (4.x names, defaults from its __init__):
 *   gpt2     GPT2Config
 *   bert     BertConfig; RobertaConfig (roberta: the same keys, and
 *            pad_token_id, where RobertaEmbeddings' positions start)
 *   llama    LlamaConfig, MistralConfig, Qwen2Config (one reader, three
 *            defaults tables: context length, biases, sliding window)
 * Failures go through the tokenizer files' reader (tokenizer_reader.h), so
 * messages read "config.json: /rope_scaling/factor: expected a number".
 */
#include "checkpoint_config.h"

#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tokenizer_reader.h"

#define CFG_SIZE_MAX ((json_int_t)1 << 26) /* the engine's bound on every size */

/* ---- fields ---------------------------------------------------------------- */

/* A size in [1, CFG_SIZE_MAX]; absent or null -> dflt, or an error when dflt < 0.
 * (A dflt of 0 means "the weights tell".) */
static int cfg_size(struct rd *r, json_t *obj, const char *key, json_int_t dflt, size_t *out)
{
	json_t *v = json_object_get(obj, key);
	size_t up;

	if ((v == NULL || json_is_null(v)) && dflt < 0)
		return rd_fail_key(r, key, "missing (expected an integer)");
	if (v == NULL || json_is_null(v)) {
		*out = (size_t)dflt;
		return 0;
	}
	up = rd_key(r, key);
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > CFG_SIZE_MAX)
		return rd_fail(r, "expected an integer in [1, %lld]", (long long)CFG_SIZE_MAX);
	rd_up(r, up);
	*out = (size_t)json_integer_value(v);
	return 0;
}

/* A finite positive number (integer or real); absent -> dflt, or an error
 * when dflt < 0. */
static int cfg_number(struct rd *r, json_t *obj, const char *key, double dflt, double *out)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL && dflt < 0)
		return rd_fail_key(r, key, "missing (expected a number)");
	if (v == NULL) {
		*out = dflt;
		return 0;
	}
	if (!json_is_number(v) || !(json_number_value(v) > 0) || !isfinite(json_number_value(v)))
		return rd_fail_key(r, key, "expected a positive number");
	*out = json_number_value(v);
	return 0;
}

/* A positive number the engine uses as a float: one that float32 rounds to
 * 0 or infinity (1e-300, 1e300) is refused, not run as that. */
static int cfg_f32(struct rd *r, json_t *obj, const char *key, double dflt, double *out)
{
	if (cfg_number(r, obj, key, dflt, out) != 0)
		return -1;
	/* compared before the conversion, which past FLT_MAX is undefined */
	if (*out > FLT_MAX || !((float)*out > 0))
		return rd_fail_key(r, key, "%g is outside float32's range", *out);
	return 0;
}

static int cfg_float(struct rd *r, json_t *obj, const char *key, double dflt, float *out)
{
	double d;

	if (cfg_f32(r, obj, key, dflt, &d) != 0)
		return -1;
	*out = (float)d;
	return 0;
}

/* A boolean that must not be `bad` for the stack to run (named in the refusal). */
static int cfg_refuse_bool(struct rd *r, json_t *obj, const char *key, int bad, const char *why)
{
	int v;

	if (rd_bool(r, obj, key, !bad, &v) != 0)
		return -1;
	if (v == bad)
		return rd_fail_key(r, key, "%s %s is not supported: %s", key,
				   bad ? "true" : "false", why);
	return 0;
}

/* A string member among names[] (ending in NULL); absent -> dflt. *i its index. */
static int cfg_choice(struct rd *r, json_t *obj, const char *key, const char *const *names,
		      const char *dflt, const char *what, const char *supported, size_t *i)
{
	json_t *v = json_object_get(obj, key);
	const char *s = dflt;
	char q[QUOTE_MAX + 4];

	if (v != NULL && !json_is_string(v))
		return rd_fail_key(r, key, "expected a string");
	if (v != NULL)
		s = json_string_value(v);
	for (*i = 0; names[*i] != NULL; (*i)++)
		if (strcmp(names[*i], s) == 0)
			return 0;
	return rd_fail_key(r, key, "unsupported %s '%s' (supported: %s)", what, rd_quote(q, s),
			   supported);
}

/*
 * Activations by transformers' ACT2FN name. gelu_fast is gelu_new's formula
 * with sqrt(2/pi) written 0.7978845608, the same float: the same activation
 * in float32. quick_gelu, gelu_10, gelu_accurate and the rest are other
 * functions, refused.
 */
static int cfg_act(struct rd *r, json_t *obj, const char *key, const char *dflt,
		   enum attn_activation *act)
{
	static const char *const names[] = {"gelu_new",	   "gelu_pytorch_tanh",
					    "gelu_fast",   "gelu",
					    "gelu_python", "relu",
					    "silu",	   "swish",
					    NULL};
	static const enum attn_activation acts[] = {
	    ATTN_ACT_GELU_TANH, ATTN_ACT_GELU_TANH, ATTN_ACT_GELU_TANH, ATTN_ACT_GELU_ERF,
	    ATTN_ACT_GELU_ERF,	ATTN_ACT_RELU,	    ATTN_ACT_SILU,	ATTN_ACT_SILU};
	size_t i;

	if (cfg_choice(r, obj, key, names, dflt, "activation",
		       "gelu_new, gelu_pytorch_tanh, gelu_fast, gelu, gelu_python, relu, silu, "
		       "swish",
		       &i) != 0)
		return -1;
	*act = acts[i];
	return 0;
}

/* n_layers, E, H: required by every family. */
static int cfg_shape(struct rd *r, json_t *o, struct attn_checkpoint_config *cfg,
		     const char *layers, const char *embd, const char *heads)
{
	if (cfg_size(r, o, layers, -1, &cfg->n_layers) != 0 ||
	    cfg_size(r, o, embd, -1, &cfg->E) != 0 || cfg_size(r, o, heads, -1, &cfg->H) != 0)
		return -1;
	return 0;
}

/* D = E / H, for the families without head_dim. */
static int cfg_even_heads(struct rd *r, struct attn_checkpoint_config *cfg, const char *heads)
{
	if (cfg->E % cfg->H != 0)
		return rd_fail_key(r, heads, "%zu heads do not divide the hidden size %zu", cfg->H,
				   cfg->E);
	cfg->D = cfg->E / cfg->H;
	cfg->Hkv = cfg->H;
	return 0;
}

/* ---- gpt2 and bert ----------------------------------------------------------- */

/*
 * GPT2Config's attribute_map makes num_hidden_layers, hidden_size,
 * num_attention_heads and max_position_embeddings other names for n_layer,
 * n_embd, n_head and n_positions. PretrainedConfig sets such leftover keys
 * after GPT2Config's own, so where both are written the other name wins.
 */
static const char *gpt2_key(json_t *o, const char *key, const char *alias)
{
	return json_object_get(o, alias) != NULL ? alias : key;
}

static int read_gpt2(struct rd *r, json_t *o, struct attn_checkpoint_config *cfg)
{
	const char *heads = gpt2_key(o, "n_head", "num_attention_heads");

	cfg->family = ATTN_FAMILY_GPT2;
	if (cfg_shape(r, o, cfg, gpt2_key(o, "n_layer", "num_hidden_layers"),
		      gpt2_key(o, "n_embd", "hidden_size"), heads) != 0 ||
	    cfg_even_heads(r, cfg, heads) != 0 ||
	    cfg_size(r, o, gpt2_key(o, "n_positions", "max_position_embeddings"), 0,
		     &cfg->max_positions) != 0 ||
	    cfg_size(r, o, "vocab_size", 0, &cfg->vocab) != 0 ||
	    cfg_size(r, o, "n_inner", (json_int_t)(4 * cfg->E), &cfg->F) != 0 ||
	    cfg_float(r, o, "layer_norm_epsilon", 1e-5, &cfg->norm_eps) != 0 ||
	    cfg_act(r, o, "activation_function", "gelu_new", &cfg->act) != 0 ||
	    rd_bool(r, o, "scale_attn_weights", 1, &cfg->scale_attn) != 0)
		return -1;
	if (cfg_refuse_bool(r, o, "scale_attn_by_inverse_layer_idx", 1,
			    "scores divided by the layer number too") != 0 ||
	    cfg_refuse_bool(r, o, "reorder_and_upcast_attn", 1,
			    "scores scaled before the product and upcast, another rounding") != 0)
		return -1;
	return 0;
}

/* RobertaConfig: BERT's keys, and pad_token_id (default 1), the padding_idx
 * that RobertaEmbeddings counts positions from. */
static int read_roberta_pad(struct rd *r, json_t *o, struct attn_checkpoint_config *cfg)
{
	json_int_t pad;

	if (rd_int(r, o, "pad_token_id", 1, CFG_SIZE_MAX, &pad) != 0)
		return -1;
	cfg->positions_from_ids = 1;
	cfg->pad_id = (size_t)pad;
	if (cfg->max_positions > 0 && cfg->pad_id + 1 >= cfg->max_positions)
		return rd_fail_key(r, "pad_token_id",
				   "positions start at pad_token_id + 1 = %zu, past "
				   "max_position_embeddings %zu",
				   cfg->pad_id + 1, cfg->max_positions);
	return 0;
}

/*
 * BertConfig's keys (RobertaConfig's too). is_decoder would make the
 * self-attention causal; add_cross_attention without it makes BertLayer
 * raise a ValueError, so transformers loads no such model: both are refused.
 */
static int read_bert(struct rd *r, json_t *o, struct attn_checkpoint_config *cfg, int roberta)
{
	static const char *const pos[] = {"absolute", NULL};
	size_t i;

	cfg->family = ATTN_FAMILY_BERT;
	cfg->scale_attn = 1;
	if (cfg_shape(r, o, cfg, "num_hidden_layers", "hidden_size", "num_attention_heads") != 0 ||
	    cfg_even_heads(r, cfg, "num_attention_heads") != 0 ||
	    cfg_size(r, o, "intermediate_size", 0, &cfg->F) != 0 ||
	    cfg_size(r, o, "max_position_embeddings", 0, &cfg->max_positions) != 0 ||
	    cfg_size(r, o, "type_vocab_size", 0, &cfg->type_vocab) != 0 ||
	    cfg_size(r, o, "vocab_size", 0, &cfg->vocab) != 0 ||
	    cfg_float(r, o, "layer_norm_eps", 1e-12, &cfg->norm_eps) != 0 ||
	    cfg_act(r, o, "hidden_act", "gelu", &cfg->act) != 0 ||
	    cfg_choice(r, o, "position_embedding_type", pos, "absolute", "position_embedding_type",
		       "absolute", &i) != 0 ||
	    cfg_refuse_bool(r, o, "is_decoder", 1, "a causal BERT") != 0 ||
	    cfg_refuse_bool(r, o, "add_cross_attention", 1,
			    "transformers' BertLayer refuses it without is_decoder") != 0)
		return -1;
	return roberta ? read_roberta_pad(r, o, cfg) : 0;
}

/* ---- the llama family ---------------------------------------------------------- */

/* What LlamaConfig, MistralConfig and Qwen2Config default differently. */
struct llama_kind {
	const char *model_type;
	json_int_t max_positions; /* max_position_embeddings */
	json_int_t kv_heads;	  /* num_key_value_heads absent; 0: num_attention_heads */
	int reads_biases;	  /* attention_bias and mlp_bias (llama) */
	int qkv_bias;		  /* always (qwen2) */
	int window;		  /* 0: none; 1: sliding_window (mistral); 2: qwen2's */
};

static const struct llama_kind llama_kinds[] = {
    {"llama", 2048, 0, 1, 0, 0},
    {"mistral", 4096 * 32, 8, 0, 0, 1},
    {"qwen2", 32768, 32, 0, 1, 2},
};

/* The scaling's own keys: rope_scaling (4.x) or rope_parameters (5.x). */
static int read_rope_type(struct rd *r, json_t *s, struct attn_checkpoint_config *cfg)
{
	static const char *const names[] = {"default", "linear", "llama3", NULL};
	static const enum attn_rope_type types[] = {ATTN_ROPE_DEFAULT, ATTN_ROPE_LINEAR,
						    ATTN_ROPE_LLAMA3};
	const char *key = json_object_get(s, "rope_type") != NULL ? "rope_type" : "type";
	json_int_t old;
	size_t i;

	if (cfg_choice(r, s, key, names, "default", "rope_type", "default, linear, llama3", &i) !=
	    0)
		return -1;
	cfg->rope_type = types[i];
	if (cfg->rope_type == ATTN_ROPE_DEFAULT)
		return 0;
	if (cfg_f32(r, s, "factor", -1, &cfg->rope_factor) != 0)
		return -1;
	if (cfg->rope_type == ATTN_ROPE_LINEAR)
		return 0;
	if (cfg_f32(r, s, "low_freq_factor", -1, &cfg->rope_low_freq_factor) != 0 ||
	    cfg_f32(r, s, "high_freq_factor", -1, &cfg->rope_high_freq_factor) != 0 ||
	    rd_int(r, s, "original_max_position_embeddings", -1, CFG_SIZE_MAX, &old) != 0)
		return -1;
	if (!(cfg->rope_high_freq_factor > cfg->rope_low_freq_factor))
		return rd_fail_key(r, "high_freq_factor", "must be above low_freq_factor (%g)",
				   cfg->rope_low_freq_factor);
	if (old == 0)
		return rd_fail_key(r, "original_max_position_embeddings", "must be positive");
	/* the engine's wavelength bounds, old / factor, are float32s too */
	if ((double)old / cfg->rope_low_freq_factor > FLT_MAX)
		return rd_fail_key(r, "low_freq_factor",
				   "%g makes original_max_position_embeddings / low_freq_factor "
				   "overflow float32",
				   cfg->rope_low_freq_factor);
	cfg->rope_original_max_positions = (size_t)old;
	return 0;
}

/*
 * partial_rotary_factor f, a key LlamaConfig, MistralConfig and Qwen2Config
 * leave to PretrainedConfig (4.x, at the top) or to rope_parameters (5.x):
 * modeling_rope_utils then builds inv_freq for int(D * f) dimensions only.
 * The stack rotates every pair of a head's D, so anything but 1 is refused,
 * wherever it is written (obj: the config or its rope object). Null is absent.
 */
static int cfg_full_rotary(struct rd *r, json_t *obj, size_t D)
{
	const char *key = "partial_rotary_factor";
	json_t *v = json_object_get(obj, key);

	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return rd_fail_key(r, key, "expected a number");
	if (json_number_value(v) != 1.0)
		return rd_fail_key(r, key,
				   "%s %g is not supported: RoPE rotates all %zu dimensions of "
				   "each head",
				   key, json_number_value(v), D);
	return 0;
}

static int read_rope(struct rd *r, json_t *o, struct attn_checkpoint_config *cfg)
{
	json_t *p = json_object_get(o, "rope_parameters");
	const char *key = p != NULL ? "rope_parameters" : "rope_scaling";
	json_t *s = p != NULL ? p : json_object_get(o, "rope_scaling");
	const char *k;
	json_t *v;
	size_t up;
	int rc;

	/* theta is a float32 in the engine (attn_rope_inv_freq): 1e-300 would be
	 * a base of 0, every inverse frequency past the first infinite */
	if (cfg_f32(r, o, "rope_theta", 10000.0, &cfg->rope_theta) != 0 ||
	    cfg_full_rotary(r, o, cfg->D) != 0)
		return -1;
	cfg->rope_type = ATTN_ROPE_DEFAULT;
	if (s == NULL || json_is_null(s))
		return 0;
	if (!json_is_object(s))
		return rd_fail_key(r, key, "expected an object or null");
	up = rd_key(r, key);
	json_object_foreach(s, k, v)
	{
		if (json_is_object(v))
			return rd_fail_key(r, k,
					   "rope parameters per layer type are not supported");
	}
	rc = cfg_f32(r, s, "rope_theta", cfg->rope_theta, &cfg->rope_theta);
	if (rc == 0)
		rc = cfg_full_rotary(r, s, cfg->D);
	if (rc == 0)
		rc = read_rope_type(r, s, cfg);
	if (rc == 0)
		rd_up(r, up);
	return rc;
}

/*
 * Qwen2's windows, layer by layer, as Qwen2Config and modeling_qwen2 have
 * them: the window is sliding_window when use_sliding_window (default
 * false), else none; layer_types (5.x, or written by 4.53+) names each
 * layer "full_attention" or "sliding_attention", and without it layer i
 * slides when a window is set and i >= max_window_layers (default 28). A
 * sliding layer without a window is refused, as transformers' mask builder
 * refuses it.
 */
/* Entry l of layer_types (the reader at it): *sliding 1 or 0. */
static int read_layer_type(struct rd *r, json_t *types, size_t l, int *sliding)
{
	static const char *const names[] = {"full_attention", "sliding_attention", NULL};
	json_t *v = json_array_get(types, l);
	char q[QUOTE_MAX + 4];

	if (!json_is_string(v))
		return rd_fail(r, "expected a string");
	for (size_t i = 0; names[i] != NULL; i++)
		if (strcmp(json_string_value(v), names[i]) == 0) {
			*sliding = (int)i;
			return 0;
		}
	return rd_fail(r,
		       "unsupported layer type '%s' (supported: full_attention, "
		       "sliding_attention)",
		       rd_quote(q, json_string_value(v)));
}

/* Whether layer l slides (1) or not (0), into cfg->full_attention; -1 on
 * error, at /layer_types/l (or at max_window_layers without layer_types). */
static int qwen2_layer(struct rd *r, json_t *types, json_int_t from, size_t l,
		       struct attn_checkpoint_config *cfg)
{
	int sliding = cfg->window > 0 && (json_int_t)l >= from;
	size_t up = types != NULL ? rd_index(r, l) : 0;

	if (types != NULL && read_layer_type(r, types, l, &sliding) != 0)
		return -1;
	if (sliding && cfg->window == 0)
		return rd_fail(r,
			       "layer %zu is sliding_attention but no sliding window is set "
			       "(use_sliding_window false or sliding_window null)",
			       l);
	if (!sliding && cfg->window > 0 && l >= ATTN_CK_LAYER_TYPES)
		return rd_fail(r,
			       "full attention on layer %zu beside sliding layers: past the %d "
			       "layers whose window can be switched off",
			       l, (int)ATTN_CK_LAYER_TYPES);
	if (l < ATTN_CK_LAYER_TYPES)
		cfg->full_attention[l] = (unsigned char)!sliding;
	if (types != NULL)
		rd_up(r, up);
	return sliding;
}

static int read_qwen2_layers(struct rd *r, json_t *o, struct attn_checkpoint_config *cfg)
{
	json_t *types = json_object_get(o, "layer_types");
	json_int_t from;
	size_t up = 0, slides = 0;
	int rc = 0;

	if (rd_int(r, o, "max_window_layers", 28, CFG_SIZE_MAX, &from) != 0)
		return -1;
	if (json_is_null(types))
		types = NULL;
	if (types != NULL && !json_is_array(types))
		return rd_fail_key(r, "layer_types", "expected an array of strings");
	if (types != NULL && json_array_size(types) != cfg->n_layers)
		return rd_fail_key(r, "layer_types", "%zu entries for %zu layers",
				   json_array_size(types), cfg->n_layers);
	if (types != NULL)
		up = rd_key(r, "layer_types");
	else
		up = rd_key(r, "max_window_layers");
	for (size_t l = 0; l < cfg->n_layers && rc >= 0; l++) {
		rc = qwen2_layer(r, types, from, l, cfg);
		slides += rc > 0;
	}
	if (rc < 0)
		return -1;
	rd_up(r, up);
	if (slides == 0)
		cfg->window = 0; /* no layer reaches the window */
	return 0;
}

/* Mistral: sliding_window on every layer; Qwen2: read_qwen2_layers. */
static int read_window(struct rd *r, json_t *o, const struct llama_kind *kind,
		       struct attn_checkpoint_config *cfg)
{
	int on = 1;

	cfg->window = 0;
	memset(cfg->full_attention, 0, sizeof cfg->full_attention);
	if (kind->window == 0)
		return 0;
	if (kind->window == 2 && rd_bool(r, o, "use_sliding_window", 0, &on) != 0)
		return -1;
	if (on && !json_is_null(json_object_get(o, "sliding_window")) &&
	    cfg_size(r, o, "sliding_window", 4096, &cfg->window) != 0)
		return -1;
	return kind->window == 2 ? read_qwen2_layers(r, o, cfg) : 0;
}

/*
 * num_key_value_heads: null means num_attention_heads in all three configs,
 * but an absent key takes the class default, which MistralConfig (8) and
 * Qwen2Config (32) do not tie to the heads. A default that does not divide
 * the heads is refused by name.
 */
static int read_kv_heads(struct rd *r, json_t *o, const struct llama_kind *kind,
			 struct attn_checkpoint_config *cfg)
{
	const char *key = "num_key_value_heads";
	int absent = json_object_get(o, key) == NULL && kind->kv_heads != 0;

	if (cfg_size(r, o, key, absent ? kind->kv_heads : (json_int_t)cfg->H, &cfg->Hkv) != 0)
		return -1;
	if (cfg->H % cfg->Hkv == 0)
		return 0;
	if (absent)
		return rd_fail_key(r, key,
				   "missing, and %s's default %zu does not divide %zu heads",
				   kind->model_type, cfg->Hkv, cfg->H);
	return rd_fail_key(r, key, "%zu does not divide %zu heads", cfg->Hkv, cfg->H);
}

static int read_llama(struct rd *r, json_t *o, const struct llama_kind *kind,
		      struct attn_checkpoint_config *cfg)
{
	cfg->family = ATTN_FAMILY_LLAMA;
	cfg->scale_attn = 1;
	cfg->qkv_bias = kind->qkv_bias;
	if (cfg_shape(r, o, cfg, "num_hidden_layers", "hidden_size", "num_attention_heads") != 0 ||
	    read_kv_heads(r, o, kind, cfg) != 0)
		return -1;
	if (json_object_get(o, "head_dim") == NULL ||
	    json_is_null(json_object_get(o, "head_dim"))) {
		if (cfg->E % cfg->H != 0)
			return rd_fail_key(r, "num_attention_heads",
					   "%zu heads do not divide the hidden size %zu and "
					   "head_dim is not given",
					   cfg->H, cfg->E);
		cfg->D = cfg->E / cfg->H;
	} else if (cfg_size(r, o, "head_dim", -1, &cfg->D) != 0) {
		return -1;
	}
	if (cfg->D % 2 != 0)
		return rd_fail_key(r, "head_dim", "head size %zu is odd: RoPE rotates pairs",
				   cfg->D);
	if (cfg_size(r, o, "intermediate_size", 0, &cfg->F) != 0 ||
	    cfg_size(r, o, "max_position_embeddings", kind->max_positions, &cfg->max_positions) !=
		0 ||
	    cfg_size(r, o, "vocab_size", 0, &cfg->vocab) != 0 ||
	    cfg_float(r, o, "rms_norm_eps", 1e-6, &cfg->norm_eps) != 0 ||
	    cfg_act(r, o, "hidden_act", "silu", &cfg->act) != 0 || read_rope(r, o, cfg) != 0 ||
	    read_window(r, o, kind, cfg) != 0)
		return -1;
	if (kind->reads_biases && (rd_bool(r, o, "attention_bias", 0, &cfg->attention_bias) != 0 ||
				   rd_bool(r, o, "mlp_bias", 0, &cfg->mlp_bias) != 0))
		return -1;
	return 0;
}

/* ---- the file ------------------------------------------------------------------ */

/*
 * pruned_heads, {"layer": [heads]}, PretrainedConfig's in every family:
 * PreTrainedModel.init_weights prunes those heads before the weights load,
 * so those layers have fewer heads (transformers then loads only weights
 * saved so pruned, and llama's family cannot prune at all). The stack runs
 * all H heads of every layer: a layer with heads to prune is refused. An
 * empty list prunes nothing.
 */
static int cfg_no_pruned_heads(struct rd *r, json_t *o, size_t H)
{
	json_t *p = json_object_get(o, "pruned_heads"), *v;
	const char *k;
	size_t up;

	if (p == NULL || json_is_null(p))
		return 0;
	if (!json_is_object(p))
		return rd_fail_key(r, "pruned_heads", "expected an object of head lists");
	up = rd_key(r, "pruned_heads");
	json_object_foreach(p, k, v)
	{
		if (!json_is_array(v))
			return rd_fail_key(r, k, "expected an array of heads");
		if (json_array_size(v) > 0)
			return rd_fail_key(r, k,
					   "pruned_heads on layer %s are not supported: every "
					   "layer runs all %zu heads",
					   k, H);
	}
	rd_up(r, up);
	return 0;
}

static int read_family(struct rd *r, json_t *root, size_t i, struct attn_checkpoint_config *cfg)
{
	if (i == 0)
		return read_gpt2(r, root, cfg);
	if (i == 1 || i == 2)
		return read_bert(r, root, cfg, i == 2);
	return read_llama(r, root, &llama_kinds[i - 3], cfg);
}

static int read_config(struct rd *r, json_t *root, struct attn_checkpoint_config *cfg)
{
	const char *const names[] = {"gpt2", "bert", "roberta", "llama", "mistral", "qwen2", NULL};
	size_t i;

	if (json_object_get(root, "model_type") == NULL)
		return rd_fail_key(r, "model_type",
				   "missing (expected one of gpt2, bert, roberta, llama, "
				   "mistral, qwen2)");
	if (cfg_choice(r, root, "model_type", names, "", "model_type",
		       "gpt2, bert, roberta, llama, mistral, qwen2", &i) != 0)
		return -1;
	snprintf(cfg->model_type, sizeof cfg->model_type, "%s", names[i]);
	if (read_family(r, root, i, cfg) != 0)
		return -1;
	return cfg_no_pruned_heads(r, root, cfg->H);
}

int api_checkpoint_config(struct attn_checkpoint_config *cfg, const char *json, size_t len,
			  const char *file, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root;
	struct rd r;
	int rc;

	memset(cfg, 0, sizeof *cfg);
	rd_init(&r, file, err, errlen);
	if (len > API_CHECKPOINT_CONFIG_MAX)
		return rd_fail(&r, "%zu bytes, over the %u KiB limit", len,
			       API_CHECKPOINT_CONFIG_MAX >> 10);
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		snprintf(err, errlen, "%s:%d:%d: %s", file, jerr.line, jerr.column, jerr.text);
		return -1;
	}
	rc = json_is_object(root) ? read_config(&r, root, cfg)
				  : rd_fail(&r, "expected a JSON object");
	json_decref(root);
	return rc;
}
