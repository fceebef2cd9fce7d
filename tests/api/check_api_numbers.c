/*
 * check_api_numbers.c: /v1/attention against known numbers, through
 * api_handle on the built-in models (api_harness.h): the four-word numpy demo
 * (inline explicit weights as nested arrays and as base64, and from its own
 * four words), PyTorch cases with key padding as lengths and as ragged
 * batches, and every golden fixture in tests/data/fixtures/mha (or
 * $ATTN_FIXTURES/mha) sent as a request with an inline explicit model, once
 * as it is and once with "projections": true (the fixtures' q, k, v: from
 * PyTorch's in_proj_weight, the seed's X @ W_Qs[h], or the numpy reference).
 *
 * The fixtures are decoded by fixture_case.c, as for check_fixtures, and
 * turned back into requests here. Tolerance: within 1e-5 + 1e-4 |x|
 * (tests/data/fixtures/README.md); -inf cells exactly.
 * Ownership: whatever a test allocates is in the harness's arena, the
 * decoded fixtures too (released by the teardown).
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/api_harness.h"
#include "tests/lib/api_tensor.h"
#include "tests/lib/case_files.h"
#include "tests/lib/fixture_case.h"
#include "tests/lib/suite_main.h"

/* The seed demo: within 1e-5 of its float64 numbers (tests/data/fixtures/README.md). */
#define SEED_TOL 1e-5

/* The fixture folder's cases, listed by main. */
static struct case_list fixtures;

/* ------------------------------------------------------------------------ */
/* A decoded fixture as a request                                           */
/* ------------------------------------------------------------------------ */

static void fixture_free(void *fx)
{
	fixture_release(fx);
	free(fx);
}

/* Loads fixture name, asserting it decodes; released by the teardown. */
static const struct fixture *load(const char *name)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct fixture_verdict v = {0};

	ck_assert_msg(fx != NULL, "out of memory");
	harness_defer(fixture_free, fx);
	fixture_load(fx, fixtures.dir, name, &v);
	ck_assert_msg(!v.failed, "%s", v.msg);
	return fx;
}

static json_t *jsizes(const size_t *x, size_t n)
{
	json_t *arr = json_array();

	for (size_t k = 0; k < n; k++)
		json_array_append_new(arr, json_integer((json_int_t)x[k]));
	return arr;
}

static json_t *jdoubles(const double *x, size_t n)
{
	json_t *arr = json_array();

	for (size_t k = 0; k < n; k++)
		json_array_append_new(arr, json_real(x[k]));
	return arr;
}

/* x [n] as {"shape": shape, "data": x}. */
static json_t *jtensor(const float *x, size_t rank, const size_t *shape)
{
	size_t n = 1;

	for (size_t a = 0; a < rank; a++)
		n *= shape[a];
	return tensor_json_obj(tensor_json_floats(x, n), rank, shape);
}

/* A fixture's model as an inline explicit model. */
static json_t *model_json(const struct fixture *fx)
{
	size_t E = fx->cfg.E, H = fx->cfg.H, Hkv = fx->cfg.Hkv;
	size_t rows = (H + 2 * Hkv) * (E / H), qkv[2] = {rows, E}, o[2] = {E, E};
	json_t *m =
	    json_pack("{s:I, s:I, s:I, s:o, s:o}", "d_model", (json_int_t)E, "num_heads",
		      (json_int_t)H, "num_kv_heads", (json_int_t)Hkv, "in_proj_weight",
		      jtensor(fx->w_qkv, 2, qkv), "out_proj_weight", jtensor(fx->w_o, 2, o));

	if (fx->b_qkv != NULL) {
		json_object_set_new(m, "in_proj_bias", jtensor(fx->b_qkv, 1, &rows));
		json_object_set_new(m, "out_proj_bias", jtensor(fx->b_o, 1, &E));
	}
	return m;
}

/*
 * The engine's user mask (rank 2..4, right-aligned to [B, H, Lq, Lk], last axis
 * possibly short) as the API's rank-4 allow / bias: leading 1s, and a short
 * last axis padded with "not allowed".
 */
static json_t *user_mask_json(const struct fixture *fx, int *is_bool)
{
	const struct attn_mask *m = &fx->mask;
	const uint8_t *allow = fx->user;
	const float *bias = fx->user;
	size_t r = m->user_rank, s[4] = {1, 1, 1, 1}, full[4], rows, pos = 0;
	json_t *flat = json_array(), *out;

	*is_bool = m->user_kind == ATTN_USER_MASK_BOOL;
	for (size_t a = 0; a < r; a++)
		s[4 - r + a] = m->user_shape[a];
	memcpy(full, s, sizeof(s));
	if (s[3] != 1 && s[3] < fx->Lk)
		full[3] = fx->Lk;
	rows = s[0] * s[1] * s[2];
	for (size_t i = 0; i < rows; i++) {
		for (size_t j = 0; j < full[3]; j++) {
			size_t k = i * s[3] + j;

			if (*is_bool)
				json_array_append_new(flat, json_boolean(j < s[3] && allow[k]));
			else
				json_array_append_new(flat, j < s[3] ? tensor_json_cell(bias[k])
								     : json_string("-Infinity"));
		}
	}
	out = tensor_json_nest(flat, full, 4, &pos);
	json_decref(flat);
	return out;
}

static json_t *mask_json(const struct fixture *fx)
{
	const struct attn_mask *m = &fx->mask;
	json_t *out = json_object();

	if (m->causal != ATTN_CAUSAL_NONE)
		json_object_set_new(out, "causal", json_true());
	if (m->causal == ATTN_CAUSAL_BOTTOM_RIGHT)
		json_object_set_new(out, "alignment", json_string("bottom_right"));
	if (m->window > 0)
		json_object_set_new(out, "window", json_integer((json_int_t)m->window));
	if (fx->kv_lengths != NULL)
		json_object_set_new(out, "lengths", jsizes(fx->kv_lengths, fx->B));
	if (fx->user != NULL) {
		int is_bool;
		json_t *u = user_mask_json(fx, &is_bool);

		json_object_set_new(out, is_bool ? "allow" : "bias", u);
	}
	return out;
}

static json_t *positional_json(const struct fixture *fx)
{
	const struct attn_positional *p = &fx->pos;
	json_t *out;

	if (p->kind == ATTN_POS_NONE)
		return json_string("none");
	out = json_pack("{s:s, s:s, s:I}", "type", fixture_pos_names[p->kind], "style",
			fixture_style_names[p->style], "offset", (json_int_t)p->offset);
	if (p->theta != 0)
		json_object_set_new(out, "theta", json_real(p->theta));
	if (p->rotary_dim != 0)
		json_object_set_new(out, "rotary_dim", json_integer((json_int_t)p->rotary_dim));
	if (p->scaling != 0)
		json_object_set_new(out, "scaling", json_real(p->scaling));
	if (fx->q_positions != NULL)
		json_object_set_new(out, "positions", jdoubles(fx->q_positions, fx->Lq));
	if (fx->k_positions != NULL)
		json_object_set_new(out, "key_positions", jdoubles(fx->k_positions, fx->Lk));
	return out;
}

/* A golden fixture (tests/data/fixtures/README.md) as a /v1/attention request. */
static json_t *request_json(const struct fixture *fx)
{
	size_t qs[3] = {fx->B, fx->Lq, fx->cfg.E}, ks[3] = {fx->B, fx->Lk, fx->cfg.E};
	json_t *r =
	    json_pack("{s:o, s:o, s:o, s:o, s:s, s:s}", "model", model_json(fx), "embeddings",
		      jtensor(fx->query, 3, qs), "mask", mask_json(fx), "positional",
		      positional_json(fx), "weights", fixture_weights_names[fx->weights_mode],
		      "scores", fixture_scores_names[fx->scores_view]);

	if (fx->key != NULL)
		json_object_set_new(r, "key", jtensor(fx->key, 3, ks));
	if (fx->value != NULL)
		json_object_set_new(r, "value", jtensor(fx->value, 3, ks));
	if (fx->scale != 0)
		json_object_set_new(r, "scale", json_real((double)fx->scale));
	if (fx->softcap != 0)
		json_object_set_new(r, "softcap", json_real((double)fx->softcap));
	return r;
}

/* An answer's projections: "q", "k" or "v" of its "projections" object. */
static struct flat projection(const struct answer *a, const char *which)
{
	return tensor_of(harness_field(harness_field(a->json, "projections"), which));
}

/* The answer's projections against the fixture's q, k, v. */
static void check_projections(const struct fixture *fx, const struct answer *a)
{
	const char *names[3] = {"q", "k", "v"};
	const float *want[3] = {fx->q, fx->k, fx->v};
	size_t n[3] = {fx->n_q, fx->n_kv, fx->n_kv};

	for (size_t p = 0; p < 3; p++) {
		struct flat got = projection(a, names[p]);

		ck_assert_msg(got.n == n[p], "%s: %zu values, want %zu", names[p], got.n, n[p]);
		tensor_assert_near_n(names[p], got.x, want[p], got.n, TOL_ABS, TOL_REL);
	}
}

/* The answer to a fixture's request against its expected tensors, its
 * projections too when asked for (else they must be absent). */
static void check_expected(const struct fixture *fx, const struct answer *a, int projections)
{
	const struct {
		const char *key;
		const float *want;
		size_t n;
	} pairs[3] = {{"output", fx->out, fx->n_out},
		      {"weights", fx->weights, fx->n_weights},
		      {"scores", fx->scores, fx->n_scores}};

	harness_expect_ok(a);
	for (size_t p = 0; p < 3; p++) {
		struct flat got;

		if (pairs[p].want == NULL)
			continue;
		got = tensor_at(a, pairs[p].key);
		ck_assert_msg(got.n == pairs[p].n, "%s: %zu values, want %zu", pairs[p].key, got.n,
			      pairs[p].n);
		tensor_assert_near_n(pairs[p].key, got.x, pairs[p].want, got.n, TOL_ABS, TOL_REL);
	}
	if (projections)
		check_projections(fx, a);
	else
		ck_assert_ptr_null(json_object_get(a->json, "projections"));
}

/* A fixture's [B, L, E] tensor as a ragged batch of items of lens[b] rows. */
static json_t *ragged_items(const float *x, size_t B, size_t L, size_t E, const size_t *lens)
{
	json_t *items = json_array();

	for (size_t b = 0; b < B; b++)
		json_array_append_new(items, tensor_json_matrix(x + b * L * E, lens[b], E));
	return items;
}

/* ------------------------------------------------------------------------ */
/* The four-word numpy demo                                                    */
/* ------------------------------------------------------------------------ */

/* The seed demo: d_model 8, 2 heads, no bias, 4 words, explicit weights [24, 8] and [8, 8]. */
static const struct fixture *seed_demo_load(void)
{
	const struct fixture *fx = load(FIXTURE_SEED_DEMO);

	ck_assert(!fx->cfg.bias);
	ck_assert(fx->cfg.E == 8 && fx->cfg.H == 2 && fx->cfg.Hkv == 2);
	ck_assert(fx->B == 1 && fx->Lq == 4 && fx->key == NULL);
	ck_assert(fx->weights_mode == ATTN_WEIGHTS_PER_HEAD);
	ck_assert_uint_eq(fx->n_out, 4 * 8);
	ck_assert_uint_eq(fx->n_weights, 2 * 4 * 4);
	ck_assert(fx->argmax != NULL && fx->n_argmax == 2 * 4);
	ck_assert(fx->tokens != NULL && fx->n_tokens == 4);
	return fx;
}

/* The per-head argmax the seed prints equals ours. */
static void assert_argmax(const struct flat *w, const size_t *argmax, size_t H, size_t L)
{
	for (size_t h = 0; h < H; h++)
		for (size_t i = 0; i < L; i++) {
			const float *row = tensor_row(w, h, i);
			size_t best = 0;

			for (size_t j = 1; j < L; j++)
				best = row[j] > row[best] ? j : best;
			ck_assert_uint_eq(best, argmax[h * L + i]);
		}
}

static void seed_demo_check(const struct fixture *fx, const struct answer *a)
{
	struct flat out, w;

	harness_expect_ok(a);
	ck_assert_str_eq(json_string_value(harness_field(a->json, "model")), "inline");
	out = tensor_at(a, "output");
	tensor_assert_shape("output", &out, 2, 4, 8);
	tensor_assert_near_n("output", out.x, fx->out, 32, TOL_ABS, TOL_REL);
	w = tensor_at(a, "weights");
	tensor_assert_shape("weights", &w, 3, 2, 4, 4);
	tensor_assert_near_n("weights", w.x, fx->weights, 32, TOL_ABS, TOL_REL);
	assert_argmax(&w, fx->argmax, 2, 4);
}

/*
 * The four-word numpy demo through an inline explicit model, the request exactly
 * as the brief writes it: {d_model 8, num_heads 2, bias false, in_proj_weight
 * [24, 8], out_proj_weight [8, 8]}; "bias" is accepted when it agrees with
 * the weights given (false: no in_proj_bias).
 */
START_TEST(test_seed_demo_inline)
{
	const struct fixture *s = seed_demo_load();
	json_t *model = json_pack("{s:i, s:i, s:b, s:o, s:o}", "d_model", 8, "num_heads", 2, "bias",
				  0, "in_proj_weight", tensor_json_matrix(s->w_qkv, 24, 8),
				  "out_proj_weight", tensor_json_matrix(s->w_o, 8, 8));
	struct answer a = harness_attention_json(json_pack(
	    "{s:o, s:o}", "model", model, "embeddings", tensor_json_matrix(s->query, 4, 8)));

	seed_demo_check(s, &a);
}
END_TEST

/* The same with base64 weights, input and answer. */
START_TEST(test_seed_demo_base64)
{
	const struct fixture *s = seed_demo_load();
	json_t *model =
	    json_pack("{s:i, s:i, s:{s:[ii], s:s}, s:{s:[ii], s:s}}", "d_model", 8, "num_heads", 2,
		      "in_proj_weight", "shape", 24, 8, "base64",
		      tensor_b64_encode(s->w_qkv, 192 * sizeof(float)), "out_proj_weight", "shape",
		      8, 8, "base64", tensor_b64_encode(s->w_o, 64 * sizeof(float)));
	struct answer a = harness_attention_json(json_pack(
	    "{s:o, s:{s:[ii], s:s}, s:s}", "model", model, "embeddings", "shape", 4, 8, "base64",
	    tensor_b64_encode(s->query, 32 * sizeof(float)), "encoding", "base64"));

	seed_demo_check(s, &a);
	ck_assert(json_is_object(harness_field(a.json, "output")));
}
END_TEST

/*
 * The demo from its own four words: an inline model with vocab_size 64 whose
 * embedding table holds X at the rows the words hash to (FNV-1a mod 64).
 */
START_TEST(test_seed_demo_text)
{
	const struct fixture *s = seed_demo_load();
	float *table = harness_keep(calloc(64 * 8, sizeof(float)));
	json_t *words = harness_keep_json(json_array());
	char text[256] = "";
	size_t ids[4];
	json_t *model;
	struct answer a;

	for (size_t i = 0; i < 4; i++) {
		const char *word = s->tokens[i];

		ids[i] = (size_t)(harness_fnv1a(word) % 64);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(ids[j] != ids[i], "two demo words share row %zu", ids[i]);
		memcpy(table + ids[i] * 8, s->query + i * 8, 8 * sizeof(float));
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s%s", i ? " " : "",
			 word);
		json_array_append_new(words, json_string(word));
	}
	model = json_pack("{s:i, s:i, s:i, s:o, s:o, s:o}", "d_model", 8, "num_heads", 2,
			  "vocab_size", 64, "in_proj_weight", tensor_json_matrix(s->w_qkv, 24, 8),
			  "out_proj_weight", tensor_json_matrix(s->w_o, 8, 8), "embed_tokens",
			  tensor_json_matrix(table, 64, 8));
	a = harness_attention_json(json_pack("{s:o, s:s}", "model", model, "text", text));
	seed_demo_check(s, &a);
	harness_expect_tokens(&a, words);
}
END_TEST

/*
 * The scale goes on the product q . k on both paths: a scale of 1e30 on
 * scores 1e0 and 2e0 (q 1e10 times k 1e-10) gives the same answer whether
 * the weights are asked for (the whole-row path) or not (the streaming
 * one), where scaling q first made it 1e40, past float32.
 */
START_TEST(test_large_scale_both_paths)
{
#define LARGE_SCALE(weights)                                                                 \
	"{\"model\":{\"d_model\":1,\"num_heads\":1,\"in_proj_weight\":[[1],[1e-20],[1]],"     \
	"\"out_proj_weight\":[[1]]},\"embeddings\":[[1e10],[2e10]],\"scale\":1e30,"             \
	"\"weights\":\"" weights "\"}"
	struct answer rows = harness_attention(LARGE_SCALE("per_head"));
	struct answer stream = harness_attention(LARGE_SCALE("none"));
#undef LARGE_SCALE
	const float want[2] = {2e10f, 2e10f}; /* softmax(1e30 [1, 2] x 1e10 x 1e-10) = [0, 1] */

	harness_expect_ok(&rows);
	harness_expect_ok(&stream);
	tensor_assert_near_n("whole rows", tensor_at(&rows, "output").x, want, 2, 0, SAME_REL);
	tensor_assert_near_n("streaming", tensor_at(&stream, "output").x, want, 2, 0, SAME_REL);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Golden fixtures and PyTorch cases                                        */
/* ------------------------------------------------------------------------ */

START_TEST(test_fixture_count)
{
	int seed = 0;

	ck_assert_msg(fixtures.n >= FIXTURE_MIN_COUNT, "%zu fixtures in %s%s", fixtures.n,
		      fixtures.dir, fixtures.error);
	for (size_t i = 0; i < fixtures.n; i++)
		seed |= strcmp(fixtures.names[i], FIXTURE_SEED_DEMO) == 0;
	ck_assert(seed);
}
END_TEST

/* Every golden fixture through POST /v1/attention. */
START_TEST(test_fixture)
{
	const struct fixture *fx = load(fixtures.names[_i]);
	struct answer a = harness_attention_json(request_json(fx));

	check_expected(fx, &a, 0);
}
END_TEST

/* The same with the projections shown: they take the whole-row path, whose
 * answer must agree too (a fixture without weights streams otherwise). */
START_TEST(test_fixture_projections)
{
	const struct fixture *fx = load(fixtures.names[_i]);
	json_t *req = request_json(fx);
	struct answer a;

	json_object_set_new(req, "projections", json_true());
	a = harness_attention_json(req);
	check_expected(fx, &a, 1);
}
END_TEST

/*
 * One item's head_outputs ho [H, Lq, D] against what they mean: joined along
 * D per query and multiplied by W_O (w_o [E, H D], b_o [E] or NULL), the
 * item's output [Lq, E].
 */
static void check_heads_join(const struct flat *ho, const struct flat *out, const float *w_o,
			     const float *b_o)
{
	size_t H = ho->shape[0], Lq = ho->shape[1], D = ho->shape[2], E = out->shape[1];

	ck_assert_uint_eq(out->shape[0], Lq);
	for (size_t i = 0; i < Lq; i++)
		for (size_t e = 0; e < E; e++) {
			double acc = b_o ? b_o[e] : 0.0;

			for (size_t h = 0; h < H; h++)
				for (size_t d = 0; d < D; d++)
					acc += (double)tensor_row(ho, h, i)[d] * w_o[e * H * D + h * D + d];
			ck_assert_msg(tensor_near(out->x[i * E + e], acc, TOL_ABS, TOL_REL),
				      "query %zu, column %zu: output %.7g, head outputs x W_O %.7g", i,
				      e, (double)out->x[i * E + e], acc);
		}
}

/* head_outputs [H, Lq, D] against per-head weights w [H, Lq, Lk] times the
 * projections v [H, Lk, D]: the tutorial's weights @ V, head by head. */
static void check_weights_times_v(const struct flat *ho, const struct flat *w, const struct flat *v)
{
	size_t H = ho->shape[0], Lq = ho->shape[1], D = ho->shape[2], Lk = w->shape[2];

	for (size_t h = 0; h < H; h++)
		for (size_t i = 0; i < Lq; i++)
			for (size_t d = 0; d < D; d++) {
				double acc = 0;

				for (size_t j = 0; j < Lk; j++)
					acc += (double)tensor_row(w, h, i)[j] * tensor_row(v, h, j)[d];
				ck_assert_msg(tensor_near(tensor_row(ho, h, i)[d], acc, TOL_ABS, TOL_REL),
					      "head %zu query %zu dim %zu: %.7g, weights @ v %.7g", h, i,
					      d, (double)tensor_row(ho, h, i)[d], acc);
			}
}

/*
 * The seed demo's Q, K, V, head by head, as the tutorial prints them before
 * anything else (Q = X @ W_Qs[h]): shaped [H, L, d_k] for its unbatched
 * input, and q k^T / sqrt(d_k) softmaxed row by row is the answer's weights.
 * Loop 0 writes the answer as numbers, loop 1 as base64.
 */
START_TEST(test_seed_demo_projections)
{
	const struct fixture *s = seed_demo_load();
	json_t *model = json_pack("{s:i, s:i, s:b, s:o, s:o}", "d_model", 8, "num_heads", 2, "bias",
				  0, "in_proj_weight", tensor_json_matrix(s->w_qkv, 24, 8),
				  "out_proj_weight", tensor_json_matrix(s->w_o, 8, 8));
	struct answer a = harness_attention_json(
	    json_pack("{s:o, s:o, s:b, s:b, s:s}", "model", model, "embeddings",
		      tensor_json_matrix(s->query, 4, 8), "projections", 1, "head_outputs", 1,
		      "encoding", _i ? "base64" : "float"));
	struct flat q = projection(&a, "q"), k = projection(&a, "k"), v = projection(&a, "v");
	struct flat w = tensor_at(&a, "weights"), ho = tensor_at(&a, "head_outputs");
	struct flat out = tensor_at(&a, "output");

	seed_demo_check(s, &a);
	/* "Head 합치기": each head's weights @ V, joined and multiplied by W_O */
	tensor_assert_shape("head_outputs", &ho, 3, 2, 4, 4);
	check_weights_times_v(&ho, &w, &v);
	check_heads_join(&ho, &out, s->w_o, NULL);
	tensor_assert_shape("q", &q, 3, 2, 4, 4);
	tensor_assert_shape("k", &k, 3, 2, 4, 4);
	tensor_assert_shape("v", &v, 3, 2, 4, 4);
	tensor_assert_near_n("q", q.x, s->q, 32, SEED_TOL, 0);
	tensor_assert_near_n("k", k.x, s->k, 32, SEED_TOL, 0);
	tensor_assert_near_n("v", v.x, s->v, 32, SEED_TOL, 0);
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 4; i++) {
			const float *qi = tensor_row(&q, h, i), *wi = tensor_row(&w, h, i);
			double e[4], sum = 0;

			for (size_t j = 0; j < 4; j++) {
				const float *kj = tensor_row(&k, h, j);
				double dot = 0;

				for (size_t d = 0; d < 4; d++)
					dot += (double)qi[d] * kj[d];
				sum += e[j] = exp(dot / 2.0); /* sqrt(d_k) = 2 */
			}
			for (size_t j = 0; j < 4; j++)
				ck_assert_msg(tensor_near(wi[j], e[j] / sum, TOL_ABS, TOL_REL),
					      "head %zu query %zu key %zu: weight %.7g, softmax of "
					      "q k^T / 2 %.7g", h, i, j, (double)wi[j], e[j] / sum);
		}
}
END_TEST

/* PyTorch, bias, key padding [6, 3, 1] as mask.lengths. */
START_TEST(test_torch_key_padding_lengths)
{
	const struct fixture *fx = load("torch_key_padding_b3");
	json_t *req = request_json(fx);
	struct answer a;

	ck_assert(fx->cfg.bias);
	ck_assert_ptr_nonnull(json_object_get(harness_field(req, "mask"), "lengths"));
	a = harness_attention_json(req);
	check_expected(fx, &a, 0);
}
END_TEST

/* The same PyTorch case with key padding as a ragged key / value batch. */
START_TEST(test_torch_key_padding_ragged)
{
	const struct fixture *fx = load("torch_key_padding_b3");
	const size_t *lens = fx->kv_lengths;
	json_t *r = request_json(fx);
	struct answer a;
	struct flat out;

	ck_assert(fx->B == 3 && fx->Lq == 4 && fx->Lk == 6 && fx->cfg.E == 8 && fx->cfg.H == 2);
	ck_assert(lens != NULL && fx->key != NULL && fx->value != NULL);
	ck_assert_uint_eq(fx->n_weights, 3 * 2 * 4 * 6);
	json_object_del(harness_field(r, "mask"), "lengths");
	json_object_set_new(r, "key", ragged_items(fx->key, 3, 6, 8, lens));
	json_object_set_new(r, "value", ragged_items(fx->value, 3, 6, 8, lens));
	json_object_set_new(r, "weights", json_string("per_head"));
	a = harness_attention_json(r);
	harness_expect_ok(&a);
	out = tensor_at(&a, "output");
	tensor_assert_near_n("output", out.x, fx->out, 3 * 4 * 8, TOL_ABS, TOL_REL);
	ck_assert_uint_eq(out.n, fx->n_out);
	/* weights: item b's [H, Lq, len_b] block (padded columns, if sent, are zero) */
	for (size_t b = 0; b < 3; b++) {
		struct flat w = tensor_item(&a, "weights", b);
		size_t cols = w.shape[2];

		ck_assert(w.rank == 3 && (cols == lens[b] || cols == 6));
		for (size_t h = 0; h < 2; h++)
			for (size_t i = 0; i < 4; i++)
				for (size_t j = 0; j < cols; j++)
					ck_assert(
					    tensor_near(tensor_row(&w, h, i)[j],
							fx->weights[((b * 2 + h) * 4 + i) * 6 + j],
							TOL_ABS, TOL_REL));
	}
}
END_TEST

/* The ragged key batch's projections: each item's q whole ([H, Lq, D]: its
 * queries are not ragged), its k and v trimmed to its own keys. */
START_TEST(test_torch_ragged_projections)
{
	const struct fixture *fx = load("torch_key_padding_b3");
	const size_t *lens = fx->kv_lengths;
	json_t *r = request_json(fx);
	struct answer a;

	json_object_del(harness_field(r, "mask"), "lengths");
	json_object_set_new(r, "key", ragged_items(fx->key, 3, 6, 8, lens));
	json_object_set_new(r, "value", ragged_items(fx->value, 3, 6, 8, lens));
	json_object_set_new(r, "projections", json_true());
	a = harness_attention_json(r);
	harness_expect_ok(&a);
	for (size_t b = 0; b < 3; b++) {
		json_t *p = harness_field(a.json, "projections");
		struct flat q = tensor_of(json_array_get(harness_field(p, "q"), b));
		struct flat k = tensor_of(json_array_get(harness_field(p, "k"), b));
		struct flat v = tensor_of(json_array_get(harness_field(p, "v"), b));

		tensor_assert_shape("item q", &q, 3, 2, 4, 4);
		tensor_assert_shape("item k", &k, 3, 2, (int)lens[b], 4);
		tensor_assert_shape("item v", &v, 3, 2, (int)lens[b], 4);
		tensor_assert_near_n("item q", q.x, fx->q + b * 2 * 4 * 4, 32, TOL_ABS, TOL_REL);
		for (size_t h = 0; h < 2; h++) { /* fx's k, v: [B, H, 6, D] */
			size_t at = (b * 2 + h) * 6 * 4;

			tensor_assert_near_n("item k", tensor_row(&k, h, 0), fx->k + at, lens[b] * 4,
					     TOL_ABS, TOL_REL);
			tensor_assert_near_n("item v", tensor_row(&v, h, 0), fx->v + at, lens[b] * 4,
					     TOL_ABS, TOL_REL);
		}
	}
}
END_TEST

/* PyTorch self-attention with key padding [5, 2] as a ragged embeddings batch
 * (each item's head_outputs trimmed to its own queries too). */
START_TEST(test_torch_self_padding_ragged)
{
	const struct fixture *fx = load("torch_key_padding_self_e16h4");
	const size_t *lens = fx->kv_lengths;
	json_t *r = request_json(fx);
	struct answer a;

	ck_assert(fx->B == 2 && fx->Lq == 5 && fx->cfg.E == 16 && lens != NULL);
	ck_assert_uint_eq(fx->n_out, 2 * 5 * 16);
	ck_assert_uint_eq(fx->n_weights, 2 * 5 * 5); /* mean */
	json_object_del(harness_field(r, "mask"), "lengths");
	json_object_set_new(r, "embeddings", ragged_items(fx->query, 2, 5, 16, lens));
	json_object_set_new(r, "head_outputs", json_true());
	a = harness_attention_json(r);
	harness_expect_ok(&a);
	for (size_t b = 0; b < 2; b++) {
		size_t len = lens[b];
		struct flat o = tensor_item(&a, "output", b), w = tensor_item(&a, "weights", b);
		struct flat ho = tensor_item(&a, "head_outputs", b);

		tensor_assert_shape("item head_outputs", &ho, 3, 4, (int)len, 4);
		check_heads_join(&ho, &o, fx->w_o, fx->b_o);
		tensor_assert_shape("item output", &o, 2, (int)len, 16);
		tensor_assert_shape("item weights", &w, 2, (int)len, (int)len);
		tensor_assert_near_n("item output", o.x, fx->out + b * 5 * 16, len * 16, TOL_ABS,
				     TOL_REL);
		for (size_t i = 0; i < len; i++)
			tensor_assert_near_n("item weights", w.x + i * len,
					     fx->weights + (b * 5 + i) * 5, len, TOL_ABS, TOL_REL);
	}
}
END_TEST

static Suite *numbers_suite(void)
{
	Suite *s = suite_create("api_numbers");
	TCase *tc = harness_tcase(s, "numbers", 120);

	tcase_add_test(tc, test_seed_demo_inline);
	tcase_add_test(tc, test_seed_demo_base64);
	tcase_add_test(tc, test_seed_demo_text);
	tcase_add_loop_test(tc, test_seed_demo_projections, 0, 2);
	tcase_add_test(tc, test_torch_ragged_projections);
	tcase_add_test(tc, test_torch_key_padding_lengths);
	tcase_add_test(tc, test_torch_key_padding_ragged);
	tcase_add_test(tc, test_torch_self_padding_ragged);
	tcase_add_test(tc, test_large_scale_both_paths);
	tcase_add_test(tc, test_fixture_count);
	tcase_add_loop_test(tc, test_fixture, 0, (int)fixtures.n);
	tcase_add_loop_test(tc, test_fixture_projections, 0, (int)fixtures.n);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .cases = &fixtures,
	    .list_cases = fixture_list,
	    .setup = harness_setup,
	    .teardown = harness_teardown,
	};

	return suite_main(argc, argv, numbers_suite, &opts);
}
