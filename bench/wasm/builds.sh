#!/usr/bin/env bash
# Per-ID speed of segflake-wasm as built at each of two or more commits, side by side in one
# Node process (builds.mjs): `bench/wasm/builds.sh ad813bb HEAD`. Each commit is checked out
# in a worktree under target/builds/ and built by its own scripts/build-wasm.sh (the worktrees
# share one cargo target directory); the size of each .wasm is printed as it is built.
# Options through the environment: BENCH_ROUNDS (default 11).
. "$(dirname "$0")/../../scripts/ensure.sh"

[ $# -ge 2 ] || { echo "usage: bench/wasm/builds.sh REV REV [REV...]" >&2; exit 2; }
TREES="$ROOT/target/builds"
mkdir -p "$TREES/target"
args=()
for rev in "$@"; do
  commit=$(git -C "$ROOT" rev-parse --short "$rev^{commit}")
  tree="$TREES/$commit"
  if [ ! -d "$tree" ]; then
    log "worktree $commit ($rev)"
    git -C "$ROOT" worktree add --detach --force "$tree" "$commit" >&2
    ln -sfn "$TREES/target" "$tree/target"
    # The build tools (esbuild, wasm-opt) are the same npm packages at every commit.
    ln -sfn "$ROOT/bindings/wasm/tools/node_modules" "$tree/bindings/wasm/tools/node_modules"
  fi
  log "scripts/build-wasm.sh at $commit"
  (cd "$tree" && scripts/build-wasm.sh >/dev/null)
  args+=("$rev=$tree/npm/segflake-wasm")
done
log "per-ID calls, rounds interleaved"
node "$ROOT/bench/wasm/builds.mjs" "${args[@]}"
