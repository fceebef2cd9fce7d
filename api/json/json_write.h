/*
 * json_write.h: the small fixed fields of the answers (shapes, usage), written
 * without printf, which is a visible share of a small request's CPU time.
 * Internal to api/. Everything appends to a caller's struct buf, whose sticky
 * `failed` the caller checks once at the end; nothing allocates but the buf.
 */
#ifndef API_JSON_WRITE_H
#define API_JSON_WRITE_H

#include <stddef.h>

#include "common/buf.h"

/* One integer field: the literal text before it (e.g. ",\"batch\":") and its value. */
struct api_json_size {
	const char *prefix;
	size_t value;
};

/* Appends prefix and value ("%zu") of each of the n fields, in order. */
void api_json_sizes(struct buf *b, const struct api_json_size *fields, size_t n);

/* Appends x as "%.*f" would (exactly; see fmt_fixed), decimals 0..9. */
void api_json_fixed(struct buf *b, double x, int decimals);

/* Appends ,"usage":{"flops":%.0f,"milliseconds":%.3f} */
void api_json_usage(struct buf *b, double flops, double ms);

#endif
