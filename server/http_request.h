/*
 * http_request.h: what server/http.c and its parts (http_daemon.c,
 * http_respond.c, http_compute.c, http_inline.c, http_done.c) share, and nothing else
 * includes: the server's state, one request's state, and the responses
 * (http_respond.c) the lifecycle (http.c) queues.
 *
 * Ownership as http.h says: a struct request is made on a request's first
 * callback and freed in libmicrohttpd's completion callback; the respond
 * functions take a body's bytes (the buf is left empty) and never r.
 */
#ifndef SERVER_HTTP_REQUEST_H
#define SERVER_HTTP_REQUEST_H

#include <microhttpd.h>

#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>

#include "common/buf.h"
#include "clock.h"
#include "compress.h"
#include "headers.h"
#include "http.h"
#include "metrics.h"
#include "peers.h"
#include "pending.h"
#include "refusals.h"
#include "route.h"
#include "split.h"
#include "thread_slot.h"
#include "watch.h"
#include "api/service.h"

enum { SMALL_BODY_MAX = 4096, METRICS_BODY_MAX = 4 << 20 };

struct http_server {
	const struct attnd_config *cfg;
	const struct api_service *svc;
	struct metrics *metrics;
	struct pool *pool;
	size_t max_response_bytes;
	struct split_policy split; /* idle workers lent to a large call */
	struct watch *watch;	   /* queued and computing requests' clients and deadlines */
	struct lingerer *linger;	   /* closed connections whose clients may still send */
	struct peers *peers;	   /* open connections per address, or NULL: no --per-ip-limit */
	struct refusals *refusals; /* the limits' refusals, counted and logged */
	struct MHD_Daemon *daemon;
	int listener; /* quiesced and shut, closed after the daemon stops; else -1 */
	unsigned port;
	atomic_int draining;
	unsigned long long id_seed;
	/* Written by every request, from every I/O thread: on lines of their
	 * own (http_start allocates srv aligned), so the other core's writes do
	 * not evict the fields above, which every request reads. */
	alignas(SHARD_ALIGN) atomic_long active;
	atomic_ulong completed; /* requests freed since start */
	atomic_long connections; /* open: started and not yet closed */
	atomic_ullong next_id;
	struct pending pending;	  /* answer bytes queued and not yet sent */
	struct pending receiving; /* request body bytes received and held */
};

enum request_state {
	REQ_RECEIVING = 0, /* headers checked, body arriving */
	REQ_INLINE,	   /* answered on the final callback, on this thread */
	REQ_QUEUED,	   /* suspended, waiting for or running on a worker */
	REQ_REPLIED,	   /* the worker's reply is ready (connection resumed) */
	REQ_CLOSED,	   /* its client left while queued or computing: close, 499 */
	REQ_REFUSED,	   /* a refusal is waiting for the next callback */
	REQ_ANSWERED,	   /* a response is queued */
};

struct request {
	struct http_server *srv;
	struct MHD_Connection *conn;
	const struct route *route; /* NULL: no route for this method and path */
	enum metric_route metric;
	enum request_state state;
	enum rejection refusal; /* when REQ_REFUSED, and once refused */
	int preflight;		/* answering an OPTIONS preflight */
	int has_body;		/* Content-Length > 0 or chunked */
	int query_ctl;		/* the target's query has a control character */
	int close;		/* answer with Connection: close (over --per-ip-limit, bad framing) */
	int computed;		/* a compute request handed to the API: counted per model */
	atomic_int cut;		/* an answer was written to the socket (cut_off) */
	int fd;			/* the connection's socket, for a cut-off answer */
	int recv_watched;	/* recv_watch registered: the body is arriving */
	unsigned recv_timeout;	/* libmicrohttpd's inactivity timeout meanwhile, s */
	struct watch_entry recv_watch; /* --request-deadline, while the body arrives */
	struct hdr_fields hdr;	       /* its headers, read once (headers.h) */
	char method[16];
	char path[256];
	char param[ROUTE_PARAM_MAX];
	char allow[ROUTE_ALLOW_MAX];
	char request_id[HDR_REQUEST_ID_MAX + 1];
	const char *cache_control; /* "no-store", but for the viewer's files */
	const char *etag;	   /* a viewer's file's entity tag, or NULL */
	const char *inference_header; /* Inference-Header-Content-Length (v2), borrowed */
	int vary_encoding;	      /* a compute path: answers on it may be compressed */
	enum coding answer_coding;    /* what Accept-Encoding chose */
	const char *content_encoding; /* the answer's coding, or NULL */
	enum coding body_coding;      /* the request body's */
	struct body_decoder *decoder; /* a gzip or deflate body, inflated into body */
	char detail[256];	      /* a refusal's own message, when not "" */
	struct buf body;
	struct api_reply reply;
	struct split_lease lease; /* idle workers lent to its call */
	struct watch_entry watch; /* queued or computing: its cancel flag (watch.h) */
	int status; /* 0 until a response is queued */
	size_t bytes_in, bytes_out;
	size_t pending;	   /* bytes of its answer taken from srv->pending */
	size_t receiving;  /* bytes of its body taken from srv->receiving */
	int write_watched; /* its connection's timeout is --write-timeout until it completes */
	double t_start, t_queued, queue_ms;
	/* when a cut-off answer (a 408 or 413 mid-body, cut_off) was written:
	 * the request's duration ends there, not when libmicrohttpd lets the
	 * connection go, up to --timeout later (0: the answer went as any) */
	double t_answered;
};

/* http.c: libmicrohttpd's callbacks for a request (http_daemon.c passes
 * them to the daemon, with the server as cls). on_uri: the raw target, first
 * (MHD_OPTION_URI_LOG_CALLBACK); on_request: headers, body and final
 * callbacks; on_completed: the request's end (MHD_OPTION_NOTIFY_COMPLETED). */
void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn);
enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
			   const char *method, const char *version, const char *upload_data,
			   size_t *upload_data_size, void **con_cls);
void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		  enum MHD_RequestTerminationCode toe);

/* http.c: a seed for the request ids it makes, another each start. */
unsigned long long request_id_seed(void);

/* Adds the headers (http_respond.c) and queues resp (len bytes of body);
 * resp stays the caller's to destroy. */
enum MHD_Result queue_response(struct request *r, int status, struct MHD_Response *resp,
			       size_t len, const char *content_type);

/* Queues status with the bytes of body (taken; body is left empty). */
enum MHD_Result respond(struct request *r, int status, struct buf *body,
			const char *content_type);
enum MHD_Result respond_text(struct request *r, int status, const char *text,
			     const char *content_type);

/* The transport's refusal `why` as the error body of r's API version. */
enum MHD_Result refuse(struct request *r, enum rejection why);

/* The refusal now when a body is coming, else on the final callback. */
enum MHD_Result refuse_early(struct request *r, enum rejection why);

/* The refusal `why` written to the socket now, in the middle of the body
 * (cutoff.h), with Connection: close; returns MHD_NO, so libmicrohttpd
 * closes the connection. The body's watch is removed first: the watcher
 * may be writing its own 408 that moment, and is let finish. r's status
 * stays 0 (logged as no answer) when the socket did not take it. */
enum MHD_Result cut_off(struct request *r, enum rejection why);

/* r's --request-deadline watch removed, if it is registered (http.c);
 * waits for its action when the watcher is running it. */
void unwatch_receiving(struct request *r);

/* The watcher's action (watch.h: on_fire) when --request-deadline passes
 * while r's body arrives: 408 written to the socket unless an answer was
 * already, then the reading side shut, so that libmicrohttpd's thread sees
 * the end and closes the connection. */
void cut_off_at_deadline(struct watch_entry *e, enum watch_reason why);

/* 1 once after a cut_off on this thread: the close libmicrohttpd then logs
 * ("Application reported internal error") is that answer's, not an error. */
int cut_off_closed(void);

/* http_done.c. r's access log line and metrics, once libmicrohttpd ended it
 * (toe): a client gone before an answer was queued is logged 499. */
void record_request(struct request *r, enum MHD_RequestTerminationCode toe);

/* The API's reply of r. */
enum MHD_Result answer_reply(struct request *r);

/* The final callback of a request answered on the I/O thread (its route
 * not ROUTE_COMPUTE, or a preflight): http_inline.c. */
enum MHD_Result answer_inline(struct request *r);

/* http_compute.c. Runs the API on r's route (the body, len bytes) into
 * r->reply, coded as Accept-Encoding asked. */
void call_api(struct request *r, const char *body, size_t len);

/* Answers a small compute request on this thread: 1, or 0 (r->reply fresh
 * again) when it is not small. */
int compute_small(struct request *r);

/* Suspends r and queues it for a worker, watched for its client and its
 * --compute-deadline; a full queue resumes it at once, refused (503). */
enum MHD_Result submit_compute(struct request *r);

/* The watcher's fired hook (watch.h), ctx the struct http_server: ends the
 * queued requests it has just cancelled (client gone, deadline past), on
 * the watcher's thread, as a worker taking them would. */
void compute_end_cancelled(void *srv);

#endif
