/*
 * check_mini_heads.c: the built-in trained model `mini` (models/mini,
 * docs/mini-model.md) has learned heads, measured through the real daemon's
 * HTTP API as a client would measure them.
 *
 * The probe: SEQS sequences of N token ids drawn uniformly (SplitMix64, a
 * fixed seed) from the vocabulary without its last id (<|endoftext|>), each
 * followed by the same N ids again: one batched POST /v1/attention with
 * "tokens", every layer's per-head weights [layers][B][H][2N][2N]. For each
 * head, as TransformerLens scores heads (and train/heads.py, which the
 * training log used):
 *   previous-token score  mean over queries i >= 1 of attention to i - 1;
 *   induction score       mean over the second copy's queries N + i of
 *                         attention to i + 1, the token after the query
 *                         token's first occurrence.
 * The bar: some head's induction score >= 0.5, some head's
 * previous-token score >= 0.8. The scores of every head are printed, so a
 * run shows the model card's table.
 *
 * Also: /v1/models/mini describes a trained GPT-2 checkpoint, and text is
 * tokenized by its own byte-level tokenizer (Korean too, byte pieces at worst).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/prng.h"
#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

enum { N = 50, SEQS = 8, LAYERS = 2, HEADS = 4 };

static struct live_daemon daemon_;

static void start_daemon(void)
{
	live_start(&daemon_, NULL);
}

static void stop_daemon(void)
{
	live_stop(&daemon_);
}

static json_t *get_json(const char *path)
{
	struct live_resp r = { 0 };
	json_t *v;

	live_get(daemon_.port, path, &r);
	ck_assert_int_eq(r.status, 200);
	v = live_json(&r);
	live_resp_release(&r);
	return v;
}

static json_t *post_json(json_t *req)
{
	struct live_resp r = { 0 };
	char *body = json_dumps(req, JSON_COMPACT);
	json_t *v;

	live_post(daemon_.port, "/v1/attention", "application/json", "", body, strlen(body), &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	v = live_json(&r);
	free(body);
	live_resp_release(&r);
	return v;
}

/* SEQS rows of N uniform ids in [0, plain), each row then repeated. */
static json_t *repeated_tokens(json_int_t plain)
{
	struct attn_prng g;
	json_t *rows = json_array();

	attn_prng_seed(&g, 20221208); /* Olsson et al.'s paper, for a seed */
	for (int s = 0; s < SEQS; s++) {
		json_int_t ids[N];
		json_t *row = json_array();

		for (int i = 0; i < N; i++)
			ids[i] = (json_int_t)(attn_prng_next(&g) % (uint64_t)plain);
		for (int i = 0; i < 2 * N; i++)
			json_array_append_new(row, json_integer(ids[i % N]));
		json_array_append_new(rows, row);
	}
	return rows;
}

/* w[q][k] of one head of one sequence. */
static double weight(const json_t *head, int q, int k)
{
	return json_number_value(json_array_get(json_array_get(head, (size_t)q), (size_t)k));
}

/* The two scores of one head, summed over the batch's sequences. */
static void score_head(const json_t *att, int layer, int h, double *prev, double *ind)
{
	*prev = *ind = 0;
	for (int s = 0; s < SEQS; s++) {
		const json_t *head =
		    json_array_get(json_array_get(json_array_get(att, (size_t)layer), (size_t)s),
				   (size_t)h);

		ck_assert_msg(json_array_size(head) == 2 * N, "layer %d seq %d head %d: %zu rows",
			      layer, s, h, json_array_size(head));
		for (int i = 1; i < 2 * N; i++)
			*prev += weight(head, i, i - 1) / (2 * N - 1);
		for (int i = 0; i < N; i++)
			*ind += weight(head, N + i, i + 1) / N;
	}
	*prev /= SEQS;
	*ind /= SEQS;
}

START_TEST(describes_a_trained_checkpoint)
{
	json_t *m = get_json("/v1/models/mini");

	ck_assert_str_eq(json_string_value(json_object_get(m, "kind")), "checkpoint");
	ck_assert_str_eq(json_string_value(json_object_get(m, "family")), "gpt2");
	ck_assert_int_eq(json_integer_value(json_object_get(m, "num_layers")), LAYERS);
	ck_assert_int_eq(json_integer_value(json_object_get(m, "num_heads")), HEADS);
	ck_assert_str_eq(json_string_value(json_object_get(m, "tokenizer")), "mini");
	ck_assert_str_eq(json_string_value(json_object_get(m, "source")), "builtin:models/mini");
	ck_assert_int_ge(json_integer_value(json_object_get(m, "context_length")), 2 * N);
	json_decref(m);
}
END_TEST

START_TEST(learned_heads)
{
	json_t *m = get_json("/v1/models/mini");
	json_int_t vocab = json_integer_value(json_object_get(m, "vocab_size"));
	json_t *req, *ans, *att;
	double best_prev = 0, best_ind = 0;

	json_decref(m);
	req = json_pack("{s:s,s:o,s:s,s:b}", "model", "mini", "tokens", repeated_tokens(vocab - 1),
			"weights", "per_head", "output", 0);
	ans = post_json(req);
	att = json_object_get(ans, "attentions");
	ck_assert_int_eq(json_array_size(att), LAYERS);
	printf("mini heads on %d x %d random tokens repeated twice:\n", SEQS, N);
	printf("  layer head  previous-token  induction\n");
	for (int l = 0; l < LAYERS; l++) {
		for (int h = 0; h < HEADS; h++) {
			double prev, ind;

			score_head(att, l, h, &prev, &ind);
			printf("  %5d %4d  %14.3f  %9.3f\n", l, h, prev, ind);
			best_prev = prev > best_prev ? prev : best_prev;
			best_ind = ind > best_ind ? ind : best_ind;
		}
	}
	ck_assert_msg(best_prev >= 0.8, "best previous-token score %.3f < 0.8", best_prev);
	ck_assert_msg(best_ind >= 0.5, "best induction score %.3f < 0.5", best_ind);
	json_decref(req);
	json_decref(ans);
}
END_TEST

/* Korean is not in the corpus, yet tokenizes: byte-level pieces whose offsets
 * cover the text. */
START_TEST(korean_text_tokenizes)
{
	json_t *req = json_pack("{s:s,s:s,s:s,s:b}", "model", "mini", "text",
				"나는 맛있는 사과를 먹었다", "weights", "mean", "output", 0);
	json_t *ans = post_json(req);
	json_t *offsets = json_object_get(ans, "offsets");
	size_t n = json_array_size(offsets);

	ck_assert_uint_ge(n, 4);
	ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(offsets, n - 1), 1)), 14);
	json_decref(req);
	json_decref(ans);
}
END_TEST

static Suite *mini_suite(void)
{
	Suite *s = suite_create("mini_heads");
	TCase *tc = tcase_create("mini");

	tcase_set_timeout(tc, 60);
	tcase_add_unchecked_fixture(tc, start_daemon, stop_daemon);
	tcase_add_test(tc, describes_a_trained_checkpoint);
	tcase_add_test(tc, learned_heads);
	tcase_add_test(tc, korean_text_tokenizes);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = { .daemon = true };

	return suite_main(argc, argv, mini_suite, &opts);
}
