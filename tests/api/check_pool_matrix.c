/*
 * check_pool_matrix.c: an array of pooled rows of one length becomes one
 * placeholder (a matrix, api/json/fastjson.h), and the tensor it is read
 * into may take the pool's values instead of a copy: neither may change
 * anything but the time a read takes. Every case reads the field pooled
 * and through jansson (tests/lib/pool_twins.h): identical bits, or
 * identical errors with their JSON pointers.
 *
 *   made      rows of one length, 2 or more of them, make a matrix; a
 *             single row, ragged rows, or rows beside anything else (a
 *             number, a short row, an empty array, an object, a string,
 *             a row that is not pooled) stay a row apiece, as before
 *   errors    a matrix where the reader expects numbers, arrays of arrays,
 *             fewer axes, more axes or fewer elements; read with
 *             API_T_BOOL, API_T_INTEGER (the first real in a later row)
 *   rank 3    a batch of matrices, ragged items among them (API_T_RAGGED)
 *   copy      long text before, between and after the matrices, so the
 *             copy grows while it is written
 *   take      a matrix that holds all of the pool's values is read without
 *             a copy (the pool is empty after, and its placeholder no longer
 *             reads); one of two is copied
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/fastjson.h"
#include "api/json/json_read.h"
#include "api/json/json_tensor.h"
#include "common/buf.h"
#include "tests/lib/pool_twins.h"
#include "tests/lib/suite_main.h"

/* "[...]": a row of n numbers, written "%.6f", "%.17g" or as integers */
static void put_row(struct buf *b, size_t n, int kind)
{
	buf_putc(b, '[');
	for (size_t i = 0; i < n; i++) {
		double x = sin((double)(i + 1) * 0.731 + (double)b->len * 1e-3);

		if (i > 0)
			buf_putc(b, ',');
		if (kind == 2)
			buf_printf(b, "%d", (int)(x * 1000.0));
		else
			buf_printf(b, kind ? "%.17g" : "%.6f", x);
	}
	buf_putc(b, ']');
}

/* "[row, row, ...]" of rows rows of n numbers */
static void put_matrix(struct buf *b, size_t rows, size_t n, int kind)
{
	buf_putc(b, '[');
	for (size_t r = 0; r < rows; r++) {
		if (r > 0)
			buf_puts(b, ", ");
		put_row(b, n, kind);
	}
	buf_putc(b, ']');
}

/* The pool's rows and matrices for body's field /x, the scan alone. */
static void scan_counts(const char *body, size_t *rows, size_t *matrices)
{
	const char *const fields[] = {"/x", NULL};
	struct fastjson_pool pool = {0};
	size_t len;
	char *copy = fastjson_scan(body, strlen(body), fields, &pool, &len);

	*rows = pool_rows(&pool);
	*matrices = pool_matrices(&pool);
	ck_assert((copy != NULL) == (*rows > 0));
	if (copy != NULL)
		ck_assert_uint_lt(len, strlen(body));
	free(copy);
	fastjson_pool_release(&pool);
}

/* body's /x holds `rows` pooled rows in `matrices` matrices, and reads the
 * same pooled and through jansson with every flag. */
static void expect_pooled(const char *body, size_t rows, size_t matrices)
{
	static const unsigned flags[] = {
	    0, API_T_INTEGER, API_T_BOOL, API_T_NEG_INF, API_T_RAGGED, API_T_NONFINITE};
	size_t got_rows, got_matrices;

	scan_counts(body, &got_rows, &got_matrices);
	ck_assert_msg(got_rows == rows && got_matrices == matrices,
		      "%zu rows in %zu matrices, expected %zu in %zu: %.120s", got_rows,
		      got_matrices, rows, matrices, body);
	for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
		ck_assert_uint_eq(pool_same_tensor(body, "/x", flags[k]), rows);
}

/* ---- made ------------------------------------------------------------------ */

START_TEST(test_made)
{
	struct buf b;

	buf_init(&b, 1 << 22);
	for (size_t rows = 1; rows <= 5; rows++) {
		buf_reset(&b);
		buf_puts(&b, "{\"x\":");
		put_matrix(&b, rows, 64 + rows, rows % 3);
		buf_puts(&b, "}");
		expect_pooled(b.data, rows, rows >= 2);
	}
	buf_reset(&b); /* blanks everywhere JSON allows them */
	buf_puts(&b, "{ \"x\" :\n [ \n");
	put_row(&b, 70, 1);
	buf_puts(&b, " ,\r\n\t");
	put_row(&b, 70, 0);
	buf_puts(&b, "\n ] \n}");
	expect_pooled(b.data, 2, 1);
	buf_release(&b);
}
END_TEST

/* Ragged rows, or rows beside anything else: a row apiece, as before. */
START_TEST(test_not_made)
{
	static const char *const others[] = {"5",    "[]",    "{}",	 "\"s\"",
					     "null", "[1,2]", "[[1,2]]", "{\"a\":[1]}"};
	struct buf b;

	buf_init(&b, 1 << 22);
	buf_puts(&b, "{\"x\":[");
	put_row(&b, 64, 0);
	buf_putc(&b, ',');
	put_row(&b, 65, 0);
	buf_puts(&b, "]}");
	expect_pooled(b.data, 2, 0); /* ragged */
	for (size_t k = 0; k < sizeof others / sizeof others[0]; k++)
		for (int where = 0; where < 3; where++) {
			buf_reset(&b);
			buf_puts(&b, "{\"x\":[");
			if (where == 0)
				buf_printf(&b, "%s,", others[k]);
			put_row(&b, 64, 0);
			buf_putc(&b, ',');
			if (where == 1)
				buf_printf(&b, "%s,", others[k]);
			put_row(&b, 64, 1);
			if (where == 2)
				buf_printf(&b, ",%s", others[k]);
			buf_puts(&b, "]}");
			expect_pooled(b.data, 2, 0);
		}
	/* a row that is not pooled (a number out of float32's range in it) */
	buf_reset(&b);
	buf_puts(&b, "{\"x\":[");
	put_row(&b, 64, 0);
	buf_puts(&b, ",[1e39");
	for (int i = 1; i < 64; i++)
		buf_puts(&b, ",0.5");
	buf_puts(&b, "],");
	put_row(&b, 64, 0);
	buf_puts(&b, "]}");
	expect_pooled(b.data, 2, 0);
	/* a number before rows, read by the row loop of an array in an array */
	buf_reset(&b);
	buf_puts(&b, "{\"x\":[[1e39,");
	put_row(&b, 64, 0);
	buf_putc(&b, ',');
	put_row(&b, 64, 0);
	buf_puts(&b, "]]}");
	expect_pooled(b.data, 2, 0);
	buf_reset(&b);
	buf_puts(&b, "{\"x\":[[0.5,");
	put_row(&b, 64, 0);
	buf_putc(&b, ',');
	put_row(&b, 64, 0);
	buf_puts(&b, "]]}");
	expect_pooled(b.data, 2, 0);
	buf_release(&b);
}
END_TEST

/* ---- errors ------------------------------------------------------------------ */

START_TEST(test_errors)
{
	struct buf b, m;

	buf_init(&b, 1 << 22);
	buf_init(&m, 1 << 22);
	put_matrix(&m, 3, 64, 0);
	/* the reader's bounds around a matrix at the top: rank 2 */
	buf_printf(&b, "{\"x\":%s}", m.data);
	for (size_t lo = 1; lo <= 3; lo++)
		for (size_t hi = lo; hi <= 4; hi++)
			pool_same_read(b.data, "/x", lo, hi, (size_t)1 << 30, 0);
	pool_same_read(b.data, "/x", 2, 2, 3 * 64 - 1, 0); /* too many elements */
	pool_same_read(b.data, "/x", 2, 2, 3 * 64, 0);
	/* a matrix where numbers are expected (after a row of 3) */
	buf_reset(&b);
	buf_printf(&b, "{\"x\":[[1,2,3],%s]}", m.data);
	ck_assert_uint_eq(pool_same_tensor(b.data, "/x", 0), 3);
	/* where arrays of arrays are expected, first and later */
	buf_reset(&b);
	buf_printf(&b, "{\"x\":[[[[1,2]]],%s]}", m.data);
	pool_same_tensor(b.data, "/x", 0);
	buf_reset(&b);
	buf_printf(&b, "{\"x\":[%s,[[[1,2]]]]}", m.data);
	pool_same_tensor(b.data, "/x", 0);
	/* a batch whose later item has more or fewer rows, or shorter ones */
	buf_reset(&b);
	buf_printf(&b, "{\"x\":[%s,", m.data);
	put_matrix(&b, 2, 64, 0);
	buf_puts(&b, "]}");
	pool_same_tensor(b.data, "/x", 0);
	pool_same_tensor(b.data, "/x", API_T_RAGGED);
	buf_reset(&b);
	buf_printf(&b, "{\"x\":[%s,", m.data);
	put_matrix(&b, 4, 64, 0);
	buf_puts(&b, "]}");
	pool_same_tensor(b.data, "/x", API_T_RAGGED);
	buf_reset(&b);
	buf_printf(&b, "{\"x\":[%s,", m.data);
	put_matrix(&b, 3, 65, 0);
	buf_puts(&b, "]}");
	pool_same_tensor(b.data, "/x", 0);
	/* flags: integers, with the first real in the third row */
	buf_reset(&b);
	buf_puts(&b, "{\"x\":[");
	put_row(&b, 64, 2);
	buf_putc(&b, ',');
	put_row(&b, 64, 2);
	buf_puts(&b, ",[1,2,3.5");
	for (int i = 3; i < 64; i++)
		buf_puts(&b, ",7");
	buf_puts(&b, "],");
	put_row(&b, 64, 0);
	buf_puts(&b, "]}");
	expect_pooled(b.data, 4, 1);
	buf_release(&b);
	buf_release(&m);
}
END_TEST

/* ---- rank 3 ------------------------------------------------------------------ */

START_TEST(test_rank3)
{
	struct buf b;

	buf_init(&b, 1 << 22);
	buf_puts(&b, "{\"x\":[");
	put_matrix(&b, 3, 64, 0);
	buf_putc(&b, ',');
	put_matrix(&b, 3, 64, 1);
	buf_puts(&b, "]}");
	expect_pooled(b.data, 6, 2);
	buf_reset(&b); /* ragged items: 3 rows, 1 row, 2 rows */
	buf_puts(&b, "{\"x\":[");
	put_matrix(&b, 3, 64, 0);
	buf_putc(&b, ',');
	put_matrix(&b, 1, 64, 1);
	buf_putc(&b, ',');
	put_matrix(&b, 2, 64, 1);
	buf_puts(&b, "]}");
	expect_pooled(b.data, 6, 2);
	buf_reset(&b); /* rank 4: matrices two levels down */
	buf_puts(&b, "{\"x\":[[");
	put_matrix(&b, 2, 64, 0);
	buf_puts(&b, "],[");
	put_matrix(&b, 2, 64, 0);
	buf_puts(&b, "]]}");
	expect_pooled(b.data, 4, 2);
	buf_release(&b);
}
END_TEST

/* ---- copy -------------------------------------------------------------------- */

START_TEST(test_copy_grows)
{
	struct buf b;

	buf_init(&b, 1 << 22);
	buf_puts(&b, "{\"a\":\"");
	for (int i = 0; i < 9000; i++)
		buf_putc(&b, (char)('a' + i % 26));
	buf_puts(&b, "\",\"x\":[");
	put_matrix(&b, 2, 64, 0);
	buf_puts(&b, ",[[");
	for (int i = 0; i < 3000; i++)
		buf_printf(&b, "%s%d", i ? "," : "", i % 7); /* an item of one long row */
	buf_puts(&b, "]]],\"b\":[");
	for (int i = 0; i < 5000; i++)
		buf_printf(&b, "%s\"s%d\"", i ? "," : "", i);
	buf_puts(&b, "]}");
	/* the 3000 numbers are a row too, alone in its item: 3 rows, 1 matrix */
	expect_pooled(b.data, 3, 1);
	buf_release(&b);
}
END_TEST

/* ---- take -------------------------------------------------------------------- */

/* Reads body's /x pooled; returns the pool's values left after. */
static size_t read_left(const char *body, const char *field, int twice)
{
	const char *const fields[] = {"/x", "/y", NULL};
	struct fastjson_pool pool = {0};
	struct api_tensor t;
	struct api_error err;
	json_t *root;
	size_t left;

	ck_assert_int_eq(req_parse_pooled(body, strlen(body), fields, &pool, &root, &err), 0);
	ck_assert_int_eq(api_tensor_read_pool(&pool, json_object_get(root, field + 1), field, 2, 3,
					      (size_t)1 << 30, 0, &t, &err),
			 0);
	left = pool.n_values;
	api_tensor_release(&t);
	if (twice && left == 0) { /* taken: the placeholder is no tensor now */
		ck_assert_int_ne(api_tensor_read_pool(&pool, json_object_get(root, field + 1),
						      field, 2, 3, (size_t)1 << 30, 0, &t, &err),
				 0);
		ck_assert_int_eq(err.status, 422);
	}
	json_decref(root);
	fastjson_pool_release(&pool);
	return left;
}

START_TEST(test_take)
{
	struct buf b;

	buf_init(&b, 1 << 22);
	buf_puts(&b, "{\"x\":");
	put_matrix(&b, 4, 100, 1);
	buf_puts(&b, "}");
	ck_assert_uint_eq(read_left(b.data, "/x", 1), 0);
	pool_same_read(b.data, "/x", 2, 3, (size_t)1 << 30, 0);
	buf_reset(&b); /* two matrices: each is copied */
	buf_puts(&b, "{\"x\":");
	put_matrix(&b, 4, 100, 1);
	buf_puts(&b, ",\"y\":");
	put_matrix(&b, 2, 64, 0);
	buf_puts(&b, "}");
	ck_assert_uint_eq(read_left(b.data, "/x", 0), 400 + 128);
	ck_assert_uint_eq(read_left(b.data, "/y", 0), 400 + 128);
	pool_same_read(b.data, "/x", 2, 3, (size_t)1 << 30, 0);
	pool_same_read(b.data, "/y", 2, 3, (size_t)1 << 30, 0);
	buf_release(&b);
}
END_TEST

static Suite *pool_matrix_suite(void)
{
	Suite *s = suite_create("pool_matrix");
	TCase *tc = tcase_create("matrix");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_made);
	tcase_add_test(tc, test_not_made);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_rank3);
	tcase_add_test(tc, test_copy_grows);
	tcase_add_test(tc, test_take);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, pool_matrix_suite, NULL);
}
