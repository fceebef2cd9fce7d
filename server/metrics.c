/*
 * metrics.c: counters in per-thread shards, and their Prometheus exposition.
 *
 * Every request adds to some twenty counters and gauges. Kept once for the
 * whole process, each add moved a cache line between the I/O threads' cores
 * (an atomic read-modify-write on a line the other core wrote last); so each
 * thread adds to a shard of its own (thread_slot.h; threads share one only
 * past METRICS_SHARDS), still atomically but relaxed, and metrics_render sums
 * the shards.
 *
 * Every counter is a 64-bit word, so a shard and a sum of shards (struct
 * tally) lay out the same words, and summing is a loop over them. Gauges are
 * kept as sums of deltas in two's complement: one shard may hold -3 of an
 * in-flight gauge whose +3 another holds. Histogram buckets are stored per
 * bucket (not cumulative) and summed when rendered; the sum of durations is
 * kept in nanoseconds. A model's series live in METRICS_MODELS_MAX slots
 * (and "other" after them): a slot's name is written under model_lock before
 * n_models publishes it, so readers scan the published slots without the lock.
 */
#include "metrics.h"

#include <assert.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proc_metrics.h"
#include "thread_slot.h"

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
    [REJ_PER_IP] = "per_ip_limit",
    [REJ_PRECONDITION] = "precondition_failed",
};

static const char *const limit_label[LIMIT_COUNT] = {
    [LIMIT_CONNECTION] = "connection",
    [LIMIT_PER_IP] = "per_ip",
    [LIMIT_MEMORY] = "memory",
    [LIMIT_DRAINING] = "draining",
};

static const char *const linger_label[LINGER_END_COUNT] = {
    [LINGER_END_EOF] = "client_closed",
    [LINGER_END_TIME] = "time",
    [LINGER_END_BYTES] = "bytes",
    [LINGER_END_ERROR] = "error",
    [LINGER_END_STOP] = "stopped",
    [LINGER_END_FULL] = "full",
};

static const char *const outcome_label[OUTCOME_COUNT] = {
    [OUTCOME_OK] = "ok",
    [OUTCOME_CLIENT_ERROR] = "client_error",
    [OUTCOME_SERVER_ERROR] = "server_error",
    [OUTCOME_CANCELLED] = "cancelled",
};

static const char *const cancel_label[CANCEL_REASON_COUNT] = {
    [CANCEL_CLIENT_GONE] = "client_closed",
    [CANCEL_DEADLINE] = "deadline",
};

/* Status codes counted by name; anything else is counted as "other". */
static const int known_status[] = {0,	200, 204, 304, 400, 401, 403, 404, 405, 408,
				   409, 412, 413, 415, 422, 429, 499, 500, 501, 503, 504};
enum { N_STATUS = sizeof known_status / sizeof known_status[0] + 1 };

/* Every histogram's buckets, in seconds (+Inf implied): from 50 us, where a
 * small request answered on the I/O thread lands, to 60 s, past the longest
 * --compute-deadline anyone should set. */
static const double bucket_le[] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
				   0.01,    0.025,  0.05,    0.1,    0.25,  0.5,    1,
				   2.5,	    5,	    10,	     30,     60};
enum { N_BUCKETS = sizeof bucket_le / sizeof bucket_le[0] + 1 };

enum { METRICS_SHARDS = 8 };

/* A histogram's words: per bucket (not cumulative), and the sum in ns. */
#define HISTOGRAM(T)                                                                       \
	struct {                                                                           \
		T bucket[N_BUCKETS];                                                       \
		T sum_ns;                                                                  \
	}

/* Every counter and gauge, as words of type T. */
#define COUNTERS(T)                                                                        \
	T requests[MR_COUNT][N_STATUS];                                                    \
	HISTOGRAM(T) latency[MR_COUNT];                                                    \
	T rejections[REJ_COUNT];                                                           \
	T refused[LIMIT_COUNT];                                                            \
	T lingered[LINGER_END_COUNT];                                                      \
	T cancelled[CANCEL_REASON_COUNT][2]; /* [why][running] */                          \
	T outcome[METRICS_MODELS_MAX + 1][OUTCOME_COUNT];                                  \
	HISTOGRAM(T) queue[METRICS_MODELS_MAX + 1];                                        \
	HISTOGRAM(T) compute[METRICS_MODELS_MAX + 1];                                      \
	T lingering, in_flight, queued, computing, pending_bytes, receiving_bytes;         \
	T flops, bytes_in, bytes_out, split, lent /* metrics_split's requests, workers lent */

/* One thread's counters. */
struct shard {
	alignas(SHARD_ALIGN) struct {
		COUNTERS(atomic_ullong);
	} c;
};

/* The shards summed, for rendering. */
struct tally {
	COUNTERS(unsigned long long);
};

enum { TALLY_WORDS = sizeof(struct tally) / sizeof(unsigned long long) };
static_assert(sizeof(((struct shard *)0)->c) == sizeof(struct tally),
	      "a shard's words are a tally's");
static_assert(sizeof(atomic_ullong) == sizeof(unsigned long long), "64-bit atomic words");

struct metrics {
	struct shard shard[METRICS_SHARDS];
	pthread_mutex_t model_lock; /* taken to add a slot */
	atomic_size_t n_models;	    /* slots published */
	char model_name[METRICS_MODELS_MAX + 1][72]; /* the slots' names; the last: "other" */
	char version[32], commit[48], blas[160];
};

/* The calling thread's shard. */
static struct shard *shard_of(struct metrics *m)
{
	return &m->shard[thread_slot() % METRICS_SHARDS];
}

static void add(atomic_ullong *word, unsigned long long n)
{
	atomic_fetch_add_explicit(word, n, memory_order_relaxed);
}

/* A gauge's delta, in two's complement. */
static void add_signed(atomic_ullong *word, long long delta)
{
	add(word, (unsigned long long)delta);
}

/* Every shard's words summed into t. */
static void sum_shards(const struct metrics *m, struct tally *t)
{
	unsigned long long *to = (unsigned long long *)t;

	memset(t, 0, sizeof *t);
	for (size_t s = 0; s < METRICS_SHARDS; s++) {
		const atomic_ullong *from = (const atomic_ullong *)&m->shard[s].c;

		for (size_t i = 0; i < TALLY_WORDS; i++)
			to[i] += atomic_load_explicit(&from[i], memory_order_relaxed);
	}
}

struct metrics *metrics_new(void)
{
	/* all-zero bytes are valid zero atomics on every platform we build for */
	struct metrics *m = shard_calloc(sizeof(struct metrics));

	if (m == NULL)
		return NULL;
	if (pthread_mutex_init(&m->model_lock, NULL) != 0) {
		free(m);
		return NULL;
	}
	strcpy(m->model_name[METRICS_MODELS_MAX], "other");
	strcpy(m->version, "unknown");
	strcpy(m->commit, "unknown");
	strcpy(m->blas, "openblas");
	return m;
}

void metrics_free(struct metrics *m)
{
	if (m == NULL)
		return;
	pthread_mutex_destroy(&m->model_lock);
	free(m);
}

/* src into dst[size], cut to fit. */
static void copy_label(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

void metrics_set_build(struct metrics *m, const char *version, const char *commit,
		       const char *blas)
{
	copy_label(m->version, sizeof m->version, version);
	copy_label(m->commit, sizeof m->commit, commit);
	copy_label(m->blas, sizeof m->blas, blas);
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

/* One duration into a histogram's words (of a shard). */
static void observe(atomic_ullong bucket[N_BUCKETS], atomic_ullong *sum_ns, double seconds)
{
	if (seconds < 0)
		seconds = 0;
	add(&bucket[bucket_index(seconds)], 1);
	add(sum_ns, (unsigned long long)(seconds * 1e9));
}

void metrics_request(struct metrics *m, enum metric_route route, int status, double seconds,
		     size_t bytes_in, size_t bytes_out, double flops)
{
	struct shard *s = shard_of(m);

	add(&s->c.requests[route][status_index(status)], 1);
	observe(s->c.latency[route].bucket, &s->c.latency[route].sum_ns, seconds);
	add(&s->c.bytes_in, bytes_in);
	add(&s->c.bytes_out, bytes_out);
	if (flops > 0)
		add(&s->c.flops, (unsigned long long)flops);
}

void metrics_reject(struct metrics *m, enum rejection why)
{
	add(&shard_of(m)->c.rejections[why], 1);
}

void metrics_refused(struct metrics *m, enum refuse_limit limit)
{
	add(&shard_of(m)->c.refused[limit], 1);
}

void metrics_linger(struct metrics *m, int delta)
{
	add_signed(&shard_of(m)->c.lingering, delta);
}

void metrics_lingered(struct metrics *m, enum linger_end end)
{
	add(&shard_of(m)->c.lingered[end], 1);
}

/* The published slot named name, or SIZE_MAX. */
static size_t find_model(const struct metrics *m, const char *name, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(m->model_name[i], name) == 0)
			return i;
	}
	return SIZE_MAX;
}

size_t metrics_model(struct metrics *m, const char *model)
{
	size_t n = atomic_load(&m->n_models);
	size_t i = find_model(m, model, n);

	if (i != SIZE_MAX)
		return i;
	pthread_mutex_lock(&m->model_lock);
	n = atomic_load(&m->n_models);
	i = find_model(m, model, n);
	if (i == SIZE_MAX && n < METRICS_MODELS_MAX && strlen(model) < sizeof m->model_name[n]) {
		strcpy(m->model_name[n], model);
		atomic_store(&m->n_models, n + 1); /* publishes the name */
		i = n;
	}
	pthread_mutex_unlock(&m->model_lock);
	/* past the slots, counted as "other": in the slot of a model named so,
	 * when one has a slot, as one label must not name two series */
	if (i == SIZE_MAX)
		i = find_model(m, m->model_name[METRICS_MODELS_MAX], atomic_load(&m->n_models));
	return i != SIZE_MAX ? i : METRICS_MODELS_MAX;
}

void metrics_model_request(struct metrics *m, size_t model, enum model_outcome outcome,
			   double queue_seconds, double compute_seconds)
{
	struct shard *s = shard_of(m);
	size_t i = model <= METRICS_MODELS_MAX ? model : METRICS_MODELS_MAX;

	add(&s->c.outcome[i][outcome], 1);
	observe(s->c.queue[i].bucket, &s->c.queue[i].sum_ns, queue_seconds);
	if (compute_seconds >= 0)
		observe(s->c.compute[i].bucket, &s->c.compute[i].sum_ns, compute_seconds);
}

void metrics_cancelled(struct metrics *m, enum cancel_reason why, int running)
{
	add(&shard_of(m)->c.cancelled[why][running ? 1 : 0], 1);
}

void metrics_in_flight(struct metrics *m, int delta)
{
	add_signed(&shard_of(m)->c.in_flight, delta);
}

void metrics_pending_bytes(struct metrics *m, long long delta)
{
	add_signed(&shard_of(m)->c.pending_bytes, delta);
}

void metrics_receiving_bytes(struct metrics *m, long long delta)
{
	add_signed(&shard_of(m)->c.receiving_bytes, delta);
}

void metrics_queued(struct metrics *m, int delta)
{
	add_signed(&shard_of(m)->c.queued, delta);
}

void metrics_computing(struct metrics *m, int delta)
{
	add_signed(&shard_of(m)->c.computing, delta);
}

void metrics_split(struct metrics *m, size_t lent)
{
	struct shard *s = shard_of(m);

	add(&s->c.split, 1);
	add(&s->c.lent, lent);
}

/* The codes whose series every route shows from the start, at 0: a series
 * that first appears at its first increment hides that increment from
 * rate() (Prometheus' "avoid missing metrics"), and the first burst of 5xx
 * on a fresh pod is what an error-ratio alert must see. Others appear with
 * their first request; all of them would be 20 lines a route. */
static int shown_at_zero(int status)
{
	return status == 200 || status == 500 || status == 503;
}

static void render_requests(const struct tally *t, struct buf *out)
{
	buf_puts(out, "# HELP attnd_http_requests_total HTTP requests answered, by route and "
		      "status code.\n# TYPE attnd_http_requests_total counter\n");
	for (size_t r = 0; r < MR_COUNT; r++) {
		for (size_t s = 0; s < N_STATUS; s++) {
			unsigned long long n = t->requests[r][s];

			if (n == 0 && (s + 1 == N_STATUS || !shown_at_zero(known_status[s])))
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

/* One histogram's series: name{label="value",le=...}, _sum and _count. */
static void render_histogram(struct buf *out, const char *name, const char *label,
			     const char *value, const unsigned long long bucket[N_BUCKETS],
			     unsigned long long sum_ns)
{
	unsigned long long cumulative = 0;

	for (size_t b = 0; b < N_BUCKETS; b++) {
		cumulative += bucket[b];
		if (b + 1 < N_BUCKETS)
			buf_printf(out, "%s_bucket{%s=\"%s\",le=\"%g\"} %llu\n", name, label, value,
				   bucket_le[b], cumulative);
		else
			buf_printf(out, "%s_bucket{%s=\"%s\",le=\"+Inf\"} %llu\n", name, label,
				   value, cumulative);
	}
	buf_printf(out, "%s_sum{%s=\"%s\"} %.9f\n", name, label, value, (double)sum_ns / 1e9);
	buf_printf(out, "%s_count{%s=\"%s\"} %llu\n", name, label, value, cumulative);
}

static void render_latency(const struct tally *t, struct buf *out)
{
	buf_puts(out, "# HELP attnd_http_request_duration_seconds Time from request headers to "
		      "the response being sent.\n"
		      "# TYPE attnd_http_request_duration_seconds histogram\n");
	for (size_t r = 0; r < MR_COUNT; r++)
		render_histogram(out, "attnd_http_request_duration_seconds", "route",
				 route_label[r], t->latency[r].bucket, t->latency[r].sum_ns);
}

/* The slots in use into idx: the published ones, and "other" once it
 * counted; returns how many. */
static size_t model_slots(const struct metrics *m, const struct tally *t,
			  size_t idx[METRICS_MODELS_MAX + 1])
{
	size_t n = atomic_load(&m->n_models);

	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	for (size_t k = 0; k < OUTCOME_COUNT; k++) {
		if (t->outcome[METRICS_MODELS_MAX][k] != 0) {
			idx[n++] = METRICS_MODELS_MAX;
			break;
		}
	}
	return n;
}

static void render_models(const struct metrics *m, const struct tally *t, struct buf *out)
{
	size_t idx[METRICS_MODELS_MAX + 1];
	size_t n = model_slots(m, t, idx);

	buf_puts(out, "# HELP attnd_model_requests_total Compute requests that reached the API, "
		      "by model and outcome.\n# TYPE attnd_model_requests_total counter\n");
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < OUTCOME_COUNT; k++)
			buf_printf(out,
				   "attnd_model_requests_total{model=\"%s\",outcome=\"%s\"} %llu\n",
				   m->model_name[idx[i]], outcome_label[k], t->outcome[idx[i]][k]);
	buf_puts(out, "# HELP attnd_compute_queue_wait_seconds Time a compute request waited "
		      "for a worker (0 for one answered on the I/O thread), by model.\n"
		      "# TYPE attnd_compute_queue_wait_seconds histogram\n");
	for (size_t i = 0; i < n; i++)
		render_histogram(out, "attnd_compute_queue_wait_seconds", "model",
				 m->model_name[idx[i]], t->queue[idx[i]].bucket,
				 t->queue[idx[i]].sum_ns);
	buf_puts(out, "# HELP attnd_compute_duration_seconds The engine work of one compute "
		      "request, by model.\n# TYPE attnd_compute_duration_seconds histogram\n");
	for (size_t i = 0; i < n; i++)
		render_histogram(out, "attnd_compute_duration_seconds", "model",
				 m->model_name[idx[i]], t->compute[idx[i]].bucket,
				 t->compute[idx[i]].sum_ns);
}

static void render_refused(const struct tally *t, struct buf *out)
{
	buf_puts(out, "# HELP attnd_connections_refused_total Connections (or their requests) "
		      "turned away by a limit, by limit.\n"
		      "# TYPE attnd_connections_refused_total counter\n");
	for (size_t i = 0; i < LIMIT_COUNT; i++)
		buf_printf(out, "attnd_connections_refused_total{limit=\"%s\"} %llu\n",
			   limit_label[i], t->refused[i]);
}

/* A label value with \\, \" and newlines escaped (the exposition format's rule). */
static void put_label_value(struct buf *out, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\' || *v == '"')
			buf_putc(out, '\\');
		if (*v == '\n')
			buf_puts(out, "\\n");
		else
			buf_putc(out, *v);
	}
}

static void render_build(const struct metrics *m, struct buf *out)
{
	buf_puts(out, "# HELP attnd_build_info The daemon's version, commit and BLAS; always "
		      "1.\n# TYPE attnd_build_info gauge\nattnd_build_info{version=\"");
	put_label_value(out, m->version);
	buf_puts(out, "\",commit=\"");
	put_label_value(out, m->commit);
	buf_puts(out, "\",blas=\"");
	put_label_value(out, m->blas);
	buf_puts(out, "\"} 1\n");
}

static void render_rejections(const struct tally *t, struct buf *out)
{
	buf_puts(out, "# HELP attnd_rejections_total Requests refused by the transport, by "
		      "reason.\n# TYPE attnd_rejections_total counter\n");
	for (size_t i = 0; i < REJ_COUNT; i++)
		buf_printf(out, "attnd_rejections_total{reason=\"%s\"} %llu\n", reject_label[i],
			   t->rejections[i]);
}

static void render_cancelled(const struct tally *t, struct buf *out)
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
				   cancel_label[i], stage[s], t->cancelled[i][s]);
}

static void render_scalar(struct buf *out, const char *name, const char *type, const char *help,
			  unsigned long long value)
{
	buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
		   value);
}

/* A gauge of things that exist now (requests, bytes, connections): never
 * below 0. Its sum is below 0 only when torn: sum_shards reads the shards
 * one after another, so a request queued on an I/O thread's shard and taken
 * by a worker on another's between the two reads shows its -1 without its
 * +1 (attnd_compute_queue_depth read -1 under load). */
static void render_gauge(struct buf *out, const char *name, const char *help, long long value)
{
	buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", name, help, name, name,
		   value > 0 ? value : 0);
}

static void render_lingering(const struct tally *t, struct buf *out)
{
	buf_puts(out, "# HELP attnd_lingering_closes_total Connections the server closed while "
		      "their client may still have been sending, read and discarded until the "
		      "client closed (client_closed) or a bound, by how that ended; full: not "
		      "lingered, as the most that may linger at once were.\n"
		      "# TYPE attnd_lingering_closes_total counter\n");
	for (size_t i = 0; i < LINGER_END_COUNT; i++)
		buf_printf(out, "attnd_lingering_closes_total{end=\"%s\"} %llu\n", linger_label[i],
			   t->lingered[i]);
	render_gauge(out, "attnd_connections_lingering",
		     "Connections in a lingering close now (closed by the server, still read).",
		     (long long)t->lingering);
}

int metrics_render(const struct metrics *m, struct buf *out)
{
	struct tally *t = malloc(sizeof *t);

	if (t == NULL)
		return -1;
	sum_shards(m, t);
	render_requests(t, out);
	render_latency(t, out);
	render_models(m, t, out);
	render_rejections(t, out);
	render_refused(t, out);
	render_cancelled(t, out);
	render_lingering(t, out);
	render_gauge(out, "attnd_http_requests_in_flight",
		     "Requests received and not yet fully answered.", (long long)t->in_flight);
	render_gauge(out, "attnd_compute_queue_depth", "Compute requests waiting for a worker.",
		     (long long)t->queued);
	render_gauge(out, "attnd_compute_running", "Compute requests a worker is running.",
		     (long long)t->computing);
	render_gauge(out, "attnd_answers_pending_bytes",
		     "Bytes of answers queued to clients and not yet sent (--max-pending-mb).",
		     (long long)t->pending_bytes);
	render_gauge(out, "attnd_bodies_receiving_bytes",
		     "Bytes of request bodies received and held (--max-receiving-mb).",
		     (long long)t->receiving_bytes);
	render_scalar(out, "attnd_engine_flops_total", "counter",
		      "Floating-point operations the engine performed.", t->flops);
	render_scalar(out, "attnd_compute_split_total", "counter",
		      "Compute requests whose engine call also ran on idle workers' cores.",
		      t->split);
	render_scalar(out, "attnd_compute_lent_workers_total", "counter",
		      "Idle workers lent to those requests, summed over them.", t->lent);
	render_scalar(out, "attnd_http_request_bytes_total", "counter",
		      "Request body bytes received.", t->bytes_in);
	render_scalar(out, "attnd_http_response_bytes_total", "counter",
		      "Response body bytes sent (answers sent whole).", t->bytes_out);
	free(t);
	render_build(m, out);
	proc_metrics_render(out);
	return out->failed ? -1 : 0;
}
