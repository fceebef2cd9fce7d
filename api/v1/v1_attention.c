/*
 * attention.c: POST /v1/attention. Decode (attention_decode.c), check the
 * memory the request needs against the limit before allocating it, run the
 * layer, and encode the answer:
 *   {"model", "shape": {...}, "tokens"?, "output", "weights"?, "scores"?, "usage"}
 * Unbatched inputs get unbatched answers; ragged batches come back as one
 * tensor per item, trimmed to the item's own query and key lengths.
 */
#include "api/handlers.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/attention_job.h"
#include "api/json/json_write.h"
#include "engine/sizes.h"
#include "common/jsonstr.h"

void attention_out_release(struct attention_out *o)
{
	free(o->out);
	free(o->weights);
	free(o->scores);
	free(o->scratch);
	free(o->ws);
}

static void request_of(const struct attention_job *job, struct attention_out *o,
		       const struct api_service *svc, const struct api_reply *reply,
		       struct attn_mha *r)
{
	memset(r, 0, sizeof(*r));
	r->model = job->model;
	r->B = job->B;
	r->Lq = job->Lq;
	r->Lk = job->Lk;
	r->query = job->query;
	r->key = job->key.data;
	r->value = job->value.data;
	r->mask = job->mask;
	r->pos = job->pos;
	r->scale = job->scale;
	r->softcap = job->softcap;
	r->out = o->out;
	r->weights_mode = job->weights_mode;
	r->weights = o->weights;
	r->scores_view = job->scores_view;
	r->scores = o->scores;
	r->threads = reply->threads ? reply->threads : svc->limits.engine_threads;
	r->workers = reply->workers;
}

/*
 * The bytes a request will need: inputs, outputs, workspace and the text of
 * the answer (about 16 bytes a float as text, 5.4 in base64), checked.
 */
static int check_memory(const struct api_service *svc, const struct attention_job *job,
			size_t ws_bytes, size_t *out_n, size_t *w_n, size_t *s_n,
			struct api_error *err)
{
	const struct attn_model *m = job->model;
	size_t H = m->H, cells = 0, per_head = 0, floats = 0, bytes = 0;
	size_t per_float = sizeof(float) + (job->encoding == API_ENC_FLOAT ? 16 : 6);
	int bad = size_mul3(out_n, job->B, job->Lq, m->E) || size_mul3(&cells, job->B, job->Lq, job->Lk) ||
		  size_mul(&per_head, cells, H);

	*w_n = job->weights_mode == ATTN_WEIGHTS_NONE ? 0
	       : job->weights_mode == ATTN_WEIGHTS_MEAN ? cells : per_head;
	*s_n = job->scores_view != ATTN_SCORES_NONE ? per_head : 0;
	bad = bad || size_add(&floats, *out_n, *w_n) || size_add(&floats, floats, *s_n) ||
	      size_mul(&bytes, floats, per_float) || size_add(&bytes, bytes, ws_bytes);
	if (bad || bytes > svc->limits.max_request_bytes)
		return api_fail(err, API_E_REQUEST_TOO_LARGE, "",
				"this request needs %s%zu MB; the limit is %zu MB",
				bad ? "more than " : "about ", bad ? (size_t)SIZE_MAX >> 20 : bytes >> 20,
				svc->limits.max_request_bytes >> 20);
	return 0;
}

/* The attention scores a request computes: B H Lq Lk. */
static double scores(const struct attention_job *job)
{
	return (double)job->B * (double)job->model->H * (double)job->Lq * (double)job->Lk;
}

/* Small enough to answer on the I/O thread (service.h)? floats: the answer's. */
static int is_small(const struct attention_job *job, const struct attn_mha *r, size_t floats)
{
	return attn_mha_flops(r) <= API_SMALL_FLOPS && scores(job) <= API_SMALL_CELLS &&
	       floats <= API_SMALL_FLOATS;
}

/* The largest one-item tensor write_batched trims: [H, Lq, Lk] or [Lq, E]. */
static size_t item_cells(const struct attention_job *job)
{
	size_t w = job->model->H * job->Lq * job->Lk, o = job->Lq * job->model->E;

	return w > o ? w : o; /* within the limit check_memory has passed */
}

static int alloc_outputs(struct attention_out *o, size_t out_n, size_t w_n, size_t s_n,
			 size_t item_cells, struct api_error *err)
{
	o->out = malloc(out_n * sizeof(float));
	o->weights = w_n ? malloc(w_n * sizeof(float)) : NULL;
	o->scores = s_n ? malloc(s_n * sizeof(float)) : NULL;
	o->scratch = item_cells ? malloc(item_cells * sizeof(float)) : NULL;
	o->ws = malloc(o->ws_bytes ? o->ws_bytes : 1);
	if (!o->out || (w_n && !o->weights) || (s_n && !o->scores) || (item_cells && !o->scratch) ||
	    !o->ws)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	return 0;
}

/* ---- encoding ---------------------------------------------------------- */

static void write_shape(struct buf *b, const struct attention_job *job)
{
	const struct attn_model *m = job->model;
	const struct api_json_size fields[] = {
		{ "{\"batch\":", job->B },	 { ",\"query_length\":", job->Lq },
		{ ",\"key_length\":", job->Lk }, { ",\"d_model\":", m->E },
		{ ",\"num_heads\":", m->H },	 { ",\"num_kv_heads\":", m->Hkv },
		{ ",\"head_dim\":", m->D },
	};

	buf_puts(b, "\"shape\":");
	api_json_sizes(b, fields, sizeof fields / sizeof fields[0]);
	buf_putc(b, '}');
}

static void write_tokens(struct buf *b, const struct attention_job *job)
{
	if (job->tokens == NULL)
		return;
	buf_puts(b, ",\"tokens\":");
	if (job->batched)
		buf_putc(b, '[');
	for (size_t bi = 0; bi < job->B; bi++) {
		buf_puts(b, bi ? ",[" : "[");
		for (size_t i = 0; i < job->q_len[bi]; i++) {
			const char *label = job->tokens[bi * job->Lq + i];

			if (i > 0)
				buf_putc(b, ',');
			if (label)
				jsonstr_put(b, label);
			else
				buf_put_u64(b, (unsigned long long)job->token_ids[bi * job->Lq + i]);
		}
		buf_putc(b, ']');
	}
	if (job->batched)
		buf_putc(b, ']');
}

/*
 * Writes a [B, heads, Lq, cols] tensor (heads == 0: [B, Lq, cols]) as the
 * request's shape asks: one tensor, unbatched, or one trimmed tensor per item
 * (rows q_len[b], columns k_len[b] or all cols when k_len is NULL).
 */
static int write_batched(struct api_writer *w, const struct attention_job *job, const float *x,
			 size_t heads, size_t cols, const size_t *k_len, float *scratch)
{
	size_t hh = heads ? heads : 1, item = hh * job->Lq * cols;
	size_t shape[4] = { job->B, hh, job->Lq, cols }, *sh = heads ? shape : shape + 1;

	if (!job->ragged) {
		if (!heads)
			shape[1] = job->B;
		if (job->batched)
			return api_tensor_write(w, x, heads ? 4 : 3, heads ? shape : sh);
		return api_tensor_write(w, x, heads ? 3 : 2, heads ? shape + 1 : shape + 2);
	}
	buf_putc(w->out, '[');
	for (size_t b = 0; b < job->B; b++) {
		size_t rows = job->q_len[b], kc = k_len ? k_len[b] : cols, n = 0;
		size_t ishape[3] = { hh, rows, kc };

		/* item b's [hh, rows, kc] corner of its [hh, Lq, cols] block */
		for (size_t h = 0; h < hh; h++)
			for (size_t i = 0; i < rows; i++, n += kc)
				memcpy(scratch + n, x + b * item + (h * job->Lq + i) * cols,
				       kc * sizeof(float));
		if (b > 0)
			buf_putc(w->out, ',');
		if (api_tensor_write(w, scratch, heads ? 3 : 2, heads ? ishape : ishape + 1) != 0)
			return -1;
	}
	return buf_putc(w->out, ']');
}

static int encode(const struct attention_job *job, const struct attention_out *o,
		  double flops, double compute_ms, struct buf *b)
{
	struct api_writer w = { b, job->encoding, job->precision };
	size_t H = job->model->H;

	buf_puts(b, "{\"model\":");
	jsonstr_put(b, job->model_name);
	buf_putc(b, ',');
	write_shape(b, job);
	write_tokens(b, job);
	buf_puts(b, ",\"output\":");
	if (write_batched(&w, job, o->out, 0, job->model->E, NULL, o->scratch) != 0)
		return -1;
	if (job->weights_mode != ATTN_WEIGHTS_NONE) {
		buf_puts(b, ",\"weights\":");
		if (write_batched(&w, job, o->weights,
				  job->weights_mode == ATTN_WEIGHTS_PER_HEAD ? H : 0, job->Lk,
				  job->k_len, o->scratch) != 0)
			return -1;
	}
	if (job->scores_view != ATTN_SCORES_NONE) {
		buf_puts(b, ",\"scores\":");
		if (write_batched(&w, job, o->scores, H, job->Lk, job->k_len, o->scratch) != 0)
			return -1;
	}
	api_json_usage(b, flops, compute_ms);
	buf_putc(b, '}');
	return b->failed ? -1 : 0;
}

/* ---- the handler ------------------------------------------------------- */

/* A failed decode or run: the error, or the decline of a request not small. */
static void answer_failure(struct api_reply *reply, const struct attention_job *job,
			   const struct api_error *err)
{
	if (job->declined)
		reply->declined = 1;
	else
		api_reply_error(reply, err);
}

int attention_run(const struct api_service *svc, struct attention_job *job,
		  struct attention_out *o, struct api_reply *reply, struct api_error *err)
{
	struct attn_error aerr;
	struct attn_mha r;
	struct timespec t0;
	size_t out_n = 0, w_n = 0, s_n = 0;

	request_of(job, o, svc, reply, &r); /* o->out is still NULL: sizing only */
	if (attn_mha_workspace(&r, &o->ws_bytes, &aerr) != ATTN_OK)
		return api_engine_error(&aerr, err);
	if (check_memory(svc, job, o->ws_bytes, &out_n, &w_n, &s_n, err) != 0 ||
	    api_check_work(&svc->limits, attn_mha_flops(&r), scores(job), err) != 0)
		return -1;
	if (job->small_only && !is_small(job, &r, out_n + w_n + s_n))
		return attention_decline(job);
	if (alloc_outputs(o, out_n, w_n, s_n, job->ragged ? item_cells(job) : 0, err) != 0)
		return -1;
	request_of(job, o, svc, reply, &r);
	if (attn_mha_workspace(&r, &o->ws_bytes, &aerr) != ATTN_OK)
		return api_engine_error(&aerr, err);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (attn_mha_forward(&r, o->ws, o->ws_bytes, &aerr) != ATTN_OK)
		return api_engine_error(&aerr, err);
	reply->compute_ms = api_ms_since(&t0);
	reply->flops = attn_mha_flops(&r);
	return 0;
}

void api_attention(const struct api_service *svc, const char *body, size_t len,
		   struct api_reply *reply)
{
	struct attention_job job;
	struct attention_out o;
	struct api_error err;
	struct timespec t0;

	memset(&o, 0, sizeof(o));
	memset(&job, 0, sizeof(job));
	if (reply->small_only && len > API_SMALL_BODY) {
		reply->declined = 1;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (attention_decode(svc, body, len, reply->small_only, &job, &err) != 0) {
		answer_failure(reply, &job, &err);
		goto out;
	}
	reply->parse_ms = api_ms_since(&t0);
	if (attention_run(svc, &job, &o, reply, &err) != 0) {
		answer_failure(reply, &job, &err);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (encode(&job, &o, reply->flops, reply->compute_ms, &reply->body) != 0) {
		api_fail(&err, API_E_RESPONSE_TOO_LARGE, "",
			 "the answer exceeds the response limit; ask for fewer outputs or base64");
		api_reply_error(reply, &err);
		goto out;
	}
	reply->status = 200;
	reply->encode_ms = api_ms_since(&t0);
out:
	attention_out_release(&o);
	attention_job_release(&job);
}
