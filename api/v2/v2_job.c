/*
 * v2_job.c: what the steps of a /v2 infer call share (see v2_job.h): the
 * names of inputs and outputs, and which outputs the call asked for.
 */
#include "v2_job.h"

const char *const v2_role_names[IN_COUNT] = {"embeddings", "tokens", "text",
					     "key",	   "value",  "token_type_ids"};
const char *const v2_out_names[OUT_COUNT] = {
    "output", "weights", "weights_mean", "attentions", "scores", "q", "k", "v", "head_outputs"};

int v2_wants(const struct v2_job *v, enum out_kind k)
{
	for (size_t i = 0; i < v->n_out; i++)
		if (v->order[i] == k)
			return 1;
	return 0;
}
