/*
 * api_tensor.h: tensors in the API's answers and requests, for the check_api_*
 * suites: reading an answer's tensor (nested arrays or {"shape", "base64"})
 * back into a flat array, comparing tensors within a tolerance, and building
 * tensors as JSON. base64 (RFC 4648) is written here to check the API's
 * independently.
 *
 * Ownership: every array and string these functions return is in the
 * harness's arena (api_harness.h); the json_t builders return new references
 * the caller owns (or steals into a request). Failures are Check assertions.
 * Every name here starts with tensor_.
 */
#ifndef ATTN_TESTS_API_TENSOR_H
#define ATTN_TESTS_API_TENSOR_H

#include <jansson.h>
#include <stddef.h>

#include "api_harness.h"

/* A tensor read back from JSON: flat, row-major, outermost first. */
struct flat {
	float *x; /* in the arena */
	size_t n, rank, shape[6];
};

/* A number, or one of the strings JSON uses for non-finite floats. */
float tensor_cell(const json_t *v);

/* Reads nested arrays or {"shape", "base64"}; asserts the tensor is regular. */
struct flat tensor_of(const json_t *v);

/* The tensor `key` of an answer. */
struct flat tensor_at(const struct answer *a, const char *key);

/* Item b of a per-item answer (a ragged batch comes back as a list). */
struct flat tensor_item(const struct answer *a, const char *key, size_t b);

/* Asserts f has this rank and these dimensions (ints, outermost first). */
void tensor_assert_shape(const char *what, const struct flat *f, size_t rank, ...);

/* |got - want| <= atol + rtol |want|; infinities and NaN only match themselves. */
int tensor_near(double got, double want, double atol, double rtol);

void tensor_assert_near_n(const char *what, const float *got, const float *want, size_t n,
			  double atol, double rtol);

/* Same shape, and every cell near. */
void tensor_assert_near(const char *what, const struct flat *got, const struct flat *want,
			double atol, double rtol);

/* The tensor `key` of two answers agrees within the tolerance (0, 0: equal). */
void tensor_assert_same(const struct answer *a, const struct answer *b, const char *key,
			double atol, double rtol);

/* The largest |a - b| of the tensor `key` of two answers of one shape. */
double tensor_max_diff(const struct answer *a, const struct answer *b, const char *key);

/* weights [H, Lq, Lk] (one item): row i of head h. */
const float *tensor_row(const struct flat *w, size_t h, size_t i);

/* data [n] as standard padded base64, in the arena. */
const char *tensor_b64_encode(const void *data, size_t n);

/* x as a JSON number, or as the string for a non-finite value. */
json_t *tensor_json_cell(float x);

/* x [n] as a JSON array of tensor_json_cell. */
json_t *tensor_json_floats(const float *x, size_t n);

/* x [rows, cols] as nested arrays. */
json_t *tensor_json_matrix(const float *x, size_t rows, size_t cols);

/* The flat JSON array data (borrowed cells) nested to shape; *pos starts at 0. */
json_t *tensor_json_nest(const json_t *data, const size_t *shape, size_t rank, size_t *pos);

/* {"shape": shape, "data": data (stolen)}. */
json_t *tensor_json_obj(json_t *data, size_t rank, const size_t *shape);

#endif
