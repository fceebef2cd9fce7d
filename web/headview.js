// headview.js: the head view (bertviz's): the tokens twice, queries on the
// left and keys on the right, a line from each query to each key it attends
// to, as opaque as the weight, one colour per head; heads toggle on and off.
// Pointing at a token on the left keeps only its lines.
//
// drawHeadView(container, {heads: [H][L][L] weights, tokens (display strings),
//                          enabled: Set of heads shown, onToggle(h)})

import { el, headColour, rovingFocus, shorten, svg, textWidth } from "./util.js";

const MIN_WEIGHT = 0.02; // lighter lines are not drawn
const ROW = 22;

export function drawHeadView(container, { heads, tokens, enabled, onToggle }) {
	const H = heads.length;
	const L = tokens.length;
	const toggles = el("div", { class: "head-toggles", role: "group", "aria-label": "Heads shown" });
	for (let h = 0; h < H; h++) {
		const b = el("button", { type: "button", class: "toggle", "aria-pressed": String(enabled.has(h)), text: `head ${h}` });
		b.dataset.head = String(h);
		b.prepend(el("span", { class: "swatch-head", "aria-hidden": "true" }));
		b.firstChild.style.background = headColour(h);
		b.addEventListener("click", () => onToggle(h));
		toggles.append(b);
	}
	const labels = tokens.map((t) => shorten(t, 14));
	const colW = Math.ceil(Math.max(...labels.map(textWidth), 20)) + 10;
	const gap = 200;
	const width = colW * 2 + gap;
	const height = L * ROW + 8;
	const root = svg("svg", { class: "lines", viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": `Head view: ${L} tokens, lines from each query (left) to the keys it attends to (right)` });
	const x1 = colW;
	const x2 = colW + gap;
	const y = (i) => 4 + i * ROW + ROW / 2;
	const g = svg("g", { class: "links" });
	for (let h = 0; h < H; h++) {
		if (!enabled.has(h)) continue;
		const w = heads[h];
		for (let i = 0; i < L; i++) {
			for (let j = 0; j < L; j++) {
				const v = w[i][j];
				if (!(v >= MIN_WEIGHT)) continue;
				g.append(svg("line", { x1: x1 + 2, y1: y(i), x2: x2 - 2, y2: y(j), stroke: headColour(h), "stroke-opacity": Math.min(1, v).toFixed(3), "stroke-width": 2, "data-head": h, "data-q": i, "data-k": j }));
			}
		}
	}
	root.append(g);
	for (let i = 0; i < L; i++) {
		const left = svg("text", { class: "hv-token q", x: x1 - 6, y: y(i), "text-anchor": "end", "dominant-baseline": "central" });
		left.textContent = labels[i];
		left.dataset.tok = String(i);
		const right = svg("text", { class: "hv-token k", x: x2 + 6, y: y(i), "dominant-baseline": "central" });
		right.textContent = labels[i];
		right.dataset.tok = String(i);
		root.append(left, right);
	}
	// one query's lines only while it is pointed at or focused
	const only = (i) => {
		for (const line of g.children) line.classList.toggle("dim", i !== null && line.dataset.q !== String(i));
	};
	root.addEventListener("pointerover", (ev) => {
		const t = ev.target.closest?.("text.q");
		only(t ? Number(t.dataset.tok) : null);
	});
	root.addEventListener("pointerleave", () => only(null));
	root.addEventListener("focusin", (ev) => only(Number(ev.target.dataset.tok)));
	root.addEventListener("focusout", () => only(null));
	rovingFocus(root, "text.q", null, 1);
	const scroller = el("div", { class: "hv-scroll" }, root);
	container.replaceChildren(toggles, scroller);
}
