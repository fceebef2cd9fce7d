/* jsonstr.c: JSON string literals (see jsonstr.h). */
#include "jsonstr.h"

#include <string.h>

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

/* Runs of plain bytes go in one append. */
void jsonstr_put_n(struct buf *out, const char *s, size_t n)
{
	size_t run = 0; /* start of the bytes not yet appended */
	size_t i;

	buf_putc(out, '"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		buf_append(out, s + run, i - run);
		append_escape(out, c);
		run = i + 1;
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
