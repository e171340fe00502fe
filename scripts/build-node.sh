#!/usr/bin/env bash
# Builds the Node addon (release) and packs the npm tarballs into dist/:
#   dist/segflake-<version>.tgz                 JS entry points, types, loader
#   dist/segflake-linux-x64-gnu-<version>.tgz   the prebuilt .node binary
# The main package names every platform package of scripts/platforms.txt in
# optionalDependencies, the way napi packages are wired (build-platforms.sh builds the
# others), and segflake-wasm as a dependency (its fallback where no addon loads), so
# `npm install` compiles nothing.
. "$(dirname "$0")/ensure.sh"

PKG="$ROOT/npm/segflake"
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
  strip --strip-unneeded -o "$CARGO_TARGET_DIR/$BIN" "$PKG/$BIN"
else
  # The shipped addon links against glibc $GLIBC_FLOOR (Debian 9+, Ubuntu 14.04+, RHEL 7+),
  # not this machine's: cargo-zigbuild with zig as the linker, both from PyPI, in a venv.
  ensure_zigbuild
  log "cargo zigbuild --release --target x86_64-unknown-linux-gnu.$GLIBC_FLOOR (the shipped addon)"
  CARGO_TARGET_DIR="$CARGO_TARGET_DIR/zig" \
    cargo zigbuild --release --quiet -p segflake-node --target "x86_64-unknown-linux-gnu.$GLIBC_FLOOR" \
    --manifest-path "$ROOT/bindings/node/Cargo.toml" >&2
  strip --strip-unneeded -o "$CARGO_TARGET_DIR/$BIN" \
    "$CARGO_TARGET_DIR/zig/x86_64-unknown-linux-gnu/release/libsegflake_node.so"
  newest="$(objdump -T "$CARGO_TARGET_DIR/$BIN" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)"
  if [ "$(printf '%s\n%s\n' "$newest" "$GLIBC_FLOOR" | sort -V | tail -1)" != "$GLIBC_FLOOR" ]; then
    echo "the shipped addon needs glibc $newest, above the floor $GLIBC_FLOOR" >&2
    exit 1
  fi
  log "shipped addon: glibc >= $newest"
fi

# Stage copies: the main package gets optionalDependencies on its platform package and
# loses its build-only fields (napi's pre-publish step does this, but needs git hosting).
rm -rf "$STAGE" && mkdir -p "$STAGE/segflake" "$STAGE/plat"
OPTIONAL_DEPS="$(node "$ROOT/scripts/npm-platform.js" optional "$VERSION")" \
  node - "$PKG" "$STAGE/segflake" "$VERSION" <<'JS'
const fs = require('fs'), path = require('path')
const [src, dst, version] = process.argv.slice(2)
const pkg = JSON.parse(fs.readFileSync(path.join(src, 'package.json'), 'utf8'))
for (const f of pkg.files) {
  if (f.startsWith('LICENSE-')) continue // copied from the repository root below
  if (f === 'driver.js') {
    // The JS drivers shared with segflake-wasm, as a CommonJS module.
    const shared = fs.readFileSync(path.join(src, '..', 'shared', 'driver.js'), 'utf8')
    fs.writeFileSync(path.join(dst, f), `'use strict'\n${shared}\nmodule.exports = { createDrivers }\n`)
  } else if (f === 'driver.d.ts' || f === 'tables.d.ts') {
    // Their declarations, and the option and record declarations generated from the core's
    // tables: shared too (index.d.ts and native.d.ts re-export them).
    fs.copyFileSync(path.join(src, '..', 'shared', f), path.join(dst, f))
  } else {
    fs.cpSync(path.join(src, f), path.join(dst, f), { recursive: true })
  }
}
delete pkg.devDependencies
delete pkg.scripts
// The WebAssembly fallback (wasm.js) where no platform package loads.
pkg.dependencies = { 'segflake-wasm': version }
pkg.optionalDependencies = JSON.parse(process.env.OPTIONAL_DEPS)
fs.writeFileSync(path.join(dst, 'package.json'), JSON.stringify(pkg, null, 2) + '\n')
JS
cp "$ROOT/LICENSE-MIT" "$ROOT/LICENSE-APACHE" "$STAGE/segflake/"
node "$ROOT/scripts/npm-platform.js" package linux-x64-gnu "$VERSION" "$CARGO_TARGET_DIR/$BIN" "$STAGE/plat"

log "npm pack -> dist/"
rm -f "$ROOT/dist/segflake-$VERSION.tgz" "$ROOT/dist/segflake-linux-x64-gnu-$VERSION.tgz"
(cd "$STAGE/segflake" && npm pack --silent --pack-destination "$ROOT/dist" >/dev/null)
(cd "$STAGE/plat" && npm pack --silent --pack-destination "$ROOT/dist" >/dev/null)
# The tarball ships the shared driver and declarations as they are in npm/shared.
TGZ="$ROOT/dist/segflake-$VERSION.tgz"
cmp -s <(tar -xzOf "$TGZ" package/driver.js) \
  <(printf "'use strict'\n"; cat "$ROOT/npm/shared/driver.js"; printf '\nmodule.exports = { createDrivers }\n') \
  || { echo "$TGZ: driver.js is not npm/shared/driver.js" >&2; exit 1; }
for f in driver.d.ts tables.d.ts; do
  cmp -s <(tar -xzOf "$TGZ" "package/$f") "$ROOT/npm/shared/$f" \
    || { echo "$TGZ: $f is not npm/shared/$f" >&2; exit 1; }
done
python3 "$ROOT/scripts/check_release.py" licenses "$TGZ" "$ROOT/dist/segflake-linux-x64-gnu-$VERSION.tgz"
ls -l "$ROOT/dist/segflake-$VERSION.tgz" "$ROOT/dist/segflake-linux-x64-gnu-$VERSION.tgz" >&2
