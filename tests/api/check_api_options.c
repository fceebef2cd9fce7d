/*
 * check_api_options.c: the options of /v1/attention, through api_handle on
 * the built-in models (api_harness.h), each checked by its equivalences and
 * invariants rather than by numbers:
 *   mask        every mask form, its equivalences and exact zeros
 *   positional  RoPE, ALiBi and sinusoidal parameters
 *   options     scale, softcap, weights, scores, encodings, precision
 *
 * Tolerances: two answers that must agree by the maths within 1e-6 + 1e-5 |x|;
 * RoPE's relative-position invariance within 1e-5 + 1e-4 |x|.
 * Ownership: whatever a test allocates is in the harness's arena.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/api_harness.h"
#include "tests/lib/api_tensor.h"
#include "tests/lib/suite_main.h"

/* ------------------------------------------------------------------------ */
/* mask                                                                     */
/* ------------------------------------------------------------------------ */

START_TEST(test_mask_none)
{
	struct answer a = harness_tiny3(""), b = harness_tiny3(",\"mask\":\"none\""),
		      c = harness_tiny3(",\"mask\":{}");

	harness_expect_ok(&b);
	harness_expect_ok(&c);
	tensor_assert_same(&a, &b, "output", 0, 0);
	tensor_assert_same(&a, &c, "output", 0, 0);
	tensor_assert_same(&a, &c, "weights", 0, 0);
}
END_TEST

/* Every way to say "causal" gives the same answer, with exact zeros above the diagonal. */
START_TEST(test_mask_causal_forms)
{
	static const char *const forms[] = {
	    ",\"mask\":{\"causal\":true}",
	    ",\"mask\":{\"causal\":true,\"alignment\":\"top_left\"}",
	    ",\"mask\":{\"allow\":" TRIL3 "}",
	    ",\"mask\":{\"allow\":[" TRIL3 "]}",
	    ",\"mask\":{\"allow\":[[" TRIL3 "," TRIL3 "]]}",
	    ",\"mask\":{\"allow\":{\"shape\":[3,3],\"data\":[true,false,false,true,true,false,"
	    "true,true,true]}}",
	    ",\"mask\":{\"bias\":" NEG3 "}",
	    ",\"mask\":{\"bias\":{\"shape\":[1,3,3],\"data\":[0,\"-Infinity\",\"-Infinity\",0,0,"
	    "\"-Infinity\",0,0,0]}}",
	    ",\"mask\":{\"causal\":true,\"allow\":" ALL3 "}",
	};
	struct answer c = harness_tiny3(",\"mask\":\"causal\"");
	struct flat w;

	harness_expect_ok(&c);
	w = tensor_at(&c, "weights");
	for (size_t h = 0; h < 2; h++) {
		ck_assert(tensor_row(&w, h, 0)[0] == 1.0f && tensor_row(&w, h, 0)[1] == 0.0f &&
			  tensor_row(&w, h, 0)[2] == 0.0f);
		ck_assert(tensor_row(&w, h, 1)[2] == 0.0f && tensor_row(&w, h, 1)[1] > 0.0f);
	}
	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		struct answer a = harness_tiny3(forms[f]);

		harness_expect_ok(&a);
		tensor_assert_same(&a, &c, "weights", SAME_ABS, SAME_REL);
		tensor_assert_same(&a, &c, "output", SAME_ABS, SAME_REL);
	}
}
END_TEST

/* allow [B, Lq, Lk] is per item; [B, H, Lq, Lk] per item and head; 1 broadcasts. */
START_TEST(test_mask_batch_head_shapes)
{
	struct answer full = harness_tiny_batch(""),
		      causal = harness_tiny_batch(",\"mask\":\"causal\"");
	struct answer per_item = harness_tiny_batch(",\"mask\":{\"allow\":[" TRIL3 "," ALL3 "]}");
	struct answer per_head =
	    harness_tiny_batch(",\"mask\":{\"allow\":[[" TRIL3 "," ALL3 "],[" ALL3 "," TRIL3 "]]}");
	struct answer bcast = harness_tiny_batch(",\"mask\":{\"allow\":[[" TRIL3 "," ALL3 "]]}");
	struct flat f = tensor_at(&full, "weights"), c = tensor_at(&causal, "weights");
	struct flat pi, ph, bc;

	harness_expect_ok(&per_item);
	harness_expect_ok(&per_head);
	harness_expect_ok(&bcast);
	pi = tensor_at(&per_item, "weights");
	ph = tensor_at(&per_head, "weights");
	bc = tensor_at(&bcast, "weights");
	/* [B, H, 3, 3]: slice (b, h) starts at (b * 2 + h) * 9 */
	tensor_assert_near_n("per item, item 0", pi.x, c.x, 18, SAME_ABS, SAME_REL);
	tensor_assert_near_n("per item, item 1", pi.x + 18, f.x + 18, 18, SAME_ABS, SAME_REL);
	tensor_assert_near_n("per head, (0, 0)", ph.x, c.x, 9, SAME_ABS, SAME_REL);
	tensor_assert_near_n("per head, (0, 1)", ph.x + 9, f.x + 9, 9, SAME_ABS, SAME_REL);
	tensor_assert_near_n("per head, (1, 0)", ph.x + 18, f.x + 18, 9, SAME_ABS, SAME_REL);
	tensor_assert_near_n("per head, (1, 1)", ph.x + 27, c.x + 27, 9, SAME_ABS, SAME_REL);
	tensor_assert_near_n("broadcast, (0, 0)", bc.x, c.x, 9, SAME_ABS, SAME_REL);
	tensor_assert_near_n("broadcast, (1, 0)", bc.x + 18, c.x + 18, 9, SAME_ABS, SAME_REL);
	tensor_assert_near_n("broadcast, (1, 1)", bc.x + 27, f.x + 27, 9, SAME_ABS, SAME_REL);
}
END_TEST

/* An additive bias enters the softmax: +ln 2 on key 0 doubles its odds. */
START_TEST(test_mask_bias_values)
{
	const char *l2 = "0.6931471805599453";
	struct answer none = harness_tiny3("");
	struct answer odds = harness_tiny3(
	    harness_fmt(",\"mask\":{\"bias\":[[%s,0,0],[%s,0,0],[%s,0,0]]}", l2, l2, l2));
	struct answer flat_bias =
	    harness_tiny3(",\"mask\":{\"bias\":[[5,5,5],[-3,-3,-3],[0.5,0.5,0.5]]}");
	struct flat w = tensor_at(&none, "weights"), b;

	harness_expect_ok(&odds);
	b = tensor_at(&odds, "weights");
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 3; i++) {
			double before = tensor_row(&w, h, i)[0] / tensor_row(&w, h, i)[1];
			double after = tensor_row(&b, h, i)[0] / tensor_row(&b, h, i)[1];

			ck_assert_msg(tensor_near(after, 2 * before, 0, 1e-5), "odds %g, want %g",
				      after, 2 * before);
		}
	/* the same bias along a whole row changes nothing */
	harness_expect_ok(&flat_bias);
	tensor_assert_same(&flat_bias, &none, "weights", SAME_ABS, SAME_REL);
}
END_TEST

/* top_left vs bottom_right causal when Lq < Lk, and alignment for a window alone. */
START_TEST(test_mask_alignment)
{
	const char *q1 = TINY "\"embeddings\":[" R0 "],\"key\":" X3;
	const char *q2 = TINY "\"embeddings\":[" R0 "," R1 "],\"key\":" X3;
	struct answer tl = harness_attention(harness_fmt("%s,\"mask\":\"causal\"}", q1));
	struct answer br = harness_attention(
	    harness_fmt("%s,\"mask\":{\"causal\":true,\"alignment\":\"bottom_right\"}}", q1));
	struct answer none = harness_attention(harness_fmt("%s}", q1));
	struct answer br2 = harness_attention(
	    harness_fmt("%s,\"mask\":{\"causal\":true,\"alignment\":\"bottom_right\"}}", q2));
	struct answer win_br = harness_attention(
	    harness_fmt("%s,\"mask\":{\"window\":1,\"alignment\":\"bottom_right\"}}", q1));
	struct answer win_tl = harness_attention(harness_fmt("%s,\"mask\":{\"window\":1}}", q1));
	struct flat w;

	harness_expect_ok(&tl);
	w = tensor_at(&tl, "weights");
	for (size_t h = 0; h < 2; h++)
		ck_assert(tensor_row(&w, h, 0)[0] == 1.0f && tensor_row(&w, h, 0)[1] == 0.0f &&
			  tensor_row(&w, h, 0)[2] == 0.0f);
	harness_expect_ok(&br);
	tensor_assert_same(&br, &none, "weights", SAME_ABS, SAME_REL);
	harness_expect_ok(&br2);
	w = tensor_at(&br2, "weights");
	for (size_t h = 0; h < 2; h++) {
		ck_assert(tensor_row(&w, h, 0)[0] > 0 && tensor_row(&w, h, 0)[1] > 0 &&
			  tensor_row(&w, h, 0)[2] == 0.0f);
		ck_assert(tensor_row(&w, h, 1)[2] > 0);
	}
	harness_expect_ok(&win_br);
	w = tensor_at(&win_br, "weights");
	ck_assert(tensor_row(&w, 0, 0)[0] == 0.0f && tensor_row(&w, 0, 0)[2] == 1.0f);
	harness_expect_ok(&win_tl);
	w = tensor_at(&win_tl, "weights");
	ck_assert(tensor_row(&w, 1, 0)[0] == 1.0f && tensor_row(&w, 1, 0)[2] == 0.0f);
}
END_TEST

/*
 * bottom_right without causal aligns each item on its own key count: under
 * `lengths`, and in a batch of ragged keys, as if sent alone with only those
 * keys (a window of 2 reads the item's last two keys, not the padding).
 */
START_TEST(test_mask_alignment_per_item)
{
	const char *q = "\"embeddings\":[" R0 "," R1 "]";
	const char *br = "\"mask\":{\"window\":2,\"alignment\":\"bottom_right\"";
	struct answer alone = harness_attention(
	    harness_fmt(TINY "%s,\"key\":[" R0 "," R1 "],%s}}", q, br));
	struct answer cut = harness_attention(
	    harness_fmt(TINY "%s,\"key\":" X3 ",%s,\"lengths\":[2]}}", q, br));
	struct answer ragged = harness_attention(harness_fmt(
	    TINY "\"embeddings\":[[" R0 "," R1 "],[" R0 "," R1 "]],\"key\":[" X3 ",[" R0 "," R1
		 "]],%s}}",
	    br));
	struct flat a, c, r;

	harness_expect_ok(&alone);
	harness_expect_ok(&cut);
	harness_expect_ok(&ragged);
	a = tensor_at(&alone, "output");
	c = tensor_at(&cut, "output");
	r = tensor_at(&ragged, "output");
	tensor_assert_near_n("lengths [2]", c.x, a.x, 16, SAME_ABS, SAME_REL);
	tensor_assert_near_n("ragged item 1", r.x + 16, a.x, 16, SAME_ABS, SAME_REL);
}
END_TEST

/* Sliding windows: symmetric without causal, one-sided with it. */
START_TEST(test_mask_window)
{
	struct answer w1 = harness_tiny3(",\"mask\":{\"window\":1}");
	struct answer w2 = harness_tiny3(",\"mask\":{\"window\":2}");
	struct answer w2c = harness_tiny3(",\"mask\":{\"window\":2,\"causal\":true}");
	struct flat w;

	harness_expect_ok(&w1);
	w = tensor_at(&w1, "weights");
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 3; i++)
			for (size_t j = 0; j < 3; j++)
				ck_assert(tensor_row(&w, h, i)[j] == (i == j ? 1.0f : 0.0f));
	harness_expect_ok(&w2);
	w = tensor_at(&w2, "weights");
	for (size_t h = 0; h < 2; h++) {
		ck_assert(tensor_row(&w, h, 0)[1] > 0 && tensor_row(&w, h, 0)[2] == 0.0f);
		ck_assert(tensor_row(&w, h, 1)[0] > 0 && tensor_row(&w, h, 1)[2] > 0);
		ck_assert(tensor_row(&w, h, 2)[0] == 0.0f && tensor_row(&w, h, 2)[1] > 0);
	}
	harness_expect_ok(&w2c);
	w = tensor_at(&w2c, "weights");
	for (size_t h = 0; h < 2; h++) {
		ck_assert(tensor_row(&w, h, 0)[0] == 1.0f);
		ck_assert(tensor_row(&w, h, 1)[0] > 0 && tensor_row(&w, h, 1)[2] == 0.0f);
		ck_assert(tensor_row(&w, h, 2)[0] == 0.0f && tensor_row(&w, h, 2)[1] > 0);
	}
}
END_TEST

/* A ragged batch hides each item's padding wherever the short item is: first
 * here, before a full one (only the first item short, or only the last, must
 * both set the key lengths), its answer as sent alone. */
START_TEST(test_ragged_short_first)
{
	struct answer ragged = harness_attention(TINY "\"embeddings\":[[" R3 "," R0 "]," X3 "]}");
	struct answer alone = harness_attention(TINY "\"embeddings\":[" R3 "," R0 "]}");
	struct answer keys = harness_attention(TINY "\"embeddings\":[[" R1 "],[" R1
						    "]],\"key\":[[" R3 "," R0 "]," X3 "]}");
	struct answer keys_alone =
	    harness_attention(TINY "\"embeddings\":[" R1 "],\"key\":[" R3 "," R0 "]}");
	struct flat ro, rw, ao, aw;

	harness_expect_ok(&ragged);
	harness_expect_ok(&alone);
	ro = tensor_item(&ragged, "output", 0);
	rw = tensor_item(&ragged, "weights", 0);
	ao = tensor_at(&alone, "output");
	aw = tensor_at(&alone, "weights");
	tensor_assert_shape("item 0 weights", &rw, 3, 2, 2, 2);
	tensor_assert_near_n("item 0 output", ro.x, ao.x, 16, SAME_ABS, SAME_REL);
	tensor_assert_near_n("item 0 weights", rw.x, aw.x, 8, SAME_ABS, SAME_REL);
	harness_expect_ok(&keys);
	harness_expect_ok(&keys_alone);
	ro = tensor_item(&keys, "output", 0);
	ao = tensor_at(&keys_alone, "output");
	tensor_assert_near_n("item 0 output, ragged keys", ro.x, ao.x, 8, SAME_ABS, SAME_REL);
}
END_TEST

/* mask.lengths hides keys past each item's length: the same as a ragged batch. */
START_TEST(test_mask_lengths)
{
	struct answer l2 = harness_tiny3(",\"mask\":{\"lengths\":[2]}");
	struct answer ragged = harness_attention(TINY "\"embeddings\":[" X3 ",[" R3 "," R0 "]]}");
	struct answer padded =
	    harness_attention(TINY "\"embeddings\":[" X3 ",[" R3 "," R0
				   ",[0,0,0,0,0,0,0,0]]],\"mask\":{\"lengths\":[3,2]}}");
	struct answer capped = harness_attention(TINY "\"embeddings\":[" X3 ",[" R3 "," R0
						      "]],\"mask\":{\"lengths\":[1,3]}}");
	struct flat w, ro, rw, po, pw, cw;

	harness_expect_ok(&l2);
	w = tensor_at(&l2, "weights");
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 3; i++) {
			ck_assert(tensor_row(&w, h, i)[2] == 0.0f);
			ck_assert_double_eq_tol(tensor_row(&w, h, i)[0] + tensor_row(&w, h, i)[1],
						1.0, 1e-6);
		}
	harness_expect_ok(&ragged);
	harness_expect_ok(&padded);
	ro = tensor_item(&ragged, "output", 1);
	rw = tensor_item(&ragged, "weights", 1);
	po = tensor_at(&padded, "output");
	pw = tensor_at(&padded, "weights");
	tensor_assert_near_n("item 1 output", ro.x, po.x + 24, 16, SAME_ABS, SAME_REL);
	for (size_t h = 0; h < 2; h++)
		for (size_t i = 0; i < 2; i++) {
			tensor_assert_near_n("item 1 weights", tensor_row(&rw, h, i),
					     pw.x + 18 + (h * 3 + i) * 3, 2, SAME_ABS, SAME_REL);
			ck_assert(pw.x[18 + (h * 3 + i) * 3 + 2] == 0.0f);
		}
	/* lengths cap a ragged item further, never extend it */
	harness_expect_ok(&capped);
	cw = tensor_item(&capped, "weights", 0);
	ck_assert(tensor_row(&cw, 0, 2)[0] == 1.0f && tensor_row(&cw, 1, 1)[0] == 1.0f);
	cw = tensor_item(&capped, "weights", 1);
	tensor_assert_shape("capped item 1", &cw, 3, 2, 2, 2);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* positional                                                               */
/* ------------------------------------------------------------------------ */

START_TEST(test_positional_kinds)
{
	static const char *const kinds[] = {"sinusoidal", "rope", "alibi"};
	struct answer none = harness_tiny3(""), named = harness_tiny3(",\"positional\":\"none\"");
	struct answer obj = harness_tiny3(",\"positional\":{\"type\":\"none\"}");

	harness_expect_ok(&named);
	harness_expect_ok(&obj);
	tensor_assert_same(&none, &named, "output", 0, 0);
	tensor_assert_same(&none, &obj, "output", 0, 0);
	for (size_t k = 0; k < 3; k++) {
		struct answer s = harness_tiny3(harness_fmt(",\"positional\":\"%s\"", kinds[k]));
		struct answer o =
		    harness_tiny3(harness_fmt(",\"positional\":{\"type\":\"%s\"}", kinds[k]));

		harness_expect_ok(&s);
		harness_expect_ok(&o);
		tensor_assert_same(&s, &o, "output", 0, 0);
		ck_assert_msg(tensor_max_diff(&s, &none, "output") > 1e-4, "%s changes nothing",
			      kinds[k]);
	}
}
END_TEST

/* RoPE: offset == positions; scaling divides positions; defaults; relative. */
START_TEST(test_rope_parameters)
{
	struct answer rope = harness_tiny3(",\"positional\":\"rope\"");
	struct answer off = harness_tiny3(",\"positional\":{\"type\":\"rope\",\"offset\":3}");
	struct answer pos =
	    harness_tiny3(",\"positional\":{\"type\":\"rope\",\"positions\":[3,4,5]}");
	struct answer theta = harness_tiny3(",\"positional\":{\"type\":\"rope\",\"theta\":10000}");
	struct answer rdim = harness_tiny3(",\"positional\":{\"type\":\"rope\",\"rotary_dim\":4}");
	struct answer scaled = harness_tiny3(",\"positional\":{\"type\":\"rope\",\"scaling\":2,"
					     "\"positions\":[0,1,2]}");
	struct answer halfpos =
	    harness_tiny3(",\"positional\":{\"type\":\"rope\",\"positions\":[0,0.5,1]}");
	struct answer half =
	    harness_tiny3(",\"positional\":{\"type\":\"rope\",\"style\":\"half\"}");
	struct answer inter =
	    harness_tiny3(",\"positional\":{\"type\":\"rope\",\"style\":\"interleaved\"}");
	struct answer r2 = harness_tiny3(",\"positional\":{\"type\":\"rope\",\"rotary_dim\":2}");
	struct answer t500 = harness_tiny3(",\"positional\":{\"type\":\"rope\",\"theta\":500}");

	harness_expect_ok(&off);
	harness_expect_ok(&pos);
	tensor_assert_same(&off, &pos, "output", SAME_ABS, SAME_REL);
	/* RoPE scores depend only on position differences */
	tensor_assert_same(&off, &rope, "weights", TOL_ABS, TOL_REL);
	harness_expect_ok(&theta);
	harness_expect_ok(&rdim);
	harness_expect_ok(&inter);
	tensor_assert_same(&theta, &rope, "output", 0, 0);
	tensor_assert_same(&rdim, &rope, "output", 0, 0);
	tensor_assert_same(&inter, &rope, "output", 0, 0);
	harness_expect_ok(&scaled);
	harness_expect_ok(&halfpos);
	tensor_assert_same(&scaled, &halfpos, "output", SAME_ABS, SAME_REL);
	harness_expect_ok(&half);
	harness_expect_ok(&r2);
	harness_expect_ok(&t500);
	ck_assert(tensor_max_diff(&half, &rope, "output") > 1e-5);
	ck_assert(tensor_max_diff(&r2, &rope, "output") > 1e-5);
	ck_assert(tensor_max_diff(&t500, &rope, "output") > 1e-5);
}
END_TEST

/* Cross-attention: key_positions default to 0..Lk-1; a common shift changes nothing. */
START_TEST(test_rope_key_positions)
{
	const char *q = TINY "\"embeddings\":[" R0 "," R1 "],\"key\":" X3;
	struct answer dflt = harness_attention(harness_fmt("%s,\"positional\":\"rope\"}", q));
	struct answer expl = harness_attention(
	    harness_fmt("%s,\"positional\":{\"type\":\"rope\",\"positions\":[0,1],"
			"\"key_positions\":[0,1,2]}}",
			q));
	struct answer shifted =
	    harness_attention(harness_fmt("%s,\"positional\":{\"type\":\"rope\",\"positions\":"
					  "[7,8],\"key_positions\":[7,8,9]}}",
					  q));
	struct answer moved =
	    harness_attention(harness_fmt("%s,\"positional\":{\"type\":\"rope\",\"key_positions\":"
					  "[5,1,2]}}",
					  q));

	harness_expect_ok(&dflt);
	harness_expect_ok(&expl);
	harness_expect_ok(&shifted);
	harness_expect_ok(&moved);
	tensor_assert_same(&dflt, &expl, "output", SAME_ABS, SAME_REL);
	tensor_assert_same(&dflt, &shifted, "weights", TOL_ABS, TOL_REL);
	ck_assert(tensor_max_diff(&dflt, &moved, "weights") > 1e-5);
}
END_TEST

/* ALiBi: only distances matter. */
START_TEST(test_alibi)
{
	struct answer a = harness_tiny3(",\"positional\":\"alibi\"");
	struct answer off = harness_tiny3(",\"positional\":{\"type\":\"alibi\",\"offset\":10}");
	struct answer pos =
	    harness_tiny3(",\"positional\":{\"type\":\"alibi\",\"positions\":[4,5,6]}");
	struct answer far =
	    harness_tiny3(",\"positional\":{\"type\":\"alibi\",\"positions\":[0,2,4]}");

	harness_expect_ok(&a);
	harness_expect_ok(&off);
	harness_expect_ok(&pos);
	harness_expect_ok(&far);
	tensor_assert_same(&a, &off, "weights", SAME_ABS, SAME_REL);
	tensor_assert_same(&a, &pos, "weights", SAME_ABS, SAME_REL);
	ck_assert(tensor_max_diff(&a, &far, "weights") > 1e-4);
}
END_TEST

/*
 * ALiBi's query positions follow the mask's alignment: bottom_right without
 * causal puts 2 queries over 3 keys at positions 1 and 2 (attention.h), the
 * same as giving those positions, and not top-left's 0 and 1. In a ragged
 * batch each item aligns on its own lengths: the short item answers as alone.
 */
START_TEST(test_alibi_alignment)
{
	const char *q = TINY "\"embeddings\":[" R0 "," R1 "],\"key\":" X3;
	struct answer br = harness_attention(harness_fmt(
	    "%s,\"positional\":\"alibi\",\"mask\":{\"alignment\":\"bottom_right\"}}", q));
	struct answer at = harness_attention(
	    harness_fmt("%s,\"positional\":{\"type\":\"alibi\",\"positions\":[1,2]}}", q));
	struct answer tl = harness_attention(harness_fmt("%s,\"positional\":\"alibi\"}", q));
	struct answer ragged = harness_attention(
	    TINY "\"embeddings\":[[" R0 "," R1 "],[" R1 "]],\"key\":[" X3 ",[" R0 "," R2
		 "]],\"positional\":\"alibi\",\"mask\":{\"alignment\":\"bottom_right\"}}");
	struct answer alone =
	    harness_attention(TINY "\"embeddings\":[" R1 "],\"key\":[" R0 "," R2
				   "],\"positional\":{\"type\":\"alibi\",\"positions\":[1]}}");
	struct flat r, a;

	harness_expect_ok(&br);
	harness_expect_ok(&at);
	harness_expect_ok(&tl);
	tensor_assert_same(&br, &at, "weights", SAME_ABS, SAME_REL);
	tensor_assert_same(&br, &at, "output", SAME_ABS, SAME_REL);
	ck_assert(tensor_max_diff(&br, &tl, "weights") > 1e-4);
	harness_expect_ok(&ragged);
	harness_expect_ok(&alone);
	r = tensor_item(&ragged, "output", 1);
	a = tensor_at(&alone, "output");
	tensor_assert_near_n("ragged item 1", r.x, a.x, 8, SAME_ABS, SAME_REL);
}
END_TEST

/* Sinusoidal: the same as adding pe[p, 2i] = sin(p / 10000^(2i/E)), pe[p, 2i+1] = cos(...). */
START_TEST(test_sinusoidal)
{
	struct answer s = harness_tiny3(",\"positional\":\"sinusoidal\"");
	struct answer pos =
	    harness_tiny3(",\"positional\":{\"type\":\"sinusoidal\",\"positions\":[0,1,2]}");
	struct answer off = harness_tiny3(",\"positional\":{\"type\":\"sinusoidal\",\"offset\":1}");
	struct answer pos1 =
	    harness_tiny3(",\"positional\":{\"type\":\"sinusoidal\",\"positions\":[1,2,3]}");
	float xpe[3][8];
	struct answer added;

	for (size_t p = 0; p < 3; p++)
		for (size_t i = 0; i < 4; i++) {
			double angle = (double)p / pow(10000.0, (double)(2 * i) / 8.0);

			xpe[p][2 * i] = (float)(harness_x3[p][2 * i] + sin(angle));
			xpe[p][2 * i + 1] = (float)(harness_x3[p][2 * i + 1] + cos(angle));
		}
	added = harness_attention_json(json_pack("{s:s, s:o}", "model", "tiny", "embeddings",
						 tensor_json_matrix(&xpe[0][0], 3, 8)));
	harness_expect_ok(&s);
	harness_expect_ok(&added);
	tensor_assert_same(&s, &added, "output", TOL_ABS, TOL_REL);
	harness_expect_ok(&pos);
	tensor_assert_same(&s, &pos, "output", SAME_ABS, SAME_REL);
	harness_expect_ok(&off);
	harness_expect_ok(&pos1);
	tensor_assert_same(&off, &pos1, "output", SAME_ABS, SAME_REL);
}
END_TEST

/* Explicit positions are taken as the numbers sent, as offset's are: past
 * 2^24, where float32 holds only even integers, 16777217 is not 16777216. */
START_TEST(test_positions_past_float32)
{
	struct answer off =
	    harness_tiny3(",\"positional\":{\"type\":\"sinusoidal\",\"offset\":16777217}");
	struct answer pos = harness_tiny3(",\"positional\":{\"type\":\"sinusoidal\","
					  "\"positions\":[16777217,16777218,16777219]}");
	struct answer data = harness_tiny3(
	    ",\"positional\":{\"type\":\"rope\",\"positions\":{\"shape\":[3],"
	    "\"data\":[999999997,999999998,999999999]}}");
	struct answer rope =
	    harness_tiny3(",\"positional\":{\"type\":\"rope\",\"offset\":999999997}");

	harness_expect_ok(&off);
	harness_expect_ok(&pos);
	tensor_assert_same(&off, &pos, "output", SAME_ABS, SAME_REL);
	harness_expect_ok(&data);
	harness_expect_ok(&rope);
	tensor_assert_same(&rope, &data, "output", SAME_ABS, SAME_REL);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* options                                                                  */
/* ------------------------------------------------------------------------ */

START_TEST(test_scale)
{
	struct answer dflt = harness_tiny3(",\"scores\":\"raw\"");
	struct answer half =
	    harness_tiny3(",\"scale\":0.5,\"scores\":\"raw\""); /* 1 / sqrt(D = 4) */
	struct answer one = harness_tiny3(",\"scale\":1,\"scores\":\"raw\"");
	struct flat a, b;

	harness_expect_ok(&half);
	tensor_assert_same(&dflt, &half, "output", SAME_ABS, SAME_REL);
	harness_expect_ok(&one);
	a = tensor_at(&dflt, "scores");
	b = tensor_at(&one, "scores");
	for (size_t k = 0; k < a.n; k++)
		ck_assert(tensor_near(b.x[k], 2.0 * a.x[k], SAME_ABS, SAME_REL));
	ck_assert(tensor_max_diff(&dflt, &one, "weights") > 1e-4);
}
END_TEST

/* The four score views with softcap and a causal mask, against each other. */
START_TEST(test_scores_views)
{
#define VIEW(v) ",\"mask\":\"causal\",\"softcap\":0.5,\"scores\":\"" v "\""
	struct answer raw = harness_tiny3(VIEW("raw")), cap = harness_tiny3(VIEW("softcap"));
	struct answer masked = harness_tiny3(VIEW("masked")), soft = harness_tiny3(VIEW("softmax"));
#undef VIEW
	struct answer nocap = harness_tiny3(",\"scores\":\"softcap\""),
		      noraw = harness_tiny3(",\"scores\":\"raw\"");
	struct flat r, c, m, s, w;

	harness_expect_ok(&raw);
	harness_expect_ok(&cap);
	harness_expect_ok(&masked);
	harness_expect_ok(&soft);
	r = tensor_at(&raw, "scores");
	c = tensor_at(&cap, "scores");
	m = tensor_at(&masked, "scores");
	s = tensor_at(&soft, "scores");
	w = tensor_at(&soft, "weights");
	tensor_assert_shape("scores", &r, 3, 2, 3, 3);
	for (size_t k = 0; k < r.n; k++) {
		size_t i = (k / 3) % 3, j = k % 3;

		ck_assert(tensor_near(c.x[k], 0.5 * tanh(r.x[k] / 0.5), SAME_ABS, SAME_REL));
		ck_assert(fabsf(c.x[k]) <= 0.5f);
		if (j > i)
			ck_assert(m.x[k] == -INFINITY);
		else
			ck_assert(tensor_near(m.x[k], c.x[k], SAME_ABS, SAME_REL));
	}
	tensor_assert_near("softmax view vs weights", &s, &w, SAME_ABS, SAME_REL);
	/* no softcap: the softcap view is the raw one */
	harness_expect_ok(&nocap);
	tensor_assert_same(&nocap, &noraw, "scores", 0, 0);
}
END_TEST

/* A huge softcap is none; softcap changes the weights otherwise. */
START_TEST(test_softcap)
{
	struct answer none = harness_tiny3(""), zero = harness_tiny3(",\"softcap\":0");
	struct answer big = harness_tiny3(",\"softcap\":1000000"),
		      small = harness_tiny3(",\"softcap\":0.1");

	harness_expect_ok(&zero);
	harness_expect_ok(&big);
	harness_expect_ok(&small);
	tensor_assert_same(&none, &zero, "output", 0, 0);
	tensor_assert_same(&none, &big, "weights", SAME_ABS, SAME_REL);
	ck_assert(tensor_max_diff(&none, &small, "weights") > 1e-3);
}
END_TEST

/* A softcap below float32's smallest positive value still caps (c > 0 is
 * on): every score within c of 0, so equal weights, as a tiny float cap. */
START_TEST(test_softcap_below_float32)
{
	struct answer none = harness_tiny3(""), sub = harness_tiny3(",\"softcap\":1e-40");
	struct answer tiny = harness_tiny3(",\"softcap\":1e-50");

	harness_expect_ok(&sub);
	harness_expect_ok(&tiny);
	ck_assert(tensor_max_diff(&none, &sub, "weights") > 1e-3);
	tensor_assert_same(&sub, &tiny, "weights", 0, 0);
}
END_TEST

START_TEST(test_weights_modes)
{
	struct answer per = harness_tiny3(",\"weights\":\"per_head\""), dflt = harness_tiny3("");
	struct answer mean = harness_tiny3(",\"weights\":\"mean\""),
		      none = harness_tiny3(",\"weights\":\"none\"");
	struct flat p, m;

	harness_expect_ok(&per);
	harness_expect_ok(&mean);
	harness_expect_ok(&none);
	tensor_assert_same(&per, &dflt, "weights", 0, 0);
	p = tensor_at(&per, "weights");
	m = tensor_at(&mean, "weights");
	tensor_assert_shape("mean", &m, 2, 3, 3);
	for (size_t k = 0; k < 9; k++)
		ck_assert(
		    tensor_near(m.x[k], 0.5 * ((double)p.x[k] + p.x[k + 9]), SAME_ABS, SAME_REL));
	ck_assert_ptr_null(json_object_get(none.json, "weights"));
	tensor_assert_same(&none, &per, "output", SAME_ABS, SAME_REL);
	tensor_assert_same(&mean, &per, "output", SAME_ABS, SAME_REL);
}
END_TEST

/* The same bits whether floats travel as text or as base64, -inf included. */
static void assert_bits_equal(const char *what, const struct flat *text, const struct flat *b64)
{
	ck_assert_msg(text->n == b64->n && text->rank == b64->rank &&
			  memcmp(text->shape, b64->shape, text->rank * sizeof(size_t)) == 0,
		      "%s: shapes differ", what);
	for (size_t k = 0; k < text->n; k++) {
		float a = text->x[k], b = b64->x[k];

		/* "0" and "-0" both parse to +0 through jansson: compare zeros by value */
		ck_assert_msg(memcmp(&a, &b, sizeof(a)) == 0 || (a == 0 && b == 0) ||
				  (isnan(a) && isnan(b)),
			      "%s[%zu]: text %.9g, base64 %.9g", what, k, (double)a, (double)b);
	}
}

START_TEST(test_base64_output)
{
	const char *opts = ",\"mask\":\"causal\",\"scores\":\"masked\"";
	struct answer f = harness_tiny3(opts),
		      b = harness_tiny3(harness_fmt("%s,\"encoding\":\"base64\"", opts));
	struct answer rf = harness_attention(TINY "\"embeddings\":[" X3 ",[" R3 "]]}");
	struct answer rb =
	    harness_attention(TINY "\"embeddings\":[" X3 ",[" R3 "]],\"encoding\":\"base64\"}");
	static const char *const keys[] = {"output", "weights", "scores"};

	harness_expect_ok(&f);
	harness_expect_ok(&b);
	for (size_t k = 0; k < 3; k++) {
		struct flat x = tensor_at(&f, keys[k]), y = tensor_at(&b, keys[k]);

		ck_assert_msg(json_is_object(harness_field(b.json, keys[k])), "%s is not base64",
			      keys[k]);
		assert_bits_equal(keys[k], &x, &y);
	}
	/* ragged: one base64 tensor per item */
	harness_expect_ok(&rf);
	harness_expect_ok(&rb);
	for (size_t item = 0; item < 2; item++) {
		struct flat x = tensor_item(&rf, "output", item),
			    y = tensor_item(&rb, "output", item);
		struct flat wx = tensor_item(&rf, "weights", item),
			    wy = tensor_item(&rb, "weights", item);

		assert_bits_equal("ragged output", &x, &y);
		assert_bits_equal("ragged weights", &wx, &wy);
	}
}
END_TEST

/* Inputs as nested arrays, {"shape", "data"} and {"shape", "base64"} are one. */
START_TEST(test_tensor_forms)
{
	struct answer nested = harness_attention(TINY EMB1 ",\"key\":" X3 "}");
	struct answer data = harness_attention(TINY "\"embeddings\":{\"shape\":[1,8],\"data\":" R0
						    "},\"key\":" X3 "}");
	struct answer b64 = harness_attention(
	    TINY "\"embeddings\":{\"shape\":[1,8],\"base64\":\"" R0_B64 "\"},\"key\":" X3 "}");
	struct answer key64 =
	    harness_attention(harness_fmt(TINY EMB1 ",\"key\":{\"shape\":[3,8],\"base64\":\"%s\"}}",
					  tensor_b64_encode(harness_x3, sizeof(harness_x3))));
	struct answer batched = harness_attention(
	    TINY "\"embeddings\":{\"shape\":[1,1,8],\"data\":" R0 "},\"key\":[" X3 "]}");
	struct flat o;

	harness_expect_ok(&nested);
	harness_expect_ok(&data);
	harness_expect_ok(&b64);
	harness_expect_ok(&key64);
	tensor_assert_same(&nested, &data, "output", 0, 0);
	tensor_assert_same(&nested, &b64, "output", 0, 0);
	tensor_assert_same(&nested, &key64, "output", 0, 0);
	harness_expect_ok(&batched);
	o = tensor_at(&batched, "output");
	tensor_assert_shape("batched output", &o, 3, 1, 1, 8);
}
END_TEST

/* precision: at most that many significant digits, close to the full value. */
START_TEST(test_precision)
{
	struct answer full = harness_tiny3(""), p3 = harness_tiny3(",\"precision\":3");
	struct answer p9 = harness_tiny3(",\"precision\":9");
	struct flat a = tensor_at(&full, "output"), b, w;

	harness_expect_ok(&p3);
	b = tensor_at(&p3, "output");
	for (size_t k = 0; k < a.n; k++) {
		double v = json_number_value(
		    json_array_get(json_array_get(harness_field(p3.json, "output"), k / 8), k % 8));
		char buf[32];

		snprintf(buf, sizeof(buf), "%.3g", v);
		ck_assert_msg(strtod(buf, NULL) == v, "%.17g has more than 3 digits", v);
		ck_assert(tensor_near(b.x[k], a.x[k], 1e-12, 5e-3));
	}
	w = tensor_at(&p3, "weights");
	ck_assert_uint_eq(w.n, 18);
	harness_expect_ok(&p9);
	tensor_assert_same(&p9, &full, "output", 0, 0);
	tensor_assert_same(&p9, &full, "weights", 0, 0);
}
END_TEST

/*
 * Positions are offset + index, or the lists: in cross-attention a side
 * without a list beside one with a list is at offset + index, for ALiBi as
 * for RoPE. Offset 10 with the keys at 10, 11, 12 (or the queries at 10,
 * 11) puts every pair as far apart as no positions do.
 */
START_TEST(test_alibi_offset_beside_a_list)
{
	const char *q = TINY "\"embeddings\":[" R0 "," R1 "],\"key\":" X3;
	struct answer plain = harness_attention(harness_fmt("%s,\"positional\":\"alibi\"}", q));
	struct answer keys = harness_attention(
	    harness_fmt("%s,\"positional\":{\"type\":\"alibi\",\"offset\":10,"
			"\"key_positions\":[10,11,12]}}",
			q));
	struct answer queries = harness_attention(harness_fmt(
	    "%s,\"positional\":{\"type\":\"alibi\",\"offset\":10,\"positions\":[10,11]}}", q));

	harness_expect_ok(&plain);
	harness_expect_ok(&keys);
	harness_expect_ok(&queries);
	tensor_assert_same(&plain, &keys, "weights", SAME_ABS, SAME_REL);
	tensor_assert_same(&plain, &queries, "weights", SAME_ABS, SAME_REL);
}
END_TEST

static Suite *options_suite(void)
{
	Suite *s = suite_create("api_options");
	TCase *tc;

	tc = harness_tcase(s, "mask", 60);
	tcase_add_test(tc, test_mask_none);
	tcase_add_test(tc, test_mask_causal_forms);
	tcase_add_test(tc, test_mask_batch_head_shapes);
	tcase_add_test(tc, test_mask_bias_values);
	tcase_add_test(tc, test_mask_alignment);
	tcase_add_test(tc, test_mask_alignment_per_item);
	tcase_add_test(tc, test_ragged_short_first);
	tcase_add_test(tc, test_mask_window);
	tcase_add_test(tc, test_mask_lengths);

	tc = harness_tcase(s, "positional", 60);
	tcase_add_test(tc, test_positional_kinds);
	tcase_add_test(tc, test_rope_parameters);
	tcase_add_test(tc, test_rope_key_positions);
	tcase_add_test(tc, test_alibi);
	tcase_add_test(tc, test_alibi_alignment);
	tcase_add_test(tc, test_alibi_offset_beside_a_list);
	tcase_add_test(tc, test_sinusoidal);
	tcase_add_test(tc, test_positions_past_float32);

	tc = harness_tcase(s, "options", 60);
	tcase_add_test(tc, test_scale);
	tcase_add_test(tc, test_scores_views);
	tcase_add_test(tc, test_softcap);
	tcase_add_test(tc, test_softcap_below_float32);
	tcase_add_test(tc, test_weights_modes);
	tcase_add_test(tc, test_base64_output);
	tcase_add_test(tc, test_tensor_forms);
	tcase_add_test(tc, test_precision);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .setup = harness_setup,
	    .teardown = harness_teardown,
	};

	return suite_main(argc, argv, options_suite, &opts);
}
