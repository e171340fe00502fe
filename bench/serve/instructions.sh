#!/usr/bin/env bash
# What one HTTP request costs `segflake serve` in user-space instructions, beside the bare
# hyper floor: each server runs under callgrind (valgrind), takes a warm-up, then its
# counters are zeroed and read around a fixed wrk load. Instructions do not move with the
# machine's load as requests/s do (bench/serve/run.sh), so a change of a few percent in the
# request path shows here. The kernel's share (the same socket calls for every server) is
# not counted. One Markdown table on stdout, progress on stderr.
#   bench/serve/instructions.sh [--seconds S] [--baseline BIN]
# --baseline BIN: another build of `segflake` (an older commit's target/release/segflake),
# measured on the same paths.
. "$(dirname "$0")/../../scripts/ensure.sh"
cd "$ROOT"
SECONDS_PER_ROW=10 BASELINE=
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) SECONDS_PER_ROW=$2; shift 2 ;;
    --baseline) BASELINE=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
ensure_apt wrk curl valgrind
log "cargo build --release -p segflake-cli -p segflake-http-floor"
cargo build --quiet --release -p segflake-cli -p segflake-http-floor >&2
W=$(mktemp -d)
vg=""
trap '[ -z "$vg" ] || kill "$vg" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT

# measure NAME PATH COMMAND...: COMMAND (a server on 127.0.0.1:18085) under callgrind;
# prints NAME, requests and instructions per request, tab-separated.
measure() {
  local name=$1 path=$2; shift 2
  log "$name"
  rm -rf "$W/run"; mkdir -p "$W/run"
  valgrind --tool=callgrind --callgrind-out-file="$W/run/out" "$@" 2>"$W/run/log" &
  vg=$!
  local _
  for _ in $(seq 600); do curl -fs "http://127.0.0.1:18085$path" -o /dev/null && break; sleep 0.1; done
  wrk -t1 -c8 -d3s "http://127.0.0.1:18085$path" >/dev/null
  callgrind_control -z "$vg" >/dev/null
  local out; out=$(wrk -t1 -c8 -d"${SECONDS_PER_ROW}s" "http://127.0.0.1:18085$path")
  callgrind_control -d "$vg" >/dev/null
  kill "$vg"; wait "$vg" 2>/dev/null || true; vg=""
  local requests; requests=$(awk '/requests in/ { print $1 }' <<<"$out")
  # The dump taken after zeroing is the first numbered one (out.1); out is the rest at exit.
  local ir; ir=$(awk '/^summary:/ { print $2; exit }' "$W/run/out.1")
  printf '%s\t%s\t%s\n' "$name" "$requests" "$((ir / requests))"
}
serve() { # serve BIN: its command line on the measuring port (a file store, large segments)
  echo "$1" serve --listen 127.0.0.1:18085 --store "file:$W/ids-$RANDOM.txt" --worker 1 \
    --step 100000 --max-step 10000000 --max-count 100000
}
results=$(
  measure "floor: bare hyper, constant body" / "$ROOT/target/release/http-floor" 127.0.0.1:18085
  for path in /api/segment/get/order /api/snowflake/get/order; do
    # shellcheck disable=SC2046 # the command line's words
    measure "segflake serve $path" "$path" $(serve "$ROOT/target/release/segflake")
    # shellcheck disable=SC2046
    [ -z "$BASELINE" ] || measure "baseline ($BASELINE) $path" "$path" $(serve "$BASELINE")
  done
)
floor=$(head -n 1 <<<"$results" | cut -f3)
echo
echo "callgrind, wrk -t1 -c8 -d${SECONDS_PER_ROW}s after a 3 s warm-up, $(date -u +%F)"
echo
echo "| server and path | requests measured | instructions/request | over the floor |"
echo "|---|---|---|---|"
while IFS=$'\t' read -r name requests ir; do
  echo "| $name | $requests | $ir | $((ir - floor)) |"
done <<<"$results"
