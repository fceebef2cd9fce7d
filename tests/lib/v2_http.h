/*
 * v2_http.h: what the Open Inference Protocol suites on the tiny built-in
 * model share (check_v2.c, check_v2_errors.c, check_v2_projections.c): its
 * infer path, three embedding rows of its d_model 8 as JSON text and as
 * floats, numbers read from an answer's text, the protocol's error body
 * asserted, and a POST with Triton's binary tensor extension.
 * Every name starts with v2_ or V2_: the Makefile links this file into every
 * test binary.
 *
 * Ownership: as live_daemon.h; v2_json_of's result is the caller's
 * (json_decref).
 */
#ifndef ATTN_TESTS_V2_HTTP_H
#define ATTN_TESTS_V2_HTTP_H

#include <jansson.h>
#include <stddef.h>

#include "tests/lib/live_daemon.h"

#define V2_INFER "/v2/models/tiny/infer"
#define V2_JSON_CT "application/json"
#define V2_OCTET_CT "application/octet-stream"

/* Three rows of E = 8 (the tiny model's d_model), and the same as floats. */
#define V2_ROW0 "[0.5,-0.25,0.125,1,0,-1,0.75,0.25]"
#define V2_ROW1 "[0.8,-0.2,0.3,0.1,-0.5,0.6,0.2,0.1]"
#define V2_ROW2 "[-0.3,0.2,0.9,-0.4,0.5,0.1,0.7,-0.8]"
#define V2_X3 "[" V2_ROW0 "," V2_ROW1 "," V2_ROW2 "]"
extern const float v2_x3[24];

/* A request of one embeddings input of this shape and data (JSON text). */
#define V2_EMB(shape, data)                                                                        \
	"{\"inputs\":[{\"name\":\"embeddings\",\"datatype\":\"FP32\",\"shape\":" shape             \
	",\"data\":" data "}]}"

/* The numbers of the JSON array starting at text (nested or flat), read with
 * strtof in order, at most max of them (asserted); returns the count. Both
 * routes write the shortest text that reads back to the same float32, so
 * equal floats compare equal bit for bit. */
size_t v2_floats_at(const char *text, float *out, size_t max);

/* The numbers of the JSON `data` of the output named `name` in an answer's
 * body (asserted there), as v2_floats_at reads them. */
size_t v2_output_floats(const char *body, const char *name, float *out, size_t max);

/* text as JSON, asserted to parse. */
json_t *v2_json_of(const char *text, size_t len);

/* status, JSON content type, and the protocol's {"error": "..."} holding needle. */
void v2_assert_error(const struct live_resp *r, int status, const char *needle);

/* POST body as JSON to path. */
void v2_post_json(unsigned port, const char *path, const char *body, struct live_resp *r);

/* POST with the binary extension: the JSON header, then bin. */
void v2_post_binary(unsigned port, const char *path, const char *json, const void *bin,
		    size_t bin_len, struct live_resp *r);

#endif
