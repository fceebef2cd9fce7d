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
 * the state both share is in http_request.h.
 * A compute route's answer is compressed where it is made, on the worker,
 * when Accept-Encoding allows (call_api, compress.h).
 */
#include "http_request.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "api/error.h"
#include "common/fmt.h"
#include "compress.h"
#include "framing.h"
#include "headers.h"
#include "linger.h"
#include "log.h"
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
				 "the body must be JSON (Content-Type: application/json), or "
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
			 "the request target's query has a control character (raw, or "
			 "percent-encoded such as %%00): not accepted");
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

/* The mark on_uri leaves in *con_cls for a request whose query holds a
 * control character: libmicrohttpd hands the query to attnd only decoded
 * and split into arguments (a raw CR, or %00 read as the end of one), so it
 * is looked at here, on the raw target, and refused in on_headers as the
 * path's are. Never a request: on_request makes one in its place. */
static char query_ctl_mark;

static int is_query_ctl_mark(const void *p)
{
	return p == &query_ctl_mark;
}

/* libmicrohttpd's MHD_OPTION_URI_LOG_CALLBACK, called with the raw target
 * before it is parsed further; its result is the request's first *con_cls.
 * It only looks: answering from here left libmicrohttpd 0.9.75 a state it
 * did not survive at shutdown (docs/security.md). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	(void)cls;
	(void)conn;
	return framing_query_has_ctl(uri) ? &query_ctl_mark : NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
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
	return on_complete(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
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

/* ---- the daemon ---------------------------------------------------------- */

/* The message libmicrohttpd logs when the application's callback returns
 * MHD_NO, as cut_off does on purpose (the answer was sent, and the access
 * log has it): 1 when fmt with ap is that one. */
__attribute__((format(printf, 1, 0))) static int after_cut_off(const char *fmt, va_list ap)
{
	static const char message[] = "Application reported internal error";
	char head[sizeof message];
	va_list copy;

	va_copy(copy, ap);
	vsnprintf(head, sizeof head, fmt, copy);
	va_end(copy);
	return strcmp(head, message) == 0;
}

/* libmicrohttpd's messages: a refusal by one of its limits is counted and
 * logged once a second (refusals.h), the close after a cut_off dropped,
 * any other logged as an error. */
__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http_server *srv = cls;
	va_list copy;
	int refusal = 0;

	if (srv->refusals != NULL) {
		va_copy(copy, ap);
		refusal = refusals_from_mhd(srv->refusals, fmt, copy);
		va_end(copy);
	}
	if (!refusal && !(after_cut_off(fmt, ap) && cut_off_closed()))
		log_verror(fmt, ap);
}

/* Each connection from its start to its close: counted per address for
 * --per-ip-limit (peers.h); its handle is the socket context. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct http_server *srv = cls;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) { /* libmicrohttpd close()s it next */
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci != NULL)
			lingerer_on_close(srv->linger, ci->connect_fd);
		atomic_fetch_sub(&srv->connections, 1);
	} else {
		atomic_fetch_add(&srv->connections, 1);
	}
	if (srv->peers == NULL)
		return;
	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		peers_disconnect(srv->peers, *socket_context);
		*socket_context = NULL;
		return;
	}
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	*socket_context = peers_connect(srv->peers, ci != NULL ? ci->client_addr : NULL);
}

union sockaddr_any {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

/* Fills addr from the numeric --host; returns the MHD flag it needs, or -1.
 * `::` takes IPv4 too (IPV6_V6ONLY off), as "every interface" means: a
 * probe of 127.0.0.1 (the image's HEALTHCHECK) reaches it. */
static int bind_address(const struct attnd_config *cfg, union sockaddr_any *addr)
{
	memset(addr, 0, sizeof *addr);
	if (inet_pton(AF_INET, cfg->host, &addr->in4.sin_addr) == 1) {
		addr->in4.sin_family = AF_INET;
		addr->in4.sin_port = htons((uint16_t)cfg->port);
		return 0;
	}
	if (inet_pton(AF_INET6, cfg->host, &addr->in6.sin6_addr) == 1) {
		addr->in6.sin6_family = AF_INET6;
		addr->in6.sin6_port = htons((uint16_t)cfg->port);
		return IN6_IS_ADDR_UNSPECIFIED(&addr->in6.sin6_addr) ? MHD_USE_DUAL_STACK
								      : MHD_USE_IPv6;
	}
	return -1;
}

static unsigned long long seed_ids(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return mix64((unsigned long long)ts.tv_nsec ^ ((unsigned long long)ts.tv_sec << 20) ^
		     (unsigned long long)getpid());
}

static struct MHD_Daemon *start_daemon(struct http_server *srv, const union sockaddr_any *addr,
				       unsigned extra_flags)
{
	const struct attnd_config *cfg = srv->cfg;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			 MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG | extra_flags;
	unsigned io_threads = (unsigned)config_io_thread_count(cfg);
	struct MHD_OptionItem pool[] = {
	    {io_threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, io_threads, NULL},
	    {MHD_OPTION_END, 0, NULL}};

	/* the logger comes first so that every message of the set-up reaches it;
	 * a pool of one is the single polling thread, the option left out (it
	 * logs a size below 2 as an error; MHD_quiesce_daemon needs MHD_USE_ITC
	 * with a pool). poll(), not epoll: libmicrohttpd 0.9.75's
	 * epoll is edge-triggered, and a client's close that arrives in the same
	 * edge as its last bytes (a partial request, then FIN) was never seen:
	 * the socket sat in CLOSE-WAIT, holding its connection slot, until
	 * --timeout (issue 17, item 1; docs/security.md). poll() is level-
	 * triggered, so the end of the stream is read as soon as it is there. */
	return MHD_start_daemon(
	    flags, (uint16_t)cfg->port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
	    mhd_log, srv, MHD_OPTION_ARRAY, pool, MHD_OPTION_SOCK_ADDR, &addr->sa,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->connection_limit,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)cfg->connection_memory,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout, MHD_OPTION_NOTIFY_COMPLETED,
	    on_completed, srv, MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
	    MHD_OPTION_UNESCAPE_CALLBACK, framing_unescape, NULL, MHD_OPTION_URI_LOG_CALLBACK, on_uri,
	    NULL, MHD_OPTION_END);
}

/* The per-address table (with a --per-ip-limit) and the refusals' log. */
static int start_limits(struct http_server *srv, char *err, size_t errlen)
{
	const struct attnd_config *cfg = srv->cfg;

	srv->refusals = refusals_new(srv->metrics, cfg->connection_limit, cfg->per_ip_limit,
				     cfg->connection_memory);
	if (cfg->per_ip_limit > 0)
		srv->peers = peers_new((size_t)cfg->per_ip_limit);
	if (srv->refusals == NULL || (cfg->per_ip_limit > 0 && srv->peers == NULL)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}

struct http_server *http_start(const struct http_deps *deps, char *err, size_t errlen)
{
	struct http_server *srv = shard_calloc(sizeof *srv);
	union sockaddr_any addr;
	const union MHD_DaemonInfo *info;
	int family_flag;

	if (srv == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	srv->cfg = deps->cfg;
	srv->listener = -1;
	srv->svc = deps->svc;
	srv->metrics = deps->metrics;
	srv->pool = deps->pool;
	srv->max_response_bytes = deps->max_response_bytes;
	pending_init(&srv->pending, (size_t)deps->cfg->max_pending_mb * ((size_t)1 << 20));
	pending_init(&srv->receiving, (size_t)deps->cfg->max_receiving_mb * ((size_t)1 << 20));
	srv->split.pool = deps->pool;
	srv->split.metrics = deps->metrics;
	srv->split.threads = deps->split_threads;
	srv->split.workers = deps->engine_workers;
	srv->id_seed = seed_ids();
	srv->watch = watch_new(err, errlen);
	if (srv->watch == NULL)
		goto fail;
	srv->linger = lingerer_new(deps->metrics, err, errlen);
	if (srv->linger == NULL)
		goto fail;
	if (start_limits(srv, err, errlen) != 0)
		goto fail;
	family_flag = bind_address(deps->cfg, &addr);
	if (family_flag < 0) {
		snprintf(err, errlen,
			 "--host (or ATTND_HOST) '%s' is not a numeric IPv4 or IPv6 address",
			 deps->cfg->host);
		goto fail;
	}
	srv->daemon = start_daemon(srv, &addr, (unsigned)family_flag);
	if (srv->daemon == NULL) {
		snprintf(err, errlen, "cannot listen on %s:%llu (in use, or not allowed?)",
			 deps->cfg->host, deps->cfg->port);
		goto fail;
	}
	info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = info != NULL ? info->port : (unsigned)deps->cfg->port;
	return srv;
fail:
	watch_free(srv->watch);
	lingerer_free(srv->linger);
	peers_free(srv->peers);
	refusals_free(srv->refusals);
	free(srv);
	return NULL;
}

unsigned http_port(const struct http_server *srv)
{
	return srv->port;
}

/* The listener is shut, not closed: libmicrohttpd's I/O threads may still
 * poll it until they wake to the quiesce (its documentation: close it only
 * after MHD_stop_daemon), and each poll holds the socket open, listening,
 * so a close() left it taking connections that were reset once the last
 * poll let go. shutdown(2) stops the listening at once, whoever holds it:
 * a connect after this is refused. Draining, which makes every answer close
 * its connection, begins only then, so a client told to close and
 * reconnecting is refused, never reset after sending its request. */
void http_begin_drain(struct http_server *srv)
{
	MHD_socket listener = MHD_quiesce_daemon(srv->daemon);

	if (listener != MHD_INVALID_SOCKET) {
		srv->listener = listener;
		if (shutdown(listener, SHUT_RDWR) != 0)
			log_error("drain: could not stop listening: %s", strerror(errno));
	} else {
		log_error("drain: could not stop listening");
	}
	atomic_store(&srv->draining, 1);
}

long http_active(const struct http_server *srv)
{
	return atomic_load(&srv->active);
}

long http_connections(const struct http_server *srv)
{
	return atomic_load(&srv->connections);
}

size_t http_lingering(const struct http_server *srv)
{
	return lingerer_count(srv->linger);
}

unsigned long http_completed(const struct http_server *srv)
{
	return atomic_load(&srv->completed);
}

void http_tick(struct http_server *srv)
{
	refusals_flush(srv->refusals);
}

void http_log_waiting(struct http_server *srv)
{
	refusals_flush_final(srv->refusals);
}

void http_stop(struct http_server *srv)
{
	if (srv == NULL)
		return;
	if (srv->daemon != NULL)
		MHD_stop_daemon(srv->daemon);
	if (srv->listener >= 0)
		close(srv->listener);
	watch_free(srv->watch); /* after the daemon: no request is registered now */
	lingerer_free(srv->linger); /* after the daemon: no socket is added now */
	peers_free(srv->peers); /* every connection closed with the daemon */
	refusals_free(srv->refusals);
	free(srv);
}
