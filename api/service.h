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

#include <stdatomic.h>
#include <stddef.h>

#include "common/buf.h"
#include "error.h"

struct attn_model;
struct attn_checkpoint;
struct attn_workers;
struct api_service;
struct tokenizer;

struct api_limits {
	size_t max_request_bytes;  /* memory one request may need (--max-request-mb) */
	size_t max_response_bytes; /* hard cap on a response body */
	size_t max_inline_d_model; /* largest inline model d_model */
	size_t engine_threads;     /* threads each engine call uses (1 in the server) */
	double max_request_gflop;  /* work one request may ask for (api_check_work); 0: none */
	size_t max_text_bytes;     /* longest `text`, tokenized or split (--max-text-bytes); 0: none */
};

enum api_route {
	API_ROUTE_ATTENTION = 0, /* POST /v1/attention */
	API_ROUTE_SDPA,          /* POST /v1/sdpa */
	API_ROUTE_MODELS,        /* GET /v1/models */
	API_ROUTE_MODEL,         /* GET /v1/models/{name}: param = name */
	API_ROUTE_VERSION,       /* GET /version */
	API_ROUTE_OPENAPI,       /* GET /openapi.json */
	API_ROUTE_TOKENIZE,      /* POST /v1/tokenize */
	API_ROUTE_DETOKENIZE,    /* POST /v1/detokenize */
	API_ROUTE_TOKENIZERS,    /* GET /v1/tokenizers */
	/* the Open Inference Protocol (KServe v2), through api_handle_v2 */
	API_ROUTE_V2_SERVER,      /* GET /v2 */
	API_ROUTE_V2_LIVE,        /* GET /v2/health/live */
	API_ROUTE_V2_READY,       /* GET /v2/health/ready */
	API_ROUTE_V2_MODEL,       /* GET /v2/models/{name}[/versions/{version}] */
	API_ROUTE_V2_MODEL_READY, /* GET /v2/models/{name}[/versions/{version}]/ready */
	API_ROUTE_V2_INFER,       /* POST /v2/models/{name}[/versions/{version}]/infer */
	API_ROUTE_COUNT
};

/* Routes answered by api_handle_v2 rather than api_handle. */
static inline int api_route_is_v2(enum api_route route)
{
	return route >= API_ROUTE_V2_SERVER && route < API_ROUTE_COUNT;
}

/*
 * More engine threads for one call, asked for once its plan is known (the
 * server lends the cores of idle workers to a large call). lend gets the
 * call's work (as max_request_gflop counts it, in FLOPs) and returns the
 * threads the call may use, or 0 to lend none; it may set *workers to kept
 * threads of that width. Whatever lend returned is given back with
 * give_back right after the engine call (once per lend that returned
 * non-zero), or at once when the call cannot use it (its workspace on more
 * threads would pass --max-request-mb). Both run on the calling thread.
 */
struct api_lender {
	size_t (*lend)(void *ctx, double work, struct attn_workers **workers);
	void (*give_back)(void *ctx);
	void *ctx;
};

struct api_reply {
	int status;
	struct buf body;
	const char *content_type; /* a string literal */
	/* Server-Timing parts in milliseconds (0 when not measured) */
	double parse_ms, compute_ms, encode_ms;
	double flops; /* engine FLOPs of the request, for metrics */
	const char *error_code; /* the error's code, or NULL on success */
	/* out: the model the request ran on, for the server's per-model metrics:
	 * a loaded model's name (the service's, valid while it lives), "inline"
	 * (a model given in the body) or "sdpa"; NULL when none was resolved. Never
	 * a client's string that names no loaded model. */
	const char *model;
	/* > 0: the body is this many bytes of JSON, then binary tensor data; the
	 * server sends it as the Inference-Header-Content-Length header */
	size_t inference_header_len;
	/* in: the engine threads this call may use (0: the service's
	 * limits.engine_threads) and, when not NULL, threads kept between calls
	 * to run them on (engine/workers.h); the caller owns both */
	size_t threads;
	struct attn_workers *workers;
	/* in: who may lend the call more threads once its plan is known, or NULL */
	const struct api_lender *lender;
	/* in: set by another thread to stop the engine call (engine/cancel.h), or
	 * NULL; a call it stops answers 503 deadline_exceeded. The caller owns it. */
	const atomic_int *cancel;
	int small_only; /* in: answer only a small compute request (api_handle) */
	int declined;   /* out: small_only, and the request was not small */
};

/*
 * A small compute request: a body of at most API_SMALL_BODY bytes, a named
 * model (not an inline one), at most API_SMALL_FLOPS of engine work (as the
 * usage field counts it), API_SMALL_CELLS attention scores (B H Lq Lk, each
 * an exp) and API_SMALL_FLOATS numbers in the answer. Each bound caps a part
 * of its cost (parsing, the engine, the answer's text) so that the whole
 * costs about what handing it to another thread and back costs (the figures
 * are in bench/README.md); the server answers such requests on its I/O
 * thread (server/main.c). "Small" is a property of a request's plan: a
 * request is decoded and planned, never built, before it is found not small
 * and declined.
 */
enum {
	API_SMALL_BODY = 512,
	API_SMALL_FLOPS = 1 << 18,
	API_SMALL_CELLS = 1 << 12,
	API_SMALL_FLOATS = 1 << 10,
};

/*
 * The work of a request, in FLOPs, as api_limits.max_request_gflop bounds it:
 * the engine's FLOPs (the usage field's count) plus API_SCORE_FLOPS for each
 * attention score (B H Lq Lk). The FLOPs alone undercount small heads, whose
 * time goes to each score's exp and softmax instead; with the scores
 * counted, heads of every size run at about the same rate of work
 * (bench/README.md has the rates and what the default limit takes).
 */
enum { API_SCORE_FLOPS = 64 };

/* 0 when flops + API_SCORE_FLOPS * scores is within the limit; else fills err
 * (422 request_too_expensive) and returns -1. */
int api_check_work(const struct api_limits *limits, double flops, double scores,
		   struct api_error *err);

struct api_service *api_service_new(const struct api_limits *limits);
void api_service_free(struct api_service *svc);

/* plain = 1: v1 bodies are read by jansson alone, node by node: large
 * number arrays are not pooled first (api/json/fastjson.h) and the rest is not
 * read by api/json/json_dom.h; answers are the same either way (tests and
 * the fuzz harnesses compare the two). Call before sharing svc. */
void api_service_set_plain_json(struct api_service *svc, int plain);

/* The name an answer gives a model the request itself describes: no added
 * model may take it. */
#define API_INLINE_MODEL "inline"

/*
 * Adds a model under `name` (unique, [A-Za-z0-9_.-]{1,64}, not
 * API_INLINE_MODEL), taking ownership
 * of model on success and on failure. source describes it ("seed:42",
 * "file:/models/x.safetensors"); vocab, when not NULL, holds model->vocab
 * token strings (copied) used to map string tokens to ids.
 */
int api_service_add_model(struct api_service *svc, const char *name, struct attn_model *model,
			  const char *source, const char *const *vocab, struct api_error *err);

/*
 * Adds a tokenizer (api/tokenizer_file.h builds one) under `name` (unique
 * among tokenizers, [A-Za-z0-9_.-]{1,64}), taking ownership of tok on success
 * and on failure. source describes it ("file:/models/tokenizer.json").
 */
/*
 * Adds a whole checkpoint (engine/checkpoint.h) as model `name`, of config
 * model_type ("gpt2", "llama", ...). The service takes ck over, and keep
 * with it: release(keep) runs after ck is freed (keep holds the file bytes
 * ck points into; release may be NULL). On failure both are released.
 */
int api_service_add_checkpoint(struct api_service *svc, const char *name,
			       struct attn_checkpoint *ck, const char *model_type,
			       void (*release)(void *keep), void *keep, const char *source,
			       struct api_error *err);

int api_service_add_tokenizer(struct api_service *svc, const char *name, struct tokenizer *tok,
			      const char *source, struct api_error *err);

/* Gives model `model` the tokenizer named `tokenizer`: its `text` is then
 * tokenized by it. -1 when either is unknown. */
int api_service_set_model_tokenizer(struct api_service *svc, const char *model,
				    const char *tokenizer, struct api_error *err);

/* Adds the built-in tokenizers (api/builtin_tokenizers.h: `gpt2` and
 * `bert`) whose names no tokenizer has yet: one of the same name added
 * first (a --tokenizer, a model folder's tokenizer.json) takes the built-in
 * one's place. */
int api_service_add_builtin_tokenizers(struct api_service *svc, struct api_error *err);

/* Adds the built-in checkpoints (api/builtin_checkpoints.h: `mini`), each
 * with its tokenizer.json as a tokenizer of the model's name, except where a
 * model or tokenizer of that name was added first (it stands in its place). */
int api_service_add_builtin_checkpoints(struct api_service *svc, struct api_error *err);

/* Adds the built-in one-layer models (api/builtin_layers.h: `numpy-demo`),
 * each with its vocabulary, except where a model of that name was added
 * first (it stands in its place). */
int api_service_add_builtin_layers(struct api_service *svc, struct api_error *err);

/* Sets the default model by name; -1 if there is no such model. */
int api_service_set_default(struct api_service *svc, const char *name, struct api_error *err);

/* Adds the built-in models `base` (E 512, H 8, vocab 32000) and `tiny`
 * (E 8, H 2, the scale of the four-word Korean example) and makes `base` the default. */
int api_service_add_builtins(struct api_service *svc, struct api_error *err);

/* The number of models (readiness: > 0). */
size_t api_service_model_count(const struct api_service *svc);

void api_reply_init(struct api_reply *reply, size_t max_body);
void api_reply_release(struct api_reply *reply);

/*
 * Answers one request of `route` (body may be NULL for GET routes). Always
 * leaves a complete reply: a 2xx with its JSON, or an error body. Never
 * aborts for anything in the body. Thread-safe for concurrent calls.
 * With reply->small_only set, a compute request that is not small (see
 * API_SMALL_BODY) is declined as soon as that is known, before any costly
 * step: reply->declined is set and nothing else in reply means anything
 * (release it, and answer the request again without small_only).
 */
void api_handle(const struct api_service *svc, enum api_route route, const char *param,
		const char *body, size_t len, struct api_reply *reply);

/* One request of the v2 family: the path's segments and what the transport knows. */
struct api_v2_call {
	const char *model;	/* {name}, or NULL */
	const char *version;	/* {version}, or NULL when the path has no /versions/ */
	const char *header_len; /* the Inference-Header-Content-Length header, or NULL */
	int draining;		/* the server is shutting down (health/ready: 503) */
};

/*
 * Answers one request of a v2 route (api_route_is_v2) with the Open Inference
 * Protocol's bodies: errors are {"error": "message"}, not api_handle's. With
 * call->header_len the body's first that many bytes are the JSON header and
 * the rest binary tensor data (Triton's binary tensor extension); a reply with
 * binary outputs sets inference_header_len. Same guarantees as api_handle.
 */
void api_handle_v2(const struct api_service *svc, enum api_route route,
		   const struct api_v2_call *call, const char *body, size_t len,
		   struct api_reply *reply);

/* Appends the v2 error body {"error": message} (for the transport's refusals). */
void api_v2_error_body(const char *message, struct buf *out);

#endif
