/*
 * check_stack.c: the transformer stack (stack.h) on small seeded random
 * models of each family, fast path against its naive twin.
 *
 *   twin      attn_stack_forward vs attn_stack_forward_ref on every captured
 *             attention, every captured layer's masked scores and the
 *             output: |fast - ref| <= 1e-5 + 1e-4 |ref| (seeded.h), -inf
 *             exactly; gpt2 (fused in-major qkv), bert (types, eps 1e-12),
 *             RoBERTa's positions from the ids (a pad id in a quarter of
 *             the places), llama (GQA 4/2, RoPE, biases, window 3 with layer 0 full
 *             attention, D != E / H), ragged
 *             batches, capture and head subsets, MEAN, scores without weights
 *   scores    the softmax of each captured score row is its weights row
 *             (per head; all-hidden rows weigh 0)
 *   threads   1 and 2 threads (and enough rows to split the projections)
 *             give the same bits
 *   padding   a padded item's valid rows equal the item run alone
 *   cancel    a cancel flag that stays 0 changes no bit (1 and 2 threads);
 *             one set before the call returns ATTN_ERR_CANCELLED
 *   refusals  each bad run or stack names its status and field; sizes that
 *             overflow are refused before anything is allocated or read;
 *             weights whose values overflow float32 are refused at the
 *             layer (or final norm) where they do, by both passes
 *   positions the stack's own position signal (attn_stack_positions): wpe's
 *             rows as added (RoBERTa's from pad_id + 1), bit for bit;
 *             llama's rotated unit vector against a double twin
 * The kernels inside (norm, activation, RoPE table, in-major linear) have
 * check_layers.
 */
#include <check.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/prng.h"
#include "engine/stack.h"

#include "tests/lib/light.h"
#include "tests/lib/seeded.h"
#include "tests/lib/suite_main.h"

/* ---- a random model ------------------------------------------------------ */

enum { MAX_LAYERS = 3, MAX_BUFS = 64 };

/* tm_build's variant with E 64, D 16, F 600: wide enough for column tiles
 * and threaded row steps (linear.h, stack_rows.h). */
enum { WIDE = 3 };

struct tmodel {
	struct attn_stack s;
	struct attn_block blk[MAX_LAYERS];
	float inv_freq[32];
	float *bufs[MAX_BUFS * MAX_LAYERS];
	size_t n_bufs;
};

/* Variants: 0 plain; 1 llama with biases, window 3, D != E / H and a RoPE
 * scaling; 2 bigger (B L > LINEAR_BLOCK rows, for the thread split). */
static float *tm_buf(struct tmodel *m, struct attn_prng *g, size_t n, float scale, float base)
{
	float *x = test_randn(g, n);

	for (size_t i = 0; i < n; i++)
		x[i] = x[i] * scale + base;
	m->bufs[m->n_bufs++] = x;
	return x;
}

static void tm_linear(struct tmodel *m, struct attn_prng *g, struct attn_linear *lin,
		      size_t out, size_t in, int in_major, int bias)
{
	lin->w = tm_buf(m, g, out * in, 0.6f / sqrtf((float)in), 0.0f);
	lin->b = bias ? tm_buf(m, g, out, 0.1f, 0.0f) : NULL;
	lin->out = out;
	lin->in = in;
	lin->in_major = in_major;
}

static void tm_norm(struct tmodel *m, struct attn_prng *g, struct attn_norm *nm, int bias)
{
	nm->w = tm_buf(m, g, m->s.E, 0.1f, 1.0f);
	nm->b = bias ? tm_buf(m, g, m->s.E, 0.1f, 0.0f) : NULL;
}

static void tm_block(struct tmodel *m, struct attn_prng *g, struct attn_block *blk, int bias)
{
	struct attn_stack *s = &m->s;
	size_t q = s->H * s->D, kv = s->Hkv * s->D;
	int gpt2 = s->family == ATTN_FAMILY_GPT2, ln = s->norm_kind == ATTN_NORM_LAYER;

	memset(blk, 0, sizeof(*blk));
	tm_norm(m, g, &blk->norm1, ln);
	tm_norm(m, g, &blk->norm2, ln);
	blk->n_qkv = gpt2 ? 1 : 3;
	if (gpt2) {
		tm_linear(m, g, &blk->qkv[0], q + 2 * kv, s->E, 1, 1);
	} else {
		tm_linear(m, g, &blk->qkv[0], q, s->E, 0, bias);
		tm_linear(m, g, &blk->qkv[1], kv, s->E, 0, bias);
		tm_linear(m, g, &blk->qkv[2], kv, s->E, 0, bias);
	}
	tm_linear(m, g, &blk->o, s->E, q, gpt2, bias);
	tm_linear(m, g, &blk->up, s->F, s->E, gpt2, bias);
	tm_linear(m, g, &blk->down, s->E, s->F, gpt2, bias);
	if (s->family == ATTN_FAMILY_LLAMA)
		tm_linear(m, g, &blk->gate, s->F, s->E, 0, bias);
}

static void tm_build(struct tmodel *m, struct attn_prng *g, enum attn_family fam, int variant)
{
	struct attn_stack *s = &m->s;
	int llama = fam == ATTN_FAMILY_LLAMA, bias = fam != ATTN_FAMILY_LLAMA || variant == 1;

	memset(m, 0, sizeof(*m));
	s->family = fam;
	s->n_layers = variant == 2 ? 2 : MAX_LAYERS;
	s->E = variant == WIDE ? 64 : 16;
	s->H = 4;
	s->Hkv = llama ? 2 : 4;
	s->D = variant == WIDE ? 16 : llama && variant == 1 ? 6 : 4;
	s->F = variant == WIDE ? 600 : 24; /* WIDE: the MLP in LINEAR_COLS tiles */
	s->vocab = 50;
	s->max_positions = variant == WIDE ? 256 : 128;
	s->norm_kind = llama ? ATTN_NORM_RMS : ATTN_NORM_LAYER;
	s->norm_eps = fam == ATTN_FAMILY_BERT ? 1e-12f : llama ? 1e-6f : 1e-5f;
	s->act = fam == ATTN_FAMILY_GPT2 ? ATTN_ACT_GELU_TANH
		 : fam == ATTN_FAMILY_BERT ? ATTN_ACT_GELU_ERF : ATTN_ACT_SILU;
	s->wte = tm_buf(m, g, s->vocab * s->E, 1.0f, 0.0f);
	if (!llama)
		s->wpe = tm_buf(m, g, s->max_positions * s->E, 0.5f, 0.0f);
	if (fam == ATTN_FAMILY_BERT) {
		s->type_vocab = 2;
		s->wtt = tm_buf(m, g, 2 * s->E, 0.5f, 0.0f);
		tm_norm(m, g, &s->emb_norm, 1);
		s->positions_from_ids = variant == 1; /* RoBERTa: positions past pad id 1 */
		s->pad_id = 1;
	} else {
		tm_norm(m, g, &s->final_norm, !llama);
	}
	if (llama) { /* HF's default rope init, in float: 1 / theta^(2i / D) */
		for (size_t i = 0; i < s->D / 2; i++)
			m->inv_freq[i] = 1.0f / powf(10000.0f, (float)(2 * i) / (float)s->D);
		s->inv_freq = m->inv_freq;
		s->window = variant == 1 ? 3 : 0;
		s->rope_attention_scaling = variant == 1 ? 1.25f : 0.0f;
	}
	for (size_t l = 0; l < s->n_layers; l++)
		tm_block(m, g, &m->blk[l], bias);
	/* Qwen2's layer_types: layer 0 full attention, the others windowed */
	m->blk[0].full_attention = llama && variant == 1;
	s->blocks = m->blk;
	ck_assert_int_eq(attn_stack_check(s, NULL), ATTN_OK);
}

static void tm_free(struct tmodel *m)
{
	for (size_t i = 0; i < m->n_bufs; i++)
		free(m->bufs[i]);
}

/* ---- a random run ------------------------------------------------------- */

struct trun {
	struct attn_stack_run r;
	int64_t *ids, *types;
	float *scores; /* [C, B, Hc, L, L] when r.scores_view is MASKED: tr_run's
	                  scores, which the caller copies between runs */
	float *proj;   /* [C, 3, B, Hc, L, D] when r.show_projections: the same */
	float *heads_out; /* [C, B, Hc, L, D] when r.show_head_outputs: r.head_outputs */
	size_t lengths[4], heads[4];
	uint8_t capture[MAX_LAYERS];
	size_t att_floats, out_floats;
};

/* Floats of the captured scores, [C, B, Hc, L, L] (0 without scores). */
static size_t tr_score_floats(const struct trun *t)
{
	const struct attn_stack_run *r = &t->r;
	size_t C = 0, Hc = r->heads ? r->n_heads : r->stack->H;

	for (size_t l = 0; l <= r->last_layer; l++)
		C += r->capture[l] != 0;
	return r->scores_view == ATTN_SCORES_NONE ? 0 : C * r->B * Hc * r->L * r->L;
}

/* Floats of [C, 3, B, Hc, L, D], whether or not the projections are shown. */
static size_t tr_proj_floats_of(const struct attn_stack_run *r)
{
	size_t C = 0, Hc = r->heads ? r->n_heads : r->stack->H;

	for (size_t l = 0; l <= r->last_layer; l++)
		C += r->capture[l] != 0;
	return C * 3 * r->B * Hc * r->L * r->stack->D;
}

/* Floats of the captured projections, [C, 3, B, Hc, L, D] (0 without). */
static size_t tr_proj_floats(const struct trun *t)
{
	return t->r.show_projections ? tr_proj_floats_of(&t->r) : 0;
}

/* Floats of the captured head outputs, [C, B, Hc, L, D] (0 without). */
static size_t tr_heads_floats(const struct trun *t)
{
	const struct attn_stack_run *r = &t->r;

	return r->show_head_outputs ? tr_proj_floats_of(r) / 3 : 0;
}

static void tr_build(struct trun *t, struct attn_prng *g, const struct attn_stack *s,
		     size_t B, size_t L)
{
	struct attn_stack_run *r = &t->r;
	size_t n = B * L;

	memset(t, 0, sizeof(*t));
	r->stack = s;
	r->B = B;
	r->L = L;
	t->ids = malloc(n * sizeof(int64_t));
	t->types = malloc(n * sizeof(int64_t));
	for (size_t i = 0; i < n; i++) {
		t->ids[i] = (int64_t)test_pick(g, 0, s->vocab - 1);
		if (s->positions_from_ids && test_pick(g, 0, 3) == 0)
			t->ids[i] = (int64_t)s->pad_id; /* pads inside items move the positions */
		t->types[i] = (int64_t)test_pick(g, 0, 1);
	}
	r->ids = t->ids;
	r->type_ids = s->family == ATTN_FAMILY_BERT && test_pick(g, 0, 1) ? t->types : NULL;
	if (test_pick(g, 0, 2) != 0) {
		for (size_t b = 0; b < B; b++)
			t->lengths[b] = test_pick(g, 1, L);
		r->lengths = t->lengths;
	}
	r->last_layer = test_pick(g, 0, s->n_layers - 1);
	for (size_t l = 0; l <= r->last_layer; l++)
		t->capture[l] = (uint8_t)(test_pick(g, 0, 2) != 0);
	r->capture = t->capture;
	r->weights_mode = test_pick(g, 0, 2) == 0 ? ATTN_WEIGHTS_MEAN : ATTN_WEIGHTS_PER_HEAD;
	if (test_pick(g, 0, 1)) { /* a subset of heads, in a scrambled order */
		r->n_heads = test_pick(g, 1, s->H);
		for (size_t i = 0; i < r->n_heads; i++)
			t->heads[i] = (i * 3 + 1) % s->H;
		r->heads = t->heads;
	}
	switch (test_pick(g, 0, 3)) { /* scores: half the runs, a few without weights */
	case 0:
		r->scores_view = ATTN_SCORES_MASKED;
		r->weights_mode = ATTN_WEIGHTS_NONE;
		break;
	case 1:
		r->scores_view = ATTN_SCORES_MASKED;
		break;
	default:
		break;
	}
	t->scores = calloc(tr_score_floats(t) + 1, sizeof(float));
	r->show_projections = (int)test_pick(g, 0, 1);
	t->proj = calloc(tr_proj_floats(t) + 1, sizeof(float));
	r->show_head_outputs = (int)test_pick(g, 0, 1);
	t->heads_out = calloc(tr_heads_floats(t) + 1, sizeof(float));
	r->head_outputs = r->show_head_outputs ? t->heads_out : NULL;
}

/* Runs fast (threads) or ref into fresh outputs the caller frees. */
static void tr_run(const struct trun *t, int ref, size_t threads, float **att, float **out)
{
	struct attn_stack_run r = t->r;
	size_t C = 0, Hc = r.weights_mode == ATTN_WEIGHTS_MEAN ? 1 : r.heads ? r.n_heads : r.stack->H;
	size_t bytes;
	struct attn_error err;
	enum attn_status st;
	void *ws;

	for (size_t l = 0; l <= r.last_layer; l++)
		C += r.capture[l] != 0;
	*att = calloc(C * r.B * Hc * r.L * r.L + 1, sizeof(float));
	*out = calloc(r.B * r.L * r.stack->E, sizeof(float));
	r.attentions = C && r.weights_mode != ATTN_WEIGHTS_NONE ? *att : NULL;
	r.scores = C && r.scores_view != ATTN_SCORES_NONE ? t->scores : NULL;
	r.projections = C && r.show_projections ? t->proj : NULL;
	r.out = *out;
	r.threads = threads;
	if (ref) {
		st = attn_stack_forward_ref(&r, &err);
		ck_assert_msg(st == ATTN_OK, "ref: %s", err.message);
		return;
	}
	ck_assert_int_eq(attn_stack_workspace(&r, &bytes, &err), ATTN_OK);
	ws = malloc(bytes);
	st = attn_stack_forward(&r, ws, bytes, &err);
	ck_assert_msg(st == ATTN_OK, "fast: %s", err.message);
	free(ws);
}

static size_t tr_att_floats(const struct trun *t)
{
	const struct attn_stack_run *r = &t->r;
	size_t C = 0, Hc = r->weights_mode == ATTN_WEIGHTS_MEAN ? 1
			   : r->heads ? r->n_heads : r->stack->H;

	for (size_t l = 0; l <= r->last_layer; l++)
		C += r->capture[l] != 0;
	return r->weights_mode == ATTN_WEIGHTS_NONE ? 0 : C * r->B * Hc * r->L * r->L;
}

static void tr_free(struct trun *t)
{
	free(t->ids);
	free(t->types);
	free(t->scores);
	free(t->proj);
	free(t->heads_out);
}

/* A copy of n + 1 floats of a run's buffer (freed by the caller). */
static float *tr_take(const float *x, size_t n)
{
	float *copy = malloc((n + 1) * sizeof(float));

	memcpy(copy, x, (n + 1) * sizeof(float));
	return copy;
}

/* Each per-head score row's softmax (in double; no visible key: zeros) is
 * the weights row beside it: PER_HEAD runs with scores. */
static void check_softmax_of_scores(const struct trun *t, const float *att, const float *sc,
				    int iter)
{
	size_t n = tr_score_floats(t), L = t->r.L;
	float *p = malloc(L * sizeof(float));

	for (size_t row = 0; row < n / L; row++) {
		const float *s = sc + row * L;
		double mx = -INFINITY, sum = 0;

		for (size_t j = 0; j < L; j++)
			mx = s[j] > mx ? s[j] : mx;
		for (size_t j = 0; j < L; j++)
			sum += mx == -INFINITY ? 0.0 : exp((double)s[j] - mx);
		for (size_t j = 0; j < L; j++)
			p[j] = sum > 0 ? (float)(exp((double)s[j] - mx) / sum) : 0.0f;
		test_assert_close(p, att + row * L, L, "softmax(scores)", iter);
	}
	free(p);
}

/* Each captured head's output is its weights times its v: ho [C, B, Hc, L,
 * D] against att [C, B, Hc, L, L] and v, the third of pr [C, 3, B, Hc, L, D]
 * (the key head each head reads). */
static void check_heads_are_weights_v(const struct trun *t, const float *att, const float *pr,
				      const float *ho, int iter)
{
	size_t L = t->r.L, D = t->r.stack->D, all = tr_proj_floats_of(&t->r) / 3;
	size_t Hc = t->r.heads ? t->r.n_heads : t->r.stack->H, per_c = t->r.B * Hc * L * D;
	float *want = malloc(all * sizeof(float));

	ck_assert_ptr_nonnull(want);
	for (size_t c = 0; c < all / per_c; c++)
		for (size_t bi = 0; bi < t->r.B * Hc; bi++) { /* (b, head i) of layer c */
			const float *v = pr + (3 * c + 2) * per_c + bi * L * D;
			const float *w = att + (c * t->r.B * Hc + bi) * L * L;

			for (size_t l = 0; l < L; l++)
				for (size_t d = 0; d < D; d++) {
					double acc = 0;

					for (size_t j = 0; j < L; j++)
						acc += (double)w[l * L + j] * v[j * D + d];
					want[c * per_c + (bi * L + l) * D + d] = (float)acc;
				}
		}
	test_assert_close(ho, want, all, "head outputs = weights v", iter);
	free(want);
}

/* ---- twin and threads --------------------------------------------------- */

/* Runs t fast on 1 and 2 threads (the same bits) and against the twin
 * (within tolerance); frees t and m. */
static void check_threads_and_twin(struct trun *t, struct tmodel *m, int i)
{
	float *att1, *out1, *att2, *out2, *att_ref, *out_ref, *sc1, *sc2, *pr1, *pr2, *ho1, *ho2;
	size_t n_out = t->r.B * t->r.L * m->s.E, n_sc = tr_score_floats(t), n_pr = tr_proj_floats(t);
	size_t n_ho = tr_heads_floats(t);

	tr_run(t, 0, 1, &att1, &out1);
	sc1 = tr_take(t->scores, n_sc);
	pr1 = tr_take(t->proj, n_pr);
	ho1 = tr_take(t->heads_out, n_ho);
	tr_run(t, 0, 2, &att2, &out2);
	sc2 = tr_take(t->scores, n_sc);
	pr2 = tr_take(t->proj, n_pr);
	ho2 = tr_take(t->heads_out, n_ho);
	tr_run(t, 1, 0, &att_ref, &out_ref);
	ck_assert_msg(memcmp(out1, out2, n_out * sizeof(float)) == 0, "threads change out");
	ck_assert_msg(memcmp(att1, att2, tr_att_floats(t) * sizeof(float)) == 0,
		      "threads change attentions");
	ck_assert_msg(memcmp(sc1, sc2, n_sc * sizeof(float)) == 0, "threads change scores");
	ck_assert_msg(memcmp(pr1, pr2, n_pr * sizeof(float)) == 0, "threads change projections");
	test_assert_close(pr1, t->proj, n_pr, "projections", i);
	ck_assert_msg(memcmp(ho1, ho2, n_ho * sizeof(float)) == 0, "threads change head outputs");
	test_assert_close(ho1, t->heads_out, n_ho, "head outputs", i);
	if (n_ho && n_pr && t->r.weights_mode == ATTN_WEIGHTS_PER_HEAD)
		check_heads_are_weights_v(t, att1, pr1, ho1, i);
	test_assert_close(att1, att_ref, tr_att_floats(t), "attentions", i);
	test_assert_close(sc1, t->scores, tr_score_floats(t), "scores", i);
	test_assert_close(out1, out_ref, n_out, "out", i);
	if (t->r.weights_mode == ATTN_WEIGHTS_PER_HEAD)
		check_softmax_of_scores(t, att1, sc1, i);
	free(att1), free(out1), free(att2), free(out2), free(att_ref), free(out_ref);
	free(sc1), free(sc2), free(pr1), free(pr2), free(ho1), free(ho2);
	tr_free(t);
	tm_free(m);
}

START_TEST(stack_matches_twin)
{
	struct attn_prng g;
	struct tmodel m;
	struct trun t;
	enum attn_family fam = (enum attn_family)(_i % 3);
	int variant = (_i / 3) % 3;
	size_t B, L;

	attn_prng_seed(&g, 1000 + (uint64_t)_i);
	tm_build(&m, &g, fam, variant == 1 && fam == ATTN_FAMILY_GPT2 ? 0 : variant);
	B = variant == 2 ? 3 : test_pick(&g, 1, 3);
	L = variant == 2 ? 90 : test_pick(&g, 1, 13);
	tr_build(&t, &g, &m.s, B, L);
	check_threads_and_twin(&t, &m, _i);
}
END_TEST

/* Shapes whose projections split into tiles of columns (n <= LINEAR_FEW_ROWS
 * rows), of half the columns (one LINEAR_TALL block of rows) and of several
 * row blocks (B L > LINEAR_TALL), with row steps big enough to go to
 * threads: 1 and 2 threads bit for bit, and the twin. */
START_TEST(wide_shapes_split_alike)
{
	struct attn_prng g;
	struct tmodel m;
	struct trun t;
	enum attn_family fam = (enum attn_family)(_i % 3);
	size_t B = _i < 3 ? 1 : _i < 6 ? 2 : 3, L = _i < 3 ? 60 : _i < 6 ? 150 : 200;

	attn_prng_seed(&g, 2000 + (uint64_t)_i);
	tm_build(&m, &g, fam, WIDE);
	tr_build(&t, &g, &m.s, B, L);
	t.r.last_layer = m.s.n_layers - 1;
	check_threads_and_twin(&t, &m, _i);
}
END_TEST

/* A wide run's outputs with run->cancel = flag; the status is returned. */
static enum attn_status run_with_flag(const struct trun *t, size_t threads,
				      const atomic_int *flag, float *att, float *out)
{
	struct attn_stack_run r = t->r;
	struct attn_error err;
	enum attn_status st;
	size_t bytes;
	void *ws;

	r.attentions = tr_att_floats(t) ? att : NULL;
	r.scores = tr_score_floats(t) ? t->scores : NULL;
	r.projections = tr_proj_floats(t) ? t->proj : NULL;
	r.out = out;
	r.threads = threads;
	r.cancel = flag;
	ck_assert_int_eq(attn_stack_workspace(&r, &bytes, &err), ATTN_OK);
	ws = malloc(bytes);
	st = attn_stack_forward(&r, ws, bytes, &err);
	free(ws);
	return st;
}

START_TEST(cancel_flag_stops_or_changes_nothing)
{
	struct attn_prng g;
	struct tmodel m;
	struct trun t;
	atomic_int unset = 0, set = 1;
	size_t threads = (size_t)_i + 1, n_out, n_att;
	float *att1, *out1, *att2, *out2;

	attn_prng_seed(&g, 3000 + (uint64_t)_i);
	tm_build(&m, &g, ATTN_FAMILY_GPT2, WIDE);
	tr_build(&t, &g, &m.s, 2, 150);
	t.r.last_layer = m.s.n_layers - 1;
	n_out = t.r.B * t.r.L * m.s.E;
	n_att = tr_att_floats(&t) + 1;
	att1 = calloc(n_att, sizeof(float)), out1 = calloc(n_out, sizeof(float));
	att2 = calloc(n_att, sizeof(float)), out2 = calloc(n_out, sizeof(float));
	ck_assert_int_eq(run_with_flag(&t, threads, NULL, att1, out1), ATTN_OK);
	ck_assert_int_eq(run_with_flag(&t, threads, &unset, att2, out2), ATTN_OK);
	ck_assert_msg(memcmp(out1, out2, n_out * sizeof(float)) == 0, "a flag changed out");
	ck_assert_msg(memcmp(att1, att2, n_att * sizeof(float)) == 0, "a flag changed attentions");
	ck_assert_int_eq(run_with_flag(&t, threads, &set, att2, out2), ATTN_ERR_CANCELLED);
	free(att1), free(out1), free(att2), free(out2);
	tr_free(&t);
	tm_free(&m);
}
END_TEST

/* Fills a model buffer (the test's own, behind a const pointer) with v. */
static void fill(const float *w, size_t n, float v)
{
	float *x = (float *)(uintptr_t)w;

	for (size_t i = 0; i < n; i++)
		x[i] = v;
}

/* Both passes refuse the run as overflowing its hidden state at `layer`. */
static void assert_hidden_overflow(const struct trun *t, size_t layer)
{
	struct attn_stack_run r = t->r;
	size_t n_out = r.B * r.L * r.stack->E, n_att = tr_att_floats(t) + 1, bytes;
	float *att = calloc(n_att, sizeof(float)), *out = calloc(n_out, sizeof(float));
	struct attn_error err;
	void *ws;

	r.attentions = tr_att_floats(t) ? att : NULL;
	r.scores = tr_score_floats(t) ? t->scores : NULL;
	r.projections = tr_proj_floats(t) ? t->proj : NULL;
	r.out = out;
	ck_assert_int_eq(attn_stack_workspace(&r, &bytes, &err), ATTN_OK);
	ws = malloc(bytes);
	ck_assert_int_eq(attn_stack_forward(&r, ws, bytes, &err), ATTN_ERR_RESULT_OVERFLOW);
	ck_assert_str_eq(err.field, "hidden");
	ck_assert_uint_eq(err.index, layer);
	ck_assert_int_eq(attn_stack_forward_ref(&r, &err), ATTN_ERR_RESULT_OVERFLOW);
	ck_assert_str_eq(err.field, "hidden");
	ck_assert_uint_eq(err.index, layer);
	free(ws), free(att), free(out);
}

/* Finite weights that overflow float32 on the way are refused where they
 * overflow, never answered as NaN: the final norm (index N), the last
 * layer's MLP (nothing after it would notice), an earlier layer's (before
 * the next layer's projections see infinities). gpt2, bert, llama. */
START_TEST(overflowing_weights_are_refused)
{
	struct attn_prng g;
	struct tmodel m;
	struct trun t;
	size_t N;

	attn_prng_seed(&g, 4100 + (uint64_t)_i);
	tm_build(&m, &g, _i == 0 ? ATTN_FAMILY_GPT2 : _i == 1 ? ATTN_FAMILY_BERT : ATTN_FAMILY_LLAMA,
		 0);
	tr_build(&t, &g, &m.s, 2, 5);
	N = m.s.n_layers;
	t.r.last_layer = N - 1;
	ck_assert_uint_ge(N, 2);
	if (m.s.final_norm.w != NULL) { /* bert has none */
		fill(m.s.final_norm.w, m.s.E, 3e38f);
		assert_hidden_overflow(&t, N);
	}
	fill(m.blk[N - 1].down.w, m.blk[N - 1].down.out * m.blk[N - 1].down.in, 3e38f);
	assert_hidden_overflow(&t, N - 1);
	fill(m.blk[0].down.w, m.blk[0].down.out * m.blk[0].down.in, 3e38f);
	assert_hidden_overflow(&t, 0);
	tr_free(&t);
	tm_free(&m);
}
END_TEST

START_TEST(padded_rows_match_alone)
{
	struct attn_prng g;
	struct tmodel m;
	struct trun pad, alone;
	float *att_p, *out_p, *att_a, *out_a;
	size_t L = 9, k = 5, E, Hc;

	attn_prng_seed(&g, 77 + (uint64_t)_i);
	tm_build(&m, &g, (enum attn_family)(_i % 3), _i == 3);
	E = m.s.E;
	Hc = m.s.H;
	tr_build(&pad, &g, &m.s, 2, L);
	pad.r.lengths = pad.lengths;
	pad.lengths[0] = L;
	pad.lengths[1] = k;
	pad.r.heads = NULL;
	pad.r.weights_mode = ATTN_WEIGHTS_PER_HEAD;
	pad.r.scores_view = ATTN_SCORES_NONE; /* alone's buffers are not sized for pad's */
	pad.r.show_projections = 0;
	pad.r.show_head_outputs = 0;
	pad.r.last_layer = m.s.n_layers - 1;
	memset(pad.capture, 1, sizeof(pad.capture));
	tr_build(&alone, &g, &m.s, 1, k);
	alone.r = pad.r;
	alone.r.B = 1;
	alone.r.L = k;
	alone.r.lengths = NULL;
	alone.r.ids = pad.ids + L; /* item 1's first k ids */
	alone.r.type_ids = pad.r.type_ids ? pad.types + L : NULL;
	tr_run(&pad, 0, 1, &att_p, &out_p);
	tr_run(&alone, 0, 1, &att_a, &out_a);
	test_assert_close(out_p + L * E, out_a, k * E, "padded out", _i);
	for (size_t c = 0; c < m.s.n_layers; c++)
		for (size_t h = 0; h < Hc; h++)
			for (size_t i = 0; i < k; i++) {
				/* seek to pad [c, 1, h, i, :] and alone [c, 0, h, i, :] */
				const float *p = att_p + (((c * 2 + 1) * Hc + h) * L + i) * L;
				const float *a = att_a + ((c * Hc + h) * k + i) * k;

				test_assert_close(p, a, k, "padded weights", _i);
				for (size_t j = k; j < L; j++)
					ck_assert_float_eq(p[j], 0.0f);
			}
	free(att_p), free(out_p), free(att_a), free(out_a);
	tr_free(&pad);
	tr_free(&alone); /* its own ids and types, unused: alone.r reads pad's */
	tm_free(&m);
}
END_TEST

/* ---- refusals ----------------------------------------------------------- */

static void expect(const struct attn_stack_run *r, enum attn_status want, const char *field,
		   size_t index)
{
	struct attn_error err;
	size_t bytes;
	enum attn_status st = attn_stack_workspace(r, &bytes, &err);

	ck_assert_msg(st == want, "got %s want %s (%s)", attn_status_str(st),
		      attn_status_str(want), err.message);
	ck_assert_str_eq(err.field, field);
	ck_assert_uint_eq(err.index, index);
	ck_assert_int_eq(attn_stack_forward_ref(r, &err), want);
}

START_TEST(bad_runs_are_refused)
{
	struct attn_prng g;
	struct tmodel m;
	struct trun t;
	struct attn_stack_run r;
	float att;
	size_t bytes;
	struct attn_error err;

	attn_prng_seed(&g, 5);
	tm_build(&m, &g, ATTN_FAMILY_BERT, 0);
	tr_build(&t, &g, &m.s, 2, 4);
	t.r.lengths = NULL;
	t.r.heads = NULL;
	t.r.last_layer = 0;
	t.capture[0] = 1;
	t.r.attentions = &att;
	t.r.weights_mode = ATTN_WEIGHTS_PER_HEAD;
	t.r.scores_view = ATTN_SCORES_NONE;

	r = t.r, t.ids[5] = 50;
	expect(&r, ATTN_ERR_TOKEN, "ids", 5); /* padding ids too */
	t.ids[5] = -1;
	expect(&r, ATTN_ERR_TOKEN, "ids", 5);
	t.ids[5] = 0;
	r.type_ids = t.types, t.types[6] = 2;
	expect(&r, ATTN_ERR_TOKEN, "type_ids", 6);
	t.types[6] = 1;
	r = t.r, r.L = 129;
	expect(&r, ATTN_ERR_POSITION, "ids", 128);
	m.s.positions_from_ids = 1, m.s.pad_id = 1; /* RoBERTa: 128 - 1 - 1 positions */
	r = t.r, r.L = 127;
	expect(&r, ATTN_ERR_POSITION, "ids", 126);
	m.s.positions_from_ids = 0;
	r = t.r, r.L = 0;
	expect(&r, ATTN_ERR_EMPTY, "ids", 0);
	r = t.r, r.lengths = t.lengths, t.lengths[0] = 4, t.lengths[1] = 0;
	expect(&r, ATTN_ERR_POSITION, "lengths", 1);
	t.lengths[1] = 5;
	expect(&r, ATTN_ERR_POSITION, "lengths", 1);
	r = t.r, r.heads = t.heads, r.n_heads = 2, t.heads[0] = 1, t.heads[1] = 1;
	expect(&r, ATTN_ERR_ARGUMENT, "heads", 1);
	t.heads[1] = 4;
	expect(&r, ATTN_ERR_ARGUMENT, "heads", 1);
	r = t.r, r.last_layer = 3;
	expect(&r, ATTN_ERR_ARGUMENT, "layers", 3);
	r = t.r, r.weights_mode = ATTN_WEIGHTS_NONE, r.show_projections = 0;
	r.show_head_outputs = 0;
	expect(&r, ATTN_ERR_ARGUMENT, "weights_mode", 0);
	r.show_head_outputs = 1, r.head_outputs = NULL; /* head outputs alone are too */
	ck_assert_int_eq(attn_stack_workspace(&r, &bytes, &err), ATTN_OK);
	ck_assert_int_eq(attn_stack_forward_ref(&r, &err), ATTN_ERR_ARGUMENT);
	ck_assert_str_eq(err.field, "head_outputs"); /* but need a buffer */
	ck_assert_int_eq(attn_stack_forward(&r, &att, sizeof(att), &err), ATTN_ERR_ARGUMENT);
	ck_assert_str_eq(err.field, "head_outputs");
	r.show_head_outputs = 0;
	r.show_projections = 1; /* the projections alone are something to capture */
	ck_assert_int_eq(attn_stack_workspace(&r, &bytes, &err), ATTN_OK);
	ck_assert_int_eq(attn_stack_forward_ref(&r, &err), ATTN_ERR_ARGUMENT);
	ck_assert_str_eq(err.field, "projections"); /* but need a buffer */
	ck_assert_int_eq(attn_stack_forward(&r, &att, sizeof(att), &err), ATTN_ERR_ARGUMENT);
	ck_assert_str_eq(err.field, "projections");
	r = t.r, r.scores_view = ATTN_SCORES_RAW; /* a stack keeps the masked view only */
	expect(&r, ATTN_ERR_ARGUMENT, "scores_view", 0);
	r = t.r, r.scores_view = ATTN_SCORES_MASKED, r.scores = NULL;
	ck_assert_int_eq(attn_stack_workspace(&r, &bytes, &err), ATTN_OK);
	ck_assert_int_eq(attn_stack_forward_ref(&r, &err), ATTN_ERR_ARGUMENT);
	ck_assert_str_eq(err.field, "scores");
	ck_assert_int_eq(attn_stack_forward(&r, &att, sizeof(att), &err), ATTN_ERR_ARGUMENT);
	ck_assert_str_eq(err.field, "scores");
	r = t.r, r.attentions = NULL; /* planned without it, run with it */
	ck_assert_int_eq(attn_stack_workspace(&r, &bytes, &err), ATTN_OK);
	ck_assert_int_eq(attn_stack_forward_ref(&r, &err), ATTN_ERR_ARGUMENT);
	ck_assert_str_eq(err.field, "attentions");
	ck_assert_int_eq(attn_stack_forward(&r, &att, sizeof(att), &err), ATTN_ERR_ARGUMENT);
	ck_assert_str_eq(err.field, "attentions");
	r = t.r;
	ck_assert_int_eq(attn_stack_forward(&r, &att, sizeof(att), &err), ATTN_ERR_WORKSPACE);
	tr_free(&t);
	tm_free(&m);
}
END_TEST

START_TEST(bad_stacks_are_refused)
{
	struct attn_prng g;
	struct tmodel m;
	struct attn_stack s;
	struct attn_error err;

	attn_prng_seed(&g, 6);
	tm_build(&m, &g, ATTN_FAMILY_LLAMA, 0);
	s = m.s, s.Hkv = 3;
	ck_assert_int_eq(attn_stack_check(&s, &err), ATTN_ERR_KV_HEADS);
	s = m.s, s.F = 25;
	ck_assert_int_eq(attn_stack_check(&s, &err), ATTN_ERR_SHAPE_MISMATCH);
	ck_assert_str_eq(err.field, "blocks");
	s = m.s, s.inv_freq = NULL;
	ck_assert_int_eq(attn_stack_check(&s, &err), ATTN_ERR_ROPE_DIM);
	s = m.s, s.E = (size_t)1 << 40;
	ck_assert_int_eq(attn_stack_check(&s, &err), ATTN_ERR_OVERFLOW);
	s = m.s, s.family = ATTN_FAMILY_GPT2, s.window = 2;
	ck_assert_int_eq(attn_stack_check(&s, &err), ATTN_ERR_ARGUMENT);
	s = m.s, s.positions_from_ids = 1; /* RoBERTa's positions are bert's only */
	ck_assert_int_eq(attn_stack_check(&s, &err), ATTN_ERR_ARGUMENT);
	ck_assert_str_eq(err.field, "pad_id");
	tm_free(&m);
}
END_TEST

/* B L E overflows: refused before the ids (one element here) are read. */
START_TEST(overflowing_sizes_are_refused)
{
	struct attn_prng g;
	struct tmodel m;
	struct attn_stack_run r;
	int64_t id = 0;
	size_t bytes;
	struct attn_error err;

	attn_prng_seed(&g, 7);
	tm_build(&m, &g, ATTN_FAMILY_LLAMA, 0);
	memset(&r, 0, sizeof(r));
	r.stack = &m.s;
	r.ids = &id;
	r.B = SIZE_MAX / 64;
	r.L = 16;
	ck_assert_int_eq(attn_stack_workspace(&r, &bytes, &err), ATTN_ERR_OVERFLOW);
	ck_assert_int_eq(attn_stack_forward_ref(&r, &err), ATTN_ERR_OVERFLOW);
	r.B = 1;
	r.L = (size_t)1 << 33; /* [B, H, L, L] of a captured layer */
	r.capture = (const uint8_t *)"\1";
	r.weights_mode = ATTN_WEIGHTS_PER_HEAD;
	r.attentions = (float *)&bytes;
	ck_assert_int_eq(attn_stack_workspace(&r, &bytes, &err), ATTN_ERR_OVERFLOW);
	tm_free(&m);
}
END_TEST

START_TEST(flops_count_maps_and_attention)
{
	struct attn_prng g;
	struct tmodel m;
	struct attn_stack_run r;
	double maps;

	attn_prng_seed(&g, 8);
	tm_build(&m, &g, ATTN_FAMILY_GPT2, 0);
	memset(&r, 0, sizeof(r));
	r.stack = &m.s;
	r.B = 2;
	r.L = 5;
	r.last_layer = 1; /* two layers */
	maps = 16.0 * 48 + 16.0 * 16 + 16.0 * 24 + 24.0 * 16;
	ck_assert_double_eq(attn_stack_flops(&r), 2 * (2 * 2 * 5 * maps + 4.0 * 2 * 4 * 5 * 5 * 4));
	tm_free(&m);
}
END_TEST

/* The stack's own position signal (attn_stack_positions): wpe's rows as
 * stack_embed adds them (gpt2 from row 0, RoBERTa from pad_id + 1), the
 * same bits; llama's u rotated as a query, against a double twin of
 * rotate_half at the stack's inv_freq and attention scaling (1.25 in
 * variant 1), within 1e-6: the angles are float, as torch's. */
START_TEST(positions_are_the_stacks_own)
{
	static const struct {
		enum attn_family fam;
		int variant;
		size_t first; /* wpe row of position 0 */
	} learned[] = {
	    {ATTN_FAMILY_GPT2, 0, 0}, {ATTN_FAMILY_BERT, 0, 0}, {ATTN_FAMILY_BERT, 1, 2}};
	const size_t L = 7;
	struct attn_prng g;
	struct tmodel m;
	float enc[7 * 16];
	struct attn_error err;

	attn_prng_seed(&g, 11);
	for (size_t c = 0; c < sizeof learned / sizeof learned[0]; c++) {
		tm_build(&m, &g, learned[c].fam, learned[c].variant);
		ck_assert_uint_eq(attn_stack_position_dim(&m.s), m.s.E);
		ck_assert_int_eq(attn_stack_positions(enc, &m.s, L, &err), ATTN_OK);
		ck_assert(memcmp(enc, m.s.wpe + learned[c].first * m.s.E,
				 L * m.s.E * sizeof(float)) == 0);
		ck_assert_int_eq(
		    attn_stack_positions(enc, &m.s, attn_stack_context(&m.s) + 1, &err),
		    ATTN_ERR_POSITION);
		ck_assert_int_eq(attn_stack_positions(enc, &m.s, 0, &err), ATTN_ERR_EMPTY);
		tm_free(&m);
	}
	tm_build(&m, &g, ATTN_FAMILY_LLAMA, 1); /* D = 6, scaling 1.25 */
	ck_assert_uint_eq(attn_stack_position_dim(&m.s), 6);
	ck_assert_int_eq(attn_stack_positions(enc, &m.s, L, &err), ATTN_OK);
	for (size_t l = 0; l < L; l++)
		for (size_t i = 0; i < 3; i++) {
			double u = 1.0 / sqrt(6.0), a = (double)m.inv_freq[i] * (double)l;
			double x1 = 1.25 * (u * cos(a) - u * sin(a)),
			       x2 = 1.25 * (u * cos(a) + u * sin(a));

			ck_assert_double_eq_tol(enc[l * 6 + i], x1, 1e-6);
			ck_assert_double_eq_tol(enc[l * 6 + i + 3], x2, 1e-6);
		}
	tm_free(&m);
}
END_TEST

static Suite *stack_suite(void)
{
	Suite *s = suite_create("stack");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, stack_matches_twin, 0, test_light() ? 9 : 45);
	tcase_add_loop_test(tc, wide_shapes_split_alike, 0, test_light() ? 3 : 9);
	tcase_add_loop_test(tc, padded_rows_match_alone, 0, 4);
	tcase_add_loop_test(tc, cancel_flag_stops_or_changes_nothing, 0, 2);
	tcase_add_loop_test(tc, overflowing_weights_are_refused, 0, 3);
	tcase_add_test(tc, bad_runs_are_refused);
	tcase_add_test(tc, bad_stacks_are_refused);
	tcase_add_test(tc, overflowing_sizes_are_refused);
	tcase_add_test(tc, flops_count_maps_and_attention);
	tcase_add_test(tc, positions_are_the_stacks_own);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = { .one_blas_thread = true };

	return suite_main(argc, argv, stack_suite, &opts);
}
