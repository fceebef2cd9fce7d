#!/usr/bin/python3
"""check_options.py: docs/options.md's table against `attnd --help`, both ways.

usage: ATTND_BIN=build/attnd /usr/bin/python3 tests/docs/check_options.py

Standard library only. `attnd --help` prints, for each option of the table in
server/config.c,

      --flag   ATTND_ENV (or "(no env)")   default: TEXT (or "(none)")
          help

and docs/options.md has a Markdown table `| flag | env | default | meaning |`
whose rows start with a flag in backquotes. Checked:
  - every flag of --help has a row, and every row's flag is in --help;
  - the env cell is that flag's variable in backquotes, or empty for "(no env)";
  - the default cell starts with --help's default in backquotes (`(none)`
    included); words may follow it (`16777216` (16 MiB));
  - a bad value of every option whose default is a number or a boolean, and
    of --log-format, stops attnd with exit status 2 and a message naming where
    the value came from: the flag (`--port=x1`), or the variable (for a
    number, with a good flag after it: the flag wins, but a bad variable is
    still refused, by its name); a bad ATTND_HOST, and a body budget below
    --max-body, name the variables too; so do an empty --api-key and
    --cors-origins that no browser's Origin could match, while good lists
    start.
Prints one line per flag and, last, `options: N passed, M failed`; exits 1 on
any failure.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "options.md")
HELP_LINE = re.compile(r"^  (--[a-z0-9-]+)\s+(\(no env\)|\S+)\s+default: (.*)$")


def attnd_bin():
    path = os.environ.get("ATTND_BIN", "build/attnd")
    return path if os.path.isabs(path) else os.path.join(ROOT, path)


def help_options():
    """{flag: (env or None, default text)} from `attnd --help`."""
    out = subprocess.run([attnd_bin(), "--help"], capture_output=True, text=True, timeout=30,
                         check=True).stdout
    opts = {}
    for line in out.splitlines():
        m = HELP_LINE.match(line)
        if m:
            env = None if m.group(2) == "(no env)" else m.group(2)
            opts[m.group(1)] = (env, m.group(3).strip())
    return opts


BAD_VALUE = "x1"  # neither a number, a boolean nor a log format


def refused(args, env, name, tail=("--version",)):
    """None when `attnd ARGS --version` (ARGS TAIL) with ENV exits 2 naming NAME, else why not."""
    try:
        run = subprocess.run([attnd_bin()] + args + list(tail), capture_output=True,
                             text=True, timeout=30, env=dict(os.environ, **env))
    except (OSError, subprocess.SubprocessError) as e:
        return "did not run: %s" % e
    if run.returncode != 2:
        return "exit %d, not 2, for a bad value" % run.returncode
    if name not in run.stderr:
        return "the message does not name %s: %r" % (name, run.stderr.strip())
    return None


def accepted(args):
    """None when `attnd ARGS --version` exits 0, else why not."""
    try:
        run = subprocess.run([attnd_bin()] + args + ["--version"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return "did not run: %s" % e
    if run.returncode != 0:
        return "exit %d: %s" % (run.returncode, run.stderr.strip())
    return None


def checks_values(default):
    return re.fullmatch(r"[0-9]+|true|false|text", default) is not None


def code_span(cell):
    """The first `...` of a cell and what follows it, or (None, cell)."""
    m = re.match(r"^`([^`]*)`(.*)$", cell.strip())
    return (m.group(1), m.group(2)) if m else (None, cell.strip())


def doc_options():
    """{flag: (env cell, default cell)} from the table rows of docs/options.md."""
    rows = {}
    with open(DOC, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("| `--"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            flag, _ = code_span(cells[0])
            rows[flag] = (cells[1], cells[2] if len(cells) > 2 else "")
    return rows


def main():
    passed = failed = 0

    def check(name, why):
        nonlocal passed, failed
        if why is None:
            passed += 1
            print("%s: ok" % name)
        else:
            failed += 1
            print("%s: FAIL %s" % (name, why))

    try:
        helps = help_options()
    except (OSError, subprocess.SubprocessError) as e:
        helps = {}
        check("--help", "`%s --help` failed: %s" % (attnd_bin(), e))
    docs = doc_options()
    if not helps and failed == 0:
        check("--help", "no option lines found in `attnd --help`")
    for flag, (env, default) in helps.items():
        if flag not in docs:
            check(flag, "in `attnd --help`, not in docs/options.md")
            continue
        env_cell, def_cell = docs[flag]
        why = None
        doc_env, _ = code_span(env_cell)
        if env is None and env_cell != "":
            why = "--help has no env var, docs/options.md says %r" % env_cell
        elif env is not None and doc_env != env:
            why = "env: --help says %s, docs/options.md %r" % (env, env_cell)
        doc_def, _ = code_span(def_cell)
        if why is None and doc_def != default:
            why = "default: --help says %r, docs/options.md %r" % (default, def_cell)
        check(flag, why)
    for flag, (env, default) in helps.items():
        if env is None or not checks_values(default):
            continue
        check(flag + "=" + BAD_VALUE, refused([flag + "=" + BAD_VALUE], {}, flag))
        good = [flag, default] if default.isdigit() else []
        check(env + "=" + BAD_VALUE, refused(good, {env: BAD_VALUE}, env))
    # checked once every source is read, so named by both names: --host at
    # the bind (hence no --version), the body budget against --max-body
    start = ("--no-builtins", "--port", "0")
    check("ATTND_HOST=" + BAD_VALUE, refused([], {"ATTND_HOST": BAD_VALUE}, "ATTND_HOST", start))
    check("ATTND_MAX_RECEIVING_MB=1",
          refused([], {"ATTND_MAX_RECEIVING_MB": "1"}, "ATTND_MAX_RECEIVING_MB"))
    # an empty key would mean no authentication: refused, from either source
    check("--api-key=", refused(["--api-key="], {}, "--api-key"))
    check("ATTND_API_KEY=", refused([], {"ATTND_API_KEY": ""}, "ATTND_API_KEY"))
    # origins the byte-for-byte match could never meet, and '*' in a list
    for bad in ("https://a.example/", "https://A.example", "a.example", "https://*.example",
                "*,https://a.example", "https://a.example/app"):
        check("--cors-origins=" + bad, refused(["--cors-origins=" + bad], {}, "--cors-origins"))
    check("ATTND_CORS_ORIGINS=https://a.example/",
          refused([], {"ATTND_CORS_ORIGINS": "https://a.example/"}, "ATTND_CORS_ORIGINS"))
    for good in ("", " * ", "null", "https://a.example, http://localhost:5173",
                 "http://[::1]:8080"):
        check("--cors-origins=" + repr(good), accepted(["--cors-origins=" + good]))
    for flag in docs:
        if helps and flag not in helps:
            check(flag, "in docs/options.md, not in `attnd --help`")
    print("options: %d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
