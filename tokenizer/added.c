/*
 * added.c: matching a tokenizer's added tokens in text (stages.h, "added
 * tokens"), as Hugging Face's AddedVocabulary (tokenizer/added_vocabulary.rs):
 * two matchers, one for the tokens with normalized = 0 (run on the raw
 * text) and one for those with normalized = 1 (their content put through
 * the normalizer, run on normalized text); leftmost-longest matches; then
 * single_word, lstrip and rstrip on each match.
 *
 * A matcher is a trie over the contents' bytes whose edges sit in one
 * open-addressing table keyed by (node, byte). A scan tries a position only
 * when some token starts with its byte, and walks the trie from there at
 * most as far as the longest token: O(text * longest token) in the worst
 * case, and about one table probe a byte for text that holds few token
 * starts (a megabyte of 'a' with no token starting with 'a' is one pass
 * over a byte table).
 *
 * Ownership: tok_added_build returns a set the caller frees with
 * tok_added_free; it keeps no pointer into the spec.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stages.h"
#include "unicode.h"

struct edge {
	uint64_t key; /* (parent + 1) << 8 | byte; 0: empty */
	uint32_t child;
};

/* What a match of one token does. */
struct added_info {
	int32_t id;
	int single_word, lstrip, rstrip;
};

struct matcher {
	struct edge *edges; /* [mask + 1] */
	size_t mask;
	uint32_t *term; /* [n_nodes] index + 1 into info of the token ending here, 0: none */
	size_t n_nodes;
	uint8_t first[256]; /* 1: some token starts with this byte */
	size_t max_len;
};

struct tok_added_set {
	struct added_info *info; /* [n] */
	size_t n;
	struct matcher raw, norm; /* normalized 0 and 1 */
};

/* ---- the trie ------------------------------------------------------------------ */

static uint64_t edge_key(uint32_t node, unsigned char b)
{
	return ((uint64_t)node + 1) << 8 | b;
}

static size_t edge_slot(const struct matcher *mt, uint64_t key)
{
	uint64_t h = key * 0x9E3779B97F4A7C15ull;
	size_t i = (size_t)(h >> 17) & mt->mask;

	while (mt->edges[i].key != 0 && mt->edges[i].key != key)
		i = (i + 1) & mt->mask;
	return i;
}

/* The child of node by byte b, or 0 (the root is never a child). */
static uint32_t child_of(const struct matcher *mt, uint32_t node, unsigned char b)
{
	size_t i = edge_slot(mt, edge_key(node, b));

	return mt->edges[i].key != 0 ? mt->edges[i].child : 0;
}

/* Sizes the tables for contents of `bytes` bytes in all. */
static enum tok_status matcher_alloc(struct matcher *mt, size_t bytes)
{
	size_t slots = 16;

	if (bytes >= SIZE_MAX / 4 || bytes + 1 > UINT32_MAX)
		return TOK_ENOMEM;
	while (slots < 2 * bytes)
		slots *= 2;
	if (slots > SIZE_MAX / sizeof *mt->edges)
		return TOK_ENOMEM;
	mt->edges = calloc(slots, sizeof *mt->edges);
	mt->term = calloc(bytes + 1, sizeof *mt->term);
	if (mt->edges == NULL || mt->term == NULL)
		return TOK_ENOMEM;
	mt->mask = slots - 1;
	mt->n_nodes = 1;
	return TOK_OK;
}

/* Adds s[0, len) for token index k; a content added before keeps its token. */
static void matcher_add(struct matcher *mt, const char *s, size_t len, uint32_t k)
{
	uint32_t node = 0;

	if (len == 0)
		return;
	mt->first[(unsigned char)s[0]] = 1;
	if (len > mt->max_len)
		mt->max_len = len;
	for (size_t i = 0; i < len; i++) {
		uint64_t key = edge_key(node, (unsigned char)s[i]);
		size_t slot = edge_slot(mt, key);
		if (mt->edges[slot].key == 0) {
			mt->edges[slot].key = key;
			mt->edges[slot].child = (uint32_t)mt->n_nodes++;
		}
		node = mt->edges[slot].child;
	}
	if (mt->term[node] == 0)
		mt->term[node] = k + 1;
}

static void matcher_release(struct matcher *mt)
{
	free(mt->edges);
	free(mt->term);
}

/* ---- building ------------------------------------------------------------------ */

/* The normalized form of a token's content, into n. */
static enum tok_status normalized_content(const struct tok_normalizer *normalizer,
					  const char *content, struct tok_nstr *n)
{
	enum tok_status st = tok_nstr_from_text(n, content, strlen(content));

	if (st == TOK_OK)
		st = tok_normalize(normalizer, n);
	return st;
}

/* Adds the tokens of one kind, the special ones first (as HF's
 * refresh_added_tokens chains special_tokens before added_tokens). */
static enum tok_status fill(struct tok_added_set *a, const struct tok_added *added, size_t n,
			    int normalized, const struct tok_normalizer *normalizer,
			    struct tok_nstr *scratch)
{
	size_t bytes = 0;
	enum tok_status st;

	for (size_t i = 0; i < n; i++) {
		if ((added[i].normalized != 0) != normalized)
			continue;
		if (normalized) {
			st = normalized_content(normalizer, added[i].content, scratch);
			if (st != TOK_OK)
				return st;
			bytes += scratch->len;
		} else {
			bytes += strlen(added[i].content);
		}
	}
	struct matcher *mt = normalized ? &a->norm : &a->raw;
	st = matcher_alloc(mt, bytes);
	for (int special = 1; special >= 0 && st == TOK_OK; special--) {
		for (size_t i = 0; i < n && st == TOK_OK; i++) {
			if ((added[i].normalized != 0) != normalized ||
			    (added[i].special != 0) != special)
				continue;
			if (normalized) {
				st = normalized_content(normalizer, added[i].content, scratch);
				if (st == TOK_OK)
					matcher_add(mt, scratch->s, scratch->len, (uint32_t)i);
			} else {
				matcher_add(mt, added[i].content, strlen(added[i].content),
					    (uint32_t)i);
			}
		}
	}
	return st;
}

enum tok_status tok_added_build(const struct tok_added *added, size_t n,
				const struct tok_normalizer *normalizer,
				struct tok_added_set **out, char *err, size_t errlen)
{
	struct tok_added_set *a = calloc(1, sizeof *a);
	struct tok_nstr scratch;
	enum tok_status st = TOK_ENOMEM;

	*out = NULL;
	tok_nstr_init(&scratch);
	if (a == NULL || n >= UINT32_MAX || n > SIZE_MAX / sizeof *a->info)
		goto out;
	a->info = calloc(n ? n : 1, sizeof *a->info);
	if (a->info == NULL)
		goto out;
	a->n = n;
	for (size_t i = 0; i < n; i++)
		a->info[i] = (struct added_info){added[i].id, added[i].single_word, added[i].lstrip,
						 added[i].rstrip};
	st = fill(a, added, n, 0, normalizer, &scratch);
	if (st == TOK_OK)
		st = fill(a, added, n, 1, normalizer, &scratch);
out:
	tok_nstr_release(&scratch);
	if (st != TOK_OK) {
		snprintf(err, errlen, "added_tokens: out of memory");
		tok_added_free(a);
		return st;
	}
	*out = a;
	return TOK_OK;
}

void tok_added_free(struct tok_added_set *a)
{
	if (a == NULL)
		return;
	matcher_release(&a->raw);
	matcher_release(&a->norm);
	free(a->info);
	free(a);
}

/* ---- matching ------------------------------------------------------------------ */

/* The longest token starting at s[at]: its end and index + 1, or 0. */
static uint32_t longest_at(const struct matcher *mt, const char *s, size_t len, size_t at,
			   size_t *end)
{
	uint32_t node = 0, best = 0;
	size_t stop = len - at > mt->max_len ? at + mt->max_len : len;

	for (size_t i = at; i < stop; i++) {
		node = child_of(mt, node, (unsigned char)s[i]);
		if (node == 0)
			break;
		if (mt->term[node] != 0) {
			best = mt->term[node];
			*end = i + 1;
		}
	}
	return best;
}

/* 1 when some token matches somewhere in s[0, len). */
static int any_token(const struct matcher *mt, const char *s, size_t len)
{
	size_t end;

	for (size_t at = 0; at < len; at++)
		if (mt->first[(unsigned char)s[at]] && longest_at(mt, s, len, at, &end) != 0)
			return 1;
	return 0;
}

/* The code point of the character that ends at s[at] (at > 0). */
static int32_t char_before(const char *s, size_t at)
{
	size_t start = at - 1, clen;

	while (start > 0 && ((unsigned char)s[start] & 0xC0) == 0x80)
		start--;
	return tok_uc_decode(s + start, at - start, &clen);
}

/* single_word: no word character touches the match on either side. */
static int is_single_word(const char *s, size_t len, size_t start, size_t stop)
{
	size_t clen;

	if (start > 0 && tok_uc_is_word(char_before(s, start)))
		return 0;
	return stop == len || !tok_uc_is_word(tok_uc_decode(s + stop, len - stop, &clen));
}

/* The start of the whitespace that ends at `start`, not before `floor`. */
static size_t lstrip_to(const char *s, size_t start, size_t floor)
{
	while (start > floor) {
		size_t prev = start - 1;
		while (prev > floor && ((unsigned char)s[prev] & 0xC0) == 0x80)
			prev--;
		if (!tok_uc_is_space(char_before(s, start)))
			break;
		start = prev;
	}
	return start;
}

/* The end of the whitespace that starts at `stop`. */
static size_t rstrip_to(const char *s, size_t len, size_t stop)
{
	size_t clen;

	while (stop < len && tok_uc_is_space(tok_uc_decode(s + stop, len - stop, &clen)))
		stop += clen;
	return stop;
}

/*
 * Cuts one split n into out (taking n over when nothing matches): the stretches between matches (id -1) and the
 * matches (their token's id), as find_matches. A match refused by
 * single_word is passed over whole. An rstrip's whitespace is not searched
 * again for tokens (HF searches from the match's own end, and a token found
 * inside that whitespace would make overlapping splits there).
 */
static enum tok_status cut_split(const struct tok_added_set *a, const struct matcher *mt,
				 struct tok_nstr *n, struct tok_splits *out)
{
	const char *s = n->s;
	size_t len = n->len, done = 0, at = 0;
	enum tok_status st = TOK_OK;

	if (!any_token(mt, s, len))
		return tok_splits_push(out, n, -1); /* the common case: taken over whole */
	while (at < len && st == TOK_OK) {
		size_t stop;
		uint32_t k = mt->first[(unsigned char)s[at]] ? longest_at(mt, s, len, at, &stop) : 0;
		if (k == 0) {
			at++;
			continue;
		}
		const struct added_info *info = &a->info[k - 1];
		size_t start = at;
		if (info->single_word && !is_single_word(s, len, start, stop)) {
			at = stop;
			continue;
		}
		if (info->lstrip)
			start = lstrip_to(s, start, done);
		if (info->rstrip)
			stop = rstrip_to(s, len, stop);
		if (start > done)
			st = tok_splits_push_slice(out, n, done, start, -1);
		if (st == TOK_OK)
			st = tok_splits_push_slice(out, n, start, stop, info->id);
		done = at = stop;
	}
	if (st == TOK_OK && done < len)
		st = tok_splits_push_slice(out, n, done, len, -1);
	return st;
}

enum tok_status tok_added_split(const struct tok_added_set *a, int normalized,
				struct tok_splits *s)
{
	const struct matcher *mt;
	struct tok_splits out = {0};
	enum tok_status st = TOK_OK;

	if (a == NULL)
		return TOK_OK;
	mt = normalized ? &a->norm : &a->raw;
	if (mt->max_len == 0)
		return TOK_OK;
	for (size_t i = 0; i < s->n && st == TOK_OK; i++) {
		struct tok_split *sp = &s->v[i];
		if (sp->id >= 0)
			st = tok_splits_push(&out, &sp->n, sp->id);
		else if (sp->n.len > 0)
			st = cut_split(a, mt, &sp->n, &out);
	}
	if (st == TOK_OK) {
		tok_splits_adopt(&out, s); /* splits moved over may borrow from it */
		struct tok_splits old = *s;
		*s = out;
		out = old; /* released below, without the arena it gave away */
	}
	tok_splits_release(&out);
	return st;
}
