#!/usr/bin/env bash
# `segflake serve` under wrk (keep-alive connections), beside a bare hyper server that
# answers a constant (bench/serve/src/main.rs: the floor), and its gRPC port under
# grpc-load (bench/serve/src/bin/grpc_load.rs: unary calls and streams, one client thread
# as wrk's), on the same machine: one Markdown table on stdout, progress on stderr.
#   bench/serve/run.sh [--seconds S] [--connections C] [--wrk-threads T]
# Defaults: 10 s per row, 64 connections, 1 wrk thread (the server gets the other core).
. "$(dirname "$0")/../../scripts/ensure.sh"
cd "$ROOT"
SECONDS_PER_ROW=10 CONNECTIONS=64 WRK_THREADS=1
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) SECONDS_PER_ROW=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --wrk-threads) WRK_THREADS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
ensure_apt wrk curl
log "cargo build --release -p segflake-cli -p segflake-http-floor"
cargo build --quiet --release -p segflake-cli -p segflake-http-floor >&2
W=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
"$ROOT/target/release/http-floor" 127.0.0.1:18081 & pids+=($!)
# A step large enough that refills (off the request path anyway) are rare.
"$ROOT/target/release/segflake" serve --listen 127.0.0.1:18082 --grpc-listen 127.0.0.1:18083 \
  --store "file:$W/ids.txt" --worker 1 --step 100000 --max-step 10000000 --max-count 100000 \
  2>"$W/serve.log" & pids+=($!)
for port in 18081 18082; do
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" -o /dev/null && break; sleep 0.1; done
done
curl -fs http://127.0.0.1:18082/api/segment/get/order -o /dev/null || { cat "$W/serve.log" >&2; exit 1; }
curl -fs http://127.0.0.1:18082/api/segment/get/bench -o /dev/null || { cat "$W/serve.log" >&2; exit 1; }

row() { # row NAME URL IDS_PER_REQUEST
  log "wrk $1"
  local out; out=$(wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${SECONDS_PER_ROW}s" -s "$ROOT/bench/serve/latency.lua" "$2")
  read -r _ rps p50 p99 p999 errors < <(grep '^RESULT' <<<"$out")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$rps" "$p50" "$p99" "$p999" "$errors" "$3"
}
grpc_row() { # grpc_row NAME unary|stream CONCURRENCY IDS_PER_CALL
  log "grpc-load $1"
  local out; out=$("$ROOT/target/release/grpc-load" 127.0.0.1:18083 "$2" "$SECONDS_PER_ROW" "$3" "$4")
  read -r _ rps _ p50 p99 p999 errors < <(grep '^RESULT' <<<"$out")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$rps" "$p50" "$p99" "$p999" "$errors" "$4"
}
results=$(
  row "floor: bare hyper, constant body" http://127.0.0.1:18081/ 0
  row "segflake serve /api/segment/get/order" http://127.0.0.1:18082/api/segment/get/order 1
  row "segflake serve /api/snowflake/get/order" http://127.0.0.1:18082/api/snowflake/get/order 1
  row "segflake serve /api/segment/get/order?count=100" "http://127.0.0.1:18082/api/segment/get/order?count=100" 100
  grpc_row "segflake serve gRPC NextSegmentIds (count 1, $CONNECTIONS calls in flight)" unary "$CONNECTIONS" 1
  grpc_row "segflake serve gRPC NextSegmentIds (count 100, $CONNECTIONS calls in flight)" unary "$CONNECTIONS" 100
  grpc_row "segflake serve gRPC StreamSegmentIds (4 streams, 10,000 IDs a message)" stream 4 10000
)
floor=$(head -n 1 <<<"$results" | cut -f2)
echo
echo "wrk -t$WRK_THREADS -c$CONNECTIONS -d${SECONDS_PER_ROW}s on $(nproc) cores shared by wrk and the server, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F)"
echo
echo "| server and path | requests/s | % of floor | IDs/s | p50 ms | p99 ms | p99.9 ms | errors |"
echo "|---|---|---|---|---|---|---|---|"
while IFS=$'\t' read -r name rps p50 p99 p999 errors ids; do
  pct=$(awk -v a="$rps" -v b="$floor" 'BEGIN { printf "%.0f%%", 100 * a / b }')
  idps=$([ "$ids" = 0 ] && echo "-" || awk -v a="$rps" -v n="$ids" 'BEGIN { printf "%.0f", a * n }')
  echo "| $name | $rps | $pct | $idps | $p50 | $p99 | $p999 | $errors |"
done <<<"$results"
