/* service.c: replies and the route dispatch of the API layer (see service.h). */
#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "openapi.h"
#include "version.h"

static void models_list(const struct api_service *svc, struct api_reply *reply)
{
	struct buf *b = &reply->body;

	buf_puts(b, "{\"models\":[");
	for (size_t i = 0; i < svc->n_models; i++) {
		if (i > 0)
			buf_putc(b, ',');
		registry_describe(svc, &svc->models[i], b);
	}
	buf_puts(b, "]}");
	reply->status = 200;
}

static void model_one(const struct api_service *svc, const char *name, struct api_reply *reply)
{
	const struct api_model_entry *e = registry_find(svc, name ? name : "");
	struct api_error err;

	if (e == NULL) {
		api_fail(&err, API_E_MODEL_NOT_FOUND, "", "no model named '%s'", name ? name : "");
		api_reply_error(reply, &err);
		return;
	}
	registry_describe(svc, e, &reply->body);
	reply->status = 200;
}

static void version(struct api_reply *reply)
{
	buf_puts(&reply->body, "{\"name\":\"attnd\",\"version\":\"" ATTND_VERSION
			       "\",\"api\":\"v1\",\"blas\":\"OpenBLAS\"}");
	reply->status = 200;
}

static void openapi(struct api_reply *reply)
{
	buf_append(&reply->body, api_openapi_json, api_openapi_json_len);
	reply->status = 200;
}

void api_handle(const struct api_service *svc, enum api_route route, const char *param,
		const char *body, size_t len, struct api_reply *reply)
{
	struct api_error err;

	switch (route) {
	case API_ROUTE_ATTENTION:
		api_attention(svc, body, len, reply);
		break;
	case API_ROUTE_SDPA:
		api_sdpa(svc, body, len, reply);
		break;
	case API_ROUTE_MODELS:
		models_list(svc, reply);
		break;
	case API_ROUTE_MODEL:
		model_one(svc, param, reply);
		break;
	case API_ROUTE_VERSION:
		version(reply);
		break;
	case API_ROUTE_OPENAPI:
		openapi(reply);
		break;
	case API_ROUTE_TOKENIZE:
		api_tokenize(svc, body, len, reply);
		break;
	case API_ROUTE_DETOKENIZE:
		api_detokenize(svc, body, len, reply);
		break;
	case API_ROUTE_TOKENIZERS:
		api_tokenizers(svc, reply);
		break;
	default:
		api_fail(&err, API_E_NOT_FOUND, "", "no such route");
		api_reply_error(reply, &err);
		break;
	}
	if (reply->body.failed) {
		api_fail(&err, API_E_RESPONSE_TOO_LARGE, "", "the answer exceeds the response limit");
		api_reply_error(reply, &err);
	}
}
