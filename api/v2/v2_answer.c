/*
 * v2_answer.c: a built /v2 infer call run and answered (see v2_job.h):
 * rows of a padded item past its own length zeroed (scores: -inf; q past
 * its queries, k and v past its keys), then
 *   {"model_name", "model_version", "id"?, "outputs": [{"name", "datatype",
 *    "shape", "data" | "parameters": {"binary_data_size"}}]}
 * followed by each binary output's little-endian float32 bytes, in order.
 */
#include "v2_job.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/attention_job.h"
#include "common/jsonstr.h"

/* weights_mean beside per-head weights: the mean over heads, summed in head
 * order as the engine's ATTN_WEIGHTS_MEAN does, so both agree bit for bit. */
static int mean_of_heads(struct v2_job *v, struct api_error *err)
{
	const struct attention_job *job = &v->job;
	size_t H = job->model->H, cells = job->Lq * job->Lk;
	float inv_h = 1.0f / (float)H;

	v->mean = malloc(job->B * cells * sizeof(float));
	if (v->mean == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	for (size_t b = 0; b < job->B; b++) {
		float *w = v->mean + b * cells; /* weights_mean[b] */

		for (size_t h = 0; h < H; h++) {
			const float *P = v->o.weights + (b * H + h) * cells; /* weights[b, h] */

			for (size_t c = 0; c < cells; c++)
				w[c] = h == 0 ? P[c] * inv_h : w[c] + P[c] * inv_h;
		}
	}
	return 0;
}

/* Fills the rows of x [B, heads, L, cols] past each item's own length
 * len[b] with value. */
static void fill_rows(float *x, size_t B, size_t heads, size_t L, const size_t *len, size_t cols,
		      float value)
{
	for (size_t b = 0; x && b < B; b++)
		for (size_t h = 0; h < heads; h++) {
			/* seek to x[b, h, len[b], 0] */
			float *row = x + ((b * heads + h) * L + len[b]) * cols;

			for (size_t k = 0; k < (L - len[b]) * cols; k++)
				row[k] = value;
		}
}

/* Fills the rows of x [B, heads, Lq, cols] past each item's own query length
 * with value. */
static void fill_padding(const struct attention_job *job, float *x, size_t heads, size_t cols,
			 float value)
{
	fill_rows(x, job->B, heads, job->Lq, job->q_len, cols, value);
}

static void zero_padding(const struct attention_job *job, float *x, size_t heads, size_t cols)
{
	fill_padding(job, x, heads, cols, 0.0f);
}

/* The same for x [B, heads, Lk, cols], past each item's own key length. */
static void zero_key_padding(const struct attention_job *job, float *x, size_t heads, size_t cols)
{
	fill_rows(x, job->B, heads, job->Lk, job->k_len, cols, 0.0f);
}

/* An answered tensor: n floats in `slabs` runs of slab_n, run i at
 * x + i * stride (one run but for a checkpoint's q, k and v, whose layers
 * interleave in [C, 3, B, Hc, L, D]). */
struct out_tensor {
	const float *x;
	size_t rank, shape[5], n; /* up to [layers, B, H, L, L] */
	size_t slabs, slab_n, stride;
};

/* A checkpoint's output [B, L, E], attentions [layers, B, H, L, L] (mean:
 * [layers, B, L, L]), scores [layers, B, H, L, L], q, k and v [layers, B,
 * H, L, D] (k and v per query head, as /v1 answers them) and head_outputs
 * [layers, B, H, L, D], without B for an unbatched input. */
static struct out_tensor stack_tensor(const struct v2_job *v, enum out_kind k)
{
	const struct attention_job *job = &v->job;
	const struct stack_job *s = &v->stack;
	size_t B = job->B, L = job->Lq, C = s->n_layers, Hc = stack_heads(s), D = s->st->D;
	size_t part = B * Hc * L * D; /* one layer's q, k, v or head outputs [B, Hc, L, D] */
	size_t heads = Hc, cols = L, at = 0;
	struct out_tensor t = {.slabs = 1};

	switch (k) {
	case OUT_OUTPUT:
		t.x = s->out;
		t.n = s->out_n;
		heads = 0;
		cols = s->st->E;
		break;
	case OUT_SCORES:
		t.x = s->scores;
		t.n = s->sc_n;
		break;
	case OUT_Q:
	case OUT_K:
	case OUT_V: /* layer c's is projections[c, k - OUT_Q] */
		t.x = s->projections + (size_t)(k - OUT_Q) * part;
		t.n = C * part;
		t.slabs = C;
		t.stride = 3 * part;
		cols = D;
		break;
	case OUT_HEADS:
		t.x = s->head_outputs;
		t.n = s->ho_n;
		cols = D;
		break;
	default: /* OUT_ATTENTIONS */
		t.x = s->attentions;
		t.n = s->att_n;
		heads = job->weights_mode == ATTN_WEIGHTS_PER_HEAD ? Hc : 0;
		break;
	}
	t.slab_n = t.n / t.slabs;
	if (k != OUT_OUTPUT)
		t.shape[at++] = C;
	if (job->batched)
		t.shape[at++] = B;
	if (heads > 0)
		t.shape[at++] = heads;
	t.shape[at++] = L;
	t.shape[at++] = cols;
	t.rank = at;
	return t;
}

/* One layer's output [B, Lq, E], weights [B, H, Lq, Lk], weights_mean
 * [B, Lq, Lk], q [B, H, Lq, D], k and v [B, Hkv, Lk, D], head_outputs
 * [B, H, Lq, D], without B for an unbatched input. */
static struct out_tensor layer_tensor(const struct v2_job *v, enum out_kind k)
{
	const struct attention_job *job = &v->job;
	const struct attn_model *m = job->model;
	size_t B = job->B, Lq = job->Lq, Lk = job->Lk, skip = job->batched ? 0 : 1;
	const struct {
		const float *x;
		size_t rank, shape[4];
	} layer[OUT_COUNT] = {
	    [OUT_OUTPUT] = {v->o.out, 3, {B, Lq, m->E}},
	    [OUT_WEIGHTS] = {v->o.weights, 4, {B, m->H, Lq, Lk}},
	    [OUT_MEAN] = {v->mean ? v->mean : v->o.weights, 3, {B, Lq, Lk}},
	    [OUT_Q] = {v->o.q, 4, {B, m->H, Lq, m->D}},
	    [OUT_K] = {v->o.k, 4, {B, m->Hkv, Lk, m->D}},
	    [OUT_V] = {v->o.v, 4, {B, m->Hkv, Lk, m->D}},
	    [OUT_HEADS] = {v->o.head_outputs, 4, {B, m->H, Lq, m->D}},
	};
	struct out_tensor t = {0};

	t.x = layer[k].x;
	t.slabs = 1;
	t.rank = layer[k].rank - skip;
	memcpy(t.shape, layer[k].shape + skip, t.rank * sizeof(size_t));
	t.n = 1;
	for (size_t i = 0; i < t.rank; i++)
		t.n *= t.shape[i]; /* within the limit attention_run has checked */
	t.slab_n = t.n;
	return t;
}

static struct out_tensor out_tensor(const struct v2_job *v, enum out_kind k)
{
	return v->ckpt != NULL ? stack_tensor(v, k) : layer_tensor(v, k);
}

/* Appends n floats as little-endian float32 bytes. */
static int put_le_floats(struct buf *b, const float *x, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return buf_append(b, x, n * sizeof(float));
#else
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		unsigned char le[4];

		memcpy(&u, &x[i], 4);
		for (int j = 0; j < 4; j++)
			le[j] = (unsigned char)(u >> (8 * j));
		if (buf_append(b, le, 4) != 0)
			return -1;
	}
	return 0;
#endif
}

/* t's numbers as one flat JSON array: each run written as an array of its
 * own (numbers: /v2 never answers base64), and where two meet, the first's
 * ']' dropped and the second's '[' turned into the comma between them. */
static int put_json(struct api_writer *w, const struct out_tensor *t)
{
	struct buf *b = w->out;

	for (size_t i = 0; i < t->slabs; i++) {
		size_t open = b->len;

		if (api_tensor_write(w, t->x + i * t->stride, 1, &t->slab_n) != 0)
			return -1;
		if (i > 0)
			b->data[open] = ',';
		if (i + 1 < t->slabs)
			b->data[--b->len] = '\0';
	}
	return 0;
}

/* t's numbers as little-endian float32 bytes, run after run. */
static int put_binary(struct buf *b, const struct out_tensor *t)
{
	for (size_t i = 0; i < t->slabs; i++)
		if (put_le_floats(b, t->x + i * t->stride, t->slab_n) != 0)
			return -1;
	return 0;
}

int v2_encode(const struct v2_job *v, struct api_reply *reply)
{
	struct buf *b = &reply->body;
	struct api_writer w = {b, API_ENC_FLOAT, 0};
	int any_binary = 0;

	buf_puts(b, "{\"model_name\":");
	jsonstr_put(b, v->job.model_name);
	buf_puts(b, ",\"model_version\":\"" V2_MODEL_VERSION "\"");
	if (v->id != NULL) {
		buf_puts(b, ",\"id\":");
		jsonstr_put(b, v->id);
	}
	buf_puts(b, ",\"outputs\":[");
	for (size_t i = 0; i < v->n_out; i++) {
		enum out_kind k = v->order[i];
		struct out_tensor t = out_tensor(v, k);

		buf_printf(b, "%s{\"name\":\"%s\",\"datatype\":\"FP32\",\"shape\":[", i ? "," : "",
			   v2_out_names[k]);
		for (size_t d = 0; d < t.rank; d++)
			buf_printf(b, "%s%zu", d ? "," : "", t.shape[d]);
		if (v->binary[k]) {
			buf_printf(b, "],\"parameters\":{\"binary_data_size\":%zu}}", t.n * 4);
			any_binary = 1;
			continue;
		}
		buf_puts(b, "],\"data\":");
		if (put_json(&w, &t) != 0)
			return -1;
		buf_putc(b, '}');
	}
	buf_puts(b, "]}");
	if (!any_binary)
		return b->failed ? -1 : 0;
	reply->inference_header_len = b->len;
	reply->content_type = "application/octet-stream";
	for (size_t i = 0; i < v->n_out; i++) {
		struct out_tensor t = out_tensor(v, v->order[i]);

		if (v->binary[v->order[i]] && put_binary(b, &t) != 0)
			return -1;
	}
	return b->failed ? -1 : 0;
}

/* ---- the run ------------------------------------------------------------------- */

/* A checkpoint's run; rows past each item's length zeroed, as one layer's
 * (scores: -inf, a query that sees no key, whose weights are zero). */
static int run_stack(const struct api_service *svc, struct v2_job *v, struct api_reply *reply,
		     struct api_error *err)
{
	struct stack_job *s = &v->stack;
	const struct attention_job *job = &v->job;
	size_t Hc = stack_heads(s), heads = job->weights_mode == ATTN_WEIGHTS_PER_HEAD ? Hc : 1;
	size_t slab, part = job->B * Hc * job->Lq * s->st->D; /* [B, Hc, L, D] */

	if (stack_plan(svc, reply, s, err) != 0 || stack_run(svc, s, reply, err) != 0)
		return -1;
	if (!job->ragged)
		return 0;
	slab = s->att_n / s->n_layers; /* planned: att_n is known from here on */
	zero_padding(job, s->out, 1, s->st->E);
	for (size_t c = 0; s->attentions && c < s->n_layers; c++)
		zero_padding(job, s->attentions + c * slab, heads, job->Lq); /* layer c's slab */
	for (size_t c = 0; s->scores && c < s->n_layers; c++) /* layer c's [B, H, L, L] */
		fill_padding(job, s->scores + c * (s->sc_n / s->n_layers), Hc, job->Lq, -INFINITY);
	for (size_t c = 0; s->projections && c < 3 * s->n_layers; c++) /* [C, 3] of them */
		zero_padding(job, s->projections + c * part, Hc, s->st->D);
	for (size_t c = 0; s->head_outputs && c < s->n_layers; c++)
		zero_padding(job, s->head_outputs + c * part, Hc, s->st->D);
	return 0;
}

int v2_run(const struct api_service *svc, struct v2_job *v, struct api_reply *reply,
	   struct api_error *err)
{
	struct attention_job *job = &v->job;
	size_t H = job->model->H;
	struct attention_plan plan;

	if (v->ckpt != NULL)
		return run_stack(svc, v, reply, err);
	if (attention_plan(svc, job, reply, &plan, err) != 0 || attention_build(job, err) != 0 ||
	    attention_run(svc, job, &plan, &v->o, reply, err) != 0)
		return -1;
	if (v2_wants(v, OUT_WEIGHTS) && v2_wants(v, OUT_MEAN) && mean_of_heads(v, err) != 0)
		return -1;
	if (job->ragged) {
		zero_padding(job, v->o.out, 1, job->model->E);
		zero_padding(job, job->weights_mode == ATTN_WEIGHTS_PER_HEAD ? v->o.weights : NULL,
			     H, job->Lk);
		zero_padding(job, job->weights_mode == ATTN_WEIGHTS_MEAN ? v->o.weights : v->mean,
			     1, job->Lk);
		/* the projections: q's rows past the item's queries, k's and v's
		 * past its keys (NULL when not asked) */
		zero_padding(job, v->o.q, H, job->model->D);
		zero_padding(job, v->o.head_outputs, H, job->model->D); /* as q's */
		zero_key_padding(job, v->o.k, job->model->Hkv, job->model->D);
		zero_key_padding(job, v->o.v, job->model->Hkv, job->model->D);
	}
	return 0;
}
