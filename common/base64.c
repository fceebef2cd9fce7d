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

/* out[0 .. 4) = v's four bytes, most significant first. */
static void store_be32(uint8_t *out, uint32_t v)
{
	out[0] = (uint8_t)(v >> 24);
	out[1] = (uint8_t)(v >> 16);
	out[2] = (uint8_t)(v >> 8);
	out[3] = (uint8_t)v;
}

void base64_encode_scalar(char *out, const uint8_t *in, size_t n)
{
	size_t whole = n / 3 * 3;

	/* pass 1: whole 3-byte groups, 24 bits -> four 6-bit characters, one store */
	for (size_t i = 0; i < whole; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		char q[4] = {base64_enc[v >> 18], base64_enc[(v >> 12) & 63],
			     base64_enc[(v >> 6) & 63], base64_enc[v & 63]};

		memcpy(out, q, 4);
		out += 4;
	}
	/* pass 2: one or two bytes left: the twin zero-fills and pads them */
	base64_encode_ref(out, in + whole, n - whole);
}

/* The 24 bits of the quantum q; its characters' table values ORed into *flags. */
static uint32_t quantum_bits(const unsigned char *q, uint32_t *flags)
{
	uint32_t a = base64_dec[q[0]], b = base64_dec[q[1]];
	uint32_t c = base64_dec[q[2]], d = base64_dec[q[3]];

	*flags |= a | b | c | d;
	return a << 18 | b << 12 | c << 6 | d;
}

long long base64_decode_scalar(uint8_t *out, const char *in, size_t n, size_t *bad_at)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t body = n / 4 > 0 ? n / 4 - 1 : 0; /* quanta before the last: no '=' there */
	size_t i = 0, bad;
	long long rest;

	/* pass 1: blocks of four quanta, one check each; a quantum's store writes a
	 * fourth byte that the next quantum (there always is one) overwrites */
	for (; i + 4 <= body; i += 4) {
		const unsigned char *q = s + 4 * i;
		uint32_t flags = 0;
		uint32_t v0 = quantum_bits(q, &flags), v1 = quantum_bits(q + 4, &flags);
		uint32_t v2 = quantum_bits(q + 8, &flags), v3 = quantum_bits(q + 12, &flags);

		if ((flags & 0x80) != 0)
			break; /* something else than data: the twin says what and where */
		store_be32(out + 3 * i, v0 << 8);
		store_be32(out + 3 * i + 3, v1 << 8);
		store_be32(out + 3 * i + 6, v2 << 8);
		store_be32(out + 3 * i + 9, v3 << 8);
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

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN 1
#else
#define HOST_BIG_ENDIAN 0
#endif

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
