// align.mjs: offsets for the oracle's tokens, derived independently of the oracle.
//
// transformers.js reports no offsets. This module re-runs the front half of a tokenizer.json
// pipeline the way Hugging Face's Rust `tokenizers` defines it (added-token matching,
// normalizer, pre-tokenizer), keeping for every character of the normalized text the span of
// ORIGINAL characters it came from, and then walks the oracle's token list over the words it
// produced. Offsets are [start, end) in Unicode code points of the original text, as the
// Python API reports them.
//
// HF keeps one alignment (an original span) per normalized character and rewrites them in
// NormalizedString::transform_range: a character that replaces one keeps that one's
// alignment (characters removed after it are dropped with theirs), a character inserted
// takes the alignment of the character before it. Hence (README.md there, "Offsets"):
//
//   - NFD/NFKD pieces, Lowercase expansions and ByteLevel's bytes map to the character they
//     came from; NFC/NFKC composing "e" + U+0301 maps "é" to the "e" alone (the mark is
//     dropped like a removed character); a removed character maps to nothing;
//   - Prepend's "▁" (and ByteLevel's prefix space, Metaspace's "▁") maps to the first
//     character; Replace maps each character of its replacement to the LAST character of
//     the match (" " -> "▁" is one to one);
//   - a token spans from the start of its first character's alignment to the end of its
//     last's, so a token covering only some bytes of a character (byte-level pieces,
//     <0xNN>) gets the whole character;
//   - tokens the post-processor adds get [0, 0]; added tokens found in the text get their
//     match, widened over the whitespace lstrip/rstrip swallowed;
//   - a ByteLevel (trim_offsets) or RobertaProcessing (trim_offsets) post-processor trims
//     leading/trailing spaces off each token's offsets (HF's process_offsets).
//
// Anything the walk cannot place with certainty throws Unalignable; the caller then records
// "offsets": null and the reason.

export class Unalignable extends Error {}

const isWs = (c) => /^\p{White_Space}$/u.test(c); // Rust char::is_whitespace
const isPunc = (c) => /^[\p{P}!-\/:-@\[-`{-~]$/u.test(c); // HF is_punc
const isNumeric = (c) => /^\p{N}$/u.test(c); // Rust char::is_numeric
const isMark = (c) => /^\p{M}$/u.test(c);
const isMn = (c) => /^\p{Mn}$/u.test(c);
const isBertControl = (c) => (c === "\t" || c === "\n" || c === "\r" ? false : /^\p{C}$/u.test(c));
const isCjk = (cp) =>
  (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) ||
  (cp >= 0x20000 && cp <= 0x2a6df) || (cp >= 0x2a700 && cp <= 0x2b73f) ||
  (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b820 && cp <= 0x2ceaf) ||
  (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f);

// An aligned string is an array of {c, s, e}: one code point c of the normalized text and
// the [s, e) span of original code points it came from.
const aligned = (text, base) => [...text].map((c, i) => ({ c, s: base + i, e: base + i + 1 }));
const joined = (A) => A.map((x) => x.c).join("");
const inserted = (text, at) => [...text].map((c) => ({ c, s: at.s, e: at.e }));

// JS regex from a tokenizer.json pattern; the one Rust-only construct the real files use is
// the case-insensitive group, rewritten the way transformers.js does.
function jsRegex(pattern) {
  if (pattern.String !== undefined) {
    return new RegExp(pattern.String.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "gu");
  }
  const src = pattern.Regex.replaceAll(
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)",
    "(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))",
  );
  return new RegExp(src, "gu");
}

// Spans [a, b) in code points of the matches of re in A.
function regexSpans(A, re) {
  const s = joined(A);
  const cuToCp = new Array(s.length + 1);
  let cp = 0;
  for (let i = 0; i < s.length; ) {
    cuToCp[i] = cp;
    const w = s.codePointAt(i) > 0xffff ? 2 : 1;
    if (w === 2) cuToCp[i + 1] = cp;
    i += w;
    cp++;
  }
  cuToCp[s.length] = cp;
  const spans = [];
  for (const m of s.matchAll(re)) {
    if (m[0].length === 0) throw new Unalignable(`pattern ${re} matches the empty string`);
    spans.push([cuToCp[m.index], cuToCp[m.index + m[0].length]]);
  }
  return spans;
}

const charSpans = (A, pred) => A.flatMap((x, i) => (pred(x.c) ? [[i, i + 1]] : []));

// ---- normalizers -------------------------------------------------------------------------

function unicodeForm(A, form) {
  const decomp = form === "NFC" || form === "NFD" ? "NFD" : "NFKD";
  const labeled = A.flatMap((x) => [...x.c.normalize(decomp)].map((c) => ({ c, s: x.s, e: x.e })));
  const out = [...joined(A).normalize(form)];
  if (form === decomp) {
    if (out.length !== labeled.length || out.some((c, i) => c !== labeled[i].c)) {
      throw new Unalignable(`${form} reorders combining marks`);
    }
    return labeled;
  }
  // A composed character replaces the first character it was composed from and removes the
  // others: it keeps the first one's alignment.
  const res = [];
  let k = 0;
  for (const oc of out) {
    const first = labeled[k];
    for (const dc of oc.normalize(decomp)) {
      if (k >= labeled.length || labeled[k].c !== dc) throw new Unalignable(`${form} reorders combining marks`);
      k++;
    }
    res.push({ c: oc, s: first.s, e: first.e });
  }
  if (k !== labeled.length) throw new Unalignable(`${form} alignment incomplete`);
  return res;
}

// Per character, as Rust's char::to_lowercase (no final-sigma context).
const lowercase = (A) => A.flatMap((x) => [...x.c.toLowerCase()].map((c) => ({ c, s: x.s, e: x.e })));

function replace(A, pattern, content) {
  const spans = regexSpans(A, jsRegex(pattern));
  const out = [];
  let p = 0;
  for (const [a, b] of spans) {
    out.push(...A.slice(p, a));
    // HF removes the match, then inserts the replacement: each of its characters takes the
    // alignment of the character before it, the last one of the match.
    out.push(...[...content].map((c) => ({ c, s: A[b - 1].s, e: A[b - 1].e })));
    p = b;
  }
  out.push(...A.slice(p));
  return out;
}

function bertNormalize(A, cfg) {
  if (cfg.clean_text) {
    A = A.flatMap((x) => {
      const cp = x.c.codePointAt(0);
      if (cp === 0 || cp === 0xfffd || isBertControl(x.c)) return [];
      return [isWs(x.c) ? { c: " ", s: x.s, e: x.e } : x];
    });
  }
  if (cfg.handle_chinese_chars) {
    A = A.flatMap((x) => (isCjk(x.c.codePointAt(0)) ? [{ ...x, c: " " }, x, { ...x, c: " " }] : [x]));
  }
  if (cfg.strip_accents ?? cfg.lowercase) A = unicodeForm(A, "NFD").filter((x) => !isMn(x.c));
  if (cfg.lowercase) A = lowercase(A);
  return A;
}

export function normalize(A, cfg) {
  if (!cfg) return A;
  switch (cfg.type) {
    case "Sequence":
      return cfg.normalizers.reduce((acc, n) => normalize(acc, n), A);
    case "NFC": case "NFD": case "NFKC": case "NFKD":
      return unicodeForm(A, cfg.type);
    case "Lowercase":
      return lowercase(A);
    case "StripAccents":
      return A.filter((x) => !isMark(x.c));
    case "Strip": {
      let a = 0;
      let b = A.length;
      if (cfg.strip_left) while (a < b && isWs(A[a].c)) a++;
      if (cfg.strip_right) while (b > a && isWs(A[b - 1].c)) b--;
      return A.slice(a, b);
    }
    case "Prepend":
      return A.length ? [...inserted(cfg.prepend, A[0]), ...A] : A;
    case "Replace":
      return replace(A, cfg.pattern, cfg.content);
    case "BertNormalizer":
      return bertNormalize(A, cfg);
    default:
      throw new Unalignable(`normalizer ${cfg.type} not modelled`);
  }
}

// ---- pre-tokenizers ------------------------------------------------------------------------

// HF NormalizedString::split: spans are the pattern's matches; every other stretch is a
// non-match; invert swaps the two; behavior decides what is kept and merged.
export function splitBy(A, spans, behavior, invert = false) {
  if (A.length === 0) return [];
  let segs = [];
  let p = 0;
  for (const [a, b] of spans) {
    if (a > p) segs.push([p, a, false]);
    segs.push([a, b, true]);
    p = b;
  }
  if (p < A.length) segs.push([p, A.length, false]);
  if (invert) segs = segs.map(([a, b, m]) => [a, b, !m]);
  let keep; // [a, b, remove]
  switch (behavior) {
    case "Removed":
      keep = segs;
      break;
    case "Isolated":
      keep = segs.map(([a, b]) => [a, b, false]);
      break;
    case "Contiguous": {
      keep = [];
      let prev = false;
      for (const [a, b, m] of segs) {
        if (m === prev && keep.length) keep[keep.length - 1][1] = b;
        else keep.push([a, b, false]);
        prev = m;
      }
      break;
    }
    case "MergedWithPrevious": {
      keep = [];
      let prev = false;
      for (const [a, b, m] of segs) {
        if (m && !prev && keep.length) keep[keep.length - 1][1] = b;
        else keep.push([a, b, false]);
        prev = m;
      }
      break;
    }
    case "MergedWithNext": {
      keep = [];
      let prev = false;
      for (const [a, b, m] of [...segs].reverse()) {
        if (m && !prev && keep.length) keep[keep.length - 1][0] = a;
        else keep.push([a, b, false]);
        prev = m;
      }
      keep.reverse();
      break;
    }
    default:
      throw new Unalignable(`split behavior ${behavior}`);
  }
  return keep.filter(([a, b, rm]) => !rm && b > a).map(([a, b]) => A.slice(a, b));
}

const GPT2_RE = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
const W = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}"; // Unicode \w (UTS #18)
const WHITESPACE_RE = new RegExp(`[${W}]+|[^${W}\\s]+`, "gu");

export const BYTES_TO_UNICODE = (() => {
  const bs = [];
  for (let b = 0x21; b <= 0x7e; b++) bs.push(b);
  for (let b = 0xa1; b <= 0xac; b++) bs.push(b);
  for (let b = 0xae; b <= 0xff; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) {
    if (!bs.includes(b)) {
      bs.push(b);
      cs.push(256 + n);
      n++;
    }
  }
  const map = new Array(256);
  bs.forEach((b, i) => (map[b] = String.fromCodePoint(cs[i])));
  return map;
})();

const enc = new TextEncoder();
const toByteLevel = (A) =>
  A.flatMap((x) => Array.from(enc.encode(x.c), (b) => ({ c: BYTES_TO_UNICODE[b], s: x.s, e: x.e, byteLevel: true })));

function preTokenizeWord(A, cfg) {
  switch (cfg.type) {
    case "Sequence":
      return cfg.pretokenizers.reduce((words, p) => words.flatMap((w) => preTokenizeWord(w, p)), [A]);
    case "BertPreTokenizer":
      return splitBy(A, charSpans(A, isWs), "Removed").flatMap((w) => splitBy(w, charSpans(w, isPunc), "Isolated"));
    case "Whitespace":
      return splitBy(A, regexSpans(A, WHITESPACE_RE), "Removed", true);
    case "WhitespaceSplit":
      return splitBy(A, charSpans(A, isWs), "Removed");
    case "Punctuation":
      return splitBy(A, charSpans(A, isPunc), cfg.behavior ?? "Isolated");
    case "Digits":
      return splitBy(A, charSpans(A, isNumeric), cfg.individual_digits ? "Isolated" : "Contiguous");
    case "Split":
      return splitBy(A, regexSpans(A, jsRegex(cfg.pattern)), cfg.behavior, cfg.invert ?? false);
    case "ByteLevel": {
      let w = A;
      if (cfg.add_prefix_space && w.length && w[0].c !== " ") w = [...inserted(" ", w[0]), ...w];
      const words = (cfg.use_regex ?? true) ? splitBy(w, regexSpans(w, GPT2_RE), "Isolated") : [w];
      return words.map(toByteLevel);
    }
    case "Metaspace": {
      const rep = cfg.replacement;
      let w = A.map((x) => (x.c === " " ? { ...x, c: rep } : x));
      let scheme = cfg.prepend_scheme ?? "always";
      if (cfg.add_prefix_space === false) scheme = "never";
      const startsWithRep = w.length && w[0].c === rep;
      const prepend = w.length && !startsWithRep && (scheme === "always" || (scheme === "first" && w[0].s === 0));
      if (prepend) w = [...inserted(rep, w[0]), ...w];
      return (cfg.split ?? true) ? splitBy(w, charSpans(w, (c) => c === rep), "MergedWithNext") : [w];
    }
    default:
      throw new Unalignable(`pre-tokenizer ${cfg.type} not modelled`);
  }
}

// ---- added tokens --------------------------------------------------------------------------

// Rust regex's Unicode \w, which HF's single_word test uses (`\w$`, `^\w`).
const isWordChar = (c) => new RegExp(`^[${W}]$`, "u").test(c);

// HF AddedVocabulary::find_matches on an aligned string: leftmost-longest, then single_word,
// lstrip, rstrip. Returns [{token} | {plain: A}] pieces covering A.
function findAdded(A, tokens) {
  if (!tokens.length || !A.length) return [{ plain: A }];
  const contents = tokens.map((t) => [...t.content]);
  const out = [];
  let from = 0; // start of the pending plain stretch
  let i = 0;
  while (i < A.length) {
    let best = null;
    tokens.forEach((t, k) => {
      const cs = contents[k];
      if (cs.length === 0 || i + cs.length > A.length) return;
      for (let j = 0; j < cs.length; j++) if (A[i + j].c !== cs[j]) return;
      if (!best || cs.length > best.len) best = { t, len: cs.length };
    });
    if (!best) {
      i++;
      continue;
    }
    let start = i;
    let stop = i + best.len;
    i = stop;
    const t = best.t;
    if (t.single_word) {
      const leftOk = start === 0 || !isWordChar(A[start - 1].c);
      const rightOk = stop === A.length || !isWordChar(A[stop].c);
      if (!leftOk || !rightOk) continue;
    }
    if (t.lstrip) while (start > from && isWs(A[start - 1].c)) start--;
    if (t.rstrip) while (stop < A.length && isWs(A[stop].c)) stop++;
    if (start > from) out.push({ plain: A.slice(from, start) });
    out.push({ token: t.orig ?? t, s: A[start].s, e: A[stop - 1].e });
    from = stop;
    i = stop;
  }
  if (from < A.length) out.push({ plain: A.slice(from) });
  return out;
}

// The text as HF cuts it: added tokens (with their original spans) and, between them, the
// words the normalizer and pre-tokenizer make of the rest.
export function segment(text, tj) {
  const added = tj.added_tokens ?? [];
  const raw = added.filter((t) => !t.normalized);
  // HF matches normalized tokens by their normalized content.
  const normTokens = added
    .filter((t) => t.normalized)
    .map((t) => ({ ...t, content: joined(normalize(aligned(t.content, 0), tj.normalizer)), orig: t }));
  const out = [];
  for (const piece of findAdded(aligned(text, 0), raw)) {
    if (piece.token) {
      out.push(piece);
      continue;
    }
    const N = normalize(piece.plain, tj.normalizer);
    for (const p2 of findAdded(N, normTokens)) {
      if (p2.token) out.push(p2);
      else if (p2.plain.length) {
        const words = tj.pre_tokenizer ? preTokenizeWord(p2.plain, tj.pre_tokenizer) : [p2.plain];
        out.push({ words: words.filter((w) => w.length) });
      }
    }
  }
  return out;
}

// ---- walking the oracle's tokens -----------------------------------------------------------

const BYTE_TOKEN = /^<0x([0-9A-Fa-f]{2})>$/;

function modelInfo(tj) {
  const m = tj.model;
  const info = { type: m.type, byteFallback: !!m.byte_fallback, prefix: null, unk: null, fuse: !!m.fuse_unk, vocab: null };
  if (m.type === "WordPiece") {
    info.prefix = m.continuing_subword_prefix ?? "##";
    info.unk = m.unk_token;
  } else if (m.type === "BPE") {
    info.unk = m.unk_token ?? null;
    info.vocab = new Set(Object.keys(m.vocab));
  } else if (m.type === "Unigram") {
    info.unk = m.unk_id != null ? m.vocab[m.unk_id][0] : null;
    info.fuse = true;
  }
  return info;
}

// Offsets of the tokens the model made of one run of words: walks toks from index ti until
// every character of the run is covered. Returns the offsets and the next token index.
function walkWords(words, toks, ti, info) {
  const W = words.map((w) => w.map((x) => ({ ...x, bytes: x.byteLevel ? null : enc.encode(x.c) })));
  const offsets = [];
  let wi = 0;
  let ui = 0;
  let bi = 0;
  const skipDone = () => {
    while (wi < W.length && ui >= W[wi].length) {
      wi++;
      ui = 0;
    }
  };
  // HF's convert_offsets: the start of the first character's alignment, the end of the last's.
  const span = (a, b) => [W[wi][a].s, W[wi][b - 1].e];
  const matchAt = (w, at, piece) => {
    const cs = [...piece];
    if (at + cs.length > w.length) return false;
    return cs.every((c, j) => w[at + j].c === c);
  };
  for (skipDone(); wi < W.length; skipDone()) {
    if (ti >= toks.length) throw new Unalignable("text left over after the last token");
    const t = toks[ti];
    const w = W[wi];
    const bm = BYTE_TOKEN.exec(t);
    if (bm && info.byteFallback && !w[ui].byteLevel && !(bi === 0 && matchAt(w, ui, t))) {
      const u = w[ui];
      if (u.bytes[bi] !== parseInt(bm[1], 16)) throw new Unalignable(`byte token ${t} does not match`);
      offsets.push([u.s, u.e]);
      ti++;
      bi++;
      if (bi === u.bytes.length) {
        ui++;
        bi = 0;
      }
      continue;
    }
    if (bi !== 0) throw new Unalignable(`token ${JSON.stringify(t)} starts inside a character`);
    if (info.unk !== null && t === info.unk && !matchAt(w, ui, t)) {
      let n;
      if (info.type === "WordPiece") {
        if (ui !== 0) throw new Unalignable("WordPiece unk inside a word");
        n = w.length;
      } else if (info.type === "BPE") {
        n = 1;
        if (info.fuse) while (ui + n < w.length && !info.vocab.has(w[ui + n].c)) n++;
      } else {
        // Unigram: the unknown run ends where the next token of the same word starts.
        const next = toks[ti + 1];
        n = w.length - ui;
        if (next !== undefined) {
          for (let k = 1; k < w.length - ui; k++) {
            if (matchAt(w, ui + k, next)) {
              n = k;
              break;
            }
          }
        }
      }
      offsets.push(span(ui, ui + n));
      ti++;
      ui += n;
      continue;
    }
    let piece = t;
    if (info.prefix !== null && ui > 0) {
      if (!piece.startsWith(info.prefix)) throw new Unalignable(`${JSON.stringify(t)} lacks ${info.prefix}`);
      piece = piece.slice(info.prefix.length);
    }
    if (!matchAt(w, ui, piece)) {
      const here = w.slice(ui, ui + 8).map((u) => u.c).join("");
      throw new Unalignable(`token ${JSON.stringify(t)} does not match the text at ${JSON.stringify(here)}`);
    }
    const n = [...piece].length;
    if (n === 0) throw new Unalignable(`empty token ${JSON.stringify(t)}`);
    offsets.push(span(ui, ui + n));
    ti++;
    ui += n;
  }
  return { offsets, ti };
}

// How many tokens the post-processor puts before and after a single sequence.
export function specialsAround(pp) {
  if (!pp) return [0, 0];
  switch (pp.type) {
    case "TemplateProcessing": {
      const i = pp.single.findIndex((x) => "Sequence" in x);
      return [i, pp.single.length - i - 1];
    }
    case "BertProcessing":
    case "RobertaProcessing":
      return [1, 1];
    case "ByteLevel":
      return [0, 0];
    case "Sequence":
      return pp.processors.map(specialsAround).reduce((a, b) => [a[0] + b[0], a[1] + b[1]], [0, 0]);
    default:
      throw new Unalignable(`post-processor ${pp.type} not modelled`);
  }
}

// HF byte_level::process_offsets. HF counts the spaces in characters and moves byte offsets
// by that much; that is a move by characters only over one-byte characters, which the trimmed
// ones must therefore be (a prefix space stands for the character it was put in front of).
// `values` are the tokens' strings as HF has them: the piece, but for an added token found in
// the text the text it matched, with the whitespace lstrip/rstrip swallowed.
function trimOffsets(text, values, offsets, addPrefixSpace) {
  const cps = [...text];
  const oneByte = (a, b) => {
    for (let p = a; p < b; p++) if (cps[p].codePointAt(0) > 0x7f) throw new Unalignable("trim_offsets would cut a multi-byte character");
  };
  const sp = (c) => c === "Ġ" || isWs(c);
  return offsets.map(([s, e], i) => {
    const cs = [...values[i]];
    let lead = 0;
    while (lead < cs.length && sp(cs[lead])) lead++;
    let trail = 0;
    while (trail < cs.length && sp(cs[cs.length - 1 - trail])) trail++;
    if (lead > 0) {
      if ((i === 0 || s === 0) && addPrefixSpace && lead === 1) lead = 0;
      oneByte(s, Math.min(s + lead, e));
      s = Math.min(s + lead, e);
    }
    if (trail > 0 && e >= trail) {
      oneByte(Math.max(e - trail, s), e);
      e = Math.max(e - trail, s);
    }
    return [s, e];
  });
}

function trimmer(pp) {
  if (!pp) return null;
  if ((pp.type === "ByteLevel" || pp.type === "RobertaProcessing") && pp.trim_offsets) return pp;
  if (pp.type === "Sequence") {
    const found = pp.processors.map(trimmer).filter(Boolean);
    return found[0] ?? null;
  }
  return null;
}

// Offsets for the oracle's tokens of `text`. `plain` is its token list without special
// tokens, `full` the list it returned for this add_special_tokens setting.
export function offsetsFor(tj, text, plain, full, addSpecial) {
  const info = modelInfo(tj);
  const offsets = [];
  const values = [...plain];
  const cps = [...text];
  let ti = 0;
  for (const seg of segment(text, tj)) {
    if (seg.token) {
      if (plain[ti] !== seg.token.content) throw new Unalignable(`expected added token ${JSON.stringify(seg.token.content)}, oracle has ${JSON.stringify(plain[ti])}`);
      offsets.push([seg.s, seg.e]);
      values[ti] = cps.slice(seg.s, seg.e).join("");
      ti++;
      continue;
    }
    const r = walkWords(seg.words, plain, ti, info);
    offsets.push(...r.offsets);
    ti = r.ti;
  }
  if (ti !== plain.length) throw new Unalignable("oracle has more tokens than the text accounts for");
  let base = offsets;
  const tr = trimmer(tj.post_processor);
  if (tr) base = trimOffsets(text, values, base, tr.add_prefix_space ?? false);
  if (!addSpecial) {
    if (full.length !== plain.length) throw new Unalignable("add_special_tokens=false added tokens");
    return base;
  }
  const [pre, post] = specialsAround(tj.post_processor);
  if (full.length !== pre + plain.length + post) throw new Unalignable("post-processor added an unexpected number of tokens");
  for (let i = 0; i < plain.length; i++) if (full[pre + i] !== plain[i]) throw new Unalignable("post-processor changed the tokens");
  const zero = (n) => Array.from({ length: n }, () => [0, 0]);
  return [...zero(pre), ...base, ...zero(post)];
}
