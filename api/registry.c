/* registry.c: named models, their vocabularies, the built-ins (see registry.h). */
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/json_write.h"
#include "common/jsonstr.h"
#include "engine/checkpoint.h"
#include "tokenizer/tokenizer.h"

uint64_t registry_fnv1a(const char *s, size_t len)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

static void checkpoint_release(struct api_checkpoint *c)
{
	if (c == NULL)
		return;
	attn_checkpoint_free(c->ck);
	if (c->release)
		c->release(c->keep);
	free(c);
}

static void entry_release(struct api_model_entry *e)
{
	checkpoint_release(e->ckpt);
	if (e->vocab && e->model)
		for (size_t i = 0; i < e->model->vocab; i++)
			free(e->vocab[i]);
	free(e->vocab);
	free(e->vocab_idx);
	attn_model_free(e->model);
	memset(e, 0, sizeof(*e));
}

struct api_service *api_service_new(const struct api_limits *limits)
{
	struct api_service *svc = calloc(1, sizeof(*svc));

	if (svc != NULL)
		svc->limits = *limits;
	return svc;
}

void api_service_set_plain_json(struct api_service *svc, int plain)
{
	svc->plain_json = plain;
}

void api_service_free(struct api_service *svc)
{
	if (svc == NULL)
		return;
	for (size_t i = 0; i < svc->n_models; i++)
		entry_release(&svc->models[i]);
	free(svc->models);
	for (size_t i = 0; i < svc->n_tokenizers; i++)
		tok_free(svc->tokenizers[i].tok);
	free(svc->tokenizers);
	free(svc);
}

size_t api_service_model_count(const struct api_service *svc)
{
	return svc->n_models;
}

const struct api_model_entry *registry_find(const struct api_service *svc, const char *name)
{
	for (size_t i = 0; i < svc->n_models; i++)
		if (strcmp(svc->models[i].name, name) == 0)
			return &svc->models[i];
	return NULL;
}

const struct api_tokenizer_entry *registry_find_tokenizer(const struct api_service *svc,
							  const char *name)
{
	for (size_t i = 0; i < svc->n_tokenizers; i++)
		if (strcmp(svc->tokenizers[i].name, name) == 0)
			return &svc->tokenizers[i];
	return NULL;
}

static int valid_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return 0;
	}
	return 1;
}

/* Copies the vocabulary and indexes it in an open-addressing table. */
static int index_vocab(struct api_model_entry *e, const char *const *vocab)
{
	size_t V = e->model->vocab, slots = 16;

	while (slots < 2 * V)
		slots *= 2;
	e->vocab = calloc(V, sizeof(char *));
	e->vocab_idx = calloc(slots, sizeof(uint32_t));
	if (e->vocab == NULL || e->vocab_idx == NULL)
		return -1;
	e->vocab_slots = slots;
	for (size_t id = 0; id < V; id++) {
		size_t len = strlen(vocab[id]), h;

		e->vocab[id] = malloc(len + 1);
		if (e->vocab[id] == NULL)
			return -1;
		memcpy(e->vocab[id], vocab[id], len + 1);
		h = (size_t)registry_fnv1a(vocab[id], len) & (slots - 1);
		while (e->vocab_idx[h] != 0)
			h = (h + 1) & (slots - 1);
		e->vocab_idx[h] = (uint32_t)id + 1;
	}
	return 0;
}

int64_t registry_token_id(const struct api_model_entry *e, const char *token, size_t len)
{
	size_t h;

	if (e->vocab_idx == NULL)
		return (int64_t)(registry_fnv1a(token, len) % e->model->vocab);
	h = (size_t)registry_fnv1a(token, len) & (e->vocab_slots - 1);
	while (e->vocab_idx[h] != 0) {
		const char *cand = e->vocab[e->vocab_idx[h] - 1];

		if (strlen(cand) == len && memcmp(cand, token, len) == 0)
			return (int64_t)e->vocab_idx[h] - 1;
		h = (h + 1) & (e->vocab_slots - 1);
	}
	return -1;
}

/* Names a model may not take, as they mean something else where model names
 * are shown: answers name a request's own model "inline"; the metrics'
 * model label says "none" for requests of no loaded model and "sdpa" for
 * /v1/sdpa's (server/metrics.c). Its "other", past 64 names, stays a name a
 * model may have (docs/mini-model.md loads one so): a model named so takes
 * that count into its own. */
static int reserved_name(const char *name, struct api_error *err)
{
	static const struct {
		const char *name, *why;
	} reserved[] = {
	    {API_INLINE_MODEL, "for a model given in the request"},
	    {"none", "as the metrics' label of requests of no loaded model"},
	    {"sdpa", "as the metrics' label of /v1/sdpa's requests"},
	};

	for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
		if (strcmp(name, reserved[i].name) == 0)
			return api_fail(err, API_E_INVALID_MODEL_NAME, "",
					"model name '%s' is reserved, %s", name, reserved[i].why);
	return 0;
}

int api_service_add_model(struct api_service *svc, const char *name, struct attn_model *model,
			  const char *source, const char *const *vocab, struct api_error *err)
{
	struct api_model_entry *e;

	if (!valid_name(name) || registry_find(svc, name) != NULL) {
		attn_model_free(model);
		return api_fail(err, API_E_INVALID_MODEL_NAME, "",
				"model name '%s' is invalid or taken (1-64 of [A-Za-z0-9_.-])", name);
	}
	if (reserved_name(name, err) != 0) {
		attn_model_free(model);
		return -1;
	}
	if (vocab != NULL && model->vocab == 0) {
		attn_model_free(model);
		return api_fail(err, API_E_INVALID_MODEL, "", "a vocabulary needs an embedding table");
	}
	if (svc->n_models == svc->cap_models) {
		size_t cap = svc->cap_models ? 2 * svc->cap_models : 4;
		struct api_model_entry *grown = realloc(svc->models, cap * sizeof(*grown));

		if (grown == NULL) {
			attn_model_free(model);
			return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
		}
		svc->models = grown;
		svc->cap_models = cap;
	}
	e = &svc->models[svc->n_models];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->source, sizeof(e->source), "%s", source ? source : "");
	e->model = model;
	if (vocab != NULL && index_vocab(e, vocab) != 0) {
		entry_release(e);
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory for the vocabulary");
	}
	svc->n_models++;
	return 0;
}

/* The shape of a checkpoint's layers as a weightless struct attn_model, for
 * what every model answers alike (token ids, d_model, heads). */
static struct attn_model *shape_of(const struct attn_stack *st)
{
	struct attn_model *m = calloc(1, sizeof(*m));

	if (m == NULL)
		return NULL;
	m->E = st->E;
	m->H = st->H;
	m->Hkv = st->Hkv;
	m->D = st->D;
	m->vocab = st->vocab;
	m->source = ATTN_SOURCE_SAFETENSORS;
	return m;
}

int api_service_add_checkpoint(struct api_service *svc, const char *name,
			       struct attn_checkpoint *ck, const char *model_type,
			       void (*release)(void *keep), void *keep, const char *source,
			       struct api_error *err)
{
	struct api_checkpoint *c = calloc(1, sizeof(*c));
	struct attn_model *shape = ck ? shape_of(&ck->stack) : NULL;

	if (c == NULL || shape == NULL) {
		free(c);
		attn_checkpoint_free(ck);
		if (release)
			release(keep);
		return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
	}
	c->ck = ck;
	snprintf(c->model_type, sizeof(c->model_type), "%s", model_type);
	c->release = release;
	c->keep = keep;
	if (api_service_add_model(svc, name, shape, source, NULL, err) != 0) {
		checkpoint_release(c);
		return -1;
	}
	svc->models[svc->n_models - 1].ckpt = c;
	return 0;
}

int api_service_add_tokenizer(struct api_service *svc, const char *name, struct tokenizer *tok,
			      const char *source, struct api_error *err)
{
	struct api_tokenizer_entry *t;

	if (!valid_name(name) || registry_find_tokenizer(svc, name) != NULL) {
		tok_free(tok);
		return api_fail(err, API_E_INVALID_MODEL_NAME, "",
				"tokenizer name '%s' is invalid or taken (1-64 of [A-Za-z0-9_.-])",
				name);
	}
	if (svc->n_tokenizers == svc->cap_tokenizers) {
		size_t cap = svc->cap_tokenizers ? 2 * svc->cap_tokenizers : 4;
		struct api_tokenizer_entry *grown = realloc(svc->tokenizers, cap * sizeof(*grown));

		if (grown == NULL) {
			tok_free(tok);
			return api_fail(err, API_E_OUT_OF_MEMORY, "", "out of memory");
		}
		svc->tokenizers = grown;
		svc->cap_tokenizers = cap;
	}
	t = &svc->tokenizers[svc->n_tokenizers++];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", name);
	snprintf(t->source, sizeof(t->source), "%s", source ? source : "");
	t->tok = tok;
	return 0;
}

int api_service_set_model_tokenizer(struct api_service *svc, const char *model,
				    const char *tokenizer, struct api_error *err)
{
	const struct api_model_entry *found = registry_find(svc, model);
	const struct api_tokenizer_entry *t = registry_find_tokenizer(svc, tokenizer);
	struct api_model_entry *e;

	if (found == NULL)
		return api_fail(err, API_E_MODEL_NOT_FOUND, "", "no model named '%s'", model);
	if (t == NULL)
		return api_fail(err, API_E_TOKENIZER_NOT_FOUND, "", "no tokenizer named '%s'",
				tokenizer);
	e = &svc->models[found - svc->models];
	e->tok = t->tok;
	snprintf(e->tokenizer, sizeof(e->tokenizer), "%s", t->name);
	return 0;
}

int api_service_set_default(struct api_service *svc, const char *name, struct api_error *err)
{
	const struct api_model_entry *e = registry_find(svc, name);

	if (e == NULL)
		return api_fail(err, API_E_MODEL_NOT_FOUND, "/model", "no model named '%s'", name);
	svc->default_model = (size_t)(e - svc->models);
	return 0;
}

/* Built-in seeded layers: `base` at a real model's scale, `tiny` at the seeds'. */
static const struct builtin {
	const char *name;
	struct attn_model_config cfg;
	uint64_t seed;
} builtins[] = {
	{ "base", { 512, 8, 8, 1, 32000 }, 1 },
	{ "tiny", { 8, 2, 2, 0, 64 }, 42 },
};

int api_service_add_builtins(struct api_service *svc, struct api_error *err)
{
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
		const struct builtin *b = &builtins[i];
		struct attn_model *m;
		struct attn_error aerr;
		char source[64];

		if (attn_model_new_seeded(&m, &b->cfg, b->seed, &aerr) != ATTN_OK)
			return api_fail(err, API_E_OUT_OF_MEMORY, "", "built-in model %s: %s",
					b->name, aerr.message);
		snprintf(source, sizeof(source), "seed:%llu", (unsigned long long)b->seed);
		if (api_service_add_model(svc, b->name, m, source, NULL, err) != 0)
			return -1;
	}
	return api_service_set_default(svc, "base", err);
}

/* A sliding window: its width and the layers it applies to (the others see
 * every earlier key: Qwen2's full_attention layers). */
static void describe_window(const struct attn_stack *st, struct buf *out)
{
	int first = 1;

	if (st->window == 0)
		return;
	buf_printf(out, ",\"sliding_window\":%zu,\"sliding_layers\":[", st->window);
	for (size_t l = 0; l < st->n_layers; l++) {
		if (st->blocks[l].full_attention)
			continue;
		buf_printf(out, first ? "%zu" : ",%zu", l);
		first = 0;
	}
	buf_putc(out, ']');
}

/* A checkpoint's own fields: what it is, how deep, how long, how big. */
static void describe_checkpoint(const struct api_checkpoint *c, struct buf *out)
{
	const struct attn_stack *st = &c->ck->stack;
	const struct api_json_size sizes[] = {
		{ ",\"num_layers\":", st->n_layers },
		{ ",\"intermediate_size\":", st->F },
		{ ",\"context_length\":", attn_stack_context(st) },
		{ ",\"weight_bytes\":", c->ck->weight_bytes },
		{ ",\"resident_bytes\":", c->ck->owned_bytes },
	};

	buf_puts(out, ",\"kind\":\"checkpoint\",\"family\":");
	jsonstr_put(out, c->model_type);
	api_json_sizes(out, sizes, sizeof sizes / sizeof sizes[0]);
	buf_puts(out, ",\"dtype\":");
	jsonstr_put(out, c->ck->dtype);
	buf_puts(out, st->family == ATTN_FAMILY_BERT ? ",\"causal\":false" : ",\"causal\":true");
	describe_window(st, out);
}

void registry_describe(const struct api_service *svc, const struct api_model_entry *e,
		       struct buf *out)
{
	const struct attn_model *m = e->model;
	const struct api_json_size sizes[] = {
		{ ",\"d_model\":", m->E },	     { ",\"num_heads\":", m->H },
		{ ",\"num_kv_heads\":", m->Hkv }, { ",\"head_dim\":", m->D },
		{ ",\"vocab_size\":", m->vocab },
	};

	buf_puts(out, "{\"name\":");
	jsonstr_put(out, e->name);
	api_json_sizes(out, sizes, sizeof sizes / sizeof sizes[0]);
	if (e->ckpt != NULL)
		describe_checkpoint(e->ckpt, out);
	buf_puts(out, m->b_qkv || (e->ckpt && e->ckpt->ck->stack.blocks[0].qkv[0].b)
			      ? ",\"bias\":true"
			      : ",\"bias\":false");
	buf_puts(out, e->vocab ? ",\"has_vocabulary\":true" : ",\"has_vocabulary\":false");
	buf_puts(out, ",\"tokenizer\":");
	if (e->tok != NULL)
		jsonstr_put(out, e->tokenizer);
	else
		buf_puts(out, "null");
	buf_puts(out, ",\"source\":");
	jsonstr_put(out, e->source);
	buf_puts(out, e == &svc->models[svc->default_model] ? ",\"default\":true}"
							     : ",\"default\":false}");
}

void registry_describe_tokenizer(const struct api_service *svc,
				 const struct api_tokenizer_entry *t, struct buf *out)
{
	int first = 1;

	buf_puts(out, "{\"name\":");
	jsonstr_put(out, t->name);
	buf_puts(out, ",\"source\":");
	jsonstr_put(out, t->source);
	buf_puts(out, ",\"vocab_size\":");
	buf_put_u64(out, (unsigned long long)tok_vocab_end(t->tok));
	buf_puts(out, ",\"models\":[");
	for (size_t i = 0; i < svc->n_models; i++) {
		if (svc->models[i].tok != t->tok)
			continue;
		if (!first)
			buf_putc(out, ',');
		jsonstr_put(out, svc->models[i].name);
		first = 0;
	}
	buf_puts(out, "]}");
}
