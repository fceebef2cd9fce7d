/*
 * onnx_case.c: reading an ONNX Attention conformance case and comparing an
 * output with the expected one (see onnx_case.h).
 */
#include "onnx_case.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"

#define F32_TOL 1e-5
#define F16_MAX_ULPS 1
#define MAX_DIM 100000 /* sanity bound on one JSON shape entry */

static const char *const dtype_names[] = {
    [ONNX_FLOAT32] = "float32",
    [ONNX_FLOAT16] = "float16",
    [ONNX_BOOL] = "bool",
    [ONNX_INT64] = "int64",
};

static const char *const in_names[ONNX_IN_COUNT] = {
    "Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen",
};
static const char *const out_names[ONNX_OUT_COUNT] = {
    "Y",
    "present_key",
    "present_value",
    "qk_matmul_output",
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

int onnx_case_fail(struct onnx_case *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->error, sizeof(c->error), fmt, ap);
	va_end(ap);
	return -1;
}

static void tensor_release(struct onnx_tensor *t)
{
	free(t->f);
	free(t->b);
	free(t->i);
	memset(t, 0, sizeof(*t));
}

void onnx_case_release(struct onnx_case *c)
{
	for (size_t s = 0; s < ONNX_IN_COUNT; s++)
		tensor_release(&c->in[s]);
	for (size_t s = 0; s < ONNX_OUT_COUNT; s++)
		tensor_release(&c->out[s]);
}

static int parse_shape(struct onnx_case *c, const char *name, const json_t *shape,
		       struct onnx_tensor *t)
{
	size_t rank = json_array_size(shape);

	if (!json_is_array(shape) || rank < 1 || rank > 4)
		return onnx_case_fail(c, "%s: shape must be an array of rank 1..4", name);
	t->rank = rank;
	t->n = 1;
	for (size_t d = 0; d < rank; d++) {
		const json_t *dim = json_array_get(shape, d);
		json_int_t v = json_integer_value(dim);

		if (!json_is_integer(dim) || v < 0 || v > MAX_DIM)
			return onnx_case_fail(c, "%s: shape[%zu] is not a dimension", name, d);
		t->shape[d] = (size_t)v;
		t->n *= (size_t)v;
	}
	return 0;
}

static int parse_dtype(struct onnx_case *c, const char *name, const json_t *dtype,
		       struct onnx_tensor *t)
{
	const char *s = json_string_value(dtype);

	for (size_t k = 0; s != NULL && k < sizeof(dtype_names) / sizeof(dtype_names[0]); k++) {
		if (strcmp(s, dtype_names[k]) == 0) {
			t->dtype = (enum onnx_dtype)k;
			return 0;
		}
	}
	return onnx_case_fail(c, "%s: unknown dtype %s", name, s ? s : "(not a string)");
}

/* Stores cell k of a float tensor; float16 cells must be exactly representable. */
static int store_float(struct onnx_case *c, const char *name, struct onnx_tensor *t, size_t k,
		       const json_t *cell)
{
	double v;

	if (case_number(cell, &v) != 0)
		return onnx_case_fail(c, "%s: data[%zu] is not a float", name, k);
	t->f[k] = (float)v;
	if (t->dtype == ONNX_FLOAT16 && !isnan(v) &&
	    (double)half_to_float(half_from_float(t->f[k])) != v)
		return onnx_case_fail(c, "%s: data[%zu] = %.17g is not a float16 value", name, k,
				      v);
	return 0;
}

static int store_cell(struct onnx_case *c, const char *name, struct onnx_tensor *t, size_t k,
		      const json_t *cell)
{
	switch (t->dtype) {
	case ONNX_FLOAT32:
	case ONNX_FLOAT16:
		return store_float(c, name, t, k, cell);
	case ONNX_BOOL:
		if (!json_is_boolean(cell))
			return onnx_case_fail(c, "%s: data[%zu] is not a bool", name, k);
		t->b[k] = json_is_true(cell) ? 1 : 0;
		return 0;
	case ONNX_INT64:
		if (!json_is_integer(cell))
			return onnx_case_fail(c, "%s: data[%zu] is not an integer", name, k);
		t->i[k] = (int64_t)json_integer_value(cell);
		return 0;
	}
	return onnx_case_fail(c, "%s: bad dtype", name);
}

/* Fills t from {"shape", "dtype", "data"}; on failure t may hold partial data. */
static int parse_tensor(struct onnx_case *c, const char *name, const json_t *obj,
			struct onnx_tensor *t)
{
	const json_t *data = json_object_get(obj, "data");
	size_t n_alloc;

	if (!json_is_object(obj))
		return onnx_case_fail(c, "%s: not an object", name);
	if (parse_shape(c, name, json_object_get(obj, "shape"), t) != 0 ||
	    parse_dtype(c, name, json_object_get(obj, "dtype"), t) != 0)
		return -1;
	if (!json_is_array(data) || json_array_size(data) != t->n)
		return onnx_case_fail(c, "%s: data must be an array of %zu values", name, t->n);
	t->present = 1;
	n_alloc = t->n ? t->n : 1;
	if (t->dtype == ONNX_BOOL)
		t->b = malloc(n_alloc * sizeof(*t->b));
	else if (t->dtype == ONNX_INT64)
		t->i = malloc(n_alloc * sizeof(*t->i));
	else
		t->f = malloc(n_alloc * sizeof(*t->f));
	if (t->b == NULL && t->i == NULL && t->f == NULL)
		return onnx_case_fail(c, "%s: out of memory", name);
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
		return onnx_case_fail(c, "attributes: not an object");
	json_object_foreach(attrs, key, val)
	{
		const struct attr_spec *spec = NULL;
		char *field;

		for (size_t k = 0; k < sizeof(attr_specs) / sizeof(attr_specs[0]); k++) {
			if (strcmp(key, attr_specs[k].name) == 0)
				spec = &attr_specs[k];
		}
		if (spec == NULL)
			return onnx_case_fail(c, "attributes: unknown attribute %s", key);
		field = (char *)&c->attr + spec->offset;
		if (spec->is_float && json_is_number(val))
			*(double *)field = json_number_value(val);
		else if (!spec->is_float && json_is_integer(val))
			*(long long *)field = json_integer_value(val);
		else
			return onnx_case_fail(c, "attributes: %s has the wrong type", key);
	}
	return 0;
}

/*
 * Reads the positional slots: slot s is present when names[s] is a non-empty
 * string, and then tensors must hold it. tensors must hold nothing else.
 */
static int parse_slots(struct onnx_case *c, const char *kind, const json_t *names,
		       const json_t *tensors, struct onnx_tensor *slots,
		       const char *const *slot_names, size_t n_slots)
{
	size_t n_present = 0;

	if (!json_is_array(names) || json_array_size(names) > n_slots || !json_is_object(tensors))
		return onnx_case_fail(c, "%s: bad node slot list or tensor map", kind);
	for (size_t s = 0; s < json_array_size(names); s++) {
		const char *name = json_string_value(json_array_get(names, s));

		if (name == NULL)
			return onnx_case_fail(c, "%s[%zu]: not a string", kind, s);
		if (name[0] == '\0')
			continue;
		if (strcmp(name, slot_names[s]) != 0)
			return onnx_case_fail(c, "%s[%zu]: %s in the %s slot", kind, s, name,
					      slot_names[s]);
		if (parse_tensor(c, name, json_object_get(tensors, name), &slots[s]) != 0)
			return -1;
		n_present++;
	}
	if (json_object_size(tensors) != n_present)
		return onnx_case_fail(c, "%s: tensors present that no slot names", kind);
	return 0;
}

static int parse_case(struct onnx_case *c, json_t *root)
{
	if (!json_is_object(root))
		return onnx_case_fail(c, "top level is not an object");
	if (parse_attrs(c, json_object_get(root, "attributes")) != 0)
		return -1;
	if (parse_slots(c, "node_inputs", json_object_get(root, "node_inputs"),
			json_object_get(root, "inputs"), c->in, in_names, ONNX_IN_COUNT) != 0)
		return -1;
	return parse_slots(c, "node_outputs", json_object_get(root, "node_outputs"),
			   json_object_get(root, "outputs"), c->out, out_names, ONNX_OUT_COUNT);
}

void onnx_case_list(struct case_list *l)
{
	case_list_scan(l, case_env(ONNX_CASE_DIR_ENV, ONNX_CASE_DEFAULT_DIR), ONNX_CASE_PREFIX,
		       ONNX_CASE_SUFFIX);
}

int onnx_case_load(struct onnx_case *c, const char *dir, const char *name)
{
	char path[1400];
	const char *declared;
	json_error_t jerr;
	json_t *root;
	int rc;

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(path, sizeof(path), "%s/%s" ONNX_CASE_SUFFIX, dir, name);
	root = json_load_file(path, 0, &jerr);
	if (root == NULL)
		return onnx_case_fail(c, "%s:%d: %s", path, jerr.line, jerr.text);
	declared = json_string_value(json_object_get(root, "name"));
	rc = parse_case(c, root);
	if (rc == 0 && (declared == NULL || strcmp(declared, c->name) != 0))
		rc = onnx_case_fail(c, "the \"name\" field does not match the file name");
	json_decref(root);
	return rc;
}

int onnx_tensor_is_float(const struct onnx_tensor *t)
{
	return t->dtype == ONNX_FLOAT32 || t->dtype == ONNX_FLOAT16;
}

int onnx_tensor_shape_is(const struct onnx_tensor *t, size_t rank, size_t d0, size_t d1, size_t d2,
			 size_t d3)
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

/* Does got match want under the output's rule (see onnx_case.h)? */
static int cell_matches(float got, float want, enum onnx_dtype dtype, int exact)
{
	if (isnan(want))
		return isnan(got);
	if (exact || isinf(want))
		return got == want;
	if (!isfinite(got))
		return 0;
	if (dtype == ONNX_FLOAT16)
		return half_ulps(half_from_float(got), half_from_float(want)) <= F16_MAX_ULPS;
	return fabs((double)got - (double)want) <= F32_TOL;
}

int onnx_case_compare(struct onnx_case *c, const char *label, enum onnx_out slot, const float *got,
		      int exact)
{
	const struct onnx_tensor *want = &c->out[slot];
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
	else if (want->dtype == ONNX_FLOAT16)
		rule = "1 float16 ulp";
	else
		rule = "1e-5 absolute";
	if (want->dtype == ONNX_FLOAT16)
		snprintf(halves, sizeof(halves), ", float16 %#06x vs %#06x",
			 (unsigned)half_from_float(got[first]),
			 (unsigned)half_from_float(want->f[first]));
	return onnx_case_fail(
	    c, "%s: %s[%zu]: got %.9g expected %.9g (diff %.3g%s; %zu of %zu cells off; %s)", label,
	    out_names[slot], first, (double)got[first], (double)want->f[first],
	    (double)got[first] - (double)want->f[first], halves, bad, want->n, rule);
}
