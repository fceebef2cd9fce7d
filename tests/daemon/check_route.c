/*
 * check_route.c: the route matcher (server/route.c), linked in, without a
 * daemon. route_path_matches, which route_match runs, against its naive
 * twin route_path_matches_ref on every route of the table and a corpus of
 * paths: each route's own path and template filled in, and each cut, grown,
 * doubled in its slashes and given a segment past ROUTE_PARAM_MAX. Both
 * must agree on the match and on the parameter's segment they copy.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "server/route.h"

#include "tests/lib/suite_main.h"

static const char *const fixed_paths[] = {
    "", "/", "//", "/v1", "/v1/", "/v1/attention", "/v1/attentionx", "/v1/attention/",
    "/v1/models", "/v1/models/", "/v1/models/tiny", "/v1/models/tiny/", "/v1/models/a/b",
    "/v2", "/v2/", "/v2/models", "/v2/models/", "/v2/models/tiny", "/v2/models//ready",
    "/v2/models/tiny/ready", "/v2/models/tiny/versions/1", "/v2/models/tiny/versions//ready",
    "/v2/models/tiny/versions/1/ready", "/v2/models/tiny/versions/1/infer",
    "/v2/models/tiny/infer", "/v2/models/tiny/infer/", "/v2/models/{name}",
    "/v2/models/{name}/infer", "/web/", "/web/app.js", "/web/a/b", "/healthz", "/healthzz",
    "/version", "/openapi.json", "*", "v1/attention", "/V1/attention", "/v1/attention?x=1",
};

/* The path as a template would be filled: each {x} made seg. */
static void fill(char *dst, size_t cap, const char *tmpl, const char *seg)
{
	size_t at = 0;

	for (const char *t = tmpl; *t != '\0' && at + 1 < cap; t++) {
		if (*t == '{') {
			for (const char *s = seg; *s != '\0' && at + 1 < cap; s++)
				dst[at++] = *s;
			t = strchr(t, '}');
			continue;
		}
		dst[at++] = *t;
	}
	dst[at] = '\0';
}

static void agree(const struct route *rt, const char *path)
{
	char fast[ROUTE_PARAM_MAX], ref[ROUTE_PARAM_MAX];
	int m_fast, m_ref;

	memset(fast, 'F', sizeof fast);
	memset(ref, 'F', sizeof ref);
	fast[sizeof fast - 1] = ref[sizeof ref - 1] = '\0';
	m_fast = route_path_matches(rt, path, strlen(path), fast);
	m_ref = route_path_matches_ref(rt, path, ref);
	ck_assert_msg(m_fast == m_ref, "%s %s: %d, twin %d", rt->path, path, m_fast, m_ref);
	ck_assert_msg(strcmp(fast, ref) == 0, "%s %s: param '%s', twin '%s'", rt->path, path, fast,
		      ref);
	ck_assert_int_eq(route_path_matches(rt, path, strlen(path), NULL), m_ref);
}

/* path, and path cut at each byte and grown by a byte and a segment */
static void agree_around(const struct route *rt, const char *path)
{
	char buf[4 * ROUTE_PARAM_MAX];
	size_t n = strlen(path);

	agree(rt, path);
	for (size_t cut = 0; cut < n; cut++) {
		snprintf(buf, sizeof buf, "%.*s", (int)cut, path);
		agree(rt, buf);
	}
	snprintf(buf, sizeof buf, "%sx", path);
	agree(rt, buf);
	snprintf(buf, sizeof buf, "%s/", path);
	agree(rt, buf);
	snprintf(buf, sizeof buf, "%s/extra", path);
	agree(rt, buf);
	snprintf(buf, sizeof buf, "/%s", path);
	agree(rt, buf);
}

START_TEST(test_twin)
{
	size_t n;
	const struct route *routes = route_table(&n);
	char long_seg[ROUTE_PARAM_MAX + 40], path[4 * ROUTE_PARAM_MAX];

	memset(long_seg, 'n', sizeof long_seg - 1);
	long_seg[sizeof long_seg - 1] = '\0';
	for (size_t i = 0; i < n; i++) {
		const struct route *rt = &routes[i];

		ck_assert_uint_eq(rt->path_len, strlen(rt->path));
		for (size_t k = 0; k < sizeof fixed_paths / sizeof *fixed_paths; k++)
			agree(rt, fixed_paths[k]);
		for (size_t j = 0; j < n; j++) {
			static const char *const segs[] = { "tiny", "a", "{name}", "" };

			for (size_t s = 0; s < sizeof segs / sizeof *segs; s++) {
				fill(path, sizeof path, routes[j].path, segs[s]);
				agree_around(rt, path);
				snprintf(path, sizeof path, "%s%s", routes[j].path, segs[s]);
				agree_around(rt, path);
			}
			fill(path, sizeof path, routes[j].path, long_seg);
			agree(rt, path);
			snprintf(path, sizeof path, "%s%s", routes[j].path, long_seg);
			agree(rt, path);
		}
	}
}
END_TEST

/* What the seeds' request and its neighbours route to, through route_match. */
START_TEST(test_match)
{
	const struct route *rt;
	char param[ROUTE_PARAM_MAX], allow[ROUTE_ALLOW_MAX];
	enum metric_route metric;

	ck_assert_int_eq(route_match("POST", "/v1/attention", &rt, param, allow, &metric),
			 ROUTE_FOUND);
	ck_assert_str_eq(rt->path, "/v1/attention");
	ck_assert_str_eq(allow, "POST, OPTIONS");
	ck_assert_int_eq(route_match("GET", "/v1/attention", &rt, param, allow, &metric),
			 ROUTE_NO_METHOD);
	ck_assert_int_eq(route_match("GET", "/v1/attentio", &rt, param, allow, &metric),
			 ROUTE_NO_PATH);
	ck_assert_str_eq(allow, "");
	ck_assert_int_eq(route_match("HEAD", "/v2/models/tiny/versions/3/ready", &rt, param,
				     allow, &metric),
			 ROUTE_FOUND);
	ck_assert_str_eq(param, "tiny");
	ck_assert_str_eq(allow, "GET, HEAD, OPTIONS");
	ck_assert_int_eq(route_match("GET", "/v1/models/base", &rt, param, allow, &metric),
			 ROUTE_FOUND);
	ck_assert_str_eq(param, "base");
}
END_TEST

static Suite *route_suite(void)
{
	Suite *s = suite_create("route");
	TCase *tc = tcase_create("route");

	tcase_add_test(tc, test_twin);
	tcase_add_test(tc, test_match);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = { .one_blas_thread = false };

	return suite_main(argc, argv, route_suite, &opts);
}
