/*
 * tokenizer_parts.c: a tokenizer.json's normalizers, pre-tokenizers, added
 * tokens, post-processors and decoders, each read by one function that
 * chooses its kind from a table of Hugging Face's "type" names (see
 * tokenizer_parts.h). Sequences recurse, which is bounded: jansson refuses a
 * document nested deeper than 2048.
 *
 * Ownership: the JSON is borrowed; what is read is the part's, on failure
 * too (tok_spec_release frees it).
 */
#include "tokenizer_parts.h"

#include <stdint.h>
#include <string.h>

/* ---- normalizers ----------------------------------------------------------- */

static const struct kind_name NORMALIZERS[] = {
	{"NFC", TOK_NORM_NFC},
	{"NFD", TOK_NORM_NFD},
	{"NFKC", TOK_NORM_NFKC},
	{"NFKD", TOK_NORM_NFKD},
	{"Lowercase", TOK_NORM_LOWERCASE},
	{"StripAccents", TOK_NORM_STRIP_ACCENTS},
	{"BertNormalizer", TOK_NORM_BERT},
	{"Prepend", TOK_NORM_PREPEND},
	{"Replace", TOK_NORM_REPLACE},
	{"Strip", TOK_NORM_STRIP},
	{"Sequence", TOK_NORM_SEQUENCE},
	{NULL, 0},
};

/* BertNormalizer: strip_accents null (or absent) follows lowercase: -1. */
static int read_bert_normalizer(struct rd *r, json_t *j, struct tok_normalizer *n)
{
	json_t *sa = json_object_get(j, "strip_accents");

	if (rd_bool(r, j, "clean_text", 1, &n->clean_text) != 0 ||
	    rd_bool(r, j, "handle_chinese_chars", 1, &n->handle_chinese_chars) != 0 ||
	    rd_bool(r, j, "lowercase", 1, &n->lowercase) != 0)
		return -1;
	if (sa == NULL || json_is_null(sa)) {
		n->strip_accents = -1;
		return 0;
	}
	return rd_bool(r, j, "strip_accents", 0, &n->strip_accents);
}

int tokparts_read_normalizer(struct rd *r, json_t *j, void *item)
{
	struct tok_normalizer *n = item;
	int kind;

	if (rd_kind(r, j, "normalizer", NORMALIZERS, &kind) != 0)
		return -1;
	n->kind = (enum tok_norm_kind)kind;
	switch (n->kind) {
	case TOK_NORM_BERT:
		return read_bert_normalizer(r, j, n);
	case TOK_NORM_PREPEND:
		return rd_str(r, j, "prepend", F_REQUIRED, NULL, &n->prepend);
	case TOK_NORM_REPLACE:
		if (rd_pattern(r, j, "pattern", &n->pattern) != 0)
			return -1;
		return rd_str(r, j, "content", F_REQUIRED, NULL, &n->content);
	case TOK_NORM_STRIP:
		if (rd_bool(r, j, "strip_left", -1, &n->strip_left) != 0)
			return -1;
		return rd_bool(r, j, "strip_right", -1, &n->strip_right);
	case TOK_NORM_SEQUENCE:
		return rd_sequence(r, j, "normalizers", tokparts_read_normalizer, sizeof *n->items,
				   (void **)&n->items, &n->n_items);
	default: /* the Unicode forms, Lowercase, StripAccents: nothing to read */
		return 0;
	}
}

/* ---- pre-tokenizers -------------------------------------------------------- */

static const struct kind_name PRETOKENIZERS[] = {
	{"ByteLevel", TOK_PRE_BYTE_LEVEL},
	{"Split", TOK_PRE_SPLIT},
	{"Metaspace", TOK_PRE_METASPACE},
	{"Whitespace", TOK_PRE_WHITESPACE},
	{"WhitespaceSplit", TOK_PRE_WHITESPACE_SPLIT},
	{"BertPreTokenizer", TOK_PRE_BERT},
	{"Punctuation", TOK_PRE_PUNCTUATION},
	{"Digits", TOK_PRE_DIGITS},
	{"Sequence", TOK_PRE_SEQUENCE},
	{NULL, 0},
};

static const struct kind_name BEHAVIORS[] = {
	{"Removed", TOK_SPLIT_REMOVED},
	{"Isolated", TOK_SPLIT_ISOLATED},
	{"MergedWithPrevious", TOK_SPLIT_MERGED_WITH_PREVIOUS},
	{"MergedWithNext", TOK_SPLIT_MERGED_WITH_NEXT},
	{"Contiguous", TOK_SPLIT_CONTIGUOUS},
	{NULL, 0},
};

static const struct kind_name PREPEND_SCHEMES[] = {
	{"always", TOK_PREPEND_ALWAYS},
	{"never", TOK_PREPEND_NEVER},
	{"first", TOK_PREPEND_FIRST},
	{NULL, 0},
};

/* Metaspace, pre-tokenizer and decoder alike: replacement (default "▁"),
 * prepend_scheme, or in older files add_prefix_space (true: always, false:
 * never), and split (default true). */
static int rd_metaspace(struct rd *r, json_t *j, char **replacement,
			enum tok_prepend_scheme *scheme, int *split)
{
	int s = TOK_PREPEND_ALWAYS, add;

	if (rd_char(r, j, "replacement", "\xe2\x96\x81", replacement) != 0 ||
	    rd_bool(r, j, "split", 1, split) != 0)
		return -1;
	if (json_object_get(j, "prepend_scheme") != NULL) {
		if (rd_enum(r, j, "prepend_scheme", PREPEND_SCHEMES, -1, &s) != 0)
			return -1;
	} else {
		if (rd_bool(r, j, "add_prefix_space", 1, &add) != 0)
			return -1;
		s = add ? TOK_PREPEND_ALWAYS : TOK_PREPEND_NEVER;
	}
	*scheme = (enum tok_prepend_scheme)s;
	return 0;
}

int tokparts_read_pretokenizer(struct rd *r, json_t *j, void *item)
{
	struct tok_pretokenizer *p = item;
	int kind, behavior;

	if (rd_kind(r, j, "pre-tokenizer", PRETOKENIZERS, &kind) != 0)
		return -1;
	p->kind = (enum tok_pre_kind)kind;
	switch (p->kind) {
	case TOK_PRE_BYTE_LEVEL:
		if (rd_bool(r, j, "add_prefix_space", 1, &p->add_prefix_space) != 0)
			return -1;
		return rd_bool(r, j, "use_regex", 1, &p->use_regex);
	case TOK_PRE_SPLIT:
		if (rd_pattern(r, j, "pattern", &p->pattern) != 0 ||
		    rd_enum(r, j, "behavior", BEHAVIORS, -1, &behavior) != 0)
			return -1;
		p->behavior = (enum tok_split_behavior)behavior;
		return rd_bool(r, j, "invert", 0, &p->invert);
	case TOK_PRE_METASPACE:
		return rd_metaspace(r, j, &p->replacement, &p->prepend_scheme, &p->split);
	case TOK_PRE_PUNCTUATION:
		if (rd_enum(r, j, "behavior", BEHAVIORS, TOK_SPLIT_ISOLATED, &behavior) != 0)
			return -1;
		p->behavior = (enum tok_split_behavior)behavior;
		return 0;
	case TOK_PRE_DIGITS:
		return rd_bool(r, j, "individual_digits", 0, &p->individual_digits);
	case TOK_PRE_SEQUENCE:
		return rd_sequence(r, j, "pretokenizers", tokparts_read_pretokenizer,
				   sizeof *p->items, (void **)&p->items, &p->n_items);
	default: /* Whitespace, WhitespaceSplit, BertPreTokenizer */
		return 0;
	}
}

/* ---- added tokens ---------------------------------------------------------- */

int tokparts_read_added_token(struct rd *r, json_t *j, void *item)
{
	struct tok_added *a = item;
	json_int_t id;

	if (!json_is_object(j))
		return rd_fail(r, "expected an added token object");
	if (rd_int(r, j, "id", -1, INT32_MAX, &id) != 0 ||
	    rd_str(r, j, "content", F_REQUIRED, NULL, &a->content) != 0)
		return -1;
	a->id = (int32_t)id;
	if (a->content[0] == '\0')
		return rd_fail_key(r, "content", "an added token may not be empty");
	if (rd_bool(r, j, "special", 0, &a->special) != 0 ||
	    rd_bool(r, j, "single_word", 0, &a->single_word) != 0 ||
	    rd_bool(r, j, "lstrip", 0, &a->lstrip) != 0 ||
	    rd_bool(r, j, "rstrip", 0, &a->rstrip) != 0)
		return -1;
	/* Hugging Face: normalized defaults to the opposite of special */
	return rd_bool(r, j, "normalized", !a->special, &a->normalized);
}

/* ---- post-processors ------------------------------------------------------- */

static const struct kind_name POSTS[] = {
	{"TemplateProcessing", TOK_POST_TEMPLATE},
	{"BertProcessing", TOK_POST_BERT},
	{"RobertaProcessing", TOK_POST_ROBERTA},
	{"ByteLevel", TOK_POST_BYTE_LEVEL},
	{"Sequence", TOK_POST_SEQUENCE},
	{NULL, 0},
};

/* BertProcessing's and RobertaProcessing's ["token", id]. */
static int rd_token_id(struct rd *r, json_t *j, const char *key, char **token, int32_t *id)
{
	json_t *v = json_object_get(j, key), *t = json_array_get(v, 0), *i = json_array_get(v, 1);

	if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_string(t) ||
	    !json_is_integer(i) || json_integer_value(i) < 0 || json_integer_value(i) > INT32_MAX)
		return rd_fail_key(r, key, "expected [\"token\", id]");
	*id = (int32_t)json_integer_value(i);
	return rd_dup(r, json_string_value(t), json_string_length(t), token);
}

/* One {"id": name, "ids": [...], "tokens": [...]} of special_tokens. */
static int read_template_special(struct rd *r, const char *name, json_t *v,
				 struct tok_template_special *sp)
{
	json_t *ids, *tokens, *x;
	size_t i;

	if (!json_is_object(v))
		return rd_fail(r, "expected {\"id\", \"ids\", \"tokens\"}");
	if (rd_dup(r, name, strlen(name), &sp->name) != 0 || rd_array(r, v, "ids", &ids) != 0 ||
	    rd_array(r, v, "tokens", &tokens) != 0)
		return -1;
	if (json_array_size(ids) != json_array_size(tokens))
		return rd_fail(r, "\"ids\" and \"tokens\" differ in length");
	sp->ids = rd_calloc(json_array_size(ids), sizeof *sp->ids);
	sp->tokens = rd_calloc(json_array_size(ids), sizeof *sp->tokens);
	if (sp->ids == NULL || sp->tokens == NULL)
		return rd_oom(r);
	sp->n = json_array_size(ids);
	json_array_foreach(ids, i, x)
	{
		json_t *t = json_array_get(tokens, i);
		size_t up = rd_key(r, "ids");
		json_int_t id;

		rd_index(r, i);
		if (rd_int_value(r, x, INT32_MAX, &id) != 0)
			return -1;
		rd_up(r, up);
		sp->ids[i] = (int32_t)id;
		if (!json_is_string(t)) {
			rd_key(r, "tokens");
			rd_index(r, i);
			return rd_fail(r, "expected a string");
		}
		if (rd_dup(r, json_string_value(t), json_string_length(t), &sp->tokens[i]) != 0)
			return -1;
	}
	return 0;
}

static int read_template_specials(struct rd *r, json_t *j, struct tok_post *p)
{
	json_t *obj = json_object_get(j, "special_tokens"), *v;
	const char *name;
	size_t n = 0, up;

	if (obj == NULL)
		obj = json_object(); /* none: an empty object, released below */
	else if (!json_is_object(obj))
		return rd_fail_key(r, "special_tokens", "expected an object");
	else
		json_incref(obj);
	p->specials = rd_calloc(json_object_size(obj), sizeof *p->specials);
	if (obj == NULL || p->specials == NULL) {
		json_decref(obj);
		return rd_oom(r);
	}
	p->n_specials = json_object_size(obj);
	up = rd_key(r, "special_tokens");
	json_object_foreach(obj, name, v)
	{
		size_t at = rd_key(r, name);

		if (read_template_special(r, name, v, &p->specials[n++]) != 0) {
			json_decref(obj);
			return -1;
		}
		rd_up(r, at);
	}
	rd_up(r, up);
	json_decref(obj);
	return 0;
}

/* One piece of `single`: {"SpecialToken": {"id": name, ...}} or
 * {"Sequence": {"id": "A", ...}}; a special token must be in special_tokens. */
static int read_template_piece(struct rd *r, json_t *v, const struct tok_post *p,
			       struct tok_template_piece *piece)
{
	char q[QUOTE_MAX + 4];
	json_t *special = json_object_get(v, "SpecialToken"), *seq = json_object_get(v, "Sequence");

	if (!json_is_object(v) || json_object_size(v) != 1 || (special == NULL && seq == NULL))
		return rd_fail(r, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
	piece->is_sequence = seq != NULL;
	rd_key(r, seq != NULL ? "Sequence" : "SpecialToken");
	if (!json_is_object(seq != NULL ? seq : special))
		return rd_fail(r, "expected an object with an \"id\"");
	if (seq != NULL)
		return 0;
	if (rd_str(r, special, "id", F_REQUIRED, NULL, &piece->special) != 0)
		return -1;
	for (size_t i = 0; i < p->n_specials; i++)
		if (strcmp(p->specials[i].name, piece->special) == 0)
			return 0;
	return rd_fail_key(r, "id", "'%s' is not among the special_tokens",
			   rd_quote(q, piece->special));
}

/* TemplateProcessing: `single` (one sequence: `pair` is for pairs, which
 * attnd never encodes) and its special_tokens. */
static int read_template(struct rd *r, json_t *j, struct tok_post *p)
{
	json_t *single, *v;
	size_t i, up;

	if (read_template_specials(r, j, p) != 0 || rd_array(r, j, "single", &single) != 0)
		return -1;
	p->single = rd_calloc(json_array_size(single), sizeof *p->single);
	if (p->single == NULL)
		return rd_oom(r);
	p->n_single = json_array_size(single);
	up = rd_key(r, "single");
	json_array_foreach(single, i, v)
	{
		size_t at = rd_index(r, i);

		if (read_template_piece(r, v, p, &p->single[i]) != 0)
			return -1;
		rd_up(r, at);
	}
	rd_up(r, up);
	return 0;
}

int tokparts_read_post(struct rd *r, json_t *j, void *item)
{
	struct tok_post *p = item;
	int kind;

	if (rd_kind(r, j, "post-processor", POSTS, &kind) != 0)
		return -1;
	p->kind = (enum tok_post_kind)kind;
	switch (p->kind) {
	case TOK_POST_TEMPLATE:
		return read_template(r, j, p);
	case TOK_POST_BERT:
		if (rd_token_id(r, j, "sep", &p->sep, &p->sep_id) != 0)
			return -1;
		return rd_token_id(r, j, "cls", &p->cls, &p->cls_id);
	case TOK_POST_ROBERTA: /* and ByteLevel's trim_offsets, add_prefix_space */
		if (rd_token_id(r, j, "sep", &p->sep, &p->sep_id) != 0 ||
		    rd_token_id(r, j, "cls", &p->cls, &p->cls_id) != 0)
			return -1;
		/* fall through */
	case TOK_POST_BYTE_LEVEL:
		if (rd_bool(r, j, "trim_offsets", 1, &p->trim_offsets) != 0)
			return -1;
		return rd_bool(r, j, "add_prefix_space", 1, &p->add_prefix_space);
	default:
		return rd_sequence(r, j, "processors", tokparts_read_post, sizeof *p->items,
				   (void **)&p->items, &p->n_items);
	}
}

/* ---- decoders -------------------------------------------------------------- */

static const struct kind_name DECODERS[] = {
	{"ByteLevel", TOK_DEC_BYTE_LEVEL},
	{"Metaspace", TOK_DEC_METASPACE},
	{"WordPiece", TOK_DEC_WORDPIECE},
	{"ByteFallback", TOK_DEC_BYTE_FALLBACK},
	{"Fuse", TOK_DEC_FUSE},
	{"Strip", TOK_DEC_STRIP},
	{"Replace", TOK_DEC_REPLACE},
	{"Sequence", TOK_DEC_SEQUENCE},
	{NULL, 0},
};

int tokparts_read_decoder(struct rd *r, json_t *j, void *item)
{
	struct tok_decoder *d = item;
	json_int_t start, stop;
	int kind, split;

	if (rd_kind(r, j, "decoder", DECODERS, &kind) != 0)
		return -1;
	d->kind = (enum tok_dec_kind)kind;
	switch (d->kind) {
	case TOK_DEC_METASPACE:
		return rd_metaspace(r, j, &d->replacement, &d->prepend_scheme, &split);
	case TOK_DEC_WORDPIECE:
		if (rd_str(r, j, "prefix", F_OPTIONAL, "##", &d->prefix) != 0)
			return -1;
		return rd_bool(r, j, "cleanup", 1, &d->cleanup);
	case TOK_DEC_STRIP:
		if (rd_char(r, j, "content", NULL, &d->content) != 0 ||
		    rd_int(r, j, "start", -1, INT32_MAX, &start) != 0 ||
		    rd_int(r, j, "stop", -1, INT32_MAX, &stop) != 0)
			return -1;
		d->strip_start = (size_t)start;
		d->strip_stop = (size_t)stop;
		return 0;
	case TOK_DEC_REPLACE:
		if (rd_pattern(r, j, "pattern", &d->pattern) != 0)
			return -1;
		return rd_str(r, j, "content", F_REQUIRED, NULL, &d->content);
	case TOK_DEC_SEQUENCE:
		return rd_sequence(r, j, "decoders", tokparts_read_decoder, sizeof *d->items,
				   (void **)&d->items, &d->n_items);
	default: /* ByteLevel, ByteFallback, Fuse */
		return 0;
	}
}
