/*
 * tokenizer_file.c: tokenizer.json (and GPT-2's vocab.json + merges.txt)
 * into a struct tok_spec (see tokenizer_file.h).
 *
 * The reader walks jansson's tree once, one function per part of the
 * pipeline, each choosing its kind from a table of Hugging Face's "type"
 * names. A struct rd carries the JSON pointer of the value being read, so
 * that any failure names it; the pointer grows as the walk descends and is
 * cut back as it returns. Sequences recurse, which is bounded: jansson
 * refuses a document nested deeper than 2048.
 *
 * Memory and time: jansson's tree of a large vocabulary (Llama 3: 128k
 * pieces, 280k merges) costs more than the spec made from it, and most of the
 * time a load may take. So the model's vocabulary and merges are read first,
 * straight from the bytes (tokenizer_vocab.c), and jansson reads the rest of
 * the file with those two members fed to it as `{}` and `[]`, every other byte
 * (newlines too, for its line numbers) as it was. The tree is gone before
 * tok_build runs. A Unigram vocabulary (an array of [piece, score]) is read
 * from the tree, each element leaving it once copied (from the end of the
 * array, where removing is O(1)), so malloc hands the tree's memory to the
 * copies.
 *
 * Values that matter to the result are checked here, with their pointer;
 * what only the built tokenizer can judge (a merge whose pieces are not in
 * the vocabulary, a regex that does not compile) is tok_build's to refuse.
 */
#include "tokenizer_file.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_vocab.h"

enum { PTR_MAX = 256, QUOTE_MAX = 48 };

/* ---- the reader: where it is, and how it fails ---------------------------- */

struct rd {
	const char *file;
	char ptr[PTR_MAX]; /* the JSON pointer of the value being read */
	size_t plen;
	char *err;
	size_t errlen;
	struct tokvocab_spans pre; /* what tokvocab_read read before jansson */
};

static int rd_vfail(struct rd *r, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static int rd_vfail(struct rd *r, const char *fmt, va_list ap)
{
	int n;

	if (r->plen > 0)
		n = snprintf(r->err, r->errlen, "%s: %s: ", r->file, r->ptr);
	else
		n = snprintf(r->err, r->errlen, "%s: ", r->file);
	if (n >= 0 && (size_t)n < r->errlen)
		vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	return -1;
}

static int rd_fail(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "FILE: POINTER: message"; returns -1, so call sites read `return rd_fail(...)`. */
static int rd_fail(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rd_vfail(r, fmt, ap);
	va_end(ap);
	return -1;
}

/* Appends s[0..n) to the pointer, cut (at a byte; it only names) when full. */
static void rd_append(struct rd *r, const char *s, size_t n)
{
	for (size_t i = 0; i < n && r->plen + 1 < PTR_MAX; i++)
		r->ptr[r->plen++] = s[i];
	r->ptr[r->plen] = '\0';
}

/* Descends into member `key` (escaped per RFC 6901); returns where to cut back. */
static size_t rd_key(struct rd *r, const char *key)
{
	size_t old = r->plen;

	rd_append(r, "/", 1);
	for (const char *k = key; *k != '\0'; k++) {
		if (*k == '~')
			rd_append(r, "~0", 2);
		else if (*k == '/')
			rd_append(r, "~1", 2);
		else
			rd_append(r, k, 1);
	}
	return old;
}

/* Descends into element i; returns where to cut back. */
static size_t rd_index(struct rd *r, size_t i)
{
	char digits[24];
	size_t old = r->plen;
	int n = snprintf(digits, sizeof digits, "/%zu", i);

	rd_append(r, digits, (size_t)n);
	return old;
}

static void rd_up(struct rd *r, size_t old)
{
	r->plen = old;
	r->ptr[old] = '\0';
}

static int rd_fail_key(struct rd *r, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* rd_fail at member `key` of the value being read. */
static int rd_fail_key(struct rd *r, const char *key, const char *fmt, ...)
{
	va_list ap;

	rd_key(r, key);
	va_start(ap, fmt);
	rd_vfail(r, fmt, ap);
	va_end(ap);
	return -1;
}

/* A string for messages: at most QUOTE_MAX bytes cut at a character, then
 * "...", control bytes shown as '?'. Returns out. */
static const char *quote(char out[QUOTE_MAX + 4], const char *s)
{
	size_t len = strlen(s), n = len;

	if (n > QUOTE_MAX) {
		n = QUOTE_MAX;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	out[n] = '\0';
	if (n < len)
		strcat(out + n, "...");
	return out;
}

static int rd_oom(struct rd *r)
{
	return rd_fail(r, "out of memory");
}

/* A malloc'd copy of s[0..n) (jansson has refused NUL bytes already). */
static int rd_dup(struct rd *r, const char *s, size_t n, char **out)
{
	*out = malloc(n + 1);
	if (*out == NULL)
		return rd_oom(r);
	memcpy(*out, s, n);
	(*out)[n] = '\0';
	return 0;
}

/* calloc(n, size) that gives memory for n == 0 too; NULL only on failure. */
static void *rd_calloc(size_t n, size_t size)
{
	return calloc(n > 0 ? n : 1, size);
}

/* ---- fields ---------------------------------------------------------------- */

enum {
	F_OPTIONAL = 0,
	F_REQUIRED = 1, /* absent (or null) is an error */
	F_NULLABLE = 2, /* null means none (NULL) */
};

/* A string member: absent -> a copy of dflt (NULL stays NULL). */
static int rd_str(struct rd *r, json_t *obj, const char *key, int flags, const char *dflt,
		  char **out)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (v == NULL && (flags & F_REQUIRED))
		return rd_fail_key(r, key, "missing (expected a string)");
	if (v == NULL)
		return dflt != NULL ? rd_dup(r, dflt, strlen(dflt), out) : 0;
	if (json_is_null(v) && (flags & F_NULLABLE))
		return 0;
	if (!json_is_string(v))
		return rd_fail_key(r, key, "expected a string%s",
				   flags & F_NULLABLE ? " or null" : "");
	return rd_dup(r, json_string_value(v), json_string_length(v), out);
}

/* A boolean member: absent -> dflt, or an error when dflt < 0. */
static int rd_bool(struct rd *r, json_t *obj, const char *key, int dflt, int *out)
{
	json_t *v = json_object_get(obj, key);

	if (v == NULL && dflt < 0)
		return rd_fail_key(r, key, "missing (expected true or false)");
	if (v == NULL) {
		*out = dflt;
		return 0;
	}
	if (!json_is_boolean(v))
		return rd_fail_key(r, key, "expected true or false");
	*out = json_is_true(v);
	return 0;
}

/* An integer in [0, max]. */
static int rd_int_value(struct rd *r, json_t *v, json_int_t max, json_int_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
		return rd_fail(r, "expected an integer in [0, %lld]", (long long)max);
	*out = json_integer_value(v);
	return 0;
}

/* An integer member in [0, max]: absent -> dflt, or an error when dflt < 0. */
static int rd_int(struct rd *r, json_t *obj, const char *key, json_int_t dflt, json_int_t max,
		  json_int_t *out)
{
	json_t *v = json_object_get(obj, key);
	size_t up;

	if (v == NULL && dflt < 0)
		return rd_fail_key(r, key, "missing (expected an integer)");
	if (v == NULL) {
		*out = dflt;
		return 0;
	}
	up = rd_key(r, key);
	if (rd_int_value(r, v, max, out) != 0)
		return -1;
	rd_up(r, up);
	return 0;
}

/* An array member, required. */
static int rd_array(struct rd *r, json_t *obj, const char *key, json_t **out)
{
	*out = json_object_get(obj, key);
	if (*out == NULL)
		return rd_fail_key(r, key, "missing (expected an array)");
	if (!json_is_array(*out))
		return rd_fail_key(r, key, "expected an array");
	return 0;
}

/* One character exactly (Metaspace's replacement, Strip's content). */
static int rd_char(struct rd *r, json_t *obj, const char *key, const char *dflt, char **out)
{
	if (rd_str(r, obj, key, dflt != NULL ? F_OPTIONAL : F_REQUIRED, dflt, out) != 0)
		return -1;
	if (utf8_char((const unsigned char *)*out, strlen(*out)) != strlen(*out) ||
	    **out == '\0')
		return rd_fail_key(r, key, "expected one character");
	return 0;
}

/* A `pattern`: {"String": s} or {"Regex": r}. */
static int rd_pattern(struct rd *r, json_t *obj, const char *key, struct tok_pattern *p)
{
	json_t *v = json_object_get(obj, key), *s, *re;
	size_t up;

	if (v == NULL)
		return rd_fail_key(r, key, "missing (expected {\"String\": ...} or {\"Regex\": ...})");
	up = rd_key(r, key);
	s = json_object_get(v, "String");
	re = json_object_get(v, "Regex");
	if (!json_is_object(v) || json_object_size(v) != 1 || (s == NULL && re == NULL))
		return rd_fail(r, "expected {\"String\": ...} or {\"Regex\": ...}");
	p->is_regex = re != NULL;
	if (rd_str(r, v, p->is_regex ? "Regex" : "String", F_REQUIRED, NULL, &p->text) != 0)
		return -1;
	rd_up(r, up);
	return 0;
}

/* The "type" of a part, looked up by name in a table ending in {NULL}. */
struct kind_name {
	const char *name;
	int kind;
};

static int rd_kind(struct rd *r, json_t *obj, const char *what, const struct kind_name *table,
		   int *kind)
{
	char q[QUOTE_MAX + 4];
	json_t *t;

	if (!json_is_object(obj))
		return rd_fail(r, "expected a %s object or null", what);
	t = json_object_get(obj, "type");
	if (t == NULL)
		return rd_fail(r, "missing \"type\" of the %s", what);
	if (!json_is_string(t))
		return rd_fail_key(r, "type", "expected a string");
	for (const struct kind_name *k = table; k->name != NULL; k++) {
		if (strcmp(k->name, json_string_value(t)) == 0) {
			*kind = k->kind;
			return 0;
		}
	}
	return rd_fail(r, "unsupported %s type '%s'", what, quote(q, json_string_value(t)));
}

/* A string among a table's names. */
static int rd_enum(struct rd *r, json_t *obj, const char *key, const struct kind_name *table,
		   int dflt, int *out)
{
	json_t *v = json_object_get(obj, key);
	char q[QUOTE_MAX + 4];

	if (v == NULL && dflt < 0)
		return rd_fail_key(r, key, "missing");
	if (v == NULL) {
		*out = dflt;
		return 0;
	}
	if (!json_is_string(v))
		return rd_fail_key(r, key, "expected a string");
	for (const struct kind_name *k = table; k->name != NULL; k++) {
		if (strcmp(k->name, json_string_value(v)) == 0) {
			*out = k->kind;
			return 0;
		}
	}
	return rd_fail_key(r, key, "unsupported value '%s'", quote(q, json_string_value(v)));
}

/* A Sequence's items: array member `key`, each read by `one` into items of
 * `size` bytes. *items and *n are set before any item is read, so that a
 * failure half way leaves the part releasable. */
typedef int (*read_fn)(struct rd *r, json_t *j, void *item);

static int rd_sequence(struct rd *r, json_t *obj, const char *key, read_fn one, size_t size,
		       void **items, size_t *n)
{
	json_t *arr, *v;
	size_t i, up, at;

	if (rd_array(r, obj, key, &arr) != 0)
		return -1;
	*items = rd_calloc(json_array_size(arr), size);
	if (*items == NULL)
		return rd_oom(r);
	*n = json_array_size(arr);
	up = rd_key(r, key);
	json_array_foreach(arr, i, v)
	{
		at = rd_index(r, i);
		if (one(r, v, (char *)*items + i * size) != 0)
			return -1;
		rd_up(r, at);
	}
	rd_up(r, up);
	return 0;
}

/* ---- normalizers ----------------------------------------------------------- */

static const struct kind_name NORMALIZERS[] = {
	{"NFC", TOK_NORM_NFC},
	{"NFD", TOK_NORM_NFD},
	{"NFKC", TOK_NORM_NFKC},
	{"NFKD", TOK_NORM_NFKD},
	{"Lowercase", TOK_NORM_LOWERCASE},
	{"StripAccents", TOK_NORM_STRIP_ACCENTS},
	{"BertNormalizer", TOK_NORM_BERT},
	{"Prepend", TOK_NORM_PREPEND},
	{"Replace", TOK_NORM_REPLACE},
	{"Strip", TOK_NORM_STRIP},
	{"Sequence", TOK_NORM_SEQUENCE},
	{NULL, 0},
};

/* BertNormalizer: strip_accents null (or absent) follows lowercase: -1. */
static int read_bert_normalizer(struct rd *r, json_t *j, struct tok_normalizer *n)
{
	json_t *sa = json_object_get(j, "strip_accents");

	if (rd_bool(r, j, "clean_text", 1, &n->clean_text) != 0 ||
	    rd_bool(r, j, "handle_chinese_chars", 1, &n->handle_chinese_chars) != 0 ||
	    rd_bool(r, j, "lowercase", 1, &n->lowercase) != 0)
		return -1;
	if (sa == NULL || json_is_null(sa)) {
		n->strip_accents = -1;
		return 0;
	}
	return rd_bool(r, j, "strip_accents", 0, &n->strip_accents);
}

static int read_normalizer(struct rd *r, json_t *j, void *item)
{
	struct tok_normalizer *n = item;
	int kind;

	if (rd_kind(r, j, "normalizer", NORMALIZERS, &kind) != 0)
		return -1;
	n->kind = (enum tok_norm_kind)kind;
	switch (n->kind) {
	case TOK_NORM_BERT:
		return read_bert_normalizer(r, j, n);
	case TOK_NORM_PREPEND:
		return rd_str(r, j, "prepend", F_REQUIRED, NULL, &n->prepend);
	case TOK_NORM_REPLACE:
		if (rd_pattern(r, j, "pattern", &n->pattern) != 0)
			return -1;
		return rd_str(r, j, "content", F_REQUIRED, NULL, &n->content);
	case TOK_NORM_STRIP:
		if (rd_bool(r, j, "strip_left", -1, &n->strip_left) != 0)
			return -1;
		return rd_bool(r, j, "strip_right", -1, &n->strip_right);
	case TOK_NORM_SEQUENCE:
		return rd_sequence(r, j, "normalizers", read_normalizer, sizeof *n->items,
				   (void **)&n->items, &n->n_items);
	default: /* the Unicode forms, Lowercase, StripAccents: nothing to read */
		return 0;
	}
}

/* ---- pre-tokenizers -------------------------------------------------------- */

static const struct kind_name PRETOKENIZERS[] = {
	{"ByteLevel", TOK_PRE_BYTE_LEVEL},
	{"Split", TOK_PRE_SPLIT},
	{"Metaspace", TOK_PRE_METASPACE},
	{"Whitespace", TOK_PRE_WHITESPACE},
	{"WhitespaceSplit", TOK_PRE_WHITESPACE_SPLIT},
	{"BertPreTokenizer", TOK_PRE_BERT},
	{"Punctuation", TOK_PRE_PUNCTUATION},
	{"Digits", TOK_PRE_DIGITS},
	{"Sequence", TOK_PRE_SEQUENCE},
	{NULL, 0},
};

static const struct kind_name BEHAVIORS[] = {
	{"Removed", TOK_SPLIT_REMOVED},
	{"Isolated", TOK_SPLIT_ISOLATED},
	{"MergedWithPrevious", TOK_SPLIT_MERGED_WITH_PREVIOUS},
	{"MergedWithNext", TOK_SPLIT_MERGED_WITH_NEXT},
	{"Contiguous", TOK_SPLIT_CONTIGUOUS},
	{NULL, 0},
};

static const struct kind_name PREPEND_SCHEMES[] = {
	{"always", TOK_PREPEND_ALWAYS},
	{"never", TOK_PREPEND_NEVER},
	{"first", TOK_PREPEND_FIRST},
	{NULL, 0},
};

/* Metaspace, pre-tokenizer and decoder alike: replacement (default "▁"),
 * prepend_scheme, or in older files add_prefix_space (true: always, false:
 * never), and split (default true). */
static int rd_metaspace(struct rd *r, json_t *j, char **replacement,
			enum tok_prepend_scheme *scheme, int *split)
{
	int s = TOK_PREPEND_ALWAYS, add;

	if (rd_char(r, j, "replacement", "\xe2\x96\x81", replacement) != 0 ||
	    rd_bool(r, j, "split", 1, split) != 0)
		return -1;
	if (json_object_get(j, "prepend_scheme") != NULL) {
		if (rd_enum(r, j, "prepend_scheme", PREPEND_SCHEMES, -1, &s) != 0)
			return -1;
	} else {
		if (rd_bool(r, j, "add_prefix_space", 1, &add) != 0)
			return -1;
		s = add ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
	}
	*scheme = (enum tok_prepend_scheme)s;
	return 0;
}

static int read_pretokenizer(struct rd *r, json_t *j, void *item)
{
	struct tok_pretokenizer *p = item;
	int kind, behavior;

	if (rd_kind(r, j, "pre-tokenizer", PRETOKENIZERS, &kind) != 0)
		return -1;
	p->kind = (enum tok_pre_kind)kind;
	switch (p->kind) {
	case TOK_PRE_BYTE_LEVEL:
		if (rd_bool(r, j, "add_prefix_space", 1, &p->add_prefix_space) != 0)
			return -1;
		return rd_bool(r, j, "use_regex", 1, &p->use_regex);
	case TOK_PRE_SPLIT:
		if (rd_pattern(r, j, "pattern", &p->pattern) != 0 ||
		    rd_enum(r, j, "behavior", BEHAVIORS, -1, &behavior) != 0)
			return -1;
		p->behavior = (enum tok_split_behavior)behavior;
		return rd_bool(r, j, "invert", 0, &p->invert);
	case TOK_PRE_METASPACE:
		return rd_metaspace(r, j, &p->replacement, &p->prepend_scheme, &p->split);
	case TOK_PRE_PUNCTUATION:
		if (rd_enum(r, j, "behavior", BEHAVIORS, TOK_SPLIT_ISOLATED, &behavior) != 0)
			return -1;
		p->behavior = (enum tok_split_behavior)behavior;
		return 0;
	case TOK_PRE_DIGITS:
		return rd_bool(r, j, "individual_digits", 0, &p->individual_digits);
	case TOK_PRE_SEQUENCE:
		return rd_sequence(r, j, "pretokenizers", read_pretokenizer, sizeof *p->items,
				   (void **)&p->items, &p->n_items);
	default: /* Whitespace, WhitespaceSplit, BertPreTokenizer */
		return 0;
	}
}

/* ---- models ---------------------------------------------------------------- */

static const struct kind_name MODELS[] = {
	{"BPE", TOK_MODEL_BPE},
	{"WordPiece", TOK_MODEL_WORDPIECE},
	{"Unigram", TOK_MODEL_UNIGRAM},
	{NULL, 0},
};

/* Older files leave the model's "type" out: Hugging Face then tells the
 * kinds apart by their fields, as here. */
static int model_kind(struct rd *r, json_t *j, int *kind)
{
	if (!json_is_object(j))
		return rd_fail(r, "expected a model object");
	if (json_object_get(j, "type") != NULL)
		return rd_kind(r, j, "model", MODELS, kind);
	if (json_object_get(j, "merges") != NULL)
		*kind = TOK_MODEL_BPE;
	else if (json_is_array(json_object_get(j, "vocab")))
		*kind = TOK_MODEL_UNIGRAM;
	else if (json_object_get(j, "max_input_chars_per_word") != NULL)
		*kind = TOK_MODEL_WORDPIECE;
	else
		return rd_fail(r, "missing \"type\" of the model, and its fields do not say it");
	return 0;
}

static int id_cmp(const void *pa, const void *pb)
{
	const struct tok_vocab_entry *a = pa, *b = pb;

	return a->id < b->id ? -1 : a->id > b->id;
}

/* FNV-1a, 32 bit, for the table of pieces below. */
static uint32_t fnv1a(const char *p)
{
	uint32_t h = 2166136261u;

	for (; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h;
}

/* Refuses a piece given twice: jansson would refuse the duplicate key, and
 * the vocabulary read without it must too. An open-addressing table of
 * indices + 1, at most half full. */
static int pieces_unique(struct rd *r, const struct tok_model *m)
{
	char q[QUOTE_MAX + 4];
	size_t slots = 16;
	uint32_t *t;
	int rc = 0;

	while (slots < 2 * m->n_vocab)
		slots *= 2;
	t = calloc(slots, sizeof *t);
	if (t == NULL)
		return rd_oom(r);
	for (size_t i = 0; i < m->n_vocab && rc == 0; i++) {
		size_t h = fnv1a(m->vocab[i].piece) & (slots - 1);

		while (t[h] != 0 && strcmp(m->vocab[t[h] - 1].piece, m->vocab[i].piece) != 0)
			h = (h + 1) & (slots - 1);
		if (t[h] != 0)
			rc = rd_fail(r, "'%s' is given twice", quote(q, m->vocab[i].piece));
		t[h] = (uint32_t)i + 1;
	}
	free(t);
	return rc;
}

/* Refuses a piece given twice and two pieces with one id. Leaves the
 * vocabulary sorted by id (the order of a {"piece": id} object means
 * nothing; by id is how a reader expects it). */
static int vocab_unique(struct rd *r, struct tok_model *m)
{
	char q[QUOTE_MAX + 4], q2[QUOTE_MAX + 4];

	if (m->n_vocab == 0)
		return 0; /* and m->vocab may be NULL, which qsort may not take */
	if (m->n_vocab > INT32_MAX)
		return rd_fail(r, "more than 2^31 - 1 pieces");
	if (pieces_unique(r, m) != 0)
		return -1;
	qsort(m->vocab, m->n_vocab, sizeof *m->vocab, id_cmp);
	for (size_t i = 1; i < m->n_vocab; i++) {
		if (m->vocab[i - 1].id == m->vocab[i].id)
			return rd_fail(r, "id %d is given to both '%s' and '%s'",
				       (int)m->vocab[i].id, quote(q, m->vocab[i - 1].piece),
				       quote(q2, m->vocab[i].piece));
	}
	return 0;
}

/* One merge "left right" (exactly one space, as Hugging Face splits it) into m. */
static int split_merge(struct rd *r, const char *s, size_t len, struct tok_merge *m)
{
	const char *sp = memchr(s, ' ', len);

	if (sp == NULL || sp == s || sp + 1 == s + len || memchr(sp + 1, ' ', len - (size_t)(sp + 1 - s)))
		return rd_fail(r, "expected two pieces separated by one space");
	if (rd_dup(r, s, (size_t)(sp - s), &m->left) != 0)
		return -1;
	return rd_dup(r, sp + 1, len - (size_t)(sp - s) - 1, &m->right);
}

/* A {"piece": id} vocabulary, read before jansson (tokenizer_vocab.c: the
 * tree holds `{}` in its place), checked whole here. */
static int read_vocab(struct rd *r, json_t *j, struct tok_model *m)
{
	json_t *v = json_object_get(j, "vocab");
	size_t up;

	if (v == NULL)
		return rd_fail_key(r, "vocab", "missing (expected an object {\"piece\": id, ...})");
	if (!json_is_object(v))
		return rd_fail_key(r, "vocab", "expected an object {\"piece\": id, ...}");
	up = rd_key(r, "vocab");
	if (vocab_unique(r, m) != 0)
		return -1;
	rd_up(r, up);
	return 0;
}

/* The merges, read before jansson (the tree holds `[]` in their place). */
static int read_merges(struct rd *r, json_t *j)
{
	json_t *v = json_object_get(j, "merges");

	if (v == NULL)
		return rd_fail_key(r, "merges", "missing (expected an array)");
	if (!json_is_array(v))
		return rd_fail_key(r, "merges", "expected an array of merges");
	return 0;
}

static int read_bpe(struct rd *r, json_t *j, struct tok_model *m)
{
	json_t *dropout = json_object_get(j, "dropout");

	if (dropout != NULL && !json_is_null(dropout))
		return rd_fail_key(r, "dropout",
				   "BPE dropout is not supported (it makes encoding random); "
				   "expected null");
	if (read_vocab(r, j, m) != 0 || read_merges(r, j) != 0)
		return -1;
	if (rd_str(r, j, "unk_token", F_NULLABLE, NULL, &m->unk_token) != 0 ||
	    rd_str(r, j, "continuing_subword_prefix", F_NULLABLE, NULL,
		   &m->continuing_subword_prefix) != 0 ||
	    rd_str(r, j, "end_of_word_suffix", F_NULLABLE, NULL, &m->end_of_word_suffix) != 0)
		return -1;
	if (rd_bool(r, j, "fuse_unk", 0, &m->fuse_unk) != 0 ||
	    rd_bool(r, j, "byte_fallback", 0, &m->byte_fallback) != 0)
		return -1;
	return rd_bool(r, j, "ignore_merges", 0, &m->ignore_merges);
}

static int read_wordpiece(struct rd *r, json_t *j, struct tok_model *m)
{
	json_int_t max;

	if (read_vocab(r, j, m) != 0)
		return -1;
	if (rd_str(r, j, "unk_token", F_OPTIONAL, "[UNK]", &m->unk_token) != 0 ||
	    rd_str(r, j, "continuing_subword_prefix", F_OPTIONAL, "##",
		   &m->continuing_subword_prefix) != 0 ||
	    rd_int(r, j, "max_input_chars_per_word", 100, INT32_MAX, &max) != 0)
		return -1;
	m->max_input_chars_per_word = (size_t)max;
	return 0;
}

/* One [piece, score] of a Unigram vocabulary; its id is its index. */
static int read_unigram_piece(struct rd *r, json_t *v, size_t i, struct tok_vocab_entry *e)
{
	json_t *piece = json_array_get(v, 0), *score = json_array_get(v, 1);

	if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(piece) ||
	    !json_is_number(score))
		return rd_fail(r, "expected [\"piece\", score]");
	e->id = (int32_t)i;
	e->score = json_number_value(score);
	return rd_dup(r, json_string_value(piece), json_string_length(piece), &e->piece);
}

static int read_unigram(struct rd *r, json_t *j, struct tok_model *m)
{
	json_t *arr, *unk;
	size_t up;

	if (rd_array(r, j, "vocab", &arr) != 0)
		return -1;
	if (json_array_size(arr) > INT32_MAX)
		return rd_fail_key(r, "vocab", "more than 2^31 - 1 pieces");
	m->vocab = rd_calloc(json_array_size(arr), sizeof *m->vocab);
	if (m->vocab == NULL)
		return rd_oom(r);
	m->n_vocab = json_array_size(arr);
	up = rd_key(r, "vocab");
	for (size_t i = m->n_vocab; i-- > 0;) {
		size_t at = rd_index(r, i);

		if (read_unigram_piece(r, json_array_get(arr, i), i, &m->vocab[i]) != 0)
			return -1;
		rd_up(r, at);
		json_array_remove(arr, i);
	}
	rd_up(r, up);
	m->unk_id = -1;
	unk = json_object_get(j, "unk_id");
	if (unk != NULL && !json_is_null(unk)) {
		json_int_t id;

		if (m->n_vocab == 0)
			return rd_fail_key(r, "unk_id", "the vocabulary is empty");
		if (rd_int(r, j, "unk_id", -1, (json_int_t)m->n_vocab - 1, &id) != 0)
			return -1;
		m->unk_id = (int32_t)id;
	}
	return rd_bool(r, j, "byte_fallback", 0, &m->byte_fallback);
}

static int read_model(struct rd *r, json_t *j, struct tok_model *m)
{
	int kind;

	if (model_kind(r, j, &kind) != 0)
		return -1;
	m->kind = (enum tok_model_kind)kind;
	m->unk_id = -1;
	if (m->kind != TOK_MODEL_BPE && r->pre.merges_end > 0)
		return rd_fail_key(r, "merges", "only a BPE model has merges");
	switch (m->kind) {
	case TOK_MODEL_BPE:
		return read_bpe(r, j, m);
	case TOK_MODEL_WORDPIECE:
		return read_wordpiece(r, j, m);
	default:
		return read_unigram(r, j, m);
	}
}

/* ---- added tokens ---------------------------------------------------------- */

static int read_added_token(struct rd *r, json_t *j, void *item)
{
	struct tok_added *a = item;
	json_int_t id;

	if (!json_is_object(j))
		return rd_fail(r, "expected an added token object");
	if (rd_int(r, j, "id", -1, INT32_MAX, &id) != 0 ||
	    rd_str(r, j, "content", F_REQUIRED, NULL, &a->content) != 0)
		return -1;
	a->id = (int32_t)id;
	if (a->content[0] == '\0')
		return rd_fail_key(r, "content", "an added token may not be empty");
	if (rd_bool(r, j, "special", 0, &a->special) != 0 ||
	    rd_bool(r, j, "single_word", 0, &a->single_word) != 0 ||
	    rd_bool(r, j, "lstrip", 0, &a->lstrip) != 0 ||
	    rd_bool(r, j, "rstrip", 0, &a->rstrip) != 0)
		return -1;
	/* Hugging Face: normalized defaults to the opposite of special */
	return rd_bool(r, j, "normalized", !a->special, &a->normalized);
}

/* ---- post-processors ------------------------------------------------------- */

static const struct kind_name POSTS[] = {
	{"TemplateProcessing", TOK_POST_TEMPLATE},
	{"BertProcessing", TOK_POST_BERT},
	{"RobertaProcessing", TOK_POST_ROBERTA},
	{"ByteLevel", TOK_POST_BYTE_LEVEL},
	{"Sequence", TOK_POST_SEQUENCE},
	{NULL, 0},
};

/* BertProcessing's and RobertaProcessing's ["token", id]. */
static int rd_token_id(struct rd *r, json_t *j, const char *key, char **token, int32_t *id)
{
	json_t *v = json_object_get(j, key), *t = json_array_get(v, 0), *i = json_array_get(v, 1);

	if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(t) ||
	    !json_is_integer(i) || json_integer_value(i) < 0 || json_integer_value(i) > INT32_MAX)
		return rd_fail_key(r, key, "expected [\"token\", id]");
	*id = (int32_t)json_integer_value(i);
	return rd_dup(r, json_string_value(t), json_string_length(t), token);
}

/* One {"id": name, "ids": [...], "tokens": [...]} of special_tokens. */
static int read_template_special(struct rd *r, const char *name, json_t *v,
				 struct tok_template_special *sp)
{
	json_t *ids, *tokens, *x;
	size_t i;

	if (!json_is_object(v))
		return rd_fail(r, "expected {\"id\", \"ids\", \"tokens\"}");
	if (rd_dup(r, name, strlen(name), &sp->name) != 0 || rd_array(r, v, "ids", &ids) != 0 ||
	    rd_array(r, v, "tokens", &tokens) != 0)
		return -1;
	if (json_array_size(ids) != json_array_size(tokens))
		return rd_fail(r, "\"ids\" and \"tokens\" differ in length");
	sp->ids = rd_calloc(json_array_size(ids), sizeof *sp->ids);
	sp->tokens = rd_calloc(json_array_size(ids), sizeof *sp->tokens);
	if (sp->ids == NULL || sp->tokens == NULL)
		return rd_oom(r);
	sp->n = json_array_size(ids);
	json_array_foreach(ids, i, x)
	{
		json_t *t = json_array_get(tokens, i);
		size_t up = rd_key(r, "ids");
		json_int_t id;

		rd_index(r, i);
		if (rd_int_value(r, x, INT32_MAX, &id) != 0)
			return -1;
		rd_up(r, up);
		sp->ids[i] = (int32_t)id;
		if (!json_is_string(t)) {
			rd_key(r, "tokens");
			rd_index(r, i);
			return rd_fail(r, "expected a string");
		}
		if (rd_dup(r, json_string_value(t), json_string_length(t), &sp->tokens[i]) != 0)
			return -1;
	}
	return 0;
}

static int read_template_specials(struct rd *r, json_t *j, struct tok_post *p)
{
	json_t *obj = json_object_get(j, "special_tokens"), *v;
	const char *name;
	size_t n = 0, up;

	if (obj == NULL)
		obj = json_object(); /* none: an empty object, released below */
	else if (!json_is_object(obj))
		return rd_fail_key(r, "special_tokens", "expected an object");
	else
		json_incref(obj);
	p->specials = rd_calloc(json_object_size(obj), sizeof *p->specials);
	if (obj == NULL || p->specials == NULL) {
		json_decref(obj);
		return rd_oom(r);
	}
	p->n_specials = json_object_size(obj);
	up = rd_key(r, "special_tokens");
	json_object_foreach(obj, name, v)
	{
		size_t at = rd_key(r, name);

		if (read_template_special(r, name, v, &p->specials[n++]) != 0) {
			json_decref(obj);
			return -1;
		}
		rd_up(r, at);
	}
	rd_up(r, up);
	json_decref(obj);
	return 0;
}

/* One piece of `single`: {"SpecialToken": {"id": name, ...}} or
 * {"Sequence": {"id": "A", ...}}; a special token must be in special_tokens. */
static int read_template_piece(struct rd *r, json_t *v, const struct tok_post *p,
			       struct tok_template_piece *piece)
{
	char q[QUOTE_MAX + 4];
	json_t *special = json_object_get(v, "SpecialToken"), *seq = json_object_get(v, "Sequence");

	if (!json_is_object(v) || json_object_size(v) != 1 || (special == NULL && seq == NULL))
		return rd_fail(r, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
	piece->is_sequence = seq != NULL;
	rd_key(r, seq != NULL ? "Sequence" : "SpecialToken");
	if (!json_is_object(seq != NULL ? seq : special))
		return rd_fail(r, "expected an object with an \"id\"");
	if (seq != NULL)
		return 0;
	if (rd_str(r, special, "id", F_REQUIRED, NULL, &piece->special) != 0)
		return -1;
	for (size_t i = 0; i < p->n_specials; i++)
		if (strcmp(p->specials[i].name, piece->special) == 0)
			return 0;
	return rd_fail_key(r, "id", "'%s' is not among the special_tokens",
			   quote(q, piece->special));
}

/* TemplateProcessing: `single` (one sequence: `pair` is for pairs, which
 * attnd never encodes) and its special_tokens. */
static int read_template(struct rd *r, json_t *j, struct tok_post *p)
{
	json_t *single, *v;
	size_t i, up;

	if (read_template_specials(r, j, p) != 0 || rd_array(r, j, "single", &single) != 0)
		return -1;
	p->single = rd_calloc(json_array_size(single), sizeof *p->single);
	if (p->single == NULL)
		return rd_oom(r);
	p->n_single = json_array_size(single);
	up = rd_key(r, "single");
	json_array_foreach(single, i, v)
	{
		size_t at = rd_index(r, i);

		if (read_template_piece(r, v, p, &p->single[i]) != 0)
			return -1;
		rd_up(r, at);
	}
	rd_up(r, up);
	return 0;
}

static int read_post(struct rd *r, json_t *j, void *item)
{
	struct tok_post *p = item;
	int kind;

	if (rd_kind(r, j, "post-processor", POSTS, &kind) != 0)
		return -1;
	p->kind = (enum tok_post_kind)kind;
	switch (p->kind) {
	case TOK_POST_TEMPLATE:
		return read_template(r, j, p);
	case TOK_POST_BERT:
		if (rd_token_id(r, j, "sep", &p->sep, &p->sep_id) != 0)
			return -1;
		return rd_token_id(r, j, "cls", &p->cls, &p->cls_id);
	case TOK_POST_ROBERTA: /* and ByteLevel's trim_offsets, add_prefix_space */
		if (rd_token_id(r, j, "sep", &p->sep, &p->sep_id) != 0 ||
		    rd_token_id(r, j, "cls", &p->cls, &p->cls_id) != 0)
			return -1;
		/* fall through */
	case TOK_POST_BYTE_LEVEL:
		if (rd_bool(r, j, "trim_offsets", 1, &p->trim_offsets) != 0)
			return -1;
		return rd_bool(r, j, "add_prefix_space", 1, &p->add_prefix_space);
	default:
		return rd_sequence(r, j, "processors", read_post, sizeof *p->items,
				   (void **)&p->items, &p->n_items);
	}
}

/* ---- decoders -------------------------------------------------------------- */

static const struct kind_name DECODERS[] = {
	{"ByteLevel", TOK_DEC_BYTE_LEVEL},
	{"Metaspace", TOK_DEC_METASPACE},
	{"WordPiece", TOK_DEC_WORDPIECE},
	{"ByteFallback", TOK_DEC_BYTE_FALLBACK},
	{"Fuse", TOK_DEC_FUSE},
	{"Strip", TOK_DEC_STRIP},
	{"Replace", TOK_DEC_REPLACE},
	{"Sequence", TOK_DEC_SEQUENCE},
	{NULL, 0},
};

static int read_decoder(struct rd *r, json_t *j, void *item)
{
	struct tok_decoder *d = item;
	json_int_t start, stop;
	int kind, split;

	if (rd_kind(r, j, "decoder", DECODERS, &kind) != 0)
		return -1;
	d->kind = (enum tok_dec_kind)kind;
	switch (d->kind) {
	case TOK_DEC_METASPACE:
		return rd_metaspace(r, j, &d->replacement, &d->prepend_scheme, &split);
	case TOK_DEC_WORDPIECE:
		if (rd_str(r, j, "prefix", F_OPTIONAL, "##", &d->prefix) != 0)
			return -1;
		return rd_bool(r, j, "cleanup", 1, &d->cleanup);
	case TOK_DEC_STRIP:
		if (rd_char(r, j, "content", NULL, &d->content) != 0 ||
		    rd_int(r, j, "start", -1, INT32_MAX, &start) != 0 ||
		    rd_int(r, j, "stop", -1, INT32_MAX, &stop) != 0)
			return -1;
		d->strip_start = (size_t)start;
		d->strip_stop = (size_t)stop;
		return 0;
	case TOK_DEC_REPLACE:
		if (rd_pattern(r, j, "pattern", &d->pattern) != 0)
			return -1;
		return rd_str(r, j, "content", F_REQUIRED, NULL, &d->content);
	case TOK_DEC_SEQUENCE:
		return rd_sequence(r, j, "decoders", read_decoder, sizeof *d->items,
				   (void **)&d->items, &d->n_items);
	default: /* ByteLevel, ByteFallback, Fuse */
		return 0;
	}
}

/* ---- the whole file -------------------------------------------------------- */

/* An optional part at member `key`: absent or null -> *out stays NULL; else
 * a new part of `size` bytes read by `one`. *out is set before reading, so a
 * failure leaves it for tok_spec_release. */
static int read_part(struct rd *r, json_t *root, const char *key, read_fn one, size_t size,
		     void **out)
{
	json_t *v = json_object_get(root, key);
	size_t up;

	if (v == NULL || json_is_null(v))
		return 0;
	*out = rd_calloc(1, size);
	if (*out == NULL)
		return rd_oom(r);
	up = rd_key(r, key);
	if (one(r, v, *out) != 0)
		return -1;
	rd_up(r, up);
	return 0;
}

/* truncation and padding change what encode returns; attnd does neither, so
 * a file that asks for them is refused rather than answered differently. */
static int refuse_unsupported(struct rd *r, json_t *root)
{
	static const char *const keys[] = {"truncation", "padding"};

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		json_t *v = json_object_get(root, keys[i]);

		if (v != NULL && !json_is_null(v))
			return rd_fail_key(r, keys[i], "%s is not supported; expected null",
					   keys[i]);
	}
	return 0;
}

static int read_root(struct rd *r, json_t *root, struct tok_spec *s)
{
	json_t *model = json_object_get(root, "model"), *added;
	size_t up;

	if (!json_is_object(root))
		return rd_fail(r, "expected a JSON object (a tokenizer.json)");
	if (model == NULL)
		return rd_fail_key(r, "model", "missing");
	if (refuse_unsupported(r, root) != 0)
		return -1;
	/* the model first: its vocabulary and merges leave the tree as they go */
	up = rd_key(r, "model");
	if (read_model(r, model, &s->model) != 0)
		return -1;
	rd_up(r, up);
	added = json_object_get(root, "added_tokens");
	if (added != NULL && !json_is_null(added) &&
	    rd_sequence(r, root, "added_tokens", read_added_token, sizeof *s->added,
			(void **)&s->added, &s->n_added) != 0)
		return -1;
	if (read_part(r, root, "normalizer", read_normalizer, sizeof *s->normalizer,
		      (void **)&s->normalizer) != 0 ||
	    read_part(r, root, "pre_tokenizer", read_pretokenizer, sizeof *s->pretokenizer,
		      (void **)&s->pretokenizer) != 0 ||
	    read_part(r, root, "post_processor", read_post, sizeof *s->post,
		      (void **)&s->post) != 0)
		return -1;
	return read_part(r, root, "decoder", read_decoder, sizeof *s->decoder,
			 (void **)&s->decoder);
}

/* The file as jansson is fed it: every byte as it is, but for the spans
 * tokvocab_read read, each of which becomes its own two brackets with as
 * many newlines between as it had, then as many blanks as its last line had
 * before the closing bracket: jansson's lines and columns stay the file's. */
struct feed_seg {
	const char *p; /* bytes to copy, or NULL: n times `fill` */
	size_t n;
	char fill;
};

struct feed {
	struct feed_seg seg[11]; /* 3 stretches of the file, 4 segments a span */
	size_t n_seg, i, at;     /* segment i, byte at of it */
};

static void feed_span(struct feed *f, const char *b, size_t start, size_t end)
{
	size_t lines = 0, last = start; /* the byte before the last line */

	for (const char *nl = memchr(b + start, '\n', end - start); nl != NULL;
	     nl = memchr(nl + 1, '\n', (size_t)(b + end - nl - 1))) {
		lines++;
		last = (size_t)(nl - b);
	}
	f->seg[f->n_seg++] = (struct feed_seg){b + start, 1, 0};
	f->seg[f->n_seg++] = (struct feed_seg){NULL, lines, '\n'};
	f->seg[f->n_seg++] = (struct feed_seg){NULL, end - 2 - last, ' '};
	f->seg[f->n_seg++] = (struct feed_seg){b + end - 1, 1, 0};
}

static void feed_init(struct feed *f, const char *b, size_t len, const struct tokvocab_spans *sp)
{
	size_t start[2] = {sp->vocab_start, sp->merges_start};
	size_t end[2] = {sp->vocab_end, sp->merges_end};
	size_t at = 0;
	int first = start[1] < start[0]; /* the span that comes first */

	memset(f, 0, sizeof *f);
	for (int k = 0; k < 2; k++) {
		int s = k == 0 ? first : !first;

		if (end[s] == 0)
			continue;
		f->seg[f->n_seg++] = (struct feed_seg){b + at, start[s] - at, 0};
		feed_span(f, b, start[s], end[s]);
		at = end[s];
	}
	f->seg[f->n_seg++] = (struct feed_seg){b + at, len - at, 0};
}

static size_t feed_next(void *buffer, size_t buflen, void *data)
{
	struct feed *f = data;
	char *out = buffer;
	size_t n = 0;

	while (n < buflen && f->i < f->n_seg) {
		const struct feed_seg *g = &f->seg[f->i];
		size_t k = g->n - f->at < buflen - n ? g->n - f->at : buflen - n;

		if (g->p != NULL)
			memcpy(out + n, g->p + f->at, k);
		else
			memset(out + n, g->fill, k);
		n += k;
		f->at += k;
		if (f->at == g->n) {
			f->i++;
			f->at = 0;
		}
	}
	return n;
}

/* Parses a whole file with jansson (duplicate keys refused), the spans r->pre
 * left out: the root, or NULL with the message "FILE:LINE:COLUMN: what". */
static json_t *load(struct rd *r, const char *bytes, size_t len)
{
	struct feed f;
	json_error_t jerr;
	json_t *root;

	feed_init(&f, bytes, len, &r->pre);
	root = json_load_callback(feed_next, &f, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		snprintf(r->err, r->errlen, "%s:%d:%d: %s", r->file, jerr.line, jerr.column,
			 jerr.text);
	return root;
}

static void rd_init(struct rd *r, const char *file, char *err, size_t errlen)
{
	r->file = file;
	r->ptr[0] = '\0';
	r->plen = 0;
	r->err = err;
	r->errlen = errlen;
	memset(&r->pre, 0, sizeof r->pre);
}

int api_tokenizer_spec_json(struct tok_spec *spec, const char *bytes, size_t len,
			    const char *file, char *err, size_t errlen)
{
	struct rd r;
	json_t *root;
	int rc;

	memset(spec, 0, sizeof *spec);
	rd_init(&r, file, err, errlen);
	if (len > API_TOKENIZER_FILE_MAX)
		return rd_fail(&r, "%zu bytes, over the %zu MiB limit", len,
			       API_TOKENIZER_FILE_MAX >> 20);
	if (tokvocab_read(bytes, len, file, &spec->model, &r.pre, err, errlen) != 0) {
		tok_spec_release(spec);
		return -1;
	}
	root = load(&r, bytes, len);
	rc = root != NULL ? read_root(&r, root, spec) : -1;
	json_decref(root);
	if (rc != 0)
		tok_spec_release(spec);
	return rc;
}

/* ---- GPT-2's vocab.json and merges.txt -------------------------------------- */

/* The line at b[at..len) without its "\n" or "\r\n": its length in *n;
 * returns where the next line starts. */
static size_t next_line(const char *b, size_t len, size_t at, size_t *n)
{
	const char *nl = memchr(b + at, '\n', len - at);
	size_t end = nl != NULL ? (size_t)(nl - b) : len;

	*n = end - at;
	if (*n > 0 && b[end - 1] == '\r')
		(*n)--;
	return nl != NULL ? end + 1 : len;
}

/* Whether line number `line` (0-based), s[0..n), holds no merge: blank, or
 * the "#version" line that opens GPT-2's file. */
static int merge_line_skipped(const char *s, size_t n, size_t line)
{
	return n == 0 || (line == 0 && n >= 8 && memcmp(s, "#version", 8) == 0);
}

static size_t count_merges(const char *b, size_t len)
{
	size_t n, count = 0, line = 0;

	for (size_t at = 0; at < len; line++) {
		size_t next = next_line(b, len, at, &n);

		count += !merge_line_skipped(b + at, n, line);
		at = next;
	}
	return count;
}

/* merges.txt: one "left right" a line, rank by rank. Messages name the line
 * ("merges.txt:7: ..."), so the reader's pointer is the line. */
static int read_merges_txt(struct rd *r, const char *b, size_t len, struct tok_model *m)
{
	size_t n, k = 0, line = 0;

	if (len > API_TOKENIZER_FILE_MAX)
		return rd_fail(r, "%zu bytes, over the %zu MiB limit", len,
			       API_TOKENIZER_FILE_MAX >> 20);
	m->merges = rd_calloc(count_merges(b, len), sizeof *m->merges);
	if (m->merges == NULL)
		return rd_oom(r);
	m->n_merges = count_merges(b, len);
	for (size_t at = 0; at < len; line++) {
		size_t next = next_line(b, len, at, &n), bad = utf8_check(b + at, n);
		const char *file = r->file;
		char where[PTR_MAX + 32];

		if (!merge_line_skipped(b + at, n, line)) {
			snprintf(where, sizeof where, "%s:%zu", file, line + 1);
			r->file = where; /* "merges.txt:7: ..." */
			if (bad < n)
				return rd_fail(r, "invalid UTF-8 at column %zu", bad + 1);
			if (memchr(b + at, '\0', n) != NULL) /* a piece is a C string */
				return rd_fail(r, "a NUL byte at column %zu",
					       (size_t)((const char *)memchr(b + at, '\0', n) - (b + at)) + 1);
			if (split_merge(r, b + at, n, &m->merges[k++]) != 0)
				return -1;
			r->file = file;
		}
		at = next;
	}
	return 0;
}

/* GPT-2's pipeline around a BPE model, as its own tokenizer.json has it. */
static int gpt2_pipeline(struct rd *r, struct tok_spec *s)
{
	static const char eot[] = "<|endoftext|>";

	s->pretokenizer = rd_calloc(1, sizeof *s->pretokenizer);
	s->post = rd_calloc(1, sizeof *s->post);
	s->decoder = rd_calloc(1, sizeof *s->decoder);
	if (s->pretokenizer == NULL || s->post == NULL || s->decoder == NULL)
		return rd_oom(r);
	*s->pretokenizer = (struct tok_pretokenizer){
	    .kind = TOK_PRE_BYTE_LEVEL, .add_prefix_space = 0, .use_regex = 1};
	*s->post = (struct tok_post){
	    .kind = TOK_POST_BYTE_LEVEL, .trim_offsets = 0, .add_prefix_space = 1};
	s->decoder->kind = TOK_DEC_BYTE_LEVEL;
	for (size_t i = 0; i < s->model.n_vocab; i++) {
		if (strcmp(s->model.vocab[i].piece, eot) != 0)
			continue;
		s->added = rd_calloc(1, sizeof *s->added);
		if (s->added == NULL)
			return rd_oom(r);
		s->n_added = 1;
		*s->added = (struct tok_added){.id = s->model.vocab[i].id, .normalized = 1,
					       .special = 1};
		return rd_dup(r, eot, sizeof eot - 1, &s->added->content);
	}
	return 0;
}

int api_tokenizer_spec_gpt2(struct tok_spec *spec, const char *vocab, size_t vocab_len,
			    const char *vocab_file, const char *merges, size_t merges_len,
			    const char *merges_file, char *err, size_t errlen)
{
	struct rd r;
	int rc = -1;

	memset(spec, 0, sizeof *spec);
	spec->model.kind = TOK_MODEL_BPE;
	spec->model.unk_id = -1;
	rd_init(&r, vocab_file, err, errlen);
	if (vocab_len > API_TOKENIZER_FILE_MAX) {
		rd_fail(&r, "%zu bytes, over the %zu MiB limit", vocab_len,
			API_TOKENIZER_FILE_MAX >> 20);
		goto out;
	}
	if (tokvocab_read_object(vocab, vocab_len, vocab_file, &spec->model, err, errlen) != 0 ||
	    vocab_unique(&r, &spec->model) != 0)
		goto out;
	rd_init(&r, merges_file, err, errlen);
	if (read_merges_txt(&r, merges, merges_len, &spec->model) != 0 ||
	    gpt2_pipeline(&r, spec) != 0)
		goto out;
	rc = 0;
out:
	if (rc != 0)
		tok_spec_release(spec);
	return rc;
}

/* ---- building ------------------------------------------------------------- */

int api_tokenizer_build(struct tok_spec *spec, const char *file, struct tokenizer **out,
			char *err, size_t errlen)
{
	char msg[512];

	if (tok_build(spec, out, msg, sizeof msg) == TOK_OK)
		return 0;
	snprintf(err, errlen, "%s: %s", file, msg);
	return -1;
}

int api_tokenizer_load_json(struct tokenizer **out, const char *bytes, size_t len,
			    const char *file, char *err, size_t errlen)
{
	struct tok_spec spec;

	*out = NULL;
	if (api_tokenizer_spec_json(&spec, bytes, len, file, err, errlen) != 0)
		return -1;
	return api_tokenizer_build(&spec, file, out, err, errlen);
}

int api_tokenizer_load_gpt2(struct tokenizer **out, const char *vocab, size_t vocab_len,
			    const char *vocab_file, const char *merges, size_t merges_len,
			    const char *merges_file, char *err, size_t errlen)
{
	struct tok_spec spec;

	*out = NULL;
	if (api_tokenizer_spec_gpt2(&spec, vocab, vocab_len, vocab_file, merges, merges_len,
				    merges_file, err, errlen) != 0)
		return -1;
	return api_tokenizer_build(&spec, vocab_file, out, err, errlen);
}
