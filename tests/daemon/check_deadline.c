/*
 * check_deadline.c: cancelled compute requests, on the real daemon
 * (server/watch.h): --compute-deadline and clients that leave.
 *
 *   deadline     --threads 1 --compute-deadline 1: a long request (`base`,
 *                8192 token ids, seconds of one core) answers 503
 *                deadline_exceeded with the JSON error body and Retry-After,
 *                counted as cancelled while running; a request that is not
 *                small but short (`base`, 64 ids, through the queue and the
 *                watcher) and a small one (answered on the I/O thread) still
 *                answer 200; /v2/models/base/infer with the same tokens
 *                answers 503 with the Open Inference Protocol's error body
 *   none         --compute-deadline 0: the same short request answers 200
 *   client gone  --threads 1: the long request's client closes its socket
 *                once /metrics shows it computing; the request is counted
 *                cancelled (client_closed, running) and the worker is free
 *                again (attnd_compute_running back to 0), and the next
 *                request is answered
 *   lent back    --threads 2: the long request borrows the idle worker
 *                (attnd_compute_split_total 1); its client leaves; the next
 *                large request borrows it again, so it was given back
 *   gone after   --threads 1 --compute-deadline 1: a call that never reads
 *   the deadline the cancel flag (POST /v1/tokenize, bert, one word of
 *                TOK_BYTES, seconds of one core) runs on past the deadline,
 *                its reply standing; its client leaves meanwhile, when the
 *                watcher no longer polls its socket: logged 499, not 0
 *   queued     --threads 1 --compute-deadline 1: while the tokenizer call
 *   deadline     above runs, a request waits in the queue past its deadline:
 *                it is answered 503 deadline_exceeded then (the watcher ends
 *                it), while the call still runs, not when a worker takes it
 *   room made  --threads 1 --queue 1: the long request runs, a short one
 *                waits in the queue, and its client leaves; a fresh request
 *                is queued in its place (not refused 503 `overloaded` until
 *                the long one ends), the one gone counted cancelled while
 *                queued
 * The latency of that last step (< 100 ms) is measured by the fault suite
 * (tests/daemon/faults/run.py, cancelled_running), where figures are printed.
 */
#define _DEFAULT_SOURCE /* usleep */
#include <check.h>

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

enum { WAIT_MS = 30000, LONG_L = 8192, SHORT_L = 64, TOK_BYTES = 10000000 };
/* How long the TOK_BYTES tokenize may take to end: about 5 s on the
 * project's machine, many times that under TSan (whose runs multiply the
 * case's own timeout by 4: CK_TIMEOUT_MULTIPLIER in the Makefile). */
enum { TOK_END_MS = 400000 };

#define CANCELLED(reason, stage)                                                                   \
	"attnd_requests_cancelled_total{reason=\"" reason "\",stage=\"" stage "\"}"

/* {"model":"base","weights":"none","tokens":[...n ids...]}: a layer over n
 * tokens, O(n^2) work; the caller frees it. */
static char *tokens_body(size_t n)
{
	size_t cap = n * 8 + 128, len = 0;
	char *body = malloc(cap);

	ck_assert_ptr_nonnull(body);
	len += (size_t)snprintf(body, cap, "{\"model\":\"base\",\"weights\":\"none\",\"tokens\":[");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(body + len, cap - len, "%s%zu", i ? "," : "", (i * 7) % 32000);
	snprintf(body + len, cap - len, "]}");
	return body;
}

/* The same ids as a v2 infer body: tokens INT64 [n], no weights. */
static char *v2_tokens_body(size_t n)
{
	size_t cap = n * 8 + 256, len = 0;
	char *body = malloc(cap);

	ck_assert_ptr_nonnull(body);
	len += (size_t)snprintf(body, cap,
				"{\"parameters\":{\"weights\":\"none\"},\"inputs\":[{\"name\":"
				"\"tokens\",\"datatype\":\"INT64\",\"shape\":[%zu],\"data\":[",
				n);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(body + len, cap - len, "%s%zu", i ? "," : "", (i * 7) % 32000);
	snprintf(body + len, cap - len, "]}]}");
	return body;
}

static void post_json(unsigned port, const char *body, struct live_resp *r)
{
	live_post(port, "/v1/attention", "application/json", "", body, strlen(body), r);
}

/* A short request through the queue, and a small one: both 200. */
static void short_requests_answer(unsigned port)
{
	struct live_resp r = {0};
	char *body = tokens_body(SHORT_L);

	post_json(port, body, &r);
	ck_assert_int_eq(r.status, 200);
	post_json(port, "{\"model\":\"tiny\",\"text\":\"the cat sat\"}", &r);
	ck_assert_int_eq(r.status, 200);
	free(body);
	live_resp_release(&r);
}

enum { SPLIT_TRIES = 5 };

/* Sends the long request on a fresh connection; returns the socket. */
static int send_long(unsigned port, const char *body)
{
	static char head[256];
	int fd = live_connect(port);

	snprintf(head, sizeof head, "%sContent-Length: %zu\r\n\r\n", LIVE_POST_ATTENTION,
		 strlen(body));
	live_send_str(fd, head);
	live_send_str(fd, body);
	return fd;
}

static double metric_of(unsigned port, const char *series)
{
	struct live_resp r = {0};
	double v;

	live_get(port, "/metrics", &r);
	v = live_metric(r.body, series);
	live_resp_release(&r);
	return v;
}

START_TEST(test_compute_deadline_answers_503)
{
	struct live_resp r = {0};
	char *body = tokens_body(LONG_L);

	LIVE_DAEMON(d, "--threads", "1", "--compute-deadline", "1");
	post_json(d.port, body, &r);
	live_assert_error(&r, 503, "deadline_exceeded");
	ck_assert_ptr_nonnull(strstr(r.body, "--compute-deadline"));
	ck_assert_str_eq(live_header(&r, "Retry-After"), "1");
	/* the engine's time up to the cut counts as compute (the deadline runs
	 * from the headers, so parsing took its part of the second) */
	const char *compute = strstr(live_header(&r, "Server-Timing"), "compute;dur=");
	ck_assert_ptr_nonnull(compute);
	ck_assert_msg(strtod(compute + 12, NULL) > 0, "%s", live_header(&r, "Server-Timing"));
	short_requests_answer(d.port);
	free(body);
	body = v2_tokens_body(LONG_L);
	live_post(d.port, "/v2/models/base/infer", "application/json", "", body, strlen(body), &r);
	ck_assert_int_eq(r.status, 503);
	ck_assert_msg(strncmp(r.body, "{\"error\":\"the computation did not finish", 40) == 0,
		      "v2 body: %s", r.body);
	live_get(d.port, "/metrics", &r);
	ck_assert_double_eq(live_metric(r.body, CANCELLED("deadline", "running")), 2);
	ck_assert_double_eq(live_metric(r.body, "attnd_rejections_total{reason=\"deadline_exceeded\"}"),
			    2);
	/* per model (the default, base): counted on completion */
	live_wait_metric(d.port, "attnd_model_requests_total{model=\"base\",outcome=\"cancelled\"}",
			 2, WAIT_MS);
	/* and in the compute histogram: the two cut requests, the short one too
	 * (an operator sees the engine busy up to the deadline, not idle) */
	ck_assert_double_eq(metric_of(d.port, "attnd_compute_duration_seconds_count{model=\"base\"}"),
			    3);
	live_stop(&d);
	free(body);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_compute_deadline_zero_is_none)
{
	LIVE_DAEMON(d, "--threads", "1", "--compute-deadline", "0");
	short_requests_answer(d.port);
	live_stop(&d);
}
END_TEST

START_TEST(test_client_gone_frees_worker)
{
	struct live_resp r = {0};
	char *body = tokens_body(LONG_L);
	int fd;

	LIVE_DAEMON(d, "--threads", "1");
	fd = send_long(d.port, body);
	live_wait_metric(d.port, "attnd_compute_running", 1, WAIT_MS);
	close(fd);
	live_wait_metric(d.port, CANCELLED("client_closed", "running"), 1, WAIT_MS);
	live_wait_metric(d.port, "attnd_compute_running", 0, WAIT_MS);
	/* counted when libmicrohttpd completes the closed connection, which may
	 * come a little after the worker is free */
	live_wait_metric(d.port, "attnd_http_requests_total{route=\"/v1/attention\",code=\"499\"}",
			 1, WAIT_MS);
	live_wait_metric(d.port, "attnd_model_requests_total{model=\"base\",outcome=\"cancelled\"}",
			 1, WAIT_MS);
	short_requests_answer(d.port);
	live_stop(&d);
	free(body);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_client_gone_returns_lent_workers)
{
	struct live_resp r = {0};
	char *long_body = tokens_body(LONG_L), *body = tokens_body(SHORT_L);
	double before, after;
	int fd, tries = 0;

	LIVE_DAEMON(d, "--threads", "2");
	fd = send_long(d.port, long_body);
	live_wait_metric(d.port, "attnd_compute_split_total", 1, WAIT_MS);
	close(fd);
	live_wait_metric(d.port, CANCELLED("client_closed", "running"), 1, WAIT_MS);
	live_wait_metric(d.port, "attnd_compute_running", 0, WAIT_MS);
	/* as check_split: a worker that has just answered may not count itself
	 * idle yet when the next request arrives */
	do {
		before = metric_of(d.port, "attnd_compute_split_total");
		post_json(d.port, body, &r);
		ck_assert_int_eq(r.status, 200);
		after = metric_of(d.port, "attnd_compute_split_total");
	} while (after == before && ++tries < SPLIT_TRIES);
	ck_assert_msg(after == before + 1, "the lent worker is not lent again in %d tries",
		      SPLIT_TRIES);
	live_stop(&d);
	free(long_body);
	free(body);
	live_resp_release(&r);
}
END_TEST

enum { ROOM_TRIES = 10, ROOM_ANSWER_MS = 80 };

/* The request on fd answered within ROOM_ANSWER_MS (a full queue's 503)? */
static int answered_soon(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, ROOM_ANSWER_MS) > 0;
}

START_TEST(test_client_gone_from_queue_makes_room)
{
	struct live_resp r = {0};
	char *long_body = tokens_body(LONG_L), *short_body = tokens_body(512);
	int fd_long, fd_gone, fd = -1, queued = 0;

	LIVE_DAEMON(d, "--threads", "1", "--queue", "1", "--compute-deadline", "0");
	fd_long = send_long(d.port, long_body);
	live_wait_metric(d.port, "attnd_compute_running", 1, WAIT_MS);
	fd_gone = send_long(d.port, short_body);
	live_wait_metric(d.port, "attnd_compute_queue_depth", 1, WAIT_MS);
	close(fd_gone);
	/* within a second (the long request runs for seconds): the watcher
	 * sees the client gone within its tick and takes its request out of
	 * the queue, and the fresh request takes the slot of the one nobody
	 * waits for */
	for (int i = 0; i < ROOM_TRIES && !queued; i++) {
		usleep(20 * 1000);
		fd = send_long(d.port, short_body);
		queued = !answered_soon(fd);
		if (!queued) {
			live_read_response(fd, &r);
			live_assert_error(&r, 503, "overloaded");
			close(fd);
		}
	}
	ck_assert_msg(queued, "a queue slot held by a client gone refused live requests 503");
	live_wait_metric(d.port, CANCELLED("client_closed", "queued"), 1, WAIT_MS);
	live_wait_metric(d.port, "attnd_http_requests_total{route=\"/v1/attention\",code=\"499\"}",
			 1, WAIT_MS);
	close(fd);
	close(fd_long);
	live_wait_metric(d.port, "attnd_compute_running", 0, WAIT_MS);
	live_wait_metric(d.port, "attnd_compute_queue_depth", 0, WAIT_MS);
	short_requests_answer(d.port);
	live_stop(&d);
	free(long_body);
	free(short_body);
	live_resp_release(&r);
}
END_TEST

/* {"tokenizer":"bert","text":"abcdefghij..."}: one word of n letters, which
 * the tokenizer takes seconds over (about 1.6 s for 4 MB on the project's
 * machine) and answers [UNK]; the caller frees it. */
static char *long_word_body(size_t n)
{
	static const char head[] = "{\"tokenizer\":\"bert\",\"text\":\"", tail[] = "\"}";
	char *body = malloc(sizeof head + n + sizeof tail);
	char *p = body;

	ck_assert_ptr_nonnull(body);
	memcpy(p, head, sizeof head - 1);
	p += sizeof head - 1;
	for (size_t i = 0; i < n; i++)
		*p++ = (char)('a' + i % 10);
	memcpy(p, tail, sizeof tail);
	return body;
}

/* Sends POST /v1/tokenize with body on a new connection and returns its
 * socket once the call is computing (its worker taken). */
static int start_tokenize(unsigned port, const char *body)
{
	static char head[256];
	int fd = live_connect(port);

	snprintf(head, sizeof head,
		 "POST /v1/tokenize HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\n\r\n",
		 strlen(body));
	live_send_str(fd, head);
	live_send_str(fd, body);
	live_wait_metric(port, "attnd_compute_running", 1, WAIT_MS);
	return fd;
}

START_TEST(test_client_gone_after_deadline_is_499)
{
	struct live_resp r = {0};
	char *body = long_word_body(TOK_BYTES);
	int fd;

	LIVE_DAEMON(d, "--threads", "1", "--compute-deadline", "1", "--max-text-bytes", "16000000");
	fd = start_tokenize(d.port, body);
	/* the deadline (1 s from the whole body, before the worker took it)
	 * has fired; the call, which does not read the flag, runs on */
	usleep(1300 * 1000);
	ck_assert_msg(metric_of(d.port, "attnd_compute_running") == 1,
		      "the tokenizer call ended within 1.3 s: make TOK_BYTES larger");
	close(fd);
	live_wait_metric(d.port, "attnd_compute_running", 0, TOK_END_MS);
	live_wait_metric(d.port, "attnd_http_requests_in_flight", 1, WAIT_MS); /* this poll */
	live_get(d.port, "/metrics", &r);
	ck_assert_double_eq(
	    live_metric(r.body, "attnd_http_requests_total{route=\"/v1/tokenize\",code=\"499\"}"), 1);
	ck_assert_double_le(
	    live_metric(r.body, "attnd_http_requests_total{route=\"/v1/tokenize\",code=\"0\"}"), 0);
	ck_assert_double_le(
	    live_metric(r.body, "attnd_model_requests_total{model=\"none\",outcome=\"server_error\"}"),
	    0);
	live_stop(&d);
	free(body);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_queued_past_deadline_answers_at_once)
{
	struct live_resp r = {0};
	char *body = long_word_body(TOK_BYTES), *queued_body = tokens_body(SHORT_L);
	int fd, fd_queued;

	LIVE_DAEMON(d, "--threads", "1", "--compute-deadline", "1", "--max-text-bytes", "16000000");
	fd = start_tokenize(d.port, body);
	fd_queued = send_long(d.port, queued_body);
	live_wait_metric(d.port, "attnd_compute_queue_depth", 1, WAIT_MS);
	/* its deadline passes a second from now, seconds before the call ends */
	live_read_response(fd_queued, &r);
	live_assert_error(&r, 503, "deadline_exceeded");
	ck_assert_msg(metric_of(d.port, "attnd_compute_running") == 1,
		      "the queued request's 503 came when the tokenizer call ended, not at "
		      "its deadline (or the call took under a second: make TOK_BYTES larger)");
	ck_assert_double_eq(metric_of(d.port, "attnd_compute_queue_depth"), 0);
	ck_assert_double_eq(metric_of(d.port, CANCELLED("deadline", "queued")), 1);
	close(fd_queued);
	close(fd);
	live_wait_metric(d.port, "attnd_compute_running", 0, TOK_END_MS);
	live_stop(&d);
	free(body);
	free(queued_body);
	live_resp_release(&r);
}
END_TEST

static Suite *deadline_suite(void)
{
	Suite *s = suite_create("deadline");
	TCase *tc = tcase_create("cancel");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_compute_deadline_answers_503);
	tcase_add_test(tc, test_compute_deadline_zero_is_none);
	tcase_add_test(tc, test_client_gone_frees_worker);
	tcase_add_test(tc, test_client_gone_returns_lent_workers);
	tcase_add_test(tc, test_client_gone_from_queue_makes_room);
	tcase_add_test(tc, test_queued_past_deadline_answers_at_once);
	tcase_add_test(tc, test_client_gone_after_deadline_is_499);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .daemon = true,
	};

	return suite_main(argc, argv, deadline_suite, &opts);
}
