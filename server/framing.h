/*
 * framing.h: strict HTTP/1.1 message syntax (RFC 9112) on what
 * libmicrohttpd 0.9.75 parsed: the checks it leaves to the application,
 * made before any routing so that a request read one way here and another
 * way by a proxy in front is refused (400, then the connection closes)
 * rather than served.
 *
 * Refused: a header name that is not a token (whitespace before the colon,
 * control characters, a line that starts with whitespace); an obs-fold
 * (a header continued on the next line: libmicrohttpd 0.9.75 glues the
 * continuation onto the *name*, so the header moves out of its line in the
 * read buffer, which is how it is seen); an HTTP/1.1 request without Host,
 * or any with two, or one whose value is no host[:port]; two Content-Type
 * headers; Transfer-Encoding
 * in an HTTP/1.0 request (RFC 9112 section 6.1); a CR inside a header value
 * (RFC 9112 section 2.2); a control character in the request target's
 * path, raw or percent-encoded (%00 among them: framing_unescape keeps it
 * from truncating the path); a raw space in the path (a client sends %20); a
 * fragment ('#') in the path, which RFC 9112
 * section 3.2 leaves out of the request target (one in the query, which
 * attnd never reads, is not looked for, nor a raw space there; a raw
 * control character there is, framing_query_has_ctl).
 *
 * Pure functions of one connection's parsed request (headers.h's rules):
 * nothing is allocated or kept.
 */
#ifndef SERVER_FRAMING_H
#define SERVER_FRAMING_H

#include <stddef.h>

struct MHD_Connection;
struct hdr_fields;

/* 0 when the request line and headers are well formed; else -1 with a
 * message (printable ASCII, naming what and where) in why[cap]. url is the
 * target as libmicrohttpd passes it (unescaped by framing_unescape, so a
 * path: it must start with '/', or be "*" with the method OPTIONS, RFC 9112
 * section 3.2.4), version the protocol ("HTTP/1.1"). */
int framing_check(struct MHD_Connection *conn, const char *method, const char *url,
		  const char *version, char *why, size_t cap);

/* Does the query of target, the raw request target as libmicrohttpd's URI
 * callback passes it (before any decoding, the query still on it), hold a
 * raw control character (a bare CR among them, RFC 9112 section 2.2)? A
 * percent-encoded one (%0A) is data, not framing: the viewer's address
 * holds a sentence with a line break so (?text=a%0Ab), and attnd reads no
 * argument. The path's own are framing_check's: the query reaches it only
 * as arguments, decoded. 1 or 0. */
int framing_query_has_ctl(const char *target);

/* Why hdr_framing_ambiguous(f) holds, for the 400's message, into
 * why[cap]: which headers, and a Transfer-Encoding's value as received
 * (printable ASCII, first 40 bytes; libmicrohttpd decodes only an exact
 * "chunked", so "chunked " with a trailing space is refused too). */
void framing_say_ambiguous(const struct hdr_fields *f, char *why, size_t cap);

/* What the request line and headers hold of the connection's memory pool
 * (--connection-memory) once libmicrohttpd has parsed them: their bytes and
 * a record per header, cookie and query argument. Above the pool less
 * framing_head_room(pool), the answer's own header (about 700 bytes) cannot
 * be made there: in 0.9.75 the connection was closed with no answer at all
 * (the access log saying 200), so http.c answers such a request itself
 * (cutoff.h). The room is a quarter of the pool, at most
 * FRAMING_HEAD_ROOM_MAX bytes. */
enum { FRAMING_HEAD_ROOM_MAX = 4096 };
size_t framing_head_room(size_t pool);
size_t framing_head_bytes(struct MHD_Connection *conn, const char *url, const char *method,
			  const char *version);

/* libmicrohttpd's MHD_OPTION_UNESCAPE_CALLBACK: decodes %HH in place as its
 * default does (MHD_http_unescape), but a decoded NUL becomes DEL (0x7f),
 * a control character framing_check refuses, instead of ending the path
 * early (`/healthz%00x` was served as /healthz). A target in absolute-form
 * (RFC 9112 section 3.2.2, `http://host:port/path`, which a server must
 * accept) becomes its path, read on the raw bytes before any decoding: its
 * authority must be a host and port (no '%', '@', '#', '\'), or the target
 * becomes DEL, refused, so that nothing in it reads as a path here and as
 * a host to a proxy in front. A target with a raw '#' becomes a mark
 * framing_check refuses as a fragment. libmicrohttpd also passes query
 * arguments here, which attnd never reads. Returns the new length. */
size_t framing_unescape(void *cls, struct MHD_Connection *conn, char *s);

#endif
