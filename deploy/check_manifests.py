"""The fields deploy/kubernetes/*.yaml must keep, beyond the Kubernetes schemas
(kubernetes-validate checks those): pod-index worker IDs, the probes, the drain budget, the
resources, the Services' selectors, and the Dockerfile's shape. Run by deploy/check.sh."""

import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def docs(name):
    return [d for d in yaml.safe_load_all((ROOT / "deploy/kubernetes" / name).read_text()) if d]


def arg_value(args, flag):
    for i, a in enumerate(args):
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
        if a == flag and i + 1 < len(args):
            return args[i + 1]
    return None


def check_workload(name, kind, workload, services):
    pod = workload["spec"]["template"]
    spec = pod["spec"]
    (c,) = spec["containers"]
    where = f"{name} {kind}"
    check(c["args"][0] == "serve", f"{where}: args start with serve")
    listen = arg_value(c["args"], "--listen") or ""
    port = int(listen.rsplit(":", 1)[-1]) if listen else None
    check(listen.startswith("0.0.0.0:"), f"{where}: --listen 0.0.0.0:PORT")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(ports.get("http") == port, f"{where}: containerPort http is the --listen port")
    probes = {k: c.get(k, {}).get("httpGet", {}) for k in ("livenessProbe", "readinessProbe")}
    check(probes["livenessProbe"].get("path") == "/healthz", f"{where}: liveness on /healthz")
    check(probes["readinessProbe"].get("path") == "/readyz", f"{where}: readiness on /readyz")
    for k, p in probes.items():
        check(p.get("port") in ("http", port), f"{where}: {k} on the http port")
    drain_ms = int(arg_value(c["args"], "--drain-timeout-ms") or 10000)
    pre_stop = c["lifecycle"]["preStop"]["sleep"]["seconds"]
    grace = spec["terminationGracePeriodSeconds"]
    check(grace >= pre_stop + drain_ms / 1000 + 5, f"{where}: grace {grace}s covers preStop + drain + 5 s")
    req = c["resources"]["requests"]
    check("cpu" in req and "memory" in req, f"{where}: cpu and memory requests")
    check("memory" in c["resources"].get("limits", {}), f"{where}: a memory limit")
    check(spec["securityContext"].get("runAsNonRoot") is True, f"{where}: runAsNonRoot")
    check(spec["securityContext"].get("runAsUser") == 65532, f"{where}: the Dockerfile's user")
    labels = pod["metadata"]["labels"]
    check(workload["spec"]["selector"]["matchLabels"].items() <= labels.items(), f"{where}: selector matches")
    for s in services:
        check(s["spec"]["selector"].items() <= labels.items(), f"{where}: Service {s['metadata']['name']} selects the pods")
        for p in s["spec"]["ports"]:
            check(p["targetPort"] in ("http", port), f"Service {s['metadata']['name']}: targets the http port")
    return c


def main():
    sts_docs = docs("statefulset.yaml")
    (sts,) = [d for d in sts_docs if d["kind"] == "StatefulSet"]
    sts_services = [d for d in sts_docs if d["kind"] == "Service"]
    c = check_workload("statefulset.yaml", "StatefulSet", sts, sts_services)
    env_name = arg_value(c["args"], "--worker-from-env")
    check(env_name == "POD_INDEX", "statefulset.yaml: --worker-from-env POD_INDEX")
    env = {e["name"]: e for e in c.get("env", [])}
    field = env.get(env_name, {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
    check(
        field == "metadata.labels['apps.kubernetes.io/pod-index']",
        "statefulset.yaml: POD_INDEX from the pod-index label (downward API)",
    )
    check(sts["spec"]["replicas"] <= 1024, "statefulset.yaml: replicas fit 10 worker bits")
    headless = [s for s in sts_services if s["spec"].get("clusterIP") == "None"]
    check([s["metadata"]["name"] for s in headless] == [sts["spec"]["serviceName"]], "statefulset.yaml: serviceName is the headless Service")

    dep_docs = docs("deployment.yaml")
    (dep,) = [d for d in dep_docs if d["kind"] == "Deployment"]
    c = check_workload("deployment.yaml", "Deployment", dep, [d for d in dep_docs if d["kind"] == "Service"])
    registry = arg_value(c["args"], "--registry")
    m = re.fullmatch(r"\$\((\w+)\)", registry or "")
    check(m is not None, "deployment.yaml: --registry=$(VAR)")
    env = {e["name"]: e for e in c.get("env", [])}
    ref = env.get(m.group(1) if m else "", {}).get("valueFrom", {}).get("secretKeyRef", {})
    secret = docs("secret.example.yaml")[0]
    check(ref.get("name") == secret["metadata"]["name"] and ref.get("key") in secret["stringData"],
          "deployment.yaml: the registry URL from the example Secret's key")
    check(arg_value(c["args"], "--worker") is None, "deployment.yaml: no fixed worker")

    # The Dockerfile: an empty base, a COPY of the static binary that exists, its entrypoint.
    text = (ROOT / "Dockerfile").read_text()
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.lstrip().startswith("#")]
    froms = [l for l in lines if l.upper().startswith("FROM ")]
    check(froms == ["FROM scratch"], "Dockerfile: FROM scratch only")
    arch_default = re.search(r"^ARG TARGETARCH=(\w+)", text, re.M)
    copies = [l.split()[1:] for l in lines if l.upper().startswith("COPY ")]
    check(len(copies) == 1, "Dockerfile: one COPY")
    for src, dest in copies:
        src = src.replace("${TARGETARCH}", arch_default.group(1) if arch_default else "?")
        check((ROOT / src).is_file(), f"Dockerfile: COPY source {src} exists (deploy/build-static.sh)")
        check(dest == "/segflake", "Dockerfile: the binary is /segflake")
    check('ENTRYPOINT ["/segflake"]' in lines, "Dockerfile: ENTRYPOINT /segflake")
    check(any(l.startswith("USER 65532") for l in lines), "Dockerfile: USER 65532 (the manifests' runAsUser)")
    check(any(re.fullmatch(r"EXPOSE 8080", l) for l in lines), "Dockerfile: EXPOSE 8080")
    ignore = (ROOT / ".dockerignore").read_text().split()
    check("*" in ignore and "!target/image/*/segflake" in ignore, ".dockerignore: only the binaries")

    for f in failures:
        print(f"FAIL {f}", file=sys.stderr)
    print(f"manifest and Dockerfile checks: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
