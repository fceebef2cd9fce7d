// viewer_checkpoint.mjs: the viewer's checks on whole checkpoints (viewer.test.mjs
// runs them): the layer box and a checkpoint's own mask and positions, Find heads,
// token ids for a checkpoint without a tokenizer, and a sliding window's masked
// cells; plantPreviousTokenHead writes the checkpoint whose head Find heads must find.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

import { check } from "./report.mjs";
import { ROOT, SCREENSHOT_MINI, drawnHeatmaps, postAttention, same, settled } from "./viewer_page.mjs";

// Copies the test checkpoint gpt2_f32 (3 layers, 4 heads of 8, E 32, 16
// positions) into dir, its layer 0 head 0 rewired to attend to the previous
// token: the position embedding p is A (cos tp, sin tp, -cos tp, -sin tp, 0...)
// (token embeddings shrunk to noise beside it), ln_1 the identity, so after
// ln_1 the position is a point on a circle; head 0's query is that point
// rotated back by one step (t) and its key the point itself, scaled up, so
// q_i . k_j peaks at j = i - 1. The other heads and layers stay random.
export function plantPreviousTokenHead(dir) {
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

// A whole checkpoint (the test folder gpt2_f32: 3 layers, 4 heads, causal): the layer
// box appears, the mask and positions are the model's own, and the heatmaps are the
// asked layer's attention as the API answers it.
export async function checkCheckpoint(page, base) {
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
		// from the keyboard: the toggle keeps the focus through the redraw, so Space toggles it back
		const focused = () => page.evaluate(() => `${document.activeElement.className} ${document.activeElement.dataset.head} ${document.activeElement.getAttribute("aria-pressed")}`);
		await page.focus('#headview button.toggle[data-head="1"]');
		await page.keyboard.press("Space");
		if ((await focused()) !== "toggle 1 false") p.push(`after Space on head 1's toggle the focus is on: ${await focused()}`);
		await page.keyboard.press("Space");
		if ((await focused()) !== "toggle 1 true") p.push(`after a second Space: ${await focused()}`);
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
export async function checkFindHeads(page, base) {
	await check("find-heads scoring: a previous-token, an induction and a sink pattern each score 1 and rank first", async (p) => {
		const got = await page.evaluate(async () => {
			const f = await import("/web/findheads.js");
			const n = 5;
			const L = 2 * n;
			const pattern = (at) => Array.from({ length: L }, (_, i) => Array.from({ length: L }, (_, j) => (j === at(i) ? 1 : 0)));
			const prev = pattern((i) => Math.max(0, i - 1));
			const induction = pattern((i) => (i >= n ? i - n + 1 : i));
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
		// train/heads.py's definitions: queries 1.. for previous-token and sink,
		// all n queries of the second copy for induction
		const w = direct.body.attentions[1][2];
		const prev = w.slice(1).reduce((s, row, i) => s + row[i], 0) / 15;
		const induction = w.slice(8).reduce((s, row, i) => s + row[i + 1], 0) / 8;
		const sink = w.slice(1).reduce((s, row) => s + row[0], 0) / 15;
		const mine = found.scores[1][2];
		for (const [k, v] of Object.entries({ prev, induction, sink }))
			if (Math.abs(v - mine[k]) > 1e-6) p.push(`layer 1 head 2 ${k} ${mine[k]}, recomputed ${v}`);
		const lists = await page.$$eval("#find-list ol li", (l) => l.length);
		if (lists !== 9) p.push(`${lists} ranked heads, expected 3 per behaviour`);
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
		const sent = []; // Find heads' requests: the drawn one's settings, not its positions
		const record = (r) => {
			if (r.method() === "POST" && r.url() === `${base}/v1/attention`) sent.push(r.postDataJSON());
		};
		page.on("request", record);
		await page.click("#find-heads");
		await settled(page, () => window.attnd.found?.model === "mini");
		page.off("request", record);
		if (sent.length === 0 || sent.some((b) => b.positions !== undefined || b.model !== "mini")) p.push(`Find heads sent ${JSON.stringify(sent.map(({ tokens, ...rest }) => rest))}`);
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

// A checkpoint served without a tokenizer (the test folder gpt2_f16_noprefix
// as gpt2-ids: 2 layers, 4 heads, 16 positions, vocab_size 100): the text box
// takes token ids, checked in the page, and sends them as "tokens".
export async function checkTokenIds(page, base) {
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

// A checkpoint whose later layers slide a window (the test folder
// qwen2_window_layers as qwen2-window: 3 layers, window 3 from layer 1 on,
// no tokenizer): the cells the page takes for masked are, layer by layer,
// those the daemon's masked scores give -inf, and the large head is hatched
// where they are.
export async function checkSlidingWindow(page, base) {
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
