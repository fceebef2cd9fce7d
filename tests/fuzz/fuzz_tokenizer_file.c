/*
 * fuzz_tokenizer_file.c: the tokenizer readers (api/tokenizer_file.h) and
 * tok_build on the input bytes, then the tokenizer they build on a few texts.
 *
 * The input is read twice:
 *   1. all of it as a tokenizer.json (api_tokenizer_load_json);
 *   2. when it holds a NUL byte, the bytes before the first NUL as GPT-2's
 *      vocab.json and those after it as merges.txt (api_tokenizer_load_gpt2).
 * A refusal must come with a message and *out NULL. A tokenizer that loads
 * encodes each of `texts` (with and without the special tokens); each token
 * must lie within the text (code points) and the vocabulary, tok_decode of
 * the ids and tok_display of each must succeed with valid UTF-8, and
 * everything is freed. (fuzz_tokenize.c checks the same of fixed tokenizers
 * on any text; the checks are repeated here, not shared, because every
 * tests/fuzz/fuzz_*.c is a harness of its own.)
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "api/tokenizer_file.h"
#include "common/buf.h"
#include "common/utf8.h"
#include "tokenizer/tokenizer.h"

/* Short texts meant to reach each stage: ASCII words, punctuation and digits,
 * runs of spaces, accents (NFD/NFKC, StripAccents), CJK, an emoji (byte
 * fallback, byte-level), the added tokens of the synthetic files, nothing. */
static const char *const texts[] = {
	"Hello, world! 123 4567",
	"  h\xc3\xa9llo\tW\xc3\x96RLD  \xef\xac\x81 ",
	"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e <s> [MASK] sing-ing\xf0\x9f\x98\x80",
	"",
};

enum { N_TEXTS = sizeof(texts) / sizeof(texts[0]) };

#define DECODE_MAX ((size_t)16 << 20)

static void check_utf8(const struct buf *b)
{
	if (b->failed || utf8_check(b->data, b->len) != b->len)
		abort();
}

/* Code points of valid UTF-8: the bytes that are not continuation bytes. */
static size_t count_chars(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

static void check_encoding(const struct tokenizer *t, const struct tok_encoding *enc,
			   size_t n_chars, int32_t *ids, struct buf *out)
{
	size_t bad = 0;

	for (size_t i = 0; i < enc->n; i++) {
		const struct tok_token *k = &enc->tokens[i];
		const char *piece = tok_piece(t, k->id);

		if (k->start > k->end || k->end > n_chars || k->id < 0 ||
		    k->id >= tok_vocab_end(t) || piece == NULL || k->piece == NULL ||
		    strcmp(piece, k->piece) != 0)
			abort();
		ids[i] = k->id;
	}
	for (int skip = 0; skip <= 1; skip++) {
		buf_reset(out);
		if (tok_decode(t, ids, enc->n, skip, out, &bad) != TOK_OK)
			abort();
		check_utf8(out);
	}
	for (size_t i = 0; i < enc->n; i++) {
		buf_reset(out);
		if (tok_display(t, ids[i], out) != TOK_OK)
			abort();
		check_utf8(out);
	}
}

static void exercise(const struct tokenizer *t)
{
	struct buf out;

	buf_init(&out, DECODE_MAX);
	for (size_t i = 0; i < N_TEXTS; i++) {
		for (int special = 0; special <= 1; special++) {
			struct tok_encoding enc;
			size_t len = strlen(texts[i]), bad = 0;
			int32_t *ids;
			enum tok_status st = tok_encode(t, texts[i], len, special, &enc, &bad);

			/* valid UTF-8, a few bytes: no reason to fail, but for a
			 * model whose unk_token is not in its vocabulary (tokenizer.h),
			 * which leaves enc zeroed */
			if (st == TOK_EUNK && enc.tokens == NULL && enc.n == 0)
				continue;
			if (st != TOK_OK)
				abort();
			ids = malloc((enc.n > 0 ? enc.n : 1) * sizeof(*ids));
			if (ids == NULL)
				abort();
			check_encoding(t, &enc, count_chars(texts[i], len), ids, &out);
			free(ids);
			tok_encoding_release(&enc);
		}
	}
	buf_release(&out);
}

/* rc and *out as tokenizer_file.h promises; the tokenizer exercised, freed. */
static void finish(int rc, struct tokenizer *t, const char *err)
{
	if (rc == 0) {
		if (t == NULL)
			abort();
		exercise(t);
		tok_free(t);
	} else if (rc != -1 || t != NULL || err[0] == '\0') {
		abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *bytes = (const char *)data;
	const char *nul = memchr(bytes, '\0', size);
	struct tokenizer *t = NULL;
	char err[512] = "";
	int rc;

	rc = api_tokenizer_load_json(&t, bytes, size, "tokenizer.json", err, sizeof(err));
	finish(rc, t, err);
	if (nul != NULL) {
		size_t vlen = (size_t)(nul - bytes);

		t = NULL;
		err[0] = '\0';
		rc = api_tokenizer_load_gpt2(&t, bytes, vlen, "vocab.json", nul + 1,
					     size - vlen - 1, "merges.txt", err, sizeof(err));
		finish(rc, t, err);
	}
	return 0;
}
