/*
 * fastjson.c: fastjson_scan (see fastjson.h), the walk of the body's JSON
 * grammar that finds the rows of plain numbers (and base64 tensors' strings)
 * to pool before jansson sees the body. A row is read by fastjson_row.c as
 * soon as it opens; what is pooled is replaced in the copy by fastjson_copy.c;
 * the pool and its accessors are fastjson_pool.c.
 *
 * The scanner follows JSON's grammar as jansson's lexer and parser do
 * (load.c): whitespace is space, tab, newline and carriage return; a number
 * is -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; a literal is a run of
 * letters; a string ends at the first '"' not escaped by '\'. It tracks what
 * may come next in each open container, so a row is only ever replaced where
 * jansson expects a value, and by a value of the same depth; anything it does
 * not expect stops the scan (the rows before stay pooled). So jansson accepts
 * the copy exactly when it accepts the body: the copy differs only inside
 * rows, each checked here to be a valid array.
 */
#include "fastjson.h"

#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/fastjson_ctx.h"
#include "common/decfloat.h"

/* ---- tokens ------------------------------------------------------------ */

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/*
 * The end of the string whose '"' is at s[i], or 0 if it never ends. memchr
 * finds the next '"' and whether a '\\' comes before it; only a string with
 * escapes is walked a byte at a time, from its first '\\'.
 */
static size_t string_end(const char *s, size_t i, size_t n, int *escaped)
{
	const char *quote = memchr(s + i + 1, '"', n - i - 1);
	const char *slash;

	*escaped = 0;
	if (quote == NULL)
		return 0;
	slash = memchr(s + i + 1, '\\', (size_t)(quote - (s + i + 1)));
	if (slash == NULL)
		return (size_t)(quote - s) + 1;
	*escaped = 1;
	for (size_t k = (size_t)(slash - s); k < n; k++) {
		if (s[k] == '"')
			return k + 1;
		if (s[k] == '\\')
			k++;
	}
	return 0;
}

/* ---- the scanner --------------------------------------------------------- */

static struct frame *innermost(struct scan *sc)
{
	return sc->depth > 0 ? &sc->stack[sc->depth - 1] : NULL;
}

/* A value just ended: what its container (or the top level) expects now. */
static void after_value(struct scan *sc)
{
	struct frame *f = innermost(sc);

	if (f == NULL)
		sc->top = X_END;
	else
		f->expect = X_COMMA_OR_CLOSE;
}

/* Is path[0 .. len) one of the fields? */
static int is_field(const struct scan *sc, size_t len)
{
	for (size_t i = 0; sc->fields[i] != NULL; i++)
		if (strlen(sc->fields[i]) == len && memcmp(sc->fields[i], sc->path, len) == 0)
			return 1;
	return 0;
}

/* An element of the array f ended: a pooled row of cols numbers, or
 * anything else (cols 0). f stays a possible matrix while its elements are
 * rows of one length. */
static void matrix_element(struct frame *f, size_t cols)
{
	if (cols == 0 || (f->matrix_rows > 0 && cols != f->matrix_cols)) {
		f->matrix = 0;
		return;
	}
	f->matrix_cols = cols;
	f->matrix_rows++;
}

static void open_container(struct scan *sc, char type)
{
	struct frame *parent = innermost(sc), *f;

	if (sc->depth == FASTJSON_MAX_DEPTH) {
		sc->stop = 1;
		return;
	}
	if (parent != NULL && parent->type == '[')
		not_a_row(sc, parent); /* it holds a container: not innermost */
	f = &sc->stack[sc->depth++];
	memset(f, 0, sizeof(*f));
	f->type = type;
	f->start = sc->i;
	f->mark = sc->pool->n_values;
	f->first_real = SIZE_MAX;
	if (type == '{') {
		f->expect = X_KEY_OR_CLOSE;
		f->chain =
		    parent == NULL || (parent->type == '{' && parent->chain && parent->key_ok);
		f->path_len = parent != NULL ? parent->key_end : 0;
		f->tensor = parent != NULL && parent->type == '{' && f->chain &&
			    is_field(sc, parent->key_end);
	} else {
		f->expect = X_VALUE_OR_CLOSE;
		if (parent != NULL && parent->type == '[')
			f->in_field = parent->in_field;
		else if (parent != NULL)
			f->in_field =
			    parent->chain && parent->key_ok && is_field(sc, parent->key_end);
		f->row = parent != NULL && parent->type == '[' && f->in_field;
		f->matrix = f->in_field;
	}
	sc->i++;
	if (f->row)
		fj_scan_row(sc, f);
}

static void close_container(struct scan *sc)
{
	struct frame *f = innermost(sc), *parent = sc->depth > 1 ? f - 1 : NULL;
	int pooled = 0;

	if (f->row && f->count >= FASTJSON_MIN_ROW)
		pooled = fj_commit_row(sc, parent, f) == 0; /* a row has an array around it */
	else
		not_a_row(sc, f);
	if (f->type == '[' && f->matrix && f->matrix_rows >= 2)
		fj_commit_matrix(sc, f);
	if (parent != NULL && parent->type == '[')
		matrix_element(parent, pooled ? f->count : 0);
	sc->depth--;
	sc->i++;
	after_value(sc);
}

/* A key at sc->i; in a chain of objects it extends the path. */
static void read_key(struct scan *sc, struct frame *f)
{
	size_t start = sc->i, end, klen;
	int escaped;

	end = sc->s[start] == '"' ? string_end(sc->s, start, sc->len, &escaped) : 0;
	if (end == 0) {
		sc->stop = 1;
		return;
	}
	klen = end - start - 2;
	f->key_ok = f->chain && !escaped && f->path_len + 1 + klen <= sizeof sc->path &&
		    memchr(sc->s + start + 1, '~', klen) == NULL &&
		    memchr(sc->s + start + 1, '/', klen) == NULL;
	f->base64_key =
	    f->tensor && !escaped && klen == 6 && memcmp(sc->s + start + 1, "base64", 6) == 0;
	if (f->key_ok) {
		sc->path[f->path_len] = '/';
		memcpy(sc->path + f->path_len + 1, sc->s + start + 1, klen);
		f->key_end = f->path_len + 1 + klen;
	}
	f->expect = X_COLON;
	sc->i = end;
}

/* A string, number or literal at sc->i, where a value is expected. */
static void read_scalar(struct scan *sc)
{
	struct frame *f = innermost(sc);
	const char *s = sc->s + sc->i;
	size_t rest = sc->len - sc->i, n = 0;
	struct decfloat_number x;
	int escaped;

	if (s[0] == '"' && f != NULL && f->type == '{' && f->base64_key && fj_pool_base64(sc)) {
		after_value(sc);
		return;
	}
	if (s[0] == '"') {
		n = string_end(sc->s, sc->i, sc->len, &escaped);
		n = n ? n - sc->i : 0;
	} else if (s[0] == '-' || is_digit(s[0])) {
		n = decfloat_lex(s, rest, &x);
	} else if (is_alpha(s[0])) {
		while (n < rest && is_alpha(s[n]))
			n++;
		if (!((n == 4 && memcmp(s, "true", 4) == 0) ||
		      (n == 5 && memcmp(s, "false", 5) == 0) ||
		      (n == 4 && memcmp(s, "null", 4) == 0)))
			n = 0;
	}
	if (n == 0) {
		sc->stop = 1;
		return;
	}
	if (f != NULL && f->type == '[')
		f->matrix = 0; /* a scalar in it */
	if (f != NULL && f->type == '[' && f->row) {
		if (s[0] == '-' || is_digit(s[0]))
			fj_pool_number(sc, f, &x, n);
		else
			not_a_row(sc, f);
	}
	sc->i += n;
	after_value(sc);
}

static void read_value(struct scan *sc, char c)
{
	if (c == '[' || c == '{')
		open_container(sc, c);
	else
		read_scalar(sc);
}

/* One step at the non-blank byte c = s[i]. */
static void step(struct scan *sc, char c)
{
	struct frame *f = innermost(sc);
	enum expect x = f != NULL ? f->expect : sc->top;
	char close = f != NULL && f->type == '[' ? ']' : '}';

	switch (x) {
	case X_VALUE:
		read_value(sc, c);
		return;
	case X_VALUE_OR_CLOSE:
		if (c == ']')
			close_container(sc);
		else
			read_value(sc, c);
		return;
	case X_KEY_OR_CLOSE:
		if (c == '}')
			close_container(sc);
		else
			read_key(sc, f);
		return;
	case X_KEY:
		read_key(sc, f);
		return;
	case X_COLON:
		if (c != ':')
			break;
		f->expect = X_VALUE;
		sc->i++;
		return;
	case X_COMMA_OR_CLOSE:
		if (c == close) {
			close_container(sc);
			return;
		}
		if (c != ',')
			break;
		f->expect = f->type == '[' ? X_VALUE : X_KEY;
		sc->i++;
		return;
	case X_END:
		break;
	}
	sc->stop = 1;
}

/* Does s[0 .. n) contain the placeholder key's escape? */
static int has_placeholder_key(const char *s, size_t n)
{
	static const char esc[] = "\\u0001";
	const char *p = s, *end = s + n;

	while ((p = memchr(p, '\\', (size_t)(end - p))) != NULL) {
		if ((size_t)(end - p) >= sizeof esc - 1 && memcmp(p, esc, sizeof esc - 1) == 0)
			return 1;
		p++;
	}
	return 0;
}

char *fastjson_scan(const char *body, size_t len, const char *const *fields,
		    struct fastjson_pool *pool, size_t *copy_len)
{
	struct scan *sc;
	char *copy;
	const char *point = localeconv()->decimal_point;

	*copy_len = 0;
	if (fields == NULL || len < 2 * FASTJSON_MIN_ROW || has_placeholder_key(body, len) ||
	    point == NULL || strcmp(point, ".") != 0)
		return NULL;
	sc = calloc(1, sizeof(*sc));
	if (sc == NULL)
		return NULL;
	sc->s = body;
	sc->len = len;
	sc->fields = fields;
	sc->pool = pool;
	sc->top = X_VALUE;
	for (sc->i = skip_blank(body, 0, len); !sc->stop && sc->i < len;
	     sc->i = skip_blank(body, sc->i, len))
		step(sc, body[sc->i]);
	for (size_t d = sc->depth; d > 0; d--) /* stopped or ended inside a row */
		not_a_row(sc, &sc->stack[d - 1]);
	copy = fj_copy_finish(sc, copy_len);
	free(sc);
	return copy;
}
