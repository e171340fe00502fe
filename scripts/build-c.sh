#!/usr/bin/env bash
# Builds the C library in release mode and packages it:
#   target/c/stage/libsegflake-<version>-<host>/{include,lib,lib/pkgconfig,share/doc}
#   dist/libsegflake-<version>-<host>.tar.gz   (relocatable: the .pc file finds its prefix)
# Options:
#   --header   regenerate include/segflake.h with cbindgen first (commit the result)
# Install into a prefix instead with: make -C bindings/c install PREFIX=/usr/local
. "$(dirname "$0")/ensure.sh"

regen_header=0
for arg in "$@"; do
  case "$arg" in
    --header) regen_header=1 ;;
    *) echo "usage: $0 [--header]" >&2; exit 2 ;;
  esac
done

export CARGO_TARGET_DIR="$ROOT/target/c"
cd "$ROOT"

if [ "$regen_header" = 1 ]; then
  ensure_cargo_tool cbindgen cbindgen 0.29.4
  log "cbindgen -> include/segflake.h"
  cbindgen --quiet --config bindings/c/cbindgen.toml --crate segflake-c \
    --output include/segflake.h bindings/c
fi

log "cargo build --release -p segflake-c"
make -s -C bindings/c build

version="$(make -s -C bindings/c print-version)"
host="$(rustc -vV | sed -n 's/^host: //p')"
name="libsegflake-$version-$host"
stage="$CARGO_TARGET_DIR/stage"
rm -rf "$stage"
mkdir -p "$stage/$name"
log "make install PREFIX=$stage/$name RELOCATABLE=1"
make -s -C bindings/c install PREFIX="$stage/$name" RELOCATABLE=1 >/dev/null
install -d "$stage/$name/share/doc/segflake"
install -m 644 bindings/c/README.md LICENSE-MIT LICENSE-APACHE "$stage/$name/share/doc/segflake/"

mkdir -p "$ROOT/dist"
tarball="$ROOT/dist/$name.tar.gz"
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner -czf "$tarball" "$name"
python3 "$ROOT/scripts/check_release.py" licenses "$tarball"
log "wrote $tarball ($(du -h "$tarball" | cut -f1))"
echo "$tarball"
