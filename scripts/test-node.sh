#!/usr/bin/env bash
# Node package tests, run as a user gets the package: build release, pack the tarballs into
# dist/, install them into a fresh temporary project (without Rust on the PATH; nothing
# compiles at install), then run the node:test suites from that project and `tsc --noEmit`
# on a typed example. Exits non-zero on any failure; the last lines are node --test's
# summary.
. "$(dirname "$0")/ensure.sh"

bash "$ROOT/scripts/build-node.sh"

PKG="$ROOT/npm/segflake"
log "prettier --check: one JS style for both npm packages and their shared driver (npm/.prettierrc.json)"
(cd "$ROOT/npm" && segflake/node_modules/.bin/prettier --check --log-level warn \
  shared/*.js segflake-wasm/core.js segflake-wasm/errors.js segflake-wasm/index.js segflake-wasm/node.js \
  segflake-wasm/segment.js segflake/index.js segflake/index.mjs segflake/stores/*.js segflake/stores/*.mjs segflake/registries.js \
  segflake/registries/*.js segflake/registries/*.mjs segflake/counters.js segflake/counters.mjs)
VERSION="$(node -p "require('$PKG/package.json').version")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/segflake-node-test.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

log "install dist/ tarballs into $WORK (PATH without cargo)"
cd "$WORK"
printf '{ "name": "segflake-node-test", "version": "0.0.0", "private": true, "type": "module" }\n' > package.json
NODE_DIR="$(dirname "$(command -v node)")"
env PATH="$NODE_DIR:/usr/bin:/bin" npm install --no-audit --no-fund --loglevel=error \
  "$ROOT/dist/segflake-linux-x64-gnu-$VERSION.tgz" "$ROOT/dist/segflake-$VERSION.tgz" >&2
if env PATH="$NODE_DIR:/usr/bin:/bin" command -v cargo >/dev/null 2>&1; then
  log "note: cargo is on the reduced PATH"
fi
# The installed package is the packed one, not a link into the repository.
[ ! -L node_modules/segflake ] && [ -f node_modules/segflake-linux-x64-gnu/segflake.linux-x64-gnu.node ] \
  || { echo "segflake was not installed from the tarballs" >&2; exit 1; }

# The driver shipped is the shared source, unedited.
node -e "
const fs = require('fs')
const shared = fs.readFileSync('$ROOT/npm/shared/driver.js', 'utf8')
const shipped = fs.readFileSync('node_modules/segflake/driver.js', 'utf8')
if (shipped !== \"'use strict'\\n\" + shared + '\\nmodule.exports = { createDrivers }\\n') {
  console.error('node_modules/segflake/driver.js is not npm/shared/driver.js'); process.exit(1)
}"

cp "$PKG"/test/*.mjs .
mkdir -p types && cp "$PKG"/test/types/example.ts "$PKG"/test/types/tsconfig.json types/

log "tsc --noEmit on a typed example"
"$PKG/node_modules/.bin/tsc" -p types/tsconfig.json

log "node --test (from the installed package)"
export SEGFLAKE_VECTORS_DIR="$ROOT/tests/vectors"
node --test --test-reporter=spec ./*.test.mjs
