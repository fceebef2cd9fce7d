/*
 * unicode.h: the character classes and mappings the text stages need, over
 * utf8proc, each named for the Hugging Face `tokenizers` predicate it stands
 * for. Internal to tokenizer/. Pure functions; only tok_uc_normalize
 * allocates (into the caller's tok_nstr), and keeps one table, derived from
 * utf8proc by tok_uc_prepare_forms (or its first call; thread-safe) and
 * never freed.
 *
 * Where the classes of HF's Rust crates, PCRE2 and JavaScript disagree the
 * functions follow HF; tests/tokenizer/check_text.c lists the cases.
 */
#ifndef TOKENIZER_UNICODE_H
#define TOKENIZER_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#include "stages.h"

/* The code point of the valid UTF-8 character at s[0, n), n >= 1, and its
 * byte length in *clen. The text stages only see validated UTF-8. */
int32_t tok_uc_decode(const char *s, size_t n, size_t *clen);

/* Writes cp as UTF-8 to out[0, 4) and returns its length. */
size_t tok_uc_encode(int32_t cp, char out[4]);

/* The byte length of the UTF-8 character starting with byte b (1 for a
 * byte that cannot start one, so that scans always advance). */
size_t tok_uc_len(unsigned char b);

/* White_Space (Rust char::is_whitespace, Oniguruma's and Rust regex's \s). */
int tok_uc_is_space(int32_t cp);
/* A word character as Rust regex's and Oniguruma's \w: letters, marks,
 * decimal digits, letter numbers, connector punctuation, ZWNJ/ZWJ. */
int tok_uc_is_word(int32_t cp);
/* Rust char::is_numeric: Nd, Nl, No. */
int tok_uc_is_numeric(int32_t cp);
/* HF is_bert_punc: ASCII punctuation or a P* category. */
int tok_uc_is_punct(int32_t cp);
/* Mn, a nonspacing mark (what BertNormalizer's strip_accents removes). */
int tok_uc_is_mn(int32_t cp);
/* M*, any mark: unicode-normalization's is_combining_mark (what the
 * StripAccents normalizer removes). */
int tok_uc_is_mark(int32_t cp);
/* BertNormalizer's is_control: Cc, Cf, Cn, Co, Cs, but not \t \n \r. */
int tok_uc_is_bert_control(int32_t cp);
/* BertNormalizer's is_chinese_char: the CJK ideograph blocks HF lists. */
int tok_uc_is_chinese(int32_t cp);

/* The full lowercase of cp (Rust char::to_lowercase): writes 1 or 2 code
 * points to out and returns how many ('İ' gives "i̇"). */
size_t tok_uc_lower(int32_t cp, int32_t out[2]);

enum tok_uc_form { TOK_UC_NFC, TOK_UC_NFD, TOK_UC_NFKC, TOK_UC_NFKD };

/*
 * out := in in normalization form `form`, with alignments as Hugging Face's:
 * each character keeps the span of the character it came from (both parts
 * of a decomposed 'é' span it), and a composite the span of its starter
 * (NFC of "e\u0301": 'é' spans the 'e'). out must be initialized (its
 * contents are replaced); in is not changed.
 */
enum tok_status tok_uc_normalize(const struct tok_nstr *in, enum tok_uc_form form,
				 struct tok_nstr *out);

/* Derives the table NFC and NFKC segment by (about 10 ms, once per
 * process): called where a tokenizer is built, so that no request pays it. */
void tok_uc_prepare_forms(void);

#endif
