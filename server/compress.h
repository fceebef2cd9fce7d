/*
 * compress.h: HTTP content codings (RFC 9110 section 8.4) through zlib: gzip
 * and deflate on answers, chosen from Accept-Encoding, and on request bodies,
 * named by Content-Encoding and inflated under a hard maximum.
 *
 * A leaf module: header values and bytes in, bytes out; no HTTP library, no
 * globals, nothing printed. zlib, not a hand-written deflate: a well-kept
 * library with decades of fuzzing behind its inflate.
 *
 * Ownership: the parsers' structs are values the caller owns (no heap).
 * compress_body appends to a buf the caller owns. body_decoder_new gives a
 * decoder the caller frees with body_decoder_free (NULL accepted);
 * body_decoder_feed appends to a buf the caller owns.
 */
#ifndef SERVER_COMPRESS_H
#define SERVER_COMPRESS_H

#include <stddef.h>

#include "common/buf.h"

struct api_reply;

enum coding {
	CODING_IDENTITY = 0,
	CODING_GZIP,	/* RFC 1952, "gzip" (and "x-gzip", its old name) */
	CODING_DEFLATE, /* RFC 1950, the zlib format: what "deflate" means in HTTP */
	CODING_UNKNOWN, /* a Content-Encoding this server does not decode */
};

/* "identity", "gzip", "deflate" (the value of a Content-Encoding header). */
const char *coding_name(enum coding c);

/*
 * Answers below this many bytes are sent as they are. Such a body and its
 * headers (about 300 bytes) fit one TCP segment (1460 bytes on Ethernet)
 * either way, so compressing saves no packet and no round trip, only adds
 * deflate's set-up (its 256 KiB of state) and 18 bytes of gzip framing to a
 * body that has little repetition to find. Error bodies fall below it.
 */
enum { COMPRESS_MIN_BYTES = 1024 };

/*
 * Accept-Encoding, after RFC 9110 section 12.5.3: a comma list of codings
 * with optional `;q=` weights (0 = not acceptable; tokens and `q` without
 * case), `*` for any coding not listed, `identity` acceptable unless it is
 * given q=0 (or `*;q=0` is, with identity not listed). Several header
 * fields add up, as one list. Malformed elements are skipped.
 */
struct accept_encoding {
	int present;		/* a field was seen (none: identity only) */
	int listed[3];		/* by enum coding: named in the list */
	unsigned q[3];		/* its weight, in thousandths */
	int star_listed;
	unsigned star_q;
};

void accept_encoding_init(struct accept_encoding *ae);
void accept_encoding_add(struct accept_encoding *ae, const char *field);

/* The coding to answer in: the acceptable one of highest weight, gzip before
 * deflate before identity at equal weight; CODING_IDENTITY when no field was
 * sent, or none of gzip and deflate is acceptable (even with identity;q=0:
 * the RFC's SHOULD, an answer without coding, rather than 406). */
enum coding accept_encoding_choose(const struct accept_encoding *ae);

/* The codings an answer is available in besides identity (a bit each). */
enum {
	CODINGS_GZIP = 1u << CODING_GZIP,
	CODINGS_DEFLATE = 1u << CODING_DEFLATE,
	CODINGS_ALL = CODINGS_GZIP | CODINGS_DEFLATE, /* an answer coded on the fly */
};

/* accept_encoding_choose among the codings `offered` (CODINGS_*) alone, as
 * RFC 9110 section 12.5.3 has a server choose among the representations it
 * has: to a file with only a gzip copy, "deflate, gzip;q=0.5" is gzip. */
enum coding accept_encoding_choose_from(const struct accept_encoding *ae, unsigned offered);

/*
 * Content-Encoding of a request body: a comma list of codings in the order
 * they were applied. identity entries are ignored; one gzip or deflate is
 * decoded; anything else (br, zstd, two codings) is CODING_UNKNOWN, with
 * `unsupported` naming it for the error message (both codings, "gzip,
 * deflate", for two).
 */
struct content_encoding {
	enum coding coding; /* so far */
	char unsupported[48];
};

void content_encoding_init(struct content_encoding *ce);
void content_encoding_add(struct content_encoding *ce, const char *field);

/*
 * Appends body in coding c (gzip or deflate) at zlib level 1..9 to out.
 * Returns 0; 1 when the coded bytes would not be smaller than the body (out
 * then holds a useless prefix: send the body as it is); -1 on a zlib or
 * memory failure or when out passes its max. Fast: one zlib stream, output
 * straight into out's spare room.
 */
int compress_body(enum coding c, int level, const void *body, size_t len, struct buf *out);

/* Replaces body by its coding c (level 1..9; 0: never) when it has at
 * least COMPRESS_MIN_BYTES and codes smaller. Returns the coding's name for
 * Content-Encoding, or NULL with the body as it was (also on any failure). */
const char *compress_buf(struct buf *body, enum coding c, int level);

/* compress_buf on reply's body, when it is worth it: a JSON or text answer
 * (not v2's binary tensors, whose float bits shrink too little for
 * deflate's time), not a 204. The API's max_response_bytes bounded the body
 * before coding. */
const char *compress_reply(struct api_reply *reply, enum coding c, int level);

/* ---- request bodies ------------------------------------------------------ */

enum decode_status {
	DECODE_OK = 0,
	DECODE_TOO_LARGE, /* the decoded body would pass out->max */
	DECODE_CORRUPT,	  /* not a valid stream: body_decoder_message says why */
	DECODE_NOMEM,
};

struct body_decoder;

/* A decoder of a gzip or deflate body, or NULL when out of memory. */
struct body_decoder *body_decoder_new(enum coding c);
void body_decoder_free(struct body_decoder *d);

/*
 * Inflates the next n bytes of the coded body, appending to out (within
 * out->max: nothing is allocated past it, a zip bomb stops there with
 * DECODE_TOO_LARGE). Concatenated gzip members are one body (RFC 1952);
 * bytes after a deflate stream's end are corrupt. After a status other than
 * DECODE_OK the decoder only answers that status again.
 */
enum decode_status body_decoder_feed(struct body_decoder *d, const void *in, size_t n,
				     struct buf *out);

/* After the last byte: DECODE_CORRUPT when the stream did not end (a
 * truncated body, or no byte at all), else the status so far. */
enum decode_status body_decoder_finish(struct body_decoder *d);

/* Why the body is corrupt ("incorrect header check", zlib's words, or ours),
 * for the 400's message; "" otherwise. Borrowed from d. */
const char *body_decoder_message(const struct body_decoder *d);

#endif
