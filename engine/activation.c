/* activation.c: the MLP nonlinearities (see activation.h). */
#include "activation.h"

#include <math.h>

float act_gelu_tanh(float x)
{
	double v = x;
	double k = 0.7978845608028654; /* sqrt(2 / pi) */

	return (float)(0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v))));
}

float act_gelu_erf(float x)
{
	double v = x;

	return (float)(0.5 * v * (1.0 + erf(v * 0.7071067811865476)));
}

float act_silu(float x)
{
	double v = x;

	return (float)(v / (1.0 + exp(-v)));
}

float act_relu(float x)
{
	return x > 0.0f ? x : 0.0f;
}

float act_one(enum attn_activation act, float x)
{
	switch (act) {
	case ATTN_ACT_GELU_TANH:
		return act_gelu_tanh(x);
	case ATTN_ACT_GELU_ERF:
		return act_gelu_erf(x);
	case ATTN_ACT_SILU:
		return act_silu(x);
	case ATTN_ACT_RELU:
		break;
	}
	return act_relu(x);
}

void act_rows(float *x, size_t n, enum attn_activation act)
{
	for (size_t k = 0; k < n; k++)
		x[k] = act_one(act, x[k]);
}

void act_gated(float *gate, const float *up, size_t n, enum attn_activation act)
{
	for (size_t k = 0; k < n; k++)
		gate[k] = act_one(act, gate[k]) * up[k];
}
