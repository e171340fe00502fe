#!/usr/bin/env bash
# Builds the Node addon (release) and packs the npm tarballs into dist/:
#   dist/segflake-<version>.tgz                 JS entry points, types, loader
#   dist/segflake-linux-x64-gnu-<version>.tgz   the prebuilt .node binary
# The main package names the platform package in optionalDependencies, the way napi
# packages are wired, so `npm install` of both tarballs compiles nothing.
. "$(dirname "$0")/ensure.sh"

PKG="$ROOT/npm/segflake"
PLAT="$ROOT/npm/segflake-linux-x64-gnu"
export CARGO_TARGET_DIR="$ROOT/target/node"
STAGE="$CARGO_TARGET_DIR/npm-stage"
mkdir -p "$ROOT/dist"

cd "$PKG"
if [ ! -x node_modules/.bin/napi ] || [ ! -x node_modules/.bin/tsc ] || [ ! -x node_modules/.bin/prettier ]; then
  log "npm install (napi CLI, typescript, prettier) in npm/segflake"
  npm install --no-audit --no-fund --loglevel=error >&2
fi

log "napi build --release (bindings/node)"
node_modules/.bin/napi build --platform --release \
  --manifest-path ../../bindings/node/Cargo.toml \
  --output-dir . --js native.js --dts native.d.ts >&2

VERSION="$(node -p "require('./package.json').version")"
BIN="segflake.linux-x64-gnu.node"
GLIBC_FLOOR=2.17
if [ -n "${SEGFLAKE_NODE_HOST_BINARY:-}" ]; then
  # Quick local builds: ship the host build (needs this machine's glibc or newer).
  log "shipping the host build (SEGFLAKE_NODE_HOST_BINARY is set)"
  strip --strip-unneeded -o "$PLAT/$BIN" "$PKG/$BIN"
else
  # The shipped addon links against glibc $GLIBC_FLOOR (Debian 9+, Ubuntu 14.04+, RHEL 7+),
  # not this machine's: cargo-zigbuild with zig as the linker, both from PyPI, in a venv.
  ZIGENV="$CARGO_TARGET_DIR/zigenv"
  if [ ! -x "$ZIGENV/bin/cargo-zigbuild" ] || [ ! -x "$ZIGENV/bin/python-zig" ]; then
    log "python venv with cargo-zigbuild and ziglang (PyPI)"
    python3 -m venv "$ZIGENV" >&2
    "$ZIGENV/bin/pip" install --quiet --disable-pip-version-check cargo-zigbuild==0.24.0 ziglang==0.17.0 >&2
  fi
  log "cargo zigbuild --release --target x86_64-unknown-linux-gnu.$GLIBC_FLOOR (the shipped addon)"
  PATH="$ZIGENV/bin:$PATH" CARGO_TARGET_DIR="$CARGO_TARGET_DIR/zig" \
    cargo zigbuild --release --quiet -p segflake-node --target "x86_64-unknown-linux-gnu.$GLIBC_FLOOR" \
    --manifest-path "$ROOT/bindings/node/Cargo.toml" >&2
  strip --strip-unneeded -o "$PLAT/$BIN" \
    "$CARGO_TARGET_DIR/zig/x86_64-unknown-linux-gnu/release/libsegflake_node.so"
  newest="$(objdump -T "$PLAT/$BIN" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)"
  if [ "$(printf '%s\n%s\n' "$newest" "$GLIBC_FLOOR" | sort -V | tail -1)" != "$GLIBC_FLOOR" ]; then
    echo "the shipped addon needs glibc $newest, above the floor $GLIBC_FLOOR" >&2
    exit 1
  fi
  log "shipped addon: glibc >= $newest"
fi

# Stage copies: the main package gets optionalDependencies on its platform package and
# loses its build-only fields (napi's pre-publish step does this, but needs git hosting).
rm -rf "$STAGE" && mkdir -p "$STAGE/segflake" "$STAGE/plat"
node - "$PKG" "$STAGE/segflake" "$VERSION" <<'JS'
const fs = require('fs'), path = require('path')
const [src, dst, version] = process.argv.slice(2)
const pkg = JSON.parse(fs.readFileSync(path.join(src, 'package.json'), 'utf8'))
for (const f of pkg.files) {
  if (f === 'driver.js') {
    // The JS drivers shared with segflake-wasm, as a CommonJS module.
    const shared = fs.readFileSync(path.join(src, '..', 'shared', 'driver.js'), 'utf8')
    fs.writeFileSync(path.join(dst, f), `'use strict'\n${shared}\nmodule.exports = { createDrivers }\n`)
  } else if (f === 'driver.d.ts') {
    // Their declarations, shared too (index.d.ts re-exports the classes).
    fs.copyFileSync(path.join(src, '..', 'shared', 'driver.d.ts'), path.join(dst, f))
  } else {
    fs.cpSync(path.join(src, f), path.join(dst, f), { recursive: true })
  }
}
delete pkg.devDependencies
delete pkg.scripts
pkg.optionalDependencies = {}
for (const triple of pkg.napi.targets) {
  const suffix = { 'x86_64-unknown-linux-gnu': 'linux-x64-gnu' }[triple]
  if (!suffix) throw new Error(`no platform package name for ${triple}`)
  pkg.optionalDependencies[`${pkg.napi.packageName}-${suffix}`] = version
}
fs.writeFileSync(path.join(dst, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
JS
cp "$PLAT/package.json" "$PLAT/README.md" "$PLAT/$BIN" "$STAGE/plat/"

log "npm pack -> dist/"
rm -f "$ROOT/dist/segflake-$VERSION.tgz" "$ROOT/dist/segflake-linux-x64-gnu-$VERSION.tgz"
(cd "$STAGE/segflake" && npm pack --silent --pack-destination "$ROOT/dist" >/dev/null)
(cd "$STAGE/plat" && npm pack --silent --pack-destination "$ROOT/dist" >/dev/null)
# The tarball ships the shared driver and its declarations as they are in npm/shared.
TGZ="$ROOT/dist/segflake-$VERSION.tgz"
cmp -s <(tar -xzOf "$TGZ" package/driver.js) \
  <(printf "'use strict'\n"; cat "$ROOT/npm/shared/driver.js"; printf '\nmodule.exports = { createDrivers }\n') \
  || { echo "$TGZ: driver.js is not npm/shared/driver.js" >&2; exit 1; }
cmp -s <(tar -xzOf "$TGZ" package/driver.d.ts) "$ROOT/npm/shared/driver.d.ts" \
  || { echo "$TGZ: driver.d.ts is not npm/shared/driver.d.ts" >&2; exit 1; }
ls -l "$ROOT/dist/segflake-$VERSION.tgz" "$ROOT/dist/segflake-linux-x64-gnu-$VERSION.tgz" >&2
