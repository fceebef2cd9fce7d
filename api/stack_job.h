/*
 * stack_job.h: one request on a checkpoint model (a whole stack,
 * engine/stack.h), typed, planned and run. Internal to api/.
 *
 * A front end (/v1/attention: v1/v1_stack.c; /v2 infer: v2/v2_infer.c)
 * reads its input into the attention job (tokens or text through
 * attention_query_from_tokens / _text: ids, item lengths, labels; its
 * weights_mode and scores_view, NONE or MASKED) and its choices into the
 * stack job (layers, heads, output), then:
 *   stack_plan   the captures, the engine's workspace, the memory of the
 *                answer and the work, checked against the service's limits
 *                before anything large is allocated
 *   stack_run    allocates the outputs and runs the forward pass, on threads
 *                lent for its work when the reply has a lender; sets
 *                reply->compute_ms and flops (nothing runs when neither
 *                attentions, scores, projections, head outputs nor the output
 *                are asked for: flops 0,
 *                or the positions' alone); makes the positions when asked
 *                (the stack's own signal, engine/stack.h
 *                attn_stack_positions, compared as a layer's are)
 * and encodes the answer from attentions, scores, projections, head
 * outputs, out and positions.
 *
 * Ownership: the stack job owns the arrays it points to (stack_job_release,
 * safe on a zeroed job) except job, ckpt and st, which it borrows (the front
 * end owns job; the service owns the checkpoint).
 */
#ifndef API_STACK_JOB_H
#define API_STACK_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "api/attention_job.h"
#include "engine/stack.h"

struct stack_job {
	struct attention_job *job; /* tokens, ids, item lengths, labels */
	const struct api_checkpoint *ckpt;
	const struct attn_stack *st;
	size_t *layers, n_layers; /* answered layers, ascending */
	size_t *heads, n_heads;	  /* answered heads, or NULL: all H */
	int64_t *type_ids;	  /* [B, L] bert token types (padded with 0), or NULL: all 0 */
	int want_output;
	int want_positions;	      /* the answer shows the stack's own position signal */
	int want_projections;	      /* the answer shows each layer's q, k, v per head */
	int want_head_outputs;	      /* ... and each head's output before o_proj */
	int trims;		      /* the answer trims ragged items (/v1): scratch for one */
	float answer_bytes_per_float; /* the answer's text per float (plan) */

	uint8_t *capture;  /* [last + 1] */
	size_t last;	   /* the deepest layer run */
	float *attentions; /* [C, B, Hc, L, L] (PER_HEAD) or [C, B, L, L] (MEAN), C = n_layers */
	float *scores;	   /* [C, B, Hc, L, L] masked scores (engine/stack.h), when asked */
	float *projections; /* [C, 3, B, Hc, L, D] q, k, v (engine/stack.h), when asked */
	float *head_outputs; /* [C, B, Hc, L, D] (engine/stack.h), when asked */
	float *out;	   /* [B, L, E] */
	float *positions;  /* when want_positions: encoding [L, pos_dim], similarity
			    * [L, L], distance [L, L] (attention_positions_compare) */
	float *scratch;	   /* one item's trimmed tensor, for ragged answers: room for the
			    * largest of [Hc, L, L], [L, L] and [L, E] answered */
	void *ws;
	size_t ws_bytes, plan_bytes, att_n, sc_n, pr_n, ho_n, out_n, scratch_n;
	size_t pos_dim, pos_n; /* attn_stack_position_dim; floats of positions (0 without) */
	double flops;	/* the engine's, and the positions' comparisons */
	double cells;	/* attention scores computed: B H L L per layer run */
};

void stack_job_release(struct stack_job *s);

/* The answered heads: n_heads, or H when all. */
size_t stack_heads(const struct stack_job *s);

/* Sets s->layers to all of the stack's layers (0 .. N - 1). */
int stack_all_layers(struct stack_job *s, struct api_error *err);

/* Checks every item of the job against the context length (where: the
 * input's place, for the message). */
int stack_check_context(const struct stack_job *s, const struct api_where *where,
			struct api_error *err);

/* Whether the checkpoint takes token types (BERT and RoBERTa); when not,
 * fails with a message naming `what` (the field or input) and the family. */
int stack_takes_types(const struct stack_job *s, const char *what, const char *ptr,
		      struct api_error *err);

/* Token types t [B, L] (the job's rectangular tokens, L = Lq) into
 * s->type_ids (a copy), each in [0, type_vocab): else 422 at the
 * element's place in `where`. */
int stack_set_types(struct stack_job *s, const int64_t *t, const struct api_where *where,
		    struct api_error *err);

/* The "type" of a stack's positions: "rope" (llama family) or "learned". */
const char *stack_positions_type(const struct attn_stack *st);

int stack_plan(const struct api_service *svc, const struct api_reply *reply, struct stack_job *s,
	       struct api_error *err);
int stack_run(const struct api_service *svc, struct stack_job *s, struct api_reply *reply,
	      struct api_error *err);

#endif
