// viewer_long.mjs: the viewer on a long input (600 tokens on the seeded model
// base, 360,000 cells a head): its heatmaps are canvases (web/heatcanvas.js),
// not a rect per cell, drawn in seconds; the colours are the SVG's, masked
// cells hatched; pointing at a cell reads it out as the API answered it; and
// the tutorials' four words keep the SVG, a rect per cell and a line per
// pair in the head view. viewer_long_views.mjs: the head view and tables.
import { check } from "./report.mjs";
import { SEED_WORDS, madeUpWords, postAttention, settled } from "./viewer_page.mjs";

export const LONG = 600; // tokens of the long input (viewer_long_views.mjs too)
const DRAWN_WITHIN_MS = 30000; // the SVG took minutes past 500 positions

export async function checkLongInput(page, base) {
	const started = Date.now();
	await page.goto(`${base}/?model=base&text=${encodeURIComponent(madeUpWords(LONG))}`);
	const drawn = await page
		.waitForFunction((n) => window.attnd?.state === "ok" && window.attnd.queryTokens?.length === n && document.querySelector("#focus canvas.cells"), LONG, { timeout: 120000, polling: 200 })
		.then(() => true, () => false);
	const ms = Date.now() - started;
	const H = drawn ? await page.evaluate(() => window.attnd.heads.length) : 0;

	await check(`${LONG} tokens: every heatmap is a canvas, no rect per cell, drawn within ${DRAWN_WITHIN_MS / 1000} s`, async (p) => {
		if (!drawn) return p.push(`no canvas heatmap after ${ms} ms`);
		if (ms > DRAWN_WITHIN_MS) p.push(`drawn in ${ms} ms`);
		const got = await page.evaluate(() => ({
			rects: document.querySelectorAll("#focus rect[data-q], #heads rect[data-q], #positions rect[data-q], #projections rect[data-q]").length,
			heads: [...document.querySelectorAll("#heads figure")].map((f) => f.querySelector("canvas.cells")?.dataset.rows ?? null),
			big: [...document.querySelectorAll("#focus figure")].map((f) => f.querySelector("canvas.cells")?.dataset.rows ?? null),
			// the attention's canvases are queries by keys; the Q, K, V panel's tokens by the head's dimensions
			named: [...document.querySelectorAll("canvas.cells")].every((c) => c.getAttribute("role") === "img" && /\d+ (queries by \d+ keys|(queries|keys) by \d+ dimensions)/.test(c.getAttribute("aria-label") ?? "")),
			tables: document.querySelectorAll("#heads table.wtable").length,
		}));
		if (got.rects !== 0) p.push(`${got.rects} rects drawn as cells`);
		if (got.heads.length !== H + 1 || got.heads.some((r) => r !== String(LONG))) p.push(`small multiples: ${JSON.stringify(got.heads)}`);
		if (got.big.length !== 1 || got.big[0] !== String(LONG)) p.push(`large head: ${JSON.stringify(got.big)}`);
		if (!got.named) p.push("a canvas without role img and a label saying what it shows");
		// a million cells of tables only when asked for
		if (got.tables !== 0) p.push(`${got.tables} tables built unasked`);
	});

	await check("a canvas heatmap's cells have the SVG's colours (util.js colour of the weight); causal's hidden cells are hatched", async (p) => {
		if (!drawn) return p.push("not drawn");
		await page.selectOption("#scale", "unit"); // colours of 0..1: the weight itself
		await page.selectOption("#mask", "causal");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.mask === "causal" && document.querySelector("#focus canvas.cells"));
		const got = await page.evaluate(async () => {
			const { rgb } = await import("/web/util.js");
			const c = document.querySelector("#focus canvas.cells");
			const w = JSON.parse(c.closest("figure").dataset.weights);
			const cell = Number(c.dataset.cell);
			const g = c.getContext("2d");
			const bad = [];
			for (let k = 0; k < 400; k++) {
				const i = (k * 37) % w.length;
				const j = (k * 53) % w.length;
				const [r, gg, b] = g.getImageData(j * cell, i * cell, 1, 1).data;
				const want = j > i ? null : rgb(w[i][j]);
				const hatch = [[0xf3, 0xf4, 0xf6], [0xc8, 0xcc, 0xd3]].some(([x, y, z]) => x === r && y === gg && z === b);
				if (want ? want.join() !== [r, gg, b].join() : !hatch) bad.push(`[${i}][${j}] ${w[i][j]}: ${[r, gg, b]}, expected ${want ?? "hatch"}`);
			}
			return { bad, masked: Number(c.dataset.masked), L: w.length };
		});
		if (got.bad.length > 0) p.push(`${got.bad.length} of 400 cells: ${got.bad.slice(0, 3).join("; ")}`);
		if (got.masked !== (got.L * (got.L - 1)) / 2) p.push(`${got.masked} cells drawn masked, expected ${(got.L * (got.L - 1)) / 2}`);
	});

	await check("pointing at a canvas cell reads out its query, key and weight as the API answered them", async (p) => {
		if (!drawn) return p.push("not drawn");
		const req = await page.evaluate(() => window.attnd.lastRequest);
		const direct = await postAttention(base, req);
		const tokens = direct.body.tokens;
		const canvas = await page.$("#focus canvas.cells");
		for (const [i, j] of [[40, 12], [3, 3], [12, 40], [LONG - 1, 0]]) {
			await page.evaluate(([a, b]) => {
				const c = document.querySelector("#focus canvas.cells");
				const r = c.getBoundingClientRect();
				const y = r.top + ((a + 0.5) / Number(c.dataset.rows)) * r.height;
				if (y < 0 || y > window.innerHeight) window.scrollBy(0, y - window.innerHeight / 2);
			}, [i, j]);
			await page.waitForTimeout(100); // a scroll hides the tooltip: let its event pass first
			const box = await canvas.boundingBox();
			await page.mouse.move(box.x + ((j + 0.5) / LONG) * box.width, box.y + ((i + 0.5) / LONG) * box.height);
			const tip = await page.$eval("#tip", (n) => (n.hidden ? "" : n.textContent));
			const under = await page.$eval("#focus .map-readout", (n) => n.textContent);
			const v = direct.body.weights[0][i][j];
			const pair = `${tokens[i]} → ${tokens[j]}`;
			if (j > i) {
				if (!tip.includes(pair) || !tip.includes("masked") || !under.includes("masked")) p.push(`[${i}][${j}] (masked): tooltip "${tip}", read-out "${under}"`);
			} else if (!tip.includes(pair) || !tip.includes(v.toFixed(4)) || !under.startsWith(`${pair} (${Math.round(v * 100)}%)`)) {
				p.push(`[${i}][${j}] = ${v}: tooltip "${tip}", read-out "${under}"`);
			}
		}
		await page.mouse.move(0, 0);
		await page.selectOption("#mask", "none");
		await page.selectOption("#scale", "shared");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.mask === "none");
	});

	await check("a short sentence's positional encoding on base (9 tokens x 512 dimensions, past CANVAS_PAST) keeps rows a pointer can hit and a label on most", async (p) => {
		const text = Array.from({ length: 9 }, (_, i) => `w${i}`).join(" ");
		await page.goto(`${base}/?model=base&text=${encodeURIComponent(text)}`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "base");
		await page.selectOption("#positional", "sinusoidal");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.positional === "sinusoidal" && document.querySelector("figure.pos.encoding"));
		const got = await page.evaluate(() => {
			const f = document.querySelector("figure.pos.encoding");
			const c = f.querySelector("canvas.cells");
			return { rows: c?.dataset.rows, cols: c?.dataset.cols, rowPx: c ? c.getBoundingClientRect().height / Number(c.dataset.rows) : 0, labels: f.querySelectorAll("text.qlabel").length };
		});
		// the SVG drew these rows 10 px tall with a label each
		if (got.rows !== "9" || got.cols !== "512" || got.rowPx < 5 || got.labels < 5) p.push(JSON.stringify(got));
		await page.selectOption("#positional", "none");
	});

	await check("the tutorials' four words keep the SVG heatmap, one rect per cell, the head view's SVG lines, and no canvas", async (p) => {
		await page.goto(`${base}/?model=tiny&text=${encodeURIComponent(SEED_WORDS.join(" "))}`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "tiny");
		const got = await page.evaluate(() => ({
			big: document.querySelectorAll("#focus svg.map rect[data-q]").length,
			heads: [...document.querySelectorAll("#heads figure")].map((f) => f.querySelectorAll("svg.map rect[data-q]").length),
			canvases: document.querySelectorAll("canvas.cells, canvas.hv-lines").length,
			lines: document.querySelectorAll("#headview svg.lines line[data-q]").length,
		}));
		if (got.big !== 16 || got.heads.some((n) => n !== 16) || got.canvases !== 0 || got.lines === 0) p.push(JSON.stringify(got));
	});
}
