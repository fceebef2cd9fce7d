// viewer_address.mjs: the view choices the viewer keeps in its address
// (web/app.js VIEW_KEPT): the Values choice, the head shown large and the
// one compared with it. Each is written when it changes, with no history
// entry, and read back at load; a value no option has is ignored.
//
// On the daemon's built-in models: tiny (one layer, 2 heads) and mini (a
// checkpoint of 2 layers x 4 heads).
import { check } from "./report.mjs";
import { same, settled } from "./viewer_page.mjs";

// The address's view choices, as {values, head, ...} (absent ones left out).
function viewParams(page) {
	const params = new URL(page.url()).searchParams;
	const keys = ["values", "head", "head-layer", "compare", "compare-layer"];
	return Object.fromEntries(keys.filter((k) => params.has(k)).map((k) => [k, params.get(k)]));
}

// Waits until the address's view choices are want (the page writes them as
// it draws, at once: a few seconds suffice), or gives up for the caller to say.
const ADDRESS_WAIT_MS = 5000;
async function addressSays(page, want) {
	const says = (w) => {
		const params = new URL(location.href).searchParams;
		return Object.entries(w).every(([k, v]) => (v === null ? !params.has(k) : params.get(k) === v));
	};
	await page.waitForFunction(says, want, { timeout: ADDRESS_WAIT_MS }).catch(() => {});
}

// What the large heads show: "layer/head/kind" each, the compared one second.
function focused(page) {
	return page.$$eval("#focus figure.big", (figs) => figs.map((f) => `${f.dataset.layer}/${f.dataset.head}/${f.dataset.kind}`));
}

// Opens path and waits for its first drawing (and, under values=scores, the scores).
async function openDrawn(page, base, path) {
	await page.goto(`${base}${path}`);
	await settled(page, () => window.attnd?.state === "ok" && window.attnd.renders >= 1 && (window.attnd.mode !== "scores" || window.attnd.scores !== null));
}

export async function checkViewAddress(page, base) {
	await check("changing Values, Compare or the head shown large writes it into the address (no history entry)", async (p) => {
		await openDrawn(page, base, "/?model=mini");
		const entries = await page.evaluate(() => history.length);
		const want = async (what, w) => {
			await addressSays(page, w);
			const got = viewParams(page);
			const wrong = Object.entries(w).filter(([k, v]) => (v === null ? k in got : got[k] !== v));
			if (wrong.length > 0) p.push(`${what}: the address says ${JSON.stringify(got)}, expected ${JSON.stringify(w)}`);
		};
		await page.check('input[name="values"][value="scores"]');
		await want("Scores chosen", { values: "scores" });
		await page.check('input[name="values"][value="weights"]');
		await want("Weights chosen again", { values: "weights" });
		await page.click('#grid button.cell[data-layer="1"][data-head="3"]');
		await want("layer 1 head 3 picked on the grid", { head: "3", "head-layer": "1" });
		await page.selectOption("#pick-head", "2");
		await want("head 2 picked in the Head field", { head: "2", "head-layer": "1" });
		await page.check("#compare");
		const second = await page.evaluate(() => window.attnd.compare);
		await want("Compare checked", { compare: String(second?.head), "compare-layer": String(second?.layer) });
		await page.selectOption("#cmp-head", "0");
		await page.selectOption("#cmp-layer", "0");
		await want("layer 0 head 0 compared", { compare: "0", "compare-layer": "0" });
		await page.uncheck("#compare");
		await want("Compare unchecked", { compare: null, "compare-layer": null, head: "2" });
		const more = (await page.evaluate(() => history.length)) - entries;
		if (more !== 0) p.push(`${more} history entries added by the view choices`);
		// the API key is never in the address, a view choice's rewrite included
		await page.click("#conn summary");
		await page.fill("#apikey", "not-in-the-address");
		await page.check('input[name="values"][value="scores"]');
		await want("Scores chosen with a key typed", { values: "scores" });
		if (page.url().includes("not-in-the-address")) p.push(`the key is in the address: ${page.url()}`);
		await page.fill("#apikey", "");
	});

	await check("an address with Values, a head and a compared head draws them (a checkpoint's layers, a one-layer model)", async (p) => {
		await openDrawn(page, base, "/?model=mini&values=scores&head=2&head-layer=1&compare=3&compare-layer=0");
		const v = await page.evaluate(() => ({ mode: window.attnd.mode, selected: window.attnd.selected, compare: window.attnd.compare }));
		if (v.mode !== "scores" || !same(v.selected, { layer: 1, head: 2 }) || !same(v.compare, { layer: 0, head: 3 })) p.push(`mini drew ${JSON.stringify(v)}`);
		const figs = await focused(page);
		if (!same(figs, ["1/2/scores", "0/3/scores"])) p.push(`mini's large heads: ${JSON.stringify(figs)}`);
		const controls = {
			scores: await page.isChecked('input[name="values"][value="scores"]'),
			compare: await page.isChecked("#compare"),
			pick: [await page.inputValue("#pick-layer"), await page.inputValue("#pick-head")],
			cmp: [await page.inputValue("#cmp-layer"), await page.inputValue("#cmp-head")],
		};
		if (!same(controls, { scores: true, compare: true, pick: ["1", "2"], cmp: ["0", "3"] })) p.push(`mini's controls: ${JSON.stringify(controls)}`);
		const kept = viewParams(page);
		if (!same(kept, { values: "scores", head: "2", "head-layer": "1", compare: "3", "compare-layer": "0" })) p.push(`mini drawn, the address says ${JSON.stringify(kept)}`);
		await openDrawn(page, base, "/?model=tiny&head=1&compare=0");
		const tiny = await focused(page);
		if (!same(tiny, ["0/1/weights", "0/0/weights"])) p.push(`tiny's large heads: ${JSON.stringify(tiny)}`);
	});

	await check("an address's head past the model's last, a layer it has not, or a Values no option has is ignored", async (p) => {
		// tiny has 2 heads and one layer
		await openDrawn(page, base, "/?model=tiny&values=logits&head=7&head-layer=3&compare=9");
		const v = await page.evaluate(() => ({ state: window.attnd.state, mode: window.attnd.mode, selected: window.attnd.selected, compare: window.attnd.compare }));
		if (!same(v, { state: "ok", mode: "weights", selected: { layer: 0, head: 0 }, compare: null })) p.push(`tiny drew ${JSON.stringify(v)}`);
		if (!(await page.isChecked('input[name="values"][value="weights"]'))) p.push("values=logits: the Weights radio is not checked");
		if (await page.isChecked("#compare")) p.push("compare=9 on 2 heads: Compare is checked");
		const figs = await focused(page);
		if (!same(figs, ["0/0/weights"])) p.push(`tiny's large heads: ${JSON.stringify(figs)}`);
		const kept = viewParams(page);
		if (!same(kept, { values: "weights", head: "0" })) p.push(`tiny drawn, the address says ${JSON.stringify(kept)}`);
		// mini: 2 layers of 4 heads; a layer it has not leaves the head asked on layer 0
		await openDrawn(page, base, "/?model=mini&head=4&head-layer=1&compare=-1&compare-layer=1");
		const mini = await page.evaluate(() => ({ selected: window.attnd.selected, compare: window.attnd.compare }));
		if (!same(mini, { selected: { layer: 1, head: 0 }, compare: null })) p.push(`mini with head=4, compare=-1 drew ${JSON.stringify(mini)}`);
		await openDrawn(page, base, "/?model=mini&head=3&head-layer=5&compare=x");
		const other = await page.evaluate(() => ({ selected: window.attnd.selected, compare: window.attnd.compare }));
		if (!same(other, { selected: { layer: 0, head: 3 }, compare: null })) p.push(`mini with head-layer=5, compare=x drew ${JSON.stringify(other)}`);
	});
}
