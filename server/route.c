/*
 * route.c: the routes of attnd, as data.
 */
#include "route.h"

#include <stdio.h>
#include <string.h>

/* A v2 infer body: JSON with or without binary tensors after it, typed as
 * Triton's clients, curl -d or nothing at all type it (route.h). */
#define V2_INFER_MEDIA (ROUTE_MEDIA_JSON | ROUTE_MEDIA_OCTET | ROUTE_MEDIA_NONE | ROUTE_MEDIA_FORM)

/* A path and its length (the length counted by the compiler). */
#define PATH(literal) literal, sizeof literal - 1

/* {method, path, path_len, param, kind, api, metric, open, media} */
static const struct route routes[] = {
    {"POST", PATH("/v1/attention"), NULL, ROUTE_COMPUTE, API_ROUTE_ATTENTION, MR_ATTENTION, 0,
     ROUTE_MEDIA_JSON},
    {"POST", PATH("/v1/sdpa"), NULL, ROUTE_COMPUTE, API_ROUTE_SDPA, MR_SDPA, 0, ROUTE_MEDIA_JSON},
    {"POST", PATH("/v1/tokenize"), NULL, ROUTE_COMPUTE, API_ROUTE_TOKENIZE, MR_TOKENIZE, 0,
     ROUTE_MEDIA_JSON},
    {"POST", PATH("/v1/detokenize"), NULL, ROUTE_COMPUTE, API_ROUTE_DETOKENIZE, MR_DETOKENIZE, 0,
     ROUTE_MEDIA_JSON},
    {"GET", PATH("/v1/models"), NULL, ROUTE_API, API_ROUTE_MODELS, MR_MODELS, 0, 0},
    {"GET", PATH("/v1/models/"), "name", ROUTE_API, API_ROUTE_MODEL, MR_MODEL, 0, 0},
    {"GET", PATH("/v1/tokenizers"), NULL, ROUTE_API, API_ROUTE_TOKENIZERS, MR_TOKENIZERS, 0, 0},
    {"GET", PATH("/version"), NULL, ROUTE_API, API_ROUTE_VERSION, MR_VERSION, 0, 0},
    {"GET", PATH("/openapi.json"), NULL, ROUTE_OPENAPI, API_ROUTE_COUNT, MR_OPENAPI, 0, 0},
    {"GET", PATH("/healthz"), NULL, ROUTE_HEALTHZ, API_ROUTE_COUNT, MR_HEALTHZ, 1, 0},
    {"GET", PATH("/readyz"), NULL, ROUTE_READYZ, API_ROUTE_COUNT, MR_READYZ, 1, 0},
    {"GET", PATH("/metrics"), NULL, ROUTE_METRICS, API_ROUTE_COUNT, MR_METRICS, 1, 0},
    /* the viewer: static files with no secret in them, so open like /healthz */
    {"GET", PATH("/"), NULL, ROUTE_WEB, API_ROUTE_COUNT, MR_WEB_INDEX, 1, 0},
    {"GET", PATH("/web/"), "file", ROUTE_WEB, API_ROUTE_COUNT, MR_WEB_FILE, 1, 0},
    /* the Open Inference Protocol (KServe v2); its probes are open like /healthz */
    {"GET", PATH("/v2"), NULL, ROUTE_API, API_ROUTE_V2_SERVER, MR_V2_SERVER, 0, 0},
    {"GET", PATH("/v2/health/live"), NULL, ROUTE_API, API_ROUTE_V2_LIVE, MR_V2_LIVE, 1, 0},
    {"GET", PATH("/v2/health/ready"), NULL, ROUTE_API, API_ROUTE_V2_READY, MR_V2_READY, 1, 0},
    {"GET", PATH("/v2/models/{name}"), "name", ROUTE_API, API_ROUTE_V2_MODEL, MR_V2_MODEL, 0, 0},
    {"GET", PATH("/v2/models/{name}/versions/{version}"), "name", ROUTE_API, API_ROUTE_V2_MODEL,
     MR_V2_MODEL, 0, 0},
    {"GET", PATH("/v2/models/{name}/ready"), "name", ROUTE_API, API_ROUTE_V2_MODEL_READY,
     MR_V2_MODEL_READY, 0, 0},
    {"GET", PATH("/v2/models/{name}/versions/{version}/ready"), "name", ROUTE_API,
     API_ROUTE_V2_MODEL_READY, MR_V2_MODEL_READY, 0, 0},
    {"POST", PATH("/v2/models/{name}/infer"), "name", ROUTE_COMPUTE, API_ROUTE_V2_INFER,
     MR_V2_INFER, 0, V2_INFER_MEDIA},
    {"POST", PATH("/v2/models/{name}/versions/{version}/infer"), "name", ROUTE_COMPUTE,
     API_ROUTE_V2_INFER, MR_V2_INFER, 0, V2_INFER_MEDIA},
};

enum { N_ROUTES = sizeof routes / sizeof routes[0] };

const struct route *route_table(size_t *n)
{
	*n = N_ROUTES;
	return routes;
}

void route_print(FILE *out)
{
	for (size_t i = 0; i < N_ROUTES; i++) {
		const struct route *rt = &routes[i];

		if (rt->param != NULL && strchr(rt->path, '{') == NULL)
			fprintf(out, "%s %s{%s}\n", rt->method, rt->path, rt->param);
		else
			fprintf(out, "%s %s\n", rt->method, rt->path);
	}
}

/*
 * Does path match the template tmpl, where each {x} matches one non-empty
 * segment? Copies the segment of {want} (when want and out are not NULL).
 */
static int template_matches(const char *tmpl, const char *path, const char *want,
			    char out[ROUTE_PARAM_MAX])
{
	while (*tmpl != '\0') {
		const char *close = *tmpl == '{' ? strchr(tmpl, '}') : NULL;
		size_t seg, name_len;

		if (close == NULL) {
			if (*tmpl++ != *path++)
				return 0;
			continue;
		}
		seg = strcspn(path, "/");
		name_len = (size_t)(close - tmpl - 1);
		if (seg == 0)
			return 0;
		if (want != NULL && out != NULL && strncmp(tmpl + 1, want, name_len) == 0 &&
		    want[name_len] == '\0') { /* cut as route_path_matches_ref cuts */
			size_t kept = seg < ROUTE_PARAM_MAX ? seg : ROUTE_PARAM_MAX - 1;

			memcpy(out, path, kept);
			out[kept] = '\0';
		}
		tmpl = close + 1;
		path += seg;
	}
	return *path == '\0';
}

int route_segment(const struct route *rt, const char *path, const char *name,
		  char out[ROUTE_PARAM_MAX])
{
	out[0] = '\0';
	if (!template_matches(rt->path, path, name, out) || out[0] == '\0')
		return -1;
	return 0;
}

/* Does path match rt's path? Copies the parameter's segment into param.
 * The twin of route_path_matches: each kind of route read on its own. */
int route_path_matches_ref(const struct route *rt, const char *path, char param[ROUTE_PARAM_MAX])
{
	size_t n;
	const char *rest;

	if (rt->param == NULL) /* most routes: one compare, nothing measured */
		return strcmp(rt->path, path) == 0;
	if (strchr(rt->path, '{') != NULL)
		return template_matches(rt->path, path, rt->param, param);
	n = strlen(rt->path);
	if (strncmp(rt->path, path, n) != 0)
		return 0;
	rest = path + n;
	if (rest[0] == '\0' || strchr(rest, '/') != NULL)
		return 0;
	/* a segment past the buffer is cut: no name is that long (the API's are
	 * at most 64 bytes), so the handler says it names nothing, as it would
	 * of a short unknown name, rather than the path matching no route */
	if (param != NULL)
		snprintf(param, ROUTE_PARAM_MAX, "%s", rest);
	return 1;
}

/* The rest of a path after a prefix route's prefix (/v1/models/{name}):
 * one non-empty segment, copied into param when not NULL. */
static int one_segment(const char *rest, char param[ROUTE_PARAM_MAX])
{
	if (rest[0] == '\0' || strchr(rest, '/') != NULL)
		return 0;
	if (param != NULL)
		snprintf(param, ROUTE_PARAM_MAX, "%s", rest);
	return 1;
}

/*
 * route_path_matches_ref with path's length (path_len) known, small enough
 * to sit in route_match's loop: an exact route of another length is left
 * without a compare, and a prefix or a template is compared in place up to
 * its first '{' or its end, so that it leaves at the first byte that
 * differs (for most routes within four); what is left is read as the twin
 * reads it.
 */
static inline int path_matches(const struct route *rt, const char *path, size_t path_len,
			       char param[ROUTE_PARAM_MAX])
{
	const char *t = rt->path, *p = path;

	if (rt->param == NULL)
		return path_len == rt->path_len && memcmp(rt->path, path, path_len) == 0;
	while (*t != '\0' && *t != '{' && *t == *p) {
		t++;
		p++;
	}
	if (*t == '{')
		return template_matches(t, p, rt->param, param);
	return *t == '\0' && one_segment(p, param);
}

int route_path_matches(const struct route *rt, const char *path, size_t path_len,
		       char param[ROUTE_PARAM_MAX])
{
	return path_matches(rt, path, path_len, param);
}

static int method_matches(const struct route *rt, const char *method)
{
	if (strcmp(rt->method, method) == 0)
		return 1;
	return strcmp(method, "HEAD") == 0 && strcmp(rt->method, "GET") == 0;
}

int route_path_is(const char *path, enum route_kind kind)
{
	size_t path_len = strlen(path);

	for (size_t i = 0; i < N_ROUTES; i++)
		if (routes[i].kind == kind && path_matches(&routes[i], path, path_len, NULL))
			return 1;
	return 0;
}

/* Appends ", " (unless first) and method, cut at ROUTE_ALLOW_MAX - 1 bytes as
 * snprintf would; without printf, as it runs on every request. */
static void allow_add(char allow[ROUTE_ALLOW_MAX], const char *method)
{
	size_t len = strlen(allow);
	const char *parts[2] = { len > 0 ? ", " : "", method };

	for (size_t i = 0; i < 2; i++)
		for (const char *p = parts[i]; *p != '\0' && len + 1 < ROUTE_ALLOW_MAX; p++)
			allow[len++] = *p;
	allow[len] = '\0';
}

/* Is method one of the ", "-separated methods of allow? */
static int allow_has(const char *allow, const char *method)
{
	size_t n = strlen(method);

	for (const char *p = allow; *p != '\0'; p += strcspn(p, ",")) {
		p += strspn(p, ", ");
		if (strncmp(p, method, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	}
	return 0;
}

void route_allow_any(char allow[ROUTE_ALLOW_MAX])
{
	allow[0] = '\0';
	for (size_t i = 0; i < N_ROUTES; i++) {
		if (!allow_has(allow, routes[i].method))
			allow_add(allow, routes[i].method);
		if (strcmp(routes[i].method, "GET") == 0 && !allow_has(allow, "HEAD"))
			allow_add(allow, "HEAD");
	}
	allow_add(allow, "OPTIONS");
}

enum route_result route_match(const char *method, const char *path, const struct route **out,
			      char param[ROUTE_PARAM_MAX], char allow[ROUTE_ALLOW_MAX],
			      enum metric_route *metric)
{
	enum route_result result = ROUTE_NO_PATH;
	size_t path_len = strlen(path);

	*out = NULL;
	allow[0] = '\0';
	*metric = MR_OTHER;
	for (size_t i = 0; i < N_ROUTES; i++) {
		const struct route *rt = &routes[i];

		if (!path_matches(rt, path, path_len, param))
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
