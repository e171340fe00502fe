#!/usr/bin/env bash
# Builds the segflake-wasm npm package: the wasm32 module (release), the wasm-bindgen glue
# (ES module, --target web), wasm-opt (npm binaryen), then `npm pack` into dist/.
# Prints the .wasm size raw and gzipped. Idempotent; installs what is missing.
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

log "cargo build segflake-wasm (wasm32-unknown-unknown, release)"
# Whole-program optimisation for this one cdylib, without touching the workspace profile.
CARGO_PROFILE_RELEASE_LTO=fat \
CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
CARGO_PROFILE_RELEASE_PANIC=abort \
CARGO_PROFILE_RELEASE_OPT_LEVEL=3 \
  cargo build --quiet --release --target wasm32-unknown-unknown -p segflake-wasm

log "wasm-bindgen --target web"
rm -rf "$PKG/pkg"
wasm-bindgen --target web --no-typescript --out-dir "$PKG/pkg" \
  "$CARGO_TARGET_DIR/wasm32-unknown-unknown/release/segflake_wasm.wasm"

WASM="$PKG/pkg/segflake_wasm_bg.wasm"
before=$(stat -c %s "$WASM")
log "wasm-opt -O3"
"$WASM_OPT" -O3 "$WASM" -o "$WASM.opt"
mv "$WASM.opt" "$WASM"
raw=$(stat -c %s "$WASM")
gz=$(gzip -9c "$WASM" | wc -c)
log "segflake_wasm_bg.wasm: ${before} B before wasm-opt, ${raw} B after, ${gz} B gzipped (-9)"

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
