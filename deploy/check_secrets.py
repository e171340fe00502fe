"""deploy/kubernetes/*.yaml's TLS and tokens, served: each workload's args, ConfigMap and
Secrets (secret.example.yaml) laid out as the kubelet mounts them (files behind a `..data`
symlink), served by a segflake binary, then rotated as the kubelet rotates them. Run by
deploy/check.sh:

  check_secrets.py SEGFLAKE

For the StatefulSet and the Deployment (its registry replaced by a fixed worker ID, as no
registry runs here):
  * the probes as the kubelet sends them (HTTPS, no certificate check, no client
    certificate) get 200 from /healthz and /readyz;
  * the keys answer their tokens and client certificates, and refuse the rest;
  * a new certificate and key (and, in the StatefulSet, a token file without the old
    token) swapped in by the symlink are served within seconds, without a restart;
  * SIGTERM exits 0.
Certificates come from tests/tls/make-certs.sh."""

import http.client
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy/kubernetes"
MOUNTS = "/etc/segflake"


def docs(name):
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Volume:
    """A directory laid out as the kubelet lays out a Secret or ConfigMap volume: each file
    a symlink into `..data`, itself a symlink to a timestamped directory, swapped whole."""

    def __init__(self, path):
        self.path = path
        self.version = 0
        path.mkdir(parents=True)

    def write(self, files):
        self.version += 1
        data = self.path / f"..{self.version}"
        data.mkdir()
        for name, content in files.items():
            (data / name).write_bytes(content)
        tmp = self.path / "..data_tmp"
        tmp.symlink_to(data.name)
        os.replace(tmp, self.path / "..data")
        for name in files:
            link = self.path / name
            if not link.is_symlink():
                link.symlink_to(f"..data/{name}")


def request(port, path, certs, client=None, token=None, verify=True):
    """(status, body, the server's certificate in DER) of a GET over TLS; (None, the
    error, None) if the connection fails."""
    try:
        return tls_get(port, path, certs, client, token, verify)
    except (OSError, http.client.HTTPException) as e:
        return None, f"refused: {e}", None


def tls_get(port, path, certs, client, token, verify):
    if verify:
        ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    else:  # the kubelet's probes
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if client:
        ctx.load_cert_chain(certs / f"{client}.pem", certs / f"{client}.key")
    conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=5)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        return r.status, r.read().decode(), conn.sock.getpeercert(binary_form=True)
    finally:
        conn.close()


failures = []
started = []  # the servers, killed at the end if a check stopped with one running


def check(ok, what):
    print(f"{'ok' if ok else 'FAIL'} - {what}")
    if not ok:
        failures.append(what)


def serve(binary, name, kind, root, certs, env_values, replace_args):
    """Starts `kind` of `name` with its volumes under `root`; returns (process, port,
    volumes by mount path)."""
    documents = docs(name)
    (workload,) = [d for d in documents if d["kind"] == kind]
    spec = workload["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    config_maps = {d["metadata"]["name"]: d for d in documents if d["kind"] == "ConfigMap"}
    secrets = {d["metadata"]["name"]: d for d in docs("secret.example.yaml")}
    volumes = {}
    for v in spec.get("volumes", []):
        (mount,) = [m["mountPath"] for m in c["volumeMounts"] if m["name"] == v["name"]]
        vol = Volume(root / mount.lstrip("/"))
        if "configMap" in v:
            data = config_maps[v["configMap"]["name"]]["data"]
            vol.write({k: t.replace(MOUNTS, f"{root}{MOUNTS}").encode() for k, t in data.items()})
        elif v["secret"]["secretName"] in secrets:
            vol.write({k: t.encode() for k, t in secrets[v["secret"]["secretName"]]["stringData"].items()})
        else:  # segflake-tls: made by the operator (kubectl create secret tls, cert-manager)
            vol.write({
                "tls.crt": (certs / "server.pem").read_bytes(),
                "tls.key": (certs / "server.key").read_bytes(),
                "ca.crt": (certs / "ca.pem").read_bytes(),
            })
        volumes[mount] = vol
    port = free_port()
    args = []
    for a in c["args"]:
        a = replace_args.get(a, a)
        a = a.replace("0.0.0.0:8443", f"127.0.0.1:{port}").replace(MOUNTS, f"{root}{MOUNTS}")
        args.append(a)
    env = {"PATH": os.environ.get("PATH", "")}
    for e in c.get("env", []):
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            env[e["name"]] = secrets[ref["name"]]["stringData"][ref["key"]]
        elif e["name"] in env_values:
            env[e["name"]] = env_values[e["name"]]
    log = open(root / "serve.log", "w")
    p = subprocess.Popen([binary, *args], env=env, stdout=log, stderr=log)
    started.append(p)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if p.poll() is not None or time.monotonic() > deadline:
                print((root / "serve.log").read_text(), file=sys.stderr)
                raise SystemExit(f"{name}: segflake serve did not start")
            time.sleep(0.1)
    return p, port, volumes


def wait_for(what, condition, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def probes(name, port, certs):
    for path in ("/healthz", "/readyz"):
        status, body, _ = request(port, path, certs, verify=False)
        check(status == 200,
              f"{name}: the kubelet's HTTPS probe of {path} (no verification, no certificate): {status} {body.strip()}")


def rotate_certificate(name, port, certs, tls):
    server2 = ssl.PEM_cert_to_DER_cert((certs / "server2.pem").read_text())
    tls.write({
        "tls.crt": (certs / "server2.pem").read_bytes(),
        "tls.key": (certs / "server2.key").read_bytes(),
        "ca.crt": (certs / "ca.pem").read_bytes(),
    })
    check(wait_for("the new certificate", lambda: request(port, "/healthz", certs)[2] == server2),
          f"{name}: a certificate rotated by the symlink swap is served, without a restart")


def stop(name, p):
    p.send_signal(signal.SIGTERM)
    check(p.wait(timeout=30) == 0, f"{name}: SIGTERM exits 0")


def main():
    binary = os.path.abspath(sys.argv[1])
    root = Path(tempfile.mkdtemp(prefix="segflake-secrets-"))
    try:
        certs = root / "certs"
        subprocess.run(["bash", str(ROOT / "tests/tls/make-certs.sh"), str(certs)], check=True)

        name = "statefulset.yaml"
        p, port, volumes = serve(binary, name, "StatefulSet", root / "sts", certs, {"POD_INDEX": "1"}, {})
        probes(name, port, certs)

        def get(key, token):
            return request(port, f"/api/snowflake/get/{key}", certs, token=token)[0]

        check(get("order", "change-me") == 200, f"{name}: order with its token (file:, a sha256: line)")
        check(get("order", None) == 401, f"{name}: order without a token: 401")
        check(get("order", "wrong") == 403, f"{name}: order with a wrong token: 403")
        check(get("invoice", "change-me-invoice-1") == 200 and get("invoice", "change-me-invoice-2") == 200,
              f"{name}: invoice with either of its two tokens")
        check(get("other", "change-me") == 404, f"{name}: a key not listed: 404")
        tokens = volumes[f"{MOUNTS}/tokens"]
        (example,) = [d for d in docs("secret.example.yaml") if d["metadata"]["name"] == "segflake-tokens"]
        rest = {k: v.encode() for k, v in example["stringData"].items()}
        rest["invoice"] = b"\n".join(rest["invoice"].splitlines()[1:]) + b"\n"
        tokens.write(rest)
        check(wait_for("the old token refused", lambda: get("invoice", "change-me-invoice-1") == 403),
              f"{name}: the rotated token file is reloaded: the old token refused")
        check(get("invoice", "change-me-invoice-2") == 200, f"{name}: the new token still served")
        rotate_certificate(name, port, certs, volumes[f"{MOUNTS}/tls"])
        stop(name, p)

        name = "deployment.yaml"
        p, port, volumes = serve(binary, name, "Deployment", root / "dep", certs, {},
                                 {"--registry=$(SEGFLAKE_REGISTRY)": "--worker=1"})
        probes(name, port, certs)

        def get(key, client, token=None):
            return request(port, f"/api/snowflake/get/{key}", certs, client, token)[0]

        check(get("order", "order") == 200, f"{name}: order with the order-svc certificate")
        check(get("order", None) == 401, f"{name}: order without a client certificate: 401")
        check(get("order", "billing") == 403, f"{name}: order with billing-svc's certificate: 403")
        check(get("billing", "billing", "change-me-billing") == 200,
              f"{name}: billing with billing-svc's certificate and its token (env:)")
        check(get("billing", "billing") == 401, f"{name}: billing without the token: 401")
        rotate_certificate(name, port, certs, volumes[f"{MOUNTS}/tls"])
        stop(name, p)
    finally:
        for p in started:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(root, ignore_errors=True)
    print(f"TLS and secrets as deployed: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
