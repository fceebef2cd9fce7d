/*
 * v1_decode.c: the inputs of POST /v1/attention (embeddings, tokens or text;
 * key and value) and the top-level fields, and the order of the steps. See
 * v1.h.
 */
#include "v1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/json_read.h"
#include "api/json/json_utf8.h"
#include "engine/sizes.h"

/* Elements any one tensor of a request may have before limits say more. */
#define MAX_TENSOR_ELEMS ((size_t)1 << 31)

/* Where large rows of numbers are read before jansson (fastjson.h); each is
 * read with api_tensor_read_pool(&in->numbers, ...) and nothing else. */
static const char *const pooled_fields[] = { "/embeddings",	       "/key",
					     "/value",		       "/model/in_proj_weight",
					     "/model/out_proj_weight", "/model/embed_tokens",
					     "/mask/bias",	       NULL };

static const char *const top_fields[] = { "model", "embeddings", "tokens", "text", "key",
					  "value", "mask", "positional", "scale", "softcap",
					  "weights", "scores", "encoding", "precision", "layers",
					  "heads", "output", "token_type_ids", "positions",
					  "projections", "head_outputs", NULL };

/* Fields only a checkpoint model (v1_stack.c) reads. */
static const char *const stack_fields[] = { "layers", "heads", "output", "token_type_ids",
					    NULL };

int v1_is_default(const char *key, const json_t *v)
{
	if (strcmp(key, "mask") == 0 || strcmp(key, "positional") == 0)
		return json_is_string(v) && strcmp(json_string_value(v), "none") == 0;
	if (strcmp(key, "softcap") == 0)
		return json_is_number(v) && json_number_value(v) == 0;
	if (strcmp(key, "layers") == 0)
		return json_is_string(v) && strcmp(json_string_value(v), "all") == 0;
	if (strcmp(key, "output") == 0)
		return json_is_true(v);
	if (strcmp(key, "positions") == 0 || strcmp(key, "projections") == 0 ||
	    strcmp(key, "head_outputs") == 0)
		return json_is_false(v);
	return 0;
}

/* A one-layer model refuses what only a whole stack has (but its default). */
static int refuse_stack_fields(const struct v1_body *in, const struct attention_job *job,
			       struct api_error *err)
{
	for (const char *const *f = stack_fields; *f != NULL; f++) {
		const json_t *v = req_member(&in->top, *f);
		char ptr[API_PTR_MAX];

		if (v == NULL || v1_is_default(*f, v))
			continue;
		snprintf(ptr, sizeof(ptr), "/%s", *f);
		return api_fail(err, API_E_INVALID_INPUT, ptr,
				"%s applies to checkpoint models; model '%s' is one attention layer",
				*f, job->model_name ? job->model_name : "(inline)");
	}
	return 0;
}

void v1_body_release(struct v1_body *in)
{
	json_decref(in->root);
	fastjson_pool_release(&in->numbers);
	memset(in, 0, sizeof(*in));
}

/* Item lengths of a [B, L, ...] tensor: its ragged lengths or L each. */
static size_t *item_lengths(const struct api_tensor *t, size_t B, size_t L, int *ragged)
{
	size_t *len = malloc(B * sizeof(size_t));

	if (len == NULL)
		return NULL;
	for (size_t b = 0; b < B; b++) {
		len[b] = t->lengths ? t->lengths[b] : L;
		if (len[b] < L)
			*ragged = 1;
	}
	return len;
}

/*
 * Embeddings, a key or a value at ptr: [L, E] or [B, L, E], items of a batch
 * written as arrays free to differ in length. Such a batch is padded to its
 * longest item, so a few megabytes of body can ask for gigabytes of floats:
 * those past the request memory limit (limit bytes) are refused before the
 * padding is allocated. A tensor object's declared shape is checked against
 * its data before anything is allocated (json_tensor.c: check_declared).
 */
static int read_rows(struct v1_body *in, json_t *v, const char *ptr, size_t limit,
		     struct api_tensor *t, struct api_error *err)
{
	size_t most = limit / sizeof(float);

	if (most > MAX_TENSOR_ELEMS || json_is_object(v))
		most = MAX_TENSOR_ELEMS;
	if (api_tensor_read_pool(&in->numbers, v, ptr, 2, 3, most, API_T_RAGGED, t, err) == 0)
		return 0;
	if (err->kind == API_E_TOO_LARGE && most < MAX_TENSOR_ELEMS)
		api_fail(err, API_E_REQUEST_TOO_LARGE, ptr,
			 "more than %zu floats (a batch's items each at the longest one's length): "
			 "past the request memory limit of %zu MB",
			 most, limit >> 20);
	return -1;
}

/* "embeddings": [L, E] or [B, L, E] (items may differ in length). */
static int decode_embeddings(struct v1_body *in, struct attention_job *job, json_t *v,
			     size_t limit, struct api_error *err)
{
	struct api_tensor t;
	size_t E = job->model->E;

	if (read_rows(in, v, "/embeddings", limit, &t, err) != 0)
		return -1;
	if (t.shape[t.rank - 1] != E) {
		size_t got = t.shape[t.rank - 1];

		api_tensor_release(&t);
		return api_fail(err, API_E_DIMENSION_MISMATCH, "/embeddings",
				"the last dimension is %zu; the model's d_model is %zu", got, E);
	}
	job->batched = t.rank == 3;
	job->B = job->batched ? t.shape[0] : 1;
	job->Lq = job->batched ? t.shape[1] : t.shape[0];
	job->q_len = item_lengths(&t, job->B, job->Lq, &job->ragged);
	job->query = t.data;
	t.data = NULL;
	api_tensor_release(&t);
	return job->q_len ? 0 : api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
}

/* "text": a string, or a batch of strings, as B NUL-terminated texts. */
int v1_decode_text(struct attention_job *job, const json_t *v, size_t limit,
		   struct api_error *err)
{
	/* a word is no JSON value: its text (/text, /text/b) is the place */
	static const struct api_where where = { "/text", API_WHERE_ITEM, 0 };
	int batched = json_is_array(v);
	size_t B = batched ? json_array_size(v) : 1;
	const char **text;
	int rc;

	if (!json_is_string(v) && !batched)
		return api_fail(err, API_E_INVALID_TYPE, "/text",
				"text is a string or an array of strings");
	if (B == 0)
		return api_fail(err, API_E_EMPTY_SEQUENCE, "/text", "a batch needs at least one text");
	text = malloc(B * sizeof(*text));
	if (text == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t b = 0; b < B; b++) {
		const json_t *s = batched ? json_array_get(v, b) : v;
		char ptr[API_PTR_MAX];

		if (!json_is_string(s)) {
			free((void *)text);
			return api_fail(err, API_E_INVALID_TYPE,
					api_where_item(ptr, &where, batched, b), "expected a string");
		}
		text[b] = json_string_value(s);
	}
	rc = attention_query_from_text(job, text, B, batched, &where, limit, err);
	free((void *)text);
	return rc;
}

/* One item of "tokens": an array of strings and ids, appended to tok. */
static int token_item(const json_t *item, const char *ptr, struct api_token *tok,
		      size_t *n, struct api_error *err)
{
	char child[API_PTR_MAX];

	if (!json_is_array(item))
		return api_fail(err, API_E_INVALID_TYPE, ptr, "expected an array of tokens");
	*n = json_array_size(item); /* 0: the shared step's empty_sequence */
	for (size_t i = 0; i < *n; i++) {
		const json_t *e = json_array_get(item, i);
		json_int_t id;

		if (json_is_string(e)) {
			tok[i].str = json_string_value(e);
			tok[i].len = json_string_length(e);
		} else if (req_past_int64(e)) {
			api_ptr_index(child, sizeof(child), ptr, i);
			return api_fail(err, API_E_TOKEN_OUT_OF_RANGE, child,
					"token id %.15g is past every vocabulary's ids",
					json_real_value(e));
		} else if (req_integer(e, &id)) {
			tok[i].str = NULL;
			tok[i].id = id;
		} else {
			api_ptr_index(child, sizeof(child), ptr, i);
			return api_fail(err, API_E_INVALID_TYPE, child,
					"a token is a string or an id into the embedding table");
		}
	}
	return 0;
}

/* "tokens": an array of ids or strings, or a batch of them. */
int v1_decode_tokens(struct attention_job *job, const json_t *v, size_t limit,
		     struct api_error *err)
{
	static const struct api_where where = { "/tokens", API_WHERE_NESTED, 0 };
	int batched = json_is_array(v) && json_is_array(json_array_get(v, 0));
	size_t B = batched ? json_array_size(v) : 1, total = 0, at = 0;
	struct api_token *tok = NULL;
	size_t *len = NULL;
	int rc = -1;

	if (!json_is_array(v))
		return api_fail(err, API_E_INVALID_TYPE, "/tokens",
				"tokens is an array of ids or strings, or a batch of them");
	if (json_array_size(v) == 0)
		return api_fail(err, API_E_EMPTY_SEQUENCE, "/tokens",
				"a sequence needs at least one token");
	for (size_t b = 0; b < B; b++)
		total += json_array_size(batched ? json_array_get(v, b) : v);
	tok = malloc((total + 1) * sizeof(*tok));
	len = malloc(B * sizeof(*len));
	if (tok == NULL || len == NULL) {
		api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
		goto out;
	}
	for (size_t b = 0; b < B; b++) {
		char ptr[API_PTR_MAX];

		if (token_item(batched ? json_array_get(v, b) : v,
			       api_where_item(ptr, &where, batched, b), tok + at, &len[b], err) != 0)
			goto out;
		at += len[b];
	}
	rc = attention_query_from_tokens(job, tok, len, B, batched, &where, limit, err);
out:
	free(tok);
	free(len);
	return rc;
}

/* names[0..n) said as English: "a", "a and b", "a, b and c". */
static void say_list(char *dst, size_t cap, const char *const *names, size_t n)
{
	size_t at = 0;

	dst[0] = '\0';
	for (size_t i = 0; i < n && at < cap; i++) {
		const char *sep = i == 0 ? "" : i + 1 == n ? " and " : ", ";
		int w = snprintf(dst + at, cap - at, "%s%s", sep, names[i]);

		if (w < 0)
			break;
		at += (size_t)w;
	}
}

int v1_one_input(const struct req_members *top, const char *const *names, const char *note,
		 struct api_error *err)
{
	const char *sent[4];
	size_t n = 0, n_sent = 0;
	char all_said[64], sent_said[64], ptr[API_PTR_MAX];

	for (; n < 4 && names[n] != NULL; n++)
		if (req_member(top, names[n]) != NULL)
			sent[n_sent++] = names[n];
	if (n_sent == 1)
		return 0;
	say_list(all_said, sizeof all_said, names, n);
	if (n_sent == 0)
		return api_fail(err, API_E_INVALID_INPUT, "", "give exactly one of %s%s; this "
				"request has none", all_said, note);
	/* the second one found is the one too many: point the client at it */
	say_list(sent_said, sizeof sent_said, sent, n_sent);
	snprintf(ptr, sizeof ptr, "/%s", sent[1]);
	return api_fail(err, API_E_INVALID_INPUT, ptr, "give exactly one of %s%s; this request "
			"has %s", all_said, note, sent_said);
}

/* The one input: exactly one of embeddings, tokens and text. */
static int decode_input(struct v1_body *in, struct attention_job *job, size_t limit,
			struct api_error *err)
{
	static const char *const inputs[] = { "embeddings", "tokens", "text", NULL };
	json_t *emb = req_member(&in->top, "embeddings");
	json_t *tok = req_member(&in->top, "tokens");
	json_t *text = req_member(&in->top, "text");

	if (v1_one_input(&in->top, inputs, "", err) != 0)
		return -1;
	if (emb != NULL)
		return decode_embeddings(in, job, emb, limit, err);
	if (tok != NULL)
		return v1_decode_tokens(job, tok, limit, err);
	return v1_decode_text(job, text, limit, err);
}

/* "key" / "value": embeddings with the query's batch; value defaults to key. */
static int decode_kv(struct v1_body *in, struct attention_job *job, size_t limit,
		     struct api_error *err)
{
	json_t *k = req_member(&in->top, "key");
	json_t *v = req_member(&in->top, "value");
	size_t E = job->model->E;
	int ragged = 0;

	if (k == NULL && v != NULL)
		return api_fail(err, API_E_INVALID_INPUT, "/value", "value needs a key");
	if (k == NULL)
		return attention_self_keys(job, err);
	if (read_rows(in, k, "/key", limit, &job->key, err) != 0)
		return -1;
	if ((job->key.rank == 3) != job->batched || job->key.shape[job->key.rank - 1] != E ||
	    (job->batched && job->key.shape[0] != job->B))
		return job->batched ? api_fail(err, API_E_DIMENSION_MISMATCH, "/key",
					       "the query is a batch of %zu, so key must be "
					       "[%zu, Lk, %zu]",
					       job->B, job->B, E)
				    : api_fail(err, API_E_DIMENSION_MISMATCH, "/key",
					       "the query is one sequence, so key must be [Lk, %zu]",
					       E);
	job->Lk = job->key.shape[job->key.rank - 2];
	job->k_len = item_lengths(&job->key, job->B, job->Lk, &ragged);
	if (job->k_len == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	job->ragged |= ragged; /* answers are trimmed to each item's own lengths */
	if (v == NULL)
		return 0;
	if (read_rows(in, v, "/value", limit, &job->value, err) != 0)
		return -1;
	if (job->value.rank != job->key.rank ||
	    memcmp(job->value.shape, job->key.shape, sizeof(job->key.shape)) != 0)
		return api_fail(err, API_E_DIMENSION_MISMATCH, "/value",
				"value must have the shape of key");
	for (size_t b = 0; job->value.lengths && b < job->B; b++)
		if (job->value.lengths[b] != job->k_len[b]) {
			char ptr[API_PTR_MAX];

			api_ptr_index(ptr, sizeof(ptr), "/value", b);
			return api_fail(err, API_E_DIMENSION_MISMATCH, ptr,
					"has %zu rows where the key has %zu", job->value.lengths[b],
					job->k_len[b]);
		}
	return 0;
}

/* The answer's options, as /v1/sdpa reads them too. */
static int decode_outputs(const struct v1_body *in, struct attention_job *job,
			  struct api_error *err)
{
	struct v1_outputs o;

	if (v1_decode_outputs(&in->top, ATTN_WEIGHTS_PER_HEAD, &o, err) != 0)
		return -1;
	job->scale = o.scale;
	job->softcap = o.softcap;
	job->weights_mode = o.weights;
	job->scores_view = o.scores;
	job->encoding = o.encoding;
	job->precision = o.precision;
	return 0;
}

int v1_decode(const struct api_service *svc, const char *body, size_t len, struct v1_body *in,
	      struct attention_job *job, struct api_error *err)
{
	size_t limit = svc->limits.max_request_bytes; /* bytes a request may need */

	memset(in, 0, sizeof(*in));
	memset(job, 0, sizeof(*job));
	job->engine_fields = v1_engine_fields;
	job->n_engine_fields = v1_engine_field_count;
	if (req_parse_pooled(body, len, pooled_fields, svc->plain_json ? NULL : &in->numbers,
			     &in->root, err) != 0) {
		req_refine_text_utf8(body, len, 1, err); /* a text or a batch of them */
		return -1;
	}
	req_members_read(&in->top, in->root);
	/* the model first: a request refused for another field is still
	 * counted under the model it named (attnd_model_requests_total) */
	if (v1_decode_model(svc, in, job, err) != 0 ||
	    req_members_known(&in->top, "", top_fields, err) != 0)
		return -1;
	if (job->entry != NULL && job->entry->ckpt != NULL)
		return 1;
	if (refuse_stack_fields(in, job, err) != 0 || decode_input(in, job, limit, err) != 0 ||
	    decode_kv(in, job, limit, err) != 0 || v1_decode_mask(in, job, err) != 0 ||
	    v1_decode_positional(in, job, err) != 0 || v1_decode_show_positions(in, job, err) != 0 ||
	    req_bool_value(req_member(&in->top, "projections"), "projections", "", 0,
			   &job->projections, err) != 0 ||
	    req_bool_value(req_member(&in->top, "head_outputs"), "head_outputs", "", 0,
			   &job->head_outputs, err) != 0 ||
	    decode_outputs(in, job, err) != 0)
		return -1;
	return 0;
}
