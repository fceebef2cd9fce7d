/*
 * zlib_twins.h: zlib's own one-shot deflate and inflate, the naive twins the
 * codings suites check server/compress.c and the daemon's coded answers and
 * bodies against (check_compress, check_compress_http).
 *
 * Ownership: each returns a buffer the caller frees. A zlib failure fails
 * the running test (Check's assertions), so neither returns NULL.
 */
#ifndef ATTN_TESTS_ZLIB_TWINS_H
#define ATTN_TESTS_ZLIB_TWINS_H

#include <stddef.h>

/* zlib's window bits: the zlib format (HTTP's "deflate"), and gzip. */
enum { ZLIB_BITS = 15, GZIP_BITS = 15 + 16 };

/* in[n] in zlib (ZLIB_BITS) or gzip (GZIP_BITS) format, one deflate call,
 * level 6; its length in *out_len. */
unsigned char *zlib_code(int bits, const void *in, size_t n, size_t *out_len);

/* in[n] inflated at once (bits as above), its length in *out_len. Fails the
 * test unless in is one whole stream of at most cap bytes inflated. */
unsigned char *zlib_inflate(int bits, const void *in, size_t n, size_t cap, size_t *out_len);

#endif
