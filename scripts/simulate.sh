#!/usr/bin/env bash
# Long runs of the deterministic simulator (crates/segflake/tests/simulation): seeds from a
# random start in every guaranteed world, on all cores, until the time is up or a seed
# breaks an invariant; prints runs/s, events/s and how often each fault class was drawn.
#   scripts/simulate.sh --seconds 600     # ten minutes
#   scripts/simulate.sh --seeds 5000      # a number of seeds
#   scripts/simulate.sh --seed 123        # replay one seed (prints its report if it fails)
# A failure prints SEGFLAKE_SIM_SEED=<seed>; `scripts/simulate.sh --seed <seed>` replays it.
. "$(dirname "$0")/ensure.sh"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target/core}"
usage() { echo "usage: scripts/simulate.sh --seconds N | --seeds N | --seed SEED" >&2; exit 2; }
[ $# -eq 2 ] || usage
case "$1" in
  --seconds) export SEGFLAKE_SIM_SECONDS="$2" ;;
  --seeds) export SEGFLAKE_SIM_SEEDS="$2" ;;
  --seed) export SEGFLAKE_SIM_SEED="$2" ;;
  *) usage ;;
esac
[[ "$2" =~ ^[0-9]+$ ]] || usage
cargo test -q -p segflake --test simulation -- seeds_keep_every_invariant --nocapture
