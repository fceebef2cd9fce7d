/*
 * bench_fmt.c: the API layer's leaf utilities, timed (api/fmt.h, api/base64.h).
 *
 * Floats: 1M values of each set, formatted as JSON numbers
 *   normal   N(0, 1), the values attention layers emit
 *   bits     random finite bit patterns, every binary exponent alike
 * by
 *   shortest     fmt_float_shortest into one buffer
 *   array        the same with commas into a struct buf (a whole JSON array)
 *   row          fmt_floats_shortest, rows of 512 numbers and commas in one
 *                call each, as api_tensor_write writes an answer's rows
 *   %.9g         snprintf, enough digits to read back, not the shortest
 *   digits(6)    fmt_float_digits with 6 digits (the "precision" option)
 *   json_dumps   jansson's json_dumps of a json array of json_real (it prints
 *                "%.17g" of the double, then trims); per number, the array
 *                built beforehand
 * Bytes: each base64 kernel's encode and decode of 16 MiB (the dispatched
 * one, SIMD where the CPU has it, scalar, the naive twin), against memcpy of
 * the same; MB/s of binary bytes (MB = 10^6). Then a [128, 512] float32
 * tensor sent as base64 (a 350 KB body) read whole by req_parse (jansson)
 * and by req_parse_pooled (the scan decodes the string into the pool) then
 * api_tensor_read_pool: ms, MB/s of body, and memcpy of the body beside.
 * Small numbers (headers, the access log, answer shapes): fmt_fixed against
 * snprintf "%.3f" of durations in ms, fmt_u64 against "%llu"; ns per number.
 * Number arrays: a [128, 512] JSON matrix of "%.4f" numbers (the bench's
 * l128 body) read by req_parse (jansson, a node per number) and by
 * req_parse_pooled (api/fastjson.h) then api_tensor_read_pool; ms.
 * (bench_parse --numbers has the per-number table, parse and write, "%.4f"
 * and 17-digit bodies, against memcpy and jansson.)
 *
 * Times are the median (and for floats the best) of REPS runs; ratios are
 * of medians taken within one run, as the machine may be shared (the load
 * average is printed first). Targets (fmt_float_shortest < 30 ns, >= 5x
 * json_dumps; a row <= 10 ns per number, issue 15) are marked PASS / MISS
 * for information; the exit status is 0 unless the bench itself fails.
 *
 *   bench_fmt [--quick]    --quick: 100k floats, 1 MiB
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/buf.h"
#include "api/json/fastjson.h"
#include "common/fmt.h"
#include "api/json/json_read.h"
#include "api/json/json_tensor.h"
#include "bench/timing.h"
#include "engine/prng.h"

enum { REPS = 7 };

#define TARGET_NS 30.0
#define TARGET_ROW_NS 10.0 /* issue 15: text written at <= 10 ns per number */
#define TARGET_JANSSON_RATIO 5.0

static volatile size_t sink; /* keeps results alive */

static void die(const char *what)
{
	fprintf(stderr, "bench_fmt: %s failed\n", what);
	exit(EXIT_FAILURE);
}

/* ---- floats ---------------------------------------------------------------- */

struct float_set {
	const char *name;
	float *x; /* [n] */
	size_t n;
	json_t *arr; /* the same as a jansson array of reals */
};

static void float_set_fill(struct float_set *fs, const char *name, size_t n, int bits)
{
	struct attn_prng g;
	size_t i;

	fs->name = name;
	fs->n = n;
	fs->x = malloc(n * sizeof *fs->x);
	fs->arr = json_array();
	if (fs->x == NULL || fs->arr == NULL)
		die("allocation");
	attn_prng_seed(&g, bits ? 1234 : 5678);
	for (i = 0; i < n; i++) {
		uint32_t u = (uint32_t)(attn_prng_next(&g) >> 32);

		if ((u & 0x7f800000u) == 0x7f800000u)
			u &= 0xbfffffffu; /* NaN / inf: clear the top exponent bit */
		if (bits)
			memcpy(&fs->x[i], &u, sizeof u);
		else
			fs->x[i] = (float)attn_prng_normal(&g);
		if (json_array_append_new(fs->arr, json_real((double)fs->x[i])) != 0)
			die("json_array_append_new");
	}
}

static void float_set_release(struct float_set *fs)
{
	free(fs->x);
	json_decref(fs->arr);
}

static double time_shortest(const struct float_set *fs)
{
	char out[FMT_FLOAT_MAX];
	size_t total = 0;
	double t0 = bench_now_s();
	size_t i;

	for (i = 0; i < fs->n; i++)
		total += fmt_float_shortest(out, fs->x[i]);
	sink += total;
	return bench_now_s() - t0;
}

static double time_array(const struct float_set *fs)
{
	struct buf b;
	double t0;
	double t;
	size_t i;

	buf_init(&b, (size_t)1 << 30);
	t0 = bench_now_s();
	buf_putc(&b, '[');
	for (i = 0; i < fs->n; i++) {
		char *p = buf_reserve(&b, FMT_FLOAT_MAX + 1);

		if (p == NULL)
			die("buf_reserve");
		buf_commit(&b, fmt_float_shortest(p, fs->x[i]));
		buf_putc(&b, ',');
	}
	b.data[b.len - 1] = ']';
	t = bench_now_s() - t0;
	sink += b.len;
	buf_release(&b);
	return t;
}

static double time_row(const struct float_set *fs)
{
	enum { ROW = 512 };
	char *out = malloc(fs->n * (FMT_FLOAT_MAX + 1) + 1);
	size_t len = 0, i, done;
	double t0, t;

	if (out == NULL)
		die("malloc");
	memset(out, 0, fs->n * (FMT_FLOAT_MAX + 1) + 1); /* page faults before the clock */
	t0 = bench_now_s();
	for (i = 0; i < fs->n; i += ROW)
		len += fmt_floats_shortest(out + len, fs->x + i, fs->n - i < ROW ? fs->n - i : ROW,
					   &done);
	t = bench_now_s() - t0;
	sink += len + (size_t)out[len / 2];
	free(out);
	return t;
}

static double time_digits(const struct float_set *fs)
{
	char out[FMT_FLOAT_MAX];
	size_t total = 0;
	double t0 = bench_now_s();
	size_t i;

	for (i = 0; i < fs->n; i++)
		total += fmt_float_digits(out, fs->x[i], 6);
	sink += total;
	return bench_now_s() - t0;
}

static double time_snprintf(const struct float_set *fs)
{
	char out[32];
	size_t total = 0;
	double t0 = bench_now_s();
	size_t i;

	for (i = 0; i < fs->n; i++)
		total += (size_t)snprintf(out, sizeof out, "%.9g", (double)fs->x[i]);
	sink += total;
	return bench_now_s() - t0;
}

static double time_jansson(const struct float_set *fs)
{
	double t0 = bench_now_s();
	char *s = json_dumps(fs->arr, JSON_COMPACT);
	double t = bench_now_s() - t0;

	if (s == NULL)
		die("json_dumps");
	sink += strlen(s);
	free(s);
	return t;
}

struct timing {
	double median, best; /* ns per float */
};

/* ns per float of one method over REPS runs. */
static struct timing ns_per_float(double (*run)(const struct float_set *),
				  const struct float_set *fs)
{
	double t[REPS];
	size_t r;

	run(fs); /* warm-up: page faults, caches */
	for (r = 0; r < REPS; r++)
		t[r] = 1e9 * run(fs) / (double)fs->n;
	bench_median(t, REPS); /* sorts */
	return (struct timing){t[REPS / 2], t[0]};
}

static const struct method {
	const char *name;
	double (*run)(const struct float_set *);
} methods[] = {
    {"shortest", time_shortest}, {"array", time_array},	       {"row", time_row},
    {"%.9g", time_snprintf},	 {"json_dumps", time_jansson}, {"digits(6)", time_digits},
};

enum { NMETHODS = sizeof methods / sizeof methods[0], NSETS = 2 };

static void bench_floats(const struct float_set *sets)
{
	struct timing t[NMETHODS][NSETS];
	size_t m;
	size_t s;

	for (m = 0; m < NMETHODS; m++)
		for (s = 0; s < NSETS; s++)
			t[m][s] = ns_per_float(methods[m].run, &sets[s]);
	printf("%-11s %14s %9s %14s %9s\n", "method", sets[0].name, "", sets[1].name, "");
	printf("%-11s %14s %9s %14s %9s\n", "", "median", "best", "median", "best");
	for (m = 0; m < NMETHODS; m++)
		printf("%-11s %14.1f %9.1f %14.1f %9.1f\n", methods[m].name, t[m][0].median,
		       t[m][0].best, t[m][1].median, t[m][1].best);
	printf("json_dumps / shortest (median): %.1fx, %.1fx   target >= %.0fx: %s\n",
	       t[4][0].median / t[0][0].median, t[4][1].median / t[0][1].median,
	       TARGET_JANSSON_RATIO,
	       t[4][0].median >= TARGET_JANSSON_RATIO * t[0][0].median &&
		       t[4][1].median >= TARGET_JANSSON_RATIO * t[0][1].median
		   ? "PASS"
		   : "MISS");
	printf("%%.9g / shortest (median):       %.1fx, %.1fx\n", t[3][0].median / t[0][0].median,
	       t[3][1].median / t[0][1].median);
	printf("shortest (median) < %.0f ns:      %s, %s\n", TARGET_NS,
	       t[0][0].median < TARGET_NS ? "PASS" : "MISS",
	       t[0][1].median < TARGET_NS ? "PASS" : "MISS");
	printf("row (median) <= %.0f ns (issue 15): %s, %s\n", TARGET_ROW_NS,
	       t[2][0].median <= TARGET_ROW_NS ? "PASS" : "MISS",
	       t[2][1].median <= TARGET_ROW_NS ? "PASS" : "MISS");
}

/* ---- base64 ---------------------------------------------------------------- */

struct bytes {
	uint8_t *raw;   /* [n] */
	char *text;     /* [base64_encoded_len(n)] */
	uint8_t *back;  /* [n] decoded, or memcpy'd */
	size_t n;
	void (*encode)(char *, const uint8_t *, size_t);
	long long (*decode)(uint8_t *, const char *, size_t, size_t *);
};

static double time_encode(struct bytes *b)
{
	double t0 = bench_now_s();

	b->encode(b->text, b->raw, b->n);
	return bench_now_s() - t0;
}

static double time_decode(struct bytes *b)
{
	size_t bad;
	double t0 = bench_now_s();
	long long got = b->decode(b->back, b->text, base64_encoded_len(b->n), &bad);
	double t = bench_now_s() - t0;

	if (got != (long long)b->n || memcmp(b->back, b->raw, b->n) != 0)
		die("base64 round trip");
	return t;
}

static double time_memcpy(struct bytes *b)
{
	double t0 = bench_now_s();

	memcpy(b->back, b->raw, b->n);
	sink += b->back[b->n / 2];
	return bench_now_s() - t0;
}

/* The median MB/s (10^6 binary bytes per second) of one operation. */
static double mb_per_s(double (*run)(struct bytes *), struct bytes *b)
{
	double t[REPS];
	size_t r;

	run(b);
	for (r = 0; r < REPS; r++)
		t[r] = run(b);
	return (double)b->n / bench_median(t, REPS) / 1e6;
}

/* The kernels of base64.h, the dispatched pair first. */
static const struct {
	const char *name;
	void (*encode)(char *, const uint8_t *, size_t);
	long long (*decode)(uint8_t *, const char *, size_t, size_t *);
	int simd;
} b64_kernels[] = {
	{"base64", base64_encode, base64_decode, 0},
	{"simd", base64_encode_simd, base64_decode_simd, 1},
	{"scalar", base64_encode_scalar, base64_decode_scalar, 0},
	{"ref", base64_encode_ref, base64_decode_ref, 0},
};

static void bench_base64(size_t n)
{
	struct bytes b = {.n = n};
	struct attn_prng g;
	size_t i;
	double cpy;

	b.raw = malloc(n);
	b.text = malloc(base64_encoded_len(n));
	b.back = malloc(n);
	if (b.raw == NULL || b.text == NULL || b.back == NULL)
		die("allocation");
	attn_prng_seed(&g, 99);
	for (i = 0; i < n; i++)
		b.raw[i] = (uint8_t)(attn_prng_next(&g) >> 56);
	cpy = mb_per_s(time_memcpy, &b);
	printf("\nbase64 of %zu MiB (MB/s of binary bytes, median of %d; base64 is the "
	       "dispatched kernel, ref the naive twin)\n",
	       n >> 20, REPS);
	printf("%-8s %10s %10s %12s %12s\n", "kernel", "encode", "decode", "enc/memcpy",
	       "dec/memcpy");
	for (i = 0; i < sizeof b64_kernels / sizeof b64_kernels[0]; i++) {
		double enc, dec;

		if (b64_kernels[i].simd && !base64_simd_available())
			continue;
		b.encode = b64_kernels[i].encode;
		b.decode = b64_kernels[i].decode;
		enc = mb_per_s(time_encode, &b);
		dec = mb_per_s(time_decode, &b);
		printf("%-8s %10.0f %10.0f %11.1f%% %11.1f%%\n", b64_kernels[i].name, enc, dec,
		       100 * enc / cpy, 100 * dec / cpy);
	}
	printf("%-8s %10.0f\n", "memcpy", cpy);
	free(b.raw);
	free(b.text);
	free(b.back);
}

static double time_read(const char *body, size_t len, int pooled);

/* ms to memcpy len bytes (a body's worth, in cache): the floor for reading it */
static double time_copy(const char *body, size_t len)
{
	char *dst = malloc(len);
	double t0, t;

	if (dst == NULL)
		die("allocation");
	memcpy(dst, body, len); /* fault the pages in first */
	t0 = bench_now_s();
	memcpy(dst, body, len);
	t = bench_now_s() - t0;
	sink += (unsigned char)dst[len / 2];
	free(dst);
	return t * 1e3;
}

/*
 * The whole read of a [128, 512] float32 tensor sent as base64 (the l128
 * body with "encoding":"base64" inputs): req_parse (jansson lexes the 350 KB
 * string, then base64_decode) against req_parse_pooled (the scan decodes it
 * into the pool) then api_tensor_read_pool, beside memcpy of the body.
 */
static void bench_base64_parse(void)
{
	enum { ROWS = 128, COLS = 512 };
	float *x = malloc(ROWS * COLS * sizeof(float));
	size_t len = base64_encoded_len(ROWS * COLS * sizeof(float));
	double t[3][REPS], ms[3];
	struct attn_prng g;
	struct buf b;

	if (x == NULL)
		die("allocation");
	attn_prng_seed(&g, 4242);
	for (size_t k = 0; k < ROWS * COLS; k++)
		x[k] = attn_prng_symmetric(&g, 1.0);
	buf_init(&b, (size_t)16 << 20);
	buf_printf(&b, "{\"x\":{\"shape\":[%d,%d],\"base64\":\"", ROWS, COLS);
	base64_encode_f32le(buf_reserve(&b, len), x, ROWS * COLS);
	buf_commit(&b, len);
	buf_puts(&b, "\"}}");
	if (b.failed)
		die("building the base64 body");
	for (int r = 0; r < REPS; r++) {
		t[0][r] = time_read(b.data, b.len, 0);
		t[1][r] = time_read(b.data, b.len, 1);
		t[2][r] = time_copy(b.data, b.len);
	}
	for (int k = 0; k < 3; k++)
		ms[k] = bench_median(t[k], REPS);
	printf("\n[128, 512] float32 as base64 (%zu bytes) to a tensor, median of %d\n", b.len,
	       REPS);
	printf("%-8s %8s %10s %12s\n", "read", "ms", "MB/s", "of memcpy");
	printf("%-8s %8.3f %10.0f %11.1f%%\n", "jansson", ms[0], (double)b.len / ms[0] / 1e3,
	       100 * ms[2] / ms[0]);
	printf("%-8s %8.3f %10.0f %11.1f%%\n", "pooled", ms[1], (double)b.len / ms[1] / 1e3,
	       100 * ms[2] / ms[1]);
	printf("%-8s %8.3f %10.0f %11.1f%%\n", "memcpy", ms[2], (double)b.len / ms[2] / 1e3,
	       100.0);
	printf("pooled / jansson: %.1fx faster\n", ms[0] / ms[1]);
	buf_release(&b);
	free(x);
}

/* ---- small numbers ------------------------------------------------------ */

enum { SMALL_N = 1000000 };

static double time_small(int lib, int fixed)
{
	char out[FMT_FIXED_MAX + 1];
	size_t total = 0;
	double t0 = bench_now_s();

	for (size_t i = 0; i < SMALL_N; i++) {
		double ms = (double)(i * 7919 % 100000) * 1e-3 + 0.0001;
		unsigned long long v = (unsigned long long)i * 2654435761u;

		if (fixed)
			total += lib ? (size_t)snprintf(out, sizeof out, "%.3f", ms) : fmt_fixed(out, ms, 3);
		else
			total += lib ? (size_t)snprintf(out, sizeof out, "%llu", v) : fmt_u64(out, v);
	}
	sink += total;
	return (bench_now_s() - t0) * 1e9 / SMALL_N;
}

static void bench_small(void)
{
	double t[2][2][REPS];

	for (int r = 0; r < REPS; r++)
		for (int fixed = 0; fixed < 2; fixed++)
			for (int lib = 0; lib < 2; lib++)
				t[fixed][lib][r] = time_small(lib, fixed);
	printf("\nsmall numbers, ns per number (median of %d)\n", REPS);
	printf("fmt_fixed %%.3f %6.1f   snprintf %%.3f %6.1f\n", bench_median(t[1][0], REPS),
	       bench_median(t[1][1], REPS));
	printf("fmt_u64        %6.1f   snprintf %%llu %6.1f\n", bench_median(t[0][0], REPS),
	       bench_median(t[0][1], REPS));
}

/* ---- number arrays -------------------------------------------------------- */

/* ms to read body's "x" into a tensor, pooled or not */
static double time_read(const char *body, size_t len, int pooled)
{
	static const char *const fields[] = { "/x", NULL };
	struct fastjson_pool pool = { 0 };
	struct api_tensor t;
	struct api_error err;
	json_t *root;
	double t0 = bench_now_s();

	if (req_parse_pooled(body, len, fields, pooled ? &pool : NULL, &root, &err) != 0 ||
	    api_tensor_read_pool(&pool, json_object_get(root, "x"), "/x", 2, 2, (size_t)1 << 30,
				 0, &t, &err) != 0)
		die("reading the matrix");
	sink += t.n;
	api_tensor_release(&t);
	json_decref(root);
	fastjson_pool_release(&pool);
	return (bench_now_s() - t0) * 1e3;
}

static void bench_arrays(void)
{
	struct buf b;
	double t[2][REPS];
	struct attn_prng g;

	attn_prng_seed(&g, 12345);
	buf_init(&b, (size_t)16 << 20);
	buf_puts(&b, "{\"x\":[");
	for (int i = 0; i < 128; i++) {
		buf_puts(&b, i ? ",[" : "[");
		for (int j = 0; j < 512; j++)
			buf_printf(&b, j ? ",%.4f" : "%.4f",
				   2.0 * (double)(attn_prng_next(&g) >> 11) * 0x1p-53 - 1.0);
		buf_putc(&b, ']');
	}
	buf_puts(&b, "]}");
	if (b.failed)
		die("building the matrix");
	for (int r = 0; r < REPS; r++)
		for (int pooled = 0; pooled < 2; pooled++)
			t[pooled][r] = time_read(b.data, b.len, pooled);
	printf("\n[128, 512] numbers as JSON (%zu bytes) to a tensor, ms (median of %d)\n", b.len,
	       REPS);
	printf("jansson %6.2f   pooled %6.2f   (%.1fx)\n", bench_median(t[0], REPS),
	       bench_median(t[1], REPS), bench_median(t[0], REPS) / bench_median(t[1], REPS));
	buf_release(&b);
}

static void print_load(void)
{
	char line[128] = "unknown";
	FILE *f = fopen("/proc/loadavg", "r");

	if (f != NULL) {
		if (fgets(line, sizeof line, f) == NULL)
			snprintf(line, sizeof line, "unknown\n");
		fclose(f);
	}
	printf("load average: %s", line);
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
	size_t nfloats = quick ? 100000 : 1000000;
	struct float_set sets[NSETS];

	printf("attnd fmt / base64 benchmark%s\n", quick ? " (--quick)" : "");
	print_load();
	float_set_fill(&sets[0], "normal", nfloats, 0);
	float_set_fill(&sets[1], "bits", nfloats, 1);
	printf("\nfloat32 -> JSON number, %zu floats per set, ns per float (median and best "
	       "of %d)\n",
	       nfloats, REPS);
	bench_floats(sets);
	float_set_release(&sets[0]);
	float_set_release(&sets[1]);
	bench_base64(quick ? (size_t)1 << 20 : (size_t)16 << 20);
	bench_base64_parse();
	bench_small();
	bench_arrays();
	return EXIT_SUCCESS;
}
