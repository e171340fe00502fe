#!/usr/bin/env bash
# Builds the segflake wheel (abi3, CPython 3.9+) into dist/ and prints its path.
#   scripts/build-python.sh              release wheel into dist/
#   scripts/build-python.sh --copy DIR   also copy it into DIR (under the build lock, so a
#                                        concurrent build cannot replace it midway) and
#                                        print that copy's path
# Needs only Rust and Python; maturin comes from PyPI.
. "$(dirname "$0")/ensure.sh"

copy_to=""
if [ "${1:-}" = "--copy" ]; then copy_to="$2"; fi

if ! python3 -m maturin --version 2>/dev/null | grep -q '^maturin 1\.'; then
  log "pip install maturin"
  ensure_pip "maturin>=1.16,<2"
fi

export CARGO_TARGET_DIR="$ROOT/target/python"
mkdir -p "$ROOT/dist" "$CARGO_TARGET_DIR"
# One build at a time in this target directory (maturin stages files outside cargo's lock).
exec 9>"$CARGO_TARGET_DIR/.build-python.lock"
flock 9

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/python/pyproject.toml" | head -1)"
rm -f "$ROOT"/dist/segflake-"$version"-*.whl
log "maturin build --release (wheel into dist/)"
(cd "$ROOT/python" && python3 -m maturin build --release --quiet --out "$ROOT/dist" >&2)
wheel="$(ls -t "$ROOT"/dist/segflake-"$version"-cp39-abi3-*.whl | head -1)"
[ -f "$wheel" ] || { echo "no wheel was built" >&2; exit 1; }
if [ -n "$copy_to" ]; then
  cp "$wheel" "$copy_to/"
  wheel="$copy_to/$(basename "$wheel")"
fi
echo "$wheel"
