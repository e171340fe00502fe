# shellcheck shell=bash
# Worker-ID lease scenarios, sourced by run.sh: lease workers in Python, Node and C
# (tests/scenarios/lease_worker.{py,mjs} and examples/c/redis_registry.c, Redis only) take their worker
# IDs from a real Redis, PostgreSQL or MariaDB registry while processes are SIGKILLed,
# SIGSTOPped past their lease, the registry goes down, and clocks run behind. Every
# scenario checks that no ID was issued twice. Workers write one decimal ID per line to
# $SCEN_OUT/NAME.txt and a summary to $SCEN_OUT/NAME.json on a clean exit.

# reap_on_exit: a scenario that fails leaves no lease worker behind (stopped ones
# included), so none holds a worker ID in the scenarios after it. Only the workers: a
# server the scenario restarted keeps running.
LEASE_PIDS=()
reap_on_exit() { trap 'kill -9 "${LEASE_PIDS[@]}" 2>/dev/null || true' EXIT; }

# registry_url DB [IDENTITY_PORT [SESSION_TIMEOUT_MS]]: the URL every language's lease
# worker takes. ZooKeeper's assigns worker IDs by Leaf node identity (127.0.0.1:PORT,
# default 8000) and carries the session timeout (default 2000 ms, the leases' TTL).
ZK_ROOT=/snowflake/segflake-scenarios
ETCD_PREFIX=/segflake-scenarios
registry_url() {
  case $1 in
    redis) echo "$SEGFLAKE_REDIS_URL" ;;
    pg) echo "postgres://${SEGFLAKE_PG_DSN#*://}" ;;
    mysql) echo "mysql://$SEGFLAKE_MYSQL_USER:$SEGFLAKE_MYSQL_PASSWORD@$SEGFLAKE_MYSQL_HOST:$SEGFLAKE_MYSQL_PORT/$SEGFLAKE_MYSQL_DB" ;;
    zk) echo "zk://$SEGFLAKE_ZK_HOSTS$ZK_ROOT?identity=127.0.0.1:${2:-8000}&session_timeout_ms=${3:-2000}" ;;
    etcd) echo "etcd://$SEGFLAKE_ETCD_ENDPOINT$ETCD_PREFIX" ;;
  esac
}

# leaf_zk ARGS...: tests/scenarios/leaf_snowflake.py (a Leaf snowflake node; ZooKeeper tools).
leaf_zk() { "$SCEN_PY" "$HERE/leaf_snowflake.py" "$1" --zk "$SEGFLAKE_ZK_HOSTS" "${@:2}"; }
etcd_ctl() { ETCDCTL_API=3 etcdctl --endpoints "$SEGFLAKE_ETCD_ENDPOINT" "$@"; }

# reset_registry DB: no leases and no marks (the schema exists).
reset_registry() {
  case $1 in
    redis) redis_cmd --scan --pattern '{segflake}:*' | xargs -r redis-cli -u "$SEGFLAKE_REDIS_URL" DEL >/dev/null ;;
    pg) pg_sql "$(cat "$ROOT/stores/sql/worker_lease.postgres.sql")" >/dev/null
        pg_sql "DELETE FROM segflake_worker_lease" ;;
    mysql) my_sql "$(cat "$ROOT/stores/sql/worker_lease.mysql.sql")" >/dev/null
           my_sql "DELETE FROM segflake_worker_lease" ;;
    zk) leaf_zk reset --root "$ZK_ROOT" ;;
    etcd) etcd_ctl del --prefix "$ETCD_PREFIX/" >/dev/null ;;
  esac
}

# lease_held DB WORKER_ID: prints the owner holding the ID now, or nothing.
lease_held() {
  case $1 in
    redis) redis_cmd GET "{segflake}:worker:$2" ;;
    pg) pg_sql "SELECT owner FROM segflake_worker_lease WHERE worker_id = $2 AND owner IS NOT NULL AND expires_at > now()" ;;
    mysql) my_sql "SELECT owner FROM segflake_worker_lease WHERE worker_id = $2 AND owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(3)" ;;
    zk) leaf_zk held --root "$ZK_ROOT" --worker "$2" ;;
    etcd) etcd_ctl get --print-value-only "$ETCD_PREFIX/worker/$2" ;;
  esac
}

# lease_worker LANG NAME ARGS...: a lease worker in the background; sets $!.
lease_worker() {
  local lang=$1 name=$2; shift 2
  local io=(--out "$SCEN_OUT/$name.txt" --summary "$SCEN_OUT/$name.json")
  rm -f "$SCEN_OUT/$name".{txt,json,err}
  case $lang in
    py) "$SCEN_PY" "$HERE/lease_worker.py" "${io[@]}" "$@" 2>"$SCEN_OUT/$name.err" & ;;
    node) (cd "$SCEN_NODE_DIR" && exec node "$HERE/lease_worker.mjs" "${io[@]}" "$@") 2>"$SCEN_OUT/$name.err" & ;;
    c) "$SCEN_C_DIR/lease_worker" "${io[@]}" "$@" 2>"$SCEN_OUT/$name.err" & ;;
  esac
  LEASE_PIDS+=($!)
}

# lease_langs DB: the languages whose lease workers speak DB.
lease_langs() { if [ "$1" = redis ]; then echo "py node c"; else echo "py node"; fi; }

# wait_for_lines FILE SECONDS: waits until FILE has a line; fails after SECONDS.
wait_for_lines() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [ "$(lines "$1")" -gt 0 ] && return 0
    sleep 0.1
  done
  return 1
}

# lines FILE: complete lines in FILE (0 if missing).
lines() { if [ -f "$1" ]; then grep -c '' "$1" || true; else echo 0; fi; }

# summaries FIELD NAME...: a figure over the summaries of the named workers that exited
# cleanly (missing summaries count as nothing).
lease_sum() {
  "$SCEN_PY" - "$SCEN_OUT" "$@" <<'PY'
import json, os, sys
out, what, names = sys.argv[1], sys.argv[2], sys.argv[3:]
total = 0
for n in names:
    p = os.path.join(out, n + ".json")
    if not os.path.exists(p):
        continue
    s = json.load(open(p))
    if what == "ids":
        total += s.get("ids", 0)
    elif what.startswith("error:"):
        total += s.get("errors", {}).get(what[6:], 0)
print(total)
PY
}

# Contention: 12 processes in every language the registry speaks contend for 8 worker IDs
# (3 worker bits, 2 s leases). Every 1.5 s one live holder is SIGKILLed and a new process
# starts; the waiting ones take the freed IDs once the killed holder's lease ran out,
# starting above its mark. Processes that find no free ID within their claim wait exit
# with NoFreeWorkerId (counted). No ID is issued twice.
lease_contention() {
  reap_on_exit
  local db=$1 url n=0 kills=0 refused=0 killed=0
  url=$(registry_url "$db"); reset_registry "$db"
  read -r -a langs <<<"$(lease_langs "$db")"
  declare -A pid_of=() was_killed=()
  local names=()
  if [ "$db" = zk ]; then
    # A Leaf fleet's 8 node identities (worker IDs 0-7); processes share them in turn.
    leaf_zk fleet --root "$ZK_ROOT" --identities "$(seq -s, -f '127.0.0.1:%g' 8000 8007)"
  fi
  start_one() {
    local lang=${langs[$((n % ${#langs[@]}))]} name="$db-contend-$n" u=$url
    [ "$db" = zk ] && u=$(registry_url zk $((8000 + n % 8)))
    lease_worker "$lang" "$name" --registry "$u" --worker-bits 3 --lease-ttl-ms 2000 --pause-ms 2
    pid_of[$name]=$!; names+=("$name"); n=$((n + 1))
  }
  for _ in $(seq 12); do start_one; done
  local t0=$SECONDS
  for _ in $(seq 8); do
    sleep 1.5
    # A live process that is issuing IDs (holds a worker ID); on a loaded machine the
    # first ones may take a few seconds to start. Never one already SIGKILLed: until it
    # is reaped (or while it waits on the disk) it still answers kill -0.
    local victim="" name tries
    for ((tries = 0; tries < 100 && ${#victim} == 0; tries++)); do
      for name in "${names[@]}"; do
        [ -z "${was_killed[$name]:-}" ] || continue
        kill -0 "${pid_of[$name]}" 2>/dev/null || continue
        [ "$(lines "$SCEN_OUT/$name.txt")" -gt 0 ] || continue
        victim=$name; break
      done
      [ -n "$victim" ] || sleep 0.1
    done
    [ -n "$victim" ] || fail "no live process was issuing IDs after 10 s"
    kill -9 "${pid_of[$victim]}"; kills=$((kills + 1)); was_killed[$victim]=1
    start_one
  done
  sleep 6
  local name status
  for name in "${names[@]}"; do kill -TERM "${pid_of[$name]}" 2>/dev/null || true; done
  for name in "${names[@]}"; do
    status=0; wait "${pid_of[$name]}" || status=$?
    case $status in
      0) ;;
      137) killed=$((killed + 1)) ;;
      3) grep -q 'NoFreeWorkerId\|NO_FREE_WORKER_ID' "$SCEN_OUT/$name.err" || fail "$name: $(stderr_of "$name")"
         refused=$((refused + 1)) ;;
      *) fail "$name exited with $status: $(stderr_of "$name")" ;;
    esac
  done
  [ "$killed" = "$kills" ] || fail "$kills processes were SIGKILLed, $killed ended by SIGKILL"
  local files=() issuing=0
  for name in "${names[@]}"; do
    # A process refused at start-up may have written no file (it issued nothing).
    [ -f "$SCEN_OUT/$name.txt" ] && files+=("$SCEN_OUT/$name.txt")
    [ "$(lines "$SCEN_OUT/$name.txt")" -gt 0 ] && issuing=$((issuing + 1))
  done
  [ "$issuing" -ge 12 ] || fail "only $issuing of ${#names[@]} processes issued IDs"
  local line; line=$(check_ids --text "${files[@]}") || fail "$line"
  note "lease_contention[$db]: ${#names[@]} processes (${langs[*]}) for 8 worker IDs, $kills SIGKILLed and replaced, $issuing issued IDs, $refused refused with NoFreeWorkerId; $line; $((SECONDS - t0)) s"
}
lease_contention_redis() { lease_contention redis; }
lease_contention_pg() { lease_contention pg; }
lease_contention_mysql() { lease_contention mysql; }
lease_contention_zk() { lease_contention zk; }
lease_contention_etcd() { lease_contention etcd; }

# Paused past the lease: a holder of the only worker ID (0 worker bits) is SIGSTOPped for
# longer than its lease; a successor takes the ID, waits for its clock to pass the paused
# holder's write-ahead mark, and issues; the paused holder is resumed, issues at most up
# to its mark, then stops with LeaseExpired. Every successor ID is above every ID of the
# paused holder.
lease_paused() {
  reap_on_exit
  local db=$1 url
  url=$(registry_url "$db" 8000 1000); reset_registry "$db"
  local lang_a=py lang_b=node
  lease_worker "$lang_a" "$db-paused-a" --registry "$url" --worker-bits 0 --lease-ttl-ms 1000 --pause-ms 1
  local a=$!
  wait_for_lines "$SCEN_OUT/$db-paused-a.txt" 20 || fail "the first holder issued nothing: $(stderr_of "$db-paused-a")"
  sleep 1
  kill -STOP "$a"
  local before; before=$(lines "$SCEN_OUT/$db-paused-a.txt")
  sleep 2
  lease_worker "$lang_b" "$db-paused-b" --registry "$url" --worker-bits 0 --lease-ttl-ms 1000 --pause-ms 1
  local b=$!
  wait_for_lines "$SCEN_OUT/$db-paused-b.txt" 20 || fail "the successor issued nothing: $(stderr_of "$db-paused-b")"
  sleep 1
  kill -CONT "$a"
  sleep 3
  kill -TERM "$a" "$b"
  wait "$a" || fail "the paused holder failed: $(stderr_of "$db-paused-a")"
  wait "$b" || fail "the successor failed: $(stderr_of "$db-paused-b")"
  local expired; expired=$(lease_sum error:LeaseExpired "$db-paused-a")
  [ "$expired" -gt 0 ] || fail "the resumed holder never reported LeaseExpired"
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT/$db-paused-a.txt" "$SCEN_OUT/$db-paused-b.txt" "$before" <<'PY'
import sys
def ids(p):
    return [int(x) for x in open(p, "rb").read().split(b"\n")[:-1]]
a, b, before = ids(sys.argv[1]), ids(sys.argv[2]), int(sys.argv[3])
late = len(a) - before
if not b or min(b) <= max(a):
    sys.exit(f"a successor ID ({min(b)}) is not above the paused holder's last ({max(a)})")
print(f"paused holder: {before} IDs written before the pause, {late} more written after it resumed "
      f"(all below every successor ID); successor: {len(b)} IDs")
PY
) || fail "$verdict"
  local line; line=$(check_ids --text "$SCEN_OUT/$db-paused-a.txt" "$SCEN_OUT/$db-paused-b.txt") || fail "$line"
  note "lease_paused[$db]: $verdict; the resumed holder got LeaseExpired $expired times; $line"
}
lease_paused_redis() { lease_paused redis; }
lease_paused_pg() { lease_paused pg; }
lease_paused_mysql() { lease_paused mysql; }
lease_paused_zk() { lease_paused zk; }
lease_paused_etcd() { lease_paused etcd; }

# Registry outage: four holders (Python and Node) issue while the registry is stopped
# (MODE) for 5 s, longer than their 2 s lease: each stops with LeaseExpired (no ID above
# its accepted mark), one is SIGKILLed mid-outage and replaced once the registry is back;
# all resume by themselves. No ID is issued twice.
lease_outage() {
  reap_on_exit
  local db=$1 mode=$2 names=() pids=() n
  # Distinct Leaf identities on ZooKeeper (ports 8000-8003); the replacement takes the
  # SIGKILLed holder's.
  reset_registry "$db"
  for n in py1 node1 py2 node2; do
    lease_worker "${n%?}" "$db-out-$n" --registry "$(registry_url "$db" $((8000 + ${#pids[@]})))" \
      --worker-bits 3 --lease-ttl-ms 2000 --pause-ms 2
    pids+=($!); names+=("$db-out-$n")
  done
  # All four issue before the outage (a first claim of a worker ID without a mark waits
  # about 5 s: it starts above claim time + max_drift_ms + mark_ahead_ms + skew).
  for n in "${names[@]}"; do
    wait_for_lines "$SCEN_OUT/$n.txt" 20 || fail "$n issued nothing before the outage: $(stderr_of "$n")"
  done
  sleep 1
  svc_stop "$db" "$mode"
  local t0=$SECONDS
  sleep 2.5
  kill -9 "${pids[3]}"
  sleep 2.5
  local during=()
  for n in "${names[@]}"; do during+=("$(lines "$SCEN_OUT/$n.txt")"); done
  svc_start "$db"
  local down=$((SECONDS - t0))
  lease_worker py "$db-out-py3" --registry "$(registry_url "$db" 8003)" --worker-bits 3 --lease-ttl-ms 2000 --pause-ms 2
  local replacement=$!
  sleep 8
  kill -TERM "${pids[0]}" "${pids[1]}" "${pids[2]}" "$replacement"
  local i
  for i in 0 1 2; do wait "${pids[$i]}" || fail "${names[$i]} failed: $(stderr_of "${names[$i]}")"; done
  wait "${pids[3]}" 2>/dev/null || true
  wait "$replacement" || fail "the replacement failed: $(stderr_of "$db-out-py3")"
  for i in 0 1 2; do
    local after; after=$(lines "$SCEN_OUT/${names[$i]}.txt")
    [ "$after" -gt "${during[$i]}" ] || fail "${names[$i]} did not resume after the outage"
  done
  [ "$(lines "$SCEN_OUT/$db-out-py3.txt")" -gt 0 ] || fail "the replacement issued nothing: $(stderr_of "$db-out-py3")"
  local expired; expired=$(lease_sum error:LeaseExpired "${names[@]:0:3}")
  [ "$expired" -gt 0 ] || fail "no holder reported LeaseExpired during a ${down} s outage"
  local files=(); for n in "${names[@]}" "$db-out-py3"; do files+=("$SCEN_OUT/$n.txt"); done
  local line; line=$(check_ids --text "${files[@]}") || fail "$line"
  note "lease_outage[$db,$mode]: registry down ${down} s (2 s leases): $expired LeaseExpired refusals, all 3 survivors resumed, the SIGKILLed holder's replacement issued $(lines "$SCEN_OUT/$db-out-py3.txt"); $line"
}
lease_outage_redis_kill9() { lease_outage redis kill9; }
lease_outage_pg_fast() { lease_outage pg fast; }
lease_outage_mysql_graceful() { lease_outage mysql graceful; }
lease_outage_zk_kill9() { lease_outage zk kill9; }
lease_outage_etcd_kill9() { lease_outage etcd kill9; }

# Frozen registry: ZooKeeper is SIGSTOPped (a GC pause, a paused VM) while a process makes
# its first registry call. The call fails within the registry timeout, ZooKeeper resumes
# at once, and the process lives on: its next call succeeds. (node-zookeeper-client
# threw from its socket handler, out of reach, when the answer to a connect request it was
# closing arrived after the resume, and the process died.) Node and Python each.
lease_frozen_registry_zk() {
  local zk_pid lang
  zk_pid=$(cat "$SERVICES_DIR/zookeeper/zk.pid")
  trap "kill -CONT $zk_pid 2>/dev/null || true" EXIT
  reset_registry zk
  for lang in node py; do
    local out="$SCEN_OUT/frozen-$lang.err" status=0
    if [ "$lang" = node ]; then
      ( cd "$SCEN_NODE_DIR" && exec node --input-type=module - "$(registry_url zk)" "$zk_pid" ) >"$out" 2>&1 <<'JS' || status=$?
import { createRequire } from 'node:module'
import path from 'node:path'
const require = createRequire(path.join(process.cwd(), 'noop.js'))
const { registryFromUrl } = require('segflake/registries')
const [url, pid] = process.argv.slice(2)
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const registry = registryFromUrl(url, { timeoutMs: 3000 })
process.kill(Number(pid), 'SIGSTOP')
const t0 = Date.now()
try {
  await registry.claim({ workerId: 0, owner: 'frozen', ttlMs: 2000 })
  console.log('FROZEN-CALL-ANSWERED')
} catch (e) {
  console.log(`frozen: refused after ${Date.now() - t0} ms: ${e.message}`)
}
process.kill(Number(pid), 'SIGCONT')
await sleep(3000)
const answer = await registry.claim({ workerId: 0, owner: 'frozen', ttlMs: 2000 })
console.log(`resumed: ${JSON.stringify(answer)}`)
await registry.release({ workerId: 0, owner: 'frozen', markMs: 0 })
await registry.close()
JS
    else
      "$SCEN_PY" - "$(registry_url zk)" "$zk_pid" >"$out" 2>&1 <<'PY' || status=$?
import os, signal, sys, time
from segflake.registries import from_url
url, pid = sys.argv[1], int(sys.argv[2])
registry = from_url(url)
os.kill(pid, signal.SIGSTOP)
t0 = time.monotonic()
try:
    registry.claim(0, "frozen", 2000)
    print("FROZEN-CALL-ANSWERED")
except Exception as e:
    print(f"frozen: refused after {int((time.monotonic() - t0) * 1000)} ms: {e}")
os.kill(pid, signal.SIGCONT)
time.sleep(3)
print(f"resumed: {registry.claim(0, 'frozen', 2000)}")
registry.release(0, "frozen", 0)
registry.close()
PY
    fi
    kill -CONT "$zk_pid" 2>/dev/null || true
    [ "$status" = 0 ] || fail "the $lang process died after ZooKeeper resumed (status $status): $(stderr_of "frozen-$lang")"
    ! grep -q FROZEN-CALL-ANSWERED "$out" || fail "a call to a frozen ZooKeeper was answered"
    local ms; ms=$(sed -n 's/^frozen: refused after \([0-9]*\) ms.*/\1/p' "$out")
    [ -n "$ms" ] && [ "$ms" -le 4000 ] || fail "the $lang call to a frozen ZooKeeper was not refused within 4 s: $(cat "$out")"
    grep -q '^resumed: .*\(workerId\|worker_id\).*0' "$out" || fail "the $lang process got no worker ID after the resume: $(stderr_of "frozen-$lang")"
    note "lease_frozen_registry_zk[$lang]: $(grep '^frozen:' "$out" | cut -c1-160); $(grep '^resumed:' "$out")"
  done
}

# Clock behind the mark: a holder of the only worker ID runs and stops (releasing it at
# its last ID's time); a process whose clock is 60 s behind (libfaketime) is refused with
# ClockBehindMark and leaves the ID free; a process with the right clock then starts.
# Then a mark in the year 2100 (a registry that answers nonsense) is refused the same way.
lease_clock_behind() {
  reap_on_exit
  local db=$1 url
  [ -n "$FAKETIME_LIB" ] || fail "libfaketime is not installed (Debian package faketime)"
  url=$(registry_url "$db"); reset_registry "$db"
  lease_worker node "$db-clk-a" --registry "$url" --worker-bits 0 --count 20000
  wait $! || fail "the first holder failed: $(stderr_of "$db-clk-a")"
  local status=0
  LD_PRELOAD=$FAKETIME_LIB FAKETIME="-60s" DONT_FAKE_MONOTONIC=1 \
    "$SCEN_PY" "$HERE/lease_worker.py" --registry "$url" --worker-bits 0 --count 1000 \
    --out "$SCEN_OUT/$db-clk-b.txt" --summary "$SCEN_OUT/$db-clk-b.json" 2>"$SCEN_OUT/$db-clk-b.err" || status=$?
  [ "$status" = 3 ] || fail "a clock 60 s behind the mark was not refused at start-up (status $status): $(stderr_of "$db-clk-b")"
  grep -q 'ClockBehindMark\|CLOCK_BEHIND_MARK' "$SCEN_OUT/$db-clk-b.err" || fail "not ClockBehindMark: $(stderr_of "$db-clk-b")"
  [ "$(lines "$SCEN_OUT/$db-clk-b.txt")" = 0 ] || fail "the refused process wrote IDs"
  [ -z "$(lease_held "$db" 0)" ] || fail "the refused process kept the worker ID"
  lease_worker py "$db-clk-c" --registry "$url" --worker-bits 0 --count 1000
  wait $! || fail "a process with the right clock failed: $(stderr_of "$db-clk-c")"
  local line; line=$(check_ids --text "$SCEN_OUT/$db-clk-a.txt" "$SCEN_OUT/$db-clk-c.txt") || fail "$line"
  local msg; msg=$(grep -m1 -o 'ClockBehindMark.*\|CLOCK_BEHIND_MARK.*' "$SCEN_OUT/$db-clk-b.err" | cut -c1-160)
  note "lease_clock_behind[$db]: 60 s behind: refused (\"$msg\"), the ID left free; then the right clock started above the mark; $line"
}
lease_clock_behind_redis() { lease_clock_behind redis; }
lease_clock_behind_pg() { lease_clock_behind pg; }
lease_clock_behind_mysql() { lease_clock_behind mysql; }
lease_clock_behind_zk() { lease_clock_behind zk; }
lease_clock_behind_etcd() { lease_clock_behind etcd; }

# A registry answering nonsense (Redis): a mark in the year 2100 is refused as
# ClockBehindMark in every language and by the CLI; nothing is issued.
lease_bad_registry() {
  reap_on_exit
  local url; url=$(registry_url redis); reset_registry redis
  redis_cmd SET '{segflake}:mark:0' 4102444800000 >/dev/null
  local lang status out=()
  for lang in py node c; do
    status=0
    lease_worker "$lang" "bad-$lang" --registry "$url" --worker-bits 0 --count 10
    wait $! || status=$?
    [ "$status" = 3 ] || fail "$lang: a mark in 2100 was not refused (status $status): $(stderr_of "bad-$lang")"
    grep -q 'ClockBehindMark\|CLOCK_BEHIND_MARK' "$SCEN_OUT/bad-$lang.err" || fail "$lang: $(stderr_of "bad-$lang")"
    [ "$(lines "$SCEN_OUT/bad-$lang.txt")" = 0 ] || fail "$lang issued IDs"
    out+=("$lang")
  done
  local cli_err
  cli_err=$("$SCEN_CLI" next --registry "$url" --worker-bits 0 --clock-wait-ms 100 2>&1) && fail "the CLI issued an ID: $cli_err"
  grep -q CLOCK_BEHIND_MARK <<<"$cli_err" || fail "CLI: $cli_err"
  out+=(cli)
  note "lease_bad_registry: a mark in 2100 refused with ClockBehindMark by ${out[*]}, no ID issued"
}

# The CLI on each registry (on ZooKeeper, 8 Leaf node identities): 8 runs started at once
# for the 8 worker IDs of 3 worker bits issue 20,000 IDs each; runs that overlap hold different worker IDs, a run that reuses a
# released ID issues above its predecessor, and so does a rerun preferring one of them; SQL
# registries gain one WORKER_NODE audit row per claim. The five registries are separate
# servers: they run at once.
lease_cli() {
  local db pids=() status
  for db in redis pg mysql zk etcd; do
    lease_cli_on "$db" >"$SCEN_OUT/cli-$db.note" 2>"$SCEN_OUT/cli-$db.fail" &
    pids+=($!)
  done
  local notes=() i=0
  for db in redis pg mysql zk etcd; do
    status=0; wait "${pids[$i]}" || status=$?; i=$((i + 1))
    [ $status = 0 ] || fail "$(sed 's/^FAIL: //' "$SCEN_OUT/cli-$db.fail")"
    notes+=("$(cat "$SCEN_OUT/cli-$db.note")")
  done
  note "lease_cli: $(IFS=';'; echo "${notes[*]}")"
}
# lease_cli_on DB: lease_cli's runs on one registry; prints their note.
lease_cli_on() {
  local db=$1 url pids=() files=() i line audits
  url=$(registry_url "$db"); reset_registry "$db"
  # On ZooKeeper each run is a Leaf node identity (worker IDs 0-7 of a fleet).
  [ "$db" = zk ] && leaf_zk fleet --root "$ZK_ROOT" --identities "$(seq -s, -f '127.0.0.1:%g' 8000 8007)"
  local before=0
  case $db in
    pg) before=$(pg_sql "SELECT count(*) FROM worker_node") ;;
    mysql) before=$(my_sql "SELECT count(*) FROM WORKER_NODE") ;;
  esac
  pids=(); files=()
  for i in $(seq 0 7); do
    [ "$db" = zk ] && url=$(registry_url zk $((8000 + i)))
    "$SCEN_CLI" next --registry "$url" --worker-bits 3 --count 20000 --json \
      >"$SCEN_OUT/cli-$db-$i.jsonl" 2>"$SCEN_OUT/cli-$db-$i.err" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}" || fail "CLI run $i on $db: $(cat "$SCEN_OUT/cli-$db-$i.err")"; done
  # Runs that overlapped in time held different worker IDs; a run that started after
  # another ended may reuse its ID, and then issues only above it.
  local workers; workers=$("$SCEN_PY" - "$SCEN_OUT"/cli-"$db"-[0-7].jsonl <<'PY'
import json, sys
runs = {}
for path in sys.argv[1:]:
    ids = [json.loads(line) for line in open(path)]
    runs.setdefault(ids[0]["worker"], []).append([int(d["decimal"]) for d in ids])
for worker, same in runs.items():
    same.sort(key=min)
    for before, after in zip(same, same[1:]):
        if min(after) <= max(before):
            sys.exit(f"two runs held worker ID {worker} at once: {min(after)} <= {max(before)}")
print(" ".join(f"{w}:{len(r)} run(s)" for w, r in sorted(runs.items())))
PY
) || fail "$db: $workers"
  [ "$db" = zk ] && url=$(registry_url zk 8005)
  "$SCEN_CLI" next --registry "$url" --worker-bits 3 --preferred-worker-id 5 --count 1 --json >"$SCEN_OUT/cli-$db-again.jsonl" ||
    fail "a run after the others on $db failed"
  for f in "$SCEN_OUT"/cli-"$db"-*.jsonl; do
    "$SCEN_PY" -c 'import json,sys; [print(json.loads(l)["decimal"]) for l in open(sys.argv[1])]' "$f" >"${f%.jsonl}.txt"
    files+=("${f%.jsonl}.txt")
  done
  line=$(check_ids --text "${files[@]}") || fail "$db: $line"
  local again last5
  again=$(head -n 1 "$SCEN_OUT/cli-$db-again.txt")
  last5=$(grep -h '"worker":5,' "$SCEN_OUT"/cli-"$db"-[0-7].jsonl | "$SCEN_PY" -c '
import json, sys
print(max((int(json.loads(l)["decimal"]) for l in sys.stdin), default=0))')
  grep -q '"worker":5,' "$SCEN_OUT/cli-$db-again.jsonl" || fail "$db: the rerun did not take worker ID 5"
  [ "$again" -gt "$last5" ] || fail "$db: the rerun on worker ID 5 ($again) is not above its predecessors' IDs ($last5)"
  audits=""
  case $db in
    pg) audits=$(( $(pg_sql "SELECT count(*) FROM worker_node") - before )) ;;
    mysql) audits=$(( $(my_sql "SELECT count(*) FROM WORKER_NODE") - before )) ;;
  esac
  [ -z "$audits" ] || [ "$audits" = 9 ] || fail "$db: $audits WORKER_NODE rows for 9 claims"
  echo "$db: 8 runs on worker IDs $workers, rerun above its predecessor${audits:+, $audits audit rows}, $line"
}

# The ZooKeeper and etcd registries themselves, in Python and Node, against the real
# servers (tests/scenarios/registries.{py,mjs}).
registries() {
  local out
  out=$("$SCEN_PY" "$HERE/registries.py" 2>"$SCEN_OUT/registries-py.err") ||
    fail "$out $(tail -n 20 "$SCEN_OUT/registries-py.err")"
  note "registries: $out"
  out=$(cd "$SCEN_NODE_DIR" && node "$HERE/registries.mjs" 2>"$SCEN_OUT/registries-node.err") ||
    fail "$out $(tail -n 20 "$SCEN_OUT/registries-node.err")"
  note "registries: $out"
}

# Taking over a running Leaf snowflake fleet: four Leaf nodes (tests/scenarios/
# leaf_snowflake.py, Leaf's holder and generator) report to ZooKeeper and issue IDs; three
# are SIGKILLed one by one (mid-report) and replaced by segflake processes (Python, Node,
# Python) with the same ip:port identity, while the fourth keeps running. Each replacement
# holds its Leaf node's worker ID and issues only above every ID that node issued; Leaf's
# znodes stay readable by Leaf; no ID is issued twice.
leaf_takeover_zk() {
  reap_on_exit
  local root=/snowflake/leaf-takeover i leaf=() seg=() langs=(py node py)
  leaf_zk reset --root "$root"
  for i in 0 1 2 3; do
    rm -f "$SCEN_OUT/leaf-$i.txt"
    "$SCEN_PY" "$HERE/leaf_snowflake.py" node --zk "$SEGFLAKE_ZK_HOSTS" --root "$root" \
      --identity "10.0.0.$((i + 1)):8080" --out "$SCEN_OUT/leaf-$i.txt" 2>"$SCEN_OUT/leaf-$i.err" &
    leaf+=($!); LEASE_PIDS+=($!)
    wait_for_lines "$SCEN_OUT/leaf-$i.txt" 20 || fail "Leaf node $i issued nothing: $(stderr_of "leaf-$i")"
  done
  sleep 4
  for i in 0 1 2; do
    kill -9 "${leaf[$i]}"
    lease_worker "${langs[$i]}" "takeover-$i" --worker-bits 10 --lease-ttl-ms 2000 --pause-ms 1 \
      --registry "zk://$SEGFLAKE_ZK_HOSTS$root?identity=10.0.0.$((i + 1)):8080&session_timeout_ms=2000"
    seg+=($!)
    wait_for_lines "$SCEN_OUT/takeover-$i.txt" 20 || fail "replacement $i issued nothing: $(stderr_of "takeover-$i")"
    sleep 1.3
  done
  sleep 2
  kill -TERM "${seg[@]}"
  for i in 0 1 2; do wait "${seg[$i]}" || fail "replacement $i failed: $(stderr_of "takeover-$i")"; done
  kill -9 "${leaf[3]}"
  local nodes; nodes=$(leaf_zk check --root "$root") || fail "Leaf cannot read its znodes after the takeover"
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT" <<'PY'
import json, sys
out = sys.argv[1]
def ids(p):
    return [int(x) for x in open(p, "rb").read().split(b"\n")[:-1]]
worker = lambda i: (i >> 12) & 1023
msgs = []
for i in range(3):
    leaf, seg = ids(f"{out}/leaf-{i}.txt"), ids(f"{out}/takeover-{i}.txt")
    summary = json.load(open(f"{out}/takeover-{i}.json"))
    if {worker(x) for x in leaf} != {i} or summary["worker_ids"] != [i] or {worker(x) for x in seg} != {i}:
        sys.exit(f"node {i}: Leaf worker IDs {sorted({worker(x) for x in leaf})}, segflake {summary['worker_ids']}")
    if min(seg) <= max(leaf):
        sys.exit(f"node {i}: segflake's first ID {min(seg)} is not above Leaf's last {max(leaf)}")
    gap = ((min(seg) >> 22) - (max(leaf) >> 22))
    msgs.append(f"node {i}: Leaf {len(leaf)} IDs, segflake {len(seg)} above them (first {gap} ms after Leaf's last)")
print("; ".join(msgs))
PY
) || fail "$verdict"
  local files=("$SCEN_OUT"/leaf-{0,1,2,3}.txt "$SCEN_OUT"/takeover-{0,1,2}.txt)
  local line; line=$(check_ids --text "${files[@]}") || fail "$line"
  note "leaf_takeover_zk: 4 Leaf nodes, 3 replaced by segflake with their identities ($verdict); Leaf node 3 ran beside them; Leaf still reads all $(wc -l <<<"$nodes") znodes; $line"
}

# ZooKeeper session expiry while partitioned: a holder reaches ZooKeeper through a proxy
# that is then partitioned (bytes dropped, connections left open); it keeps running, and
# stops issuing by itself (LeaseExpired) once its lease may have expired. ZooKeeper expires
# its session and deletes its ephemeral node; a successor with the same identity takes
# the worker ID and issues only above the partitioned holder's mark. After the partition
# heals, the old holder finds its session gone and stays refused. No ID is issued twice.
lease_session_expiry_zk() {
  reap_on_exit
  local port; port=$(_free_port 21900)
  "$SCEN_PY" "$HERE/tcp_proxy.py" "$port" "$SEGFLAKE_ZK_HOSTS" >"$SCEN_OUT/proxy.log" 2>&1 &
  local proxy=$!; LEASE_PIDS+=($proxy)
  wait_for_lines "$SCEN_OUT/proxy.log" 10 || fail "the proxy did not start"
  reset_registry zk
  local via="zk://127.0.0.1:$port$ZK_ROOT?identity=127.0.0.1:8000&session_timeout_ms=1500"
  lease_worker py zkexp-a --registry "$via" --worker-bits 0 --lease-ttl-ms 1500 --pause-ms 1
  local a=$!
  wait_for_lines "$SCEN_OUT/zkexp-a.txt" 20 || fail "the first holder issued nothing: $(stderr_of "zkexp-a")"
  sleep 1
  kill -USR1 "$proxy"
  local t0=$SECONDS
  # The holder must go quiet within its lease, before ZooKeeper lets anyone else in.
  sleep 2.5
  local quiet; quiet=$(lines "$SCEN_OUT/zkexp-a.txt")
  lease_worker node zkexp-b --registry "$(registry_url zk 8000 1500)" --worker-bits 0 --lease-ttl-ms 1500 --pause-ms 1
  local b=$!
  wait_for_lines "$SCEN_OUT/zkexp-b.txt" 20 || fail "the successor issued nothing: $(stderr_of "zkexp-b")"
  sleep 1
  [ "$(lines "$SCEN_OUT/zkexp-a.txt")" = "$quiet" ] || fail "the partitioned holder kept issuing after its lease"
  kill -USR2 "$proxy"
  sleep 3
  kill -TERM "$a" "$b"
  wait "$a" || fail "the partitioned holder failed: $(stderr_of "zkexp-a")"
  wait "$b" || fail "the successor failed: $(stderr_of "zkexp-b")"
  local expired; expired=$(lease_sum error:LeaseExpired zkexp-a)
  [ "$expired" -gt 0 ] || fail "the partitioned holder never reported LeaseExpired"
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT/zkexp-a.txt" "$SCEN_OUT/zkexp-b.txt" <<'PY'
import sys
def ids(p):
    return [int(x) for x in open(p, "rb").read().split(b"\n")[:-1]]
a, b = ids(sys.argv[1]), ids(sys.argv[2])
if min(b) <= max(a):
    sys.exit(f"a successor ID ({min(b)}) is not above the partitioned holder's last ({max(a)})")
print(f"partitioned holder: {len(a)} IDs, none after its lease; successor: {len(b)} IDs, "
      f"the first {(min(b) >> 22) - (max(a) >> 22)} ms after the holder's last")
PY
) || fail "$verdict"
  local line; line=$(check_ids --text "$SCEN_OUT/zkexp-a.txt" "$SCEN_OUT/zkexp-b.txt") || fail "$line"
  note "lease_session_expiry_zk: $verdict; LeaseExpired $expired times (partition of $((SECONDS - t0)) s); $line"
}

# The peer clock check: two holders report their clocks; a process whose clock is 30 s
# ahead (libfaketime) and that allows 5 s of skew is refused with ClockSkew and holds no
# worker ID afterwards; one with the right clock and the same allowance starts.
lease_peer_skew() {
  reap_on_exit
  local db=$1 status=0
  [ -n "$FAKETIME_LIB" ] || fail "libfaketime is not installed (Debian package faketime)"
  reset_registry "$db"
  lease_worker py "$db-skew-a" --registry "$(registry_url "$db" 8000)" --worker-bits 3 --pause-ms 2
  local a=$!
  lease_worker node "$db-skew-b" --registry "$(registry_url "$db" 8001)" --worker-bits 3 --pause-ms 2
  local b=$!
  wait_for_lines "$SCEN_OUT/$db-skew-a.txt" 20 || fail "holder a issued nothing: $(stderr_of "$db-skew-a")"
  wait_for_lines "$SCEN_OUT/$db-skew-b.txt" 20 || fail "holder b issued nothing: $(stderr_of "$db-skew-b")"
  sleep 1.5
  LD_PRELOAD=$FAKETIME_LIB FAKETIME="+30s" DONT_FAKE_MONOTONIC=1 \
    "$SCEN_PY" "$HERE/lease_worker.py" --registry "$(registry_url "$db" 8002)" --worker-bits 3 --count 100 \
    --max-peer-skew-ms 5000 --out "$SCEN_OUT/$db-skew-c.txt" --summary "$SCEN_OUT/$db-skew-c.json" \
    2>"$SCEN_OUT/$db-skew-c.err" || status=$?
  [ "$status" = 3 ] || fail "a clock 30 s ahead of its peers was not refused (status $status): $(stderr_of "$db-skew-c")"
  grep -q 'ClockSkew' "$SCEN_OUT/$db-skew-c.err" || fail "not ClockSkew: $(stderr_of "$db-skew-c")"
  [ "$(lines "$SCEN_OUT/$db-skew-c.txt")" = 0 ] || fail "the refused process wrote IDs"
  local held=0 w
  for w in $(seq 0 7); do [ -n "$(lease_held "$db" "$w")" ] && held=$((held + 1)); done
  [ "$held" = 2 ] || fail "$held worker IDs held after the refusal (the two holders hold 2)"
  lease_worker py "$db-skew-d" --registry "$(registry_url "$db" 8003)" --worker-bits 3 --count 1000 --max-peer-skew-ms 5000
  wait $! || fail "a process with the right clock was refused: $(stderr_of "$db-skew-d")"
  kill -TERM "$a" "$b"
  wait "$a" || fail "holder a failed"
  wait "$b" || fail "holder b failed"
  local msg; msg=$(grep -m1 -o 'ClockSkew.*' "$SCEN_OUT/$db-skew-c.err" | cut -c1-150)
  local line; line=$(check_ids --text "$SCEN_OUT/$db-skew-"{a,b,d}.txt) || fail "$line"
  note "lease_peer_skew[$db]: 30 s ahead of 2 live holders: refused (\"$msg\"), no ID held; the right clock started; $line"
}
lease_peer_skew_zk() { lease_peer_skew zk; }
lease_peer_skew_etcd() { lease_peer_skew etcd; }
