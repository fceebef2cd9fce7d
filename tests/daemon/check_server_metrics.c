/*
 * check_server_metrics.c: what operators watch, on the real daemon
 * (tests/lib/live_daemon.h): /metrics after real requests passes
 * `promtool check metrics` (Debian's prometheus package, which `make deps`
 * installs: its absence fails the test) and holds the series a dashboard
 * needs with sane values; --per-ip-limit answers the connection over it 503
 * with Retry-After, Connection: close and the Vary of the path's other
 * answers (Origin, Accept-Encoding) while other addresses (127.0.0.2,
 * 127.0.0.3, ... bound as the client's source) are served, counts it, and
 * logs it once a second at warn level rather than once per connection;
 * headers past --connection-memory are counted as that limit's refusals.
 */
#define _GNU_SOURCE /* memmem */
#include <check.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

enum { WAIT_MS = 30000 };

static const char *const tiny = "{\"model\":\"tiny\",\"tokens\":[\"a\",\"b\"]}";
static const char *const sdpa =
    "{\"q\": [[[[1,0]]]], \"k\": [[[[1,0],[0,1]]]], \"v\": [[[[1,2],[3,4]]]]}";
static const char *const unknown = "{\"model\":\"no-such-model\",\"tokens\":[\"a\"]}";

/* Runs `promtool check metrics` on text; its exit status, its output in
 * out[cap]. */
static int promtool(const char *text, char *out, size_t cap)
{
	char path[] = "/tmp/attnd-metrics-XXXXXX";
	char cmd[128];
	int fd = mkstemp(path);
	size_t len = strlen(text), got;
	FILE *p;
	int status;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	got = fread(out, 1, cap - 1, p);
	out[got] = '\0';
	status = pclose(p);
	unlink(path);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) != 127,
		      "promtool is not installed (Debian's prometheus: make deps)");
	return WEXITSTATUS(status);
}

static void post_json(unsigned port, const char *path, const char *body, int want)
{
	struct live_resp r = {0};

	live_post(port, path, "application/json", "", body, strlen(body), &r);
	ck_assert_int_eq(r.status, want);
	live_resp_release(&r);
}

static double metric(const char *text, const char *series)
{
	double v = live_metric(text, series);

	ck_assert_msg(v >= 0, "no series %s in /metrics", series);
	return v;
}

/* A histogram's _sum lies where its buckets say its observations are: at
 * least each one's lower bound, at most its upper bound (below the +Inf
 * bucket). So _sum is in seconds, as the buckets are. */
static void assert_sum_within_buckets(const char *text, const char *name, const char *labels)
{
	static const char *const le[] = {"5e-05", "0.0001", "0.00025", "0.0005", "0.001",
					 "0.0025", "0.005", "0.01", "0.025", "0.05",
					 "0.1", "0.25", "0.5", "1", "2.5",
					 "5", "10", "30", "60", "+Inf"};
	char series[256];
	double below = 0, lo = 0, hi = 0, prev_le = 0, sum;

	for (size_t i = 0; i < sizeof le / sizeof le[0]; i++) {
		double upto, in_bucket, le_i = i + 1 < sizeof le / sizeof le[0] ? atof(le[i]) : 0;

		snprintf(series, sizeof series, "%s_bucket{%s,le=\"%s\"}", name, labels, le[i]);
		upto = metric(text, series);
		in_bucket = upto - below;
		ck_assert_msg(in_bucket >= 0, "%s: buckets not cumulative", series);
		lo += in_bucket * prev_le;
		hi = le_i > 0 ? hi + in_bucket * le_i : in_bucket > 0 ? 1e300 : hi;
		below = upto;
		prev_le = le_i;
	}
	snprintf(series, sizeof series, "%s_count{%s}", name, labels);
	ck_assert_double_eq(metric(text, series), below);
	snprintf(series, sizeof series, "%s_sum{%s}", name, labels);
	sum = metric(text, series);
	ck_assert_msg(sum >= lo * (1 - 1e-9) && sum <= hi * (1 + 1e-9),
		      "%s = %g, its buckets say within [%g, %g]", series, sum, lo, hi);
}

START_TEST(test_promtool_and_series)
{
	struct live_resp r = {0};
	char lint[4096];
	double start;

	LIVE_DAEMON(d, "--threads", "2");
	/* before any request: each route's 200, 500 and 503 at 0, so that
	 * rate() sees the first ones; other codes only once they happen */
	live_get(d.port, "/metrics", &r);
	ck_assert_ptr_nonnull(
	    strstr(r.body, "\nattnd_http_requests_total{route=\"/v1/attention\",code=\"503\"} 0\n"));
	ck_assert_ptr_nonnull(
	    strstr(r.body, "\nattnd_http_requests_total{route=\"/v2/models/{name}/infer\",code=\"200\"} 0\n"));
	ck_assert_ptr_null(strstr(r.body, "code=\"422\""));
	for (int i = 0; i < 3; i++)
		post_json(d.port, "/v1/attention", tiny, 200);
	post_json(d.port, "/v1/sdpa", sdpa, 200);
	post_json(d.port, "/v1/attention", unknown, 404);
	for (int i = 0; i < 5; i++) {
		live_get(d.port, "/healthz", &r);
		ck_assert_int_eq(r.status, 200);
	}
	/* a field refused on a model that exists: counted under that model */
	post_json(d.port, "/v1/attention", "{\"model\":\"tiny\",\"tokens\":[\"a\"],\"causal\":1}",
		  422);
	/* counted on completion, which may come after the answer is read */
	live_wait_metric(d.port, "attnd_model_requests_total{model=\"none\",outcome=\"client_error\"}",
			 1, WAIT_MS);
	live_wait_metric(d.port, "attnd_model_requests_total{model=\"tiny\",outcome=\"client_error\"}",
			 1, WAIT_MS);
	live_wait_metric(d.port, "attnd_http_requests_total{route=\"/healthz\",code=\"200\"}", 5,
			 WAIT_MS);
	live_get(d.port, "/metrics", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_msg(promtool(r.body, lint, sizeof lint) == 0 && lint[0] == '\0',
		      "promtool check metrics: %s", lint);

	/* latency buckets start at 50 us (where a /healthz lands is the
	 * machine's: under TSan, on a busy CI runner, all five passed 2.5 ms) */
	ck_assert_double_le(
	    metric(r.body,
		   "attnd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"5e-05\"}"),
	    5);
	ck_assert_double_eq(
	    metric(r.body,
		   "attnd_http_request_duration_seconds_bucket{route=\"/healthz\",le=\"60\"}"),
	    5);
	/* per model: the model the request used, never the client's unknown name */
	ck_assert_double_eq(
	    metric(r.body, "attnd_model_requests_total{model=\"tiny\",outcome=\"ok\"}"), 3);
	/* the 422 waited as the others (it was computed: decoded by the API) */
	ck_assert_double_eq(
	    metric(r.body, "attnd_compute_queue_wait_seconds_count{model=\"tiny\"}"), 4);
	ck_assert_double_eq(metric(r.body, "attnd_compute_duration_seconds_count{model=\"tiny\"}"),
			    3);
	ck_assert_double_gt(metric(r.body, "attnd_compute_duration_seconds_sum{model=\"tiny\"}"),
			    0);
	assert_sum_within_buckets(r.body, "attnd_http_request_duration_seconds",
				  "route=\"/healthz\"");
	assert_sum_within_buckets(r.body, "attnd_compute_duration_seconds", "model=\"tiny\"");
	ck_assert_double_eq(
	    metric(r.body, "attnd_model_requests_total{model=\"sdpa\",outcome=\"ok\"}"), 1);
	ck_assert_double_eq(
	    metric(r.body, "attnd_compute_queue_wait_seconds_count{model=\"sdpa\"}"), 1);
	ck_assert_ptr_null(strstr(r.body, "no-such-model"));
	/* the process, the build, the limits */
	ck_assert_double_gt(metric(r.body, "process_open_fds"), 0);
	ck_assert_double_ge(metric(r.body, "process_max_fds"), metric(r.body, "process_open_fds"));
	ck_assert_double_gt(metric(r.body, "process_resident_memory_bytes"), 1 << 20);
	ck_assert_double_gt(metric(r.body, "process_virtual_memory_bytes"),
			    metric(r.body, "process_resident_memory_bytes"));
	ck_assert_double_ge(metric(r.body, "process_cpu_seconds_total"), 0);
	start = metric(r.body, "process_start_time_seconds");
	ck_assert_double_le(start, (double)time(NULL) + 1);
	ck_assert_double_gt(start, (double)time(NULL) - 3600);
	ck_assert_ptr_nonnull(strstr(r.body, "attnd_build_info{version=\"0.1.0\",commit=\""));
	ck_assert_ptr_nonnull(strstr(r.body, "\",blas=\""));
	ck_assert_double_eq(metric(r.body, "attnd_connections_refused_total{limit=\"per_ip\"}"), 0);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* A connection to 127.0.0.1:port from the loopback address src. */
static int connect_from(const char *src, unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	struct timeval tv = {30, 0};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(inet_pton(AF_INET, src, &a.sin_addr), 1);
	ck_assert_msg(bind(fd, (struct sockaddr *)&a, sizeof a) == 0, "bind %s", src);
	a.sin_port = htons((unsigned short)port);
	ck_assert_int_eq(inet_pton(AF_INET, "127.0.0.1", &a.sin_addr), 1);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

/* GET /healthz on the open connection fd. */
static void healthz_on(int fd, struct live_resp *r)
{
	live_send_str(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
	live_read_response(fd, r);
}

static void assert_refused(const struct live_resp *r)
{
	live_assert_error(r, 503, "overloaded");
	ck_assert_str_eq(live_header(r, "Retry-After"), "1");
	ck_assert_ptr_nonnull(strstr(live_header(r, "Connection"), "close"));
	ck_assert_int_eq(r->closed, 1);
}

START_TEST(test_per_ip_limit_answers_503)
{
	struct live_resp r = {0};
	int a[2], over, b;

	LIVE_DAEMON(d, "--per-ip-limit", "2");
	/* two kept-alive connections from 127.0.0.2 are served */
	for (int i = 0; i < 2; i++) {
		a[i] = connect_from("127.0.0.2", d.port);
		healthz_on(a[i], &r);
		ck_assert_int_eq(r.status, 200);
	}
	/* the third from that address is answered 503 and closed */
	over = connect_from("127.0.0.2", d.port);
	healthz_on(over, &r);
	assert_refused(&r);
	close(over);
	/* another address, and the first two, are still served */
	b = connect_from("127.0.0.3", d.port);
	healthz_on(b, &r);
	ck_assert_int_eq(r.status, 200);
	for (int i = 0; i < 2; i++) {
		healthz_on(a[i], &r);
		ck_assert_int_eq(r.status, 200);
	}
	live_wait_metric(d.port, "attnd_connections_refused_total{limit=\"per_ip\"}", 1, WAIT_MS);
	live_wait_metric(d.port, "attnd_rejections_total{reason=\"per_ip_limit\"}", 1, WAIT_MS);
	/* a compute request over the limit gets the same answer, body unread */
	over = connect_from("127.0.0.2", d.port);
	live_send_str(over, LIVE_POST_ATTENTION "Content-Length: 36\r\n\r\n");
	live_send_str(over, tiny);
	live_read_response(over, &r);
	assert_refused(&r);
	close(over);
	close(a[0]);
	close(a[1]);
	close(b);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* Under a --cors-origins list the per-IP refusal carries the CORS headers
 * and varies as the path's other answers do: on Origin, and on a compute
 * path also on Accept-Encoding, as a served answer there does. */
START_TEST(test_per_ip_refusal_varies)
{
	static const char origin[] = "Origin: https://a.example\r\n";
	struct live_resp r = {0};
	int a, over;

	LIVE_DAEMON(d, "--per-ip-limit", "1", "--cors-origins", "https://a.example");
	a = connect_from("127.0.0.4", d.port);
	healthz_on(a, &r);
	ck_assert_int_eq(r.status, 200);
	over = connect_from("127.0.0.4", d.port);
	live_send_str(over, LIVE_POST_ATTENTION "Origin: https://a.example\r\n"
						"Content-Length: 35\r\n\r\n");
	live_send_str(over, tiny);
	live_read_response(over, &r);
	assert_refused(&r);
	ck_assert_str_eq(live_header(&r, "Access-Control-Allow-Origin"), "https://a.example");
	ck_assert_str_eq(live_header(&r, "Vary"), "Origin, Accept-Encoding");
	close(over);
	over = connect_from("127.0.0.4", d.port);
	live_send_str(over, "GET /healthz HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n\r\n");
	live_read_response(over, &r);
	assert_refused(&r);
	ck_assert_str_eq(live_header(&r, "Vary"), "Origin");
	close(over);
	/* what a served answer on that path says, from another address */
	live_post(d.port, "/v1/attention", "application/json", origin, tiny, strlen(tiny), &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(live_header(&r, "Vary"), "Origin, Accept-Encoding");
	close(a);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* The lines of text holding needle, and the sum of the counts they give
 * ("...: N in the last"). */
static int refusal_lines(const char *text, const char *needle, long *sum)
{
	int n = 0;

	*sum = 0;
	for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle)) {
		const char *count = strstr(p, "): ");

		n++;
		if (count != NULL)
			*sum += strtol(count + 3, NULL, 10);
	}
	return n;
}

/* The whole file at path, NUL-terminated, into text[cap]. */
static void read_file(const char *path, char *text, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(text, 1, cap - 1, f);
	text[n] = '\0';
	fclose(f);
}

START_TEST(test_per_ip_refusals_logged_once_a_second)
{
	enum { N = 8 };
	static char text[1 << 16];
	char log_path[] = "/tmp/attnd-log-XXXXXX";
	const char *needle = "warn connections refused by the per-IP limit (--per-ip-limit 1): ";
	struct live_resp r = {0};
	struct timespec tick = {0, 50 * 1000 * 1000};
	int held, fd, lines = 0;
	long sum = 0;

	fd = mkstemp(log_path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(setenv("ATTND_TEST_LOG", log_path, 1), 0);
	LIVE_DAEMON(d, "--per-ip-limit", "1");
	unsetenv("ATTND_TEST_LOG");
	held = connect_from("127.0.0.4", d.port);
	healthz_on(held, &r);
	ck_assert_int_eq(r.status, 200);
	for (int i = 0; i < N; i++) {
		fd = connect_from("127.0.0.4", d.port);
		healthz_on(fd, &r);
		assert_refused(&r);
		close(fd);
	}
	/* the count left over is written within a second or two (main.c's tick) */
	for (int i = 0; i < WAIT_MS / 50 && sum < N; i++) {
		read_file(log_path, text, sizeof text);
		lines = refusal_lines(text, needle, &sum);
		nanosleep(&tick, NULL);
	}
	ck_assert_msg(sum == N, "the log counts %ld refusals of %d:\n%s", sum, N, text);
	ck_assert_msg(lines < N, "%d lines for %d refusals: not rate-limited", lines, N);
	ck_assert_ptr_null(strstr(text, "Server reached connection limit"));
	ck_assert_ptr_null(strstr(text, " error "));
	close(held);
	live_stop(&d);
	unlink(log_path);
	live_resp_release(&r);
}
END_TEST

/* Headers past --connection-memory: libmicrohttpd's own 431, counted as a
 * refusal by the memory limit and logged at warn, not as an error. */
START_TEST(test_memory_limit_counted)
{
	static char req[8192];
	struct live_resp r = {0};
	size_t n;

	LIVE_DAEMON(d, "--connection-memory", "4096");
	n = (size_t)snprintf(req, sizeof req, "GET /healthz HTTP/1.1\r\nHost: t\r\nX-Big: ");
	memset(req + n, 'y', 6000);
	memcpy(req + n + 6000, "\r\n\r\n", 5);
	live_exchange(d.port, req, &r);
	ck_assert_int_eq(r.status, 431);
	live_wait_metric(d.port, "attnd_connections_refused_total{limit=\"memory\"}", 1, WAIT_MS);
	live_stop(&d);
	live_resp_release(&r);
}
END_TEST

/* A header record that does not fit the pool: libmicrohttpd logs "Not
 * enough memory in pool to allocate header record" and then its 431 line,
 * and the two were counted as two refusals. One request, one count: 1200
 * short header lines (libmicrohttpd's 431). */
START_TEST(test_header_record_refusal_counted_once)
{
	static char req[32768];
	const char *series = "attnd_connections_refused_total{limit=\"memory\"}";
	size_t n;

	LIVE_DAEMON(d, "--no-builtins");
	n = (size_t)snprintf(req, sizeof req, "GET /healthz HTTP/1.1\r\nHost: t\r\n");
	for (int k = 0; k < 1200; k++)
		n += (size_t)snprintf(req + n, sizeof req - n, "X-a%d: 1\r\n", k);
	snprintf(req + n, sizeof req - n, "\r\n");
	ck_assert_int_eq(live_raw_status(d.port, req), 431);
	live_wait_metric(d.port, series, 1, WAIT_MS);
	usleep(200000); /* a second count would land at once: give it time to */
	live_wait_metric(d.port, series, 1, WAIT_MS);
	live_stop(&d);
}
END_TEST

static Suite *server_metrics_suite(void)
{
	Suite *s = suite_create("server_metrics");
	TCase *metrics = tcase_create("metrics");
	TCase *limits = tcase_create("per-IP limit");

	tcase_set_timeout(metrics, 120);
	tcase_set_timeout(limits, 120);
	tcase_add_test(metrics, test_promtool_and_series);
	tcase_add_test(limits, test_per_ip_limit_answers_503);
	tcase_add_test(limits, test_per_ip_refusal_varies);
	tcase_add_test(limits, test_per_ip_refusals_logged_once_a_second);
	tcase_add_test(limits, test_memory_limit_counted);
	tcase_add_test(limits, test_header_record_refusal_counted_once);
	suite_add_tcase(s, metrics);
	suite_add_tcase(s, limits);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .daemon = true,
	};

	return suite_main(argc, argv, server_metrics_suite, &opts);
}
