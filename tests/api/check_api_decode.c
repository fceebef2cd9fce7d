/*
 * check_api_decode.c: how /v1/attention reads its inputs, through api_handle
 * on the built-in models (api_harness.h): embeddings [L, E] and [B, L, E]
 * (ragged too), token ids and strings, text, key / value for
 * cross-attention, inline seeded models and inline explicit weights.
 *
 * Tolerances: two answers that must agree by the maths within 1e-6 + 1e-5 |x|.
 * Ownership: whatever a test allocates is in the harness's arena.
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
#include "tests/lib/suite_main.h"
#include "common/utf8.h"
#include "engine/model.h" /* tiny's embedding table, to check token lookup */
#include "tokenizer/unicode.h"

START_TEST(test_embeddings_unbatched)
{
	struct answer a = harness_tiny3("");
	const json_t *shape;
	struct flat out, w;

	harness_expect_ok(&a);
	ck_assert_str_eq(json_string_value(harness_field(a.json, "model")), "tiny");
	shape = harness_field(a.json, "shape");
	ck_assert_int_eq(harness_int_field(shape, "batch"), 1);
	ck_assert_int_eq(harness_int_field(shape, "query_length"), 3);
	ck_assert_int_eq(harness_int_field(shape, "key_length"), 3);
	ck_assert_int_eq(harness_int_field(shape, "d_model"), 8);
	ck_assert_int_eq(harness_int_field(shape, "num_heads"), 2);
	ck_assert_int_eq(harness_int_field(shape, "num_kv_heads"), 2);
	ck_assert_int_eq(harness_int_field(shape, "head_dim"), 4);
	out = tensor_at(&a, "output");
	tensor_assert_shape("output", &out, 2, 3, 8);
	w = tensor_at(&a, "weights"); /* per_head is the default */
	tensor_assert_shape("weights", &w, 3, 2, 3, 3);
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 3; i++) {
			const float *row = tensor_row(&w, h, i);

			ck_assert(row[0] > 0 && row[1] > 0 && row[2] > 0);
			ck_assert_double_eq_tol(row[0] + row[1] + row[2], 1.0, 1e-6);
		}
	ck_assert_ptr_null(json_object_get(a.json, "tokens"));
	ck_assert_ptr_null(json_object_get(a.json, "scores"));
	ck_assert(json_number_value(harness_field(harness_field(a.json, "usage"), "flops")) > 0);
	ck_assert(
	    json_number_value(harness_field(harness_field(a.json, "usage"), "milliseconds")) >= 0);
}
END_TEST

/* [B, L, E]: each item as if sent alone. */
START_TEST(test_embeddings_batched)
{
	struct answer batch = harness_tiny_batch("");
	struct answer one = harness_tiny3(""),
		      two = harness_attention(TINY "\"embeddings\":" X3R "}");
	struct flat out, w, o1 = tensor_at(&one, "output"), o2 = tensor_at(&two, "output");
	struct flat w1 = tensor_at(&one, "weights"), w2 = tensor_at(&two, "weights");

	harness_expect_ok(&batch);
	ck_assert_int_eq(harness_int_field(harness_field(batch.json, "shape"), "batch"), 2);
	out = tensor_at(&batch, "output");
	tensor_assert_shape("output", &out, 3, 2, 3, 8);
	w = tensor_at(&batch, "weights");
	tensor_assert_shape("weights", &w, 4, 2, 2, 3, 3);
	tensor_assert_near_n("item 0 output", out.x, o1.x, 24, SAME_ABS, SAME_REL);
	tensor_assert_near_n("item 1 output", out.x + 24, o2.x, 24, SAME_ABS, SAME_REL);
	tensor_assert_near_n("item 0 weights", w.x, w1.x, 18, SAME_ABS, SAME_REL);
	tensor_assert_near_n("item 1 weights", w.x + 18, w2.x, 18, SAME_ABS, SAME_REL);
}
END_TEST

/* A ragged batch: each item comes back trimmed to its own length. */
START_TEST(test_ragged_batch)
{
	struct answer r =
	    harness_attention(TINY "\"embeddings\":[" X3 ",[" R3 "]],\"scores\":\"raw\"}");
	struct answer one = harness_tiny3(",\"scores\":\"raw\"");
	struct answer two = harness_attention(TINY "\"embeddings\":[" R3 "],\"scores\":\"raw\"}");
	struct answer mean =
	    harness_attention(TINY "\"embeddings\":[" X3 ",[" R3 "]],\"weights\":\"mean\"}");
	struct flat o0, o1, w0, w1, s0, s1, m0, m1;

	harness_expect_ok(&r);
	ck_assert_int_eq(harness_int_field(harness_field(r.json, "shape"), "batch"), 2);
	ck_assert_int_eq(harness_int_field(harness_field(r.json, "shape"), "query_length"), 3);
	o0 = tensor_item(&r, "output", 0);
	o1 = tensor_item(&r, "output", 1);
	tensor_assert_shape("output item 0", &o0, 2, 3, 8);
	tensor_assert_shape("output item 1", &o1, 2, 1, 8);
	w0 = tensor_item(&r, "weights", 0);
	w1 = tensor_item(&r, "weights", 1);
	tensor_assert_shape("weights item 0", &w0, 3, 2, 3, 3);
	tensor_assert_shape("weights item 1", &w1, 3, 2, 1, 1);
	ck_assert(w1.x[0] == 1.0f && w1.x[1] == 1.0f);
	s0 = tensor_item(&r, "scores", 0);
	s1 = tensor_item(&r, "scores", 1);
	tensor_assert_shape("scores item 0", &s0, 3, 2, 3, 3);
	tensor_assert_shape("scores item 1", &s1, 3, 2, 1, 1);
	{
		struct flat a0 = tensor_at(&one, "output"), a1 = tensor_at(&two, "output");
		struct flat aw = tensor_at(&one, "weights"), as = tensor_at(&one, "scores");
		struct flat bs = tensor_at(&two, "scores");

		tensor_assert_near("item 0 output", &o0, &a0, SAME_ABS, SAME_REL);
		tensor_assert_near("item 1 output", &o1, &a1, SAME_ABS, SAME_REL);
		tensor_assert_near("item 0 weights", &w0, &aw, SAME_ABS, SAME_REL);
		tensor_assert_near("item 0 scores", &s0, &as, SAME_ABS, SAME_REL);
		tensor_assert_near("item 1 scores", &s1, &bs, SAME_ABS, SAME_REL);
	}
	harness_expect_ok(&mean);
	m0 = tensor_item(&mean, "weights", 0);
	m1 = tensor_item(&mean, "weights", 1);
	tensor_assert_shape("mean item 0", &m0, 2, 3, 3);
	tensor_assert_shape("mean item 1", &m1, 2, 1, 1);
}
END_TEST

/* Token ids are rows of the model's embedding table. */
START_TEST(test_tokens_ids)
{
	const struct attn_model *m = harness_tiny_model();
	const int64_t ids[3] = {3, 5, 63};
	json_t *emb = json_array(), *want_tokens = harness_keep_json(json_pack("[iii]", 3, 5, 63));
	struct answer by_id = harness_attention(TINY "\"tokens\":[3,5,63]}"), by_emb;

	for (size_t i = 0; i < 3; i++)
		json_array_append_new(emb,
				      tensor_json_floats(m->embed + (size_t)ids[i] * m->E, m->E));
	by_emb =
	    harness_attention_json(json_pack("{s:s, s:o}", "model", "tiny", "embeddings", emb));
	harness_expect_ok(&by_id);
	harness_expect_ok(&by_emb);
	tensor_assert_same(&by_id, &by_emb, "output", 0, 0);
	tensor_assert_same(&by_id, &by_emb, "weights", 0, 0);
	harness_expect_tokens(&by_id, want_tokens);
	ck_assert_ptr_null(json_object_get(by_emb.json, "tokens"));
}
END_TEST

/* String tokens without a vocabulary: FNV-1a 64 of the bytes mod vocab. */
START_TEST(test_tokens_strings)
{
	unsigned h = (unsigned)(harness_fnv1a("hello") % 64),
		 w = (unsigned)(harness_fnv1a("world") % 64);
	struct answer s = harness_attention(TINY "\"tokens\":[\"hello\",\"world\",\"hello\"]}");
	struct answer i = harness_attention(harness_fmt(TINY "\"tokens\":[%u,%u,%u]}", h, w, h));
	struct answer mixed = harness_attention(TINY "\"tokens\":[3,\"hello\"]}");
	json_t *want = harness_keep_json(json_pack("[sss]", "hello", "world", "hello"));
	json_t *want_mixed = harness_keep_json(json_pack("[is]", 3, "hello"));
	struct flat out;

	harness_expect_ok(&s);
	harness_expect_ok(&i);
	tensor_assert_same(&s, &i, "output", 0, 0);
	harness_expect_tokens(&s, want);
	out = tensor_at(&s, "output"); /* equal inputs, no positions: equal rows */
	tensor_assert_near_n("row 2 vs row 0", out.x + 16, out.x, 8, 0, 0);
	harness_expect_ok(&mixed);
	harness_expect_tokens(&mixed, want_mixed);
}
END_TEST

START_TEST(test_tokens_batch)
{
	struct answer r = harness_attention(TINY "\"tokens\":[[1,2,3],[4,5]]}");
	struct answer a = harness_attention(TINY "\"tokens\":[1,2,3]}");
	struct answer b = harness_attention(TINY "\"tokens\":[4,5]}");
	struct answer even = harness_attention(TINY "\"tokens\":[[1,2],[3,4]]}");
	json_t *want = harness_keep_json(json_pack("[[iii][ii]]", 1, 2, 3, 4, 5));
	struct flat o0, o1, w1, eo;

	harness_expect_ok(&r);
	harness_expect_tokens(&r, want);
	o0 = tensor_item(&r, "output", 0);
	o1 = tensor_item(&r, "output", 1);
	tensor_assert_shape("item 0", &o0, 2, 3, 8);
	tensor_assert_shape("item 1", &o1, 2, 2, 8);
	w1 = tensor_item(&r, "weights", 1);
	tensor_assert_shape("weights item 1", &w1, 3, 2, 2, 2);
	{
		struct flat ao = tensor_at(&a, "output"), bo = tensor_at(&b, "output");
		struct flat bw = tensor_at(&b, "weights");

		tensor_assert_near("item 0", &o0, &ao, SAME_ABS, SAME_REL);
		tensor_assert_near("item 1", &o1, &bo, SAME_ABS, SAME_REL);
		tensor_assert_near("weights item 1", &w1, &bw, SAME_ABS, SAME_REL);
	}
	harness_expect_ok(&even);
	eo = tensor_at(&even, "output");
	tensor_assert_shape("even batch", &eo, 3, 2, 2, 8);
}
END_TEST

/* text: split on whitespace, UTF-8 intact, the same as the tokens it splits into. */
START_TEST(test_text)
{
	struct answer t = harness_attention(TINY "\"text\":\"나는 맛있는 사과를\"}");
	struct answer k = harness_attention(TINY "\"tokens\":[\"나는\",\"맛있는\",\"사과를\"]}");
	struct answer ws =
	    harness_attention(TINY "\"text\":\" \\t나는\\n\\n맛있는  사과를\\r\\n\"}");
	struct answer list = harness_attention(TINY "\"text\":[\"나는 사과를\",\"먹었다\"]}");
	struct answer klist =
	    harness_attention(TINY "\"tokens\":[[\"나는\",\"사과를\"],[\"먹었다\"]]}");
	struct answer dflt = harness_attention("{\"text\":\"hello world\"}");
	json_t *want = harness_keep_json(json_pack("[sss]", "나는", "맛있는", "사과를"));
	json_t *want_list = harness_keep_json(json_pack("[[ss][s]]", "나는", "사과를", "먹었다"));
	struct flat o;

	harness_expect_ok(&t);
	harness_expect_ok(&k);
	tensor_assert_same(&t, &k, "output", 0, 0);
	harness_expect_tokens(&t, want);
	harness_expect_ok(&ws);
	tensor_assert_same(&ws, &k, "output", 0, 0);
	harness_expect_tokens(&ws, want);
	harness_expect_ok(&list);
	harness_expect_ok(&klist);
	harness_expect_tokens(&list, want_list);
	{
		struct flat a0 = tensor_item(&list, "output", 0),
			    b0 = tensor_item(&klist, "output", 0);
		struct flat a1 = tensor_item(&list, "output", 1),
			    b1 = tensor_item(&klist, "output", 1);

		tensor_assert_near("list item 0", &a0, &b0, 0, 0);
		tensor_assert_near("list item 1", &a1, &b1, 0, 0);
		tensor_assert_shape("list item 1", &a1, 2, 1, 8);
	}
	/* no model: the default, base */
	harness_expect_ok(&dflt);
	ck_assert_str_eq(json_string_value(harness_field(dflt.json, "model")), "base");
	ck_assert_int_eq(harness_int_field(harness_field(dflt.json, "shape"), "d_model"), 512);
	o = tensor_at(&dflt, "output");
	tensor_assert_shape("base output", &o, 2, 2, 512);
}
END_TEST

/* text: Unicode whitespace splits words as ASCII whitespace does (a no-break
 * space, as a web page's &nbsp; pastes, an ideographic space, NEL, a line
 * separator), never kept inside a word. */
START_TEST(test_text_unicode_space)
{
	struct answer t = harness_attention(
	    TINY "\"text\":\"\\u3000나는\\u00a0맛있는\\u0085\\u2028사과를\\u3000\"}");
	struct answer k = harness_attention(TINY "\"tokens\":[\"나는\",\"맛있는\",\"사과를\"]}");
	json_t *want = harness_keep_json(json_pack("[sss]", "나는", "맛있는", "사과를"));

	harness_expect_ok(&t);
	harness_expect_ok(&k);
	harness_expect_tokens(&t, want);
	tensor_assert_same(&t, &k, "output", 0, 0);
}
END_TEST

/* The words of "a<cp>b": two when cp is White_Space, else one. */
static size_t words_around(uint32_t cp)
{
	char text[8] = "a", body[96];
	size_t at = 1 + utf8_put(text + 1, cp), n;
	struct answer a;

	text[at] = 'b';
	text[at + 1] = '\0';
	snprintf(body, sizeof body, TINY "\"text\":\"%s\"}", text);
	a = harness_run_request(harness_service, API_ROUTE_ATTENTION, NULL, body, strlen(body),
				HARNESS_RESPONSE_MAX);
	ck_assert_msg(a.status == 200, "U+%04X: %s", (unsigned)cp, a.text);
	n = json_array_size(json_object_get(a.json, "tokens"));
	json_decref(a.json);
	free(a.text);
	return n;
}

/* split_text's lead-byte shortcut (only C2, E1, E2 and E3 begin White_Space
 * past ASCII) against its twin, the tokenizer's decode and tok_uc_is_space:
 * every character of C2, and of the blocks about each White_Space character
 * of E1, E2 and E3; one of every other lead byte; Hangul, a BOM, the
 * Mongolian vowel separator (no longer White_Space) and the last code point. */
START_TEST(test_text_space_shortcut)
{
	static const uint32_t ranges[][3] = {
	    /* first, end, step */
	    {0x80, 0xC0, 1},	     {0xC0, 0x800, 0x40},     {0x800, 0xD000, 0x1000},
	    {0xE000, 0x10000, 0x1000}, {0x10000, 0x110000, 0x40000}, {0x1600, 0x1700, 1},
	    {0x1800, 0x1810, 1},       {0x2000, 0x2070, 1},	   {0x2FF0, 0x3010, 1},
	    {0xAC00, 0xAC10, 1},       {0xFEFF, 0xFF00, 1},	   {0x10FFFF, 0x110000, 1},
	};

	for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++)
		for (uint32_t cp = ranges[r][0]; cp < ranges[r][1]; cp += ranges[r][2])
			ck_assert_msg(words_around(cp) == (tok_uc_is_space((int32_t)cp) ? 2u : 1u),
				      "U+%04X split as the tokenizer would not", (unsigned)cp);
}
END_TEST

/* key / value: Lq != Lk; value defaults to key; weights depend on q and k only. */
START_TEST(test_cross_attention)
{
	const char *q = "\"embeddings\":[" R0 "," R1 "]";
	const char *k = "\"key\":[" R0 "," R1 "," R2 "," R3 "," R1 "]";
	struct answer a = harness_attention(harness_fmt(TINY "%s,%s}", q, k));
	struct answer same = harness_attention(
	    harness_fmt(TINY "%s,%s,\"value\":[" R0 "," R1 "," R2 "," R3 "," R1 "]}", q, k));
	struct answer other = harness_attention(
	    harness_fmt(TINY "%s,%s,\"value\":[" R3 "," R2 "," R1 "," R0 "," R2 "]}", q, k));
	struct answer batch =
	    harness_attention(TINY "\"embeddings\":[[" R0 "],[" R1 "]],\"key\":[[" R0 "," R1 "," R2
				   "],[" R2 "," R3 "," R0 "]]}");
	struct flat out, w;

	harness_expect_ok(&a);
	ck_assert_int_eq(harness_int_field(harness_field(a.json, "shape"), "query_length"), 2);
	ck_assert_int_eq(harness_int_field(harness_field(a.json, "shape"), "key_length"), 5);
	out = tensor_at(&a, "output");
	tensor_assert_shape("output", &out, 2, 2, 8);
	w = tensor_at(&a, "weights");
	tensor_assert_shape("weights", &w, 3, 2, 2, 5);
	harness_expect_ok(&same);
	tensor_assert_same(&a, &same, "output", 0, 0);
	harness_expect_ok(&other);
	tensor_assert_same(&a, &other, "weights", 0, 0);
	ck_assert(tensor_max_diff(&a, &other, "output") > 1e-3);
	harness_expect_ok(&batch);
	out = tensor_at(&batch, "output");
	tensor_assert_shape("batched output", &out, 3, 2, 1, 8);
	w = tensor_at(&batch, "weights");
	tensor_assert_shape("batched weights", &w, 4, 2, 2, 1, 3);
}
END_TEST

/*
 * A batch whose keys are ragged and whose queries are not: numbers as each item
 * alone; the weights of item 1 are trimmed to its own key length, [H, 1, 1],
 * as ragged queries are.
 */
START_TEST(test_cross_ragged_keys)
{
	struct answer r = harness_attention(TINY "\"embeddings\":[[" R0 "],[" R1 "]],\"key\":[[" R0
						 "," R1 "," R2 "],[" R2 "]]}");
	struct answer one = harness_attention(TINY "\"embeddings\":[" R1 "],\"key\":[" R2 "]}");
	const json_t *w;
	struct flat out, o1;

	harness_expect_ok(&r);
	harness_expect_ok(&one);
	out = tensor_at(&r, "output");
	o1 = tensor_at(&one, "output");
	tensor_assert_near_n("item 1 output", out.x + 8, o1.x, 8, SAME_ABS, SAME_REL);
	w = json_array_get(harness_field(r.json, "weights"), 1); /* item 1: [H, 1, Lk_1] */
	w = json_array_get(json_array_get(w, 0), 0);
	ck_assert_msg(json_array_size(w) == 1,
		      "weights of item 1 not trimmed to its key length 1: %.300s", r.text);
}
END_TEST

/* Inline seeded models: deterministic per seed, any H / Hkv that divide. */
START_TEST(test_inline_seeded)
{
	const char *m7 = "{\"model\":{\"d_model\":8,\"num_heads\":2,\"seed\":7}," EMB3 "}";
	struct answer a = harness_attention(m7), b = harness_attention(m7);
	struct answer c =
	    harness_attention("{\"model\":{\"d_model\":8,\"num_heads\":2,\"seed\":8}," EMB3 "}");
	struct answer g =
	    harness_attention("{\"model\":{\"d_model\":8,\"num_heads\":2,\"num_kv_heads\":1,"
			      "\"bias\":false}," EMB3 "}");

	harness_expect_ok(&a);
	ck_assert_str_eq(json_string_value(harness_field(a.json, "model")), "inline");
	tensor_assert_same(&a, &b, "output", 0, 0);
	harness_expect_ok(&c);
	ck_assert(tensor_max_diff(&a, &c, "output") > 1e-4);
	harness_expect_ok(&g);
	ck_assert_int_eq(harness_int_field(harness_field(g.json, "shape"), "num_kv_heads"), 1);
}
END_TEST

/* Explicit weights: both projections or none, biases in pairs, shapes exact. */
START_TEST(test_inline_weights)
{
	float *zq = harness_keep(calloc(24 * 8, sizeof(float))),
	      *zo = harness_keep(calloc(8 * 8, sizeof(float)));
	float *nan_q = harness_keep(calloc(24 * 8, sizeof(float)));
	const char *wq = harness_fmt("\"in_proj_weight\":{\"shape\":[24,8],\"base64\":\"%s\"}",
				     tensor_b64_encode(zq, 24 * 8 * sizeof(float)));
	const char *wo = harness_fmt("\"out_proj_weight\":{\"shape\":[8,8],\"base64\":\"%s\"}",
				     tensor_b64_encode(zo, 8 * 8 * sizeof(float)));
	const char *m = "{\"model\":{\"d_model\":8,\"num_heads\":2,";
	const char *bq = "\"in_proj_bias\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]";
	const char *bo = "\"out_proj_bias\":[1,2,3,4,5,6,7,8]";
	struct answer a;
	struct flat out;

	nan_q[5] = NAN;
	a = harness_attention(harness_fmt("%s%s}," EMB1 "}", m, wq));
	harness_expect_error(&a, 422, "invalid_model", "/model");
	a = harness_attention(harness_fmt("%s%s,%s,%s}," EMB1 "}", m, wq, wo, bq));
	harness_expect_error(&a, 422, "invalid_model", "/model");
	a = harness_attention(
	    harness_fmt("%s%s,%s,%s,\"out_proj_bias\":[1,2,3]}," EMB1 "}", m, wq, wo, bq));
	harness_expect_error(&a, 422, "dimension_mismatch", "/model/out_proj_bias");
	/* one element too many: the same answer as too few (not too_large) */
	a = harness_attention(harness_fmt(
	    "%s%s,%s,%s,\"out_proj_bias\":[1,2,3,4,5,6,7,8,9]}," EMB1 "}", m, wq, wo, bq));
	harness_expect_error(&a, 422, "dimension_mismatch", "/model/out_proj_bias");
	a = harness_attention(
	    harness_fmt("%s%s,%s,\"embed_tokens\":[" R0 "]}," EMB1 "}", m, wq, wo));
	harness_expect_error(&a, 422, "invalid_model", "/model/embed_tokens");
	/* two rows without vocab_size: still the missing vocab_size */
	a = harness_attention(
	    harness_fmt("%s%s,%s,\"embed_tokens\":[" R0 "," R0 "]}," EMB1 "}", m, wq, wo));
	harness_expect_error(&a, 422, "invalid_model", "/model/embed_tokens");
	a = harness_attention(harness_fmt("%s%s,%s,\"vocab_size\":4}," EMB1 "}", m, wq, wo));
	harness_expect_error(&a, 422, "invalid_model", "/model/embed_tokens");
	a = harness_attention(
	    harness_fmt("%s\"in_proj_weight\":{\"shape\":[24,8],\"base64\":\"%s\"},%s}," EMB1 "}",
			m, tensor_b64_encode(nan_q, 24 * 8 * sizeof(float)), wo));
	harness_expect_error(&a, 422, "out_of_range", "/model/in_proj_weight/base64");
	/* zero weights: the output is the output bias, exactly */
	a = harness_attention(harness_fmt("%s%s,%s,%s,%s}," EMB3 "}", m, wq, wo, bq, bo));
	harness_expect_ok(&a);
	out = tensor_at(&a, "output");
	for (size_t k = 0; k < out.n; k++)
		ck_assert(out.x[k] == (float)(k % 8 + 1));
}
END_TEST

static Suite *decode_suite(void)
{
	Suite *s = suite_create("api_decode");
	TCase *tc = harness_tcase(s, "decode", 60);

	tcase_add_test(tc, test_embeddings_unbatched);
	tcase_add_test(tc, test_embeddings_batched);
	tcase_add_test(tc, test_ragged_batch);
	tcase_add_test(tc, test_tokens_ids);
	tcase_add_test(tc, test_tokens_strings);
	tcase_add_test(tc, test_tokens_batch);
	tcase_add_test(tc, test_text);
	tcase_add_test(tc, test_text_unicode_space);
	tcase_add_test(tc, test_text_space_shortcut);
	tcase_add_test(tc, test_cross_attention);
	tcase_add_test(tc, test_cross_ragged_keys);
	tcase_add_test(tc, test_inline_seeded);
	tcase_add_test(tc, test_inline_weights);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .setup = harness_setup,
	    .teardown = harness_teardown,
	};

	return suite_main(argc, argv, decode_suite, &opts);
}
