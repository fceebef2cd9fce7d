/*
 * check_metrics.c: server/metrics.c's per-thread shards, without a daemon.
 * Threads past METRICS_SHARDS record at once, each its share of requests;
 * the exposition shows every count once: the counters, the histograms'
 * buckets and counts, the byte and FLOP totals summed over the shards. A
 * gauge raised on some threads and lowered on another reads the difference
 * (in flight: 0 once every +1 has its -1; pending bytes: what is still
 * held), though no single shard holds it; a sum below zero (a torn read)
 * reads 0.
 */
#include <check.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "api/error.h"
#include "server/metrics.h"

#include "tests/lib/suite_main.h"

enum { THREADS = 13, PER_THREAD = 2000 };

static void *record(void *arg)
{
	struct metrics *m = arg;
	size_t tiny = metrics_model(m, "tiny");

	for (int i = 0; i < PER_THREAD; i++) {
		metrics_in_flight(m, +1);
		metrics_pending_bytes(m, 100);
		metrics_request(m, MR_ATTENTION, 200, 0.00007, 10, 20, 5);
		metrics_model_request(m, tiny, OUTCOME_OK, 0, 0.00003);
	}
	return NULL;
}

/* The exposition of m, as a string the caller releases. */
static struct buf rendered(const struct metrics *m)
{
	struct buf out;

	buf_init(&out, 8 << 20);
	ck_assert_int_eq(metrics_render(m, &out), 0);
	buf_putc(&out, '\0');
	return out;
}

static void assert_line(const struct buf *out, const char *line)
{
	ck_assert_msg(strstr(out->data, line) != NULL, "no line \"%s\" in the exposition", line);
}

START_TEST(test_shards_summed)
{
	struct metrics *m = metrics_new();
	pthread_t t[THREADS];
	struct buf out;
	char sum[128];

	ck_assert_ptr_nonnull(m);
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, record, m), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < THREADS * PER_THREAD; i++) /* on this thread's shard alone */
		metrics_in_flight(m, -1);
	metrics_pending_bytes(m, -(long long)THREADS * PER_THREAD * 100 + 300);
	out = rendered(m);
	assert_line(&out, "attnd_http_requests_total{route=\"/v1/attention\",code=\"200\"} 26000\n");
	assert_line(&out, "attnd_http_request_duration_seconds_bucket{route=\"/v1/attention\","
			  "le=\"5e-05\"} 0\n");
	assert_line(&out, "attnd_http_request_duration_seconds_bucket{route=\"/v1/attention\","
			  "le=\"0.0001\"} 26000\n");
	assert_line(&out, "attnd_http_request_duration_seconds_count{route=\"/v1/attention\"} "
			  "26000\n");
	snprintf(sum, sizeof sum,
		 "attnd_http_request_duration_seconds_sum{route=\"/v1/attention\"} %.9f\n",
		 (double)(THREADS * PER_THREAD * (unsigned long long)(0.00007 * 1e9)) / 1e9);
	assert_line(&out, sum);
	assert_line(&out, "attnd_model_requests_total{model=\"tiny\",outcome=\"ok\"} 26000\n");
	assert_line(&out, "attnd_compute_duration_seconds_bucket{model=\"tiny\",le=\"5e-05\"} "
			  "26000\n");
	assert_line(&out, "attnd_http_request_bytes_total 260000\n");
	assert_line(&out, "attnd_http_response_bytes_total 520000\n");
	assert_line(&out, "attnd_engine_flops_total 130000\n");
	assert_line(&out, "attnd_http_requests_in_flight 0\n");
	assert_line(&out, "attnd_answers_pending_bytes 300\n");
	buf_release(&out);
	metrics_free(m);
}
END_TEST

/* Every status attnd sends is counted under its own code, not "other":
 * each error kind's (api/error.h) and the transport's own. */
START_TEST(test_every_status_by_name)
{
#define API_STATUS(name, status, code) status,
	static const int api[] = {API_ERROR_KINDS(API_STATUS)};
#undef API_STATUS
	/* ok, preflight, not modified, --api-key, no route, no method, request
	 * deadline, the viewer's If-Match, body limits, media type, a client
	 * gone, internal, draining and full */
	static const int transport[] = {200, 204, 304, 401, 404, 405, 408, 412,
					413, 415, 499, 500, 503};
	struct metrics *m = metrics_new();
	struct buf out;
	char line[128];

	ck_assert_ptr_nonnull(m);
	for (size_t i = 0; i < sizeof api / sizeof api[0]; i++)
		metrics_request(m, MR_ATTENTION, api[i], 0.001, 0, 0, 0);
	for (size_t i = 0; i < sizeof transport / sizeof transport[0]; i++)
		metrics_request(m, MR_ATTENTION, transport[i], 0.001, 0, 0, 0);
	out = rendered(m);
	ck_assert_msg(strstr(out.data, "code=\"other\"") == NULL, "a status counted as other");
	for (size_t i = 0; i < sizeof api / sizeof api[0]; i++) {
		snprintf(line, sizeof line, "{route=\"/v1/attention\",code=\"%d\"}", api[i]);
		assert_line(&out, line);
	}
	for (size_t i = 0; i < sizeof transport / sizeof transport[0]; i++) {
		snprintf(line, sizeof line, "{route=\"/v1/attention\",code=\"%d\"}",
			 transport[i]);
		assert_line(&out, line);
	}
	buf_release(&out);
	metrics_free(m);
}
END_TEST

static void *queue_three(void *arg)
{
	metrics_queued(arg, +3);
	return NULL;
}

/* A shard may hold a gauge below zero (its -1s, whose +1s another thread's
 * shard holds): the exposition shows the sum. A sum below zero is a torn
 * read (sum_shards saw a -1 and not its +1: attnd_compute_queue_depth read
 * -1 under load), and shows 0: no queue holds -1 requests. */
START_TEST(test_gauge_below_zero_on_a_shard)
{
	struct metrics *m = metrics_new();
	struct buf out;
	pthread_t t;

	ck_assert_ptr_nonnull(m);
	metrics_queued(m, -2); /* this thread's shard holds -2 */
	out = rendered(m);
	assert_line(&out, "attnd_compute_queue_depth 0\n");
	buf_release(&out);
	ck_assert_int_eq(pthread_create(&t, NULL, queue_three, m), 0);
	pthread_join(t, NULL);
	out = rendered(m);
	assert_line(&out, "attnd_compute_queue_depth 1\n");
	buf_release(&out);
	metrics_queued(m, -1);
	metrics_in_flight(m, -1);
	metrics_pending_bytes(m, -10);
	metrics_receiving_bytes(m, -10);
	metrics_computing(m, -1);
	metrics_linger(m, -1);
	out = rendered(m);
	assert_line(&out, "attnd_compute_queue_depth 0\n");
	assert_line(&out, "attnd_http_requests_in_flight 0\n");
	assert_line(&out, "attnd_answers_pending_bytes 0\n");
	assert_line(&out, "attnd_bodies_receiving_bytes 0\n");
	assert_line(&out, "attnd_compute_running 0\n");
	assert_line(&out, "attnd_connections_lingering 0\n");
	buf_release(&out);
	metrics_free(m);
}
END_TEST

/* A loaded model named "other" (a valid name) and the overflow past
 * METRICS_MODELS_MAX models, also labelled "other": one series each, the
 * two counted together, never the same series twice in the exposition (as
 * 62 models, "other" and /v1/tokenize's "none", then /v1/sdpa, made it). */
START_TEST(test_model_named_other_not_duplicated)
{
	struct metrics *m = metrics_new();
	struct buf out;
	char name[16];
	size_t other, past;
	const char *p;
	int lines = 0;

	ck_assert_ptr_nonnull(m);
	other = metrics_model(m, "other");
	for (int i = 1; i < METRICS_MODELS_MAX; i++) {
		snprintf(name, sizeof name, "m%d", i);
		ck_assert_uint_lt(metrics_model(m, name), METRICS_MODELS_MAX);
	}
	past = metrics_model(m, "sdpa"); /* no slot left: counted in other's */
	ck_assert_uint_eq(past, other);
	metrics_model_request(m, other, OUTCOME_OK, 0.001, 0.002);
	metrics_model_request(m, past, OUTCOME_OK, 0.001, 0.002);
	out = rendered(m);
	for (p = strstr(out.data, "attnd_model_requests_total{model=\"other\",outcome=\"ok\"}");
	     p != NULL; p = strstr(p + 1, "attnd_model_requests_total{model=\"other\",outcome=\"ok\"}"))
		lines++;
	ck_assert_int_eq(lines, 1);
	assert_line(&out, "attnd_model_requests_total{model=\"other\",outcome=\"ok\"} 2\n");
	assert_line(&out, "attnd_compute_duration_seconds_count{model=\"other\"} 2\n");
	assert_line(&out, "attnd_compute_queue_wait_seconds_bucket{model=\"other\",le=\"+Inf\"} 2\n");
	buf_release(&out);
	metrics_free(m);
}
END_TEST

static Suite *metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("shards");

	tcase_add_test(tc, test_shards_summed);
	tcase_add_test(tc, test_every_status_by_name);
	tcase_add_test(tc, test_gauge_below_zero_on_a_shard);
	tcase_add_test(tc, test_model_named_other_not_duplicated);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, metrics_suite, NULL);
}
