/*
 * check_server_ops.c: the daemon's operation, end to end, on the real daemon
 * (tests/live_daemon.h): load shedding (503 overloaded), small requests
 * answered beside the queue, draining on SIGTERM with a request in flight
 * with a keep-alive client's next request just after it, and with a log
 * nobody reads (clients closing half-sent requests meanwhile), the stop
 * signals blocked in every thread (SIGINT drains too), the command line
 * (--help, --version, bad flags and models, exit codes), models from files,
 * and --probe. Timing is only ever used as a generous upper bound.
 */
#define _DEFAULT_SOURCE /* usleep */
#include <check.h>

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

enum { WAIT_MS = 30000 };

/* One worker, a queue of one, and ten requests sent at once: while the first
 * computes (tens of ms for L = 512 on the 512-wide built-in) and the second
 * waits, the rest are refused at once with 503 overloaded. */
START_TEST(test_overloaded)
{
	enum { N = 10, WORDS = 512 };
	static char body[WORDS * 8 + 64];
	static char req[sizeof body + 512];
	struct live_resp r = {0};
	int fds[N];
	int overloaded = 0;
	size_t len = 0;

	LIVE_DAEMON(d, "--threads", "1", "--queue", "1");
	len += (size_t)snprintf(body, sizeof body, "{\"text\":\"");
	for (int i = 0; i < WORDS; i++)
		len +=
		    (size_t)snprintf(body + len, sizeof body - len, "%sw%d", i > 0 ? " " : "", i);
	snprintf(body + len, sizeof body - len, "\"}");
	snprintf(req, sizeof req, "%sContent-Length: %zu\r\n\r\n%s", LIVE_POST_ATTENTION,
		 strlen(body), body);
	for (int i = 0; i < N; i++) {
		fds[i] = live_connect(d.port);
		live_send_str(fds[i], req);
	}
	for (int i = 0; i < N; i++) {
		live_read_response(fds[i], &r);
		close(fds[i]);
		ck_assert_int_ne(r.status, 500);
		if (r.status == 503) {
			live_assert_error(&r, 503, "overloaded");
			ck_assert_str_eq(live_header(&r, "Retry-After"), "1");
			overloaded++;
		}
	}
	ck_assert_int_ge(overloaded, 1);
	live_get(d.port, "/metrics", &r);
	ck_assert(live_metric(r.body, "attnd_rejections_total{reason=\"overloaded\"}") >= 1);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* The queue time in a reply's Server-Timing, in ms. */
static double queue_ms(const struct live_resp *r)
{
	const char *t = live_header(r, "Server-Timing");
	const char *q = t != NULL ? strstr(t, "queue;dur=") : NULL;

	ck_assert_ptr_nonnull(q);
	return strtod(q + strlen("queue;dur="), NULL);
}

/* Sends a POST /v1/attention with body on a fresh connection; returns it. */
static int send_attention(unsigned port, const char *body)
{
	static char req[32768];
	int fd = live_connect(port);

	snprintf(req, sizeof req, "%sContent-Length: %zu\r\n\r\n%s", LIVE_POST_ATTENTION,
		 strlen(body), body);
	live_send_str(fd, req);
	return fd;
}

/* Small compute requests are answered on the I/O thread, others queued (the
 * thread model in server/main.c). One worker busy for some 0.3 s with a long
 * request A; then a request N that is not small (the 512-wide model) waits in
 * the queue behind it, and the small request S (tiny, five words) is answered
 * while A still computes (queue time 0), N only after A. The gauges of
 * /metrics say when A is on the worker and N in the queue. */
START_TEST(test_small_compute_skips_queue)
{
	enum { WORDS = 3072 };
	static char long_body[WORDS * 8 + 128];
	const char *small = "{\"model\":\"tiny\",\"text\":\"I ate a delicious apple\"}";
	struct pollfd pending[2];
	struct live_resp r = {0};
	size_t len = 0;
	double a_queue, n_queue;
	int a, n, sm;

	LIVE_DAEMON(d, "--threads", "1", "--queue", "4");
	len += (size_t)snprintf(long_body, sizeof long_body,
				"{\"weights\":\"none\",\"encoding\":\"base64\",\"text\":\"");
	for (int i = 0; i < WORDS; i++)
		len += (size_t)snprintf(long_body + len, sizeof long_body - len, "%sw%d",
					i > 0 ? " " : "", i);
	snprintf(long_body + len, sizeof long_body - len, "\"}");
	a = send_attention(d.port, long_body);
	live_wait_metric(d.port, "attnd_compute_running", 1, WAIT_MS); /* A on the worker */
	n = send_attention(d.port, "{\"text\":\"a\"}");
	live_wait_metric(d.port, "attnd_compute_queue_depth", 1, WAIT_MS); /* N behind it */
	sm = send_attention(d.port, small);
	live_read_response(sm, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(
	    strstr(r.body, "\"tokens\":[\"I\",\"ate\",\"a\",\"delicious\",\"apple\"]"));
	ck_assert_ptr_nonnull(strstr(live_header(&r, "Server-Timing"), "queue;dur=0.000,"));
	/* neither A nor N is answered yet: both wait for the one worker */
	pending[0] = (struct pollfd){a, POLLIN, 0};
	pending[1] = (struct pollfd){n, POLLIN, 0};
	ck_assert_int_eq(poll(pending, 2, 0), 0);
	live_read_response(a, &r);
	ck_assert_int_eq(r.status, 200);
	a_queue = queue_ms(&r);
	live_read_response(n, &r);
	ck_assert_int_eq(r.status, 200);
	n_queue = queue_ms(&r);
	/* N waited for A: through the queue, not the I/O thread */
	ck_assert_msg(n_queue > a_queue, "N queued %.3f ms, A %.3f ms", n_queue, a_queue);
	close(a);
	close(n);
	close(sm);
	live_resp_release(&r);
	live_stop(&d);
}
END_TEST

/* Reads /metrics on fd (keep-alive) and returns the in-flight gauge. */
static double in_flight(int fd)
{
	struct live_resp r = {0};

	double value;

	live_send_str(fd, "GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
	live_read_response(fd, &r);
	value = live_metric(r.body, "attnd_http_requests_in_flight");
	live_resp_release(&r);
	return value;
}

/* A keep-alive connection the daemon has answered once (GET /healthz): it
 * is accepted, and stays open after the listener closes. */
static int answered_connection(unsigned port)
{
	struct live_resp r = {0};
	int fd = live_connect(port);

	live_send_str(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
	live_read_response(fd, &r);
	ck_assert_int_eq(r.status, 200);
	live_resp_release(&r);
	return fd;
}

/* Sends a compute request on fd of a draining daemon: refused, 503
 * draining, with Retry-After 1 and the connection closed after it. */
static void expect_draining(int fd, struct live_resp *r)
{
	char req[256];

	snprintf(req, sizeof req, "%sContent-Length: 2\r\n\r\n{}", LIVE_POST_ATTENTION);
	live_send_str(fd, req);
	live_read_response(fd, r);
	live_assert_error(r, 503, "draining");
	ck_assert_str_eq(live_header(r, "Retry-After"), "1");
	ck_assert_str_eq(live_header(r, "Connection"), "close");
}

START_TEST(test_drain_with_request_in_flight)
{
	struct live_resp r = {0};
	char req[512];
	int busy, probe, spare, late;
	int status;
	const char *body = "{\"text\":\"a b\",\"model\":\"tiny\"}";
	const char *conn;

	LIVE_DAEMON(d, "--threads", "1", "--drain-seconds", "20");
	probe = live_connect(d.port);
	/* make sure every connection is accepted before the listener closes */
	ck_assert_int_eq(in_flight(probe), 1);
	spare = answered_connection(d.port);
	late = answered_connection(d.port);
	/* a request whose body is half sent is in flight */
	busy = live_connect(d.port);
	snprintf(req, sizeof req, "%sContent-Length: %zu\r\n\r\n%.5s", LIVE_POST_ATTENTION,
		 strlen(body), body);
	live_send_str(busy, req);
	live_wait_metric(d.port, "attnd_http_requests_in_flight", 2, WAIT_MS); /* busy and the poll */

	kill(d.pid, SIGTERM);
	/* readiness turns 503 (the connection is then closed). A 200 answered
	 * just as the drain begins may close its connection too: go on with
	 * the spare one (the listener is closed by then) */
	for (int i = 0; i < 500; i++) {
		live_send_str(probe, "GET /readyz HTTP/1.1\r\nHost: t\r\n\r\n");
		live_read_response(probe, &r);
		if (r.status == 503)
			break;
		conn = live_header(&r, "Connection");
		if (conn != NULL && strcasecmp(conn, "close") == 0) {
			ck_assert_int_ge(spare, 0); /* it happens once: draining stays on */
			close(probe);
			probe = spare;
			spare = -1;
		}
		usleep(10000);
	}
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_nonnull(live_header(&r, "Retry-After"));
	close(probe);
	if (spare >= 0)
		close(spare);
	/* new compute is refused while draining */
	expect_draining(late, &r);
	close(late);
	/* the process is still up until the in-flight request completes */
	ck_assert_int_eq(waitpid(d.pid, &status, WNOHANG), 0);
	live_send_str(busy, body + 5);
	live_read_response(busy, &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	close(busy);
	status = live_wait_exit(d.pid, WAIT_MS);
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "exit status %d", status);
	live_resp_release(&r);
}
END_TEST

/* The SigBlk mask of /proc/PID/task/TID/status, or -1 when unreadable. */
static long long task_blocked(pid_t pid, const char *tid)
{
	char path[512];
	char line[256];
	long long mask = -1;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%d/task/%s/status", (int)pid, tid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "SigBlk: %llx", &mask) == 1)
			break;
	fclose(f);
	return mask;
}

/* Every thread of attnd blocks SIGTERM, SIGINT and SIGHUP, main included,
 * which reads them from a signalfd (server/signals.h): no handler runs on
 * a thread that may never pass it on (ThreadSanitizer's runtime dropped a
 * SIGTERM so). OpenBLAS's own threads, started before main, are stopped, so
 * none is left to take one. And SIGINT drains and exits 0 as SIGTERM does. */
START_TEST(test_every_thread_blocks_stop_signals)
{
	const long long stop = (1LL << (SIGTERM - 1)) | (1LL << (SIGINT - 1)) |
			       (1LL << (SIGHUP - 1));
	char dir[64];
	struct dirent *e;
	int threads = 0, status;
	DIR *tasks;

	LIVE_DAEMON(d, "--threads", "2");
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)d.pid);
	tasks = opendir(dir);
	ck_assert_ptr_nonnull(tasks);
	while ((e = readdir(tasks)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		ck_assert_msg((task_blocked(d.pid, e->d_name) & stop) == stop,
			      "thread %s takes SIGTERM, SIGINT or SIGHUP", e->d_name);
		threads++;
	}
	closedir(tasks);
	ck_assert_int_ge(threads, 5); /* main, workers, I/O threads, the log writer */
	ck_assert_int_eq(kill(d.pid, SIGINT), 0);
	status = live_wait_exit(d.pid, WAIT_MS);
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "exit status %d after SIGINT", status);
}
END_TEST

/* A keep-alive client that sends its next request just after SIGTERM, with
 * nothing in flight: answered (503 draining, Connection: close), not cut by
 * the daemon's exit, and /v2's model readiness 503 as inference is refused;
 * a connection left idle does not hold the exit past the drain's keep-alive
 * second. */
START_TEST(test_drain_answers_keepalive_request)
{
	struct live_resp r = {0};
	int sender, idle, asker, status;

	LIVE_DAEMON(d, "--drain-seconds", "20");
	sender = answered_connection(d.port);
	idle = answered_connection(d.port);
	asker = answered_connection(d.port);

	kill(d.pid, SIGTERM);
	usleep(200000); /* the drain has begun, with no request in flight */
	expect_draining(sender, &r);
	close(sender);
	/* no model takes inference now, and the protocol's readiness says so */
	live_send_str(asker, "GET /v2/models/tiny/ready HTTP/1.1\r\nHost: t\r\n\r\n");
	live_read_response(asker, &r);
	ck_assert_msg(r.status == 503 && strstr(r.body, "\"ready\":false") != NULL, "%d %s",
		      r.status, r.body);
	close(asker);
	status = live_wait_exit(d.pid, WAIT_MS);
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "exit status %d", status);
	close(idle);
	live_resp_release(&r);
}
END_TEST

/* Sends n pipelined GET /healthz on fd and counts the answers' status
 * lines read within a second of quiet: fewer than n when the daemon stalls. */
static size_t healthz_burst(int fd, size_t n)
{
	static const char get[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
	char buf[65536];
	size_t seen = 0, carry = 0;
	struct pollfd p = {fd, POLLIN, 0};

	for (size_t i = 0; i < n; i++)
		live_send_str(fd, get);
	while (seen < n && poll(&p, 1, 1000) > 0) {
		ssize_t got = read(fd, buf + carry, sizeof buf - 1 - carry);
		char *at = buf;

		if (got <= 0)
			break;
		buf[carry + (size_t)got] = '\0';
		while ((at = strstr(at, "HTTP/1.1 ")) != NULL) {
			seen++;
			at++;
		}
		/* keep a tail that may hold the start of a status line */
		carry = carry + (size_t)got > 16 ? 16 : carry + (size_t)got;
		memmove(buf, buf + strlen(buf) - carry, carry);
	}
	return seen;
}

/* Starts attnd with args (--port 0 among them), its stderr a pipe whose
 * read end is *errfd, read by nobody unless the test does; its port. */
static unsigned start_with_log_pipe(const char *const *args, pid_t *pid, int *errfd)
{
	char line[512];
	const char *at;
	int out = live_spawn_stderr(args, pid, errfd);

	live_read_stdout(out, line, sizeof line, WAIT_MS);
	close(out);
	at = strstr(line, "listening on 127.0.0.1:");
	ck_assert_msg(at != NULL, "attnd did not start: '%s'", line);
	return (unsigned)strtoul(at + strlen("listening on 127.0.0.1:"), NULL, 10);
}

/* Sends /healthz bursts on fd until one is not answered whole: the log has
 * stalled (about 15,000 access lines fill the pipe and the buffer). */
static void stall_log(int fd)
{
	size_t rounds = 0;

	while (healthz_burst(fd, 200) == 200)
		ck_assert_msg(++rounds < 1000, "the daemon never stalled on its log");
}

/* SIGTERM, then pid's exit status within 10 s, or -1 (it is killed then). */
static int terminate(pid_t pid)
{
	int status;

	kill(pid, SIGTERM);
	status = live_wait_exit(pid, 10000);
	if (status == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return status;
}

/* A log reader that stops reading (a pipe nobody reads: stderr fills it and
 * the 1 MiB buffer, then the requests that log wait): a SIGTERM still
 * drains, and the daemon exits once --drain-seconds and the writer's bound
 * have passed (1 here: requests were left waiting), not when someone reads
 * the log at last. */
START_TEST(test_drain_with_stalled_log)
{
	const char *args[] = {"--port", "0", "--host", "127.0.0.1", "--drain-seconds", "1", NULL};
	int errfd, fd, status;
	pid_t pid;

	fd = live_connect(start_with_log_pipe(args, &pid, &errfd));
	stall_log(fd);
	status = terminate(pid);
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 1,
		      "exit status %d", status);
	close(fd);
	close(errfd);
}
END_TEST

/* The same stalled log, and then clients that close with half a request
 * sent: libmicrohttpd reports each to an I/O thread, which writes the
 * refusals' count line (refusals.h) outside any request. That line must not
 * wait for the log, nor hold the refusals' lock while it would: main takes
 * the lock every second and at exit, so a waiting line kept the daemon from
 * reading SIGTERM at all. Two I/O threads: the burst stalls one, the other
 * takes the half requests. */
START_TEST(test_stalled_log_with_half_sent_requests)
{
	const char *args[] = {"--port",		 "0", "--host", "127.0.0.1", "--io-threads", "2",
			      "--drain-seconds", "1", NULL};
	int errfd, fd, status;
	unsigned port;
	pid_t pid;

	port = start_with_log_pipe(args, &pid, &errfd);
	fd = live_connect(port);
	stall_log(fd);
	for (int i = 0; i < 4; i++) { /* accepted by the I/O thread not stalled */
		int half = live_connect(port);

		live_send_str(half, "GET /healthz HTTP/1.1\r\nHo");
		close(half);
	}
	usleep(1500000); /* a bound: the closes seen, and a tick of main's */
	status = terminate(pid);
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 1,
		      "exit status %d (-1: no exit 10 s after SIGTERM)", status);
	close(fd);
	close(errfd);
}
END_TEST

/* Bytes from fd into out (cap) until EOF, about 16 KiB every 100 ms: a log
 * reader slower than attnd's exit would wait for at one second. */
static size_t read_slowly(int fd, char *out, size_t cap)
{
	size_t got = 0;

	for (;;) {
		size_t want = cap - 1 - got < 16384 ? cap - 1 - got : 16384;
		ssize_t n = want > 0 ? read(fd, out + got, want) : 0;

		if (n <= 0)
			break;
		got += (size_t)n;
		usleep(100000);
	}
	out[got] = '\0';
	return got;
}

/* A slow log reader at an ordinary SIGTERM: every access line and the
 * drain's own lines reach it, however long past a second that takes, as
 * long as it keeps reading. */
START_TEST(test_slow_log_reader_gets_every_line)
{
	const char *args[] = {"--port", "0", "--host", "127.0.0.1", NULL};
	enum { BURSTS = 40, PER = 200, CAP = 4 << 20 };
	char *log = malloc(CAP);
	const char *at;
	int errfd, fd, status;
	size_t lines = 0;
	pid_t pid;

	ck_assert_ptr_nonnull(log);
	fd = live_connect(start_with_log_pipe(args, &pid, &errfd));
	/* 8,000 lines, about 600 KB: within the pipe and the buffer, unread */
	for (int i = 0; i < BURSTS; i++)
		ck_assert_uint_eq(healthz_burst(fd, PER), PER);
	close(fd);
	kill(pid, SIGTERM);
	read_slowly(errfd, log, CAP); /* some seconds: to EOF, the exit */
	close(errfd);
	status = live_wait_exit(pid, WAIT_MS);
	ck_assert_msg(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "exit status %d", status);
	for (at = strstr(log, "GET /healthz 200"); at != NULL; at = strstr(at + 1, "GET /healthz 200"))
		lines++;
	ck_assert_uint_eq(lines, BURSTS * PER);
	ck_assert_ptr_nonnull(strstr(log, "drained; exiting\n"));
	free(log);
}
END_TEST

/* Runs attnd with args to completion; returns its exit code, stdout in out.
 * Read to the end: live_read_stdout stops at a `listening on` line, which
 * --help quotes, and a help past stdio's 4 KiB buffer comes in pieces. */
static int run_attnd(const char *const *args, char *out, size_t cap)
{
	pid_t pid;
	int fd = live_spawn(args, &pid);
	int status;
	size_t got = 0, n;

	while ((n = live_read_stdout(fd, out + got, cap - got, WAIT_MS)) > 0)
		got += n;
	close(fd);
	status = live_wait_exit(pid, WAIT_MS);
	ck_assert(status != -1 && WIFEXITED(status));
	return WEXITSTATUS(status);
}

START_TEST(test_help_lists_every_option)
{
	static const char *const flags[] = {"--host",
					    "--port",
					    "--threads",
					    "--io-threads",
					    "--queue",
					    "--model",
					    "--default-model",
					    "--max-body",
					    "--max-request-mb",
					    "--max-request-gflop",
					    "--api-key",
					    "--cors-origins",
					    "--drain-seconds",
					    "--log-format",
					    "--connection-limit",
					    "--per-ip-limit",
					    "--connection-memory",
					    "--max-receiving-mb",
					    "--timeout",
					    "--request-deadline",
					    "--compute-deadline",
					    "--no-builtins",
					    "--probe",
					    "--version",
					    "--help"};
	static char out[65536];
	const char *const help[] = {"--help", NULL};
	const char *const version[] = {"--version", NULL};
	const char *const bad[] = {"--no-such-flag", NULL};
	const char *const bad_num[] = {"--port", "70000", NULL};
	/* each bound of a number is within its range, one past it is not */
	const char *const at_max[] = {"--port", "65535", "--compress-level", "9",
				      "--drain-seconds", "3600", "--version", NULL};
	const char *const past_max[] = {"--compress-level", "10", "--version", NULL};
	const char *const at_min[] = {"--connection-memory", "4096", "--timeout", "1",
				      "--version", NULL};
	const char *const past_min[] = {"--connection-memory", "4095", "--version", NULL};
	/* a choice's name in any case, as a boolean's; an unknown one refused */
	const char *const upper_format[] = {"--log-format", "JSON", "--version", NULL};
	const char *const bad_format[] = {"--log-format", "xml", "--version", NULL};
	/* a budget of bodies that cannot hold one body would refuse every one */
	const char *const small_budget[] = {"--max-body", "2097153", "--max-receiving-mb", "2",
					    NULL};

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
	ck_assert_int_eq(run_attnd(at_max, out, sizeof out), 0);
	ck_assert_int_eq(run_attnd(past_max, out, sizeof out), 2);
	ck_assert_int_eq(run_attnd(at_min, out, sizeof out), 0);
	ck_assert_int_eq(run_attnd(past_min, out, sizeof out), 2);
	ck_assert_int_eq(run_attnd(upper_format, out, sizeof out), 0);
	ck_assert_int_eq(run_attnd(bad_format, out, sizeof out), 2);
	ck_assert_int_eq(run_attnd(small_budget, out, sizeof out), 2);
}
END_TEST

/* --cors-origins takes each origin only as a browser's Origin header
 * carries it (RFC 6454 section 6.2): one written otherwise would never match,
 * and its frontend would get no CORS header, with nothing said. */
START_TEST(test_cors_origins_as_browsers_send_them)
{
	static const struct {
		const char *list, *why; /* why: NULL when attnd takes the list */
	} cases[] = {
	    {"https://app.example:443", "write 'https://app.example'"},
	    {"http://localhost:80", "default port 80; write 'http://localhost'"},
	    {"https://a.example,wss://b.example:443", "write 'wss://b.example'"},
	    {"http://[::1]:80", "write 'http://[::1]'"},
	    {"https://b\xc3\xbc" "cher.example", "punycode"},
	    {"https://app.example:08443", "without leading zeros"},
	    {"https://app.example:", "from 0 to 65535"},
	    {"https://app.example:65536", "from 0 to 65535"},
	    {"https://app.example:8a", "from 0 to 65535"},
	    {"http://[::1]x", "scheme://[address][:port]"},
	    {"HTTPS://app.example", "capitals"},
	    {"https://app.example/", "trailing slash"},
	    {"https://app.example:8443", NULL},
	    {"http://app.example:443,https://app.example:80", NULL},
	    {"https://app.example.", NULL},
	    {"http://[::1]:8080,http://[::1],null", NULL},
	    {"https://xn--bcher-kva.example,http://localhost:65535", NULL},
	};
	static char err[4096];

	/* a bad --log-format, checked after the origins, ends a start whose
	 * origins passed: what stops it says which check did */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *const argv[] = {"--cors-origins", cases[i].list, "--log-format", "xml",
					    NULL};
		const char *want = cases[i].why != NULL ? cases[i].why : "--log-format";
		int status = live_run_to_exit(argv, WAIT_MS, err, sizeof err);

		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "'%s': %s",
			      cases[i].list, err);
		ck_assert_msg(strstr(err, want) != NULL, "'%s': want '%s' in: %s", cases[i].list,
			      want, err);
	}
}
END_TEST

/* A --model file becomes a served model and the default. */
START_TEST(test_model_from_file)
{
	const char *file = "tests/data/fixtures/safetensors/llama_gqa_f32.safetensors";
	char spec[256];
	struct live_resp r = {0};

	if (access(file, R_OK) != 0)
		return; /* run from the repository root to include this case */
	snprintf(spec, sizeof spec, "gqa=%s,heads=4", file);
	/* the first --model replaces ATTND_MODEL's list, whose file is missing */
	setenv("ATTND_MODEL", "x=/nonexistent.safetensors,heads=2", 1);
	LIVE_DAEMON(d, "--no-builtins", "--model", spec);
	unsetenv("ATTND_MODEL");
	live_get(d.port, "/readyz", &r);
	ck_assert_int_eq(r.status, 200);
	live_get(d.port, "/v1/models/gqa", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "gqa"));
	live_get(d.port, "/v1/models/x", &r);
	live_assert_error(&r, 404, "model_not_found");
	live_stop(&d);
	live_resp_release(&r);
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

/* --max-receiving-mb 1 holds one body of --max-body 1 MiB: the daemon starts,
 * and a body of exactly that size (padded with spaces) is taken and answered,
 * whether declared or chunked. */
START_TEST(test_budget_of_one_body)
{
	static const char json[] = "{\"model\":\"tiny\",\"tokens\":[1,2,3]}";
	const size_t n = 1 << 20;
	char *body = malloc(n);
	char head[256];
	struct live_resp r = {0};
	int fd;

	ck_assert_ptr_nonnull(body);
	memset(body, ' ', n);
	memcpy(body, json, sizeof json - 1);
	LIVE_DAEMON(d, "--max-body", "1048576", "--max-receiving-mb", "1", "--threads", "1");
	live_post(d.port, "/v1/attention", "application/json", "", body, n, &r);
	ck_assert_msg(r.status == 200, "%d: %s", r.status, r.body);
	/* given back on completion, which may come after the answer is read */
	live_wait_metric(d.port, "attnd_bodies_receiving_bytes", 0, WAIT_MS);
	fd = live_connect(d.port);
	live_send_str(fd, LIVE_POST_ATTENTION "Transfer-Encoding: chunked\r\n\r\n");
	snprintf(head, sizeof head, "%zx\r\n", n);
	live_send_str(fd, head);
	live_send_all(fd, body, n);
	live_send_str(fd, "\r\n0\r\n\r\n");
	live_read_response(fd, &r);
	ck_assert_msg(r.status == 200, "%d: %s", r.status, r.body);
	close(fd);
	live_stop(&d);
	live_resp_release(&r);
	free(body);
}
END_TEST

/* head, n tokens of id 1 ("1,1,...,1"), tail: into buf, NUL-terminated. */
static size_t ones_body(char *buf, size_t cap, const char *head, size_t n, const char *tail)
{
	size_t len = strlen(head), t = strlen(tail);

	ck_assert_uint_lt(len + 2 * n + t, cap);
	memcpy(buf, head, len);
	for (size_t i = 0; i < n; i++) {
		buf[len++] = '1';
		buf[len++] = ',';
	}
	len -= n > 0; /* no comma after the last */
	memcpy(buf + len, tail, t + 1);
	return len + t;
}

#define TINY_TOKENS "{\"model\":\"tiny\",\"weights\":\"none\",\"tokens\":["

/* --max-request-gflop reaches the API, on v1 and on v2's infer (whose errors
 * are 400 {"error": message}): tiny on 2500 tokens is 1.001 GFLOP of work
 * (tests/api/check_api_robustness.c, test_work_limit), 2490 are 0.993. */
START_TEST(test_work_limit_flag)
{
	static char body[16384];
	struct live_resp r = {0};
	size_t len;

	LIVE_DAEMON(d, "--max-request-gflop", "1");
	len = ones_body(body, sizeof body, TINY_TOKENS, 2500, "]}");
	live_post(d.port, "/v1/attention", "application/json", "", body, len, &r);
	live_assert_error(&r, 422, "request_too_expensive");
	len = ones_body(body, sizeof body, TINY_TOKENS, 2490, "]}");
	live_post(d.port, "/v1/attention", "application/json", "", body, len, &r);
	ck_assert_int_eq(r.status, 200);
	len = ones_body(body, sizeof body,
			"{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\","
			"\"shape\":[1,2500],\"data\":[",
			2500, "]}]}");
	live_post(d.port, "/v2/models/tiny/infer", "application/json", "", body, len, &r);
	ck_assert_int_eq(r.status, 422); /* as /v1: one table of error kinds */
	ck_assert_msg(strstr(r.body, "GFLOP of work") != NULL, "%s", r.body);
	live_resp_release(&r);
	live_stop(&d);
}
END_TEST

START_TEST(test_probe)
{
	static char out[4096];
	char ok_url[128], bad_url[128];

	LIVE_DAEMON(d, "--no-builtins");
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
	live_stop(&d);
}
END_TEST

/* localhost is the loopback (RFC 6761), so it is probed at 127.0.0.1 as a
 * container's health check would write it; any other name is not looked
 * up, and its message gives the forms taken, not "cannot connect", which
 * would send whoever wrote it looking for a dead daemon. */
START_TEST(test_probe_host_name)
{
	static char err[4096];
	char url[128];
	int status;

	LIVE_DAEMON(d, "--no-builtins");
	snprintf(url, sizeof url, "http://LocalHost:%u/healthz", d.port);
	{
		const char *const probe[] = {"--probe", url, NULL};

		status = live_run_to_exit(probe, WAIT_MS, err, sizeof err);
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, err);
	snprintf(url, sizeof url, "http://attnd.example:%u/healthz", d.port);
	{
		const char *const probe[] = {"--probe", url, NULL};

		status = live_run_to_exit(probe, WAIT_MS, err, sizeof err);
	}
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %d", status);
	ck_assert_msg(strstr(err, "is not http://IPV4:PORT/path") != NULL, "stderr: %s", err);
	ck_assert_msg(strstr(err, "cannot connect") == NULL, "stderr: %s", err);
	live_stop(&d);
}
END_TEST

/* --host :: is every interface, IPv4 too: the image's HEALTHCHECK probes
 * 127.0.0.1, and the probe speaks IPv6 in brackets. Skipped where the
 * machine has no IPv6. */
START_TEST(test_probe_dual_stack)
{
	static char out[4096];
	const char *const args[] = {"--port", "0", "--host", "::", "--no-builtins", NULL};
	char v4[128], v6[128], line[256];
	const char *at;
	pid_t pid;
	int fd = live_spawn(args, &pid);
	unsigned port;

	live_read_stdout(fd, line, sizeof line, WAIT_MS);
	close(fd);
	at = strstr(line, "listening on ");
	if (at == NULL) { /* no IPv6 here: attnd could not bind */
		kill(pid, SIGKILL);
		live_wait_exit(pid, WAIT_MS);
		return;
	}
	ck_assert_msg(strncmp(at, "listening on [::]:", 18) == 0, "banner: %s", line);
	port = (unsigned)strtoul(at + strlen("listening on [::]:"), NULL, 10);
	snprintf(v4, sizeof v4, "http://127.0.0.1:%u/healthz", port);
	snprintf(v6, sizeof v6, "http://[::1]:%u/healthz", port);
	{
		const char *const probe4[] = {"--probe", v4, NULL};
		const char *const probe6[] = {"--probe", v6, NULL};

		ck_assert_int_eq(run_attnd(probe4, out, sizeof out), 0);
		ck_assert_int_eq(run_attnd(probe6, out, sizeof out), 0);
	}
	kill(pid, SIGTERM);
	ck_assert_int_ne(live_wait_exit(pid, WAIT_MS), -1);
}
END_TEST

static Suite *server_ops_suite(void)
{
	Suite *s = suite_create("server_ops");
	TCase *load = tcase_create("load");
	TCase *cli = tcase_create("command line");

	tcase_set_timeout(load, 120);
	tcase_set_timeout(cli, 120);
	tcase_add_test(load, test_overloaded);
	tcase_add_test(load, test_small_compute_skips_queue);
	tcase_add_test(load, test_drain_with_request_in_flight);
	tcase_add_test(load, test_every_thread_blocks_stop_signals);
	tcase_add_test(load, test_drain_answers_keepalive_request);
	tcase_add_test(load, test_drain_with_stalled_log);
	tcase_add_test(load, test_stalled_log_with_half_sent_requests);
	tcase_add_test(load, test_slow_log_reader_gets_every_line);
	tcase_add_test(cli, test_help_lists_every_option);
	tcase_add_test(cli, test_cors_origins_as_browsers_send_them);
	tcase_add_test(cli, test_bad_model_exits_2);
	tcase_add_test(cli, test_model_from_file);
	tcase_add_test(cli, test_probe);
	tcase_add_test(cli, test_probe_host_name);
	tcase_add_test(cli, test_probe_dual_stack);
	tcase_add_test(cli, test_work_limit_flag);
	tcase_add_test(cli, test_budget_of_one_body);
	suite_add_tcase(s, load);
	suite_add_tcase(s, cli);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .daemon = true,
	};

	return suite_main(argc, argv, server_ops_suite, &opts);
}
