/*
 * fixture_case.c: decoding a golden fixture (see fixture_case.h).
 */
#include "fixture_case.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fixture_fail(struct fixture_verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->failed)
		return; /* keep the first, it is usually the cause */
	v->failed = 1;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
	va_end(ap);
}

void fixture_release(struct fixture *fx)
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
	free(fx->q);
	free(fx->k);
	free(fx->v);
	free(fx->argmax);
	for (size_t i = 0; i < fx->n_tokens; i++)
		free(fx->tokens[i]);
	free(fx->tokens);
	memset(fx, 0, sizeof(*fx));
}

/* ---- JSON decoding: each helper returns 0, or -1 after fixture_fail() ---- */

static int get_size(struct fixture_verdict *v, const char *name, const json_t *obj, const char *key,
		    size_t *out)
{
	const json_t *j = json_object_get(obj, key);

	if (!json_is_integer(j) || json_integer_value(j) < 0) {
		fixture_fail(v, "%s: fixture field \"%s\" is not a non-negative integer", name,
			     key);
		return -1;
	}
	*out = (size_t)json_integer_value(j);
	return 0;
}

static int get_double(struct fixture_verdict *v, const char *name, const json_t *obj,
		      const char *key, double *out)
{
	if (case_number(json_object_get(obj, key), out) != 0) {
		fixture_fail(v, "%s: fixture field \"%s\" is not a number", name, key);
		return -1;
	}
	return 0;
}

/*
 * *out = a new array of the want numbers of obj[key] (as float when is_float,
 * else as double). A missing or null key leaves *out NULL when optional.
 */
static int get_reals(struct fixture_verdict *v, const char *name, const json_t *obj,
		     const char *key, size_t want, int optional, int is_float, void **out)
{
	const json_t *arr = json_object_get(obj, key);
	size_t i;
	double x;

	*out = NULL;
	if ((arr == NULL || json_is_null(arr)) && optional)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) != want) {
		fixture_fail(v, "%s: fixture field \"%s\" is not an array of %zu numbers", name,
			     key, want);
		return -1;
	}
	*out = malloc((want ? want : 1) * (is_float ? sizeof(float) : sizeof(double)));
	if (*out == NULL) {
		fixture_fail(v, "%s: out of memory", name);
		return -1;
	}
	for (i = 0; i < want; i++) {
		if (case_number(json_array_get(arr, i), &x) != 0) {
			fixture_fail(v, "%s: fixture field \"%s\"[%zu] is not a number", name, key,
				     i);
			return -1;
		}
		if (is_float)
			((float *)*out)[i] = (float)x; /* exact: the files hold float32 values */
		else
			((double *)*out)[i] = x;
	}
	return 0;
}

static int get_floats(struct fixture_verdict *v, const char *name, const json_t *obj,
		      const char *key, size_t want, int optional, float **out)
{
	void *p;
	int rc = get_reals(v, name, obj, key, want, optional, 1, &p);

	*out = p;
	return rc;
}

static int get_doubles(struct fixture_verdict *v, const char *name, const json_t *obj,
		       const char *key, size_t want, double **out)
{
	void *p;
	int rc = get_reals(v, name, obj, key, want, 1, 0, &p);

	*out = p;
	return rc;
}

/* *out = a new array of want non-negative integers obj[key], or NULL when absent. */
static int get_sizes(struct fixture_verdict *v, const char *name, const json_t *obj,
		     const char *key, size_t want, size_t **out)
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
	fixture_fail(v, "%s: fixture field \"%s\" is not an array of %zu sizes", name, key, want);
	return -1;
}

/* Index of obj[key] in the NULL-terminated table of names, which is its enum value. */
static int get_enum(struct fixture_verdict *v, const char *name, const json_t *obj, const char *key,
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
	fixture_fail(v, "%s: fixture field \"%s\" is not a known name", name, key);
	return -1;
}

/* fx->tokens = copies of the want strings of obj[key], or NULL when absent. */
static int get_strings(struct fixture_verdict *v, struct fixture *fx, const json_t *obj,
		       const char *key, size_t want)
{
	const json_t *arr = json_object_get(obj, key);

	if (arr == NULL)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) != want)
		goto bad;
	fx->tokens = calloc(want ? want : 1, sizeof(char *));
	if (fx->tokens == NULL)
		goto bad;
	for (; fx->n_tokens < want; fx->n_tokens++) {
		const char *s = json_string_value(json_array_get(arr, fx->n_tokens));

		fx->tokens[fx->n_tokens] = s ? strdup(s) : NULL;
		if (fx->tokens[fx->n_tokens] == NULL)
			goto bad;
	}
	return 0;
bad:
	fixture_fail(v, "%s: fixture field \"%s\" is not an array of %zu strings", fx->name, key,
		     want);
	return -1;
}

const char *const fixture_causal_names[] = {"none", "top_left", "bottom_right", NULL};
const char *const fixture_pos_names[] = {"none", "sinusoidal", "rope", "alibi", NULL};
const char *const fixture_style_names[] = {"interleaved", "half", NULL};
const char *const fixture_weights_names[] = {"none", "per_head", "mean", NULL};
const char *const fixture_scores_names[] = {"none", "raw", "softcap", "masked", "softmax", NULL};

/* The caller mask of mask_j["user"], if any: kind, shape and data. */
static int decode_user_mask(struct fixture_verdict *v, struct fixture *fx, const json_t *mask_j)
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
		fixture_fail(v, "%s: fixture user mask needs a kind and a shape of rank 2..4",
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
			fixture_fail(v, "%s: fixture bool mask data missing", fx->name);
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

static int decode_mask(struct fixture_verdict *v, struct fixture *fx, const json_t *req)
{
	const json_t *mask_j = json_object_get(req, "mask");
	int causal;

	if (get_enum(v, fx->name, mask_j, "causal", fixture_causal_names, &causal) != 0 ||
	    get_size(v, fx->name, mask_j, "window", &fx->mask.window) != 0 ||
	    get_sizes(v, fx->name, mask_j, "kv_lengths", fx->B, &fx->kv_lengths) != 0)
		return -1;
	fx->mask.causal = (enum attn_causal)causal;
	fx->mask.kv_lengths = fx->kv_lengths;
	return decode_user_mask(v, fx, mask_j);
}

static int decode_positional(struct fixture_verdict *v, struct fixture *fx, const json_t *req)
{
	const json_t *pos = json_object_get(req, "positional");
	int kind, style = 0;

	if (get_enum(v, fx->name, pos, "kind", fixture_pos_names, &kind) != 0)
		return -1;
	fx->pos.kind = (enum attn_pos_kind)kind;
	if (fx->pos.kind == ATTN_POS_NONE)
		return 0;
	if (get_double(v, fx->name, pos, "theta", &fx->pos.theta) != 0 ||
	    get_enum(v, fx->name, pos, "style", fixture_style_names, &style) != 0 ||
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

static int decode_model(struct fixture_verdict *v, struct fixture *fx, const json_t *root)
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
		fixture_fail(v, "%s: fixture lacks a source or has zero heads", fx->name);
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

static int decode_request(struct fixture_verdict *v, struct fixture *fx, const json_t *req)
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
	    get_enum(v, fx->name, req, "weights_mode", fixture_weights_names, &wm) != 0 ||
	    get_enum(v, fx->name, req, "scores_view", fixture_scores_names, &sv) != 0)
		return -1;
	fx->scale = (float)scale;
	fx->softcap = (float)softcap;
	fx->weights_mode = (enum attn_weights_mode)wm;
	fx->scores_view = (enum attn_scores_view)sv;
	return 0;
}

static int decode_expected(struct fixture_verdict *v, struct fixture *fx, const json_t *root)
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
	fx->n_q = fx->B * fx->Lq * fx->cfg.E;                             /* [B, H, Lq, D] */
	fx->n_kv = fx->B * fx->Lk * (fx->cfg.Hkv ? fx->cfg.Hkv : H) * (fx->cfg.E / H); /* [B, Hkv, Lk, D] */
	if (get_floats(v, fx->name, exp, "out", fx->n_out, 0, &fx->out) != 0 ||
	    get_floats(v, fx->name, exp, "weights", fx->n_weights, fx->n_weights == 0,
		       &fx->weights) != 0 ||
	    get_floats(v, fx->name, exp, "scores", fx->n_scores, fx->n_scores == 0, &fx->scores) !=
		    0 ||
	    get_floats(v, fx->name, exp, "q", fx->n_q, 0, &fx->q) != 0 ||
	    get_floats(v, fx->name, exp, "k", fx->n_kv, 0, &fx->k) != 0 ||
	    get_floats(v, fx->name, exp, "v", fx->n_kv, 0, &fx->v) != 0)
		return -1;
	if (strcmp(fx->source, "seed-demo") == 0) {
		fx->n_argmax = H * fx->Lq;
		if (get_sizes(v, fx->name, root, "argmax", fx->n_argmax, &fx->argmax) != 0 ||
		    get_strings(v, fx, root, "tokens", fx->Lq) != 0)
			return -1;
	}
	return 0;
}

void fixture_list(struct case_list *l)
{
	char dir[1100];

	snprintf(dir, sizeof(dir), "%s/mha", case_env("ATTN_FIXTURES", "tests/data/fixtures"));
	case_list_scan(l, dir, "", ".json");
}

int fixture_load(struct fixture *fx, const char *dir, const char *name, struct fixture_verdict *v)
{
	char path[1400];
	json_error_t jerr;
	json_t *root;
	int rc = -1;

	memset(fx, 0, sizeof(*fx));
	fx->name = name;
	snprintf(path, sizeof(path), "%s/%s.json", dir, name);
	root = json_load_file(path, 0, &jerr);
	if (root == NULL) {
		fixture_fail(v, "%s: cannot load %s: %s (line %d)", name, path, jerr.text,
			     jerr.line);
		return -1;
	}
	if (decode_model(v, fx, root) == 0 &&
	    decode_request(v, fx, json_object_get(root, "request")) == 0 &&
	    decode_expected(v, fx, root) == 0)
		rc = 0;
	json_decref(root);
	return rc;
}
