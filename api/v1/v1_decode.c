/*
 * attention_decode.c: the inputs of POST /v1/attention (embeddings, tokens or
 * text; key and value) and the top-level fields. See attention_job.h.
 */
#include "api/attention_job.h"

#include <stdlib.h>
#include <string.h>

#include "api/json/json_read.h"
#include "engine/sizes.h"

/* Elements any one tensor of a request may have before limits say more. */
#define MAX_TENSOR_ELEMS ((size_t)1 << 31)

/* Where large rows of numbers are read before jansson (fastjson.h); each is
 * read with api_tensor_read_pool(&job->numbers, ...) and nothing else. */
static const char *const pooled_fields[] = { "/embeddings",	       "/key",
					     "/value",		       "/model/in_proj_weight",
					     "/model/out_proj_weight", "/model/embed_tokens",
					     "/mask/bias",	       NULL };

static const char *const top_fields[] = { "model", "embeddings", "tokens", "text", "key",
					  "value", "mask", "positional", "scale", "softcap",
					  "weights", "scores", "encoding", "precision", NULL };

void attention_job_release(struct attention_job *job)
{
	json_decref(job->root);
	fastjson_pool_release(&job->numbers);
	attn_model_free(job->inline_model);
	free(job->query);
	api_tensor_release(&job->key);
	api_tensor_release(&job->value);
	free(job->q_len);
	free(job->k_len);
	free((void *)job->tokens);
	free(job->token_ids);
	free(job->tok_store);
	free(job->kv_lengths);
	api_tensor_release(&job->user_mask);
	free(job->allow);
	free(job->q_positions);
	free(job->k_positions);
	memset(job, 0, sizeof(*job));
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

/* "embeddings": [L, E] or [B, L, E] (items may differ in length). */
static int decode_embeddings(struct attention_job *job, json_t *v, struct api_error *err)
{
	struct api_tensor t;
	size_t E = job->model->E;

	if (api_tensor_read_pool(&job->numbers, v, "/embeddings", 2, 3, MAX_TENSOR_ELEMS,
				 API_T_RAGGED, &t, err) != 0)
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

/* One of " \t\n\r\f\v" (not NUL): what splits text into words. */
static int is_ascii_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Splits text on ASCII whitespace into tok_store; returns the token count. */
static size_t split_text(const char *s, char *store, const char **tok)
{
	size_t n = 0;

	while (*s) {
		while (is_ascii_space(*s))
			s++;
		if (!*s)
			break;
		tok[n++] = store;
		while (*s && !is_ascii_space(*s))
			*store++ = *s++;
		*store++ = '\0';
	}
	return n;
}

/* The items of "tokens" or "text" as JSON values: one sequence or a batch. */
static int token_items(const json_t *v, int is_text, size_t *B, int *batched)
{
	if (is_text) {
		*batched = json_is_array(v);
		*B = *batched ? json_array_size(v) : 1;
		return json_is_string(v) || (json_is_array(v) && *B > 0) ? 0 : -1;
	}
	if (!json_is_array(v) || json_array_size(v) == 0)
		return -1;
	*batched = json_is_array(json_array_get(v, 0));
	*B = *batched ? json_array_size(v) : 1;
	return 0;
}

/* Labels and ids of one item; strings map through the model's vocabulary or hash. */
static int item_ids(struct attention_job *job, const json_t *item, const char *ptr,
		    int64_t *ids, const char **labels, size_t *n, struct api_error *err)
{
	char child[API_PTR_MAX];
	int64_t V = (int64_t)job->model->vocab;

	if (!json_is_array(item) || json_array_size(item) == 0)
		return api_fail(err, API_E_INVALID_TYPE, ptr, "expected a non-empty array of tokens");
	*n = json_array_size(item);
	for (size_t i = 0; i < *n; i++) {
		const json_t *e = json_array_get(item, i);

		api_ptr_index(child, sizeof(child), ptr, i);
		if (json_is_string(e)) {
			labels[i] = json_string_value(e);
			ids[i] = job->entry ? registry_token_id(job->entry, labels[i],
								json_string_length(e))
					    : (int64_t)(registry_fnv1a(labels[i],
								       json_string_length(e)) %
							(uint64_t)V);
			if (ids[i] < 0)
				return api_fail(err, API_E_UNKNOWN_TOKEN, child,
						"'%s' is not in the model's vocabulary", labels[i]);
		} else if (json_is_integer(e) && json_integer_value(e) >= 0 &&
			   json_integer_value(e) < V) {
			ids[i] = json_integer_value(e);
			labels[i] = job->entry && job->entry->vocab ? job->entry->vocab[ids[i]] : NULL;
		} else {
			return api_fail(err, json_is_integer(e) ? API_E_TOKEN_OUT_OF_RANGE : API_E_INVALID_TYPE,
					child, "a token is a string or an id in [0, %lld)", (long long)V);
		}
	}
	return 0;
}

/* The number of words split_text finds in s. */
static size_t count_words(const char *s)
{
	size_t n = 0;

	while (*s) {
		while (is_ascii_space(*s))
			s++;
		if (!*s)
			break;
		n++;
		while (*s && !is_ascii_space(*s))
			s++;
	}
	return n;
}

/* "text" items become JSON arrays of their whitespace-split words. */
static json_t *text_item(struct attention_job *job, const json_t *v, size_t b, char **store,
			 const char **scratch)
{
	const json_t *s = json_is_array(v) ? json_array_get(v, b) : v;
	json_t *arr;
	size_t n;

	if (!json_is_string(s))
		return NULL;
	n = split_text(json_string_value(s), *store, scratch);
	arr = json_array();
	for (size_t i = 0; arr && i < n; i++)
		json_array_append_new(arr, json_string(scratch[i]));
	*store += json_string_length(s) + 1;
	(void)job;
	return arr;
}

/* Token inputs grow into [B, Lq, E] floats: refuse before allocating them when
 * that alone passes the request memory limit. */
static int check_embed_memory(size_t limit, size_t B, size_t L, size_t E, const char *field,
			      struct api_error *err)
{
	size_t bytes;

	if (size_mul4(&bytes, B, L, E, sizeof(float)) != 0 || bytes > limit)
		return api_fail(err, API_E_REQUEST_TOO_LARGE, field,
				"%zu x %zu tokens of d_model %zu pass the request memory limit of "
				"%zu MB",
				B, L, E, limit >> 20);
	return 0;
}

/* "tokens" or "text": ids into embeddings [B, Lq, E] via the embedding table. */
int attention_decode_tokens(struct attention_job *job, json_t *v, int is_text, size_t svc_limit,
			    struct api_error *err)
{
	const char *field = is_text ? "/text" : "/tokens";
	size_t B, E = job->model->E;
	json_t *items;

	if (job->model->embed == NULL)
		return api_fail(err, API_E_NO_EMBEDDING_TABLE, field,
				"model '%s' has no token embedding table; send embeddings",
				job->model_name);
	if (token_items(v, is_text, &B, &job->batched) != 0)
		return api_fail(err, API_E_INVALID_TYPE, field,
				is_text ? "text is a string or an array of strings"
					: "tokens is an array of ids or strings, or a batch of them");
	items = json_array(); /* the items as arrays of tokens, kept alive in root */
	json_object_set_new(job->root, " items", items);
	if (is_text) {
		size_t bytes = 0, longest = 0;
		const char **scratch;
		char *store;

		for (size_t b = 0; b < B; b++) {
			const json_t *s = json_is_array(v) ? json_array_get(v, b) : v;
			char ptr[API_PTR_MAX];
			size_t words;

			api_ptr_index(ptr, sizeof(ptr), "/text", b);
			if (!json_is_string(s))
				return api_fail(err, API_E_INVALID_TYPE, job->batched ? ptr : "/text",
						"expected a string");
			bytes += json_string_length(s) + 1;
			words = count_words(json_string_value(s));
			longest = words > longest ? words : longest;
		}
		/* before the words become strings (some 80 bytes each): a 10 MB text
		 * would otherwise take half a gigabyte to be refused below */
		if (check_embed_memory(svc_limit, B, longest, E, field, err) != 0)
			return -1;
		job->tok_store = store = malloc(bytes + 1);
		scratch = malloc((longest + 1) * sizeof(char *));
		for (size_t b = 0; store && scratch && b < B; b++)
			json_array_append_new(items, text_item(job, v, b, &store, scratch));
		free((void *)scratch);
	} else {
		for (size_t b = 0; b < B; b++)
			json_array_append(items, job->batched ? json_array_get(v, b) : v);
	}
	job->B = B;
	job->Lq = 0;
	for (size_t b = 0; b < B; b++) {
		const json_t *item = json_array_get(items, b);
		size_t n = json_array_size(item);
		char ptr[API_PTR_MAX];

		api_ptr_index(ptr, sizeof(ptr), field, b);
		if (!json_is_array(item))
			return api_fail(err, API_E_INVALID_TYPE, job->batched ? ptr : field,
					"expected an array of tokens");
		if (n == 0)
			return api_fail(err, API_E_EMPTY_SEQUENCE, job->batched ? ptr : field,
					"a sequence needs at least one token");
		job->Lq = n > job->Lq ? n : job->Lq;
	}
	if (check_embed_memory(svc_limit, B, job->Lq, E, field, err) != 0)
		return -1;
	/* the answer has [B, Lq, E] numbers: too many for a small request */
	if (job->small_only && (double)B * (double)job->Lq * (double)E > API_SMALL_FLOATS)
		return attention_decline(job);
	job->q_len = calloc(B, sizeof(size_t));
	job->tokens = calloc(B * job->Lq, sizeof(char *));
	job->token_ids = calloc(B * job->Lq, sizeof(int64_t));
	job->query = calloc(B * job->Lq * E, sizeof(float));
	if (!job->q_len || !job->tokens || !job->token_ids || !job->query)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t b = 0; b < B; b++) {
		char ptr[API_PTR_MAX];
		struct attn_error aerr;

		if (job->batched)
			api_ptr_index(ptr, sizeof(ptr), field, b);
		else
			snprintf(ptr, sizeof(ptr), "%s", field);
		if (item_ids(job, json_array_get(items, b), ptr, job->token_ids + b * job->Lq,
			     job->tokens + b * job->Lq, &job->q_len[b], err) != 0)
			return -1;
		if (attn_model_embed(job->model, job->query + b * job->Lq * E,
				     job->token_ids + b * job->Lq, job->q_len[b], &aerr) != ATTN_OK)
			return api_engine_error(&aerr, err);
		job->ragged |= job->q_len[b] < job->Lq;
	}
	return 0;
}

/* The one input: exactly one of embeddings, tokens and text. */
static int decode_input(struct attention_job *job, size_t limit, struct api_error *err)
{
	json_t *emb = json_object_get(job->root, "embeddings");
	json_t *tok = json_object_get(job->root, "tokens");
	json_t *text = json_object_get(job->root, "text");

	if ((emb != NULL) + (tok != NULL) + (text != NULL) != 1)
		return api_fail(err, API_E_INVALID_INPUT, "",
				"give exactly one of embeddings, tokens and text");
	if (emb != NULL)
		return decode_embeddings(job, emb, err);
	return attention_decode_tokens(job, tok ? tok : text, text != NULL, limit, err);
}

/* "key" / "value": embeddings with the query's batch; value defaults to key. */
static int decode_kv(struct attention_job *job, struct api_error *err)
{
	json_t *k = json_object_get(job->root, "key");
	json_t *v = json_object_get(job->root, "value");
	size_t E = job->model->E;
	int ragged = 0;

	if (k == NULL && v != NULL)
		return api_fail(err, API_E_INVALID_INPUT, "/value", "value needs a key");
	if (k == NULL) {
		job->Lk = job->Lq;
		job->k_len = malloc(job->B * sizeof(size_t));
		if (job->k_len)
			memcpy(job->k_len, job->q_len, job->B * sizeof(size_t));
		return job->k_len ? 0 : api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	}
	if (api_tensor_read_pool(&job->numbers, k, "/key", 2, 3, MAX_TENSOR_ELEMS, API_T_RAGGED,
				 &job->key, err) != 0)
		return -1;
	if ((job->key.rank == 3) != job->batched || job->key.shape[job->key.rank - 1] != E ||
	    (job->batched && job->key.shape[0] != job->B))
		return api_fail(err, API_E_DIMENSION_MISMATCH, "/key",
				"key must be [Lk, %zu] like an unbatched query, or [%zu, Lk, %zu]",
				E, job->B, E);
	job->Lk = job->key.shape[job->key.rank - 2];
	job->k_len = item_lengths(&job->key, job->B, job->Lk, &ragged);
	if (job->k_len == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	job->ragged |= ragged; /* answers are trimmed to each item's own lengths */
	if (v == NULL)
		return 0;
	if (api_tensor_read_pool(&job->numbers, v, "/value", 2, 3, MAX_TENSOR_ELEMS, API_T_RAGGED,
				 &job->value, err) != 0)
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

/* scale, softcap, weights, scores, encoding, precision */
static int decode_outputs(struct attention_job *job, struct api_error *err)
{
	static const char *const weights[] = { "none", "per_head", "mean", NULL };
	static const char *const scores[] = { "none", "raw", "softcap", "masked", "softmax", NULL };
	static const char *const encodings[] = { "float", "base64", NULL };
	double scale, softcap;
	int wm, sv, enc;
	size_t precision;

	if (req_number(job->root, "scale", "", 1e-30, 1e30, 0.0, &scale, err) != 0 ||
	    req_number(job->root, "softcap", "", 0.0, 1e30, 0.0, &softcap, err) != 0 ||
	    req_enum(job->root, "weights", "", weights, ATTN_WEIGHTS_PER_HEAD, &wm, err) != 0 ||
	    req_enum(job->root, "scores", "", scores, ATTN_SCORES_NONE, &sv, err) != 0 ||
	    req_enum(job->root, "encoding", "", encodings, API_ENC_FLOAT, &enc, err) != 0 ||
	    req_size(job->root, "precision", "", 1, 9, 0, &precision, err) != 0)
		return -1;
	job->scale = (float)scale;
	job->softcap = (float)softcap;
	job->weights_mode = (enum attn_weights_mode)wm;
	job->scores_view = (enum attn_scores_view)sv;
	job->encoding = (enum api_encoding)enc;
	job->precision = (int)precision;
	return 0;
}

int attention_decline(struct attention_job *job)
{
	job->declined = 1;
	return -1;
}

/* An inline model is never small: a seeded one is made from d_model alone. */
static int check_small_model(struct attention_job *job)
{
	if (job->small_only && json_is_object(json_object_get(job->root, "model")))
		return attention_decline(job);
	return 0;
}

int attention_decode(const struct api_service *svc, const char *body, size_t len,
		     int small_only, struct attention_job *job, struct api_error *err)
{
	memset(job, 0, sizeof(*job));
	job->small_only = small_only;
	if (req_parse_pooled(body, len, pooled_fields,
			     svc->plain_json ? NULL : &job->numbers, &job->root, err) != 0 ||
	    req_known_fields(job->root, "", top_fields, err) != 0 || check_small_model(job) != 0 ||
	    attention_decode_model(svc, job, err) != 0 ||
	    decode_input(job, svc->limits.max_request_bytes, err) != 0 ||
	    decode_kv(job, err) != 0 || attention_decode_mask(job, err) != 0 ||
	    attention_decode_positional(job, err) != 0 || decode_outputs(job, err) != 0)
		return -1;
	return 0;
}
