#!/usr/bin/python3
"""Checks the Grafana dashboard deploy/grafana/attnd-dashboard.json.

usage: /usr/bin/python3 tests/deploy/check_grafana.py

Reads the dashboard (JSON) and checks that:
  - it is valid JSON with a uid, a title and a schemaVersion; panel ids are
    unique and every panel has a gridPos inside the 24-column grid;
  - it has a datasource template variable (type datasource, Prometheus), and
    every panel and every query uses it (uid ${datasource}); every $variable
    an expression uses is defined;
  - every PromQL expression (targets and the query variables) is balanced and
    names only known PromQL functions, and only metrics of attnd's exposition
    (METRICS below; a histogram's series as _bucket, _sum or _count), and
    matches or groups only on labels those metrics have (or job, instance;
    le on a _bucket);
  - every metric of METRICS is on some panel;
  - METRICS is what a real daemon (${ATTND_BIN:-build/attnd}) exposes: each
    family of its /metrics, after a few requests, with its TYPE and the label
    names of its series, and nothing it exposes is missing from METRICS;
  - Prometheus itself parses every panel's expression (as recording rules,
    `promtool check rules`, Grafana's $__rate_interval as 5m) when promtool
    is installed (Debian's prometheus package); otherwise that check says
    `skip`.
METRICS is the contract of /metrics (server/metrics.c, docs/deployment.md's
"Monitoring"); a metric renamed there must be renamed here and in the
dashboard.
Prints one line per check and `grafana: N passed, M failed`; exits 1 on any failure.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import attnd  # noqa: E402 (tests/lib: the daemon, and the report every suite prints)
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "attnd-dashboard.json")

# name: (type, labels), as attnd exposes them
METRICS = {
    "attnd_http_request_duration_seconds": ("histogram", {"route"}),
    "attnd_http_requests_total": ("counter", {"route", "code"}),
    "attnd_compute_queue_wait_seconds": ("histogram", {"model"}),
    "attnd_compute_duration_seconds": ("histogram", {"model"}),
    "attnd_model_requests_total": ("counter", {"model", "outcome"}),
    "attnd_connections_refused_total": ("counter", {"limit"}),
    "attnd_build_info": ("gauge", {"version", "commit", "blas"}),
    "attnd_http_requests_in_flight": ("gauge", set()),
    "attnd_compute_queue_depth": ("gauge", set()),
    "attnd_compute_running": ("gauge", set()),
    "attnd_answers_pending_bytes": ("gauge", set()),
    "attnd_bodies_receiving_bytes": ("gauge", set()),
    "attnd_connections_lingering": ("gauge", set()),
    "attnd_lingering_closes_total": ("counter", {"end"}),
    "attnd_rejections_total": ("counter", {"reason"}),
    "attnd_requests_cancelled_total": ("counter", {"reason", "stage"}),
    "attnd_compute_split_total": ("counter", set()),
    "attnd_compute_lent_workers_total": ("counter", set()),
    "attnd_http_request_bytes_total": ("counter", set()),
    "attnd_http_response_bytes_total": ("counter", set()),
    "attnd_engine_flops_total": ("counter", set()),
    "process_cpu_seconds_total": ("counter", set()),
    "process_resident_memory_bytes": ("gauge", set()),
    "process_virtual_memory_bytes": ("gauge", set()),
    "process_open_fds": ("gauge", set()),
    "process_max_fds": ("gauge", set()),
    "process_start_time_seconds": ("gauge", set()),
}
# Labels Prometheus adds to every scraped series.
TARGET_LABELS = {"job", "instance"}

# PromQL's functions and aggregations (prometheus.io/docs/prometheus/latest/querying/),
# and label_values, Grafana's variable query.
FUNCTIONS = {
    "abs", "absent", "absent_over_time", "avg", "avg_over_time", "ceil", "changes", "clamp",
    "clamp_max", "clamp_min", "count", "count_over_time", "count_values", "delta", "deriv",
    "exp", "floor", "group", "histogram_quantile", "idelta", "increase", "irate",
    "label_join", "label_replace", "last_over_time", "ln", "log2", "log10", "max",
    "max_over_time", "min", "min_over_time", "quantile", "quantile_over_time", "rate",
    "resets", "round", "scalar", "sort", "sort_desc", "sqrt", "stddev", "stdvar", "sum",
    "sum_over_time", "time", "timestamp", "topk", "bottomk", "vector", "label_values",
}
# Words of PromQL that are neither metrics nor functions.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
            "or", "unless", "offset"}

REPORT = attnd.Report("grafana")
check = REPORT.check


def series_names():
    """Every series name the exposition may hold, and the family of each."""
    names = {}
    for name, (kind, _) in METRICS.items():
        names[name] = name
        if kind == "histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                names[name + suffix] = name
    return names


def balanced(expr):
    pairs, stack = {")": "(", "]": "[", "}": "{"}, []
    for ch in re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr):
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs and (not stack or stack.pop() != pairs[ch]):
            return False
    return not stack


def label_names(expr):
    """The labels an expression matches on ({name=...}) or groups by."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    labels = set()
    for inside in re.findall(r"\{([^{}]*)\}", e):
        labels |= set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", inside))
    for inside in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^()]*)\)", e):
        labels |= set(re.findall(r"\w+", inside))
    m = re.search(r"label_values\(.*,\s*(\w+)\s*\)\s*$", e)
    if m:
        labels.add(m.group(1))
    return labels


def words(expr):
    """(metric names, function names, other words) of a PromQL expression:
    strings, label matchers {...}, ranges [...], by/without (...) label
    lists and $variables are taken out first."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"(label_values\(.*),\s*\w+\s*\)\s*$", r"\1)", e)  # its label
    e = re.sub(r"\{[^{}]*\}", " ", e)
    e = re.sub(r"\[[^\[\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", " ", e)
    e = re.sub(r"\$\{?\w+\}?", " ", e)
    e = re.sub(r"\b\d+(\.\d+)?(e[+-]?\d+)?\b", " ", e)
    metrics, funcs, other = set(), set(), set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word = m.group(0)
        if re.match(r"\s*\(", e[m.end():]):
            funcs.add(word)
        elif word in KEYWORDS:
            other.add(word)
        else:
            metrics.add(word)
    return metrics, funcs, other


def variables(expr):
    return set(re.findall(r"\$\{?(\w+)\}?", expr))


def panels_of(dash):
    out = []
    for p in dash.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []))  # a collapsed row holds its panels
    return out


def is_datasource_var(ds):
    uid = ds.get("uid") if isinstance(ds, dict) else ds
    return uid in ("${datasource}", "$datasource")


def check_promtool(exprs):
    """promtool parses each expression, as the expr of a recording rule."""
    promtool = shutil.which("promtool")
    if promtool is None:
        print("skip grafana: promtool parses every expression (promtool not installed)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rules.json")  # JSON is YAML
        rules = [{"record": "attnd:dashboard_%d" % i,
                  "expr": re.sub(r"\$\{?__(rate_interval|interval|range)\}?", "5m", e)}
                 for i, e in enumerate(exprs)]
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
        out = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
    check("grafana: promtool parses every expression (%d)" % len(exprs),
          out.returncode == 0 and bool(exprs), (out.stdout + out.stderr).strip())


def exposition():
    """{family: (type, label names)} of a live daemon's /metrics after a
    compute request, a refusal and a probe."""
    with attnd.Daemon(["--threads", "1"], log=False) as d:
        attnd.post(d.port, "/v1/attention", {"model": "tiny", "text": "the cat sat"})
        attnd.get(d.port, "/nowhere")
        attnd.get(d.port, "/healthz")
        text = attnd.get(d.port, "/metrics").body.decode()
    families = {}
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)$", line)
        if m:
            families[m.group(1)] = (m.group(2), set())
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? ", line)
        if not m:
            continue
        name = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
        fam = families.get(name) or families.get(m.group(1))
        if fam is not None and m.group(3):
            fam[1].update(re.findall(r'(\w+)="', m.group(3)))
    for name, (kind, labels) in families.items():
        if kind == "histogram":
            labels.discard("le")
    return families


def check_exposition():
    try:
        live = exposition()
    except Exception as e:  # no daemon built, or it did not start
        check("grafana: METRICS is what the daemon exposes", False, "raised %r" % e)
        return
    for name, (kind, labels) in sorted(METRICS.items()):
        got = live.get(name)
        check("grafana: the daemon exposes %s as in METRICS" % name,
              got is not None and got[0] == kind and got[1] == labels,
              "exposed as %s" % (got,))
    extra = sorted(set(live) - set(METRICS))
    check("grafana: every family the daemon exposes is in METRICS", not extra, ", ".join(extra))


def main():
    try:
        with open(DASHBOARD, encoding="utf-8") as f:
            dash = json.load(f)
        check("grafana: attnd-dashboard.json is JSON", isinstance(dash, dict))
    except (OSError, ValueError) as e:
        check("grafana: attnd-dashboard.json is JSON", False, str(e))
        return REPORT.finish()
    check("grafana: uid, title and schemaVersion",
          bool(dash.get("uid")) and bool(dash.get("title"))
          and isinstance(dash.get("schemaVersion"), int))

    tvars = (dash.get("templating") or {}).get("list", [])
    defined = {v.get("name") for v in tvars} | {"__rate_interval", "__interval", "__range"}
    ds_vars = [v for v in tvars if v.get("type") == "datasource" and v.get("query") == "prometheus"]
    check("grafana: a Prometheus datasource variable named datasource",
          [v.get("name") for v in ds_vars] == ["datasource"])

    panels = panels_of(dash)
    ids = [p.get("id") for p in panels]
    check("grafana: panel ids unique", len(ids) == len(set(ids)) and None not in ids, str(ids))
    bad_pos = [p.get("title") for p in panels
               if not all(isinstance((p.get("gridPos") or {}).get(k), int) for k in "hwxy")
               or p["gridPos"]["x"] + p["gridPos"]["w"] > 24]
    check("grafana: every panel has a gridPos in 24 columns", not bad_pos, ", ".join(bad_pos))

    exprs = []  # (where, expr)
    not_ds = []
    for p in panels:
        if p.get("type") == "row":
            continue
        if not is_datasource_var(p.get("datasource")):
            not_ds.append(p.get("title"))
        targets = p.get("targets") or []
        if not targets:
            not_ds.append("%s (no query)" % p.get("title"))
        for t in targets:
            if not is_datasource_var(t.get("datasource", p.get("datasource"))):
                not_ds.append("%s/%s" % (p.get("title"), t.get("refId")))
            exprs.append((p.get("title"), t.get("expr", "")))
    for v in tvars:
        if v.get("type") == "query":
            if not is_datasource_var(v.get("datasource")):
                not_ds.append("variable " + v["name"])
            q = v.get("query")
            exprs.append(("variable " + v["name"], q.get("query", "") if isinstance(q, dict) else q))
    check("grafana: every panel, query and variable uses ${datasource}", not not_ds,
          ", ".join(map(str, not_ds)))

    known = series_names()
    used = set()
    for where, expr in exprs:
        metrics, funcs, _ = words(expr)
        unknown = sorted(metrics - set(known))
        bad_funcs = sorted(funcs - FUNCTIONS)
        undefined = sorted(variables(expr) - defined)
        check("grafana: %s: %s" % (where, expr[:60]),
              bool(expr) and balanced(expr) and metrics and not unknown and not bad_funcs
              and not undefined,
              "unknown metrics %s, functions %s, variables %s%s"
              % (unknown, bad_funcs, undefined, "" if balanced(expr) else ", unbalanced"))
        used |= {known[m] for m in metrics if m in known}
        have = set(TARGET_LABELS)
        for m in metrics:
            if m in known:
                kind, labels = METRICS[known[m]]
                have |= labels | ({"le"} if m.endswith("_bucket") and kind == "histogram" else set())
        bad_labels = sorted(label_names(expr) - have)
        if bad_labels:
            check("grafana: %s: labels its metrics have" % where, False, ", ".join(bad_labels))
        bad_hist = sorted(m for m in metrics if METRICS.get(m, ("",))[0] == "histogram")
        if bad_hist:
            check("grafana: %s: histograms by their series (_bucket, _sum, _count)" % where,
                  False, ", ".join(bad_hist))
    check_promtool([e for w, e in exprs if not w.startswith("variable ")])
    missing = sorted(set(METRICS) - used)
    check("grafana: every metric of attnd is on a panel", not missing, ", ".join(missing))
    check_exposition()

    return REPORT.finish()


if __name__ == "__main__":
    sys.exit(main())
