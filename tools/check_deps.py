#!/usr/bin/env python3
"""check_deps.py: the layers point one way (make check-deps).

    engine/  <-  api/  <-  server/        common/ below api/ and server/
    tokenizer/ <- api/                    (tokenizer/ uses common/ only)

Checks, for every C file of the four folders:
  1. its project includes are among those its folder may use (ALLOWED);
  2. its system includes and calls keep to its folder's rules (FORBIDDEN);
  3. no two files have one name in different folders;
  4. no include cycle among the project's headers;
  5. with BUILD given (a built tree), no call cycle between api/'s objects:
     what a handler calls back lives below the dispatcher, not beside it.
Prints one line per violation and exits 1 if there is any.

Usage: tools/check_deps.py [BUILD]
"""
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# folder -> the project folders (or single headers) its files may include.
ALLOWED = {
    "common": ["common/"],
    "engine": ["engine/"],
    "tokenizer": ["tokenizer/", "common/"],
    "api": ["engine/", "tokenizer/", "common/", "api/"],
    "server": ["engine/", "common/", "server/",
               # the API as the server sees it: the service, its errors,
               # the OpenAPI document (served as a static file), and the
               # vocabulary, tokenizer and checkpoint file readers used at
               # start-up
               "api/service.h", "api/error.h", "api/openapi.h", "api/vocab.h",
               "api/tokenizer_file.h", "api/checkpoint_config.h"],
}

# folder -> regexes no file of it may contain, and why.
LIBC_IO = r"\b(getenv|exit|printf|fprintf|puts|fopen) *\("
FORBIDDEN = {
    "engine": [(r"#include *<(microhttpd|jansson)\.h>", "the engine speaks neither HTTP nor JSON"),
               (LIBC_IO, "the engine does no I/O and never exits")],
    "tokenizer": [(r"#include *<(microhttpd|jansson)\.h>",
                   "the tokenizer speaks neither HTTP nor JSON (api/ reads its file)"),
                  (LIBC_IO, "the tokenizer does no I/O and never exits")],
    "common": [(r"#include *<(microhttpd|jansson)\.h>", "common/ is below both api/ and server/"),
               (LIBC_IO, "common/ does no I/O and never exits")],
    "api": [(r"#include *<microhttpd\.h>", "api/ does not speak HTTP")],
    "server": [(r"#include *<jansson\.h>", "server/ does not speak JSON")],
}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def sources():
    out = []
    for top in ALLOWED:
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in names:
                if n.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(dirpath, n), ROOT))
    return sorted(out)


def resolve(path, inc):
    """The repository path an include names: its own folder first, then the root."""
    local = os.path.normpath(os.path.join(os.path.dirname(path), inc))
    if os.path.exists(os.path.join(ROOT, local)):
        return local
    return os.path.normpath(inc)


def check_files(files, errors):
    graph = {}
    for path in files:
        top = path.split("/")[0]
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        graph[path] = []
        for inc in INCLUDE.findall(text):
            target = resolve(path, inc)
            graph[path].append(target)
            if not any(target == a or (a.endswith("/") and target.startswith(a))
                       for a in ALLOWED[top]):
                errors.append(f"{path}: includes {target}, which {top}/ may not")
        code = re.sub(r"/\*.*?\*/|//[^\n]*", lambda m: "\n" * m.group(0).count("\n"), text,
                      flags=re.S)
        for pattern, why in FORBIDDEN.get(top, []):
            for m in re.finditer(pattern, code):
                line = code.count("\n", 0, m.start()) + 1
                errors.append(f"{path}:{line}: {m.group(0).strip()}: {why}")
    return graph


def check_names(files, errors):
    seen = {}
    for path in files:
        seen.setdefault(os.path.basename(path), []).append(path)
    for name, paths in sorted(seen.items()):
        if len(paths) > 1:
            errors.append(f"{name}: one name for {', '.join(paths)}")


def cycles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def call_graph(build):
    """api/'s objects -> the api/ objects whose functions they call (nm)."""
    objs = []
    for dirpath, _, names in os.walk(os.path.join(build, "api")):
        objs += [os.path.join(dirpath, n) for n in names if n.endswith(".o")]
    defined, used = {}, {}
    for o in objs:
        name = os.path.relpath(o, build)[:-2] + ".c"
        used[name] = set()
        for line in subprocess.check_output(["nm", o], text=True).splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBR":
                defined[parts[2]] = name
            elif len(parts) == 2 and parts[0] == "U":
                used[name].add(parts[1])
    return {n: sorted({defined[s] for s in syms if s in defined and defined[s] != n})
            for n, syms in used.items()}


def main():
    errors = []
    files = sources()
    graph = check_files(files, errors)
    check_names(files, errors)
    for comp in cycles(graph):
        errors.append("include cycle: " + " <-> ".join(comp))
    if len(sys.argv) > 1:
        for comp in cycles(call_graph(sys.argv[1])):
            errors.append("call cycle in api/: " + " <-> ".join(comp))
    for e in errors:
        print("check-deps: " + e)
    if errors:
        print(f"check-deps: {len(errors)} violations")
        return 1
    print(f"check-deps: layering ok ({len(files)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
