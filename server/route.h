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
#include "service.h"

enum route_kind {
	ROUTE_COMPUTE = 0, /* body in, api_handle on a worker */
	ROUTE_API,	   /* api_handle inline on the libmicrohttpd thread (cheap) */
	ROUTE_HEALTHZ,
	ROUTE_READYZ,
	ROUTE_METRICS,
	ROUTE_WEB, /* a file of the viewer (web/, embedded), inline */
};

struct route {
	const char *method;
	const char *path;  /* exact, or the prefix before the segment when param */
	const char *param; /* NULL, or the name of one last segment: /v1/models/{name} */
	enum route_kind kind;
	enum api_route api; /* ROUTE_COMPUTE / ROUTE_API only */
	enum metric_route metric;
	int open; /* answered without the API key */
};

enum route_result {
	ROUTE_FOUND = 0,
	ROUTE_NO_PATH,	 /* 404 */
	ROUTE_NO_METHOD, /* 405: the path exists for other methods */
};

enum { ROUTE_PARAM_MAX = 160, ROUTE_ALLOW_MAX = 64 };

/*
 * Matches method and path. On ROUTE_FOUND *out is the route and param (when
 * the route has one) holds the last segment. Whenever the path exists, allow
 * gets the methods it takes ("GET, HEAD, OPTIONS") and *metric its label;
 * otherwise allow is "" and *metric MR_OTHER. HEAD matches GET routes.
 */
/* Prints the routing table, one `METHOD PATH` line per route ({name} for a
 * path parameter named name), for the contract test that compares it with
 * the spec. */
void route_print(FILE *out);

enum route_result route_match(const char *method, const char *path, const struct route **out,
			      char param[ROUTE_PARAM_MAX], char allow[ROUTE_ALLOW_MAX],
			      enum metric_route *metric);

#endif
