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
//
// viewer_page.mjs holds the shared helpers, viewer_checkpoint.mjs the checks
// on whole checkpoints, viewer_address.mjs those on the view choices kept in
// the address, viewer_projections.mjs those on the Q, K, V panel,
// viewer_checkpoint_projections.mjs that panel on a whole checkpoint.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

import { startDaemon, stopDaemon } from "./daemon.mjs";
import { check, finish } from "./report.mjs";
import { checkViewAddress } from "./viewer_address.mjs";
import { checkProjections } from "./viewer_projections.mjs";
import { checkCheckpointProjections } from "./viewer_checkpoint_projections.mjs";
import { checkLongInput } from "./viewer_long.mjs";
import { checkLongHeadView, checkLongHeadViewShift, checkLongTables } from "./viewer_long_views.mjs";
import { checkCheckpoint, checkFindHeads, checkSlidingWindow, checkTokenIds, plantPreviousTokenHead } from "./viewer_checkpoint.mjs";
import {
	ROOT,
	SCREENSHOT,
	SCREENSHOT_PHONE,
	SEED_WORDS,
	WAIT_MS,
	cleanups,
	drawnHeatmaps,
	launchBrowser,
	liveRegionsSaying,
	madeUpWords,
	pointAt,
	postAttention,
	same,
	seedsLines,
	settled,
	startSecondOrigin,
	twoFrames,
} from "./viewer_page.mjs";

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
		await twoFrames(page);
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

	// a click (or a tap) focuses the heatmap: the read-out and the keyboard
	// cursor stay on the cell clicked, not on the first cell, where focusing
	// alone puts them
	await check("clicking a heatmap's cell reads out that cell, and the arrow keys go on from it", async (p) => {
		await page.goto(`${base}/?model=tiny&text=${encodeURIComponent(SEED_WORDS.join(" "))}`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "tiny");
		const w = await page.evaluate(() => window.attnd.heads[0]);
		const cell = await page.$("#focus rect[data-q='2'][data-k='3']");
		await cell.scrollIntoViewIfNeeded();
		await cell.click();
		const text = await page.$eval("#readout", (n) => n.textContent);
		if (!text.includes(`${SEED_WORDS[2]} → ${SEED_WORDS[3]}`) || !text.includes(w[2][3].toFixed(4))) p.push(`after a click on ${SEED_WORDS[2]} → ${SEED_WORDS[3]} the read-out says: ${text}`);
		await page.keyboard.press("ArrowLeft");
		const next = await page.$eval("#readout", (n) => n.textContent);
		if (!next.includes(`${SEED_WORDS[2]} → ${SEED_WORDS[2]}`)) p.push(`ArrowLeft after the click: ${next}`);
		// the cell is said once: the figure's own line under it is not a live region too
		const live = await liveRegionsSaying(page, `${SEED_WORDS[2]} → ${SEED_WORDS[2]}`);
		if (live !== 1) p.push(`${live} live regions say the cell: a screen reader hears it ${live} times`);
	});

	// the head view's queries are read out as a heatmap's cells are: the
	// page's aria-live line (#readout) and the view's own
	await check("the head view reads out the query focused (each shown head's strongest key), as a heatmap's cell is", async (p) => {
		const heads = await page.evaluate(() => window.attnd.heads);
		await page.focus('#headview text.q[tabindex="0"]');
		await page.keyboard.press("ArrowDown");
		const best = heads[0][1].indexOf(Math.max(...heads[0][1]));
		const want = `head 0: ${SEED_WORDS[1]} → ${SEED_WORDS[best]}에 주목`;
		const text = await page.$eval("#readout", (n) => n.textContent);
		if (!text.includes(want)) p.push(`after ArrowDown to ${SEED_WORDS[1]} the read-out says: ${text}`);
		const own = await page.$eval("#headview .map-readout", (n) => n.textContent).catch(() => "(no line of its own in the head view)");
		if (!own.includes(want)) p.push(`the head view's own line: ${own}`);
		const live = await liveRegionsSaying(page, want);
		if (live !== 1) p.push(`${live} live regions say "${want}": a screen reader hears it ${live} times`);
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

	// openapi.yaml: a window W shows keys j with i - W < j (and j < i + W without causal)
	await check("the window size is described as the mask draws it: keys less than W positions away, itself included", async (p) => {
		await page.selectOption("#mask", "window");
		await page.fill("#window", "2");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.mask?.window === 2);
		const seen = await page.evaluate(() => window.attnd.heads[0].map((row) => row.flatMap((v, j) => (v > 0 ? [j] : []))));
		seen.forEach((keys, i) => {
			const want = keys.filter((j) => Math.abs(i - j) < 2);
			if (!same(keys, want) || !keys.includes(i)) p.push(`window 2: query ${i} sees ${JSON.stringify(keys)}`);
		});
		const label = await page.textContent('label[for="window"]');
		if (!/less than this many positions away, itself included/.test(label)) p.push(`the window field says: "${label}"`);
		await page.fill("#window", "");
		await settled(page, () => window.attnd.state === "error");
		const error = await page.textContent("#error");
		if (/on each side/.test(error) || !/less than this many positions away/.test(error)) p.push(`an empty window: "${error}"`);
		await page.fill("#window", "2");
		await page.selectOption("#mask", "none");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.mask === "none");
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
		// the page's read-out says a score, or masked, once: not "score -0.574 = score -0.5737"
		await page.focus("#focus svg.map"); // the cursor on [0][0], seen by every query
		const onScore = await page.$eval("#readout", (n) => n.textContent);
		if (onScore.match(/score/g)?.length !== 1) p.push(`read-out on a score: "${onScore}"`);
		await page.keyboard.press("ArrowRight"); // [0][1], masked
		const onMasked = await page.$eval("#readout", (n) => n.textContent);
		if (onMasked.match(/masked/g)?.length !== 1) p.push(`read-out on a masked cell: "${onMasked}"`);
		await page.check('input[name="values"][value="weights"]');
		await page.selectOption("#mask", "none");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.mask === "none");
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

	await check("find heads scores a one-layer model drawn with its q, k, v and head outputs (tiny)", async (p) => {
		await page.goto(`${base}/?model=tiny`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "tiny");
		const req = await page.evaluate(() => window.attnd.lastRequest);
		if (req.head_outputs !== true) p.push("the drawn request does not ask head_outputs (the case this checks)");
		await page.click("#find-heads");
		await settled(page, () => window.attnd.found?.model === "tiny").catch(() => {});
		const note = await page.textContent("#find-note");
		if (await page.evaluate(() => window.attnd.found?.model !== "tiny")) p.push(`tiny not scored; note: "${note}"`);
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

	// the answer's positions are the longest item's; item 0, drawn, is shorter
	await check("a ragged batch with sinusoidal positions: the Positions panel has the drawn item's rows, labelled, not the longest item's", async (p) => {
		await page.selectOption("#positional", "sinusoidal");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.positional === "sinusoidal" && window.attnd.positions !== null);
		const got = await page.evaluate(() => ({
			answered: window.attnd.positions.encoding.length,
			figures: [...document.querySelectorAll("#positions figure")].map((f) => ({ rows: JSON.parse(f.dataset.values).length, labels: f.querySelectorAll("text.qlabel").length })),
		}));
		if (got.answered !== 3) p.push(`the API answered ${got.answered} positions (the longest item has 3)`);
		for (const f of got.figures) if (f.rows !== 1 || f.labels !== 1) p.push(`a Positions figure of ${f.rows} rows and ${f.labels} row labels (item 0 has 1 token)`);
		await page.selectOption("#positional", "none");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.positional === "none");
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

	await check("an emptied Layer field draws nothing while typed in (not layer 0) and, left empty, shows the layer drawn again", async (p) => {
		await page.goto(`${base}/?model=mini`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		await page.fill("#layer", "1");
		await settled(page, () => window.attnd.layerIds[window.attnd.layer] === 1);
		await page.fill("#layer", "");
		await twoFrames(page);
		const typing = await page.evaluate(() => window.attnd.layerIds[window.attnd.layer]);
		if (typing !== 1) p.push(`emptying the field drew layer ${typing}`);
		await page.dispatchEvent("#layer", "change");
		const left = await page.inputValue("#layer");
		const drawn = await page.evaluate(() => window.attnd.layerIds[window.attnd.layer]);
		if (left !== "1" || drawn !== 1) p.push(`left empty: field "${left}", layer drawn ${drawn}`);
	});

	await check("a weight that underflowed to 0 is not drawn masked; the cells a causal mask hides are", async (p) => {
		await page.goto(`${base}/?model=base&text=${encodeURIComponent(madeUpWords(230))}`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "base");
		await page.selectOption("#positional", "alibi");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.positional === "alibi");
		// 230 x 230 cells: a canvas (web/heatcanvas.js), which counts the cells it hatched
		const hatched = () => page.$eval("#focus figure", (f) => f.querySelectorAll('rect[fill="url(#attnd-masked)"]').length + Number(f.querySelector("canvas.cells")?.dataset.masked ?? 0));
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
		// Tab from the last head toggle reaches the head view's query tokens, not
		// its SVG (a tab stop of its own in Chromium for its focus listeners),
		// and the SVG focused (a click on it) is no query: no line dims
		await page.focus("#headview button.toggle:last-of-type");
		await page.keyboard.press("Tab");
		const tabbed = await page.evaluate(() => document.activeElement?.matches("#headview text.q") ?? false);
		if (!tabbed) p.push(`Tab after the head toggles focused ${await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 60))}, not a query token`);
		await page.focus("#headview svg.lines");
		const dim = await page.$$eval("#headview line", (ls) => ({ all: ls.length, dim: ls.filter((l) => l.classList.contains("dim")).length }));
		if (dim.dim > 0) p.push(`the head view's SVG focused dims ${dim.dim} of ${dim.all} lines`);
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

	// U+202E, a right-to-left override, in a piece turns the rest of each line
	// naming it around ("abc → def" read as "def ← abc"); a byte-level
	// tokenizer cuts it in three pieces, labelled by the character itself
	await check("a piece's bidirectional and control characters are shown by code point, not obeyed (tiny's words and mini's byte pieces)", async (p) => {
		for (const model of ["tiny", "mini"]) {
			// typed into the box (an address holding one is the reload check's)
			const text = "\u202Eabc def\u0007 ghi";
			await page.goto(`${base}/?model=${model}`);
			await settled(page, (m) => window.attnd?.state === "ok" && window.attnd.lastRequest.model === m, model);
			await page.fill("#text", text);
			await settled(page, (t) => window.attnd.state === "ok" && window.attnd.lastRequest.text === t, text);
			const got = await page.evaluate(() => ({
				labels: window.attnd.queryTokens,
				shown: [...document.querySelectorAll("#tokens li, #heads ol.toplist li, #focus text.qlabel")].map((n) => n.textContent).join(" "),
			}));
			if (/[\u202E\u0007]/.test(got.shown)) p.push(`${model}: U+202E or U+0007 drawn as is: ${JSON.stringify(got.labels)}`);
			if (!got.labels.some((t) => t.includes("⟨U+202E⟩"))) p.push(`${model}: no label names U+202E: ${JSON.stringify(got.labels)}`);
			if (!got.labels.some((t) => t.includes("⟨U+0007⟩"))) p.push(`${model}: no label names U+0007: ${JSON.stringify(got.labels)}`);
		}
	});

	await check("comparing, the second head's Layer and Head pickers are named apart from the first's", async (p) => {
		await page.goto(`${base}/?model=mini`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		await page.check("#compare");
		for (const name of ["Layer", "Head"]) {
			const n = await page.getByRole("combobox", { name, exact: true }).count();
			if (n !== 1) p.push(`${n} pickers named "${name}"`);
		}
	});

	// two right-to-left words with an arrow between them are one right-to-left
	// run: "q → k" would be drawn "k → q", the arrow pointing at the query
	await check("a line of who attends to whom on right-to-left words (Hebrew) reads query → key, left to right", async (p) => {
		const text = "שלום עולם טוב מאוד";
		await page.goto(`${base}/?model=tiny&text=${encodeURIComponent(text)}`);
		await settled(page, (t) => window.attnd?.state === "ok" && window.attnd.lastRequest.text === t, text);
		const rows = await page.$$eval("#heads figure.head ol.toplist li", (lis) =>
			lis.map((li) => {
				// the left edge of the characters [from, to) of li's text, where drawn
				const leftOf = (from, to) => {
					const walker = document.createTreeWalker(li, NodeFilter.SHOW_TEXT);
					for (let n = walker.nextNode(), at = 0; n; at += n.length, n = walker.nextNode()) {
						if (from < at || to > at + n.length) continue;
						const r = document.createRange();
						r.setStart(n, from - at);
						r.setEnd(n, to - at);
						return r.getBoundingClientRect().left;
					}
					return NaN;
				};
				const text = li.textContent;
				const arrow = text.indexOf(" → ");
				return { text, q: leftOf(0, arrow), arrow: leftOf(arrow + 1, arrow + 2), k: li.querySelector("b").getBoundingClientRect().left };
			}),
		);
		if (rows.length === 0) p.push("no lines drawn");
		for (const r of rows) if (!(r.q < r.arrow && r.arrow < r.k)) p.push(`"${r.text}": query at x ${r.q.toFixed(0)}, arrow ${r.arrow?.toFixed(0)}, key ${r.k.toFixed(0)}`);
	});

	// the same on the read-out (#readout, the one a screen reader hears, and
	// the line under the figure) and the tooltip, written anew at each cell
	await check("the read-out and the tooltip on right-to-left words (Hebrew) read query → key, left to right", async (p) => {
		const text = "שלום עולם טוב מאוד";
		await page.goto(`${base}/?model=tiny&text=${encodeURIComponent(text)}`);
		await settled(page, (t) => window.attnd?.state === "ok" && window.attnd.lastRequest.text === t, text);
		// each " → " in where's text: the left edges of the Hebrew word before
		// it (the query), of the arrow and of the Hebrew word after it (the key)
		const arrows = (where) =>
			page.$eval(where, (n) => {
				const nodes = [];
				const walker = document.createTreeWalker(n, NodeFilter.SHOW_TEXT);
				for (let t = walker.nextNode(), at = 0; t; at += t.length, t = walker.nextNode()) nodes.push({ t, at });
				// the left edge of the characters [from, to) of n's text, across text nodes
				const leftOf = (from, to) => {
					const start = nodes.findLast((x) => x.at <= from);
					const end = nodes.findLast((x) => x.at < to);
					const r = document.createRange();
					r.setStart(start.t, from - start.at);
					r.setEnd(end.t, to - end.at);
					return r.getBoundingClientRect().left;
				};
				const s = n.textContent;
				const found = [];
				for (let a = s.indexOf(" → "); a >= 0; a = s.indexOf(" → ", a + 1)) {
					const q = s.slice(0, a).match(/[\u0590-\u05ff]+$/)?.[0] ?? "";
					const k = s.slice(a + 3).match(/^[\u0590-\u05ff]+/)?.[0] ?? "";
					if (q === "" || k === "") continue;
					found.push({ q: leftOf(a - q.length, a), arrow: leftOf(a + 1, a + 2), k: leftOf(a + 3, a + 3 + k.length) });
				}
				return { text: s, hidden: n.closest("[hidden]") !== null, found };
			});
		const readsOn = (name, got) => {
			if (got.hidden || got.found.length === 0) p.push(`${name}: no query → key to measure in "${got.text}"${got.hidden ? " (hidden)" : ""}`);
			for (const r of got.found) if (!(r.q < r.arrow && r.arrow < r.k)) p.push(`${name} "${got.text}": query at x ${r.q.toFixed(0)}, arrow ${r.arrow.toFixed(0)}, key ${r.k.toFixed(0)}`);
		};
		await page.focus("#focus svg.map");
		await twoFrames(page); // the focus's scroll hides the tooltip: before the arrow key, not after it
		await page.keyboard.press("ArrowRight");
		readsOn("#readout", await arrows("#readout"));
		readsOn("the line under the heatmap", await arrows("#focus .map-readout"));
		readsOn("the tooltip", await arrows("#tip"));
		// the words as they were: a screen reader hears no isolating characters
		const [q, k] = text.split(" ");
		const w = await page.evaluate(() => window.attnd.heads[0][0][1]);
		const under = await page.$eval("#focus .map-readout", (n) => n.textContent);
		if (under !== `${q} → ${k} (${Math.round(w * 100)}%)`) p.push(`the line under the heatmap says "${under}"`);
		// the head view's query: each shown head's line, on #readout too
		await page.focus('#headview text.q[tabindex="0"]');
		readsOn("#readout of the head view", await arrows("#readout"));
		readsOn("the head view's own line", await arrows("#headview .map-readout"));
	});

	await check("a label is shortened between characters, not inside one (flags, jamo of NFD Hangul, combining accents)", async (p) => {
		const words = ["🇰🇷🇯🇵🇺🇸🇫🇷🇩🇪🇮🇹", "안녕하세요".normalize("NFD"), "ae\u0301e\u0301e\u0301e\u0301e\u0301e\u0301", "abcdefghijkl"];
		await page.goto(`${base}/?model=tiny&text=${encodeURIComponent(words.join(" "))}`);
		await settled(page, (t) => window.attnd?.state === "ok" && window.attnd.lastRequest.text === t, words.join(" "));
		const labels = await page.$$eval("#focus text.qlabel", (ts) => ts.map((t) => t.firstChild.textContent));
		// the first three are six, five and seven characters: whole; the last twelve, cut to nine and "…"
		const want = [...words.slice(0, 3), "abcdefghi…"];
		if (!same(labels, want)) p.push(`labels ${JSON.stringify(labels)}, expected ${JSON.stringify(want)}`);
	});

	await check("on a phone a token longer than the line (a pasted URL) wraps: the page is no wider than the phone", async (p) => {
		await page.setViewportSize({ width: 390, height: 844 });
		const url = `https://example.com/${"a".repeat(300)}`;
		await page.goto(`${base}/?model=tiny&text=${encodeURIComponent(`see ${url} now`)}`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "tiny");
		const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
		if (overflow > 0) p.push(`the page is ${overflow} px wider than the phone`);
		await page.setViewportSize({ width: 1280, height: 900 });
	});

	await check("?model= naming no model served says so under the Model field (not silently another model) until one is chosen", async (p) => {
		await page.goto(`${base}/?model=nope`);
		await settled(page, () => window.attnd?.state === "ok");
		const shown = await page.inputValue("#model");
		const note = await page.textContent("#model-note");
		if (!note.includes("nope") || !note.includes(`showing ${shown}`)) p.push(`opened on ${shown}, model note: "${note}"`);
		await page.selectOption("#model", "tiny");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.model === "tiny");
		const after = await page.textContent("#model-note");
		if (after.includes("nope")) p.push(`after choosing tiny: "${after}"`);
	});

	await check("drawing writes its model and sentence into the address (one history entry), and a reload draws them again", async (p) => {
		await page.goto(`${base}/?model=mini`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		const entries = await page.evaluate(() => history.length);
		// a line break and a tab go into the address percent-encoded
		// (%0A, %09), which the daemon serves as data in a query
		const typed = "the cat sat\non the\tmat";
		await page.fill("#text", typed);
		await page.selectOption("#model", "tiny");
		await settled(page, (t) => window.attnd.state === "ok" && window.attnd.lastRequest.model === "tiny" && window.attnd.lastRequest.text === t, typed);
		const params = new URL(page.url()).searchParams;
		if (params.get("model") !== "tiny" || params.get("text") !== typed) p.push(`after drawing tiny on "${typed}" the address is ${page.url()}`);
		const more = (await page.evaluate(() => history.length)) - entries;
		if (more !== 0) p.push(`${more} history entries added by drawing`);
		await page.reload();
		await settled(page, () => window.attnd?.state === "ok");
		const again = await page.evaluate(() => window.attnd.lastRequest);
		if (again.model !== "tiny" || again.text !== typed) p.push(`after a reload: ${again.model} on "${again.text}"`);
		// one word of 1000 Korean syllables: 9000 bytes percent-encoded, past ADDRESS_MAX
		const long = "가".repeat(1000);
		await page.fill("#text", long);
		await settled(page, (t) => window.attnd.state === "ok" && window.attnd.lastRequest.text === t, long);
		const kept = new URL(page.url()).searchParams;
		if (kept.has("text") || kept.get("model") !== "tiny") p.push(`after drawing a long text the address is ${page.url().slice(0, 200)}`);
		// a text that fits alone but not with the mask and positional
		// encoding the address keeps too: the whole address stays within 8192
		const edge = "a".repeat(8192 - `${base}/?model=tiny&text=`.length - 4);
		await page.fill("#text", edge);
		await settled(page, (t) => window.attnd.state === "ok" && window.attnd.lastRequest.text === t, edge);
		if (page.url().length > 8192) p.push(`after drawing a text near the limit the address has ${page.url().length} characters`);
	});

	await check("the address keeps a model's mask and positional encoding, a checkpoint's layer and the inline model's settings, for a reload", async (p) => {
		await page.goto(`${base}/?model=tiny`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "tiny");
		await page.selectOption("#mask", "causal");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.mask === "causal");
		await page.selectOption("#positional", "rope");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.positional === "rope");
		await page.reload();
		await settled(page, () => window.attnd?.state === "ok");
		const req = await page.evaluate(() => window.attnd.lastRequest);
		if (req.model !== "tiny" || req.mask !== "causal" || req.positional !== "rope") p.push(`after a reload: ${JSON.stringify(req)}`);
		await page.goto(`${base}/?model=mini`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		await page.fill("#layer", "1");
		await settled(page, () => window.attnd.layerIds[window.attnd.layer] === 1);
		if (new URL(page.url()).searchParams.get("layer") !== "1") p.push(`layer 1 drawn, the address is ${page.url()}`);
		await page.reload();
		await settled(page, () => window.attnd?.state === "ok");
		const layer = await page.evaluate(() => window.attnd.layerIds[window.attnd.layer]);
		if (layer !== 1) p.push(`after a reload on layer 1: layer ${layer} drawn`);
		// the tutorial's inline model: d_model 8, 2 heads, its seed
		await page.selectOption("#model", "@inline");
		await page.fill("#d_model", "8");
		await page.fill("#num_heads", "2");
		await page.fill("#seed", "7");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.model?.seed === 7 && window.attnd.lastRequest.model.num_heads === 2);
		const kept = new URL(page.url()).searchParams;
		if (kept.get("model") !== "inline" || kept.get("d_model") !== "8" || kept.get("seed") !== "7") p.push(`inline drawn, the address is ${page.url()}`);
		await page.reload();
		await settled(page, () => window.attnd?.state === "ok");
		const m = await page.evaluate(() => window.attnd.lastRequest.model);
		if (m?.d_model !== 8 || m.num_heads !== 2 || m.seed !== 7) p.push(`after a reload of the inline model: ${JSON.stringify(m)}`);
	});

	await check("on a phone the large head keeps its size and scrolls sideways; the page itself does not", async (p) => {
		await page.setViewportSize({ width: 390, height: 844 });
		await page.goto(`${base}/?model=mini`); // 17 tokens: a large head about 640 px wide
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		const got = await page.$eval("#focus svg.map", (s) => {
			const box = s.closest(".map-scroll");
			return { drawn: Math.round(s.getBoundingClientRect().width), width: Number(s.getAttribute("width")), scrolls: box.scrollWidth > box.clientWidth };
		});
		if (got.drawn !== got.width || !got.scrolls) p.push(`the large head is ${got.width} px drawn ${got.drawn} px wide, its box ${got.scrolls ? "scrolls" : "does not scroll"}`);
		const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
		if (overflow > 0) p.push(`the page is ${overflow} px wider than the phone`);
		await page.setViewportSize({ width: 1280, height: 900 });
	});

	await check("on a phone the arrow keys scroll the large head to the cell they move to", async (p) => {
		await page.setViewportSize({ width: 390, height: 844 });
		await page.goto(`${base}/?model=mini`); // 17 tokens: wider than the phone
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		await page.focus("#focus svg.map");
		for (let k = 0; k < 16; k++) await page.keyboard.press("ArrowRight");
		const got = await page.$eval("#focus svg.map", (s) => {
			const cell = s.querySelector("rect.cursor").getBoundingClientRect();
			const box = s.closest(".map-scroll").getBoundingClientRect();
			return { cell: [Math.round(cell.left), Math.round(cell.right)], box: [Math.round(box.left), Math.round(box.right)] };
		});
		if (got.cell[0] < got.box[0] || got.cell[1] > got.box[1]) p.push(`the cursor's cell spans x ${got.cell.join(" to ")}, its scrolling box shows ${got.box.join(" to ")}`);
		await page.setViewportSize({ width: 1280, height: 900 });
	});

	// 61 tokens: 10 px rows in every heatmap, the large one too
	await check("a long sentence's axis labels do not overlap: no label taller than its row, key labels upright when tilted ones would touch", async (p) => {
		const text = "Once upon a time there was a little girl who lived in a village near the forest and whenever she went out the little girl wore a red riding cloak so everyone in the village called her Little Red Riding Hood";
		await page.goto(`${base}/?model=mini&text=${encodeURIComponent(text)}`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.queryTokens.length > 40);
		const maps = await page.$$eval("#focus svg.map, #heads svg.map", (svgs) =>
			svgs.map((s) => {
				const cell = Number(s.querySelector("rect[data-q]").getAttribute("width")) + 1;
				const font = (t) => parseFloat(getComputedStyle(t).fontSize);
				const angle = (t) => Number(/rotate\((-?[\d.]+)\)/.exec(t.getAttribute("transform") ?? "")?.[1] ?? 0);
				const q = [...s.querySelectorAll("text.qlabel")].map((t) => ({ font: font(t) }));
				const k = [...s.querySelectorAll("text.klabel")].map((t) => ({ font: font(t), angle: angle(t), length: t.getComputedTextLength() }));
				return { label: s.getAttribute("aria-label").split(":")[0], cell, q, k };
			}),
		);
		if (maps.length < 2) p.push(`${maps.length} heatmaps drawn`);
		for (const m of maps) {
			const tallRow = m.q.find((l) => l.font > m.cell);
			if (tallRow) p.push(`${m.label}: ${tallRow.font} px query labels in ${m.cell} px rows`);
			// neighbours are cell * |sin(angle)| apart across the text (a level label: its length along it)
			const touching = m.k.find((l) => (l.angle === 0 ? l.length > m.cell : m.cell * Math.abs(Math.sin((l.angle * Math.PI) / 180)) < l.font));
			if (touching) p.push(`${m.label}: ${touching.font} px key labels at ${touching.angle} degrees, ${m.cell} px apart`);
		}
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

// The Positions panel: the encoding and its similarity as the API answers
// them (positions: true), for sinusoidal and RoPE on a one-layer model, and a
// checkpoint's own (mini's learned rows).
async function checkPositions(page, base) {
	const text = SEED_WORDS.join(" ");
	const panelOf = () =>
		page.$eval("#positions-panel", (n) => {
			const fig = (w) => n.querySelector(`figure.pos.${w}`);
			return {
				hidden: n.hidden,
				enc: fig("encoding") ? JSON.parse(fig("encoding").dataset.values) : null,
				sim: fig("similarity") ? JSON.parse(fig("similarity").dataset.values) : null,
				cells: fig("encoding")?.querySelectorAll("rect[data-q]").length ?? 0,
				rows: [...(fig("similarity")?.querySelectorAll("text.qlabel") ?? [])].map((t) => t.firstChild.textContent), // the label, not its title
				notes: [...n.querySelectorAll("p.pos-note")].map((x) => x.textContent),
				legend: n.querySelector("#pos-legend .ticks")?.textContent ?? "",
			};
		});
	await page.goto(`${base}/?model=tiny&text=${encodeURIComponent(text)}`);
	await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "tiny");
	await page.selectOption("#positional", "none");
	await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.positional === "none");

	await check("positional none: no Positions panel, and positions not asked for", async (p) => {
		const panel = await panelOf();
		if (!panel.hidden) p.push("the panel shows");
		if ((await page.evaluate(() => window.attnd.lastRequest.positions)) !== undefined) p.push("the request asks for positions");
	});

	for (const type of ["sinusoidal", "rope"]) {
		await check(`${type}: the Positions panel draws the API's positions (encoding [L, dim], similarity [L, L] labelled by token)`, async (p) => {
			await page.selectOption("#positional", type);
			await settled(page, (t) => window.attnd.state === "ok" && window.attnd.lastRequest.positional === t, type);
			if ((await page.evaluate(() => window.attnd.lastRequest.positions)) !== true) p.push("positions: true not asked for");
			const direct = await postAttention(base, { model: "tiny", text, positional: type, positions: true, weights: "none" });
			const want = direct.body.positions;
			const panel = await panelOf();
			const dim = type === "rope" ? direct.body.shape.head_dim : direct.body.shape.d_model;
			if (panel.hidden) p.push("the panel is hidden");
			if (want?.type !== type) p.push(`the API answered ${JSON.stringify(want)}`);
			if (!same(panel.enc, want?.encoding)) p.push(`encoding drawn ${JSON.stringify(panel.enc)}, the API's ${JSON.stringify(want?.encoding)}`);
			if (!same(panel.sim, want?.similarity)) p.push(`similarity drawn ${JSON.stringify(panel.sim)}, the API's ${JSON.stringify(want?.similarity)}`);
			if (panel.cells !== SEED_WORDS.length * dim) p.push(`${panel.cells} encoding cells, expected ${SEED_WORDS.length} x ${dim}`);
			if (!same(panel.rows, SEED_WORDS)) p.push(`similarity rows labelled ${JSON.stringify(panel.rows)}`);
			if (panel.notes.length !== 2 || !panel.notes.every((n) => /[\uac00-\ud7af]/.test(n) && /[a-z]/.test(n))) p.push(`sentences: ${JSON.stringify(panel.notes)}`);
			if (!panel.legend.startsWith("-1.000.001.00")) p.push(`the encoding's legend is not -1..1: "${panel.legend}"`);
		});
	}

	await check("ALiBi hides the Positions panel and does not ask for positions", async (p) => {
		await page.selectOption("#positional", "alibi");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.positional === "alibi");
		if (!(await panelOf()).hidden) p.push("ALiBi: the panel shows");
		if ((await page.evaluate(() => window.attnd.lastRequest.positions)) !== undefined) p.push("ALiBi: the request asks for positions");
		await page.selectOption("#positional", "rope");
		await settled(page, () => window.attnd.state === "ok" && window.attnd.lastRequest.positional === "rope");
	});

	await check("a checkpoint (mini) asks for its own positions and draws its learned rows, with the learned type's sentences", async (p) => {
		await page.goto(`${base}/?model=mini`);
		await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		const req = await page.evaluate(() => window.attnd.lastRequest);
		if (req.positions !== true) p.push("mini: positions: true not asked for");
		const direct = await postAttention(base, { ...req, weights: "none", output: false });
		const want = direct.body.positions;
		const panel = await panelOf();
		if (panel.hidden) p.push("mini: the panel is hidden");
		if (want?.type !== "learned") p.push(`the API answered ${JSON.stringify(want?.type)}`);
		if (!same(panel.enc, want?.encoding)) p.push("the encoding drawn is not the API's");
		if (!same(panel.sim, want?.similarity)) p.push("the similarity drawn is not the API's");
		if (panel.cells !== (want?.encoding.length ?? -1) * direct.body.shape.d_model) p.push(`${panel.cells} encoding cells, expected L x ${direct.body.shape.d_model}`);
		if (panel.notes.length !== 2 || !panel.notes.every((n) => /[\uac00-\ud7af]/.test(n) && /learned|training/.test(n))) p.push(`sentences: ${JSON.stringify(panel.notes)}`);
		const type = await page.$eval("#pos-type", (n) => n.textContent);
		if (type !== "learned · d_model 128") p.push(`the type line says "${type}"`);
	});

	await check("positions refused past 1024 positions: the attention is asked again without them and drawn, the panel says why", async (p) => {
		const sent = [];
		const refusal = "positions are shown for at most 1024 query positions; this request has 1500";
		const handler = (route) => {
			const body = route.request().postDataJSON();
			// the attention's requests; the q, k and v of the head drawn large are asked apart
			if (body.projections !== true) sent.push(body);
			if (body.positions !== true) return route.continue();
			return route.fulfill({ status: 422, contentType: "application/json", body: JSON.stringify({ error: { code: "invalid_value", message: refusal, pointer: "/positions" } }) });
		};
		await page.route(`${base}/v1/attention`, handler);
		try {
			await page.goto(`${base}/?model=mini`);
			await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "mini");
		} finally {
			await page.unroute(`${base}/v1/attention`, handler);
		}
		if (sent.length !== 2 || sent[0].positions !== true || sent[1].positions !== undefined) p.push(`sent ${JSON.stringify(sent.map((b) => b.positions))}`);
		if ((await page.evaluate(() => window.attnd.lastRequest.positions)) !== undefined) p.push("the drawn request still asks for positions");
		const panel = await page.$eval("#positions-panel", (n) => ({ hidden: n.hidden, text: n.querySelector("#positions").textContent, figures: n.querySelectorAll("figure").length }));
		if (panel.hidden || panel.figures !== 0 || !panel.text.includes(refusal)) p.push(`the panel: ${JSON.stringify(panel)}`);
		if (!(await page.$eval("#request", (n) => n.textContent)).includes('"layers":"all"') || (await page.$eval("#request", (n) => n.textContent)).includes('"positions"')) p.push("the request shown is not the one drawn");
	});

	await check("the colour scales' ends take a similarity of 400 or more positions (no Math.max of 160,000 arguments)", async (p) => {
		const top = await page.evaluate(async () => {
			const { absMax } = await import("/web/util.js");
			try {
				return absMax([new Array(300000).fill(-2), [1, 0.5]]);
			} catch (e) {
				return e.message;
			}
		});
		if (top !== 2) p.push(`absMax answered ${JSON.stringify(top)}`);
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
		await checkPositions(page, d.base);
		await checkProjections(page, d.base);
		await checkCheckpoint(page, d.base);
		await checkCheckpointProjections(page, d.base);
		await checkFindHeads(page, d.base);
		await checkStates(page, d.base);
		await checkViewAddress(page, d.base);
		await checkTokenIds(page, d.base);
		await checkSlidingWindow(page, d.base);
		await checkLongInput(page, d.base);
		await checkLongHeadView(page, d.base);
		await checkLongHeadViewShift(page);
		await checkLongTables(browser.context, d.base);
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
