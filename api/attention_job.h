/*
 * attention_job.h: one POST /v1/attention request, decoded. Internal to api/.
 *
 * attention_decode fills a job from the request JSON (strictly: every field
 * checked, every error with its JSON pointer); attention.c runs the engine on
 * it and encodes the answer. Ownership: the job owns every buffer it points
 * to (release with attention_job_release, safe on a zeroed job) except
 * `entry`, which the service owns, and token strings, which point into
 * tok_store or into `root` (a reference the job holds).
 */
#ifndef API_ATTENTION_JOB_H
#define API_ATTENTION_JOB_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/attention.h"
#include "api/json/fastjson.h"
#include "engine/mha.h"
#include "registry.h"
#include "api/json/json_tensor.h"

struct attention_job {
	int small_only; /* in: decline what is not small (API_SMALL_BODY) */
	int declined;   /* out: small_only, and the request is not small */
	json_t *root;
	struct fastjson_pool numbers; /* rows of root's large number arrays */
	const struct api_model_entry *entry; /* a named model, or NULL */
	struct attn_model *inline_model;     /* an inline model, or NULL */
	const struct attn_model *model;      /* the one in use */
	const char *model_name;

	size_t B, Lq, Lk;
	int batched;       /* the input had a batch axis: answers keep it */
	float *query;      /* [B, Lq, E], padded */
	struct api_tensor key, value; /* [B, Lk, E] or empty */
	size_t *q_len;     /* [B] each item's own query length */
	size_t *k_len;     /* [B] each item's own key length */
	int ragged;        /* some item is shorter than the padded length */

	const char **tokens; /* [B * Lq] token labels (NULL entries past q_len), or NULL */
	int64_t *token_ids;  /* [B * Lq] when tokens were ids without a vocabulary */
	char *tok_store;     /* storage of split text */

	struct attn_mask mask;
	size_t *kv_lengths;  /* [B] */
	struct api_tensor user_mask;
	uint8_t *allow;      /* the boolean mask as bytes */
	struct attn_positional pos;
	double *q_positions, *k_positions;
	float scale, softcap;

	enum attn_weights_mode weights_mode;
	enum attn_scores_view scores_view;
	enum api_encoding encoding;
	int precision;
};

/* Decodes body into job (zeroed first). Returns 0, or -1 with err set, or
 * -1 with job->declined set when small_only and the request is not small. */
int attention_decode(const struct api_service *svc, const char *body, size_t len,
		     int small_only, struct attention_job *job, struct api_error *err);

/* Marks job declined (not small); returns -1 for `return attention_decline(job)`. */
int attention_decline(struct attention_job *job);

void attention_job_release(struct attention_job *job);

/*
 * Reads `v`, the value of "tokens" (is_text 0) or "text" (1), into query,
 * tokens, token_ids, q_len, B, Lq, batched and ragged; job->model, entry and
 * root (an object: it keeps the split items alive) must be set. Refuses
 * before allocating when [B, Lq, E] alone passes `limit` bytes.
 */
int attention_decode_tokens(struct attention_job *job, json_t *v, int is_text, size_t limit,
			    struct api_error *err);

/* Reads the "model" field: a name, or an inline model object. */
int attention_decode_model(const struct api_service *svc, struct attention_job *job,
			   struct api_error *err);

/* Reads "mask" into job->mask (after the inputs fixed B, Lq, Lk). */
int attention_decode_mask(struct attention_job *job, struct api_error *err);

/* Reads "positional" into job->pos. */
int attention_decode_positional(struct attention_job *job, struct api_error *err);

/* What one forward pass produces; the caller owns it (attention_out_release,
 * safe on a zeroed struct). */
struct attention_out {
	float *out;     /* [B, Lq, E] */
	float *weights; /* [B, H, Lq, Lk] or [B, Lq, Lk] */
	float *scores;  /* [B, H, Lq, Lk] */
	float *scratch; /* one item's trimmed [H, Lq, Lk] when ragged */
	void *ws;
	size_t ws_bytes;
};

/*
 * Runs the layer on a decoded job (attention.c): checks the memory it needs
 * against the limit, allocates o (zeroed by the caller) and fills it; sets
 * reply->compute_ms and flops. Returns 0, or -1 with err set (o may hold
 * partial allocations: release it either way), or -1 with job->declined set
 * before anything is allocated when job->small_only and the work is not small.
 */
int attention_run(const struct api_service *svc, struct attention_job *job,
		  struct attention_out *o, struct api_reply *reply, struct api_error *err);
void attention_out_release(struct attention_out *o);

/* Maps an engine failure to an API error with the pointer of its field. */
int api_engine_error(const struct attn_error *aerr, struct api_error *err);

#endif
