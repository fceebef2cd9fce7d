/*
 * v2_reply.c: what every v2 handler calls back: datatype names, the model of
 * a call's path, and the protocol's error body (see v2.h). Below the
 * dispatcher (v2.c) and the handlers (v2_infer.c, v2_tensor.c), so that none
 * of them calls up.
 */
#include "v2.h"

#include <stdio.h>
#include <string.h>

#include "common/jsonstr.h"

const char *v2_dtype_name(enum v2_dtype d)
{
	static const char *const names[V2_DTYPE_COUNT] = { "FP32", "INT32", "INT64", "BYTES" };

	return (unsigned)d < V2_DTYPE_COUNT ? names[d] : "?";
}

enum v2_dtype v2_dtype_of(const char *name)
{
	int d = 0;

	while (name != NULL && d < V2_DTYPE_COUNT &&
	       strcmp(name, v2_dtype_name((enum v2_dtype)d)) != 0)
		d++;
	return name != NULL ? (enum v2_dtype)d : V2_DTYPE_COUNT;
}

void api_v2_error_body(const char *message, struct buf *out)
{
	buf_puts(out, "{\"error\":");
	jsonstr_put(out, message);
	buf_putc(out, '}');
}

void v2_reply_error(struct api_reply *reply, const struct api_error *err)
{
	char message[sizeof(err->message) + sizeof(err->pointer) + 8];

	/* the protocol's body has no place of its own for the pointer */
	if (err->pointer[0] != '\0')
		snprintf(message, sizeof(message), "%s (at %s)", err->message, err->pointer);
	else
		snprintf(message, sizeof(message), "%s", err->message);
	buf_reset(&reply->body);
	api_v2_error_body(message, &reply->body);
	reply->status = err->status; /* the kind's, as /v1 answers it */
	reply->error_code = err->code;
	reply->content_type = "application/json";
	reply->inference_header_len = 0;
}

const struct api_model_entry *v2_model(const struct api_service *svc,
				       const struct api_v2_call *call, struct api_error *err)
{
	const char *name = call->model ? call->model : "";
	const struct api_model_entry *e = registry_find(svc, name);

	if (e == NULL) {
		api_fail(err, API_E_MODEL_NOT_FOUND, "", "no model named '%s'", name);
		return NULL;
	}
	if (call->version != NULL && strcmp(call->version, V2_MODEL_VERSION) != 0) {
		api_fail(err, API_E_MODEL_NOT_FOUND, "", "model '%s' has no version '%s' (only '%s')",
			 name, call->version, V2_MODEL_VERSION);
		return NULL;
	}
	return e;
}
