/*
 * live_daemon.h: the real daemon for a test, and a binary-safe HTTP/1.1
 * client to talk to it (check_v2; check_server's approach: build/attnd with
 * --port 0 --host 127.0.0.1, `listening on HOST:PORT` read from its stdout).
 *
 * The daemon's stderr goes to $ATTND_TEST_LOG when set, else /dev/null; it
 * dies with the test process (PR_SET_PDEATHSIG). Failures are Check
 * assertions. Every name starts with live_: the Makefile links this file into
 * every test binary.
 *
 * Ownership: a struct live_resp owns its body (live_resp_release, safe on a
 * zeroed or released one); everything else is the caller's.
 */
#ifndef ATTN_TESTS_LIVE_DAEMON_H
#define ATTN_TESTS_LIVE_DAEMON_H

#include <stddef.h>
#include <sys/types.h>

struct live_daemon {
	pid_t pid;
	unsigned port;
};

/* $ATTND_BIN, else attnd beside the test binary's directory (build/tests/.. ). */
void live_find_attnd(const char *argv0);
const char *live_attnd(void);

/* Starts attnd with extra args (NULL-terminated, may be NULL). */
void live_start(struct live_daemon *d, const char *const *extra);

/* SIGTERM, expecting exit status 0. */
void live_stop(struct live_daemon *d);

struct live_resp {
	int status;
	char head[16384]; /* status line and headers, NUL-terminated */
	char *body;	  /* body_len bytes, plus a NUL not counted */
	size_t body_len;
};

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

#endif
