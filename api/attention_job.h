/*
 * attention_job.h: one attention request (POST /v1/attention, or a v2 infer),
 * typed and ready for the engine. Internal to api/.
 *
 * Each front end reads its wire format into a job: /v1's JSON
 * (v1/v1_decode.c), /v2's JSON and binary tensors (v2/v2_infer.c). What both
 * share takes typed values, never the other's JSON: tokens and texts become
 * the query (attention_query_from_tokens / _text), a mask's fields become
 * struct attn_mask (attention_apply_mask), each with where its value came
 * from, for its errors (api/values.h). attention_run.c plans, builds and
 * runs a job; each front end encodes the answer.
 *
 * Ownership: the job owns every buffer it points to (release with
 * attention_job_release, safe on a zeroed job) except `entry`, which the
 * service owns, and token labels, which point into tok_store, the model's
 * vocabulary, or the front end's parsed request, which must outlive the job.
 */
#ifndef API_ATTENTION_JOB_H
#define API_ATTENTION_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "engine/attention.h"
#include "engine/mha.h"
#include "registry.h"
#include "api/engine_error.h"
#include "api/values.h"

/* An inline model as decoded: its shape, and how its weights are made once
 * the plan allows it (attention_build). */
struct api_inline_model {
	int pending;                  /* decoded, its weights not yet made */
	struct attn_model_config cfg;
	uint64_t seed;                /* when no explicit weights are given */
	struct api_tensor w_qkv, b_qkv, w_o, b_o, embed; /* explicit weights, or empty */
};

/* What a job costs, known before anything large is allocated or built
 * (attention_plan). */
struct attention_plan {
	size_t out_n, w_n, s_n; /* floats of the output, weights and scores */
	size_t scratch_n;       /* floats of one trimmed item, for ragged answers */
	size_t pos_dim;         /* columns of the positions' encoding: E, or D for rope */
	size_t pos_n;           /* floats of the positions: [Lq, pos_dim] + 2 [Lq, Lq] */
	size_t q_n, kv_n;       /* floats of the projections shown: q [B, H, Lq, D],
				 * k and v [B, Hkv, Lk, D] each; 0 when not asked */
	size_t ho_n;            /* floats of the head outputs [B, H, Lq, D], or 0 */
	size_t ws_bytes;        /* the engine's workspace on the reply's own threads */
	size_t bytes;           /* all the job needs, ws_bytes included */
	double flops;           /* the engine's FLOPs (the answer's usage) */
	double scores;          /* attention scores B H Lq Lk */
	int small;              /* answerable on the I/O thread (service.h) */
};

struct attention_job {
	const struct api_model_entry *entry; /* a named model, or NULL */
	struct attn_model *inline_model;     /* an inline model once built, or NULL */
	struct api_inline_model inline_spec;
	struct attn_model shape;             /* an inline model's shape until it is built */
	const struct attn_model *model;      /* the one in use */
	const char *model_name;

	size_t B, Lq, Lk;
	int batched;       /* the input had a batch axis: answers keep it */
	float *query;      /* [B, Lq, E], padded; from token_ids at attention_build */
	struct api_tensor key, value; /* [B, Lk, E] or empty */
	size_t *q_len;     /* [B] each item's own query length */
	size_t *k_len;     /* [B] each item's own key length */
	int ragged;        /* some item is shorter than the padded length */

	const char **tokens; /* [B * Lq] token labels (NULL entries past q_len), or NULL */
	int64_t *token_ids;  /* [B * Lq] rows of the embedding table, or NULL */
	char *tok_store;     /* storage of split text, or of a tokenizer's labels */
	/* text through the entry's tokenizer: [B * Lq * 2] each token's start and
	 * end in code points of its text, or NULL (the answer then has no
	 * token_ids and offsets) */
	size_t *offsets;
	size_t max_text_bytes; /* longest text, tokenized or split (0: no limit) */

	struct attn_mask mask;
	size_t *kv_lengths;  /* [B] */
	struct api_tensor user_mask;
	uint8_t *allow;      /* the boolean mask as bytes */
	struct attn_positional pos;
	double *q_positions, *k_positions;
	float scale, softcap;
	int positions;       /* the answer shows the encoding itself (sinusoidal, rope) */
	int projections;     /* the answer shows q, k, v per head (engine/mha.h) */
	int head_outputs;    /* the answer shows each head's output (engine/mha.h) */

	enum attn_weights_mode weights_mode;
	enum attn_scores_view scores_view;
	enum api_encoding encoding;
	int precision;

	/* where the engine's fields ("query", "attn_mask", ...) came from in
	 * this front end's request (attention_engine_error) */
	const struct api_field_where *engine_fields;
	size_t n_engine_fields;
};

void attention_job_release(struct attention_job *job);

/* ---- what the front ends share (attention_inputs.c) ---------------------- */

/* A token as a front end read it: a string (its bytes, NUL-terminated,
 * borrowed) or an id (str NULL). */
struct api_token {
	const char *str;
	size_t len;
	int64_t id;
};

/*
 * The query from B items of tokens, item b the len[b] tokens after the
 * previous items' in tok: ids (in [0, vocab)) or strings (through the
 * model's vocabulary, or its hash), whose rows of the embedding table
 * attention_build copies. Sets B, Lq, batched, ragged, q_len, tokens and
 * token_ids; job->model, entry and model_name must be set. Refuses before
 * allocating when [B, Lq, E] alone passes `limit` bytes.
 */
int attention_query_from_tokens(struct attention_job *job, const struct api_token *tok,
				const size_t *len, size_t B, int batched,
				const struct api_where *where, size_t limit, struct api_error *err);

/* The same from B texts (NUL-terminated). With a tokenizer (job->entry's),
 * each text is tokenized by it, special tokens added, and each token is
 * labelled as a person reads it (tok_display: "Ġthe" as " the"), with its
 * offsets; a token id past the model's embedding table is refused naming
 * the text and the token. Without one, each is split on Unicode whitespace
 * into word tokens (kept in job->tok_store). Either way a text over
 * job->max_text_bytes is refused naming the text. */
int attention_query_from_text(struct attention_job *job, const char *const *text, size_t B,
			      int batched, const struct api_where *where, size_t limit,
			      struct api_error *err);

/* Self-attention: the keys are the query's rows (Lk = Lq, k_len = q_len). */
int attention_self_keys(struct attention_job *job, struct api_error *err);

/* The typed fields of a mask that every front end has. */
struct api_mask_spec {
	int causal;
	int bottom_right;      /* causal aligned bottom-right; else the window's rows */
	size_t window;         /* 0: none */
	const int64_t *lengths; /* [n_lengths] key lengths in [0, Lk], or NULL */
	size_t n_lengths;
	const char *where_lengths;
};

/* Sets job->mask from spec (after the inputs fixed B, Lq, Lk and the item
 * lengths): causal, alignment, window, and the key lengths of each item
 * (padded items' own, capped by spec->lengths). */
int attention_apply_mask(struct attention_job *job, const struct api_mask_spec *spec,
			 struct api_error *err);

/* What one forward pass produces; the caller owns it (attention_out_release,
 * safe on a zeroed struct). */
struct attention_out {
	float *out;     /* [B, Lq, E] */
	float *weights; /* [B, H, Lq, Lk] or [B, Lq, Lk] */
	float *scores;  /* [B, H, Lq, Lk] */
	float *scratch; /* one item's trimmed [H, Lq, Lk] (or [Hkv, Lk, D]) when ragged */
	/* when job->projections: q [B, H, Lq, D], k and v [B, Hkv, Lk, D], one
	 * allocation (q's) laid out by alloc_outputs; else NULL */
	float *q, *k, *v;
	float *head_outputs; /* when job->head_outputs: [B, H, Lq, D]; else NULL */
	/* when job->positions: encoding [Lq, pos_dim], then similarity [Lq, Lq],
	 * then distance [Lq, Lq] (attention_positions) */
	float *positions;
	void *ws;
	size_t ws_bytes;
};

/*
 * The steps after decoding (attention_run.c), each -1 with err set on failure:
 *   attention_plan   the engine's workspace, the memory of inputs, outputs and
 *                    answer text, and the work, checked against the service's
 *                    limits, and whether the job is small (service.h); nothing
 *                    large is allocated or built before it
 *   attention_build  an inline model's weights, the query's embedding rows
 *   attention_run    allocates o (zeroed by the caller; release it either way)
 *                    and runs the forward pass, on threads lent for the
 *                    call's work when the reply has a lender (service.h);
 *                    sets reply->compute_ms, flops
 */
int attention_plan(const struct api_service *svc, struct attention_job *job,
		   const struct api_reply *reply, struct attention_plan *plan,
		   struct api_error *err);
int attention_build(struct attention_job *job, struct api_error *err);

/* The bytes an inline model's weights take ([(H + 2 Hkv) D, E] and its bias,
 * [E, E] and its bias, the embedding table [vocab, E]); SIZE_MAX past size_t. */
size_t attention_inline_bytes(const struct attn_model_config *cfg, size_t D);
int attention_run(const struct api_service *svc, struct attention_job *job,
		  const struct attention_plan *plan, struct attention_out *o,
		  struct api_reply *reply, struct api_error *err);
void attention_out_release(struct attention_out *o);

/*
 * The positional encoding itself, for a job with positions (attention_positions.c):
 * into x, plan->pos_n floats, the encoding [Lq, dim] and the dot products
 * [Lq, Lq] and Euclidean distances [Lq, Lq] of its rows. sinusoidal: what
 * the engine adds to each query row (dim E); rope: a unit vector, every
 * entry 1 / sqrt(D), rotated as one head's query is at each position (dim
 * D). The engine's own functions make the encoding; nothing is allocated.
 */
void attention_positions(const struct attention_job *job, const struct attention_plan *plan,
			 float *x);

/* The dot products [L, L] and distances [L, L] of the rows of the encoding
 * x [L, dim], written after it into x (attention_positions_floats(L, dim)
 * floats in all): what attention_positions does after the encoding, for an
 * encoding made elsewhere (a checkpoint's, api/stack_run.c). */
void attention_positions_compare(float *x, size_t L, size_t dim);

/* The floats of the positions of L rows of dim columns: [L, dim] + 2 [L, L];
 * -1 past size_t. */
int attention_positions_floats(size_t L, size_t dim, size_t *n);

/* The columns and floats of a job's positions (0, 0 without); -1 past size_t. */
int attention_positions_size(const struct attention_job *job, size_t *dim, size_t *n);

/* The work of the positions of L rows of dim columns, in FLOPs (usage). */
double attention_positions_flops(size_t L, size_t dim);

/* The most query positions "positions" shows: its comparisons take L^2 dim
 * plain double operations (about a second at 1024 rows of 512), and a
 * learner looks at far fewer. */
enum { API_POSITIONS_MAX_L = 1024 };

/* An engine failure as an API error, with the place of its field in the
 * job's request (job->engine_fields); returns -1. */
int attention_engine_error(const struct attention_job *job, const struct attn_error *aerr,
			   struct api_error *err);

#endif
