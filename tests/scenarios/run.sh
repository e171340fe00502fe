#!/usr/bin/env bash
# Scenario runner: real PostgreSQL, MariaDB and Redis on 127.0.0.1, processes in Python,
# Node and C drawing segment IDs from them, faults injected; every scenario checks that no
# ID was issued twice. Usage:
#   tests/scenarios/run.sh [SCENARIO...]     (default: all, in order; see `list` below)
# Expects the environment scripts/test-scenarios.sh prepares (it builds and installs the
# bindings): SCEN_PY (a Python with segflake + clients), SCEN_NODE_DIR (a Node project with
# segflake + clients), SCEN_C_DIR (pg_store and the bad-store program), SCEN_CLI (segflake CLI).
# Ends with `N passed, N failed`; writes figures to $SCEN_OUT/results.md.
. "$(dirname "${BASH_SOURCE[0]}")/services.sh"
HERE="$ROOT/tests/scenarios"
SCEN_OUT=${SCEN_OUT:-$ROOT/target/scenarios/out}
: "${SCEN_PY:?set SCEN_PY}" "${SCEN_NODE_DIR:?set SCEN_NODE_DIR}" "${SCEN_C_DIR:?set SCEN_C_DIR}"
# IDs per process in the many-languages scenario.
SCEN_COUNT=${SCEN_COUNT:-600000}

rm -rf "$SCEN_OUT" && mkdir -p "$SCEN_OUT"
RESULTS="$SCEN_OUT/results.md"
: >"$RESULTS"

# ---------------------------------------------------------------------------------------
# helpers

note() { printf '%s\n' "$*" | tee -a "$RESULTS" >&2; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

pg_sql() { psql "$SEGFLAKE_PG_DSN" -v ON_ERROR_STOP=1 -qAt -c "$1"; }
my_sql() {
  mariadb --no-defaults -h "$SEGFLAKE_MYSQL_HOST" -P "$SEGFLAKE_MYSQL_PORT" -u "$SEGFLAKE_MYSQL_USER" \
    -p"$SEGFLAKE_MYSQL_PASSWORD" -N -B "$SEGFLAKE_MYSQL_DB" -e "$1"
}
redis_cmd() { redis-cli -u "$SEGFLAKE_REDIS_URL" "$@"; }

# fresh_tag DB TAG MAX_ID: a leaf_alloc row (or Redis key) for TAG at MAX_ID.
fresh_tag() {
  local db=$1 tag=$2 max=${3:-1}
  case $db in
    pg) pg_sql "DELETE FROM leaf_alloc WHERE biz_tag = '$tag';
                INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('$tag', $max, 1000, 'scenario')" ;;
    mysql) my_sql "DELETE FROM leaf_alloc WHERE biz_tag = '$tag';
                   INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('$tag', $max, 1000, 'scenario')" ;;
    redis) redis_cmd SET "segflake:leaf_alloc:$tag" "$max" >/dev/null ;;
  esac
}

# row_max_id DB TAG
row_max_id() {
  case $1 in
    pg) pg_sql "SELECT max_id FROM leaf_alloc WHERE biz_tag = '$2'" ;;
    mysql) my_sql "SELECT max_id FROM leaf_alloc WHERE biz_tag = '$2'" ;;
    redis) redis_cmd GET "segflake:leaf_alloc:$2" ;;
  esac
}

# py_worker NAME ARGS... / node_worker NAME ARGS... / c_worker NAME ARGS...: start in the
# background; IDs in $SCEN_OUT/NAME.ids, summary in $SCEN_OUT/NAME.json. Sets $!.
py_worker() {
  local name=$1; shift
  "$SCEN_PY" "$HERE/worker.py" --out "$SCEN_OUT/$name.ids" --summary "$SCEN_OUT/$name.json" "$@" \
    2>"$SCEN_OUT/$name.err" &
}
node_worker() {
  local name=$1; shift
  (cd "$SCEN_NODE_DIR" && exec node "$HERE/worker.mjs" --out "$SCEN_OUT/$name.ids" \
    --summary "$SCEN_OUT/$name.json" "$@") 2>"$SCEN_OUT/$name.err" &
}
c_worker() {
  local name=$1; shift
  "$SCEN_C_DIR/pg_store" --out "$SCEN_OUT/$name.ids" --summary "$SCEN_OUT/$name.json" "$@" \
    2>"$SCEN_OUT/$name.err" &
}

# wait_all PID...: fails (showing the processes' stderr) if any exited non-zero.
wait_all() {
  local rc=0 p
  for p in "$@"; do wait "$p" || rc=1; done
  if [ $rc != 0 ]; then
    tail -n 5 "$SCEN_OUT"/*.err >&2 || true
    fail "a worker process failed"
  fi
}

# summary FIELD NAME...: one JSON field of each worker summary, space-separated.
jfield() {
  local field=$1; shift
  "$SCEN_PY" - "$field" "$@" <<'PY'
import json, sys
field, names = sys.argv[1], sys.argv[2:]
print(" ".join(str(json.load(open(n)).get(field, "")) for n in names))
PY
}

check_ids() { "$SCEN_PY" "$HERE/check.py" "$@"; }

# ---------------------------------------------------------------------------------------
# scenarios

# Many languages, one table: 2 Node, 2 Python and (PostgreSQL) 1 C process draw SCEN_COUNT
# IDs each at full speed from one tag with a fixed step of 1000 (hundreds of refills race),
# then hammer the store with step-1 allocations for a second (the refill rate); every ID
# and every allocated range must be distinct.
many_languages() {
  local db=$1 tag="many_$1" pids=() names=() n
  fresh_tag "$db" "$tag" 1
  for n in node1 node2; do node_worker "$db-$n" --db "$db" --tag "$tag" --count "$SCEN_COUNT" --hammer 1; pids+=($!); names+=("$db-$n"); done
  for n in py1 py2; do py_worker "$db-$n" --db "$db" --tag "$tag" --count "$SCEN_COUNT" --hammer 1; pids+=($!); names+=("$db-$n"); done
  if [ "$db" = pg ]; then
    c_worker "$db-c1" --tag "$tag" --count "$SCEN_COUNT" --step 1000 --fixed-step; pids+=($!); names+=("$db-c1")
  else
    py_worker "$db-py3" --db "$db" --tag "$tag" --count "$SCEN_COUNT" --hammer 1; pids+=($!); names+=("$db-py3")
  fi
  local t0=$SECONDS
  wait_all "${pids[@]}"
  local files=() jsons=() allocs=()
  for n in "${names[@]}"; do
    files+=("$SCEN_OUT/$n.ids"); jsons+=("$SCEN_OUT/$n.json")
    [ -f "$SCEN_OUT/$n.ids.allocs" ] && allocs+=("$SCEN_OUT/$n.ids.allocs")
  done
  local total=$(( SCEN_COUNT * ${#names[@]} ))
  local line; line=$(check_ids --min 1 --expect "$total" "${files[@]}") || fail "$line"
  local all; all=$(check_ids --min 1 "${files[@]}" "${allocs[@]}") || fail "IDs and step-1 allocations overlap: $all"
  local hammer; hammer=$("$SCEN_PY" - "${jsons[@]}" <<'PY'
import json, sys
s = [json.load(open(p)) for p in sys.argv[1:]]
refills = sum(x["allocations"] for x in s)
lat = sum(x["alloc_ms_mean"] * x["allocations"] for x in s) / max(1, refills)
h = [x for x in s if "hammer_allocs" in x]
rate = sum(x["hammer_allocs"] / x["hammer_s"] for x in h)
langs = "+".join(sorted({x["lang"] for x in s}))
per = ", ".join(f'{x["lang"]} {x["ids_per_s"]:,}/s' for x in s)
print(f"refills={refills} mean_refill_ms={lat:.2f} hammer_allocs={sum(x['hammer_allocs'] for x in h)} "
      f"refill_rate={rate:,.0f}/s ({len(h)} clients) per_process=[{per}]")
PY
)
  local max_row; max_row=$(row_max_id "$db" "$tag")
  local max_id; max_id=$(sed -n 's/.*max=\([0-9]*\).*/\1/p' <<<"$all")
  [ "$max_row" -gt "$max_id" ] || fail "row max_id $max_row is not above the largest ID $max_id"
  note "many_languages[$db]: ${#names[@]} processes, $line; with step-1 allocations: $all; $hammer; row max_id=$max_row; $((SECONDS - t0)) s"
}

many_languages_pg() { many_languages pg; }
many_languages_mysql() { many_languages mysql; }
many_languages_redis() { many_languages redis; }

# Bad stores: a store that returns an overlapping range, a smaller max_id, a zero step or
# a max_id below its step is refused in every binding, and none of its IDs is issued.
bad_stores() {
  local out
  out=$("$SCEN_PY" "$HERE/bad_store.py") || fail "python: $out"
  note "bad_stores[python]: $out"
  out=$(cd "$SCEN_NODE_DIR" && node "$HERE/bad_store.mjs") || fail "node: $out"
  note "bad_stores[node]: $out"
  out=$("$SCEN_C_DIR/bad_store") || fail "c: $out"
  note "bad_stores[c]: $out"
}

ALL=(many_languages_pg bad_stores many_languages_mysql many_languages_redis)

# ---------------------------------------------------------------------------------------

want=("$@"); [ ${#want[@]} -gt 0 ] || want=("${ALL[@]}")
services_start postgres mariadb redis
pg_sql "$(cat "$ROOT/stores/sql/leaf_alloc.postgres.sql")" >/dev/null
my_sql "$(cat "$ROOT/stores/sql/leaf_alloc.mysql.sql")" >/dev/null

passed=0 failed=0
for s in "${want[@]}"; do
  declare -F "$s" >/dev/null || { echo "unknown scenario $s (known: ${ALL[*]})" >&2; failed=$((failed + 1)); continue; }
  log "scenario $s"
  start=$SECONDS
  # set -e holds inside the background subshell (it would not in an `if` condition).
  ( set -e; "$s" ) &
  if wait $!; then
    passed=$((passed + 1)); echo "ok   $s ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1)); echo "FAIL $s ($((SECONDS - start)) s)"
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
