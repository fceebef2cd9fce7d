/*
 * json_tensor.h: tensors in the JSON contract, in both directions.
 *
 * A tensor in a request is any of
 *   nested arrays            [[1, 2], [3, 4]]
 *   flat data with a shape   {"shape": [2, 2], "data": [1, 2, 3, 4]}
 *   base64 with a shape      {"shape": [2, 2], "base64": "..."} (little-endian float32)
 * Numbers must be finite and inside float32's range; where a tensor may hold
 * -inf (an additive mask) the strings "-Infinity", "Infinity", "NaN" are read
 * when API_T_NONFINITE is given, as protobuf's JSON mapping writes them.
 *
 * Ownership: api_tensor_read fills a struct api_tensor (api/values.h) whose
 * data the caller releases with api_tensor_release.
 * Readers never keep the json_t; writers append to a caller's buf.
 */
#ifndef API_TENSOR_H
#define API_TENSOR_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "api/values.h"
#include "api/error.h"

enum api_tensor_flags {
	API_T_NONFINITE = 1 << 0, /* accept "-Infinity" / "Infinity" / "NaN" strings */
	API_T_BOOL = 1 << 1,      /* elements are true / false (read as 1 / 0) */
	API_T_RAGGED = 1 << 2,    /* in rank >= 3 tensors, axis 1 may differ per item of
				     axis 0 (nested form); deeper axes never */
	API_T_NEG_INF = 1 << 4,   /* accept the string "-Infinity" only (additive masks) */
	API_T_INTEGER = 1 << 3,   /* elements must be integers (stored exactly as float
				     when |x| < 2^24; use api_ints_read for ids) */
	API_T_EMPTY = 1 << 5,     /* {"shape", ...} may have a dimension of 0: no elements
				     (an empty KV cache; nested arrays cannot say it) */
};

/*
 * Reads `v` (located at JSON pointer `ptr`) as a tensor of rank min_rank ..
 * max_rank. max_elems bounds the element count before anything is allocated.
 * Errors are 422 with the pointer of the offending element.
 */
int api_tensor_read(json_t *v, const char *ptr, size_t min_rank, size_t max_rank,
		    size_t max_elems, unsigned flags, struct api_tensor *out,
		    struct api_error *err);

/*
 * api_tensor_read for a body parsed with req_parse_pooled: where a row of
 * numbers (or an array of rows) is expected, the placeholder of a pooled row
 * or matrix (fastjson.h) is read as the array it replaced, with the same
 * errors. pool may be NULL.
 *
 * Ownership: when v is a pooled matrix that holds all of the pool's values
 * and reads without an error, out->data is the pool's own buffer, taken
 * (fastjson_pool_take) instead of copied: the pool is empty after, and a
 * placeholder of it, read again, is no tensor (a 422). So read each pooled
 * field once. The pool stays the caller's to release either way.
 */
struct fastjson_pool;
int api_tensor_read_pool(struct fastjson_pool *pool, json_t *v, const char *ptr, size_t min_rank,
			 size_t max_rank, size_t max_elems, unsigned flags, struct api_tensor *out,
			 struct api_error *err);

/*
 * One element of a tensor, for every front end's reader of number arrays:
 * a number inside float32's range (with the flags above: a bool, or the
 * strings of non-finite values), or an integer in [lo, hi]. Errors are 422
 * at ptr, the element's own pointer.
 */
int api_json_f32(const json_t *v, const char *ptr, unsigned flags, float *out,
		 struct api_error *err);
int api_json_i64(const json_t *v, const char *ptr, int64_t lo, int64_t hi, int64_t *out,
		 struct api_error *err);

/* Reads an array of integers (nested up to rank 2 when allow_batch) in
 * [lo, hi] into a new int64 array; shape as api_tensor. */
int api_ints_read(const json_t *v, const char *ptr, int64_t lo, int64_t hi, int64_t **out,
		  size_t *n, struct api_error *err);

struct api_writer {
	struct buf *out;
	enum api_encoding encoding;
	int precision; /* 0: shortest round-trip text; else 1..9 significant digits */
};

/*
 * Appends the tensor x (row-major, `shape` outermost first, rank 1..4) to the
 * writer's buffer as nested arrays or base64. Non-finite values are written as
 * the strings "-Infinity", "Infinity", "NaN". Returns 0, or -1 when the buffer
 * hit its maximum.
 */
int api_tensor_write(struct api_writer *w, const float *x, size_t rank, const size_t *shape);

/* api_tensor_write's naive twin, for tests: the same bytes, a row at a time. */
int api_tensor_write_ref(struct api_writer *w, const float *x, size_t rank, const size_t *shape);


#endif
