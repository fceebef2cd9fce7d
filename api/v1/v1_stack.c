/*
 * v1_stack.c: POST /v1/attention on a checkpoint model (--model NAME=DIR):
 * the whole stack (engine/stack.h) on the request's tokens or text, with the
 * attention of every layer asked for. The answer:
 *   {"model", "family", "shape": {...}, "tokens", "token_ids"?, "offsets"?,
 *    "layers": [l, ...], "heads"?: [h, ...],
 *    "attentions"?: one entry per answered layer, in the order of "layers",
 *                   each shaped as /v1/attention's "weights" for one layer,
 *    "scores"?: with "scores": "masked", the same per answered layer: each
 *               head's pre-softmax scores (engine/stack.h), shaped as a
 *               per-head "attentions" entry whatever "weights" says,
 *    "projections"?: with "projections": true, per answered layer {"q", "k",
 *                    "v"}, each [Hc, L, D] shaped as a per-head entry: q of
 *                    each answered head, k and v of the key head it reads,
 *    "head_outputs"?: with "head_outputs": true, per answered layer [Hc, L,
 *                     D]: each answered head's output before o_proj,
 *    "output"?: Hugging Face's hidden_states[max(layers) + 1],
 *    "positions"?: with "positions": true, the checkpoint's own position
 *                  signal, shaped as a layer's (v1_write_positions): type
 *                  "learned" (gpt2, bert: wpe's rows) or "rope" (llama),
 *                  engine/stack.h attn_stack_positions, "usage"}
 * Decode here, plan and run in api/stack_run.c (memory and work checked
 * before anything large is allocated), encode here. Every checkpoint request
 * runs on a worker thread, never on the I/O thread's small path.
 */
#include "v1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/handlers.h"
#include "api/json/json_write.h"
#include "api/stack_job.h"
#include "api/stack_pick.h"
#include "common/jsonstr.h"
#include "engine/checkpoint.h"

/* What a checkpoint request reads beside its input. */
static const char *const applies[] = {"model",	  "tokens",    "text",	  "token_type_ids",
				      "layers",	  "heads",     "weights", "scores",
				      "output",	  "positions", "projections", "head_outputs",
				      "encoding", "precision", NULL};

/* ---- decoding ---------------------------------------------------------- */

/* Fields of a one-layer request (mask, positional, ...) have no place here:
 * the checkpoint brings its own masks, positions and scale. Their defaults
 * ask for nothing, and pass. */
static int refuse_layer_fields(json_t *root, const char *model, struct api_error *err)
{
	const char *key;
	json_t *v;

	json_object_foreach(root, key, v)
	{
		char ptr[API_PTR_MAX];

		if (req_listed(applies, key) || v1_is_default(key, v))
			continue;
		api_ptr_key(ptr, sizeof(ptr), "", key);
		return api_fail(err, API_E_INVALID_INPUT, ptr,
				"%s does not apply to checkpoint model '%s', which brings its own "
				"masks, positions and scale",
				key, model);
	}
	return 0;
}

/* The input: tokens (ids) or text, each item within the context length. */
static int decode_input(const struct api_service *svc, const struct req_members *top,
			struct stack_job *s, struct api_error *err)
{
	const json_t *tok = req_member(top, "tokens");
	const json_t *text = req_member(top, "text");
	const struct api_where where = {tok ? "/tokens" : "/text",
					tok ? API_WHERE_NESTED : API_WHERE_ITEM, 0};

	static const char *const inputs[] = { "tokens", "text", NULL };

	if (v1_one_input(top, inputs, " (a checkpoint model embeds its own tokens)", err) != 0)
		return -1;
	if (text != NULL && s->job->entry->tok == NULL)
		return api_fail(err, API_E_NO_TOKENIZER, "/text",
				"checkpoint model '%s' has no tokenizer (its folder has no "
				"tokenizer.json, and no tokenizer= was given); send token ids",
				s->job->model_name);
	if ((tok ? v1_decode_tokens(s->job, tok, svc->limits.max_request_bytes, err)
		 : v1_decode_text(s->job, text, svc->limits.max_request_bytes, err)) != 0)
		return -1;
	return stack_check_context(s, &where, err);
}

/* One item of "token_type_ids": as long as its tokens, each in
 * [0, type_vocab), into row [L] of the padded [B, L]. */
static int type_item(const json_t *v, const char *ptr, size_t len, size_t T, int64_t *row,
		     struct api_error *err)
{
	/* "0" or {} is a wrong type, not a list of the wrong length */
	if (!json_is_array(v))
		return api_fail(err, API_E_INVALID_TYPE, ptr,
				"token_type_ids is an array of token types, shaped as the tokens");
	if (json_array_size(v) != len)
		return api_fail(err, API_E_SHAPE_MISMATCH, ptr,
				"token_type_ids must have one type per token (%zu)", len);
	for (size_t i = 0; i < len; i++) {
		json_int_t t;
		int whole = req_integer(json_array_get(v, i), &t);
		char child[API_PTR_MAX];

		if (!whole || t < 0 || (size_t)t >= T) {
			/* 0.5 or true is a wrong type, not a type id out of range */
			api_ptr_index(child, sizeof(child), ptr, i);
			return api_fail(err, whole ? API_E_OUT_OF_RANGE : API_E_INVALID_TYPE,
					child, "a token type is an integer in [0, %zu)", T);
		}
		row[i] = t;
	}
	return 0;
}

/* "token_type_ids": BERT's segment of each token, shaped as the tokens. */
static int decode_types(const json_t *root, struct stack_job *s, struct api_error *err)
{
	static const struct api_where where = {"/token_type_ids", API_WHERE_NESTED, 0};
	const json_t *v = req_get(root, "token_type_ids");
	const struct attention_job *job = s->job;

	if (v == NULL)
		return 0;
	if (stack_takes_types(s, "token_type_ids", "/token_type_ids", err) != 0)
		return -1;
	if (!json_is_array(v))
		return api_fail(err, API_E_INVALID_TYPE, "/token_type_ids",
				"token_type_ids is an array of token types, shaped as the tokens");
	if (job->batched && json_array_size(v) != job->B)
		return api_fail(err, API_E_SHAPE_MISMATCH, "/token_type_ids",
				"token_type_ids must have one list per item (%zu)", job->B);
	s->type_ids = calloc(job->B * job->Lq, sizeof(int64_t));
	if (s->type_ids == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t b = 0; b < job->B; b++) {
		char ptr[API_PTR_MAX];

		/* item b's row of the padded [B, L] */
		if (type_item(job->batched ? json_array_get(v, b) : v,
			      api_where_item(ptr, &where, job->batched, b), job->q_len[b],
			      s->st->type_vocab, s->type_ids + b * job->Lq, err) != 0)
			return -1;
	}
	return 0;
}

/* "positions": true, a boolean (default false), for at most
 * API_POSITIONS_MAX_L positions (the input is decoded and within the
 * context: wpe has a row for each). */
static int decode_positions(const json_t *root, struct stack_job *s, struct api_error *err)
{
	if (req_bool(root, "positions", "", 0, &s->want_positions, err) != 0)
		return -1;
	return s->want_positions ? v1_positions_cap(s->job->Lq, err) : 0;
}

static int decode(const struct api_service *svc, const struct v1_body *in, struct stack_job *s,
		  struct api_error *err)
{
	struct attention_job *job = s->job;
	struct v1_outputs o;

	s->ckpt = job->entry->ckpt;
	s->st = &s->ckpt->ck->stack;
	if (refuse_layer_fields(in->root, job->model_name, err) != 0 ||
	    decode_input(svc, &in->top, s, err) != 0 || decode_types(in->root, s, err) != 0 ||
	    decode_positions(in->root, s, err) != 0 ||
	    stack_pick_layers(s, req_get(in->root, "layers"), "/layers", 0, err) != 0 ||
	    stack_pick_heads(s, req_get(in->root, "heads"), "/heads", 0, err) != 0 ||
	    req_bool(in->root, "output", "", 1, &s->want_output, err) != 0 ||
	    req_bool(in->root, "projections", "", 0, &s->want_projections, err) != 0 ||
	    req_bool(in->root, "head_outputs", "", 0, &s->want_head_outputs, err) != 0 ||
	    v1_decode_outputs(&in->top, ATTN_WEIGHTS_PER_HEAD, &o, err) != 0)
		return -1;
	if (o.scores != ATTN_SCORES_NONE && o.scores != ATTN_SCORES_MASKED)
		return api_fail(err, API_E_INVALID_VALUE, "/scores",
				"checkpoint model '%s' answers the masked scores (the softmax's "
				"input) or none: \"scores\" is \"masked\" or \"none\"",
				job->model_name);
	job->weights_mode = o.weights;
	job->scores_view = o.scores;
	job->encoding = o.encoding;
	job->precision = o.precision;
	job->Lk = job->Lq;
	s->answer_bytes_per_float = job->encoding == API_ENC_FLOAT ? 16 : 6;
	s->trims = 1;
	return 0;
}

/* ---- encoding ---------------------------------------------------------- */

static void write_indices(struct buf *b, const char *key, const size_t *v, size_t n)
{
	buf_puts(b, key);
	buf_putc(b, '[');
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			buf_putc(b, ',');
		buf_put_u64(b, (unsigned long long)v[i]);
	}
	buf_putc(b, ']');
}

static void write_shape(struct buf *b, const struct stack_job *s)
{
	const struct attn_stack *st = s->st;
	const struct api_json_size fields[] = {
	    {"{\"batch\":", s->job->B},	      {",\"query_length\":", s->job->Lq},
	    {",\"key_length\":", s->job->Lq}, {",\"d_model\":", st->E},
	    {",\"num_heads\":", st->H},	      {",\"num_kv_heads\":", st->Hkv},
	    {",\"head_dim\":", st->D},	      {",\"num_layers\":", st->n_layers},
	};

	buf_puts(b, ",\"shape\":");
	api_json_sizes(b, fields, sizeof fields / sizeof fields[0]);
	buf_putc(b, '}');
}

/* Each answered layer's slab of x [C, B, heads, L, L] (heads 0: [C, B, L, L],
 * the mean), as "weights" is for one, under key. */
static int write_layers(struct api_writer *w, const struct stack_job *s, const char *key,
			const float *x, size_t n, size_t heads)
{
	const struct attention_job *job = s->job;
	size_t slab = n / s->n_layers;

	buf_puts(w->out, key);
	buf_putc(w->out, '[');
	for (size_t c = 0; c < s->n_layers; c++) {
		if (c > 0)
			buf_putc(w->out, ',');
		/* seek to captured layer c's [B, Hc, L, L] */
		if (v1_write_batched(w, job, x + c * slab, heads, job->Lq, job->q_len,
				     s->scratch) != 0)
			return -1;
	}
	return buf_putc(w->out, ']');
}

/* Each answered layer's projections, from [C, 3, B, Hc, L, D]: a list of
 * {"q", "k", "v"}, each [Hc, L, D] shaped as the request was (k and v of the
 * key head each answered head reads). */
static int write_projections(struct api_writer *w, const struct stack_job *s)
{
	const struct attention_job *job = s->job;
	size_t part = s->pr_n / s->n_layers / 3, Hc = stack_heads(s);
	struct v1_items rows = {job->Lq, job->q_len}, dims = {s->st->D, NULL};
	static const char *const keys[3] = {"{\"q\":", ",\"k\":", ",\"v\":"};

	buf_puts(w->out, ",\"projections\":[");
	for (size_t c = 0; c < s->n_layers; c++) {
		buf_puts(w->out, c > 0 ? "," : "");
		for (size_t t = 0; t < 3; t++) {
			buf_puts(w->out, keys[t]);
			/* seek to captured layer c's q, k or v [B, Hc, L, D] */
			if (v1_write_items(w, job, s->projections + (3 * c + t) * part, Hc, rows,
					   dims, s->scratch) != 0)
				return -1;
		}
		buf_putc(w->out, '}');
	}
	return buf_putc(w->out, ']');
}

/* Each answered layer's head outputs, from [C, B, Hc, L, D]: a list of
 * [Hc, L, D] shaped as the request was (rows trimmed to an item's tokens). */
static int write_head_outputs(struct api_writer *w, const struct stack_job *s)
{
	const struct attention_job *job = s->job;
	size_t part = s->ho_n / s->n_layers, Hc = stack_heads(s);
	struct v1_items rows = {job->Lq, job->q_len}, dims = {s->st->D, NULL};

	buf_puts(w->out, ",\"head_outputs\":[");
	for (size_t c = 0; c < s->n_layers; c++) {
		buf_puts(w->out, c > 0 ? "," : "");
		/* seek to captured layer c's [B, Hc, L, D] */
		if (v1_write_items(w, job, s->head_outputs + c * part, Hc, rows, dims,
				   s->scratch) != 0)
			return -1;
	}
	return buf_putc(w->out, ']');
}

static int encode(const struct stack_job *s, double compute_ms, struct buf *b)
{
	const struct attention_job *job = s->job;
	struct api_writer w = {b, job->encoding, job->precision};

	buf_puts(b, "{\"model\":");
	jsonstr_put(b, job->model_name);
	buf_puts(b, ",\"family\":");
	jsonstr_put(b, s->ckpt->model_type);
	write_shape(b, s);
	v1_write_tokens(b, job);
	write_indices(b, ",\"layers\":", s->layers, s->n_layers);
	if (s->heads != NULL)
		write_indices(b, ",\"heads\":", s->heads, s->n_heads);
	if (job->weights_mode != ATTN_WEIGHTS_NONE &&
	    write_layers(&w, s, ",\"attentions\":", s->attentions, s->att_n,
			 job->weights_mode == ATTN_WEIGHTS_MEAN ? 0 : stack_heads(s)) != 0)
		return -1;
	if (job->scores_view != ATTN_SCORES_NONE &&
	    write_layers(&w, s, ",\"scores\":", s->scores, s->sc_n, stack_heads(s)) != 0)
		return -1;
	if (s->want_projections && write_projections(&w, s) != 0)
		return -1;
	if (s->want_head_outputs && write_head_outputs(&w, s) != 0)
		return -1;
	if (s->want_output) {
		buf_puts(b, ",\"output\":");
		if (v1_write_batched(&w, job, s->out, 0, s->st->E, NULL, s->scratch) != 0)
			return -1;
	}
	if (s->positions != NULL && v1_write_positions(&w, stack_positions_type(s->st), s->positions,
						       job->Lq, s->pos_dim) != 0)
		return -1;
	api_json_usage(b, s->flops, compute_ms);
	buf_putc(b, '}');
	return b->failed ? -1 : 0;
}

/* ---- the handler ------------------------------------------------------- */

void v1_stack_attention(const struct api_service *svc, struct v1_body *in,
			struct attention_job *job, struct api_reply *reply)
{
	struct stack_job s;
	struct api_error err;
	struct timespec t0;

	memset(&s, 0, sizeof(s));
	s.job = job;
	if (reply->small_only) {
		reply->declined = 1;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (decode(svc, in, &s, &err) != 0 || stack_plan(svc, reply, &s, &err) != 0)
		goto fail;
	reply->parse_ms = api_ms_since(&t0);
	if (stack_run(svc, &s, reply, &err) != 0)
		goto fail;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (encode(&s, reply->compute_ms, &reply->body) != 0) {
		api_fail(&err, API_E_RESPONSE_TOO_LARGE, "",
			 "the answer exceeds the response limit; ask for fewer layers or heads, "
			 "\"weights\": \"mean\", or base64");
		goto fail;
	}
	reply->status = 200;
	reply->encode_ms = api_ms_since(&t0);
	goto out;
fail:
	api_reply_error(reply, &err);
out:
	stack_job_release(&s);
}
