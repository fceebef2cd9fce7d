/*
 * bytelevel.h: GPT-2's bytes_to_unicode, both ways. Byte-level BPE spells
 * every byte of the text as one printable character: the bytes that are
 * printable in Latin-1 ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) stand for
 * themselves, the other 68 take U+0100..U+0143 in byte order (so ' ' is
 * U+0120 'Ġ' and '\n' is U+010A 'Ċ'). Hugging Face: pre_tokenizers/
 * byte_level.rs (bytes_char). The ByteLevel pre-tokenizer, decoder and
 * post-processor share these.
 *
 * Pure functions; nothing is allocated or kept.
 */
#ifndef TOKENIZER_BYTELEVEL_H
#define TOKENIZER_BYTELEVEL_H

#include <stddef.h>
#include <stdint.h>

/* Writes the UTF-8 of the character standing for byte b to out (1 or 2
 * bytes, not NUL-terminated) and returns its length. */
size_t tok_byte_to_char(uint8_t b, char out[2]);

/* The byte code point cp stands for, or -1 when cp stands for none. */
int tok_char_to_byte(uint32_t cp);

#endif
