#!/usr/bin/env bash
# `segflake serve` under wrk (keep-alive connections), beside a bare hyper server that
# answers a constant (bench/serve/src/main.rs: the floor), and its gRPC port under
# grpc-load (bench/serve/src/bin/grpc_load.rs: unary calls and streams, one client thread
# as wrk's), on the same machine: one Markdown table on stdout, progress on stderr.
#   bench/serve/run.sh [--seconds S] [--connections C] [--wrk-threads T] [--baseline BIN]
# Defaults: 10 s per row, 64 connections, 1 wrk thread (the server gets the other core).
# TLS rows in the same run: a second `segflake serve` with the same flags plus --tls-cert
# and --tls-key (certificates made by tests/tls/make-certs.sh in the run's temporary
# directory) on its own ports and store; wrk over https (HTTP/1.1, keep-alive: one
# handshake per connection) and grpc-load over TLS (trusting the test CA), each row right
# after its plaintext one. The plaintext server's flags are those of earlier runs, so its
# rows and their % of the floor compare with earlier tables.
# --baseline BIN: another build of `segflake` (an older commit's target/release/segflake)
# served beside, its single-ID rows right after this build's, so a change's cost is seen
# in one run rather than against a floor measured on another day.
# Each row also gives the server's CPU time per request (user + system, from /proc): it
# moves less than requests/s when wrk and the server share the cores.
# Builds into $CARGO_TARGET_DIR when set (target/ otherwise).
. "$(dirname "$0")/../../scripts/ensure.sh"
cd "$ROOT"
SECONDS_PER_ROW=10 CONNECTIONS=64 WRK_THREADS=1 BASELINE=
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) SECONDS_PER_ROW=$2; shift 2 ;;
    --connections) CONNECTIONS=$2; shift 2 ;;
    --wrk-threads) WRK_THREADS=$2; shift 2 ;;
    --baseline) BASELINE=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
ensure_apt wrk curl openssl
log "cargo build --release -p segflake-cli -p segflake-http-floor"
cargo build --quiet --release -p segflake-cli -p segflake-http-floor >&2
W=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
"$TARGET/release/http-floor" 127.0.0.1:18081 & pids+=($!)
floor_pid=$!
# A step large enough that refills (off the request path anyway) are rare.
"$TARGET/release/segflake" serve --listen 127.0.0.1:18082 --grpc-listen 127.0.0.1:18083 \
  --store "file:$W/ids.txt" --worker 1 --step 100000 --max-step 10000000 --max-count 100000 \
  2>"$W/serve.log" & pids+=($!)
serve_pid=$!
ports=(18081 18082)
if [ -n "$BASELINE" ]; then
  mkdir -p "$W/baseline"
  "$BASELINE" serve --listen 127.0.0.1:18084 --store "file:$W/baseline/ids.txt" --worker 1 \
    --step 100000 --max-step 10000000 --max-count 100000 2>"$W/baseline/serve.log" & pids+=($!)
  baseline_pid=$! ports+=(18084)
fi
# The same server over TLS: the same flags, its own ports and store.
bash "$ROOT/tests/tls/make-certs.sh" "$W/certs" >&2
mkdir -p "$W/tls"
"$TARGET/release/segflake" serve --listen 127.0.0.1:18085 --grpc-listen 127.0.0.1:18086 \
  --tls-cert "$W/certs/server.pem" --tls-key "$W/certs/server.key" \
  --store "file:$W/tls/ids.txt" --worker 1 --step 100000 --max-step 10000000 --max-count 100000 \
  2>"$W/tls/serve.log" & pids+=($!)
tls_pid=$!
https() { curl -fs --cacert "$W/certs/ca.pem" "https://127.0.0.1:18085$1" -o /dev/null; }
for port in "${ports[@]}"; do
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" -o /dev/null && break; sleep 0.1; done
done
curl -fs http://127.0.0.1:18082/api/segment/get/order -o /dev/null || { cat "$W/serve.log" >&2; exit 1; }
curl -fs http://127.0.0.1:18082/api/segment/get/bench -o /dev/null || { cat "$W/serve.log" >&2; exit 1; }
for _ in $(seq 100); do https /healthz && break; sleep 0.1; done
https /api/segment/get/order || { cat "$W/tls/serve.log" >&2; exit 1; }
https /api/segment/get/bench || { cat "$W/tls/serve.log" >&2; exit 1; }
# What wrk's OpenSSL and the server agree on (the TLS rows' protocol and cipher).
tls_params=$(openssl s_client -connect 127.0.0.1:18085 -servername localhost \
  -CAfile "$W/certs/ca.pem" </dev/null 2>/dev/null | awk '/^New, /{ sub(/,$/, "", $2); print $2 ", " $5 }') || true

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # user + system, in clock ticks
TICK_US=$((1000000 / $(getconf CLK_TCK)))
# measured PID NAME IDS_PER_REQUEST wrk|grpc COMMAND...: runs the load generator COMMAND
# (its RESULT line in wrk's or grpc-load's fields) against the server PID; prints one
# tab-separated row: name, rate, p50, p99, p99.9, errors, IDs per request, and the server's
# CPU µs per request.
measured() {
  local pid=$1 name=$2 ids=$3 fields=$4; shift 4
  log "$name"
  local t0 t1 out; t0=$(cpu_ticks "$pid"); out=$("$@"); t1=$(cpu_ticks "$pid")
  local rps p50 p99 p999 errors
  case $fields in
    wrk) read -r _ rps p50 p99 p999 errors < <(grep '^RESULT' <<<"$out") ;;
    grpc) read -r _ rps _ p50 p99 p999 errors < <(grep '^RESULT' <<<"$out") ;;
  esac
  local us; us=$(awk -v t=$((t1 - t0)) -v u="$TICK_US" -v r="$rps" -v s="$SECONDS_PER_ROW" \
    'BEGIN { printf "%.1f", (r > 0 ? t * u / (r * s) : 0) }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rps" "$p50" "$p99" "$p999" "$errors" "$ids" "$us"
}
row() { # row PID NAME URL IDS_PER_REQUEST
  measured "$1" "$2" "$4" wrk wrk -t"$WRK_THREADS" -c"$CONNECTIONS" -d"${SECONDS_PER_ROW}s" -s "$ROOT/bench/serve/latency.lua" "$3"
}
grpc_row() { # grpc_row NAME unary|stream CONCURRENCY IDS_PER_CALL
  measured "$serve_pid" "$1" "$4" grpc "$TARGET/release/grpc-load" 127.0.0.1:18083 "$2" "$SECONDS_PER_ROW" "$3" "$4"
}
tls_grpc_row() { # tls_grpc_row NAME unary|stream CONCURRENCY IDS_PER_CALL: the TLS server's
  measured "$tls_pid" "$1" "$4" grpc "$TARGET/release/grpc-load" --ca "$W/certs/ca.pem" \
    https://127.0.0.1:18086 "$2" "$SECONDS_PER_ROW" "$3" "$4"
}
baseline_row() { # baseline_row PATH: the baseline build's row for PATH, if there is one
  [ -z "$BASELINE" ] || row "$baseline_pid" "baseline ($BASELINE) $1" "http://127.0.0.1:18084$1" 1
}
results=$(
  row "$floor_pid" "floor: bare hyper, constant body" http://127.0.0.1:18081/ 0
  row "$serve_pid" "segflake serve /api/segment/get/order" http://127.0.0.1:18082/api/segment/get/order 1
  baseline_row /api/segment/get/order
  row "$tls_pid" "segflake serve https /api/segment/get/order (HTTP/1.1 keep-alive)" https://127.0.0.1:18085/api/segment/get/order 1
  row "$serve_pid" "segflake serve /api/snowflake/get/order" http://127.0.0.1:18082/api/snowflake/get/order 1
  baseline_row /api/snowflake/get/order
  row "$serve_pid" "segflake serve /api/segment/get/order?count=100" "http://127.0.0.1:18082/api/segment/get/order?count=100" 100
  grpc_row "segflake serve gRPC NextSegmentIds (count 1, $CONNECTIONS calls in flight)" unary "$CONNECTIONS" 1
  tls_grpc_row "segflake serve gRPC over TLS NextSegmentIds (count 1, $CONNECTIONS calls in flight)" unary "$CONNECTIONS" 1
  grpc_row "segflake serve gRPC NextSegmentIds (count 100, $CONNECTIONS calls in flight)" unary "$CONNECTIONS" 100
  grpc_row "segflake serve gRPC StreamSegmentIds (4 streams, 10,000 IDs a message)" stream 4 10000
  tls_grpc_row "segflake serve gRPC over TLS StreamSegmentIds (4 streams, 10,000 IDs a message)" stream 4 10000
)
floor=$(head -n 1 <<<"$results" | cut -f2)
echo
echo "wrk -t$WRK_THREADS -c$CONNECTIONS -d${SECONDS_PER_ROW}s on $(nproc) cores shared by wrk and the server, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%F); TLS rows: ${tls_params:-?}, an EC P-256 certificate"
echo
echo "| server and path | requests/s | % of floor | IDs/s | p50 ms | p99 ms | p99.9 ms | errors | server CPU µs/request |"
echo "|---|---|---|---|---|---|---|---|---|"
while IFS=$'\t' read -r name rps p50 p99 p999 errors ids us; do
  pct=$(awk -v a="$rps" -v b="$floor" 'BEGIN { printf "%.0f%%", 100 * a / b }')
  idps=$([ "$ids" = 0 ] && echo "-" || awk -v a="$rps" -v n="$ids" 'BEGIN { printf "%.0f", a * n }')
  echo "| $name | $rps | $pct | $idps | $p50 | $p99 | $p999 | $errors | $us |"
done <<<"$results"
