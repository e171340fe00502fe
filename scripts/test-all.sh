#!/usr/bin/env bash
# Runs every test suite (or those named as arguments), each in its own process, continues
# past a failing suite so one run shows every failure, and ends with one summary line.
set -uo pipefail
cd "$(dirname "$0")/.."
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(rust)
passed=0; failed=0; failures=(); timings=()
for s in "${suites[@]}"; do
  printf '\n\033[1m######## suite: %s ########\033[0m\n' "$s"
  t0=$(date +%s)
  if bash "scripts/test-$s.sh"; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$s"); fi
  timings+=("$s $(( $(date +%s) - t0 ))s")
done
printf '\nsuite times: %s\n' "$(IFS=,; echo "${timings[*]}")"
[ $failed -eq 0 ] || printf 'failed suites: %s\n' "${failures[*]}"
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
