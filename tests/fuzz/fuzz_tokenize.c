/*
 * fuzz_tokenize.c: tok_encode, tok_decode and tok_display on any text, with
 * a fixed set of tokenizers built once.
 *
 * Byte 0 chooses, the rest is the text (any bytes):
 *   bits 0-6  the tokenizer: the index into `tokenizers` below, modulo its size
 *   bit 7     add_special (the post-processor's tokens)
 * The tokenizers are the synthetic files of tests/data/tokenizers/synthetic/
 * (between them every normalizer, pre-tokenizer, model, post-processor and
 * decoder the library knows, added tokens with lstrip, rstrip, single_word
 * and normalized; INDEX.json there says which covers what) and GPT-2's
 * vocab.json + merges.txt (tests/data/tokenizers/gpt2/). They are read
 * relative to the working directory (the repository's root, as `make test`
 * and `make fuzz` run), or under $ATTN_TOKENIZERS.
 *
 * Checks, abort() on a broken one:
 *   text not valid UTF-8  TOK_EINVAL with *bad_byte == utf8_check(text)
 *   valid text            TOK_OK; each token: start <= end <= the number of
 *                         code points of the text, 0 <= id < tok_vocab_end,
 *                         piece the same string as tok_piece(id);
 *                         tok_decode of the ids (special tokens skipped and
 *                         kept) TOK_OK and valid UTF-8; tok_display of each
 *                         id TOK_OK and valid UTF-8
 *
 * Ownership: the tokenizers live until the process exits (libFuzzer has no
 * teardown hook); each input frees everything it allocates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "api/tokenizer_file.h"
#include "common/buf.h"
#include "common/utf8.h"
#include "tokenizer/tokenizer.h"

/* One tokenizer file: a tokenizer.json, or GPT-2's pair (merges not NULL),
 * under the data directory. */
struct tok_source {
	const char *json_or_vocab;
	const char *merges;
};

static const struct tok_source sources[] = {
	{ "synthetic/bpe_byte_fallback.json", NULL },
	{ "synthetic/bpe_metaspace_never.json", NULL },
	{ "synthetic/bpe_unk_fuse.json", NULL },
	{ "synthetic/bytelevel_roberta.json", NULL },
	{ "synthetic/bytelevel_split_pairs.json", NULL },
	{ "synthetic/dev_bpe_continuing_prefix.json", NULL },
	{ "synthetic/dev_lowercase_sigma.json", NULL },
	{ "synthetic/dev_metaspace_split.json", NULL },
	{ "synthetic/dev_normalized_added.json", NULL },
	{ "synthetic/dev_punctuation_isolated.json", NULL },
	{ "synthetic/dev_single_word.json", NULL },
	{ "synthetic/dev_split_contiguous.json", NULL },
	{ "synthetic/dev_split_invert_isolated.json", NULL },
	{ "synthetic/dev_split_mergedwithnext.json", NULL },
	{ "synthetic/dev_split_mergedwithprevious.json", NULL },
	{ "synthetic/dev_split_removed.json", NULL },
	{ "synthetic/dev_unigram_byte_fallback.json", NULL },
	{ "synthetic/split_invert.json", NULL },
	{ "synthetic/split_string_regex.json", NULL },
	{ "synthetic/unigram_metaspace_always.json", NULL },
	{ "synthetic/unigram_metaspace_first.json", NULL },
	{ "synthetic/wordpiece_added.json", NULL },
	{ "synthetic/wordpiece_digits_contiguous.json", NULL },
	{ "synthetic/wordpiece_normalizers.json", NULL },
	{ "synthetic/wordpiece_whitespace_digits.json", NULL },
	{ "gpt2/vocab.json", "gpt2/merges.txt" },
};

enum { N_SOURCES = sizeof(sources) / sizeof(sources[0]) };

/* Decoded text of at most 8 KiB of input is far below this; reaching it
 * would be a bug the TOK_OK check reports. */
#define DECODE_MAX ((size_t)64 << 20)

static struct tokenizer *tokenizers[N_SOURCES];

/* The whole file at dir/name, malloc'd, in *len; exits when it cannot (the
 * harness cannot run without its tokenizers). */
static char *read_all(const char *dir, const char *name, size_t *len)
{
	char path[4096];
	FILE *f;
	char *data = NULL;
	long n = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (f != NULL && fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	if (n >= 0 && fseek(f, 0, SEEK_SET) == 0)
		data = malloc((size_t)n + 1);
	if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "fuzz_tokenize: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	*len = (size_t)n;
	return data;
}

static struct tokenizer *load(const char *dir, const struct tok_source *src)
{
	struct tokenizer *t = NULL;
	char err[512] = "";
	size_t n, m;
	char *a = read_all(dir, src->json_or_vocab, &n);
	char *b = src->merges != NULL ? read_all(dir, src->merges, &m) : NULL;
	int rc = b != NULL ? api_tokenizer_load_gpt2(&t, a, n, "vocab.json", b, m, "merges.txt",
						     err, sizeof(err))
			   : api_tokenizer_load_json(&t, a, n, src->json_or_vocab, err,
						     sizeof(err));

	free(a);
	free(b);
	if (rc != 0) {
		fprintf(stderr, "fuzz_tokenize: %s: %s\n", src->json_or_vocab, err);
		exit(1);
	}
	return t;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("ATTN_TOKENIZERS");

	(void)argc;
	(void)argv;
	if (dir == NULL || dir[0] == '\0')
		dir = "tests/data/tokenizers";
	for (size_t i = 0; i < N_SOURCES; i++)
		tokenizers[i] = load(dir, &sources[i]);
	return 0;
}

/* Code points of valid UTF-8: the bytes that are not continuation bytes. */
static size_t count_chars(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

static void check_utf8(const struct buf *b)
{
	if (b->failed || utf8_check(b->data, b->len) != b->len)
		abort();
}

/* Every token within the text and the vocabulary. */
static void check_tokens(const struct tokenizer *t, const struct tok_encoding *enc,
			 size_t n_chars)
{
	for (size_t i = 0; i < enc->n; i++) {
		const struct tok_token *k = &enc->tokens[i];
		const char *piece;

		if (k->start > k->end || k->end > n_chars)
			abort();
		if (k->id < 0 || k->id >= tok_vocab_end(t))
			abort();
		piece = tok_piece(t, k->id);
		if (piece == NULL || k->piece == NULL || strcmp(piece, k->piece) != 0)
			abort();
	}
}

/* tok_decode of all the ids, special tokens skipped or kept; tok_display of each. */
static void check_decode(const struct tokenizer *t, const struct tok_encoding *enc)
{
	int32_t *ids = malloc((enc->n > 0 ? enc->n : 1) * sizeof(*ids));
	struct buf out;
	size_t bad = 0;

	if (ids == NULL)
		abort();
	for (size_t i = 0; i < enc->n; i++)
		ids[i] = enc->tokens[i].id;
	buf_init(&out, DECODE_MAX);
	for (int skip = 0; skip <= 1; skip++) {
		buf_reset(&out);
		if (tok_decode(t, ids, enc->n, skip, &out, &bad) != TOK_OK)
			abort();
		check_utf8(&out);
	}
	for (size_t i = 0; i < enc->n; i++) {
		buf_reset(&out);
		if (tok_display(t, ids[i], &out) != TOK_OK)
			abort();
		check_utf8(&out);
	}
	buf_release(&out);
	free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct tokenizer *t;
	const char *text;
	struct tok_encoding enc;
	size_t len, valid, bad = 0;
	enum tok_status st;

	if (size < 1)
		return 0;
	t = tokenizers[(data[0] & 0x7f) % N_SOURCES];
	text = (const char *)data + 1;
	len = size - 1;
	valid = utf8_check(text, len);
	st = tok_encode(t, text, len, data[0] >> 7, &enc, &bad);
	if (valid != len) {
		/* tokenizer.h: on failure enc is zeroed */
		if (st != TOK_EINVAL || bad != valid || enc.tokens != NULL || enc.n != 0)
			abort();
		return 0;
	}
	if (st != TOK_OK)
		abort();
	check_tokens(t, &enc, count_chars(text, len));
	check_decode(t, &enc);
	tok_encoding_release(&enc);
	return 0;
}
