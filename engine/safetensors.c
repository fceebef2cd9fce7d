/*
 * safetensors.c: attention weights from a safetensors byte buffer.
 *
 * Three passes over the caller's bytes, none reading outside [buf, buf + len):
 *   1. parse the JSON header into a table of tensor entries (name, dtype,
 *      shape, data offsets), checking syntax, offset ranges and byte sizes;
 *   2. check the table as a whole: no duplicate names, no overlapping data;
 *   3. find the tensors of one naming scheme, infer E and Hkv from their
 *      shapes, check every shape, then allocate the model and convert.
 * Passes 1 and 2 live in st_header.c (the schema they accept is described
 * there); this file holds pass 3 and the 16-bit float converters.
 *
 * Statuses: TRUNCATED, FORMAT, OVERFLOW from passes 1 and 2 (st_header.c);
 * FORMAT for an ambiguous layout; DTYPE, MISSING_TENSOR, SHAPE_MISMATCH,
 * HEADS, KV_HEADS, NONFINITE for the tensors the model is built from (other
 * tensors are only checked in passes 1 and 2).
 */
#include "safetensors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "st_header.h"

/* ---- pass 3: naming schemes and the model ------------------------------ */

/* Symbolic dims of a recognised tensor, resolved once E, H, Hkv are known. */
enum st_dim { DIM_NONE, DIM_E, DIM_QKV, DIM_KV, DIM_VOCAB };
enum st_dest { DEST_W_QKV, DEST_B_QKV, DEST_W_O, DEST_B_O, DEST_EMBED };
enum st_block { BLK_ALL, BLK_Q, BLK_K, BLK_V }; /* row block of w_qkv / b_qkv */

struct st_slot {
	const char *suffix; /* name after the caller's prefix; also the error field */
	int required;
	enum st_dim rows, cols; /* cols == DIM_NONE: a vector [rows] */
	enum st_dest dest;
	enum st_block block;
};

/* H D == E throughout (D = E / H), so [H D, ...] is written DIM_E. */
static const struct st_slot st_mha_slots[] = {
	{"in_proj_weight", 1, DIM_QKV, DIM_E, DEST_W_QKV, BLK_ALL},
	{"out_proj.weight", 1, DIM_E, DIM_E, DEST_W_O, BLK_ALL},
	{"in_proj_bias", 0, DIM_QKV, DIM_NONE, DEST_B_QKV, BLK_ALL},
	{"out_proj.bias", 0, DIM_E, DIM_NONE, DEST_B_O, BLK_ALL},
	{"embed_tokens.weight", 0, DIM_VOCAB, DIM_E, DEST_EMBED, BLK_ALL},
};

static const struct st_slot st_llama_slots[] = {
	{"q_proj.weight", 1, DIM_E, DIM_E, DEST_W_QKV, BLK_Q},
	{"k_proj.weight", 1, DIM_KV, DIM_E, DEST_W_QKV, BLK_K},
	{"v_proj.weight", 1, DIM_KV, DIM_E, DEST_W_QKV, BLK_V},
	{"o_proj.weight", 1, DIM_E, DIM_E, DEST_W_O, BLK_ALL},
	{"q_proj.bias", 0, DIM_E, DIM_NONE, DEST_B_QKV, BLK_Q},
	{"k_proj.bias", 0, DIM_KV, DIM_NONE, DEST_B_QKV, BLK_K},
	{"v_proj.bias", 0, DIM_KV, DIM_NONE, DEST_B_QKV, BLK_V},
	{"o_proj.bias", 0, DIM_E, DIM_NONE, DEST_B_O, BLK_ALL},
	{"embed_tokens.weight", 0, DIM_VOCAB, DIM_E, DEST_EMBED, BLK_ALL},
};

#define ST_MAX_SLOTS 9

/* slots[0] names the scheme and gives E; slots[kv_slot] gives Hkv D rows. */
static const struct st_scheme {
	const struct st_slot *slots;
	size_t n;
	size_t kv_slot; /* 0: Hkv = H */
} st_schemes[] = {
	{st_mha_slots, sizeof(st_mha_slots) / sizeof(st_mha_slots[0]), 0},
	{st_llama_slots, sizeof(st_llama_slots) / sizeof(st_llama_slots[0]), 1},
};

/* What pass 3 found: the scheme, its tensors (NULL when absent), the config. */
struct st_plan {
	const struct st_scheme *scheme;
	const struct st_tensor *found[ST_MAX_SLOTS];
	const char *prefix;
	int prefix_shown; /* characters of the prefix quoted in messages */
	size_t prefix_len;
	const char *embed_name; /* the caller's full name for the embedding, or NULL */
	int embed_shown;
	struct attn_model_config cfg;
	size_t D;
};

static const struct st_tensor *st_find(const struct st_table *tab, const char *prefix,
				       size_t prefix_len, const char *suffix)
{
	return st_table_find(tab, prefix, prefix_len, suffix, strlen(suffix));
}

/* Characters of a caller-given name quoted in messages. */
static int st_shown(size_t len)
{
	return len < 96 ? (int)len : 96;
}

/* Slot i's full name in messages, printed "%.*s%s" (w, pre, suf). */
struct st_label {
	int w;
	const char *pre, *suf;
};

static struct st_label st_label(const struct st_plan *pl, size_t i)
{
	const struct st_slot *s = &pl->scheme->slots[i];

	if (s->dest == DEST_EMBED && pl->embed_name != NULL)
		return (struct st_label){pl->embed_shown, pl->embed_name, ""};
	return (struct st_label){pl->prefix_shown, pl->prefix, s->suffix};
}

/* Slot i's tensor: prefix + suffix, or exactly embed_name when the caller gave one. */
static const struct st_tensor *st_find_slot(const struct st_plan *pl, const struct st_table *tab,
					    size_t i)
{
	const struct st_slot *s = &pl->scheme->slots[i];

	if (s->dest == DEST_EMBED && pl->embed_name != NULL)
		return st_find(tab, pl->embed_name, strlen(pl->embed_name), "");
	return st_find(tab, pl->prefix, pl->prefix_len, s->suffix);
}

/* The one scheme whose first tensor is present, and all of its tensors. */
static enum attn_status st_pick_scheme(struct st_plan *pl, const struct st_table *tab,
				       struct attn_error *err)
{
	const struct st_scheme *s;
	int w = pl->prefix_shown;

	for (size_t i = 0; i < sizeof(st_schemes) / sizeof(st_schemes[0]); i++) {
		if (st_find(tab, pl->prefix, pl->prefix_len, st_schemes[i].slots[0].suffix) == NULL)
			continue;
		if (pl->scheme != NULL)
			return attn_fail(err, ATTN_ERR_FORMAT, "header", 0,
					 "both '%.*s%s' and '%.*s%s' present: ambiguous layout", w,
					 pl->prefix, pl->scheme->slots[0].suffix, w, pl->prefix,
					 st_schemes[i].slots[0].suffix);
		pl->scheme = &st_schemes[i];
	}
	if (pl->scheme == NULL)
		return attn_fail(err, ATTN_ERR_MISSING_TENSOR, "in_proj_weight", 0,
				 "no tensor '%.*sin_proj_weight' or '%.*sq_proj.weight'", w,
				 pl->prefix, w, pl->prefix);
	s = pl->scheme;
	for (size_t i = 0; i < s->n; i++) {
		pl->found[i] = st_find_slot(pl, tab, i);
		if (pl->found[i] != NULL)
			continue;
		if (s->slots[i].required)
			return attn_fail(err, ATTN_ERR_MISSING_TENSOR, s->slots[i].suffix, 0,
					 "missing tensor '%.*s%s'", w, pl->prefix,
					 s->slots[i].suffix);
		if (s->slots[i].dest == DEST_EMBED && pl->embed_name != NULL)
			return attn_fail(err, ATTN_ERR_MISSING_TENSOR, "embed_name", 0,
					 "missing tensor '%.*s' named by embed_name",
					 pl->embed_shown, pl->embed_name);
	}
	return ATTN_OK;
}

static enum attn_status st_check_dtypes(const struct st_plan *pl, struct attn_error *err)
{
	char dtype[ST_NAME_SHOWN + 4];

	for (size_t i = 0; i < pl->scheme->n; i++) {
		const struct st_tensor *t = pl->found[i];
		struct st_label l = st_label(pl, i);

		if (t == NULL || t->kind == ST_F32 || t->kind == ST_F16 || t->kind == ST_BF16)
			continue;
		return attn_fail(err, ATTN_ERR_DTYPE, pl->scheme->slots[i].suffix, 0,
				 "tensor '%.*s%s' has dtype %s; only F32, F16 and BF16 load", l.w,
				 l.pre, l.suf, st_printable(dtype, t->dtype, strlen(t->dtype)));
	}
	return ATTN_OK;
}

/* Rows of a rank-2 tensor, or a SHAPE_MISMATCH naming it. */
static enum attn_status st_matrix(const struct st_plan *pl, size_t slot, size_t *rows,
				  size_t *cols, struct attn_error *err)
{
	const struct st_tensor *t = pl->found[slot];
	struct st_label l = st_label(pl, slot);

	if (t->rank != 2 || t->dims[0] == 0 || t->dims[1] == 0)
		return attn_fail(err, ATTN_ERR_SHAPE_MISMATCH, pl->scheme->slots[slot].suffix, 0,
				 "tensor '%.*s%s' must be a non-empty matrix, has rank %zu", l.w,
				 l.pre, l.suf, t->rank);
	*rows = t->dims[0];
	*cols = t->dims[1];
	return ATTN_OK;
}

/* E from the first tensor's columns, Hkv from the key rows, vocab from embed. */
static enum attn_status st_infer_config(struct st_plan *pl, size_t H, struct attn_error *err)
{
	const struct st_slot *key = &pl->scheme->slots[pl->scheme->kv_slot];
	size_t rows, cols, kv_rows;
	enum attn_status st = st_matrix(pl, 0, &rows, &pl->cfg.E, err);

	if (st != ATTN_OK)
		return st;
	pl->cfg.H = H;
	if (pl->cfg.E % H != 0)
		return attn_fail(err, ATTN_ERR_HEADS, "num_heads", 0,
				 "'%.*s%s' gives E = %zu, not divisible by num_heads %zu",
				 pl->prefix_shown, pl->prefix, pl->scheme->slots[0].suffix,
				 pl->cfg.E, H);
	pl->D = pl->cfg.E / H;
	pl->cfg.Hkv = H;
	if (pl->scheme->kv_slot != 0) {
		st = st_matrix(pl, pl->scheme->kv_slot, &kv_rows, &cols, err);
		if (st != ATTN_OK)
			return st;
		if (kv_rows % pl->D != 0 || H % (kv_rows / pl->D) != 0)
			return attn_fail(err, ATTN_ERR_KV_HEADS, key->suffix, 0,
					 "'%.*s%s' has %zu rows: not a number of kv heads of "
					 "D = %zu dividing num_heads %zu",
					 pl->prefix_shown, pl->prefix, key->suffix, kv_rows, pl->D,
					 H);
		pl->cfg.Hkv = kv_rows / pl->D;
	}
	for (size_t i = 0; i < pl->scheme->n; i++) {
		const struct st_slot *s = &pl->scheme->slots[i];

		if (pl->found[i] == NULL)
			continue;
		if (s->dest == DEST_B_QKV || s->dest == DEST_B_O)
			pl->cfg.bias = 1;
		if (s->dest == DEST_EMBED) {
			st = st_matrix(pl, i, &pl->cfg.vocab, &cols, err);
			if (st != ATTN_OK)
				return st;
		}
	}
	return ATTN_OK;
}

static size_t st_dim_value(const struct st_plan *pl, enum st_dim d)
{
	switch (d) {
	case DIM_E:
		return pl->cfg.E;
	case DIM_QKV: /* (H + 2 Hkv) D <= 3 E, which fits: E columns of a tensor in memory */
		return (pl->cfg.H + 2 * pl->cfg.Hkv) * pl->D;
	case DIM_KV:
		return pl->cfg.Hkv * pl->D;
	case DIM_VOCAB:
		return pl->cfg.vocab;
	case DIM_NONE:
		break;
	}
	return 0;
}

/* Every found tensor against the shape its slot expects. */
static enum attn_status st_check_shapes(const struct st_plan *pl, struct attn_error *err)
{
	for (size_t i = 0; i < pl->scheme->n; i++) {
		const struct st_slot *s = &pl->scheme->slots[i];
		const struct st_tensor *t = pl->found[i];
		struct st_label l = st_label(pl, i);
		size_t rank = s->cols == DIM_NONE ? 1 : 2;
		size_t rows = st_dim_value(pl, s->rows), cols = st_dim_value(pl, s->cols);

		if (t == NULL)
			continue;
		if (t->rank == rank && t->dims[0] == rows && (rank == 1 || t->dims[1] == cols))
			continue;
		if (rank == 1)
			return attn_fail(err, ATTN_ERR_SHAPE_MISMATCH, s->suffix, 0,
					 "tensor '%.*s%s' should have shape [%zu] (E = %zu, "
					 "Hkv = %zu)",
					 l.w, l.pre, l.suf, rows, pl->cfg.E, pl->cfg.Hkv);
		return attn_fail(err, ATTN_ERR_SHAPE_MISMATCH, s->suffix, 0,
				 "tensor '%.*s%s' should have shape [%zu, %zu] (E = %zu, "
				 "Hkv = %zu)",
				 l.w, l.pre, l.suf, rows, cols, pl->cfg.E, pl->cfg.Hkv);
	}
	return ATTN_OK;
}

/* n values of a little-endian tensor at src (any alignment) as float. */
static void st_convert(float *dst, const uint8_t *src, size_t n, enum st_kind kind)
{
	uint32_t bits;

	for (size_t i = 0; i < n; i++) {
		switch (kind) {
		case ST_F32:
			bits = (uint32_t)src[4 * i] | (uint32_t)src[4 * i + 1] << 8 |
			       (uint32_t)src[4 * i + 2] << 16 | (uint32_t)src[4 * i + 3] << 24;
			memcpy(&dst[i], &bits, sizeof(bits));
			break;
		case ST_F16:
			dst[i] = attn_f16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
			break;
		default: /* ST_BF16: the dtype check let nothing else through */
			dst[i] = attn_bf16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
			break;
		}
	}
}

/* Where slot's tensor goes in m: the array, then the first row of its block. */
static float *st_dest(struct attn_model *m, const struct st_slot *s)
{
	size_t row_len = s->cols == DIM_NONE ? 1 : m->E;
	size_t row = s->block == BLK_K   ? m->H * m->D
		     : s->block == BLK_V ? (m->H + m->Hkv) * m->D
					 : 0;
	float *base = s->dest == DEST_W_QKV   ? m->w_qkv
		      : s->dest == DEST_B_QKV ? m->b_qkv
		      : s->dest == DEST_W_O   ? m->w_o
		      : s->dest == DEST_B_O   ? m->b_o
					      : m->embed;

	return base + row * row_len;
}

/*
 * Allocates the model and converts every found tensor into it. A bias the
 * file lacks while it has another (Qwen2 has q/k/v biases, no o_proj.bias)
 * stays zero, as attn_model_alloc leaves it: the same output as no bias.
 */
static enum attn_status st_build(struct attn_model **out, const struct st_plan *pl,
				 const uint8_t *data, struct attn_error *err)
{
	struct attn_model *m;
	enum attn_status st = attn_model_alloc(&m, &pl->cfg, err);

	if (st != ATTN_OK)
		return st;
	for (size_t i = 0; i < pl->scheme->n; i++) {
		const struct st_slot *s = &pl->scheme->slots[i];
		const struct st_tensor *t = pl->found[i];
		struct st_label l = st_label(pl, i);
		float *dst;

		if (t == NULL)
			continue;
		dst = st_dest(m, s);
		st_convert(dst, data + t->begin, t->numel, t->kind);
		for (size_t j = 0; j < t->numel; j++) {
			if (isfinite(dst[j]))
				continue;
			attn_model_free(m);
			return attn_fail(err, ATTN_ERR_NONFINITE, s->suffix, j,
					 "tensor '%.*s%s' holds a non-finite value at element %zu",
					 l.w, l.pre, l.suf, j);
		}
	}
	m->source = ATTN_SOURCE_SAFETENSORS;
	*out = m;
	return ATTN_OK;
}

enum attn_status attn_model_from_safetensors(struct attn_model **out, const uint8_t *buf,
					     size_t len,
					     const struct attn_safetensors_options *opts,
					     struct attn_error *err)
{
	struct st_table tab = {0};
	struct st_plan pl = {0};
	size_t data_at = 0;
	enum attn_status st;

	if (out == NULL)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "out", 0, "out must not be NULL");
	*out = NULL;
	if (opts == NULL || opts->num_heads == 0)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "num_heads", 0,
				 "num_heads must be given and positive");
	if (buf == NULL && len != 0)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "buf", 0, "buf is NULL, len %zu", len);
	pl.prefix = opts->prefix != NULL ? opts->prefix : "";
	pl.prefix_len = strlen(pl.prefix);
	pl.prefix_shown = st_shown(pl.prefix_len);
	pl.embed_name = opts->embed_name;
	if (pl.embed_name != NULL)
		pl.embed_shown = st_shown(strlen(pl.embed_name));

	st = st_read_header(&tab, buf, len, &data_at, err);
	if (st != ATTN_OK)
		goto out;
	st = st_pick_scheme(&pl, &tab, err);
	if (st != ATTN_OK)
		goto out;
	st = st_check_dtypes(&pl, err);
	if (st != ATTN_OK)
		goto out;
	st = st_infer_config(&pl, opts->num_heads, err);
	if (st != ATTN_OK)
		goto out;
	st = st_check_shapes(&pl, err);
	if (st != ATTN_OK)
		goto out;
	st = st_build(out, &pl, buf + data_at, err);
out:
	st_table_release(&tab);
	return st;
}

/* ---- 16-bit floats ----------------------------------------------------- */

/*
 * IEEE 754 binary16: sign, 5 exponent bits (bias 15), 10 fraction bits.
 * Every half is exactly a float: normals rebias the exponent (+112),
 * subnormals (fraction * 2^-24) are renormalised, Inf and NaN keep payload.
 */
float attn_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = h >> 10 & 0x1f;
	uint32_t frac = h & 0x3ff;
	uint32_t bits;
	float f;

	if (exp == 0x1f) {
		bits = sign | 0x7f800000u | frac << 13;
	} else if (exp != 0) {
		bits = sign | (exp + 112) << 23 | frac << 13;
	} else if (frac == 0) {
		bits = sign; /* signed zero */
	} else {
		/* shift the leading 1 up to bit 10; each shift halves the exponent */
		exp = 113;
		while ((frac & 0x400) == 0) {
			frac <<= 1;
			exp--;
		}
		bits = sign | exp << 23 | (frac & 0x3ff) << 13;
	}
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* bfloat16 is the top half of a float. */
float attn_bf16_to_f32(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}
