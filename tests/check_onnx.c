/*
 * check_onnx.c: the 76 ONNX Attention conformance cases (opset 23/24) run
 * through the engine's raw entry points, attn_sdpa_forward and its naive twin
 * attn_sdpa_forward_ref.
 *
 * Data: every test_attention_*.json in $ATTN_ONNX_DIR, or by default in
 * ../shared/conformance/onnx-attention relative to the working directory (the
 * repo root under `make test`; CI copies shared/ beside its clone). The JSON
 * format and the operator's semantics are in that folder's README.md.
 *
 * Tolerances (README, "Verification"):
 *   float32 outputs   |got - expected| <= 1e-5; an expected -inf cell must be -inf.
 *   float16 outputs   our float32 result rounded to float16 (nearest, ties to
 *                     even) within 1 float16 ulp of the expected value. The
 *                     expected values are the correctly rounded float64 result,
 *                     and a float32 result a hair away from a rounding boundary
 *                     may round to the neighbour.
 *   present_key/value a copy of past and new keys, so exact.
 * Each case also runs on the fast path with threads = 2, whose Y (and scores)
 * must be bit-identical to threads = 1.
 *
 * Ownership: a case is loaded, run and freed inside its own test. A failure is
 * recorded as a message and asserted only after cleanup, so the suite is
 * leak-free under CK_FORK=no as well.
 */
#include <cblas.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"

#define ONNX_CASE_COUNT 76
#define ONNX_DEFAULT_DIR "../shared/conformance/onnx-attention"
#define ONNX_PREFIX "test_attention_"
#define ONNX_SUFFIX ".json"
#define F32_TOL 1e-5
#define F16_MAX_ULPS 1
#define MAX_DIM 100000 /* sanity bound on one JSON shape entry */

/* ------------------------------------------------------------------------ */
/* float16                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * Rounds x to the nearest IEEE binary16, ties to even. Overflow (|x| >= 65520,
 * the midpoint above 65504) gives +-inf; NaN stays a quiet NaN.
 */
static uint16_t half_from_float(float x)
{
	uint32_t bits, sign, absx, biased, mant, half, rem, halfway, shift;

	memcpy(&bits, &x, sizeof(bits));
	sign = (bits >> 16) & 0x8000u;
	absx = bits & 0x7fffffffu;
	if (absx > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00u);
	if (absx >= 0x477ff000u)
		return (uint16_t)(sign | 0x7c00u);
	biased = absx >> 23;
	if (biased >= 127 - 14) {
		/* normal: keep 10 of the 23 mantissa bits, round on the 13 dropped */
		half = ((biased - 127 + 15) << 10) | ((absx >> 13) & 0x3ffu);
		rem = absx & 0x1fffu;
		if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
			half++; /* a carry into the exponent is the right answer */
		return (uint16_t)(sign | half);
	}
	/*
	 * subnormal result, in units of 2^-24: x = mant * 2^(biased - 150), so
	 * x / 2^-24 = mant >> (126 - biased); below 2^-25 everything rounds to 0.
	 */
	if (biased == 0)
		return (uint16_t)sign;
	shift = 126 - biased;
	if (shift > 24)
		return (uint16_t)sign;
	mant = (absx & 0x7fffffu) | 0x800000u;
	half = mant >> shift;
	rem = mant & ((1u << shift) - 1);
	halfway = 1u << (shift - 1);
	if (rem > halfway || (rem == halfway && (half & 1u)))
		half++;
	return (uint16_t)(sign | half);
}

static float half_to_float(uint16_t h)
{
	uint32_t exponent = (h >> 10) & 0x1fu;
	uint32_t mant = h & 0x3ffu;
	float mag;

	if (exponent == 0)
		mag = ldexpf((float)mant, -24);
	else if (exponent == 31)
		mag = mant ? NAN : INFINITY;
	else
		mag = ldexpf((float)(mant | 0x400u), (int)exponent - 25);
	return (h & 0x8000u) ? -mag : mag;
}

/* Distance in float16 ulps, with -0 == +0; NaN is far from everything. */
static long half_ulps(uint16_t a, uint16_t b)
{
	long oa = (a & 0x8000u) ? -(long)(a & 0x7fffu) : (long)a;
	long ob = (b & 0x8000u) ? -(long)(b & 0x7fffu) : (long)b;

	return oa > ob ? oa - ob : ob - oa;
}

/* ------------------------------------------------------------------------ */
/* A case as read from JSON                                                  */
/* ------------------------------------------------------------------------ */

enum dtype { DT_FLOAT32, DT_FLOAT16, DT_BOOL, DT_INT64 };

static const char *const dtype_names[] = {
    [DT_FLOAT32] = "float32",
    [DT_FLOAT16] = "float16",
    [DT_BOOL] = "bool",
    [DT_INT64] = "int64",
};

/* One tensor; exactly one of f, b, i is set, per dtype. */
struct tensor {
	int present;
	enum dtype dtype;
	size_t rank, shape[4], n;
	float *f;   /* float32 and float16 (exactly) as float */
	uint8_t *b; /* bool, 1 = true */
	int64_t *i; /* int64 */
};

/* The operator's positional slots. */
enum in_slot { IN_Q, IN_K, IN_V, IN_MASK, IN_PAST_K, IN_PAST_V, IN_NONPAD, IN_COUNT };
enum out_slot { OUT_Y, OUT_PRESENT_K, OUT_PRESENT_V, OUT_QK, OUT_COUNT };

static const char *const in_names[IN_COUNT] = {
    "Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen",
};
static const char *const out_names[OUT_COUNT] = {
    "Y",
    "present_key",
    "present_value",
    "qk_matmul_output",
};

/* Node attributes; absent ones stay 0, which is each one's default here. */
struct onnx_attrs {
	long long is_causal, q_num_heads, kv_num_heads, qk_mode, softmax_precision;
	double scale, softcap;
};

static const struct attr_spec {
	const char *name;
	int is_float;
	size_t offset;
} attr_specs[] = {
    {"is_causal", 0, offsetof(struct onnx_attrs, is_causal)},
    {"q_num_heads", 0, offsetof(struct onnx_attrs, q_num_heads)},
    {"kv_num_heads", 0, offsetof(struct onnx_attrs, kv_num_heads)},
    {"qk_matmul_output_mode", 0, offsetof(struct onnx_attrs, qk_mode)},
    {"softmax_precision", 0, offsetof(struct onnx_attrs, softmax_precision)},
    {"scale", 1, offsetof(struct onnx_attrs, scale)},
    {"softcap", 1, offsetof(struct onnx_attrs, softcap)},
};

struct onnx_case {
	char name[128];
	struct onnx_attrs attr;
	struct tensor in[IN_COUNT];
	struct tensor out[OUT_COUNT];
	char error[1024]; /* why the case failed */
};

/* Records why the case failed and returns -1. */
static int case_fail(struct onnx_case *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int case_fail(struct onnx_case *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	return -1;
}

static void tensor_release(struct tensor *t)
{
	free(t->f);
	free(t->b);
	free(t->i);
	memset(t, 0, sizeof(*t));
}

static void case_release(struct onnx_case *c)
{
	for (size_t s = 0; s < IN_COUNT; s++)
		tensor_release(&c->in[s]);
	for (size_t s = 0; s < OUT_COUNT; s++)
		tensor_release(&c->out[s]);
}

/* A float cell: a JSON number or one of the strings for non-finite values. */
static int parse_float(const json_t *v, double *out)
{
	const char *s;

	if (json_is_number(v)) {
		*out = json_number_value(v);
		return 0;
	}
	s = json_string_value(v);
	if (s == NULL)
		return -1;
	if (strcmp(s, "Infinity") == 0)
		*out = INFINITY;
	else if (strcmp(s, "-Infinity") == 0)
		*out = -INFINITY;
	else if (strcmp(s, "NaN") == 0)
		*out = NAN;
	else
		return -1;
	return 0;
}

static int parse_shape(struct onnx_case *c, const char *name, const json_t *shape, struct tensor *t)
{
	size_t rank = json_array_size(shape);

	if (!json_is_array(shape) || rank < 1 || rank > 4)
		return case_fail(c, "%s: shape must be an array of rank 1..4", name);
	t->rank = rank;
	t->n = 1;
	for (size_t d = 0; d < rank; d++) {
		const json_t *dim = json_array_get(shape, d);
		json_int_t v = json_integer_value(dim);

		if (!json_is_integer(dim) || v < 0 || v > MAX_DIM)
			return case_fail(c, "%s: shape[%zu] is not a dimension", name, d);
		t->shape[d] = (size_t)v;
		t->n *= (size_t)v;
	}
	return 0;
}

static int parse_dtype(struct onnx_case *c, const char *name, const json_t *dtype, struct tensor *t)
{
	const char *s = json_string_value(dtype);

	for (size_t k = 0; s != NULL && k < sizeof(dtype_names) / sizeof(dtype_names[0]); k++) {
		if (strcmp(s, dtype_names[k]) == 0) {
			t->dtype = (enum dtype)k;
			return 0;
		}
	}
	return case_fail(c, "%s: unknown dtype %s", name, s ? s : "(not a string)");
}

/* Stores cell k of a float tensor; float16 cells must be exactly representable. */
static int store_float(struct onnx_case *c, const char *name, struct tensor *t, size_t k,
		       const json_t *cell)
{
	double v;

	if (parse_float(cell, &v) != 0)
		return case_fail(c, "%s: data[%zu] is not a float", name, k);
	t->f[k] = (float)v;
	if (t->dtype == DT_FLOAT16 && !isnan(v) &&
	    (double)half_to_float(half_from_float(t->f[k])) != v)
		return case_fail(c, "%s: data[%zu] = %.17g is not a float16 value", name, k, v);
	return 0;
}

static int store_cell(struct onnx_case *c, const char *name, struct tensor *t, size_t k,
		      const json_t *cell)
{
	switch (t->dtype) {
	case DT_FLOAT32:
	case DT_FLOAT16:
		return store_float(c, name, t, k, cell);
	case DT_BOOL:
		if (!json_is_boolean(cell))
			return case_fail(c, "%s: data[%zu] is not a bool", name, k);
		t->b[k] = json_is_true(cell) ? 1 : 0;
		return 0;
	case DT_INT64:
		if (!json_is_integer(cell))
			return case_fail(c, "%s: data[%zu] is not an integer", name, k);
		t->i[k] = (int64_t)json_integer_value(cell);
		return 0;
	}
	return case_fail(c, "%s: bad dtype", name);
}

/* Fills t from {"shape", "dtype", "data"}; on failure t may hold partial data. */
static int parse_tensor(struct onnx_case *c, const char *name, const json_t *obj, struct tensor *t)
{
	const json_t *data = json_object_get(obj, "data");
	size_t n_alloc;

	if (!json_is_object(obj))
		return case_fail(c, "%s: not an object", name);
	if (parse_shape(c, name, json_object_get(obj, "shape"), t) != 0 ||
	    parse_dtype(c, name, json_object_get(obj, "dtype"), t) != 0)
		return -1;
	if (!json_is_array(data) || json_array_size(data) != t->n)
		return case_fail(c, "%s: data must be an array of %zu values", name, t->n);
	t->present = 1;
	n_alloc = t->n ? t->n : 1;
	if (t->dtype == DT_BOOL)
		t->b = malloc(n_alloc * sizeof(*t->b));
	else if (t->dtype == DT_INT64)
		t->i = malloc(n_alloc * sizeof(*t->i));
	else
		t->f = malloc(n_alloc * sizeof(*t->f));
	if (t->b == NULL && t->i == NULL && t->f == NULL)
		return case_fail(c, "%s: out of memory", name);
	for (size_t k = 0; k < t->n; k++) {
		if (store_cell(c, name, t, k, json_array_get(data, k)) != 0)
			return -1;
	}
	return 0;
}

static int parse_attrs(struct onnx_case *c, json_t *attrs)
{
	const char *key;
	json_t *val;

	if (!json_is_object(attrs))
		return case_fail(c, "attributes: not an object");
	json_object_foreach(attrs, key, val)
	{
		const struct attr_spec *spec = NULL;
		char *field;

		for (size_t k = 0; k < sizeof(attr_specs) / sizeof(attr_specs[0]); k++) {
			if (strcmp(key, attr_specs[k].name) == 0)
				spec = &attr_specs[k];
		}
		if (spec == NULL)
			return case_fail(c, "attributes: unknown attribute %s", key);
		field = (char *)&c->attr + spec->offset;
		if (spec->is_float && json_is_number(val))
			*(double *)field = json_number_value(val);
		else if (!spec->is_float && json_is_integer(val))
			*(long long *)field = json_integer_value(val);
		else
			return case_fail(c, "attributes: %s has the wrong type", key);
	}
	return 0;
}

/*
 * Reads the positional slots: slot s is present when names[s] is a non-empty
 * string, and then tensors must hold it. tensors must hold nothing else.
 */
static int parse_slots(struct onnx_case *c, const char *kind, const json_t *names,
		       const json_t *tensors, struct tensor *slots, const char *const *slot_names,
		       size_t n_slots)
{
	size_t n_present = 0;

	if (!json_is_array(names) || json_array_size(names) > n_slots || !json_is_object(tensors))
		return case_fail(c, "%s: bad node slot list or tensor map", kind);
	for (size_t s = 0; s < json_array_size(names); s++) {
		const char *name = json_string_value(json_array_get(names, s));

		if (name == NULL)
			return case_fail(c, "%s[%zu]: not a string", kind, s);
		if (name[0] == '\0')
			continue;
		if (strcmp(name, slot_names[s]) != 0)
			return case_fail(c, "%s[%zu]: %s in the %s slot", kind, s, name,
					 slot_names[s]);
		if (parse_tensor(c, name, json_object_get(tensors, name), &slots[s]) != 0)
			return -1;
		n_present++;
	}
	if (json_object_size(tensors) != n_present)
		return case_fail(c, "%s: tensors present that no slot names", kind);
	return 0;
}

static int parse_case(struct onnx_case *c, json_t *root)
{
	if (!json_is_object(root))
		return case_fail(c, "top level is not an object");
	if (parse_attrs(c, json_object_get(root, "attributes")) != 0)
		return -1;
	if (parse_slots(c, "node_inputs", json_object_get(root, "node_inputs"),
			json_object_get(root, "inputs"), c->in, in_names, IN_COUNT) != 0)
		return -1;
	return parse_slots(c, "node_outputs", json_object_get(root, "node_outputs"),
			   json_object_get(root, "outputs"), c->out, out_names, OUT_COUNT);
}

/* Loads path into c (zeroed by the caller); c->name is the file's case name. */
static int load_case(struct onnx_case *c, const char *path)
{
	const char *base = strrchr(path, '/');
	const char *name;
	json_error_t jerr;
	json_t *root;
	int rc;

	snprintf(c->name, sizeof(c->name), "%.*s", (int)strcspn(base ? base + 1 : path, "."),
		 base ? base + 1 : path);
	root = json_load_file(path, 0, &jerr);
	if (root == NULL)
		return case_fail(c, "%s:%d: %s", path, jerr.line, jerr.text);
	name = json_string_value(json_object_get(root, "name"));
	rc = parse_case(c, root);
	if (rc == 0 && (name == NULL || strcmp(name, c->name) != 0))
		rc = case_fail(c, "the \"name\" field does not match the file name");
	json_decref(root);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* The case as an engine request                                             */
/* ------------------------------------------------------------------------ */

/* Dimensions in the engine's terms (README: Sq = Lq, L = Lk = P + Skv). */
struct dims {
	int rank3; /* Q/K/V/Y are [B, S, heads * dim] */
	size_t B, H, Hkv, Lq, Skv, P, Lk, D, Dv;
};

/* Everything a request points into beyond the case's own tensors. */
struct run {
	struct dims d;
	struct attn_sdpa req;
	float *present_k;   /* [B, Hkv, Lk, D], when past or present is given */
	float *present_v;   /* [B, Hkv, Lk, Dv] */
	size_t *kv_lengths; /* [B] */
	float *y;	    /* [B, H, Lq, Dv] or [B, Lq, H * Dv], the case's layout */
	float *scores;	    /* [B, H, Lq, Lk] when qk_matmul_output is declared */
	float *y_first;	    /* Y of the threads = 1 fast run */
	float *scores_first;
	size_t y_n, scores_n;
};

static void run_release(struct run *r)
{
	free(r->present_k);
	free(r->present_v);
	free(r->kv_lengths);
	free(r->y);
	free(r->scores);
	free(r->y_first);
	free(r->scores_first);
	memset(r, 0, sizeof(*r));
}

static int is_float(const struct tensor *t)
{
	return t->dtype == DT_FLOAT32 || t->dtype == DT_FLOAT16;
}

static int shape_is(const struct tensor *t, size_t rank, size_t d0, size_t d1, size_t d2, size_t d3)
{
	const size_t want[4] = {d0, d1, d2, d3};

	if (t->rank != rank)
		return 0;
	for (size_t k = 0; k < rank; k++) {
		if (t->shape[k] != want[k])
			return 0;
	}
	return 1;
}

/* Q, K, V as 4D [B, heads, S, dim]: the head counts come from the shapes. */
static int dims_4d(struct onnx_case *c, struct dims *d)
{
	const struct tensor *q = &c->in[IN_Q], *k = &c->in[IN_K], *v = &c->in[IN_V];

	d->B = q->shape[0];
	d->H = q->shape[1];
	d->Lq = q->shape[2];
	d->D = q->shape[3];
	if (k->rank != 4 || v->rank != 4)
		return case_fail(c, "K and V must be 4D like Q");
	d->Hkv = k->shape[1];
	d->Skv = k->shape[2];
	d->Dv = v->shape[3];
	if (!shape_is(k, 4, d->B, d->Hkv, d->Skv, d->D) ||
	    !shape_is(v, 4, d->B, d->Hkv, d->Skv, d->Dv))
		return case_fail(c, "K or V shape disagrees with Q");
	return 0;
}

/* Q, K, V as 3D [B, S, heads * dim], split head-major by the head attributes. */
static int dims_3d(struct onnx_case *c, struct dims *d)
{
	const struct tensor *q = &c->in[IN_Q], *k = &c->in[IN_K], *v = &c->in[IN_V];

	if (c->attr.q_num_heads <= 0 || c->attr.kv_num_heads <= 0)
		return case_fail(c, "3D inputs need q_num_heads and kv_num_heads");
	if (k->rank != 3 || v->rank != 3)
		return case_fail(c, "K and V must be 3D like Q");
	d->rank3 = 1;
	d->B = q->shape[0];
	d->Lq = q->shape[1];
	d->H = (size_t)c->attr.q_num_heads;
	d->Hkv = (size_t)c->attr.kv_num_heads;
	d->Skv = k->shape[1];
	if (q->shape[2] % d->H != 0 || v->shape[2] % d->Hkv != 0)
		return case_fail(c, "hidden sizes are not divisible by the head counts");
	d->D = q->shape[2] / d->H;
	d->Dv = v->shape[2] / d->Hkv;
	if (!shape_is(k, 3, d->B, d->Skv, d->Hkv * d->D, 0) ||
	    !shape_is(v, 3, d->B, d->Skv, d->Hkv * d->Dv, 0))
		return case_fail(c, "K or V shape disagrees with Q");
	return 0;
}

/* Reads the dimensions and checks every input against them. */
static int case_dims(struct onnx_case *c, struct dims *d)
{
	const struct tensor *pk = &c->in[IN_PAST_K], *pv = &c->in[IN_PAST_V];
	const struct tensor *nonpad = &c->in[IN_NONPAD];
	int rc;

	if (!c->in[IN_Q].present || !c->in[IN_K].present || !c->in[IN_V].present)
		return case_fail(c, "Q, K and V are required");
	if (!is_float(&c->in[IN_Q]) || !is_float(&c->in[IN_K]) || !is_float(&c->in[IN_V]))
		return case_fail(c, "Q, K and V must be float");
	if (c->in[IN_Q].rank == 4)
		rc = dims_4d(c, d);
	else if (c->in[IN_Q].rank == 3)
		rc = dims_3d(c, d);
	else
		rc = case_fail(c, "Q must be 3D or 4D");
	if (rc != 0)
		return rc;
	if (pk->present != pv->present)
		return case_fail(c, "past_key and past_value come together");
	if (pk->present) {
		d->P = pk->shape[2];
		if (!is_float(pk) || !is_float(pv) || !shape_is(pk, 4, d->B, d->Hkv, d->P, d->D) ||
		    !shape_is(pv, 4, d->B, d->Hkv, d->P, d->Dv))
			return case_fail(c, "past_key / past_value shape disagrees with K / V");
	}
	if (nonpad->present &&
	    (pk->present || nonpad->dtype != DT_INT64 || !shape_is(nonpad, 1, d->B, 0, 0, 0)))
		return case_fail(c, "nonpad_kv_seqlen must be int64 [B] and not come with a past");
	if (c->attr.qk_mode < 0 || c->attr.qk_mode > 3 || c->attr.is_causal < 0 ||
	    c->attr.is_causal > 1)
		return case_fail(c, "is_causal or qk_matmul_output_mode out of range");
	d->Lk = d->P + d->Skv;
	return 0;
}

static float *alloc_floats(size_t n)
{
	return malloc((n ? n : 1) * sizeof(float));
}

static struct attn_cview input_view(const struct dims *d, const struct tensor *t, size_t heads,
				    size_t len, size_t dim)
{
	if (d->rank3)
		return attn_cview_blhd(t->f, heads, len, dim);
	return attn_cview_bhld(t->f, heads, len, dim);
}

/*
 * K and V: the new keys directly, or present = concat(past, new) along the
 * sequence when a past cache is given or present_* is declared.
 */
static int build_kv(struct onnx_case *c, struct run *r)
{
	const struct dims *d = &r->d;
	struct attn_cview k = input_view(d, &c->in[IN_K], d->Hkv, d->Skv, d->D);
	struct attn_cview v = input_view(d, &c->in[IN_V], d->Hkv, d->Skv, d->Dv);

	if (!c->in[IN_PAST_K].present && !c->out[OUT_PRESENT_K].present &&
	    !c->out[OUT_PRESENT_V].present) {
		r->req.k = k;
		r->req.v = v;
		return 0;
	}
	r->present_k = alloc_floats(d->B * d->Hkv * d->Lk * d->D);
	r->present_v = alloc_floats(d->B * d->Hkv * d->Lk * d->Dv);
	if (r->present_k == NULL || r->present_v == NULL)
		return case_fail(c, "out of memory");
	attn_kv_concat(r->present_k, c->in[IN_PAST_K].f, k, d->B, d->Hkv, d->P, d->Skv, d->D);
	attn_kv_concat(r->present_v, c->in[IN_PAST_V].f, v, d->B, d->Hkv, d->P, d->Skv, d->Dv);
	r->req.k = attn_cview_bhld(r->present_k, d->Hkv, d->Lk, d->D);
	r->req.v = attn_cview_bhld(r->present_v, d->Hkv, d->Lk, d->Dv);
	return 0;
}

/* attn_mask, rank 2..4, right-aligned onto [B, H, Lq, Lk] (the engine checks it). */
static int build_user_mask(struct onnx_case *c, struct attn_mask *m)
{
	const struct tensor *t = &c->in[IN_MASK];

	if (!t->present)
		return 0;
	if (t->rank < 2)
		return case_fail(c, "attn_mask of rank %zu is not supported", t->rank);
	if (t->dtype == DT_BOOL) {
		m->user_kind = ATTN_USER_MASK_BOOL;
		m->user = t->b;
	} else if (is_float(t)) {
		m->user_kind = ATTN_USER_MASK_ADDITIVE;
		m->user = t->f;
	} else {
		return case_fail(c, "attn_mask must be bool or float");
	}
	m->user_rank = t->rank;
	memcpy(m->user_shape, t->shape, sizeof(m->user_shape));
	return 0;
}

/*
 * Causal alignment and key lengths. ONNX lets query i see key j <= i + offset
 * with offset = P for a past cache, nonpad[b] - Lq for an external cache, else
 * 0 (top-left). The engine says the same with top-left plus q_offset = P, and
 * bottom-right over kv_lengths (offset kv_lengths[b] - Lq).
 */
static int build_causal(struct onnx_case *c, struct run *r)
{
	const struct dims *d = &r->d;
	const struct tensor *nonpad = &c->in[IN_NONPAD];
	struct attn_mask *m = &r->req.mask;
	int past = c->in[IN_PAST_K].present;

	if (nonpad->present) {
		r->kv_lengths = malloc(d->B * sizeof(*r->kv_lengths));
		if (r->kv_lengths == NULL)
			return case_fail(c, "out of memory");
		m->kv_lengths = r->kv_lengths;
	}
	for (size_t b = 0; nonpad->present && b < d->B; b++) {
		if (nonpad->i[b] < 0 || (uint64_t)nonpad->i[b] > d->Skv)
			return case_fail(c, "nonpad_kv_seqlen[%zu] = %lld is outside [0, %zu]", b,
					 (long long)nonpad->i[b], d->Skv);
		r->kv_lengths[b] = (size_t)nonpad->i[b];
	}
	if (!c->attr.is_causal)
		return 0;
	m->causal = nonpad->present ? ATTN_CAUSAL_BOTTOM_RIGHT : ATTN_CAUSAL_TOP_LEFT;
	if (past)
		m->q_offset = (ptrdiff_t)d->P;
	return 0;
}

/* Y in the case's layout and the optional scores [B, H, Lq, Lk]. */
static int build_outputs(struct onnx_case *c, struct run *r)
{
	static const enum attn_scores_view views[4] = {
	    ATTN_SCORES_RAW,
	    ATTN_SCORES_SOFTCAP,
	    ATTN_SCORES_MASKED,
	    ATTN_SCORES_SOFTMAX,
	};
	const struct dims *d = &r->d;
	const struct tensor *y = &c->out[OUT_Y], *qk = &c->out[OUT_QK];
	int y_ok = d->rank3 ? shape_is(y, 3, d->B, d->Lq, d->H * d->Dv, 0)
			    : shape_is(y, 4, d->B, d->H, d->Lq, d->Dv);

	if (!y->present || !y_ok || !is_float(y))
		return case_fail(c, "Y must be declared, float, and shaped like Q with Dv");
	r->y_n = y->n;
	r->y = alloc_floats(r->y_n);
	r->y_first = alloc_floats(r->y_n);
	if (r->y == NULL || r->y_first == NULL)
		return case_fail(c, "out of memory");
	r->req.out = d->rank3 ? attn_view_blhd(r->y, d->H, d->Lq, d->Dv)
			      : attn_view_bhld(r->y, d->H, d->Lq, d->Dv);
	if (!qk->present)
		return 0;
	if (!is_float(qk) || !shape_is(qk, 4, d->B, d->H, d->Lq, d->Lk))
		return case_fail(c, "qk_matmul_output must be float [B, H, Lq, Lk]");
	r->scores_n = qk->n;
	r->scores = alloc_floats(r->scores_n);
	r->scores_first = alloc_floats(r->scores_n);
	if (r->scores == NULL || r->scores_first == NULL)
		return case_fail(c, "out of memory");
	r->req.scores_view = views[c->attr.qk_mode];
	r->req.scores = r->scores;
	return 0;
}

/* Maps the case onto r->req; softmax_precision is ignored (float32 throughout). */
static int build_request(struct onnx_case *c, struct run *r)
{
	const struct dims *d = &r->d;

	if (case_dims(c, &r->d) != 0)
		return -1;
	r->req.B = d->B;
	r->req.H = d->H;
	r->req.Hkv = d->Hkv;
	r->req.Lq = d->Lq;
	r->req.Lk = d->Lk;
	r->req.D = d->D;
	r->req.Dv = d->Dv;
	r->req.scale = (float)c->attr.scale;
	r->req.softcap = (float)c->attr.softcap;
	r->req.q = input_view(d, &c->in[IN_Q], d->H, d->Lq, d->D);
	if (build_kv(c, r) != 0 || build_user_mask(c, &r->req.mask) != 0 || build_causal(c, r) != 0)
		return -1;
	return build_outputs(c, r);
}

/* ------------------------------------------------------------------------ */
/* Running and comparing                                                     */
/* ------------------------------------------------------------------------ */

/* Does got match want under the output's rule (see the top of the file)? */
static int cell_matches(float got, float want, enum dtype dtype, int exact)
{
	if (isnan(want))
		return isnan(got);
	if (exact || isinf(want))
		return got == want;
	if (!isfinite(got))
		return 0;
	if (dtype == DT_FLOAT16)
		return half_ulps(half_from_float(got), half_from_float(want)) <= F16_MAX_ULPS;
	return fabs((double)got - (double)want) <= F32_TOL;
}

/* Compares got [n] with the declared output slot; names the first bad cell. */
static int compare_output(struct onnx_case *c, const char *label, enum out_slot slot,
			  const float *got, int exact)
{
	const struct tensor *want = &c->out[slot];
	size_t bad = 0, first = 0;
	char halves[48] = "";
	const char *rule;

	for (size_t k = 0; k < want->n; k++) {
		if (cell_matches(got[k], want->f[k], want->dtype, exact))
			continue;
		if (bad++ == 0)
			first = k;
	}
	if (bad == 0)
		return 0;
	if (exact)
		rule = "exact";
	else if (want->dtype == DT_FLOAT16)
		rule = "1 float16 ulp";
	else
		rule = "1e-5 absolute";
	if (want->dtype == DT_FLOAT16)
		snprintf(halves, sizeof(halves), ", float16 %#06x vs %#06x",
			 (unsigned)half_from_float(got[first]),
			 (unsigned)half_from_float(want->f[first]));
	return case_fail(
	    c, "%s: %s[%zu]: got %.9g expected %.9g (diff %.3g%s; %zu of %zu cells off; %s)", label,
	    out_names[slot], first, (double)got[first], (double)want->f[first],
	    (double)got[first] - (double)want->f[first], halves, bad, want->n, rule);
}

static void fill_nan(float *x, size_t n)
{
	for (size_t k = 0; k < n; k++)
		x[k] = NAN;
}

/* One forward call; the outputs start as NaN so an unwritten cell shows. */
static int run_forward(struct onnx_case *c, struct run *r, const char *label, int ref,
		       size_t threads)
{
	struct attn_error err;
	enum attn_status st;
	size_t bytes = 0;
	void *ws = NULL;

	memset(&err, 0, sizeof(err));
	fill_nan(r->y, r->y_n);
	if (r->scores != NULL)
		fill_nan(r->scores, r->scores_n);
	r->req.threads = threads;
	if (ref) {
		st = attn_sdpa_forward_ref(&r->req, &err);
	} else {
		st = attn_sdpa_workspace(&r->req, &bytes, &err);
		if (st == ATTN_OK) {
			ws = malloc(bytes ? bytes : 1);
			if (ws == NULL)
				return case_fail(c, "%s: cannot allocate a %zu-byte workspace",
						 label, bytes);
			st = attn_sdpa_forward(&r->req, ws, bytes, &err);
			free(ws);
		}
	}
	if (st != ATTN_OK)
		return case_fail(c, "%s: %s (field %s): %s", label, attn_status_str(st),
				 err.field ? err.field : "-", err.message);
	return 0;
}

static int compare_run(struct onnx_case *c, struct run *r, const char *label)
{
	if (compare_output(c, label, OUT_Y, r->y, 0) != 0)
		return -1;
	if (r->scores != NULL)
		return compare_output(c, label, OUT_QK, r->scores, 0);
	return 0;
}

/* Bit-identity of a threaded run with the single-threaded one. */
static int compare_bits(struct onnx_case *c, const char *label, const char *what, const float *got,
			const float *first, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (memcmp(&got[k], &first[k], sizeof(float)) != 0)
			return case_fail(c, "%s: %s[%zu] = %.9g differs from threads = 1 (%.9g)",
					 label, what, k, (double)got[k], (double)first[k]);
	}
	return 0;
}

/* present_key / present_value (when declared) against the concatenation. */
static int compare_present(struct onnx_case *c, const struct run *r)
{
	const struct dims *d = &r->d;
	const struct tensor *pk = &c->out[OUT_PRESENT_K], *pv = &c->out[OUT_PRESENT_V];

	if (pk->present && (!is_float(pk) || !shape_is(pk, 4, d->B, d->Hkv, d->Lk, d->D)))
		return case_fail(c, "present_key must be float [B, Hkv, Lk, D]");
	if (pv->present && (!is_float(pv) || !shape_is(pv, 4, d->B, d->Hkv, d->Lk, d->Dv)))
		return case_fail(c, "present_value must be float [B, Hkv, Lk, Dv]");
	if (pk->present && compare_output(c, "attn_kv_concat", OUT_PRESENT_K, r->present_k, 1))
		return -1;
	if (pv->present && compare_output(c, "attn_kv_concat", OUT_PRESENT_V, r->present_v, 1))
		return -1;
	return 0;
}

/* The three runs: fast (threads 1), reference, fast (threads 2, bit-identical). */
static int run_variants(struct onnx_case *c, struct run *r)
{
	if (run_forward(c, r, "fast", 0, 1) != 0 || compare_run(c, r, "fast") != 0)
		return -1;
	memcpy(r->y_first, r->y, r->y_n * sizeof(float));
	if (r->scores != NULL)
		memcpy(r->scores_first, r->scores, r->scores_n * sizeof(float));
	if (run_forward(c, r, "ref", 1, 1) != 0 || compare_run(c, r, "ref") != 0)
		return -1;
	if (run_forward(c, r, "fast threads=2", 0, 2) != 0)
		return -1;
	if (compare_bits(c, "fast threads=2", "Y", r->y, r->y_first, r->y_n) != 0)
		return -1;
	if (r->scores != NULL)
		return compare_bits(c, "fast threads=2", "qk_matmul_output", r->scores,
				    r->scores_first, r->scores_n);
	return 0;
}

/* Loads, maps, runs and checks one file; c->error says why on failure. */
static int run_case(struct onnx_case *c, const char *path)
{
	struct run r;
	int rc = -1;

	memset(&r, 0, sizeof(r));
	if (load_case(c, path) != 0)
		goto out;
	if (build_request(c, &r) != 0)
		goto out;
	if (compare_present(c, &r) != 0)
		goto out;
	rc = run_variants(c, &r);
out:
	run_release(&r);
	case_release(c);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* The case list, the tests and main                                         */
/* ------------------------------------------------------------------------ */

static const char *case_dir;
static char **case_paths; /* sorted full paths, owned by main */
static size_t case_count;
static char case_list_error[256];

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int compare_paths(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_case_list(void)
{
	for (size_t k = 0; k < case_count; k++)
		free(case_paths[k]);
	free(case_paths);
	case_paths = NULL;
	case_count = 0;
}

/* Adds dir/name to the list; -1 when out of memory. */
static int add_case_path(const char *dir, const char *name, size_t *cap)
{
	size_t len = strlen(dir) + 1 + strlen(name) + 1;
	char *path;

	if (case_count == *cap) {
		size_t new_cap = *cap ? 2 * *cap : 128;
		char **grown = realloc(case_paths, new_cap * sizeof(*grown));

		if (grown == NULL)
			return -1;
		case_paths = grown;
		*cap = new_cap;
	}
	path = malloc(len);
	if (path == NULL)
		return -1;
	snprintf(path, len, "%s/%s", dir, name);
	case_paths[case_count++] = path;
	return 0;
}

/* Lists dir's test_attention_*.json sorted; on failure the list is empty. */
static void list_cases(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *ent;
	size_t cap = 0;

	if (dp == NULL) {
		snprintf(case_list_error, sizeof(case_list_error), ": cannot open %s: %s", dir,
			 strerror(errno));
		return;
	}
	for (ent = readdir(dp); ent != NULL; ent = readdir(dp)) {
		if (strncmp(ent->d_name, ONNX_PREFIX, strlen(ONNX_PREFIX)) != 0 ||
		    !has_suffix(ent->d_name, ONNX_SUFFIX))
			continue;
		if (add_case_path(dir, ent->d_name, &cap) != 0) {
			snprintf(case_list_error, sizeof(case_list_error), ": out of memory");
			free_case_list();
			break;
		}
	}
	closedir(dp);
	if (case_count > 0)
		qsort(case_paths, case_count, sizeof(*case_paths), compare_paths);
}

START_TEST(test_case_count)
{
	ck_assert_msg(case_count == ONNX_CASE_COUNT,
		      "found %zu " ONNX_PREFIX "*" ONNX_SUFFIX " files in %s, expected %d%s "
		      "(set ATTN_ONNX_DIR or put shared/ beside the repo)",
		      case_count, case_dir, ONNX_CASE_COUNT, case_list_error);
}
END_TEST

START_TEST(test_onnx_case)
{
	struct onnx_case c;
	int rc;

	memset(&c, 0, sizeof(c));
	rc = run_case(&c, case_paths[_i]);
	ck_assert_msg(rc == 0, "%s: %s", c.name, c.error);
}
END_TEST

/*
 * The float16 rounding the comparisons rely on: every finite half round-trips,
 * the midpoint between neighbours goes to the even one, and the floats just
 * either side of it go to the nearer one. This covers subnormals, the carry
 * into the exponent and the overflow to infinity at 65520.
 */
START_TEST(test_half_rounding)
{
	for (uint32_t h = 0; h < 0x7c00u; h++) {
		float f = half_to_float((uint16_t)h);
		/* above 65504 the next step would be 65536, which float16 calls inf */
		float next = h + 1 < 0x7c00u ? half_to_float((uint16_t)(h + 1)) : 65536.0f;
		float mid = (float)(((double)f + (double)next) / 2);
		uint32_t even = (h & 1u) ? h + 1 : h;

		ck_assert_uint_eq(half_from_float(f), h);
		ck_assert_uint_eq(half_from_float(-f), h | 0x8000u);
		ck_assert_uint_eq(half_from_float(mid), even);
		ck_assert_uint_eq(half_from_float(-mid), even | 0x8000u);
		ck_assert_uint_eq(half_from_float(nextafterf(mid, 0.0f)), h);
		ck_assert_uint_eq(half_from_float(nextafterf(mid, INFINITY)), h + 1);
	}
	ck_assert_uint_eq(half_from_float(INFINITY), 0x7c00u);
	ck_assert_uint_eq(half_from_float(-INFINITY), 0xfc00u);
	ck_assert_uint_eq(half_from_float(1e-30f), 0);
	ck_assert_uint_eq(half_from_float(NAN) & 0x7c00u, 0x7c00u);
	ck_assert_uint_ne(half_from_float(NAN) & 0x3ffu, 0);
	ck_assert_int_eq(half_ulps(0x0000u, 0x8000u), 0);
	ck_assert_int_eq(half_ulps(0x0001u, 0x8001u), 2);
	ck_assert_int_eq(half_ulps(0x3c00u, 0x3c01u), 1);
}
END_TEST

static Suite *onnx_suite(void)
{
	Suite *s = suite_create("onnx");
	TCase *files = tcase_create("files");
	TCase *cases = tcase_create("cases");

	tcase_add_test(files, test_case_count);
	tcase_add_test(files, test_half_rounding);
	suite_add_tcase(s, files);
	tcase_set_timeout(cases, 60); /* generous for sanitizer and valgrind runs */
	tcase_add_loop_test(cases, test_onnx_case, 0, (int)case_count);
	suite_add_tcase(s, cases);
	return s;
}

/* How many results the "cases" TCase produced: each file must have run. */
static size_t count_case_results(SRunner *sr)
{
	TestResult **results = srunner_results(sr);
	size_t n = (size_t)srunner_ntests_run(sr), ran = 0;

	for (size_t k = 0; results != NULL && k < n; k++) {
		if (strcmp(tr_tcname(results[k]), "cases") == 0)
			ran++;
	}
	free(results);
	return ran;
}

int main(void)
{
	SRunner *sr;
	size_t ran;
	int failed;

	/* Threads come from attn_sdpa.threads; BLAS itself stays single-threaded. */
	openblas_set_num_threads(1);
	case_dir = getenv("ATTN_ONNX_DIR");
	if (case_dir == NULL || case_dir[0] == '\0')
		case_dir = ONNX_DEFAULT_DIR;
	list_cases(case_dir);

	sr = srunner_create(onnx_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	ran = count_case_results(sr);
	srunner_free(sr);
	if (ran != ONNX_CASE_COUNT) {
		fprintf(stderr, "check_onnx: %zu of %d conformance cases ran\n", ran,
			ONNX_CASE_COUNT);
		failed++;
	}
	free_case_list();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
