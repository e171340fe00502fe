#!/usr/bin/env bash
# Builds the segflake wheel (abi3, CPython 3.9+, manylinux2014 = glibc 2.17+) into dist/
# and prints its path.
#   scripts/build-python.sh              release wheel into dist/
#   SEGFLAKE_WHEEL_COMPAT=native ...     link against this machine's glibc instead of
#                                        cross-linking with zig (a manylinux_2_34 wheel here)
#   scripts/build-python.sh --copy DIR   also copy it into DIR (under the build lock, so a
#                                        concurrent build cannot replace it midway) and
#                                        print that copy's path
#   scripts/build-python.sh --sdist      the source distribution instead (dist/segflake-
#                                        <version>.tar.gz: the core, the pyo3 crate and the
#                                        package; pip builds it with maturin and a local Rust)
# Needs only Rust and Python; maturin comes from PyPI.
. "$(dirname "$0")/ensure.sh"

copy_to=""
sdist=0
if [ "${1:-}" = "--copy" ]; then copy_to="$2"; fi
if [ "${1:-}" = "--sdist" ]; then sdist=1; fi

if ! python3 -m maturin --version 2>/dev/null | grep -q '^maturin 1\.'; then
  log "pip install maturin"
  ensure_pip "maturin>=1.16,<2"
fi
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/python/pyproject.toml" | head -1)"
if [ "$sdist" = 1 ]; then
  mkdir -p "$ROOT/dist"
  rm -f "$ROOT/dist/segflake-$version.tar.gz"
  log "maturin sdist"
  (cd "$ROOT/python" && python3 -m maturin sdist --out "$ROOT/dist" >&2)
  python3 "$ROOT/scripts/check_release.py" licenses "$ROOT/dist/segflake-$version.tar.gz"
  echo "$ROOT/dist/segflake-$version.tar.gz"
  exit 0
fi

compat=(--zig --compatibility manylinux2014)
if [ "${SEGFLAKE_WHEEL_COMPAT:-manylinux2014}" = native ]; then
  compat=()
elif ! python3 -m ziglang version 2>/dev/null | grep -qx '0.15.2'; then
  # maturin links through zig for an old glibc baseline; PyPI ships zig as a wheel.
  log "pip install ziglang"
  ensure_pip "ziglang==0.15.2"
fi

export CARGO_TARGET_DIR="$ROOT/target/python"
mkdir -p "$ROOT/dist" "$CARGO_TARGET_DIR"
# One build at a time in this target directory (maturin stages files outside cargo's lock).
exec 9>"$CARGO_TARGET_DIR/.build-python.lock"
flock 9

# maturin writes into a folder of this build's own, then the wheel is copied into dist/
# (other builds put their platforms' wheels there).
out="$CARGO_TARGET_DIR/wheels"
rm -rf "$out"
log "maturin build --release ${compat[*]} (wheel into dist/)"
(cd "$ROOT/python" && python3 -m maturin build --release "${compat[@]}" --quiet --out "$out" >&2)
built="$(ls "$out"/segflake-"$version"-cp39-abi3-*.whl)"
[ "$(echo "$built" | wc -l)" = 1 ] && [ -f "$built" ] || { echo "no wheel was built: $built" >&2; exit 1; }
cp "$built" "$ROOT/dist/"
wheel="$ROOT/dist/$(basename "$built")"
python3 "$ROOT/scripts/check_release.py" licenses "$wheel"
if [ -n "$copy_to" ]; then
  cp "$wheel" "$copy_to/"
  wheel="$copy_to/$(basename "$wheel")"
fi
echo "$wheel"
