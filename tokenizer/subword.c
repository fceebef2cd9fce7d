/*
 * subword.c: a built model of any kind (stages.h, "models"): the dispatch to
 * bpe.c, wordpiece.c and unigram.c, and the list of pieces they append to.
 *
 * Ownership: tok_model_build returns a model the caller frees with
 * tok_model_free; it borrows the spec's model, which must outlive it. A
 * word cache (tok_model_cache_new) is the caller's, for one thread.
 */
#include "stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tok_model_rt {
	enum tok_model_kind kind;
	struct tok_bpe *bpe;
	struct tok_wordpiece *wordpiece;
	struct tok_unigram *unigram;
};

enum tok_status tok_model_build(const struct tok_model *m, struct tok_model_rt **out, char *err,
				size_t errlen)
{
	struct tok_model_rt *rt = calloc(1, sizeof *rt);
	enum tok_status st;

	*out = NULL;
	if (rt == NULL)
		return TOK_ENOMEM;
	rt->kind = m->kind;
	switch (m->kind) {
	case TOK_MODEL_BPE:
		st = tok_bpe_build(m, &rt->bpe, err, errlen);
		break;
	case TOK_MODEL_WORDPIECE:
		st = tok_wordpiece_build(m, &rt->wordpiece, err, errlen);
		break;
	case TOK_MODEL_UNIGRAM:
		st = tok_unigram_build(m, &rt->unigram, err, errlen);
		break;
	default:
		snprintf(err, errlen, "model: unknown kind %d", (int)m->kind);
		st = TOK_ESPEC;
		break;
	}
	if (st != TOK_OK) {
		tok_model_free(rt);
		return st;
	}
	*out = rt;
	return TOK_OK;
}

void tok_model_free(struct tok_model_rt *rt)
{
	if (rt == NULL)
		return;
	tok_bpe_free(rt->bpe);
	tok_wordpiece_free(rt->wordpiece);
	tok_unigram_free(rt->unigram);
	free(rt);
}

enum tok_status tok_model_tokenize(const struct tok_model_rt *rt, const char *s, size_t len,
				   struct tok_pieces *out)
{
	if (len == 0)
		return TOK_OK;
	switch (rt->kind) {
	case TOK_MODEL_BPE:
		return tok_bpe_tokenize(rt->bpe, s, len, out);
	case TOK_MODEL_WORDPIECE:
		return tok_wordpiece_tokenize(rt->wordpiece, s, len, out);
	case TOK_MODEL_UNIGRAM:
		return tok_unigram_tokenize(rt->unigram, s, len, out);
	}
	return TOK_OK;
}

void tok_pieces_release(struct tok_pieces *p)
{
	if (p == NULL)
		return;
	free(p->v);
	p->v = NULL;
	p->n = p->cap = 0;
}

/* Room for extra more pieces (growth at least doubles). */
static enum tok_status pieces_reserve(struct tok_pieces *p, size_t extra)
{
	if (extra <= p->cap - p->n)
		return TOK_OK;
	if (extra > SIZE_MAX - p->n)
		return TOK_ENOMEM;
	return tok_grow((void **)&p->v, &p->cap, p->n + extra, sizeof *p->v, 16);
}

enum tok_status tok_pieces_push(struct tok_pieces *p, int32_t id, size_t start, size_t end)
{
	if (p->n == p->cap && pieces_reserve(p, 1) != TOK_OK)
		return TOK_ENOMEM;
	p->v[p->n].id = id;
	p->v[p->n].start = start;
	p->v[p->n].end = end;
	p->n++;
	return TOK_OK;
}

/* ---- a cache of words, for one call ---------------------------------------- */

/*
 * Natural text repeats its words, and a model gives a word the same pieces
 * every time (Hugging Face's BPE keeps a cache of 10,000 words for this).
 * A built model is shared read-only by threads, so the cache belongs to the
 * caller, one per call: open addressing over FNV-1a on the word, the words
 * and their pieces in two arenas. The slots double from CACHE_MIN up to
 * CACHE_MAX at load 1/2; words longer than CACHE_WORD are not kept; a full
 * cache starts over empty. CACHE_WORD is as long as Hugging Face's limit
 * (it caches words below 256 characters): a model may see whole lines as
 * words (Gemma 3, whose normalizer turns spaces into U+2581 so that its
 * Split on " " finds none, while its added tokens cut at newlines), and a
 * text repeats lines too.
 */
#define CACHE_MIN 256
#define CACHE_MAX 32768
#define CACHE_WORD 256

struct cache_slot {
	uint64_t hash;
	uint32_t key, key_len; /* the word: keys[key, key + key_len) */
	uint32_t piece, n;     /* its pieces: pieces[piece, piece + n) */
	int used;	       /* 0: an empty slot */
};

struct tok_model_cache {
	struct cache_slot *slots; /* [mask + 1] */
	size_t mask, used;
	char *keys;
	size_t keys_len, keys_cap;
	struct tok_piece *pieces;
	size_t pieces_len, pieces_cap;
};

struct tok_model_cache *tok_model_cache_new(void)
{
	struct tok_model_cache *c = calloc(1, sizeof *c);

	if (c == NULL)
		return NULL;
	c->slots = calloc(CACHE_MIN, sizeof *c->slots);
	if (c->slots == NULL) {
		free(c);
		return NULL;
	}
	c->mask = CACHE_MIN - 1;
	return c;
}

void tok_model_cache_free(struct tok_model_cache *c)
{
	if (c == NULL)
		return;
	free(c->slots);
	free(c->keys);
	free(c->pieces);
	free(c);
}

static uint64_t word_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static struct cache_slot *cache_find(const struct tok_model_cache *c, const char *s, size_t len,
				     uint64_t h)
{
	size_t i = (size_t)h & c->mask;

	while (c->slots[i].used) {
		struct cache_slot *sl = &c->slots[i];

		if (sl->hash == h && sl->key_len == len && memcmp(c->keys + sl->key, s, len) == 0)
			return sl;
		i = (i + 1) & c->mask;
	}
	return &c->slots[i];
}

/* Makes room for one more word: doubles the slots, or empties a full cache.
 * Returns -1 when the slots could not grow (the cache is left as it was). */
static int cache_room(struct tok_model_cache *c)
{
	size_t cap = c->mask + 1;
	struct cache_slot *fresh;

	if (c->used + 1 <= cap / 2)
		return 0;
	if (cap >= CACHE_MAX) {
		memset(c->slots, 0, cap * sizeof *c->slots);
		c->used = c->keys_len = c->pieces_len = 0;
		return 0;
	}
	fresh = calloc(cap * 2, sizeof *fresh);
	if (fresh == NULL)
		return -1;
	for (size_t i = 0; i < cap; i++) {
		size_t j = (size_t)c->slots[i].hash & (cap * 2 - 1);

		if (!c->slots[i].used)
			continue;
		while (fresh[j].used)
			j = (j + 1) & (cap * 2 - 1);
		fresh[j] = c->slots[i];
	}
	free(c->slots);
	c->slots = fresh;
	c->mask = cap * 2 - 1;
	return 0;
}

/* Grows an arena of `size`-byte items to hold `need` of them; 0, or -1
 * past 32-bit offsets or out of memory. */
static int arena_fit(void **p, size_t *cap, size_t need, size_t size)
{
	if (need > UINT32_MAX)
		return -1;
	return tok_grow(p, cap, need, size, 256) == TOK_OK ? 0 : -1;
}

/* Keeps the word and out->v[first, out->n) in the cache, if there is room
 * (a cache that cannot grow only misses). */
static void cache_put(struct tok_model_cache *c, const char *s, size_t len, uint64_t h,
		      const struct tok_pieces *out, size_t first)
{
	size_t n = out->n - first;
	struct cache_slot *sl;

	if (cache_room(c) != 0 ||
	    arena_fit((void **)&c->keys, &c->keys_cap, c->keys_len + len, 1) != 0 ||
	    arena_fit((void **)&c->pieces, &c->pieces_cap, c->pieces_len + n,
		      sizeof *c->pieces) != 0)
		return;
	sl = cache_find(c, s, len, h);
	memcpy(c->keys + c->keys_len, s, len);
	if (n > 0)
		memcpy(c->pieces + c->pieces_len, out->v + first, n * sizeof *c->pieces);
	sl->hash = h;
	sl->key = (uint32_t)c->keys_len;
	sl->key_len = (uint32_t)len;
	sl->piece = (uint32_t)c->pieces_len;
	sl->n = (uint32_t)n;
	sl->used = 1;
	c->keys_len += len;
	c->pieces_len += n;
	c->used++;
}

/* One word (or one piece a BPE cuts it into) through the cache. */
static enum tok_status tokenize_cached(const struct tok_model_rt *rt, struct tok_model_cache *c,
				       const char *s, size_t len, struct tok_pieces *out)
{
	uint64_t h;
	const struct cache_slot *sl;
	size_t first = out->n;
	enum tok_status st;

	if (c == NULL || len > CACHE_WORD || len == 0)
		return tok_model_tokenize(rt, s, len, out);
	h = word_hash(s, len);
	sl = cache_find(c, s, len, h);
	if (sl->used) {
		const struct tok_piece *from = c->pieces + sl->piece;
		size_t n = sl->n, at = out->n;

		if (n > out->cap - at && pieces_reserve(out, n) != TOK_OK)
			return TOK_ENOMEM;
		for (size_t i = 0; i < n; i++) /* mostly one or two: no memcpy call */
			out->v[at + i] = from[i];
		out->n = at + n;
		return TOK_OK;
	}
	st = tok_model_tokenize(rt, s, len, out);
	if (st == TOK_OK)
		cache_put(c, s, len, h, out, first);
	return st;
}

/* A BPE word is tokenized as the pieces tok_bpe_cut finds, each through the
 * cache: a piece's ranges move to where the previous piece's last token
 * ended, which is where the whole word's would start (a dropped character
 * shifts what follows, as in word_emit). */
enum tok_status tok_model_tokenize_cached(const struct tok_model_rt *rt, struct tok_model_cache *c,
					  const char *s, size_t len, struct tok_pieces *out)
{
	size_t from = 0, shift = 0;

	if (rt->kind != TOK_MODEL_BPE)
		return tokenize_cached(rt, c, s, len, out);
	while (from < len) {
		size_t end = tok_bpe_cut(rt->bpe, s, len, from);
		size_t first = out->n;
		enum tok_status st = tokenize_cached(rt, c, s + from, end - from, out);

		if (st != TOK_OK)
			return st;
		for (size_t i = first; i < out->n; i++) {
			out->v[i].start += shift;
			out->v[i].end += shift;
		}
		if (out->n > first)
			shift = out->v[out->n - 1].end;
		from = end;
	}
	return TOK_OK;
}
