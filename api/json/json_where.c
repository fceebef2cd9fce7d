/* json_where.c: the JSON pointer of the value at a byte offset (see json_where.h). */
#include "json_where.h"

#include <stdio.h>
#include <string.h>

#include "api/values.h"

enum { WHERE_DEPTH = 32 };

/* One open container on the way to the value: an object's current key (a
 * stretch of the text; escaped when it holds a backslash, which the walk
 * does not decode) or an array's current index. */
struct frame {
	int object, escaped;
	size_t index;
	size_t key, key_len;
};

struct walk {
	const char *s;
	size_t len, pos;
	struct frame stack[WHERE_DEPTH];
	size_t depth;
};

static void skip_space(struct walk *w)
{
	while (w->pos < w->len && strchr(" \t\r\n", w->s[w->pos]) != NULL && w->s[w->pos] != '\0')
		w->pos++;
}

/* A string token at w->pos: past its closing quote; *escaped when it holds a
 * backslash. -1 when it does not close. */
static int skip_string(struct walk *w, int *escaped)
{
	*escaped = 0;
	for (w->pos++; w->pos < w->len; w->pos++) {
		if (w->s[w->pos] == '\\') {
			*escaped = 1;
			w->pos++;
		} else if (w->s[w->pos] == '"') {
			w->pos++;
			return 0;
		}
	}
	return -1;
}

/* A number or literal at w->pos: up to the next delimiter. */
static void skip_scalar(struct walk *w)
{
	while (w->pos < w->len && strchr(",]} \t\r\n", w->s[w->pos]) == NULL)
		w->pos++;
}

/* An object's key and its colon, w->pos at the key's quote; the frame
 * records it (a key with an escape only as escaped: it matters only if the
 * value's pointer passes through it). -1 when malformed. */
static int read_key(struct walk *w, struct frame *f)
{
	if (w->pos >= w->len || w->s[w->pos] != '"')
		return -1;
	f->key = w->pos + 1;
	if (skip_string(w, &f->escaped) != 0)
		return -1;
	f->key_len = w->pos - 1 - f->key;
	skip_space(w);
	if (w->pos >= w->len || w->s[w->pos] != ':')
		return -1;
	w->pos++;
	skip_space(w);
	return 0;
}

/* Opens a container at w->pos; 1 when it is empty (closed at once). */
static int open_container(struct walk *w)
{
	struct frame *f = &w->stack[w->depth++];

	f->object = w->s[w->pos] == '{';
	f->index = 0;
	w->pos++;
	skip_space(w);
	if (w->pos < w->len && w->s[w->pos] == (f->object ? '}' : ']')) {
		w->pos++;
		w->depth--;
		return 1;
	}
	return f->object && read_key(w, f) != 0 ? -1 : 0;
}

/* After a value: the separators and closings up to the next value's first
 * byte. 1 when the root value closed, -1 on anything but JSON. */
static int next_value(struct walk *w)
{
	for (;;) {
		struct frame *f;

		skip_space(w);
		if (w->depth == 0)
			return 1;
		f = &w->stack[w->depth - 1];
		if (w->pos >= w->len)
			return -1;
		if (w->s[w->pos] == ',') {
			w->pos++;
			skip_space(w);
			f->index++;
			return f->object && read_key(w, f) != 0 ? -1 : 0;
		}
		if (w->s[w->pos] != (f->object ? '}' : ']'))
			return -1;
		w->pos++;
		w->depth--;
	}
}

/* The pointer of the value the stack leads to; -1 when it passes through a
 * key with an escape (not decoded). A key is kept whole up to the pointer's
 * own bound (API_PTR_MAX), as api_ptr_key cuts any pointer. */
static int pointer_of(const struct walk *w, char *ptr)
{
	char base[API_PTR_MAX], key[API_PTR_MAX];

	ptr[0] = '\0';
	for (size_t d = 0; d < w->depth; d++) {
		const struct frame *f = &w->stack[d];
		size_t kept;

		snprintf(base, sizeof base, "%s", ptr);
		if (!f->object) {
			api_ptr_index(ptr, API_PTR_MAX, base, f->index);
			continue;
		}
		if (f->escaped)
			return -1;
		kept = f->key_len < sizeof key ? f->key_len : sizeof key - 1;
		memcpy(key, w->s + f->key, kept);
		key[kept] = '\0';
		api_ptr_key(ptr, API_PTR_MAX, base, key);
	}
	return 0;
}

int json_pointer_at(const char *text, size_t len, size_t end, char *ptr, size_t *start)
{
	struct walk w = {.s = text, .len = len < end ? len : end};

	skip_space(&w);
	for (;;) {
		size_t first = w.pos;
		int escaped, step;

		if (w.pos >= w.len)
			return -1;
		if (w.s[w.pos] == '{' || w.s[w.pos] == '[') {
			if (w.depth == WHERE_DEPTH)
				return -1;
			step = open_container(&w);
			if (step < 0)
				return -1;
			if (step == 0)
				continue; /* at the first value inside */
		} else if (w.s[w.pos] == '"') {
			if (skip_string(&w, &escaped) != 0)
				return -1;
		} else {
			skip_scalar(&w);
			if (w.pos == end && end < len && strchr(",]} \t\r\n", text[end]) == NULL)
				return -1; /* end cuts the token: it ends further on */
		}
		if (w.pos == end && (w.s[first] != '{' && w.s[first] != '[')) {
			if (pointer_of(&w, ptr) != 0)
				return -1;
			*start = first;
			return 0;
		}
		if (next_value(&w) != 0)
			return -1;
	}
}
