/*
 * check_cancel.c: the engine's cancel flag (engine/cancel.h).
 *
 *   never     a flag that stays 0 changes no bit: attn_sdpa_forward, the
 *             layer streamed (no weights) and whole-row (per-head weights),
 *             on 1 and 2 threads, against the same calls with no flag
 *   before    a flag set before the call: ATTN_ERR_CANCELLED (field
 *             "cancel") from each of them, nothing else promised
 *   mid       a flag set by another thread once the call is seen writing its
 *             output (a base-sized layer, E 512, H 8, L = 8192, streamed; a
 *             base-sized attn_sdpa_forward at L = 4096; a quarter of each
 *             in light mode, still several key and row blocks): ATTN_ERR_CANCELLED,
 *             within CANCEL_BOUND_S of the flag (the figure is printed; the
 *             whole call takes seconds), on 1 thread, a team of 2 started
 *             for the call, and 2 kept workers, which then serve the next
 *             call with the bits of a fresh run (every barrier was met); the
 *             layer on whole rows (per-head weights, L = 2048 (1024 light): projections
 *             as teams of their own, then attn_sdpa_forward) on 1 and 2
 *             threads
 * The stack's flag is in check_stack (between layers and projection tiles).
 */
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/lib/light.h"
#include "tests/lib/suite_main.h"
#include "engine/mha.h"
#include "engine/model.h"
#include "engine/prng.h"
#include "engine/workers.h"

/* How soon after the flag a cancelled call must be back: far above the
 * longest stretch between two reads (one projection tile, some ms), far
 * below the call's own time. Under valgrind (light mode: everything some
 * 50 times slower, threads serialised) only coming back cancelled counts. */
#define CANCEL_BOUND_S 0.25
#define CANCEL_BOUND_LIGHT_S 60.0

/* The mid-call lengths: under valgrind (light) a quarter, as the full ones
 * took 7 of its minutes, and 2048 keys are still four streaming steps. */
static size_t layer_len(void)
{
	return test_light() ? 2048 : 8192;
}

static size_t sdpa_len(void)
{
	return test_light() ? 1024 : 4096;
}

static size_t whole_rows_len(void)
{
	return test_light() ? 1024 : 2048;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static float *random_floats(size_t n, uint64_t seed)
{
	struct attn_prng g;
	float *x = malloc(n * sizeof(float));

	ck_assert_ptr_nonnull(x);
	attn_prng_seed(&g, seed);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)(attn_prng_uniform(&g) * 2.0 - 1.0);
	return x;
}

/* ---- a layer (attn_mha) -------------------------------------------------- */

struct layer_case {
	struct attn_model *model;
	struct attn_mha req;
	float *x;
	size_t n_out, n_weights, ws_bytes;
};

static void layer_new(struct layer_case *c, size_t E, size_t H, size_t L,
		      enum attn_weights_mode wm)
{
	struct attn_model_config cfg = { E, H, 0, 1, 0 };

	memset(c, 0, sizeof(*c));
	ck_assert_int_eq(attn_model_new_seeded(&c->model, &cfg, 7, NULL), ATTN_OK);
	c->x = random_floats(L * E, 3 + L);
	c->n_out = L * E;
	c->n_weights = wm == ATTN_WEIGHTS_NONE ? 0 : H * L * L;
	c->req.model = c->model;
	c->req.B = 1;
	c->req.Lq = c->req.Lk = L;
	c->req.query = c->x;
	c->req.mask.causal = ATTN_CAUSAL_TOP_LEFT;
	c->req.weights_mode = wm;
	c->req.threads = 2; /* the most any call here asks for */
	ck_assert_int_eq(attn_mha_workspace(&c->req, &c->ws_bytes, NULL), ATTN_OK);
}

static void layer_free(struct layer_case *c)
{
	attn_model_free(c->model);
	free(c->x);
}

/* The outputs of one call: out, then the weights (when asked for). */
struct layer_out {
	float *out, *weights;
	void *ws;
};

static void outs_new(struct layer_out *o, const struct layer_case *c)
{
	o->out = malloc(c->n_out * sizeof(float));
	o->weights = c->n_weights ? malloc(c->n_weights * sizeof(float)) : NULL;
	o->ws = malloc(c->ws_bytes);
	ck_assert(o->out && o->ws && (o->weights || !c->n_weights));
	memset(o->out, 0xff, c->n_out * sizeof(float)); /* NaN: not yet written */
}

static void outs_free(struct layer_out *o)
{
	free(o->out);
	free(o->weights);
	free(o->ws);
}

static enum attn_status layer_run(const struct layer_case *c, struct layer_out *o, size_t threads,
				  struct attn_workers *w, const atomic_int *flag,
				  struct attn_error *err)
{
	struct attn_mha req = c->req;

	req.out = o->out;
	req.weights = o->weights;
	req.threads = threads;
	req.workers = w;
	req.cancel = flag;
	return attn_mha_forward(&req, o->ws, c->ws_bytes, err);
}

/* ---- a raw call (attn_sdpa) ------------------------------------------------ */

struct sdpa_case {
	struct attn_sdpa req;
	float *q, *k, *v;
	size_t n_out, ws_bytes;
};

/* [1, H, L, D] each, causal. */
static void sdpa_new(struct sdpa_case *c, size_t H, size_t L, size_t D)
{
	size_t n = H * L * D;

	memset(c, 0, sizeof(*c));
	c->q = random_floats(n, 21);
	c->k = random_floats(n, 22);
	c->v = random_floats(n, 23);
	c->n_out = n;
	c->req.B = 1;
	c->req.H = c->req.Hkv = H;
	c->req.Lq = c->req.Lk = L;
	c->req.D = c->req.Dv = D;
	c->req.mask.causal = ATTN_CAUSAL_TOP_LEFT;
	c->req.q = attn_cview_bhld(c->q, H, L, D);
	c->req.k = attn_cview_bhld(c->k, H, L, D);
	c->req.v = attn_cview_bhld(c->v, H, L, D);
	c->req.out = attn_view_bhld(NULL, H, L, D);
	c->req.threads = 2;
	ck_assert_int_eq(attn_sdpa_workspace(&c->req, &c->ws_bytes, NULL), ATTN_OK);
}

static void sdpa_free(struct sdpa_case *c)
{
	free(c->q);
	free(c->k);
	free(c->v);
}

static enum attn_status sdpa_run(const struct sdpa_case *c, float *out, void *ws, size_t threads,
				 struct attn_workers *w, const atomic_int *flag,
				 struct attn_error *err)
{
	struct attn_sdpa req = c->req;

	req.out.data = out;
	req.threads = threads;
	req.workers = w;
	req.cancel = flag;
	return attn_sdpa_forward(&req, ws, c->ws_bytes, err);
}

/* ---- never set ------------------------------------------------------------ */

/* _i: bit 0 the thread count (1, 2), bit 1 whole rows (per-head weights). */
START_TEST(unset_flag_changes_no_bit)
{
	size_t threads = (_i & 1) ? 2 : 1;
	enum attn_weights_mode wm = (_i & 2) ? ATTN_WEIGHTS_PER_HEAD : ATTN_WEIGHTS_NONE;
	struct layer_case c;
	struct layer_out a, b;
	struct attn_error err;
	atomic_int flag = 0;

	layer_new(&c, 64, 4, 600, wm); /* two key blocks, ten query blocks */
	outs_new(&a, &c);
	outs_new(&b, &c);
	ck_assert_int_eq(layer_run(&c, &a, threads, NULL, NULL, &err), ATTN_OK);
	ck_assert_int_eq(layer_run(&c, &b, threads, NULL, &flag, &err), ATTN_OK);
	ck_assert_msg(memcmp(a.out, b.out, c.n_out * sizeof(float)) == 0, "a flag changed out");
	if (c.n_weights)
		ck_assert_msg(memcmp(a.weights, b.weights, c.n_weights * sizeof(float)) == 0,
			      "a flag changed the weights");
	outs_free(&a);
	outs_free(&b);
	layer_free(&c);
}
END_TEST

START_TEST(unset_flag_changes_no_bit_sdpa)
{
	size_t threads = _i + 1;
	struct sdpa_case c;
	struct attn_error err;
	atomic_int flag = 0;
	float *a, *b;
	void *ws;

	sdpa_new(&c, 3, 200, 16);
	a = malloc(c.n_out * sizeof(float));
	b = malloc(c.n_out * sizeof(float));
	ws = malloc(c.ws_bytes);
	ck_assert_int_eq(sdpa_run(&c, a, ws, threads, NULL, NULL, &err), ATTN_OK);
	ck_assert_int_eq(sdpa_run(&c, b, ws, threads, NULL, &flag, &err), ATTN_OK);
	ck_assert_msg(memcmp(a, b, c.n_out * sizeof(float)) == 0, "a flag changed out");
	free(a), free(b), free(ws);
	sdpa_free(&c);
}
END_TEST

/* ---- set before the call ---------------------------------------------------- */

START_TEST(set_flag_cancels_at_once)
{
	enum attn_weights_mode wm = _i ? ATTN_WEIGHTS_PER_HEAD : ATTN_WEIGHTS_NONE;
	struct layer_case c;
	struct layer_out o;
	struct sdpa_case s;
	struct attn_error err;
	atomic_int flag = 1;
	float *out;
	void *ws;

	layer_new(&c, 64, 4, 300, wm);
	outs_new(&o, &c);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(layer_run(&c, &o, 2, NULL, &flag, &err), ATTN_ERR_CANCELLED);
	ck_assert_int_eq(err.status, ATTN_ERR_CANCELLED);
	ck_assert_str_eq(err.field, "cancel");
	ck_assert_str_eq(attn_status_str(ATTN_ERR_CANCELLED), "cancelled");
	outs_free(&o);
	layer_free(&c);

	sdpa_new(&s, 2, 100, 16);
	out = malloc(s.n_out * sizeof(float));
	ws = malloc(s.ws_bytes);
	ck_assert_int_eq(sdpa_run(&s, out, ws, 2, NULL, &flag, &err), ATTN_ERR_CANCELLED);
	free(out), free(ws);
	sdpa_free(&s);
}
END_TEST

/* ---- set from another thread, mid-call ------------------------------------- */

/* The canceller: waits until the call has written the first float of watch
 * (a NaN before it), then sets the flag and notes when. */
struct canceller {
	const float *watch;
	atomic_int flag;
	double t_set;
	pthread_t thread;
};

/* 1 while the first float of watch still holds its NaN. The call writes
 * that float meanwhile with plain stores (memcpy, SIMD), so this peek races
 * with it on purpose: it only looks for a changed bit pattern. It is kept
 * out of ThreadSanitizer's view (SANITIZE=thread), which would report that
 * race on every run; the flag and t_set are synchronised as usual
 * (atomic_store, pthread_join) and stay in view. */
__attribute__((no_sanitize("thread"), noinline)) static int still_nan(const float *watch)
{
	const uint32_t *bits = (const uint32_t *)(const void *)watch;

	return __atomic_load_n(bits, __ATOMIC_RELAXED) == 0xffffffffu;
}

static void *canceller_main(void *p)
{
	struct canceller *k = p;

	while (still_nan(k->watch))
		sched_yield();
	k->t_set = now_s();
	atomic_store(&k->flag, 1);
	return NULL;
}

static void canceller_start(struct canceller *k, const float *watch)
{
	k->watch = watch;
	atomic_init(&k->flag, 0);
	ck_assert_int_eq(pthread_create(&k->thread, NULL, canceller_main, k), 0);
}

/* Joins k and checks the call came back cancelled within the bound. */
static void canceller_check(struct canceller *k, enum attn_status st, const char *what)
{
	double back = now_s(), late;

	ck_assert_int_eq(pthread_join(k->thread, NULL), 0);
	late = now_s() - k->t_set;
	printf("cancel %s: back %.1f ms after the flag\n", what, late * 1e3);
	ck_assert_msg(st == ATTN_ERR_CANCELLED, "%s: %s, with the flag set %s the call returned",
		      what, attn_status_str(st), k->t_set > back ? "after" : "before");
	ck_assert_msg(late < (test_light() ? CANCEL_BOUND_LIGHT_S : CANCEL_BOUND_S),
		      "%s: back %.3f s after the flag", what, late);
}

/* _i: 0 one thread, 1 a team of 2 started for the call, 2 two kept workers. */
START_TEST(flag_mid_call_stops_layer)
{
	size_t threads = _i == 0 ? 1 : 2;
	struct attn_workers *w = NULL;
	struct layer_case c, small;
	struct layer_out o, a, b;
	struct canceller k;
	struct attn_error err;
	enum attn_status st;
	char what[64];

	if (_i == 2)
		ck_assert_int_eq(attn_workers_new(&w, 2, NULL), ATTN_OK);
	layer_new(&c, 512, 8, layer_len(), ATTN_WEIGHTS_NONE); /* `base` */
	outs_new(&o, &c);
	canceller_start(&k, o.out);
	st = layer_run(&c, &o, threads, w, &k.flag, &err);
	snprintf(what, sizeof what, "layer L = %zu, %zu thread(s)%s", layer_len(), threads,
		 w ? " on workers" : "");
	canceller_check(&k, st, what);
	outs_free(&o);
	layer_free(&c);

	/* the threads that skipped met every barrier: the next call is whole */
	layer_new(&small, 64, 4, 600, ATTN_WEIGHTS_NONE);
	outs_new(&a, &small);
	outs_new(&b, &small);
	ck_assert_int_eq(layer_run(&small, &a, threads, w, NULL, &err), ATTN_OK);
	ck_assert_int_eq(layer_run(&small, &b, threads, NULL, NULL, &err), ATTN_OK);
	ck_assert(memcmp(a.out, b.out, small.n_out * sizeof(float)) == 0);
	outs_free(&a);
	outs_free(&b);
	layer_free(&small);
	attn_workers_free(w);
}
END_TEST

/* Whole rows: the flag is set once the first weights are written (the
 * projections are done and the core runs); _i + 1 threads. */
START_TEST(flag_mid_call_stops_whole_rows)
{
	size_t threads = (size_t)_i + 1;
	struct layer_case c;
	struct layer_out o;
	struct canceller k;
	struct attn_error err;
	enum attn_status st;
	char what[64];

	layer_new(&c, 512, 8, whole_rows_len(), ATTN_WEIGHTS_PER_HEAD);
	outs_new(&o, &c);
	memset(o.weights, 0xff, c.n_weights * sizeof(float));
	canceller_start(&k, o.weights);
	st = layer_run(&c, &o, threads, NULL, &k.flag, &err);
	snprintf(what, sizeof what, "layer with weights L = %zu, %zu thread(s)", whole_rows_len(),
		 threads);
	canceller_check(&k, st, what);
	outs_free(&o);
	layer_free(&c);
}
END_TEST

START_TEST(flag_mid_call_stops_sdpa)
{
	size_t threads = _i == 0 ? 1 : 2;
	struct attn_workers *w = NULL;
	struct sdpa_case c;
	struct canceller k;
	struct attn_error err;
	enum attn_status st;
	char what[64];
	float *out;
	void *ws;

	if (_i == 2)
		ck_assert_int_eq(attn_workers_new(&w, 2, NULL), ATTN_OK);
	sdpa_new(&c, 8, sdpa_len(), 64);
	out = malloc(c.n_out * sizeof(float));
	ws = malloc(c.ws_bytes);
	memset(out, 0xff, c.n_out * sizeof(float));
	canceller_start(&k, out); /* out[0, 0, 0, 0]: the first task's first head */
	st = sdpa_run(&c, out, ws, threads, w, &k.flag, &err);
	snprintf(what, sizeof what, "sdpa L = %zu, %zu thread(s)%s", sdpa_len(), threads,
		 w ? " on workers" : "");
	canceller_check(&k, st, what);
	free(out), free(ws);
	sdpa_free(&c);
	attn_workers_free(w);
}
END_TEST

static Suite *cancel_suite(void)
{
	Suite *s = suite_create("cancel");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, unset_flag_changes_no_bit, 0, 4);
	tcase_add_loop_test(tc, unset_flag_changes_no_bit_sdpa, 0, 2);
	tcase_add_loop_test(tc, set_flag_cancels_at_once, 0, 2);
	tcase_add_loop_test(tc, flag_mid_call_stops_layer, 0, 3);
	tcase_add_loop_test(tc, flag_mid_call_stops_whole_rows, 0, 2);
	tcase_add_loop_test(tc, flag_mid_call_stops_sdpa, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	struct suite_main_opts opts = { .one_blas_thread = 1 };

	return suite_main(argc, argv, cancel_suite, &opts);
}
