/*
 * route.h: the route table {method, path, handler} and its matcher.
 *
 * The table is static and read-only; route_match copies what it needs into
 * caller-owned buffers and allocates nothing.
 */
#ifndef SERVER_ROUTE_H
#define SERVER_ROUTE_H

#include <stddef.h>
#include <stdio.h>

#include "metrics.h"
#include "api/service.h"

enum route_kind {
	ROUTE_COMPUTE = 0, /* body in, api_handle on a worker */
	ROUTE_API,	   /* api_handle inline on the libmicrohttpd thread (cheap) */
	ROUTE_HEALTHZ,
	ROUTE_READYZ,
	ROUTE_METRICS,
	ROUTE_WEB,     /* a file of the viewer (web/, embedded), inline */
	ROUTE_OPENAPI, /* the OpenAPI document (api/openapi.h), inline, served as ROUTE_WEB's */
};

/* Media types a compute route's body may have. */
enum route_media {
	ROUTE_MEDIA_JSON = 1 << 0,  /* application/json */
	ROUTE_MEDIA_OCTET = 1 << 1, /* application/octet-stream (v2 binary tensors) */
	/* no Content-Type at all, read as JSON (with binary tensors after
	 * Inference-Header-Content-Length bytes): what Triton's HTTP clients
	 * send, and Triton takes; a Content-Type that is present is still checked */
	ROUTE_MEDIA_NONE = 1 << 2,
	/* application/x-www-form-urlencoded, read as JSON: what `curl -d` sends
	 * unless told otherwise, and what Triton's and KServe's own examples of
	 * an infer request send (Triton reads the body whatever its type). The
	 * routes that take it take a body without a type too, so no request a
	 * browser could send without a preflight is let in that was not before. */
	ROUTE_MEDIA_FORM = 1 << 3,
};

struct route {
	const char *method;
	/* exact; or the prefix before the segment when param; or, when it holds
	 * '{', a template whose every {x} matches one segment (the v2 family:
	 * /v2/models/{name}/versions/{version}/infer) */
	const char *path;
	size_t path_len;   /* strlen(path) */
	const char *param; /* NULL, or the segment copied out: /v1/models/{name} */
	enum route_kind kind;
	enum api_route api; /* ROUTE_COMPUTE / ROUTE_API only */
	enum metric_route metric;
	int open;	/* answered without the API key */
	unsigned media; /* ROUTE_MEDIA_* a body may have; 0 for routes without one */
};

enum route_result {
	ROUTE_FOUND = 0,
	ROUTE_NO_PATH,	 /* 404 */
	ROUTE_NO_METHOD, /* 405: the path exists for other methods */
};

enum { ROUTE_PARAM_MAX = 160, ROUTE_ALLOW_MAX = 64 };

/* Prints the routing table, one `METHOD PATH` line per route ({name} for a
 * path parameter named name), for the contract test that compares it with
 * the spec. */
void route_print(FILE *out);

/*
 * Matches method and path. On ROUTE_FOUND *out is the route and param (when
 * the route has one) holds the last segment, cut to ROUTE_PARAM_MAX - 1
 * bytes (no name is that long). Whenever the path exists, allow gets the
 * methods it takes ("GET, HEAD, OPTIONS") and *metric its label; otherwise
 * allow is "" and *metric MR_OTHER. HEAD matches GET routes.
 */
enum route_result route_match(const char *method, const char *path, const struct route **out,
			      char param[ROUTE_PARAM_MAX], char allow[ROUTE_ALLOW_MAX],
			      enum metric_route *metric);

/* The methods some route takes, each once ("POST, GET, HEAD, OPTIONS"): the
 * Allow of `OPTIONS *`, which asks about the server as a whole (RFC 9110
 * section 9.3.7). */
void route_allow_any(char allow[ROUTE_ALLOW_MAX]);

/* 1 when a route of path is of kind (ROUTE_COMPUTE: answers on a worker),
 * whichever method was asked: for the answers of a path none of whose
 * methods matched (405). */
int route_path_is(const char *path, enum route_kind kind);

/* Does path (of path_len bytes, strlen(path)) match rt's path
 * (ROUTE_PARAM_MAX - 1 bytes of its parameter's segment copied into param,
 * when not NULL)? The matcher route_match runs, and its naive twin, which
 * tests/daemon/check_route.c compares it with. */
int route_path_matches(const struct route *rt, const char *path, size_t path_len,
		       char param[ROUTE_PARAM_MAX]);
int route_path_matches_ref(const struct route *rt, const char *path, char param[ROUTE_PARAM_MAX]);

/* The routing table: *n routes, static. */
const struct route *route_table(size_t *n);

/* Copies the segment of path that rt's template names {name} into out;
 * returns 0, or -1 (out "") when rt has no such segment or path no match. */
int route_segment(const struct route *rt, const char *path, const char *name,
		  char out[ROUTE_PARAM_MAX]);

#endif
