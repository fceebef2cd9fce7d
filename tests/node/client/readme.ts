// readme.ts: every request README.md and docs/deployment.md show, written
// with the TypeScript types openapi-typescript generates from the daemon's
// /openapi.json (the module "attnd-client": $BUILD/client/attnd.d.ts), and
// every field of every answer read through those types.
//
// tests/node/client.test.mjs type-checks this file with `tsc --strict
// --noEmit`, then compiles it and runs each request against a real daemon.
// So a spec change that breaks a client fails here: a field with a default
// made required again (the README's requests leave `mask`, `positional`,
// `softcap` and `weights` out), base64 back in the float tensors' type, an
// error status answered by a schema other than Error, a schema that names
// itself (TS2502), a renamed schema. The requests are plain objects of the
// generated request types; `post` and `get` below are openapi-fetch's idea in
// twenty lines (a path of `paths` gives the body's and the answer's types).
import type { components, paths } from "attnd-client";

type S = components["schemas"];

// ---- the generated types, by path -------------------------------------------
type Json<T> = T extends { content: { "application/json": infer B } } ? B : never;
type Op<P extends keyof paths, M extends "get" | "post"> = NonNullable<paths[P][M]>;
type Body<P extends keyof paths> = Op<P, "post"> extends { requestBody?: infer R } ? Json<NonNullable<R>> : never;
type Answer<P extends keyof paths, M extends "get" | "post", C extends number> =
	Op<P, M> extends { responses: infer R } ? (C extends keyof R ? Json<R[C]> : never) : never;

// Compile-time checks: T must be exactly U (each assignable to the other).
type Same<T, U> = [T] extends [U] ? ([U] extends [T] ? true : false) : false;
const yes = <T extends true>(): T | undefined => undefined;

// Every /v1 error status answers the one envelope Error.
yes<Same<Answer<"/v1/attention", "post", 400>, S["Error"]>>();
yes<Same<Answer<"/v1/attention", "post", 404>, S["Error"]>>();
yes<Same<Answer<"/v1/attention", "post", 413>, S["Error"]>>();
yes<Same<Answer<"/v1/attention", "post", 415>, S["Error"]>>();
yes<Same<Answer<"/v1/attention", "post", 422>, S["Error"]>>();
yes<Same<Answer<"/v1/attention", "post", 503>, S["Error"]>>();
yes<Same<Answer<"/v1/sdpa", "post", 422>, S["Error"]>>();
yes<Same<Answer<"/v1/tokenize", "post", 404>, S["Error"]>>();
yes<Same<Answer<"/v1/models", "get", 401>, S["Error"]>>();
// An answer is one schema per encoding, and a float tensor holds no base64.
yes<Same<Answer<"/v1/attention", "post", 200>, S["AttentionResponse"] | S["AttentionResponseBase64"]>>();
yes<Same<Answer<"/v1/sdpa", "post", 200>, S["SdpaResponse"] | S["SdpaResponseBase64"]>>();
yes<Same<NonNullable<S["AttentionResponse"]["weights"]>, S["Out2"] | S["Out3"] | S["Out4"]>>();
yes<Same<NonNullable<S["SdpaResponse"]["scores"]>, S["Out4"]>>();

// ---- calls -------------------------------------------------------------------
function fill(path: string, params: Record<string, string>): string {
	return path.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(params[k] ?? ""));
}

async function call(base: string, method: string, url: string, body: unknown, status: number): Promise<Response> {
	const init: RequestInit = { method };
	if (body !== undefined) {
		init.headers = { "Content-Type": "application/json" };
		init.body = JSON.stringify(body);
	}
	const r = await fetch(base + url, init);
	if (r.status !== status) throw new Error(`${method} ${url}: status ${r.status}, expected ${status}: ${await r.text()}`);
	return r;
}

async function post<P extends keyof paths, C extends number = 200>(
	base: string, path: P, body: Body<P>, status?: C, params: Record<string, string> = {},
): Promise<Answer<P, "post", C>> {
	const r = await call(base, "POST", fill(path, params), body, status ?? 200);
	return (await r.json()) as Answer<P, "post", C>;
}

async function get<P extends keyof paths>(base: string, path: P, params: Record<string, string> = {}): Promise<Answer<P, "get", 200>> {
	const r = await call(base, "GET", fill(path, params), undefined, 200);
	return (await r.json()) as Answer<P, "get", 200>;
}

// ---- reading answers ---------------------------------------------------------
function expect(ok: boolean, what: string): void {
	if (!ok) throw new Error(what);
}

function near(got: number, want: number, what: string): void {
	expect(Math.abs(got - want) <= 1e-6 + 1e-4 * Math.abs(want), `${what}: ${got}, expected ${want}`);
}

// A number of an answer: JSON has no infinities, so they come as strings.
function num(x: S["OutNumber"]): number {
	return typeof x === "number" ? x : x === "NaN" ? NaN : x === "Infinity" ? Infinity : -Infinity;
}

function depth(t: unknown): number {
	let d = 0;
	for (let x = t; Array.isArray(x); x = x[0]) d++;
	return d;
}

// A float tensor's rank follows the request; the client names it once.
function out2(t: S["FloatTensor"] | undefined): S["Out2"] {
	expect(t !== undefined && depth(t) === 2, `expected [rows, cols], got depth ${depth(t)}`);
	return t as S["Out2"];
}

function out3(t: S["FloatTensor"] | undefined): S["Out3"] {
	expect(t !== undefined && depth(t) === 3, `expected a rank-3 tensor, got depth ${depth(t)}`);
	return t as S["Out3"];
}

function out4(t: S["FloatTensor"] | undefined): S["Out4"] {
	expect(t !== undefined && depth(t) === 4, `expected a rank-4 tensor, got depth ${depth(t)}`);
	return t as S["Out4"];
}

type AttentionAnswer = Answer<"/v1/attention", "post", 200>;

function isFloatTensor(t: S["FloatTensor"] | S["Base64Tensor"]): t is S["FloatTensor"] {
	return Array.isArray(t) && (t.length === 0 || Array.isArray(t[0]));
}

// `scores` is one tensor (one layer) or a checkpoint's list of them, one per
// layer; either way its float form nests arrays of arrays, its base64 form
// does not (a list of {"shape", "base64"} per layer, or per ragged item).
function floatScores(t: NonNullable<AttentionAnswer["scores"]>): boolean {
	return Array.isArray(t) && (t.length === 0 || Array.isArray(t[0]));
}

// The float answer (the request left `encoding` at float).
function floatAnswer(a: AttentionAnswer): S["AttentionResponse"] {
	for (const t of [a.output, a.weights, ...(a.attentions ?? [])])
		expect(t === undefined || isFloatTensor(t), "a base64 tensor in a float answer");
	expect(a.scores === undefined || floatScores(a.scores), "base64 scores in a float answer");
	return a as S["AttentionResponse"];
}

function base64Answer(a: AttentionAnswer): S["AttentionResponseBase64"] {
	for (const t of [a.output, a.weights])
		expect(t === undefined || !isFloatTensor(t), "a float tensor in a base64 answer");
	expect(a.scores === undefined || !floatScores(a.scores), "float scores in a base64 answer");
	return a as S["AttentionResponseBase64"];
}

// Every field of a /v1/attention answer but the tensors, read.
function readCommon(a: S["AttentionResponse"] | S["AttentionResponseBase64"], model: string): void {
	const s: S["AttentionShape"] = a.shape;
	expect(a.model === model, `model ${a.model}, expected ${model}`);
	const dims: number[] = [s.batch, s.query_length, s.key_length, s.d_model, s.num_heads, s.num_kv_heads, s.head_dim];
	expect(dims.every((d) => Number.isInteger(d) && d >= 1), `shape ${JSON.stringify(s)}`);
	expect(s.num_layers === undefined || s.num_layers >= 1, "num_layers");
	const tokens: S["AnswerTokens"] | undefined = a.tokens;
	const ids: S["AnswerTokenIds"] | undefined = a.token_ids;
	const offsets: S["AnswerOffsets"] | undefined = a.offsets;
	expect(ids === undefined || (tokens !== undefined && offsets !== undefined && ids.length === tokens.length), "token_ids");
	const family: string | undefined = a.family;
	const layers: number[] | undefined = a.layers;
	const heads: number[] | undefined = a.heads;
	expect((family === undefined) === (layers === undefined), "family and layers come together");
	expect(heads === undefined || heads.every((h) => h >= 0), "heads");
	const usage: S["Usage"] = a.usage;
	expect(usage.flops >= 0 && usage.milliseconds >= 0, "usage");
}

function readError(e: S["Error"], code: S["ErrorCode"], pointer?: string): void {
	expect(e.error.code === code, `code ${e.error.code}, expected ${code}`);
	expect(e.error.message.length > 0, "message");
	expect(e.error.pointer === pointer, `pointer ${e.error.pointer}, expected ${pointer}`);
}

// ---- the requests ------------------------------------------------------------
export type Case = [name: string, run: (base: string) => Promise<void>];

export const cases: Case[] = [
	["README: the four-word Korean example on tiny", async (base) => {
		const req: Body<"/v1/attention"> = { model: "tiny", text: "나는 맛있는 사과를 먹었다" };
		const res = floatAnswer(await post(base, "/v1/attention", req));
		readCommon(res, "tiny");
		expect(JSON.stringify(res.tokens) === JSON.stringify(["나는", "맛있는", "사과를", "먹었다"]), "tokens");
		const output = out2(res.output); // [Lq, E]
		const weights = out3(res.weights); // [H, Lq, Lk]
		expect(output.length === 4 && output[0].length === 8, "output is [4, 8]");
		near(num(output[0][0]), 0.17072748, "output[0][0]");
		near(num(weights[0][0][1]), 0.56335217, "weights[0][0][1]");
		expect(weights.length === res.shape.num_heads, "weights has one matrix a head");
		expect(res.scores === undefined && res.attentions === undefined, "no scores, no attentions");
	}],
	["README: causal mask, RoPE, mean weights", async (base) => {
		const req: Body<"/v1/attention"> = {
			model: "tiny", text: "the cat sat on the mat",
			mask: "causal", positional: "rope", weights: "mean",
		};
		const res = floatAnswer(await post(base, "/v1/attention", req));
		readCommon(res, "tiny");
		const weights = out2(res.weights); // [Lq, Lk]
		near(num(weights[1][0]), 0.5466982, "weights[1][0]");
		expect(num(weights[0][1]) === 0, "causal: weights[0][1] is 0");
		expect(out2(res.output).length === 6, "output has six rows");
	}],
	["README: your own embeddings", async (base) => {
		const req: Body<"/v1/attention"> = {
			model: "tiny", embeddings: [[1, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0]],
		};
		const res = floatAnswer(await post(base, "/v1/attention", req));
		readCommon(res, "tiny");
		expect(res.tokens === undefined, "no tokens for embeddings");
		expect(out2(res.output).length === 2 && out3(res.weights)[0].length === 2, "[2, 8] in, [2, 8] out");
	}],
	["README: an inline seeded model", async (base) => {
		const req: Body<"/v1/attention"> = {
			model: { d_model: 16, num_heads: 4, seed: 7, vocab_size: 100 },
			text: "나는 맛있는 사과를 먹었다",
		};
		const res = floatAnswer(await post(base, "/v1/attention", req));
		readCommon(res, "inline");
		expect(out3(res.weights).length === 4 && res.shape.num_heads === 4, "four heads");
	}],
	["README: a batch of texts comes back ragged", async (base) => {
		const req: Body<"/v1/attention"> = { model: "tiny", text: ["나는 맛있는 사과를 먹었다", "사과를 먹었다"] };
		const res = floatAnswer(await post(base, "/v1/attention", req));
		readCommon(res, "tiny");
		const weights = out4(res.weights); // B items of [H, Lq_b, Lk_b]
		expect(weights[0][0].length === 4 && weights[1][0].length === 2, "each item trimmed to its length");
	}],
	["README: base64 answers", async (base) => {
		const req: Body<"/v1/attention"> = { model: "tiny", text: "나는 맛있는 사과를 먹었다", encoding: "base64" };
		const res = base64Answer(await post(base, "/v1/attention", req));
		readCommon(res, "tiny");
		const w = res.weights as S["TensorBase64"];
		const bytes = Uint8Array.from(atob(w.base64), (c) => c.charCodeAt(0));
		const floats = new Float32Array(bytes.buffer);
		expect(JSON.stringify(w.shape) === "[2,4,4]" && floats.length === 32, `weights ${JSON.stringify(w.shape)}`);
		near(floats[1], 0.56335217, "weights[0][0][1]");
	}],
	["README: /v1/sdpa with a boolean mask and masked scores", async (base) => {
		const req: Body<"/v1/sdpa"> = {
			q: [[[[1, 0]]]], k: [[[[1, 0], [0, 1]]]], v: [[[[1, 2], [3, 4]]]],
			attn_mask: [[true, false]], scores: "masked",
		};
		const res = (await post(base, "/v1/sdpa", req)) as S["SdpaResponse"];
		const s: S["SdpaShape"] = res.shape;
		expect(s.batch === 1 && s.num_heads === 1 && s.num_kv_heads === 1 && s.query_length === 1 &&
			s.key_length === 2 && s.head_dim === 2 && s.v_head_dim === 2, `shape ${JSON.stringify(s)}`);
		const output = out4(res.output); // [B, H, Lq, Dv]
		expect(num(output[0][0][0][1]) === 2, "output");
		const scores: S["Out4"] | undefined = res.scores;
		expect(scores !== undefined && num(scores[0][0][0][1]) === -Infinity, "a hidden key's score is -Infinity");
		near(num(scores![0][0][0][0]), 0.70710677, "scores[0][0][0][0]");
		const present: [S["Out4"] | undefined, S["Out4"] | undefined] = [res.present_key, res.present_value];
		expect(present.every((t) => t === undefined) && res.weights === undefined, "no past, no weights");
		expect(res.usage.flops >= 0, "usage");
	}],
	["README: an error names the offending field", async (base) => {
		const req: Body<"/v1/attention"> = {
			model: "tiny",
			embeddings: [[1, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0]],
		};
		// the README's request has "x" among the numbers: not a valid request
		// body by the types, so it goes through unknown
		const bad: unknown = { ...req, embeddings: [[1, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, "x", 0]] };
		const e = await post(base, "/v1/attention", bad as Body<"/v1/attention">, 422);
		readError(e, "invalid_type", "/embeddings/1/6");
	}],
	["README: what is loaded, and the contract", async (base) => {
		const list = await get(base, "/v1/models");
		const models: S["ModelInfo"][] = list.models;
		const tiny = models.find((m) => m.name === "tiny");
		expect(tiny !== undefined && tiny.d_model === 8 && tiny.num_heads === 2, "tiny is listed");
		for (const m of models) {
			const parts: (string | number | boolean | null)[] = [m.name, m.d_model, m.num_heads, m.num_kv_heads,
				m.head_dim, m.vocab_size, m.bias, m.has_vocabulary, m.tokenizer, m.source, m.default];
			expect(parts.every((p) => p !== undefined), `model ${m.name}`);
			if (m.kind === "checkpoint")
				expect(m.family !== undefined && m.num_layers !== undefined && m.intermediate_size !== undefined &&
					m.context_length !== undefined && m.weight_bytes !== undefined &&
					m.resident_bytes !== undefined && m.dtype !== undefined && m.causal !== undefined,
				`checkpoint ${m.name}`);
		}
		const one: S["ModelInfo"] = await get(base, "/v1/models/{name}", { name: "gpt2-tiny" });
		expect(one.kind === "checkpoint" && one.family === "gpt2", "GET /v1/models/gpt2-tiny");
		const doc = await get(base, "/openapi.json");
		expect(doc.openapi === "3.1.0" && typeof doc.info === "object" && typeof doc.paths === "object", "openapi.json");
		const version: S["Version"] = await get(base, "/version");
		expect(version.name === "attnd" && version.api === "v1" && version.version.length > 0 && version.blas.length > 0, "version");
		const r = await fetch(base + "/metrics");
		expect(r.status === 200 && (await r.text()).includes("# TYPE"), "metrics");
	}],
	["README: tokenize, detokenize and the tokenizers", async (base) => {
		const tok: Body<"/v1/tokenize"> = { tokenizer: "gpt2", text: "The cat sat on the mat, 나는" };
		const t = await post(base, "/v1/tokenize", tok);
		const ids: number[] = t.ids;
		const pieces: string[] = t.tokens;
		const offsets: number[][] = t.offsets;
		expect(ids[0] === 464 && pieces[1] === "Ġcat" && offsets[1][0] === 3 && offsets[1][1] === 7, "gpt2 pieces");
		expect(ids.length === pieces.length && pieces.length === offsets.length, "one of each a token");
		const detok: Body<"/v1/detokenize"> = { tokenizer: "gpt2", ids: [464, 3797, 3332, 319, 262, 2603] };
		const d = await post(base, "/v1/detokenize", detok);
		const text: string = d.text;
		expect(text === "The cat sat on the mat", `detokenized: ${text}`);
		const list = await get(base, "/v1/tokenizers");
		const infos: S["TokenizerInfo"][] = list.tokenizers;
		const gpt2 = infos.find((i) => i.name === "gpt2");
		expect(gpt2 !== undefined && gpt2.vocab_size > 0 && gpt2.source.length > 0 && Array.isArray(gpt2.models), "gpt2 listed");
	}],
	["README: a checkpoint's last layer, one head", async (base) => {
		const req: Body<"/v1/attention"> = {
			model: "gpt2-tiny", text: "a cat", layers: [-1], heads: [0], output: false, precision: 3,
		};
		const res = floatAnswer(await post(base, "/v1/attention", req));
		readCommon(res, "gpt2-tiny");
		expect(res.family === "gpt2" && res.layers?.[0] === 2 && res.heads?.[0] === 0, "layers and heads");
		expect(res.output === undefined, "output: false");
		const ids: S["AnswerTokenIds"] | undefined = res.token_ids;
		expect(JSON.stringify(ids) === "[64,220,66,64,83]", `token_ids ${JSON.stringify(ids)}`);
		const attentions: S["FloatTensor"][] = res.attentions ?? [];
		const last = out3(attentions[0]); // [Hc, L, L]
		near(num(last[0][1][0]), 0.967, "attentions[0][0][1][0]");
	}],
	["docs/deployment.md: v2 infer, readiness and a v2 error", async (base) => {
		const infer: Body<"/v2/models/{name}/infer"> = {
			id: "korean-1", parameters: { causal: true },
			inputs: [{ name: "text", datatype: "BYTES", shape: [1], data: ["나는 맛있는 사과를 먹었다"] }],
			outputs: [{ name: "weights_mean" }],
		};
		const res: S["V2InferResponse"] = await post(base, "/v2/models/{name}/infer", infer, 200, { name: "tiny" });
		expect(res.model_name === "tiny" && res.model_version === "1" && res.id === "korean-1", "names");
		const out: S["V2InferOutput"] = res.outputs[0];
		expect(out.name === "weights_mean" && out.datatype === "FP32" && JSON.stringify(out.shape) === "[1,4,4]", "output");
		expect(out.parameters === undefined && out.data !== undefined, "JSON data, not binary");
		near(num(out.data![4]), 0.6548867, "data[4]");
		const ready: S["V2ModelReady"] = await get(base, "/v2/models/{name}/ready", { name: "tiny" });
		expect(ready.name === "tiny" && ready.ready === true, "ready");
		const wrong: Body<"/v2/models/{name}/infer"> = {
			inputs: [{ name: "embeddings", datatype: "FP32", shape: [2, 8], data: [1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, "x"] }],
		};
		const e: S["V2Error"] = await post(base, "/v2/models/{name}/infer", wrong, 422, { name: "tiny" });
		expect(e.error === "expected a number (at /inputs/0/data/15)", `v2 error: ${e.error}`);
	}],
	["docs/deployment.md: readiness", async (base) => {
		const r = await get(base, "/readyz");
		expect(r.status === "ready", `readyz: ${JSON.stringify(r)}`);
	}],
];
