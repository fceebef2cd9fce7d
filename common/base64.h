/*
 * base64.h: RFC 4648 base64 (standard alphabet, '=' padding), for tensors
 * sent as little-endian float32 bytes. Pure functions on caller buffers; no
 * function allocates, none keeps a pointer.
 *
 * Decoding is strict, as the API layer is:
 *   - only the 64 alphabet characters and '=' (no whitespace, no line breaks,
 *     no URL-safe alphabet);
 *   - '=' only at the end, as "xx==" or "xxx=";
 *   - the unused bits before the padding must be zero (RFC 4648 section 3.5
 *     allows rejecting them; it makes every byte string's encoding unique);
 *   - the length a multiple of 4.
 * *bad_at is the offset of the first problem met scanning from the start:
 * a character outside the alphabet (and not '='); a '=' in the first two
 * places of a quantum; data after a '=' run (reported at the run's first
 * '='); a data character whose bits left unused by the padding are not zero;
 * and, when only the length is wrong (the input ends inside a quantum), n.
 * So a trailing newline is reported at the newline. On failure `out` may
 * have been written in part.
 *
 * Kernels: base64_encode and base64_decode run the AVX2 kernels where the CPU
 * has them (x86-64, checked at run time), else the scalar ones; every kernel
 * gives the same bytes, return value and *bad_at as the naive twin
 * (base64_ref.c), which tests check. The kernels are declared here for tests
 * and benches; callers use base64_encode and base64_decode.
 */
#ifndef API_BASE64_H
#define API_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Encoded length of n bytes (without NUL); SIZE_MAX when it does not fit. */
size_t base64_encoded_len(size_t n);

/* Writes base64_encoded_len(n) bytes to out (no NUL). */
void base64_encode(char *out, const uint8_t *in, size_t n);

/*
 * Decodes n characters into out (room for n / 4 * 3 bytes). Returns the
 * number of bytes, or -1 with *bad_at the offset of the first invalid
 * character (bad alphabet, misplaced padding, length not a multiple of 4).
 */
long long base64_decode(uint8_t *out, const char *in, size_t n, size_t *bad_at);

/* Writes base64_encoded_len(4 n) bytes to out: x[0 .. n) as little-endian
 * float32 bytes, whatever the host's byte order (no copy on little-endian). */
void base64_encode_f32le(char *out, const float *x, size_t n);

/* x[0 .. n), read as little-endian float32 bytes, in the host's order: in
 * place, nothing to do on a little-endian host. */
void base64_f32_from_le(float *x, size_t n);

/* ---- the kernels, for tests and benches ---------------------------------- */

/* Nonzero when base64_encode_simd / base64_decode_simd may run on this CPU. */
int base64_simd_available(void);

void base64_encode_ref(char *out, const uint8_t *in, size_t n);
void base64_encode_scalar(char *out, const uint8_t *in, size_t n);
void base64_encode_simd(char *out, const uint8_t *in, size_t n);

long long base64_decode_ref(uint8_t *out, const char *in, size_t n, size_t *bad_at);
long long base64_decode_scalar(uint8_t *out, const char *in, size_t n, size_t *bad_at);
long long base64_decode_simd(uint8_t *out, const char *in, size_t n, size_t *bad_at);

#endif
