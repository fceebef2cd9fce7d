/*
 * check_split.c: a large request borrows idle workers for its engine call
 * (server/main.c, the thread model), end to end on the real daemon
 * (tests/lib/live_daemon.h):
 *
 *   - each large request below, answered by --threads 2 with the other worker
 *     lent (attnd_compute_split_total counts it), is byte for byte the
 *     answer of --threads 1 (usage.milliseconds aside): /v1/attention on
 *     token ids and on embeddings with weights, /v1/sdpa, v2 infer;
 *   - --split-threads 1 lends nothing, and neither does a call of little
 *     work in a large body: what counts is the planned work;
 *   - large and small requests sent at once to --threads 3, where calls
 *     borrow all, some or none of the other workers, all answer 200, each
 *     with its --threads 1 answer.
 */
#include <check.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

/* ---- request bodies ------------------------------------------------------ */

/* A growing text, aborting the test when memory runs out. */
struct text {
	char *s;
	size_t len, cap;
};

static void text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
		ck_assert_int_ge(n, 0);
		if (t->len + (size_t)n < t->cap)
			break;
		t->cap = 2 * (t->cap + (size_t)n) + 256;
		t->s = realloc(t->s, t->cap);
		ck_assert_ptr_nonnull(t->s);
		t->s[t->len] = '\0';
	}
	t->len += (size_t)n;
}

/* A linear congruential sequence: the same numbers for the same seed. */
static unsigned next(unsigned *seed)
{
	*seed = *seed * 1664525u + 1013904223u;
	return *seed >> 8;
}

/* n comma-separated token ids below vocab. */
static void add_tokens(struct text *t, size_t n, unsigned seed, unsigned vocab)
{
	for (size_t i = 0; i < n; i++)
		text_add(t, "%s%u", i > 0 ? "," : "", next(&seed) % vocab);
}

/* n comma-separated numbers in [-1, 1], three decimals. */
static void add_floats(struct text *t, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		text_add(t, "%s%.3f", i > 0 ? "," : "", (double)(next(&seed) % 2001) / 1000.0 - 1.0);
}

/* /v1/attention on the built-in base (E 512): L token ids, no weights. */
static void body_base_tokens(struct text *t, size_t L, unsigned seed)
{
	text_add(t, "{\"model\":\"base\",\"weights\":\"none\",\"encoding\":\"base64\",\"tokens\":[");
	add_tokens(t, L, seed, 32000);
	text_add(t, "]}");
}

/* /v1/attention on tiny (E 8): embeddings [L, 8] and every head's weights. */
static void body_tiny_weights(struct text *t, size_t L, unsigned seed)
{
	text_add(t, "{\"model\":\"tiny\",\"weights\":\"per_head\",\"embeddings\":{\"shape\":[%zu,8],"
		    "\"data\":[",
		 L);
	add_floats(t, L * 8, seed);
	text_add(t, "]}}");
}

/* /v1/sdpa: q, k, v [1, 4, L, 32] and every head's weights. */
static void body_sdpa(struct text *t, size_t L, unsigned seed)
{
	const char *names[] = {"q", "k", "v"};

	text_add(t, "{\"weights\":\"per_head\"");
	for (int i = 0; i < 3; i++) {
		text_add(t, ",\"%s\":{\"shape\":[1,4,%zu,32],\"data\":[", names[i], L);
		add_floats(t, 4 * L * 32, seed + (unsigned)i);
		text_add(t, "]}");
	}
	text_add(t, "}");
}

/* v2 infer on base: INT64 token ids [1, L], the output only. */
static void body_v2_tokens(struct text *t, size_t L, unsigned seed)
{
	text_add(t, "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[1,%zu],"
		    "\"data\":[",
		 L);
	add_tokens(t, L, seed, 32000);
	text_add(t, "]}],\"outputs\":[{\"name\":\"output\"}]}");
}

/* One large request: where it goes, and its body. */
struct large {
	const char *name;
	const char *path;
	void (*make)(struct text *t, size_t L, unsigned seed);
	size_t L;
};

static const struct large cases[] = {
    {"base tokens, L = 2048", "/v1/attention", body_base_tokens, 2048},
    {"tiny embeddings with weights", "/v1/attention", body_tiny_weights, 300},
    {"sdpa with weights", "/v1/sdpa", body_sdpa, 192},
    {"v2 infer tokens", "/v2/models/base/infer", body_v2_tokens, 1024},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* ---- answers --------------------------------------------------------------- */

/* The answer's bytes that do not depend on timing: all of it up to v1's
 * "usage" member (its milliseconds vary), which comes last. */
static size_t stable_len(const struct live_resp *r)
{
	const char *usage = strstr(r->body, ",\"usage\":");

	return usage != NULL ? (size_t)(usage - r->body) : r->body_len;
}

static void assert_same_answer(const struct live_resp *got, const struct live_resp *want,
			       const char *name)
{
	size_t n = stable_len(want);

	ck_assert_msg(got->status == 200, "%s: status %d: %.300s", name, got->status, got->body);
	ck_assert_msg(want->status == 200, "%s: status %d with one thread: %.300s", name,
		      want->status, want->body);
	ck_assert_msg(stable_len(got) == n && memcmp(got->body, want->body, n) == 0,
		      "%s: the answers differ (%zu and %zu bytes)", name, stable_len(got), n);
}

static void post_json(unsigned port, const char *path, const struct text *body,
		      struct live_resp *r)
{
	live_post(port, path, "application/json", "", body->s, body->len, r);
}

static double metric(unsigned port, const char *series)
{
	struct live_resp r = {0};
	double v;

	live_get(port, "/metrics", &r);
	ck_assert_int_eq(r.status, 200);
	v = live_metric(r.body, series);
	live_resp_release(&r);
	return v;
}

/* ---- the tests ------------------------------------------------------------- */

enum { SPLIT_TRIES = 5 };

/* Posts a large request to the idle --threads 2 daemon until its call is
 * split (the first try, but for a worker that has answered and not yet
 * counted itself idle again when the next request arrives), then to the
 * --threads 1 daemon, and compares. */
START_TEST(test_split_answers_match_one_thread)
{
	const struct large *c = &cases[_i];
	struct text body = {0};
	struct live_resp split = {0}, one = {0};
	double before = 0, after = 0;
	int tries = 0;

	LIVE_DAEMON(two, "--threads", "2");
	LIVE_DAEMON(single, "--threads", "1");
	c->make(&body, c->L, 7u + (unsigned)_i);
	do {
		before = metric(two.port, "attnd_compute_split_total");
		post_json(two.port, c->path, &body, &split);
		after = metric(two.port, "attnd_compute_split_total");
	} while (after == before && ++tries < SPLIT_TRIES);
	ck_assert_msg(after == before + 1, "%s: not split in %d tries", c->name, SPLIT_TRIES);
	ck_assert(metric(two.port, "attnd_compute_lent_workers_total") == after);
	post_json(single.port, c->path, &body, &one);
	assert_same_answer(&split, &one, c->name);
	ck_assert(metric(single.port, "attnd_compute_split_total") == 0);
	live_stop(&two);
	live_stop(&single);
	live_resp_release(&split);
	live_resp_release(&one);
	free(body.s);
}
END_TEST

/* --split-threads 1: large requests keep to their own worker. */
START_TEST(test_split_off)
{
	struct text body = {0};
	struct live_resp r = {0};

	LIVE_DAEMON(d, "--threads", "2", "--split-threads", "1");
	body_base_tokens(&body, 1024, 3);
	post_json(d.port, "/v1/attention", &body, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert(metric(d.port, "attnd_compute_split_total") == 0);
	live_stop(&d);
	live_resp_release(&r);
	free(body.s);
}
END_TEST

/* What a call is judged by is its planned work, not its body: 64 KiB of a
 * four-word request (spaces after it) borrows nothing, on any route. */
START_TEST(test_little_work_is_not_split)
{
	static const char *const heads[][2] = {
	    {"/v1/attention", "{\"model\":\"tiny\",\"text\":\"I ate a delicious apple\""},
	    {"/v2/models/tiny/infer",
	     "{\"inputs\":[{\"name\":\"tokens\",\"datatype\":\"INT64\",\"shape\":[4],"
	     "\"data\":[1,2,3,4]}]"},
	};
	struct live_resp r = {0};

	LIVE_DAEMON(d, "--threads", "2");
	for (size_t k = 0; k < sizeof heads / sizeof heads[0]; k++) {
		struct text body = {0};

		text_add(&body, "%s", heads[k][1]);
		while (body.len < 65536)
			text_add(&body, "%s", "                                ");
		text_add(&body, "%s", "}");
		post_json(d.port, heads[k][0], &body, &r);
		ck_assert_msg(r.status == 200, "%s: %d %.200s", heads[k][0], r.status, r.body);
		live_resp_release(&r);
		free(body.s);
	}
	ck_assert(metric(d.port, "attnd_compute_split_total") == 0);
	live_stop(&d);
}
END_TEST

enum { N_LARGE = 8, N_SMALL = 4 };

/* Sends every request before reading any answer: the first large ones find
 * idle workers and borrow them, later ones find some busy, or a queue. */
START_TEST(test_concurrent_requests_complete)
{
	static const char small[] = "{\"model\":\"tiny\",\"text\":\"I ate a delicious apple\"}";
	struct text bodies[N_LARGE] = {{0}};
	struct live_resp want[N_LARGE] = {{0}}, r = {0};
	int fds[N_LARGE + N_SMALL];
	char head[256];

	LIVE_DAEMON(three, "--threads", "3", "--queue", "32");
	LIVE_DAEMON(single, "--threads", "1");
	for (int i = 0; i < N_LARGE; i++) {
		if (i % 4 == 3)
			body_sdpa(&bodies[i], 128, 100u + (unsigned)i);
		else
			body_base_tokens(&bodies[i], 384 + 64 * (size_t)i, 100u + (unsigned)i);
		post_json(single.port, i % 4 == 3 ? "/v1/sdpa" : "/v1/attention", &bodies[i],
			  &want[i]);
	}
	for (int i = 0; i < N_LARGE + N_SMALL; i++) {
		const char *path = i < N_LARGE && i % 4 == 3 ? "/v1/sdpa" : "/v1/attention";
		const char *b = i < N_LARGE ? bodies[i].s : small;
		size_t len = i < N_LARGE ? bodies[i].len : strlen(small);

		snprintf(head, sizeof head,
			 "POST %s HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			 path, len);
		fds[i] = live_connect(three.port);
		live_send_str(fds[i], head);
		live_send_all(fds[i], b, len);
	}
	for (int i = 0; i < N_LARGE + N_SMALL; i++) {
		live_read_response(fds[i], &r);
		close(fds[i]);
		if (i < N_LARGE)
			assert_same_answer(&r, &want[i], "a large request among others");
		else
			ck_assert_msg(r.status == 200 && strstr(r.body, "\"apple\"") != NULL,
				      "small request: %d %.200s", r.status, r.body);
	}
	ck_assert(metric(three.port, "attnd_compute_queue_depth") == 0);
	ck_assert(metric(three.port, "attnd_rejections_total{reason=\"overloaded\"}") == 0);
	live_stop(&three);
	live_stop(&single);
	for (int i = 0; i < N_LARGE; i++) {
		free(bodies[i].s);
		live_resp_release(&want[i]);
	}
	live_resp_release(&r);
}
END_TEST

static Suite *split_suite(void)
{
	Suite *s = suite_create("split");
	TCase *tc = tcase_create("split");

	tcase_set_timeout(tc, 240);
	tcase_add_loop_test(tc, test_split_answers_match_one_thread, 0, N_CASES);
	tcase_add_test(tc, test_split_off);
	tcase_add_test(tc, test_little_work_is_not_split);
	tcase_add_test(tc, test_concurrent_requests_complete);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .daemon = true,
	};

	return suite_main(argc, argv, split_suite, &opts);
}
