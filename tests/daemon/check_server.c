/*
 * check_server.c: the transport, end to end. Each test starts the real
 * daemon (build/attnd, or $ATTND_BIN) on an ephemeral loopback port
 * (tests/live_daemon.h) and speaks raw HTTP/1.1 over a plain socket, so
 * framing cases (two Content-Length headers, Expect: 100-continue, chunked
 * bodies) are sent byte for byte. The daemon's operation (load, draining,
 * the command line) is check_server_ops.c.
 *
 * The daemon's stderr (its logs) goes to $ATTND_TEST_LOG when set, else to
 * /dev/null. Timing is only ever used as a generous upper bound.
 */
#include <check.h>

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

/* How long a test waits for a metric to reach the value it expects. */
enum { METRIC_WAIT_MS = 10000 };

/* ---- tests --------------------------------------------------------------- */

START_TEST(test_healthz_and_common_headers)
{
	struct live_resp r = {0};
	const char *timing;

	LIVE_DAEMON(d, "--no-builtins");
	live_get(d.port, "/healthz", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "{\"status\":\"ok\"}");
	ck_assert_uint_eq(strlen(live_header(&r, "X-Request-Id")), 16);
	ck_assert_uint_eq(strspn(live_header(&r, "X-Request-Id"), "0123456789abcdef"), 16);
	timing = live_header(&r, "Server-Timing");
	ck_assert_ptr_nonnull(timing);
	ck_assert_ptr_nonnull(strstr(timing, "parse;dur="));
	ck_assert_ptr_nonnull(strstr(timing, "queue;dur="));
	ck_assert_ptr_nonnull(strstr(timing, "compute;dur="));
	ck_assert_ptr_nonnull(strstr(timing, "encode;dur="));
	ck_assert_ptr_nonnull(strstr(timing, ", total;dur="));
	/* CORS only where a browser asked (Origin): a no-store answer is kept by
	 * no cache to be served to a browser later */
	ck_assert_ptr_null(live_header(&r, "Access-Control-Allow-Origin"));
	ck_assert_ptr_null(live_header(&r, "Access-Control-Expose-Headers"));
	live_resp_release(&r);
	live_exchange(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://app.example\r\n\r\n",
		      &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(live_header(&r, "Access-Control-Allow-Origin"), "*");
	ck_assert_ptr_nonnull(
	    strstr(live_header(&r, "Access-Control-Expose-Headers"), "X-Request-Id"));
	/* an answer a cache may keep (no-cache) carries them whatever asked */
	live_resp_release(&r);
	live_get(d.port, "/openapi.json", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(live_header(&r, "Cache-Control"), "no-cache");
	ck_assert_str_eq(live_header(&r, "Access-Control-Allow-Origin"), "*");
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_readyz)
{
	struct live_resp r = {0};

	LIVE_DAEMON(with, "--threads", "1");
	live_get(with.port, "/readyz", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "{\"status\":\"ready\"}");
	live_stop(&with);

	LIVE_DAEMON(without, "--no-builtins");
	live_get(without.port, "/readyz", &r);
	ck_assert_int_eq(r.status, 503);
	live_stop(&without);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_metrics_format_and_counter)
{
	struct live_resp r = {0};
	const char *series = "attnd_http_requests_total{route=\"/healthz\",code=\"200\"}";
	double before;

	LIVE_DAEMON(d, "--no-builtins");
	live_get(d.port, "/healthz", &r);
	/* counted on completion, which with several I/O threads may come after
	 * the next request's answer */
	live_wait_metric(d.port, series, 1, METRIC_WAIT_MS);
	live_get(d.port, "/metrics", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(live_header(&r, "Content-Type"), "version=0.0.4"));
	ck_assert_ptr_nonnull(strstr(r.body, "# HELP attnd_http_requests_total "));
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE attnd_http_requests_total counter\n"));
	ck_assert_ptr_nonnull(
	    strstr(r.body, "# TYPE attnd_http_request_duration_seconds histogram\n"));
	ck_assert_ptr_nonnull(strstr(
	    r.body, "attnd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"+Inf\"}"));
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE attnd_http_requests_in_flight gauge\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE attnd_compute_queue_depth gauge\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE attnd_compute_running gauge\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE attnd_rejections_total counter\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE attnd_engine_flops_total counter\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "attnd_http_request_bytes_total "));
	ck_assert_ptr_nonnull(strstr(r.body, "attnd_http_response_bytes_total "));
	before = live_metric(r.body, series);
	ck_assert(before == 1);
	live_get(d.port, "/healthz", &r);
	live_wait_metric(d.port, series, before + 1, METRIC_WAIT_MS);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_not_found_and_method)
{
	static const char *const bad_targets[] = {
	    "http://a%2Fhealthz", "http://a#/healthz", "http%3A//a/healthz", "http:///healthz",
	    "http://",		  "http://a@b/healthz", "healthz",
	};
	struct live_resp r = {0};
	char path[312];

	LIVE_DAEMON(d, "--no-builtins");
	live_get(d.port, "/no/such/route", &r);
	live_assert_error(&r, 404, "not_found");
	/* the body says which path, as attnd read it (a proxy's doubled slash, say) */
	live_get(d.port, "//v1/m%6Fdels", &r);
	live_assert_error(&r, 404, "not_found");
	ck_assert_ptr_nonnull(strstr(r.body, "no route matches the path '//v1/models'"));
	live_exchange(d.port, "DELETE /healthz HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	live_assert_error(&r, 405, "method_not_allowed");
	ck_assert_str_eq(live_header(&r, "Allow"), "GET, HEAD, OPTIONS");
	ck_assert_ptr_nonnull(
	    strstr(r.body, "the path '/healthz' does not take DELETE: it takes GET, HEAD, OPTIONS"));
	live_exchange(d.port, "GET /v1/attention HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	live_assert_error(&r, 405, "method_not_allowed");
	ck_assert_str_eq(live_header(&r, "Allow"), "POST, OPTIONS");
	/* the viewer's route with a file it does not have names the file */
	live_get(d.port, "/web/nope.js", &r);
	live_assert_error(&r, 404, "not_found");
	ck_assert_ptr_nonnull(strstr(r.body, "no viewer file 'nope.js'"));
	/* a name is one segment: a deeper path is no route, not an unknown model */
	live_get(d.port, "/v1/models/a/b", &r);
	live_assert_error(&r, 404, "not_found");
	/* a target in absolute-form routes by its path (RFC 9112 section 3.2.2) */
	live_exchange(d.port, "GET http://t:8080/healthz HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	ck_assert_msg(r.status == 200, "absolute-form: %d %s", r.status, r.body);
	live_exchange(d.port, "GET https://t/healthz HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	ck_assert_msg(r.status == 200, "absolute-form: %d %s", r.status, r.body);
	live_exchange(d.port, "GET HTTPS://t/nowhere HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	live_assert_error(&r, 404, "not_found");
	/* an authority that is no plain host, read on the raw bytes, is refused:
	 * a proxy in front would take part of it for the host, attnd for the path */
	for (size_t i = 0; i < sizeof bad_targets / sizeof bad_targets[0]; i++) {
		char line[128];

		snprintf(line, sizeof line, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", bad_targets[i]);
		live_exchange(d.port, line, &r);
		ck_assert_msg(r.status == 400, "%s: %d %s", bad_targets[i], r.status, r.body);
	}
	/* a model name past the route's buffer names no model, as a short one */
	memset(path, 'x', sizeof path - 1);
	memcpy(path, "/v1/models/", 11);
	path[sizeof path - 1] = '\0';
	live_get(d.port, path, &r);
	live_assert_error(&r, 404, "model_not_found");
	memcpy(path, "/v2/models/", 11);
	live_get(d.port, path, &r);
	ck_assert_msg(r.status == 404 && strstr(r.body, "no model named") != NULL, "%d: %s",
		      r.status, r.body);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* A fragment is the client's own (RFC 3986 section 3.5, left out of the
 * request target by RFC 9112 section 3.2): one sent is a 400 saying so,
 * not a 404 for a path with '#' in it; %23, a '#' in the path, still routes. */
START_TEST(test_fragment_refused)
{
	static const char *const targets[] = {"/healthz#x", "/healthz#", "/#", "http://t/healthz#x"};
	struct live_resp r = {0};

	LIVE_DAEMON(d, "--no-builtins");
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
		char line[128];

		snprintf(line, sizeof line, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", targets[i]);
		live_exchange(d.port, line, &r);
		live_assert_error(&r, 400, "bad_request");
		ck_assert_msg(strstr(r.body, "the request target has a fragment") != NULL, "%s: %s",
			      targets[i], r.body);
	}
	live_get(d.port, "/healthz%23x", &r);
	live_assert_error(&r, 404, "not_found");
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_media_type)
{
	struct live_resp r = {0};

	LIVE_DAEMON(d, "--no-builtins");
	live_exchange(d.port,
		 "POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n"
		 "Content-Length: 2\r\n\r\n{}",
		 &r);
	live_assert_error(&r, 415, "unsupported_media_type");
	live_exchange(d.port, "POST /v1/sdpa HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}", &r);
	live_assert_error(&r, 415, "unsupported_media_type");
	/* the type is matched whole, not as a prefix of a longer one */
	live_exchange(d.port,
		 "POST /v1/sdpa HTTP/1.1\r\nHost: t\r\nContent-Type: application/json-seq\r\n"
		 "Content-Length: 2\r\n\r\n{}",
		 &r);
	live_assert_error(&r, 415, "unsupported_media_type");
	/* parameters are allowed: this one reaches the API, whatever it answers */
	live_exchange(
	    d.port,
	    "POST /v1/sdpa HTTP/1.1\r\nHost: t\r\nContent-Type: Application/JSON; charset=utf-8\r\n"
	    "Content-Length: 2\r\n\r\n{}",
	    &r);
	ck_assert_int_ne(r.status, 415);
	ck_assert_int_ne(r.status, 500);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* The headers every answer of a compute route carries, whether libmicrohttpd
 * sent it or attnd wrote it to the socket mid-body (server/cutoff.h): a
 * browser reads a 413 or 408 only with its CORS header. */
static void assert_answer_headers(const struct live_resp *r, int with_origin)
{
	const char *h;

	ck_assert_ptr_nonnull(live_header(r, "Date"));
	ck_assert_ptr_nonnull(live_header(r, "X-Request-Id"));
	h = live_header(r, "Server-Timing");
	ck_assert_msg(h != NULL && strstr(h, "total;dur=") != NULL, "Server-Timing: %s", h);
	h = live_header(r, "Vary");
	ck_assert_msg(h != NULL && strstr(h, "Accept-Encoding") != NULL, "Vary: %s", h);
	h = live_header(r, "Access-Control-Allow-Origin");
	if (!with_origin) { /* no browser asked: no one reads them */
		ck_assert_msg(h == NULL, "Access-Control-Allow-Origin: %s", h);
		ck_assert_ptr_null(live_header(r, "Access-Control-Expose-Headers"));
		return;
	}
	ck_assert_msg(h != NULL && strcmp(h, "*") == 0, "Access-Control-Allow-Origin: %s", h);
	ck_assert_ptr_nonnull(live_header(r, "Access-Control-Expose-Headers"));
}

START_TEST(test_413_from_content_length_unread)
{
	struct live_resp r = {0};
	char req[512];
	int fd;

	LIVE_DAEMON(d, "--no-builtins", "--max-body", "100");
	/* headers only: the answer must come without any body byte sent */
	snprintf(req, sizeof req, "%sOrigin: https://app.example\r\nContent-Length: 1000000\r\n\r\n",
		 LIVE_POST_ATTENTION);
	fd = live_connect(d.port);
	live_send_str(fd, req);
	live_read_response(fd, &r);
	close(fd);
	live_assert_error(&r, 413, "payload_too_large");
	assert_answer_headers(&r, 1);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_413_with_expect_continue)
{
	struct live_resp r = {0};
	char req[512];
	int fd;

	LIVE_DAEMON(d, "--no-builtins", "--max-body", "100");
	snprintf(req, sizeof req, "%sContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n",
		 LIVE_POST_ATTENTION);
	fd = live_connect(d.port);
	live_send_str(fd, req);
	live_read_response(fd, &r); /* the first response must be the 413, not 100 */
	close(fd);
	live_assert_error(&r, 413, "payload_too_large");
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_413_chunked)
{
	struct live_resp r = {0};
	char req[1024];
	char chunk[81];

	LIVE_DAEMON(d, "--no-builtins", "--max-body", "100");
	memset(chunk, 'x', 80);
	chunk[80] = '\0';
	snprintf(req, sizeof req,
		 "%sTransfer-Encoding: chunked\r\n\r\n50\r\n%s\r\n50\r\n%s\r\n0\r\n\r\n", LIVE_POST_ATTENTION,
		 chunk, chunk);
	live_exchange(d.port, req, &r);
	live_assert_error(&r, 413, "payload_too_large");
	assert_answer_headers(&r, 0); /* written mid-body by attnd itself, no Origin */
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_ambiguous_framing)
{
	static const char *const te[] = {"chunked ", "gzip, chunked", "identity"};
	struct live_resp r = {0};
	char req[512];

	LIVE_DAEMON(d, "--no-builtins");
	snprintf(req, sizeof req, "%sContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", LIVE_POST_ATTENTION);
	live_exchange(d.port, req, &r);
	live_assert_error(&r, 400, "bad_request");
	snprintf(req, sizeof req,
		 "%sContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		 LIVE_POST_ATTENTION);
	live_exchange(d.port, req, &r);
	live_assert_error(&r, 400, "bad_request");
	ck_assert_msg(strstr(r.body, "Content-Length with Transfer-Encoding") != NULL, "%s", r.body);
	/* a coding libmicrohttpd would not decode is named as received: a
	 * trailing space, a list */
	for (size_t i = 0; i < sizeof te / sizeof te[0]; i++) {
		char said[96];

		snprintf(req, sizeof req, "%sTransfer-Encoding: %s\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
			 LIVE_POST_ATTENTION, te[i]);
		live_exchange(d.port, req, &r);
		live_assert_error(&r, 400, "bad_request");
		snprintf(said, sizeof said, "Transfer-Encoding '%s' is not 'chunked'", te[i]);
		ck_assert_msg(strstr(r.body, said) != NULL, "%s: %s", te[i], r.body);
	}
	/* before routing: a path that does not exist, or a method it lacks */
	live_exchange(d.port,
		      "GET /nope HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n",
		      &r);
	live_assert_error(&r, 400, "bad_request");
	live_exchange(d.port,
		      "DELETE /healthz HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n"
		      "Content-Length: 0\r\n\r\n",
		      &r);
	live_assert_error(&r, 400, "bad_request");
	/* each counted under its own route, the unknown path as other */
	live_wait_metric(d.port, "attnd_http_requests_total{route=\"/v1/attention\",code=\"400\"}",
			 2 + sizeof te / sizeof te[0], METRIC_WAIT_MS);
	live_wait_metric(d.port, "attnd_http_requests_total{route=\"other\",code=\"400\"}", 1,
			 METRIC_WAIT_MS);
	live_wait_metric(d.port, "attnd_http_requests_total{route=\"/healthz\",code=\"400\"}", 1,
			 METRIC_WAIT_MS);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_api_key)
{
	/* Authorization fields and the status each gets: the key exactly; the
	 * scheme a token without case (RFC 9110 section 11.1); optional
	 * whitespace around the key (RFC 9110 OWS), not inside it (issue 17) */
	static const struct {
		const char *field;
		int status;
	} fields[] = {
	    {"Authorization: Bearer s3cret-kez", 401},
	    {"Authorization: Bearer s3cret-key2", 401},
	    {"Authorization: Bearer s3cret", 401},
	    {"Authorization: Basic s3cret-key", 401},
	    {"Authorization: Bearer s3cret-key", 200},
	    {"authorization: bearer s3cret-key", 200},
	    {"Authorization: BEARER s3cret-key", 200},
	    {"Authorization: Bearer S3CRET-KEY", 401},
	    {"Authorization: Bearer s3cret-key ", 200},
	    {"Authorization: Bearer \ts3cret-key\t ", 200},
	    {"Authorization: Bearer s3cret-key x", 401},
	};
	struct live_resp r = {0};

	LIVE_DAEMON(d, "--no-builtins", "--api-key", "s3cret-key");
	live_get(d.port, "/v1/models", &r);
	live_assert_error(&r, 401, "unauthorized");
	ck_assert_str_eq(live_header(&r, "WWW-Authenticate"), "Bearer");
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		char request[160];

		snprintf(request, sizeof request,
			 "GET /v1/models HTTP/1.1\r\nHost: t\r\n%s\r\n\r\n", fields[i].field);
		live_exchange(d.port, request, &r);
		ck_assert_msg(r.status == fields[i].status, "%s: %d, want %d", fields[i].field,
			      r.status, fields[i].status);
		if (fields[i].status == 401)
			live_assert_error(&r, 401, "unauthorized");
	}
	/* probes and metrics stay open */
	live_get(d.port, "/healthz", &r);
	ck_assert_int_eq(r.status, 200);
	live_get(d.port, "/metrics", &r);
	ck_assert_int_eq(r.status, 200);
	live_get(d.port, "/readyz", &r);
	ck_assert_int_ne(r.status, 401);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_api_key_from_env)
{
	struct live_resp r = {0};

	setenv("ATTND_API_KEY", "from-env", 1);
	LIVE_DAEMON(d, "--no-builtins");
	unsetenv("ATTND_API_KEY");
	live_get(d.port, "/version", &r);
	live_assert_error(&r, 401, "unauthorized");
	live_exchange(d.port,
		 "GET /version HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer from-env\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_cors_preflight_any_origin)
{
	struct live_resp r = {0};

	LIVE_DAEMON(d, "--no-builtins");
	live_exchange(d.port,
		 "OPTIONS /v1/attention HTTP/1.1\r\nHost: t\r\nOrigin: https://app.example\r\n"
		 "Access-Control-Request-Method: POST\r\n\r\n",
		 &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_str_eq(live_header(&r, "Access-Control-Allow-Origin"), "*");
	ck_assert_ptr_nonnull(strstr(live_header(&r, "Access-Control-Allow-Methods"), "POST"));
	ck_assert_ptr_nonnull(
	    strstr(live_header(&r, "Access-Control-Allow-Headers"), "Content-Type"));
	ck_assert_ptr_nonnull(
	    strstr(live_header(&r, "Access-Control-Allow-Headers"), "Authorization"));
	ck_assert_ptr_nonnull(
	    strstr(live_header(&r, "Access-Control-Allow-Headers"), "X-Request-Id"));
	ck_assert_ptr_nonnull(live_header(&r, "Access-Control-Max-Age"));
	ck_assert_ptr_null(live_header(&r, "Vary"));
	/* a script may read what says what to do next */
	ck_assert_str_eq(live_header(&r, "Access-Control-Expose-Headers"),
			 "X-Request-Id, Server-Timing, Inference-Header-Content-Length, "
			 "Content-Encoding, Retry-After, Allow, WWW-Authenticate, Accept-Encoding, ETag");
	/* the headers a page asks for (its tracing's too) are allowed */
	live_exchange(d.port,
		      "OPTIONS /v1/attention HTTP/1.1\r\nHost: t\r\nOrigin: https://app.example\r\n"
		      "Access-Control-Request-Method: POST\r\n"
		      "Access-Control-Request-Headers: content-type,traceparent, x-api-key\r\n\r\n",
		      &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_str_eq(live_header(&r, "Access-Control-Allow-Headers"),
			 "content-type,traceparent, x-api-key");
	ck_assert_str_eq(live_header(&r, "Vary"), "Access-Control-Request-Headers");
	/* a list that is no list of names is not echoed */
	live_exchange(d.port,
		      "OPTIONS /v1/attention HTTP/1.1\r\nHost: t\r\nOrigin: https://app.example\r\n"
		      "Access-Control-Request-Method: POST\r\n"
		      "Access-Control-Request-Headers: a:b\r\n\r\n",
		      &r);
	ck_assert_ptr_nonnull(
	    strstr(live_header(&r, "Access-Control-Allow-Headers"), "Authorization"));
	ck_assert_ptr_null(live_header(&r, "Vary"));
	/* echoed up to 512 bytes (one long name here), not past them */
	for (size_t n = 512; n <= 513; n++) {
		char name[514], req[800];

		memset(name, 'x', n);
		name[n] = '\0';
		snprintf(req, sizeof req,
			 "OPTIONS /v1/attention HTTP/1.1\r\nHost: t\r\nOrigin: https://app.example\r\n"
			 "Access-Control-Request-Method: POST\r\n"
			 "Access-Control-Request-Headers: %s\r\n\r\n",
			 name);
		live_exchange(d.port, req, &r);
		ck_assert_int_eq(r.status, 204);
		if (n == 512)
			ck_assert_str_eq(live_header(&r, "Access-Control-Allow-Headers"), name);
		else
			ck_assert_ptr_nonnull(strstr(live_header(&r, "Access-Control-Allow-Headers"),
						     "Authorization"));
	}
	live_exchange(d.port, "OPTIONS /nowhere HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 404);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* "*" written with spaces or a trailing comma (as a YAML value or an env
 * file may give it) is still every origin, not a list that matches none;
 * a list's origins are read past the spaces after its commas. */
START_TEST(test_cors_origins_spaced)
{
	static const struct {
		const char *list, *allowed;
	} cases[] = {{" *, ", "*"}, {"https://a.example, https://b.example", "https://b.example"}};
	struct live_resp r = {0};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		LIVE_DAEMON(d, "--no-builtins", "--cors-origins", cases[i].list);
		live_exchange(d.port,
			      "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://b.example\r\n\r\n",
			      &r);
		ck_assert_str_eq(live_header(&r, "Access-Control-Allow-Origin"), cases[i].allowed);
		if (strcmp(cases[i].allowed, "*") == 0) /* every origin: the answer varies on none */
			ck_assert_ptr_null(live_header(&r, "Vary"));
		live_stop(&d);
	}
	live_resp_release(&r);
}
END_TEST

START_TEST(test_cors_origin_list)
{
	struct live_resp r = {0};

	LIVE_DAEMON(d, "--no-builtins", "--cors-origins", "https://a.example,https://b.example");
	live_exchange(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://b.example\r\n\r\n",
		 &r);
	ck_assert_str_eq(live_header(&r, "Access-Control-Allow-Origin"), "https://b.example");
	ck_assert_str_eq(live_header(&r, "Vary"), "Origin");
	ck_assert_ptr_nonnull(
	    strstr(live_header(&r, "Access-Control-Expose-Headers"), "Server-Timing"));
	/* the page's PerformanceResourceTiming may read Server-Timing too */
	ck_assert_str_eq(live_header(&r, "Timing-Allow-Origin"), "https://b.example");
	live_exchange(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://evil.example\r\n\r\n",
		 &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_null(live_header(&r, "Access-Control-Allow-Origin"));
	ck_assert_ptr_null(live_header(&r, "Timing-Allow-Origin"));
	/* a listed origin is matched whole: not a prefix of it, nor one it is a prefix of */
	live_exchange(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://a.exampl\r\n\r\n",
		 &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_null(live_header(&r, "Access-Control-Allow-Origin"));
	live_exchange(d.port,
		 "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example.evil\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_null(live_header(&r, "Access-Control-Allow-Origin"));
	live_exchange(d.port,
		 "OPTIONS /v1/sdpa HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_str_eq(live_header(&r, "Access-Control-Allow-Origin"), "https://a.example");
	ck_assert_ptr_null(live_header(&r, "Timing-Allow-Origin")); /* no timing to read */
	/* an origin not listed gets no CORS headers: nothing echoed, so its
	 * answer does not vary on the headers it asked for */
	live_exchange(d.port,
		 "OPTIONS /v1/sdpa HTTP/1.1\r\nHost: t\r\nOrigin: https://evil.example\r\n"
		 "Access-Control-Request-Method: POST\r\n"
		 "Access-Control-Request-Headers: traceparent\r\n\r\n",
		 &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_ptr_null(live_header(&r, "Access-Control-Allow-Headers"));
	ck_assert_str_eq(live_header(&r, "Vary"), "Origin");
	/* a 405 varies as the path's other answers do: on a compute path (whose
	 * answers may be coded) on Accept-Encoding too */
	live_exchange(d.port, "GET /v1/sdpa HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n\r\n",
		 &r);
	ck_assert_int_eq(r.status, 405);
	ck_assert_str_eq(live_header(&r, "Access-Control-Allow-Origin"), "https://a.example");
	ck_assert_str_eq(live_header(&r, "Vary"), "Origin, Accept-Encoding");
	live_exchange(d.port,
		 "GET /v2/models/m/infer HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n\r\n",
		 &r);
	ck_assert_int_eq(r.status, 405);
	ck_assert_str_eq(live_header(&r, "Vary"), "Origin, Accept-Encoding");
	live_exchange(d.port,
		 "DELETE /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 405);
	ck_assert_str_eq(live_header(&r, "Access-Control-Allow-Origin"), "https://a.example");
	ck_assert_str_eq(live_header(&r, "Vary"), "Origin");
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_request_id)
{
	struct live_resp r = {0};
	char req[1024];
	char long_id[201];

	LIVE_DAEMON(d, "--no-builtins");
	live_exchange(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: trace-42/abc\r\n\r\n",
		 &r);
	ck_assert_str_eq(live_header(&r, "X-Request-Id"), "trace-42/abc");
	/* the headers are read in one pass (headers.h: hdr_scan): the name
	 * without case, and of two fields the first, as a lookup found it */
	live_exchange(d.port,
		      "GET /healthz HTTP/1.1\r\nHost: t\r\nx-request-ID: first-1\r\n"
		      "X-Request-Id: second-2\r\n\r\n",
		      &r);
	ck_assert_str_eq(live_header(&r, "X-Request-Id"), "first-1");
	/* spaces and tabs after a value are not part of it (RFC 9110 5.5) */
	live_exchange(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: trail \t \r\n\r\n",
		      &r);
	ck_assert_str_eq(live_header(&r, "X-Request-Id"), "trail");
	memset(long_id, 'a', 128);
	snprintf(req, sizeof req, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: %.128s  \r\n\r\n",
		 long_id);
	live_exchange(d.port, req, &r);
	ck_assert_uint_eq(strlen(live_header(&r, "X-Request-Id")), 128);
	ck_assert_int_eq(live_header(&r, "X-Request-Id")[0], 'a');
	memset(long_id, 'a', 200);
	long_id[200] = '\0';
	snprintf(req, sizeof req, "GET /nope HTTP/1.1\r\nHost: t\r\nX-Request-Id: %s\r\n\r\n",
		 long_id);
	live_exchange(d.port, req, &r);
	ck_assert_int_eq(r.status, 404);
	ck_assert_uint_eq(strlen(live_header(&r, "X-Request-Id")), 16);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_compute_reply_and_keepalive)
{
	struct live_resp r = {0};
	char req[512];
	int fd;

	LIVE_DAEMON(d, "--threads", "2");
	fd = live_connect(d.port);
	snprintf(req, sizeof req, "%sContent-Length: 1\r\n\r\n{", LIVE_POST_ATTENTION);
	live_send_str(fd, req);
	live_read_response(fd, &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_ptr_nonnull(strstr(r.body, "\"error\""));
	ck_assert_ptr_nonnull(live_header(&r, "Server-Timing"));
	ck_assert(!r.closed);
	/* the same connection serves the next request */
	snprintf(req, sizeof req,
		 "%sContent-Length: 37\r\n\r\n{\"text\":\"the cat sat\",\"model\":\"tiny\"}",
		 LIVE_POST_ATTENTION);
	live_send_str(fd, req);
	live_read_response(fd, &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	ck_assert(r.body_len > 0 && r.body[0] == '{');
	close(fd);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* A body still arriving after --request-deadline is answered 408. The daemon
 * checks the deadline when body bytes arrive, timed from the request's first
 * callback; once /metrics counts the request in flight, that start is behind
 * us on the same clock (CLOCK_MONOTONIC), so the rest of the body is sent as
 * soon as one deadline has passed since then: late for certain, and no
 * later than it must be. */
START_TEST(test_request_deadline)
{
	enum { DEADLINE_S = 1 };
	struct live_resp r = {0};
	char req[512];
	double seen, left;
	int fd;

	LIVE_DAEMON(d, "--no-builtins", "--request-deadline", "1" /* DEADLINE_S */);
	fd = live_connect(d.port);
	snprintf(req, sizeof req, "%sOrigin: https://app.example\r\nContent-Length: 4\r\n\r\n{\"",
		 LIVE_POST_ATTENTION);
	live_send_str(fd, req);
	live_wait_metric(d.port, "attnd_http_requests_in_flight", 2, 30000); /* it and the poll */
	seen = live_now();
	while ((left = seen + DEADLINE_S + 0.001 - live_now()) > 0)
		poll(NULL, 0, (int)(left * 1e3) + 1);
	live_send_str(fd, "a\"");
	live_read_response(fd, &r);
	close(fd);
	live_assert_error(&r, 408, "request_timeout");
	assert_answer_headers(&r, 1); /* written mid-body by attnd itself */
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* A chunked body whose last chunk came in time and whose end ("0\r\n\r\n")
 * comes just past --request-deadline: the request is whole before the
 * watcher's next tick (watch.h: WATCH_TICK_MS) could write its 408, so the
 * final callback answers 408 itself. Every 408 closes the connection and
 * says so, this one too. N connections, each timed as test_request_deadline
 * times its one, start a few ms apart (a /metrics poll each), so their
 * deadlines fall at different points of the tick; each end is sent as soon
 * as its deadline has passed, most of them before the tick. */
START_TEST(test_request_deadline_at_the_end)
{
	enum { DEADLINE_S = 1, N = 8 };
	static const char chunk[] = "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n";
	struct live_resp r = {0};
	double seen[N], left;
	int fd[N];
	char byte;

	LIVE_DAEMON(d, "--no-builtins", "--request-deadline", "1" /* DEADLINE_S */);
	for (int i = 0; i < N; i++) {
		fd[i] = live_connect(d.port);
		live_send_str(fd[i], LIVE_POST_ATTENTION);
		live_send_str(fd[i], chunk);
		/* its first callback, which starts its deadline, is behind us */
		live_wait_metric(d.port, "attnd_http_requests_in_flight", i + 2, 30000);
		seen[i] = live_now();
	}
	live_wait_metric(d.port, "attnd_bodies_receiving_bytes", 2 * N, 30000); /* each chunk read */
	for (int i = 0; i < N; i++) {
		while ((left = seen[i] + DEADLINE_S + 0.001 - live_now()) > 0)
			poll(NULL, 0, (int)(left * 1e3) + 1);
		live_send_str(fd[i], "0\r\n\r\n");
	}
	for (int i = 0; i < N; i++) {
		live_read_response(fd[i], &r);
		live_assert_error(&r, 408, "request_timeout");
		ck_assert_msg(live_header(&r, "Connection") != NULL &&
				  strcmp(live_header(&r, "Connection"), "close") == 0,
			      "connection %d: a 408 without Connection: close", i);
		ck_assert_msg(recv(fd[i], &byte, 1, 0) == 0, "connection %d: left open", i);
		close(fd[i]);
	}
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* `OPTIONS *` asks about the server as a whole (RFC 9110 section 9.3.7): 204
 * with every method some path takes, the connection kept; the asterisk is
 * the target of OPTIONS alone (RFC 9112 section 3.2.4), so `GET *` is a bad
 * request, not a path that matches nothing. */
START_TEST(test_options_asterisk)
{
	struct live_resp r = {0};
	int fd;

	LIVE_DAEMON(d, "--no-builtins");
	fd = live_connect(d.port);
	live_send_str(fd, "OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n");
	live_read_response(fd, &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_pstr_eq(live_header(&r, "Allow"), "POST, GET, HEAD, OPTIONS");
	ck_assert_int_eq(r.closed, 0);
	live_send_str(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
	live_read_response(fd, &r);
	ck_assert_int_eq(r.status, 200);
	close(fd);
	live_exchange(d.port, "GET * HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	live_assert_error(&r, 400, "bad_request");
	ck_assert_ptr_nonnull(strstr(r.body, "only for OPTIONS"));
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* What fd sends until it closes (reads time out after 30 s), NUL-terminated
 * in buf. */
static void read_to_close(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t got;

	while (n < cap - 1 && (got = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)got;
	buf[n] = '\0';
}

/* A request without a body that still says `Expect: 100-continue`, with the
 * next request in the same packet: libmicrohttpd 0.9.75 calls attnd once
 * more before the final call, where no answer can be queued; both requests
 * are answered, in order, on the one connection. */
START_TEST(test_expect_continue_without_body_pipelined)
{
	static const char *const first[] = {
	    "GET /healthz HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n\r\n",
	    "POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
	    "Content-Length: 0\r\nExpect: 100-continue\r\n\r\n",
	};
	static const char *const answer[] = {"HTTP/1.1 200 ", "HTTP/1.1 400 "};
	char req[512], got[8192];

	LIVE_DAEMON(d, "--no-builtins");
	for (size_t i = 0; i < sizeof first / sizeof first[0]; i++) {
		int fd = live_connect(d.port);
		const char *a, *b, *c;

		snprintf(req, sizeof req,
			 "%sGET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: second\r\n"
			 "Connection: close\r\n\r\n",
			 first[i]);
		live_send_str(fd, req); /* one write: both requests in one read */
		read_to_close(fd, got, sizeof got);
		close(fd);
		a = strstr(got, answer[i]);
		ck_assert_msg(a != NULL, "case %zu: no %s: '%s'", i, answer[i], got);
		b = strstr(a, "X-Request-Id: second");
		c = strstr(a + 1, "HTTP/1.1 200 ");
		ck_assert_msg(b != NULL && c != NULL && c < b,
			      "case %zu: the second request is not answered after the first: '%s'", i,
			      got);
	}
	live_stop(&d);
}
END_TEST

static Suite *server_suite(void)
{
	Suite *s = suite_create("server");
	TCase *http = tcase_create("http");

	tcase_set_timeout(http, 120);
	tcase_add_test(http, test_healthz_and_common_headers);
	tcase_add_test(http, test_readyz);
	tcase_add_test(http, test_metrics_format_and_counter);
	tcase_add_test(http, test_not_found_and_method);
	tcase_add_test(http, test_fragment_refused);
	tcase_add_test(http, test_media_type);
	tcase_add_test(http, test_413_from_content_length_unread);
	tcase_add_test(http, test_413_with_expect_continue);
	tcase_add_test(http, test_expect_continue_without_body_pipelined);
	tcase_add_test(http, test_413_chunked);
	tcase_add_test(http, test_ambiguous_framing);
	tcase_add_test(http, test_api_key);
	tcase_add_test(http, test_api_key_from_env);
	tcase_add_test(http, test_cors_preflight_any_origin);
	tcase_add_test(http, test_cors_origin_list);
	tcase_add_test(http, test_cors_origins_spaced);
	tcase_add_test(http, test_options_asterisk);
	tcase_add_test(http, test_request_id);
	tcase_add_test(http, test_compute_reply_and_keepalive);
	tcase_add_test(http, test_request_deadline);
	tcase_add_test(http, test_request_deadline_at_the_end);
	suite_add_tcase(s, http);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .daemon = true,
	};

	return suite_main(argc, argv, server_suite, &opts);
}
