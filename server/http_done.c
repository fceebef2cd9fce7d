/*
 * http_done.c: what a request leaves behind once libmicrohttpd has ended
 * it: its access log line and its metrics, the per-model series for a
 * request the API saw. Its status is decided here for one case only: a
 * client that left after the request was whole and before its answer was
 * queued (499).
 * Ownership as http_request.h says: r stays the lifecycle's (http.c), which
 * frees it after.
 */
#include "http_request.h"

#include <microhttpd.h>

#include "log.h"

/* How a compute request the API saw ended, for attnd_model_requests_total. */
static enum model_outcome outcome_of(const struct request *r)
{
	if (r->status == 499 || (r->refusal == REJ_DEADLINE && r->status == 503))
		return OUTCOME_CANCELLED; /* compute_outcome: the watcher stopped it */
	if (r->status >= 200 && r->status < 400)
		return OUTCOME_OK;
	if (r->status >= 400 && r->status < 500)
		return OUTCOME_CLIENT_ERROR;
	return OUTCOME_SERVER_ERROR;
}

/* The per-model series: the model the API named (never the client's string:
 * api_reply.model), its queue wait and, when the engine ran, its time. */
static void count_model(const struct request *r)
{
	struct metrics *m = r->srv->metrics;
	const char *model = r->reply.model != NULL ? r->reply.model : "none";
	double compute = r->reply.compute_ms > 0 ? r->reply.compute_ms / 1e3 : -1;

	metrics_model_request(m, metrics_model(m, model), outcome_of(r), r->queue_ms / 1e3,
			      compute);
}

static void log_and_count(const struct request *r)
{
	struct access_entry e;
	double end = r->t_answered > 0 ? r->t_answered : clock_seconds();
	double seconds = end - r->t_start;

	e.method = r->method;
	e.path = r->path;
	e.status = r->status;
	e.bytes_in = r->bytes_in;
	e.bytes_out = r->bytes_out;
	e.ms = seconds * 1e3;
	e.request_id = r->request_id;
	log_access(&e);
	metrics_request(r->srv->metrics, r->metric, r->status, seconds, r->bytes_in, r->bytes_out,
			r->reply.flops);
	if (r->computed)
		count_model(r);
}

/* An ending decided and never queued: libmicrohttpd ended the connection
 * before the next callback, its client gone after sending the whole request.
 * A refusal (a full queue's 503 resumes the connection at once, and a client
 * that closed meanwhile is not called back), or a worker's reply that
 * stands: the watcher stops polling a request's socket once its
 * --compute-deadline fires, and a call that finishes anyway keeps its
 * answer (http_compute.c: compute_outcome), so a client that leaves after
 * the deadline, or in the moment between the watcher's last poll and the
 * resume, is seen only here. Logged 499 as compute_outcome logs a client
 * gone while queued or computing; a request whose client left before it
 * was whole stays 0. */
static int left_before_answer(const struct request *r, enum MHD_RequestTerminationCode toe)
{
	if ((r->state != REQ_REFUSED && r->state != REQ_REPLIED) || r->status != 0)
		return 0;
	return toe == MHD_REQUEST_TERMINATED_WITH_ERROR || toe == MHD_REQUEST_TERMINATED_READ_ERROR ||
	       toe == MHD_REQUEST_TERMINATED_CLIENT_ABORT;
}

/* libmicrohttpd tells only whether an answer it was given went out whole,
 * not how much of it did: one whose connection ended first (its client gone
 * mid-answer, or --write-timeout) counts no bytes out rather than all of
 * them. An answer written to the socket by attnd (cut_off) went whole. */
static int answer_cut_short(const struct request *r, enum MHD_RequestTerminationCode toe)
{
	return r->state == REQ_ANSWERED && atomic_load(&r->cut) == 0 &&
	       toe != MHD_REQUEST_TERMINATED_COMPLETED_OK;
}

void record_request(struct request *r, enum MHD_RequestTerminationCode toe)
{
	if (left_before_answer(r, toe))
		r->status = 499;
	if (answer_cut_short(r, toe))
		r->bytes_out = 0;
	log_and_count(r);
}
