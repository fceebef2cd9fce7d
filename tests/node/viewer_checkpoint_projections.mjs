// viewer_checkpoint_projections.mjs: the Q, K, V panel on a whole checkpoint
// (web/qkv.js asks, render.js drawProjections draws; viewer.test.mjs runs
// these). The attention request ("layers": "all") asks no projections: the
// page asks afterwards for those of the head drawn large alone ("layers":
// [its layer], "heads": [its head]), again when another head is drawn
// large, and draws the API's numbers with a caption naming layer and head
// (and the key head under grouped-query attention), and that head's output
// before o_proj ("head_outputs": true). A refusal is said in the panel, the
// attention drawn all the same.
//
// On gpt2-tiny (tests/data/checkpoints/gpt2_f32: 3 layers, 4 heads of 8,
// causal) and qwen2-window (qwen2_window_layers: 4 query heads sharing 2 key
// heads, token ids: no tokenizer).
import { check } from "./report.mjs";
import { postAttention, same, settled } from "./viewer_page.mjs";

const TEXT = "a cat sat";

// The panel as drawn: its caption, each figure's numbers, head and layer
// by its class (q, k, v, o), and its text.
function panelOf(page) {
	return page.$eval("#projections-panel", (n) => {
		const figs = {};
		for (const f of n.querySelectorAll("figure.proj")) {
			const which = ["q", "k", "v", "o"].find((c) => f.classList.contains(c));
			figs[which] = { values: JSON.parse(f.dataset.values), head: f.dataset.head, layer: f.dataset.layer, title: f.querySelector("figcaption strong")?.textContent ?? "" };
		}
		return { hidden: n.hidden, caption: n.querySelector("#proj-type").textContent, figs, text: n.textContent };
	});
}

// Collects the bodies of the page's POSTs to /v1/attention from now on;
// stop() ends the collecting.
function recordRequests(page, base) {
	const sent = [];
	const on = (r) => {
		if (r.method() === "POST" && r.url() === `${base}/v1/attention`) sent.push(r.postDataJSON());
	};
	page.on("request", on);
	return { sent, stop: () => page.off("request", on) };
}

// Waits until the panel draws q of query head `head` in layer `layer`.
async function panelShows(page, layer, head) {
	await settled(page, ([l, h]) => {
		const q = document.querySelector("#projections figure.proj.q");
		return q?.dataset.layer === l && q?.dataset.head === h;
	}, [String(layer), String(head)]);
}

// The panel against every layer's projections as the API answers them for
// the same input (all layers, all heads: independent of what the page
// asked): query head h of layer index l, key head g; and its head output.
function compareWithApi(p, panel, all, l, h, g) {
	for (const which of ["q", "k", "v", "o"]) {
		// k and v: the key head h reads; o: head h's output before o_proj
		const want = which === "o" ? all.head_outputs[l][h] : all.projections[l][which][h];
		const f = panel.figs[which];
		if (!f) p.push(`no ${which} figure`);
		else if (!same(f.values, want)) p.push(`${which} drawn ${JSON.stringify(f.values)}, the API's layer ${all.layers[l]} head ${h}: ${JSON.stringify(want)}`);
		else if (f.head !== String(which === "q" || which === "o" ? h : g)) p.push(`${which} is of head ${f.head}`);
	}
}

// The q, k, v requests among sent, each as {layers, heads}.
function projectionAsks(sent) {
	return sent.filter((b) => b.projections === true).map((b) => ({ layers: b.layers, heads: b.heads, weights: b.weights, output: b.output, head_outputs: b.head_outputs }));
}

export async function checkCheckpointProjections(page, base) {
	const all = (await postAttention(base, { model: "gpt2-tiny", text: TEXT, layers: "all", weights: "none", output: false, projections: true, head_outputs: true, scores: "masked" })).body;

	await check("a checkpoint: the attention asks no projections; q, k and v are asked for the head drawn large alone (layer 1, head 3) and drawn as the API answers them", async (p) => {
		const rec = recordRequests(page, base);
		try {
			await page.goto(`${base}/?model=gpt2-tiny&text=${encodeURIComponent(TEXT)}&head=3&head-layer=1`);
			await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "gpt2-tiny");
			await panelShows(page, 1, 3);
		} finally {
			rec.stop();
		}
		const main = rec.sent.filter((b) => b.layers === "all");
		if (main.length !== 1 || main[0].projections !== undefined) p.push(`attention requests ${JSON.stringify(main)}`);
		const asks = projectionAsks(rec.sent);
		if (!same(asks, [{ layers: [1], heads: [3], weights: "none", output: false, head_outputs: true }])) p.push(`asked for q, k, v with ${JSON.stringify(asks)}`);
		const panel = await panelOf(page);
		if (panel.hidden) p.push("the panel is hidden");
		compareWithApi(p, panel, all, 1, 3, 3);
		if (!/layer 1 · head 3/.test(panel.caption)) p.push(`caption "${panel.caption}"`);
		if (/key head/.test(panel.caption)) p.push(`caption "${panel.caption}" names a key head without GQA`);
		if (panel.figs.q?.title !== "Queries q · layer 1 · head 3" || panel.figs.k?.title !== "Keys k · layer 1 · head 3") p.push(`titles "${panel.figs.q?.title}", "${panel.figs.k?.title}"`);
		// the numbers make the scores: each visible one is q_i . k_j / sqrt(8)
		const { q, k } = { q: panel.figs.q?.values ?? [], k: panel.figs.k?.values ?? [] };
		all.scores[1][3].forEach((row, i) => row.forEach((s, j) => {
			if (s === "-Infinity") return;
			const dot = q[i].reduce((acc, x, d) => acc + x * k[j][d], 0) / Math.sqrt(8);
			if (Math.abs(dot - s) > 1e-3 * Math.max(1, Math.abs(s))) p.push(`q_${i} . k_${j} / √8 = ${dot}, the score is ${s}`);
		}));
	});

	await check("picking layer 2 head 0 on the grid asks for that head's q, k and v alone and draws them; picking it again asks nothing", async (p) => {
		const rec = recordRequests(page, base);
		let panel;
		try {
			await page.click('#grid button.cell[data-layer="2"][data-head="0"]');
			await panelShows(page, 2, 0);
			panel = await panelOf(page);
			// picked again, then another head: only that head's request follows
			await page.click('#grid button.cell[data-layer="2"][data-head="0"]');
			await page.click('#grid button.cell[data-layer="0"][data-head="1"]');
			await panelShows(page, 0, 1);
		} finally {
			rec.stop();
		}
		const asks = projectionAsks(rec.sent);
		const ask = (layer, head) => ({ layers: [layer], heads: [head], weights: "none", output: false, head_outputs: true });
		const want = [ask(2, 0), ask(0, 1)];
		if (!same(asks, want)) p.push(`asked for q, k, v with ${JSON.stringify(asks)}`);
		if (rec.sent.some((b) => b.layers === "all")) p.push("picking a head sent the attention request again");
		compareWithApi(p, panel, all, 2, 0, 0);
		if (!/layer 2 · head 0/.test(panel.caption)) p.push(`caption "${panel.caption}"`);
		compareWithApi(p, await panelOf(page), all, 0, 1, 1);
	});

	await check("grouped-query attention on a checkpoint (qwen2, token ids): query head 3 of layer 2 reads key head 1 of 2, and the caption says so", async (p) => {
		const ids = [5, 9, 12, 3, 7];
		const rec = recordRequests(page, base);
		try {
			await page.goto(`${base}/?model=qwen2-window&text=${encodeURIComponent(ids.join(" "))}&head=3&head-layer=2`);
			await settled(page, () => window.attnd?.state === "ok" && window.attnd.lastRequest.model === "qwen2-window");
			await panelShows(page, 2, 3);
		} finally {
			rec.stop();
		}
		const asks = rec.sent.filter((b) => b.projections === true);
		if (asks.length !== 1 || !same(asks[0].tokens, ids) || !same(asks[0].layers, [2]) || !same(asks[0].heads, [3])) p.push(`asked ${JSON.stringify(asks)}`);
		const qwen = (await postAttention(base, { model: "qwen2-window", tokens: ids, layers: "all", weights: "none", output: false, projections: true, head_outputs: true })).body;
		const panel = await panelOf(page);
		compareWithApi(p, panel, qwen, 2, 3, 1);
		// query heads 2 and 3 both read key head 1
		if (!same(qwen.projections[2].k[2], qwen.projections[2].k[3])) p.push("the API's k of heads 2 and 3 differ: not the key head they share");
		if (!/layer 2 · head 3 · key head 1 of 2/.test(panel.caption)) p.push(`caption "${panel.caption}"`);
		if (panel.figs.k?.title !== "Keys k · layer 2 · key head 1") p.push(`k's title "${panel.figs.k?.title}"`);
	});

	await check("a checkpoint's q, k and v refused: the attention is drawn, the panel says why", async (p) => {
		const refusal = "projections are not answered here";
		const handler = (route) => {
			if (route.request().postDataJSON().projections !== true) return route.continue();
			return route.fulfill({ status: 422, contentType: "application/json", body: JSON.stringify({ error: { code: "invalid_value", message: refusal, pointer: "/projections" } }) });
		};
		await page.route(`${base}/v1/attention`, handler);
		try {
			await page.goto(`${base}/?model=gpt2-tiny&text=${encodeURIComponent(TEXT)}`);
			await settled(page, (r) => window.attnd?.state === "ok" && document.querySelector("#projections-panel").textContent.includes(r), refusal);
		} finally {
			await page.unroute(`${base}/v1/attention`, handler);
		}
		const panel = await panelOf(page);
		if (panel.hidden || Object.keys(panel.figs).length !== 0 || !panel.text.includes(`Not shown: ${refusal}.`)) p.push(`the panel: ${JSON.stringify({ hidden: panel.hidden, text: panel.text })}`);
		if ((await page.$$("#grid button.cell")).length !== 12) p.push("the attention is not drawn (3 layers x 4 heads)");
		if ((await page.$("#error:not([hidden])")) !== null) p.push("the refusal is shown as the page's error");
	});
}
