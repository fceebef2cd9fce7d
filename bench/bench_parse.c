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
 * Usage: build/bench/bench_parse
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/service.h"
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

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
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

int main(void)
{
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
		qsort(a, ROUNDS, sizeof a[0], by_value);
		qsort(b, ROUNDS, sizeof b[0], by_value);
		printf("%6zu %10.2f %12.2f %12.2f %7.1fx %12.1f %12.1f\n", lengths[k],
		       (double)body.len / 1e6, a[ROUNDS / 2], b[ROUNDS / 2],
		       b[ROUNDS / 2] / a[ROUNDS / 2], a[ROUNDS / 2] * 1e6 / numbers,
		       b[ROUNDS / 2] * 1e6 / numbers);
		buf_release(&body);
	}
	api_service_free(pooled);
	api_service_free(plain);
	return 0;
}
