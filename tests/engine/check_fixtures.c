/*
 * check_fixtures.c: the engine against golden fixtures (tests/data/fixtures/README.md).
 *
 * Every .json file in $ATTN_FIXTURES/mha (default tests/data/fixtures/mha) is one case: a
 * model, a struct attn_mha request and the expected out / weights / scores
 * and projections q, k, v, computed by PyTorch 1.13 or by a float64 numpy
 * reference. Each case runs
 *   attn_mha_forward      (BLAS, threads = 0, then threads = 2: equal to a few
 *                         ulps; then once more with the projections shown,
 *                         which takes the whole-row path)
 *   attn_mha_forward_ref  (the naive twin, projections shown)
 * and both must match the expected tensors within |a - b| <= 1e-5 + 1e-4 |b|
 * (-inf cells exactly). Failures name the fixture, the tensor and the cell.
 *
 * Decoding a fixture is fixture_case.c's. Ownership: a struct fixture owns
 * every array it decodes; fixture_release frees them all. Failures are
 * collected in a struct fixture_verdict and asserted only after everything is
 * freed, so the suite stays leak-free under valgrind with CK_FORK=no.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/case_files.h"
#include "tests/lib/fixture_case.h"
#include "tests/lib/suite_main.h"
#include "engine/mha.h"
#include "engine/model.h"
#define TOL_ABS 1e-5
#define TOL_REL 1e-4
#define SEED_DEMO_TOL 1e-5

/* The fixture folder's *.json files, sorted; listed by main before the run. */
static struct case_list fixtures;

/* ---- Running the engine ---- */

/* Output buffers of one run, NaN-filled so unwritten cells cannot pass;
 * q, k, v only for a run that shows the projections. */
struct outputs {
	float *out, *weights, *scores;
	float *q, *k, *v;
};

static float *nan_array(size_t n)
{
	float *p = malloc((n ? n : 1) * sizeof(float));
	size_t i;

	for (i = 0; p != NULL && i < n; i++)
		p[i] = NAN;
	return p;
}

static int outputs_init(struct outputs *o, const struct fixture *fx, int heads)
{
	o->out = nan_array(fx->n_out);
	o->weights = fx->n_weights ? nan_array(fx->n_weights) : NULL;
	o->scores = fx->n_scores ? nan_array(fx->n_scores) : NULL;
	if (o->out == NULL || (fx->n_weights && o->weights == NULL))
		return -1;
	if (fx->n_scores && o->scores == NULL)
		return -1;
	if (!heads)
		return 0;
	o->q = nan_array(fx->n_q);
	o->k = nan_array(fx->n_kv);
	o->v = nan_array(fx->n_kv);
	return o->q && o->k && o->v ? 0 : -1;
}

static void outputs_release(struct outputs *o)
{
	free(o->out);
	free(o->weights);
	free(o->scores);
	free(o->q);
	free(o->k);
	free(o->v);
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
	req.show_projections = o->q != NULL;
	req.q_heads = o->q;
	req.k_heads = o->k;
	req.v_heads = o->v;
	req.threads = threads;
	return req;
}

/* Runs the fast path (workspace asked for and freed here) or the reference. */
static int run(struct fixture_verdict *v, const struct fixture *fx, const struct attn_model *model,
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
		fixture_fail(v, "%s: %s (threads %zu) failed: %s, field %s, index %zu: %s",
			     fx->name, what, threads, attn_status_str(st),
			     err.field ? err.field : "-", err.index, err.message);
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
static void compare(struct fixture_verdict *v, const char *name, const char *what, const float *got,
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
		fixture_fail(
		    v, "%s: %s[%zu] = %.9g, expected %.9g (%zu of %zu cells off, max |err| %.3g)",
		    name, what, first, (double)got[first], (double)want[first], bad, n, worst);
}

static void compare_outputs(struct fixture_verdict *v, const struct fixture *fx,
			    const struct outputs *o, const char *path, double abs_tol,
			    double rel_tol)
{
	const struct {
		const char *name;
		const float *got, *want;
		size_t n;
	} t[] = {
		{"out", o->out, fx->out, fx->n_out},
		{"weights", o->weights, fx->weights, fx->n_weights},
		{"scores", o->scores, fx->scores, fx->n_scores},
		{"q", o->q, fx->q, o->q ? fx->n_q : 0}, /* only a run that shows them */
		{"k", o->k, fx->k, o->k ? fx->n_kv : 0},
		{"v", o->v, fx->v, o->v ? fx->n_kv : 0},
	};
	char what[64];

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		snprintf(what, sizeof(what), "%s %s", path, t[i].name);
		compare(v, fx->name, what, t[i].got, t[i].want, t[i].n, abs_tol, rel_tol);
	}
}

/*
 * threads = 2 against threads = 0. Not bitwise: the projections give each
 * thread its own rows, and OpenBLAS's Haswell and Zen sgemm kernels (those
 * valgrind's CPU and every x86 without AVX-512 select) round a row differently
 * with the number of rows in the call (its SkylakeX kernels do not).
 */
#define THREADS_TOL_ABS 1e-6
#define THREADS_TOL_REL 1e-5

static void same_run(struct fixture_verdict *v, const char *name, const char *what,
		     const float *a, const float *b, size_t n)
{
	char with[64];

	snprintf(with, sizeof(with), "%s with threads = 2", what);
	compare(v, name, with, b, a, n, THREADS_TOL_ABS, THREADS_TOL_REL);
}

static struct attn_model *model_of(struct fixture_verdict *v, const struct fixture *fx)
{
	struct attn_model *model = NULL;
	struct attn_error err;
	enum attn_status st;

	memset(&err, 0, sizeof(err));
	st = attn_model_new_explicit(&model, &fx->cfg, fx->w_qkv, fx->b_qkv, fx->w_o, fx->b_o, NULL,
				     &err);
	if (st != ATTN_OK) {
		fixture_fail(v, "%s: attn_model_new_explicit failed: %s: %s", fx->name,
			     attn_status_str(st), err.message);
		return NULL;
	}
	return model;
}

/* The key each query attends to most, per head, as the seed prints it. */
static void check_argmax(struct fixture_verdict *v, const struct fixture *fx, const float *weights,
			 const char *path)
{
	size_t hi, j, best;

	for (hi = 0; hi < fx->n_argmax; hi++) {
		const float *row = weights + hi * fx->Lk; /* weights[b = 0, h, i, :] */

		for (best = 0, j = 1; j < fx->Lk; j++)
			best = row[j] > row[best] ? j : best;
		if (best != fx->argmax[hi])
			fixture_fail(
			    v, "%s: %s head %zu query %zu attends most to key %zu, seed says %zu",
			    fx->name, path, hi / fx->Lq, hi % fx->Lq, best, fx->argmax[hi]);
	}
}

/*
 * Runs fast (1 and 2 threads) and reference paths of fx and compares them with
 * the expected tensors at the given tolerance.
 */
static void check_case(struct fixture_verdict *v, const struct fixture *fx, double abs_tol,
		       double rel_tol)
{
	struct attn_model *model = model_of(v, fx);
	struct outputs fast = {0}, fast2 = {0}, shown = {0}, ref = {0};

	if (model == NULL)
		return;
	if (outputs_init(&fast, fx, 0) != 0 || outputs_init(&fast2, fx, 0) != 0 ||
	    outputs_init(&shown, fx, 1) != 0 || outputs_init(&ref, fx, 1) != 0) {
		fixture_fail(v, "%s: out of memory", fx->name);
		goto out;
	}
	if (run(v, fx, model, &fast, 1, 0) == 0)
		compare_outputs(v, fx, &fast, "fast", abs_tol, rel_tol);
	if (!v->failed && run(v, fx, model, &fast2, 1, 2) == 0) {
		same_run(v, fx->name, "fast out", fast.out, fast2.out, fx->n_out);
		same_run(v, fx->name, "fast weights", fast.weights, fast2.weights, fx->n_weights);
		same_run(v, fx->name, "fast scores", fast.scores, fast2.scores, fx->n_scores);
	}
	if (run(v, fx, model, &shown, 1, 0) == 0)
		compare_outputs(v, fx, &shown, "fast, projections shown,", abs_tol, rel_tol);
	if (run(v, fx, model, &ref, 0, 0) == 0)
		compare_outputs(v, fx, &ref, "ref", abs_tol, rel_tol);
	if (fx->argmax != NULL) {
		check_argmax(v, fx, fast.weights, "fast");
		check_argmax(v, fx, ref.weights, "ref");
	}
out:
	outputs_release(&fast);
	outputs_release(&fast2);
	outputs_release(&shown);
	outputs_release(&ref);
	attn_model_free(model);
}

/* ---- Tests ---- */

START_TEST(test_fixture)
{
	const char *name = fixtures.names[_i];
	struct fixture_verdict v = {0};
	struct fixture fx;

	if (fixture_load(&fx, fixtures.dir, name, &v) == 0)
		check_case(&v, &fx, TOL_ABS, TOL_REL);
	fixture_release(&fx);
	ck_assert_msg(!v.failed, "%s", v.msg);
}
END_TEST

/* The seed's demo: the output to 1e-5 and the same most-attended keys. */
START_TEST(test_seed_demo)
{
	struct fixture_verdict v = {0};
	struct fixture fx;

	if (fixture_load(&fx, fixtures.dir, FIXTURE_SEED_DEMO, &v) == 0) {
		if (fx.argmax == NULL || fx.weights_mode != ATTN_WEIGHTS_PER_HEAD)
			fixture_fail(&v, "%s: needs per-head weights and argmax",
				     FIXTURE_SEED_DEMO);
		else
			check_case(&v, &fx, SEED_DEMO_TOL, 0.0);
	}
	fixture_release(&fx);
	ck_assert_msg(!v.failed, "%s", v.msg);
}
END_TEST

/* The folder holds exactly the cases MANIFEST names, and at least FIXTURE_MIN_COUNT. */
START_TEST(test_fixture_count)
{
	char path[1100], line[256];
	size_t listed = 0, found = 0, i;
	FILE *f;

	snprintf(path, sizeof(path), "%s/MANIFEST", fixtures.dir);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '\0')
			continue;
		listed++;
		for (i = 0; i < fixtures.n; i++)
			found += strcmp(line, fixtures.names[i]) == 0;
	}
	fclose(f);
	ck_assert_msg(fixtures.n >= FIXTURE_MIN_COUNT, "%s holds %zu fixtures, want >= %d",
		      fixtures.dir, fixtures.n, FIXTURE_MIN_COUNT);
	ck_assert_msg(listed == fixtures.n && found == listed,
		      "%s: MANIFEST lists %zu cases, %zu of them present, folder holds %zu",
		      fixtures.dir, listed, found, fixtures.n);
}
END_TEST

static Suite *fixtures_suite(void)
{
	Suite *s = suite_create("fixtures");
	TCase *tc = tcase_create("golden");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_fixture_count);
	tcase_add_test(tc, test_seed_demo);
	tcase_add_loop_test(tc, test_fixture, 0, (int)fixtures.n);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	/* attn_sdpa's threads each call BLAS: keep OpenBLAS itself single-threaded */
	static const struct suite_main_opts opts = {
	    .one_blas_thread = true,
	    .cases = &fixtures,
	    .list_cases = fixture_list,
	};

	return suite_main(argc, argv, fixtures_suite, &opts);
}
