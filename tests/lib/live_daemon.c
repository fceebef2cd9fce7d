/* live_daemon.c: the real daemon and a binary-safe client (see live_daemon.h). */
#define _GNU_SOURCE /* prctl */
#include "live_daemon.h"

#include <check.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
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

enum { LIVE_WAIT_MS = 30000, LIVE_ARGS_MAX = 48 };

static char live_bin[4096] = "build/attnd";

void live_find_attnd(const char *argv0)
{
	const char *env = getenv("ATTND_BIN");
	char copy[4096];

	if (env != NULL) {
		snprintf(live_bin, sizeof live_bin, "%s", env);
		return;
	}
	snprintf(copy, sizeof copy, "%s", argv0);
	snprintf(live_bin, sizeof live_bin, "%s/../../attnd", dirname(copy));
}

const char *live_attnd(void)
{
	return live_bin;
}

/* In the child: stdout to out_fd; stderr to err_fd, or when it is -1 to
 * $ATTND_TEST_LOG (else /dev/null); then exec. */
static void live_exec(int out_fd, int err_fd, char *const *argv)
{
	const char *log = getenv("ATTND_TEST_LOG");

	prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a crashed test */
	if (err_fd < 0)
		err_fd = open(log != NULL ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
	dup2(out_fd, STDOUT_FILENO);
	if (err_fd >= 0)
		dup2(err_fd, STDERR_FILENO);
	execv(live_bin, argv);
	_exit(127);
}

/* Forks attnd with args; returns stdout's read end. With err_fd, stderr
 * comes back through a pipe too (*err_fd its read end). */
static int live_fork(const char *const *args, pid_t *pid, int *err_fd)
{
	char *argv[LIVE_ARGS_MAX];
	size_t n = 0;
	int out[2], err[2] = {-1, -1};

	argv[n++] = live_bin;
	for (size_t i = 0; args != NULL && args[i] != NULL && n + 1 < LIVE_ARGS_MAX; i++)
		argv[n++] = (char *)(uintptr_t)args[i];
	argv[n] = NULL;
	ck_assert_int_eq(pipe(out), 0);
	if (err_fd != NULL)
		ck_assert_int_eq(pipe(err), 0);
	*pid = fork();
	ck_assert_int_ge(*pid, 0);
	if (*pid == 0) {
		close(out[0]);
		if (err[0] >= 0)
			close(err[0]);
		live_exec(out[1], err[1], argv);
	}
	close(out[1]);
	if (err_fd != NULL) {
		close(err[1]);
		*err_fd = err[0];
	}
	return out[0];
}

int live_spawn(const char *const *args, pid_t *pid)
{
	return live_fork(args, pid, NULL);
}

int live_spawn_stderr(const char *const *args, pid_t *pid, int *err_fd)
{
	return live_fork(args, pid, err_fd);
}

/* The `listening on` line in out: at the start of a line, so the words
 * inside --help's text are not taken for it. NULL when none has come. */
static const char *banner_line(const char *out)
{
	static const char banner[] = "listening on ";

	for (const char *at = strstr(out, banner); at != NULL; at = strstr(at + 1, banner)) {
		if (at == out || at[-1] == '\n')
			return at;
	}
	return NULL;
}

size_t live_read_stdout(int fd, char *out, size_t cap, int timeout_ms)
{
	size_t got = 0;
	struct pollfd p = {fd, POLLIN, 0};

	while (got + 1 < cap && poll(&p, 1, timeout_ms) > 0) {
		ssize_t n = read(fd, out + got, cap - 1 - got);
		const char *banner;

		if (n <= 0)
			break;
		got += (size_t)n;
		out[got] = '\0';
		banner = banner_line(out);
		if (banner != NULL && strchr(banner, '\n') != NULL)
			break;
	}
	out[got] = '\0';
	return got;
}

void live_start(struct live_daemon *d, const char *const *extra)
{
	const char *args[LIVE_ARGS_MAX] = {"--port", "0", "--host", "127.0.0.1"};
	char line[512];
	const char *at;
	size_t n = 4;
	int fd;

	for (size_t i = 0; extra != NULL && extra[i] != NULL && n + 2 < LIVE_ARGS_MAX; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	fd = live_spawn(args, &d->pid);
	live_read_stdout(fd, line, sizeof line, LIVE_WAIT_MS);
	close(fd);
	at = strstr(line, "listening on 127.0.0.1:");
	ck_assert_msg(at != NULL, "attnd did not start: '%s'", line);
	d->port = (unsigned)strtoul(at + strlen("listening on 127.0.0.1:"), NULL, 10);
	ck_assert_uint_gt(d->port, 0);
}

int live_wait_exit(pid_t pid, int timeout_ms)
{
	int status = 0;

	for (int waited = 0; waited < timeout_ms; waited += 10) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(10000);
	}
	return -1;
}

void live_stop(struct live_daemon *d)
{
	int status;

	kill(d->pid, SIGTERM);
	status = live_wait_exit(d->pid, LIVE_WAIT_MS);
	if (status == -1) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
	}
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "attnd did not exit 0 on SIGTERM (status %d)", status);
}

/* ---- the client ------------------------------------------------------------ */

int live_connect(unsigned port)
{
	struct sockaddr_in addr;
	struct timeval tv = {LIVE_WAIT_MS / 1000, 0};
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

void live_send_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t k = send(fd, c, n, MSG_NOSIGNAL);

		ck_assert_msg(k > 0, "send failed");
		c += k;
		n -= (size_t)k;
	}
}

void live_send_str(int fd, const char *s)
{
	live_send_all(fd, s, strlen(s));
}

/* A growing receive buffer: raw [len] of cap (plus a NUL). */
struct live_buf {
	char *raw;
	size_t len, cap;
};

/* One recv into b, growing it; the bytes read, or <= 0 at close or timeout. */
static ssize_t live_recv(int fd, struct live_buf *b)
{
	ssize_t n;

	if (b->len == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 1 << 16;
		b->raw = realloc(b->raw, b->cap + 1);
		ck_assert_ptr_nonnull(b->raw);
	}
	n = recv(fd, b->raw + b->len, b->cap - b->len, 0);
	if (n > 0)
		b->len += (size_t)n;
	b->raw[b->len] = '\0';
	return n;
}

/* The end of the head ("\r\n\r\n") in raw[0..n), or NULL. */
static const char *live_head_end(const char *raw, size_t n)
{
	for (size_t i = 0; i + 4 <= n; i++)
		if (memcmp(raw + i, "\r\n\r\n", 4) == 0)
			return raw + i;
	return NULL;
}

/* Reads up to the end of the head into b; copies the head into r. */
static size_t live_read_head(int fd, struct live_buf *b, struct live_resp *r)
{
	const char *end = NULL;
	size_t head_len;

	while (end == NULL) {
		ck_assert_msg(live_recv(fd, b) > 0, "closed or timed out before a response head");
		end = live_head_end(b->raw, b->len);
	}
	head_len = (size_t)(end - b->raw);
	ck_assert_uint_lt(head_len, sizeof r->head);
	memcpy(r->head, b->raw, head_len);
	r->head[head_len] = '\0';
	ck_assert_int_eq(sscanf(r->head, "HTTP/1.%*d %d", &r->status), 1);
	return head_len + 4;
}

void live_read_response(int fd, struct live_resp *r)
{
	struct live_buf b = {NULL, 0, 0};
	const char *cl, *conn;
	size_t body_at, want;

	live_resp_release(r);
	memset(r, 0, sizeof *r);
	body_at = live_read_head(fd, &b, r);
	cl = live_header(r, "Content-Length");
	if (r->status == 204 || r->status == 304) /* never a body (RFC 9112 section 6.3) */
		want = 0;
	else
		want = cl != NULL ? (size_t)strtoul(cl, NULL, 10) : SIZE_MAX;
	while (b.len - body_at < want) {
		if (live_recv(fd, &b) <= 0) {
			ck_assert_msg(want == SIZE_MAX, "short body: %zu of %zu bytes",
				      b.len - body_at, want);
			r->closed = 1;
			break;
		}
	}
	ck_assert_msg(want == SIZE_MAX || b.len - body_at == want, "%zu bytes past the body",
		      b.len - body_at - want);
	r->body_len = b.len - body_at;
	memmove(b.raw, b.raw + body_at, r->body_len);
	b.raw[r->body_len] = '\0';
	r->body = b.raw;
	conn = live_header(r, "Connection");
	if (conn != NULL && strcasecmp(conn, "close") == 0)
		r->closed = 1;
}

int live_raw_status(unsigned port, const char *request)
{
	char buf[2048];
	size_t n = 0;
	ssize_t got;
	int fd = live_connect(port), status = 0;

	live_send_str(fd, request);
	while (n < sizeof buf - 1 && (got = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)got;
	close(fd);
	buf[n] = '\0';
	ck_assert_msg(sscanf(buf, "HTTP/1.1 %d", &status) == 1, "no status line: %s", buf);
	return status;
}

void live_exchange(unsigned port, const char *request, struct live_resp *r)
{
	int fd = live_connect(port);

	live_send_str(fd, request);
	live_read_response(fd, r);
	close(fd);
}

void live_request(unsigned port, const char *head, const void *body, size_t body_len,
		  struct live_resp *r)
{
	char extra[128];
	int fd = live_connect(port);

	snprintf(extra, sizeof extra, "Content-Length: %zu\r\nConnection: close\r\n\r\n", body_len);
	live_send_str(fd, head);
	live_send_str(fd, extra);
	if (body_len > 0)
		live_send_all(fd, body, body_len);
	live_read_response(fd, r);
	close(fd);
}

void live_resp_release(struct live_resp *r)
{
	if (r == NULL)
		return;
	free(r->body);
	r->body = NULL;
	r->body_len = 0;
}

void live_get(unsigned port, const char *path, struct live_resp *r)
{
	char head[1024];

	snprintf(head, sizeof head, "GET %s HTTP/1.1\r\nHost: t\r\n", path);
	live_request(port, head, NULL, 0, r);
}

void live_post(unsigned port, const char *path, const char *content_type,
	       const char *extra_headers, const void *body, size_t len, struct live_resp *r)
{
	char head[2048];

	snprintf(head, sizeof head, "POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: %s\r\n%s", path,
		 content_type, extra_headers);
	live_request(port, head, body, len, r);
}

const char *live_header(const struct live_resp *r, const char *name)
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

json_t *live_json(const struct live_resp *r)
{
	json_error_t jerr;
	json_t *v = json_loadb(r->body, r->body_len, 0, &jerr);

	ck_assert_msg(v != NULL, "answer is not JSON: %s", jerr.text);
	return v;
}

void live_assert_error(const struct live_resp *r, int status, const char *code)
{
	char want[128];

	snprintf(want, sizeof want, "\"code\":\"%s\"", code);
	ck_assert_int_eq(r->status, status);
	ck_assert_msg(strstr(r->body, want) != NULL, "body %s lacks %s", r->body, want);
	ck_assert_str_eq(live_header(r, "Content-Type"), "application/json");
}

double live_metric(const char *text, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = text; p != NULL && *p != '\0';
	     p = strchr(p, '\n'), p = p ? p + 1 : p) {
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	}
	return -1;
}

double live_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void live_wait_metric(unsigned port, const char *series, double want, int timeout_ms)
{
	struct live_resp r = {0};
	double deadline = live_now() + timeout_ms / 1e3;
	double value;

	for (;;) {
		live_get(port, "/metrics", &r);
		ck_assert_int_eq(r.status, 200);
		value = live_metric(r.body, series);
		if (value == want || live_now() > deadline)
			break;
		poll(NULL, 0, 5); /* 5 ms between samples; the deadline bounds the wait */
	}
	live_resp_release(&r);
	ck_assert_msg(value == want, "%s is %g, not %g, after %d ms", series, value, want,
		      timeout_ms);
}

/* Reads the daemon's stderr (err_fd) into err[cap] until EOF or timeout_ms
 * without data; returns 1 as soon as anything comes on stdout (`listening
 * on`: the daemon started and would never exit by itself), else 0. */
static int read_refusal(int out_fd, int err_fd, int timeout_ms, char *err, size_t cap)
{
	struct pollfd p[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
	size_t got = 0;

	err[0] = '\0';
	while (got + 1 < cap && poll(p, 2, timeout_ms) > 0) {
		ssize_t k;

		if (p[0].revents & POLLIN)
			return 1;
		k = read(err_fd, err + got, cap - 1 - got);
		if (k <= 0)
			break;
		got += (size_t)k;
		err[got] = '\0';
	}
	return 0;
}

int live_run_to_exit(const char *const *args, int timeout_ms, char *err, size_t cap)
{
	int out, errfd, started, status;
	pid_t pid;

	out = live_spawn_stderr(args, &pid, &errfd);
	started = read_refusal(out, errfd, timeout_ms, err, cap);
	close(out);
	close(errfd);
	if (started) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		ck_abort_msg("attnd started instead of refusing: '%s'", err);
	}
	status = live_wait_exit(pid, timeout_ms);
	if (status == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		ck_abort_msg("attnd did not exit within %d ms: '%s'", timeout_ms, err);
	}
	return status;
}

long live_proc_kib(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t n = strlen(field);
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	while (kib < 0 && fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			kib = strtol(line + n + 1, NULL, 10);
	}
	fclose(f);
	ck_assert_msg(kib >= 0, "%s has no %s line", path, field);
	return kib;
}
