/*
 * fastjson_pool.c: the pool of fastjson (fastjson.h): how it grows, how it is
 * released or given away, and the public accessors that find the pooled row,
 * matrix or base64 string a placeholder object stands for. The scan fills it
 * (fastjson_row.c, fastjson_copy.c); the tensor readers (json_tensor.c) read
 * it through these.
 */
#include "fastjson.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/fastjson_ctx.h"

void fastjson_pool_release(struct fastjson_pool *pool)
{
	if (pool == NULL)
		return;
	free(pool->values);
	free(pool->rows);
	memset(pool, 0, sizeof(*pool));
}

/* The entry of any kind that the placeholder v stands for, or NULL. */
static const struct fastjson_row *placeholder_row(const struct fastjson_pool *pool, const json_t *v)
{
	const json_t *index;
	json_int_t k;

	if (pool == NULL || pool->n_rows == 0 || !json_is_object(v) || json_object_size(v) != 1)
		return NULL;
	index = json_object_get(v, PLACEHOLDER_KEY);
	if (!json_is_integer(index))
		return NULL;
	k = json_integer_value(index);
	if (k < 0 || (unsigned long long)k >= pool->n_rows)
		return NULL;
	return &pool->rows[k];
}

const struct fastjson_row *fastjson_row(const struct fastjson_pool *pool, const json_t *v)
{
	const struct fastjson_row *row = placeholder_row(pool, v);

	return row != NULL && row->base64_len == 0 && row->rows == 0 ? row : NULL;
}

const struct fastjson_row *fastjson_matrix(const struct fastjson_pool *pool, const json_t *v)
{
	const struct fastjson_row *row = placeholder_row(pool, v);

	return row != NULL && row->rows > 0 ? row : NULL;
}

float *fastjson_pool_take(struct fastjson_pool *pool)
{
	float *values = pool->values, *fit;

	if (values != NULL && pool->n_values > 0 && pool->n_values < pool->cap_values) {
		fit = realloc(values, pool->n_values * sizeof *values); /* shrinks in place */
		values = fit != NULL ? fit : values;
	}
	if (pool->n_values == 0) {
		free(values);
		values = NULL;
	}
	pool->values = NULL;
	pool->n_values = pool->cap_values = 0;
	pool->n_rows = 0;
	return values;
}

const struct fastjson_row *fastjson_base64(const struct fastjson_pool *pool, const json_t *v)
{
	const struct fastjson_row *row = placeholder_row(pool, v);

	return row != NULL && row->base64_len > 0 ? row : NULL;
}

int fj_grow(void **p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap <= SIZE_MAX / 2 ? (*cap ? 2 * *cap : 256) : SIZE_MAX;
	void *q;

	if (need <= *cap)
		return 0;
	n = need > n ? need : n;
	if (n > SIZE_MAX / size)
		return -1;
	q = realloc(*p, n * size);
	if (q == NULL)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}
