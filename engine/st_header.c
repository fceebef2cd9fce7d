/*
 * st_header.c: passes 1 and 2 of the safetensors loader (see st_header.h).
 *
 *   1. parse the JSON header into a table of tensor entries (name, dtype,
 *      shape, data offsets), checking syntax, offset ranges and byte sizes;
 *   2. check the table as a whole: no duplicate names, no overlapping data;
 *      the table is left sorted by name, for st_table_find.
 * Neither reads outside [buf, buf + len).
 *
 * The header is parsed against the format's fixed schema, not as general JSON
 * (format: huggingface/safetensors README, "Format"):
 *   header   := '{' ws (entry (',' entry)*)? '}' ws         (ws: JSON whitespace;
 *   entry    := string ':' (tensor | metadata)               writers pad with spaces)
 *   tensor   := '{' "dtype": string, "shape": [int, ...], "data_offsets": [int, int] '}'
 *               (in any order, each exactly once, no other key)
 *   metadata := '{' (string ':' string)* '}'                 (only as "__metadata__")
 * So nesting is at most three levels deep by construction: any other '[' or '{'
 * is a syntax error where it stands, and the parser never recurses, however
 * deep the input nests. Integers are JSON's (no sign, fraction or leading
 * zero) and must fit size_t; strings are JSON's, with valid UTF-8 and paired
 * surrogates. Data offsets may leave gaps but never overlap.
 *
 * Statuses: TRUNCATED when the header or a tensor's data runs past the end of
 * the buffer; FORMAT for a malformed header, backwards or overlapping offsets,
 * a byte size that disagrees with shape and dtype, or a duplicate name;
 * OVERFLOW when a number or a shape's byte size does not fit size_t; NOMEM.
 */
#include "st_header.h"

#include <stdlib.h>
#include <string.h>

#include "sizes.h"

/* The reference implementation's limit; a larger header is refused, not parsed. */
#define ST_MAX_HEADER ((uint64_t)100000000)

static const struct st_dtype {
	const char *name;
	size_t size;
	enum st_kind kind;
} st_dtypes[] = {
	{"F32", 4, ST_F32},       {"F16", 2, ST_F16},       {"BF16", 2, ST_BF16},
	{"F64", 8, ST_OTHER},     {"I64", 8, ST_OTHER},     {"U64", 8, ST_OTHER},
	{"I32", 4, ST_OTHER},     {"U32", 4, ST_OTHER},     {"I16", 2, ST_OTHER},
	{"U16", 2, ST_OTHER},     {"I8", 1, ST_OTHER},      {"U8", 1, ST_OTHER},
	{"BOOL", 1, ST_OTHER},    {"F8_E4M3", 1, ST_OTHER}, {"F8_E5M2", 1, ST_OTHER},
};

struct st_parser {
	const uint8_t *file; /* buf, for byte offsets in messages */
	const uint8_t *p;    /* next unread header byte */
	const uint8_t *end;  /* one past the header */
	const struct st_tensor *cur; /* the entry being parsed, for messages */
	struct attn_error *err;
};

/* ---- messages ---------------------------------------------------------- */

/* A file-supplied name made safe to quote: printable ASCII kept, the rest '?'. */
const char *st_printable(char out[ST_NAME_SHOWN + 4], const char *s, size_t n)
{
	size_t shown = n < ST_NAME_SHOWN ? n : ST_NAME_SHOWN;
	size_t i;

	for (i = 0; i < shown; i++)
		out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (shown < n) {
		memcpy(out + i, "...", 3);
		i += 3;
	}
	out[i] = '\0';
	return out;
}

/* A syntax error at the parser's position, naming the entry being parsed. */
static enum attn_status st_syntax(struct st_parser *ps, const char *what)
{
	char name[ST_NAME_SHOWN + 4];
	size_t at = (size_t)(ps->p - ps->file);

	if (ps->cur == NULL)
		return attn_fail(ps->err, ATTN_ERR_FORMAT, "header", 0,
				 "safetensors header: %s at byte %zu", what, at);
	return attn_fail(ps->err, ATTN_ERR_FORMAT, "header", 0,
			 "safetensors header: %s at byte %zu (tensor '%s')", what, at,
			 st_printable(name, ps->cur->name, ps->cur->name_len));
}

/* ---- lexing ------------------------------------------------------------ */

static void st_skip_ws(struct st_parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

/* The next non-blank byte, not consumed, or -1 at the end of the header. */
static int st_peek(struct st_parser *ps)
{
	st_skip_ws(ps);
	return ps->p < ps->end ? *ps->p : -1;
}

static enum attn_status st_expect(struct st_parser *ps, int c, const char *what)
{
	if (st_peek(ps) != c)
		return st_syntax(ps, what);
	ps->p++;
	return ATTN_OK;
}

/* After an item of a list closed by `close`: 1 for ',', 0 for close, -1 else. */
static int st_next_item(struct st_parser *ps, int close)
{
	int c = st_peek(ps);

	if (c == ',' || c == close) {
		ps->p++;
		return c == ',';
	}
	return -1;
}

/* Length of the valid UTF-8 sequence at p (RFC 3629, table 3-7), or 0. */
static size_t st_utf8_len(const uint8_t *p, const uint8_t *end)
{
	/* sequence length from the lead byte; 0x80..0xc1 and 0xf5.. never lead */
	size_t n = *p < 0x80 ? 1 : *p < 0xc2 ? 0 : *p < 0xe0 ? 2 : *p < 0xf0 ? 3 : 4;
	uint8_t lo = 0x80, hi = 0xbf; /* range of the second byte */

	if (n == 0 || *p > 0xf4 || (size_t)(end - p) < n)
		return 0;
	if (*p == 0xe0)
		lo = 0xa0; /* no overlong 3-byte forms */
	else if (*p == 0xed)
		hi = 0x9f; /* no surrogates */
	else if (*p == 0xf0)
		lo = 0x90; /* no overlong 4-byte forms */
	else if (*p == 0xf4)
		hi = 0x8f; /* nothing above U+10FFFF */
	if (n > 1 && (p[1] < lo || p[1] > hi))
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

static int st_hex4(const uint8_t *p, uint32_t *cp)
{
	*cp = 0;
	for (int i = 0; i < 4; i++) {
		uint8_t c = p[i];
		uint32_t d = c >= '0' && c <= '9'   ? (uint32_t)(c - '0')
			     : c >= 'a' && c <= 'f' ? (uint32_t)(c - 'a' + 10)
			     : c >= 'A' && c <= 'F' ? (uint32_t)(c - 'A' + 10)
						    : 16;
		if (d == 16)
			return -1;
		*cp = *cp << 4 | d;
	}
	return 0;
}

/* Appends bytes to dst when they fit in cap; *n counts them either way. */
static void st_put(char *dst, size_t cap, size_t *n, const uint8_t *bytes, size_t k)
{
	if (dst != NULL && *n + k <= cap)
		memcpy(dst + *n, bytes, k);
	*n += k;
}

static void st_put_utf8(char *dst, size_t cap, size_t *n, uint32_t cp)
{
	uint8_t b[4];
	size_t k;

	if (cp < 0x80) {
		b[0] = (uint8_t)cp;
		k = 1;
	} else if (cp < 0x800) {
		b[0] = (uint8_t)(0xc0 | cp >> 6);
		b[1] = (uint8_t)(0x80 | (cp & 0x3f));
		k = 2;
	} else if (cp < 0x10000) {
		b[0] = (uint8_t)(0xe0 | cp >> 12);
		b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (uint8_t)(0x80 | (cp & 0x3f));
		k = 3;
	} else {
		b[0] = (uint8_t)(0xf0 | cp >> 18);
		b[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (uint8_t)(0x80 | (cp & 0x3f));
		k = 4;
	}
	st_put(dst, cap, n, b, k);
}

/* After a backslash: one escape, decoded. */
static enum attn_status st_escape(struct st_parser *ps, char *dst, size_t cap, size_t *n)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *hit;
	uint32_t cp, lo;

	if (ps->p == ps->end)
		return st_syntax(ps, "unterminated string");
	hit = *ps->p != '\0' ? strchr(from, *ps->p) : NULL;
	if (hit != NULL) {
		st_put(dst, cap, n, (const uint8_t *)&to[hit - from], 1);
		ps->p++;
		return ATTN_OK;
	}
	if (*ps->p != 'u' || ps->end - ps->p < 5 || st_hex4(ps->p + 1, &cp) != 0)
		return st_syntax(ps, "invalid escape in string");
	ps->p += 5;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return st_syntax(ps, "unpaired low surrogate in string");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		/* a high surrogate must be followed by \uDC00..\uDFFF */
		if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' ||
		    st_hex4(ps->p + 2, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
			return st_syntax(ps, "unpaired high surrogate in string");
		ps->p += 6;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	st_put_utf8(dst, cap, n, cp);
	return ATTN_OK;
}

/*
 * A JSON string, decoded into dst (which may be NULL: validate only). Bytes
 * past cap are counted in *len but not written; the caller compares.
 */
static enum attn_status st_string(struct st_parser *ps, char *dst, size_t cap, size_t *len)
{
	enum attn_status st;
	size_t k;

	*len = 0;
	st = st_expect(ps, '"', "expected a string");
	if (st != ATTN_OK)
		return st;
	for (;;) {
		if (ps->p == ps->end)
			return st_syntax(ps, "unterminated string");
		if (*ps->p == '"') {
			ps->p++;
			return ATTN_OK;
		}
		if (*ps->p == '\\') {
			ps->p++;
			st = st_escape(ps, dst, cap, len);
			if (st != ATTN_OK)
				return st;
			continue;
		}
		if (*ps->p < 0x20)
			return st_syntax(ps, "control character in string");
		k = st_utf8_len(ps->p, ps->end);
		if (k == 0)
			return st_syntax(ps, "invalid UTF-8 in string");
		st_put(dst, cap, len, ps->p, k);
		ps->p += k;
	}
}

/* A JSON non-negative integer that fits size_t. */
static enum attn_status st_size(struct st_parser *ps, size_t *out)
{
	size_t v = 0;
	int c = st_peek(ps);

	if (c < '0' || c > '9')
		return st_syntax(ps, "expected a non-negative integer");
	if (c == '0' && ps->end - ps->p > 1 && ps->p[1] >= '0' && ps->p[1] <= '9')
		return st_syntax(ps, "integer with a leading zero");
	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
		if (size_mul(&v, v, 10) != 0 || size_add(&v, v, (size_t)(*ps->p - '0')) != 0)
			return attn_fail(ps->err, ATTN_ERR_OVERFLOW, "header", 0,
					 "safetensors header: integer at byte %zu does not fit "
					 "size_t",
					 (size_t)(ps->p - ps->file));
		ps->p++;
	}
	if (ps->p < ps->end && (*ps->p == '.' || *ps->p == 'e' || *ps->p == 'E'))
		return st_syntax(ps, "expected an integer");
	*out = v;
	return ATTN_OK;
}

/* ---- tensor entries ---------------------------------------------------- */

static enum attn_status st_field_dtype(struct st_parser *ps, struct st_tensor *t)
{
	size_t n, cap = sizeof(t->dtype) - 1;
	enum attn_status st = st_string(ps, t->dtype, cap, &n);

	if (st != ATTN_OK)
		return st;
	t->dtype[n < cap ? n : cap] = '\0';
	t->kind = ST_UNKNOWN;
	t->elem_size = 0;
	for (size_t i = 0; i < sizeof(st_dtypes) / sizeof(st_dtypes[0]); i++) {
		if (n == strlen(st_dtypes[i].name) && memcmp(t->dtype, st_dtypes[i].name, n) == 0) {
			t->kind = st_dtypes[i].kind;
			t->elem_size = st_dtypes[i].size;
		}
	}
	return ATTN_OK;
}

static enum attn_status st_field_shape(struct st_parser *ps, struct st_tensor *t)
{
	enum attn_status st = st_expect(ps, '[', "expected '[' for shape");
	size_t dim;
	int more;

	t->rank = 0;
	t->numel = 1;
	if (st != ATTN_OK)
		return st;
	if (st_peek(ps) == ']') {
		ps->p++;
		return ATTN_OK; /* a scalar */
	}
	do {
		st = st_size(ps, &dim);
		if (st != ATTN_OK)
			return st;
		if (t->rank < 2)
			t->dims[t->rank] = dim;
		t->rank++;
		if (size_mul(&t->numel, t->numel, dim) != 0)
			return attn_fail(ps->err, ATTN_ERR_OVERFLOW, "header", 0,
					 "safetensors header: shape of tensor at byte %zu has more "
					 "elements than size_t holds",
					 (size_t)(ps->p - ps->file));
		more = st_next_item(ps, ']');
	} while (more == 1);
	return more == 0 ? ATTN_OK : st_syntax(ps, "expected ',' or ']' in shape");
}

static enum attn_status st_field_offsets(struct st_parser *ps, struct st_tensor *t)
{
	enum attn_status st = st_expect(ps, '[', "expected '[' for data_offsets");

	if (st == ATTN_OK)
		st = st_size(ps, &t->begin);
	if (st == ATTN_OK)
		st = st_expect(ps, ',', "data_offsets must hold two integers");
	if (st == ATTN_OK)
		st = st_size(ps, &t->end);
	if (st == ATTN_OK)
		st = st_expect(ps, ']', "data_offsets must hold two integers");
	return st;
}

static const struct st_field {
	const char *key;
	enum attn_status (*parse)(struct st_parser *ps, struct st_tensor *t);
} st_fields[] = {
	{"dtype", st_field_dtype},
	{"shape", st_field_shape},
	{"data_offsets", st_field_offsets},
};
#define ST_NFIELDS (sizeof(st_fields) / sizeof(st_fields[0]))

/* {"dtype": ..., "shape": ..., "data_offsets": ...}, each key exactly once. */
static enum attn_status st_tensor_info(struct st_parser *ps, struct st_tensor *t)
{
	enum attn_status st = st_expect(ps, '{', "expected '{' for a tensor");
	unsigned seen = 0;
	char key[16];
	size_t n, f;
	int more = 1;

	if (st == ATTN_OK && st_peek(ps) == '}')
		return st_syntax(ps, "tensor lacks dtype, shape and data_offsets");
	while (st == ATTN_OK && more == 1) {
		st = st_string(ps, key, sizeof(key), &n);
		if (st != ATTN_OK)
			break;
		for (f = 0; f < ST_NFIELDS; f++)
			if (n == strlen(st_fields[f].key) && memcmp(key, st_fields[f].key, n) == 0)
				break;
		if (f == ST_NFIELDS)
			return st_syntax(ps, "unknown key in tensor (want dtype, shape, "
					     "data_offsets)");
		if (seen & 1u << f)
			return st_syntax(ps, "duplicate key in tensor");
		seen |= 1u << f;
		st = st_expect(ps, ':', "expected ':'");
		if (st == ATTN_OK)
			st = st_fields[f].parse(ps, t);
		if (st == ATTN_OK)
			more = st_next_item(ps, '}');
	}
	if (st != ATTN_OK)
		return st;
	if (more != 0)
		return st_syntax(ps, "expected ',' or '}' in tensor");
	if (seen != (1u << ST_NFIELDS) - 1)
		return st_syntax(ps, "tensor lacks one of dtype, shape, data_offsets");
	return ATTN_OK;
}

/* "__metadata__": {"key": "value", ...}, validated and dropped. */
static enum attn_status st_metadata(struct st_parser *ps)
{
	enum attn_status st = st_expect(ps, '{', "expected '{' for __metadata__");
	size_t n;
	int more = 1;

	if (st == ATTN_OK && st_peek(ps) == '}') {
		ps->p++;
		return ATTN_OK;
	}
	while (st == ATTN_OK && more == 1) {
		st = st_string(ps, NULL, 0, &n);
		if (st == ATTN_OK)
			st = st_expect(ps, ':', "expected ':'");
		if (st == ATTN_OK)
			st = st_string(ps, NULL, 0, &n); /* values must be strings */
		if (st == ATTN_OK)
			more = st_next_item(ps, '}');
	}
	if (st == ATTN_OK && more != 0)
		return st_syntax(ps, "expected ',' or '}' in __metadata__");
	return st;
}

/* Offsets inside the data and a byte size that matches shape and dtype. */
static enum attn_status st_check_entry(const struct st_tensor *t, size_t data_len,
				       struct attn_error *err)
{
	char name[ST_NAME_SHOWN + 4];
	size_t bytes;

	st_printable(name, t->name, t->name_len);
	if (t->begin > t->end)
		return attn_fail(err, ATTN_ERR_FORMAT, "data_offsets", 0,
				 "tensor '%s': data_offsets [%zu, %zu] run backwards", name,
				 t->begin, t->end);
	if (t->end > data_len)
		return attn_fail(err, ATTN_ERR_TRUNCATED, "data_offsets", 0,
				 "tensor '%s': data ends at %zu, past the %zu data bytes in the "
				 "file",
				 name, t->end, data_len);
	if (t->kind == ST_UNKNOWN)
		return ATTN_OK; /* element size unknown: skipped unless the model needs it */
	if (size_mul(&bytes, t->numel, t->elem_size) != 0)
		return attn_fail(err, ATTN_ERR_OVERFLOW, "shape", 0,
				 "tensor '%s': byte size of its shape overflows size_t", name);
	if (bytes != t->end - t->begin)
		return attn_fail(err, ATTN_ERR_FORMAT, "shape", 0,
				 "tensor '%s': shape and dtype %s make %zu bytes, data_offsets "
				 "hold %zu",
				 name, t->dtype, bytes, t->end - t->begin);
	return ATTN_OK;
}

/* A new zeroed entry at the end of the table. */
static struct st_tensor *st_table_push(struct st_table *tab)
{
	if (tab->n == tab->cap) {
		size_t cap = 16, bytes;
		struct st_tensor *v;

		if (tab->cap != 0 && size_mul(&cap, tab->cap, 2) != 0)
			return NULL;
		if (size_mul(&bytes, cap, sizeof(*v)) != 0)
			return NULL;
		v = realloc(tab->v, bytes);
		if (v == NULL)
			return NULL;
		tab->v = v;
		tab->cap = cap;
	}
	memset(&tab->v[tab->n], 0, sizeof(tab->v[0]));
	return &tab->v[tab->n++];
}

/* One top-level "name": {...} pair; the name goes to the arena. */
static enum attn_status st_entry(struct st_parser *ps, struct st_table *tab, size_t data_len,
				 int *seen_metadata)
{
	char *name = tab->arena + tab->arena_used;
	size_t n, cap = tab->arena_cap - tab->arena_used;
	struct st_tensor *t;
	enum attn_status st = st_string(ps, name, cap, &n);

	if (st == ATTN_OK)
		st = st_expect(ps, ':', "expected ':'");
	if (st != ATTN_OK)
		return st;
	if (n > cap) /* cannot happen: decoding never lengthens a string */
		return st_syntax(ps, "tensor name longer than the header");
	if (n == 12 && memcmp(name, "__metadata__", 12) == 0) {
		if (*seen_metadata)
			return st_syntax(ps, "duplicate __metadata__");
		*seen_metadata = 1;
		return st_metadata(ps);
	}
	t = st_table_push(tab);
	if (t == NULL)
		return attn_fail(ps->err, ATTN_ERR_NOMEM, NULL, 0,
				 "out of memory for the safetensors header");
	tab->arena_used += n;
	t->name = name;
	t->name_len = n;
	ps->cur = t;
	st = st_tensor_info(ps, t);
	ps->cur = NULL;
	return st == ATTN_OK ? st_check_entry(t, data_len, ps->err) : st;
}

/* Pass 1: the header object into tab. */
static enum attn_status st_parse_header(struct st_parser *ps, struct st_table *tab,
					size_t data_len)
{
	enum attn_status st = ATTN_OK;
	int seen_metadata = 0;
	int more = 1;

	if (ps->p == ps->end || *ps->p != '{')
		return st_syntax(ps, "header does not start with '{'");
	ps->p++;
	if (st_peek(ps) == '}') {
		ps->p++;
		more = 0;
	}
	while (st == ATTN_OK && more == 1) {
		st = st_entry(ps, tab, data_len, &seen_metadata);
		if (st == ATTN_OK)
			more = st_next_item(ps, '}');
	}
	if (st != ATTN_OK)
		return st;
	if (more != 0)
		return st_syntax(ps, "expected ',' or '}' after a tensor");
	if (st_peek(ps) != -1)
		return st_syntax(ps, "bytes after the header object");
	return ATTN_OK;
}

/* ---- pass 2: the table as a whole -------------------------------------- */

static int st_cmp_name(const void *a, const void *b)
{
	const struct st_tensor *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);

	if (c != 0)
		return c;
	return (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

static int st_cmp_offset(const void *a, const void *b)
{
	const struct st_tensor *x = a, *y = b;

	if (x->begin != y->begin)
		return (x->begin > y->begin) - (x->begin < y->begin);
	return (x->end > y->end) - (x->end < y->end);
}

/* Sorts the table (by name, then by offset) to find duplicates and overlaps. */
static enum attn_status st_check_table(struct st_table *tab, struct attn_error *err)
{
	char a[ST_NAME_SHOWN + 4], b[ST_NAME_SHOWN + 4];
	const struct st_tensor *last = NULL; /* the non-empty tensor ending last */

	if (tab->n == 0)
		return ATTN_OK;
	qsort(tab->v, tab->n, sizeof(tab->v[0]), st_cmp_name);
	for (size_t i = 1; i < tab->n; i++)
		if (st_cmp_name(&tab->v[i - 1], &tab->v[i]) == 0)
			return attn_fail(err, ATTN_ERR_FORMAT, "header", 0,
					 "duplicate tensor name '%s'",
					 st_printable(a, tab->v[i].name, tab->v[i].name_len));
	qsort(tab->v, tab->n, sizeof(tab->v[0]), st_cmp_offset);
	for (size_t i = 0; i < tab->n; i++) {
		const struct st_tensor *t = &tab->v[i];

		if (t->begin == t->end)
			continue;
		if (last != NULL && t->begin < last->end)
			return attn_fail(err, ATTN_ERR_FORMAT, "data_offsets", 0,
					 "tensors '%s' and '%s' overlap in the data",
					 st_printable(a, last->name, last->name_len),
					 st_printable(b, t->name, t->name_len));
		if (last == NULL || t->end > last->end)
			last = t;
	}
	/* by name again, for st_table_find */
	qsort(tab->v, tab->n, sizeof(tab->v[0]), st_cmp_name);
	return ATTN_OK;
}

/* prefix + name against t's name, in st_cmp_name's order. */
static int st_cmp_key(const char *prefix, size_t plen, const char *name, size_t nlen,
		      const struct st_tensor *t)
{
	size_t n = plen < t->name_len ? plen : t->name_len, rest;
	int c = memcmp(prefix, t->name, n);

	if (c != 0)
		return c;
	if (plen > t->name_len)
		return 1; /* t's name is a proper prefix of the key */
	rest = t->name_len - plen;
	n = nlen < rest ? nlen : rest;
	c = memcmp(name, t->name + plen, n);
	if (c != 0)
		return c;
	return (nlen > rest) - (nlen < rest);
}

const struct st_tensor *st_table_find(const struct st_table *tab, const char *prefix, size_t plen,
				      const char *name, size_t nlen)
{
	size_t lo = 0, hi = tab->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = st_cmp_key(prefix, plen, name, nlen, &tab->v[mid]);

		if (c == 0)
			return &tab->v[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Passes 1 and 2: the 8-byte length, the header, the table checks. */
enum attn_status st_read_header(struct st_table *tab, const uint8_t *buf, size_t len,
				size_t *data_at, struct attn_error *err)
{
	struct st_parser ps = {.file = buf, .err = err};
	uint64_t n = 0;
	enum attn_status st;

	if (len < 8)
		return attn_fail(err, ATTN_ERR_TRUNCATED, "header", 0,
				 "safetensors file of %zu bytes has no header length", len);
	for (int i = 7; i >= 0; i--)
		n = n << 8 | buf[i]; /* little-endian u64 */
	if (n > (uint64_t)(len - 8))
		return attn_fail(err, ATTN_ERR_TRUNCATED, "header", 0,
				 "safetensors header of %llu bytes does not fit in %zu bytes",
				 (unsigned long long)n, len - 8);
	if (n == 0 || n > ST_MAX_HEADER)
		return attn_fail(err, ATTN_ERR_FORMAT, "header", 0,
				 "safetensors header length %llu is outside [1, %llu]",
				 (unsigned long long)n, (unsigned long long)ST_MAX_HEADER);
	tab->arena_cap = (size_t)n;
	tab->arena = malloc(tab->arena_cap);
	if (tab->arena == NULL)
		return attn_fail(err, ATTN_ERR_NOMEM, NULL, 0,
				 "out of memory for the safetensors header");
	ps.p = buf + 8;
	ps.end = buf + 8 + n;
	*data_at = 8 + (size_t)n;
	st = st_parse_header(&ps, tab, len - *data_at);
	return st == ATTN_OK ? st_check_table(tab, err) : st;
}

void st_table_release(struct st_table *tab)
{
	free(tab->v);
	free(tab->arena);
}
