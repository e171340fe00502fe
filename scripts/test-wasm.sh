#!/usr/bin/env bash
# Tests the segflake-wasm package as users get it: builds and packs it (scripts/build-wasm.sh),
# installs the tarball from dist/ into an empty project, and runs the tests there with
# `node --test`: the shared cases and vectors in Node, the same cases in headless Chromium
# (the page loads the installed package's files from a local server; also under a
# Content-Security-Policy with and without 'wasm-unsafe-eval'), a Vite app (its production
# build and its dev server) in Chromium, the package layout
# and entry points, a TypeScript check of the declarations, and parity with the native
# package (installed from its tarballs in dist/ the same way); in Cloudflare's workerd (a
# Worker bundled by esbuild as wrangler does, run through miniflare: IDs over requests and the
# shared cases inside workerd); and the shared cases under Bun and Deno (their npm packages),
# with the native package's addon loaded by both. The snowflake entry (segflake-wasm/snowflake,
# its own .wasm) runs the shared cases for everything it exports in Node, Chromium, workerd,
# Bun and Deno, and test/snowflake.test.mjs checks the size of both builds against their
# ceilings (an esbuild browser bundle of the snowflake entry; the full .wasm).
# Ends with node --test's summary; exits non-zero on any failure.
. "$(dirname "$0")/ensure.sh"

PKG="$ROOT/npm/segflake-wasm"
TESTS="$PKG/test"

ensure_apt chromium
if ! (cd "$TESTS" && node -e "for (const m of ['playwright-core', 'typescript/bin/tsc', 'esbuild', 'miniflare', 'workerd/package.json', 'vite/package.json']) require.resolve(m)" 2>/dev/null) \
  || ! "$TESTS/node_modules/.bin/bun" --version >/dev/null 2>&1 || ! "$TESTS/node_modules/.bin/deno" --version >/dev/null 2>&1; then
  log "npm ci (test tools: playwright-core, esbuild, vite, typescript, miniflare + workerd, bun, deno)"
  (cd "$TESTS" && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

# --testing: also the tests' module (test/pkg, copied beside the tests below, not packed).
tarball="$("$ROOT/scripts/build-wasm.sh" --testing | tail -1)"
[ -f "$tarball" ] || { echo "build-wasm.sh did not produce a tarball" >&2; exit 1; }

# The parity test compares with the native package: its tarballs from dist/, built by
# scripts/build-node.sh when they are not there yet.
VERSION="$(node -p "require('$PKG/package.json').version")"
NATIVE=("$ROOT/dist/segflake-linux-x64-gnu-$VERSION.tgz" "$ROOT/dist/segflake-$VERSION.tgz")
if [ ! -f "${NATIVE[0]}" ] || [ ! -f "${NATIVE[1]}" ]; then
  log "native tarballs missing in dist/: scripts/build-node.sh"
  "$ROOT/scripts/build-node.sh" >&2
fi

APP="$ROOT/target/wasm/test-app"
log "installing $(basename "$tarball") into an empty project ($APP)"
rm -rf "$APP"
mkdir -p "$APP/test"
printf '{ "name": "segflake-wasm-test-app", "private": true, "type": "module" }\n' > "$APP/package.json"
(cd "$APP" && npm install --no-audit --no-fund --loglevel=error "$tarball" "${NATIVE[@]}" >&2)
for f in "$TESTS"/*; do
  case "$(basename "$f")" in node_modules|package.json|package-lock.json) ;; *) cp -r "$f" "$APP/test/" ;; esac
done

# The driver shipped is the shared source, unedited.
shipped="$APP/node_modules/segflake-wasm/driver.js"
if ! cmp -s "$shipped" <(cat "$ROOT/npm/shared/driver.js"; printf '\nexport { createDrivers }\n'); then
  echo "$shipped is not npm/shared/driver.js" >&2; exit 1
fi

export SEGFLAKE_VECTORS_DIR="$ROOT/tests/vectors"
export SEGFLAKE_TSC="$TESTS/node_modules/typescript/bin/tsc"
export SEGFLAKE_PLAYWRIGHT_DIR="$TESTS"
export SEGFLAKE_ESBUILD="$TESTS/node_modules/.bin/esbuild"
export SEGFLAKE_TOOLS_DIR="$TESTS"
log "node --test (Node, Chromium, package, types, parity, workerd, Bun, Deno)"
cd "$APP"
only=()
[ -z "${TEST_NAME:-}" ] || only=(--test-name-pattern "$TEST_NAME")
node --test "${only[@]}" test/*.test.mjs
