/*
 * zlib_twins.c: zlib's one-shot calls for the codings suites (zlib_twins.h).
 */
#include "zlib_twins.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#define ZLIB_CONST
#include <zlib.h>

/* bytes in zlib (bits 15) or gzip (bits 31) format, one deflate call; the
 * caller frees. */
unsigned char *zlib_code(int bits, const void *in, size_t n, size_t *out_len)
{
	z_stream z;
	unsigned char *out;
	size_t cap;

	memset(&z, 0, sizeof z);
	ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
	cap = deflateBound(&z, (uLong)n) + 32;
	out = malloc(cap);
	ck_assert_ptr_nonnull(out);
	z.next_in = in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

/* in inflated at once (bits as above); the caller frees. Fails the test
 * unless in is one whole stream of at most cap bytes inflated. */
unsigned char *zlib_inflate(int bits, const void *in, size_t n, size_t cap, size_t *out_len)
{
	unsigned char *out = malloc(cap + 1);
	z_stream z;

	ck_assert_ptr_nonnull(out);
	memset(&z, 0, sizeof z);
	ck_assert_int_eq(inflateInit2(&z, bits), Z_OK);
	z.next_in = in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap + 1;
	ck_assert_int_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
	ck_assert_uint_eq(z.avail_in, 0);
	*out_len = z.total_out;
	inflateEnd(&z);
	return out;
}
