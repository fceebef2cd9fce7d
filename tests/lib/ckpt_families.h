/*
 * ckpt_families.h: the small gpt2, bert and llama checkpoints the loader
 * suites build (check_checkpoint_load, check_checkpoint_memory): each
 * family's tensor list (ckb_list, tests/lib/ckpt_build.h) under a prefix in a
 * dtype, the config that goes with it, and the checks that every weight of
 * a loaded stack landed where engine/stack.h says.
 *
 * Every name here starts with ckf_ (but the sizes below): the Makefile links
 * this file into every test binary. Failures are Check assertions.
 */
#ifndef ATTN_TESTS_CKPT_FAMILIES_H
#define ATTN_TESTS_CKPT_FAMILIES_H

#include "engine/checkpoint.h"
#include "tests/lib/ckpt_build.h"

/* The sizes: gpt2 (G_), bert (B_) and llama (L_): d_model, heads, FFN width,
 * vocabulary, positions, token types, layers; llama's key heads and head dim. */
enum { G_E = 8, G_H = 2, G_F = 16, G_V = 11, G_P = 6, G_N = 2 };
enum { B_E = 8, B_H = 2, B_F = 12, B_V = 10, B_P = 7, B_T = 2, B_N = 2 };
enum { L_E = 8, L_H = 4, L_HKV = 2, L_D = 4, L_F = 12, L_V = 9, L_N = 2 };

/* GPT-2's tensors, with its causal-mask buffers (which the loader ignores). */
void ckf_gpt2_list(struct ckb_list *l, const char *prefix, const char *dtype);
struct attn_checkpoint_config ckf_gpt2_cfg(void);
/* Every weight of a loaded gpt2 stack against the list's values (p: its prefix). */
void ckf_check_gpt2(const struct ckb_built *b, const char *p);

/* BERT's tensors; old: LayerNorm's gamma and beta names. */
void ckf_bert_list(struct ckb_list *l, const char *prefix, const char *dtype, int old);
struct attn_checkpoint_config ckf_bert_cfg(void);

/* Llama's tensors; bias: q/k/v (1), and o and the MLP too (2). */
void ckf_llama_list(struct ckb_list *l, const char *prefix, const char *dtype, int bias);
struct attn_checkpoint_config ckf_llama_cfg(int bias);
void ckf_check_llama(const struct ckb_built *b, const char *p, int bias);

#endif
