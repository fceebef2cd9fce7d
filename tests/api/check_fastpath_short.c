/*
 * check_fastpath_short.c: fastjson's row loop on its short path (numbers
 * -?D.F read by decfloat_read_short, placed by the comma map of commas.h)
 * must change nothing but the time it takes: tensors read through the pool
 * are bit-identical to jansson's, errors identical.
 *
 *   shapes   every fraction length 1 to 20 (around the 8- and 16-byte
 *            reads) with every separator, near float32 midpoints among
 *            them; rows switching between the short path and the general
 *            one (integers, exponents, two-digit integer parts, 19 digits),
 *            read as floats and as integers (the error names the row's
 *            first real)
 *   spoiled  a long row with one separator changed (a second comma, blanks,
 *            a control character, a bracket, an exponent, a missing comma)
 *   cut      a body cut off right after, inside or between its last numbers,
 *            from an exact-size copy (valgrind and ASan see any overread)
 *   commas   commas64 against its naive twin commas64_ref
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/commas.h"
#include "api/json/json_tensor.h"
#include "common/buf.h"
#include "engine/prng.h"
#include "tests/lib/pool_twins.h"
#include "tests/lib/suite_main.h"

/* reproducible test data: the engine's generator (engine/prng.h) */
static struct attn_prng rng_g = {0x5eed5a0f7c0ffee1ULL};

static uint64_t rng(void)
{
	return attn_prng_next(&rng_g);
}

static double rng_unit(void) /* in [0, 1) */
{
	return attn_prng_uniform(&rng_g);
}

/* -?D.F with f fraction digits, the shape of decfloat_read_short; one in
 * eight a float32 midpoint in (-10, 10) moved by a unit of the last digit
 * or two (its guard band). */
static void put_fixed(struct buf *b, int f)
{
	if (rng() % 8 == 0) {
		float x = (float)((rng_unit() - 0.5) * 20.0);
		double tie = ((double)x + (double)nextafterf(x, INFINITY)) / 2;
		long nudge = (long)(rng() % 5) - 2;
		char s[64];
		int n = snprintf(s, sizeof s, "%.*f", f, tie);

		if (n > 0 && s[n - 1] + nudge >= '0' && s[n - 1] + nudge <= '9')
			s[n - 1] = (char)(s[n - 1] + nudge);
		buf_puts(b, s);
		return;
	}
	buf_printf(b, "%s%d.", rng() % 2 ? "-" : "", (int)(rng() % 10));
	for (int i = 0; i < f; i++)
		buf_putc(b, (char)('0' + rng() % 10));
}

/* Numbers of every fraction length 1 to 20 (around the 8-byte words of
 * decfloat_read_short), each length a body of two rows with every
 * separator, near-midpoints among them: the same floats as jansson's.
 * Then rows that switch between the short path and the general one
 * (integers, exponents, two-digit integer parts, 19-digit fractions), and
 * an integer-only read, whose error names the row's first real. */
START_TEST(test_bits_short_shapes)
{
	static const char *const seps[] = {",", ", ", " ,", ",\n  ", "\t,\r\n", " , "};
	static const char *const others[] = {
	    "7", "-12", "1e-3", "2.5E+1", "12.5", "-99.125", "0.1234567890123456789", "3", "0"};

	for (int f = 1; f <= 20; f++) {
		struct buf b;

		buf_init(&b, 1 << 20);
		buf_puts(&b, "{\"x\":[");
		for (int r = 0; r < 2; r++) {
			buf_puts(&b, r ? ",[" : "[");
			for (int i = 0; i < 70; i++) {
				if (i > 0)
					buf_puts(
					    &b,
					    seps[(size_t)(i + f) % (sizeof seps / sizeof seps[0])]);
				put_fixed(&b, f);
			}
			buf_putc(&b, ']');
		}
		buf_puts(&b, "]}");
		ck_assert(!b.failed);
		ck_assert_uint_eq(pool_same_tensor(b.data, "/x", 0), 2);
		buf_release(&b);
	}
	for (int round = 0; round < 50; round++) {
		struct buf b;

		buf_init(&b, 1 << 20);
		buf_puts(&b, "{\"x\":[[");
		for (int i = 0; i < 80; i++) {
			if (i > 0)
				buf_putc(&b, ',');
			if (i < round % 7 || rng() % 4 == 0)
				buf_puts(&b, others[rng() % (sizeof others / sizeof others[0])]);
			else
				put_fixed(&b, 1 + (int)(rng() % 18));
		}
		buf_puts(&b, "]]}");
		ck_assert(!b.failed);
		ck_assert_uint_eq(pool_same_tensor(b.data, "/x", 0), 1);
		pool_same_tensor(b.data, "/x", API_T_INTEGER);
		buf_release(&b);
	}
}
END_TEST

/* A long row of the short shape with one separator spoiled or changed
 * somewhere (a second comma, blanks around it, a missing one, a bracket,
 * an exponent): the same tensor or the same error as jansson's. */
START_TEST(test_bits_short_spoiled)
{
	static const char *const seps[] = {",,",  ", ,",  " ,",	  ",  ",     ",\t",  "",
					   "]",	  ",]",	  "e5,",  "e,",	     ".,",   ",-",
					   ",+1", ", 1,", ",01,", ",\"a\",", ",\x01"};

	for (size_t k = 0; k < sizeof seps / sizeof seps[0]; k++)
		for (int at = 0; at < 200; at += 37) {
			struct buf b;

			buf_init(&b, 1 << 20);
			buf_puts(&b, "{\"x\":[[");
			for (int i = 0; i < 200; i++) {
				if (i > 0)
					buf_puts(&b, i == at ? seps[k] : ",");
				put_fixed(&b, 1 + (i * 5 + (int)k) % 18);
			}
			buf_puts(&b, "],[0.5");
			for (int i = 1; i < 64; i++)
				buf_puts(&b, ",0.25");
			buf_puts(&b, "]]}");
			ck_assert(!b.failed);
			pool_same_tensor(b.data, "/x", 0);
			buf_release(&b);
		}
}
END_TEST

/* commas64 (SSE2 where there is SSE2) against its twin, on bytes that are
 * mostly ',' or digits, at every offset of a buffer. */
START_TEST(test_commas64)
{
	char text[256];

	for (int round = 0; round < 2000; round++) {
		for (size_t i = 0; i < sizeof text; i++) {
			uint64_t r = rng();

			text[i] = r % 3 == 0   ? ','
				  : r % 7 == 0 ? (char)(r >> 8)
					       : (char)('0' + r % 10);
		}
		for (size_t at = 0; at + 64 <= sizeof text; at += 1 + (size_t)(rng() % 13))
			ck_assert_uint_eq(commas64(text + at), commas64_ref(text + at));
	}
}
END_TEST

/* A body cut anywhere in its last numbers (so it ends right after a
 * number, inside one, after a ',' or a blank), from an exact-size copy:
 * both paths give the same error, and the scan reads nothing past the end
 * (valgrind and ASan runs of this suite). */
START_TEST(test_bits_cut_short)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	buf_puts(&b, "{\"x\":[[");
	for (int i = 0; i < 100; i++) {
		if (i > 0)
			buf_puts(&b, i % 3 ? "," : ", ");
		put_fixed(&b, 1 + i % 18);
	}
	ck_assert(!b.failed);
	for (size_t cut = b.len - 120; cut <= b.len; cut++) {
		char *body = malloc(cut + 1);

		ck_assert_ptr_nonnull(body);
		memcpy(body, b.data, cut);
		body[cut] = '\0';
		ck_assert_uint_eq(pool_same_tensor(body, "/x", 0), 0);
		free(body);
	}
	buf_release(&b);
}
END_TEST

static Suite *fastpath_short_suite(void)
{
	Suite *s = suite_create("fastpath_short");
	TCase *tc = tcase_create("short");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_bits_short_shapes);
	tcase_add_test(tc, test_bits_short_spoiled);
	tcase_add_test(tc, test_bits_cut_short);
	tcase_add_test(tc, test_commas64);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, fastpath_short_suite, NULL);
}
