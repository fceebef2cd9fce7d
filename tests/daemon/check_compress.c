/*
 * check_compress.c: content codings, the module (server/compress.c) against
 * zlib's own one-shot calls, then the daemon over real HTTP.
 *
 *   codec    compress_body's gzip and deflate inflate back with zlib's
 *            uncompress (its naive twin) and a one-shot inflate; the body
 *            decoder, fed zlib's compress2 output in seeded random chunks,
 *            gives the bytes back; a zip bomb stops at the buffer's maximum
 *            with nothing allocated past it; corrupt, truncated and trailing
 *            bytes are named; Accept-Encoding and Content-Encoding as tables
 *   daemon   gzip and deflate answers inflate to exactly the identity answer
 *            (up to "usage", whose milliseconds differ); q-values and
 *            identity;q=0 choose; small answers go uncoded; Vary on every
 *            answer of a compute route and on no other; coded request bodies
 *            (chunked too) answer as plain ones; the answer limits hold
 *            before compression; --compress-level 0 codes nothing; a 10 MB zip bomb against --max-body 1 MiB
 *            gets 413 and VmHWM grows by about the limit, not the bomb;
 *            corrupt gzip 400, an unknown coding 415; the preflight allows
 *            Content-Encoding; response bytes count what went on the wire
 *   viewer   the viewer's files gzipped at build time to a client that takes
 *            gzip (inflating to the file), an entity tag each, 304 to
 *            If-None-Match with the tag of what the client would get, Vary
 *            on every answer of their paths
 */
#define _GNU_SOURCE /* memmem, strcasestr */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define ZLIB_CONST
#include <zlib.h>

#include "api/service.h"
#include "server/compress.h"
#include "tests/lib/case_files.h"
#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

enum { GZIP_BITS = 15 + 16, ZLIB_BITS = 15, MiB = 1 << 20 };

/* ---- zlib's one-shot calls, the twins --------------------------------------- */

/* bytes in zlib (bits 15) or gzip (bits 31) format, one deflate call; the
 * caller frees. */
static unsigned char *zlib_code(int bits, const void *in, size_t n, size_t *out_len)
{
	z_stream z;
	unsigned char *out;
	size_t cap;

	memset(&z, 0, sizeof z);
	ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
	cap = deflateBound(&z, (uLong)n) + 32;
	out = malloc(cap);
	ck_assert_ptr_nonnull(out);
	z.next_in = in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

/* in inflated at once (bits as above); the caller frees. Fails the test
 * unless in is one whole stream of at most cap bytes inflated. */
static unsigned char *zlib_inflate(int bits, const void *in, size_t n, size_t cap,
				   size_t *out_len)
{
	unsigned char *out = malloc(cap + 1);
	z_stream z;

	ck_assert_ptr_nonnull(out);
	memset(&z, 0, sizeof z);
	ck_assert_int_eq(inflateInit2(&z, bits), Z_OK);
	z.next_in = in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap + 1;
	ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
	ck_assert_uint_eq(z.avail_in, 0);
	*out_len = z.total_out;
	inflateEnd(&z);
	return out;
}

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
	    {"gzip, gzip", CODING_UNKNOWN, "two codings"},
	    {"gzip, deflate", CODING_UNKNOWN, "two codings"},
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

/* ---- daemon ------------------------------------------------------------------ */

/* 48 words on base with per-head weights: about 450 KB of JSON, not small
 * (it goes to a worker). */
static const char WEIGHTS_BODY[] =
    "{\"model\":\"base\",\"weights\":\"per_head\",\"text\":\"the cat sat on the mat and "
    "looked at the dog who was very happy to see her in the sun after a long day of "
    "rain they went home with some bread and water then slept until night came and the "
    "cat sat on the mat again\"}";

/* a and b are the same answer up to "usage" (its milliseconds differ). */
static void assert_same_answer(const char *a, size_t a_len, const char *b, size_t b_len)
{
	const char *ua = memmem(a, a_len, "\"usage\"", 7);
	const char *ub = memmem(b, b_len, "\"usage\"", 7);

	ck_assert_ptr_nonnull(ua);
	ck_assert_ptr_nonnull(ub);
	ck_assert_uint_eq((size_t)(ua - a), (size_t)(ub - b));
	ck_assert(memcmp(a, b, (size_t)(ua - a)) == 0);
}

/* coded (zlib window bits `bits`) inflates to plain's answer. */
static void assert_inflates_to(int bits, const struct live_resp *coded,
			       const struct live_resp *plain)
{
	size_t back_len;
	unsigned char *back =
	    zlib_inflate(bits, coded->body, coded->body_len, plain->body_len * 2, &back_len);

	assert_same_answer((char *)back, back_len, plain->body, plain->body_len);
	free(back);
}

static void post_weights(unsigned port, const char *extra, struct live_resp *r)
{
	live_post(port, "/v1/attention", "application/json", extra, WEIGHTS_BODY,
		  sizeof WEIGHTS_BODY - 1, r);
	ck_assert_int_eq(r->status, 200);
}

/* r's Content-Encoding, "" without one. */
static const char *coding_of(const struct live_resp *r)
{
	const char *ce = live_header(r, "Content-Encoding");

	return ce != NULL ? ce : "";
}

START_TEST(test_coded_answers_inflate_to_identity)
{
	struct live_resp plain = {0}, gz = {0}, df = {0};

	LIVE_DAEMON(d, "--threads", "2");
	post_weights(d.port, "", &plain);
	post_weights(d.port, "Accept-Encoding: gzip\r\n", &gz);
	post_weights(d.port, "Accept-Encoding: deflate\r\n", &df);
	ck_assert_str_eq(coding_of(&plain), "");
	ck_assert_str_eq(coding_of(&gz), "gzip");
	ck_assert_str_eq(coding_of(&df), "deflate");
	ck_assert_uint_gt(plain.body_len, 100000);
	ck_assert_uint_lt(gz.body_len * 2, plain.body_len); /* numbers shrink well */
	ck_assert_str_eq(live_header(&plain, "Vary"), "Accept-Encoding");
	ck_assert_str_eq(live_header(&gz, "Vary"), "Accept-Encoding");
	assert_inflates_to(GZIP_BITS, &gz, &plain);
	assert_inflates_to(ZLIB_BITS, &df, &plain);
	live_resp_release(&plain);
	live_resp_release(&gz);
	live_resp_release(&df);
	live_stop(&d);
}
END_TEST

START_TEST(test_q_values_choose_the_coding)
{
	static const struct {
		const char *accept;
		const char *want;
	} cases[] = {
	    {"Accept-Encoding: gzip;q=0, deflate\r\n", "deflate"},
	    {"Accept-Encoding: identity;q=0, gzip;q=0.5\r\n", "gzip"},
	    {"Accept-Encoding: gzip;q=0.5, identity\r\n", ""},
	    {"Accept-Encoding: *;q=0\r\n", ""},
	    {"Accept-Encoding: *\r\n", "gzip"},
	    {"Accept-Encoding: DEFLATE;Q=1, GZip;q=0.999\r\n", "deflate"},
	    {"Accept-Encoding: br\r\nAccept-Encoding: deflate\r\n", "deflate"},
	    {"Accept-Encoding: \r\n", ""},
	};
	struct live_resp r = {0};

	LIVE_DAEMON(d, "--threads", "2");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		post_weights(d.port, cases[i].accept, &r);
		ck_assert_msg(strcmp(coding_of(&r), cases[i].want) == 0, "%s: got '%s'",
			      cases[i].accept, coding_of(&r));
		ck_assert_str_eq(live_header(&r, "Vary"), "Accept-Encoding");
	}
	live_resp_release(&r);
	live_stop(&d);
}
END_TEST

START_TEST(test_small_answers_and_other_routes_uncoded)
{
	/* answered inline (a small request), and on a worker (422, a body past
	 * the small bound): both below COMPRESS_MIN_BYTES */
	static const char small[] = "{\"model\": \"tiny\", \"text\": \"the cat sat on\"}";
	char bad[800];
	struct live_resp r = {0};

	LIVE_DAEMON(d, "--threads", "2", "--cors-origins", "http://a.test");
	live_post(d.port, "/v1/attention", "application/json", "Accept-Encoding: gzip\r\n", small,
		  sizeof small - 1, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_lt(r.body_len, COMPRESS_MIN_BYTES);
	ck_assert_str_eq(coding_of(&r), "");
	ck_assert_str_eq(live_header(&r, "Vary"), "Origin, Accept-Encoding");
	snprintf(bad, sizeof bad, "{\"model\": \"base\", \"nope\": \"%0700d\"}", 0);
	live_post(d.port, "/v1/attention", "application/json", "Accept-Encoding: gzip\r\n", bad,
		  strlen(bad), &r);
	live_assert_error(&r, 422, "unknown_field");
	ck_assert_str_eq(coding_of(&r), "");
	ck_assert_str_eq(live_header(&r, "Vary"), "Origin, Accept-Encoding");
	/* a route whose answers are never coded: no Vary on Accept-Encoding */
	live_exchange(d.port,
		      "GET /openapi.json HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n"
		      "Connection: close\r\n\r\n",
		      &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(coding_of(&r), "");
	ck_assert_str_eq(live_header(&r, "Vary"), "Origin");
	live_resp_release(&r);
	live_stop(&d);
}
END_TEST

/* A small request (answered on the I/O thread, service.h's API_SMALL_BODY)
 * whose answer passes COMPRESS_MIN_BYTES is coded as a worker's would be. */
START_TEST(test_small_request_large_answer_coded)
{
	static const char body[] = "{\"model\":\"tiny\",\"tokens\":[0,1,2,3,4,5,6,7,8,9,10,11,"
				   "12,13,14,15,16,17,18,19]}";
	struct live_resp plain = {0}, gz = {0};

	ck_assert_uint_le(sizeof body - 1, API_SMALL_BODY);
	LIVE_DAEMON(d, "--threads", "2");
	live_post(d.port, "/v1/attention", "application/json", "", body, sizeof body - 1, &plain);
	live_post(d.port, "/v1/attention", "application/json", "Accept-Encoding: gzip\r\n", body,
		  sizeof body - 1, &gz);
	ck_assert_int_eq(plain.status, 200);
	ck_assert_int_eq(gz.status, 200);
	ck_assert_uint_gt(plain.body_len, COMPRESS_MIN_BYTES);
	ck_assert_str_eq(coding_of(&plain), "");
	ck_assert_str_eq(coding_of(&gz), "gzip");
	assert_inflates_to(GZIP_BITS, &gz, &plain);
	live_resp_release(&plain);
	live_resp_release(&gz);
	live_stop(&d);
}
END_TEST

START_TEST(test_coded_bodies_answer_as_plain_ones)
{
	size_t gz_len;
	unsigned char *gz = zlib_code(GZIP_BITS, WEIGHTS_BODY, sizeof WEIGHTS_BODY - 1, &gz_len);
	uLongf df_len = compressBound(sizeof WEIGHTS_BODY);
	unsigned char *df = malloc(df_len);
	struct live_resp plain = {0}, r = {0};

	ck_assert_int_eq(compress2(df, &df_len, (const Bytef *)WEIGHTS_BODY,
				   sizeof WEIGHTS_BODY - 1, 6),
			 Z_OK);
	LIVE_DAEMON(d, "--threads", "2");
	post_weights(d.port, "", &plain);
	live_post(d.port, "/v1/attention", "application/json", "Content-Encoding: gzip\r\n", gz,
		  gz_len, &r);
	ck_assert_int_eq(r.status, 200);
	assert_same_answer(r.body, r.body_len, plain.body, plain.body_len);
	live_post(d.port, "/v1/attention", "application/json", "Content-Encoding: deflate\r\n", df,
		  df_len, &r);
	ck_assert_int_eq(r.status, 200);
	assert_same_answer(r.body, r.body_len, plain.body, plain.body_len);
	live_post(d.port, "/v1/attention", "application/json", "Content-Encoding: identity\r\n",
		  WEIGHTS_BODY, sizeof WEIGHTS_BODY - 1, &r);
	ck_assert_int_eq(r.status, 200);
	assert_same_answer(r.body, r.body_len, plain.body, plain.body_len);
	live_resp_release(&plain);
	live_resp_release(&r);
	live_stop(&d);
	free(gz);
	free(df);
}
END_TEST

/* body sent in two chunks of Transfer-Encoding: chunked, on a connection
 * of its own; one response into r. */
static void post_chunked(unsigned port, const char *extra, const void *body, size_t len,
			 struct live_resp *r)
{
	const char *p = body;
	size_t half = len / 2;
	char line[64];
	int fd = live_connect(port);

	live_send_str(fd, LIVE_POST_ATTENTION "Transfer-Encoding: chunked\r\nConnection: close\r\n");
	live_send_str(fd, extra);
	live_send_str(fd, "\r\n");
	snprintf(line, sizeof line, "%zx\r\n", half);
	live_send_str(fd, line);
	live_send_all(fd, p, half);
	snprintf(line, sizeof line, "\r\n%zx\r\n", len - half);
	live_send_str(fd, line);
	live_send_all(fd, p + half, len - half);
	live_send_str(fd, "\r\n0\r\n\r\n");
	live_read_response(fd, r);
	close(fd);
}

#define TOKENS_16 "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16"
#define TOKENS_64 TOKENS_16 "," TOKENS_16 "," TOKENS_16 "," TOKENS_16
#define BODY_64 "{\"model\":\"base\",\"weights\":\"per_head\",\"tokens\":[" TOKENS_64 "]}"

START_TEST(test_chunked_coded_body_level_0_and_the_answer_limit)
{
	/* WEIGHTS_BODY's text on tiny: within 1 MiB */
	static const char tiny[] = "{\"model\":\"tiny\",\"text\":\"the cat sat on the mat and "
				   "looked at the dog who was very happy to see her in the sun "
				   "after a long day of rain they went home\"}";
	size_t gz_len;
	unsigned char *gz = zlib_code(GZIP_BITS, tiny, sizeof tiny - 1, &gz_len);
	struct live_resp plain = {0}, r = {0};

	LIVE_DAEMON(d, "--threads", "2", "--max-request-mb", "1", "--compress-level", "0");
	/* chunks of the wire do not line up with the stream's blocks */
	live_post(d.port, "/v1/attention", "application/json", "Accept-Encoding: gzip\r\n", tiny,
		  sizeof tiny - 1, &plain);
	ck_assert_int_eq(plain.status, 200);
	ck_assert_uint_gt(plain.body_len, COMPRESS_MIN_BYTES);
	/* --compress-level 0: never coded, so nothing to vary on */
	ck_assert_str_eq(coding_of(&plain), "");
	ck_assert_ptr_null(live_header(&plain, "Vary"));
	post_chunked(d.port, "Content-Encoding: gzip\r\n", gz, gz_len, &r);
	ck_assert_int_eq(r.status, 200);
	assert_same_answer(r.body, r.body_len, plain.body, plain.body_len);
	/* the limits on an answer hold before compression: 64 tokens' answer
	 * needs 1 MiB and more, though its gzip would be a fifth of that */
	live_post(d.port, "/v1/attention", "application/json", "Accept-Encoding: gzip\r\n", BODY_64,
		  strlen(BODY_64), &r);
	ck_assert_int_eq(r.status, 422);
	ck_assert_str_eq(coding_of(&r), "");
	live_resp_release(&plain);
	live_resp_release(&r);
	live_stop(&d);
	free(gz);
}
END_TEST

/* What a 1 MiB body may add to the daemon's VmHWM. Under ASan (the suite
 * and the daemon are built alike) freed blocks wait in quarantine, so every
 * doubling of the buffer stays resident, and shadow memory adds an eighth:
 * about 3.2 MiB measured. Under TSan its shadow, more than twice the
 * memory touched, brings it to about 3.3 MiB. Both stay far below the
 * bomb's 10 MiB. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
enum { BOMB_HWM_KIB = 6144 };
#else
enum { BOMB_HWM_KIB = 2048 };
#endif

START_TEST(test_zip_bomb_413_within_the_limit)
{
	size_t zeros = 10u * MiB, bomb_len, small_len;
	char *z = calloc(zeros, 1);
	unsigned char *bomb = zlib_code(GZIP_BITS, z, zeros, &bomb_len);
	unsigned char *small = zlib_code(GZIP_BITS, "{}", 2, &small_len);
	struct live_resp r = {0};
	long before, after;

	free(z);
	LIVE_DAEMON(d, "--threads", "2", "--max-body", "1048576");
	/* warm up: a coded body (zlib's pages), then the baseline */
	live_post(d.port, "/v1/attention", "application/json", "Content-Encoding: gzip\r\n", small,
		  small_len, &r);
	ck_assert_int_eq(r.status, 422);
	before = live_proc_kib(d.pid, "VmHWM");
	live_post(d.port, "/v1/attention", "application/json", "Content-Encoding: gzip\r\n", bomb,
		  bomb_len, &r);
	live_assert_error(&r, 413, "payload_too_large");
	ck_assert_ptr_nonnull(strstr(r.body, "inflates to more than --max-body"));
	after = live_proc_kib(d.pid, "VmHWM");
	/* the body buffer doubles up to the limit (1 MiB), the last step holding
	 * the old half beside it: 1.5 MiB at most, plus zlib's state; the bomb
	 * itself is 10 MiB */
	ck_assert_msg(after - before < BOMB_HWM_KIB, "VmHWM grew by %ld KiB", after - before);
	fprintf(stderr, "zip bomb: VmHWM grew by %ld KiB (--max-body 1024 KiB; bound %d KiB)\n",
		after - before, (int)BOMB_HWM_KIB);
	live_get(d.port, "/healthz", &r);
	ck_assert_int_eq(r.status, 200);
	live_resp_release(&r);
	live_stop(&d);
	free(bomb);
	free(small);
}
END_TEST

START_TEST(test_corrupt_400_and_unknown_coding_415)
{
	size_t gz_len;
	unsigned char *gz = zlib_code(GZIP_BITS, WEIGHTS_BODY, sizeof WEIGHTS_BODY - 1, &gz_len);
	struct live_resp r = {0};

	LIVE_DAEMON(d, "--threads", "2");
	live_post(d.port, "/v1/attention", "application/json", "Content-Encoding: gzip\r\n",
		  WEIGHTS_BODY, sizeof WEIGHTS_BODY - 1, &r);
	live_assert_error(&r, 400, "bad_request");
	ck_assert_ptr_nonnull(strstr(r.body, "the gzip request body does not inflate"));
	live_post(d.port, "/v1/attention", "application/json", "Content-Encoding: gzip\r\n", gz,
		  gz_len / 2, &r); /* truncated */
	live_assert_error(&r, 400, "bad_request");
	ck_assert_ptr_nonnull(strstr(r.body, "ends before"));
	live_post(d.port, "/v1/attention", "application/json", "Content-Encoding: br\r\n", gz,
		  gz_len, &r);
	live_assert_error(&r, 415, "unsupported_media_type");
	ck_assert_ptr_nonnull(strstr(r.body, "Content-Encoding 'br' is not supported"));
	ck_assert_str_eq(live_header(&r, "Vary"), "Accept-Encoding");
	live_post(d.port, "/v2/models/base/infer", "application/json",
		  "Content-Encoding: zstd\r\n", gz, gz_len, &r);
	ck_assert_int_eq(r.status, 415);
	ck_assert_ptr_nonnull(strstr(r.body, "'zstd'"));
	live_get(d.port, "/metrics", &r);
	ck_assert(live_metric(r.body, "attnd_rejections_total{reason=\"bad_encoding\"}") == 2);
	ck_assert(live_metric(r.body, "attnd_rejections_total{reason=\"unsupported_encoding\"}") ==
		  2);
	live_resp_release(&r);
	live_stop(&d);
	free(gz);
}
END_TEST

START_TEST(test_preflight_and_wire_bytes)
{
	struct live_resp r = {0}, m = {0};
	double before, after = 0;
	int scrapes;

	LIVE_DAEMON(d, "--threads", "2");
	live_exchange(d.port,
		      "OPTIONS /v1/attention HTTP/1.1\r\nHost: t\r\nOrigin: http://a.test\r\n"
		      "Access-Control-Request-Method: POST\r\n"
		      "Access-Control-Request-Headers: content-type, content-encoding\r\n"
		      "Connection: close\r\n\r\n",
		      &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_ptr_nonnull(strcasestr(live_header(&r, "Access-Control-Allow-Headers"),
					 "Content-Encoding"));
	/* attnd_http_response_bytes_total counts the coded bytes sent */
	live_get(d.port, "/metrics", &m);
	before = live_metric(m.body, "attnd_http_response_bytes_total");
	post_weights(d.port, "Accept-Encoding: gzip\r\n", &r);
	ck_assert_str_eq(coding_of(&r), "gzip");
	ck_assert_str_eq(live_header(&r, "Access-Control-Expose-Headers") != NULL ? "y" : "n", "y");
	/* counted when the answer's request completes, which with several I/O
	 * threads may come after the next scrape: scrape until it shows */
	for (scrapes = 1; scrapes <= 100; scrapes++) {
		live_get(d.port, "/metrics", &m);
		after = live_metric(m.body, "attnd_http_response_bytes_total");
		if (after - before >= (double)r.body_len)
			break;
		usleep(20000);
	}
	/* between the first scrape and the last: the answer and the scrapes' own bodies */
	ck_assert_msg(after - before < (double)r.body_len + 200000.0 * scrapes &&
			  after - before >= (double)r.body_len,
		      "%.0f bytes counted for a %zu byte answer", after - before, r.body_len);
	live_resp_release(&r);
	live_resp_release(&m);
	live_stop(&d);
}
END_TEST

/* GET path with extra header lines (each ending CRLF) into r. */
static void get_with(unsigned port, const char *method, const char *path, const char *extra,
		     struct live_resp *r)
{
	char head[1024];

	snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: t\r\n%s", method, path, extra);
	live_request(port, head, NULL, 0, r);
}

/* The viewer's files: gzipped at build time for a client that takes gzip,
 * each representation with its own entity tag, and 304 with no body to a
 * client that has the one it would get (If-None-Match, compared weakly, a
 * list read tag by tag). */
START_TEST(test_viewer_files_gzip_and_etag)
{
	/* no match; a malformed element ends the list before its `*`; a `*`
	 * with more after it is no `*` */
	static const char *const misses[] = {"If-None-Match: \"other\"\r\n",
					     "If-None-Match: abc, *\r\n",
					     "If-None-Match: *junk\r\n",
					     "If-None-Match: *\"x\"\r\n"};
	struct live_resp plain = {0}, gz = {0}, r = {0};
	char tag[64], gz_tag[80], hdr[256];
	size_t file_len, back_len;
	char *file = case_slurp("web/app.js", &file_len); /* the suites run in the repository */
	unsigned char *back;

	ck_assert_ptr_nonnull(file);
	LIVE_DAEMON(d, "--compress-level", "0"); /* a file's copy costs nothing to send */
	live_get(d.port, "/web/app.js", &plain);
	ck_assert_int_eq(plain.status, 200);
	ck_assert_str_eq(coding_of(&plain), "");
	ck_assert_uint_eq(plain.body_len, file_len);
	ck_assert(memcmp(plain.body, file, file_len) == 0);
	ck_assert_str_eq(live_header(&plain, "Vary"), "Accept-Encoding");
	ck_assert_str_eq(live_header(&plain, "Cache-Control"), "no-cache");
	snprintf(tag, sizeof tag, "%s", live_header(&plain, "ETag"));
	ck_assert_msg(strlen(tag) == 18 && tag[0] == '"' && tag[17] == '"', "ETag %s", tag);

	get_with(d.port, "GET", "/web/app.js", "Accept-Encoding: gzip, deflate, br\r\n", &gz);
	ck_assert_int_eq(gz.status, 200);
	ck_assert_str_eq(coding_of(&gz), "gzip");
	snprintf(gz_tag, sizeof gz_tag, "%s", live_header(&gz, "ETag"));
	ck_assert_msg(strlen(gz_tag) == 23 && strcmp(gz_tag + 17, "-gzip\"") == 0 &&
			  strncmp(gz_tag, tag, 17) != 0,
		      "the copy's ETag %s (the file's %s)", gz_tag, tag);
	ck_assert_uint_lt(gz.body_len * 2, file_len);
	back = zlib_inflate(GZIP_BITS, gz.body, gz.body_len, file_len, &back_len);
	ck_assert_uint_eq(back_len, file_len);
	ck_assert(memcmp(back, file, file_len) == 0);
	free(back);

	/* the tag of the representation this request would get: 304, no body,
	 * the 200's Content-Length, its tag and Vary, no coding or type */
	snprintf(hdr, sizeof hdr, "If-None-Match: %s\r\n", tag);
	get_with(d.port, "GET", "/web/app.js", hdr, &r);
	ck_assert_int_eq(r.status, 304);
	ck_assert_uint_eq(r.body_len, 0);
	ck_assert_uint_eq(strtoul(live_header(&r, "Content-Length"), NULL, 10), file_len);
	ck_assert_str_eq(live_header(&r, "ETag"), tag);
	ck_assert_str_eq(live_header(&r, "Vary"), "Accept-Encoding");
	ck_assert_ptr_null(live_header(&r, "Content-Encoding"));
	ck_assert_ptr_null(live_header(&r, "Content-Type"));
	/* the identity's tag does not validate the gzip copy */
	snprintf(hdr, sizeof hdr, "Accept-Encoding: gzip\r\nIf-None-Match: %s\r\n", tag);
	get_with(d.port, "GET", "/web/app.js", hdr, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(coding_of(&r), "gzip");
	/* a list, a weak tag, a comma inside a tag, a second field */
	snprintf(hdr, sizeof hdr, "Accept-Encoding: gzip\r\nIf-None-Match: \"a,b\" ,W/%s\r\n",
		 gz_tag);
	get_with(d.port, "GET", "/web/app.js", hdr, &r);
	ck_assert_int_eq(r.status, 304);
	snprintf(hdr, sizeof hdr, "If-None-Match: \"other\"\r\nIf-None-Match: %s\r\n", tag);
	get_with(d.port, "GET", "/web/app.js", hdr, &r);
	ck_assert_int_eq(r.status, 304);
	get_with(d.port, "HEAD", "/", "If-None-Match: *\r\n", &r);
	ck_assert_int_eq(r.status, 304);
	for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++) {
		get_with(d.port, "GET", "/web/app.js", misses[i], &r);
		ck_assert_msg(r.status == 200 && r.body_len == file_len, "%s: %d", misses[i],
			      r.status);
	}
	snprintf(hdr, sizeof hdr, "If-None-Match: %.16s\r\n", tag + 1); /* no quotes */
	get_with(d.port, "GET", "/web/app.js", hdr, &r);
	ck_assert_int_eq(r.status, 200);
	/* every answer on the viewer's paths varies as its files do */
	get_with(d.port, "POST", "/web/app.js", "", &r);
	ck_assert_int_eq(r.status, 405);
	ck_assert_str_eq(live_header(&r, "Vary"), "Accept-Encoding");
	get_with(d.port, "GET", "/web/nope.js", "", &r);
	ck_assert_int_eq(r.status, 404);
	ck_assert_str_eq(live_header(&r, "Vary"), "Accept-Encoding");
	live_resp_release(&plain);
	live_resp_release(&gz);
	live_resp_release(&r);
	free(file);
	live_stop(&d);
}
END_TEST

static Suite *compress_suite(void)
{
	Suite *s = suite_create("compress");
	TCase *codec = tcase_create("codec");
	TCase *daemon = tcase_create("daemon");

	tcase_set_timeout(codec, 60);
	tcase_add_test(codec, test_compress_body_inflates_with_zlib);
	tcase_add_test(codec, test_compress_body_refuses_no_gain);
	tcase_add_test(codec, test_decoder_gives_back_zlib_output);
	tcase_add_test(codec, test_decoder_joins_gzip_members);
	tcase_add_test(codec, test_decoder_stops_a_bomb_at_the_maximum);
	tcase_add_test(codec, test_decoder_names_corrupt_input);
	tcase_add_test(codec, test_accept_encoding_table);
	tcase_add_test(codec, test_content_encoding_table);
	tcase_add_test(codec, test_compress_reply_which_answers);
	suite_add_tcase(s, codec);
	tcase_set_timeout(daemon, 120);
	tcase_add_test(daemon, test_coded_answers_inflate_to_identity);
	tcase_add_test(daemon, test_q_values_choose_the_coding);
	tcase_add_test(daemon, test_small_answers_and_other_routes_uncoded);
	tcase_add_test(daemon, test_small_request_large_answer_coded);
	tcase_add_test(daemon, test_coded_bodies_answer_as_plain_ones);
	tcase_add_test(daemon, test_chunked_coded_body_level_0_and_the_answer_limit);
	tcase_add_test(daemon, test_zip_bomb_413_within_the_limit);
	tcase_add_test(daemon, test_corrupt_400_and_unknown_coding_415);
	tcase_add_test(daemon, test_preflight_and_wire_bytes);
	tcase_add_test(daemon, test_viewer_files_gzip_and_etag);
	suite_add_tcase(s, daemon);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {.daemon = true};

	return suite_main(argc, argv, compress_suite, &opts);
}
