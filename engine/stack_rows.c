/* stack_rows.c: the stack's elementwise steps on threads (see stack_rows.h). */
#include "stack_rows.h"

#include <string.h>

#include "activation.h"
#include "norm.h"
#include "team.h"

enum rows_step { STEP_NORM, STEP_ADD, STEP_ACT };

struct rows_job {
	const struct attn_stack_run *run;
	enum rows_step step;
	float *a;	/* [n, width]: out (norm), x (add), up (act) */
	const float *b; /* [n, width]: x (norm), y (add) */
	float *gate;	/* [n, width]: act: Llama's gate, or NULL */
	const struct attn_norm *nm;
	size_t n, width;
};

/* Rows [r0, r1) of the job's step. */
static void rows_range(const struct rows_job *j, size_t r0, size_t r1)
{
	const struct attn_stack *s = j->run->stack;
	size_t w = j->width, m = (r1 - r0) * w;
	float *a = j->a + r0 * w; /* seek to row r0 of every operand */
	const float *b = j->b ? j->b + r0 * w : NULL;

	switch (j->step) {
	case STEP_NORM:
		if (j->nm->w == NULL) {
			if (a != b)
				memcpy(a, b, m * sizeof(float));
		} else if (s->norm_kind == ATTN_NORM_RMS) {
			norm_rms_rows(a, b, r1 - r0, w, j->nm->w, j->nm->b, s->norm_eps);
		} else {
			norm_layer_rows(a, b, r1 - r0, w, j->nm->w, j->nm->b, s->norm_eps);
		}
		break;
	case STEP_ADD:
		for (size_t k = 0; k < m; k++)
			a[k] += b[k];
		break;
	case STEP_ACT:
		if (j->gate)
			act_gated(j->gate + r0 * w, a, m, s->act);
		else
			act_rows(a, m, s->act);
		break;
	}
}

static void rows_member(void *arg, size_t t, size_t T, struct team *team)
{
	const struct rows_job *j = arg;
	size_t r0, r1;

	(void)team;
	team_share(j->n, t, T, &r0, &r1);
	if (r1 > r0)
		rows_range(j, r0, r1);
}

static void rows_run(struct rows_job *j)
{
	if (j->run->threads <= 1 || j->n < 2 || j->n * j->width < ROWS_MIN_FLOATS)
		rows_range(j, 0, j->n);
	else
		team_run(j->run->workers, j->run->threads, rows_member, j);
}

void rows_norm(const struct attn_stack_run *run, const struct attn_norm *nm, float *out,
	       const float *x, size_t n)
{
	struct rows_job j = { run, STEP_NORM, out, x, NULL, nm, n, run->stack->E };

	rows_run(&j);
}

void rows_add(const struct attn_stack_run *run, float *x, const float *y, size_t n,
	      size_t width)
{
	struct rows_job j = { run, STEP_ADD, x, y, NULL, NULL, n, width };

	rows_run(&j);
}

void rows_act(const struct attn_stack_run *run, float *up, float *gate, size_t n)
{
	struct rows_job j = { run, STEP_ACT, up, NULL, gate, NULL, n, run->stack->F };

	rows_run(&j);
}
