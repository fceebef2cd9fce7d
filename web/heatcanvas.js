// heatcanvas.js: the cells of a big heatmap on a canvas (heatmap.js draws
// the labels and cursors over it): how big a cell is, its colour and the
// hatch of a masked cell written straight into the canvas's pixels, and which
// cell a pointer is over. No DOM per cell: one element per heatmap.
//
// Measured in headless Chromium (bench/README.md, "The viewer's heatmaps"):
// a page of 512 tokens on base (eight heads, 2.6 million SVG rects) took a
// minute to draw and six to redraw. For one 1024 x 1024 head, a fillRect per
// cell took 700-1000 ms, an ImageData of one pixel per cell 35-60 ms and
// this file's ImageData of 2 px cells 75-95 ms: pixels written by hand, a
// cell's several pixels so that masked cells can carry the SVG's hatch and
// bigger cells its 1 px gaps, for a few tens of milliseconds more.

import { el, rgb } from "./util.js";

// Up to 64 x 64 cells the SVG stays: its cells are 10 px or more, read and
// pointed at one by one (the tutorials' matrices, a 60-word sentence), and a
// page of them (41,000 rects on base) redraws in about a second. Past it the
// SVG's cost grows with every cell (128 tokens: 3.8 s a redraw, 256: 12.6 s)
// while the canvas's does not by much (65 tokens: 0.4 s, 1024: 3.8 s).
export const CANVAS_PAST = 64 * 64;

// A pixel as one 32-bit word of ImageData in the machine's byte order: one
// write per pixel, not four.
const LITTLE = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
function pixel([r, g, b]) {
	return (LITTLE ? (255 << 24) | (b << 16) | (g << 8) | r : (r << 24) | (g << 16) | (b << 8) | 255) >>> 0;
}

// The hatch of a masked cell: the colours of app.js's #attnd-masked pattern,
// a 2 px line every 6 px along the diagonal.
const PAPER = pixel([0xf3, 0xf4, 0xf6]);
const LINE = pixel([0xc8, 0xcc, 0xd3]);

// CSS pixels per cell for Lq rows and Lk columns: as big as fits the area of
// a 2048 px square large head (10 px at most, as the SVG's), at least 2 so
// that a pointer can still tell cells apart; a small multiple's 512 px square
// shrinks to its card anyway. Sized by the area, not the longer side: a
// square's cells are the same either way, but a short sentence's positional
// encoding (9 tokens x 512 dimensions) keeps rows of 7 px, not of 1.
export function canvasCell(Lq, Lk, big) {
	return Math.max(big ? 2 : 1, Math.min(10, Math.floor((big ? 2048 : 512) / Math.sqrt(Lq * Lk))));
}

// A canvas of w's cells, cell pixels each (a 1 px gap between cells of 6 px
// or more, as the SVG's rects leave): role img with label as its name;
// data-masked counts the cells drawn hatched, data-rows and data-cols its size.
export function cellsCanvas(w, ctx, masked, cell, label) {
	const Lq = w.length;
	const Lk = w[0].length;
	const c = el("canvas", { class: "cells", width: String(Lk * cell), height: String(Lq * cell), role: "img", "aria-label": label, tabindex: "0" });
	const g = c.getContext("2d");
	const img = g.createImageData(Lk * cell, Lq * cell);
	const n = paint(img, w, ctx, masked, cell);
	g.putImageData(img, 0, 0);
	c.dataset.masked = String(n);
	c.dataset.rows = String(Lq);
	c.dataset.cols = String(Lk);
	c.dataset.cell = String(cell);
	return c;
}

// Writes every cell into img's pixels; answers how many were masked.
function paint(img, w, ctx, masked, cell) {
	const px = new Uint32Array(img.data.buffer);
	const span = ctx.hi - ctx.lo || 1;
	const inner = cell >= 6 ? cell - 1 : cell;
	let n = 0;
	for (let i = 0; i < w.length; i++) {
		const row = w[i];
		for (let j = 0; j < row.length; j++) {
			const at = i * cell * img.width + j * cell;
			if (masked(i, j)) {
				n++;
				hatch(px, img.width, at, inner);
			} else {
				const p = pixel(rgb((row[j] - ctx.lo) / span, ctx.ramp));
				for (let y = 0; y < inner; y++) for (let x = 0, k = at + y * img.width; x < inner; x++, k++) px[k] = p;
			}
		}
	}
	return n;
}

// Diagonal lines in the canvas's own pixels, so that they run on across
// neighbouring masked cells as the SVG's pattern does.
function hatch(px, width, at, size) {
	for (let y = 0; y < size; y++) {
		for (let x = 0, k = at + y * width; x < size; x++, k++) {
			px[k] = ((k % width) + Math.floor(k / width)) % 6 < 2 ? LINE : PAPER;
		}
	}
}

// The [i, j] of the cell under a pointer event on canvas c of Lq x Lk cells,
// wherever CSS has scaled it to; null off the cells.
export function cellAt(c, ev, Lq, Lk) {
	const r = c.getBoundingClientRect();
	const i = Math.floor(((ev.clientY - r.top) / r.height) * Lq);
	const j = Math.floor(((ev.clientX - r.left) / r.width) * Lk);
	return i >= 0 && i < Lq && j >= 0 && j < Lk ? [i, j] : null;
}
