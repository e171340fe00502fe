#!/usr/bin/env bash
# The main job: the segflake CLI on its embedded defaults.
. "$(dirname "$0")/ensure.sh"
cd "$ROOT"
export CARGO_TARGET_DIR="$ROOT/target/core"
# The debug build: the Rust suite's tests reuse it (the scenarios run the static release build).
ensure_protoc
log "building the CLI"
cargo build --quiet -p segflake-cli
segflake() { "$CARGO_TARGET_DIR/debug/segflake" "$@"; }
run() { printf '\n$ segflake %s\n' "$*"; segflake "$@"; }

run layout twitter
run next --worker 7 --count 5
id=$(segflake next --worker 7)
run decode "$id"
run next --layout sonyflake --worker-from-hostname id-gen-3 --count 2 --format base62 --json
run next --layout js-safe --worker 5 --count 2 --format base32
printf '\n$ segflake layout uid-generator   (refused: its time ran out)\n'
if segflake layout uid-generator; then echo "uid-generator should have been refused" >&2; exit 1; fi
run layout uid-generator --epoch 2026-01-01 --min-lifetime-years 5
run obfuscate "$id" --key 000102030405060708090a0b0c0d0e0f

# Segments on the embedded file store: a second run (a restarted process) continues
# above everything the first one was handed, and the file is human-readable.
store_dir=$(mktemp -d)
trap 'rm -rf "$store_dir"' EXIT
run segment --store "file:$store_dir/ids.txt" --tag order --count 3 --step 2000
run segment --store "file:$store_dir/ids.txt" --tag order --count 3 --step 2000
run stats --store "file:$store_dir/ids.txt"
printf '\n$ cat ids.txt\n'; cat "$store_dir/ids.txt"
run serial --count 3
