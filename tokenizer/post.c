/*
 * post.c: the post-processors (stages.h, "post-processors"), as Hugging
 * Face's processors/ (template.rs, bert.rs, roberta.rs, sequence.rs) and the
 * ByteLevel post-processor of pre_tokenizers/byte_level.rs, on one sequence.
 *
 *   TemplateProcessing  the `single` template: each special token's ids (all
 *                       of them, with its tokens) and the sequence in order
 *   BertProcessing      [CLS] A [SEP]
 *   RobertaProcessing   trim_offsets first, then <s> A </s>
 *   ByteLevel           trim_offsets
 *   Sequence            each in order
 *
 * Added tokens have offsets (0, 0) and special = 1; without add_special only
 * the trimming happens. Trimming (byte_level.rs process_offsets): a token
 * whose string starts (ends) with k characters that are 'Ġ' or White_Space
 * has its start moved k characters right (its end k left), never past the
 * other end; the first token (or one at offset 0) keeps a single leading one
 * when add_prefix_space, as that space was added, not typed. A token's
 * string is its piece, but for an added token found in the text it is the
 * text matched, with the whitespace lstrip or rstrip took in (HF's token
 * value is the split's string, not the added token's content): "a <mask>"
 * gives " <mask>" the offsets of "<mask>" alone. (HF matches a normalized
 * added token in the normalized text; its whitespace is counted here in the
 * original text, the same count unless the normalizer changes it.) Hugging Face
 * counts those k in the characters of its char offsets; the drafts here are
 * byte offsets, so the k characters are stepped over in the original text.
 *
 * Ownership: the draft is the caller's; tokens added point at strings of the
 * post-processor's spec (or of t), which outlive the encoding.
 */
#include "stages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"

enum tok_status tok_draft_push(struct tok_draft *d, struct tok_token tk)
{
	if (d->n == d->cap &&
	    tok_grow((void **)&d->v, &d->cap, d->n + 1, sizeof *d->v, 16) != TOK_OK)
		return TOK_ENOMEM;
	d->v[d->n++] = tk;
	return TOK_OK;
}

/* ---- trimming offsets ------------------------------------------------------ */

/* Rust's char::is_whitespace: Unicode's White_Space property. */
static int is_white_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
	       c == 0x205f || c == 0x3000;
}

/* The code point of the valid character s[0, n) of length n. */
static uint32_t decode_cp(const unsigned char *s, size_t n)
{
	uint32_t c = n == 1 ? s[0] : (uint32_t)(s[0] & (0x7f >> n));

	for (size_t i = 1; i < n; i++)
		c = c << 6 | (s[i] & 0x3f);
	return c;
}

static int is_space_char(uint32_t c)
{
	return c == 0x120 /* 'Ġ', the byte-level space */ || is_white_space(c);
}

/* How many characters at the start (from_end: the end) of str[0, len) are
 * spaces. */
static size_t count_spaces(const char *str, size_t len, int from_end)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = 0, run = 0;

	for (size_t i = 0; i < len;) {
		size_t cl = utf8_char(s + i, len - i);
		int sp = cl > 0 && is_space_char(decode_cp(s + i, cl));

		if (!from_end && !sp)
			return n;
		n++;
		run = sp ? run + 1 : 0;
		i += cl == 0 ? 1 : cl;
	}
	return from_end ? run : n;
}

/* text position after k characters from `at`, not past `limit`. */
static size_t chars_forward(const char *text, size_t at, size_t k, size_t limit)
{
	while (k > 0 && at < limit) {
		at++;
		while (at < limit && ((unsigned char)text[at] & 0xc0) == 0x80)
			at++;
		k--;
	}
	return at;
}

/* text position k characters before `at`; *short_by counts those missing
 * when the text starts first. */
static size_t chars_back(const char *text, size_t at, size_t k, size_t *short_by)
{
	while (k > 0 && at > 0) {
		at--;
		while (at > 0 && ((unsigned char)text[at] & 0xc0) == 0x80)
			at--;
		k--;
	}
	*short_by = k;
	return at;
}

static void trim_offsets(struct tok_draft *d, const struct tokenizer *t, const char *text,
			 size_t len, int add_prefix_space)
{
	for (size_t i = 0; i < d->n; i++) {
		struct tok_token *tk = &d->v[i];
		const char *str = tk->piece;
		size_t str_len, lead, trail, short_by;

		if (tk->piece == NULL || tk->end > len || tk->start > tk->end)
			continue;
		str_len = strlen(str);
		/* an added token: the text it matched (the file comment) */
		if (t != NULL && tk->id >= 0 && tk->id < t->vocab_end && t->is_added[tk->id]) {
			str = text + tk->start;
			str_len = tk->end - tk->start;
		}
		lead = count_spaces(str, str_len, 0);
		trail = count_spaces(str, str_len, 1);
		if (lead > 0) {
			if ((i == 0 || tk->start == 0) && add_prefix_space && lead == 1)
				lead = 0;
			tk->start = chars_forward(text, tk->start, lead, tk->end);
		}
		if (trail > 0) {
			size_t end = chars_back(text, tk->end, trail, &short_by);

			if (short_by == 0)
				tk->end = end < tk->start ? tk->start : end;
		}
	}
}

/* ---- adding special tokens --------------------------------------------------- */

static struct tok_token special_token(const struct tokenizer *t, int32_t id, const char *piece)
{
	struct tok_token tk = { id, 0, 0, piece, 1 };

	if (t != NULL && id >= 0 && id < t->vocab_end && t->pieces[id] != NULL)
		tk.piece = t->pieces[id];
	return tk;
}

static const struct tok_template_special *find_special(const struct tok_post *p, const char *name)
{
	for (size_t i = 0; i < p->n_specials; i++)
		if (p->specials[i].name != NULL && name != NULL && strcmp(p->specials[i].name, name) == 0)
			return &p->specials[i];
	return NULL;
}

/* d := the template's pieces, the sequence standing for d's tokens. */
static enum tok_status apply_template(const struct tok_post *p, const struct tokenizer *t,
				      struct tok_draft *d)
{
	struct tok_draft out = { 0 };
	enum tok_status st = TOK_OK;

	for (size_t i = 0; i < p->n_single && st == TOK_OK; i++) {
		const struct tok_template_special *sp;

		if (p->single[i].is_sequence) {
			for (size_t j = 0; j < d->n && st == TOK_OK; j++)
				st = tok_draft_push(&out, d->v[j]);
			continue;
		}
		sp = find_special(p, p->single[i].special);
		for (size_t j = 0; sp != NULL && j < sp->n && st == TOK_OK; j++)
			st = tok_draft_push(&out, special_token(t, sp->ids[j], sp->tokens[j]));
	}
	if (st != TOK_OK) {
		free(out.v);
		return st;
	}
	free(d->v);
	*d = out;
	return TOK_OK;
}

/* d := cls, d's tokens, sep. */
static enum tok_status wrap(const struct tok_post *p, const struct tokenizer *t,
			    struct tok_draft *d)
{
	enum tok_status st = tok_draft_push(d, special_token(t, p->sep_id, p->sep));

	if (st != TOK_OK)
		return st;
	st = tok_draft_push(d, special_token(t, p->cls_id, p->cls)); /* room for one more */
	if (st != TOK_OK)
		return st;
	memmove(d->v + 1, d->v, (d->n - 2) * sizeof *d->v);
	d->v[0] = special_token(t, p->cls_id, p->cls);
	d->v[d->n - 1] = special_token(t, p->sep_id, p->sep);
	return TOK_OK;
}

enum tok_status tok_post_apply(const struct tok_post *p, const struct tokenizer *t,
			       const char *text, size_t len, int add_special,
			       struct tok_draft *d)
{
	enum tok_status st = TOK_OK;

	if (p == NULL)
		return TOK_OK;
	switch (p->kind) {
	case TOK_POST_TEMPLATE:
		return add_special ? apply_template(p, t, d) : TOK_OK;
	case TOK_POST_BERT:
		return add_special ? wrap(p, t, d) : TOK_OK;
	case TOK_POST_ROBERTA:
		if (p->trim_offsets)
			trim_offsets(d, t, text, len, p->add_prefix_space);
		return add_special ? wrap(p, t, d) : TOK_OK;
	case TOK_POST_BYTE_LEVEL:
		if (p->trim_offsets)
			trim_offsets(d, t, text, len, p->add_prefix_space);
		return TOK_OK;
	case TOK_POST_SEQUENCE:
		for (size_t i = 0; i < p->n_items && st == TOK_OK; i++)
			st = tok_post_apply(&p->items[i], t, text, len, add_special, d);
		return st;
	}
	return TOK_OK;
}

enum tok_status tok_post_check(const struct tok_post *p, char *err, size_t errlen)
{
	if (p == NULL)
		return TOK_OK;
	if (p->kind == TOK_POST_TEMPLATE) {
		for (size_t i = 0; i < p->n_single; i++) {
			if (p->single[i].is_sequence || find_special(p, p->single[i].special) != NULL)
				continue;
			snprintf(err, errlen,
				 "post_processor: single[%zu]: special token '%s' is not in "
				 "special_tokens", i,
				 p->single[i].special == NULL ? "" : p->single[i].special);
			return TOK_ESPEC;
		}
	}
	for (size_t i = 0; i < p->n_items; i++) {
		enum tok_status st = tok_post_check(&p->items[i], err, errlen);

		if (st != TOK_OK)
			return st;
	}
	return TOK_OK;
}
