/*
 * v2_tensor.c: one input tensor of an infer request (see v2.h).
 *
 *   {"name", "shape", "datatype", "parameters"?, "data"?}
 *
 * with exactly one of
 *   data                         JSON arrays, flat or nested, row-major; as in
 *                                Triton only the element count must match the
 *                                shape, not the nesting
 *   parameters.binary_data_size  that many bytes of the binary section:
 *                                little-endian FP32 / INT32 / INT64 values, or
 *                                BYTES elements, each a 4-byte little-endian
 *                                length and then that many bytes
 * Every size is checked exactly and overflow-checked, and nothing reads past
 * the binary section. Strings (BYTES) must be UTF-8 without NUL bytes.
 */
#include "v2.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/json_read.h"
#include "api/json/json_utf8.h"
#include "engine/sizes.h"

static const char *const input_fields[] = { "name", "shape", "datatype", "parameters", "data",
					    NULL };
static const char *const input_params[] = { "binary_data_size", "content_type", NULL };

/* Bytes one element takes in the binary section (BYTES: its length prefix),
 * and in memory here (BYTES: a rough jansson string) for the memory bound. */
static const size_t wire_bytes[V2_DTYPE_COUNT] = { 4, 4, 8, 4 };
static const size_t held_bytes[V2_DTYPE_COUNT] = { 4, 8, 8, 64 };

void v2_input_release(struct v2_input *t)
{
	if (t == NULL)
		return;
	free(t->f32);
	free(t->i64);
	json_decref(t->strings);
	memset(t, 0, sizeof(*t));
}

static int read_dtype(const json_t *in, const char *ptr, enum v2_dtype *out,
		      struct api_error *err)
{
	const json_t *v = json_object_get(in, "datatype");
	char child[API_PTR_MAX];

	req_child(child, ptr, "datatype");
	if (!json_is_string(v))
		return api_fail(err, API_E_INVALID_TYPE, child,
				"datatype is a string: FP32, INT32, INT64 or BYTES");
	*out = v2_dtype_of(json_string_value(v));
	if (*out != V2_DTYPE_COUNT)
		return 0;
	return api_fail(err, API_E_UNSUPPORTED_DATATYPE, child,
			"datatype '%s' is not supported here; use FP32, INT32, INT64 or BYTES",
			json_string_value(v));
}

/* shape: 1 to 4 dimensions >= 0; the element count fits max_bytes of memory. */
static int read_shape(const json_t *in, const char *ptr, size_t max_bytes, struct v2_input *t,
		      struct api_error *err)
{
	const json_t *v = json_object_get(in, "shape");
	char child[API_PTR_MAX];
	size_t n = 1, bytes = 0;

	req_child(child, ptr, "shape");
	if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > API_MAX_RANK)
		return api_fail(err, API_E_INVALID_SHAPE, child,
				"shape is an array of 1 to %d dimensions", API_MAX_RANK);
	t->rank = json_array_size(v);
	for (size_t i = 0; i < t->rank; i++) {
		json_int_t d;

		if (!req_integer(json_array_get(v, i), &d) || d < 0) {
			char dim[API_PTR_MAX];

			/* the dimension at fault, as /v1 points at a tensor's shape/1 */
			api_ptr_index(dim, sizeof(dim), child, i);
			return api_fail(err, API_E_INVALID_SHAPE, dim,
					"a dimension is an integer >= 0 (-1 is for metadata only)");
		}
		t->shape[i] = (size_t)d;
		if (size_mul(&n, n, t->shape[i]) != 0)
			n = SIZE_MAX;
	}
	t->n = n;
	if (size_mul(&bytes, n, held_bytes[t->dtype]) != 0 || bytes > max_bytes)
		return api_fail(err, API_E_REQUEST_TOO_LARGE, child,
				"input '%s' has more elements than the request memory limit of %zu MB "
				"allows",
				t->name, max_bytes >> 20);
	return 0;
}

/* parameters: binary_data_size (*has_size set when given), content_type (ignored). */
static int read_params(json_t *in, const char *ptr, int *has_size, size_t *size,
		       struct api_error *err)
{
	json_t *p = json_object_get(in, "parameters");
	char child[API_PTR_MAX], grandchild[API_PTR_MAX];

	*has_size = 0;
	if (p == NULL)
		return 0;
	req_child(child, ptr, "parameters");
	if (!json_is_object(p))
		return api_fail(err, API_E_INVALID_TYPE, child, "parameters is an object");
	if (req_known_fields(p, child, input_params, err) != 0 ||
	    req_size(p, "binary_data_size", child, 0, SIZE_MAX >> 1, 0, size, err) != 0)
		return -1;
	if (json_object_get(p, "content_type") && !json_is_string(json_object_get(p, "content_type")))
		return api_fail(err, API_E_INVALID_TYPE, req_child(grandchild, child, "content_type"),
				"content_type is a string");
	*has_size = json_object_get(p, "binary_data_size") != NULL;
	return 0;
}

/* ---- JSON data ------------------------------------------------------------ */

struct fill {
	struct v2_input *t;
	size_t at;  /* elements stored */
	int nested; /* an array within data (even an empty one): no flat pointers */
};

/* One element at ptr (its JSON pointer), read as /v1 reads tensors' elements. */
static int fill_leaf(struct fill *f, json_t *v, const char *ptr, struct api_error *err)
{
	struct v2_input *t = f->t;
	int64_t lo = t->dtype == V2_INT32 ? INT32_MIN : INT64_MIN;
	int64_t hi = t->dtype == V2_INT32 ? INT32_MAX : INT64_MAX;

	if (f->at >= t->n)
		return api_fail(err, API_E_SHAPE_MISMATCH, ptr,
				"data has more elements than the %zu of its shape", t->n);
	switch (t->dtype) {
	case V2_FP32:
		if (api_json_f32(v, ptr, 0, &t->f32[f->at], err) != 0)
			return -1;
		break;
	case V2_INT32:
	case V2_INT64:
		if (api_json_i64(v, ptr, lo, hi, &t->i64[f->at], err) != 0)
			return -1;
		break;
	case V2_BYTES:
		if (!json_is_string(v))
			return api_fail(err, API_E_INVALID_TYPE, ptr, "expected a string");
		if (json_array_append(t->strings, v) != 0)
			return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
		break;
	default:
		return api_fail(err, API_E_UNSUPPORTED_DATATYPE, ptr, "unknown datatype");
	}
	f->at++;
	return 0;
}

/* Depth first, so nested arrays are read in row-major order; ptr is v's. */
static int fill_data(struct fill *f, json_t *v, const char *ptr, int depth,
		     struct api_error *err)
{
	if (!json_is_array(v))
		return fill_leaf(f, v, ptr, err);
	if (depth >= API_V2_DATA_NEST_MAX)
		return api_fail(err, API_E_INVALID_SHAPE, ptr, "data is nested deeper than %d arrays",
				API_V2_DATA_NEST_MAX);
	f->nested |= depth > 0;
	for (size_t i = 0; i < json_array_size(v); i++) {
		char child[API_PTR_MAX];

		api_ptr_index(child, sizeof(child), ptr, i);
		if (fill_data(f, json_array_get(v, i), child, depth + 1, err) != 0)
			return -1;
	}
	return 0;
}

static int read_json(struct v2_input *t, json_t *data, const char *ptr, struct api_error *err)
{
	char child[API_PTR_MAX];
	struct fill f = { t, 0, 0 };

	req_child(child, ptr, "data");
	if (!json_is_array(data))
		return api_fail(err, API_E_INVALID_TYPE, child,
				"data is an array (flat or nested, row-major)");
	if (fill_data(&f, data, child, 0, err) != 0)
		return -1;
	if (f.at != t->n)
		return api_fail(err, API_E_SHAPE_MISMATCH, child,
				"data has %zu elements; its shape needs %zu", f.at, t->n);
	/* elements are pointed at by their index in a flat array; in nested
	 * data, even unevenly ([1, [2, 3]]: the third is at data/1/1), the
	 * array is pointed at */
	snprintf(t->where_base, sizeof t->where_base, "%s", child);
	t->where_elems = f.nested ? API_WHERE_NONE : API_WHERE_FLAT;
	return 0;
}

/* ---- binary data ----------------------------------------------------------- */

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* BYTES: n elements of [4-byte length][bytes], filling exactly size bytes. */
static int read_strings(struct v2_input *t, const unsigned char *p, size_t size,
			const char *ptr, struct api_error *err)
{
	const unsigned char *end = p + size;

	for (size_t k = 0; k < t->n; k++) {
		size_t len;
		json_t *s;

		if ((size_t)(end - p) < 4)
			return api_fail(err, API_E_BINARY_SIZE_MISMATCH, ptr,
					"element %zu's length prefix passes binary_data_size %zu", k,
					size);
		len = le32(p);
		p += 4;
		if (len > (size_t)(end - p))
			return api_fail(err, API_E_BINARY_SIZE_MISMATCH, ptr,
					"element %zu (%zu bytes) passes binary_data_size %zu", k, len,
					size);
		s = memchr(p, 0, len) == NULL ? json_stringn((const char *)p, len) : NULL;
		if (s == NULL || json_array_append_new(t->strings, s) != 0)
			return api_fail(err, API_E_INVALID_STRING, ptr,
					"element %zu is not UTF-8 text without NUL bytes", k);
		p += len;
	}
	if (p != end)
		return api_fail(err, API_E_BINARY_SIZE_MISMATCH, ptr,
				"binary_data_size %zu holds %zu bytes past its %zu elements", size,
				(size_t)(end - p), t->n);
	return 0;
}

/* Takes the input's `size` bytes off the front of the binary section. */
static int read_binary(struct v2_input *t, size_t size, struct v2_binary *bin,
		       const char *ptr, struct api_error *err)
{
	char params[API_PTR_MAX], child[API_PTR_MAX];
	const unsigned char *p = bin->p;
	size_t want = 0, w = wire_bytes[t->dtype];

	api_ptr_key(params, sizeof(params), ptr, "parameters");
	api_ptr_key(child, sizeof(child), params, "binary_data_size");
	if (size > bin->left)
		return api_fail(err, API_E_BINARY_SIZE_MISMATCH, child,
				"binary_data_size %zu passes the end of the body (%zu bytes left)",
				size, bin->left);
	bin->p += size;
	bin->left -= size;
	if (t->dtype == V2_BYTES)
		return read_strings(t, p, size, child, err);
	if (size_mul(&want, t->n, w) != 0 || want != size)
		return api_fail(err, API_E_BINARY_SIZE_MISMATCH, child,
				"binary_data_size is %zu; %zu %s elements take %zu bytes", size, t->n,
				v2_dtype_name(t->dtype), want);
	for (size_t k = 0; k < t->n; k++, p += w) {
		if (t->dtype == V2_FP32) {
			uint32_t bits = le32(p);

			memcpy(&t->f32[k], &bits, sizeof(float));
			if (!isfinite(t->f32[k]))
				return api_fail(err, API_E_INVALID_NUMBER, child,
						"element %zu is not finite", k);
		} else {
			t->i64[k] = t->dtype == V2_INT32 ? (int64_t)(int32_t)le32(p)
							 : (int64_t)le64(p);
		}
	}
	return 0;
}

/* ---- one input --------------------------------------------------------------- */

static int alloc_elements(struct v2_input *t, struct api_error *err)
{
	size_t n = t->n ? t->n : 1;

	if (t->dtype == V2_FP32)
		t->f32 = malloc(n * sizeof(float));
	else if (t->dtype == V2_BYTES)
		t->strings = json_array();
	else
		t->i64 = malloc(n * sizeof(int64_t));
	if (t->f32 == NULL && t->i64 == NULL && t->strings == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	return 0;
}

static int read_input(json_t *in, const char *ptr, struct v2_binary *bin, size_t max_bytes,
		      struct v2_input *t, struct api_error *err)
{
	const json_t *name = json_object_get(in, "name");
	json_t *data = json_object_get(in, "data");
	size_t size = 0;
	int has_size;
	char child[API_PTR_MAX];

	if (!json_is_object(in))
		return api_fail(err, API_E_INVALID_TYPE, ptr,
				"an input is an object with name, shape, datatype and data");
	if (req_known_fields(in, ptr, input_fields, err) != 0)
		return -1;
	if (!json_is_string(name) || json_string_length(name) == 0)
		return api_fail(err, API_E_INVALID_TYPE, req_child(child, ptr, "name"),
				"an input needs a name");
	t->name = json_string_value(name);
	if (read_dtype(in, ptr, &t->dtype, err) != 0 || read_shape(in, ptr, max_bytes, t, err) != 0 ||
	    read_params(in, ptr, &has_size, &size, err) != 0)
		return -1;
	if ((data != NULL) == has_size)
		return api_fail(err, API_E_INVALID_INPUT, ptr,
				"input '%s' needs exactly one of data and parameters.binary_data_size",
				t->name);
	if (alloc_elements(t, err) != 0)
		return -1;
	return has_size ? read_binary(t, size, bin, ptr, err) : read_json(t, data, ptr, err);
}

int v2_input_read(json_t *in, size_t index, struct v2_binary *bin, size_t max_bytes,
		  struct v2_input *out, struct api_error *err)
{
	char ptr[API_PTR_MAX];

	memset(out, 0, sizeof(*out));
	api_ptr_index(ptr, sizeof(ptr), "/inputs", index);
	/* binary data, and nested data, are pointed at as the input */
	snprintf(out->where_base, sizeof out->where_base, "%s", ptr);
	out->where_elems = API_WHERE_NONE;
	if (read_input(in, ptr, bin, max_bytes, out, err) != 0) {
		v2_input_release(out);
		return -1;
	}
	return 0;
}
