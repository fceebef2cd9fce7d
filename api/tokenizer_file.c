/*
 * tokenizer_file.c: tokenizer.json (and GPT-2's vocab.json + merges.txt)
 * into a struct tok_spec (see tokenizer_file.h): the whole file, GPT-2's
 * pair, and building.
 *
 * The reader walks jansson's tree once, one function per part of the
 * pipeline: the model's in tokenizer_model.c, the other parts' in
 * tokenizer_parts.c. A struct rd (tokenizer_reader.c) carries the JSON
 * pointer of the value being read, so that any failure names it.
 *
 * Memory and time: jansson's tree of a large vocabulary (Llama 3: 128k
 * pieces, 280k merges) costs more than the spec made from it, and most of the
 * time a load may take. So the model's vocabulary and merges are read first,
 * straight from the bytes (tokenizer_vocab.c), and jansson reads the rest of
 * the file with those two members fed to it as `{}` and `[]`, every other byte
 * (newlines too, for its line numbers) as it was. The tree is gone before
 * tok_build runs.
 *
 * Values that matter to the result are checked here, with their pointer;
 * what only the built tokenizer can judge (a merge whose pieces are not in
 * the vocabulary, a regex that does not compile) is tok_build's to refuse.
 *
 * Ownership: the readers borrow their input and fill a spec the caller owns;
 * on failure they release it (tok_spec_release) and leave it zeroed.
 */
#include "tokenizer_file.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_model.h"
#include "tokenizer_parts.h"
#include "tokenizer_reader.h"
#include "tokenizer_vocab.h"

/* ---- the whole file -------------------------------------------------------- */

/* An optional part at member `key`: absent or null -> *out stays NULL; else
 * a new part of `size` bytes read by `one`. *out is set before reading, so a
 * failure leaves it for tok_spec_release. */
static int read_part(struct rd *r, json_t *root, const char *key, read_fn one, size_t size,
		     void **out)
{
	json_t *v = json_object_get(root, key);
	size_t up;

	if (v == NULL || json_is_null(v))
		return 0;
	*out = rd_calloc(1, size);
	if (*out == NULL)
		return rd_oom(r);
	up = rd_key(r, key);
	if (one(r, v, *out) != 0)
		return -1;
	rd_up(r, up);
	return 0;
}

/* truncation and padding change what encode returns; attnd does neither, so
 * a file that asks for them is refused rather than answered differently. */
static int refuse_unsupported(struct rd *r, json_t *root)
{
	static const char *const keys[] = {"truncation", "padding"};

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		json_t *v = json_object_get(root, keys[i]);

		if (v != NULL && !json_is_null(v))
			return rd_fail_key(r, keys[i], "%s is not supported; expected null",
					   keys[i]);
	}
	return 0;
}

static int read_root(struct rd *r, json_t *root, struct tok_spec *s)
{
	json_t *model = json_object_get(root, "model"), *added;
	size_t up;

	if (!json_is_object(root))
		return rd_fail(r, "expected a JSON object (a tokenizer.json)");
	if (model == NULL)
		return rd_fail_key(r, "model", "missing");
	if (refuse_unsupported(r, root) != 0)
		return -1;
	/* the model first: its vocabulary and merges leave the tree as they go */
	up = rd_key(r, "model");
	if (tokmodel_read(r, model, &s->model) != 0)
		return -1;
	rd_up(r, up);
	added = json_object_get(root, "added_tokens");
	if (added != NULL && !json_is_null(added) &&
	    rd_sequence(r, root, "added_tokens", tokparts_read_added_token, sizeof *s->added,
			(void **)&s->added, &s->n_added) != 0)
		return -1;
	if (read_part(r, root, "normalizer", tokparts_read_normalizer, sizeof *s->normalizer,
		      (void **)&s->normalizer) != 0 ||
	    read_part(r, root, "pre_tokenizer", tokparts_read_pretokenizer, sizeof *s->pretokenizer,
		      (void **)&s->pretokenizer) != 0 ||
	    read_part(r, root, "post_processor", tokparts_read_post, sizeof *s->post,
		      (void **)&s->post) != 0)
		return -1;
	return read_part(r, root, "decoder", tokparts_read_decoder, sizeof *s->decoder,
			 (void **)&s->decoder);
}

/* The file as jansson is fed it: every byte as it is, but for the spans
 * tokvocab_read read, each of which becomes its own two brackets with as
 * many newlines between as it had, then as many blanks as its last line had
 * before the closing bracket: jansson's lines and columns stay the file's. */
struct feed_seg {
	const char *p; /* bytes to copy, or NULL: n times `fill` */
	size_t n;
	char fill;
};

struct feed {
	struct feed_seg seg[11]; /* 3 stretches of the file, 4 segments a span */
	size_t n_seg, i, at;     /* segment i, byte at of it */
};

static void feed_span(struct feed *f, const char *b, size_t start, size_t end)
{
	size_t lines = 0, last = start; /* the byte before the last line */

	for (const char *nl = memchr(b + start, '\n', end - start); nl != NULL;
	     nl = memchr(nl + 1, '\n', (size_t)(b + end - nl - 1))) {
		lines++;
		last = (size_t)(nl - b);
	}
	f->seg[f->n_seg++] = (struct feed_seg){b + start, 1, 0};
	f->seg[f->n_seg++] = (struct feed_seg){NULL, lines, '\n'};
	f->seg[f->n_seg++] = (struct feed_seg){NULL, end - 2 - last, ' '};
	f->seg[f->n_seg++] = (struct feed_seg){b + end - 1, 1, 0};
}

static void feed_init(struct feed *f, const char *b, size_t len, const struct tokvocab_spans *sp)
{
	size_t start[2] = {sp->vocab_start, sp->merges_start};
	size_t end[2] = {sp->vocab_end, sp->merges_end};
	size_t at = 0;
	int first = start[1] < start[0]; /* the span that comes first */

	memset(f, 0, sizeof *f);
	for (int k = 0; k < 2; k++) {
		int s = k == 0 ? first : !first;

		if (end[s] == 0)
			continue;
		f->seg[f->n_seg++] = (struct feed_seg){b + at, start[s] - at, 0};
		feed_span(f, b, start[s], end[s]);
		at = end[s];
	}
	f->seg[f->n_seg++] = (struct feed_seg){b + at, len - at, 0};
}

static size_t feed_next(void *buffer, size_t buflen, void *data)
{
	struct feed *f = data;
	char *out = buffer;
	size_t n = 0;

	while (n < buflen && f->i < f->n_seg) {
		const struct feed_seg *g = &f->seg[f->i];
		size_t k = g->n - f->at < buflen - n ? g->n - f->at : buflen - n;

		if (g->p != NULL)
			memcpy(out + n, g->p + f->at, k);
		else
			memset(out + n, g->fill, k);
		n += k;
		f->at += k;
		if (f->at == g->n) {
			f->i++;
			f->at = 0;
		}
	}
	return n;
}

/* Parses a whole file with jansson (duplicate keys refused), the spans r->pre
 * left out: the root, or NULL with the message "FILE:LINE:COLUMN: what". */
static json_t *load(struct rd *r, const char *bytes, size_t len)
{
	struct feed f;
	json_error_t jerr;
	json_t *root;

	feed_init(&f, bytes, len, &r->pre);
	root = json_load_callback(feed_next, &f, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		snprintf(r->err, r->errlen, "%s:%d:%d: %s", r->file, jerr.line, jerr.column,
			 jerr.text);
	return root;
}

int api_tokenizer_spec_json(struct tok_spec *spec, const char *bytes, size_t len,
			    const char *file, char *err, size_t errlen)
{
	struct rd r;
	json_t *root;
	int rc;

	memset(spec, 0, sizeof *spec);
	rd_init(&r, file, err, errlen);
	if (len > API_TOKENIZER_FILE_MAX)
		return rd_fail(&r, "%zu bytes, over the %zu MiB limit", len,
			       API_TOKENIZER_FILE_MAX >> 20);
	if (tokvocab_read(bytes, len, file, &spec->model, &r.pre, err, errlen) != 0) {
		tok_spec_release(spec);
		return -1;
	}
	root = load(&r, bytes, len);
	rc = root != NULL ? read_root(&r, root, spec) : -1;
	json_decref(root);
	if (rc != 0)
		tok_spec_release(spec);
	return rc;
}

/* ---- GPT-2's vocab.json and merges.txt -------------------------------------- */

/* The line at b[at..len) without its "\n" or "\r\n": its length in *n;
 * returns where the next line starts. */
static size_t next_line(const char *b, size_t len, size_t at, size_t *n)
{
	const char *nl = memchr(b + at, '\n', len - at);
	size_t end = nl != NULL ? (size_t)(nl - b) : len;

	*n = end - at;
	if (*n > 0 && b[end - 1] == '\r')
		(*n)--;
	return nl != NULL ? end + 1 : len;
}

/* Whether line number `line` (0-based), s[0..n), holds no merge: blank, or
 * the "#version" line that opens GPT-2's file. */
static int merge_line_skipped(const char *s, size_t n, size_t line)
{
	return n == 0 || (line == 0 && n >= 8 && memcmp(s, "#version", 8) == 0);
}

static size_t count_merges(const char *b, size_t len)
{
	size_t n, count = 0, line = 0;

	for (size_t at = 0; at < len; line++) {
		size_t next = next_line(b, len, at, &n);

		count += !merge_line_skipped(b + at, n, line);
		at = next;
	}
	return count;
}

/* merges.txt: one "left right" a line, rank by rank. Messages name the line
 * ("merges.txt:7: ..."), so the reader's pointer is the line. */
static int read_merges_txt(struct rd *r, const char *b, size_t len, struct tok_model *m)
{
	size_t n, k = 0, line = 0;

	if (len > API_TOKENIZER_FILE_MAX)
		return rd_fail(r, "%zu bytes, over the %zu MiB limit", len,
			       API_TOKENIZER_FILE_MAX >> 20);
	m->merges = rd_calloc(count_merges(b, len), sizeof *m->merges);
	if (m->merges == NULL)
		return rd_oom(r);
	m->n_merges = count_merges(b, len);
	for (size_t at = 0; at < len; line++) {
		size_t next = next_line(b, len, at, &n), bad = utf8_check(b + at, n);
		const char *file = r->file;
		char where[PTR_MAX + 32];

		if (!merge_line_skipped(b + at, n, line)) {
			snprintf(where, sizeof where, "%s:%zu", file, line + 1);
			r->file = where; /* "merges.txt:7: ..." */
			if (bad < n)
				return rd_fail(r, "invalid UTF-8 at column %zu", bad + 1);
			if (memchr(b + at, '\0', n) != NULL) /* a piece is a C string */
				return rd_fail(r, "a NUL byte at column %zu",
					       (size_t)((const char *)memchr(b + at, '\0', n) - (b + at)) + 1);
			if (tokmodel_split_merge(r, b + at, n, &m->merges[k++]) != 0)
				return -1;
			r->file = file;
		}
		at = next;
	}
	return 0;
}

/* GPT-2's pipeline around a BPE model, as its own tokenizer.json has it. */
static int gpt2_pipeline(struct rd *r, struct tok_spec *s)
{
	static const char eot[] = "<|endoftext|>";

	s->pretokenizer = rd_calloc(1, sizeof *s->pretokenizer);
	s->post = rd_calloc(1, sizeof *s->post);
	s->decoder = rd_calloc(1, sizeof *s->decoder);
	if (s->pretokenizer == NULL || s->post == NULL || s->decoder == NULL)
		return rd_oom(r);
	*s->pretokenizer = (struct tok_pretokenizer){
	    .kind = TOK_PRE_BYTE_LEVEL, .add_prefix_space = 0, .use_regex = 1};
	*s->post = (struct tok_post){
	    .kind = TOK_POST_BYTE_LEVEL, .trim_offsets = 0, .add_prefix_space = 1};
	s->decoder->kind = TOK_DEC_BYTE_LEVEL;
	for (size_t i = 0; i < s->model.n_vocab; i++) {
		if (strcmp(s->model.vocab[i].piece, eot) != 0)
			continue;
		s->added = rd_calloc(1, sizeof *s->added);
		if (s->added == NULL)
			return rd_oom(r);
		s->n_added = 1;
		*s->added = (struct tok_added){.id = s->model.vocab[i].id, .normalized = 1,
					       .special = 1};
		return rd_dup(r, eot, sizeof eot - 1, &s->added->content);
	}
	return 0;
}

int api_tokenizer_spec_gpt2(struct tok_spec *spec, const char *vocab, size_t vocab_len,
			    const char *vocab_file, const char *merges, size_t merges_len,
			    const char *merges_file, char *err, size_t errlen)
{
	struct rd r;
	int rc = -1;

	memset(spec, 0, sizeof *spec);
	spec->model.kind = TOK_MODEL_BPE;
	spec->model.unk_id = -1;
	rd_init(&r, vocab_file, err, errlen);
	if (vocab_len > API_TOKENIZER_FILE_MAX) {
		rd_fail(&r, "%zu bytes, over the %zu MiB limit", vocab_len,
			API_TOKENIZER_FILE_MAX >> 20);
		goto out;
	}
	if (tokvocab_read_object(vocab, vocab_len, vocab_file, &spec->model, err, errlen) != 0 ||
	    tokmodel_vocab_unique(&r, &spec->model) != 0)
		goto out;
	rd_init(&r, merges_file, err, errlen);
	if (read_merges_txt(&r, merges, merges_len, &spec->model) != 0 ||
	    gpt2_pipeline(&r, spec) != 0)
		goto out;
	rc = 0;
out:
	if (rc != 0)
		tok_spec_release(spec);
	return rc;
}

/* ---- building ------------------------------------------------------------- */

int api_tokenizer_build(struct tok_spec *spec, const char *file, struct tokenizer **out,
			char *err, size_t errlen)
{
	char msg[512];

	if (tok_build(spec, out, msg, sizeof msg) == TOK_OK)
		return 0;
	snprintf(err, errlen, "%s: %s", file, msg);
	return -1;
}

int api_tokenizer_load_json(struct tokenizer **out, const char *bytes, size_t len,
			    const char *file, char *err, size_t errlen)
{
	struct tok_spec spec;

	*out = NULL;
	if (api_tokenizer_spec_json(&spec, bytes, len, file, err, errlen) != 0)
		return -1;
	return api_tokenizer_build(&spec, file, out, err, errlen);
}

int api_tokenizer_load_gpt2(struct tokenizer **out, const char *vocab, size_t vocab_len,
			    const char *vocab_file, const char *merges, size_t merges_len,
			    const char *merges_file, char *err, size_t errlen)
{
	struct tok_spec spec;

	*out = NULL;
	if (api_tokenizer_spec_gpt2(&spec, vocab, vocab_len, vocab_file, merges, merges_len,
				    merges_file, err, errlen) != 0)
		return -1;
	return api_tokenizer_build(&spec, vocab_file, out, err, errlen);
}
