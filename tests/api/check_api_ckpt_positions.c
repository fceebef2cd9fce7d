/*
 * check_api_ckpt_positions.c: "positions": true on POST /v1/attention for a
 * checkpoint model, which answers its own position signal (engine/stack.h
 * attn_stack_positions, api/stack_run.c), through api_handle on the
 * built-in `mini` (gpt2) and the oracle's folders (tests/data/checkpoints/):
 *
 *   learned  gpt2 and bert: "encoding" is wpe's rows for positions
 *            0 .. L - 1, read here from the safetensors file itself
 *            (its JSON header by jansson, the floats by memcpy), not
 *            through the engine's loader: the same floats, exactly;
 *            RoBERTa's start at row pad_id + 1, BERT's token types are not
 *            in them
 *   rope     llama family: a unit vector rotated as one head's query,
 *            against a double twin of rotate_half at the config's own
 *            inverse frequencies (theta, linear scaling), within 1e-6;
 *            similarity a function of i - j alone, 1 on the diagonal
 *   both     similarity the double dot products of the rows, distance
 *            symmetric with a zero diagonal, usage.flops and
 *            --max-request-gflop counting the comparisons as a layer's,
 *            the context checked before the positions
 *   cap      API_POSITIONS_MAX_L positions shown, one more refused at
 *            /positions, on llama_f32 loaded with a context of 2048
 *            ("llama_long": no test folder's own context passes the cap)
 *
 * Tolerances as check_api_positions: an encoding within 1e-6 of its twin,
 * similarity and distance (sums of up to 128 floats' products) within
 * 1e-5 + 1e-5 |x|.
 * Ownership: what a test allocates is in the harness's arena; the folders'
 * bytes belong to the service once added (released with it).
 * Run from the repository's root (the Makefile does).
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/attention_job.h"
#include "api/checkpoint_config.h"
#include "api/handlers.h"
#include "engine/checkpoint.h"
#include "tests/lib/api_harness.h"
#include "tests/lib/api_tensor.h"
#include "tests/lib/case_files.h"
#include "tests/lib/suite_main.h"

#define ENC_ABS 1e-6
#define PAIR_ABS 1e-5
#define PAIR_REL 1e-5

#define CKPTS "tests/data/checkpoints/"
#define MINI_ST "models/mini/model.safetensors"

/* The oracle's folders the suite adds, each as the model of its name. */
static const char *const folders[] = {"bert_f32", "roberta_f32", "llama_f32", "llama_headdim",
				       "llama_long"};

/* ---- files ------------------------------------------------------------- */

/* llama_f32's config with a context of 2048 instead of 128 ("llama_long"):
 * the only test checkpoint whose context passes the positions' cap of
 * API_POSITIONS_MAX_L, so the cap, not the context, is what refuses. */
#define LONG_FROM "\"max_position_embeddings\": 128,"
#define LONG_TO "\"max_position_embeddings\": 2048,"

/* config (len bytes, taken) with LONG_FROM made LONG_TO, as a new string
 * (len updated); NULL if it has no LONG_FROM. */
static char *lengthen_context(char *config, size_t *len)
{
	char *at = config != NULL ? strstr(config, LONG_FROM) : NULL;
	size_t head = at != NULL ? (size_t)(at - config) : 0, from = strlen(LONG_FROM);
	char *out = at != NULL ? malloc(*len - from + strlen(LONG_TO) + 1) : NULL;

	if (out != NULL) {
		sprintf(out, "%.*s%s%s", (int)head, config, LONG_TO, at + from);
		*len = strlen(out);
	}
	free(config);
	return out;
}

/* One folder as server/checkpoint_dir.c loads it, read instead of mapped,
 * under name (the folder's own, or "llama_long": llama_f32 with a longer
 * context); 0, or -1 said on stderr. */
static int add_folder(const char *name)
{
	char path[256], msg[512];
	struct attn_checkpoint_config cfg;
	struct attn_st_file file = {"model.safetensors", NULL, 0};
	struct attn_checkpoint *ck = NULL;
	struct attn_error aerr;
	struct api_error err;
	size_t len = 0;
	char *config, *st;
	int rc;

	const int long_ctx = strcmp(name, "llama_long") == 0;
	const char *folder = long_ctx ? "llama_f32" : name;

	snprintf(path, sizeof path, CKPTS "%s/config.json", folder);
	config = case_slurp(path, &len);
	if (long_ctx)
		config = lengthen_context(config, &len);
	rc = config == NULL ? -1 : api_checkpoint_config(&cfg, config, len, path, msg, sizeof msg);
	free(config);
	snprintf(path, sizeof path, CKPTS "%s/model.safetensors", folder);
	st = rc == 0 ? case_slurp(path, &file.len) : NULL;
	file.bytes = (const uint8_t *)st;
	if (st == NULL || attn_checkpoint_load(&ck, &cfg, &file, 1, NULL, &aerr) != ATTN_OK) {
		fprintf(stderr,
			"check_api_ckpt_positions: cannot load %s (run from the "
			"repository's root)\n",
			path);
		free(st);
		return -1;
	}
	if (api_service_add_checkpoint(harness_service, name, ck, cfg.model_type, free, st, path,
				       &err) != 0) {
		fprintf(stderr, "check_api_ckpt_positions: %s: %s\n", name, err.message);
		return -1;
	}
	return 0;
}

/* The service of api_harness.h with `mini` and the folders. */
static int setup(void)
{
	struct api_error err;

	if (harness_setup() != 0)
		return -1;
	if (api_service_add_builtin_checkpoints(harness_service, &err) != 0) {
		fprintf(stderr, "check_api_ckpt_positions: mini: %s\n", err.message);
		harness_teardown();
		return -1;
	}
	for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++)
		if (add_folder(folders[i]) != 0) {
			harness_teardown();
			return -1;
		}
	return 0;
}

/*
 * Rows first .. first + L - 1 of the F32 tensor `name` [P, E] of a
 * safetensors file, read from its own header (8 bytes of length, then
 * JSON: {"name": {"dtype", "shape", "data_offsets": [begin, end]}}), into
 * rows [L, E] in the arena; asserts E.
 */
static float *st_rows(const char *path, const char *name, size_t first, size_t L, size_t E)
{
	size_t len = 0;
	char *bytes = harness_keep(case_slurp(path, &len));
	uint64_t hlen;
	json_t *h, *t, *shape;
	size_t begin;
	float *rows = harness_keep(malloc(L * E * sizeof(float)));

	ck_assert_uint_ge(len, 8);
	memcpy(&hlen, bytes, 8); /* little-endian, as the machine */
	h = harness_keep_json(json_loadb(bytes + 8, (size_t)hlen, 0, NULL));
	ck_assert_msg(h != NULL, "%s: the header is not JSON", path);
	t = json_object_get(h, name);
	ck_assert_msg(t != NULL, "%s has no %s", path, name);
	ck_assert_str_eq(json_string_value(json_object_get(t, "dtype")), "F32");
	shape = json_object_get(t, "shape");
	ck_assert_uint_eq(json_integer_value(json_array_get(shape, 1)), E);
	ck_assert_uint_ge(json_integer_value(json_array_get(shape, 0)), first + L);
	begin = (size_t)json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 0));
	/* seek past the header to the tensor, then to row `first` */
	memcpy(rows, bytes + 8 + hlen + begin + first * E * sizeof(float), L * E * sizeof(float));
	return rows;
}

/* ---- answers ----------------------------------------------------------- */

/* The positions of an answer, asserted of this type and shape. */
struct shown {
	struct flat enc, sim, dist;
};

static struct shown shown_of(const struct answer *a, const char *type, size_t L, size_t dim)
{
	json_t *p = harness_field(a->json, "positions");
	struct shown s = {tensor_of(harness_field(p, "encoding")),
			  tensor_of(harness_field(p, "similarity")),
			  tensor_of(harness_field(p, "distance"))};

	ck_assert_str_eq(json_string_value(harness_field(p, "type")), type);
	tensor_assert_shape("encoding", &s.enc, 2, (int)L, (int)dim);
	tensor_assert_shape("similarity", &s.sim, 2, (int)L, (int)L);
	tensor_assert_shape("distance", &s.dist, 2, (int)L, (int)L);
	return s;
}

/* similarity[i][j] the double dot product of encoding rows i and j,
 * distance[i][j] their Euclidean distance: symmetric, 0 on the diagonal. */
static void assert_compared(const struct shown *s, size_t L, size_t dim)
{
	for (size_t i = 0; i < L; i++)
		for (size_t j = 0; j < L; j++) {
			const float *a = s->enc.x + i * dim, *b = s->enc.x + j * dim;
			double dot = 0, sq = 0;

			for (size_t c = 0; c < dim; c++) {
				dot += (double)a[c] * (double)b[c];
				sq += ((double)a[c] - (double)b[c]) * ((double)a[c] - (double)b[c]);
			}
			ck_assert_msg(tensor_near(s->sim.x[i * L + j], dot, PAIR_ABS, PAIR_REL),
				      "similarity[%zu][%zu]: %.9g, want %.9g", i, j,
				      (double)s->sim.x[i * L + j], dot);
			ck_assert_msg(
			    tensor_near(s->dist.x[i * L + j], sqrt(sq), PAIR_ABS, PAIR_REL),
			    "distance[%zu][%zu]: %.9g, want %.9g", i, j,
			    (double)s->dist.x[i * L + j], sqrt(sq));
			ck_assert(s->dist.x[i * L + j] == s->dist.x[j * L + i]);
			ck_assert(s->sim.x[i * L + j] == s->sim.x[j * L + i]);
		}
	for (size_t i = 0; i < L; i++)
		ck_assert(s->dist.x[i * L + i] == 0.0f);
}

/* The encoding is these rows, float for float. */
static void assert_rows_exact(const struct shown *s, const float *want, size_t L, size_t E)
{
	for (size_t k = 0; k < L * E; k++)
		ck_assert_msg(s->enc.x[k] == want[k], "encoding[%zu][%zu]: %.9g, want %.9g", k / E,
			      k % E, (double)s->enc.x[k], (double)want[k]);
}

/* A request on model with these ids and extra fields (",\"positions\":true"). */
static struct answer ask(const char *model, const char *ids, const char *extra)
{
	return harness_attention(
	    harness_fmt("{\"model\":\"%s\",\"tokens\":%s%s}", model, ids, extra));
}

static double usage_flops(const struct answer *a)
{
	return json_number_value(harness_field(harness_field(a->json, "usage"), "flops"));
}

/* ---- learned ------------------------------------------------------------- */

/* mini (gpt2, E 128): wpe's rows, whatever the layers, heads and outputs
 * asked for; the answer's other tensors unchanged by showing them. */
START_TEST(test_mini_learned)
{
	static const char *const extras[] = {
	    ",\"positions\":true",
	    ",\"positions\":true,\"layers\":[1],\"heads\":[2],\"weights\":\"mean\"",
	    ",\"positions\":true,\"weights\":\"none\",\"output\":false",
	    ",\"positions\":true,\"layers\":\"last\",\"scores\":\"masked\",\"encoding\":\"base64\"",
	};
	const char *ids = "[5,17,300,2047,9,9]";
	const size_t L = 6, E = 128;
	const float *wpe = st_rows(MINI_ST, "wpe.weight", 0, L, E);
	struct answer plain = ask("mini", ids, "");

	harness_expect_ok(&plain);
	for (size_t k = 0; k < sizeof extras / sizeof extras[0]; k++) {
		struct answer a = ask("mini", ids, extras[k]);
		struct shown s;

		harness_expect_ok(&a);
		s = shown_of(&a, "learned", L, E);
		assert_rows_exact(&s, wpe, L, E);
		assert_compared(&s, L, E);
		if (k == 0) {
			tensor_assert_same(&plain, &a, "output", 0, 0);
			tensor_assert_same(&plain, &a, "attentions", 0, 0);
		}
	}
	ck_assert(json_object_get(plain.json, "positions") == NULL);
}
END_TEST

/* A batch shows L = its longest item's positions, once. */
START_TEST(test_mini_batch)
{
	const size_t E = 128;
	const float *wpe = st_rows(MINI_ST, "wpe.weight", 0, 4, E);
	struct answer a = ask("mini", "[[1,2,3,4],[5,6]]", ",\"positions\":true");
	struct shown s;

	harness_expect_ok(&a);
	s = shown_of(&a, "learned", 4, E);
	assert_rows_exact(&s, wpe, 4, E);
	assert_compared(&s, 4, E);
}
END_TEST

/* bert_f32 (E 32): position_embeddings' rows 0 .. L - 1, token types
 * (wtt) not in them; roberta_f32 (pad_token_id 1): rows 2 .. L + 1, where
 * RobertaEmbeddings' positions start. */
START_TEST(test_bert_learned)
{
	const size_t L = 5, E = 32;
	const float *bert = st_rows(CKPTS "bert_f32/model.safetensors",
				    "bert.embeddings.position_embeddings.weight", 0, L, E);
	const float *roberta = st_rows(CKPTS "roberta_f32/model.safetensors",
				       "roberta.embeddings.position_embeddings.weight", 2, L, E);
	struct answer b = ask("bert_f32", "[2,3,4,5,6]",
			      ",\"token_type_ids\":[0,0,1,1,1],\"positions\":true"),
		      r = ask("roberta_f32", "[0,10,11,12,2]", ",\"positions\":true");
	struct shown sb, sr;

	harness_expect_ok(&b);
	harness_expect_ok(&r);
	sb = shown_of(&b, "learned", L, E);
	sr = shown_of(&r, "learned", L, E);
	assert_rows_exact(&sb, bert, L, E);
	assert_rows_exact(&sr, roberta, L, E);
	assert_compared(&sb, L, E);
	assert_compared(&sr, L, E);
}
END_TEST

/* ---- rope ---------------------------------------------------------------- */

/* HF's default rope (rotate_half) on u = 1 / sqrt(D) at positions 0 .. L - 1:
 * inv_freq[i] = 1 / theta^(2i / D) / factor (linear scaling's factor). */
static void twin_rope(double *out /* [L, D] */, size_t L, size_t D, double theta, double factor)
{
	size_t half = D / 2;

	for (size_t l = 0; l < L; l++)
		for (size_t i = 0; i < half; i++) {
			double u = 1.0 / sqrt((double)D);
			double angle = (double)l / pow(theta, (double)(2 * i) / (double)D) / factor;

			out[l * D + i] = u * cos(angle) - u * sin(angle);
			out[l * D + i + half] = u * cos(angle) + u * sin(angle);
		}
}

/* llama_f32 (D 8, theta 1e4) and llama_headdim (head_dim 16, theta 1e3,
 * linear scaling 2): the twin's rows; rotation alone scales a score by a
 * function of i - j (R(a)^T R(b) = R(b - a)), 1 on the diagonal: these
 * configs have no attention scaling. */
START_TEST(test_llama_rope)
{
	static const struct {
		const char *model;
		size_t D;
		double theta, factor;
	} cases[] = {{"llama_f32", 8, 1e4, 1}, {"llama_headdim", 16, 1e3, 2}};
	const size_t L = 9;

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		size_t D = cases[c].D;
		struct answer a = ask(cases[c].model, "[1,2,3,4,5,6,7,8,9]",
				      ",\"positions\":true,\"layers\":[0],\"output\":false");
		double want[9 * 16];
		struct shown s;

		harness_expect_ok(&a);
		s = shown_of(&a, "rope", L, D);
		twin_rope(want, L, D, cases[c].theta, cases[c].factor);
		for (size_t k = 0; k < L * D; k++)
			ck_assert_msg(tensor_near(s.enc.x[k], want[k], ENC_ABS, 0),
				      "%s encoding[%zu][%zu]: %.9g, want %.9g", cases[c].model,
				      k / D, k % D, (double)s.enc.x[k], want[k]);
		assert_compared(&s, L, D);
		for (size_t i = 0; i < L; i++) {
			ck_assert(tensor_near(s.sim.x[i * L + i], 1.0, ENC_ABS, 0));
			for (size_t j = 0; j < i; j++)
				ck_assert_msg(tensor_near(s.sim.x[i * L + j], s.sim.x[(i - j) * L],
							  ENC_ABS, 0),
					      "%s similarity[%zu][%zu] %.9g is not that of i - j",
					      cases[c].model, i, j, (double)s.sim.x[i * L + j]);
		}
		ck_assert(s.sim.x[1] < 1.0f - 1e-3f); /* rotation does change the score */
	}
}
END_TEST

/* ---- work, limits, refusals ---------------------------------------------- */

/* usage.flops grows by the comparisons' 2.5 L^2 dim, as a layer's; asking
 * for the positions alone runs no layer and costs just that. */
START_TEST(test_usage)
{
	const char *ids = "[1,2,3,4,5,6,7]";
	const double L = 7, E = 128;
	struct answer with = ask("mini", ids, ",\"positions\":true"),
		      without = ask("mini", ids, ""),
		      alone = ask("mini", ids,
				  ",\"positions\":true,\"weights\":\"none\",\"output\":false");

	harness_expect_ok(&with);
	harness_expect_ok(&without);
	harness_expect_ok(&alone);
	ck_assert_double_eq(usage_flops(&with) - usage_flops(&without), 2.5 * L * L * E);
	ck_assert_double_eq(usage_flops(&alone), attention_positions_flops(7, 128));
}
END_TEST

static void service_free(void *svc)
{
	api_service_free(svc);
}

/* The ids 0 .. L - 1 as a JSON array, text in the arena. */
static const char *ids_text(size_t L)
{
	json_t *ids = json_array();
	char *text;

	for (size_t i = 0; i < L; i++)
		json_array_append_new(ids, json_integer((json_int_t)i));
	text = harness_keep(json_dumps(ids, JSON_COMPACT));
	json_decref(ids);
	return text;
}

/* --max-request-gflop counts the comparisons: a limit between the work of a
 * request without positions and with them takes the one, refuses the other. */
START_TEST(test_gflop_limit)
{
	const size_t L = 128;
	const char *ids = ids_text(L);
	struct api_limits tight = harness_limits;
	struct api_service *svc;
	struct api_error err;
	struct answer without, with;
	const char *req_without, *req_with;
	double cells = 2.0 * 4 * L * L; /* mini: 2 layers, 4 heads */

	req_without = harness_fmt("{\"model\":\"mini\",\"tokens\":%s,\"weights\":\"none\"}", ids);
	req_with = harness_fmt("{\"model\":\"mini\",\"tokens\":%s,\"weights\":\"none\","
			       "\"positions\":true}",
			       ids);
	without = harness_attention(req_without);
	harness_expect_ok(&without);
	tight.max_request_gflop =
	    (api_work(usage_flops(&without), cells) + attention_positions_flops(L, 128) / 2) / 1e9;
	svc = api_service_new(&tight);
	ck_assert_ptr_nonnull(svc);
	harness_defer(service_free, svc);
	ck_assert_int_eq(api_service_add_builtin_checkpoints(svc, &err), 0);
	without = harness_run_request(svc, API_ROUTE_ATTENTION, NULL, req_without,
				      strlen(req_without), HARNESS_RESPONSE_MAX);
	with = harness_run_request(svc, API_ROUTE_ATTENTION, NULL, req_with, strlen(req_with),
				   HARNESS_RESPONSE_MAX);
	harness_keep(without.text);
	harness_keep(with.text);
	harness_keep_json(without.json);
	harness_keep_json(with.json);
	ck_assert_int_eq(without.status, 200);
	harness_expect_error(&with, 422, "request_too_expensive", "");
}
END_TEST

/* The positions alone run no layer, so they are planned without one: a
 * memory limit that the stack's workspace and output would pass takes them
 * (mini, L = 128: the positions 0.66 MB in base64, 1.5 MB with what a run
 * needs), and refuses the same request asking for a layer's mean weights.
 * Their time is compute's, as a layer's positions are. */
START_TEST(test_alone_planned_alone)
{
	const char *ids = ids_text(128);
	struct api_limits tight = harness_limits;
	struct api_service *svc;
	struct api_error err;
	struct answer alone, mean;
	const char *req_alone, *req_mean;

	tight.max_request_bytes = (size_t)1 << 20;
	svc = api_service_new(&tight);
	ck_assert_ptr_nonnull(svc);
	harness_defer(service_free, svc);
	ck_assert_int_eq(api_service_add_builtin_checkpoints(svc, &err), 0);
	req_alone = harness_fmt("{\"model\":\"mini\",\"tokens\":%s,\"positions\":true,"
				"\"weights\":\"none\",\"output\":false,\"encoding\":\"base64\"}",
				ids);
	req_mean = harness_fmt("{\"model\":\"mini\",\"tokens\":%s,\"positions\":true,"
			       "\"weights\":\"mean\",\"output\":false,\"encoding\":\"base64\"}",
			       ids);
	alone = harness_run_request(svc, API_ROUTE_ATTENTION, NULL, req_alone, strlen(req_alone),
				    HARNESS_RESPONSE_MAX);
	mean = harness_run_request(svc, API_ROUTE_ATTENTION, NULL, req_mean, strlen(req_mean),
				   HARNESS_RESPONSE_MAX);
	harness_keep(alone.text);
	harness_keep(mean.text);
	harness_keep_json(alone.json);
	harness_keep_json(mean.json);
	harness_expect_ok(&alone);
	ck_assert_double_eq(usage_flops(&alone), attention_positions_flops(128, 128));
	ck_assert(json_number_value(harness_field(harness_field(alone.json, "usage"),
						  "milliseconds")) > 0.0);
	harness_expect_error(&mean, 422, "request_too_large", "");
}
END_TEST

/* A non-boolean is a type error at /positions; a text past the context is
 * refused at the input before the positions are looked at (wpe has no row
 * for it); false shows nothing. API_POSITIONS_MAX_L (1024) is past every
 * context here: check_api_positions tries it on a layer. */
START_TEST(test_refusals)
{
	static const char *const not_bool[] = {"1", "\"true\"", "null", "[true]"};
	json_t *ids = json_array();
	struct answer past, off;

	for (size_t k = 0; k < sizeof not_bool / sizeof not_bool[0]; k++) {
		struct answer a =
		    ask("mini", "[1,2]", harness_fmt(",\"positions\":%s", not_bool[k]));

		harness_expect_error(&a, 422, "invalid_type", "/positions");
	}
	for (size_t i = 0; i < 129; i++)
		json_array_append_new(ids, json_integer(1));
	past = harness_attention_json(
	    json_pack("{s:s, s:o, s:b}", "model", "mini", "tokens", ids, "positions", 1));
	harness_expect_error(&past, 422, "position_out_of_range", "/tokens");
	past =
	    ask("bert_f32", "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]", ",\"positions\":true");
	harness_expect_error(&past, 422, "position_out_of_range", "/tokens");
	off = ask("llama_f32", "[1,2]", ",\"positions\":false");
	harness_expect_ok(&off);
	ck_assert(json_object_get(off.json, "positions") == NULL);
}
END_TEST

/* ids: a JSON array of n token ids, 1 each. */
static json_t *ones(size_t n)
{
	json_t *ids = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(ids, json_integer(1));
	return ids;
}

/* A context past the cap: API_POSITIONS_MAX_L positions are shown, one more
 * is refused at /positions (not at /tokens: the context allows it), and the
 * same text without positions is answered. */
START_TEST(test_cap_on_a_checkpoint)
{
	const size_t cap = API_POSITIONS_MAX_L;
	struct answer at, past, without;
	json_t *enc, *sim;

	at = harness_attention_json(json_pack("{s:s, s:o, s:b, s:s, s:b}", "model", "llama_long",
					      "tokens", ones(cap), "positions", 1, "weights",
					      "none", "output", 0));
	harness_expect_ok(&at);
	enc = json_object_get(harness_field(at.json, "positions"), "encoding");
	sim = json_object_get(harness_field(at.json, "positions"), "similarity");
	ck_assert_uint_eq(json_array_size(enc), cap);
	ck_assert_uint_eq(json_array_size(sim), cap);
	ck_assert_uint_eq(json_array_size(json_array_get(sim, cap - 1)), cap);

	past = harness_attention_json(json_pack("{s:s, s:o, s:b, s:s, s:b}", "model", "llama_long",
						"tokens", ones(cap + 1), "positions", 1, "weights",
						"none", "output", 0));
	harness_expect_error(&past, 422, "invalid_value", "/positions");
	without = harness_attention_json(json_pack("{s:s, s:o, s:s}", "model", "llama_long",
						   "tokens", ones(cap + 1), "weights", "none"));
	harness_expect_ok(&without);
	ck_assert(json_object_get(without.json, "positions") == NULL);
}
END_TEST

static Suite *ckpt_positions_suite(void)
{
	Suite *s = suite_create("api_ckpt_positions");
	TCase *tc = harness_tcase(s, "ckpt_positions", 60);

	tcase_add_test(tc, test_mini_learned);
	tcase_add_test(tc, test_mini_batch);
	tcase_add_test(tc, test_bert_learned);
	tcase_add_test(tc, test_llama_rope);
	tcase_add_test(tc, test_usage);
	tcase_add_test(tc, test_gflop_limit);
	tcase_add_test(tc, test_alone_planned_alone);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_cap_on_a_checkpoint);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .setup = setup,
	    .teardown = harness_teardown,
	};

	return suite_main(argc, argv, ckpt_positions_suite, &opts);
}
