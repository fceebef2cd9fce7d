/*
 * check_workers.c: engine calls on kept worker threads (engine/workers.h)
 * give the numbers of calls on threads started for them.
 *
 *   same      the layer, streamed (no weights) and whole-row (per-head weights,
 *             which runs the projections and attn_sdpa_forward as teams of
 *             their own), over one and several key or query blocks: bit-identical with
 *             and without workers at the same thread count; a request for
 *             more threads than the workers have runs on as many as they have
 *   many      200 calls in a row (40 light: light.h), with pauses long enough
 *             for idle workers to fall asleep, every answer the same
 *   shared    two caller threads using one set of workers at once (one runs on
 *             them, the other on threads of its own while they are busy)
 *   args      0 or 65 threads are refused by name; a set of 1 is the caller
 *             alone; attn_workers_free(NULL) is a no-op
 *   count     the thread count changes no number: seeded random layers of
 *             small and odd shapes (d_model 8 to 96, one to three items of
 *             1 to 700 rows, self- and cross-attention, every positional
 *             encoding, no, mean and per-head weights) on 1, 2 and 3
 *             threads, bit for bit (OpenBLAS picks its kernel, and so its
 *             rounding, by a call's size: a row split that followed the
 *             thread count gave d_model 48 other numbers on 2 threads)
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"
#include "engine/mha.h"
#include "engine/model.h"
#include "engine/prng.h"
#include "engine/workers.h"

enum { E = 64, H = 4, B = 2 };

/* One layer request and its buffers: x [B, L, E], out [B, L, E], weights [B, H, L, L]. */
struct layer_case {
	struct attn_model *model;
	struct attn_mha req;
	float *x, *out, *weights;
	void *ws;
	size_t ws_bytes, n_out;
};

static void case_new(struct layer_case *c, size_t L, enum attn_weights_mode wm)
{
	struct attn_model_config cfg = { E, H, 0, 1, 0 };
	struct attn_prng g;
	size_t n = B * L * E;

	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(attn_model_new_seeded(&c->model, &cfg, 5, NULL), ATTN_OK);
	attn_prng_seed(&g, 11 + L);
	c->x = malloc(n * sizeof(float));
	c->out = malloc(n * sizeof(float));
	c->weights = wm == ATTN_WEIGHTS_NONE ? NULL : malloc(B * H * L * L * sizeof(float));
	for (size_t i = 0; i < n; i++)
		c->x[i] = (float)(attn_prng_uniform(&g) * 2.0 - 1.0);
	c->n_out = n;
	c->req.model = c->model;
	c->req.B = B;
	c->req.Lq = c->req.Lk = L;
	c->req.query = c->x;
	c->req.out = c->out;
	c->req.weights_mode = wm;
	c->req.weights = c->weights;
	c->req.mask.causal = ATTN_CAUSAL_TOP_LEFT;
	c->req.threads = 8; /* the most any call here asks for */
	ck_assert_int_eq(attn_mha_workspace(&c->req, &c->ws_bytes, NULL), ATTN_OK);
	c->ws = malloc(c->ws_bytes);
}

static void case_free(struct layer_case *c)
{
	attn_model_free(c->model);
	free(c->x);
	free(c->out);
	free(c->weights);
	free(c->ws);
}

/* Runs c's request on `threads` threads and `workers`, into a fresh copy of out. */
static float *run(const struct layer_case *c, size_t threads, struct attn_workers *workers,
		  void *ws, float *out)
{
	struct attn_mha req = c->req;
	struct attn_error err;

	req.threads = threads;
	req.workers = workers;
	req.out = out;
	ck_assert_msg(attn_mha_forward(&req, ws, c->ws_bytes, &err) == ATTN_OK, "%s", err.message);
	return out;
}

static float *run_fresh(const struct layer_case *c, size_t threads, struct attn_workers *w)
{
	return run(c, threads, w, c->ws, malloc(c->n_out * sizeof(float)));
}

/* Streamed: one key block, two (KEY_BLOCK = 512); whole rows: one query
 * block, three (attention.c's QUERY_BLOCK = 64). */
static const size_t lengths[2][2] = { { 37, 600 }, { 37, 130 } };

START_TEST(same_numbers_with_workers)
{
	struct layer_case c;
	struct attn_workers *w;
	float *own, *kept, *capped;
	int whole_rows = _i % 2;

	case_new(&c, lengths[whole_rows][_i / 2],
		 whole_rows ? ATTN_WEIGHTS_PER_HEAD : ATTN_WEIGHTS_NONE);
	ck_assert_int_eq(attn_workers_new(&w, 3, NULL), ATTN_OK);
	ck_assert_uint_eq(attn_workers_threads(w), 3);
	own = run_fresh(&c, 3, NULL);
	kept = run_fresh(&c, 3, w);
	capped = run_fresh(&c, 8, w); /* runs on the 3 there are */
	ck_assert_mem_eq(own, kept, c.n_out * sizeof(float));
	ck_assert_mem_eq(own, capped, c.n_out * sizeof(float));
	attn_workers_free(w);
	free(own);
	free(kept);
	free(capped);
	case_free(&c);
}
END_TEST

START_TEST(many_calls_with_pauses)
{
	struct layer_case c;
	struct attn_workers *w;
	struct timespec pause = { 0, 20000000 }; /* 20 ms: idle workers fall asleep */
	float *want, *got;

	case_new(&c, 37, ATTN_WEIGHTS_NONE);
	ck_assert_int_eq(attn_workers_new(&w, 2, NULL), ATTN_OK);
	want = run_fresh(&c, 2, NULL);
	got = malloc(c.n_out * sizeof(float));
	for (int i = 0; i < (test_light() ? 40 : 200); i++) {
		if (i % 20 == 0)
			nanosleep(&pause, NULL);
		memset(got, 0, c.n_out * sizeof(float));
		run(&c, 2, w, c.ws, got);
		ck_assert_msg(memcmp(want, got, c.n_out * sizeof(float)) == 0, "call %d differs", i);
	}
	attn_workers_free(w);
	free(want);
	free(got);
	case_free(&c);
}
END_TEST

struct caller {
	const struct layer_case *c;
	struct attn_workers *w;
	const float *want;
	int differ; /* calls whose answer differed */
};

/* 40 calls of the caller's own copy of c (a request's buffers are its own). */
static void *caller_main(void *p)
{
	struct caller *me = p;
	struct layer_case mine = *me->c;
	size_t Lq = mine.req.Lq, n_weights = B * H * Lq * Lq;
	float *got = malloc(mine.n_out * sizeof(float));

	mine.ws = malloc(mine.ws_bytes);
	mine.req.weights = mine.weights ? malloc(n_weights * sizeof(float)) : NULL;
	for (int i = 0; i < 40; i++) {
		run(&mine, 3, me->w, mine.ws, got);
		me->differ += memcmp(me->want, got, mine.n_out * sizeof(float)) != 0;
	}
	free(mine.ws);
	free(mine.req.weights);
	free(got);
	return NULL;
}

START_TEST(two_callers_share_workers)
{
	struct layer_case c;
	struct attn_workers *w;
	struct caller callers[2];
	pthread_t threads[2];
	float *want;

	case_new(&c, 37, _i ? ATTN_WEIGHTS_PER_HEAD : ATTN_WEIGHTS_NONE);
	ck_assert_int_eq(attn_workers_new(&w, 3, NULL), ATTN_OK);
	want = run_fresh(&c, 3, NULL);
	for (int i = 0; i < 2; i++) {
		callers[i] = (struct caller){ &c, w, want, 0 };
		ck_assert_int_eq(pthread_create(&threads[i], NULL, caller_main, &callers[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(threads[i], NULL);
		ck_assert_int_eq(callers[i].differ, 0);
	}
	attn_workers_free(w);
	free(want);
	case_free(&c);
}
END_TEST

START_TEST(bad_counts_refused)
{
	struct attn_workers *w = (struct attn_workers *)&w;
	struct attn_error err;
	struct layer_case c;
	float *alone, *one;

	ck_assert_int_eq(attn_workers_new(&w, 0, &err), ATTN_ERR_ARGUMENT);
	ck_assert_ptr_null(w);
	ck_assert_str_eq(err.field, "threads");
	ck_assert_int_eq(attn_workers_new(&w, 65, &err), ATTN_ERR_ARGUMENT);
	ck_assert_ptr_null(w);
	ck_assert_uint_eq(attn_workers_threads(NULL), 1);
	attn_workers_free(NULL);
	/* a set of one: the caller alone, whatever the request asks */
	ck_assert_int_eq(attn_workers_new(&w, 1, NULL), ATTN_OK);
	ck_assert_uint_eq(attn_workers_threads(w), 1);
	case_new(&c, 37, ATTN_WEIGHTS_NONE);
	alone = run_fresh(&c, 1, NULL);
	one = run_fresh(&c, 4, w);
	ck_assert_mem_eq(alone, one, c.n_out * sizeof(float));
	attn_workers_free(w);
	free(alone);
	free(one);
	case_free(&c);
}
END_TEST

/* One random layer of small, odd shapes; returns out [B, Lq, E] (then the
 * weights, when asked) computed on `threads` threads, in a new array. */
static float *random_layer(uint64_t seed, size_t threads, size_t *n)
{
	static const size_t dims[] = { 8, 16, 24, 32, 48, 64, 96 };
	struct attn_prng g;
	struct attn_model_config cfg = { 0 };
	struct attn_model *model;
	struct attn_mha req;
	struct attn_error err;
	size_t Bn, Lq, Lk, nq, nk, nw, ws_bytes;
	float *x, *kv, *out;
	void *ws;

	attn_prng_seed(&g, seed);
	cfg.E = dims[attn_prng_next(&g) % 7];
	cfg.H = cfg.E % 3 == 0 && attn_prng_next(&g) % 2 ? 3 : cfg.E % 2 == 0 ? 2 : 1;
	cfg.H = attn_prng_next(&g) % 3 == 0 ? 1 : cfg.H;
	cfg.Hkv = cfg.H;
	cfg.bias = (int)(attn_prng_next(&g) % 2);
	ck_assert_int_eq(attn_model_new_seeded(&model, &cfg, seed, NULL), ATTN_OK);
	Bn = 1 + attn_prng_next(&g) % 3;
	Lq = 1 + attn_prng_next(&g) % (attn_prng_next(&g) % 4 == 0 ? 700 : 120);
	Lk = attn_prng_next(&g) % 2 ? Lq : 1 + attn_prng_next(&g) % 300;
	nq = Bn * Lq * cfg.E;
	nk = Bn * Lk * cfg.E;
	memset(&req, 0, sizeof(req));
	req.model = model;
	req.B = Bn;
	req.Lq = Lq;
	req.Lk = Lk;
	req.weights_mode = (enum attn_weights_mode)(attn_prng_next(&g) % 3);
	req.pos.kind = (enum attn_pos_kind)(attn_prng_next(&g) % 4);
	req.mask.causal = attn_prng_next(&g) % 2 ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE;
	nw = req.weights_mode == ATTN_WEIGHTS_NONE ? 0
	     : req.weights_mode == ATTN_WEIGHTS_MEAN ? Bn * Lq * Lk : Bn * cfg.H * Lq * Lk;
	x = malloc(nq * sizeof(float));
	kv = malloc(nk * sizeof(float));
	out = malloc((nq + nw) * sizeof(float));
	for (size_t i = 0; i < nq; i++)
		x[i] = (float)(attn_prng_uniform(&g) * 2.0 - 1.0);
	for (size_t i = 0; i < nk; i++)
		kv[i] = (float)(attn_prng_uniform(&g) * 2.0 - 1.0);
	req.query = x;
	req.key = Lk != Lq || attn_prng_next(&g) % 2 ? kv : NULL; /* NULL: self-attention */
	req.out = out;
	req.weights = nw ? out + nq : NULL;
	req.threads = threads;
	ck_assert_int_eq(attn_mha_workspace(&req, &ws_bytes, NULL), ATTN_OK);
	ws = malloc(ws_bytes);
	ck_assert_msg(attn_mha_forward(&req, ws, ws_bytes, &err) == ATTN_OK, "%s", err.message);
	*n = nq + nw;
	free(ws);
	free(x);
	free(kv);
	attn_model_free(model);
	return out;
}

START_TEST(thread_count_changes_no_number)
{
	size_t cases = test_light() ? 6 : 60;

	for (size_t k = 0; k < cases; k++) {
		size_t n1, n2, n3;
		float *one = random_layer(1000 + k, 1, &n1);
		float *two = random_layer(1000 + k, 2, &n2);
		float *three = random_layer(1000 + k, 3, &n3);

		ck_assert_uint_eq(n1, n2);
		ck_assert_msg(memcmp(one, two, n1 * sizeof(float)) == 0, "case %zu: 2 threads", k);
		ck_assert_msg(memcmp(one, three, n1 * sizeof(float)) == 0, "case %zu: 3 threads", k);
		free(one);
		free(two);
		free(three);
	}
}
END_TEST

static Suite *workers_suite(void)
{
	Suite *s = suite_create("workers");
	TCase *tc = tcase_create("workers");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, same_numbers_with_workers, 0, 4);
	tcase_add_test(tc, many_calls_with_pauses);
	tcase_add_loop_test(tc, two_callers_share_workers, 0, 2);
	tcase_add_test(tc, bad_counts_refused);
	tcase_add_test(tc, thread_count_changes_no_number);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, workers_suite, NULL);
}
