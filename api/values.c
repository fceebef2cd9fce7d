/* values.c: typed request values and their places (see values.h). */
#include "values.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void api_tensor_release(struct api_tensor *t)
{
	if (t == NULL)
		return;
	free(t->data);
	free(t->lengths);
	memset(t, 0, sizeof(*t));
}

void api_ptr_key(char *dst, size_t dstsz, const char *base, const char *key)
{
	size_t len = (size_t)snprintf(dst, dstsz, "%s/", base);

	/* RFC 6901: '~' is written "~0" and '/' is written "~1" */
	for (const char *k = key; *k && len + 3 < dstsz; k++) {
		if (*k == '~' || *k == '/') {
			dst[len++] = '~';
			dst[len++] = *k == '~' ? '0' : '1';
		} else {
			dst[len++] = *k;
		}
	}
	if (len < dstsz)
		dst[len] = '\0';
}

void api_ptr_index(char *dst, size_t dstsz, const char *base, size_t index)
{
	char digits[24];
	size_t n = 0, len = strlen(base);

	do {
		digits[n++] = (char)('0' + index % 10);
		index /= 10;
	} while (index > 0);
	if (len + n + 2 > dstsz) /* no room: keep the base, truncated */
		len = n + 2 < dstsz ? dstsz - n - 2 : 0;
	memmove(dst, base, len);
	dst[len++] = '/';
	while (n > 0 && len + 1 < dstsz)
		dst[len++] = digits[--n];
	dst[len] = '\0';
}

const char *api_where_item(char *dst, const struct api_where *w, int batched, size_t b)
{
	if (!batched || w->elems == API_WHERE_NONE ||
	    (w->elems == API_WHERE_FLAT && w->item_elems > 1)) {
		snprintf(dst, API_PTR_MAX, "%s", w->base);
		return dst;
	}
	api_ptr_index(dst, API_PTR_MAX, w->base, b);
	return dst;
}

const char *api_where_elem(char *dst, const struct api_where *w, int batched, size_t b,
			   size_t i, size_t L)
{
	char item[API_PTR_MAX];

	if (w->elems == API_WHERE_FLAT) {
		api_ptr_index(dst, API_PTR_MAX, w->base, batched ? b * L + i : i);
		return dst;
	}
	if (w->elems == API_WHERE_ITEM || w->elems == API_WHERE_NONE)
		return api_where_item(dst, w, batched, b);
	api_ptr_index(dst, API_PTR_MAX, api_where_item(item, w, batched, b), i);
	return dst;
}
