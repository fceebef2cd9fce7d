// daemon.mjs: the one way the node tests start and stop attnd.
//
//   import { ATTND, startDaemon, stopDaemon } from "./daemon.mjs";
//   const d = await startDaemon(["--no-builtins"]);  // $ATTND, else build/attnd
//   d.base       "http://127.0.0.1:PORT"
//   d.stderr()   the last 4000 characters of its stderr (the access log, errors)
//   await stopDaemon(d);                               // SIGTERM; SIGKILL after 15 s
//
// attnd listens on 127.0.0.1 with --port 0 and prints `listening on HOST:PORT`
// once its models are loaded and its listener is open (server/main.c), so the
// promise resolves to a daemon that is ready to answer. A daemon that exits
// first, or prints nothing within 30 s, rejects it with its stderr. No daemon
// outlives this process, however it ends; a test's own clean-up on "exit" runs
// as well (SIGINT, SIGTERM and SIGHUP end the process through "exit").
import { spawn } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const ATTND = process.env.ATTND ?? resolve(ROOT, "build/attnd");
const START_TIMEOUT_MS = 30000;
const STOP_TIMEOUT_MS = 15000;
const STDERR_KEPT = 4000;

const started = new Set();
process.on("exit", () => {
	for (const child of started) if (child.exitCode === null) child.kill("SIGKILL");
});
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(sig, () => process.exit(1));

// Starts attnd with extraArgs; resolves to {child, base, stderr()}.
export function startDaemon(extraArgs = []) {
	const args = ["--host", "127.0.0.1", "--port", "0", ...extraArgs];
	const child = spawn(ATTND, args, { stdio: ["ignore", "pipe", "pipe"] });
	started.add(child);
	let err = "";
	child.stderr.on("data", (d) => {
		err = (err + d).slice(-STDERR_KEPT);
	});
	return new Promise((res, rej) => {
		let out = "";
		const timer = setTimeout(() => {
			child.kill("SIGKILL");
			rej(new Error(`attnd did not say "listening on" within ${START_TIMEOUT_MS} ms\n${err}`));
		}, START_TIMEOUT_MS);
		child.on("error", (e) => {
			clearTimeout(timer);
			rej(e);
		});
		child.on("exit", (code) => {
			clearTimeout(timer);
			rej(new Error(`attnd ${args.join(" ")} exited with ${code} before listening\n${err}`));
		});
		child.stdout.on("data", (d) => {
			out += d;
			const m = out.match(/listening on (\S+):(\d+)/);
			if (m) {
				clearTimeout(timer);
				child.removeAllListeners("exit");
				res({ child, base: `http://127.0.0.1:${m[2]}`, stderr: () => err });
			}
		});
	});
}

// SIGTERM, then SIGKILL if it has not exited within 15 s; resolves once it
// has exited (at once for null or a daemon already gone).
export function stopDaemon(d) {
	if (!d || d.child.exitCode !== null || d.child.signalCode !== null) return Promise.resolve();
	return new Promise((res) => {
		const timer = setTimeout(() => d.child.kill("SIGKILL"), STOP_TIMEOUT_MS);
		d.child.on("exit", () => {
			clearTimeout(timer);
			started.delete(d.child);
			res();
		});
		d.child.kill("SIGTERM");
	});
}
