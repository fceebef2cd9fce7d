/*
 * v1.h: POST /v1/attention's JSON, read into an attention job. Internal to
 * api/v1/.
 *
 *   v1_decode.c     the body: inputs (embeddings, tokens, text), key, value,
 *                   the output options; the order of the steps
 *   v1_options.c    "model" (a name, or an inline model), "mask", "positional",
 *                   and what /v1/sdpa reads alike (the answer's options, a
 *                   boolean mask's bytes)
 *   v1_attention.c  the handler: decode, run (api/attention_run.c), encode
 *
 * Ownership: a struct v1_body owns the parsed JSON (v1_body_release, safe on
 * a zeroed body); a job decoded from it borrows its strings, so the body is
 * released after the job.
 */
#ifndef API_V1_H
#define API_V1_H

#include <jansson.h>
#include <stddef.h>

#include "api/attention_job.h"
#include "api/json/fastjson.h"
#include "api/json/json_read.h"
#include "api/json/json_tensor.h"

struct v1_body {
	json_t *root;
	struct req_members top; /* root's members, borrowed from root */
	/* rows of root's large number arrays; a tensor read may take its values
	 * (api_tensor_read_pool), so the decoders take in without const */
	struct fastjson_pool numbers;
};

void v1_body_release(struct v1_body *in);

/* Whether field `key` holds its documented default (openapi.yaml), which a
 * model of the other kind accepts: it asks for nothing that model lacks. A
 * client that fills in every default then works on both kinds. */
int v1_is_default(const char *key, const json_t *v);

/* Decodes body into in and job (both zeroed first): cheap steps only, nothing
 * built that the plan has not allowed (attention_job.h). Returns 0, or -1
 * with err set, or 1 when the model is a checkpoint: in and job are then
 * decoded as far as job->entry, for v1_stack_attention. */
int v1_decode(const struct api_service *svc, const char *body, size_t len, struct v1_body *in,
	      struct attention_job *job, struct api_error *err);

/* Checks that root has exactly one of the fields names (NULL-ended, at most
 * four, in the order a message says them; note follows the list). Returns 0,
 * or -1 with err an invalid_input that says which were sent and points at the
 * second one found ("" when none was). */
int v1_one_input(const struct req_members *top, const char *const *names, const char *note,
		 struct api_error *err);

/* "tokens" (ids or strings, or a batch of them) and "text" (a string or a
 * batch), as the query of job (attention_inputs.c); limit: request bytes. */
int v1_decode_tokens(struct attention_job *job, const json_t *v, size_t limit,
		     struct api_error *err);
int v1_decode_text(struct attention_job *job, const json_t *v, size_t limit,
		   struct api_error *err);

/* Reads the "model" field: a name, or an inline model object. */
int v1_decode_model(const struct api_service *svc, struct v1_body *in, struct attention_job *job,
		    struct api_error *err);

/* Reads "mask" into job->mask (after the inputs fixed B, Lq, Lk). */
int v1_decode_mask(struct v1_body *in, struct attention_job *job, struct api_error *err);

/* Reads "positional" into job->pos. */
int v1_decode_positional(const struct v1_body *in, struct attention_job *job,
			 struct api_error *err);

/* Reads "positions" (a boolean, default false) after "positional": whether
 * the answer shows the encoding itself, refused for types with none. */
int v1_decode_show_positions(const struct v1_body *in, struct attention_job *job,
			     struct api_error *err);

/* The options of an answer, alike in /v1/attention and /v1/sdpa. */
struct v1_outputs {
	float scale, softcap;
	enum attn_weights_mode weights;
	enum attn_scores_view scores;
	enum api_encoding encoding;
	int precision;
};

/* Reads scale, softcap, weights (absent: default_weights), scores, encoding
 * and precision from the top of a /v1 body. */
int v1_decode_outputs(const struct req_members *top, enum attn_weights_mode default_weights,
		      struct v1_outputs *o, struct api_error *err);

/* A boolean mask read as 0.0 / 1.0 floats, as bytes (the engine's form):
 * a new array of t->n bytes in *out, the caller's to free. */
int v1_mask_bytes(const struct api_tensor *t, uint8_t **out, struct api_error *err);

/* The answer's "tokens" (and "token_ids", "offsets" for a tokenizer's). */
void v1_write_tokens(struct buf *b, const struct attention_job *job);

/*
 * Writes a [B, heads, Lq, cols] tensor (heads == 0: [B, Lq, cols]) as the
 * request's shape asks: one tensor, unbatched, or one trimmed tensor per item
 * (rows q_len[b], columns k_len[b] or all cols when k_len is NULL), through
 * scratch (one item's trimmed tensor, [heads, q_len[b], cols] at most) when
 * ragged.
 */
int v1_write_batched(struct api_writer *w, const struct attention_job *job, const float *x,
		     size_t heads, size_t cols, const size_t *k_len, float *scratch);

/* An axis of a batched tensor: n long, item b's own part len[b] (len NULL:
 * every item is n long). */
struct v1_items {
	size_t n;
	const size_t *len;
};

/* The same for a [B, heads, rows.n, cols.n] tensor whose rows are not the
 * query's (k and v: the keys'), each item trimmed to [heads, rows.len[b],
 * cols.len[b]]. rows.len is required. */
int v1_write_items(struct api_writer *w, const struct attention_job *job, const float *x,
		   size_t heads, struct v1_items rows, struct v1_items cols, float *scratch);

/* "positions": {"type", "encoding" [L, dim], "similarity" [L, L], "distance"
 * [L, L]}, preceded by a comma, from x as attention_positions lays it out
 * (the encoding, then the two comparisons). */
int v1_write_positions(struct api_writer *w, const char *type, const float *x, size_t L,
		       size_t dim);

/* "positions" asked for Lq query positions, on a layer or a checkpoint
 * (v1_stack.c): 0, or -1 (422 at /positions) past API_POSITIONS_MAX_L. */
int v1_positions_cap(size_t Lq, struct api_error *err);

/* POST /v1/attention on a checkpoint model (v1_stack.c): in is decoded as
 * far as job's model (job->entry->ckpt); answers into reply. */
void v1_stack_attention(const struct api_service *svc, struct v1_body *in,
			struct attention_job *job, struct api_reply *reply);

/* Where the engine's fields come from in a /v1/attention body. */
extern const struct api_field_where v1_engine_fields[];
extern const size_t v1_engine_field_count;

#endif
