// headcanvas.js: the head view's lines on a canvas, for long inputs
// (headview.js keeps the tokens as SVG text over it, and says when): the
// lines of the shown heads, as opaque as their weights, or on request only
// one query's. No DOM per line: one canvas over the part of the view on
// screen (and a quarter of a screen either side), drawn again as the page
// scrolls past that; every query's lines kept as a copy, put back when the
// pointer leaves a query.
//
// Measured in headless Chromium, software drawing (bench/README.md, "The
// viewer's heatmaps"): 12 heads of 1024 tokens with about ten lines a query
// are 120,000 lines, most of them thousands of pixels long in a view 22,500
// px tall: stroking all of them took 12 s, what SVG avoids by painting only
// what is on screen. So does this canvas; its strokes are grouped by head
// and opacity (ALPHA_STEPS levels), one path each.

import { el, headColour } from "./util.js";

// Opacities drawn: a weight's rounded to the nearest 1/ALPHA_STEPS (the
// lightest drawn, 0.02, to 1/ALPHA_STEPS).
const ALPHA_STEPS = 50;

// A canvas for a view width x height (SVG units; lines from x1 to x2, query
// and key i at y(i)) of which it draws the part on screen: role none, the SVG
// over it names the view. c.draw(i) draws query i's lines only (null: every
// query's). data-lines says how many lines that is (in the whole view),
// data-query whose ("" every query's), data-top and data-bottom which part
// of the view it covers (SVG units). It follows the page's scrolling and
// layout until signal aborts.
export function linesCanvas(heads, enabled, minWeight, width, height, geom, signal) {
	const c = el("canvas", { class: "hv-lines", width: "0", height: "0", "aria-hidden": "true" });
	const shown = [...enabled].filter((h) => h < heads.length).sort((a, b) => a - b);
	let query = null;
	let band = null; // [top, bottom, box height, pixel ratio] drawn (bandOf); null: none on screen
	let whole = null; // the last drawing of every query's lines: {at (its band), copy, lines}
	const paint = () => {
		band = bandOf(c, height);
		const at = String(band);
		const g = band ? fitTo(c, band, width, height) : null;
		let n = 0;
		if (!g) c.width = c.height = 0;
		if (g && query === null && whole?.at === at) {
			g.save();
			g.resetTransform();
			g.drawImage(whole.copy, 0, 0);
			g.restore();
			n = whole.lines;
		} else {
			for (const h of shown) n += strokeHead(g, heads[h], query, headColour(h), minWeight, geom, band);
			if (g && query === null) whole = { at, copy: copyOf(c), lines: n };
		}
		Object.assign(c.dataset, { lines: String(n), query: query === null ? "" : String(query), top: String(band?.[0] ?? ""), bottom: String(band?.[1] ?? "") });
	};
	c.draw = (i) => {
		query = i;
		paint();
	};
	paint();
	followScroll(c, height, () => band, paint, signal);
	requestAnimationFrame(paint); // now in the page, where it can tell what is on screen
	return c;
}

// The part of the view to draw, [top, bottom] in SVG units (and the height
// of c's box, CSS pixels, and the device pixel ratio, which say how big that
// is on screen): what is on screen of the box and a quarter of a screen
// either side; null when none of it is.
function bandOf(c, height) {
	const box = c.parentElement?.getBoundingClientRect();
	if (!box || box.height === 0) return null;
	const more = window.innerHeight / 4;
	const top = Math.max(0, -box.top - more);
	const bottom = Math.min(box.height, window.innerHeight - box.top + more);
	if (bottom <= top) return null;
	const unit = height / box.height;
	return [Math.floor(top * unit), Math.ceil(bottom * unit), box.height, window.devicePixelRatio || 1];
}

// Sizes and places c over band (device pixels: the screen's), cleared; its
// context drawing in SVG units.
function fitTo(c, [top, bottom, boxHeight, ratio], width, height) {
	const k = (boxHeight / height) * ratio;
	c.width = Math.max(1, Math.round(width * k));
	c.height = Math.max(1, Math.round((bottom - top) * k));
	c.style.top = `${((top / height) * 100).toFixed(4)}%`;
	c.style.height = `${(((bottom - top) / height) * 100).toFixed(4)}%`;
	const g = c.getContext("2d");
	g.setTransform(k, 0, 0, k, 0, -top * k);
	g.lineWidth = 2;
	return g;
}

// Draws again when a scroll, a resize or a shift of the layout brings into
// view what is not drawn, or changes the size the drawing is shown at (a
// zoom, a narrower window or container: else its pixels are stretched,
// blurred), at most once a frame, until signal aborts (headview.js: the view
// is drawn anew).
function followScroll(c, height, drawn, paint, signal) {
	let asked = false;
	const onScroll = () => {
		if (asked) return;
		asked = true;
		requestAnimationFrame(() => {
			asked = false;
			const want = c.isConnected && bandOf(c, height);
			if (want && !covers(drawn(), want)) paint();
		});
	};
	addEventListener("scroll", onScroll, { capture: true, passive: true, signal });
	addEventListener("resize", onScroll, { signal });
	// a layout that shifts with no scroll or resize (a panel above opens, a
	// scrollbar appears, a font arrives late) changes the size of the canvas
	// (it is sized in percent of the view, which scales to its container) or
	// of the page (what is above grew or shrank); let go with the view, else
	// the observer keeps every old view's weights alive
	const shifts = new ResizeObserver(onScroll);
	shifts.observe(c);
	shifts.observe(document.documentElement);
	signal.addEventListener("abort", () => shifts.disconnect(), { once: true });
	// a zoom that keeps the window's size in CSS pixels fires no resize, only
	// the change of the pixel ratio's media query (asked anew at each ratio)
	const watchRatio = () => {
		matchMedia(`(resolution: ${window.devicePixelRatio}dppx)`).addEventListener(
			"change",
			() => {
				onScroll();
				watchRatio();
			},
			{ once: true, signal },
		);
	};
	watchRatio();
}

// Whether the band drawn (null: none) still serves band want: it spans
// want's part of the view, drawn at the size want shows it.
function covers(have, want) {
	return have !== null && have[0] <= want[0] && want[1] <= have[1] && have[2] === want[2] && have[3] === want[3];
}

// The lines of head w (of query only, or every query's: null), in colour,
// one path per opacity level, those crossing band only stroked (none
// without g); answers how many lines there are in all.
function strokeHead(g, w, query, colour, minWeight, { x1, x2, y }, band) {
	const [top, bottom] = band ?? [Infinity, -Infinity];
	const levels = Array.from({ length: ALPHA_STEPS + 1 }, () => []);
	let n = 0;
	for (let i = query ?? 0; i < (query === null ? w.length : query + 1); i++) {
		const row = w[i];
		const yi = y(i);
		for (let j = 0; j < row.length; j++) {
			const v = row[j];
			if (!(v >= minWeight)) continue;
			n++;
			const yj = y(j);
			if (Math.max(yi, yj) + 2 < top || Math.min(yi, yj) - 2 > bottom) continue;
			levels[Math.max(1, Math.round(Math.min(1, v) * ALPHA_STEPS))].push(yi, yj);
		}
	}
	if (!g) return n;
	g.strokeStyle = colour;
	levels.forEach((ends, k) => {
		if (ends.length === 0) return;
		g.globalAlpha = k / ALPHA_STEPS;
		g.beginPath();
		for (let e = 0; e < ends.length; e += 2) {
			g.moveTo(x1, ends[e]);
			g.lineTo(x2, ends[e + 1]);
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
