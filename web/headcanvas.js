// headcanvas.js: the head view's lines on a canvas, for long inputs
// (headview.js keeps the tokens as SVG text over it, and says when): the
// lines of the shown heads, as opaque as their weights, and on request only
// one query's. No DOM per line: one canvas, and a copy of its full drawing
// to put back when the pointer leaves.
//
// Measured in headless Chromium (bench/README.md, "The viewer's heatmaps"):
// 12 heads of 1024 tokens with about ten keys over 0.02 a query make 120,000
// SVG lines, seconds to draw and to dim all but one query's; here the
// strokes are grouped by head and opacity (ALPHA_STEPS levels), a few
// hundred paths whatever the length.

import { el, headColour } from "./util.js";

// Opacities drawn: a weight's rounded to the nearest 1/ALPHA_STEPS (the
// lightest drawn, 0.02, to 1/ALPHA_STEPS), one path per head and level.
const ALPHA_STEPS = 50;

// The longest side of a canvas Chromium will draw, in device pixels.
const MAX_SIDE = 32767;

// A canvas of width x height CSS pixels (its device pixels: as many as the
// screen's, as the browser allows): role presentation, the SVG over it names
// the view. data-lines says how many lines it shows, data-query whose ("" all).
// draw(i) redraws it with query i's lines only (null: every query's).
// geom = {x1, x2 (where lines start and end, 0 the canvas's left), y(i)}
export function linesCanvas(heads, enabled, minWeight, width, height, geom) {
	const ratio = Math.min(window.devicePixelRatio || 1, MAX_SIDE / height, MAX_SIDE / width);
	const c = el("canvas", { class: "hv-lines", width: String(Math.round(width * ratio)), height: String(Math.round(height * ratio)), "aria-hidden": "true" });
	const g = c.getContext("2d");
	g.scale(ratio, ratio);
	g.lineWidth = 2;
	const shown = [...enabled].filter((h) => h < heads.length).sort((a, b) => a - b);
	const rows = (i) => (i === null ? heads[0].map((_, q) => q) : [i]);
	const paint = (i) => {
		g.clearRect(0, 0, width, height);
		let n = 0;
		for (const h of shown) n += strokeHead(g, heads[h], rows(i), headColour(h), minWeight, geom);
		c.dataset.lines = String(n);
		c.dataset.query = i === null ? "" : String(i);
	};
	paint(null);
	const all = { lines: c.dataset.lines, copy: copyOf(c) };
	c.draw = (i) => {
		if (i !== null) return paint(i);
		g.save();
		g.setTransform(1, 0, 0, 1, 0, 0);
		g.clearRect(0, 0, c.width, c.height);
		g.drawImage(all.copy, 0, 0);
		g.restore();
		c.dataset.lines = all.lines;
		c.dataset.query = "";
	};
	return c;
}

// The lines of head w from the queries of rows, in colour: one path per
// opacity level; answers how many lines it drew.
function strokeHead(g, w, rows, colour, minWeight, { x1, x2, y }) {
	const levels = Array.from({ length: ALPHA_STEPS + 1 }, () => []);
	let n = 0;
	for (const i of rows) {
		const row = w[i];
		for (let j = 0; j < row.length; j++) {
			const v = row[j];
			if (!(v >= minWeight)) continue;
			levels[Math.max(1, Math.round(Math.min(1, v) * ALPHA_STEPS))].push(i, j);
			n++;
		}
	}
	g.strokeStyle = colour;
	levels.forEach((ends, k) => {
		if (ends.length === 0) return;
		g.globalAlpha = k / ALPHA_STEPS;
		g.beginPath();
		for (let e = 0; e < ends.length; e += 2) {
			g.moveTo(x1, y(ends[e]));
			g.lineTo(x2, y(ends[e + 1]));
		}
		g.stroke();
	});
	g.globalAlpha = 1;
	return n;
}

function copyOf(c) {
	const copy = el("canvas", { width: String(c.width), height: String(c.height) });
	copy.getContext("2d").drawImage(c, 0, 0);
	return copy;
}
