#!/usr/bin/env bash
# Builds (release) and runs the Rust benchmark: segflake's Snowflake beside the Rust
# peers, one Markdown table on stdout, progress on stderr.
#   bench/rust/run.sh [--seconds S] [--rounds R]
#   (S: seconds per cell and round, default 1; R: rounds, the median is shown, default 3)
. "$(dirname "$0")/../../scripts/ensure.sh"
cd "$ROOT"
log "cargo build --release -p segflake-bench"
CARGO_TARGET_DIR="$ROOT/target/bench" cargo build --quiet --release -p segflake-bench >&2
exec "$ROOT/target/bench/release/segflake-bench" "$@"
