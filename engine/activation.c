/* activation.c: the MLP nonlinearities (see activation.h). */
#include "activation.h"

#include <math.h>

#include "softmax.h"

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

/*
 * The fast forms, for the stack's MLP: a chunk at a time, one vector exp
 * (softmax_vexp, the softmax's) over the chunk, the rest plain float loops
 * the compiler vectorizes:
 *   gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x t / (t + 1),  t = exp(2u),
 *                  u = sqrt(2/pi) (x + 0.044715 x^3)
 *   silu(x)      = x / (1 + t),                          t = exp(-x)
 * with the exp's argument clamped to [-87, 87] (t stays finite and nonzero;
 * past the clamp the true value is x, or 0, to float precision). About 2
 * ulp of the double forms above, which stack_ref.c keeps as the twin. erf
 * and relu have no exp: they run the scalar forms.
 */
enum { ACT_CHUNK = 256 };

static float clamp87(float v)
{
	return v > 87.0f ? 87.0f : v < -87.0f ? -87.0f : v;
}

/* t [n] = exp(arg(x)) for the kind (2u for gelu_tanh, -x for silu). */
static void act_exp(float *t, const float *x, size_t n, enum attn_activation act)
{
	const float k = 0.7978845608028654f; /* sqrt(2 / pi) */

	if (act == ATTN_ACT_GELU_TANH)
		for (size_t i = 0; i < n; i++)
			t[i] = clamp87(2.0f * k * (x[i] + 0.044715f * x[i] * x[i] * x[i]));
	else
		for (size_t i = 0; i < n; i++)
			t[i] = clamp87(-x[i]);
	softmax_vexp(t, t, n);
}

/* y [n] = act(x [n]) from t = act_exp(x); y may be x. */
static void act_from_exp(float *y, const float *x, const float *t, size_t n,
			 enum attn_activation act)
{
	if (act == ATTN_ACT_GELU_TANH)
		for (size_t i = 0; i < n; i++)
			y[i] = x[i] * (t[i] / (t[i] + 1.0f)); /* t / (t + 1) <= 1: no overflow */
	else
		for (size_t i = 0; i < n; i++)
			y[i] = x[i] / (1.0f + t[i]);
}

static int has_fast_form(enum attn_activation act)
{
	return act == ATTN_ACT_GELU_TANH || act == ATTN_ACT_SILU;
}

void act_rows(float *x, size_t n, enum attn_activation act)
{
	float t[ACT_CHUNK];

	if (!has_fast_form(act)) {
		for (size_t k = 0; k < n; k++)
			x[k] = act_one(act, x[k]);
		return;
	}
	for (size_t k = 0; k < n; k += ACT_CHUNK) {
		size_t m = n - k < ACT_CHUNK ? n - k : ACT_CHUNK;

		act_exp(t, x + k, m, act);
		act_from_exp(x + k, x + k, t, m, act);
	}
}

void act_gated(float *gate, const float *up, size_t n, enum attn_activation act)
{
	act_rows(gate, n, act);
	for (size_t k = 0; k < n; k++)
		gate[k] *= up[k];
}
