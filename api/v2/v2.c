/*
 * v2.c: the Open Inference Protocol's routes other than infer, its error body
 * and the dispatch (see v2.h). Bodies, after the protocol's REST API
 * (kserve.github.io, "Open Inference Protocol (V2 Inference Protocol)"):
 *   GET /v2                       {"name", "version", "extensions"}
 *   GET /v2/health/live           {"live": true}
 *   GET /v2/health/ready          {"ready": true}, or 503 {"ready": false}
 *   GET /v2/models/{name}         {"name", "versions", "platform", "inputs", "outputs"}
 *   GET /v2/models/{name}/ready   {"name", "ready": true}
 * and every error {"error": "message"}.
 */
#include "v2.h"

#include <stdio.h>
#include <string.h>

#include "api/version.h"

const char *v2_dtype_name(enum v2_dtype d)
{
	static const char *const names[V2_DTYPE_COUNT] = { "FP32", "INT32", "INT64", "BYTES" };

	return (unsigned)d < V2_DTYPE_COUNT ? names[d] : "?";
}

void api_v2_error_body(const char *message, struct buf *out)
{
	buf_puts(out, "{\"error\":");
	api_json_string(out, message);
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
	reply->status = err->status == 404 || err->status >= 500 ? err->status : 400;
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
		api_fail(err, 404, "model_not_found", "", "no model named '%s'", name);
		return NULL;
	}
	if (call->version != NULL && strcmp(call->version, V2_MODEL_VERSION) != 0) {
		api_fail(err, 404, "model_not_found", "", "model '%s' has no version '%s' (only '%s')",
			 name, call->version, V2_MODEL_VERSION);
		return NULL;
	}
	return e;
}

static void server_metadata(struct api_reply *reply)
{
	buf_puts(&reply->body, "{\"name\":\"attnd\",\"version\":\"" ATTND_VERSION
			       "\",\"extensions\":[\"binary_tensor_data\"]}");
	reply->status = 200;
}

static void server_ready(const struct api_service *svc, const struct api_v2_call *call,
			 struct api_reply *reply)
{
	int ready = !call->draining && api_service_model_count(svc) > 0;

	buf_puts(&reply->body, ready ? "{\"ready\":true}" : "{\"ready\":false}");
	reply->status = ready ? 200 : 503;
}

/* One {"name", "datatype", "shape"} of the metadata, after a comma unless
 * first; -1 is a variable dimension. */
static void tensor_meta(struct buf *b, int first, const char *name, enum v2_dtype d,
			size_t rank, const long long *shape)
{
	buf_printf(b, "%s{\"name\":\"%s\",\"datatype\":\"%s\",\"shape\":[", first ? "" : ",",
		   name, v2_dtype_name(d));
	for (size_t i = 0; i < rank; i++)
		buf_printf(b, "%s%lld", i ? "," : "", shape[i]);
	buf_puts(b, "]}");
}

/* Inputs as batches (embeddings [L, E] and tokens [L] are taken too); text
 * and tokens only for a model with an embedding table. */
static void model_metadata(const struct api_model_entry *e, struct api_reply *reply)
{
	const struct attn_model *m = e->model;
	long long E = (long long)m->E, H = (long long)m->H;
	const long long ble[] = { -1, -1, E }, bl[] = { -1, -1 }, b[] = { -1 };
	const long long bhll[] = { -1, H, -1, -1 }, bll[] = { -1, -1, -1 };
	struct buf *out = &reply->body;

	buf_puts(out, "{\"name\":");
	api_json_string(out, e->name);
	buf_puts(out, ",\"versions\":[\"" V2_MODEL_VERSION "\"],\"platform\":\"attnd\",\"inputs\":[");
	tensor_meta(out, 1, "embeddings", V2_FP32, 3, ble);
	if (m->embed != NULL) {
		tensor_meta(out, 0, "tokens", V2_INT64, 2, bl);
		tensor_meta(out, 0, "text", V2_BYTES, 1, b);
	}
	tensor_meta(out, 0, "key", V2_FP32, 3, ble);
	tensor_meta(out, 0, "value", V2_FP32, 3, ble);
	buf_puts(out, "],\"outputs\":[");
	tensor_meta(out, 1, "output", V2_FP32, 3, ble);
	tensor_meta(out, 0, "weights", V2_FP32, 4, bhll);
	tensor_meta(out, 0, "weights_mean", V2_FP32, 3, bll);
	buf_puts(out, "]}");
	reply->status = 200;
}

static void model_route(const struct api_service *svc, enum api_route route,
			const struct api_v2_call *call, struct api_reply *reply)
{
	struct api_error err;
	const struct api_model_entry *e = v2_model(svc, call, &err);

	if (e == NULL) {
		v2_reply_error(reply, &err);
		return;
	}
	if (route == API_ROUTE_V2_MODEL) {
		model_metadata(e, reply);
		return;
	}
	buf_puts(&reply->body, "{\"name\":");
	api_json_string(&reply->body, e->name);
	buf_puts(&reply->body, ",\"ready\":true}");
	reply->status = 200;
}

void api_handle_v2(const struct api_service *svc, enum api_route route,
		   const struct api_v2_call *call, const char *body, size_t len,
		   struct api_reply *reply)
{
	struct api_error err;

	switch (route) {
	case API_ROUTE_V2_SERVER:
		server_metadata(reply);
		break;
	case API_ROUTE_V2_LIVE:
		buf_puts(&reply->body, "{\"live\":true}");
		reply->status = 200;
		break;
	case API_ROUTE_V2_READY:
		server_ready(svc, call, reply);
		break;
	case API_ROUTE_V2_MODEL:
	case API_ROUTE_V2_MODEL_READY:
		model_route(svc, route, call, reply);
		break;
	case API_ROUTE_V2_INFER:
		v2_infer(svc, call, body, len, reply);
		break;
	default:
		api_fail(&err, 404, "not_found", "", "no such route");
		v2_reply_error(reply, &err);
		break;
	}
	if (reply->body.failed) {
		api_fail(&err, 422, "response_too_large", "",
			 "the answer exceeds the response limit; ask for fewer outputs");
		v2_reply_error(reply, &err);
	}
}
