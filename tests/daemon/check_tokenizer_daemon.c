/*
 * check_tokenizer_daemon.c: tokenizers through the real daemon (live_daemon.h:
 * build/attnd, or $ATTND_BIN, on an ephemeral loopback port).
 *
 * One daemon holds GPT-2's tokenizer (tests/data/tokenizers/gpt2, the pair
 * vocab.json + merges.txt) and a small BPE tokenizer.json written to a
 * temporary directory, whose ids fit the 11-row embedding table of the
 * safetensors fixture llama_gqa_f32, loaded as model `gqa` with
 * tokenizer=small. Through HTTP: POST /v1/tokenize and /v1/detokenize by
 * tokenizer and by model, /v1/attention with text on the model (the pieces
 * as tokens, with token_ids and offsets), and the refusals: text that is not
 * UTF-8, text over --max-text-bytes (split on whitespace too, for a model
 * without a tokenizer, on /v1 and /v2), an unknown tokenizer, an id past the
 * vocabulary, a token past the embedding table. Then files that must stop
 * start-up with exit status 2 and a message naming the file and the JSON
 * pointer, and a model folder named after a built-in tokenizer (gpt2): its
 * tokenizer.json takes the built-in one's place, and a --tokenizer of its
 * name too is refused. Run from the repository root.
 *
 * Ownership: main creates the temporary directory and removes it with its
 * files after the run; tests only write files into it.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/live_daemon.h"
#include "tests/lib/tmp_files.h"
#include "tests/lib/suite_main.h"

#define FIXTURE "tests/data/fixtures/safetensors/llama_gqa_f32.safetensors" /* vocab 11, 4 heads */
#define GPT2 "tests/data/tokenizers/gpt2/vocab.json"
/* a random-weight GPT-2 checkpoint whose tokenizer.json has 265 pieces */
#define FOLDER "tests/data/checkpoints/gpt2_f32"
#define MAX_TEXT 64

enum { WAIT_MS = 30000 };

static char tmp_dir[] = "/tmp/attnd-tokenizer-XXXXXX";
static char small_path[512];

/*
 * The small tokenizer: pieces of "the cat" and their merges, split on
 * whitespace, <s> added in front (ids 0-10: the fixture's 11 rows), and an
 * added token <big> whose id 20 has no row.
 */
static const char small_json[] =
    "{\"version\": \"1.0\", \"truncation\": null, \"padding\": null,\n"
    " \"added_tokens\": [\n"
    "  {\"id\": 10, \"content\": \"<s>\", \"single_word\": false, \"lstrip\": false,"
    " \"rstrip\": false, \"normalized\": false, \"special\": true},\n"
    "  {\"id\": 20, \"content\": \"<big>\", \"single_word\": false, \"lstrip\": false,"
    " \"rstrip\": false, \"normalized\": false, \"special\": true}],\n"
    " \"normalizer\": null,\n"
    " \"pre_tokenizer\": {\"type\": \"WhitespaceSplit\"},\n"
    " \"post_processor\": {\"type\": \"TemplateProcessing\",\n"
    "  \"single\": [{\"SpecialToken\": {\"id\": \"<s>\", \"type_id\": 0}},"
    " {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}],\n"
    "  \"pair\": [{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}],\n"
    "  \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [10], \"tokens\": [\"<s>\"]}}},\n"
    " \"decoder\": null,\n"
    " \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"<unk>\",\n"
    "  \"vocab\": {\"<unk>\": 0, \"t\": 1, \"h\": 2, \"e\": 3, \"th\": 4, \"the\": 5, \"c\": 6,"
    " \"a\": 7, \"ca\": 8, \"cat\": 9, \"<s>\": 10, \"<big>\": 20},\n"
    "  \"merges\": [\"t h\", \"th e\", \"c a\", \"ca t\"]}}\n";

/* Writes len bytes to tmp_dir/name; the full path goes to path[512]. */
static void write_file(const char *name, const char *bytes, size_t len, char path[512])
{
	tmp_write(tmp_dir, name, bytes, len, path);
}

static void write_text(const char *name, const char *text, char path[512])
{
	write_file(name, text, strlen(text), path);
}

/* The small tokenizer with its first `part` put in place of `with`, written
 * to tmp_dir/name (the full path to path[512]). */
static void write_small_variant(const char *name, const char *part, const char *with,
				char path[512])
{
	const char *at = strstr(small_json, part);
	size_t n = strlen(small_json) - strlen(part) + strlen(with);
	char *json = malloc(n + 1);

	ck_assert_ptr_nonnull(at);
	ck_assert_ptr_nonnull(json);
	snprintf(json, n + 1, "%.*s%s%s", (int)(at - small_json), small_json, with,
		 at + strlen(part));
	write_text(name, json, path);
	free(json);
}

/* ---- one daemon for the routes ---------------------------------------------- */

static struct live_daemon d;

static void start(void)
{
	char model[1024];
	const char *args[] = {"--tokenizer", "gpt2=" GPT2, "--tokenizer", NULL, "--model", model,
			      "--max-text-bytes", "64", NULL};
	char small[600];

	snprintf(small, sizeof small, "small=%s", small_path);
	args[3] = small;
	snprintf(model, sizeof model, "gqa=%s,heads=4,tokenizer=small", FIXTURE);
	live_start(&d, args);
}

static void stop(void)
{
	live_stop(&d);
}

static void post(const char *path, const char *body, struct live_resp *r)
{
	live_post(d.port, path, "application/json", "", body, strlen(body), r);
}

/* POSTs body to path on the daemon at port, expecting 200 and exactly `want`. */
static void expect_answer_at(unsigned port, const char *path, const char *body, const char *want)
{
	struct live_resp r = {0};

	live_post(port, path, "application/json", "", body, strlen(body), &r);
	ck_assert_msg(r.status == 200, "%s %s: %d %s", path, body, r.status, r.body);
	ck_assert_msg(strcmp(r.body, want) == 0, "%s %s:\n  got  %s\n  want %s", path, body, r.body,
		      want);
	live_resp_release(&r);
}

/* The same, on the routes' daemon. */
static void expect_answer(const char *path, const char *body, const char *want)
{
	expect_answer_at(d.port, path, body, want);
}

/* POSTs body (len bytes; 0: strlen) to path, expecting an error of status
 * and code at pointer, whose message holds `says`. */
static void expect_error(const char *path, const char *body, size_t len, int status,
			 const char *code, const char *pointer, const char *says)
{
	struct live_resp r = {0};
	char want[256];

	live_post(d.port, path, "application/json", "", body, len > 0 ? len : strlen(body), &r);
	live_assert_error(&r, status, code);
	if (pointer != NULL) {
		snprintf(want, sizeof want, "\"pointer\":\"%s\"", pointer);
		ck_assert_msg(strstr(r.body, want) != NULL, "%s: %s lacks %s", body, r.body, want);
	}
	ck_assert_msg(strstr(r.body, says) != NULL, "%s: %s lacks '%s'", body, r.body, says);
	live_resp_release(&r);
}

START_TEST(test_tokenize_gpt2)
{
	expect_answer("/v1/tokenize", "{\"tokenizer\":\"gpt2\",\"text\":\"Hello world! 나는\"}",
		      "{\"ids\":[15496,995,0,31619,224,246,167,232,242],"
		      "\"tokens\":[\"Hello\",\"\xc4\xa0world\",\"!\",\"\xc4\xa0\xc3\xab\",\"\xc4\xa4\","
		      "\"\xc4\xba\",\"\xc3\xab\",\"\xc4\xac\",\"\xc4\xb6\"],"
		      "\"offsets\":[[0,5],[5,11],[11,12],[12,14],[13,14],[13,14],[14,15],[14,15],"
		      "[14,15]]}");
	/* GPT-2 adds no special token; <|endoftext|> in the text is one */
	expect_answer("/v1/tokenize",
		      "{\"tokenizer\":\"gpt2\",\"text\":\"a<|endoftext|>\",\"add_special_tokens\":false}",
		      "{\"ids\":[64,50256],\"tokens\":[\"a\",\"<|endoftext|>\"],"
		      "\"offsets\":[[0,1],[1,14]]}");
}
END_TEST

START_TEST(test_tokenize_by_model)
{
	expect_answer("/v1/tokenize", "{\"model\":\"gqa\",\"text\":\"the cat\"}",
		      "{\"ids\":[10,5,9],\"tokens\":[\"<s>\",\"the\",\"cat\"],"
		      "\"offsets\":[[0,0],[0,3],[4,7]]}");
	expect_answer("/v1/tokenize",
		      "{\"tokenizer\":\"small\",\"text\":\"the cat\",\"add_special_tokens\":false}",
		      "{\"ids\":[5,9],\"tokens\":[\"the\",\"cat\"],\"offsets\":[[0,3],[4,7]]}");
}
END_TEST

START_TEST(test_detokenize)
{
	expect_answer("/v1/detokenize", "{\"tokenizer\":\"gpt2\",\"ids\":[15496,995,50256]}",
		      "{\"text\":\"Hello world<|endoftext|>\"}");
	expect_answer("/v1/detokenize",
		      "{\"tokenizer\":\"gpt2\",\"ids\":[15496,995,50256],\"skip_special_tokens\":true}",
		      "{\"text\":\"Hello world\"}");
	/* half of a character's bytes: U+FFFD */
	expect_answer("/v1/detokenize", "{\"tokenizer\":\"gpt2\",\"ids\":[31619]}",
		      "{\"text\":\" \xef\xbf\xbd\"}");
	expect_error("/v1/detokenize", "{\"tokenizer\":\"gpt2\",\"ids\":[15496,50257]}", 0, 422,
		     "out_of_range", "/ids/1", "50257");
	expect_error("/v1/detokenize", "{\"tokenizer\":\"gpt2\",\"ids\":[1,\"a\"]}", 0, 422,
		     "invalid_type", "/ids/1", "integer");
	/* whole numbers written as reals are ids (OpenAPI 3.1's integer) */
	expect_answer("/v1/detokenize", "{\"tokenizer\":\"gpt2\",\"ids\":[15496.0,995e0,50256]}",
		      "{\"text\":\"Hello world<|endoftext|>\"}");
	expect_error("/v1/detokenize", "{\"tokenizer\":\"gpt2\",\"ids\":[1,2.5]}", 0, 422,
		     "invalid_type", "/ids/1", "integer");
	/* past 64 bits (JavaScript's 1e20): named as sent, not as 2^63 - 1 */
	expect_error("/v1/detokenize", "{\"tokenizer\":\"gpt2\",\"ids\":[1,100000000000000000000]}",
		     0, 422, "out_of_range", "/ids/1", "id 1e+20 is not in the vocabulary");
}
END_TEST

START_TEST(test_attention_with_text)
{
	struct live_resp r = {0};

	post("/v1/attention", "{\"model\":\"gqa\",\"text\":\"the cat\"}", &r);
	ck_assert_msg(r.status == 200, "%d %s", r.status, r.body);
	ck_assert_msg(strstr(r.body, "\"tokens\":[\"<s>\",\"the\",\"cat\"],\"token_ids\":[10,5,9],"
				     "\"offsets\":[[0,0],[0,3],[4,7]]") != NULL,
		      "%s", r.body);
	live_resp_release(&r);
	/* a batch keeps its axis in every part */
	post("/v1/attention", "{\"model\":\"gqa\",\"text\":[\"the\",\"cat the\"]}", &r);
	ck_assert_msg(r.status == 200, "%d %s", r.status, r.body);
	ck_assert_msg(strstr(r.body, "\"tokens\":[[\"<s>\",\"the\"],[\"<s>\",\"cat\",\"the\"]],"
				     "\"token_ids\":[[10,5],[10,9,5]],"
				     "\"offsets\":[[[0,0],[0,3]],[[0,0],[0,3],[4,7]]]") != NULL,
		      "%s", r.body);
	live_resp_release(&r);
	/* the same ids as tokens give the same layer output */
	post("/v1/attention", "{\"model\":\"gqa\",\"tokens\":[10,5,9]}", &r);
	ck_assert_int_eq(r.status, 200);
	live_resp_release(&r);
	/* a token with no row in the table is named */
	expect_error("/v1/attention", "{\"model\":\"gqa\",\"text\":\"the <big>\"}", 0, 422,
		     "token_out_of_range", "/text", "token '<big>' (id 20, characters 4 to 9)");
	expect_error("/v1/attention", "{\"model\":\"gqa\",\"text\":[\"the\",\"the <big>\"]}", 0, 422,
		     "token_out_of_range", "/text/1", "'<big>'");
}
END_TEST

START_TEST(test_bad_text)
{
	static const char bad_utf8[] = "{\"tokenizer\":\"gpt2\",\"text\":\"ab\xff\xfe" "cd\"}";
	static const char bad_elsewhere[] = "{\"tokenizer\":\"gpt2\",\"text\":\"ab\",\"x\":\"\xff\"}";
	static const char attention_bad[] = "{\"model\":\"gqa\",\"text\":[\"the\",\"the\xc3(\"]}";
	char body[256];

	expect_error("/v1/tokenize", bad_utf8, sizeof bad_utf8 - 1, 422, "invalid_utf8", "/text",
		     "at byte 2");
	expect_error("/v1/tokenize", bad_elsewhere, sizeof bad_elsewhere - 1, 400,
		     "malformed_json", NULL, "not valid UTF-8 at byte 37");
	/* the same words on /v1/attention, for a text of a batch too */
	expect_error("/v1/attention", attention_bad, sizeof attention_bad - 1, 422, "invalid_utf8",
		     "/text/1", "text is not valid UTF-8 at byte 3");
	snprintf(body, sizeof body, "{\"tokenizer\":\"gpt2\",\"text\":\"%0*d\"}", MAX_TEXT + 1, 0);
	expect_error("/v1/tokenize", body, strlen(body), 422, "too_large", "/text",
		     "65 bytes, over the limit of 64 (--max-text-bytes)");
	snprintf(body, sizeof body, "{\"tokenizer\":\"gpt2\",\"text\":\"%0*d\"}", MAX_TEXT, 0);
	expect_answer("/v1/tokenize", body,
		      "{\"ids\":[25645,25645,25645,25645],"
		      "\"tokens\":[\"0000000000000000\",\"0000000000000000\",\"0000000000000000\","
		      "\"0000000000000000\"],\"offsets\":[[0,16],[16,32],[32,48],[48,64]]}");
	snprintf(body, sizeof body, "{\"model\":\"gqa\",\"text\":\"%0*d\"}", MAX_TEXT + 1, 0);
	expect_error("/v1/attention", body, strlen(body), 422, "too_large", "/text",
		     "over the limit of 64");
}
END_TEST

/* A model without a tokenizer splits text on whitespace: the same limit,
 * message and pointer, on a named model, an inline one and /v2. */
START_TEST(test_split_text_over_limit)
{
	static const char says[] = "text is 65 bytes, over the limit of 64 (--max-text-bytes)";
	struct live_resp r = {0};
	char body[512];

	snprintf(body, sizeof body, "{\"model\":\"tiny\",\"text\":\"%0*d\"}", MAX_TEXT + 1, 0);
	expect_error("/v1/attention", body, 0, 422, "too_large", "/text", says);
	snprintf(body, sizeof body, "{\"model\":\"tiny\",\"text\":[\"a b\",\"%0*d\"]}",
		 MAX_TEXT + 1, 0);
	expect_error("/v1/attention", body, 0, 422, "too_large", "/text/1", says);
	snprintf(body, sizeof body,
		 "{\"model\":{\"d_model\":8,\"num_heads\":2,\"seed\":1,\"vocab_size\":10},"
		 "\"text\":\"%0*d\"}",
		 MAX_TEXT + 1, 0);
	expect_error("/v1/attention", body, 0, 422, "too_large", "/text", says);
	snprintf(body, sizeof body,
		 "{\"inputs\":[{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[2],"
		 "\"data\":[\"a b\",\"%0*d\"]}]}",
		 MAX_TEXT + 1, 0);
	post("/v2/models/tiny/infer", body, &r);
	ck_assert_msg(r.status == 422, "%d %s", r.status, r.body);
	ck_assert_msg(strstr(r.body, says) != NULL && strstr(r.body, "/inputs/0/data/1") != NULL,
		      "%s", r.body);
	live_resp_release(&r);
	/* at the limit, words of a text are still split */
	snprintf(body, sizeof body, "{\"model\":\"tiny\",\"text\":\"a %0*d\"}", MAX_TEXT - 2, 0);
	post("/v1/attention", body, &r);
	ck_assert_msg(r.status == 200, "%d %s", r.status, r.body);
	ck_assert_msg(strstr(r.body, "\"query_length\":2") != NULL, "%s", r.body);
	live_resp_release(&r);
}
END_TEST

START_TEST(test_unknown_names)
{
	expect_error("/v1/tokenize", "{\"tokenizer\":\"gpt3\",\"text\":\"a\"}", 0, 404,
		     "tokenizer_not_found", "/tokenizer", "no tokenizer named 'gpt3'");
	expect_error("/v1/tokenize", "{\"model\":\"nope\",\"text\":\"a\"}", 0, 404,
		     "model_not_found", "/model", "'nope'");
	expect_error("/v1/tokenize", "{\"model\":\"tiny\",\"text\":\"a\"}", 0, 422, "no_tokenizer",
		     "/model", "model 'tiny' has no tokenizer");
	expect_error("/v1/tokenize", "{\"text\":\"a\"}", 0, 422, "missing_field", "/tokenizer",
		     "give a tokenizer");
	/* two fields that exclude each other: invalid_input, as /v1/attention's
	 * embeddings with tokens */
	expect_error("/v1/tokenize", "{\"tokenizer\":\"gpt2\",\"model\":\"tiny\",\"text\":\"a\"}", 0,
		     422, "invalid_input", "/model", "not both");
	expect_error("/v1/detokenize", "{\"tokenizer\":\"gpt2\",\"model\":\"tiny\",\"ids\":[1]}", 0,
		     422, "invalid_input", "/model", "not both");
	expect_error("/v1/tokenize", "{\"tokenizer\":\"gpt2\",\"text\":\"a\",\"lang\":\"en\"}", 0,
		     422, "unknown_field", "/lang", "lang");
	expect_error("/v1/detokenize", "{\"tokenizer\":\"gpt3\",\"ids\":[]}", 0, 404,
		     "tokenizer_not_found", "/tokenizer", "gpt3");
}
END_TEST

START_TEST(test_listings)
{
	struct live_resp r = {0};
	char want[1024];

	live_get(d.port, "/v1/models/gqa", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_msg(strstr(r.body, "\"tokenizer\":\"small\"") != NULL, "%s", r.body);
	live_get(d.port, "/v1/models/tiny", &r);
	ck_assert_msg(strstr(r.body, "\"tokenizer\":null") != NULL, "%s", r.body);
	live_get(d.port, "/v1/tokenizers", &r);
	ck_assert_int_eq(r.status, 200);
	snprintf(want, sizeof want,
		 "{\"tokenizers\":[{\"name\":\"gpt2\",\"source\":\"file:" GPT2 "\","
		 "\"vocab_size\":50257,\"models\":[]},{\"name\":\"small\",\"source\":\"file:%s\","
		 "\"vocab_size\":21,\"models\":[\"gqa\"]},{\"name\":\"bert\",\"source\":"
		 "\"builtin:tests/data/tokenizers/bert/tokenizer.json\",\"vocab_size\":30522,"
		 "\"models\":[]},{\"name\":\"mini\",\"source\":"
		 "\"builtin:models/mini/tokenizer.json\",\"vocab_size\":2048,"
		 "\"models\":[\"mini\"]}]}",
		 small_path);
	ck_assert_msg(strcmp(r.body, want) == 0, "\n  got  %s\n  want %s", r.body, want);
	live_resp_release(&r);
}
END_TEST

/* ---- start-up refusals --------------------------------------------------------- */

/* attnd with args must exit 2 at start-up, its stderr holding want. */
static void expect_exit_2(const char *const *args, const char *want)
{
	char err[4096];
	int status = live_run_to_exit(args, WAIT_MS, err, sizeof err);

	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "wait status %d, stderr '%s'",
		      status, err);
	ck_assert_msg(strstr(err, want) != NULL, "stderr '%s' lacks '%s'", err, want);
}

/* --tokenizer t=FILE with FILE holding json must exit 2 saying want after
 * "--tokenizer t: FILE" (": /pointer: ..." or ":LINE:COLUMN: ..."). */
static void expect_file_refused(const char *name, const char *json, const char *want)
{
	char path[512], spec[600], full[1024];
	const char *args[] = {"--port", "0", "--host", "127.0.0.1", "--tokenizer", spec, NULL};

	write_text(name, json, path);
	snprintf(spec, sizeof spec, "t=%s", path);
	snprintf(full, sizeof full, "--tokenizer t: %s%s", path, want);
	expect_exit_2(args, full);
}

START_TEST(test_bad_files_exit_2)
{
	expect_file_refused("scripts.json",
			    "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []},\n"
			    " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [\n"
			    "  {\"type\": \"ByteLevel\"}, {\"type\": \"UnicodeScripts\"}]}}",
			    ": /pre_tokenizer/pretokenizers/1: unsupported pre-tokenizer type "
			    "'UnicodeScripts'");
	expect_file_refused("dropout.json",
			    "{\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": {}, "
			    "\"merges\": []}}",
			    ": /model/dropout: BPE dropout is not supported");
	expect_file_refused("merge.json",
			    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, "
			    "\"merges\": [\"a\"]}}",
			    ": /model/merges/0: expected two pieces separated by one space");
	expect_file_refused("syntax.json", "{\"model\": {\n", ":2:1: expected a string");
}
END_TEST

START_TEST(test_other_start_up_failures_exit_2)
{
	char path[512], spec[1100], want[1200];
	const char *tok_args[] = {"--port", "0", "--host", "127.0.0.1", "--tokenizer", spec, NULL};
	const char *model_args[] = {"--port", "0", "--host", "127.0.0.1", "--model", spec, NULL};

	/* a GPT-2 vocabulary without its merges.txt beside it */
	write_text("vocab.json", "{\"a\": 0}", path);
	snprintf(spec, sizeof spec, "g=%s", path);
	snprintf(want, sizeof want, "--tokenizer g: cannot open %s/merges.txt", tmp_dir);
	expect_exit_2(tok_args, want);
	/* a missing file */
	snprintf(spec, sizeof spec, "g=%s/none.json", tmp_dir);
	snprintf(want, sizeof want, "--tokenizer g: cannot open %s/none.json", tmp_dir);
	expect_exit_2(tok_args, want);
	expect_exit_2(tok_args, "No such file");
	/* a model naming a tokenizer nobody loaded */
	snprintf(spec, sizeof spec, "gqa=%s,heads=4,tokenizer=nope", FIXTURE);
	expect_exit_2(model_args, "model gqa: tokenizer: no tokenizer named 'nope'");
	/* a model's own tokenizer file, refused by its pointer */
	write_text("own.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": [], \"merges\": []}}",
		   path);
	snprintf(spec, sizeof spec, "gqa=%s,heads=4,tokenizer=%s", FIXTURE, path);
	snprintf(want, sizeof want, "model gqa: tokenizer: %s: /model/vocab: expected an object",
		 path);
	expect_exit_2(model_args, want);
	/* a bad NAME=FILE */
	snprintf(spec, sizeof spec, "=x.json");
	expect_exit_2(tok_args, "--tokenizer '=x.json': expected NAME=FILE");
}
END_TEST

/* A model given its tokenizer as a file: named after the model. */
START_TEST(test_model_tokenizer_file)
{
	static const char body[] = "{\"model\":\"gqa\",\"text\":\"cat\"}";
	char model[1100];
	const char *args[] = {"--no-builtins", "--model", model, NULL};
	struct live_daemon m;
	struct live_resp r = {0};

	snprintf(model, sizeof model, "gqa=%s,heads=4,tokenizer=%s", FIXTURE, small_path);
	live_start(&m, args);
	live_get(m.port, "/v1/models/gqa", &r);
	ck_assert_msg(strstr(r.body, "\"tokenizer\":\"gqa\"") != NULL, "%s", r.body);
	live_post(m.port, "/v1/tokenize", "application/json", "", body, sizeof body - 1, &r);
	ck_assert_msg(r.status == 200 && strstr(r.body, "\"ids\":[10,9]") != NULL, "%d %s",
		      r.status, r.body);
	live_resp_release(&r);
	live_stop(&m);
}
END_TEST

/* A tokenizer whose model names an unk_token its vocabulary lacks: a text
 * that needs it is 422 unknown_token at /text (Hugging Face's
 * UnkTokenOutOfVocabulary), on /v1/tokenize and /v1/attention alike; a text
 * that does not is answered. */
START_TEST(test_unk_token_not_in_vocabulary)
{
	static const char *const bodies[][2] = {
	    {"/v1/tokenize", "{\"model\":\"gqa\",\"text\":\"the dog\"}"},
	    {"/v1/attention", "{\"model\":\"gqa\",\"text\":\"the dog\"}"},
	};
	static const char ok[] = "{\"model\":\"gqa\",\"text\":\"the cat\"}";
	char path[512], model[1100];
	const char *args[] = {"--no-builtins", "--model", model, NULL};
	struct live_daemon m;
	struct live_resp r = {0};

	/* an unk_token the vocabulary lacks */
	write_small_variant("nounk.json", "\"unk_token\": \"<unk>\"", "\"unk_token\": \"<no>\"", path);
	snprintf(model, sizeof model, "gqa=%s,heads=4,tokenizer=%s", FIXTURE, path);
	live_start(&m, args);
	live_post(m.port, "/v1/tokenize", "application/json", "", ok, sizeof ok - 1, &r);
	ck_assert_msg(r.status == 200, "%d %s", r.status, r.body);
	for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		live_post(m.port, bodies[i][0], "application/json", "", bodies[i][1],
			  strlen(bodies[i][1]), &r);
		live_assert_error(&r, 422, "unknown_token");
		ck_assert_msg(strstr(r.body, "\"pointer\":\"/text\"") != NULL, "%s", r.body);
	}
	live_resp_release(&r);
	live_stop(&m);
}
END_TEST

/* The small tokenizer with a decoder of 20 Replaces of "t" by "tt" (a
 * MiB from the one byte of piece "t"): /v1/detokenize of a piece with a t
 * is 422 too_large at /ids, the decoder named, not a MiB of work; one
 * without is decoded; /v1/attention labels the first by its id. */
START_TEST(test_decoder_growth_refused)
{
	char path[512], model[1100], decoder[2048], tok[600];
	const char *args[] = {"--no-builtins", "--tokenizer", tok, "--model", model, NULL};
	static const char detok[] = "{\"tokenizer\":\"blow\",\"ids\":[7,1]}";
	static const char attn[] = "{\"model\":\"gqa\",\"tokens\":[7,1]}";
	size_t len;
	struct live_daemon m;
	struct live_resp r = {0};

	len = (size_t)snprintf(decoder, sizeof decoder,
			       "\"decoder\": {\"type\": \"Sequence\", \"decoders\": [");
	for (int i = 0; i < 20; i++)
		len += (size_t)snprintf(decoder + len, sizeof decoder - len,
					"%s{\"type\": \"Replace\", \"pattern\": {\"String\": \"t\"}, "
					"\"content\": \"tt\"}",
					i ? ", " : "");
	snprintf(decoder + len, sizeof decoder - len, "]}");
	write_small_variant("growing.json", "\"decoder\": null", decoder, path);
	snprintf(tok, sizeof tok, "blow=%s", path);
	snprintf(model, sizeof model, "gqa=%s,heads=4,tokenizer=blow", FIXTURE);
	live_start(&m, args);
	live_post(m.port, "/v1/detokenize", "application/json", "", detok, strlen(detok), &r);
	live_assert_error(&r, 422, "too_large");
	ck_assert_msg(strstr(r.body, "\"pointer\":\"/ids\"") != NULL &&
			  strstr(r.body, "decoder makes the text more than 32 times") != NULL,
		      "%s", r.body);
	expect_answer_at(m.port, "/v1/detokenize", "{\"tokenizer\":\"blow\",\"ids\":[7,8]}",
			 "{\"text\":\"aca\"}");
	live_post(m.port, "/v1/attention", "application/json", "", attn, strlen(attn), &r);
	ck_assert_msg(r.status == 200 && strstr(r.body, "\"tokens\":[\"a\",\"1\"]") != NULL, "%d %s",
		      r.status, r.body);
	live_resp_release(&r);
	live_stop(&m);
}
END_TEST

/* The small tokenizer split by a regex that backtracks without bound,
 * (a|aa)+$: a text of 60 a's and a b makes PCRE2 give up, 422
 * request_too_expensive at /text (it used to be 503 out_of_memory); a text
 * it matches is tokenized. */
START_TEST(test_regex_limit_refused)
{
	char path[512], tok[600], body[128];
	const char *args[] = {"--no-builtins", "--tokenizer", tok, NULL};
	struct live_daemon m;
	struct live_resp r = {0};

	write_small_variant("backtracks.json", "{\"type\": \"WhitespaceSplit\"}",
			    "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(a|aa)+$\"}, "
			    "\"behavior\": \"Isolated\", \"invert\": false}",
			    path);
	snprintf(tok, sizeof tok, "slow=%s", path);
	live_start(&m, args);
	snprintf(body, sizeof body, "{\"tokenizer\":\"slow\",\"text\":\"%060db\"}", 0);
	memset(strstr(body, "000"), 'a', 60);
	live_post(m.port, "/v1/tokenize", "application/json", "", body, strlen(body), &r);
	live_assert_error(&r, 422, "request_too_expensive");
	ck_assert_msg(strstr(r.body, "\"pointer\":\"/text\"") != NULL, "%s", r.body);
	live_post(m.port, "/v1/tokenize", "application/json", "", "{\"tokenizer\":\"slow\",\"text\":\"ca\"}",
		  strlen("{\"tokenizer\":\"slow\",\"text\":\"ca\"}"), &r);
	ck_assert_msg(r.status == 200, "%d %s", r.status, r.body);
	live_resp_release(&r);
	live_stop(&m);
}
END_TEST

/* GET /v1/tokenizers on the daemon at port holds `want`, one whole entry. */
static void expect_tokenizer_listed(unsigned port, const char *want)
{
	struct live_resp r = {0};

	live_get(port, "/v1/tokenizers", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_msg(strstr(r.body, want) != NULL, "%s\n  lacks %s", r.body, want);
	live_resp_release(&r);
}

/* GET /v1/models on the daemon at port lists model `name` with the
 * tokenizer named `want`. */
static void expect_model_tokenizer(unsigned port, const char *name, const char *want)
{
	struct live_resp r = {0};
	json_t *doc, *model;
	size_t i;

	live_get(port, "/v1/models", &r);
	ck_assert_int_eq(r.status, 200);
	doc = live_json(&r);
	json_array_foreach(json_object_get(doc, "models"), i, model) {
		const json_t *tok = json_object_get(model, "tokenizer");
		const char *listed = json_string_value(json_object_get(model, "name"));

		if (listed == NULL || strcmp(listed, name) != 0)
			continue;
		ck_assert_msg(json_is_string(tok) && strcmp(json_string_value(tok), want) == 0,
			      "model %s: %s", name, r.body);
		json_decref(doc);
		live_resp_release(&r);
		return;
	}
	ck_abort_msg("model %s not listed: %s", name, r.body);
}

/*
 * The README's `--model gpt2=/models/gpt2`: a folder's tokenizer.json is
 * named after its model, so here it takes the built-in gpt2's place, as a
 * --tokenizer gpt2 would (it used to stop start-up: "tokenizer name 'gpt2'
 * is invalid or taken"). "hello the<|endoftext|>" tells the two apart: the
 * folder's pieces are ids 263, 261, 264, the built-in one's 31373, 262,
 * 50256.
 */
START_TEST(test_folder_tokenizer_takes_builtin_name)
{
	static const char want[] =
	    "{\"ids\":[263,261,264],\"tokens\":[\"hello\",\"\xc4\xa0the\",\"<|endoftext|>\"],"
	    "\"offsets\":[[0,5],[5,9],[9,22]]}";
	static const char attention[] = "{\"model\":\"gpt2\",\"text\":\"hello the\"}";
	const char *args[] = {"--model", "gpt2=" FOLDER, NULL};
	struct live_daemon m;
	struct live_resp r = {0};

	live_start(&m, args);
	expect_model_tokenizer(m.port, "gpt2", "gpt2");
	expect_tokenizer_listed(m.port, "{\"name\":\"gpt2\",\"source\":\"file:" FOLDER
					"/tokenizer.json\",\"vocab_size\":265,\"models\":[\"gpt2\"]}");
	expect_tokenizer_listed(m.port, "{\"name\":\"bert\",\"source\":\"builtin:");
	/* by the model and by the tokenizer's name: the folder's pieces */
	expect_answer_at(m.port, "/v1/tokenize",
			 "{\"model\":\"gpt2\",\"text\":\"hello the<|endoftext|>\","
			 "\"add_special_tokens\":false}",
			 want);
	expect_answer_at(m.port, "/v1/tokenize",
			 "{\"tokenizer\":\"gpt2\",\"text\":\"hello the<|endoftext|>\","
			 "\"add_special_tokens\":false}",
			 want);
	/* and the checkpoint runs on them */
	live_post(m.port, "/v1/attention", "application/json", "", attention,
		  sizeof attention - 1, &r);
	ck_assert_msg(r.status == 200 && strstr(r.body, "\"token_ids\":[263,261]") != NULL,
		      "%d %s", r.status, r.body);
	live_resp_release(&r);
	live_stop(&m);
}
END_TEST

/* A folder's tokenizer and a --tokenizer of its model's name are two asked
 * for under one name: exit 2, naming the way out (tokenizer=gpt2, which
 * takes the --tokenizer). A model's tokenizer=gpt2 given before the folder
 * gets the folder's, as it would a --tokenizer gpt2's. */
START_TEST(test_folder_tokenizer_name_taken)
{
	char model[1100];
	const char *both[] = {"--port", "0", "--host", "127.0.0.1", "--tokenizer", "gpt2=" GPT2,
			      "--model", "gpt2=" FOLDER, NULL};
	const char *chosen[] = {"--tokenizer", "gpt2=" GPT2, "--model",
				"gpt2=" FOLDER ",tokenizer=gpt2", NULL};
	const char *named_first[] = {"--model", model, "--model", "gpt2=" FOLDER, NULL};
	/* the built-in checkpoint mini's tokenizer is a built-in one too */
	const char *minis[] = {"--model", "g=" FOLDER ",tokenizer=mini", NULL};
	struct live_daemon m;

	expect_exit_2(both, "model gpt2: tokenizer: " FOLDER "/tokenizer.json would be tokenizer "
			    "'gpt2', the name of a --tokenizer; give tokenizer=gpt2");
	live_start(&m, chosen);
	expect_tokenizer_listed(m.port, "{\"name\":\"gpt2\",\"source\":\"file:" GPT2
					"\",\"vocab_size\":50257,\"models\":[\"gpt2\"]}");
	live_stop(&m);

	snprintf(model, sizeof model, "gqa=%s,heads=4,tokenizer=gpt2", FIXTURE);
	live_start(&m, named_first);
	expect_model_tokenizer(m.port, "gqa", "gpt2");
	expect_tokenizer_listed(m.port, "{\"name\":\"gpt2\",\"source\":\"file:" FOLDER
					"/tokenizer.json\",\"vocab_size\":265,"
					"\"models\":[\"gqa\",\"gpt2\"]}");
	live_stop(&m);

	live_start(&m, minis);
	expect_model_tokenizer(m.port, "g", "mini");
	live_stop(&m);
}
END_TEST

/* The built-in tokenizers: every daemon has gpt2 and bert (the same files as
 * --tokenizer would read, so the same answers), a --tokenizer of one's name
 * stands in its place, and --no-builtins leaves them out. */
START_TEST(test_builtin_tokenizers)
{
	static const char bert[] = "{\"tokenizer\":\"bert\",\"text\":\"The animal didn't\"}";
	static const char gpt2[] = "{\"tokenizer\":\"gpt2\",\"text\":\"Hello world\"}";
	const char *plain[] = {NULL};
	const char *none[] = {"--no-builtins", "--model", NULL, NULL};
	char model[1100];
	struct live_daemon m;
	struct live_resp r = {0};

	live_start(&m, plain);
	live_get(m.port, "/v1/tokenizers", &r);
	ck_assert_msg(strstr(r.body, "\"name\":\"gpt2\",\"source\":\"builtin:") != NULL &&
			      strstr(r.body, "\"name\":\"bert\",\"source\":\"builtin:") != NULL,
		      "%s", r.body);
	live_post(m.port, "/v1/tokenize", "application/json", "", bert, sizeof bert - 1, &r);
	ck_assert_msg(r.status == 200 &&
			      strstr(r.body, "\"ids\":[101,1996,4111,2134,1005,1056,102]") != NULL,
		      "%d %s", r.status, r.body);
	live_post(m.port, "/v1/tokenize", "application/json", "", gpt2, sizeof gpt2 - 1, &r);
	ck_assert_msg(r.status == 200 && strstr(r.body, "\"ids\":[15496,995]") != NULL, "%d %s",
		      r.status, r.body);
	live_resp_release(&r);
	live_stop(&m);

	/* the routes' daemon was given --tokenizer gpt2=FILE: that one stands */
	live_get(d.port, "/v1/tokenizers", &r);
	ck_assert_msg(strstr(r.body, "\"name\":\"gpt2\",\"source\":\"file:") != NULL &&
			      strstr(r.body, "\"name\":\"bert\",\"source\":\"builtin:") != NULL,
		      "%s", r.body);
	live_resp_release(&r);

	snprintf(model, sizeof model, "gqa=%s,heads=4", FIXTURE);
	none[2] = model;
	live_start(&m, none);
	live_post(m.port, "/v1/tokenize", "application/json", "", gpt2, sizeof gpt2 - 1, &r);
	live_assert_error(&r, 404, "tokenizer_not_found");
	live_resp_release(&r);
	live_stop(&m);
}
END_TEST

static Suite *tokenizer_daemon_suite(void)
{
	Suite *s = suite_create("tokenizer_daemon");
	TCase *routes = tcase_create("routes");
	TCase *bad = tcase_create("start-up");

	tcase_add_unchecked_fixture(routes, start, stop);
	tcase_set_timeout(routes, 120);
	tcase_set_timeout(bad, 120);
	tcase_add_test(routes, test_tokenize_gpt2);
	tcase_add_test(routes, test_tokenize_by_model);
	tcase_add_test(routes, test_detokenize);
	tcase_add_test(routes, test_attention_with_text);
	tcase_add_test(routes, test_bad_text);
	tcase_add_test(routes, test_split_text_over_limit);
	tcase_add_test(routes, test_unknown_names);
	tcase_add_test(routes, test_listings);
	tcase_add_test(routes, test_builtin_tokenizers);
	tcase_add_test(bad, test_bad_files_exit_2);
	tcase_add_test(bad, test_other_start_up_failures_exit_2);
	tcase_add_test(bad, test_model_tokenizer_file);
	tcase_add_test(bad, test_unk_token_not_in_vocabulary);
	tcase_add_test(bad, test_decoder_growth_refused);
	tcase_add_test(bad, test_regex_limit_refused);
	tcase_add_test(bad, test_folder_tokenizer_takes_builtin_name);
	tcase_add_test(bad, test_folder_tokenizer_name_taken);
	suite_add_tcase(s, routes);
	suite_add_tcase(s, bad);
	return s;
}

/* Removes tmp_dir and the files the tests wrote in it. */
static void remove_tmp_dir(void)
{
	tmp_remove_dir(tmp_dir);
}

/* Before the run: the fixtures are there, tmp_dir made, the small tokenizer
 * written (the routes' daemon starts in the fixture, after this). */
static int tokenizer_daemon_setup(void)
{
	FILE *f;

	if (access(FIXTURE, R_OK) != 0 || access(GPT2, R_OK) != 0 ||
	    access(FOLDER "/tokenizer.json", R_OK) != 0) {
		fprintf(stderr, "check_tokenizer_daemon: needs %s, %s and %s (run from the "
				"repository root)\n",
			FIXTURE, GPT2, FOLDER);
		return -1;
	}
	if (mkdtemp(tmp_dir) == NULL) {
		perror("check_tokenizer_daemon: mkdtemp");
		return -1;
	}
	snprintf(small_path, sizeof small_path, "%s/small.json", tmp_dir);
	f = fopen(small_path, "wb");
	if (f == NULL || fwrite(small_json, 1, sizeof small_json - 1, f) != sizeof small_json - 1 ||
	    fclose(f) != 0) {
		perror("check_tokenizer_daemon: small.json");
		remove_tmp_dir();
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = {
	    .daemon = true,
	    .setup = tokenizer_daemon_setup,
	    .teardown = remove_tmp_dir,
	};

	return suite_main(argc, argv, tokenizer_daemon_suite, &opts);
}
