// compare_live.mjs: regenerates every fixture in memory with the live oracle and compares it
// with the committed file, byte for byte. Prints the first difference of each failing
// fixture and `N passed, M failed`; exits 1 if any failed.
//
// Usage: node compare_live.mjs [NAME...]   (default: all)
import { existsSync, readFileSync } from "node:fs";
import { corpus, fixturePath, makeFixture, registry, serialize } from "./lib.mjs";

function firstDifference(want, got) {
  const a = want.split("\n");
  const b = got.split("\n");
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) {
      return `line ${i + 1}\n  committed: ${(a[i] ?? "<end of file>").slice(0, 400)}\n  live:      ${(b[i] ?? "<end of file>").slice(0, 400)}`;
    }
  }
  return null;
}

const only = process.argv.slice(2);
const texts = corpus();
let passed = 0;
let failed = 0;
for (const e of registry().filter((e) => only.length === 0 || only.includes(e.name))) {
  const path = fixturePath(e.name);
  const live = serialize(makeFixture(e, texts));
  const diff = existsSync(path) ? firstDifference(readFileSync(path, "utf8"), live) : "no committed fixture";
  if (diff === null) {
    passed++;
    console.log(`ok   ${e.name}`);
  } else {
    failed++;
    console.log(`FAIL ${e.name}: ${diff}`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
