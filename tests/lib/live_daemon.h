/*
 * live_daemon.h: the real daemon for a test, and a binary-safe HTTP/1.1
 * client to talk to it: build/attnd with --port 0 --host 127.0.0.1,
 * `listening on HOST:PORT` read from its stdout. The client also speaks raw
 * bytes on kept-alive connections, for the framing cases of check_server.
 *
 * The daemon's stderr goes to $ATTND_TEST_LOG when set, else /dev/null
 * (live_spawn_stderr: to a pipe); it dies with the test process
 * (PR_SET_PDEATHSIG). A test waits for a state it can observe (the gauges of
 * /metrics: live_wait_metric), never for a guessed time. Failures are Check
 * assertions. Every name starts with live_: the Makefile links this file into
 * every test binary.
 *
 * Ownership: a struct live_resp owns its body. It starts zeroed ({0}); each
 * call that fills it frees the body it held, and live_resp_release frees the
 * last one. Everything else is the caller's.
 */
#ifndef ATTN_TESTS_LIVE_DAEMON_H
#define ATTN_TESTS_LIVE_DAEMON_H

#include <check.h>
#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

struct live_daemon {
	pid_t pid;
	unsigned port;
};

/* $ATTND_BIN, else attnd beside the test binary's directory (build/tests/.. ).
 * A suite that starts the daemon asks suite_main for it (suite_main.h:
 * .daemon = true), which calls this first and fails when attnd is not built. */
void live_find_attnd(const char *argv0);
const char *live_attnd(void);

/* Starts attnd with extra args (NULL-terminated, may be NULL). */
void live_start(struct live_daemon *d, const char *const *extra);

/* SIGTERM, expecting exit status 0. */
void live_stop(struct live_daemon *d);

/* Runs attnd with args (after argv[0]; NULL-terminated, may be NULL), its
 * stderr as live_start's; returns the read end of its stdout. */
int live_spawn(const char *const *args, pid_t *pid);

/* live_spawn with the daemon's stderr in a pipe too: *err_fd is its read
 * end, the caller's to read and close. */
int live_spawn_stderr(const char *const *args, pid_t *pid, int *err_fd);

/* Reads fd into out (NUL-terminated) until EOF, a whole `listening on`
 * line, or timeout_ms without data; returns the bytes read. */
size_t live_read_stdout(int fd, char *out, size_t cap, int timeout_ms);

/* Waits up to timeout_ms for pid to exit: its wait status, or -1. */
int live_wait_exit(pid_t pid, int timeout_ms);

/* Runs attnd with args expecting it to exit at start-up (a refused option or
 * file): its stderr goes to err[cap], the wait status is returned. A daemon
 * that starts instead, or does not exit within timeout_ms, is killed and the
 * test fails. */
int live_run_to_exit(const char *const *args, int timeout_ms, char *err, size_t cap);

struct live_resp {
	int status;
	char head[16384]; /* status line and headers, NUL-terminated */
	char *body;	  /* body_len bytes, plus a NUL not counted */
	size_t body_len;
	int closed; /* the server closed the connection, or said it would */
};

/* A connection to 127.0.0.1:port, reads timing out after 30 s. */
int live_connect(unsigned port);
void live_send_all(int fd, const void *p, size_t n);
void live_send_str(int fd, const char *s);

/* One response from fd: its head, then Content-Length bytes, or up to the
 * close when it gives none (a 204 and a 304 have no body, whatever their
 * Content-Length); the connection stays usable unless r->closed. */
void live_read_response(int fd, struct live_resp *r);

/* request sent byte for byte on a fresh connection; one response. */
void live_exchange(unsigned port, const char *request, struct live_resp *r);

/* request sent on a fresh connection, the answer read to the close: its
 * status. For answers live_read_response rightly refuses (libmicrohttpd's
 * own, with a body past its Content-Length) and ones that close. */
int live_raw_status(unsigned port, const char *request);

/*
 * Sends `head` (request line and headers, without the blank line; a
 * Content-Length for body_len and Connection: close are added) and body on a
 * fresh connection, and reads the whole response into r.
 */
void live_request(unsigned port, const char *head, const void *body, size_t body_len,
		  struct live_resp *r);
void live_resp_release(struct live_resp *r);

/* GET path. */
void live_get(unsigned port, const char *path, struct live_resp *r);

/* POST path with a body and a Content-Type; extra_headers ("Name: v\r\n"...) may be "". */
void live_post(unsigned port, const char *path, const char *content_type,
	       const char *extra_headers, const void *body, size_t len, struct live_resp *r);

/* A response header's value (copied into a static buffer), or NULL. */
const char *live_header(const struct live_resp *r, const char *name);

/* r's body parsed as JSON (a new reference); fails the test when it is not. */
json_t *live_json(const struct live_resp *r);

/* r is the error body of status with this code, as application/json. */
void live_assert_error(const struct live_resp *r, int status, const char *code);

/* The value of one sample ("name{labels}") in Prometheus text, or -1. */
double live_metric(const char *text, const char *series);

/* Polls GET /metrics on port until the sample series equals want, and fails
 * the test, naming the series and its last value, after timeout_ms. Each
 * poll is a request of its own: attnd_http_requests_in_flight counts it. */
void live_wait_metric(unsigned port, const char *series, double want, int timeout_ms);

/* A "Name:   N kB" line of /proc/PID/status (VmRSS, VmHWM) in KiB; fails
 * the test when it is missing. */
long live_proc_kib(pid_t pid, const char *field);

/* CLOCK_MONOTONIC in seconds: the clock the daemon times requests with. */
double live_now(void);

/* struct live_daemon name, started with the extra args given. */
#define LIVE_DAEMON(name, ...)                                                                     \
	struct live_daemon name;                                                                   \
	do {                                                                                       \
		const char *const name##_args[] = {__VA_ARGS__, NULL};                             \
		live_start(&name, name##_args);                                                    \
	} while (0)

/* The head of a JSON POST to /v1/attention, for raw requests. */
#define LIVE_POST_ATTENTION                                                                        \
	"POST /v1/attention HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"

#endif
