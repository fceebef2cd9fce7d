// app.js: attnd's attention viewer. Sends the form to POST /v1/attention and
// draws one heatmap per head (SVG small multiples), the mean over heads, and
// for each query word the key it attends to most, printed as the seeds print
// it ("나는 → 맛있는에 주목 (56.3%)"). No build step, no dependencies.
//
// Shapes (as the API writes them, outermost first): weights [H, Lq, Lk] for
// one sequence, [B, H, Lq, Lk] for a batch (item 0 is drawn); rows are the
// queries, columns the keys, and every row sums to 1 (0 where masked).
//
// What the page drew is readable without pixels, for tests and the curious:
//   window.attnd = {state, renders, lastRequest, lastResponse, lastError,
//                   timing, queryTokens, keyTokens, heads: [H][Lq][Lk], mean}
// and each heatmap's <figure> carries data-head ("mean" for the mean),
// data-weights (JSON [Lq][Lk]), data-query-tokens and data-key-tokens.

const DEBOUNCE_MS = 250;
const SVG_NS = "http://www.w3.org/2000/svg";
const INLINE = "@inline";
const FONT = '12px system-ui, -apple-system, "Segoe UI", "Noto Sans KR", "NanumGothic", sans-serif';

// ColorBrewer "Blues" (9 classes), light to dark: more attention, darker.
const RAMP = ["#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"];

// Which control an error's JSON pointer is about (the first prefix wins).
const POINTER_FIELDS = [
	["/model/d_model", "d_model"],
	["/model/num_heads", "num_heads"],
	["/model/num_kv_heads", "num_kv_heads"],
	["/model/seed", "seed"],
	["/model/vocab_size", "vocab_size"],
	["/model", "model"],
	["/text", "text"],
	["/embeddings", "embeddings"],
	["/tokens", "text"],
	["/mask/window", "window"],
	["/mask", "mask"],
	["/positional", "positional"],
	["/layers", "layer"],
];

const $ = (id) => document.getElementById(id);

const view = {
	state: "idle", // idle | loading | ok | error
	renders: 0, // successful draws so far
	lastRequest: null,
	lastResponse: null,
	lastError: null, // {status, code, message, pointer} as the API worded it
	timing: [], // Server-Timing entries: {name, dur}
	queryTokens: [],
	keyTokens: [],
	heads: [],
	mean: [],
};
window.attnd = view;

let models = []; // GET /v1/models
let seq = 0; // the latest request; older answers are dropped
let inflight = null;
let timer = 0;
let drawn = null; // what render() drew, to redraw on a view-only change
const INLINE_FIELDS = ["d_model", "num_heads", "num_kv_heads", "seed", "vocab_size"];
let inlineValues = null; // the inline settings while a named model is shown

// ---- small helpers ---------------------------------------------------------

function el(tag, attrs = {}, ...children) {
	const node = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs)) {
		if (k === "class") node.className = v;
		else if (k === "text") node.textContent = v;
		else node.setAttribute(k, v);
	}
	for (const c of children) node.append(c);
	return node;
}

function svg(tag, attrs = {}) {
	const node = document.createElementNS(SVG_NS, tag);
	for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
	return node;
}

function percent(w) {
	return `${(w * 100).toFixed(1)}%`;
}

function shapeOf(x) {
	const dims = [];
	while (Array.isArray(x)) {
		dims.push(x.length);
		x = x[0];
	}
	return dims;
}

function argmax(row) {
	let best = 0;
	for (let j = 1; j < row.length; j++) if (row[j] > row[best]) best = j;
	return best;
}

// A ColorBrewer ramp colour for t in [0, 1], interpolated in RGB.
function colour(t) {
	t = Math.min(1, Math.max(0, t)) * (RAMP.length - 1);
	const i = Math.min(RAMP.length - 2, Math.floor(t));
	const f = t - i;
	const a = parseInt(RAMP[i].slice(1), 16);
	const b = parseInt(RAMP[i + 1].slice(1), 16);
	const mix = (s) => Math.round(((a >> s) & 255) * (1 - f) + ((b >> s) & 255) * f);
	return `rgb(${mix(16)}, ${mix(8)}, ${mix(0)})`;
}

let measureCtx = null;
function textWidth(s) {
	measureCtx ??= document.createElement("canvas").getContext("2d");
	measureCtx.font = FONT;
	return measureCtx.measureText(s).width;
}

function shorten(s, max = 10) {
	const chars = [...s];
	return chars.length > max ? chars.slice(0, max - 1).join("") + "…" : s;
}

// "parse;dur=0.020, queue;dur=0.010" -> [{name: "parse", dur: 0.02}, ...]
function parseServerTiming(header) {
	if (!header) return [];
	return header
		.split(",")
		.map((part) => part.trim())
		.filter(Boolean)
		.map((part) => {
			const [name, ...params] = part.split(";");
			const entry = { name: name.trim() };
			for (const p of params) {
				const [k, v = ""] = p.split("=");
				if (k.trim() === "dur") entry.dur = Number(v);
				if (k.trim() === "desc") entry.desc = v.trim().replace(/^"|"$/g, "");
			}
			return entry;
		});
}

// ---- reading the form --------------------------------------------------------

class ViewerError extends Error {
	constructor(message, pointer) {
		super(message);
		this.pointer = pointer;
	}
}

function inputKind() {
	return document.querySelector('input[name="input"]:checked').value;
}

// A number field's value, or undefined when empty (the API then says what it
// needs or uses its default).
function numberField(id) {
	const raw = $(id).value.trim();
	return raw === "" ? undefined : Number(raw);
}

function parseEmbeddings() {
	const raw = $("embeddings").value.trim();
	if (raw === "") throw new ViewerError("paste embeddings as JSON, e.g. [[1, 0], [0, 1]]", "/embeddings");
	try {
		return JSON.parse(raw);
	} catch (e) {
		throw new ViewerError(`the embeddings are not valid JSON: ${e.message}`, "/embeddings");
	}
}

function maskValue() {
	const kind = $("mask").value;
	const window = numberField("window");
	if (kind === "window-causal") return { causal: true, window };
	if (kind === "window") return { window };
	return kind; // "none" | "causal"
}

// The selected model when it is a whole checkpoint (--model NAME=DIR), else null.
function checkpointModel() {
	const m = models.find((x) => x.name === $("model").value);
	return m?.kind === "checkpoint" ? m : null;
}

// A checkpoint runs every layer with its own masks and positions; the viewer asks
// for one layer's attention and draws it as a layer's weights.
function buildCheckpointRequest(m) {
	if (inputKind() !== "text") throw new ViewerError(`${m.name} is a whole checkpoint: it takes text, not embeddings`, "/embeddings");
	const layer = numberField("layer") ?? 0;
	if (!Number.isInteger(layer) || layer < 0 || layer >= m.num_layers) throw new ViewerError(`choose a layer from 0 to ${m.num_layers - 1}`, "/layers");
	return { model: m.name, text: $("text").value, layers: [layer], weights: "per_head" };
}

function buildRequest() {
	const req = {};
	const ckpt = checkpointModel();
	if (ckpt) return buildCheckpointRequest(ckpt);
	if ($("model").value === INLINE) {
		const m = {};
		for (const k of ["d_model", "num_heads", "num_kv_heads", "seed", "vocab_size"]) {
			const v = numberField(k);
			if (v !== undefined) m[k] = v;
		}
		req.model = m;
	} else {
		req.model = $("model").value;
	}
	if (inputKind() === "text") req.text = $("text").value;
	else req.embeddings = parseEmbeddings();
	req.mask = maskValue();
	req.positional = $("positional").value;
	req.weights = "per_head";
	return req;
}

function authHeaders() {
	const key = $("apikey").value.trim();
	return key ? { Authorization: `Bearer ${key}` } : {};
}

// ---- talking to attnd -------------------------------------------------------------

function apiError(status, body) {
	const e = body && body.error;
	const err = new ViewerError(e?.message ?? `HTTP ${status}`, e?.pointer);
	err.status = status;
	err.code = e?.code ?? "http_error";
	return err;
}

async function loadModels() {
	try {
		const res = await fetch("/v1/models", { headers: authHeaders() });
		const body = await res.json();
		if (!res.ok) throw apiError(res.status, body);
		models = body.models ?? [];
	} catch (e) {
		showError(e);
		return;
	}
	const select = $("model");
	const keep = select.value;
	select.replaceChildren();
	for (const m of models) {
		const label = `${m.name} (d_model ${m.d_model}, ${m.num_heads} heads${m.vocab_size ? "" : ", no vocabulary"})`;
		select.append(el("option", { value: m.name, text: label }));
	}
	select.append(el("option", { value: INLINE, text: "inline: a seeded model set below" }));
	const names = models.map((m) => m.name);
	if (names.includes(keep) || keep === INLINE) select.value = keep;
	else if (names.includes("tiny")) select.value = "tiny";
	else select.value = models.find((m) => m.default)?.name ?? INLINE;
	syncModelFields();
}

async function run() {
	const my = ++seq;
	clearTimeout(timer);
	if (inflight) inflight.abort();
	let req;
	try {
		req = buildRequest();
	} catch (e) {
		showError(e);
		return;
	}
	const ctrl = new AbortController();
	inflight = ctrl;
	setState("loading");
	view.lastRequest = req;
	showRequest(req);
	const t0 = performance.now();
	try {
		const res = await fetch("/v1/attention", {
			method: "POST",
			headers: { "Content-Type": "application/json", ...authHeaders() },
			body: JSON.stringify(req),
			signal: ctrl.signal,
		});
		const text = await res.text();
		if (my !== seq) return;
		let body;
		try {
			body = JSON.parse(text);
		} catch {
			throw new ViewerError(`HTTP ${res.status}: the answer is not JSON`);
		}
		if (!res.ok) throw apiError(res.status, body);
		if (body.attentions) body.weights = body.attentions[0]; // the one layer asked for
		const timing = parseServerTiming(res.headers.get("Server-Timing"));
		const meta = { ms: performance.now() - t0, requestId: res.headers.get("X-Request-Id") };
		render(req, body, timing, meta);
	} catch (e) {
		if (e.name === "AbortError" || my !== seq) return;
		showError(e);
	} finally {
		if (inflight === ctrl) inflight = null;
	}
}

function schedule(delay = DEBOUNCE_MS) {
	clearTimeout(timer);
	timer = setTimeout(run, delay);
}

// ---- states and errors ---------------------------------------------------------

function setState(state) {
	view.state = state;
	$("results").dataset.state = state;
	$("results").setAttribute("aria-busy", state === "loading" ? "true" : "false");
}

function clearInvalid() {
	for (const node of document.querySelectorAll("[aria-invalid]")) {
		node.removeAttribute("aria-invalid");
		node.removeAttribute("aria-errormessage");
	}
}

// Shows an error as the API worded it: status and code, message, pointer.
function showError(e) {
	const box = $("error");
	view.lastError = {
		status: e.status ?? null,
		code: e.code ?? "viewer",
		message: e.message,
		pointer: e.pointer ?? null,
	};
	clearInvalid();
	const head = e.status ? `${e.status} ${e.code}` : "Cannot send this";
	const parts = [el("strong", { class: "code", text: head }), el("span", { class: "message", text: e.message })];
	if (e.pointer) parts.push(el("span", { class: "pointer" }, "at ", el("code", { text: e.pointer })));
	box.replaceChildren(...parts);
	box.hidden = false;
	const field = e.pointer && POINTER_FIELDS.find(([p]) => e.pointer === p || e.pointer.startsWith(p + "/"));
	if (field) {
		$(field[1]).setAttribute("aria-invalid", "true");
		$(field[1]).setAttribute("aria-errormessage", "error");
	}
	if (e.status === 401) $("conn").open = true;
	setState("error");
}

function hideError() {
	$("error").hidden = true;
	$("error").replaceChildren();
	view.lastError = null;
	clearInvalid();
}

function showRequest(req) {
	const json = JSON.stringify(req);
	const url = new URL("/v1/attention", location.href).href;
	$("request").textContent =
		`curl -s ${url} -H 'Content-Type: application/json' \\\n  -d '${json.replaceAll("'", "'\\''")}'`;
}

// ---- drawing ---------------------------------------------------------------

function toNumbers(m) {
	return m.map((row) => row.map(Number));
}

function meanOver(heads) {
	const H = heads.length;
	return heads[0].map((row, i) => row.map((_, j) => heads.reduce((s, h) => s + h[i][j], 0) / H));
}

function render(req, body, timing, meta) {
	let weights = body.weights;
	let tokens = body.tokens;
	const batched = shapeOf(weights).length === 4;
	if (batched) {
		weights = weights[0];
		tokens = tokens?.[0];
	}
	const heads = weights.map(toNumbers);
	const Lq = heads[0].length;
	const Lk = heads[0][0]?.length ?? 0;
	const label = (i) => (tokens ? String(tokens[i]) : `#${i}`);
	view.lastResponse = body;
	view.timing = timing;
	view.heads = heads;
	view.mean = meanOver(heads);
	view.queryTokens = Array.from({ length: Lq }, (_, i) => label(i));
	view.keyTokens = Array.from({ length: Lk }, (_, j) => label(j));
	drawn = { req, body, timing, meta, batched };
	hideError();
	draw();
	view.renders++;
	setState("ok");
}

// Draws view.heads with the view settings (no request).
function draw() {
	if (!drawn) return;
	const { body, timing, meta, batched } = drawn;
	const unit = $("scale").value === "unit";
	let max = 0;
	for (const h of view.heads) for (const row of h) for (const v of row) max = Math.max(max, v);
	const top = unit || max <= 0 ? 1 : max;
	drawFacts(body, timing, meta, batched);
	drawLegend(top);
	const s = body.shape;
	const group = s.num_heads / s.num_kv_heads;
	const cards = view.heads.map((w, h) => {
		const sub = `d_k ${s.head_dim}` + (group > 1 ? ` · kv head ${Math.floor(h / group) + 1}` : "");
		return card(w, { id: h, title: `Head ${h + 1}`, sub, top });
	});
	cards.push(card(view.mean, { id: "mean", title: "Mean over heads", sub: `${view.heads.length} heads`, top }));
	$("heads").replaceChildren(...cards);
	$("heads").classList.toggle("with-tables", $("tables").checked);
}

function drawFacts(body, timing, meta, batched) {
	const s = body.shape;
	const facts = [
		["Tokens", `${s.query_length}`],
		["Output", `[${shapeOf(body.output).join(", ")}]`, "the layer's output tensor", batched ? "" : "= the input's shape (입력과 출력 크기 동일)"],
		["Weights", `[${shapeOf(body.weights).join(", ")}]`, batched ? "[batch, heads, queries, keys]" : "[heads, queries, keys]"],
		["Model", `${body.model} · d_model ${s.d_model} · ${s.num_heads} × d_k ${s.head_dim}` + (s.num_kv_heads !== s.num_heads ? ` · ${s.num_kv_heads} kv heads` : "")],
	];
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

function drawLegend(top) {
	const stops = RAMP.map((c, i) => `${c} ${((i / (RAMP.length - 1)) * 100).toFixed(1)}%`).join(", ");
	const bar = el("span", { class: "bar", role: "presentation" });
	bar.style.background = `linear-gradient(to right, ${stops})`;
	const ticks = el("span", { class: "ticks" }, el("span", { text: "0" }), el("span", { text: (top / 2).toFixed(2) }), el("span", { text: top.toFixed(2) }));
	$("legend").replaceChildren(
		el("span", { class: "legend-title", text: "Attention weight" }),
		el("span", { class: "scale" }, bar, ticks),
		el("span", { class: "masked" }, el("span", { class: "swatch", role: "presentation" }), " 0 (masked)"),
		el("span", { class: "axes", text: "rows: query (who looks) · columns: key (looked at) · outlined: each row's largest" }),
	);
}

function cellSize(L) {
	if (L <= 6) return 44;
	if (L <= 10) return 32;
	if (L <= 16) return 24;
	if (L <= 32) return 16;
	return 10;
}

// One small multiple: caption, heatmap, the seeds' "→ …에 주목" lines, a table.
function card(w, { id, title, sub, top }) {
	const fig = el("figure", { class: id === "mean" ? "head mean" : "head" });
	fig.dataset.head = String(id);
	fig.dataset.weights = JSON.stringify(w);
	fig.dataset.queryTokens = JSON.stringify(view.queryTokens);
	fig.dataset.keyTokens = JSON.stringify(view.keyTokens);
	const cap = el("figcaption", {}, el("strong", { text: title }), el("span", { text: sub }));
	fig.append(cap, heatmap(w, title, top), topList(w), table(w, title));
	return fig;
}

function heatmap(w, title, top) {
	const qTok = view.queryTokens;
	const kTok = view.keyTokens;
	const Lq = w.length;
	const Lk = w[0]?.length ?? 0;
	const cell = cellSize(Math.max(Lq, Lk));
	const pad = 6;
	const qLabels = qTok.map((t) => shorten(t));
	const kLabels = kTok.map((t) => shorten(t));
	const left = Math.ceil(Math.max(...qLabels.map(textWidth), 10)) + pad * 2;
	const kWidest = Math.max(...kLabels.map(textWidth), 10);
	const rotate = kWidest > cell - 4;
	const head = rotate ? Math.ceil(kWidest * 0.72) + 18 : 22;
	const width = left + Lk * cell + (rotate ? Math.ceil(kWidest * 0.5) : pad);
	const height = head + Lq * cell + 2;
	const numbers = $("numbers").checked && cell >= 40;

	const root = svg("svg", {
		class: "map",
		viewBox: `0 0 ${width} ${height}`,
		width,
		height,
		tabindex: 0,
		role: "img",
		"aria-label": `${title}: ${Lq} queries by ${Lk} keys. Arrow keys move between cells.`,
	});
	for (let j = 0; j < Lk; j++) {
		const x = left + j * cell + cell / 2;
		const t = svg("text", rotate
			? { class: "klabel", x: 0, y: 0, transform: `translate(${x + 3} ${head - 6}) rotate(-45)`, "text-anchor": "start" }
			: { class: "klabel", x, y: head - 7, "text-anchor": "middle" });
		t.textContent = kLabels[j];
		t.append(titleOf(kTok[j]));
		root.append(t);
	}
	for (let i = 0; i < Lq; i++) {
		const t = svg("text", { class: "qlabel", x: left - pad, y: head + i * cell + cell / 2, "text-anchor": "end", "dominant-baseline": "central" });
		t.textContent = qLabels[i];
		t.append(titleOf(qTok[i]));
		root.append(t);
	}
	const cells = svg("g", { class: "cells" });
	for (let i = 0; i < Lq; i++) {
		const best = argmax(w[i]);
		for (let j = 0; j < Lk; j++) {
			const v = w[i][j];
			const r = svg("rect", {
				x: left + j * cell,
				y: head + i * cell,
				width: cell - 1,
				height: cell - 1,
				fill: v === 0 ? "url(#attnd-masked)" : colour(v / top),
				"data-q": i,
				"data-k": j,
			});
			cells.append(r);
			if (numbers && v !== 0) {
				const t = svg("text", {
					class: v / top > 0.55 ? "num light" : "num",
					x: left + j * cell + (cell - 1) / 2,
					y: head + i * cell + (cell - 1) / 2,
					"text-anchor": "middle",
					"dominant-baseline": "central",
				});
				t.textContent = v === 0 ? "0" : v.toFixed(2);
				cells.append(t);
			}
		}
		if (w[i][best] > 0) {
			cells.append(svg("rect", { class: "best", x: left + best * cell + 1, y: head + i * cell + 1, width: cell - 3, height: cell - 3 }));
		}
	}
	const cursor = svg("rect", { class: "cursor", x: 0, y: 0, width: cell - 1, height: cell - 1, visibility: "hidden" });
	root.append(cells, cursor);
	const geom = { left, head, cell, Lq, Lk, title, w };
	wireHeatmap(root, cursor, geom);
	return root;
}

function titleOf(text) {
	const t = svg("title");
	t.textContent = text;
	return t;
}

// The seeds' lines: for each query, the key it attends to most.
function topList(w) {
	const list = el("ol", { class: "toplist", "aria-label": "Which word each word attends to most" });
	for (let i = 0; i < w.length; i++) {
		const j = argmax(w[i]);
		const q = view.queryTokens[i];
		const text = w[i][j] > 0 ? `${q} → ${view.keyTokens[j]}에 주목 (${percent(w[i][j])})` : `${q} → (보이는 단어 없음)`;
		const li = el("li", { text });
		if (w[i][j] > 0) li.replaceChildren(`${q} → `, el("b", { text: view.keyTokens[j] }), `에 주목 (${percent(w[i][j])})`);
		li.dataset.query = String(i);
		li.dataset.key = String(j);
		li.dataset.weight = String(w[i][j]);
		list.append(li);
	}
	return list;
}

// The keyboard- and screen-reader-friendly twin of a heatmap.
function table(w, title) {
	const t = el("table", { class: "wtable" });
	t.append(el("caption", { text: `${title}: weights (rows: query, columns: key)` }));
	const headRow = el("tr", {}, el("th", { scope: "col", text: "query \\ key" }));
	for (const k of view.keyTokens) headRow.append(el("th", { scope: "col", text: k }));
	t.append(el("thead", {}, headRow));
	const tbody = el("tbody");
	w.forEach((row, i) => {
		const tr = el("tr", {}, el("th", { scope: "row", text: view.queryTokens[i] }));
		for (const v of row) tr.append(el("td", { text: v.toFixed(3) }));
		tbody.append(tr);
	});
	t.append(tbody);
	return t;
}

// ---- pointer and keyboard --------------------------------------------------------

function describe(geom, i, j) {
	const v = geom.w[i][j];
	return { head: geom.title, text: `${view.queryTokens[i]} → ${view.keyTokens[j]}`, value: `${v.toFixed(4)} (${percent(v)})` };
}

function showTip(d, x, y) {
	const tip = $("tip");
	tip.replaceChildren(el("span", { class: "tip-head", text: d.head }), el("span", { text: d.text }), el("strong", { text: d.value }));
	tip.hidden = false;
	const r = tip.getBoundingClientRect();
	const left = Math.min(window.innerWidth - r.width - 8, Math.max(8, x + 14));
	const topY = y + 16 + r.height > window.innerHeight ? y - r.height - 12 : y + 16;
	tip.style.left = `${left}px`;
	tip.style.top = `${Math.max(8, topY)}px`;
}

function hideTip() {
	$("tip").hidden = true;
}

function readout(d) {
	$("readout").textContent = `${d.head}: ${d.text} = ${d.value}`;
}

function wireHeatmap(root, cursor, geom) {
	let at = null; // [i, j] of the keyboard cursor
	const place = (i, j) => {
		at = [i, j];
		cursor.setAttribute("x", geom.left + j * geom.cell);
		cursor.setAttribute("y", geom.head + i * geom.cell);
		cursor.setAttribute("visibility", "visible");
		const d = describe(geom, i, j);
		readout(d);
		const box = cursor.getBoundingClientRect();
		showTip(d, box.right - 8, box.bottom - 8);
	};
	const point = (ev) => {
		const r = ev.target.closest?.("rect[data-q]");
		if (!r) return hideTip();
		const d = describe(geom, Number(r.dataset.q), Number(r.dataset.k));
		showTip(d, ev.clientX, ev.clientY);
		readout(d);
	};
	root.addEventListener("pointermove", point);
	root.addEventListener("pointerdown", point); // a tap on a touch screen
	root.addEventListener("pointerleave", hideTip);
	root.addEventListener("focus", () => place(...(at ?? [0, 0])));
	root.addEventListener("blur", () => {
		cursor.setAttribute("visibility", "hidden");
		hideTip();
	});
	root.addEventListener("keydown", (ev) => {
		if (!at) return;
		let [i, j] = at;
		const moves = {
			ArrowUp: () => (i = Math.max(0, i - 1)),
			ArrowDown: () => (i = Math.min(geom.Lq - 1, i + 1)),
			ArrowLeft: () => (j = Math.max(0, j - 1)),
			ArrowRight: () => (j = Math.min(geom.Lk - 1, j + 1)),
			Home: () => (j = 0),
			End: () => (j = geom.Lk - 1),
		};
		if (!moves[ev.key]) return;
		ev.preventDefault();
		moves[ev.key]();
		place(i, j);
	});
}

// ---- controls ----------------------------------------------------------------

// Named models show their own settings, read-only; inline ones are editable
// and come back as they were when the learner returns to them.
function syncModelFields() {
	const inline = $("model").value === INLINE;
	const m = models.find((x) => x.name === $("model").value);
	if (!inline && inlineValues === null) inlineValues = Object.fromEntries(INLINE_FIELDS.map((id) => [id, $(id).value]));
	if (inline && inlineValues !== null) {
		for (const id of INLINE_FIELDS) $(id).value = inlineValues[id];
		inlineValues = null;
	}
	for (const id of INLINE_FIELDS) $(id).disabled = !inline;
	if (!inline && m) {
		$("d_model").value = m.d_model;
		$("num_heads").value = m.num_heads;
		$("num_kv_heads").value = m.num_kv_heads;
		$("seed").value = m.source?.startsWith("seed:") ? m.source.slice(5) : "";
		$("vocab_size").value = m.vocab_size;
	}
	syncCheckpoint(m);
	$("model-note").textContent = inline
		? "A model made for each request from the seed: the same seed gives the same weights."
		: m
			? `Loaded model (${m.source}); choose “inline” to change its shape.`
			: "";
	syncHeadDim();
}

// A checkpoint: the layer to show; its masks and positions are its own.
function syncCheckpoint(m) {
	const ckpt = m?.kind === "checkpoint";
	$("layer-box").hidden = !ckpt;
	$("mask").disabled = ckpt;
	$("positional").disabled = ckpt;
	if (!ckpt) return;
	$("layer").max = m.num_layers - 1;
	if (Number($("layer").value) > m.num_layers - 1) $("layer").value = m.num_layers - 1;
	$("layer-note").textContent = `${m.family}: ${m.num_layers} layers, ${m.causal ? "causal" : "bidirectional"}, its own positions`;
}

function syncHeadDim() {
	const E = numberField("d_model");
	const H = numberField("num_heads");
	const note = $("head-dim");
	if (!E || !H) {
		note.textContent = "";
		return;
	}
	note.textContent = E % H === 0 ? `d_k = d_model / heads = ${E} / ${H} = ${E / H}` : `${E} / ${H} is not a whole number of dimensions per head`;
}

function syncInputKind() {
	const text = inputKind() === "text";
	$("text-box").hidden = !text;
	$("emb-box").hidden = text;
}

function syncMask() {
	$("window-box").hidden = !$("mask").value.startsWith("window");
}

function preset(n) {
	const select = $("model");
	if (select.value !== INLINE) {
		select.value = INLINE;
		syncModelFields();
	}
	const E = numberField("d_model");
	if (!E || E % n !== 0) $("d_model").value = 64;
	$("num_heads").value = n;
	$("num_kv_heads").value = "";
	if (!numberField("vocab_size")) $("vocab_size").value = 1000;
	syncHeadDim();
	run();
}

// A defs-only SVG for the hatch that marks masked (exactly 0) cells.
function addPatterns() {
	const defs = svg("svg", { width: 0, height: 0, "aria-hidden": "true", class: "defs" });
	const p = svg("pattern", { id: "attnd-masked", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" });
	p.append(svg("rect", { width: 6, height: 6, fill: "#f3f4f6" }), svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#c8ccd3", "stroke-width": 2 }));
	const d = svg("defs");
	d.append(p);
	defs.append(d);
	document.body.append(defs);
}

function wire() {
	const form = $("controls");
	form.addEventListener("submit", (ev) => {
		ev.preventDefault();
		run();
	});
	form.addEventListener("input", (ev) => {
		const id = ev.target.id;
		if (["scale", "numbers", "tables"].includes(id)) return draw();
		if (id === "apikey") return;
		if (ev.target.name === "input") syncInputKind();
		if (id === "model") syncModelFields();
		if (id === "mask") syncMask();
		if (id === "d_model" || id === "num_heads") syncHeadDim();
		schedule(ev.target.tagName === "SELECT" || ev.target.type === "radio" ? 0 : DEBOUNCE_MS);
	});
	$("apikey").addEventListener("change", async () => {
		await loadModels();
		run();
	});
	for (const b of document.querySelectorAll("button[data-heads]")) {
		b.addEventListener("click", () => preset(Number(b.dataset.heads)));
	}
	window.addEventListener("scroll", hideTip, { passive: true });
}

async function main() {
	addPatterns();
	wire();
	syncInputKind();
	syncMask();
	await loadModels();
	syncModelFields();
	run();
}

main();
