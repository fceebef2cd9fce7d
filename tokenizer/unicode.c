/*
 * unicode.c: character classes, case and normalization forms over utf8proc
 * (unicode.h). The classes follow Hugging Face's Rust crates: char methods
 * (White_Space, is_numeric, to_lowercase), unicode_categories (is_other,
 * is_punctuation) and the \w of its regex engines.
 *
 * Normalization with alignments (tok_uc_normalize), as Hugging Face's
 * NormalizedString over unicode-normalization-alignments. That crate gives
 * each code point it emits a change: 0 for the first code point of a
 * character's decomposition, +1 for each further one, and a composite the
 * sum of its parts' changes minus one per part composed into it; the changes
 * travel with their code points through canonical ordering. HF then assigns
 * spans BY POSITION (NormalizedString::transform): in output order, a code
 * point of change c <= 0 takes the span of the next original character and
 * skips -c more, one of change +1 takes the span of the original character
 * before it. So NFD gives both parts of 'é' its span, NFC of "e\u0301" gives
 * 'é' the span of 'e', text already in the form keeps every span, and marks
 * out of canonical order get the spans of the places they move to, not of
 * the characters they came from (NFD of "a\u0301\u0323": U+0323 gets the
 * span of U+0301, and U+0301 that of U+0323).
 *
 * The algorithm is UAX #15's, run per segment: a character and every
 * following one that may reorder or compose with it, that is a non-starter
 * (canonical combining class not 0), one of the few starters that compose
 * with the starter before them (Hangul vowels and trailing consonants, some
 * Indic length marks), or a character whose decomposition begins with
 * either (NFKC's compatibility jamo).
 * Decompositions and pair compositions come from utf8proc; check_text
 * compares the text with utf8proc_map's on random strings. A segment is
 * never cut, however many marks follow its starter: Hugging Face's forms
 * (unicode-normalization) reorder and compose a whole run, so a mark of a
 * lower class 64 marks on still moves up to the starter and composes with
 * it (Zalgo text has such runs). The buffers grow with the segment, and a
 * long run is ordered by counting sort on the combining class, so a run of
 * a million marks still costs linear time.
 */
#include "unicode.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

enum { DECOMP_MAX = 32 }; /* the longest decomposition is 18 */

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

int tok_uc_is_mark(int32_t cp)
{
	if (cp < 0x300)
		return 0;
	utf8proc_category_t c = category(cp);
	return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
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

/*
 * The starters that compose with the starter before them (NFC_QC = Maybe):
 * Hangul vowels and trailing consonants, and Indic length marks such as
 * Bengali U+09BE. They are derived from utf8proc's data on first use, not
 * listed by hand: a hand list missed U+09BE and U+09D7, and would miss
 * whatever a newer Unicode adds. check_text proves the segments against
 * every composing pair.
 */
enum { BACKWARD_MAX = 1024 }; /* Unicode 15 has 72 */

static struct {
	int32_t cp[BACKWARD_MAX]; /* ascending */
	size_t n;
} backward;
static pthread_once_t backward_once = PTHREAD_ONCE_INIT;

/* The starter that composes backward to give cp, or -1: the second of
 * cp's canonical pair is the last code point of its full decomposition
 * (a second never decomposes further), and cp must be what composition
 * gives back (not excluded from composition). */
static int32_t backward_second(int32_t cp)
{
	utf8proc_int32_t d[DECOMP_MAX];
	int boundclass = 0;
	utf8proc_ssize_t k =
	    utf8proc_decompose_char(cp, d, DECOMP_MAX, UTF8PROC_DECOMPOSE, &boundclass);
	int32_t second;

	if (k < 2 || k > DECOMP_MAX)
		return -1;
	second = d[k - 1];
	if (utf8proc_get_property(second)->combining_class != 0)
		return -1;
	if (utf8proc_normalize_utf32(d, k, UTF8PROC_STABLE | UTF8PROC_COMPOSE) != 1 || d[0] != cp)
		return -1;
	return second;
}

/* Adds cp to the ascending set unless it is there (or the set is full,
 * which BACKWARD_MAX leaves well ahead of Unicode). */
static void backward_add(int32_t cp)
{
	size_t i = backward.n;

	while (i > 0 && backward.cp[i - 1] > cp)
		i--;
	if ((i > 0 && backward.cp[i - 1] == cp) || backward.n == BACKWARD_MAX)
		return;
	memmove(&backward.cp[i + 1], &backward.cp[i], (backward.n - i) * sizeof backward.cp[0]);
	backward.cp[i] = cp;
	backward.n++;
}

/* Every code point's second, once (about 10 ms). */
static void backward_derive(void)
{
	for (int32_t cp = 0; cp <= 0x10FFFF; cp++) {
		int32_t second = backward_second(cp);
		if (second >= 0)
			backward_add(second);
	}
}

static int cmp_cp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

void tok_uc_prepare_forms(void)
{
	pthread_once(&backward_once, backward_derive);
}

static int composes_backward(int32_t cp)
{
	tok_uc_prepare_forms(); /* a no-op once a tokenizer was built */
	return bsearch(&cp, backward.cp, backward.n, sizeof cp, cmp_cp) != NULL;
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
	if (n <= 0 || n > 32)
		return 0;
	/* NFKC: U+314F HANGUL LETTER A is U+1161, a vowel that composes */
	return utf8proc_get_property(first[0])->combining_class != 0 || composes_backward(first[0]);
}

/* The byte length of the segment starting at in->s[at]. */
static size_t segment_len(const struct tok_nstr *in, size_t at, utf8proc_option_t opts)
{
	size_t end = at, clen;

	tok_uc_decode(in->s + end, in->len - end, &clen);
	end += clen;
	while (end < in->len) {
		if ((unsigned char)in->s[end] < 0x80)
			break;
		int32_t cp = tok_uc_decode(in->s + end, in->len - end, &clen);
		if (!attaches(cp, opts))
			break;
		end += clen;
	}
	return end - at;
}

/* One code point on its way through a segment, with its change (the file
 * comment): 0 or +1 out of decomposition, lower for a composite. */
struct ucp {
	int32_t c;
	int ccc;
	int change;
};

/* A segment's code points and the spans of its characters, grown to fit
 * (a segment has no length limit); tmp is the counting sort's scratch. */
struct seg_buf {
	struct ucp *u, *tmp;
	size_t n, cap, tmp_cap;
	struct tok_span *src;
	size_t nsrc, src_cap;
};

static void seg_buf_release(struct seg_buf *b)
{
	free(b->u);
	free(b->tmp);
	free(b->src);
}

/* Room for `more` code points and one span more; TOK_ENOMEM, b unchanged,
 * on failure. */
static enum tok_status seg_buf_reserve(struct seg_buf *b, size_t more)
{
	if (b->n + more > b->cap) {
		size_t cap = b->cap == 0 ? 256 : b->cap;
		while (cap < b->n + more)
			cap *= 2;
		struct ucp *u = realloc(b->u, cap * sizeof *u);
		if (u == NULL)
			return TOK_ENOMEM;
		b->u = u;
		b->cap = cap;
	}
	if (b->nsrc + 1 > b->src_cap) {
		size_t cap = b->src_cap == 0 ? 64 : b->src_cap * 2;
		struct tok_span *src = realloc(b->src, cap * sizeof *src);
		if (src == NULL)
			return TOK_ENOMEM;
		b->src = src;
		b->src_cap = cap;
	}
	return TOK_OK;
}

/* The segment's code points, fully decomposed, into b->u[0, b->n), and
 * the spans of its characters, in order, into b->src[0, b->nsrc). */
static enum tok_status decompose_segment(const struct tok_nstr *in, size_t at, size_t len,
					 utf8proc_option_t opts, struct seg_buf *b)
{
	utf8proc_option_t dopts = (opts & UTF8PROC_COMPAT) | UTF8PROC_DECOMPOSE;

	b->n = 0;
	b->nsrc = 0;
	for (size_t i = at; i < at + len;) {
		utf8proc_int32_t d[DECOMP_MAX];
		int boundclass = 0;
		size_t clen;
		int32_t cp = tok_uc_decode(in->s + i, at + len - i, &clen);
		utf8proc_ssize_t k = utf8proc_decompose_char(cp, d, DECOMP_MAX, dopts, &boundclass);
		if (k <= 0 || k > DECOMP_MAX) { /* cannot happen: keep the character */
			d[0] = cp;
			k = 1;
		}
		if (seg_buf_reserve(b, (size_t)k) != TOK_OK)
			return TOK_ENOMEM;
		for (utf8proc_ssize_t j = 0; j < k; j++)
			b->u[b->n++] =
			    (struct ucp){d[j], utf8proc_get_property(d[j])->combining_class, j > 0};
		b->src[b->nsrc++] = in->align[i];
		i += clen;
	}
	return TOK_OK;
}

enum { SORT_SHORT = 32 }; /* runs up to this long: insertion sort */

/* Sorts the run of non-starters u[0, n) by combining class, stably, in
 * linear time: a count per class, then each code point to its place. */
static enum tok_status counting_sort_run(struct seg_buf *b, struct ucp *u, size_t n)
{
	size_t at[256] = {0};

	if (n > b->tmp_cap) {
		struct ucp *tmp = realloc(b->tmp, n * sizeof *tmp);
		if (tmp == NULL)
			return TOK_ENOMEM;
		b->tmp = tmp;
		b->tmp_cap = n;
	}
	for (size_t i = 0; i < n; i++)
		at[u[i].ccc]++;
	for (size_t c = 0, sum = 0; c < 256; c++) {
		size_t k = at[c];
		at[c] = sum;
		sum += k;
	}
	for (size_t i = 0; i < n; i++)
		b->tmp[at[u[i].ccc]++] = u[i];
	memcpy(u, b->tmp, n * sizeof *u);
	return TOK_OK;
}

/* Canonical ordering (UAX #15 D108): a stable sort of each run of
 * non-starters by combining class; changes go with their code points. */
static enum tok_status canonical_order(struct seg_buf *b)
{
	struct ucp *u = b->u;

	for (size_t i = 0; i < b->n;) {
		size_t j = i;
		while (j < b->n && u[j].ccc != 0)
			j++;
		if (j - i > SORT_SHORT) {
			if (counting_sort_run(b, u + i, j - i) != TOK_OK)
				return TOK_ENOMEM;
		} else {
			for (size_t x = i + 1; x < j; x++)
				for (size_t y = x; y > i && u[y - 1].ccc > u[y].ccc; y--) {
					struct ucp t = u[y];
					u[y] = u[y - 1];
					u[y - 1] = t;
				}
		}
		i = j == i ? i + 1 : j;
	}
	return TOK_OK;
}

/* The primary composite of <l, c>, or 0: utf8proc composes the pair. */
static int32_t compose_pair(int32_t l, int32_t c)
{
	utf8proc_int32_t b[2] = {l, c};

	return utf8proc_normalize_utf32(b, 2, UTF8PROC_STABLE | UTF8PROC_COMPOSE) == 1 ? b[0] : 0;
}

/* Canonical composition (UAX #15 D117): a code point not blocked from the
 * last starter that composes with it turns the starter into the composite,
 * which takes over its change less one (it stands for one character more). */
static void compose(struct ucp *u, size_t *n)
{
	size_t w = 0, starter = 0;
	int have_starter = 0;

	for (size_t i = 0; i < *n; i++) {
		struct ucp x = u[i];
		if (have_starter) {
			const struct ucp *before = &u[w - 1];
			int blocked = w - 1 != starter && (before->ccc == 0 || before->ccc >= x.ccc);
			int32_t p = blocked ? 0 : compose_pair(u[starter].c, x.c);
			if (p != 0) {
				u[starter].c = p;
				u[starter].ccc = utf8proc_get_property(p)->combining_class;
				u[starter].change += x.change - 1;
				continue;
			}
		}
		if (x.ccc == 0) {
			starter = w;
			have_starter = 1;
		}
		u[w++] = x;
	}
	*n = w;
}

enum tok_status tok_uc_normalize(const struct tok_nstr *in, enum tok_uc_form form,
				 struct tok_nstr *out)
{
	utf8proc_option_t opts = form_options(form);
	enum tok_status st = TOK_OK;
	struct seg_buf b = {0};

	out->len = 0;
	for (size_t at = 0; at < in->len && st == TOK_OK;) {
		/* ASCII followed by ASCII (or the end) is its own normal form */
		if ((unsigned char)in->s[at] < 0x80 &&
		    (at + 1 == in->len || (unsigned char)in->s[at + 1] < 0x80)) {
			st = tok_nstr_push(out, in->s + at, 1, in->align[at]);
			at++;
			continue;
		}
		size_t len = segment_len(in, at, opts), next = 0;
		st = decompose_segment(in, at, len, opts, &b);
		if (st == TOK_OK)
			st = canonical_order(&b);
		if (st == TOK_OK && (opts & UTF8PROC_COMPOSE))
			compose(b.u, &b.n);
		/* spans by position: next is the original character due */
		for (size_t i = 0; i < b.n && st == TOK_OK; i++) {
			char c[4];
			struct tok_span sp;
			if (b.u[i].change > 0) {
				sp = b.src[next > 0 ? next - 1 : 0];
			} else {
				sp = b.src[next < b.nsrc ? next : b.nsrc - 1];
				next += (size_t)(1 - b.u[i].change);
			}
			st = tok_nstr_push(out, c, tok_uc_encode(b.u[i].c, c), sp);
		}
		at += len;
	}
	seg_buf_release(&b);
	return st;
}
