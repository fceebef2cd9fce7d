/*
 * v1_attention.c: POST /v1/attention. Decode (v1_decode.c), run
 * (api/attention_run.c: the memory and work the request needs checked before
 * anything is allocated), and encode the answer:
 *   {"model", "shape": {...}, "tokens"?, "output", "weights"?, "scores"?,
 *    "positions"?, "projections"?, "head_outputs"?, "usage"}
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

/* Bytes of an answer besides its numbers: the model, the shape, the usage. */
enum { ANSWER_FRAME_BYTES = 512, ANSWER_TOKEN_BYTES = 16 };

/*
 * Room for the whole answer at once, from the plan's counts and the text a
 * float takes as check_memory (attention_run.c) estimates it, so the body is
 * allocated once instead of doubling from 64 bytes; never past the reply's
 * maximum (an answer larger than that still fails where it passes it).
 */
static void reserve_answer(struct buf *b, const struct attention_job *job,
			   const struct attention_plan *plan)
{
	size_t per_float = job->encoding == API_ENC_FLOAT ? 16 : 6;
	size_t floats = plan->out_n + plan->w_n + plan->s_n + plan->pos_n + plan->q_n +
			2 * plan->kv_n + plan->ho_n; /* each counted within the limit */
	size_t want = 0, tokens = 0;

	if (size_mul(&want, floats, per_float) ||
	    size_mul3(&tokens, job->B, job->Lq, ANSWER_TOKEN_BYTES) ||
	    size_add(&want, want, tokens) || size_add(&want, want, ANSWER_FRAME_BYTES) ||
	    want > b->max - b->len)
		want = b->max - b->len;
	if (want > 0)
		buf_reserve(b, want);
}

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

/* "projections": {"q" [B, H, Lq, D], "k" and "v" [B, Hkv, Lk, D]}, preceded
 * by a comma, each shaped as the request was (one trimmed tensor an item of
 * a ragged batch: q to its queries, k and v to its keys). */
static int write_projections(struct api_writer *w, const struct attention_job *job,
			     const struct attention_out *o)
{
	const struct attn_model *m = job->model;
	struct v1_items queries = {job->Lq, job->q_len}, keys = {job->Lk, job->k_len};
	struct v1_items dims = {m->D, NULL};

	buf_puts(w->out, ",\"projections\":{\"q\":");
	if (v1_write_items(w, job, o->q, m->H, queries, dims, o->scratch) != 0)
		return -1;
	buf_puts(w->out, ",\"k\":");
	if (v1_write_items(w, job, o->k, m->Hkv, keys, dims, o->scratch) != 0)
		return -1;
	buf_puts(w->out, ",\"v\":");
	if (v1_write_items(w, job, o->v, m->Hkv, keys, dims, o->scratch) != 0)
		return -1;
	return buf_putc(w->out, '}');
}

/* "head_outputs" [B, H, Lq, D], preceded by a comma: each head's weights
 * times V, shaped as the request was (an item of a ragged batch trimmed to
 * its queries). Concatenated along D per query, they are what W_O takes. */
static int write_head_outputs(struct api_writer *w, const struct attention_job *job,
			      const struct attention_out *o)
{
	const struct attn_model *m = job->model;
	struct v1_items queries = {job->Lq, job->q_len}, dims = {m->D, NULL};

	buf_puts(w->out, ",\"head_outputs\":");
	return v1_write_items(w, job, o->head_outputs, m->H, queries, dims, o->scratch);
}

static int encode(const struct attention_job *job, const struct attention_plan *plan,
		  const struct attention_out *o, double flops, double compute_ms, struct buf *b)
{
	struct api_writer w = { b, job->encoding, job->precision };
	size_t H = job->model->H;

	buf_puts(b, "{\"model\":");
	jsonstr_put(b, job->model_name);
	buf_putc(b, ',');
	write_shape(b, job);
	v1_write_tokens(b, job);
	buf_puts(b, ",\"output\":");
	if (v1_write_batched(&w, job, o->out, 0, job->model->E, NULL, o->scratch) != 0)
		return -1;
	if (job->weights_mode != ATTN_WEIGHTS_NONE) {
		buf_puts(b, ",\"weights\":");
		if (v1_write_batched(&w, job, o->weights,
				  job->weights_mode == ATTN_WEIGHTS_PER_HEAD ? H : 0, job->Lk,
				  job->k_len, o->scratch) != 0)
			return -1;
	}
	if (job->scores_view != ATTN_SCORES_NONE) {
		buf_puts(b, ",\"scores\":");
		if (v1_write_batched(&w, job, o->scores, H, job->Lk, job->k_len, o->scratch) != 0)
			return -1;
	}
	if (o->positions != NULL &&
	    v1_write_positions(&w, job->pos.kind == ATTN_POS_ROPE ? "rope" : "sinusoidal",
			       o->positions, job->Lq, plan->pos_dim) != 0)
		return -1;
	if (o->q != NULL && write_projections(&w, job, o) != 0)
		return -1;
	if (o->head_outputs != NULL && write_head_outputs(&w, job, o) != 0)
		return -1;
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
	int rc;

	memset(&o, 0, sizeof(o));
	memset(&job, 0, sizeof(job));
	memset(&in, 0, sizeof(in));
	if (reply->small_only && len > API_SMALL_BODY) {
		reply->declined = 1;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = v1_decode(svc, body, len, &in, &job, &err);
	reply->model = job.entry != NULL ? job.entry->name
				       : (job.model == &job.shape ? API_INLINE_MODEL : NULL);
	if (rc == 1) {
		v1_stack_attention(svc, &in, &job, reply);
		goto out;
	}
	if (rc != 0 || attention_plan(svc, &job, reply, &plan, &err) != 0)
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
	reserve_answer(&reply->body, &job, &plan);
	if (encode(&job, &plan, &o, reply->flops, reply->compute_ms, &reply->body) != 0) {
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
