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
	free(o->positions);
	free(o->q); /* k and v are in its block */
	free(o->head_outputs);
	free(o->ws);
}

/* The engine's request for job, its outputs in o (none yet while planning). */
static void request_of(const struct attention_job *job, struct attention_out *o,
		       const struct api_threads *threads, struct attn_mha *r)
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
	r->show_projections = job->projections;
	r->q_heads = o->q;
	r->k_heads = o->k;
	r->v_heads = o->v;
	r->head_outputs = o->head_outputs;
	r->threads = threads->threads;
	r->workers = threads->workers;
	r->cancel = threads->cancel;
}

size_t attention_inline_bytes(const struct attn_model_config *cfg, size_t D)
{
	size_t rows = 0, floats = 0, tmp = 0, bytes = 0;

	if (size_mul3(&rows, cfg->H + 2 * cfg->Hkv, D, 1) ||
	    size_mul(&floats, rows, cfg->E + (cfg->bias ? 1 : 0)) || /* w_qkv, b_qkv */
	    size_mul(&tmp, cfg->E, cfg->E + 1 + cfg->vocab) ||	     /* w_o, b_o, embed */
	    size_add(&floats, floats, tmp) || size_mul(&bytes, floats, sizeof(float)))
		return SIZE_MAX;
	return bytes;
}

/* The projections shown, when asked for (after p->out_n): q [B, H, Lq, D],
 * as many floats as the output [B, Lq, E], and k and v [B, Hkv, Lk, D] each.
 * Nonzero past size_t. */
static int projection_floats(const struct attention_job *job, struct attention_plan *p)
{
	const struct attn_model *m = job->model;

	p->q_n = p->kv_n = 0;
	if (!job->projections)
		return 0;
	p->q_n = p->out_n;
	return size_mul3(&p->kv_n, job->B, job->Lk, m->Hkv * m->D);
}

/*
 * The bytes a job will need, checked against the limit: outputs (the
 * positions, projections and head outputs too, when asked for) and the text
 * of the answer (about 16 bytes a float as text, 5.4 in base64), the
 * workspace, the query rows tokens become, and an inline model's weights.
 */
static int check_memory(const struct api_service *svc, const struct attention_job *job,
			struct attention_plan *p, struct api_error *err)
{
	const struct attn_model *m = job->model;
	size_t H = m->H, cells = 0, per_head = 0, floats = 0, bytes = 0, query = 0;
	size_t per_float = sizeof(float) + (job->encoding == API_ENC_FLOAT ? 16 : 6);
	int bad = size_mul3(&p->out_n, job->B, job->Lq, m->E) ||
		  size_mul3(&cells, job->B, job->Lq, job->Lk) || size_mul(&per_head, cells, H) ||
		  attention_positions_size(job, &p->pos_dim, &p->pos_n) != 0 ||
		  projection_floats(job, p) != 0;

	p->ho_n = job->head_outputs ? p->out_n : 0; /* [B, H, Lq, D]: H D = E */
	p->w_n = job->weights_mode == ATTN_WEIGHTS_NONE ? 0
		 : job->weights_mode == ATTN_WEIGHTS_MEAN ? cells : per_head;
	p->s_n = job->scores_view != ATTN_SCORES_NONE ? per_head : 0;
	if (job->query == NULL)
		query = p->out_n * sizeof(float); /* [B, Lq, E]: within out_n's check */
	bad = bad || size_add(&floats, p->out_n, p->w_n) || size_add(&floats, floats, p->s_n) ||
	      size_add(&floats, floats, p->pos_n) || size_add(&floats, floats, p->q_n) ||
	      size_add(&floats, floats, p->kv_n) || size_add(&floats, floats, p->kv_n) ||
	      size_add(&floats, floats, p->ho_n) || size_mul(&bytes, floats, per_float) ||
	      size_add(&bytes, bytes, p->ws_bytes) || size_add(&bytes, bytes, query) ||
	      size_add(&bytes, bytes,
			  job->inline_spec.pending
				  ? attention_inline_bytes(&job->inline_spec.cfg, job->model->D)
				  : 0);
	p->bytes = bytes;
	if (bad || bytes > svc->limits.max_request_bytes)
		return api_fail(err, API_E_REQUEST_TOO_LARGE, "",
				"this request needs %s%zu MB; the limit is %zu MB",
				bad ? "more than " : "about ", bad ? (size_t)SIZE_MAX >> 20 : bytes >> 20,
				svc->limits.max_request_bytes >> 20);
	return 0;
}

/*
 * The largest one-item tensor the /v1 encoder trims, of those answered:
 * [Lq, E] always (and q's [H, Lq, D]), [H, Lq, Lk] for per-head weights or
 * scores, [Lq, Lk] for their mean, k's and v's [Hkv, Lk, D]. Each is an
 * item of a tensor check_memory counted, so it is within the limit (its
 * text's bytes cover it).
 */
static size_t item_cells(const struct attention_job *job, const struct attention_plan *p)
{
	size_t cells = job->Lq * job->Lk, item = job->Lq * job->model->E;
	size_t kv = p->kv_n / job->B; /* [Hkv, Lk, D] */

	if (p->s_n > 0 || job->weights_mode == ATTN_WEIGHTS_PER_HEAD)
		cells *= job->model->H;
	else if (p->w_n == 0)
		cells = 0;
	if (kv > item)
		item = kv;
	return cells > item ? cells : item;
}

/*
 * Small enough to answer on the I/O thread (service.h): a named model (an
 * inline one is made from d_model alone, which can take seconds), at most
 * API_SMALL_FLOPS of engine work, API_SMALL_CELLS scores and API_SMALL_FLOATS
 * numbers in the answer (the positions among them).
 */
static int is_small(const struct attention_job *job, const struct attention_plan *p)
{
	return job->entry != NULL && p->flops <= API_SMALL_FLOPS &&
	       p->scores <= API_SMALL_CELLS &&
	       p->out_n + p->w_n + p->s_n + p->pos_n + p->q_n + 2 * p->kv_n + p->ho_n <=
		       API_SMALL_FLOATS;
}

int attention_plan(const struct api_service *svc, struct attention_job *job,
		   const struct api_reply *reply, struct attention_plan *plan,
		   struct api_error *err)
{
	struct api_threads own = api_own_threads(svc, reply);
	struct attention_out none = { 0 };
	struct attn_error aerr;
	struct attn_mha r;

	memset(plan, 0, sizeof(*plan));
	request_of(job, &none, &own, &r); /* no outputs yet: sizing only */
	if (attn_mha_workspace(&r, &plan->ws_bytes, &aerr) != ATTN_OK)
		return attention_engine_error(job, &aerr, err);
	plan->flops = attn_mha_flops(&r);
	plan->scores = (double)job->B * (double)job->model->H * (double)job->Lq * (double)job->Lk;
	if (check_memory(svc, job, plan, err) != 0)
		return -1;
	plan->flops += attention_positions_flops(job->Lq, plan->pos_dim); /* 0 without */
	if (api_check_work(&svc->limits, plan->flops, plan->scores, err) != 0)
		return -1;
	plan->scratch_n = job->ragged ? item_cells(job, plan) : 0;
	plan->small = is_small(job, plan);
	return 0;
}

/* An inline model's weights: drawn from its seed, or copied from the request. */
static int build_inline(struct attention_job *job, struct api_error *err)
{
	struct api_inline_model *s = &job->inline_spec;
	struct attn_error aerr;
	enum attn_status st;

	if (!s->pending)
		return 0;
	if (s->w_qkv.data != NULL)
		st = attn_model_new_explicit(&job->inline_model, &s->cfg, s->w_qkv.data,
					     s->b_qkv.data, s->w_o.data, s->b_o.data, s->embed.data,
					     &aerr);
	else
		st = attn_model_new_seeded(&job->inline_model, &s->cfg, s->seed, &aerr);
	if (st != ATTN_OK)
		return attention_engine_error(job, &aerr, err);
	s->pending = 0;
	job->model = job->inline_model;
	return 0;
}

/* The query's rows of the embedding table, for tokens. */
static int build_query(struct attention_job *job, struct api_error *err)
{
	size_t L = job->Lq, E = job->model->E;

	if (job->query != NULL || job->token_ids == NULL)
		return 0;
	job->query = calloc(job->B * L * E, sizeof(float));
	if (job->query == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t b = 0; b < job->B; b++) {
		struct attn_error aerr;

		/* seek to query[b, 0, 0] and item b's ids */
		if (attn_model_embed(job->model, job->query + b * L * E, job->token_ids + b * L,
				     job->q_len[b], &aerr) != ATTN_OK)
			return attention_engine_error(job, &aerr, err);
	}
	return 0;
}

int attention_build(struct attention_job *job, struct api_error *err)
{
	if (build_inline(job, err) != 0 || build_query(job, err) != 0)
		return -1;
	return 0;
}

static int alloc_outputs(struct attention_out *o, const struct attention_plan *p,
			 struct api_error *err)
{
	o->out = malloc(p->out_n * sizeof(float));
	o->weights = p->w_n ? malloc(p->w_n * sizeof(float)) : NULL;
	o->scores = p->s_n ? malloc(p->s_n * sizeof(float)) : NULL;
	o->scratch = p->scratch_n ? malloc(p->scratch_n * sizeof(float)) : NULL;
	o->positions = p->pos_n ? malloc(p->pos_n * sizeof(float)) : NULL;
	o->q = p->q_n ? malloc((p->q_n + 2 * p->kv_n) * sizeof(float)) : NULL;
	o->head_outputs = p->ho_n ? malloc(p->ho_n * sizeof(float)) : NULL;
	if (!o->out || (p->w_n && !o->weights) || (p->s_n && !o->scores) ||
	    (p->scratch_n && !o->scratch) || (p->pos_n && !o->positions) || (p->q_n && !o->q) ||
	    (p->ho_n && !o->head_outputs))
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	if (o->q != NULL) { /* k and v follow q in its block */
		o->k = o->q + p->q_n;
		o->v = o->k + p->kv_n;
	}
	return 0;
}

/*
 * The workspace of the call on `threads`, into o: the plan counted it for the
 * reply's own threads, and stands when no thread was lent (the engine checks
 * the request again when it runs); lent threads each need scratch of their
 * own, and are given back when that would pass the memory limit.
 */
static int size_workspace(const struct api_service *svc, const struct api_reply *reply,
			  const struct attention_job *job, const struct attention_plan *plan,
			  struct attention_out *o, struct api_threads *threads, struct attn_mha *r,
			  struct api_error *err)
{
	struct attn_error aerr;

	request_of(job, o, threads, r);
	if (!threads->lent) { /* the plan's own threads: its size stands */
		o->ws_bytes = plan->ws_bytes;
		return 0;
	}
	if (attn_mha_workspace(r, &o->ws_bytes, &aerr) != ATTN_OK)
		return attention_engine_error(job, &aerr, err);
	if (plan->bytes - plan->ws_bytes + o->ws_bytes > svc->limits.max_request_bytes) {
		api_give_back(svc, reply, threads);
		return size_workspace(svc, reply, job, plan, o, threads, r, err);
	}
	return 0;
}

int attention_run(const struct api_service *svc, struct attention_job *job,
		  const struct attention_plan *plan, struct attention_out *o,
		  struct api_reply *reply, struct api_error *err)
{
	struct api_threads threads = api_lend_threads(svc, reply, api_work(plan->flops, plan->scores));
	struct attn_error aerr;
	struct attn_mha r;
	struct timespec t0;
	int rc = -1;

	if (alloc_outputs(o, plan, err) != 0 ||
	    size_workspace(svc, reply, job, plan, o, &threads, &r, err) != 0)
		goto out;
	o->ws = malloc(o->ws_bytes ? o->ws_bytes : 1);
	if (o->ws == NULL) {
		api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (attn_mha_forward(&r, o->ws, o->ws_bytes, &aerr) != ATTN_OK) {
		/* the engine's time counts however it ended: cut at a deadline,
		 * or for a client gone, it was spent all the same (the FLOPs of
		 * the part done are not known, and are not counted) */
		reply->compute_ms = api_ms_since(&t0);
		attention_engine_error(job, &aerr, err);
		goto out;
	}
	if (o->positions != NULL)
		attention_positions(job, plan, o->positions);
	reply->compute_ms = api_ms_since(&t0);
	reply->flops = plan->flops;
	rc = 0;
out:
	api_give_back(svc, reply, &threads); /* right after the engine call */
	return rc;
}
