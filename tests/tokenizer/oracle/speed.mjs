// speed.mjs: the oracle's tokenizing speed on a text file, for bench/.
//
// Usage: node speed.mjs TOKENIZER TEXTFILE
//   TOKENIZER: a name from lib.mjs's registry (gpt2, bert, llama3, ...) or a tokenizer.json path.
// Encodes TEXTFILE in chunks of 64 lines (add_special_tokens false): one warm-up pass, then
// passes until 2 s have gone by; prints MB/s (10^6 bytes of UTF-8 input per second).
import { existsSync, readFileSync } from "node:fs";
import { buildOracle, registry } from "./lib.mjs";

const [which, textFile] = process.argv.slice(2);
if (!which || !textFile) {
  console.error("usage: node speed.mjs TOKENIZER TEXTFILE");
  process.exit(2);
}
const entry = registry().find((e) => e.name === which);
const tj = entry ? entry.load() : existsSync(which) ? JSON.parse(readFileSync(which, "utf8")) : null;
if (!tj) {
  console.error(`no tokenizer ${which}`);
  process.exit(2);
}
const tok = buildOracle(tj);
const text = readFileSync(textFile, "utf8");
const lines = text.split(/(?<=\n)/);
const chunks = [];
for (let i = 0; i < lines.length; i += 64) chunks.push(lines.slice(i, i + 64).join(""));
const bytes = Buffer.byteLength(text, "utf8");

const pass = () => {
  let n = 0;
  for (const c of chunks) n += tok.encode(c, { add_special_tokens: false }).length;
  return n;
};
const tokens = pass(); // warm-up (also fills the BPE cache, as a long-running server would)
let passes = 0;
const t0 = process.hrtime.bigint();
let elapsed = 0;
while (elapsed < 2 || passes === 0) {
  pass();
  passes++;
  elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
}
const mbps = (bytes * passes) / elapsed / 1e6;
console.log(`${which}: ${bytes} bytes, ${tokens} tokens, ${passes} passes in ${elapsed.toFixed(2)} s: ${mbps.toFixed(2)} MB/s`);
