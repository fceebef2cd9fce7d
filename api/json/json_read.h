/*
 * json_read.h: strict reading of request fields, each failure a 4xx with the
 * JSON pointer of the field. Internal to api/. Nothing here keeps a json_t.
 */
#ifndef API_REQUEST_H
#define API_REQUEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "api/error.h"
#include "api/values.h"

/*
 * Parses body as one JSON object. Malformed JSON (reported with line and
 * column) and duplicate keys are 400; anything but an object at the top is
 * 422. On success *root is a new reference the caller json_decref()s.
 */
int req_parse(const char *body, size_t len, json_t **root, struct api_error *err);

/*
 * req_parse, with the rows of large number arrays under `fields` (JSON
 * pointers, NULL-terminated) read into pool first and left in the tree as
 * placeholders (fastjson.h): read those fields with api_tensor_read_pool.
 * Answers, errors and their line and column are those of req_parse. pool
 * (zeroed) is the caller's to release, on failure too. pool NULL reads the
 * body with jansson alone, neither pooled nor through json_dom.h: the twin
 * of both fast readers (api_service_set_plain_json).
 */
struct fastjson_pool;
int req_parse_pooled(const char *body, size_t len, const char *const *fields,
		     struct fastjson_pool *pool, json_t **root, struct api_error *err);

/*
 * json_object_get for a request's objects: obj's member key, or NULL (obj
 * not an object, or no such member). A request's objects are small (the
 * four-word request's top level has two members) and most keys a decoder
 * asks for are absent; jansson hashes the key for every lookup, some 150
 * instructions, where comparing it with each of a few members' keys takes a
 * third of that. So objects of up to REQ_SCAN_MEMBERS members are scanned;
 * larger ones looked up. Keys are unique in a parsed object (duplicates are
 * refused), so both find the same member.
 */
enum { REQ_SCAN_MEMBERS = 4 };
json_t *req_get(const json_t *obj, const char *key);

/*
 * An object's members read once into a table, for an object a decoder asks
 * many keys of: the request's top level, where a decoder asks for every
 * field it knows, most of them absent, and each req_get walks jansson's
 * iterator calls where the table's lookup is a few compares. Borrowed:
 * keys and values are obj's, valid while obj lives unchanged. An object of
 * more than REQ_MEMBERS_MAX members is not tabled (n is SIZE_MAX) and each
 * lookup is obj's req_get: the same member either way (keys are unique).
 */
enum { REQ_MEMBERS_MAX = 8 };
struct req_members {
	const json_t *obj; /* borrowed; NULL when none was read (no member) */
	size_t n;	   /* members in key[] and val[], or SIZE_MAX: look up obj */
	const char *key[REQ_MEMBERS_MAX];
	json_t *val[REQ_MEMBERS_MAX];
};

/* Reads obj's members (obj an object, or NULL for none) into m. */
void req_members_read(struct req_members *m, const json_t *obj);

/* req_get(m->obj, key), from the table; inline, as a decoder asks it
 * of each field it reads. */
static inline json_t *req_member(const struct req_members *m, const char *key)
{
	if (m->n == SIZE_MAX)
		return req_get(m->obj, key);
	for (size_t i = 0; i < m->n; i++)
		/* most keys asked for differ from a member's in the first byte */
		if (m->key[i][0] == key[0] && strcmp(m->key[i], key) == 0)
			return m->val[i];
	return NULL;
}

/* req_known_fields of m->obj, from the table. */
int req_members_known(const struct req_members *m, const char *ptr, const char *const *names,
		      struct api_error *err);

/* 422 unknown_field for any key of obj not in names (NULL-terminated). */
int req_known_fields(json_t *obj, const char *ptr, const char *const *names,
		     struct api_error *err);

/* A string among names (NULL-terminated) -> its index; absent -> dflt. */
int req_enum(const json_t *obj, const char *key, const char *ptr, const char *const *names,
	     int dflt, int *out, struct api_error *err);

/*
 * The readers below, each also as *_value: the reader of a member already
 * looked up (v, NULL when absent; key names it in the error's pointer), for
 * a decoder that holds its object's members in a struct req_members.
 */
int req_enum_value(const json_t *v, const char *key, const char *ptr, const char *const *names,
		   int dflt, int *out, struct api_error *err);
int req_size_value(const json_t *v, const char *key, const char *ptr, size_t lo, size_t hi,
		   size_t dflt, size_t *out, struct api_error *err);
int req_number_value(const json_t *v, const char *key, const char *ptr, double lo, double hi,
		     double dflt, double *out, struct api_error *err);
int req_softcap_value(const json_t *v, const char *ptr, float *out, struct api_error *err);
int req_bool_value(const json_t *v, const char *key, const char *ptr, int dflt, int *out,
		   struct api_error *err);

/*
 * v as an integer, as OpenAPI 3.1 (JSON Schema) types one: a JSON integer, or
 * a number written with a fraction or an exponent whose value is whole (8.0,
 * 1e3, -0.0). A whole value past json_int_t's ends is its nearest end, so a
 * range check calls it out of range. Returns 1 with *out set, or 0 (*out 0)
 * for anything else: 8.5, "8", true, null, an absent field.
 */
int req_integer(const json_t *v, json_int_t *out);

/* 1 when v is a number past json_int_t's ends (1e300, or an integer literal
 * past 64 bits, which the readers read as a double): req_integer would
 * clamp it to an end never sent, so a reader whose range reaches an end
 * refuses it first. */
int req_past_int64(const json_t *v);

/* An integer (req_integer) in [lo, hi]; absent -> dflt. */
int req_size(const json_t *obj, const char *key, const char *ptr, size_t lo, size_t hi,
	     size_t dflt, size_t *out, struct api_error *err);

/* A number in [lo, hi]; absent -> dflt. */
int req_number(const json_t *obj, const char *key, const char *ptr, double lo, double hi,
	       double dflt, double *out, struct api_error *err);

/* A number in (lo, hi]: above lo, lo itself refused; absent -> dflt. */
int req_number_above(const json_t *obj, const char *key, const char *ptr, double lo, double hi,
		     double dflt, double *out, struct api_error *err);

/* "softcap": a number in [0, 1e30] as float32, 0 (off) when absent. A cap
 * too small for float32 stays a cap (c > 0 is on) at float32's smallest
 * positive value, rather than rounding to 0 (off). */
int req_softcap(const json_t *obj, const char *ptr, float *out, struct api_error *err);

/* A boolean; absent -> dflt. */
int req_bool(const json_t *obj, const char *key, const char *ptr, int dflt, int *out,
	     struct api_error *err);

/* key is one of names (NULL-terminated). */
int req_listed(const char *const *names, const char *key);

/* ptr + "/" + key into a caller buffer of API_PTR_MAX bytes; returns dst. */
const char *req_child(char *dst, const char *ptr, const char *key);

#endif
