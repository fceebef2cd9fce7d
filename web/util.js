// util.js: small helpers the viewer's modules share (DOM and SVG builders,
// colours, number and token formatting). No state, no requests.

export const SVG_NS = "http://www.w3.org/2000/svg";
export const FONT = '12px system-ui, -apple-system, "Segoe UI", "Noto Sans KR", "NanumGothic", sans-serif';

// ColorBrewer "Blues" (9 classes), light to dark: more attention, darker.
export const RAMP = ["#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"];

// ColorBrewer "RdBu" (9 classes), blue (-1) through white (0) to red (+1):
// values with a sign, such as a positional encoding's sin and cos.
export const DIVERGING = ["#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582", "#d6604d", "#b2182b"];

// One colour per head (Tableau 10, then evenly spaced hues past ten heads).
const HEAD_COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
export function headColour(h) {
	return h < HEAD_COLOURS.length ? HEAD_COLOURS[h] : `hsl(${(h * 137.508) % 360}, 60%, 45%)`;
}

export const $ = (id) => document.getElementById(id);

export function el(tag, attrs = {}, ...children) {
	const node = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs)) {
		if (k === "class") node.className = v;
		else if (k === "text") node.textContent = v;
		else node.setAttribute(k, v);
	}
	for (const c of children) node.append(c);
	return node;
}

export function svg(tag, attrs = {}) {
	const node = document.createElementNS(SVG_NS, tag);
	for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
	return node;
}

export function percent(w) {
	return `${(w * 100).toFixed(1)}%`;
}

export function shapeOf(x) {
	const dims = [];
	while (Array.isArray(x)) {
		dims.push(x.length);
		x = x[0];
	}
	return dims;
}

export function argmax(row) {
	let best = 0;
	for (let j = 1; j < row.length; j++) if (row[j] > row[best]) best = j;
	return best;
}

// Each ramp's colours parsed once: a big heatmap asks a million times.
const parsedRamps = new WeakMap();
function parsed(ramp) {
	let p = parsedRamps.get(ramp);
	if (!p) parsedRamps.set(ramp, (p = ramp.map((c) => parseInt(c.slice(1), 16))));
	return p;
}

// A ColorBrewer ramp colour for t in [0, 1], interpolated in RGB: [r, g, b]
// (a canvas writes these into its pixels: heatcanvas.js).
export function rgb(t, ramp = RAMP) {
	t = Math.min(1, Math.max(0, t)) * (ramp.length - 1);
	const i = Math.min(ramp.length - 2, Math.floor(t));
	const f = t - i;
	const p = parsed(ramp);
	const a = p[i];
	const b = p[i + 1];
	const mix = (s) => Math.round(((a >> s) & 255) * (1 - f) + ((b >> s) & 255) * f);
	return [mix(16), mix(8), mix(0)];
}

// The same colour as CSS: what an SVG cell's fill says.
export function colour(t, ramp = RAMP) {
	const [r, g, b] = rgb(t, ramp);
	return `rgb(${r}, ${g}, ${b})`;
}

let measureCtx = null;
export function textWidth(s) {
	measureCtx ??= document.createElement("canvas").getContext("2d");
	measureCtx.font = FONT;
	return measureCtx.measureText(s).width;
}

// Cut between user-perceived characters (grapheme clusters), not code
// points: a flag, an emoji sequence, a letter with its combining accent or a
// Hangul syllable typed as jamo (NFD) is one character, kept whole.
const graphemes = typeof Intl.Segmenter === "function" ? new Intl.Segmenter(undefined, { granularity: "grapheme" }) : null;

export function shorten(s, max = 10) {
	const chars = graphemes ? Array.from(graphemes.segment(s), (g) => g.segment) : [...s];
	return chars.length > max ? chars.slice(0, max - 1).join("") + "…" : s;
}

// Whether a text is Korean enough for the page to speak Korean (any Hangul).
export function isKorean(s) {
	return /[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]/.test(s ?? "");
}

// Characters a piece may hold that show nothing, or reorder what follows
// them: the other control characters, and the bidirectional marks,
// embeddings, overrides and isolates (U+202E would turn "abc → def" around
// on every line that names the piece).
const UNSEEN = /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

// A tokenizer's piece as a person reads it: a leading space as "␣" (so " it"
// and "it" differ on screen), newlines and tabs as symbols, any other
// UNSEEN character as its code point, "⟨U+202E⟩".
export function showToken(t) {
	const s = String(t);
	if (s === "") return "∅";
	const named = (c) => `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`;
	return s.replace(/^ /, "␣").replaceAll("\n", "↵").replaceAll("\t", "⇥").replace(UNSEEN, named);
}

// Roving focus (WAI-ARIA's pattern for a composite widget): of the items
// matching selector in container only one is a tab stop (current, else the
// first), and the arrow keys move focus among them, the tab stop with it:
// left and right by one, up and down by columns (1 for a list). So a grid of
// heads or a row of tokens costs the keyboard one Tab, not one per item.
// A container kept across redraws gets its listener once; it reads the
// items there are at the key press.
export function rovingFocus(container, selector, current, columns) {
	const items = [...container.querySelectorAll(selector)];
	const start = items.includes(current) ? current : items[0];
	for (const it of items) it.setAttribute("tabindex", it === start ? "0" : "-1");
	if (container.dataset.roving) return;
	container.dataset.roving = "on";
	container.addEventListener("keydown", (ev) => {
		const now = [...container.querySelectorAll(selector)];
		const it = ev.target.closest?.(selector);
		const k = now.indexOf(it);
		const step = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -columns, ArrowDown: columns }[ev.key];
		if (k < 0 || !step || k + step < 0 || k + step >= now.length) return;
		ev.preventDefault();
		it.setAttribute("tabindex", "-1");
		now[k + step].setAttribute("tabindex", "0");
		now[k + step].focus();
	});
}

// A request without its inputs (text, embeddings, tokens) and without asking
// to see the positions, q, k and v or the heads' outputs (which change no
// weight), as a string: what says which model, settings, mask and positional
// encoding an answer is of. app.js buildRequest adds "head_outputs" beside
// "projections", modelRequest neither: both are left out, or Find heads would
// take every one-layer model drawn for another.
export function specKey(req) {
	const { text, embeddings, tokens, positions, projections, head_outputs, ...spec } = req ?? {};
	return JSON.stringify(spec);
}

// Offsets [start, end) in code points of each whitespace-split token of text
// (for models that split on spaces and send no offsets of their own).
export function whitespaceOffsets(text, tokens) {
	const cps = [...text];
	const out = [];
	let at = 0;
	for (const t of tokens) {
		const tc = [...String(t)];
		let found = -1;
		for (let i = at; i + tc.length <= cps.length; i++) {
			if (tc.every((c, k) => cps[i + k] === c)) {
				found = i;
				break;
			}
		}
		if (found < 0) return null;
		out.push([found, found + tc.length]);
		at = found + tc.length;
	}
	return out;
}

// "parse;dur=0.020, queue;dur=0.010" -> [{name: "parse", dur: 0.02}, ...]
export function parseServerTiming(header) {
	if (!header) return [];
	return header
		.split(",")
		.map((part) => part.trim())
		.filter(Boolean)
		.map((part) => {
			const [name, ...params] = part.split(";");
			const entry = { name: name.trim() };
			for (const p of params) {
				const [k, v = ""] = p.split("=");
				if (k.trim() === "dur") entry.dur = Number(v);
				if (k.trim() === "desc") entry.desc = v.trim().replace(/^"|"$/g, "");
			}
			return entry;
		});
}

// The largest magnitude in a matrix's rows, at least 1e-9: a diverging colour
// scale's end. A loop: Math.max(...m.flat()) throws past some 150,000 entries,
// a similarity of 400 positions.
export function absMax(rows) {
	let top = 1e-9;
	for (const row of rows) for (const v of row) top = Math.max(top, Math.abs(v));
	return top;
}

// A tensor of the answer as numbers ("-Infinity" strings become -Infinity).
export function toNumbers(x) {
	return Array.isArray(x) ? x.map(toNumbers) : Number(x);
}
