/*
 * bench_compress.c: which zlib level pays on a weights answer (the default
 * of --compress-level, server/compress.c).
 *
 * The answers are the API's own: POST /v1/attention on the built-in `base`
 * (d_model 512, 8 heads) with a text of W words (seeded, from a list of
 * common English words, one token each) and per-head weights, numbers in
 * their shortest round-trip text, as the daemon sends them. Each is coded
 * as gzip at levels 1..9 (server/compress.c, the daemon's own code), the
 * levels interleaved in ROUNDS rounds; per level: the median compress time
 * (this thread's CPU time, which other processes on a shared machine do not
 * stretch as they do wall time; deflate does no I/O and waits on nothing),
 * the coded bytes, the ratio, the time the coded answer saves on a
 * 100 Mbit/s link (identity bytes - coded bytes at 12.5 MB/s) minus the
 * compress time, and the client's inflate time (zlib, for information).
 * The best net row is marked; every coded answer is checked to inflate back
 * to the answer byte for byte.
 *
 * Usage: build/bench/bench_compress
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define ZLIB_CONST
#include <zlib.h>

#include "api/service.h"
#include "bench/timing.h"
#include "common/buf.h"
#include "server/compress.h"

enum { ROUNDS = 5, LEVELS = 9 };

#define LINK_BYTES_PER_MS (100e6 / 8 / 1e3) /* 100 Mbit/s */

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* {"model": "base", "weights": "per_head", "text": "..."} of w words. */
static void make_request(struct buf *b, size_t w)
{
	static const char *const words[] = {
	    "the",  "cat",   "sat",   "on",    "a",     "mat",   "and",   "looked", "at",
	    "dog",  "who",   "was",   "very",  "happy", "to",    "see",   "her",    "in",
	    "sun",  "after", "long",  "day",   "of",    "rain",  "they",  "went",   "home",
	    "with", "some",  "bread", "water", "then",  "slept", "until", "night",  "came"};
	unsigned long long s = 88172645463325252ULL; /* xorshift64 */

	buf_puts(b, "{\"model\":\"base\",\"weights\":\"per_head\",\"text\":\"");
	for (size_t i = 0; i < w; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		buf_puts(b, i ? " " : "");
		buf_puts(b, words[s % (sizeof words / sizeof words[0])]);
	}
	buf_puts(b, "\"}");
}

/* The answer to w words, into answer; exits unless it is 200. */
static void make_answer(const struct api_service *svc, size_t w, struct buf *answer)
{
	struct api_reply r;
	struct buf req;

	buf_init(&req, 1 << 20);
	make_request(&req, w);
	api_reply_init(&r, (size_t)1 << 30);
	api_handle(svc, API_ROUTE_ATTENTION, NULL, req.data, req.len, &r);
	if (r.status != 200) {
		fprintf(stderr, "bench_compress: status %d: %.200s\n", r.status, r.body.data);
		exit(1);
	}
	buf_append(answer, r.body.data, r.body.len);
	api_reply_release(&r);
	buf_release(&req);
}

/* Inflates coded (gzip) and checks it is the answer; returns the ms taken. */
static double check_inflate(const struct buf *coded, const struct buf *answer)
{
	char *out = malloc(answer->len + 1);
	z_stream z;
	double t0 = cpu_ms(), ms;
	int zr;

	memset(&z, 0, sizeof z);
	if (out == NULL || inflateInit2(&z, 15 + 16) != Z_OK)
		exit(1);
	z.next_in = (const Bytef *)coded->data;
	z.avail_in = (uInt)coded->len;
	z.next_out = (Bytef *)out;
	z.avail_out = (uInt)answer->len + 1;
	zr = inflate(&z, Z_FINISH);
	ms = cpu_ms() - t0;
	if (zr != Z_STREAM_END || z.total_out != answer->len ||
	    memcmp(out, answer->data, answer->len) != 0) {
		fprintf(stderr, "bench_compress: a coded answer does not inflate back\n");
		exit(1);
	}
	inflateEnd(&z);
	free(out);
	return ms;
}

static void table(const struct api_service *svc, size_t w)
{
	double ms[LEVELS][ROUNDS], inflate_ms[LEVELS], net[LEVELS];
	size_t bytes[LEVELS];
	struct buf answer, coded;
	int best = 0;

	buf_init(&answer, (size_t)1 << 30);
	make_answer(svc, w, &answer);
	for (int r = 0; r < ROUNDS; r++) {
		for (int l = 0; l < LEVELS; l++) {
			double t0 = cpu_ms();

			buf_init(&coded, answer.len);
			if (compress_body(CODING_GZIP, l + 1, answer.data, answer.len, &coded) != 0)
				exit(1);
			ms[l][r] = cpu_ms() - t0;
			bytes[l] = coded.len;
			if (r == 0)
				inflate_ms[l] = check_inflate(&coded, &answer);
			buf_release(&coded);
		}
	}
	printf("\n%zu words: identity answer %zu bytes, %.1f ms on the link\n", w, answer.len,
	       (double)answer.len / LINK_BYTES_PER_MS);
	printf("%5s %11s %10s %7s %9s %13s %11s\n", "level", "compress ms", "bytes", "ratio",
	       "wire ms", "net saved ms", "inflate ms");
	for (int l = 0; l < LEVELS; l++) {
		qsort(ms[l], ROUNDS, sizeof ms[l][0], bench_cmp_double);
		net[l] = (double)(answer.len - bytes[l]) / LINK_BYTES_PER_MS - ms[l][ROUNDS / 2];
		if (net[l] > net[best])
			best = l;
	}
	for (int l = 0; l < LEVELS; l++)
		printf("%5d %11.2f %10zu %6.2fx %9.1f %13.1f %11.2f%s\n", l + 1, ms[l][ROUNDS / 2],
		       bytes[l], (double)answer.len / (double)bytes[l],
		       (double)bytes[l] / LINK_BYTES_PER_MS, net[l], inflate_ms[l],
		       l == best ? "  <- best" : "");
	buf_release(&answer);
}

int main(void)
{
	static const size_t words[] = {64, 128, 256};
	struct api_limits limits = {.max_request_bytes = (size_t)1 << 31,
				    .max_response_bytes = (size_t)1 << 30,
				    .max_inline_d_model = 4096,
				    .engine_threads = 1};
	struct api_service *svc = api_service_new(&limits);
	struct api_error err;

	if (svc == NULL || api_service_add_builtins(svc, &err) != 0) {
		fprintf(stderr, "bench_compress: no service\n");
		return 1;
	}
	printf("Compressing a weights answer: POST /v1/attention, base, W words of text, per-head\n"
	       "weights; gzip (server/compress.c) per zlib level, medians of %d interleaved rounds\n"
	       "of CPU ms;\n"
	       "net saved = (identity - coded bytes) at 100 Mbit/s - compress ms\n",
	       ROUNDS);
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		table(svc, words[i]);
	api_service_free(svc);
	return 0;
}
