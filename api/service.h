/*
 * service.h: the API layer as the server sees it.
 *
 * The server (server/) owns the transport: it matches a route, enforces
 * methods, media types, body limits, auth and CORS, queues compute requests,
 * and hands the body to api_handle on a worker thread. The API layer owns
 * everything about the JSON contract: decoding, validation, running the
 * engine, encoding, and the error bodies. api/ is the only user of jansson.
 *
 * Ownership: api_service_new returns a service the caller frees with
 * api_service_free (NULL accepted). Models added to it are owned by it from
 * then on. After start-up the service is read-only and shared by every worker.
 * A struct api_reply is owned by the caller: api_reply_init, api_handle,
 * read, api_reply_release.
 */
#ifndef API_SERVICE_H
#define API_SERVICE_H

#include <stddef.h>

#include "buf.h"
#include "error.h"

struct attn_model;
struct api_service;

struct api_limits {
	size_t max_request_bytes;  /* memory one request may need (--max-request-mb) */
	size_t max_response_bytes; /* hard cap on a response body */
	size_t max_inline_d_model; /* largest inline model d_model */
	size_t engine_threads;     /* threads each engine call uses (1 in the server) */
};

enum api_route {
	API_ROUTE_ATTENTION = 0, /* POST /v1/attention */
	API_ROUTE_SDPA,          /* POST /v1/sdpa */
	API_ROUTE_MODELS,        /* GET /v1/models */
	API_ROUTE_MODEL,         /* GET /v1/models/{name}: param = name */
	API_ROUTE_VERSION,       /* GET /version */
	API_ROUTE_OPENAPI,       /* GET /openapi.json */
	API_ROUTE_COUNT
};

struct api_reply {
	int status;
	struct buf body;
	const char *content_type; /* a string literal */
	/* Server-Timing parts in milliseconds (0 when not measured) */
	double parse_ms, compute_ms, encode_ms;
	double flops; /* engine FLOPs of the request, for metrics */
	const char *error_code; /* the error's code, or NULL on success */
};

struct api_service *api_service_new(const struct api_limits *limits);
void api_service_free(struct api_service *svc);

/*
 * Adds a model under `name` (unique, [A-Za-z0-9_.-]{1,64}), taking ownership
 * of model on success and on failure. source describes it ("seed:42",
 * "file:/models/x.safetensors"); vocab, when not NULL, holds model->vocab
 * token strings (copied) used to map string tokens to ids.
 */
int api_service_add_model(struct api_service *svc, const char *name, struct attn_model *model,
			  const char *source, const char *const *vocab, struct api_error *err);

/* Sets the default model by name; -1 if there is no such model. */
int api_service_set_default(struct api_service *svc, const char *name, struct api_error *err);

/* Adds the built-in models `base` (E 512, H 8, vocab 32000) and `tiny`
 * (E 8, H 2, the seeds' demo scale) and makes `base` the default. */
int api_service_add_builtins(struct api_service *svc, struct api_error *err);

/* The number of models (readiness: > 0). */
size_t api_service_model_count(const struct api_service *svc);

void api_reply_init(struct api_reply *reply, size_t max_body);
void api_reply_release(struct api_reply *reply);

/*
 * Answers one request of `route` (body may be NULL for GET routes). Always
 * leaves a complete reply: a 2xx with its JSON, or an error body. Never
 * aborts for anything in the body. Thread-safe for concurrent calls.
 */
void api_handle(const struct api_service *svc, enum api_route route, const char *param,
		const char *body, size_t len, struct api_reply *reply);

#endif
