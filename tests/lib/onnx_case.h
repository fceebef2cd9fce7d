/*
 * onnx_case.h: one ONNX Attention conformance case (opset 23/24), read from
 * the JSON of tests/data/onnx-attention (that folder's README.md
 * gives the format and the operator's semantics), and the README's rule for
 * comparing an output with the expected one. check_onnx maps a case onto the
 * engine's struct attn_sdpa; check_api_sdpa sends it as a /v1/sdpa request.
 *
 * Tolerances (README, "Verification"):
 *   float32 outputs   |got - expected| <= 1e-5; an expected -inf cell must be -inf.
 *   float16 outputs   our float32 result rounded to float16 (nearest, ties to
 *                     even) within 1 float16 ulp of the expected value. The
 *                     expected values are the correctly rounded float64 result,
 *                     and a float32 result a hair away from a rounding boundary
 *                     may round to the neighbour.
 *   exact             present_key / present_value, copies of the keys.
 *
 * Ownership: a struct onnx_case owns its tensors; onnx_case_release frees them
 * and accepts a case that failed to load half-way. A failure is recorded as a
 * message in c->error (functions return -1), so callers can free everything
 * before they assert. Every name here starts with onnx_ / ONNX_: the Makefile
 * links this file into every test binary.
 */
#ifndef ATTN_TESTS_ONNX_CASE_H
#define ATTN_TESTS_ONNX_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "case_files.h"

#define ONNX_CASE_COUNT 76
#define ONNX_CASE_DIR_ENV "ATTN_ONNX_DIR"
#define ONNX_CASE_DEFAULT_DIR "tests/data/onnx-attention"
#define ONNX_CASE_PREFIX "test_attention_"
#define ONNX_CASE_SUFFIX ".json"

enum onnx_dtype { ONNX_FLOAT32, ONNX_FLOAT16, ONNX_BOOL, ONNX_INT64 };

/* One tensor; exactly one of f, b, i is set, per dtype. */
struct onnx_tensor {
	int present;
	enum onnx_dtype dtype;
	size_t rank, shape[4], n;
	float *f;   /* float32 and float16 (exactly) as float */
	uint8_t *b; /* bool, 1 = true */
	int64_t *i; /* int64 */
};

/* The operator's positional slots. */
enum onnx_in {
	ONNX_IN_Q,
	ONNX_IN_K,
	ONNX_IN_V,
	ONNX_IN_MASK,
	ONNX_IN_PAST_K,
	ONNX_IN_PAST_V,
	ONNX_IN_NONPAD,
	ONNX_IN_COUNT
};
enum onnx_out { ONNX_OUT_Y, ONNX_OUT_PRESENT_K, ONNX_OUT_PRESENT_V, ONNX_OUT_QK, ONNX_OUT_COUNT };

/* Node attributes; absent ones stay 0, which is each one's default here. */
struct onnx_attrs {
	long long is_causal, q_num_heads, kv_num_heads, qk_mode, softmax_precision;
	double scale, softcap;
};

struct onnx_case {
	char name[128];
	struct onnx_attrs attr;
	struct onnx_tensor in[ONNX_IN_COUNT];
	struct onnx_tensor out[ONNX_OUT_COUNT];
	char error[1024]; /* why the case failed */
};

/* Lists the case files (names without ".json") of $ATTN_ONNX_DIR or the default folder. */
void onnx_case_list(struct case_list *l);

/*
 * Loads dir/name.json into c (zeroed here); the file's "name" must be name.
 * On failure c->error says why and c may hold part of the tensors.
 */
int onnx_case_load(struct onnx_case *c, const char *dir, const char *name);

/* Frees the tensors; the case is empty afterwards. */
void onnx_case_release(struct onnx_case *c);

/* Records why the case failed (printf-style) and returns -1. */
int onnx_case_fail(struct onnx_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

int onnx_tensor_is_float(const struct onnx_tensor *t);

/* t has this rank and these leading dimensions (those past rank are ignored). */
int onnx_tensor_shape_is(const struct onnx_tensor *t, size_t rank, size_t d0, size_t d1, size_t d2,
			 size_t d3);

/*
 * Compares got [n] with the declared output slot under the rule above (exact:
 * bit for bit but NaN); on a mismatch names the first bad cell in c->error
 * (prefixed with label) and returns -1.
 */
int onnx_case_compare(struct onnx_case *c, const char *label, enum onnx_out slot, const float *got,
		      int exact);

#endif
