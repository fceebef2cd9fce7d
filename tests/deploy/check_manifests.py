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
  - every ATTND_* key is an option attnd knows, and every variable the
    container sets is one (or OPENBLAS_NUM_THREADS);
  - the pod template carries the prometheus.io scrape annotations (the
    container port, /metrics); ATTND_API_KEY comes from a Secret with
    secretKeyRef optional: true (no key is ever committed); requests equal
    limits (Guaranteed QoS) in whole CPUs, which attnd's workers follow;
  - the optional components deploy/k8s/*/ (kind Component): the
    ServiceMonitor selects the Service, scrapes a named port on /metrics;
    the api-key generator makes the Secret the Deployment reads, from a file
    .gitignore keeps out of the repository;
  - the KServe example of docs/deployment.md (its ```yaml block naming
    serving.kserve.io): a ServingRuntime and an InferenceService with only
    fields KServe defines, the runtime's format and v2 protocol asked for,
    one port, probes on real routes, and only attnd's flags and variables;
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
DEPLOY_DOC = os.path.join(ROOT, "docs", "deployment.md")
GITIGNORE = os.path.join(ROOT, ".gitignore")

# Variables a container of attnd may set that are not attnd options.
OTHER_ENV = {"OPENBLAS_NUM_THREADS"}


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
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", helptext.stdout))
    return gets, envs, flags


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
    env = {e["name"]: e for e in ctr.get("env", [])}
    unknown = sorted(k for k in env if k not in env_names and k not in OTHER_ENV)
    check("k8s: every container variable is an attnd option", not unknown, ", ".join(unknown))
    check_scrape_annotations(dep["spec"]["template"]["metadata"].get("annotations") or {},
                             gets, image_port)
    check_api_key(env.get("ATTND_API_KEY"))
    check_qos(res, cfg)
    return ports_by_name


def check_scrape_annotations(ann, gets, image_port):
    check("k8s: pod annotation prometheus.io/scrape \"true\"",
          ann.get("prometheus.io/scrape") == "true", str(ann))
    check("k8s: pod annotation prometheus.io/port is the container port",
          ann.get("prometheus.io/port") == str(image_port), str(ann))
    check("k8s: pod annotation prometheus.io/path is /metrics, a route",
          ann.get("prometheus.io/path") == "/metrics" and "/metrics" in gets, str(ann))


def secret_ref(entry):
    return ((entry or {}).get("valueFrom") or {}).get("secretKeyRef") or {}


def check_api_key(entry):
    ref = secret_ref(entry)
    check("k8s: ATTND_API_KEY from a Secret (secretKeyRef, optional: true), no value",
          bool(ref.get("name")) and bool(ref.get("key")) and ref.get("optional") is True
          and "value" not in (entry or {}), str(entry))


def cpu_cores(quantity):
    """A whole number of CPUs from a quantity ("2", 2, "2000m"), else None."""
    q = str(quantity)
    if q.endswith("m") and q[:-1].isdigit() and int(q[:-1]) % 1000 == 0:
        return int(q[:-1]) // 1000
    return int(q) if q.isdigit() else None


def check_qos(res, cfg):
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    check("k8s: requests equal limits (Guaranteed QoS)",
          bool(lim) and all(str(req.get(k)) == str(lim[k]) for k in ("cpu", "memory")),
          "requests %s, limits %s" % (req, lim))
    cores = cpu_cores(lim.get("cpu"))
    threads = str(cfg.get("ATTND_THREADS", "0"))
    check("k8s: whole CPUs, and ATTND_THREADS 0 (one worker per CPU) or that count",
          cores is not None and cores > 0 and threads in ("0", str(cores)),
          "limits.cpu %r, ATTND_THREADS %r" % (lim.get("cpu"), threads))


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


# ---- optional components: deploy/k8s/*/kustomization.yaml -------------------

def load_components():
    """{dir name: (its kustomization, {file: docs})} for each subdirectory."""
    comps = {}
    for name in sorted(os.listdir(K8S)):
        path = os.path.join(K8S, name)
        kfile = os.path.join(path, "kustomization.yaml")
        if not (os.path.isdir(path) and os.path.isfile(kfile)):
            continue
        files = {}
        for f in sorted(os.listdir(path)):
            if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml":
                files[f] = load_yaml_docs(os.path.join(path, f))
        comps[name] = (load_yaml_docs(kfile)[0], files)
    return comps


def gitignored(relpath):
    lines = [l.strip() for l in read(GITIGNORE).splitlines()]
    return "/" + relpath in lines or relpath in lines


def check_components(by_kind, dep, gets):
    comps = load_components()
    for name, (kust, files) in comps.items():
        check("k8s/%s: a kustomize Component listing every file" % name,
              kust.get("kind") == "Component"
              and kust.get("apiVersion") == "kustomize.config.k8s.io/v1alpha1"
              and set(kust.get("resources", [])) == set(files),
              "kind %r, resources %s, files %s" % (kust.get("kind"), kust.get("resources"),
                                                   sorted(files)))
    monitors = [d for _, fs in comps.values() for ds in fs.values() for d in ds
                if d.get("kind") == "ServiceMonitor"]
    check("k8s: a ServiceMonitor in a component, not in the base",
          len(monitors) == 1 and "ServiceMonitor" not in by_kind)
    if monitors and "Service" in by_kind:
        sm, svc = monitors[0], by_kind["Service"]
        check("k8s: ServiceMonitor is monitoring.coreos.com/v1",
              sm.get("apiVersion") == "monitoring.coreos.com/v1")
        check("k8s: ServiceMonitor selects the Service",
              selects(sm["spec"].get("selector", {}).get("matchLabels"),
                      svc["metadata"].get("labels", {})))
        names = {p.get("name") for p in svc["spec"].get("ports", [])}
        eps = sm["spec"].get("endpoints", [])
        check("k8s: ServiceMonitor scrapes a named Service port on /metrics",
              bool(eps) and all(e.get("port") in names and e.get("path") == "/metrics"
                                and "/metrics" in gets for e in eps), str(eps))
    ref = secret_ref(next((e for e in dep["spec"]["template"]["spec"]["containers"][0]
                           .get("env", []) if e["name"] == "ATTND_API_KEY"), None))
    gens = [(name, g) for name, (kust, _) in comps.items()
            for g in kust.get("secretGenerator", [])]
    check("k8s: a component generates the Secret ATTND_API_KEY reads",
          any(g.get("name") == ref.get("name") for _, g in gens), str(gens))
    for name, g in gens:
        check("k8s/%s: the Secret's values come from files, never literals" % name,
              not g.get("literals") and (g.get("envs") or g.get("files")), str(g))
        for f in g.get("envs", []) + g.get("files", []):
            rel = "deploy/k8s/%s/%s" % (name, f.split("=")[-1])
            check("k8s/%s: %s is in .gitignore, not committed" % (name, rel), gitignored(rel))
            example = os.path.join(ROOT, rel + ".example")
            keys = [l.split("=")[0] for l in read(example).splitlines()
                    if l and not l.startswith("#")] if os.path.isfile(example) else []
            check("k8s/%s: %s.example holds the key %r" % (name, rel, ref.get("key")),
                  keys == [ref.get("key")], str(keys))


# ---- the KServe example of docs/deployment.md ---------------------------------

# The fields KServe defines on what the example uses (serving.kserve.io
# v1alpha1 ServingRuntimeSpec, v1beta1 InferenceServiceSpec / PredictorSpec /
# ModelSpec), and a core/v1 Container's; a field outside them is a typo or
# something KServe would refuse.
RUNTIME_SPEC = {"supportedModelFormats", "protocolVersions", "containers", "multiModel",
                "disabled", "builtInAdapter", "grpcEndpoint", "grpcDataEndpoint",
                "httpDataEndpoint", "replicas", "storageHelper", "annotations", "labels",
                "affinity", "nodeSelector", "tolerations", "volumes", "imagePullSecrets",
                "workerSpec", "hostIPC"}
MODEL_FORMAT = {"name", "version", "autoSelect", "priority"}
PREDICTOR = {"model", "minReplicas", "maxReplicas", "scaleTarget", "scaleMetric",
             "containerConcurrency", "timeout", "canaryTrafficPercent", "logger", "batcher",
             "serviceAccountName", "nodeSelector", "tolerations", "affinity", "annotations",
             "labels", "volumes", "imagePullSecrets"}
MODEL = {"modelFormat", "runtime", "protocolVersion", "storageUri", "args", "env",
         "resources", "name", "image", "ports", "readinessProbe", "livenessProbe"}
CONTAINER = {"name", "image", "command", "args", "env", "envFrom", "ports", "resources",
             "readinessProbe", "livenessProbe", "startupProbe", "securityContext",
             "volumeMounts", "imagePullPolicy", "workingDir", "lifecycle"}


def kserve_example():
    """The docs of the ```yaml block of docs/deployment.md naming
    serving.kserve.io, or None."""
    for block in re.findall(r"```yaml\n(.*?)```", read(DEPLOY_DOC), re.S):
        if "serving.kserve.io" in block:
            return [d for d in yaml.safe_load_all(block) if d is not None]
    return None


def extra_fields(obj, allowed):
    return sorted(set(obj or {}) - allowed)


def check_kserve_container(ctr, gets, env_names, flags, image_port):
    env = {e["name"]: e for e in ctr.get("env", [])}
    bad = extra_fields(ctr, CONTAINER)
    check("kserve: container fields are a Container's", not bad, ", ".join(bad))
    check("kserve: the container is kserve-container with an image",
          ctr.get("name") == "kserve-container" and bool(ctr.get("image")))
    unknown = sorted(k for k in env if k not in env_names and k not in OTHER_ENV)
    check("kserve: every variable is an attnd option (no PROTOCOL)", not unknown,
          ", ".join(unknown))
    args = [a for a in ctr.get("args", []) if str(a).startswith("--")]
    check("kserve: every flag is an attnd option",
          all(a.split("=")[0] in flags for a in args), str(args))
    ports = [p.get("containerPort") for p in ctr.get("ports", [])]
    port = int((env.get("ATTND_PORT") or {}).get("value", image_port))
    check("kserve: containerPort = ATTND_PORT = the image's port",
          ports == [image_port] and port == image_port, "ports %s, ATTND_PORT %s" % (ports, port))
    for kind in ("readinessProbe", "livenessProbe"):
        get = (ctr.get(kind) or {}).get("httpGet") or {}
        check("kserve: %s GETs a route on the port" % kind,
              get.get("path") in gets and get.get("port") == image_port, str(get))
    check("kserve: ATTND_API_KEY, when set, comes from a Secret",
          "ATTND_API_KEY" not in env or check_key_ref(env["ATTND_API_KEY"]))
    res = ctr.get("resources") or {}
    check("kserve: requests equal limits",
          res.get("requests") == res.get("limits") and bool(res.get("limits")), str(res))


def check_key_ref(entry):
    ref = secret_ref(entry)
    return bool(ref.get("name")) and ref.get("optional") is True and "value" not in entry


def check_kserve_example(gets, env_names, flags, image_port):
    docs = kserve_example()
    check("kserve: docs/deployment.md has the example", bool(docs))
    if not docs:
        return
    by = {d.get("kind"): d for d in docs}
    rt, isvc = by.get("ServingRuntime"), by.get("InferenceService")
    check("kserve: a ServingRuntime (v1alpha1) and an InferenceService (v1beta1), named",
          rt is not None and isvc is not None and len(docs) == 2
          and rt.get("apiVersion") == "serving.kserve.io/v1alpha1"
          and isvc.get("apiVersion") == "serving.kserve.io/v1beta1"
          and all((d.get("metadata") or {}).get("name") for d in docs),
          str([(d.get("apiVersion"), d.get("kind")) for d in docs]))
    if rt is None or isvc is None:
        return
    spec = rt.get("spec") or {}
    bad = extra_fields(spec, RUNTIME_SPEC)
    formats = spec.get("supportedModelFormats") or []
    bad += [f for m in formats for f in extra_fields(m, MODEL_FORMAT)]
    check("kserve: ServingRuntime fields are KServe's", not bad, ", ".join(bad))
    check("kserve: ServingRuntime speaks v2", "v2" in (spec.get("protocolVersions") or []))
    ctrs = spec.get("containers") or []
    check("kserve: ServingRuntime has one container", len(ctrs) == 1)
    if ctrs:
        check_kserve_container(ctrs[0], gets, env_names, flags, image_port)
    pred = (isvc.get("spec") or {}).get("predictor") or {}
    model = pred.get("model") or {}
    bad = extra_fields(isvc.get("spec"), {"predictor", "transformer", "explainer"})
    bad += extra_fields(pred, PREDICTOR) + extra_fields(model, MODEL)
    bad += extra_fields(model.get("modelFormat"), MODEL_FORMAT)
    check("kserve: InferenceService fields are KServe's", not bad, ", ".join(bad))
    check("kserve: the InferenceService asks for the runtime, its format and v2",
          model.get("runtime") == rt["metadata"]["name"]
          and (model.get("modelFormat") or {}).get("name") in [m.get("name") for m in formats]
          and model.get("protocolVersion") in (spec.get("protocolVersions") or []), str(model))


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
    gets, env_names, flags = attnd_facts(attnd)
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
        check_components(by_kind, dep, gets)
    check_kserve_example(gets, env_names, flags, image_port)
    if compose is not None:
        check_compose(compose, gets, image_port, env_names)

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
