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

int attention_engine_error(const struct attention_job *job, const struct attn_error *aerr,
			   struct api_error *err)
{
	const char *what;

	if (aerr->status != ATTN_ERR_NONFINITE || aerr->field == NULL || strlen(aerr->field) != 1)
		return api_engine_fail(err, aerr, job->engine_fields, job->n_engine_fields);
	/* q, k or v: the engine's own projections of finite inputs */
	what = aerr->field[0] == 'q' ? "queries" : aerr->field[0] == 'k' ? "keys" : "values";
	if (job->token_ids != NULL) /* rows of the model's table: nothing to scale down */
		return api_fail(err, API_E_PROJECTION_OVERFLOW,
				api_engine_where(job->engine_fields, job->n_engine_fields, "model"),
				"the projected %s overflow float32: the model's weights are too large "
				"for these tokens",
				what);
	return api_fail(err, API_E_PROJECTION_OVERFLOW,
			api_engine_where(job->engine_fields, job->n_engine_fields, "query"),
			"the projected %s overflow float32; scale the inputs down", what);
}
