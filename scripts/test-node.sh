#!/usr/bin/env bash
# Node package tests, run as a user gets the package: build release, pack the tarballs into
# dist/ (segflake, its linux-x64-gnu platform package, and segflake-wasm, its WebAssembly
# fallback), then run the node:test suites and `tsc --noEmit` on a typed example twice,
# each from a fresh temporary project installed from the tarballs (without Rust on the
# PATH; nothing compiles at install):
#   1. a plain install: the native addon runs (segflake.backend === 'native');
#   2. `npm install --omit=optional`: no platform package, so the WebAssembly build runs;
# then the same suites under Bun (`bun test`) from the first project (the native addon).
# Exits non-zero on any failure; the last lines are node --test's summaries.
. "$(dirname "$0")/ensure.sh"
# The Redis adapters' tests start replicated servers and a sentinel (redis_servers.test.mjs).
ensure_apt redis-server

bash "$ROOT/scripts/build-node.sh"
WASM_TGZ="$(bash "$ROOT/scripts/build-wasm.sh" | tail -1)"

PKG="$ROOT/npm/segflake"
log "prettier --check: one JS style for both npm packages and their shared driver (npm/.prettierrc.json)"
(cd "$ROOT/npm" && segflake/node_modules/.bin/prettier --check --log-level warn \
  shared/*.js segflake-wasm/core.js segflake-wasm/errors.js segflake-wasm/index.js segflake-wasm/node.js segflake-wasm/workerd.js \
  segflake-wasm/segment.js segflake/index.js segflake/index.mjs segflake/wasm.js segflake/stores/*.js segflake/stores/*.mjs segflake/registries.js \
  segflake/registries/*.js segflake/registries/*.mjs segflake/counters.js segflake/counters.mjs)
VERSION="$(node -p "require('$PKG/package.json').version")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/segflake-node-test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
NODE_DIR="$(dirname "$(command -v node)")"
MAIN_TGZ="$ROOT/dist/segflake-$VERSION.tgz"
PLAT_TGZ="$ROOT/dist/segflake-linux-x64-gnu-$VERSION.tgz"
export SEGFLAKE_VECTORS_DIR="$ROOT/tests/vectors"

# run_suite BACKEND DIR: the suites and the typed example, from the project in DIR.
run_suite() {
  local backend="$1" dir="$2"
  cd "$dir"
  # The driver shipped is the shared source, unedited.
  node -e "
  const fs = require('fs')
  const shared = fs.readFileSync('$ROOT/npm/shared/driver.js', 'utf8')
  const shipped = fs.readFileSync('node_modules/segflake/driver.js', 'utf8')
  if (shipped !== \"'use strict'\\n\" + shared + '\\nmodule.exports = { createDrivers }\\n') {
    console.error('node_modules/segflake/driver.js is not npm/shared/driver.js'); process.exit(1)
  }" || return 1
  cp "$PKG"/test/*.mjs . && mkdir -p types && cp "$PKG"/test/types/example.ts "$PKG"/test/types/tsconfig.json types/
  log "tsc --noEmit on a typed example ($backend)"
  "$PKG/node_modules/.bin/tsc" -p types/tsconfig.json || return 1
  log "node --test (from the installed package, backend: $backend)"
  local only=()
  [ -z "${TEST_NAME:-}" ] || only=(--test-name-pattern "$TEST_NAME")
  SEGFLAKE_EXPECT_BACKEND="$backend" node --test --test-reporter=spec "${only[@]}" ./*.test.mjs
}
failed=()

log "install dist/ tarballs into $WORK/native (PATH without cargo)"
mkdir -p "$WORK/native" && cd "$WORK/native"
printf '{ "name": "segflake-node-test", "version": "0.0.0", "private": true, "type": "module" }\n' > package.json
env PATH="$NODE_DIR:/usr/bin:/bin" npm install --no-audit --no-fund --loglevel=error \
  "$PLAT_TGZ" "$MAIN_TGZ" "$WASM_TGZ" ioredis@5 >&2
if env PATH="$NODE_DIR:/usr/bin:/bin" command -v cargo >/dev/null 2>&1; then
  log "note: cargo is on the reduced PATH"
fi
# The installed package is the packed one, not a link into the repository.
[ ! -L node_modules/segflake ] && [ -f node_modules/segflake-linux-x64-gnu/segflake.linux-x64-gnu.node ] \
  || { echo "segflake was not installed from the tarballs" >&2; exit 1; }
run_suite native "$WORK/native" || failed+=(native)

# The fallback as users meet it: segflake names its platform package as an optional
# dependency (here the local tarball, so nothing is fetched) and --omit=optional skips it.
log "npm install --omit=optional into $WORK/wasm"
mkdir -p "$WORK/wasm" && cd "$WORK/wasm"
node -e "
require('fs').writeFileSync('package.json', JSON.stringify({
  name: 'segflake-fallback-test', version: '0.0.0', private: true, type: 'module',
  dependencies: { segflake: 'file:$MAIN_TGZ', 'segflake-wasm': 'file:$WASM_TGZ', ioredis: '5' },
  optionalDependencies: { 'segflake-linux-x64-gnu': 'file:$PLAT_TGZ' },
}, null, 2))"
env PATH="$NODE_DIR:/usr/bin:/bin" npm install --omit=optional --no-audit --no-fund --loglevel=error >&2
[ -d node_modules/segflake ] && [ ! -e node_modules/segflake-linux-x64-gnu ] \
  || { echo "--omit=optional installed the platform package (or no segflake)" >&2; exit 1; }
run_suite wasm "$WORK/wasm" || failed+=(wasm)

# Bun (the `bun` npm package, pinned with segflake-wasm's test tools) runs the same suites
# from the native project: the Node-API addon loaded by Bun, its node:test files through
# `bun test`.
BUN_TOOLS="$ROOT/npm/segflake-wasm/test"
if ! "$BUN_TOOLS/node_modules/.bin/bun" --version >/dev/null 2>&1; then
  log "npm ci in npm/segflake-wasm/test (bun)"
  (cd "$BUN_TOOLS" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi
log "bun test (Bun $("$BUN_TOOLS/node_modules/.bin/bun" --version), from $WORK/native, backend: native)"
cd "$WORK/native"
only=()
[ -z "${TEST_NAME:-}" ] || only=(-t "$TEST_NAME")
SEGFLAKE_EXPECT_BACKEND=native "$BUN_TOOLS/node_modules/.bin/bun" test --timeout 120000 "${only[@]}" ./*.test.mjs \
  || failed+=(bun)
[ ${#failed[@]} -eq 0 ] || { echo "failed on the backends: ${failed[*]}" >&2; exit 1; }
