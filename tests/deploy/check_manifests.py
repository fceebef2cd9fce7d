#!/usr/bin/python3
"""Checks the deployment files against each other and against the daemon.

usage: /usr/bin/python3 tests/deploy/check_manifests.py [path/to/attnd]

Reads Dockerfile, deploy/docker-compose.yml and deploy/k8s/*.yaml (python3-yaml)
and the routing table and options of the built daemon (`attnd --routes`,
`attnd --help`; build/attnd unless named), and checks that:
  - every file is well-formed YAML; every Kubernetes object has apiVersion,
    kind and metadata.name; kustomization.yaml lists every file and no other;
  - the probes and health checks GET real routes, readiness on /readyz and
    liveness on /healthz;
  - one port everywhere: the Dockerfile's EXPOSE and ATTND_PORT, the
    ConfigMap's ATTND_PORT, the container port, the probes', the Service's
    target, compose's container side;
  - the grace periods outlast the drain (ATTND_DRAIN_SECONDS, plus the
    preStop pause in Kubernetes);
  - the pod runs as the image's non-root numeric user with a read-only root
    and resource requests and limits; the Service, PDB and HPA select it;
  - every ATTND_* key is an option attnd knows;
  - the Dockerfile's build stage installs the Makefile's CHECK_DEB_PACKAGES
    (what building and the C suites need; the rest of `make test` runs
    outside the image).
Prints one line per check and `N passed, M failed`; exits 1 on any failure.
"""
import os
import re
import shlex
import subprocess
import sys

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
K8S = os.path.join(ROOT, "deploy", "k8s")
COMPOSE = os.path.join(ROOT, "deploy", "docker-compose.yml")
DOCKERFILE = os.path.join(ROOT, "Dockerfile")


passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name + (": " + detail if detail else ""))


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---- inputs ---------------------------------------------------------------

def attnd_facts(attnd):
    """(set of GET paths, set of ATTND_* option names) from the daemon."""
    routes = subprocess.run([attnd, "--routes"], capture_output=True, text=True, check=True)
    gets = set()
    for line in routes.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "GET":
            gets.add(parts[1])
    helptext = subprocess.run([attnd, "--help"], capture_output=True, text=True, check=True)
    envs = set(re.findall(r"\bATTND_[A-Z_]+\b", helptext.stdout))
    return gets, envs


def dockerfile_facts(text):
    """The runtime stage's EXPOSE ports, ENV, USER, STOPSIGNAL and HEALTHCHECK,
    and the build stage's apt-get packages."""
    text = re.sub(r"\\\n", " ", text)  # join continuation lines
    stages = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            stages.append({"from": rest, "expose": set(), "env": {}, "user": None,
                           "stopsignal": None, "healthcheck": None, "packages": set()})
            continue
        if not stages:
            continue
        st = stages[-1]
        if word == "EXPOSE":
            st["expose"].update(int(p.split("/")[0]) for p in rest.split())
        elif word == "ENV":
            for tok in shlex.split(rest):
                key, _, value = tok.partition("=")
                st["env"][key] = value
        elif word == "USER":
            st["user"] = rest.strip()
        elif word == "STOPSIGNAL":
            st["stopsignal"] = rest.strip()
        elif word == "HEALTHCHECK":
            st["healthcheck"] = rest
        elif word == "RUN" and "apt-get install" in rest:
            for cmd in re.split(r"&&|;", rest):
                if "apt-get install" in cmd:
                    st["packages"].update(t for t in cmd.split()
                                          if re.match(r"^[a-z0-9][a-z0-9.+-]+$", t)
                                          and t not in ("apt-get", "install"))
    return stages


def makefile_packages(text, name="CHECK_DEB_PACKAGES"):
    """The words of a Makefile variable, $(OTHER) references expanded."""
    text = re.sub(r"\\\n", " ", text)
    m = re.search(r"^" + name + r"\s*:?=(.*)$", text, re.M)
    if m is None:
        return set()
    words = set()
    for w in m.group(1).split():
        ref = re.fullmatch(r"\$\((\w+)\)", w)
        words |= makefile_packages(text, ref.group(1)) if ref else {w}
    return words


def load_yaml_docs(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def duration_seconds(value):
    """Compose durations such as 20s, 1m30s, or a bare number of seconds."""
    if isinstance(value, (int, float)):
        return float(value)
    total = 0.0
    for amount, unit in re.findall(r"([0-9.]+)(ms|s|m|h)", str(value)):
        total += float(amount) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def url_port_path(url):
    m = re.match(r"^https?://[^/:]+(?::([0-9]+))?(/[^\s\"']*)", url)
    return (int(m.group(1)) if m.group(1) else 80, m.group(2)) if m else (None, None)


# ---- checks ---------------------------------------------------------------

def check_dockerfile(runtime, build_stage, gets, env_names, deb_packages):
    port = int(runtime["env"].get("ATTND_PORT", "0") or 0)
    check("Dockerfile: EXPOSE is one port, ATTND_PORT's",
          runtime["expose"] == {port}, "EXPOSE %s, ATTND_PORT %s" % (runtime["expose"], port))
    check("Dockerfile: STOPSIGNAL SIGTERM", runtime["stopsignal"] == "SIGTERM")
    check("Dockerfile: OPENBLAS_NUM_THREADS=1", runtime["env"].get("OPENBLAS_NUM_THREADS") == "1")
    user = (runtime["user"] or "").split(":")[0]
    check("Dockerfile: USER is numeric and not root",
          user.isdigit() and int(user) != 0, "USER %r" % runtime["user"])
    hc = runtime["healthcheck"] or ""
    urls = re.findall(r"https?://\S+", hc)
    path = url_port_path(urls[0].replace("${ATTND_PORT:-%d}" % port, str(port)))[1] if urls else None
    check("Dockerfile: HEALTHCHECK runs attnd --probe on a route",
          "attnd --probe" in hc and path in gets, hc)
    unknown = sorted(k for k in runtime["env"] if k.startswith("ATTND_") and k not in env_names)
    check("Dockerfile: every ATTND_* is an attnd option", not unknown, ", ".join(unknown))
    missing = sorted(deb_packages - build_stage["packages"])
    check("Dockerfile: build stage installs the Makefile's CHECK_DEB_PACKAGES",
          bool(deb_packages) and not missing, "missing " + ", ".join(missing))
    return port, int(user) if user.isdigit() else None


def check_kustomization(docs_by_file):
    kust = docs_by_file.get("kustomization.yaml", [{}])[0]
    listed = set(kust.get("resources", []))
    present = set(docs_by_file) - {"kustomization.yaml"}
    check("k8s: kustomization.yaml lists every file",
          listed == present, "listed %s, present %s" % (sorted(listed), sorted(present)))


def check_objects(objects):
    bad = [o.get("kind", "?") for o in objects
           if not (o.get("apiVersion") and o.get("kind") and (o.get("metadata") or {}).get("name"))]
    check("k8s: every object has apiVersion, kind, metadata.name", not bad, ", ".join(bad))
    kinds = {o["kind"] for o in objects if "kind" in o}
    want = {"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget", "ConfigMap"}
    check("k8s: Deployment, Service, HPA, PDB, ConfigMap present",
          want <= kinds, "missing " + ", ".join(sorted(want - kinds)))


def probe_port_ok(probe, ports_by_name, port):
    p = (probe.get("httpGet") or {}).get("port")
    return p == port or ports_by_name.get(p) == port


def check_deployment(dep, config, gets, image_port, image_user, env_names):
    spec = dep["spec"]["template"]["spec"]
    ctr = spec["containers"][0]
    ports_by_name = {p.get("name"): p["containerPort"] for p in ctr.get("ports", [])}
    cport = list(ports_by_name.values())
    cfg = config.get("data", {})
    check("k8s: containerPort = EXPOSE = ConfigMap ATTND_PORT",
          cport == [image_port] and cfg.get("ATTND_PORT") == str(image_port),
          "containerPort %s, EXPOSE %s, ATTND_PORT %r" % (cport, image_port, cfg.get("ATTND_PORT")))
    for kind, want in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz"),
                       ("startupProbe", None)):
        probe = ctr.get(kind)
        if probe is None and want is None:
            continue
        path = ((probe or {}).get("httpGet") or {}).get("path")
        check("k8s: %s GETs %s on the container port" % (kind, path),
              path in gets and (want is None or path == want)
              and probe_port_ok(probe, ports_by_name, image_port),
              "path %r (routes: %s)" % (path, " ".join(sorted(gets))))
    drain = int(cfg.get("ATTND_DRAIN_SECONDS", 10))
    grace = spec.get("terminationGracePeriodSeconds", 30)
    pre = ((ctr.get("lifecycle") or {}).get("preStop") or {}).get("exec", {}).get("command", [])
    pause = int(pre[1]) if len(pre) == 2 and pre[0] == "sleep" and pre[1].isdigit() else 0
    check("k8s: terminationGracePeriodSeconds %s > preStop %s + drain %s" % (grace, pause, drain),
          grace > pause + drain)
    psc, csc = spec.get("securityContext") or {}, ctr.get("securityContext") or {}
    non_root = csc.get("runAsNonRoot", psc.get("runAsNonRoot"))
    uid = csc.get("runAsUser", psc.get("runAsUser", image_user))
    check("k8s: runAsNonRoot as the image's user %s" % image_user,
          non_root is True and uid == image_user and uid != 0, "runAsUser %r" % uid)
    check("k8s: readOnlyRootFilesystem", csc.get("readOnlyRootFilesystem") is True)
    res = ctr.get("resources") or {}
    check("k8s: cpu and memory requests and limits",
          all(k in res.get(s, {}) for s in ("requests", "limits") for k in ("cpu", "memory")))
    refs = [e["configMapRef"]["name"] for e in ctr.get("envFrom", []) if "configMapRef" in e]
    check("k8s: the container reads the ConfigMap",
          config["metadata"]["name"] in refs, "envFrom %s" % refs)
    unknown = sorted(k for k in cfg if k.startswith("ATTND_") and k not in env_names)
    check("k8s: every ConfigMap key is an attnd option", not unknown, ", ".join(unknown))
    mounts = {m["mountPath"] for m in ctr.get("volumeMounts", [])}
    check("k8s: models mounted at /models", "/models" in mounts, str(sorted(mounts)))
    return ports_by_name


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_service_hpa_pdb(by_kind, dep, ports_by_name, image_port):
    labels = dep["spec"]["template"]["metadata"].get("labels", {})
    sel = dep["spec"].get("selector", {}).get("matchLabels")
    check("k8s: Deployment selector matches its template", selects(sel, labels))
    if not {"Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"} <= set(by_kind):
        return  # already reported missing
    svc = by_kind["Service"]
    check("k8s: Service selects the pods", selects(svc["spec"].get("selector"), labels))
    targets = [p.get("targetPort") for p in svc["spec"].get("ports", [])]
    check("k8s: Service targets the container port",
          targets and all(t == image_port or ports_by_name.get(t) == image_port for t in targets),
          "targetPort %s" % targets)
    pdb = by_kind["PodDisruptionBudget"]
    check("k8s: PodDisruptionBudget selects the pods",
          selects(pdb["spec"].get("selector", {}).get("matchLabels"), labels))
    ref = by_kind["HorizontalPodAutoscaler"]["spec"].get("scaleTargetRef", {})
    check("k8s: HPA scales the Deployment",
          ref.get("kind") == "Deployment" and ref.get("name") == dep["metadata"]["name"])


def check_compose(compose, gets, image_port, env_names):
    svc = (compose.get("services") or {}).get("attnd") or {}
    inside = [int(str(p).split(":")[-1].split("/")[0]) for p in svc.get("ports", [])]
    env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
    port = int(env.get("ATTND_PORT", image_port))
    check("compose: container port = EXPOSE = ATTND_PORT",
          inside == [image_port] and port == image_port, "ports %s, ATTND_PORT %s" % (inside, port))
    test = " ".join(str(t) for t in (svc.get("healthcheck") or {}).get("test", []))
    urls = re.findall(r"https?://\S+", test)
    hport, hpath = url_port_path(urls[0]) if urls else (None, None)
    check("compose: healthcheck runs attnd --probe on a route and the port",
          "attnd --probe" in test and hpath in gets and hport == port, test)
    drain = int(env.get("ATTND_DRAIN_SECONDS", 10))
    grace = duration_seconds(svc.get("stop_grace_period", 10))
    check("compose: stop_grace_period %gs > drain %ds" % (grace, drain), grace > drain)
    limits = (((svc.get("deploy") or {}).get("resources") or {}).get("limits") or {})
    check("compose: cpu and memory limits", "cpus" in limits and "memory" in limits)
    vols = [str(v) for v in svc.get("volumes", [])]
    check("compose: models volume at /models", any(":/models" in v for v in vols), str(vols))
    unknown = sorted(k for k in env if k.startswith("ATTND_") and k not in env_names)
    check("compose: every ATTND_* is an attnd option", not unknown, ", ".join(unknown))


def main():
    attnd = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "attnd")
    if not os.access(attnd, os.X_OK):
        print("FAIL %s not built (make build/attnd)" % attnd)
        print("0 passed, 1 failed")
        return 1
    gets, env_names = attnd_facts(attnd)
    stages = dockerfile_facts(read(DOCKERFILE))
    check("Dockerfile: a build and a runtime stage on debian:bookworm-slim",
          len(stages) >= 2 and all(s["from"].startswith("debian:bookworm-slim") for s in stages))
    image_port, image_user = check_dockerfile(stages[-1], stages[0], gets, env_names,
                                              makefile_packages(read(os.path.join(ROOT, "Makefile"))))

    docs_by_file = {}
    for name in sorted(os.listdir(K8S)):
        if not name.endswith((".yaml", ".yml")):
            continue
        try:
            docs_by_file[name] = load_yaml_docs(os.path.join(K8S, name))
            check("yaml: deploy/k8s/%s" % name, bool(docs_by_file[name]))
        except yaml.YAMLError as e:
            docs_by_file[name] = []
            check("yaml: deploy/k8s/%s" % name, False, str(e).replace("\n", " "))
    try:
        compose = load_yaml_docs(COMPOSE)[0]
        check("yaml: deploy/docker-compose.yml", isinstance(compose, dict))
    except (yaml.YAMLError, IndexError) as e:
        compose = None
        check("yaml: deploy/docker-compose.yml", False, str(e).replace("\n", " "))

    check_kustomization(docs_by_file)
    objects = [d for f, ds in docs_by_file.items() if f != "kustomization.yaml" for d in ds]
    check_objects(objects)
    by_kind = {o.get("kind"): o for o in objects}
    if {"Deployment", "ConfigMap"} <= set(by_kind):
        dep = by_kind["Deployment"]
        ports_by_name = check_deployment(dep, by_kind["ConfigMap"], gets, image_port,
                                         image_user, env_names)
        check_service_hpa_pdb(by_kind, dep, ports_by_name, image_port)
    if compose is not None:
        check_compose(compose, gets, image_port, env_names)

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
