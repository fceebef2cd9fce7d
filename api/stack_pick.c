/*
 * stack_pick.c: the layers and heads a checkpoint request answers (see
 * stack_pick.h), one reading for /v1's fields and /v2's parameters.
 */
#include "api/stack_pick.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/json_read.h"
#include "api/values.h"

/* A list being read: which of n indices it names. */
struct pick {
	size_t n;
	const char *what;  /* "layer" or "head", for the messages */
	const char *words; /* the words it may be instead: "\"all\", \"last\" or " */
	uint8_t *seen;	   /* [n] */
};

/* The field's own name, the last segment of its pointer. */
static const char *field_name(const char *ptr)
{
	const char *slash = strrchr(ptr, '/');

	return slash != NULL ? slash + 1 : ptr;
}

/* Index x (whole: an integer at all) of the list, at `at`. */
static int pick_one(struct pick *p, json_int_t x, int whole, const char *at, struct api_error *err)
{
	json_int_t n = (json_int_t)p->n;

	if (!whole || x < -n || x >= n)
		return api_fail(err, whole ? API_E_OUT_OF_RANGE : API_E_INVALID_TYPE, at,
				"a %s index is an integer in [-%zu, %zu)", p->what, p->n, p->n);
	x = x < 0 ? x + n : x;
	if (p->seen[x])
		return api_fail(err, API_E_INVALID_VALUE, at, "%s %lld is listed twice", p->what,
				(long long)x);
	p->seen[x] = 1;
	return 0;
}

static int pick_array(struct pick *p, const json_t *v, const char *ptr, struct api_error *err)
{
	for (size_t i = 0; i < json_array_size(v); i++) {
		char child[API_PTR_MAX];
		json_int_t x;
		int whole = req_integer(json_array_get(v, i), &x);

		api_ptr_index(child, sizeof(child), ptr, i);
		if (pick_one(p, x, whole, child, err) != 0)
			return -1;
	}
	return 0;
}

/* "0, 2, -1": integers between commas, spaces around them allowed. */
static int pick_string(struct pick *p, const char *s, const char *ptr, struct api_error *err)
{
	for (;;) {
		char *end;
		long long x;

		errno = 0;
		x = strtoll(s, &end, 10); /* skips leading spaces */
		while (end != s && *end == ' ')
			end++;
		if (end == s || errno != 0 || (*end != ',' && *end != '\0'))
			return api_fail(err, API_E_INVALID_VALUE, ptr,
					"%s is %s%s indices separated by commas", field_name(ptr),
					p->words, p->what);
		if (pick_one(p, (json_int_t)x, 1, ptr, err) != 0)
			return -1;
		if (*end == '\0')
			return 0;
		s = end + 1;
	}
}

/* The list v (see stack_pick.h) of p's n indices into out, ascending;
 * count set. */
static int pick_list(struct pick p, const json_t *v, const char *ptr, int scalars, size_t **out,
		     size_t *count, struct api_error *err)
{
	size_t n = p.n;
	int array = json_is_array(v) && json_array_size(v) > 0;
	int rc;

	if (!array && !(scalars && (json_is_number(v) || json_is_string(v))))
		return api_fail(err, API_E_INVALID_TYPE, ptr,
				scalars ? "%s is a non-empty array of %s indices, one index, or a "
					  "string of indices separated by commas"
					: "%s is a non-empty array of %s indices",
				field_name(ptr), p.what);
	p.seen = calloc(n, 1);
	*out = malloc(n * sizeof(size_t));
	if (p.seen == NULL || *out == NULL) {
		free(p.seen);
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	}
	if (array)
		rc = pick_array(&p, v, ptr, err);
	else if (json_is_string(v))
		rc = pick_string(&p, json_string_value(v), ptr, err);
	else {
		json_int_t x;
		int whole = req_integer(v, &x);

		rc = pick_one(&p, x, whole, ptr, err);
	}
	*count = 0;
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (p.seen[i])
			(*out)[(*count)++] = i;
	free(p.seen);
	return rc;
}

int stack_pick_layers(struct stack_job *s, const json_t *v, const char *ptr, int scalars,
		      struct api_error *err)
{
	const char *word = json_is_string(v) ? json_string_value(v) : NULL;
	int is_word = word != NULL && (strcmp(word, "all") == 0 || strcmp(word, "last") == 0);

	if (v != NULL && !is_word && (json_is_array(v) || scalars))
		return pick_list(
		    (struct pick){s->st->n_layers, "layer", "\"all\", \"last\" or ", NULL}, v, ptr,
		    scalars, &s->layers, &s->n_layers, err);
	if (v != NULL && !is_word)
		return api_fail(err, API_E_INVALID_VALUE, ptr,
				"%s is \"all\", \"last\" or an array of layer indices",
				field_name(ptr));
	if (stack_all_layers(s, err) != 0)
		return -1;
	if (word != NULL && strcmp(word, "last") == 0) {
		s->layers[0] = s->st->n_layers - 1;
		s->n_layers = 1;
	}
	return 0;
}

int stack_pick_heads(struct stack_job *s, const json_t *v, const char *ptr, int scalars,
		     struct api_error *err)
{
	if (v == NULL)
		return 0;
	return pick_list((struct pick){s->st->H, "head", "", NULL}, v, ptr, scalars, &s->heads,
			 &s->n_heads, err);
}
