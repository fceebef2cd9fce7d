/*
 * sdpa.c: POST /v1/sdpa, raw scaled-dot-product attention with the semantics
 * of the ONNX Attention operator (opset 23/24): q, k, v as 4D [B, H, L, D] or
 * 3D [B, L, H * D] (with num_heads / num_kv_heads), attn_mask (boolean, true =
 * may attend, or additive; rank 1..4 broadcast numpy-style to [B, H, Lq, Lk]),
 * is_causal, scale, softcap, past_key / past_value (concatenated into
 * present_key / present_value), kv_lengths (ONNX nonpad_kv_seqlen), and the
 * weights or one score view on request.
 */
#include "api/handlers.h"
#include "v1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/engine_error.h"
#include "engine/attention.h"
#include "api/json/fastjson.h"
#include "api/json/json_write.h"
#include "api/json/json_read.h"
#include "engine/sizes.h"
#include "api/json/json_tensor.h"

#define SDPA_MAX_ELEMS ((size_t)1 << 31)

/* Where large rows of numbers are read before jansson (fastjson.h); each is
 * read with api_tensor_read_pool(&j->numbers, ...) and nothing else. */
static const char *const pooled_fields[] = { "/q",	  "/k",		 "/v", "/past_key",
					     "/past_value", "/attn_mask", NULL };

static const char *const sdpa_fields[] = { "q",	      "k",	     "v",	 "num_heads",
					   "num_kv_heads", "attn_mask", "is_causal", "scale",
					   "softcap",	  "past_key",  "past_value", "kv_lengths",
					   "weights",	  "scores",    "encoding",   "precision",
					   NULL };

struct sdpa_job {
	json_t *root;
	struct fastjson_pool numbers; /* rows of root's large number arrays */
	struct api_tensor q, k, v, mask, past_k, past_v;
	uint8_t *allow;
	size_t *kv_lengths;
	int rank3;          /* q, k, v came as [B, L, H * D] */
	int past;           /* past_key and past_value were given (P may be 0) */
	size_t B, H, Hkv, Lq, S, P, D, Dv;
	struct attn_sdpa req;
	float *present_k; /* [B, Hkv, P + S, D] */
	float *present_v; /* [B, Hkv, P + S, Dv] */
	float *out;       /* [B, H, Lq, Dv], or [B, Lq, H Dv] when rank3 */
	float *weights;   /* [B, H, Lq, P + S], or [B, Lq, P + S] per weights_mode */
	float *scores;    /* [B, H, Lq, P + S] */
	void *ws;
	size_t ws_bytes;
	size_t bytes; /* all the request needs, ws_bytes included */
	enum api_encoding encoding;
	int precision;
};

static void sdpa_release(struct sdpa_job *j)
{
	json_decref(j->root);
	fastjson_pool_release(&j->numbers);
	api_tensor_release(&j->q);
	api_tensor_release(&j->k);
	api_tensor_release(&j->v);
	api_tensor_release(&j->mask);
	api_tensor_release(&j->past_k);
	api_tensor_release(&j->past_v);
	free(j->allow);
	free(j->kv_lengths);
	free(j->present_k);
	free(j->present_v);
	free(j->out);
	free(j->weights);
	free(j->scores);
	free(j->ws);
}

/* 4D shapes carry the heads: a head count given too must be theirs. */
static int heads_agree(const json_t *r, const char *key, size_t shape_heads,
		       struct api_error *err)
{
	char ptr[API_PTR_MAX];
	size_t given;

	if (req_size(r, key, "", 1, 4096, shape_heads, &given, err) != 0)
		return -1;
	if (given != shape_heads)
		return api_fail(err, API_E_DIMENSION_MISMATCH, req_child(ptr, "", key),
				"%s is %zu, but 4D q, k, v carry %zu heads", key, given,
				shape_heads);
	return 0;
}

/* 3D q, k, v: num_heads divides q's last axis, num_kv_heads (num_heads when
 * absent) k's and v's; the pointer names the count that does not. */
static int heads_divide(const struct sdpa_job *j, size_t hq, size_t hkv, struct api_error *err)
{
	int q_bad = hq == 0 || j->q.shape[2] % hq != 0;

	if (!q_bad && j->k.shape[2] % hkv == 0 && j->v.shape[2] % hkv == 0)
		return 0;
	return api_fail(err, API_E_DIMENSION_MISMATCH,
			q_bad || req_get(j->root, "num_kv_heads") == NULL ? "/num_heads"
										  : "/num_kv_heads",
			"3D q, k, v need num_heads (and num_kv_heads) dividing their last axes");
}

/* Room for "[B, H, L, D]" with four 20-digit sizes. */
#define SHAPE_TEXT_MAX 96

/* "[2, 1, 3, 4]": t's shape as the request wrote it, for a message. */
static const char *shape_text(char out[SHAPE_TEXT_MAX], const struct api_tensor *t)
{
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = 0; i < t->rank && at < SHAPE_TEXT_MAX; i++)
		at += (size_t)snprintf(out + at, SHAPE_TEXT_MAX - at, "%s%zu", i ? ", " : "[",
				       t->shape[i]);
	if (at < SHAPE_TEXT_MAX)
		snprintf(out + at, SHAPE_TEXT_MAX - at, "]");
	return out;
}

/* k against q (batch, head size), then v against k (batch, heads, length),
 * as /v1/attention checks its value against its key: the pointer names the
 * tensor that disagrees, the message the shapes it was checked by and the
 * one it needs (3D: Hkv heads of D in the last axis). */
static int kv_agree(const struct sdpa_job *j, struct api_error *err)
{
	char q[SHAPE_TEXT_MAX], k[SHAPE_TEXT_MAX], v[SHAPE_TEXT_MAX];
	int k_bad = j->k.shape[0] != j->B ||
		    (j->rank3 ? j->k.shape[2] / j->Hkv != j->D : j->k.shape[3] != j->D);
	int v_bad = j->v.shape[0] != j->B ||
		    (j->rank3 ? j->v.shape[1] != j->S
			      : j->v.shape[1] != j->Hkv || j->v.shape[2] != j->S);

	if (!k_bad && !v_bad)
		return 0;
	shape_text(q, &j->q);
	shape_text(k, &j->k);
	shape_text(v, &j->v);
	if (k_bad && j->rank3)
		return api_fail(err, API_E_DIMENSION_MISMATCH, "/k",
				"k is %s; with q %s it must be [%zu, S, %zu]", k, q, j->B,
				j->Hkv * j->D);
	if (k_bad)
		return api_fail(err, API_E_DIMENSION_MISMATCH, "/k",
				"k is %s; with q %s it must be [%zu, Hkv, S, %zu]", k, q, j->B, j->D);
	if (j->rank3)
		return api_fail(err, API_E_DIMENSION_MISMATCH, "/v",
				"v is %s; with k %s it must be [%zu, %zu, Hkv x Dv]", v, k, j->B,
				j->S);
	return api_fail(err, API_E_DIMENSION_MISMATCH, "/v",
			"v is %s; with k %s it must be [%zu, %zu, %zu, Dv]", v, k, j->B, j->Hkv,
			j->S);
}

/* Reads q, k, v and fixes B, H, Hkv, Lq, S, D, Dv from their shapes. */
static int decode_qkv(struct sdpa_job *j, struct api_error *err)
{
	const json_t *r = j->root;
	size_t hq, hkv;

	struct fastjson_pool *pool = &j->numbers;

	if (api_tensor_read_pool(pool, req_get(r, "q"), "/q", 3, 4, SDPA_MAX_ELEMS, 0,
				 &j->q, err) ||
	    api_tensor_read_pool(pool, req_get(r, "k"), "/k", 3, 4, SDPA_MAX_ELEMS, 0,
				 &j->k, err) ||
	    api_tensor_read_pool(pool, req_get(r, "v"), "/v", 3, 4, SDPA_MAX_ELEMS, 0,
				 &j->v, err))
		return -1;
	if (j->k.rank != j->q.rank || j->v.rank != j->q.rank)
		return api_fail(err, API_E_DIMENSION_MISMATCH, j->k.rank != j->q.rank ? "/k" : "/v",
				"q, k and v must have one rank");
	j->rank3 = j->q.rank == 3;
	if (j->rank3) {
		if (req_size(r, "num_heads", "", 1, 4096, 0, &hq, err) ||
		    req_size(r, "num_kv_heads", "", 1, 4096, hq, &hkv, err))
			return -1;
		if (heads_divide(j, hq, hkv, err) != 0)
			return -1;
		j->B = j->q.shape[0], j->Lq = j->q.shape[1], j->S = j->k.shape[1];
		j->H = hq, j->Hkv = hkv;
		j->D = j->q.shape[2] / hq, j->Dv = j->v.shape[2] / hkv;
	} else {
		j->B = j->q.shape[0], j->H = j->q.shape[1], j->Lq = j->q.shape[2];
		j->D = j->q.shape[3], j->Hkv = j->k.shape[1], j->S = j->k.shape[2];
		j->Dv = j->v.shape[3];
		if (heads_agree(r, "num_heads", j->H, err) ||
		    heads_agree(r, "num_kv_heads", j->Hkv, err))
			return -1;
	}
	if (kv_agree(j, err) != 0)
		return -1;
	/* the engine refuses this too, but knows no field: num_kv_heads in 3D,
	 * else k's head axis */
	if (j->Hkv == 0 || j->H % j->Hkv != 0)
		return api_fail(err, API_E_KV_HEADS_DO_NOT_DIVIDE,
				j->rank3 ? "/num_kv_heads" : "/k",
				"num_heads %zu is not divisible by num_kv_heads %zu", j->H, j->Hkv);
	return 0;
}

/* past_key against k, then past_value against past_key (its P): the
 * pointer names the one that disagrees. */
static int past_agree(const struct sdpa_job *j, struct api_error *err)
{
	const size_t *pk = j->past_k.shape, *pv = j->past_v.shape;
	int k_bad = pk[0] != j->B || pk[1] != j->Hkv || pk[3] != j->D;
	int v_bad = pv[0] != j->B || pv[1] != j->Hkv || pv[2] != j->P || pv[3] != j->Dv;

	if (!k_bad && !v_bad)
		return 0;
	return api_fail(err, API_E_DIMENSION_MISMATCH, k_bad ? "/past_key" : "/past_value",
			"past_key must be [%zu, %zu, P, %zu] and past_value [%zu, %zu, P, %zu]",
			j->B, j->Hkv, j->D, j->B, j->Hkv, j->Dv);
}

/* past_key / past_value [B, Hkv, P, D / Dv] and the present they make. P
 * may be 0 (ONNX's empty cache before the first step): present is then the
 * new K and V, answered as with any past. */
static int decode_past(struct sdpa_job *j, struct api_error *err)
{
	json_t *pk = req_get(j->root, "past_key");
	json_t *pv = req_get(j->root, "past_value");

	if ((pk == NULL) != (pv == NULL))
		return api_fail(err, API_E_INVALID_INPUT, pk ? "/past_value" : "/past_key",
				"past_key and past_value come together");
	if (pk == NULL)
		return 0;
	if (api_tensor_read_pool(&j->numbers, pk, "/past_key", 4, 4, SDPA_MAX_ELEMS, API_T_EMPTY,
				 &j->past_k, err) ||
	    api_tensor_read_pool(&j->numbers, pv, "/past_value", 4, 4, SDPA_MAX_ELEMS, API_T_EMPTY,
				 &j->past_v, err))
		return -1;
	j->past = 1;
	j->P = j->past_k.shape[2];
	return past_agree(j, err);
}

/* attn_mask: bool or additive, numpy broadcast; kv_lengths; is_causal. */
static int decode_mask(struct sdpa_job *j, struct api_error *err)
{
	json_t *m = req_get(j->root, "attn_mask");
	json_t *kl = req_get(j->root, "kv_lengths");
	struct attn_mask *mask = &j->req.mask;
	int causal;

	if (req_bool(j->root, "is_causal", "", 0, &causal, err) != 0)
		return -1;
	if (m != NULL) {
		const json_t *first = json_is_object(m) ? req_get(m, "data") : m;

		while (json_is_array(first))
			first = json_array_get(first, 0);
		if (api_tensor_read_pool(&j->numbers, m, "/attn_mask", 1, 4, SDPA_MAX_ELEMS,
					 json_is_boolean(first) ? API_T_BOOL : API_T_NEG_INF,
					 &j->mask, err) != 0)
			return -1;
		/* rank 1 [Lk] broadcasts numpy-style over [B, H, Lq] (ONNX: any
		 * shape broadcastable to [B, H, Lq, Lk]); passed as sent, so that
		 * a refusal names the axis the client sent (axis 0, not the 1 of
		 * a [1, Lk] it never sent) */
		mask->user_rank = j->mask.rank;
		memcpy(mask->user_shape, j->mask.shape, sizeof(mask->user_shape));
		mask->user_kind = json_is_boolean(first) ? ATTN_USER_MASK_BOOL : ATTN_USER_MASK_ADDITIVE;
		mask->user = j->mask.data;
		if (json_is_boolean(first)) {
			if (v1_mask_bytes(&j->mask, &j->allow, err) != 0)
				return -1;
			mask->user = j->allow;
		}
	}
	if (kl != NULL) {
		int64_t *lens;
		size_t n;

		if (j->past)
			return api_fail(err, API_E_INVALID_INPUT, "/kv_lengths",
					"kv_lengths (a static cache) does not combine with past_key");
		if (api_ints_read(kl, "/kv_lengths", 0, (int64_t)j->S, &lens, &n, err) != 0)
			return -1;
		if (n == j->B)
			j->kv_lengths = calloc(j->B, sizeof(size_t));
		for (size_t b = 0; j->kv_lengths != NULL && b < j->B; b++)
			j->kv_lengths[b] = (size_t)lens[b];
		free(lens);
		if (n != j->B)
			return api_fail(err, API_E_DIMENSION_MISMATCH, "/kv_lengths",
					"needs one length per batch item (%zu)", j->B);
		if (j->kv_lengths == NULL)
			return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
		mask->kv_lengths = j->kv_lengths;
	}
	/* ONNX: causal offset P with a past, kv_lengths[b] - Lq with a static cache */
	if (causal)
		mask->causal = kl ? ATTN_CAUSAL_BOTTOM_RIGHT : ATTN_CAUSAL_TOP_LEFT;
	if (causal && j->P > 0)
		mask->q_offset = (ptrdiff_t)j->P;
	return 0;
}

static int decode_options(struct sdpa_job *j, struct api_error *err)
{
	struct v1_outputs o;
	struct req_members top;

	req_members_read(&top, j->root);
	if (v1_decode_outputs(&top, ATTN_WEIGHTS_NONE, &o, err) != 0)
		return -1;
	j->req.scale = o.scale;
	j->req.softcap = o.softcap;
	j->req.weights_mode = o.weights;
	j->req.scores_view = o.scores;
	j->encoding = o.encoding;
	j->precision = o.precision;
	return 0;
}

/* The attention scores B H Lq Lk, and the engine's FLOPs: q . k and p v. */
static double sdpa_scores(const struct sdpa_job *j)
{
	return (double)j->B * (double)j->H * (double)j->Lq * (double)(j->P + j->S);
}

static double sdpa_flops(const struct sdpa_job *j)
{
	return 2.0 * sdpa_scores(j) * (double)(j->D + j->Dv);
}

/* Where the engine's fields came from in a /v1/sdpa request. */
static const struct api_field_where engine_fields[] = {
	{ "q", "/q", 0 }, { "k", "/k", 0 }, { "v", "/v", 0 }, { "attn_mask", "/attn_mask", 0 },
};
enum { ENGINE_FIELDS = sizeof engine_fields / sizeof engine_fields[0] };

/* The views, the present K/V, outputs and workspace, within the memory and
 * work limits. */
static int prepare(const struct api_service *svc, const struct api_reply *reply,
		   struct sdpa_job *j, struct api_error *err)
{
	struct attn_sdpa *r = &j->req;
	struct api_threads own = api_own_threads(svc, reply);
	size_t Lk = j->P + j->S, cells = 0, out_n = 0, kv_n = 0, bytes = 0, ws = 0;
	struct attn_error aerr;
	int bad;

	r->B = j->B, r->H = j->H, r->Hkv = j->Hkv, r->Lq = j->Lq, r->Lk = Lk;
	r->D = j->D, r->Dv = j->Dv;
	r->threads = own.threads;
	r->workers = own.workers;
	r->cancel = own.cancel;
	r->q = j->rank3 ? attn_cview_blhd(j->q.data, j->H, j->Lq, j->D)
			: attn_cview_bhld(j->q.data, j->H, j->Lq, j->D);
	r->k = attn_cview_bhld(NULL, j->Hkv, Lk, j->D);
	r->v = attn_cview_bhld(NULL, j->Hkv, Lk, j->Dv);
	r->out = j->rank3 ? attn_view_blhd(NULL, j->H, j->Lq, j->Dv)
			  : attn_view_bhld(NULL, j->H, j->Lq, j->Dv);
	if (attn_sdpa_workspace(r, &ws, &aerr) != ATTN_OK)
		return api_engine_fail(err, &aerr, engine_fields, ENGINE_FIELDS);
	bad = size_mul4(&cells, j->B, j->H, j->Lq, Lk) || size_mul4(&out_n, j->B, j->H, j->Lq, j->Dv) ||
	      size_mul4(&kv_n, j->B, j->Hkv, Lk, j->D + j->Dv) || size_add(&bytes, out_n, kv_n) ||
	      size_add(&bytes, bytes, r->weights_mode ? cells : 0) ||
	      size_add(&bytes, bytes, r->scores_view ? cells : 0) ||
	      size_mul(&bytes, bytes, sizeof(float) + 16) || size_add(&bytes, bytes, ws);
	j->bytes = bytes;
	if (bad || bytes > svc->limits.max_request_bytes)
		return api_fail(err, API_E_REQUEST_TOO_LARGE, "",
				"this request needs %s MB; the limit is %zu MB",
				bad ? "too many" : "more than the limit of",
				svc->limits.max_request_bytes >> 20);
	if (api_check_work(&svc->limits, sdpa_flops(j), sdpa_scores(j), err) != 0)
		return -1;
	j->present_k = malloc(j->B * j->Hkv * Lk * j->D * sizeof(float));
	j->present_v = malloc(j->B * j->Hkv * Lk * j->Dv * sizeof(float));
	j->out = malloc(out_n * sizeof(float));
	j->weights = r->weights_mode ? malloc(cells * sizeof(float)) : NULL;
	j->scores = r->scores_view ? malloc(cells * sizeof(float)) : NULL;
	j->ws = malloc(ws ? ws : 1);
	j->ws_bytes = ws;
	if (!j->present_k || !j->present_v || !j->out || (r->weights_mode && !j->weights) ||
	    (r->scores_view && !j->scores) || !j->ws)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	/* K and V attend as present = concat(past, new), [B, Hkv, Lk, D] */
	attn_kv_concat(j->present_k, j->past_k.data,
		       j->rank3 ? attn_cview_blhd(j->k.data, j->Hkv, j->S, j->D)
				: attn_cview_bhld(j->k.data, j->Hkv, j->S, j->D),
		       j->B, j->Hkv, j->P, j->S, j->D);
	attn_kv_concat(j->present_v, j->past_v.data,
		       j->rank3 ? attn_cview_blhd(j->v.data, j->Hkv, j->S, j->Dv)
				: attn_cview_bhld(j->v.data, j->Hkv, j->S, j->Dv),
		       j->B, j->Hkv, j->P, j->S, j->Dv);
	r->k.data = j->present_k;
	r->v.data = j->present_v;
	r->out.data = j->out;
	r->weights = j->weights;
	r->scores = j->scores;
	return 0;
}

static int encode(struct sdpa_job *j, double ms, struct buf *b)
{
	struct api_writer w = { b, j->encoding, j->precision };
	size_t Lk = j->P + j->S;
	size_t out4[4] = { j->B, j->H, j->Lq, j->Dv }, out3[3] = { j->B, j->Lq, j->H * j->Dv };
	size_t pk[4] = { j->B, j->Hkv, Lk, j->D }, pv[4] = { j->B, j->Hkv, Lk, j->Dv };
	size_t cells[4] = { j->B, j->H, j->Lq, Lk };
	size_t mean[3] = { j->B, j->Lq, Lk };

	const struct api_json_size shape[] = {
		{ "{\"shape\":{\"batch\":", j->B }, { ",\"num_heads\":", j->H },
		{ ",\"num_kv_heads\":", j->Hkv },	{ ",\"query_length\":", j->Lq },
		{ ",\"key_length\":", Lk },		{ ",\"head_dim\":", j->D },
		{ ",\"v_head_dim\":", j->Dv },
	};

	api_json_sizes(b, shape, sizeof shape / sizeof shape[0]);
	buf_puts(b, "},\"output\":");
	api_tensor_write(&w, j->out, j->rank3 ? 3 : 4, j->rank3 ? out3 : out4);
	if (j->past) {
		buf_puts(b, ",\"present_key\":");
		api_tensor_write(&w, j->present_k, 4, pk);
		buf_puts(b, ",\"present_value\":");
		api_tensor_write(&w, j->present_v, 4, pv);
	}
	if (j->req.weights_mode != ATTN_WEIGHTS_NONE) {
		buf_puts(b, ",\"weights\":");
		if (j->req.weights_mode == ATTN_WEIGHTS_MEAN)
			api_tensor_write(&w, j->weights, 3, mean);
		else
			api_tensor_write(&w, j->weights, 4, cells);
	}
	if (j->req.scores_view != ATTN_SCORES_NONE) {
		buf_puts(b, ",\"scores\":");
		api_tensor_write(&w, j->scores, 4, cells);
	}
	api_json_usage(b, sdpa_flops(j), ms);
	buf_putc(b, '}');
	return b->failed ? -1 : 0;
}

/* Small enough to answer on the I/O thread (service.h)? Decoded up to the
 * options: the engine's FLOPs and every number of the answer, counted. */
static int is_small(const struct sdpa_job *j)
{
	double Lk = (double)(j->P + j->S), cells = sdpa_scores(j);
	double floats = (double)j->B * (double)j->H * (double)j->Lq * (double)j->Dv;

	floats += j->req.weights_mode != ATTN_WEIGHTS_NONE ? cells : 0.0;
	floats += j->req.scores_view != ATTN_SCORES_NONE ? cells : 0.0;
	if (j->past) /* present_key and present_value */
		floats += (double)j->B * (double)j->Hkv * Lk * (double)(j->D + j->Dv);
	return sdpa_flops(j) <= API_SMALL_FLOPS && cells <= API_SMALL_CELLS &&
	       floats <= API_SMALL_FLOATS;
}

/* The engine call on `threads` (lent ones need scratch of their own: given
 * back when that would pass the memory limit), its workspace grown to fit. */
static int use_threads(const struct api_service *svc, const struct api_reply *reply,
		       struct sdpa_job *j, struct api_threads *threads, struct api_error *err)
{
	struct attn_error aerr;
	size_t ws = 0;
	void *grown;

	j->req.threads = threads->threads;
	j->req.workers = threads->workers;
	if (!threads->lent)
		return 0;
	if (attn_sdpa_workspace(&j->req, &ws, &aerr) != ATTN_OK)
		return api_engine_fail(err, &aerr, engine_fields, ENGINE_FIELDS);
	if (j->bytes - j->ws_bytes + ws > svc->limits.max_request_bytes) {
		api_give_back(svc, reply, threads);
		return use_threads(svc, reply, j, threads, err);
	}
	if (ws <= j->ws_bytes)
		return 0;
	grown = realloc(j->ws, ws);
	if (grown == NULL)
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	j->ws = grown;
	j->ws_bytes = ws;
	return 0;
}

void api_sdpa(const struct api_service *svc, const char *body, size_t len,
	      struct api_reply *reply)
{
	struct api_threads threads = api_own_threads(svc, reply);
	struct sdpa_job j;
	struct api_error err;
	struct attn_error aerr;
	struct timespec t0;
	enum attn_status st;

	memset(&j, 0, sizeof(j));
	if (reply->small_only && len > API_SMALL_BODY) {
		reply->declined = 1;
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	reply->model = "sdpa";
	if (req_parse_pooled(body, len, pooled_fields, svc->plain_json ? NULL : &j.numbers,
			     &j.root, &err) ||
	    req_known_fields(j.root, "", sdpa_fields, &err) ||
	    decode_qkv(&j, &err) || decode_past(&j, &err) || decode_mask(&j, &err) ||
	    decode_options(&j, &err))
		goto fail;
	if (reply->small_only && !is_small(&j)) {
		reply->declined = 1;
		sdpa_release(&j);
		return;
	}
	if (prepare(svc, reply, &j, &err))
		goto fail;
	reply->parse_ms = api_ms_since(&t0);
	threads = api_lend_threads(svc, reply, api_work(sdpa_flops(&j), sdpa_scores(&j)));
	if (use_threads(svc, reply, &j, &threads, &err) != 0) {
		api_give_back(svc, reply, &threads);
		goto fail;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	st = attn_sdpa_forward(&j.req, j.ws, j.ws_bytes, &aerr);
	api_give_back(svc, reply, &threads); /* right after the engine call */
	reply->compute_ms = api_ms_since(&t0); /* however it ended, as attention_run's */
	if (st != ATTN_OK) {
		api_engine_fail(&err, &aerr, engine_fields, ENGINE_FIELDS);
		goto fail;
	}
	reply->flops = sdpa_flops(&j);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (encode(&j, reply->compute_ms, &reply->body) != 0) {
		api_fail(&err, API_E_RESPONSE_TOO_LARGE, "", "the answer exceeds the response limit");
		goto fail;
	}
	reply->encode_ms = api_ms_since(&t0);
	reply->status = 200;
	sdpa_release(&j);
	return;
fail:
	api_reply_error(reply, &err);
	sdpa_release(&j);
}
