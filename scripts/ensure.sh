# Idempotent installers shared by the build and test scripts. Source it:
#   . "$(dirname "$0")/ensure.sh"
# Every function installs only what is missing, so a fresh CI machine and a warm
# developer machine run the same scripts.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"
# A CI run builds everything once from a fresh clone: cargo's incremental caches (on for the
# dev profile's own crates) would only be written, never read.
[ "${CI:-}" != true ] || export CARGO_INCREMENTAL=0

# log MESSAGE: a step's heading on stderr, with the time of day it started, so that a CI
# log shows where the time goes.
log() { printf '\033[1m==> %s\033[0m  [%(%T)T]\n' "$*" -1 >&2; }

# ensure_apt PKG...: install Debian packages that are not installed yet, without
# starting any service they ship.
ensure_apt() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d
  fi
  if [ -z "${SEGFLAKE_APT_UPDATED:-}" ]; then
    $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
    export SEGFLAKE_APT_UPDATED=1
  fi
  # --no-remove: an install that would remove a package (another Node, say) fails instead.
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends --no-remove "${missing[@]}" >&2
}

# ensure_protoc: protoc and its well-known .proto files (Debian's), which the CLI's etcd
# client (etcd-client) compiles etcd's API with at build time.
ensure_protoc() { ensure_apt protobuf-compiler libprotobuf-dev; }

# ensure_cargo_tool BINARY CRATE VERSION: cargo install CRATE@VERSION unless BINARY
# already reports that version.
ensure_cargo_tool() {
  local bin="$1" crate="$2" version="$3"
  if command -v "$bin" >/dev/null 2>&1 && "$bin" --version 2>/dev/null | grep -q "$version"; then
    return 0
  fi
  log "cargo install $crate@$version"
  cargo install --quiet "$crate" --version "$version" >&2
}

# ensure_rust_target TRIPLE
ensure_rust_target() {
  rustup target list --installed | grep -qx "$1" || { log "rustup target add $1"; rustup target add "$1" >&2; }
}

# ensure_zigbuild: cargo-zigbuild and zig 0.17 (both from PyPI) in a venv under target/,
# first on PATH (ZIGBUILD_BIN): cross-linking without SDKs (an old glibc floor, musl, macOS,
# Windows). `python-zig cc` is zig's C compiler.
ensure_zigbuild() {
  local env="$ROOT/target/node/zigenv"
  if [ ! -x "$env/bin/cargo-zigbuild" ] || [ ! -x "$env/bin/python-zig" ]; then
    log "python venv with cargo-zigbuild and ziglang (PyPI)"
    python3 -m venv "$env" >&2
    "$env/bin/pip" install --quiet --disable-pip-version-check cargo-zigbuild==0.24.0 ziglang==0.17.0 >&2
  fi
  ZIGBUILD_BIN="$env/bin"
  export PATH="$ZIGBUILD_BIN:$PATH"
}

# ensure_rust_component NAME (clippy, rustfmt)
ensure_rust_component() {
  rustup component list --installed 2>/dev/null | grep -q "^$1" || rustup component add "$1" >&2
}

# ensure_pip PKG...: pip install into the current interpreter if not importable by name.
ensure_pip() {
  python3 -m pip install --quiet --disable-pip-version-check "$@" >&2
}
