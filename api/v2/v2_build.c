/*
 * v2_build.c: a /v2 infer call's inputs and parameters onto an attention job
 * (one layer: the steps /v1/attention shares, api/attention_job.h) or onto a
 * checkpoint's stack job (api/stack_job.h). See v2_job.h.
 */
#include "v2_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "api/json/json_read.h"
#include "api/stack_pick.h"
#include "engine/checkpoint.h"

/* The pointer of input r itself, /inputs/N, for a refusal of the whole
 * input: its where_base is its data's (/inputs/N/data) when the data came
 * as JSON, and the same mistake is pointed at alike whichever way the data
 * came (binary data's where_base is /inputs/N). Returns ptr. */
static const char *input_ptr(const struct v2_job *v, enum role r, char *ptr)
{
	api_ptr_index(ptr, API_PTR_MAX, "/inputs", v->at[r]);
	return ptr;
}

static int shape_error(const struct v2_job *v, enum role r, const char *want, struct api_error *err)
{
	char ptr[API_PTR_MAX], child[API_PTR_MAX];

	return api_fail(err, API_E_INVALID_SHAPE, req_child(child, input_ptr(v, r, ptr), "shape"),
			"input '%s' must be %s", v2_role_names[r], want);
}

static int no_zero_dims(const struct v2_input *t)
{
	for (size_t i = 0; i < t->rank; i++)
		if (t->shape[i] == 0)
			return 0;
	return 1;
}

static size_t *filled(size_t B, size_t value)
{
	size_t *a = malloc(B * sizeof(size_t));

	for (size_t b = 0; a && b < B; b++)
		a[b] = value;
	return a;
}

static int query_from_embeddings(struct v2_job *v, struct api_error *err)
{
	struct attention_job *job = &v->job;
	struct v2_input *t = &v->in[IN_EMBEDDINGS];
	char want[64];

	snprintf(want, sizeof(want), "[L, %zu] or [B, L, %zu]", job->model->E, job->model->E);
	if ((t->rank != 2 && t->rank != 3) || t->shape[t->rank - 1] != job->model->E ||
	    !no_zero_dims(t))
		return shape_error(v, IN_EMBEDDINGS, want, err);
	job->batched = t->rank == 3;
	job->B = job->batched ? t->shape[0] : 1;
	job->Lq = t->shape[t->rank - 2];
	job->query = t->f32;
	t->f32 = NULL;
	job->q_len = filled(job->B, job->Lq);
	return job->q_len ? 0 : api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
}

/* The place of an input, as the shared steps report it: in flat data, an
 * item of a batch spans all but the outermost axis. */
static struct api_where where_of(const struct v2_input *t)
{
	struct api_where w = {t->where_base, t->where_elems,
			      t->rank > 1 && t->shape[0] > 0 ? t->n / t->shape[0] : 1};

	return w;
}

/* tokens [L] or [B, L]: ids into the embedding table, as /v1's "tokens". */
static int query_from_tokens(struct v2_job *v, size_t limit, struct api_error *err)
{
	struct v2_input *t = &v->in[IN_TOKENS];
	struct api_where where = where_of(t);
	size_t rows = t->rank == 2 ? t->shape[0] : 1, L = t->shape[t->rank - 1];
	struct api_token *tok;
	size_t *len;
	int rc = -1;

	if ((t->rank != 1 && t->rank != 2) || !no_zero_dims(t))
		return shape_error(v, IN_TOKENS, "[L] or [B, L]", err);
	tok = malloc(t->n * sizeof(*tok));
	len = malloc(rows * sizeof(*len));
	if (tok == NULL || len == NULL) {
		api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
		goto out;
	}
	for (size_t k = 0; k < t->n; k++) {
		tok[k].str = NULL;
		tok[k].id = t->i64[k];
	}
	for (size_t b = 0; b < rows; b++)
		len[b] = L;
	rc = attention_query_from_tokens(&v->job, tok, len, rows, t->rank == 2, &where, limit, err);
out:
	free(tok);
	free(len);
	return rc;
}

/* text [B]: a batch of strings, each split on whitespace as /v1's "text". */
static int query_from_text(struct v2_job *v, size_t limit, struct api_error *err)
{
	struct v2_input *t = &v->in[IN_TEXT];
	struct api_where where = where_of(t);
	const char **text;
	int rc;

	if (t->rank != 1 || !no_zero_dims(t))
		return shape_error(v, IN_TEXT, "[B], one string per item", err);
	/* a word is no element of the data, which holds whole texts: a word
	 * refused is pointed at by its text's element */
	if (where.elems == API_WHERE_FLAT)
		where.elems = API_WHERE_ITEM;
	text = malloc(t->n * sizeof(*text));
	if (text == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t b = 0; b < t->n; b++)
		text[b] = json_string_value(json_array_get(t->strings, b));
	rc = attention_query_from_text(&v->job, text, t->n, 1, &where, limit, err);
	free((void *)text);
	return rc;
}

/* Moves an FP32 input into an api_tensor (the job's key or value). */
static void take_tensor(struct api_tensor *dst, struct v2_input *t)
{
	dst->data = t->f32;
	t->f32 = NULL;
	dst->rank = t->rank;
	memcpy(dst->shape, t->shape, sizeof(dst->shape));
	dst->n = t->n;
}

/* key [Lk, E] / [B, Lk, E] like the query; value the shape of key. */
static int key_value(struct v2_job *v, struct api_error *err)
{
	struct attention_job *job = &v->job;
	struct v2_input *k = &v->in[IN_KEY], *val = &v->in[IN_VALUE];
	size_t rank = job->batched ? 3 : 2, E = job->model->E;
	char want[80], ptr[API_PTR_MAX];

	/* the missing key is at fault, not the value's shape: as /v1's /value */
	if (!v->has[IN_KEY] && v->has[IN_VALUE])
		return api_fail(err, API_E_INVALID_INPUT, input_ptr(v, IN_VALUE, ptr),
				"input 'value' needs an input 'key' (self-attention takes neither)");
	if (!v->has[IN_KEY])
		return attention_self_keys(job, err);
	if (job->batched)
		snprintf(want, sizeof(want), "[%zu, Lk, %zu] like the query", job->B, E);
	else
		snprintf(want, sizeof(want), "[Lk, %zu] like the query", E);
	if (k->rank != rank || k->shape[rank - 1] != E || !no_zero_dims(k) ||
	    (job->batched && k->shape[0] != job->B))
		return shape_error(v, IN_KEY, want, err);
	if (v->has[IN_VALUE] &&
	    (val->rank != k->rank || memcmp(val->shape, k->shape, sizeof(k->shape)) != 0))
		return shape_error(v, IN_VALUE, "the shape of key", err);
	job->Lk = k->shape[rank - 2];
	take_tensor(&job->key, k);
	if (v->has[IN_VALUE])
		take_tensor(&job->value, val);
	job->k_len = filled(job->B, job->Lk);
	return job->k_len ? 0 : api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
}

/* causal / window / alignment and positional: the typed mask and kind that
 * /v1/attention's "mask" and "positional" also come to. */
static int mask_and_positional(struct v2_job *v, struct api_error *err)
{
	static const char *const aligns[] = {"top_left", "bottom_right", NULL};
	static const char *const kinds[] = {"none", "sinusoidal", "rope", "alibi", NULL};
	struct api_mask_spec spec = {0};
	const char *ptr = "/parameters";
	int kind;

	if (req_bool(v->params, "causal", ptr, 0, &spec.causal, err) != 0 ||
	    req_size(v->params, "window", ptr, 1, (size_t)1 << 30, 0, &spec.window, err) != 0 ||
	    req_enum(v->params, "alignment", ptr, aligns, 0, &spec.bottom_right, err) != 0 ||
	    req_enum(v->params, "positional", ptr, kinds, 0, &kind, err) != 0)
		return -1;
	v->job.pos.kind = (enum attn_pos_kind)kind;
	return attention_apply_mask(&v->job, &spec, err);
}

/* Where the engine's fields came from: the inputs, else the parameters. */
static void engine_fields(struct v2_job *v)
{
	enum role q = v->has[IN_EMBEDDINGS] ? IN_EMBEDDINGS
		      : v->has[IN_TOKENS]   ? IN_TOKENS
					    : IN_TEXT;
	const struct api_field_where map[V2_ENGINE_FIELDS] = {
	    {"query", v->in[q].where_base, 0},
	    {"tokens", v->in[q].where_base, 0},
	    {"key", v->in[IN_KEY].where_base, 0},
	    {"value", v->in[IN_VALUE].where_base, 0},
	    {"attn_mask", "/parameters", 0},
	    {"kv_lengths", "/parameters", 0},
	    {"positional", "/parameters/positional", 0},
	};

	memcpy(v->engine_fields, map, sizeof map);
	v->job.engine_fields = v->engine_fields;
	v->job.n_engine_fields = V2_ENGINE_FIELDS;
}

/* The parameters that choose a checkpoint's layers and heads, on a model of
 * one layer: refused, as /v1 refuses its fields of those names. */
static int refuse_stack_params(const struct v2_job *v, const char *model, struct api_error *err)
{
	static const char *const keys[] = {"layers", "heads"};

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		char ptr[API_PTR_MAX];

		if (json_object_get(v->params, keys[i]) == NULL)
			continue;
		api_ptr_key(ptr, sizeof(ptr), "/parameters", keys[i]);
		return api_fail(err, API_E_INVALID_INPUT, ptr,
				"parameter '%s' applies to checkpoint models; model '%s' is one "
				"attention layer",
				keys[i], model);
	}
	return 0;
}

int v2_build_job(const struct api_service *svc, const struct api_model_entry *e, struct v2_job *v,
		 struct api_error *err)
{
	struct attention_job *job = &v->job;
	size_t limit = svc->limits.max_request_bytes;
	double scale;
	char ptr[API_PTR_MAX];
	int rc;

	if (v->has[IN_TYPES])
		return api_fail(err, API_E_INVALID_INPUT, input_ptr(v, IN_TYPES, ptr),
				"input 'token_type_ids' applies to bert and roberta checkpoints; "
				"model '%s' is one attention layer",
				e->name);
	if (refuse_stack_params(v, e->name, err) != 0)
		return -1;
	job->entry = e;
	job->model = e->model;
	job->model_name = e->name;
	job->max_text_bytes = svc->limits.max_text_bytes;
	engine_fields(v);
	rc = v->has[IN_EMBEDDINGS] ? query_from_embeddings(v, err)
	     : v->has[IN_TOKENS]   ? query_from_tokens(v, limit, err)
				   : query_from_text(v, limit, err);
	if (rc != 0 || key_value(v, err) != 0 || mask_and_positional(v, err) != 0 ||
	    req_number(v->params, "scale", "/parameters", 1e-30, 1e30, 0.0, &scale, err) != 0 ||
	    req_softcap(v->params, "/parameters", &job->softcap, err) != 0)
		return -1;
	job->scale = (float)scale;
	job->weights_mode = v2_wants(v, OUT_WEIGHTS) ? ATTN_WEIGHTS_PER_HEAD
			    : v2_wants(v, OUT_MEAN)  ? ATTN_WEIGHTS_MEAN
						     : ATTN_WEIGHTS_NONE;
	/* the engine fills q, k and v together, as /v1's "projections" asks */
	job->projections = v2_wants(v, OUT_Q) || v2_wants(v, OUT_K) || v2_wants(v, OUT_V);
	job->head_outputs = v2_wants(v, OUT_HEADS);
	job->encoding = API_ENC_FLOAT;
	return 0;
}

/* token_type_ids, optional: BERT's segment of each token, the shape of
 * tokens ([L] or [B, L]; with text there are no ids to match). */
static int stack_types(struct v2_job *v, struct api_error *err)
{
	struct v2_input *t = &v->in[IN_TYPES], *ids = &v->in[IN_TOKENS];
	struct api_where where = where_of(t);
	char want[64], ptr[API_PTR_MAX];

	if (!v->has[IN_TYPES])
		return 0;
	if (stack_takes_types(&v->stack, "input 'token_type_ids'", input_ptr(v, IN_TYPES, ptr),
			      err) != 0)
		return -1;
	if (!v->has[IN_TOKENS])
		return api_fail(err, API_E_INVALID_INPUT, input_ptr(v, IN_TYPES, ptr),
				"input 'token_type_ids' goes with the input tokens (its shape); "
				"send token ids instead of text");
	if (ids->rank == 2)
		snprintf(want, sizeof want, "[%zu, %zu], the shape of tokens", ids->shape[0],
			 ids->shape[1]);
	else
		snprintf(want, sizeof want, "[%zu], the shape of tokens", ids->shape[0]);
	if (t->rank != ids->rank || memcmp(t->shape, ids->shape, t->rank * sizeof(size_t)) != 0)
		return shape_error(v, IN_TYPES, want, err);
	return stack_set_types(&v->stack, t->i64, &where, err);
}

/* A one-layer parameter holding its documented default, which asks for
 * nothing (as v1_is_default does for v1's fields). */
static int layer_param_is_default(const char *key, const json_t *v)
{
	if (strcmp(key, "causal") == 0)
		return json_is_false(v);
	if (strcmp(key, "alignment") == 0)
		return json_is_string(v) && strcmp(json_string_value(v), "top_left") == 0;
	if (strcmp(key, "positional") == 0)
		return json_is_string(v) && strcmp(json_string_value(v), "none") == 0;
	if (strcmp(key, "softcap") == 0)
		return json_is_number(v) && json_number_value(v) == 0;
	return 0;
}

/* A checkpoint's parameters: weights and binary_data_output (and Triton's
 * priority and timeout, read by v2_infer.c and acted on by none). The one-layer
 * ones have no place (the checkpoint brings its masks, positions and scale)
 * but for their defaults, so that a client sending one parameter set to
 * every model is refused only for asking what a checkpoint cannot do. */
static int stack_params(json_t *params, const char *model, struct api_error *err)
{
	static const char *const own[] = {"weights", "binary_data_output", "priority", "timeout",
					  "layers", "heads", NULL};
	static const char *const layer[] = {"causal", "window", "alignment", "positional",
					    "scale", "softcap", NULL};
	const char *key;
	json_t *v;

	json_object_foreach(params, key, v)
	{
		char ptr[API_PTR_MAX];

		if (req_listed(own, key) || (req_listed(layer, key) && layer_param_is_default(key, v)))
			continue;
		api_ptr_key(ptr, sizeof(ptr), "/parameters", key);
		if (!req_listed(layer, key))
			return api_fail(err, API_E_UNKNOWN_FIELD, ptr, "unknown field '%s'", key);
		return api_fail(err, API_E_INVALID_INPUT, ptr,
				"parameter '%s' does not apply to checkpoint model '%s', which brings "
				"its own masks, positions and scale",
				key, model);
	}
	return 0;
}

/* A checkpoint's job: tokens or text only, and of the parameters only
 * weights, binary_data_output, layers and heads (stack_params): attentions
 * (scores, projections, head outputs) hold the answered layers and heads,
 * every one unless the parameters choose (api/stack_pick.h: as /v1's fields
 * of those names, or one index, or a string "0, 2"). */
int v2_build_stack_job(const struct api_service *svc, const struct api_model_entry *e,
		       struct v2_job *v, struct api_error *err)
{
	struct attention_job *job = &v->job;
	struct stack_job *s = &v->stack;
	size_t limit = svc->limits.max_request_bytes;
	enum role q = v->has[IN_TOKENS] ? IN_TOKENS : IN_TEXT;
	struct api_where where = where_of(&v->in[q]);
	char ptr[API_PTR_MAX];

	for (int r = 0; r < IN_COUNT; r++)
		if (v->has[r] && r != IN_TOKENS && r != IN_TEXT && r != IN_TYPES)
			return api_fail(
			    err, API_E_INVALID_INPUT, input_ptr(v, (enum role)r, ptr),
			    "input '%s' does not apply: a checkpoint takes tokens or text "
			    "(and token_type_ids)",
			    v2_role_names[r]);
	if (q == IN_TEXT && e->tok == NULL)
		return api_fail(err, API_E_NO_TOKENIZER, input_ptr(v, q, ptr),
				"checkpoint model '%s' has no tokenizer; send token ids", e->name);
	if (v->params != NULL && stack_params(v->params, e->name, err) != 0)
		return -1;
	job->entry = e;
	job->model = e->model;
	job->model_name = e->name;
	job->max_text_bytes = svc->limits.max_text_bytes;
	engine_fields(v);
	if ((q == IN_TOKENS ? query_from_tokens(v, limit, err) : query_from_text(v, limit, err)) !=
	    0)
		return -1;
	s->job = job;
	s->ckpt = e->ckpt;
	s->st = &e->ckpt->ck->stack;
	s->want_output = v2_wants(v, OUT_OUTPUT);
	s->want_projections = v2_wants(v, OUT_Q) || v2_wants(v, OUT_K) || v2_wants(v, OUT_V);
	s->want_head_outputs = v2_wants(v, OUT_HEADS);
	s->answer_bytes_per_float = 16;
	job->Lk = job->Lq;
	job->weights_mode = !v2_wants(v, OUT_ATTENTIONS) ? ATTN_WEIGHTS_NONE
			    : v->weights == W_MEAN	 ? ATTN_WEIGHTS_MEAN
							 : ATTN_WEIGHTS_PER_HEAD;
	job->scores_view = v2_wants(v, OUT_SCORES) ? ATTN_SCORES_MASKED : ATTN_SCORES_NONE;
	job->encoding = API_ENC_FLOAT;
	if (stack_check_context(s, &where, err) != 0 || stack_types(v, err) != 0 ||
	    stack_pick_layers(s, json_object_get(v->params, "layers"), "/parameters/layers", 1,
			      err) != 0)
		return -1;
	return stack_pick_heads(s, json_object_get(v->params, "heads"), "/parameters/heads", 1, err);
}
