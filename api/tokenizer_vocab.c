/*
 * tokenizer_vocab.c: a tokenizer.json's vocabulary and merges read straight
 * from its bytes (see tokenizer_vocab.h for why).
 *
 * The grammar read whole here, RFC 8259's, for two members only:
 *   vocab  = "{" [ string ":" integer *( "," string ":" integer ) ] "}"
 *   merges = "[" [ merge *( "," merge ) ] "]"
 *   merge  = string                    ; "left right", one space
 *          / "[" string "," string "]"
 * Every other value is skipped: strings to their closing quote, containers
 * by counting brackets. A skipped value is fed to jansson unchanged, which
 * reads it strictly; a value read here is checked here as strictly (strings
 * UTF-8, no control character, escapes and surrogate pairs as jansson takes
 * them, no \u0000), and jansson sees `{}` or `[]` in its place.
 *
 * Nothing recurses: a skip counts depth, and the two shapes are flat.
 */
#include "tokenizer_vocab.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

enum { PTR_MAX = 256, QUOTE_MAX = 48 };

struct scan {
	const char *b;
	size_t len, at;
	const char *file;
	char *err;
	size_t errlen;
	char ptr[PTR_MAX]; /* the pointer of the member being read */
	size_t plen;
	/* the entry being read, added to ptr only when a message needs it (a
	 * pointer formatted for each of 400k entries costs as much as reading) */
	const char *pend_key; /* a vocabulary piece (in tmp), or NULL */
	size_t pend_key_len;
	size_t pend_index; /* a merge's index + 1, or 0 */
	char *tmp; /* the last string decoded, NUL-terminated */
	size_t tmp_len, tmp_cap;
};

/* ---- failing ------------------------------------------------------------- */

static int syntax(struct scan *s, const char *what) __attribute__((cold));

/* A syntax error where the scan stands: "FILE:LINE:COLUMN: what" (1-based,
 * the column in bytes), as jansson words its own. */
static int syntax(struct scan *s, const char *what)
{
	size_t line = 1, col = 1;

	for (size_t i = 0; i < s->at && i < s->len; i++) {
		col++;
		if (s->b[i] == '\n') {
			line++;
			col = 1;
		}
	}
	snprintf(s->err, s->errlen, "%s:%zu:%zu: %s", s->file, line, col, what);
	return -1;
}

static void ptr_append(struct scan *s, const char *p, size_t n)
{
	for (size_t i = 0; i < n && s->plen + 1 < PTR_MAX; i++)
		s->ptr[s->plen++] = p[i];
	s->ptr[s->plen] = '\0';
}

/* Descends into key (RFC 6901 escapes) or index; returns where to cut back. */
static size_t ptr_key(struct scan *s, const char *key, size_t n)
{
	size_t old = s->plen;

	ptr_append(s, "/", 1);
	for (size_t i = 0; i < n; i++) {
		if (key[i] == '~')
			ptr_append(s, "~0", 2);
		else if (key[i] == '/')
			ptr_append(s, "~1", 2);
		else
			ptr_append(s, key + i, 1);
	}
	return old;
}

static size_t ptr_index(struct scan *s, size_t i)
{
	char d[24];
	size_t old = s->plen;
	int n = snprintf(d, sizeof d, "/%zu", i);

	ptr_append(s, d, (size_t)n);
	return old;
}

static void ptr_up(struct scan *s, size_t old)
{
	s->plen = old;
	s->ptr[old] = '\0';
}

static int fail(struct scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A wrong value: "FILE: POINTER: message". */
static int fail(struct scan *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->pend_key != NULL)
		ptr_key(s, s->pend_key, s->pend_key_len);
	else if (s->pend_index > 0)
		ptr_index(s, s->pend_index - 1);
	n = s->plen > 0 ? snprintf(s->err, s->errlen, "%s: %s: ", s->file, s->ptr)
			    : snprintf(s->err, s->errlen, "%s: ", s->file);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < s->errlen)
		vsnprintf(s->err + n, s->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- lexing -------------------------------------------------------------- */

static void ws(struct scan *s)
{
	while (s->at < s->len) {
		char c = s->b[s->at];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return;
		s->at++;
	}
}

/* The next significant byte, or '\0' at the end. */
static char peek(struct scan *s)
{
	ws(s);
	return s->at < s->len ? s->b[s->at] : '\0';
}

static int expect(struct scan *s, char c, const char *what)
{
	if (peek(s) != c)
		return syntax(s, what);
	s->at++;
	return 0;
}

static int tmp_reserve(struct scan *s, size_t n)
{
	char *p;

	if (n + 1 <= s->tmp_cap)
		return 0;
	p = realloc(s->tmp, n + 1);
	if (p == NULL)
		return -1;
	s->tmp = p;
	s->tmp_cap = n + 1;
	return 0;
}

/* One escape at b[at] (after the backslash) into tmp; at moves past it. */
static int unescape(struct scan *s)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e = s->b + s->at;
	const char *hit;
	uint32_t u, lo;

	if (s->at >= s->len)
		return syntax(s, "unexpected end of a string");
	hit = *e != '\0' ? strchr(from, *e) : NULL;
	if (hit != NULL) {
		s->tmp[s->tmp_len++] = to[hit - from];
		s->at++;
		return 0;
	}
	if (*e != 'u' || s->len - s->at < 5 || utf8_hex4(e + 1, &u) != 0)
		return syntax(s, "invalid escape in a string");
	s->at += 5;
	if (u >= 0xd800 && u < 0xdc00) { /* a high surrogate: its low one must follow */
		if (s->len - s->at < 6 || e[5] != '\\' || e[6] != 'u' || utf8_hex4(e + 7, &lo) != 0 ||
		    lo < 0xdc00 || lo >= 0xe000)
			return syntax(s, "invalid Unicode escape (a lone surrogate)");
		u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
		s->at += 6;
	} else if (u >= 0xdc00 && u < 0xe000) {
		return syntax(s, "invalid Unicode escape (a lone surrogate)");
	}
	if (u == 0)
		return syntax(s, "\\u0000 is not supported in a string");
	s->tmp_len += utf8_put(s->tmp + s->tmp_len, u);
	return 0;
}

/* A string at b[at] ('"') decoded into tmp (tmp_len bytes, NUL after). */
static int string(struct scan *s)
{
	size_t k;

	if (peek(s) != '"')
		return syntax(s, "expected a string");
	s->at++;
	s->tmp_len = 0;
	for (;;) {
		size_t run = s->at;

		/* a run of plain bytes, checked as UTF-8 and copied whole */
		while (run < s->len && s->b[run] != '"' && s->b[run] != '\\' &&
		       (unsigned char)s->b[run] >= 0x20)
			run++;
		k = utf8_check(s->b + s->at, run - s->at);
		if (k < run - s->at) {
			s->at += k;
			return syntax(s, "invalid UTF-8 in a string");
		}
		/* the decoded string is never longer than its text: +4 for one escape */
		if (tmp_reserve(s, s->tmp_len + (run - s->at) + 4) != 0)
			return syntax(s, "out of memory");
		memcpy(s->tmp + s->tmp_len, s->b + s->at, run - s->at);
		s->tmp_len += run - s->at;
		s->at = run;
		if (run >= s->len)
			return syntax(s, "unexpected end of a string");
		if (s->b[run] == '"')
			break;
		if (s->b[run] != '\\')
			return syntax(s, "control character in a string");
		s->at++;
		if (unescape(s) != 0)
			return -1;
	}
	s->at++;
	s->tmp[s->tmp_len] = '\0';
	return 0;
}

/* Skips a string at b[at] without decoding it (jansson reads it later). */
static int string_skip(struct scan *s)
{
	for (s->at++; s->at < s->len; s->at++) {
		if (s->b[s->at] == '\\')
			s->at++;
		else if (s->b[s->at] == '"') {
			s->at++;
			return 0;
		}
	}
	return syntax(s, "unexpected end of a string");
}

static int is_delimiter(char c)
{
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' ||
	       c == '\r';
}

/* Skips one value of any kind, counting brackets (no recursion). */
static int skip(struct scan *s)
{
	size_t depth = 0;

	for (;;) {
		char c = peek(s);

		if (c == '\0')
			return syntax(s, "unexpected end of the file");
		if (c == '"') {
			if (string_skip(s) != 0)
				return -1;
		} else if (c == '{' || c == '[') {
			depth++;
			s->at++;
			continue;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				return syntax(s, "unexpected bracket");
			depth--;
			s->at++;
		} else if ((c == ',' || c == ':') && depth > 0) {
			s->at++;
			continue;
		} else {
			size_t from = s->at;

			while (s->at < s->len && !is_delimiter(s->b[s->at]) && s->b[s->at] != ':')
				s->at++;
			if (s->at == from)
				return syntax(s, "unexpected character");
		}
		if (depth == 0)
			return 0;
	}
}

/* An integer id in [0, INT32_MAX] at b[at]; anything else is a wrong value. */
static int id(struct scan *s, int32_t *out)
{
	const char *p, *end = s->b + s->len;
	int64_t v = 0;
	size_t n = 0;

	ws(s);
	p = s->b + s->at;
	if (p >= end || *p < '0' || *p > '9')
		return fail(s, "expected an integer in [0, %d]", INT32_MAX);
	while (p + n < end && p[n] >= '0' && p[n] <= '9') {
		if (v <= INT32_MAX)
			v = v * 10 + (p[n] - '0');
		n++;
	}
	if (n > 1 && p[0] == '0')
		return syntax(s, "a number with a leading zero");
	if (p + n < end && !is_delimiter(p[n]))
		return fail(s, "expected an integer in [0, %d]", INT32_MAX);
	if (v > INT32_MAX)
		return fail(s, "expected an integer in [0, %d]", INT32_MAX);
	s->at += n;
	*out = (int32_t)v;
	return 0;
}

static char *dup_tmp(const struct scan *s, size_t from, size_t n)
{
	char *p = malloc(n + 1);

	if (p != NULL) {
		memcpy(p, s->tmp + from, n);
		p[n] = '\0';
	}
	return p;
}

/* After one member or element: 1 at the closing bracket (consumed), 0 after
 * a comma (consumed), -1 on anything else. */
static int next(struct scan *s, char close)
{
	char c = peek(s);

	if (c == ',') {
		s->at++;
		return 0;
	}
	if (c == close) {
		s->at++;
		return 1;
	}
	return syntax(s, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
}

/* Opens a container; 1 when it is empty (closed too), 0 when it is not. */
static int open(struct scan *s, char open_c, char close_c, const char *what)
{
	if (expect(s, open_c, what) != 0)
		return -1;
	if (peek(s) == close_c) {
		s->at++;
		return 1;
	}
	return 0;
}

/* ---- the vocabulary ------------------------------------------------------- */

static int vocab_push(struct tok_model *m, size_t *cap, char *piece, int32_t v)
{
	if (m->n_vocab == *cap) {
		size_t c = *cap > 0 ? 2 * *cap : 1024;
		void *p = c < SIZE_MAX / sizeof *m->vocab ? realloc(m->vocab, c * sizeof *m->vocab)
							  : NULL;

		if (p == NULL) {
			free(piece);
			return -1;
		}
		m->vocab = p;
		*cap = c;
	}
	m->vocab[m->n_vocab++] = (struct tok_vocab_entry){.piece = piece, .id = v};
	return 0;
}

/* {"piece": id, ...} at b[at] into m->vocab; the pointer names the object. */
static int vocab(struct scan *s, struct tok_model *m)
{
	size_t cap = 0;
	int r = open(s, '{', '}', "expected an object {\"piece\": id, ...}");

	while (r == 0) {
		char *piece;
		int32_t v = 0;

		if (string(s) != 0 || expect(s, ':', "expected ':'") != 0)
			return -1;
		s->pend_key = s->tmp;
		s->pend_key_len = s->tmp_len;
		if (id(s, &v) != 0)
			return -1;
		piece = dup_tmp(s, 0, s->tmp_len);
		if (piece == NULL || vocab_push(m, &cap, piece, v) != 0)
			return fail(s, "out of memory");
		s->pend_key = NULL;
		r = next(s, '}');
	}
	return r < 0 ? -1 : 0;
}

/* ---- the merges ----------------------------------------------------------- */

/* "left right" in tmp, split at its one space. */
static int merge_string(struct scan *s, struct tok_merge *mg)
{
	const char *sp = memchr(s->tmp, ' ', s->tmp_len);
	size_t left = sp != NULL ? (size_t)(sp - s->tmp) : 0;

	if (sp == NULL || left == 0 || left + 1 == s->tmp_len ||
	    memchr(sp + 1, ' ', s->tmp_len - left - 1) != NULL)
		return fail(s, "expected two pieces separated by one space");
	mg->left = dup_tmp(s, 0, left);
	mg->right = dup_tmp(s, left + 1, s->tmp_len - left - 1);
	if (mg->left == NULL || mg->right == NULL)
		return fail(s, "out of memory");
	return 0;
}

/* ["left", "right"]. */
static int merge_pair(struct scan *s, struct tok_merge *mg)
{
	s->at++;
	if (string(s) != 0)
		return -1;
	mg->left = dup_tmp(s, 0, s->tmp_len);
	if (mg->left == NULL)
		return fail(s, "out of memory");
	if (expect(s, ',', "expected ',' (a merge is [\"left\", \"right\"])") != 0 ||
	    string(s) != 0)
		return -1;
	mg->right = dup_tmp(s, 0, s->tmp_len);
	if (mg->right == NULL)
		return fail(s, "out of memory");
	return expect(s, ']', "expected ']' (a merge is [\"left\", \"right\"])");
}

static int merges_grow(struct tok_model *m, size_t *cap)
{
	size_t c = *cap > 0 ? 2 * *cap : 1024;
	struct tok_merge *p;

	if (c > SIZE_MAX / sizeof *p)
		return -1;
	p = realloc(m->merges, c * sizeof *p);
	if (p == NULL)
		return -1;
	m->merges = p;
	*cap = c;
	return 0;
}

/* [merge, ...] at b[at] into m->merges, by rank. */
static int merges(struct scan *s, struct tok_model *m)
{
	size_t cap = 0;
	int r = open(s, '[', ']', "expected an array of merges");

	while (r == 0) {
		struct tok_merge *mg;
		char c = peek(s);

		if (m->n_merges == cap && merges_grow(m, &cap) != 0)
			return fail(s, "out of memory");
		mg = &m->merges[m->n_merges++];
		*mg = (struct tok_merge){NULL, NULL};
		s->pend_index = m->n_merges;
		if (c == '"') {
			if (string(s) != 0 || merge_string(s, mg) != 0)
				return -1;
		} else if (c == '[') {
			if (merge_pair(s, mg) != 0)
				return -1;
		} else {
			return fail(s, "expected \"left right\" or [\"left\", \"right\"]");
		}
		s->pend_index = 0;
		r = next(s, ']');
	}
	return r < 0 ? -1 : 0;
}

/* Gives back what doubling left unused (a few MB of merges' slack). */
static void shrink(void **p, size_t n, size_t size)
{
	void *q = n > 0 ? realloc(*p, n * size) : NULL;

	if (q != NULL)
		*p = q;
}

/* ---- finding them ---------------------------------------------------------- */

/* The members of the model object: its vocab (an object) and merges read,
 * the rest skipped. A member given twice is read once; jansson refuses the
 * file for it. */
static int model(struct scan *s, struct tok_model *m, struct tokvocab_spans *sp)
{
	int r = open(s, '{', '}', "expected an object");

	while (r == 0) {
		int is_vocab, is_merges;
		size_t up;

		if (string(s) != 0 || expect(s, ':', "expected ':'") != 0)
			return -1;
		is_vocab = strcmp(s->tmp, "vocab") == 0 && peek(s) == '{' && sp->vocab_end == 0;
		is_merges = strcmp(s->tmp, "merges") == 0 && peek(s) == '[' && sp->merges_end == 0;
		up = ptr_key(s, s->tmp, s->tmp_len);
		if (is_vocab) {
			sp->vocab_start = s->at;
			if (vocab(s, m) != 0)
				return -1;
			shrink((void **)&m->vocab, m->n_vocab, sizeof *m->vocab);
			sp->vocab_end = s->at;
		} else if (is_merges) {
			sp->merges_start = s->at;
			if (merges(s, m) != 0)
				return -1;
			shrink((void **)&m->merges, m->n_merges, sizeof *m->merges);
			sp->merges_end = s->at;
		} else if (skip(s) != 0) {
			return -1;
		}
		ptr_up(s, up);
		r = next(s, '}');
	}
	return r < 0 ? -1 : 0;
}

static void scan_init(struct scan *s, const char *b, size_t len, const char *file, char *err,
		      size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->b = b;
	s->len = len;
	s->file = file;
	s->err = err;
	s->errlen = errlen;
}

int tokvocab_read(const char *b, size_t len, const char *file, struct tok_model *m,
		  struct tokvocab_spans *spans, char *err, size_t errlen)
{
	struct scan s;
	int r, rc = -1, seen = 0;

	memset(spans, 0, sizeof *spans);
	scan_init(&s, b, len, file, err, errlen);
	if (peek(&s) != '{')
		return 0;
	r = open(&s, '{', '}', "expected an object");
	while (r == 0) {
		size_t up;

		if (string(&s) != 0 || expect(&s, ':', "expected ':'") != 0)
			goto out;
		up = ptr_key(&s, s.tmp, s.tmp_len);
		if (strcmp(s.tmp, "model") == 0 && peek(&s) == '{' && !seen) {
			seen = 1;
			if (model(&s, m, spans) != 0)
				goto out;
		} else if (skip(&s) != 0) {
			goto out;
		}
		ptr_up(&s, up);
		r = next(&s, '}');
	}
	rc = r < 0 ? -1 : 0;
out:
	free(s.tmp);
	return rc;
}

int tokvocab_read_object(const char *b, size_t len, const char *file, struct tok_model *m,
			 char *err, size_t errlen)
{
	struct scan s;
	int rc;

	scan_init(&s, b, len, file, err, errlen);
	rc = vocab(&s, m);
	if (rc == 0 && peek(&s) != '\0')
		rc = syntax(&s, "end of file expected");
	free(s.tmp);
	return rc;
}
