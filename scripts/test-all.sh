#!/usr/bin/env bash
# Runs every test suite (or those named as arguments), each in its own process, continues
# past a failing suite so one run shows every failure, and ends with one summary line.
#
# A suite of BESIDE that has suites after it runs beside them: its installs first, in the
# foreground (scripts/test-NAME.sh --prepare), then the suite itself in the background at the
# lowest CPU and I/O priority, its output kept in target/test-NAME.log and printed once the
# others have ended. `platforms` is such a suite: it cross-builds and checks artifacts, needs
# no service and asserts no timing, and what runs meanwhile leaves CPU time unused (tests
# that wait on servers and timeouts, a build's single-threaded link), which its builds take.
set -uo pipefail
cd "$(dirname "$0")/.."
BESIDE=" platforms "
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(rust)
passed=0; failed=0; failures=(); timings=()
bg_name=""; bg_pid=""; bg_t0=0; bg_log=""
record() { # record NAME STATUS SECONDS
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$1"); fi
  timings+=("$1 $3s")
}
for i in "${!suites[@]}"; do
  s=${suites[$i]}
  printf '\n\033[1m######## suite: %s ########\033[0m\n' "$s"
  t0=$(date +%s)
  if [[ "$BESIDE" == *" $s "* ]] && [ $((i + 1)) -lt ${#suites[@]} ] && [ -z "$bg_pid" ]; then
    if ! bash "scripts/test-$s.sh" --prepare; then record "$s" 1 $(( $(date +%s) - t0 )); continue; fi
    bg_log="target/test-$s.log"
    mkdir -p target
    lowest=(nice -n 19); command -v ionice >/dev/null && lowest+=(ionice -c 2 -n 7)
    SEGFLAKE_PREPARED=1 "${lowest[@]}" bash "scripts/test-$s.sh" >"$bg_log" 2>&1 &
    bg_name=$s; bg_pid=$!; bg_t0=$t0
    echo "$s runs beside the next suites (output: $bg_log)"
    continue
  fi
  status=0; bash "scripts/test-$s.sh" || status=$?
  record "$s" $status $(( $(date +%s) - t0 ))
done
if [ -n "$bg_pid" ]; then
  printf '\n\033[1m######## suite: %s (ran beside the others) ########\033[0m\n' "$bg_name"
  status=0; wait "$bg_pid" || status=$?
  cat "$bg_log"
  record "$bg_name" $status $(( $(date +%s) - bg_t0 ))
fi
printf '\nsuite times: %s\n' "$(IFS=,; echo "${timings[*]}")"
[ $failed -eq 0 ] || printf 'failed suites: %s\n' "${failures[*]}"
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
