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
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
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
const SCREENSHOT_MINI = SCREENSHOT.replace(/\.png$/, "-mini.png");
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

// ---- a checkpoint with a known previous-token head -------------------------------

// Copies the test checkpoint gpt2_f32 (3 layers, 4 heads of 8, E 32, 16
// positions) into dir, its layer 0 head 0 rewired to attend to the previous
// token: the position embedding p is A (cos tp, sin tp, -cos tp, -sin tp, 0...)
// (token embeddings shrunk to noise beside it), ln_1 the identity, so after
// ln_1 the position is a point on a circle; head 0's query is that point
// rotated back by one step (t) and its key the point itself, scaled up, so
// q_i . k_j peaks at j = i - 1. The other heads and layers stay random.
function plantPreviousTokenHead(dir) {
	const src = resolve(ROOT, "tests/data/checkpoints/gpt2_f32");
	mkdirSync(dir, { recursive: true });
	for (const f of ["config.json", "tokenizer.json"]) copyFileSync(join(src, f), join(dir, f));
	const buf = readFileSync(join(src, "model.safetensors"));
	const n = Number(buf.readBigUInt64LE(0));
	const header = JSON.parse(buf.subarray(8, 8 + n).toString("utf8"));
	const data = new Float32Array(buf.buffer.slice(buf.byteOffset + 8 + n, buf.byteOffset + buf.length));
	const tensor = (name) => {
		const [a, b] = header[`transformer.${name}`].data_offsets;
		return data.subarray(a / 4, b / 4);
	};
	const E = 32;
	const t = (2 * Math.PI) / 32;
	const A = 20;
	const beta = 300;
	const wte = tensor("wte.weight");
	for (let i = 0; i < wte.length; i++) wte[i] *= 0.1;
	const wpe = tensor("wpe.weight");
	for (let p = 0; p < 16; p++) {
		const row = wpe.subarray(p * E, (p + 1) * E);
		row.fill(0);
		row.set([A * Math.cos(t * p), A * Math.sin(t * p), -A * Math.cos(t * p), -A * Math.sin(t * p)]);
	}
	tensor("h.0.ln_1.weight").fill(1);
	tensor("h.0.ln_1.bias").fill(0);
	const w = tensor("h.0.attn.c_attn.weight"); // Conv1D [E, 3E]: q | k | v columns
	const bias = tensor("h.0.attn.c_attn.bias");
	for (let r = 0; r < E; r++) for (let c = 0; c < 8; c++) {
		w[r * 3 * E + c] = 0; // head 0's query
		w[r * 3 * E + E + c] = 0; // head 0's key
	}
	w[0 * 3 * E + 0] = beta * Math.cos(t);
	w[1 * 3 * E + 0] = beta * Math.sin(t);
	w[0 * 3 * E + 1] = -beta * Math.sin(t);
	w[1 * 3 * E + 1] = beta * Math.cos(t);
	w[0 * 3 * E + E + 0] = 1;
	w[1 * 3 * E + E + 1] = 1;
	bias.fill(0, 0, 8);
	bias.fill(0, E, E + 8);
	writeFileSync(join(dir, "model.safetensors"), Buffer.concat([buf.subarray(0, 8 + n), Buffer.from(data.buffer)]));
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

// Points at an element once it is in view (a scroll hides the tooltip, as it should).
async function pointAt(page, handle) {
	await handle.scrollIntoViewIfNeeded();
	await page.waitForTimeout(50);
	await handle.hover();
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
			["/web/style.css", "text/css"],
			// every module of web/ is embedded (tools/embed_web.py), not only app.js
			...readdirSync(resolve(ROOT, "web")).filter((f) => f.endsWith(".js")).map((f) => [`/web/${f}`, "text/javascript"]),
		];
		if (want.length < 8) p.push(`only ${want.length - 3} scripts in web/`);
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

// The page opens on the built-in trained model `mini` (beside the checkpoint
// gpt2-tiny) with an English sentence; the Korean example is one click away.
async function checkOpening(page, base) {
	await check("the page opens on the trained model mini with an English sentence; the Korean example is one click away", async (p) => {
		await page.goto(`${base}/`);
		await settled(page, () => window.attnd?.state === "ok" || window.attnd?.state === "error");
		const model = await page.inputValue("#model");
		if (model !== "mini") p.push(`opened on ${model}, expected the trained model mini`);
		const text = await page.inputValue("#text");
		if (!/^The animal didn't cross the street/.test(text)) p.push(`opened on "${text}"`);
		const ko = await page.$('button[data-example="ko"]');
		if (!ko || !(await ko.textContent()).includes(SEED_WORDS.join(" "))) p.push("no Korean example button");
	});
}

async function checkDefault(page, base, requests) {
	await page.goto(`${base}/?model=tiny`);
	await settled(page, () => window.attnd?.state === "ok" && window.attnd.renders >= 1);
	await page.click('button[data-example="ko"]');
	await settled(page, (t) => window.attnd.state === "ok" && window.attnd.lastRequest.text === t, SEED_WORDS.join(" "));
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
		// the scroll that focusing may cause hides the tooltip (a fixed tooltip
		// would be left behind); let its event come before the arrows, as it does
		// for a person, not after them (the likely cause of one CI run's "no
		// tooltip": two frames later, the arrows' tooltip stays)
		await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
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

// A single-layer seeded model (tiny): labels, the page's language, masked
// cells, the scores view.
async function checkSingleLayer(page, base) {
	await page.goto(`${base}/?model=tiny&text=${encodeURIComponent(SEED_WORDS.join(" "))}`);
	await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "tiny");

	await check("seeded models (base, tiny, inline) are labelled random weights (untrained); the checkpoint is not", async (p) => {
		const opts = await page.$$eval("#model option", (o) => Object.fromEntries(o.map((x) => [x.value, x.textContent])));
		for (const name of ["base", "tiny", "@inline"]) if (!opts[name]?.includes("random weights (untrained)")) p.push(`option ${name}: "${opts[name]}"`);
		if (opts["gpt2-tiny"]?.includes("random weights")) p.push(`option gpt2-tiny: "${opts["gpt2-tiny"]}"`);
		const badge = await page.$eval("#model-badge", (n) => (n.hidden ? "" : n.textContent));
		if (!badge.includes("tiny: random weights (untrained)")) p.push(`badge: "${badge}"`);
		const note = await page.$eval("#model-note", (n) => n.textContent);
		if (!/random weights \(untrained\)/i.test(note)) p.push(`model note: "${note}"`);
		const facts = await page.$eval("#facts", (n) => n.textContent);
		if (!facts.includes("random weights (untrained)")) p.push(`facts: "${facts}"`);
	});

	await check("the read-out speaks Korean for a Korean sentence and English otherwise (no Korean particle after English words)", async (p) => {
		const ko = (await drawnHeatmaps(page))[0].lines;
		if (!ko.every((l) => /에 주목 \(\d+\.\d%\)$/.test(l))) p.push(`Korean lines: ${JSON.stringify(ko)}`);
		await page.click('button[data-example="en"]');
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lang === "en" && window.attnd.lastRequest.model === "tiny");
		const maps = await drawnHeatmaps(page);
		const words = maps[0].queryTokens;
		if (!words.includes("animal") || !words.includes("it")) p.push(`English tokens: ${JSON.stringify(words)}`);
		for (const l of maps.flatMap((m) => m.lines)) {
			if (/[\uac00-\ud7af]/.test(l) || !/^\S+ → \S+ \(\d+%\)$/.test(l)) p.push(`English line: "${l}"`);
		}
		const big = await page.$eval("#focus figure ol.toplist", (n) => n.textContent);
		if (big.includes("주목")) p.push(`the large head's lines are Korean: ${big}`);
		await page.focus("figure.head svg.map");
		await page.keyboard.press("ArrowRight");
		const text = await page.$eval("#readout", (n) => n.textContent);
		if (text.includes("주목") || !/→ \S+ \(\d+%\)/.test(text)) p.push(`English read-out: "${text}"`);
		await page.click('button[data-example="ko"]');
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lang === "ko");
		await page.focus("#focus svg.map");
		await page.keyboard.press("ArrowRight");
		const under = await page.$eval("#focus .map-readout", (n) => n.textContent);
		if (under !== `${SEED_WORDS[0]} → ${SEED_WORDS[1]}에 주목 (${(((await page.evaluate(() => window.attnd.layers[0][0][0][1])) * 100).toFixed(1))}%)`) p.push(`Korean read-out under the heatmap: "${under}"`);
	});

	await check("a masked cell's tooltip says masked; tooltips go away on redraw", async (p) => {
		await page.selectOption("#mask", "causal");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.mask === "causal");
		const cell = await page.$('figure.head rect[data-q="0"][data-k="3"]');
		const fill = await cell.getAttribute("fill");
		if (fill !== "url(#attnd-masked)") p.push(`cell [0][3] is drawn ${fill}`);
		await pointAt(page, cell);
		const tip = await page.$eval("#tip", (n) => ({ hidden: n.hidden, text: n.textContent }));
		if (tip.hidden || !tip.text.includes("masked")) p.push(`tooltip over a masked cell: ${JSON.stringify(tip)}`);
		const open = await page.$('figure.head rect[data-q="3"][data-k="0"]');
		await pointAt(page, open);
		const tip2 = await page.$eval("#tip", (n) => n.textContent);
		if (tip2.includes("masked")) p.push(`tooltip over a visible cell says masked: ${tip2}`);
		await page.selectOption("#scale", "unit"); // a redraw, no request
		if (!(await page.$eval("#tip", (n) => n.hidden))) p.push("the tooltip stayed after a redraw");
		await page.selectOption("#scale", "shared");
	});

	await check("the scores view: a single-layer model's pre-softmax scores, -Infinity where masked", async (p) => {
		await page.check('input[name="values"][value="scores"]');
		await settled(page, () => window.attnd.scores !== null || window.attnd.scoresNote !== null);
		const got = await page.evaluate(() => ({ scores: window.attnd.scores, note: window.attnd.scoresNote, req: window.attnd.lastRequest }));
		if (got.note) p.push(`note: ${got.note}`);
		const direct = await postAttention(base, { ...got.req, scores: "masked" });
		const want = direct.body.scores.map((h) => h.map((r) => r.map(Number)));
		if (!same(got.scores?.[0], want)) p.push("the scores are not the API's");
		const kind = await page.$eval("#focus figure", (f) => f.dataset.kind);
		if (kind !== "scores") p.push(`the large head draws ${kind}`);
		const cell = await page.$('#focus rect[data-q="0"][data-k="2"]');
		await pointAt(page, cell);
		const tip = await page.$eval("#tip", (n) => n.textContent);
		if (!tip.includes("masked")) p.push(`a -Infinity score's tooltip: ${tip}`);
		const legend = await page.$eval("#legend", (n) => n.textContent);
		if (!legend.includes("Score (before softmax)")) p.push(`legend: ${legend}`);
		await page.check('input[name="values"][value="weights"]');
		await page.selectOption("#mask", "none");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.mask === "none");
	});
}

// A whole checkpoint (the test folder gpt2_f32: 3 layers, 4 heads, causal): the layer
// box appears, the mask and positions are the model's own, and the heatmaps are the
// asked layer's attention as the API answers it.
async function checkCheckpoint(page, base) {
	await check("a checkpoint model: every layer in one request; the layer picker draws that layer's heads, causal", async (p) => {
		await page.fill("#text", "a cat sat"); // its context is 16 bytes-tokens
		await page.selectOption("#model", "gpt2-tiny");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.model === "gpt2-tiny");
		if (await page.$eval("#layer-box", (n) => n.hidden)) p.push("the layer box is hidden");
		if (!(await page.$eval("#mask", (n) => n.disabled))) p.push("the mask is not disabled");
		const req = await page.evaluate(() => window.attnd.lastRequest);
		if (req.layers !== "all" || req.weights !== "per_head") p.push(`sent ${JSON.stringify(req)}`);
		if (req.mask !== undefined || req.positional !== undefined) p.push(`sent ${JSON.stringify(req)}`);
		const renders = await page.evaluate(() => window.attnd.renders);
		await page.fill("#layer", "2");
		await settled(page, () => window.attnd.layer === 2);
		if ((await page.evaluate(() => window.attnd.renders)) !== renders) p.push("choosing a layer sent a request");
		const direct = await postAttention(base, req);
		const want = direct.body.attentions?.[2];
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
		const badge = await page.$eval("#model-badge", (n) => n.textContent);
		if (badge.includes("random weights")) p.push(`the checkpoint is labelled "${badge}"`);
	});

	await check("model view: a layers x heads grid (3 x 4); clicking a cell opens that head large", async (p) => {
		const cells = await page.$$eval("#grid button.cell", (b) => b.map((x) => [Number(x.dataset.layer), Number(x.dataset.head)]));
		const want = [];
		for (let l = 0; l < 3; l++) for (let h = 0; h < 4; h++) want.push([l, h]);
		if (!same(cells, want)) p.push(`grid cells ${JSON.stringify(cells)}`);
		await page.click('#grid button.cell[data-layer="1"][data-head="3"]');
		const fig = await page.$eval("#focus figure", (f) => ({ layer: f.dataset.layer, head: f.dataset.head, w: JSON.parse(f.dataset.weights), big: f.querySelector("svg.map").getBoundingClientRect().width }));
		const api = (await postAttention(base, await page.evaluate(() => window.attnd.lastRequest))).body.attentions[1][3];
		if (fig.layer !== "1" || fig.head !== "3") p.push(`opened layer ${fig.layer} head ${fig.head}`);
		if (fig.w.flat().some((v, k) => Math.abs(v - api.flat()[k]) > 1e-6)) p.push("the large head is not the API's layer 1 head 3");
		const small = await page.$eval("figure.head svg.map", (s) => s.getBoundingClientRect().width);
		if (!(fig.big > small)) p.push(`the large head is ${fig.big}px wide, a small one ${small}px`);
		const pressed = await page.$$eval('#grid button.cell[aria-pressed="true"]', (b) => b.map((x) => `${x.dataset.layer}/${x.dataset.head}`));
		if (!same(pressed, ["1/3"])) p.push(`pressed cells ${JSON.stringify(pressed)}`);
		if ((await page.inputValue("#pick-layer")) !== "1" || (await page.inputValue("#pick-head")) !== "3") p.push("the pickers do not show layer 1 head 3");
	});

	await check("the grid works from the keyboard: arrows move between heads, Enter opens one", async (p) => {
		await page.focus('#grid button.cell[data-layer="0"][data-head="0"]');
		await page.keyboard.press("ArrowDown");
		await page.keyboard.press("ArrowRight");
		const at = await page.evaluate(() => `${document.activeElement.dataset.layer}/${document.activeElement.dataset.head}`);
		if (at !== "1/1") p.push(`focus on ${at} after down, right`);
		await page.keyboard.press("Enter");
		const fig = await page.$eval("#focus figure", (f) => `${f.dataset.layer}/${f.dataset.head}`);
		if (fig !== "1/1") p.push(`Enter opened ${fig}`);
		const label = await page.getAttribute('#grid button.cell[data-layer="1"][data-head="1"]', "aria-label");
		if (label !== "Layer 1, head 1") p.push(`aria-label "${label}"`);
		await page.click('#grid button.cell[data-layer="1"][data-head="3"]');
	});

	await check("two heads side by side to compare", async (p) => {
		await page.check("#compare");
		await page.selectOption("#cmp-layer", "0");
		await page.selectOption("#cmp-head", "2");
		const figs = await page.$$eval("#focus figure", (f) => f.map((x) => `${x.dataset.layer}/${x.dataset.head}`));
		if (!same(figs, ["1/3", "0/2"])) p.push(`compared ${JSON.stringify(figs)}`);
		await page.uncheck("#compare");
		const after = await page.$$eval("#focus figure", (f) => f.length);
		if (after !== 1) p.push(`${after} large heads after comparing`);
	});

	await check("head view: lines per head; toggling a head removes its lines", async (p) => {
		const count = () => page.$$eval("#headview line", (l) => l.reduce((c, x) => ((c[x.dataset.head] = (c[x.dataset.head] ?? 0) + 1), c), {}));
		const before = await count();
		for (const h of ["0", "1", "2", "3"]) if (!(before[h] > 0)) p.push(`head ${h} has no lines: ${JSON.stringify(before)}`);
		await page.click('#headview button.toggle[data-head="0"]');
		const after = await count();
		if (after["0"] !== undefined) p.push(`head 0 still has ${after["0"]} lines`);
		if (after["1"] !== before["1"]) p.push("toggling head 0 changed head 1's lines");
		if ((await page.getAttribute('#headview button.toggle[data-head="0"]', "aria-pressed")) !== "false") p.push("the toggle is not aria-pressed=false");
		await page.click('#headview button.toggle[data-head="0"]');
		const back = await count();
		if (back["0"] !== before["0"]) p.push(`head 0 came back with ${back["0"]} lines, had ${before["0"]}`);
	});

	await check("tokens are the tokenizer's pieces (a leading space as ␣); pointing at one lights its characters", async (p) => {
		const chips = await page.$$eval("#tokens li", (l) => l.map((x) => x.textContent));
		if (!same(chips, ["a", "␣", "c", "a", "t", "␣", "s", "a", "t"])) p.push(`tokens ${JSON.stringify(chips)}`);
		await page.hover('#tokens li[data-tok="4"]');
		const lit = await page.$$eval("#sentence span.lit", (s) => s.map((x) => Number(x.dataset.cp)));
		if (!same(lit, [4])) p.push(`token 4 lit characters ${JSON.stringify(lit)}`);
		await page.hover('#focus text.klabel[data-tok="2"]');
		const lit2 = await page.$$eval("#sentence span.lit", (s) => s.map((x) => Number(x.dataset.cp)));
		if (!same(lit2, [2])) p.push(`key label 2 lit characters ${JSON.stringify(lit2)}`);
	});

	await check("the scores view on a checkpoint draws its pre-softmax scores (no 'not available' note)", async (p) => {
		await page.check('input[name="values"][value="scores"]');
		await settled(page, () => window.attnd.scores !== null || window.attnd.scoresNote !== null);
		const note = await page.$eval("#scores-note", (n) => (n.hidden ? "" : n.textContent));
		const scores = await page.evaluate(() => window.attnd.scores);
		if (scores === null) p.push(`no scores; the note says "${note}"`);
		else if (note !== "") p.push(`scores came back yet the note says "${note}"`);
		const kind = await page.$eval("#focus figure", (f) => f.dataset.kind);
		if (kind !== "scores") p.push(`the large head draws ${kind}`);
		await page.check('input[name="values"][value="weights"]');
	});
}

// Find heads: the scoring (TransformerLens's definitions) on made-up patterns,
// then the button on the checkpoint (random weights: scores in [0, 1]).
async function checkFindHeads(page, base) {
	await check("find-heads scoring: a previous-token, an induction and a sink pattern each score 1 and rank first", async (p) => {
		const got = await page.evaluate(async () => {
			const f = await import("/web/findheads.js");
			const n = 5;
			const L = 2 * n;
			const pattern = (at) => Array.from({ length: L }, (_, i) => Array.from({ length: L }, (_, j) => (j === at(i) ? 1 : 0)));
			const prev = pattern((i) => Math.max(0, i - 1));
			const induction = pattern((i) => (i >= n && i < L - 1 ? i - n + 1 : i));
			const sink = pattern(() => 0);
			const scores = f.scoreModel([[prev, induction, sink]], n);
			return { scores, prev: f.ranked(scores, "prev", [0], 1)[0], induction: f.ranked(scores, "induction", [0], 1)[0], sink: f.ranked(scores, "sink", [0], 1)[0], ids: f.randomIds(50, 60, new Set([59])) };
		});
		const s = got.scores[0];
		if (s[0].prev !== 1 || s[1].induction !== 1 || s[2].sink !== 1) p.push(`scores ${JSON.stringify(s)}`);
		if (got.prev.head !== 0 || got.induction.head !== 1 || got.sink.head !== 2) p.push(`ranked ${JSON.stringify([got.prev, got.induction, got.sink])}`);
		if (got.ids.length !== 50 || new Set(got.ids).size !== 50 || got.ids.includes(59)) p.push(`random ids ${JSON.stringify(got.ids)}`);
	});

	await check("find heads on the checkpoint: every cell gets its three scores, all in [0, 1], and a ranking", async (p) => {
		await page.click("#find-heads");
		await settled(page, () => window.attnd.found !== null && document.querySelectorAll("#grid button.cell[data-prev]").length > 0);
		const cells = await page.$$eval("#grid button.cell", (b) => b.map((x) => ({ prev: x.dataset.prev, induction: x.dataset.induction, sink: x.dataset.sink, label: x.getAttribute("aria-label") })));
		if (cells.length !== 12) p.push(`${cells.length} cells`);
		for (const c of cells) {
			for (const k of ["prev", "induction", "sink"]) {
				const v = Number(c[k]);
				if (c[k] === undefined || !(v >= 0 && v <= 1)) p.push(`${c.label}: ${k} = ${c[k]}`);
			}
			if (!/previous token [0-9.]+, induction [0-9.]+, first token \(sink\) [0-9.]+/.test(c.label)) p.push(`label "${c.label}"`);
		}
		const found = await page.evaluate(() => window.attnd.found);
		if (found.n !== 8 || found.ids.length !== 16 || !same(found.ids.slice(0, 8), found.ids.slice(8))) p.push(`sequence ${JSON.stringify(found.ids)} (n ${found.n})`);
		if (found.ids.includes(264)) p.push("the sequence has <|endoftext|> (264)");
		// the scores are the page's own arithmetic on the API's answer
		const direct = await postAttention(base, { model: "gpt2-tiny", tokens: found.ids, layers: "all", weights: "per_head" });
		const prev = direct.body.attentions[1][2].slice(1).reduce((s, row, i) => s + row[i], 0) / 15;
		if (Math.abs(prev - found.scores[1][2].prev) > 1e-6) p.push(`layer 1 head 2 previous-token ${found.scores[1][2].prev}, recomputed ${prev}`);
		const lists = await page.$$eval("#find-list ol li", (l) => l.length);
		if (lists !== 9) p.push(`${lists} ranked heads, expected 3 per behaviour`);
		// the causal first row looks only at token 0: every sink score is at least 1/16
		if (found.scores.flat().some((s) => s.sink < 1 / 16 - 1e-6)) p.push("a sink score under 1/16 on a causal model");
	});

	await check("find heads marks the previous-token head planted in a checkpoint (layer 0 head 0) and ranks it first", async (p) => {
		await page.goto(`${base}/?model=gpt2-prev&text=${encodeURIComponent("a cat sat")}`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "gpt2-prev");
		await page.click("#find-heads");
		await settled(page, () => window.attnd.found?.model === "gpt2-prev");
		const cell = await page.$eval('#grid button.cell[data-layer="0"][data-head="0"]', (b) => ({ prev: Number(b.dataset.prev), marked: b.classList.contains("marked"), badges: b.querySelector(".badges")?.textContent ?? "" }));
		if (!(cell.prev > 0.9) || !cell.marked || !/P 0\.9\d|P 1\.00/.test(cell.badges)) p.push(`layer 0 head 0: ${JSON.stringify(cell)}`);
		const others = await page.$$eval("#grid button.cell", (b) => b.filter((x) => x.querySelector(".badge.prev")).map((x) => `${x.dataset.layer}/${x.dataset.head}`));
		if (!others.includes("0/0")) p.push(`previous-token badges on ${JSON.stringify(others)}`);
		const first = await page.$eval("#find-list .found.prev li", (li) => li.textContent);
		if (!first.startsWith("layer 0 head 0:")) p.push(`the best previous-token head is "${first}"`);
	});

	// the built-in trained model: what docs/mini-model.md reports, found live
	await check("find heads on mini finds its learned heads: previous-token >= 0.8 (layer 0), induction >= 0.5 (layer 1)", async (p) => {
		await page.goto(`${base}/?model=mini`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		await page.click("#find-heads");
		await settled(page, () => window.attnd.found?.model === "mini");
		const cells = await page.$$eval("#grid button.cell", (b) => b.map((x) => ({ layer: Number(x.dataset.layer), prev: Number(x.dataset.prev), induction: Number(x.dataset.induction) })));
		const best = (k) => cells.reduce((a, c) => (c[k] > a[k] ? c : a));
		const prev = best("prev"), induction = best("induction");
		if (!(prev.prev >= 0.8 && prev.layer === 0)) p.push(`best previous-token head ${JSON.stringify(prev)}`);
		if (!(induction.induction >= 0.5 && induction.layer === 1)) p.push(`best induction head ${JSON.stringify(induction)}`);
		const label = await page.$eval("#model", (m) => m.selectedOptions[0].textContent);
		if (/random weights/.test(label)) p.push(`mini is labelled "${label}"`);
		await page.screenshot({ path: SCREENSHOT_MINI, fullPage: true });
	});
}

// The states a learner moves through: results that belong to one model,
// fields left empty or out of range, a byte-level tokenizer on Korean.
async function checkStates(page, base) {
	await check("find heads' results and note go with the model they scored: switching models clears both", async (p) => {
		await page.goto(`${base}/?model=mini`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		const intro = await page.textContent("#find-note");
		await page.click("#find-heads");
		await settled(page, () => window.attnd.found?.model === "mini");
		await page.selectOption("#model", "tiny");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.model === "tiny");
		if (await page.evaluate(() => window.attnd.found !== null)) p.push("mini's scores kept on tiny");
		const badges = await page.$$eval("#grid button.cell", (b) => b.filter((x) => x.dataset.prev !== undefined).length);
		if (badges > 0) p.push(`${badges} cells of tiny carry scores`);
		const note = await page.textContent("#find-note");
		if (note !== intro) p.push(`the note still says "${note}"`);
	});

	await check("find heads scores only the model drawn: a model whose request failed is not scored on another's grid", async (p) => {
		await page.goto(`${base}/?model=mini`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		await page.selectOption("#model", "gpt2-tiny"); // the default sentence is past its context: 422
		await settled(page, () => window.attnd.state === "error");
		await page.click("#find-heads");
		await page.waitForTimeout(300);
		if (await page.evaluate(() => window.attnd.found !== null)) p.push("scores shown for a model not drawn");
		const note = await page.textContent("#find-note");
		if (!/draw this one first/.test(note)) p.push(`note: "${note}"`);
	});

	await check("an empty window size is an error at the field, not a request without a mask", async (p) => {
		await page.goto(`${base}/?model=tiny`);
		await settled(page, () => window.attnd?.state === "ok");
		await page.selectOption("#mask", "window");
		await page.fill("#window", "");
		await settled(page, () => window.attnd.state === "error");
		const e = await page.evaluate(() => window.attnd.lastError);
		if (e?.pointer !== "/mask/window") p.push(`error ${JSON.stringify(e)}`);
		if ((await page.getAttribute("#window", "aria-invalid")) !== "true") p.push("the field is not marked invalid");
	});

	await check("a ragged batch of embeddings: the facts give the drawn item's tokens and each item's shape", async (p) => {
		await page.goto(`${base}/?model=tiny`);
		await settled(page, () => window.attnd?.state === "ok");
		await page.check('input[name="input"][value="embeddings"]');
		const e = (k) => `[${Array.from({ length: 8 }, (_, j) => (j === k ? 1 : 0)).join(",")}]`;
		await page.fill("#embeddings", `[[${e(0)}],[${e(0)},${e(1)},${e(2)}]]`);
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.embeddings?.length === 2);
		const facts = await page.$$eval("#facts dt, #facts dd", (n) => n.map((x) => x.textContent));
		const at = (k) => facts[facts.indexOf(k) + 1];
		if (at("Tokens") !== "1") p.push(`Tokens: ${at("Tokens")} (item 0, drawn, has 1)`);
		if (at("Output") !== "2 items: [1, 8], [3, 8]") p.push(`Output: ${at("Output")}`);
		if (at("Weights") !== "2 items: [2, 1, 1], [2, 3, 3]") p.push(`Weights: ${at("Weights")}`);
	});

	await check("every panel numbers heads from 0; a layer past the last is moved to the last", async (p) => {
		await page.goto(`${base}/?model=mini`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		const titles = await page.$$eval("#heads figcaption strong", (s) => s.map((x) => x.textContent));
		if (titles[0] !== "Head 0") p.push(`small multiples titled ${JSON.stringify(titles.slice(0, 2))}`);
		await page.fill("#layer", "7");
		await page.dispatchEvent("#layer", "input");
		await page.waitForTimeout(200);
		const layer = await page.inputValue("#layer");
		const drawn = await page.evaluate(() => window.attnd.layerIds[window.attnd.layer]);
		if (layer !== "1" || drawn !== 1) p.push(`field ${layer}, layer drawn ${drawn} (mini has layers 0 and 1)`);
	});

	await check("a weight that underflowed to 0 is not drawn masked; the cells a causal mask hides are", async (p) => {
		const words = Array.from({ length: 230 }, (_, i) => `w${i % 50}`).join(" ");
		await page.goto(`${base}/?model=base&text=${encodeURIComponent(words)}`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "base");
		await page.selectOption("#positional", "alibi");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.positional === "alibi");
		const hatched = () => page.$$eval('#focus rect[fill="url(#attnd-masked)"]', (r) => r.length);
		const zeros = await page.evaluate(() => window.attnd.heads[0].flat().filter((v) => v === 0).length);
		if (zeros === 0) p.push("no weight underflowed to 0: the check shows nothing");
		const none = await hatched();
		if (none !== 0) p.push(`mask none: ${none} cells drawn masked (${zeros} zeros in head 0)`);
		await page.selectOption("#mask", "causal");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.mask === "causal");
		const causal = await hatched();
		if (causal < (230 * 229) / 2) p.push(`causal: only ${causal} cells drawn masked`);
	});

	await check("the grid, the token chips and the head view words are one tab stop each; arrows move within them", async (p) => {
		await page.goto(`${base}/?model=mini`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		const stops = (sel) => page.$$eval(sel, (xs) => xs.filter((x) => x.getAttribute("tabindex") === "0").length);
		for (const sel of ["#grid button.cell", "#tokens li", "#headview text.q"]) {
			const n = await stops(sel);
			if (n !== 1) p.push(`${sel}: ${n} tab stops`);
		}
		await page.focus('#tokens li[tabindex="0"]');
		await page.keyboard.press("ArrowRight");
		const tok = await page.evaluate(() => document.activeElement?.dataset.tok);
		if (tok !== "1") p.push(`ArrowRight on the first token focused token ${tok}`);
		if ((await stops("#tokens li")) !== 1) p.push("the tab stop did not move with the focus");
	});

	await check("a byte-level tokenizer's pieces of one character are labelled by that character (mini on Korean)", async (p) => {
		await page.goto(`${base}/?model=mini`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		await page.click('button[data-example="ko"]');
		await settled(page, (t) => window.attnd.state === "ok" && window.attnd.lastRequest.text === t, SEED_WORDS.join(" "));
		const labels = await page.evaluate(() => window.attnd.queryTokens);
		const bad = labels.filter((t) => t.includes("\uFFFD"));
		if (bad.length > 0) p.push(`${bad.length} of ${labels.length} labels are U+FFFD: ${JSON.stringify(labels.slice(0, 6))}`);
		if (!labels.includes("나")) p.push(`no label "나" among ${JSON.stringify(labels.slice(0, 6))}`);
	});
}

// A checkpoint served without a tokenizer (the test folder gpt2_f16_noprefix
// as gpt2-ids: 2 layers, 4 heads, 16 positions, vocab_size 100): the text box
// takes token ids, checked in the page, and sends them as "tokens".
async function checkTokenIds(page, base) {
	const sent = []; // the bodies the page POSTs to /v1/attention
	page.on("request", (r) => {
		if (r.method() === "POST" && r.url() === `${base}/v1/attention`) sent.push(r.postDataJSON());
	});
	// Types text and waits for the page's answer to it: a new drawing, or a
	// new error (lastError is a new object each time: the handle tells them apart).
	const type = async (text) => {
		const before = await page.evaluateHandle(() => ({ renders: window.attnd.renders, error: window.attnd.lastError }));
		await page.fill("#text", text);
		await settled(page, (b) => (window.attnd.state === "ok" && window.attnd.renders > b.renders) || (window.attnd.state === "error" && window.attnd.lastError !== b.error), before);
		await before.dispose();
	};
	const refusal = (text, pointer, says) => async (p) => {
		sent.length = 0;
		await type(text);
		const e = await page.evaluate(() => window.attnd.lastError);
		if (e?.pointer !== pointer || !e.message.includes(says)) p.push(`"${text}": error ${JSON.stringify(e)}, expected "${says}" at ${pointer}`);
		const box = await page.textContent("#error");
		if (e && (!box.includes(e.message) || !box.includes(pointer))) p.push(`"${text}": the error box says "${box}"`);
		if ((await page.getAttribute("#text", "aria-invalid")) !== "true") p.push(`"${text}": the field is not marked invalid`);
		if (sent.length !== 0) p.push(`"${text}": sent ${JSON.stringify(sent)}`);
	};

	await check("opened on a checkpoint without a tokenizer and no ?text=, the page draws example ids", async (p) => {
		sent.length = 0;
		await page.goto(`${base}/?model=gpt2-ids`);
		await settled(page, () => window.attnd?.state === "ok" || window.attnd?.state === "error");
		const e = await page.evaluate(() => window.attnd.lastError);
		if (e) p.push(`error ${JSON.stringify(e)}`);
		if (!same(sent.at(-1)?.tokens, [5, 9, 12, 3, 5, 9, 12, 3])) p.push(`sent ${JSON.stringify(sent.at(-1))}`);
	});

	await check('a checkpoint without a tokenizer takes token ids: sent as "tokens", drawn with the ids as labels', async (p) => {
		sent.length = 0;
		await page.goto(`${base}/?model=gpt2-ids&text=${encodeURIComponent("5, 17 42,3")}`);
		await settled(page, () => window.attnd?.state === "ok" || window.attnd?.state === "error");
		const req = sent.at(-1);
		if (!same(req?.tokens, [5, 17, 42, 3]) || req?.text !== undefined) p.push(`sent ${JSON.stringify(req)}`);
		const e = await page.evaluate(() => window.attnd.lastError);
		if (e) p.push(`error ${JSON.stringify(e)}`);
		const labels = await page.evaluate(() => window.attnd.queryTokens);
		if (!same(labels, ["5", "17", "42", "3"])) p.push(`labels ${JSON.stringify(labels)}`);
		const maps = (await drawnHeatmaps(page)).filter((m) => m.head !== "mean");
		if (maps.length !== 4 || !maps.every((m) => same(m.qLabels, labels) && same(m.kLabels, labels))) p.push(`${maps.length} heatmaps, axes ${JSON.stringify(maps[0]?.qLabels)}`);
		const direct = await postAttention(base, { model: "gpt2-ids", tokens: [5, 17, 42, 3], layers: "all", weights: "per_head" });
		maps.forEach((m, h) => {
			if (m.weights.flat().some((v, k) => Math.abs(v - direct.body.attentions[0][h].flat()[k]) > 1e-6)) p.push(`head ${h} is not the API's layer 0 head ${h}`);
		});
		const note = await page.textContent("#text-note");
		if (!/no tokenizer: type token ids/.test(note)) p.push(`note: "${note}"`);
		const chips = await page.textContent("#tokens-note");
		if (!/token ids sent/.test(chips)) p.push(`the tokens are said to be "${chips}"`);
	});

	await check("a token id that is not a whole number of 0 or more is refused at the field, by position and value; nothing is sent", async (p) => {
		await refusal("5 x 7", "/tokens/1", 'token 1 (counting from 0) is "x"')(p);
		await refusal("5,-3", "/tokens/1", 'token 1 (counting from 0) is "-3"')(p);
		await refusal("2.5 1", "/tokens/0", 'token 0 (counting from 0) is "2.5"')(p);
		await refusal(" , ", "/tokens", "type token ids")(p);
	});

	await check("token ids stop below the model's vocabulary size (100): 99 is sent, 100 refused at the field", async (p) => {
		sent.length = 0;
		await type("99 0");
		if (!same(sent.at(-1)?.tokens, [99, 0])) p.push(`sent ${JSON.stringify(sent)}`);
		await type("[5, 17, 42]"); // the API's list form, pasted whole
		if (!same(sent.at(-1)?.tokens, [5, 17, 42])) p.push(`"[5, 17, 42]" sent ${JSON.stringify(sent.at(-1))}`);
		await refusal("5 17 100", "/tokens/2", 'token 2 (counting from 0) is "100": a token id of this model is a whole number from 0 to 99')(p);
	});

	await check("an API error on token ids is shown as the API worded it (17 ids past a context of 16)", async (p) => {
		await type(Array.from({ length: 17 }, (_, i) => i).join(" "));
		const e = await page.evaluate(() => window.attnd.lastError);
		if (e?.status !== 422 || e.code !== "position_out_of_range" || e.pointer !== "/tokens") p.push(`error ${JSON.stringify(e)}`);
		const box = await page.textContent("#error");
		if (!box.includes("422 position_out_of_range") || !box.includes(e?.message)) p.push(`the error box says "${box}"`);
		if ((await page.getAttribute("#text", "aria-invalid")) !== "true") p.push("the field is not marked invalid");
	});

	await check("switching to a model with a tokenizer, or a seeded one, brings its sentence back; the ids come back with the checkpoint", async (p) => {
		await page.goto(`${base}/?model=gpt2-tiny&text=${encodeURIComponent("a cat sat")}`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "gpt2-tiny");
		await page.selectOption("#model", "gpt2-ids");
		await settled(page, () => window.attnd.state === "error" || (window.attnd.state === "ok" && window.attnd.lastRequest.model === "gpt2-ids"));
		const first = await page.inputValue("#text");
		if (first !== "5 9 12 3 5 9 12 3") p.push(`the ids box opened on "${first}", not the example ids`);
		await type("5 17 42 3");
		const back = async (model) => {
			await page.selectOption("#model", model);
			await settled(page, (m) => window.attnd.state !== "loading" && window.attnd.lastRequest?.model === m, model);
			const req = await page.evaluate(() => window.attnd.lastRequest);
			return { req, text: await page.inputValue("#text"), label: await page.textContent('label[for="text"]'), state: await page.evaluate(() => window.attnd.state) };
		};
		for (const model of ["gpt2-tiny", "tiny"]) {
			const got = await back(model);
			if (got.state !== "ok" || got.req.text !== "a cat sat" || got.req.tokens !== undefined) p.push(`${model}: ${got.state}, sent ${JSON.stringify(got.req)}`);
			if (got.text !== "a cat sat" || !got.label.startsWith("Sentence")) p.push(`${model}: the box "${got.text}", labelled "${got.label}"`);
		}
		const ids = await back("gpt2-ids");
		if (ids.state !== "ok" || !same(ids.req.tokens, [5, 17, 42, 3]) || ids.text !== "5 17 42 3") p.push(`gpt2-ids: ${ids.state}, the box "${ids.text}", sent ${JSON.stringify(ids.req)}`);
		if (!ids.label.startsWith("Token ids")) p.push(`gpt2-ids: the box is labelled "${ids.label}"`);
	});
}

// The model badge names the model drawn; after a failed request (the API's
// error, or no answer at all) it is dimmed and says it is the last drawn
// model's, until an answer is drawn again. While a request is on its way
// (past a short delay, so a quick answer does not flicker) it is dimmed the
// same way, its words unchanged. On a page of its own: the aborted request
// logs an error to the console on purpose.
async function checkStaleBadge(context, base) {
	await check("after a failed request, and while one is on its way, the model badge is dimmed; the next drawing restores it", async (p) => {
		const page = await context.newPage();
		const badge = () => page.$eval("#model-badge", (n) => ({ stale: n.classList.contains("stale"), border: getComputedStyle(n).borderTopStyle, color: getComputedStyle(n).color, text: n.textContent, title: n.title }));
		const current = async (when) => {
			const b = await badge();
			if (b.stale || b.border !== "solid" || b.title !== "" || !b.text.startsWith("tiny: ")) p.push(`${when}: badge ${JSON.stringify(b)}`);
		};
		const dimmed = async (when) => {
			const b = await badge();
			// dimmed by a dashed border and the muted text colour (#5b6575, 5.9:1 on
			// white: still readable, WCAG AA), not by opacity
			if (!b.stale || b.border !== "dashed" || b.color !== "rgb(91, 101, 117)" || !/^Last drawn: tiny: /.test(b.text) || !/last/i.test(b.title)) p.push(`${when}: badge ${JSON.stringify(b)}`);
		};
		const waiting = async (when) => {
			const b = await badge();
			if (b.stale || b.border !== "dashed" || b.color !== "rgb(91, 101, 117)" || !b.text.startsWith("tiny: ")) p.push(`${when}: badge ${JSON.stringify(b)}`);
		};
		try {
			await page.goto(`${base}/?model=tiny`);
			await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "tiny");
			await current("tiny drawn");
			await page.selectOption("#model", "gpt2-tiny"); // the default sentence is past its context: 422
			await settled(page, () => window.attnd.state === "error" && window.attnd.lastError?.status === 422);
			await dimmed("after gpt2-tiny's 422");
			await page.selectOption("#model", "tiny");
			await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.model === "tiny");
			await current("tiny drawn again");
			await page.route("**/v1/attention", (r) => r.abort());
			await page.fill("#text", "a b c");
			await settled(page, () => window.attnd.state === "error");
			if (!(await page.textContent("#error")).includes("No answer from attnd")) p.push(`the error box says "${await page.textContent("#error")}"`);
			await dimmed("with no answer");
			await page.unroute("**/v1/attention");
			await page.fill("#text", "a b c d");
			await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.text === "a b c d");
			await current("after the next drawing");
			// an answer held back until the badge has been looked at
			let release;
			const held = new Promise((resolve) => (release = resolve));
			await page.route("**/v1/attention", async (r) => {
				await held;
				await r.continue();
			});
			await page.fill("#text", "one two three");
			await settled(page, () => window.attnd.state === "loading");
			await page.waitForTimeout(400);
			await waiting("on its way");
			release();
			await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.text === "one two three");
			await current("its answer drawn");
			await page.unroute("**/v1/attention");
		} finally {
			await page.close();
		}
	});
}

// A daemon started with --api-key viewer-key (and `args`), a page opened on
// path that first meets the 401, then is given the key: then(page, p) checks
// what it does next.
async function afterApiKey(context, p, args, path, then) {
	const d = await startDaemon(["--api-key", "viewer-key", ...args]);
	const page = await context.newPage();
	try {
		await page.goto(`${d.base}${path}`);
		await settled(page, () => window.attnd?.state === "error");
		const e = await page.evaluate(() => window.attnd.lastError);
		if (e?.status !== 401) p.push(`first error ${JSON.stringify(e)}`);
		await page.fill("#apikey", "viewer-key");
		await page.dispatchEvent("#apikey", "change");
		await then(page);
	} catch (e) {
		p.push(String(e));
	} finally {
		await page.close();
		await stopDaemon(d);
	}
}

// With --api-key the page first asks for the key (401), then opens as it
// would have: on mini, not on the placeholder option of the HTML.
async function checkApiKey(context) {
	await check("with --api-key: the page asks for the key, then opens on mini", (p) =>
		afterApiKey(context, p, [], "/", (page) => settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.model === "mini")));
}

// Under --api-key no model is known until the key is given: ?text= waits
// for it, and then fills the box of the model the page opens on (ids here).
async function checkApiKeyIds(context) {
	await check("with --api-key, ?text= fills the ids box of a checkpoint without a tokenizer once the key is given", (p) =>
		afterApiKey(context, p, ["--model", "gpt2-ids=tests/data/checkpoints/gpt2_f16_noprefix", "--model", "gpt2-tiny=tests/data/checkpoints/gpt2_f32"], `/?model=gpt2-ids&text=${encodeURIComponent("5 17 42 3")}`, async (page) => {
			await settled(page, () => window.attnd.state !== "loading" && window.attnd.lastRequest?.model === "gpt2-ids");
			const req = await page.evaluate(() => window.attnd.lastRequest);
			if (!same(req.tokens, [5, 17, 42, 3])) p.push(`sent ${JSON.stringify(req)}`);
			await page.selectOption("#model", "gpt2-tiny");
			await settled(page, () => window.attnd.state !== "loading" && window.attnd.lastRequest?.model === "gpt2-tiny");
			const text = await page.evaluate(() => window.attnd.lastRequest.text);
			if (text === "5 17 42 3") p.push("the ids were sent to gpt2-tiny as a sentence");
		}));
}

async function screenshots(context, base, problemsOnPage) {
	await check("screenshots (desktop and phone) with no horizontal overflow on a phone", async (p) => {
		mkdirSync(dirname(SCREENSHOT), { recursive: true });
		const page = await context.newPage();
		page.on("pageerror", (e) => problemsOnPage.push(`page error: ${e.message}`));
		await page.goto(`${base}/?model=gpt2-tiny&text=${encodeURIComponent("a cat sat on")}`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.renders >= 1);
		await page.click("#find-heads");
		await settled(page, () => window.attnd.found !== null);
		await page.click('#grid button.cell[data-layer="0"][data-head="1"]');
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

// A checkpoint whose later layers slide a window (the test folder
// qwen2_window_layers as qwen2-window: 3 layers, window 3 from layer 1 on,
// no tokenizer): the cells the page takes for masked are, layer by layer,
// those the daemon's masked scores give -inf, and the large head is hatched
// where they are.
async function checkSlidingWindow(page, base) {
	await check("a sliding-window checkpoint: the page's mask is the daemon's, layer by layer, and drawn so", async (p) => {
		const ids = [5, 9, 12, 3, 7, 30, 2, 11];
		const L = ids.length;
		await page.goto(`${base}/?model=qwen2-window&text=${encodeURIComponent(ids.join(" "))}`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "qwen2-window");
		const direct = await postAttention(base, { model: "qwen2-window", tokens: ids, layers: "all", heads: [0], scores: "masked" });
		const layerIds = await page.evaluate(() => window.attnd.layerIds);
		if (!same(layerIds, direct.body.layers)) p.push(`layers ${JSON.stringify(layerIds)}, the API's ${JSON.stringify(direct.body.layers)}`);
		const page_ = await page.evaluate((n) => window.attnd.layerIds.map((_, l) => Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => window.attnd.maskedAt(l, i, j)))), L);
		const hiddenCount = [];
		direct.body.scores.forEach((heads, l) => {
			let n = 0;
			heads[0].forEach((row, i) => row.forEach((v, j) => {
				const masked = v === "-Infinity";
				n += masked ? 1 : 0;
				if (page_[l][i][j] !== masked) p.push(`layer ${layerIds[l]} [${i}, ${j}]: the page says ${page_[l][i][j]}, the daemon's score is ${v}`);
			}));
			hiddenCount.push(n);
		});
		// causal: 28 cells of 8 x 8; the window of 3 hides 15 more
		if (!same(hiddenCount, [28, 43, 43])) p.push(`masked cells per layer ${JSON.stringify(hiddenCount)}, expected [28, 43, 43]`);
		// each figure hatched by its own layer's mask: large, compared, small multiples
		const hatched = (sel) => page.$$eval(sel, (figs) => figs.map((f) => f.querySelectorAll('rect[fill="url(#attnd-masked)"]').length));
		for (const l of [0, 2]) {
			await page.selectOption("#pick-layer", String(l));
			await settled(page, (want) => window.attnd.selected.layer === want, l);
			const n = await hatched("#focus figure");
			if (!same(n, [hiddenCount[l]])) p.push(`layer ${layerIds[l]} drawn large: ${n} cells hatched, ${hiddenCount[l]} masked`);
		}
		await page.check("#compare");
		await page.selectOption("#cmp-layer", "0");
		const pair = await hatched("#focus figure");
		if (!same(pair, [hiddenCount[2], hiddenCount[0]])) p.push(`layers 2 and 0 side by side: ${JSON.stringify(pair)} cells hatched`);
		await page.uncheck("#compare");
		await page.fill("#layer", "2");
		await settled(page, () => window.attnd.layer === 2);
		const heads = await hatched("#heads figure");
		if (heads.length !== 5 || heads.some((n) => n !== hiddenCount[2])) p.push(`layer 2's small multiples: ${JSON.stringify(heads)} cells hatched`);
	});
}

async function main() {
	let d = null;
	let browser = null;
	try {
		const tmp = mkdtempSync(join(tmpdir(), "attnd-viewer-ckpt-"));
		cleanups.push(() => rmSync(tmp, { recursive: true, force: true }));
		plantPreviousTokenHead(join(tmp, "prev"));
		// gpt2-ids: a checkpoint folder with no tokenizer.json (checkTokenIds);
		// qwen2-window: one whose later layers slide a window (checkSlidingWindow)
		d = await startDaemon(["--model", "gpt2-tiny=tests/data/checkpoints/gpt2_f32", "--model", `gpt2-prev=${join(tmp, "prev")}`, "--model", "gpt2-ids=tests/data/checkpoints/gpt2_f16_noprefix", "--model", "qwen2-window=tests/data/checkpoints/qwen2_window_layers"]);
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
		await checkOpening(page, d.base);
		await checkDefault(page, d.base, requests);
		await checkSingleLayer(page, d.base);
		await checkCheckpoint(page, d.base);
		await checkFindHeads(page, d.base);
		await checkStates(page, d.base);
		await checkTokenIds(page, d.base);
		await checkSlidingWindow(page, d.base);
		await page.close();
		await screenshots(browser.context, d.base, problemsOnPage);
		await checkStaleBadge(browser.context, d.base);
		await checkCors(browser.context, d.base);
		await checkApiKey(browser.context);
		await checkApiKeyIds(browser.context);
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
