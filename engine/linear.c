/* linear.c: projections split over threads in fixed tiles (see linear.h). */
#include "linear.h"

#include <string.h>

#include "cancel.h"
#include "gemm.h"
#include "linear_few.h"
#include "team.h"

/* One sgemm on a tile: out [n, w] = x [n, E] Wc^T + bias, Wc the tile's w
 * rows of W [width, E], or (in_major) its w columns of W [E, width]. */
static void linear_tile(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
			const float *Wc, int in_major, size_t width, const float *bias, size_t w,
			size_t E)
{
	float beta = 0.0f;

	if (bias) {
		for (size_t r = 0; r < n; r++)
			memcpy(out + r * ld_out, bias, w * sizeof(float));
		beta = 1.0f;
	}
	gemm(!in_major, n, w, E, 1.0f, x, ld_x, Wc, in_major ? width : E, beta, out, ld_out);
}

/* One sgemm: out [n, width] = x [n, E] W^T + bias. */
static void linear_block(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
			 const float *W, const float *bias, size_t width, size_t E)
{
	linear_tile(out, ld_out, x, ld_x, n, W, 0, width, bias, width, E);
}

void linear_rows(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n, const float *W,
		 const float *bias, size_t width, size_t E, const atomic_int *cancel)
{
	for (size_t r = 0; r < n && !attn_cancelled(cancel); r += LINEAR_BLOCK) {
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
	int few; /* tiles by linear_few, not sgemm */
	const atomic_int *cancel;
	enum few_isa few_isa; /* linear_few's kernel where few */
};

static void linear_member(void *arg, size_t t, size_t T, struct team *team)
{
	const struct linear_job *j = arg;
	size_t r0, r1;

	(void)team;
	team_share_blocks(j->n, LINEAR_BLOCK, t, T, &r0, &r1);
	linear_rows(j->out + r0 * j->ld_out, j->ld_out, j->x + r0 * j->ld_x, j->ld_x, r1 - r0, j->W,
		    j->bias, j->width, j->E, j->cancel);
}

void linear_forward(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		    const float *W, const float *bias, size_t width, size_t E, size_t threads,
		    struct attn_workers *workers, const atomic_int *cancel)
{
	struct linear_job job = {out, ld_out, x, ld_x, n, W, bias, width, E, .cancel = cancel};

	team_run(workers, threads, linear_member, &job);
}

/* linear_forward_w's tile grid: rows [rows] x columns [cols] per sgemm. */
struct tile_grid {
	size_t rows, cols;
	size_t n_rb, n_cb; /* row blocks, column blocks */
};

/* Half of width, rounded up to a multiple of LINEAR_COL_ALIGN. */
static size_t half_cols(size_t width)
{
	size_t h = (width + 1) / 2;

	return (h + LINEAR_COL_ALIGN - 1) / LINEAR_COL_ALIGN * LINEAR_COL_ALIGN;
}

/* The grid is a function of the shape alone, never of the thread count:
 * linear_few's (job.few) every row by LINEAR_FEW_COLS columns; sgemm's up to
 * LINEAR_FEW_ROWS rows, LINEAR_COLS columns a tile; past it tiles of
 * LINEAR_TALL rows and half the columns (one tile a thread at L <= 512 on
 * two threads, and each call packs only its half of W: W is packed once
 * per LINEAR_TALL rows, whatever the thread count). */
static struct tile_grid task_grid(const struct linear_job *j)
{
	struct tile_grid g;

	if (j->few) {
		g.rows = LINEAR_FEW_MAX;
		g.cols = j->width <= LINEAR_FEW_COLS ? j->width : LINEAR_FEW_COLS;
	} else if (j->n <= LINEAR_FEW_ROWS) {
		g.rows = LINEAR_BLOCK;
		g.cols = j->width <= LINEAR_COLS ? j->width : LINEAR_COLS;
	} else {
		g.rows = LINEAR_TALL;
		g.cols = j->width < 2 * LINEAR_COL_ALIGN ? j->width : half_cols(j->width);
	}
	g.n_rb = (j->n + g.rows - 1) / g.rows;
	g.n_cb = (j->width + g.cols - 1) / g.cols;
	return g;
}

/* Task k of the (row block, column block) grid: one sgemm on out's tile. */
static void linear_task(const struct linear_job *j, const struct tile_grid *g, size_t k)
{
	size_t r = (k / g->n_cb) * g->rows, c = (k % g->n_cb) * g->cols;
	size_t m = j->n - r < g->rows ? j->n - r : g->rows;
	size_t w = j->width - c < g->cols ? j->width - c : g->cols;
	/* W's columns c .. c + w: rows of W [width, E], or columns of W [E, width] */
	const float *Wc = j->in_major ? j->W + c : j->W + c * j->E;

	/* seek to out[r, c] and x[r, 0] */
	linear_tile(j->out + r * j->ld_out + c, j->ld_out, j->x + r * j->ld_x, j->ld_x, m, Wc,
		    j->in_major, j->width, j->bias ? j->bias + c : NULL, w, j->E);
}

/* Tasks [k0, k1) of linear_few's grid (one row block: column tiles) as one
 * call on their columns, so that x is packed once a block for all of them;
 * each element's sum is the same however the columns are split. */
static void few_tasks(const struct linear_job *j, const struct tile_grid *g, size_t k0, size_t k1)
{
	size_t c = k0 * g->cols, end = k1 * g->cols < j->width ? k1 * g->cols : j->width;

	if (c >= end || attn_cancelled(j->cancel))
		return;
	/* seek to out[0, c] and W[0, c] (W [E, width]) */
	linear_few(j->out + c, j->ld_out, j->x, j->ld_x, j->n, j->W + c, j->width,
		   j->bias ? j->bias + c : NULL, end - c, j->E, j->few_isa);
}

static void tiles_member(void *arg, size_t t, size_t T, struct team *team)
{
	const struct linear_job *j = arg;
	struct tile_grid g = task_grid(j);
	size_t k0, k1;

	(void)team;
	team_share(g.n_rb * g.n_cb, t, T, &k0, &k1);
	if (j->few) {
		few_tasks(j, &g, k0, k1);
		return;
	}
	for (size_t k = k0; k < k1 && !attn_cancelled(j->cancel); k++)
		linear_task(j, &g, k);
}

size_t linear_few_max(enum few_isa isa)
{
	return isa == FEW_AVX512 ? LINEAR_FEW_MAX : isa == FEW_AVX2 ? LINEAR_FEW_MAX_AVX2 : 0;
}

void linear_forward_w(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
		      const float *W, int in_major, const float *bias, size_t width, size_t E,
		      size_t threads, struct attn_workers *workers, const atomic_int *cancel)
{
	linear_forward_w_isa(out, ld_out, x, ld_x, n, W, in_major, bias, width, E, threads, workers,
			     cancel, linear_few_best());
}

void linear_forward_w_isa(float *out, size_t ld_out, const float *x, size_t ld_x, size_t n,
			  const float *W, int in_major, const float *bias, size_t width, size_t E,
			  size_t threads, struct attn_workers *workers, const atomic_int *cancel,
			  enum few_isa isa)
{
	struct linear_job job = {out, ld_out, x, ld_x, n, W, bias, width, E, .cancel = cancel};

	job.in_major = in_major;
	job.few_isa = isa;

	/* a choice by the shape and the machine alone, as the grid */
	job.few = in_major && n <= linear_few_max(isa);
	if (n == 0)
		return;
	team_run(workers, threads, tiles_member, &job);
}
