/*
 * check_safetensors_fixtures.c: real safetensors files through the loader.
 *
 *   fixtures    tests/data/fixtures/safetensors/NAME.{safetensors,json}, written by
 *               PyTorch (make_safetensors.py): the tensors equal the JSON's
 *               exactly, attn_mha_forward and attn_mha_forward_ref reproduce
 *               the expected output and per-head weights within
 *               |a - b| <= 1e-5 + 1e-4 |b|, and every proper prefix of each
 *               file fails as TRUNCATED
 *   embed_name  the Qwen-style fixture, whose embedding table sits at
 *               model.embed_tokens.weight beside model.layers.0.self_attn.,
 *               loaded with embed_name: the table equals the file's bytes
 * Fixtures are found under $ATTN_FIXTURES, default tests/data/fixtures (make test
 * runs from the repo root). Every buffer handed to the loader is malloc'd at
 * its exact length, so a read past its end is an ASan or valgrind error.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/mha.h"
#include "engine/model.h"
#include "engine/safetensors.h"
#include "tests/lib/st_util.h"
#include "tests/lib/suite_main.h"

#define TOL_ABS 1e-5
#define TOL_REL 1e-4

/* ---- fixtures ---------------------------------------------------------- */

static const char *const fixture_names[] = {
    "mha_f32", "mha_f16", "mha_bf16", "llama_gqa_f32", "qwen_prefixed_bf16",
};

/* The first failure of one fixture, asserted after everything is freed. */
struct verdict {
	int failed;
	char msg[512];
};

static void note_fail(struct verdict *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note_fail(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (v->failed)
		return;
	v->failed = 1;
	va_start(ap, fmt);
	vsnprintf(v->msg, sizeof(v->msg), fmt, ap);
	va_end(ap);
}

static void fixture_path(char *out, size_t cap, const char *name, const char *ext)
{
	const char *dir = getenv("ATTN_FIXTURES");

	snprintf(out, cap, "%s/safetensors/%s%s", dir != NULL && dir[0] ? dir : "tests/data/fixtures",
		 name, ext);
}

/* The whole file, malloc'd at its exact length, or NULL. */
static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (fp == NULL)
		return NULL;
	if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) > 0 && fseek(fp, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n);
		if (buf != NULL && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(fp);
	return buf;
}

/* The numbers of a nested JSON array appended to out[*n, cap); -1 on a mismatch. */
static int flatten(json_t *a, float *out, size_t cap, size_t *n)
{
	size_t i;
	json_t *v;

	if (json_is_number(a)) {
		if (*n >= cap)
			return -1;
		out[(*n)++] = (float)json_number_value(a);
		return 0;
	}
	if (!json_is_array(a))
		return -1;
	json_array_foreach(a, i, v)
	{
		if (flatten(v, out, cap, n) != 0)
			return -1;
	}
	return 0;
}

/* A JSON array of exactly n numbers (nested any way) as floats, or NULL. */
static float *json_floats(json_t *a, size_t n)
{
	float *x = malloc((n ? n : 1) * sizeof(float));
	size_t got = 0;

	if (x != NULL && (flatten(a, x, n, &got) != 0 || got != n)) {
		free(x);
		x = NULL;
	}
	return x;
}

/* Where a fixture tensor (name without prefix) lives in the model, and its size. */
static const float *model_tensor(const struct attn_model *m, const char *name, size_t *n)
{
	size_t E = m->E, qd = m->H * m->D, kvd = m->Hkv * m->D, rows = qd + 2 * kvd;
	const struct {
		const char *name;
		const float *at;
		size_t n;
	} map[] = {
	    {"in_proj_weight", m->w_qkv, rows * E},
	    {"in_proj_bias", m->b_qkv, rows},
	    {"out_proj.weight", m->w_o, E * qd},
	    {"out_proj.bias", m->b_o, E},
	    {"q_proj.weight", m->w_qkv, qd * E},
	    {"k_proj.weight", m->w_qkv + qd * E, kvd * E},
	    {"v_proj.weight", m->w_qkv + (qd + kvd) * E, kvd * E},
	    {"o_proj.weight", m->w_o, E * qd},
	    {"q_proj.bias", m->b_qkv, qd},
	    {"k_proj.bias", m->b_qkv ? m->b_qkv + qd : NULL, kvd},
	    {"v_proj.bias", m->b_qkv ? m->b_qkv + qd + kvd : NULL, kvd},
	    {"o_proj.bias", m->b_o, E},
	    {"embed_tokens.weight", m->embed, m->vocab * E},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (strcmp(map[i].name, name) == 0) {
			*n = map[i].n;
			return map[i].at;
		}
	}
	return NULL;
}

/* vocab_from_file: the table came by embed_name, so check_embed checks vocab. */
static void check_config(struct verdict *v, const char *fx, json_t *doc, const struct attn_model *m,
			 int vocab_from_file)
{
	json_int_t hkv = json_integer_value(json_object_get(doc, "num_kv_heads"));
	json_int_t E = json_integer_value(json_object_get(doc, "embed_dim"));
	json_int_t vocab = json_integer_value(json_object_get(doc, "vocab"));
	int bias = json_is_true(json_object_get(doc, "bias"));

	if ((json_int_t)m->E != E || (json_int_t)m->Hkv != hkv ||
	    (!vocab_from_file && (json_int_t)m->vocab != vocab) || (m->b_qkv != NULL) != bias ||
	    (m->b_o != NULL) != bias || m->source != ATTN_SOURCE_SAFETENSORS)
		note_fail(v, "%s: model E %zu Hkv %zu vocab %zu bias %d, want %lld %lld %lld %d",
			  fx, m->E, m->Hkv, m->vocab, m->b_qkv != NULL, (long long)E,
			  (long long)hkv, (long long)vocab, bias);
}

/* Every tensor of the JSON equals the model's copy exactly; an absent o bias is 0. */
static void check_tensors(struct verdict *v, const char *fx, json_t *tensors,
			  const struct attn_model *m)
{
	const char *name;
	json_t *values;
	int has_o_bias = 0;

	json_object_foreach(tensors, name, values)
	{
		size_t n = 0;
		const float *at = model_tensor(m, name, &n);
		float *want = at != NULL ? json_floats(values, n) : NULL;

		has_o_bias |=
		    strcmp(name, "out_proj.bias") == 0 || strcmp(name, "o_proj.bias") == 0;
		if (want == NULL) {
			note_fail(v, "%s: tensor %s absent from the model or of the wrong size", fx,
				  name);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			if (at[i] != want[i]) {
				note_fail(v, "%s: %s[%zu] = %a, want %a", fx, name, i, at[i],
					  want[i]);
				break;
			}
		}
		free(want);
	}
	for (size_t i = 0; m->b_o != NULL && !has_o_bias && i < m->E; i++)
		if (m->b_o[i] != 0.0f)
			note_fail(v, "%s: b_o[%zu] = %g, want 0 (no o bias in the file)", fx, i,
				  m->b_o[i]);
}

static void compare(struct verdict *v, const char *fx, const char *what, const float *got,
		    const float *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)got[i] - (double)want[i]);

		if (!(d <= TOL_ABS + TOL_REL * fabs((double)want[i]))) {
			note_fail(v, "%s: %s[%zu] = %.9g, want %.9g", fx, what, i, got[i], want[i]);
			return;
		}
	}
}

/* attn_mha_forward and the naive twin on the fixture's input. */
static void check_forward(struct verdict *v, const char *fx, json_t *doc,
			  const struct attn_model *m)
{
	json_t *input = json_object_get(doc, "input");
	size_t B = json_array_size(input), L = json_array_size(json_array_get(input, 0));
	size_t nx = B * L * m->E, nw = B * m->H * L * L, ws_bytes = 0;
	float *x = json_floats(input, nx);
	float *want_out = json_floats(json_object_get(doc, "output"), nx);
	float *want_w = json_floats(json_object_get(doc, "weights"), nw);
	float *out = calloc(nx, sizeof(float)), *w = calloc(nw, sizeof(float));
	struct attn_mha req = {.model = m,
			       .B = B,
			       .Lq = L,
			       .Lk = L,
			       .query = x,
			       .out = out,
			       .weights_mode = ATTN_WEIGHTS_PER_HEAD,
			       .weights = w};
	struct attn_error err = {0};
	void *ws = NULL;

	if (B == 0 || L == 0 || !x || !want_out || !want_w || !out || !w) {
		note_fail(v, "%s: input, output or weights malformed in the JSON", fx);
		goto out;
	}
	if (attn_mha_workspace(&req, &ws_bytes, &err) != ATTN_OK ||
	    (ws = malloc(ws_bytes ? ws_bytes : 1)) == NULL ||
	    attn_mha_forward(&req, ws, ws_bytes, &err) != ATTN_OK) {
		note_fail(v, "%s: attn_mha_forward failed: %s", fx, err.message);
		goto out;
	}
	compare(v, fx, "output", out, want_out, nx);
	compare(v, fx, "weights", w, want_w, nw);
	memset(out, 0, nx * sizeof(float));
	memset(w, 0, nw * sizeof(float));
	if (attn_mha_forward_ref(&req, &err) != ATTN_OK) {
		note_fail(v, "%s: attn_mha_forward_ref failed: %s", fx, err.message);
		goto out;
	}
	compare(v, fx, "ref output", out, want_out, nx);
	compare(v, fx, "ref weights", w, want_w, nw);
out:
	free(ws);
	free(x);
	free(want_out);
	free(want_w);
	free(out);
	free(w);
}

/*
 * Fixture fx: its JSON document (asserted to parse), its loader options
 * (num_heads, prefix) into *opts, and its .safetensors bytes into *buf, or
 * NULL noted in v. The caller frees *buf and json_decref's the document.
 */
static json_t *read_fixture(struct verdict *v, const char *fx,
			    struct attn_safetensors_options *opts, uint8_t **buf, size_t *len)
{
	char path[1024];
	json_error_t jerr;
	json_t *doc;

	fixture_path(path, sizeof(path), fx, ".json");
	doc = json_load_file(path, 0, &jerr);
	ck_assert_msg(doc != NULL, "%s: %s (line %d)", path, jerr.text, jerr.line);
	opts->num_heads = (size_t)json_integer_value(json_object_get(doc, "num_heads"));
	opts->prefix = json_string_value(json_object_get(doc, "prefix"));
	fixture_path(path, sizeof(path), fx, ".safetensors");
	*buf = read_file(path, len);
	if (*buf == NULL)
		note_fail(v, "%s: cannot read", path);
	return doc;
}

/*
 * F32 tensor name of a safetensors file, decoded here with jansson rather than
 * the engine's parser: a new array of *n floats, or NULL when the header does
 * not parse, lacks the tensor, or the tensor is not F32 inside the file.
 */
static float *file_f32(const uint8_t *buf, size_t len, const char *name, size_t *n)
{
	uint64_t hlen = 0;
	json_t *hdr, *t;
	size_t begin, end;
	float *x = NULL;

	if (len < 8)
		return NULL;
	for (int k = 7; k >= 0; k--)
		hlen = hlen << 8 | buf[k];
	if (hlen > len - 8)
		return NULL;
	hdr = json_loadb((const char *)buf + 8, (size_t)hlen, 0, NULL);
	t = json_object_get(hdr, name);
	begin = (size_t)json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 0));
	end = (size_t)json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 1));
	if (t != NULL && strcmp(json_string_value(json_object_get(t, "dtype")), "F32") == 0 &&
	    begin < end && end <= len - 8 - hlen && (end - begin) % 4 == 0) {
		const uint8_t *p = buf + 8 + hlen + begin;

		*n = (end - begin) / 4;
		x = malloc(*n * sizeof(float));
		for (size_t i = 0; x != NULL && i < *n; i++) {
			uint32_t bits = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
					(uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;

			memcpy(&x[i], &bits, sizeof(bits));
		}
	}
	json_decref(hdr);
	return x;
}

/* The model's embedding table equals the F32 tensor name in the file, exactly. */
static void check_embed(struct verdict *v, const char *fx, const uint8_t *buf, size_t len,
			const char *name, const struct attn_model *m)
{
	size_t n = 0;
	float *want = file_f32(buf, len, name, &n);

	if (want == NULL)
		note_fail(v, "%s: no F32 tensor %s in the file", fx, name);
	else if (m->embed == NULL || m->vocab * m->E != n)
		note_fail(v, "%s: vocab %zu x E %zu, want the %zu values of %s", fx, m->vocab, m->E,
			  n, name);
	for (size_t i = 0; want != NULL && !v->failed && i < n; i++)
		if (m->embed[i] != want[i])
			note_fail(v, "%s: embed[%zu] = %a, want %a", fx, i, m->embed[i], want[i]);
	free(want);
}

/*
 * Fixture fx loaded with embed_name (or NULL): config, tensors and both
 * forward passes against its JSON, the first failure noted in v. With
 * embed_name the table is checked against the file's bytes instead.
 */
static void check_fixture(struct verdict *v, const char *fx, const char *embed_name)
{
	struct attn_model *m = NULL;
	struct attn_error err = {0};
	struct attn_safetensors_options opts = {0};
	uint8_t *buf = NULL;
	size_t len = 0;
	json_t *doc = read_fixture(v, fx, &opts, &buf, &len);

	opts.embed_name = embed_name;
	if (buf == NULL)
		goto out;
	if (attn_model_from_safetensors(&m, buf, len, &opts, &err) != ATTN_OK) {
		note_fail(v, "%s: load failed: %s", fx, err.message);
		goto out;
	}
	check_config(v, fx, doc, m, embed_name != NULL);
	if (embed_name != NULL)
		check_embed(v, fx, buf, len, embed_name, m);
	check_tensors(v, fx, json_object_get(doc, "tensors"), m);
	if (!v->failed)
		check_forward(v, fx, doc, m);
out:
	attn_model_free(m);
	free(buf);
	json_decref(doc);
}

START_TEST(test_fixture)
{
	struct verdict v = {0};

	check_fixture(&v, fixture_names[_i], NULL);
	ck_assert_msg(!v.failed, "%s", v.msg);
}
END_TEST
/* Every proper prefix of a real file fails as TRUNCATED. */
START_TEST(test_fixture_truncated)
{
	const char *fx = fixture_names[_i];
	struct attn_model *m = NULL;
	struct attn_error err;
	char path[1024];
	size_t len = 0;
	uint8_t *buf;
	const size_t H = 4;

	fixture_path(path, sizeof(path), fx, ".safetensors");
	buf = read_file(path, &len);
	ck_assert_msg(buf != NULL, "%s: cannot read", path);
	for (size_t cut = 0; cut < len; cut++) {
		enum attn_status st = st_load_bytes(buf, cut, H, NULL, &m, &err);

		if (st != ATTN_ERR_TRUNCATED) {
			free(buf);
			ck_abort_msg("%s cut at %zu: %s", fx, cut, attn_status_str(st));
		}
	}
	free(buf);
}
END_TEST

/* ---- embed_name on a real checkpoint layout ----------------------------- */

#define QWEN "qwen_prefixed_bf16"
#define QWEN_EMBED "model.embed_tokens.weight" /* F32 [11, 16], beside the layer */

/* The layer loads as without it, and the table at its full name lands in embed. */
START_TEST(test_fixture_embed_name)
{
	struct verdict v = {0};

	check_fixture(&v, QWEN, QWEN_EMBED);
	ck_assert_msg(!v.failed, "%s", v.msg);
}
END_TEST

/* A name not in the file, and a tensor of the wrong dtype, fail naming it. */
START_TEST(test_fixture_embed_name_rejected)
{
	struct verdict v = {0};
	struct attn_model *m = NULL;
	struct attn_error missing, dtype;
	struct attn_safetensors_options opts = {0};
	uint8_t *buf = NULL;
	size_t len = 0;
	json_t *doc = read_fixture(&v, QWEN, &opts, &buf, &len);
	enum attn_status st_missing = ATTN_OK, st_dtype = ATTN_OK;

	if (buf != NULL) {
		opts.embed_name = QWEN_EMBED "s";
		st_missing = st_load_opts(buf, len, &opts, &m, &missing);
		opts.embed_name = "model.position_ids"; /* I64 [5] */
		st_dtype = st_load_opts(buf, len, &opts, &m, &dtype);
	}
	free(buf);
	json_decref(doc);
	ck_assert_msg(!v.failed, "%s", v.msg);
	st_assert_fails(st_missing, missing, ATTN_ERR_MISSING_TENSOR,
			"'" QWEN_EMBED "s' named by embed_name");
	ck_assert_str_eq(missing.field, "embed_name");
	st_assert_fails(st_dtype, dtype, ATTN_ERR_DTYPE, "'model.position_ids' has dtype I64");
}
END_TEST

static Suite *safetensors_fixtures_suite(void)
{
	Suite *s = suite_create("safetensors_fixtures");
	TCase *fix = tcase_create("fixtures");
	TCase *embed = tcase_create("embed_name");
	const int nfix = (int)(sizeof(fixture_names) / sizeof(fixture_names[0]));

	tcase_set_timeout(fix, 120); /* valgrind runs these too */
	tcase_add_loop_test(fix, test_fixture, 0, nfix);
	tcase_add_loop_test(fix, test_fixture_truncated, 0, nfix);
	suite_add_tcase(s, fix);

	tcase_add_test(embed, test_fixture_embed_name);
	tcase_add_test(embed, test_fixture_embed_name_rejected);
	suite_add_tcase(s, embed);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, safetensors_fixtures_suite, NULL);
}
