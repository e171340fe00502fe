#!/usr/bin/env bash
# Builds the segflake-wasm npm package: its two wasm32 modules (the full one and the snowflake
# build behind `segflake-wasm/snowflake`), their wasm-bindgen glue (ES modules, --target web),
# wasm-opt (npm binaryen), then `npm pack` into dist/.
# Prints the .wasm size raw and gzipped. Idempotent; installs what is missing.
# With --testing it also builds the tests' module (the full one with the `testing` feature's
# `__options` and `__tables`) into npm/segflake-wasm/test/pkg, which is not packed.
. "$(dirname "$0")/ensure.sh"

PKG="$ROOT/npm/segflake-wasm"
TOOLS="$ROOT/bindings/wasm/tools"
export CARGO_TARGET_DIR="$ROOT/target/wasm"

# wasm-bindgen-cli must be exactly the wasm-bindgen version in Cargo.lock.
WB_VERSION="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$ROOT/Cargo.lock")"
[ -n "$WB_VERSION" ] || WB_VERSION=0.2.130

ensure_rust_target wasm32-unknown-unknown
ensure_cargo_tool wasm-bindgen wasm-bindgen-cli "$WB_VERSION"

WASM_OPT="$TOOLS/node_modules/.bin/wasm-opt"
ESBUILD="$TOOLS/node_modules/.bin/esbuild"
if ! "$WASM_OPT" --version 2>/dev/null | grep -q "version 132" || ! "$ESBUILD" --version >/dev/null 2>&1; then
  log "npm ci (binaryen for wasm-opt, esbuild)"
  (cd "$TOOLS" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

TESTING=0
[ "${1:-}" != "--testing" ] || TESTING=1

# wasm_build DIR NAME PROFILE WASM_OPT_LEVEL [cargo args]: the module `DIR/NAME_bg.wasm` and
# its glue `DIR/NAME.js`, built with the workspace's cargo profile PROFILE and then wasm-opt.
# What wasm-bindgen and wasm-opt made of a module is kept under target/wasm/post/NAME with
# the digest of cargo's module and of how it was made: when cargo's module has not changed
# (the test suites each build the package again), they are not run again.
wasm_build() {
  local dir=$1 name=$2 profile=$3 level=$4
  shift 4
  log "cargo build segflake-wasm $* (wasm32-unknown-unknown, profile $profile)"
  cargo build --quiet --profile "$profile" --target wasm32-unknown-unknown -p segflake-wasm "$@"
  local input="$CARGO_TARGET_DIR/wasm32-unknown-unknown/$profile/segflake_wasm.wasm"
  local post="$CARGO_TARGET_DIR/post/$name" key
  key="$(sha256sum <"$input" | cut -d' ' -f1) wasm-bindgen $WB_VERSION wasm-opt $level $ONE_CALLER"
  if [ "$(cat "$post/key" 2>/dev/null)" != "$key" ]; then
    rm -rf "$post" && mkdir -p "$post/out"
    log "wasm-bindgen --target web --out-name $name"
    wasm-bindgen --target web --no-typescript --out-dir "$post/out" --out-name "$name" "$input"
    local wasm="$post/out/${name}_bg.wasm"
    stat -c %s "$wasm" >"$post/before"
    log "wasm-opt $level $ONE_CALLER"
    "$WASM_OPT" "$level" "$ONE_CALLER" "$wasm" -o "$wasm.opt"
    mv "$wasm.opt" "$wasm"
    echo "$key" >"$post/key"
  fi
  mkdir -p "$dir" && cp -R "$post/out/." "$dir/"
  local raw gz
  raw=$(stat -c %s "$dir/${name}_bg.wasm")
  gz=$(gzip -9c "$dir/${name}_bg.wasm" | wc -c)
  log "${name}_bg.wasm: $(cat "$post/before") B before wasm-opt, ${raw} B after, ${gz} B gzipped (-9)"
}

# wasm-opt inlines a function into its only caller whatever its size (at -O2 and above), so
# each export shim absorbs the core functions it calls; that compresses worse than calls do
# (bench/README.md: the full module 158.8 → 149.2 kB gzipped, the snowflake module 55.3 →
# 53.7 kB, with functions of up to 30 bytes still inlined; nextId's speed unchanged).
ONE_CALLER=--one-caller-inline-max-function-size=30

rm -rf "$PKG/pkg"
# The full module (segflake-wasm): every feature (Cargo.toml's [profile.wasm-release]: fat
# LTO, one codegen unit, panic=abort; the core and the binding at opt-level "z", the per-ID
# paths in segflake-wasm-hot at 3).
wasm_build "$PKG/pkg" segflake_wasm wasm-release -O3
# The snowflake module (segflake-wasm/snowflake): the core and the binding without their
# default features (snowflake IDs, layouts, decoding, codecs, obfuscation), for size
# ([profile.wasm-size]: opt-level "z").
wasm_build "$PKG/pkg" segflake_snowflake wasm-size -Oz --no-default-features
if [ "$TESTING" = 1 ]; then
  rm -rf "$PKG/test/pkg"
  wasm_build "$PKG/test/pkg" segflake_testing wasm-release -O1 --features testing
fi

# The JS drivers shared with the native package, as an ES module, their declarations and
# the option and record declarations generated from the core's tables (copies, not
# committed).
driver_js() { cat "$ROOT/npm/shared/driver.js"; printf '\nexport { createDrivers }\n'; }
driver_js > "$PKG/driver.js"
cp "$ROOT/npm/shared/driver.d.ts" "$PKG/driver.d.ts"
cp "$ROOT/npm/shared/tables.d.ts" "$PKG/tables.d.ts"
cp "$ROOT/LICENSE-MIT" "$ROOT/LICENSE-APACHE" "$PKG/"

# node.cjs: the Node entry as one CommonJS file, for require('segflake-wasm') (the native
# package falls back to it); import.meta.url becomes this file's URL, which is the
# package root, as node.js's.
log "esbuild node.js -> node.cjs"
"$ESBUILD" "$PKG/node.js" --bundle --platform=node --format=cjs --target=node18 --log-level=warning \
  --define:import.meta.url=__segflake_wasm_url \
  --banner:js="'use strict'; const __segflake_wasm_url = require('node:url').pathToFileURL(__filename).href;" \
  --outfile="$PKG/node.cjs"

mkdir -p "$ROOT/dist"
log "npm pack → dist/"
tarball=$(cd "$PKG" && npm pack --silent --pack-destination "$ROOT/dist" 2>/dev/null | tail -1)
log "dist/$tarball"
# The tarball ships the shared driver and declarations as they are in npm/shared.
cmp -s <(tar -xzOf "$ROOT/dist/$tarball" package/driver.js) <(driver_js) \
  || { echo "dist/$tarball: driver.js is not npm/shared/driver.js" >&2; exit 1; }
for f in driver.d.ts tables.d.ts; do
  cmp -s <(tar -xzOf "$ROOT/dist/$tarball" "package/$f") "$ROOT/npm/shared/$f" \
    || { echo "dist/$tarball: $f is not npm/shared/$f" >&2; exit 1; }
done
python3 "$ROOT/scripts/check_release.py" licenses "$ROOT/dist/$tarball"
echo "$ROOT/dist/$tarball"
