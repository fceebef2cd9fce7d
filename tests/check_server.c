/*
 * check_server.c: the transport, end to end. Each test starts the real
 * daemon (build/attnd, or $ATTND_BIN) on an ephemeral loopback port, reads
 * `listening on HOST:PORT` from its stdout, and speaks raw HTTP/1.1 over a
 * plain socket, so framing cases (two Content-Length headers, Expect:
 * 100-continue, chunked bodies) are sent byte for byte.
 *
 * The daemon's stderr (its logs) goes to $ATTND_TEST_LOG when set, else to
 * /dev/null. Timing is only ever used as a generous upper bound.
 */
#define _GNU_SOURCE /* prctl */
#include <check.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { RESP_MAX = 32 << 20, WAIT_MS = 30000 };

static char attnd_bin[4096] = "build/attnd";

/* ---- the daemon --------------------------------------------------------- */

struct daemon {
	pid_t pid;
	unsigned port;
};

static void child_exec(int out_fd, const char *const *args)
{
	const char *log = getenv("ATTND_TEST_LOG");
	int err_fd = open(log != NULL ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
	char *argv[64]; /* strdup'd: exec replaces this process anyway */
	size_t n = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a crashed test */
	dup2(out_fd, STDOUT_FILENO);
	if (err_fd >= 0)
		dup2(err_fd, STDERR_FILENO);
	argv[n++] = attnd_bin;
	for (; args != NULL && args[n - 1] != NULL && n < 63; n++)
		argv[n] = strdup(args[n - 1]);
	argv[n] = NULL;
	execv(attnd_bin, argv);
	_exit(127);
}

/* Runs attnd with args; returns the child's stdout read end. */
static int spawn(const char *const *args, pid_t *pid)
{
	int fds[2];

	ck_assert_int_eq(pipe(fds), 0);
	*pid = fork();
	ck_assert_int_ge(*pid, 0);
	if (*pid == 0) {
		close(fds[0]);
		child_exec(fds[1], args);
	}
	close(fds[1]);
	return fds[0];
}

/* Reads the child's stdout until EOF or timeout. */
static size_t read_all(int fd, char *out, size_t cap, int timeout_ms)
{
	size_t got = 0;
	struct pollfd p = {fd, POLLIN, 0};

	while (got + 1 < cap && poll(&p, 1, timeout_ms) > 0) {
		ssize_t n = read(fd, out + got, cap - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(out, '\n', got) != NULL && strstr(out, "listening on") != NULL)
			break;
	}
	out[got] = '\0';
	return got;
}

/* Starts attnd --port 0 --host 127.0.0.1 plus extra args (NULL-terminated). */
static void daemon_start(struct daemon *d, const char *const *extra)
{
	const char *args[48] = {"--port", "0", "--host", "127.0.0.1"};
	char line[512];
	const char *at;
	size_t n = 4;
	int fd;

	for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 46; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	fd = spawn(args, &d->pid);
	read_all(fd, line, sizeof line, WAIT_MS);
	close(fd);
	at = strstr(line, "listening on 127.0.0.1:");
	ck_assert_msg(at != NULL, "attnd did not start: '%s'", line);
	d->port = (unsigned)strtoul(at + strlen("listening on 127.0.0.1:"), NULL, 10);
	ck_assert_uint_gt(d->port, 0);
}

/* Waits for the child up to timeout_ms; returns its wait status, or -1. */
static int wait_exit(pid_t pid, int timeout_ms)
{
	int status = 0;

	for (int waited = 0; waited < timeout_ms; waited += 10) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		usleep(10000);
	}
	return -1;
}

/* SIGTERM, expecting a clean exit 0. */
static void daemon_stop(struct daemon *d)
{
	int status;

	kill(d->pid, SIGTERM);
	status = wait_exit(d->pid, WAIT_MS);
	if (status == -1) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
	}
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "attnd did not exit 0 on SIGTERM (status %d)", status);
}

/* ---- a raw HTTP client -------------------------------------------------- */

struct resp {
	int status;
	char head[16384]; /* status line and headers */
	char *body;
	size_t body_len;
	int closed; /* the server closed the connection after this response */
};

static int conn_open(unsigned port)
{
	struct sockaddr_in addr;
	struct timeval tv = {WAIT_MS / 1000, 0};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
	return fd;
}

static void send_str(int fd, const char *s)
{
	size_t len = strlen(s);

	ck_assert_int_eq(send(fd, s, len, MSG_NOSIGNAL), (ssize_t)len);
}

static const char *resp_header(const struct resp *r, const char *name)
{
	static char value[1024];
	size_t n = strlen(name);

	for (const char *p = strstr(r->head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
		const char *line = p + 2;

		if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
			const char *v = line + n + 1;
			size_t len;

			while (*v == ' ')
				v++;
			len = strcspn(v, "\r\n");
			if (len >= sizeof value)
				len = sizeof value - 1;
			memcpy(value, v, len);
			value[len] = '\0';
			return value;
		}
	}
	return NULL;
}

/* Reads one response (head, then a Content-Length or read-to-close body). */
static void read_response(int fd, struct resp *r)
{
	static char raw[RESP_MAX];
	size_t got = 0;
	char *end = NULL;
	const char *cl;
	size_t head_len, want;

	memset(r, 0, sizeof *r);
	while (end == NULL && got + 1 < sizeof raw) {
		ssize_t n = recv(fd, raw + got, sizeof raw - 1 - got, 0);

		ck_assert_msg(n > 0, "connection closed or timed out before a response");
		got += (size_t)n;
		raw[got] = '\0';
		end = strstr(raw, "\r\n\r\n");
	}
	ck_assert_ptr_nonnull(end);
	head_len = (size_t)(end - raw);
	ck_assert_uint_lt(head_len, sizeof r->head);
	memcpy(r->head, raw, head_len);
	r->head[head_len] = '\0';
	ck_assert_int_eq(sscanf(r->head, "HTTP/1.%*d %d", &r->status), 1);
	cl = resp_header(r, "Content-Length");
	want = cl != NULL ? (size_t)strtoul(cl, NULL, 10) : (r->status == 204 ? 0 : SIZE_MAX);
	r->body = raw + head_len + 4;
	r->body_len = got - head_len - 4;
	while (r->body_len < want) {
		ssize_t n = recv(fd, r->body + r->body_len,
				 (size_t)(raw + sizeof raw - 1 - r->body - r->body_len), 0);

		if (n <= 0) {
			ck_assert_msg(want == SIZE_MAX, "short body: %zu of %zu", r->body_len,
				      want);
			r->closed = 1;
			break;
		}
		r->body_len += (size_t)n;
	}
	r->body[r->body_len] = '\0';
	if (resp_header(r, "Connection") != NULL &&
	    strcasecmp(resp_header(r, "Connection"), "close") == 0)
		r->closed = 1;
}

/* One request on a fresh connection. */
static void exchange(unsigned port, const char *request, struct resp *r)
{
	int fd = conn_open(port);

	send_str(fd, request);
	read_response(fd, r);
	close(fd);
}

static void get(unsigned port, const char *path, struct resp *r)
{
	char req[1024];

	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
	exchange(port, req, r);
}

static void assert_error(const struct resp *r, int status, const char *code)
{
	char want[128];

	snprintf(want, sizeof want, "\"code\":\"%s\"", code);
	ck_assert_int_eq(r->status, status);
	ck_assert_msg(strstr(r->body, want) != NULL, "body %s lacks %s", r->body, want);
	ck_assert_str_eq(resp_header(r, "Content-Type"), "application/json");
}

#define DAEMON(name, ...)                                                                          \
	struct daemon name;                                                                        \
	do {                                                                                       \
		const char *const name##_args[] = {__VA_ARGS__, NULL};                             \
		daemon_start(&name, name##_args);                                                  \
	} while (0)

/* ---- tests --------------------------------------------------------------- */

START_TEST(test_healthz_and_common_headers)
{
	struct resp r;
	const char *timing;

	DAEMON(d, "--no-builtins");
	get(d.port, "/healthz", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "{\"status\":\"ok\"}");
	ck_assert_uint_eq(strlen(resp_header(&r, "X-Request-Id")), 16);
	ck_assert_uint_eq(strspn(resp_header(&r, "X-Request-Id"), "0123456789abcdef"), 16);
	timing = resp_header(&r, "Server-Timing");
	ck_assert_ptr_nonnull(timing);
	ck_assert_ptr_nonnull(strstr(timing, "parse;dur="));
	ck_assert_ptr_nonnull(strstr(timing, "queue;dur="));
	ck_assert_ptr_nonnull(strstr(timing, "compute;dur="));
	ck_assert_ptr_nonnull(strstr(timing, "encode;dur="));
	ck_assert_str_eq(resp_header(&r, "Access-Control-Allow-Origin"), "*");
	ck_assert_ptr_nonnull(
	    strstr(resp_header(&r, "Access-Control-Expose-Headers"), "X-Request-Id"));
	daemon_stop(&d);
}
END_TEST

START_TEST(test_readyz)
{
	struct resp r;

	DAEMON(with, "--threads", "1");
	get(with.port, "/readyz", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "{\"status\":\"ready\"}");
	daemon_stop(&with);

	DAEMON(without, "--no-builtins");
	get(without.port, "/readyz", &r);
	ck_assert_int_eq(r.status, 503);
	daemon_stop(&without);
}
END_TEST

/* The value of one sample line in Prometheus text, or -1. */
static double sample(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; p != NULL && *p != '\0';
	     p = strchr(p, '\n'), p = p ? p + 1 : p) {
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	}
	return -1;
}

START_TEST(test_metrics_format_and_counter)
{
	struct resp r;
	const char *series = "attnd_http_requests_total{route=\"/healthz\",code=\"200\"}";
	double before;

	DAEMON(d, "--no-builtins");
	get(d.port, "/healthz", &r);
	get(d.port, "/metrics", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(resp_header(&r, "Content-Type"), "version=0.0.4"));
	ck_assert_ptr_nonnull(strstr(r.body, "# HELP attnd_http_requests_total "));
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE attnd_http_requests_total counter\n"));
	ck_assert_ptr_nonnull(
	    strstr(r.body, "# TYPE attnd_http_request_duration_seconds histogram\n"));
	ck_assert_ptr_nonnull(strstr(
	    r.body, "attnd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"+Inf\"}"));
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE attnd_http_requests_in_flight gauge\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE attnd_compute_queue_depth gauge\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE attnd_rejections_total counter\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "# TYPE attnd_engine_flops_total counter\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "attnd_http_request_bytes_total "));
	ck_assert_ptr_nonnull(strstr(r.body, "attnd_http_response_bytes_total "));
	before = sample(r.body, series);
	ck_assert(before >= 1);
	get(d.port, "/healthz", &r);
	get(d.port, "/metrics", &r);
	ck_assert(sample(r.body, series) >= before + 1);
	daemon_stop(&d);
}
END_TEST

START_TEST(test_not_found_and_method)
{
	struct resp r;

	DAEMON(d, "--no-builtins");
	get(d.port, "/no/such/route", &r);
	assert_error(&r, 404, "not_found");
	exchange(d.port, "DELETE /healthz HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	assert_error(&r, 405, "method_not_allowed");
	ck_assert_ptr_nonnull(strstr(resp_header(&r, "Allow"), "GET"));
	exchange(d.port, "GET /v1/attention HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	assert_error(&r, 405, "method_not_allowed");
	ck_assert_ptr_nonnull(strstr(resp_header(&r, "Allow"), "POST"));
	daemon_stop(&d);
}
END_TEST

START_TEST(test_media_type)
{
	struct resp r;

	DAEMON(d, "--no-builtins");
	exchange(d.port,
		 "POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain\r\n"
		 "Content-Length: 2\r\n\r\n{}",
		 &r);
	assert_error(&r, 415, "unsupported_media_type");
	exchange(d.port, "POST /v1/sdpa HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}", &r);
	assert_error(&r, 415, "unsupported_media_type");
	/* parameters are allowed: this one reaches the API, whatever it answers */
	exchange(
	    d.port,
	    "POST /v1/sdpa HTTP/1.1\r\nHost: t\r\nContent-Type: Application/JSON; charset=utf-8\r\n"
	    "Content-Length: 2\r\n\r\n{}",
	    &r);
	ck_assert_int_ne(r.status, 415);
	ck_assert_int_ne(r.status, 500);
	daemon_stop(&d);
}
END_TEST

static const char post_head[] = "POST /v1/attention HTTP/1.1\r\nHost: t\r\n"
				"Content-Type: application/json\r\n";

START_TEST(test_413_from_content_length_unread)
{
	struct resp r;
	char req[512];
	int fd;

	DAEMON(d, "--no-builtins", "--max-body", "100");
	/* headers only: the answer must come without any body byte sent */
	snprintf(req, sizeof req, "%sContent-Length: 1000000\r\n\r\n", post_head);
	fd = conn_open(d.port);
	send_str(fd, req);
	read_response(fd, &r);
	close(fd);
	assert_error(&r, 413, "payload_too_large");
	daemon_stop(&d);
}
END_TEST

START_TEST(test_413_with_expect_continue)
{
	struct resp r;
	char req[512];
	int fd;

	DAEMON(d, "--no-builtins", "--max-body", "100");
	snprintf(req, sizeof req, "%sContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n",
		 post_head);
	fd = conn_open(d.port);
	send_str(fd, req);
	read_response(fd, &r); /* the first response must be the 413, not 100 */
	close(fd);
	assert_error(&r, 413, "payload_too_large");
	daemon_stop(&d);
}
END_TEST

START_TEST(test_413_chunked)
{
	struct resp r;
	char req[1024];
	char chunk[81];

	DAEMON(d, "--no-builtins", "--max-body", "100");
	memset(chunk, 'x', 80);
	chunk[80] = '\0';
	snprintf(req, sizeof req,
		 "%sTransfer-Encoding: chunked\r\n\r\n50\r\n%s\r\n50\r\n%s\r\n0\r\n\r\n", post_head,
		 chunk, chunk);
	exchange(d.port, req, &r);
	assert_error(&r, 413, "payload_too_large");
	daemon_stop(&d);
}
END_TEST

START_TEST(test_ambiguous_framing)
{
	struct resp r;
	char req[512];

	DAEMON(d, "--no-builtins");
	snprintf(req, sizeof req, "%sContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", post_head);
	exchange(d.port, req, &r);
	assert_error(&r, 400, "bad_request");
	snprintf(req, sizeof req,
		 "%sContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		 post_head);
	exchange(d.port, req, &r);
	assert_error(&r, 400, "bad_request");
	daemon_stop(&d);
}
END_TEST

START_TEST(test_api_key)
{
	struct resp r;

	DAEMON(d, "--no-builtins", "--api-key", "s3cret-key");
	get(d.port, "/v1/models", &r);
	assert_error(&r, 401, "unauthorized");
	ck_assert_str_eq(resp_header(&r, "WWW-Authenticate"), "Bearer");
	exchange(d.port,
		 "GET /v1/models HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer s3cret-kez\r\n\r\n",
		 &r);
	assert_error(&r, 401, "unauthorized");
	exchange(d.port,
		 "GET /v1/models HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer s3cret-key2\r\n\r\n",
		 &r);
	assert_error(&r, 401, "unauthorized");
	exchange(d.port,
		 "GET /v1/models HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer s3cret\r\n\r\n", &r);
	assert_error(&r, 401, "unauthorized");
	exchange(d.port,
		 "GET /v1/models HTTP/1.1\r\nHost: t\r\nAuthorization: Basic s3cret-key\r\n\r\n",
		 &r);
	assert_error(&r, 401, "unauthorized");
	exchange(d.port,
		 "GET /v1/models HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer s3cret-key\r\n\r\n",
		 &r);
	ck_assert_int_eq(r.status, 200);
	/* probes and metrics stay open */
	get(d.port, "/healthz", &r);
	ck_assert_int_eq(r.status, 200);
	get(d.port, "/metrics", &r);
	ck_assert_int_eq(r.status, 200);
	get(d.port, "/readyz", &r);
	ck_assert_int_ne(r.status, 401);
	daemon_stop(&d);
}
END_TEST

START_TEST(test_api_key_from_env)
{
	struct resp r;

	setenv("ATTND_API_KEY", "from-env", 1);
	DAEMON(d, "--no-builtins");
	unsetenv("ATTND_API_KEY");
	get(d.port, "/version", &r);
	assert_error(&r, 401, "unauthorized");
	exchange(d.port,
		 "GET /version HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer from-env\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	daemon_stop(&d);
}
END_TEST

START_TEST(test_cors_preflight_any_origin)
{
	struct resp r;

	DAEMON(d, "--no-builtins");
	exchange(d.port,
		 "OPTIONS /v1/attention HTTP/1.1\r\nHost: t\r\nOrigin: https://app.example\r\n"
		 "Access-Control-Request-Method: POST\r\n\r\n",
		 &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_str_eq(resp_header(&r, "Access-Control-Allow-Origin"), "*");
	ck_assert_ptr_nonnull(strstr(resp_header(&r, "Access-Control-Allow-Methods"), "POST"));
	ck_assert_ptr_nonnull(
	    strstr(resp_header(&r, "Access-Control-Allow-Headers"), "Content-Type"));
	ck_assert_ptr_nonnull(
	    strstr(resp_header(&r, "Access-Control-Allow-Headers"), "Authorization"));
	ck_assert_ptr_nonnull(
	    strstr(resp_header(&r, "Access-Control-Allow-Headers"), "X-Request-Id"));
	ck_assert_ptr_nonnull(resp_header(&r, "Access-Control-Max-Age"));
	exchange(d.port, "OPTIONS /nowhere HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 404);
	daemon_stop(&d);
}
END_TEST

START_TEST(test_cors_origin_list)
{
	struct resp r;

	DAEMON(d, "--no-builtins", "--cors-origins", "https://a.example,https://b.example");
	exchange(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://b.example\r\n\r\n",
		 &r);
	ck_assert_str_eq(resp_header(&r, "Access-Control-Allow-Origin"), "https://b.example");
	ck_assert_str_eq(resp_header(&r, "Vary"), "Origin");
	ck_assert_ptr_nonnull(
	    strstr(resp_header(&r, "Access-Control-Expose-Headers"), "Server-Timing"));
	exchange(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://evil.example\r\n\r\n",
		 &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_null(resp_header(&r, "Access-Control-Allow-Origin"));
	exchange(d.port,
		 "OPTIONS /v1/sdpa HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_str_eq(resp_header(&r, "Access-Control-Allow-Origin"), "https://a.example");
	daemon_stop(&d);
}
END_TEST

START_TEST(test_request_id)
{
	struct resp r;
	char req[1024];
	char long_id[201];

	DAEMON(d, "--no-builtins");
	exchange(d.port, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Request-Id: trace-42/abc\r\n\r\n",
		 &r);
	ck_assert_str_eq(resp_header(&r, "X-Request-Id"), "trace-42/abc");
	memset(long_id, 'a', 200);
	long_id[200] = '\0';
	snprintf(req, sizeof req, "GET /nope HTTP/1.1\r\nHost: t\r\nX-Request-Id: %s\r\n\r\n",
		 long_id);
	exchange(d.port, req, &r);
	ck_assert_int_eq(r.status, 404);
	ck_assert_uint_eq(strlen(resp_header(&r, "X-Request-Id")), 16);
	daemon_stop(&d);
}
END_TEST

START_TEST(test_compute_reply_and_keepalive)
{
	struct resp r;
	char req[512];
	int fd;

	DAEMON(d, "--threads", "2");
	fd = conn_open(d.port);
	snprintf(req, sizeof req, "%sContent-Length: 1\r\n\r\n{", post_head);
	send_str(fd, req);
	read_response(fd, &r);
	ck_assert_int_eq(r.status, 400);
	ck_assert_ptr_nonnull(strstr(r.body, "\"error\""));
	ck_assert_ptr_nonnull(resp_header(&r, "Server-Timing"));
	ck_assert(!r.closed);
	/* the same connection serves the next request */
	snprintf(req, sizeof req,
		 "%sContent-Length: 37\r\n\r\n{\"text\":\"the cat sat\",\"model\":\"tiny\"}",
		 post_head);
	send_str(fd, req);
	read_response(fd, &r);
	ck_assert_msg(r.status >= 200 && r.status < 500, "status %d", r.status);
	ck_assert(r.body_len > 0 && r.body[0] == '{');
	close(fd);
	daemon_stop(&d);
}
END_TEST

START_TEST(test_request_deadline)
{
	struct resp r;
	char req[512];
	int fd;

	DAEMON(d, "--no-builtins", "--request-deadline", "1");
	fd = conn_open(d.port);
	snprintf(req, sizeof req, "%sContent-Length: 4\r\n\r\n{\"", post_head);
	send_str(fd, req);
	sleep(2);
	send_str(fd, "a\"");
	read_response(fd, &r);
	close(fd);
	assert_error(&r, 408, "request_timeout");
	daemon_stop(&d);
}
END_TEST

/* One worker, a queue of one, and ten requests sent at once: while the first
 * computes (tens of ms for L = 512 on the 512-wide built-in) and the second
 * waits, the rest are refused at once with 503 overloaded. */
START_TEST(test_overloaded)
{
	enum { N = 10, WORDS = 512 };
	static char body[WORDS * 8 + 64];
	static char req[sizeof body + 512];
	struct resp r;
	int fds[N];
	int overloaded = 0;
	size_t len = 0;

	DAEMON(d, "--threads", "1", "--queue", "1");
	len += (size_t)snprintf(body, sizeof body, "{\"text\":\"");
	for (int i = 0; i < WORDS; i++)
		len +=
		    (size_t)snprintf(body + len, sizeof body - len, "%sw%d", i > 0 ? " " : "", i);
	snprintf(body + len, sizeof body - len, "\"}");
	snprintf(req, sizeof req, "%sContent-Length: %zu\r\n\r\n%s", post_head, strlen(body), body);
	for (int i = 0; i < N; i++) {
		fds[i] = conn_open(d.port);
		send_str(fds[i], req);
	}
	for (int i = 0; i < N; i++) {
		read_response(fds[i], &r);
		close(fds[i]);
		ck_assert_int_ne(r.status, 500);
		if (r.status == 503) {
			assert_error(&r, 503, "overloaded");
			ck_assert_str_eq(resp_header(&r, "Retry-After"), "1");
			overloaded++;
		}
	}
	ck_assert_int_ge(overloaded, 1);
	get(d.port, "/metrics", &r);
	ck_assert(sample(r.body, "attnd_rejections_total{reason=\"overloaded\"}") >= 1);
	daemon_stop(&d);
}
END_TEST

/* The queue time in a reply's Server-Timing, in ms. */
static double queue_ms(const struct resp *r)
{
	const char *t = resp_header(r, "Server-Timing");
	const char *q = t != NULL ? strstr(t, "queue;dur=") : NULL;

	ck_assert_ptr_nonnull(q);
	return strtod(q + strlen("queue;dur="), NULL);
}

/* One round of test_small_compute_skips_queue; returns 0 when the long
 * request A did not reach the worker before N (so N ran first and the round
 * shows nothing), 1 when it did and every assertion held. */
static int small_skips_queue_round(int port, const char *long_body)
{
	const char *small = "{\"model\":\"tiny\",\"text\":\"I ate a delicious apple\"}";
	const char *not_small = "{\"text\":\"a\"}";
	static char req[32768];
	struct pollfd pending[2];
	struct resp r;
	double a_queue, n_queue;
	int a, n, sm;

	snprintf(req, sizeof req, "%sContent-Length: %zu\r\n\r\n%s", post_head, strlen(long_body),
		 long_body);
	a = conn_open(port);
	send_str(a, req);
	usleep(100000); /* A reaches the worker (checked below from the queue times) */
	n = conn_open(port);
	snprintf(req, sizeof req, "%sContent-Length: %zu\r\n\r\n%s", post_head, strlen(not_small),
		 not_small);
	send_str(n, req);
	sm = conn_open(port);
	snprintf(req, sizeof req, "%sContent-Length: %zu\r\n\r\n%s", post_head, strlen(small), small);
	send_str(sm, req);
	read_response(sm, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "\"tokens\":[\"I\",\"ate\",\"a\",\"delicious\",\"apple\"]"));
	ck_assert_ptr_nonnull(strstr(resp_header(&r, "Server-Timing"), "queue;dur=0.000,"));
	/* neither A nor N is answered yet: both wait for the one worker */
	pending[0] = (struct pollfd){a, POLLIN, 0};
	pending[1] = (struct pollfd){n, POLLIN, 0};
	ck_assert_int_eq(poll(pending, 2, 0), 0);
	read_response(a, &r);
	ck_assert_int_eq(r.status, 200);
	a_queue = queue_ms(&r);
	read_response(n, &r);
	ck_assert_int_eq(r.status, 200);
	n_queue = queue_ms(&r);
	close(a);
	close(n);
	close(sm);
	if (a_queue > n_queue)
		return 0;
	/* N waited for A: it went through the queue, not the I/O thread */
	ck_assert_ptr_null(strstr(resp_header(&r, "Server-Timing"), "queue;dur=0.000,"));
	return 1;
}

/* Small compute requests are answered on the I/O thread, others queued (the
 * thread model in server/main.c). One worker busy for some 0.3 s with a long
 * request A; then a request N that is not small (the 512-wide model) and the
 * small seeds' request S: S is answered while A still computes (queue time
 * 0), N only after A, since it waits for the one worker. On a loaded machine
 * A may reach the worker after N; such a round is run again. */
START_TEST(test_small_compute_skips_queue)
{
	enum { WORDS = 3072 };
	static char body[WORDS * 8 + 128];
	size_t len = 0;
	int done = 0;

	DAEMON(d, "--threads", "1", "--queue", "4");
	len += (size_t)snprintf(body, sizeof body, "{\"weights\":\"none\",\"encoding\":\"base64\",\"text\":\"");
	for (int i = 0; i < WORDS; i++)
		len += (size_t)snprintf(body + len, sizeof body - len, "%sw%d", i > 0 ? " " : "", i);
	snprintf(body + len, sizeof body - len, "\"}");
	for (int round = 0; round < 5 && !done; round++)
		done = small_skips_queue_round(d.port, body);
	ck_assert_msg(done, "A never reached the worker before N in 5 rounds");
	daemon_stop(&d);
}
END_TEST

/* Reads /metrics on fd (keep-alive) and returns the in-flight gauge. */
static double in_flight(int fd)
{
	struct resp r;

	send_str(fd, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
	read_response(fd, &r);
	return sample(r.body, "attnd_http_requests_in_flight");
}

START_TEST(test_drain_with_request_in_flight)
{
	struct resp r;
	char req[512];
	int busy, probe, spare, late;
	int status;
	const char *body = "{\"text\":\"a b\",\"model\":\"tiny\"}";
	const char *conn;

	DAEMON(d, "--threads", "1", "--drain-seconds", "20");
	probe = conn_open(d.port);
	spare = conn_open(d.port);
	late = conn_open(d.port);
	/* make sure every connection is accepted before the listener closes */
	ck_assert_int_eq(in_flight(probe), 1);
	send_str(spare, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
	read_response(spare, &r);
	send_str(late, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
	read_response(late, &r);
	/* a request whose body is half sent is in flight */
	busy = conn_open(d.port);
	snprintf(req, sizeof req, "%sContent-Length: %zu\r\n\r\n%.5s", post_head, strlen(body),
		 body);
	send_str(busy, req);
	for (int i = 0; i < 500 && in_flight(probe) < 2; i++)
		usleep(10000);
	ck_assert_int_eq(in_flight(probe), 2);

	kill(d.pid, SIGTERM);
	/* readiness turns 503 (the connection is then closed). A 200 answered
	 * just as the drain begins may close its connection too: go on with
	 * the spare one (the listener is closed by then) */
	for (int i = 0; i < 500; i++) {
		send_str(probe, "GET /readyz HTTP/1.1\r\nHost: t\r\n\r\n");
		read_response(probe, &r);
		if (r.status == 503)
			break;
		conn = resp_header(&r, "Connection");
		if (conn != NULL && strcasecmp(conn, "close") == 0) {
			ck_assert_int_ge(spare, 0); /* it happens once: draining stays on */
			close(probe);
			probe = spare;
			spare = -1;
		}
		usleep(10000);
	}
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_nonnull(resp_header(&r, "Retry-After"));
	close(probe);
	if (spare >= 0)
		close(spare);
	/* new compute is refused while draining */
	snprintf(req, sizeof req, "%sContent-Length: 2\r\n\r\n{}", post_head);
	send_str(late, req);
	read_response(late, &r);
	assert_error(&r, 503, "draining");
	ck_assert_str_eq(resp_header(&r, "Retry-After"), "1");
	close(late);
	/* the process is still up until the in-flight request completes */
	ck_assert_int_eq(waitpid(d.pid, &status, WNOHANG), 0);
	send_str(busy, body + 5);
	read_response(busy, &r);
	ck_assert_msg(r.status >= 200 && r.status < 500, "status %d", r.status);
	ck_assert(r.body_len > 0);
	close(busy);
	status = wait_exit(d.pid, WAIT_MS);
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "exit status %d", status);
}
END_TEST

/* Runs attnd with args to completion; returns its exit code, stdout in out. */
static int run_attnd(const char *const *args, char *out, size_t cap)
{
	pid_t pid;
	int fd = spawn(args, &pid);
	size_t got = 0;
	int status;
	struct pollfd p = {fd, POLLIN, 0};

	while (got + 1 < cap && poll(&p, 1, WAIT_MS) > 0) {
		ssize_t n = read(fd, out + got, cap - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	out[got] = '\0';
	close(fd);
	status = wait_exit(pid, WAIT_MS);
	ck_assert(status != -1 && WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(test_help_lists_every_option)
{
	static const char *const flags[] = {"--host",
					    "--port",
					    "--threads",
					    "--queue",
					    "--model",
					    "--default-model",
					    "--max-body",
					    "--max-request-mb",
					    "--api-key",
					    "--cors-origins",
					    "--drain-seconds",
					    "--log-format",
					    "--connection-limit",
					    "--per-ip-limit",
					    "--connection-memory",
					    "--timeout",
					    "--request-deadline",
					    "--no-builtins",
					    "--probe",
					    "--version",
					    "--help"};
	static char out[65536];
	const char *const help[] = {"--help", NULL};
	const char *const version[] = {"--version", NULL};
	const char *const bad[] = {"--no-such-flag", NULL};
	const char *const bad_num[] = {"--port", "70000", NULL};

	ck_assert_int_eq(run_attnd(help, out, sizeof out), 0);
	for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
		ck_assert_msg(strstr(out, flags[i]) != NULL, "--help lacks %s", flags[i]);
	ck_assert_ptr_nonnull(strstr(out, "ATTND_MAX_BODY"));
	ck_assert_ptr_nonnull(strstr(out, "16777216"));
	ck_assert_ptr_nonnull(strstr(out, "ATTND_CORS_ORIGINS"));
	ck_assert_int_eq(run_attnd(version, out, sizeof out), 0);
	ck_assert_int_eq(strncmp(out, "attnd ", 6), 0);
	ck_assert_int_eq(run_attnd(bad, out, sizeof out), 2);
	ck_assert_int_eq(run_attnd(bad_num, out, sizeof out), 2);
}
END_TEST

/* A --model file becomes a served model and the default. */
START_TEST(test_model_from_file)
{
	const char *file = "tests/fixtures/safetensors/llama_gqa_f32.safetensors";
	char spec[256];
	struct resp r;

	if (access(file, R_OK) != 0)
		return; /* run from the repository root to include this case */
	snprintf(spec, sizeof spec, "gqa=%s,heads=4", file);
	DAEMON(d, "--no-builtins", "--model", spec);
	get(d.port, "/readyz", &r);
	ck_assert_int_eq(r.status, 200);
	get(d.port, "/v1/models/gqa", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "gqa"));
	daemon_stop(&d);
}
END_TEST

START_TEST(test_bad_model_exits_2)
{
	static char out[4096];
	const char *const missing[] = {"--no-builtins", "--model",
				       "x=/nonexistent.safetensors,heads=2", NULL};
	const char *const no_heads[] = {"--no-builtins", "--model", "x=/dev/null", NULL};

	ck_assert_int_eq(run_attnd(missing, out, sizeof out), 2);
	ck_assert_int_eq(run_attnd(no_heads, out, sizeof out), 2);
}
END_TEST

START_TEST(test_probe)
{
	static char out[4096];
	char ok_url[128], bad_url[128];

	DAEMON(d, "--no-builtins");
	snprintf(ok_url, sizeof ok_url, "http://127.0.0.1:%u/healthz", d.port);
	snprintf(bad_url, sizeof bad_url, "http://127.0.0.1:%u/readyz",
		 d.port); /* 503: no models */
	{
		const char *const ok[] = {"--probe", ok_url, NULL};
		const char *const not_ready[] = {"--probe", bad_url, NULL};
		const char *const garbage[] = {"--probe", "ftp://x", NULL};

		ck_assert_int_eq(run_attnd(ok, out, sizeof out), 0);
		ck_assert_int_eq(run_attnd(not_ready, out, sizeof out), 1);
		ck_assert_int_eq(run_attnd(garbage, out, sizeof out), 1);
	}
	daemon_stop(&d);
}
END_TEST

static Suite *server_suite(void)
{
	Suite *s = suite_create("server");
	TCase *http = tcase_create("http");
	TCase *ops = tcase_create("operations");

	tcase_set_timeout(http, 120);
	tcase_set_timeout(ops, 120);
	tcase_add_test(http, test_healthz_and_common_headers);
	tcase_add_test(http, test_readyz);
	tcase_add_test(http, test_metrics_format_and_counter);
	tcase_add_test(http, test_not_found_and_method);
	tcase_add_test(http, test_media_type);
	tcase_add_test(http, test_413_from_content_length_unread);
	tcase_add_test(http, test_413_with_expect_continue);
	tcase_add_test(http, test_413_chunked);
	tcase_add_test(http, test_ambiguous_framing);
	tcase_add_test(http, test_api_key);
	tcase_add_test(http, test_api_key_from_env);
	tcase_add_test(http, test_cors_preflight_any_origin);
	tcase_add_test(http, test_cors_origin_list);
	tcase_add_test(http, test_request_id);
	tcase_add_test(http, test_compute_reply_and_keepalive);
	tcase_add_test(http, test_request_deadline);
	tcase_add_test(ops, test_overloaded);
	tcase_add_test(ops, test_small_compute_skips_queue);
	tcase_add_test(ops, test_drain_with_request_in_flight);
	tcase_add_test(ops, test_help_lists_every_option);
	tcase_add_test(ops, test_bad_model_exits_2);
	tcase_add_test(ops, test_model_from_file);
	tcase_add_test(ops, test_probe);
	suite_add_tcase(s, http);
	suite_add_tcase(s, ops);
	return s;
}

/* build/tests/check_server -> build/attnd, unless $ATTND_BIN says otherwise. */
static void find_attnd(const char *argv0)
{
	const char *env = getenv("ATTND_BIN");
	char copy[4096];

	if (env != NULL) {
		snprintf(attnd_bin, sizeof attnd_bin, "%s", env);
		return;
	}
	snprintf(copy, sizeof copy, "%s", argv0);
	snprintf(attnd_bin, sizeof attnd_bin, "%s/../attnd", dirname(copy));
}

int main(int argc, char **argv)
{
	SRunner *runner;
	int failed;

	(void)argc;
	find_attnd(argv[0]);
	if (access(attnd_bin, X_OK) != 0) {
		fprintf(stderr, "check_server: %s is not built (make %s)\n", attnd_bin, attnd_bin);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	runner = srunner_create(server_suite());
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? 0 : 1;
}
