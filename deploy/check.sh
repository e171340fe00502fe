#!/usr/bin/env bash
# The container image and Kubernetes manifests, checked as far as a machine without a
# container runtime or cluster allows (run by scripts/test-platforms.sh, so by `make test`):
#   1. the static musl segflake (deploy/build-static.sh) has no interpreter and no shared
#      libraries;
#   2. it serves from an otherwise empty root filesystem: chroot into a directory holding
#      only the binary (and an empty data directory), in new mount/UTS/IPC namespaces, with
#      an empty environment but POD_INDEX, as user 65532; /healthz, /readyz, a snowflake ID
#      whose worker is POD_INDEX, a segment ID; SIGTERM exits 0;
#   3. deploy/kubernetes/*.yaml validate against the Kubernetes schemas bundled in PyPI's
#      kubernetes-validate (1.37 and 1.32, strict: unknown fields fail), and
#      deploy/check_manifests.py checks the fields that matter here (TLS files and tokens
#      from Secrets mounted whole, HTTPS probes, no token in a ConfigMap) and the
#      Dockerfile (its COPY source exists, FROM scratch, the user the manifests run as);
#      deploy/check_secrets.py serves each workload's args, ConfigMap and example Secrets with
#      the static binary, laid out as the kubelet mounts them, and checks the HTTPS probes,
#      the keys' tokens and client certificates, and a certificate and a token file rotated
#      by the kubelet's symlink swap (served without a restart);
#   4. with a container runtime that answers (docker/podman/buildah), the image is built
#      and run; without one, that step says so and is skipped.
set -euo pipefail
. "$(dirname "$0")/../scripts/ensure.sh"
cd "$ROOT"

bash deploy/build-static.sh amd64
bin="$ROOT/target/image/amd64/segflake"

log "the static binary needs no libc"
if readelf -lW "$bin" | grep -q 'INTERP'; then echo "$bin has a program interpreter" >&2; exit 1; fi
if readelf -dW "$bin" | grep -q 'NEEDED'; then echo "$bin needs shared libraries:" >&2; readelf -dW "$bin" | grep NEEDED >&2; exit 1; fi

log "segflake serve from an empty root filesystem (chroot, no libc, empty environment)"
root="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$root"
}
trap cleanup EXIT
chmod 755 "$root"  # mktemp -d is 0700: user 65532 must enter it
install -m 755 "$bin" "$root/segflake"
mkdir -m 1777 "$root/data"
contents="$(cd "$root" && find . -mindepth 1 | sort | tr '\n' ' ')"
[ "$contents" = "./data ./segflake " ] || { echo "root is not empty: $contents" >&2; exit 1; }
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# Absolute paths: env -i leaves no PATH.
unshare="$(command -v unshare)" chroot="$(command -v chroot)"
if [ "$(id -u)" = 0 ]; then
  jail=("$unshare" --mount --uts --ipc "$chroot" --userspec=65532:65532 "$root")
else
  jail=("$unshare" --user --map-root-user --mount --uts --ipc "$chroot" "$root")
fi
# unshare and chroot exec: $! is segflake itself.
env -i POD_INDEX=3 "${jail[@]}" /segflake serve --listen "127.0.0.1:$port" \
  --worker-from-env POD_INDEX --store file:/data/segments --create-missing-tags 1000 \
  --drain-timeout-ms 2000 >"$root.log" 2>&1 &
pid=$!
url="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -fsS -o /dev/null "$url/healthz" 2>/dev/null && break; sleep 0.1; done
fail() { echo "$*" >&2; cat "$root.log" >&2; rm -f "$root.log"; exit 1; }
curl -fsS "$url/healthz" >/dev/null || fail "/healthz did not answer 200"
curl -fsS "$url/readyz" >/dev/null || fail "/readyz did not answer 200"
id="$(curl -fsS "$url/api/snowflake/get/order")" || fail "no snowflake ID"
worker="$(curl -fsS "$url/api/decode/$id" | python3 -c 'import json, sys; print(json.load(sys.stdin)["worker"])')"
[ "$worker" = 3 ] || fail "snowflake ID $id has worker $worker, not POD_INDEX=3"
seg="$(curl -fsS "$url/api/segment/get/order")" || fail "no segment ID"
[ "$seg" = 1 ] || fail "the first segment ID is $seg, not 1"
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
pid=""
[ "$rc" = 0 ] || fail "segflake serve exited $rc after SIGTERM"
rm -f "$root.log"
echo "ok - served $id (worker 3) and segment ID 1 from a root holding only the binary; SIGTERM exit 0"

log "Kubernetes manifests against the schemas (kubernetes-validate from PyPI, --strict)"
venv="$ROOT/target/deploy/venv"
if [ ! -x "$venv/bin/kubernetes-validate" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check kubernetes-validate==1.37.0 >&2
fi
for version in 1.37.0 1.32.0; do
  "$venv/bin/kubernetes-validate" --strict --quiet -k "$version" deploy/kubernetes/*.yaml
  echo "ok - deploy/kubernetes/*.yaml valid for Kubernetes $version"
done
"$venv/bin/python" deploy/check_manifests.py
log "the manifests' TLS, tokens and rotation, served (deploy/check_secrets.py)"
"$venv/bin/python" deploy/check_secrets.py "$bin"

log "container runtimes"
runtime=""
for tool in docker podman; do
  if command -v "$tool" >/dev/null && timeout 10 "$tool" info >/dev/null 2>&1; then runtime="$tool"; break; fi
done
if [ -n "$runtime" ]; then
  "$runtime" build -q -t segflake:check .
  "$runtime" run --rm segflake:check next --worker 1 >/dev/null
  echo "ok - $runtime built the image and ran it"
else
  echo "skip - no container runtime answers here ($(for t in docker podman buildah; do
    command -v "$t" >/dev/null && printf '%s: installed, does not answer; ' "$t" || printf '%s: not installed; ' "$t"; done))"
  echo "       the Dockerfile was checked statically (deploy/check_manifests.py)"
fi
