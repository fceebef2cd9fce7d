// heatmap.js: one head's attention as a heatmap (rows: queries, columns:
// keys): an SVG with one rect per cell or, past CANVAS_PAST cells, the cells
// on a canvas (heatcanvas.js paints them) under an SVG of its labels; its
// tooltip and read-out, the "who each word attends to most" lines under it,
// and its table twin (past CANVAS_PAST cells, a note and a CSV download).
// Lines and read-outs speak the page's language: Korean for a Korean
// sentence ("나는 → 맛있는에 주목 (56.3%)"), English otherwise ("it → animal
// (41%)").
//
// ctx = {queryTokens, keyTokens (display strings), lang ("ko" | "en"),
//        kind ("weights" | "scores" | "values": plain numbers, such as a
//        positional encoding, none masked and no row's largest outlined),
//        lo, hi (the colour scale's ends), ramp (its colours; util.js RAMP
//        unless given), numbers (print values in big cells), hidden (the
//        mask's cells, or null when not known: render.js hiddenOf), axes
//        (what rows and columns are, for screen readers; default queries, keys)}

import { CANVAS_PAST, canvasCell, cellAt, cellsCanvas } from "./heatcanvas.js";
import { $, RAMP, argmax, colour, el, percent, shorten, svg, textWidth } from "./util.js";

// A cell query i cannot see: a score of -Infinity, or a weight of exactly 0
// where the mask hides (i, j). A 0 the mask does not explain is a weight
// that underflowed (ALiBi on a long text), drawn as the 0 it is; with the
// mask not known, every 0 is taken for masked.
export function isMasked(v, kind, hidden, i, j) {
	if (kind === "scores") return v === -Infinity;
	if (kind === "values") return false;
	return v === 0 && (hidden ? hidden(i, j) : true);
}

// A read-out or tooltip is a list of parts: strings, and words (tokens),
// word(t). said(parts) draws each word in a <bdi> of its own: two
// right-to-left words (Hebrew, Arabic) with an arrow between them would
// otherwise be one right-to-left run, "q → k" drawn "k → q", as if the key
// looked at the query. The text (what a screen reader says) is unchanged.
// A strong word is drawn bold too.
export function word(t, strong = false) {
	return { word: t, strong };
}

export function said(parts) {
	return parts.map((p) => {
		if (typeof p === "string") return p;
		const b = el("bdi", { text: p.word });
		return p.strong ? el("b", {}, b) : b;
	});
}

// The read-out of one query's strongest key, in the page's language (parts);
// strongKey: the key bold, as the list of who attends to whom draws it.
export function attendsLine(q, k, w, lang, strongKey = false) {
	const rest = lang === "ko" ? `에 주목 (${percent(w)})` : ` (${Math.round(w * 100)}%)`;
	return [word(q), " → ", word(k, strongKey), rest];
}

function nothingVisible(q, lang) {
	return [word(q), lang === "ko" ? " → (보이는 단어 없음)" : " → (no visible word)"];
}

function cellSize(L) {
	if (L <= 6) return 44;
	if (L <= 10) return 32;
	if (L <= 16) return 24;
	if (L <= 32) return 16;
	return 10;
}

function titleOf(text) {
	const t = svg("title");
	t.textContent = text;
	return t;
}

function fillOf(v, ctx, i, j) {
	if (isMasked(v, ctx.kind, ctx.hidden, i, j)) return "url(#attnd-masked)";
	return colour((v - ctx.lo) / (ctx.hi - ctx.lo || 1), ctx.ramp);
}

// Light text on a dark cell: the top of a ramp, or either end of a diverging one.
function lightText(v, ctx) {
	const t = (v - ctx.lo) / (ctx.hi - ctx.lo || 1);
	return ctx.ramp && ctx.ramp !== RAMP ? Math.abs(t - 0.5) > 0.3 : t > 0.55;
}

// Where the axes and cells go: labels of fontPx (9 px when rows are under
// 13 px: style.css .map.dense), one every step rows and columns, never
// taller than their spacing; key labels stand upright (-90 degrees) when at
// -45 their neighbours, spacing * sin 45 apart, would overlap.
function layoutOf(qTok, kTok, cell, step) {
	const pad = 6;
	const qLabels = qTok.map((t) => shorten(t));
	const kLabels = kTok.map((t) => shorten(t));
	const spacing = cell * step;
	const dense = spacing < 13;
	const fontPx = dense ? 9 : 12;
	const widthOf = (t) => (textWidth(t) * fontPx) / 12; // textWidth measures at 12 px
	const left = Math.ceil(Math.max(...qLabels.map(widthOf), 10)) + pad * 2;
	const kWidest = Math.max(...kLabels.map(widthOf), 10);
	const rotate = kWidest > spacing - 4;
	const upright = rotate && spacing * Math.SQRT1_2 < fontPx;
	const head = !rotate ? 22 : upright ? Math.ceil(kWidest) + 12 : Math.ceil(kWidest * 0.72) + 18;
	const width = left + kTok.length * cell + (rotate && !upright ? Math.ceil(kWidest * 0.5) : pad);
	const height = head + qTok.length * cell + 2;
	return { pad, qLabels, kLabels, cell, step, dense, left, head, rotate, upright, width, height };
}

function ariaLabel(title, ctx, Lq, Lk) {
	return `${title}: ${Lq} ${ctx.axes?.[0] ?? "queries"} by ${Lk} ${ctx.axes?.[1] ?? "keys"}. Arrow keys move between cells.`;
}

// The key labels across the top and the query labels down the left side,
// one every lay.step (each with its whole token as a title).
function appendLabels(root, ctx, lay) {
	const { left, head, cell, pad, upright, rotate } = lay;
	for (let j = 0; j < ctx.keyTokens.length; j += lay.step) {
		const x = left + j * cell + cell / 2;
		const t = svg("text", upright
			? { class: "klabel", x: 0, y: 0, transform: `translate(${x} ${head - 6}) rotate(-90)`, "text-anchor": "start", "dominant-baseline": "central" }
			: rotate
				? { class: "klabel", x: 0, y: 0, transform: `translate(${x + 3} ${head - 6}) rotate(-45)`, "text-anchor": "start" }
				: { class: "klabel", x, y: head - 7, "text-anchor": "middle" });
		t.textContent = lay.kLabels[j];
		t.dataset.tok = String(j);
		t.append(titleOf(ctx.keyTokens[j]));
		root.append(t);
	}
	for (let i = 0; i < ctx.queryTokens.length; i += lay.step) {
		const t = svg("text", { class: "qlabel", x: left - pad, y: head + i * cell + cell / 2, "text-anchor": "end", "dominant-baseline": "central" });
		t.textContent = lay.qLabels[i];
		t.dataset.tok = String(i);
		t.append(titleOf(ctx.queryTokens[i]));
		root.append(t);
	}
}

// Each row's largest cell, outlined (weights and scores; not where masked).
function bestOutline(w, ctx, lay, i) {
	const best = argmax(w[i]);
	if (ctx.kind === "values" || isMasked(w[i][best], ctx.kind, ctx.hidden, i, best)) return null;
	const { left, head, cell } = lay;
	return svg("rect", { class: "best", x: left + best * cell + 1, y: head + i * cell + 1, width: cell - 3, height: cell - 3 });
}

// The heatmap of w [Lq][Lk] titled title; big: cells at least 24 px. Up to
// CANVAS_PAST cells an SVG with one rect per cell (what the tutorials' small
// matrices look at closely), past it a canvas (heatcanvas.js).
export function heatmap(w, title, ctx, big = false) {
	const Lq = w.length;
	const Lk = w[0]?.length ?? 0;
	if (Lq * Lk > CANVAS_PAST) return canvasHeatmap(w, title, ctx, big);
	const cell = Math.max(cellSize(Math.max(Lq, Lk)), big ? Math.min(44, Math.floor(560 / Math.max(Lq, Lk, 1))) : 0);
	const lay = layoutOf(ctx.queryTokens, ctx.keyTokens, cell, 1);
	const { left, head, width, height } = lay;
	const numbers = ctx.numbers && cell >= 40;

	const root = svg("svg", {
		class: lay.dense ? "map dense" : "map",
		viewBox: `0 0 ${width} ${height}`,
		width,
		height,
		tabindex: 0,
		role: "img",
		"aria-label": ariaLabel(title, ctx, Lq, Lk),
	});
	appendLabels(root, ctx, lay);
	const cells = svg("g", { class: "cells" });
	for (let i = 0; i < Lq; i++) {
		for (let j = 0; j < Lk; j++) {
			const v = w[i][j];
			cells.append(svg("rect", { x: left + j * cell, y: head + i * cell, width: cell - 1, height: cell - 1, fill: fillOf(v, ctx, i, j), "data-q": i, "data-k": j }));
			if (numbers && !isMasked(v, ctx.kind, ctx.hidden, i, j)) {
				const t = svg("text", {
					class: lightText(v, ctx) ? "num light" : "num",
					x: left + j * cell + (cell - 1) / 2,
					y: head + i * cell + (cell - 1) / 2,
					"text-anchor": "middle",
					"dominant-baseline": "central",
				});
				t.textContent = v.toFixed(2);
				cells.append(t);
			}
		}
		const best = bestOutline(w, ctx, lay, i);
		if (best) cells.append(best);
	}
	const cursor = svg("rect", { class: "cursor", x: 0, y: 0, width: cell - 1, height: cell - 1, visibility: "hidden" });
	root.append(cells, cursor);
	const cellOf = (ev) => {
		const r = ev.target.closest?.("rect[data-q]");
		return r ? [Number(r.dataset.q), Number(r.dataset.k)] : null;
	};
	wireHeatmap(root, cursor, { left, head, cell, Lq, Lk, title, w, ctx }, cellOf);
	return root;
}

// A big heatmap: the cells on a canvas (role img: the table twin says the
// numbers), under an SVG frame with the labels (thinned to one every step
// rows), the rows' largest outlined where cells are big enough to show it,
// and the keyboard and pointer cursors. The frame and the canvas scale
// together (percentages of one box of the SVG's aspect ratio), so a small
// multiple shrunk to its card still maps a point to its cell.
function canvasHeatmap(w, title, ctx, big) {
	const Lq = w.length;
	const Lk = w[0].length;
	const cell = canvasCell(Lq, Lk, big);
	const lay = layoutOf(ctx.queryTokens, ctx.keyTokens, cell, Math.ceil(10 / cell));
	const { left, head, width, height } = lay;
	const box = el("div", { class: lay.dense ? "map heatcanvas dense" : "map heatcanvas" });
	box.style.width = `${width}px`;
	box.style.aspectRatio = `${width} / ${height}`;
	const frame = svg("svg", { class: "frame", viewBox: `0 0 ${width} ${height}`, "aria-hidden": "true" });
	appendLabels(frame, ctx, lay);
	for (let i = 0; cell >= 6 && i < Lq; i++) {
		const best = bestOutline(w, ctx, lay, i);
		if (best) frame.append(best);
	}
	const cursor = svg("rect", { class: "cursor", x: 0, y: 0, width: cell - 1, height: cell - 1, visibility: "hidden" });
	const hover = svg("rect", { class: "hover", x: 0, y: 0, width: cell - 1, height: cell - 1, visibility: "hidden" });
	frame.append(hover, cursor);
	const masked = (i, j) => isMasked(w[i][j], ctx.kind, ctx.hidden, i, j);
	const canvas = cellsCanvas(w, ctx, masked, cell, ariaLabel(title, ctx, Lq, Lk));
	const at = (x, total) => `${((x / total) * 100).toFixed(4)}%`;
	Object.assign(canvas.style, { left: at(left, width), top: at(head, height), width: at(Lk * cell, width), height: at(Lq * cell, height) });
	box.append(canvas, frame);
	const showHover = (ij) => {
		hover.setAttribute("visibility", ij ? "visible" : "hidden");
		if (!ij) return;
		hover.setAttribute("x", left + ij[1] * cell);
		hover.setAttribute("y", head + ij[0] * cell);
	};
	wireHeatmap(canvas, cursor, { left, head, cell, Lq, Lk, title, w, ctx }, (ev) => cellAt(canvas, ev, Lq, Lk), showHover);
	return box;
}

// For each query, the key it attends to most (weights only).
export function topList(w, ctx) {
	const ko = ctx.lang === "ko";
	const list = el("ol", { class: "toplist", "aria-label": ko ? "각 단어가 가장 주목하는 단어" : "Which word each word attends to most" });
	if (ko) list.lang = "ko";
	for (let i = 0; i < w.length; i++) {
		const j = argmax(w[i]);
		const q = ctx.queryTokens[i];
		const k = ctx.keyTokens[j];
		const li = el("li", {}, ...said(w[i][j] > 0 ? attendsLine(q, k, w[i][j], ctx.lang, true) : nothingVisible(q, ctx.lang)));
		li.dataset.query = String(i);
		li.dataset.key = String(j);
		li.dataset.weight = String(w[i][j]);
		list.append(li);
	}
	return list;
}

// The keyboard- and screen-reader-friendly twin of a heatmap; past
// CANVAS_PAST cells (a million for 1024 tokens: minutes to build, no one
// reads it) a note saying so and the numbers as a CSV file named file.
export function table(w, title, ctx, file = "attention.csv") {
	if (w.length * (w[0]?.length ?? 0) > CANVAS_PAST) return tableNote(w, title, ctx, file);
	const t = el("table", { class: "wtable" });
	t.append(el("caption", { text: `${title}: ${ctx.kind} (rows: query, columns: key)` }));
	const headRow = el("tr", {}, el("th", { scope: "col", text: "query \\ key" }));
	for (const k of ctx.keyTokens) headRow.append(el("th", { scope: "col", text: k }));
	t.append(el("thead", {}, headRow));
	const tbody = el("tbody");
	w.forEach((row, i) => {
		const tr = el("tr", {}, el("th", { scope: "row", text: ctx.queryTokens[i] }));
		row.forEach((v, j) => tr.append(el("td", { text: isMasked(v, ctx.kind, ctx.hidden, i, j) ? "masked" : v.toFixed(3) })));
		tbody.append(tr);
	});
	t.append(tbody);
	return t;
}

// In place of a big table: its size, and a button that saves the matrix as
// CSV (made when clicked, not before).
function tableNote(w, title, ctx, file) {
	const size = `${w.length} x ${w[0].length}`;
	const note = el("div", { class: "wtable table-note", role: "note" });
	const masked = ctx.kind === "scores" ? " Its CSV leaves masked cells (−∞) empty." : "";
	note.append(el("p", { text: `${title}: ${size}: too large to show as a table.${masked}` }));
	const b = el("button", { type: "button", class: "csv", text: `Download as CSV (${file})` });
	b.dataset.file = file;
	b.addEventListener("click", () => download(csvOf(w, ctx), file, "text/csv"));
	note.append(b);
	return note;
}

// w as CSV (RFC 4180): a header row of "query \ key" and the key tokens,
// then a row per query, its token first; numbers as JavaScript prints them
// (the shortest that reads back the same), so a cell is the API's number,
// but for a masked score (-Infinity, a hidden key), which is an empty cell:
// a spreadsheet reads "-Infinity" as a formula (#NAME?), and leaves an
// empty cell out of its sums and means, as the table says "masked" (a masked
// weight is the API's 0, a number that sums). A token a spreadsheet would
// take for a formula (=, +, -, @, tab or CR first: OWASP's "CSV injection")
// starts with an apostrophe, and the file with a byte-order mark, without
// which Excel reads UTF-8 (Korean) as ANSI.
export function csvOf(w, ctx) {
	const field = (s) => (/[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s);
	const token = (s) => field(/^[=+\-@\t\r]/.test(s) ? `'${s}` : s);
	const number = (v) => (v === -Infinity ? "" : String(v));
	const lines = [[field("query \\ key"), ...ctx.keyTokens.map(token)].join(",")];
	w.forEach((row, i) => lines.push(`${token(ctx.queryTokens[i])},${row.map(number).join(",")}`));
	return "\uFEFF" + lines.join("\r\n") + "\r\n";
}

// Saves text as a file through a link to a Blob, let go once clicked.
function download(text, file, type) {
	const url = URL.createObjectURL(new Blob([text], { type }));
	const a = el("a", { href: url, download: file });
	document.body.append(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(url), 0);
}

// ---- tooltip and read-out ------------------------------------------------------

function describe(geom, i, j) {
	const { ctx, w } = geom;
	const v = w[i][j];
	const q = ctx.queryTokens[i];
	const k = ctx.keyTokens[j];
	const ko = ctx.lang === "ko";
	// text, line and full: parts (word, said), each word isolated
	const pair = (sep) => [word(q), sep, word(k)];
	if (isMasked(v, ctx.kind, ctx.hidden, i, j)) {
		const value = ko ? "masked: 가려짐 (이 단어는 볼 수 없음)" : "masked: this query cannot see this key";
		return { head: geom.title, text: pair(" → "), value, line: [...pair(" → "), ": masked"], full: [...pair(" → "), ` = ${value}`] };
	}
	if (ctx.kind === "values") {
		const value = v.toFixed(4);
		return { head: geom.title, text: pair(" · "), value, line: [...pair(" · "), `: ${v.toFixed(3)}`], full: [...pair(" · "), ` = ${value}`] };
	}
	if (ctx.kind === "scores") {
		const value = `score ${v.toFixed(4)} (before softmax)`;
		return { head: geom.title, text: pair(" → "), value, line: [...pair(" → "), `: score ${v.toFixed(3)}`], full: [...pair(" → "), ` = ${value}`] };
	}
	const value = `${v.toFixed(4)} (${percent(v)})`;
	const line = attendsLine(q, k, v, ctx.lang);
	return { head: geom.title, text: pair(" → "), value, line, full: [...line, ` = ${value}`] };
}

export function showTip(d, x, y) {
	const tip = $("tip");
	tip.replaceChildren(el("span", { class: "tip-head", text: d.head }), el("span", {}, ...said(d.text)), el("strong", { text: d.value }));
	tip.hidden = false;
	const r = tip.getBoundingClientRect();
	const left = Math.min(window.innerWidth - r.width - 8, Math.max(8, x + 14));
	const topY = y + 16 + r.height > window.innerHeight ? y - r.height - 12 : y + 16;
	tip.style.left = `${left}px`;
	tip.style.top = `${Math.max(8, topY)}px`;
}

export function hideTip() {
	$("tip").hidden = true;
}

// The page's read-out line (#readout, aria-live) says text, and own (a
// panel's own line under it, or null) says line, both parts (word, said:
// each word a <bdi>, the text as it was). #readout is the one live
// region, so a screen reader hears the cell or query in focus once (the
// head view's too); own, with the same words, is for eyes that are on the
// figure, far below #readout.
export function sayReadout(text, line, lang, own) {
	$("readout").replaceChildren(...said(text));
	$("readout").lang = lang;
	if (own) {
		own.replaceChildren(...said(line));
		own.lang = lang;
	}
}

// The read-out of cell d, on the page and under this heatmap's figure if any.
function readout(root, geom, d) {
	// full: the line and the value, each said once
	sayReadout([`${d.head}: `, ...d.full], d.line, geom.ctx.lang, root.closest("figure")?.querySelector(".map-readout"));
}

// Pointer, touch and keyboard on a heatmap: root gets the events, cellOf(ev)
// says which [i, j] a pointer event is over (or null), hover(ij) marks it
// where no rect of the heatmap's own can (a canvas).
function wireHeatmap(root, cursor, geom, cellOf, hover = () => {}) {
	let at = null; // [i, j] of the keyboard cursor
	// reveal: scroll the cell into view (the arrow keys move past what a
	// narrow screen's scrolling box shows)
	const place = (i, j, reveal = false) => {
		at = [i, j];
		cursor.setAttribute("x", geom.left + j * geom.cell);
		cursor.setAttribute("y", geom.head + i * geom.cell);
		cursor.setAttribute("visibility", "visible");
		if (reveal) cursor.scrollIntoView({ block: "nearest", inline: "nearest" });
		const d = describe(geom, i, j);
		readout(root, geom, d);
		const box = cursor.getBoundingClientRect();
		showTip(d, box.right - 8, box.bottom - 8);
	};
	const point = (ev) => {
		const ij = cellOf(ev);
		hover(ij);
		if (!ij) return hideTip();
		const d = describe(geom, ij[0], ij[1]);
		showTip(d, ev.clientX, ev.clientY);
		readout(root, geom, d);
	};
	root.addEventListener("pointermove", point);
	// a click or tap focuses root too: the keyboard cursor starts at that cell,
	// so that the focus does not move the read-out to the cell it was at before
	root.addEventListener("pointerdown", (ev) => {
		at = cellOf(ev) ?? at;
		point(ev);
	});
	root.addEventListener("pointerleave", () => {
		hover(null);
		hideTip();
	});
	root.addEventListener("focus", () => place(...(at ?? [0, 0])));
	root.addEventListener("blur", () => {
		cursor.setAttribute("visibility", "hidden");
		hideTip();
	});
	root.addEventListener("keydown", (ev) => {
		if (!at) return;
		let [i, j] = at;
		const moves = {
			ArrowUp: () => (i = Math.max(0, i - 1)),
			ArrowDown: () => (i = Math.min(geom.Lq - 1, i + 1)),
			ArrowLeft: () => (j = Math.max(0, j - 1)),
			ArrowRight: () => (j = Math.min(geom.Lk - 1, j + 1)),
			Home: () => (j = 0),
			End: () => (j = geom.Lk - 1),
		};
		if (!moves[ev.key]) return;
		ev.preventDefault();
		moves[ev.key]();
		place(i, j, true);
	});
}
