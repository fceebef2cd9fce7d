// make_synthetic.mjs: writes the small tokenizer.json files of tests/data/tokenizers/synthetic/
// and their INDEX.json. Each file exercises pipeline parts the real tokenizers do not use.
//
// Vocabularies come from three places, none of them a third-party model file:
//   - a cut of GPT-2 (the 256 byte pieces and the first K merges; GPT-2 numbers merge i's
//     result 256 + i, so the cut is ids 0 .. 255+K) from tests/data/tokenizers/gpt2;
//   - a cut of the BERT WordPiece vocabulary from tests/data/tokenizers/bert;
//   - a BPE trained here, deterministically, on tests/data/tokenizers/corpus.json plus a short
//     English paragraph (below), and Unigram scores counted on the same text.
//
// INDEX.json lists each file with its corpus subset and whether transformers.js is a faithful
// oracle for it ("oracle_checked") or deviates from Hugging Face's Rust `tokenizers`
// ("not_oracle_checked", with the reason and, where HF's semantics are certain, hand-derived
// cases in hand_cases.json).
//
// Usage: node make_synthetic.mjs
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const DATA = join(here, "../../data/tokenizers");
const OUT = join(DATA, "synthetic");

const TRAIN_EXTRA = `The animal did not cross the street because it was too tired. A tokenizer splits text
into pieces that a model can look up in its vocabulary. Words that are common become single
pieces, while rare words are spelled out from smaller pieces. This is the idea behind byte pair
encoding and the unigram language model. Numbers like 2024 and 3.14 and names like Paris and
London appear in the training text as well, and so do questions, answers and code such as
int main(void) { return 0; } and def f(x): return x + 1.`;

const corpus = JSON.parse(readFileSync(join(DATA, "corpus.json"), "utf8"));

// ---- vocabulary sources ------------------------------------------------------------------

function gpt2Cut(k) {
  const vocab = JSON.parse(readFileSync(join(DATA, "gpt2/vocab.json"), "utf8"));
  const merges = readFileSync(join(DATA, "gpt2/merges.txt"), "utf8").split("\n").slice(1, 1 + k);
  const cut = {};
  for (const [piece, id] of Object.entries(vocab)) if (id < 256 + k) cut[piece] = id;
  return { vocab: cut, merges };
}

const BERT_SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];

// BERT's specials, single characters, "##" single characters and the `words` most frequent
// words, renumbered 0.. in BERT's order.
function bertCut(words) {
  const vocab = JSON.parse(readFileSync(join(DATA, "bert/tokenizer.json"), "utf8")).model.vocab;
  const entries = Object.entries(vocab).sort((a, b) => a[1] - b[1]);
  const keep = entries.filter(
    ([p, id]) => BERT_SPECIAL.includes(p) || (id >= 999 && id < 1996 + words) || /^##.$/u.test(p),
  );
  return Object.fromEntries(keep.map(([p], i) => [p, i]));
}

// A plain BPE trainer: most frequent adjacent pair first, ties to the smaller pair text.
function trainBpe(words, alphabet, k) {
  const vocab = new Set(alphabet);
  let seqs = words.map((w) => [...w].filter((c) => vocab.has(c))).filter((s) => s.length > 1);
  const merges = [];
  while (merges.length < k) {
    const counts = new Map();
    for (const s of seqs) {
      for (let i = 0; i + 1 < s.length; i++) {
        const key = s[i] + "\u0000" + s[i + 1];
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
    let best = null;
    for (const [key, n] of counts) {
      if (n < 2) continue;
      if (!best || n > best[1] || (n === best[1] && key < best[0])) best = [key, n];
    }
    if (!best) break;
    const [a, b] = best[0].split("\u0000");
    merges.push([a, b]);
    vocab.add(a + b);
    seqs = seqs.map((s) => {
      const out = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
          out.push(a + b);
          i++;
        } else out.push(s[i]);
      }
      return out;
    });
  }
  return merges;
}

// Training words in SentencePiece spelling: "▁" for each space and one in front, cut before
// every "▁" so that no piece has a "▁" after its first character.
function spWords(texts) {
  return texts.flatMap((t) => ("\u2581" + t.replaceAll(" ", "\u2581")).split(/(?=\u2581)/u)).filter(Boolean);
}
const TRAIN = [...corpus, ...TRAIN_EXTRA.split("\n")];
const ASCII_PRINTABLE = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i));

function spBpe(k, { lower = false } = {}) {
  const texts = lower ? TRAIN.map((t) => t.toLowerCase()) : TRAIN;
  const alphabet = ["\u2581", ...ASCII_PRINTABLE.filter((c) => c !== " " && (!lower || c === c.toLowerCase()))];
  const merges = trainBpe(spWords(texts), alphabet, k);
  return { alphabet, merges };
}

// Unigram pieces with scores: log frequency of each piece as a substring of the training
// words, nudged by sqrt(rank) * 1e-6 so that no two segmentations score exactly alike.
function unigramVocab(pieces, specials) {
  const words = spWords(TRAIN);
  const counts = pieces.map((p) => words.reduce((n, w) => n + (w.split(p).length - 1), 0));
  const z = counts.reduce((a, b) => a + b + 0.5, 0);
  const scored = pieces.map((p, i) => [p, Math.log((counts[i] + 0.5) / z) - 1e-6 * Math.sqrt(i + 2)]);
  return [...specials.map((s) => [s, 0.0]), ...scored];
}

// ---- pipeline parts ----------------------------------------------------------------------

const added = (id, content, extra = {}) => ({
  id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true, ...extra,
});
const template = (single, specials) => ({
  type: "TemplateProcessing",
  single: single.map((x) => (x === "$A" ? { Sequence: { id: "A", type_id: 0 } } : { SpecialToken: { id: x, type_id: 0 } })),
  pair: [
    ...single.map((x) => (x === "$A" ? { Sequence: { id: "A", type_id: 0 } } : { SpecialToken: { id: x, type_id: 0 } })),
    ...single.map((x) => (x === "$A" ? { Sequence: { id: "B", type_id: 1 } } : { SpecialToken: { id: x, type_id: 1 } })),
  ],
  special_tokens: Object.fromEntries(Object.entries(specials).map(([t, id]) => [t, { id: t, ids: [id], tokens: [t] }])),
});
const tokenizer = (parts) => ({
  version: "1.0", truncation: null, padding: null, added_tokens: [], normalizer: null, pre_tokenizer: null,
  post_processor: null, decoder: null, ...parts,
});
const bpeModel = (vocab, merges, extra = {}) => ({
  type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
  fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges, ...extra,
});
const wordPieceModel = (vocab) => ({
  type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab,
});
const bertAdded = (vocab, extra = {}) => BERT_SPECIAL.map((t) => added(vocab[t], t, extra[t] ?? {}));

// SentencePiece-style BPE vocabulary: specials, then (optionally) the 256 byte pieces, then
// the alphabet, then the merges' results.
function spBpeVocab(specials, alphabet, merges, withBytes) {
  const pieces = [...specials];
  if (withBytes) for (let b = 0; b < 256; b++) pieces.push(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
  pieces.push(...alphabet, ...merges.map(([a, b]) => a + b));
  const vocab = {};
  for (const p of pieces) if (!Object.hasOwn(vocab, p)) vocab[p] = Object.keys(vocab).length;
  return vocab;
}

// ---- the files ---------------------------------------------------------------------------

const files = {};
const index = { oracle_checked: [], not_oracle_checked: [] };
const ok = (file, corpusSubset, covers) => index.oracle_checked.push({ file, corpus: corpusSubset, covers });
const dev = (file, reason) => index.not_oracle_checked.push({ file, reason });

{
  // A: BERT-like WordPiece behind a long normalizer Sequence.
  const vocab = bertCut(600);
  files["wordpiece_normalizers.json"] = tokenizer({
    added_tokens: bertAdded(vocab),
    normalizer: {
      type: "Sequence",
      normalizers: [
        { type: "NFD" },
        { type: "StripAccents" },
        { type: "Lowercase" },
        { type: "Strip", strip_left: true, strip_right: true },
        { type: "Replace", pattern: { String: "\t" }, content: " " },
      ],
    },
    pre_tokenizer: { type: "Sequence", pretokenizers: [{ type: "WhitespaceSplit" }, { type: "Punctuation", behavior: "Contiguous" }] },
    post_processor: { type: "BertProcessing", sep: ["[SEP]", vocab["[SEP]"]], cls: ["[CLS]", vocab["[CLS]"]] },
    decoder: { type: "WordPiece", prefix: "##", cleanup: false },
    model: wordPieceModel(vocab),
  });
  ok("wordpiece_normalizers.json", "all", "normalizers NFD, StripAccents, Lowercase, Strip, Replace(String), Sequence; pre-tokenizers WhitespaceSplit, Punctuation(Contiguous), Sequence; WordPiece; BertProcessing; WordPiece decoder (cleanup false)");
}
{
  // B: NFKC + lowercase, BERT pre-tokenizer, added tokens with lstrip/rstrip and normalized.
  const vocab = bertCut(600);
  const s = Object.keys(vocab).length;
  files["wordpiece_added.json"] = tokenizer({
    added_tokens: [
      ...bertAdded(vocab, { "[MASK]": { lstrip: true, rstrip: true }, "[CLS]": { rstrip: true } }),
      added(s, "<s>", { special: false, normalized: true }),
    ],
    normalizer: { type: "Sequence", normalizers: [{ type: "NFKC" }, { type: "Lowercase" }] },
    pre_tokenizer: { type: "BertPreTokenizer" },
    post_processor: template(["[CLS]", "$A", "[SEP]"], { "[CLS]": vocab["[CLS]"], "[SEP]": vocab["[SEP]"] }),
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: wordPieceModel(vocab),
  });
  ok("wordpiece_added.json", "all", "normalizer NFKC, Lowercase; BertPreTokenizer; added tokens lstrip+rstrip ([MASK]), normalized true (<s>), rstrip; TemplateProcessing; WordPiece decoder (cleanup true)");
}
{
  // C: byte-level BPE without the ByteLevel regex, after a Split regex; merges as pairs.
  const { vocab, merges } = gpt2Cut(1500);
  files["bytelevel_split_pairs.json"] = tokenizer({
    normalizer: { type: "NFC" },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: " ?\\p{L}+| ?\\p{N}| ?[^\\s\\p{L}\\p{N}]+|\\s+" }, behavior: "Isolated", invert: false },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
    decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false },
    model: bpeModel(vocab, merges.map((m) => m.split(" ")), { ignore_merges: true }),
  });
  ok("bytelevel_split_pairs.json", "all", "normalizer NFC; Split(Regex, Isolated); ByteLevel(use_regex false); BPE merges as pairs, ignore_merges; ByteLevel post-processor trim_offsets true; ByteLevel decoder");
}
{
  // D: RoBERTa-like: byte-level with prefix space, merges as strings, RobertaProcessing.
  const { vocab, merges } = gpt2Cut(1500);
  const n = Object.keys(vocab).length;
  files["bytelevel_roberta.json"] = tokenizer({
    added_tokens: [
      added(n, "<s>"), added(n + 1, "<pad>"), added(n + 2, "</s>"), added(n + 3, "<unk>"),
      added(n + 4, "<mask>", { lstrip: true }),
    ],
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    post_processor: { type: "RobertaProcessing", sep: ["</s>", n + 2], cls: ["<s>", n], trim_offsets: true, add_prefix_space: true },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: bpeModel(vocab, merges),
  });
  ok("bytelevel_roberta.json", "all", "ByteLevel pre-tokenizer with add_prefix_space; BPE merges as \"a b\" strings; added token lstrip (<mask>); RobertaProcessing trim_offsets true");
}
{
  // E: SentencePiece-style BPE with byte fallback, llama-2 shaped.
  const { alphabet, merges } = spBpe(400);
  const vocab = spBpeVocab(["<unk>", "<s>", "</s>"], alphabet, merges, true);
  files["bpe_byte_fallback.json"] = tokenizer({
    added_tokens: [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
    normalizer: {
      type: "Sequence",
      normalizers: [{ type: "Prepend", prepend: "\u2581" }, { type: "Replace", pattern: { String: " " }, content: "\u2581" }],
    },
    post_processor: template(["<s>", "$A"], { "<s>": 1 }),
    decoder: {
      type: "Sequence",
      decoders: [
        { type: "Replace", pattern: { String: "\u2581" }, content: " " },
        { type: "ByteFallback" },
        { type: "Fuse" },
        { type: "Strip", content: " ", start: 1, stop: 0 },
      ],
    },
    model: bpeModel(vocab, merges.map(([a, b]) => `${a} ${b}`), { unk_token: "<unk>", fuse_unk: true, byte_fallback: true }),
  });
  ok("bpe_byte_fallback.json", "all", "normalizers Prepend, Replace(String); no pre-tokenizer; BPE byte_fallback + unk_token + fuse_unk; decoders Replace, ByteFallback, Fuse, Strip, Sequence");
}
{
  // F: BPE with unknown characters fused, NFKD + Lowercase, a post-processor Sequence.
  const { alphabet, merges } = spBpe(300, { lower: true });
  const alpha = alphabet.filter((c) => c !== "\u2581").concat([" "]);
  const merges2 = trainBpe(TRAIN.map((t) => t.toLowerCase()), alpha, 300);
  const vocab = spBpeVocab(["<unk>", "</s>"], alpha, merges2, false);
  files["bpe_unk_fuse.json"] = tokenizer({
    added_tokens: [added(0, "<unk>"), added(1, "</s>")],
    normalizer: { type: "Sequence", normalizers: [{ type: "NFKD" }, { type: "Lowercase" }] },
    post_processor: {
      type: "Sequence",
      processors: [
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
        template(["$A", "</s>"], { "</s>": 1 }),
      ],
    },
    decoder: { type: "Fuse" },
    // Pairs: some merges contain a space, which the "a b" string form cannot carry.
    model: bpeModel(vocab, merges2, { unk_token: "<unk>", fuse_unk: true }),
  });
  void merges;
  ok("bpe_unk_fuse.json", "all", "normalizer NFKD; no pre-tokenizer; BPE unk_token + fuse_unk without byte fallback; post-processor Sequence(ByteLevel, TemplateProcessing); Fuse decoder");
}
{
  // G, H: Unigram behind Metaspace (split false), prepend_scheme always and first.
  const { alphabet, merges } = spBpe(500);
  const pieces = [...new Set([...alphabet, ...merges.map(([a, b]) => a + b)])];
  const vocab = unigramVocab(pieces, ["<unk>", "<s>", "</s>"]);
  for (const [file, scheme] of [["unigram_metaspace_always.json", "always"], ["unigram_metaspace_first.json", "first"]]) {
    const ms = { type: "Metaspace", replacement: "\u2581", add_prefix_space: true, prepend_scheme: scheme, split: false };
    files[file] = tokenizer({
      added_tokens: [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
      normalizer: scheme === "always" ? { type: "NFKC" } : null,
      pre_tokenizer: ms,
      post_processor: template(["$A", "</s>"], { "</s>": 2 }),
      decoder: ms,
      model: { type: "Unigram", unk_id: 0, vocab, byte_fallback: false },
    });
    ok(file, "all", `Unigram with unk_id; Metaspace pre-tokenizer and decoder, prepend_scheme ${scheme}, split false`);
  }
}
{
  // I: Metaspace never, BPE with byte fallback.
  const { alphabet, merges } = spBpe(300);
  const vocab = spBpeVocab(["<unk>", "<s>", "</s>"], alphabet, merges, true);
  const ms = { type: "Metaspace", replacement: "\u2581", add_prefix_space: false, prepend_scheme: "never", split: false };
  files["bpe_metaspace_never.json"] = tokenizer({
    added_tokens: [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
    pre_tokenizer: ms,
    decoder: { type: "Sequence", decoders: [ms, { type: "ByteFallback" }, { type: "Fuse" }] },
    model: bpeModel(vocab, merges.map(([a, b]) => `${a} ${b}`), { unk_token: "<unk>", byte_fallback: true }),
  });
  ok("bpe_metaspace_never.json", "all", "Metaspace prepend_scheme never, split false; Metaspace decoder in a Sequence");
}
{
  // J, K: Whitespace + Digits, ASCII texts only (transformers.js's \w and \d are ASCII).
  const vocab = bertCut(600);
  files["wordpiece_whitespace_digits.json"] = tokenizer({
    added_tokens: bertAdded(vocab),
    normalizer: { type: "Sequence", normalizers: [{ type: "Lowercase" }, { type: "Replace", pattern: { Regex: "[0-9]{4,}" }, content: "0000" }] },
    pre_tokenizer: { type: "Sequence", pretokenizers: [{ type: "Whitespace" }, { type: "Digits", individual_digits: true }] },
    post_processor: template(["[CLS]", "$A", "[SEP]"], { "[CLS]": vocab["[CLS]"], "[SEP]": vocab["[SEP]"] }),
    decoder: { type: "WordPiece", prefix: "##", cleanup: true },
    model: wordPieceModel(vocab),
  });
  ok("wordpiece_whitespace_digits.json", "ascii", "Replace(Regex) normalizer; Whitespace; Digits individual_digits true");
  files["wordpiece_digits_contiguous.json"] = tokenizer({
    added_tokens: bertAdded(vocab),
    normalizer: { type: "Lowercase" },
    pre_tokenizer: { type: "Sequence", pretokenizers: [{ type: "WhitespaceSplit" }, { type: "Digits", individual_digits: false }] },
    post_processor: { type: "BertProcessing", sep: ["[SEP]", vocab["[SEP]"]], cls: ["[CLS]", vocab["[CLS]"]] },
    decoder: { type: "WordPiece", prefix: "##", cleanup: false },
    model: wordPieceModel(vocab),
  });
  ok("wordpiece_digits_contiguous.json", "ascii", "Digits individual_digits false");
}
{
  // L, M: Split with a String (Isolated), a Regex (Removed) and an inverted Regex (Removed).
  const { vocab, merges } = gpt2Cut(800);
  const asUnicode = Object.fromEntries(Object.entries(vocab));
  files["split_string_regex.json"] = tokenizer({
    normalizer: { type: "Replace", pattern: { Regex: "[0-9]" }, content: "#" },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { String: " " }, behavior: "Isolated", invert: false },
        { type: "Split", pattern: { Regex: "[,;:]" }, behavior: "Removed", invert: false },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: bpeModel(asUnicode, merges),
  });
  ok("split_string_regex.json", "all", "Split(String, Isolated), Split(Regex, Removed); Replace(Regex) normalizer");
  files["split_invert.json"] = tokenizer({
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: "[\\p{L}\\p{M}]+|\\p{N}+|[^\\p{L}\\p{M}\\p{N}\\s]+" }, behavior: "Removed", invert: true },
        { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: false },
      ],
    },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: false },
    model: bpeModel(vocab, merges),
  });
  ok("split_invert.json", "all", "Split(Regex, Removed, invert true); ByteLevel add_prefix_space on every split");
}
{
  // BertNormalizer in front of a byte-level BPE: the spaces it puts around a CJK ideograph
  // stay in the tokens (Ġ), so their spans show in the offsets (both take the ideograph's).
  const { vocab, merges } = gpt2Cut(1500);
  files["bytelevel_bert_normalizer.json"] = tokenizer({
    normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: false, lowercase: false },
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: true },
    decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: true },
    model: bpeModel(vocab, merges),
  });
  ok("bytelevel_bert_normalizer.json", "all", "BertNormalizer (clean_text, handle_chinese_chars) with a ByteLevel pre-tokenizer: the spaces around CJK ideographs in tokens");
}

// ---- files transformers.js does not model faithfully --------------------------------------

{
  const tiny = {
    "[UNK]": 0, the: 1, "-": 2, final: 3, countdown: 4, "the-": 5, "final-": 6, "-countdown": 7, "--": 8, "-final": 9,
    "\u2581hello": 10, "\u2581world": 11, wow: 12, "!": 13, "!!!": 14, ing: 15, sing: 16, s: 17, "\u2581": 18,
    "\u03bf\u03b4\u03bf\u03c3": 19, "\u03bf\u03b4\u03bf\u03c2": 20,
  };
  const wp = { ...wordPieceModel(tiny), continuing_subword_prefix: "##" };
  for (const b of ["MergedWithPrevious", "MergedWithNext", "Contiguous", "Removed"]) {
    files[`dev_split_${b.toLowerCase()}.json`] = tokenizer({
      pre_tokenizer: { type: "Split", pattern: { String: "-" }, behavior: b, invert: false },
      model: wp,
    });
  }
  dev("dev_split_mergedwithprevious.json", "transformers.js ignores Split behavior (always Isolated, except Removed)");
  dev("dev_split_mergedwithnext.json", "transformers.js ignores Split behavior (always Isolated, except Removed)");
  dev("dev_split_contiguous.json", "transformers.js ignores Split behavior (always Isolated, except Removed)");
  dev("dev_split_removed.json", "transformers.js wraps a String pattern in a capture group, so Removed keeps the delimiters");
  files["dev_split_invert_isolated.json"] = tokenizer({
    pre_tokenizer: { type: "Split", pattern: { String: "-" }, behavior: "Isolated", invert: true },
    model: wp,
  });
  dev("dev_split_invert_isolated.json", "transformers.js keeps only the matches for any inverted Split; HF keeps everything for Isolated");
  files["dev_metaspace_split.json"] = tokenizer({
    pre_tokenizer: { type: "Metaspace", replacement: "\u2581", add_prefix_space: true, prepend_scheme: "always", split: true },
    decoder: { type: "Metaspace", replacement: "\u2581", add_prefix_space: true, prepend_scheme: "always", split: true },
    model: wp,
  });
  dev("dev_metaspace_split.json", "transformers.js's Metaspace never splits (split: true is ignored)");
  files["dev_punctuation_isolated.json"] = tokenizer({
    pre_tokenizer: { type: "Punctuation", behavior: "Isolated" },
    model: wp,
  });
  dev("dev_punctuation_isolated.json", "transformers.js's Punctuation is always Contiguous");
  files["dev_single_word.json"] = tokenizer({
    added_tokens: [added(15, "ing", { special: false, single_word: true })],
    pre_tokenizer: { type: "WhitespaceSplit" },
    model: wp,
  });
  dev("dev_single_word.json", "transformers.js ignores single_word");
  files["dev_normalized_added.json"] = tokenizer({
    added_tokens: [added(16, "sing", { special: false, normalized: true })],
    normalizer: { type: "Lowercase" },
    pre_tokenizer: { type: "WhitespaceSplit" },
    model: wp,
  });
  dev("dev_normalized_added.json", "transformers.js matches normalized added tokens in the raw text, HF in the normalized text");
  files["dev_lowercase_sigma.json"] = tokenizer({
    normalizer: { type: "Lowercase" },
    pre_tokenizer: { type: "WhitespaceSplit" },
    model: wp,
  });
  dev("dev_lowercase_sigma.json", "transformers.js lowercases with String.toLowerCase (final sigma becomes ς); HF maps each character alone (σ)");

  // BPE with a continuing-subword prefix: every character after the first of a word is
  // looked up as "##c", and a merge "a ##b" makes "ab" (HF's BpeBuilder and merge_word).
  files["dev_bpe_continuing_prefix.json"] = tokenizer({
    pre_tokenizer: { type: "WhitespaceSplit" },
    model: bpeModel(
      { "<unk>": 0, t: 1, "##h": 2, "##e": 3, th: 4, the: 5, h: 6, e: 7, "##t": 8 },
      ["t ##h", "th ##e"],
      { unk_token: "<unk>", continuing_subword_prefix: "##" },
    ),
  });
  dev("dev_bpe_continuing_prefix.json", "transformers.js's BPE ignores continuing_subword_prefix");
  // Unigram with byte fallback: an unknown piece becomes its UTF-8 bytes as <0xNN> pieces.
  const bytes = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
  files["dev_unigram_byte_fallback.json"] = tokenizer({
    pre_tokenizer: { type: "Metaspace", replacement: "\u2581", add_prefix_space: true, prepend_scheme: "always", split: true },
    decoder: { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "\u2581" }, content: " " }, { type: "ByteFallback" }, { type: "Fuse" }] },
    model: {
      type: "Unigram",
      unk_id: 0,
      vocab: [["<unk>", 0.0], ["\u2581", -1.0], ["a", -2.0], ["\u2581a", -1.5], ...bytes.map((b) => [b, -20.0])],
      byte_fallback: true,
    },
  });
  dev("dev_unigram_byte_fallback.json", "transformers.js's Unigram has no byte_fallback (unknown characters become <unk>)");
}

// Hand-derived answers for the files above, from Hugging Face's documented semantics (the
// split behaviors are the "the-final--countdown" example of SplitDelimiterBehavior). No
// decoder means HF joins the tokens with a space. Each entry encodes `text` (special tokens
// make no difference here: none of these files has a post-processor) or, with `decode_ids`,
// decodes ids.
const c = (file, text, ids, tokens, offsets) => ({ file, text, ids, tokens, offsets, decoded: tokens.join(" ") });
const hand = [
  c("dev_split_mergedwithprevious.json", "the-final--countdown", [5, 6, 2, 4], ["the-", "final-", "-", "countdown"], [[0, 4], [4, 10], [10, 11], [11, 20]]),
  c("dev_split_mergedwithnext.json", "the-final--countdown", [1, 9, 2, 7], ["the", "-final", "-", "-countdown"], [[0, 3], [3, 9], [9, 10], [10, 20]]),
  c("dev_split_contiguous.json", "the-final--countdown", [1, 2, 3, 8, 4], ["the", "-", "final", "--", "countdown"], [[0, 3], [3, 4], [4, 9], [9, 11], [11, 20]]),
  c("dev_split_removed.json", "the-final--countdown", [1, 3, 4], ["the", "final", "countdown"], [[0, 3], [4, 9], [11, 20]]),
  c("dev_split_invert_isolated.json", "the-final--countdown", [1, 2, 3, 2, 2, 4], ["the", "-", "final", "-", "-", "countdown"], [[0, 3], [3, 4], [4, 9], [9, 10], [10, 11], [11, 20]]),
  { ...c("dev_metaspace_split.json", "hello world", [10, 11], ["\u2581hello", "\u2581world"], [[0, 5], [5, 11]]), decoded: "hello world" },
  { ...c("dev_metaspace_split.json", "hello  world", [10, 18, 11], ["\u2581hello", "\u2581", "\u2581world"], [[0, 5], [5, 6], [6, 12]]), decoded: "hello  world" },
  c("dev_punctuation_isolated.json", "wow!!!", [12, 13, 13, 13], ["wow", "!", "!", "!"], [[0, 3], [3, 4], [4, 5], [5, 6]]),
  c("dev_single_word.json", "sing ing", [16, 15], ["sing", "ing"], [[0, 4], [5, 8]]),
  c("dev_normalized_added.json", "SINGs", [16, 17], ["sing", "s"], [[0, 4], [4, 5]]),
  c("dev_lowercase_sigma.json", "\u039f\u0394\u039f\u03a3", [19], ["\u03bf\u03b4\u03bf\u03c3"], [[0, 4]]),
  c("dev_bpe_continuing_prefix.json", "the the", [5, 5], ["the", "the"], [[0, 3], [4, 7]]),
  c("dev_bpe_continuing_prefix.json", "eht", [7, 2, 8], ["e", "##h", "##t"], [[0, 1], [1, 2], [2, 3]]),
  // "▁a" (-1.5) beats "▁" + "a" (-3); "é" has no piece: unknown, so its two UTF-8 bytes.
  { ...c("dev_unigram_byte_fallback.json", "a\u00e9", [3, 4 + 0xc3, 4 + 0xa9], ["\u2581a", "<0xC3>", "<0xA9>"], [[0, 1], [1, 2], [1, 2]]), decoded: " a\u00e9" },
];
{
  // ByteFallback on bytes that are not UTF-8: HF writes one U+FFFD per byte, transformers.js
  // (TextDecoder) one per maximal invalid sequence.
  const v = files["bpe_byte_fallback.json"].model.vocab;
  hand.push({ file: "bpe_byte_fallback.json", decode_ids: [v["<0xE4>"], v["<0xBD>"]], skip_special_tokens: false, decoded: "\ufffd\ufffd" });
}

{
  // Marks out of canonical order, on oracle-checked files: align.mjs gives no offsets there
  // (it cannot follow the reordering), HF assigns spans by position (NormalizedString's
  // transform over unicode-normalization-alignments' changes): NFKD moves U+0323 before
  // U+0301, and the fused unknown run covers both places; NFC composes a + U+0323 into one
  // character spanning the first two places, and the marks left take the places after.
  const vu = files["bpe_unk_fuse.json"].model.vocab;
  hand.push({ ...c("bpe_unk_fuse.json", "a\u0301\u0323", [vu.a, vu["<unk>"]], ["a", "<unk>"], [[0, 1], [1, 3]]), decoded: "a<unk>" });
  const vb = files["bytelevel_split_pairs.json"].model.vocab;
  const pieces = ["\u00e1", "\u00ba", "\u00a1", "\u00cc", "\u0123", "\u00cc", "\u0124"];
  const spans = [[0, 1], [0, 1], [0, 1], [2, 3], [2, 3], [3, 4], [3, 4]];
  hand.push({ ...c("bytelevel_split_pairs.json", "a\u0301\u0302\u0323", pieces.map((p) => vb[p]), pieces, spans), decoded: "\u1ea1\u0301\u0302" });
}

{
  // An lstrip added token takes the whitespace before it into its token, and
  // RobertaProcessing's trim_offsets trims the token's string: for an added token that is the
  // text matched, whitespace and all, so the offsets are "<mask>"'s alone. HF's answers
  // (tokenizers 0.23.2); align.mjs gives the same.
  const vr = files["bytelevel_roberta.json"].model.vocab;
  const mask = files["bytelevel_roberta.json"].added_tokens.find((a) => a.content === "<mask>").id;
  hand.push({ ...c("bytelevel_roberta.json", "a <mask>", [vr["\u0120a"], mask], ["\u0120a", "<mask>"], [[0, 1], [2, 8]]), decoded: " a<mask>" });
  hand.push({ ...c("bytelevel_roberta.json", "\t <mask>", [mask], ["<mask>"], [[2, 8]]), decoded: "<mask>" });
}

mkdirSync(OUT, { recursive: true });
// Pretty-printed, except the vocabulary and merges, which stay on one line each.
function render(tj) {
  const big = {};
  const model = { ...tj.model };
  for (const k of ["vocab", "merges"]) {
    if (model[k] !== undefined) {
      big[k] = JSON.stringify(model[k]);
      model[k] = `@@${k}@@`;
    }
  }
  let text = JSON.stringify({ ...tj, model }, null, 2);
  for (const [k, v] of Object.entries(big)) text = text.replace(`"@@${k}@@"`, () => v);
  return text + "\n";
}

for (const [name, tj] of Object.entries(files)) {
  const text = render(tj);
  if (text.length > 50 * 1024) throw new Error(`${name} is ${text.length} bytes, over 50 KB`);
  writeFileSync(join(OUT, name), text);
  console.log(`${name}: ${text.length} bytes`);
}
writeFileSync(join(OUT, "INDEX.json"), JSON.stringify(index, null, 2) + "\n");
writeFileSync(join(OUT, "hand_cases.json"), `[\n${hand.map((h) => `  ${JSON.stringify(h)}`).join(",\n")}\n]\n`);
