/*
 * v1_tokenize.c: the tokenizers as routes of their own.
 *
 *   POST /v1/tokenize    {"tokenizer": NAME | "model": NAME, "text",
 *                         "add_special_tokens"?: true}
 *                     -> {"ids": [...], "tokens": [...], "offsets": [[start, end], ...]}
 *   POST /v1/detokenize  {"tokenizer" | "model", "ids": [...],
 *                         "skip_special_tokens"?: false}
 *                     -> {"text": "..."}
 *   GET  /v1/tokenizers  -> {"tokenizers": [{"name", "source", "vocab_size", "models"}]}
 *
 * `tokens` are the vocabulary's pieces as Hugging Face's `tokens` gives them
 * ("Ġthe"); offsets count Unicode code points of `text`, end exclusive, and a
 * token the post-processor added has [0, 0]. As Hugging Face's `encode` and
 * `decode`, special tokens are added by default and kept by default.
 *
 * Invalid UTF-8 inside `text` is 422 invalid_utf8 at /text with the byte
 * offset in the text, as on /v1/attention (api/json/json_utf8.h).
 */
#include "api/handlers.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/engine_error.h"
#include "api/json/json_read.h"
#include "api/json/json_utf8.h"
#include "common/jsonstr.h"
#include "tokenizer/tokenizer.h"

/* ---- the body ------------------------------------------------------------ */

/* The body as an object of fields; reads_text: bad bytes in its `text` (one
 * string) are said as json_utf8.h says. */
static int parse(const char *body, size_t len, const char *const *fields, int reads_text,
		 json_t **root, struct api_error *err)
{
	*root = NULL;
	if (req_parse(body, len, root, err) != 0) {
		if (reads_text)
			req_refine_text_utf8(body, len, 0, err);
		return -1;
	}
	return req_known_fields(*root, "", fields, err);
}

/* The tokenizer a request names: "tokenizer", or the one of "model". */
static int pick(const struct api_service *svc, json_t *root, const struct tokenizer **tok,
		struct api_error *err)
{
	json_t *t = req_get(root, "tokenizer"), *m = req_get(root, "model");
	const struct api_tokenizer_entry *te;
	const struct api_model_entry *me;

	/* fields that exclude each other are invalid_input, as /v1/attention's
	 * "exactly one of embeddings, tokens and text" */
	if (t != NULL && m != NULL)
		return api_fail(err, API_E_INVALID_INPUT, "/model",
				"give a tokenizer or a model, not both");
	if (t == NULL && m == NULL)
		return api_fail(err, API_E_MISSING_FIELD, "/tokenizer",
				"give a tokenizer (GET /v1/tokenizers) or a model with one");
	if (!json_is_string(t != NULL ? t : m))
		return api_fail(err, API_E_INVALID_TYPE, t != NULL ? "/tokenizer" : "/model",
				"expected a name");
	if (t != NULL) {
		te = registry_find_tokenizer(svc, json_string_value(t));
		if (te == NULL)
			return api_fail(err, API_E_TOKENIZER_NOT_FOUND, "/tokenizer",
					"no tokenizer named '%s'", json_string_value(t));
		*tok = te->tok;
		return 0;
	}
	me = registry_find(svc, json_string_value(m));
	if (me == NULL)
		return api_fail(err, API_E_MODEL_NOT_FOUND, "/model", "no model named '%s'",
				json_string_value(m));
	if (me->tok == NULL)
		return api_fail(err, API_E_NO_TOKENIZER, "/model",
				"model '%s' has no tokenizer (--model ...,tokenizer=NAME)",
				me->name);
	*tok = me->tok;
	return 0;
}

/* The "text" of a request: a string of at most max bytes (0: no limit). */
static int read_text(json_t *root, size_t max, const char **text, size_t *len,
		     struct api_error *err)
{
	json_t *t = req_get(root, "text");

	if (t == NULL)
		return api_fail(err, API_E_MISSING_FIELD, "/text", "give the text to tokenize");
	if (!json_is_string(t))
		return api_fail(err, API_E_INVALID_TYPE, "/text", "expected a string");
	*text = json_string_value(t);
	*len = json_string_length(t);
	if (max > 0 && *len > max)
		return api_fail(err, API_E_TOO_LARGE, "/text",
				"text is %zu bytes, over the limit of %zu (--max-text-bytes)", *len,
				max);
	return 0;
}

/* ---- tokenize ------------------------------------------------------------ */

static void write_encoding(struct buf *b, const struct tok_encoding *enc)
{
	buf_puts(b, "{\"ids\":[");
	for (size_t i = 0; i < enc->n; i++) {
		if (i > 0)
			buf_putc(b, ',');
		buf_put_u64(b, (unsigned long long)enc->tokens[i].id);
	}
	buf_puts(b, "],\"tokens\":[");
	for (size_t i = 0; i < enc->n; i++) {
		if (i > 0)
			buf_putc(b, ',');
		jsonstr_put(b, enc->tokens[i].piece);
	}
	buf_puts(b, "],\"offsets\":[");
	for (size_t i = 0; i < enc->n; i++) {
		buf_puts(b, i > 0 ? ",[" : "[");
		buf_put_u64(b, (unsigned long long)enc->tokens[i].start);
		buf_putc(b, ',');
		buf_put_u64(b, (unsigned long long)enc->tokens[i].end);
		buf_putc(b, ']');
	}
	buf_puts(b, "]}");
}

void api_tokenize(const struct api_service *svc, const char *body, size_t len,
		  struct api_reply *reply)
{
	static const char *const fields[] = {"tokenizer", "model", "text", "add_special_tokens",
					     NULL};
	const struct tokenizer *tok = NULL;
	struct tok_encoding enc = {NULL, 0};
	struct api_error err;
	const char *text = NULL;
	size_t text_len = 0, bad = 0;
	json_t *root = NULL;
	int special = 1;
	enum tok_status st;

	if (parse(body, len, fields, 1, &root, &err) != 0 || pick(svc, root, &tok, &err) != 0 ||
	    read_text(root, svc->limits.max_text_bytes, &text, &text_len, &err) != 0 ||
	    req_bool(root, "add_special_tokens", "", 1, &special, &err) != 0)
		goto fail;
	st = tok_encode(tok, text, text_len, special, &enc, &bad);
	if (st != TOK_OK) {
		api_tokenize_fail(&err, st, bad, "/text");
		goto fail;
	}
	write_encoding(&reply->body, &enc);
	reply->status = 200;
	goto out;
fail:
	api_reply_error(reply, &err);
out:
	tok_encoding_release(&enc);
	json_decref(root);
}

/* ---- detokenize ---------------------------------------------------------- */

/* "ids": integers in [0, 2^31), into a new array (caller frees). */
static int read_ids(json_t *root, int32_t **ids, size_t *n, struct api_error *err)
{
	json_t *a = req_get(root, "ids"), *v;
	char ptr[API_PTR_MAX];
	json_int_t id;
	size_t i;

	*ids = NULL;
	if (a == NULL)
		return api_fail(err, API_E_MISSING_FIELD, "/ids", "give the ids to decode");
	if (!json_is_array(a))
		return api_fail(err, API_E_INVALID_TYPE, "/ids", "expected an array of ids");
	*n = json_array_size(a);
	*ids = malloc((*n > 0 ? *n : 1) * sizeof **ids);
	if (*ids == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	json_array_foreach(a, i, v)
	{
		api_ptr_index(ptr, sizeof ptr, "/ids", i);
		if (!req_integer(v, &id))
			return api_fail(err, API_E_INVALID_TYPE, ptr, "expected an integer id");
		if (req_past_int64(v)) /* named as sent, not as its clamped end */
			return api_fail(err, API_E_OUT_OF_RANGE, ptr, "id %.17g is not in the vocabulary",
					json_real_value(v));
		if (id < 0 || id > INT32_MAX)
			return api_fail(err, API_E_OUT_OF_RANGE, ptr, "id %lld is not in the vocabulary",
					(long long)id);
		(*ids)[i] = (int32_t)id;
	}
	return 0;
}

void api_detokenize(const struct api_service *svc, const char *body, size_t len,
		    struct api_reply *reply)
{
	static const char *const fields[] = {"tokenizer", "model", "ids", "skip_special_tokens",
					     NULL};
	const struct tokenizer *tok = NULL;
	struct api_error err;
	struct buf text;
	char ptr[API_PTR_MAX];
	int32_t *ids = NULL;
	size_t n = 0, bad = 0;
	json_t *root = NULL;
	int skip = 0;
	enum tok_status st;

	buf_init(&text, reply->body.max);
	if (parse(body, len, fields, 0, &root, &err) != 0 || pick(svc, root, &tok, &err) != 0 ||
	    read_ids(root, &ids, &n, &err) != 0 ||
	    req_bool(root, "skip_special_tokens", "", 0, &skip, &err) != 0)
		goto fail;
	st = tok_decode(tok, ids, n, skip, &text, &bad);
	if (st == TOK_EID) {
		api_ptr_index(ptr, sizeof ptr, "/ids", bad);
		api_fail(&err, API_E_OUT_OF_RANGE, ptr, "id %d is not in the vocabulary",
			 (int)ids[bad]);
		goto fail;
	}
	if (st == TOK_ELIMIT) {
		api_fail(&err, API_E_REQUEST_TOO_EXPENSIVE, "/ids",
			 "a regex of the tokenizer's decoder gave up on these pieces (PCRE2's "
			 "match limit)");
		goto fail;
	}
	if (st == TOK_ETOOLONG) {
		api_fail(&err, API_E_TOO_LARGE, "/ids",
			 "the tokenizer's decoder makes the text more than %zu times as long as "
			 "its pieces (its Replace strings); refused rather than decoded",
			 TOK_NORM_GROWTH);
		goto fail;
	}
	if (st != TOK_OK || text.failed) {
		api_fail(&err, API_E_RESPONSE_TOO_LARGE, "", "the text exceeds the response limit");
		goto fail;
	}
	buf_puts(&reply->body, "{\"text\":");
	jsonstr_put_n(&reply->body, text.data != NULL ? text.data : "", text.len);
	buf_putc(&reply->body, '}');
	reply->status = 200;
	goto out;
fail:
	api_reply_error(reply, &err);
out:
	buf_release(&text);
	free(ids);
	json_decref(root);
}

/* ---- the list ------------------------------------------------------------ */

void api_tokenizers(const struct api_service *svc, struct api_reply *reply)
{
	struct buf *b = &reply->body;

	buf_puts(b, "{\"tokenizers\":[");
	for (size_t i = 0; i < svc->n_tokenizers; i++) {
		if (i > 0)
			buf_putc(b, ',');
		registry_describe_tokenizer(svc, &svc->tokenizers[i], b);
	}
	buf_puts(b, "]}");
	reply->status = 200;
}
