#!/usr/bin/env bash
# Builds (release) and runs the segment benchmark: segment IDs/s on 1 and 2 threads beside
# a bare AtomicU64::fetch_add loop, then next_id latency percentiles with a 50 ms store;
# or, with `store-cost`, what one allocation costs the embedded stores as tags grow.
# Markdown on stdout, progress on stderr.
#   bench/segment/run.sh [--seconds S]   (S: measuring time per cell, default 1)
#   bench/segment/run.sh store-cost [--seconds S] [--tags 1,1000,10000,100000]
# (bench/segment/stores.sh measures the database stores the same way, on real servers.)
. "$(dirname "$0")/../../scripts/ensure.sh"
cd "$ROOT/bench/segment"
log "cargo build --release (bench/segment)"
CARGO_TARGET_DIR="$ROOT/target/segment-bench" cargo build --quiet --release >&2
if [ "${1:-}" = store-cost ]; then
  shift
  exec "$ROOT/target/segment-bench/release/store_cost" "$@"
fi
exec "$ROOT/target/segment-bench/release/segflake-segment-bench" "$@"
