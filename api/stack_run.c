/*
 * stack_run.c: a checkpoint request planned and run (see stack_job.h): the
 * same steps as a one-layer job (attention_run.c) on the whole stack.
 */
#include "api/stack_job.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/handlers.h"
#include "common/huge_alloc.h"
#include "engine/checkpoint.h"
#include "engine/sizes.h"

void stack_job_release(struct stack_job *s)
{
	free(s->layers);
	free(s->heads);
	free(s->type_ids);
	free(s->capture);
	free(s->attentions);
	free(s->scores);
	free(s->projections);
	free(s->head_outputs);
	free(s->out);
	free(s->positions);
	free(s->scratch);
	free(s->ws);
	memset(s, 0, sizeof(*s));
}

size_t stack_heads(const struct stack_job *s)
{
	return s->heads ? s->n_heads : s->st->H;
}

const char *stack_positions_type(const struct attn_stack *st)
{
	return st->family == ATTN_FAMILY_LLAMA ? "rope" : "learned";
}

int stack_all_layers(struct stack_job *s, struct api_error *err)
{
	size_t N = s->st->n_layers;

	s->layers = malloc(N * sizeof(size_t));
	if (s->layers == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t l = 0; l < N; l++)
		s->layers[l] = l;
	s->n_layers = N;
	return 0;
}

int stack_check_context(const struct stack_job *s, const struct api_where *where,
			struct api_error *err)
{
	const struct attention_job *job = s->job;
	size_t P = attn_stack_context(s->st);

	for (size_t b = 0; P > 0 && b < job->B; b++) {
		char ptr[API_PTR_MAX];

		if (job->q_len[b] <= P)
			continue;
		return api_fail(err, API_E_POSITION_OUT_OF_RANGE,
				api_where_item(ptr, where, job->batched, b),
				"%zu tokens pass model '%s''s context length of %zu", job->q_len[b],
				job->model_name, P);
	}
	return 0;
}

int stack_takes_types(const struct stack_job *s, const char *what, const char *ptr,
		      struct api_error *err)
{
	if (s->st->family == ATTN_FAMILY_BERT)
		return 0;
	return api_fail(err, API_E_INVALID_INPUT, ptr,
			"%s applies to bert and roberta checkpoints; model '%s' is %s", what,
			s->job->model_name, s->ckpt->model_type);
}

int stack_set_types(struct stack_job *s, const int64_t *t, const struct api_where *where,
		    struct api_error *err)
{
	const struct attention_job *job = s->job;
	size_t n = job->B * job->Lq, T = s->st->type_vocab;
	char ptr[API_PTR_MAX];

	for (size_t k = 0; k < n; k++) {
		if (t[k] >= 0 && (uint64_t)t[k] < T)
			continue;
		api_where_elem(ptr, where, job->batched, k / job->Lq, k % job->Lq, job->Lq);
		return api_fail(err, API_E_OUT_OF_RANGE, ptr,
				"token type %lld is not in [0, %zu) (type_vocab_size)",
				(long long)t[k], T);
	}
	s->type_ids = malloc(n * sizeof(int64_t));
	if (s->type_ids == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	memcpy(s->type_ids, t, n * sizeof(int64_t));
	return 0;
}

static void run_of(const struct stack_job *s, const struct api_threads *t, struct attn_stack_run *r)
{
	const struct attention_job *job = s->job;
	int capture = job->weights_mode != ATTN_WEIGHTS_NONE ||
		      job->scores_view != ATTN_SCORES_NONE || s->want_projections ||
		      s->want_head_outputs;

	memset(r, 0, sizeof(*r));
	r->stack = s->st;
	r->B = job->B;
	r->L = job->Lq;
	r->ids = job->token_ids;
	r->type_ids = s->type_ids;
	r->lengths = job->q_len;
	r->last_layer = s->last;
	r->capture = capture ? s->capture : NULL;
	r->heads = s->heads;
	r->n_heads = s->n_heads;
	r->weights_mode = capture ? job->weights_mode : ATTN_WEIGHTS_PER_HEAD;
	r->attentions = s->attentions;
	r->scores_view = job->scores_view;
	r->scores = s->scores;
	r->show_projections = s->want_projections;
	r->projections = s->projections;
	r->show_head_outputs = s->want_head_outputs;
	r->head_outputs = s->head_outputs;
	r->out = s->out;
	r->threads = t->threads;
	r->workers = t->workers;
	r->cancel = t->cancel;
}

/* The layers to capture, and the deepest one to run. */
static int captures(struct stack_job *s, struct api_error *err)
{
	s->last = s->layers[s->n_layers - 1];
	s->capture = calloc(s->last + 1, 1);
	if (s->capture == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t i = 0; i < s->n_layers; i++)
		s->capture[s->layers[i]] = 1;
	return 0;
}

/* Does the request run the stack's layers? Not when it answers no
 * attentions, scores, projections, head outputs nor output (the tokens, or
 * the positions, alone): it then needs no workspace, no output buffer and no
 * layer's work. */
static int runs_layers(const struct stack_job *s)
{
	return s->job->weights_mode != ATTN_WEIGHTS_NONE ||
	       s->job->scores_view != ATTN_SCORES_NONE || s->want_projections ||
	       s->want_head_outputs || s->want_output;
}

/* The floats of the answer (attentions, scores, projections, head outputs,
 * output, positions), and with
 * them, its text (answer_bytes_per_float) and the workspace (which holds a
 * layer's [B, H, L, L] weights and scores when only some heads are kept),
 * the memory it needs, against the limit. */
static int check_memory(const struct api_service *svc, struct stack_job *s, struct api_error *err)
{
	const struct attention_job *job = s->job;
	size_t C = job->weights_mode == ATTN_WEIGHTS_NONE ? 0 : s->n_layers;
	size_t C_s = job->scores_view == ATTN_SCORES_NONE ? 0 : s->n_layers;
	size_t C_p = s->want_projections ? s->n_layers : 0, rows = 0; /* rows: B Hc L */
	size_t C_o = s->want_head_outputs ? s->n_layers : 0;
	size_t per_cell = job->weights_mode == ATTN_WEIGHTS_MEAN ? 1 : stack_heads(s);
	size_t E_run = runs_layers(s) ? s->st->E : 0, ws = runs_layers(s) ? s->ws_bytes : 0;
	size_t cells = 0, floats = 0, bytes = 0, text = 0, item = 0;
	int bad;

	s->pos_dim = s->want_positions ? attn_stack_position_dim(s->st) : 0;
	bad = (s->want_positions && attention_positions_floats(job->Lq, s->pos_dim, &s->pos_n)) ||
	      size_mul3(&cells, job->B, job->Lq, job->Lq) ||
	      size_mul3(&s->att_n, C, cells, per_cell) ||
	      size_mul3(&s->sc_n, C_s, cells, stack_heads(s)) ||
	      size_mul3(&rows, job->B, stack_heads(s), job->Lq) ||
	      size_mul4(&s->pr_n, C_p, 3, rows, s->st->D) ||
	      size_mul3(&s->ho_n, C_o, rows, s->st->D) ||
	      size_mul3(&s->out_n, job->B, job->Lq, E_run) ||
	      size_add(&floats, s->att_n, s->out_n) || size_add(&floats, floats, s->sc_n) ||
	      size_add(&floats, floats, s->pos_n) || size_add(&floats, floats, s->pr_n) ||
	      size_add(&floats, floats, s->ho_n) ||
	      size_mul(&text, floats, (size_t)s->answer_bytes_per_float) ||
	      size_mul(&bytes, floats, sizeof(float)) || size_add(&bytes, bytes, text) ||
	      size_add(&bytes, bytes, ws);

	s->plan_bytes = bytes; /* with the ragged scratch: at most one item of the floats */
	if (bad || bytes > svc->limits.max_request_bytes)
		return api_fail(err, API_E_REQUEST_TOO_LARGE, "",
				"this request needs %s%zu MB; the limit is %zu MB",
				bad ? "more than " : "about ",
				bad ? (size_t)SIZE_MAX >> 20 : bytes >> 20,
				svc->limits.max_request_bytes >> 20);
	/* one item's [Hc, L, L] (weights or scores, when answered), [L, E] or
	 * [Hc, L, D] (a projection or head outputs), within the floats checked
	 * above */
	item = C > 0 ? per_cell * job->Lq * job->Lq : 0;
	item = C_s > 0 ? stack_heads(s) * job->Lq * job->Lq : item;
	item = item > job->Lq * s->st->E ? item : job->Lq * s->st->E;
	item = (C_p > 0 || C_o > 0) && item < rows / job->B * s->st->D ? rows / job->B * s->st->D
									  : item;
	s->scratch_n = job->ragged && s->trims ? item : 0;
	return 0;
}

int stack_plan(const struct api_service *svc, const struct api_reply *reply, struct stack_job *s,
	       struct api_error *err)
{
	struct api_threads own = api_own_threads(svc, reply);
	struct attn_stack_run r;
	struct attn_error aerr;

	if (captures(s, err) != 0)
		return -1;
	run_of(s, &own, &r);
	if (attn_stack_workspace(&r, &s->ws_bytes, &aerr) != ATTN_OK)
		return attention_engine_error(s->job, &aerr, err);
	if (check_memory(svc, s, err) != 0)
		return -1;
	s->flops = attention_positions_flops(s->job->Lq, s->pos_dim);
	s->cells = 0;
	if (runs_layers(s)) {
		s->flops += attn_stack_flops(&r);
		s->cells = (double)(s->last + 1) * (double)s->job->B * (double)s->st->H *
			   (double)s->job->Lq * (double)s->job->Lq;
	}
	return api_check_work(&svc->limits, s->flops, s->cells, err);
}

/* The workspace on t (lent threads need scratch of their own, and are given
 * back when that would pass the memory limit), then the outputs. */
static int allocate(const struct api_service *svc, const struct api_reply *reply,
		    struct stack_job *s, struct api_threads *t, struct api_error *err)
{
	size_t planned = s->ws_bytes;
	struct attn_stack_run r;
	struct attn_error aerr;

	run_of(s, t, &r);
	if (attn_stack_workspace(&r, &s->ws_bytes, &aerr) != ATTN_OK)
		return attention_engine_error(s->job, &aerr, err);
	if (t->lent && s->plan_bytes - planned + s->ws_bytes > svc->limits.max_request_bytes) {
		api_give_back(svc, reply, t);
		return allocate(svc, reply, s, t, err);
	}
	s->ws = malloc(s->ws_bytes ? s->ws_bytes : 1);
	s->out = malloc(s->out_n * sizeof(float));
	/* every layer's attentions and scores: large, written once a pass */
	s->attentions = s->att_n ? huge_alloc(s->att_n * sizeof(float)) : NULL;
	s->scores = s->sc_n ? huge_alloc(s->sc_n * sizeof(float)) : NULL;
	s->projections = s->pr_n ? malloc(s->pr_n * sizeof(float)) : NULL;
	s->head_outputs = s->ho_n ? malloc(s->ho_n * sizeof(float)) : NULL;
	s->scratch = s->scratch_n ? malloc(s->scratch_n * sizeof(float)) : NULL;
	if (!s->ws || !s->out || (s->att_n && !s->attentions) || (s->sc_n && !s->scores) ||
	    (s->pr_n && !s->projections) || (s->ho_n && !s->head_outputs) ||
	    (s->scratch_n && !s->scratch))
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	return 0;
}

/* The stack's own position signal (engine/stack.h), then its rows
 * compared as a layer's are (attention_positions_compare). */
static int make_positions(struct stack_job *s, struct api_error *err)
{
	size_t L = s->job->Lq;
	struct attn_error aerr;

	if (!s->want_positions)
		return 0;
	s->positions = malloc(s->pos_n * sizeof(float));
	if (s->positions == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	if (attn_stack_positions(s->positions, s->st, L, &aerr) != ATTN_OK)
		return attention_engine_error(s->job, &aerr, err);
	attention_positions_compare(s->positions, L, s->pos_dim);
	return 0;
}

int stack_run(const struct api_service *svc, struct stack_job *s, struct api_reply *reply,
	      struct api_error *err)
{
	struct api_threads t;
	struct attn_stack_run r;
	struct attn_error aerr;
	struct timespec t0;
	double positions_ms;
	int rc = -1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (make_positions(s, err) != 0)
		return -1;
	positions_ms = api_ms_since(&t0); /* compute, as a layer's positions are */
	if (!runs_layers(s)) { /* the tokens (and the positions) alone */
		reply->compute_ms = positions_ms;
		reply->flops = s->flops;
		return 0;
	}
	t = api_lend_threads(svc, reply, api_work(s->flops, s->cells));

	if (allocate(svc, reply, s, &t, err) != 0)
		goto out;
	run_of(s, &t, &r);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (attn_stack_forward(&r, s->ws, s->ws_bytes, &aerr) != ATTN_OK) {
		reply->compute_ms = positions_ms + api_ms_since(&t0); /* as attention_run's */
		attention_engine_error(s->job, &aerr, err);
		goto out;
	}
	reply->compute_ms = positions_ms + api_ms_since(&t0);
	reply->flops = s->flops;
	rc = 0;
out:
	api_give_back(svc, reply, &t); /* right after the engine call */
	return rc;
}
