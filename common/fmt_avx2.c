/*
 * fmt_avx2.c: fmt_floats_shortest's decimals and digits, four numbers a
 * vector (see fmt_kernels.h), each lane doing what fmt.c's scalar code does
 * for one number, in 64-bit lanes. Compiled for AVX2 by function attribute;
 * fmt.c calls them only when the CPU has it.
 *
 * Decimals: Schubfach as fmt.c's to_decimal, the scale gathered per lane
 * from fmt_scales and fmt_scales_g; the three 64 x 64 -> 128 products' high
 * halves from four 32 x 32 -> 64 products each (exact: the carries are
 * added); s / 10 as s ceil(2^35 / 10) >> 35 (exact for s < 2^32); the
 * choice by compares and blends in the same order as to_decimal's selects.
 * A vector holding a NaN, an infinity, a subnormal or a significand of 2^23
 * (the lopsided interval) is left to fmt.c.
 *
 * Digits: digits9's fraction steps (times 100, mask) in 64-bit lanes, the
 * four pairs gathered into 16-bit lanes of a word and split there into
 * tens (q 6554 >> 16, exact for q < 100) and ones.
 */
#include "fmt_kernels.h"

#ifdef FMT_HAVE_AVX2
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))
#define M32 0xffffffffLL

/* The high 64 bits of a b (a, b < 2^64), per 64-bit lane. */
AVX2 static __m256i mulhi64(__m256i a, __m256i b)
{
	const __m256i m32 = _mm256_set1_epi64x(M32);
	__m256i ah = _mm256_srli_epi64(a, 32), bh = _mm256_srli_epi64(b, 32);
	__m256i ll = _mm256_mul_epu32(a, b), lh = _mm256_mul_epu32(a, bh);
	__m256i hl = _mm256_mul_epu32(ah, b), hh = _mm256_mul_epu32(ah, bh);
	__m256i mid = _mm256_add_epi64(
	    _mm256_srli_epi64(ll, 32),
	    _mm256_add_epi64(_mm256_and_si256(lh, m32), _mm256_and_si256(hl, m32)));

	return _mm256_add_epi64(
	    _mm256_add_epi64(hh, _mm256_srli_epi64(mid, 32)),
	    _mm256_add_epi64(_mm256_srli_epi64(lh, 32), _mm256_srli_epi64(hl, 32)));
}

/* fmt.c's rop: cp g 2^-95 rounded to odd. */
AVX2 static __m256i rop(__m256i g, __m256i cp)
{
	const __m256i m32 = _mm256_set1_epi64x(M32);
	__m256i x1 = mulhi64(g, cp);
	__m256i sticky = _mm256_srli_epi64(_mm256_add_epi64(_mm256_and_si256(x1, m32), m32), 32);

	return _mm256_or_si256(_mm256_srli_epi64(x1, 31), sticky);
}

/* a b for a < 2^32, b < 2^64 (the low 64 bits), per 64-bit lane. */
AVX2 static __m256i mul32x64(__m256i a, __m256i b)
{
	return _mm256_add_epi64(
	    _mm256_mul_epu32(a, b),
	    _mm256_slli_epi64(_mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)), 32));
}

/* Whether all four bit patterns are zero or normal with a significand other
 * than 2^23 (what the vector path does). */
AVX2 static int all_plain(__m128i bits)
{
	__m128i abs = _mm_and_si128(bits, _mm_set1_epi32(0x7fffffff));
	__m128i normal = _mm_and_si128(_mm_cmpgt_epi32(abs, _mm_set1_epi32(0x007fffff)),
				       _mm_cmpgt_epi32(_mm_set1_epi32(0x7f800000), abs));
	__m128i pow2 =
	    _mm_cmpeq_epi32(_mm_and_si128(abs, _mm_set1_epi32(0x007fffff)), _mm_setzero_si128());
	__m128i zero = _mm_cmpeq_epi32(abs, _mm_setzero_si128());
	__m128i ok = _mm_or_si128(_mm_andnot_si128(pow2, normal), zero);

	return _mm_movemask_ps(_mm_castsi128_ps(ok)) == 0xf;
}

/* The decimals of four plain numbers (bits in 32-bit lanes): fmt.c's
 * to_decimal and the digits' length per lane. */
AVX2 static void decimals4(__m128i bits32, uint64_t *y, int64_t *e, uint64_t *neg)
{
	const __m256i one = _mm256_set1_epi64x(1), two = _mm256_set1_epi64x(2);
	__m256i bits = _mm256_cvtepu32_epi64(bits32);
	__m256i abs = _mm256_and_si256(bits, _mm256_set1_epi64x(0x7fffffff));
	__m256i bq = _mm256_srli_epi64(abs, 23);
	__m256i c = _mm256_or_si256(_mm256_and_si256(abs, _mm256_set1_epi64x(0x7fffff)),
				    _mm256_set1_epi64x(0x800000));
	/* k and h: the two bytes of fmt_scales[bq], read as the low half of a
	 * 32-bit load (bq <= 254 here, so within the table) */
	__m128i kh = _mm256_i64gather_epi32((const int *)(const void *)fmt_scales, bq, 2);
	__m256i k = _mm256_cvtepi32_epi64(_mm_srai_epi32(_mm_slli_epi32(kh, 24), 24));
	__m256i h =
	    _mm256_cvtepu32_epi64(_mm_and_si128(_mm_srli_epi32(kh, 8), _mm_set1_epi32(0xff)));
	__m256i g = _mm256_i64gather_epi64((const long long *)(const void *)fmt_scales_g, bq, 8);

	/* pass 2: v and its bounds times 10^-k, times 4, rounded to odd */
	__m256i out = _mm256_and_si256(c, one);
	__m256i cb = _mm256_slli_epi64(c, 2);
	__m256i vb = rop(g, _mm256_sllv_epi64(cb, h));
	__m256i vbl = rop(g, _mm256_sllv_epi64(_mm256_sub_epi64(cb, two), h));
	__m256i vbr = rop(g, _mm256_sllv_epi64(_mm256_add_epi64(cb, two), h));

	/* pass 3: the choice (values < 2^40, so signed compares do) */
	__m256i lo = _mm256_add_epi64(vbl, out), hi = _mm256_sub_epi64(vbr, out);
	__m256i s = _mm256_srli_epi64(vb, 2), t = _mm256_add_epi64(s, one);
	__m256i q10 = _mm256_srli_epi64(_mm256_mul_epu32(s, _mm256_set1_epi64x(0xcccccccd)), 35);
	__m256i sp10 = _mm256_mul_epu32(q10, _mm256_set1_epi64x(10));
	__m256i tp10 = _mm256_add_epi64(sp10, _mm256_set1_epi64x(10));
	__m256i closer = _mm256_cmpgt_epi64(
	    _mm256_add_epi64(_mm256_and_si256(vb, _mm256_set1_epi64x(3)), _mm256_and_si256(s, one)),
	    two);
	__m256i r = _mm256_sub_epi64(
	    s, _mm256_andnot_si256(_mm256_cmpgt_epi64(_mm256_slli_epi64(t, 2), hi), closer));

	r = _mm256_blendv_epi8(r, t, _mm256_cmpgt_epi64(lo, _mm256_slli_epi64(s, 2)));
	r = _mm256_blendv_epi8(sp10, r, _mm256_cmpgt_epi64(lo, _mm256_slli_epi64(sp10, 2)));
	r = _mm256_blendv_epi8(tp10, r, _mm256_cmpgt_epi64(_mm256_slli_epi64(tp10, 2), hi));

	/* r has 7 to 9 digits (a normal number's, see fmt.c): y and e */
	__m256i ge7 = _mm256_cmpgt_epi64(r, _mm256_set1_epi64x(9999999));
	__m256i ge8 = _mm256_cmpgt_epi64(r, _mm256_set1_epi64x(99999999));
	__m256i mul = _mm256_sub_epi64(
	    _mm256_set1_epi64x((long long)(FRAC_E8 * 100)),
	    _mm256_add_epi64(_mm256_and_si256(ge7, _mm256_set1_epi64x((long long)(FRAC_E8 * 90))),
			     _mm256_and_si256(ge8, _mm256_set1_epi64x((long long)(FRAC_E8 * 9)))));
	__m256i zero = _mm256_cmpeq_epi64(abs, _mm256_setzero_si256());

	_mm256_storeu_si256((__m256i *)(void *)y, _mm256_andnot_si256(zero, mul32x64(r, mul)));
	_mm256_storeu_si256((__m256i *)(void *)e,
			    _mm256_sub_epi64(_mm256_add_epi64(k, _mm256_set1_epi64x(6)),
					     _mm256_add_epi64(ge7, ge8)));
	_mm256_storeu_si256((__m256i *)(void *)neg, _mm256_srli_epi64(bits, 31));
}

AVX2 size_t fmt_decimals_avx2(const float *x, size_t n, uint64_t *y, int64_t *e, uint64_t *neg)
{
	size_t i;

	for (i = 0; i + 4 <= n; i += 4) {
		__m128i bits = _mm_loadu_si128((const __m128i *)(const void *)(x + i));

		if (!all_plain(bits))
			break;
		decimals4(bits, y + i, e + i, neg + i);
	}
	return i;
}

/* a 100 for a < 2^57, per 64-bit lane */
AVX2 static __m256i mul100(__m256i a)
{
	return mul32x64(_mm256_set1_epi64x(100), a);
}

AVX2 size_t fmt_digits_avx2(const uint64_t *y, uint64_t *h, uint64_t *w, size_t n)
{
	const __m256i frac = _mm256_set1_epi64x((long long)FRAC57);
	size_t i;

	for (i = 0; i + 4 <= n; i += 4) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(y + i));
		__m256i y1 = mul100(_mm256_and_si256(v, frac));
		__m256i y2 = mul100(_mm256_and_si256(y1, frac));
		__m256i y3 = mul100(_mm256_and_si256(y2, frac));
		__m256i y4 = mul100(_mm256_and_si256(y3, frac));
		__m256i pairs = _mm256_or_si256(
		    _mm256_or_si256(_mm256_srli_epi64(y1, 57),
				    _mm256_slli_epi64(_mm256_srli_epi64(y2, 57), 16)),
		    _mm256_or_si256(_mm256_slli_epi64(_mm256_srli_epi64(y3, 57), 32),
				    _mm256_slli_epi64(_mm256_srli_epi64(y4, 57), 48)));
		__m256i tens = _mm256_mulhi_epu16(pairs, _mm256_set1_epi16(6554));
		__m256i ones =
		    _mm256_sub_epi16(pairs, _mm256_mullo_epi16(tens, _mm256_set1_epi16(10)));
		__m256i d = _mm256_or_si256(tens, _mm256_slli_epi16(ones, 8));

		d = _mm256_add_epi64(d, _mm256_set1_epi64x((long long)ZEROS8));
		_mm256_storeu_si256((__m256i *)(void *)(w + i), d);
		_mm256_storeu_si256((__m256i *)(void *)(h + i), _mm256_srli_epi64(v, 57));
	}
	return i;
}
#endif
