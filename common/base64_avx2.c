/*
 * base64_avx2.c: the AVX2 bulk loops of base64 (see base64_kernels.h), after
 * Muła and Lemire, "Faster Base64 Encoding and Decoding Using AVX2
 * Instructions", ACM TOW 2018, as aklomp/base64 writes them. Compiled for
 * AVX2 by function attribute; base64.c calls them only when the CPU has it.
 *
 * Encoding, 24 bytes -> 32 characters per step: each 128-bit lane takes 12
 * bytes (the lanes load from in and in + 12), a shuffle puts each 3-byte
 * group's bytes in a 32-bit word, two multiplies move the four 6-bit fields
 * to the bottom of the word's four bytes, and a 16-entry table adds to each
 * value the offset of its alphabet range ('A', 'a', '0', '+', '/').
 *
 * Decoding, 32 characters -> 24 bytes per step: the high and low nibbles of
 * each character index two 16-entry bit tables whose AND is zero exactly for
 * the 64 alphabet characters (so one test per block finds any other byte,
 * '=' included); a third table indexed by the high nibble ('/' told apart)
 * turns characters into 6-bit values; two multiply-adds pack four values into
 * 24 bits, and two shuffles close the gaps.
 */
#include "base64_kernels.h"

#ifdef BASE64_HAVE_AVX2
#include <immintrin.h>

#define AVX2 __attribute__((target("avx2")))

/* The four 6-bit fields of each 3-byte group, one per byte, in the order
 * the characters are written. lanes: bytes 0..11 of each 128-bit lane. */
AVX2 static __m256i enc_reshuffle(__m256i lanes)
{
	const __m256i in = _mm256_shuffle_epi8(
	    lanes, _mm256_setr_epi8(1, 0, 2, 1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10, 1, 0, 2,
				    1, 4, 3, 5, 4, 7, 6, 8, 7, 10, 9, 11, 10));
	const __m256i t0 = _mm256_and_si256(in, _mm256_set1_epi32(0x0fc0fc00));
	const __m256i t1 = _mm256_mulhi_epu16(t0, _mm256_set1_epi32(0x04000040));
	const __m256i t2 = _mm256_and_si256(in, _mm256_set1_epi32(0x003f03f0));
	const __m256i t3 = _mm256_mullo_epi16(t2, _mm256_set1_epi32(0x01000010));

	return _mm256_or_si256(t1, t3);
}

/* 6-bit values to alphabet characters: value + the offset of its range. */
AVX2 static __m256i enc_translate(__m256i v)
{
	const __m256i offsets = _mm256_setr_epi8(
	    65, 71, -4, -4, -4, -4, -4, -4, -4, -4, -4, -4, -19, -16, 0, 0, 65, 71, -4, -4, -4,
	    -4, -4, -4, -4, -4, -4, -4, -19, -16, 0, 0);
	/* 0..25 -> 0 ('A'), 26..51 -> 1 ('a'), 52..61 -> 2..11 ('0'), 62 -> 12, 63 -> 13 */
	__m256i range = _mm256_subs_epu8(v, _mm256_set1_epi8(51));
	const __m256i lower = _mm256_cmpgt_epi8(v, _mm256_set1_epi8(25));

	range = _mm256_sub_epi8(range, lower);
	return _mm256_add_epi8(v, _mm256_shuffle_epi8(offsets, range));
}

AVX2 size_t base64_encode_avx2_bulk(char *out, const uint8_t *in, size_t n)
{
	size_t i = 0;

	for (; n >= 28 && i <= n - 28; i += 24) {
		__m256i lanes = _mm256_inserti128_si256(
		    _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(in + i))),
		    _mm_loadu_si128((const __m128i *)(in + i + 12)), 1);

		_mm256_storeu_si256((__m256i *)(out + i / 3 * 4),
				    enc_translate(enc_reshuffle(lanes)));
	}
	return i;
}

/* Four 6-bit values per 32-bit word -> 3 bytes, packed to 24 bytes at the
 * bottom of the register (the top 8 bytes are garbage). */
AVX2 static __m256i dec_reshuffle(__m256i v)
{
	const __m256i ab_bc = _mm256_maddubs_epi16(v, _mm256_set1_epi32(0x01400140));
	__m256i out = _mm256_madd_epi16(ab_bc, _mm256_set1_epi32(0x00011000));

	out = _mm256_shuffle_epi8(out, _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12,
							 -1, -1, -1, -1, 2, 1, 0, 6, 5, 4, 10,
							 9, 8, 14, 13, 12, -1, -1, -1, -1));
	return _mm256_permutevar8x32_epi32(out, _mm256_setr_epi32(0, 1, 2, 4, 5, 6, -1, -1));
}

AVX2 size_t base64_decode_avx2_bulk(uint8_t *out, const char *in, size_t n)
{
	const __m256i lut_lo = _mm256_setr_epi8(
	    0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1a, 0x1b, 0x1b,
	    0x1b, 0x1a, 0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1a,
	    0x1b, 0x1b, 0x1b, 0x1a);
	const __m256i lut_hi = _mm256_setr_epi8(
	    0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
	    0x10, 0x10, 0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10,
	    0x10, 0x10, 0x10, 0x10);
	const __m256i lut_roll = _mm256_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0,
						  0, 0, 0, 0, 0, 16, 19, 4, -65, -65, -71, -71,
						  0, 0, 0, 0, 0, 0, 0, 0);
	const __m256i mask_2f = _mm256_set1_epi8(0x2f);
	size_t i = 0;

	for (; n >= 48 && i <= n - 48; i += 32) {
		__m256i s = _mm256_loadu_si256((const __m256i *)(in + i));
		const __m256i hi_nib = _mm256_and_si256(_mm256_srli_epi32(s, 4), mask_2f);
		const __m256i lo_nib = _mm256_and_si256(s, mask_2f);
		const __m256i hi = _mm256_shuffle_epi8(lut_hi, hi_nib);
		const __m256i lo = _mm256_shuffle_epi8(lut_lo, lo_nib);
		__m256i roll;

		if (!_mm256_testz_si256(lo, hi))
			break; /* a byte outside the alphabet: the scalar kernel reports it */
		/* '/' (0x2f) shares its high nibble with '+': index 1 instead of 2 */
		roll = _mm256_shuffle_epi8(lut_roll,
					   _mm256_add_epi8(_mm256_cmpeq_epi8(s, mask_2f), hi_nib));
		s = _mm256_add_epi8(s, roll);
		_mm256_storeu_si256((__m256i *)(out + i / 4 * 3), dec_reshuffle(s));
	}
	return i;
}
#endif
