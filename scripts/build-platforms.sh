#!/usr/bin/env bash
# Cross builds for the platforms of scripts/platforms.txt beside this machine's
# linux-x64-gnu (which build-node.sh, build-python.sh and build-c.sh make): for each, with
# rustup's target and zig as the linker (cargo-zigbuild and zig from PyPI; no SDKs; Windows: MinGW's gcc),
#   dist/segflake-<suffix>-<version>.tgz            the npm platform package (napi layout)
#   dist/segflake-<version>-cp39-abi3-<tag>.whl      the Python wheel (maturin --zig)
#   dist/libsegflake-<version>-<target>.tar.gz       the C library: header, static and
#                                                    shared library, relocatable .pc file
# One cargo target directory for all of them (target/cross). Prints the artifact paths.
#   scripts/build-platforms.sh [SUFFIX...]   only these platforms (default: all but linux-x64-gnu)
#   scripts/build-platforms.sh --prepare [SUFFIX...]   only install what the builds need
. "$(dirname "$0")/ensure.sh"

prepare=0
if [ "${1:-}" = --prepare ]; then prepare=1; shift; fi
VERSION="$(node -p "require('$ROOT/npm/segflake/package.json').version")"
export CARGO_TARGET_DIR="$ROOT/target/cross"
# Symbols stay (the checks read them), debug info goes; the linker signs Mach-O output,
# so nothing is stripped after linking there.
export CARGO_PROFILE_RELEASE_STRIP=debuginfo
mkdir -p "$ROOT/dist" "$CARGO_TARGET_DIR"

ensure_rust_component llvm-tools
LLVM="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
if ! python3 -m maturin --version 2>/dev/null | grep -q '^maturin 1\.'; then ensure_pip "maturin>=1.16,<2"; fi
python3 -m ziglang version 2>/dev/null | grep -qx '0.15.2' || ensure_pip "ziglang==0.15.2"
ensure_zigbuild
# Windows: Debian's MinGW gcc links every Windows artifact (the addon, the extension and the
# C library, against msvcrt.dll, as the GNU target does by default); its dlltool writes
# import libraries. zig would build the MinGW C runtime from source first (about three
# minutes on two cores).
ensure_apt gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64

wanted=("$@")
rows=()
while read -r suffix triple zigt os cpu libc compat; do
  case "$suffix" in ''|'#'*) continue ;; esac
  if [ ${#wanted[@]} -eq 0 ]; then
    [ "$suffix" = linux-x64-gnu ] && continue
  else
    [[ " ${wanted[*]} " == *" $suffix "* ]] || continue
  fi
  rows+=("$suffix $triple $zigt $os $cpu $libc $compat")
done <"$ROOT/scripts/platforms.txt"
[ ${#rows[@]} -gt 0 ] || { echo "no platform matches: ${wanted[*]}" >&2; exit 2; }
for row in "${rows[@]}"; do
  read -r _ triple _ <<<"$row"
  ensure_rust_target "$triple"
done
[ $prepare = 0 ] || exit 0

# musl: a cdylib needs the C runtime linked dynamically (Rust's musl default is static).
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-C target-feature=-crt-static"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-C target-feature=-crt-static"

# native_static_libs TRIPLE: what a static link needs besides libsegflake.a, as rustc
# reports it for TRIPLE. segflake-c links no C library of its own, so these are the
# standard library's: rustc tells them for an empty static library in a second, where the
# real one would be compiled once more.
native_static_libs() {
  local d="$CARGO_TARGET_DIR/native-static-libs/$1" flags=()
  [[ "$1" == *-musl ]] && flags=(-C target-feature=-crt-static)
  mkdir -p "$d" && : >"$d/empty.rs"
  rustc --edition 2021 --crate-type staticlib --crate-name empty --target "$1" "${flags[@]}" \
    --print native-static-libs -o "$d/libempty.a" "$d/empty.rs" 2>&1 | sed -n 's/.*native-static-libs: //p' | tail -1
}

# cargo_build ARGS...: zig links for old glibc floors, musl and macOS; MinGW's gcc for Windows.
cargo_build() { if [ "$os" = win32 ]; then cargo build "$@"; else cargo zigbuild "$@"; fi; }

for row in "${rows[@]}"; do
  read -r suffix triple zigt os cpu libc compat <<<"$row"
  out="$CARGO_TARGET_DIR/$triple/release"
  case "$os" in
    linux) addon="$out/libsegflake_node.so" clib="$out/libsegflake.so" ;;
    darwin) addon="$out/libsegflake_node.dylib" clib="$out/libsegflake.dylib" ;;
    win32) addon="$out/segflake_node.dll" clib="$out/segflake.dll" ;;
  esac

  log "$suffix: the Node addon (--target $zigt)"
  if [ "$os" = win32 ]; then
    # napi's build script wants a MinGW libnode.dll for GNU targets; the addon looks
    # Node-API up in node.exe at load time instead (bindings/node/Cargo.toml), so an empty
    # import library satisfies the link and adds no import.
    stub="$CARGO_TARGET_DIR/libnode-stub"
    mkdir -p "$stub"
    printf 'LIBRARY node.exe\nEXPORTS\n' >"$stub/node.def"
    x86_64-w64-mingw32-dlltool -d "$stub/node.def" -l "$stub/libnode.a"
    : >"$stub/libnode.dll"
    export LIBNODE_PATH="$stub"
  fi
  cargo_build --release --quiet -p segflake-node --target "$zigt" --manifest-path "$ROOT/Cargo.toml" >&2
  stage="$CARGO_TARGET_DIR/npm-stage/segflake-$suffix"
  node "$ROOT/scripts/npm-platform.js" package "$suffix" "$VERSION" "$addon" "$stage"
  [ "$os" = darwin ] || "$LLVM/llvm-strip" --strip-unneeded "$stage/segflake.$suffix.node"
  rm -f "$ROOT/dist/segflake-$suffix-$VERSION.tgz"
  (cd "$stage" && npm pack --silent --pack-destination "$ROOT/dist" >/dev/null)
  echo "$ROOT/dist/segflake-$suffix-$VERSION.tgz"

  link_args=(--zig)
  # maturin --zig exports PyInit_segflake._native (the dotted module name) on Windows, which
  # does not link; Debian's MinGW gcc links the extension (pyo3 writes python3.dll's import
  # library with MinGW's dlltool).
  [ "$os" = win32 ] && link_args=()
  [ "$compat" = - ] || link_args+=(--compatibility "$compat")
  log "$suffix: the Python wheel (maturin ${link_args[*]} --target $triple)"
  # maturin runs zig 0.15 from this Python (as build-python.sh), not the venv's.
  (cd "$ROOT/python" && env PATH="${PATH#"$ZIGBUILD_BIN:"}" python3 -m maturin build --release \
    --target "$triple" "${link_args[@]}" --quiet --out "$CARGO_TARGET_DIR/wheels/$suffix" >&2)
  wheel="$(ls -t "$CARGO_TARGET_DIR/wheels/$suffix"/segflake-"$VERSION"-cp39-abi3-*.whl | head -1)"
  cp "$wheel" "$ROOT/dist/"
  echo "$ROOT/dist/$(basename "$wheel")"

  log "$suffix: the C library (-p segflake-c --target $zigt)"
  libs_private="$(native_static_libs "$triple")"
  cargo_build --release --quiet -p segflake-c --target "$zigt" --manifest-path "$ROOT/Cargo.toml" >&2
  name="libsegflake-$VERSION-$triple"
  cstage="$CARGO_TARGET_DIR/c-stage/$name"
  rm -rf "$cstage"
  if [ "$os" = linux ]; then
    make -s -C "$ROOT/bindings/c" install PREFIX="$cstage" RELOCATABLE=1 BUILD="$out" \
      STRIP="$LLVM/llvm-strip" LIBS_PRIVATE="$libs_private" >/dev/null
  else
    install -d "$cstage/include" "$cstage/lib/pkgconfig"
    install -m 644 "$ROOT/include/segflake.h" "$cstage/include/"
    install -m 644 "$out/libsegflake.a" "$cstage/lib/"
    "$LLVM/llvm-strip" --strip-debug "$cstage/lib/libsegflake.a"
    if [ "$os" = darwin ]; then
      install -m 755 "$clib" "$cstage/lib/"
    else
      # MinGW layout: the DLL beside programs (bin/), its import library in lib/.
      install -d "$cstage/bin"
      install -m 755 "$clib" "$cstage/bin/"
      "$LLVM/llvm-strip" --strip-unneeded "$cstage/bin/segflake.dll"
      install -m 644 "$out/libsegflake.dll.a" "$cstage/lib/"
    fi
    sed -e 's|@PREFIX@|${pcfiledir}/../..|' -e 's|@LIBDIR@|${prefix}/lib|' \
      -e 's|@INCLUDEDIR@|${prefix}/include|' -e "s|@VERSION@|$VERSION|" \
      -e "s|@LIBS_PRIVATE@|$libs_private|" "$ROOT/bindings/c/segflake.pc.in" >"$cstage/lib/pkgconfig/segflake.pc"
  fi
  install -d "$cstage/share/doc/segflake"
  install -m 644 "$ROOT/bindings/c/README.md" "$ROOT/LICENSE-MIT" "$ROOT/LICENSE-APACHE" "$cstage/share/doc/segflake/"
  tar -C "$CARGO_TARGET_DIR/c-stage" --sort=name --owner=0 --group=0 --numeric-owner \
    -czf "$ROOT/dist/$name.tar.gz" "$name"
  echo "$ROOT/dist/$name.tar.gz"

  python3 "$ROOT/scripts/check_release.py" licenses "$ROOT/dist/segflake-$suffix-$VERSION.tgz" \
    "$ROOT/dist/$(basename "$wheel")" "$ROOT/dist/$name.tar.gz"
done
