/*
 * regex.c: the patterns of Replace and Split (stages.h, "regexes"): PCRE2
 * with UTF and UCP, JIT-compiled when the platform allows, or a literal
 * matched with memmem.
 *
 * A compiled regex is immutable and shared by threads; what a match writes
 * (PCRE2's match data, and a JIT stack when a pattern needs more than the
 * machine stack's 32 KiB) lives in the caller's struct tok_match.
 *
 * Subjects are the tokenizer's own validated UTF-8, so every match passes
 * PCRE2_NO_UTF_CHECK: without it PCRE2 would check the whole subject again
 * on every call, and scanning a text match by match would be quadratic.
 *
 * Classes differ between engines: PCRE2 10.42's \s (with UCP) holds U+0085
 * and U+180E, Hugging Face's (Oniguruma: \t-\r, U+0085, Zs, Zl, Zp) U+0085
 * only, and JavaScript's U+FEFF but neither of the others. Every pattern's
 * \s and \S are written out as Oniguruma's set before PCRE2 compiles it
 * (onig_spaces), so GPT-2's and Llama 3's splits keep " \u180E" together as
 * Hugging Face does. PCRE2's \w is letters, numbers and '_', Oniguruma's
 * adds marks and drops No; no shipped pattern uses \w, and it stays as
 * written.
 */
#define _GNU_SOURCE /* memmem */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stages.h"
#include "unicode.h"

struct tok_regex {
	pcre2_code *code; /* NULL for a literal */
	int jit;	  /* 1: JIT-compiled, matched with pcre2_jit_match */
	char *literal;
	size_t lit_len;
};

struct tok_match {
	pcre2_match_data *md;
	pcre2_match_context *mctx; /* with jit stack, made on first need */
	pcre2_jit_stack *jit;
};

enum { JIT_STACK_MIN = 32 * 1024, JIT_STACK_MAX = 64 * 1024 * 1024 };

static struct tok_regex *compile_literal(const char *text, char *err, size_t errlen)
{
	struct tok_regex *re = calloc(1, sizeof *re);

	if (re != NULL) {
		re->lit_len = strlen(text);
		re->literal = malloc(re->lit_len + 1);
		if (re->literal != NULL) {
			memcpy(re->literal, text, re->lit_len + 1);
			return re;
		}
	}
	free(re);
	snprintf(err, errlen, "out of memory");
	return NULL;
}

/* Oniguruma's \s as a class's contents, and its complement (\S) */
#define ONIG_SPACE                                                                       \
	"\\x{9}-\\x{D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}"      \
	"\\x{202F}\\x{205F}\\x{3000}"
#define ONIG_NONSPACE                                                                    \
	"\\x{0}-\\x{8}\\x{E}-\\x{1F}\\x{21}-\\x{84}\\x{86}-\\x{9F}\\x{A1}-\\x{167F}"         \
	"\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}"        \
	"\\x{2060}-\\x{2FFF}\\x{3001}-\\x{10FFFF}"

/* Appends \s (or \S with non) at o: the set's contents inside a class,
 * the set in brackets outside one. Returns the end. */
static char *put_space(char *o, int non, int in_class)
{
	const char *set = non ? ONIG_NONSPACE : ONIG_SPACE;
	size_t n = strlen(set);

	if (!in_class)
		*o++ = '[';
	memcpy(o, set, n);
	o += n;
	if (!in_class)
		*o++ = ']';
	return o;
}

/* Copies p's escape or \Q...\E quote at p (p[0] == '\\') to *o, advancing
 * both; \s and \S become Oniguruma's sets. */
static void copy_escape(const char **p, char **o, int in_class)
{
	const char *s = *p;

	if (s[1] == 's' || s[1] == 'S') {
		*o = put_space(*o, s[1] == 'S', in_class);
		*p = s + 2;
		return;
	}
	if (s[1] == 'Q') { /* literal to \E or the end */
		const char *e = strstr(s + 2, "\\E");
		size_t n = e != NULL ? (size_t)(e + 2 - s) : strlen(s);

		memcpy(*o, s, n);
		*o += n;
		*p = s + n;
		return;
	}
	*(*o)++ = *s++;
	if (*s != '\0')
		*(*o)++ = *s++;
	*p = s;
}

/*
 * text with every \s and \S written out as Oniguruma's set (see the top of
 * this file), or NULL when out of memory; the caller frees it. Escapes,
 * \Q...\E quotes, classes ("[^]...]" and POSIX "[:alpha:]" inside them)
 * are followed so that only those two escapes change.
 */
static char *onig_spaces(const char *text)
{
	size_t grow = sizeof ONIG_NONSPACE + 2, n = strlen(text) + 1;
	int in_class = 0;
	char *out, *o;
	const char *posix;

	for (const char *q = text; *q != '\0'; q++)
		if (*q == '\\' && (n += grow) < grow)
			return NULL;
	out = o = malloc(n);
	if (out == NULL)
		return NULL;
	while (*text != '\0') {
		if (*text == '\\') {
			copy_escape(&text, &o, in_class);
		} else if (!in_class && *text == '[') {
			in_class = 1;
			*o++ = *text++;
			if (*text == '^')
				*o++ = *text++;
			if (*text == ']') /* a ']' first is a member */
				*o++ = *text++;
		} else if (in_class && text[0] == '[' && text[1] == ':' &&
			   (posix = strstr(text + 2, ":]")) != NULL) {
			size_t k = (size_t)(posix + 2 - text);

			memcpy(o, text, k);
			o += k;
			text += k;
		} else {
			in_class &= *text != ']';
			*o++ = *text++;
		}
	}
	*o = '\0';
	return out;
}

/* pcre2_compile of text; a failure's message and offset in err. */
static pcre2_code *compile_text(const char *text, char *err, size_t errlen)
{
	pcre2_code *code;
	int rc;
	PCRE2_SIZE offset;
	PCRE2_UCHAR msg[160];

	code = pcre2_compile((PCRE2_SPTR)text, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &rc,
			     &offset, NULL);
	if (code == NULL) {
		pcre2_get_error_message(rc, msg, sizeof msg);
		snprintf(err, errlen, "%s at offset %zu", (const char *)msg, (size_t)offset);
	}
	return code;
}

/* text compiled with Oniguruma's spaces. A pattern PCRE2 refuses is
 * reported as written: compiled again for its own message and offset. */
static pcre2_code *compile_pattern(const char *text, char *err, size_t errlen)
{
	char *rewritten = onig_spaces(text);
	pcre2_code *code;

	if (rewritten == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	code = compile_text(rewritten, err, errlen);
	free(rewritten);
	if (code != NULL)
		return code;
	code = compile_text(text, err, errlen);
	if (code != NULL) { /* as written it compiles: the rewrite broke it */
		pcre2_code_free(code);
		snprintf(err, errlen, "the pattern with \\s and \\S written out does not compile");
	}
	return NULL;
}

struct tok_regex *tok_regex_compile(const char *text, int is_regex, char *err, size_t errlen)
{
	struct tok_regex *re;

	if (!is_regex)
		return compile_literal(text, err, errlen);
	re = calloc(1, sizeof *re);
	if (re == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	re->code = compile_pattern(text, err, errlen);
	if (re->code == NULL) {
		free(re);
		return NULL;
	}
	/* Without JIT (a platform PCRE2 cannot JIT for) the interpreter runs:
	 * slower, the same matches. */
	re->jit = pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0;
	return re;
}

void tok_regex_free(struct tok_regex *re)
{
	if (re == NULL)
		return;
	pcre2_code_free(re->code);
	free(re->literal);
	free(re);
}

void tok_pattern_release(struct tok_pattern *p)
{
	if (p == NULL)
		return;
	tok_regex_free(p->re);
	free(p->text);
	p->re = NULL;
	p->text = NULL;
}

struct tok_match *tok_match_new(void)
{
	struct tok_match *m = calloc(1, sizeof *m);

	if (m == NULL)
		return NULL;
	m->md = pcre2_match_data_create(1, NULL);
	if (m->md == NULL) {
		free(m);
		return NULL;
	}
	return m;
}

void tok_match_free(struct tok_match *m)
{
	if (m == NULL)
		return;
	pcre2_match_data_free(m->md);
	pcre2_match_context_free(m->mctx);
	pcre2_jit_stack_free(m->jit);
	free(m);
}

/* Gives m a JIT stack larger than the machine stack's default. */
static int grow_jit_stack(struct tok_match *m)
{
	if (m->jit != NULL)
		return -1; /* had it already: the pattern needs more still */
	m->mctx = pcre2_match_context_create(NULL);
	m->jit = pcre2_jit_stack_create(JIT_STACK_MIN, JIT_STACK_MAX, NULL);
	if (m->mctx == NULL || m->jit == NULL)
		return -1;
	pcre2_jit_stack_assign(m->mctx, NULL, m->jit);
	return 0;
}

static enum tok_status literal_next(const struct tok_regex *re, const char *s, size_t len,
				    size_t from, size_t *mstart, size_t *mend)
{
	const char *hit;

	if (re->lit_len == 0 || from >= len)
		return TOK_EINVAL;
	hit = memmem(s + from, len - from, re->literal, re->lit_len);
	if (hit == NULL)
		return TOK_EINVAL;
	*mstart = (size_t)(hit - s);
	*mend = *mstart + re->lit_len;
	return TOK_OK;
}

enum tok_status tok_regex_next(const struct tok_regex *re, struct tok_match *m, const char *s,
			       size_t len, size_t from, size_t *mstart, size_t *mend)
{
	if (re->code == NULL)
		return literal_next(re, s, len, from, mstart, mend);
	while (from <= len) {
		/* pcre2_jit_match skips pcre2_match's checks of its arguments,
		 * which a word-sized match pays for again and again */
		int rc = re->jit ? pcre2_jit_match(re->code, (PCRE2_SPTR)s, len, from, 0, m->md,
						   m->mctx)
				 : pcre2_match(re->code, (PCRE2_SPTR)s, len, from,
					       PCRE2_NO_UTF_CHECK, m->md, m->mctx);
		if (rc == PCRE2_ERROR_JIT_STACKLIMIT && grow_jit_stack(m) == 0)
			continue;
		if (rc == PCRE2_ERROR_NOMATCH)
			return TOK_EINVAL;
		if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
		    rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT)
			return TOK_ELIMIT;
		if (rc < 0)
			return TOK_ENOMEM;
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
		if (ov[1] > ov[0]) {
			*mstart = ov[0];
			*mend = ov[1];
			return TOK_OK;
		}
		/* an empty match: look again one character further on */
		if (ov[0] >= len)
			return TOK_EINVAL;
		from = ov[0] + tok_uc_len((unsigned char)s[ov[0]]);
	}
	return TOK_EINVAL;
}
