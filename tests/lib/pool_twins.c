/*
 * pool_twins.c: see pool_twins.h.
 */
#include "pool_twins.h"

#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/fastjson.h"
#include "api/json/json_read.h"
#include "api/json/json_tensor.h"
#include "api/registry.h"

void pool_twins_start(struct pool_twins *t)
{
	struct api_limits limits = {.max_request_bytes = (size_t)256 << 20,
				    .max_response_bytes = (size_t)64 << 20,
				    .max_inline_d_model = 1024,
				    .engine_threads = 1};
	struct api_error err;

	t->fast = api_service_new(&limits);
	t->plain = api_service_new(&limits);
	ck_assert_ptr_nonnull(t->fast);
	ck_assert_ptr_nonnull(t->plain);
	ck_assert_int_eq(api_service_add_builtins(t->fast, &err), 0);
	ck_assert_int_eq(api_service_add_builtins(t->plain, &err), 0);
	api_service_set_plain_json(t->plain, 1);
}

void pool_twins_stop(struct pool_twins *t)
{
	api_service_free(t->fast);
	api_service_free(t->plain);
	t->fast = t->plain = NULL;
}

char *pool_reply_text(const struct api_reply *r)
{
	char *text = strdup(r->body.data);
	char *usage;

	ck_assert_ptr_nonnull(text);
	usage = strstr(text, ",\"usage\":");
	if (usage != NULL && r->status == 200)
		*usage = '\0';
	return text;
}

int pool_same_answer(const struct pool_twins *t, enum api_route route, const char *body,
		     size_t len)
{
	struct api_reply fast, plain;
	char *a, *b;
	int status;

	api_reply_init(&fast, (size_t)64 << 20);
	api_reply_init(&plain, (size_t)64 << 20);
	api_handle(t->fast, route, NULL, body, len, &fast);
	api_handle(t->plain, route, NULL, body, len, &plain);
	a = pool_reply_text(&fast);
	b = pool_reply_text(&plain);
	ck_assert_int_eq(fast.status, plain.status);
	ck_assert_msg(strcmp(a, b) == 0,
		      "answers differ for %.200s...\n fast:  %.300s\n plain: %.300s", body, a, b);
	status = fast.status;
	free(a);
	free(b);
	api_reply_release(&fast);
	api_reply_release(&plain);
	return status;
}

size_t pool_matrices(const struct fastjson_pool *pool)
{
	size_t n = 0;

	for (size_t k = 0; k < pool->n_rows; k++)
		n += pool->rows[k].rows > 0;
	return n;
}

size_t pool_rows(const struct fastjson_pool *pool)
{
	return pool->n_rows - pool_matrices(pool);
}

size_t pool_same_tensor(const char *body, const char *field, unsigned flags)
{
	return pool_same_read(body, field, 1, 4, (size_t)1 << 30, flags);
}

size_t pool_same_read(const char *body, const char *field, size_t min_rank, size_t max_rank,
		      size_t max_elems, unsigned flags)
{
	const char *const fields[] = {field, NULL};
	struct fastjson_pool pool = {0};
	struct api_tensor t1, t2;
	struct api_error e1, e2;
	json_t *r1, *r2;
	int rc1, rc2;
	size_t rows;

	memset(&e1, 0, sizeof e1);
	memset(&e2, 0, sizeof e2);
	rc1 = req_parse(body, strlen(body), &r1, &e1);
	rc2 = req_parse_pooled(body, strlen(body), fields, &pool, &r2, &e2);
	ck_assert_int_eq(rc1, rc2);
	if (rc1 != 0) {
		ck_assert_str_eq(e1.message, e2.message);
		fastjson_pool_release(&pool);
		return 0;
	}
	rows = pool_rows(&pool);
	rc1 = api_tensor_read(json_object_get(r1, field + 1), field, min_rank, max_rank, max_elems,
			      flags, &t1, &e1);
	rc2 = api_tensor_read_pool(&pool, json_object_get(r2, field + 1), field, min_rank, max_rank,
				   max_elems, flags, &t2, &e2);
	ck_assert_int_eq(rc1, rc2);
	if (rc1 != 0) {
		ck_assert_int_eq(e1.status, e2.status);
		ck_assert_str_eq(e1.code, e2.code);
		ck_assert_str_eq(e1.pointer, e2.pointer);
		ck_assert_str_eq(e1.message, e2.message);
	} else {
		ck_assert_uint_eq(t1.rank, t2.rank);
		ck_assert_mem_eq(t1.shape, t2.shape, sizeof t1.shape);
		ck_assert_uint_eq(t1.n, t2.n);
		ck_assert_msg(memcmp(t1.data, t2.data, t1.n * sizeof(float)) == 0,
			      "pooled floats differ from jansson's");
	}
	api_tensor_release(&t1);
	api_tensor_release(&t2);
	json_decref(r1);
	json_decref(r2);
	fastjson_pool_release(&pool);
	return rows;
}

void pool_same_mutated(const struct pool_twins *t, enum api_route route, const char *body,
		       size_t len, const char *alphabet, int rounds, uint64_t (*rng)(void))
{
	size_t letters = strlen(alphabet);
	char *mutant = malloc(len + 8);

	ck_assert_ptr_nonnull(mutant);
	ck_assert_uint_gt(len, 0);
	for (int round = 0; round < rounds; round++) {
		size_t n = len;

		memcpy(mutant, body, len);
		for (int m = 0; m < 1 + (int)(rng() % 3); m++) {
			size_t at = rng() % n;
			char c = alphabet[rng() % letters];

			switch (rng() % 3) {
			case 0: /* replace */
				mutant[at] = c;
				break;
			case 1: /* delete */
				memmove(mutant + at, mutant + at + 1, n - at - 1);
				n--;
				break;
			default: /* insert */
				memmove(mutant + at + 1, mutant + at, n - at);
				mutant[at] = c;
				n++;
				break;
			}
		}
		mutant[n] = '\0';
		pool_same_answer(t, route, mutant, n);
	}
	free(mutant);
}
