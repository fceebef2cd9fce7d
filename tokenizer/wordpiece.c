/*
 * wordpiece.c: the WordPiece model, as Hugging Face's models/wordpiece.
 *
 * Greedy longest match first: from the start of the word, the longest
 * stretch s[start, end) (ending on a character boundary) whose key is in
 * the vocabulary, the key being the stretch itself at the start of the word
 * and continuing_subword_prefix + stretch after it; then on from end. A word
 * of more than max_input_chars_per_word characters, or one with a stretch
 * no key covers, is the unknown token alone, spanning the whole word; when
 * the unknown token is named but not in the vocabulary, the encoding fails
 * (TOK_EUNK) as Hugging Face's does (MissingUnkToken).
 *
 * No key is longer than the longest vocabulary piece, so the search for
 * each stretch starts there rather than at the end of the word.
 *
 * Ownership: tok_wordpiece_build returns a model freed by
 * tok_wordpiece_free; it keeps no pointer into the spec.
 */
#include "stages.h"

#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

struct tok_wordpiece {
	struct tok_vocab *vocab;
	char *prefix; /* "" when none */
	size_t prefix_len;
	size_t max_chars;
	size_t max_piece; /* bytes of the longest vocabulary piece */
	int32_t unk_id;	  /* -1: the unknown token is not in the vocabulary */
	int unk_missing;  /* it is named but not there: an unknown word fails */
};

enum tok_status tok_wordpiece_build(const struct tok_model *m, struct tok_wordpiece **out,
				    char *err, size_t errlen)
{
	struct tok_wordpiece *w = calloc(1, sizeof *w);
	const char *prefix = m->continuing_subword_prefix == NULL ? "" : m->continuing_subword_prefix;
	enum tok_status st;

	*out = NULL;
	if (w == NULL)
		return TOK_ENOMEM;
	st = tok_vocab_from_model(m, &w->vocab, err, errlen);
	w->prefix_len = strlen(prefix);
	w->prefix = malloc(w->prefix_len + 1);
	if (st == TOK_OK && w->prefix == NULL)
		st = TOK_ENOMEM;
	if (st != TOK_OK) {
		tok_wordpiece_free(w);
		return st;
	}
	memcpy(w->prefix, prefix, w->prefix_len + 1);
	w->max_chars = m->max_input_chars_per_word;
	for (size_t i = 0; i < m->n_vocab; i++) {
		size_t n = strlen(m->vocab[i].piece);

		if (n > w->max_piece)
			w->max_piece = n;
	}
	w->unk_id = m->unk_token == NULL ? -1
					 : tok_vocab_get(w->vocab, m->unk_token, strlen(m->unk_token));
	w->unk_missing = m->unk_token != NULL && w->unk_id < 0;
	*out = w;
	return TOK_OK;
}

void tok_wordpiece_free(struct tok_wordpiece *w)
{
	if (w == NULL)
		return;
	tok_vocab_free(w->vocab);
	free(w->prefix);
	free(w);
}

/* The length of the character at s[i] (1 where s is not UTF-8). */
static size_t char_len(const char *s, size_t len, size_t i)
{
	size_t n = utf8_char((const unsigned char *)s + i, len - i);

	return n == 0 ? 1 : n;
}

static size_t count_chars(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i += char_len(s, len, i))
		n++;
	return n;
}

/* The largest character boundary of s in [floor, at] (floor when none). */
static size_t boundary_at_most(const char *s, size_t floor, size_t at)
{
	while (at > floor && ((unsigned char)s[at] & 0xc0) == 0x80)
		at--;
	return at;
}

/* The longest key from start: *end and the id, or -1 when none.
 * key has room for prefix_len + max_piece bytes. */
static int32_t longest_match(const struct tok_wordpiece *w, const char *s, size_t len,
			     size_t start, char *key, size_t *end)
{
	size_t pre = start > 0 ? w->prefix_len : 0;
	size_t e = len;

	if (pre > w->max_piece)
		return -1;
	if (e - start > w->max_piece - pre)
		e = boundary_at_most(s, start, start + (w->max_piece - pre));
	if (pre > 0)
		memcpy(key, w->prefix, pre);
	while (e > start) {
		int32_t id;

		memcpy(key + pre, s + start, e - start);
		id = tok_vocab_get(w->vocab, key, pre + e - start);
		if (id >= 0) {
			*end = e;
			return id;
		}
		e = boundary_at_most(s, start, e - 1);
	}
	return -1;
}

enum tok_status tok_wordpiece_tokenize(const struct tok_wordpiece *w, const char *s, size_t len,
				       struct tok_pieces *out)
{
	char key_stack[256];
	char *key = key_stack;
	size_t first = out->n;
	size_t start = 0;
	enum tok_status st = TOK_OK;

	if (len == 0)
		return TOK_OK;
	if (count_chars(s, len) > w->max_chars)
		goto unknown;
	if (w->prefix_len + w->max_piece > sizeof key_stack) {
		key = malloc(w->prefix_len + w->max_piece);
		if (key == NULL)
			return TOK_ENOMEM;
	}
	while (start < len && st == TOK_OK) {
		size_t end;
		int32_t id = longest_match(w, s, len, start, key, &end);

		if (id < 0)
			break;
		st = tok_pieces_push(out, id, start, end);
		start = end;
	}
	if (key != key_stack)
		free(key);
	if (st != TOK_OK || start == len)
		return st;
	out->n = first; /* not covered: the whole word is unknown */
unknown:
	if (w->unk_id < 0)
		return w->unk_missing ? TOK_EUNK : TOK_OK;
	return tok_pieces_push(out, w->unk_id, 0, len);
}
