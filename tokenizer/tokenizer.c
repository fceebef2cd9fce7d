/*
 * tokenizer.c: the pipeline (stages.h) put together: building a tokenizer
 * from its spec, encoding text to tokens with offsets, decoding ids to text.
 */
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "stages.h"

/* ---- building ------------------------------------------------------------ */

static void set_err(char *err, size_t errlen, const char *msg)
{
	if (errlen > 0) {
		strncpy(err, msg, errlen - 1);
		err[errlen - 1] = '\0';
	}
}

/* One past the largest id of the model and the added tokens. */
static int32_t ids_end(const struct tok_spec *s)
{
	int32_t end = 0;

	for (size_t i = 0; i < s->model.n_vocab; i++)
		if (s->model.vocab[i].id >= end)
			end = s->model.vocab[i].id + 1;
	for (size_t i = 0; i < s->n_added; i++)
		if (s->added[i].id >= end)
			end = s->added[i].id + 1;
	return end;
}

/* pieces[id] for every id: the model's pieces, then the added tokens over
 * them (an added token names its id, as in Hugging Face's id_to_token). */
static enum tok_status build_pieces(struct tokenizer *t, char *err, size_t errlen)
{
	const struct tok_spec *s = &t->spec;
	size_t end;

	t->vocab_end = ids_end(s);
	end = (size_t)t->vocab_end;
	t->pieces = calloc(end > 0 ? end : 1, sizeof *t->pieces);
	t->is_special = calloc(end > 0 ? end : 1, 1);
	t->is_added = calloc(end > 0 ? end : 1, 1);
	/* sized by the pieces it will hold, not by the largest id: one piece
	 * at id 2^24 - 1 made it 512 MiB of slots, all written */
	t->piece_ids = tok_vocab_new(s->model.n_vocab + s->n_added);
	if (t->pieces == NULL || t->is_special == NULL || t->is_added == NULL || t->piece_ids == NULL)
		return TOK_ENOMEM;
	for (size_t i = 0; i < s->model.n_vocab; i++)
		t->pieces[s->model.vocab[i].id] = s->model.vocab[i].piece;
	for (size_t i = 0; i < s->n_added; i++) {
		t->pieces[s->added[i].id] = s->added[i].content;
		t->is_special[s->added[i].id] = (uint8_t)(s->added[i].special != 0);
		t->is_added[s->added[i].id] = 1;
	}
	/* the lookup by string: added tokens first, as Hugging Face's token_to_id */
	for (size_t i = 0; i < s->n_added; i++) {
		const char *c = s->added[i].content;
		if (tok_vocab_get(t->piece_ids, c, strlen(c)) < 0 &&
		    tok_vocab_put(t->piece_ids, c, strlen(c), s->added[i].id) == TOK_ENOMEM)
			return TOK_ENOMEM;
	}
	for (int32_t id = 0; id < t->vocab_end; id++) {
		const char *p = t->pieces[id];
		if (p != NULL && tok_vocab_get(t->piece_ids, p, strlen(p)) < 0 &&
		    tok_vocab_put(t->piece_ids, p, strlen(p), id) == TOK_ENOMEM)
			return TOK_ENOMEM;
	}
	(void)err;
	(void)errlen;
	return TOK_OK;
}

/* Ids must be >= 0 and below a bound that keeps the tables small. */
static enum tok_status check_ids(const struct tok_spec *s, char *err, size_t errlen)
{
	const int32_t max = (int32_t)1 << 24;

	for (size_t i = 0; i < s->model.n_vocab; i++)
		if (s->model.vocab[i].id < 0 || s->model.vocab[i].id >= max) {
			set_err(err, errlen, "model: vocab: an id is negative or past 2^24");
			return TOK_ESPEC;
		}
	for (size_t i = 0; i < s->n_added; i++)
		if (s->added[i].id < 0 || s->added[i].id >= max) {
			set_err(err, errlen, "added_tokens: an id is negative or past 2^24");
			return TOK_ESPEC;
		}
	return TOK_OK;
}

/* An id a post-processor adds must be one of the vocabulary's, so that
 * every token of an encoding has its piece (Hugging Face takes the file's
 * word for it; a file whose template names an id past the vocabulary would
 * make tokens no decoder knows). */
static enum tok_status check_post_id(const struct tokenizer *t, const char *what,
				     const char *name, int32_t id, char *err, size_t errlen)
{
	char msg[256];

	if (tok_piece(t, id) != NULL)
		return TOK_OK;
	snprintf(msg, sizeof msg, "post_processor: %s '%s' has id %d, which is not in the vocabulary",
		 what, name != NULL ? name : "", (int)id);
	set_err(err, errlen, msg);
	return TOK_ESPEC;
}

static enum tok_status check_post_ids(const struct tokenizer *t, const struct tok_post *p,
				      char *err, size_t errlen)
{
	enum tok_status st = TOK_OK;

	if (p == NULL)
		return TOK_OK;
	for (size_t i = 0; st == TOK_OK && i < p->n_specials; i++)
		for (size_t j = 0; st == TOK_OK && j < p->specials[i].n; j++)
			st = check_post_id(t, "special token", p->specials[i].name,
					   p->specials[i].ids[j], err, errlen);
	if (st == TOK_OK && (p->kind == TOK_POST_BERT || p->kind == TOK_POST_ROBERTA)) {
		st = check_post_id(t, "cls", p->cls, p->cls_id, err, errlen);
		if (st == TOK_OK)
			st = check_post_id(t, "sep", p->sep, p->sep_id, err, errlen);
	}
	for (size_t i = 0; st == TOK_OK && i < p->n_items; i++)
		st = check_post_ids(t, &p->items[i], err, errlen);
	return st;
}

/* Compiles each part in pipeline order; the first failure is the answer. */
static enum tok_status build_parts(struct tokenizer *t, char *err, size_t errlen)
{
	struct tok_spec *s = &t->spec;
	enum tok_status st = check_ids(s, err, errlen);

	if (st == TOK_OK && s->normalizer != NULL)
		st = tok_normalizer_compile(s->normalizer, err, errlen);
	if (st == TOK_OK && s->pretokenizer != NULL)
		st = tok_pretokenizer_compile(s->pretokenizer, err, errlen);
	if (st == TOK_OK)
		st = tok_model_build(&s->model, &t->model, err, errlen);
	if (st == TOK_OK)
		st = build_pieces(t, err, errlen);
	if (st == TOK_OK)
		st = tok_added_build(s->added, s->n_added, s->normalizer, &t->added, err, errlen);
	if (st == TOK_OK && s->post != NULL)
		st = tok_post_check(s->post, err, errlen);
	if (st == TOK_OK)
		st = check_post_ids(t, s->post, err, errlen);
	if (st == TOK_OK && s->decoder != NULL)
		st = tok_decoder_compile(s->decoder, err, errlen);
	if (st == TOK_ENOMEM)
		set_err(err, errlen, "out of memory");
	return st;
}

enum tok_status tok_build(struct tok_spec *spec, struct tokenizer **out, char *err, size_t errlen)
{
	struct tokenizer *t = calloc(1, sizeof *t);
	enum tok_status st;

	*out = NULL;
	if (t == NULL) {
		tok_spec_release(spec);
		set_err(err, errlen, "out of memory");
		return TOK_ENOMEM;
	}
	t->spec = *spec;
	memset(spec, 0, sizeof *spec);
	st = build_parts(t, err, errlen);
	if (st != TOK_OK) {
		tok_free(t);
		return st;
	}
	*out = t;
	return TOK_OK;
}

void tok_free(struct tokenizer *t)
{
	if (t == NULL)
		return;
	tok_model_free(t->model);
	tok_added_free(t->added);
	tok_vocab_free(t->piece_ids);
	free(t->pieces);
	free(t->is_special);
	free(t->is_added);
	tok_spec_release(&t->spec);
	free(t);
}

const char *tok_piece(const struct tokenizer *t, int32_t id)
{
	return id >= 0 && id < t->vocab_end ? t->pieces[id] : NULL;
}

int32_t tok_vocab_end(const struct tokenizer *t)
{
	return t->vocab_end;
}

int32_t tok_token_to_id(const struct tokenizer *t, const char *s, size_t len)
{
	return tok_vocab_get(t->piece_ids, s, len);
}

/* ---- encoding ------------------------------------------------------------ */

/* Text -> splits, each normalized, with the added tokens cut out, then
 * pre-tokenized: what the model sees, word by word. */
static enum tok_status split_text(const struct tokenizer *t, const char *text, size_t len,
				  struct tok_splits *s)
{
	struct tok_nstr whole;
	enum tok_status st;

	tok_nstr_init(&whole);
	st = tok_nstr_from_text(&whole, text, len);
	if (st == TOK_OK)
		st = tok_splits_push(s, &whole, -1);
	if (st == TOK_OK)
		st = tok_added_split(t->added, 0, s);
	for (size_t i = 0; st == TOK_OK && i < s->n; i++)
		if (s->v[i].id < 0 && t->spec.normalizer != NULL)
			st = tok_normalize(t->spec.normalizer, &s->v[i].n);
	if (st == TOK_OK)
		st = tok_added_split(t->added, 1, s);
	if (st == TOK_OK && t->spec.pretokenizer != NULL)
		st = tok_pretokenize(t->spec.pretokenizer, s);
	tok_nstr_release(&whole);
	return st;
}

/* A token over normalized bytes [from, to) of a split: the union of their
 * original spans (bytes of the original text). */
static struct tok_token token_at(const struct tokenizer *t, const struct tok_nstr *n, int32_t id,
				 size_t from, size_t to)
{
	struct tok_token tk = { .id = id, .piece = tok_piece(t, id) };

	if (to > from) {
		tk.start = n->align[from].start;
		tk.end = n->align[to - 1].end;
	}
	tk.special = id >= 0 && id < t->vocab_end && t->is_special[id];
	return tk;
}

/*
 * A text this long gets a word cache for its call (subword.c's: 8 KiB of
 * slots to start with, growing with the words), as a text of a few lines
 * already says many of its words again; a shorter one would spend more on
 * the cache than it saves.
 */
#define WORD_CACHE_MIN_TEXT ((size_t)1 << 10)

/* The model's tokens of every split still to tokenize; added tokens as they are. */
static enum tok_status model_tokens(const struct tokenizer *t, const struct tok_splits *s,
				    size_t text_len, struct tok_draft *d)
{
	struct tok_model_cache *cache =
		text_len >= WORD_CACHE_MIN_TEXT ? tok_model_cache_new() : NULL;
	struct tok_pieces pieces = { 0 };
	enum tok_status st = TOK_OK;

	for (size_t i = 0; st == TOK_OK && i < s->n; i++) {
		const struct tok_split *sp = &s->v[i];
		if (sp->n.len == 0)
			continue;
		if (sp->id >= 0) {
			st = tok_draft_push(d, token_at(t, &sp->n, sp->id, 0, sp->n.len));
			continue;
		}
		pieces.n = 0;
		st = tok_model_tokenize_cached(t->model, cache, sp->n.s, sp->n.len, &pieces);
		for (size_t j = 0; st == TOK_OK && j < pieces.n; j++) {
			const struct tok_piece *p = &pieces.v[j];
			st = tok_draft_push(d, token_at(t, &sp->n, p->id, p->start, p->end));
		}
	}
	tok_pieces_release(&pieces);
	tok_model_cache_free(cache);
	return st;
}

/*
 * Byte offsets -> code point offsets. One cursor walks the text: offsets
 * rise, but for steps back as short as the token just passed (the pieces of
 * one character each span all of it), so the walk is linear. (0, 0) of an
 * added special token leaves it alone.
 */
struct cp_cursor {
	const unsigned char *text;
	size_t byte, cp;
};

static size_t cp_at(struct cp_cursor *c, size_t byte)
{
	for (; c->byte < byte; c->byte++)
		c->cp += (c->text[c->byte] & 0xc0) != 0x80;
	while (c->byte > byte) {
		c->byte--;
		c->cp -= (c->text[c->byte] & 0xc0) != 0x80;
	}
	return c->cp;
}

/* A token that starts where the one before started (the byte-level pieces
 * of one character all span it) takes that start's answer, so the cursor
 * need not walk back over the character and forward again. */
static void offsets_to_code_points(const char *text, struct tok_draft *d)
{
	struct cp_cursor c = { (const unsigned char *)text, 0, 0 };
	size_t last_byte = 0, last_cp = 0; /* the previous token's start */

	for (size_t i = 0; i < d->n; i++) {
		struct tok_token *tk = &d->v[i];
		size_t start = tk->start;

		if (tk->start == 0 && tk->end == 0)
			continue;
		tk->start = start == last_byte ? last_cp : cp_at(&c, start);
		last_byte = start;
		last_cp = tk->start;
		tk->end = cp_at(&c, tk->end);
	}
}

/* 1 when no byte of text[0, len) is above 0x7f, looked at 8 bytes a step:
 * such a text is valid UTF-8 and its byte offsets are code point offsets,
 * so tok_encode skips both walks that otherwise look at every byte. */
static int all_ascii(const char *text, size_t len)
{
	const uint64_t high = 0x8080808080808080ull;
	uint64_t acc = 0;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, text + i, 8);
		acc |= w;
	}
	for (; i < len; i++)
		acc |= (unsigned char)text[i];
	return (acc & high) == 0;
}

enum tok_status tok_encode(const struct tokenizer *t, const char *text, size_t len,
			   int add_special, struct tok_encoding *enc, size_t *bad_byte)
{
	struct tok_splits splits = { 0 };
	struct tok_draft d = { 0 };
	int ascii = all_ascii(text, len);
	size_t bad = ascii ? len : utf8_check(text, len);
	enum tok_status st;

	memset(enc, 0, sizeof *enc);
	if (len > UINT32_MAX)
		return TOK_ENOMEM; /* a span (stages.h) counts bytes in 32 bits */
	if (bad < len) {
		if (bad_byte != NULL)
			*bad_byte = bad;
		return TOK_EINVAL;
	}
	st = split_text(t, text, len, &splits);
	if (st == TOK_OK)
		st = model_tokens(t, &splits, len, &d);
	tok_splits_release(&splits); /* before post-processing copies the draft */
	if (st == TOK_OK && t->spec.post != NULL)
		st = tok_post_apply(t->spec.post, t, text, len, add_special, &d);
	if (st != TOK_OK) {
		free(d.v);
		return st;
	}
	if (!ascii)
		offsets_to_code_points(text, &d);
	enc->tokens = d.v;
	enc->n = d.n;
	return TOK_OK;
}

void tok_encoding_release(struct tok_encoding *enc)
{
	free(enc->tokens);
	memset(enc, 0, sizeof *enc);
}

/* ---- decoding ------------------------------------------------------------ */

/* Appends s to out with each invalid stretch as one U+FFFD. */
static void put_lossy(struct buf *out, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		size_t n = utf8_char(u + i, len - i);
		if (n > 0) {
			buf_append(out, s + i, n);
			i += n;
		} else {
			buf_append(out, "\xef\xbf\xbd", 3);
			i += utf8_bad_run(u + i, len - i);
		}
	}
}

/* The decoder's strings, joined: with no decoder Hugging Face joins the
 * tokens with spaces. */
static enum tok_status join_decoded(const struct tokenizer *t, struct tok_strs *s,
				    struct buf *out)
{
	enum tok_status st = tok_decode_chain(t->spec.decoder, s);

	if (st != TOK_OK)
		return st;
	for (size_t i = 0; i < s->n; i++) {
		if (t->spec.decoder == NULL && i > 0)
			buf_putc(out, ' ');
		put_lossy(out, s->v[i], s->len[i]);
	}
	return out->failed ? TOK_ENOMEM : TOK_OK;
}

enum tok_status tok_decode(const struct tokenizer *t, const int32_t *ids, size_t n,
			   int skip_special, struct buf *out, size_t *bad_index)
{
	struct tok_strs s = { 0 };
	enum tok_status st = TOK_OK;

	for (size_t i = 0; st == TOK_OK && i < n; i++) {
		const char *p = tok_piece(t, ids[i]);
		if (p == NULL) {
			if (bad_index != NULL)
				*bad_index = i;
			st = TOK_EID;
		} else if (!(skip_special && t->is_special[ids[i]])) {
			st = tok_strs_push(&s, p, strlen(p));
		}
	}
	if (st == TOK_OK)
		st = join_decoded(t, &s, out);
	tok_strs_release(&s);
	return st;
}

enum tok_status tok_display(const struct tokenizer *t, int32_t id, struct buf *out)
{
	struct tok_strs s = { 0 };
	const char *p = tok_piece(t, id);
	enum tok_status st;

	if (p == NULL)
		return TOK_EID;
	st = tok_strs_push(&s, p, strlen(p));
	if (st == TOK_OK)
		st = tok_display_chain(t->spec.decoder, &s);
	for (size_t i = 0; st == TOK_OK && i < s.n; i++)
		put_lossy(out, s.v[i], s.len[i]);
	tok_strs_release(&s);
	if (st == TOK_OK && out->failed)
		st = TOK_ENOMEM;
	return st;
}
