/*
 * check_fixtures.c: the engine against golden fixtures (tests/fixtures/README.md).
 *
 * Every .json file in $ATTN_FIXTURES/mha (default tests/fixtures/mha) is one case: a
 * model, a struct attn_mha request and the expected out / weights / scores,
 * computed by PyTorch 1.13 or by a float64 numpy reference. Each case runs
 *   attn_mha_forward      (BLAS, threads = 0, then threads = 2: identical bits)
 *   attn_mha_forward_ref  (the naive twin)
 * and both must match the expected tensors within |a - b| <= 1e-5 + 1e-4 |b|
 * (-inf cells exactly). Failures name the fixture, the tensor and the cell.
 *
 * Ownership: a struct fixture owns every array it decodes; fixture_release
 * frees them all (and accepts a partly filled fixture). Failures are collected
 * in a struct verdict and asserted only after everything is freed, so the suite
 * stays leak-free under valgrind with CK_FORK=no.
 */
#include <check.h>
#include <cblas.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mha.h"
#include "model.h"

#define TOL_ABS 1e-5
#define TOL_REL 1e-4
#define SEED_DEMO_TOL 1e-5
#define MIN_FIXTURES 30
#define SEED_DEMO_NAME "seed_demo_000"

/* The fixture folder's *.json files, sorted; filled by main before the run. */
static struct {
	char dir[1024];
	char **names; /* file names without ".json" */
	size_t n;
} g_fixtures;

/* The first failure of one case, asserted after cleanup. */
struct verdict {
	int failed;
	char msg[768];
};

static void note_fail(struct verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note_fail(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->failed)
		return; /* keep the first, it is usually the cause */
	v->failed = 1;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
	va_end(ap);
}

/* One decoded fixture. Array sizes are checked against the dims on load. */
struct fixture {
	const char *name;
	char source[16];
	struct attn_model_config cfg;
	float *w_qkv, *b_qkv, *w_o, *b_o;

	size_t B, Lq, Lk;
	float *query, *key, *value; /* [B, Lq, E], [B, Lk, E] or NULL */
	struct attn_mask mask;
	size_t *kv_lengths;
	void *user; /* uint8_t or float */
	struct attn_positional pos;
	double *q_positions, *k_positions;
	float scale, softcap;
	enum attn_weights_mode weights_mode;
	enum attn_scores_view scores_view;

	float *out, *weights, *scores; /* expected */
	size_t n_out, n_weights, n_scores;
	size_t *argmax; /* seed-demo: [H, Lq] */
	size_t n_argmax;
};

static void fixture_release(struct fixture *fx)
{
	free(fx->w_qkv);
	free(fx->b_qkv);
	free(fx->w_o);
	free(fx->b_o);
	free(fx->query);
	free(fx->key);
	free(fx->value);
	free(fx->kv_lengths);
	free(fx->user);
	free(fx->q_positions);
	free(fx->k_positions);
	free(fx->out);
	free(fx->weights);
	free(fx->scores);
	free(fx->argmax);
	memset(fx, 0, sizeof(*fx));
}

/* ---- JSON decoding: each helper returns 0, or -1 after note_fail() ---- */

/* A number, or one of the strings "Infinity", "-Infinity", "NaN". */
static int json_to_double(const json_t *j, double *out)
{
	const char *s;

	if (json_is_number(j)) {
		*out = json_number_value(j);
		return 0;
	}
	s = json_string_value(j);
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

static int get_size(struct verdict *v, const char *name, const json_t *obj, const char *key,
		    size_t *out)
{
	const json_t *j = json_object_get(obj, key);

	if (!json_is_integer(j) || json_integer_value(j) < 0) {
		note_fail(v, "%s: fixture field \"%s\" is not a non-negative integer", name, key);
		return -1;
	}
	*out = (size_t)json_integer_value(j);
	return 0;
}

static int get_double(struct verdict *v, const char *name, const json_t *obj, const char *key,
		      double *out)
{
	if (json_to_double(json_object_get(obj, key), out) != 0) {
		note_fail(v, "%s: fixture field \"%s\" is not a number", name, key);
		return -1;
	}
	return 0;
}

/*
 * *out = a new array of the want numbers of obj[key] (as float when is_float,
 * else as double). A missing or null key leaves *out NULL when optional.
 */
static int get_reals(struct verdict *v, const char *name, const json_t *obj, const char *key,
		     size_t want, int optional, int is_float, void **out)
{
	const json_t *arr = json_object_get(obj, key);
	size_t i;
	double x;

	*out = NULL;
	if ((arr == NULL || json_is_null(arr)) && optional)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) != want) {
		note_fail(v, "%s: fixture field \"%s\" is not an array of %zu numbers", name, key,
			  want);
		return -1;
	}
	*out = malloc((want ? want : 1) * (is_float ? sizeof(float) : sizeof(double)));
	if (*out == NULL) {
		note_fail(v, "%s: out of memory", name);
		return -1;
	}
	for (i = 0; i < want; i++) {
		if (json_to_double(json_array_get(arr, i), &x) != 0) {
			note_fail(v, "%s: fixture field \"%s\"[%zu] is not a number", name, key, i);
			return -1;
		}
		if (is_float)
			((float *)*out)[i] = (float)x; /* exact: the files hold float32 values */
		else
			((double *)*out)[i] = x;
	}
	return 0;
}

static int get_floats(struct verdict *v, const char *name, const json_t *obj, const char *key,
		      size_t want, int optional, float **out)
{
	void *p;
	int rc = get_reals(v, name, obj, key, want, optional, 1, &p);

	*out = p;
	return rc;
}

static int get_doubles(struct verdict *v, const char *name, const json_t *obj, const char *key,
		       size_t want, double **out)
{
	void *p;
	int rc = get_reals(v, name, obj, key, want, 1, 0, &p);

	*out = p;
	return rc;
}

/* *out = a new array of want non-negative integers obj[key], or NULL when absent. */
static int get_sizes(struct verdict *v, const char *name, const json_t *obj, const char *key,
		     size_t want, size_t **out)
{
	const json_t *arr = json_object_get(obj, key);
	size_t i;

	*out = NULL;
	if (arr == NULL)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) != want)
		goto bad;
	*out = calloc(want ? want : 1, sizeof(size_t));
	if (*out == NULL)
		goto bad;
	for (i = 0; i < want; i++) {
		const json_t *j = json_array_get(arr, i);

		if (!json_is_integer(j) || json_integer_value(j) < 0)
			goto bad;
		(*out)[i] = (size_t)json_integer_value(j);
	}
	return 0;
bad:
	note_fail(v, "%s: fixture field \"%s\" is not an array of %zu sizes", name, key, want);
	return -1;
}

/* Index of obj[key] in the NULL-terminated table of names, which is its enum value. */
static int get_enum(struct verdict *v, const char *name, const json_t *obj, const char *key,
		    const char *const *table, int *out)
{
	const char *s = json_string_value(json_object_get(obj, key));
	int i;

	for (i = 0; s != NULL && table[i] != NULL; i++) {
		if (strcmp(s, table[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	note_fail(v, "%s: fixture field \"%s\" is not a known name", name, key);
	return -1;
}

static const char *const causal_names[] = {"none", "top_left", "bottom_right", NULL};
static const char *const pos_names[] = {"none", "sinusoidal", "rope", "alibi", NULL};
static const char *const style_names[] = {"interleaved", "half", NULL};
static const char *const weights_names[] = {"none", "per_head", "mean", NULL};
static const char *const scores_names[] = {"none", "raw", "softcap", "masked", "softmax", NULL};

/* The caller mask of mask_j["user"], if any: kind, shape and data. */
static int decode_user_mask(struct verdict *v, struct fixture *fx, const json_t *mask_j)
{
	const json_t *user = json_object_get(mask_j, "user");
	const json_t *shape;
	const char *kind;
	size_t r, n = 1;

	if (user == NULL)
		return 0;
	kind = json_string_value(json_object_get(user, "kind"));
	shape = json_object_get(user, "shape");
	fx->mask.user_rank = json_array_size(shape);
	if (kind == NULL || fx->mask.user_rank < 2 || fx->mask.user_rank > 4) {
		note_fail(v, "%s: fixture user mask needs a kind and a shape of rank 2..4",
			  fx->name);
		return -1;
	}
	for (r = 0; r < fx->mask.user_rank; r++) {
		fx->mask.user_shape[r] = (size_t)json_integer_value(json_array_get(shape, r));
		n *= fx->mask.user_shape[r];
	}
	if (strcmp(kind, "additive") == 0) {
		float *data;

		fx->mask.user_kind = ATTN_USER_MASK_ADDITIVE;
		if (get_floats(v, fx->name, user, "data", n, 0, &data) != 0)
			return -1;
		fx->user = data;
	} else {
		size_t *bits;
		uint8_t *data;

		fx->mask.user_kind = ATTN_USER_MASK_BOOL;
		if (get_sizes(v, fx->name, user, "data", n, &bits) != 0 || bits == NULL) {
			free(bits);
			note_fail(v, "%s: fixture bool mask data missing", fx->name);
			return -1;
		}
		data = malloc(n);
		for (r = 0; data != NULL && r < n; r++)
			data[r] = bits[r] != 0;
		free(bits);
		fx->user = data;
	}
	fx->mask.user = fx->user;
	return 0;
}

static int decode_mask(struct verdict *v, struct fixture *fx, const json_t *req)
{
	const json_t *mask_j = json_object_get(req, "mask");
	int causal;

	if (get_enum(v, fx->name, mask_j, "causal", causal_names, &causal) != 0 ||
	    get_size(v, fx->name, mask_j, "window", &fx->mask.window) != 0 ||
	    get_sizes(v, fx->name, mask_j, "kv_lengths", fx->B, &fx->kv_lengths) != 0)
		return -1;
	fx->mask.causal = (enum attn_causal)causal;
	fx->mask.kv_lengths = fx->kv_lengths;
	return decode_user_mask(v, fx, mask_j);
}

static int decode_positional(struct verdict *v, struct fixture *fx, const json_t *req)
{
	const json_t *pos = json_object_get(req, "positional");
	int kind, style = 0;

	if (get_enum(v, fx->name, pos, "kind", pos_names, &kind) != 0)
		return -1;
	fx->pos.kind = (enum attn_pos_kind)kind;
	if (fx->pos.kind == ATTN_POS_NONE)
		return 0;
	if (get_double(v, fx->name, pos, "theta", &fx->pos.theta) != 0 ||
	    get_enum(v, fx->name, pos, "style", style_names, &style) != 0 ||
	    get_size(v, fx->name, pos, "rotary_dim", &fx->pos.rotary_dim) != 0 ||
	    get_double(v, fx->name, pos, "scaling", &fx->pos.scaling) != 0 ||
	    get_size(v, fx->name, pos, "offset", &fx->pos.offset) != 0 ||
	    get_doubles(v, fx->name, pos, "q_positions", fx->Lq, &fx->q_positions) != 0 ||
	    get_doubles(v, fx->name, pos, "k_positions", fx->Lk, &fx->k_positions) != 0)
		return -1;
	fx->pos.style = (enum attn_rope_style)style;
	fx->pos.q_positions = fx->q_positions;
	fx->pos.k_positions = fx->k_positions;
	return 0;
}

static int decode_model(struct verdict *v, struct fixture *fx, const json_t *root)
{
	const json_t *cfg = json_object_get(root, "config");
	const json_t *w = json_object_get(root, "weights");
	const char *source = json_string_value(json_object_get(root, "source"));
	size_t D, rows;

	if (get_size(v, fx->name, cfg, "E", &fx->cfg.E) != 0 ||
	    get_size(v, fx->name, cfg, "H", &fx->cfg.H) != 0 ||
	    get_size(v, fx->name, cfg, "Hkv", &fx->cfg.Hkv) != 0)
		return -1;
	if (source == NULL || fx->cfg.H == 0 || fx->cfg.Hkv == 0) {
		note_fail(v, "%s: fixture lacks a source or has zero heads", fx->name);
		return -1;
	}
	snprintf(fx->source, sizeof(fx->source), "%s", source);
	fx->cfg.bias = json_is_true(json_object_get(cfg, "bias"));
	D = fx->cfg.E / fx->cfg.H;
	rows = (fx->cfg.H + 2 * fx->cfg.Hkv) * D;
	if (get_floats(v, fx->name, w, "w_qkv", rows * fx->cfg.E, 0, &fx->w_qkv) != 0 ||
	    get_floats(v, fx->name, w, "b_qkv", rows, !fx->cfg.bias, &fx->b_qkv) != 0 ||
	    get_floats(v, fx->name, w, "w_o", fx->cfg.E * fx->cfg.H * D, 0, &fx->w_o) != 0 ||
	    get_floats(v, fx->name, w, "b_o", fx->cfg.E, !fx->cfg.bias, &fx->b_o) != 0)
		return -1;
	return 0;
}

static int decode_request(struct verdict *v, struct fixture *fx, const json_t *req)
{
	size_t E = fx->cfg.E;
	double scale, softcap;
	int wm, sv;

	if (get_size(v, fx->name, req, "B", &fx->B) != 0 ||
	    get_size(v, fx->name, req, "Lq", &fx->Lq) != 0 ||
	    get_size(v, fx->name, req, "Lk", &fx->Lk) != 0)
		return -1;
	if (get_floats(v, fx->name, req, "query", fx->B * fx->Lq * E, 0, &fx->query) != 0 ||
	    get_floats(v, fx->name, req, "key", fx->B * fx->Lk * E, 1, &fx->key) != 0 ||
	    get_floats(v, fx->name, req, "value", fx->B * fx->Lk * E, 1, &fx->value) != 0)
		return -1;
	if (decode_mask(v, fx, req) != 0 || decode_positional(v, fx, req) != 0)
		return -1;
	if (get_double(v, fx->name, req, "scale", &scale) != 0 ||
	    get_double(v, fx->name, req, "softcap", &softcap) != 0 ||
	    get_enum(v, fx->name, req, "weights_mode", weights_names, &wm) != 0 ||
	    get_enum(v, fx->name, req, "scores_view", scores_names, &sv) != 0)
		return -1;
	fx->scale = (float)scale;
	fx->softcap = (float)softcap;
	fx->weights_mode = (enum attn_weights_mode)wm;
	fx->scores_view = (enum attn_scores_view)sv;
	return 0;
}

static int decode_expected(struct verdict *v, struct fixture *fx, const json_t *root)
{
	const json_t *exp = json_object_get(root, "expected");
	size_t H = fx->cfg.H;

	fx->n_out = fx->B * fx->Lq * fx->cfg.E;
	fx->n_weights = 0;
	if (fx->weights_mode == ATTN_WEIGHTS_PER_HEAD)
		fx->n_weights = fx->B * H * fx->Lq * fx->Lk;
	if (fx->weights_mode == ATTN_WEIGHTS_MEAN)
		fx->n_weights = fx->B * fx->Lq * fx->Lk;
	fx->n_scores = fx->scores_view != ATTN_SCORES_NONE ? fx->B * H * fx->Lq * fx->Lk : 0;
	if (get_floats(v, fx->name, exp, "out", fx->n_out, 0, &fx->out) != 0 ||
	    get_floats(v, fx->name, exp, "weights", fx->n_weights, fx->n_weights == 0,
		       &fx->weights) != 0 ||
	    get_floats(v, fx->name, exp, "scores", fx->n_scores, fx->n_scores == 0, &fx->scores) !=
		0)
		return -1;
	if (strcmp(fx->source, "seed-demo") == 0) {
		fx->n_argmax = H * fx->Lq;
		if (get_sizes(v, fx->name, root, "argmax", fx->n_argmax, &fx->argmax) != 0)
			return -1;
	}
	return 0;
}

/* Loads dir/name.json into fx (released by the caller either way). */
static int fixture_load(struct fixture *fx, const char *name, struct verdict *v)
{
	char path[1400];
	json_error_t jerr;
	json_t *root;
	int rc = -1;

	memset(fx, 0, sizeof(*fx));
	fx->name = name;
	snprintf(path, sizeof(path), "%s/%s.json", g_fixtures.dir, name);
	root = json_load_file(path, 0, &jerr);
	if (root == NULL) {
		note_fail(v, "%s: cannot load %s: %s (line %d)", name, path, jerr.text, jerr.line);
		return -1;
	}
	if (decode_model(v, fx, root) == 0 &&
	    decode_request(v, fx, json_object_get(root, "request")) == 0 &&
	    decode_expected(v, fx, root) == 0)
		rc = 0;
	json_decref(root);
	return rc;
}

/* ---- Running the engine ---- */

/* Output buffers of one run, NaN-filled so unwritten cells cannot pass. */
struct outputs {
	float *out, *weights, *scores;
};

static float *nan_array(size_t n)
{
	float *p = malloc((n ? n : 1) * sizeof(float));
	size_t i;

	for (i = 0; p != NULL && i < n; i++)
		p[i] = NAN;
	return p;
}

static int outputs_init(struct outputs *o, const struct fixture *fx)
{
	o->out = nan_array(fx->n_out);
	o->weights = fx->n_weights ? nan_array(fx->n_weights) : NULL;
	o->scores = fx->n_scores ? nan_array(fx->n_scores) : NULL;
	if (o->out == NULL || (fx->n_weights && o->weights == NULL))
		return -1;
	if (fx->n_scores && o->scores == NULL)
		return -1;
	return 0;
}

static void outputs_release(struct outputs *o)
{
	free(o->out);
	free(o->weights);
	free(o->scores);
	memset(o, 0, sizeof(*o));
}

static struct attn_mha request_of(const struct fixture *fx, const struct attn_model *model,
				  struct outputs *o, size_t threads)
{
	struct attn_mha req;

	memset(&req, 0, sizeof(req));
	req.model = model;
	req.B = fx->B;
	req.Lq = fx->Lq;
	req.Lk = fx->Lk;
	req.query = fx->query;
	req.key = fx->key;
	req.value = fx->value;
	req.mask = fx->mask;
	req.pos = fx->pos;
	req.scale = fx->scale;
	req.softcap = fx->softcap;
	req.out = o->out;
	req.weights_mode = fx->weights_mode;
	req.weights = o->weights;
	req.scores_view = fx->scores_view;
	req.scores = o->scores;
	req.threads = threads;
	return req;
}

/* Runs the fast path (workspace asked for and freed here) or the reference. */
static int run(struct verdict *v, const struct fixture *fx, const struct attn_model *model,
	       struct outputs *o, int fast, size_t threads)
{
	struct attn_mha req = request_of(fx, model, o, threads);
	struct attn_error err;
	enum attn_status st;
	const char *what = fast ? "attn_mha_forward" : "attn_mha_forward_ref";
	size_t bytes = 0;
	void *ws = NULL;

	memset(&err, 0, sizeof(err));
	if (fast) {
		st = attn_mha_workspace(&req, &bytes, &err);
		what = "attn_mha_workspace";
		if (st == ATTN_OK) {
			ws = malloc(bytes ? bytes : 1);
			what = "attn_mha_forward";
			st = ws ? attn_mha_forward(&req, ws, bytes, &err) : ATTN_ERR_NOMEM;
		}
		free(ws);
	} else {
		st = attn_mha_forward_ref(&req, &err);
	}
	if (st != ATTN_OK) {
		note_fail(v, "%s: %s (threads %zu) failed: %s, field %s, index %zu: %s", fx->name,
			  what, threads, attn_status_str(st), err.field ? err.field : "-",
			  err.index, err.message);
		return -1;
	}
	return 0;
}

/* ---- Comparing ---- */

static int close_enough(float got, float want, double abs_tol, double rel_tol)
{
	if (isinf(want) || isnan(want))
		return isnan(want) ? isnan(got) : got == want;
	if (!isfinite(got))
		return 0;
	return fabs((double)got - (double)want) <= abs_tol + rel_tol * fabs((double)want);
}

/* Records the first cell of got outside tolerance of want, with a summary. */
static void compare(struct verdict *v, const char *name, const char *what, const float *got,
		    const float *want, size_t n, double abs_tol, double rel_tol)
{
	size_t i, bad = 0, first = 0;
	double worst = 0.0;

	for (i = 0; i < n; i++) {
		if (close_enough(got[i], want[i], abs_tol, rel_tol))
			continue;
		if (bad++ == 0)
			first = i;
		if (isfinite(want[i]) && fabs((double)got[i] - want[i]) > worst)
			worst = fabs((double)got[i] - want[i]);
	}
	if (bad > 0)
		note_fail(
		    v, "%s: %s[%zu] = %.9g, expected %.9g (%zu of %zu cells off, max |err| %.3g)",
		    name, what, first, (double)got[first], (double)want[first], bad, n, worst);
}

static void compare_outputs(struct verdict *v, const struct fixture *fx, const struct outputs *o,
			    const char *path, double abs_tol, double rel_tol)
{
	char what[64];

	snprintf(what, sizeof(what), "%s out", path);
	compare(v, fx->name, what, o->out, fx->out, fx->n_out, abs_tol, rel_tol);
	snprintf(what, sizeof(what), "%s weights", path);
	compare(v, fx->name, what, o->weights, fx->weights, fx->n_weights, abs_tol, rel_tol);
	snprintf(what, sizeof(what), "%s scores", path);
	compare(v, fx->name, what, o->scores, fx->scores, fx->n_scores, abs_tol, rel_tol);
}

/* Bitwise equality of two runs of the fast path. */
static void same_bits(struct verdict *v, const char *name, const char *what, const float *a,
		      const float *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
			note_fail(v, "%s: %s[%zu] differs with threads = 2: %.9g vs %.9g", name,
				  what, i, (double)b[i], (double)a[i]);
			return;
		}
	}
}

static struct attn_model *model_of(struct verdict *v, const struct fixture *fx)
{
	struct attn_model *model = NULL;
	struct attn_error err;
	enum attn_status st;

	memset(&err, 0, sizeof(err));
	st = attn_model_new_explicit(&model, &fx->cfg, fx->w_qkv, fx->b_qkv, fx->w_o, fx->b_o, NULL,
				     &err);
	if (st != ATTN_OK) {
		note_fail(v, "%s: attn_model_new_explicit failed: %s: %s", fx->name,
			  attn_status_str(st), err.message);
		return NULL;
	}
	return model;
}

/* The key each query attends to most, per head, as the seed prints it. */
static void check_argmax(struct verdict *v, const struct fixture *fx, const float *weights,
			 const char *path)
{
	size_t hi, j, best;

	for (hi = 0; hi < fx->n_argmax; hi++) {
		const float *row = weights + hi * fx->Lk; /* weights[b = 0, h, i, :] */

		for (best = 0, j = 1; j < fx->Lk; j++)
			best = row[j] > row[best] ? j : best;
		if (best != fx->argmax[hi])
			note_fail(
			    v, "%s: %s head %zu query %zu attends most to key %zu, seed says %zu",
			    fx->name, path, hi / fx->Lq, hi % fx->Lq, best, fx->argmax[hi]);
	}
}

/*
 * Runs fast (1 and 2 threads) and reference paths of fx and compares them with
 * the expected tensors at the given tolerance.
 */
static void check_case(struct verdict *v, const struct fixture *fx, double abs_tol, double rel_tol)
{
	struct attn_model *model = model_of(v, fx);
	struct outputs fast = {0}, fast2 = {0}, ref = {0};

	if (model == NULL)
		return;
	if (outputs_init(&fast, fx) != 0 || outputs_init(&fast2, fx) != 0 ||
	    outputs_init(&ref, fx) != 0) {
		note_fail(v, "%s: out of memory", fx->name);
		goto out;
	}
	if (run(v, fx, model, &fast, 1, 0) == 0)
		compare_outputs(v, fx, &fast, "fast", abs_tol, rel_tol);
	if (!v->failed && run(v, fx, model, &fast2, 1, 2) == 0) {
		same_bits(v, fx->name, "fast out", fast.out, fast2.out, fx->n_out);
		same_bits(v, fx->name, "fast weights", fast.weights, fast2.weights, fx->n_weights);
		same_bits(v, fx->name, "fast scores", fast.scores, fast2.scores, fx->n_scores);
	}
	if (run(v, fx, model, &ref, 0, 0) == 0)
		compare_outputs(v, fx, &ref, "ref", abs_tol, rel_tol);
	if (fx->argmax != NULL) {
		check_argmax(v, fx, fast.weights, "fast");
		check_argmax(v, fx, ref.weights, "ref");
	}
out:
	outputs_release(&fast);
	outputs_release(&fast2);
	outputs_release(&ref);
	attn_model_free(model);
}

/* ---- Tests ---- */

START_TEST(test_fixture)
{
	const char *name = g_fixtures.names[_i];
	struct verdict v = {0};
	struct fixture fx;

	if (fixture_load(&fx, name, &v) == 0)
		check_case(&v, &fx, TOL_ABS, TOL_REL);
	fixture_release(&fx);
	ck_assert_msg(!v.failed, "%s", v.msg);
}
END_TEST

/* The seed's demo: the output to 1e-5 and the same most-attended keys. */
START_TEST(test_seed_demo)
{
	struct verdict v = {0};
	struct fixture fx;

	if (fixture_load(&fx, SEED_DEMO_NAME, &v) == 0) {
		if (fx.argmax == NULL || fx.weights_mode != ATTN_WEIGHTS_PER_HEAD)
			note_fail(&v, "%s: needs per-head weights and argmax", SEED_DEMO_NAME);
		else
			check_case(&v, &fx, SEED_DEMO_TOL, 0.0);
	}
	fixture_release(&fx);
	ck_assert_msg(!v.failed, "%s", v.msg);
}
END_TEST

/* The folder holds exactly the cases MANIFEST names, and at least MIN_FIXTURES. */
START_TEST(test_fixture_count)
{
	char path[1100], line[256];
	size_t listed = 0, found = 0, i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/MANIFEST", g_fixtures.dir);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '\0')
			continue;
		listed++;
		for (i = 0; i < g_fixtures.n; i++)
			found += strcmp(line, g_fixtures.names[i]) == 0;
	}
	fclose(f);
	ck_assert_msg(g_fixtures.n >= MIN_FIXTURES, "%s holds %zu fixtures, want >= %d",
		      g_fixtures.dir, g_fixtures.n, MIN_FIXTURES);
	ck_assert_msg(listed == g_fixtures.n && found == listed,
		      "%s: MANIFEST lists %zu cases, %zu of them present, folder holds %zu",
		      g_fixtures.dir, listed, found, g_fixtures.n);
}
END_TEST

/* ---- Fixture discovery and main ---- */

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void fixtures_release(void)
{
	size_t i;

	for (i = 0; i < g_fixtures.n; i++)
		free(g_fixtures.names[i]);
	free(g_fixtures.names);
	g_fixtures.names = NULL;
	g_fixtures.n = 0;
}

/* Lists dir's *.json into g_fixtures; an unreadable folder lists nothing. */
static void fixtures_scan(void)
{
	const char *base = getenv("ATTN_FIXTURES");
	struct dirent *de;
	size_t cap = 0;
	DIR *d;

	snprintf(g_fixtures.dir, sizeof(g_fixtures.dir), "%s/mha",
		 base && *base ? base : "tests/fixtures");
	d = opendir(g_fixtures.dir);
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);

		if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0)
			continue;
		if (g_fixtures.n == cap) {
			char **grown =
			    realloc(g_fixtures.names, (cap ? 2 * cap : 64) * sizeof(char *));

			if (grown == NULL)
				break;
			g_fixtures.names = grown;
			cap = cap ? 2 * cap : 64;
		}
		g_fixtures.names[g_fixtures.n] = strndup(de->d_name, len - 5);
		if (g_fixtures.names[g_fixtures.n] == NULL)
			break;
		g_fixtures.n++;
	}
	closedir(d);
	if (g_fixtures.n > 0)
		qsort(g_fixtures.names, g_fixtures.n, sizeof(char *), by_name);
}

static Suite *fixtures_suite(void)
{
	Suite *s = suite_create("fixtures");
	TCase *tc = tcase_create("golden");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fixture_count);
	tcase_add_test(tc, test_seed_demo);
	tcase_add_loop_test(tc, test_fixture, 0, (int)g_fixtures.n);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	/* attn_sdpa's threads each call BLAS: keep OpenBLAS itself single-threaded */
	openblas_set_num_threads(1);
	fixtures_scan();
	sr = srunner_create(fixtures_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	fixtures_release();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
