// heatmap_bench.mjs: how long the viewer takes to draw a long input, and how
// a 1024 x 1024 head is best painted on a canvas (bench/README.md, "The
// viewer's heatmaps"). Not a test: it prints numbers.
//
//   node bench/web/heatmap_bench.mjs [L ...]     (default: 128 1024)
//   ATTND=/path/to/an/older/attnd node bench/web/heatmap_bench.mjs 128
//
// For each L: the page opened on the seeded model base with L words, timed
// from navigation to the drawing shown (state ok, two animation frames), then
// a redraw with no request (the Scale select), and the elements it made.
// Then one head of random causal weights painted three ways, each timed to a
// readback that forces the painting: a fillRect per cell (2 px cells), an
// ImageData of one pixel per cell (for CSS to scale up pixelated), and
// heatcanvas.js's cellsCanvas (an ImageData of 2 px cells, masked ones hatched).
//
//   node bench/web/heatmap_bench.mjs --tables [L ...]
//
// As above, then the redraw that checking "Tables" makes (past 64 x 64 cells
// a note and a CSV download each, no longer a table) and the cells it built.
//
//   node bench/web/heatmap_bench.mjs --head-view [L ...]   (default: 512 1024)
//
// Only the head view (headview.js), on weights made up as a checkpoint's
// look (base's are near uniform past a few hundred tokens: no line passes
// 0.02): 12 heads, causal, each query 0.3 on the first key, 0.3 on the
// previous one and 0.04 on eight others, the rest spread thin, so about ten
// lines a query. Timed to two animation frames: the first drawing (the top
// of the view on screen), a scroll to the middle query, pointing at it (its
// lines only) and leaving it (every line back).
import { startDaemon, stopDaemon } from "../../tests/node/daemon.mjs";
import { launchBrowser } from "../../tests/node/viewer_page.mjs";

const headViewOnly = process.argv.includes("--head-view");
const withTables = process.argv.includes("--tables");
const sizes = process.argv.slice(2).filter((a) => !a.startsWith("--")).map(Number);
const d = await startDaemon();
const { context: ctx } = await launchBrowser(); // the viewer tests' Chromium and window
const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
try {
	const page = await ctx.newPage();
	if (headViewOnly) {
		await page.goto(`${d.base}/?model=tiny`);
		await page.waitForFunction(() => window.attnd?.state === "ok", null, { timeout: 0 });
		for (const L of sizes.length > 0 ? sizes : [512, 1024]) console.log(JSON.stringify(await page.evaluate(timeHeadView, L)));
	}
	for (const L of headViewOnly ? [] : sizes.length > 0 ? sizes : [128, 1024]) {
		const words = Array.from({ length: L }, (_, i) => `w${i % 97}`).join(" ");
		const t0 = Date.now();
		await page.goto(`${d.base}/?model=base&text=${encodeURIComponent(words)}`);
		await page.waitForFunction((n) => window.attnd?.state === "ok" && window.attnd.queryTokens?.length === n, L, { timeout: 0, polling: 500 });
		await page.evaluate(frames);
		const first = Date.now() - t0;
		const redraw = await page.evaluate(async (f) => {
			const s = document.getElementById("scale");
			const t = performance.now();
			s.value = s.value === "unit" ? "shared" : "unit";
			s.dispatchEvent(new Event("input", { bubbles: true }));
			await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
			return Math.round(performance.now() - t);
		});
		const made = await page.evaluate(() => ({ elements: document.getElementsByTagName("*").length, rects: document.querySelectorAll("rect").length, cellCanvases: document.querySelectorAll("canvas.cells").length }));
		const tables = withTables ? await page.evaluate(timeTables) : {};
		console.log(JSON.stringify({ L, firstDrawMs: first, redrawMs: redraw, ...made, ...tables }));
	}
	const paint = headViewOnly ? null : await page.evaluate(async () => {
		const { colour, rgb } = await import("/web/util.js");
		const hc = await import("/web/heatcanvas.js").catch(() => null);
		const L = 1024;
		const w = Array.from({ length: L }, (_, i) => Array.from({ length: L }, (_, j) => (j > i ? 0 : Math.random() / (i + 1))));
		const masked = (i, j) => j > i;
		const scale = { lo: 0, hi: 0.2 };
		const t = (v) => (v - scale.lo) / (scale.hi - scale.lo);
		const time = (f) => Array.from({ length: 3 }, () => {
			const s = performance.now();
			f().getContext("2d").getImageData(0, 0, 1, 1);
			return Math.round(performance.now() - s);
		});
		const canvas = (side) => Object.assign(document.createElement("canvas"), { width: side, height: side });
		const fillRects = () => {
			const c = canvas(2 * L);
			const g = c.getContext("2d");
			for (let i = 0; i < L; i++) for (let j = 0; j < L; j++) {
				g.fillStyle = masked(i, j) ? "#d0d3d9" : colour(t(w[i][j]));
				g.fillRect(2 * j, 2 * i, 2, 2);
			}
			return c;
		};
		const onePixel = () => {
			const c = canvas(L);
			const g = c.getContext("2d");
			const img = g.createImageData(L, L);
			for (let i = 0, k = 0; i < L; i++) for (let j = 0; j < L; j++, k += 4) {
				const [r, gg, b] = masked(i, j) ? [208, 211, 217] : rgb(t(w[i][j]));
				img.data.set([r, gg, b, 255], k);
			}
			g.putImageData(img, 0, 0);
			return c;
		};
		const out = { L, fillRectPerCellMs: time(fillRects), imageDataOnePixelPerCellMs: time(onePixel) };
		if (hc) out.heatcanvasMs = time(() => hc.cellsCanvas(w, scale, masked, hc.canvasCell(L, L, true), "bench"));
		return out;
	});
	if (paint) console.log(JSON.stringify(paint));
} finally {
	await ctx.close();
	await stopDaemon(d);
}

// In the page: the head view of L tokens on made-up weights (see the top),
// timed; answers the times and what it made.
async function timeHeadView(L) {
	const { drawHeadView } = await import("/web/headview.js");
	const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
	let seed = 1;
	const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
	const H = 12;
	const heads = Array.from({ length: H }, () => Array.from({ length: L }, (_, i) => {
		const row = new Array(L).fill(0);
		for (let j = 0; j <= i; j++) row[j] = 0.08 / (i + 1);
		row[0] += 0.3;
		row[Math.max(0, i - 1)] += 0.3;
		for (let k = 0; k < 8; k++) row[Math.floor(rand() * (i + 1))] += 0.04;
		return row;
	}));
	const tokens = Array.from({ length: L }, (_, i) => `w${i % 97}`);
	const box = document.getElementById("headview");
	const time = async (f) => {
		const t = performance.now();
		f();
		await frames();
		return Math.round(performance.now() - t);
	};
	box.scrollIntoView({ block: "start" });
	const drawMs = await time(() => drawHeadView(box, { heads, tokens, enabled: new Set(heads.map((_, h) => h)), onToggle: () => {} }));
	const q = box.querySelectorAll("text.q")[L >> 1];
	const scrollMs = await time(() => q.scrollIntoView({ block: "center" }));
	const pointMs = await time(() => q.dispatchEvent(new PointerEvent("pointerover", { bubbles: true })));
	const leaveMs = await time(() => box.querySelector("svg.lines").dispatchEvent(new PointerEvent("pointerleave")));
	const made = { svgLines: box.querySelectorAll("line").length, canvases: box.querySelectorAll("canvas").length, canvasLines: box.querySelector("canvas")?.dataset.lines ?? null };
	box.replaceChildren();
	return { L, heads: H, drawMs, scrollMs, pointMs, leaveMs, ...made };
}

// In the page: the redraw that checking "Tables" makes, timed to two
// animation frames, and the table cells it built; unchecked after.
async function timeTables() {
	const box = document.getElementById("tables");
	const t = performance.now();
	box.click();
	await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
	const tablesMs = Math.round(performance.now() - t);
	const tableCells = document.querySelectorAll("td").length;
	box.click();
	return { tablesMs, tableCells };
}
