/* fuzz_api.c: the services the request harnesses share (see fuzz.h). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "api/checkpoint_config.h"
#include "api/tokenizer_file.h"
#include "engine/checkpoint.h"
#include "engine/model.h"

/* Small limits: a request that needs more than a few MiB, or more than
 * 1 GFLOP of work (api_check_work: some 10 ms), is refused (422) before
 * anything is allocated or computed, so no input can run into -timeout or
 * -rss_limit_mb by asking for a large computation. (Memory alone did not
 * bound time: without weights, attention is O(L) in memory, O(L^2) in time.) */
enum {
	FUZZ_MAX_REQUEST = 4 << 20,
	FUZZ_MAX_RESPONSE = 1 << 20,
	FUZZ_MAX_INLINE_D_MODEL = 64,
	FUZZ_MAX_GFLOP = 1,
};

static struct api_service *fast, *plain;

/* The checkpoints of tests/data/checkpoints/ a service also holds, each as a
 * model named after its folder: bert (token types, a WordPiece
 * tokenizer.json), llama (GQA, RoPE) and gpt2 (F16, Conv1D weights). */
static const char *const checkpoints[] = { "bert_f32", "llama_f32", "gpt2_f16_noprefix" };

static void fail(const char *what, const char *msg)
{
	fprintf(stderr, "fuzz: %s: %s\n", what, msg);
	exit(1);
}

/* The bytes of dir/folder/name (malloc'd, NUL-terminated), or NULL when the
 * file is absent and may be (optional). */
static char *read_file(const char *dir, const char *folder, const char *name, size_t *len,
		       int optional)
{
	char path[1024];
	FILE *f;
	long n = 0;
	char *bytes = NULL;

	snprintf(path, sizeof path, "%s/%s/%s", dir, folder, name);
	f = fopen(path, "rb");
	if (f == NULL && optional)
		return NULL;
	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || (bytes = malloc((size_t)n + 1)) == NULL ||
	    fread(bytes, 1, (size_t)n, f) != (size_t)n)
		fail(path, "cannot read (run from the repository's root, or set "
			   "$ATTN_CHECKPOINTS)");
	fclose(f);
	bytes[n] = '\0';
	*len = (size_t)n;
	return bytes;
}

/* One folder as server/checkpoint_dir.c loads it, read instead of mapped:
 * the service keeps the safetensors bytes (released with the checkpoint). */
static void add_checkpoint(struct api_service *svc, const char *dir, const char *folder)
{
	struct attn_checkpoint_config cfg;
	struct attn_st_file file = { "model.safetensors", NULL, 0 };
	struct attn_checkpoint *ck = NULL;
	struct tokenizer *tok = NULL;
	struct attn_error aerr;
	struct api_error err;
	char msg[512];
	size_t len;
	char *config = read_file(dir, folder, "config.json", &len, 0);
	char *st, *tj;

	if (api_checkpoint_config(&cfg, config, len, "config.json", msg, sizeof msg) != 0)
		fail(folder, msg);
	free(config);
	st = read_file(dir, folder, "model.safetensors", &file.len, 0);
	file.bytes = (const uint8_t *)st;
	if (attn_checkpoint_load(&ck, &cfg, &file, 1, NULL, &aerr) != ATTN_OK)
		fail(folder, aerr.message);
	if (api_service_add_checkpoint(svc, folder, ck, cfg.model_type, free, st, "fuzz", &err) !=
	    0)
		fail(folder, err.message);
	tj = read_file(dir, folder, "tokenizer.json", &len, 1);
	if (tj == NULL)
		return;
	if (api_tokenizer_load_json(&tok, tj, len, "tokenizer.json", msg, sizeof msg) != 0)
		fail(folder, msg);
	free(tj);
	if (api_service_add_tokenizer(svc, folder, tok, "fuzz", &err) != 0 ||
	    api_service_set_model_tokenizer(svc, folder, folder, &err) != 0)
		fail(folder, err.message);
}

static struct api_service *service_new(int plain_json)
{
	const char *dir = getenv("ATTN_CHECKPOINTS");
	/* as registry.c's built-in `tiny` */
	const struct attn_model_config tiny = { 8, 2, 2, 0, 64 };
	const struct api_limits limits = { .max_request_bytes = FUZZ_MAX_REQUEST,
					   .max_response_bytes = FUZZ_MAX_RESPONSE,
					   .max_inline_d_model = FUZZ_MAX_INLINE_D_MODEL,
					   .engine_threads = 1,
					   .max_request_gflop = FUZZ_MAX_GFLOP };
	struct api_service *svc = api_service_new(&limits);
	struct attn_model *m = NULL;
	struct attn_error aerr;
	struct api_error err;

	if (svc == NULL || attn_model_new_seeded(&m, &tiny, 42, &aerr) != ATTN_OK ||
	    api_service_add_model(svc, "tiny", m, "seed:42", NULL, &err) != 0 ||
	    api_service_set_default(svc, "tiny", &err) != 0) {
		fprintf(stderr, "fuzz: cannot build a service with the tiny model\n");
		exit(1);
	}
	if (dir == NULL || dir[0] == '\0')
		dir = "tests/data/checkpoints";
	for (size_t i = 0; i < sizeof checkpoints / sizeof checkpoints[0]; i++)
		add_checkpoint(svc, dir, checkpoints[i]);
	api_service_set_plain_json(svc, plain_json);
	return svc;
}

void fuzz_api_init(void)
{
	openblas_set_num_threads(1);
	fast = service_new(0);
	plain = service_new(1);
}

/* small_only: ask for the server's inline answer (service.h), which a request
 * that is not small declines; returns 0 then, with the reply released. */
static int answer(const struct api_service *svc, enum api_route route,
		  const struct api_v2_call *call, const uint8_t *body, size_t len,
		  int small_only, struct api_reply *reply)
{
	api_reply_init(reply, FUZZ_MAX_RESPONSE);
	reply->small_only = small_only;
	if (call != NULL)
		api_handle_v2(svc, route, call, (const char *)body, len, reply);
	else
		api_handle(svc, route, NULL, (const char *)body, len, reply);
	if (small_only && reply->declined) {
		api_reply_release(reply);
		return 0;
	}
	/* service.h: always a complete reply, a 2xx or an error body */
	if (reply->status < 200 || reply->status > 599 || reply->body.len == 0 ||
	    (reply->status >= 400 && reply->error_code == NULL))
		abort();
	return 1;
}

/* The bytes of a reply's body to compare: a v1 answer without its usage
 * (always last, with the request's milliseconds). */
static size_t compared_len(const struct api_reply *r, int v1)
{
	static const char usage[] = ",\"usage\":";
	const char *p = r->body.data, *end = p + r->body.len;

	if (!v1 || r->status != 200 || r->body.len < sizeof(usage) - 1)
		return r->body.len;
	for (const char *q = end - (sizeof(usage) - 1); q >= p; q--)
		if (memcmp(q, usage, sizeof(usage) - 1) == 0)
			return (size_t)(q - p);
	return r->body.len;
}

/* Aborts unless a and b are the same answer (what names how b was made). */
static void same(const struct api_reply *a, const struct api_reply *b, int v1, const char *what)
{
	size_t na = compared_len(a, v1), nb = compared_len(b, v1);

	if (a->status == b->status && (a->error_code == NULL) == (b->error_code == NULL) &&
	    (a->error_code == NULL || strcmp(a->error_code, b->error_code) == 0) && na == nb &&
	    memcmp(a->body.data, b->body.data, na) == 0)
		return;
	fprintf(stderr, "fuzz: the answer differs %s:\n%d %.*s\n%d %.*s\n", what, a->status,
		(int)a->body.len, a->body.data, b->status, (int)b->body.len, b->body.data);
	abort();
}

void fuzz_api_run(enum api_route route, const struct api_v2_call *call, const uint8_t *body,
		  size_t len)
{
	struct api_reply a, b;
	int v1 = call == NULL;

	answer(fast, route, call, body, len, 0, &a);
	answer(plain, route, call, body, len, 0, &b);
	same(&a, &b, v1, "with jansson alone (api_service_set_plain_json)");
	api_reply_release(&b);
	if (v1 && answer(fast, route, call, body, len, 1, &b)) {
		same(&a, &b, v1, "when answered as a small request (small_only)");
		api_reply_release(&b);
	}
	api_reply_release(&a);
}
