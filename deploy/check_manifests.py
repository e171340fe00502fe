"""The fields deploy/kubernetes/*.yaml must keep, beyond the Kubernetes schemas
(kubernetes-validate checks those): pod-index worker IDs, the probes, the drain budget, the
resources, the Services' selectors, TLS from mounted Secrets (probes that work with it), no
token in a ConfigMap, and the Dockerfile's shape. Run by deploy/check.sh."""

import re
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


def docs(name):
    return [d for d in yaml.safe_load_all((ROOT / "deploy/kubernetes" / name).read_text()) if d]


def in_example_secret(name, key):
    """Whether secret.example.yaml's Secret `name` has `key`."""
    for d in docs("secret.example.yaml"):
        if d["metadata"]["name"] == name:
            return key in d.get("stringData", {})
    return False


def config_maps(documents):
    return {d["metadata"]["name"]: d for d in documents if d["kind"] == "ConfigMap"}


def arg_value(args, flag):
    for i, a in enumerate(args):
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
        if a == flag and i + 1 < len(args):
            return args[i + 1]
    return None


def mounted_from(spec, c, path, source):
    """The volume of `c` mounted whole (no subPath: the kubelet never updates those) at a
    directory holding `path`, if it is a volume of kind `source` (secret, configMap)."""
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        if path.startswith(m["mountPath"].rstrip("/") + "/") and "subPath" not in m:
            v = volumes.get(m["name"], {})
            if source in v:
                return v
    return None


def check_tls_and_keys(where, spec, c, config_maps):
    """TLS files and token files from mounted Secrets, the config from a mounted ConfigMap,
    and tokens in it only as sha256:, env: (from a Secret) or file: (a mounted Secret)."""
    args = c["args"]
    for flag in ("--tls-cert", "--tls-key", "--tls-client-ca"):
        path = arg_value(args, flag)
        if path is not None:
            check(mounted_from(spec, c, path, "secret") is not None,
                  f"{where}: {flag} {path} is in a Secret volume mounted whole (no subPath)")
    if arg_value(args, "--tls-client-ca") is not None:
        # The kubelet's probes present no client certificate.
        check(arg_value(args, "--tls-client-auth") == "optional",
              f"{where}: --tls-client-ca with HTTPS probes needs --tls-client-auth=optional")
    grpc = arg_value(args, "--grpc-listen")
    if grpc is not None:
        check(grpc == arg_value(args, "--listen"), f"{where}: --grpc-listen is the --listen port (one port)")
    config = arg_value(args, "--config")
    if config is None:
        return
    volume = mounted_from(spec, c, config, "configMap")
    check(volume is not None, f"{where}: --config {config} is in a ConfigMap volume mounted whole")
    if volume is None:
        return
    cm = config_maps.get(volume["configMap"]["name"])
    check(cm is not None, f"{where}: the ConfigMap {volume['configMap']['name']} is in the file")
    if cm is None:
        return
    text = cm["data"].get(config.rsplit("/", 1)[-1])
    check(text is not None, f"{where}: the ConfigMap holds {config}")
    toml = tomllib.loads(text or "")
    env = {e["name"]: e for e in c.get("env", [])}
    for key, rule in toml.get("keys", {}).items():
        for token in rule.get("tokens", []):
            if token.startswith("file:"):
                v = mounted_from(spec, c, token[5:], "secret")
                check(v is not None and in_example_secret(v["secret"]["secretName"], token.rsplit("/", 1)[-1]),
                      f"{where}: [keys.{key}] {token} is a key of a Secret of secret.example.yaml, mounted whole")
            elif token.startswith("env:"):
                ref = env.get(token[4:], {}).get("valueFrom", {}).get("secretKeyRef", {})
                check(in_example_secret(ref.get("name"), ref.get("key")),
                      f"{where}: [keys.{key}] {token} comes from a Secret of secret.example.yaml")
            else:
                check(token.startswith("sha256:"),
                      f"{where}: [keys.{key}] a plaintext token in a ConfigMap (use file:, env: or sha256:)")


def check_workload(name, kind, workload, services, config_maps):
    pod = workload["spec"]["template"]
    spec = pod["spec"]
    (c,) = spec["containers"]
    where = f"{name} {kind}"
    check(c["args"][0] == "serve", f"{where}: args start with serve")
    listen = arg_value(c["args"], "--listen") or ""
    port = int(listen.rsplit(":", 1)[-1]) if listen else None
    check(listen.startswith("0.0.0.0:"), f"{where}: --listen 0.0.0.0:PORT")
    tls = arg_value(c["args"], "--tls-cert") is not None
    check(tls == (arg_value(c["args"], "--tls-key") is not None), f"{where}: --tls-cert with --tls-key")
    # The port's name says what it speaks.
    port_name = "https" if tls else "http"
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(ports.get(port_name) == port, f"{where}: containerPort {port_name} is the --listen port")
    probes = {k: c.get(k, {}).get("httpGet", {}) for k in ("startupProbe", "livenessProbe", "readinessProbe")}
    check(probes["livenessProbe"].get("path") == "/healthz", f"{where}: liveness on /healthz")
    check(probes["readinessProbe"].get("path") == "/readyz", f"{where}: readiness on /readyz")
    for k, p in probes.items():
        if k not in c:
            continue
        check(p.get("port") in (port_name, port), f"{where}: {k} on the {port_name} port")
        check(p.get("scheme", "HTTP") == ("HTTPS" if tls else "HTTP"), f"{where}: {k} scheme {'HTTPS' if tls else 'HTTP'}")
    check_tls_and_keys(where, spec, c, config_maps)
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
            check(p["targetPort"] in (port_name, port), f"Service {s['metadata']['name']}: targets the {port_name} port")
    return c


def main():
    sts_docs = docs("statefulset.yaml")
    (sts,) = [d for d in sts_docs if d["kind"] == "StatefulSet"]
    sts_services = [d for d in sts_docs if d["kind"] == "Service"]
    c = check_workload("statefulset.yaml", "StatefulSet", sts, sts_services, config_maps(sts_docs))
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
    c = check_workload("deployment.yaml", "Deployment", dep, [d for d in dep_docs if d["kind"] == "Service"],
                       config_maps(dep_docs))
    registry = arg_value(c["args"], "--registry")
    m = re.fullmatch(r"\$\((\w+)\)", registry or "")
    check(m is not None, "deployment.yaml: --registry=$(VAR)")
    env = {e["name"]: e for e in c.get("env", [])}
    ref = env.get(m.group(1) if m else "", {}).get("valueFrom", {}).get("secretKeyRef", {})
    check(in_example_secret(ref.get("name"), ref.get("key")),
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
