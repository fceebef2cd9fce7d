/*
 * check_api_positions.c: "positions": true on POST /v1/attention, the
 * positional encoding itself (api/attention_positions.c), through api_handle
 * on the built-in models (api_harness.h), against naive twins in double that
 * transcribe the Korean tutorial's numpy (seeds/004, lines 66-99):
 *
 *   sinusoidal_position_encoding   pe[p, 2i] = sin(p * exp(2i * -(ln theta / d))),
 *                                  pe[p, 2i + 1] = cos(the same)
 *   apply_rope                     pairs (2i, 2i + 1) rotated by p * theta^(-2i / d);
 *                                  "half" rotates (i, i + R/2), as Llama's rotate_half
 *
 * and the answer's other two tensors from the twin's rows: similarity (dot
 * products) and distance (Euclidean norms of differences).
 *
 * Tolerances: the engine computes each angle in double and stores float, so
 * an encoding is within 1e-6 of the twin's; similarity and distance, sums of
 * up to 512 such floats, within 1e-5 + 1e-5 |x|.
 * Ownership: whatever a test allocates is in the harness's arena.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/attention_job.h"
#include "tests/lib/api_harness.h"
#include "tests/lib/api_tensor.h"
#include "tests/lib/suite_main.h"

#define ENC_ABS 1e-6
#define PAIR_ABS 1e-5
#define PAIR_REL 1e-5

/*
 * The seed's own example, sinusoidal_position_encoding(max_len=10, d_model=16),
 * which prints ||pe[0] - pe[1]|| as 1.015 and ||pe[0] - pe[9]|| as 2.929. Made
 * with /usr/bin/python3 and numpy 1.24.2 by running the seed's function as written
 * and printing repr(np.linalg.norm(pe[0] - pe[1])) and (pe[0] - pe[9]).
 */
#define SEED_NORM_0_1 1.0147253387124024
#define SEED_NORM_0_9 2.929467065742468

/* ---- the twins ----------------------------------------------------------- */

/* The parameters a request gives, as the twins read them. */
struct pos_params {
	double theta, scaling;
	double offset;
	const double *list; /* [L] explicit positions, or NULL */
	size_t rotary;      /* 0: D */
	int half;           /* rope style "half" */
};

static double twin_position(const struct pos_params *pp, size_t l)
{
	double p = pp->list ? pp->list[l] : pp->offset + (double)l;

	return p / (pp->scaling > 0 ? pp->scaling : 1.0);
}

/* sinusoidal_position_encoding, one row of d: div_term = exp(2i * -(ln theta / d)). */
static void twin_sinusoidal(double *pe /* [L, d] */, size_t L, size_t d,
			    const struct pos_params *pp)
{
	for (size_t l = 0; l < L; l++)
		for (size_t i = 0; 2 * i < d; i++) {
			double angle = twin_position(pp, l) *
				       exp((double)(2 * i) * -(log(pp->theta) / (double)d));

			pe[l * d + 2 * i] = sin(angle);
			if (2 * i + 1 < d)
				pe[l * d + 2 * i + 1] = cos(angle);
		}
}

/* apply_rope on u = 1 / sqrt(d) at each position: freqs = 1 / theta^(arange(0, R, 2) / R). */
static void twin_rope(double *out /* [L, d] */, size_t L, size_t d, const struct pos_params *pp)
{
	size_t R = pp->rotary ? pp->rotary : d, half = R / 2;

	for (size_t l = 0; l < L; l++) {
		double *x = out + l * d;

		for (size_t c = 0; c < d; c++)
			x[c] = 1.0 / sqrt((double)d);
		for (size_t i = 0; i < half; i++) {
			double freq = 1.0 / pow(pp->theta, (double)(2 * i) / (double)R);
			double angle = twin_position(pp, l) * freq;
			size_t a = pp->half ? i : 2 * i, b = pp->half ? i + half : 2 * i + 1;
			double xa = x[a], xb = x[b];

			x[a] = xa * cos(angle) - xb * sin(angle);
			x[b] = xa * sin(angle) + xb * cos(angle);
		}
	}
}

/* The answer's positions against a twin's encoding: all three tensors. */
static void assert_positions(const struct answer *a, const char *type, const double *enc,
			     size_t L, size_t d)
{
	json_t *p = harness_field(a->json, "positions");
	struct flat e = tensor_of(harness_field(p, "encoding"));
	struct flat s = tensor_of(harness_field(p, "similarity"));
	struct flat dist = tensor_of(harness_field(p, "distance"));

	ck_assert_str_eq(json_string_value(harness_field(p, "type")), type);
	tensor_assert_shape("encoding", &e, 2, (int)L, (int)d);
	tensor_assert_shape("similarity", &s, 2, (int)L, (int)L);
	tensor_assert_shape("distance", &dist, 2, (int)L, (int)L);
	for (size_t k = 0; k < L * d; k++)
		ck_assert_msg(tensor_near(e.x[k], enc[k], ENC_ABS, 0), "encoding[%zu][%zu]: %.9g, want %.9g",
			      k / d, k % d, (double)e.x[k], enc[k]);
	for (size_t i = 0; i < L; i++)
		for (size_t j = 0; j < L; j++) {
			double dot = 0, sq = 0;

			for (size_t c = 0; c < d; c++) {
				dot += enc[i * d + c] * enc[j * d + c];
				sq += (enc[i * d + c] - enc[j * d + c]) * (enc[i * d + c] - enc[j * d + c]);
			}
			ck_assert_msg(tensor_near(s.x[i * L + j], dot, PAIR_ABS, PAIR_REL),
				      "similarity[%zu][%zu]: %.9g, want %.9g", i, j,
				      (double)s.x[i * L + j], dot);
			ck_assert_msg(tensor_near(dist.x[i * L + j], sqrt(sq), PAIR_ABS, PAIR_REL),
				      "distance[%zu][%zu]: %.9g, want %.9g", i, j,
				      (double)dist.x[i * L + j], sqrt(sq));
		}
}

/* Five tokens on the named model with this positional field. */
static struct answer five_tokens(const char *model, const char *positional)
{
	return harness_attention(harness_fmt("{\"model\":\"%s\",\"tokens\":[\"a\",\"b\",\"c\",\"d\",\"e\"],"
					     "\"weights\":\"none\",\"positional\":%s,\"positions\":true}",
					     model, positional));
}

/* ---- sinusoidal ----------------------------------------------------------- */

/* tiny (E = 8): defaults, theta and offset, scaling and explicit positions. */
START_TEST(test_sinusoidal_twin)
{
	static const double list[5] = {0, 1.5, 4, 9, 2};
	static const struct {
		const char *positional;
		struct pos_params pp;
	} cases[] = {
	    {"\"sinusoidal\"", {10000, 1, 0, NULL, 0, 0}},
	    {"{\"type\":\"sinusoidal\",\"theta\":500,\"offset\":3}", {500, 1, 3, NULL, 0, 0}},
	    {"{\"type\":\"sinusoidal\",\"scaling\":2,\"positions\":[0,1.5,4,9,2]}",
	     {10000, 2, 0, list, 0, 0}},
	};

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct answer a = five_tokens("tiny", cases[c].positional);
		double pe[5 * 8];

		harness_expect_ok(&a);
		twin_sinusoidal(pe, 5, 8, &cases[c].pp);
		assert_positions(&a, "sinusoidal", pe, 5, 8);
	}
}
END_TEST

/* The seed's example: max_len 10, d_model 16 (an inline model of that width),
 * its two printed norms, and its point: position 1 is nearer 0 than 9 is. */
START_TEST(test_seed_example)
{
	struct pos_params pp = {10000, 1, 0, NULL, 0, 0};
	double pe[10 * 16];
	float zeros[10 * 16] = {0};
	struct answer a = harness_attention_json(
	    json_pack("{s:{s:i, s:i}, s:o, s:s, s:b, s:s}", "model", "d_model", 16, "num_heads", 2,
		      "embeddings", tensor_json_matrix(zeros, 10, 16), "positional", "sinusoidal",
		      "positions", 1, "weights", "none"));
	struct flat dist;
	char printed[16];

	harness_expect_ok(&a);
	twin_sinusoidal(pe, 10, 16, &pp);
	assert_positions(&a, "sinusoidal", pe, 10, 16);
	dist = tensor_of(harness_field(harness_field(a.json, "positions"), "distance"));
	ck_assert_msg(tensor_near(dist.x[1], SEED_NORM_0_1, PAIR_ABS, 0), "||pe[0] - pe[1]|| %.9g",
		      (double)dist.x[1]);
	ck_assert_msg(tensor_near(dist.x[9], SEED_NORM_0_9, PAIR_ABS, 0), "||pe[0] - pe[9]|| %.9g",
		      (double)dist.x[9]);
	snprintf(printed, sizeof printed, "%.3f %.3f", (double)dist.x[1], (double)dist.x[9]);
	ck_assert_str_eq(printed, "1.015 2.929"); /* as the tutorial prints them */
	ck_assert(dist.x[1] < dist.x[9]);
	ck_assert(dist.x[10 * 9 + 9] == 0.0f && dist.x[9] == dist.x[10 * 9]);
}
END_TEST

/* ---- rope ----------------------------------------------------------------- */

/* base (D = 64): the seed's interleaved pairs; half style on part of the head
 * with theta, scaling and offset; explicit positions. */
START_TEST(test_rope_twin)
{
	static const double list[5] = {3, 0, 7.5, 100, 1};
	static const struct {
		const char *positional;
		struct pos_params pp;
	} cases[] = {
	    {"\"rope\"", {10000, 1, 0, NULL, 0, 0}},
	    {"{\"type\":\"rope\",\"style\":\"half\",\"rotary_dim\":32,\"theta\":500,"
	     "\"scaling\":2,\"offset\":7}",
	     {500, 2, 7, NULL, 32, 1}},
	    {"{\"type\":\"rope\",\"positions\":[3,0,7.5,100,1]}", {10000, 1, 0, list, 0, 0}},
	};

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct answer a = five_tokens("base", cases[c].positional);
		double u[5 * 64];

		harness_expect_ok(&a);
		twin_rope(u, 5, 64, &cases[c].pp);
		assert_positions(&a, "rope", u, 5, 64);
	}
}
END_TEST

/* Rotation alone scales a score by a function of i - j only: equal along each
 * diagonal, 1 on the main one, symmetric, and unmoved by an offset. */
START_TEST(test_rope_relative)
{
	const char *words = "\"a b c d e f g h i j k l\"";
	struct answer a = harness_attention(harness_fmt(
	    "{\"model\":\"base\",\"text\":%s,\"weights\":\"none\",\"positional\":\"rope\","
	    "\"positions\":true}", words));
	struct answer far = harness_attention(harness_fmt(
	    "{\"model\":\"base\",\"text\":%s,\"weights\":\"none\",\"positional\":{\"type\":"
	    "\"rope\",\"offset\":1000},\"positions\":true}", words));
	struct flat s, f;
	const size_t L = 12;

	harness_expect_ok(&a);
	harness_expect_ok(&far);
	s = tensor_of(harness_field(harness_field(a.json, "positions"), "similarity"));
	f = tensor_of(harness_field(harness_field(far.json, "positions"), "similarity"));
	tensor_assert_shape("similarity", &s, 2, (int)L, (int)L);
	for (size_t i = 0; i < L; i++)
		for (size_t j = 0; j < L; j++) {
			float x = s.x[i * L + j];

			ck_assert_msg(tensor_near(x, s.x[(i > j ? i - j : 0) * L + (i > j ? 0 : j - i)],
						  PAIR_ABS, PAIR_REL),
				      "similarity[%zu][%zu] %.9g is not that of i - j", i, j, (double)x);
			ck_assert(tensor_near(x, s.x[j * L + i], PAIR_ABS, PAIR_REL));
			ck_assert(tensor_near(x, f.x[i * L + j], PAIR_ABS, PAIR_REL));
		}
	for (size_t i = 0; i < L; i++)
		ck_assert(tensor_near(s.x[i * L + i], 1.0, PAIR_ABS, 0));
	ck_assert(s.x[1] < 1.0f - 1e-3f); /* rotation does change the score */
}
END_TEST

/* ---- shapes, encodings, refusals ------------------------------------------- */

/* A batch's positions are [Lq, dim], Lq the longest item; the same for each. */
START_TEST(test_batch)
{
	struct answer b = harness_tiny_batch(",\"positional\":\"rope\",\"positions\":true");
	struct answer r = harness_attention(TINY "\"embeddings\":[" X3 ",[" R3 "]],"
					    "\"positional\":\"sinusoidal\",\"positions\":true}");
	struct pos_params pp = {10000, 1, 0, NULL, 0, 0};
	double u[3 * 4], pe[3 * 8];

	harness_expect_ok(&b);
	harness_expect_ok(&r);
	twin_rope(u, 3, 4, &pp);
	assert_positions(&b, "rope", u, 3, 4);
	twin_sinusoidal(pe, 3, 8, &pp);
	assert_positions(&r, "sinusoidal", pe, 3, 8);
}
END_TEST

static void assert_bits_equal(const char *what, const struct flat *text, const struct flat *b64)
{
	ck_assert_msg(text->n == b64->n && text->rank == b64->rank &&
			  memcmp(text->shape, b64->shape, text->rank * sizeof(size_t)) == 0,
		      "%s: shapes differ", what);
	for (size_t k = 0; k < text->n; k++)
		ck_assert_msg(text->x[k] == b64->x[k], "%s[%zu]: text %.9g, base64 %.9g", what, k,
			      (double)text->x[k], (double)b64->x[k]);
}

/* "encoding": "base64" writes the positions' tensors as base64 too, the same floats. */
START_TEST(test_base64)
{
	static const char *const keys[] = {"encoding", "similarity", "distance"};
	const char *opts = ",\"positional\":\"sinusoidal\",\"positions\":true";
	struct answer t = harness_tiny3(opts),
		      b = harness_tiny3(harness_fmt("%s,\"encoding\":\"base64\"", opts));

	harness_expect_ok(&t);
	harness_expect_ok(&b);
	for (size_t k = 0; k < 3; k++) {
		json_t *tb = harness_field(harness_field(b.json, "positions"), keys[k]);
		struct flat x = tensor_of(harness_field(harness_field(t.json, "positions"), keys[k]));
		struct flat y = tensor_of(tb);

		ck_assert_msg(json_is_object(tb) && json_object_get(tb, "base64") != NULL,
			      "%s is not base64", keys[k]);
		assert_bits_equal(keys[k], &x, &y);
	}
}
END_TEST

/* Without the field, or false: no positions, and the same answer. */
START_TEST(test_default_off)
{
	struct answer a = harness_tiny3(",\"positional\":\"rope\""),
		      f = harness_tiny3(",\"positional\":\"rope\",\"positions\":false"),
		      t = harness_tiny3(",\"positional\":\"rope\",\"positions\":true");

	harness_expect_ok(&a);
	harness_expect_ok(&f);
	harness_expect_ok(&t);
	ck_assert(json_object_get(a.json, "positions") == NULL);
	ck_assert(json_object_get(f.json, "positions") == NULL);
	tensor_assert_same(&a, &f, "output", 0, 0);
	tensor_assert_same(&a, &t, "output", 0, 0); /* showing them changes nothing */
	tensor_assert_same(&a, &t, "weights", 0, 0);
}
END_TEST

/* none has nothing to show, ALiBi a bias and no encoding; a non-boolean is a
 * type error, a string one with a hint at "positional". */
START_TEST(test_refusals)
{
	static const char *const no_encoding[] = {
	    ",\"positions\":true",
	    ",\"positional\":\"none\",\"positions\":true",
	    ",\"positional\":{\"type\":\"none\"},\"positions\":true",
	    ",\"positional\":\"alibi\",\"positions\":true",
	    ",\"positional\":{\"type\":\"alibi\",\"offset\":2},\"positions\":true",
	};
	static const char *const not_bool[] = {
	    ",\"positional\":\"rope\",\"positions\":1",
	    ",\"positional\":\"rope\",\"positions\":\"true\"",
	    ",\"positional\":\"rope\",\"positions\":null",
	    ",\"positional\":\"rope\",\"positions\":[true]",
	};
	struct answer alibi = harness_tiny3(no_encoding[3]), none = harness_tiny3(no_encoding[0]);
	/* "positions" taken for "positional": the hint names the field that picks */
	struct answer misread = harness_tiny3(",\"positions\":\"sinusoidal\"");

	for (size_t k = 0; k < sizeof no_encoding / sizeof no_encoding[0]; k++) {
		struct answer a = harness_tiny3(no_encoding[k]);

		harness_expect_error(&a, 422, "invalid_value", "/positions");
	}
	harness_expect_message(&alibi, "bias");
	harness_expect_message(&none, "none");
	for (size_t k = 0; k < sizeof not_bool / sizeof not_bool[0]; k++) {
		struct answer a = harness_tiny3(not_bool[k]);

		harness_expect_error(&a, 422, "invalid_type", "/positions");
	}
	harness_expect_error(&misread, 422, "invalid_type", "/positions");
	harness_expect_message(&misread, "the encoding is chosen by \"positional\": \"sinusoidal\"");
}
END_TEST

/* usage.flops of an answer. */
static double usage_flops(const struct answer *a)
{
	return json_number_value(json_object_get(json_object_get(a->json, "usage"), "flops"));
}

/* Their comparisons take L^2 dim plain operations, so positions are shown
 * for at most API_POSITIONS_MAX_L query positions (refused past it, at
 * /positions, before anything is computed), and their work is in the
 * answer's usage: 2.5 L^2 dim FLOPs more than the same request without. */
START_TEST(test_cap_and_usage)
{
	const size_t L = API_POSITIONS_MAX_L;
	json_t *ids = json_array(), *req;
	struct answer with, without, past;

	for (size_t i = 0; i < L; i++)
		json_array_append_new(ids, json_integer((json_int_t)(i % 64)));
	req = json_pack("{s:s, s:O, s:s, s:s, s:b}", "model", "tiny", "tokens", ids, "weights",
			"none", "positional", "sinusoidal", "positions", 1);
	with = harness_attention_json(req);
	req = json_pack("{s:s, s:O, s:s, s:s}", "model", "tiny", "tokens", ids, "weights", "none",
			"positional", "sinusoidal");
	without = harness_attention_json(req);
	json_array_append_new(ids, json_integer(0));
	req = json_pack("{s:s, s:o, s:s, s:s, s:b}", "model", "tiny", "tokens", ids, "weights",
			"none", "positional", "sinusoidal", "positions", 1);
	past = harness_attention_json(req);
	harness_expect_ok(&with);
	harness_expect_ok(&without);
	ck_assert_double_eq(usage_flops(&with) - usage_flops(&without),
			    2.5 * (double)L * (double)L * 8.0);
	harness_expect_error(&past, 422, "invalid_value", "/positions");
	ck_assert_ptr_nonnull(strstr(past.text, "at most 1024"));
}
END_TEST

static Suite *positions_suite(void)
{
	Suite *s = suite_create("api_positions");
	TCase *tc = harness_tcase(s, "positions", 60);

	tcase_add_test(tc, test_sinusoidal_twin);
	tcase_add_test(tc, test_seed_example);
	tcase_add_test(tc, test_rope_twin);
	tcase_add_test(tc, test_rope_relative);
	tcase_add_test(tc, test_batch);
	tcase_add_test(tc, test_base64);
	tcase_add_test(tc, test_default_off);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_cap_and_usage);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .setup = harness_setup,
	    .teardown = harness_teardown,
	};

	return suite_main(argc, argv, positions_suite, &opts);
}
