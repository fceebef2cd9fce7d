// render.js: turns an answer of POST /v1/attention into what the page shows
// (state.js's view), and draws it: facts and legend, the tokens over the
// sentence, the model view grid, one or two heads large, the head view, and
// every head of one layer as small multiples with the mean, the
// positional encoding itself when the answer has it (drawPositions), and
// the head's q, k and v when it has those (drawProjections).
//
// Shapes (outermost first): a single-layer answer's weights [H, Lq, Lk]
// ([B, H, Lq, Lk] batched: item 0 is drawn); a checkpoint's attentions
// [layers, H, L, L]. Both become view.layers [layers][H][Lq][Lk].

import { BEHAVIOURS, ranked } from "./findheads.js";
import { drawGrid } from "./grid.js";
import { drawHeadView } from "./headview.js";
import { CANVAS_PAST } from "./heatcanvas.js";
import { heatmap, hideTip, table, topList } from "./heatmap.js";
import { view } from "./state.js";
import { $, DIVERGING, RAMP, absMax, el, isKorean, rovingFocus, shapeOf, showToken, specKey, toNumbers, whitespaceOffsets } from "./util.js";

let drawn = null; // {req, body, timing, meta, batched} of the last answer drawn
let picked = () => {}; // told when a head is picked on the grid (app.js keeps it in the address)

// fn is called after a head picked on the grid is drawn large.
export function onPicked(fn) {
	picked = fn;
}

export function isSeeded(m) {
	return typeof m?.source === "string" && m.source.startsWith("seed:");
}

// What a model's weights are, as every label says it.
export function weightsLabel(m, inline) {
	if (inline || isSeeded(m)) return "random weights (untrained)";
	if (m?.kind === "checkpoint") return `checkpoint weights (${m.source.replace(/^dir:/, "")})`;
	return m ? `weights from ${m.source}` : "";
}

function meanOver(heads) {
	const H = heads.length;
	return heads[0].map((row, i) => row.map((_, j) => heads.reduce((s, h) => s + h[i][j], 0) / H));
}

// The answer's scores as [layers][H][Lq][Lk], or null.
export function scoresOf(body, batched) {
	if (!body.scores) return null;
	let s = toNumbers(body.scores);
	if (body.attentions) return s; // shaped like attentions
	if (batched ?? shapeOf(s).length === 4) s = s[0];
	return [s];
}

// A token's label: its piece as a person reads it; a piece that is part of
// a character's UTF-8 bytes (a byte-level tokenizer splits 나 in three, and
// each decodes to U+FFFD) shows the character its offsets point at, as
// showToken shows it.
function tokenLabel(t, at, text) {
	if (!String(t).includes("\uFFFD") || !at || !text || at[1] <= at[0]) return showToken(t);
	return showToken([...text].slice(at[0], at[1]).join(""));
}

// Which cells the drawn request's mask hides in the layer numbered layerId,
// where the page knows: a function (query i, key j) -> true when hidden, or
// null (not known; every weight of exactly 0 is then taken for masked). The
// seeded models draw the mask the page sent (openapi.yaml: a window W shows
// keys j with i - W < j, and without causal also j < i + W); a checkpoint
// that is not causal (BERT) hides nothing, a causal one the keys after the
// query and, on the layers of its sliding_layers, the keys j <= i - W of its
// sliding_window W (openapi.yaml: i - sliding_window < j <= i).
function hiddenOf(req, model, layerId) {
	if (model?.kind === "checkpoint") {
		if (model.causal === false) return () => false;
		if (model.causal !== true) return null;
		const W = model.sliding_window;
		if (W > 0 && (model.sliding_layers ?? []).includes(layerId)) return (i, j) => j > i || j <= i - W;
		return (i, j) => j > i;
	}
	const m = req.mask;
	if (m === undefined || m === "none") return () => false;
	if (m === "causal") return (i, j) => j > i;
	if (typeof m === "object" && m !== null && Number.isInteger(m.window)) {
		const W = m.window;
		const causal = m.causal === true;
		return (i, j) => (causal && j > i) || j <= i - W || (!causal && j >= i + W);
	}
	return null;
}

// Find heads' results and note are of a model no longer drawn.
function forgetFound() {
	const note = $("find-note");
	view.found = null;
	view.findKey = null;
	note.textContent = note.dataset.intro ?? "";
}

export function render(req, body, timing, meta, info) {
	let weights = body.attentions ?? [body.weights];
	let tokens = body.tokens;
	let offsets = body.offsets ?? null;
	const batched = shapeOf(body.attentions ? body.attentions[0] : body.weights).length === 4;
	if (batched) {
		weights = weights.map((w) => w[0]);
		tokens = tokens?.[0];
		offsets = offsets?.[0] ?? null;
	}
	const layers = weights.map(toNumbers);
	const H = layers[0].length;
	const Lq = layers[0][0].length;
	const Lk = layers[0][0][0]?.length ?? 0;
	const label = (i) => (tokens ? tokenLabel(tokens[i], offsets?.[i], info.text) : `#${i}`);
	const sameShape = view.layers.length === layers.length && view.layers[0]?.length === H && view.model?.name === info.model?.name;
	view.lastResponse = body;
	view.timing = timing;
	view.model = info.model;
	view.text = info.text ?? "";
	view.lang = isKorean(view.text) ? "ko" : "en";
	view.layers = layers;
	view.layerIds = body.layers ?? [0];
	view.queryTokens = Array.from({ length: Lq }, (_, i) => label(i));
	view.keyTokens = Array.from({ length: Lk }, (_, j) => label(j));
	view.offsets = offsets ?? (tokens && info.text ? whitespaceOffsets(info.text, tokens) : null);
	view.scores = scoresOf(body, batched);
	view.scoresNote = null;
	view.positionsNote = info.positionsNote ?? null;
	view.positions = body.positions ? { ...body.positions, encoding: toNumbers(body.positions.encoding), similarity: toNumbers(body.positions.similarity), distance: toNumbers(body.positions.distance) } : null;
	view.projectionsNote = info.projectionsNote ?? null;
	view.projections = projectionsOf(body, batched);
	view.projectionsAsked = null; // a checkpoint's: app.js asks once this is drawn
	if (!sameShape) {
		view.selected = { layer: 0, head: 0 };
		view.compare = view.compare ? { layer: Math.min(layers.length - 1, 1), head: Math.min(H - 1, 1) } : null;
		view.enabled = new Set(Array.from({ length: H }, (_, h) => h));
	}
	if (info.chosen) chooseView(info.chosen, H);
	view.drawnKey = specKey(req);
	if (view.findKey !== null && view.findKey !== view.drawnKey) forgetFound();
	drawn = { req, body, timing, meta, batched };
	draw();
}

// The heads an address asked for (app.js viewChoicesOf), each where the
// answer has it: a head past its last, or a layer number it has not, is
// ignored (the head drawn stays), as is a second head to compare with
// (compare stays off): a shared link of a bigger model still draws.
function chooseView(chosen, H) {
	const head = (h) => (h !== null && h < H ? h : null);
	const layer = (id) => (id === null ? -1 : view.layerIds.indexOf(id));
	const at = (asked, was) => ({ layer: layer(asked.layer) >= 0 ? layer(asked.layer) : was.layer, head: head(asked.head) ?? was.head });
	view.selected = at(chosen.selected, view.selected);
	if (head(chosen.compare.head) === null) return;
	const second = { layer: Math.min(view.layers.length - 1, 1), head: chosen.compare.head };
	view.compare = at(chosen.compare, second);
}

// The pre-softmax scores arrived (or will not: note says why).
export function setScores(scores, note) {
	view.scores = scores;
	view.scoresNote = note;
	draw();
}

// The index of the layer the Layer field names; a number that is no layer
// of the answer is moved to the nearest one, in the field too. An empty
// field is a number being typed: the layer drawn stays (app.js puts its
// number back when the field is left empty).
function layerIndex() {
	if ($("layer").value.trim() === "") return Math.min(view.layer, Math.max(0, view.layerIds.length - 1));
	const want = Number($("layer").value);
	let i = view.layerIds.indexOf(want);
	if (i >= 0) return i;
	i = 0;
	view.layerIds.forEach((id, k) => {
		if (Math.abs(id - want) < Math.abs(view.layerIds[i] - want)) i = k;
	});
	if (view.layerIds.length > 0) $("layer").value = String(view.layerIds[i]);
	return i;
}

// Draws view with the view settings (no request).
export function draw() {
	if (!drawn) return;
	hideTip();
	const { req, body, timing, meta, batched } = drawn;
	// the mask of layers[l], l an index (the layers drawn need not start at 0)
	const hiddenAt = (l) => hiddenOf(req, view.model, view.layerIds[l]);
	view.maskedAt = (l, i, j) => hiddenAt(l)?.(i, j) ?? null;
	view.layer = layerIndex();
	view.heads = view.layers[view.layer];
	view.mean = meanOver(view.heads);
	const scoresShown = view.mode === "scores" && view.scores !== null;
	drawFacts(body, timing, meta, batched);
	drawBadge();
	$("tokens-note").textContent = tokensNote(req, view.model);
	drawTokens();
	const range = scaleOf(scoresShown ? view.scores : view.layers, scoresShown ? "scores" : "weights");
	drawLegend(range, scoresShown);
	const ctx = { queryTokens: view.queryTokens, keyTokens: view.keyTokens, lang: view.lang, kind: scoresShown ? "scores" : "weights", lo: range.lo, hi: range.hi, numbers: $("numbers").checked, hidden: hiddenAt(view.layer) };
	drawGrid($("grid"), {
		layers: scoresShown ? view.scores : view.layers,
		layerIds: view.layerIds,
		kind: ctx.kind,
		hiddenAt,
		found: view.found?.scores ?? null,
		selected: { layer: view.layerIds[view.selected.layer], head: view.selected.head },
		onPick: (l, h) => {
			view.selected = { layer: l, head: h };
			draw();
			picked();
			$("focus").querySelector("svg.map, canvas.cells")?.focus({ preventScroll: true });
			$("focus").scrollIntoView({ block: "nearest", behavior: "smooth" });
		},
	});
	drawFindList();
	drawFocus(ctx, hiddenAt);
	drawHeadView($("headview"), {
		heads: view.heads,
		tokens: view.queryTokens,
		lang: view.lang,
		enabled: view.enabled,
		onToggle: (h) => {
			if (view.enabled.has(h)) view.enabled.delete(h);
			else view.enabled.add(h);
			draw();
			// the redraw made new toggles: the focus stays on this one's
			$("headview").querySelector(`button.toggle[data-head="${h}"]`)?.focus();
		},
	});
	$("hv-title").textContent = `Head view · layer ${view.layerIds[view.layer]}`;
	drawEveryHead(ctx, scoresShown);
	drawPositions();
	drawProjections();
}

// What the token chips of the drawn request are.
function tokensNote(req, model) {
	if (Array.isArray(req.tokens)) return "(the token ids sent: this checkpoint has no tokenizer to show their text)";
	if (req.embeddings !== undefined) return "(one per row of the embeddings)";
	if (model?.tokenizer) return "(the tokenizer's pieces; ␣ is a leading space; point at one to see it in the sentence)";
	return "(the sentence split on spaces; point at one to see it in the sentence)";
}

// The colour scale: weights from 0 ("0 to 1" or to the largest shown),
// scores over their finite range.
function scaleOf(layers, kind) {
	let lo = Infinity;
	let hi = -Infinity;
	for (const heads of layers) for (const w of heads) for (const row of w) for (const v of row) {
		if (!Number.isFinite(v)) continue;
		lo = Math.min(lo, v);
		hi = Math.max(hi, v);
	}
	if (kind === "weights") {
		const top = $("scale").value === "unit" || !(hi > 0) ? 1 : hi;
		return { lo: 0, hi: top };
	}
	return Number.isFinite(lo) ? { lo, hi } : { lo: 0, hi: 1 };
}

// The drawn model's badge. After a failure (an error shown: the API's, no
// answer, or a request the page would not send) the drawing below is of an
// earlier request, so the badge is dimmed and says it is the last drawn
// model's, until the next answer is drawn (app.js hides the error first).
export function drawBadge() {
	if (!drawn) return;
	const m = view.model;
	const inline = m === null;
	const badge = $("model-badge");
	const seeded = inline || isSeeded(m);
	const stale = view.lastError !== null;
	badge.hidden = false;
	badge.classList.toggle("random", seeded);
	badge.classList.toggle("stale", stale);
	const said = seeded
		? `${inline ? "inline model" : m.name}: random weights (untrained): its patterns show how attention works, not what a trained model learned.`
		: `${m.name}: ${weightsLabel(m)}.`;
	badge.textContent = stale ? `Last drawn: ${said}` : said;
	if (stale) badge.title = "The latest request failed: this is the model of the drawing below, the last one that succeeded.";
	else badge.removeAttribute("title");
}

// A tensor's shape as text; a batch whose items differ in length (answered
// trimmed, one array per item) lists each item's shape.
function shapeText(x, batched) {
	if (!batched) return `[${shapeOf(x).join(", ")}]`;
	const items = x.map(shapeOf);
	const first = items[0].join(", ");
	if (items.every((d) => d.join(", ") === first)) return `[${x.length}, ${first}]`;
	const shown = items.slice(0, 3).map((d) => `[${d.join(", ")}]`);
	return `${x.length} items: ${shown.join(", ")}${items.length > 3 ? ", …" : ""}`;
}

function drawFacts(body, timing, meta, batched) {
	const s = body.shape;
	const m = view.model;
	// the drawn item's tokens: in a batch, item 0's own count, not the longest
	const drawnLength = batched ? (shapeOf(body.attentions ? body.attentions[0][0] : body.weights[0])[1] ?? s.query_length) : s.query_length;
	const facts = [["Tokens", `${drawnLength}`]];
	if (body.attentions) {
		facts.push(["Attentions", `[${body.attentions.length}, ${shapeOf(body.attentions[0]).join(", ")}]`, "[layers, heads, queries, keys]"]);
		facts.push(["Model", `${body.model} · ${body.family ?? m?.family ?? ""} · ${s.num_layers ?? m?.num_layers} layers × ${s.num_heads} heads · d_model ${s.d_model}`, weightsLabel(m)]);
	} else {
		facts.push(["Output", shapeText(body.output, batched), "the layer's output tensor", batched ? "" : "= the input's shape (입력과 출력 크기 동일)"]);
		facts.push(["Weights", shapeText(body.weights, batched), batched ? "[batch, heads, queries, keys]" : "[heads, queries, keys]"]);
		facts.push(["Model", `${body.model} · d_model ${s.d_model} · ${s.num_heads} × d_k ${s.head_dim}` + (s.num_kv_heads !== s.num_heads ? ` · ${s.num_kv_heads} kv heads` : ""), "", weightsLabel(m, m === null)]);
	}
	if (timing.length > 0) {
		const t = timing.map((e) => `${e.name} ${Number.isFinite(e.dur) ? e.dur.toFixed(3) : "?"}`).join(" · ");
		facts.push(["Server", `${t} ms`, "Server-Timing"]);
	}
	facts.push(["Round trip", `${meta.ms.toFixed(1)} ms`, `browser to attnd and back; request ${meta.requestId ?? "?"}`]);
	if (batched) facts.push(["Batch", `item 1 of ${s.batch} drawn`]);
	$("facts").replaceChildren(
		...facts.flatMap(([k, v, title, note]) => {
			const dd = el("dd", title ? { title } : {}, v);
			if (note) dd.append(el("small", { text: note }));
			return [el("dt", { text: k }), dd];
		}),
	);
}

// A colour bar from lo to hi in the ramp's colours, with three ticks.
function scaleBar(lo, hi, ramp = RAMP) {
	const stops = ramp.map((c, i) => `${c} ${((i / (ramp.length - 1)) * 100).toFixed(1)}%`).join(", ");
	const bar = el("span", { class: "bar", role: "presentation" });
	bar.style.background = `linear-gradient(to right, ${stops})`;
	const ticks = el("span", { class: "ticks" }, el("span", { text: lo.toFixed(2) }), el("span", { text: ((lo + hi) / 2).toFixed(2) }), el("span", { text: hi.toFixed(2) }));
	return el("span", { class: "scale" }, bar, ticks);
}

function drawLegend({ lo, hi }, scores) {
	$("legend").replaceChildren(
		el("span", { class: "legend-title", text: scores ? "Score (before softmax)" : "Attention weight" }),
		scaleBar(lo, hi),
		el("span", { class: "masked" }, el("span", { class: "swatch", role: "presentation" }), scores ? " −∞ (masked)" : " 0 (masked)"),
		el("span", { class: "axes", text: "rows: query (who looks) · columns: key (looked at) · outlined: each row's largest" }),
	);
}

// The sentence, one span per code point, and the tokens as chips; pointing
// at a token (chip, axis label, head view word) lights its characters.
function drawTokens() {
	const cps = [...view.text];
	const sentence = $("sentence");
	sentence.lang = view.lang;
	sentence.replaceChildren(...cps.map((c, i) => el("span", { "data-cp": String(i), text: c })));
	sentence.hidden = cps.length === 0 || view.offsets === null;
	const chips = view.queryTokens.map((t, i) => {
		const li = el("li", { text: t });
		li.dataset.tok = String(i);
		const o = view.offsets?.[i];
		li.title = o ? `token ${i}: "${t}", characters ${o[0]} to ${o[1]}` : `token ${i}: "${t}"`;
		return li;
	});
	$("tokens").lang = view.lang;
	$("tokens").replaceChildren(...chips);
	rovingFocus($("tokens"), "li", null, 1);
}

export function highlightToken(i) {
	for (const s of $("sentence").querySelectorAll("span.lit")) s.classList.remove("lit");
	for (const c of $("tokens").querySelectorAll("li.lit")) c.classList.remove("lit");
	if (i === null) return;
	$("tokens").querySelector(`li[data-tok="${i}"]`)?.classList.add("lit");
	const o = view.offsets?.[i];
	if (!o) return;
	for (let k = o[0]; k < o[1]; k++) $("sentence").querySelector(`span[data-cp="${k}"]`)?.classList.add("lit");
}

function drawFindList() {
	const box = $("find-list");
	if (!view.found) {
		box.replaceChildren();
		return;
	}
	const lists = BEHAVIOURS.map((b) => {
		const top = ranked(view.found.scores, b.key, view.layerIds);
		return el(
			"div",
			{ class: `found ${b.key}` },
			el("strong", { text: `${b.short}: ${b.label}` }),
			el("ol", {}, ...top.map((t) => el("li", { text: `layer ${t.layer} head ${t.head}: ${t.score.toFixed(2)}` }))),
		);
	});
	box.replaceChildren(...lists);
}

function options(select, n, prefix, value) {
	select.replaceChildren(...Array.from({ length: n }, (_, i) => el("option", { value: String(i), text: `${prefix}${i}` })));
	select.value = String(value);
}

// One head large, or two side by side when comparing.
function drawFocus(ctx, hiddenAt) {
	const H = view.layers[0].length;
	const names = view.layerIds;
	$("pick-layer").replaceChildren(...names.map((L, l) => el("option", { value: String(l), text: `layer ${L}` })));
	$("pick-layer").value = String(view.selected.layer);
	options($("pick-head"), H, "head ", view.selected.head);
	const cmp = view.compare;
	$("compare").checked = cmp !== null;
	$("cmp-layer-box").hidden = cmp === null;
	$("cmp-head-box").hidden = cmp === null;
	if (cmp) {
		$("cmp-layer").replaceChildren(...names.map((L, l) => el("option", { value: String(l), text: `layer ${L}` })));
		$("cmp-layer").value = String(cmp.layer);
		options($("cmp-head"), H, "head ", cmp.head);
	}
	const note = $("scores-note");
	const wantScores = view.mode === "scores";
	note.hidden = !wantScores || view.scores !== null;
	note.textContent = view.scoresNote ?? (view.state === "error" ? "The scores are asked for once a request succeeds." : "Asking for the scores…");
	const source = ctx.kind === "scores" ? view.scores : view.layers;
	const figs = [view.selected, ...(cmp ? [cmp] : [])].map((at) => {
		const w = source[at.layer][at.head];
		const title = `Layer ${names[at.layer]} · head ${at.head}`;
		const fig = el("figure", { class: "big" });
		fig.dataset.layer = String(names[at.layer]);
		fig.dataset.head = String(at.head);
		fig.dataset.kind = ctx.kind;
		fig.dataset.weights = JSON.stringify(w);
		fig.append(el("figcaption", {}, el("strong", { text: title }), el("span", { text: ctx.kind === "scores" ? "scores before softmax" : "weights" })));
		const figCtx = { ...ctx, hidden: hiddenAt(at.layer) }; // the mask of this figure's layer
		fig.append(el("div", { class: "map-scroll" }, heatmap(w, title, figCtx, true)));
		fig.append(el("p", { class: "map-readout", text: view.lang === "ko" ? "칸을 가리키면 읽어 줍니다." : "Point at a cell to read it." }));
		if (ctx.kind === "weights") fig.append(topList(w, figCtx));
		return fig;
	});
	$("focus").replaceChildren(...figs);
	$("focus").classList.toggle("two", figs.length === 2);
}

// Every head of the chosen layer as small multiples, and their mean.
function drawEveryHead(ctx, scoresShown) {
	const s = drawn.body.shape;
	const group = s.num_heads / s.num_kv_heads;
	const source = scoresShown ? view.scores[view.layer] : view.heads;
	const cards = source.map((w, h) => {
		const sub = `d_k ${s.head_dim}` + (group > 1 ? ` · kv head ${Math.floor(h / group)}` : "");
		return card(w, { id: h, title: `Head ${h}`, sub }, ctx);
	});
	if (!scoresShown) cards.push(card(view.mean, { id: "mean", title: "Mean over heads", sub: `${view.heads.length} heads` }, ctx));
	$("heads").replaceChildren(...cards);
	$("heads").classList.toggle("with-tables", $("tables").checked);
	$("heads-title").textContent = view.layers.length > 1 ? `Every head of layer ${view.layerIds[view.layer]}` : "Every head of the layer";
}

// One small multiple: caption, heatmap, the "→ …" lines, a table.
function card(w, { id, title, sub }, ctx) {
	const fig = el("figure", { class: id === "mean" ? "head mean" : "head" });
	fig.dataset.head = String(id);
	fig.dataset.weights = JSON.stringify(w);
	fig.dataset.queryTokens = JSON.stringify(view.queryTokens);
	fig.dataset.keyTokens = JSON.stringify(view.keyTokens);
	const cap = el("figcaption", {}, el("strong", { text: title }), el("span", { text: sub }));
	fig.append(cap, heatmap(w, title, ctx));
	if (ctx.kind === "weights") fig.append(topList(w, ctx));
	// a big matrix's table (a cell each: a million for 1024 tokens) only when asked for
	if ($("tables").checked || w.length * w.length <= CANVAS_PAST) fig.append(table(w, title, ctx, csvName(id, ctx)));
	return fig;
}

// The file a big head's CSV saves to: model, layer, head (or mean) and what
// the numbers are, e.g. base-layer0-head3-weights.csv.
function csvName(id, ctx) {
	const model = String(drawn.body.model ?? drawn.req.model ?? "model").replace(/[^\w.-]+/g, "_");
	const head = id === "mean" ? "mean" : `head${id}`;
	return `${model}-layer${view.layerIds[view.layer]}-${head}-${ctx.kind}.csv`;
}

// ---- positions -------------------------------------------------------------------

// What each of the panel's two heatmaps shows, one sentence each in English
// with its Korean line, as the rest of the page says things.
const POSITION_NOTES = {
	sinusoidal: {
		encoding: [
			"Each row is what the sinusoidal encoding adds to that token's embedding: sin in even columns, cos in odd ones, fast waves on the left and slow ones on the right.",
			"각 행은 그 위치의 토큰 임베딩에 더해지는 위치 벡터입니다.",
		],
		similarity: [
			"Dot products of those rows: each position is most like itself and its neighbours (the tutorial's ||pe[0] − pe[1]|| < ||pe[0] − pe[9]||), though not steadily farther apart.",
			"바로 옆 위치의 벡터가 가장 유사합니다.",
		],
	},
	rope: {
		encoding: [
			"Each row is a unit vector rotated as RoPE rotates one head's query at that position: each pair of columns turns by an angle that grows with the position.",
			"각 행은 그 위치에서 RoPE가 회전시킨 단위 벡터입니다.",
		],
		similarity: [
			"How rotation alone scales a score between two positions: it depends only on how far apart they are, so each diagonal holds one value.",
			"회전만으로 바뀌는 점수는 두 위치의 거리에만 달려 있습니다.",
		],
	},
	learned: {
		encoding: [
			"Each row is the position embedding this checkpoint learned for that position, added to the token's embedding: numbers training chose, not a formula.",
			"각 행은 이 모델이 학습한 그 위치의 위치 임베딩입니다.",
		],
		similarity: [
			"Dot products of those rows: what training made of position; the first position often stands apart.",
			"학습된 위치 벡터끼리의 유사도입니다.",
		],
	},
};

// The panel's title and type line for each type.
const POSITION_TITLES = {
	sinusoidal: ["Sinusoidal encoding", "sinusoidal · d_model"],
	rope: ["RoPE rotation of a unit vector", "RoPE · head dim"],
	learned: ["Learned position embeddings", "learned · d_model"],
};

// One heatmap of a panel (panel "pos" or "proj"), its numbers in
// data-values for tests, and its sentence.
function valuesFigure(panel, which, m, title, ctx, note) {
	const fig = el("figure", { class: `${panel} ${which}` });
	fig.dataset.values = JSON.stringify(m);
	fig.append(el("figcaption", {}, el("strong", { text: title }), el("span", { text: ` [${m.length}, ${m[0]?.length ?? 0}]` })));
	fig.append(el("div", { class: "map-scroll" }, heatmap(m, title, ctx)));
	fig.append(el("p", { class: "map-readout" }));
	fig.append(el("p", { class: `note ${panel}-note` }, note[0], " ", el("span", { lang: "ko", text: note[1] })));
	return fig;
}

// The positional encoding itself (the answer's positions), or the panel hidden:
// none and ALiBi have none to show; a checkpoint shows its own (learned or RoPE).
function drawPositions() {
	const p = view.positions;
	const panel = $("positions-panel");
	panel.hidden = p === null && view.positionsNote === null;
	if (p === null) {
		// asked for and refused (past 1024 positions): the panel says so
		const why = view.positionsNote === null ? [] : [el("p", { class: "note", text: `Not shown: ${view.positionsNote}.` })];
		$("pos-type").textContent = "";
		$("positions").replaceChildren(...why);
		$("pos-legend").replaceChildren();
		return;
	}
	const notes = POSITION_NOTES[p.type];
	const [title, typeLine] = POSITION_TITLES[p.type];
	// a batch's positions are its longest item's: the drawn item's are the first rows
	const L = view.queryTokens.length;
	const encoding = p.encoding.slice(0, L);
	const similarity = p.similarity.slice(0, L).map((row) => row.slice(0, L));
	const dims = Array.from({ length: encoding[0]?.length ?? 0 }, (_, c) => String(c));
	const base = { queryTokens: view.queryTokens, lang: view.lang, kind: "values", ramp: DIVERGING, numbers: $("numbers").checked, hidden: null };
	// the encoding's entries are sin and cos (RoPE's lie within them): -1..1;
	// learned rows are whatever training made them: symmetric about 0
	const span = p.type === "learned" ? absMax(encoding) : 1;
	const enc = { ...base, keyTokens: dims, lo: -span, hi: span, axes: ["tokens", "dimensions"] };
	// a dot product of rows of up to E / 2 (sinusoidal) or 1 (RoPE): symmetric about 0
	const top = absMax(similarity);
	const sim = { ...base, keyTokens: view.queryTokens, lo: -top, hi: top, axes: ["tokens", "tokens"] };
	$("pos-type").textContent = `${typeLine} ${dims.length}`;
	$("pos-legend").replaceChildren(
		el("span", { class: "legend-title", text: "Encoding value" }),
		scaleBar(-span, span, DIVERGING),
		el("span", { class: "legend-title", text: "Similarity" }),
		scaleBar(-top, top, DIVERGING),
		el("span", { class: "axes", text: "encoding: rows token, columns dimension · similarity: rows and columns token" }),
	);
	$("positions").replaceChildren(
		valuesFigure("pos", "encoding", encoding, title, enc, notes.encoding),
		valuesFigure("pos", "similarity", similarity, "Similarity of positions (dot product)", sim, notes.similarity),
	);
}

// ---- q, k and v ----------------------------------------------------------------

// The drawn item's projections as numbers, {q [H][Lq][D], k and v
// [Hkv][Lk][D], o [H][Lq][D] or null}, or null when the answer has none
// (a checkpoint's come in a request of their own: checkpointProjectionsOf;
// a text past app.js's PROJECTIONS_MAX_L). o: the heads' outputs before
// they are joined (a one-layer model's head_outputs). A batch's, ragged or
// not, are per item.
function projectionsOf(body, batched) {
	const p = body.projections;
	if (!p) return null;
	const item = (t) => toNumbers(batched ? t[0] : t);
	const o = body.head_outputs ? item(body.head_outputs) : null;
	return { q: item(p.q), k: item(p.k), v: item(p.v), o };
}

// A checkpoint's answer for one layer and one head (app.js askProjections)
// as {q, k, v [1][L][D], o [1][L][D] or null, layer, head, H, Hkv}: q of
// query head `head` of layer number `layer`, k and v of the key head it
// reads, o its output before o_proj, the model's H query and Hkv key
// heads; null when the answer has none.
export function checkpointProjectionsOf(body) {
	const p = body.projections?.[0];
	if (!p || body.layers?.length !== 1 || body.heads?.length !== 1) return null;
	const s = body.shape;
	const o = body.head_outputs?.[0] ? toNumbers(body.head_outputs[0]) : null;
	return { q: toNumbers(p.q), k: toNumbers(p.k), v: toNumbers(p.v), o, layer: body.layers[0], head: body.heads[0], H: s.num_heads, Hkv: s.num_kv_heads };
}

// A checkpoint's q, k and v arrived (p, or null: note says why), or are
// asked for (both null, view.projectionsAsked says of which head).
export function setProjections(p, note) {
	view.projections = p;
	view.projectionsNote = note;
	if (drawn) drawProjections();
}

// The head drawn large as {layer (its number), head}.
export function drawnLarge() {
	return { layer: view.layerIds[view.selected.layer], head: view.selected.head };
}

// Which of p's heads the panel draws: {h, g, H, Hkv, layer, qi, ki}, query
// head h (p.q[qi]) reading key head g (p.k[ki], p.v[ki]) of H and Hkv, in
// the layer numbered `layer` (null: a one-layer model); null when p is a
// checkpoint's of another head than the one drawn large.
function projectedHead(p) {
	const keyHead = (h, H, Hkv) => Math.floor(h / (H / Hkv)); // the key head query head h reads (GQA)
	if (p.head === undefined) {
		const H = p.q.length;
		const Hkv = p.k.length;
		const h = Math.min(view.selected.head, H - 1);
		const g = keyHead(h, H, Hkv);
		return { h, g, H, Hkv, layer: null, qi: h, ki: g };
	}
	const at = drawnLarge();
	if (p.layer !== at.layer || p.head !== at.head) return null;
	return { h: p.head, g: keyHead(p.head, p.H, p.Hkv), H: p.H, Hkv: p.Hkv, layer: p.layer, qi: 0, ki: 0 };
}

// What q's rows are after the positional encoding drawn.
const PROJECTION_POSITIONAL = {
	sinusoidal: ", from the input with the sinusoidal encoding added",
	rope: ", already rotated by RoPE for its position",
};

// The three sentences, English with its Korean line, for query head h
// reading key head g of Hkv (H query heads), D dimensions a head.
function projectionNotes(h, g, H, Hkv, D, positional) {
	const root = Number.isInteger(Math.sqrt(D)) ? ` = q_i · k_j / ${Math.sqrt(D)}` : "";
	const shared = H / Hkv;
	return {
		q: [
			`Row i is query i's vector in head ${h} (D = ${D} numbers${PROJECTION_POSITIONAL[positional] ?? ""}): its score for key j, before any mask or ALiBi bias, is q_i · k_j / √${D}${root}.`,
			`각 행은 그 토큰의 쿼리 벡터이고, 점수는 q_i · k_j / √${D} 입니다.`,
		],
		k: shared > 1
			? [`Row j is key j's vector in key head ${g}: ${H} query heads share ${Hkv} key heads (grouped-query attention), query head h reads key head ⌊h / ${shared}⌋, so head ${h} reads ${g}.`, `쿼리 head ${h}는 키 head ${g}를 읽습니다.`]
			: [`Row j is key j's vector in head ${g}: each query head has its own key head, of the same number.`, `각 행은 그 토큰의 키 벡터입니다.`],
		v: [
			`Row j is what key j passes on: query i's output in this head is Σ_j w_ij v_j, the weights' mix of these rows.`,
			`출력은 가중치로 이 행들을 섞은 것입니다.`,
		],
		o: [
			`Row i is query i's output in head ${h}: Σ_j w_ij v_j, the weights times v. Every head's row side by side (${H} × ${D} numbers) is what W_O turns into the layer's output.`,
			`각 행은 이 head의 출력(가중치 × v)입니다. 모든 head의 출력을 이어 붙이면(Head 합치기) W_O가 최종 출력을 만듭니다.`,
		],
	};
}

// The panel's words instead of figures: why q, k and v are not shown, that
// they are on their way (a checkpoint's), or nothing (the panel hidden:
// not asked for, past PROJECTIONS_MAX_L).
function projectionsWait() {
	if (view.projectionsNote !== null) return `Not shown: ${view.projectionsNote}.`;
	const asked = view.projectionsAsked;
	const at = drawnLarge();
	if (asked !== null && asked.layer === at.layer && asked.head === at.head) return `Asking for the q, k and v of layer ${at.layer}, head ${at.head}…`;
	return null;
}

// The head shown large's queries, keys and values (the answer's
// projections, or for a checkpoint those app.js asked for of that head
// alone), or the panel hidden when there are none. Refused (app.js asked
// again without, or the checkpoint's request failed), the panel says why.
function drawProjections() {
	const p = view.projections;
	const at = p === null ? null : projectedHead(p);
	const panel = $("projections-panel");
	if (at === null) {
		const why = projectionsWait();
		panel.hidden = why === null;
		$("proj-type").textContent = "";
		$("projections").replaceChildren(...(why === null ? [] : [el("p", { class: "note", text: why })]));
		$("proj-legend").replaceChildren();
		return;
	}
	panel.hidden = false;
	const { h, g, H, Hkv, layer } = at;
	const [q, k, v] = [p.q[at.qi], p.k[at.ki], p.v[at.ki]];
	const D = q[0]?.length ?? 0;
	const dims = Array.from({ length: D }, (_, c) => String(c));
	// a checkpoint's q is rotated when its positions are RoPE (the Llama family)
	const positional = layer === null ? drawn.req.positional : view.positions?.type;
	const notes = projectionNotes(h, g, H, Hkv, D, positional);
	// q and k on one scale, as their dot product is the score; v on its own
	const qk = absMax([...q, ...k]);
	const top = absMax(v);
	const base = { keyTokens: dims, lang: view.lang, kind: "values", ramp: DIVERGING, numbers: $("numbers").checked, hidden: null };
	const qCtx = { ...base, queryTokens: view.queryTokens, lo: -qk, hi: qk, axes: ["queries", "dimensions"] };
	const kCtx = { ...base, queryTokens: view.keyTokens, lo: -qk, hi: qk, axes: ["keys", "dimensions"] };
	const vCtx = { ...kCtx, lo: -top, hi: top };
	const oCtx = { ...qCtx, lo: -top, hi: top }; // a mix of v's rows: v's scale
	const where = layer === null ? "" : `layer ${layer} · `;
	$("proj-type").textContent = `${where}head ${h}` + (Hkv < H ? ` · key head ${g} of ${Hkv}` : "") + ` · D ${D}`;
	$("proj-legend").replaceChildren(
		el("span", { class: "legend-title", text: "q and k" }),
		scaleBar(-qk, qk, DIVERGING),
		el("span", { class: "legend-title", text: p.o ? "v and w · v" : "v" }),
		scaleBar(-top, top, DIVERGING),
		el("span", { class: "axes", text: `rows: token (q${p.o ? " and w · v" : ""}: queries, k and v: keys) · columns: the head's dimensions` }),
	);
	const kvName = Hkv < H ? `key head ${g}` : `head ${g}`;
	const ofHead = (fig, n) => {
		fig.dataset.head = String(n); // the head whose numbers it draws
		return fig;
	};
	const figs = [
		ofHead(valuesFigure("proj", "q", q, `Queries q · ${where}head ${h}`, qCtx, notes.q), h),
		ofHead(valuesFigure("proj", "k", k, `Keys k · ${where}${kvName}`, kCtx, notes.k), g),
		ofHead(valuesFigure("proj", "v", v, `Values v · ${where}${kvName}`, vCtx, notes.v), g),
	];
	if (p.o) figs.push(ofHead(valuesFigure("proj", "o", p.o[at.qi], `Head output w · v · ${where}head ${h}`, oCtx, notes.o), h));
	if (layer !== null) for (const f of figs) f.dataset.layer = String(layer);
	$("projections").replaceChildren(...figs);
}
