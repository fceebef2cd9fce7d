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

/* ---- normalized strings (nstr.c) ------------------------------------------ */

/* A byte range of the original text, end exclusive. */
struct tok_span {
	size_t start, end;
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
};

void tok_nstr_init(struct tok_nstr *n);
void tok_nstr_release(struct tok_nstr *n);
/* Appends one character's bytes c[0..clen) with span sp (to every byte). */
enum tok_status tok_nstr_push(struct tok_nstr *n, const char *c, size_t clen, struct tok_span sp);
/* n := the original text itself: byte i spans the whole character holding it. */
enum tok_status tok_nstr_from_text(struct tok_nstr *n, const char *text, size_t len);
/* out := n[from, to) (byte offsets on character boundaries). */
enum tok_status tok_nstr_slice(const struct tok_nstr *n, size_t from, size_t to,
			       struct tok_nstr *out);

/* A stretch the pipeline carries: normalized text still to tokenize, or an
 * added token already matched (id >= 0, whose n is its matched text). */
struct tok_split {
	struct tok_nstr n;
	int32_t id; /* -1: not yet tokenized */
};

struct tok_splits {
	struct tok_split *v; /* [n] */
	size_t n, cap;
};

void tok_splits_release(struct tok_splits *s);
/* Appends a split taking n over (n is zeroed, on failure too). */
enum tok_status tok_splits_push(struct tok_splits *s, struct tok_nstr *n, int32_t id);

/* ---- regexes (regex.c): PCRE2 with UTF and UCP ----------------------------- */

/* Compiles a pattern (is_regex) or a literal. err gets PCRE2's message. */
struct tok_regex *tok_regex_compile(const char *text, int is_regex, char *err, size_t errlen);
void tok_regex_free(struct tok_regex *re);

/* The next match in s[0, len) at or after byte `from`: TOK_OK with
 * [*mstart, *mend), or TOK_EINVAL when there is none. Empty matches are
 * skipped, as Hugging Face's find_matches does. */
enum tok_status tok_regex_next(const struct tok_regex *re, const char *s, size_t len,
			       size_t from, size_t *mstart, size_t *mend);

/* ---- normalizers (normalizer.c) and pre-tokenizers (pretokenizer.c) ------- */

/* Compiles the patterns of a part (tok_build calls these once). */
enum tok_status tok_normalizer_compile(struct tok_normalizer *n, char *err, size_t errlen);
enum tok_status tok_pretokenizer_compile(struct tok_pretokenizer *p, char *err, size_t errlen);
/* Frees what compiling made (the parts' releases in spec.c call these). */
void tok_pattern_release(struct tok_pattern *p);

/* Normalizes n in place. */
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

/* ---- models (vocab.c, bpe.c, wordpiece.c, unigram.c) ---------------------- */

/* A map from strings to ids (open addressing over FNV-1a), built once. */
struct tok_vocab;

struct tok_vocab *tok_vocab_new(size_t expected);
void tok_vocab_free(struct tok_vocab *v);
/* Adds s[0, len) -> id; TOK_ESPEC when s is there already. */
enum tok_status tok_vocab_put(struct tok_vocab *v, const char *s, size_t len, int32_t id);
/* The id of s[0, len), or -1. */
int32_t tok_vocab_get(const struct tok_vocab *v, const char *s, size_t len);

struct tok_model_rt; /* a built model */

/* Builds the model's tables from m, which stays owned by the spec. */
enum tok_status tok_model_build(const struct tok_model *m, struct tok_model_rt **out, char *err,
				size_t errlen);
void tok_model_free(struct tok_model_rt *rt);

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
 * or n log n in len. A BPE without unk_token drops what it cannot cover,
 * as Hugging Face does. */
enum tok_status tok_model_tokenize(const struct tok_model_rt *rt, const char *s, size_t len,
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
 * text (trim_offsets looks at it). Special tokens get offsets (0, 0). */
enum tok_status tok_post_apply(const struct tok_post *p, const struct tokenizer *t,
			       const char *text, size_t len, int add_special,
			       struct tok_draft *d);

/* ---- decoders (decoder.c) -------------------------------------------------- */

/* A list of strings that decoders rewrite, as Hugging Face's decode_chain. */
struct tok_strs {
	char **v;   /* [n] malloc'd, NUL-terminated (pieces may hold raw bytes) */
	size_t *len; /* [n] */
	size_t n, cap;
};

void tok_strs_release(struct tok_strs *s);
enum tok_status tok_strs_push(struct tok_strs *s, const char *p, size_t len);

/* Compiles the patterns of Replace decoders (tok_build calls it once). */
enum tok_status tok_decoder_compile(struct tok_decoder *d, char *err, size_t errlen);

/* Rewrites s through the decoder chain (d may be NULL: nothing to do). */
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
	int32_t vocab_end;
};

/* The id of a token string: an added token's, else the model's; -1 if none. */
int32_t tok_token_to_id(const struct tokenizer *t, const char *s, size_t len);

#endif
