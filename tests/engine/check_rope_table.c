/*
 * check_rope_table.c: attn_rope_inv_freq (engine/checkpoint_families.c), the
 * RoPE table a Llama-family checkpoint's config gives, against torch
 * (transformers' modeling_rope_utils.py run on torch 1.13, float32):
 * default (two thetas), linear and llama3 scaling, within 2 ulps (torch's
 * vectorised pow).
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/checkpoint.h"
#include "tests/lib/suite_main.h"

/* transformers' _compute_*_parameters on torch 1.13 (float32), printed %.9g. */
static const float torch_default_16[8] = {1.0f,		  0.316227764f,	  0.100000001f,
					  0.0316227786f,  0.00999999978f, 0.00316227786f,
					  0.00100000005f, 0.000316227786f};
static const float torch_default_1e6_12[6] = {1.0f,	      0.099999994f,    0.00999999885f,
					      0.00100000005f, 9.99999684e-05f, 1.00000034e-05f};
static const float torch_linear_16_f4[8] = {0.25f,	     0.079056941f,   0.0250000004f,
					    0.00790569466f,  0.00249999994f, 0.000790569466f,
					    0.000250000012f, 7.90569466e-05f};
/* theta 500000, factor 8, low 1, high 4, original 8192 (Llama 3.1), D = 128:
 * i < 29 high frequencies (kept), 29 .. 35 smoothed, the rest divided by 8 */
static const float torch_llama3_128[64] = {1.0f,
					   0.814617217f,
					   0.663601279f,
					   0.540580988f,
					   0.440366626f,
					   0.358730227f,
					   0.292227834f,
					   0.238053814f,
					   0.193922758f,
					   0.157972813f,
					   0.128687382f,
					   0.10483095f,
					   0.0853971019f,
					   0.0695659518f,
					   0.0566696189f,
					   0.0461640507f,
					   0.0376060307f,
					   0.0306345206f,
					   0.0249554086f,
					   0.0203291047f,
					   0.0165604409f,
					   0.0134904198f,
					   0.0109895291f,
					   0.00895225909f,
					   0.00729266508f,
					   0.00594073068f,
					   0.00483942125f,
					   0.00394227589f,
					   0.00321144611f,
					   0.00216657063f,
					   0.00137189368f,
					   0.00085675146f,
					   0.000524846022f,
					   0.00031269365f,
					   0.000178507791f,
					   9.55621217e-05f,
					   7.78465546e-05f,
					   6.34151438e-05f,
					   5.16590699e-05f,
					   4.20823671e-05f,
					   3.42810235e-05f,
					   2.79259093e-05f,
					   2.2748929e-05f,
					   1.85316694e-05f,
					   1.50962178e-05f,
					   1.22976389e-05f,
					   1.00178686e-05f,
					   8.1607277e-06f,
					   6.64786967e-06f,
					   5.41546933e-06f,
					   4.41153452e-06f,
					   3.59371188e-06f,
					   2.92749974e-06f,
					   2.38479174e-06f,
					   1.94269251e-06f,
					   1.58255079e-06f,
					   1.28917316e-06f,
					   1.05018262e-06f,
					   8.55496921e-07f,
					   6.96902532e-07f,
					   5.6770881e-07f,
					   4.6246538e-07f,
					   3.7673226e-07f,
					   3.06892588e-07f};

/* Distance in ulps of two positive floats. */
static long ulps(float a, float b)
{
	int32_t ia, ib;

	memcpy(&ia, &a, sizeof ia);
	memcpy(&ib, &b, sizeof ib);
	return labs((long)ia - (long)ib);
}

static void assert_rope(const struct attn_checkpoint_config *cfg, size_t D, const float *want)
{
	float got[64];

	attn_rope_inv_freq(got, D, cfg);
	for (size_t i = 0; i < D / 2; i++)
		ck_assert_msg(ulps(got[i], want[i]) <= 2, "inv_freq[%zu] = %.9g, torch %.9g", i,
			      (double)got[i], (double)want[i]);
}

START_TEST(rope_tables)
{
	struct attn_checkpoint_config cfg = {.rope_theta = 10000.0};

	assert_rope(&cfg, 16, torch_default_16);
	cfg.rope_theta = 1e6;
	assert_rope(&cfg, 12, torch_default_1e6_12);
	cfg.rope_theta = 10000.0;
	cfg.rope_type = ATTN_ROPE_LINEAR;
	cfg.rope_factor = 4.0;
	assert_rope(&cfg, 16, torch_linear_16_f4);
	cfg = (struct attn_checkpoint_config){.rope_theta = 500000.0,
					      .rope_type = ATTN_ROPE_LLAMA3,
					      .rope_factor = 8.0,
					      .rope_low_freq_factor = 1.0,
					      .rope_high_freq_factor = 4.0,
					      .rope_original_max_positions = 8192};
	assert_rope(&cfg, 128, torch_llama3_128);
}
END_TEST

static Suite *rope_table_suite(void)
{
	Suite *s = suite_create("rope_table");
	TCase *tc = tcase_create("rope");

	tcase_add_test(tc, rope_tables);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, rope_table_suite, NULL);
}
