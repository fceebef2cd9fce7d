/*
 * activation.h: the MLP nonlinearities of stack.h's families.
 *
 *   gelu_tanh  0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  GPT-2's gelu_new
 *   gelu_erf   0.5 x (1 + erf(x / sqrt(2)))                     BERT's gelu
 *   silu       x / (1 + exp(-x))                                Llama's act
 *   relu       max(x, 0)
 * Each scalar is evaluated in double and rounded once to float: the naive
 * twin's forms (stack_ref.c). act_rows and act_gated, the stack's, take
 * gelu_tanh and silu through a vector exp in float (activation.c says how;
 * within a few ulp of the scalar forms).
 * Pure functions on caller buffers; nothing is allocated or kept.
 */
#ifndef ATTN_ACTIVATION_H
#define ATTN_ACTIVATION_H

#include <stddef.h>

#include "stack.h"

float act_gelu_tanh(float x);
float act_gelu_erf(float x);
float act_silu(float x);
float act_relu(float x);

/* act(x) of one kind. */
float act_one(enum attn_activation act, float x);

/* x [n] = act(x [n]), in place. */
void act_rows(float *x, size_t n, enum attn_activation act);

/* gate [n] = act(gate [n]) * up [n], in place: Llama's act(gate_proj) * up_proj. */
void act_gated(float *gate, const float *up, size_t n, enum attn_activation act);

#endif
