/* attention_job.c: a job's lifetime and its engine errors (see attention_job.h). */
#include "api/attention_job.h"

#include <stdlib.h>
#include <string.h>

void attention_job_release(struct attention_job *job)
{
	attn_model_free(job->inline_model);
	api_tensor_release(&job->inline_spec.w_qkv);
	api_tensor_release(&job->inline_spec.b_qkv);
	api_tensor_release(&job->inline_spec.w_o);
	api_tensor_release(&job->inline_spec.b_o);
	api_tensor_release(&job->inline_spec.embed);
	free(job->query);
	api_tensor_release(&job->key);
	api_tensor_release(&job->value);
	free(job->q_len);
	free(job->k_len);
	free((void *)job->tokens);
	free(job->token_ids);
	free(job->tok_store);
	free(job->offsets);
	free(job->kv_lengths);
	api_tensor_release(&job->user_mask);
	free(job->allow);
	free(job->q_positions);
	free(job->k_positions);
	memset(job, 0, sizeof(*job));
}

/* The engine's field the rows of projection `which` (q, k or v) came from:
 * the key and value inputs when the request gave them, else the query's
 * (the embeddings, or the model's rows for tokens and text). */
static const char *projection_source(const struct attention_job *job, char which)
{
	if (which == 'v' && job->value.data != NULL)
		return "value";
	if (which != 'q' && job->key.data != NULL)
		return "key";
	return job->token_ids != NULL ? "model" : "query";
}

/* Scores or outputs that overflowed on a token or text request: the engine
 * names the query, which is the model's rows here. With a key given, the
 * key the client sent, as the engine says; else the model's weights. */
static int token_result_overflow(const struct attention_job *job, const struct attn_error *aerr,
				 struct api_error *err)
{
	if (job->key.data != NULL)
		return api_fail(err, API_E_RESULT_OVERFLOW,
				api_engine_where(job->engine_fields, job->n_engine_fields, "key"),
				"%s", aerr->message);
	return api_fail(err, API_E_RESULT_OVERFLOW,
			api_engine_where(job->engine_fields, job->n_engine_fields, "model"),
			"the output of batch item %zu, query %zu overflows float32: the "
			"model's weights are too large for these tokens",
			job->Lq ? aerr->index / job->Lq : 0, job->Lq ? aerr->index % job->Lq : 0);
}

/* An overflow of finite values, pointed at what the client can change: the
 * input a projection was made from (scale it down), or, for rows of the
 * model's own table (tokens, text), the model. An output row that overflows
 * (scores q . k, or W_O) is the query's when it came from embeddings, as the
 * engine names it; from tokens, token_result_overflow's. */
int attention_engine_error(const struct attention_job *job, const struct attn_error *aerr,
			   struct api_error *err)
{
	const char *what, *from, *where;

	if (aerr->status == ATTN_ERR_RESULT_OVERFLOW && job->token_ids != NULL &&
	    aerr->field != NULL && strcmp(aerr->field, "query") == 0)
		return token_result_overflow(job, aerr, err);
	if (aerr->status != ATTN_ERR_NONFINITE || aerr->field == NULL || strlen(aerr->field) != 1)
		return api_engine_fail(err, aerr, job->engine_fields, job->n_engine_fields);
	/* q, k or v: the engine's own projections of finite inputs */
	what = aerr->field[0] == 'q' ? "queries" : aerr->field[0] == 'k' ? "keys" : "values";
	from = projection_source(job, aerr->field[0]);
	where = api_engine_where(job->engine_fields, job->n_engine_fields, from);
	if (strcmp(from, "model") == 0) /* rows of the model's table: nothing to scale down */
		return api_fail(err, API_E_PROJECTION_OVERFLOW, where,
				"the projected %s overflow float32: the model's weights are too large "
				"for these tokens",
				what);
	return api_fail(err, API_E_PROJECTION_OVERFLOW, where,
			"the projected %s overflow float32; scale the inputs down", what);
}
