/*
 * v2_job.h: one /v2 infer call's state, shared by its three steps (internal
 * to api/v2; v2.h has the protocol's side):
 *   v2_infer.c   the request read: the JSON header, the inputs and the
 *                outputs asked for; the handler that runs the steps
 *   v2_build.c   the inputs onto an attention job (one layer) or a
 *                checkpoint's stack job, with their 4xx errors
 *   v2_answer.c  the run, the rows past each item's length, the answer as
 *                JSON or binary
 *   v2_job.c     what all three use: the names, v2_wants
 *
 * Ownership: a struct v2_job owns its JSON header, inputs, jobs and outputs
 * (v2_job_release in v2_infer.c, safe on a zeroed job); the service and the
 * model entry are borrowed.
 */
#ifndef API_V2_JOB_H
#define API_V2_JOB_H

#include "v2.h"

#include "api/attention_job.h"
#include "api/stack_job.h"

enum role { IN_EMBEDDINGS = 0, IN_TOKENS, IN_TEXT, IN_KEY, IN_VALUE, IN_TYPES, IN_COUNT };
/* q, k and v: each head's projections (engine/mha.h show_projections; a
 * checkpoint's per layer, engine/stack.h), and head_outputs, each head's
 * output before W_O: answered only when named, as scores are. */
enum out_kind {
	OUT_OUTPUT = 0,
	OUT_WEIGHTS,
	OUT_MEAN,
	OUT_ATTENTIONS,
	OUT_SCORES,
	OUT_Q,
	OUT_K,
	OUT_V,
	OUT_HEADS,
	OUT_COUNT
};
enum weights_param { W_PER_HEAD = 0, W_MEAN, W_NONE };

/* The inputs' and outputs' names in the protocol ("embeddings", "weights_mean", ...). */
extern const char *const v2_role_names[IN_COUNT];
extern const char *const v2_out_names[OUT_COUNT];

enum { V2_ENGINE_FIELDS = 7 };

struct v2_job {
	json_t *root; /* the JSON header */
	const char *id;
	json_t *params;
	struct v2_input in[IN_COUNT];
	size_t at[IN_COUNT]; /* the index of each given input in "inputs" */
	int has[IN_COUNT];
	enum out_kind order[OUT_COUNT];
	int binary[OUT_COUNT];
	size_t n_out;
	int weights, binary_default;
	struct attention_job job;
	const struct api_checkpoint *ckpt; /* the model's, or NULL: one layer */
	struct stack_job stack;		   /* a checkpoint's run */
	struct api_field_where engine_fields[V2_ENGINE_FIELDS];
	struct attention_out o;
	float *mean; /* weights_mean [B, Lq, Lk] when per-head weights come too */
};

/* Whether output k was asked for (or comes by default). */
int v2_wants(const struct v2_job *v, enum out_kind k);

/* v2_build.c: the read inputs and parameters onto v->job (one attention
 * layer) or v->stack (model e's checkpoint). 0, or -1 with err set. */
int v2_build_job(const struct api_service *svc, const struct api_model_entry *e, struct v2_job *v,
		 struct api_error *err);
int v2_build_stack_job(const struct api_service *svc, const struct api_model_entry *e,
		       struct v2_job *v, struct api_error *err);

/* v2_answer.c: plans and runs the built job, rows past each item's length
 * zeroed (0, or -1 with err set); then writes the answer into reply's body
 * (0, or -1 when it outgrows the response limit). */
int v2_run(const struct api_service *svc, struct v2_job *v, struct api_reply *reply,
	   struct api_error *err);
int v2_encode(const struct v2_job *v, struct api_reply *reply);

#endif
