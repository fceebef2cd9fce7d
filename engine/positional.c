/* positional.c: sinusoidal encoding and rotary embeddings (see positional.h). */
#include "positional.h"

#include <math.h>

static double theta_of(const struct attn_positional *pos)
{
	return pos->theta > 0 ? pos->theta : 10000.0;
}

double attn_position(const struct attn_positional *pos, const double *list, size_t i)
{
	double p = list ? list[i] : (double)(pos->offset + i);

	return pos->scaling > 0 ? p / pos->scaling : p;
}

void attn_sinusoidal_add(float *x, size_t L, size_t E, size_t first,
			 const struct attn_positional *pos, const double *list)
{
	double theta = theta_of(pos);

	for (size_t l = 0; l < L; l++) {
		double p = attn_position(pos, list, first + l);
		float *x_l = x + l * E; /* seek to row l of [L, E] */

		for (size_t c = 0; c < E; c += 2) {
			double angle = p * pow(theta, -(double)c / (double)E);

			x_l[c] += (float)sin(angle);
			if (c + 1 < E)
				x_l[c + 1] += (float)cos(angle);
		}
	}
}

enum attn_status attn_rope_dim(const struct attn_positional *pos, size_t D, size_t *R,
			       struct attn_error *err)
{
	size_t r = pos->rotary_dim ? pos->rotary_dim : D;

	if (pos->rotary_dim == 0 && D % 2 != 0) /* the caller asked for no rotary_dim */
		return attn_fail(err, ATTN_ERR_ROPE_DIM, "positional", 0,
				 "RoPE rotates pairs of channels, and the head dim %zu is odd: "
				 "give an even rotary_dim below it, or an even head dim",
				 D);
	if (r > D || r % 2 != 0)
		return attn_fail(err, ATTN_ERR_ROPE_DIM, "rotary_dim", 0,
				 "RoPE needs an even rotary dimension <= head dim %zu, got %zu",
				 D, r);
	*R = r;
	return ATTN_OK;
}

/*
 * Rotates channel pair i of every head row at sequence index l by the angle
 * p * theta^(-2i / R). The angle depends on (l, i) only, so it is computed
 * once and applied to all heads (and batch items) of that index.
 */
void attn_rope_rows(float *x, size_t batch_stride, size_t B, size_t row_stride, size_t L,
		    size_t first, size_t heads, size_t head_stride, size_t D,
		    const struct attn_positional *pos, const double *list)
{
	size_t R = pos->rotary_dim ? pos->rotary_dim : D;
	size_t half = R / 2;
	double theta = theta_of(pos);

	for (size_t l = 0; l < L; l++) {
		double p = attn_position(pos, list, first + l);

		for (size_t i = 0; i < half; i++) {
			double angle = p * pow(theta, -2.0 * (double)i / (double)R);
			double c = cos(angle), s = sin(angle);
			size_t a = pos->style == ATTN_ROPE_HALF ? i : 2 * i;
			size_t a2 = pos->style == ATTN_ROPE_HALF ? i + half : 2 * i + 1;

			for (size_t b = 0; b < B; b++)
				for (size_t h = 0; h < heads; h++) {
					/* seek to x[b, l, h, :] */
					float *x_blh = x + b * batch_stride + l * row_stride +
						       h * head_stride;
					double xa = x_blh[a], xb = x_blh[a2];

					x_blh[a] = (float)(xa * c - xb * s);
					x_blh[a2] = (float)(xa * s + xb * c);
				}
		}
	}
}

void attn_rope_apply(struct attn_view x, size_t B, size_t heads, size_t L, size_t D,
		     const struct attn_positional *pos, const double *list)
{
	attn_rope_rows(x.data, x.batch_stride, B, x.row_stride, L, 0, heads, x.head_stride, D, pos,
		       list);
}

void attn_rope_table_rows(float *x, size_t batch_stride, size_t B, size_t row_stride,
			  size_t L, size_t heads, size_t head_stride, size_t D,
			  const float *inv_freq, float attention_scaling)
{
	size_t half = D / 2;
	float a = attention_scaling != 0.0f ? attention_scaling : 1.0f;

	for (size_t l = 0; l < L; l++)
		for (size_t i = 0; i < half; i++) {
			float angle = inv_freq[i] * (float)l;
			float c = cosf(angle) * a, s = sinf(angle) * a;

			for (size_t b = 0; b < B; b++)
				for (size_t h = 0; h < heads; h++) {
					/* seek to x[b, l, h, :] */
					float *x_blh = x + b * batch_stride + l * row_stride +
						       h * head_stride;
					float x1 = x_blh[i], x2 = x_blh[i + half];
					float x1c = x1 * c, x2s = x2 * s, x2c = x2 * c, x1s = x1 * s;

					x_blh[i] = x1c - x2s;
					x_blh[i + half] = x2c + x1s;
				}
		}
}
