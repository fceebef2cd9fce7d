/*
 * base64.c: the fast base64 kernels and their dispatch (see base64.h).
 *
 * Scalar decoding reads a block of four quanta (16 characters) at a time:
 * sixteen byte-table lookups ORed into one flag, one branch per block, and
 * each quantum's 24 bits stored as one 4-byte word whose fourth byte the
 * next quantum overwrites. A block that holds anything but alphabet
 * characters goes to the naive twin's checks (base64_ref.c), which find the
 * first problem from the block's start, so *bad_at is the same; so is the
 * last quantum, the only one where '=' is allowed. The AVX2 kernels
 * (base64_avx2.c) go first where the CPU has them and leave the scalar
 * kernels the tail and any block they refuse.
 *
 * Byte order: the contract's float32 bytes are little-endian; on a
 * big-endian host the two f32 helpers swap each value's bytes.
 */
#include "base64.h"
#include "base64_kernels.h"

#include <string.h>

/* 4 ceil(n / 3); SIZE_MAX when that does not fit in a size_t. */
size_t base64_encoded_len(size_t n)
{
	size_t quanta = n / 3 + (n % 3 != 0);

	if (quanta > SIZE_MAX / 4)
		return SIZE_MAX;
	return quanta * 4;
}

/* ---- scalar ---------------------------------------------------------------- */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN 1
#else
#define HOST_BIG_ENDIAN 0
#endif

/*
 * Decoding tables, one per place in a quantum: D_k[c] is character c's 6 bits
 * already where they land in the quantum's 3 bytes as a little-endian word
 * holds them (bytes 0, 1, 2 = the first, second, third byte out), or
 * BAD_BIT (past the 3 bytes) when c is not in the alphabet. So a quantum is
 * four loads ORed and one 4-byte store, and any bad character shows in the
 * top byte. Built by the preprocessor from the alphabet's ranges.
 */
#define BAD_BIT 0x01000000u
#define SIX(c)                                                                                    \
	((c) >= 'A' && (c) <= 'Z'   ? (c) - 'A'                                                   \
	 : (c) >= 'a' && (c) <= 'z' ? (c) - 'a' + 26                                              \
	 : (c) >= '0' && (c) <= '9' ? (c) - '0' + 52                                              \
	 : (c) == '+'		    ? 62                                                          \
	 : (c) == '/'		    ? 63                                                          \
				    : -1)
/* the 24-bit quantum value v (first byte out on top) as a little-endian word */
#define LE24(v) ((((v) >> 16) & 0xffu) | ((((v) >> 8) & 0xffu) << 8) | (((v) & 0xffu) << 16))
#define PLACE(c, shift) (SIX(c) < 0 ? BAD_BIT : LE24((uint32_t)SIX(c) << (shift)))
#define R4(F, n) F(n), F(n + 1), F(n + 2), F(n + 3)
#define R16(F, n) R4(F, n), R4(F, n + 4), R4(F, n + 8), R4(F, n + 12)
#define R64(F, n) R16(F, n), R16(F, n + 16), R16(F, n + 32), R16(F, n + 48)
#define R256(F) R64(F, 0), R64(F, 64), R64(F, 128), R64(F, 192)
#define P0(c) PLACE(c, 18)
#define P1(c) PLACE(c, 12)
#define P2(c) PLACE(c, 6)
#define P3(c) PLACE(c, 0)
static const uint32_t D0[256] = {R256(P0)}, D1[256] = {R256(P1)};
static const uint32_t D2[256] = {R256(P2)}, D3[256] = {R256(P3)};

/* The quantum whose characters are c's low 4 bytes (the first lowest): its 3
 * bytes as a little-endian word, BAD_BIT set when one is not data. */
static inline uint32_t quantum_le(uint64_t c)
{
	return D0[c & 0xff] | D1[(c >> 8) & 0xff] | D2[(c >> 16) & 0xff] | D3[(c >> 24) & 0xff];
}

/* The four characters of the 24-bit group v as a little-endian word. */
static inline uint32_t chars_le(uint32_t v)
{
	const unsigned char *e = (const unsigned char *)base64_enc;

	return (uint32_t)e[v >> 18] | (uint32_t)e[(v >> 12) & 63] << 8 |
	       (uint32_t)e[(v >> 6) & 63] << 16 | (uint32_t)e[v & 63] << 24;
}

void base64_encode_scalar(char *out, const uint8_t *in, size_t n)
{
	size_t i = 0;

	/* pass 1: two 3-byte groups per 8-byte load (the first byte on top after
	 * the swap), each one 4-byte store of characters */
#if (defined(__GNUC__) || defined(__clang__)) && !HOST_BIG_ENDIAN
	for (; n >= 8 && i <= n - 8; i += 6) {
		uint64_t x;
		uint32_t c0, c1;

		memcpy(&x, in + i, 8);
		x = __builtin_bswap64(x);
		c0 = chars_le((uint32_t)(x >> 40));
		c1 = chars_le((uint32_t)(x >> 16) & 0xffffff);
		memcpy(out, &c0, 4);
		memcpy(out + 4, &c1, 4);
		out += 8;
	}
#endif
	/* pass 2: the rest, padding included, as the twin writes it */
	base64_encode_ref(out, in + i, n - i);
}

long long base64_decode_scalar(uint8_t *out, const char *in, size_t n, size_t *bad_at)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t body = n / 4 > 0 ? n / 4 - 1 : 0; /* quanta before the last: no '=' there */
	size_t i = 0, bad;
	long long rest;

	/* pass 1: blocks of four quanta (16 characters, two 8-byte loads), one
	 * check each; a quantum's 3 bytes go out as one 4-byte store whose
	 * fourth byte the next quantum (there always is one) overwrites.
	 * Big-endian hosts leave it all to pass 2. */
	for (; !HOST_BIG_ENDIAN && i + 4 <= body; i += 4) {
		uint64_t c01, c23;
		uint32_t w0, w1, w2, w3;

		memcpy(&c01, s + 4 * i, 8); /* characters, the first in the low byte */
		memcpy(&c23, s + 4 * i + 8, 8);
		w0 = quantum_le(c01);
		w1 = quantum_le(c01 >> 32);
		w2 = quantum_le(c23);
		w3 = quantum_le(c23 >> 32);
		if (((w0 | w1 | w2 | w3) & BAD_BIT) != 0)
			break; /* something else than data: the twin says what and where */
		memcpy(out + 3 * i, &w0, 4);
		memcpy(out + 3 * i + 3, &w1, 4);
		memcpy(out + 3 * i + 6, &w2, 4);
		memcpy(out + 3 * i + 9, &w3, 4);
	}
	/* pass 2: the rest, the last quantum and any problem, as the twin reads them */
	rest = base64_decode_ref(out + 3 * i, in + 4 * i, n - 4 * i, &bad);
	if (rest < 0) {
		*bad_at = 4 * i + bad;
		return -1;
	}
	return (long long)(3 * i) + rest;
}

/* ---- dispatch -------------------------------------------------------------- */

int base64_simd_available(void)
{
#ifdef BASE64_HAVE_AVX2
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
#else
	return 0;
#endif
}

void base64_encode_simd(char *out, const uint8_t *in, size_t n)
{
	size_t done = 0;

#ifdef BASE64_HAVE_AVX2
	done = base64_encode_avx2_bulk(out, in, n);
#endif
	base64_encode_scalar(out + done / 3 * 4, in + done, n - done);
}

long long base64_decode_simd(uint8_t *out, const char *in, size_t n, size_t *bad_at)
{
	size_t done = 0, bad;
	long long rest;

#ifdef BASE64_HAVE_AVX2
	done = base64_decode_avx2_bulk(out, in, n);
#endif
	rest = base64_decode_scalar(out + done / 4 * 3, in + done, n - done, &bad);
	if (rest < 0) {
		*bad_at = done + bad;
		return -1;
	}
	return (long long)(done / 4 * 3) + rest;
}

/* Worth a SIMD kernel: below this many bytes the scalar one is as quick. */
enum { SIMD_MIN_BYTES = 64 };

void base64_encode(char *out, const uint8_t *in, size_t n)
{
	if (n >= SIMD_MIN_BYTES && base64_simd_available())
		base64_encode_simd(out, in, n);
	else
		base64_encode_scalar(out, in, n);
}

long long base64_decode(uint8_t *out, const char *in, size_t n, size_t *bad_at)
{
	if (n >= SIMD_MIN_BYTES && base64_simd_available())
		return base64_decode_simd(out, in, n, bad_at);
	return base64_decode_scalar(out, in, n, bad_at);
}

/* ---- float32 bytes --------------------------------------------------------- */

/* Each float's 4 bytes reversed, from src to dst (which may be the same). */
static void swap_f32(float *dst, const float *src, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		uint8_t b[4], r[4];

		memcpy(b, &src[k], 4);
		r[0] = b[3];
		r[1] = b[2];
		r[2] = b[1];
		r[3] = b[0];
		memcpy(&dst[k], r, 4);
	}
}

void base64_f32_from_le(float *x, size_t n)
{
	if (HOST_BIG_ENDIAN)
		swap_f32(x, x, n);
}

void base64_encode_f32le(char *out, const float *x, size_t n)
{
	/* a big-endian host swaps a chunk at a time into a small buffer, whole
	 * 3-byte groups per chunk so the chunks' characters join up */
	enum { CHUNK = 3 * 256 };
	float tmp[CHUNK / 4];

	if (!HOST_BIG_ENDIAN) {
		base64_encode(out, (const uint8_t *)x, n * sizeof(float));
		return;
	}
	for (size_t k = 0; k < n; k += CHUNK / 4) {
		size_t m = n - k < CHUNK / 4 ? n - k : CHUNK / 4;

		swap_f32(tmp, x + k, m);
		base64_encode(out, (const uint8_t *)tmp, m * sizeof(float));
		out += m * sizeof(float) / 3 * 4;
	}
}
