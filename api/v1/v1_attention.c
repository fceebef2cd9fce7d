/*
 * v1_attention.c: POST /v1/attention. Decode (v1_decode.c), run
 * (api/attention_run.c: the memory and work the request needs checked before
 * anything is allocated), and encode the answer:
 *   {"model", "shape": {...}, "tokens"?, "output", "weights"?, "scores"?, "usage"}
 * Unbatched inputs get unbatched answers; ragged batches come back as one
 * tensor per item, trimmed to the item's own query and key lengths.
 */
#include "api/handlers.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "v1.h"
#include "api/json/json_write.h"
#include "engine/sizes.h"
#include "common/jsonstr.h"

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

/* A tokenizer's ids and offsets, in the tokens' shape: [Lq] or [B][q_len]. */
static void write_token_ids(struct buf *b, const struct attention_job *job)
{
	buf_puts(b, ",\"token_ids\":");
	if (job->batched)
		buf_putc(b, '[');
	for (size_t bi = 0; bi < job->B; bi++) {
		buf_puts(b, bi ? ",[" : "[");
		for (size_t i = 0; i < job->q_len[bi]; i++) {
			if (i > 0)
				buf_putc(b, ',');
			buf_put_u64(b, (unsigned long long)job->token_ids[bi * job->Lq + i]);
		}
		buf_putc(b, ']');
	}
	buf_puts(b, job->batched ? "],\"offsets\":[" : ",\"offsets\":");
	for (size_t bi = 0; bi < job->B; bi++) {
		buf_puts(b, bi ? ",[" : "[");
		for (size_t i = 0; i < job->q_len[bi]; i++) {
			const size_t *o = &job->offsets[2 * (bi * job->Lq + i)];

			buf_puts(b, i > 0 ? ",[" : "[");
			buf_put_u64(b, (unsigned long long)o[0]);
			buf_putc(b, ',');
			buf_put_u64(b, (unsigned long long)o[1]);
			buf_putc(b, ']');
		}
		buf_putc(b, ']');
	}
	if (job->batched)
		buf_putc(b, ']');
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
	if (job->offsets != NULL)
		write_token_ids(b, job);
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

/*
 * decode -> plan -> build -> run -> encode. A call that may answer only a
 * small request (reply->small_only, on the I/O thread) is declined by its
 * plan, before anything large is built: the server then queues it.
 */
void api_attention(const struct api_service *svc, const char *body, size_t len,
		   struct api_reply *reply)
{
	struct attention_job job;
	struct attention_plan plan;
	struct attention_out o;
	struct v1_body in;
	struct api_error err;
	struct timespec t0;

	memset(&o, 0, sizeof(o));
	memset(&job, 0, sizeof(job));
	memset(&in, 0, sizeof(in));
	if (reply->small_only && len > API_SMALL_BODY) {
		reply->declined = 1;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (v1_decode(svc, body, len, &in, &job, &err) != 0 ||
	    attention_plan(svc, &job, reply, &plan, &err) != 0)
		goto fail;
	if (reply->small_only && !plan.small) {
		reply->declined = 1;
		goto out;
	}
	if (attention_build(&job, &err) != 0)
		goto fail;
	reply->parse_ms = api_ms_since(&t0);
	if (attention_run(svc, &job, &plan, &o, reply, &err) != 0)
		goto fail;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (encode(&job, &o, reply->flops, reply->compute_ms, &reply->body) != 0) {
		api_fail(&err, API_E_RESPONSE_TOO_LARGE, "",
			 "the answer exceeds the response limit; ask for fewer outputs or base64");
		goto fail;
	}
	reply->status = 200;
	reply->encode_ms = api_ms_since(&t0);
	goto out;
fail:
	api_reply_error(reply, &err);
out:
	attention_out_release(&o);
	attention_job_release(&job);
	v1_body_release(&in);
}
