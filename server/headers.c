/*
 * headers.c: request-header checks, each a small pure function.
 */
#include "headers.h"

#include <microhttpd.h>

#include <string.h>
#include <strings.h>

static const char *header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

static int request_id_valid(const char *id)
{
	size_t n = 0;

	for (; id[n] != '\0'; n++) {
		if (n >= HDR_REQUEST_ID_MAX || id[n] < 0x20 || id[n] > 0x7e)
			return 0;
	}
	return n > 0;
}

const char *hdr_client_request_id(struct MHD_Connection *conn)
{
	const char *given = header(conn, "X-Request-Id");

	return given != NULL && request_id_valid(given) ? given : NULL;
}

struct framing {
	unsigned content_length;
	unsigned transfer_encoding;
	unsigned chunked; /* Transfer-Encoding exactly "chunked" */
};

/* value is "chunked" exactly as libmicrohttpd 0.9.75 decodes it: without
 * case, after the leading spaces it strips (trailing ones make it another
 * coding there, so here too). */
static int is_chunked(const char *value)
{
	while (*value == ' ' || *value == '\t')
		value++;
	return strcasecmp(value, "chunked") == 0;
}

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	struct framing *f = cls;

	(void)kind;
	if (strcasecmp(key, "Content-Length") == 0)
		f->content_length++;
	if (strcasecmp(key, "Transfer-Encoding") == 0) {
		f->transfer_encoding++;
		if (value != NULL && is_chunked(value))
			f->chunked++;
	}
	return MHD_YES;
}

/* Two Content-Length headers, one with a Transfer-Encoding, or a
 * Transfer-Encoding other than one plain "chunked": request smuggling bait,
 * refused (RFC 9112 section 6.3). libmicrohttpd 0.9.75 decodes only an exact
 * "chunked" and reads any other coding ("gzip, chunked") as a body without
 * length, up to the connection's close: without this the request would hang. */
int hdr_framing_ambiguous(struct MHD_Connection *conn)
{
	struct framing f = {0, 0, 0};

	if (MHD_get_connection_values(conn, MHD_HEADER_KIND, count_framing, &f) < 0)
		return 1;
	return f.content_length > 1 || (f.content_length > 0 && f.transfer_encoding > 0) ||
	       f.transfer_encoding > 1 || f.transfer_encoding != f.chunked;
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

int hdr_bearer_matches(struct MHD_Connection *conn, const char *key)
{
	const char *auth = header(conn, "Authorization");
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
int hdr_media_type_is(struct MHD_Connection *conn, const char *type)
{
	const char *ct = header(conn, "Content-Type");
	size_t n = strlen(type);

	if (ct == NULL)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, type, n) != 0)
		return 0;
	return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ' || ct[n] == '\t';
}

int hdr_media_type_json(struct MHD_Connection *conn)
{
	return hdr_media_type_is(conn, "application/json");
}

int hdr_has_content_type(struct MHD_Connection *conn)
{
	return header(conn, "Content-Type") != NULL;
}

const char *hdr_inference_header_length(struct MHD_Connection *conn)
{
	return header(conn, "Inference-Header-Content-Length");
}

/* Content-Length above max, read digit by digit without overflow
 * (libmicrohttpd has already refused a malformed value). */
int hdr_declared_too_large(struct MHD_Connection *conn, unsigned long long max)
{
	const char *cl = header(conn, "Content-Length");
	unsigned long long n = 0;

	if (cl == NULL)
		return 0;
	for (; *cl >= '0' && *cl <= '9'; cl++) {
		if (n > (max + 1) / 10)
			return 1;
		n = n * 10 + (unsigned long long)(*cl - '0');
	}
	return n > max;
}

/* Does the request announce a body? */
int hdr_announces_body(struct MHD_Connection *conn)
{
	const char *cl = header(conn, "Content-Length");
	const char *te = header(conn, "Transfer-Encoding");

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

enum coding hdr_accept_encoding(struct MHD_Connection *conn)
{
	struct accept_encoding ae;

	accept_encoding_init(&ae);
	if (MHD_get_connection_values(conn, MHD_HEADER_KIND, add_accept_encoding, &ae) < 0)
		return CODING_IDENTITY;
	return accept_encoding_choose(&ae);
}

static enum MHD_Result add_content_encoding(void *cls, enum MHD_ValueKind kind, const char *key,
					    const char *value)
{
	(void)kind;
	if (value != NULL && strcasecmp(key, "Content-Encoding") == 0)
		content_encoding_add(cls, value);
	return MHD_YES;
}

void hdr_content_encoding(struct MHD_Connection *conn, struct content_encoding *ce)
{
	content_encoding_init(ce);
	MHD_get_connection_values(conn, MHD_HEADER_KIND, add_content_encoding, ce);
}

const char *hdr_cors_origin(struct MHD_Connection *conn, const char *list, int *vary)
{
	const char *origin;
	size_t n;

	*vary = 0;
	if (list == NULL || list[0] == '\0')
		return NULL;
	if (strcmp(list, "*") == 0)
		return "*";
	*vary = 1;
	origin = header(conn, "Origin");
	if (origin == NULL)
		return NULL;
	n = strlen(origin);
	for (const char *p = list; *p != '\0';) {
		size_t len;

		while (*p == ' ' || *p == ',')
			p++;
		len = strcspn(p, ", ");
		if (len == n && len > 0 && strncmp(p, origin, n) == 0)
			return origin;
		p += len;
	}
	return NULL;
}
