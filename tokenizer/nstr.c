/*
 * nstr.c: normalized strings with their alignments, and the list of splits
 * the pipeline carries (stages.h, "normalized strings").
 *
 * A tok_nstr owns s and align (one malloc'd block, s at its start), or
 * borrows them from the arena of a list of splits; a tok_splits owns its
 * array, every split's nstr and its arena. Growth doubles, with the byte
 * counts checked for overflow before each allocation; on failure the
 * structure is left as it was.
 */
#include "stages.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "unicode.h"

void tok_nstr_init(struct tok_nstr *n)
{
	memset(n, 0, sizeof *n);
}

void tok_nstr_release(struct tok_nstr *n)
{
	if (n == NULL)
		return;
	if (!n->borrowed)
		free(n->s); /* align lives in the same block */
	memset(n, 0, sizeof *n);
}

/*
 * One block holds both arrays: a split costs one allocation, and the
 * pipeline makes many small ones. The text comes first, at the block's
 * (16-byte aligned) start, followed by at least SLACK zeroed bytes, then
 * the spans:
 *
 *   [ s: cap bytes | >= SLACK zero bytes ][ align: cap spans ]
 *
 * The slack is for PCRE2's JIT, which scans a subject in aligned 16-byte
 * loads that may reach past its end (the extra bytes are masked off): inside
 * the block and initialized, they are no read of another object or of
 * undefined memory, so valgrind stays quiet about matching.
 */
enum { SLACK = TOK_SUBJECT_SLACK };

/* The bytes of a block for cap bytes of text: the text and its slack,
 * rounded up to keep the spans after it aligned, then the spans; 0 when
 * that would overflow. *text_bytes gets the first part. */
static size_t block_bytes(size_t cap, size_t *text_bytes)
{
	if (cap > SIZE_MAX / (sizeof(struct tok_span) + 1) - 2 * SLACK)
		return 0;
	*text_bytes = (cap + SLACK + SLACK - 1) / SLACK * SLACK;
	return *text_bytes + cap * sizeof(struct tok_span);
}

static enum tok_status nstr_grow_to(struct tok_nstr *n, size_t cap)
{
	size_t text_bytes, bytes = block_bytes(cap, &text_bytes);
	char *block;

	if (bytes == 0)
		return TOK_ENOMEM;
	block = malloc(bytes);
	if (block == NULL)
		return TOK_ENOMEM;
	struct tok_span *align = (struct tok_span *)(void *)(block + text_bytes);
	if (n->len > 0) {
		memcpy(block, n->s, n->len);
		memcpy(align, n->align, n->len * sizeof *align);
	}
	memset(block + n->len, 0, text_bytes - n->len);
	if (!n->borrowed)
		free(n->s);
	n->borrowed = 0;
	n->s = block;
	n->align = align;
	n->cap = cap;
	return TOK_OK;
}

enum tok_status tok_nstr_reserve(struct tok_nstr *n, size_t extra)
{
	if (extra > SIZE_MAX - n->len)
		return TOK_ENOMEM;
	if (n->len + extra <= n->cap)
		return TOK_OK;
	return nstr_grow_to(n, n->len + extra);
}

/* Room for extra more bytes, growing to at least double (amortized). */
static enum tok_status nstr_fit(struct tok_nstr *n, size_t extra)
{
	size_t cap = n->cap < 8 ? 16 : n->cap;

	if (extra <= n->cap - n->len)
		return TOK_OK;
	if (extra > SIZE_MAX - n->len || cap > SIZE_MAX / 2)
		return TOK_ENOMEM;
	cap *= 2;
	if (cap < n->len + extra)
		cap = n->len + extra;
	return nstr_grow_to(n, cap);
}

enum tok_status tok_nstr_push(struct tok_nstr *n, const char *c, size_t clen, struct tok_span sp)
{
	if (nstr_fit(n, clen) != TOK_OK)
		return TOK_ENOMEM;
	memcpy(n->s + n->len, c, clen);
	for (size_t i = 0; i < clen; i++)
		n->align[n->len + i] = sp;
	n->len += clen;
	return TOK_OK;
}

enum tok_status tok_nstr_from_text(struct tok_nstr *n, const char *text, size_t len)
{
	n->len = 0;
	if (len == 0)
		return TOK_OK; /* (n->s may be NULL: no memcpy) */
	if (len > UINT32_MAX)
		return TOK_ENOMEM; /* past what a span counts */
	if (tok_nstr_reserve(n, len) != TOK_OK)
		return TOK_ENOMEM;
	memcpy(n->s, text, len);
	for (size_t i = 0; i < len;) {
		if ((unsigned char)text[i] < 0x80) { /* ASCII: a byte a character */
			n->align[i] = (struct tok_span){ (uint32_t)i, (uint32_t)(i + 1) };
			i++;
			continue;
		}
		size_t clen = tok_uc_len((unsigned char)text[i]);
		if (clen > len - i)
			clen = len - i;
		struct tok_span sp = { (uint32_t)i, (uint32_t)(i + clen) };
		for (size_t j = 0; j < clen; j++)
			n->align[i + j] = sp;
		i += clen;
	}
	n->len = len;
	return TOK_OK;
}

enum tok_status tok_nstr_append(struct tok_nstr *out, const struct tok_nstr *n, size_t from,
				size_t to)
{
	if (to <= from)
		return TOK_OK;
	if (nstr_fit(out, to - from) != TOK_OK)
		return TOK_ENOMEM;
	memcpy(out->s + out->len, n->s + from, to - from);
	memcpy(out->align + out->len, n->align + from, (to - from) * sizeof *out->align);
	out->len += to - from;
	return TOK_OK;
}

enum tok_status tok_nstr_slice(const struct tok_nstr *n, size_t from, size_t to,
			       struct tok_nstr *out)
{
	out->len = 0;
	if (tok_nstr_reserve(out, to - from) != TOK_OK)
		return TOK_ENOMEM;
	if (to > from) {
		memcpy(out->s, n->s + from, to - from);
		memcpy(out->align, n->align + from, (to - from) * sizeof *out->align);
	}
	out->len = to - from;
	return TOK_OK;
}

void tok_nstr_swap(struct tok_nstr *a, struct tok_nstr *b)
{
	struct tok_nstr t = *a;

	*a = *b;
	*b = t;
}

/* ---- splits and their arena --------------------------------------------------- */

/*
 * The arena of a list of splits: blocks that the splits' strings are cut
 * from (tok_splits_alloc), so that cutting a text into many small splits
 * costs no allocation each. Blocks grow geometrically from ARENA_MIN and
 * are only freed with the list (or the list that adopted them).
 *
 * A split there is packed tighter than a block of its own: its spans
 * follow its text at the next multiple of 8, and the next split follows
 * them. The bytes PCRE2's JIT may read past a split's text (SLACK, see
 * above) are then its zeroed pad, its spans and what comes after them, all
 * inside the block and initialized: the last split of a block is followed
 * by SLACK zero bytes. (A word of 5 bytes takes 48 bytes, not 80.)
 *
 *   [ s | pad ][ align ][ s | pad ][ align ] ... [ SLACK zero bytes ]
 */
struct tok_arena {
	struct tok_arena *next;
	size_t used, cap; /* bytes of data */
	max_align_t data[];
};

enum { ARENA_MIN = 64 * 1024, ARENA_STEP_MAX = 4 * 1024 * 1024 };

static void arena_free(struct tok_arena *a)
{
	while (a != NULL) {
		struct tok_arena *next = a->next;
		free(a);
		a = next;
	}
}

/* bytes (a multiple of 8, below SIZE_MAX - SLACK) from the arena, followed
 * by SLACK zero bytes (until the next take), or NULL. */
static void *arena_take(struct tok_arena **head, size_t bytes)
{
	struct tok_arena *a = *head;

	if (a == NULL || a->cap - a->used < bytes + SLACK) {
		size_t cap = a == NULL ? ARENA_MIN : a->cap * 2;
		if (cap > ARENA_STEP_MAX)
			cap = ARENA_STEP_MAX;
		if (cap < bytes + SLACK)
			cap = bytes + SLACK;
		if (cap > SIZE_MAX - sizeof *a)
			return NULL;
		a = malloc(sizeof *a + cap);
		if (a == NULL)
			return NULL;
		a->next = *head;
		a->used = 0;
		a->cap = cap;
		*head = a;
	}
	char *p = (char *)a->data + a->used;
	a->used += bytes;
	memset(p + bytes, 0, SLACK);
	return p;
}

enum tok_status tok_splits_alloc(struct tok_splits *s, size_t len, struct tok_nstr *n)
{
	size_t text_bytes = (len + 7) / 8 * 8, bytes;
	char *block;

	tok_nstr_init(n);
	if (len > SIZE_MAX / (sizeof(struct tok_span) + 1) - 2 * SLACK)
		return TOK_ENOMEM;
	bytes = text_bytes + len * sizeof(struct tok_span);
	block = arena_take(&s->arena, bytes);
	if (block == NULL)
		return TOK_ENOMEM;
	if (text_bytes > len) /* the pad, which PCRE2's JIT may read: the text's
				 last 8 bytes zeroed, before the caller writes it */
		memset(block + text_bytes - 8, 0, 8);
	n->s = block;
	n->align = (struct tok_span *)(void *)(block + text_bytes);
	n->cap = len;
	n->borrowed = 1;
	return TOK_OK;
}

void tok_splits_adopt(struct tok_splits *to, struct tok_splits *from)
{
	struct tok_arena *tail = from->arena;

	if (tail == NULL)
		return;
	while (tail->next != NULL)
		tail = tail->next;
	tail->next = to->arena;
	to->arena = from->arena;
	from->arena = NULL;
}

void tok_splits_release(struct tok_splits *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		tok_nstr_release(&s->v[i].n);
	free(s->v);
	arena_free(s->arena);
	memset(s, 0, sizeof *s);
}

enum tok_status tok_splits_reserve(struct tok_splits *s, size_t extra)
{
	if (extra <= s->cap - s->n)
		return TOK_OK;
	if (extra > SIZE_MAX - s->n)
		return TOK_ENOMEM;
	return tok_grow((void **)&s->v, &s->cap, s->n + extra, sizeof *s->v, 8);
}

enum tok_status tok_splits_push(struct tok_splits *s, struct tok_nstr *n, int32_t id)
{
	if (tok_splits_reserve(s, 1) != TOK_OK) {
		tok_nstr_release(n);
		return TOK_ENOMEM;
	}
	s->v[s->n].n = *n;
	s->v[s->n].id = id;
	s->n++;
	tok_nstr_init(n);
	return TOK_OK;
}

enum tok_status tok_splits_push_slice(struct tok_splits *s, const struct tok_nstr *n,
				      size_t from, size_t to, int32_t id)
{
	struct tok_nstr piece;

	if (tok_splits_alloc(s, to - from, &piece) != TOK_OK)
		return TOK_ENOMEM;
	if (to > from) {
		memcpy(piece.s, n->s + from, to - from);
		memcpy(piece.align, n->align + from, (to - from) * sizeof *piece.align);
	}
	piece.len = to - from;
	return tok_splits_push(s, &piece, id);
}
