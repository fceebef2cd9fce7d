/*
 * attention_run.c: one attention job, planned and run (see attention_job.h):
 * the engine's workspace, the memory of the inputs, outputs and answer text,
 * and the work, each checked against the service's limits before anything
 * is allocated; then the forward pass.
 */
#include "api/attention_job.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/handlers.h"
#include "engine/sizes.h"

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

/* The largest one-item tensor the /v1 encoder trims: [H, Lq, Lk] or [Lq, E]. */
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

int attention_run(const struct api_service *svc, struct attention_job *job,
		  struct attention_out *o, struct api_reply *reply, struct api_error *err)
{
	struct attn_error aerr;
	struct attn_mha r;
	struct timespec t0;
	size_t out_n = 0, w_n = 0, s_n = 0;

	request_of(job, o, svc, reply, &r); /* o->out is still NULL: sizing only */
	if (attn_mha_workspace(&r, &o->ws_bytes, &aerr) != ATTN_OK)
		return attention_engine_error(job, &aerr, err);
	if (check_memory(svc, job, o->ws_bytes, &out_n, &w_n, &s_n, err) != 0 ||
	    api_check_work(&svc->limits, attn_mha_flops(&r), scores(job), err) != 0)
		return -1;
	if (job->small_only && !is_small(job, &r, out_n + w_n + s_n))
		return attention_decline(job);
	if (alloc_outputs(o, out_n, w_n, s_n, job->ragged ? item_cells(job) : 0, err) != 0)
		return -1;
	request_of(job, o, svc, reply, &r);
	if (attn_mha_workspace(&r, &o->ws_bytes, &aerr) != ATTN_OK)
		return attention_engine_error(job, &aerr, err);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (attn_mha_forward(&r, o->ws, o->ws_bytes, &aerr) != ATTN_OK)
		return attention_engine_error(job, &aerr, err);
	reply->compute_ms = api_ms_since(&t0);
	reply->flops = attn_mha_flops(&r);
	return 0;
}
