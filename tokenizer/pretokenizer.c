/*
 * pretokenizer.c: the pre-tokenizers of a tokenizer.json (spec.h), cutting
 * each split that is still text into the splits the model will see, as
 * Hugging Face's pre_tokenizers/ and NormalizedString::split do.
 *
 * Every pre-tokenizer is a pattern and a behavior. A pattern finds matches
 * (a regex or literal, a character class where each character is a match of
 * its own, or Whitespace's runs); the cuts cover the split, each a match or
 * not (Invert flips them); the behavior folds the cuts (split_fold below, as
 * NormalizedString::split); the cuts left and not removed become splits,
 * empty ones dropped. ByteLevel and Metaspace rewrite a split before cutting
 * it, ByteLevel its pieces after.
 *
 * A pass over the splits builds a new list and swaps it in; splits that are
 * added tokens (id >= 0) pass through. The cut list is one scratch array for
 * the whole call; each match is found once, so every pre-tokenizer is linear
 * in the text (the regex engine's own matching aside).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytelevel.h"
#include "stages.h"
#include "unicode.h"

/* GPT-2's pattern (pre_tokenizers/byte_level.rs), used when use_regex. */
static const char GPT2_PATTERN[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* ---- compiling ------------------------------------------------------------- */

static enum tok_status compile_pattern(struct tok_pattern *p, const char *what, char *err,
				       size_t errlen)
{
	char why[200];

	if (p->re != NULL)
		return TOK_OK;
	p->re = tok_regex_compile(p->text, p->is_regex, why, sizeof why);
	if (p->re == NULL) {
		snprintf(err, errlen, "%s: pattern: %s", what, why);
		return strcmp(why, "out of memory") == 0 ? TOK_ENOMEM : TOK_ESPEC;
	}
	return TOK_OK;
}

enum tok_status tok_pretokenizer_compile(struct tok_pretokenizer *p, char *err, size_t errlen)
{
	switch (p->kind) {
	case TOK_PRE_SPLIT:
		if (p->pattern.text == NULL) {
			snprintf(err, errlen, "Split: pattern is required");
			return TOK_ESPEC;
		}
		return compile_pattern(&p->pattern, "Split", err, errlen);
	case TOK_PRE_BYTE_LEVEL:
		/* the spec's pattern field holds GPT-2's regex, compiled once */
		if (p->pattern.text == NULL) {
			p->pattern.text = malloc(sizeof GPT2_PATTERN);
			if (p->pattern.text == NULL) {
				snprintf(err, errlen, "ByteLevel: out of memory");
				return TOK_ENOMEM;
			}
			memcpy(p->pattern.text, GPT2_PATTERN, sizeof GPT2_PATTERN);
			p->pattern.is_regex = 1;
		}
		return compile_pattern(&p->pattern, "ByteLevel", err, errlen);
	case TOK_PRE_METASPACE:
		if (p->replacement == NULL || p->replacement[0] == '\0') {
			snprintf(err, errlen, "Metaspace: replacement must be one character");
			return TOK_ESPEC;
		}
		return TOK_OK;
	case TOK_PRE_SEQUENCE:
		for (size_t i = 0; i < p->n_items; i++) {
			char inner[200];
			enum tok_status st = tok_pretokenizer_compile(&p->items[i], inner, sizeof inner);
			if (st != TOK_OK) {
				snprintf(err, errlen, "Sequence: pretokenizers[%zu]: %s", i, inner);
				return st;
			}
		}
		return TOK_OK;
	default:
		return TOK_OK;
	}
}

/* ---- patterns ---------------------------------------------------------------- */

enum finder_kind { FIND_REGEX, FIND_CLASS, FIND_WORD_RUNS };

/* What finds the matches in a split. */
struct finder {
	enum finder_kind kind;
	const struct tok_regex *re; /* FIND_REGEX */
	struct tok_match *m;	    /* FIND_REGEX: the call's scratch */
	int (*is)(int32_t cp, int32_t arg); /* FIND_CLASS: each such char a match */
	int32_t arg;
};

static int is_space(int32_t cp, int32_t arg)
{
	(void)arg;
	return tok_uc_is_space(cp);
}

static int is_punct(int32_t cp, int32_t arg)
{
	(void)arg;
	return tok_uc_is_punct(cp);
}

static int is_numeric(int32_t cp, int32_t arg)
{
	(void)arg;
	return tok_uc_is_numeric(cp);
}

static int is_char(int32_t cp, int32_t arg)
{
	return cp == arg;
}

/* Whitespace's \w+|[^\w\s]+ with \w and \s as Oniguruma's (unicode.h). */
static int word_run(const char *s, size_t len, size_t from, size_t *ms, size_t *me)
{
	size_t at = from, clen;
	int32_t cp = 0;

	while (at < len && tok_uc_is_space(cp = tok_uc_decode(s + at, len - at, &clen)))
		at += clen;
	if (at >= len)
		return 0;
	int word = tok_uc_is_word(cp);
	*ms = at;
	at += clen;
	while (at < len) {
		cp = tok_uc_decode(s + at, len - at, &clen);
		if (word ? !tok_uc_is_word(cp) : (tok_uc_is_word(cp) || tok_uc_is_space(cp)))
			break;
		at += clen;
	}
	*me = at;
	return 1;
}

/* The next match at or after from: TOK_OK, TOK_EINVAL (none), TOK_ENOMEM
 * or TOK_ELIMIT (tok_regex_next). */
static enum tok_status find_next(const struct finder *f, const char *s, size_t len, size_t from,
				 size_t *ms, size_t *me)
{
	size_t clen;

	switch (f->kind) {
	case FIND_REGEX:
		return tok_regex_next(f->re, f->m, s, len, from, ms, me);
	case FIND_WORD_RUNS:
		return word_run(s, len, from, ms, me) ? TOK_OK : TOK_EINVAL;
	case FIND_CLASS:
		for (size_t at = from; at < len; at += clen) {
			if (f->is(tok_uc_decode(s + at, len - at, &clen), f->arg)) {
				*ms = at;
				*me = at + clen;
				return TOK_OK;
			}
		}
		return TOK_EINVAL;
	}
	return TOK_EINVAL;
}

/* ---- cuts and behaviors ------------------------------------------------------- */

/* 32-bit offsets (find_cuts refuses a split of 4 GiB or more): a text cut
 * into words has about two cuts a word, so they are 12 bytes, not 24. */
struct cut {
	uint32_t start, end;
	int flag; /* while finding: a match; after folding: to be removed */
};

struct cuts {
	struct cut *v; /* [n] */
	size_t n, cap;
};

static enum tok_status cuts_push(struct cuts *c, size_t start, size_t end, int flag)
{
	if (c->n == c->cap &&
	    tok_grow((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v, 16) != TOK_OK)
		return TOK_ENOMEM;
	c->v[c->n++] = (struct cut){ (uint32_t)start, (uint32_t)end, flag };
	return TOK_OK;
}

/* c := the cuts of s[0, len): the gaps (flag 0) and matches (flag 1) in
 * order, as Pattern::find_matches; with invert the flags are flipped. */
static enum tok_status find_cuts(const struct finder *f, int invert, const char *s, size_t len,
				 struct cuts *c)
{
	size_t prev = 0, ms, me;
	enum tok_status st = TOK_OK, found;

	c->n = 0;
	if (len > UINT32_MAX)
		return TOK_ENOMEM; /* past what a cut counts */
	while ((found = find_next(f, s, len, prev, &ms, &me)) == TOK_OK) {
		if (ms > prev)
			st = cuts_push(c, prev, ms, invert);
		if (st == TOK_OK)
			st = cuts_push(c, ms, me, !invert);
		if (st != TOK_OK)
			return st;
		prev = me;
	}
	if (found != TOK_EINVAL)
		return found; /* TOK_ENOMEM or TOK_ELIMIT, not the end of the matches */
	if (prev < len)
		return cuts_push(c, prev, len, invert);
	return TOK_OK;
}

/* Folds the cuts by behavior (NormalizedString::split's match): after it a
 * cut's flag says whether to remove it. In place, forward (or backward for
 * MergedWithNext, then moved to the front). */
static void split_fold(struct cuts *c, enum tok_split_behavior b)
{
	size_t w = 0;
	int prev_match = 0;

	switch (b) {
	case TOK_SPLIT_REMOVED:
		return; /* a match is removed: the flags say so already */
	case TOK_SPLIT_ISOLATED:
		for (size_t r = 0; r < c->n; r++)
			c->v[r].flag = 0;
		return;
	case TOK_SPLIT_MERGED_WITH_PREVIOUS:
	case TOK_SPLIT_CONTIGUOUS:
		for (size_t r = 0; r < c->n; r++) {
			struct cut x = c->v[r];
			int merge = b == TOK_SPLIT_CONTIGUOUS ? x.flag == prev_match
							      : (x.flag && !prev_match);
			if (merge && w > 0)
				c->v[w - 1].end = x.end;
			else
				c->v[w++] = (struct cut){x.start, x.end, 0};
			prev_match = x.flag;
		}
		c->n = w;
		return;
	case TOK_SPLIT_MERGED_WITH_NEXT:
		w = c->n;
		for (size_t r = c->n; r-- > 0;) {
			struct cut x = c->v[r];
			if (x.flag && !prev_match && w < c->n)
				c->v[w].start = x.start;
			else
				c->v[--w] = (struct cut){x.start, x.end, 0};
			prev_match = x.flag;
		}
		memmove(c->v, c->v + w, (c->n - w) * sizeof *c->v);
		c->n -= w;
		return;
	}
}

/* How a kept cut becomes a split: a plain slice, or ByteLevel's bytes. */
typedef enum tok_status (*emit_fn)(struct tok_splits *out, const struct tok_nstr *n,
				   size_t from, size_t to);

static enum tok_status emit_slice(struct tok_splits *out, const struct tok_nstr *n, size_t from,
				  size_t to)
{
	return tok_splits_push_slice(out, n, from, to, -1);
}

/* n uncut, as the one split it makes: taken over (n is left empty), not
 * copied. */
static enum tok_status emit_whole(struct tok_splits *out, struct tok_nstr *n)
{
	return tok_splits_push(out, n, -1);
}

/* Cuts n by finder and behavior and emits what is kept, in order (room
 * made for them first: the list grown once, not doubled and copied). A
 * plain slice of all of n (a split the finder did not cut) is n itself,
 * taken over rather than copied. */
static enum tok_status split_by(const struct finder *f, int invert, enum tok_split_behavior b,
				struct tok_nstr *n, struct cuts *c, emit_fn emit,
				struct tok_splits *out)
{
	enum tok_status st = find_cuts(f, invert, n->s, n->len, c);
	size_t kept = 0;

	if (st != TOK_OK)
		return st;
	split_fold(c, b);
	for (size_t i = 0; i < c->n; i++)
		kept += !c->v[i].flag && c->v[i].end > c->v[i].start;
	if (kept == 1 && c->n == 1 && c->v[0].start == 0 && c->v[0].end == n->len &&
	    emit == emit_slice)
		return emit_whole(out, n);
	if (tok_splits_reserve(out, kept) != TOK_OK)
		return TOK_ENOMEM;
	for (size_t i = 0; i < c->n && st == TOK_OK; i++)
		if (!c->v[i].flag && c->v[i].end > c->v[i].start)
			st = emit(out, n, c->v[i].start, c->v[i].end);
	return st;
}

/* ---- ByteLevel ------------------------------------------------------------------ */

/* Each byte of n[from, to) becomes its character of GPT-2's byte alphabet
 * (bytelevel.h), with its byte's span. The loops keep their pointers in
 * locals: a store through a char pointer may alias anything, and would make
 * the compiler reload every field of n and mapped after each byte. */
static enum tok_status emit_bytes(struct tok_splits *out, const struct tok_nstr *n, size_t from,
				  size_t to)
{
	const unsigned char *src = (const unsigned char *)n->s;
	const struct tok_span *src_align = n->align;
	struct tok_nstr mapped;
	size_t size = to - from, len = 0;
	char *dst;
	struct tok_span *dst_align;

	/* '!'..'~' stand for themselves; every other byte for a character
	 * of U+00A1..U+0143, two bytes of UTF-8 */
	for (size_t i = from; i < to; i++)
		size += (unsigned char)(src[i] - '!') > '~' - '!';
	if (tok_splits_alloc(out, size, &mapped) != TOK_OK)
		return TOK_ENOMEM;
	dst = mapped.s;
	dst_align = mapped.align;
	for (size_t i = from; i < to; i++) {
		unsigned char b = src[i];

		if ((unsigned char)(b - '!') <= '~' - '!') { /* most of a text: the byte itself */
			dst[len] = (char)b;
			dst_align[len++] = src_align[i];
			continue;
		}
		size_t clen = tok_byte_to_char(b, dst + len);
		dst_align[len] = src_align[i];
		if (clen == 2)
			dst_align[len + 1] = src_align[i];
		len += clen;
	}
	mapped.len = len;
	return tok_splits_push(out, &mapped, -1);
}

/* Prepends text (one character or more, all with the first char's span),
 * as NormalizedString::prepend. Nothing happens to an empty n. */
static enum tok_status prepend_text(struct tok_nstr *n, const char *text)
{
	struct tok_nstr out;
	enum tok_status st;
	size_t tlen = strlen(text);

	if (n->len == 0)
		return TOK_OK;
	tok_nstr_init(&out);
	st = tok_nstr_push(&out, text, tlen, n->align[0]);
	for (size_t i = 0; i < n->len && st == TOK_OK; i++)
		st = tok_nstr_push(&out, n->s + i, 1, n->align[i]);
	if (st == TOK_OK)
		tok_nstr_swap(n, &out);
	tok_nstr_release(&out);
	return st;
}

static enum tok_status byte_level(const struct tok_pretokenizer *p, struct tok_match *m,
				  struct tok_nstr *n, struct cuts *c, struct tok_splits *out)
{
	struct finder f = {.kind = FIND_REGEX, .re = p->pattern.re, .m = m};
	enum tok_status st = TOK_OK;

	if (p->add_prefix_space && n->len > 0 && n->s[0] != ' ')
		st = prepend_text(n, " ");
	if (st != TOK_OK)
		return st;
	if (!p->use_regex || f.re == NULL)
		return n->len > 0 ? emit_bytes(out, n, 0, n->len) : TOK_OK;
	return split_by(&f, 0, TOK_SPLIT_ISOLATED, n, c, emit_bytes, out);
}

/* ---- Metaspace ------------------------------------------------------------------- */

/* Every ' ' becomes the replacement, with the space's span. */
static enum tok_status replace_spaces(struct tok_nstr *n, const char *rep)
{
	struct tok_nstr out;
	enum tok_status st = TOK_OK;
	size_t rlen = strlen(rep);

	if (memchr(n->s, ' ', n->len) == NULL)
		return TOK_OK;
	tok_nstr_init(&out);
	st = tok_nstr_reserve(&out, n->len); /* grows if rep is longer than ' ' */
	for (size_t i = 0; i < n->len && st == TOK_OK;) {
		const char *sp = memchr(n->s + i, ' ', n->len - i);
		size_t at = sp == NULL ? n->len : (size_t)(sp - n->s);

		st = tok_nstr_append(&out, n, i, at);
		if (st == TOK_OK && at < n->len)
			st = tok_nstr_push(&out, rep, rlen, n->align[at]);
		i = at + 1;
	}
	if (st == TOK_OK)
		tok_nstr_swap(n, &out);
	tok_nstr_release(&out);
	return st;
}

/*
 * Metaspace (pre_tokenizers/metaspace.rs): spaces become the replacement;
 * the replacement is prepended unless the split starts with it, always, or
 * with prepend_scheme "first" only to a split that starts at the start of
 * the original text (offsets_original().0 == 0 there; a split after an added
 * token at the start does not); with split, cut before each replacement.
 */
static enum tok_status metaspace(const struct tok_pretokenizer *p, struct tok_nstr *n,
				 struct cuts *c, struct tok_splits *out)
{
	size_t clen, rlen = strlen(p->replacement);
	int32_t rep = tok_uc_decode(p->replacement, rlen, &clen);
	struct finder f = {.kind = FIND_CLASS, .is = is_char, .arg = rep};
	enum tok_status st = replace_spaces(n, p->replacement);
	int starts = n->len >= rlen && memcmp(n->s, p->replacement, rlen) == 0;

	if (st == TOK_OK && n->len > 0 && !starts &&
	    (p->prepend_scheme == TOK_PREPEND_ALWAYS ||
	     (p->prepend_scheme == TOK_PREPEND_FIRST && n->align[0].start == 0)))
		st = prepend_text(n, p->replacement);
	if (st != TOK_OK)
		return st;
	if (!p->split)
		return n->len > 0 ? emit_whole(out, n) : TOK_OK;
	return split_by(&f, 0, TOK_SPLIT_MERGED_WITH_NEXT, n, c, emit_slice, out);
}

/* ---- one pass over the splits ----------------------------------------------------- */

/* Cuts one text split n (which it may rewrite) into out. */
static enum tok_status pre_one(const struct tok_pretokenizer *p, int bert_pass,
			       struct tok_match *m, struct tok_nstr *n, struct cuts *c,
			       struct tok_splits *out)
{
	struct finder f = {.kind = FIND_CLASS, .is = is_space};

	switch (p->kind) {
	case TOK_PRE_BYTE_LEVEL:
		return byte_level(p, m, n, c, out);
	case TOK_PRE_METASPACE:
		return metaspace(p, n, c, out);
	case TOK_PRE_SPLIT:
		f = (struct finder){.kind = FIND_REGEX, .re = p->pattern.re, .m = m};
		if (f.re == NULL)
			return emit_whole(out, n);
		return split_by(&f, p->invert, p->behavior, n, c, emit_slice, out);
	case TOK_PRE_WHITESPACE:
		f = (struct finder){.kind = FIND_WORD_RUNS};
		return split_by(&f, 1, TOK_SPLIT_REMOVED, n, c, emit_slice, out);
	case TOK_PRE_WHITESPACE_SPLIT:
		return split_by(&f, 0, TOK_SPLIT_REMOVED, n, c, emit_slice, out);
	case TOK_PRE_BERT:
		if (bert_pass == 0)
			return split_by(&f, 0, TOK_SPLIT_REMOVED, n, c, emit_slice, out);
		f.is = is_punct;
		return split_by(&f, 0, TOK_SPLIT_ISOLATED, n, c, emit_slice, out);
	case TOK_PRE_PUNCTUATION:
		f.is = is_punct;
		return split_by(&f, 0, p->behavior, n, c, emit_slice, out);
	case TOK_PRE_DIGITS:
		f.is = is_numeric;
		return split_by(&f, 0,
				p->individual_digits ? TOK_SPLIT_ISOLATED : TOK_SPLIT_CONTIGUOUS, n,
				c, emit_slice, out);
	case TOK_PRE_SEQUENCE:
		break; /* apply() walks a Sequence */
	}
	return emit_whole(out, n);
}

/* One pre-tokenizer over every split: s is replaced by what it cuts. */
static enum tok_status pass(const struct tok_pretokenizer *p, int bert_pass, struct tok_match *m,
			    struct cuts *c, struct tok_splits *s)
{
	struct tok_splits out = {0};
	/* a split makes at least one (but for empty ones): room for as many
	 * made once, not doubled toward it (a pass that maps each split,
	 * as ByteLevel after a Split, then never grows) */
	enum tok_status st = tok_splits_reserve(&out, s->n);

	for (size_t i = 0; i < s->n && st == TOK_OK; i++) {
		struct tok_split *sp = &s->v[i];
		if (sp->id >= 0)
			st = tok_splits_push(&out, &sp->n, sp->id);
		else if (sp->n.len > 0)
			st = pre_one(p, bert_pass, m, &sp->n, c, &out);
	}
	if (st == TOK_OK) {
		tok_splits_adopt(&out, s); /* splits moved over may borrow from it */
		struct tok_splits old = *s;
		*s = out;
		out = old; /* released below, without the arena it gave away */
	}
	tok_splits_release(&out);
	return st;
}

static enum tok_status apply(const struct tok_pretokenizer *p, struct tok_match *m,
			     struct cuts *c, struct tok_splits *s)
{
	enum tok_status st = TOK_OK;

	if (p->kind == TOK_PRE_SEQUENCE) {
		for (size_t i = 0; i < p->n_items && st == TOK_OK; i++)
			st = apply(&p->items[i], m, c, s);
		return st;
	}
	st = pass(p, 0, m, c, s);
	if (st == TOK_OK && p->kind == TOK_PRE_BERT)
		st = pass(p, 1, m, c, s);
	return st;
}

enum tok_status tok_pretokenize(const struct tok_pretokenizer *spec, struct tok_splits *s)
{
	struct cuts c = {0};
	struct tok_match *m;
	enum tok_status st;

	if (spec == NULL)
		return TOK_OK;
	m = tok_match_new();
	if (m == NULL)
		return TOK_ENOMEM;
	st = apply(spec, m, &c, s);
	free(c.v);
	tok_match_free(m);
	return st;
}
