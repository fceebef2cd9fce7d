/*
 * vocab.h: a vocabulary file (--model ...,vocab=FILE) parsed into token
 * strings by id, for api_service_add_model's `vocab`.
 *
 * Two formats, told apart by the file's first byte that is not ASCII
 * whitespace:
 *   '{'    a JSON object {"token": id, ...} (Hugging Face's vocab.json):
 *          every id an integer in [0, rows), each used exactly once;
 *   other  UTF-8 text, one token per line, line n (0-based) = id n; lines end
 *          in "\n" or "\r\n" (the last may have none); a token is the whole
 *          line, spaces included.
 * Either way there are exactly `rows` tokens (the rows of the model's
 * embedding table, which ids index), none empty, none twice, none holding a
 * NUL byte, and the file is at most API_VOCAB_FILE_MAX bytes.
 *
 * Ownership: api_vocab_parse borrows its input and fills a struct api_vocab
 * that owns its tokens; api_vocab_release frees them and accepts a zeroed or
 * released vocabulary. No I/O: the caller reads the file.
 */
#ifndef API_VOCAB_H
#define API_VOCAB_H

#include <stddef.h>

#define API_VOCAB_FILE_MAX ((size_t)64 << 20) /* 64 MiB */

struct api_vocab {
	char **tokens; /* [n] NUL-terminated UTF-8, tokens[id]; pointers into store */
	size_t n;
	char *store; /* the token bytes, each followed by a NUL */
};

/*
 * Parses the len bytes of a vocabulary file for an embedding table of `rows`
 * rows. `file` names the file in messages. Returns 0 with v filled (release it
 * with api_vocab_release), or -1 with v zeroed (nothing to release) and a
 * message in err that starts with the file name and, where it can, names the
 * line ("FILE:LINE: ...") or the token. Line numbers in messages are 1-based,
 * as editors count; ids are 0-based.
 */
int api_vocab_parse(struct api_vocab *v, const char *bytes, size_t len, size_t rows,
		    const char *file, char *err, size_t errlen);

/* Frees what v owns and zeroes it; v may be zeroed or released already. */
void api_vocab_release(struct api_vocab *v);

#endif
