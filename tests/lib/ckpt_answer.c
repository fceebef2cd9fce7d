/* ckpt_answer.c: /v2 answers on oracle checkpoints (see ckpt_answer.h). */
#include "tests/lib/ckpt_answer.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers, flat ------------------------------------------------------ */

void ckpt_flat_push(struct ckpt_flat *f, double v)
{
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 1024;
		f->x = realloc(f->x, f->cap * sizeof(double));
		ck_assert_ptr_nonnull(f->x);
	}
	f->x[f->n++] = v;
}

void ckpt_flatten(struct ckpt_flat *f, const json_t *v)
{
	if (json_is_number(v)) {
		ckpt_flat_push(f, json_number_value(v));
		return;
	}
	ck_assert_msg(json_is_array(v), "expected.json: not an array of numbers");
	for (size_t i = 0; i < json_array_size(v); i++)
		ckpt_flatten(f, json_array_get(v, i));
}

void ckpt_floats_of(struct ckpt_flat *f, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
			     (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
		float x;

		memcpy(&x, &u, sizeof x);
		ckpt_flat_push(f, x);
	}
}

void ckpt_flat_release(struct ckpt_flat *f)
{
	free(f->x);
	memset(f, 0, sizeof(*f));
}

void ckpt_compare(const struct ckpt_flat *got, const struct ckpt_flat *want, const char *where)
{
	ck_assert_msg(got->n == want->n, "%s: %zu numbers, want %zu", where, got->n, want->n);
	for (size_t i = 0; i < want->n; i++) {
		double g = got->x[i], w = want->x[i];

		ck_assert_msg(fabs(g - w) <= CKPT_ABS_TOL + CKPT_REL_TOL * fabs(w),
			      "%s [%zu]: got %.9g, want %.9g", where, i, g, w);
	}
}

json_t *ckpt_parse(const char *text, size_t len)
{
	json_error_t jerr;
	json_t *v = json_loadb(text, len, 0, &jerr);

	ck_assert_msg(v != NULL, "answer is not JSON: %s", jerr.text);
	return v;
}

/* ---- what the oracle says ------------------------------------------------ */

struct ckpt_geom ckpt_geom_of(const json_t *run)
{
	const json_t *att = json_object_get(run, "attentions");
	const json_t *hidden = json_object_get(run, "hidden");
	struct ckpt_geom g;

	g.N = json_array_size(att);
	g.H = json_array_size(json_array_get(json_array_get(att, 0), 0));
	g.E = json_array_size(json_array_get(json_array_get(json_array_get(hidden, 0), 0), 0));
	return g;
}

int ckpt_types_all_zero(const json_t *run)
{
	struct ckpt_flat f = { 0 };
	int zero = 1;

	ckpt_flatten(&f, json_object_get(run, "type_ids"));
	for (size_t i = 0; i < f.n; i++)
		zero = zero && f.x[i] == 0;
	ckpt_flat_release(&f);
	return zero;
}

/* The mean over heads [H, L, L] (borrowed) of one item, into f: [L, L]. */
static void push_mean(struct ckpt_flat *f, const json_t *heads)
{
	size_t H = json_array_size(heads);
	size_t L = json_array_size(json_array_get(heads, 0));

	for (size_t i = 0; i < L; i++)
		for (size_t j = 0; j < L; j++) {
			double s = 0;

			for (size_t h = 0; h < H; h++)
				s += json_number_value(
				    json_array_get(json_array_get(json_array_get(heads, h), i), j));
			ckpt_flat_push(f, s / (double)H);
		}
}

void ckpt_want_attentions(struct ckpt_flat *f, const json_t *run, size_t b, int reps, int mean)
{
	const json_t *att = json_object_get(run, "attentions");

	for (size_t l = 0; l < json_array_size(att); l++) {
		const json_t *heads = json_array_get(json_array_get(att, l), b);

		for (int k = 0; k < reps; k++) {
			if (mean)
				push_mean(f, heads);
			else
				ckpt_flatten(f, heads);
		}
	}
}

void ckpt_want_output(struct ckpt_flat *f, const json_t *run, size_t b, int reps)
{
	const json_t *hidden = json_object_get(run, "hidden");
	const json_t *last = json_array_get(hidden, json_array_size(hidden) - 1);

	for (int k = 0; k < reps; k++)
		ckpt_flatten(f, json_array_get(last, b));
}

/* ---- answers ------------------------------------------------------------- */

const json_t *ckpt_output_of(const json_t *v, const char *name)
{
	const json_t *outs = json_object_get(v, "outputs");

	for (size_t i = 0; i < json_array_size(outs); i++) {
		const json_t *o = json_array_get(outs, i);

		if (strcmp(json_string_value(json_object_get(o, "name")), name) == 0)
			return o;
	}
	ck_abort_msg("no output '%s'", name);
	return NULL;
}

void ckpt_assert_shape(const json_t *o, const size_t *want, size_t rank, const char *where)
{
	const json_t *shape = json_object_get(o, "shape");

	ck_assert_msg(json_array_size(shape) == rank, "%s: rank %zu, want %zu", where,
		      json_array_size(shape), rank);
	for (size_t i = 0; i < rank; i++)
		ck_assert_msg((size_t)json_integer_value(json_array_get(shape, i)) == want[i],
			      "%s: dim %zu is %lld, want %zu", where, i,
			      (long long)json_integer_value(json_array_get(shape, i)), want[i]);
	ck_assert_str_eq(json_string_value(json_object_get(o, "datatype")), "FP32");
}

/* The JSON data of output o against want, shapes checked first. */
static void check_output(const json_t *o, const size_t *shape, size_t rank, struct ckpt_flat *want,
			 const char *where)
{
	struct ckpt_flat got = { 0 };

	ckpt_assert_shape(o, shape, rank, where);
	ckpt_flatten(&got, json_object_get(o, "data"));
	ckpt_compare(&got, want, where);
	ckpt_flat_release(&got);
	ckpt_flat_release(want);
}

void ckpt_check_answer(const json_t *run, size_t b, int reps, const json_t *ans, int mean,
		       const char *what)
{
	struct ckpt_geom g = ckpt_geom_of(run);
	size_t L = json_array_size(json_array_get(json_object_get(run, "ids"), b));
	size_t att_shape[5] = { g.N, (size_t)reps, g.H, L, L };
	size_t mean_shape[4] = { g.N, (size_t)reps, L, L };
	size_t out_shape[3] = { (size_t)reps, L, g.E };
	struct ckpt_flat want = { 0 };
	char where[200];

	snprintf(where, sizeof where, "%s item %zu attentions", what, b);
	ckpt_want_attentions(&want, run, b, reps, mean);
	if (mean)
		check_output(ckpt_output_of(ans, "attentions"), mean_shape, 4, &want, where);
	else
		check_output(ckpt_output_of(ans, "attentions"), att_shape, 5, &want, where);

	snprintf(where, sizeof where, "%s item %zu output", what, b);
	ckpt_want_output(&want, run, b, reps);
	check_output(ckpt_output_of(ans, "output"), out_shape, 3, &want, where);
}

void ckpt_check_binary(const struct live_resp *r, const json_t *run, size_t b, int reps,
		       size_t want_outs)
{
	const char *ihcl;
	size_t json_len, at;
	json_t *head, *outs;

	ck_assert_msg(r->status == 200, "status %d: %s", r->status, r->body);
	ck_assert_str_eq(live_header(r, "Content-Type"), "application/octet-stream");
	ihcl = live_header(r, "Inference-Header-Content-Length");
	ck_assert_ptr_nonnull(ihcl);
	json_len = strtoul(ihcl, NULL, 10);
	ck_assert_uint_le(json_len, r->body_len);
	head = ckpt_parse(r->body, json_len);
	outs = json_object_get(head, "outputs");
	ck_assert_uint_eq(json_array_size(outs), want_outs);
	at = json_len;
	for (size_t i = 0; i < want_outs; i++) {
		const json_t *o = json_array_get(outs, i);
		const char *name = json_string_value(json_object_get(o, "name"));
		size_t bytes = (size_t)json_integer_value(
		    json_object_get(json_object_get(o, "parameters"), "binary_data_size"));
		struct ckpt_flat got = { 0 }, want = { 0 };

		ck_assert_ptr_nonnull(name);
		ck_assert_ptr_null(json_object_get(o, "data"));
		ck_assert_uint_le(at + bytes, r->body_len);
		ckpt_floats_of(&got, (const unsigned char *)r->body + at, bytes / 4);
		if (strcmp(name, "output") == 0)
			ckpt_want_output(&want, run, b, reps);
		else if (strcmp(name, "attentions") == 0)
			ckpt_want_attentions(&want, run, b, reps, 0);
		else
			ck_abort_msg("unexpected output '%s'", name);
		ckpt_compare(&got, &want, name);
		ckpt_flat_release(&got);
		ckpt_flat_release(&want);
		at += bytes;
	}
	ck_assert_uint_eq(at, r->body_len);
	json_decref(head);
}
