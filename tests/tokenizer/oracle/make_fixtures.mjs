// make_fixtures.mjs: writes tests/data/tokenizers/fixtures/NAME.json for every tokenizer of
// lib.mjs's registry (gpt2, bert, llama3, qwen3, gemma3, llama2 and the oracle-checked
// synthetic files), from the live oracle (@lenml/tokenizers) on corpus.json.
//
// Usage: node make_fixtures.mjs [NAME...]   (default: all)
import { mkdirSync, writeFileSync } from "node:fs";
import { corpus, FIXTURES, fixturePath, makeFixture, registry, serialize } from "./lib.mjs";

const only = process.argv.slice(2);
const entries = registry().filter((e) => only.length === 0 || only.includes(e.name));
if (only.length && entries.length !== only.length) {
  console.error(`unknown tokenizer among: ${only.join(" ")}`);
  process.exit(2);
}
mkdirSync(FIXTURES, { recursive: true });
const texts = corpus();
for (const e of entries) {
  const fx = makeFixture(e, texts);
  writeFileSync(fixturePath(e.name), serialize(fx));
  const noOffsets = fx.cases.filter((c) => c.offsets === null).length;
  console.log(`${e.name}: ${fx.cases.length} cases${noOffsets ? `, ${noOffsets} without offsets` : ""}`);
}
