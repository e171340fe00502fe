#!/usr/bin/env bash
# What the snowflake build's .wasm holds besides the core: bench/wasm/floor (the core's
# snowflake API behind plain exports, no wasm-bindgen) built and optimised as
# scripts/build-wasm.sh builds segflake_snowflake_bg.wasm (opt-level "z", fat LTO,
# panic = "abort", wasm-opt -Oz), beside that module. One Markdown table on stdout.
#   bench/wasm/floor.sh    (after scripts/build-wasm.sh, which bench/wasm/run.sh runs first)
. "$(dirname "$0")/../../scripts/ensure.sh"
export CARGO_TARGET_DIR="$ROOT/target/wasm"
WASM_OPT="$ROOT/bindings/wasm/tools/node_modules/.bin/wasm-opt"
module="$ROOT/npm/segflake-wasm/pkg/segflake_snowflake_bg.wasm"
[ -f "$module" ] || { echo "$module: run scripts/build-wasm.sh first" >&2; exit 1; }

log "cargo build bench/wasm/floor (wasm32-unknown-unknown, opt-level z)"
cargo build --quiet --release --target wasm32-unknown-unknown \
  --manifest-path "$ROOT/bench/wasm/floor/Cargo.toml" >&2
floor="$CARGO_TARGET_DIR/floor.wasm"
"$WASM_OPT" -Oz "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/segflake_wasm_floor.wasm" -o "$floor"

row() { printf '| %s | %s B | %s B |\n' "$1" "$(stat -c %s "$2")" "$(gzip -9c "$2" | wc -c)"; }
echo "| module | .wasm | gzipped (-9) |"
echo "|---|---:|---:|"
row 'the core'"'"'s snowflake API behind plain exports (bench/wasm/floor)' "$floor"
row 'segflake_snowflake_bg.wasm: the same API through wasm-bindgen and the binding' "$module"
