/* json_tensor.c: reading and writing tensors in the JSON contract (see json_tensor.h). */
#include "json_tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "fastjson.h"
#include "json_read.h"
#include "common/fmt.h"
#include "engine/sizes.h"

/* api_ptr_key into a 192-byte dst, returned for use in an argument list. */
static const char *api_ptr_key_r(char *dst, const char *base, const char *key)
{
	api_ptr_key(dst, 192, base, key);
	return dst;
}


int api_json_f32(const json_t *v, const char *ptr, unsigned flags, float *out,
		 struct api_error *err)
{
	double x;

	if (flags & API_T_BOOL) {
		if (!json_is_boolean(v))
			return api_fail(err, API_E_INVALID_TYPE, ptr, "expected true or false");
		*out = json_is_true(v) ? 1.0f : 0.0f;
		return 0;
	}
	if (json_is_string(v) && (flags & API_T_NEG_INF)) {
		if (strcmp(json_string_value(v), "-Infinity") != 0)
			return api_fail(err, API_E_INVALID_NUMBER, ptr,
					"expected a number or \"-Infinity\"");
		*out = -INFINITY;
		return 0;
	}
	if (json_is_string(v) && (flags & API_T_NONFINITE)) {
		const char *s = json_string_value(v);

		if (strcmp(s, "-Infinity") == 0)
			*out = -INFINITY;
		else if (strcmp(s, "Infinity") == 0)
			*out = INFINITY;
		else if (strcmp(s, "NaN") == 0)
			*out = NAN;
		else
			return api_fail(
			    err, API_E_INVALID_NUMBER, ptr,
			    "expected a number, \"-Infinity\", \"Infinity\" or \"NaN\"");
		return 0;
	}
	if (!json_is_number(v))
		return api_fail(err, API_E_INVALID_TYPE, ptr, "expected a number");
	x = json_number_value(v);
	if ((flags & API_T_INTEGER) && !json_is_integer(v))
		return api_fail(err, API_E_INVALID_TYPE, ptr, "expected an integer");
	if (!(fabs(x) < FASTJSON_FLOAT32_BOUND)) /* NaN and inf too */
		return api_fail(err, API_E_OUT_OF_RANGE, ptr,
				"%.9g is outside the float32 range (largest magnitude "
				"3.40282347e+38)",
				x);
	*out = (float)x;
	return 0;
}

/* The pooled row or matrix (fastjson.h) that v stands for, or NULL. */
static const struct fastjson_row *pooled_numbers(const struct fastjson_pool *pool, const json_t *v)
{
	const struct fastjson_row *row = fastjson_row(pool, v);

	return row != NULL ? row : fastjson_matrix(pool, v);
}

/* The length of v as the nested reader sees it: a JSON array's, or that of
 * the pooled row or matrix (its rows) a placeholder stands for (*row set);
 * 0 and *row NULL for anything else. */
static size_t nested_len(const struct fastjson_pool *pool, const json_t *v,
			 const struct fastjson_row **row)
{
	*row = pooled_numbers(pool, v);
	if (*row != NULL)
		return (*row)->rows > 0 ? (*row)->rows : (*row)->count;
	return json_array_size(v); /* 0 for a non-array */
}

/* The next axis of t, of length n, found at ptr by nested_shape. */
static int push_axis(struct api_tensor *t, size_t n, const char *ptr, size_t max_rank,
		     struct api_error *err)
{
	if (t->rank == max_rank)
		return api_fail(err, API_E_INVALID_SHAPE, ptr, "nested deeper than rank %zu",
				max_rank);
	t->shape[t->rank++] = n;
	if (n == 0)
		return api_fail(err, API_E_INVALID_SHAPE, ptr,
				"empty array: every dimension must be positive");
	return 0;
}

/* Shape of nested arrays by following first elements; ragged axis 1 takes the
 * longest item. A pooled row counts as the array of numbers it was, a pooled
 * matrix as the array of rows. */
static int nested_shape(const struct fastjson_pool *pool, const json_t *v, const char *ptr,
			size_t max_rank, unsigned flags, struct api_tensor *t,
			struct api_error *err)
{
	const json_t *cur = v;
	const struct fastjson_row *row = NULL;

	t->rank = 0;
	for (;;) {
		size_t n = nested_len(pool, cur, &row);

		if (row == NULL && !json_is_array(cur))
			break;
		if (push_axis(t, n, ptr, max_rank, err) != 0)
			return -1;
		if (row != NULL && row->rows > 0 &&
		    push_axis(t, row->count / row->rows, ptr, max_rank, err) != 0)
			return -1; /* its first row's length */
		if (row != NULL)
			break; /* its first element (or its first row's) is a number */
		cur = json_array_get(cur, 0);
	}
	if ((flags & API_T_RAGGED) && t->rank >= 3) {
		size_t longest = 0;

		for (size_t b = 0; b < t->shape[0]; b++) {
			size_t n = nested_len(pool, json_array_get(v, b), &row);

			longest = n > longest ? n : longest;
		}
		t->shape[1] = longest;
	}
	return 0;
}

struct nested_fill {
	const struct api_tensor *t;
	unsigned flags;
	struct api_error *err;
	const struct fastjson_pool *pool; /* NULL: no pooled rows */
};

/* The stride of an element of an array at depth d: the product of the
 * axes after d + 1. */
static size_t element_stride(const struct api_tensor *t, size_t d)
{
	size_t stride = 1;

	for (size_t a = d + 1; a < t->rank; a++)
		stride *= t->shape[a];
	return stride;
}

/* An array of n elements at depth d (ptr its pointer, its first element at
 * data[offset]) has the length the shape says; a ragged item's is kept. */
static int check_length(const struct nested_fill *f, size_t n, const char *ptr, size_t d,
			size_t offset)
{
	const struct api_tensor *t = f->t;

	if (d == 1 && (f->flags & API_T_RAGGED) ? (n == 0 || n > t->shape[1]) : n != t->shape[d])
		return api_fail(f->err, API_E_RAGGED_ARRAY, ptr,
				"has %zu elements where %zu are expected", n, t->shape[d]);
	if (d == 1 && (f->flags & API_T_RAGGED))
		t->lengths[offset / (t->shape[1] * element_stride(t, d))] = n;
	return 0;
}

/*
 * Fills data[offset ...] from a pooled row at depth d (ptr its pointer), with
 * the errors read_elem and nested_fill would give its numbers: the row holds
 * only numbers, finite and within float32's range (fastjson.h).
 */
static int fill_pooled(const struct nested_fill *f, const struct fastjson_row *row,
		       const char *ptr, size_t d, size_t offset)
{
	const struct api_tensor *t = f->t;
	char child[192];

	if (d + 1 < t->rank) { /* its first element is a number, not an array */
		api_ptr_index(child, sizeof(child), ptr, 0);
		return api_fail(f->err, API_E_INVALID_SHAPE, child,
				"expected an array (rank %zu tensor)", t->rank);
	}
	if (f->flags & API_T_BOOL) {
		api_ptr_index(child, sizeof(child), ptr, 0);
		return api_fail(f->err, API_E_INVALID_TYPE, child, "expected true or false");
	}
	if ((f->flags & API_T_INTEGER) && row->first_real < row->count) {
		api_ptr_index(child, sizeof(child), ptr, row->first_real);
		return api_fail(f->err, API_E_INVALID_TYPE, child, "expected an integer");
	}
	memcpy(&t->data[offset], f->pool->values + row->offset, row->count * sizeof(float));
	return 0;
}

/*
 * Fills data[offset ...] from a pooled matrix at depth d (ptr its pointer,
 * its length checked), row by row from the rows' own entries (the m->rows
 * before m in the pool), with the errors nested_fill would give the arrays
 * of numbers it was.
 */
static int fill_matrix(const struct nested_fill *f, const struct fastjson_row *m, const char *ptr,
		       size_t d, size_t offset)
{
	const struct fastjson_row *rows = m - m->rows;
	size_t stride = element_stride(f->t, d);
	char child[192];

	if (d + 1 == f->t->rank) { /* numbers expected, its first row found */
		api_ptr_index(child, sizeof(child), ptr, 0);
		return api_fail(f->err, API_E_INVALID_SHAPE, child,
				"nested deeper than the rest of the tensor");
	}
	for (size_t r = 0; r < m->rows; r++) {
		api_ptr_index(child, sizeof(child), ptr, r);
		if (check_length(f, rows[r].count, child, d + 1, offset + r * stride) != 0 ||
		    fill_pooled(f, &rows[r], child, d + 1, offset + r * stride) != 0)
			return -1;
	}
	return 0;
}

/* Fills data[offset ...] from the array v at depth d, checking every length. */
static int nested_fill(const struct nested_fill *f, const json_t *v, const char *ptr, size_t d,
		       size_t offset)
{
	const struct api_tensor *t = f->t;
	const struct fastjson_row *row;
	size_t stride = element_stride(t, d), n;
	char child[192];

	n = nested_len(f->pool, v, &row);
	if (row == NULL && !json_is_array(v))
		return api_fail(f->err, API_E_INVALID_SHAPE, ptr,
				"expected an array (rank %zu tensor)", t->rank);
	if (check_length(f, n, ptr, d, offset) != 0)
		return -1;
	if (row != NULL && row->rows > 0)
		return fill_matrix(f, row, ptr, d, offset);
	if (row != NULL)
		return fill_pooled(f, row, ptr, d, offset);
	for (size_t k = 0; k < n; k++) {
		const json_t *e = json_array_get(v, k);

		api_ptr_index(child, sizeof(child), ptr, k);
		if (d + 1 < t->rank) {
			if (nested_fill(f, e, child, d + 1, offset + k * stride) != 0)
				return -1;
		} else if (json_is_array(e) || pooled_numbers(f->pool, e) != NULL) {
			return api_fail(f->err, API_E_INVALID_SHAPE, child,
					"nested deeper than the rest of the tensor");
		} else if (api_json_f32(e, child, f->flags, &t->data[offset + k], f->err) != 0) {
			return -1;
		}
	}
	return 0;
}

/* t->n for t's shape, at most max_elems. */
static int count_elements(struct api_tensor *t, const char *ptr, size_t max_elems,
			  struct api_error *err)
{
	size_t n = 1;

	for (size_t a = 0; a < t->rank; a++)
		if (size_mul(&n, n, t->shape[a]) != 0 || n > max_elems)
			return api_fail(err, API_E_TOO_LARGE, ptr,
					"tensor has more than %zu elements", max_elems);
	t->n = n;
	return 0;
}

/* t->data for t's shape, zeroed when zero (a ragged tensor's padding);
 * otherwise the caller writes every element (calloc's memset of reused
 * memory was about 0.2 ns of a pooled [128, 512] read's number). */
static int alloc_tensor(struct api_tensor *t, const char *ptr, size_t max_elems, int zero,
			struct api_error *err)
{
	size_t n;

	if (count_elements(t, ptr, max_elems, err) != 0)
		return -1;
	n = t->n;
	t->data = zero ? calloc(n ? n : 1, sizeof(float)) : malloc((n ? n : 1) * sizeof(float));
	if (t->data == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, ptr, "out of memory");
	return 0;
}

/*
 * Does v, of t's shape (counted), read without an error as a copy of all of
 * the pool's values, in their order? So when it is a pooled matrix of rank
 * 2 that holds every value: nested_fill would find every row of the length
 * the shape says (they are the shape), its numbers where numbers are
 * expected, and fail only with API_T_BOOL (a number is no boolean) or
 * API_T_INTEGER with a real among them.
 */
static int reads_whole_pool(const struct fastjson_pool *pool, const json_t *v,
			    const struct api_tensor *t, unsigned flags)
{
	const struct fastjson_row *m = fastjson_matrix(pool, v);

	return m != NULL && t->rank == 2 && m->offset == 0 && m->count == pool->n_values &&
	       t->n == m->count && !(flags & API_T_BOOL) &&
	       !((flags & API_T_INTEGER) && m->first_real < m->count);
}

static int read_nested(struct fastjson_pool *pool, const json_t *v, const char *ptr,
		       size_t min_rank, size_t max_rank, size_t max_elems, unsigned flags,
		       struct api_tensor *t, struct api_error *err)
{
	struct nested_fill f = { t, flags, err, pool };

	if (nested_shape(pool, v, ptr, max_rank, flags, t, err) != 0)
		return -1;
	if (t->rank < min_rank)
		return api_fail(err, API_E_INVALID_SHAPE, ptr,
				"expected a tensor of rank %zu..%zu, got rank %zu", min_rank,
				max_rank, t->rank);
	if (count_elements(t, ptr, max_elems, err) != 0)
		return -1;
	if (reads_whole_pool(pool, v, t, flags)) { /* the values as they are: no copy */
		t->data = fastjson_pool_take(pool);
		return 0;
	}
	/* nested_fill writes every element unless rows may be short */
	if (alloc_tensor(t, ptr, max_elems, (flags & API_T_RAGGED) != 0, err) != 0)
		return -1;
	if ((flags & API_T_RAGGED) && t->rank >= 3) {
		t->lengths = calloc(t->shape[0], sizeof(size_t));
		if (t->lengths == NULL)
			return api_fail(err, API_E_OUT_OF_MEMORY, ptr, "out of memory");
	} else {
		flags &= ~(unsigned)API_T_RAGGED;
		f.flags = flags;
	}
	return nested_fill(&f, v, ptr, 0, 0);
}

/*
 * A tensor object's "base64" member: a JSON string, or the placeholder of a
 * string the pool decoded already (row; fastjson.h), which reads the same.
 */
struct b64_member {
	const json_t *v;		 /* NULL when absent */
	const struct fastjson_row *row; /* non-NULL: v is its placeholder */
};

static int b64_is_string(const struct b64_member *b)
{
	return b->row != NULL || json_is_string(b->v);
}

static size_t b64_length(const struct b64_member *b)
{
	return b->row != NULL ? b->row->base64_len : json_string_length(b->v);
}

/*
 * Decodes b, of the length t's n float32 values need, into t->data: returns
 * the bytes decoded (n * 4 when it fits the shape), or -1 with *bad the
 * offset of the first invalid character; -2 out of memory. A pooled string
 * decoded cleanly in the scan, to row->count floats.
 */
static long long b64_decode(const struct fastjson_pool *pool, const struct b64_member *b,
			    struct api_tensor *t, size_t *bad)
{
	size_t len = b64_length(b), want = t->n * sizeof(float);
	uint8_t *bytes;
	long long got;

	if (b->row != NULL) {
		if (b->row->count == t->n)
			memcpy(t->data, pool->values + b->row->offset, want);
		return (long long)(b->row->count * sizeof(float));
	}
	/* the string may hold up to 2 bytes more than the shape (bad padding) */
	bytes = malloc(len / 4 * 3 + 3);
	if (bytes == NULL)
		return -2;
	got = base64_decode(bytes, json_string_value(b->v), len, bad);
	if (got == (long long)want) {
		memcpy(t->data, bytes, want);
		base64_f32_from_le(t->data, t->n);
	}
	free(bytes);
	return got;
}

/* The declared shape must match the data actually sent before anything of
 * that size is allocated (a shape alone is a cheap way to ask for gigabytes). */
static int check_declared(struct api_tensor *t, const json_t *data,
			  const struct b64_member *b64, const char *ptr, size_t max_elems,
			  unsigned flags, struct api_error *err)
{
	size_t n = 1;
	char child[192];

	for (size_t a = 0; a < t->rank; a++)
		if (size_mul(&n, n, t->shape[a]) != 0 || n > max_elems)
			return api_fail(err, API_E_TOO_LARGE, ptr,
					"tensor has more than %zu elements", max_elems);
	/* a data of the wrong JSON type is invalid_type, as base64's is below */
	if (data != NULL && !json_is_array(data))
		return api_fail(err, API_E_INVALID_TYPE, api_ptr_key_r(child, ptr, "data"),
				"data must be an array: a flat array of %zu elements", n);
	if (data != NULL && json_array_size(data) != n)
		return api_fail(err, API_E_INVALID_SHAPE, api_ptr_key_r(child, ptr, "data"),
				"data must be a flat array of %zu elements", n);
	if (b64->v != NULL && (flags & API_T_BOOL))
		return api_fail(err, API_E_INVALID_TYPE, api_ptr_key_r(child, ptr, "base64"),
				"a boolean tensor cannot be sent as base64; send true / false "
				"in nested arrays or in \"data\"");
	if (b64->v != NULL && !b64_is_string(b64))
		return api_fail(err, API_E_INVALID_TYPE, api_ptr_key_r(child, ptr, "base64"),
				"base64 must be a string of float32 bytes");
	if (b64->v != NULL && b64_length(b64) != base64_encoded_len(n * sizeof(float)))
		return api_fail(err, API_E_INVALID_BASE64, api_ptr_key_r(child, ptr, "base64"),
				"base64 must be a string of %zu characters (%zu float32 values)",
				base64_encoded_len(n * sizeof(float)), n);
	return 0;
}

/*
 * The index of the first NaN or infinity in x[from .. n), or n. A value is
 * not finite when its 8 exponent bits are all set, and then (and only then)
 * adding 1 at the exponent's bottom carries into the sign bit: so a block of
 * values is checked two at a time in 64-bit words, without a branch or a
 * compare per value (the carry never crosses into the other half), and only
 * a block that holds one is searched value by value.
 */
static size_t first_nonfinite(const float *x, size_t from, size_t n)
{
	enum { BLOCK = 256 };
	const uint64_t exponents = 0x7f8000007f800000ULL, one = 0x0080000000800000ULL;

	for (size_t b = from; b < n; b += BLOCK) {
		size_t end = n - b < BLOCK ? n : b + BLOCK, k = b;
		uint64_t carries = 0;

		for (; k + 2 <= end; k += 2) {
			uint64_t u;

			memcpy(&u, &x[k], sizeof u);
			carries |= (u & exponents) + one;
		}
		for (; k < end; k++) {
			uint32_t u;

			memcpy(&u, &x[k], sizeof u);
			carries |= (uint64_t)((u & 0x7f800000u) + 0x00800000u);
		}
		if ((carries & 0x8000000080000000ULL) == 0)
			continue;
		for (k = b; k < end; k++)
			if (!isfinite(x[k]))
				return k;
	}
	return n;
}

/* The base64 member b of the tensor object at ptr into t (allocated, shape
 * checked against b's length): the bytes, then their values. */
static int read_base64(const struct fastjson_pool *pool, const struct b64_member *b,
		       const char *ptr, unsigned flags, struct api_tensor *t,
		       struct api_error *err)
{
	size_t bad = 0, len;
	long long got;
	char child[192];

	api_ptr_key(child, sizeof(child), ptr, "base64"); /* a string: check_declared */
	len = b64_length(b);
	if (len != base64_encoded_len(t->n * sizeof(float)))
		return api_fail(err, API_E_INVALID_BASE64, child,
				"has %zu characters; %zu float32 values need %zu", len, t->n,
				base64_encoded_len(t->n * sizeof(float)));
	got = b64_decode(pool, b, t, &bad);
	if (got == -2)
		return api_fail(err, API_E_OUT_OF_MEMORY, ptr, "out of memory");
	if (got < 0)
		return api_fail(err, API_E_INVALID_BASE64, child,
				"invalid base64 at character %zu", bad);
	if (got != (long long)(t->n * sizeof(float)))
		return api_fail(err, API_E_INVALID_BASE64, child,
				"decodes to %lld bytes; %zu float32 values need %zu", got, t->n,
				t->n * sizeof(float));
	if (flags & API_T_NONFINITE)
		return 0;
	for (size_t k = first_nonfinite(t->data, 0, t->n); k < t->n;
	     k = first_nonfinite(t->data, k + 1, t->n))
		if (!((flags & API_T_NEG_INF) && t->data[k] == -INFINITY))
			return api_fail(err, API_E_OUT_OF_RANGE, child,
					"element %zu is not finite", k);
	return 0;
}

/* {"shape": [...], "data": [...]} or {"shape": [...], "base64": "..."} */
static int read_object(const struct fastjson_pool *pool, json_t *v, const char *ptr,
		       size_t min_rank, size_t max_rank, size_t max_elems, unsigned flags,
		       struct api_tensor *t, struct api_error *err)
{
	const json_t *shape = json_object_get(v, "shape"), *data = json_object_get(v, "data");
	const json_t *b64_v = json_object_get(v, "base64");
	const struct b64_member b64 = {b64_v, fastjson_base64(pool, b64_v)};
	char child[192];
	const char *key;
	json_t *val;

	json_object_foreach(v, key, val) {
		if (strcmp(key, "shape") != 0 && strcmp(key, "data") != 0 &&
		    strcmp(key, "base64") != 0) {
			api_ptr_key(child, sizeof(child), ptr, key);
			return api_fail(err, API_E_UNKNOWN_FIELD, child,
					"unknown field; a tensor object has shape and data or base64");
		}
	}
	api_ptr_key(child, sizeof(child), ptr, "shape");
	if (!json_is_array(shape) || json_array_size(shape) < min_rank ||
	    json_array_size(shape) > max_rank)
		return api_fail(err, API_E_INVALID_SHAPE, child,
				"shape must be an array of %zu..%zu positive integers", min_rank,
				max_rank);
	t->rank = json_array_size(shape);
	for (size_t a = 0; a < t->rank; a++) {
		json_int_t d;

		if (!req_integer(json_array_get(shape, a), &d) || d < 0 ||
		    (d == 0 && !(flags & API_T_EMPTY))) {
			char dim[192];

			api_ptr_index(dim, sizeof(dim), child, a);
			return api_fail(err, API_E_INVALID_SHAPE, dim,
					"dimensions must be positive integers");
		}
		t->shape[a] = (size_t)d;
	}
	if ((data == NULL) == (b64_v == NULL))
		return api_fail(err, API_E_INVALID_TENSOR, ptr,
				"a tensor object needs exactly one of data and base64");
	if (check_declared(t, data, &b64, ptr, max_elems, flags, err) != 0 ||
	    alloc_tensor(t, ptr, max_elems, 1, err) != 0)
		return -1;
	if (b64_v != NULL)
		return read_base64(pool, &b64, ptr, flags, t, err);
	api_ptr_key(child, sizeof(child), ptr, "data");
	if (!json_is_array(data) || json_array_size(data) != t->n)
		return api_fail(err, API_E_INVALID_SHAPE, child,
				"data must be a flat array of %zu elements", t->n);
	for (size_t k = 0; k < t->n; k++) {
		char elem[192];

		api_ptr_index(elem, sizeof(elem), child, k);
		if (api_json_f32(json_array_get(data, k), elem, flags, &t->data[k], err) != 0)
			return -1;
	}
	return 0;
}

int api_tensor_read(json_t *v, const char *ptr, size_t min_rank, size_t max_rank,
		    size_t max_elems, unsigned flags, struct api_tensor *out,
		    struct api_error *err)
{
	return api_tensor_read_pool(NULL, v, ptr, min_rank, max_rank, max_elems, flags, out, err);
}

int api_tensor_read_pool(struct fastjson_pool *pool, json_t *v, const char *ptr, size_t min_rank,
			 size_t max_rank, size_t max_elems, unsigned flags, struct api_tensor *out,
			 struct api_error *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (json_is_array(v) || fastjson_matrix(pool, v) != NULL) /* a matrix: its array */
		rc = read_nested(pool, v, ptr, min_rank, max_rank, max_elems, flags, out, err);
	else if (json_is_object(v))
		rc = read_object(pool, v, ptr, min_rank, max_rank, max_elems, flags, out, err);
	else
		rc = api_fail(err, API_E_INVALID_TYPE, ptr,
			      "expected a tensor: nested arrays or {\"shape\", \"data\"}");
	if (rc != 0)
		api_tensor_release(out);
	return rc;
}

int api_json_i64(const json_t *v, const char *ptr, int64_t lo, int64_t hi, int64_t *out,
		 struct api_error *err)
{
	json_int_t x;
	int whole = req_integer(v, &x);

	if (req_past_int64(v)) /* not its clamped end, which [lo, hi] may hold */
		return api_fail(err, API_E_OUT_OF_RANGE, ptr,
				"%.17g is past the range of a 64-bit integer", json_real_value(v));
	if (!whole || x < lo || x > hi)
		return api_fail(err, whole ? API_E_OUT_OF_RANGE : API_E_INVALID_TYPE, ptr,
				"expected an integer in [%lld, %lld]", (long long)lo, (long long)hi);
	*out = x;
	return 0;
}

int api_ints_read(const json_t *v, const char *ptr, int64_t lo, int64_t hi, int64_t **out,
		  size_t *n, struct api_error *err)
{
	char child[192];

	*out = NULL;
	if (!json_is_array(v) || json_array_size(v) == 0)
		return api_fail(err, API_E_INVALID_TYPE, ptr, "expected a non-empty array of integers");
	*n = json_array_size(v);
	*out = malloc(*n * sizeof(int64_t));
	if (*out == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, ptr, "out of memory");
	for (size_t k = 0; k < *n; k++) {
		api_ptr_index(child, sizeof(child), ptr, k);
		if (api_json_i64(json_array_get(v, k), child, lo, hi, &(*out)[k], err) != 0) {
			free(*out);
			*out = NULL;
			return -1;
		}
	}
	return 0;
}

/* ---- writing ----------------------------------------------------------- */

/* NaN and the infinities, which JSON has no number for, as strings. */
static char *write_nonfinite(char *p, float v)
{
	const char *s = isnan(v) ? "\"NaN\"" : v < 0 ? "\"-Infinity\"" : "\"Infinity\"";
	size_t len = strlen(s);

	memcpy(p, s, len);
	return p + len;
}

/*
 * One innermost row, "[x0,x1,...]". Its worst case is reserved once (each
 * number at most FMT_FLOAT_MAX bytes, which fmt may write past the number's
 * end, and a comma), so the loop writes without a check per number: each
 * number and a ',' after it, the last ',' then becoming the ']'.
 */
static int write_row(struct api_writer *w, const float *x, size_t n)
{
	char *p = buf_reserve(w->out, n * (FMT_FLOAT_MAX + 2) + 2);
	char *start = p;

	if (p == NULL)
		return -1;
	*p++ = '[';
	for (size_t k = 0; k < n;) {
		if (w->precision <= 0) { /* the finite run from k, in one call */
			size_t done;

			p += fmt_floats_shortest(p, x + k, n - k, &done);
			k += done;
			if (k == n)
				break;
		}
		if (!isfinite(x[k]))
			p = write_nonfinite(p, x[k]);
		else
			p += fmt_float_digits(p, x[k], w->precision);
		*p++ = ',';
		k++;
	}
	if (n > 0)
		p--;
	*p++ = ']';
	buf_commit(w->out, (size_t)(p - start));
	return 0;
}

static int write_nested(struct api_writer *w, const float *x, size_t rank, const size_t *shape)
{
	size_t stride = 1;

	if (rank == 1)
		return write_row(w, x, shape[0]);
	for (size_t a = 1; a < rank; a++)
		stride *= shape[a];
	buf_putc(w->out, '[');
	for (size_t k = 0; k < shape[0]; k++) {
		if (k > 0)
			buf_putc(w->out, ',');
		if (write_nested(w, x + k * stride, rank - 1, shape + 1) != 0)
			return -1;
	}
	return buf_putc(w->out, ']');
}

/* Numbers past which a tensor is written row by row, so that the worst case
 * reserved at once stays a few hundred kilobytes however large the answer. */
enum { FLAT_NUMBERS_MAX = 4096 };

/*
 * The whole tensor in one pass: the numbers of every row in one run of
 * fmt_floats_shortest_nested, which writes the brackets between rows itself,
 * so a small tensor costs one call instead of a call, a reservation and
 * bracket appends per row. The same bytes as write_nested (its naive twin,
 * which tests compare it with); 1 when it does not apply (digits asked for,
 * an empty axis, a large tensor, or a worst case past the buffer's maximum,
 * where write_nested then fails, or not, exactly as it always did).
 */
static int write_flat(struct api_writer *w, const float *x, size_t rank, const size_t *shape)
{
	struct fmt_nest nest;
	size_t n = 1, need, k = 0;
	char *p, *start;

	if (w->precision > 0 || rank == 0 || rank > FMT_NEST_MAX)
		return 1;
	for (size_t a = 0; a < rank; a++) {
		if (shape[a] == 0 || shape[a] > FLAT_NUMBERS_MAX / n)
			return 1;
		n *= shape[a];
	}
	/* each number, its overrun and its separator; the opening and closing brackets */
	need = n * (FMT_FLOAT_MAX + 2 * rank) + 2 * rank;
	if (need > w->out->max - w->out->len)
		return 1;
	p = buf_reserve(w->out, need);
	if (p == NULL)
		return -1;
	start = p;
	memset(p, '[', rank);
	p += rank;
	fmt_nest_init(&nest, rank, shape);
	while (k < n) {
		size_t done;

		p += fmt_floats_shortest_nested(p, x + k, n - k, &nest, &done);
		k += done;
		if (k == n)
			break;
		p = write_nonfinite(p, x[k]);
		p = fmt_nest_sep(p, &nest);
		k++;
	}
	p--; /* the ',' after the last number */
	memset(p, ']', rank);
	p += rank;
	buf_commit(w->out, (size_t)(p - start));
	return 0;
}

static int write_base64(struct api_writer *w, const float *x, size_t rank, const size_t *shape)
{
	size_t n = 1, len;
	char *p;

	buf_puts(w->out, "{\"shape\":[");
	for (size_t a = 0; a < rank; a++) {
		if (a > 0)
			buf_putc(w->out, ',');
		buf_put_u64(w->out, shape[a]);
		n *= shape[a];
	}
	buf_puts(w->out, "],\"base64\":\"");
	len = base64_encoded_len(n * sizeof(float));
	p = buf_reserve(w->out, len); /* encoded in place: no copy of the bytes */
	if (p == NULL)
		return -1;
	base64_encode_f32le(p, x, n);
	buf_commit(w->out, len);
	return buf_puts(w->out, "\"}");
}

int api_tensor_write(struct api_writer *w, const float *x, size_t rank, const size_t *shape)
{
	int rc;

	if (w->encoding == API_ENC_BASE64) {
		rc = write_base64(w, x, rank, shape);
	} else {
		rc = write_flat(w, x, rank, shape);
		if (rc == 1) /* not for this tensor: row by row */
			rc = write_nested(w, x, rank, shape);
	}
	return rc != 0 || w->out->failed ? -1 : 0;
}

int api_tensor_write_ref(struct api_writer *w, const float *x, size_t rank, const size_t *shape)
{
	int rc = w->encoding == API_ENC_BASE64 ? write_base64(w, x, rank, shape)
					       : write_nested(w, x, rank, shape);

	return rc != 0 || w->out->failed ? -1 : 0;
}
