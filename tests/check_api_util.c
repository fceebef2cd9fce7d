/*
 * check_api_util.c: the API layer's leaf utilities.
 *
 *   buf     api/buf.h: growth, the hard maximum, sticky `failed`, printf,
 *           reserve / commit, detach, release
 *   fmt     api/fmt.h: fmt_float_shortest reads back exactly (strtof) for
 *           every bit pattern of chosen binary exponents (all subnormals, the
 *           smallest normals, [1, 2), [2^23, 2^24), the largest) and for 20
 *           million random finite floats; on the exponent ranges no decimal
 *           one digit shorter reads back; on a million floats its digit count
 *           equals a slow reference (the fewest digits d for which a d-digit
 *           decimal next to x, found with snprintf "%.*e", reads back) and it
 *           is the nearest such decimal; a table of exact strings; every
 *           output is a JSON number jansson reads back. fmt_float_digits
 *           against snprintf "%.*g".
 *   base64  api/base64.h: RFC 4648 section 10 vectors, random round trips of
 *           lengths 0..100, a table of invalid inputs with the offset each
 *           reports, and every bad byte at every offset
 *   error   api/error.h: the body parses (jansson) with its fields, escaping,
 *           truncation to whole UTF-8 characters
 *
 * Environment:
 *   ATTN_TEST_LIGHT=1      about 1/1000 of the float sweeps; the default under
 *                          valgrind (ATTN_TEST_LIGHT=0 forces the full run)
 *   ATTN_FMT_EXHAUSTIVE=1  adds the sweep over all 2^32 bit patterns, with
 *                          the one-digit-shorter check (minutes, all cores)
 * Buffers handed to the decoders are malloc'd at their exact size, so a write
 * past the end is an ASan or valgrind error.
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

#include "base64.h"
#include "buf.h"
#include "error.h"
#include "fmt.h"
#include "light.h"
#include "prng.h"

/* ---- buf --------------------------------------------------------------- */

static void assert_terminated(const struct buf *b)
{
	ck_assert_ptr_nonnull(b->data);
	ck_assert_uint_eq(strlen(b->data), b->len);
}

START_TEST(test_buf_basic)
{
	struct buf b;

	buf_init(&b, 1000);
	assert_terminated(&b);
	ck_assert_str_eq(b.data, "");
	ck_assert_int_eq(buf_append(&b, "ab", 2), 0);
	ck_assert_int_eq(buf_puts(&b, "cd"), 0);
	ck_assert_int_eq(buf_putc(&b, 'e'), 0);
	ck_assert_int_eq(buf_append(&b, NULL, 0), 0);
	ck_assert_str_eq(b.data, "abcde");
	ck_assert_uint_eq(b.len, 5);
	ck_assert_int_eq(b.failed, 0);
	buf_reset(&b);
	assert_terminated(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(buf_puts(&b, "x"), 0);
	ck_assert_str_eq(b.data, "x");
	buf_release(&b);
	assert_terminated(&b);
	buf_release(&b); /* twice is fine */
	buf_release(NULL);
}
END_TEST

START_TEST(test_buf_growth)
{
	struct buf b;
	size_t bad = 0;
	size_t i;

	buf_init(&b, 100000);
	for (i = 0; i < 100000; i++)
		bad += buf_putc(&b, (char)('a' + i % 26)) != 0;
	ck_assert_uint_eq(bad, 0);
	ck_assert_uint_eq(b.len, 100000);
	ck_assert_uint_le(b.cap, 100001);
	for (i = 0; i < 100000; i++)
		bad += b.data[i] != 'a' + (int)(i % 26);
	ck_assert_uint_eq(bad, 0);
	ck_assert_int_eq(b.data[b.len], '\0');
	ck_assert_int_eq(buf_putc(&b, 'z'), -1);
	buf_release(&b);
}
END_TEST

START_TEST(test_buf_max)
{
	struct buf b;

	buf_init(&b, 10);
	ck_assert_int_eq(buf_puts(&b, "0123456789"), 0); /* exactly max */
	ck_assert_int_eq(buf_putc(&b, 'x'), -1);
	ck_assert_int_eq(b.failed, 1);
	ck_assert_str_eq(b.data, "0123456789");
	ck_assert_uint_eq(b.cap, 11);
	buf_reset(&b);
	ck_assert_int_eq(b.failed, 0);
	ck_assert_int_eq(buf_append(&b, "0123456789A", 11), -1); /* one over */
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(b.data, "");
	buf_release(&b);

	buf_init(&b, 0);
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	ck_assert_int_eq(buf_putc(&b, 'x'), -1);
	assert_terminated(&b);
	buf_release(&b);

	/* sizes that would overflow fail without allocating */
	buf_init(&b, SIZE_MAX);
	ck_assert_int_eq(buf_puts(&b, "abc"), 0);
	ck_assert_int_eq(buf_append(&b, "", SIZE_MAX), -1);
	ck_assert_int_eq(b.failed, 1);
	buf_reset(&b);
	ck_assert_ptr_null(buf_reserve(&b, SIZE_MAX));
	ck_assert_str_eq(b.data, "");
	buf_release(&b);
}
END_TEST

START_TEST(test_buf_sticky)
{
	struct buf b;

	buf_init(&b, 8);
	ck_assert_int_eq(buf_puts(&b, "abcdef"), 0);
	ck_assert_int_eq(buf_puts(&b, "ghi"), -1);
	/* every later write fails, even one that would fit */
	ck_assert_int_eq(buf_putc(&b, 'g'), -1);
	ck_assert_int_eq(buf_append(&b, "", 0), -1);
	ck_assert_int_eq(buf_printf(&b, "%d", 1), -1);
	ck_assert_ptr_null(buf_reserve(&b, 1));
	ck_assert_int_eq(b.failed, 1);
	ck_assert_str_eq(b.data, "abcdef");
	ck_assert_uint_eq(b.len, 6);
	buf_reset(&b);
	ck_assert_int_eq(buf_putc(&b, 'g'), 0);
	ck_assert_str_eq(b.data, "g");
	buf_release(&b);
}
END_TEST

START_TEST(test_buf_printf)
{
	struct buf b;
	char big[600];

	buf_init(&b, 1000);
	ck_assert_int_eq(buf_printf(&b, "%s=%d", "n", 42), 0);
	ck_assert_str_eq(b.data, "n=42");
	ck_assert_int_eq(buf_printf(&b, "%s", ""), 0);
	ck_assert_str_eq(b.data, "n=42");
	/* past the first allocation: formatted twice */
	ck_assert_int_eq(buf_printf(&b, ";%0500d", 7), 0);
	ck_assert_uint_eq(b.len, 4 + 1 + 500);
	memset(big, '0', 499);
	big[499] = '7';
	big[500] = '\0';
	ck_assert_int_eq(memcmp(b.data + 5, big, 500), 0);
	assert_terminated(&b);
	/* past max: fails, contents (and the NUL) as they were */
	ck_assert_int_eq(buf_printf(&b, "%0600d", 1), -1);
	ck_assert_uint_eq(b.len, 505);
	assert_terminated(&b);
	ck_assert_int_eq(memcmp(b.data, "n=42;0", 6), 0);
	buf_release(&b);

	buf_init(&b, 3); /* fits in the first allocation but not under max */
	ck_assert_int_eq(buf_printf(&b, "%d", 12345), -1);
	assert_terminated(&b);
	ck_assert_uint_eq(b.len, 0);
	buf_release(&b);
}
END_TEST

START_TEST(test_buf_reserve_commit)
{
	struct buf b;
	char *p;

	buf_init(&b, 100);
	ck_assert_int_eq(buf_puts(&b, "ab"), 0);
	p = buf_reserve(&b, 50);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_eq(p, b.data + 2);
	memcpy(p, "cdefg", 5);
	buf_commit(&b, 5);
	ck_assert_str_eq(b.data, "abcdefg");
	buf_commit(&b, 0);
	ck_assert_uint_eq(b.len, 7);
	ck_assert_ptr_nonnull(buf_reserve(&b, 93)); /* up to max exactly */
	ck_assert_ptr_null(buf_reserve(&b, 94));
	ck_assert_int_eq(b.failed, 1);
	ck_assert_str_eq(b.data, "abcdefg");
	buf_release(&b);
}
END_TEST

START_TEST(test_buf_detach)
{
	struct buf b;
	size_t len = 99;
	char *p;

	buf_init(&b, 100);
	p = buf_detach(&b, &len); /* nothing held: still a free()able "" */
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p, "");
	ck_assert_uint_eq(len, 0);
	free(p);

	ck_assert_int_eq(buf_puts(&b, "hello"), 0);
	p = buf_detach(&b, &len);
	ck_assert_str_eq(p, "hello");
	ck_assert_uint_eq(len, 5);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_uint_eq(b.cap, 0);
	ck_assert_uint_eq(b.max, 100);
	assert_terminated(&b);
	free(p);

	ck_assert_int_eq(buf_puts(&b, "again"), 0); /* usable after detach */
	p = buf_detach(&b, NULL);
	ck_assert_str_eq(p, "again");
	free(p);
	buf_release(&b);
}
END_TEST

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

/* ---- base64 -------------------------------------------------------------- */

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static const struct {
	const char *raw, *b64;
} rfc4648[] = {
	{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},         {"foo", "Zm9v"},
	{"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
};

/* Decodes s[0..n) into an exact-size heap buffer; returns the result. */
static long long decode(const char *s, size_t n, uint8_t **out, size_t *bad_at)
{
	*out = malloc(n / 4 * 3 + 1); /* +1: malloc(0) may return NULL */
	ck_assert_ptr_nonnull(*out);
	return base64_decode(*out, s, n, bad_at);
}

START_TEST(test_base64_rfc4648)
{
	const char *raw = rfc4648[_i].raw;
	const char *b64 = rfc4648[_i].b64;
	size_t n = strlen(raw);
	size_t len = base64_encoded_len(n);
	char *enc = malloc(len + 1);
	uint8_t *dec;
	size_t bad = 12345;

	ck_assert_uint_eq(len, strlen(b64));
	base64_encode(enc, (const uint8_t *)raw, n);
	ck_assert_int_eq(memcmp(enc, b64, len), 0);
	ck_assert_int_eq(decode(b64, len, &dec, &bad), (long long)n);
	ck_assert_int_eq(memcmp(dec, raw, n), 0);
	ck_assert_uint_eq(bad, 12345); /* untouched on success */
	free(dec);
	free(enc);
}
END_TEST

START_TEST(test_base64_len)
{
	ck_assert_uint_eq(base64_encoded_len(0), 0);
	ck_assert_uint_eq(base64_encoded_len(1), 4);
	ck_assert_uint_eq(base64_encoded_len(3), 4);
	ck_assert_uint_eq(base64_encoded_len(4), 8);
	ck_assert_uint_eq(base64_encoded_len(SIZE_MAX / 4 * 3), SIZE_MAX / 4 * 4);
	ck_assert_uint_eq(base64_encoded_len(SIZE_MAX), SIZE_MAX); /* saturates */
}
END_TEST

START_TEST(test_base64_round_trip)
{
	struct attn_prng g;
	size_t rep;

	attn_prng_seed(&g, 17);
	for (rep = 0; rep < 2020; rep++) {
		size_t n = rep < 101 ? rep : (size_t)(attn_prng_next(&g) % 101);
		uint8_t *raw = malloc(n + 1);
		size_t len = base64_encoded_len(n);
		char *enc = malloc(len + 1);
		uint8_t *dec;
		size_t bad;
		size_t i;

		ck_assert_ptr_nonnull(raw);
		ck_assert_ptr_nonnull(enc);
		for (i = 0; i < n; i++)
			raw[i] = (uint8_t)(rep < 256 && n > 0 ? (rep + i) : attn_prng_next(&g));
		base64_encode(enc, raw, n);
		for (i = 0; i < len; i++) {
			int ok = (enc[i] != '\0' && strchr(b64_alphabet, enc[i]) != NULL) ||
				 (enc[i] == '=' && i + 2 >= len);

			if (!ok)
				ck_abort_msg("length %zu: '%c' at %zu", n, enc[i], i);
		}
		ck_assert_int_eq(decode(enc, len, &dec, &bad), (long long)n);
		ck_assert_int_eq(memcmp(dec, raw, n), 0);
		free(dec);
		free(enc);
		free(raw);
	}
}
END_TEST

static const struct {
	const char *in;
	size_t len; /* 0: strlen */
	size_t bad_at;
} b64_invalid[] = {
	{"Z", 0, 1},  /* ends inside a quantum: the end */
	{"Zm9", 0, 3},
	{"Zg=", 0, 3},
	{"Zm9vYg=", 0, 7},
	{"Zm9vZ", 0, 5},
	{"Zm9v!", 0, 4}, /* outside the alphabet */
	{"Zm9v Zg==", 0, 4},
	{"Zm9v\nZg==", 0, 4},
	{"Zm9vZg==\n", 0, 8}, /* a trailing newline: at the newline */
	{" Zm9", 0, 0},
	{"Zm9vYmFy-_A=", 0, 8}, /* the URL-safe alphabet */
	{"YWJj\x80", 0, 4},
	{"ab\0d", 4, 2},
	{"=AAA", 0, 0}, /* '=' in the first two places */
	{"A===", 0, 1},
	{"====", 0, 0},
	{"Zm9v=", 0, 4},
	{"Zg===", 0, 4},
	{"Zm9v====", 0, 4},
	{"Zg=A", 0, 2}, /* a '=' run not ending the input: its first '=' */
	{"Zg==A", 0, 2},
	{"Zg=!", 0, 3},
	{"Zg==Zg==", 0, 2},
	{"Zg==\nAAA", 0, 4},
	{"Zg==AAA=", 0, 2},
	{"Zm9=Zg==", 0, 3},
	{"Zh==", 0, 1}, /* nonzero pad bits: 'h' = 100001 */
	{"Zm9=", 0, 2}, /* '9' = 111101 */
	{"Zm9vZh==", 0, 5},
	{"Zh=", 0, 1},
};

START_TEST(test_base64_invalid)
{
	const char *in = b64_invalid[_i].in;
	size_t n = b64_invalid[_i].len > 0 ? b64_invalid[_i].len : strlen(in);
	uint8_t *dec;
	size_t bad = 12345;

	ck_assert_int_eq(decode(in, n, &dec, &bad), -1);
	ck_assert_msg(bad == b64_invalid[_i].bad_at, "\"%s\": bad_at %zu, expected %zu", in, bad,
		      b64_invalid[_i].bad_at);
	free(dec);
}
END_TEST

/* Every byte outside the alphabet at every offset of a valid input. */
START_TEST(test_base64_every_bad_byte)
{
	static const char valid[] = "Zm9vYmFyYmF6cXV4"; /* "foobarbazqux" */
	char s[sizeof valid];
	size_t n = sizeof valid - 1;
	size_t i;
	int c;

	for (i = 0; i < n; i++) {
		for (c = 0; c < 256; c++) {
			uint8_t *dec;
			size_t bad = 12345;

			if (c != 0 && strchr(b64_alphabet, c) != NULL)
				continue;
			if (c == '=' && i + 1 == n)
				continue; /* "cXV=": its pad bits, a case of the table */
			memcpy(s, valid, sizeof s);
			s[i] = (char)c;
			ck_assert_int_eq(decode(s, n, &dec, &bad), -1);
			ck_assert_msg(bad == i, "byte %d at %zu: bad_at %zu", c, i, bad);
			free(dec);
		}
	}
}
END_TEST

/* ---- error --------------------------------------------------------------- */

/* Parses b's JSON and returns the "error" object's member `key` (borrowed
 * from *root, which the caller decrefs), or NULL when absent. */
static const char *error_member(const struct buf *b, json_t **root, const char *key)
{
	json_error_t err;
	json_t *obj;

	*root = json_loads(b->data, 0, &err);
	ck_assert_msg(*root != NULL, "%s: %s", b->data, err.text);
	ck_assert_uint_eq(json_object_size(*root), 1);
	obj = json_object_get(*root, "error");
	ck_assert_ptr_nonnull(obj);
	obj = json_object_get(obj, key);
	if (obj == NULL)
		return NULL;
	ck_assert(json_is_string(obj));
	return json_string_value(obj);
}

START_TEST(test_error_body)
{
	struct api_error e;
	struct buf b;
	json_t *root;

	ck_assert_int_eq(api_fail(&e, 422, "bad_shape", "/input/2/5", "expected %d values, got %s",
				  8, "7"),
			 -1);
	ck_assert_int_eq(e.status, 422);
	ck_assert_str_eq(e.code, "bad_shape");
	ck_assert_str_eq(e.message, "expected 8 values, got 7");
	ck_assert_str_eq(e.pointer, "/input/2/5");
	buf_init(&b, 4096);
	api_error_body(&e, &b);
	ck_assert_str_eq(b.data, "{\"error\":{\"code\":\"bad_shape\",\"message\":"
				 "\"expected 8 values, got 7\",\"pointer\":\"/input/2/5\"}}");
	ck_assert_str_eq(error_member(&b, &root, "code"), "bad_shape");
	json_decref(root);
	ck_assert_str_eq(error_member(&b, &root, "message"), "expected 8 values, got 7");
	json_decref(root);
	ck_assert_str_eq(error_member(&b, &root, "pointer"), "/input/2/5");
	json_decref(root);

	/* no pointer: the member is left out; NULL code: "internal_error" */
	api_fail(&e, 404, NULL, NULL, "no model \"%s\"", "x\ty");
	ck_assert_str_eq(e.pointer, "");
	buf_reset(&b);
	api_error_body(&e, &b);
	ck_assert_str_eq(b.data, "{\"error\":{\"code\":\"internal_error\","
				 "\"message\":\"no model \\\"x\\ty\\\"\"}}");
	ck_assert_ptr_null(error_member(&b, &root, "pointer"));
	json_decref(root);
	ck_assert_str_eq(error_member(&b, &root, "message"), "no model \"x\ty\"");
	json_decref(root);
	buf_release(&b);
}
END_TEST

START_TEST(test_error_escaping)
{
	char s[0x80];
	struct buf b;
	json_error_t err;
	json_t *v;
	int c;

	buf_init(&b, 4096);
	api_json_string(&b, "a\"b\\c\b\f\n\r\t\x01\x1f\x7f/\xc3\xa9");
	ck_assert_str_eq(b.data, "\"a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\\u001f\x7f/\xc3\xa9\"");
	buf_reset(&b);
	api_json_string(&b, NULL);
	api_json_string(&b, "");
	ck_assert_str_eq(b.data, "\"\"\"\"");

	/* every byte 1..0x7f round-trips through jansson */
	for (c = 1; c < 0x80; c++)
		s[c - 1] = (char)c;
	s[0x7f] = '\0';
	buf_reset(&b);
	api_json_string(&b, s);
	v = json_loads(b.data, JSON_DECODE_ANY, &err);
	ck_assert_msg(v != NULL, "%s", err.text);
	ck_assert_str_eq(json_string_value(v), s);
	json_decref(v);

	/* a full buffer: sticky failure, nothing half-written past max */
	buf_release(&b);
	buf_init(&b, 5);
	api_json_string(&b, "abcdef");
	ck_assert_int_eq(b.failed, 1);
	ck_assert_uint_le(b.len, 5);
	buf_release(&b);
}
END_TEST

START_TEST(test_error_truncation)
{
	struct api_error e;
	char long_ascii[1000];
	char long_utf8[1001];
	char long_euro[1000];
	struct buf b;
	json_t *root;
	size_t i;

	memset(long_ascii, 'a', sizeof long_ascii - 1);
	long_ascii[sizeof long_ascii - 1] = '\0';
	for (i = 0; i + 2 <= 1000; i += 2)
		memcpy(long_utf8 + i, "\xc3\xa9", 2); /* U+00E9, two bytes */
	long_utf8[1000] = '\0';
	for (i = 0; i + 3 < sizeof long_euro; i += 3)
		memcpy(long_euro + i, "\xe2\x82\xac", 3); /* U+20AC, three bytes */
	long_euro[i] = '\0';

	api_fail(&e, 400, "x", long_ascii, "%s", long_ascii);
	ck_assert_uint_eq(strlen(e.message), sizeof e.message - 1);
	ck_assert_uint_eq(strlen(e.pointer), sizeof e.pointer - 1);

	/* 255 and 191 bytes would split a character: cut back to 254 and 190 */
	api_fail(&e, 400, "x", long_utf8, "%s", long_utf8);
	ck_assert_uint_eq(strlen(e.message), 254);
	ck_assert_uint_eq(strlen(e.pointer), 190);
	api_fail(&e, 400, "x", long_utf8 + 2, "a%s", long_utf8); /* odd: whole at 255 */
	ck_assert_uint_eq(strlen(e.message), 255);
	buf_init(&b, 4096);
	api_error_body(&e, &b);
	ck_assert_ptr_nonnull(error_member(&b, &root, "message")); /* valid UTF-8 */
	json_decref(root);

	api_fail(&e, 400, "x", "", "a%s", long_euro); /* 1 + 84 * 3 = 253 */
	ck_assert_uint_eq(strlen(e.message), 253);
	buf_reset(&b);
	api_error_body(&e, &b);
	ck_assert_ptr_nonnull(error_member(&b, &root, "message"));
	json_decref(root);
	buf_release(&b);
}
END_TEST

static Suite *api_util_suite(void)
{
	Suite *s = suite_create("api_util");
	TCase *tb = tcase_create("buf");
	TCase *tf = tcase_create("fmt");
	TCase *t64 = tcase_create("base64");
	TCase *te = tcase_create("error");

	tcase_add_test(tb, test_buf_basic);
	tcase_add_test(tb, test_buf_growth);
	tcase_add_test(tb, test_buf_max);
	tcase_add_test(tb, test_buf_sticky);
	tcase_add_test(tb, test_buf_printf);
	tcase_add_test(tb, test_buf_reserve_commit);
	tcase_add_test(tb, test_buf_detach);
	suite_add_tcase(s, tb);

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
	tcase_add_test(tf, test_fmt_exhaustive);
	suite_add_tcase(s, tf);

	tcase_add_loop_test(t64, test_base64_rfc4648, 0,
			    (int)(sizeof rfc4648 / sizeof rfc4648[0]));
	tcase_add_test(t64, test_base64_len);
	tcase_add_test(t64, test_base64_round_trip);
	tcase_add_loop_test(t64, test_base64_invalid, 0,
			    (int)(sizeof b64_invalid / sizeof b64_invalid[0]));
	tcase_add_test(t64, test_base64_every_bad_byte);
	suite_add_tcase(s, t64);

	tcase_add_test(te, test_error_body);
	tcase_add_test(te, test_error_escaping);
	tcase_add_test(te, test_error_truncation);
	suite_add_tcase(s, te);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(api_util_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
