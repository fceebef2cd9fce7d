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
#include "engine/checkpoint.h"
#include "common/jsonstr.h"

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
 * and tokens only for a model with an embedding table. The outputs q
 * [B, H, Lq, D], k and v [B, Hkv, Lk, D] and head_outputs [B, H, Lq, D]
 * come only when named. */
static void model_metadata(const struct api_model_entry *e, struct api_reply *reply)
{
	const struct attn_model *m = e->model;
	long long E = (long long)m->E, H = (long long)m->H, Hkv = (long long)m->Hkv;
	long long D = (long long)m->D;
	const long long ble[] = { -1, -1, E }, bl[] = { -1, -1 }, b[] = { -1 };
	const long long bhll[] = { -1, H, -1, -1 }, bll[] = { -1, -1, -1 };
	const long long bhld[] = { -1, H, -1, D }, bkld[] = { -1, Hkv, -1, D };
	struct buf *out = &reply->body;

	buf_puts(out, "{\"name\":");
	jsonstr_put(out, e->name);
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
	tensor_meta(out, 0, "q", V2_FP32, 4, bhld);
	tensor_meta(out, 0, "k", V2_FP32, 4, bkld);
	tensor_meta(out, 0, "v", V2_FP32, 4, bkld);
	tensor_meta(out, 0, "head_outputs", V2_FP32, 4, bhld);
	buf_puts(out, "]}");
	reply->status = 200;
}

/* A checkpoint: token ids (and text, through its tokenizer) in; the last
 * hidden state, each answered layer's attention and (when named) scores, q,
 * k, v (k and v per query head) and head outputs out. Their layers and heads
 * are -1: the parameters "layers" and "heads" choose them (all by default). */
static void checkpoint_metadata(const struct api_model_entry *e, struct api_reply *reply)
{
	const struct attn_model *m = e->model;
	const long long ble[] = { -1, -1, (long long)m->E }, bl[] = { -1, -1 }, b[] = { -1 };
	const long long nbhll[] = { -1, -1, -1, -1, -1 }, nbhld[] = { -1, -1, -1, -1, (long long)m->D };
	struct buf *out = &reply->body;

	buf_puts(out, "{\"name\":");
	jsonstr_put(out, e->name);
	buf_puts(out, ",\"versions\":[\"" V2_MODEL_VERSION "\"],\"platform\":\"attnd\",\"inputs\":[");
	tensor_meta(out, 1, "tokens", V2_INT64, 2, bl);
	if (e->tok != NULL)
		tensor_meta(out, 0, "text", V2_BYTES, 1, b);
	if (e->ckpt->ck->stack.family == ATTN_FAMILY_BERT) /* segments, with tokens */
		tensor_meta(out, 0, "token_type_ids", V2_INT64, 2, bl);
	buf_puts(out, "],\"outputs\":[");
	tensor_meta(out, 1, "output", V2_FP32, 3, ble);
	tensor_meta(out, 0, "attentions", V2_FP32, 5, nbhll);
	tensor_meta(out, 0, "scores", V2_FP32, 5, nbhll);
	tensor_meta(out, 0, "q", V2_FP32, 5, nbhld);
	tensor_meta(out, 0, "k", V2_FP32, 5, nbhld);
	tensor_meta(out, 0, "v", V2_FP32, 5, nbhld);
	tensor_meta(out, 0, "head_outputs", V2_FP32, 5, nbhld);
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
		if (e->ckpt != NULL)
			checkpoint_metadata(e, reply);
		else
			model_metadata(e, reply);
		return;
	}
	/* a draining server refuses inference: no model of it is ready then */
	buf_puts(&reply->body, "{\"name\":");
	jsonstr_put(&reply->body, e->name);
	buf_puts(&reply->body, call->draining ? ",\"ready\":false}" : ",\"ready\":true}");
	reply->status = call->draining ? 503 : 200;
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
		api_fail(&err, API_E_NOT_FOUND, "", "no such route");
		v2_reply_error(reply, &err);
		break;
	}
	if (reply->body.failed) {
		api_fail(&err, API_E_RESPONSE_TOO_LARGE, "",
			 "the answer exceeds the response limit; ask for fewer outputs");
		v2_reply_error(reply, &err);
	}
}
