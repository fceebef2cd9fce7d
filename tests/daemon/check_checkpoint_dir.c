/*
 * check_checkpoint_dir.c: Hugging Face model folders written to a temporary
 * directory and loaded by server/checkpoint_dir.c (linked in, as check_pool
 * links the pool): a single model.safetensors with its tokenizer.json, shards
 * listed by model.safetensors.index.json, and the refusals, each naming the
 * file at fault by its path.
 *
 * An index of 200,000 shards is refused at its first missing one, and a
 * header of 180,000 tensors (20,000 layers) loads, each in near-linear time.
 *
 * Then every folder of tests/data/checkpoints/ (written by transformers,
 * tests/checkpoint/oracle/) loads, with its dtype and its files.
 *
 * The model: a one-layer gpt2 with E = 4, H = 2, F = 8, V = 5, P = 3, tensor
 * t's element i st_tvalue(t, i) (tests/lib/st_util.h). Its weights are
 * copied out of the mapping where the kernel offers 2 MiB pages, its
 * embedding tables read where they lie.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/checkpoint_dir.h"
#include "tests/lib/light.h"
#include "tests/lib/st_util.h"
#include "tests/lib/suite_main.h"
#include "tests/lib/tmp_files.h"

#define N_SPECS 16

static const struct st_spec gpt2_specs[N_SPECS] = {
    {"wte.weight", "F32", 2, {5, 4}},
    {"wpe.weight", "F32", 2, {3, 4}},
    {"h.0.ln_1.weight", "F32", 1, {4}},
    {"h.0.ln_1.bias", "F32", 1, {4}},
    {"h.0.attn.c_attn.weight", "F32", 2, {4, 12}},
    {"h.0.attn.c_attn.bias", "F32", 1, {12}},
    {"h.0.attn.c_proj.weight", "F32", 2, {4, 4}},
    {"h.0.attn.c_proj.bias", "F32", 1, {4}},
    {"h.0.ln_2.weight", "F32", 1, {4}},
    {"h.0.ln_2.bias", "F32", 1, {4}},
    {"h.0.mlp.c_fc.weight", "F32", 2, {4, 8}},
    {"h.0.mlp.c_fc.bias", "F32", 1, {8}},
    {"h.0.mlp.c_proj.weight", "F32", 2, {8, 4}},
    {"h.0.mlp.c_proj.bias", "F32", 1, {4}},
    {"ln_f.weight", "F32", 1, {4}},
    {"ln_f.bias", "F32", 1, {4}},
};

static const char config_json[] = "{\"model_type\": \"gpt2\", \"n_layer\": 1, \"n_embd\": 4,"
				  " \"n_head\": 2, \"n_inner\": 8}";
static const char tokenizer_json[] = "{\"version\": \"1.0\"}";

static char dir[64];
static char err[512];

static void make_dir(void)
{
	strcpy(dir, "/tmp/check_checkpoint_dir.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void put(const char *name, const void *bytes, size_t len)
{
	char path[512];

	tmp_write(dir, name, bytes, len, path);
}

static void put_str(const char *name, const char *s)
{
	put(name, s, strlen(s));
}

/* specs[from, to) as one safetensors file called name. */
static void put_specs(const char *name, const struct st_spec *specs, size_t n)
{
	size_t len;
	uint8_t *f = st_make_file(specs, n, NULL, &len, NULL);

	put(name, f, len);
	free(f);
}

/* The model in two shards (tensors 0..7 and 8..15) and their index. */
static void put_shards(const char *first_shard)
{
	char index[2048];
	size_t at = 0;

	put_specs("model-00001-of-00002.safetensors", gpt2_specs, 8);
	put_specs("model-00002-of-00002.safetensors", gpt2_specs + 8, 8);
	at += (size_t)snprintf(index, sizeof index,
			       "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {");
	for (size_t t = 0; t < N_SPECS; t++)
		at += (size_t)snprintf(index + at, sizeof index - at, "%s\"%s\": \"%s\"",
				       t ? ", " : "", gpt2_specs[t].name,
				       t == 0  ? first_shard
				       : t < 8 ? "model-00001-of-00002.safetensors"
					       : "model-00002-of-00002.safetensors");
	snprintf(index + at, sizeof index - at, "}}");
	put_str("model.safetensors.index.json", index);
}

static int load(struct checkpoint_dir *d)
{
	err[0] = '\0';
	return checkpoint_dir_load(d, dir, err, sizeof err);
}

/* The load fails with a message starting "DIR/file" (or "DIR" when file is
 * NULL), naming the folder only there, and holding want. */
static void assert_refused(const char *file, const char *want)
{
	struct checkpoint_dir d;
	char head[256];

	ck_assert_int_eq(load(&d), -1);
	ck_assert_ptr_null(d.ck);
	snprintf(head, sizeof head, "%s%s%s:", dir, file ? "/" : "", file ? file : "");
	ck_assert_msg(strncmp(err, head, strlen(head)) == 0, "'%s' does not start with '%s'", err,
		      head);
	ck_assert_msg(strstr(err + strlen(dir), dir) == NULL, "'%s' names %s twice", err, dir);
	ck_assert_msg(strstr(err, want) != NULL, "'%s' lacks '%s'", err, want);
}

/* Whether x points into one of d's mapped files. */
static int in_mapping(const struct checkpoint_dir *d, const float *x)
{
	for (size_t i = 0; i < d->n_files; i++)
		if ((const uint8_t *)x >= d->files[i].bytes &&
		    (const uint8_t *)x < d->files[i].bytes + d->files[i].len)
			return 1;
	return 0;
}

START_TEST(single_file)
{
	struct checkpoint_dir d;
	const struct attn_stack *s;

	make_dir();
	put_str("config.json", config_json);
	put_str("tokenizer.json", tokenizer_json);
	put_specs("model.safetensors", gpt2_specs, N_SPECS);
	ck_assert_msg(load(&d) == 0, "%s", err);
	s = &d.ck->stack;
	ck_assert_uint_eq(s->E, 4);
	ck_assert_uint_eq(s->F, 8);
	ck_assert_uint_eq(s->vocab, 5);
	ck_assert_uint_eq(s->max_positions, 3);
	ck_assert_uint_eq(d.n_files, 1);
	ck_assert_float_eq(s->blocks[0].up.b[7], st_tvalue(11, 7));
	ck_assert_float_eq(s->final_norm.b[3], st_tvalue(15, 3));
	/* with 2 MiB pages offered, every weight but wte and wpe copied onto
	 * huge_alloc's memory: the four matrices and 13 vectors of 4 (c_attn's
	 * bias 12, c_fc's 8), read after the load dropped the file's one page,
	 * so read back; without, all in place */
	if (checkpoint_dir_copies_weights()) {
		ck_assert_uint_eq(d.ck->owned_bytes,
				  sizeof(struct attn_block) +
				      (4 * 12 + 4 * 4 + 4 * 8 + 8 * 4 + 4 * 13) * sizeof(float));
		ck_assert(!in_mapping(&d, s->blocks[0].qkv[0].w));
		ck_assert(!in_mapping(&d, s->blocks[0].down.w));
		ck_assert(!in_mapping(&d, s->blocks[0].up.b));
		ck_assert(!in_mapping(&d, s->final_norm.w));
	} else {
		ck_assert_uint_eq(d.ck->owned_bytes, sizeof(struct attn_block));
		ck_assert(in_mapping(&d, s->blocks[0].qkv[0].w));
	}
	ck_assert(in_mapping(&d, s->wte));
	ck_assert(in_mapping(&d, s->wpe));
	ck_assert_float_eq(s->blocks[0].qkv[0].w[11], st_tvalue(4, 11));
	ck_assert_float_eq(s->blocks[0].down.w[31], st_tvalue(12, 31));
	ck_assert_float_eq(s->wte[19], st_tvalue(0, 19));
	ck_assert_uint_eq(d.tokenizer_len, strlen(tokenizer_json));
	ck_assert_mem_eq(d.tokenizer_json, tokenizer_json, d.tokenizer_len);
	checkpoint_dir_release(&d);
	tmp_remove_dir(dir);
}
END_TEST

START_TEST(shards)
{
	struct checkpoint_dir d;

	make_dir();
	put_str("config.json", config_json);
	put_shards("model-00001-of-00002.safetensors");
	ck_assert_msg(load(&d) == 0, "%s", err);
	ck_assert_uint_eq(d.n_files, 2);
	ck_assert_ptr_null(d.tokenizer_json);
	ck_assert_float_eq(d.ck->stack.wte[19], st_tvalue(0, 19));
	ck_assert_float_eq(d.ck->stack.final_norm.w[2], st_tvalue(6, 2)); /* 8 + 6 = 14 */
	checkpoint_dir_release(&d);
	tmp_remove_dir(dir);
}
END_TEST

START_TEST(refused)
{
	struct st_spec bad[8];

	make_dir();
	assert_refused("config.json", "cannot open: No such file or directory");
	put_str("config.json", "{\"model_type\": \"gpt2\", \"n_layer\": 1, \"n_embd\": 4,"
			       " \"n_head\": 3}");
	assert_refused("config.json", "/n_head: 3 heads do not divide the hidden size 4");
	put_str("config.json", "{\"model_type\": \"gpt2\", \"n_layer\": 1, \"n_embd\": 4,"
			       " \"n_head\": 2, \"pruned_heads\": {\"0\": [1]}}");
	assert_refused("config.json", "/pruned_heads/0: pruned_heads on layer 0 are not supported");
	put_str("config.json", config_json);
	assert_refused(NULL, "no model.safetensors or model.safetensors.index.json");
	put_shards("../model-00001-of-00002.safetensors");
	assert_refused("model.safetensors.index.json",
		       "/weight_map/wte.weight: shard '../model-00001-of-00002.safetensors' is "
		       "not a file name beside the index");
	put_shards("model-00003-of-00002.safetensors");
	assert_refused("model-00003-of-00002.safetensors", "cannot open");
	memcpy(bad, gpt2_specs + 8, sizeof bad);
	bad[2].dims[1] = 9; /* h.0.mlp.c_fc.weight [4, 9] */
	put_shards("model-00001-of-00002.safetensors");
	put_specs("model-00002-of-00002.safetensors", bad, 8);
	assert_refused("model-00002-of-00002.safetensors",
		       "tensor 'h.0.mlp.c_fc.weight' has shape [4, 9], expected [4, 8]");
	put_specs("model-00002-of-00002.safetensors", gpt2_specs + 8, 7); /* no ln_f.bias */
	assert_refused(NULL, "tensor 'ln_f.bias' not found in model-00001-of-00002.safetensors, "
			     "model-00002-of-00002.safetensors");
	tmp_remove_dir(dir);
}
END_TEST

/* An index of 200,000 tensors in as many shards (20,000 in light mode): the
 * shards are kept once each through a hash, not a scan of the list per
 * tensor, which took 75 s here (and hours for the 64 MiB an index may
 * hold) before refusing the first missing shard. The test case's timeout
 * bounds the time. */
START_TEST(many_shards)
{
	size_t n = test_light() ? 20000 : 200000, cap = 64 + 48 * n, at = 0;
	char *index = malloc(cap);

	ck_assert_ptr_nonnull(index);
	make_dir();
	put_str("config.json", config_json);
	at += (size_t)snprintf(index, cap, "{\"weight_map\": {");
	for (size_t t = 0; t < n; t++)
		at += (size_t)snprintf(index + at, cap - at, "%s\"t%zu\": \"s%07zu.safetensors\"",
				       t ? ", " : "", t, t);
	snprintf(index + at, cap - at, "}}");
	put_str("model.safetensors.index.json", index);
	assert_refused("s0000000.safetensors", "cannot open");
	free(index);
	tmp_remove_dir(dir);
}
END_TEST

/* specs[0, n) as one safetensors file of zeros, its header as long as it
 * needs (st_make_file's holds 4 KiB). */
static uint8_t *big_file(const struct st_spec *specs, size_t n, size_t *len)
{
	size_t cap = 128 + 160 * n, at = 0, data = 0;
	char *header = malloc(cap);
	uint8_t *zeros, *f;

	ck_assert_ptr_nonnull(header);
	header[at++] = '{';
	for (size_t t = 0; t < n; t++) {
		size_t bytes = 4 * specs[t].dims[0] * (specs[t].rank == 2 ? specs[t].dims[1] : 1);

		at += (size_t)snprintf(
		    header + at, cap - at,
		    /* "%.0zu" of 0 (a vector's second dim) prints nothing */
		    "%s\"%s\": {\"dtype\": \"F32\", \"shape\": [%zu%s%.0zu], "
		    "\"data_offsets\": [%zu, %zu]}",
		    t ? ", " : "", specs[t].name, specs[t].dims[0], specs[t].rank == 2 ? ", " : "",
		    specs[t].rank == 2 ? specs[t].dims[1] : 0, data, data + bytes);
		data += bytes;
	}
	header[at++] = '}';
	zeros = calloc(data, 1);
	ck_assert_ptr_nonnull(zeros);
	f = st_raw_file(at, header, at, zeros, data, len);
	free(zeros);
	free(header);
	return f;
}

/* A Llama of 20,000 layers (2,000 in light mode) with E = H D = F = 2, nine
 * tensors a layer: each tensor is found by a binary search of its file's
 * table (st_table_find), not a scan of it, which made this 49 s of
 * start-up (and a 100 MB header of a million tensors about half an hour).
 * The test case's timeout bounds the time. */
START_TEST(many_layers)
{
	static const char *const mats[] = {
	    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
	    "mlp.gate_proj",	"mlp.up_proj",	    "mlp.down_proj"};
	size_t layers = test_light() ? 2000 : 20000, n = 0, len;
	struct st_spec *specs = calloc(2 + 9 * layers, sizeof *specs);
	char *names = malloc((2 + 9 * layers) * 64), config[512];
	struct checkpoint_dir d;
	uint8_t *f;

	ck_assert_ptr_nonnull(specs);
	ck_assert_ptr_nonnull(names);
#define SPEC(rank_, d0, d1, ...)                                                                   \
	do {                                                                                       \
		snprintf(names + 64 * n, 64, __VA_ARGS__);                                         \
		specs[n] = (struct st_spec){names + 64 * n, "F32", rank_, {d0, d1, 0}};            \
		n++;                                                                               \
	} while (0)
	SPEC(2, 4, 2, "model.embed_tokens.weight");
	SPEC(1, 2, 0, "model.norm.weight");
	for (size_t l = 0; l < layers; l++) {
		SPEC(1, 2, 0, "model.layers.%zu.input_layernorm.weight", l);
		SPEC(1, 2, 0, "model.layers.%zu.post_attention_layernorm.weight", l);
		for (size_t m = 0; m < 7; m++)
			SPEC(2, 2, 2, "model.layers.%zu.%s.weight", l, mats[m]);
	}
#undef SPEC
	make_dir();
	snprintf(config, sizeof config,
		 "{\"model_type\": \"llama\", \"num_hidden_layers\": %zu, \"hidden_size\": 2,"
		 " \"num_attention_heads\": 1, \"num_key_value_heads\": 1,"
		 " \"intermediate_size\": 2, \"vocab_size\": 4}",
		 layers);
	put_str("config.json", config);
	f = big_file(specs, n, &len);
	put("model.safetensors", f, len);
	ck_assert_msg(load(&d) == 0, "%s", err);
	ck_assert_uint_eq(d.ck->stack.n_layers, layers);
	checkpoint_dir_release(&d);
	free(f);
	free(names);
	free(specs);
	tmp_remove_dir(dir);
}
END_TEST

/* The folders transformers wrote: each loads, in its dtype, from its files. */
START_TEST(oracle_folders)
{
	static const struct {
		const char *name, *dtype;
		size_t files;
		enum attn_family family;
	} f[] = {
	    {"bert_bf16_gamma", "BF16", 1, ATTN_FAMILY_BERT},
	    {"bert_f32", "F32", 1, ATTN_FAMILY_BERT},
	    {"gpt2_f16_noprefix", "F16", 1, ATTN_FAMILY_GPT2},
	    {"gpt2_f32", "F32", 1, ATTN_FAMILY_GPT2},
	    {"llama_bf16_sharded", "BF16", 2, ATTN_FAMILY_LLAMA},
	    {"llama_f32", "F32", 1, ATTN_FAMILY_LLAMA},
	    {"llama_headdim", "F16", 1, ATTN_FAMILY_LLAMA},
	    {"mistral_window", "F32", 1, ATTN_FAMILY_LLAMA},
	    {"qwen2_bias", "BF16", 1, ATTN_FAMILY_LLAMA},
	};
	struct checkpoint_dir d;
	char path[256];

	snprintf(path, sizeof path, "tests/data/checkpoints/%s", f[_i].name);
	ck_assert_msg(checkpoint_dir_load(&d, path, err, sizeof err) == 0, "%s", err);
	ck_assert_str_eq(d.ck->dtype, f[_i].dtype);
	ck_assert_uint_eq(d.n_files, f[_i].files);
	ck_assert_int_eq(d.ck->stack.family, f[_i].family);
	checkpoint_dir_release(&d);
}
END_TEST

static Suite *checkpoint_dir_suite(void)
{
	Suite *s = suite_create("checkpoint_dir");
	TCase *tc = tcase_create("folders"), *index = tcase_create("index");

	tcase_add_test(tc, single_file);
	tcase_add_test(tc, shards);
	tcase_add_test(tc, refused);
	tcase_add_loop_test(tc, oracle_folders, 0, 9);
	suite_add_tcase(s, tc);
	tcase_set_timeout(index, 30);
	tcase_add_test(index, many_shards);
	tcase_add_test(index, many_layers);
	suite_add_tcase(s, index);
	return s;
}

int main(int argc, char **argv)
{
	return suite_main(argc, argv, checkpoint_dir_suite, NULL);
}
