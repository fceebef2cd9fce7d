/*
 * normalizer.c: the normalizers of a tokenizer.json (spec.h) on a normalized
 * string with alignments (stages.h), as Hugging Face's normalizers/ do them
 * through NormalizedString::transform:
 *
 *   - a character that becomes other characters gives each of them its span
 *     (lowercase 'İ' -> "i̇", both spanning 'İ');
 *   - BERT's spaces around a CJK ideograph take the ideograph's span, the
 *     one before it too: Hugging Face's transform gets (' ', 0), (c, 1),
 *     (' ', 1), so the first space replaces c (its alignment) and c and the
 *     second space are insertions after it (the alignment before them, c's);
 *   - a removed character leaves nothing;
 *   - Prepend's string takes the span of the first character;
 *   - Replace's content takes the span of the last character of the match
 *     (transform_range gives inserted characters the alignment before them);
 *   - the Unicode forms work per segment (unicode.h), a composition spanning
 *     all it composes.
 *
 * Every step reads the string and writes a new one, then swaps it in; on
 * failure the input is left as it was.
 */
#include <stdio.h>
#include <string.h>

#include "stages.h"
#include "unicode.h"

/* ---- compiling ------------------------------------------------------------- */

enum tok_status tok_normalizer_compile(struct tok_normalizer *n, char *err, size_t errlen)
{
	if (n->kind == TOK_NORM_NFC || n->kind == TOK_NORM_NFKC)
		tok_uc_prepare_forms(); /* at load, not on the first request */
	if (n->kind == TOK_NORM_REPLACE && n->pattern.re == NULL) {
		char why[200];
		if (n->pattern.text == NULL || n->content == NULL) {
			snprintf(err, errlen, "Replace: pattern and content are required");
			return TOK_ESPEC;
		}
		n->pattern.re = tok_regex_compile(n->pattern.text, n->pattern.is_regex, why, sizeof why);
		if (n->pattern.re == NULL) {
			snprintf(err, errlen, "Replace: pattern: %s", why);
			return strcmp(why, "out of memory") == 0 ? TOK_ENOMEM : TOK_ESPEC;
		}
	}
	for (size_t i = 0; i < n->n_items; i++) {
		char inner[200];
		enum tok_status st = tok_normalizer_compile(&n->items[i], inner, sizeof inner);
		if (st != TOK_OK) {
			snprintf(err, errlen, "Sequence: normalizers[%zu]: %s", i, inner);
			return st;
		}
	}
	return TOK_OK;
}

/* ---- one character at a time ----------------------------------------------- */

static enum tok_status push_cp(struct tok_nstr *out, int32_t cp, struct tok_span sp)
{
	char b[4];
	size_t len = tok_uc_encode(cp, b);

	return tok_nstr_push(out, b, len, sp);
}

/* What one character becomes: fn pushes it to out, with its span sp. */
struct char_step {
	enum tok_status (*fn)(const struct tok_normalizer *spec, int32_t cp, struct tok_span sp,
			      struct tok_nstr *out);
	const struct tok_normalizer *spec;
};

static enum tok_status map_chars(struct tok_nstr *n, struct char_step step)
{
	struct tok_nstr out;
	enum tok_status st = TOK_OK;

	tok_nstr_init(&out);
	for (size_t at = 0; at < n->len && st == TOK_OK;) {
		size_t clen;
		int32_t cp = tok_uc_decode(n->s + at, n->len - at, &clen);
		st = step.fn(step.spec, cp, n->align[at], &out);
		at += clen;
	}
	if (st == TOK_OK)
		tok_nstr_swap(n, &out);
	tok_nstr_release(&out);
	return st;
}

static enum tok_status lower_char(const struct tok_normalizer *spec, int32_t cp,
				  struct tok_span sp, struct tok_nstr *out)
{
	int32_t low[2];
	size_t k = tok_uc_lower(cp, low);
	enum tok_status st = TOK_OK;

	(void)spec;
	for (size_t i = 0; i < k && st == TOK_OK; i++)
		st = push_cp(out, low[i], sp);
	return st;
}

static enum tok_status drop_mn_char(const struct tok_normalizer *spec, int32_t cp,
				    struct tok_span sp, struct tok_nstr *out)
{
	(void)spec;
	return tok_uc_is_mn(cp) ? TOK_OK : push_cp(out, cp, sp);
}

/* StripAccents (normalizers/strip.rs) drops every mark, spacing ones too
 * (is_combining_mark); BERT's strip_accents only the nonspacing ones. */
static enum tok_status drop_mark_char(const struct tok_normalizer *spec, int32_t cp,
				      struct tok_span sp, struct tok_nstr *out)
{
	(void)spec;
	return tok_uc_is_mark(cp) ? TOK_OK : push_cp(out, cp, sp);
}

/* BERT's clean_text: drop NUL, U+FFFD and controls; whitespace -> ' '. */
static enum tok_status clean_char(const struct tok_normalizer *spec, int32_t cp,
				  struct tok_span sp, struct tok_nstr *out)
{
	(void)spec;
	if (cp == 0 || cp == 0xFFFD || tok_uc_is_bert_control(cp))
		return TOK_OK;
	return push_cp(out, tok_uc_is_space(cp) ? ' ' : cp, sp);
}

/* BERT's handle_chinese_chars: " c " for an ideograph c, all three with c's
 * span (normalizers/bert.rs: the space before replaces c, not an insertion
 * after the character before it; see the top of this file). */
static enum tok_status chinese_char(const struct tok_normalizer *spec, int32_t cp,
				    struct tok_span sp, struct tok_nstr *out)
{
	enum tok_status st;

	(void)spec;
	if (!tok_uc_is_chinese(cp))
		return push_cp(out, cp, sp);
	st = push_cp(out, ' ', sp);
	if (st == TOK_OK)
		st = push_cp(out, cp, sp);
	if (st == TOK_OK)
		st = push_cp(out, ' ', sp);
	return st;
}

/* ---- whole-string steps ----------------------------------------------------- */

static enum tok_status unicode_form(struct tok_nstr *n, enum tok_uc_form form)
{
	struct tok_nstr out;
	enum tok_status st;

	tok_nstr_init(&out);
	st = tok_uc_normalize(n, form, &out);
	if (st == TOK_OK)
		tok_nstr_swap(n, &out);
	tok_nstr_release(&out);
	return st;
}

static enum tok_status strip_accents(struct tok_nstr *n)
{
	enum tok_status st = unicode_form(n, TOK_UC_NFD);

	if (st == TOK_OK)
		st = map_chars(n, (struct char_step){drop_mn_char, NULL});
	return st;
}

/* Strip: whitespace off the left and/or the right end. */
static enum tok_status strip(const struct tok_normalizer *spec, struct tok_nstr *n)
{
	size_t from = 0, to = n->len, clen;
	struct tok_nstr out;
	enum tok_status st;

	while (spec->strip_left && from < to &&
	       tok_uc_is_space(tok_uc_decode(n->s + from, to - from, &clen)))
		from += clen;
	while (spec->strip_right && to > from) {
		size_t start = to - 1;
		while (start > from && ((unsigned char)n->s[start] & 0xC0) == 0x80)
			start--;
		if (!tok_uc_is_space(tok_uc_decode(n->s + start, to - start, &clen)))
			break;
		to = start;
	}
	if (from == 0 && to == n->len)
		return TOK_OK;
	tok_nstr_init(&out);
	st = tok_nstr_slice(n, from, to, &out);
	if (st == TOK_OK)
		tok_nstr_swap(n, &out);
	tok_nstr_release(&out);
	return st;
}

/* Appends text (UTF-8, NUL-terminated), every character with span sp. */
static enum tok_status push_text(struct tok_nstr *out, const char *text, size_t len,
				 struct tok_span sp)
{
	enum tok_status st = TOK_OK;

	for (size_t i = 0; i < len && st == TOK_OK;) {
		size_t cl = tok_uc_len((unsigned char)text[i]);
		if (cl > len - i)
			cl = len - i;
		st = tok_nstr_push(out, text + i, cl, sp);
		i += cl;
	}
	return st;
}

static enum tok_status prepend(const struct tok_normalizer *spec, struct tok_nstr *n,
			       size_t max_len)
{
	struct tok_nstr out;
	enum tok_status st;

	if (n->len == 0 || spec->prepend == NULL || spec->prepend[0] == '\0')
		return TOK_OK;
	if (strlen(spec->prepend) > max_len - n->len) /* n->len <= max_len: normalize */
		return TOK_ETOOLONG;
	tok_nstr_init(&out);
	st = tok_nstr_reserve(&out, strlen(spec->prepend) + n->len);
	if (st == TOK_OK)
		st = push_text(&out, spec->prepend, strlen(spec->prepend), n->align[0]);
	if (st == TOK_OK)
		st = tok_nstr_append(&out, n, 0, n->len);
	if (st == TOK_OK)
		tok_nstr_swap(n, &out);
	tok_nstr_release(&out);
	return st;
}

/* Each match becomes the content; TOK_ETOOLONG as soon as the string being
 * written passes max_len (so it holds at most max_len, a gap of n and one
 * content). */
static enum tok_status replace(const struct tok_normalizer *spec, struct tok_nstr *n,
			       size_t max_len)
{
	struct tok_match *m;
	struct tok_nstr out;
	enum tok_status st = TOK_OK, found = TOK_EINVAL;
	size_t at = 0, ms, me, clen = strlen(spec->content);

	if (spec->pattern.re == NULL)
		return TOK_OK; /* not compiled: tok_build compiles every pattern */
	m = tok_match_new();
	if (m == NULL)
		return TOK_ENOMEM;
	tok_nstr_init(&out);
	st = tok_nstr_reserve(&out, n->len); /* the usual size: grows if a match adds */
	while (st == TOK_OK &&
	       (found = tok_regex_next(spec->pattern.re, m, n->s, n->len, at, &ms, &me)) == TOK_OK) {
		st = tok_nstr_append(&out, n, at, ms);
		if (st == TOK_OK)
			st = push_text(&out, spec->content, clen, n->align[me - 1]);
		if (st == TOK_OK && out.len > max_len)
			st = TOK_ETOOLONG;
		at = me;
	}
	if (st == TOK_OK && found != TOK_OK && found != TOK_EINVAL)
		st = found; /* TOK_ENOMEM or TOK_ELIMIT, not the end of the matches */
	if (st == TOK_OK)
		st = tok_nstr_append(&out, n, at, n->len);
	if (st == TOK_OK)
		tok_nstr_swap(n, &out);
	tok_nstr_release(&out);
	tok_match_free(m);
	return st;
}

/* BertNormalizer: clean_text, CJK spacing, strip_accents, lowercase, in
 * that order (normalizers/bert.rs). strip_accents -1 follows lowercase. */
static enum tok_status bert(const struct tok_normalizer *spec, struct tok_nstr *n)
{
	enum tok_status st = TOK_OK;
	int accents = spec->strip_accents < 0 ? spec->lowercase : spec->strip_accents;

	if (spec->clean_text)
		st = map_chars(n, (struct char_step){clean_char, spec});
	if (st == TOK_OK && spec->handle_chinese_chars)
		st = map_chars(n, (struct char_step){chinese_char, spec});
	if (st == TOK_OK && accents)
		st = strip_accents(n);
	if (st == TOK_OK && spec->lowercase)
		st = map_chars(n, (struct char_step){lower_char, spec});
	return st;
}

static enum tok_status normalize_step(const struct tok_normalizer *spec, struct tok_nstr *n,
				      size_t max_len);

/* One step (a Sequence: each of its steps in turn), n at most max_len long
 * before and after. */
static enum tok_status normalize(const struct tok_normalizer *spec, struct tok_nstr *n,
				 size_t max_len)
{
	enum tok_status st = normalize_step(spec, n, max_len);

	if (st == TOK_OK && n->len > max_len)
		st = TOK_ETOOLONG; /* a step that lengthens by a bounded factor, repeated */
	return st;
}

enum tok_status tok_normalize(const struct tok_normalizer *spec, struct tok_nstr *n)
{
	size_t max_len = SIZE_MAX;

	if (spec == NULL)
		return TOK_OK;
	if (n->len <= (SIZE_MAX - TOK_NORM_SLACK) / TOK_NORM_GROWTH)
		max_len = n->len * TOK_NORM_GROWTH + TOK_NORM_SLACK;
	return normalize(spec, n, max_len);
}

static enum tok_status normalize_step(const struct tok_normalizer *spec, struct tok_nstr *n,
				      size_t max_len)
{
	enum tok_status st = TOK_OK;

	switch (spec->kind) {
	case TOK_NORM_NFC:
		return unicode_form(n, TOK_UC_NFC);
	case TOK_NORM_NFD:
		return unicode_form(n, TOK_UC_NFD);
	case TOK_NORM_NFKC:
		return unicode_form(n, TOK_UC_NFKC);
	case TOK_NORM_NFKD:
		return unicode_form(n, TOK_UC_NFKD);
	case TOK_NORM_LOWERCASE:
		return map_chars(n, (struct char_step){lower_char, spec});
	case TOK_NORM_STRIP_ACCENTS:
		return map_chars(n, (struct char_step){drop_mark_char, spec});
	case TOK_NORM_BERT:
		return bert(spec, n);
	case TOK_NORM_PREPEND:
		return prepend(spec, n, max_len);
	case TOK_NORM_REPLACE:
		return replace(spec, n, max_len);
	case TOK_NORM_STRIP:
		return strip(spec, n);
	case TOK_NORM_SEQUENCE:
		for (size_t i = 0; i < spec->n_items && st == TOK_OK; i++)
			st = normalize(&spec->items[i], n, max_len);
		return st;
	}
	return TOK_OK;
}
