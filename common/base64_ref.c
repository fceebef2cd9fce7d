/*
 * base64_ref.c: the naive twin of base64.c, a quantum at a time with a byte
 * table, kept as it was written first: tests compare the fast kernels with it
 * (outputs, return values and *bad_at), and base64.c reuses its strict
 * checking of the last quantum (base64_check_rest).
 *
 * RFC 4648 section 4 base64 with '=' padding (see base64.h).
 *
 * The strict rules and where *bad_at points are in base64.h.
 *
 * Both directions are table lookups, 3 bytes <-> 4 characters per step.
 */
#include "base64.h"
#include "base64_kernels.h"

#include <assert.h>
#include <stdint.h>

#define XX 0xff /* not in the alphabet (nor is '=') */

const char base64_enc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* base64_dec[c] = the 6-bit value of character c, or XX. Generated from base64_enc. */
const uint8_t base64_dec[256] = {
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, 62, XX, XX, XX, 63, /* + / */
	52, 53, 54, 55, 56, 57, 58, 59, 60, 61, XX, XX, XX, XX, XX, XX, /* 0-9 */
	XX, 0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, /* A-O */
	15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, XX, XX, XX, XX, XX, /* P-Z */
	XX, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, /* a-o */
	41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, XX, XX, XX, XX, XX, /* p-z */
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,
};

void base64_encode_ref(char *out, const uint8_t *in, size_t n)
{
	size_t i;
	uint32_t v;

	/* pass 1: whole 3-byte groups, 24 bits -> four 6-bit characters */
	for (i = 0; n - i >= 3; i += 3) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[0] = base64_enc[v >> 18];
		out[1] = base64_enc[(v >> 12) & 63];
		out[2] = base64_enc[(v >> 6) & 63];
		out[3] = base64_enc[v & 63];
		out += 4;
	}
	/* pass 2: one or two bytes left, zero-filled, padded with '=' */
	if (n - i == 0)
		return;
	v = (uint32_t)in[i] << 16;
	if (n - i == 2)
		v |= (uint32_t)in[i + 1] << 8;
	out[0] = base64_enc[v >> 18];
	out[1] = base64_enc[(v >> 12) & 63];
	out[2] = n - i == 2 ? base64_enc[(v >> 6) & 63] : '=';
	out[3] = '=';
}

/*
 * Checks r[0..len), which starts on a quantum boundary and runs to the end
 * of the input, against the rules above. Returns 0 (then len is 0 or a
 * multiple of 4 and only the last quantum may hold '='), or -1 with *bad the
 * offset in r of the first problem.
 */
int base64_check_rest(const unsigned char *r, size_t len, size_t *bad)
{
	size_t pad = len; /* where the '=' run starts; len while there is none */
	size_t i;

	for (i = 0; i < len; i++) {
		int is_data = base64_dec[r[i]] != XX;

		if (is_data && pad == len)
			continue;
		if (!is_data && r[i] != '=') { /* not base64 at all */
			*bad = i;
			return -1;
		}
		if (is_data) { /* data after the padding: the padding is misplaced */
			*bad = pad;
			return -1;
		}
		if (i % 4 < 2) { /* "=" or "x=" */
			*bad = i;
			return -1;
		}
		if (pad == len)
			pad = i;
	}
	/* the bits the padding leaves unused must be zero: 4 after "xx", 2 after "xxx" */
	if (pad < len && (base64_dec[r[pad - 1]] & (pad % 4 == 2 ? 0x0f : 0x03)) != 0) {
		*bad = pad - 1;
		return -1;
	}
	if (len % 4 != 0) {
		*bad = len;
		return -1;
	}
	return 0;
}

/* Writes the bytes of a checked final quantum q[0..4); returns 1, 2 or 3. */
size_t base64_put_final(uint8_t *out, const unsigned char *q)
{
	size_t nd = q[2] == '=' ? 2 : q[3] == '=' ? 3 : 4;
	uint32_t v = (uint32_t)base64_dec[q[0]] << 18 | (uint32_t)base64_dec[q[1]] << 12;
	size_t i;

	if (nd > 2)
		v |= (uint32_t)base64_dec[q[2]] << 6;
	if (nd > 3)
		v |= base64_dec[q[3]];
	for (i = 0; i + 1 < nd; i++)
		out[i] = (uint8_t)(v >> (16 - 8 * i));
	return nd - 1;
}

long long base64_decode_ref(uint8_t *out, const char *in, size_t n, size_t *bad_at)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t quanta = n / 4;
	size_t body = quanta > 0 ? quanta - 1 : 0; /* quanta that cannot hold '=' */
	size_t i;
	size_t bad;

	/* pass 1: every complete quantum but the last: four alphabet characters */
	for (i = 0; i < body; i++) {
		const unsigned char *q = s + 4 * i;
		uint32_t a = base64_dec[q[0]];
		uint32_t b = base64_dec[q[1]];
		uint32_t c = base64_dec[q[2]];
		uint32_t d = base64_dec[q[3]];
		uint32_t v = a << 18 | b << 12 | c << 6 | d;

		if (((a | b | c | d) & 0x80) != 0) {
			/* not plain data: the slow scan finds the first problem from here */
			int rc = base64_check_rest(q, n - 4 * i, &bad);

			assert(rc != 0); /* '=' or worse before the last quantum */
			(void)rc;
			*bad_at = 4 * i + bad;
			return -1;
		}
		out[3 * i] = (uint8_t)(v >> 16);
		out[3 * i + 1] = (uint8_t)(v >> 8);
		out[3 * i + 2] = (uint8_t)v;
	}
	if (n == 0)
		return 0;
	/* pass 2: the last quantum (and whatever follows it), which may hold '=' */
	if (base64_check_rest(s + 4 * body, n - 4 * body, &bad) != 0) {
		*bad_at = 4 * body + bad;
		return -1;
	}
	return (long long)(3 * body + base64_put_final(out + 3 * body, s + 4 * body));
}
