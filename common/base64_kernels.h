/*
 * base64_kernels.h: what the base64 kernels share (common/base64*.c only):
 * the tables, the strict check of an input's last quantum, and the AVX2 bulk
 * loops. No ownership: pure functions on caller buffers.
 */
#ifndef COMMON_BASE64_KERNELS_H
#define COMMON_BASE64_KERNELS_H

#include <stddef.h>
#include <stdint.h>

enum { BASE64_BAD = 0xff }; /* base64_dec of a byte outside the alphabet (and of '=') */

extern const char base64_enc[];	    /* [64] the alphabet, in value order */
extern const uint8_t base64_dec[256]; /* the 6-bit value of a byte, or BASE64_BAD */

/*
 * Checks r[0..len), which starts on a quantum boundary and runs to the end
 * of the input, against base64.h's rules. Returns 0 (then len is 0 or a
 * multiple of 4 and only the last quantum may hold '='), or -1 with *bad the
 * offset in r of the first problem.
 */
int base64_check_rest(const unsigned char *r, size_t len, size_t *bad);

/* Writes the bytes of a checked final quantum q[0..4); returns 1, 2 or 3. */
size_t base64_put_final(uint8_t *out, const unsigned char *q);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BASE64_HAVE_AVX2 1
/* in[0 .. 24 k) to out[0 .. 32 k) for the largest k with 24 k + 4 <= n
 * (each step reads 28 bytes); returns 24 k, the bytes encoded. */
size_t base64_encode_avx2_bulk(char *out, const uint8_t *in, size_t n);
/* Decodes whole 32-character blocks of plain alphabet characters while at
 * least 48 characters remain after the block's start (each step writes 32
 * bytes for 24), stopping before the first block holding anything else.
 * Returns the characters decoded (a multiple of 32; bytes = 3/4 of it). */
size_t base64_decode_avx2_bulk(uint8_t *out, const char *in, size_t n);
#endif

#endif
