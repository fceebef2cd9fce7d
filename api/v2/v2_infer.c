/*
 * v2_infer.c: POST /v2/models/{name}[/versions/{version}]/infer (see v2.h).
 *
 * The request {"id"?, "model_name"?, "parameters"?, "inputs", "outputs"?}
 * (model_name, which KServe's Python client sends, is not read: the path
 * names the model):
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
 *               with parameters.binary_data; absent: every one `weights`
 *               allows. Only when named: q [B, H, Lq, D], k and v
 *               [B, Hkv, Lk, D], each head's projections as /v1's
 *               "projections" gives them (engine/mha.h show_projections),
 *               and head_outputs [B, H, Lq, D], each head's output before
 *               W_O as /v1's "head_outputs" gives them
 * A checkpoint model (api/stack_job.h) takes tokens or text (BERT and
 * RoBERTa also token_type_ids INT32 / INT64, the shape of tokens), and of the
 * parameters weights and binary_data_output; its outputs are output (the
 * hidden state after the last layer, [B, L, E]), attentions (every
 * layer's, [layers, B, H, L, L], or [layers, B, L, L] for weights mean) and,
 * only when named in "outputs", scores (every layer's pre-softmax scores,
 * engine/stack.h, [layers, B, H, L, L] whatever weights says; rows past an
 * item's length all -inf, the row of a query that sees no key), q, k and v
 * (every layer's projections per head, [layers, B, H, L, D], k and v of the
 * key head each query head reads, as /v1's "projections") and head_outputs
 * ([layers, B, H, L, D], /v1's "head_outputs").
 * The inputs go onto a struct attention_job through the steps /v1/attention
 * shares (attention_query_from_tokens / _text, attention_apply_mask: ids,
 * vocabularies and hashing agree), are planned, built and run
 * (api/attention_run.c), and are answered as
 *   {"model_name", "model_version", "id"?, "outputs": [{"name", "datatype",
 *    "shape", "data" | "parameters": {"binary_data_size"}}]}
 * followed by each binary output's little-endian float32 bytes, in order.
 * Rows of a padded item past its own length are zero (scores: -inf).
 */
#include "v2_job.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/handlers.h"
#include "api/json/json_read.h"
#include "api/json/json_utf8.h"
#include "engine/sizes.h"

static const unsigned role_dtypes[IN_COUNT] = {
    1u << V2_FP32, 1u << V2_INT32 | 1u << V2_INT64, 1u << V2_BYTES, 1u << V2_FP32,
    1u << V2_FP32, 1u << V2_INT32 | 1u << V2_INT64,
};

/* model_name: KServe's Python client (InferRequest.to_rest) writes it into
 * every body; the path names the model, so it is read for its type only. */
static const char *const top_fields[] = {"id",	   "model_name", "parameters",
					 "inputs", "outputs",	 NULL};
static const char *const param_fields[] = {
    "causal", "window", "alignment", "positional", "scale", "softcap", "weights",
    "binary_data_output", "priority", "timeout", "layers", "heads", NULL};

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

/* Inference-Header-Content-Length: the JSON header's bytes, or the whole body.
 * The spaces and tabs after the digits are no part of the value (RFC 9110
 * section 5.5; libmicrohttpd 0.9.75 strips only those before it). */
static int header_length(const char *h, size_t len, size_t *json_len, struct api_error *err)
{
	size_t n = 0, digits;

	*json_len = len;
	if (h == NULL)
		return 0;
	digits = strlen(h);
	while (digits > 0 && (h[digits - 1] == ' ' || h[digits - 1] == '\t'))
		digits--;
	for (size_t i = 0; i < digits || i == 0; i++) /* an empty value is no count */
		if (h[i] < '0' || h[i] > '9' || size_mul(&n, n, 10) != 0 ||
		    size_add(&n, n, (size_t)(h[i] - '0')) != 0)
			return api_fail(err, API_E_BAD_HEADER, "",
					"Inference-Header-Content-Length must be a byte count");
	if (n > len)
		return api_fail(err, API_E_BAD_HEADER, "",
				"Inference-Header-Content-Length %zu is not within the body's %zu "
				"bytes",
				n, len);
	if (n == 0 && len > 0) /* else the JSON parser says "the body is empty" */
		return api_fail(err, API_E_BAD_HEADER, "",
				"Inference-Header-Content-Length is 0: the body must start with "
				"the JSON inference request, that many bytes long");
	*json_len = n;
	return 0;
}

/* The top-level string `key` into *out (borrowed from the body; NULL when
 * absent), refused at its pointer when it is no string. */
static int read_string(const struct v2_job *v, const char *key, const char **out,
		       struct api_error *err)
{
	json_t *s = json_object_get(v->root, key);
	char ptr[API_PTR_MAX];

	*out = json_string_value(s); /* NULL when absent or no string */
	if (s != NULL && !json_is_string(s))
		return api_fail(err, API_E_INVALID_TYPE, req_child(ptr, "", key), "%s is a string",
				key);
	return 0;
}

/* One uint64 parameter of Triton's at /parameters/<key>, when present: a
 * whole number in [0, 2^64). Past 2^63 the readers hold a number as a double,
 * as JavaScript reads it, so 2^64 - 1 comes as 2^64 and is taken as it; a
 * size_t bound (req_size) would refuse all of [2^63, 2^64). Returns 0, or -1
 * with err set. */
static int read_uint64(const json_t *params, const char *key, struct api_error *err)
{
	const json_t *v = req_get(params, key);
	char ptr[API_PTR_MAX];
	json_int_t x;
	int whole = req_integer(v, &x);

	if (v == NULL || (whole && x >= 0 && (!json_is_real(v) || json_real_value(v) <= 0x1p64)))
		return 0;
	return api_fail(err, whole ? API_E_OUT_OF_RANGE : API_E_INVALID_TYPE,
			req_child(ptr, "/parameters", key),
			"must be an integer in [0, 18446744073709551615]");
}

/*
 * Triton's request parameters that tritonclient sends when its caller sets
 * them (infer(..., priority=, timeout=)): priority (a uint64; 0, the default,
 * is the model's own) and timeout (microseconds, a uint64). They are read
 * and checked, and change nothing, as on a Triton model without dynamic
 * batching, which takes both and honours neither: attnd has one queue, and
 * --compute-deadline bounds every request's compute.
 */
static int read_triton_params(const json_t *params, struct api_error *err)
{
	if (read_uint64(params, "priority", err) != 0 || read_uint64(params, "timeout", err) != 0)
		return -1;
	return 0;
}

static int read_top(struct v2_job *v, struct api_error *err)
{
	static const char *const weights[] = {"per_head", "mean", "none", NULL};
	const char *ptr = "/parameters";
	const char *model_name; /* KServe's client's: the path names the model */

	if (req_known_fields(v->root, "", top_fields, err) != 0 ||
	    read_string(v, "id", &v->id, err) != 0 ||
	    read_string(v, "model_name", &model_name, err) != 0)
		return -1;
	v->params = json_object_get(v->root, "parameters");
	if (v->params == NULL)
		return 0;
	if (!json_is_object(v->params))
		return api_fail(err, API_E_INVALID_TYPE, ptr, "parameters is an object");
	if (req_known_fields(v->params, ptr, param_fields, err) != 0 ||
	    req_enum(v->params, "weights", ptr, weights, W_PER_HEAD, &v->weights, err) != 0 ||
	    req_bool(v->params, "binary_data_output", ptr, 0, &v->binary_default, err) != 0)
		return -1;
	return read_triton_params(v->params, err);
}

/*
 * Input i's role by its name, and its datatype, checked before its elements
 * are read, so that a name that is no input, an input given twice or a
 * datatype the input cannot have is refused as such, and not as an element
 * that does not parse as the datatype given (text's strings as FP32 were
 * "expected a number"). A name or datatype that is absent, no string or no
 * datatype of the protocol's is left to v2_input_read to refuse. Returns 0
 * with *role set (IN_COUNT when left), or -1 with err set.
 */
static int input_role(const struct v2_job *v, const json_t *in, size_t i, int *role,
		      struct api_error *err)
{
	const char *name = json_string_value(json_object_get(in, "name"));
	const char *dtype = json_string_value(json_object_get(in, "datatype"));
	enum v2_dtype d = v2_dtype_of(dtype);
	char ptr[API_PTR_MAX], child[API_PTR_MAX];
	int r = 0;

	*role = IN_COUNT;
	if (name == NULL || name[0] == '\0')
		return 0;
	api_ptr_index(ptr, sizeof(ptr), "/inputs", i);
	while (r < IN_COUNT && strcmp(v2_role_names[r], name) != 0)
		r++;
	if (r == IN_COUNT)
		return api_fail(err, API_E_UNKNOWN_INPUT, ptr,
				"unknown input '%s'; the inputs are embeddings, tokens, text, key, "
				"value and token_type_ids",
				name);
	if (v->has[r])
		return api_fail(err, API_E_DUPLICATE_INPUT, ptr, "input '%s' is given twice", name);
	if (d != V2_DTYPE_COUNT && !(role_dtypes[r] & 1u << d))
		return api_fail(err, API_E_INVALID_DATATYPE, req_child(child, ptr, "datatype"),
				"input '%s' cannot be %s; it is %s", name, dtype,
				r == IN_TOKENS || r == IN_TYPES ? "INT32 or INT64"
				: r == IN_TEXT			? "BYTES"
								: "FP32");
	*role = r;
	return 0;
}

/* Reads one input and files it under its name. */
static int read_one_input(struct v2_job *v, json_t *in, size_t i, struct v2_binary *bin,
			  size_t max_bytes, struct api_error *err)
{
	struct v2_input t;
	int r;

	if (input_role(v, in, i, &r, err) != 0 ||
	    v2_input_read(in, i, bin, max_bytes, &t, err) != 0)
		return -1;
	/* read, so its name was a string and its datatype one of the
	 * protocol's: input_role has checked both and found its role */
	if (r == IN_COUNT) {
		v2_input_release(&t);
		return api_fail(err, API_E_UNKNOWN_INPUT, "/inputs", "input %zu has no role", i);
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
	struct v2_binary bin = {(const unsigned char *)binary, binary_len};

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

/* Whether the model's kind has an output at all: a checkpoint answers
 * output, attentions, scores, q, k, v and head_outputs, one layer the same
 * with weights and weights_mean for attentions. */
static int known(const struct v2_job *v, enum out_kind k)
{
	if (v->ckpt != NULL)
		return k != OUT_WEIGHTS && k != OUT_MEAN;
	return k != OUT_ATTENTIONS && k != OUT_SCORES;
}

/* Whether k comes only when named in "outputs", never by default. */
static int named_only(enum out_kind k)
{
	return k == OUT_SCORES || k == OUT_Q || k == OUT_K || k == OUT_V || k == OUT_HEADS;
}

/* An output name the model does not answer (at ptr/name): the outputs of
 * both kinds of model listed. Returns -1. */
static int unknown_output(const char *ptr, struct api_error *err)
{
	char child[API_PTR_MAX];

	req_child(child, ptr, "name");
	return api_fail(err, API_E_UNKNOWN_OUTPUT, child,
			"the outputs are output, weights, weights_mean, q, k, v and head_outputs "
			"(one layer), output, attentions, scores, q, k, v and head_outputs (a "
			"checkpoint)");
}

/* Whether the `weights` parameter lets a known output be computed. */
static int allowed(const struct v2_job *v, enum out_kind k)
{
	if (k == OUT_ATTENTIONS || k == OUT_MEAN)
		return v->weights != W_NONE;
	return k != OUT_WEIGHTS || v->weights == W_PER_HEAD;
}

static int read_one_output(struct v2_job *v, json_t *o, size_t i, struct api_error *err)
{
	static const char *const fields[] = {"name", "parameters", NULL};
	static const char *const params[] = {"binary_data", NULL};
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
	       strcmp(v2_out_names[k], json_string_value(name)) != 0)
		k++;
	if (!json_is_string(name) || k == OUT_COUNT || !known(v, (enum out_kind)k))
		return unknown_output(ptr, err);
	for (size_t j = 0; j < v->n_out; j++)
		if (v->order[j] == (enum out_kind)k)
			return api_fail(err, API_E_DUPLICATE_OUTPUT, ptr,
					"output '%s' is asked twice", v2_out_names[k]);
	if (!allowed(v, (enum out_kind)k))
		return api_fail(err, API_E_INVALID_OUTPUT, ptr,
				"output '%s' is not computed with parameters.weights '%s'%s",
				v2_out_names[k],
				v->weights == W_MEAN   ? "mean"
				: v->weights == W_NONE ? "none"
						       : "per_head",
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
 * but scores, q, k and v, which come only when named. */
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
		if (!named_only((enum out_kind)k) && known(v, (enum out_kind)k) &&
		    allowed(v, (enum out_kind)k)) {
			v->order[v->n_out++] = (enum out_kind)k;
			v->binary[k] = v->binary_default;
		}
	return 0;
}

/* ---- the handler ---------------------------------------------------------------- */

static int decode(const struct api_service *svc, const struct api_v2_call *call, const char *body,
		  size_t len, struct v2_job *v, struct api_error *err)
{
	const struct api_model_entry *e = v2_model(svc, call, err);
	size_t json_len;

	if (e == NULL || header_length(call->header_len, len, &json_len, err) != 0)
		return -1;
	if (req_parse(body, json_len, &v->root, err) != 0) {
		req_refine_inputs_text_utf8(body, json_len, err); /* as /v1's /text */
		return -1;
	}
	if (read_top(v, err) != 0 ||
	    read_inputs(v, body + json_len, len - json_len, svc->limits.max_request_bytes, err) !=
		0)
		return -1;
	v->ckpt = e->ckpt;
	if (read_outputs(v, err) != 0)
		return -1;
	return v->ckpt ? v2_build_stack_job(svc, e, v, err) : v2_build_job(svc, e, v, err);
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
	if (v2_run(svc, &v, reply, &err) != 0) {
		v2_reply_error(reply, &err);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (v2_encode(&v, reply) != 0) {
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
