/*
 * compress.c: content codings through zlib (see compress.h).
 *
 * gzip is zlib's format with windowBits 15 + 16 (RFC 1952 framing, CRC-32),
 * deflate windowBits 15 (RFC 1950 framing, Adler-32): HTTP's "deflate" is
 * the zlib format, not raw deflate (RFC 9110 section 8.4.1.2).
 *
 * Inflating writes straight into the body buffer's spare room, never more
 * than its hard maximum allows: once the buffer is full, inflate gets a one
 * byte scratch output, and a byte there means the body is larger than the
 * maximum. So a body that inflates a thousandfold costs the maximum and
 * zlib's 40 KiB of state, no more.
 */
#define ZLIB_CONST /* next_in is const */
#include "compress.h"

#include "api/service.h"
#include "token.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

enum { GZIP_BITS = 15 + 16, ZLIB_BITS = 15, MEM_LEVEL = 8, CHUNK = 64 * 1024 };

const char *coding_name(enum coding c)
{
	switch (c) {
	case CODING_GZIP:
		return "gzip";
	case CODING_DEFLATE:
		return "deflate";
	case CODING_IDENTITY:
	case CODING_UNKNOWN:
		break;
	}
	return "identity";
}

/* ---- header lists ---------------------------------------------------------- */

static int is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* One list element: its token [tok, tok + len) and the rest up to the next
 * ',' in [params, end). Returns where the next element starts. */
struct element {
	const char *tok, *params, *end;
	size_t len;
};

static const char *next_element(const char *p, struct element *e)
{
	while (is_ows(*p))
		p++;
	e->tok = p;
	while (*p != '\0' && *p != ',' && *p != ';' && !is_ows(*p))
		p++;
	e->len = (size_t)(p - e->tok);
	e->params = p;
	while (*p != '\0' && *p != ',')
		p++;
	e->end = p;
	return *p == ',' ? p + 1 : p;
}

/* Parameters after the token (";q=0.5"), not only white space. */
static int has_params(const struct element *e)
{
	for (const char *p = e->params; p < e->end; p++) {
		if (!is_ows(*p))
			return 1;
	}
	return 0;
}

static int token_is(const struct element *e, const char *name)
{
	return e->len == strlen(name) && strncasecmp(e->tok, name, e->len) == 0;
}

static enum coding coding_of(const struct element *e)
{
	if (token_is(e, "gzip") || token_is(e, "x-gzip"))
		return CODING_GZIP;
	if (token_is(e, "deflate"))
		return CODING_DEFLATE;
	if (token_is(e, "identity"))
		return CODING_IDENTITY;
	return CODING_UNKNOWN;
}

/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ) in
 * thousandths, from p to end (OWS around it); -1 when malformed. */
static int parse_qvalue(const char *p, const char *end)
{
	int q, scale = 100;

	while (p < end && is_ows(*p))
		p++;
	while (end > p && is_ows(end[-1]))
		end--;
	if (p == end || (*p != '0' && *p != '1'))
		return -1;
	q = (*p++ - '0') * 1000;
	if (p < end && *p == '.') {
		for (p++; p < end && *p >= '0' && *p <= '9' && scale > 0; p++, scale /= 10)
			q += (*p - '0') * scale;
	}
	return p == end && q <= 1000 ? q : -1;
}

/* [p, end) is a token (RFC 9110 section 5.6.2): a parameter's name. */
static int is_token(const char *p, const char *end)
{
	if (p == end)
		return 0;
	for (; p < end; p++)
		if (!http_tchar((unsigned char)*p))
			return 0;
	return 1;
}

/* The element's q parameter (other parameters are ignored): 1000 when
 * absent, -1 when malformed (a parameter without '=', or whose name is no
 * token: "q =0" is not q=0, nor a parameter to ignore). */
static int element_q(const struct element *e)
{
	const char *p = e->params;
	int q = 1000;

	while (p < e->end) {
		const char *name, *value, *stop;

		while (p < e->end && (is_ows(*p) || *p == ';'))
			p++;
		name = p;
		stop = memchr(p, ';', (size_t)(e->end - p));
		stop = stop != NULL ? stop : e->end;
		value = memchr(p, '=', (size_t)(stop - p));
		if (value != NULL && value - name == 1 && (*name == 'q' || *name == 'Q'))
			q = parse_qvalue(value + 1, stop);
		else if (p < stop && (value == NULL || !is_token(name, value)))
			return -1;
		if (q < 0)
			return -1;
		p = stop;
	}
	return q;
}

void accept_encoding_init(struct accept_encoding *ae)
{
	memset(ae, 0, sizeof *ae);
}

void accept_encoding_add(struct accept_encoding *ae, const char *field)
{
	struct element e;

	ae->present = 1;
	for (const char *p = field; *p != '\0';) {
		int q;
		enum coding c;

		p = next_element(p, &e);
		q = element_q(&e);
		if (e.len == 0 || q < 0)
			continue;
		if (e.len == 1 && e.tok[0] == '*') {
			ae->star_listed = 1;
			ae->star_q = (unsigned)q;
			continue;
		}
		c = coding_of(&e);
		if (c == CODING_UNKNOWN)
			continue;
		ae->listed[c] = 1;
		ae->q[c] = (unsigned)q;
	}
}

static unsigned weight(const struct accept_encoding *ae, enum coding c)
{
	if (ae->listed[c])
		return ae->q[c];
	return ae->star_listed ? ae->star_q : 0;
}

enum coding accept_encoding_choose(const struct accept_encoding *ae)
{
	return accept_encoding_choose_from(ae, CODINGS_ALL);
}

/* A coding not offered weighs nothing: a file with a gzip copy only is
 * chosen among gzip and identity, whatever weight deflate has. */
enum coding accept_encoding_choose_from(const struct accept_encoding *ae, unsigned offered)
{
	unsigned gz = (offered & CODINGS_GZIP) ? weight(ae, CODING_GZIP) : 0;
	unsigned df = (offered & CODINGS_DEFLATE) ? weight(ae, CODING_DEFLATE) : 0;
	enum coding best = gz >= df ? CODING_GZIP : CODING_DEFLATE;
	unsigned best_q = gz >= df ? gz : df;

	if (!ae->present || best_q == 0)
		return CODING_IDENTITY;
	/* identity named with a higher weight: the client would rather not; left
	 * unnamed it is acceptable but never preferred to a coding it asks for */
	if (ae->listed[CODING_IDENTITY] && ae->q[CODING_IDENTITY] > best_q)
		return CODING_IDENTITY;
	return best;
}

void content_encoding_init(struct content_encoding *ce)
{
	ce->coding = CODING_IDENTITY;
	ce->unsupported[0] = '\0';
}

/* Names what is not supported in ce->unsupported, printable ASCII only. */
static void unsupported(struct content_encoding *ce, const char *what, size_t len)
{
	size_t n = len < sizeof ce->unsupported - 1 ? len : sizeof ce->unsupported - 1;

	for (size_t i = 0; i < n; i++)
		ce->unsupported[i] = what[i] >= 0x20 && what[i] < 0x7f ? what[i] : '?';
	ce->unsupported[n] = '\0';
	ce->coding = CODING_UNKNOWN;
}

/* A second coding after ce's: both named, in the order they were applied. */
static void stacked(struct content_encoding *ce, const struct element *second)
{
	char both[sizeof ce->unsupported];
	int n = snprintf(both, sizeof both, "%s, %.*s", coding_name(ce->coding),
			 (int)(second->end - second->tok), second->tok);

	unsupported(ce, both, n < 0 ? 0 : (size_t)n < sizeof both ? (size_t)n : sizeof both - 1);
}

void content_encoding_add(struct content_encoding *ce, const char *field)
{
	struct element e;

	for (const char *p = field; *p != '\0' && ce->coding != CODING_UNKNOWN;) {
		enum coding c;

		p = next_element(p, &e);
		if (e.len == 0 && !has_params(&e))
			continue; /* an empty element of the list */
		c = coding_of(&e);
		if (c == CODING_IDENTITY && !has_params(&e))
			continue;
		if (c == CODING_UNKNOWN || has_params(&e))
			unsupported(ce, e.tok, (size_t)(e.end - e.tok));
		else if (ce->coding != CODING_IDENTITY)
			stacked(ce, &e);
		else
			ce->coding = c;
	}
}

/* ---- answers --------------------------------------------------------------- */

/* Gives z the next input slice (avail_in is 32-bit) once it has used the
 * last; returns the bytes not yet given. */
static size_t feed_input(z_stream *z, const unsigned char **in, size_t left)
{
	size_t take;

	if (z->avail_in > 0 || left == 0)
		return left;
	take = left < UINT_MAX ? left : UINT_MAX;
	z->next_in = *in;
	z->avail_in = (uInt)take;
	*in += take;
	return left - take;
}

/* Runs deflate to the end of body into out, stopping (1) once the output
 * would reach len bytes. Output grows out by doubling, from 64 KiB. */
static int deflate_into(z_stream *z, const unsigned char *body, size_t len, struct buf *out)
{
	const unsigned char *in = body;
	size_t left = len, start = out->len;

	for (;;) {
		size_t used = out->len - start;
		size_t want = used > CHUNK ? used : CHUNK;
		char *p;
		int zr;

		if (used >= len)
			return 1;
		want = want < len - used ? want : len - used;
		want = want < UINT_MAX ? want : UINT_MAX;
		p = buf_reserve(out, want);
		if (p == NULL)
			return -1;
		left = feed_input(z, &in, left);
		z->next_out = (Bytef *)p;
		z->avail_out = (uInt)want;
		zr = deflate(z, left == 0 ? Z_FINISH : Z_NO_FLUSH);
		buf_commit(out, want - z->avail_out);
		if (zr == Z_STREAM_END)
			return out->len - start < len ? 0 : 1;
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return -1;
	}
}

int compress_body(enum coding c, int level, const void *body, size_t len, struct buf *out)
{
	z_stream z;
	int ret;

	if ((c != CODING_GZIP && c != CODING_DEFLATE) || level < 1 || level > 9)
		return -1;
	memset(&z, 0, sizeof z);
	if (deflateInit2(&z, level, Z_DEFLATED, c == CODING_GZIP ? GZIP_BITS : ZLIB_BITS,
			 MEM_LEVEL, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	ret = deflate_into(&z, body, len, out);
	deflateEnd(&z);
	return ret;
}

/* ---- request bodies -------------------------------------------------------- */

struct body_decoder {
	z_stream z;
	enum coding coding;
	enum decode_status status;
	int in_stream; /* inside a gzip member or the deflate stream */
	int ended;     /* a gzip member or the deflate stream ended */
	gz_header head; /* the gzip member after the first's: done once its header is read */
	int seen;      /* a byte came */
	int full;      /* the last inflate filled its output: more may wait */
	int stalled;   /* the last inflate could make no progress */
	char message[128];
};

struct body_decoder *body_decoder_new(enum coding c)
{
	struct body_decoder *d;

	if (c != CODING_GZIP && c != CODING_DEFLATE)
		return NULL;
	d = calloc(1, sizeof *d);
	if (d == NULL)
		return NULL;
	d->coding = c;
	d->in_stream = 1;
	if (inflateInit2(&d->z, c == CODING_GZIP ? GZIP_BITS : ZLIB_BITS) != Z_OK) {
		free(d);
		return NULL;
	}
	return d;
}

void body_decoder_free(struct body_decoder *d)
{
	if (d == NULL)
		return;
	inflateEnd(&d->z);
	free(d);
}

static enum decode_status corrupt(struct body_decoder *d, const char *why)
{
	snprintf(d->message, sizeof d->message, "%s", why);
	return DECODE_CORRUPT;
}

/* why, said of the bytes after a whole gzip member when one ended: they
 * start no valid member (zeros, garbage), where zlib alone would speak of a
 * bad header only (body_decoder_finish: too few of them for a header). */
static enum decode_status corrupt_after(struct body_decoder *d, const char *why)
{
	/* a member whose gzip header was read (done -1: no gzip header): its own fault */
	if (!d->ended || d->head.done > 0)
		return corrupt(d, why);
	snprintf(d->message, sizeof d->message,
		 "bytes follow the end of the gzip stream and are no gzip member (%s)", why);
	return DECODE_CORRUPT;
}

/* What an inflate return code means for the body. */
static enum decode_status inflate_result(struct body_decoder *d, int zr)
{
	switch (zr) {
	case Z_STREAM_END:
		d->in_stream = 0;
		d->ended = 1;
		d->full = 0;
		return DECODE_OK;
	case Z_OK:
		return DECODE_OK;
	case Z_BUF_ERROR:
		d->stalled = 1;
		return DECODE_OK;
	case Z_MEM_ERROR:
		return DECODE_NOMEM;
	case Z_NEED_DICT:
		return corrupt(d, "it needs a preset dictionary");
	default:
		return corrupt_after(d, d->z.msg != NULL ? d->z.msg : "invalid data");
	}
}

/* One inflate call into out's spare room (at most CHUNK bytes); with out
 * full, into a one-byte probe, whose filling means too large. */
static enum decode_status inflate_step(struct body_decoder *d, struct buf *out)
{
	unsigned char probe;
	size_t room = out->max - out->len;
	int zr;

	room = room < CHUNK ? room : CHUNK;
	if (room == 0) {
		d->z.next_out = &probe;
		d->z.avail_out = 1;
	} else {
		char *p = buf_reserve(out, room);

		if (p == NULL)
			return DECODE_NOMEM;
		d->z.next_out = (Bytef *)p;
		d->z.avail_out = (uInt)room;
	}
	zr = inflate(&d->z, Z_NO_FLUSH);
	if (room == 0 && d->z.avail_out == 0)
		return DECODE_TOO_LARGE;
	if (room > 0)
		buf_commit(out, room - d->z.avail_out);
	d->full = d->z.avail_out == 0;
	return inflate_result(d, zr);
}

/* Inflates what z holds (after a member's end, the next gzip member). */
static enum decode_status inflate_all(struct body_decoder *d, struct buf *out)
{
	d->stalled = 0;
	while ((d->z.avail_in > 0 || d->full) && !d->stalled) {
		enum decode_status st;

		if (!d->in_stream) {
			if (d->coding != CODING_GZIP)
				return corrupt(d, "bytes follow the end of the deflate stream");
			memset(&d->head, 0, sizeof d->head);
			if (inflateReset(&d->z) != Z_OK || inflateGetHeader(&d->z, &d->head) != Z_OK)
				return corrupt(d, "cannot start the next gzip member");
			d->in_stream = 1;
		}
		st = inflate_step(d, out);
		if (st != DECODE_OK)
			return st;
	}
	return DECODE_OK;
}

enum decode_status body_decoder_feed(struct body_decoder *d, const void *in, size_t n,
				     struct buf *out)
{
	const unsigned char *p = in;

	while (d->status == DECODE_OK && n > 0) {
		size_t take = n < UINT_MAX ? n : UINT_MAX;

		d->seen = 1;
		d->z.next_in = p;
		d->z.avail_in = (uInt)take;
		d->status = inflate_all(d, out);
		p += take;
		n -= take;
	}
	return d->status;
}

enum decode_status body_decoder_finish(struct body_decoder *d)
{
	if (d->status == DECODE_OK && (!d->seen || d->in_stream)) {
		if (d->ended && d->head.done <= 0) /* no whole header after a member */
			d->status = corrupt(d, "bytes follow the end of the gzip stream and are "
					       "no whole gzip member");
		else
			d->status = corrupt(d, "it ends before its stream does (truncated or empty)");
	}
	return d->status;
}

const char *body_decoder_message(const struct body_decoder *d)
{
	return d->status == DECODE_CORRUPT ? d->message : "";
}

/* Answers worth coding: JSON and text, without binary tensors after them. */
static int compressible(const struct api_reply *reply)
{
	const char *ct = reply->content_type;

	return ct != NULL && reply->inference_header_len == 0 &&
	       (strncmp(ct, "application/json", 16) == 0 || strncmp(ct, "text/", 5) == 0);
}

const char *compress_buf(struct buf *body, enum coding c, int level)
{
	struct buf coded;

	if (c == CODING_IDENTITY || level == 0 || body->len < COMPRESS_MIN_BYTES)
		return NULL;
	buf_init(&coded, body->len);
	if (compress_body(c, level, body->data, body->len, &coded) != 0) {
		buf_release(&coded);
		return NULL;
	}
	buf_release(body);
	*body = coded;
	return coding_name(c);
}

const char *compress_reply(struct api_reply *reply, enum coding c, int level)
{
	if (reply->status == 204 || !compressible(reply))
		return NULL;
	return compress_buf(&reply->body, c, level);
}
