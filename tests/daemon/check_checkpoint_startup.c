/*
 * check_checkpoint_startup.c: model folders that must stop start-up, each run
 * to its exit without a daemon of its own (live_run_to_exit): a folder whose
 * safetensors lacks a tensor, one whose config.json no longer fits its
 * tensors (a mis-shaped tensor), one without model.safetensors, a shard
 * index naming a missing shard, an unknown model_type, and heads= given with
 * a folder: each exits 2 with a message naming the file (and the tensor,
 * where there is one). So do a FIFO in place of a shard and a FIFO given
 * as --tokenizer: refused, not waited on for a writer, and a tokenizer.json
 * whose normalizer would grow an added token without bound. And weights that
 * load (finite) but overflow float32 on a request: 422 naming the model
 * (/model) and where, never a 200 of NaN. The folders are copies of the oracle's
 * (tests/data/checkpoints/, README there), edited in a temporary directory.
 * (Moved out of check_checkpoint_v2.c, which keeps the daemon's answers.)
 *
 * Ownership: each test makes and removes its own temporary folder.
 */
#define _GNU_SOURCE /* memmem, mkdtemp */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "tests/lib/case_files.h"
#include "tests/lib/checkpoint_cases.h"
#include "tests/lib/live_daemon.h"
#include "tests/lib/suite_main.h"
#include "tests/lib/tmp_files.h"

#define ROOT CKPT_ROOT

enum { WAIT_MS = 30000 };

/* The bytes of ROOT/c/name, malloc'd; *len their count. */
static char *read_case_file(const char *c, const char *name, size_t *len)
{
	char path[512];
	char *bytes;

	snprintf(path, sizeof path, ROOT "/%s/%s", c, name);
	bytes = case_slurp(path, len);
	ck_assert_msg(bytes != NULL, "cannot read %s", path);
	return bytes;
}

/* Copies ROOT/c/name into dir unless skip names it; edit, when not NULL,
 * changes the bytes first. */
static void copy_case(const char *dir, const char *c, const char *skip,
		      void (*edit)(const char *name, char *bytes, size_t len))
{
	char src[512], path[512];
	DIR *d;
	struct dirent *e;

	snprintf(src, sizeof src, ROOT "/%s", c);
	d = opendir(src);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		size_t n;
		char *bytes;

		if (e->d_name[0] == '.' || strcmp(e->d_name, "expected.json") == 0 ||
		    (skip != NULL && strcmp(e->d_name, skip) == 0))
			continue;
		bytes = read_case_file(c, e->d_name, &n);
		if (edit != NULL)
			edit(e->d_name, bytes, n);
		tmp_write(dir, e->d_name, bytes, n, path);
		free(bytes);
	}
	closedir(d);
}

/* Starting with spec (its "@" the folder dir) exits 2, the message holding
 * want1 and want2 (or NULL). */
static void refuses_start(const char *dir, const char *opts, const char *want1, const char *want2)
{
	char spec[700], err[4096];
	const char *args[] = { "--model", spec, NULL };
	int status;

	snprintf(spec, sizeof spec, "bad=%s%s", dir, opts);
	status = live_run_to_exit(args, WAIT_MS, err, sizeof err);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "status %d: %s", status,
		      err);
	ck_assert_msg(strstr(err, want1) != NULL, "'%s' not in: %s", want1, err);
	ck_assert_msg(want2 == NULL || strstr(err, want2) != NULL, "'%s' not in: %s", want2, err);
}

/* Renames the header's "ln_f.weight" to "ln_f.weighx" (same length, so every
 * offset stays): the final norm's weight is missing. */
static void drop_ln_f(const char *name, char *bytes, size_t len)
{
	static const char key[] = "\"ln_f.weight\"";
	char *p;

	if (strcmp(name, "model.safetensors") != 0)
		return;
	p = memmem(bytes, len, key, sizeof key - 1);
	ck_assert_ptr_nonnull(p);
	p[sizeof key - 3] = 'x';
}

/* n_embd 48 -> 32: config.json no longer fits the tensors. */
static void narrow_embd(const char *name, char *bytes, size_t len)
{
	static const char key[] = "\"n_embd\": 48";
	char *p;

	if (strcmp(name, "config.json") != 0)
		return;
	p = memmem(bytes, len, key, sizeof key - 1);
	ck_assert_ptr_nonnull(p);
	memcpy(p + sizeof key - 3, "32", 2);
}

/* Each refusal in a folder of its own. */
static void bad_folder(const char *c, const char *skip,
		       void (*edit)(const char *, char *, size_t), const char *want1,
		       const char *want2)
{
	char dir[] = "/tmp/attnd-ckpt2-XXXXXX";
	char want[600];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	copy_case(dir, c, skip, edit);
	snprintf(want, sizeof want, "%s/%s", dir, want1);
	refuses_start(dir, "", want1[0] ? want : dir, want2);
	tmp_remove_dir(dir);
}

START_TEST(missing_tensor)
{
	bad_folder("gpt2_f16_noprefix", NULL, drop_ln_f, "",
		   "tensor 'ln_f.weight' not found in model.safetensors");
}
END_TEST

START_TEST(misshaped_tensor)
{
	bad_folder("gpt2_f16_noprefix", NULL, narrow_embd, "model.safetensors",
		   "'wte.weight' has shape [100, 48], expected [100, 32]");
}
END_TEST

START_TEST(missing_safetensors)
{
	bad_folder("gpt2_f16_noprefix", "model.safetensors", NULL, "", "model.safetensors");
}
END_TEST

START_TEST(missing_shard)
{
	bad_folder("llama_bf16_sharded", "model-00002-of-00002.safetensors", NULL,
		   "model-00002-of-00002.safetensors", "cannot open");
}
END_TEST

/* A FIFO where a shard should be: open() on it would wait for a writer. */
START_TEST(fifo_shard)
{
	const char *shard = "model-00002-of-00002.safetensors";
	char dir[] = "/tmp/attnd-ckpt2-XXXXXX", path[512];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	copy_case(dir, "llama_bf16_sharded", shard, NULL);
	snprintf(path, sizeof path, "%s/%s", dir, shard);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	refuses_start(dir, "", path, "not a regular file");
	tmp_remove_dir(dir);
}
END_TEST

/* The same for a tokenizer file, which server/models.c reads. */
START_TEST(fifo_tokenizer)
{
	char dir[] = "/tmp/attnd-ckpt2-XXXXXX", path[512], spec[600], err[4096];
	const char *args[] = { "--tokenizer", spec, NULL };
	int status;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/tokenizer.json", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	snprintf(spec, sizeof spec, "t=%s", path);
	status = live_run_to_exit(args, WAIT_MS, err, sizeof err);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 2, "status %d: %s", status,
		      err);
	ck_assert_msg(strstr(err, "not a regular file") != NULL, "%s", err);
	tmp_remove_dir(dir);
}
END_TEST

/* A config.json alone is enough: its model_type is refused before any
 * weights are looked for. */
START_TEST(unknown_model_type)
{
	char dir[] = "/tmp/attnd-ckpt2-XXXXXX", path[512];
	const char config[] = "{\"model_type\": \"t5\", \"d_model\": 8}";

	ck_assert_ptr_nonnull(mkdtemp(dir));
	tmp_write(dir, "config.json", config, strlen(config), path);
	refuses_start(dir, "", "config.json", "'t5'");
	tmp_remove_dir(dir);
}
END_TEST

START_TEST(heads_with_folder)
{
	refuses_start(ROOT "/gpt2_f32", ",heads=4", "is a model folder", "heads=");
}
END_TEST

/* Sets every F32 value of tensor `name` in a safetensors file's bytes to v. */
static void fill_tensor(char *bytes, size_t len, const char *name, float v)
{
	uint64_t n = 0;
	json_t *head, *t;
	json_error_t e;
	size_t from, to;

	ck_assert_uint_ge(len, 8);
	for (int i = 7; i >= 0; i--)
		n = n << 8 | (uint8_t)bytes[i];
	head = json_loadb(bytes + 8, (size_t)n, 0, &e);
	ck_assert_msg(head != NULL, "header: %s", e.text);
	t = json_object_get(head, name);
	ck_assert_msg(t != NULL, "no tensor %s", name);
	ck_assert_str_eq(json_string_value(json_object_get(t, "dtype")), "F32");
	from = 8 + (size_t)n + (size_t)json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 0));
	to = 8 + (size_t)n + (size_t)json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 1));
	ck_assert_uint_le(to, len);
	for (size_t at = from; at + 4 <= to; at += 4)
		memcpy(bytes + at, &v, 4);
	json_decref(head);
}

/* gpt2_f32 (three layers): the last layer's MLP out-projection, whose
 * overflow nothing after it would notice, and layer 1's attention
 * projection, fed by layer 0's finite output. */
static void huge_last_mlp(const char *name, char *bytes, size_t len)
{
	if (strcmp(name, "model.safetensors") == 0)
		fill_tensor(bytes, len, "transformer.h.2.mlp.c_proj.weight", 3e38f);
}

static void huge_qkv(const char *name, char *bytes, size_t len)
{
	if (strcmp(name, "model.safetensors") == 0)
		fill_tensor(bytes, len, "transformer.h.1.attn.c_attn.weight", 3e38f);
}

/* A request on the edited gpt2_f32 is 422 `code` at /model, its message
 * holding want. */
static void overflows(void (*edit)(const char *, char *, size_t), const char *code,
		      const char *want)
{
	static const char body[] = "{\"model\":\"big\",\"tokens\":[1,2,3],\"weights\":\"none\"}";
	char dir[] = "/tmp/attnd-ckpt2-XXXXXX", spec[600];
	const char *args[] = { "--no-builtins", "--model", spec, NULL };
	struct live_daemon d;
	struct live_resp r = { 0 };

	ck_assert_ptr_nonnull(mkdtemp(dir));
	copy_case(dir, "gpt2_f32", NULL, edit);
	snprintf(spec, sizeof spec, "big=%s", dir);
	live_start(&d, args);
	live_post(d.port, "/v1/attention", "application/json", "", body, sizeof body - 1, &r);
	live_assert_error(&r, 422, code);
	ck_assert_msg(strstr(r.body, "\"pointer\":\"/model\"") != NULL, "%s", r.body);
	ck_assert_msg(strstr(r.body, want) != NULL, "'%s' not in %s", want, r.body);
	live_resp_release(&r);
	live_stop(&d);
	tmp_remove_dir(dir);
}

START_TEST(overflow_after_the_last_layer)
{
	overflows(huge_last_mlp, "result_overflow", "the hidden state after layer 2 overflows");
}
END_TEST

START_TEST(overflow_in_a_projection)
{
	overflows(huge_qkv, "projection_overflow", "the model's weights are too large");
}
END_TEST

/* A tokenizer.json whose normalizer doubles every 'a' forty times, and an
 * added token "aaaa" that goes through it (normalized): built at start-up,
 * the token's content would grow to 2^42 bytes. Refused by name, with
 * nothing of the sort allocated (TOK_NORM_GROWTH, tokenizer/tokenizer.h). */
START_TEST(tokenizer_replace_blowup)
{
	char dir[] = "/tmp/attnd-ckpt2-XXXXXX", path[512];
	json_t *tok, *seq = json_array(), *token;
	json_error_t jerr;
	char *text;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	copy_case(dir, "gpt2_f32", "tokenizer.json", NULL);
	snprintf(path, sizeof path, ROOT "/gpt2_f32/tokenizer.json");
	tok = json_load_file(path, 0, &jerr);
	ck_assert_msg(tok != NULL, "%s", jerr.text);
	for (int i = 0; i < 40; i++)
		json_array_append_new(seq, json_pack("{s:s, s:{s:s}, s:s}", "type", "Replace",
						     "pattern", "String", "a", "content", "aa"));
	json_object_set_new(tok, "normalizer",
			    json_pack("{s:s, s:o}", "type", "Sequence", "normalizers", seq));
	token =
	    json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", 300, "content", "aaaa",
		      "single_word", 0, "lstrip", 0, "rstrip", 0, "normalized", 1, "special", 0);
	json_array_append_new(json_object_get(tok, "added_tokens"), token);
	text = json_dumps(tok, 0);
	ck_assert_ptr_nonnull(text);
	tmp_write(dir, "tokenizer.json", text, strlen(text), path);
	refuses_start(dir, "", path, "added_tokens: the normalizer makes a token's content");
	free(text);
	json_decref(tok);
	tmp_remove_dir(dir);
}
END_TEST

static Suite *checkpoint_startup_suite(void)
{
	Suite *s = suite_create("checkpoint_startup");
	TCase *bad = tcase_create("start-up");
	TCase *overflow = tcase_create("overflow");

	tcase_set_timeout(bad, 60);
	tcase_add_test(bad, missing_tensor);
	tcase_add_test(bad, misshaped_tensor);
	tcase_add_test(bad, missing_safetensors);
	tcase_add_test(bad, missing_shard);
	tcase_add_test(bad, fifo_shard);
	tcase_add_test(bad, fifo_tokenizer);
	tcase_add_test(bad, heads_with_folder);
	tcase_add_test(bad, unknown_model_type);
	tcase_add_test(bad, tokenizer_replace_blowup);
	suite_add_tcase(s, bad);
	tcase_set_timeout(overflow, 60);
	tcase_add_test(overflow, overflow_after_the_last_layer);
	tcase_add_test(overflow, overflow_in_a_projection);
	suite_add_tcase(s, overflow);
	return s;
}

int main(int argc, char **argv)
{
	static const struct suite_main_opts opts = { .daemon = true };

	return suite_main(argc, argv, checkpoint_startup_suite, &opts);
}
