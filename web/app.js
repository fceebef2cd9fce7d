// app.js: attnd's attention viewer, the page's entry point: reads the form,
// sends it to POST /v1/attention (a checkpoint: every layer at once), keeps
// the latest answer, and wires the controls. Drawing is render.js's (with
// grid.js, heatmap.js, headview.js), "Find heads" scoring findheads.js's.
// No build step, no dependencies; every file is same-origin (the CSP says so).
//
// What the page drew is readable without pixels (state.js): window.attnd.
// Each small heatmap's <figure class="head"> carries data-head ("mean" for the
// mean), data-weights (JSON [Lq][Lk]), data-query-tokens and data-key-tokens.
//
// The page opens on the model named in ?model=, else `mini` (the trained
// built-in), else the first checkpoint, else `base`; ?text= sets the sentence.
// Each drawing writes its model and text back there (addressOf), with the
// other controls that decide what is drawn (KEPT) and the view choices
// (VIEW_KEPT: values, the head large and the one compared), read again at load.

import { copyLength, looksSpecial, randomIds, scoreModel } from "./findheads.js";
import { hideTip } from "./heatmap.js";
import { PROJECTIONS_MAX_L, askProjections } from "./qkv.js";
import { draw, drawBadge, highlightToken, onPicked, render, scoresOf, setScores, weightsLabel } from "./render.js";
import { view } from "./state.js";
import { $, el, isKorean, parseServerTiming, specKey, toNumbers } from "./util.js";

const DEBOUNCE_MS = 250;
const INLINE = "@inline";
const EXAMPLES = {
	en: "The animal didn't cross the street because it was too tired",
	ko: "나는 맛있는 사과를 먹었다",
};

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
	["/positions", "positional"],
	["/layers", "layer"],
];

let models = []; // GET /v1/models
let seq = 0; // the latest request; older answers are dropped
let inflight = null;
let timer = 0;
let scoresAsked = null; // the request whose scores were asked for
const INLINE_FIELDS = ["d_model", "num_heads", "num_kv_heads", "seed", "vocab_size"];
let inlineValues = null; // the inline settings while a named model is shown
let running = false; // Find heads is waiting for its answer
let modelsLoaded = false; // GET /v1/models has answered once (a key may be needed first)
let textKind = "sentence"; // what the text box holds: "sentence" | "ids" (takesIds)
const textKept = { sentence: "", ids: "" }; // the other kind's text, while this one is shown
// ?text=, until a model is known to say which box it fills (a sentence, or
// ids): under --api-key that is only once the key is given
let pendingText = new URLSearchParams(location.search).get("text");
// ?model= naming no model served: said under the Model field until another is chosen
let missingModel = null;
// ?head=, ?compare= and their layers (viewChoicesOf), until an answer is drawn to show them on
let pendingView = viewChoicesOf(new URLSearchParams(location.search));

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
	if (kind.startsWith("window") && window === undefined) throw new ViewerError("give the window size: a query sees the keys less than this many positions away", "/mask/window");
	if (kind === "window-causal") return { causal: true, window };
	if (kind === "window") return { window };
	return kind; // "none" | "causal"
}

// The selected model when it is a whole checkpoint (--model NAME=DIR), else null.
function checkpointModel() {
	const m = models.find((x) => x.name === $("model").value);
	return m?.kind === "checkpoint" ? m : null;
}

// A checkpoint served without a tokenizer cannot split text: the text box
// then takes its token ids.
function takesIds(m) {
	return m?.kind === "checkpoint" && !m.tokenizer;
}

// The text box's token ids ("464 5044 1422", "464, 5044"), each a whole
// number below vocab when the model gives one. A wrong id is refused here,
// at the field, so that nothing is sent: the API would only name it by its
// pointer, and a learner typing ids sees which one at once.
function parseTokenIds(vocab) {
	// the API's own list form, [5, 9, 12], pasted whole, is read too
	const pieces = $("text").value.replace(/^\s*\[|\]\s*$/g, "").split(/[\s,]+/).filter((s) => s !== "");
	if (pieces.length === 0) throw new ViewerError("type token ids: whole numbers separated by spaces or commas", "/tokens");
	const range = vocab > 0 ? `a whole number from 0 to ${vocab - 1}` : "a whole number, 0 or more";
	return pieces.map((s, i) => {
		const id = /^\d+$/.test(s) ? Number(s) : NaN;
		if (!Number.isSafeInteger(id) || (vocab > 0 && id >= vocab)) throw new ViewerError(`token ${i} (counting from 0) is "${s}": a token id of this model is ${range}`, `/tokens/${i}`);
		return id;
	});
}

// A checkpoint runs every layer with its own masks and positions; the viewer
// asks for every layer's attention, per head, and draws the layer chosen.
function buildCheckpointRequest(m) {
	const ids = takesIds(m);
	if (inputKind() !== "text") throw new ViewerError(`${m.name} is a whole checkpoint: it takes ${ids ? "token ids" : "text"}, not embeddings`, "/embeddings");
	const input = ids ? { tokens: parseTokenIds(m.vocab_size) } : { text: $("text").value };
	// a checkpoint shows its own positions (learned rows, or its RoPE): render.js drawPositions
	return { model: m.name, ...input, layers: "all", weights: "per_head", positions: true };
}

// The request's model, settings, mask and positions, without its inputs:
// what an answer is of (util.js: specKey).
function modelRequest() {
	const req = {};
	const ckpt = checkpointModel();
	if (ckpt) return { model: ckpt.name, layers: "all", weights: "per_head", positions: true };
	if ($("model").value === INLINE) {
		const m = {};
		for (const k of INLINE_FIELDS) {
			const v = numberField(k);
			if (v !== undefined) m[k] = v;
		}
		req.model = m;
	} else {
		req.model = $("model").value;
	}
	req.mask = maskValue();
	req.positional = $("positional").value;
	// sinusoidal and RoPE have an encoding to show (render.js drawPositions);
	// ALiBi adds a bias and none nothing, which the API refuses to show
	if (req.positional === "sinusoidal" || req.positional === "rope") req.positions = true;
	req.weights = "per_head";
	return req;
}

// At least as many positions as the API will make of req's input: the
// embeddings' rows (a batch's longest item), the words of a text for a
// model that splits on spaces, its UTF-8 bytes for one with a tokenizer (a
// byte-level piece is a byte or more). Infinity when it cannot tell.
function positionsBound(req) {
	if (req.embeddings !== undefined) {
		const e = req.embeddings;
		if (!Array.isArray(e)) return Infinity;
		const batch = Array.isArray(e[0]?.[0]);
		return batch ? Math.max(0, ...e.map((item) => (Array.isArray(item) ? item.length : Infinity))) : e.length;
	}
	const m = models.find((x) => x.name === req.model);
	if (m?.tokenizer) return new TextEncoder().encode(req.text).length;
	return req.text.split(/\s+/).filter((w) => w !== "").length;
}

function buildRequest() {
	const ckpt = checkpointModel();
	if (ckpt) return buildCheckpointRequest(ckpt);
	const req = modelRequest();
	if (inputKind() === "text") req.text = $("text").value;
	else req.embeddings = parseEmbeddings();
	// each head's q, k and v, and its output before the heads are joined
	// (a one-layer model's: a checkpoint's request is built above)
	if (positionsBound(req) <= PROJECTIONS_MAX_L) {
		req.projections = true;
		req.head_outputs = true;
	}
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

// The model the page opens on: ?model=NAME, else mini (the trained built-in),
// else the first checkpoint, else base, else the default.
function preferredModel(names) {
	const asked = new URLSearchParams(location.search).get("model");
	if (asked && (names.includes(asked) || asked === "inline")) return asked === "inline" ? INLINE : asked;
	if (asked) missingModel = asked;
	if (names.includes("mini")) return "mini";
	const ckpt = models.find((m) => m.kind === "checkpoint");
	if (ckpt) return ckpt.name;
	if (names.includes("base")) return "base";
	return models.find((m) => m.default)?.name ?? INLINE;
}

function modelLabel(m) {
	const shape = m.kind === "checkpoint" ? `${m.family}, ${m.num_layers} layers × ${m.num_heads} heads` : `d_model ${m.d_model}, ${m.num_heads} heads${m.vocab_size ? "" : ", no vocabulary"}`;
	const seeded = m.source?.startsWith("seed:");
	return `${m.name} (${seeded ? "random weights (untrained), " : ""}${shape})`;
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
	for (const m of models) select.append(el("option", { value: m.name, text: modelLabel(m) }));
	select.append(el("option", { value: INLINE, text: "inline: a seeded model set below, random weights (untrained)" }));
	const names = models.map((m) => m.name);
	if (modelsLoaded && (names.includes(keep) || keep === INLINE)) select.value = keep;
	else select.value = preferredModel(names);
	modelsLoaded = true;
	syncModelFields();
	applyPendingText();
}

function applyPendingText() {
	if (pendingText === null) return;
	$("text").value = pendingText;
	$("text").lang = isKorean(pendingText) ? "ko" : "en";
	pendingText = null;
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
	const address = addressOf(req); // read now: the boxes may change before the answer
	const t0 = performance.now();
	try {
		let { res, body } = await answerOf(req, ctrl.signal);
		if (my !== seq) return;
		// the positions are shown for at most 1024 query positions (422 at
		// /positions), and q, k and v may be refused as well (422 at
		// /projections): the attention is still drawn, asked again without
		// what was refused, and that panel says why it is empty
		const notes = { positions: null, projections: null };
		for (let field = refusedExtra(req, res, body); field !== null; field = refusedExtra(req, res, body)) {
			notes[field] = body.error.message;
			const rest = { ...req };
			for (const f of DROPPED_WITH[field]) delete rest[f];
			req = rest;
			view.lastRequest = req;
			showRequest(req);
			({ res, body } = await answerOf(req, ctrl.signal));
			if (my !== seq) return;
		}
		if (!res.ok) throw apiError(res.status, body);
		const timing = parseServerTiming(res.headers.get("Server-Timing"));
		const meta = { ms: performance.now() - t0, requestId: res.headers.get("X-Request-Id") };
		const m = models.find((x) => x.name === body.model) ?? null;
		hideError();
		scoresAsked = null;
		render(req, body, timing, meta, { model: m, text: typeof req.text === "string" ? req.text : "", positionsNote: notes.positions, projectionsNote: notes.projections, chosen: pendingView });
		pendingView = null;
		view.renders++;
		keepAddress(address);
		setState("ok");
		if (view.mode === "scores") askScores();
		askProjections(post);
	} catch (e) {
		if (e.name === "AbortError" || my !== seq) return;
		showError(e);
	} finally {
		if (inflight === ctrl) inflight = null;
	}
}

// What asking again without a refused extra leaves out: the heads' outputs
// are drawn beside q, k and v only, so they go with them.
const DROPPED_WITH = { positions: ["positions"], projections: ["projections", "head_outputs"] };

// Which extra the API refused, "positions" or "projections", when req asked
// for it and the answer is a 422 at its pointer; else null (each is dropped
// once asked again without, so a loop over this ends).
function refusedExtra(req, res, body) {
	if (res.status !== 422) return null;
	const field = { "/positions": "positions", "/projections": "projections" }[body.error?.pointer];
	return field !== undefined && req[field] === true ? field : null;
}

// The controls the address keeps besides ?model= and ?text=: a
// checkpoint's layer (its mask and positions are its own), else the mask
// and positional encoding asked for, and the inline model's settings.
const KEPT = ["layer", "mask", "window", "positional", ...INLINE_FIELDS];

// Longest address kept with its ?text=: a longer one (a pasted page of
// text, three times longer again percent-encoded when Korean) would pass
// what the daemon takes as a request line (--connection-memory) on reload.
const ADDRESS_MAX = 8192;

// The page's address for req, with the ?model= and ?text= it opens on read
// from it, so that a reload or a shared link draws it again; the API key is
// never in it. Embeddings are not, nor a text too long (keepAddress).
function addressOf(req) {
	const url = new URL(location.href);
	url.searchParams.set("model", typeof req.model === "string" ? req.model : "inline");
	if (inputKind() === "text") url.searchParams.set("text", $("text").value);
	else url.searchParams.delete("text");
	for (const id of KEPT) url.searchParams.delete(id);
	if (!checkpointModel()) {
		url.searchParams.set("mask", $("mask").value);
		if ($("mask").value.startsWith("window")) url.searchParams.set("window", $("window").value);
		url.searchParams.set("positional", $("positional").value);
	}
	if (typeof req.model !== "string") for (const id of INLINE_FIELDS) if ($(id).value !== "") url.searchParams.set(id, $(id).value);
	return url;
}

// url, with a checkpoint's layer as drawn, as the page's address: replaced,
// not pushed, so that drawing adds no history entry. ?text= is left out
// when the whole address, everything else in it, would pass ADDRESS_MAX.
function keepAddress(url) {
	if (view.model?.kind === "checkpoint") url.searchParams.set("layer", String(view.layerIds[view.layer]));
	keepView(url);
	if (url.href.length > ADDRESS_MAX) url.searchParams.delete("text");
	if (url.href !== location.href) history.replaceState(history.state, "", url);
}

// The KEPT controls as an address wrote them; a value no option has is left out.
function readKept() {
	const params = new URLSearchParams(location.search);
	for (const id of KEPT) {
		const v = params.get(id);
		const options = $(id).tagName === "SELECT" ? [...$(id).options].map((o) => o.value) : null;
		if (v !== null && (options === null || options.includes(v))) $(id).value = v;
	}
}

// The view choices the address keeps besides the controls of the request:
// they change what is drawn of an answer, not what is asked. "values" is
// the Values choice, "head" the head shown large and "compare" the one
// compared with it (left out when not comparing); "head-layer" and
// "compare-layer" their layer numbers, only when the answer has more than
// one layer (a one-layer model's links stay short).
const VIEW_KEPT = ["values", "head", "head-layer", "compare", "compare-layer"];

// The view choices of url as drawn: written only once something is drawn,
// so that an address's own choices wait there for the first drawing.
function keepView(url) {
	if (view.renders === 0) return;
	for (const k of VIEW_KEPT) url.searchParams.delete(k);
	const many = view.layers.length > 1;
	url.searchParams.set("values", view.mode);
	url.searchParams.set("head", String(view.selected.head));
	if (many) url.searchParams.set("head-layer", String(view.layerIds[view.selected.layer]));
	if (view.compare === null) return;
	url.searchParams.set("compare", String(view.compare.head));
	if (many) url.searchParams.set("compare-layer", String(view.layerIds[view.compare.layer]));
}

// A view choice changed (no request): the address says it.
function keepViewChoice() {
	keepAddress(new URL(location.href));
}

// The head drawn large (or the one compared) changed: the address says
// so, and a checkpoint's q, k and v of the head drawn large are asked for.
function headChosen() {
	keepViewChoice();
	askProjections(post);
}

// ?values= as an address wrote it, read at load; a value no radio has is left out.
function readValues() {
	const asked = new URLSearchParams(location.search).get("values");
	const radio = [...document.querySelectorAll('input[name="values"]')].find((r) => r.value === asked);
	if (!radio) return;
	radio.checked = true;
	view.mode = radio.value;
}

// The heads an address asked to show large and to compare, as numbers
// (null: not asked, or not a number); render.js puts them on the first
// answer drawn where that answer has them (its chooseView).
function viewChoicesOf(params) {
	const whole = (k) => (/^\d+$/.test(params.get(k) ?? "") ? Number(params.get(k)) : null);
	return {
		selected: { layer: whole("head-layer"), head: whole("head") },
		compare: { layer: whole("compare-layer"), head: whole("compare") },
	};
}

// POST req to /v1/attention: the response and its body, which must be JSON.
async function answerOf(req, signal) {
	const res = await fetch("/v1/attention", {
		method: "POST",
		headers: { "Content-Type": "application/json", ...authHeaders() },
		body: JSON.stringify(req),
		signal,
	});
	const text = await res.text();
	try {
		return { res, body: JSON.parse(text) };
	} catch {
		const err = new ViewerError("the answer is not JSON (a proxy's page?)");
		err.status = res.status;
		err.code = "not_json";
		throw err;
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
	// fetch rejects with a TypeError when no answer came at all
	const head = e.status ? `${e.status} ${e.code}` : e instanceof TypeError ? "No answer from attnd" : "Cannot send this";
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
	drawBadge();
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

// ---- scores and Find heads ---------------------------------------------------

// The answer to req (scores, Find heads), or its refusal thrown.
async function post(req, signal) {
	const { res, body } = await answerOf(req, signal);
	if (!res.ok) throw apiError(res.status, body);
	return body;
}

// The pre-softmax scores of the answer drawn, asked for once when the scores
// view is first shown: the same request with "scores": "masked". An answer
// without them, or a refusal, gets a note instead.
async function askScores() {
	if (view.scores !== null || view.state !== "ok" || scoresAsked === view.lastRequest) return;
	const req = view.lastRequest;
	scoresAsked = req;
	draw();
	let scores = null;
	let note = null;
	try {
		const body = await post({ ...req, scores: "masked" });
		scores = scoresOf(body);
		if (scores === null) note = "scores not available for this model (the answer has none)";
	} catch (e) {
		note = `scores not available for this model (${e.message})`;
	}
	if (view.lastRequest !== req) return;
	setScores(scores, note);
}

// Find heads: a random sequence of ids (no special tokens) repeated twice,
// every layer's attention on it, and each head's three scores.
async function findHeads() {
	const note = $("find-note");
	const button = $("find-heads");
	if (running) return;
	const m = models.find((x) => x.name === $("model").value) ?? null;
	const inline = $("model").value === INLINE;
	const vocab = inline ? numberField("vocab_size") ?? 0 : m?.vocab_size ?? 0;
	if (!(vocab > 1)) {
		note.textContent = "Find heads needs a model with a vocabulary (vocab_size of 2 or more): it sends token ids.";
		return;
	}
	const n = copyLength(m?.context_length);
	let key;
	try {
		key = specKey(modelRequest());
	} catch (e) {
		note.textContent = `Find heads: ${e.message}`;
		return;
	}
	if (key !== view.drawnKey) {
		note.textContent = "Find heads scores the model drawn: draw this one first (its request has not succeeded yet).";
		return;
	}
	button.setAttribute("aria-disabled", "true");
	running = true;
	view.findKey = key;
	note.textContent = `Scoring every head on ${n} random tokens repeated twice…`;
	try {
		const avoid = new Set();
		let body = null;
		let ids = [];
		for (let attempt = 0; attempt < 4; attempt++) {
			ids = randomIds(n, vocab, avoid);
			const tokens = [...ids, ...ids];
			body = await post({ ...JSON.parse(key), tokens });
			if (view.findKey !== key) return; // the model drawn changed meanwhile
			const special = ids.filter((id, i) => looksSpecial(body.tokens?.[i]));
			if (special.length === 0) break;
			for (const id of special) avoid.add(id);
		}
		const attentions = toNumbers(body.attentions ?? [body.weights]);
		view.found = { model: m?.name ?? "inline", n, ids: [...ids, ...ids], scores: scoreModel(attentions, n) };
		note.textContent = `Scored on ${n} random tokens repeated twice (ids ${ids.slice(0, 5).join(", ")}, …). ` + "Badges mark scores of 0.40 and up: P previous token, I induction, S first token (sink).";
		draw();
	} catch (e) {
		if (view.findKey === key) note.textContent = `Find heads failed: ${e.message}`;
	} finally {
		button.removeAttribute("aria-disabled");
		running = false;
	}
}

// ---- controls ----------------------------------------------------------------

// "Checkpoint weights (builtin:models/mini)", "Random weights (untrained) (seed:7)":
// the label, and the source where the label does not already name it.
function modelNote(m) {
	const label = weightsLabel(m);
	const said = label.includes(m.source.replace(/^dir:/, ""));
	return `${label[0].toUpperCase()}${label.slice(1)}` + (said ? "" : ` (${m.source})`);
}

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
	const missing = missingModel === null ? "" : `No model named “${missingModel}” is served here; showing ${inline ? "inline" : m?.name} instead. `;
	$("model-note").textContent =
		missing +
		(inline
			? "Random weights (untrained): a model made for each request from the seed; the same seed gives the same weights."
			: m
				? `${modelNote(m)}; choose “inline” to change its shape.`
				: "");
	syncTextKind(m);
	syncHeadDim();
}

// Ids to start from when none were typed: four repeated, so that a head
// that looks back at the previous copy (induction) has something to find.
function exampleIds(vocab) {
	const four = [5, 9, 12, 3].map((id) => (vocab > 0 ? id % vocab : id));
	return [...four, ...four].join(" ");
}

// The text box holds a sentence, or token ids for a checkpoint without a
// tokenizer; each kind's text comes back when a model of that kind does
// (and ids are never sent as a sentence).
function syncTextKind(m) {
	const kind = takesIds(m) ? "ids" : "sentence";
	if (kind !== textKind) {
		textKept[textKind] = $("text").value;
		$("text").value = kind === "ids" && textKept.ids.trim() === "" ? exampleIds(m.vocab_size) : textKept[kind];
		$("text").lang = isKorean($("text").value) ? "ko" : "en";
		textKind = kind;
	}
	$("text-label").textContent = kind === "ids" ? "Token ids" : "Sentence";
	$("examples").hidden = kind === "ids";
	const range = m?.vocab_size > 0 ? `, each below ${m.vocab_size}` : "";
	$("text-note").textContent = m?.tokenizer
		? `split by the ${m.tokenizer} tokenizer`
		: kind === "ids"
			? `this checkpoint has no tokenizer: type token ids, whole numbers separated by spaces or commas${range} (sent as the API's "tokens")`
			: "split on spaces into tokens";
}

// A checkpoint: the layer to show; its masks and positions are its own.
function syncCheckpoint(m) {
	const ckpt = m?.kind === "checkpoint";
	$("layer-box").hidden = !ckpt;
	$("mask").disabled = ckpt;
	$("positional").disabled = ckpt;
	if (!ckpt) return;
	$("layer").min = 0;
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

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}) {
	const node = document.createElementNS(SVG_NS, tag);
	for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
	return node;
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
		// emptied to type another number: nothing to draw until it is typed
		if (id === "layer" && ev.target.value.trim() === "") return;
		if (id === "layer") {
			draw();
			return keepAddress(new URL(location.href));
		}
		if (["scale", "numbers", "tables"].includes(id)) return draw();
		if (id === "apikey") return;
		if (id === "text") $("text").lang = isKorean($("text").value) ? "ko" : "en";
		if (ev.target.name === "input") syncInputKind();
		if (id === "model") {
			missingModel = null;
			syncModelFields();
		}
		if (id === "mask") syncMask();
		if (id === "d_model" || id === "num_heads") syncHeadDim();
		schedule(ev.target.tagName === "SELECT" || ev.target.type === "radio" ? 0 : DEBOUNCE_MS);
	});
	// left empty, the Layer field shows the layer drawn again
	$("layer").addEventListener("change", () => {
		if ($("layer").value.trim() === "") $("layer").value = String(view.layerIds[view.layer] ?? 0);
	});
	$("apikey").addEventListener("change", async () => {
		await loadModels();
		run();
	});
	for (const b of document.querySelectorAll("button[data-heads]")) {
		b.addEventListener("click", () => preset(Number(b.dataset.heads)));
	}
	window.addEventListener("scroll", hideTip, { passive: true });
	for (const b of document.querySelectorAll("button[data-example]")) {
		b.addEventListener("click", () => {
			$("text").value = EXAMPLES[b.dataset.example];
			$("text").lang = b.dataset.example;
			if (inputKind() !== "text") {
				document.querySelector('input[name="input"][value="text"]').checked = true;
				syncInputKind();
			}
			run();
		});
	}
	wireResults();
}

// The results' own controls redraw without a request (scores: one request).
function wireResults() {
	const pick = () => {
		view.selected = { layer: Number($("pick-layer").value), head: Number($("pick-head").value) };
		if (view.compare) view.compare = { layer: Number($("cmp-layer").value), head: Number($("cmp-head").value) };
		draw();
		headChosen();
	};
	for (const id of ["pick-layer", "pick-head", "cmp-layer", "cmp-head"]) $(id).addEventListener("change", pick);
	$("compare").addEventListener("change", () => {
		const H = view.layers[0]?.length ?? 1;
		view.compare = $("compare").checked ? { layer: Math.min(view.layers.length - 1, view.selected.layer + 1), head: (view.selected.head + 1) % H } : null;
		draw();
		keepViewChoice();
	});
	for (const r of document.querySelectorAll('input[name="values"]')) {
		r.addEventListener("change", () => {
			view.mode = document.querySelector('input[name="values"]:checked').value;
			draw();
			keepViewChoice();
			if (view.mode === "scores") askScores();
		});
	}
	// a head picked on the grid (render.js) is kept as one picked here is
	onPicked(headChosen);
	$("find-heads").addEventListener("click", findHeads);
	// a token pointed at or focused lights its characters in the sentence
	const over = (ev) => {
		const t = ev.target.closest?.("[data-tok]");
		highlightToken(t ? Number(t.dataset.tok) : null);
	};
	$("results").addEventListener("pointerover", over);
	$("results").addEventListener("focusin", over);
	$("results").addEventListener("pointerleave", () => highlightToken(null));
}

async function main() {
	addPatterns();
	$("find-note").dataset.intro = $("find-note").textContent;
	wire();
	readKept();
	readValues();
	syncInputKind();
	syncMask();
	await loadModels(); // and ?text= into the box of the model opened on
	syncModelFields();
	run();
}

main();
