/*
 * v2_infer.c: POST /v2/models/{name}[/versions/{version}]/infer (see v2.h).
 *
 * The request {"id"?, "parameters"?, "inputs", "outputs"?}:
 *   inputs      exactly one of embeddings FP32 [B, L, E] or [L, E],
 *               tokens INT32 / INT64 [B, L] or [L], text BYTES [B] (each
 *               string split on whitespace; items of different lengths are
 *               padded); key FP32 (and value, default key) with the query's
 *               batch, optional
 *   parameters  causal, window, alignment, positional, scale, softcap,
 *               weights (per_head, mean, none: which weight outputs may be
 *               asked for, and come by default), binary_data_output
 *   outputs     among output [B, Lq, E], weights [B, H, Lq, Lk] and
 *               weights_mean [B, Lq, Lk] (no B for unbatched inputs), each
 *               with parameters.binary_data; absent: every one `weights` allows
 * A checkpoint model (api/stack_job.h) takes tokens or text (BERT and
 * RoBERTa also token_type_ids INT32 / INT64, the shape of tokens), and of the
 * parameters weights and binary_data_output; its outputs are output (the
 * hidden state after the last layer, [B, L, E]), attentions (every
 * layer's, [layers, B, H, L, L], or [layers, B, L, L] for weights mean) and,
 * only when named in "outputs", scores (every layer's pre-softmax scores,
 * engine/stack.h, [layers, B, H, L, L] whatever weights says; rows past an
 * item's length all -inf, the row of a query that sees no key).
 * The inputs go onto a struct attention_job through the steps /v1/attention
 * shares (attention_query_from_tokens / _text, attention_apply_mask: ids,
 * vocabularies and hashing agree), are planned, built and run
 * (api/attention_run.c), and are answered as
 *   {"model_name", "model_version", "id"?, "outputs": [{"name", "datatype",
 *    "shape", "data" | "parameters": {"binary_data_size"}}]}
 * followed by each binary output's little-endian float32 bytes, in order.
 * Rows of a padded item past its own length are zero (scores: -inf).
 */
#include "v2.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/attention_job.h"
#include "api/handlers.h"
#include "api/json/json_read.h"
#include "api/stack_job.h"
#include "engine/checkpoint.h"
#include "engine/sizes.h"
#include "common/jsonstr.h"

enum role { IN_EMBEDDINGS = 0, IN_TOKENS, IN_TEXT, IN_KEY, IN_VALUE, IN_TYPES, IN_COUNT };
enum out_kind { OUT_OUTPUT = 0, OUT_WEIGHTS, OUT_MEAN, OUT_ATTENTIONS, OUT_SCORES, OUT_COUNT };
enum weights_param { W_PER_HEAD = 0, W_MEAN, W_NONE };

static const char *const role_names[IN_COUNT] = { "embeddings", "tokens", "text", "key",
						  "value",	"token_type_ids" };
static const unsigned role_dtypes[IN_COUNT] = {
	1u << V2_FP32, 1u << V2_INT32 | 1u << V2_INT64, 1u << V2_BYTES, 1u << V2_FP32,
	1u << V2_FP32, 1u << V2_INT32 | 1u << V2_INT64,
};
static const char *const out_names[OUT_COUNT] = { "output", "weights", "weights_mean",
						  "attentions", "scores" };

enum { V2_ENGINE_FIELDS = 7 };

static const char *const top_fields[] = { "id", "parameters", "inputs", "outputs", NULL };
static const char *const param_fields[] = { "causal",	"window",  "alignment",
					    "positional", "scale",   "softcap",
					    "weights",	"binary_data_output", NULL };

struct v2_job {
	json_t *root; /* the JSON header */
	const char *id;
	json_t *params;
	struct v2_input in[IN_COUNT];
	size_t at[IN_COUNT]; /* the index of each given input in "inputs" */
	int has[IN_COUNT];
	enum out_kind order[OUT_COUNT];
	int binary[OUT_COUNT];
	size_t n_out;
	int weights, binary_default;
	struct attention_job job;
	const struct api_checkpoint *ckpt; /* the model's, or NULL: one layer */
	struct stack_job stack;            /* a checkpoint's run */
	struct api_field_where engine_fields[V2_ENGINE_FIELDS];
	struct attention_out o;
	float *mean; /* weights_mean [B, Lq, Lk] when per-head weights come too */
};

static void v2_job_release(struct v2_job *v)
{
	for (int r = 0; r < IN_COUNT; r++)
		v2_input_release(&v->in[r]);
	attention_out_release(&v->o);
	attention_job_release(&v->job);
	stack_job_release(&v->stack);
	free(v->mean);
	json_decref(v->root);
}

/* ---- the request ------------------------------------------------------------ */

/* Inference-Header-Content-Length: the JSON header's bytes, or the whole body. */
static int header_length(const char *h, size_t len, size_t *json_len, struct api_error *err)
{
	size_t n = 0;

	*json_len = len;
	if (h == NULL)
		return 0;
	for (const char *p = h; *p != '\0'; p++)
		if (*p < '0' || *p > '9' || size_mul(&n, n, 10) != 0 ||
		    size_add(&n, n, (size_t)(*p - '0')) != 0)
			return api_fail(err, API_E_BAD_HEADER, "",
					"Inference-Header-Content-Length must be a byte count");
	if (h[0] == '\0' || n > len)
		return api_fail(err, API_E_BAD_HEADER, "",
				"Inference-Header-Content-Length %zu is not within the body's %zu "
				"bytes",
				n, len);
	*json_len = n;
	return 0;
}

static int read_top(struct v2_job *v, struct api_error *err)
{
	static const char *const weights[] = { "per_head", "mean", "none", NULL };
	json_t *id = json_object_get(v->root, "id");
	const char *ptr = "/parameters";

	if (req_known_fields(v->root, "", top_fields, err) != 0)
		return -1;
	if (id != NULL && !json_is_string(id))
		return api_fail(err, API_E_INVALID_TYPE, "/id", "id is a string");
	v->id = id ? json_string_value(id) : NULL;
	v->params = json_object_get(v->root, "parameters");
	if (v->params == NULL)
		return 0;
	if (!json_is_object(v->params))
		return api_fail(err, API_E_INVALID_TYPE, ptr, "parameters is an object");
	if (req_known_fields(v->params, ptr, param_fields, err) != 0 ||
	    req_enum(v->params, "weights", ptr, weights, W_PER_HEAD, &v->weights, err) != 0 ||
	    req_bool(v->params, "binary_data_output", ptr, 0, &v->binary_default, err) != 0)
		return -1;
	return 0;
}

/* Reads one input and files it under its name. */
static int read_one_input(struct v2_job *v, json_t *in, size_t i, struct v2_binary *bin,
			  size_t max_bytes, struct api_error *err)
{
	struct v2_input t;
	char ptr[API_PTR_MAX], child[API_PTR_MAX];
	int r = 0;

	if (v2_input_read(in, i, bin, max_bytes, &t, err) != 0)
		return -1;
	api_ptr_index(ptr, sizeof(ptr), "/inputs", i);
	while (r < IN_COUNT && strcmp(role_names[r], t.name) != 0)
		r++;
	if (r == IN_COUNT)
		api_fail(err, API_E_UNKNOWN_INPUT, ptr,
			 "unknown input '%s'; the inputs are embeddings, tokens, text, key, "
			 "value and token_type_ids",
			 t.name);
	else if (v->has[r])
		api_fail(err, API_E_DUPLICATE_INPUT, ptr, "input '%s' is given twice", t.name);
	else if (!(role_dtypes[r] & 1u << t.dtype))
		api_fail(err, API_E_INVALID_DATATYPE, req_child(child, ptr, "datatype"),
			 "input '%s' cannot be %s; it is %s", t.name, v2_dtype_name(t.dtype),
			 r == IN_TOKENS || r == IN_TYPES ? "INT32 or INT64"
			 : r == IN_TEXT			 ? "BYTES"
							 : "FP32");
	if (r == IN_COUNT || v->has[r] || !(role_dtypes[r] & 1u << t.dtype)) {
		v2_input_release(&t);
		return -1;
	}
	v->in[r] = t;
	v->has[r] = 1;
	v->at[r] = i;
	return 0;
}

/* "inputs", in order, with the binary section after the JSON header. */
static int read_inputs(struct v2_job *v, const char *binary, size_t binary_len, size_t max_bytes,
		       struct api_error *err)
{
	json_t *inputs = json_object_get(v->root, "inputs");
	struct v2_binary bin = { (const unsigned char *)binary, binary_len };

	if (!json_is_array(inputs) || json_array_size(inputs) == 0)
		return api_fail(err, API_E_INVALID_INPUT, "/inputs",
				"inputs is a non-empty array of tensors");
	for (size_t i = 0; i < json_array_size(inputs); i++)
		if (read_one_input(v, json_array_get(inputs, i), i, &bin, max_bytes, err) != 0)
			return -1;
	if (bin.left != 0)
		return api_fail(err, API_E_BINARY_SIZE_MISMATCH, "/inputs",
				"%zu bytes after the JSON header belong to no input; the inputs' "
				"binary_data_size add up to %zu",
				bin.left, binary_len - bin.left);
	if (v->has[IN_EMBEDDINGS] + v->has[IN_TOKENS] + v->has[IN_TEXT] != 1)
		return api_fail(err, API_E_INVALID_INPUT, "/inputs",
				"give exactly one of the inputs embeddings, tokens and text");
	return 0;
}

/* Whether the model and the `weights` parameter let an output be computed:
 * a checkpoint answers output, attentions and scores, one layer output,
 * weights and weights_mean. */
static int allowed(const struct v2_job *v, enum out_kind k)
{
	if (v->ckpt != NULL)
		return k == OUT_OUTPUT || k == OUT_SCORES ||
		       (k == OUT_ATTENTIONS && v->weights != W_NONE);
	return k == OUT_OUTPUT || (k == OUT_WEIGHTS && v->weights == W_PER_HEAD) ||
	       (k == OUT_MEAN && v->weights != W_NONE);
}

static int read_one_output(struct v2_job *v, json_t *o, size_t i, struct api_error *err)
{
	static const char *const fields[] = { "name", "parameters", NULL };
	static const char *const params[] = { "binary_data", NULL };
	const json_t *name = json_object_get(o, "name");
	json_t *p = json_object_get(o, "parameters");
	char ptr[API_PTR_MAX], child[API_PTR_MAX];
	int k = 0;

	api_ptr_index(ptr, sizeof(ptr), "/outputs", i);
	if (!json_is_object(o))
		return api_fail(err, API_E_INVALID_TYPE, ptr, "an output is an object with a name");
	if (req_known_fields(o, ptr, fields, err) != 0)
		return -1;
	while (k < OUT_COUNT && json_is_string(name) &&
	       strcmp(out_names[k], json_string_value(name)) != 0)
		k++;
	if (!json_is_string(name) || k == OUT_COUNT ||
	    (v->ckpt == NULL && k == OUT_SCORES)) /* a checkpoint's: unknown to one layer */
		return api_fail(err, API_E_UNKNOWN_OUTPUT, req_child(child, ptr, "name"),
				"the outputs are output, weights and weights_mean (one layer), "
				"output, attentions and scores (a checkpoint)");
	for (size_t j = 0; j < v->n_out; j++)
		if (v->order[j] == (enum out_kind)k)
			return api_fail(err, API_E_DUPLICATE_OUTPUT, ptr, "output '%s' is asked twice",
					out_names[k]);
	if (!allowed(v, (enum out_kind)k))
		return api_fail(err, API_E_INVALID_OUTPUT, ptr,
				"output '%s' is not computed with parameters.weights '%s'%s",
				out_names[k],
				v->weights == W_MEAN ? "mean" : v->weights == W_NONE ? "none" : "per_head",
				v->ckpt ? " on a checkpoint" : "");
	req_child(child, ptr, "parameters");
	if (p != NULL && !json_is_object(p))
		return api_fail(err, API_E_INVALID_TYPE, child, "parameters is an object");
	if (p != NULL && req_known_fields(p, child, params, err) != 0)
		return -1;
	if (req_bool(p, "binary_data", child, v->binary_default, &v->binary[k], err) != 0)
		return -1;
	v->order[v->n_out++] = (enum out_kind)k;
	return 0;
}

/* "outputs"; absent or empty: every output the `weights` parameter allows
 * but scores, which come only when named. */
static int read_outputs(struct v2_job *v, struct api_error *err)
{
	json_t *outs = json_object_get(v->root, "outputs");

	if (outs != NULL && !json_is_array(outs))
		return api_fail(err, API_E_INVALID_TYPE, "/outputs", "outputs is an array");
	if (outs != NULL && json_array_size(outs) > 0) {
		for (size_t i = 0; i < json_array_size(outs); i++)
			if (read_one_output(v, json_array_get(outs, i), i, err) != 0)
				return -1;
		return 0;
	}
	for (int k = 0; k < OUT_COUNT; k++)
		if (k != OUT_SCORES && allowed(v, (enum out_kind)k)) {
			v->order[v->n_out++] = (enum out_kind)k;
			v->binary[k] = v->binary_default;
		}
	return 0;
}

/* ---- onto an attention job ---------------------------------------------------- */

static int shape_error(const struct v2_job *v, enum role r, const char *want,
		       struct api_error *err)
{
	char ptr[API_PTR_MAX], child[API_PTR_MAX];

	api_ptr_index(ptr, sizeof(ptr), "/inputs", v->at[r]);
	return api_fail(err, API_E_INVALID_SHAPE, req_child(child, ptr, "shape"),
			"input '%s' must be %s", role_names[r], want);
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

/* The place of an input, as the shared steps report it. */
static struct api_where where_of(const struct v2_input *t)
{
	struct api_where w = { t->where_base, t->where_elems };

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
	char want[80];

	if (!v->has[IN_KEY] && v->has[IN_VALUE])
		return shape_error(v, IN_VALUE, "given with a key", err);
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
	static const char *const aligns[] = { "top_left", "bottom_right", NULL };
	static const char *const kinds[] = { "none", "sinusoidal", "rope", "alibi", NULL };
	struct api_mask_spec spec = { 0 };
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
	enum role q = v->has[IN_EMBEDDINGS] ? IN_EMBEDDINGS : v->has[IN_TOKENS] ? IN_TOKENS : IN_TEXT;
	const struct api_field_where map[V2_ENGINE_FIELDS] = {
		{ "query", v->in[q].where_base },	  { "tokens", v->in[q].where_base },
		{ "key", v->in[IN_KEY].where_base },	  { "value", v->in[IN_VALUE].where_base },
		{ "attn_mask", "/parameters" },		  { "kv_lengths", "/parameters" },
		{ "positional", "/parameters/positional" },
	};

	memcpy(v->engine_fields, map, sizeof map);
	v->job.engine_fields = v->engine_fields;
	v->job.n_engine_fields = V2_ENGINE_FIELDS;
}

static int wants(const struct v2_job *v, enum out_kind k)
{
	for (size_t i = 0; i < v->n_out; i++)
		if (v->order[i] == k)
			return 1;
	return 0;
}

static int build_job(const struct api_service *svc, const struct api_model_entry *e,
		     struct v2_job *v, struct api_error *err)
{
	struct attention_job *job = &v->job;
	size_t limit = svc->limits.max_request_bytes;
	double scale, softcap;
	int rc;

	if (v->has[IN_TYPES])
		return api_fail(err, API_E_INVALID_INPUT, v->in[IN_TYPES].where_base,
				"input 'token_type_ids' applies to bert and roberta checkpoints; "
				"model '%s' is one attention layer",
				e->name);
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
	    req_number(v->params, "softcap", "/parameters", 0.0, 1e30, 0.0, &softcap, err) != 0)
		return -1;
	job->scale = (float)scale;
	job->softcap = (float)softcap;
	job->weights_mode = wants(v, OUT_WEIGHTS) ? ATTN_WEIGHTS_PER_HEAD
			    : wants(v, OUT_MEAN)  ? ATTN_WEIGHTS_MEAN
						  : ATTN_WEIGHTS_NONE;
	job->encoding = API_ENC_FLOAT;
	return 0;
}

/* token_type_ids, optional: BERT's segment of each token, the shape of
 * tokens ([L] or [B, L]; with text there are no ids to match). */
static int stack_types(struct v2_job *v, struct api_error *err)
{
	struct v2_input *t = &v->in[IN_TYPES], *ids = &v->in[IN_TOKENS];
	struct api_where where = where_of(t);
	char want[64];

	if (!v->has[IN_TYPES])
		return 0;
	if (stack_takes_types(&v->stack, "input 'token_type_ids'", t->where_base, err) != 0)
		return -1;
	if (!v->has[IN_TOKENS])
		return api_fail(err, API_E_INVALID_INPUT, t->where_base,
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

/* A checkpoint's job: tokens or text only, and of the parameters only
 * weights and binary_data_output (the checkpoint brings its masks,
 * positions and scale); every layer runs, and attentions holds them all. */
static int build_stack_job(const struct api_service *svc, const struct api_model_entry *e,
			   struct v2_job *v, struct api_error *err)
{
	static const char *const stack_params[] = { "weights", "binary_data_output", NULL };
	struct attention_job *job = &v->job;
	struct stack_job *s = &v->stack;
	size_t limit = svc->limits.max_request_bytes;
	enum role q = v->has[IN_TOKENS] ? IN_TOKENS : IN_TEXT;
	struct api_where where = where_of(&v->in[q]);

	for (int r = 0; r < IN_COUNT; r++)
		if (v->has[r] && r != IN_TOKENS && r != IN_TEXT && r != IN_TYPES)
			return api_fail(err, API_E_INVALID_INPUT, v->in[r].where_base,
					"input '%s' does not apply: a checkpoint takes tokens or text "
					"(and token_type_ids)",
					role_names[r]);
	if (q == IN_TEXT && e->tok == NULL)
		return api_fail(err, API_E_NO_TOKENIZER, v->in[q].where_base,
				"checkpoint model '%s' has no tokenizer; send token ids", e->name);
	if (v->params != NULL && req_known_fields(v->params, "/parameters", stack_params, err) != 0)
		return -1;
	job->entry = e;
	job->model = e->model;
	job->model_name = e->name;
	job->max_text_bytes = svc->limits.max_text_bytes;
	engine_fields(v);
	if ((q == IN_TOKENS ? query_from_tokens(v, limit, err) : query_from_text(v, limit, err)) != 0)
		return -1;
	s->job = job;
	s->ckpt = e->ckpt;
	s->st = &e->ckpt->ck->stack;
	s->want_output = wants(v, OUT_OUTPUT);
	s->answer_bytes_per_float = 16;
	job->Lk = job->Lq;
	job->weights_mode = !wants(v, OUT_ATTENTIONS) ? ATTN_WEIGHTS_NONE
			    : v->weights == W_MEAN    ? ATTN_WEIGHTS_MEAN
						      : ATTN_WEIGHTS_PER_HEAD;
	job->scores_view = wants(v, OUT_SCORES) ? ATTN_SCORES_MASKED : ATTN_SCORES_NONE;
	job->encoding = API_ENC_FLOAT;
	if (stack_check_context(s, &where, err) != 0 || stack_types(v, err) != 0)
		return -1;
	return stack_all_layers(s, err);
}

/* ---- after the run ----------------------------------------------------------- */

/* weights_mean beside per-head weights: the mean over heads, summed in head
 * order as the engine's ATTN_WEIGHTS_MEAN does, so both agree bit for bit. */
static int mean_of_heads(struct v2_job *v, struct api_error *err)
{
	const struct attention_job *job = &v->job;
	size_t H = job->model->H, cells = job->Lq * job->Lk;
	float inv_h = 1.0f / (float)H;

	v->mean = malloc(job->B * cells * sizeof(float));
	if (v->mean == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t b = 0; b < job->B; b++) {
		float *w = v->mean + b * cells; /* weights_mean[b] */

		for (size_t h = 0; h < H; h++) {
			const float *P = v->o.weights + (b * H + h) * cells; /* weights[b, h] */

			for (size_t c = 0; c < cells; c++)
				w[c] = h == 0 ? P[c] * inv_h : w[c] + P[c] * inv_h;
		}
	}
	return 0;
}

/* Fills the rows of x [B, heads, Lq, cols] past each item's own length with
 * value. */
static void fill_padding(const struct attention_job *job, float *x, size_t heads, size_t cols,
			 float value)
{
	for (size_t b = 0; x && b < job->B; b++)
		for (size_t h = 0; h < heads; h++) {
			/* seek to x[b, h, q_len[b], 0] */
			float *row = x + ((b * heads + h) * job->Lq + job->q_len[b]) * cols;

			for (size_t k = 0; k < (job->Lq - job->q_len[b]) * cols; k++)
				row[k] = value;
		}
}

static void zero_padding(const struct attention_job *job, float *x, size_t heads, size_t cols)
{
	fill_padding(job, x, heads, cols, 0.0f);
}

struct out_tensor {
	const float *x;
	size_t rank, shape[5], n; /* up to [layers, B, H, L, L] */
};

/* A checkpoint's output [B, L, E], attentions [layers, B, H, L, L] (mean:
 * [layers, B, L, L]) or scores [layers, B, H, L, L], without B for an
 * unbatched input. */
static struct out_tensor stack_tensor(const struct v2_job *v, enum out_kind k)
{
	const struct attention_job *job = &v->job;
	const struct stack_job *s = &v->stack;
	size_t B = job->B, L = job->Lq, at = 0;
	struct out_tensor t = { 0 };

	t.x = k == OUT_OUTPUT ? s->out : k == OUT_SCORES ? s->scores : s->attentions;
	t.n = k == OUT_OUTPUT ? s->out_n : k == OUT_SCORES ? s->sc_n : s->att_n;
	if (k != OUT_OUTPUT)
		t.shape[at++] = s->n_layers;
	if (job->batched)
		t.shape[at++] = B;
	if (k == OUT_SCORES || (k == OUT_ATTENTIONS && job->weights_mode == ATTN_WEIGHTS_PER_HEAD))
		t.shape[at++] = stack_heads(s);
	t.shape[at++] = L;
	t.shape[at++] = k == OUT_OUTPUT ? s->st->E : L;
	t.rank = at;
	return t;
}

static struct out_tensor out_tensor(const struct v2_job *v, enum out_kind k)
{
	const struct attention_job *job = &v->job;
	size_t B = job->B, H = job->model->H, Lq = job->Lq, Lk = job->Lk, E = job->model->E;
	struct out_tensor t = { 0 };
	size_t full[3][4] = { { B, Lq, E }, { B, H, Lq, Lk }, { B, Lq, Lk } };
	size_t rank = k == OUT_WEIGHTS ? 4 : 3, skip = job->batched ? 0 : 1;

	if (v->ckpt != NULL)
		return stack_tensor(v, k);
	t.x = k == OUT_OUTPUT ? v->o.out : k == OUT_MEAN && v->mean ? v->mean : v->o.weights;
	t.rank = rank - skip;
	memcpy(t.shape, full[k] + skip, t.rank * sizeof(size_t));
	t.n = 1;
	for (size_t i = 0; i < t.rank; i++)
		t.n *= t.shape[i]; /* within the limit attention_run has checked */
	return t;
}

/* Appends n floats as little-endian float32 bytes. */
static int put_le_floats(struct buf *b, const float *x, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return buf_append(b, x, n * sizeof(float));
#else
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		unsigned char le[4];

		memcpy(&u, &x[i], 4);
		for (int j = 0; j < 4; j++)
			le[j] = (unsigned char)(u >> (8 * j));
		if (buf_append(b, le, 4) != 0)
			return -1;
	}
	return 0;
#endif
}

static int encode(const struct v2_job *v, struct api_reply *reply)
{
	struct buf *b = &reply->body;
	struct api_writer w = { b, API_ENC_FLOAT, 0 };
	int any_binary = 0;

	buf_puts(b, "{\"model_name\":");
	jsonstr_put(b, v->job.model_name);
	buf_puts(b, ",\"model_version\":\"" V2_MODEL_VERSION "\"");
	if (v->id != NULL) {
		buf_puts(b, ",\"id\":");
		jsonstr_put(b, v->id);
	}
	buf_puts(b, ",\"outputs\":[");
	for (size_t i = 0; i < v->n_out; i++) {
		enum out_kind k = v->order[i];
		struct out_tensor t = out_tensor(v, k);

		buf_printf(b, "%s{\"name\":\"%s\",\"datatype\":\"FP32\",\"shape\":[", i ? "," : "",
			   out_names[k]);
		for (size_t d = 0; d < t.rank; d++)
			buf_printf(b, "%s%zu", d ? "," : "", t.shape[d]);
		if (v->binary[k]) {
			buf_printf(b, "],\"parameters\":{\"binary_data_size\":%zu}}", t.n * 4);
			any_binary = 1;
			continue;
		}
		buf_puts(b, "],\"data\":");
		if (api_tensor_write(&w, t.x, 1, &t.n) != 0)
			return -1;
		buf_putc(b, '}');
	}
	buf_puts(b, "]}");
	if (!any_binary)
		return b->failed ? -1 : 0;
	reply->inference_header_len = b->len;
	reply->content_type = "application/octet-stream";
	for (size_t i = 0; i < v->n_out; i++) {
		struct out_tensor t = out_tensor(v, v->order[i]);

		if (v->binary[v->order[i]] && put_le_floats(b, t.x, t.n) != 0)
			return -1;
	}
	return b->failed ? -1 : 0;
}

/* ---- the handler ---------------------------------------------------------------- */

static int decode(const struct api_service *svc, const struct api_v2_call *call,
		  const char *body, size_t len, struct v2_job *v, struct api_error *err)
{
	const struct api_model_entry *e = v2_model(svc, call, err);
	size_t json_len;

	if (e == NULL || header_length(call->header_len, len, &json_len, err) != 0 ||
	    req_parse(body, json_len, &v->root, err) != 0 || read_top(v, err) != 0 ||
	    read_inputs(v, body + json_len, len - json_len, svc->limits.max_request_bytes, err) != 0)
		return -1;
	v->ckpt = e->ckpt;
	if (read_outputs(v, err) != 0)
		return -1;
	return v->ckpt ? build_stack_job(svc, e, v, err) : build_job(svc, e, v, err);
}

/* A checkpoint's run; rows past each item's length zeroed, as one layer's
 * (scores: -inf, a query that sees no key, whose weights are zero). */
static int run_stack(const struct api_service *svc, struct v2_job *v, struct api_reply *reply,
		     struct api_error *err)
{
	struct stack_job *s = &v->stack;
	const struct attention_job *job = &v->job;
	size_t heads = job->weights_mode == ATTN_WEIGHTS_PER_HEAD ? stack_heads(s) : 1;
	size_t slab;

	if (stack_plan(svc, reply, s, err) != 0 || stack_run(svc, s, reply, err) != 0)
		return -1;
	if (!job->ragged)
		return 0;
	slab = s->att_n / s->n_layers; /* planned: att_n is known from here on */
	zero_padding(job, s->out, 1, s->st->E);
	for (size_t c = 0; s->attentions && c < s->n_layers; c++)
		zero_padding(job, s->attentions + c * slab, heads, job->Lq); /* layer c's slab */
	for (size_t c = 0; s->scores && c < s->n_layers; c++) /* layer c's [B, H, L, L] */
		fill_padding(job, s->scores + c * (s->sc_n / s->n_layers), stack_heads(s), job->Lq,
			     -INFINITY);
	return 0;
}

static int run(const struct api_service *svc, struct v2_job *v, struct api_reply *reply,
	       struct api_error *err)
{
	struct attention_job *job = &v->job;
	size_t H = job->model->H;
	struct attention_plan plan;

	if (v->ckpt != NULL)
		return run_stack(svc, v, reply, err);
	if (attention_plan(svc, job, reply, &plan, err) != 0 || attention_build(job, err) != 0 ||
	    attention_run(svc, job, &plan, &v->o, reply, err) != 0)
		return -1;
	if (wants(v, OUT_WEIGHTS) && wants(v, OUT_MEAN) && mean_of_heads(v, err) != 0)
		return -1;
	if (job->ragged) {
		zero_padding(job, v->o.out, 1, job->model->E);
		zero_padding(job, job->weights_mode == ATTN_WEIGHTS_PER_HEAD ? v->o.weights : NULL,
			     H, job->Lk);
		zero_padding(job, job->weights_mode == ATTN_WEIGHTS_MEAN ? v->o.weights : v->mean, 1,
			     job->Lk);
	}
	return 0;
}

void v2_infer(const struct api_service *svc, const struct api_v2_call *call, const char *body,
	      size_t len, struct api_reply *reply)
{
	const struct api_model_entry *e = registry_find(svc, call->model ? call->model : "");
	struct v2_job v;
	struct api_error err;
	struct timespec t0;

	memset(&v, 0, sizeof(v));
	reply->model = e != NULL ? e->name : NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (decode(svc, call, body, len, &v, &err) != 0) {
		v2_reply_error(reply, &err);
		goto out;
	}
	reply->parse_ms = api_ms_since(&t0);
	if (run(svc, &v, reply, &err) != 0) {
		v2_reply_error(reply, &err);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (encode(&v, reply) != 0) {
		api_fail(&err, API_E_RESPONSE_TOO_LARGE, "",
			 "the answer exceeds the response limit; ask for fewer outputs");
		v2_reply_error(reply, &err);
		goto out;
	}
	reply->status = 200;
	reply->encode_ms = api_ms_since(&t0);
out:
	v2_job_release(&v);
}
