#!/usr/bin/env bash
# Builds (release) and runs the Rust benchmark: segflake's Snowflake beside the Rust
# peers, then segflake's SegmentGenerator beside a fetch_add and a Mutex<u64> counter: two
# Markdown tables on stdout, progress on stderr. Builds into $CARGO_TARGET_DIR when set
# (target/bench otherwise).
#   bench/rust/run.sh [--seconds S] [--rounds R]
#   (S: seconds per cell and round, default 1; R: rounds, the median is shown, default 3)
. "$(dirname "$0")/../../scripts/ensure.sh"
cd "$ROOT"
log "cargo build --release -p segflake-bench"
target="${CARGO_TARGET_DIR:-$ROOT/target/bench}"
CARGO_TARGET_DIR="$target" cargo build --quiet --release -p segflake-bench >&2
exec "$target/release/segflake-bench" "$@"
