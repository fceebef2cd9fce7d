/* v2_http.c - see v2_http.h */
#include "v2_http.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const float v2_x3[24] = {0.5f,	-0.25f, 0.125f, 1,     0,     -1,   0.75f, 0.25f,
			 0.8f,	-0.2f,	0.3f,	0.1f,  -0.5f, 0.6f, 0.2f,  0.1f,
			 -0.3f, 0.2f,	0.9f,	-0.4f, 0.5f,  0.1f, 0.7f,  -0.8f};

size_t v2_floats_at(const char *text, float *out, size_t max)
{
	const char *p = text;
	size_t n = 0;
	int depth = 0;

	ck_assert_int_eq(*p, '[');
	do {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if (*p == '-' || (*p >= '0' && *p <= '9')) {
			char *end;

			ck_assert_uint_lt(n, max);
			out[n++] = strtof(p, &end);
			p = end;
			continue;
		}
		p++;
	} while (depth > 0 && *p != '\0');
	return n;
}

size_t v2_output_floats(const char *body, const char *name, float *out, size_t max)
{
	char pat[64];
	const char *at;

	snprintf(pat, sizeof pat, "{\"name\":\"%s\"", name);
	at = strstr(body, pat);
	ck_assert_msg(at != NULL, "no output %s in %.300s", name, body);
	at = strstr(at, "\"data\":");
	ck_assert_ptr_nonnull(at);
	return v2_floats_at(at + strlen("\"data\":"), out, max);
}

json_t *v2_json_of(const char *text, size_t len)
{
	json_error_t e;
	json_t *j = json_loadb(text, len, 0, &e);

	ck_assert_msg(j != NULL, "not JSON (%s): %.300s", e.text, text);
	return j;
}

void v2_assert_error(const struct live_resp *r, int status, const char *needle)
{
	json_t *j;
	const char *msg;

	ck_assert_msg(r->status == status, "status %d, expected %d: %s", r->status, status,
		      r->body);
	ck_assert_str_eq(live_header(r, "Content-Type"), V2_JSON_CT);
	j = v2_json_of(r->body, r->body_len);
	ck_assert_uint_eq(json_object_size(j), 1);
	msg = json_string_value(json_object_get(j, "error"));
	ck_assert_msg(msg != NULL, "no error string: %s", r->body);
	ck_assert_msg(strstr(msg, needle) != NULL, "'%s' lacks '%s'", msg, needle);
	json_decref(j);
}

void v2_post_json(unsigned port, const char *path, const char *body, struct live_resp *r)
{
	live_post(port, path, V2_JSON_CT, "", body, strlen(body), r);
}

void v2_post_binary(unsigned port, const char *path, const char *json, const void *bin,
		    size_t bin_len, struct live_resp *r)
{
	size_t jl = strlen(json);
	char *body = malloc(jl + bin_len + 1);
	char hdr[96];

	ck_assert_ptr_nonnull(body);
	memcpy(body, json, jl);
	if (bin_len > 0)
		memcpy(body + jl, bin, bin_len);
	snprintf(hdr, sizeof hdr, "Inference-Header-Content-Length: %zu\r\n", jl);
	live_post(port, path, V2_OCTET_CT, hdr, body, jl + bin_len, r);
	free(body);
}
