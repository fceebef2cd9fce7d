/*
 * added.c: matching a tokenizer's added tokens in text (stages.h, "added
 * tokens"), as Hugging Face's AddedVocabulary (tokenizer/added_vocabulary.rs):
 * two matchers, one for the tokens with normalized = 0 (run on the raw
 * text) and one for those with normalized = 1 (their content put through
 * the normalizer, run on normalized text); leftmost-longest matches; then
 * single_word, lstrip and rstrip on each match.
 *
 * What a scan needs is L(p): the longest content that is a prefix of the
 * text from p (0: none). Leftmost-longest then reads L from the scan's
 * position on: the first p with L(p) > 0 starts the match, L(p) is its
 * length, and the scan goes on after it. Two ways to get L(p):
 *
 *   the naive twin   walks a trie of the contents from p, at most as far
 *                    as the longest content: O(text * longest content)
 *                    (tok_added_split_ref, kept to check the fast path).
 *   the automaton    an Aho-Corasick automaton over the contents reversed,
 *                    run over the text backwards. After it has read
 *                    s[e-1], s[e-2], ..., s[p] its state is the longest
 *                    prefix of s[p, e) that is some content's suffix (the
 *                    Aho-Corasick invariant, reversed), and every content
 *                    that is a prefix of s[p, e) lies on that state's
 *                    failure chain; out[] holds the deepest such content
 *                    node, so L(p) = depth[out[state]]. A content is no
 *                    longer than max_len, so the state is the same for
 *                    every e >= p + max_len (or e = len): reading from
 *                    there gives L(p) as the whole text would.
 *
 * The automaton fills L for a window of `cap` >= max_len positions at a
 * time, starting at the scan's position and reading max_len - 1 bytes past
 * the window to warm up; the scan only moves forward, so windows do not
 * overlap and each but the last holds cap positions. Bound, in edges tried
 * (the `steps` the tests count):
 *
 *   a pass over m bytes    at most 2m: one edge a byte, plus one a failure
 *                          link followed; each link followed lowers the
 *                          depth, which each byte raises by at most one.
 *   the windows            read at most 2 * text + max_len bytes: a full
 *                          window's warm-up is shorter than the window, the
 *                          last one's shorter than max_len.
 *   the pre-scan           (is there any match at all?) one text more.
 *
 * So at most 6 * text + 2 * max_len for a split, whatever the contents and
 * however many matches; a byte that no content holds costs none. Building
 * the automaton is linear in the contents' bytes (along one content the
 * failure depth rises by at most one a byte).
 *
 * Both tries keep their edges in one open-addressing table keyed by
 * (node, byte). Equal contents share a node, which keeps the token added
 * first (the special ones are added first).
 *
 * Ownership: tok_added_build returns a set the caller frees with
 * tok_added_free; it keeps no pointer into the spec. A scan allocates its
 * window (4 bytes a position, the larger of max_len and WINDOW_MIN
 * positions) and frees it before it returns.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stages.h"
#include "unicode.h"

/* The fewest positions a window holds: with short contents a window of
 * max_len positions would read most bytes twice (its warm-up is as long as
 * it), a larger one makes the warm-up a small share. */
#define WINDOW_MIN 4096

struct edge {
	uint64_t key; /* (parent + 1) << 8 | byte; 0: empty */
	uint32_t child;
};

/* What a match of one token does. */
struct added_info {
	int32_t id;
	int single_word, lstrip, rstrip;
};

struct trie {
	struct edge *edges; /* [mask + 1] */
	size_t mask;
	uint32_t *term; /* [n_nodes] index + 1 into info of the token ending here, 0: none */
	size_t n_nodes;
};

struct matcher {
	struct trie fwd; /* the contents: the naive twin's */
	struct trie rev; /* the contents reversed: the automaton's edges */
	uint32_t *fail;	 /* [rev.n_nodes] the longest proper suffix that is a node */
	uint32_t *out;	 /* [rev.n_nodes] the deepest node ending a content on the
			    failure chain (the node itself included), 0: none */
	uint32_t *depth; /* [rev.n_nodes] */
	uint8_t first[256]; /* 1: some content starts with this byte */
	uint8_t has[256];   /* 1: some content holds this byte */
	size_t max_len;
};

struct tok_added_set {
	struct added_info *info; /* [n] */
	size_t n;
	struct matcher raw, norm; /* normalized 0 and 1 */
};

/* ---- the tries ----------------------------------------------------------------- */

static uint64_t edge_key(uint32_t node, unsigned char b)
{
	return ((uint64_t)node + 1) << 8 | b;
}

static size_t edge_slot(const struct trie *t, uint64_t key)
{
	uint64_t h = key * 0x9E3779B97F4A7C15ull;
	size_t i = (size_t)(h >> 17) & t->mask;

	while (t->edges[i].key != 0 && t->edges[i].key != key)
		i = (i + 1) & t->mask;
	return i;
}

/* The child of node by byte b, or 0 (the root is never a child). */
static uint32_t child_of(const struct trie *t, uint32_t node, unsigned char b)
{
	size_t i = edge_slot(t, edge_key(node, b));

	return t->edges[i].key != 0 ? t->edges[i].child : 0;
}

/* Sizes the tables for contents of `bytes` bytes in all. */
static enum tok_status trie_alloc(struct trie *t, size_t bytes)
{
	size_t slots = 16;

	if (bytes >= SIZE_MAX / 4 || bytes + 1 > UINT32_MAX)
		return TOK_ENOMEM;
	while (slots < 2 * bytes)
		slots *= 2;
	if (slots > SIZE_MAX / sizeof *t->edges)
		return TOK_ENOMEM;
	t->edges = calloc(slots, sizeof *t->edges);
	t->term = calloc(bytes + 1, sizeof *t->term);
	if (t->edges == NULL || t->term == NULL)
		return TOK_ENOMEM;
	t->mask = slots - 1;
	t->n_nodes = 1;
	return TOK_OK;
}

/* Adds s[0, len) (len > 0), read backwards when reversed, for token index
 * k; a content added before keeps its token. */
static void trie_add(struct trie *t, const char *s, size_t len, int reversed, uint32_t k)
{
	uint32_t node = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char b = (unsigned char)s[reversed ? len - 1 - i : i];
		uint64_t key = edge_key(node, b);
		size_t slot = edge_slot(t, key);
		if (t->edges[slot].key == 0) {
			t->edges[slot].key = key;
			t->edges[slot].child = (uint32_t)t->n_nodes++;
		}
		node = t->edges[slot].child;
	}
	if (t->term[node] == 0)
		t->term[node] = k + 1;
}

static void trie_release(struct trie *t)
{
	free(t->edges);
	free(t->term);
}

/* ---- the matchers -------------------------------------------------------------- */

static enum tok_status matcher_alloc(struct matcher *mt, size_t bytes)
{
	enum tok_status st = trie_alloc(&mt->fwd, bytes);

	if (st == TOK_OK)
		st = trie_alloc(&mt->rev, bytes);
	return st;
}

/* Adds s[0, len) for token index k to both tries. */
static void matcher_add(struct matcher *mt, const char *s, size_t len, uint32_t k)
{
	if (len == 0)
		return;
	mt->first[(unsigned char)s[0]] = 1;
	for (size_t i = 0; i < len; i++)
		mt->has[(unsigned char)s[i]] = 1;
	if (len > mt->max_len)
		mt->max_len = len;
	trie_add(&mt->fwd, s, len, 0, k);
	trie_add(&mt->rev, s, len, 1, k);
}

static void matcher_release(struct matcher *mt)
{
	trie_release(&mt->fwd);
	trie_release(&mt->rev);
	free(mt->fail);
	free(mt->out);
	free(mt->depth);
}

/* ---- the automaton ------------------------------------------------------------- */

/* The automaton's move from state by byte b (Aho-Corasick's goto, failing
 * back until an edge takes b or the root is reached); *steps counts the
 * edges tried. */
static uint32_t step(const struct matcher *mt, uint32_t state, unsigned char b, uint64_t *steps)
{
	if (!mt->has[b])
		return 0;
	for (;;) {
		uint32_t next = child_of(&mt->rev, state, b);
		(*steps)++;
		if (next != 0 || state == 0)
			return next;
		state = mt->fail[state];
	}
}

/* pass 1: each node's parent and the byte of its edge, from the table */
static void link_parents(const struct trie *t, uint32_t *parent, uint8_t *byte)
{
	for (size_t i = 0; i <= t->mask; i++) {
		if (t->edges[i].key == 0)
			continue;
		parent[t->edges[i].child] = (uint32_t)((t->edges[i].key >> 8) - 1);
		byte[t->edges[i].child] = (uint8_t)(t->edges[i].key & 0xFF);
	}
}

/* pass 2: the nodes by depth (a counting sort): the breadth-first order,
 * in which every node's failure link is known before its children need it.
 * Depths go in node order, as a node is made after its parent. */
static void order_by_depth(struct matcher *mt, const uint32_t *parent, uint32_t *count,
			   uint32_t *order)
{
	size_t n = mt->rev.n_nodes;

	mt->depth[0] = 0;
	for (size_t v = 1; v < n; v++)
		mt->depth[v] = mt->depth[parent[v]] + 1;
	for (size_t v = 0; v < n; v++)
		count[mt->depth[v] + 1]++;
	for (size_t d = 1; d <= mt->max_len + 1; d++)
		count[d] += count[d - 1];
	for (size_t v = 0; v < n; v++)
		order[count[mt->depth[v]]++] = (uint32_t)v;
}

/* pass 3: fail(v) = goto(fail(parent), byte), out(v) = v if v ends a
 * content, else out(fail(v)) */
static void link_failures(struct matcher *mt, const uint32_t *parent, const uint8_t *byte,
			  const uint32_t *order)
{
	uint64_t steps = 0;

	mt->fail[0] = 0;
	mt->out[0] = 0;
	for (size_t i = 1; i < mt->rev.n_nodes; i++) {
		uint32_t v = order[i];
		uint32_t f = parent[v] == 0 ? 0 : step(mt, mt->fail[parent[v]], byte[v], &steps);
		mt->fail[v] = f;
		mt->out[v] = mt->rev.term[v] != 0 ? v : mt->out[f];
	}
}

/* Gives the reversed trie its failure and output links. */
static enum tok_status matcher_link(struct matcher *mt)
{
	size_t n = mt->rev.n_nodes;
	uint32_t *parent = calloc(n, sizeof *parent), *order = calloc(n, sizeof *order);
	uint32_t *count = calloc(mt->max_len + 2, sizeof *count);
	uint8_t *byte = calloc(n, 1);
	enum tok_status st = TOK_ENOMEM;

	mt->fail = calloc(n, sizeof *mt->fail);
	mt->out = calloc(n, sizeof *mt->out);
	mt->depth = calloc(n, sizeof *mt->depth);
	if (parent == NULL || order == NULL || count == NULL || byte == NULL || mt->fail == NULL ||
	    mt->out == NULL || mt->depth == NULL)
		goto out;
	link_parents(&mt->rev, parent, byte);
	order_by_depth(mt, parent, count, order);
	link_failures(mt, parent, byte, order);
	st = TOK_OK;
out:
	free(parent);
	free(order);
	free(count);
	free(byte);
	return st;
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
	if (st == TOK_OK)
		st = matcher_link(mt);
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
	if (st == TOK_ETOOLONG) {
		snprintf(err, errlen,
			 "added_tokens: the normalizer makes a token's content more than %zu "
			 "times as long",
			 TOK_NORM_GROWTH);
		tok_added_free(a);
		return st;
	}
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

/* ---- matching: the naive twin -------------------------------------------------- */

/* The longest token starting at s[at]: its end and index + 1, or 0. */
static uint32_t longest_at(const struct matcher *mt, const char *s, size_t len, size_t at,
			   size_t *end)
{
	uint32_t node = 0, best = 0;
	size_t stop = len - at > mt->max_len ? at + mt->max_len : len;

	for (size_t i = at; i < stop; i++) {
		node = child_of(&mt->fwd, node, (unsigned char)s[i]);
		if (node == 0)
			break;
		if (mt->fwd.term[node] != 0) {
			best = mt->fwd.term[node];
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

/* ---- matching: the automaton --------------------------------------------------- */

/* L(p) for a stretch of positions (the file comment). */
struct window {
	uint32_t *node; /* [cap] out-node of the longest token at base + j, 0: none */
	size_t cap, base, end; /* node holds the positions [base, end) */
};

/* 1 when some token matches somewhere in s[0, len): a backward pass that
 * stops at the first content it sees end (start, read forwards). */
static int any_token_fast(const struct matcher *mt, const char *s, size_t len, uint64_t *steps)
{
	uint32_t state = 0;

	for (size_t i = len; i > 0; i--) {
		state = step(mt, state, (unsigned char)s[i - 1], steps);
		if (mt->out[state] != 0)
			return 1;
	}
	return 0;
}

/* Fills w with L(p) for p in [from, from + cap) (within the text): reads
 * from max_len - 1 bytes past that stretch, where the state is already the
 * one the whole text would give, down to from. */
static void window_fill(struct window *w, const struct matcher *mt, const char *s, size_t len,
			size_t from, uint64_t *steps)
{
	size_t end = len - from > w->cap ? from + w->cap : len;
	size_t top = len - end > mt->max_len - 1 ? end + mt->max_len - 1 : len;
	uint32_t state = 0;

	for (size_t i = top; i > end; i--) /* warm-up */
		state = step(mt, state, (unsigned char)s[i - 1], steps);
	for (size_t i = end; i > from; i--) {
		state = step(mt, state, (unsigned char)s[i - 1], steps);
		w->node[i - 1 - from] = mt->out[state];
	}
	w->base = from;
	w->end = end;
}

/* The longest token starting at s[at], as longest_at, from w (filled anew
 * from `at` when it does not hold `at`: scans only move forward). */
static uint32_t window_longest_at(struct window *w, const struct matcher *mt, const char *s,
				  size_t len, size_t at, size_t *end, uint64_t *steps)
{
	uint32_t node;

	if (at < w->base || at >= w->end)
		window_fill(w, mt, s, len, at, steps);
	node = w->node[at - w->base];
	if (node == 0)
		return 0;
	*end = at + mt->depth[node];
	return mt->rev.term[node];
}

/* ---- matching: one split ------------------------------------------------------- */

/* Where a scan of one split gets its matches from. */
struct scan {
	const struct matcher *mt;
	const char *s;
	size_t len;
	struct window *w; /* NULL: the naive twin's walk */
	uint64_t *steps;  /* the automaton's edges tried, added to */
};

static int scan_any(const struct scan *sc)
{
	if (sc->w == NULL)
		return any_token(sc->mt, sc->s, sc->len);
	return any_token_fast(sc->mt, sc->s, sc->len, sc->steps);
}

/* The longest token starting at s[at]: its end and index + 1, or 0. */
static uint32_t scan_longest_at(const struct scan *sc, size_t at, size_t *end)
{
	if (sc->w == NULL) {
		if (!sc->mt->first[(unsigned char)sc->s[at]])
			return 0;
		return longest_at(sc->mt, sc->s, sc->len, at, end);
	}
	return window_longest_at(sc->w, sc->mt, sc->s, sc->len, at, end, sc->steps);
}

/* Readies w for a new split: room for cap >= max_len positions (made on
 * the first split that has a match), none of them filled. */
static enum tok_status window_reset(struct window *w, const struct matcher *mt)
{
	w->base = w->end = 0;
	if (w->node != NULL)
		return TOK_OK;
	w->cap = mt->max_len > WINDOW_MIN ? mt->max_len : WINDOW_MIN;
	w->node = malloc(w->cap * sizeof *w->node);
	return w->node != NULL ? TOK_OK : TOK_ENOMEM;
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
 * Cuts one split n into out (taking n over when nothing matches): the
 * stretches between matches (id -1) and the matches (their token's id), as
 * find_matches. A match refused by single_word is passed over whole. An
 * rstrip's whitespace is not searched again for tokens (HF searches from
 * the match's own end, and a token found inside that whitespace would make
 * overlapping splits there).
 */
static enum tok_status cut_split(const struct tok_added_set *a, struct scan *sc,
				 struct tok_nstr *n, struct tok_splits *out)
{
	const char *s = n->s;
	size_t len = n->len, done = 0, at = 0;
	enum tok_status st = TOK_OK;

	sc->s = s;
	sc->len = len;
	if (!scan_any(sc))
		return tok_splits_push(out, n, -1); /* the common case: taken over whole */
	if (sc->w != NULL)
		st = window_reset(sc->w, sc->mt);
	while (at < len && st == TOK_OK) {
		size_t stop;
		uint32_t k = scan_longest_at(sc, at, &stop);
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

/* tok_added_split by the automaton (ref = 0) or the naive walk (ref = 1). */
static enum tok_status added_split(const struct tok_added_set *a, int normalized,
				   struct tok_splits *s, int ref, uint64_t *steps)
{
	struct tok_splits out = {0};
	struct window w = {0};
	struct scan sc = {.w = ref ? NULL : &w, .steps = steps};
	enum tok_status st = TOK_OK;

	if (a == NULL)
		return TOK_OK;
	sc.mt = normalized ? &a->norm : &a->raw;
	if (sc.mt->max_len == 0)
		return TOK_OK;
	for (size_t i = 0; i < s->n && st == TOK_OK; i++) {
		struct tok_split *sp = &s->v[i];
		if (sp->id >= 0)
			st = tok_splits_push(&out, &sp->n, sp->id);
		else if (sp->n.len > 0)
			st = cut_split(a, &sc, &sp->n, &out);
	}
	if (st == TOK_OK) {
		tok_splits_adopt(&out, s); /* splits moved over may borrow from it */
		struct tok_splits old = *s;
		*s = out;
		out = old; /* released below, without the arena it gave away */
	}
	tok_splits_release(&out);
	free(w.node);
	return st;
}

enum tok_status tok_added_split(const struct tok_added_set *a, int normalized,
				struct tok_splits *s)
{
	uint64_t steps = 0;

	return added_split(a, normalized, s, 0, &steps);
}

enum tok_status tok_added_split_steps(const struct tok_added_set *a, int normalized,
				      struct tok_splits *s, uint64_t *steps)
{
	return added_split(a, normalized, s, 0, steps);
}

enum tok_status tok_added_split_ref(const struct tok_added_set *a, int normalized,
				    struct tok_splits *s)
{
	uint64_t steps = 0;

	return added_split(a, normalized, s, 1, &steps);
}
