/*
 * check_vocab.c: the vocabulary file parser (api/vocab.h) on its own: one
 * token a line with \n and \r\n line ends, Hugging Face's vocab.json, and a
 * table of files it must refuse, each with the message it must give.
 * check_vocab_daemon.c runs the same files through the real daemon.
 *
 * Ownership: every test releases the vocabularies it parses.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/vocab.h"

#include "tests/lib/suite_main.h"

/* Parses the NUL-terminated text s for `rows` rows, expecting success. */
static void parse_ok(struct api_vocab *v, const char *s, size_t rows)
{
	char err[512] = "";

	ck_assert_msg(api_vocab_parse(v, s, strlen(s), rows, "v.txt", err, sizeof err) == 0,
		      "refused: %s", err);
	ck_assert_uint_eq(v->n, rows);
}

static void expect_tokens(const struct api_vocab *v, const char *const *want, size_t n)
{
	ck_assert_uint_eq(v->n, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(strcmp(v->tokens[i], want[i]) == 0, "id %zu: '%s', not '%s'", i,
			      v->tokens[i], want[i]);
}

START_TEST(test_lines)
{
	static const char *const want[] = {"the", " cat sat ", "나는", "a\tb"};
	struct api_vocab v;

	parse_ok(&v, "the\n cat sat \n나는\na\tb\n", 4); /* spaces and tabs are the token's */
	expect_tokens(&v, want, 4);
	api_vocab_release(&v);
	parse_ok(&v, "the\n cat sat \n나는\na\tb", 4); /* no line end after the last */
	expect_tokens(&v, want, 4);
	api_vocab_release(&v);
	api_vocab_release(&v); /* twice: release leaves it zeroed */
	ck_assert_ptr_null(v.tokens);
	ck_assert_ptr_null(v.store);
}
END_TEST

START_TEST(test_crlf)
{
	static const char *const want[] = {"[PAD]", "the", "cat"};
	struct api_vocab v;

	parse_ok(&v, "[PAD]\r\nthe\r\ncat\r\n", 3);
	expect_tokens(&v, want, 3);
	api_vocab_release(&v);
	parse_ok(&v, "[PAD]\r\nthe\ncat", 3); /* mixed line ends, none at the end */
	expect_tokens(&v, want, 3);
	api_vocab_release(&v);
}
END_TEST

START_TEST(test_json)
{
	static const char *const want[] = {"<s>", "\xc4\xa0the", "cat", "사과"};
	struct api_vocab v;

	/* ids out of order, JSON escapes, whitespace before the object */
	parse_ok(&v, "\n  {\"cat\": 2, \"\\u0120the\": 1, \"<s>\": 0, \"\\uc0ac\\uacfc\": 3}\n", 4);
	expect_tokens(&v, want, 4);
	api_vocab_release(&v);
}
END_TEST

/* A line file whose first token starts with '{' is read as JSON: documented. */
START_TEST(test_brace_means_json)
{
	struct api_vocab v;
	char err[512];

	ck_assert_int_eq(api_vocab_parse(&v, "{\n}\n", 4, 2, "v.txt", err, sizeof err), -1);
	ck_assert_msg(strstr(err, "v.txt: 0 tokens") != NULL, "%s", err);
}
END_TEST

struct bad {
	const char *bytes;
	size_t len; /* 0: strlen(bytes) */
	size_t rows;
	const char *message; /* the whole message, or pieces of it joined by '*' */
};

static const struct bad bad_files[] = {
    /* one token a line */
    {"a\n\nb\n", 0, 3, "v.txt:2: empty token (id 1)"},
    {"a\nb\n\n", 0, 3, "v.txt:3: empty token (id 2)"},
    {"\na\nb\n", 0, 3, "v.txt:1: empty token (id 0)"},
    {"a\r\n\r\nb", 0, 3, "v.txt:2: empty token (id 1)"},
    {"a\nb\na\n", 0, 3, "v.txt:3: duplicate token 'a' (id 2), first on line 1 (id 0)"},
    /* the earliest repeat is named, not the first token sorted */
    {"x\ny\ny\nx\n", 0, 4, "v.txt:3: duplicate token 'y' (id 2), first on line 2 (id 1)"},
    {"a\nb\n", 0, 3,
     "v.txt: 2 tokens, but the model's embedding table has 3 rows (one token per row, in id "
     "order)"},
    {"a\nb\nc\nd", 0, 3, "v.txt: 4 tokens, but the model's embedding table has 3 rows*"},
    {"", 0, 3, "v.txt: 0 tokens, but the model's embedding table has 3 rows*"},
    {"a\rb\nc\nd\n", 0, 3, "v.txt:1: carriage return at column 2 (a line ends in \\n or \\r\\n)"},
    {"a\nb\nc\r", 0, 3, "v.txt:3: carriage return at column 2*"},
    {"a\nb\0c\nd", 7, 3, "v.txt:2: NUL byte at column 2"},
    {"a\n\xff\nc", 0, 3, "v.txt:2: invalid UTF-8 at column 1 (byte 0xff)"},
    {"a\nb\xc0\xaf\nc", 0, 3, "v.txt:2: invalid UTF-8 at column 2 (byte 0xc0)"},     /* overlong */
    {"a\nb\nc\xed\xa0\x80", 0, 3, "v.txt:3: invalid UTF-8 at column 2 (byte 0xed)"}, /* surrogate */
    {"a\nb\n\xe4\xb8", 0, 3, "v.txt:3: invalid UTF-8 at column 1 (byte 0xe4)"},        /* cut short */
    {"\xef\xbb\xbf"
     "a\nb\nc\n",
     0, 3, "v.txt: starts with a UTF-8 byte order mark; save it without one"},
    {"a\n", 0, 0,
     "v.txt: the model has no embedding table (vocab size 0) for a vocabulary to index"},
    /* a JSON object */
    {"{\"a\": 0, \"b\": 1, \"a\": 2}", 0, 3, "v.txt:1:*duplicate object key near '\"a\"'"},
    {"{\"a\": 0, \"b\": 1, \"c\": 1}", 0, 3, "v.txt: id 1 is given to both 'b' and 'c'"},
    {"{\"a\": 0, \"b\": 1, \"c\": 3}", 0, 3, "v.txt: token 'c': id 3 is outside 0..2"},
    {"{\"a\": 0, \"b\": -1, \"c\": 2}", 0, 3, "v.txt: token 'b': id -1 is outside 0..2"},
    {"{\"a\": 0, \"b\": 1.0, \"c\": 2}", 0, 3, "v.txt: token 'b': the id is not an integer"},
    {"{\"a\": 0, \"b\": \"1\", \"c\": 2}", 0, 3, "v.txt: token 'b': the id is not an integer"},
    {"{\"a\": 0, \"\": 1, \"c\": 2}", 0, 3, "v.txt: empty token \"\" (id 1)"},
    {"{\"a\": 0, \"b\": 1}", 0, 3, "v.txt: 2 tokens, but the model's embedding table has 3 rows*"},
    {"{}", 0, 3, "v.txt: 0 tokens, but*"},
    {"{\"a\": 0, \"b\": 1, \"c\": 2} x", 0, 3, "v.txt:1:*end of file expected*"},
    {"{\"a\": 0, \"b\": 1, \"c\": 2", 0, 3, "v.txt:1:*"},
    {"{\"a\\u0000\": 0, \"b\": 1, \"c\": 2}", 0, 3, "v.txt:1:*NUL*"},
    {"  {\"a\": 0,\n\"b\": [1], \"c\": 2}", 0, 3, "v.txt: token 'b': the id is not an integer"},
};

/* The message matches want: equal, or starting with want's text before a '*' and then
 * holding each further '*'-separated piece in order. */
static int message_matches(const char *got, const char *want)
{
	const char *star = strchr(want, '*');
	size_t n = star != NULL ? (size_t)(star - want) : strlen(want) + 1;

	if (strncmp(got, want, n) != 0)
		return 0;
	got += n;
	while (star != NULL && star[1] != '\0') {
		const char *piece = star + 1;
		const char *end = strchr(piece, '*');
		size_t len = end != NULL ? (size_t)(end - piece) : strlen(piece);
		char buf[256];

		snprintf(buf, sizeof buf, "%.*s", (int)len, piece);
		got = strstr(got, buf);
		if (got == NULL)
			return 0;
		got += len;
		star = end;
	}
	return 1;
}

START_TEST(test_bad_file)
{
	const struct bad *b = &bad_files[_i];
	size_t len = b->len != 0 ? b->len : strlen(b->bytes);
	struct api_vocab v;
	char err[512] = "";

	ck_assert_int_eq(api_vocab_parse(&v, b->bytes, len, b->rows, "v.txt", err, sizeof err), -1);
	ck_assert_msg(message_matches(err, b->message), "case %d: got '%s', want '%s'", _i, err,
		      b->message);
	/* a refused file leaves nothing to release */
	ck_assert_ptr_null(v.tokens);
	ck_assert_ptr_null(v.store);
	ck_assert_uint_eq(v.n, 0);
}
END_TEST

START_TEST(test_over_64_mib)
{
	size_t len = API_VOCAB_FILE_MAX + 1;
	char *bytes = malloc(len);
	struct api_vocab v;
	char err[512];

	ck_assert_ptr_nonnull(bytes);
	memset(bytes, 'a', len);
	ck_assert_int_eq(api_vocab_parse(&v, bytes, len, 3, "big.txt", err, sizeof err), -1);
	ck_assert_str_eq(err, "big.txt: 67108865 bytes, over the 64 MiB limit");
	/* exactly the limit is read (and then refused for its count) */
	ck_assert_int_eq(api_vocab_parse(&v, bytes, len - 1, 3, "big.txt", err, sizeof err), -1);
	ck_assert_str_eq(err, "big.txt: 1 token, but the model's embedding table has 3 rows "
			      "(one token per row, in id order)");
	free(bytes);
}
END_TEST

/* A long token is cut in the message at a character boundary, with "...". */
START_TEST(test_long_token_quoted_short)
{
	char file[512], want[256], err[512];
	struct api_vocab v;
	const char *word = "가나다라마바사아자차카타파하"; /* 14 characters of 3 bytes */

	snprintf(file, sizeof file, "%s\nb\n%s\n", word, word);
	ck_assert_int_eq(api_vocab_parse(&v, file, strlen(file), 3, "v.txt", err, sizeof err), -1);
	/* 48 bytes hold 16 characters; the 42 bytes of the word fit whole */
	snprintf(want, sizeof want, "v.txt:3: duplicate token '%s' (id 2), first on line 1 (id 0)",
		 word);
	ck_assert_str_eq(err, want);
	snprintf(file, sizeof file, "x%s%s\nb\nx%s%s\n", word, word, word, word);
	ck_assert_int_eq(api_vocab_parse(&v, file, strlen(file), 3, "v.txt", err, sizeof err), -1);
	/* 85 bytes: byte 48 is inside the 16th character, so 46 bytes ("x" and
	 * 15 characters) are shown, then "..." */
	snprintf(want, sizeof want, "v.txt:3: duplicate token 'x%s%.3s...' (id 2)", word, word);
	ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
}
END_TEST

/* Control bytes of a token are shown as '?', never written to a terminal. */
START_TEST(test_control_bytes_not_echoed)
{
	const char *file = "a\x1b[31m\nb\na\x1b[31m\n";
	struct api_vocab v;
	char err[512];

	ck_assert_int_eq(api_vocab_parse(&v, file, strlen(file), 3, "v.txt", err, sizeof err), -1);
	ck_assert_str_eq(err, "v.txt:3: duplicate token 'a?[31m' (id 2), first on line 1 (id 0)");
}
END_TEST

static Suite *vocab_suite(void)
{
	Suite *s = suite_create("vocab");
	TCase *ok = tcase_create("accepted");
	TCase *bad = tcase_create("refused");

	tcase_add_test(ok, test_lines);
	tcase_add_test(ok, test_crlf);
	tcase_add_test(ok, test_json);
	tcase_add_test(bad, test_brace_means_json);
	tcase_add_loop_test(bad, test_bad_file, 0, (int)(sizeof bad_files / sizeof bad_files[0]));
	tcase_add_test(bad, test_over_64_mib);
	tcase_add_test(bad, test_long_token_quoted_short);
	tcase_add_test(bad, test_control_bytes_not_echoed);
	suite_add_tcase(s, ok);
	suite_add_tcase(s, bad);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, vocab_suite, NULL);
}
