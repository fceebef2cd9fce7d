/*
 * v1_options.c: the "model", "mask" and "positional" fields of
 * POST /v1/attention, and where the engine's fields come from. See v1.h.
 */
#include "v1.h"

#include <stdlib.h>
#include <string.h>

#include "api/engine_error.h"
#include "api/json/json_read.h"
#include "engine/sizes.h"

/* ---- model ------------------------------------------------------------- */

static const char *const inline_fields[] = { "d_model",	     "num_heads",	"num_kv_heads",
					     "bias",	     "seed",		"vocab_size",
					     "in_proj_weight", "in_proj_bias",	"out_proj_weight",
					     "out_proj_bias",  "embed_tokens",	NULL };

/* Reads an optional weight tensor of exactly `shape` (rank 1 or 2). One with
 * more elements is refused by the read, before it is allocated, with the
 * answer one with fewer gets. */
static int read_weight(struct v1_body *in, const json_t *obj, const char *key, size_t rank,
		       size_t d0, size_t d1, struct api_tensor *t, struct api_error *err)
{
	json_t *v = req_get(obj, key);
	char ptr[API_PTR_MAX];
	int rc;

	memset(t, 0, sizeof(*t));
	if (v == NULL)
		return 0;
	req_child(ptr, "/model", key);
	rc = api_tensor_read_pool(&in->numbers, v, ptr, rank, rank, d0 * d1, 0, t, err);
	if (rc != 0 && err->kind != API_E_TOO_LARGE)
		return -1;
	if (rc != 0 || (rank == 1 && t->shape[0] != d0) ||
	    (rank == 2 && (t->shape[0] != d0 || t->shape[1] != d1)))
		return rank == 1 ? api_fail(err, API_E_DIMENSION_MISMATCH, ptr,
					    "must have shape [%zu]", d0)
				 : api_fail(err, API_E_DIMENSION_MISMATCH, ptr,
					    "must have shape [%zu, %zu]", d0, d1);
	return 0;
}

/* Explicit weights in PyTorch's layout, in_proj_weight [(H + 2 Hkv) D, E],
 * kept for attention_build. */
static int inline_explicit(struct v1_body *in, struct attention_job *job, const json_t *m,
			   const struct attn_model_config *cfg, struct api_error *err)
{
	size_t D = cfg->E / cfg->H, rows = (cfg->H + 2 * cfg->Hkv) * D;
	struct api_inline_model *s = &job->inline_spec;

	if ((req_get(m, "embed_tokens") != NULL) != (cfg->vocab > 0))
		return api_fail(err, API_E_INVALID_MODEL, "/model/embed_tokens",
				"embed_tokens [vocab_size, d_model] goes with vocab_size");
	if (read_weight(in, m, "in_proj_weight", 2, rows, cfg->E, &s->w_qkv, err) != 0 ||
	    read_weight(in, m, "in_proj_bias", 1, rows, 1, &s->b_qkv, err) != 0 ||
	    read_weight(in, m, "out_proj_weight", 2, cfg->E, cfg->E, &s->w_o, err) != 0 ||
	    read_weight(in, m, "out_proj_bias", 1, cfg->E, 1, &s->b_o, err) != 0 ||
	    read_weight(in, m, "embed_tokens", 2, cfg->vocab, cfg->E, &s->embed, err) != 0)
		return -1;
	if (s->w_o.data == NULL || (s->b_qkv.data == NULL) != (s->b_o.data == NULL))
		return api_fail(err, API_E_INVALID_MODEL, "/model",
				"explicit weights need in_proj_weight and out_proj_weight; "
				"in_proj_bias and out_proj_bias come together");
	return 0;
}

/* An inline model's weights count against the request memory limit: at the
 * d_model and vocab_size caps a seeded model is about 1.9 GB (and half a
 * minute of drawing), so it is refused before anything is allocated. */
static int check_model_memory(const struct attn_model_config *cfg, size_t D, size_t limit,
			      struct api_error *err)
{
	size_t bytes = attention_inline_bytes(cfg, D);
	int bad = bytes == SIZE_MAX;

	if (bad || bytes > limit)
		return api_fail(err, API_E_REQUEST_TOO_LARGE, "/model",
				"the model's weights need %s%zu MB; the limit is %zu MB",
				bad ? "more than " : "about ", bad ? (size_t)SIZE_MAX >> 20 : bytes >> 20,
				limit >> 20);
	return 0;
}

static int decode_inline(const struct api_service *svc, struct v1_body *in,
			 struct attention_job *job, json_t *m, struct api_error *err)
{
	struct attn_model_config cfg = { 0 };
	struct attn_error aerr;
	size_t seed, D;
	int bias;

	if (req_known_fields(m, "/model", inline_fields, err) != 0 ||
	    req_size(m, "d_model", "/model", 1, svc->limits.max_inline_d_model, 0, &cfg.E, err) != 0 ||
	    req_size(m, "num_heads", "/model", 1, 256, 0, &cfg.H, err) != 0 ||
	    req_size(m, "num_kv_heads", "/model", 1, 256, cfg.H, &cfg.Hkv, err) != 0 ||
	    req_bool(m, "bias", "/model", 1, &bias, err) != 0 ||
	    req_size(m, "seed", "/model", 0, (size_t)1 << 53, 0, &seed, err) != 0 ||
	    req_size(m, "vocab_size", "/model", 0, 100000, 0, &cfg.vocab, err) != 0)
		return -1;
	if (cfg.E == 0 || cfg.H == 0)
		return api_fail(err, API_E_MISSING_FIELD, "/model",
				"an inline model needs d_model and num_heads");
	cfg.bias = bias;
	if (attn_model_config_check(&cfg, &D, &aerr) != ATTN_OK)
		return attention_engine_error(job, &aerr, err);
	if (check_model_memory(&cfg, D, svc->limits.max_request_bytes, err) != 0)
		return -1;
	/* the model's shape now; its weights once the plan allows (attention_build) */
	job->inline_spec.pending = 1;
	job->inline_spec.cfg = cfg;
	job->inline_spec.seed = seed;
	job->shape.E = cfg.E;
	job->shape.H = cfg.H;
	job->shape.Hkv = cfg.Hkv ? cfg.Hkv : cfg.H;
	job->shape.D = D;
	job->shape.vocab = cfg.vocab;
	job->model_name = API_INLINE_MODEL;
	if (req_get(m, "in_proj_weight") != NULL) {
		int has_bias = req_get(m, "in_proj_bias") != NULL;

		if (req_get(m, "bias") != NULL && bias != has_bias)
			return api_fail(err, API_E_INVALID_MODEL, "/model/bias",
					"bias is %s but in_proj_bias is %s", bias ? "true" : "false",
					has_bias ? "given" : "absent");
		return inline_explicit(in, job, m, &cfg, err);
	}
	{
		static const char *const explicit_only[] = { "in_proj_bias", "out_proj_weight",
							     "out_proj_bias", "embed_tokens" };
		char ptr[API_PTR_MAX];

		for (size_t i = 0; i < 4; i++)
			if (req_get(m, explicit_only[i]) != NULL)
				return api_fail(err, API_E_INVALID_MODEL,
						req_child(ptr, "/model", explicit_only[i]),
						"explicit weights need in_proj_weight too");
	}
	return 0;
}

int v1_decode_model(const struct api_service *svc, struct v1_body *in, struct attention_job *job,
		    struct api_error *err)
{
	json_t *m = req_member(&in->top, "model");

	job->max_text_bytes = svc->limits.max_text_bytes; /* a named or an inline model's text */
	if (m == NULL || json_is_string(m)) {
		const char *name = m ? json_string_value(m) : NULL;

		if (svc->n_models == 0)
			return api_fail(err, API_E_NOT_READY, "", "no model is loaded");
		job->entry = name ? registry_find(svc, name) : &svc->models[svc->default_model];
		if (job->entry == NULL)
			return api_fail(err, API_E_MODEL_NOT_FOUND, "/model", "no model named '%s'",
					name);
		job->model = job->entry->model;
		job->model_name = job->entry->name;
		return 0;
	}
	if (!json_is_object(m))
		return api_fail(err, API_E_INVALID_TYPE, "/model",
				"model is a model name or an inline model object");
	if (decode_inline(svc, in, job, m, err) != 0)
		return -1;
	job->model = &job->shape;
	return 0;
}

/* ---- mask -------------------------------------------------------------- */

static const char *const mask_fields[] = { "causal", "alignment", "window", "allow",
					   "bias",   "lengths",	  NULL };

/* allow / bias: [Lq, Lk], [B, Lq, Lk] (as [B, 1, Lq, Lk]) or [B, H, Lq, Lk]. */
static int decode_user_mask(struct v1_body *in, struct attention_job *job, json_t *v, int is_bool,
			    struct api_error *err)
{
	const char *ptr = is_bool ? "/mask/allow" : "/mask/bias";
	struct api_tensor *t = &job->user_mask;
	struct attn_mask *m = &job->mask;
	size_t full[4] = { job->B, job->model->H, job->Lq, job->Lk };

	if (api_tensor_read_pool(&in->numbers, v, ptr, 2, 4, (size_t)1 << 31,
				 is_bool ? API_T_BOOL : API_T_NEG_INF, t, err) != 0)
		return -1;
	m->user_rank = 4;
	m->user_shape[0] = t->rank == 2 ? 1 : t->shape[0];
	m->user_shape[1] = t->rank == 4 ? t->shape[1] : 1;
	m->user_shape[2] = t->shape[t->rank - 2];
	m->user_shape[3] = t->shape[t->rank - 1];
	for (size_t a = 0; a < 4; a++)
		if (m->user_shape[a] != full[a] && m->user_shape[a] != 1)
			return api_fail(err, API_E_DIMENSION_MISMATCH, ptr,
					"shape must be [Lq, Lk], [B, Lq, Lk] or [B, H, Lq, Lk] = "
					"[%zu, %zu, %zu, %zu] (1 broadcasts)",
					full[0], full[1], full[2], full[3]);
	m->user_kind = is_bool ? ATTN_USER_MASK_BOOL : ATTN_USER_MASK_ADDITIVE;
	if (!is_bool) {
		m->user = t->data;
		return 0;
	}
	if (v1_mask_bytes(t, &job->allow, err) != 0)
		return -1;
	m->user = job->allow;
	return 0;
}

/* "mask": "none" or "causal", or an object; its typed fields go to
 * attention_apply_mask, its allow / bias tensors straight to job->mask. */
int v1_decode_mask(struct v1_body *in, struct attention_job *job, struct api_error *err)
{
	static const char *const kinds[] = { "none", "causal", NULL };
	static const char *const alignments[] = { "top_left", "bottom_right", NULL };
	struct api_mask_spec spec = { .where_lengths = "/mask/lengths" };
	json_t *m = req_member(&in->top, "mask"), *lengths;
	int64_t *lens = NULL;
	int kind, rc;

	/* the strings are not the whole choice: a window, a key padding or a
	 * matrix of one's own is an object, which the refusal names too */
	if (m != NULL && !json_is_object(m)) {
		if (req_enum_value(m, "mask", "", kinds, 0, &kind, err) != 0)
			return api_fail(err, API_E_INVALID_VALUE, "/mask",
					"must be \"none\", \"causal\" or a mask object of causal, "
					"alignment, window, allow, bias and lengths (a sliding window: "
					"{\"causal\": true, \"window\": 2})");
		spec.causal = kind;
		return attention_apply_mask(job, &spec, err);
	}
	if (m == NULL)
		return attention_apply_mask(job, &spec, err);
	if (req_known_fields(m, "/mask", mask_fields, err) != 0 ||
	    req_bool(m, "causal", "/mask", 0, &spec.causal, err) != 0 ||
	    req_enum(m, "alignment", "/mask", alignments, 0, &spec.bottom_right, err) != 0 ||
	    req_size(m, "window", "/mask", 1, (size_t)1 << 30, 0, &spec.window, err) != 0)
		return -1;
	if (req_get(m, "allow") && req_get(m, "bias"))
		return api_fail(err, API_E_INVALID_MASK, "/mask",
				"give allow (boolean) or bias (additive), not both");
	if (req_get(m, "allow") &&
	    decode_user_mask(in, job, req_get(m, "allow"), 1, err) != 0)
		return -1;
	if (req_get(m, "bias") &&
	    decode_user_mask(in, job, req_get(m, "bias"), 0, err) != 0)
		return -1;
	lengths = req_get(m, "lengths");
	if (lengths != NULL && api_ints_read(lengths, "/mask/lengths", 0, (int64_t)job->Lk, &lens,
					     &spec.n_lengths, err) != 0)
		return -1;
	spec.lengths = lens;
	rc = attention_apply_mask(job, &spec, err);
	free(lens);
	return rc;
}

/* ---- positional -------------------------------------------------------- */

static const char *const pos_fields[] = { "type",   "theta",	   "style",	    "rotary_dim",
					  "scaling", "offset", "positions", "key_positions",
					  NULL };
static const char *const pos_kinds[] = { "none", "sinusoidal", "rope", "alibi", NULL };

/* Position i of v as the number sent: the tensor reader's float32 would
 * round a position past 2^24 (16777217 to 16777216) where offset's stay
 * exact, and the engine takes positions as doubles. Base64 holds float32
 * bits: those are t's. */
static double position_at(const json_t *v, const struct api_tensor *t, size_t i)
{
	const json_t *list = json_is_object(v) ? req_get(v, "data") : v;
	const json_t *e = json_array_get(list, i);

	return json_is_number(e) ? json_number_value(e) : (double)t->data[i];
}

static int wrong_count(const char *ptr, size_t n, struct api_error *err)
{
	return api_fail(err, API_E_DIMENSION_MISMATCH, ptr, "needs %zu positions", n);
}

/* An explicit position list of exactly n finite numbers >= 0. */
static int read_positions(const json_t *obj, const char *key, size_t n, double **out,
			  struct api_error *err)
{
	json_t *v = req_get(obj, key);
	char ptr[API_PTR_MAX];
	struct api_tensor t;

	*out = NULL;
	if (v == NULL)
		return 0;
	req_child(ptr, "/positional", key);
	/* bounded by n before anything is allocated; a list longer than n is
	 * the same mistake as a shorter one, so both read dimension_mismatch */
	if (api_tensor_read(v, ptr, 1, 1, n, 0, &t, err) != 0)
		return err->kind == API_E_TOO_LARGE ? wrong_count(ptr, n, err) : -1;
	if (t.n != n) {
		api_tensor_release(&t);
		return wrong_count(ptr, n, err);
	}
	*out = malloc(n * sizeof(double));
	for (size_t i = 0; *out && i < n; i++)
		(*out)[i] = position_at(v, &t, i);
	api_tensor_release(&t);
	return *out ? 0 : api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
}

/* Which types read each field (bits 1 << enum attn_pos_kind), and whether
 * the value sent is its documented default, which asks for nothing. */
enum { POS_SIN = 1 << ATTN_POS_SINUSOIDAL, POS_ROPE = 1 << ATTN_POS_ROPE,
       POS_ALIBI = 1 << ATTN_POS_ALIBI };

/* The documented defaults of the fields: what req_* reads when a field is
 * absent, and what a field a type does not read may hold. */
static const struct attn_positional pos_defaults = {
    .theta = 10000.0, .style = ATTN_ROPE_INTERLEAVED, .rotary_dim = 0, .scaling = 1.0,
    .offset = 0};

static int pos_field_default(const struct attn_positional *pos, const char *field)
{
	if (strcmp(field, "theta") == 0)
		return pos->theta == pos_defaults.theta;
	if (strcmp(field, "style") == 0)
		return pos->style == pos_defaults.style;
	if (strcmp(field, "rotary_dim") == 0)
		return pos->rotary_dim == pos_defaults.rotary_dim;
	if (strcmp(field, "scaling") == 0)
		return pos->scaling == pos_defaults.scaling;
	if (strcmp(field, "offset") == 0)
		return pos->offset == pos_defaults.offset;
	return 0; /* positions and key_positions have none */
}

/* A field the type does not read is refused unless it holds its default:
 * {"type": "alibi", "theta": 500} would otherwise be ignored without a
 * word, and a learner would think theta shapes ALiBi. */
static int refuse_unread_fields(const json_t *p, const struct attn_positional *pos,
				const char *kind, struct api_error *err)
{
	static const struct {
		const char *field, *read_by;
		unsigned kinds;
	} reads[] = {
	    {"theta", "sinusoidal and rope", POS_SIN | POS_ROPE},
	    {"style", "rope", POS_ROPE},
	    {"rotary_dim", "rope", POS_ROPE},
	    {"scaling", "sinusoidal and rope", POS_SIN | POS_ROPE},
	    {"offset", "sinusoidal, rope and alibi", POS_SIN | POS_ROPE | POS_ALIBI},
	    {"positions", "sinusoidal, rope and alibi", POS_SIN | POS_ROPE | POS_ALIBI},
	    {"key_positions", "sinusoidal, rope and alibi", POS_SIN | POS_ROPE | POS_ALIBI},
	};
	char ptr[API_PTR_MAX];

	for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
		if (req_get(p, reads[i].field) == NULL ||
		    (reads[i].kinds & (1u << pos->kind)) || pos_field_default(pos, reads[i].field))
			continue;
		return api_fail(err, API_E_INVALID_INPUT, req_child(ptr, "/positional", reads[i].field),
				"%s does not apply to positional type '%s' (it is read by %s)",
				reads[i].field, kind, reads[i].read_by);
	}
	return 0;
}

int v1_decode_positional(const struct v1_body *in, struct attention_job *job,
			 struct api_error *err)
{
	static const char *const styles[] = { "interleaved", "half", NULL };
	json_t *p = req_member(&in->top, "positional");
	struct attn_positional *pos = &job->pos;
	double theta, scaling;
	size_t rotary, offset;
	int kind, style;

	if (p == NULL || !json_is_object(p)) {
		if (req_enum_value(p, "positional", "", pos_kinds, 0, &kind, err) != 0)
			return -1;
		pos->kind = (enum attn_pos_kind)kind;
		return 0;
	}
	if (req_known_fields(p, "/positional", pos_fields, err) != 0 ||
	    req_enum(p, "type", "/positional", pos_kinds, 0, &kind, err) != 0 ||
	    req_number_above(p, "theta", "/positional", 1.0, 1e12, pos_defaults.theta, &theta,
			     err) != 0 ||
	    req_enum(p, "style", "/positional", styles, (int)pos_defaults.style, &style, err) != 0 ||
	    req_size(p, "rotary_dim", "/positional", 0, job->model->D, pos_defaults.rotary_dim,
		     &rotary, err) != 0 ||
	    req_number(p, "scaling", "/positional", 1e-6, 1e6, pos_defaults.scaling, &scaling,
		       err) != 0 ||
	    req_size(p, "offset", "/positional", 0, 1000000000, pos_defaults.offset, &offset,
		     err) != 0)
		return -1;
	pos->kind = (enum attn_pos_kind)kind;
	pos->theta = theta;
	pos->style = (enum attn_rope_style)style;
	pos->rotary_dim = rotary;
	pos->scaling = scaling;
	pos->offset = offset;
	if (refuse_unread_fields(p, pos, pos_kinds[kind], err) != 0)
		return -1;
	if (req_get(p, "key_positions") && job->key.data == NULL)
		return api_fail(err, API_E_INVALID_VALUE, "/positional/key_positions",
				"key_positions is for cross-attention; self-attention keys use positions");
	if (read_positions(p, "positions", job->Lq, &job->q_positions, err) != 0 ||
	    read_positions(p, "key_positions", job->Lk, &job->k_positions, err) != 0)
		return -1;
	pos->q_positions = job->q_positions;
	pos->k_positions = job->k_positions;
	return 0;
}

/* "positions": true asks for the encoding itself (attention_positions.c).
 * Only sinusoidal and rope have one: ALiBi's bias is added to the scores,
 * and none adds nothing, so asking there is refused rather than answered
 * with an empty object a learner would puzzle over; so is a query longer
 * than API_POSITIONS_MAX_L (job->Lq is known: the input is decoded). */
int v1_decode_show_positions(const struct v1_body *in, struct attention_job *job,
			     struct api_error *err)
{
	const json_t *v = req_member(&in->top, "positions");
	int want;

	/* "positions": "sinusoidal" is "positional" misread: say which field
	 * picks the encoding rather than only that a boolean was wanted */
	if (json_is_string(v))
		return api_fail(err, API_E_INVALID_TYPE, "/positions",
				"must be true or false (true shows the encoding in the answer); "
				"the encoding is chosen by \"positional\": \"%s\"",
				json_string_value(v));
	if (req_bool_value(v, "positions", "", 0, &want, err) != 0)
		return -1;
	if (!want)
		return 0;
	if (job->pos.kind == ATTN_POS_ALIBI)
		return api_fail(err, API_E_INVALID_VALUE, "/positions",
				"positional type 'alibi' adds a bias -slope * |i - j| to the scores, "
				"not an encoding to the rows: there is no encoding to show (ask for "
				"\"scores\": \"raw\" to see the bias at work)");
	if (job->pos.kind == ATTN_POS_NONE)
		return api_fail(err, API_E_INVALID_VALUE, "/positions",
				"positional type is 'none': there is no encoding to show; set "
				"\"positional\" to \"sinusoidal\" or \"rope\"");
	if (v1_positions_cap(job->Lq, err) != 0)
		return -1;
	job->positions = 1;
	return 0;
}

int v1_positions_cap(size_t Lq, struct api_error *err)
{
	if (Lq <= API_POSITIONS_MAX_L)
		return 0;
	return api_fail(err, API_E_INVALID_VALUE, "/positions",
			"positions are shown for at most %d query positions; this request has %zu",
			API_POSITIONS_MAX_L, Lq);
}

/* ---- what /v1/sdpa reads alike -------------------------------------------- */

int v1_decode_outputs(const struct req_members *top, enum attn_weights_mode default_weights,
		      struct v1_outputs *o, struct api_error *err)
{
	static const char *const weights[] = { "none", "per_head", "mean", NULL };
	static const char *const scores[] = { "none", "raw", "softcap", "masked", "softmax", NULL };
	static const char *const encodings[] = { "float", "base64", NULL };
	double scale;
	int wm, sv, enc;
	size_t precision;

	if (req_number_value(req_member(top, "scale"), "scale", "", 1e-30, 1e30, 0.0, &scale,
			     err) != 0 ||
	    req_softcap_value(req_member(top, "softcap"), "", &o->softcap, err) != 0 ||
	    req_enum_value(req_member(top, "weights"), "weights", "", weights,
			   (int)default_weights, &wm, err) != 0 ||
	    req_enum_value(req_member(top, "scores"), "scores", "", scores, ATTN_SCORES_NONE,
			   &sv, err) != 0 ||
	    req_enum_value(req_member(top, "encoding"), "encoding", "", encodings,
			   API_ENC_FLOAT, &enc, err) != 0 ||
	    req_size_value(req_member(top, "precision"), "precision", "", 1, 9, 0, &precision,
			   err) != 0)
		return -1;
	if (precision > 0 && enc == API_ENC_BASE64) /* else taken and ignored */
		return api_fail(err, API_E_INVALID_INPUT, "/precision",
				"precision rounds numbers written as text; with \"encoding\": "
				"\"base64\" the answer holds the float32 bits themselves");
	o->scale = (float)scale;
	o->weights = (enum attn_weights_mode)wm;
	o->scores = (enum attn_scores_view)sv;
	o->encoding = (enum api_encoding)enc;
	o->precision = (int)precision;
	return 0;
}

int v1_mask_bytes(const struct api_tensor *t, uint8_t **out, struct api_error *err)
{
	*out = malloc(t->n ? t->n : 1);
	if (*out == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t k = 0; k < t->n; k++)
		(*out)[k] = t->data[k] != 0.0f;
	return 0;
}

/* ---- engine failures ---------------------------------------------------- */

const struct api_field_where v1_engine_fields[] = {
	{ "query",               "/embeddings", 0 },
	{ "key",                 "/key", 0 },
	{ "value",               "/value", 0 },
	{ "tokens",              "/tokens", 0 },
	{ "model",               "/model", 0 },  /* its weights, on tokens or text */
	{ "hidden",              "/model", 0 },  /* a checkpoint's hidden state */
	{ "rotary_dim",          "/positional/rotary_dim", 0 },
	{ "q_positions",         "/positional/positions", 1 },
	{ "k_positions",         "/positional/key_positions", 1 },
	{ "kv_lengths",          "/mask/lengths", 1 },
	{ "attn_mask",           "/mask", 0 },
	{ "num_heads",           "/model/num_heads", 0 },
	{ "num_kv_heads",        "/model/num_kv_heads", 0 },
	{ "d_model",             "/model/d_model", 0 },
	{ "vocab",               "/model/vocab_size", 0 },
	{ "in_proj_weight",      "/model/in_proj_weight", 0 },
	{ "in_proj_bias",        "/model/in_proj_bias", 0 },
	{ "out_proj.weight",     "/model/out_proj_weight", 0 },
	{ "out_proj.bias",       "/model/out_proj_bias", 0 },
	{ "embed_tokens.weight", "/model/embed_tokens", 0 },
	{ "positional",          "/positional", 0 },
	{ "offset",              "/positional/offset", 0 },
};
const size_t v1_engine_field_count = sizeof v1_engine_fields / sizeof v1_engine_fields[0];
