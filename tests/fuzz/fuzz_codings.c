/*
 * fuzz_codings.c: server/compress.c on the input bytes.
 *
 * Byte 0 chooses what the rest (byte 1 on) is:
 *   bits 0-1  0: an Accept-Encoding field; 1: a Content-Encoding field
 *             (both as text up to the first NUL); 2: a coded request body;
 *             3: an answer to code and decode again
 *   bit 2     gzip (else deflate), for 2 and 3
 *   bits 3-7  the chunk size the body is fed in, 1 + 8 * n bytes (2), or
 *             the zlib level, 1 + n % 9 (3)
 * A body inflates under a maximum of 4096 bytes: the buffer never holds or
 * allocates more (buf.h: max + 1 with the NUL). An answer coded by
 * compress_body must decode to itself byte for byte (the decoder is the
 * coder's twin here), unless coding would not make it smaller.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "server/compress.h"

enum { BODY_MAX = 4096 };

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static void parse_fields(int content, const uint8_t *data, size_t size)
{
	char *field = malloc(size + 1);
	struct accept_encoding ae;
	struct content_encoding ce;
	enum coding c;

	if (field == NULL)
		abort();
	memcpy(field, data, size);
	field[size] = '\0';
	if (content) {
		content_encoding_init(&ce);
		content_encoding_add(&ce, field);
		if ((ce.coding == CODING_UNKNOWN) != (ce.unsupported[0] != '\0'))
			abort();
	} else {
		accept_encoding_init(&ae);
		accept_encoding_add(&ae, field);
		c = accept_encoding_choose(&ae);
		if (c != CODING_IDENTITY && c != CODING_GZIP && c != CODING_DEFLATE)
			abort();
	}
	free(field);
}

/* Feeds in to a decoder in chunks; returns the status, out filled. */
static enum decode_status decode(enum coding c, const uint8_t *in, size_t n, size_t chunk,
				 struct buf *out)
{
	struct body_decoder *d = body_decoder_new(c);
	enum decode_status st = DECODE_OK;

	if (d == NULL)
		abort();
	for (size_t at = 0; at < n && st == DECODE_OK; at += chunk)
		st = body_decoder_feed(d, in + at, n - at < chunk ? n - at : chunk, out);
	if (st == DECODE_OK)
		st = body_decoder_finish(d);
	if (st == DECODE_CORRUPT && body_decoder_message(d)[0] == '\0')
		abort();
	body_decoder_free(d);
	return st;
}

static void round_trip(enum coding c, int level, const uint8_t *data, size_t size)
{
	struct buf coded, back;
	int ret;

	buf_init(&coded, size);
	buf_init(&back, size);
	ret = compress_body(c, level, data, size, &coded);
	if (ret < 0)
		abort();
	if (ret == 0 && (coded.len >= size || decode(c, (const uint8_t *)coded.data, coded.len,
						     coded.len, &back) != DECODE_OK ||
			 back.len != size || memcmp(back.data, data, size) != 0))
		abort();
	buf_release(&coded);
	buf_release(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum coding c;
	struct buf out;

	if (size < 1)
		return 0;
	c = (data[0] & 4) ? CODING_GZIP : CODING_DEFLATE;
	switch (data[0] & 3) {
	case 0:
	case 1:
		parse_fields(data[0] & 1, data + 1, size - 1);
		break;
	case 2:
		buf_init(&out, BODY_MAX);
		decode(c, data + 1, size - 1, 1 + 8 * (size_t)(data[0] >> 3), &out);
		if (out.len > BODY_MAX || out.cap > BODY_MAX + 1)
			abort();
		buf_release(&out);
		break;
	default:
		round_trip(c, 1 + (data[0] >> 3) % 9, data + 1, size - 1);
	}
	return 0;
}
