/*
 * bench_request.c: the seeds' four-word request inside the process, what
 * the API costs a small request without HTTP (issue 15).
 *
 * http_bench.sh's seeds rows put attnd's server CPU per request beside a
 * bare libmicrohttpd server's; the difference is attnd's own work on the
 * I/O thread: the API (decode, engine, encode) and the transport around it
 * (routing, headers, the access log). This bench times the API's part:
 * api_handle of POST /v1/attention {"model": "tiny", "text": the seeds'
 * sentence}, as server/http_compute.c's compute_small calls it
 * (small_only), CALLS calls a round, ROUNDS rounds, in two settings:
 *
 *   warm   call after call: code and data stay in the caches
 *   cold   POLLUTE bytes written between two calls, as the kernel's network
 *          work does between two requests on a server thread; the time of
 *          the writes alone, measured the same way, is subtracted
 *
 * Prints per setting the median and the fastest round in ns per request,
 * the API's own split of the median round (its parse, compute and encode
 * timings, those of Server-Timing), and the requests per second one core
 * would answer doing that alone: the ceiling the API leaves the server.
 *
 * Usage: build/bench/bench_request
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/service.h"
#include "bench/timing.h"

enum { ROUNDS = 15, CALLS = 4000, POLLUTE = 256 * 1024 };

static const char BODY[] = "{\"model\":\"tiny\",\"text\":\"나는 맛있는 사과를 먹었다\"}";

/* One round's time and the API's own timings, summed over its calls. */
struct round {
	double ns;                             /* per request */
	double parse_ms, compute_ms, encode_ms; /* per request */
};

static unsigned char *pollution; /* [POLLUTE], written between calls when cold */

static void pollute(size_t i)
{
	memset(pollution, (int)(i & 0xff), POLLUTE);
	__asm__ volatile("" : : "r"(pollution) : "memory");
}

/* One call as compute_small makes it; exits unless it is answered 200. */
static void call(const struct api_service *svc, struct round *acc)
{
	struct api_reply r;

	api_reply_init(&r, (size_t)1 << 20);
	r.small_only = 1;
	api_handle(svc, API_ROUTE_ATTENTION, NULL, BODY, sizeof BODY - 1, &r);
	if (r.status != 200 || r.declined) {
		fprintf(stderr, "bench_request: status %d%s: %.200s\n", r.status,
			r.declined ? " (declined as not small)" : "", r.body.data);
		exit(1);
	}
	acc->parse_ms += r.parse_ms;
	acc->compute_ms += r.compute_ms;
	acc->encode_ms += r.encode_ms;
	api_reply_release(&r);
}

/* A round of CALLS calls (svc NULL: the pollution alone). */
static struct round run_round(const struct api_service *svc, int cold)
{
	struct round rd = {0};
	double t0 = bench_now_s();

	for (size_t i = 0; i < CALLS; i++) {
		if (svc != NULL)
			call(svc, &rd);
		if (cold)
			pollute(i);
	}
	rd.ns = (bench_now_s() - t0) * 1e9 / CALLS;
	rd.parse_ms /= CALLS;
	rd.compute_ms /= CALLS;
	rd.encode_ms /= CALLS;
	return rd;
}

static int by_ns(const void *a, const void *b)
{
	double x = ((const struct round *)a)->ns, y = ((const struct round *)b)->ns;

	return (x > y) - (x < y);
}

/* The setting's row: rounds of the API alternating with rounds of the
 * pollution alone (cold), so both see the same machine. */
static void bench_setting(const struct api_service *svc, int cold)
{
	struct round api[ROUNDS], alone[ROUNDS], med;
	double t_alone[ROUNDS], base = 0.0;

	for (size_t i = 0; i < ROUNDS; i++) {
		api[i] = run_round(svc, cold);
		alone[i] = cold ? run_round(NULL, 1) : (struct round){0};
		t_alone[i] = alone[i].ns;
	}
	if (cold)
		base = bench_median(t_alone, ROUNDS);
	qsort(api, ROUNDS, sizeof api[0], by_ns);
	med = api[ROUNDS / 2];
	printf("%-5s | %9.0f | %9.0f | %8.0f | %8.0f | %8.0f | %10.0f\n", cold ? "cold" : "warm",
	       med.ns - base, api[0].ns - base, med.parse_ms * 1e6, med.compute_ms * 1e6,
	       med.encode_ms * 1e6, 1e9 / (med.ns - base));
}

int main(void)
{
	struct api_limits limits = {.max_request_bytes = (size_t)1 << 20,
				    .max_response_bytes = (size_t)1 << 20,
				    .max_inline_d_model = 4096,
				    .engine_threads = 1};
	struct api_service *svc = api_service_new(&limits);
	struct api_error err;

	pollution = malloc(POLLUTE);
	if (svc == NULL || pollution == NULL || api_service_add_builtins(svc, &err) != 0) {
		fprintf(stderr, "bench_request: no service\n");
		return 1;
	}
	run_round(svc, 0); /* first calls: lazy set-up, page faults */
	printf("bench_request: api_handle of the seeds' four-word request on tiny, as the I/O"
	       " thread calls it; %d rounds of %d calls; cold: %d KiB written between calls,"
	       " their time subtracted\n",
	       ROUNDS, CALLS, POLLUTE / 1024);
	printf("%-5s | %9s | %9s | %8s | %8s | %8s | %10s\n", "cache", "median ns", "min ns",
	       "parse ns", "compute", "encode", "req/s/core");
	bench_setting(svc, 0);
	bench_setting(svc, 1);
	api_service_free(svc);
	free(pollution);
	return 0;
}
