/*
 * reply.c: replies and the work limit, for the dispatcher (service.c) and
 * every handler (see service.h and handlers.h). Below both, so that no
 * handler calls up.
 */
#include <stdio.h>
#include <string.h>

#include "api/handlers.h"

double api_work(double flops, double scores)
{
	return flops + API_SCORE_FLOPS * scores;
}

int api_check_work(const struct api_limits *limits, double flops, double scores,
		   struct api_error *err)
{
	double gflop = api_work(flops, scores) / 1e9;

	if (limits->max_request_gflop <= 0 || gflop <= limits->max_request_gflop)
		return 0;
	return api_fail(err, API_E_REQUEST_TOO_EXPENSIVE, "",
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

struct api_threads api_own_threads(const struct api_service *svc, const struct api_reply *reply)
{
	struct api_threads t = { reply->threads ? reply->threads : svc->limits.engine_threads,
				 reply->workers, 0, reply->cancel };

	return t;
}

struct api_threads api_lend_threads(const struct api_service *svc, const struct api_reply *reply,
				    double work)
{
	const struct api_lender *l = reply->lender;
	struct attn_workers *workers = NULL;
	struct api_threads t;
	size_t n;

	if (l == NULL || l->lend == NULL)
		return api_own_threads(svc, reply);
	n = l->lend(l->ctx, work, &workers);
	if (n == 0)
		return api_own_threads(svc, reply);
	t.threads = n;
	t.workers = workers;
	t.lent = 1;
	t.cancel = reply->cancel;
	return t;
}

void api_give_back(const struct api_service *svc, const struct api_reply *reply,
		   struct api_threads *t)
{
	if (t->lent && reply->lender != NULL && reply->lender->give_back != NULL)
		reply->lender->give_back(reply->lender->ctx);
	*t = api_own_threads(svc, reply);
}
