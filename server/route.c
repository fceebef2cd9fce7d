/*
 * route.c: the routes of attnd, as data.
 */
#include "route.h"

#include <stdio.h>
#include <string.h>

static const struct route routes[] = {
    {"POST", "/v1/attention", NULL, ROUTE_COMPUTE, API_ROUTE_ATTENTION, MR_ATTENTION, 0},
    {"POST", "/v1/sdpa", NULL, ROUTE_COMPUTE, API_ROUTE_SDPA, MR_SDPA, 0},
    {"GET", "/v1/models", NULL, ROUTE_API, API_ROUTE_MODELS, MR_MODELS, 0},
    {"GET", "/v1/models/", "name", ROUTE_API, API_ROUTE_MODEL, MR_MODEL, 0},
    {"GET", "/version", NULL, ROUTE_API, API_ROUTE_VERSION, MR_VERSION, 0},
    {"GET", "/openapi.json", NULL, ROUTE_API, API_ROUTE_OPENAPI, MR_OPENAPI, 0},
    {"GET", "/healthz", NULL, ROUTE_HEALTHZ, API_ROUTE_COUNT, MR_HEALTHZ, 1},
    {"GET", "/readyz", NULL, ROUTE_READYZ, API_ROUTE_COUNT, MR_READYZ, 1},
    {"GET", "/metrics", NULL, ROUTE_METRICS, API_ROUTE_COUNT, MR_METRICS, 1},
    /* the viewer: static files with no secret in them, so open like /healthz */
    {"GET", "/", NULL, ROUTE_WEB, API_ROUTE_COUNT, MR_WEB_INDEX, 1},
    {"GET", "/web/", "file", ROUTE_WEB, API_ROUTE_COUNT, MR_WEB_FILE, 1},
};

enum { N_ROUTES = sizeof routes / sizeof routes[0] };

void route_print(FILE *out)
{
	for (size_t i = 0; i < N_ROUTES; i++) {
		const struct route *rt = &routes[i];

		if (rt->param != NULL)
			fprintf(out, "%s %s{%s}\n", rt->method, rt->path, rt->param);
		else
			fprintf(out, "%s %s\n", rt->method, rt->path);
	}
}

/* Does path match rt's path? Copies the parameter's segment into param. */
static int path_matches(const struct route *rt, const char *path, char param[ROUTE_PARAM_MAX])
{
	size_t n = strlen(rt->path);
	const char *rest;

	if (rt->param == NULL)
		return strcmp(rt->path, path) == 0;
	if (strncmp(rt->path, path, n) != 0)
		return 0;
	rest = path + n;
	if (rest[0] == '\0' || strchr(rest, '/') != NULL || strlen(rest) >= ROUTE_PARAM_MAX)
		return 0;
	if (param != NULL)
		snprintf(param, ROUTE_PARAM_MAX, "%s", rest);
	return 1;
}

static int method_matches(const struct route *rt, const char *method)
{
	if (strcmp(rt->method, method) == 0)
		return 1;
	return strcmp(method, "HEAD") == 0 && strcmp(rt->method, "GET") == 0;
}

static void allow_add(char allow[ROUTE_ALLOW_MAX], const char *method)
{
	size_t len = strlen(allow);

	snprintf(allow + len, ROUTE_ALLOW_MAX - len, "%s%s", len > 0 ? ", " : "", method);
}

enum route_result route_match(const char *method, const char *path, const struct route **out,
			      char param[ROUTE_PARAM_MAX], char allow[ROUTE_ALLOW_MAX],
			      enum metric_route *metric)
{
	enum route_result result = ROUTE_NO_PATH;

	*out = NULL;
	allow[0] = '\0';
	*metric = MR_OTHER;
	for (size_t i = 0; i < N_ROUTES; i++) {
		const struct route *rt = &routes[i];

		if (!path_matches(rt, path, param))
			continue;
		*metric = rt->metric;
		allow_add(allow, rt->method);
		if (strcmp(rt->method, "GET") == 0)
			allow_add(allow, "HEAD");
		if (method_matches(rt, method)) {
			*out = rt;
			result = ROUTE_FOUND;
		} else if (result == ROUTE_NO_PATH) {
			result = ROUTE_NO_METHOD;
		}
	}
	if (allow[0] != '\0')
		allow_add(allow, "OPTIONS");
	return result;
}
