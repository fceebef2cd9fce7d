// viewer.test.mjs: the attention viewer (web/) in a real browser.
//
//   node tests/node/viewer.test.mjs        (make test-web; make test runs it too)
//
// playwright-core (npm) drives Debian's chromium (/usr/bin/chromium, or
// $CHROMIUM), headless, with a fresh profile; no browser is ever downloaded.
// attnd runs on an ephemeral loopback port (./daemon.mjs). Every check reads what the page
// drew from its data (window.attnd and the data-* attributes of each heatmap),
// never from pixels. Each check prints "ok - ..." or "FAIL - ...", then
// "N passed, M failed"; the exit status is nonzero on any failure.
//
// Screenshots for people: build/web-viewer.png (desktop) and
// build/web-viewer-phone.png (a phone's width).
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

import { startDaemon, stopDaemon } from "./daemon.mjs";
import { check, finish } from "./report.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const SCREENSHOT = resolve(ROOT, "build/web-viewer.png");
const SCREENSHOT_PHONE = resolve(ROOT, "build/web-viewer-phone.png");
const SEED_WORDS = ["나는", "맛있는", "사과를", "먹었다"];
const WAIT_MS = 15000;

function same(a, b) {
	return JSON.stringify(a) === JSON.stringify(b);
}

// ---- processes ---------------------------------------------------------------

const cleanups = [];
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
function startSecondOrigin(attndBase) {
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

async function launchBrowser() {
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

async function postAttention(base, body) {
	const res = await fetch(`${base}/v1/attention`, {
		method: "POST",
		headers: { "Content-Type": "application/json" },
		body: JSON.stringify(body),
	});
	return { status: res.status, body: await res.json() };
}

// Waits until pred(arg), run in the page, is true; pred reads window.attnd
// (a finished request leaves its state "ok" or "error").
async function settled(page, pred, arg) {
	await page.waitForFunction(pred, arg, { timeout: WAIT_MS });
}

// What every heatmap drew: [{head, weights, queryTokens, keyTokens, qLabels, kLabels, lines}].
function drawnHeatmaps(page) {
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

function seedsLines(weights, words) {
	return weights.map((row, i) => {
		let best = 0;
		for (let j = 1; j < row.length; j++) if (row[j] > row[best]) best = j;
		return `${words[i]} → ${words[best]}에 주목 (${(row[best] * 100).toFixed(1)}%)`;
	});
}

async function checkServing(base) {
	await check("GET / is the viewer; /web/{file} serves its files with their types; unknown files 404", async (p) => {
		const want = [
			["/", "text/html"],
			["/web/index.html", "text/html"],
			["/web/app.js", "text/javascript"],
			["/web/style.css", "text/css"],
		];
		for (const [path, type] of want) {
			const res = await fetch(base + path);
			const got = (res.headers.get("content-type") ?? "").split(";")[0];
			if (res.status !== 200 || got !== type) p.push(`${path}: ${res.status} ${got}, expected 200 ${type}`);
			if (res.headers.get("cache-control") !== "no-cache") p.push(`${path}: Cache-Control ${res.headers.get("cache-control")}`);
			await res.arrayBuffer();
		}
		for (const path of ["/web/nope.js", "/web/", "/web/../Makefile", "/index.html"]) {
			const res = await fetch(base + path);
			const body = await res.json().catch(() => null);
			if (res.status !== 404 || body?.error?.code !== "not_found") p.push(`${path}: ${res.status} ${JSON.stringify(body)}`);
		}
	});
}

async function checkDefault(page, base, requests) {
	await page.goto(`${base}/`);
	await settled(page, () => window.attnd?.state === "ok" && window.attnd.renders >= 1);
	const resp = await page.evaluate(() => window.attnd.lastResponse);
	const H = resp.shape.num_heads;

	await check(`the default sentence draws H = ${H} heatmaps (and the mean) with its tokens on both axes`, async (p) => {
		const text = await page.inputValue("#text");
		if (text !== SEED_WORDS.join(" ")) p.push(`the sentence is "${text}"`);
		const maps = await drawnHeatmaps(page);
		const heads = maps.filter((m) => m.head !== "mean");
		if (heads.length !== H) p.push(`${heads.length} head heatmaps, expected ${H}`);
		if (!maps.some((m) => m.head === "mean")) p.push("no mean heatmap");
		for (const m of maps) {
			for (const [what, got] of Object.entries({ queryTokens: m.queryTokens, keyTokens: m.keyTokens, qLabels: m.qLabels, kLabels: m.kLabels })) {
				if (!same(got, SEED_WORDS)) p.push(`heatmap ${m.head} ${what}: ${JSON.stringify(got)}`);
			}
			if (!same(m.weights.map((r) => r.length), [4, 4, 4, 4])) p.push(`heatmap ${m.head}: weights are not 4 x 4`);
		}
		heads.forEach((m, h) => {
			if (!same(m.weights, resp.weights[h])) p.push(`head ${h + 1} drew other weights than the API sent`);
		});
	});

	await check("each query's most-attended key is printed as the seeds print it", async (p) => {
		const direct = await postAttention(base, { model: resp.model, text: SEED_WORDS.join(" ") });
		const maps = await drawnHeatmaps(page);
		direct.body.weights.forEach((w, h) => {
			const want = seedsLines(w, SEED_WORDS);
			const got = maps.find((m) => m.head === String(h))?.lines;
			if (!same(got, want)) p.push(`head ${h + 1}: ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
		});
		if (resp.model === "tiny" && !maps[0].lines.includes("나는 → 맛있는에 주목 (56.3%)")) {
			p.push(`tiny's head 1 should say "나는 → 맛있는에 주목 (56.3%)": ${JSON.stringify(maps[0].lines)}`);
		}
		const mean = maps.find((m) => m.head === "mean");
		const want = direct.body.weights[0].map((row, i) => row.map((_, j) => direct.body.weights.reduce((s, w) => s + w[i][j], 0) / H));
		const off = mean.weights.flat().some((v, k) => Math.abs(v - want.flat()[k]) > 1e-6);
		if (off) p.push("the mean heatmap is not the mean of the heads");
	});

	await check("the output shape, server timing and colour legend are shown", async (p) => {
		const facts = await page.$$eval("#facts dt, #facts dd", (n) => n.map((x) => x.textContent));
		const at = (k) => facts[facts.indexOf(k) + 1];
		if (!at("Output").startsWith(`[4, ${resp.shape.d_model}]`)) p.push(`Output: ${at("Output")}`);
		if (at("Weights") !== `[${H}, 4, 4]`) p.push(`Weights: ${at("Weights")}`);
		if (!/parse [0-9.]+ · queue [0-9.]+ · compute [0-9.]+ · encode [0-9.]+ · total [0-9.]+ ms/.test(at("Server") ?? "")) p.push(`Server: ${at("Server")}`);
		const timing = await page.evaluate(() => window.attnd.timing.map((t) => t.name));
		if (!same(timing, ["parse", "queue", "compute", "encode", "total"])) p.push(`Server-Timing parsed as ${JSON.stringify(timing)}`);
		const legend = await page.$eval("#legend", (n) => n.textContent);
		if (!legend.includes("0 (masked)") || !/0\.\d\d/.test(legend)) p.push(`legend: ${legend}`);
	});

	await check("a heatmap is usable from the keyboard (focus, arrows, read-out)", async (p) => {
		await page.focus("figure.head svg.map");
		await page.keyboard.press("ArrowRight");
		await page.keyboard.press("ArrowDown");
		const text = await page.$eval("#readout", (n) => n.textContent);
		const w = resp.weights[0][1][1];
		if (!text.includes(`${SEED_WORDS[1]} → ${SEED_WORDS[1]}`) || !text.includes(w.toFixed(4))) p.push(`read-out: ${text}`);
		const tip = await page.$eval("#tip", (n) => !n.hidden);
		if (!tip) p.push("no tooltip at the keyboard cursor");
		await page.click("#tables");
		const shown = await page.$$eval("table.wtable", (t) => t.filter((x) => x.offsetParent !== null).length);
		if (shown !== H + 1) p.push(`${shown} tables shown, expected ${H + 1}`);
		await page.click("#tables");
	});

	await check("causal: every weight above the diagonal is 0, every row sums to 1", async (p) => {
		const before = await page.evaluate(() => window.attnd.renders);
		await page.selectOption("#mask", "causal");
		await settled(page, (n) => window.attnd.state === "ok" && window.attnd.renders > n && window.attnd.lastRequest.mask === "causal", before);
		const maps = await drawnHeatmaps(page);
		if (maps.filter((m) => m.head !== "mean").length !== H) p.push(`${maps.length} heatmaps`);
		for (const m of maps) {
			m.weights.forEach((row, i) => {
				row.forEach((v, j) => {
					if (j > i && v !== 0) p.push(`heatmap ${m.head}: weight [${i}][${j}] = ${v}`);
				});
				const sum = row.reduce((a, b) => a + b, 0);
				if (Math.abs(sum - 1) > 1e-5) p.push(`heatmap ${m.head}: row ${i} sums to ${sum}`);
			});
		}
		const masked = await page.$$eval('figure.head rect[fill="url(#attnd-masked)"]', (r) => r.length);
		if (masked !== (H + 1) * 6) p.push(`${masked} cells drawn as masked, expected ${(H + 1) * 6}`);
	});

	await check("the seeds' exercise: 1, 4, 8 and 16 heads of an inline seeded model", async (p) => {
		for (const n of [1, 4, 8, 16]) {
			await page.click(`button[data-heads="${n}"]`);
			await settled(page, (k) => window.attnd.state === "ok" && window.attnd.lastRequest.model.num_heads === k && window.attnd.heads.length === k, n);
			const maps = await drawnHeatmaps(page);
			const heads = maps.filter((m) => m.head !== "mean");
			if (heads.length !== n) p.push(`${n} heads: ${heads.length} heatmaps`);
			if (!heads.every((m) => same(m.qLabels, SEED_WORDS))) p.push(`${n} heads: wrong labels`);
			const note = await page.$eval("#head-dim", (x) => x.textContent);
			if (!note.includes(`= ${64 / n}`)) p.push(`${n} heads: d_k note "${note}"`);
		}
	});

	await check("an API error is shown as the API worded it (message and pointer)", async (p) => {
		await page.fill("#d_model", "6");
		await page.fill("#num_heads", "4");
		await settled(page, () => {
			const v = window.attnd;
			return v.state === "error" && v.lastRequest.model.d_model === 6 && v.lastRequest.model.num_heads === 4;
		});
		const req = await page.evaluate(() => window.attnd.lastRequest);
		const direct = await postAttention(base, req);
		const e = direct.body.error;
		if (direct.status !== 422 || !e) p.push(`the API answered ${direct.status} ${JSON.stringify(direct.body)}`);
		const box = await page.$eval("#error", (n) => ({ hidden: n.hidden, text: n.textContent, role: n.getAttribute("role") }));
		if (box.hidden) p.push("the error box is hidden");
		for (const part of [e.message, e.pointer, e.code]) if (!box.text.includes(part)) p.push(`"${part}" is not in "${box.text}"`);
		const shown = await page.evaluate(() => window.attnd.lastError);
		if (shown.message !== e.message || shown.pointer !== e.pointer) p.push(`lastError ${JSON.stringify(shown)}`);
		const invalid = await page.getAttribute(`#${e.pointer.split("/").pop()}`, "aria-invalid");
		if (invalid !== "true") p.push(`the field at ${e.pointer} is not marked invalid`);
	});

	await check("the page loaded nothing from anywhere but attnd", async (p) => {
		const foreign = requests.filter((u) => !u.startsWith(base + "/") && !u.startsWith("data:"));
		if (foreign.length > 0) p.push(`requests elsewhere: ${foreign.slice(0, 5).join(", ")}`);
		if (!requests.some((u) => u === `${base}/web/app.js`)) p.push("app.js was not requested from attnd");
	});
}

// A whole checkpoint (the test folder gpt2_f32: 3 layers, 4 heads, causal): the layer
// box appears, the mask and positions are the model's own, and the heatmaps are the
// asked layer's attention as the API answers it.
async function checkCheckpoint(page, base) {
	await check("a checkpoint model: one layer's attention, its own causal mask", async (p) => {
		await page.fill("#text", "a cat sat"); // its context is 16 bytes-tokens
		await page.selectOption("#model", "gpt2-tiny");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.model === "gpt2-tiny");
		if (await page.$eval("#layer-box", (n) => n.hidden)) p.push("the layer box is hidden");
		if (!(await page.$eval("#mask", (n) => n.disabled))) p.push("the mask is not disabled");
		await page.fill("#layer", "2");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.layers?.[0] === 2);
		const req = await page.evaluate(() => window.attnd.lastRequest);
		if (req.mask !== undefined || req.positional !== undefined) p.push(`sent ${JSON.stringify(req)}`);
		const direct = await postAttention(base, req);
		const want = direct.body.attentions?.[0];
		const maps = (await drawnHeatmaps(page)).filter((m) => m.head !== "mean");
		if (!want || maps.length !== want.length) p.push(`${maps.length} heatmaps for ${want?.length} heads`);
		maps.forEach((m, h) =>
			m.weights.forEach((row, i) =>
				row.forEach((v, j) => {
					if (j > i && v !== 0) p.push(`head ${h}: [${i}][${j}] = ${v} above the diagonal`);
					if (want && Math.abs(v - want[h][i][j]) > 1e-6) p.push(`head ${h}: [${i}][${j}] = ${v}, the API says ${want[h][i][j]}`);
				}),
			),
		);
		await page.selectOption("#model", "tiny");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.model === "tiny");
		if (!(await page.$eval("#layer-box", (n) => n.hidden))) p.push("the layer box stays for tiny");
	});
}

async function screenshots(context, base, problemsOnPage) {
	await check("screenshots (desktop and phone) with no horizontal overflow on a phone", async (p) => {
		mkdirSync(dirname(SCREENSHOT), { recursive: true });
		const page = await context.newPage();
		page.on("pageerror", (e) => problemsOnPage.push(`page error: ${e.message}`));
		await page.goto(`${base}/`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.renders >= 1);
		await page.screenshot({ path: SCREENSHOT, fullPage: true });
		await page.setViewportSize({ width: 390, height: 844 });
		// the page has the phone's width (reading scrollWidth then lays it out)
		await settled(page, (w) => window.innerWidth === w, 390);
		const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
		if (overflow > 0) p.push(`the page is ${overflow}px wider than a 390px phone`);
		await page.screenshot({ path: SCREENSHOT_PHONE, fullPage: true });
		await page.close();
		console.log(`    screenshots: ${SCREENSHOT}, ${SCREENSHOT_PHONE}`);
	});
}

async function checkCors(context, base) {
	const second = await startSecondOrigin(base);
	await check(`a page from another origin (${second.base}) calls attnd's /v1/attention (CORS)`, async (p) => {
		const page = await context.newPage();
		await page.goto(`${second.base}/`);
		await page.waitForFunction(() => window.result !== null, null, { timeout: WAIT_MS });
		const r = await page.evaluate(() => window.result);
		await page.close();
		if (r.error) {
			p.push(`the cross-origin fetch failed: ${r.error}`);
			return;
		}
		if (r.status !== 200) p.push(`status ${r.status}`);
		if (!same(r.tokens, SEED_WORDS)) p.push(`tokens ${JSON.stringify(r.tokens)}`);
		if (!Array.isArray(r.weights) || r.weights.length !== 2) p.push("no per-head weights");
		if (!/^parse;dur=/.test(r.timing ?? "")) p.push(`Server-Timing not readable cross-origin: ${r.timing}`);
		if (r.requestId !== "cors-check") p.push(`X-Request-Id not readable cross-origin: ${r.requestId}`);
	});
	second.server.close();
}

async function main() {
	let d = null;
	let browser = null;
	try {
		d = await startDaemon(["--model", "gpt2-tiny=tests/data/checkpoints/gpt2_f32"]);
		await checkServing(d.base);
		browser = await launchBrowser();
		const page = await browser.context.newPage();
		const requests = [];
		const problemsOnPage = [];
		page.on("request", (r) => requests.push(r.url()));
		page.on("pageerror", (e) => problemsOnPage.push(`page error: ${e.message}`));
		page.on("console", (m) => {
			// the one error the page provokes on purpose is the 422 above
			if (m.type() === "error" && !/status of 422/.test(m.text())) problemsOnPage.push(`console: ${m.text()}`);
		});
		await checkDefault(page, d.base, requests);
		await checkCheckpoint(page, d.base);
		await page.close();
		await screenshots(browser.context, d.base, problemsOnPage);
		await checkCors(browser.context, d.base);
		await check("no script errors or console errors on the viewer", (p) => p.push(...problemsOnPage));
	} catch (e) {
		await check("the browser test runs", (p) => p.push(String(e && e.stack ? e.stack : e)));
	} finally {
		if (browser) await browser.context.close().catch(() => {});
		await stopDaemon(d);
	}
	finish();
}

await main();
