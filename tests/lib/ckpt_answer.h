/*
 * ckpt_answer.h: a /v2 answer on an oracle checkpoint (checkpoint_cases.h)
 * against the oracle's expected.json, for the suites that ask the daemon
 * through the Open Inference Protocol (check_checkpoint_v2,
 * check_checkpoint_triton): tensors read flat, compared within 1e-5 abs +
 * 1e-4 rel, and what an item of a run should answer, as JSON data or as
 * float32 bytes after the JSON header (Triton's binary tensor extension).
 *
 * Ownership: a struct ckpt_flat owns its numbers (ckpt_flat_release); the
 * json_t pointers these functions take are borrowed; ckpt_parse returns a
 * new reference. Failures are Check assertions.
 */
#ifndef ATTN_TESTS_CKPT_ANSWER_H
#define ATTN_TESTS_CKPT_ANSWER_H

#include <jansson.h>
#include <stddef.h>

#include "tests/lib/live_daemon.h"

#define CKPT_ABS_TOL 1e-5
#define CKPT_REL_TOL 1e-4

/* A growable array of doubles: a tensor's numbers, outermost first. */
struct ckpt_flat {
	double *x;
	size_t n, cap;
};

void ckpt_flat_push(struct ckpt_flat *f, double v);

/* Appends the numbers of nested arrays v, in order. */
void ckpt_flatten(struct ckpt_flat *f, const json_t *v);

/* Appends the n little-endian float32s at p. */
void ckpt_floats_of(struct ckpt_flat *f, const unsigned char *p, size_t n);

void ckpt_flat_release(struct ckpt_flat *f);

/* Same count, and every number within CKPT_ABS_TOL + CKPT_REL_TOL |want|. */
void ckpt_compare(const struct ckpt_flat *got, const struct ckpt_flat *want, const char *where);

/* text[0 .. len) as JSON (asserted). */
json_t *ckpt_parse(const char *text, size_t len);

/* A run's geometry: N layers, H heads, E channels, from its numbers. */
struct ckpt_geom {
	size_t N, H, E;
};

struct ckpt_geom ckpt_geom_of(const json_t *run);

/* Whether run's token types (type_ids) are all 0. */
int ckpt_types_all_zero(const json_t *run);

/* Item b's attentions [N, reps, H, L, L] (mean: [N, reps, L, L]). */
void ckpt_want_attentions(struct ckpt_flat *f, const json_t *run, size_t b, int reps, int mean);

/* Item b's last hidden state, reps times: [reps, L, E]. */
void ckpt_want_output(struct ckpt_flat *f, const json_t *run, size_t b, int reps);

/* The output called name of a 200 /v2 answer v. */
const json_t *ckpt_output_of(const json_t *v, const char *name);

/* o's shape is want[rank] and its datatype FP32. */
void ckpt_assert_shape(const json_t *o, const size_t *want, size_t rank, const char *where);

/* A JSON answer ans to item b of run sent reps times (per head, or the mean
 * of the heads): attentions and output against the oracle; what names the
 * request in messages. */
void ckpt_check_answer(const json_t *run, size_t b, int reps, const json_t *ans, int mean,
		       const char *what);

/* r, a 200 answer with binary outputs, against item b of run (reps times):
 * the JSON header's Inference-Header-Content-Length bytes, then each output's
 * float32 bytes in the order of "outputs"; want_outs is their count. */
void ckpt_check_binary(const struct live_resp *r, const json_t *run, size_t b, int reps,
		       size_t want_outs);

#endif
