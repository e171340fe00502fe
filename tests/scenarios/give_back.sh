# shellcheck shell=bash
# Giving back unissued IDs, sourced by run.sh: short-lived processes restart over and over
# against the real PostgreSQL, MariaDB and Redis, with and without give-back.

# gb_loop DB URL TAG N GIVE_BACK OUT: N runs of `segflake segment --count 40 --step 1000`,
# one after another, appending the IDs to OUT.
gb_loop() {
  local db=$1 url=$2 tag=$3 n=$4 give=$5 out=$6 i
  for ((i = 0; i < n; i++)); do
    "$SCEN_CLI" segment --store "$url" --tag "$tag" --count 40 --step 1000 --ignore-row-step \
      --give-back "$give" >>"$out" 2>>"$out.err" || return 1
  done
}

# Per database: one process restarting 15 times alone (40 IDs a run, step 1,000), with
# give-back off and on, then three such processes at once on one tag, off and on.
# Checked: no ID twice in any run; alone with give-back on, the IDs are exactly 1..600
# (each run gives back its range's tail and the next one starts there); at once, the
# numbers skipped are reported (a run gives back only when nobody allocated after it).
give_back_restarts() {
  local db url give procs summary
  for db in pg mysql redis; do
    url=$(registry_url "$db")
    summary=""
    for procs in 1 3; do
      for give in false true; do
        local tag="gb_${db}_${procs}_$give" pids=() files=() n
        fresh_tag "$db" "$tag" 1
        for ((n = 1; n <= procs; n++)); do
          local f="$SCEN_OUT/gb-$db-$procs-$give-$n.txt"
          rm -f "$f" "$f.err"
          gb_loop "$db" "$url" "$tag" 15 "$give" "$f" &
          pids+=($!) files+=("$f")
        done
        wait_all "${pids[@]}"
        local line; line=$(check_ids --text --min 1 "${files[@]}") || fail "$db $procs x give_back=$give: $line"
        local span; span=$("$SCEN_PY" - "${files[@]}" <<'PY'
import sys
ids = [int(l) for f in sys.argv[1:] for l in open(f)]
print(f"{max(ids) - min(ids) + 1 - len(ids)} of {max(ids) - min(ids) + 1} numbers skipped")
PY
)
        summary+="; $procs process(es), give_back=$give: ${#files[@]}x15 runs, $span"
        if [ "$procs" = 1 ] && [ "$give" = true ]; then
          check_ids --text --min 1 --expect 600 "${files[@]}" >/dev/null || fail "$db: alone with give-back: $line"
          [ "$(sort -n "${files[@]}" | tail -n 1)" = 600 ] || fail "$db: alone with give-back, IDs are not 1..600 ($line)"
        fi
      done
    done
    note "give_back_restarts $db (40 IDs a run, step 1,000)$summary"
  done
}
