/*
 * half.h: IEEE binary16 (float16) conversions, written here to compare our
 * float32 results with the float16 ONNX conformance outputs.
 *
 * No allocation, no failure. Every name here starts with half_: the Makefile
 * links this file into every test binary.
 */
#ifndef ATTN_TESTS_HALF_H
#define ATTN_TESTS_HALF_H

#include <stdint.h>

/*
 * Rounds x to the nearest IEEE binary16, ties to even. Overflow (|x| >= 65520,
 * the midpoint above 65504) gives +-inf; NaN stays a quiet NaN.
 */
uint16_t half_from_float(float x);

/* The value of h, exactly. */
float half_to_float(uint16_t h);

/* Distance in float16 ulps, with -0 == +0; NaN is far from everything. */
long half_ulps(uint16_t a, uint16_t b);

#endif
