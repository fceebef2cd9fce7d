/*
 * check_fastpath.c: the fast paths of request reading, answering and
 * writing must change nothing but the time they take.
 *
 *   pool     api/json/fastjson.h: rows of 63 numbers stay with jansson, of 64 are
 *            pooled; nested (rank 3, ragged) rows, strings holding brackets,
 *            quotes and escapes around them; rows with anything unusual
 *            (a string, a literal, an out-of-range or 19-digit number) stay;
 *            the placeholder key anywhere in the body turns pooling off
 *   bits     tensors read through the pool are bit-identical to jansson's
 *            for numbers written every way (shortest, %.17g, %.4f, exponents,
 *            integers, -0, subnormals, long mantissas, the float32 edge);
 *            the row loop's short path in check_fastpath_short.c
 *   same     whole answers (status and body, but usage's milliseconds) of a
 *            service with the pool and one without (api_service_set_plain_json)
 *            are identical: /v1/attention with embeddings, key, value, an
 *            inline model's weights and a bias mask; /v1/sdpa; a table of
 *            malformed bodies (each error's line and column, JSON pointer and
 *            message); a placeholder spoofed by the client; and thousands of
 *            random mutations of a valid body
 *   flags    pooled rows read with API_T_BOOL / API_T_INTEGER fail as the
 *            rows would have
 *   small    api_handle with small_only (service.h, API_SMALL_BODY): small
 *            requests, errors among them, get the answer they get without it;
 *            a body over 512 bytes, an inline model, a model too wide, too
 *            many FLOPs or numbers in the answer are declined, reply untouched
 *   fmt      fmt_u64, fmt_fixed and buf_put_u64 against snprintf
 *
 * ATTN_TEST_LIGHT=1 (the default under valgrind; light.h) runs the random sweeps of
 * same and fmt a thousand times shorter.
 */
#include <check.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "api/json/fastjson.h"
#include "common/fmt.h"
#include "engine/prng.h"
#include "tests/lib/expect.h"
#include "tests/lib/light.h"
#include "tests/lib/pool_twins.h"
#include "tests/lib/suite_main.h"
#include "api/json/json_read.h"
#include "api/service.h"
#include "api/json/json_tensor.h"

static struct pool_twins twins; /* pooled and plain services */

/* reproducible test data: the engine's generator (engine/prng.h) */
static struct attn_prng rng_g = {0x9e3779b97f4a7c15ULL};

static uint64_t rng(void)
{
	return attn_prng_next(&rng_g);
}

static double rng_unit(void) /* in [0, 1) */
{
	return attn_prng_uniform(&rng_g);
}

static void setup(void)
{
	pool_twins_start(&twins);
}

static void teardown(void)
{
	pool_twins_stop(&twins);
}

/* ---- building bodies ----------------------------------------------------- */

/* A row of n numbers: text of value i is written by put(i). */
static void put_row(struct buf *b, size_t n, void (*put)(struct buf *, size_t))
{
	buf_putc(b, '[');
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			buf_putc(b, ',');
		put(b, i);
	}
	buf_putc(b, ']');
}

static void put_plain(struct buf *b, size_t i)
{
	buf_printf(b, "%.4f", sin((double)i * 0.37 + (double)b->len * 1e-3));
}

/* Numbers written every way a client might, float32's edges included. */
static void put_any(struct buf *b, size_t i)
{
	static const char *const fixed[] = {
	    "0",
	    "-0",
	    "0.0",
	    "-0.0",
	    "1",
	    "-1",
	    "1e0",
	    "1E+2",
	    "2.5e-3",
	    "-7e-1",
	    "1e-45",
	    "1.4e-45",
	    "7e-46",
	    "1e-400",
	    "-1e-400",
	    "1.17549435e-38",
	    "3.4028234e38",
	    "3.4028234663852886e38",
	    "-3.40282346e+38",
	    "3.4028235e38",
	    "-3.4028235e+38",
	    "3.40282356e38",
	    "0.1000000000000000055511151231257827",
	    "123456789012345678",
	    "-999999999999999999",
	    "9007199254740993",
	    "4.9406564584124654e-324",
	    "0.30000000000000004",
	    "1.00000005960464477539",
	    "1.0000000596046448",
	    "16777217",
	    "16777217.0",
	    "33554435e-1",
	    "0.000000000000000000000000001",
	    "100000000000000000000000e-10",
	    "1234567890.0987654321",
	};
	double x = (rng_unit() - 0.5) * pow(10.0, (double)(rng() % 60) - 30.0);
	float f = (float)x;

	switch (rng() % 9) {
	case 8: /* near a float32 tie, where a double off by one ulp rounds the other way */
		buf_printf(b, "%.*g", 15 + (int)(rng() % 4),
			   ((double)f + (double)nextafterf(f, INFINITY)) / 2);
		break;
	case 0:
		buf_puts(b, fixed[(i + rng()) % (sizeof fixed / sizeof fixed[0])]);
		break;
	case 1:
		buf_printf(b, "%.17g", x);
		break;
	case 2:
		buf_printf(b, "%.9g", x);
		break;
	case 3:
		buf_printf(b, "%.4f", x);
		break;
	case 4:
		buf_printf(b, "%.3e", x);
		break;
	case 5:
		buf_printf(b, "%lld", (long long)(rng() % 2000001) - 1000000);
		break;
	case 6:
		buf_printf(b, "%.12E", x * 1e-20);
		break;
	default:
		buf_printf(b, "%.6g", x);
		break;
	}
}

/* {"<field>": [rows x [n numbers]]} */
static char *rows_body(const char *field, size_t rows, size_t n, void (*put)(struct buf *, size_t))
{
	struct buf b;

	buf_init(&b, (size_t)64 << 20);
	buf_printf(&b, "{\"%s\":[", field);
	for (size_t r = 0; r < rows; r++) {
		if (r > 0)
			buf_puts(&b, ",\n ");
		put_row(&b, n, put);
	}
	buf_puts(&b, "]}");
	ck_assert(!b.failed);
	return buf_detach(&b, NULL);
}

/* ---- comparing ------------------------------------------------------------- */

static int same_attention(const char *body)
{
	return pool_same_answer(&twins, API_ROUTE_ATTENTION, body, strlen(body));
}

/* Rows fastjson_scan pools in body under field. */
static size_t rows_pooled(const char *body, const char *field)
{
	const char *const fields[] = {field, NULL};
	struct fastjson_pool pool = {0};
	size_t len, rows;
	char *copy = fastjson_scan(body, strlen(body), fields, &pool, &len);

	rows = pool_rows(&pool);
	ck_assert((copy != NULL) == (rows > 0));
	if (copy != NULL)
		ck_assert_uint_lt(len, strlen(body));
	free(copy);
	fastjson_pool_release(&pool);
	return rows;
}

/* ---- pool ------------------------------------------------------------------ */

START_TEST(test_row_63_64)
{
	char *b63 = rows_body("x", 3, 63, put_plain), *b64 = rows_body("x", 3, 64, put_plain);

	ck_assert_uint_eq(rows_pooled(b63, "/x"), 0);
	ck_assert_uint_eq(rows_pooled(b64, "/x"), 3);
	ck_assert_uint_eq(rows_pooled(b64, "/y"), 0); /* another field */
	ck_assert_uint_eq(pool_same_tensor(b63, "/x", 0), 0);
	ck_assert_uint_eq(pool_same_tensor(b64, "/x", 0), 3);
	free(b63);
	free(b64);
}
END_TEST

/* A rank-1 array (no array around it) is no row; a ragged rank 3 is. */
START_TEST(test_row_nesting)
{
	struct buf b;
	char *row;

	buf_init(&b, 1 << 20);
	put_row(&b, 70, put_plain);
	row = buf_detach(&b, NULL);
	buf_printf(&b, "{\"x\":%s}", row);
	ck_assert_uint_eq(rows_pooled(b.data, "/x"), 0);
	buf_reset(&b);
	buf_printf(&b, "{\"x\":[[%s,%s],[%s]]}", row, row, row);
	ck_assert_uint_eq(rows_pooled(b.data, "/x"), 3);
	ck_assert_uint_eq(pool_same_tensor(b.data, "/x", API_T_RAGGED), 3);
	buf_reset(&b); /* a row in an object under the field: not a tensor row */
	buf_printf(&b, "{\"x\":[{\"y\":[%s]}],\"z\":{\"x\":[%s]}}", row, row);
	ck_assert_uint_eq(rows_pooled(b.data, "/x"), 0);
	ck_assert_uint_eq(rows_pooled(b.data, "/z/x"), 1);
	buf_reset(&b); /* a row where a number is expected: nested deeper */
	buf_printf(&b, "{\"x\":[[1,%s],[1,2]]}", row);
	ck_assert_uint_eq(pool_same_tensor(b.data, "/x", 0), 1);
	buf_reset(&b); /* rows where arrays of arrays are expected */
	buf_printf(&b, "{\"x\":[[[1,2]],[%s]]}", row);
	ck_assert_uint_eq(pool_same_tensor(b.data, "/x", 0), 1);
	buf_reset(&b);
	buf_printf(&b, "{\"x\":[[%s],[[1,2]]]}", row);
	ck_assert_uint_eq(pool_same_tensor(b.data, "/x", 0), 1);
	buf_reset(&b); /* rows of different lengths */
	buf_printf(&b, "{\"x\":[%s,[%.*s,1]]}", row, (int)strlen(row) - 2, row + 1);
	ck_assert_uint_eq(pool_same_tensor(b.data, "/x", 0), 2);
	buf_release(&b);
	free(row);
}
END_TEST

/* Strings with brackets, quotes and escapes before, between and after rows. */
START_TEST(test_row_strings)
{
	struct buf b;
	char *row;

	buf_init(&b, 1 << 20);
	put_row(&b, 64, put_plain);
	row = buf_detach(&b, NULL);
	buf_printf(&b,
		   "{\"a\\\"[\":\"[[1,2,3]] \\\" ] [ \\\\\",\"b\":[\"]\",\"[\\\\\"],"
		   "\"x\":[%s,\n%s],\"c\":\"\\u005b\\\"\",\"x\\\"\":[[%s]]}",
		   row, row, row);
	ck_assert_uint_eq(rows_pooled(b.data, "/x"), 2);
	ck_assert_uint_eq(pool_same_tensor(b.data, "/x", 0), 2);
	buf_reset(&b); /* an escaped key is never a field: left to jansson */
	buf_printf(&b, "{\"\\u0078\":[%s]}", row);
	ck_assert_uint_eq(rows_pooled(b.data, "/x"), 0);
	buf_release(&b);
	free(row);
}
END_TEST

/* Rows holding anything but plain in-range numbers stay with jansson. */
START_TEST(test_row_unusual)
{
	static const char *const odd[] = {"\"1\"", "true",	   "null",    "[1]",
					  "{}",	   "1e39",	   "-3.5e38", "1234567890123456789",
					  "1e400", "3.40282357e38"};
	struct buf b;

	buf_init(&b, 1 << 20);
	for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
		buf_reset(&b);
		buf_puts(&b, "{\"x\":[[");
		for (int i = 0; i < 80; i++)
			buf_puts(&b, i == 70 ? odd[k] : "0.5,");
		buf_puts(&b, "]]}");
		ck_assert_uint_eq(rows_pooled(b.data, "/x"), 0);
		pool_same_tensor(b.data, "/x", 0); /* the errors with their pointers */
	}
	buf_release(&b);
}
END_TEST

/* FLT_MAX as numpy prints it (3.4028235e38) is above FLT_MAX as a double
 * but rounds to it as a float32: both readers take it, and everything up to
 * FLT_MAX plus half an ulp (2^128 - 2^103 = 3.40282357e38, refused above). */
START_TEST(test_row_float32_max)
{
	static const char *const edge[] = {"3.4028235e38", "-3.4028235e+38", "3.40282356e38"};
	const char *const fields[] = {"/x", NULL};
	struct buf b;

	buf_init(&b, 1 << 20);
	for (size_t k = 0; k < sizeof edge / sizeof edge[0]; k++) {
		struct fastjson_pool pool = {0};
		size_t len;
		char *copy;

		buf_reset(&b);
		buf_puts(&b, "{\"x\":[[");
		for (int i = 0; i < 80; i++) {
			if (i > 0)
				buf_putc(&b, ',');
			buf_puts(&b, i == 70 ? edge[k] : "0.5");
		}
		buf_puts(&b, "]]}");
		copy = fastjson_scan(b.data, b.len, fields, &pool, &len);
		ck_assert_msg(pool.n_rows == 1, "%s not pooled", edge[k]);
		ck_assert(fabsf(pool.values[70]) == FLT_MAX);
		free(copy);
		fastjson_pool_release(&pool);
		/* the same bits through jansson (the plain twin), so it took it too */
		pool_same_tensor(b.data, "/x", 0);
		/* a short row, which jansson reads in both */
		buf_reset(&b);
		buf_printf(&b, "{\"x\":[[%s,1]]}", edge[k]);
		pool_same_tensor(b.data, "/x", 0);
	}
	buf_release(&b);
}
END_TEST

/* The placeholder key anywhere turns pooling off. */
START_TEST(test_row_spoof)
{
	struct buf b;
	char *row;

	buf_init(&b, 1 << 20);
	put_row(&b, 64, put_plain);
	row = buf_detach(&b, NULL);
	buf_printf(&b, "{\"x\":[%s,{\"\\u0001\":0}]}", row);
	ck_assert_uint_eq(rows_pooled(b.data, "/x"), 0);
	pool_same_tensor(b.data, "/x", 0);
	buf_reset(&b);
	buf_printf(&b, "{\"model\":\"base\",\"embeddings\":[{\"\\u0001\":0},%s]}", row);
	same_attention(b.data);
	buf_reset(&b);
	buf_printf(&b, "{\"x\":[%s],\"note\":\"\\\\u0001\"}", row);
	ck_assert_uint_eq(rows_pooled(b.data, "/x"), 0);
	buf_release(&b);
	free(row);
}
END_TEST

/* ---- bits ------------------------------------------------------------------ */

START_TEST(test_bits_random)
{
	for (int round = 0; round < 40; round++) {
		char *body = rows_body("x", 8, 64 + (size_t)round, put_any);

		pool_same_tensor(body, "/x", 0);
		free(body);
	}
}
END_TEST

/* Every number format in a row pooled: the pool agrees with strtod + (float). */
START_TEST(test_bits_pooled)
{
	size_t pooled = 0;

	for (int round = 0; round < 200; round++) {
		struct buf b;
		char *body;

		buf_init(&b, 1 << 20);
		buf_puts(&b, "{\"x\":[[");
		for (int i = 0; i < 64; i++) {
			double x = (rng_unit() - 0.5) * pow(10.0, (double)(rng() % 70) - 35.0);

			if (i > 0)
				buf_putc(&b, ',');
			if (rng() % 2)
				buf_printf(&b, "%.*g", 1 + (int)(rng() % 20), x);
			else
				put_any(&b, (size_t)i);
		}
		buf_puts(&b, "]]}");
		body = buf_detach(&b, NULL);
		pooled += pool_same_tensor(body, "/x", 0);
		free(body);
	}
	ck_assert_uint_gt(pooled, 20); /* most rows hold no out-of-range number */
}
END_TEST

/* ---- same answers ------------------------------------------------------------ */

static void put_small(struct buf *b, size_t i)
{
	buf_printf(b, "%.5f", cos((double)i * 1.3 + (double)b->len * 1e-2) * 0.3);
}

/* /v1/attention on base: embeddings, key, value; ragged batch; mask bias. */
START_TEST(test_same_attention)
{
	struct buf b, row;

	buf_init(&b, 16 << 20);
	buf_init(&row, 1 << 20);
	put_row(&row, 512, put_small);
	buf_printf(&b, "{\"model\":\"base\",\"embeddings\":[%s,%s],\"weights\":\"per_head\"}",
		   row.data, row.data);
	ck_assert_int_eq(same_attention(b.data), 200);
	buf_reset(&b);
	buf_printf(&b,
		   "{\"model\":\"base\",\"embeddings\":[[%s,%s],[%s]],\"key\":[[%s],[%s]],"
		   "\"value\":[[%s],[%s]],\"scores\":\"raw\"}",
		   row.data, row.data, row.data, row.data, row.data, row.data, row.data);
	ck_assert_int_eq(same_attention(b.data), 200);
	buf_reset(&b); /* a row one number short: the pointer of the row */
	buf_printf(&b, "{\"model\":\"base\",\"embeddings\":[%s,[%s]}", row.data,
		   strchr(row.data, ',') + 1);
	same_attention(b.data);
	buf_reset(&b);
	buf_printf(&b, "{\"model\":\"base\",\"embeddings\":[%s,%s],\"key\":[%s],\"value\":[%s,%s]}",
		   row.data, row.data, row.data, row.data, row.data);
	ck_assert_int_eq(same_attention(b.data), 422);
	buf_release(&b);
	buf_release(&row);
}
END_TEST

/* An inline model's explicit weights and a mask's bias rows. */
START_TEST(test_same_inline_model)
{
	enum { E = 64, L = 70 };
	struct buf b, row, lrow;

	buf_init(&b, 16 << 20);
	buf_init(&row, 1 << 20);
	buf_init(&lrow, 1 << 20);
	put_row(&row, E, put_small);
	put_row(&lrow, L, put_small);
	buf_puts(&b,
		 "{\"model\":{\"d_model\":64,\"num_heads\":4,\"bias\":false,\"in_proj_weight\":[");
	for (int i = 0; i < 3 * E; i++)
		buf_printf(&b, "%s%s", i ? "," : "", row.data);
	buf_puts(&b, "],\"out_proj_weight\":[");
	for (int i = 0; i < E; i++)
		buf_printf(&b, "%s%s", i ? "," : "", row.data);
	buf_puts(&b, "]},\"embeddings\":[");
	for (int i = 0; i < L; i++)
		buf_printf(&b, "%s%s", i ? "," : "", row.data);
	buf_puts(&b, "],\"mask\":{\"bias\":[");
	for (int i = 0; i < L; i++)
		buf_printf(&b, "%s%s", i ? "," : "", lrow.data);
	buf_puts(&b, "]},\"weights\":\"mean\"}");
	ck_assert_int_eq(same_attention(b.data), 200);
	buf_release(&b);
	buf_release(&row);
	buf_release(&lrow);
}
END_TEST

/* /v1/sdpa: q, k, v [1, 2, L, 64], a past, an additive mask. */
START_TEST(test_same_sdpa)
{
	struct buf b, row, t;

	buf_init(&b, 16 << 20);
	buf_init(&row, 1 << 20);
	buf_init(&t, 1 << 20);
	put_row(&row, 64, put_small);
	buf_printf(&t, "[[%s,%s,%s],[%s,%s,%s]]", row.data, row.data, row.data, row.data, row.data,
		   row.data);
	buf_printf(&b,
		   "{\"q\":[%s],\"k\":[%s],\"v\":[%s],\"past_key\":[%s],\"past_value\":[%s],"
		   "\"weights\":\"per_head\"}",
		   t.data, t.data, t.data, t.data, t.data);
	ck_assert_int_eq(pool_same_answer(&twins, API_ROUTE_SDPA, b.data, b.len), 200);
	buf_release(&b);
	buf_release(&row);
	buf_release(&t);
}
END_TEST

/* Malformed bodies: line, column, pointer and message as jansson's. */
START_TEST(test_same_malformed)
{
	static const char *const tails[] = {
	    "]}",					/* valid */
	    "]",					/* end of input */
	    "],}",					/* trailing comma */
	    "] \"x\":1}",				/* missing comma */
	    ",[1,2,01]]}",				/* a leading zero */
	    ",[1.]]}",					/* 1. */
	    ",[-]]}",					/* - */
	    ",[1e]]}",					/* 1e */
	    ",[NaN]]}",					/* a literal */
	    ",[Infinity]]}",				/* a literal */
	    ",[tru]]}",					/* a broken literal */
	    "],\"model\":\"base\",\"model\":\"tiny\"}", /* a duplicate after rows */
	    "],\"model\":\"base\"} x",			/* after the end */
	    ",[\"\\x\"]]}",				/* a bad escape */
	    ",[\"\x01\"]]}",				/* a control character */
	    "]]}",					/* one bracket too many */
	    ",\n\n  [1,\n 2,]]}",			/* a trailing comma, lines down */
	    ",[1 2]]}",					/* numbers without a comma */
	    ",[1,,2]]}",				/* two commas */
	};
	struct buf b, row;

	buf_init(&b, 16 << 20);
	buf_init(&row, 1 << 20);
	buf_puts(&row, "[\n");
	for (int i = 0; i < 512; i++)
		buf_printf(&row, "%s%.3f%s", i ? "," : "", (double)i / 512.0,
			   i % 50 == 49 ? "\n" : "");
	buf_puts(&row, "\n]");
	for (size_t k = 0; k < sizeof tails / sizeof tails[0]; k++) {
		buf_reset(&b);
		buf_printf(&b, "{\"model\":\"base\",\"embeddings\":[%s,\n%s%s", row.data, row.data,
			   tails[k]);
		same_attention(b.data);
		/* the same inside a row: the row stays with jansson */
		buf_reset(&b);
		buf_printf(&b, "{\"model\":\"base\",\"embeddings\":[%s,\n%.*s%s", row.data,
			   (int)row.len - 2, row.data, tails[k]);
		same_attention(b.data);
	}
	buf_release(&b);
	buf_release(&row);
}
END_TEST

/* Random mutations of a valid body: whatever comes out, both agree. */
START_TEST(test_same_mutations)
{
	static const char alphabet[] = "[]{},:\"\\ \n0123456789.-+eE\x01tfnu";
	struct buf b, row;

	buf_init(&b, 16 << 20);
	buf_init(&row, 1 << 20);
	put_row(&row, 64, put_small);
	buf_printf(
	    &b, "{\"q\":[[[%s,%s]]],\"k\":[[[%s,%s,%s]]],\"v\":[[[%s,%s,%s]]],\"is_causal\":true}",
	    row.data, row.data, row.data, row.data, row.data, row.data, row.data, row.data);
	ck_assert_int_eq(pool_same_answer(&twins, API_ROUTE_SDPA, b.data, b.len), 200);
	pool_same_mutated(&twins, API_ROUTE_SDPA, b.data, b.len, alphabet, (int)test_scaled(3000),
			  rng);
	buf_release(&b);
	buf_release(&row);
}
END_TEST

/* ---- flags ------------------------------------------------------------------- */

START_TEST(test_flags)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	buf_puts(&b, "{\"x\":[[");
	for (int i = 0; i < 64; i++)
		buf_printf(&b, "%s%d", i ? "," : "", i);
	buf_puts(&b, "],[");
	for (int i = 0; i < 64; i++)
		buf_printf(&b, "%s%s", i ? "," : "", i == 40 ? "2.5" : "1");
	buf_puts(&b, "]]}");
	ck_assert_uint_eq(pool_same_tensor(b.data, "/x", API_T_INTEGER), 2);
	ck_assert_uint_eq(pool_same_tensor(b.data, "/x", API_T_BOOL), 2);
	ck_assert_uint_eq(pool_same_tensor(b.data, "/x", API_T_NEG_INF), 2);
	buf_release(&b);
}
END_TEST

/* ---- small ------------------------------------------------------------------- */

/* The answer of body with small_only: 1 answered as without it, 0 declined. */
static int small_answer(enum api_route route, const char *body)
{
	struct api_reply small, plain;
	char *a, *b;

	api_reply_init(&small, (size_t)64 << 20);
	small.small_only = 1;
	api_handle(twins.fast, route, NULL, body, strlen(body), &small);
	if (small.declined) {
		ck_assert_uint_eq(small.body.len, 0);
		ck_assert_int_eq(small.status, 500); /* as api_reply_init left it */
		api_reply_release(&small);
		return 0;
	}
	api_reply_init(&plain, (size_t)64 << 20);
	api_handle(twins.fast, route, NULL, body, strlen(body), &plain);
	a = pool_reply_text(&small);
	b = pool_reply_text(&plain);
	ck_assert_int_eq(small.status, plain.status);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	api_reply_release(&small);
	api_reply_release(&plain);
	return 1;
}

START_TEST(test_small)
{
	static const char *const answered[] = {
	    "{\"model\":\"tiny\",\"text\":\"나는 맛있는 사과를 먹었다\"}",
	    "{\"model\":\"tiny\",\"tokens\":[[1,2,3],[4,5]],\"scores\":\"softmax\"}",
	    "{\"model\":\"tiny\",\"embeddings\":[[0.5,-0.25,0.125,1,0,-1,0.75,0.25]]}",
	    "{\"model\":\"tiny\",\"text\":\"a b c\",\"mask\":\"causal\",\"encoding\":\"base64\"}",
	    "{",
	    "[]",
	    "{\"model\":\"tiny\",\"text\":\"a\",\"nope\":1}",
	    "{\"model\":\"nope\",\"text\":\"a\"}",
	    "{\"model\":\"tiny\",\"text\":\"\"}",
	    /* an inline model's decode error: answered, nothing was built */
	    "{\"model\":{\"d_model\":8,\"num_heads\":2},\"text\":\"a\"}",
	};
	static const char *const declined[] = {
	    "{\"text\":\"a\"}", /* the default model, 512 wide: 2 MFLOP a token */
	    /* an inline model is never small: drawing its weights (about 25 ms for
	     * the second) waits for a worker */
	    "{\"model\":{\"d_model\":8,\"num_heads\":2,\"vocab_size\":4},\"text\":\"a\"}",
	    "{\"model\":{\"d_model\":1024,\"num_heads\":1,\"vocab_size\":1000},\"text\":\"a\"}",
	};
	char body[2048];
	size_t len;

	for (size_t i = 0; i < sizeof answered / sizeof answered[0]; i++)
		ck_assert_msg(small_answer(API_ROUTE_ATTENTION, answered[i]), "%s", answered[i]);
	ck_assert(small_answer(API_ROUTE_SDPA,
			       "{\"q\":[[[[1,0],[0,1]]]],\"k\":[[[[1,0],[0,1]]]],"
			       "\"v\":[[[[1,0],[0,1]]]],\"weights\":\"per_head\"}"));
	for (size_t i = 0; i < sizeof declined / sizeof declined[0]; i++)
		ck_assert_msg(!small_answer(API_ROUTE_ATTENTION, declined[i]), "%s", declined[i]);
	/* words: 40 are small; 100 pass API_SMALL_FLOPS (512 L + 32 L^2) */
	for (int words = 40; words <= 100; words += 60) {
		len = (size_t)snprintf(body, sizeof body,
				       "{\"model\":\"tiny\",\"weights\":\"none\",\"text\":\"");
		for (int i = 0; i < words; i++)
			len += (size_t)snprintf(body + len, sizeof body - len, "a ");
		snprintf(body + len, sizeof body - len, "\"}");
		ck_assert_int_eq(small_answer(API_ROUTE_ATTENTION, body), words == 40);
	}
	/* per-head weights of 20 words are 800 numbers, of 25 words 1250 */
	for (int words = 20; words <= 25; words += 5) {
		len = (size_t)snprintf(body, sizeof body, "{\"model\":\"tiny\",\"text\":\"");
		for (int i = 0; i < words; i++)
			len += (size_t)snprintf(body + len, sizeof body - len, "a ");
		snprintf(body + len, sizeof body - len, "\"}");
		ck_assert_int_eq(small_answer(API_ROUTE_ATTENTION, body), words == 20);
	}
	/* a body over API_SMALL_BODY, even a valid small request */
	len = (size_t)snprintf(body, sizeof body, "{\"model\":\"tiny\",\"text\":\"a\"");
	while (len <= API_SMALL_BODY)
		len += (size_t)snprintf(body + len, sizeof body - len, "       ");
	snprintf(body + len, sizeof body - len, "}");
	ck_assert(!small_answer(API_ROUTE_ATTENTION, body));
	body[len - 7] = '}';
	body[len - 6] = '\0';
	ck_assert_uint_le(strlen(body), API_SMALL_BODY);
	ck_assert(small_answer(API_ROUTE_ATTENTION, body));
}
END_TEST

/* ---- fmt --------------------------------------------------------------------- */

START_TEST(test_fmt_fixed)
{
	static const double edge[] = {0.0,	-0.0,	  0.0005, 0.0015,   0.0025,
				      1.0005,	2.5,	  0.5,	  1.5,	    -0.0001,
				      1e-300,	9.9995,	  0.1235, 123.4565, 4503599627370495.5,
				      1e15,	1e16,	  1e300,  -1e300,   NAN,
				      INFINITY, -INFINITY};
	char got[FMT_FIXED_MAX + 1], want[FMT_FIXED_MAX + 1];

	for (int d = 0; d <= 9; d++)
		for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
			got[fmt_fixed(got, edge[i], d)] = '\0';
			snprintf(want, sizeof want, "%.*f", d, edge[i]);
			ck_assert_str_eq(got, want);
		}
	for (int i = 0; i < (int)test_scaled(2000000); i++) {
		int d = (int)(rng() % 10);
		double x;

		switch (i % 3) {
		case 0: /* milliseconds as the server has them */
			x = (double)(rng() % 100000000) / 1e6;
			break;
		case 1: /* near ties */
			x = (double)(rng() % 1000000) * 1e-3 + 5e-4 * (double)(rng() % 3);
			break;
		default: { /* any finite double */
			uint64_t bits = rng();

			memcpy(&x, &bits, sizeof x);
			if (!isfinite(x))
				x = 1.0;
			break;
		}
		}
		got[fmt_fixed(got, x, d)] = '\0';
		snprintf(want, sizeof want, "%.*f", d, x);
		EXPECT_MSG(strcmp(got, want) == 0, "%.17g %%.%df: %s, want %s", x, d, got, want);
	}
}
END_TEST

START_TEST(test_fmt_u64)
{
	char got[FMT_U64_MAX + 1], want[32];
	struct buf b;

	buf_init(&b, 64);
	for (int i = 0; i < (int)test_scaled(100000); i++) {
		unsigned long long v = i < 1000 ? (unsigned long long)i : rng() >> (rng() % 64);

		got[fmt_u64(got, v)] = '\0';
		snprintf(want, sizeof want, "%llu", v);
		EXPECT_MSG(strcmp(got, want) == 0, "%llu: %s", v, got);
		buf_reset(&b);
		EXPECT_MSG(buf_put_u64(&b, v) == 0, "%llu: buf_put_u64 failed", v);
		EXPECT_MSG(strcmp(b.data, want) == 0, "%llu: buf %s", v, b.data);
	}
	got[fmt_u64(got, ~0ULL)] = '\0';
	ck_assert_str_eq(got, "18446744073709551615");
	buf_release(&b);
	buf_init(&b, 3); /* the hard maximum holds */
	ck_assert_int_eq(buf_put_u64(&b, 1234), -1);
	ck_assert(b.failed);
	buf_release(&b);
}
END_TEST

static Suite *fastpath_suite(void)
{
	Suite *s = suite_create("fastpath");
	TCase *tp = tcase_create("pool"), *tb = tcase_create("bits"), *ts = tcase_create("same");
	TCase *tf = tcase_create("flags"), *tm = tcase_create("fmt");
	TCase *tsm = tcase_create("small");

	tcase_add_unchecked_fixture(tp, setup, teardown);
	tcase_add_unchecked_fixture(tb, setup, teardown);
	tcase_add_unchecked_fixture(ts, setup, teardown);
	tcase_add_unchecked_fixture(tf, setup, teardown);
	tcase_set_timeout(ts, 300);
	tcase_set_timeout(tm, 300);
	tcase_add_test(tp, test_row_63_64);
	tcase_add_test(tp, test_row_nesting);
	tcase_add_test(tp, test_row_strings);
	tcase_add_test(tp, test_row_unusual);
	tcase_add_test(tp, test_row_float32_max);
	tcase_add_test(tp, test_row_spoof);
	suite_add_tcase(s, tp);
	tcase_add_test(tb, test_bits_random);
	tcase_add_test(tb, test_bits_pooled);
	suite_add_tcase(s, tb);
	tcase_add_test(ts, test_same_attention);
	tcase_add_test(ts, test_same_inline_model);
	tcase_add_test(ts, test_same_sdpa);
	tcase_add_test(ts, test_same_malformed);
	tcase_add_test(ts, test_same_mutations);
	suite_add_tcase(s, ts);
	tcase_add_test(tf, test_flags);
	suite_add_tcase(s, tf);
	tcase_add_unchecked_fixture(tsm, setup, teardown);
	tcase_add_test(tsm, test_small);
	suite_add_tcase(s, tsm);
	tcase_add_test(tm, test_fmt_fixed);
	tcase_add_test(tm, test_fmt_u64);
	suite_add_tcase(s, tm);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, fastpath_suite, NULL);
}
