/*
 * http.c: the libmicrohttpd request lifecycle, after libmicrohttpd's
 * doc/examples/simplepost.c:
 *
 *   first callback   a struct request is made and stored in *con_cls; the
 *                    route, framing, auth, media type and Content-Length are
 *                    checked from the headers alone, so a refusal (413 among
 *                    them) is queued before any body byte is read and before
 *                    libmicrohttpd would send `100 Continue`;
 *   body callbacks   chunks are appended to a buf with a hard maximum
 *                    (--max-body), which also counts chunked bodies; a gzip
 *                    or deflate body (Content-Encoding) is inflated into it
 *                    as it comes, under the same maximum;
 *   final callback   a small compute request (main.c) is answered at once;
 *                    any other is suspended and queued to the pool; the
 *                    worker (with idle workers lent, for a large one:
 *                    main.c) runs api_handle, then resumes the connection,
 *                    and the callback after that queues the reply; from
 *                    queue to reply the watcher (watch.h) may cancel it:
 *                    client gone, closed (499 in the log, as for a
 *                    client gone before a full queue's 503); past
 *                    --compute-deadline, 503 deadline_exceeded;
 *   completion       (MHD_OPTION_NOTIFY_COMPLETED) the access log line and
 *                    the metrics (http_done.c), and every free.
 * The answers it queues, headers and refusals, are made in http_respond.c;
 * the daemon these callbacks are given to, in http_daemon.c; the state they
 * share is in http_request.h.
 * A compute route's answer is compressed where it is made, on the worker,
 * when Accept-Encoding allows (call_api, compress.h).
 */
#include "http_request.h"

#include <microhttpd.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "api/error.h"
#include "common/fmt.h"
#include "compress.h"
#include "framing.h"
#include "headers.h"
#include "route.h"
#include "split.h"
#include "watch.h"
#include "api/service.h"

/* ---- request headers ---------------------------------------------------- */

/* splitmix64: a well-mixed 64-bit id from a counter */
static unsigned long long mix64(unsigned long long x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* snprintf(dst, size, "%s", src) without printf: src cut to size - 1 bytes. */
static void copy_text(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Echoes a valid client X-Request-Id, else makes 16 hex digits ("%016llx"). */
static void set_request_id(struct request *r)
{
	static const char hex[] = "0123456789abcdef";
	const char *given;
	size_t len = hdr_client_request_id(&r->hdr, &given);
	unsigned long long n;

	if (len > 0) { /* len <= HDR_REQUEST_ID_MAX: it fits */
		memcpy(r->request_id, given, len);
		r->request_id[len] = '\0';
		return;
	}
	n = atomic_fetch_add(&r->srv->next_id, 1);
	n = mix64(r->srv->id_seed ^ n);
	for (int i = 15; i >= 0; i--, n >>= 4)
		r->request_id[i] = hex[n & 15];
	r->request_id[16] = '\0';
}

static int authorized(const struct request *r)
{
	const char *key = r->srv->cfg->api_key;

	if (key == NULL || key[0] == '\0' || r->route->open)
		return 1;
	return hdr_bearer_matches(&r->hdr, key);
}

/* While a request's body arrives, the watcher holds its --request-deadline
 * and its --timeout (no body byte for that long), so a 408 goes out when
 * either passes, whatever the client does, sending slowly or nothing
 * (http_respond.c: cut_off_at_deadline); on_body sees it when a byte comes
 * first. libmicrohttpd's own inactivity timeout, which would close the
 * connection without an answer, is raised meanwhile to one second past the
 * earlier of the two: its clock restarts at every byte read, as the
 * watcher's at every body byte, so it never comes first, and it still
 * closes, a second after the 408, a client that stays silent. A body still
 * trickling when the deadline nears shortens it (shorten_timeout), so the
 * deadline's 408 is not followed by up to --timeout of a held connection. */
static void watch_receiving(struct request *r)
{
	const struct attnd_config *cfg = r->srv->cfg;
	unsigned long long bound =
	    cfg->timeout < cfg->request_deadline ? cfg->timeout : cfg->request_deadline;

	r->recv_timeout = (unsigned)bound + 1;
	MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT, r->recv_timeout);
	r->recv_watch.on_fire = cut_off_at_deadline;
	r->recv_watch.idle = (double)cfg->timeout;
	watch_add(r->srv->watch, &r->recv_watch, -1, r->t_start + (double)cfg->request_deadline);
	r->recv_watched = 1;
}

void unwatch_receiving(struct request *r)
{
	if (!r->recv_watched)
		return;
	watch_remove(r->srv->watch, &r->recv_watch);
	r->recv_watched = 0;
}

/* The whole body is in: --timeout is libmicrohttpd's again. */
static void received(struct request *r)
{
	if (!r->recv_watched)
		return;
	unwatch_receiving(r);
	MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT,
				  (unsigned)r->srv->cfg->timeout);
}

/* The codings: of the body (Content-Encoding, 415 for one not decoded) and
 * of the answer (Accept-Encoding). */
static enum MHD_Result admit_codings(struct request *r)
{
	struct content_encoding ce;

	r->answer_coding = hdr_accept_encoding(&r->hdr, r->conn, CODINGS_ALL);
	hdr_content_encoding(&r->hdr, r->conn, &ce);
	if (ce.coding == CODING_UNKNOWN) {
		snprintf(r->detail, sizeof r->detail,
			 "Content-Encoding '%s' is not supported: send one of gzip, deflate or "
			 "identity",
			 ce.unsupported);
		return refuse_early(r, REJ_ENCODING);
	}
	r->body_coding = ce.coding;
	if (ce.coding != CODING_IDENTITY) {
		r->decoder = body_decoder_new(ce.coding);
		if (r->decoder == NULL)
			return MHD_NO;
	}
	r->state = REQ_RECEIVING;
	if (r->has_body)
		watch_receiving(r);
	return MHD_YES;
}

/* The body's Content-Type is one of the route's ROUTE_MEDIA_* (a missing one
 * only where the route takes ROUTE_MEDIA_NONE). */
static int media_allowed(unsigned media, const struct hdr_fields *f)
{
	if (!hdr_has_content_type(f))
		return (media & ROUTE_MEDIA_NONE) != 0;
	if ((media & ROUTE_MEDIA_JSON) && hdr_media_type_json(f))
		return 1;
	if ((media & ROUTE_MEDIA_FORM) && hdr_media_type_is(f, "application/x-www-form-urlencoded"))
		return 1;
	return (media & ROUTE_MEDIA_OCTET) && hdr_media_type_is(f, "application/octet-stream");
}

/* -1, with r->detail saying why: the bodies being received fill
 * --max-receiving-mb. */
static int receiving_full(struct request *r)
{
	snprintf(r->detail, sizeof r->detail,
		 "request bodies being received fill --max-receiving-mb (%llu MiB); retry shortly",
		 r->srv->cfg->max_receiving_mb);
	return -1;
}

/* r's body held at `total` bytes from --max-receiving-mb (pending.h), taking
 * what it holds short of that as the bytes come: 0, or -1 (nothing more
 * taken) when they do not fit. */
static int hold_body(struct request *r, size_t total)
{
	size_t more = total > r->receiving ? total - r->receiving : 0;

	if (more == 0)
		return 0;
	if (pending_take(&r->srv->receiving, more) != 0)
		return receiving_full(r);
	r->receiving = total;
	metrics_receiving_bytes(r->srv->metrics, (long long)more);
	return 0;
}

/* A declared body that the budget has no room for now is refused at its
 * headers, before a byte of it comes (and before `100 Continue`), not after
 * the client has sent it. Nothing is taken here: a client that declares a
 * body and sends none holds nothing, and cannot turn others away. */
static int declared_body_fits(struct request *r)
{
	unsigned long long n;
	size_t held = pending_held(&r->srv->receiving), max = r->srv->receiving.max;

	if (!hdr_content_length(&r->hdr, &n) || (held <= max && n <= max - held))
		return 0;
	return receiving_full(r);
}

/* First-call checks of a compute request: draining, media type, declared
 * size (the bytes on the wire, within --max-body and --max-receiving-mb),
 * codings. */
static enum MHD_Result admit_compute(struct request *r)
{
	if (atomic_load(&r->srv->draining)) {
		refusals_note(r->srv->refusals, LIMIT_DRAINING);
		return refuse_early(r, REJ_DRAINING);
	}
	if (!media_allowed(r->route->media, &r->hdr)) {
		if (r->route->media & ROUTE_MEDIA_OCTET) /* v2 infer: say all it takes */
			snprintf(r->detail, sizeof r->detail,
				 "the body must be JSON (Content-Type: application/json, or "
				 "application/x-www-form-urlencoded read as JSON), or "
				 "application/octet-stream, or come without a Content-Type");
		return refuse_early(r, REJ_MEDIA_TYPE);
	}
	r->inference_header = hdr_inference_header_length(&r->hdr);
	if (hdr_declared_too_large(&r->hdr, r->srv->cfg->max_body))
		return refuse(r, REJ_TOO_LARGE);
	if (declared_body_fits(r) != 0)
		return refuse_early(r, REJ_OVERLOADED);
	return admit_codings(r);
}

/* ---- the request lifecycle ---------------------------------------------- */

static struct request *request_new(struct http_server *srv, struct MHD_Connection *conn,
				   const char *url, const char *method)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct request *r = calloc(1, sizeof *r);

	if (r == NULL)
		return NULL;
	r->srv = srv;
	r->conn = conn;
	r->fd = ci != NULL ? ci->connect_fd : -1;
	r->t_start = clock_seconds();
	hdr_scan(conn, &r->hdr);
	copy_text(r->method, sizeof r->method, method);
	copy_text(r->path, sizeof r->path, url);
	r->cache_control = "no-store";
	r->metric = MR_OTHER; /* until route_match names the route */
	buf_init(&r->body, (size_t)srv->cfg->max_body);
	api_reply_init(&r->reply, srv->max_response_bytes);
	set_request_id(r);
	atomic_fetch_add(&srv->active, 1);
	metrics_in_flight(srv->metrics, +1);
	return r;
}

static void request_free(struct request *r)
{
	if (r == NULL)
		return;
	pending_give(&r->srv->pending, r->pending);
	metrics_pending_bytes(r->srv->metrics, -(long long)r->pending);
	pending_give(&r->srv->receiving, r->receiving);
	metrics_receiving_bytes(r->srv->metrics, -(long long)r->receiving);
	buf_release(&r->body);
	api_reply_release(&r->reply);
	body_decoder_free(r->decoder);
	free(r);
}

/* A route answered on the I/O thread reads no body, but libmicrohttpd reads
 * (and on_body drops) all of one before the final callback, so a body is
 * bounded by --max-body here too: else `GET /healthz` with a 10 GB
 * Content-Length would hold its connection while it streams. */
static enum MHD_Result admit_inline(struct request *r)
{
	if (hdr_declared_too_large(&r->hdr, r->srv->cfg->max_body))
		return refuse(r, REJ_TOO_LARGE);
	r->state = REQ_INLINE;
	if (r->has_body)
		watch_receiving(r);
	return MHD_YES;
}

/* A request whose framing this server and another could read two ways:
 * 400 at once, before routing, and the connection closes after it (RFC
 * 9112 section 11.2: what follows cannot be trusted to be a request). */
static enum MHD_Result refuse_framing(struct request *r)
{
	r->close = 1;
	return refuse(r, REJ_BAD_FRAMING);
}

/* Headers that fill --connection-memory but for the answer's room: 1, with
 * r->detail saying so (framing.h). */
static int head_too_large(struct request *r, const char *url, const char *method,
			  const char *version)
{
	size_t pool = (size_t)r->srv->cfg->connection_memory;
	size_t room = framing_head_room(pool);
	size_t used = framing_head_bytes(r->conn, url, method, version);

	if (used <= pool - room)
		return 0;
	snprintf(r->detail, sizeof r->detail,
		 "the request line and headers take about %zu bytes: more than "
		 "--connection-memory (%zu) allows, less %zu bytes for the answer",
		 used, pool, room);
	return 1;
}

/* The connection opened when its address had --per-ip-limit open (peers.h). */
static int over_per_ip_limit(const struct request *r)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci != NULL && peer_conn_over(ci->socket_context);
}

/* Does every answer on this path vary on Accept-Encoding? On a compute
 * path and /metrics some are coded (unless --compress-level 0), and the
 * viewer's files and the OpenAPI document have gzip copies, so all of them
 * do, as they all vary on Origin under a --cors-origins list: the 405 for
 * another method and the refusals made before admission too, not only what
 * the route itself answers. */
static int kind_varies_on_encoding(enum route_kind kind, int level)
{
	if (kind == ROUTE_WEB || kind == ROUTE_OPENAPI)
		return 1;
	return level && (kind == ROUTE_COMPUTE || kind == ROUTE_METRICS);
}

static int path_varies_on_encoding(const struct request *r, enum route_result found,
				   const char *url)
{
	static const enum route_kind coded[] = {ROUTE_WEB, ROUTE_OPENAPI, ROUTE_COMPUTE,
						ROUTE_METRICS};
	int level = r->srv->cfg->compress_level != 0;

	if (found == ROUTE_NO_PATH)
		return 0;
	if (r->route != NULL)
		return kind_varies_on_encoding(r->route->kind, level);
	for (size_t i = 0; i < sizeof coded / sizeof coded[0]; i++)
		if (kind_varies_on_encoding(coded[i], level) && route_path_is(url, coded[i]))
			return 1;
	return 0;
}

/* 404 or 405 for a path no route takes with this method, the body saying
 * which path (as attnd read it, percent-decoded: what a proxy in front made
 * of the client's) and, for a 405, which methods it takes. */
static enum MHD_Result refuse_route(struct request *r, enum route_result found)
{
	if (found == ROUTE_NO_PATH) {
		snprintf(r->detail, sizeof r->detail, "no route matches the path '%.96s'", r->path);
		return refuse_early(r, REJ_NOT_FOUND);
	}
	snprintf(r->detail, sizeof r->detail, "the path '%.96s' does not take %s: it takes %s",
		 r->path, r->method, r->allow);
	return refuse_early(r, REJ_METHOD);
}

/* Everything decided from the request line and headers alone. */
static enum MHD_Result on_headers(struct request *r, const char *url, const char *method,
				  const char *version)
{
	int options = strcmp(method, "OPTIONS") == 0;
	enum route_result found;

	if (framing_check(r->conn, method, url, version, r->detail, sizeof r->detail) != 0)
		return refuse_framing(r);
	if (r->query_ctl) {
		snprintf(r->detail, sizeof r->detail,
			 "the request target's query has a raw control character "
			 "(percent-encode it: %%0A): not accepted");
		return refuse_framing(r);
	}
	if (head_too_large(r, url, method, version))
		return cut_off(r, REJ_BAD_FRAMING); /* no room left for libmicrohttpd's answer */
	r->has_body = hdr_announces_body(&r->hdr);
	found =
	    route_match(options ? "GET" : method, url, &r->route, r->param, r->allow, &r->metric);
	r->vary_encoding = !options && path_varies_on_encoding(r, found, url); /* not a preflight */
	/* before the path's own answers: a message error anywhere */
	if (hdr_framing_ambiguous(&r->hdr)) {
		framing_say_ambiguous(&r->hdr, r->detail, sizeof r->detail);
		return refuse_framing(r);
	}
	if (over_per_ip_limit(r)) {
		r->close = 1;
		refusals_note(r->srv->refusals, LIMIT_PER_IP);
		return refuse_early(r, REJ_PER_IP);
	}
	if (options && strcmp(url, "*") == 0) /* framing_check lets no other method have it */
		route_allow_any(r->allow); /* the server as a whole (RFC 9110 section 9.3.7) */
	else if (found == ROUTE_NO_PATH)
		return refuse_route(r, found);
	if (options) {
		r->route = NULL;
		r->preflight = 1;
		return admit_inline(r);
	}
	if (found == ROUTE_NO_METHOD)
		return refuse_route(r, found);
	if (!authorized(r))
		return refuse_early(r, REJ_UNAUTHORIZED);
	if (r->route->kind == ROUTE_COMPUTE)
		return admit_compute(r);
	return admit_inline(r);
}

static int past_deadline(const struct request *r, double now)
{
	return now - r->t_start > (double)r->srv->cfg->request_deadline;
}

/* With a body byte just read and the --request-deadline nearer than the
 * inactivity timeout set in watch_receiving, that timeout (restarted by
 * every byte) is cut to the deadline's whole seconds plus 2: a client that
 * trickles up to its 408 and then stays silent is closed within 2 s of it.
 * libmicrohttpd is called only when the value falls, once a second at most. */
static void shorten_timeout(struct request *r, double now)
{
	double left = r->t_start + (double)r->srv->cfg->request_deadline - now;
	unsigned t;

	if (left < 0 || left + 2 >= (double)r->recv_timeout)
		return;
	t = (unsigned)left + 2;
	MHD_set_connection_option(r->conn, MHD_CONNECTION_OPTION_TIMEOUT, t);
	r->recv_timeout = t;
}

/* r->detail for a coded body that does not inflate, in the decoder's words. */
static void say_not_inflating(struct request *r)
{
	snprintf(r->detail, sizeof r->detail, "the %s request body does not inflate: %s",
		 coding_name(r->body_coding), body_decoder_message(r->decoder));
}

/* A chunk of a gzip or deflate body, inflated into r->body, whose hard
 * maximum (--max-body) bounds the inflated bytes: a zip bomb stops there,
 * with nothing allocated past it, and is cut off with 413. The bytes on the
 * wire are bounded too. A stream found corrupt is cut off with 400 at once,
 * not read to its end. */
static enum MHD_Result on_coded_body(struct request *r, const char *data, size_t n)
{
	enum decode_status st;

	if (r->bytes_in > r->srv->cfg->max_body)
		return cut_off(r, REJ_TOO_LARGE);
	st = body_decoder_feed(r->decoder, data, n, &r->body);
	if (st == DECODE_NOMEM)
		return MHD_NO; /* out of memory: close the connection */
	/* the body's own faults first: a retry after a 503 would not mend them */
	if (st == DECODE_TOO_LARGE) {
		snprintf(r->detail, sizeof r->detail,
			 "the request body inflates to more than --max-body (%llu bytes)",
			 r->srv->cfg->max_body);
		return cut_off(r, REJ_TOO_LARGE);
	}
	if (st == DECODE_CORRUPT) { /* no later byte can mend it: answer now */
		say_not_inflating(r);
		return cut_off(r, REJ_BAD_ENCODING);
	}
	if (hold_body(r, r->body.len) != 0) /* what one chunk inflated to, at most */
		return cut_off(r, REJ_OVERLOADED);
	return MHD_YES;
}

/* The end of a coded body: 1 when it inflated whole, else 0 with r->detail
 * saying why. The decoder's memory goes back before the compute. */
static int body_inflated(struct request *r)
{
	enum decode_status st;

	if (r->decoder == NULL)
		return 1;
	st = body_decoder_finish(r->decoder);
	if (st != DECODE_OK)
		say_not_inflating(r);
	body_decoder_free(r->decoder);
	r->decoder = NULL;
	return st == DECODE_OK;
}

/* A body chunk: appended, or the request cut off. libmicrohttpd 0.9.75
 * takes no response in the middle of a body, so a body that passes
 * --max-body (a chunked one can, whatever it announced) or arrives past
 * --request-deadline is answered on the socket itself, 413 or 408 with
 * Connection: close (cutoff.h), and the connection closed: it is not read
 * (and discarded) until it ends, which it may never do. */
static enum MHD_Result on_body(struct request *r, const char *data, size_t *size)
{
	size_t n = *size;
	double now;

	*size = 0;
	r->bytes_in += n;
	if (atomic_load(&r->cut) != 0) /* the watcher answered 408: close */
		return cut_off(r, REJ_TIMEOUT);
	if (r->state == REQ_ANSWERED) /* refused before the body: libmicrohttpd drops it */
		return r->bytes_in > r->srv->cfg->max_body ? MHD_NO : MHD_YES;
	watch_touch(&r->recv_watch); /* its --timeout starts again */
	now = clock_seconds();
	if (past_deadline(r, now))
		return cut_off(r, REJ_TIMEOUT);
	shorten_timeout(r, now);
	if (r->state != REQ_RECEIVING) { /* an inline route: the body is not needed */
		if (r->bytes_in > r->srv->cfg->max_body)
			return cut_off(r, REJ_TOO_LARGE);
		return MHD_YES;
	}
	if (r->decoder != NULL)
		return on_coded_body(r, data, n);
	if (n > r->body.max - r->body.len)
		return cut_off(r, REJ_TOO_LARGE);
	if (hold_body(r, r->body.len + n) != 0)
		return cut_off(r, REJ_OVERLOADED);
	if (buf_append(&r->body, data, n) != 0)
		return MHD_NO; /* out of memory: close the connection */
	return MHD_YES;
}

/* The call after the whole body, and the call after a resume. */
static enum MHD_Result on_complete(struct request *r)
{
	switch (r->state) {
	case REQ_RECEIVING:
		received(r);
		if (atomic_load(&r->cut) != 0) /* the watcher answered 408: close */
			return cut_off(r, REJ_TIMEOUT);
		if (past_deadline(r, clock_seconds()))
			return refuse(r, REJ_TIMEOUT);
		if (!body_inflated(r))
			return refuse(r, REJ_BAD_ENCODING);
		if (compute_small(r))
			return answer_reply(r);
		return submit_compute(r);
	case REQ_INLINE:
		received(r);
		if (atomic_load(&r->cut) != 0)
			return cut_off(r, REJ_TIMEOUT);
		return answer_inline(r);
	case REQ_REPLIED:
		return answer_reply(r);
	case REQ_CLOSED:
		return MHD_NO;
	case REQ_REFUSED:
		return refuse(r, r->refusal);
	case REQ_QUEUED:
	case REQ_ANSWERED:
		return MHD_YES;
	}
	return MHD_NO;
}

/* The mark on_uri leaves in *con_cls for a request whose query holds a raw
 * control character: libmicrohttpd hands the query to attnd only decoded
 * and split into arguments (a raw CR among them), so it is looked at here,
 * on the raw target, and refused in on_headers as the path's are. Never a
 * request: on_request makes one in its place. */
static char query_ctl_mark;

static int is_query_ctl_mark(const void *p)
{
	return p == &query_ctl_mark;
}

/* libmicrohttpd's MHD_OPTION_URI_LOG_CALLBACK, called with the raw target
 * before it is parsed further; its result is the request's first *con_cls.
 * It only looks: answering from here left libmicrohttpd 0.9.75 a state it
 * did not survive at shutdown (docs/security.md). */
void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls;
	(void)conn;
	return framing_query_has_ctl(uri) ? &query_ctl_mark : NULL;
}

enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
			   const char *method, const char *version, const char *upload_data,
			   size_t *upload_data_size, void **con_cls)
{
	struct request *r;

	if (*con_cls == NULL || is_query_ctl_mark(*con_cls)) {
		int query_ctl = *con_cls != NULL;

		*con_cls = NULL;
		r = request_new(cls, conn, url, method);
		if (r == NULL)
			return MHD_NO;
		r->query_ctl = query_ctl;
		*con_cls = r;
		return on_headers(r, url, method, version);
	}
	r = *con_cls;
	if (*upload_data_size > 0)
		return on_body(r, upload_data, upload_data_size);
	/* The final call (and the one after a resume) has no upload_data. A
	 * request without a body but with `Expect: 100-continue` gets one more
	 * call before it, with upload_data and no bytes, when the next
	 * request's bytes are already read: libmicrohttpd 0.9.75 takes no
	 * answer then, and an answer tried would close the connection with
	 * neither of them answered. */
	if (upload_data != NULL)
		return MHD_YES;
	return on_complete(r);
}

void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		  enum MHD_RequestTerminationCode toe)
{
	struct http_server *srv = cls;
	struct request *r;

	if (*con_cls == NULL || is_query_ctl_mark(*con_cls)) { /* no on_request came */
		*con_cls = NULL;
		return;
	}
	r = *con_cls;
	if (r->write_watched && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
		MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
					  (unsigned)srv->cfg->timeout);
	unwatch_receiving(r); /* before the log: the watcher may have set the status */
	record_request(r, toe);
	request_free(r);
	*con_cls = NULL;
	metrics_in_flight(srv->metrics, -1);
	atomic_fetch_add(&srv->completed, 1);
	atomic_fetch_sub(&srv->active, 1);
}

/* A seed for the ids set_request_id makes: another each start. */
unsigned long long request_id_seed(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return mix64((unsigned long long)ts.tv_nsec ^ ((unsigned long long)ts.tv_sec << 20) ^
		     (unsigned long long)getpid());
}
