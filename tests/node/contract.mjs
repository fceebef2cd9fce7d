// contract.mjs: attnd against its OpenAPI contract (api/openapi.yaml).
//
//   node tests/node/contract.mjs            run every check (make test-contract)
//   node tests/node/contract.mjs --sample   print the daemon's real answer to
//                                               every request example (to refresh
//                                               the response examples by hand)
//
// What is checked, each a line "ok - ..." or "FAIL - ...", then "N passed, M failed":
//   1. GET /openapi.json equals api/openapi.yaml read as YAML 1.2 (what Redocly reads).
//   2. The routes of `attnd --routes` and the spec's paths and methods are the same
//      set (OPTIONS preflight and HEAD are the transport's, left out on both sides).
//   3. Every request example (requestBody examples, on the path parameters' first
//      examples; path parameter examples for GET, each varied in turn) is sent to
//      its route on the real daemon; the status must be the example's
//      `x-expected-status` (200 when absent) and the answer must match the spec's
//      response for that status: media type, body (ajv, JSON Schema 2020-12, as
//      OpenAPI 3.1 uses), required headers and their schemas. A response example
//      named like a request example must equal the real answer (numbers within a
//      relative 1e-4, usage.milliseconds ignored): the examples stay honest.
//   4. Static: request examples expected to succeed match the request schema; every
//      response example matches its response schema.
//   5. Transport answers the spec documents: 405 with Allow for an undeclared
//      method, OPTIONS preflight, 404 for an unknown path, 415, 400, X-Request-Id.
//   6. A second daemon with --no-builtins --api-key --max-body: 401 on every route
//      that needs the key, open routes without it, /readyz 503, 503 not_ready, 413;
//      on every route, GET routes too, 413 for a declared body over --max-body and
//      408 for a body not in by --request-deadline.
//   7. A third with --per-ip-limit 1: every route's 503 to a second connection.
// Daemons (./daemon.mjs) listen on 127.0.0.1 with --port 0 and are stopped at the end.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect } from "node:net";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual, promisify } from "node:util";

import Ajv2020 from "ajv/dist/2020.js";
import YAML from "yaml";

import { ATTND, startDaemon, stopDaemon } from "./daemon.mjs";
import { check, finish, report } from "./report.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SPEC_PATH = resolve(ROOT, "api/openapi.yaml");
const SPEC_ID = "urn:attnd:openapi";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
const API_KEY = "contract-test-key";
const SMALL_MAX_BODY = 1024;

const spec = YAML.parse(readFileSync(SPEC_PATH, "utf8"));
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(structuredClone(spec), SPEC_ID);

// ---- the spec ----------------------------------------------------------------

function escapeToken(s) {
	return String(s).replaceAll("~", "~0").replaceAll("/", "~1");
}

function pointerOf(parts) {
	return parts.map((p) => "/" + escapeToken(p)).join("");
}

function atPointer(pointer) {
	let node = spec;
	for (const raw of pointer.split("/").slice(1)) {
		node = node?.[raw.replaceAll("~1", "/").replaceAll("~0", "~")];
	}
	return node;
}

// Follows $ref (local only); returns the object and its JSON pointer.
function deref(node, pointer) {
	while (node && typeof node.$ref === "string") {
		if (!node.$ref.startsWith("#/")) throw new Error(`non-local $ref ${node.$ref}`);
		pointer = node.$ref.slice(1);
		node = atPointer(pointer);
	}
	return { node, pointer };
}

const validators = new Map();

// An ajv validator for the schema at `pointer` inside the spec; $refs in it
// resolve against the whole document.
function validatorAt(pointer) {
	if (!validators.has(pointer)) {
		const fragment = pointer
			.split("/")
			.map((s) => encodeURIComponent(s))
			.join("/");
		validators.set(pointer, ajv.compile({ $ref: `${SPEC_ID}#${fragment}` }));
	}
	return validators.get(pointer);
}

function schemaProblems(pointer, value, what) {
	const validate = validatorAt(pointer);
	if (validate(value)) return [];
	return validate.errors
		.slice(0, 6)
		.map((e) => `${what}: ${e.instancePath || "/"} ${e.message} (${e.schemaPath})`);
}

// Every operation: {path, method, op, pointer}.
function operations() {
	const out = [];
	for (const [path, item] of Object.entries(spec.paths ?? {})) {
		for (const method of METHODS) {
			if (item[method]) {
				out.push({ path, method, op: item[method], pointer: pointerOf(["paths", path, method]) });
			}
		}
	}
	return out;
}

// The spec's response for a status: {node, pointer} or null.
function responseFor(o, status) {
	const responses = o.op.responses ?? {};
	const key = String(status) in responses ? String(status) : "default" in responses ? "default" : null;
	if (key === null) return null;
	return deref(responses[key], `${o.pointer}/responses/${escapeToken(key)}`);
}

function componentResponse(name) {
	return deref(spec.components.responses[name], pointerOf(["components", "responses", name]));
}

// The JSON request body of an operation ($ref followed): {media, pointer} or null.
function requestMedia(o) {
	if (!o.op.requestBody) return null;
	const { node, pointer } = deref(o.op.requestBody, `${o.pointer}/requestBody`);
	const media = node?.content?.["application/json"];
	return media ? { media, pointer: `${pointer}/content/application~1json` } : null;
}

// The paths to call an operation with: every path parameter at its first
// example, then each other example of each parameter in turn (the others at
// their first), named by that example.
function examplePaths(o) {
	const params = (o.op.parameters ?? []).map((p) => deref(p, "").node).filter((p) => p.in === "path");
	if (params.length === 0) return [{ name: "default", path: o.path, expected: 200 }];
	const choices = params.map((p) => Object.entries(p.examples ?? { default: { value: p.example } }));
	const fill = (picks) =>
		params.reduce((path, p, i) => path.replace(`{${p.name}}`, encodeURIComponent(picks[i][1].value)), o.path);
	const first = choices.map((c) => c[0]);
	const out = [{ name: first[0][0], path: fill(first), expected: first[0][1]["x-expected-status"] ?? 200 }];
	choices.forEach((c, i) => {
		for (const pick of c.slice(1)) {
			const picks = first.map((f, j) => (j === i ? pick : f));
			out.push({ name: pick[0], path: fill(picks), expected: pick[1]["x-expected-status"] ?? 200 });
		}
	});
	return out;
}

// Every request to send: {o, name, url path, body (string) or null, expected status}.
function exampleRequests() {
	const out = [];
	for (const o of operations()) {
		const body = requestMedia(o);
		if (body) {
			const path = examplePaths(o)[0].path;
			for (const [name, ex] of Object.entries(body.media.examples ?? {})) {
				out.push({
					o,
					name,
					path,
					body: JSON.stringify(ex.value),
					value: ex.value,
					expected: ex["x-expected-status"] ?? 200,
				});
			}
			continue;
		}
		for (const { name, path, expected } of examplePaths(o)) out.push({ o, name, path, body: null, expected });
	}
	return out;
}

// The Open Inference Protocol's paths, whose errors are {"error": "message"}.
function isV2(path) {
	return path === "/v2" || path.startsWith("/v2/");
}

// ---- the daemon (started by ./daemon.mjs) ------------------------------------

process.stdout.on("error", () => process.exit(1)); // e.g. piped into head

async function send(base, method, path, { body = null, headers = {} } = {}) {
	const init = { method, headers: { ...headers } };
	if (body !== null) {
		init.body = body;
		if (!("Content-Type" in init.headers)) init.headers["Content-Type"] = "application/json";
	}
	const res = await fetch(base + path, init);
	const text = await res.text();
	return { status: res.status, headers: res.headers, text };
}

// Sends raw request bytes and parses the answer (for framing fetch will not send).
// With { end: false } the sending side stays open, as a client's that has more
// of its body to send: the answer must come, and close, from the server.
function sendRaw(base, bytes, { end = true } = {}) {
	const url = new URL(base);
	return new Promise((res, rej) => {
		const chunks = [];
		const sock = connect(Number(url.port), url.hostname, () => (end ? sock.end(bytes) : sock.write(bytes)));
		sock.setTimeout(10000, () => sock.destroy(new Error("timeout")));
		sock.on("data", (c) => chunks.push(c));
		sock.on("error", rej);
		sock.on("close", () => {
			const text = Buffer.concat(chunks).toString("utf8");
			const split = text.indexOf("\r\n\r\n");
			const head = text.slice(0, split).split("\r\n");
			const headers = new Headers();
			for (const line of head.slice(1)) {
				const colon = line.indexOf(":");
				headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
			}
			res({ status: Number(head[0].split(" ")[1]), headers, text: text.slice(split + 4) });
		});
	});
}

// ---- checking one answer -------------------------------------------------------

// Problems of an answer against the spec's response {node, pointer}.
function answerProblems(resp, answer) {
	const problems = [];
	const { node, pointer } = resp;
	for (const [name, h0] of Object.entries(node.headers ?? {})) {
		const h = deref(h0, `${pointer}/headers/${escapeToken(name)}`);
		const value = answer.headers.get(name);
		if (value === null) {
			if (h.node.required) problems.push(`header ${name} is missing`);
			continue;
		}
		if (h.node.schema) problems.push(...schemaProblems(`${h.pointer}/schema`, value, `header ${name}`));
	}
	if (!node.content) {
		if (answer.text !== "") problems.push(`expected no body, got ${answer.text.slice(0, 200)}`);
		return problems;
	}
	const type = (answer.headers.get("content-type") ?? "").split(";")[0].trim();
	const media = node.content[type];
	if (!media) {
		problems.push(`Content-Type ${type || "(none)"} is not among ${Object.keys(node.content).join(", ")}`);
		return problems;
	}
	let body = answer.text;
	if (type === "application/json") {
		try {
			body = JSON.parse(answer.text);
		} catch (e) {
			problems.push(`body is not JSON: ${e.message}`);
			return problems;
		}
	}
	if (media.schema) {
		const schemaPointer = `${pointer}/content/${escapeToken(type)}/schema`;
		problems.push(...schemaProblems(schemaPointer, body, "body"));
	}
	return problems;
}

// The answer's status must be `expected` and the answer must match the spec.
function expectAnswer(problems, o, answer, expected) {
	if (answer.status !== expected) {
		problems.push(`status ${answer.status}, expected ${expected}: ${answer.text.slice(0, 300)}`);
	}
	const resp = o ? responseFor(o, answer.status) : null;
	if (!resp) {
		problems.push(`status ${answer.status} is not documented for this operation`);
		return;
	}
	problems.push(...answerProblems(resp, answer));
}

function expectComponent(problems, name, answer, expected) {
	if (answer.status !== expected) {
		problems.push(`status ${answer.status}, expected ${expected}: ${answer.text.slice(0, 300)}`);
	}
	problems.push(...answerProblems(componentResponse(name), answer));
}

// ---- comparing a documented example with the real answer -----------------------

function floatsOfBase64(s) {
	const bytes = Buffer.from(s, "base64");
	return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
}

function close(a, b) {
	return a === b || Math.abs(a - b) <= 1e-4 * Math.max(Math.abs(a), Math.abs(b), 1e-3);
}

// Differences between a documented value and the real one, as JSON pointers.
function differences(doc, real, at = "", out = []) {
	if (out.length > 5) return out;
	if (at === "/usage/milliseconds") return out;
	if (typeof doc === "number" && typeof real === "number") {
		if (!close(doc, real)) out.push(`${at || "/"}: documented ${doc}, real ${real}`);
		return out;
	}
	if (Array.isArray(doc) && Array.isArray(real)) {
		if (doc.length !== real.length) {
			out.push(`${at || "/"}: documented ${doc.length} items, real ${real.length}`);
			return out;
		}
		doc.forEach((d, i) => differences(d, real[i], `${at}/${i}`, out));
		return out;
	}
	if (doc && real && typeof doc === "object" && typeof real === "object") {
		if (typeof doc.base64 === "string" && typeof real.base64 === "string") {
			return differences(
				{ shape: doc.shape, data: floatsOfBase64(doc.base64) },
				{ shape: real.shape, data: floatsOfBase64(real.base64) },
				at,
				out,
			);
		}
		const keys = new Set([...Object.keys(doc), ...Object.keys(real)]);
		for (const k of keys) {
			if (!(k in doc) || !(k in real)) out.push(`${at}/${k}: only in the ${k in doc ? "documented" : "real"} answer`);
			else differences(doc[k], real[k], `${at}/${escapeToken(k)}`, out);
		}
		return out;
	}
	if (!isDeepStrictEqual(doc, real)) out.push(`${at || "/"}: documented ${JSON.stringify(doc)}, real ${JSON.stringify(real)}`);
	return out;
}

// The response example documented under the request example's name, if any.
function documentedAnswer(o, status, name) {
	const resp = responseFor(o, status);
	return resp?.node.content?.["application/json"]?.examples?.[name];
}

// ---- the checks ------------------------------------------------------------------

// A path with its parameters filled in: {name} a model, {version} its
// version, {file} a viewer file.
function concretePath(path) {
	return path.replace("{name}", "tiny").replace("{version}", "1").replace("{file}", "app.js");
}

async function checkStatic() {
	for (const req of exampleRequests()) {
		if (req.value === undefined || req.expected >= 300) continue;
		const media = `${requestMedia(req.o).pointer}/schema`;
		await check(`request example ${req.o.path} ${req.name} matches the request schema`, (p) => {
			p.push(...schemaProblems(media, req.value, "example"));
		});
	}
	const pending = [];
	const visit = (node, parts) => {
		if (!node || typeof node !== "object") return;
		const here = pointerOf(parts);
		if (parts.at(-2) === "content" && node.schema && node.examples) {
			for (const [name, ex] of Object.entries(node.examples)) {
				if (parts.includes("requestBody") || parts.includes("parameters")) continue;
				const label = `response example ${parts.slice(1, -2).join(" ")} ${name} matches its schema`;
				const body = ex.value;
				pending.push(check(label, (p) => p.push(...schemaProblems(`${here}/schema`, body, "example"))));
			}
		}
		for (const [k, v] of Object.entries(node)) visit(v, [...parts, k]);
	};
	visit(spec.paths, ["paths"]);
	visit(spec.components.responses, ["components", "responses"]);
	await Promise.all(pending);
}

async function checkOpenapiJson(d) {
	await check("GET /openapi.json equals api/openapi.yaml", async (p) => {
		const answer = await send(d.base, "GET", "/openapi.json");
		const served = JSON.parse(answer.text);
		if (!isDeepStrictEqual(served, spec)) {
			p.push(...differences(spec, served).slice(0, 6));
			if (p.length === 0) p.push("the documents differ (in key order or types)");
		}
	});
}

async function checkRoutes() {
	await check("attnd --routes and the spec's paths are the same routes", async (p) => {
		let stdout;
		try {
			({ stdout } = await promisify(execFile)(ATTND, ["--routes"], { timeout: 10000 }));
		} catch (e) {
			p.push(`\`attnd --routes\` failed (${(e.stderr || e.message).trim()}); the server must print one "METHOD PATH" line per route`);
			return;
		}
		const ignored = new Set(["OPTIONS", "HEAD"]);
		const server = new Set(
			stdout
				.split("\n")
				.map((l) => l.trim().split(/\s+/).join(" "))
				.filter((l) => l !== "" && !ignored.has(l.split(" ")[0])),
		);
		const documented = new Set(
			operations()
				.filter((o) => !ignored.has(o.method.toUpperCase()))
				.map((o) => `${o.method.toUpperCase()} ${o.path}`),
		);
		for (const r of server) if (!documented.has(r)) p.push(`in the server, not in the spec: ${r}`);
		for (const r of documented) if (!server.has(r)) p.push(`in the spec, not in the server: ${r}`);
		if (server.size === 0) p.push("attnd --routes printed no route");
	});
}

async function checkExamples(d) {
	for (const req of exampleRequests()) {
		const method = req.o.method.toUpperCase();
		await check(`${method} ${req.path} example ${req.name} -> ${req.expected}`, async (p) => {
			const answer = await send(d.base, method, req.path, { body: req.body });
			expectAnswer(p, req.o, answer, req.expected);
			const doc = documentedAnswer(req.o, answer.status, req.name);
			if (doc && answer.status === req.expected) {
				p.push(...differences(doc.value, JSON.parse(answer.text)).map((s) => `documented answer differs: ${s}`));
			}
		});
	}
}

async function checkTransport(d) {
	const ops = operations();
	const paths = [...new Set(ops.map((o) => o.path))];
	for (const path of paths) {
		const declared = ops.filter((o) => o.path === path).map((o) => o.method.toUpperCase());
		const allow = [...declared.flatMap((m) => (m === "GET" ? ["GET", "HEAD"] : [m])), "OPTIONS"];
		const concrete = concretePath(path);
		const other = declared.includes("DELETE") ? "PATCH" : "DELETE";
		await check(`${other} ${path} -> 405 with Allow: ${allow.join(", ")}`, async (p) => {
			const answer = await send(d.base, other, concrete);
			expectComponent(p, isV2(path) ? "V2MethodNotAllowed" : "MethodNotAllowed", answer, 405);
			const got = (answer.headers.get("allow") ?? "").split(",").map((s) => s.trim());
			if (!isDeepStrictEqual([...got].sort(), [...allow].sort())) p.push(`Allow is "${got.join(", ")}"`);
		});
		if (declared.includes("GET")) {
			await check(`HEAD ${path} -> as GET, without a body`, async (p) => {
				const answer = await send(d.base, "HEAD", concrete);
				if (answer.status !== 200) p.push(`status ${answer.status}`);
				if (answer.text !== "") p.push("HEAD answered with a body");
				if (answer.headers.get("x-request-id") === null) p.push("no X-Request-Id");
			});
		}
		await check(`OPTIONS ${path} preflight -> 204`, async (p) => {
			const answer = await send(d.base, "OPTIONS", concrete, {
				headers: { Origin: "http://example.test", "Access-Control-Request-Method": declared[0] },
			});
			if (answer.status !== 204) p.push(`status ${answer.status}`);
			const methods = answer.headers.get("access-control-allow-methods");
			if (methods === null) p.push("no Access-Control-Allow-Methods");
			if (answer.headers.get("access-control-allow-origin") === null) p.push("no Access-Control-Allow-Origin");
		});
	}
	for (const o of ops) {
		const method = o.method.toUpperCase();
		const path = concretePath(o.path);
		await check(`${method} ${o.path} with two Content-Length headers -> 400`, async (p) => {
			const bytes = `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
				"Content-Length: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
			expectAnswer(p, o, await sendRaw(d.base, bytes), 400);
		});
	}
	await check("GET /no/such/path -> 404 not_found", async (p) => {
		expectComponent(p, "NotFound", await send(d.base, "GET", "/no/such/path"), 404);
	});
	for (const o of ops.filter((x) => x.method === "post")) {
		const path = concretePath(o.path);
		await check(`POST ${o.path} text/plain -> 415`, async (p) => {
			const answer = await send(d.base, "POST", path, { body: "{}", headers: { "Content-Type": "text/plain" } });
			expectAnswer(p, o, answer, 415);
		});
		await check(`POST ${o.path} malformed JSON -> 400`, async (p) => {
			expectAnswer(p, o, await send(d.base, "POST", path, { body: '{"q": [1,' }), 400);
		});
		await check(`POST ${o.path} duplicate key -> 400`, async (p) => {
			expectAnswer(p, o, await send(d.base, "POST", path, { body: '{"q": 1, "q": 2}' }), 400);
		});
		if (isV2(o.path)) {
			await check(`POST ${o.path} unknown field -> 422 naming it`, async (p) => {
				const answer = await send(d.base, "POST", path, { body: '{"temperature": 1}' });
				expectAnswer(p, o, answer, 422);
				const e = JSON.parse(answer.text).error;
				if (typeof e !== "string" || !e.includes("/temperature")) p.push(`error ${JSON.stringify(e)}`);
			});
			continue;
		}
		await check(`POST ${o.path} unknown field -> 422 with its pointer`, async (p) => {
			const answer = await send(d.base, "POST", path, { body: '{"temperature": 1}' });
			expectAnswer(p, o, answer, 422);
			const e = JSON.parse(answer.text).error;
			if (e?.code !== "unknown_field" || e?.pointer !== "/temperature") p.push(`error ${JSON.stringify(e)}`);
		});
	}
	await check("X-Request-Id is echoed", async (p) => {
		const answer = await send(d.base, "GET", "/healthz", { headers: { "X-Request-Id": "contract-42" } });
		if (answer.headers.get("x-request-id") !== "contract-42") p.push(`got ${answer.headers.get("x-request-id")}`);
	});
}

// A daemon with no model, an API key and a small --max-body.
async function checkRestricted(d) {
	const auth = { Authorization: `Bearer ${API_KEY}` };
	for (const o of operations()) {
		const method = o.method.toUpperCase();
		const path = concretePath(o.path);
		const body = o.op.requestBody ? "{}" : null;
		const open = Array.isArray(o.op.security) && o.op.security.length === 0;
		if (open) {
			await check(`${method} ${o.path} needs no API key`, async (p) => {
				const answer = await send(d.base, method, path, { body });
				if (answer.status === 401) p.push("answered 401");
				const unready = o.path === "/readyz" || o.path === "/v2/health/ready";
				expectAnswer(p, o, answer, unready ? 503 : 200);
			});
			continue;
		}
		await check(`${method} ${o.path} without the API key -> 401`, async (p) => {
			expectAnswer(p, o, await send(d.base, method, path, { body }), 401);
		});
		await check(`${method} ${o.path} with a wrong API key -> 401`, async (p) => {
			const headers = { Authorization: `Bearer ${API_KEY}x` };
			expectAnswer(p, o, await send(d.base, method, path, { body, headers }), 401);
		});
	}
	const attention = operations().find((o) => o.path === "/v1/attention");
	const sdpa = operations().find((o) => o.path === "/v1/sdpa");
	await check("POST /v1/attention with no model loaded -> 503 not_ready", async (p) => {
		const body = JSON.stringify({ text: "사과를 먹었다" });
		const answer = await send(d.base, "POST", "/v1/attention", { body, headers: auth });
		expectAnswer(p, attention, answer, 503);
	});
	await check("POST /v1/sdpa with the API key -> 200", async (p) => {
		const body = JSON.stringify({ q: [[[[1, 0]]]], k: [[[[1, 0]]]], v: [[[[1, 2]]]] });
		expectAnswer(p, sdpa, await send(d.base, "POST", "/v1/sdpa", { body, headers: auth }), 200);
	});
	await check(`POST /v1/sdpa over --max-body ${SMALL_MAX_BODY} -> 413`, async (p) => {
		const body = JSON.stringify({ q: new Array(SMALL_MAX_BODY).fill(0) });
		expectAnswer(p, sdpa, await send(d.base, "POST", "/v1/sdpa", { body, headers: auth }), 413);
	});
}

// The transport's refusals that reach every route, GET routes too, each
// documented for each: a declared body over --max-body (413, before any of it
// is read), a body not in by --request-deadline (408, written mid-body).
async function checkBodyLimits(d) {
	const auth = `Authorization: Bearer ${API_KEY}\r\n`;
	const head = (o, length) => `${o.method.toUpperCase()} ${concretePath(o.path)} HTTP/1.1\r\n` +
		`Host: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: ${length}\r\n` +
		"Connection: close\r\n\r\n";
	for (const o of operations()) {
		await check(`${o.method.toUpperCase()} ${o.path} declaring a body over --max-body -> 413`, async (p) => {
			expectAnswer(p, o, await sendRaw(d.base, head(o, SMALL_MAX_BODY + 1), { end: false }), 413);
		});
	}
	// all at once: each waits out the deadline
	const ops = operations();
	const late = await Promise.all(ops.map((o) => sendRaw(d.base, head(o, 2) + "{", { end: false })));
	for (const [i, o] of ops.entries()) {
		await check(`${o.method.toUpperCase()} ${o.path} with its body not in by --request-deadline -> 408`, (p) => {
			expectAnswer(p, o, late[i], 408);
		});
	}
}

// A daemon with --per-ip-limit 1 and one connection of this address open:
// every route answers another 503 overloaded, with Retry-After.
async function checkPerIpLimit(d) {
	const url = new URL(d.base);
	const held = connect(Number(url.port), url.hostname);
	await new Promise((res, rej) => {
		held.on("connect", res);
		held.on("error", rej);
	});
	try {
		for (const o of operations()) {
			const method = o.method.toUpperCase();
			const bytes = `${method} ${concretePath(o.path)} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
				"Content-Length: 0\r\nConnection: close\r\n\r\n";
			await check(`${method} ${o.path} over --per-ip-limit -> 503 overloaded`, async (p) => {
				const answer = await sendRaw(d.base, bytes);
				expectAnswer(p, o, answer, 503);
				if (answer.headers.get("retry-after") === null) p.push("no Retry-After");
			});
		}
	} finally {
		held.destroy();
	}
}

async function sample(d) {
	for (const req of exampleRequests()) {
		const answer = await send(d.base, req.o.method.toUpperCase(), req.path, { body: req.body });
		console.log(`## ${req.o.method.toUpperCase()} ${req.path} ${req.name} -> ${answer.status}`);
		console.log(answer.text);
	}
}

// The tokenizer the spec's examples name, as a path relative to the
// repository's root (its `source` in GET /v1/tokenizers is this text), and
// the checkpoint they name (the oracle's gpt2_f32, tests/data/checkpoints/).
const TOKENIZER_ARGS = [
	"--tokenizer", "gpt2=tests/data/tokenizers/gpt2/vocab.json",
	"--model", "gpt2_f32=tests/data/checkpoints/gpt2_f32",
];

async function main() {
	const daemons = [];
	try {
		process.chdir(ROOT);
		const d = await startDaemon(TOKENIZER_ARGS);
		daemons.push(d);
		if (process.argv.includes("--sample")) {
			await sample(d);
			return;
		}
		await checkStatic();
		await checkOpenapiJson(d);
		await checkRoutes();
		await checkExamples(d);
		await checkTransport(d);
		const r = await startDaemon(["--no-builtins", "--api-key", API_KEY, "--max-body", String(SMALL_MAX_BODY),
			"--request-deadline", "1"]);
		daemons.push(r);
		await checkRestricted(r);
		await checkBodyLimits(r);
		const limited = await startDaemon(["--no-builtins", "--per-ip-limit", "1"]);
		daemons.push(limited);
		await checkPerIpLimit(limited);
	} catch (e) {
		report("the contract test runs", [String(e && e.stack ? e.stack : e)]);
	} finally {
		await Promise.all(daemons.map(stopDaemon));
	}
	if (!process.argv.includes("--sample")) {
		finish();
	}
}

await main();
