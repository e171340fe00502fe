#!/usr/bin/env bash
# The WebAssembly benchmark table: segflake-wasm (from the packed tarball in dist/) beside
# nodejs-snowflake and @sapphire/snowflake, in Node and in headless Chromium, IDs/s and
# duplicates over 1,000,000 IDs, after a size table (floor.sh: the snowflake module beside
# the core alone). The native package's row is added when its tarballs are
# in dist/ (scripts/build-node.sh). Then the start-up tables of both builds (startup.mjs): Node
# and Chromium, then workerd through miniflare.
# Options through the environment: BENCH_N, BENCH_ROUNDS.
. "$(dirname "$0")/../../scripts/ensure.sh"
HERE="$ROOT/bench/wasm"

ensure_apt chromium
tarball="$("$ROOT/scripts/build-wasm.sh" | tail -1)"
# The size table: the snowflake module beside the core alone behind plain exports.
bash "$HERE/floor.sh"
echo
log "npm ci (bench peers, esbuild, playwright-core, miniflare)"
(cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error >&2)
extra=()
for f in "$ROOT/dist/segflake-linux-x64-gnu-0.1.0.tgz" "$ROOT/dist/segflake-0.1.0.tgz"; do
  [ -f "$f" ] && extra+=("$f")
done
[ ${#extra[@]} -eq 2 ] || { log "native tarballs not in dist/: the native reference row is left out"; extra=(); }
(cd "$HERE" && npm install --no-save --no-audit --no-fund --loglevel=error "$tarball" "${extra[@]}" >&2)

log "esbuild: the peers for the browser"
(cd "$HERE" && node_modules/.bin/esbuild browser/peers.js --bundle --format=esm --platform=browser \
  --loader:.wasm=binary --define:__dirname='""' \
  --alias:fs=./browser/shims/fs.js --alias:path=./browser/shims/path.js --alias:util=./browser/shims/util.js \
  --outfile="$ROOT/target/wasm/bench/peers.bundle.js" --log-level=warning >&2)

log "benchmark (Node, then Chromium)"
cd "$HERE"
SEGFLAKE_PLAYWRIGHT_DIR="$HERE" BENCH_BUILD_DIR="$ROOT/target/wasm/bench" node run.mjs

log "start-up: import, instantiate and first ID of each build (Node, then Chromium), then a Worker of each in workerd"
SEGFLAKE_PLAYWRIGHT_DIR="$HERE" node startup.mjs
