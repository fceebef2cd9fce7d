/*
 * grow.c: the one way the tokenizer's arrays grow (stages.h, tok_grow).
 */
#include "stages.h"

#include <stdint.h>
#include <stdlib.h>

enum tok_status tok_grow(void **v, size_t *cap, size_t need, size_t size, size_t min)
{
	size_t n = *cap < min ? min : *cap;
	void *p;

	if (need <= *cap && *v != NULL)
		return TOK_OK;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return TOK_ENOMEM;
		n *= 2;
	}
	if (n > SIZE_MAX / size)
		return TOK_ENOMEM;
	p = realloc(*v, n * size);
	if (p == NULL)
		return TOK_ENOMEM;
	*v = p;
	*cap = n;
	return TOK_OK;
}
