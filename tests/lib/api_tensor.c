/*
 * api_tensor.c: reading, comparing and building the API's tensors (see
 * api_tensor.h).
 */
#include "api_tensor.h"

#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_files.h"

/* ------------------------------------------------------------------------ */
/* base64 (RFC 4648), written here to check the API's independently         */
/* ------------------------------------------------------------------------ */

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

const char *tensor_b64_encode(const void *data, size_t n)
{
	const uint8_t *p = data;
	char *out = harness_keep(malloc((n + 2) / 3 * 4 + 1)), *o = out;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		*o++ = b64_alphabet[(v >> 18) & 63];
		*o++ = b64_alphabet[(v >> 12) & 63];
		*o++ = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? b64_alphabet[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* Decodes strict padded base64 into out (room for n / 4 * 3); -1 when invalid. */
static long b64_decode(uint8_t *out, const char *in, size_t n)
{
	size_t len = 0;

	if (n % 4 != 0)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		uint32_t v = 0;
		int pad = 0;

		for (size_t k = 0; k < 4; k++) {
			const char *c = strchr(b64_alphabet, in[i + k]);

			if (in[i + k] == '=' && i + 4 == n && k >= 2) {
				pad++;
				v <<= 6;
				continue;
			}
			if (c == NULL || in[i + k] == '\0' || pad > 0)
				return -1;
			v = (v << 6) | (uint32_t)(c - b64_alphabet);
		}
		out[len++] = (uint8_t)(v >> 16);
		if (pad < 2)
			out[len++] = (uint8_t)(v >> 8);
		if (pad < 1)
			out[len++] = (uint8_t)v;
	}
	return (long)len;
}

/* ------------------------------------------------------------------------ */
/* Tensors in answers                                                        */
/* ------------------------------------------------------------------------ */

float tensor_cell(const json_t *v)
{
	double x;

	ck_assert_msg(case_number(v, &x) == 0,
		      "a tensor cell is neither a number nor a non-finite string");
	return (float)x;
}

static void flat_fill(const json_t *v, struct flat *f, size_t d, size_t *pos)
{
	if (d == f->rank) {
		ck_assert_msg(!json_is_array(v), "a tensor nested deeper than its first row");
		f->x[(*pos)++] = tensor_cell(v);
		return;
	}
	ck_assert_msg(json_is_array(v) && json_array_size(v) == f->shape[d],
		      "a ragged tensor where a regular one is expected (axis %zu)", d);
	for (size_t k = 0; k < f->shape[d]; k++)
		flat_fill(json_array_get(v, k), f, d + 1, pos);
}

static struct flat flat_base64(const json_t *v)
{
	const json_t *shape = harness_field(v, "shape"), *b64 = harness_field(v, "base64");
	struct flat f;
	uint8_t *bytes;
	long got;

	memset(&f, 0, sizeof(f));
	ck_assert_msg(json_object_size(v) == 2, "a base64 tensor has only shape and base64");
	ck_assert_msg(json_is_array(shape) && json_array_size(shape) <= 6, "bad base64 shape");
	f.rank = json_array_size(shape);
	f.n = 1;
	for (size_t a = 0; a < f.rank; a++) {
		f.shape[a] = (size_t)json_integer_value(json_array_get(shape, a));
		f.n *= f.shape[a];
	}
	ck_assert_msg(json_is_string(b64), "base64 is not a string");
	bytes = harness_keep(malloc(json_string_length(b64) / 4 * 3 + 4));
	got = b64_decode(bytes, json_string_value(b64), json_string_length(b64));
	ck_assert_msg(got == (long)(f.n * sizeof(float)), "base64 decodes to %ld bytes, want %zu",
		      got, f.n * sizeof(float));
	f.x = harness_keep(malloc(f.n * sizeof(float) + 1));
	memcpy(f.x, bytes, f.n * sizeof(float)); /* little-endian float32, as the host */
	return f;
}

struct flat tensor_of(const json_t *v)
{
	struct flat f;
	const json_t *cur = v;
	size_t pos = 0;

	if (json_is_object(v))
		return flat_base64(v);
	memset(&f, 0, sizeof(f));
	f.n = 1;
	while (json_is_array(cur)) {
		ck_assert_msg(f.rank < 6, "tensor rank above 6");
		f.shape[f.rank++] = json_array_size(cur);
		f.n *= json_array_size(cur);
		cur = json_array_get(cur, 0);
	}
	ck_assert_msg(f.rank > 0, "not a tensor");
	f.x = harness_keep(malloc(f.n * sizeof(float) + 1));
	flat_fill(v, &f, 0, &pos);
	return f;
}

struct flat tensor_at(const struct answer *a, const char *key)
{
	return tensor_of(harness_field(a->json, key));
}

struct flat tensor_item(const struct answer *a, const char *key, size_t b)
{
	const json_t *v = harness_field(a->json, key);

	ck_assert_msg(json_is_array(v) && b < json_array_size(v), "'%s' has no item %zu", key, b);
	return tensor_of(json_array_get(v, b));
}

void tensor_assert_shape(const char *what, const struct flat *f, size_t rank, ...)
{
	va_list ap;
	char want[96] = "", got[96] = "";
	int ok = f->rank == rank;

	va_start(ap, rank);
	for (size_t a = 0; a < rank; a++) {
		size_t d = (size_t)va_arg(ap, int);

		ok = ok && f->shape[a] == d;
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%zu", a ? "," : "",
			 d);
	}
	va_end(ap);
	for (size_t a = 0; a < f->rank; a++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%zu", a ? "," : "",
			 f->shape[a]);
	ck_assert_msg(ok, "%s: shape [%s], want [%s]", what, got, want);
}

int tensor_near(double got, double want, double atol, double rtol)
{
	if (isnan(want))
		return isnan(got);
	if (isinf(want) || isinf(got))
		return got == want;
	return fabs(got - want) <= atol + rtol * fabs(want);
}

void tensor_assert_near_n(const char *what, const float *got, const float *want, size_t n,
			  double atol, double rtol)
{
	for (size_t k = 0; k < n; k++)
		ck_assert_msg(tensor_near(got[k], want[k], atol, rtol), "%s[%zu] = %.9g, want %.9g",
			      what, k, (double)got[k], (double)want[k]);
}

void tensor_assert_near(const char *what, const struct flat *got, const struct flat *want,
			double atol, double rtol)
{
	ck_assert_msg(got->rank == want->rank &&
			  memcmp(got->shape, want->shape, got->rank * sizeof(size_t)) == 0,
		      "%s: shapes differ (rank %zu vs %zu)", what, got->rank, want->rank);
	tensor_assert_near_n(what, got->x, want->x, got->n, atol, rtol);
}

void tensor_assert_same(const struct answer *a, const struct answer *b, const char *key,
			double atol, double rtol)
{
	struct flat x = tensor_at(a, key), y = tensor_at(b, key);

	tensor_assert_near(key, &x, &y, atol, rtol);
}

double tensor_max_diff(const struct answer *a, const struct answer *b, const char *key)
{
	struct flat x = tensor_at(a, key), y = tensor_at(b, key);
	double m = 0;

	ck_assert_uint_eq(x.n, y.n);
	for (size_t k = 0; k < x.n; k++)
		m = fmax(m, fabs((double)x.x[k] - (double)y.x[k]));
	return m;
}

const float *tensor_row(const struct flat *w, size_t h, size_t i)
{
	size_t Lq = w->shape[w->rank - 2], Lk = w->shape[w->rank - 1];

	return w->x + (h * Lq + i) * Lk;
}

/* ------------------------------------------------------------------------ */
/* Tensors as JSON                                                          */
/* ------------------------------------------------------------------------ */

json_t *tensor_json_cell(float x)
{
	if (isnan(x))
		return json_string("NaN");
	if (isinf(x))
		return json_string(x < 0 ? "-Infinity" : "Infinity");
	return json_real((double)x);
}

json_t *tensor_json_floats(const float *x, size_t n)
{
	json_t *arr = json_array();

	for (size_t k = 0; k < n; k++)
		json_array_append_new(arr, tensor_json_cell(x[k]));
	return arr;
}

json_t *tensor_json_matrix(const float *x, size_t rows, size_t cols)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < rows; i++)
		json_array_append_new(arr, tensor_json_floats(x + i * cols, cols));
	return arr;
}

json_t *tensor_json_nest(const json_t *data, const size_t *shape, size_t rank, size_t *pos)
{
	json_t *arr = json_array();

	for (size_t k = 0; k < shape[0]; k++) {
		if (rank == 1)
			json_array_append(arr, json_array_get(data, (*pos)++));
		else
			json_array_append_new(arr,
					      tensor_json_nest(data, shape + 1, rank - 1, pos));
	}
	return arr;
}

json_t *tensor_json_obj(json_t *data, size_t rank, const size_t *shape)
{
	json_t *shp = json_array();

	for (size_t a = 0; a < rank; a++)
		json_array_append_new(shp, json_integer((json_int_t)shape[a]));
	return json_pack("{s:o, s:o}", "shape", shp, "data", data);
}
