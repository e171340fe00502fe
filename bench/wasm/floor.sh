#!/usr/bin/env bash
# What the snowflake build's .wasm holds besides the core: bench/wasm/floor (the core's
# snowflake API behind plain exports, no wasm-bindgen) built and optimised as
# scripts/build-wasm.sh builds segflake_snowflake_bg.wasm (opt-level "z", fat LTO,
# panic = "abort", wasm-opt -Oz), beside that module, and the floor of `new Snowflake(options)`
# and `nextId()` alone (the program the entry's size goal is measured with). One Markdown
# table on stdout.
#   bench/wasm/floor.sh    (after scripts/build-wasm.sh, which bench/wasm/run.sh runs first)
. "$(dirname "$0")/../../scripts/ensure.sh"
export CARGO_TARGET_DIR="$ROOT/target/wasm"
WASM_OPT="$ROOT/bindings/wasm/tools/node_modules/.bin/wasm-opt"
module="$ROOT/npm/segflake-wasm/pkg/segflake_snowflake_bg.wasm"
[ -f "$module" ] || { echo "$module: run scripts/build-wasm.sh first" >&2; exit 1; }

# floor_build OUT [FEATURE]: the floor crate (with FEATURE) built and optimised into OUT.
floor_build() {
  log "cargo build bench/wasm/floor ${2:+--features $2 }(wasm32-unknown-unknown, opt-level z)"
  cargo build --quiet --release --target wasm32-unknown-unknown ${2:+--features "$2"} \
    --manifest-path "$ROOT/bench/wasm/floor/Cargo.toml" >&2
  "$WASM_OPT" -Oz "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/segflake_wasm_floor.wasm" -o "$1"
}
floor="$CARGO_TARGET_DIR/floor.wasm"
floor_build "$floor"
generation="$CARGO_TARGET_DIR/floor-generation.wasm"
floor_build "$generation" generation-only

row() { printf '| %s | %s B | %s B |\n' "$1" "$(stat -c %s "$2")" "$(gzip -9c "$2" | wc -c)"; }
echo "| module | .wasm | gzipped (-9) |"
echo "|---|---:|---:|"
row 'the core'"'"'s snowflake API behind plain exports (bench/wasm/floor)' "$floor"
row 'the same, only `new Snowflake(options)` and `nextId()` (--features generation-only)' "$generation"
row 'segflake_snowflake_bg.wasm: the same API through wasm-bindgen and the binding' "$module"
