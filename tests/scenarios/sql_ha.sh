# shellcheck shell=bash
# High availability of the SQL stores, sourced by run.sh: a PostgreSQL primary with a
# streaming standby (pg_basebackup), a MariaDB primary with a replica, both on 127.0.0.1
# and started here; Python, Node and `segflake serve` draw segment IDs through one URL
# naming both servers (`postgres://H1,H2/DB`, `mysql://U:P@H1,H2/DB`). The replication
# stream runs through tcp_proxy.py, which drops it for a while before the primary is killed
# -9 and the standby or replica promoted, so the promoted server lacks whatever the primary
# acknowledged without it. Every process must find the promoted server by itself.
#   ha_pg_sync   synchronous standby (remote_apply): 0 duplicates
#   ha_pg_async  asynchronous standby: what happens is reported (duplicates, the store-went-
#                back StoreContractViolation), not asserted
#   ha_mysql     MariaDB semi-synchronous replication (AFTER_SYNC): 0 duplicates
# Before the failover each scenario checks that a store and a registry whose only host is
# the read-only standby or replica refuse to write with the typed error, in Python, Node
# and the CLI (and on MariaDB also as root, whose SUPER would pass read_only).

HA_PIDS=()
HA_PG=()
HA_MY=()
ha_reap_on_exit() {
  trap 'kill -9 "${HA_PIDS[@]}" "${SERVE_PIDS[@]}" 2>/dev/null || true; ha_stop_servers' EXIT
}
ha_stop_servers() {
  local n
  for n in "${HA_PG[@]}"; do _pg_stop "$n" immediate; done
  for n in "${HA_MY[@]}"; do _stop_pidfile "$SERVICES_DIR/$n/mysqld.pid" 15 kill9 || true; done
  HA_PG=() HA_MY=()
}

# ha_proxy NAME LISTEN TARGET_PORT: tcp_proxy.py in the background (SIGUSR1 drops the bytes).
ha_proxy() {
  "$SCEN_PY" "$HERE/tcp_proxy.py" "$2" "127.0.0.1:$3" >"$SCEN_OUT/$1.log" 2>&1 &
  HA_PROXY=$!
  HA_PIDS+=("$HA_PROXY")
  wait_for_lines "$SCEN_OUT/$1.log" 10 && grep -q ready "$SCEN_OUT/$1.log" ||
    fail "the proxy $1 did not start: $(tail -n 2 "$SCEN_OUT/$1.log")"
}

# The scenario's processes: Python and Node workers (step 500 at 10,000 IDs/s: an
# allocation every 50 ms each) and `segflake serve` with an HTTP client, all on URL.
# Sets HA_WORKERS (PIDs) and HA_CLIENT_T0 (the HTTP client's start, Unix ms).
ha_workers() {
  local prefix=$1 db=$2 tag=$3 url=$4 secs=$5
  HA_WORKERS=()
  local env_var=SEGFLAKE_PG_DSN
  [ "$db" = mysql ] && env_var=SEGFLAKE_MYSQL_URL
  local n
  for n in 1 2; do
    env "$env_var=$url" "$SCEN_PY" "$HERE/worker.py" --db "$db" --tag "$tag" --rate 10000 --duration "$secs" --step 500 \
      --out "$SCEN_OUT/$prefix-py$n.ids" --summary "$SCEN_OUT/$prefix-py$n.json" 2>"$SCEN_OUT/$prefix-py$n.err" &
    HA_WORKERS+=($!)
    (cd "$SCEN_NODE_DIR" && exec env "$env_var=$url" node "$HERE/worker.mjs" --db "$db" --tag "$tag" --rate 10000 \
      --duration "$secs" --step 500 --out "$SCEN_OUT/$prefix-node$n.ids" --summary "$SCEN_OUT/$prefix-node$n.json") \
      2>"$SCEN_OUT/$prefix-node$n.err" &
    HA_WORKERS+=($!)
  done
  serve_start "$prefix-serve" --store "$url" --worker 1 --step 500 --dynamic-step false \
    --wait-timeout-ms 200 --store-timeout-ms 2000 --retry-backoff-ms 100
  HA_SERVE=$SERVE_PID
  HA_CLIENT_T0=$(now_ms)
  serve_client "$prefix-client" --url "$SERVE_URL" --key "$tag" --threads 2 --rate 1000 --duration "$((secs - 1))"
  HA_WORKERS+=($!)
}

# ha_verdict PREFIX KILLED_MS ASSERT(0|1) SUMMARY: checks and reports the run (each
# process's IDs, errors, and when its longest stall ended, from the kill of the primary);
# prints one line.
ha_verdict() {
  "$SCEN_PY" - "$SCEN_OUT" "$1" "$2" "$3" "$HA_CLIENT_T0" "$4" <<'PY'
import array, glob, json, os, sys
out, prefix, killed, must, client_t0, what = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", int(sys.argv[5]), sys.argv[6]
seen, total, dup, per = set(), 0, 0, []
for path in sorted(glob.glob(os.path.join(out, f"{prefix}-*.ids"))):
    name = os.path.basename(path)[len(prefix) + 1:-4]
    a = array.array("Q")
    a.frombytes(open(path, "rb").read()[: os.path.getsize(path) // 8 * 8])
    d = sum(1 for i in a if i in seen)
    seen.update(a)
    total += len(a)
    dup += d
    s = json.load(open(os.path.join(out, f"{prefix}-{name}.json")))
    if name == "client":
        bad = s["statuses"].get("503", 0)
        last = s.get("last_503_s")
        rec = None if last is None else client_t0 + int(last * 1000) - killed
        per.append((name, len(a), rec, {"503": bad} if bad else {}, s.get("messages", [])[:1]))
    else:
        rec = s["longest_stall_end_ms"] - killed if s.get("longest_stall_ms", 0) > 300 else None
        per.append((name, len(a), rec, s["errors"], s["error_messages"][:1]))
    if len(a) == 0:
        sys.exit(f"{prefix}-{name} issued nothing: {s}")
late = [n for n, _, rec, _, _ in per if rec is not None and rec > 15000]
parts = []
for n, k, rec, errs, msgs in per:
    if n == "client":
        r = "no 503" if rec is None else f"its last 503 {abs(rec)} ms {'after' if rec >= 0 else 'before'} the kill"
    else:
        r = "no stall over 300 ms" if rec is None else f"IDs again {rec} ms after the kill"
    parts.append(f"{n} {k} IDs, {r}" + (f", errors {errs}" if errs else ""))
msg = next((m[0] for _, _, _, e, m in per if m and "contract" in m[0].lower()), "")
print(f"{what}: {total} IDs, {dup} duplicates; " + "; ".join(parts) + (f'; a store-went-back refusal: "{msg[:200]}"' if msg else ""))
if must and dup:
    sys.exit(f"{dup} IDs issued twice ({what})")
if late:
    sys.exit(f"{late} did not recover within 15 s of the kill")
PY
}

# ---------------------------------------------------------------------------------------
# PostgreSQL

# ha_pg_pair MODE: a primary (ha-pg1) and a standby (ha-pg2) made with pg_basebackup,
# streaming through a proxy (HA_PROXY); MODE sync: synchronous_standby_names = '*' and
# synchronous_commit = remote_apply on the primary (set after the base backup, so the
# promoted standby does not wait for a standby of its own). Sets HA_P1, HA_P2, HA_URL.
ha_pg_pair() {
  local mode=$1 d1="$SERVICES_DIR/ha-pg1" d2="$SERVICES_DIR/ha-pg2"
  rm -rf "$d1" "$d2"
  HA_P1=$(_free_port 24349); HA_P2=$(_free_port $((HA_P1 + 1)))
  local xp; xp=$(_free_port $((HA_P2 + 1)))
  HA_PG+=(ha-pg1); _pg_start ha-pg1 "$HA_P1" || fail "the primary did not start"
  ha_proxy ha-pg-proxy "$xp" "$HA_P1"
  mkdir -p "$d2/sock" && chown -R postgres:postgres "$d2"
  (cd / && timeout 60 runuser -u postgres -- "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$HA_P1" -U postgres -D "$d2/data" -R \
    -X stream -c fast >"$SCEN_OUT/ha-pg-basebackup.log" 2>&1) || fail "pg_basebackup: $(tail -n 3 "$SCEN_OUT/ha-pg-basebackup.log")"
  # The standby streams through the proxy.
  sed -i "s/port=$HA_P1 /port=$xp /" "$d2/data/postgresql.auto.conf"
  grep -q "port=$xp " "$d2/data/postgresql.auto.conf" || fail "primary_conninfo: $(cat "$d2/data/postgresql.auto.conf")"
  HA_PG+=(ha-pg2); _pg_start ha-pg2 "$HA_P2" || fail "the standby did not start"
  local p1=(psql -h 127.0.0.1 -p "$HA_P1" -U postgres -d postgres -v ON_ERROR_STOP=1 -qAt)
  _wait_for 20 bash -c "[ \"\$(psql -h 127.0.0.1 -p $HA_P1 -U postgres -d postgres -qAt -c \"SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'\")\" = 1 ]" ||
    fail "the standby does not stream; its log: $(tail -n 5 "$d2/server.log"); the proxy: $(tail -n 3 "$SCEN_OUT/ha-pg-proxy.log")"
  if [ "$mode" = sync ]; then
    "${p1[@]}" -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "ALTER SYSTEM SET synchronous_commit = 'remote_apply'" \
      -c "SELECT pg_reload_conf()" >/dev/null
    _wait_for 20 bash -c "[ \"\$(psql -h 127.0.0.1 -p $HA_P1 -U postgres -d postgres -qAt -c \"SELECT sync_state FROM pg_stat_replication\")\" = sync ]" ||
      fail "the standby is not synchronous"
  fi
  "${p1[@]}" -c "$(cat "$ROOT/stores/sql/leaf_alloc.postgres.sql")" >/dev/null
  "${p1[@]}" -c "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('ha', 1, 500, 'scenario')" >/dev/null
  # The row reached the standby (the checks below read it there).
  _wait_for 20 bash -c "[ \"\$(psql -h 127.0.0.1 -p $HA_P2 -U postgres -d postgres -qAt -c \"SELECT count(*) FROM leaf_alloc WHERE biz_tag = 'ha'\")\" = 1 ]" ||
    fail "the standby lacks the tag's row"
  HA_URL="postgresql://postgres@127.0.0.1:$HA_P1,127.0.0.1:$HA_P2/postgres"
}

# ha_read_only_pg URL: a store and a registry whose only host is URL (the standby) refuse to
# write, with the typed error, in Python, Node and the CLI; prints what they said.
ha_read_only_pg() {
  local url=$1 py node cli
  py=$("$SCEN_PY" - "$url" <<'PY'
import sys, time
from segflake.registries import PostgresRegistry
from segflake.stores import PostgresStore, ReadOnlyServerError
url = sys.argv[1]
for what, call in (("store", lambda: PostgresStore(url).allocate("ha", 10)), ("registry", lambda: PostgresRegistry(url).claim(1, "ha-check", 3000))):
    t = time.monotonic()
    try:
        call()
    except ReadOnlyServerError as e:
        assert time.monotonic() - t < 5, "the refusal took too long"
        last = str(e)
        continue
    sys.exit(f"the Python {what} on the standby did not refuse with ReadOnlyServerError")
print(last)
PY
) || fail "Python: $py"
  node=$(cd "$SCEN_NODE_DIR" && node --input-type=module - "$url" <<'JS'
import { createRequire } from 'node:module'
const require = createRequire(process.cwd() + '/')
const { PgStore } = require('segflake/stores/pg')
const { PgRegistry } = require('segflake/registries')
const url = process.argv[2]
let last
for (const [what, make, call] of [
  ['store', () => new PgStore(url), (s) => s.allocate('ha', 10)],
  ['registry', () => new PgRegistry(url), (r) => r.claim(1, 'ha-check', 3000)],
]) {
  const it = make()
  try {
    await call(it)
    console.error(`the Node ${what} on the standby wrote`)
    process.exit(1)
  } catch (e) {
    if (e.code !== 'READ_ONLY_SERVER') {
      console.error(`the Node ${what}: ${e.code} ${e.message}`)
      process.exit(1)
    }
    last = e.message
  } finally {
    await it.close()
  }
}
console.log(last)
JS
) || fail "Node: $node"
  cli=$("$SCEN_CLI" segment --store "$url" --tag ha --count 1 2>&1) && fail "the CLI issued from the standby: $cli"
  grep -q "the server is read-only" <<<"$cli" || fail "the CLI's refusal does not say the server is read-only: $cli"
  echo "Python: \"${py:0:160}\"; Node: \"${node:0:160}\"; CLI: \"$(grep -m1 'read-only' <<<"$cli" | cut -c1-160)\""
}

ha_pg() {
  local mode=$1 prefix="ha-pg-$1"
  ha_reap_on_exit
  ha_pg_pair "$mode"
  local refusal; refusal=$(ha_read_only_pg "postgresql://postgres@127.0.0.1:$HA_P2/postgres")
  ha_workers "$prefix" pg ha "$HA_URL" 12
  sleep 3
  # The replication stream is dropped for 2 s while the processes keep allocating, then
  # the primary is killed and the standby promoted.
  kill -USR1 "$HA_PROXY"
  sleep 2
  local t_kill; t_kill=$(now_ms)
  _pg_stop ha-pg1 kill9
  (cd / && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$SERVICES_DIR/ha-pg2/data" -w -t 20 promote >/dev/null) || fail "pg_ctl promote failed"
  local t_promoted; t_promoted=$(now_ms)
  wait_all "${HA_WORKERS[@]}"
  serve_stop "$HA_SERVE" "$prefix-serve"
  local must=0 what="asynchronous standby"
  [ "$mode" = sync ] && must=1 what="synchronous standby (remote_apply)"
  local verdict; verdict=$(ha_verdict "$prefix" "$t_kill" "$must" "$what") || fail "$verdict"
  note "ha_pg_$mode: $verdict; primary killed, standby promoted $((t_promoted - t_kill)) ms later; on the standby alone: $refusal"
}
ha_pg_sync() { ha_pg sync; }
ha_pg_async() { ha_pg async; }

# ---------------------------------------------------------------------------------------
# MariaDB

# ha_my_start NAME PORT ARGS...: a MariaDB server of its own (data dir, socket, pid file).
ha_my_start() {
  local name=$1 port=$2 d="$SERVICES_DIR/$1"; shift 2
  rm -rf "$d" && mkdir -p "$d/data" "$d/tmp"
  mariadb-install-db --no-defaults --user=root --datadir="$d/data" --tmpdir="$d/tmp" --auth-root-authentication-method=normal \
    >"$d/install.log" 2>&1 || fail "mariadb-install-db $name: $(tail -n 3 "$d/install.log")"
  mariadbd --no-defaults --user=root --datadir="$d/data" --tmpdir="$d/tmp" --socket="$d/mysqld.sock" \
    --port="$port" --bind-address=127.0.0.1 --pid-file="$d/mysqld.pid" --innodb-flush-log-at-trx-commit=1 \
    --skip-name-resolve "$@" >"$d/server.log" 2>&1 &
  HA_MY+=("$name")
  _wait_for 30 mariadb --no-defaults -uroot --socket="$d/mysqld.sock" -e "SELECT 1" || fail "$name did not start"
}
ha_my() { local name=$1; shift; mariadb --no-defaults -uroot --socket="$SERVICES_DIR/$name/mysqld.sock" -N -B "$@"; }

ha_mysql() {
  ha_reap_on_exit
  local m1 m2 xp prefix=ha-mysql
  m1=$(_free_port 26079); m2=$(_free_port $((m1 + 1))); xp=$(_free_port $((m2 + 1)))
  ha_my_start ha-my1 "$m1" --server-id=1 --log-bin=mysql-bin --binlog-format=ROW
  ha_my_start ha-my2 "$m2" --server-id=2 --log-bin=mysql-bin --binlog-format=ROW --read-only=ON \
    --rpl-semi-sync-slave-enabled=ON
  ha_proxy ha-my-proxy "$xp" "$m1"
  local file pos
  read -r file pos _ < <(ha_my ha-my1 -e "SHOW MASTER STATUS")
  ha_my ha-my1 -e "
    CREATE USER 'repl'@'%' IDENTIFIED BY 'repl'; GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%';
    CREATE DATABASE segflake;
    CREATE USER 'segflake'@'%' IDENTIFIED BY 'segflake'; GRANT ALL ON segflake.* TO 'segflake'@'%';
    CREATE USER 'admin'@'%' IDENTIFIED BY 'admin'; GRANT ALL ON *.* TO 'admin'@'%';"
  ha_my ha-my2 -e "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$xp, MASTER_USER='repl', MASTER_PASSWORD='repl',
    MASTER_LOG_FILE='$file', MASTER_LOG_POS=$pos; START SLAVE;"
  ha_my ha-my1 segflake -e "$(cat "$ROOT/stores/sql/leaf_alloc.mysql.sql");
    INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('ha', 1, 500, 'scenario')"
  _wait_for 20 bash -c "[ \"\$(mariadb --no-defaults -uroot --socket=$SERVICES_DIR/ha-my2/mysqld.sock -N -B segflake -e \"SELECT count(*) FROM leaf_alloc WHERE biz_tag = 'ha'\" 2>/dev/null)\" = 1 ]" ||
    fail "the replica lacks the tag's row"
  # Then semi-synchronous replication, the lossless kind (the primary acknowledges a commit
  # only once the replica has its events), with a timeout long enough never to fall back
  # to asynchronous replication during the run (turned on once the replica has caught up:
  # the set-up's commits would wait for it otherwise). The replica reconnects to speak it.
  ha_my ha-my1 -e "SET GLOBAL rpl_semi_sync_master_wait_point = AFTER_SYNC; SET GLOBAL rpl_semi_sync_master_timeout = 60000;
    SET GLOBAL rpl_semi_sync_master_enabled = ON"
  ha_my ha-my2 -e "STOP SLAVE IO_THREAD; START SLAVE IO_THREAD"
  _wait_for 20 bash -c "mariadb --no-defaults -uroot --socket=$SERVICES_DIR/ha-my1/mysqld.sock -N -B -e \"SHOW STATUS LIKE 'Rpl_semi_sync_master_%'\" |
    awk '\$1 == \"Rpl_semi_sync_master_clients\" {c=\$2} \$1 == \"Rpl_semi_sync_master_status\" {s=\$2} END {exit !(c == 1 && s == \"ON\")}'" ||
    fail "the replica is not semi-synchronous"
  # On the replica alone: refused with the typed error, also for a user whose privileges
  # pass read_only (ALL ON *.*, SUPER included), which only the explicit check stops.
  local replica="mysql://segflake:segflake@127.0.0.1:$m2/segflake" admin="mysql://admin:admin@127.0.0.1:$m2/segflake"
  local py node cli
  py=$("$SCEN_PY" - "$replica" "$admin" <<'PY'
import sys
from segflake.registries import MySQLRegistry
from segflake.stores import MySQLStore, ReadOnlyServerError
last = ""
for url in sys.argv[1:]:
    for what, call in (("store", lambda: MySQLStore(url).allocate("ha", 10)), ("registry", lambda: MySQLRegistry(url).claim(1, "ha-check", 3000))):
        try:
            call()
        except ReadOnlyServerError as e:
            last = str(e)
            continue
        sys.exit(f"the Python {what} on the replica ({url.split('@')[0]}) did not refuse with ReadOnlyServerError")
print(last)
PY
) || fail "Python: $py"
  node=$(cd "$SCEN_NODE_DIR" && node --input-type=module - "$replica" "$admin" <<'JS'
import { createRequire } from 'node:module'
const require = createRequire(process.cwd() + '/')
const { MySQLStore } = require('segflake/stores/mysql')
const { MysqlRegistry } = require('segflake/registries')
let last
for (const url of process.argv.slice(2)) {
  for (const [what, make, call] of [
    ['store', () => new MySQLStore(url), (s) => s.allocate('ha', 10)],
    ['registry', () => new MysqlRegistry(url), (r) => r.claim(1, 'ha-check', 3000)],
  ]) {
    const it = make()
    try {
      await call(it)
      console.error(`the Node ${what} on the replica wrote`)
      process.exit(1)
    } catch (e) {
      if (e.code !== 'READ_ONLY_SERVER') {
        console.error(`the Node ${what}: ${e.code} ${e.message}`)
        process.exit(1)
      }
      last = e.message
    } finally {
      await it.close()
    }
  }
}
console.log(last)
JS
) || fail "Node: $node"
  local u
  for u in "$replica" "$admin"; do
    cli=$("$SCEN_CLI" segment --store "$u" --tag ha --count 1 2>&1) && fail "the CLI issued from the replica: $cli"
    grep -q "the server is read-only" <<<"$cli" || fail "the CLI's refusal does not say the server is read-only: $cli"
  done
  [ "$(ha_my ha-my2 segflake -e "SELECT max_id FROM leaf_alloc WHERE biz_tag = 'ha'")" = 1 ] || fail "the replica's row was written"
  local url="mysql://segflake:segflake@127.0.0.1:$m1,127.0.0.1:$m2/segflake"
  ha_workers "$prefix" mysql ha "$url" 12
  sleep 3
  kill -USR1 "$HA_PROXY"
  sleep 2
  # Still semi-synchronous at the kill: no commit was acknowledged without the replica.
  local semi; semi=$(ha_my ha-my1 -e "SHOW STATUS LIKE 'Rpl_semi_sync_master_%'" |
    awk '$1 ~ /_(status|no_tx|yes_tx|wait_sessions)$/ {sub("Rpl_semi_sync_master_", "", $1); printf "%s=%s ", $1, $2}')
  [[ $semi == *"no_tx=0 "* && $semi == *"status=ON "* ]] || fail "the primary fell back to asynchronous replication: $semi"
  local t_kill; t_kill=$(now_ms)
  _stop_pidfile "$SERVICES_DIR/ha-my1/mysqld.pid" 15 kill9
  # Promotion: the replica applies every event it received (its relay log), then takes writes.
  ha_my ha-my2 -e "STOP SLAVE IO_THREAD"
  _wait_for 20 bash -c "mariadb --no-defaults -uroot --socket=$SERVICES_DIR/ha-my2/mysqld.sock -e 'SHOW SLAVE STATUS\\G' |
    awk '/ Read_Master_Log_Pos:/ {r=\$2} / Exec_Master_Log_Pos:/ {e=\$2} END {exit !(r == e)}'" || fail "the replica did not apply its relay log"
  ha_my ha-my2 -e "STOP SLAVE; SET GLOBAL read_only = 0"
  local t_promoted; t_promoted=$(now_ms)
  wait_all "${HA_WORKERS[@]}"
  serve_stop "$HA_SERVE" "$prefix-serve"
  local verdict; verdict=$(ha_verdict "$prefix" "$t_kill" 1 "MariaDB semi-synchronous replica") || fail "$verdict"
  note "ha_mysql: $verdict; at the kill the primary had: ${semi% }; replica promoted $((t_promoted - t_kill)) ms later; on the replica alone (also as a user with SUPER): Python \"${py:0:160}\"; Node \"${node:0:160}\"; CLI \"$(grep -m1 'read-only' <<<"$cli" | cut -c1-160)\""
}
