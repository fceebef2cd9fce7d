/*
 * bench_parse.c: what reading a request's numbers costs, with the pooled
 * reader of large number rows (api/json/fastjson.h) and with jansson alone
 * (api_service_set_plain_json), on the same bodies in alternating rounds.
 *
 * The body is POST /v1/attention on the built-in `base` with embeddings
 * [L, 512] written as %.9g (no weights), the request of the payload tables;
 * the time is the API's own parse_ms (decoding and validating, not the
 * engine). Prints one row per L: medians over ROUNDS, the ratio, and the
 * ns per number.
 *
 * Then the numbers alone (bench_bodies): a [128, 512] JSON matrix {"x": [[...]]}
 * of "%.4f" numbers and one of 17 significant digits (Python's repr of a
 * random double in [-1, 1)), each
 *   parse   req_parse_pooled + api_tensor_read_pool (fastjson, common/decfloat)
 *   write   api_tensor_write, shortest text (common/fmt.h), of the floats read
 * beside memcpy of the same bytes (the body for parse, the answer for
 * write) and beside jansson (req_parse without a pool + api_tensor_read; and
 * json_dumps of the same floats as json_real arrays), as ns per number, MB/s
 * of text and ratios of medians of one run; the target, <= 10 ns
 * per number, marked PASS / MISS for information.
 *
 * Usage: build/bench/bench_parse [--numbers]   --numbers: bench_bodies only
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/fastjson.h"
#include "api/json/json_read.h"
#include "api/json/json_tensor.h"
#include "api/service.h"
#include "bench/timing.h"
#include "common/buf.h"

enum { ROUNDS = 15, E = 512 };

/* {"model": "base", "weights": "none", "embeddings": [[...], ...]} of L rows. */
static void make_body(struct buf *b, size_t L)
{
	unsigned long long s = 88172645463325252ULL; /* xorshift64 */

	buf_puts(b, "{\"model\":\"base\",\"weights\":\"none\",\"embeddings\":[");
	for (size_t i = 0; i < L; i++) {
		buf_puts(b, i ? ",[" : "[");
		for (size_t j = 0; j < E; j++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			buf_printf(b, j ? ",%.9g" : "%.9g", (double)(s >> 11) * 0x1.0p-52 - 1.0);
		}
		buf_putc(b, ']');
	}
	buf_puts(b, "]}");
}

/* parse_ms of one request; exits when it is not answered 200. */
static double parse_ms(const struct api_service *svc, const struct buf *body)
{
	struct api_reply r;
	double ms;

	api_reply_init(&r, (size_t)1 << 30);
	api_handle(svc, API_ROUTE_ATTENTION, NULL, body->data, body->len, &r);
	if (r.status != 200) {
		fprintf(stderr, "bench_parse: status %d: %.200s\n", r.status, r.body.data);
		exit(1);
	}
	ms = r.parse_ms;
	api_reply_release(&r);
	return ms;
}

static struct api_service *service(int plain)
{
	struct api_limits limits = { .max_request_bytes = (size_t)1 << 31,
				     .max_response_bytes = (size_t)1 << 30,
				     .max_inline_d_model = 4096,
				     .engine_threads = 1 };
	struct api_service *svc = api_service_new(&limits);
	struct api_error err;

	if (svc == NULL || api_service_add_builtins(svc, &err) != 0) {
		fprintf(stderr, "bench_parse: no service\n");
		exit(1);
	}
	api_service_set_plain_json(svc, plain);
	return svc;
}

/* ---- the numbers alone ---------------------------------------------------- */

enum { BODY_ROWS = 128, BODY_COLS = 512, BODY_REPS = 9 };
#define TARGET_NS 10.0

static volatile size_t sink;

static void die(const char *what)
{
	fprintf(stderr, "bench_parse: %s failed\n", what);
	exit(1);
}

/* {"x": [[...], ...]} of BODY_ROWS x BODY_COLS numbers, "%.4f" or 17 digits */
static void make_matrix(struct buf *b, int repr)
{
	unsigned long long s = 2463534242ULL;

	buf_puts(b, "{\"x\":[");
	for (size_t i = 0; i < BODY_ROWS; i++) {
		buf_puts(b, i ? ",[" : "[");
		for (size_t j = 0; j < BODY_COLS; j++) {
			double x;

			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			x = (double)(s >> 11) * 0x1.0p-52 - 1.0;
			buf_printf(b, repr ? "%s%.17g" : "%s%.4f", j ? "," : "", x);
		}
		buf_putc(b, ']');
	}
	buf_puts(b, "]}");
	if (b->failed)
		die("building the body");
}

/* seconds to read body's "x" into t, pooled (fastjson) or by jansson alone */
static double time_read(const struct buf *body, int pooled, struct api_tensor *t)
{
	static const char *const fields[] = {"/x", NULL};
	struct fastjson_pool pool = {0};
	struct api_error err;
	json_t *root;
	double t0 = bench_now_s();

	if (req_parse_pooled(body->data, body->len, fields, pooled ? &pool : NULL, &root, &err) !=
		0 ||
	    api_tensor_read_pool(&pool, json_object_get(root, "x"), "/x", 2, 2, (size_t)1 << 30, 0,
				 t, &err) != 0)
		die("reading the matrix");
	json_decref(root);
	fastjson_pool_release(&pool);
	return bench_now_s() - t0;
}

static double time_write(struct buf *out, const float *x)
{
	static const size_t shape[2] = {BODY_ROWS, BODY_COLS};
	struct api_writer w = {out, API_ENC_FLOAT, 0};
	double t0;

	buf_reset(out);
	t0 = bench_now_s();
	if (api_tensor_write(&w, x, 2, shape) != 0)
		die("api_tensor_write");
	return bench_now_s() - t0;
}

static double time_dumps(const json_t *arr)
{
	double t0 = bench_now_s();
	char *s = json_dumps(arr, JSON_COMPACT);
	double t = bench_now_s() - t0;

	if (s == NULL)
		die("json_dumps");
	sink += strlen(s);
	free(s);
	return t;
}

static double time_memcpy(char *dst, const char *src, size_t n)
{
	double t0 = bench_now_s();

	memcpy(dst, src, n);
	sink += (size_t)dst[n / 2];
	return bench_now_s() - t0;
}

/* the floats as a jansson array of arrays of reals */
static json_t *jansson_matrix(const float *x)
{
	json_t *arr = json_array();

	for (size_t i = 0; arr != NULL && i < BODY_ROWS; i++) {
		json_t *row = json_array();

		for (size_t j = 0; row != NULL && j < BODY_COLS; j++)
			if (json_array_append_new(row, json_real((double)x[i * BODY_COLS + j])) != 0)
				die("json_array_append_new");
		if (row == NULL || json_array_append_new(arr, row) != 0)
			die("json_array_append_new");
	}
	if (arr == NULL)
		die("json_array");
	return arr;
}

static void print_row(const char *body, const char *op, double t, double t_memcpy,
		      double t_jansson, size_t bytes)
{
	double numbers = (double)BODY_ROWS * BODY_COLS, ns = t * 1e9 / numbers;

	printf("%-9s %-6s %8.1f %9.0f %10.1f %11.1f %9.1f %9.1fx  %s\n", body, op, ns,
	       (double)bytes / t / 1e6, t_memcpy * 1e9 / numbers, t / t_memcpy,
	       t_jansson * 1e9 / numbers, t_jansson / t, ns <= TARGET_NS ? "PASS" : "MISS");
}

static void bench_bodies(void)
{
	static const char *const names[2] = {"%.4f", "17-digit"};

	printf("\nNumbers alone: a [%d, %d] JSON matrix; ns per number, MB/s of text, medians of %d "
	       "(one run)\n",
	       BODY_ROWS, BODY_COLS, BODY_REPS);
	printf("%-9s %-6s %8s %9s %10s %11s %9s %10s  %s\n", "body", "op", "ns/n", "MB/s",
	       "memcpy ns", "x memcpy", "jansson", "jansson/x", "<=10 ns");
	for (int repr = 0; repr < 2; repr++) {
		double tp[BODY_REPS], tj[BODY_REPS], tm[BODY_REPS], tw[BODY_REPS], td[BODY_REPS],
		    twm[BODY_REPS];
		struct buf body, out;
		struct api_tensor t;
		json_t *arr;
		char *copy;

		buf_init(&body, (size_t)1 << 30);
		buf_init(&out, (size_t)1 << 30);
		make_matrix(&body, repr);
		copy = malloc(body.len);
		if (copy == NULL)
			die("malloc");
		time_read(&body, 1, &t); /* warm-up, and the floats to write */
		arr = jansson_matrix(t.data);
		time_write(&out, t.data);
		for (int r = 0; r < BODY_REPS; r++) {
			struct api_tensor u;

			tp[r] = time_read(&body, 1, &u);
			api_tensor_release(&u);
			tj[r] = time_read(&body, 0, &u);
			api_tensor_release(&u);
			tm[r] = time_memcpy(copy, body.data, body.len);
			tw[r] = time_write(&out, t.data);
			td[r] = time_dumps(arr);
			twm[r] = time_memcpy(copy, out.data, out.len < body.len ? out.len : body.len);
		}
		print_row(names[repr], "parse", bench_median(tp, BODY_REPS),
			  bench_median(tm, BODY_REPS), bench_median(tj, BODY_REPS), body.len);
		print_row(names[repr], "write", bench_median(tw, BODY_REPS),
			  bench_median(twm, BODY_REPS), bench_median(td, BODY_REPS), out.len);
		json_decref(arr);
		api_tensor_release(&t);
		free(copy);
		buf_release(&body);
		buf_release(&out);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--numbers") == 0) {
		bench_bodies();
		return 0;
	}
	static const size_t lengths[] = { 16, 128, 1024 };
	struct api_service *pooled = service(0), *plain = service(1);

	printf("Reading numbers: POST /v1/attention, base, embeddings [L, 512] as %%.9g, no weights;\n"
	       "parse_ms medians over %d alternating rounds (decode and validate, no engine)\n",
	       ROUNDS);
	printf("%6s %10s %12s %12s %8s %12s %12s\n", "L", "body MB", "pooled ms", "jansson ms",
	       "ratio", "pooled ns/n", "jansson ns/n");
	for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
		double a[ROUNDS], b[ROUNDS], numbers = (double)lengths[k] * E;
		struct buf body;

		buf_init(&body, (size_t)1 << 30);
		make_body(&body, lengths[k]);
		for (int r = 0; r < ROUNDS; r++) {
			a[r] = parse_ms(pooled, &body);
			b[r] = parse_ms(plain, &body);
		}
		qsort(a, ROUNDS, sizeof a[0], bench_cmp_double);
		qsort(b, ROUNDS, sizeof b[0], bench_cmp_double);
		printf("%6zu %10.2f %12.2f %12.2f %7.1fx %12.1f %12.1f\n", lengths[k],
		       (double)body.len / 1e6, a[ROUNDS / 2], b[ROUNDS / 2],
		       b[ROUNDS / 2] / a[ROUNDS / 2], a[ROUNDS / 2] * 1e6 / numbers,
		       b[ROUNDS / 2] * 1e6 / numbers);
		buf_release(&body);
	}
	api_service_free(pooled);
	api_service_free(plain);
	bench_bodies();
	return 0;
}
