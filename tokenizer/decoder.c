/*
 * decoder.c: the decoders (stages.h, "decoders"), as Hugging Face's
 * decode_chain on a list of strings (decoders/, the Decoder impls of
 * pre_tokenizers/byte_level.rs and metaspace.rs, normalizers/replace.rs).
 * Each decoder reads the list and writes a new one:
 *
 *   ByteLevel     every token's characters -> the bytes they stand for (a
 *                 token with a character outside the alphabet keeps its own
 *                 bytes), all joined into ONE string, invalid UTF-8 shown as
 *                 U+FFFD per maximal subpart (String::from_utf8_lossy)
 *   Metaspace     the replacement -> ' '; in the first token it is dropped
 *                 instead (every one of them) unless prepend_scheme is never
 *   WordPiece     tokens after the first lose the prefix, or gain a ' ';
 *                 cleanup then rewrites " ." -> "." and the like, in order
 *   ByteFallback  runs of "<0xHH>" -> their bytes, one string when they are
 *                 UTF-8, else one U+FFFD per byte
 *   Fuse          all tokens joined into one
 *   Strip         up to `start` leading and `stop` trailing `content` chars
 *   Replace       each match of the pattern -> content
 *   Sequence      each in order
 *
 * Ownership: a tok_strs owns its strings; every function leaves it
 * releasable, and on failure as it was.
 */
#include "stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytelevel.h"
#include "common/utf8.h"

#define REPLACEMENT_CHAR "\xef\xbf\xbd"

/* ---- lists of strings ------------------------------------------------------ */

void tok_strs_release(struct tok_strs *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	free(s->len);
	memset(s, 0, sizeof *s);
}

enum tok_status tok_strs_push(struct tok_strs *s, const char *p, size_t len)
{
	char *c;

	if (s->n == s->cap) {
		size_t cap = s->cap < 8 ? 8 : s->cap * 2;
		char **v;
		size_t *l;

		if (s->cap > SIZE_MAX / 2 / sizeof *v)
			return TOK_ENOMEM;
		v = realloc(s->v, cap * sizeof *v);
		if (v == NULL)
			return TOK_ENOMEM;
		s->v = v;
		l = realloc(s->len, cap * sizeof *l);
		if (l == NULL)
			return TOK_ENOMEM;
		s->len = l;
		s->cap = cap;
	}
	/* NUL-terminated, and zeroed past that as a regex subject wants */
	if (len > SIZE_MAX - TOK_SUBJECT_SLACK)
		return TOK_ENOMEM;
	c = calloc(1, len + TOK_SUBJECT_SLACK);
	if (c == NULL)
		return TOK_ENOMEM;
	if (len > 0)
		memcpy(c, p, len);
	s->v[s->n] = c;
	s->len[s->n] = len;
	s->n++;
	return TOK_OK;
}

/* Pushes the bytes of b (failed: TOK_ENOMEM) and empties it. */
static enum tok_status push_buf(struct tok_strs *s, struct buf *b)
{
	enum tok_status st = b->failed ? TOK_ENOMEM : tok_strs_push(s, b->data, b->len);

	buf_reset(b);
	return st;
}

/* The length of the character at s[i] (1 where s is not UTF-8). */
static size_t char_len(const char *s, size_t len, size_t i)
{
	size_t n = utf8_char((const unsigned char *)s + i, len - i);

	return n == 0 ? 1 : n;
}

static uint32_t char_cp(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c = n == 1 ? u[0] : (uint32_t)(u[0] & (0x7f >> n));

	for (size_t i = 1; i < n; i++)
		c = c << 6 | (u[i] & 0x3f);
	return c;
}

/* Appends s[0, len) with every invalid stretch as one U+FFFD. */
static void put_lossy(struct buf *b, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = utf8_char(u + i, len - i);

		if (n > 0) {
			buf_append(b, s + i, n);
			i += n;
		} else {
			buf_puts(b, REPLACEMENT_CHAR);
			i += utf8_bad_run(u + i, len - i);
		}
	}
}

/* ---- the decoders, one list to another ----------------------------------------- */

/* Whether every character of t stands for a byte. */
static int all_bytes(const char *t, size_t len)
{
	for (size_t i = 0; i < len;) {
		size_t n = utf8_char((const unsigned char *)t + i, len - i);

		if (n == 0 || tok_char_to_byte(char_cp(t + i, n)) < 0)
			return 0;
		i += n;
	}
	return 1;
}

/* Appends the bytes token t stands for, or t itself when one of its
 * characters stands for no byte (Hugging Face keeps such a token as is). */
static void put_token_bytes(struct buf *b, const char *t, size_t len)
{
	if (!all_bytes(t, len)) {
		buf_append(b, t, len);
		return;
	}
	for (size_t i = 0; i < len;) {
		size_t n = utf8_char((const unsigned char *)t + i, len - i);

		buf_putc(b, (char)tok_char_to_byte(char_cp(t + i, n)));
		i += n;
	}
}

static enum tok_status dec_byte_level(const struct tok_strs *in, struct tok_strs *out)
{
	struct buf bytes, text;
	enum tok_status st;

	buf_init(&bytes, SIZE_MAX / 2);
	buf_init(&text, SIZE_MAX / 2);
	for (size_t i = 0; i < in->n; i++)
		put_token_bytes(&bytes, in->v[i], in->len[i]);
	put_lossy(&text, bytes.data == NULL ? "" : bytes.data, bytes.len);
	st = bytes.failed ? TOK_ENOMEM : push_buf(out, &text);
	buf_release(&bytes);
	buf_release(&text);
	return st;
}

static enum tok_status dec_metaspace(const struct tok_decoder *d, const struct tok_strs *in,
				     struct tok_strs *out, int display)
{
	const char *rep = d->replacement == NULL ? "\xe2\x96\x81" : d->replacement;
	size_t rl = strlen(rep);
	struct buf b;
	enum tok_status st = TOK_OK;

	buf_init(&b, SIZE_MAX / 2);
	for (size_t i = 0; i < in->n && st == TOK_OK; i++) {
		const char *t = in->v[i];
		int drop = i == 0 && !display && d->prepend_scheme != TOK_PREPEND_NEVER;

		for (size_t k = 0; k < in->len[i];) {
			size_t n = char_len(t, in->len[i], k);

			if (rl > 0 && n == rl && memcmp(t + k, rep, rl) == 0) {
				if (!drop)
					buf_putc(&b, ' ');
			} else {
				buf_append(&b, t + k, n);
			}
			k += n;
		}
		st = push_buf(out, &b);
	}
	buf_release(&b);
	return st;
}

/* Appends s with every `from` replaced by `to` (left to right, no overlap). */
/* Appends s[0, len) with each occurrence of from -> to; -1 as soon as b
 * holds more than max bytes (the rest not appended), else 0. */
static int put_replaced(struct buf *b, const char *s, size_t len, const char *from,
			const char *to, size_t max)
{
	size_t fl = strlen(from);

	for (size_t i = 0; i < len;) {
		if (fl > 0 && len - i >= fl && memcmp(s + i, from, fl) == 0) {
			buf_puts(b, to);
			i += fl;
			if (b->len > max)
				return -1;
		} else {
			buf_putc(b, s[i++]);
		}
	}
	return 0;
}

/* Hugging Face's wordpiece::cleanup, one replacement after another. */
static enum tok_status cleanup(struct buf *b)
{
	static const char *const pairs[][2] = {
		{ " .", "." },	     { " ?", "?" },	  { " !", "!" },   { " ,", "," },
		{ " ' ", "'" },	     { " n't", "n't" },	  { " 'm", "'m" }, { " do not", " don't" },
		{ " 's", "'s" },     { " 've", "'ve" },	  { " 're", "'re" },
	};
	struct buf tmp;

	buf_init(&tmp, SIZE_MAX / 2);
	for (size_t p = 0; p < sizeof pairs / sizeof pairs[0] && !b->failed; p++) {
		struct buf swap;

		buf_reset(&tmp);
		(void)put_replaced(&tmp, b->data == NULL ? "" : b->data, b->len, pairs[p][0],
				   pairs[p][1], SIZE_MAX); /* each pair shortens the text */
		if (tmp.failed)
			b->failed = 1;
		swap = *b;
		*b = tmp;
		tmp = swap;
	}
	if (tmp.failed)
		b->failed = 1;
	buf_release(&tmp);
	return b->failed ? TOK_ENOMEM : TOK_OK;
}

static enum tok_status dec_wordpiece(const struct tok_decoder *d, const struct tok_strs *in,
				     struct tok_strs *out)
{
	const char *prefix = d->prefix == NULL ? "##" : d->prefix;
	size_t pl = strlen(prefix);
	struct buf b;
	enum tok_status st = TOK_OK;

	buf_init(&b, SIZE_MAX / 2);
	for (size_t i = 0; i < in->n && st == TOK_OK; i++) {
		const char *t = in->v[i];
		size_t len = in->len[i];

		if (i > 0 && len >= pl && memcmp(t, prefix, pl) == 0) {
			t += pl;
			len -= pl;
		} else if (i > 0) {
			buf_putc(&b, ' ');
		}
		buf_append(&b, t, len);
		if (d->cleanup)
			st = cleanup(&b);
		if (st == TOK_OK)
			st = push_buf(out, &b);
	}
	buf_release(&b);
	return st;
}

/* The byte of a "<0xHH>" token (Rust's u8::from_str_radix on HH, which
 * takes a '+' sign too), or -1. */
static int fallback_byte(const char *t, size_t len)
{
	int v = 0;

	if (len != 6 || memcmp(t, "<0x", 3) != 0 || t[5] != '>')
		return -1;
	for (size_t i = 3; i < 5; i++) {
		char c = t[i];
		int h = c >= '0' && c <= '9' ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;

		if (i == 3 && c == '+')
			continue;
		if (h < 0)
			return -1;
		v = v * 16 + h;
	}
	return v;
}

/* Pushes a run of fallback bytes: one string, or U+FFFD per byte. */
static enum tok_status flush_bytes(struct buf *run, struct tok_strs *out)
{
	enum tok_status st = TOK_OK;
	size_t n = run->len;

	if (n == 0)
		return TOK_OK;
	if (run->failed)
		return TOK_ENOMEM;
	if (utf8_check(run->data, n) == n)
		return push_buf(out, run);
	for (size_t i = 0; i < n && st == TOK_OK; i++)
		st = tok_strs_push(out, REPLACEMENT_CHAR, 3);
	buf_reset(run);
	return st;
}

static enum tok_status dec_byte_fallback(const struct tok_strs *in, struct tok_strs *out)
{
	struct buf run;
	enum tok_status st = TOK_OK;

	buf_init(&run, SIZE_MAX / 2);
	for (size_t i = 0; i < in->n && st == TOK_OK; i++) {
		int byte = fallback_byte(in->v[i], in->len[i]);

		if (byte >= 0) {
			buf_putc(&run, (char)byte);
			continue;
		}
		st = flush_bytes(&run, out);
		if (st == TOK_OK)
			st = tok_strs_push(out, in->v[i], in->len[i]);
	}
	if (st == TOK_OK)
		st = flush_bytes(&run, out);
	buf_release(&run);
	return st;
}

static enum tok_status dec_fuse(const struct tok_strs *in, struct tok_strs *out)
{
	struct buf b;
	enum tok_status st;

	buf_init(&b, SIZE_MAX / 2);
	for (size_t i = 0; i < in->n; i++)
		buf_append(&b, in->v[i], in->len[i]);
	st = push_buf(out, &b);
	buf_release(&b);
	return st;
}

static enum tok_status dec_strip(const struct tok_decoder *d, const struct tok_strs *in,
				 struct tok_strs *out)
{
	const char *c = d->content == NULL ? " " : d->content;
	size_t cl = strlen(c);
	enum tok_status st = TOK_OK;

	for (size_t i = 0; i < in->n && st == TOK_OK; i++) {
		const char *t = in->v[i];
		size_t a = 0, b = in->len[i];

		for (size_t k = 0; k < d->strip_start && cl > 0 && b - a >= cl &&
				   memcmp(t + a, c, cl) == 0; k++)
			a += cl;
		for (size_t k = 0; k < d->strip_stop && cl > 0 && b - a >= cl &&
				   memcmp(t + b - cl, c, cl) == 0; k++)
			b -= cl;
		st = tok_strs_push(out, t + a, b - a);
	}
	return st;
}

/* Appends t with each match of the Replace decoder's pattern -> content;
 * TOK_ETOOLONG as soon as b holds more than max bytes. */
static enum tok_status replace_token(const struct tok_decoder *d, struct tok_match *m,
				     const char *t, size_t len, struct buf *b, size_t max)
{
	const char *content = d->content == NULL ? "" : d->content;
	size_t from = 0, ms, me;

	if (!d->pattern.is_regex) {
		if (put_replaced(b, t, len, d->pattern.text == NULL ? "" : d->pattern.text, content,
				 max) != 0)
			return TOK_ETOOLONG;
		return TOK_OK;
	}
	if (d->pattern.re == NULL || m == NULL || utf8_check(t, len) != len) {
		buf_append(b, t, len); /* not compiled, or not text PCRE2 may read */
		return d->pattern.re != NULL && m == NULL ? TOK_ENOMEM : TOK_OK;
	}
	for (;;) {
		enum tok_status st = tok_regex_next(d->pattern.re, m, t, len, from, &ms, &me);

		if (st == TOK_EINVAL)
			break;
		if (st != TOK_OK)
			return st;
		buf_append(b, t + from, ms - from);
		buf_puts(b, content);
		if (b->len > max)
			return TOK_ETOOLONG;
		from = me;
	}
	buf_append(b, t + from, len - from);
	return TOK_OK;
}

/* Each string with its matches replaced, the strings holding at most max
 * bytes in all (TOK_ETOOLONG past it): the content is the file's to
 * choose, and a Sequence of Replaces feeds each one's output to the next. */
static enum tok_status dec_replace(const struct tok_decoder *d, const struct tok_strs *in,
				   struct tok_strs *out, size_t max)
{
	struct tok_match *m = d->pattern.is_regex ? tok_match_new() : NULL;
	size_t written = 0;
	struct buf b;
	enum tok_status st = TOK_OK;

	buf_init(&b, SIZE_MAX / 2);
	for (size_t i = 0; i < in->n && st == TOK_OK; i++) {
		st = replace_token(d, m, in->v[i], in->len[i], &b, max - written);
		if (st == TOK_OK && b.len > max - written)
			st = TOK_ETOOLONG; /* the part after the last match */
		written += st == TOK_OK ? b.len : 0;
		if (st == TOK_OK)
			st = push_buf(out, &b);
	}
	buf_release(&b);
	if (m != NULL)
		tok_match_free(m);
	return st;
}

/* ---- the chain ------------------------------------------------------------------- */

static enum tok_status chain(const struct tok_decoder *d, struct tok_strs *s, int display,
			     size_t max);

/* s := one decoder's output on s, at most max bytes in all where it may
 * grow (Replace: the others keep or shorten the text, within a few bytes a
 * string). */
static enum tok_status apply_one(const struct tok_decoder *d, struct tok_strs *s, int display,
				 size_t max)
{
	struct tok_strs out = { 0 };
	enum tok_status st;

	switch (d->kind) {
	case TOK_DEC_BYTE_LEVEL:
		st = dec_byte_level(s, &out);
		break;
	case TOK_DEC_METASPACE:
		st = dec_metaspace(d, s, &out, display);
		break;
	case TOK_DEC_WORDPIECE:
		st = dec_wordpiece(d, s, &out);
		break;
	case TOK_DEC_BYTE_FALLBACK:
		st = dec_byte_fallback(s, &out);
		break;
	case TOK_DEC_FUSE:
		st = dec_fuse(s, &out);
		break;
	case TOK_DEC_STRIP:
		if (display)
			return TOK_OK;
		st = dec_strip(d, s, &out);
		break;
	case TOK_DEC_REPLACE:
		st = dec_replace(d, s, &out, max);
		break;
	case TOK_DEC_SEQUENCE:
		return chain(d, s, display, max);
	default:
		return TOK_OK;
	}
	if (st != TOK_OK) {
		tok_strs_release(&out);
		return st;
	}
	tok_strs_release(s);
	*s = out;
	return TOK_OK;
}

static enum tok_status chain(const struct tok_decoder *d, struct tok_strs *s, int display,
			     size_t max)
{
	enum tok_status st = TOK_OK;

	if (d == NULL)
		return TOK_OK;
	if (d->kind != TOK_DEC_SEQUENCE)
		return apply_one(d, s, display, max);
	for (size_t i = 0; i < d->n_items && st == TOK_OK; i++)
		st = apply_one(&d->items[i], s, display, max);
	return st;
}

/* How long the strings of s may grow through a chain: as a normalizer's
 * text, TOK_NORM_GROWTH times their bytes plus TOK_NORM_SLACK (tokenizer.h). */
static size_t chain_bound(const struct tok_strs *s)
{
	size_t total = 0;

	for (size_t i = 0; i < s->n; i++)
		total += s->len[i]; /* each in memory: the sum fits */
	if (total > (SIZE_MAX - TOK_NORM_SLACK) / TOK_NORM_GROWTH)
		return SIZE_MAX;
	return total * TOK_NORM_GROWTH + TOK_NORM_SLACK;
}

enum tok_status tok_decode_chain(const struct tok_decoder *d, struct tok_strs *s)
{
	return chain(d, s, 0, chain_bound(s));
}

enum tok_status tok_display_chain(const struct tok_decoder *d, struct tok_strs *s)
{
	return chain(d, s, 1, chain_bound(s));
}

enum tok_status tok_decoder_compile(struct tok_decoder *d, char *err, size_t errlen)
{
	if (d == NULL)
		return TOK_OK;
	if (d->kind == TOK_DEC_REPLACE && d->pattern.is_regex && d->pattern.re == NULL) {
		char msg[256] = "";

		d->pattern.re = tok_regex_compile(d->pattern.text == NULL ? "" : d->pattern.text, 1,
						  msg, sizeof msg);
		if (d->pattern.re == NULL) {
			snprintf(err, errlen, "decoder: Replace: pattern: %s", msg);
			return TOK_ESPEC;
		}
	}
	for (size_t i = 0; i < d->n_items; i++) {
		enum tok_status st = tok_decoder_compile(&d->items[i], err, errlen);

		if (st != TOK_OK)
			return st;
	}
	return TOK_OK;
}
