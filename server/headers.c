/*
 * headers.c: request-header checks, each a small pure function.
 */
#include "headers.h"

#include "token.h"

#include <limits.h>
#include <microhttpd.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* id's length without the spaces and tabs after it (RFC 9110 section 5.5:
 * not part of the value; libmicrohttpd 0.9.75 strips only those before it),
 * when that is 1..HDR_REQUEST_ID_MAX printable ASCII characters, else 0. */
static size_t request_id_len(const char *id)
{
	size_t n = strlen(id);

	while (n > 0 && (id[n - 1] == ' ' || id[n - 1] == '\t'))
		n--;
	if (n > HDR_REQUEST_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (id[i] < 0x20 || id[i] > 0x7e)
			return 0;
	}
	return n;
}

size_t hdr_client_request_id(const struct hdr_fields *f, const char **id)
{
	*id = f->request_id;
	return f->request_id != NULL ? request_id_len(f->request_id) : 0;
}

/* value is "chunked" exactly as libmicrohttpd 0.9.75 decodes it: without
 * case, after the leading spaces it strips (trailing ones make it another
 * coding there, so here too). */
static int is_chunked(const char *value)
{
	while (*value == ' ' || *value == '\t')
		value++;
	return strcasecmp(value, "chunked") == 0;
}

/* Is the field's name (n bytes at key) `name`, without case? */
static int named(const char *key, size_t n, const char *name, size_t name_len)
{
	return n == name_len && strncasecmp(key, name, n) == 0;
}

#define NAMED(key, n, lit) named(key, n, lit, sizeof lit - 1)

/* The first field of a name wins, as in MHD_lookup_connection_value. */
static void keep_first(const char **slot, const char *value)
{
	if (*slot == NULL)
		*slot = value;
}

static enum MHD_Result note_field(void *cls, enum MHD_ValueKind kind, const char *key,
				  size_t key_size, const char *value, size_t value_size)
{
	struct hdr_fields *f = cls;

	(void)kind;
	(void)value_size;
	if (NAMED(key, key_size, "Content-Length")) {
		f->content_lengths++;
		keep_first(&f->content_length, value);
	} else if (NAMED(key, key_size, "Transfer-Encoding")) {
		f->transfer_encodings++;
		if (value != NULL && is_chunked(value))
			f->chunked++;
		keep_first(&f->transfer_encoding, value);
	} else if (NAMED(key, key_size, "Content-Type")) {
		keep_first(&f->content_type, value);
	} else if (NAMED(key, key_size, "X-Request-Id")) {
		keep_first(&f->request_id, value);
	} else if (NAMED(key, key_size, "Inference-Header-Content-Length")) {
		keep_first(&f->inference_header, value);
	} else if (NAMED(key, key_size, "Authorization")) {
		keep_first(&f->authorization, value);
	} else if (NAMED(key, key_size, "Origin")) {
		keep_first(&f->origin, value);
	} else if (NAMED(key, key_size, "Access-Control-Request-Headers")) {
		keep_first(&f->request_headers, value);
	} else if (NAMED(key, key_size, "Accept-Encoding")) {
		f->accept_encoding = 1;
	} else if (NAMED(key, key_size, "Content-Encoding")) {
		f->content_encoding = 1;
	} else if (NAMED(key, key_size, "If-None-Match")) {
		f->if_none_match = 1;
	} else if (NAMED(key, key_size, "If-Match")) {
		f->if_match = 1;
	}
	return MHD_YES;
}

void hdr_scan(struct MHD_Connection *conn, struct hdr_fields *f)
{
	memset(f, 0, sizeof(*f));
	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, note_field, f);
}

/* Two Content-Length headers, one with a Transfer-Encoding, or a
 * Transfer-Encoding other than one plain "chunked": request smuggling bait,
 * refused (RFC 9112 section 6.3). libmicrohttpd 0.9.75 decodes only an exact
 * "chunked" and reads any other coding ("gzip, chunked") as a body without
 * length, up to the connection's close: without this the request would hang. */
int hdr_framing_ambiguous(const struct hdr_fields *f)
{
	return f->content_lengths > 1 || (f->content_lengths > 0 && f->transfer_encodings > 0) ||
	       f->transfer_encodings > 1 || f->transfer_encodings != f->chunked;
}

/* Compares a client token with the key in time that depends only on the
 * key's length, so response timing does not reveal a matching prefix. */
static int secret_equal(const char *given, size_t given_len, const char *key)
{
	size_t key_len = strlen(key);
	volatile unsigned char diff = (unsigned char)(given_len != key_len);

	for (size_t i = 0; i < key_len; i++) {
		unsigned char g = i < given_len ? (unsigned char)given[i] : 0;

		diff |= (unsigned char)(g ^ (unsigned char)key[i]);
	}
	return diff == 0;
}

int hdr_bearer_matches(const struct hdr_fields *f, const char *key)
{
	const char *auth = f->authorization;
	size_t len;

	if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
		return 0;
	auth += 7;
	/* optional whitespace around the credentials (RFC 9110 OWS: SP, HTAB) */
	while (*auth == ' ' || *auth == '\t')
		auth++;
	len = strlen(auth);
	while (len > 0 && (auth[len - 1] == ' ' || auth[len - 1] == '\t'))
		len--;
	return secret_equal(auth, len, key);
}

/* type, optionally with parameters (; charset=utf-8). */
int hdr_media_type_is(const struct hdr_fields *f, const char *type)
{
	const char *ct = f->content_type;
	size_t n = strlen(type);

	if (ct == NULL)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, type, n) != 0)
		return 0;
	return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ' || ct[n] == '\t';
}

int hdr_media_type_json(const struct hdr_fields *f)
{
	return hdr_media_type_is(f, "application/json");
}

int hdr_has_content_type(const struct hdr_fields *f)
{
	return f->content_type != NULL;
}

const char *hdr_inference_header_length(const struct hdr_fields *f)
{
	return f->inference_header;
}

/* Content-Length read digit by digit, ULLONG_MAX past it (libmicrohttpd
 * has already refused a malformed value). */
int hdr_content_length(const struct hdr_fields *f, unsigned long long *n)
{
	const char *cl = f->content_length;

	*n = 0;
	if (cl == NULL)
		return 0;
	for (; *cl >= '0' && *cl <= '9'; cl++) {
		unsigned d = (unsigned)(*cl - '0');

		if (*n > (ULLONG_MAX - d) / 10) {
			*n = ULLONG_MAX;
			return 1;
		}
		*n = *n * 10 + d;
	}
	return 1;
}

int hdr_declared_too_large(const struct hdr_fields *f, unsigned long long max)
{
	unsigned long long n;

	return hdr_content_length(f, &n) && n > max;
}

/* Does the request announce a body? */
int hdr_announces_body(const struct hdr_fields *f)
{
	const char *cl = f->content_length;
	const char *te = f->transfer_encoding;

	if (te != NULL) /* any coding: libmicrohttpd then expects a body */
		return 1;
	return cl != NULL && strspn(cl, "0") != strlen(cl);
}

static enum MHD_Result add_accept_encoding(void *cls, enum MHD_ValueKind kind, const char *key,
					   const char *value)
{
	(void)kind;
	if (value != NULL && strcasecmp(key, "Accept-Encoding") == 0)
		accept_encoding_add(cls, value);
	return MHD_YES;
}

enum coding hdr_accept_encoding(const struct hdr_fields *f, struct MHD_Connection *conn,
				unsigned offered)
{
	struct accept_encoding ae;

	accept_encoding_init(&ae);
	if (!f->accept_encoding) /* no field to read: the pass would find none */
		return accept_encoding_choose_from(&ae, offered);
	if (MHD_get_connection_values(conn, MHD_HEADER_KIND, add_accept_encoding, &ae) < 0)
		return CODING_IDENTITY;
	return accept_encoding_choose_from(&ae, offered);
}

/* Does the field (`*` alone, or a list of entity tags, RFC 9110 section
 * 13.1.2) name etag? A tag's quotes hold any byte but a quote, commas too,
 * so the list is read tag by tag, not split at commas; a malformed element
 * ends it. `*` counts only as the whole field, as nginx and Apache read
 * it: in a list (`"x", *`) or followed by more (`*x`) it is not the
 * grammar's, and taking it would answer 304 to a client that may have
 * nothing. weak: compare weakly (If-None-Match: W/"x" names "x"), else
 * strongly (If-Match: a weak tag names nothing, RFC 9110 section 8.8.3.2). */
static int etag_listed(const char *field, const char *etag, int weak)
{
	size_t len = strlen(etag);
	const char *p = field + strspn(field, " \t");

	if (*p == '*')
		return p[1 + strspn(p + 1, " \t")] == '\0';
	for (;;) {
		const char *close;
		int weak_tag = 0;

		p += strspn(p, " \t,");
		if (*p == '\0')
			return 0;
		if (strncmp(p, "W/", 2) == 0) {
			p += 2;
			weak_tag = 1;
		}
		if (*p != '"' || (close = strchr(p + 1, '"')) == NULL)
			return 0;
		if ((weak || !weak_tag) && (size_t)(close + 1 - p) == len &&
		    memcmp(p, etag, len) == 0)
			return 1;
		p = close + 1;
	}
}

struct etag_search {
	const char *etag;
	const char *field; /* If-None-Match or If-Match */
	int weak;	   /* etag_listed's */
	int found;
};

static enum MHD_Result find_etag(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct etag_search *s = cls;

	(void)kind;
	if (value != NULL && strcasecmp(key, s->field) == 0 &&
	    etag_listed(value, s->etag, s->weak))
		s->found = 1;
	return s->found ? MHD_NO : MHD_YES;
}

int hdr_if_none_match(const struct hdr_fields *f, struct MHD_Connection *conn, const char *etag)
{
	struct etag_search s = {etag, "If-None-Match", 1, 0};

	if (f->if_none_match) /* no field to read: the pass would find none */
		MHD_get_connection_values(conn, MHD_HEADER_KIND, find_etag, &s);
	return s.found;
}

int hdr_if_match_fails(const struct hdr_fields *f, struct MHD_Connection *conn,
		       const char *etag)
{
	struct etag_search s = {etag, "If-Match", 0, 0};

	if (!f->if_match) /* no precondition: nothing can fail */
		return 0;
	MHD_get_connection_values(conn, MHD_HEADER_KIND, find_etag, &s);
	return !s.found;
}

static enum MHD_Result add_content_encoding(void *cls, enum MHD_ValueKind kind, const char *key,
					    const char *value)
{
	(void)kind;
	if (value != NULL && strcasecmp(key, "Content-Encoding") == 0)
		content_encoding_add(cls, value);
	return MHD_YES;
}

void hdr_content_encoding(const struct hdr_fields *f, struct MHD_Connection *conn,
			  struct content_encoding *ce)
{
	content_encoding_init(ce);
	if (f->content_encoding)
		MHD_get_connection_values(conn, MHD_HEADER_KIND, add_content_encoding, ce);
}

/* The next origin of a --cors-origins list from *p (origins are separated
 * by commas and spaces): its length, 0 at the end; *p is left on it. */
static size_t cors_next(const char **p)
{
	*p += strspn(*p, ", ");
	return strcspn(*p, ", ");
}

int hdr_cors_any(const char *list)
{
	size_t len;

	if (list == NULL)
		return 0;
	len = cors_next(&list);

	if (len != 1 || list[0] != '*')
		return 0;
	list += len;
	return cors_next(&list) == 0;
}

const char *hdr_cors_origin(const struct hdr_fields *f, const char *list, int *vary)
{
	const char *origin;
	size_t n, len;

	*vary = 0;
	if (list == NULL || list[0] == '\0')
		return NULL;
	if (strcmp(list, "*") == 0)
		return "*";
	*vary = 1;
	origin = f->origin;
	if (origin == NULL)
		return NULL;
	n = strlen(origin);
	for (const char *p = list; (len = cors_next(&p)) > 0; p += len)
		if (len == n && strncmp(p, origin, n) == 0)
			return origin;
	return NULL;
}

/* The port of the origin [o, o + olen), from after its colon to its end:
 * what a browser's URL parser leaves there (WHATWG URL, RFC 6454 section
 * 6.2): digits without a leading zero, at most 65535, never the scheme's
 * default (the parser drops it, and "https://app.example:" too). The scheme
 * is o's first slen bytes. 1, or 0 with why filled. */
static int origin_port_ok(const char *o, size_t olen, size_t slen, const char *colon, char *why,
			  size_t cap)
{
	static const struct {
		const char *scheme;
		unsigned port;
	} defaults[] = {{"http", 80}, {"https", 443}, {"ws", 80}, {"wss", 443}};
	const char *p = colon + 1;
	size_t len = (size_t)(o + olen - p);
	unsigned long v = 0;
	int ok = len >= 1 && len <= 5 && (p[0] != '0' || len == 1);

	for (size_t i = 0; ok && i < len; i++) {
		ok = p[i] >= '0' && p[i] <= '9';
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	if (!ok || v > 65535) {
		snprintf(why, cap,
			 "'%.*s': the port must be a number from 0 to 65535 without leading zeros, "
			 "as browsers send it",
			 (int)olen, o);
		return 0;
	}
	for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
		if (strlen(defaults[i].scheme) == slen &&
		    strncmp(defaults[i].scheme, o, slen) == 0 && defaults[i].port == v) {
			snprintf(why, cap,
				 "'%.*s': browsers leave out %s's default port %u; write '%.*s'",
				 (int)olen, o, defaults[i].scheme, defaults[i].port,
				 (int)(colon - o), o);
			return 0;
		}
	return 1;
}

/* [p, p + len) is an origin as a browser sends it in Origin (RFC 6454 section
 * 6.2, the ASCII serialization): "null", or scheme://host[:port] in lowercase
 * ASCII (a Unicode host as its punycode, xn--...), with no path, query,
 * fragment, user or wildcard, and a port only when it is not the scheme's
 * default; what it is not, in why. An origin written otherwise would never
 * equal the one a browser sends, and no CORS header would ever be given. */
static int origin_ok(const char *p, size_t len, char *why, size_t cap)
{
	const char *sep = memchr(p, ':', len);
	size_t scheme = sep != NULL ? (size_t)(sep - p) : len;
	const char *host, *end = p + len, *colon;

	if (len == 4 && strncmp(p, "null", 4) == 0)
		return 1;
	if (scheme == 0 || scheme + 3 >= len || strncmp(p + scheme, "://", 3) != 0) {
		snprintf(why, cap, "'%.*s' is not scheme://host[:port]", (int)len, p);
		return 0;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c >= 'A' && c <= 'Z') {
			snprintf(why, cap, "'%.*s' has capitals; browsers send origins in lowercase",
				 (int)len, p);
			return 0;
		}
		if (c >= 0x80) {
			snprintf(why, cap,
				 "'%.*s' is not ASCII; browsers send a Unicode host as its "
				 "punycode (xn--...)",
				 (int)len, p);
			return 0;
		}
		if (i >= scheme + 3 && strchr("/?#@*", c) != NULL) {
			snprintf(why, cap,
				 "'%.*s' is not scheme://host[:port]: no path, trailing slash, "
				 "user or wildcard ('%c')",
				 (int)len, p, c);
			return 0;
		}
	}
	host = p + scheme + 3;
	if (*host == '[') { /* an IPv6 literal: its port, if any, after the ']' */
		const char *close = memchr(host, ']', (size_t)(end - host));

		colon = close != NULL && close + 1 < end ? close + 1 : NULL;
		if (close == NULL || (colon != NULL && *colon != ':')) {
			snprintf(why, cap, "'%.*s' is not scheme://[address][:port]", (int)len, p);
			return 0;
		}
	} else {
		colon = memchr(host, ':', (size_t)(end - host));
	}
	if (colon == NULL)
		return 1;
	return origin_port_ok(p, len, scheme, colon, why, cap);
}

int hdr_cors_list_check(const char *list, char *why, size_t cap)
{
	size_t len, count = 0;
	int any = 0;

	if (list == NULL)
		return 0;
	for (const char *p = list; (len = cors_next(&p)) > 0; p += len) {
		count++;
		if (len == 1 && *p == '*')
			any = 1;
		else if (!origin_ok(p, len, why, cap))
			return -1;
	}
	if (any && count > 1) {
		snprintf(why, cap, "'*' allows every origin and cannot be one of a list");
		return -1;
	}
	return 0;
}

const char *hdr_cors_request_headers(const struct hdr_fields *f)
{
	const char *v = f->request_headers;
	size_t names = 0, n;

	if (v == NULL || (n = strlen(v)) == 0 || n > 512)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (http_tchar(c))
			names += i == 0 || !http_tchar((unsigned char)v[i - 1]);
		else if (c != ',' && c != ' ' && c != '\t')
			return NULL;
	}
	return names > 0 ? v : NULL;
}
