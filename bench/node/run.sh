#!/usr/bin/env bash
# Node benchmark: segflake beside the Node ID generators users pick today, one table.
#   bench/node/run.sh            # 1000 ms per rate cell (~3-4 min: the slow peers'
#                                # 1,000,000-ID duplicate checks take most of it)
#   bench/node/run.sh --ms 300   # shorter cells
#   bench/node/run.sh --only segflake,hyperid
. "$(dirname "$0")/../../scripts/ensure.sh"

bash "$ROOT/scripts/build-node.sh"
cd "$ROOT/bench/node"
if [ ! -d node_modules/@sapphire/snowflake ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "npm ci (peer generators, pinned in bench/node/package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
node bench.mjs "$@"
