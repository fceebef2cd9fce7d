/*
 * http_compute.c: a compute request's run through the API, on the I/O thread
 * when it is small (compute_small) or on a worker (submit_compute: suspended,
 * queued, watched, resumed with its reply), and how it ends when the watcher
 * cancelled it. Shared with http.c through http_request.h.
 */
#include "http_request.h"

#include <microhttpd.h>

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "api/error.h"
#include "compress.h"
#include "pool.h"
#include "split.h"
#include "watch.h"
#include "api/service.h"

/* Codes the compute route's answer where it was built (on the worker):
 * compress_reply (compress.h) says how, and whether at all. */
static void compress_answer(struct request *r)
{
	r->content_encoding =
	    compress_reply(&r->reply, r->answer_coding, (int)r->srv->cfg->compress_level);
}

/* Runs the API on r's route: api_handle, or api_handle_v2 with the path's
 * {name} and {version} (a version segment too long to copy matches no
 * version, and the 404 says so) and the binary extension's header; then
 * compress_answer. */
void call_api(struct request *r, const char *body, size_t len)
{
	const char *param = r->route->param != NULL ? r->param : NULL;
	char version[ROUTE_PARAM_MAX];
	struct api_v2_call call;

	if (!api_route_is_v2(r->route->api)) {
		api_handle(r->srv->svc, r->route->api, param, body, len, &r->reply);
		compress_answer(r);
		return;
	}
	call.model = param;
	call.version = NULL;
	if (strstr(r->route->path, "{version}") != NULL) {
		if (route_segment(r->route, r->path, "version", version) != 0)
			snprintf(version, sizeof version, "(a segment of more than %d bytes)",
				 ROUTE_PARAM_MAX - 1);
		call.version = version;
	}
	call.header_len = r->inference_header;
	call.draining = atomic_load(&r->srv->draining);
	api_handle_v2(r->srv->svc, r->route->api, &call, body, len, &r->reply);
	compress_answer(r);
}

/* How a compute request ends once the watcher has let it go: its reply, or
 * cancelled (watch.h). A client gone is closed without an answer and logged
 * 499 (nginx's "client closed request"); a deadline answers 503 when it cut
 * the call (or the call never ran): a reply that made it stands. */
static void compute_outcome(struct request *r, int ran)
{
	int why = atomic_load(&r->watch.cancel);
	const char *code = r->reply.error_code;

	r->state = REQ_REPLIED;
	if (why == WATCH_CLIENT_GONE) {
		r->state = REQ_CLOSED;
		r->status = 499;
		metrics_cancelled(r->srv->metrics, CANCEL_CLIENT_GONE, ran);
	} else if (why == WATCH_DEADLINE &&
		   (!ran ||
		    (code != NULL && strcmp(code, api_error_code(API_E_DEADLINE_EXCEEDED)) == 0))) {
		r->state = REQ_REFUSED;
		r->refusal = REJ_DEADLINE;
		metrics_cancelled(r->srv->metrics, CANCEL_DEADLINE, ran);
	}
}

/* Runs on a worker, or for a request cancelled in the queue wherever
 * compute_end_cancelled takes it out: the connection is suspended, so r is ours
 * alone until MHD_resume_connection, after which this thread must not touch
 * r. A request cancelled while it was queued is not run. */
static void compute_job(void *arg)
{
	struct request *r = arg;
	const char *body = r->body.data != NULL ? r->body.data : "";
	int ran = 0;

	metrics_queued(r->srv->metrics, -1);
	r->queue_ms = (clock_seconds() - r->t_queued) * 1e3;
	if (atomic_load(&r->watch.cancel) == WATCH_NONE) {
		metrics_computing(r->srv->metrics, +1);
		split_lease_init(&r->lease, &r->srv->split);
		r->reply.lender = &r->lease.lender;
		call_api(r, body, r->body.len);
		split_lease_end(&r->lease); /* never lose a worker */
		metrics_computing(r->srv->metrics, -1);
		ran = 1;
	}
	watch_remove(r->srv->watch, &r->watch);
	compute_outcome(r, ran);
	MHD_resume_connection(r->conn);
}

/* A small compute request (service.h: API_SMALL_BODY) is answered here on
 * the I/O thread, without the queue's hand-off to a worker and back (main.c:
 * the thread model). Returns 0, with r->reply fresh again, for any other. */
int compute_small(struct request *r)
{
	const char *param = r->route->param != NULL ? r->param : NULL;
	const char *body = r->body.data != NULL ? r->body.data : "";

	if (r->body.len > API_SMALL_BODY || api_route_is_v2(r->route->api))
		return 0;
	r->reply.small_only = 1;
	api_handle(r->srv->svc, r->route->api, param, body, r->body.len, &r->reply);
	r->reply.small_only = 0;
	if (!r->reply.declined) {
		compress_answer(r); /* at most 2^10 numbers: tens of microseconds */
		r->computed = 1;
		return 1;
	}
	api_reply_release(&r->reply);
	api_reply_init(&r->reply, r->srv->max_response_bytes);
	return 0;
}

/* A queued request the watcher has cancelled (client gone, deadline past):
 * only its end is left to do. */
static int queued_cancelled(void *arg)
{
	struct request *r = arg;

	return atomic_load(&r->watch.cancel) != WATCH_NONE;
}

enum { EVICT_MAX = 64 };

/* The requests in the queue that the watcher cancelled are taken out and
 * ended here (compute_job, which runs none of them: each is answered 503
 * deadline_exceeded or closed as 499, as a worker taking it would), so a
 * client waits no longer than its deadline and requests nobody waits for
 * turn no live one away. */
void compute_end_cancelled(void *srv)
{
	struct http_server *s = srv;
	void *gone[EVICT_MAX];
	size_t n;

	do {
		n = pool_evict(s->pool, queued_cancelled, gone, EVICT_MAX);
		for (size_t i = 0; i < n; i++)
			compute_job(gone[i]);
	} while (n == EVICT_MAX);
}

/* Suspends first, then queues, so a fast worker can never resume a
 * connection that is not yet suspended. A full queue resumes at once and the
 * next callback answers 503 (the watcher's hook has already taken out the
 * requests it cancelled, within a round of 10 ms). A request the watcher
 * cancelled before it was queued, where its hook could not find it, is
 * ended here; r stays valid after pool_submit, as only this I/O thread
 * frees it, after this callback. */
enum MHD_Result submit_compute(struct request *r)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	double deadline = (double)r->srv->cfg->compute_deadline;

	r->state = REQ_QUEUED;
	r->t_queued = clock_seconds();
	metrics_queued(r->srv->metrics, +1);
	MHD_suspend_connection(r->conn);
	/* watched before a worker can take it; the deadline counts the queue */
	watch_add(r->srv->watch, &r->watch, ci != NULL ? ci->connect_fd : -1,
		  deadline > 0 ? r->t_queued + deadline : 0);
	r->reply.cancel = &r->watch.cancel;
	r->computed = 1;
	if (pool_submit(r->srv->pool, compute_job, r) == 0) {
		if (atomic_load(&r->watch.cancel) != WATCH_NONE)
			compute_end_cancelled(r->srv);
		return MHD_YES;
	}
	watch_remove(r->srv->watch, &r->watch);
	metrics_queued(r->srv->metrics, -1);
	r->computed = 0; /* refused, not computed: attnd_rejections_total counts it */
	r->state = REQ_REFUSED;
	r->refusal = REJ_OVERLOADED;
	MHD_resume_connection(r->conn);
	return MHD_YES;
}
