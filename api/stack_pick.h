/*
 * stack_pick.h: which layers and heads a checkpoint request answers, read
 * from /v1's "layers" and "heads" fields or /v2's parameters of those names.
 * Internal to api/.
 *
 * Layers: "all" (the default, when v is NULL), "last", or a list of
 * indices; heads: a list of indices (NULL: all). An index is an integer in
 * [-n, n), negatives counted from the end as Python counts them; each at
 * most once; answered in ascending order.
 *
 * A list is a JSON array of integers; with `scalars` (the Open Inference
 * Protocol, whose parameters are strings, numbers and booleans only) also
 * one integer, or a string of comma-separated integers ("0, 2, -1").
 *
 * Ownership: sets s->layers / s->heads, arrays the stack job owns
 * (stack_job_release frees them). ptr is v's place, for the errors.
 */
#ifndef API_STACK_PICK_H
#define API_STACK_PICK_H

#include <jansson.h>

#include "api/error.h"
#include "api/stack_job.h"

int stack_pick_layers(struct stack_job *s, const json_t *v, const char *ptr, int scalars,
		      struct api_error *err);

int stack_pick_heads(struct stack_job *s, const json_t *v, const char *ptr, int scalars,
		     struct api_error *err);

#endif
