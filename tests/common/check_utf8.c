/*
 * check_utf8.c: common/utf8.h's encoder and \u digits.
 *
 *   put    every scalar value (U+0000 .. U+10FFFF, surrogates left out) is
 *          written in the bytes utf8_char reads back as one character of
 *          that length, and the shortest length for its value
 *   hex4   the four digits of a \u escape, either case; any other byte
 *          among them is refused
 */
#include <check.h>
#include <stdint.h>

#include "common/utf8.h"

#include "tests/lib/suite_main.h"

/* the code point of the valid sequence s [n] */
static uint32_t decode(const unsigned char *s, size_t n)
{
	static const unsigned char lead_bits[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	uint32_t cp = s[0] & lead_bits[n];

	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (s[i] & 0x3fu);
	return cp;
}

START_TEST(test_put_every_scalar)
{
	char b[4];

	for (uint32_t cp = 0; cp <= 0x10ffff; cp++) {
		size_t n, want = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;

		if (cp >= 0xd800 && cp <= 0xdfff)
			continue;
		n = utf8_put(b, cp);
		/* one check a value: Check's asserts cost too much 1.1 million times */
		if (n != want || utf8_char((const unsigned char *)b, n) != n ||
		    decode((const unsigned char *)b, n) != cp)
			ck_abort_msg("U+%04X: %zu bytes, want %zu, read back as U+%04X",
				     (unsigned)cp, n, want,
				     (unsigned)decode((const unsigned char *)b, n));
	}
}
END_TEST

START_TEST(test_hex4)
{
	uint32_t u = 1;

	ck_assert_int_eq(utf8_hex4("0000", &u), 0);
	ck_assert_uint_eq(u, 0);
	ck_assert_int_eq(utf8_hex4("d83D", &u), 0);
	ck_assert_uint_eq(u, 0xd83d);
	ck_assert_int_eq(utf8_hex4("FfFf", &u), 0);
	ck_assert_uint_eq(u, 0xffff);
	ck_assert_int_eq(utf8_hex4("12g4", &u), -1);
	ck_assert_int_eq(utf8_hex4("+123", &u), -1);
	ck_assert_int_eq(utf8_hex4("12 4", &u), -1);
	ck_assert_int_eq(utf8_hex4("123", &u), -1); /* the NUL is the fourth */
}
END_TEST

static Suite *utf8_suite(void)
{
	Suite *s = suite_create("utf8");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_put_every_scalar);
	tcase_add_test(tc, test_hex4);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, utf8_suite, NULL);
}
