/*
 * check_safetensors_format.c: the safetensors header parser
 * (engine/st_header.c, through attn_model_from_safetensors).
 *
 *   malformed  every truncation of a valid file, one byte of the header
 *              mutated at every offset, a table of bad headers, deep nesting,
 *              huge header lengths: each fails with its named status and a
 *              message that says where
 * Every buffer handed to the loader is malloc'd at its exact length
 * (tests/st_util.h), so a read past its end is an ASan or valgrind error.
 * Assumes a 64-bit size_t (the overflow cases spell out 2^64).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/safetensors.h"
#include "tests/lib/st_util.h"
#include "tests/lib/suite_main.h"

/* Every proper prefix of a valid file fails as TRUNCATED, reading only it. */
START_TEST(test_truncated_everywhere)
{
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len;
	uint8_t *f =
	    st_make_file(st_llama_small, ST_N_LLAMA, "\"__metadata__\":{\"a\":\"b\"}", &len, NULL);

	for (size_t cut = 0; cut < len; cut++) {
		enum attn_status st = st_load_bytes(f, cut, 4, NULL, &m, &err);

		ck_assert_msg(st == ATTN_ERR_TRUNCATED, "cut at %zu of %zu: %s (%s)", cut, len,
			      attn_status_str(st), err.message);
	}
	ck_assert_int_eq(st_load_bytes(f, len, 4, NULL, &m, &err), ATTN_OK);
	attn_model_free(m);
	free(f);
}
END_TEST

/* One header byte replaced, at every offset, by each of a few bytes: no crash. */
START_TEST(test_mutated_header)
{
	static const uint8_t subst[] = {'{', '}', '[', ']', '"',  '\\', ',',  ':',  '0',
					'9', '-', 'e', ' ', 0x00, 0x1f, 0x80, 0xc3, 0xff};
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len, offs[ST_N_MHA], ok = 0;
	uint8_t *f = st_make_file(st_mha_small, ST_N_MHA, NULL, &len, offs);
	uint8_t keep;

	for (size_t at = 8; at < offs[0]; at++) {
		keep = f[at];
		for (size_t k = 0; k < sizeof(subst); k++) {
			f[at] = subst[k];
			if (st_load_bytes(f, len, 2, NULL, &m, &err) == ATTN_OK) {
				ok++;
				attn_model_free(m);
			}
		}
		f[at] = keep;
	}
	ck_assert_uint_gt(ok, 0); /* e.g. padding ' ' -> ' ', digits in values */
	free(f);
}
END_TEST

/* {"dtype":"F32","shape":[1],"data_offsets":[0,4]} and friends */
#define ENTRY(shape, offsets)                                                                      \
	"{\"dtype\":\"F32\",\"shape\":[" shape "],\"data_offsets\":[" offsets "]}"
#define T1 ENTRY("1", "0,4")
#define X16 "xxxxxxxxxxxxxxxx"

static const struct bad_header {
	const char *header;
	enum attn_status status;
	const char *want; /* in the message */
} bad_headers[] = {
    {"", ATTN_ERR_FORMAT, "length 0"},
    {"[]", ATTN_ERR_FORMAT, "start with '{'"},
    {" {}", ATTN_ERR_FORMAT, "start with '{'"},
    {"{", ATTN_ERR_FORMAT, "expected a string"},
    {"{}x", ATTN_ERR_FORMAT, "after the header"},
    {"{}{}", ATTN_ERR_FORMAT, "after the header"},
    {"{\"a\":" T1, ATTN_ERR_FORMAT, "expected ',' or '}'"},
    {"{\"a\":" T1 ",}", ATTN_ERR_FORMAT, "expected a string"},
    {"{\"a\" " T1 "}", ATTN_ERR_FORMAT, "expected ':'"},
    {"{a:" T1 "}", ATTN_ERR_FORMAT, "expected a string"},
    {"{'a':" T1 "}", ATTN_ERR_FORMAT, "expected a string"},
    {"{\"a\":" T1 " \"b\":" T1 "}", ATTN_ERR_FORMAT, "expected ',' or '}'"},
    {"{\"a\":{}}", ATTN_ERR_FORMAT, "lacks"},
    {"{\"a\":[]}", ATTN_ERR_FORMAT, "expected '{'"},
    {"{\"a\":null}", ATTN_ERR_FORMAT, "expected '{'"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", ATTN_ERR_FORMAT, "lacks"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", ATTN_ERR_FORMAT,
     "unknown key"},
    {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
     ATTN_ERR_FORMAT, "duplicate key"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],}}", ATTN_ERR_FORMAT,
     "expected a string"},
    {"{\"a\":{\"dtype\":\"F32\" \"shape\":[1],\"data_offsets\":[0,4]}}", ATTN_ERR_FORMAT,
     "expected ',' or '}'"},
    {"{\"a\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", ATTN_ERR_FORMAT,
     "expected a string"},
    {"{\"a\":" ENTRY("1", "0,4,8") "}", ATTN_ERR_FORMAT, "two integers"},
    {"{\"a\":" ENTRY("1", "0") "}", ATTN_ERR_FORMAT, "two integers"},
    {"{\"a\":" ENTRY("1", "") "}", ATTN_ERR_FORMAT, "integer"},
    {"{\"a\":" ENTRY("-1", "0,4") "}", ATTN_ERR_FORMAT, "non-negative integer"},
    {"{\"a\":" ENTRY("01", "0,4") "}", ATTN_ERR_FORMAT, "leading zero"},
    {"{\"a\":" ENTRY("1.0", "0,4") "}", ATTN_ERR_FORMAT, "expected an integer"},
    {"{\"a\":" ENTRY("1e0", "0,4") "}", ATTN_ERR_FORMAT, "expected an integer"},
    {"{\"a\":" ENTRY("\"1\"", "0,4") "}", ATTN_ERR_FORMAT, "non-negative integer"},
    {"{\"a\":" ENTRY("1,", "0,4") "}", ATTN_ERR_FORMAT, "non-negative integer"},
    {"{\"a\":" ENTRY("[1]", "0,4") "}", ATTN_ERR_FORMAT, "non-negative integer"},
    {"{\"a\":" ENTRY("1 1", "0,4") "}", ATTN_ERR_FORMAT, "in shape"},
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", ATTN_ERR_FORMAT,
     "'[' for shape"},
    /* strings */
    {"{\"a", ATTN_ERR_FORMAT, "unterminated"},
    {"{\"a\\", ATTN_ERR_FORMAT, "unterminated"},
    {"{\"a\\x\":" T1 "}", ATTN_ERR_FORMAT, "invalid escape"},
    {"{\"a\\u12\":" T1 "}", ATTN_ERR_FORMAT, "invalid escape"},
    {"{\"a\\u12g4\":" T1 "}", ATTN_ERR_FORMAT, "invalid escape"},
    {"{\"\\ud800\":" T1 "}", ATTN_ERR_FORMAT, "high surrogate"},
    {"{\"\\ud800\\u0041\":" T1 "}", ATTN_ERR_FORMAT, "high surrogate"},
    {"{\"\\udc00\":" T1 "}", ATTN_ERR_FORMAT, "low surrogate"},
    {"{\"a\tb\":" T1 "}", ATTN_ERR_FORMAT, "control character"},
    {"{\"a\nb\":" T1 "}", ATTN_ERR_FORMAT, "control character"},
    {"{\"\xff\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},
    {"{\"\xc0\xaf\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},	 /* overlong '/' */
    {"{\"\xe0\x80\xaf\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},	 /* overlong */
    {"{\"\xed\xa0\x80\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},	 /* a surrogate */
    {"{\"\xf4\x90\x80\x80\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"}, /* > U+10FFFF */
    {"{\"\xe2\x82\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},	 /* cut short */
    {"{\"\x80\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"},		 /* lone continuation */
    {"{\"\xf5\x80\x80\x80\":" T1 "}", ATTN_ERR_FORMAT, "UTF-8"}, /* never a lead byte */
    {"{\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\":" T1 "}", ATTN_ERR_MISSING_TENSOR,
     "in_proj"}, /* valid 2-, 3- and 4-byte UTF-8 */
    /* names */
    {"{\"a\":" T1 ",\"a\":" T1 "}", ATTN_ERR_FORMAT, "duplicate tensor name 'a'"},
    {"{\"\xc3\xa9\":" T1 ",\"\\u00e9\":" T1 "}", ATTN_ERR_FORMAT, "duplicate tensor name"},
    {"{\"a\\u0000\":" T1 ",\"a\":" ENTRY("1", "4,8") "}", ATTN_ERR_MISSING_TENSOR, "q_proj"},
    /* metadata */
    {"{\"__metadata__\":{\"a\":1}}", ATTN_ERR_FORMAT, "expected a string"},
    {"{\"__metadata__\":{\"a\":{}}}", ATTN_ERR_FORMAT, "expected a string"},
    {"{\"__metadata__\":{\"a\":\"b\",}}", ATTN_ERR_FORMAT, "expected a string"},
    {"{\"__metadata__\":{\"a\" \"b\"}}", ATTN_ERR_FORMAT, "expected ':'"},
    {"{\"__metadata__\":[]}", ATTN_ERR_FORMAT, "__metadata__"},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", ATTN_ERR_FORMAT, "duplicate __metadata__"},
    {"{\"__metadata__\":{\"a\":\"b\"} }  ", ATTN_ERR_MISSING_TENSOR, "in_proj_weight"},
    {"{}", ATTN_ERR_MISSING_TENSOR, "in_proj_weight"},
    {"{}      ", ATTN_ERR_MISSING_TENSOR, "q_proj.weight"},
    {"{ }\t\r\n ", ATTN_ERR_MISSING_TENSOR, "q_proj.weight"},
    /* offsets and sizes (64 data bytes follow every header) */
    {"{\"a\":" ENTRY("1", "8,4") "}", ATTN_ERR_FORMAT, "backwards"},
    {"{\"a\":" ENTRY("1", "64,68") "}", ATTN_ERR_TRUNCATED, "past the 64 data bytes"},
    {"{\"a\":" ENTRY("16", "4,68") "}", ATTN_ERR_TRUNCATED, "tensor 'a'"},
    {"{\"a\":" ENTRY("2", "0,4") "}", ATTN_ERR_FORMAT, "make 8 bytes"},
    {"{\"a\":" ENTRY("", "0,8") "}", ATTN_ERR_FORMAT, "make 4 bytes"},
    {"{\"a\":" ENTRY("2,0", "0,4") "}", ATTN_ERR_FORMAT, "make 0 bytes"},
    {"{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,4]}}", ATTN_ERR_FORMAT,
     "dtype I64"},
    {"{\"a\":" ENTRY("2", "0,8") ",\"b\":" ENTRY("2", "4,12") "}", ATTN_ERR_FORMAT,
     "'a' and 'b' overlap"},
    {"{\"b\":" ENTRY("4", "0,16") ",\"a\":" ENTRY("1", "8,12") "}", ATTN_ERR_FORMAT, "overlap"},
    {"{\"a\":" ENTRY("2", "0,8") ",\"b\":" ENTRY("2", "0,8") "}", ATTN_ERR_FORMAT, "overlap"},
    {"{\"a\":" ENTRY("0", "4,4") ",\"b\":" ENTRY("2", "0,8") "}", ATTN_ERR_MISSING_TENSOR,
     "in_proj"}, /* an empty tensor overlaps nothing */
    {"{\"a\":" ENTRY("4294967296,4294967296,16", "0,4") "}", ATTN_ERR_OVERFLOW, "size_t"},
    {"{\"a\":" ENTRY("4611686018427387904", "0,4") "}", ATTN_ERR_OVERFLOW, "overflows"},
    {"{\"a\":" ENTRY("18446744073709551616", "0,4") "}", ATTN_ERR_OVERFLOW, "size_t"},
    {"{\"a\":" ENTRY("1", "0,18446744073709551615") "}", ATTN_ERR_TRUNCATED, "past"},
    {"{\"a\":" ENTRY("1", "0,99999999999999999999999") "}", ATTN_ERR_OVERFLOW, "size_t"},
    /* a long non-ASCII name is quoted safely and cut to 64 characters */
    {"{\"\\u0001" X16 X16 X16 X16 X16 "\":" ENTRY("1", "8,4") "}", ATTN_ERR_FORMAT,
     "'?" X16 X16 X16 "xxxxxxxxxxxxxxx...'"},
};

START_TEST(test_bad_header)
{
	const struct bad_header *c = &bad_headers[_i];
	size_t hlen = strlen(c->header);
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len;
	uint8_t *f = st_header_file(c->header, hlen, 64, &len);
	enum attn_status st = st_load_bytes(f, len, 2, NULL, &m, &err);

	free(f);
	ck_assert_msg(st == c->status, "case %d <%s>: %s, want %s: %s", _i, c->header,
		      attn_status_str(st), attn_status_str(c->status), err.message);
	ck_assert_msg(strstr(err.message, c->want) != NULL, "case %d <%s>: message '%s' lacks '%s'",
		      _i, c->header, err.message, c->want);
}
END_TEST

/* 100000 nested brackets wherever a value may start: one error, no recursion. */
START_TEST(test_deep_nesting)
{
	static const char *const openers[] = {
	    "{\"a\":", "{\"a\":{\"shape\":", "{\"__metadata__\":{\"a\":", "{\"a\":{\"dtype\":",
	    "{\"__metadata__\":"};
	const size_t depth = 100000;
	char *h = malloc(depth + 64);
	struct attn_model *m = NULL;
	struct attn_error err;

	ck_assert_ptr_nonnull(h);
	for (size_t k = 0; k < sizeof(openers) / sizeof(openers[0]); k++) {
		for (int bracket = 0; bracket < 2; bracket++) {
			size_t n = strlen(openers[k]), len;
			uint8_t *f;
			enum attn_status st;

			memcpy(h, openers[k], n);
			memset(h + n, bracket ? '[' : '{', depth);
			f = st_header_file(h, n + depth, 0, &len);
			st = st_load_bytes(f, len, 2, NULL, &m, &err);
			free(f);
			ck_assert_msg(st == ATTN_ERR_FORMAT, "%s + %c: %s", openers[k],
				      bracket ? '[' : '{', attn_status_str(st));
		}
	}
	free(h);
}
END_TEST

START_TEST(test_header_length)
{
	static const uint64_t lengths[] = {UINT64_C(1) << 63, UINT64_MAX, UINT64_C(1) << 32,
					   UINT64_C(11)};
	struct attn_model *m = NULL;
	struct attn_error err;
	size_t len;
	uint8_t *f;

	for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
		f = st_raw_file(lengths[k], "{}        ", 10, NULL, 0, &len);
		st_assert_fails(st_load_bytes(f, len, 2, NULL, &m, &err), err, ATTN_ERR_TRUNCATED,
				"does not fit");
		free(f);
	}
	f = st_raw_file(0, "{}", 2, NULL, 0, &len);
	st_assert_fails(st_load_bytes(f, len, 2, NULL, &m, &err), err, ATTN_ERR_FORMAT, "length 0");
	free(f);
	f = st_raw_file(3, "{}\0", 3, NULL, 0, &len); /* NUL is not padding */
	st_assert_fails(st_load_bytes(f, len, 2, NULL, &m, &err), err, ATTN_ERR_FORMAT,
			"after the header");
	free(f);
	for (size_t n = 0; n < 8; n++) {
		st_assert_fails(
		    st_load_bytes((const uint8_t *)"\2\0\0\0\0\0\0\0", n, 2, NULL, &m, &err), err,
		    ATTN_ERR_TRUNCATED, "no header length");
	}
	/* a length that stops inside the JSON: the header ends early */
	f = st_make_file(st_mha_small, ST_N_MHA, NULL, &len, NULL);
	f[0] = 16;
	f[1] = f[2] = 0;
	ck_assert_int_eq(st_load_bytes(f, len, 2, NULL, &m, &err), ATTN_ERR_FORMAT);
	free(f);
}
END_TEST

static Suite *safetensors_format_suite(void)
{
	Suite *s = suite_create("safetensors_format");
	TCase *bad = tcase_create("malformed");

	tcase_set_timeout(bad, 120); /* valgrind runs these too */
	tcase_add_test(bad, test_truncated_everywhere);
	tcase_add_test(bad, test_mutated_header);
	tcase_add_loop_test(bad, test_bad_header, 0,
			    (int)(sizeof(bad_headers) / sizeof(bad_headers[0])));
	tcase_add_test(bad, test_deep_nesting);
	tcase_add_test(bad, test_header_length);
	suite_add_tcase(s, bad);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, safetensors_format_suite, NULL);
}
