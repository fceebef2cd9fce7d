/*
 * base64.h: RFC 4648 base64 (standard alphabet, '=' padding), for tensors
 * sent as little-endian float32 bytes. Pure functions on caller buffers.
 */
#ifndef API_BASE64_H
#define API_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Encoded length of n bytes (without NUL). */
size_t base64_encoded_len(size_t n);

/* Writes base64_encoded_len(n) bytes to out (no NUL). */
void base64_encode(char *out, const uint8_t *in, size_t n);

/*
 * Decodes n characters into out (room for n / 4 * 3 bytes). Returns the
 * number of bytes, or -1 with *bad_at the offset of the first invalid
 * character (bad alphabet, misplaced padding, length not a multiple of 4).
 */
long long base64_decode(uint8_t *out, const char *in, size_t n, size_t *bad_at);

#endif
