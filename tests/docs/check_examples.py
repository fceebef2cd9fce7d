#!/usr/bin/python3
"""check_examples.py: every curl example of README.md and docs/*.md, run
against the real daemon, its shown answer compared with the real one.

usage: ATTND_BIN=build/attnd /usr/bin/python3 tests/docs/check_examples.py

Standard library only. docs/testing.md states the rules for writers; in short:

  example      a ```sh block that contains `curl`. Its commands run as one
               bash script against one daemon (built-in models, GPT-2's
               tokenizer as gpt2, the random-weight GPT-2 checkpoint of
               tests/data/checkpoints/gpt2_f32 as gpt2-tiny, default flags) on 127.0.0.1 and a free port; `localhost:8080` in the
               block is rewritten to that address.
  not run      a ```sh block whose first line is `# not run: REASON` (a
               cluster, podman, a remote instance). Listed, not counted.
  success      every curl must get a 2xx answer (curl runs with
               --fail-with-body), unless the shown answer is an error body
               (a top-level "error" member): then the status must be 4xx.
  shown answer a ```json block right after the example (only blank lines
               between) is what its one command prints, compared as data:
                 ...       as the last item of an array or object: any
                           further items (none included); as a value: any
                           value;
                 1.2345    a number with a decimal point or an exponent
                           matches the real one rounded to the digits shown,
                           give or take FLOAT32_ULPS units in the last place
                           of a float32 (OpenBLAS picks its kernels by CPU,
                           and they round the last bits of a sum apart);
                           a number without either must be equal;
                 "milliseconds"  any number (a timing);
               everything else (strings, keys, true, false, null, lengths)
               exactly. Key order is not compared.

Prints one line per example and, last, `examples: N passed, M failed`;
exits 1 on any failure or when no example is found.
"""
import decimal
import glob
import json
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The launcher the daemon suites share; it moves from tests/harness/ to
# tests/lib/, so either place is looked in.
for _sub in ("tests/lib", "tests/harness"):
    if os.path.exists(os.path.join(ROOT, _sub, "attnd.py")):
        sys.path.insert(0, os.path.join(ROOT, _sub))
        break
import attnd  # noqa: E402

TIMING_KEYS = {"milliseconds"}
# The tokenizer the examples name (README's Tokenizers).
GPT2_VOCAB = os.path.join(ROOT, "tests", "data", "tokenizers", "gpt2", "vocab.json")
GPT2_TINY = os.path.join(ROOT, "tests", "data", "checkpoints", "gpt2_f32")
FENCE = re.compile(r"^```([A-Za-z0-9_-]*)\s*$")
NOT_RUN = re.compile(r"^#\s*not run:\s*(.+)$")
CURL_TIMEOUT = 60


# --------------------------------------------------------------------------
# Markdown: fenced blocks and the examples among them
# --------------------------------------------------------------------------

class Block:
    def __init__(self, path, lang, first, last, text):
        self.path = path  # relative to ROOT
        self.lang = lang
        self.first = first  # line of the opening fence, from 1
        self.last = last  # line of the closing fence
        self.text = text


def fenced_blocks(path):
    """Every fenced block of a Markdown file, in order. An unclosed fence is
    an error (ValueError) rather than a silently skipped example."""
    rel = os.path.relpath(path, ROOT)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if j == len(lines):
            raise ValueError("%s:%d: unclosed ``` block" % (rel, i + 1))
        blocks.append(Block(rel, m.group(1), i + 1, j + 1, "\n".join(lines[i + 1:j])))
        i = j + 1
    return blocks, lines


def examples(path):
    """(sh block, shown json block or None) for each curl example of path,
    and for each sh block marked `# not run:` (to list it)."""
    blocks, lines = fenced_blocks(path)
    out = []
    for k, b in enumerate(blocks):
        marked = NOT_RUN.match(b.text.split("\n", 1)[0].strip())
        if b.lang != "sh" or not (marked or re.search(r"\bcurl\b", b.text)):
            continue
        shown = None
        if k + 1 < len(blocks) and blocks[k + 1].lang == "json":
            between = lines[b.last:blocks[k + 1].first - 1]
            if all(not s.strip() for s in between):
                shown = blocks[k + 1]
        out.append((b, shown))
    return out


def doc_files():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


# --------------------------------------------------------------------------
# The shown answer: JSON with `...`, parsed into a pattern
# --------------------------------------------------------------------------

class Any:
    """`...` as a value."""


class Arr:
    def __init__(self, items, more):
        self.items, self.more = items, more


class Obj:
    def __init__(self, members, more):
        self.members, self.more = members, more  # members: dict key -> pattern


class Num:
    def __init__(self, text):
        self.text = text
        self.value = decimal.Decimal(text)
        self.exact = not re.search(r"[.eE]", text)


class ShownError(ValueError):
    pass


class ShownParser:
    """JSON (RFC 8259) plus `...`; keeps each number's text for its digits."""

    NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
    decoder = json.JSONDecoder()

    def __init__(self, text):
        self.s, self.i = text, 0

    def fail(self, why):
        line = self.s.count("\n", 0, self.i) + 1
        raise ShownError("shown JSON, line %d of the block: %s" % (line, why))

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def peek(self, text):
        self.ws()
        return self.s.startswith(text, self.i)

    def eat(self, text):
        if not self.peek(text):
            self.fail("expected %r" % text)
        self.i += len(text)

    def parse(self):
        v = self.value()
        self.ws()
        if self.i != len(self.s):
            self.fail("text after the value")
        return v

    def value(self):
        self.ws()
        if self.i >= len(self.s):
            self.fail("a value is missing")
        c = self.s[self.i]
        if self.s.startswith("...", self.i):
            self.i += 3
            return Any()
        if c == "{":
            return self.obj()
        if c == "[":
            return self.arr()
        if c == '"':
            return self.string()
        m = self.NUMBER.match(self.s, self.i)
        if m:
            self.i = m.end()
            return Num(m.group(0))
        for word, v in (("true", True), ("false", False), ("null", None)):
            if self.s.startswith(word, self.i):
                self.i += len(word)
                return v
        self.fail("unexpected %r" % c)

    def string(self):
        try:
            v, end = self.decoder.raw_decode(self.s, self.i)
        except ValueError as e:
            self.fail("bad string: %s" % e)
        self.i = end
        return v

    def more_then_close(self, close):
        """After `...`: the container must end here."""
        if not self.peek(close):
            self.fail("`...` must be the last item before %r" % close)
        self.i += 1

    def arr(self):
        self.eat("[")
        items = []
        if self.peek("]"):
            self.i += 1
            return Arr(items, False)
        while True:
            if self.peek("..."):
                self.i += 3
                self.more_then_close("]")
                return Arr(items, True)
            items.append(self.value())
            if self.peek("]"):
                self.i += 1
                return Arr(items, False)
            self.eat(",")

    def obj(self):
        self.eat("{")
        members = {}
        if self.peek("}"):
            self.i += 1
            return Obj(members, False)
        while True:
            if self.peek("..."):
                self.i += 3
                self.more_then_close("}")
                return Obj(members, True)
            self.ws()
            if not self.peek('"'):
                self.fail("expected a key")
            key = self.string()
            if key in members:
                self.fail("key %r twice" % key)
            self.eat(":")
            members[key] = self.value()
            if self.peek("}"):
                self.i += 1
                return Obj(members, False)
            self.eat(",")


# --------------------------------------------------------------------------
# Comparing: pattern against the real answer; returns the first difference
# --------------------------------------------------------------------------

# How far apart two CPUs' answers may be, in float32's units in the last place:
# the four-word example's first output is 0.17072748 on one, 0.17072752 (3
# units) on another.
FLOAT32_ULPS = 8


def float32_ulps(v):
    """FLOAT32_ULPS units in the last place of a float32 near v (0 for 0)."""
    if v == 0:
        return decimal.Decimal(0)
    exponent = math.frexp(float(abs(v)))[1]  # 2^(exponent - 1) <= |v| < 2^exponent
    return decimal.Decimal(FLOAT32_ULPS) * decimal.Decimal(2) ** (exponent - 24)


def is_number(v):
    return isinstance(v, decimal.Decimal)


def match(p, real, where="", key=None):
    """None when real matches pattern p, else why not (with its pointer)."""
    at = where or "/"
    if isinstance(p, Any):
        return None
    if isinstance(p, Num):
        if not is_number(real):
            return "%s: shown %s, real %s" % (at, p.text, json.dumps(real, default=str))
        if key in TIMING_KEYS:
            return None
        if p.exact:
            ok = real == p.value
        else:
            half = decimal.Decimal(1).scaleb(p.value.as_tuple().exponent) / 2
            ok = abs(real - p.value) <= half + float32_ulps(p.value)
        return None if ok else "%s: shown %s, real %s" % (at, p.text, real)
    if isinstance(p, Arr):
        if not isinstance(real, list):
            return "%s: shown an array, real %s" % (at, type(real).__name__)
        if len(real) < len(p.items) or (not p.more and len(real) != len(p.items)):
            return "%s: shown %d item(s)%s, real %d" % (at, len(p.items), " and more" if p.more else "",
                                                         len(real))
        for n, item in enumerate(p.items):
            why = match(item, real[n], "%s/%d" % (where, n))
            if why:
                return why
        return None
    if isinstance(p, Obj):
        if not isinstance(real, dict):
            return "%s: shown an object, real %s" % (at, type(real).__name__)
        for k, sub in p.members.items():
            if k not in real:
                return "%s: shown member %r is not in the real answer" % (at, k)
            why = match(sub, real[k], "%s/%s" % (where, k.replace("~", "~0").replace("/", "~1")), k)
            if why:
                return why
        extra = sorted(set(real) - set(p.members))
        if extra and not p.more:
            return "%s: real member(s) %s not shown (end the object with ...)" % (at, ", ".join(extra))
        return None
    if is_number(real) or isinstance(real, (list, dict)) or p != real or type(p) is not type(real):
        return "%s: shown %s, real %s" % (at, json.dumps(p), json.dumps(real, default=str)[:80])
    return None


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------

# curl fails (exit 22) on 4xx/5xx but still prints the body.
PRELUDE = """set -e -o pipefail
curl() { command curl --fail-with-body --show-error --max-time %d "$@"; }
""" % CURL_TIMEOUT


def curl_env():
    env = dict(os.environ)
    for k in list(env):
        if k.lower() in ("http_proxy", "https_proxy", "all_proxy"):
            del env[k]
    env["NO_PROXY"] = env["no_proxy"] = "*"
    return env


def run_block(block, port):
    script = PRELUDE + block.text.replace("localhost:8080", "127.0.0.1:%d" % port)
    try:
        p = subprocess.run(["bash", "-c", script], capture_output=True, cwd=ROOT, env=curl_env(),
                           timeout=CURL_TIMEOUT * 4)
    except subprocess.TimeoutExpired:
        return None, b"", b"timed out"
    return p.returncode, p.stdout, p.stderr


def check_example(block, shown, port):
    """None when the example passes, else why it fails."""
    pattern = None
    if shown is not None:
        try:
            pattern = ShownParser(shown.text).parse()
        except ShownError as e:
            return "%s:%d: %s" % (shown.path, shown.first, e)
    wants_error = isinstance(pattern, Obj) and "error" in pattern.members
    rc, out, err = run_block(block, port)
    if rc is None:
        return "timed out"
    if wants_error:
        if rc != 22:
            return "an error is shown, but the command exited %d (22: HTTP 4xx/5xx)" % rc
        if b"The requested URL returned error: 5" in err:
            return "an error is shown, but the answer was a 5xx: %s" % err.decode("utf-8", "replace").strip()
    elif rc != 0:
        return "exit %d: %s %s" % (rc, err.decode("utf-8", "replace").strip()[:300],
                                   out.decode("utf-8", "replace")[:200])
    if not out.strip():
        return "printed nothing"
    if pattern is None:
        return None
    try:
        real = json.loads(out, parse_float=decimal.Decimal, parse_int=decimal.Decimal)
    except ValueError as e:
        return "the answer is not one JSON document (%s): %s" % (e, out[:200])
    return match(pattern, real)


def main():
    found = []
    try:
        for path in doc_files():
            found += examples(path)
    except ValueError as e:
        print("examples: %s" % e)
        print("examples: 0 passed, 1 failed")
        return 1
    passed = failed = 0
    skipped = []
    try:
        daemon = attnd.Daemon(["--tokenizer", "gpt2=" + GPT2_VOCAB,
                               "--model", "gpt2-tiny=" + GPT2_TINY])
    except (OSError, RuntimeError) as e:
        print("daemon: FAIL %s" % e)
        print("examples: 0 passed, 1 failed")
        return 1
    with daemon as d:
        for block, shown in found:
            name = "%s:%d" % (block.path, block.first)
            first = block.text.split("\n", 1)[0].strip()
            m = NOT_RUN.match(first)
            if m:
                skipped.append("%s (%s)" % (name, m.group(1).strip()))
                continue
            why = check_example(block, shown, d.port)
            if why is None:
                passed += 1
                print("%s: ok%s" % (name, "" if shown is None else " (answer as shown)"), flush=True)
            else:
                failed += 1
                print("%s: FAIL %s" % (name, why), flush=True)
        if not d.alive():
            failed += 1
            print("daemon: FAIL it exited during the examples: %s" % d.log_tail(500))
    for s in skipped:
        print("not run: %s" % s)
    if passed + failed == 0:
        failed += 1
        print("examples: FAIL no curl example found in README.md or docs/*.md")
    print("examples: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
