/*
 * v2.h: the Open Inference Protocol (KServe v2, Triton's HTTP/REST API)
 * inside api/. Internal to api/; the server sees api_handle_v2 (service.h).
 *
 *   v2.c         dispatch, server and model metadata, health
 *   v2_reply.c   what the handlers call back: datatype names, the model of
 *                the path, error bodies
 *   v2_tensor.c  one input tensor: JSON `data` (flat or nested, row-major) or
 *                bytes of the binary section (Triton's binary tensor extension)
 *   v2_infer.c   POST .../infer: the request read, and the handler
 *   v2_build.c   its inputs onto an attention job (the typed job
 *                /v1/attention decodes into, api/attention_job.h) or a
 *                checkpoint's stack job
 *   v2_answer.c  planned and run (api/attention_run.c), the outputs as JSON
 *                or binary (v2_job.h: the state the three share)
 *
 * Ownership: a struct v2_input owns its f32 / i64 arrays and its reference to
 * `strings` (v2_input_release, safe on a zeroed or released input); `name`
 * is borrowed from the request's JSON, which must outlive the input.
 */
#ifndef API_V2_H
#define API_V2_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/registry.h"
#include "api/service.h"
#include "api/json/json_tensor.h"

enum v2_dtype { V2_FP32 = 0, V2_INT32, V2_INT64, V2_BYTES, V2_DTYPE_COUNT };

/* The protocol's name of a datatype ("FP32", ...). */
const char *v2_dtype_name(enum v2_dtype d);

/* The datatype named name (NULL accepted), or V2_DTYPE_COUNT for none. */
enum v2_dtype v2_dtype_of(const char *name);

struct v2_input {
	const char *name;
	enum v2_dtype dtype;
	size_t rank;
	size_t shape[API_MAX_RANK]; /* outermost first */
	size_t n;		    /* product of the shape */
	float *f32;		    /* FP32: [n] */
	int64_t *i64;		    /* INT32, INT64: [n] */
	json_t *strings;	    /* BYTES: an array of n strings */
	/* where the input came from: /inputs/<i>/data, its elements by flat
	 * index, when data was flat JSON; else /inputs/<i> (a copy may move:
	 * make a struct api_where of these where it is used) */
	char where_base[API_PTR_MAX];
	enum api_where_elems where_elems;
};

/* The binary section of a request (after the JSON header), taken in input order. */
struct v2_binary {
	const unsigned char *p;
	size_t left;
};

/*
 * Reads inputs[index] (`in`, at JSON pointer /inputs/<index>): name, datatype,
 * shape (rank 1 to 4) and its elements, either from `data` or, with
 * parameters.binary_data_size S, from the next S bytes of bin (which then
 * advances). max_bytes bounds the elements' memory before it is allocated.
 * Returns 0, or -1 with err set (400-class, pointer into the request); out
 * is then released.
 */
int v2_input_read(json_t *in, size_t index, struct v2_binary *bin, size_t max_bytes,
		  struct v2_input *out, struct api_error *err);
void v2_input_release(struct v2_input *t);

/* The model of the call's {name} and {version} ("1" is every model's one
 * version), or NULL with err set (404). */
const struct api_model_entry *v2_model(const struct api_service *svc,
				       const struct api_v2_call *call, struct api_error *err);

/* POST /v2/models/{name}[/versions/{version}]/infer (v2_infer.c). */
void v2_infer(const struct api_service *svc, const struct api_v2_call *call, const char *body,
	      size_t len, struct api_reply *reply);

/*
 * Replaces the reply's body with {"error": "message (where)"}, the protocol's
 * error body, under the status of the error's kind (the one /v1 answers).
 */
void v2_reply_error(struct api_reply *reply, const struct api_error *err);

/* The version every model has: attnd loads each model once. */
#define V2_MODEL_VERSION "1"

#endif
