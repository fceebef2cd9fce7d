// viewer_long_views.mjs: the head view and the tables on a long input (600
// tokens on the seeded model base): the head view's lines are on one canvas
// (web/headcanvas.js), not an SVG line each, its tokens still focusable text,
// and pointing at or focusing a query redraws that query's lines only, as
// many as the API's weights of 0.02 or more; a layout that shifts under it
// without a scroll or resize has it drawn again; with "Tables" checked, each
// head says it is too large for a table and saves its weights as CSV, the
// API's numbers under the tokens (its scores too, a masked one as an empty
// cell).
import { readFileSync } from "node:fs";

import { check } from "./report.mjs";
import { LONG } from "./viewer_long.mjs";
import { madeUpWords, postAttention, settled, twoFrames } from "./viewer_page.mjs";

const MIN_WEIGHT = 0.02; // web/headview.js: lighter lines are not drawn
const HEAD_VIEW_MS = 3000; // one drawHeadView and two frames

// Opens the long text on base under a causal mask: its early queries see few
// keys, so their weights pass 0.02 (600 keys each would not).
async function openLong(page, base) {
	await page.goto(`${base}/?model=base&text=${encodeURIComponent(madeUpWords(LONG))}`);
	await page.waitForFunction((n) => window.attnd?.state === "ok" && window.attnd.queryTokens?.length === n, LONG, { timeout: 120000, polling: 200 });
	await page.selectOption("#mask", "causal");
	await page.waitForFunction(() => window.attnd.state === "ok" && window.attnd.lastRequest.mask === "causal", null, { timeout: 120000, polling: 200 });
	const req = await page.evaluate(() => window.attnd.lastRequest);
	return (await postAttention(base, req)).body;
}

// How many lines query i (every query: null) has in weights [H][L][L].
function linesOf(weights, i) {
	let n = 0;
	for (const w of weights) for (const row of i === null ? w : [w[i]]) for (const v of row) if (v >= MIN_WEIGHT) n++;
	return n;
}

// The token slots (rows of the head view) painted in the canvas's column
// 1 px right of where the lines start: the queries whose lines are drawn,
// of those in the part of the view the canvas covers (data-top, -bottom).
async function paintedQueries(page) {
	await twoFrames(page);
	return page.evaluate(() => {
		const c = document.querySelector("#headview canvas.hv-lines");
		const [top, bottom] = [Number(c.dataset.top), Number(c.dataset.bottom)];
		const k = c.height / (bottom - top); // canvas pixels per SVG unit
		const col = c.getContext("2d").getImageData(Math.round(3 * k), 0, 1, c.height).data;
		const slots = new Set();
		for (let p = 0; p < c.height; p++) if (col[p * 4 + 3] > 0) slots.add(Math.floor((top + p / k - 4) / 22));
		return [...slots].sort((a, b) => a - b);
	});
}

export async function checkLongHeadView(page, base) {
	const body = await openLong(page, base);
	const H = body.weights.length;

	await check(`${LONG} tokens: the head view's lines are on one canvas, no SVG line; its tokens are text, one tab stop`, async (p) => {
		const got = await page.evaluate(() => {
			const hv = document.getElementById("headview");
			const c = hv.querySelector("canvas.hv-lines");
			return {
				canvases: hv.querySelectorAll("canvas.hv-lines").length,
				lines: hv.querySelectorAll("line").length,
				drawn: c?.dataset.lines ?? null,
				queries: hv.querySelectorAll("svg.lines text.q").length,
				keys: hv.querySelectorAll("svg.lines text.k").length,
				stops: [...hv.querySelectorAll("text.q")].filter((t) => t.getAttribute("tabindex") === "0").length,
				label: hv.querySelector("svg.lines")?.getAttribute("aria-label") ?? "",
			};
		});
		if (got.canvases !== 1) p.push(`${got.canvases} canvases of lines`);
		if (got.lines !== 0) p.push(`${got.lines} SVG lines`);
		const want = linesOf(body.weights, null);
		if (want < 1000) p.push(`only ${want} weights of ${MIN_WEIGHT} or more: not a test of many lines`);
		if (got.drawn !== String(want)) p.push(`the canvas says ${got.drawn} lines, the API's weights make ${want}`);
		if (got.queries !== LONG || got.keys !== LONG) p.push(`${got.queries} query and ${got.keys} key tokens`);
		if (got.stops !== 1) p.push(`${got.stops} tab stops among the query tokens`);
		if (!got.label.includes(`${LONG} tokens`)) p.push(`aria-label "${got.label}"`);
	});

	await check(`${LONG} tokens: the head view draws within ${HEAD_VIEW_MS} ms`, async (p) => {
		const ms = await page.evaluate(async () => {
			const { drawHeadView } = await import("/web/headview.js");
			const v = window.attnd;
			const t = performance.now();
			drawHeadView(document.getElementById("headview"), { heads: v.heads, tokens: v.queryTokens, enabled: v.enabled, onToggle: () => {} });
			await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
			return performance.now() - t;
		});
		if (ms > HEAD_VIEW_MS) p.push(`${Math.round(ms)} ms`);
	});

	await check("focusing or pointing at a query token redraws the canvas with that query's lines only; scrolled or zoomed, it draws what is on screen at the screen's pixels", async (p) => {
		const state = () => page.$eval("#headview canvas.hv-lines", (c) => ({ query: c.dataset.query, lines: Number(c.dataset.lines) }));
		await page.$eval('#headview text.q[data-tok="10"]', (t) => t.scrollIntoView({ block: "center" }));
		const all = await paintedQueries(page);
		if (all.length < 20) p.push(`before: lines start at only ${all.length} queries: ${all}`);
		await page.focus('#headview text.q[data-tok="10"]');
		let got = await state();
		if (got.query !== "10" || got.lines !== linesOf(body.weights, 10)) p.push(`focus on 10: ${JSON.stringify(got)}, expected ${linesOf(body.weights, 10)} lines`);
		const one = await paintedQueries(page);
		if (one.join() !== "10") p.push(`focus on 10: lines start at queries ${one}`);
		// rovingFocus still moves along the tokens, and the lines with it
		await page.keyboard.press("ArrowDown");
		got = await state();
		if (got.query !== "11" || got.lines !== linesOf(body.weights, 11)) p.push(`ArrowDown: ${JSON.stringify(got)}`);
		await page.evaluate(() => document.activeElement.blur());
		await page.hover('#headview text.q[data-tok="30"]');
		got = await state();
		if (got.query !== "30" || got.lines !== linesOf(body.weights, 30)) p.push(`pointing at 30: ${JSON.stringify(got)}`);
		await page.mouse.move(0, 0);
		got = await state();
		if (got.query !== "" || got.lines !== linesOf(body.weights, null)) p.push(`pointer gone: ${JSON.stringify(got)}`);
		const back = await paintedQueries(page);
		if (back.join() !== all.join()) p.push(`pointer gone: lines start at ${back.length} queries, had ${all.length}`);
		// scrolled far down, the canvas covers what is on screen there
		await page.$eval('#headview text.q[data-tok="500"]', (t) => t.scrollIntoView({ block: "center" }));
		await paintedQueries(page);
		const band = await page.$eval("#headview canvas.hv-lines", (c) => [Number(c.dataset.top), Number(c.dataset.bottom)]);
		const y500 = 4 + 500 * 22 + 11;
		if (!(band[0] < y500 && y500 < band[1])) p.push(`scrolled to query 500 (y ${y500}): the canvas covers ${band}`);
		// the page zoomed (twice the device pixels a CSS pixel), then back: the
		// canvas is drawn again at each pixel ratio, not its old pixels stretched.
		// Headless Chromium's emulated ratio fires no event, so the resize a
		// browser's zoom fires is sent by hand (sharp's first step).
		const sharp = async () => {
			await page.evaluate(() => dispatchEvent(new Event("resize")));
			await paintedQueries(page);
			return page.$eval("#headview canvas.hv-lines", (c) => c.width / (c.getBoundingClientRect().width * devicePixelRatio));
		};
		const size = page.viewportSize();
		const cdp = await page.context().newCDPSession(page);
		await cdp.send("Emulation.setDeviceMetricsOverride", { ...size, deviceScaleFactor: 2, mobile: false });
		const zoomed = await sharp();
		await cdp.send("Emulation.clearDeviceMetricsOverride");
		await page.setViewportSize(size);
		const restored = await sharp();
		await cdp.detach();
		for (const [name, ratio] of [["zoomed", zoomed], ["restored", restored]]) {
			if (Math.abs(ratio - 1) > 0.02) p.push(`${name}: the canvas has ${ratio.toFixed(2)} pixels per device pixel`);
		}
	});
	return H;
}

// The canvas's pixels per device pixel (1: sharp) and the part of the view
// it covers (SVG units), once two frames have passed.
async function canvasFit(page) {
	await paintedQueries(page);
	return page.$eval("#headview canvas.hv-lines", (c) => ({
		ratio: c.width / (c.getBoundingClientRect().width * devicePixelRatio),
		band: [Number(c.dataset.top), Number(c.dataset.bottom)],
	}));
}

// The layout shifting under the head view with no scroll and no resize of
// the window (a panel beside it opens, a scrollbar appears, a font arrives):
// the canvas is drawn again at its new size and over what is now on screen;
// drawn anew many times, the view leaves no observer behind.
export async function checkLongHeadViewShift(page) {
	await check("the head view's layout shifting without a scroll or resize (its container narrowed, then a block inserted above) redraws the canvas sharp over what is on screen", async (p) => {
		try {
			await page.$eval('#headview text.q[data-tok="300"]', (t) => t.scrollIntoView({ block: "center" }));
			const before = await canvasFit(page);
			if (Math.abs(before.ratio - 1) > 0.02) p.push(`before: ${before.ratio.toFixed(2)} pixels per device pixel`);
			// Chromium's scroll anchoring turns some shifts into a scroll, which
			// the canvas already follows; the shifts here must not lean on it
			await page.evaluate(() => {
				document.documentElement.style.overflowAnchor = "none";
				const view = document.querySelector("#headview .hv-canvas");
				document.getElementById("headview").style.width = `${Math.round(view.getBoundingClientRect().width / 2)}px`;
			});
			const narrow = await canvasFit(page);
			if (Math.abs(narrow.ratio - 1) > 0.02) p.push(`container narrowed: ${narrow.ratio.toFixed(2)} pixels per device pixel, not redrawn at its new size`);
			const onScreen = () =>
				page.evaluate(() => {
					const svg = document.querySelector("#headview svg.lines");
					const r = svg.getBoundingClientRect();
					const unit = svg.viewBox.baseVal.height / r.height;
					return [Math.max(0, -r.top * unit), Math.min(svg.viewBox.baseVal.height, (innerHeight - r.top) * unit)];
				});
			let want = await onScreen();
			if (!(narrow.band[0] <= want[0] && want[1] <= narrow.band[1])) p.push(`container narrowed: the canvas covers ${narrow.band}, the screen shows ${want.map(Math.round)}`);
			await page.evaluate(() => {
				const hv = document.getElementById("headview");
				const block = document.createElement("div");
				block.id = "shift-test";
				block.style.height = `${innerHeight * 2}px`;
				hv.before(block);
			});
			const shifted = await canvasFit(page);
			want = await onScreen();
			if (!(want[1] <= want[0] || (shifted.band[0] <= want[0] && want[1] <= shifted.band[1]))) p.push(`block inserted above: the canvas covers ${shifted.band}, the screen shows ${want.map(Math.round)}`);
			// scrolled far from the drawn view: nothing to draw, and no error
			const errors = [];
			const onError = (e) => errors.push(e.message);
			page.on("pageerror", onError);
			await page.evaluate(() => document.getElementById("shift-test").scrollIntoView({ block: "start" }));
			await twoFrames(page);
			page.off("pageerror", onError);
			if (errors.length) p.push(`scrolled away from the view: ${errors.join("; ")}`);
		} finally {
			await page.evaluate(() => {
				document.getElementById("shift-test")?.remove();
				document.getElementById("headview").style.width = "";
				document.documentElement.style.overflowAnchor = "";
			});
		}
	});

	await check("the head view drawn anew 20 times leaves one ResizeObserver watching (each view's is let go with it)", async (p) => {
		const got = await page.evaluate(async () => {
			const { drawHeadView } = await import("/web/headview.js");
			const Real = window.ResizeObserver;
			const live = new Set();
			window.ResizeObserver = class extends Real {
				observe(t, o) {
					live.add(this);
					super.observe(t, o);
				}
				disconnect() {
					live.delete(this);
					super.disconnect();
				}
			};
			try {
				const v = window.attnd;
				for (let k = 0; k < 20; k++) drawHeadView(document.getElementById("headview"), { heads: v.heads, tokens: v.queryTokens, enabled: v.enabled, onToggle: () => {} });
				await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
				return live.size;
			} finally {
				window.ResizeObserver = Real;
			}
		});
		if (got !== 1) p.push(`${got} observers still watching`);
	});
}

// On a page of its own (a million-cell table would hang it), closed after.
export async function checkLongTables(context, base) {
	const page = await context.newPage();
	try {
		const body = await openLong(page, base);
		const H = body.weights.length;
		await check(`${LONG} tokens with Tables checked: each head says it is too large for a table, no table is built`, async (p) => {
			await page.check("#tables");
			await page.waitForFunction((n) => document.querySelectorAll("#heads .table-note").length === n, H + 1, { timeout: 60000, polling: 200 });
			const got = await page.evaluate(() => ({
				tables: document.querySelectorAll("table.wtable").length,
				cells: document.querySelectorAll("td").length,
				notes: [...document.querySelectorAll("#heads .table-note")].map((n) => ({ text: n.textContent, shown: n.offsetHeight > 0, file: n.querySelector("button.csv")?.dataset.file })),
			}));
			if (got.tables !== 0 || got.cells !== 0) p.push(`${got.tables} tables, ${got.cells} cells`);
			got.notes.forEach((n, h) => {
				const name = h < H ? `base-layer0-head${h}-weights.csv` : "base-layer0-mean-weights.csv";
				if (!n.text.includes(`${LONG} x ${LONG}: too large to show as a table`) || !n.shown || n.file !== name) p.push(`note ${h}: ${JSON.stringify(n)}`);
			});
		});

		await check("CSV cells: quoted where RFC 4180 says, a token that reads as a formula made text", async (p) => {
			const got = await page.evaluate(async () => {
				const { csvOf } = await import("/web/heatmap.js");
				return csvOf([[0.5, 0.25]], { queryTokens: ["=1+1"], keyTokens: ['a,"b"', "@x"] });
			});
			const want = '\uFEFFquery \\ key,"a,""b""",\'@x\r\n\'=1+1,0.5,0.25\r\n';
			if (got !== want) p.push(`${JSON.stringify(got)}, not ${JSON.stringify(want)}`);
		});

		await check("a big head's CSV download: the tokens as header row and column, the API's weights in its cells", async (p) => {
			const note = page.locator('#heads figure[data-head="2"] button.csv');
			await note.scrollIntoViewIfNeeded();
			const [download] = await Promise.all([page.waitForEvent("download", { timeout: 30000 }), note.click()]);
			if (download.suggestedFilename() !== "base-layer0-head2-weights.csv") p.push(`saved as ${download.suggestedFilename()}`);
			const text = readFileSync(await download.path(), "utf8");
			if (!text.startsWith("\uFEFF")) p.push("no byte-order mark (Excel would read the UTF-8 as ANSI)");
			const rows = text.slice(1).trimEnd().split("\r\n").map((r) => r.split(","));
			if (rows.length !== LONG + 1) p.push(`${rows.length} rows`);
			const tokens = body.tokens.map((t) => (/^[=+\-@\t\r]/.test(t) ? `'${t}` : t));
			if (rows[0].join() !== ["query \\ key", ...tokens].join()) p.push(`header ${rows[0].slice(0, 4)}`);
			if (rows.slice(1).some((r, i) => r[0] !== tokens[i] || r.length !== LONG + 1)) p.push("a row without its query token or of the wrong length");
			for (let k = 0; k < 300; k++) {
				const i = (k * 37) % LONG;
				const j = (k * 53) % LONG;
				const v = body.weights[2][i][j];
				if (Number(rows[i + 1][j + 1]) !== v) p.push(`[${i}][${j}]: ${rows[i + 1][j + 1]}, the API ${v}`);
			}
		});

		await check("CSV cells: a masked score (-Infinity) is an empty field, not text a spreadsheet reads as a formula", async (p) => {
			const got = await page.evaluate(async () => {
				const { csvOf } = await import("/web/heatmap.js");
				return csvOf([[0.5, -Infinity], [-0.25, 0]], { queryTokens: ["a", "b"], keyTokens: ["a", "b"], kind: "scores" });
			});
			const want = "\uFEFFquery \\ key,a,b\r\na,0.5,\r\nb,-0.25,0\r\n";
			if (got !== want) p.push(`${JSON.stringify(got)}, not ${JSON.stringify(want)}`);
		});

		await check("a big head's scores CSV download: the note says masked cells are empty, and they are (the causal mask's keys after the query); the others are the API's scores", async (p) => {
			await page.check('input[name="values"][value="scores"]');
			await page.waitForFunction((n) => document.querySelectorAll('#heads button.csv[data-file$="-scores.csv"]').length === n, H, { timeout: 60000, polling: 200 });
			const req = await page.evaluate(() => window.attnd.lastRequest);
			let scores = (await postAttention(base, { ...req, scores: "masked" })).body.scores;
			if (Array.isArray(scores[0][0][0])) scores = scores[0]; // [B][H][L][L]
			const note = await page.$eval('#heads figure[data-head="2"] .table-note', (n) => n.textContent);
			if (!note.includes("masked cells (−∞) empty")) p.push(`note "${note}"`);
			const button = page.locator('#heads figure[data-head="2"] button.csv');
			await button.scrollIntoViewIfNeeded();
			const [download] = await Promise.all([page.waitForEvent("download", { timeout: 30000 }), button.click()]);
			if (download.suggestedFilename() !== "base-layer0-head2-scores.csv") p.push(`saved as ${download.suggestedFilename()}`);
			const rows = readFileSync(await download.path(), "utf8").slice(1).trimEnd().split("\r\n").map((r) => r.split(","));
			if (rows.length !== LONG + 1 || rows.some((r) => r.length !== LONG + 1)) p.push(`${rows.length} rows, or a row of the wrong length`);
			const bad = [];
			let masked = 0;
			for (let i = 0; i < LONG; i++) {
				for (let j = 0; j < LONG; j++) {
					const cell = rows[i + 1]?.[j + 1];
					const v = Number(scores[2][i][j]);
					if (j > i ? cell !== "" : Number(cell) !== v || cell === "") bad.push(`[${i}][${j}]: "${cell}", the API ${scores[2][i][j]}`);
					if (cell === "") masked++;
				}
			}
			if (bad.length > 0) p.push(`${bad.length} cells: ${bad.slice(0, 3).join("; ")}`);
			if (masked !== (LONG * (LONG - 1)) / 2) p.push(`${masked} empty cells, expected ${(LONG * (LONG - 1)) / 2}`);
			await page.check('input[name="values"][value="weights"]');
		});
	} finally {
		await page.close();
	}
}
