/*
 * attention_positions.c: the positional encoding of a job as numbers a
 * learner can look at (the answer's "positions"; see attention_job.h).
 *
 *   encoding    [L, dim]  sinusoidal: pe added to query row l (dim = E), made
 *                         by attn_sinusoidal_add on zeros; rope: u, every
 *                         entry 1 / sqrt(D), rotated by attn_rope_rows as
 *                         one head's query at position l (dim = D)
 *   similarity  [L, L]    enc[i] . enc[j]; for rope, what rotation alone
 *                         does to a score (u . u = 1), a function of
 *                         p_i - p_j only, since R(a)^T R(b) = R(b - a)
 *   distance    [L, L]    || enc[i] - enc[j] ||, the norms the tutorial
 *                         prints ("closer positions are more similar")
 *
 * L = Lq, the longest item of a batch: positions are the same for each item.
 * A checkpoint's encoding is its stack's own (engine/stack.h,
 * attn_stack_positions; api/stack_run.c): the comparisons here are shared.
 * Sums are in double, as the engine's angles are.
 */
#include "api/attention_job.h"

#include <math.h>
#include <string.h>

#include "engine/positional.h"
#include "engine/sizes.h"

double attention_positions_flops(size_t L, size_t dim)
{
	return 2.5 * (double)L * (double)L * (double)dim; /* half the pairs, 5 a channel */
}

int attention_positions_floats(size_t L, size_t dim, size_t *n)
{
	size_t enc = 0, square = 0, pair = 0;

	*n = 0;
	if (size_mul(&enc, L, dim) || size_mul(&square, L, L) || size_add(&pair, square, square) ||
	    size_add(n, enc, pair))
		return -1;
	return 0;
}

int attention_positions_size(const struct attention_job *job, size_t *dim, size_t *n)
{
	*dim = 0;
	*n = 0;
	if (!job->positions)
		return 0;
	*dim = job->pos.kind == ATTN_POS_ROPE ? job->model->D : job->model->E;
	return attention_positions_floats(job->Lq, *dim, n);
}

/* pass 1: the encoding, by the engine's own functions */
static void encode_rows(const struct attention_job *job, float *enc /* [L, dim] */, size_t L,
			size_t dim)
{
	const float u = (float)(1.0 / sqrt((double)dim)); /* rope: each entry of the unit vector */

	if (job->pos.kind == ATTN_POS_SINUSOIDAL) {
		memset(enc, 0, L * dim * sizeof(float));
		attn_sinusoidal_add(enc, L, dim, 0, &job->pos, job->q_positions);
		return;
	}
	for (size_t k = 0; k < L * dim; k++)
		enc[k] = u;
	/* one head of D channels a row, rows D apart, one item */
	attn_rope_rows(enc, 0, 1, dim, L, 0, 1, dim, dim, &job->pos, job->q_positions);
}

/* pass 2: dot products and distances of every pair of rows, each pair once
 * (both are symmetric) */
static void compare_rows(const float *enc /* [L, dim] */, size_t L, size_t dim,
			 float *sim /* [L, L] */, float *dist /* [L, L] */)
{
	for (size_t i = 0; i < L; i++)
		for (size_t j = i; j < L; j++) {
			/* seek to rows i and j of the encoding */
			const float *a = enc + i * dim, *b = enc + j * dim;
			double dot = 0.0, sq = 0.0;

			for (size_t c = 0; c < dim; c++) {
				double d = (double)a[c] - (double)b[c];

				dot += (double)a[c] * (double)b[c];
				sq += d * d;
			}
			sim[i * L + j] = sim[j * L + i] = (float)dot;
			dist[i * L + j] = dist[j * L + i] = (float)sqrt(sq);
		}
}

void attention_positions_compare(float *x, size_t L, size_t dim)
{
	float *sim = x + L * dim, *dist = sim + L * L; /* seek past the encoding, the similarity */

	compare_rows(x, L, dim, sim, dist);
}

void attention_positions(const struct attention_job *job, const struct attention_plan *plan,
			 float *x)
{
	encode_rows(job, x, job->Lq, plan->pos_dim);
	attention_positions_compare(x, job->Lq, plan->pos_dim);
}
