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
 *                     (consecutive ones fused with fuse_unk), else nothing;
 *                     but one named and not in the vocabulary fails the
 *                     encoding (TOK_EUNK), as Hugging Face's does
 *                     (UnkTokenOutOfVocabulary).
 *   2. word_merge     repeatedly the pair of lowest rank (leftmost on ties)
 *                     over a doubly linked list of symbols. The candidates,
 *                     keyed (rank, position): the word's first pairs sorted
 *                     once, and those merges make in a FIFO while they come
 *                     in order, else a 4-ary min-heap (struct cands); a
 *                     candidate whose pair has changed since is skipped
 *                     (the pair there now, kept in the symbol, has another
 *                     rank or none; Hugging Face compares the merged id,
 *                     which comes to the same). O(n log n), never a rescan;
 *                     the sorted runs keep the heap small, and a long word
 *                     spends its time on the heap's cache misses.
 *   3. word_emit      the surviving symbols with their byte ranges, each
 *                     starting where the previous ended (as Hugging Face).
 *
 * Cutting (tok_bpe_cut): a word is merged as the pieces
 * between the places where no merge can ever join it, and the answer is the
 * same. Gemma 3 and Llama 2 turn spaces into U+2581 before pre-tokenizing,
 * so their "words" are whole lines, which the word cache (subword.c) never
 * sees twice; cut before each U+2581, they are words again. The place
 * before a U+2581 that follows a character c is never joined when no merge
 * has a right part starting with U+2581 and a left part ending with c (the
 * first merge to span that place would be one), which the build records as
 * it reads the merges: Gemma 3 has one such merge in 514,906 (">" with
 * "▁</"). Merges being independent on either side of such a place, the
 * lowest-rank-first order within each piece is the whole word's, restricted
 * to it. Cutting is off with a continuing prefix or an end-of-word suffix
 * (a piece's text is then not what it covers), with ignore_merges (the whole
 * word may be a piece), without an unknown token (a character dropped
 * before a U+2581 would let what precedes it join), when U+2581 is not in
 * the vocabulary, and when a byte piece or the unknown token is a merge's
 * left part.
 * Words of up to WORD_STACK symbols use stack arrays; longer ones the heap.
 *
 * Ownership: tok_bpe_build returns a model freed by tok_bpe_free; it keeps
 * no pointer into the spec.
 */
#define _GNU_SOURCE /* memmem */
#include "stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

/* A whole line can be one word (Gemma 3, Llama 2: spaces become U+2581), so
 * the stack holds a line's symbols; their first candidates are sorted by
 * insertion up to INSERTION_MAX, by radix past it. */
#define WORD_STACK 256
#define INSERTION_MAX 64
#define NONE UINT32_MAX
/* Direct tables for what most words are made of: characters below U+0800
 * (all of a byte-level alphabet) and merges of two ids below 256 (where
 * byte-level vocabularies put that alphabet), so that their lookups stay
 * in cache rather than probing the big maps. */
#define SMALL_CHARS 0x800
#define SMALL_IDS 256

/* SentencePiece's space, U+2581, in UTF-8; and the most characters that
 * merges may join to one following it before cutting is given up. */
#define SPACE_MARK "\xe2\x96\x81"
#define SPACE_MARK_LEN 3
#define JOINS_MAX 64

/* A merge: its rank and the id it makes (rank -1: none). */
struct merge {
	int32_t rank, id;
};

struct tok_bpe {
	struct tok_vocab *vocab;
	struct tok_idmap merges; /* (left << 32 | right) -> (rank, merged id) */
	int32_t byte_ids[256];	 /* "<0xHH>" ids (byte_fallback) */
	int32_t char_ids[SMALL_CHARS]; /* a character's id when no prefix or suffix */
	struct merge *small;	 /* [SMALL_IDS^2] the merges of two ids < SMALL_IDS */
	int32_t unk_id;		 /* -1: none (unknown characters are dropped) */
	int unk_missing;	 /* one is named but not in the vocabulary: an
				  * unknown character fails the encoding */
	char *prefix, *suffix;	 /* "" when none */
	size_t prefix_len, suffix_len;
	int fuse_unk, byte_fallback, ignore_merges;
	/* Cutting a word before U+2581 (Cutting, above): allowed at all,
	 * and the characters some merge joins to a following U+2581 */
	int cuts_ok;
	uint32_t joins[JOINS_MAX];
	size_t n_joins;
};

/* One symbol of a word being merged. Removed symbols have len 0. A word
 * is below 4 GiB (tok_bpe_tokenize refuses longer), so 32 bits hold every
 * length and index: 24 bytes a symbol, which a long word has one of per
 * character. */
struct sym {
	int32_t id;
	struct merge pair;   /* its merge with the next symbol as they are now */
	uint32_t len;	     /* bytes of the word it covers */
	uint32_t prev, next; /* indexes, NONE at the ends */
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

/* Grows *buf to hold n bytes; *buf is not NULL afterwards, even for n 0
 * (an empty merged piece is copied there too). */
static enum tok_status scratch_fit(char **buf, size_t *cap, size_t n)
{
	char *p;

	if (*buf != NULL && n <= *cap)
		return TOK_OK;
	p = realloc(*buf, n > 0 ? n : 1);
	if (p == NULL)
		return TOK_ENOMEM;
	*buf = p;
	*cap = n;
	return TOK_OK;
}

/*
 * Merges are built MERGE_BATCH at a time, in three passes over the batch:
 * hash the parts and the merged piece and prefetch their slots, look them
 * up (in rank order, so the first merge at fault is the one named), then
 * prefetch and set the pairs. A build is mostly cache misses, and a batch
 * has them under way together rather than one after another.
 */
#define MERGE_BATCH 32

struct merge_job {
	const char *l, *r;
	size_t ll, rl;
	size_t moff;	      /* the merged piece: buf[moff, moff + ll + rl - prefix_len) */
	uint64_t hl, hr, hm;
	uint64_t key;	      /* pair_key(left id, right id) */
	int32_t nid;
	int bad;	      /* a part is missing, or right is shorter than the prefix */
};

/* Pass 1: lengths, merged pieces (into *buf), hashes, prefetches. */
static enum tok_status batch_prepare(const struct tok_bpe *b, const struct tok_merge *mg,
				     size_t k, struct merge_job *jobs, char **buf, size_t *cap)
{
	size_t used = 0;

	for (size_t j = 0; j < k; j++) {
		struct merge_job *jb = &jobs[j];
		size_t mlen;

		memset(jb, 0, sizeof *jb);
		jb->l = mg[j].left;
		jb->r = mg[j].right;
		jb->bad = jb->l == NULL || jb->r == NULL;
		if (jb->bad)
			continue;
		jb->ll = strlen(jb->l);
		jb->rl = strlen(jb->r);
		jb->hl = tok_vocab_hash(jb->l, jb->ll);
		jb->hr = tok_vocab_hash(jb->r, jb->rl);
		tok_vocab_prefetch(b->vocab, jb->hl);
		tok_vocab_prefetch(b->vocab, jb->hr);
		if (jb->rl < b->prefix_len)
			continue; /* reported in rank order by batch_resolve */
		mlen = jb->ll + jb->rl - b->prefix_len;
		if (scratch_fit(buf, cap, used + mlen) != TOK_OK)
			return TOK_ENOMEM;
		memcpy(*buf + used, jb->l, jb->ll);
		memcpy(*buf + used + jb->ll, jb->r + b->prefix_len, jb->rl - b->prefix_len);
		jb->moff = used;
		jb->hm = tok_vocab_hash(*buf + used, mlen);
		tok_vocab_prefetch(b->vocab, jb->hm);
		used += mlen;
	}
	return TOK_OK;
}

/* The id of merge i's part s (hash h), or -1 with a message. */
static int32_t merge_part(const struct tok_bpe *b, size_t i, const char *s, size_t len,
			  uint64_t h, char *err, size_t errlen)
{
	int32_t id = tok_vocab_get_hashed(b->vocab, s, len, h);

	if (id < 0)
		snprintf(err, errlen, "model: merges[%zu]: '%.*s' is not in the vocabulary", i,
			 (int)(len > 200 ? 200 : len), s);
	return id;
}

/* Pass 2: the three ids of each merge (base: the rank of jobs[0]). */
static enum tok_status batch_resolve(const struct tok_bpe *b, size_t base, size_t k,
				     struct merge_job *jobs, const char *buf, char *err,
				     size_t errlen)
{
	for (size_t j = 0; j < k; j++) {
		struct merge_job *jb = &jobs[j];
		size_t i = base + j;
		int32_t lid, rid;

		if (jb->bad) {
			snprintf(err, errlen, "model: merges[%zu]: a part is missing", i);
			return TOK_ESPEC;
		}
		lid = merge_part(b, i, jb->l, jb->ll, jb->hl, err, errlen);
		rid = lid < 0 ? -1 : merge_part(b, i, jb->r, jb->rl, jb->hr, err, errlen);
		if (rid >= 0 && jb->rl < b->prefix_len) {
			snprintf(err, errlen, "model: merges[%zu]: '%s' is shorter than the prefix",
				 i, jb->r);
			rid = -1;
		}
		if (rid < 0)
			return TOK_ESPEC;
		jb->nid = merge_part(b, i, buf + jb->moff, jb->ll + jb->rl - b->prefix_len, jb->hm,
				     err, errlen);
		if (jb->nid < 0)
			return TOK_ESPEC;
		jb->key = pair_key(lid, rid);
		tok_idmap_prefetch(&b->merges, jb->key);
	}
	return TOK_OK;
}

/* The code point that ends s[0, len) (len > 0, valid UTF-8). */
static uint32_t last_char(const char *s, size_t len)
{
	size_t i = len - 1;
	uint32_t c;

	while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
		i--;
	c = (unsigned char)s[i];
	if (c < 0x80)
		return c;
	c &= c >= 0xf0 ? 0x07 : c >= 0xe0 ? 0x0f : 0x1f;
	for (i++; i < len; i++)
		c = c << 6 | ((unsigned char)s[i] & 0x3f);
	return c;
}

/* "<0xHH>": a byte-fallback piece, whose text is not what it covers. */
static int is_byte_piece(const char *s, size_t len)
{
	return len == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>';
}

/* A merge whose right part starts with U+2581 and whose left part does not
 * end with one joins a word across the place tok_bpe_cut would cut before
 * that U+2581: its left part's last character goes on the list of those a
 * cut must not follow. A left part whose text is not what it covers (a
 * byte piece, the unknown token), or too many such characters, turns
 * cutting off (Cutting, at the top). */
static void note_join(struct tok_bpe *b, const struct merge_job *jb)
{
	uint32_t c;

	if (!b->cuts_ok || jb->rl < SPACE_MARK_LEN || memcmp(jb->r, SPACE_MARK, SPACE_MARK_LEN) != 0)
		return;
	if (jb->ll == 0 || (jb->ll >= SPACE_MARK_LEN &&
			    memcmp(jb->l + jb->ll - SPACE_MARK_LEN, SPACE_MARK, SPACE_MARK_LEN) == 0))
		return;
	if (is_byte_piece(jb->l, jb->ll) || (int32_t)(jb->key >> 32) == b->unk_id) {
		b->cuts_ok = 0;
		return;
	}
	c = last_char(jb->l, jb->ll);
	for (size_t i = 0; i < b->n_joins; i++)
		if (b->joins[i] == c)
			return;
	if (b->n_joins == JOINS_MAX)
		b->cuts_ok = 0;
	else
		b->joins[b->n_joins++] = c;
}

/* Fills b->merges from m->merges: (left, right) -> (rank, merged id); a
 * pair listed again takes the later rank. */
static enum tok_status build_merges(struct tok_bpe *b, const struct tok_model *m, char *err,
				    size_t errlen)
{
	struct merge_job jobs[MERGE_BATCH];
	char *buf = NULL;
	size_t cap = 0;
	enum tok_status st;

	if (m->n_merges > INT32_MAX) {
		snprintf(err, errlen, "model: %zu merges, more than ranks can count", m->n_merges);
		return TOK_ESPEC;
	}
	st = tok_idmap_reserve(&b->merges, m->n_merges);
	for (size_t base = 0; st == TOK_OK && base < m->n_merges; base += MERGE_BATCH) {
		size_t k = m->n_merges - base < MERGE_BATCH ? m->n_merges - base : MERGE_BATCH;

		st = batch_prepare(b, m->merges + base, k, jobs, &buf, &cap);
		if (st == TOK_OK)
			st = batch_resolve(b, base, k, jobs, buf, err, errlen);
		for (size_t j = 0; st == TOK_OK && j < k; j++) {
			uint32_t l = (uint32_t)(jobs[j].key >> 32), r = (uint32_t)jobs[j].key;

			note_join(b, &jobs[j]);
			st = tok_idmap_set(&b->merges, jobs[j].key, (int32_t)(base + j), jobs[j].nid);
			if (l < SMALL_IDS && r < SMALL_IDS)
				b->small[l * SMALL_IDS + r] = (struct merge){ (int32_t)(base + j),
									      jobs[j].nid };
		}
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
	b->unk_missing = m->unk_token != NULL && b->unk_id < 0;
	b->cuts_ok = b->prefix_len == 0 && b->suffix_len == 0 && !b->ignore_merges &&
		     b->unk_id >= 0 && tok_vocab_get(b->vocab, SPACE_MARK, SPACE_MARK_LEN) >= 0;
	tok_byte_ids(b->vocab, b->byte_ids);
	for (uint32_t c = 0; c < SMALL_CHARS; c++) {
		char u[2];
		size_t n = 1;

		if (c < 0x80) {
			u[0] = (char)c;
		} else {
			u[0] = (char)(0xc0 | (c >> 6));
			u[1] = (char)(0x80 | (c & 0x3f));
			n = 2;
		}
		b->char_ids[c] = tok_vocab_get(b->vocab, u, n);
	}
	b->small = malloc((size_t)SMALL_IDS * SMALL_IDS * sizeof *b->small);
	if (b->small == NULL)
		return TOK_ENOMEM;
	for (size_t i = 0; i < (size_t)SMALL_IDS * SMALL_IDS; i++)
		b->small[i].rank = -1;
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
	free(b->small);
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
	w->v[w->n].len = (uint32_t)len;
	w->v[w->n].prev = w->n == 0 ? NONE : (uint32_t)(w->n - 1);
	w->v[w->n].next = NONE;
	if (w->n > 0)
		w->v[w->n - 1].next = (uint32_t)w->n;
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
		if (clen == 1 && (unsigned char)s[i] < 0x80)
			return b->char_ids[(unsigned char)s[i]];
		if (clen == 2)
			return b->char_ids[((uint32_t)s[i] & 0x1f) << 6 | ((uint32_t)s[i + 1] & 0x3f)];
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
			if (st == TOK_OK && !added && b->unk_missing)
				st = TOK_EUNK;
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

/* A candidate merge is one 64-bit key, rank << 32 | position of its left
 * symbol, so that key order is (rank, position) order. */
static uint64_t cand_key(uint32_t rank, size_t pos)
{
	return (uint64_t)rank << 32 | (uint32_t)pos;
}

/* A 4-ary min-heap of keys: children of i are 4i+1 .. 4i+4 (half the levels
 * of a binary heap, siblings side by side in memory). */
static void heap_push(uint64_t *h, size_t *n, uint64_t k)
{
	size_t i = (*n)++;

	while (i > 0 && k < h[(i - 1) / 4]) {
		h[i] = h[(i - 1) / 4];
		i = (i - 1) / 4;
	}
	h[i] = k;
}

static uint64_t heap_pop(uint64_t *h, size_t *n)
{
	uint64_t top = h[0];
	uint64_t last = h[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t c = 4 * i + 1, best = c;

		if (c >= *n)
			break;
		for (size_t k = c + 1; k < c + 4 && k < *n; k++)
			if (h[k] < h[best])
				best = k;
		if (h[best] >= last)
			break;
		h[i] = h[best];
		i = best;
	}
	if (*n > 0)
		h[i] = last;
	return top;
}

/* The merge of ids left and right: 1 with *m set, or 0. */
static int merge_of(const struct tok_bpe *b, int32_t left, int32_t right, struct merge *m)
{
	const struct tok_idmap_slot *sl;

	if ((uint32_t)left < SMALL_IDS && (uint32_t)right < SMALL_IDS) {
		*m = b->small[(uint32_t)left * SMALL_IDS + (uint32_t)right];
		return m->rank >= 0;
	}
	sl = tok_idmap_get(&b->merges, pair_key(left, right));
	if (sl == NULL)
		return 0;
	m->rank = sl->a;
	m->id = sl->b;
	return 1;
}

/* Looks up the merge of the symbol at pos with the one after it and keeps
 * it in the symbol (every change to a symbol's id or next comes here, so a
 * candidate is current exactly when its rank is the one kept). */
static int pair_update(const struct tok_bpe *b, struct word *w, size_t pos, struct merge *m)
{
	struct sym *sy = &w->v[pos];

	m->rank = -1;
	if (sy->next != NONE)
		merge_of(b, sy->id, w->v[sy->next].id, m);
	sy->pair = *m;
	return m->rank >= 0;
}

/* q := the word's first candidates, sorted; returns how many. They are made
 * in position order, so a stable sort by rank sorts them by key: insertion
 * for few, else LSD radix on the rank bytes that vary (none for a word of
 * one repeated pair). tmp has room for as many keys as q. */
static size_t first_candidates(const struct tok_bpe *b, struct word *w, uint64_t *q,
			       uint64_t *tmp)
{
	size_t n = 0;
	uint32_t max_rank = 0;

	for (size_t i = 0; i + 1 < w->n; i++) {
		struct merge m;

		if (!pair_update(b, w, i, &m))
			continue;
		q[n++] = cand_key((uint32_t)m.rank, i);
		max_rank = (uint32_t)m.rank > max_rank ? (uint32_t)m.rank : max_rank;
	}
	if (n <= INSERTION_MAX) {
		for (size_t i = 1; i < n; i++) {
			uint64_t k = q[i];
			size_t j = i;

			for (; j > 0 && q[j - 1] > k; j--)
				q[j] = q[j - 1];
			q[j] = k;
		}
		return n;
	}
	for (unsigned shift = 32; shift < 64 && (max_rank >> (shift - 32)) != 0; shift += 8) {
		size_t count[257] = { 0 };

		for (size_t i = 0; i < n; i++)
			count[((q[i] >> shift) & 0xff) + 1]++;
		for (size_t d = 1; d < 257; d++)
			count[d] += count[d - 1];
		for (size_t i = 0; i < n; i++)
			tmp[count[(q[i] >> shift) & 0xff]++] = q[i];
		memcpy(q, tmp, n * sizeof *q);
	}
	return n;
}

/*
 * The candidates still to try: the sorted first ones (q), then those merges
 * make, kept in a FIFO while they come in rising key order (the common
 * case in a long word of repeats, where each level of merges makes the next
 * in position order) and in a 4-ary heap otherwise. The lowest key of the
 * three heads is next. All three are sorted, so this is a priority queue.
 *
 * The FIFO and the heap share one array of 2 n keys: a word of n symbols
 * makes fewer than n merges, each pushing at most two candidates, so the
 * two together never hold more than 2 n. The heap grows up from the
 * array's start, the FIFO down from its end:
 *
 *   [ heap h[0, nh) ->     free     <- FIFO (tail ... head] ]
 */
struct cands {
	const uint64_t *q;
	size_t qi, nq;
	uint64_t *h;		 /* heap: h[0, nh) */
	size_t nh;
	uint64_t *fhead, *ftail; /* FIFO: keys at [ftail, fhead), the next at fhead[-1] */
};

static void cands_push(struct cands *c, uint64_t k)
{
	if (c->ftail == c->fhead || k >= *c->ftail)
		*--c->ftail = k; /* at or above the FIFO's last: it stays in order */
	else
		heap_push(c->h, &c->nh, k);
}

/* The lowest key left; 0 when there is none (*ok says). */
static uint64_t cands_pop(struct cands *c, int *ok)
{
	uint64_t best = UINT64_MAX;
	int from = -1;

	if (c->qi < c->nq) {
		best = c->q[c->qi];
		from = 0;
	}
	if (c->ftail < c->fhead && (from < 0 || c->fhead[-1] < best)) {
		best = c->fhead[-1];
		from = 1;
	}
	if (c->nh > 0 && (from < 0 || c->h[0] < best))
		from = 2;
	*ok = from >= 0;
	if (from == 0)
		return c->q[c->qi++];
	if (from == 1)
		return *--c->fhead;
	return from == 2 ? heap_pop(c->h, &c->nh) : 0;
}

/* Pushes the merge of the symbol at pos with the next, when there is one. */
static void push_pair(const struct tok_bpe *b, struct word *w, size_t pos, struct cands *c)
{
	struct merge m;

	if (pos != NONE && pair_update(b, w, pos, &m))
		cands_push(c, cand_key((uint32_t)m.rank, pos));
}

/* Applies the merges, lowest key first (each merge pushes at most two
 * candidates, and there are fewer merges than symbols). */
static void word_merge(const struct tok_bpe *b, struct word *w, struct cands *c)
{
	for (;;) {
		int ok;
		uint64_t top = cands_pop(c, &ok);
		uint32_t pos = (uint32_t)top;
		struct sym *left;
		uint32_t right;

		if (!ok)
			break;
		left = &w->v[pos];
		if (left->len == 0)
			continue;
		/* stale when the pair there now is another merge, or none */
		if (left->pair.rank < 0 || (uint32_t)left->pair.rank != (uint32_t)(top >> 32))
			continue;
		right = left->next;
		left->id = left->pair.id;
		left->len += w->v[right].len;
		left->next = w->v[right].next;
		w->v[right].len = 0;
		if (left->next != NONE)
			w->v[left->next].prev = pos;
		push_pair(b, w, left->prev, c);
		push_pair(b, w, pos, c);
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

/* Merges the symbols of w: the candidate arrays on the stack for a short
 * word, else on the heap: q n keys, then 2 n that the radix sort uses (as
 * tmp) before the heap and the FIFO share them (struct cands). */
static enum tok_status merge_symbols(const struct tok_bpe *b, struct word *w)
{
	uint64_t stack[3 * WORD_STACK];
	uint64_t *q = stack, *tmp = stack + WORD_STACK;
	size_t n = WORD_STACK;
	struct cands c;

	if (w->n > WORD_STACK) {
		n = w->n;
		if (n > UINT32_MAX || n > SIZE_MAX / 3 / sizeof *q)
			return TOK_ENOMEM;
		q = malloc(3 * n * sizeof *q);
		if (q == NULL)
			return TOK_ENOMEM;
		tmp = q + n;
	}
	c.q = q;
	c.qi = 0;
	c.nq = first_candidates(b, w, q, tmp);
	c.h = q + n;
	c.nh = 0;
	c.fhead = c.ftail = q + 3 * n;
	word_merge(b, w, &c);
	if (q != stack)
		free(q);
	return TOK_OK;
}

enum tok_status tok_bpe_tokenize(const struct tok_bpe *b, const char *s, size_t len,
				 struct tok_pieces *out)
{
	struct sym sym_stack[WORD_STACK];
	char key_stack[64];
	char *scratch = key_stack;
	struct word w = { sym_stack, 0, WORD_STACK, sym_stack };
	enum tok_status st = TOK_OK;

	if (len == 0)
		return TOK_OK;
	if (len > UINT32_MAX)
		return TOK_ENOMEM; /* struct sym counts in 32 bits */
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
	if (st == TOK_OK)
		st = merge_symbols(b, &w);
	if (st == TOK_OK)
		st = word_emit(&w, len, out);
	if (w.v != sym_stack)
		free(w.v);
	if (scratch != key_stack)
		free(scratch);
	return st;
}

/* ---- cutting a word before U+2581 ------------------------------------------ */

size_t tok_bpe_cut(const struct tok_bpe *b, const char *s, size_t len, size_t from)
{
	size_t at = from + 1;

	if (!b->cuts_ok)
		return len;
	while (at + SPACE_MARK_LEN <= len) {
		const char *hit = memmem(s + at, len - at, SPACE_MARK, SPACE_MARK_LEN);
		size_t p;
		uint32_t before;
		size_t i;

		if (hit == NULL)
			return len;
		p = (size_t)(hit - s);
		before = last_char(s, p);
		for (i = 0; i < b->n_joins && b->joins[i] != before; i++)
			;
		if (before != 0x2581 && i == b->n_joins)
			return p;
		at = p + SPACE_MARK_LEN;
	}
	return len;
}
