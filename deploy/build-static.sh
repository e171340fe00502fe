#!/usr/bin/env bash
# Builds the static segflake CLI that the Dockerfile copies: Rust's musl target linked by
# zig (cargo-zigbuild and ziglang from PyPI, as scripts/build-platforms.sh does), no libc
# needed at run time.
#
#   bash deploy/build-static.sh            # amd64 → target/image/amd64/segflake
#   bash deploy/build-static.sh arm64      # arm64 → target/image/arm64/segflake
#   bash deploy/build-static.sh amd64 OUT  # amd64 → OUT (the scenarios' copy)
#   docker build -t segflake:0.1.0 .       # then, from the repository root
#
# The directory names are Docker's TARGETARCH values, so `docker buildx build --platform
# linux/amd64,linux/arm64` picks the right binary for each platform.
set -euo pipefail
. "$(dirname "$0")/../scripts/ensure.sh"
cd "$ROOT"

arch="${1:-amd64}"
dest="${2:-$ROOT/target/image/$arch/segflake}"
case "$arch" in
  amd64) triple=x86_64-unknown-linux-musl ;;
  arm64) triple=aarch64-unknown-linux-musl ;;
  *) echo "usage: $0 [amd64|arm64]" >&2; exit 2 ;;
esac
ensure_rust_target "$triple"
ensure_zigbuild
ensure_protoc
export CARGO_TARGET_DIR="$ROOT/target/musl"
log "cargo zigbuild --release -p segflake-cli --target $triple"
# Static: musl's default (crt-static); the variable build-platforms.sh sets for its cdylibs
# must not leak in.
unset CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS
cargo zigbuild --release --quiet -p segflake-cli --target "$triple"
# Each caller its own copy: two may build at once (cargo's lock serialises the build itself).
install -D -m 755 "$CARGO_TARGET_DIR/$triple/release/segflake" "$dest"
# Without symbols (GNU strip reads x86-64 here; other architectures stay as built).
strip "$dest" 2>/dev/null || true
log "$dest ($(du -h "$dest" | cut -f1))"
