/*
 * spec.h: a tokenizer described as data, the way Hugging Face's
 * tokenizer.json describes it: normalizer -> pre-tokenizer -> model ->
 * post-processor, with added tokens matched before pre-tokenization, and a
 * decoder for the way back. Each part's semantics are those of Hugging Face's
 * `tokenizers` crate (normalizers/, pre_tokenizers/, models/, processors/,
 * decoders/, tokenizer/added_vocabulary.rs).
 *
 * A spec is plain data: api/tokenizer_file.c fills one from a tokenizer.json
 * (or a GPT-2 vocab.json with its merges.txt); tests fill small ones by hand.
 * tok_build (tokenizer.h) takes a spec over and compiles it.
 *
 * Ownership: a spec owns every string and array reachable from it, each
 * allocated with malloc; tok_spec_release frees them all and accepts a zeroed
 * spec. Strings are NUL-terminated UTF-8 (a vocabulary piece may not hold a
 * NUL byte). Optional parts are NULL when absent ("normalizer": null).
 */
#ifndef TOKENIZER_SPEC_H
#define TOKENIZER_SPEC_H

#include <stddef.h>
#include <stdint.h>

struct tok_regex; /* regex.h: a compiled PCRE2 pattern */

/* A `pattern` of Replace or Split: {"String": s} or {"Regex": r}. */
struct tok_pattern {
	char *text;
	int is_regex;
	struct tok_regex *re; /* compiled by tok_build (a literal too); NULL in a spec */
};

/* ---- normalizers --------------------------------------------------------- */

enum tok_norm_kind {
	TOK_NORM_NFC,
	TOK_NORM_NFD,
	TOK_NORM_NFKC,
	TOK_NORM_NFKD,
	TOK_NORM_LOWERCASE,
	TOK_NORM_STRIP_ACCENTS, /* removes every mark (M*); meant after NFD */
	TOK_NORM_BERT,
	TOK_NORM_PREPEND,
	TOK_NORM_REPLACE,
	TOK_NORM_STRIP,
	TOK_NORM_SEQUENCE,
};

struct tok_normalizer {
	enum tok_norm_kind kind;
	/* BERT: clean_text, handle_chinese_chars, lowercase as given; strip_accents
	 * 1 or 0, or -1 for JSON null, which follows lowercase. */
	int clean_text, handle_chinese_chars, strip_accents, lowercase;
	char *prepend;		    /* PREPEND */
	struct tok_pattern pattern; /* REPLACE */
	char *content;		    /* REPLACE: what each match becomes */
	int strip_left, strip_right; /* STRIP */
	struct tok_normalizer *items; /* SEQUENCE: [n_items] */
	size_t n_items;
};

/* ---- pre-tokenizers ------------------------------------------------------ */

enum tok_pre_kind {
	TOK_PRE_BYTE_LEVEL,
	TOK_PRE_SPLIT,
	TOK_PRE_METASPACE,
	TOK_PRE_WHITESPACE,	  /* \w+|[^\w\s]+ */
	TOK_PRE_WHITESPACE_SPLIT, /* splits on whitespace, dropping it */
	TOK_PRE_BERT,		  /* whitespace, then each punctuation char alone */
	TOK_PRE_PUNCTUATION,
	TOK_PRE_DIGITS,
	TOK_PRE_SEQUENCE,
};

/* SplitDelimiterBehavior: what becomes of a match (the delimiter). */
enum tok_split_behavior {
	TOK_SPLIT_REMOVED,
	TOK_SPLIT_ISOLATED,
	TOK_SPLIT_MERGED_WITH_PREVIOUS,
	TOK_SPLIT_MERGED_WITH_NEXT,
	TOK_SPLIT_CONTIGUOUS,
};

/* Metaspace's prepend_scheme (older files: add_prefix_space true = ALWAYS). */
enum tok_prepend_scheme { TOK_PREPEND_ALWAYS, TOK_PREPEND_NEVER, TOK_PREPEND_FIRST };

struct tok_pretokenizer {
	enum tok_pre_kind kind;
	int add_prefix_space; /* BYTE_LEVEL */
	int use_regex;	      /* BYTE_LEVEL: split with GPT-2's regex first */
	struct tok_pattern pattern;	  /* SPLIT */
	enum tok_split_behavior behavior; /* SPLIT, PUNCTUATION */
	int invert;			  /* SPLIT */
	char *replacement;		  /* METASPACE: one character, "▁" usually */
	enum tok_prepend_scheme prepend_scheme; /* METASPACE */
	int split;				/* METASPACE: split on the replacement */
	int individual_digits;			/* DIGITS */
	struct tok_pretokenizer *items; /* SEQUENCE: [n_items] */
	size_t n_items;
};

/* ---- models -------------------------------------------------------------- */

enum tok_model_kind { TOK_MODEL_BPE, TOK_MODEL_WORDPIECE, TOK_MODEL_UNIGRAM };

/* One piece of a vocabulary. Ids need not be dense, but are unique and >= 0. */
struct tok_vocab_entry {
	char *piece;
	int32_t id;
	double score; /* UNIGRAM: the piece's log probability; else 0 */
};

/* One BPE merge, "left right" in the order of the file: rank = its index. */
struct tok_merge {
	char *left, *right;
};

struct tok_model {
	enum tok_model_kind kind;
	struct tok_vocab_entry *vocab; /* [n_vocab] */
	size_t n_vocab;
	struct tok_merge *merges; /* BPE: [n_merges], by rank */
	size_t n_merges;
	char *unk_token;		 /* BPE, WORDPIECE: may be NULL for BPE */
	int32_t unk_id;			 /* UNIGRAM: -1 when none */
	char *continuing_subword_prefix; /* BPE (NULL: none), WORDPIECE ("##") */
	char *end_of_word_suffix;	 /* BPE: NULL when none */
	int fuse_unk, byte_fallback, ignore_merges; /* BPE; UNIGRAM: byte_fallback */
	size_t max_input_chars_per_word;	    /* WORDPIECE: longer words are unk */
};

/* ---- added tokens -------------------------------------------------------- */

struct tok_added {
	char *content;
	int32_t id;
	int single_word, lstrip, rstrip, normalized, special;
};

/* ---- post-processors ----------------------------------------------------- */

enum tok_post_kind {
	TOK_POST_TEMPLATE,
	TOK_POST_BERT,	  /* [CLS] A [SEP] */
	TOK_POST_ROBERTA, /* <s> A </s>, and trim_offsets / add_prefix_space */
	TOK_POST_BYTE_LEVEL,
	TOK_POST_SEQUENCE,
};

/* One element of a template's `single`: a special token, or the sequence. */
struct tok_template_piece {
	int is_sequence; /* 1: {"Sequence": {"id": "A"}}; 0: {"SpecialToken": ...} */
	char *special;	 /* the special token's name (a key of special_tokens) */
};

/* An entry of a template's special_tokens: a name standing for ids. */
struct tok_template_special {
	char *name;
	int32_t *ids; /* [n] */
	char **tokens; /* [n] */
	size_t n;
};

struct tok_post {
	enum tok_post_kind kind;
	struct tok_template_piece *single; /* TEMPLATE: [n_single] */
	size_t n_single;
	struct tok_template_special *specials; /* TEMPLATE: [n_specials] */
	size_t n_specials;
	char *cls, *sep;       /* BERT, ROBERTA: token strings */
	int32_t cls_id, sep_id; /* BERT, ROBERTA */
	int trim_offsets;      /* BYTE_LEVEL, ROBERTA */
	int add_prefix_space;  /* BYTE_LEVEL, ROBERTA */
	struct tok_post *items; /* SEQUENCE: [n_items] */
	size_t n_items;
};

/* ---- decoders ------------------------------------------------------------ */

enum tok_dec_kind {
	TOK_DEC_BYTE_LEVEL,
	TOK_DEC_METASPACE,
	TOK_DEC_WORDPIECE,
	TOK_DEC_BYTE_FALLBACK,
	TOK_DEC_FUSE,
	TOK_DEC_STRIP,
	TOK_DEC_REPLACE,
	TOK_DEC_SEQUENCE,
};

struct tok_decoder {
	enum tok_dec_kind kind;
	char *replacement;		       /* METASPACE */
	enum tok_prepend_scheme prepend_scheme; /* METASPACE */
	char *prefix;			       /* WORDPIECE: "##" */
	int cleanup;			       /* WORDPIECE */
	char *content;			       /* STRIP: one character; REPLACE */
	size_t strip_start, strip_stop;	       /* STRIP: how many to strip */
	struct tok_pattern pattern;	       /* REPLACE */
	struct tok_decoder *items; /* SEQUENCE: [n_items] */
	size_t n_items;
};

/* ---- the whole ----------------------------------------------------------- */

struct tok_spec {
	struct tok_normalizer *normalizer;  /* NULL: none */
	struct tok_pretokenizer *pretokenizer; /* NULL: none */
	struct tok_model model;
	struct tok_added *added; /* [n_added] */
	size_t n_added;
	struct tok_post *post;	   /* NULL: none */
	struct tok_decoder *decoder; /* NULL: none (pieces are joined as they are) */
};

/* Frees everything s owns and zeroes it. s may be zeroed already. */
void tok_spec_release(struct tok_spec *s);

/* The parts' own releases, for a reader that fails half way. Each frees what
 * the part owns (not the part itself). */
void tok_normalizer_release(struct tok_normalizer *n);
void tok_pretokenizer_release(struct tok_pretokenizer *p);
void tok_model_release(struct tok_model *m);
void tok_post_release(struct tok_post *p);
void tok_decoder_release(struct tok_decoder *d);

#endif
