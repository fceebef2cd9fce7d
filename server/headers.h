/*
 * headers.h: what the transport reads from a request's headers.
 *
 * Pure functions of one connection's headers (read through libmicrohttpd,
 * valid until the request completes): nothing is allocated or kept, and a
 * returned pointer is borrowed from the connection.
 */
#ifndef SERVER_HEADERS_H
#define SERVER_HEADERS_H

#include <stddef.h>

#include "compress.h"

struct MHD_Connection;

enum { HDR_REQUEST_ID_MAX = 128 };

/* The client's X-Request-Id if it is 1..128 printable ASCII chars, else NULL. */
const char *hdr_client_request_id(struct MHD_Connection *conn);

/* Two Content-Length headers, or Content-Length with chunked encoding. */
int hdr_framing_ambiguous(struct MHD_Connection *conn);

/* `Authorization: Bearer KEY` with exactly key (compared in constant time),
 * spaces and tabs around KEY allowed (RFC 9110 OWS). */
int hdr_bearer_matches(struct MHD_Connection *conn, const char *key);

/* Content-Type application/json, parameters allowed. */
int hdr_media_type_json(struct MHD_Connection *conn);

/* Content-Type `type` (lower case, e.g. "application/octet-stream"),
 * compared without case, parameters allowed. */
int hdr_media_type_is(struct MHD_Connection *conn, const char *type);

/* A Content-Type header is present (whatever its value). */
int hdr_has_content_type(struct MHD_Connection *conn);

/* The Inference-Header-Content-Length value (Triton's binary tensor
 * extension, POST /v2/.../infer) as sent, or NULL. */
const char *hdr_inference_header_length(struct MHD_Connection *conn);

/* A Content-Length above max. */
int hdr_declared_too_large(struct MHD_Connection *conn, unsigned long long max);

/* Content-Length > 0 or chunked: a body will follow. */
int hdr_announces_body(struct MHD_Connection *conn);

/* The coding to answer in, from every Accept-Encoding field (compress.h:
 * accept_encoding_choose); CODING_IDENTITY without one. */
enum coding hdr_accept_encoding(struct MHD_Connection *conn);

/* The request body's coding, from every Content-Encoding field
 * (compress.h: content_encoding_add); CODING_IDENTITY without one. */
void hdr_content_encoding(struct MHD_Connection *conn, struct content_encoding *ce);

/* The Access-Control-Allow-Origin value for this request under --cors-origins
 * `list` ("*", a comma list, or "" for none), or NULL. *vary is set when the
 * answer depends on the Origin header. */
const char *hdr_cors_origin(struct MHD_Connection *conn, const char *list, int *vary);

#endif
