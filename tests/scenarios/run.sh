#!/usr/bin/env bash
# Scenario runner: real PostgreSQL, MariaDB and Redis on 127.0.0.1, processes in Python,
# Node and C drawing segment IDs from them or leasing worker IDs through them (leases.sh),
# faults injected; every scenario checks that no ID was issued twice. Usage:
#   tests/scenarios/run.sh [SCENARIO...]     (default: all, in order; see `list` below)
# Expects the environment scripts/test-scenarios.sh prepares (it builds and installs the
# bindings): SCEN_PY (a Python with segflake + clients), SCEN_NODE_DIR (a Node project with
# segflake + clients), SCEN_C_DIR (pg_store, c_worker, bad_store), SCEN_CLI (segflake CLI),
# SCEN_CLI_FAKETIME (a dynamically linked CLI, for runs under libfaketime), SCEN_AXUM
# (examples/rust/axum-service, for rust_axum).
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
# stderr_of NAME: why program NAME failed, from $SCEN_OUT/NAME.err: its first line naming an
# error (a Node stack trace prints it above the frames, out of reach of a short tail), then
# its last 5 lines.
stderr_of() {
  local f="$SCEN_OUT/$1.err"
  [ -f "$f" ] || { echo "(no $1.err)"; return 0; }
  grep -m1 -E 'Error|error' "$f" || true
  tail -n 5 "$f"
}

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

c_kv_worker() {
  local name=$1; shift
  "$SCEN_C_DIR/c_worker" --out "$SCEN_OUT/$name.ids" --summary "$SCEN_OUT/$name.json" "$@" \
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

# Many languages, one table: 2 Node, 2 Python and 1 C process draw SCEN_COUNT
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
    c_kv_worker "$db-c1" --db "$db" --tag "$tag" --count "$SCEN_COUNT" --step 1000; pids+=($!); names+=("$db-c1")
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

# The store adapters themselves (Python and Node) on all three servers: ensure_tag, Leaf's
# first segment, a missing tag, bad arguments, a generator end to end.
adapters() {
  local out
  out=$("$SCEN_PY" "$HERE/adapters.py" 2>&1) || fail "$out"
  note "adapters: $out"
  out=$(cd "$SCEN_NODE_DIR" && node "$HERE/adapters.mjs" 2>&1) || fail "$out"
  note "adapters: $out"
}

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

# Leaf migration: the tag's row is where a running Leaf left it (max_id 73,000,001, Leaf's
# own step 2000), and Leaf keeps running beside segflake (its own transaction, its row
# step) while Python, Node and (PostgreSQL) C processes draw from the same row. Every
# segflake ID is at or above the max_id Leaf left (Leaf had issued only IDs below it), no
# ID is issued twice across Leaf and segflake, ensure_tag leaves the row alone and
# segflake never changes Leaf's step column.
leaf_migration() {
  local db=$1 tag="leaf_$1" floor=73000001 pids=() names=()
  case $db in
    pg) pg_sql "DELETE FROM leaf_alloc WHERE biz_tag = '$tag';
                INSERT INTO leaf_alloc (biz_tag, max_id, step, description, update_time)
                VALUES ('$tag', $floor, 2000, 'test biz tag for Leaf', '2019-06-01 12:00:00')" ;;
    mysql) my_sql "DELETE FROM leaf_alloc WHERE biz_tag = '$tag';
                   INSERT INTO leaf_alloc (biz_tag, max_id, step, description, update_time)
                   VALUES ('$tag', $floor, 2000, 'test biz tag for Leaf', '2019-06-01 12:00:00')" ;;
  esac
  "$SCEN_PY" - "$db" "$tag" <<'PY' || fail "ensure_tag changed an existing Leaf row"
import os, sys
from segflake.stores import MySQLStore, PostgresStore
db, tag = sys.argv[1:]
if db == "pg":
    store = PostgresStore(os.environ["SEGFLAKE_PG_DSN"])
else:
    e = os.environ
    store = MySQLStore(host=e["SEGFLAKE_MYSQL_HOST"], port=int(e["SEGFLAKE_MYSQL_PORT"]), user=e["SEGFLAKE_MYSQL_USER"],
                       password=e["SEGFLAKE_MYSQL_PASSWORD"], database=e["SEGFLAKE_MYSQL_DB"])
assert store.ensure_tag(tag) is False, "ensure_tag reported creating a row that existed"
assert store.ensure_tag(tag, max_id=1) is False
PY
  [ "$(row_max_id "$db" "$tag")" = "$floor" ] || fail "the Leaf row moved before anything ran"
  "$SCEN_PY" "$HERE/leaf_sim.py" --db "$db" --tag "$tag" --count 100000 --out "$SCEN_OUT/$db-leaf.ids" \
    >"$SCEN_OUT/$db-leaf.log" 2>&1 & pids+=($!)
  py_worker "$db-mig-py" --db "$db" --tag "$tag" --count 100000 --step 500; pids+=($!); names+=("$db-mig-py")
  node_worker "$db-mig-node" --db "$db" --tag "$tag" --count 100000 --step 500; pids+=($!); names+=("$db-mig-node")
  if [ "$db" = pg ]; then
    c_worker "$db-mig-c" --tag "$tag" --count 100000 --step 500 --fixed-step; pids+=($!); names+=("$db-mig-c")
  fi
  wait_all "${pids[@]}"
  local files=() n
  for n in "${names[@]}"; do files+=("$SCEN_OUT/$n.ids"); done
  local seg; seg=$(check_ids --min "$floor" "${files[@]}") || fail "segflake: $seg"
  local all; all=$(check_ids "${files[@]}" "$SCEN_OUT/$db-leaf.ids") || fail "Leaf and segflake overlap: $all"
  local step
  case $db in
    pg) step=$(pg_sql "SELECT step FROM leaf_alloc WHERE biz_tag = '$tag'") ;;
    mysql) step=$(my_sql "SELECT step FROM leaf_alloc WHERE biz_tag = '$tag'") ;;
  esac
  [ "$step" = 2000 ] || fail "Leaf's step column changed to $step"
  note "leaf_migration[$db]: Leaf left max_id=$floor; segflake (${#names[@]} processes): $seg; with a running Leaf's 100000 IDs: $all; Leaf's step column still 2000"
}
leaf_migration_pg() { leaf_migration pg; }
leaf_migration_mysql() { leaf_migration mysql; }

# svc_stop DB MODE / svc_start DB
svc_stop() {
  case $1 in
    pg) postgres_stop "$2" ;;
    mysql) mariadb_stop "$2" ;;
    redis) redis_stop "$2" ;;
    zk) zookeeper_stop "$2" ;;
    etcd) etcd_stop "$2" ;;
  esac
}
svc_start() {
  case $1 in
    pg) postgres_start ;;
    mysql) mariadb_start >/dev/null ;;
    redis) redis_start ;;
    zk) zookeeper_start ;;
    etcd) etcd_start ;;
  esac
}

# Database outage: the server is stopped (MODE: a graceful stop or kill -9) for
# OUTAGE seconds while four processes draw IDs at a steady rate. Two have large segments
# ("buffered": minutes of runway) and must not notice; two have small ones ("dry": a
# fraction of a second of runway) and must get SegmentsExhausted naming the cause, then
# resume once the server is back. No ID is issued twice, before or after the restart.
# The processes stop AFTER seconds after the server answers again, however long its stop
# and restart took (a graceful stop of a loaded machine can take seconds).
OUTAGE=${OUTAGE:-4} AFTER=3
outage() {
  local db=$1 mode=$2 tag="outage_$1_$2" pids=() names=() n
  fresh_tag "$db" "$tag" 1
  local stop="$SCEN_OUT/$tag.stop"
  rm -f "$stop"
  local opts=(--db "$db" --tag "$tag" --duration $((OUTAGE + 120)) --stop-file "$stop")
  py_worker "$db-$mode-py-dry" "${opts[@]}" --rate 20000 --step 1000; pids+=($!)
  node_worker "$db-$mode-node-dry" "${opts[@]}" --rate 20000 --step 1000; pids+=($!)
  py_worker "$db-$mode-py-buffered" "${opts[@]}" --rate 2000 --step 100000; pids+=($!)
  node_worker "$db-$mode-node-buffered" "${opts[@]}" --rate 2000 --step 100000; pids+=($!)
  names=("$db-$mode-py-dry" "$db-$mode-node-dry" "$db-$mode-py-buffered" "$db-$mode-node-buffered")
  sleep 2.5
  local t0; t0=$(date +%s.%N)
  svc_stop "$db" "$mode"
  sleep "$OUTAGE"
  svc_start "$db" >/dev/null
  local down; down=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  # How many IDs each process had written when the server answered again (8 B each).
  for n in "${names[@]}"; do echo "$n $(($(stat -c %s "$SCEN_OUT/$n.ids" 2>/dev/null || echo 0) / 8))"; done >"$SCEN_OUT/$tag.back"
  sleep "$AFTER"
  : >"$stop"
  wait_all "${pids[@]}"
  local files=()
  for n in "${names[@]}"; do files+=("$SCEN_OUT/$n.ids"); done
  local line; line=$(check_ids --min 1 "${files[@]}") || fail "$line"
  local verdict; verdict=$("$SCEN_PY" - "$AFTER" "$SCEN_OUT/$tag.back" "$SCEN_OUT" "${names[@]}" <<'PY'
import json, os, sys
after, out, names = float(sys.argv[1]), sys.argv[3], sys.argv[4:]
back = {n: int(k) for n, k in (line.split() for line in open(sys.argv[2]))}
s = {n: json.load(open(os.path.join(out, n + ".json"))) for n in names}
bad, parts = [], []
for n, x in s.items():
    kind = "dry" if n.endswith("dry") else "buffered"
    lang = x["lang"]
    errs = sum(x["errors"].values())
    parts.append(f'{lang}-{kind}: {x["issued"]} IDs ({x["issued"] - back[n]} after), longest stall {x["longest_stall_ms"]:.0f} ms, {errs} errors')
    if kind == "buffered":
        if errs or x["longest_stall_ms"] > 1000:
            bad.append(f"{n}: the buffered generator noticed the outage: {x}")
    else:
        names_ = set(x["errors"])
        if not any("SegmentsExhausted" in e for e in names_):
            bad.append(f"{n}: no SegmentsExhausted error while the server was down: {x['errors']}")
        msgs = " | ".join(x["error_messages"])
        if "cause" not in msgs:
            bad.append(f"{n}: the error does not give the cause: {msgs}")
        # resumed: after the server answered again, at least half of what AFTER seconds
        # at 20,000 IDs/s allow
        resumed = x["issued"] - back[n]
        if resumed < 20000 * after * 0.5:
            bad.append(f"{n}: did not resume after the outage ({resumed} IDs in the {after:.0f} s after it)")
cause = next((m for x in s.values() for m in x["error_messages"]), "")
print("; ".join(parts) + f'; first error: "{cause[:260]}"')
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
) || fail "server down ${down} s; $verdict"
  note "outage[$db $mode, stop + ${OUTAGE} s + restart = ${down} s]: $line; $verdict"
}
outage_pg_fast() { outage pg fast; }
outage_pg_kill9() { outage pg kill9; }
outage_mysql_graceful() { outage mysql graceful; }
outage_mysql_kill9() { outage mysql kill9; }
outage_redis_graceful() { outage redis graceful; }
outage_redis_kill9() { outage redis kill9; }

# Tinyid's multi-database mode: two PostgreSQL servers, each with its own leaf_alloc row
# for the tag; 2 Python and 2 Node processes draw 4,000 IDs/s each through a MultiStore
# (server i gives only IDs ≡ i mod 2), with segments of 4,000 IDs. The first server is
# killed with -9 mid-run and started again, then the second is stopped (pg_ctl fast) and
# started again; each is down 6 s or more. Checks: no ID twice, no error and no stall over
# 3.5 s in any process (IDs kept flowing while one server was down: without failover a
# process would stall for the whole outage), both residues issued, and every ID inside a
# range that the server of its residue handed out to the process that issued it. A
# failover's first call opens a connection to a server not used before, or restarted
# after kill -9; with both cores busy that first connection and its statements took up to
# 3 s, so callers wait up to 4 s (wait_timeout_ms) instead of the default 1 s.
multi_store_pg() {
  local tag=multi_pg pids=() names=() n
  local pg2_sql=(psql "$SEGFLAKE_PG2_DSN" -v ON_ERROR_STOP=1 -qAt -c)
  "${pg2_sql[@]}" "$(cat "$ROOT/stores/sql/leaf_alloc.postgres.sql")" >/dev/null 2>&1 || true
  fresh_tag pg "$tag" 1
  "${pg2_sql[@]}" "DELETE FROM leaf_alloc WHERE biz_tag = '$tag';
    INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('$tag', 1, 1000, 'scenario')"
  # The processes run until 2 s after the second server is back (at most 2 minutes).
  local stop="$SCEN_OUT/$tag.stop"
  rm -f "$stop"
  local opts=(--db multi-pg --tag "$tag" --rate 4000 --step 4000 --wait-timeout-ms 4000 --duration 120 --stop-file "$stop")
  for n in py1 py2; do py_worker "multi-$n" "${opts[@]}"; pids+=($!); names+=("multi-$n"); done
  for n in node1 node2; do node_worker "multi-$n" "${opts[@]}"; pids+=($!); names+=("multi-$n"); done
  sleep 3
  local t0=$SECONDS
  postgres_stop kill9
  sleep 6
  postgres_start >/dev/null
  local down1=$((SECONDS - t0))
  sleep 2
  t0=$SECONDS
  postgres2_stop fast
  sleep 6
  postgres2_start >/dev/null
  local down2=$((SECONDS - t0))
  sleep 2
  : >"$stop"
  wait_all "${pids[@]}"
  local files=()
  for n in "${names[@]}"; do files+=("$SCEN_OUT/$n.ids"); done
  local line; line=$(check_ids --min 1 "${files[@]}") || fail "$line"
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT" "${names[@]}" <<'PY'
import array, bisect, json, os, sys
out, names = sys.argv[1], sys.argv[2:]
bad, parts, residues = [], [], [0, 0]
for n in names:
    x = json.load(open(os.path.join(out, n + ".json")))
    ids = array.array("Q")
    ids.frombytes(open(os.path.join(out, n + ".ids"), "rb").read())
    ranges = [sorted((int(s), int(e)) for s, e in r) for r in x["ranges"]]
    starts = [[s for s, _ in r] for r in ranges]
    outside = 0
    for id_ in ids:
        k = id_ % 2
        residues[k] += 1
        i = bisect.bisect_right(starts[k], id_) - 1
        if i < 0 or id_ >= ranges[k][i][1]:
            outside += 1
    errs = sum(x["errors"].values())
    parts.append(f'{x["lang"]}: {x["issued"]} IDs, stall {x["longest_stall_ms"]:.0f} ms, '
                 f'{x["store_failures"]} failed store calls, {errs} errors')
    if outside:
        bad.append(f"{n}: {outside} IDs outside the ranges of their residue's server")
    if errs or x["longest_stall_ms"] > 3500:
        bad.append(f"{n}: IDs stopped while one server was down: {x['errors']} {x['error_messages']}")
    if list(ids) != sorted(set(ids)):
        bad.append(f"{n}: IDs of one process did not strictly increase")
    if x["store_failures"] == 0:
        bad.append(f"{n}: never saw a server down")
if not all(residues):
    bad.append(f"IDs of one residue only: {residues}")
print("; ".join(parts) + f"; even (server 1) {residues[0]}, odd (server 2) {residues[1]}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
) || fail "$verdict"
  note "multi_store[pg + pg2, kill -9 of pg ${down1} s, then pg2 stopped ${down2} s]: $line; $verdict"
}

# Tinyid's multi-database mode with the residue classes kept in the databases: each
# leaf_alloc row states its delta and remainder (Tinyid's columns), so a store's class
# follows the database, not its place in a client's list. Four CLI processes draw 60,000
# IDs each from two PostgreSQL servers, two listing them (pg, pg2) and two (pg2, pg): no
# ID twice, each database's IDs only in its own class. Then rows whose classes are not a
# permutation of 0..2 (both remainder 0, then delta 3): the allocations are refused with
# the store named, and no ID is issued.
multi_store_reordered_pg() {
  local tag=multi_reorder pids=() n
  local pg2_sql=(psql "$SEGFLAKE_PG2_DSN" -v ON_ERROR_STOP=1 -qAt -c)
  "${pg2_sql[@]}" "$(cat "$ROOT/stores/sql/leaf_alloc.postgres.sql")" >/dev/null 2>&1 || true
  local columns="ALTER TABLE leaf_alloc ADD COLUMN IF NOT EXISTS delta INTEGER, ADD COLUMN IF NOT EXISTS remainder INTEGER"
  # The columns go again however the scenario ends: other scenarios read plain Leaf rows.
  trap 'for dsn in "$SEGFLAKE_PG_DSN" "$SEGFLAKE_PG2_DSN"; do
          psql "$dsn" -qAt -c "ALTER TABLE leaf_alloc DROP COLUMN IF EXISTS delta, DROP COLUMN IF EXISTS remainder" >/dev/null 2>&1
        done' EXIT
  pg_sql "$columns" >/dev/null
  "${pg2_sql[@]}" "$columns" >/dev/null
  set_class() { # DB_SQL... -- DELTA REMAINDER
    "${@:1:$#-2}" "DELETE FROM leaf_alloc WHERE biz_tag = '$tag';
      INSERT INTO leaf_alloc (biz_tag, max_id, step, description, delta, remainder)
      VALUES ('$tag', 1, 1000, 'scenario', ${*: -2:1}, ${*: -1})" >/dev/null
  }
  set_class pg_sql 2 0
  set_class "${pg2_sql[@]}" 2 1
  local a="--store $SEGFLAKE_PG_DSN --store $SEGFLAKE_PG2_DSN" b="--store $SEGFLAKE_PG2_DSN --store $SEGFLAKE_PG_DSN"
  for n in 1 2; do
    # shellcheck disable=SC2086 # the store flags are words
    "$SCEN_CLI" segment $a --tag "$tag" --count 60000 >"$SCEN_OUT/reorder-a$n.txt" & pids+=($!)
    # shellcheck disable=SC2086
    "$SCEN_CLI" segment $b --tag "$tag" --count 60000 >"$SCEN_OUT/reorder-b$n.txt" & pids+=($!)
  done
  wait_all "${pids[@]}"
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT" <<'PY'
import os, sys
out = sys.argv[1]
seen, total, classes = set(), 0, [0, 0]
for name in ("a1", "a2", "b1", "b2"):
    ids = [int(line) for line in open(os.path.join(out, f"reorder-{name}.txt"))]
    if len(ids) != 60000 or ids != sorted(set(ids)):
        sys.exit(f"{name}: {len(ids)} IDs, not 60000 strictly increasing")
    for i in ids:
        classes[i % 2] += 1
    total += len(ids)
    seen.update(ids)
if len(seen) != total:
    sys.exit(f"{total - len(seen)} IDs issued twice")
if not all(classes):
    sys.exit(f"IDs of one class only: {classes}")
print(f"{total} IDs from 4 processes with the list in both orders, none twice; class 0 (pg) {classes[0]}, class 1 (pg2) {classes[1]}")
PY
) || fail "$verdict"
  # Classes that are not a permutation: refused, naming the store; nothing issued.
  local refused
  set_class pg_sql 2 0
  set_class "${pg2_sql[@]}" 2 0
  # shellcheck disable=SC2086
  if "$SCEN_CLI" segment $a --tag "$tag" --count 3000 >"$SCEN_OUT/reorder-same.txt" 2>"$SCEN_OUT/reorder-same.err"; then
    # Only the first store's class is issued; the second's ranges are refused.
    awk '$1 % 2 != 0 { exit 1 }' "$SCEN_OUT/reorder-same.txt" || fail "an ID outside class 0 with both rows stating remainder 0"
  fi
  set_class pg_sql 3 0
  set_class "${pg2_sql[@]}" 3 1
  # shellcheck disable=SC2086
  if "$SCEN_CLI" segment $a --tag "$tag" --count 10 >"$SCEN_OUT/reorder-delta.txt" 2>"$SCEN_OUT/reorder-delta.err"; then
    fail "rows stating delta 3 for two databases were accepted"
  fi
  [ ! -s "$SCEN_OUT/reorder-delta.txt" ] || fail "IDs issued from rows of the wrong delta"
  grep -Eq "store [01] of 2" "$SCEN_OUT/reorder-delta.err" && grep -q "delta = 2" "$SCEN_OUT/reorder-delta.err" ||
    fail "the refusal does not name the store and the rule: $(cat "$SCEN_OUT/reorder-delta.err")"
  refused=$(head -c 300 "$SCEN_OUT/reorder-delta.err")
  note "multi_store_reordered[pg + pg2, listed in both orders, classes in the rows]: $verdict; delta 3 refused: $refused"
}

# Process crash: Python and Node processes drawing 50,000 IDs/s in segments of 5,000 are
# killed with SIGKILL mid-segment, then restarted on the same tag: nothing the killed
# processes issued is issued again; the rest of their segments is skipped (Leaf's gaps).
crash() {
  local db=$1 tag="crash_$1" pids=()
  fresh_tag "$db" "$tag" 1
  py_worker "$db-crash-py-1" --db "$db" --tag "$tag" --rate 50000 --duration 30 --step 5000; pids+=($!)
  node_worker "$db-crash-node-1" --db "$db" --tag "$tag" --rate 50000 --duration 30 --step 5000; pids+=($!)
  sleep 2
  kill -9 "${pids[@]}"
  wait "${pids[@]}" 2>/dev/null || true
  local row; row=$(row_max_id "$db" "$tag")
  local before; before=$(check_ids "$SCEN_OUT/$db-crash-py-1.ids" "$SCEN_OUT/$db-crash-node-1.ids") || fail "$before"
  local killed_max; killed_max=$(sed -n 's/.*max=\([0-9]*\).*/\1/p' <<<"$before")
  pids=()
  py_worker "$db-crash-py-2" --db "$db" --tag "$tag" --rate 50000 --duration 1.5 --step 5000; pids+=($!)
  node_worker "$db-crash-node-2" --db "$db" --tag "$tag" --rate 50000 --duration 1.5 --step 5000; pids+=($!)
  wait_all "${pids[@]}"
  local after; after=$(check_ids --min "$row" "$SCEN_OUT/$db-crash-py-2.ids" "$SCEN_OUT/$db-crash-node-2.ids") ||
    fail "restarted processes issued IDs below the row's max_id $row at the kill: $after"
  local all; all=$(check_ids "$SCEN_OUT/$db"-crash-*.ids) || fail "$all"
  note "crash[$db]: killed processes had issued $before (row max_id $row: $((row - 1 - killed_max)) IDs of their segments skipped); restarted: $after; together: $all"
}
crash_pg() { crash pg; }
crash_redis() { crash redis; }

# Control: the duplicate check does catch a store that forgets. A Redis key reset to 1
# between two processes (what a Redis without the append-only file does after kill -9)
# makes the second process issue the first one's IDs again, and check.py must say so.
# Within one process the generator refuses the smaller max_id (see bad_stores).
detects_lost_counter() {
  local tag="control_redis"
  fresh_tag redis "$tag" 1
  py_worker control-1 --db redis --tag "$tag" --count 20000 --step 1000; wait_all $!
  redis_cmd SET "segflake:leaf_alloc:$tag" 1 >/dev/null
  node_worker control-2 --db redis --tag "$tag" --count 20000 --step 1000; wait_all $!
  local line
  if line=$(check_ids "$SCEN_OUT"/control-{1,2}.ids 2>&1); then
    fail "the check found no duplicate after the counter was reset: $line"
  fi
  grep -q "duplicates=20000" <<<"$line" || fail "expected 20000 duplicates: $line"
  note "detects_lost_counter: a Redis counter reset between two processes: $(head -n 1 <<<"$line") (the check fails, as it must)"
}

# Clock steps: snowflake processes under libfaketime. One runs while its clock is stepped
# back 1 s (inside max_drift_ms = 2000: IDs keep coming, still increasing), then 10 s
# (beyond: ClockMovedBackwardsError saying by how much), then forward again (it resumes).
# Restarted with its persisted high-water mark while the clock is still 10 s behind, a
# process refuses (Python and the CLI, which name the problem); restarted with the clock
# 1 s behind, it issues IDs above everything before. No ID twice, none out of order.
FAKETIME_LIB=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1)
clock_steps() {
  [ -n "$FAKETIME_LIB" ] || fail "libfaketime is not installed (Debian package faketime)"
  local ft="$SCEN_OUT/faketime"
  local fenv=(env LD_PRELOAD="$FAKETIME_LIB" FAKETIME_TIMESTAMP_FILE="$ft" FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1)
  "${fenv[@]}" "$SCEN_PY" "$HERE/clock_worker.py" --out "$SCEN_OUT/clock-a.ids" --summary "$SCEN_OUT/clock-a.json" \
    --rate 2000 --duration 6 --schedule "0:+0,1.5:-1,3:-10,4.5:+0" 2>"$SCEN_OUT/clock-a.err" || fail "clock-a crashed"
  local hwm; hwm=$(jfield high_water_mark_ms "$SCEN_OUT/clock-a.json")
  "${fenv[@]}" "$SCEN_PY" "$HERE/clock_worker.py" --out "$SCEN_OUT/clock-b.ids" --summary "$SCEN_OUT/clock-b.json" \
    --rate 2000 --duration 1 --schedule "0:-10" --not-before-ms "$hwm" 2>"$SCEN_OUT/clock-b.err" || fail "clock-b crashed"
  "${fenv[@]}" "$SCEN_PY" "$HERE/clock_worker.py" --out "$SCEN_OUT/clock-c.ids" --summary "$SCEN_OUT/clock-c.json" \
    --rate 2000 --duration 1.5 --schedule "0:-1" --not-before-ms "$hwm" 2>"$SCEN_OUT/clock-c.err" || fail "clock-c crashed"
  # The CLI, restarted with the high-water mark while the clock is 10 s behind, then 1 s.
  local cli_err cli_rc=0
  echo "-10" >"$ft"
  cli_err=$("${fenv[@]}" "$SCEN_CLI_FAKETIME" next --worker 1 --count 3 --not-before "$hwm" 2>&1 >/dev/null) || cli_rc=$?
  if [ "$cli_rc" != 1 ] || ! grep -q CLOCK_MOVED_BACKWARDS <<<"$cli_err"; then
    fail "CLI behind its high-water mark: exit $cli_rc: $cli_err"
  fi
  echo "-1" >"$ft"
  "${fenv[@]}" "$SCEN_CLI_FAKETIME" next --worker 1 --count 1000 --not-before "$hwm" 2>"$SCEN_OUT/clock-cli.err" >"$SCEN_OUT/clock-cli.txt" ||
    fail "CLI 1 s behind its high-water mark (inside max_drift_ms): $(cat "$SCEN_OUT/clock-cli.err")"
  "$SCEN_PY" -c 'import array,sys; array.array("Q", map(int, open(sys.argv[1]))).tofile(open(sys.argv[2], "wb"))' \
    "$SCEN_OUT/clock-cli.txt" "$SCEN_OUT/clock-cli.ids"
  local all; all=$(check_ids "$SCEN_OUT"/clock-{a,c,cli}.ids) || fail "$all"
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT" "$cli_err" <<'PY'
import array, json, os, sys
out, cli_err = sys.argv[1], sys.argv[2]
a, b, c = (json.load(open(os.path.join(out, f"clock-{n}.json"))) for n in "abc")
ids = {n: array.array("Q", open(os.path.join(out, f"clock-{n}.ids"), "rb").read()) for n in ("a", "c", "cli")}
bad = []
p = a["phases"]
if a["out_of_order"] or c["out_of_order"]:
    bad.append("IDs out of order")
if p[0]["errors"] or p[1]["errors"]:
    bad.append(f"errors with the clock 1 s back (inside max_drift_ms): {p[1]}")
if p[1]["issued"] < 1000:
    bad.append(f"too few IDs with the clock 1 s back: {p[1]}")
if "ClockMovedBackwardsError" not in p[2]["errors"] or "moved backwards by" not in " ".join(p[2]["messages"]):
    bad.append(f"no ClockMovedBackwardsError naming the step with the clock 10 s back: {p[2]}")
if p[3]["issued"] < 1000:
    bad.append(f"did not resume once the clock was back: {p[3]}")
if b.get("start_error", {}).get("code") != "CLOCK_MOVED_BACKWARDS" and not (
    b.get("phases") and "ClockMovedBackwardsError" in b["phases"][0]["errors"] and b["issued"] == 0
):
    bad.append(f"restart 10 s behind the high-water mark was not refused: {b}")
if min(ids["c"]) <= max(ids["a"]) or min(ids["cli"]) <= max(ids["a"]):
    bad.append("a restarted process issued an ID not above the first one's")
b_msg = b.get("start_error", {}).get("message") or " ".join(b["phases"][0]["messages"])
print(f'1 s back: {p[1]["issued"]} IDs, 0 errors; 10 s back: {p[2]["issued"]} IDs, '
      f'{sum(p[2]["errors"].values())} refusals ("{p[2]["messages"][0][:150]}"); '
      f'forward again: {p[3]["issued"]} IDs; restart 10 s behind the high-water mark: refused ("{b_msg[:120]}"), '
      f'CLI too ("{cli_err.strip().splitlines()[-1]}"); restart 1 s behind: {c["issued"]} IDs (CLI {len(ids["cli"])}), all above')
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
) || fail "$verdict"
  note "clock_steps: $all; $verdict"
}

# Worker-ID leases: lease_contention_*, lease_paused_*, lease_outage_*, lease_clock_behind_*,
# lease_bad_registry, lease_cli, registries, leaf_takeover_zk, lease_session_expiry_zk.
. "$HERE/leases.sh"
. "$HERE/serve.sh"
. "$HERE/docs.sh"
. "$HERE/serials.sh"
# Fleet edges: fleet_shared_owner_redis, fleet_flushall_redis, fleet_redis_restart_no_aof,
# fleet_eviction_redis, fleet_replica_promotion_redis, fleet_live_leaf_zk.
. "$HERE/fleet.sh"
# Clusters and dead connections: cluster_zk, cluster_etcd, pg_blackhole.
. "$HERE/clusters.sh"
# TLS to every server the adapters speak: tls_all.
. "$HERE/tls.sh"
. "$HERE/aio.sh"
. "$HERE/frameworks.sh"
. "$HERE/give_back.sh"
# The Rust axum example under load and PostgreSQL outages: rust_axum.
. "$HERE/rust.sh"
# Replicated Redis (Sentinel and Cluster) with primaries killed and cut off: ha_redis_*.
. "$HERE/redis_ha.sh"
# PostgreSQL standby and MariaDB replica promoted under load: ha_pg_sync, ha_pg_async, ha_mysql.
. "$HERE/sql_ha.sh"
# serve over mutual TLS with certificates, tokens and keys rotated under load: serve_tls_rotation.
. "$HERE/serve_tls.sh"

ALL=(adapters many_languages_pg bad_stores leaf_migration_pg outage_pg_fast outage_pg_kill9 crash_pg
     many_languages_mysql many_languages_redis leaf_migration_mysql outage_mysql_graceful outage_mysql_kill9
     outage_redis_graceful outage_redis_kill9 crash_redis detects_lost_counter clock_steps
     lease_contention_redis lease_contention_pg lease_contention_mysql
     lease_paused_redis lease_paused_pg lease_paused_mysql
     lease_outage_redis_kill9 lease_outage_pg_fast lease_outage_mysql_graceful
     lease_clock_behind_redis lease_clock_behind_pg lease_clock_behind_mysql lease_bad_registry lease_cli
     registries leaf_takeover_zk lease_session_expiry_zk
     lease_contention_zk lease_contention_etcd lease_paused_zk lease_paused_etcd
     lease_outage_zk_kill9 lease_outage_etcd_kill9 lease_frozen_registry_zk lease_clock_behind_zk lease_clock_behind_etcd
     lease_peer_skew_zk lease_peer_skew_etcd
     serve_pg serve_mysql serve_redis serve_outage_pg serve_http_stores serve_status_page serve_grpc serve_tls_rotation serve_tls_clients docs_migrate serial_counter_redis multi_store_pg multi_store_reordered_pg
     fleet_shared_owner_redis fleet_flushall_redis fleet_redis_restart_no_aof fleet_eviction_redis
     fleet_replica_promotion_redis fleet_live_leaf_zk
     cluster_zk cluster_etcd pg_blackhole tls_all aio_segments aio_blackhole_pg aio_leases aio_tls
     fastapi_outage_pg celery_prefork give_back_restarts give_back_resent rust_axum
     ha_pg_sync ha_pg_async ha_mysql
     ha_redis_sentinel_kill ha_redis_sentinel_partition ha_redis_sentinel_switchover ha_redis_sentinel_nowait ha_redis_cluster)

# ---------------------------------------------------------------------------------------

want=("$@"); [ ${#want[@]} -gt 0 ] || want=("${ALL[@]}")
for s in "${want[@]}"; do
  declare -F "$s" >/dev/null || { echo "unknown scenario $s (known: ${ALL[*]})" >&2; exit 1; }
done

# Lanes. With SCEN_LANES=N (scripts/test-scenarios.sh sets 2) this process runs none itself:
# it starts N lanes side by side, each this script with SCEN_LANE=L, its own servers (on its
# own ports: services.sh's _free_port) and its own output directory $SCEN_OUT/lane-L. Each
# lane takes the next scenario from one queue (the order above) until it is empty; every
# line a lane prints starts with `[L]`. There are never more lanes than scenarios. A
# scenario waits on servers and timeouts far more than it computes, so two lanes on two
# cores take about half the time of one.
if [ -z "${SCEN_QUEUE:-}" ]; then
  SCEN_QUEUE="$SCEN_OUT/queue"
  printf '%s\n' "${want[@]}" >"$SCEN_QUEUE"
fi
SCEN_LANES=${SCEN_LANES:-1}
[ "$SCEN_LANES" -le ${#want[@]} ] || SCEN_LANES=${#want[@]}
if [ "$SCEN_LANES" -gt 1 ] && [ -z "${SCEN_LANE:-}" ]; then
  export SCEN_LANES SCEN_QUEUE
  lanes=()
  trap 'kill -TERM "${lanes[@]}" 2>/dev/null; wait; exit 143' TERM
  trap 'kill -INT "${lanes[@]}" 2>/dev/null; wait; exit 130' INT
  for ((l = 1; l <= SCEN_LANES; l++)); do
    SCEN_LANE=$l SCEN_OUT="$SCEN_OUT/lane-$l" bash "${BASH_SOURCE[0]}" > >(sed -u "s/^/[$l] /") 2>&1 &
    lanes+=($!)
  done
  status=0
  for pid in "${lanes[@]}"; do wait "$pid" || status=1; done
  wait
  cat "$SCEN_OUT"/lane-*/results.md >"$RESULTS" 2>/dev/null
  passed=0 failed=0
  for ((l = 1; l <= SCEN_LANES; l++)); do
    passed=$((passed + $(cat "$SCEN_OUT/lane-$l/passed" 2>/dev/null || echo 0)))
    failed=$((failed + $(cat "$SCEN_OUT/lane-$l/failed" 2>/dev/null || echo 0)))
  done
  left=$(wc -l <"$SCEN_QUEUE")
  [ "$left" = 0 ] && echo "$passed passed, $failed failed" ||
    echo "$passed passed, $failed failed, $left not run (every lane stopped)"
  [ "$status" = 0 ] && [ "$failed" = 0 ] && [ "$left" = 0 ]
  exit
fi
# next_scenario: the queue's first scenario, taken off it (lanes share one queue).
next_scenario() {
  flock "$SCEN_QUEUE.lock" bash -c '[ -s "$1" ] && head -n 1 "$1" && sed -i 1d "$1"' _ "$SCEN_QUEUE"
}

services_start postgres postgres2 mariadb redis zookeeper etcd
pg_sql "$(cat "$ROOT/stores/sql/leaf_alloc.postgres.sql")" >/dev/null
my_sql "$(cat "$ROOT/stores/sql/leaf_alloc.mysql.sql")" >/dev/null

# Each scenario runs in its own process group (job control on), so a TERM or INT stops
# the scenario and its workers first (they could restart a server) and then the EXIT
# trap stops the servers.
set -m
current=""
on_signal() {
  [ -n "$current" ] && kill -TERM -- "-$current" 2>/dev/null
  [ -n "$current" ] && wait "$current" 2>/dev/null
  exit "$1"
}
trap 'on_signal 143' TERM
trap 'on_signal 130' INT

# A scenario still running after SCEN_TIMEOUT seconds (the longest takes under a minute)
# hangs: its processes and the last lines its programs wrote are shown, then it is stopped
# and fails, and the next one starts.
SCEN_TIMEOUT=${SCEN_TIMEOUT:-300}
stop_hung() { # stop_hung PGID MARKER
  echo "TIMEOUT: still running after $SCEN_TIMEOUT s; its processes:" >&2
  ps -e -o pid=,pgid=,stat=,etime=,wchan:24=,args= | awk -v g="$1" '$2 == g' | cut -c1-240 >&2
  find "$SCEN_OUT" -name '*.err' -newer "$2" | while read -r f; do
    printf -- '--- %s\n' "${f##*/}" >&2; tail -n 5 "$f" >&2
  done
  kill -TERM -- "-$1" 2>/dev/null || true; sleep 5; kill -KILL -- "-$1" 2>/dev/null || true
}

# Scenarios that assert latencies (rust_axum: tokio's task lag under p99 20 ms) run alone:
# no other lane runs a scenario meanwhile. A lane runs any other scenario holding a shared
# lock on $SCEN_QUEUE.solo and a solo one holding it exclusively; a solo scenario waiting
# for its lock leaves $SCEN_QUEUE.solo-waits, and the other lanes start nothing new until
# it is gone, so it waits for at most the scenarios already running.
SOLO=" rust_axum "
exec 9>"$SCEN_QUEUE.solo"
take_solo_lock() { # take_solo_lock SCENARIO
  if [[ "$SOLO" == *" $1 "* ]]; then
    : >"$SCEN_QUEUE.solo-waits"
    flock -x 9
  else
    while [ -e "$SCEN_QUEUE.solo-waits" ]; do sleep 0.2; done
    flock -s 9
  fi
}
drop_solo_lock() { # drop_solo_lock SCENARIO
  [[ "$SOLO" != *" $1 "* ]] || rm -f "$SCEN_QUEUE.solo-waits"
  flock -u 9
}

passed=0 failed=0
while s=$(next_scenario); do
  take_solo_lock "$s"
  log "scenario $s"
  start=$SECONDS
  marker="$SCEN_OUT/.started-$s"; : >"$marker"
  # set -e holds inside the background subshell (it would not in an `if` condition); the
  # scenario's processes do not hold the lanes' lock.
  ( set -e; "$s" ) 9>&- &
  current=$!
  ( sleep "$SCEN_TIMEOUT"; stop_hung "$current" "$marker" ) &
  watchdog=$!
  if wait "$current"; then
    passed=$((passed + 1)); echo "ok   $s ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1)); echo "FAIL $s ($((SECONDS - start)) s)"
    # A scenario stopped mid-outage may leave a server it restarted down: the next ones
    # get it back.
    _port_busy "$ZK_PORT" || { log "restarting zookeeper"; zookeeper_start >/dev/null 2>&1 || true; }
    _port_busy "$ETCD_PORT" || { log "restarting etcd"; etcd_start >/dev/null 2>&1 || true; }
  fi
  kill -- "-$watchdog" 2>/dev/null || true; wait "$watchdog" 2>/dev/null || true
  drop_solo_lock "$s"
done
echo "$passed passed, $failed failed"
echo "$passed" >"$SCEN_OUT/passed"; echo "$failed" >"$SCEN_OUT/failed"
[ "$failed" = 0 ]
