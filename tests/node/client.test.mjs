// client.test.mjs: a TypeScript client generated from the daemon's own
// /openapi.json compiles and works (make test-client).
//
//   node tests/node/client.test.mjs
//
// Steps, each a line "ok - ..." or "FAIL - ...", then "N passed, M failed":
//   1. Start attnd ($ATTND, else build/attnd; with the README's models: the
//      built-ins, GPT-2's tokenizer as gpt2, tests/data/checkpoints/gpt2_f32 as
//      gpt2-tiny) and save its /openapi.json to $BUILD/client/openapi.json
//      ($BUILD: the folder of $ATTND).
//   2. Generate $BUILD/client/attnd.d.ts from it with openapi-typescript (pinned
//      in package.json) and GENERATOR_FLAGS, as README's "Clients" says.
//   3. `tsc --strict --noEmit` on tests/node/client/readme.ts, which makes every
//      request README.md and docs/deployment.md show with the generated types
//      and reads every answer field (a spec that breaks a client fails here),
//      and on README's own TypeScript example (its ```ts block, type-checked
//      only: it calls localhost:8080).
//   4. Compile it to $BUILD/client/js/ and run each of its requests against the
//      daemon (the types tell the truth about the real answers).
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

import { ATTND, startDaemon, stopDaemon } from "./daemon.mjs";
import { check, finish } from "./report.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const OUT = resolve(dirname(ATTND), "client");
const BIN = resolve(ROOT, "node_modules/.bin");
const PROGRAM = resolve(ROOT, "tests/node/client/readme.ts");
const EXAMPLE = resolve(OUT, "readme_example.ts");
// Fields with a `default` are optional in requests: openapi-typescript 7
// otherwise makes them required (it reads a default as "always present",
// true of answers, not of requests).
export const GENERATOR_FLAGS = ["--default-non-nullable", "false"];
const DAEMON_ARGS = [
	"--tokenizer", "gpt2=tests/data/tokenizers/gpt2/vocab.json",
	"--model", "gpt2-tiny=tests/data/checkpoints/gpt2_f32",
];

const run = promisify(execFile);

// Runs a tool of node_modules/.bin; a failure's output becomes the problems.
async function tool(p, name, args) {
	try {
		await run(resolve(BIN, name), args, { cwd: ROOT, maxBuffer: 16 << 20 });
		return true;
	} catch (e) {
		const out = `${e.stdout ?? ""}${e.stderr ?? ""}`.trim() || String(e);
		p.push(...out.split("\n").slice(0, 40));
		return false;
	}
}

// README's ```ts blocks, joined (they import "./attnd", the generated types).
function readmeExample() {
	const blocks = [...readFileSync(resolve(ROOT, "README.md"), "utf8").matchAll(/^```ts\n([\s\S]*?)^```$/gm)];
	return blocks.map((m) => m[1]).join("\n");
}

// tsconfig for the program (and, type-checked only, README's example):
// strict, the generated types as "attnd-client".
function tsconfig(emit) {
	return {
		compilerOptions: {
			strict: true,
			target: "ES2022",
			module: "ES2022",
			moduleResolution: "bundler",
			lib: ["ES2022", "DOM"],
			types: [],
			skipLibCheck: false,
			paths: { "attnd-client": ["./attnd.d.ts"] },
			...(emit ? { outDir: "./js", rootDir: dirname(PROGRAM) } : { noEmit: true }),
		},
		files: emit ? [PROGRAM] : [PROGRAM, EXAMPLE],
	};
}

async function main() {
	rmSync(OUT, { recursive: true, force: true });
	mkdirSync(OUT, { recursive: true });
	const d = await startDaemon(DAEMON_ARGS);
	try {
		let spec = false;
		await check("GET /openapi.json saved to " + OUT, async (p) => {
			const r = await fetch(d.base + "/openapi.json");
			if (r.status !== 200) p.push(`status ${r.status}`);
			else writeFileSync(resolve(OUT, "openapi.json"), await r.text());
			spec = p.length === 0;
		});
		let generated = false;
		await check(`openapi-typescript ${GENERATOR_FLAGS.join(" ")} generates attnd.d.ts`, async (p) => {
			if (!spec) p.push("no spec");
			else generated = await tool(p, "openapi-typescript",
				[resolve(OUT, "openapi.json"), ...GENERATOR_FLAGS, "-o", resolve(OUT, "attnd.d.ts")]);
		});
		let typed = false;
		await check("tsc --strict --noEmit: the README's requests, answers and TypeScript example type-check", async (p) => {
			writeFileSync(resolve(OUT, "tsconfig.json"), JSON.stringify(tsconfig(false), null, 2));
			const example = readmeExample();
			writeFileSync(EXAMPLE, example);
			if (!example.includes("attnd")) p.push("README.md has no ```ts example");
			if (!generated) p.push("no client");
			else typed = await tool(p, "tsc", ["-p", resolve(OUT, "tsconfig.json"), "--strict", "--noEmit"]);
		});
		let cases = [];
		await check("tsc compiles the program to JavaScript", async (p) => {
			writeFileSync(resolve(OUT, "tsconfig.emit.json"), JSON.stringify(tsconfig(true), null, 2));
			if (!typed) p.push("did not type-check");
			else if (await tool(p, "tsc", ["-p", resolve(OUT, "tsconfig.emit.json")]))
				({ cases } = await import(pathToFileURL(resolve(OUT, "js/readme.js")).href));
		});
		for (const [name, fn] of cases) await check(`runs: ${name}`, (p) => fn(d.base));
	} finally {
		await stopDaemon(d);
	}
	finish();
}

main().catch((e) => {
	console.error(e);
	process.exit(1);
});
