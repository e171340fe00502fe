#!/usr/bin/env bash
# Builds the wheel, installs it with the peer libraries into a venv under
# target/python/bench-venv, and prints the table (Markdown) to stdout, then a small
# per-call table (bench/python/micro.py), then the start-up table (bench/python/startup.py:
# import and first ID in 21 fresh interpreters per library).
#   bench/python/run.sh [--seconds 1.0] [--dup-ids 1000000] [--json out.json]
. "$(dirname "$0")/../../scripts/ensure.sh"

venv="$ROOT/target/python/bench-venv"
mkdir -p "$ROOT/target/python/bench-wheel"
wheel="$(bash "$ROOT/scripts/build-python.sh" --copy "$ROOT/target/python/bench-wheel")"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
log "pip install $(basename "$wheel") and the peers"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "snowflake-id==1.0.2" "sonyflake==2.0.3" "uuid-utils==1.2.0" "uuid6==2025.0.1" "python-ulid==4.1.0" >&2
cd "$ROOT/bench/python"
"$venv/bin/python" bench.py "$@"
echo
echo "Per call (timeit, minimum of 40 interleaved repetitions of 100,000 calls):"
echo
"$venv/bin/python" micro.py 40
echo
"$venv/bin/python" startup.py
