/*
 * tokenizer_file.h: a tokenizer's files read into a spec (tokenizer/spec.h)
 * and built: a Hugging Face tokenizer.json, or a GPT-2 style vocab.json with
 * its merges.txt. No I/O: the caller (server/) reads the files and passes
 * their bytes.
 *
 * Every message starts with the file's name and, where it can, the JSON
 * pointer (RFC 6901) of the value at fault, e.g.
 *   "tok.json: /pre_tokenizer/pretokenizers/1: unsupported pre-tokenizer type
 *    'UnicodeScripts'"
 *   "merges.txt:7: expected two pieces separated by one space"
 * A component of an unknown "type" is refused by name, never skipped. Keys a
 * component does not use (ByteLevel's trim_offsets, Metaspace's str_rep) are
 * ignored, as Hugging Face's own reader ignores them.
 *
 * Ownership: the readers borrow their input and fill a spec the caller owns
 * (tok_spec_release it, or give it to tok_build); on failure the spec is
 * released and zeroed. The loaders return a tokenizer the caller tok_free()s.
 */
#ifndef API_TOKENIZER_FILE_H
#define API_TOKENIZER_FILE_H

#include <stddef.h>

#include "tokenizer/spec.h"

struct tokenizer;

/* The largest file either reader takes (Gemma 3's tokenizer.json is 33 MB). */
#define API_TOKENIZER_FILE_MAX ((size_t)256 << 20)

/*
 * Reads the len bytes of a tokenizer.json named `file` (for messages) into
 * spec. Returns 0, or -1 with spec zeroed and the message in err.
 */
int api_tokenizer_spec_json(struct tok_spec *spec, const char *bytes, size_t len,
			    const char *file, char *err, size_t errlen);

/*
 * Reads a GPT-2 style pair into spec: vocab.json ({"piece": id}) and
 * merges.txt (one "left right" a line by rank; a first line starting
 * "#version" and blank lines are skipped), as GPT-2's pipeline: no
 * normalizer, ByteLevel pre-tokenizer with its regex and no prefix space,
 * BPE without an unknown token, ByteLevel post-processor (offsets not
 * trimmed) and decoder, and "<|endoftext|>" as a special added token when
 * the vocabulary has it. Returns 0, or -1 with spec zeroed and the message.
 */
int api_tokenizer_spec_gpt2(struct tok_spec *spec, const char *vocab, size_t vocab_len,
			    const char *vocab_file, const char *merges, size_t merges_len,
			    const char *merges_file, char *err, size_t errlen);

/*
 * tok_build(spec), its message prefixed with `file` ("tok.json: model:
 * merges[12]: ..."). Takes the spec over, as tok_build does. A caller that
 * holds a large file frees its bytes between reading the spec and this.
 */
int api_tokenizer_build(struct tok_spec *spec, const char *file, struct tokenizer **out,
			char *err, size_t errlen);

/*
 * The two readers followed by api_tokenizer_build. Return 0 with *out set (tok_free it),
 * or -1 with *out NULL and the message in err, tok_build's prefixed with the
 * file's name ("tok.json: model: merges[12]: ...").
 */
int api_tokenizer_load_json(struct tokenizer **out, const char *bytes, size_t len,
			    const char *file, char *err, size_t errlen);
int api_tokenizer_load_gpt2(struct tokenizer **out, const char *vocab, size_t vocab_len,
			    const char *vocab_file, const char *merges, size_t merges_len,
			    const char *merges_file, char *err, size_t errlen);

#endif
