/* ckpt_build.c: safetensors checkpoints built in C (see ckpt_build.h). */
#include "ckpt_build.h"

#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/half.h"
#include "tests/lib/st_util.h"

void ckb_add(struct ckb_list *l, size_t rank, size_t d0, size_t d1, const char *fmt, ...)
{
	struct ckb_tensor *t = &l->v[l->n++];
	char name[80];
	va_list ap;

	ck_assert_uint_le(l->n, CKB_MAX);
	va_start(ap, fmt);
	vsnprintf(name, sizeof name, fmt, ap);
	va_end(ap);
	snprintf(t->name, sizeof t->name, "%s%s", l->prefix, name);
	t->dtype = l->dtype;
	t->rank = rank;
	t->d[0] = d0;
	t->d[1] = d1;
}

size_t ckb_numel(const struct ckb_tensor *t)
{
	return t->rank == 0 ? 1 : t->rank == 1 ? t->d[0] : t->d[0] * t->d[1];
}

size_t ckb_find(const struct ckb_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return i;
	ck_abort_msg("no tensor %s in the list", name);
	return 0;
}

static void put(uint8_t *p, const char *dtype, float v)
{
	uint32_t bits;
	uint16_t h;

	memcpy(&bits, &v, sizeof bits);
	if (strcmp(dtype, "I64") == 0)
		return; /* zeros, as calloc left them */
	if (strcmp(dtype, "F32") == 0) {
		for (int b = 0; b < 4; b++)
			p[b] = (uint8_t)(bits >> (8 * b));
		return;
	}
	h = strcmp(dtype, "F16") == 0 ? half_from_float(v) : (uint16_t)(bits >> 16);
	p[0] = (uint8_t)h;
	p[1] = (uint8_t)(h >> 8);
}

uint8_t *ckb_file(const struct ckb_list *l, size_t shard, size_t of, size_t *len)
{
	size_t cap = 16384, at = 0, dlen = 0, pos = 0;
	char *h = malloc(cap);
	uint8_t *f, *data;

	ck_assert_ptr_nonnull(h);
	for (size_t i = shard; i < l->n; i += of)
		dlen += ckb_numel(&l->v[i]) * st_dtype_size(l->v[i].dtype);
	data = calloc(dlen + 1, 1);
	at += (size_t)snprintf(h + at, cap - at, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (size_t i = shard; i < l->n; i += of) {
		const struct ckb_tensor *t = &l->v[i];
		size_t bytes = ckb_numel(t) * st_dtype_size(t->dtype);

		at += (size_t)snprintf(h + at, cap - at, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[",
				       t->name, t->dtype);
		for (size_t d = 0; d < t->rank; d++)
			at += (size_t)snprintf(h + at, cap - at, "%s%zu", d ? "," : "", t->d[d]);
		at += (size_t)snprintf(h + at, cap - at, "],\"data_offsets\":[%zu,%zu]}", pos,
				       pos + bytes);
		for (size_t e = 0; e < ckb_numel(t); e++)
			put(data + pos + e * st_dtype_size(t->dtype), t->dtype, st_tvalue(i, e));
		pos += bytes;
	}
	at += (size_t)snprintf(h + at, cap - at, "}");
	while (at % 8 != 0)
		h[at++] = ' ';
	ck_assert_uint_lt(at, cap);
	f = st_raw_file(at, h, at, data, dlen, len);
	free(h);
	free(data);
	return f;
}

/* Built files and the list they came from; loaded by ck_load. */

static const char *const shard_names[2] = {"model-00001-of-00002.safetensors",
					   "model-00002-of-00002.safetensors"};

enum attn_status ckb_load(struct ckb_built *b, const struct attn_checkpoint_config *cfg,
			  size_t n_files)
{
	enum attn_status st;

	b->n_files = n_files;
	for (size_t s = 0; s < n_files; s++) {
		b->bytes[s] = ckb_file(&b->l, s, n_files, &b->files[s].len);
		b->files[s].bytes = b->bytes[s];
		b->files[s].name = n_files == 1 ? "model.safetensors" : shard_names[s];
	}
	memset(&b->err, 0, sizeof b->err);
	st = attn_checkpoint_load(&b->ck, cfg, b->files, n_files, b->mem, &b->err);
	if (st != ATTN_OK) {
		ck_assert_ptr_null(b->ck);
		ck_assert_int_eq(b->err.status, st);
	}
	return st;
}

void ckb_release(struct ckb_built *b)
{
	attn_checkpoint_free(b->ck);
	for (size_t s = 0; s < b->n_files; s++)
		free(b->bytes[s]);
}

void ckb_assert_tensor(const struct ckb_built *b, const float *x, const char *name)
{
	size_t t = ckb_find(&b->l, name), n = ckb_numel(&b->l.v[t]), i = 0;

	ck_assert_msg(x != NULL, "%s not loaded", name);
	while (i < n && x[i] == st_tvalue(t, i))
		i++;
	ck_assert_msg(i == n, "%s[%zu] = %g, want %g", name, i, i < n ? x[i] : 0.0,
		      i < n ? st_tvalue(t, i) : 0.0);
}

void ckb_assert_linear(const struct ckb_built *b, const struct attn_linear *lin, const char *name)
{
	size_t t = ckb_find(&b->l, name), o = 0, k = 0;

	ck_assert_msg(lin->w != NULL, "%s not loaded", name);
	ck_assert_uint_eq(ckb_numel(&b->l.v[t]), lin->out * lin->in);
	if (!lin->in_major) {
		ckb_assert_tensor(b, lin->w, name);
		return;
	}
	/* the first value that differs, then one assertion: Check marks a point
	 * per assertion */
	while (o < lin->out && lin->w[k * lin->out + o] == st_tvalue(t, o * lin->in + k)) {
		k = k + 1 < lin->in ? k + 1 : 0;
		o += k == 0;
	}
	ck_assert_msg(o == lin->out, "%s [%zu, %zu] = %g, want %g (transposed)", name, o, k,
		      lin->w[k * lin->out + o], st_tvalue(t, o * lin->in + k));
}

int ckb_in_files(const struct ckb_built *b, const float *x)
{
	for (size_t s = 0; s < b->n_files; s++)
		if ((const uint8_t *)x >= b->bytes[s] &&
		    (const uint8_t *)x < b->bytes[s] + b->files[s].len)
			return 1;
	return 0;
}

const char *ckb_name(char *buf, const char *prefix, const char *name)
{
	snprintf(buf, 96, "%s%s", prefix, name);
	return buf;
}
