/*
 * commas.h: where the commas are in 64 bytes of text, as a bitmap.
 *
 * fastjson's row loop takes each number's position from this map instead of
 * from the previous number's length, so one number's lexing does not wait
 * for the last one's (see row_short_run in fastjson_row.c). commas64 uses
 * SSE2 where the target has it; commas64_ref is its naive twin
 * (tests/api/check_fastpath.c compares them), and the version used elsewhere.
 * Pure functions: they read p[0 .. 64) and nothing else.
 */
#ifndef API_JSON_COMMAS_H
#define API_JSON_COMMAS_H

#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Bit k set when p[k] == ',', k = 0 .. 63. */
static inline uint64_t commas64_ref(const char *p)
{
	uint64_t m = 0;

	for (int k = 0; k < 64; k++)
		m |= (uint64_t)(p[k] == ',') << k;
	return m;
}

#if defined(__SSE2__)
#define COMMAS64_FAST 1 /* worth a map: fastjson uses it only then */
/* 16 bytes at p compared with ',' at once, four times */
static inline __attribute__((always_inline)) uint64_t commas64(const char *p)
{
	const __m128i comma = _mm_set1_epi8(',');
	const __m128i *v = (const __m128i *)(const void *)p;
	uint64_t m0 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(v), comma));
	uint64_t m1 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(v + 1), comma));
	uint64_t m2 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(v + 2), comma));
	uint64_t m3 = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(v + 3), comma));

	return m0 | m1 << 16 | m2 << 32 | m3 << 48;
}
#else
#define COMMAS64_FAST 0
static inline uint64_t commas64(const char *p)
{
	return commas64_ref(p);
}
#endif

#endif
