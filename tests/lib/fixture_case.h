/*
 * fixture_case.h: one golden fixture of tests/data/fixtures/mha (the format is in
 * tests/data/fixtures/README.md), decoded into the engine's terms: a model config
 * and its weights, a struct attn_mha request's inputs, mask and positions,
 * and the expected out / weights / scores. check_fixtures runs it through the
 * engine; check_api_numbers sends it as a /v1/attention request.
 *
 * Ownership: a struct fixture owns every array it decodes; fixture_release
 * frees them all and accepts a partly filled fixture. Failures are recorded
 * in a struct fixture_verdict (functions return -1), so callers can free
 * everything before they assert. Every name here starts with fixture_ /
 * FIXTURE_: the Makefile links this file into every test binary.
 */
#ifndef ATTN_TESTS_FIXTURE_CASE_H
#define ATTN_TESTS_FIXTURE_CASE_H

#include <stddef.h>

#include "case_files.h"
#include "engine/mha.h"
#include "engine/model.h"

#define FIXTURE_MIN_COUNT 30
#define FIXTURE_SEED_DEMO "seed_demo_000"

/* The first failure of one case, asserted after cleanup. */
struct fixture_verdict {
	int failed;
	char msg[768];
};

/* Records a failure (printf-style) unless one is recorded already: the first is usually the cause.
 */
void fixture_fail(struct fixture_verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* One decoded fixture. Array sizes are checked against the dims on load. */
struct fixture {
	const char *name;
	char source[16];
	struct attn_model_config cfg;
	float *w_qkv, *b_qkv, *w_o, *b_o; /* [(H + 2 Hkv) D, E], [.], [E, E], [E] */

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
	float *q, *k, *v; /* expected projections: [B, H, Lq, D], [B, Hkv, Lk, D] twice */
	size_t n_q, n_kv;
	size_t *argmax; /* seed-demo: [H, Lq] */
	size_t n_argmax;
	char **tokens; /* seed-demo: the words the query embeds, or NULL */
	size_t n_tokens;
};

/* The names the files use for the engine's enums, indexed by value, NULL-terminated. */
extern const char *const fixture_causal_names[];
extern const char *const fixture_pos_names[];
extern const char *const fixture_style_names[];
extern const char *const fixture_weights_names[];
extern const char *const fixture_scores_names[];

/* Lists the fixtures (names without ".json") of $ATTN_FIXTURES/mha or tests/data/fixtures/mha. */
void fixture_list(struct case_list *l);

/*
 * Loads dir/name.json into fx (zeroed here; name is borrowed and must outlive
 * fx). On failure v says why; fx is released by the caller either way.
 */
int fixture_load(struct fixture *fx, const char *dir, const char *name, struct fixture_verdict *v);

/* Frees every array; the fixture is empty afterwards. */
void fixture_release(struct fixture *fx);

#endif
