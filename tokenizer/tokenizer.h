/*
 * tokenizer.h: text -> token ids, pieces and offsets, and ids -> text, as a
 * Hugging Face tokenizer.json says (spec.h). A pure library beside engine/:
 * no I/O, no JSON, no globals; Unicode from utf8proc, regexes from PCRE2.
 *
 * Ownership: tok_build takes the spec over (on failure too) and returns a
 * tokenizer that owns it. A built tokenizer is immutable: any number of
 * threads may encode and decode with it at once. An encoding owns its arrays;
 * its pieces point into the tokenizer, which must outlive it.
 */
#ifndef TOKENIZER_TOKENIZER_H
#define TOKENIZER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "spec.h"

struct tokenizer;

enum tok_status {
	TOK_OK = 0,
	TOK_ENOMEM,   /* an allocation failed, or a size would overflow */
	TOK_EINVAL,   /* the text is not valid UTF-8 (tok_encode checks) */
	TOK_EID,      /* tok_decode: an id the tokenizer does not know */
	TOK_ESPEC,    /* tok_build: the spec is inconsistent (message says how) */
	TOK_EUNK,     /* tok_encode: a piece only the model's unk_token could stand
		       * for, and the vocabulary lacks that token (Hugging Face's
		       * MissingUnkToken, UnkTokenOutOfVocabulary) */
	TOK_ETOOLONG, /* tok_encode, tok_build: the normalizer would make a text (or
		       * an added token's content) longer than TOK_NORM_GROWTH
		       * times itself plus TOK_NORM_SLACK bytes (below);
		       * tok_decode, tok_display: the decoder would, its pieces */
	TOK_ELIMIT,   /* a regex of the file gave up on the text: PCRE2's match,
		       * depth or heap limit, or the largest JIT stack (a pattern
		       * that backtracks without bound, such as (a+)+$) */
};

/*
 * How long a normalizer may make a string of len bytes (and a decoder its
 * pieces, whose Replace is as free): TOK_NORM_GROWTH
 * times len, plus TOK_NORM_SLACK bytes. A Replace's content is the file's to
 * choose, and a Sequence applies each Replace to what the last one wrote: a
 * few bytes of tokenizer.json ('a' -> 'aa', forty times) would otherwise
 * make one byte of text 2^40, and no --max-text-bytes bounds the work and
 * memory of a request. Hugging Face's own normalizers stay far below the
 * bound: NFKC's longest expansion is U+FDFA, 3 bytes to 33, which
 * Metaspace's Replace(' ', U+2581) takes to 39; BERT's CJK spacing is 3 to 5.
 */
#define TOK_NORM_GROWTH ((size_t)32)
#define TOK_NORM_SLACK ((size_t)256)

/*
 * Compiles spec (regexes, vocabulary and merge tables, added-token matcher)
 * and takes it over. Returns TOK_OK with *out set, or another status with
 * *out NULL and a message in err naming the part at fault, e.g.
 * "pre_tokenizer: Split: pattern: missing ) at offset 7" or
 * "model: merges[12]: 'ab' is not in the vocabulary".
 */
enum tok_status tok_build(struct tok_spec *spec, struct tokenizer **out, char *err,
			  size_t errlen);

void tok_free(struct tokenizer *t);

/* One token of an encoding. Offsets are in Unicode code points of the text
 * given to tok_encode, end exclusive (Hugging Face's Python API); a token the
 * post-processor added has (0, 0). */
struct tok_token {
	int32_t id;
	size_t start, end;
	const char *piece; /* the vocabulary's string for id (NUL-terminated) */
	int special;	   /* an added token marked special, or one the post-processor added */
};

struct tok_encoding {
	struct tok_token *tokens; /* [n], malloc'd */
	size_t n;
};

/*
 * Encodes len bytes of text (need not be NUL-terminated). With add_special,
 * the post-processor adds its special tokens, as `encode` does by default.
 * Linear in len: no step rescans what it has already passed. Returns TOK_OK
 * with enc filled (release it), or TOK_EINVAL (*bad_byte: the byte offset of
 * the first invalid UTF-8 sequence), TOK_EUNK (a piece only the model's
 * unk_token could stand for, and its vocabulary lacks that token),
 * TOK_ETOOLONG (the normalizer would make a stretch of the text more than
 * TOK_NORM_GROWTH times as long: a Replace whose content is long, or a
 * Sequence of Replaces that each lengthen what the last one wrote) or
 * TOK_ENOMEM with enc zeroed.
 */
enum tok_status tok_encode(const struct tokenizer *t, const char *text, size_t len,
			   int add_special, struct tok_encoding *enc, size_t *bad_byte);

void tok_encoding_release(struct tok_encoding *enc);

/*
 * Appends the text of ids to out: each id's piece through the decoder, as
 * Hugging Face's `decode` with skip_special_tokens as given. Bytes that do
 * not form UTF-8 (a byte-level piece cut in half) become U+FFFD, as there.
 * TOK_EID with *bad_index set when ids[*bad_index] is not in the vocabulary;
 * TOK_ETOOLONG when the decoder would pass TOK_NORM_GROWTH times the pieces.
 */
enum tok_status tok_decode(const struct tokenizer *t, const int32_t *ids, size_t n,
			   int skip_special, struct buf *out, size_t *bad_index);

/*
 * What a person should read for one token: its piece through the decoder
 * alone ("Ġthe" -> " the", "▁the" -> " the", "##ing" -> "ing", "<0x41>" ->
 * "A"), with bytes that are not whole UTF-8 shown as U+FFFD. Appended to out.
 */
enum tok_status tok_display(const struct tokenizer *t, int32_t id, struct buf *out);

/* The vocabulary's string for id, or NULL. Ids run over [0, tok_vocab_end). */
const char *tok_piece(const struct tokenizer *t, int32_t id);
int32_t tok_vocab_end(const struct tokenizer *t); /* one past the largest id */

#endif
