#!/usr/bin/env bash
# What one request costs `segflake serve` in user-space instructions, beside the bare hyper
# floor: each server runs under callgrind (valgrind), takes a warm-up, then its counters are
# zeroed and read around a fixed load (wrk for HTTP, grpc-load for gRPC). Instructions do
# not move with the machine's load as requests/s do (bench/serve/run.sh), so a change of a
# few percent in the request path shows here. The kernel's share (the same socket calls for
# every server) is not counted. One Markdown table on stdout, progress on stderr.
#   bench/serve/instructions.sh [--quick] [--seconds S] [--baseline BIN] [--functions N]
#                               [--keep DIR]
# Rows: the floor (on /, and on a Leaf path: hyper's parsing grows with the path);
# /api/segment/get/order and /api/snowflake/get/order; ?count=100 on the
# segment path; gRPC NextSegmentIds (count 1), 8 calls in flight on one HTTP/2 connection.
# --quick: 2 s per row after a 1 s warm-up (under a minute once built), for use before and
#   after each change; the default is 10 s after 3 s.
# --baseline BIN: another build of `segflake` (an older commit's release build), measured on
#   the same single-ID paths.
# --functions N: after the table, each segflake row's N functions that cost most over the
#   floor on the same path (exclusive) and its N costliest functions (inclusive), in
#   instructions per request (callgrind_annotate on the measured dumps).
# --keep DIR: the measured dumps, one per row (DIR/dump.1 and dump.2 are the floors'), for
#   callgrind_annotate or kcachegrind.
# Builds into $CARGO_TARGET_DIR when set (target/ otherwise).
. "$(dirname "$0")/../../scripts/ensure.sh"
cd "$ROOT"
SECONDS_PER_ROW=10 WARMUP=3 BASELINE='' FUNCTIONS=0 KEEP=''
while [ $# -gt 0 ]; do
  case $1 in
    --quick) SECONDS_PER_ROW=2 WARMUP=1; shift ;;
    --seconds) SECONDS_PER_ROW=$2; shift 2 ;;
    --baseline) BASELINE=$2; shift 2 ;;
    --functions) FUNCTIONS=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
ensure_apt wrk curl valgrind
log "cargo build --release -p segflake-cli -p segflake-http-floor"
cargo build --quiet --release -p segflake-cli -p segflake-http-floor >&2
W=$(mktemp -d)
vg=""
trap '[ -z "$vg" ] || kill "$vg" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
HTTP=127.0.0.1:18085 GRPC=127.0.0.1:18086

# measure NAME PATH LOAD COMMAND...: COMMAND (a server on $HTTP) under callgrind, loaded by
# LOAD (`wrk` on PATH, or `grpc` for NextSegmentIds on $GRPC); prints NAME, requests and
# instructions per request, tab-separated, and keeps the measured dump as $W/dump.N.
rows=0
measure() {
  local name=$1 path=$2 load=$3; shift 3
  log "$name"
  rm -rf "$W/run"; mkdir -p "$W/run"
  valgrind --tool=callgrind --callgrind-out-file="$W/run/out" "$@" 2>"$W/run/log" &
  vg=$!
  local _
  for _ in $(seq 600); do curl -fs "http://$HTTP$path" -o /dev/null && break; sleep 0.1; done
  local requests
  if [ "$load" = grpc ]; then
    "$TARGET/release/grpc-load" "$GRPC" unary "$WARMUP" 8 1 >/dev/null
    callgrind_control -z "$vg" >/dev/null
    requests=$("$TARGET/release/grpc-load" "$GRPC" unary "$SECONDS_PER_ROW" 8 1 | awk '/^TOTAL/ { print $2 }')
  else
    wrk -t1 -c8 -d"${WARMUP}s" "http://$HTTP$path" >/dev/null
    callgrind_control -z "$vg" >/dev/null
    requests=$(wrk -t1 -c8 -d"${SECONDS_PER_ROW}s" "http://$HTTP$path" | awk '/requests in/ { print $1 }')
  fi
  callgrind_control -d "$vg" >/dev/null
  kill "$vg"; wait "$vg" 2>/dev/null || true; vg=""
  # The dump taken after zeroing is the first numbered one (out.1); out is the rest at exit.
  local ir; ir=$(awk '/^summary:/ { print $2; exit }' "$W/run/out.1")
  rows=$((rows + 1))
  cp "$W/run/out.1" "$W/dump.$rows"
  printf '%s\t%s\t%s\n' "$name" "$requests" "$((ir / requests))" >>"$W/results"
}
serve() { # serve BIN: its command line on the measuring ports (a file store, large segments)
  echo "$1" serve --listen "$HTTP" --grpc-listen "$GRPC" --store "file:$W/ids-$RANDOM.txt" \
    --worker 1 --step 100000 --max-step 10000000 --max-count 100000
}
# shellcheck disable=SC2046 # $(serve ...): the command line's words
{
  measure "floor: bare hyper, constant body" / wrk "$TARGET/release/http-floor" "$HTTP"
  measure "floor on a Leaf path (/api/segment/get/order)" /api/segment/get/order wrk \
    "$TARGET/release/http-floor" "$HTTP"
  for path in /api/segment/get/order /api/snowflake/get/order; do
    measure "segflake serve $path" "$path" wrk $(serve "$TARGET/release/segflake")
    [ -z "$BASELINE" ] || measure "baseline ($BASELINE) $path" "$path" wrk $(serve "$BASELINE")
  done
  path="/api/segment/get/order?count=100"
  measure "segflake serve $path" "$path" wrk $(serve "$TARGET/release/segflake")
  measure "segflake serve gRPC NextSegmentIds (count 1)" /healthz grpc $(serve "$TARGET/release/segflake")
}
floor=$(sed -n 1p "$W/results" | cut -f3) floor_path=$(sed -n 2p "$W/results" | cut -f3)
echo
echo "callgrind, wrk -t1 -c8 (gRPC: grpc-load, 8 calls in flight) for ${SECONDS_PER_ROW}s after a ${WARMUP} s warm-up, $(date -u +%F)"
echo
echo "| server and path | requests measured | instructions/request | over the floor | over the floor on the same path |"
echo "|---|---|---|---|---|"
while IFS=$'\t' read -r name requests ir; do
  echo "| $name | $requests | $ir | $((ir - floor)) | $((ir - floor_path)) |"
done <"$W/results"
[ -z "$KEEP" ] || { mkdir -p "$KEEP" && cp "$W"/dump.* "$KEEP"/; }

[ "$FUNCTIONS" -gt 0 ] || exit 0
# costs DUMP REQUESTS yes|no: every function's cost in DUMP (inclusive or exclusive),
# instructions per request, tab-separated, by function. A function on the stack when the
# counters were zeroed or dumped (the runtime's thread loop) shows all of its callees' cost
# as its own in the exclusive count: those above half the total are left out.
costs() {
  callgrind_annotate --inclusive="$3" --threshold=100 "$1" 2>/dev/null |
    awk -v r="$2" -v inclusive="$3" '
      /PROGRAM TOTALS/ { total = $1; gsub(",", "", total) }
      / file:function *$/ { table = 1; next }
      table && /^$/ && n { exit }
      table && $1 ~ /^[0-9,]+$/ {
        ir = $1; gsub(",", "", ir); ir += 0; n++
        if (inclusive == "no" && ir > total / 2) next
        fn = $0; sub(/^ *[0-9,]+ *(\([^)]*\))? */, "", fn); sub(/ \[[^]]*\]$/, "", fn)
        sub(/^[^:]*:/, "", fn); gsub(/\|/, "\\|", fn)
        if (length(fn) > 110) fn = substr(fn, 1, 107) "..."
        cost[fn] += ir / r
      }
      END { for (fn in cost) printf "%.0f\t%s\n", cost[fn], fn }'
}
floor_requests=$(sed -n 2p "$W/results" | cut -f2)
costs "$W/dump.2" "$floor_requests" no >"$W/floor.tsv"
# The top N by awk, not head: head's early exit would end this script by SIGPIPE (pipefail).
i=0
while IFS=$'\t' read -r name requests _; do
  i=$((i + 1))
  [ "$i" -gt 2 ] || continue # the floors
  echo
  echo "$name: the $FUNCTIONS functions costing most over those of the floor on the same path, exclusive, instructions/request"
  echo
  echo "| over the floor | this server | the floor | function |"
  echo "|---:|---:|---:|---|"
  costs "$W/dump.$i" "$requests" no |
    awk -F'\t' -v n="$FUNCTIONS" 'NR == FNR { floor[$2] = $1; next }
      { d = $1 - floor[$2]; print d "\t" $1 "\t" floor[$2] + 0 "\t" $2 }' "$W/floor.tsv" - |
    sort -t$'\t' -k1,1nr | awk -v n="$FUNCTIONS" 'NR <= n' |
    awk -F'\t' '{ printf "| %d | %d | %d | `%s` |\n", $1, $2, $3, $4 }'
  echo
  echo "$name: the $FUNCTIONS costliest functions, inclusive, instructions/request"
  echo
  echo "| inclusive | function |"
  echo "|---:|---|"
  costs "$W/dump.$i" "$requests" yes | sort -t$'\t' -k1,1nr | awk -v n="$FUNCTIONS" 'NR <= n' |
    awk -F'\t' '{ printf "| %d | `%s` |\n", $1, $2 }'
done <"$W/results"
