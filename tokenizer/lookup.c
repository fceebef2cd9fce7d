/*
 * lookup.c: the models' lookup tables (stages.h, "models").
 *
 *   tok_vocab   strings -> ids: open addressing with linear probing over a
 *               power-of-two array of 16-byte slots, FNV-1a hashes, the
 *               keys' bytes copied into one arena so that a probe touches
 *               the slot array and one run of key bytes.
 *   tok_idmap   64-bit keys -> two int32 values, same scheme: BPE's merges
 *               (left id, right id) -> (rank, merged id), Unigram's trie
 *               edges (node, byte) -> child.
 *
 * Both keep their load at most 1/2 by doubling, so a probe ends after a few
 * slots; sizes are checked for overflow before every allocation.
 */
#include "stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tok_vocab --------------------------------------------------------- */

/* 16 bytes, four to a cache line: a build of 128,000 pieces and 280,000
 * merges is mostly probes, and their cache misses. Keys and the arena are
 * below 4 GiB (arena_push checks). */
struct vocab_slot {
	uint32_t hash; /* the low half of the FNV-1a hash, which indexes too */
	uint32_t off;  /* key bytes: arena[off, off + len) */
	uint32_t len;
	int32_t id; /* -1: empty */
};

struct tok_vocab {
	struct vocab_slot *slots; /* [mask + 1] */
	size_t mask, n;
	char *arena; /* [arena_len] the keys, back to back */
	size_t arena_len, arena_cap;
};

static uint64_t fnv1a(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The smallest power of two >= 2 n (at least 16), or 0 on overflow. */
static size_t slots_for(size_t n)
{
	size_t cap = 16;

	while (cap / 2 < n) {
		if (cap > SIZE_MAX / 2)
			return 0;
		cap *= 2;
	}
	return cap;
}

static struct vocab_slot *vocab_slots_new(size_t cap)
{
	struct vocab_slot *s;

	if (cap == 0 || cap > SIZE_MAX / sizeof *s)
		return NULL;
	s = malloc(cap * sizeof *s);
	if (s == NULL)
		return NULL;
	for (size_t i = 0; i < cap; i++)
		s[i].id = -1;
	return s;
}

struct tok_vocab *tok_vocab_new(size_t expected)
{
	struct tok_vocab *v = calloc(1, sizeof *v);
	size_t cap = slots_for(expected);

	if (v == NULL)
		return NULL;
	v->slots = vocab_slots_new(cap);
	if (v->slots == NULL) {
		free(v);
		return NULL;
	}
	v->mask = cap - 1;
	return v;
}

void tok_vocab_free(struct tok_vocab *v)
{
	if (v == NULL)
		return;
	free(v->slots);
	free(v->arena);
	free(v);
}

/* The slot holding s, or the empty slot where it would go. */
static struct vocab_slot *vocab_find(const struct tok_vocab *v, const char *s, size_t len,
				     uint64_t h)
{
	size_t i = (size_t)(uint32_t)h & v->mask;

	for (;;) {
		struct vocab_slot *sl = &v->slots[i];

		if (sl->id < 0)
			return sl;
		if (sl->hash == (uint32_t)h && sl->len == len &&
		    (len == 0 || memcmp(v->arena + sl->off, s, len) == 0))
			return sl;
		i = (i + 1) & v->mask;
	}
}

/* Doubles the slot array when one more key would pass load 1/2. */
static enum tok_status vocab_grow(struct tok_vocab *v)
{
	size_t cap = v->mask + 1;
	struct vocab_slot *old = v->slots;
	struct vocab_slot *fresh;

	if (v->n + 1 <= cap / 2)
		return TOK_OK;
	if (cap > SIZE_MAX / 2)
		return TOK_ENOMEM;
	fresh = vocab_slots_new(cap * 2);
	if (fresh == NULL)
		return TOK_ENOMEM;
	v->slots = fresh;
	v->mask = cap * 2 - 1;
	for (size_t i = 0; i < cap; i++) {
		if (old[i].id < 0)
			continue;
		*vocab_find(v, v->arena + old[i].off, old[i].len, old[i].hash) = old[i];
	}
	free(old);
	return TOK_OK;
}

/* Copies s[0, len) to the arena; *off gets where. */
static enum tok_status arena_push(struct tok_vocab *v, const char *s, size_t len, size_t *off)
{
	if (len > UINT32_MAX - v->arena_len)
		return TOK_ENOMEM; /* offsets and lengths are 32-bit */
	if (v->arena_len + len > v->arena_cap || v->arena == NULL) { /* never NULL once used */
		size_t cap = v->arena_cap < 4096 ? 4096 : v->arena_cap;
		char *p;

		while (cap < v->arena_len + len) {
			if (cap > SIZE_MAX / 2)
				return TOK_ENOMEM;
			cap *= 2;
		}
		p = realloc(v->arena, cap);
		if (p == NULL)
			return TOK_ENOMEM;
		v->arena = p;
		v->arena_cap = cap;
	}
	if (len > 0)
		memcpy(v->arena + v->arena_len, s, len);
	*off = v->arena_len;
	v->arena_len += len;
	return TOK_OK;
}

/* Inserts s -> id; when s is there, overwrites its id if `overwrite`,
 * else fails with TOK_ESPEC. */
static enum tok_status vocab_insert(struct tok_vocab *v, const char *s, size_t len, int32_t id,
				    int overwrite)
{
	uint64_t h = fnv1a(s, len);
	struct vocab_slot *sl;
	size_t off;
	enum tok_status st;

	if (id < 0)
		return TOK_ESPEC;
	sl = vocab_find(v, s, len, h);
	if (sl->id >= 0) {
		if (!overwrite)
			return TOK_ESPEC;
		sl->id = id;
		return TOK_OK;
	}
	st = vocab_grow(v);
	if (st != TOK_OK)
		return st;
	sl = vocab_find(v, s, len, h);
	st = arena_push(v, s, len, &off);
	if (st != TOK_OK)
		return st;
	sl->off = (uint32_t)off;
	sl->hash = (uint32_t)h;
	sl->len = (uint32_t)len;
	sl->id = id;
	v->n++;
	return TOK_OK;
}

enum tok_status tok_vocab_put(struct tok_vocab *v, const char *s, size_t len, int32_t id)
{
	return vocab_insert(v, s, len, id, 0);
}

enum tok_status tok_vocab_set(struct tok_vocab *v, const char *s, size_t len, int32_t id)
{
	return vocab_insert(v, s, len, id, 1);
}

int32_t tok_vocab_get(const struct tok_vocab *v, const char *s, size_t len)
{
	return vocab_find(v, s, len, fnv1a(s, len))->id;
}

uint64_t tok_vocab_hash(const char *s, size_t len)
{
	return fnv1a(s, len);
}

void tok_vocab_prefetch(const struct tok_vocab *v, uint64_t h)
{
	__builtin_prefetch(&v->slots[(size_t)(uint32_t)h & v->mask]);
}

int32_t tok_vocab_get_hashed(const struct tok_vocab *v, const char *s, size_t len, uint64_t h)
{
	return vocab_find(v, s, len, h)->id;
}

enum tok_status tok_vocab_from_model(const struct tok_model *m, struct tok_vocab **out,
				     char *err, size_t errlen)
{
	struct tok_vocab *v = tok_vocab_new(m->n_vocab);

	*out = NULL;
	if (v == NULL)
		return TOK_ENOMEM;
	for (size_t i = 0; i < m->n_vocab; i++) {
		const struct tok_vocab_entry *e = &m->vocab[i];
		enum tok_status st;

		if (e->piece == NULL || e->id < 0) {
			snprintf(err, errlen, "model: vocab[%zu]: no piece, or a negative id", i);
			tok_vocab_free(v);
			return TOK_ESPEC;
		}
		st = tok_vocab_set(v, e->piece, strlen(e->piece), e->id);
		if (st != TOK_OK) {
			tok_vocab_free(v);
			return st;
		}
	}
	*out = v;
	return TOK_OK;
}

void tok_byte_ids(const struct tok_vocab *v, int32_t ids[256])
{
	static const char hex[] = "0123456789ABCDEF";
	char piece[6] = { '<', '0', 'x', 0, 0, '>' };

	for (int b = 0; b < 256; b++) {
		piece[3] = hex[b >> 4];
		piece[4] = hex[b & 15];
		ids[b] = tok_vocab_get(v, piece, sizeof piece);
	}
}

/* ---- tok_idmap ----------------------------------------------------------- */

#define IDMAP_EMPTY UINT64_MAX

static uint64_t mix64(uint64_t k)
{
	/* splitmix64's finalizer: every key bit reaches the low bits we index by */
	k ^= k >> 30;
	k *= 0xbf58476d1ce4e5b9ull;
	k ^= k >> 27;
	k *= 0x94d049bb133111ebull;
	k ^= k >> 31;
	return k;
}

void tok_idmap_init(struct tok_idmap *m)
{
	memset(m, 0, sizeof *m);
}

void tok_idmap_release(struct tok_idmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof *m);
}

static struct tok_idmap_slot *idmap_find(const struct tok_idmap *m, uint64_t key)
{
	size_t i = (size_t)mix64(key) & m->mask;

	for (;;) {
		struct tok_idmap_slot *sl = &m->slots[i];

		if (sl->key == key || sl->key == IDMAP_EMPTY)
			return sl;
		i = (i + 1) & m->mask;
	}
}

/* Rehashes into room for at least n keys at load 1/2. */
static enum tok_status idmap_resize(struct tok_idmap *m, size_t n)
{
	size_t cap = slots_for(n);
	struct tok_idmap_slot *old = m->slots;
	size_t old_cap = old == NULL ? 0 : m->mask + 1;
	struct tok_idmap_slot *fresh;

	if (cap == 0 || cap > SIZE_MAX / sizeof *fresh)
		return TOK_ENOMEM;
	fresh = malloc(cap * sizeof *fresh);
	if (fresh == NULL)
		return TOK_ENOMEM;
	for (size_t i = 0; i < cap; i++)
		fresh[i].key = IDMAP_EMPTY;
	m->slots = fresh;
	m->mask = cap - 1;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].key != IDMAP_EMPTY)
			*idmap_find(m, old[i].key) = old[i];
	free(old);
	return TOK_OK;
}

enum tok_status tok_idmap_reserve(struct tok_idmap *m, size_t n)
{
	if (m->slots != NULL && n <= (m->mask + 1) / 2)
		return TOK_OK;
	return idmap_resize(m, n);
}

enum tok_status tok_idmap_set(struct tok_idmap *m, uint64_t key, int32_t a, int32_t b)
{
	struct tok_idmap_slot *sl;

	if (key == IDMAP_EMPTY)
		return TOK_ESPEC;
	if (m->slots == NULL || m->n + 1 > (m->mask + 1) / 2) {
		enum tok_status st = idmap_resize(m, m->n < 8 ? 16 : m->n * 2);

		if (st != TOK_OK)
			return st;
	}
	sl = idmap_find(m, key);
	if (sl->key == IDMAP_EMPTY)
		m->n++;
	sl->key = key;
	sl->a = a;
	sl->b = b;
	return TOK_OK;
}

void tok_idmap_prefetch(const struct tok_idmap *m, uint64_t key)
{
	if (m->slots != NULL)
		__builtin_prefetch(&m->slots[(size_t)mix64(key) & m->mask]);
}

const struct tok_idmap_slot *tok_idmap_get(const struct tok_idmap *m, uint64_t key)
{
	const struct tok_idmap_slot *sl;

	if (m->slots == NULL)
		return NULL;
	sl = idmap_find(m, key);
	return sl->key == key ? sl : NULL;
}
