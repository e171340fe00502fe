#!/usr/bin/env bash
# Node benchmark: segflake beside the Node ID generators users pick today, one table, then
# the start-up table (startup.mjs: require/import and first ID in 21 fresh processes per row).
#   bench/node/run.sh            # 1000 ms per rate cell (~3-4 min: the slow peers'
#                                # 1,000,000-ID duplicate checks take most of it)
#   bench/node/run.sh --ms 300   # shorter cells
#   bench/node/run.sh --only segflake,hyperid
. "$(dirname "$0")/../../scripts/ensure.sh"

bash "$ROOT/scripts/build-node.sh"
cd "$ROOT/bench/node"
if [ ! -d node_modules/@sapphire/snowflake ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "npm ci (peer generators, pinned in bench/node/package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
# segflake as users install it: the tarballs in dist/ (the addon's from build-node.sh above;
# segflake-wasm's, which the main package depends on, from build-wasm.sh when it is not
# there yet). Both tables load it from node_modules.
VERSION="$(node -p "require('$ROOT/npm/segflake/package.json').version")"
[ -f "$ROOT/dist/segflake-wasm-$VERSION.tgz" ] || bash "$ROOT/scripts/build-wasm.sh" >/dev/null
log "npm install --no-save segflake, segflake-linux-x64-gnu and segflake-wasm from dist/"
rm -rf node_modules/segflake node_modules/segflake-linux-x64-gnu node_modules/segflake-wasm
npm install --no-save --no-audit --no-fund --loglevel=error "$ROOT/dist/segflake-$VERSION.tgz" \
  "$ROOT/dist/segflake-linux-x64-gnu-$VERSION.tgz" "$ROOT/dist/segflake-wasm-$VERSION.tgz" >&2
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
node bench.mjs "$@"
node startup.mjs
