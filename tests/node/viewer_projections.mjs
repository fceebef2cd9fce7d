// viewer_projections.mjs: the Q, K, V panel (web/render.js drawProjections):
// a one-layer model's q, k and v for the head shown large, as the API
// answers them ("projections": true), and that head's output before the
// heads are joined ("head_outputs": true), rows labelled by token and columns by
// the head's dimensions; under grouped-query attention the key head that
// query head reads; not asked with a checkpoint's attention (its panel:
// viewer_checkpoint_projections.mjs), not asked past 1024 positions, and a
// refusal said in the panel with the attention drawn.
//
// On the daemon's built-in models: tiny (one layer, 2 heads of 4
// dimensions), an inline seeded model of 4 heads sharing 2 key heads, and
// mini (a checkpoint).
import { check } from "./report.mjs";
import { SEED_WORDS, postAttention, same, settled } from "./viewer_page.mjs";

// What the panel drew: each figure's numbers, row and column labels, head
// and sentence, by its class (q, k, v, o: the head's output).
function panelOf(page) {
	return page.$eval("#projections-panel", (n) => {
		const figs = {};
		for (const f of n.querySelectorAll("figure.proj")) {
			const which = ["q", "k", "v", "o"].find((c) => f.classList.contains(c));
			figs[which] = {
				values: JSON.parse(f.dataset.values),
				head: f.dataset.head,
				rows: [...f.querySelectorAll("text.qlabel")].map((t) => t.firstChild.textContent), // the label, not its title
				cols: [...f.querySelectorAll("text.klabel")].map((t) => t.firstChild.textContent),
				cells: f.querySelectorAll("rect[data-q]").length,
				note: f.querySelector("p.proj-note")?.textContent ?? "",
			};
		}
		return { hidden: n.hidden, figures: n.querySelectorAll("figure").length, figs, text: n.textContent };
	});
}

// Opens path and waits for its drawing.
async function openDrawn(page, base, path, model) {
	await page.goto(`${base}${path}`);
	await settled(page, (m) => window.attnd?.state === "ok" && window.attnd.renders >= 1 && JSON.stringify(window.attnd.lastRequest.model) === m, JSON.stringify(model));
}

// The figures q, k, v and o of panel against the API's projections and
// head_outputs (outs) of one item: query head h and key head g, labelled by
// words, D columns.
function compare(p, panel, want, outs, h, g, words) {
	if (panel.hidden) p.push("the panel is hidden");
	if (panel.figures !== 4) p.push(`${panel.figures} figures, expected 4`);
	const D = want.q[0][0].length;
	const dims = Array.from({ length: D }, (_, c) => String(c));
	for (const [which, tensor, head] of [["q", want.q, h], ["k", want.k, g], ["v", want.v, g], ["o", outs, h]]) {
		const f = panel.figs[which];
		if (!f) {
			p.push(`no ${which} figure`);
			continue;
		}
		if (!same(f.values, tensor[head])) p.push(`${which} drawn ${JSON.stringify(f.values)}, the API's head ${head}: ${JSON.stringify(tensor[head])}`);
		if (f.head !== String(head)) p.push(`${which} is of head ${f.head}, expected ${head}`);
		if (f.cells !== words.length * D) p.push(`${which}: ${f.cells} cells, expected ${words.length} x ${D}`);
		if (!same(f.rows, words)) p.push(`${which} rows labelled ${JSON.stringify(f.rows)}`);
		if (!same(f.cols, dims)) p.push(`${which} columns labelled ${JSON.stringify(f.cols)}`);
		if (!/[\uac00-\ud7af]/.test(f.note) || !/[a-z]/.test(f.note)) p.push(`${which}'s sentence: "${f.note}"`);
	}
	if (!/q_i · k_j \/ √4/.test(panel.figs.q?.note ?? "")) p.push(`q's sentence gives no score: "${panel.figs.q?.note}"`);
	if (!/W_O/.test(panel.figs.o?.note ?? "")) p.push(`o's sentence does not say W_O joins the heads: "${panel.figs.o?.note}"`);
}

export async function checkProjections(page, base) {
	const text = SEED_WORDS.join(" ");

	await check("tiny: the Q, K, V panel draws head 0's q, k and v as the API answers them, rows by token, columns by dimension", async (p) => {
		await openDrawn(page, base, `/?model=tiny&positional=rope&mask=none&text=${encodeURIComponent(text)}`, "tiny");
		const req = await page.evaluate(() => window.attnd.lastRequest);
		if (req.projections !== true || req.head_outputs !== true) p.push("projections and head_outputs not asked for");
		const direct = await postAttention(base, { model: "tiny", text, positional: "rope", projections: true, head_outputs: true, weights: "none" });
		compare(p, await panelOf(page), direct.body.projections, direct.body.head_outputs, 0, 0, SEED_WORDS);
		if (!/RoPE/.test((await panelOf(page)).figs.q?.note ?? "")) p.push("q's sentence does not say RoPE rotated it");
	});

	await check("choosing head 1 under One head, large draws head 1's q, k and v", async (p) => {
		await page.selectOption("#pick-head", "1");
		await settled(page, () => document.querySelector("#projections figure.proj.q")?.dataset.head === "1").catch(() => {});
		const direct = await postAttention(base, { model: "tiny", text, positional: "rope", projections: true, head_outputs: true, weights: "none" });
		compare(p, await panelOf(page), direct.body.projections, direct.body.head_outputs, 1, 1, SEED_WORDS);
		await page.selectOption("#pick-head", "0");
	});

	await check("grouped-query attention: query head 3 of 4 reads key head 1 of 2, and the k figure says so", async (p) => {
		const model = { d_model: 16, num_heads: 4, num_kv_heads: 2, seed: 7, vocab_size: 100 };
		const fields = Object.entries(model).map(([k, v]) => `${k}=${v}`).join("&");
		await openDrawn(page, base, `/?model=inline&${fields}&positional=none&mask=none&head=3&text=${encodeURIComponent(text)}`, model);
		const direct = await postAttention(base, { model, text, projections: true, head_outputs: true, weights: "none" });
		const panel = await panelOf(page);
		compare(p, panel, direct.body.projections, direct.body.head_outputs, 3, 1, SEED_WORDS);
		if (!/query head h reads key head ⌊h \/ 2⌋, so head 3 reads 1/.test(panel.figs.k?.note ?? "")) p.push(`k's sentence: "${panel.figs.k?.note}"`);
	});

	await check("a checkpoint (mini): its attention request asks no projections (the panel's are asked for apart)", async (p) => {
		await openDrawn(page, base, "/?model=mini", "mini");
		const req = await page.evaluate(() => window.attnd.lastRequest);
		if (req.projections !== undefined || req.head_outputs !== undefined) p.push("the request asks for projections or head_outputs");
	});

	await check("past 1024 positions projections are not asked for; refused at /projections, the attention is drawn and the panel says why", async (p) => {
		const sent = [];
		const refusal = "projections are not answered here";
		const handler = (route) => {
			const body = route.request().postDataJSON();
			sent.push(body);
			if (body.text.split(" ").length > 1024) return route.fulfill({ status: 422, contentType: "application/json", body: JSON.stringify({ error: { code: "invalid_input", message: "not drawn in this check", pointer: "/text" } }) });
			if (body.projections !== true) return route.continue();
			return route.fulfill({ status: 422, contentType: "application/json", body: JSON.stringify({ error: { code: "invalid_input", message: refusal, pointer: "/projections" } }) });
		};
		await page.route(`${base}/v1/attention`, handler);
		try {
			const long = Array.from({ length: 1025 }, (_, i) => `w${i % 50}`).join(" ");
			await page.goto(`${base}/?model=tiny&positional=none&text=${encodeURIComponent(long)}`);
			await settled(page, () => window.attnd?.state === "error");
			if (sent.length !== 1 || sent[0].projections !== undefined) p.push(`1025 words: sent ${JSON.stringify(sent.map((b) => b.projections))}`);
			sent.length = 0;
			await openDrawn(page, base, `/?model=tiny&positional=none&text=${encodeURIComponent(text)}`, "tiny");
		} finally {
			await page.unroute(`${base}/v1/attention`, handler);
		}
		// asked again without q, k and v, and without the heads' outputs drawn beside them
		const asked = sent.map((b) => [b.projections, b.head_outputs]);
		if (!same(asked, [[true, true], [undefined, undefined]])) p.push(`sent ${JSON.stringify(asked)}`);
		const panel = await panelOf(page);
		if (panel.hidden || panel.figures !== 0 || !panel.text.includes(refusal)) p.push(`the panel: ${JSON.stringify({ hidden: panel.hidden, figures: panel.figures, text: panel.text })}`);
		if ((await page.$$("#heads figure.head")).length !== 3) p.push("the attention is not drawn (2 heads and the mean)");
	});
}
