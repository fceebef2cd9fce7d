/*
 * bytelevel.c: GPT-2's bytes_to_unicode as arithmetic (bytelevel.h). The
 * table is bytes 0x21..0x7E, 0xA1..0xAC and 0xAE..0xFF to themselves, then
 * the remaining bytes in order to 256, 257, ...: 0x00..0x20 -> 256..288,
 * 0x7F..0xA0 -> 289..322, 0xAD -> 323. tests/tokenizer/check_models.c builds
 * the table the way GPT-2 does and compares all 256 bytes.
 */
#include "bytelevel.h"

/* The code point standing for byte b. */
static uint32_t byte_cp(uint8_t b)
{
	if (b <= 0x20)
		return 256u + b;
	if (b >= 0x7f && b <= 0xa0)
		return 289u + (uint32_t)(b - 0x7f);
	if (b == 0xad)
		return 323u;
	return b;
}

size_t tok_byte_to_char(uint8_t b, char out[2])
{
	uint32_t cp = byte_cp(b);

	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	out[0] = (char)(0xc0 | (cp >> 6));
	out[1] = (char)(0x80 | (cp & 0x3f));
	return 2;
}

int tok_char_to_byte(uint32_t cp)
{
	if ((cp >= 0x21 && cp <= 0x7e) || (cp >= 0xa1 && cp <= 0xac) || (cp >= 0xae && cp <= 0xff))
		return (int)cp;
	if (cp >= 256 && cp <= 288)
		return (int)(cp - 256);
	if (cp >= 289 && cp <= 322)
		return (int)(cp - 289 + 0x7f);
	if (cp == 323)
		return 0xad;
	return -1;
}
