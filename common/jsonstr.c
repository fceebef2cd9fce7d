/* jsonstr.c: JSON string literals (see jsonstr.h). */
#include "jsonstr.h"

#include <string.h>

#include "utf8.h"

/* SHORT[c]: the letter of c's two-character escape (\n for '\n'), or 0. */
static const char SHORT[0x60] = {
	['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f',
	['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't',
};

/* Appends the escape of c: '"', '\\' or a control character. */
static void append_escape(struct buf *out, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};

	if (SHORT[c] != 0) {
		esc[1] = SHORT[c];
		buf_append(out, esc, 2);
		return;
	}
	buf_append(out, esc, sizeof esc);
}

/* Runs of plain bytes (ASCII and valid UTF-8) go in one append; an invalid
 * stretch becomes one \ufffd (utf8_bad_run's maximal subparts). */
void jsonstr_put_n(struct buf *out, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0; /* start of the bytes not yet appended */
	size_t i = 0;

	buf_putc(out, '"');
	while (i < n) {
		unsigned char c = u[i];
		size_t len, bad;

		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80 && (len = utf8_char(u + i, n - i)) > 0) {
			i += len;
			continue;
		}
		buf_append(out, s + run, i - run);
		if (c < 0x80) {
			append_escape(out, c);
			i++;
		} else {
			bad = utf8_bad_run(u + i, n - i);
			buf_append(out, "\\ufffd", 6);
			i += bad;
		}
		run = i;
	}
	buf_append(out, s + run, n - run);
	buf_putc(out, '"');
}

void jsonstr_put(struct buf *out, const char *s)
{
	if (s == NULL)
		s = "";
	jsonstr_put_n(out, s, strlen(s));
}
