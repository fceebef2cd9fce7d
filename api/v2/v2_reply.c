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

void api_v2_error_body(const char *message, struct buf *out)
{
	buf_puts(out, "{\"error\":");
	jsonstr_put(out, message);
	buf_putc(out, '}');
}

/* Names an input the way a client wrote it: "/tokens/1/3" is element [1, 3]
 * of the input `tokens` (the v1 decoder's pointers use the input names). */
static void describe_where(const char *ptr, char *out, size_t size)
{
	static const char *const inputs[] = { "embeddings", "tokens", "text", "key", "value" };

	out[0] = '\0';
	if (ptr[0] == '\0')
		return;
	for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		size_t n = strlen(inputs[i]);

		if (strncmp(ptr + 1, inputs[i], n) == 0 && (ptr[n + 1] == '\0' || ptr[n + 1] == '/')) {
			snprintf(out, size, " (input '%s'%s%s)", inputs[i], ptr[n + 1] ? " at " : "",
				 ptr + n + 1);
			return;
		}
	}
	if (strncmp(ptr, "/mask", 5) == 0 || strncmp(ptr, "/positional", 11) == 0)
		snprintf(out, size, " (at /parameters)");
	else
		snprintf(out, size, " (at %s)", ptr);
}

void v2_reply_error(struct api_reply *reply, const struct api_error *err)
{
	char where[sizeof(err->pointer) + 32];
	char message[sizeof(err->message) + sizeof(where)];

	describe_where(err->pointer, where, sizeof(where));
	snprintf(message, sizeof(message), "%s%s", err->message, where);
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
