/*
 * check_compress.c: content codings, the module (server/compress.c) against
 * zlib's own one-shot calls (tests/lib/zlib_twins.h); the daemon's codings
 * over real HTTP are check_compress_http.c.
 *
 *   codec    compress_body's gzip and deflate inflate back with zlib's
 *            uncompress (its naive twin) and a one-shot inflate; the body
 *            decoder, fed zlib's compress2 output in seeded random chunks,
 *            gives the bytes back; a zip bomb stops at the buffer's maximum
 *            with nothing allocated past it; corrupt, truncated and trailing
 *            bytes are named; Accept-Encoding and Content-Encoding as tables;
 *            compress_reply's choice of which answers to code
 */
#define _GNU_SOURCE /* memmem, strcasestr */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define ZLIB_CONST
#include <zlib.h>

#include "api/service.h"
#include "server/compress.h"
#include "tests/lib/suite_main.h"
#include "tests/lib/zlib_twins.h"

enum { MiB = 1 << 20 };

/* Text like an answer's: numbers with some repetition, seeded. */
static char *json_like(size_t n, unsigned long long seed)
{
	char *p = malloc(n + 1);
	unsigned long long s = seed | 1;

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		p[i] = "0123456789.,-e[]"[s % 16 < 12 ? s % 12 : s % 16];
	}
	p[n] = '\0';
	return p;
}

static unsigned long long next_rand(unsigned long long *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- codec ------------------------------------------------------------------ */

START_TEST(test_compress_body_inflates_with_zlib)
{
	static const size_t sizes[] = {1, 1000, 65536 + 17, 700000};
	static const int levels[] = {1, 6, 9};

	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char *text = json_like(sizes[i], 7 + i);

		for (size_t k = 0; k < sizeof levels / sizeof levels[0]; k++) {
			struct buf gz, df;
			unsigned char *back;
			uLongf back_len = (uLongf)sizes[i] + 1;
			size_t gz_len;
			int ret;

			buf_init(&gz, sizes[i]);
			buf_init(&df, sizes[i]);
			ret = compress_body(CODING_GZIP, levels[k], text, sizes[i], &gz);
			if (sizes[i] == 1) { /* framing alone is more than one byte */
				ck_assert_int_eq(ret, 1);
				buf_release(&gz);
				buf_release(&df);
				continue;
			}
			ck_assert_int_eq(ret, 0);
			ck_assert_uint_lt(gz.len, sizes[i]);
			ck_assert_int_eq(compress_body(CODING_DEFLATE, levels[k], text, sizes[i], &df), 0);
			/* deflate is the zlib format: uncompress reads it */
			back = malloc(back_len);
			ck_assert_int_eq(uncompress(back, &back_len, (const Bytef *)df.data, df.len), Z_OK);
			ck_assert_uint_eq(back_len, sizes[i]);
			ck_assert(memcmp(back, text, sizes[i]) == 0);
			free(back);
			back = zlib_inflate(GZIP_BITS, gz.data, gz.len, sizes[i], &gz_len);
			ck_assert_uint_eq(gz_len, sizes[i]);
			ck_assert(memcmp(back, text, sizes[i]) == 0);
			ck_assert(gz.data[0] == '\x1f' && gz.data[1] == '\x8b'); /* RFC 1952 magic */
			free(back);
			buf_release(&gz);
			buf_release(&df);
		}
		free(text);
	}
}
END_TEST

START_TEST(test_compress_body_refuses_no_gain)
{
	unsigned long long s = 99;
	unsigned char noise[4096];
	struct buf out;

	for (size_t i = 0; i < sizeof noise; i++)
		noise[i] = (unsigned char)next_rand(&s);
	buf_init(&out, sizeof noise);
	ck_assert_int_eq(compress_body(CODING_GZIP, 1, noise, sizeof noise, &out), 1);
	ck_assert_uint_le(out.len, sizeof noise);
	buf_release(&out);
	buf_init(&out, 1 << 20);
	ck_assert_int_eq(compress_body(CODING_GZIP, 0, noise, sizeof noise, &out), -1);
	ck_assert_int_eq(compress_body(CODING_IDENTITY, 1, noise, sizeof noise, &out), -1);
	buf_release(&out);
}
END_TEST

/* Feeds coded to a decoder in seeded chunks of 1..max_chunk bytes. */
static enum decode_status decode_chunks(enum coding c, const unsigned char *coded, size_t n,
					size_t max_chunk, unsigned long long seed, struct buf *out)
{
	struct body_decoder *d = body_decoder_new(c);
	enum decode_status st = DECODE_OK;
	unsigned long long s = seed | 1;

	ck_assert_ptr_nonnull(d);
	for (size_t at = 0; at < n && st == DECODE_OK;) {
		size_t take = 1 + (size_t)(next_rand(&s) % max_chunk);

		take = take < n - at ? take : n - at;
		st = body_decoder_feed(d, coded + at, take, out);
		at += take;
	}
	if (st == DECODE_OK)
		st = body_decoder_finish(d);
	body_decoder_free(d);
	return st;
}

START_TEST(test_decoder_gives_back_zlib_output)
{
	static const size_t sizes[] = {0, 1, 5000, 300000};
	static const size_t chunks[] = {1, 7, 4096, 1 << 20};

	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char *text = json_like(sizes[i], 3 + i);
		uLongf df_len = compressBound((uLong)sizes[i]);
		unsigned char *df = malloc(df_len);
		size_t gz_len;
		unsigned char *gz = zlib_code(GZIP_BITS, text, sizes[i], &gz_len);

		ck_assert_int_eq(compress2(df, &df_len, (const Bytef *)text, sizes[i], 6), Z_OK);
		for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
			struct buf a, b;

			buf_init(&a, sizes[i]); /* a maximum of exactly the size: fits */
			buf_init(&b, sizes[i]);
			ck_assert_int_eq(decode_chunks(CODING_DEFLATE, df, df_len, chunks[k], k, &a),
					 DECODE_OK);
			ck_assert_int_eq(decode_chunks(CODING_GZIP, gz, gz_len, chunks[k], k, &b),
					 DECODE_OK);
			ck_assert_uint_eq(a.len, sizes[i]);
			ck_assert_uint_eq(b.len, sizes[i]);
			ck_assert(memcmp(a.data, text, sizes[i]) == 0);
			ck_assert(memcmp(b.data, text, sizes[i]) == 0);
			buf_release(&a);
			buf_release(&b);
		}
		free(df);
		free(gz);
		free(text);
	}
}
END_TEST

START_TEST(test_decoder_joins_gzip_members)
{
	size_t a_len, b_len;
	unsigned char *a = zlib_code(GZIP_BITS, "{\"model\":", 9, &a_len);
	unsigned char *b = zlib_code(GZIP_BITS, "\"base\"}", 7, &b_len);
	unsigned char *both = malloc(a_len + b_len);
	struct buf out;

	memcpy(both, a, a_len);
	memcpy(both + a_len, b, b_len);
	buf_init(&out, 1024);
	ck_assert_int_eq(decode_chunks(CODING_GZIP, both, a_len + b_len, 3, 1, &out), DECODE_OK);
	ck_assert_str_eq(out.data, "{\"model\":\"base\"}");
	buf_release(&out);
	free(a);
	free(b);
	free(both);
}
END_TEST

START_TEST(test_decoder_stops_a_bomb_at_the_maximum)
{
	size_t zeros = 10u * MiB, coded_len;
	char *z = calloc(zeros, 1);
	unsigned char *coded = zlib_code(GZIP_BITS, z, zeros, &coded_len);
	struct buf out;

	ck_assert_uint_lt(coded_len, 20000); /* about 10 KB */
	buf_init(&out, MiB);
	ck_assert_int_eq(decode_chunks(CODING_GZIP, coded, coded_len, 4096, 5, &out),
			 DECODE_TOO_LARGE);
	ck_assert_uint_eq(out.len, MiB);     /* filled to the maximum */
	ck_assert_uint_le(out.cap, MiB + 1); /* and nothing allocated past it */
	buf_release(&out);
	/* one byte short of the whole: too large; exactly the whole: fits */
	buf_init(&out, zeros - 1);
	ck_assert_int_eq(decode_chunks(CODING_GZIP, coded, coded_len, 1 << 20, 6, &out),
			 DECODE_TOO_LARGE);
	buf_release(&out);
	buf_init(&out, zeros);
	ck_assert_int_eq(decode_chunks(CODING_GZIP, coded, coded_len, 1 << 20, 6, &out), DECODE_OK);
	ck_assert_uint_eq(out.len, zeros);
	buf_release(&out);
	free(coded);
	free(z);
}
END_TEST

START_TEST(test_decoder_names_corrupt_input)
{
	static const char text[] = "{\"model\": \"base\", \"text\": \"the cat sat\"}";
	size_t gz_len;
	unsigned char *gz = zlib_code(GZIP_BITS, text, sizeof text - 1, &gz_len);
	struct body_decoder *d;
	struct buf out;

	buf_init(&out, 4096);
	/* not gzip at all */
	d = body_decoder_new(CODING_GZIP);
	ck_assert_int_eq(body_decoder_feed(d, text, sizeof text - 1, &out), DECODE_CORRUPT);
	ck_assert_str_eq(body_decoder_message(d), "incorrect header check");
	ck_assert_int_eq(body_decoder_feed(d, gz, gz_len, &out), DECODE_CORRUPT); /* sticky */
	body_decoder_free(d);
	/* truncated: the stream does not end */
	buf_reset(&out);
	d = body_decoder_new(CODING_GZIP);
	ck_assert_int_eq(body_decoder_feed(d, gz, gz_len - 4, &out), DECODE_OK);
	ck_assert_int_eq(body_decoder_finish(d), DECODE_CORRUPT);
	ck_assert_ptr_nonnull(strstr(body_decoder_message(d), "ends before"));
	body_decoder_free(d);
	/* empty */
	d = body_decoder_new(CODING_DEFLATE);
	ck_assert_int_eq(body_decoder_finish(d), DECODE_CORRUPT);
	body_decoder_free(d);
	/* a flipped byte inside gzip: its CRC-32 or a block is wrong */
	buf_reset(&out);
	gz[gz_len - 6] ^= 0x55;
	ck_assert_int_eq(decode_chunks(CODING_GZIP, gz, gz_len, 64, 2, &out), DECODE_CORRUPT);
	/* bytes after a deflate stream */
	{
		uLongf df_len = 256;
		unsigned char df[256];

		buf_reset(&out);
		ck_assert_int_eq(compress2(df, &df_len, (const Bytef *)text, sizeof text - 1, 6),
				 Z_OK);
		df[df_len] = '!';
		d = body_decoder_new(CODING_DEFLATE);
		ck_assert_int_eq(body_decoder_feed(d, df, df_len + 1, &out), DECODE_CORRUPT);
		ck_assert_ptr_nonnull(strstr(body_decoder_message(d), "follow the end"));
		body_decoder_free(d);
	}
	/* bytes after a whole gzip member that start no other: too few for a
	 * header (a newline), or not one (zeros) */
	{
		unsigned char after[512];

		ck_assert_uint_lt(2 * gz_len, sizeof after);
		gz[gz_len - 6] ^= 0x55; /* whole again */
		memcpy(after, gz, gz_len);
		after[gz_len] = '\n';
		buf_reset(&out);
		d = body_decoder_new(CODING_GZIP);
		ck_assert_int_eq(body_decoder_feed(d, after, gz_len + 1, &out), DECODE_OK);
		ck_assert_int_eq(body_decoder_finish(d), DECODE_CORRUPT);
		ck_assert_str_eq(body_decoder_message(d), "bytes follow the end of the gzip "
							  "stream and are no whole gzip member");
		body_decoder_free(d);
		memset(after + gz_len, 0, 8);
		buf_reset(&out);
		d = body_decoder_new(CODING_GZIP);
		ck_assert_int_eq(body_decoder_feed(d, after, gz_len + 8, &out), DECODE_CORRUPT);
		ck_assert_str_eq(body_decoder_message(d),
				 "bytes follow the end of the gzip stream and are no gzip member "
				 "(incorrect header check)");
		body_decoder_free(d);
		/* a second member whose header is whole but whose CRC-32 is
		 * wrong, or which is cut short: its own fault, not bytes that
		 * are no member */
		memcpy(after + gz_len, gz, gz_len);
		after[2 * gz_len - 6] ^= 0x55;
		buf_reset(&out);
		d = body_decoder_new(CODING_GZIP);
		ck_assert_int_eq(body_decoder_feed(d, after, 2 * gz_len, &out), DECODE_CORRUPT);
		ck_assert_str_eq(body_decoder_message(d), "incorrect data check");
		body_decoder_free(d);
		after[2 * gz_len - 6] ^= 0x55; /* whole again, then cut */
		buf_reset(&out);
		d = body_decoder_new(CODING_GZIP);
		ck_assert_int_eq(body_decoder_feed(d, after, 2 * gz_len - 4, &out), DECODE_OK);
		ck_assert_int_eq(body_decoder_finish(d), DECODE_CORRUPT);
		ck_assert_ptr_nonnull(strstr(body_decoder_message(d), "ends before"));
		body_decoder_free(d);
	}
	ck_assert_ptr_null(body_decoder_new(CODING_IDENTITY));
	body_decoder_free(NULL);
	buf_release(&out);
	free(gz);
}
END_TEST

START_TEST(test_accept_encoding_table)
{
	static const struct {
		const char *fields[2]; /* one or two header fields; NULL: not sent */
		enum coding want;
	} cases[] = {
	    {{NULL, NULL}, CODING_IDENTITY},
	    {{"", NULL}, CODING_IDENTITY},
	    {{"gzip", NULL}, CODING_GZIP},
	    {{"deflate", NULL}, CODING_DEFLATE},
	    {{"deflate, gzip", NULL}, CODING_GZIP}, /* equal weights: gzip */
	    {{"gzip, deflate, br, zstd", NULL}, CODING_GZIP},
	    {{"GZIP", NULL}, CODING_GZIP},
	    {{"x-gzip", NULL}, CODING_GZIP},
	    {{"gzip;q=0.5, deflate", NULL}, CODING_DEFLATE},
	    {{"gzip;Q=0.9 ,deflate;q=0.8", NULL}, CODING_GZIP},
	    {{" gzip ; q=0.2 , deflate ; q=0.3 ", NULL}, CODING_DEFLATE},
	    {{"gzip;q=0", NULL}, CODING_IDENTITY},
	    {{"gzip;q=0.000, deflate;q=0.001", NULL}, CODING_DEFLATE},
	    {{"identity;q=0", NULL}, CODING_IDENTITY}, /* nothing else acceptable */
	    {{"identity;q=0, gzip;q=0.1", NULL}, CODING_GZIP},
	    {{"identity, gzip;q=0.5", NULL}, CODING_IDENTITY}, /* identity named higher */
	    {{"identity;q=0.5, gzip", NULL}, CODING_GZIP},
	    {{"gzip, identity", NULL}, CODING_GZIP}, /* a tie: the coding */
	    {{"identity;q=0.5, deflate;q=0.5", NULL}, CODING_DEFLATE},
	    {{"gzip;q=0.5", NULL}, CODING_GZIP}, /* identity unnamed: never preferred */
	    {{"*", NULL}, CODING_GZIP},
	    {{"*;q=0", NULL}, CODING_IDENTITY},
	    {{"*;q=0.5, gzip;q=0", NULL}, CODING_DEFLATE},
	    {{"br", NULL}, CODING_IDENTITY},
	    {{"gzip;q=1.5", NULL}, CODING_IDENTITY}, /* malformed: skipped */
	    {{"gzip;q=0.1234", NULL}, CODING_IDENTITY},
	    {{"gzip;q=", NULL}, CODING_IDENTITY},
	    {{"gzip;foo", NULL}, CODING_IDENTITY},
	    {{"gzip;q =0", NULL}, CODING_IDENTITY}, /* not q=0 nor another parameter */
	    {{"deflate;q=0.5, gzip; q =0", NULL}, CODING_DEFLATE},
	    {{"gzip;=1", NULL}, CODING_IDENTITY},
	    {{"gzip;level=1;q=1", NULL}, CODING_GZIP},
	    {{",, ,gzip,", NULL}, CODING_GZIP},
	    {{"br", "deflate"}, CODING_DEFLATE}, /* two fields are one list */
	    {{"gzip;q=0.1", "deflate;q=0.2"}, CODING_DEFLATE},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct accept_encoding ae;

		accept_encoding_init(&ae);
		for (int f = 0; f < 2 && cases[i].fields[f] != NULL; f++)
			accept_encoding_add(&ae, cases[i].fields[f]);
		ck_assert_msg(accept_encoding_choose(&ae) == cases[i].want,
			      "case %zu (%s): %s, want %s", i,
			      cases[i].fields[0] ? cases[i].fields[0] : "none",
			      coding_name(accept_encoding_choose(&ae)), coding_name(cases[i].want));
	}
}
END_TEST

/* Among a file's codings (gzip alone): deflate's weight does not count. */
START_TEST(test_accept_encoding_choose_from_gzip)
{
	static const struct {
		const char *field;
		enum coding want;
	} cases[] = {
	    {"deflate, gzip;q=0.5", CODING_GZIP},
	    {"deflate, gzip;q=0.5, identity;q=0", CODING_GZIP},
	    {"deflate, *;q=0.2", CODING_GZIP},
	    {"deflate, gzip;q=0.5, identity;q=0.6", CODING_IDENTITY},
	    {"deflate", CODING_IDENTITY},
	    {"deflate, gzip;q=0", CODING_IDENTITY},
	    {"gzip", CODING_GZIP},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct accept_encoding ae;

		accept_encoding_init(&ae);
		accept_encoding_add(&ae, cases[i].field);
		ck_assert_msg(accept_encoding_choose_from(&ae, CODINGS_GZIP) == cases[i].want,
			      "%s: %s, want %s", cases[i].field,
			      coding_name(accept_encoding_choose_from(&ae, CODINGS_GZIP)),
			      coding_name(cases[i].want));
	}
}
END_TEST

START_TEST(test_content_encoding_table)
{
	static const struct {
		const char *field;
		enum coding want;
		const char *named; /* what the 415 names */
	} cases[] = {
	    {"gzip", CODING_GZIP, ""},
	    {"GZip ", CODING_GZIP, ""},
	    {"x-gzip", CODING_GZIP, ""},
	    {"deflate", CODING_DEFLATE, ""},
	    {"identity", CODING_IDENTITY, ""},
	    {"", CODING_IDENTITY, ""},
	    {"identity, gzip", CODING_GZIP, ""},
	    {"gzip, identity", CODING_GZIP, ""},
	    {"br", CODING_UNKNOWN, "br"},
	    {"gzip, br", CODING_UNKNOWN, "br"},
	    {"gzip, gzip", CODING_UNKNOWN, "gzip, gzip"},
	    {"gzip, deflate", CODING_UNKNOWN, "gzip, deflate"},
	    {"x-gzip, identity, Deflate", CODING_UNKNOWN, "gzip, Deflate"},
	    {"gzip;q=1", CODING_UNKNOWN, "gzip;q=1"},
	    {"zst\x01", CODING_UNKNOWN, "zst?"},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct content_encoding ce;

		content_encoding_init(&ce);
		content_encoding_add(&ce, cases[i].field);
		ck_assert_msg(ce.coding == cases[i].want, "case %zu (%s): %d", i, cases[i].field,
			      (int)ce.coding);
		ck_assert_str_eq(ce.unsupported, cases[i].named);
	}
}
END_TEST

/* A reply of n bytes of JSON-like text, content type ct, as the API leaves it. */
static void reply_of(struct api_reply *reply, size_t n, const char *ct)
{
	char *text = json_like(n, n);

	memset(reply, 0, sizeof *reply);
	reply->status = 200;
	reply->content_type = ct;
	buf_init(&reply->body, 2 * n + 64);
	ck_assert_int_eq(buf_append(&reply->body, text, n), 0);
	free(text);
}

/* Which answers compress_reply codes: JSON and text of at least
 * COMPRESS_MIN_BYTES; not one byte fewer, a 204, level 0, identity, another
 * type, nor v2's binary tensors after a JSON header. */
START_TEST(test_compress_reply_which_answers)
{
	static const struct {
		size_t n;
		const char *ct;
		int status, level;
		size_t header_len;
		enum coding c;
		const char *want; /* NULL: left as it was */
	} cases[] = {
	    {COMPRESS_MIN_BYTES, "application/json", 200, 1, 0, CODING_GZIP, "gzip"},
	    {COMPRESS_MIN_BYTES, "text/plain; version=0.0.4", 200, 9, 0, CODING_DEFLATE, "deflate"},
	    {COMPRESS_MIN_BYTES - 1, "application/json", 200, 1, 0, CODING_GZIP, NULL},
	    {COMPRESS_MIN_BYTES, "application/json", 200, 0, 0, CODING_GZIP, NULL},
	    {COMPRESS_MIN_BYTES, "application/json", 200, 1, 0, CODING_IDENTITY, NULL},
	    {COMPRESS_MIN_BYTES, "application/json", 204, 1, 0, CODING_GZIP, NULL},
	    {COMPRESS_MIN_BYTES, "application/octet-stream", 200, 1, 0, CODING_GZIP, NULL},
	    {4 * COMPRESS_MIN_BYTES, "application/octet-stream", 200, 1, 100, CODING_GZIP, NULL},
	    {4 * COMPRESS_MIN_BYTES, "application/json", 200, 1, 100, CODING_GZIP, NULL},
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct api_reply reply;
		const char *got;

		reply_of(&reply, cases[i].n, cases[i].ct);
		reply.status = cases[i].status;
		reply.inference_header_len = cases[i].header_len;
		got = compress_reply(&reply, cases[i].c, cases[i].level);
		ck_assert_msg(got == NULL ? cases[i].want == NULL
					  : cases[i].want != NULL && strcmp(got, cases[i].want) == 0,
			      "case %zu: coded %s, want %s", i, got ? got : "not",
			      cases[i].want ? cases[i].want : "not");
		if (got == NULL)
			ck_assert_uint_eq(reply.body.len, cases[i].n);
		else
			ck_assert_uint_lt(reply.body.len, cases[i].n);
		buf_release(&reply.body);
	}
}
END_TEST

static Suite *compress_suite(void)
{
	Suite *s = suite_create("compress");
	TCase *codec = tcase_create("codec");

	tcase_set_timeout(codec, 60);
	tcase_add_test(codec, test_compress_body_inflates_with_zlib);
	tcase_add_test(codec, test_compress_body_refuses_no_gain);
	tcase_add_test(codec, test_decoder_gives_back_zlib_output);
	tcase_add_test(codec, test_decoder_joins_gzip_members);
	tcase_add_test(codec, test_decoder_stops_a_bomb_at_the_maximum);
	tcase_add_test(codec, test_decoder_names_corrupt_input);
	tcase_add_test(codec, test_accept_encoding_table);
	tcase_add_test(codec, test_accept_encoding_choose_from_gzip);
	tcase_add_test(codec, test_content_encoding_table);
	tcase_add_test(codec, test_compress_reply_which_answers);
	suite_add_tcase(s, codec);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, compress_suite, NULL);
}
