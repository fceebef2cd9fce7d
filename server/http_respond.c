/*
 * http_respond.c: the answers server/http.c queues: their headers
 * (X-Request-Id, Server-Timing, Cache-Control, CORS, Vary, what a status
 * implies) and bodies, and the transport's refusals.
 */
#include "http_request.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <string.h>
#include <time.h>

#include "common/fmt.h"
#include "cutoff.h"
#include "api/error.h"

/* The transport's refusals: the error kind and message, one row per reason. */
static const struct {
	enum api_error_kind kind;
	const char *message;
} refusal_reply[REJ_COUNT] = {
    [REJ_NOT_FOUND] = {API_E_NOT_FOUND, "no route matches this path"},
    [REJ_METHOD] = {API_E_METHOD_NOT_ALLOWED, "this path does not take this method"},
    [REJ_MEDIA_TYPE] = {API_E_UNSUPPORTED_MEDIA_TYPE,
			"the body must be JSON: Content-Type: application/json"},
    [REJ_ENCODING] = {API_E_UNSUPPORTED_MEDIA_TYPE,
		      "Content-Encoding must be gzip, deflate or identity"},
    [REJ_BAD_ENCODING] = {API_E_BAD_REQUEST, "the request body does not inflate"},
    [REJ_TOO_LARGE] = {API_E_PAYLOAD_TOO_LARGE, "the request body is larger than --max-body"},
    [REJ_BAD_FRAMING] = {API_E_BAD_REQUEST,
			 "ambiguous body framing: several Content-Length headers, "
			 "Content-Length with Transfer-Encoding, or a Transfer-Encoding "
			 "that is not exactly chunked"},
    [REJ_UNAUTHORIZED] = {API_E_UNAUTHORIZED,
			  "missing or wrong API key (Authorization: Bearer KEY)"},
    [REJ_OVERLOADED] = {API_E_OVERLOADED, "the compute queue is full; retry shortly"},
    [REJ_DRAINING] = {API_E_DRAINING, "the server is shutting down; retry elsewhere"},
    [REJ_TIMEOUT] = {API_E_REQUEST_TIMEOUT,
		     "the request body was not received within --request-deadline"},
    [REJ_PER_IP] = {API_E_OVERLOADED,
		    "too many connections from your address (--per-ip-limit); retry shortly "
		    "on an open connection"},
    [REJ_DEADLINE] = {API_E_DEADLINE_EXCEEDED,
		      "the computation did not finish within --compute-deadline; retry, or "
		      "ask for less work"},
    [REJ_PRECONDITION] = {API_E_PRECONDITION_FAILED,
			  "If-Match names no entity tag of this representation (its ETag); "
			  "fetch it again without If-Match"},
};

/* ---- responses ---------------------------------------------------------- */

enum { HEADERS_MAX = 20 };

/* Vary: what the answer depends on besides method and path: the Origin
 * (under a --cors-origins list); on a route whose answers may be
 * compressed, Accept-Encoding, whether this one was compressed or not; and
 * for a preflight that echoes them, the headers it asked for. */
static const char *vary_value(int origin, int encoding, int request_headers)
{
	static const char *const values[8] = {
	    NULL,
	    "Origin",
	    "Accept-Encoding",
	    "Origin, Accept-Encoding",
	    "Access-Control-Request-Headers",
	    "Origin, Access-Control-Request-Headers",
	    "Accept-Encoding, Access-Control-Request-Headers",
	    "Origin, Accept-Encoding, Access-Control-Request-Headers",
	};

	return values[(origin ? 1 : 0) | (encoding ? 2 : 0) | (request_headers ? 4 : 0)];
}

/* 1 when no one reads the CORS headers of r's answer: a request without
 * Origin is no browser's cross-origin request (a browser sends Origin on
 * every one, and on every POST), and a no-store answer is kept by no cache
 * to be served to one later. So curl's, wrk's and a program's compute
 * answers go without them under --cors-origins "*" (under a list they never
 * had them without an Origin): two of the seven headers attnd put on the
 * four-word answer, some 2k of its instructions in libmicrohttpd (copies of each name
 * and value, freed again). Answers a cache may keep (no-cache: the model
 * list, the OpenAPI document) carry them whatever asked, so that one stored
 * answer serves a browser too. */
static int unread_cors(const struct request *r)
{
	return r->hdr.origin == NULL && r->cache_control != NULL &&
	       strcmp(r->cache_control, "no-store") == 0;
}

/* The CORS headers. A browser's script reads the answer's headers it is
 * told it may (Expose): the ids and timings, the coding, and the ones that
 * say what to do next (Retry-After on a 503, Allow on a 405,
 * WWW-Authenticate on a 401, Accept-Encoding on a 415 for the body's
 * coding). A preflight is allowed the headers it asks for (no credentials
 * ride on CORS here: attnd sets no cookie, and a script's Authorization is a
 * header like any other), so a page whose tracing adds traceparent, say, is
 * not refused; without such a list, the headers attnd reads. */
static size_t cors_headers(const struct request *r, struct answer_header *h, size_t n)
{
	int vary = 0;
	const char *origin = hdr_cors_origin(&r->hdr, r->srv->cfg->cors_origins, &vary);

	if (unread_cors(r))
		origin = NULL;
	/* echoed only to an allowed origin: only then does the answer vary on it */
	const char *asked =
	    r->preflight && origin != NULL ? hdr_cors_request_headers(&r->hdr) : NULL;
	const char *vary_on = vary_value(vary, r->vary_encoding, asked != NULL);

	if (vary_on != NULL)
		h[n++] = (struct answer_header){"Vary", vary_on};
	if (origin == NULL)
		return n;
	h[n++] = (struct answer_header){"Access-Control-Allow-Origin", origin};
	h[n++] = (struct answer_header){
	    "Access-Control-Expose-Headers",
	    "X-Request-Id, Server-Timing, Inference-Header-Content-Length, Content-Encoding, "
	    "Retry-After, Allow, WWW-Authenticate, Accept-Encoding, ETag"};
	/* and the browser's own timing API too: without it a page of another
	 * origin reads Server-Timing's header but its PerformanceResourceTiming
	 * has serverTiming empty and the phases zeroed (Resource Timing's timing
	 * allow check); the same origins may see both. No script times a
	 * preflight. */
	if (!r->preflight) {
		h[n++] = (struct answer_header){"Timing-Allow-Origin", origin};
	} else {
		h[n++] = (struct answer_header){"Access-Control-Allow-Methods", r->allow};
		h[n++] = (struct answer_header){
		    "Access-Control-Allow-Headers",
		    asked != NULL ? asked
				  : "Content-Type, Content-Encoding, Authorization, X-Request-Id, "
				    "Inference-Header-Content-Length"};
		h[n++] = (struct answer_header){"Access-Control-Max-Age", "600"};
	}
	return n;
}

/* Headers a status implies: 401 names the scheme, 405 (and a preflight)
 * lists the methods, a 415 for the body's Content-Encoding the codings that
 * are read (RFC 9110 section 12.5.3), 503 says when to retry. */
static size_t status_headers(const struct request *r, int status, struct answer_header *h, size_t n)
{
	if (status == 415 && r->refusal == REJ_ENCODING)
		h[n++] = (struct answer_header){"Accept-Encoding", "gzip, deflate, identity"};
	if (status == 401)
		h[n++] = (struct answer_header){"WWW-Authenticate", "Bearer"};
	if (status == 405 || r->preflight)
		h[n++] = (struct answer_header){"Allow", r->allow};
	if (status == 503)
		h[n++] = (struct answer_header){"Retry-After", "1"};
	return n;
}

/* One Server-Timing entry, "name;dur=%.3f" (fmt_fixed is exact), at p;
 * returns its end. p needs strlen(part) + FMT_FIXED_MAX bytes. */
static char *put_timing(char *p, const char *part, double ms)
{
	size_t n = strlen(part);

	memcpy(p, part, n);
	return p + n + fmt_fixed(p + n, ms, 3);
}

/* "parse;dur=P, queue;dur=Q, compute;dur=C, encode;dur=E, total;dur=T" into
 * timing; total runs from the request's headers to now, as the answer's
 * headers are made (the body's upload included). */
enum { TIMING_MAX = 5 * (FMT_FIXED_MAX + 16) };

static void server_timing(const struct request *r, char *timing)
{
	char *p = timing;

	p = put_timing(p, "parse;dur=", r->reply.parse_ms);
	p = put_timing(p, ", queue;dur=", r->queue_ms);
	p = put_timing(p, ", compute;dur=", r->reply.compute_ms);
	p = put_timing(p, ", encode;dur=", r->reply.encode_ms);
	p = put_timing(p, ", total;dur=", (clock_seconds() - r->t_start) * 1e3);
	*p = '\0';
}

/* An answer's headers, with room for the values made for them. */
struct answer_headers {
	struct answer_header h[HEADERS_MAX];
	size_t n;
	char timing[TIMING_MAX]; /* Server-Timing's value */
	char json_len[24];       /* Inference-Header-Content-Length's */
};

/* The headers of r's answer with status into a (content_type NULL: none;
 * Connection only when `connection`). The answers libmicrohttpd sends and
 * those cut_off writes itself carry the same. */
static void answer_headers(const struct request *r, int status, const char *content_type,
			   int connection, struct answer_headers *a)
{
	struct answer_header *h = a->h;
	size_t n = 0;

	server_timing(r, a->timing);
	if (content_type != NULL)
		h[n++] = (struct answer_header){"Content-Type", content_type};
	if (r->content_encoding != NULL)
		h[n++] = (struct answer_header){"Content-Encoding", r->content_encoding};
	h[n++] = (struct answer_header){"X-Request-Id", r->request_id};
	h[n++] = (struct answer_header){"Server-Timing", a->timing};
	h[n++] = (struct answer_header){"Cache-Control", r->cache_control};
	if (r->etag != NULL)
		h[n++] = (struct answer_header){"ETag", r->etag};
	if (connection && (atomic_load(&r->srv->draining) || r->close))
		h[n++] = (struct answer_header){"Connection", "close"};
	if (r->reply.inference_header_len > 0) { /* a v2 answer with binary tensors */
		snprintf(a->json_len, sizeof a->json_len, "%zu", r->reply.inference_header_len);
		h[n++] = (struct answer_header){"Inference-Header-Content-Length", a->json_len};
	}
	n = status_headers(r, status, h, n);
	a->n = cors_headers(r, h, n);
}

static int add_headers(const struct request *r, struct MHD_Response *resp, int status,
		       const char *content_type)
{
	struct answer_headers a;

	answer_headers(r, status, content_type, 1, &a);
	for (size_t i = 0; i < a.n; i++) {
		if (MHD_add_response_header(resp, a.h[i].name, a.h[i].value) != MHD_YES)
			return -1;
	}
	return 0;
}

/* Adds the headers and queues resp (len bytes of body); resp stays the
 * caller's to destroy. */
enum MHD_Result queue_response(struct request *r, int status, struct MHD_Response *resp,
				      size_t len, const char *content_type)
{
	enum MHD_Result ret;

	if (add_headers(r, resp, status, content_type) != 0)
		return MHD_NO;
	ret = MHD_queue_response(r->conn, (unsigned)status, resp);
	if (ret == MHD_YES) {
		r->status = status;
		/* a HEAD answer's head gives the body's length; libmicrohttpd
		 * sends no body, and the log and metrics count what was sent */
		r->bytes_out = strcmp(r->method, "HEAD") == 0 ? 0 : len;
		r->state = REQ_ANSWERED;
	}
	return ret;
}

/* Queues status with the bytes of body (taken; body is left empty). */
enum MHD_Result respond(struct request *r, int status, struct buf *body,
			       const char *content_type)
{
	size_t len = 0;
	char *data = buf_detach(body, &len);
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer_with_free_callback(len, data, free);
	if (resp == NULL) {
		free(data);
		return MHD_NO;
	}
	ret = queue_response(r, status, resp, len, content_type);
	MHD_destroy_response(resp);
	return ret;
}

enum MHD_Result respond_text(struct request *r, int status, const char *text,
				    const char *content_type)
{
	struct buf b;
	enum MHD_Result ret;

	buf_init(&b, SMALL_BODY_MAX);
	buf_puts(&b, text);
	ret = respond(r, status, &b, content_type);
	buf_release(&b);
	return ret;
}

/* /v2 and below: the Open Inference Protocol's paths, whose errors are
 * {"error": "message"} (api_v2_error_body). */
static int v2_path(const char *path)
{
	return strncmp(path, "/v2", 3) == 0 && (path[3] == '\0' || path[3] == '/');
}

/* The error body of refusal `why` in r's API version into b (made here,
 * the caller's to release), with message, or the reason's own when it is
 * NULL or ""; returns its status. */
static int refusal_body(const struct request *r, enum rejection why, const char *message,
			struct buf *b)
{
	struct api_error e;

	api_fail(&e, refusal_reply[why].kind, NULL, "%s",
		 message != NULL && message[0] != '\0' ? message : refusal_reply[why].message);
	buf_init(b, SMALL_BODY_MAX);
	if (v2_path(r->path))
		api_v2_error_body(e.message, b);
	else
		api_error_body(&e, b);
	return e.status;
}

enum MHD_Result refuse(struct request *r, enum rejection why)
{
	struct buf b;
	int status = refusal_body(r, why, r->detail, &b);
	enum MHD_Result ret;

	r->refusal = why; /* for the headers it implies (status_headers) */

	/* the refusal's small JSON replaces any answer a worker made (a full
	 * --max-pending-mb refuses one already compressed): not its coding,
	 * not its binary header */
	r->content_encoding = NULL;
	/* a 408 closes the connection, as one cut_off writes does: here the
	 * whole body came past --request-deadline, before the watcher's tick */
	if (why == REJ_TIMEOUT)
		r->close = 1;
	r->reply.inference_header_len = 0;
	ret = respond(r, status, &b, "application/json");
	buf_release(&b);
	if (ret == MHD_YES)
		metrics_reject(r->srv->metrics, why);
	return ret;
}

/* An answer this large may not fit the socket's buffers, so its sending can
 * stall on a client that does not read: --write-timeout watches it. */
enum { WRITE_WATCH_BYTES = 64 * 1024 };

/* Takes the answer's bytes from the budget of answers queued to clients
 * (pending.h): 0, or -1 with r refused (503, Retry-After) when it does not
 * fit. A large answer's connection gets --write-timeout in place of
 * --timeout until the request completes (http.c: on_completed). */
static int hold_answer(struct request *r, size_t n)
{
	const struct attnd_config *cfg = r->srv->cfg;

	if (pending_take(&r->srv->pending, n) != 0)
		return -1;
	r->pending = n;
	metrics_pending_bytes(r->srv->metrics, (long long)n);
	if (n >= WRITE_WATCH_BYTES && cfg->write_timeout < cfg->timeout) {
		MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT,
					  (unsigned)cfg->write_timeout);
		r->write_watched = 1;
	}
	return 0;
}

/* Set by cut_off on the I/O thread whose MHD_NO follows, for mhd_log. */
static _Thread_local int cut_off_closing;

int cut_off_closed(void)
{
	int was = cut_off_closing;

	cut_off_closing = 0;
	return was;
}

/* Writes refusal `why` to r's socket, with message (NULL: the reason's
 * own), unless an answer was written before (by the other of the I/O
 * thread and the watcher: r->cut says which came first). The watcher never
 * passes r->detail: it is the I/O thread's. */
static void cut_off_send(struct request *r, enum rejection why, const char *message)
{
	/* an answer to HEAD has no body, here as where libmicrohttpd sends it */
	int head = strcmp(r->method, "HEAD") == 0;
	struct answer_headers a;
	struct buf b;
	int status;

	if (atomic_exchange(&r->cut, 1) != 0)
		return;
	status = refusal_body(r, why, message, &b);
	/* cutoff_send writes Content-Type and Connection: close itself */
	answer_headers(r, status, NULL, 0, &a);
	if (b.data != NULL && cutoff_send(r->fd, status, a.h, a.n, "application/json",
					  head ? NULL : b.data, b.len) == 0) {
		r->status = status;
		r->bytes_out = head ? 0 : b.len;
		r->t_answered = clock_seconds();
		metrics_reject(r->srv->metrics, why);
	}
	buf_release(&b);
}

enum MHD_Result cut_off(struct request *r, enum rejection why)
{
	/* the watcher may have taken r->cut and be writing its 408: returning
	 * MHD_NO has libmicrohttpd shut the socket's sending side at once, and
	 * a 408 half written would be lost; watch_remove waits for it */
	unwatch_receiving(r);
	r->state = REQ_ANSWERED;
	cut_off_closing = 1;
	cut_off_send(r, why, r->detail);
	return MHD_NO;
}

void cut_off_at_deadline(struct watch_entry *e, enum watch_reason why)
{
	/* e is the recv_watch inside its request: step back to the request */
	struct request *r =
	    (struct request *)(void *)((char *)e - offsetof(struct request, recv_watch));
	char idle[96];

	if (why != WATCH_DEADLINE && why != WATCH_IDLE)
		return;
	snprintf(idle, sizeof idle, "no byte of the request body came for --timeout (%llu s)",
		 r->srv->cfg->timeout);
	cut_off_send(r, REJ_TIMEOUT, why == WATCH_IDLE ? idle : NULL);
	/* the answer is followed by the end of the stream at once; the socket
	 * is still read (never SHUT_RD: Linux resets a socket shut both ways
	 * when more data comes), so libmicrohttpd's thread closes it at the
	 * client's next byte or its close, or at the raised --timeout
	 * (http.c: watch_receiving), and lingers it (linger.h) */
	shutdown(r->fd, SHUT_WR);
}

enum MHD_Result answer_reply(struct request *r)
{
	if (hold_answer(r, r->reply.body.len) != 0) {
		snprintf(r->detail, sizeof r->detail,
			 "answers not yet read by their clients fill --max-pending-mb (%llu MiB); "
			 "retry shortly",
			 r->srv->cfg->max_pending_mb);
		return refuse(r, REJ_OVERLOADED);
	}
	return respond(r, r->reply.status, &r->reply.body, r->reply.content_type);
}

/* A refusal of a request with a body is queued now, before the body is read
 * (libmicrohttpd then discards it, skips `100 Continue` and closes). One
 * without a body waits for the final callback, so the connection can stay
 * open for the next request. */
enum MHD_Result refuse_early(struct request *r, enum rejection why)
{
	if (r->has_body)
		return refuse(r, why);
	r->state = REQ_REFUSED;
	r->refusal = why;
	return MHD_YES;
}
