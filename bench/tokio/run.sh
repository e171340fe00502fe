#!/usr/bin/env bash
# The async drivers (crates/segflake-tokio) beside the std drivers over the same engines,
# in one run: ns/ID of the segment generator and the leased snowflake, one task (thread)
# and four, on a current-thread and a multi-thread runtime. One Markdown table on stdout.
#   bench/tokio/run.sh
. "$(dirname "$0")/../../scripts/ensure.sh"
cd "$ROOT"
log "cargo bench -p segflake-tokio --bench drivers"
CARGO_TARGET_DIR="$ROOT/target/bench" exec cargo bench --quiet -p segflake-tokio --bench drivers
