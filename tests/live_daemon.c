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
	snprintf(live_bin, sizeof live_bin, "%s/../attnd", dirname(copy));
}

const char *live_attnd(void)
{
	return live_bin;
}

/* In the child: stdout to the pipe, stderr to the log, then exec. */
static void live_exec(int out_fd, char *const *argv)
{
	const char *log = getenv("ATTND_TEST_LOG");
	int err_fd = open(log != NULL ? log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);

	prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a crashed test */
	dup2(out_fd, STDOUT_FILENO);
	if (err_fd >= 0)
		dup2(err_fd, STDERR_FILENO);
	execv(live_bin, argv);
	_exit(127);
}

/* Reads the child's stdout up to the `listening on` line or the timeout. */
static void live_read_banner(int fd, char *out, size_t cap)
{
	size_t got = 0;
	struct pollfd p = {fd, POLLIN, 0};

	while (got + 1 < cap && poll(&p, 1, LIVE_WAIT_MS) > 0) {
		ssize_t n = read(fd, out + got, cap - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
		out[got] = '\0';
		if (strstr(out, "listening on") != NULL && strchr(strstr(out, "listening on"), '\n'))
			break;
	}
	out[got] = '\0';
}

void live_start(struct live_daemon *d, const char *const *extra)
{
	const char *fixed[] = {"--port", "0", "--host", "127.0.0.1"};
	char *argv[LIVE_ARGS_MAX];
	char line[512];
	const char *at;
	size_t n = 0;
	int fds[2];

	argv[n++] = live_bin;
	for (size_t i = 0; i < 4; i++)
		argv[n++] = (char *)(uintptr_t)fixed[i];
	for (size_t i = 0; extra != NULL && extra[i] != NULL && n + 1 < LIVE_ARGS_MAX; i++)
		argv[n++] = (char *)(uintptr_t)extra[i];
	argv[n] = NULL;
	ck_assert_int_eq(pipe(fds), 0);
	d->pid = fork();
	ck_assert_int_ge(d->pid, 0);
	if (d->pid == 0) {
		close(fds[0]);
		live_exec(fds[1], argv);
	}
	close(fds[1]);
	live_read_banner(fds[0], line, sizeof line);
	close(fds[0]);
	at = strstr(line, "listening on 127.0.0.1:");
	ck_assert_msg(at != NULL, "attnd did not start: '%s'", line);
	d->port = (unsigned)strtoul(at + strlen("listening on 127.0.0.1:"), NULL, 10);
	ck_assert_uint_gt(d->port, 0);
}

void live_stop(struct live_daemon *d)
{
	int status = -1;

	kill(d->pid, SIGTERM);
	for (int waited = 0; waited < LIVE_WAIT_MS; waited += 10) {
		if (waitpid(d->pid, &status, WNOHANG) == d->pid)
			break;
		status = -1;
		usleep(10000);
	}
	if (status == -1) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
	}
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "attnd did not exit 0 on SIGTERM (status %d)", status);
}

/* ---- the client ------------------------------------------------------------ */

static int live_connect(unsigned port)
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

static void live_send_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t k = send(fd, c, n, MSG_NOSIGNAL);

		ck_assert_msg(k > 0, "send failed");
		c += k;
		n -= (size_t)k;
	}
}

/* The end of the head ("\r\n\r\n") in raw[0..n), or NULL. */
static const char *live_head_end(const char *raw, size_t n)
{
	for (size_t i = 0; i + 4 <= n; i++)
		if (memcmp(raw + i, "\r\n\r\n", 4) == 0)
			return raw + i;
	return NULL;
}

/* Reads until the server closes (Connection: close was asked). */
static void live_read_response(int fd, struct live_resp *r)
{
	size_t cap = 1 << 16, got = 0;
	char *raw = malloc(cap + 1);
	const char *end;
	size_t head_len;

	ck_assert_ptr_nonnull(raw);
	for (;;) {
		ssize_t n;

		if (got == cap) {
			cap *= 2;
			raw = realloc(raw, cap + 1);
			ck_assert_ptr_nonnull(raw);
		}
		n = recv(fd, raw + got, cap - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	end = live_head_end(raw, got);
	ck_assert_msg(end != NULL, "no complete response head (%zu bytes)", got);
	head_len = (size_t)(end - raw);
	ck_assert_uint_lt(head_len, sizeof r->head);
	memcpy(r->head, raw, head_len);
	r->head[head_len] = '\0';
	ck_assert_int_eq(sscanf(r->head, "HTTP/1.%*d %d", &r->status), 1);
	r->body_len = got - head_len - 4;
	memmove(raw, end + 4, r->body_len);
	raw[r->body_len] = '\0';
	r->body = raw;
	if (live_header(r, "Content-Length") != NULL)
		ck_assert_uint_eq(strtoul(live_header(r, "Content-Length"), NULL, 10), r->body_len);
}

void live_request(unsigned port, const char *head, const void *body, size_t body_len,
		  struct live_resp *r)
{
	char extra[128];
	int fd = live_connect(port);

	memset(r, 0, sizeof *r);
	snprintf(extra, sizeof extra, "Content-Length: %zu\r\nConnection: close\r\n\r\n", body_len);
	live_send_all(fd, head, strlen(head));
	live_send_all(fd, extra, strlen(extra));
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
