/*
 * framing.c: strict HTTP/1.1 message syntax on what libmicrohttpd parsed
 * (framing.h says what is refused, and why here rather than in the library).
 */
#include "framing.h"
#include "headers.h"
#include "token.h"

#include <microhttpd.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Bytes between a header's name and its value in a well-formed line: the
 * colon (a NUL now) and the optional whitespace before the value. A field
 * with more leading whitespace than this is refused as malformed too. */
enum { FIELD_GAP_MAX = 64, SHOWN_MAX = 40 };

static int is_ctl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* Up to SHOWN_MAX bytes of s[n] for a message: printable ASCII kept, any
 * other byte as '?', so a hostile name cannot break the JSON or the log. */
static void shown(char *dst, const char *s, size_t n)
{
	size_t k = n < SHOWN_MAX ? n : SHOWN_MAX;

	for (size_t i = 0; i < k; i++) {
		unsigned char c = (unsigned char)s[i];

		dst[i] = c >= 0x20 && c < 0x7f && c != '"' && c != '\\' ? (char)c : '?';
	}
	dst[k] = '\0';
}

/* libmicrohttpd 0.9.75 parses "Name: value" in place in its read buffer:
 * the colon becomes NUL, the value starts after the whitespace that
 * follows. An obs-fold is glued onto the name in memory allocated
 * elsewhere, so the value no longer follows its name. 1 when it does. */
static int value_follows_name(const char *key, size_t key_size, const char *value)
{
	uintptr_t k_end = (uintptr_t)key + key_size;
	uintptr_t v = (uintptr_t)value;

	if (v <= k_end || v - k_end > FIELD_GAP_MAX)
		return 0;
	if (key[key_size] != '\0')
		return 0;
	for (const char *p = key + key_size + 1; p < value; p++) {
		if (*p != ' ' && *p != '\t')
			return 0;
	}
	return 1;
}

struct field_scan {
	int hosts;
	int content_types;
	int transfer_encodings;
	char *why;
	size_t cap;
};

/* A byte of an authority's host or port (RFC 3986 section 3.2: unreserved,
 * sub-delims, ':' and an IPv6 literal's brackets; no percent-encoding). The
 * bytes of a name or an address and its port are tried first: every
 * request's Host is read with it. */
static int authority_byte(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '.' || c == ':' || c == '-')
		return 1;
	return c != '\0' && strchr("_~!$&'()*+,;=[]", c) != NULL;
}

/* A value holds a CR, which RFC 9112 section 2.2 has the recipient refuse
 * (or read as a space): libmicrohttpd 0.9.75 ends a line only at its LF and
 * keeps a bare CR inside the value, so "X: a\rContent-Length: 5" is one
 * header here and two to a proxy in front that ends lines at a CR. (A NUL
 * cannot be seen here: libmicrohttpd ends the value at it.) */
static int value_has_cr(const char *value, size_t value_size)
{
	return memchr(value, '\r', value_size) != NULL;
}

/* Host's value is uri-host [ ":" port ] (RFC 9112 section 3.2; empty when
 * the target has no authority), the spaces and tabs after it aside: a
 * reg-name may hold a percent-encoding, nothing else outside the authority's
 * bytes (no space, '/', '@', '#'), and a server must refuse any other value
 * with 400. */
static int host_value_ok(const char *value, size_t n)
{
	while (n > 0 && (value[n - 1] == ' ' || value[n - 1] == '\t'))
		n--;
	for (size_t i = 0; i < n; i++)
		if (!authority_byte((unsigned char)value[i]) && value[i] != '%')
			return 0;
	return 1;
}

static enum MHD_Result check_field(void *cls, enum MHD_ValueKind kind, const char *key,
				   size_t key_size, const char *value, size_t value_size)
{
	struct field_scan *f = cls;
	char name[SHOWN_MAX + 1]; /* the name for a message, made only for one */

	(void)kind;
	if (key_size == 0) {
		snprintf(f->why, f->cap, "a header line without a name");
		return MHD_NO;
	}
	for (size_t i = 0; i < key_size; i++) {
		if (!http_tchar((unsigned char)key[i])) {
			shown(name, key, key_size);
			snprintf(f->why, f->cap,
				 "header name '%s' has a byte not allowed in a name at %zu "
				 "(whitespace before the colon, or a control character)",
				 name, i);
			return MHD_NO;
		}
	}
	if (value == NULL || !value_follows_name(key, key_size, value)) {
		shown(name, key, key_size);
		snprintf(f->why, f->cap,
			 "header '%s' is folded onto the next line (obs-fold): not accepted", name);
		return MHD_NO;
	}
	if (value_has_cr(value, value_size)) {
		shown(name, key, key_size);
		snprintf(f->why, f->cap,
			 "header '%s' has a CR byte in its value that ends no line (RFC 9112 "
			 "section 2.2): not accepted",
			 name);
		return MHD_NO;
	}
	if (key_size == 4 && strncasecmp(key, "Host", 4) == 0) {
		f->hosts++;
		if (!host_value_ok(value, value_size)) {
			snprintf(f->why, f->cap,
				 "the Host header is not a host[:port] (RFC 9112 section 3.2): no "
				 "spaces, '/', '@' or other bytes outside a URI's authority");
			return MHD_NO;
		}
	}
	if (key_size == 12 && strncasecmp(key, "Content-Type", 12) == 0)
		f->content_types++;
	if (key_size == 17 && strncasecmp(key, "Transfer-Encoding", 17) == 0)
		f->transfer_encodings++;
	return MHD_YES;
}

/* What framing_unescape leaves of a target with a raw '#': "#" alone, which
 * fits in any such target's bytes and which no path decodes to (a path
 * starts with '/'; the bare "%23" is no path either), so target_ok can name
 * the fault. */
static const char fragment_mark[] = "#";

/* What it leaves of a target with a raw space (a client sends %20): " "
 * alone, for the same reasons. (Query arguments pass through it too; attnd
 * reads none.) */
static const char space_mark[] = " ";

static int target_ok(const char *method, const char *url, char *why, size_t cap)
{
	if (strcmp(url, fragment_mark) == 0) {
		snprintf(why, cap,
			 "the request target has a fragment ('#...'): a client never sends one "
			 "(RFC 9112 section 3.2, RFC 3986 section 3.5); send the path alone, "
			 "or %%23 for a '#' in it");
		return 0;
	}
	if (strcmp(url, space_mark) == 0) {
		snprintf(why, cap,
			 "the request target has a space (RFC 9112 section 3.2): send a space in "
			 "a path as %%20");
		return 0;
	}
	if (strcmp(url, "*") == 0 && strcmp(method, "OPTIONS") != 0) {
		snprintf(why, cap,
			 "the request target '*' is only for OPTIONS (RFC 9112 section 3.2.4); "
			 "send a path (/...)");
		return 0;
	}
	if (url[0] != '/' && strcmp(url, "*") != 0) {
		snprintf(why, cap,
			 "the request target is neither a path (/...) nor an absolute "
			 "http:// or https:// URL with a plain host");
		return 0;
	}
	for (size_t i = 0; url[i] != '\0'; i++) {
		if (is_ctl((unsigned char)url[i])) {
			snprintf(why, cap,
				 "the request target has a control character at byte %zu "
				 "(raw, or percent-encoded such as %%00)",
				 i);
			return 0;
		}
	}
	return 1;
}

int framing_query_has_ctl(const char *target)
{
	const char *p = target != NULL ? strchr(target, '?') : NULL;

	if (p == NULL)
		return 0;
	for (p++; *p != '\0'; p++) {
		if (is_ctl((unsigned char)*p))
			return 1;
	}
	return 0;
}

int framing_check(struct MHD_Connection *conn, const char *method, const char *url,
		  const char *version, char *why, size_t cap)
{
	struct field_scan f = {0, 0, 0, why, cap};

	why[0] = '\0';
	if (!target_ok(method, url, why, cap))
		return -1;
	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, check_field, &f);
	if (why[0] != '\0')
		return -1;
	if (f.hosts > 1) {
		snprintf(why, cap, "%d Host headers: send exactly one", f.hosts);
		return -1;
	}
	/* one value only (RFC 9110 section 8.3); libmicrohttpd would hand on
	 * the first, where a proxy in front may have read the last */
	if (f.content_types > 1) {
		snprintf(why, cap, "%d Content-Type headers: send one", f.content_types);
		return -1;
	}
	if (f.hosts == 0 && strcmp(version, "HTTP/1.1") == 0) {
		snprintf(why, cap, "an HTTP/1.1 request needs a Host header");
		return -1;
	}
	/* libmicrohttpd decodes chunked whatever the version and keeps an
	 * HTTP/1.0 keep-alive connection open after it, where an HTTP/1.0
	 * proxy in front knows no Transfer-Encoding and frames the body
	 * otherwise: what follows could be read as a request of its own */
	if (f.transfer_encodings > 0 && strcmp(version, "HTTP/1.0") == 0) {
		snprintf(why, cap,
			 "Transfer-Encoding in an HTTP/1.0 request, whose framing cannot be "
			 "trusted (RFC 9112 section 6.1): send Content-Length, or HTTP/1.1");
		return -1;
	}
	return 0;
}

void framing_say_ambiguous(const struct hdr_fields *f, char *why, size_t cap)
{
	char value[SHOWN_MAX + 1];

	if (f->content_lengths > 1) {
		snprintf(why, cap, "%u Content-Length headers: send one", f->content_lengths);
	} else if (f->content_lengths > 0 && f->transfer_encodings > 0) {
		snprintf(why, cap,
			 "Content-Length with Transfer-Encoding: send one of them (RFC 9112 "
			 "section 6.3)");
	} else if (f->transfer_encodings > 1) {
		snprintf(why, cap, "%u Transfer-Encoding headers: send one, 'chunked'",
			 f->transfer_encodings);
	} else {
		/* the value as received: "chunked " differs from chunked only by
		 * its trailing space, which the quotes show */
		const char *te = f->transfer_encoding != NULL ? f->transfer_encoding : "";

		shown(value, te, strlen(te));
		snprintf(why, cap,
			 "Transfer-Encoding '%s'%s is not 'chunked', the one coding taken: "
			 "exactly that word, no list and nothing after it",
			 value, strlen(te) > SHOWN_MAX ? " (cut)" : "");
	}
}

/* libmicrohttpd 0.9.75's record of one header (struct MHD_HTTP_Header:
 * next, name, name size, value, value size, kind), rounded up. */
enum { HEADER_RECORD_BYTES = 64 };

static enum MHD_Result add_field_bytes(void *cls, enum MHD_ValueKind kind, const char *key,
				       size_t key_size, const char *value, size_t value_size)
{
	size_t *total = cls;

	(void)kind;
	(void)key;
	(void)value;
	*total += key_size + value_size + 4 + HEADER_RECORD_BYTES; /* ": " and CRLF */
	return MHD_YES;
}

size_t framing_head_room(size_t pool)
{
	return pool / 4 < FRAMING_HEAD_ROOM_MAX ? pool / 4 : FRAMING_HEAD_ROOM_MAX;
}

size_t framing_head_bytes(struct MHD_Connection *conn, const char *url, const char *method,
			  const char *version)
{
	size_t total = strlen(method) + strlen(url) + strlen(version) + 4;

	MHD_get_connection_values_n(conn, MHD_HEADER_KIND | MHD_COOKIE_KIND | MHD_GET_ARGUMENT_KIND,
				    add_field_bytes, &total);
	return total;
}

/* The length of an absolute-form target's scheme and authority, 0 for
 * another target, -1 for an absolute-form one whose authority is empty or
 * holds anything but a host and port. */
static long absolute_prefix(const char *s)
{
	size_t scheme = strncasecmp(s, "http://", 7) == 0	  ? 7
			: strncasecmp(s, "https://", 8) == 0 ? 8
							     : 0;
	size_t end = scheme;

	if (scheme == 0)
		return 0;
	while (s[end] != '\0' && s[end] != '/') {
		if (!authority_byte((unsigned char)s[end]))
			return -1;
		end++;
	}
	return end > scheme ? (long)end : -1;
}

/* An absolute-form target as its path, in place ("http://h" as "/"), or as
 * DEL when its authority is no host (framing_check refuses it). */
static void strip_authority(char *s)
{
	long skip = absolute_prefix(s);

	if (skip < 0) {
		s[0] = 0x7f, s[1] = '\0';
		return;
	}
	if (skip == 0)
		return;
	memmove(s, s + skip, strlen(s + skip) + 1);
	if (s[0] == '\0')
		s[0] = '/', s[1] = '\0';
}

size_t framing_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	size_t n;

	(void)cls;
	(void)conn;
	/* a fragment is the client's own (RFC 3986 section 3.5), never sent:
	 * refused whole rather than routed as part of the path (a 404) */
	if (strchr(s, '#') != NULL) {
		memcpy(s, fragment_mark, sizeof fragment_mark);
		return sizeof fragment_mark - 1;
	}
	/* libmicrohttpd takes everything between the method and the last
	 * space for the target: "GET /healthz x HTTP/1.1" would be routed */
	if (strchr(s, ' ') != NULL) {
		memcpy(s, space_mark, sizeof space_mark);
		return sizeof space_mark - 1;
	}
	strip_authority(s);
	n = MHD_http_unescape(s);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\0')
			s[i] = 0x7f;
	}
	return n;
}
