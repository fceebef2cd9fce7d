/*
 * fastjson.h: large arrays of plain numbers, read before jansson sees the body.
 *
 * jansson builds a node per number, so reading [128, 512] embeddings as JSON
 * takes tens of milliseconds, several times the attention itself. So
 * fastjson_scan walks the body once (a small state machine that knows JSON's
 * grammar, strings and escapes included) and finds every innermost array of
 * at least FASTJSON_MIN_ROW plain numbers that is an element of another array
 * under one of the caller's fields (JSON pointers such as "/embeddings": the
 * field's value may be nested arrays, and only the rows inside them count).
 * It reads each such row into a pool, exactly as the jansson path reads it
 * (the C library's strtod, or the integer for an integer literal, then
 * (float); an exact shortcut when the result is the same: fastjson_row.c), and
 * returns a copy of the body in which the row is replaced by a placeholder
 * object, its pool index as the value:
 *
 *     [0.25, -1, 3.5e-2, ...]   ->   {"\u0001":17}
 *
 * An array whose elements are all pooled rows of one length, at least 2 of
 * them (a matrix, as nested [L, E] embeddings are), becomes one placeholder
 * in turn, so jansson parses one object for it instead of one a row:
 *
 *     [[0.25, ...], [1, ...], ...]   ->   {"\u0001":130}
 *
 * Its rows keep their entries in the pool (the `rows` entries just before
 * the matrix's own), so each row's errors stay what they were. An array of
 * rows of different lengths (ragged), or with anything but such rows in it,
 * keeps a placeholder a row as before.
 *
 * The tensor readers (api_tensor_read_pool) take a placeholder where a row
 * (or a matrix) is expected, with the errors the row would have had, so
 * what a request means is unchanged. The copy is shorter than the body, not padded to its
 * length: jansson skips blanks a byte at a time, and padding [128, 512]
 * embeddings cost it 3 ms, as much as the scan. Line and column of a syntax
 * error stay right all the same: a row is only replaced where jansson
 * expects a value, after checking it, so the copy parses if and only if the
 * body does, and when it does not, req_parse_pooled parses the body itself
 * for the error.
 *
 * Nothing is ever rejected here: a row with anything unusual is left as it
 * is, for jansson and the tensor readers to judge as before: a string, a
 * literal or a nested value in it, an integer literal of 19 or more digits,
 * a number token longer than 64 characters, a number outside float32's range
 * (so its 422 still names the element), a row where jansson would report an
 * error, or one whose lines are too short to hold the placeholder's tokens.
 * The scan also stops (keeping the rows found so far) at the first byte that
 * is not valid JSON in that place, or past FASTJSON_MAX_DEPTH nested values.
 *
 * Base64 tensors. Under a field whose value is an object (a tensor written
 * {"shape": [...], "base64": "..."}), the string value of its "base64" member,
 * of at least FASTJSON_MIN_BASE64 characters, is decoded straight into the
 * pool (little-endian float32 bytes, converted to the host's order) and
 * replaced by a placeholder the same way, so jansson never lexes it:
 *
 *     "base64":"AACAPwAAAEA..."   ->   "base64":{"\u0001":3}
 *
 * Only a string that decodes cleanly to whole float32 values is pooled (it
 * then holds alphabet characters and '=' only, which jansson reads as they
 * are); a string with an escape, a bad character, bad padding or a stray
 * byte count stays for jansson and the tensor reader's errors. The reader
 * (json_tensor.c) checks the shape against the string's length as before.
 *
 * The placeholder cannot be forged: a body that contains the text \u0001
 * anywhere is left whole to jansson (no row is pooled), so every object with
 * the key "\u0001" that a pooled parse yields was made here.
 *
 * Ownership: a struct fastjson_pool is a value owned by its caller, zeroed
 * before first use and released with fastjson_pool_release (safe on a zeroed
 * or released pool). fastjson_scan's copy belongs to the caller (free()).
 * fastjson_pool_take gives the pool's values away (api_tensor_read_pool
 * takes them for a matrix that holds all of them, instead of a copy): the
 * pool is then empty, and its placeholders stand for nothing.
 */
#ifndef API_FASTJSON_H
#define API_FASTJSON_H

#include <jansson.h>
#include <stddef.h>

/* Both readers of tensor numbers (the pool here, read_elem in json_tensor.c)
 * take a number x when (float)x is finite: |x| below FLT_MAX plus half its
 * ulp, 2^128 - 2^103, which itself rounds (ties to even) to infinity. So
 * 3.4028235e38, FLT_MAX as numpy prints it, reads as FLT_MAX, and 3.5e38 is
 * out of range. The bound is on the double nearest the decimal. */
#define FASTJSON_FLOAT32_BOUND 0x1.ffffffp+127

enum { FASTJSON_MIN_ROW = 64, FASTJSON_MAX_DEPTH = 64, FASTJSON_MIN_BASE64 = 128 };

/* One pooled row: values[offset .. offset + count). first_real is the index
 * of its first number written with a fraction or exponent (count if none),
 * which integer-only readers report. base64_len is 0 for a row of numbers;
 * for a decoded base64 string, its length in characters (count floats).
 * rows is 0 for a row or a string; for a matrix, its number of rows, each
 * of count / rows numbers, whose entries are the rows before this one in
 * pool->rows (first_real then counts row-major in the matrix). */
struct fastjson_row {
	size_t offset, count, first_real;
	size_t base64_len;
	size_t rows;
};

struct fastjson_pool {
	float *values; /* [n_values] every row's numbers, row after row */
	size_t n_values, cap_values;
	struct fastjson_row *rows; /* [n_rows] */
	size_t n_rows, cap_rows;
};

void fastjson_pool_release(struct fastjson_pool *pool);

/*
 * Scans body[0 .. len) for rows under `fields` (NULL-terminated JSON
 * pointers, object keys only) and pools them. Returns a new NUL-terminated
 * copy of the body with the pooled rows replaced (*copy_len bytes, at most
 * len), or NULL when no row was pooled (the caller then parses body itself).
 * Out of memory is not an error: the rows found until then are kept, the
 * rest left to jansson.
 */
char *fastjson_scan(const char *body, size_t len, const char *const *fields,
		    struct fastjson_pool *pool, size_t *copy_len);

/* The row of numbers that v, a placeholder object of this pool, stands for;
 * NULL when v is anything else (a base64 string's placeholder among them, or
 * pool is NULL). */
const struct fastjson_row *fastjson_row(const struct fastjson_pool *pool, const json_t *v);

/* The matrix of pooled rows that v, a placeholder object of this pool,
 * stands for; NULL when v is anything else (or pool is NULL). */
const struct fastjson_row *fastjson_matrix(const struct fastjson_pool *pool, const json_t *v);

/*
 * Gives the caller pool->values, n_values of them, the buffer shrunk to fit
 * where realloc can (the caller free()s it; NULL when the pool holds none),
 * and leaves the pool empty: no values, no entries, so its placeholders no
 * longer stand for anything (fastjson_row and the others return NULL).
 */
float *fastjson_pool_take(struct fastjson_pool *pool);

/* The decoded base64 string that v, a placeholder object of this pool,
 * stands for; NULL when v is anything else (or pool is NULL). */
const struct fastjson_row *fastjson_base64(const struct fastjson_pool *pool, const json_t *v);

#endif
