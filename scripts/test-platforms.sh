#!/usr/bin/env bash
# The platforms beside linux-x64-gnu (scripts/platforms.txt): cross-builds every artifact
# (scripts/build-platforms.sh), then checks what this machine can check of each.
#   * every artifact: file format and architecture, the entry points it must export
#     (napi_register_module_v1 in the addons, PyInit__native in the wheels, every function
#     of include/segflake.h in the C libraries), the wheel tags, the licenses;
#   * linux arm64 (glibc): the addon under Debian's arm64 Node, the wheel under Debian's
#     arm64 CPython and the C test program, all under qemu-user, run the shared vectors;
#     the binaries need no glibc above 2.17;
#   * musl: the C test program, linked statically against the musl library, runs the
#     vectors here (x86-64) and under qemu (arm64); the addons and wheels link only musl's
#     libc and no glibc symbol;
#   * macOS and Windows: the static checks (arm64 Mach-O must carry a code signature; the
#     Windows example program links against the static library);
#   * first of all, the container image's static musl CLI and the Kubernetes manifests
#     (deploy/check.sh; not when platforms are named).
# Ends with "N passed, N failed" and a table of artifact sizes.
#   scripts/test-platforms.sh [SUFFIX...]   only these platforms
#   scripts/test-platforms.sh --prepare     only what it installs (apt, rustup, PyPI), the
#                                           arm64 root, and a copy of the linux-x64 npm
#                                           tarballs it installs beside the addons; the
#                                           suite can then run beside others (test-all.sh)
. "$(dirname "$0")/ensure.sh"

P="$ROOT/target/platforms"
T="$P/test"
prepare=0
if [ "${1:-}" = --prepare ]; then prepare=1; shift; fi
VERSION="$(node -p "require('$ROOT/npm/segflake/package.json').version")"
VEC="$ROOT/tests/vectors"
# The arm64 user-mode emulator and arm64 libraries (multiarch). Node and CPython for arm64
# cannot be installed beside the amd64 ones (same paths; apt would remove this machine's
# Node): their packages are only unpacked into $ARM64, which qemu overlays on / (-L).
ensure_apt file qemu-user-static curl  # curl: deploy/check.sh
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  log "dpkg --add-architecture arm64"
  dpkg --add-architecture arm64
  unset SEGFLAKE_APT_UPDATED
fi
ensure_apt libc6:arm64 libstdc++6:arm64 libgcc-s1:arm64 libicu72:arm64 libuv1:arm64 libc-ares2:arm64 \
  libbrotli1:arm64 libnghttp2-14:arm64 libssl3:arm64 zlib1g:arm64 libexpat1:arm64 \
  libpython3.11-minimal:arm64 libpython3.11-stdlib:arm64
ARM64="$P/arm64-root"
if [ ! -x "$ARM64/usr/bin/node" ] || [ ! -x "$ARM64/usr/bin/python3.11" ]; then
  log "unpacking Debian's arm64 Node and CPython into $ARM64"
  rm -rf "$P/arm64-debs" "$ARM64" && mkdir -p "$P/arm64-debs"
  # Node's externalised builtins (acorn, cjs-module-lexer, undici) are read from /usr/share/nodejs.
  (cd "$P/arm64-debs" && apt-get download nodejs:arm64 libnode108:arm64 python3.11-minimal:arm64 \
    node-acorn node-cjs-module-lexer node-undici node-busboy node-xtend 2>/dev/null)
  for d in "$P"/arm64-debs/*.deb; do dpkg-deb -x "$d" "$ARM64"; done
fi
arm64() { QEMU_LD_PREFIX="$ARM64" LD_LIBRARY_PATH=/usr/lib/aarch64-linux-gnu qemu-aarch64-static "$@"; }
# The JS package and its WebAssembly fallback (the node and wasm suites build them), copied
# before other suites may pack them again (SEGFLAKE_PREPARED=1: --prepare copied them).
NPM_INPUTS="$P/npm-inputs"
if [ "${SEGFLAKE_PREPARED:-0}" != 1 ]; then
  [ -f "$ROOT/dist/segflake-$VERSION.tgz" ] || bash "$ROOT/scripts/build-node.sh" >/dev/null
  [ -f "$ROOT/dist/segflake-wasm-$VERSION.tgz" ] || bash "$ROOT/scripts/build-wasm.sh" >/dev/null
  rm -rf "$NPM_INPUTS" && mkdir -p "$NPM_INPUTS"
  cp "$ROOT/dist/segflake-$VERSION.tgz" "$ROOT/dist/segflake-wasm-$VERSION.tgz" "$NPM_INPUTS/"
fi
ensure_zigbuild
if [ $prepare = 1 ]; then exec bash "$ROOT/scripts/build-platforms.sh" --prepare "$@"; fi

rm -rf "$T" && mkdir -p "$T"
passed=0
failed=0
# step NAME CMD...: runs a command, counts it, shows its output on failure.
step() {
  local name="$1"; shift
  local logf="$T/step-$((passed + failed)).log"
  if "$@" >"$logf" 2>&1; then
    passed=$((passed + 1)); echo "ok - $name"
  else
    # The failing checks' own lines first (a test program prints FAIL and the reason
    # wherever it is in its output), then the end of the output.
    failed=$((failed + 1)); echo "FAIL - $name"
    grep -A 4 -E '^(FAIL|not ok)' "$logf" | head -n 40 | sed 's/^/    /'
    echo "    ..."; tail -n 25 "$logf" | sed 's/^/    /'
  fi
}

# First the container image's static musl CLI (the scenarios run the same build: the same
# environment, so cargo finds it built) serving from an empty chroot, and the Kubernetes
# manifests against their schemas.
if [ $# -eq 0 ]; then
  step "container image and Kubernetes manifests (deploy/check.sh)" bash "$ROOT/deploy/check.sh"
fi
artifacts="$(bash "$ROOT/scripts/build-platforms.sh" "$@")"
LLVM="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"

# The functions include/segflake.h declares (the C library must export each).
grep -oE '^[a-z][a-z_ *0-9]*\bsegflake_[a-z0-9_]+\(' "$ROOT/include/segflake.h" |
  grep -oE 'segflake_[a-z0-9_]+\($' | tr -d '(' | sort >"$T/header-functions"

# exported FILE: the names of the dynamic symbols FILE defines (Mach-O without the leading _).
exported() {
  case "$(file -b "$1")" in
    *Mach-O*) "$LLVM/llvm-nm" -gU "$1" | awk '{print $3}' | sed 's/^_//' ;;
    *PE32*) "$LLVM/llvm-readobj" --coff-exports "$1" | sed -n 's/^ *Name: //p' ;;
    *) "$LLVM/llvm-nm" -D --defined-only "$1" | awk '{print $3}' ;;
  esac
}
# grep without -q reads all of the listing: with -q it exits at the first match and, under
# pipefail, the lister's SIGPIPE would fail the check.
has_symbol() { exported "$1" | grep -x "$2" >/dev/null; }
exports_header() { diff <(exported "$1" | grep '^segflake_' | sort) "$T/header-functions"; }
is_format() { file -b "$1" | tee /dev/stderr | grep -q "$2"; }
# glibc_floor FILE: no versioned glibc symbol above 2.17.
glibc_floor() {
  local newest
  newest="$("$LLVM/llvm-objdump" -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)"
  echo "needs glibc ${newest:-none}"
  [ "$(printf '%s\n2.17\n' "${newest:-0}" | sort -V | tail -1)" = 2.17 ]
}
# musl_only FILE: NEEDED names only musl's libc (libc.so or libc.musl-*), no glibc symbols.
musl_only() {
  local needed
  needed="$("$LLVM/llvm-readobj" --needed-libs "$1" | sed -n 's/^ *\(lib[^ ]*\)$/\1/p')"
  echo "NEEDED: $needed"
  ! "$LLVM/llvm-readobj" --program-headers "$1" | grep PT_INTERP >/dev/null &&
    ! echo "$needed" | grep -vqE '^(libc\.so|libc\.musl-[a-z0-9_]+\.so\.1)$' &&
    ! "$LLVM/llvm-objdump" -T "$1" | grep GLIBC_ >/dev/null
}
# python_link FILE: the extension leaves Python's symbols to the interpreter that loads it
# (no libpython) on Linux and macOS, and imports the stable-ABI python3.dll on Windows.
python_link() {
  case "$(file -b "$1")" in
    *Mach-O*) ! "$LLVM/llvm-objdump" --macho --dylibs-used "$1" | tee /dev/stderr | grep -i python >/dev/null ;;
    *PE32*) "$LLVM/llvm-readobj" --coff-imports "$1" | grep 'Name: ' | tee /dev/stderr | grep -x '  Name: python3.dll' >/dev/null ;;
    *) ! "$LLVM/llvm-readobj" --needed-libs "$1" | tee /dev/stderr | grep -i python >/dev/null ;;
  esac
}
signed() { "$LLVM/llvm-objdump" --macho --private-headers "$1" | grep LC_CODE_SIGNATURE >/dev/null; }
wheel_tag() { basename "$1" | grep -qE "$2"; }

# The C test program of tests/c for a target, linked with zig against the static library.
CSRC=(tests/c/test_main.c tests/c/test_api.c tests/c/test_threads.c tests/c/test_vectors.c
      tests/c/test_segment.c tests/c/test_options.c tests/c/test_lease.c tests/c/json.c)
# c_program ZIGTARGET PREFIX OUT [FLAGS...]
c_program() {
  local zt="$1" prefix="$2" out="$3"; shift 3
  local priv
  priv="$(sed -n 's/^Libs.private: //p' "$prefix/lib/pkgconfig/segflake.pc")"
  # shellcheck disable=SC2086 # Libs.private is a list of flags
  (cd "$ROOT" && python-zig cc -target "$zt" -std=c99 -O1 -I"$prefix/include" "$@" -o "$out" "${CSRC[@]}" \
    "$prefix/lib/libsegflake.a" $priv -lpthread)
}

# The shared vectors from an installed npm project and from an unpacked wheel, under qemu.
arm64_node_vectors() {
  local dir="$T/node-$1"
  mkdir -p "$dir" && cd "$dir" || return 1
  printf '{ "name": "segflake-arm64-test", "private": true, "type": "module" }\n' >package.json
  # --force: npm refuses a package for another CPU even when named explicitly.
  npm install --force --no-audit --no-fund --loglevel=error \
    "$NPM_INPUTS/segflake-$VERSION.tgz" "$NPM_INPUTS/segflake-wasm-$VERSION.tgz" \
    "$ROOT/dist/segflake-$1-$VERSION.tgz" &&
    cp "$ROOT"/npm/segflake/test/{helpers,vectors.test}.mjs . &&
    [ "$(arm64 "$ARM64/usr/bin/node" -p "require('segflake').backend + ' ' + process.arch")" = "native arm64" ] &&
    # node --test spawns a process per file, which qemu-user cannot: the file runs alone.
    # (The timing-bound suites, such as the serials' counter, are not run under emulation.)
    SEGFLAKE_VECTORS_DIR="$VEC" arm64 "$ARM64/usr/bin/node" vectors.test.mjs
}
arm64_python_vectors() {
  local dir="$T/py-$1"
  mkdir -p "$dir/site" && python3 -m zipfile -e "$2" "$dir/site" &&
    python3 -m pip install --quiet --disable-pip-version-check --target "$P/pytest-site" \
      "pytest>=8,<9" "pytest-timeout>=2" >/dev/null &&
    cd "$dir" &&
    PYTHONPATH="$dir/site:$P/pytest-site" SEGFLAKE_VECTORS="$VEC" arm64 "$ARM64/usr/bin/python3.11" -c \
      "import platform, segflake; assert platform.machine() == 'aarch64'; print(segflake.__file__)" &&
    PYTHONPATH="$dir/site:$P/pytest-site" SEGFLAKE_VECTORS="$VEC" arm64 "$ARM64/usr/bin/python3.11" -m pytest -q \
      -c "$ROOT/python/pyproject.toml" --rootdir "$ROOT/python" -p no:cacheprovider "$ROOT/python/tests/test_vectors.py"
}

for suffix in $(sed -n 's/^\([a-z0-9-]*\) .*/\1/p' "$ROOT/scripts/platforms.txt"); do
  [ "$suffix" = linux-x64-gnu ] && continue
  [ $# -eq 0 ] || [[ " $* " == *" $suffix "* ]] || continue
  read -r _ triple _ os cpu libc compat < <(grep "^$suffix " "$ROOT/scripts/platforms.txt")
  log "$suffix ($triple)"
  tgz="$ROOT/dist/segflake-$suffix-$VERSION.tgz"
  wheel="$(echo "$artifacts" | grep "/dist/segflake-$VERSION-cp39-abi3-.*\.whl$" | grep -F "$(
    case "$suffix" in
      linux-arm64-gnu) echo manylinux2014_aarch64 ;; linux-x64-musl) echo musllinux_1_2_x86_64 ;;
      linux-arm64-musl) echo musllinux_1_2_aarch64 ;; darwin-x64) echo macosx_10_12_x86_64 ;;
      darwin-arm64) echo macosx_11_0_arm64 ;; win32-x64-msvc) echo win_amd64 ;;
    esac)")"
  ctar="$ROOT/dist/libsegflake-$VERSION-$triple.tar.gz"
  u="$T/$suffix" && mkdir -p "$u/npm" "$u/whl" "$u/c"
  tar -C "$u/npm" -xzf "$tgz"
  [ -n "$wheel" ] && python3 -m zipfile -e "$wheel" "$u/whl"
  tar -C "$u/c" -xzf "$ctar"
  node_bin="$u/npm/package/segflake.$suffix.node"
  ext="$(ls "$u"/whl/segflake/_native.* 2>/dev/null | head -1)"
  prefix="$u/c/libsegflake-$VERSION-$triple"
  case "$os" in
    linux) shlib="$prefix/lib/libsegflake.so.$VERSION" ;;
    darwin) shlib="$prefix/lib/libsegflake.dylib" ;;
    win32) shlib="$prefix/bin/segflake.dll" ;;
  esac
  case "$os-$cpu" in
    linux-arm64) fmt='ELF 64-bit LSB shared object, ARM aarch64' ;;
    linux-x64) fmt='ELF 64-bit LSB shared object, x86-64' ;;
    darwin-arm64) fmt='Mach-O 64-bit .*arm64' ;;
    darwin-x64) fmt='Mach-O 64-bit .*x86_64' ;;
    win32-x64) fmt='PE32+ executable (DLL).* x86-64' ;;
  esac

  step "$suffix: npm package segflake-$suffix with os/cpu${libc:+/libc} fields and the addon" \
    node -e "const p = require('$u/npm/package/package.json'); if (p.name !== 'segflake-$suffix' ||
      p.os[0] !== '$os' || p.cpu[0] !== '$cpu' || ('$libc' !== '-' && p.libc[0] !== '$libc') ||
      p.main !== 'segflake.$suffix.node') process.exit(1)"
  step "$suffix: the addon is $fmt" is_format "$node_bin" "$fmt"
  step "$suffix: the addon exports napi_register_module_v1" has_symbol "$node_bin" napi_register_module_v1
  step "$suffix: wheel $(basename "${wheel:-none}")" test -n "$wheel"
  step "$suffix: the wheel's extension is $fmt" is_format "$ext" "$fmt"
  step "$suffix: the wheel's extension exports PyInit__native" has_symbol "$ext" PyInit__native
  step "$suffix: the wheel's extension links Python as an abi3 module" python_link "$ext"
  step "$suffix: the C tarball holds the header, libsegflake.a, the shared library and segflake.pc" \
    test -f "$prefix/include/segflake.h" -a -f "$prefix/lib/libsegflake.a" -a -f "$shlib" \
      -a -f "$prefix/lib/pkgconfig/segflake.pc"
  step "$suffix: the C shared library is $fmt" is_format "$shlib" "$fmt"
  step "$suffix: the C shared library exports exactly the header's functions" exports_header "$shlib"
  step "$suffix: segflake.pc is relocatable and names version $VERSION" \
    env PKG_CONFIG_PATH="$prefix/lib/pkgconfig" bash -c \
      "test \"\$(pkg-config --modversion segflake)\" = $VERSION &&
       test \"\$(cd / && pkg-config --variable=includedir segflake)\" -ef '$prefix/include'"

  case "$suffix" in
    linux-arm64-gnu)
      for f in "$node_bin" "$ext" "$shlib"; do step "$suffix: $(basename "$f") needs glibc <= 2.17" glibc_floor "$f"; done
      step "$suffix (qemu): the addon under Debian's arm64 Node 18 runs the vectors suite" \
        arm64_node_vectors "$suffix"
      step "$suffix (qemu): the wheel under Debian's arm64 CPython 3.11 runs test_vectors.py" \
        arm64_python_vectors "$suffix" "$wheel"
      step "$suffix: the C test program builds (zig cc, static libsegflake)" \
        c_program aarch64-linux-gnu.2.17 "$prefix" "$T/c-$suffix"
      step "$suffix (qemu): the C test program runs the vectors" arm64 "$T/c-$suffix" "$VEC"
      ;;
    linux-x64-musl | linux-arm64-musl)
      for f in "$node_bin" "$ext" "$shlib"; do step "$suffix: $(basename "$f") links only musl's libc" musl_only "$f"; done
      zt="$([ "$cpu" = x64 ] && echo x86_64 || echo aarch64)-linux-musl"
      step "$suffix: the C test program builds statically (zig cc -static, musl)" \
        c_program "$zt" "$prefix" "$T/c-$suffix" -static
      step "$suffix: the C test program is statically linked" is_format "$T/c-$suffix" 'statically linked'
      if [ "$cpu" = x64 ]; then
        step "$suffix: the static musl C test program runs the vectors here" "$T/c-$suffix" "$VEC"
      else
        step "$suffix (qemu): the static musl C test program runs the vectors" qemu-aarch64-static "$T/c-$suffix" "$VEC"
      fi
      ;;
    darwin-arm64)
      for f in "$node_bin" "$ext" "$shlib"; do step "$suffix: $(basename "$f") carries a code signature" signed "$f"; done
      ;;
    win32-x64-msvc)
      step "$suffix: the addon imports no libnode.dll (Node-API comes from node.exe at load time)" \
        bash -c "! '$LLVM/llvm-readobj' --coff-imports '$node_bin' | grep -i 'Name: .*node'"
      # tests/c is POSIX-only (fork, sys/wait.h): the example program stands in for it,
      # linked by MinGW's gcc as the library was.
      step "$suffix: examples/c/snowflake.c builds against the static library (MinGW gcc)" \
        bash -c "cd '$ROOT' && x86_64-w64-mingw32-gcc -std=c99 -O1 -I'$prefix/include' \
          -o '$T/c-$suffix.exe' examples/c/snowflake.c '$prefix/lib/libsegflake.a' \
          \$(sed -n 's/^Libs.private: //p' '$prefix/lib/pkgconfig/segflake.pc')"
      step "$suffix: the example is a PE32+ x86-64 console program" is_format "$T/c-$suffix.exe" 'PE32+ executable (console) x86-64'
      ;;
  esac
  step "$suffix: licenses in the npm package, the wheel and the C tarball" \
    python3 "$ROOT/scripts/check_release.py" licenses "$tgz" "$wheel" "$ctar"
done

log "artifact sizes (bytes)"
# shellcheck disable=SC2012 # plain file names
ls -l "$ROOT"/dist/segflake-*-"$VERSION".tgz "$ROOT"/dist/segflake-"$VERSION"-*.whl \
  "$ROOT"/dist/libsegflake-"$VERSION"-*.tar.gz 2>/dev/null | awk '{printf "| %s | %s |\n", $NF, $5}' | sed "s|$ROOT/dist/||"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
