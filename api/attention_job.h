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

#include "attention.h"
#include "mha.h"
#include "registry.h"
#include "tensor.h"

struct attention_job {
	json_t *root;
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

/* Decodes body into job (zeroed first). Returns 0, or -1 with err set. */
int attention_decode(const struct api_service *svc, const char *body, size_t len,
		     struct attention_job *job, struct api_error *err);

void attention_job_release(struct attention_job *job);

/* Reads the "model" field: a name, or an inline model object. */
int attention_decode_model(const struct api_service *svc, struct attention_job *job,
			   struct api_error *err);

/* Reads "mask" into job->mask (after the inputs fixed B, Lq, Lk). */
int attention_decode_mask(struct attention_job *job, struct api_error *err);

/* Reads "positional" into job->pos. */
int attention_decode_positional(struct attention_job *job, struct api_error *err);

/* Maps an engine failure to an API error with the pointer of its field. */
int api_engine_error(const struct attn_error *aerr, struct api_error *err);

#endif
