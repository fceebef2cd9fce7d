/*
 * check_api_util.c: the API layer's leaf utilities.
 *
 *   buf     common/buf.h: growth, the hard maximum, sticky `failed`, printf,
 *           reserve / commit, detach, release
 *   base64  api/base64.h: RFC 4648 section 10 vectors, random round trips of
 *           lengths 0..100, a table of invalid inputs with the offset each
 *           reports, and every bad byte at every offset
 *   error   api/error.h: the body parses (jansson) with its fields, escaping,
 *           truncation to whole UTF-8 characters
 *   write   api/json/json_tensor.h: rows of numbers with NaN and infinities
 *           among them (first, inside, last, one after another), shortest
 *           and with a precision, exact text
 *
 * (common/fmt.h has its own suite, tests/common/check_fmt.c.)
 * Buffers handed to the decoders are malloc'd at their exact size, so a write
 * past the end is an ASan or valgrind error.
 */
#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "common/base64.h"
#include "common/buf.h"
#include "api/error.h"
#include "api/json/json_tensor.h"
#include "engine/prng.h"
#include "common/jsonstr.h"

#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"

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

	ck_assert_int_eq(api_fail(&e, API_E_INVALID_SHAPE, "/input/2/5", "expected %d values, got %s",
				  8, "7"),
			 -1);
	ck_assert_int_eq(e.status, 422);
	ck_assert_str_eq(e.code, "invalid_shape");
	ck_assert_str_eq(e.message, "expected 8 values, got 7");
	ck_assert_str_eq(e.pointer, "/input/2/5");
	buf_init(&b, 4096);
	api_error_body(&e, &b);
	ck_assert_str_eq(b.data, "{\"error\":{\"code\":\"invalid_shape\",\"message\":"
				 "\"expected 8 values, got 7\",\"pointer\":\"/input/2/5\"}}");
	ck_assert_str_eq(error_member(&b, &root, "code"), "invalid_shape");
	json_decref(root);
	ck_assert_str_eq(error_member(&b, &root, "message"), "expected 8 values, got 7");
	json_decref(root);
	ck_assert_str_eq(error_member(&b, &root, "pointer"), "/input/2/5");
	json_decref(root);

	/* no pointer: the member is left out; NULL code: "internal_error" */
	api_fail(&e, API_E_MODEL_NOT_FOUND, NULL, "no model \"%s\"", "x\ty");
	ck_assert_int_eq(e.status, 404);
	e.code = NULL; /* a struct filled by hand */
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

/* One table of kinds: every kind has a status and a code of its own, and
 * the statuses are the classes error.h promises. */
START_TEST(test_error_kinds)
{
	for (int k = 0; k < API_E_COUNT; k++) {
		int status = api_error_status((enum api_error_kind)k);
		const char *code = api_error_code((enum api_error_kind)k);

		ck_assert_msg(status >= 400 && status < 600, "kind %d: status %d", k, status);
		ck_assert_msg(code != NULL && code[0] != '\0', "kind %d: no code", k);
		for (int j = 0; j < k; j++)
			ck_assert_msg(strcmp(code, api_error_code((enum api_error_kind)j)) != 0,
				      "kinds %d and %d share the code %s", j, k, code);
	}
	ck_assert_int_eq(api_error_status(API_E_MALFORMED_JSON), 400);
	ck_assert_int_eq(api_error_status(API_E_INVALID_TYPE), 422);
	ck_assert_int_eq(api_error_status(API_E_OVERLOADED), 503);
	ck_assert_str_eq(api_error_code(API_E_COUNT), "internal_error");
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
	jsonstr_put(&b, "a\"b\\c\b\f\n\r\t\x01\x1f\x7f/\xc3\xa9");
	ck_assert_str_eq(b.data, "\"a\\\"b\\\\c\\b\\f\\n\\r\\t\\u0001\\u001f\x7f/\xc3\xa9\"");
	buf_reset(&b);
	jsonstr_put(&b, NULL);
	jsonstr_put(&b, "");
	ck_assert_str_eq(b.data, "\"\"\"\"");

	/* every byte 1..0x7f round-trips through jansson */
	for (c = 1; c < 0x80; c++)
		s[c - 1] = (char)c;
	s[0x7f] = '\0';
	buf_reset(&b);
	jsonstr_put(&b, s);
	v = json_loads(b.data, JSON_DECODE_ANY, &err);
	ck_assert_msg(v != NULL, "%s", err.text);
	ck_assert_str_eq(json_string_value(v), s);
	json_decref(v);

	/* invalid UTF-8 (issue 17): one \ufffd per maximal invalid subpart, valid
	 * characters around it kept, and the result parses */
	{
		static const struct {
			const char *in, *out;
		} bad[] = {
			{"\xff\xfe", "\\ufffd\\ufffd"},			  /* %FF%FE */
			{"a\xc0\xaf" "b", "a\\ufffd\\ufffdb"},		  /* overlong '/' */
			{"\xe0\x80\xaf", "\\ufffd\\ufffd\\ufffd"},	  /* overlong, 3 bytes */
			{"\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd"},	  /* surrogate U+D800 */
			{"x\xe2\x82", "x\\ufffd"},			  /* cut short at the end */
			{"\xf0\x9f\x98x", "\\ufffdx"},		  /* cut short, then ASCII */
			{"\xf4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd"}, /* past U+10FFFF */
			{"\x80\"", "\\ufffd\\\""},			  /* stray continuation */
			{"\xf0\x9f\x98\x80\xe2\x82\xac", "\xf0\x9f\x98\x80\xe2\x82\xac"}, /* valid */
		};

		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			char want[64];

			buf_reset(&b);
			jsonstr_put(&b, bad[i].in);
			snprintf(want, sizeof want, "\"%s\"", bad[i].out);
			ck_assert_str_eq(b.data, want);
			v = json_loads(b.data, JSON_DECODE_ANY, &err);
			ck_assert_msg(v != NULL, "case %zu: %s", i, err.text);
			json_decref(v);
		}
	}

	/* a full buffer: sticky failure, nothing half-written past max */
	buf_release(&b);
	buf_init(&b, 5);
	jsonstr_put(&b, "abcdef");
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

	api_fail(&e, API_E_INVALID_VALUE, long_ascii, "%s", long_ascii);
	ck_assert_uint_eq(strlen(e.message), sizeof e.message - 1);
	ck_assert_uint_eq(strlen(e.pointer), sizeof e.pointer - 1);

	/* 255 and 191 bytes would split a character: cut back to 254 and 190 */
	api_fail(&e, API_E_INVALID_VALUE, long_utf8, "%s", long_utf8);
	ck_assert_uint_eq(strlen(e.message), 254);
	ck_assert_uint_eq(strlen(e.pointer), 190);
	api_fail(&e, API_E_INVALID_VALUE, long_utf8 + 2, "a%s", long_utf8); /* odd: whole at 255 */
	ck_assert_uint_eq(strlen(e.message), 255);
	buf_init(&b, 4096);
	api_error_body(&e, &b);
	ck_assert_ptr_nonnull(error_member(&b, &root, "message")); /* valid UTF-8 */
	json_decref(root);

	api_fail(&e, API_E_INVALID_VALUE, "", "a%s", long_euro); /* 1 + 84 * 3 = 253 */
	ck_assert_uint_eq(strlen(e.message), 253);
	buf_reset(&b);
	api_error_body(&e, &b);
	ck_assert_ptr_nonnull(error_member(&b, &root, "message"));
	json_decref(root);
	buf_release(&b);
}
END_TEST

/* ---- writing tensors -------------------------------------------------- */

/* api_tensor_write of x [2, 4] with the given precision, as a string */
static void write_2x4(const float *x, int precision, char *out, size_t cap)
{
	static const size_t shape[2] = {2, 4};
	struct buf b;
	struct api_writer w;

	buf_init(&b, 4096);
	w = (struct api_writer){&b, API_ENC_FLOAT, precision};
	ck_assert_int_eq(api_tensor_write(&w, x, 2, shape), 0);
	ck_assert_uint_lt(b.len, cap);
	memcpy(out, b.data, b.len);
	out[b.len] = '\0';
	buf_release(&b);
}

START_TEST(test_write_nonfinite)
{
	const float x[8] = {NAN, 1.5f, -INFINITY, 0.1f, 3.0f, -0.0f, INFINITY, NAN};
	const float y[8] = {0.25f, 1e-7f, 123456.79f, -2.5f, 1.0f, 2.0f, 3.0f, 4.0f};
	char s[256];

	write_2x4(x, 0, s, sizeof s);
	ck_assert_str_eq(s, "[[\"NaN\",1.5,\"-Infinity\",0.1],[3,-0,\"Infinity\",\"NaN\"]]");
	write_2x4(x, 3, s, sizeof s);
	ck_assert_str_eq(s, "[[\"NaN\",1.5,\"-Infinity\",0.1],[3,-0,\"Infinity\",\"NaN\"]]");
	write_2x4(y, 0, s, sizeof s);
	ck_assert_str_eq(s, "[[0.25,1e-7,123456.79,-2.5],[1,2,3,4]]");
	write_2x4(y, 2, s, sizeof s);
	ck_assert_str_eq(s, "[[0.25,1e-7,120000,-2.5],[1,2,3,4]]");
}
END_TEST

/*
 * api_tensor_write against its naive twin, api_tensor_write_ref (a row at a
 * time): random shapes of rank 1 to 4 with sizes 0 to 6, and of rank 2 with
 * sizes to 80 (past the one-pass size, which goes row by row), random finite
 * bit patterns with a NaN or an infinity now and then (first, last, one
 * after another), shortest and with a precision; the same text and the same
 * result.
 */
START_TEST(test_write_twin)
{
	static const uint32_t nonfinite[3] = {0x7fc00000u, 0x7f800000u, 0xff800000u};
	struct attn_prng g;
	int tensors = test_light() ? 300 : 5000;

	attn_prng_seed(&g, 15);
	for (int t = 0; t < tensors; t++) {
		int large = t % 50 == 7; /* [up to 80, up to 80]: past the one-pass size */
		size_t rank = large ? 2 : 1 + (size_t)(attn_prng_next(&g) % 4), shape[4], n = 1;
		int precision = t % 5 == 4 ? 1 + (int)(attn_prng_next(&g) % 9) : 0;
		struct buf fast, ref;
		struct api_writer wf, wr;
		float *x;
		int rc_fast, rc_ref;

		for (size_t a = 0; a < rank; a++) {
			shape[a] = (size_t)(attn_prng_next(&g) % (large ? 81 : 7));
			n *= shape[a];
		}
		x = malloc((n ? n : 1) * sizeof *x);
		ck_assert_ptr_nonnull(x);
		for (size_t i = 0; i < n; i++) {
			uint32_t u = (uint32_t)(attn_prng_next(&g) >> 32);

			if ((u >> 23 & 0xff) == 0xff || u % 7 == 0) /* a plainer number */
				u = (u & 0x807fffffu) | (0x70u + u % 16) << 23;
			if (t % 3 == 0 && u % 11 == 0)
				u = nonfinite[u % 3];
			memcpy(&x[i], &u, sizeof u);
		}
		buf_init(&fast, (size_t)1 << 24);
		buf_init(&ref, (size_t)1 << 24);
		wf = (struct api_writer){&fast, API_ENC_FLOAT, precision};
		wr = (struct api_writer){&ref, API_ENC_FLOAT, precision};
		rc_fast = api_tensor_write(&wf, x, rank, shape);
		rc_ref = api_tensor_write_ref(&wr, x, rank, shape);
		ck_assert_int_eq(rc_fast, rc_ref);
		ck_assert_msg(fast.len == ref.len && memcmp(fast.data, ref.data, ref.len) == 0,
			      "tensor %d (rank %zu): \"%s\", twin \"%s\"", t, rank, fast.data,
			      ref.data);
		buf_release(&fast);
		buf_release(&ref);
		free(x);
	}
}
END_TEST

static Suite *api_util_suite(void)
{
	Suite *s = suite_create("api_util");
	TCase *tb = tcase_create("buf");
	TCase *t64 = tcase_create("base64");
	TCase *te = tcase_create("error");
	TCase *tw = tcase_create("write");

	tcase_add_test(tb, test_buf_basic);
	tcase_add_test(tb, test_buf_growth);
	tcase_add_test(tb, test_buf_max);
	tcase_add_test(tb, test_buf_sticky);
	tcase_add_test(tb, test_buf_printf);
	tcase_add_test(tb, test_buf_reserve_commit);
	tcase_add_test(tb, test_buf_detach);
	suite_add_tcase(s, tb);

	tcase_add_loop_test(t64, test_base64_rfc4648, 0,
			    (int)(sizeof rfc4648 / sizeof rfc4648[0]));
	tcase_add_test(t64, test_base64_len);
	tcase_add_test(t64, test_base64_round_trip);
	tcase_add_loop_test(t64, test_base64_invalid, 0,
			    (int)(sizeof b64_invalid / sizeof b64_invalid[0]));
	tcase_add_test(t64, test_base64_every_bad_byte);
	suite_add_tcase(s, t64);

	tcase_add_test(te, test_error_body);
	tcase_add_test(te, test_error_kinds);
	tcase_add_test(te, test_error_escaping);
	tcase_add_test(te, test_error_truncation);
	suite_add_tcase(s, te);

	tcase_add_test(tw, test_write_nonfinite);
	tcase_add_test(tw, test_write_twin);
	suite_add_tcase(s, tw);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, api_util_suite, NULL);
}
