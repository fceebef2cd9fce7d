/*
 * values.h: the typed values of a request, as every front end decodes them
 * (no JSON here): float tensors, the encodings of an answer, and where a
 * value came from, for the errors later steps report.
 *
 * Ownership: a struct api_tensor owns its data and lengths (api_tensor_release,
 * safe on a zeroed or released tensor). A struct api_where borrows its base.
 */
#ifndef API_VALUES_H
#define API_VALUES_H

#include <stddef.h>

enum { API_MAX_RANK = 4 };

/* Bytes of a place (a JSON pointer), with its NUL. */
enum { API_PTR_MAX = 192 };

struct api_tensor {
	float *data; /* [shape[0], ..., shape[rank - 1]], row-major, n floats */
	size_t rank;
	size_t shape[API_MAX_RANK];
	size_t n; /* product of the shape */
	/* For ragged batches read with API_T_RAGGED: data is padded with zeros to
	 * [B, Lmax, ...] and lengths[b] is item b's own length (NULL otherwise). */
	size_t *lengths;
};

void api_tensor_release(struct api_tensor *t);

enum api_encoding {
	API_ENC_FLOAT = 0, /* nested JSON arrays of numbers */
	API_ENC_BASE64,    /* {"shape": [...], "base64": "..."} */
};

/*
 * Where a value came from: a JSON pointer (/v1: "/tokens"), or the place in
 * a /v2 request ("/inputs/0/data"). Its elements are pointed at nested
 * (base/b/i, as nested JSON arrays), flat (base/k, the row-major index in a
 * flat array), by their item alone (base/b: the words of a /v2 text, whose
 * flat data holds whole strings), or not at all (the base alone: bytes of a
 * binary section).
 */
enum api_where_elems { API_WHERE_NESTED = 0, API_WHERE_FLAT, API_WHERE_ITEM, API_WHERE_NONE };

struct api_where {
	const char *base;
	enum api_where_elems elems;
	size_t item_elems; /* flat: the elements an item of a batch spans (0: one) */
};

/* Where item b of a batch is, into dst[API_PTR_MAX]: the base itself when
 * unbatched, or when flat and an item spans more than one element (no one
 * index is the item, as an item of nested data is). */
const char *api_where_item(char *dst, const struct api_where *w, int batched, size_t b);

/* Where element i of item b is, the items L long when flat. */
const char *api_where_elem(char *dst, const struct api_where *w, int batched, size_t b,
			   size_t i, size_t L);

/*
 * Appends a JSON pointer child: `base` + "/" + key (escaped per RFC 6901), or
 * + "/" + index, into dst (size dstsz, truncated safely).
 */
void api_ptr_key(char *dst, size_t dstsz, const char *base, const char *key);
void api_ptr_index(char *dst, size_t dstsz, const char *base, size_t index);

#endif
