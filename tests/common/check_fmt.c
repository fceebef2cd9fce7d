/*
 * check_fmt.c: common/fmt.h, the shortest float text the answers are written in.
 *
 *   fmt_float_shortest reads back exactly (strtof) for every bit pattern of
 *   chosen binary exponents (all subnormals, the smallest normals, [1, 2),
 *   [2^23, 2^24), the largest) and for 20 million random finite floats; on
 *   the exponent ranges no decimal one digit shorter reads back; on a million
 *   floats its digit count equals a slow reference (the fewest digits d for
 *   which a d-digit decimal next to x, found with snprintf "%.*e", reads back)
 *   and it is the nearest such decimal; a table of exact strings; every output
 *   is a JSON number jansson reads back. fmt_float_digits against snprintf
 *   "%.*g".
 *
 * Environment:
 *   ATTN_TEST_LIGHT=1      about 1/1000 of the float sweeps; the default under
 *                          valgrind (ATTN_TEST_LIGHT=0 forces the full run)
 *   ATTN_FMT_EXHAUSTIVE=1  adds the sweep over all 2^32 bit patterns, with
 *                          the one-digit-shorter check (minutes, all cores)
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/fmt.h"
#include "common/fmt_kernels.h"
#include "tests/lib/expect.h"
#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"
#include "engine/prng.h"

/* ---- fmt: helpers -------------------------------------------------------- */

static float from_bits(uint32_t u)
{
	float x;

	memcpy(&x, &u, sizeof x);
	return x;
}

static uint32_t to_bits(float x)
{
	uint32_t u;

	memcpy(&u, &x, sizeof u);
	return u;
}

static int finite_bits(uint32_t u)
{
	return (u & 0x7f800000u) != 0x7f800000u;
}

/* fmt_float_shortest into s[FMT_FLOAT_MAX + 1], NUL-terminated. */
static size_t shortest(char *s, float x)
{
	size_t n = fmt_float_shortest(s, x);

	s[n] = '\0';
	return n;
}

/* Whether s is exactly a JSON number (RFC 8259 section 6). */
static int json_number(const char *s)
{
	const char *p = s;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		p += strspn(p, "0123456789");
	else
		return 0;
	if (*p == '.') {
		p++;
		if (strspn(p, "0123456789") == 0)
			return 0;
		p += strspn(p, "0123456789");
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (strspn(p, "0123456789") == 0)
			return 0;
		p += strspn(p, "0123456789");
	}
	return *p == '\0';
}

/* Whether the text s reads back (strtof) as exactly x, sign of zero included. */
static int reads_back(const char *s, float x)
{
	char *end;
	float y = strtof(s, &end);

	return *end == '\0' && end != s && to_bits(y) == to_bits(x);
}

/* Whether the decimal m 10^e, with x's sign, reads back as x. The text is
 * built by hand: the sweeps call this hundreds of millions of times. */
static int decimal_reads_back(uint64_t m, int e, float x)
{
	char digits[24];
	char s[48];
	size_t nd = 0;
	size_t n = 0;
	unsigned ue = (unsigned)(e < 0 ? -e : e);

	do {
		digits[nd++] = (char)('0' + m % 10);
		m /= 10;
	} while (m != 0);
	if (signbit(x))
		s[n++] = '-';
	while (nd > 0)
		s[n++] = digits[--nd];
	s[n++] = 'e';
	if (e < 0)
		s[n++] = '-';
	do {
		digits[nd++] = (char)('0' + ue % 10);
		ue /= 10;
	} while (ue != 0);
	while (nd > 0)
		s[n++] = digits[--nd];
	s[n] = '\0';
	return reads_back(s, x);
}

/* The decimal of a number's text: m 10^e with no trailing zeros in m (m = 0
 * for zero). Returns the count of significant digits of m. */
static int parse_decimal(const char *s, uint64_t *m, int *e)
{
	char d[40];
	int nd = 0;
	int point = -1;
	int first = 0;
	int exp10;
	uint64_t v = 0;
	const char *p;

	for (p = s; *p != '\0' && *p != 'e' && nd < (int)sizeof d; p++) {
		if (*p == '.')
			point = nd;
		else if (*p >= '0' && *p <= '9')
			d[nd++] = *p;
	}
	exp10 = (point < 0 ? 0 : point - nd) + (*p == 'e' ? atoi(p + 1) : 0);
	while (nd > 0 && d[nd - 1] == '0') {
		nd--;
		exp10++;
	}
	while (first < nd && d[first] == '0')
		first++;
	for (int i = first; i < nd; i++)
		v = v * 10 + (uint64_t)(d[i] - '0');
	*m = v;
	*e = exp10;
	return nd - first;
}

/* No decimal with one digit fewer than s reads back as x. The decimals that
 * read back as x form an interval holding x and s; checks the two (n-1)-digit
 * decimals either side of s: any (n-1)-digit one in the interval would lie
 * between x and s (then it is one of the two) or beyond the one on its side,
 * which is then in the interval too. */
static int no_shorter(const char *s, float x)
{
	uint64_t m;
	int e;
	int n = parse_decimal(s, &m, &e);

	if (n < 2)
		return 1;
	return !decimal_reads_back(m / 10, e + 1, x) && !decimal_reads_back(m / 10 + 1, e + 1, x);
}

/*
 * Whether some d-digit decimal reads back as x: the nearest one (snprintf
 * "%.*e", correctly rounded) or its neighbour either side; the interval of
 * decimals reading back as x is convex and holds x, so if any d-digit
 * decimal is in it, one of the two straddling x is. Sets *near_m, *near_e to
 * the nearest, m 10^e.
 */
static int some_digits_read_back(float x, int d, uint64_t *near_m, int *near_e)
{
	char s[64];
	char *dot;
	uint64_t m;
	int x10;
	int e;

	snprintf(s, sizeof s, "%.*e", d - 1, fabs((double)x));
	m = strtoull(s, &dot, 10);
	if (*dot == '.')
		m = m * (uint64_t)pow(10, d - 1) + strtoull(dot + 1, NULL, 10);
	x10 = atoi(strchr(s, 'e') + 1);
	e = x10 - (d - 1); /* |x| ~ m 10^e, 10^(d-1) <= m < 10^d */
	*near_m = m;
	*near_e = e;
	if (decimal_reads_back(m, e, x) || decimal_reads_back(m + 1, e, x))
		return 1;
	if (m == (uint64_t)pow(10, d - 1)) /* below a power of ten, a finer grid */
		return decimal_reads_back(m * 10 - 1, e - 1, x);
	return decimal_reads_back(m - 1, e, x);
}

/* The slow reference: the fewest significant digits (1..9) of a decimal that
 * reads back as x (binary search: if d digits do, d + 1 do). */
static int ref_min_digits(float x, uint64_t *near_m, int *near_e)
{
	int lo = 1;
	int hi = 9;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (some_digits_read_back(x, mid, near_m, near_e))
			hi = mid;
		else
			lo = mid + 1;
	}
	some_digits_read_back(x, lo, near_m, near_e);
	return lo;
}

/* ---- fmt: sweeps over floats, on every core ---------------------------- */

enum check_kind {
	CHECK_READ_BACK,   /* a JSON number that reads back as x */
	CHECK_NO_SHORTER,  /* ... and no decimal one digit shorter does */
	CHECK_REFERENCE,   /* ... and its digit count is the reference's */
};

/* Floats base + i stride (i < count), or random ones when seed != 0: random
 * bit patterns, or for odd i with `normal` the N(0, 1) values attention emits. */
struct sweep {
	uint32_t base, stride;
	uint64_t seed;
	int normal;
	uint64_t lo, hi;      /* this thread's slice of i */
	uint64_t every;       /* `kind` for every every-th i, CHECK_READ_BACK for the rest */
	enum check_kind kind;
	uint64_t failures, checked;
	char why[200];
};

static uint32_t sweep_bits(const struct sweep *w, uint64_t i)
{
	struct attn_prng g;

	if (w->seed == 0)
		return w->base + (uint32_t)i * w->stride;
	attn_prng_seed(&g, w->seed + i);
	if (w->normal && i % 2 == 1)
		return to_bits((float)attn_prng_normal(&g));
	return (uint32_t)(attn_prng_next(&g) >> 32);
}

/* The reference check: the digit count of s is the fewest that read back,
 * and s is the nearest decimal of that many digits when that one reads back
 * (ties to even, as glibc). 0 or -1 with a reason. */
static int check_reference(const char *s, float x, char *why, size_t why_size)
{
	uint64_t m;
	uint64_t near_m;
	int e;
	int near_e;
	int ours;
	int ref;

	if (x == 0.0f)
		return 0;
	ours = parse_decimal(s, &m, &e);
	ref = ref_min_digits(x, &near_m, &near_e);
	if (ours != ref) {
		snprintf(why, why_size, "%d digits, the reference %d", ours, ref);
		return -1;
	}
	if (!decimal_reads_back(near_m, near_e, x))
		return 0;
	while (near_m % 10 == 0) {
		near_m /= 10;
		near_e++;
	}
	if (near_m != m || near_e != e) {
		snprintf(why, why_size, "%llue%d is nearer", (unsigned long long)near_m, near_e);
		return -1;
	}
	return 0;
}

/* 0 when x formats well; else -1 and a reason. */
static int check_float(float x, enum check_kind kind, char *why, size_t why_size)
{
	char s[FMT_FLOAT_MAX + 1];
	char ref_why[80] = "";
	size_t n = shortest(s, x);
	const char *bad = NULL;

	if (n > FMT_FLOAT_MAX || !json_number(s))
		bad = "not a JSON number";
	else if (!reads_back(s, x))
		bad = "does not read back";
	else if (kind == CHECK_NO_SHORTER && !no_shorter(s, x))
		bad = "a shorter decimal reads back";
	else if (kind == CHECK_REFERENCE && check_reference(s, x, ref_why, sizeof ref_why) != 0)
		bad = ref_why;
	if (bad == NULL)
		return 0;
	snprintf(why, why_size, "0x%08x (%.9g) -> \"%s\": %s", (unsigned)to_bits(x), (double)x, s,
		 bad);
	return -1;
}

static void *sweep_run(void *arg)
{
	struct sweep *w = arg;
	uint64_t i;

	for (i = w->lo; i < w->hi; i++) {
		uint32_t u = sweep_bits(w, i);
		enum check_kind kind = i % w->every == 0 ? w->kind : CHECK_READ_BACK;
		char why[sizeof w->why];

		if (!finite_bits(u))
			continue;
		w->checked++;
		if (check_float(from_bits(u), kind, why, sizeof why) == 0)
			continue;
		if (w->failures++ == 0)
			memcpy(w->why, why, sizeof why);
	}
	return NULL;
}

enum { SWEEP_MAX_THREADS = 16 };

/* Runs count floats of `proto` (its slice and results unset) over the cores;
 * fails with the first bad one. Returns how many were finite. */
static uint64_t sweep(const struct sweep *proto, uint64_t count)
{
	struct sweep w[SWEEP_MAX_THREADS];
	pthread_t th[SWEEP_MAX_THREADS];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nt = cores < 1 ? 1 : cores > SWEEP_MAX_THREADS ? SWEEP_MAX_THREADS : (size_t)cores;
	uint64_t checked = 0;
	size_t t;

	for (t = 0; t < nt; t++) {
		w[t] = *proto;
		w[t].every = proto->every > 0 ? proto->every : 1;
		w[t].lo = count / nt * t;
		w[t].hi = t + 1 == nt ? count : count / nt * (t + 1);
		ck_assert_int_eq(pthread_create(&th[t], NULL, sweep_run, &w[t]), 0);
	}
	for (t = 0; t < nt; t++)
		ck_assert_int_eq(pthread_join(th[t], NULL), 0);
	for (t = 0; t < nt; t++) {
		if (w[t].failures > 0)
			ck_abort_msg("%llu failures; first %s", (unsigned long long)w[t].failures,
				     w[t].why);
		checked += w[t].checked;
	}
	return checked;
}

/* ---- fmt: tests ---------------------------------------------------------- */

static const struct {
	uint32_t bits;
	const char *text;
} shortest_table[] = {
	/* texts from a Python brute force over exact rationals, as in the reference */
	{0x00000000, "0"},
	{0x80000000, "-0"},
	{0x3f800000, "1"},
	{0xbf800000, "-1"},
	{0x3dcccccd, "0.1"},
	{0x00000001, "1e-45"}, /* smallest subnormal (Java: 1.4E-45) */
	{0x00000002, "3e-45"},
	{0x00000003, "4e-45"},
	{0x00000007, "1e-44"},
	{0x007fffff, "1.1754942e-38"}, /* largest subnormal */
	{0x00800000, "1.1754944e-38"}, /* FLT_MIN */
	{0x00c00000, "1.7632415e-38"},
	{0x7f7fffff, "3.4028235e38"}, /* FLT_MAX */
	{0x7e967699, "1e38"},
	{0x4ceb79a3, "123456790"}, /* 123456792 */
	{0x6258d727, "1e21"},
	{0x6258d719, "9.99999e20"},
	{0x60ad78ec, "1e20"},
	{0x5f000000, "9.223372e18"},   /* 2^63: exponent form from 1e16 on */
	{0x5a0e1bca, "1e16"},
	{0x58635fa9, "1000000000000000"}, /* 1e15, still plain */
	{0x501502f9, "10000000000"},
	{0x358637bd, "0.000001"},
	{0x3727c5ac, "0.00001"},
	{0x33d6bf95, "1e-7"},
	{0x350637bd, "5e-7"},
	{0x35000000, "4.7683716e-7"}, /* 2^-21 */
	{0x34210fb0, "1.5e-7"},
	{0x3a83126f, "0.001"},
	{0x42f70000, "123.5"},
	{0xc2f6e979, "-123.456"},
	{0x4b800000, "16777216"}, /* 2^24 */
	{0x4b800001, "16777218"},
	{0x4c000001, "33554436"},
	{0x40490fdb, "3.1415927"},
	{0x3eaaaaab, "0.33333334"},
	{0x3f2aaaab, "0.6666667"},
	{0x3e99999a, "0.3"},
	{0x42c80000, "100"},
	{0x477fe000, "65504"},
	{0x3f000000, "0.5"},
	{0x41080000, "8.5"},
	{0x3f800001, "1.0000001"},
	{0x3f7fffff, "0.99999994"},
};

START_TEST(test_fmt_table)
{
	char s[FMT_FLOAT_MAX + 1];
	float x = from_bits(shortest_table[_i].bits);

	shortest(s, x);
	ck_assert_msg(strcmp(s, shortest_table[_i].text) == 0, "0x%08x: \"%s\", expected \"%s\"",
		      (unsigned)shortest_table[_i].bits, s, shortest_table[_i].text);
	ck_assert(reads_back(s, x));
}
END_TEST

START_TEST(test_fmt_specials)
{
	char s[FMT_FLOAT_MAX + 1];

	/* callers must not pass them; what comes out is still JSON */
	ck_assert_uint_eq(fmt_float_shortest(s, NAN), 4);
	ck_assert_int_eq(memcmp(s, "null", 4), 0);
	ck_assert_uint_eq(fmt_float_shortest(s, -INFINITY), 4);
	ck_assert_uint_eq(fmt_float_digits(s, INFINITY, 3), 4);
	ck_assert_int_eq(memcmp(s, "null", 4), 0);
}
END_TEST

/* Every pattern of the binary exponents below reads back; every 8th has no
 * shorter decimal that does. The sign is exercised by the random sweep. */
START_TEST(test_fmt_exponent_ranges)
{
	static const uint32_t biased[] = {0, 1, 127, 150, 254};
	struct sweep w = {.base = biased[_i] << 23, .stride = 1, .every = 8,
			  .kind = CHECK_NO_SHORTER};

	if (test_light())
		w.stride = 1009;
	ck_assert_uint_eq(sweep(&w, (UINT64_C(1) << 23) / w.stride), (UINT64_C(1) << 23) / w.stride);
}
END_TEST

START_TEST(test_fmt_random)
{
	struct sweep w = {.seed = 0x5eed, .kind = CHECK_READ_BACK};
	uint64_t n = test_scaled(20000000);

	ck_assert_uint_gt(sweep(&w, n), n / 2); /* 1 / 256 are not finite */
}
END_TEST

START_TEST(test_fmt_shortest_vs_reference)
{
	struct sweep w = {.seed = 7, .normal = 1, .kind = CHECK_REFERENCE};

	sweep(&w, test_scaled(1000000));
}
END_TEST

/* Half random bit patterns, half the N(0, 1) values attention emits. */
static float random_float(struct attn_prng *g, uint64_t i)
{
	uint32_t u;

	if (i % 2 == 1)
		return (float)attn_prng_normal(g);
	u = (uint32_t)(attn_prng_next(g) >> 32);
	while (!finite_bits(u))
		u = (uint32_t)(attn_prng_next(g) >> 32);
	return from_bits(u);
}

/* Appends "[x0,x1,...]" as fmt_float_shortest writes them. */
static void json_array_of(struct buf *b, const float *x, size_t n)
{
	size_t i;

	buf_putc(b, '[');
	for (i = 0; i < n; i++) {
		char *p = buf_reserve(b, FMT_FLOAT_MAX + 1);

		ck_assert_ptr_nonnull(p);
		buf_commit(b, fmt_float_shortest(p, x[i]));
		if (i + 1 < n)
			buf_putc(b, ',');
	}
	buf_putc(b, ']');
	ck_assert_int_eq(b->failed, 0);
}

START_TEST(test_fmt_json)
{
	size_t ntable = sizeof shortest_table / sizeof shortest_table[0];
	size_t n = (size_t)test_scaled(100000) + ntable;
	float *x = malloc(n * sizeof *x);
	struct attn_prng g;
	struct buf b;
	json_error_t err;
	json_t *arr;
	size_t i;

	ck_assert_ptr_nonnull(x);
	attn_prng_seed(&g, 11);
	for (i = 0; i < n; i++)
		x[i] = i < ntable ? from_bits(shortest_table[i].bits) : random_float(&g, i);
	buf_init(&b, SIZE_MAX);
	json_array_of(&b, x, n);
	/* integers past int64 (1e20 is plain) need reals: JSON allows them */
	arr = json_loads(b.data, JSON_DECODE_INT_AS_REAL, &err);
	ck_assert_msg(arr != NULL, "%s at %d", err.text, err.position);
	ck_assert_uint_eq(json_array_size(arr), n);
	for (i = 0; i < n; i++) {
		float y = (float)json_number_value(json_array_get(arr, i));

		if (to_bits(y) != to_bits(x[i]))
			ck_abort_msg("element %zu: %.9g came back as %.9g", i, (double)x[i],
				     (double)y);
	}
	json_decref(arr);
	buf_release(&b);
	free(x);
}
END_TEST

START_TEST(test_fmt_digits_table)
{
	static const struct {
		uint32_t bits;
		int digits;
		const char *text;
	} cases[] = {
		{0x42f70000, 3, "124"},         /* 123.5: a tie, to even */
		{0x40200000, 1, "2"},           /* 2.5: a tie, to even */
		{0x40600000, 1, "4"},           /* 3.5 */
		{0x3e19999a, 1, "0.2"},         /* 0.15f is 0.150000006 */
		{0x3dcccccd, 9, "0.100000001"}, /* 0.1f */
		{0x7f7fffff, 3, "3.4e38"},
		{0x00000001, 1, "1e-45"},
		{0x00000001, 9, "1.40129846e-45"},
		{0x80000000, 5, "-0"},
		{0x00000000, 5, "0"},
		{0x3f800000, 9, "1"},
		{0x4ceb79a3, 9, "123456792"},
		{0x4ceb79a3, 0, "100000000"}, /* digits clamped to 1..9 */
		{0x4ceb79a3, 12, "123456792"},
		{0xc0490fdb, 4, "-3.142"},
		{0x358637bd, 2, "0.000001"},
		{0x33d6bf95, 2, "1e-7"},
	};
	char s[FMT_FLOAT_MAX + 1];
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t n = fmt_float_digits(s, from_bits(cases[i].bits), cases[i].digits);

		s[n] = '\0';
		ck_assert_msg(strcmp(s, cases[i].text) == 0, "0x%08x %d: \"%s\", expected \"%s\"",
			      (unsigned)cases[i].bits, cases[i].digits, s, cases[i].text);
	}
}
END_TEST

/* fmt_float_digits(x, d) has the value of "%.*g" (d, x), for d = 1..9. */
START_TEST(test_fmt_digits_random)
{
	struct attn_prng g;
	uint64_t n = test_scaled(200000);
	uint64_t i;

	attn_prng_seed(&g, 13);
	for (i = 0; i < n; i++) {
		float x = random_float(&g, i);
		int d = 1 + (int)(i % 9);
		char s[FMT_FLOAT_MAX + 1];
		char ref[48];
		size_t len = fmt_float_digits(s, x, d);
		uint64_t m;
		int e;

		s[len] = '\0';
		snprintf(ref, sizeof ref, "%.*g", d, (double)x);
		if (len > FMT_FLOAT_MAX || !json_number(s) || strtod(s, NULL) != strtod(ref, NULL) ||
		    parse_decimal(s, &m, &e) > d)
			ck_abort_msg("%.9g %d: \"%s\", snprintf \"%s\"", (double)x, d, s, ref);
		if (d == 9 && !reads_back(s, x))
			ck_abort_msg("%.9g: \"%s\" does not read back", (double)x, s);
	}
}
END_TEST

/* fmt_float_digits writes the bytes of its snprintf twin: a light sweep of
 * all bit patterns (every 2048th, from a random offset) and, for every
 * biased exponent (subnormals included), 512 random significands; each at
 * every digit count 1..9. */
static void digits_same(float x, int d)
{
	char s[FMT_FLOAT_MAX + 1], ref[FMT_FLOAT_MAX + 1];
	size_t n = fmt_float_digits(s, x, d), nr = fmt_float_digits_ref(ref, x, d);

	if (n != nr || memcmp(s, ref, n) != 0) {
		s[n] = '\0';
		ref[nr] = '\0';
		ck_abort_msg("0x%08x %d: \"%s\", twin \"%s\"", (unsigned)to_bits(x), d, s, ref);
	}
}

/*
 * fmt_float_shortest against a naive twin built on snprintf: the fewest
 * digits d for which the correctly rounded d-digit decimal
 * (fmt_float_digits_ref) reads back, those bytes. The two may differ only
 * where a shorter decimal than the rounded one lies in x's rounding
 * interval (at a power of two, whose interval is lopsided): then the
 * shortest has fewer digits and reads back.
 */
static void shortest_same(float x, uint64_t *lopsided)
{
	char s[FMT_FLOAT_MAX + 1], ref[FMT_FLOAT_MAX + 1];
	size_t n = shortest(s, x), nr = 0;
	int d;

	for (d = 1; d <= 9; d++) {
		nr = fmt_float_digits_ref(ref, x, d);
		ref[nr] = '\0';
		if (reads_back(ref, x))
			break;
	}
	if (n == nr && memcmp(s, ref, n) == 0)
		return;
	if (reads_back(s, x) && n < nr && (to_bits(x) & 0x7fffffu) == 0) {
		++*lopsided;
		return;
	}
	ck_abort_msg("0x%08x: \"%s\", twin \"%s\"", (unsigned)to_bits(x), s, ref);
}

START_TEST(test_fmt_shortest_twin)
{
	struct attn_prng g;
	uint64_t stride = test_light() ? UINT64_C(1) << 22 : 8192;
	uint64_t count = 0, lopsided = 0;

	attn_prng_seed(&g, 78);
	for (uint64_t u = attn_prng_next(&g) % stride; u < UINT64_C(1) << 32; u += stride)
		if (finite_bits((uint32_t)u) && (u & 0x7fffffffu) != 0) {
			shortest_same(from_bits((uint32_t)u), &lopsided);
			count++;
		}
	for (uint32_t e = 0; e < 255; e++)
		for (int i = 0; i < (test_light() ? 2 : 256); i++) {
			uint32_t u = e << 23 | (uint32_t)(attn_prng_next(&g) >> 41);

			if (i == 0)
				u = e << 23 | (e == 0); /* the power of two (or 1 ulp) */
			shortest_same(from_bits(u | (i % 2 ? 0x80000000u : 0)), &lopsided);
		}
	ck_assert_uint_gt(count, test_light() ? 900 : 500000);
	ck_assert_uint_lt(lopsided, 256);
}
END_TEST

START_TEST(test_fmt_digits_twin)
{
	struct attn_prng g;
	uint64_t stride = test_light() ? UINT64_C(1) << 20 : 2048;
	uint64_t count = 0;

	attn_prng_seed(&g, 77);
	for (uint64_t u = attn_prng_next(&g) % stride; u < UINT64_C(1) << 32; u += stride) {
		if (finite_bits((uint32_t)u)) {
			digits_same(from_bits((uint32_t)u), 1 + (int)(count % 9));
			count++;
		}
	}
	for (uint32_t e = 0; e < 255; e++) {
		for (int i = 0; i < (test_light() ? 4 : 512); i++) {
			uint32_t u = e << 23 | (uint32_t)(attn_prng_next(&g) >> 41);

			for (int d = 1; d <= 9; d++)
				digits_same(from_bits(u | (i % 2 ? 0x80000000u : 0)), d);
		}
	}
	ck_assert_uint_gt(count, test_light() ? 4000 : 2000000);
}
END_TEST

/*
 * fmt_floats_shortest against its naive twin, fmt_float_shortest and a ','
 * per number: rows of random lengths (0 to 300) of random finite bit
 * patterns, some holding a NaN or an infinity (the row stops there), each
 * written into a heap buffer of exactly n * (FMT_FLOAT_MAX + 1) bytes (the
 * documented room: valgrind and ASan catch a write past it). Each row both
 * ways, with the vector kernels where the CPU has them and without
 * (fmt_kernels.h); a quarter of the rows take their patterns from a few
 * exponents (zeros, subnormals, powers of two among them), so that vectors
 * of four plain numbers and vectors the kernels leave to the scalar code
 * both come up.
 */
START_TEST(test_fmt_row_twin)
{
	static const uint32_t nonfinite[3] = {0x7fc00000u, 0x7f800000u, 0xff800000u};
	struct attn_prng g;
	int rows = test_light() ? 50 : 20000;

	attn_prng_seed(&g, 79);
	for (int r = 0; r < rows; r++) {
		size_t n = (size_t)(attn_prng_next(&g) % 301), stop = n, done = 12345, len,
		       want = 0;
		float *x = malloc((n ? n : 1) * sizeof *x);
		char *out = malloc(n * (FMT_FLOAT_MAX + 1) + 1),
		     *ref = malloc(n * FMT_FLOAT_MAX + 1);

		ck_assert(x != NULL && out != NULL && ref != NULL);
		for (size_t i = 0; i < n; i++) {
			uint32_t u = (uint32_t)(attn_prng_next(&g) >> 32);

			if (r % 4 == 1) /* exponents 0, 1, 2 and 254; significands 0, 1 or any */
				u = (u & 0x807fffffu) | ((u >> 23) % 4 == 3 ? 254u : (u >> 23) % 4) << 23;
			if (r % 4 == 1 && u % 3 == 0)
				u &= 0xff800000u | (u >> 12 & 1);
			x[i] = from_bits(finite_bits(u) ? u : u & 0xbfffffffu);
		}
		if (n > 0 && r % 4 == 0) { /* a NaN or an infinity somewhere */
			stop = (size_t)(attn_prng_next(&g) % n);
			x[stop] = from_bits(nonfinite[r / 4 % 3]);
		}
		for (size_t i = 0; i < stop; i++) {
			char one[FMT_FLOAT_MAX];
			size_t k = fmt_float_shortest(one, x[i]);

			memcpy(ref + want, one, k);
			want += k;
			ref[want++] = ',';
		}
		for (int simd = 0; simd <= fmt_simd_available(); simd++) {
			done = 12345;
			len = simd == fmt_simd_available() ? fmt_floats_shortest(out, x, n, &done)
							 : fmt_floats_shortest_with(out, x, n, &done, simd);
			EXPECT_MSG(done == stop, "row %d simd %d: done %zu, expected %zu", r, simd,
				   done, stop);
			EXPECT_MSG(len == want && memcmp(out, ref, len) == 0,
				   "row %d simd %d: \"%.*s\", twin \"%.*s\"", r, simd, (int)len, out,
				   (int)want, ref);
		}
		free(x);
		free(out);
		free(ref);
	}
}
END_TEST

/*
 * Integers below 2^24 print as their digits ("%u", "-%u"): fmt.c finds them
 * with the general algorithm, not the paper's fast path for integers, so an
 * integer's decimal with a trailing zero more (12345670 10^-1) must come out
 * the same. Every third (every 997th in light mode) and each power of two.
 */
START_TEST(test_fmt_integers)
{
	uint32_t stride = test_light() ? 997 : 3;
	char s[FMT_FLOAT_MAX + 1], want[16];
	uint64_t count = 0;

	for (uint32_t i = 1; i <= UINT32_C(1) << 24;
	     i += i < 16 || (i & (i - 1)) == 0 ? 1 : stride) {
		shortest(s, (float)i);
		snprintf(want, sizeof want, "%u", (unsigned)i);
		EXPECT_MSG(strcmp(s, want) == 0, "%u: \"%s\"", (unsigned)i, s);
		shortest(s, -(float)i);
		EXPECT_MSG(s[0] == '-' && strcmp(s + 1, want) == 0, "-%u: \"%s\"", (unsigned)i,
			   s);
		count++;
	}
	ck_assert_uint_gt(count, test_light() ? 16000 : 5000000);
}
END_TEST

/* All 2^32 patterns read back, and every 16th has no shorter decimal that
 * does; only when asked for (ATTN_FMT_EXHAUSTIVE=1), as it takes minutes. */
START_TEST(test_fmt_exhaustive)
{
	const char *v = getenv("ATTN_FMT_EXHAUSTIVE");
	struct sweep w = {.stride = 1, .every = 16, .kind = CHECK_NO_SHORTER};

	if (v == NULL || strcmp(v, "1") != 0)
		return;
	/* all but the 2^24 patterns of NaNs and infinities */
	ck_assert_uint_eq(sweep(&w, UINT64_C(1) << 32), (UINT64_C(1) << 32) - (UINT64_C(1) << 24));
}
END_TEST

static Suite *fmt_suite(void)
{
	Suite *s = suite_create("fmt");
	TCase *tf = tcase_create("fmt");

	tcase_set_timeout(tf, 3600); /* the exhaustive sweep, when asked for */
	tcase_add_loop_test(tf, test_fmt_table, 0,
			    (int)(sizeof shortest_table / sizeof shortest_table[0]));
	tcase_add_test(tf, test_fmt_specials);
	tcase_add_loop_test(tf, test_fmt_exponent_ranges, 0, 5);
	tcase_add_test(tf, test_fmt_random);
	tcase_add_test(tf, test_fmt_shortest_vs_reference);
	tcase_add_test(tf, test_fmt_json);
	tcase_add_test(tf, test_fmt_digits_table);
	tcase_add_test(tf, test_fmt_digits_random);
	tcase_add_test(tf, test_fmt_digits_twin);
	tcase_add_test(tf, test_fmt_shortest_twin);
	tcase_add_test(tf, test_fmt_row_twin);
	tcase_add_test(tf, test_fmt_integers);
	tcase_add_test(tf, test_fmt_exhaustive);
	suite_add_tcase(s, tf);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, fmt_suite, NULL);
}
