#!/usr/bin/env bash
# Every benchmark table, one after the other (each installs what it needs).
# `make bench`, or `bash bench/run-all.sh rust node` for some of them.
set -uo pipefail
cd "$(dirname "$0")"
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(rust tokio segment c node wasm python serve)
status=0
for b in "${wanted[@]}"; do
  [ -f "$b/run.sh" ] || { echo "no benchmark named $b (expected bench/$b/run.sh)" >&2; status=1; continue; }
  printf '\n\033[1m######## bench: %s ########\033[0m\n' "$b"
  bash "$b/run.sh" || status=1
done
exit $status
