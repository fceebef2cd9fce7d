// headview.js: the head view (bertviz's): the tokens twice, queries on the
// left and keys on the right, a line from each query to each key it attends
// to, as opaque as the weight, one colour per head; heads toggle on and off.
// Pointing at a token on the left, or focusing it, keeps only its lines and
// reads out each shown head's strongest key for it. Short inputs draw
// one SVG line per pair; past LINES_CANVAS_PAST, the lines go on a canvas
// (headcanvas.js) under the same SVG of tokens.
//
// drawHeadView(container, {heads: [H][L][L] weights, tokens (display strings),
//                          lang ("ko" | "en"), enabled: Set of heads shown, onToggle(h)})

import { linesCanvas } from "./headcanvas.js";
import { CANVAS_PAST } from "./heatcanvas.js";
import { attendsLine, sayReadout, word } from "./heatmap.js";
import { argmax, el, headColour, rovingFocus, shorten, svg, textWidth } from "./util.js";

const MIN_WEIGHT = 0.02; // lighter lines are not drawn
const ROW = 22;

// Past 64 tokens (the heatmaps' CANVAS_PAST) or this many lines, a canvas:
// an SVG line each costs a DOM node to draw, paint on scrolling and a class
// to flip when a query is pointed at. Measured (bench/README.md, "The
// viewer's heatmaps"), 12 heads: at 64 tokens (6,100 lines) the SVG is as
// quick, at 128 (13,400) pointing and leaving take it 90 and 350 ms, the
// canvas 30 and 35; at 1024 (120,000) 0.7 and 3.3 s.
export const LINES_CANVAS_PAST = 10000;

// The scrolling each container's canvas follows, let go when it is drawn anew.
const following = new WeakMap();

export function drawHeadView(container, { heads, tokens, lang, enabled, onToggle }) {
	following.get(container)?.abort();
	const L = tokens.length;
	const toggles = headToggles(heads.length, enabled, onToggle);
	const labels = tokens.map((t) => shorten(t, 14));
	const colW = Math.ceil(Math.max(...labels.map(textWidth), 20)) + 10;
	const gap = 200;
	const width = colW * 2 + gap;
	const height = L * ROW + 8;
	const root = svg("svg", { class: "lines", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": `Head view: ${L} tokens, lines from each query (left) to the keys it attends to (right)` });
	const x1 = colW;
	const x2 = colW + gap;
	const y = (i) => 4 + i * ROW + ROW / 2;
	// only(i): query i's lines only (null: every query's)
	const { view, only } =
		L * L > CANVAS_PAST || countLines(heads, enabled) > LINES_CANVAS_PAST
			? canvasLines(container, root, heads, enabled, { x1, gap, width, height, y })
			: svgLines(root, heads, enabled, x1, x2, y);
	appendTokens(root, labels, x1, x2, y);
	const own = el("p", { class: "map-readout" });
	wirePointing(root, only, (i) => sayQuery(heads, enabled, tokens, lang, own, i));
	const scroller = el("div", { class: "hv-scroll" }, view);
	container.replaceChildren(toggles, scroller, own);
}

// Query i's read-out, as a heatmap's cell is read out (heatmap.js
// sayReadout): the strongest key of each shown head, on the page's line
// (the one a screen reader hears) and the head view's own.
function sayQuery(heads, enabled, tokens, lang, own, i) {
	const shown = [...enabled].filter((h) => h < heads.length).sort((a, b) => a - b);
	const perHead = shown.map((h) => {
		const row = heads[h][i];
		const j = argmax(row);
		return [`head ${h}: `, ...attendsLine(tokens[i], tokens[j], row[j], lang)];
	});
	// parts, each word isolated (heatmap.js said)
	const line = perHead.length > 0 ? perHead.flatMap((s, n) => (n > 0 ? ["; ", ...s] : s)) : [word(tokens[i]), ": no head shown"];
	sayReadout(["Head view: ", ...line], line, lang, own);
}

// One button per head, aria-pressed while its lines are shown.
function headToggles(H, enabled, onToggle) {
	const toggles = el("div", { class: "head-toggles", role: "group", "aria-label": "Heads shown" });
	for (let h = 0; h < H; h++) {
		const b = el("button", { type: "button", class: "toggle", "aria-pressed": String(enabled.has(h)), text: `head ${h}` });
		b.dataset.head = String(h);
		b.prepend(el("span", { class: "swatch-head", "aria-hidden": "true" }));
		b.firstChild.style.background = headColour(h);
		b.addEventListener("click", () => onToggle(h));
		toggles.append(b);
	}
	return toggles;
}

// How many lines the shown heads would draw.
function countLines(heads, enabled) {
	let n = 0;
	for (const h of enabled) for (const row of heads[h] ?? []) for (const v of row) if (v >= MIN_WEIGHT) n++;
	return n;
}

// An SVG line per (shown head, query, key) of weight MIN_WEIGHT or more, in
// root; only(i) hides the others' (class dim).
function svgLines(root, heads, enabled, x1, x2, y) {
	const g = svg("g", { class: "links" });
	for (let h = 0; h < heads.length; h++) {
		if (!enabled.has(h)) continue;
		const w = heads[h];
		for (let i = 0; i < w.length; i++) {
			for (let j = 0; j < w.length; j++) {
				const v = w[i][j];
				if (!(v >= MIN_WEIGHT)) continue;
				g.append(svg("line", { x1: x1 + 2, y1: y(i), x2: x2 - 2, y2: y(j), stroke: headColour(h), "stroke-opacity": Math.min(1, v).toFixed(3), "stroke-width": 2, "data-head": h, "data-q": i, "data-k": j }));
			}
		}
	}
	root.append(g);
	const only = (i) => {
		for (const line of g.children) line.classList.toggle("dim", i !== null && line.dataset.q !== String(i));
	};
	return { view: root, only };
}

// The lines on a canvas (headcanvas.js) under root, the two in one box that
// scales them together; only(i) draws the canvas again for query i. The
// canvas follows the page's scrolling until container's view is drawn anew.
function canvasLines(container, root, heads, enabled, { x1, gap, width, height, y }) {
	const follow = new AbortController();
	following.set(container, follow);
	const canvas = linesCanvas(heads, enabled, MIN_WEIGHT, gap, height, { x1: 2, x2: gap - 2, y }, follow.signal);
	canvas.style.left = `${((x1 / width) * 100).toFixed(4)}%`;
	canvas.style.width = `${((gap / width) * 100).toFixed(4)}%`;
	const view = el("div", { class: "hv-canvas" }, canvas, root);
	view.style.width = `${width}px`;
	const only = (i) => {
		const q = Number.isInteger(i) ? i : null;
		if (canvas.dataset.query !== String(q ?? "")) canvas.draw(q);
	};
	return { view, only };
}

// Each token as a query (left, focusable) and as a key (right).
function appendTokens(root, labels, x1, x2, y) {
	for (let i = 0; i < labels.length; i++) {
		const left = svg("text", { class: "hv-token q", x: x1 - 6, y: y(i), "text-anchor": "end", "dominant-baseline": "central" });
		left.textContent = labels[i];
		left.dataset.tok = String(i);
		const right = svg("text", { class: "hv-token k", x: x2 + 6, y: y(i), "dominant-baseline": "central" });
		right.textContent = labels[i];
		right.dataset.tok = String(i);
		root.append(left, right);
	}
}

// One query's lines only while it is pointed at or focused, and say(i) its read-out.
function wirePointing(root, only, say) {
	root.addEventListener("pointerover", (ev) => {
		const t = ev.target.closest?.("text.q");
		only(t ? Number(t.dataset.tok) : null);
		if (t) say(Number(t.dataset.tok));
	});
	root.addEventListener("pointerleave", () => only(null));
	root.addEventListener("focusin", (ev) => {
		// a query token; not root itself (focusable by a click, see below),
		// which is no query: all lines would dim and say() would throw
		const t = ev.target.closest?.("text.q");
		if (!t) return;
		only(Number(t.dataset.tok));
		say(Number(t.dataset.tok));
	});
	// Chromium makes an SVG element with focus listeners a tab stop of its
	// own: the query tokens are the head view's one tab stop (rovingFocus)
	root.setAttribute("tabindex", "-1");
	root.addEventListener("focusout", () => only(null));
	rovingFocus(root, "text.q", null, 1);
}
