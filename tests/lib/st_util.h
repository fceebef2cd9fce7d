/*
 * st_util.h: safetensors files built in C for the check_safetensors_* suites.
 *
 * Ownership: every st_*_file function returns a new buffer malloc'd at exactly
 * *len bytes (so a read past its end is an ASan or valgrind error), which the
 * caller frees; the st_load_* functions borrow their inputs and load a private
 * exact-length copy. Failures inside a helper are Check assertions.
 * Every name here starts with st_ / ST_: the Makefile links this file into
 * every test binary.
 */
#ifndef ATTN_TESTS_ST_UTIL_H
#define ATTN_TESTS_ST_UTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "engine/model.h"
#include "engine/safetensors.h"

/* One tensor of a file built here: shape outermost first. */
struct st_spec {
	const char *name;
	const char *dtype;
	size_t rank;
	size_t dims[3];
};

/* E = 4, H = 2: a PyTorch MultiheadAttention state_dict. */
#define ST_N_MHA 4
extern const struct st_spec st_mha_small[ST_N_MHA];

/* E = 8, H = 4, Hkv = 2, D = 2: Llama names, Qwen2-like biases, an embedding
 * (the last entry, "embed_tokens.weight" [5, 8]). */
#define ST_N_LLAMA 8
extern const struct st_spec st_llama_small[ST_N_LLAMA];

/* Bytes per element of dtype: 4 for F32, 2 for F16 / BF16, 8 for I64 / F64, else 1. */
size_t st_dtype_size(const char *dtype);

/* Element i of tensor t: a multiple of 1/8 in [-1, 1], exact in F32, F16, BF16. */
float st_tvalue(size_t t, size_t i);

/* 8-byte little-endian header length, header, data: malloc'd at exactly *len. */
uint8_t *st_raw_file(uint64_t header_len, const char *header, size_t hlen, const uint8_t *data,
		     size_t dlen, size_t *len);

/* A file from a header string and dlen zero bytes of data. */
uint8_t *st_header_file(const char *header, size_t hlen, size_t dlen, size_t *len);

/*
 * A file holding specs back to back in spec order, element i of tensor t set
 * to st_tvalue(t, i), the header padded with spaces to a multiple of 8. extra,
 * if not NULL, is spliced in as further header members. offs[t] receives
 * tensor t's absolute byte offset when offs is not NULL.
 */
uint8_t *st_make_file(const struct st_spec *s, size_t n, const char *extra, size_t *len,
		      size_t *offs);

/*
 * Loads a private exact-length copy of file[0, len) (len may be 0) with opts.
 * On failure asserts that *m is NULL and err holds the status and a message.
 */
enum attn_status st_load_opts(const uint8_t *file, size_t len,
			      const struct attn_safetensors_options *opts, struct attn_model **m,
			      struct attn_error *err);

/* st_load_opts with num_heads H and prefix (or NULL). */
enum attn_status st_load_bytes(const uint8_t *file, size_t len, size_t H, const char *prefix,
			       struct attn_model **m, struct attn_error *err);

/* st_load_bytes on a file built from specs by st_make_file. */
enum attn_status st_load_specs(const struct st_spec *s, size_t n, size_t H, const char *prefix,
			       struct attn_model **m, struct attn_error *err);

/* Asserts a failure with status st whose message holds want. */
#define st_assert_fails(got, err, st, want)                                                        \
	do {                                                                                       \
		ck_assert_msg((got) == (st), "status %s, want %s: %s", attn_status_str(got),       \
			      attn_status_str(st), (err).message);                                 \
		ck_assert_msg(strstr((err).message, (want)) != NULL, "message '%s' lacks '%s'",    \
			      (err).message, (want));                                              \
	} while (0)

#endif
