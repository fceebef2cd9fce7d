/*
 * check_checkpoint_triton.c: what Triton's Python client (tritonclient.http)
 * sends, byte for byte, to the real daemon (live_daemon.h) serving the oracle's
 * checkpoint folders (checkpoint_cases.h), against the PyTorch oracle's answers
 * (ckpt_answer.h), on the first tokens item of the first case: binary tokens
 * after Inference-Header-Content-Length, outputs asked in binary, as JSON, or
 * by binary_data_output, and the tokens as JSON data alone: the oracle's
 * numbers either way; a Content-Type that is present but wrong is still 415.
 * (Moved out of check_checkpoint_v2.c, which keeps the rest of /v2.)
 *
 * Ownership: the case list and the expected answers are ckpt_suite, the
 * daemon ckpt_daemon (tests/lib/checkpoint_cases.h): the suite's setup loads
 * the cases, each test case's unchecked fixture starts the daemon.
 */
#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/checkpoint_cases.h"
#include "tests/lib/ckpt_answer.h"
#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"

#define JSON_CT "application/json"

enum { REPEAT = 2 };

/* ---- what Triton's Python client sends ----------------------------------- */

/*
 * tritonclient.http's InferenceServerClient.infer, byte for byte (client
 * repository, src/python/library/tritonclient/http/: _utils.py
 * _get_inference_request, _infer_input.py, _requested_output.py; the HTTP
 * layer is geventhttpclient's HTTPClient._build_request):
 *   headers   User-Agent (geventhttpclient's default), then the caller's:
 *             Inference-Header-Content-Length when some input is binary,
 *             then Host and Content-Length. No Content-Type, no Accept and
 *             no Accept-Encoding (unless a compression algorithm is asked).
 *   JSON      python-rapidjson's dumps, compact, keys in insertion order:
 *             inputs [{"name","shape","datatype","parameters":
 *             {"binary_data_size"}}] (or "data" instead, for
 *             set_data_from_numpy(binary_data=False)); outputs [{"name",
 *             "parameters":{"binary_data"}}] when outputs are given, else
 *             "parameters":{"binary_data_output":true}; no "id" for "".
 *   binary    each binary input's numpy tobytes(): little-endian here.
 */
#define TRITON_UA "python/gevent-http-client-2.3.3"

/* The first tokens item (not text; token types 0) of the first case: *c,
 * *run, *b. */
static void first_tokens_item(size_t *c, const json_t **run, size_t *b)
{
	for (*c = 0; *c < ckpt_suite.n; (*c)++) {
		const json_t *runs = json_object_get(ckpt_suite.expected[*c], "runs");

		for (size_t k = 0; k < json_array_size(runs); k++) {
			*run = json_array_get(runs, k);
			*b = 0;
			if (json_object_get(*run, "text") == NULL &&
			    (json_object_get(*run, "type_ids") == NULL ||
			     ckpt_types_all_zero(*run)))
				return;
		}
	}
	ck_abort_msg("no case with a tokens run");
}

/* ids (borrowed) REPEAT times, as numpy int64 tobytes(): [REPEAT, L]
 * little-endian; *len their count. malloc'd. */
static unsigned char *int64_bytes(const json_t *ids, size_t *len)
{
	size_t L = json_array_size(ids), at = 0;
	unsigned char *p;

	*len = (size_t)REPEAT * L * 8;
	p = malloc(*len);
	ck_assert_ptr_nonnull(p);
	for (int k = 0; k < REPEAT; k++)
		for (size_t i = 0; i < L; i++) {
			uint64_t u = (uint64_t)json_integer_value(json_array_get(ids, i));

			for (int byte = 0; byte < 8; byte++)
				p[at++] = (unsigned char)(u >> (8 * byte));
		}
	return p;
}

/* The tokens tensor as JSON "data" (binary_data=False): [REPEAT * L] ints. */
static void int64_data(char *out, size_t cap, const json_t *ids)
{
	size_t at = 0;

	for (int k = 0; k < REPEAT; k++)
		for (size_t i = 0; i < json_array_size(ids); i++) {
			int n = snprintf(out + at, cap - at, "%s%lld", at ? "," : "",
					 (long long)json_integer_value(json_array_get(ids, i)));

			ck_assert(n > 0 && (size_t)n < cap - at);
			at += (size_t)n;
		}
}

/* POSTs the client's bytes for case c: json, then bin_len bytes of bin
 * (Inference-Header-Content-Length only when bin_len > 0, as the client
 * does); content_type, when not NULL, is added (the client never does). */
static void triton_post(size_t c, const char *content_type, const char *json,
			const unsigned char *bin, size_t bin_len, struct live_resp *r)
{
	char head[1024], ihcl[64] = "", ct[128] = "";
	size_t json_len = strlen(json);
	char *msg;
	int fd, n;

	if (bin_len > 0)
		snprintf(ihcl, sizeof ihcl, "Inference-Header-Content-Length: %zu\r\n", json_len);
	if (content_type != NULL)
		snprintf(ct, sizeof ct, "Content-Type: %s\r\n", content_type);
	n = snprintf(head, sizeof head,
		     "POST /v2/models/%s/infer HTTP/1.1\r\nUser-Agent: " TRITON_UA "\r\n%s"
		     "Host: 127.0.0.1:%u\r\n%sContent-Length: %zu\r\n\r\n",
		     ckpt_suite.name[c], ihcl, ckpt_daemon.port, ct, json_len + bin_len);
	ck_assert(n > 0 && (size_t)n < sizeof head);
	/* in one send: a refusal from the headers alone may close the
	 * connection before a second send */
	msg = malloc((size_t)n + json_len + bin_len);
	ck_assert_ptr_nonnull(msg);
	memcpy(msg, head, (size_t)n);
	memcpy(msg + n, json, json_len);
	if (bin_len > 0)
		memcpy(msg + (size_t)n + json_len, bin, bin_len);
	fd = live_connect(ckpt_daemon.port);
	live_send_all(fd, msg, (size_t)n + json_len + bin_len);
	live_read_response(fd, r);
	close(fd);
	free(msg);
}

/* The JSON header: tokens [REPEAT, L] binary (bytes > 0) or as data, then
 * the outputs part, `tail`. */
static void triton_json(char *out, size_t cap, const json_t *ids, size_t bytes, const char *tail)
{
	char data[8192];
	size_t L = json_array_size(ids);
	int n;

	if (bytes > 0) {
		n = snprintf(
		    out, cap,
		    "{\"inputs\":[{\"name\":\"tokens\",\"shape\":[%d,%zu],"
		    "\"datatype\":\"INT64\",\"parameters\":{\"binary_data_size\":%zu}}]%s}",
		    REPEAT, L, bytes, tail);
	} else {
		int64_data(data, sizeof data, ids);
		n = snprintf(out, cap,
			     "{\"inputs\":[{\"name\":\"tokens\",\"shape\":[%d,%zu],"
			     "\"datatype\":\"INT64\",\"data\":[%s]}]%s}",
			     REPEAT, L, data, tail);
	}
	ck_assert(n > 0 && (size_t)n < cap);
}

/* Both outputs asked, in binary: application/octet-stream, the oracle's. */
#define TAIL_BINARY                                                                                \
	",\"outputs\":[{\"name\":\"output\",\"parameters\":{\"binary_data\":true}},"               \
	"{\"name\":\"attentions\",\"parameters\":{\"binary_data\":true}}]"
/* InferRequestedOutput(name, binary_data=False): JSON data. */
#define TAIL_JSON                                                                                  \
	",\"outputs\":[{\"name\":\"output\",\"parameters\":{\"binary_data\":false}},"              \
	"{\"name\":\"attentions\",\"parameters\":{\"binary_data\":false}}]"
/* outputs=None: every output, in binary. */
#define TAIL_DEFAULT ",\"parameters\":{\"binary_data_output\":true}"

START_TEST(triton_client)
{
	size_t c, b, bin_len;
	const json_t *run, *ids;
	struct live_resp r = { 0 };
	unsigned char *bin;
	char json[16384];
	json_t *ans;

	first_tokens_item(&c, &run, &b);
	ids = json_array_get(json_object_get(run, "ids"), b);
	bin = int64_bytes(ids, &bin_len);

	/* binary in, binary out */
	triton_json(json, sizeof json, ids, bin_len, TAIL_BINARY);
	triton_post(c, NULL, json, bin, bin_len, &r);
	ckpt_check_binary(&r, run, b, REPEAT, 2);

	/* binary in, JSON out */
	triton_json(json, sizeof json, ids, bin_len, TAIL_JSON);
	triton_post(c, NULL, json, bin, bin_len, &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	ck_assert_str_eq(live_header(&r, "Content-Type"), JSON_CT);
	ck_assert_ptr_null(live_header(&r, "Inference-Header-Content-Length"));
	ans = ckpt_parse(r.body, r.body_len);
	ckpt_check_answer(run, b, REPEAT, ans, 0, "triton json");
	json_decref(ans);

	/* no outputs named: binary_data_output, every output in binary */
	triton_json(json, sizeof json, ids, bin_len, TAIL_DEFAULT);
	triton_post(c, NULL, json, bin, bin_len, &r);
	ckpt_check_binary(&r, run, b, REPEAT, 2);

	/* JSON alone (binary_data=False everywhere): no Inference-Header-... */
	triton_json(json, sizeof json, ids, 0, TAIL_JSON);
	triton_post(c, NULL, json, NULL, 0, &r);
	ck_assert_msg(r.status == 200, "status %d: %s", r.status, r.body);
	ans = ckpt_parse(r.body, r.body_len);
	ckpt_check_answer(run, b, REPEAT, ans, 0, "triton json only");
	json_decref(ans);

	/* a Content-Type that is there is still checked */
	triton_json(json, sizeof json, ids, bin_len, TAIL_BINARY);
	triton_post(c, "text/plain", json, bin, bin_len, &r);
	ck_assert_int_eq(r.status, 415);
	triton_post(c, "application/octet-stream", json, bin, bin_len, &r);
	ckpt_check_binary(&r, run, b, REPEAT, 2);

	free(bin);
	live_resp_release(&r);
}
END_TEST

static Suite *checkpoint_triton_suite(void)
{
	Suite *s = suite_create("checkpoint_triton");
	TCase *tc = tcase_create("triton");

	tcase_set_timeout(tc, 120);
	tcase_add_unchecked_fixture(tc, ckpt_suite_start, ckpt_suite_stop);
	tcase_add_test(tc, triton_client);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
		.daemon = true,
		.setup = ckpt_suite_load,
		.teardown = ckpt_suite_release,
	};

	return suite_main(argc, argv, checkpoint_triton_suite, &opts);
}
