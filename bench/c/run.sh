#!/usr/bin/env bash
# Builds the release C library (scripts/build-c.sh), links bench/c/bench.c against the
# static archive from the packaged prefix, with the hand-written snowflake it is compared
# with (bench/c/peer_snowflake.c), and prints one Markdown table and a duplicate check.
#   bench/c/run.sh [ids-per-row]   (default 5,000,000)
. "$(dirname "$0")/../../scripts/ensure.sh"
n="${1:-5000000}"
"$ROOT/scripts/build-c.sh" >/dev/null
prefix="$(echo "$ROOT"/target/c/stage/libsegflake-*)"
out="$ROOT/target/c/bench-c"
gcc -O2 -std=c99 -Wall -Wextra -Werror -pedantic "$ROOT/bench/c/bench.c" \
  "$ROOT/bench/c/peer_snowflake.c" -I"$prefix/include" "$prefix/lib/libsegflake.a" \
  -lpthread -ldl -lm -o "$out"
echo "libsegflake $(make -s -C "$ROOT/bindings/c" print-version), gcc -O2, static link; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$out" "$n"
