/* service.c: replies and the route dispatch of the API layer (see service.h). */
#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "version.h"

int api_check_work(const struct api_limits *limits, double flops, double scores,
		   struct api_error *err)
{
	double gflop = (flops + API_SCORE_FLOPS * scores) / 1e9;

	if (limits->max_request_gflop <= 0 || gflop <= limits->max_request_gflop)
		return 0;
	return api_fail(err, 422, "request_too_expensive", "",
			"this request needs about %.*f GFLOP of work; the limit is %.0f GFLOP",
			gflop < 10 ? 3 : 0, gflop, limits->max_request_gflop);
}

void api_reply_init(struct api_reply *reply, size_t max_body)
{
	memset(reply, 0, sizeof(*reply));
	buf_init(&reply->body, max_body);
	reply->status = 500;
	reply->content_type = "application/json";
}

void api_reply_release(struct api_reply *reply)
{
	if (reply == NULL)
		return;
	buf_release(&reply->body);
}

void api_reply_error(struct api_reply *reply, const struct api_error *err)
{
	buf_reset(&reply->body);
	api_error_body(err, &reply->body);
	reply->status = err->status;
	reply->error_code = err->code;
	reply->content_type = "application/json";
}

double api_ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) * 1e-6;
}

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
		api_fail(&err, 404, "model_not_found", "", "no model named '%s'", name ? name : "");
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
	default:
		api_fail(&err, 404, "not_found", "", "no such route");
		api_reply_error(reply, &err);
		break;
	}
	if (reply->body.failed) {
		api_fail(&err, 422, "response_too_large", "", "the answer exceeds the response limit");
		api_reply_error(reply, &err);
	}
}
