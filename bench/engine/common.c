/* common.c: bench_engine's shared helpers and thread variants (bench.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "engine/prng.h"

const struct variant variants[N_VARIANTS] = {
    {"eng1", 1, 1},  /* threads 1 */
    {"eng2", 2, 1},  /* threads 2, split by the engine */
    {"blas2", 1, 2}, /* threads 2, split inside OpenBLAS */
};

double mib(size_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

float *alloc_touched(size_t bytes)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
		return NULL;
	memset(p, 0, bytes);
	return p;
}

void fill_normal(float *x, size_t n, uint64_t shape)
{
	struct attn_prng g;

	attn_prng_seed(&g, SEED ^ shape);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)attn_prng_normal(&g);
}

void die(const char *what, const struct attn_error *err)
{
	fprintf(stderr, "bench_engine: %s: %s\n", what, err ? err->message : strerror(errno));
	exit(1);
}

struct attn_mha make_request(const struct bench *bn, const struct bufs *b, int with,
			     size_t engine_threads)
{
	struct attn_mha req;

	memset(&req, 0, sizeof(req));
	req.model = bn->model;
	req.B = b->B;
	req.Lq = req.Lk = b->L;
	req.query = b->x; /* key = value = NULL: self-attention */
	req.out = b->out;
	req.weights_mode = with ? ATTN_WEIGHTS_PER_HEAD : ATTN_WEIGHTS_NONE;
	req.weights = with ? b->weights : NULL;
	req.threads = engine_threads;
	req.workers = engine_threads > 1 ? bn->workers : NULL;
	return req;
}
