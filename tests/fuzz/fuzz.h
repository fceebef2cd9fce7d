/*
 * fuzz.h: the libFuzzer entry points every harness of tests/fuzz/ defines,
 * and the API services the request harnesses share.
 *
 * A harness is built twice: with clang -fsanitize=fuzzer (build-fuzz/fuzz/,
 * `make fuzz`), where libFuzzer supplies main, and with the project's compiler
 * beside replay.c (BUILD/tests/fuzz/replay_*, `make test`), whose main runs
 * the files of the seed corpus and the regressions once each.
 *
 * Ownership: fuzz_api_init builds services that live until the process exits
 * (libFuzzer has no teardown hook); fuzz_api_run frees everything it
 * allocates, so a leak inside one input is a leak report.
 */
#ifndef ATTN_FUZZ_H
#define ATTN_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "api/service.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Two services holding the built-in `tiny` model (E 8, H 2, vocab 64,
 * seed 42) as their default and three checkpoints of tests/data/checkpoints/
 * (bert_f32 with its tokenizer, llama_f32, gpt2_f16_noprefix; read relative
 * to the working directory, or under $ATTN_CHECKPOINTS), each a model named
 * after its folder, with small limits so that large requests are
 * refused fast: one reads number arrays through api/json/fastjson.h (as the
 * server does), the other with jansson alone (api_service_set_plain_json).
 * Exits on failure: a harness cannot run without them.
 */
void fuzz_api_init(void);

/*
 * One request of `route` with body[0 .. len) (api_handle_v2 with call when
 * call is not NULL). Aborts, so that libFuzzer reports the input, unless
 * each reply is complete (a status; an error code with a 4xx or 5xx) and all
 * are the same answer (status, error code and body, but the timing in a v1
 * answer's usage): the pooled service's, the jansson-only one's, and, for
 * v1 routes, the pooled service's with small_only unless it declined.
 */
void fuzz_api_run(enum api_route route, const struct api_v2_call *call, const uint8_t *body,
		  size_t len);

#endif
