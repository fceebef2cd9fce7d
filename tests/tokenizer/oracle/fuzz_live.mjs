// fuzz_live.mjs: a differential fuzzer, attnd's C tokenizers against the oracle.
//
// Generates adversarial texts from a seed (mixed scripts, emoji sequences, combining
// marks, NFKC-sensitive characters, every kind of whitespace, digit runs, contractions,
// each tokenizer's own added tokens with and without spaces around them, long words),
// tokenizes each with add_special_tokens true and false through the oracle (lib.mjs's
// runCase: ids, tokens, offsets, both decodings) and through a real attnd on a loopback
// ephemeral port (POST /v1/tokenize, /v1/detokenize of the oracle's ids), and prints every
// case that differs as one JSON line, then a count per tokenizer. Exits 1 on any difference.
//
// The generator stays clear of the inputs where transformers.js is known to differ from
// Hugging Face (tests/data/tokenizers/README.md): no U+0085 or U+FEFF, no unassigned code
// points, no capital sigma, no CJK outside the BMP, no (?i) oddities (U+017F, U+212A); no NUL (attnd refuses it in JSON).
//
// Usage: node fuzz_live.mjs ATTND [--n N] [--seed S] [NAME...]   (default: N 1000, all)
// (make tokenizer-oracle installs the packages; ATTND is build/attnd)
import { spawn } from "node:child_process";
import { join } from "node:path";
import { buildOracle, DATA, FILTERS, registry, runCase } from "./lib.mjs";

const args = process.argv.slice(2);
const attnd = args.shift();
let n = 1000;
let seed = 1;
const only = [];
while (args.length) {
  const a = args.shift();
  if (a === "--n") n = Number(args.shift());
  else if (a === "--seed") seed = Number(args.shift());
  else only.push(a);
}
if (!attnd) {
  console.error("usage: node fuzz_live.mjs ATTND [--n N] [--seed S] [NAME...]");
  process.exit(2);
}

// mulberry32: a small seeded generator, so a failing text can be found again by its seed.
function rng(s) {
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FRAGMENTS = [
  // scripts
  "나는", "맛있는", "사과를", "먹었다", "한국어", "\u1112\u1161\u11ab", "我喜欢", "苹果。", "東京は", "カタカナ",
  "ひらがな", "مرحبا", "بالعالم،", "नमस्ते", "दुनिया", "Привет", "Γειά", "שלום", "สวัสดี", "ḁḃ",
  // emoji: skin tones, ZWJ sequences, flags, variation selectors, keycaps
  "👍", "👍🏽", "👋🏿", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "🇰🇷", "🇯🇵", "❤️", "1️⃣", "🧑🏾\u200d💻",
  // combining marks, in and out of canonical order
  "e\u0301", "a\u0301\u0323", "o\u0308\u0304", "\u0301", "n\u0303", "क\u094d\u0937", "Z\u0351\u0346\u0300",
  // NFKC-sensitive
  "ﬁ", "ﬂag", "ﬃ", "Ｈｅｌｌｏ", "１２３", "①②", "½", "x²", "Ⅻ", "ⅷ", "㎏", "™", "ℌ", "︵", "ｶﾀｶﾅ", "Å", "Ω",
  // Latin
  "Café", "naïve", "İstanbul", "Straße", "ÇAĞLAR", "hello", "Hello", "HELLO", "world", "the", "The",
  "tokenization", "un", "x", "a", "I",
  // digits
  "0", "7", "12345678901234567890", "3.14", "1,000", "2024-12-01", "0x1F", "٣٤٥", "१२३", "000",
  // contractions
  "'s", "'S", "'LL", "'ll", "'t", "'re", "'ve", "'m", "'d", "'D", "don't", "I'LL", "she's", "''", "'",
  // punctuation and symbols
  ".", ",", "!", "?", "...", "---", "___", "(", ")", "[", "]", "{", "}", "<", ">", "|", "\\", "/", "@", "#",
  "$", "%", "^", "&", "*", "~", "`", "\"", "€", "£", "¥", "©", "→", "·", "•", "«", "»", "“", "”", "—",
  // controls and formats
  "\u200b", "\u200c", "\u200d", "\u00ad", "\u2060", "\u0001", "\u0007", "\u001b", "\u007f", "\u00a7",
  // private use, noncharacter-free
  "\ue000",
];

const SPACES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2003", "\u2009", "\u202f",
  "\u1680", "\u2028", "\u2029", "\u000b", "\u000c", " \n ", "\n\n", "\t ", " \t", ""];

function generator(r, added) {
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const word = () => {
    const k = r();
    if (k < 0.05) return pick(FRAGMENTS).repeat(10 + Math.floor(r() * 60)); // a very long word
    if (k < 0.10) return String.fromCodePoint(0x20 + Math.floor(r() * 0x2fe0)); // anything in the BMP's first part
    if (k < 0.22 && added.length) return pick(added);
    if (k < 0.30) return pick(FRAGMENTS) + pick(FRAGMENTS);
    return pick(FRAGMENTS);
  };
  return () => {
    const parts = [];
    if (r() < 0.3) parts.push(pick(SPACES));
    const len = 1 + Math.floor(r() * 12);
    for (let i = 0; i < len; i++) {
      parts.push(word());
      if (r() < 0.6) parts.push(r() < 0.6 ? " " : pick(SPACES));
    }
    if (r() < 0.3) parts.push(pick(SPACES));
    return parts.join("");
  };
}

// The code points the oracle is known to read otherwise (README.md), and NUL, which attnd's
// JSON reader refuses.
const AVOID = /[\u0000\u0085\ufeff\u03a3\u017f\u212a]|\p{Cn}|\p{Cs}/u;

// ---- attnd on a loopback ephemeral port ----

function startAttnd(entries) {
  const argv = ["--host", "127.0.0.1", "--port", "0", "--no-builtins", "--threads", "1", "--io-threads", "1"];
  for (const e of entries) argv.push("--tokenizer", `${e.name}=${e.files[0]}`);
  const child = spawn(attnd, argv, { stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let log = "";
    const onData = (d) => {
      log += d;
      const m = /listening on [^\s]*:(\d+)/.exec(log);
      if (m) resolve({ child, base: `http://127.0.0.1:${m[1]}` });
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => reject(new Error(`attnd exited ${code}:\n${log}`)));
  });
}

async function post(base, path, body) {
  const r = await fetch(base + path, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json" } });
  const j = await r.json();
  if (!r.ok) throw new Error(`${path} ${r.status}: ${JSON.stringify(j)} for ${JSON.stringify(body).slice(0, 300)}`);
  return j;
}

// ---- one tokenizer ----

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function fuzzOne(base, entry) {
  const tj = entry.load();
  const tok = buildOracle(tj);
  const keep = FILTERS[entry.filter ?? "all"];
  const added = (tj.added_tokens ?? []).map((t) => t.content);
  const next = generator(rng(seed), added);
  let compared = 0;
  let differ = 0;
  for (let i = 0; i < n; i++) {
    const text = next();
    if (AVOID.test(text) || !keep(text)) continue;
    for (const add of [true, false]) {
      const want = runCase(tok, tj, text, add);
      const got = await post(base, "/v1/tokenize", { tokenizer: entry.name, text, add_special_tokens: add });
      const diffs = [];
      if (!same(got.ids, want.ids)) diffs.push("ids");
      else if (!same(got.tokens, want.tokens)) diffs.push("tokens");
      else if (want.offsets !== null && !same(got.offsets, want.offsets)) diffs.push("offsets");
      for (const skip of [false, true]) {
        if (want.ids.length === 0) continue;
        const d = await post(base, "/v1/detokenize", { tokenizer: entry.name, ids: want.ids, skip_special_tokens: skip });
        if (d.text !== (skip ? want.decoded_skip : want.decoded)) diffs.push(skip ? "decoded_skip" : "decoded");
      }
      compared++;
      if (diffs.length) {
        differ++;
        console.log(JSON.stringify({ tokenizer: entry.name, text, add_special_tokens: add, differs: diffs,
          attnd: { ids: got.ids, tokens: got.tokens, offsets: got.offsets }, oracle: { ids: want.ids, tokens: want.tokens, offsets: want.offsets } }));
      }
    }
  }
  return { compared, differ };
}

const entries = registry().filter((e) => only.length === 0 || only.includes(e.name));
// GPT-2's pair: attnd reads merges.txt beside vocab.json
for (const e of entries) if (e.name === "gpt2") e.files = [join(DATA, "gpt2/vocab.json")];
const { child, base } = await startAttnd(entries);
let failed = 0;
try {
  for (const e of entries) {
    const { compared, differ } = await fuzzOne(base, e);
    console.error(`${differ ? "FAIL" : "ok  "} ${e.name}: ${compared} cases, ${differ} differ`);
    if (differ) failed++;
  }
} finally {
  child.kill("SIGTERM");
}
process.exit(failed ? 1 : 0);
