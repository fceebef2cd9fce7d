/* json_write.c: printf-free writers of small answer fields (see json_write.h). */
#include "json_write.h"

#include "common/fmt.h"

void api_json_sizes(struct buf *b, const struct api_json_size *fields, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		buf_puts(b, fields[i].prefix);
		buf_put_u64(b, fields[i].value);
	}
}

void api_json_fixed(struct buf *b, double x, int decimals)
{
	char text[FMT_FIXED_MAX];

	buf_append(b, text, fmt_fixed(text, x, decimals));
}

void api_json_usage(struct buf *b, double flops, double ms)
{
	buf_puts(b, ",\"usage\":{\"flops\":");
	api_json_fixed(b, flops, 0);
	buf_puts(b, ",\"milliseconds\":");
	api_json_fixed(b, ms, 3);
	buf_putc(b, '}');
}
