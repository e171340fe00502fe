#!/usr/bin/env bash
# The C library's test suite. Builds the release tarball (scripts/build-c.sh), unpacks it
# into an empty directory and tests only what is in it:
#   * the committed header has no drift from the Rust sources (cbindgen --verify);
#   * the crate's Rust unit tests, rustfmt and clippy;
#   * tests/c compiled with gcc -std=c99 -Wall -Wextra -Werror -pedantic against the shared
#     and the static library (found through pkg-config), run natively, under valgrind
#     (no errors, no leaks) and with AddressSanitizer;
#   * tests/c/abi: a program written for 0.1, compiled against the saved 0.1 header and run
#     against the new shared library, natively and under valgrind;
#   * a C++11 translation unit including the header; the examples; make install PREFIX=.
# Ends with "N passed, N failed" (every step plus every test case of every run).
. "$(dirname "$0")/ensure.sh"

ensure_apt valgrind pkg-config g++
ensure_cargo_tool cbindgen cbindgen 0.29.4
ensure_rust_component clippy
ensure_rust_component rustfmt

export CARGO_TARGET_DIR="$ROOT/target/c"
T="$CARGO_TARGET_DIR/test"
rm -rf "$T"
mkdir -p "$T"
cd "$ROOT"

passed=0
failed=0
CFLAGS=(-std=c99 -Wall -Wextra -Werror -pedantic -O1 -g)
CXXFLAGS=(-std=c++11 -Wall -Wextra -Werror -pedantic)

# step NAME CMD...: runs a command, counts it, shows its log on failure.
step() {
  local name="$1"; shift
  local logf="$T/step-$((passed + failed)).log"
  if "$@" >"$logf" 2>&1; then
    passed=$((passed + 1)); echo "ok - $name"
  else
    failed=$((failed + 1)); echo "FAIL - $name"; tail -n 60 "$logf" | sed 's/^/    /'
  fi
}

# suite NAME CMD...: runs the C test runner; adds its per-case counts and one for the run.
suite() {
  local name="$1"; shift
  local logf="$T/suite-$name.log"
  local rc=0
  "$@" >"$logf" 2>&1 || rc=$?
  local summary p f
  summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$logf" | tail -n 1 || true)"
  p="$(echo "$summary" | sed -n 's/^\([0-9]*\) passed.*/\1/p')"
  f="$(echo "$summary" | sed -n 's/.* \([0-9]*\) failed$/\1/p')"
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
  if [ "$rc" -eq 0 ] && [ -n "$summary" ] && [ "${f:-1}" -eq 0 ]; then
    passed=$((passed + 1)); echo "ok - $name: $summary"
  else
    failed=$((failed + 1)); echo "FAIL - $name (exit $rc): ${summary:-no summary}"
    grep -E -A4 '^FAIL|ERROR SUMMARY|LEAK SUMMARY|definitely lost|AddressSanitizer|panicked' "$logf" \
      | head -n 80 | sed 's/^/    /'
    tail -n 15 "$logf" | sed 's/^/    /'
  fi
}

log "header drift"
step "include/segflake.h matches the sources (cbindgen --verify)" \
  cbindgen --quiet --config bindings/c/cbindgen.toml --crate segflake-c \
    --output include/segflake.h --verify bindings/c

log "Rust checks of bindings/c"
step "cargo fmt --check (segflake-c)" cargo fmt -p segflake-c -- --check
step "cargo clippy -D warnings (segflake-c)" cargo clippy -q -p segflake-c --all-targets -- -D warnings
step "cargo test (segflake-c unit tests)" cargo test -q -p segflake-c

log "release build and tarball"
tarball=""
if tarball="$("$ROOT/scripts/build-c.sh" 2>"$T/build.log" | tail -n 1)" && [ -f "$tarball" ]; then
  passed=$((passed + 1)); echo "ok - scripts/build-c.sh wrote $(basename "$tarball")"
else
  failed=$((failed + 1)); echo "FAIL - scripts/build-c.sh"; tail -n 40 "$T/build.log" | sed 's/^/    /'
  echo "$passed passed, $failed failed"
  exit 1
fi

# Everything below uses only the unpacked tarball.
mkdir -p "$T/unpacked"
tar -C "$T/unpacked" -xzf "$tarball"
prefix="$(echo "$T"/unpacked/libsegflake-*)"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
libdir="$(pkg-config --variable=libdir segflake)"
read -r -a PC_CFLAGS <<<"$(pkg-config --cflags segflake)"
read -r -a PC_LIBS <<<"$(pkg-config --libs segflake)"
read -r -a PC_STATIC <<<"$(pkg-config --static --libs segflake)"
RPATH=(-Wl,-rpath,"$libdir")
# Static: the archive instead of -lsegflake, plus the Libs.private of the .pc file.
STATIC_LIBS=(-Wl,-Bstatic -lsegflake -Wl,-Bdynamic)
for flag in "${PC_STATIC[@]}"; do [ "$flag" = "-lsegflake" ] || STATIC_LIBS+=("$flag"); done

SRC=(tests/c/test_main.c tests/c/test_api.c tests/c/test_threads.c tests/c/test_vectors.c
     tests/c/test_segment.c tests/c/test_options.c tests/c/test_lease.c tests/c/json.c)
VEC="$ROOT/tests/vectors"
# TEST_NAME=TEXT: the test programs run only the tests whose name contains TEXT.
ONLY=()
[ -z "${TEST_NAME:-}" ] || ONLY=("$TEST_NAME")

log "C tests"
step "tarball holds header, .so (with SONAME link), .a and segflake.pc" \
  test -f "$prefix/include/segflake.h" -a -f "$prefix/lib/libsegflake.a" \
    -a -L "$prefix/lib/libsegflake.so" -a -f "$prefix/lib/pkgconfig/segflake.pc"
step "libsegflake.so exports exactly the functions the header declares" \
  bash -c "diff <(grep -oE '^[a-z][a-z_ *0-9]*\bsegflake_[a-z0-9_]+\(' '$prefix/include/segflake.h' |
                  grep -oE 'segflake_[a-z0-9_]+\(\$' | tr -d '(' | sort) \
                <(nm -D --defined-only '$prefix/lib/libsegflake.so' | awk '{print \$3}' | sort)"
step "gcc -std=c99 -pedantic: tests against the shared library" \
  gcc "${CFLAGS[@]}" "${PC_CFLAGS[@]}" -o "$T/tests-shared" "${SRC[@]}" "${PC_LIBS[@]}" "${RPATH[@]}" -lpthread
step "gcc -std=c99 -pedantic: tests against the static library" \
  gcc "${CFLAGS[@]}" "${PC_CFLAGS[@]}" -o "$T/tests-static" "${SRC[@]}" "${STATIC_LIBS[@]}" -lpthread
step "the static build does not need libsegflake.so" \
  bash -c "! ldd '$T/tests-static' | grep -q segflake"
step "gcc -fsanitize=address: tests against the static library" \
  gcc "${CFLAGS[@]}" -fsanitize=address -fno-omit-frame-pointer "${PC_CFLAGS[@]}" \
    -o "$T/tests-asan" "${SRC[@]}" "${STATIC_LIBS[@]}" -lpthread

[ -x "$T/tests-shared" ] && suite "tests (shared library)" "$T/tests-shared" "$VEC" "${ONLY[@]}"
[ -x "$T/tests-static" ] && suite "tests (static library)" "$T/tests-static" "$VEC" "${ONLY[@]}"
[ -x "$T/tests-shared" ] && suite "tests under valgrind (shared library)" \
  valgrind --error-exitcode=1 --leak-check=full --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible --quiet "$T/tests-shared" "$VEC" "${ONLY[@]}"
[ -x "$T/tests-asan" ] && suite "tests under AddressSanitizer (static library)" \
  env ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1 "$T/tests-asan" "$VEC" "${ONLY[@]}"

# ABI: a program written for 0.1, compiled against the 0.1 header (tests/c/abi) and run
# against the new shared library; the frozen 0.1 structs must keep working exactly.
log "ABI: a 0.1 program against the new shared library"
step "gcc: tests/c/abi/abi_0_1.c against the saved 0.1 header, linked to the new .so" \
  gcc "${CFLAGS[@]}" -Itests/c/abi -o "$T/abi-0.1" tests/c/abi/abi_0_1.c "${PC_LIBS[@]}" "${RPATH[@]}" -lpthread
[ -x "$T/abi-0.1" ] && suite "0.1 ABI program (shared library)" "$T/abi-0.1"
[ -x "$T/abi-0.1" ] && suite "0.1 ABI program under valgrind (shared library)" \
  valgrind --error-exitcode=1 --leak-check=full --show-leak-kinds=definite,indirect,possible \
    --errors-for-leak-kinds=definite,indirect,possible --quiet "$T/abi-0.1"

# The release library wraps on integer overflow; a debug build panics instead (caught as
# SEGFLAKE_PANIC, which the suite refuses), so arithmetic overflow in any path is found.
log "C tests against a debug build (overflow checks on)"
mkdir -p "$T/debuglib"
if step "cargo build -p segflake-c (debug, overflow checks)" cargo build -q -p segflake-c; then
  cp "$CARGO_TARGET_DIR/debug/libsegflake.so" "$T/debuglib/libsegflake.so.$(readelf -d "$CARGO_TARGET_DIR/debug/libsegflake.so" | sed -n 's/.*SONAME.*\[libsegflake\.so\.\(.*\)\]/\1/p')"
  ln -sf "$(basename "$T"/debuglib/libsegflake.so.*)" "$T/debuglib/libsegflake.so"
  step "gcc: tests against the debug library" \
    gcc "${CFLAGS[@]}" -I"$ROOT/include" -o "$T/tests-debug" "${SRC[@]}" -L"$T/debuglib" -lsegflake \
      -Wl,-rpath,"$T/debuglib" -lpthread
  [ -x "$T/tests-debug" ] && suite "tests (debug library, overflow checks)" "$T/tests-debug" "$VEC" "${ONLY[@]}"
fi

log "C++ and examples"
step "g++ -std=c++11 -pedantic: a translation unit including the header" \
  g++ "${CXXFLAGS[@]}" "${PC_CFLAGS[@]}" -o "$T/cxx" tests/c/cxx_header.cpp "${PC_LIBS[@]}" "${RPATH[@]}"
[ -x "$T/cxx" ] && step "the C++ program runs" "$T/cxx"
for ex in examples/c/*.c; do
  name="$(basename "$ex" .c)"
  # pg_store, redis_registry and redis_serial need libpq/hiredis and a server:
  # tests/scenarios builds and runs them.
  case $name in pg_store | redis_registry | redis_serial) continue ;; esac
  step "example $name builds (gcc -std=c99 -pedantic)" \
    gcc "${CFLAGS[@]}" "${PC_CFLAGS[@]}" -o "$T/example-$name" "$ex" "${PC_LIBS[@]}" "${RPATH[@]}" -lpthread
  [ -x "$T/example-$name" ] && step "example $name runs" "$T/example-$name"
done

log "make install PREFIX="
step "make -C bindings/c install PREFIX=... then a program builds from the installed .pc" \
  bash -c "make -s -C bindings/c install PREFIX='$T/prefix' >/dev/null &&
    PKG_CONFIG_PATH='$T/prefix/lib/pkgconfig' && export PKG_CONFIG_PATH &&
    test \"\$(pkg-config --variable=prefix segflake)\" = '$T/prefix' &&
    gcc -std=c99 -o '$T/installed' examples/c/snowflake.c \$(pkg-config --cflags --libs segflake) \
      -Wl,-rpath,'$T/prefix/lib' && '$T/installed' 9 >/dev/null &&
    make -s -C bindings/c uninstall PREFIX='$T/prefix' && test ! -e '$T/prefix/include/segflake.h'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
