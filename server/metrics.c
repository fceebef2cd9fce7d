/*
 * metrics.c: atomic counters and their Prometheus exposition.
 *
 * Histogram buckets are stored per bucket (not cumulative) and summed when
 * rendered; the sum of latencies is kept in microseconds.
 */
#include "metrics.h"

#include <stdatomic.h>
#include <stdlib.h>

static const char *const route_label[MR_COUNT] = {
    [MR_ATTENTION] = "/v1/attention", [MR_SDPA] = "/v1/sdpa",
    [MR_MODELS] = "/v1/models",	      [MR_MODEL] = "/v1/models/{name}",
    [MR_VERSION] = "/version",	      [MR_OPENAPI] = "/openapi.json",
    [MR_TOKENIZE] = "/v1/tokenize",   [MR_DETOKENIZE] = "/v1/detokenize",
    [MR_TOKENIZERS] = "/v1/tokenizers",
    [MR_HEALTHZ] = "/healthz",	      [MR_READYZ] = "/readyz",
    [MR_METRICS] = "/metrics",	      [MR_WEB_INDEX] = "/",
    [MR_WEB_FILE] = "/web/{file}",    [MR_V2_SERVER] = "/v2",
    [MR_V2_LIVE] = "/v2/health/live", [MR_V2_READY] = "/v2/health/ready",
    [MR_V2_MODEL] = "/v2/models/{name}", [MR_V2_MODEL_READY] = "/v2/models/{name}/ready",
    [MR_V2_INFER] = "/v2/models/{name}/infer", [MR_OTHER] = "other",
};

static const char *const reject_label[REJ_COUNT] = {
    [REJ_NOT_FOUND] = "not_found",
    [REJ_METHOD] = "method_not_allowed",
    [REJ_MEDIA_TYPE] = "unsupported_media_type",
    [REJ_ENCODING] = "unsupported_encoding",
    [REJ_BAD_ENCODING] = "bad_encoding",
    [REJ_TOO_LARGE] = "payload_too_large",
    [REJ_BAD_FRAMING] = "bad_request",
    [REJ_UNAUTHORIZED] = "unauthorized",
    [REJ_OVERLOADED] = "overloaded",
    [REJ_DRAINING] = "draining",
    [REJ_TIMEOUT] = "request_timeout",
    [REJ_DEADLINE] = "deadline_exceeded",
};

static const char *const cancel_label[CANCEL_REASON_COUNT] = {
    [CANCEL_CLIENT_GONE] = "client_closed",
    [CANCEL_DEADLINE] = "deadline",
};

/* Status codes counted by name; anything else is counted as "other". */
static const int known_status[] = {0,	200, 204, 400, 401, 403, 404, 405, 408,
				   409, 413, 415, 422, 429, 499, 500, 501, 503, 504};
enum { N_STATUS = sizeof known_status / sizeof known_status[0] + 1 };

/* Prometheus' default latency buckets, in seconds (+Inf implied). */
static const double bucket_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
enum { N_BUCKETS = sizeof bucket_le / sizeof bucket_le[0] + 1 };

struct metrics {
	atomic_ullong requests[MR_COUNT][N_STATUS];
	atomic_ullong latency_bucket[MR_COUNT][N_BUCKETS];
	atomic_ullong latency_sum_us[MR_COUNT];
	atomic_ullong rejections[REJ_COUNT];
	atomic_ullong cancelled[CANCEL_REASON_COUNT][2]; /* [why][running] */
	atomic_llong in_flight, queued, computing;
	atomic_ullong flops, bytes_in, bytes_out;
	atomic_ullong split, lent; /* metrics_split's requests, and workers lent them */
};

struct metrics *metrics_new(void)
{
	/* all-zero bytes are valid zero atomics on every platform we build for */
	return calloc(1, sizeof(struct metrics));
}

void metrics_free(struct metrics *m)
{
	free(m);
}

static size_t status_index(int status)
{
	for (size_t i = 0; i + 1 < N_STATUS; i++) {
		if (known_status[i] == status)
			return i;
	}
	return N_STATUS - 1;
}

static size_t bucket_index(double seconds)
{
	size_t i = 0;

	while (i + 1 < N_BUCKETS && seconds > bucket_le[i])
		i++;
	return i;
}

void metrics_request(struct metrics *m, enum metric_route route, int status, double seconds,
		     size_t bytes_in, size_t bytes_out, double flops)
{
	if (seconds < 0)
		seconds = 0;
	atomic_fetch_add(&m->requests[route][status_index(status)], 1);
	atomic_fetch_add(&m->latency_bucket[route][bucket_index(seconds)], 1);
	atomic_fetch_add(&m->latency_sum_us[route], (unsigned long long)(seconds * 1e6));
	atomic_fetch_add(&m->bytes_in, bytes_in);
	atomic_fetch_add(&m->bytes_out, bytes_out);
	if (flops > 0)
		atomic_fetch_add(&m->flops, (unsigned long long)flops);
}

void metrics_reject(struct metrics *m, enum rejection why)
{
	atomic_fetch_add(&m->rejections[why], 1);
}

void metrics_cancelled(struct metrics *m, enum cancel_reason why, int running)
{
	atomic_fetch_add(&m->cancelled[why][running ? 1 : 0], 1);
}

void metrics_in_flight(struct metrics *m, int delta)
{
	atomic_fetch_add(&m->in_flight, delta);
}

void metrics_queued(struct metrics *m, int delta)
{
	atomic_fetch_add(&m->queued, delta);
}

void metrics_computing(struct metrics *m, int delta)
{
	atomic_fetch_add(&m->computing, delta);
}

void metrics_split(struct metrics *m, size_t lent)
{
	atomic_fetch_add(&m->split, 1);
	atomic_fetch_add(&m->lent, lent);
}

static void render_requests(const struct metrics *m, struct buf *out)
{
	buf_puts(out, "# HELP attnd_http_requests_total HTTP requests answered, by route and "
		      "status code.\n# TYPE attnd_http_requests_total counter\n");
	for (size_t r = 0; r < MR_COUNT; r++) {
		for (size_t s = 0; s < N_STATUS; s++) {
			unsigned long long n = atomic_load(&m->requests[r][s]);

			if (n == 0)
				continue;
			if (s + 1 < N_STATUS)
				buf_printf(
				    out,
				    "attnd_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
				    route_label[r], known_status[s], n);
			else
				buf_printf(
				    out,
				    "attnd_http_requests_total{route=\"%s\",code=\"other\"} %llu\n",
				    route_label[r], n);
		}
	}
}

static void render_histogram_route(const struct metrics *m, size_t r, struct buf *out)
{
	unsigned long long cumulative = 0;
	const char *name = "attnd_http_request_duration_seconds";

	for (size_t b = 0; b < N_BUCKETS; b++) {
		cumulative += atomic_load(&m->latency_bucket[r][b]);
		if (b + 1 < N_BUCKETS)
			buf_printf(out, "%s_bucket{route=\"%s\",le=\"%g\"} %llu\n", name,
				   route_label[r], bucket_le[b], cumulative);
		else
			buf_printf(out, "%s_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", name,
				   route_label[r], cumulative);
	}
	buf_printf(out, "%s_sum{route=\"%s\"} %.6f\n", name, route_label[r],
		   (double)atomic_load(&m->latency_sum_us[r]) / 1e6);
	buf_printf(out, "%s_count{route=\"%s\"} %llu\n", name, route_label[r], cumulative);
}

static void render_latency(const struct metrics *m, struct buf *out)
{
	buf_puts(out, "# HELP attnd_http_request_duration_seconds Time from request headers to "
		      "the response being sent.\n"
		      "# TYPE attnd_http_request_duration_seconds histogram\n");
	for (size_t r = 0; r < MR_COUNT; r++)
		render_histogram_route(m, r, out);
}

static void render_rejections(const struct metrics *m, struct buf *out)
{
	buf_puts(out, "# HELP attnd_rejections_total Requests refused by the transport, by "
		      "reason.\n# TYPE attnd_rejections_total counter\n");
	for (size_t i = 0; i < REJ_COUNT; i++)
		buf_printf(out, "attnd_rejections_total{reason=\"%s\"} %llu\n", reject_label[i],
			   atomic_load(&m->rejections[i]));
}

static void render_cancelled(const struct metrics *m, struct buf *out)
{
	static const char *const stage[2] = { "queued", "running" };

	buf_puts(out, "# HELP attnd_requests_cancelled_total Compute requests stopped because "
		      "their client left or --compute-deadline passed, by reason and by whether "
		      "they were still queued (never run) or running.\n"
		      "# TYPE attnd_requests_cancelled_total counter\n");
	for (size_t i = 0; i < CANCEL_REASON_COUNT; i++)
		for (size_t s = 0; s < 2; s++)
			buf_printf(out,
				   "attnd_requests_cancelled_total{reason=\"%s\",stage=\"%s\"} %llu\n",
				   cancel_label[i], stage[s], atomic_load(&m->cancelled[i][s]));
}

static void render_scalar(struct buf *out, const char *name, const char *type, const char *help,
			  unsigned long long value)
{
	buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
		   value);
}

static void render_gauge(struct buf *out, const char *name, const char *help, long long value)
{
	buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", name, help, name, name, value);
}

int metrics_render(const struct metrics *m, struct buf *out)
{
	render_requests(m, out);
	render_latency(m, out);
	render_rejections(m, out);
	render_cancelled(m, out);
	render_gauge(out, "attnd_http_requests_in_flight",
		     "Requests received and not yet fully answered.", atomic_load(&m->in_flight));
	render_gauge(out, "attnd_compute_queue_depth", "Compute requests waiting for a worker.",
		     atomic_load(&m->queued));
	render_gauge(out, "attnd_compute_running", "Compute requests a worker is running.",
		     atomic_load(&m->computing));
	render_scalar(out, "attnd_engine_flops_total", "counter",
		      "Floating-point operations the engine performed.", atomic_load(&m->flops));
	render_scalar(out, "attnd_compute_split_total", "counter",
		      "Compute requests whose engine call also ran on idle workers' cores.",
		      atomic_load(&m->split));
	render_scalar(out, "attnd_compute_lent_workers_total", "counter",
		      "Idle workers lent to those requests, summed over them.",
		      atomic_load(&m->lent));
	render_scalar(out, "attnd_http_request_bytes_total", "counter",
		      "Request body bytes received.", atomic_load(&m->bytes_in));
	render_scalar(out, "attnd_http_response_bytes_total", "counter",
		      "Response body bytes sent.", atomic_load(&m->bytes_out));
	return out->failed ? -1 : 0;
}
