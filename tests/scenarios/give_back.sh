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

# A give back sent twice (a driver or pool that resends after a lost reply, a delayed
# duplicate), per SQL database, with the shipped CLI: a run gives back the tail of its range
# (max_id 1001 -> 41), another process allocates exactly that range again (max_id back at
# 1001) and issues 41, then the first give back's statements run once more with its token
# (read from leaf_alloc_give_back): max_id stays 1001, and the next run continues at 1001,
# so 41 is never issued twice.
give_back_resent() {
  local db store url tag token top f
  for db in pg mysql; do
    store=$([ "$db" = pg ] && echo postgres || echo mysql)
    url=$(registry_url "$db")
    tag="gb_resent_$db"
    f="$SCEN_OUT/gb-resent-$db.txt"
    rm -f "$f" "$f.err"
    fresh_tag "$db" "$tag" 1
    # No earlier record of this tag (the CLI would create the table as well).
    sql_of "$db" "$(core_sql "$store" give_back_table)" >/dev/null 2>&1 || fail "$db: cannot create the marker table"
    sql_of "$db" "DELETE FROM leaf_alloc_give_back WHERE biz_tag = '$tag'" >/dev/null
    "$SCEN_CLI" segment --store "$url" --tag "$tag" --count 40 --step 1000 --ignore-row-step \
      --give-back true >>"$f" 2>>"$f.err" || fail "$db: $(tail -n 3 "$f.err")"
    [ "$(row_max_id "$db" "$tag")" = 41 ] || fail "$db: the give back did not lower max_id to 41"
    token=$(sql_of "$db" "SELECT token FROM leaf_alloc_give_back WHERE biz_tag = '$tag'")
    [[ "$token" =~ ^[0-9a-f]{32}$ ]] || fail "$db: no give back recorded (token '$token')"
    "$SCEN_CLI" segment --store "$url" --tag "$tag" --count 1 --step 960 --ignore-row-step \
      --give-back false >>"$f" 2>>"$f.err" || fail "$db: $(tail -n 3 "$f.err")"
    [ "$(row_max_id "$db" "$tag")" = 1001 ] || fail "$db: the allocation did not bring max_id back to 1001"
    case $db in
      pg)
        pg_sql "PREPARE i(text, text, bigint, bigint) AS $(core_sql postgres give_back_intent);
                EXECUTE i('$token', '$tag', 41, 1001);
                PREPARE g(text) AS $(core_sql postgres give_back); EXECUTE g('$token');" >/dev/null ;;
      mysql)
        my_sql "PREPARE i FROM '$(core_sql mysql give_back_intent)'; EXECUTE i USING '$token', '$tag', 41, 1001;
                PREPARE g FROM '$(core_sql mysql give_back)'; EXECUTE g USING '$token';" >/dev/null ;;
    esac
    top=$(row_max_id "$db" "$tag")
    [ "$top" = 1001 ] || fail "$db: the resent give back lowered max_id again to $top: IDs from $top on would be issued twice"
    "$SCEN_CLI" segment --store "$url" --tag "$tag" --count 1 --step 1000 --ignore-row-step \
      --give-back false >>"$f" 2>>"$f.err" || fail "$db: $(tail -n 3 "$f.err")"
    local line; line=$(check_ids --text --min 1 "$f") || fail "$db: $line"
    [ "$(tail -n 1 "$f")" = 1001 ] || fail "$db: the run after the resend issued $(tail -n 1 "$f"), not 1001"
    note "give_back_resent $db: a give back run again with its token after the range was allocated again changed nothing ($line)"
  done
}

# sql_of DB SQL: one value from PostgreSQL or MariaDB.
sql_of() {
  case $1 in
    pg) pg_sql "$2" ;;
    mysql) my_sql "$2" ;;
  esac
}

# core_sql STORE CALL: the core's statement CALL of STORE ("postgres", "mysql") for
# leaf_alloc, with PostgreSQL's placeholders numbered (the tables the bindings load).
core_sql() {
  "$SCEN_PY" - "$1" "$2" <<'PY'
import json, sys
from segflake._native import _tables
store, call = sys.argv[1:]
text = json.loads(_tables())["segment_stores"][store][call].replace("{table}", "leaf_alloc")
if store == "postgres":
    parts = text.split("?")
    text = "".join(p + (f"${i + 1}" if i < len(parts) - 1 else "") for i, p in enumerate(parts))
print(text)
PY
}
