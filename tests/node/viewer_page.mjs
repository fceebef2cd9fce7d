// viewer_page.mjs: what viewer.test.mjs and viewer_checkpoint.mjs share: the
// paths and constants, the clean-ups run at exit, the browser and a second
// origin, and the helpers that read what the page drew.
//
// Ownership: every temporary directory, server or browser profile made here
// registers its clean-up in `cleanups`, run in reverse order when the process
// exits (also on SIGINT, SIGTERM and SIGHUP, which ./daemon.mjs turns into an
// exit); the browser context is the caller's to close.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
export const SCREENSHOT = resolve(ROOT, "build/web-viewer.png");
export const SCREENSHOT_MINI = SCREENSHOT.replace(/\.png$/, "-mini.png");
export const SCREENSHOT_PHONE = resolve(ROOT, "build/web-viewer-phone.png");
export const SEED_WORDS = ["나는", "맛있는", "사과를", "먹었다"];
export const WAIT_MS = 15000;

export function same(a, b) {
	return JSON.stringify(a) === JSON.stringify(b);
}

// ---- processes ---------------------------------------------------------------

export const cleanups = [];
process.on("exit", () => {
	for (const f of cleanups.reverse()) {
		try {
			f(true);
		} catch {
			// leaving anyway
		}
	}
});
// (attnd is started by ./daemon.mjs, which also turns SIGINT, SIGTERM and
// SIGHUP into an exit, so these clean-ups run then too)

// A second origin: one page whose script calls attnd cross-origin.
export function startSecondOrigin(attndBase) {
	const page = `<!doctype html><meta charset="utf-8"><title>second origin</title>
<script>
window.result = null;
fetch(${JSON.stringify(attndBase + "/v1/attention")}, {
  method: "POST",
  headers: {"Content-Type": "application/json", "X-Request-Id": "cors-check"},
  body: JSON.stringify({model: "tiny", text: ${JSON.stringify(SEED_WORDS.join(" "))}})
}).then(async (r) => {
  const body = await r.json();
  window.result = {status: r.status, weights: body.weights, tokens: body.tokens,
                   timing: r.headers.get("Server-Timing"), requestId: r.headers.get("X-Request-Id")};
}).catch((e) => { window.result = {error: String(e)}; });
</script>`;
	const server = createServer((req, res) => {
		res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
		res.end(page);
	});
	cleanups.push(() => server.close());
	return new Promise((res) => {
		server.listen(0, "127.0.0.1", () => res({ server, base: `http://127.0.0.1:${server.address().port}` }));
	});
}

export async function launchBrowser() {
	if (!existsSync(CHROMIUM)) {
		throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or make deps)`);
	}
	const profile = mkdtempSync(join(tmpdir(), "attnd-web-"));
	cleanups.push(() => rmSync(profile, { recursive: true, force: true }));
	const context = await chromium.launchPersistentContext(profile, {
		executablePath: CHROMIUM,
		headless: true,
		args: [
			"--headless",
			"--no-sandbox",
			"--disable-gpu",
			"--disable-quic",
			"--no-first-run",
			"--disable-background-networking",
			"--disable-component-update",
			"--disable-sync",
		],
		viewport: { width: 1280, height: 900 },
		deviceScaleFactor: 1,
	});
	return { context, profile };
}

// ---- the page ------------------------------------------------------------------

export async function postAttention(base, body) {
	const res = await fetch(`${base}/v1/attention`, {
		method: "POST",
		headers: { "Content-Type": "application/json" },
		body: JSON.stringify(body),
	});
	return { status: res.status, body: await res.json() };
}

// n words of a made-up text, 50 of them over and over: w0 w1 ... w49 w0 ...
// (the long inputs the canvas checks open on base).
export function madeUpWords(n) {
	return Array.from({ length: n }, (_, i) => `w${i % 50}`).join(" ");
}

// Resolves after two animation frames of the page: what it drew is painted.
export function twoFrames(page) {
	return page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
}

// Waits until pred(arg), run in the page, is true; pred reads window.attnd
// (a finished request leaves its state "ok" or "error").
export async function settled(page, pred, arg) {
	await page.waitForFunction(pred, arg, { timeout: WAIT_MS });
}

// What every heatmap drew: [{head, weights, queryTokens, keyTokens, qLabels, kLabels, lines}].
export function drawnHeatmaps(page) {
	return page.$$eval("figure.head", (figs) =>
		figs.map((f) => ({
			head: f.dataset.head,
			weights: JSON.parse(f.dataset.weights),
			queryTokens: JSON.parse(f.dataset.queryTokens),
			keyTokens: JSON.parse(f.dataset.keyTokens),
			qLabels: [...f.querySelectorAll("text.qlabel")].map((t) => t.firstChild.textContent),
			kLabels: [...f.querySelectorAll("text.klabel")].map((t) => t.firstChild.textContent),
			lines: [...f.querySelectorAll("ol.toplist li")].map((li) => li.textContent),
		})),
	);
}

// How many of the page's live regions (aria-live other than "off") say
// text now: each is spoken when it changes, so a read-out meant to be
// heard once must be in exactly one.
export function liveRegionsSaying(page, text) {
	return page.$$eval('[aria-live]:not([aria-live="off"])', (nodes, t) => nodes.filter((n) => n.textContent.includes(t)).length, text);
}

// Points at an element once it is in view (a scroll hides the tooltip, as it should).
export async function pointAt(page, handle) {
	await handle.scrollIntoViewIfNeeded();
	await page.waitForTimeout(50);
	await handle.hover();
}

export function seedsLines(weights, words) {
	return weights.map((row, i) => {
		let best = 0;
		for (let j = 1; j < row.length; j++) if (row[j] > row[best]) best = j;
		return `${words[i]} → ${words[best]}에 주목 (${(row[best] * 100).toFixed(1)}%)`;
	});
}
