/*
 * bpe.c: the BPE model, as Hugging Face's models/bpe (model.rs, word.rs).
 *
 * Building: the vocabulary map, and each merge "left right" of rank r as
 * (id(left), id(right)) -> (r, id(left + right without the continuing
 * prefix)), all three of which must be in the vocabulary (Hugging Face's
 * MergeTokenOutOfVocabulary). A pair listed twice keeps its last rank, as
 * Hugging Face's HashMap (and transformers.js's Map) do.
 *
 * Tokenizing one word, in three named steps:
 *   1. word_symbols   one symbol per character: its id (with the continuing
 *                     prefix on all but the first, the end-of-word suffix on
 *                     the last), else one symbol per byte "<0xHH>" (byte
 *                     fallback, when all exist), else the unknown token
 *                     (consecutive ones fused with fuse_unk), else nothing.
 *   2. word_merge     repeatedly the pair of lowest rank (leftmost on ties)
 *                     over a doubly linked list of symbols, from a binary
 *                     min-heap of candidate merges keyed (rank, position);
 *                     an entry whose pair has changed since it was pushed is
 *                     skipped when popped. O(n log n), never a rescan.
 *   3. word_emit      the surviving symbols with their byte ranges, each
 *                     starting where the previous ended (as Hugging Face).
 * Words of up to WORD_STACK symbols use stack arrays; longer ones the heap.
 *
 * Ownership: tok_bpe_build returns a model freed by tok_bpe_free; it keeps
 * no pointer into the spec.
 */
#include "stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

#define WORD_STACK 64
#define NONE SIZE_MAX

struct tok_bpe {
	struct tok_vocab *vocab;
	struct tok_idmap merges; /* (left << 32 | right) -> (rank, merged id) */
	int32_t byte_ids[256];	 /* "<0xHH>" ids (byte_fallback) */
	int32_t ascii_ids[128];	 /* an ASCII character's id when no prefix or suffix */
	int32_t unk_id;		 /* -1: none (unknown characters are dropped) */
	char *prefix, *suffix;	 /* "" when none */
	size_t prefix_len, suffix_len;
	int fuse_unk, byte_fallback, ignore_merges;
};

/* One symbol of a word being merged. Removed symbols have len 0. */
struct sym {
	int32_t id;
	size_t len; /* bytes of the word it covers */
	size_t prev, next; /* indexes, NONE at the ends */
};

/* A candidate merge of the symbol at pos with the one after it. */
struct cand {
	uint32_t rank;
	int32_t new_id;
	size_t pos;
};

struct word {
	struct sym *v;
	size_t n, cap;
	struct sym *stack; /* v while it fits, else v is malloc'd */
};

static uint64_t pair_key(int32_t left, int32_t right)
{
	return (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
}

/* ---- building ------------------------------------------------------------ */

static char *dup_or_empty(const char *s)
{
	size_t n = s == NULL ? 0 : strlen(s);
	char *d = malloc(n + 1);

	if (d != NULL) {
		if (n > 0)
			memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* Grows *buf to hold n bytes. */
static enum tok_status scratch_fit(char **buf, size_t *cap, size_t n)
{
	char *p;

	if (n <= *cap)
		return TOK_OK;
	p = realloc(*buf, n);
	if (p == NULL)
		return TOK_ENOMEM;
	*buf = p;
	*cap = n;
	return TOK_OK;
}

/* The id of merge i's part s, or -1 with a message. */
static int32_t merge_part(const struct tok_bpe *b, size_t i, const char *s, size_t len,
			  char *err, size_t errlen)
{
	int32_t id = tok_vocab_get(b->vocab, s, len);

	if (id < 0)
		snprintf(err, errlen, "model: merges[%zu]: '%.*s' is not in the vocabulary", i,
			 (int)(len > 200 ? 200 : len), s);
	return id;
}

/* Fills b->merges from m->merges. */
static enum tok_status build_merges(struct tok_bpe *b, const struct tok_model *m, char *err,
				    size_t errlen)
{
	char *buf = NULL;
	size_t cap = 0;
	enum tok_status st;

	if (m->n_merges > INT32_MAX) {
		snprintf(err, errlen, "model: %zu merges, more than ranks can count", m->n_merges);
		return TOK_ESPEC;
	}
	st = tok_idmap_reserve(&b->merges, m->n_merges);
	for (size_t i = 0; st == TOK_OK && i < m->n_merges; i++) {
		const char *l = m->merges[i].left, *r = m->merges[i].right;
		size_t ll, rl;
		int32_t lid, rid, nid;

		if (l == NULL || r == NULL) {
			snprintf(err, errlen, "model: merges[%zu]: a part is missing", i);
			st = TOK_ESPEC;
			break;
		}
		ll = strlen(l);
		rl = strlen(r);
		lid = merge_part(b, i, l, ll, err, errlen);
		rid = lid < 0 ? -1 : merge_part(b, i, r, rl, err, errlen);
		if (rid >= 0 && rl < b->prefix_len) {
			snprintf(err, errlen, "model: merges[%zu]: '%s' is shorter than the prefix", i, r);
			rid = -1;
		}
		if (rid < 0) {
			st = TOK_ESPEC;
			break;
		}
		/* the merged piece: left + right without its continuing prefix */
		st = scratch_fit(&buf, &cap, ll + rl);
		if (st != TOK_OK)
			break;
		memcpy(buf, l, ll);
		memcpy(buf + ll, r + b->prefix_len, rl - b->prefix_len);
		nid = merge_part(b, i, buf, ll + rl - b->prefix_len, err, errlen);
		if (nid < 0) {
			st = TOK_ESPEC;
			break;
		}
		st = tok_idmap_set(&b->merges, pair_key(lid, rid), (int32_t)i, nid);
	}
	free(buf);
	return st;
}

/* The options and the fixed lookups of b. */
static enum tok_status build_options(struct tok_bpe *b, const struct tok_model *m)
{
	b->prefix = dup_or_empty(m->continuing_subword_prefix);
	b->suffix = dup_or_empty(m->end_of_word_suffix);
	if (b->prefix == NULL || b->suffix == NULL)
		return TOK_ENOMEM;
	b->prefix_len = strlen(b->prefix);
	b->suffix_len = strlen(b->suffix);
	b->fuse_unk = m->fuse_unk;
	b->byte_fallback = m->byte_fallback;
	b->ignore_merges = m->ignore_merges;
	b->unk_id = m->unk_token == NULL ? -1
					 : tok_vocab_get(b->vocab, m->unk_token, strlen(m->unk_token));
	tok_byte_ids(b->vocab, b->byte_ids);
	for (int c = 0; c < 128; c++) {
		char ch = (char)c;

		b->ascii_ids[c] = tok_vocab_get(b->vocab, &ch, 1);
	}
	return TOK_OK;
}

enum tok_status tok_bpe_build(const struct tok_model *m, struct tok_bpe **out, char *err,
			      size_t errlen)
{
	struct tok_bpe *b = calloc(1, sizeof *b);
	enum tok_status st;

	*out = NULL;
	if (b == NULL)
		return TOK_ENOMEM;
	tok_idmap_init(&b->merges);
	st = tok_vocab_from_model(m, &b->vocab, err, errlen);
	if (st == TOK_OK)
		st = build_options(b, m);
	if (st == TOK_OK)
		st = build_merges(b, m, err, errlen);
	if (st != TOK_OK) {
		tok_bpe_free(b);
		return st;
	}
	*out = b;
	return TOK_OK;
}

void tok_bpe_free(struct tok_bpe *b)
{
	if (b == NULL)
		return;
	tok_vocab_free(b->vocab);
	tok_idmap_release(&b->merges);
	free(b->prefix);
	free(b->suffix);
	free(b);
}

/* ---- step 1: the word's symbols ------------------------------------------ */

static enum tok_status word_add(struct word *w, int32_t id, size_t len)
{
	if (w->n == w->cap) {
		size_t cap = w->cap * 2;
		struct sym *v;

		if (w->cap > SIZE_MAX / 2 / sizeof *v)
			return TOK_ENOMEM;
		if (w->v == w->stack) {
			v = malloc(cap * sizeof *v);
			if (v != NULL)
				memcpy(v, w->v, w->n * sizeof *v);
		} else {
			v = realloc(w->v, cap * sizeof *v);
		}
		if (v == NULL)
			return TOK_ENOMEM;
		w->v = v;
		w->cap = cap;
	}
	w->v[w->n].id = id;
	w->v[w->n].len = len;
	w->v[w->n].prev = w->n == 0 ? NONE : w->n - 1;
	w->v[w->n].next = NONE;
	if (w->n > 0)
		w->v[w->n - 1].next = w->n;
	w->n++;
	return TOK_OK;
}

/* The vocabulary key of the character s[i, i + clen): with the prefix when
 * not first, the suffix when last. Returns its id, or -1; *key and *klen
 * get the key (in scratch, or s itself). */
static int32_t char_id(const struct tok_bpe *b, const char *s, size_t i, size_t clen, int last,
		       char *scratch, const char **key, size_t *klen)
{
	size_t n = 0;

	if (b->prefix_len == 0 && b->suffix_len == 0) {
		*key = s + i;
		*klen = clen;
		if (clen == 1 && (unsigned char)s[i] < 128)
			return b->ascii_ids[(unsigned char)s[i]];
		return tok_vocab_get(b->vocab, s + i, clen);
	}
	if (i > 0) {
		memcpy(scratch, b->prefix, b->prefix_len);
		n = b->prefix_len;
	}
	memcpy(scratch + n, s + i, clen);
	n += clen;
	if (last) {
		memcpy(scratch + n, b->suffix, b->suffix_len);
		n += b->suffix_len;
	}
	*key = scratch;
	*klen = n;
	return tok_vocab_get(b->vocab, scratch, n);
}

/* Adds one "<0xHH>" symbol (length 1) per byte of key, if all exist. */
static enum tok_status add_bytes(const struct tok_bpe *b, struct word *w, const char *key,
				 size_t klen, int *added)
{
	*added = 0;
	for (size_t k = 0; k < klen; k++)
		if (b->byte_ids[(unsigned char)key[k]] < 0)
			return TOK_OK;
	for (size_t k = 0; k < klen; k++) {
		enum tok_status st = word_add(w, b->byte_ids[(unsigned char)key[k]], 1);

		if (st != TOK_OK)
			return st;
	}
	*added = 1;
	return TOK_OK;
}

static enum tok_status word_symbols(const struct tok_bpe *b, const char *s, size_t len,
				    char *scratch, struct word *w)
{
	size_t unk_len = 0; /* a pending unknown token's length, 0: none */
	enum tok_status st = TOK_OK;

	for (size_t i = 0; i < len && st == TOK_OK;) {
		size_t clen = utf8_char((const unsigned char *)s + i, len - i);
		const char *key;
		size_t klen;
		int32_t id;
		int added = 0;

		if (clen == 0)
			clen = 1; /* not UTF-8: one byte stands alone */
		id = char_id(b, s, i, clen, i + clen == len, scratch, &key, &klen);
		if (id >= 0) {
			if (unk_len > 0)
				st = word_add(w, b->unk_id, unk_len);
			unk_len = 0;
			if (st == TOK_OK)
				st = word_add(w, id, clen);
		} else {
			if (b->byte_fallback)
				st = add_bytes(b, w, key, klen, &added);
			if (st == TOK_OK && !added && b->unk_id >= 0) {
				if (unk_len > 0 && !b->fuse_unk) {
					st = word_add(w, b->unk_id, unk_len);
					unk_len = 0;
				}
				unk_len += clen;
			}
		}
		i += clen;
	}
	if (st == TOK_OK && unk_len > 0)
		st = word_add(w, b->unk_id, unk_len);
	return st;
}

/* ---- step 2: merging ----------------------------------------------------- */

static int cand_less(const struct cand *x, const struct cand *y)
{
	return x->rank != y->rank ? x->rank < y->rank : x->pos < y->pos;
}

static void heap_push(struct cand *h, size_t *n, struct cand c)
{
	size_t i = (*n)++;

	while (i > 0 && cand_less(&c, &h[(i - 1) / 2])) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = c;
}

static struct cand heap_pop(struct cand *h, size_t *n)
{
	struct cand top = h[0];
	struct cand last = h[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && cand_less(&h[c + 1], &h[c]))
			c++;
		if (!cand_less(&h[c], &last))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = last;
	return top;
}

/* Pushes the merge of symbols at and after pos, when there is one. */
static void push_pair(const struct tok_bpe *b, const struct word *w, size_t pos, struct cand *h,
		      size_t *n)
{
	const struct tok_idmap_slot *m;

	if (pos == NONE || w->v[pos].next == NONE)
		return;
	m = tok_idmap_get(&b->merges, pair_key(w->v[pos].id, w->v[w->v[pos].next].id));
	if (m != NULL)
		heap_push(h, n, (struct cand){ (uint32_t)m->a, m->b, pos });
}

/* Applies the merges; h has room for 2 w->n entries (each merge pops one
 * and pushes at most two, and there are fewer merges than symbols). */
static void word_merge(const struct tok_bpe *b, struct word *w, struct cand *h)
{
	size_t n = 0;

	for (size_t i = 0; i + 1 < w->n; i++)
		push_pair(b, w, i, h, &n);
	while (n > 0) {
		struct cand top = heap_pop(h, &n);
		struct sym *left = &w->v[top.pos];
		const struct tok_idmap_slot *m;
		size_t right;

		if (left->len == 0 || left->next == NONE)
			continue;
		/* stale when the pair there now merges into something else */
		right = left->next;
		m = tok_idmap_get(&b->merges, pair_key(left->id, w->v[right].id));
		if (m == NULL || m->b != top.new_id)
			continue;
		left->id = top.new_id;
		left->len += w->v[right].len;
		left->next = w->v[right].next;
		w->v[right].len = 0;
		if (left->next != NONE)
			w->v[left->next].prev = top.pos;
		push_pair(b, w, left->prev, h, &n);
		push_pair(b, w, top.pos, h, &n);
	}
}

/* ---- step 3: the pieces -------------------------------------------------- */

static enum tok_status word_emit(const struct word *w, size_t len, struct tok_pieces *out)
{
	size_t pos = 0;

	for (size_t i = 0; i < w->n; i++) {
		size_t start = pos < len ? pos : len;
		enum tok_status st;

		if (w->v[i].len == 0)
			continue;
		pos += w->v[i].len;
		st = tok_pieces_push(out, w->v[i].id, start, pos < len ? pos : len);
		if (st != TOK_OK)
			return st;
	}
	return TOK_OK;
}

/* ---- the word ------------------------------------------------------------ */

enum tok_status tok_bpe_tokenize(const struct tok_bpe *b, const char *s, size_t len,
				 struct tok_pieces *out)
{
	struct sym sym_stack[WORD_STACK];
	struct cand cand_stack[2 * WORD_STACK];
	char key_stack[64];
	char *scratch = key_stack;
	struct cand *h = cand_stack;
	struct word w = { sym_stack, 0, WORD_STACK, sym_stack };
	enum tok_status st = TOK_OK;

	if (len == 0)
		return TOK_OK;
	if (b->ignore_merges) {
		int32_t id = tok_vocab_get(b->vocab, s, len);

		if (id >= 0)
			return tok_pieces_push(out, id, 0, len);
	}
	if (b->prefix_len + b->suffix_len > sizeof key_stack - 4) {
		scratch = malloc(b->prefix_len + b->suffix_len + 4);
		if (scratch == NULL)
			return TOK_ENOMEM;
	}
	st = word_symbols(b, s, len, scratch, &w);
	if (st == TOK_OK && w.n > WORD_STACK) {
		if (w.n > SIZE_MAX / 2 / sizeof *h)
			st = TOK_ENOMEM;
		else
			h = malloc(2 * w.n * sizeof *h);
		if (h == NULL)
			st = TOK_ENOMEM;
	}
	if (st == TOK_OK) {
		word_merge(b, &w, h);
		st = word_emit(&w, len, out);
	}
	if (h != cand_stack)
		free(h);
	if (w.v != sym_stack)
		free(w.v);
	if (scratch != key_stack)
		free(scratch);
	return st;
}
