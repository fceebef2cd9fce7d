/* utf8.c: UTF-8 characters and prefixes (see utf8.h). */
#include "utf8.h"

/* The length of a UTF-8 character by its lead byte c, or 0 when c cannot lead. */
static size_t utf8_need(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c < 0xc2)
		return 0; /* a continuation byte, or an overlong 2-byte lead */
	if (c < 0xe0)
		return 2;
	if (c < 0xf0)
		return 3;
	return c < 0xf5 ? 4 : 0;
}

size_t utf8_char(const unsigned char *s, size_t n)
{
	size_t need = n > 0 ? utf8_need(s[0]) : 0;
	unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */

	if (need == 0 || need > n)
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0; /* no overlong 3-byte forms */
	else if (s[0] == 0xed)
		hi = 0x9f; /* no surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90; /* no overlong 4-byte forms */
	else if (s[0] == 0xf4)
		hi = 0x8f; /* nothing past U+10FFFF */
	if (need > 1 && (s[1] < lo || s[1] > hi))
		return 0;
	for (size_t i = 2; i < need; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return need;
}

size_t utf8_whole(const char *s, size_t len)
{
	size_t lead = len;
	size_t need;
	unsigned char c;

	/* step back over at most 3 continuation bytes (10xxxxxx) to a lead byte */
	while (lead > 0 && len - lead < 3 && ((unsigned char)s[lead - 1] & 0xc0) == 0x80)
		lead--;
	if (lead == 0)
		return len;
	c = (unsigned char)s[lead - 1];
	if (c < 0xc0)
		return len; /* ASCII, or stray continuation bytes */
	need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	if (len - (lead - 1) < need)
		return lead - 1;
	return len;
}

size_t utf8_check(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		size_t n;
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		n = utf8_char(u + i, len - i);
		if (n == 0)
			return i;
		i += n;
	}
	return len;
}

size_t utf8_bad_run(const unsigned char *s, size_t n)
{
	size_t need = utf8_need(s[0]);
	unsigned char lo = 0x80, hi = 0xbf;
	size_t i = 1;

	if (need < 2)
		return 1;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	/* the lead and as many of its continuation bytes as could still fit */
	if (i < n && s[i] >= lo && s[i] <= hi) {
		i++;
		while (i < n && i < need && (s[i] & 0xc0) == 0x80)
			i++;
	}
	return i;
}

size_t utf8_put(char *dst, uint32_t cp)
{
	if (cp < 0x80) {
		dst[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		dst[0] = (char)(0xc0 | cp >> 6);
		dst[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		dst[0] = (char)(0xe0 | cp >> 12);
		dst[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		dst[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	dst[0] = (char)(0xf0 | cp >> 18);
	dst[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	dst[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	dst[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

int utf8_hex4(const char *s, uint32_t *unit)
{
	*unit = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		uint32_t d;

		if (c >= '0' && c <= '9')
			d = (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (uint32_t)(c - 'A' + 10);
		else
			return -1;
		*unit = *unit << 4 | d;
	}
	return 0;
}
