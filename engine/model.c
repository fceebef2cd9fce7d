/* model.c: construction, seeded initialisation and lookup of layer weights. */
#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "prng.h"
#include "sizes.h"

enum attn_status attn_model_config_check(const struct attn_model_config *cfg, size_t *D,
					 struct attn_error *err)
{
	size_t Hkv = cfg->Hkv ? cfg->Hkv : cfg->H;
	size_t rows, n;

	if (cfg->E == 0)
		return attn_fail(err, ATTN_ERR_DIMENSION, "d_model", 0, "d_model must be positive");
	if (cfg->H == 0)
		return attn_fail(err, ATTN_ERR_DIMENSION, "num_heads", 0,
				 "num_heads must be positive");
	if (cfg->E % cfg->H != 0)
		return attn_fail(err, ATTN_ERR_HEADS, "num_heads", 0,
				 "d_model %zu is not divisible by num_heads %zu", cfg->E, cfg->H);
	if (cfg->H % Hkv != 0)
		return attn_fail(err, ATTN_ERR_KV_HEADS, "num_kv_heads", 0,
				 "num_heads %zu is not divisible by num_kv_heads %zu", cfg->H, Hkv);
	*D = cfg->E / cfg->H;
	if (size_mul(&rows, cfg->H + 2 * Hkv, *D) != 0 || size_mul(&n, rows, cfg->E) != 0 ||
	    size_mul(&n, n, sizeof(float)) != 0 || !size_fits_int(rows) ||
	    !size_fits_int(cfg->E))
		return attn_fail(err, ATTN_ERR_OVERFLOW, "d_model", 0,
				 "model of d_model %zu is too large", cfg->E);
	if (cfg->vocab && (size_mul(&n, cfg->vocab, cfg->E) != 0 ||
			   size_mul(&n, n, sizeof(float)) != 0))
		return attn_fail(err, ATTN_ERR_OVERFLOW, "vocab", 0,
				 "embedding table of %zu x %zu is too large", cfg->vocab, cfg->E);
	return ATTN_OK;
}

void attn_model_free(struct attn_model *model)
{
	if (model == NULL)
		return;
	free(model->w_qkv);
	free(model->b_qkv);
	free(model->w_o);
	free(model->b_o);
	free(model->embed);
	free(model);
}

static float *zeros(size_t a, size_t b)
{
	return calloc(a * b, sizeof(float)); /* a * b checked by the config check */
}

enum attn_status attn_model_alloc(struct attn_model **out, const struct attn_model_config *cfg,
				  struct attn_error *err)
{
	struct attn_model *m;
	enum attn_status st;
	size_t D, rows;

	*out = NULL;
	st = attn_model_config_check(cfg, &D, err);
	if (st != ATTN_OK)
		return st;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return attn_fail(err, ATTN_ERR_NOMEM, NULL, 0, "out of memory for the model");
	m->E = cfg->E;
	m->H = cfg->H;
	m->Hkv = cfg->Hkv ? cfg->Hkv : cfg->H;
	m->D = D;
	m->vocab = cfg->vocab;
	rows = (m->H + 2 * m->Hkv) * D;
	m->w_qkv = zeros(rows, m->E);
	m->w_o = zeros(m->E, m->H * D);
	if (cfg->bias) {
		m->b_qkv = zeros(rows, 1);
		m->b_o = zeros(m->E, 1);
	}
	if (cfg->vocab)
		m->embed = zeros(cfg->vocab, m->E);
	if (m->w_qkv == NULL || m->w_o == NULL || (cfg->bias && (!m->b_qkv || !m->b_o)) ||
	    (cfg->vocab && m->embed == NULL)) {
		attn_model_free(m);
		return attn_fail(err, ATTN_ERR_NOMEM, NULL, 0, "out of memory for the model");
	}
	*out = m;
	return ATTN_OK;
}

static void fill_uniform(float *x, size_t n, double bound, struct attn_prng *g)
{
	for (size_t i = 0; i < n; i++)
		x[i] = attn_prng_symmetric(g, bound);
}

enum attn_status attn_model_new_seeded(struct attn_model **out,
				       const struct attn_model_config *cfg, uint64_t seed,
				       struct attn_error *err)
{
	struct attn_prng g;
	enum attn_status st;
	struct attn_model *m;
	size_t rows;

	st = attn_model_alloc(&m, cfg, err);
	if (st != ATTN_OK)
		return st;
	attn_prng_seed(&g, seed);
	rows = (m->H + 2 * m->Hkv) * m->D;
	/* xavier_uniform_ on the packed matrix: fan_in E, fan_out rows. */
	fill_uniform(m->w_qkv, rows * m->E, sqrt(6.0 / (double)(m->E + rows)), &g);
	/* nn.Linear: kaiming_uniform_(a = sqrt(5)) gives bound 1 / sqrt(fan_in). */
	fill_uniform(m->w_o, m->E * m->H * m->D, 1.0 / sqrt((double)(m->H * m->D)), &g);
	for (size_t i = 0; i < m->vocab * m->E; i++)
		m->embed[i] = (float)attn_prng_normal(&g);
	m->source = ATTN_SOURCE_SEED;
	m->seed = seed;
	*out = m;
	return ATTN_OK;
}

static enum attn_status copy_finite(float *dst, const float *src, size_t n, const char *field,
				    struct attn_error *err)
{
	enum attn_status st = attn_check_finite(src, n, field, err);

	if (st == ATTN_OK)
		memcpy(dst, src, n * sizeof(float));
	return st;
}

enum attn_status attn_model_new_explicit(struct attn_model **out,
					 const struct attn_model_config *cfg,
					 const float *w_qkv, const float *b_qkv,
					 const float *w_o, const float *b_o,
					 const float *embed, struct attn_error *err)
{
	struct attn_model_config c = *cfg;
	enum attn_status st;
	struct attn_model *m;
	size_t rows;

	*out = NULL;
	if (w_qkv == NULL || w_o == NULL || (b_qkv == NULL) != (b_o == NULL) ||
	    (embed == NULL) != (cfg->vocab == 0))
		return attn_fail(err, ATTN_ERR_ARGUMENT, "weights", 0,
				 "w_qkv and w_o are required; biases come together; "
				 "embed goes with vocab");
	c.bias = b_qkv != NULL;
	st = attn_model_alloc(&m, &c, err);
	if (st != ATTN_OK)
		return st;
	rows = (m->H + 2 * m->Hkv) * m->D;
	st = copy_finite(m->w_qkv, w_qkv, rows * m->E, "in_proj_weight", err);
	if (st == ATTN_OK)
		st = copy_finite(m->w_o, w_o, m->E * m->H * m->D, "out_proj.weight", err);
	if (st == ATTN_OK && b_qkv)
		st = copy_finite(m->b_qkv, b_qkv, rows, "in_proj_bias", err);
	if (st == ATTN_OK && b_o)
		st = copy_finite(m->b_o, b_o, m->E, "out_proj.bias", err);
	if (st == ATTN_OK && embed)
		st = copy_finite(m->embed, embed, m->vocab * m->E, "embed_tokens.weight", err);
	if (st != ATTN_OK) {
		attn_model_free(m);
		return st;
	}
	m->source = ATTN_SOURCE_EXPLICIT;
	*out = m;
	return ATTN_OK;
}

enum attn_status attn_model_embed(const struct attn_model *model, float *out, const int64_t *ids,
				  size_t n, struct attn_error *err)
{
	if (model->embed == NULL)
		return attn_fail(err, ATTN_ERR_ARGUMENT, "tokens", 0,
				 "the model has no token embedding table");
	for (size_t t = 0; t < n; t++) {
		if (ids[t] < 0 || (uint64_t)ids[t] >= model->vocab)
			return attn_fail(err, ATTN_ERR_TOKEN, "tokens", t,
					 "token id %lld at %zu is outside [0, %zu)",
					 (long long)ids[t], t, model->vocab);
	}
	for (size_t t = 0; t < n; t++)
		memcpy(out + t * model->E, model->embed + (size_t)ids[t] * model->E,
		       model->E * sizeof(float));
	return ATTN_OK;
}
