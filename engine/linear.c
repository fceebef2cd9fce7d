/* linear.c: row-split projections (see linear.h). */
#include "linear.h"

#include <cblas.h>
#include <string.h>

#include "team.h"

/* One sgemm: out [n, width] = x [n, E] W^T + bias, W [width, E]; or, in_major,
 * out = x W + bias with W [E, width] (TRANSPOSED storage). */
static void linear_block_w(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
			   const float *W, int in_major, const float *bias, size_t width,
			   size_t E)
{
	float beta = 0.0f;

	if (bias) {
		for (size_t r = 0; r < n; r++)
			memcpy(out + r * ld_out, bias, width * sizeof(float));
		beta = 1.0f;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, in_major ? CblasNoTrans : CblasTrans, (int)n,
		    (int)width, (int)E, 1.0f, x, (int)ld_x, W, (int)(in_major ? width : E), beta,
		    out, (int)ld_out);
}

static void linear_block(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
			 const float *W, const float *bias, size_t width, size_t E)
{
	linear_block_w(out, ld_out, x, ld_x, n, W, 0, bias, width, E);
}

/* linear_rows with the layout of W chosen (see linear.h). */
static void linear_rows_w(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
			  const float *W, int in_major, const float *bias, size_t width,
			  size_t E)
{
	for (size_t r = 0; r < n; r += LINEAR_BLOCK) {
		size_t m = n - r < LINEAR_BLOCK ? n - r : LINEAR_BLOCK;

		/* seek to out[r, 0] and x[r, 0] */
		linear_block_w(out + r * ld_out, ld_out, x + r * ld_x, ld_x, m, W, in_major, bias,
			       width, E);
	}
}

void linear_rows(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		 const float *W, const float *bias, size_t width, size_t E)
{
	for (size_t r = 0; r < n; r += LINEAR_BLOCK) {
		size_t m = n - r < LINEAR_BLOCK ? n - r : LINEAR_BLOCK;

		/* seek to out[r, 0] and x[r, 0] */
		linear_block(out + r * ld_out, ld_out, x + r * ld_x, ld_x, m, W, bias, width, E);
	}
}

struct linear_job {
	float *out;
	size_t ld_out;
	const float *x;
	size_t ld_x, n;
	const float *W, *bias;
	size_t width, E;
	int in_major;
};

static void linear_member(void *arg, size_t t, size_t T, struct team *team)
{
	const struct linear_job *j = arg;
	size_t r0, r1;

	(void)team;
	team_share_blocks(j->n, LINEAR_BLOCK, t, T, &r0, &r1);
	linear_rows_w(j->out + r0 * j->ld_out, j->ld_out, j->x + r0 * j->ld_x, j->ld_x, r1 - r0,
		      j->W, j->in_major, j->bias, j->width, j->E);
}

void linear_forward(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		    const float *W, const float *bias, size_t width, size_t E, size_t threads,
		    struct attn_workers *workers)
{
	struct linear_job job = { out, ld_out, x, ld_x, n, W, bias, width, E, 0 };

	team_run(workers, threads, linear_member, &job);
}

void linear_forward_w(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		      const float *W, int in_major, const float *bias, size_t width, size_t E,
		      size_t threads, struct attn_workers *workers)
{
	struct linear_job job = { out, ld_out, x, ld_x, n, W, bias, width, E, in_major };

	team_run(workers, threads, linear_member, &job);
}
