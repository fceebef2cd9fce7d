/*
 * unicode.c: character classes, case and normalization forms over utf8proc
 * (unicode.h). The classes follow Hugging Face's Rust crates: char methods
 * (White_Space, is_numeric, to_lowercase), unicode_categories (is_other,
 * is_punctuation) and the \w of its regex engines.
 *
 * Normalization with alignments (tok_uc_normalize): Hugging Face maps each
 * output character to one input character; here the text is cut into
 * segments that normalize independently, and a segment's output carries the
 * union of its spans. A segment is a character and every following one that
 * may reorder or compose with it: a non-starter (canonical combining class
 * not 0, or a decomposition that begins with one), or one of the few starters
 * that compose with the starter before them (Hangul vowels and trailing
 * consonants, some Indic length marks). A segment is cut after
 * SEGMENT_MAX characters so that a run of a million combining marks costs
 * linear time (the Stream-Safe Text Format of UAX #15 allows 30; text beyond
 * that is not normalized as one piece, which only adversarial text notices).
 */
#include "unicode.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

enum { SEGMENT_MAX = 64, SCRATCH_CPS = 512 };

int32_t tok_uc_decode(const char *s, size_t n, size_t *clen)
{
	const unsigned char *u = (const unsigned char *)s;
	utf8proc_int32_t cp;
	utf8proc_ssize_t got;

	if (u[0] < 0x80) {
		*clen = 1;
		return u[0];
	}
	got = utf8proc_iterate(u, (utf8proc_ssize_t)(n < 4 ? n : 4), &cp);
	if (got <= 0) { /* not valid UTF-8: callers validate, but advance anyway */
		*clen = 1;
		return 0xFFFD;
	}
	*clen = (size_t)got;
	return cp;
}

size_t tok_uc_encode(int32_t cp, char out[4])
{
	return (size_t)utf8proc_encode_char(cp, (utf8proc_uint8_t *)out);
}

size_t tok_uc_len(unsigned char b)
{
	if (b < 0xC0)
		return 1;
	if (b < 0xE0)
		return 2;
	if (b < 0xF0)
		return 3;
	return 4;
}

static utf8proc_category_t category(int32_t cp)
{
	return utf8proc_category(cp);
}

int tok_uc_is_space(int32_t cp)
{
	if (cp <= 0x20)
		return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
	if (cp < 0x85)
		return 0;
	return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
	       cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

int tok_uc_is_word(int32_t cp)
{
	if (cp < 0x80)
		return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') ||
		       (cp >= 'A' && cp <= 'Z') || cp == '_';
	if (cp == 0x200C || cp == 0x200D)
		return 1;
	switch (category(cp)) {
	case UTF8PROC_CATEGORY_LU:
	case UTF8PROC_CATEGORY_LL:
	case UTF8PROC_CATEGORY_LT:
	case UTF8PROC_CATEGORY_LM:
	case UTF8PROC_CATEGORY_LO:
	case UTF8PROC_CATEGORY_MN:
	case UTF8PROC_CATEGORY_MC:
	case UTF8PROC_CATEGORY_ME:
	case UTF8PROC_CATEGORY_ND:
	case UTF8PROC_CATEGORY_NL:
	case UTF8PROC_CATEGORY_PC:
		return 1;
	default:
		return 0;
	}
}

int tok_uc_is_numeric(int32_t cp)
{
	if (cp < 0x80)
		return cp >= '0' && cp <= '9';
	utf8proc_category_t c = category(cp);
	return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

int tok_uc_is_punct(int32_t cp)
{
	if (cp < 0x80)
		return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
		       (cp >= 123 && cp <= 126);
	switch (category(cp)) {
	case UTF8PROC_CATEGORY_PC:
	case UTF8PROC_CATEGORY_PD:
	case UTF8PROC_CATEGORY_PS:
	case UTF8PROC_CATEGORY_PE:
	case UTF8PROC_CATEGORY_PI:
	case UTF8PROC_CATEGORY_PF:
	case UTF8PROC_CATEGORY_PO:
		return 1;
	default:
		return 0;
	}
}

int tok_uc_is_mn(int32_t cp)
{
	return cp >= 0x300 && category(cp) == UTF8PROC_CATEGORY_MN;
}

int tok_uc_is_bert_control(int32_t cp)
{
	if (cp == '\t' || cp == '\n' || cp == '\r')
		return 0;
	switch (category(cp)) {
	case UTF8PROC_CATEGORY_CC:
	case UTF8PROC_CATEGORY_CF:
	case UTF8PROC_CATEGORY_CN:
	case UTF8PROC_CATEGORY_CO:
	case UTF8PROC_CATEGORY_CS:
		return 1;
	default:
		return 0;
	}
}

int tok_uc_is_chinese(int32_t cp)
{
	/* normalizers/bert.rs is_chinese_char; note 0x2B920, not 0x2B820 */
	return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
	       (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
	       (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
	       (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

size_t tok_uc_lower(int32_t cp, int32_t out[2])
{
	/* SpecialCasing.txt's one unconditional lowercase of more than one
	 * code point; utf8proc has the simple mappings only. */
	if (cp == 0x130) {
		out[0] = 0x69;
		out[1] = 0x307;
		return 2;
	}
	if (cp < 0x80) {
		out[0] = (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
		return 1;
	}
	out[0] = utf8proc_tolower(cp);
	return 1;
}

/* ---- normalization forms --------------------------------------------------- */

static utf8proc_option_t form_options(enum tok_uc_form form)
{
	utf8proc_option_t o = UTF8PROC_STABLE;

	if (form == TOK_UC_NFC || form == TOK_UC_NFKC)
		o |= UTF8PROC_COMPOSE;
	else
		o |= UTF8PROC_DECOMPOSE;
	if (form == TOK_UC_NFKC || form == TOK_UC_NFKD)
		o |= UTF8PROC_COMPAT;
	return o;
}

/* Starters that compose with the starter before them (NFC_QC = Maybe). */
static int composes_backward(int32_t cp)
{
	static const int32_t single[] = {0x0B3E, 0x0B56, 0x0B57, 0x0BBE, 0x0BD7, 0x0C56,
					 0x0CC2, 0x0CD5, 0x0CD6, 0x0D3E, 0x0D57, 0x0DCF,
					 0x0DDF, 0x102E, 0x1B35, 0x11127, 0x1133E, 0x11357,
					 0x114B0, 0x114BA, 0x114BD, 0x115AF, 0x11930};
	if ((cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2))
		return 1;
	for (size_t i = 0; i < sizeof single / sizeof single[0]; i++)
		if (single[i] == cp)
			return 1;
	return 0;
}

/* 1 when cp belongs to the segment of the character before it. */
static int attaches(int32_t cp, utf8proc_option_t opts)
{
	utf8proc_int32_t first[32];
	int last_boundclass = 0;
	utf8proc_ssize_t n;

	if (utf8proc_get_property(cp)->combining_class != 0 || composes_backward(cp))
		return 1;
	n = utf8proc_decompose_char(cp, first, 32, (opts & ~UTF8PROC_COMPOSE) | UTF8PROC_DECOMPOSE,
				    &last_boundclass);
	return n > 0 && n <= 32 && utf8proc_get_property(first[0])->combining_class != 0;
}

/* The byte length of the segment starting at in->s[at]. */
static size_t segment_len(const struct tok_nstr *in, size_t at, utf8proc_option_t opts)
{
	size_t end = at, chars = 0, clen;

	tok_uc_decode(in->s + end, in->len - end, &clen);
	end += clen;
	while (end < in->len && ++chars < SEGMENT_MAX) {
		if ((unsigned char)in->s[end] < 0x80)
			break;
		int32_t cp = tok_uc_decode(in->s + end, in->len - end, &clen);
		if (!attaches(cp, opts))
			break;
		end += clen;
	}
	return end - at;
}

static struct tok_span segment_span(const struct tok_nstr *in, size_t at, size_t len)
{
	struct tok_span sp = in->align[at];

	for (size_t i = at + 1; i < at + len; i++) {
		if (in->align[i].start < sp.start)
			sp.start = in->align[i].start;
		if (in->align[i].end > sp.end)
			sp.end = in->align[i].end;
	}
	return sp;
}

/* A growable code point buffer: a stack array first, the heap past it. */
struct cps {
	utf8proc_int32_t *v;
	size_t cap;
	utf8proc_int32_t local[SCRATCH_CPS];
};

/* Normalizes one segment into *bytes (inside c) and returns its byte length,
 * or -1 when memory runs out. */
static utf8proc_ssize_t normalize_segment(struct cps *c, const char *seg, size_t len,
					  utf8proc_option_t opts)
{
	utf8proc_ssize_t n;

	for (;;) {
		n = utf8proc_decompose((const utf8proc_uint8_t *)seg, (utf8proc_ssize_t)len, c->v,
				       (utf8proc_ssize_t)c->cap, opts);
		if (n < 0)
			return -1;
		if ((size_t)n <= c->cap)
			break;
		utf8proc_int32_t *bigger = malloc((size_t)n * sizeof *bigger);
		if (bigger == NULL)
			return -1;
		if (c->v != c->local)
			free(c->v);
		c->v = bigger;
		c->cap = (size_t)n;
	}
	return utf8proc_reencode(c->v, n, opts);
}

enum tok_status tok_uc_normalize(const struct tok_nstr *in, enum tok_uc_form form,
				 struct tok_nstr *out)
{
	utf8proc_option_t opts = form_options(form);
	enum tok_status st = TOK_OK;
	struct cps c;

	c.v = c.local;
	c.cap = SCRATCH_CPS;
	out->len = 0;
	for (size_t at = 0; at < in->len && st == TOK_OK;) {
		/* ASCII followed by ASCII (or the end) is its own normal form */
		if ((unsigned char)in->s[at] < 0x80 &&
		    (at + 1 == in->len || (unsigned char)in->s[at + 1] < 0x80)) {
			st = tok_nstr_push(out, in->s + at, 1, in->align[at]);
			at++;
			continue;
		}
		size_t len = segment_len(in, at, opts);
		struct tok_span sp = segment_span(in, at, len);
		utf8proc_ssize_t nb = normalize_segment(&c, in->s + at, len, opts);
		if (nb < 0) {
			st = TOK_ENOMEM;
			break;
		}
		const char *bytes = (const char *)c.v;
		for (size_t i = 0; i < (size_t)nb && st == TOK_OK;) {
			size_t cl = tok_uc_len((unsigned char)bytes[i]);
			st = tok_nstr_push(out, bytes + i, cl, sp);
			i += cl;
		}
		at += len;
	}
	if (c.v != c.local)
		free(c.v);
	return st;
}
