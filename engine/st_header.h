/*
 * st_header.h: the safetensors header as a table of tensor entries.
 * Internal to the engine: only safetensors.c and st_header.c include it.
 *
 * Ownership: st_read_header borrows buf for the call and keeps no pointer into
 * it (entries hold offsets relative to the data, not addresses). The table owns
 * its entry array and a name arena; every entry's name is borrowed from that
 * arena and lives until st_table_release, which the caller calls exactly once,
 * on success and on failure alike.
 */
#ifndef ATTN_ST_HEADER_H
#define ATTN_ST_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define ST_NAME_SHOWN 64 /* characters of a tensor name quoted in messages */

enum st_kind {
	ST_F32,
	ST_F16,
	ST_BF16,
	ST_OTHER,   /* a known dtype the engine does not load */
	ST_UNKNOWN, /* a dtype string not in the table: size unknown, not checked */
};

/* One header entry. name points into the table's arena and may hold NUL bytes. */
struct st_tensor {
	const char *name;
	size_t name_len;
	char dtype[16]; /* as written, cut to 15 bytes */
	enum st_kind kind;
	size_t elem_size; /* bytes per element; 0 for ST_UNKNOWN */
	size_t rank;
	size_t dims[2]; /* the first two dims, outermost first */
	size_t numel;
	size_t begin, end; /* data_offsets, relative to the end of the header */
};

struct st_table {
	struct st_tensor *v;
	size_t n, cap;
	char *arena; /* decoded names; never longer than their encoded form */
	size_t arena_used, arena_cap;
};

/*
 * Passes 1 and 2 over buf[0, len): the 8-byte header length, the header parsed
 * into tab (which must start zeroed), then the table checked as a whole (no
 * duplicate names, no overlapping data) and left sorted by name. On success
 * *data_at is the offset in
 * buf where the tensor data starts, and every entry's data lies inside buf. On
 * failure err says why (statuses: safetensors.c's opening comment) and tab may
 * hold a partial table, still to be released.
 */
enum attn_status st_read_header(struct st_table *tab, const uint8_t *buf, size_t len,
				size_t *data_at, struct attn_error *err);

/* The entry named prefix + name in a table st_read_header accepted (sorted
 * by name), or NULL: a binary search, so that a loader's lookup per tensor
 * is not a scan of a header that may hold a million entries. */
const struct st_tensor *st_table_find(const struct st_table *tab, const char *prefix, size_t plen,
				      const char *name, size_t nlen);

/* Frees what tab owns; a zeroed table is fine. */
void st_table_release(struct st_table *tab);

/* A file-supplied name made safe to quote in out: printable ASCII kept, the
 * rest '?', cut to ST_NAME_SHOWN characters plus "...". Returns out. */
const char *st_printable(char out[ST_NAME_SHOWN + 4], const char *s, size_t n);

#endif
