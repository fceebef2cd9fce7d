/*
 * check_compress_http.c: the daemon's content codings over real HTTP (the
 * module itself is check_compress.c), against zlib's one-shot calls
 * (tests/lib/zlib_twins.h).
 *
 *   answers  gzip and deflate answers inflate to exactly the identity answer
 *            (up to "usage", whose milliseconds differ); q-values and
 *            identity;q=0 choose; small answers go uncoded; Vary on every
 *            answer of a compute route and on no other; coded request bodies
 *            (chunked too) answer as plain ones; the answer limits hold
 *            before compression; --compress-level 0 codes nothing; a 10 MB
 *            zip bomb against --max-body 1 MiB gets 413 and VmHWM grows by
 *            about the limit, not the bomb; corrupt gzip 400, an unknown
 *            coding 415; the preflight allows Content-Encoding; response
 *            bytes count what went on the wire
 *   viewer   the viewer's files gzipped at build time to a client that takes
 *            gzip (inflating to the file), an entity tag each, 304 to
 *            If-None-Match with the tag of what the client would get, Vary
 *            on every answer of their paths; 412 to an If-Match naming
 *            another tag
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
#include "tests/lib/zlib_twins.h"

enum { MiB = 1 << 20 };

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
	    {"Accept-Encoding: deflate;q=0.5, gzip; q =0\r\n", "deflate"}, /* no token: skipped */
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
	/* a route whose answers are never coded (all are small): no Vary on
	 * Accept-Encoding */
	live_exchange(d.port,
		      "GET /v1/models HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n"
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
	/* the codings that would have been read (RFC 9110 section 12.5.3) */
	ck_assert_pstr_eq(live_header(&r, "Accept-Encoding"), "gzip, deflate, identity");
	live_post(d.port, "/v2/models/base/infer", "application/json",
		  "Content-Encoding: zstd\r\n", gz, gz_len, &r);
	ck_assert_int_eq(r.status, 415);
	ck_assert_ptr_nonnull(strstr(r.body, "'zstd'"));
	ck_assert_pstr_eq(live_header(&r, "Accept-Encoding"), "gzip, deflate, identity");
	/* a 415 for the media type is no matter of coding */
	live_post(d.port, "/v1/attention", "text/plain", "", gz, gz_len, &r);
	ck_assert_int_eq(r.status, 415);
	ck_assert_ptr_null(live_header(&r, "Accept-Encoding"));
	live_get(d.port, "/metrics", &r);
	ck_assert(live_metric(r.body, "attnd_rejections_total{reason=\"bad_encoding\"}") == 2);
	ck_assert(live_metric(r.body, "attnd_rejections_total{reason=\"unsupported_encoding\"}") ==
		  2);
	live_resp_release(&r);
	live_stop(&d);
	free(gz);
}
END_TEST

/* A body whose first bytes are no gzip stream is answered 400 at once, with
 * Connection: close: the rest of its (announced) megabyte is never waited
 * for, so a client that sent a wrong header learns it before its upload. */
START_TEST(test_corrupt_stream_answered_before_its_end)
{
	char head[256];
	struct live_resp r = {0};
	int fd;
	double t0;

	LIVE_DAEMON(d, "--threads", "2", "--timeout", "30");
	fd = live_connect(d.port);
	snprintf(head, sizeof head,
		 "%sContent-Encoding: gzip\r\nContent-Length: 1000000\r\n\r\n",
		 LIVE_POST_ATTENTION);
	t0 = live_now();
	live_send_str(fd, head);
	live_send_all(fd, WEIGHTS_BODY, sizeof WEIGHTS_BODY - 1); /* plain JSON, not gzip */
	live_read_response(fd, &r);
	close(fd);
	live_assert_error(&r, 400, "bad_request");
	ck_assert_ptr_nonnull(strstr(r.body, "the gzip request body does not inflate"));
	ck_assert_str_eq(live_header(&r, "Connection"), "close");
	ck_assert_msg(live_now() - t0 < 10.0, "answered after %.1f s", live_now() - t0);
	/* counted when the request completes, maybe after a first scrape */
	live_wait_metric(d.port, "attnd_rejections_total{reason=\"bad_encoding\"}", 1, 10000);
	live_resp_release(&r);
	live_stop(&d);
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
	/* a page's script (its request has Origin) may read the coding */
	post_weights(d.port, "Origin: http://a.test\r\nAccept-Encoding: gzip\r\n", &r);
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
	/* no match; a malformed element ends the list before its `*`; `*` is
	 * one only as the whole field, not with more after it nor in a list */
	static const char *const misses[] = {"If-None-Match: \"other\"\r\n",
					     "If-None-Match: abc, *\r\n",
					     "If-None-Match: *junk\r\n",
					     "If-None-Match: *\"x\"\r\n",
					     "If-None-Match: \"other\", *\r\n",
					     "If-None-Match: *, \"other\"\r\n"};
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

/* /openapi.json is served as the viewer's files are: a gzip copy made at
 * build time, an entity tag for each representation, 304 to a client that
 * has the one it would get; whatever --compress-level, and with --api-key
 * still asking for the key. */
START_TEST(test_openapi_gzip_and_etag)
{
	struct live_resp plain = {0}, gz = {0}, r = {0};
	char hdr[256], tag[64], gz_tag[80];
	size_t back_len;
	unsigned char *back;

	LIVE_DAEMON(d, "--compress-level", "0", "--api-key", "k");
	get_with(d.port, "GET", "/openapi.json", "Authorization: Bearer k\r\n", &plain);
	ck_assert_int_eq(plain.status, 200);
	ck_assert_str_eq(live_header(&plain, "Content-Type"), "application/json");
	ck_assert_str_eq(coding_of(&plain), "");
	ck_assert_str_eq(live_header(&plain, "Vary"), "Accept-Encoding");
	ck_assert_str_eq(live_header(&plain, "Cache-Control"), "no-cache");
	ck_assert_ptr_nonnull(live_header(&plain, "ETag"));
	get_with(d.port, "GET", "/openapi.json",
		 "Authorization: Bearer k\r\nAccept-Encoding: gzip\r\n", &gz);
	ck_assert_int_eq(gz.status, 200);
	ck_assert_str_eq(coding_of(&gz), "gzip");
	snprintf(tag, sizeof tag, "%s", live_header(&plain, "ETag"));
	snprintf(gz_tag, sizeof gz_tag, "%s", live_header(&gz, "ETag"));
	ck_assert_msg(strlen(gz_tag) == 23 && strncmp(gz_tag, tag, 17) != 0,
		      "the copy's ETag %s (the document's %s)", gz_tag, tag);
	ck_assert_uint_lt(gz.body_len * 3, plain.body_len); /* 134 KB to about 34 */
	back = zlib_inflate(GZIP_BITS, gz.body, gz.body_len, plain.body_len, &back_len);
	ck_assert_uint_eq(back_len, plain.body_len);
	ck_assert(memcmp(back, plain.body, plain.body_len) == 0);
	free(back);
	snprintf(hdr, sizeof hdr, "Authorization: Bearer k\r\nAccept-Encoding: gzip\r\n"
		 "If-None-Match: %s\r\n", gz_tag);
	get_with(d.port, "GET", "/openapi.json", hdr, &r);
	ck_assert_int_eq(r.status, 304);
	ck_assert_uint_eq(r.body_len, 0);
	get_with(d.port, "GET", "/openapi.json", "Accept-Encoding: gzip\r\n", &r);
	live_assert_error(&r, 401, "unauthorized");
	live_resp_release(&plain);
	live_resp_release(&gz);
	live_resp_release(&r);
	live_stop(&d);
}
END_TEST

/* A client that takes gzip gets the gzip copy of a file however it ranks
 * deflate, which no file has a copy in: the choice is among the codings
 * offered (RFC 9110 section 12.5.3), so "deflate, gzip;q=0.5" is gzip, not
 * the file as it is (which "identity;q=0" even rules out); identity ranked
 * above gzip still gets the file. */
START_TEST(test_files_gzip_when_deflate_ranks_higher)
{
	static const struct {
		const char *accept;
		const char *want;
	} cases[] = {
	    {"Accept-Encoding: deflate, gzip;q=0.5\r\n", "gzip"},
	    {"Accept-Encoding: deflate, gzip;q=0.5, identity;q=0\r\n", "gzip"},
	    {"Accept-Encoding: deflate;q=1, gzip;q=0.8, identity;q=0.1\r\n", "gzip"},
	    {"Accept-Encoding: deflate, *;q=0.3\r\n", "gzip"},
	    {"Accept-Encoding: deflate, gzip;q=0.5, identity;q=0.6\r\n", ""},
	    {"Accept-Encoding: deflate\r\n", ""},
	    {"Accept-Encoding: deflate, gzip;q=0\r\n", ""},
	};
	static const char *const paths[] = {"/web/app.js", "/openapi.json"};
	struct live_resp r = {0};

	LIVE_DAEMON(d, "--threads", "2");
	for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++)
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			get_with(d.port, "GET", paths[p], cases[i].accept, &r);
			ck_assert_int_eq(r.status, 200);
			ck_assert_msg(strcmp(coding_of(&r), cases[i].want) == 0, "%s %s: got '%s'",
				      paths[p], cases[i].accept, coding_of(&r));
		}
	live_resp_release(&r);
	live_stop(&d);
}
END_TEST

/* If-Match on a file with an ETag (RFC 9110 section 13.1.1): a list that
 * names the representation this request would get, compared strongly, or
 * `*`, is answered; any other 412 with the JSON error body and no ETag,
 * before If-None-Match is looked at (section 13.2.2). */
START_TEST(test_if_match_412)
{
	/* each field is before + (the tag, when tagged) + after */
	static const struct {
		const char *before;
		int tagged, status;
		const char *after;
	} cases[] = {
	    {"", 1, 200, ""},		   {"*", 0, 200, ""},
	    {"\"other\", ", 1, 200, ""}, {" ", 1, 200, " , \"x\""},
	    {"\"other\"", 0, 412, ""},   {"W/", 1, 412, ""}, /* strong comparison */
	    {"\"\"", 0, 412, ""},	   {"*, ", 1, 412, ""}, /* `*` only as the whole field */
	};
	struct live_resp plain = {0}, r = {0};
	char tag[64], hdr[256];

	LIVE_DAEMON(d, "--compress-level", "0");
	live_get(d.port, "/openapi.json", &plain);
	ck_assert_int_eq(plain.status, 200);
	snprintf(tag, sizeof tag, "%s", live_header(&plain, "ETag"));
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(hdr, sizeof hdr, "If-Match: %s%s%s\r\n", cases[i].before,
			 cases[i].tagged ? tag : "", cases[i].after);
		get_with(d.port, "GET", "/openapi.json", hdr, &r);
		ck_assert_msg(r.status == cases[i].status, "%s: %d", hdr, r.status);
		if (r.status == 200) {
			ck_assert_uint_eq(r.body_len, plain.body_len);
			continue;
		}
		live_assert_error(&r, 412, "precondition_failed");
		ck_assert_ptr_null(live_header(&r, "ETag"));
	}
	/* the identity's tag is not the gzip copy's; If-Match goes first */
	snprintf(hdr, sizeof hdr, "Accept-Encoding: gzip\r\nIf-Match: %s\r\n", tag);
	get_with(d.port, "GET", "/openapi.json", hdr, &r);
	live_assert_error(&r, 412, "precondition_failed");
	snprintf(hdr, sizeof hdr, "If-Match: \"other\"\r\nIf-None-Match: %s\r\n", tag);
	get_with(d.port, "GET", "/openapi.json", hdr, &r);
	live_assert_error(&r, 412, "precondition_failed");
	/* a viewer's file is the same kind of answer */
	get_with(d.port, "GET", "/web/app.js", "If-Match: \"other\"\r\n", &r);
	live_assert_error(&r, 412, "precondition_failed");
	live_resp_release(&plain);
	live_resp_release(&r);
	live_stop(&d);
}
END_TEST

/* /metrics is coded as Accept-Encoding asks, as Prometheus asks for gzip,
 * and varies on it; with --compress-level 0 it is not, and does not. */
START_TEST(test_metrics_gzip)
{
	static const char gzip_asked[] = "Accept-Encoding: gzip\r\n";
	static const char series[] = "# TYPE attnd_http_requests_total counter";
	struct live_resp plain = {0}, gz = {0};
	size_t back_len;
	unsigned char *back;

	for (int level = 1; level >= 0; level--) {
		char lv[2] = {(char)('0' + level), '\0'};

		LIVE_DAEMON(d, "--compress-level", lv);
		get_with(d.port, "GET", "/metrics", gzip_asked, &gz);
		get_with(d.port, "GET", "/metrics", "", &plain);
		ck_assert_int_eq(gz.status, 200);
		ck_assert_str_eq(live_header(&gz, "Content-Type"), live_header(&plain, "Content-Type"));
		ck_assert_str_eq(coding_of(&plain), "");
		if (level == 0) {
			ck_assert_str_eq(coding_of(&gz), "");
			ck_assert_ptr_null(live_header(&gz, "Vary"));
			live_stop(&d);
			continue;
		}
		ck_assert_str_eq(coding_of(&gz), "gzip");
		ck_assert_str_eq(live_header(&gz, "Vary"), "Accept-Encoding");
		ck_assert_uint_lt(gz.body_len * 4, plain.body_len);
		/* the second scrape counts the first: compare what both hold */
		back = zlib_inflate(GZIP_BITS, gz.body, gz.body_len, 4 * plain.body_len, &back_len);
		ck_assert_ptr_nonnull(memmem(back, back_len, series, sizeof series - 1));
		ck_assert_uint_gt(back_len * 10, plain.body_len * 9);
		free(back);
		live_stop(&d);
	}
	live_resp_release(&plain);
	live_resp_release(&gz);
}
END_TEST

static Suite *compress_http_suite(void)
{
	Suite *s = suite_create("compress_http");
	TCase *daemon = tcase_create("daemon");

	tcase_set_timeout(daemon, 120);
	tcase_add_test(daemon, test_coded_answers_inflate_to_identity);
	tcase_add_test(daemon, test_q_values_choose_the_coding);
	tcase_add_test(daemon, test_small_answers_and_other_routes_uncoded);
	tcase_add_test(daemon, test_small_request_large_answer_coded);
	tcase_add_test(daemon, test_coded_bodies_answer_as_plain_ones);
	tcase_add_test(daemon, test_chunked_coded_body_level_0_and_the_answer_limit);
	tcase_add_test(daemon, test_zip_bomb_413_within_the_limit);
	tcase_add_test(daemon, test_corrupt_400_and_unknown_coding_415);
	tcase_add_test(daemon, test_corrupt_stream_answered_before_its_end);
	tcase_add_test(daemon, test_preflight_and_wire_bytes);
	tcase_add_test(daemon, test_viewer_files_gzip_and_etag);
	tcase_add_test(daemon, test_openapi_gzip_and_etag);
	tcase_add_test(daemon, test_files_gzip_when_deflate_ranks_higher);
	tcase_add_test(daemon, test_if_match_412);
	tcase_add_test(daemon, test_metrics_gzip);
	suite_add_tcase(s, daemon);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {.daemon = true};

	return suite_main(argc, argv, compress_http_suite, &opts);
}
