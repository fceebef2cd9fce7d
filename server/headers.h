/*
 * headers.h: what the transport reads from a request's headers.
 *
 * hdr_scan reads a request's headers once, in one pass through
 * libmicrohttpd, into a struct hdr_fields; the other functions are pure
 * functions of that (and, for the codings, of the connection). Nothing is
 * allocated or kept; every pointer is borrowed from the connection and
 * valid until the request completes.
 */
#ifndef SERVER_HEADERS_H
#define SERVER_HEADERS_H

#include <stddef.h>

#include "compress.h"

struct MHD_Connection;

enum { HDR_REQUEST_ID_MAX = 128 };

/* What the transport reads from a request's headers: the value of the first
 * field of each name (compared without case), as
 * MHD_lookup_connection_value would return it, or NULL; and how many fields
 * of the framing's names there are. */
struct hdr_fields {
	const char *content_length, *transfer_encoding, *content_type;
	const char *request_id, *inference_header, *authorization, *origin;
	const char *request_headers; /* Access-Control-Request-Headers (a preflight's) */
	unsigned content_lengths, transfer_encodings, chunked; /* chunked: exactly "chunked" */
	int accept_encoding, content_encoding, if_none_match;  /* such a field was sent */
	int if_match; /* an If-Match field was sent */
};

/* Reads conn's headers into *f, in one pass (instead of one lookup a name). */
void hdr_scan(struct MHD_Connection *conn, struct hdr_fields *f);

/* The client's X-Request-Id at *id: its length without trailing spaces and
 * tabs when that is 1..128 printable ASCII chars, else 0 (none valid). */
size_t hdr_client_request_id(const struct hdr_fields *f, const char **id);

/* Two Content-Length headers, or Content-Length with chunked encoding. */
int hdr_framing_ambiguous(const struct hdr_fields *f);

/* `Authorization: Bearer KEY` with exactly key (compared in constant time),
 * spaces and tabs around KEY allowed (RFC 9110 OWS). */
int hdr_bearer_matches(const struct hdr_fields *f, const char *key);

/* Content-Type application/json, parameters allowed. */
int hdr_media_type_json(const struct hdr_fields *f);

/* Content-Type `type` (lower case, e.g. "application/octet-stream"),
 * compared without case, parameters allowed. */
int hdr_media_type_is(const struct hdr_fields *f, const char *type);

/* A Content-Type header is present (whatever its value). */
int hdr_has_content_type(const struct hdr_fields *f);

/* The Inference-Header-Content-Length value (Triton's binary tensor
 * extension, POST /v2/.../infer) as sent, or NULL. */
const char *hdr_inference_header_length(const struct hdr_fields *f);

/* The Content-Length into *n (ULLONG_MAX past it): 1, or 0 when none. */
int hdr_content_length(const struct hdr_fields *f, unsigned long long *n);

/* A Content-Length above max. */
int hdr_declared_too_large(const struct hdr_fields *f, unsigned long long max);

/* Content-Length > 0 or chunked: a body will follow. */
int hdr_announces_body(const struct hdr_fields *f);

/* The coding to answer in among those `offered` (compress.h: CODINGS_*),
 * from every Accept-Encoding field (accept_encoding_choose_from);
 * CODING_IDENTITY without one. */
enum coding hdr_accept_encoding(const struct hdr_fields *f, struct MHD_Connection *conn,
				unsigned offered);

/* An If-None-Match field lists etag (a quoted entity tag, as "\"abc\""),
 * compared weakly (W/ ignored), or is `*` (RFC 9110 section 13.1.2). */
int hdr_if_none_match(const struct hdr_fields *f, struct MHD_Connection *conn, const char *etag);

/* If-Match fields were sent and none lists etag, compared strongly, or is
 * `*` (RFC 9110 section 13.1.1): the answer is 412. 0 when none was sent. */
int hdr_if_match_fails(const struct hdr_fields *f, struct MHD_Connection *conn,
		       const char *etag);

/* The request body's coding, from every Content-Encoding field
 * (compress.h: content_encoding_add); CODING_IDENTITY without one. */
void hdr_content_encoding(const struct hdr_fields *f, struct MHD_Connection *conn,
			  struct content_encoding *ce);

/* A preflight's Access-Control-Request-Headers when it is a list of field
 * names (tokens, commas, spaces; at most 512 bytes), else NULL: what the
 * preflight's Access-Control-Allow-Headers echoes. */
const char *hdr_cors_request_headers(const struct hdr_fields *f);

/* The Access-Control-Allow-Origin value for this request under --cors-origins
 * `list` ("*", a comma list, or "" for none), or NULL. *vary is set when the
 * answer depends on the Origin header. */
const char *hdr_cors_origin(const struct hdr_fields *f, const char *list, int *vary);

/* --cors-origins `list` is "*" alone, spaces and commas aside (" *, "):
 * config.c then stores it as "*", which is all hdr_cors_origin looks for. */
int hdr_cors_any(const char *list);

/* 0 when --cors-origins `list` is "*" alone (spaces and commas aside), ""
 * or origins as browsers send them (scheme://host[:port] in lowercase, or
 * "null"), which the matching above compares byte for byte; else -1 with
 * the first thing wrong in why. */
int hdr_cors_list_check(const char *list, char *why, size_t cap);

#endif
