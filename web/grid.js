// grid.js: the model view (bertviz's): one small heatmap per head, layers as
// rows and heads as columns, each a button that opens the head large. After
// "Find heads", each cell carries its three scores (findheads.js) and a badge
// for each behaviour it shows.
//
// drawGrid(container, {layers: [layers][H][L][L], layerIds, kind, found,
//                      selected: {layer, head}, onPick(layerIndex, head)})

import { BEHAVIOURS, MARK_AT } from "./findheads.js";
import { isMasked } from "./heatmap.js";
import { colour, el, rovingFocus } from "./util.js";

const THUMB = 64; // CSS pixels per thumbnail side

// One head's heatmap on a canvas, scaled to its own largest value (weights)
// or its own finite range (scores); masked cells light grey. Past one cell
// per pixel each pixel shows the largest of its cells (a thin diagonal stays
// visible), one fillRect per pixel instead of per cell.
function thumbnail(w, kind, hidden) {
	const L = w.length;
	const ratio = window.devicePixelRatio || 1;
	const side = Math.round(THUMB * ratio);
	const c = el("canvas", { width: String(side), height: String(side), "aria-hidden": "true" });
	const g = c.getContext("2d");
	let lo = Infinity;
	let hi = -Infinity;
	for (const row of w) for (const v of row) if (Number.isFinite(v) && !(kind === "weights" && v === 0)) {
		lo = Math.min(lo, v);
		hi = Math.max(hi, v);
	}
	if (kind === "weights") lo = 0;
	const n = Math.min(L, side); // pixels (or cells) per side
	const { top, open } = pooled(w, kind, hidden, n);
	const step = side / Math.max(n, 1);
	for (let y = 0; y < n; y++) {
		for (let x = 0; x < n; x++) {
			const k = y * n + x;
			g.fillStyle = open[k] ? colour((top[k] - lo) / (hi - lo || 1)) : "#eceef2";
			g.fillRect(Math.floor(x * step), Math.floor(y * step), Math.ceil(step), Math.ceil(step));
		}
	}
	return c;
}

// w's L x L cells pooled into n x n bins (n <= L; n = L: one cell each):
// each bin's largest visible value (top) and whether any cell is visible (open).
function pooled(w, kind, hidden, n) {
	const L = w.length;
	const top = new Float64Array(n * n).fill(-Infinity);
	const open = new Uint8Array(n * n);
	for (let i = 0; i < L; i++) {
		const y = Math.floor((i * n) / L);
		for (let j = 0; j < L; j++) {
			const v = w[i][j];
			if (isMasked(v, kind, hidden, i, j)) continue;
			const k = y * n + Math.floor((j * n) / L);
			open[k] = 1;
			if (v > top[k]) top[k] = v;
		}
	}
	return { top, open };
}

function scoreText(s) {
	return BEHAVIOURS.map((b) => `${b.label} ${s[b.key].toFixed(2)}`).join(", ");
}

export function drawGrid(container, opts) {
	const { layers, layerIds, kind, hiddenAt, found, selected, onPick } = opts;
	const H = layers[0]?.length ?? 0;
	const grid = el("div", { class: "grid", role: "group", "aria-label": `${layers.length} layers by ${H} heads; choose a head to open it large` });
	grid.style.gridTemplateColumns = `auto repeat(${H}, ${THUMB + 8}px)`;
	grid.append(el("span", { class: "corner", "aria-hidden": "true", text: "L \\ H", title: "layer \\ head" }));
	for (let h = 0; h < H; h++) grid.append(el("span", { class: "col-label", "aria-hidden": "true", text: String(h) }));
	layers.forEach((heads, l) => {
		const L = layerIds[l];
		grid.append(el("span", { class: "row-label", "aria-hidden": "true", text: String(L) }));
		heads.forEach((w, h) => {
			const s = found?.[l]?.[h];
			let label = `Layer ${L}, head ${h}`;
			if (s) label += `: ${scoreText(s)}`;
			const b = el("button", { type: "button", class: "cell", "aria-label": label, title: label });
			b.dataset.layer = String(L);
			b.dataset.head = String(h);
			b.setAttribute("aria-pressed", String(selected?.layer === L && selected?.head === h));
			b.append(thumbnail(w, kind, hiddenAt(l)));
			if (s) {
				for (const beh of BEHAVIOURS) b.dataset[beh.key] = s[beh.key].toFixed(4);
				const marks = BEHAVIOURS.filter((beh) => s[beh.key] >= MARK_AT);
				if (marks.length > 0) {
					b.classList.add("marked");
					b.append(el("span", { class: "badges" }, ...marks.map((beh) => el("span", { class: `badge ${beh.key}`, text: `${beh.short} ${s[beh.key].toFixed(2)}` }))));
				}
			}
			b.addEventListener("click", () => onPick(l, h));
			grid.append(b);
		});
	});
	// one tab stop (the head shown large); arrow keys move as in a table
	rovingFocus(grid, "button.cell", grid.querySelector('button.cell[aria-pressed="true"]'), H);
	container.replaceChildren(grid);
}
