/*
 * check_base64.c: common/base64.h's fast kernels against the naive twin
 * (base64_ref.c), which tests/api/check_api_util.c holds to RFC 4648.
 *
 *   encode  every kernel (scalar; AVX2 when the CPU has it; the dispatched
 *           base64_encode) writes the twin's characters for random bytes of
 *           every length 0..700 and some around 4 KiB (every length mod 3
 *           and mod 24, the AVX2 step)
 *   decode  every kernel gives the twin's return value, *bad_at and bytes
 *           for: valid encodings of those lengths; each corrupted once at a
 *           random offset (any byte, '=', a cut of 1..3 characters, bytes
 *           appended); random alphabet strings of every length mod 4 (bad pad
 *           bits among them); and every byte value at every offset of a
 *           128-character input (so the AVX2 classifier sees all 256)
 *   f32     base64_encode_f32le writes the little-endian bytes of the floats
 *           and base64_f32_from_le reads them back, on this host's order
 *
 * Buffers are malloc'd at their exact size, so a kernel writing past the end
 * is an ASan or valgrind error. ATTN_TEST_LIGHT=1 runs fewer random cases.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "engine/prng.h"
#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"

struct kernel {
	const char *name;
	void (*encode)(char *, const uint8_t *, size_t);
	long long (*decode)(uint8_t *, const char *, size_t, size_t *);
	int simd; /* needs base64_simd_available() */
};

static const struct kernel kernels[] = {
	{"scalar", base64_encode_scalar, base64_decode_scalar, 0},
	{"simd", base64_encode_simd, base64_decode_simd, 1},
	{"dispatched", base64_encode, base64_decode, 0},
};
enum { N_KERNELS = sizeof kernels / sizeof kernels[0] };

static int runs(const struct kernel *k)
{
	return !k->simd || base64_simd_available();
}

static struct attn_prng g;

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(attn_prng_next(&g) >> 56);
}

/* A length to test: 0..700 in turn, then around 4 KiB. */
static size_t test_length(size_t rep)
{
	return rep <= 700 ? rep : 4000 + (size_t)(attn_prng_next(&g) % 200);
}

/* Encodes n random bytes; the twin's text, malloc'd at its exact size. */
static char *encoded_random(size_t n, size_t *len)
{
	uint8_t *raw = malloc(n + 1);
	char *text;

	ck_assert_ptr_nonnull(raw);
	fill_random(raw, n);
	*len = base64_encoded_len(n);
	text = malloc(*len + 1);
	ck_assert_ptr_nonnull(text);
	base64_encode_ref(text, raw, n);
	free(raw);
	return text;
}

/* Every kernel decodes in[0 .. n) as the twin does: result, *bad_at, bytes. */
static void same_decode(const char *in, size_t n)
{
	size_t room = n / 4 * 3;
	uint8_t *want = malloc(room + 1), *got;
	size_t bad_want = 77777, bad_got;
	long long rc_want = base64_decode_ref(want, in, n, &bad_want), rc;

	ck_assert_ptr_nonnull(want);
	for (size_t k = 0; k < N_KERNELS; k++) {
		if (!runs(&kernels[k]))
			continue;
		got = malloc(room + 1);
		ck_assert_ptr_nonnull(got);
		bad_got = 77777;
		rc = kernels[k].decode(got, in, n, &bad_got);
		ck_assert_msg(rc == rc_want && bad_got == bad_want,
			      "%s, %zu characters: %lld at %zu, the twin %lld at %zu",
			      kernels[k].name, n, rc, bad_got, rc_want, bad_want);
		if (rc >= 0)
			ck_assert_msg(memcmp(got, want, (size_t)rc) == 0, "%s, %zu characters: bytes",
				      kernels[k].name, n);
		free(got);
	}
	free(want);
}

START_TEST(test_encode)
{
	size_t reps = 700 + test_scaled(300);

	attn_prng_seed(&g, 1);
	for (size_t rep = 0; rep <= reps; rep++) {
		size_t n = test_length(rep), len = base64_encoded_len(n);
		uint8_t *raw = malloc(n + 1);
		char *want = malloc(len + 1), *got;

		ck_assert_ptr_nonnull(raw);
		ck_assert_ptr_nonnull(want);
		fill_random(raw, n);
		base64_encode_ref(want, raw, n);
		for (size_t k = 0; k < N_KERNELS; k++) {
			if (!runs(&kernels[k]))
				continue;
			got = malloc(len + 1);
			ck_assert_ptr_nonnull(got);
			kernels[k].encode(got, raw, n);
			ck_assert_msg(memcmp(got, want, len) == 0, "%s, %zu bytes",
				      kernels[k].name, n);
			free(got);
		}
		free(raw);
		free(want);
	}
}
END_TEST

START_TEST(test_decode_valid)
{
	size_t reps = 700 + test_scaled(300);

	attn_prng_seed(&g, 2);
	for (size_t rep = 0; rep <= reps; rep++) {
		size_t len;
		char *text = encoded_random(test_length(rep), &len);

		same_decode(text, len);
		free(text);
	}
}
END_TEST

/* text[0 .. len) with one thing wrong, kind 0..4; returns the new length. */
static size_t corrupt(char *text, size_t len, unsigned kind)
{
	size_t at = len > 0 ? (size_t)(attn_prng_next(&g) % len) : 0;

	if (len == 0)
		return 0;
	switch (kind) {
	case 0: /* any byte */
		text[at] = (char)(attn_prng_next(&g) >> 56);
		return len;
	case 1:
		text[at] = '=';
		return len;
	case 2: /* near the end, where the padding is */
		text[len - 1 - (size_t)(attn_prng_next(&g) % (len < 6 ? len : 6))] =
		    "=A/\n"[attn_prng_next(&g) % 4];
		return len;
	case 3: /* cut */
		return len - 1 - (size_t)(attn_prng_next(&g) % (len < 3 ? len : 3));
	default: /* bytes appended: the caller left room for 3 */
		for (size_t i = 0; i < 3; i++)
			text[len + i] = "A=\n"[attn_prng_next(&g) % 3];
		return len + 1 + (size_t)(attn_prng_next(&g) % 3);
	}
}

START_TEST(test_decode_corrupt)
{
	size_t reps = 700 + test_scaled(300);

	attn_prng_seed(&g, 3);
	for (size_t rep = 0; rep <= reps; rep++) {
		size_t n = test_length(rep), len = base64_encoded_len(n);

		for (unsigned kind = 0; kind < 5; kind++) {
			char *text = encoded_random(n, &len);
			char *room = realloc(text, len + 3);
			size_t bad_len;
			char *exact;

			ck_assert_ptr_nonnull(room);
			bad_len = corrupt(room, len, kind);
			exact = malloc(bad_len + 1); /* exact size: reads past it are errors */
			ck_assert_ptr_nonnull(exact);
			memcpy(exact, room, bad_len);
			same_decode(exact, bad_len);
			free(exact);
			free(room);
		}
	}
}
END_TEST

START_TEST(test_decode_alphabet_strings)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t reps = test_scaled(20000);

	attn_prng_seed(&g, 4);
	for (size_t rep = 0; rep < reps; rep++) {
		size_t n = (size_t)(attn_prng_next(&g) % 300);
		char *s = malloc(n + 1);

		ck_assert_ptr_nonnull(s);
		for (size_t i = 0; i < n; i++)
			s[i] = alphabet[attn_prng_next(&g) % 64];
		if (n > 4 && rep % 2 == 0) /* padding, its bits not always zero */
			s[n - 1] = '=';
		if (n > 4 && rep % 4 == 0)
			s[n - 2] = '=';
		same_decode(s, n);
		free(s);
	}
}
END_TEST

START_TEST(test_decode_every_byte)
{
	size_t len;
	char *text;

	attn_prng_seed(&g, 5);
	text = encoded_random(96, &len); /* 128 characters, no padding */
	for (size_t at = 0; at < len; at++) {
		for (int c = 0; c < 256; c++) {
			char *s = malloc(len);

			ck_assert_ptr_nonnull(s);
			memcpy(s, text, len);
			s[at] = (char)c;
			same_decode(s, len);
			free(s);
		}
	}
	free(text);
}
END_TEST

START_TEST(test_f32)
{
	enum { N = 1001 };
	float x[N], back[N];
	uint8_t le[4 * N];
	size_t len = base64_encoded_len(sizeof x);
	char *want = malloc(len), *got = malloc(len);

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	attn_prng_seed(&g, 6);
	for (size_t k = 0; k < N; k++) {
		uint32_t u;

		x[k] = attn_prng_symmetric(&g, 1e3);
		memcpy(&u, &x[k], 4);
		for (size_t b = 0; b < 4; b++)
			le[4 * k + b] = (uint8_t)(u >> (8 * b)); /* little-endian by hand */
	}
	base64_encode_ref(want, le, sizeof le);
	base64_encode_f32le(got, x, N);
	ck_assert_int_eq(memcmp(got, want, len), 0);
	memcpy(back, le, sizeof le);
	base64_f32_from_le(back, N);
	ck_assert_int_eq(memcmp(back, x, sizeof x), 0);
	free(want);
	free(got);
}
END_TEST

static Suite *base64_suite(void)
{
	Suite *s = suite_create("base64");
	TCase *tc = tcase_create("kernels");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_encode);
	tcase_add_test(tc, test_decode_valid);
	tcase_add_test(tc, test_decode_corrupt);
	tcase_add_test(tc, test_decode_alphabet_strings);
	tcase_add_test(tc, test_decode_every_byte);
	tcase_add_test(tc, test_f32);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (!base64_simd_available())
		printf("base64: no AVX2 on this CPU: the SIMD kernels are not tested\n");
	return suite_main(argc, argv, base64_suite, NULL);
}
