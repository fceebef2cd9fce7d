/*
 * stages.h: what the stages of the pipeline hand each other. Internal to
 * tokenizer/ (api/ sees tokenizer.h and spec.h only).
 *
 *   text --added (raw)--> splits --normalize--> --added (normalized)-->
 *        --pre-tokenize--> splits --model--> pieces --post--> encoding
 *
 * A split is a stretch of normalized text whose every byte remembers the byte
 * range of the original text it came from (Hugging Face's NormalizedString
 * alignments), so that a token's offsets are the union of its bytes' ranges.
 * Every function returns TOK_OK or TOK_ENOMEM unless it says otherwise, and
 * leaves its outputs releasable either way.
 */
#ifndef TOKENIZER_STAGES_H
#define TOKENIZER_STAGES_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "spec.h"
#include "tokenizer.h"

/* ---- growing arrays (grow.c) ---------------------------------------------- */

/* Makes the array *v of `size`-byte items hold at least `need` of them:
 * capacity doubles from at least `min`, sizes are checked before the
 * realloc, and *v is not NULL afterwards. On TOK_ENOMEM *v and *cap are as
 * they were. */
enum tok_status tok_grow(void **v, size_t *cap, size_t need, size_t size, size_t min);

/* ---- normalized strings (nstr.c) ------------------------------------------ */

/* A byte range of the original text, end exclusive. 32 bits each, as
 * tok_encode refuses a text of 4 GiB or more: every byte of every copy of
 * the text carries one, so 8 bytes rather than 16 halve the pipeline's
 * memory and the traffic of copying it. */
struct tok_span {
	uint32_t start, end;
};

/*
 * Normalized UTF-8 and, for each of its bytes, the original range of the
 * character it came from (all bytes of one character share one span). A
 * character a normalizer inserts takes the span of the character before it
 * (of the one after it at the very start), as in Hugging Face.
 */
struct tok_nstr {
	char *s;	       /* [len] valid UTF-8, not NUL-terminated */
	struct tok_span *align; /* [len] */
	size_t len, cap;
	int borrowed; /* 1: s and align live in a tok_splits' arena, not owned */
};

void tok_nstr_init(struct tok_nstr *n);
void tok_nstr_release(struct tok_nstr *n);
/* Appends one character's bytes c[0..clen) with span sp (to every byte). */
enum tok_status tok_nstr_push(struct tok_nstr *n, const char *c, size_t clen, struct tok_span sp);
/* n := the original text itself: byte i spans the whole character holding
 * it. TOK_ENOMEM for a text of 4 GiB or more (struct tok_span). */
enum tok_status tok_nstr_from_text(struct tok_nstr *n, const char *text, size_t len);
/* Appends n[from, to) (on character boundaries) to out, spans and all;
 * out grows as with tok_nstr_push. out and n are different strings. */
enum tok_status tok_nstr_append(struct tok_nstr *out, const struct tok_nstr *n, size_t from,
				size_t to);
/* out := n[from, to) (byte offsets on character boundaries). */
enum tok_status tok_nstr_slice(const struct tok_nstr *n, size_t from, size_t to,
			       struct tok_nstr *out);
/* Makes room for exactly `extra` more bytes (a writer that knows its size;
 * tok_nstr_push grows by doubling). */
enum tok_status tok_nstr_reserve(struct tok_nstr *n, size_t extra);
/* Exchanges the contents of a and b (a stage builds anew, then swaps). */
void tok_nstr_swap(struct tok_nstr *a, struct tok_nstr *b);

/* A stretch the pipeline carries: normalized text still to tokenize, or an
 * added token already matched (id >= 0, whose n is its matched text). */
struct tok_split {
	struct tok_nstr n;
	int32_t id; /* -1: not yet tokenized */
};

struct tok_arena; /* nstr.c: blocks the splits of a list borrow their text from */

/* Zero-initialized is empty. Releasing frees every split and the arena. */
struct tok_splits {
	struct tok_split *v; /* [n] */
	size_t n, cap;
	struct tok_arena *arena;
};

void tok_splits_release(struct tok_splits *s);
/* n := an empty string of capacity len borrowed from s's arena (one arena
 * block serves many splits: no allocation a split). n is then to be written
 * in full (s and align, len = cap: what follows its text in the arena is
 * the slack tok_regex_next may read) and pushed to s, or released; growing
 * it copies it out. It lives as long as s, or the list that adopts s's
 * arena. */
enum tok_status tok_splits_alloc(struct tok_splits *s, size_t len, struct tok_nstr *n);
/* to takes over from's arena (from keeps its splits, which may borrow from
 * it): for a pass that moves splits of one list into a new one. */
void tok_splits_adopt(struct tok_splits *to, struct tok_splits *from);
/* Appends a split taking n over (n is released and zeroed, on failure too). */
enum tok_status tok_splits_push(struct tok_splits *s, struct tok_nstr *n, int32_t id);
/* Makes room for `extra` more splits (growth doubles). */
enum tok_status tok_splits_reserve(struct tok_splits *s, size_t extra);
/* Appends a copy of n[from, to) as a split (borrowed from s's arena). */
enum tok_status tok_splits_push_slice(struct tok_splits *s, const struct tok_nstr *n,
				      size_t from, size_t to, int32_t id);

/* ---- regexes (regex.c): PCRE2 with UTF and UCP ----------------------------- */

/* Compiles a pattern (is_regex) or a literal, JIT-compiled when PCRE2 can.
 * NULL with err set (PCRE2's message and offset, or "out of memory"). */
struct tok_regex *tok_regex_compile(const char *text, int is_regex, char *err, size_t errlen);
void tok_regex_free(struct tok_regex *re);

/* A caller's scratch for matching (PCRE2 match data): a compiled regex is
 * shared read-only by threads, so each call that matches makes one of these
 * and uses it for all its matches. NULL when memory runs out. */
struct tok_match *tok_match_new(void);

/* The zeroed bytes a subject of tok_regex_next keeps after its end. */
#define TOK_SUBJECT_SLACK 16
void tok_match_free(struct tok_match *m);

/* The next match in s[0, len) (valid UTF-8) at or after byte `from` (a
 * character boundary): TOK_OK with [*mstart, *mend), TOK_EINVAL when there
 * is none, TOK_ELIMIT when PCRE2 gives up (its match, depth or heap limit,
 * or the JIT stack at its largest), TOK_ENOMEM when memory runs out. Empty
 * matches are skipped (their matches never cut a split in Hugging Face).
 * PCRE2's JIT may load up to TOK_SUBJECT_SLACK bytes past s + len (masked
 * off): a tok_nstr and a tok_strs string keep that much zeroed slack (or,
 * in a list's arena, initialized bytes of the same block); another
 * subject without it is correct but makes valgrind report a branch on
 * undefined bytes. */
enum tok_status tok_regex_next(const struct tok_regex *re, struct tok_match *m, const char *s,
			       size_t len, size_t from, size_t *mstart, size_t *mend);

/* ---- normalizers (normalizer.c) and pre-tokenizers (pretokenizer.c) ------- */

/* Compiles the patterns of a part (tok_build calls these once). */
enum tok_status tok_normalizer_compile(struct tok_normalizer *n, char *err, size_t errlen);
enum tok_status tok_pretokenizer_compile(struct tok_pretokenizer *p, char *err, size_t errlen);
/* Frees what compiling made (the parts' releases in spec.c call these). */
void tok_pattern_release(struct tok_pattern *p);

/* Normalizes n in place. TOK_ETOOLONG when a step would make it longer than
 * TOK_NORM_GROWTH times its length on entry plus TOK_NORM_SLACK (tokenizer.h). */
enum tok_status tok_normalize(const struct tok_normalizer *spec, struct tok_nstr *n);

/* Replaces each split with id < 0 by the splits the pre-tokenizer cuts it
 * into, in order; splits with id >= 0 pass through untouched. */
enum tok_status tok_pretokenize(const struct tok_pretokenizer *spec, struct tok_splits *s);

/* ---- added tokens (added.c) ------------------------------------------------ */

struct tok_added_set; /* the matchers of a tokenizer's added tokens */

/* Builds the matchers. Tokens with normalized = 1 are matched in normalized
 * text, so their content goes through `normalizer` (which may be NULL). */
enum tok_status tok_added_build(const struct tok_added *added, size_t n,
				const struct tok_normalizer *normalizer,
				struct tok_added_set **out, char *err, size_t errlen);
void tok_added_free(struct tok_added_set *a);

/* Replaces each split with id < 0 by the stretches between matches of the
 * added tokens of one kind (normalized 0 or 1) and the matches (id set),
 * leftmost-longest, with single_word, lstrip and rstrip as Hugging Face's
 * AddedVocabulary::split_with_indices. */
enum tok_status tok_added_split(const struct tok_added_set *a, int normalized,
				struct tok_splits *s);
/* The same, adding to *steps the automaton's edges tried: the tests' measure
 * of its work, at most 6 * text + 2 * longest token per split (added.c). */
enum tok_status tok_added_split_steps(const struct tok_added_set *a, int normalized,
				      struct tok_splits *s, uint64_t *steps);
/* The naive twin, which the tests compare with it: a trie walk from every
 * position, O(text * longest token). */
enum tok_status tok_added_split_ref(const struct tok_added_set *a, int normalized,
				    struct tok_splits *s);

/* ---- models (lookup.c, subword.c, bpe.c, wordpiece.c, unigram.c) ----------- */

/* A map from strings to ids (open addressing over FNV-1a), built once. It
 * copies the keys' bytes: what is put may be freed afterwards. */
struct tok_vocab;

struct tok_vocab *tok_vocab_new(size_t expected); /* NULL: no memory */
void tok_vocab_free(struct tok_vocab *v);	   /* accepts NULL */
/* Adds s[0, len) -> id (id >= 0); TOK_ESPEC when s is there already. */
enum tok_status tok_vocab_put(struct tok_vocab *v, const char *s, size_t len, int32_t id);
/* Adds s[0, len) -> id, or gives s the id when it is there already: the
 * last of a piece read twice wins, as in Hugging Face's HashMap. */
enum tok_status tok_vocab_set(struct tok_vocab *v, const char *s, size_t len, int32_t id);
/* The id of s[0, len), or -1. */
int32_t tok_vocab_get(const struct tok_vocab *v, const char *s, size_t len);
/* The same lookup in steps, for a loop that looks up many keys at once:
 * hash them all, prefetch their slots, then get each (as tok_vocab_get). */
uint64_t tok_vocab_hash(const char *s, size_t len);
void tok_vocab_prefetch(const struct tok_vocab *v, uint64_t h);
int32_t tok_vocab_get_hashed(const struct tok_vocab *v, const char *s, size_t len, uint64_t h);
/* *out := the pieces of m->vocab (a new map the caller frees). TOK_ESPEC
 * with a message when an entry has no piece or a negative id. */
enum tok_status tok_vocab_from_model(const struct tok_model *m, struct tok_vocab **out,
				     char *err, size_t errlen);
/* ids[b] := the id of "<0xHH>" (byte fallback), or -1. */
void tok_byte_ids(const struct tok_vocab *v, int32_t ids[256]);

/* A map from 64-bit keys (any but UINT64_MAX) to two int32 values, the same
 * way: BPE's (left id, right id) -> (rank, merged id). The caller owns the
 * struct; tok_idmap_release frees its slots. */
struct tok_idmap_slot {
	uint64_t key; /* UINT64_MAX: empty */
	int32_t a, b;
};

struct tok_idmap {
	struct tok_idmap_slot *slots; /* [mask + 1] */
	size_t mask, n;
};

void tok_idmap_init(struct tok_idmap *m);
void tok_idmap_release(struct tok_idmap *m);
/* Makes room for n keys at once (no rehash while they are set). */
enum tok_status tok_idmap_reserve(struct tok_idmap *m, size_t n);
/* Sets key -> (a, b), overwriting what was there. */
enum tok_status tok_idmap_set(struct tok_idmap *m, uint64_t key, int32_t a, int32_t b);
/* The slot of key, or NULL. */
const struct tok_idmap_slot *tok_idmap_get(const struct tok_idmap *m, uint64_t key);
/* Starts loading the slot of key into the cache (a hint; nothing changes). */
void tok_idmap_prefetch(const struct tok_idmap *m, uint64_t key);

struct tok_model_rt; /* a built model */

/* Builds the model's tables from m, which stays owned by the spec and must
 * outlive the model. On failure *out is NULL and err names the part, e.g.
 * "model: merges[12]: 'ab' is not in the vocabulary" (TOK_ESPEC). */
enum tok_status tok_model_build(const struct tok_model *m, struct tok_model_rt **out, char *err,
				size_t errlen);
void tok_model_free(struct tok_model_rt *rt); /* accepts NULL */

/* One token a model made of a split: id and its byte range in the split. */
struct tok_piece {
	int32_t id;
	size_t start, end;
};

struct tok_pieces {
	struct tok_piece *v; /* [n] */
	size_t n, cap;
};

void tok_pieces_release(struct tok_pieces *p);
enum tok_status tok_pieces_push(struct tok_pieces *p, int32_t id, size_t start, size_t end);

/* Appends the tokens of s[0, len) (one pre-tokenized word) to out. Linear
 * or n log n in len. What a model cannot cover and names no unknown token
 * for is dropped (Hugging Face's BPE leaves it out too; its Unigram fails
 * there, MissingUnkId). A WordPiece or BPE model that names an unknown token
 * its vocabulary lacks fails with TOK_EUNK there, as Hugging Face's do
 * (MissingUnkToken, UnkTokenOutOfVocabulary). Ranges are those Hugging Face gives:
 * a BPE adds each symbol's length to the previous end, so a dropped
 * character shifts the ranges after it (clamped to len here). */
enum tok_status tok_model_tokenize(const struct tok_model_rt *rt, const char *s, size_t len,
				   struct tok_pieces *out);

/* A cache of the words a call has tokenized, so that a word met again
 * costs a lookup (Hugging Face's BPE keeps one of 10,000 words per model; a
 * built model here is shared read-only, so a caller keeps one per call, or
 * per thread). Its own memory, about 256 KiB and what its words need; NULL
 * from _new when there is none (tok_model_tokenize_cached then works
 * uncached). _free accepts NULL. */
struct tok_model_cache;

struct tok_model_cache *tok_model_cache_new(void);
void tok_model_cache_free(struct tok_model_cache *c);
/* As tok_model_tokenize, through the cache c (NULL: none). */
enum tok_status tok_model_tokenize_cached(const struct tok_model_rt *rt,
					  struct tok_model_cache *c, const char *s, size_t len,
					  struct tok_pieces *out);

/* The three kinds, which subword.c dispatches to; each as the three above. */
struct tok_bpe;
struct tok_wordpiece;
struct tok_unigram;

enum tok_status tok_bpe_build(const struct tok_model *m, struct tok_bpe **out, char *err,
			      size_t errlen);
void tok_bpe_free(struct tok_bpe *b);
enum tok_status tok_bpe_tokenize(const struct tok_bpe *b, const char *s, size_t len,
				 struct tok_pieces *out);
/* Where the piece of the word s[0, len) that starts at from ends: the first
 * place past from where the word may be cut (bpe.c: before a U+2581 that no
 * merge joins to what precedes it), or len. Merging each piece alone gives
 * the word's tokens. */
size_t tok_bpe_cut(const struct tok_bpe *b, const char *s, size_t len, size_t from);

enum tok_status tok_wordpiece_build(const struct tok_model *m, struct tok_wordpiece **out,
				    char *err, size_t errlen);
void tok_wordpiece_free(struct tok_wordpiece *w);
enum tok_status tok_wordpiece_tokenize(const struct tok_wordpiece *w, const char *s, size_t len,
				       struct tok_pieces *out);

enum tok_status tok_unigram_build(const struct tok_model *m, struct tok_unigram **out,
				  char *err, size_t errlen);
void tok_unigram_free(struct tok_unigram *u);
enum tok_status tok_unigram_tokenize(const struct tok_unigram *u, const char *s, size_t len,
				     struct tok_pieces *out);

/* ---- post-processors (post.c) ---------------------------------------------- */

/* The encoding being made: tokens with offsets still in original BYTES. */
struct tok_draft {
	struct tok_token *v; /* [n] */
	size_t n, cap;
};

enum tok_status tok_draft_push(struct tok_draft *d, struct tok_token tk);

/* Applies the post-processor to a single sequence. With add_special 0 only
 * the offset trimming of ByteLevel / Roberta happens. `text` is the original
 * text (trim_offsets looks at it, and at t's added tokens: a NULL t has
 * none). Special tokens get offsets (0, 0). */
enum tok_status tok_post_apply(const struct tok_post *p, const struct tokenizer *t,
			       const char *text, size_t len, int add_special,
			       struct tok_draft *d);

/* Checks what tok_post_apply takes for granted (tok_build calls it once):
 * every special token a template names is in its special_tokens, as
 * Hugging Face's TemplateProcessing builder checks. TOK_ESPEC with err set. */
enum tok_status tok_post_check(const struct tok_post *p, char *err, size_t errlen);

/* ---- decoders (decoder.c) -------------------------------------------------- */

/* A list of strings that decoders rewrite, as Hugging Face's decode_chain. */
struct tok_strs {
	char **v;   /* [n] malloc'd, NUL-terminated, TOK_SUBJECT_SLACK zeroed bytes past len */
	size_t *len; /* [n] */
	size_t n, cap;
};

void tok_strs_release(struct tok_strs *s);
enum tok_status tok_strs_push(struct tok_strs *s, const char *p, size_t len);

/* Compiles the patterns of Replace decoders (tok_build calls it once). */
enum tok_status tok_decoder_compile(struct tok_decoder *d, char *err, size_t errlen);

/* Rewrites s through the decoder chain (d may be NULL: nothing to do);
 * TOK_ETOOLONG when it would make s's bytes more than TOK_NORM_GROWTH times
 * their count on entry plus TOK_NORM_SLACK (Replace decoders, tokenizer.h). */
enum tok_status tok_decode_chain(const struct tok_decoder *d, struct tok_strs *s);

/* The chain for one token shown on its own in the middle of a text (what
 * tok_display shows): as tok_decode_chain, but Strip decoders are skipped and
 * Metaspace treats the token as not the first, so "▁the" reads " the". */
enum tok_status tok_display_chain(const struct tok_decoder *d, struct tok_strs *s);

/* ---- the tokenizer (tokenizer.c) ------------------------------------------ */

struct tokenizer {
	struct tok_spec spec;
	struct tok_model_rt *model;
	struct tok_added_set *added;
	char **pieces; /* [vocab_end] the string of each id (model or added), or NULL */
	struct tok_vocab *piece_ids; /* string -> id over pieces, added tokens first */
	uint8_t *is_special; /* [vocab_end] */
	uint8_t *is_added;   /* [vocab_end] 1: an added token's id */
	int32_t vocab_end;
};

/* The id of a token string: an added token's, else the model's; -1 if none. */
int32_t tok_token_to_id(const struct tokenizer *t, const char *s, size_t len);

#endif
