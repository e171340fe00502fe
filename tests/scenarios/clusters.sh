# shellcheck shell=bash
# Cluster and dead-connection scenarios, sourced by run.sh after leases.sh and serve.sh:
# lease workers in Python (tests/scenarios/cluster_worker.py), Node (lease_worker.mjs) and
# the CLI (`segflake serve`, polled by clusters.py) hold worker IDs from a 3-server
# ZooKeeper ensemble and a 3-member etcd cluster on 127.0.0.1 (started here, with their
# own ports and data directories) while the leader is killed and a follower partitioned,
# and from PostgreSQL through a proxy that stops forwarding without closing connections.
# Every scenario checks that no ID was issued twice; clusters.py times, by the wall clock,
# when each process stopped and issued again.

# Servers, workers and helpers of the running scenario, killed when it ends (also when it
# fails; stopped processes too), and its temporary data directory.
CLUSTER_PIDS=()
CLUSTER_TMP=""
cluster_reap_on_exit() {
  trap '{ kill -9 "${CLUSTER_PIDS[@]}" "${LEASE_PIDS[@]}" "${SERVE_PIDS[@]}"
          wait "${CLUSTER_PIDS[@]}" "${LEASE_PIDS[@]}" "${SERVE_PIDS[@]}"; } 2>/dev/null || true
        [ -z "$CLUSTER_TMP" ] || rm -rf "$CLUSTER_TMP"' EXIT
}

cluster_now() { date +%s%3N; }
# cluster_s MS: MS as seconds with one decimal.
cluster_s() { awk -v m="$1" 'BEGIN { printf "%.1f", m / 1000 }'; }

# cluster_ports N BASE: N distinct ports from BASE up that nothing listens on.
cluster_ports() {
  local n=$1 p=$2 out=()
  while [ ${#out[@]} -lt "$n" ]; do
    p=$(_free_port "$p"); out+=("$p"); p=$((p + 1))
  done
  echo "${out[@]}"
}

# cluster_py NAME ARGS...: tests/scenarios/cluster_worker.py in the background; sets $!.
cluster_py() {
  local name=$1; shift
  rm -f "$SCEN_OUT/$name".{txt,json,err}
  "$SCEN_PY" "$HERE/cluster_worker.py" --out "$SCEN_OUT/$name.txt" --summary "$SCEN_OUT/$name.json" "$@" \
    2>"$SCEN_OUT/$name.err" &
  LEASE_PIDS+=($!)
}

# cluster_serve NAME ARGS...: `segflake serve ARGS` and a clusters.py client asking it for
# batches of 100 snowflake IDs (IDs in $SCEN_OUT/NAME.txt). Sets CLUSTER_SERVE_PID and
# CLUSTER_POLL_PID.
cluster_serve() {
  local name=$1; shift
  rm -f "$SCEN_OUT/$name".{txt,json,err}
  serve_start "$name" "$@"
  CLUSTER_SERVE_PID=$SERVE_PID
  "$SCEN_PY" "$HERE/clusters.py" poll "$SERVE_URL/api/snowflake/get/cluster?count=100" \
    "$SCEN_OUT/$name.txt" "$SCEN_OUT/$name.json" 2>"$SCEN_OUT/$name.err" &
  CLUSTER_POLL_PID=$!
  CLUSTER_PIDS+=("$CLUSTER_POLL_PID")
}

# cluster_watch NAME...: clusters.py watch over the processes' ID files, in the background
# (its log is $SCEN_OUT/cluster-watch.log); sets CLUSTER_WATCH_PID.
cluster_watch() {
  local files=() n
  for n in "$@"; do files+=("$SCEN_OUT/$n.txt"); done
  rm -f "$SCEN_OUT/cluster-watch.log"
  "$SCEN_PY" "$HERE/clusters.py" watch "$SCEN_OUT/cluster-watch.log" "${files[@]}" &
  CLUSTER_WATCH_PID=$!
  CLUSTER_PIDS+=("$CLUSTER_WATCH_PID")
}

# cluster_issuing SECONDS NAME...: waits until every process's ID file grows within one
# 0.7 s look; fails after SECONDS naming the silent ones (with their last error lines).
cluster_issuing() {
  local limit=$1; shift
  local until=$((SECONDS + limit)) n silent=() before=()
  while :; do
    before=()
    for n in "$@"; do before+=("$(stat -c %s "$SCEN_OUT/$n.txt" 2>/dev/null || echo 0)"); done
    sleep 0.7
    silent=()
    local i=0
    for n in "$@"; do
      [ "$(stat -c %s "$SCEN_OUT/$n.txt" 2>/dev/null || echo 0)" -gt "${before[$i]}" ] || silent+=("$n")
      i=$((i + 1))
    done
    [ ${#silent[@]} -gt 0 ] || return 0
    if [ $SECONDS -ge $until ]; then
      for n in "${silent[@]}"; do echo "$n: $(tail -n 2 "$SCEN_OUT/$n.err" 2>/dev/null | tr '\n' ' ')" >&2; done
      fail "not issuing ${limit} s later: ${silent[*]}"
    fi
  done
}

# cluster_stop_workers NAME...: SIGTERM to the named lease workers (their PIDs in
# CLUSTER_WORKER[NAME]); each must exit 0 and leave its summary.
cluster_stop_workers() {
  local n
  for n in "$@"; do kill -TERM "${CLUSTER_WORKER[$n]}" 2>/dev/null || true; done
  for n in "$@"; do
    wait "${CLUSTER_WORKER[$n]}" || fail "$n exited with $?: $(stderr_of "$n")"
  done
}

# cluster_errors NAME...: per language, the typed errors the workers counted (for the
# CLI, the error codes of the 503 answers) and the leases they lost; the workers' last
# registry errors go to stderr.
cluster_errors() {
  "$SCEN_PY" - "$SCEN_OUT" "$@" <<'PY'
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
langs = {}
for n in names:
    p = os.path.join(out, n + ".json")
    if not os.path.exists(p):
        continue
    s = json.load(open(p))
    lang = "CLI" if "statuses" in s else "Python" if s["lang"] == "python" else "Node"
    counts, lost = langs.setdefault(lang, ({}, [0]))
    for k, v in (s.get("errors") or s.get("codes") or {}).items():
        counts[k] = counts.get(k, 0) + v
    stats = s.get("stats") or {}
    lost[0] += stats.get("lost", 0)
    if stats.get("last_error") or stats.get("lastError"):
        print(f"{n}: {stats.get('last_error') or stats.get('lastError')}", file=sys.stderr)
    msgs = s.get("messages") or []
    for m in msgs.values() if isinstance(msgs, dict) else msgs:
        print(f"{n}: {m}", file=sys.stderr)
parts = []
for lang, (counts, lost) in langs.items():
    errs = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "no errors"
    parts.append(f"{lang} {errs}" + (f" ({lost[0]} lease{'s' * (lost[0] != 1)} lost)" if lost[0] else ""))
print("; ".join(parts))
PY
}

# ---------------------------------------------------------------------------------------
# A 3-server ZooKeeper ensemble: zkc_start I starts server I (0-2) with its zoo.cfg under
# $CLUSTER_TMP; zkc_mode I prints its `srvr` Mode (leader, follower) or nothing.

ZKC_PORTS=() ZKC_PIDS=()
zkc_setup() {
  local clients peers elects i
  read -r -a clients <<<"$(cluster_ports 3 22181)"
  read -r -a peers <<<"$(cluster_ports 3 22281)"
  read -r -a elects <<<"$(cluster_ports 3 22381)"
  ZKC_PORTS=("${clients[@]}")
  for i in 0 1 2; do
    mkdir -p "$CLUSTER_TMP/zk$i/data"
    echo $((i + 1)) >"$CLUSTER_TMP/zk$i/data/myid"
    # A 200 ms tick bounds sessions to 0.4-4 s; a follower is dropped after syncLimit ticks.
    printf '%s\n' "tickTime=200" "initLimit=20" "syncLimit=10" "dataDir=$CLUSTER_TMP/zk$i/data" \
      "clientPort=${clients[$i]}" "clientPortAddress=127.0.0.1" "admin.enableServer=false" \
      "maxClientCnxns=0" "4lw.commands.whitelist=srvr,stat" \
      "server.1=127.0.0.1:${peers[0]}:${elects[0]}" "server.2=127.0.0.1:${peers[1]}:${elects[1]}" \
      "server.3=127.0.0.1:${peers[2]}:${elects[2]}" >"$CLUSTER_TMP/zk$i/zoo.cfg"
  done
}
zkc_start() {
  local i=$1
  java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dzookeeper.log.dir="$CLUSTER_TMP/zk$i" \
    -Dzookeeper.root.logger=WARN,CONSOLE -cp "/usr/share/java/*:/usr/share/zookeeper/*:/etc/zookeeper/conf" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$CLUSTER_TMP/zk$i/zoo.cfg" >>"$SCEN_OUT/cluster-zk$i.log" 2>&1 &
  ZKC_PIDS[$i]=$!
  CLUSTER_PIDS+=($!)
}
zkc_mode() {
  timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/${ZKC_PORTS[$1]} && printf srvr >&3 && cat <&3" 2>/dev/null |
    sed -n 's/^Mode: //p' || true
}
# zkc_wait SECONDS I...: waits until servers I... all serve, one of them the leader.
zkc_wait() {
  local limit=$1; shift
  local until=$((SECONDS + limit)) i m modes leaders serving
  while :; do
    modes="" leaders=0 serving=0
    for i in "$@"; do
      m=$(zkc_mode "$i"); modes+="${m:-down} "
      case $m in leader) leaders=$((leaders + 1)); serving=$((serving + 1)) ;; follower) serving=$((serving + 1)) ;; esac
    done
    if [ "$serving" = $# ] && [ "$leaders" = 1 ]; then return 0; fi
    [ $SECONDS -lt $until ] || fail "ZooKeeper servers $* not serving after ${limit} s (modes: $modes)"
    sleep 0.2
  done
}
# zkc_leader: the index of the leader, or nothing.
zkc_leader() {
  local i
  for i in 0 1 2; do
    if [ "$(zkc_mode "$i")" = leader ]; then echo "$i"; return 0; fi
  done
}

# ---------------------------------------------------------------------------------------
# A 3-member etcd cluster: etcdc_start I starts member I (0-2); etcdc_leader prints the
# leader's index (the member whose status names itself as leader).

ETCDC_PORTS=() ETCDC_PEERS=() ETCDC_PIDS=()
etcdc_setup() {
  read -r -a ETCDC_PORTS <<<"$(cluster_ports 3 23901)"
  read -r -a ETCDC_PEERS <<<"$(cluster_ports 3 23911)"
}
etcdc_start() {
  local i=$1 j cluster=""
  for j in 0 1 2; do cluster+="${cluster:+,}c$j=http://127.0.0.1:${ETCDC_PEERS[$j]}"; done
  etcd --name "c$i" --data-dir "$CLUSTER_TMP/etcd$i" \
    --listen-client-urls "http://127.0.0.1:${ETCDC_PORTS[$i]}" --advertise-client-urls "http://127.0.0.1:${ETCDC_PORTS[$i]}" \
    --listen-peer-urls "http://127.0.0.1:${ETCDC_PEERS[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${ETCDC_PEERS[$i]}" \
    --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "segflake-$$" \
    >>"$SCEN_OUT/cluster-etcd$i.log" 2>&1 &
  ETCDC_PIDS[$i]=$!
  CLUSTER_PIDS+=($!)
}
etcdc_endpoints() { local i out=""; for i in "$@"; do out+="${out:+,}127.0.0.1:${ETCDC_PORTS[$i]}"; done; echo "$out"; }
# etcdc_leader [I...]: asks members I... (default all).
etcdc_leader() {
  local members=("$@"); [ $# -gt 0 ] || members=(0 1 2)
  ETCDCTL_API=3 timeout 5 etcdctl --endpoints "$(etcdc_endpoints "${members[@]}")" --command-timeout 2s \
    endpoint status -w json 2>/dev/null | "$SCEN_PY" -c '
import json, sys
try:
    rows = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
ports = sys.argv[1:]
for r in rows:
    s = r["Status"]
    if s["leader"] == s["header"]["member_id"]:
        print(ports.index(r["Endpoint"].rsplit(":", 1)[1]))
' "${ETCDC_PORTS[@]}" || true
}
# etcdc_wait SECONDS I...: waits until members I... are healthy and one leads.
etcdc_wait() {
  local limit=$1; shift
  local until=$((SECONDS + limit))
  until ETCDCTL_API=3 timeout 5 etcdctl --endpoints "$(etcdc_endpoints "$@")" --command-timeout 2s endpoint health >/dev/null 2>&1 &&
    [ -n "$(etcdc_leader "$@")" ]; do
    [ $SECONDS -lt $until ] || fail "etcd members $* not healthy after ${limit} s"
    sleep 0.2
  done
}

# ---------------------------------------------------------------------------------------
# The cluster scenario (DB zk or etcd): 4 Python and 4 Node lease workers and a CLI
# `serve` (on ZooKeeper each with its own Leaf identity 127.0.0.1:8100+i) issue
# continuously with 3 s leases (and sessions) and 1 s registry timeouts. The leader is
# killed with -9: every process must issue again by itself, on the two survivors. The
# killed server is started again and rejoins; then a follower is SIGSTOPped (a partition:
# its connections stay open and nothing answers) for about 6 s and resumed. No ID twice;
# each process's stop and recovery is timed from its ID file.
CLUSTER_TTL_MS=3000
cluster_leader() { if [ "$1" = zk ]; then zkc_leader; else etcdc_leader "${@:2}"; fi; }
cluster_pid() { if [ "$1" = zk ]; then echo "${ZKC_PIDS[$2]}"; else echo "${ETCDC_PIDS[$2]}"; fi; }
cluster_server_start() { if [ "$1" = zk ]; then zkc_start "$2"; else etcdc_start "$2"; fi; }
cluster_wait() { if [ "$1" = zk ]; then zkc_wait "${@:2}"; else etcdc_wait "${@:2}"; fi; }

# cluster_url DB I: the registry URL of process I; each lists the servers in its own
# order (the clients move to the next member when one cannot be reached).
cluster_url() {
  local db=$1 k=$2 order=() j h=""
  for j in 0 1 2; do order+=($(((k + j) % 3))); done
  if [ "$db" = zk ]; then
    for j in "${order[@]}"; do h+="${h:+,}127.0.0.1:${ZKC_PORTS[$j]}"; done
    echo "zk://$h/snowflake/cluster?identity=127.0.0.1:$((8100 + k))&session_timeout_ms=$CLUSTER_TTL_MS"
  else
    echo "etcd://$(etcdc_endpoints "${order[@]}")/segflake-cluster"
  fi
}

cluster_scenario() {
  local db=$1 i names=() t_start=$SECONDS
  cluster_reap_on_exit
  declare -gA CLUSTER_WORKER=()
  CLUSTER_TMP=$(mktemp -d "/tmp/segflake-cluster-$db.XXXXXX")
  local lease=(--worker-bits 5 --lease-ttl-ms $CLUSTER_TTL_MS --mark-ahead-ms 1000 --clock-skew-allowance-ms 0
               --registry-timeout-ms 1000)
  if [ "$db" = zk ]; then zkc_setup; else etcdc_setup; fi
  for i in 0 1 2; do cluster_server_start "$db" "$i"; done
  cluster_wait "$db" 60 0 1 2
  local up=$((SECONDS - t_start))
  for i in 0 1 2 3; do
    cluster_py "$db-py$i" --registry "$(cluster_url "$db" "$i")" "${lease[@]}"
    CLUSTER_WORKER[$db-py$i]=$!; names+=("$db-py$i")
    lease_worker node "$db-node$i" --registry "$(cluster_url "$db" $((i + 4)))" "${lease[@]}" --pause-ms 1
    CLUSTER_WORKER[$db-node$i]=$!; names+=("$db-node$i")
  done
  cluster_serve "$db-cli" --registry "$(cluster_url "$db" 8)" "${lease[@]}"
  names+=("$db-cli")
  cluster_watch "${names[@]}"
  cluster_issuing 45 "${names[@]}"
  sleep 2

  # 1. The leader killed with -9.
  local leader; leader=$(cluster_leader "$db")
  [ -n "$leader" ] || fail "no leader"
  local t_kill; t_kill=$(cluster_now)
  kill -9 "$(cluster_pid "$db" "$leader")"
  wait "$(cluster_pid "$db" "$leader")" 2>/dev/null || true
  local rest=()
  for i in 0 1 2; do [ "$i" = "$leader" ] || rest+=("$i"); done
  cluster_wait "$db" 60 "${rest[@]}"
  local new; new=$(cluster_leader "$db" "${rest[@]}")
  local election=$(($(cluster_now) - t_kill))
  # Every process issues again on the two survivors (a lease lost meanwhile is claimed
  # again by the process itself), once a lease could have lapsed.
  sleep $((CLUSTER_TTL_MS / 1000 + 1))
  cluster_issuing 40 "${names[@]}"
  # The killed server comes back and rejoins.
  cluster_server_start "$db" "$leader"
  cluster_wait "$db" 60 0 1 2
  sleep 1

  # 2. A follower partitioned: SIGSTOP (its connections stay open; nothing answers).
  local follower="" lead; lead=$(cluster_leader "$db")
  for i in 0 1 2; do if [ "$i" != "$lead" ]; then follower=$i; break; fi; done
  local fpid; fpid=$(cluster_pid "$db" "$follower")
  local t_part; t_part=$(cluster_now)
  kill -STOP "$fpid"
  sleep $((CLUSTER_TTL_MS / 1000 + 1))
  cluster_issuing 40 "${names[@]}"
  local part_recovered=$(($(cluster_now) - t_part))
  [ "$part_recovered" -ge 6000 ] || sleep "$(cluster_s $((6000 - part_recovered)))"
  local t_heal; t_heal=$(cluster_now)
  kill -CONT "$fpid"
  sleep 2
  cluster_issuing 20 "${names[@]}"
  local t_end; t_end=$(cluster_now)

  kill -TERM "$CLUSTER_POLL_PID"
  cluster_stop_workers "${names[@]:0:8}"
  wait "$CLUSTER_POLL_PID" || fail "the serve client failed: $(stderr_of "$db-cli")"
  serve_stop "$CLUSTER_SERVE_PID" "$db-cli"
  kill -TERM "$CLUSTER_WATCH_PID"; wait "$CLUSTER_WATCH_PID" || true
  local files=(); for i in "${names[@]}"; do files+=("$SCEN_OUT/$i.txt"); done
  local line; line=$(check_ids --text "${files[@]}") || fail "$line"
  local timing; timing=$("$SCEN_PY" "$HERE/clusters.py" report "$SCEN_OUT/cluster-watch.log" \
    --names "$(IFS=,; echo "${names[*]}")" --event "leader killed=$t_kill" --event "follower stopped=$t_part" \
    --event "follower resumed=$t_heal" --end "$t_end") || fail "$timing"
  local errors; errors=$(cluster_errors "${names[@]}" 2>"$SCEN_OUT/$db-cluster-errors.txt")
  local kind="3-server ZooKeeper ensemble"; [ "$db" = zk ] || kind="3-member etcd cluster"
  note "cluster_$db: a $kind (up in ${up} s), 4 Python + 4 Node lease workers + 1 CLI serve, 3 s leases; leader (server $leader) killed -9: new leader (server $new) serving $(cluster_s "$election") s after the kill; follower (server $follower) SIGSTOPped for $(cluster_s $((t_heal - t_part))) s, then resumed; $timing; errors counted: $errors; $line; $((SECONDS - t_start)) s"
}
cluster_zk() { cluster_scenario zk; }
cluster_etcd() { cluster_scenario etcd; }

# ---------------------------------------------------------------------------------------
# A dead connection to a SQL registry: Python, Node and CLI (`serve`) holders lease worker
# IDs from PostgreSQL through tests/scenarios/tcp_proxy.py with 3 s leases and a 500 ms
# registry timeout. The proxy blackholes (stops forwarding, closes nothing) for 6 s: each
# holder's IDs stop before its lease ends in the registry (no ID carries a time at or
# after the row's expires_at, read directly from PostgreSQL), and once the proxy forwards
# again (closing the connections that lost bytes, as a broken network path would) each
# issues again within about the registry timeout plus a renewal interval. No ID twice.
pg_blackhole() {
  local names=(bh-py bh-node bh-cli) n t_start=$SECONDS
  cluster_reap_on_exit
  declare -gA CLUSTER_WORKER=()
  reset_registry pg
  local port; port=$(_free_port 21950)
  "$SCEN_PY" "$HERE/tcp_proxy.py" "$port" "127.0.0.1:$PG_PORT" >"$SCEN_OUT/bh-proxy.log" 2>&1 &
  local proxy=$!; CLUSTER_PIDS+=($proxy)
  wait_for_lines "$SCEN_OUT/bh-proxy.log" 10 || fail "the proxy did not start"
  local via="postgres://postgres@127.0.0.1:$port/postgres"
  local lease=(--worker-bits 3 --lease-ttl-ms 3000 --registry-timeout-ms 500 --mark-ahead-ms 1000
               --clock-skew-allowance-ms 0)
  cluster_py bh-py --registry "$via" "${lease[@]}"; CLUSTER_WORKER[bh-py]=$!
  lease_worker node bh-node --registry "$via" "${lease[@]}" --pause-ms 1; CLUSTER_WORKER[bh-node]=$!
  cluster_serve bh-cli --registry "$via" "${lease[@]}"
  cluster_watch "${names[@]}"
  cluster_issuing 45 "${names[@]}"
  sleep 2
  local t_black; t_black=$(cluster_now)
  kill -USR1 "$proxy"
  # The holders go quiet within their 3 s lease; the blackhole lasts 6 s in all.
  sleep 6
  local rows; rows=$(pg_sql "SELECT worker_id, (extract(epoch FROM expires_at) * 1000)::bigint, mark_ms
                             FROM segflake_worker_lease WHERE owner IS NOT NULL ORDER BY worker_id" | tr '|\n' ', ')
  local before=()
  for n in "${names[@]}"; do before+=("$(lines "$SCEN_OUT/$n.txt")"); done
  local t_heal; t_heal=$(cluster_now)
  kill -USR2 "$proxy"
  sleep 1
  cluster_issuing 20 "${names[@]}"
  sleep 1
  local t_end; t_end=$(cluster_now)
  kill -TERM "$CLUSTER_POLL_PID"
  cluster_stop_workers bh-py bh-node
  wait "$CLUSTER_POLL_PID" || fail "the serve client failed: $(stderr_of "bh-cli")"
  serve_stop "$CLUSTER_SERVE_PID" bh-cli
  kill -TERM "$CLUSTER_WATCH_PID"; wait "$CLUSTER_WATCH_PID" || true
  local files=(); for n in "${names[@]}"; do files+=("$SCEN_OUT/$n.txt"); done
  local line; line=$(check_ids --text "${files[@]}") || fail "$line"
  local verdict; verdict=$("$SCEN_PY" - "$HERE" "$SCEN_OUT" "$t_black" "$t_heal" "$rows" "${names[*]}" "${before[*]}" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from clusters import TWITTER_EPOCH_MS, growths
out, t_black, t_heal = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
expires = {}
for row in sys.argv[5].split():
    w, exp, mark = (int(x) for x in row.split(","))
    expires[w] = (exp, mark)
names, before = sys.argv[6].split(), [int(x) for x in sys.argv[7].split()]
grew = growths(f"{out}/cluster-watch.log", len(names))
parts, bad = [], []
for i, name in enumerate(names):
    ids = [int(x) for x in open(f"{out}/{name}.txt", "rb").read().split(b"\n")[:-1]]
    held, after = ids[: before[i]], ids[before[i]:]
    worker = (held[-1] >> 12) & 7
    last_ms = max(x >> 15 for x in held) + TWITTER_EPOCH_MS
    if worker not in expires:
        bad.append(f"{name}: no lease row for worker ID {worker} in {expires}")
        continue
    exp, mark = expires[worker]
    resumed = min((t for t in grew[i] if t > t_heal), default=None)
    if last_ms >= exp:
        bad.append(f"{name}: an ID at {last_ms} is not before its lease's end {exp} (worker ID {worker})")
    if last_ms > mark:
        bad.append(f"{name}: an ID at {last_ms} is above the accepted mark {mark}")
    if not after or resumed is None:
        bad.append(f"{name}: no ID after the proxy forwarded again")
        continue
    parts.append(f"{name}: last ID {(last_ms - t_black) / 1000:.2f} s into the blackhole, "
                 f"{exp - last_ms} ms before its lease's end in PostgreSQL; issuing again "
                 f"{(resumed - t_heal) / 1000:.2f} s after forwarding resumed")
print("; ".join(parts))
if bad:
    sys.exit("\n".join(bad))
PY
) || fail "$verdict"
  local errors; errors=$(cluster_errors bh-py bh-node bh-cli 2>"$SCEN_OUT/bh-errors.txt")
  note "pg_blackhole: PostgreSQL registry through a proxy that stopped forwarding for $(cluster_s $((t_heal - t_black))) s (3 s leases, registry_timeout_ms 500, renewal every 1 s): $verdict; errors counted: $errors; $line; $((SECONDS - t_start)) s"
}
