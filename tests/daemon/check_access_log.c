/*
 * check_access_log.c: the daemon's logs on stderr, read back from a file.
 *
 *   json   --log-format json: one access line per request, a JSON object
 *          with method, path, status, byte counts and the request id (the
 *          client's X-Request-Id echoed), every line written by exit
 *   head   a HEAD answer's line counts no body bytes out: none was sent
 *   text   the same requests as "ts method path status in out ms id"
 *   case   ATTND_LOG_FORMAT=Json: the format's name in any case
 *   many   a burst of 300 requests: 300 access lines, none torn or lost,
 *          in the order the daemon completed them (log_writer.c batches)
 *   utf8   invalid UTF-8 a client puts in a path (percent-encoded) or a
 *          header: the error bodies and every JSON log line still parse,
 *          the bad bytes shown as U+FFFD (issue 17)
 *   hup    SIGHUP (log rotation) with a request in flight: one info line,
 *          the request completes, the daemon serves on and exits 0 (issue 17)
 *   junk   requests libmicrohttpd answers itself (400, 413, 505): counted in info
 *          lines, no error line
 *   reset  a client that resets its connection mid-body: counted in the info
 *          line of half-sent requests, no error line
 *   drain  a drain that runs out (exit 1) still writes the counts waiting
 *
 * The daemon is the real one (live_daemon.h) with $ATTND_TEST_LOG pointed at
 * a temporary file of this process; the file is read after SIGTERM, when
 * attnd has written everything (log_writer_stop before exit).
 */
#define _GNU_SOURCE /* memmem */
#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/case_files.h"
#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

static char log_path[64];

/* A fresh, empty log file for the next daemon; its path in log_path. */
static void fresh_log(void)
{
	int fd;

	snprintf(log_path, sizeof log_path, "/tmp/attnd-log-XXXXXX");
	fd = mkstemp(log_path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(setenv("ATTND_TEST_LOG", log_path, 1), 0);
}

/* The whole log file, NUL-terminated (caller frees); removes the file. */
static char *read_log(void)
{
	size_t n;
	char *text = case_slurp(log_path, &n);

	ck_assert_msg(text != NULL, "cannot read %s", log_path);
	unlink(log_path);
	unsetenv("ATTND_TEST_LOG");
	return text;
}

/* The lines of text holding needle: how many, and the first one in *line. */
static int count_lines(char *text, const char *needle, char *line, size_t cap)
{
	int n = 0;

	for (char *p = text; *p != '\0';) {
		char *end = strchr(p, '\n');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

		if (memmem(p, len, needle, strlen(needle)) != NULL && n++ == 0)
			snprintf(line, cap, "%.*s", (int)len, p);
		p += len + (end != NULL);
	}
	return n;
}

static const char *const seeds = "{\"model\":\"tiny\",\"text\":\"I ate a delicious apple\"}";

/* Three requests, each with its own X-Request-Id: a GET, the seeds' POST
 * and a malformed POST (400). */
static void three_requests(unsigned port)
{
	struct live_resp r = {0};

	memset(&r, 0, sizeof r);
	live_request(port, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: log-test-1\r\n", NULL, 0,
		     &r);
	ck_assert_int_eq(r.status, 200);
	live_resp_release(&r);
	live_post(port, "/v1/attention", "application/json", "X-Request-Id: log-test-2\r\n", seeds,
		  strlen(seeds), &r);
	ck_assert_int_eq(r.status, 200);
	live_resp_release(&r);
	live_post(port, "/v1/attention", "application/json", "X-Request-Id: log-test-3\r\n", "{",
		  1, &r);
	ck_assert_int_eq(r.status, 400);
	live_resp_release(&r);
}

/* The JSON access line of request id: method, path, status as expected. */
static void check_json_line(char *text, const char *id, const char *method, const char *path,
			    int status)
{
	char line[4096];
	json_error_t jerr;
	json_t *o;

	ck_assert_msg(count_lines(text, id, line, sizeof line) == 1, "%s: not one line in\n%s", id,
		      text);
	o = json_loads(line, 0, &jerr);
	ck_assert_msg(o != NULL, "not JSON: %s", line);
	ck_assert_str_eq(json_string_value(json_object_get(o, "method")), method);
	ck_assert_str_eq(json_string_value(json_object_get(o, "path")), path);
	ck_assert_str_eq(json_string_value(json_object_get(o, "request_id")), id);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "status")), status);
	ck_assert(json_is_integer(json_object_get(o, "bytes_out")));
	ck_assert(json_integer_value(json_object_get(o, "bytes_out")) > 0);
	ck_assert(json_is_number(json_object_get(o, "ms")));
	ck_assert(json_is_string(json_object_get(o, "ts")));
	json_decref(o);
}

START_TEST(test_json_access_lines)
{
	const char *const args[] = {"--log-format", "json", NULL};
	struct live_daemon d;
	char *text;

	fresh_log();
	live_start(&d, args);
	three_requests(d.port);
	live_stop(&d);
	text = read_log();
	check_json_line(text, "log-test-1", "GET", "/healthz", 200);
	check_json_line(text, "log-test-2", "POST", "/v1/attention", 200);
	check_json_line(text, "log-test-3", "POST", "/v1/attention", 400);
	free(text);
}
END_TEST

/* The format's name in any case, as the boolean options take theirs:
 * ATTND_LOG_FORMAT=Json writes the JSON lines (main.c reads it normalised). */
START_TEST(test_log_format_any_case)
{
	const char *const args[] = {NULL};
	struct live_daemon d;
	struct live_resp r = {0};
	char *text;

	fresh_log();
	ck_assert_int_eq(setenv("ATTND_LOG_FORMAT", "Json", 1), 0);
	live_start(&d, args);
	unsetenv("ATTND_LOG_FORMAT");
	live_request(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: log-case-1\r\n",
		     NULL, 0, &r);
	ck_assert_int_eq(r.status, 200);
	live_resp_release(&r);
	live_stop(&d);
	text = read_log();
	check_json_line(text, "log-case-1", "GET", "/healthz", 200);
	free(text);
}
END_TEST

/* HEAD /openapi.json on a connection it closes after: everything the
 * server sends, up to its close, NUL-terminated (the caller frees). */
static char *head_exchange(unsigned port, const char *id, size_t *len)
{
	char req[256];
	char *all = NULL;
	size_t n = 0;
	int fd = live_connect(port);

	snprintf(req, sizeof req,
		 "HEAD /openapi.json HTTP/1.1\r\nHost: t\r\nX-Request-Id: %s\r\n"
		 "Connection: close\r\n\r\n",
		 id);
	live_send_str(fd, req);
	for (;;) {
		char chunk[4096];
		ssize_t got = recv(fd, chunk, sizeof chunk, 0);

		if (got <= 0)
			break;
		all = realloc(all, n + (size_t)got + 1);
		ck_assert_ptr_nonnull(all);
		memcpy(all + n, chunk, (size_t)got);
		n += (size_t)got;
	}
	close(fd);
	ck_assert_ptr_nonnull(all);
	all[n] = '\0';
	*len = n;
	return all;
}

/* A HEAD answer's head says how long the GET's body is, but no body goes
 * out: its line counts 0 bytes out (and so does
 * attnd_http_response_bytes_total, from the same count), not the length of
 * the body it did not send. */
START_TEST(test_head_sends_no_body_bytes)
{
	const char *const args[] = {"--log-format", "json", NULL};
	struct live_daemon d;
	char line[4096], *text, *sent;
	size_t sent_len;
	json_t *o;

	fresh_log();
	live_start(&d, args);
	sent = head_exchange(d.port, "log-head-1", &sent_len);
	ck_assert_msg(strncmp(sent, "HTTP/1.1 200 ", 13) == 0, "%.200s", sent);
	ck_assert_ptr_nonnull(strstr(sent, "Content-Length: "));
	ck_assert_msg(strstr(sent, "\r\n\r\n") + 4 == sent + sent_len, "a body came: %s", sent);
	free(sent);
	live_stop(&d);
	text = read_log();
	ck_assert_int_eq(count_lines(text, "log-head-1", line, sizeof line), 1);
	o = json_loads(line, 0, NULL);
	ck_assert_msg(o != NULL, "not JSON: %s", line);
	ck_assert_str_eq(json_string_value(json_object_get(o, "method")), "HEAD");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "status")), 200);
	ck_assert_msg(json_integer_value(json_object_get(o, "bytes_out")) == 0, "%s", line);
	json_decref(o);
	free(text);
}
END_TEST

START_TEST(test_text_access_lines)
{
	const char *const args[] = {"--log-format", "text", NULL};
	struct live_daemon d;
	char line[4096], *text;

	fresh_log();
	live_start(&d, args);
	three_requests(d.port);
	live_stop(&d);
	text = read_log();
	ck_assert_int_eq(count_lines(text, "log-test-1", line, sizeof line), 1);
	ck_assert_msg(strstr(line, " GET /healthz 200 ") != NULL, "%s", line);
	ck_assert_int_eq(count_lines(text, "log-test-2", line, sizeof line), 1);
	ck_assert_msg(strstr(line, " POST /v1/attention 200 ") != NULL, "%s", line);
	ck_assert_int_eq(count_lines(text, "log-test-3", line, sizeof line), 1);
	ck_assert_msg(strstr(line, " POST /v1/attention 400 ") != NULL, "%s", line);
	free(text);
}
END_TEST

/* CLOCK_REALTIME in seconds: the clock of the lines' timestamps. */
static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Returns once the wall clock reads t or later. */
static void wait_wall_past(double t)
{
	for (double now = wall_now(); now < t; now = wall_now()) {
		double left = t - now + 1e-3;
		struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};

		nanosleep(&ts, NULL);
	}
}

/* The text line's timestamp, "2024-05-01T12:00:00.123Z" and a space, in
 * seconds; fails the test unless every character is where RFC 3339 puts it. */
static double line_time(const char *line)
{
	static const char form[] = "dddd-dd-ddTdd:dd:dd.dddZ ";
	struct tm tm;
	int ms;

	for (size_t i = 0; i < sizeof form - 1; i++)
		ck_assert_msg(form[i] == 'd' ? line[i] >= '0' && line[i] <= '9' : line[i] == form[i],
			      "byte %zu of the timestamp: %s", i, line);
	memset(&tm, 0, sizeof tm);
	ck_assert_int_eq(sscanf(line, "%4d-%2d-%2dT%2d:%2d:%2d.%3d", &tm.tm_year, &tm.tm_mon,
				&tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms),
			 7);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (double)timegm(&tm) + ms / 1e3;
}

/* GET path with X-Request-Id id; the wall clock before it in *before. */
static void get_with_id(unsigned port, const char *path, const char *id, int status,
			double *before)
{
	struct live_resp r = {0};
	char head[256];

	snprintf(head, sizeof head, "GET %s HTTP/1.1\r\nHost: t\r\nX-Request-Id: %s\r\n", path,
		 id);
	*before = wall_now();
	live_request(port, head, NULL, 0, &r);
	ck_assert_int_eq(r.status, status);
	live_resp_release(&r);
}

/* A text line is eight fields, "ts method path status in out ms id": a
 * space in the path (sent as %20), or in a client's X-Request-Id (printable
 * ASCII, spaces included, is echoed), or a control byte in the method, is
 * written '?'. Each line's time is when
 * its request was served, not a second cached from an earlier line: two
 * requests on the one I/O thread, the second once the wall clock has passed
 * the second of the first's line. */
START_TEST(test_text_line_fields_and_time)
{
	const char *const args[] = {"--log-format", "text", "--io-threads", "1", NULL};
	struct live_resp r = {0};
	struct live_daemon d;
	char line[4096], *text;
	double before[3], after;
	char method[16], path[64], id[64];
	int status;
	unsigned long long in, out;
	double ms;
	char extra;

	fresh_log();
	live_start(&d, args);
	get_with_id(d.port, "/no%20such/route", "log-time-1", 404, &before[0]);
	after = wall_now();
	wait_wall_past((double)(long long)after + 1.0);
	get_with_id(d.port, "/healthz", "log-time-2", 200, &before[1]);
	get_with_id(d.port, "/healthz", "log time 3", 200, &before[2]);
	/* a method with a control byte (an escape for the terminal that reads the log) */
	live_exchange(d.port, "G\x1bT /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: log-time-4\r\n\r\n",
		      &r);
	ck_assert_int_eq(r.status, 405);
	live_resp_release(&r);
	live_stop(&d);
	text = read_log();
	ck_assert_int_eq(count_lines(text, "log-time-1", line, sizeof line), 1);
	ck_assert_double_ge(line_time(line), before[0] - 1e-3);
	ck_assert_msg(sscanf(line + 25, "%15s %63s %d %llu %llu %lf %63s %c", method, path, &status,
			     &in, &out, &ms, id, &extra) == 7,
		      "not eight fields: %s", line);
	ck_assert_str_eq(path, "/no?such/route");
	ck_assert_int_eq(status, 404);
	ck_assert_str_eq(id, "log-time-1");
	ck_assert_int_eq(count_lines(text, "log-time-2", line, sizeof line), 1);
	ck_assert_msg(line_time(line) >= before[1] - 1e-3, "%s: before %.3f", line, before[1]);
	ck_assert_int_eq(count_lines(text, "log?time?3", line, sizeof line), 1);
	ck_assert_msg(sscanf(line + 25, "%15s %63s %d %llu %llu %lf %63s %c", method, path, &status,
			     &in, &out, &ms, id, &extra) == 7,
		      "not eight fields: %s", line);
	ck_assert_str_eq(id, "log?time?3");
	ck_assert_int_eq(count_lines(text, "log-time-4", line, sizeof line), 1);
	ck_assert_msg(strstr(line, " G?T /healthz 405 ") != NULL, "the method as sent: %s", line);
	free(text);
}
END_TEST

/* Requests one after another complete in order, so their lines must be in
 * order too, each whole. On one I/O thread: with several, a request's line
 * is put when libmicrohttpd completes it, which may come after the client
 * has its answer and the next request, on another thread, has completed.
 * Nothing is logged at level error, at start-up either. */
START_TEST(test_burst_every_line_whole_in_order)
{
	enum { N = 300 };
	const char *const args[] = {"--log-format", "json", "--io-threads", "1", NULL};
	struct live_daemon d;
	char head[128], line[4096], id[32], *text, *at;
	struct live_resp r = {0};
	json_t *o;

	fresh_log();
	live_start(&d, args);
	memset(&r, 0, sizeof r);
	for (int i = 0; i < N; i++) {
		snprintf(head, sizeof head, "GET /version HTTP/1.1\r\nHost: t\r\nX-Request-Id: burst-%04d\r\n",
			 i);
		live_request(d.port, head, NULL, 0, &r);
		ck_assert_int_eq(r.status, 200);
		live_resp_release(&r);
	}
	live_stop(&d);
	text = read_log();
	/* a pool of one is left out, not given as a size libmicrohttpd logs */
	ck_assert_msg(strstr(text, "\"level\":\"error\"") == NULL, "an error logged: %.300s",
		      strstr(text, "\"level\":\"error\""));
	at = text;
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof id, "\"burst-%04d\"", i);
		ck_assert_msg(count_lines(text, id, line, sizeof line) == 1, "%s: not one line", id);
		o = json_loads(line, 0, NULL);
		ck_assert_msg(o != NULL, "torn line: %s", line);
		json_decref(o);
		at = strstr(at, id);
		ck_assert_msg(at != NULL, "%s is before an earlier request's line", id);
	}
	free(text);
}
END_TEST

/* Every line of text is a JSON object (text is the caller's; cut up here). */
static void assert_every_line_json(char *text)
{
	int lines = 0;

	for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		json_error_t jerr;
		json_t *o = json_loads(line, 0, &jerr);

		ck_assert_msg(json_is_object(o), "not JSON (%s): %s", jerr.text, line);
		json_decref(o);
		lines++;
	}
	ck_assert_int_gt(lines, 0);
}

/* A percent-encoded path used to come back byte for byte in the error body
 * ("no model named '\xff\xfe'") and in --log-format json lines, neither of
 * which then parsed. Each bad sequence: %FF%FE, an overlong '/', a surrogate,
 * a character cut short, one past U+10FFFF; on /v1 and /v2. */
START_TEST(test_invalid_utf8_echoed_as_valid_json)
{
	static const char *const paths[] = {
	    "/v1/models/%FF%FE",	  "/v1/models/%C0%AF",	 "/v1/models/%ED%A0%80x",
	    "/v1/models/a%E2%82",	  "/v1/models/%F4%90%80%80", "/v2/models/%FF%FE",
	    "/v2/models/%ED%A0%80/ready",
	};
	const char *const args[] = {"--log-format", "json", NULL};
	struct live_resp r = {0};
	struct live_daemon d;
	char head[256], *text;
	json_t *o;

	fresh_log();
	live_start(&d, args);
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		snprintf(head, sizeof head, "GET %s HTTP/1.1\r\nHost: t\r\n", paths[i]);
		live_request(d.port, head, NULL, 0, &r);
		ck_assert_int_eq(r.status, 404);
		o = json_loads(r.body, 0, NULL);
		ck_assert_msg(o != NULL, "%s: the error body is not JSON: %s", paths[i], r.body);
		json_decref(o);
		if (i == 0)
			ck_assert_msg(strstr(r.body, "'\\ufffd\\ufffd'") != NULL, "%s", r.body);
		live_resp_release(&r);
	}
	/* a header value with bytes that are not UTF-8, echoed in the log line */
	live_request(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: id-\xc3\x28\r\n",
		     NULL, 0, &r);
	live_resp_release(&r);
	live_stop(&d);
	text = read_log();
	ck_assert_msg(strstr(text, "/v1/models/\\ufffd\\ufffd\"") != NULL, "%s", text);
	assert_every_line_json(text);
	free(text);
}
END_TEST

/* Whether the log file holds needle yet (it is written as the daemon goes). */
static int log_has(const char *needle)
{
	char buf[65536];
	FILE *f = fopen(log_path, "rb");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

/* Log rotation sends SIGHUP: it used to kill attnd (exit 129, the request
 * in flight cut, its access line lost). Now one info line, and nothing else
 * changes: the half-sent request completes, the next is served, and SIGTERM
 * still drains to exit 0 with both access lines written. */
START_TEST(test_sighup_is_logged_not_fatal)
{
	const char *const args[] = {"--log-format", "json", NULL};
	const char *body = seeds;
	struct live_resp r = {0};
	struct live_daemon d;
	char req[512], line[4096], *text;
	int busy, status;
	json_t *o;

	fresh_log();
	live_start(&d, args);
	busy = live_connect(d.port);
	snprintf(req, sizeof req,
		 "%sX-Request-Id: hup-1\r\nContent-Length: %zu\r\n\r\n%.5s", LIVE_POST_ATTENTION,
		 strlen(body), body);
	live_send_str(busy, req);
	live_wait_metric(d.port, "attnd_http_requests_in_flight", 2, 30000); /* busy and the poll */
	ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
	for (int i = 0; i < 3000 && !log_has("SIGHUP"); i++)
		usleep(10000);
	ck_assert_msg(log_has("SIGHUP"), "no SIGHUP line in the log");
	ck_assert_int_eq(waitpid(d.pid, &status, WNOHANG), 0);
	live_send_str(busy, body + 5);
	live_read_response(busy, &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	close(busy);
	live_request(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: hup-2\r\n", NULL, 0,
		     &r);
	ck_assert_int_eq(r.status, 200);
	live_resp_release(&r);
	live_stop(&d); /* asserts exit 0 */
	text = read_log();
	ck_assert_int_eq(count_lines(text, "SIGHUP", line, sizeof line), 1);
	o = json_loads(line, 0, NULL);
	ck_assert_msg(o != NULL, "not JSON: %s", line);
	ck_assert_str_eq(json_string_value(json_object_get(o, "level")), "info");
	json_decref(o);
	check_json_line(text, "hup-1", "POST", "/v1/attention", 200);
	check_json_line(text, "hup-2", "GET", "/healthz", 200);
	free(text);
}
END_TEST

/* The sum of N over the lines "...answered 400, 413 or 505 by libmicrohttpd:
 * N in the last ..." of text. */
static unsigned long malformed_count(const char *text)
{
	const char *key = "answered 400, 413 or 505 by libmicrohttpd: ";
	unsigned long sum = 0;

	for (const char *p = strstr(text, key); p != NULL; p = strstr(p + 1, key))
		sum += strtoul(p + strlen(key), NULL, 10);
	return sum;
}

/* Requests libmicrohttpd answers itself (a header with no colon, an HTTP
 * version it does not speak, a Content-Length that is no number or past
 * what it counts) never reach attnd: no access line. They used to be logged
 * one error line (two for the Content-Length) each, so a scanner paged whoever alerts on error
 * lines; now they are counted in info lines, a line a second at most, and
 * the count of the last second is written at exit. */
START_TEST(test_malformed_requests_counted_not_errors)
{
	const char *const args[] = {"--no-builtins", NULL};
	static const struct {
		const char *request;
		int status;
	} bad[] = {
	    {"GET /healthz HTTP/1.1\r\nHost: t\r\nNoColonHere\r\n\r\n", 400},
	    {"GET /healthz HTTP/9.9\r\nHost: t\r\n\r\n", 505},
	    {"POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n", 400},
	    {"POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n",
	     413},
	};
	struct live_daemon d;
	char line[4096], *text;

	fresh_log();
	live_start(&d, args);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_int_eq(live_raw_status(d.port, bad[i].request), bad[i].status);
	live_stop(&d);
	text = read_log();
	ck_assert_msg(count_lines(text, " error ", line, sizeof line) == 0, "an error line: %s",
		      line);
	ck_assert_uint_eq(malformed_count(text), 4);
	ck_assert_int_ge(count_lines(text, " info malformed requests answered", line,
				     sizeof line),
			 1);
	free(text);
}
END_TEST

/* The sum of N over the lines "...with a request half sent: N in the last
 * ..." of text. */
static unsigned long half_sent_count(const char *text)
{
	const char *key = "with a request half sent: ";
	unsigned long sum = 0;

	for (const char *p = strstr(text, key); p != NULL; p = strstr(p + 1, key))
		sum += strtoul(p + strlen(key), NULL, 10);
	return sum;
}

/* A client that leaves in the middle of its body is counted in the info
 * line a second ("...with a request half sent: N"), whether it closes with
 * a FIN or with a reset (SO_LINGER 0, or a close with unread data, as a
 * killed process or a load balancer does): libmicrohttpd words the reset
 * "Socket has been disconnected when reading request", which was logged as
 * one error line per client, paging whoever alerts on error lines. */
START_TEST(test_reset_mid_body_counted_not_error)
{
	const char *const args[] = {"--no-builtins", NULL};
	const struct linger rst = {.l_onoff = 1, .l_linger = 0};
	struct live_daemon d;
	char req[512], line[4096], *text;

	fresh_log();
	live_start(&d, args);
	snprintf(req, sizeof req, "%sContent-Length: %zu\r\n\r\n%.5s", LIVE_POST_ATTENTION,
		 strlen(seeds), seeds);
	for (int i = 0; i < 3; i++) {
		int fd = live_connect(d.port);

		live_send_str(fd, req);
		live_wait_metric(d.port, "attnd_http_requests_in_flight", 2, 30000);
		ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &rst, sizeof rst), 0);
		close(fd); /* a reset, not a FIN */
		live_wait_metric(d.port, "attnd_http_requests_in_flight", 1, 30000); /* the poll */
	}
	live_stop(&d);
	text = read_log();
	ck_assert_msg(count_lines(text, " error ", line, sizeof line) == 0, "an error line: %s",
		      line);
	ck_assert_uint_eq(half_sent_count(text), 3);
	free(text);
}
END_TEST

/* A drain that runs out (--drain-seconds) leaves with _exit(1), past the
 * code that frees the counters: the counts still waiting must be written
 * on that path too. The first malformed request is logged at once; the two
 * after it wait for the next line a second later, which only the exit
 * writes, as the drain has no tick. */
/* A fresh log and a daemon started with args, holding a request whose body
 * has only begun to come (a drain waits for it): the connection. */
static int start_with_half_a_body(struct live_daemon *d, const char *const *args)
{
	char req[512];
	int busy;

	fresh_log();
	live_start(d, args);
	busy = live_connect(d->port);
	snprintf(req, sizeof req, "%sContent-Length: %zu\r\n\r\n%.5s", LIVE_POST_ATTENTION,
		 strlen(seeds), seeds);
	live_send_str(busy, req);
	live_wait_metric(d->port, "attnd_http_requests_in_flight", 2, 30000); /* busy, the poll */
	return busy;
}

/* Waits for d to exit 1 (why: what should have made it), closes the held
 * connection; the whole log (caller frees). */
static char *exit_1_and_log(struct live_daemon *d, int busy, const char *why)
{
	int status = live_wait_exit(d->pid, 30000);

	close(busy);
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 1,
		      "wait status %d: %s, with exit 1", status, why);
	return read_log();
}

/* A request whose body stops coming gets its 408 at --timeout, and the
 * connection is let go at the client's close or --timeout later still
 * (http.c); its line's ms, and the duration histogram with it, end at the
 * answer (the documented "from its headers to its answer"), not there. */
START_TEST(test_408_duration_ends_at_its_answer)
{
	const char *const args[] = {"--timeout", "1", "--log-format", "json", NULL};
	struct live_daemon d;
	struct live_resp r = {0};
	char line[1024];
	const char *ms;
	double t0, answered;
	int fd;

	fresh_log();
	live_start(&d, args);
	fd = live_connect(d.port);
	t0 = live_now();
	live_send_str(fd, "POST /v1/attention HTTP/1.1\r\nHost: t\r\nX-Request-Id: slow-408\r\n"
			  "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{");
	live_read_response(fd, &r);
	answered = live_now() - t0;
	ck_assert_int_eq(r.status, 408);
	for (int i = 0; i < 500 && !log_has("slow-408"); i++) /* the client stays silent */
		usleep(10000);
	close(fd);
	live_stop(&d);
	char *text = read_log();
	ck_assert_int_eq(count_lines(text, "slow-408", line, sizeof line), 1);
	ms = strstr(line, "\"ms\":");
	ck_assert_ptr_nonnull(ms);
	ck_assert_msg(strtod(ms + 5, NULL) < answered * 1e3 + 250,
		      "408 answered after %.0f ms, logged: %s", answered * 1e3, line);
	free(text);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_drain_timeout_writes_waiting_counts)
{
	const char *const args[] = {"--drain-seconds", "1", NULL};
	struct live_daemon d;
	char line[4096], *text;
	int busy = start_with_half_a_body(&d, args);

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(live_raw_status(d.port, "GET /healthz HTTP/9.9\r\nHost: t\r\n\r\n"), 505);
	ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
	text = exit_1_and_log(&d, busy, "the drain should run out");
	ck_assert_int_eq(count_lines(text, "still running after 1 s", line, sizeof line), 1);
	ck_assert_uint_eq(malformed_count(text), 3);
	free(text);
}
END_TEST

/* A second SIGTERM while the drain waits ends it at once: exit 1, long
 * before --drain-seconds, with the reason logged. */
START_TEST(test_second_signal_ends_the_drain)
{
	const char *const args[] = {"--drain-seconds", "600", NULL};
	struct live_daemon d;
	char line[4096], *text;
	int busy = start_with_half_a_body(&d, args); /* the drain would wait 600 s */

	ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
	for (int i = 0; i < 3000; i++) { /* the first signal's drain has begun */
		size_t n;
		char *seen = case_slurp(log_path, &n);
		int draining = seen != NULL && strstr(seen, "signal 15: draining") != NULL;

		free(seen);
		if (draining)
			break;
		usleep(10 * 1000);
	}
	ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
	text = exit_1_and_log(&d, busy, "a second SIGTERM should end the drain");
	ck_assert_int_eq(count_lines(text, "signal 15 again; exiting 1 now", line, sizeof line), 1);
	free(text);
}
END_TEST

static Suite *access_log_suite(void)
{
	Suite *s = suite_create("access_log");
	TCase *tc = tcase_create("lines");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_json_access_lines);
	tcase_add_test(tc, test_log_format_any_case);
	tcase_add_test(tc, test_head_sends_no_body_bytes);
	tcase_add_test(tc, test_text_access_lines);
	tcase_add_test(tc, test_text_line_fields_and_time);
	tcase_add_test(tc, test_burst_every_line_whole_in_order);
	tcase_add_test(tc, test_sighup_is_logged_not_fatal);
	tcase_add_test(tc, test_invalid_utf8_echoed_as_valid_json);
	tcase_add_test(tc, test_malformed_requests_counted_not_errors);
	tcase_add_test(tc, test_reset_mid_body_counted_not_error);
	tcase_add_test(tc, test_408_duration_ends_at_its_answer);
	tcase_add_test(tc, test_drain_timeout_writes_waiting_counts);
	tcase_add_test(tc, test_second_signal_ends_the_drain);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .daemon = true,
	};

	return suite_main(argc, argv, access_log_suite, &opts);
}
