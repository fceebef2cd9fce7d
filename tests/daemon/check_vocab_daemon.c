/*
 * check_vocab_daemon.c: --model NAME=PATH,heads=H,vocab=FILE through the real
 * daemon (live_daemon.h: build/attnd, or $ATTND_BIN, on an ephemeral
 * loopback port). The safetensors fixture llama_gqa_f32 has an 11-row
 * embedding table; vocabularies for it are written to a temporary directory
 * in three forms (\n, \r\n, vocab.json) and `text` must map through them:
 * the answer to a text equals the answer to the ids the file gives its
 * words. Bad files must make the daemon exit 2 with a message on stderr
 * naming the file and the line or token. Run from the repository root.
 *
 * Ownership: main creates the temporary directory and removes it with its
 * files after the run; tests only write files into it.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/tmp_files.h"
#include "tests/lib/suite_main.h"

#define FIXTURE "tests/data/fixtures/safetensors/llama_gqa_f32.safetensors" /* vocab 11, 4 heads */
#define NO_EMBED "tests/data/fixtures/safetensors/mha_f32.safetensors"      /* vocab 0, 4 heads */

enum { WAIT_MS = 30000 };

static char tmp_dir[] = "/tmp/attnd-vocab-XXXXXX";

/* The 11 tokens, in id order: the words' ids are neither sorted nor hashed. */
static const char *const words[11] = {
    "<pad>", "sat", "나는", "the", "mat", "cat", "on", "사과를", "a", "먹었다", "dog",
};

/* Writes len bytes to tmp_dir/name; the full path goes to path[512]. */
static void write_file(const char *name, const char *bytes, size_t len, char path[512])
{
	tmp_write(tmp_dir, name, bytes, len, path);
}

static void write_text(const char *name, const char *text, char path[512])
{
	write_file(name, text, strlen(text), path);
}

/* The vocabulary of `words` as lines ending in eol, or as vocab.json. */
static void write_vocab(const char *name, const char *eol, int json, char path[512])
{
	char text[1024];
	size_t n = 0;

	n += (size_t)snprintf(text + n, sizeof text - n, "%s", json ? "{\n" : "");
	for (size_t id = 0; id < 11; id++)
		if (json)
			n += (size_t)snprintf(text + n, sizeof text - n, "  \"%s\": %zu%s\n",
					      words[id], id, id < 10 ? "," : "");
		else
			n += (size_t)snprintf(text + n, sizeof text - n, "%s%s", words[id], eol);
	n += (size_t)snprintf(text + n, sizeof text - n, "%s", json ? "}\n" : "");
	ck_assert_uint_lt(n, sizeof text);
	write_file(name, text, n, path);
}

/* The body without its "usage" (timings differ between equal answers). */
static void body_without_usage(const struct live_resp *r, char *out, size_t cap)
{
	const char *usage = strstr(r->body, ",\"usage\":");

	ck_assert_ptr_nonnull(usage);
	ck_assert_uint_lt((size_t)(usage - r->body), cap);
	snprintf(out, cap, "%.*s", (int)(usage - r->body), r->body);
}

static void post_attention(unsigned port, const char *body, struct live_resp *r)
{
	live_post(port, "/v1/attention", "application/json", "", body, strlen(body), r);
}

/* POSTs a, then b, expecting 200 and (un)equal answers. */
static void compare_answers(unsigned port, const char *a, const char *b, int equal)
{
	static char body_a[1 << 16], body_b[1 << 16];
	struct live_resp r = {0};

	post_attention(port, a, &r);
	ck_assert_msg(r.status == 200, "%s: %d %s", a, r.status, r.body);
	body_without_usage(&r, body_a, sizeof body_a);
	live_resp_release(&r);
	post_attention(port, b, &r);
	ck_assert_msg(r.status == 200, "%s: %d %s", b, r.status, r.body);
	body_without_usage(&r, body_b, sizeof body_b);
	live_resp_release(&r);
	ck_assert_msg((strcmp(body_a, body_b) == 0) == equal, "%s and %s should %s:\n%s\n%s", a, b,
		      equal ? "agree" : "differ", body_a, body_b);
}

/* A /v2 text batch whose second text has a word outside the file. */
#define V2_ZEBRA                                                                     \
	"{\"inputs\": [{\"name\": \"text\", \"datatype\": \"BYTES\", \"shape\": [2], " \
	"\"data\": [\"the cat sat on\", \"the zebra\"]}]}"

/* ... and "the zebra" as binary data (a 4-byte length, then the bytes) after it */
#define V2_ZEBRA_BINARY                                                                \
	"{\"inputs\": [{\"name\": \"text\", \"datatype\": \"BYTES\", \"shape\": [1], " \
	"\"parameters\": {\"binary_data_size\": 13}}]}"

/* POST body: 422 unknown_token at pointer, the message holding said. */
static void expect_unknown(unsigned port, const char *body, const char *pointer, const char *said)
{
	struct live_resp r = {0};
	char quoted[64];

	snprintf(quoted, sizeof quoted, "\"%s\"", pointer);
	post_attention(port, body, &r);
	ck_assert_int_eq(r.status, 422);
	ck_assert_msg(strstr(r.body, "\"unknown_token\"") && strstr(r.body, quoted) &&
			  strstr(r.body, said),
		      "%s", r.body);
	live_resp_release(&r);
}

/* One daemon on one vocabulary: text maps to the file's ids, ids to its words. */
static void check_daemon_maps(const char *vocab_path)
{
	char spec[1024], head[64], body[256];
	const char *args[] = {"--no-builtins", "--model", spec, NULL};
	struct live_daemon d;
	struct live_resp r = {0};

	snprintf(spec, sizeof spec, "gqa=%s,heads=4,vocab=%s", FIXTURE, vocab_path);
	live_start(&d, args);
	live_get(d.port, "/v1/models/gqa", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_msg(strstr(r.body, "\"vocab_size\":11") &&
			  strstr(r.body, "\"has_vocabulary\":true"),
		      "%s", r.body);
	live_resp_release(&r);
	/* the, cat, sat, 나는 are ids 3, 5, 1, 2 in the file */
	compare_answers(d.port, "{\"model\":\"gqa\",\"text\":\"the cat sat 나는\"}",
			"{\"model\":\"gqa\",\"tokens\":[3,5,1,2]}", 1);
	/* the control: other ids give another answer, so equality means something */
	compare_answers(d.port, "{\"model\":\"gqa\",\"text\":\"the cat sat 나는\"}",
			"{\"model\":\"gqa\",\"tokens\":[5,3,1,2]}", 0);
	/* ids are echoed as the file's words */
	post_attention(d.port, "{\"model\":\"gqa\",\"tokens\":[9,7,10]}", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_msg(strstr(r.body, "\"tokens\":[\"먹었다\",\"사과를\",\"dog\"]") != NULL, "%s",
		      r.body);
	live_resp_release(&r);
	/* a word outside the file is refused, not hashed; a word is no JSON
	 * value: the pointer is its text's (in a batch too), while token strings
	 * are JSON values, pointed at themselves */
	expect_unknown(d.port, "{\"model\":\"gqa\",\"text\":\"the zebra\"}", "/text",
		       "word 1 of the text (from 0), 'zebra', is not");
	expect_unknown(d.port, "{\"model\":\"gqa\",\"text\":[\"the\",\"the zebra\"]}", "/text/1",
		       "word 1 of the text (from 0), 'zebra', is not");
	expect_unknown(d.port, "{\"model\":\"gqa\",\"tokens\":[\"the\",\"zebra\"]}", "/tokens/1",
		       "\"'zebra' is not in the model's vocabulary\"");
	/* on /v2 the data holds whole texts: the place is the text's element
	 * (data/1), not the word's index counted as if it were one (data/3) */
	live_post(d.port, "/v2/models/gqa/infer", "application/json", "", V2_ZEBRA,
		  strlen(V2_ZEBRA), &r);
	ck_assert_int_eq(r.status, 422);
	ck_assert_msg(strstr(r.body, "word 1 of the text (from 0), 'zebra', is not") &&
			  strstr(r.body, "(at /inputs/0/data/1)") != NULL,
		      "%s", r.body);
	live_resp_release(&r);
	/* binary data holds its texts as well: placed by the input, the word counted */
	snprintf(head, sizeof head, "Inference-Header-Content-Length: %zu\r\n",
		 strlen(V2_ZEBRA_BINARY));
	memcpy(body, V2_ZEBRA_BINARY, strlen(V2_ZEBRA_BINARY));
	memcpy(body + strlen(V2_ZEBRA_BINARY), "\x09\0\0\0the zebra", 13);
	live_post(d.port, "/v2/models/gqa/infer", "application/octet-stream", head, body,
		  strlen(V2_ZEBRA_BINARY) + 13, &r);
	ck_assert_msg(r.status == 422, "%d %s", r.status, r.body);
	ck_assert_msg(strstr(r.body, "word 1 of the text (from 0), 'zebra', is not") != NULL, "%s",
		      r.body);
	live_resp_release(&r);
	live_stop(&d);
}

START_TEST(test_text_maps_through_lines)
{
	char path[512];

	write_vocab("lf.txt", "\n", 0, path);
	check_daemon_maps(path);
}
END_TEST

START_TEST(test_text_maps_through_crlf_lines)
{
	char path[512];

	write_vocab("crlf.txt", "\r\n", 0, path);
	check_daemon_maps(path);
}
END_TEST

START_TEST(test_text_maps_through_vocab_json)
{
	char path[512];

	write_vocab("vocab.json", "", 1, path);
	check_daemon_maps(path);
}
END_TEST

/* attnd --model gqa=MODEL,heads=4,vocab=PATH must exit 2 with stderr holding want. */
static void expect_refused(const char *model, const char *vocab_path, const char *want)
{
	char spec[1024], err[4096];
	const char *args[] = {"--no-builtins", "--port",  "0",	"--host",
			      "127.0.0.1",     "--model", spec, NULL};
	int status;

	snprintf(spec, sizeof spec, "gqa=%s,heads=4,vocab=%s", model, vocab_path);
	status = live_run_to_exit(args, WAIT_MS, err, sizeof err);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2,
		      "%s: wait status %d, stderr '%s'", spec, status, err);
	ck_assert_msg(strstr(err, want) != NULL, "%s: stderr '%s' lacks '%s'", spec, err, want);
}

START_TEST(test_bad_vocab_exits_2)
{
	char path[512], want[1024];

	write_text("dup.txt", "<pad>\nsat\n나는\nthe\nmat\ncat\non\nthe\na\n먹었다\ndog\n", path);
	snprintf(want, sizeof want,
		 "model gqa: vocab: %s:8: duplicate token 'the' (id 7), first on line 4 (id 3)",
		 path);
	expect_refused(FIXTURE, path, want);

	write_text("short.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", path);
	snprintf(want, sizeof want, "%s: 10 tokens, but the model's embedding table has 11 rows",
		 path);
	expect_refused(FIXTURE, path, want);

	write_text("empty_line.txt", "a\nb\nc\n\ne\nf\ng\nh\ni\nj\nk\n", path);
	snprintf(want, sizeof want, "%s:4: empty token (id 3)", path);
	expect_refused(FIXTURE, path, want);

	write_text("ids.json",
		   "{\"a\":0,\"b\":1,\"c\":2,\"d\":3,\"e\":4,\"f\":5,\"g\":6,\"h\":7,\"i\":8,"
		   "\"j\":9,\"k\":9}",
		   path);
	snprintf(want, sizeof want, "%s: id 9 is given to both 'j' and 'k'", path);
	expect_refused(FIXTURE, path, want);
}
END_TEST

START_TEST(test_vocab_file_problems_exit_2)
{
	char path[512], want[1024];
	int fd;

	snprintf(path, sizeof path, "%s/missing.txt", tmp_dir);
	snprintf(want, sizeof want, "model gqa: vocab: cannot open %s: No such file", path);
	expect_refused(FIXTURE, path, want);

	/* one byte over 64 MiB, sparse: refused from its size, unread */
	write_text("big.txt", "", path);
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (64 << 20) + 1), 0);
	close(fd);
	snprintf(want, sizeof want, "model gqa: vocab: %s: 67108865 bytes, over the 64 MiB limit",
		 path);
	expect_refused(FIXTURE, path, want);

	write_vocab("for_no_embed.txt", "\n", 0, path);
	snprintf(want, sizeof want,
		 "model gqa: vocab=%s given, but %s has no embedding table (embed_tokens.weight)",
		 path, NO_EMBED);
	expect_refused(NO_EMBED, path, want);

	expect_refused(FIXTURE, "",
		       "--model: bad option 'vocab=' (heads=H, prefix=P or vocab=FILE)");
}
END_TEST

static Suite *vocab_daemon_suite(void)
{
	Suite *s = suite_create("vocab_daemon");
	TCase *maps = tcase_create("maps");
	TCase *bad = tcase_create("refused");

	tcase_set_timeout(maps, 120);
	tcase_set_timeout(bad, 120);
	tcase_add_test(maps, test_text_maps_through_lines);
	tcase_add_test(maps, test_text_maps_through_crlf_lines);
	tcase_add_test(maps, test_text_maps_through_vocab_json);
	tcase_add_test(bad, test_bad_vocab_exits_2);
	tcase_add_test(bad, test_vocab_file_problems_exit_2);
	suite_add_tcase(s, maps);
	suite_add_tcase(s, bad);
	return s;
}

/* Removes tmp_dir and the files the tests wrote in it. */
static void remove_tmp_dir(void)
{
	tmp_remove_dir(tmp_dir);
}

/* Before the run: the vocabulary fixture is there, and tmp_dir made. */
static int vocab_daemon_setup(void)
{
	if (access(FIXTURE, R_OK) != 0) {
		fprintf(stderr, "check_vocab_daemon: needs %s (run from the repository root)\n",
			FIXTURE);
		return -1;
	}
	if (mkdtemp(tmp_dir) == NULL) {
		perror("check_vocab_daemon: mkdtemp");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .daemon = true,
	    .setup = vocab_daemon_setup,
	    .teardown = remove_tmp_dir,
	};

	return suite_main(argc, argv, vocab_daemon_suite, &opts);
}
