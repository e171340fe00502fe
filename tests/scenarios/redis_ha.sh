# shellcheck shell=bash
# Replicated Redis, sourced by run.sh: a Sentinel deployment (a primary, two replicas,
# three sentinels) and a Cluster (3 primaries, 3 replicas) on 127.0.0.1, every server
# append-only with fsync always. Processes in Python, Node and `segflake serve` allocate
# segments, count date serials and renew worker-ID leases through redis+sentinel:// and
# redis+cluster:// URLs while primaries are killed -9, cut off from their replicas, or
# failed over alive. Every scenario checks that no ID and no serial was issued twice (or,
# where the guarantee is off, reports how many were), and that every process issues again
# by itself after each failover (the delays go to results.md):
#   ha_redis_sentinel_kill, ha_redis_sentinel_partition, ha_redis_sentinel_switchover,
#   ha_redis_sentinel_nowait, ha_redis_cluster.
# The workloads run with the default replica wait (every replica the primary had at
# start-up: both, on Sentinel; one on the Cluster). Waiting for one replica of two
# (replicas=1), a failover of a primary that is still alive loses writes the other replica
# acknowledged (ha_redis_sentinel_switchover shows it).
#
# Workers: tests/scenarios/redis_ha.py (Python: segments, serials, an HTTP client of serve;
# also the probes that wait for a promotion or a healthy topology) and redis_ha.mjs (Node:
# segments, serials), and the lease workers of leases.sh. Each writes IDs as it issues
# them and a line per failed store call to NAME.events.

HA_SERVICE=segflake-ha
HA_BASE_PORT=${HA_BASE_PORT:-17300}
# Kills per run of ha_redis_sentinel_kill (HA_PARTITION_ROUNDS and HA_SWITCH_ROUNDS: the
# partitions and switchovers of the others; fewer, for the time they take).
HA_ROUNDS=${HA_ROUNDS:-5}
HA_DIR="" HA_LOGS=""
HA_PIDS=()

# redis_ha_stop: every server these scenarios left running (called by services_stop at
# exit; a scenario stops its own servers when it ends). Only redis-server processes whose
# pid files the scenarios wrote.
redis_ha_stop() {
  local f pid
  for f in "${SERVICES_DIR:-/nonexistent}"/redis-ha/*/pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if [[ "$(ps -o comm= -p "$pid" 2>/dev/null)" == redis* ]]; then
      kill -CONT "$pid" 2>/dev/null || true
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}
_started+=(redis_ha)

# ha_on_exit NAME: a scenario that ends (or is stopped: TERM runs the EXIT trap) takes its
# workers and servers with it, and keeps their logs.
ha_on_exit() {
  HA_LOGS="$SCEN_OUT/$1-logs"
  trap '{ kill -9 "${HA_PIDS[@]}" "${LEASE_PIDS[@]}" "${SERVE_PIDS[@]}"; redis_ha_stop; wait; ha_keep_logs; } 2>/dev/null || true' EXIT
  trap 'exit 143' TERM
}

# ha_keep_logs: the servers' and sentinels' logs and configuration files to
# $SCEN_OUT/SCENARIO-logs/SERVER/ (the data goes with the services' directory).
ha_keep_logs() {
  [ -n "$HA_DIR" ] && [ -d "$HA_DIR" ] || return 0
  local f d
  for f in "$HA_DIR"/*/*.log "$HA_DIR"/*/*.conf; do
    d="$HA_LOGS/$(basename "$(dirname "$f")")"
    mkdir -p "$d" && cp "$f" "$d/"
  done
}

ha_py() { "$SCEN_PY" "$HERE/redis_ha.py" "$@"; }

# ha_server NAME PORT ARG...: redis-server in the background (in the scenario's process
# group), append-only with fsync always; waits until it answers PONG.
ha_server() {
  local name=$1 port=$2; shift 2
  local d="$HA_DIR/$name"
  mkdir -p "$d"
  # (no 5 s wait before a full sync: a restarted server catches up at once)
  redis-server --bind 127.0.0.1 --port "$port" --dir "$d" --appendonly yes --appendfsync always --save '' \
    --repl-diskless-sync-delay 0 \
    --logfile "$d/redis.log" "$@" >/dev/null 2>&1 &
  echo $! >"$d/pid"
  echo "$port" >"$d/port"
  _wait_for 20 bash -c "[ \"\$(redis-cli -p $port ping 2>/dev/null)\" = PONG ]" ||
    fail "redis-server $name did not start: $(tail -n 3 "$d/redis.log")"
}

# ha_kill NAME: kill -9 (reaped at once: the server is this shell's child).
ha_kill() {
  local f="$HA_DIR/$1/pid" pid
  pid=$(cat "$f")
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  rm -f "$f"
}

# ha_name PORT: the server on PORT.
ha_name() { grep -lx "$1" "$HA_DIR"/*/port | xargs -n1 dirname | xargs -n1 basename; }

ha_fresh_dir() {
  _services_dir
  HA_DIR="$SERVICES_DIR/redis-ha"
  redis_ha_stop
  rm -rf "$HA_DIR" && mkdir -p "$HA_DIR"
}

# ha_sentinel_up: servers r0 (primary), r1, r2 (replicas) and sentinels s0..s2 (quorum 2,
# down after 1 s). Sets HA_URL (the sentinel URL), HA_SENTINELS (their ports, commas).
ha_sentinel_up() {
  ha_fresh_dir
  local p=$HA_BASE_PORT ports=() i
  for i in 0 1 2 3 4 5; do p=$(_free_port "$p"); ports+=("$p"); p=$((p + 1)); done
  ha_server r0 "${ports[0]}"
  ha_server r1 "${ports[1]}" --replicaof 127.0.0.1 "${ports[0]}"
  ha_server r2 "${ports[2]}" --replicaof 127.0.0.1 "${ports[0]}"
  HA_SENTINELS=""
  local urls=()
  for i in 0 1 2; do
    local s=${ports[3 + i]} d="$HA_DIR/s$i"
    mkdir -p "$d"
    # Each sentinel rewrites its own file.
    printf '%s\n' "port $s" "bind 127.0.0.1" "dir $d" "logfile $d/sentinel.log" \
      "sentinel monitor $HA_SERVICE 127.0.0.1 ${ports[0]} 2" \
      "sentinel down-after-milliseconds $HA_SERVICE 1000" \
      "sentinel failover-timeout $HA_SERVICE 3000" \
      "sentinel parallel-syncs $HA_SERVICE 2" >"$d/sentinel.conf"
    redis-server "$d/sentinel.conf" --sentinel >/dev/null 2>&1 &
    echo $! >"$d/pid"
    echo "$s" >"$d/port"
    HA_SENTINELS+="${HA_SENTINELS:+,}$s"
    urls+=("127.0.0.1:$s")
  done
  HA_URL="redis+sentinel://$(IFS=,; echo "${urls[*]}")/$HA_SERVICE"
  ha_sentinel_healthy >/dev/null
}

# ha_sentinel_healthy: waits until the sentinels agree on a primary with two replicas
# online that they all know up; prints its port.
ha_sentinel_healthy() {
  ha_py sentinel-healthy --sentinels "$HA_SENTINELS" --service "$HA_SERVICE" --replicas 2 --timeout 30 ||
    fail "the Sentinel deployment did not settle"
}

# ha_cluster_up: six cluster nodes c0..c5, created with one replica per primary. Sets
# HA_URL (the cluster URL with every node), HA_NODES (their ports, commas).
ha_cluster_up() {
  ha_fresh_dir
  local p=$HA_BASE_PORT i addrs=()
  HA_NODES=""
  for i in 0 1 2 3 4 5; do
    p=$(_free_port "$p")
    ha_server "c$i" "$p" --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 1000
    addrs+=("127.0.0.1:$p")
    HA_NODES+="${HA_NODES:+,}$p"
    p=$((p + 1))
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$HA_DIR/create.log" 2>&1 ||
    fail "redis-cli --cluster create: $(tail -n 5 "$HA_DIR/create.log")"
  HA_URL="redis+cluster://$(IFS=,; echo "${addrs[*]}")"
  ha_cluster_healthy >/dev/null
}

# ha_cluster_healthy: waits until every node says cluster_state:ok, they agree on the
# primaries and each primary has a replica online; prints the primaries.
ha_cluster_healthy() {
  ha_py cluster-healthy --ports "$HA_NODES" --timeout 30 || fail "the cluster did not settle"
}

# ---------------------------------------------------------------------------------------
# the workload

# Which processes run: py and node (segments, serials and a lease worker each), serve
# (`segflake serve` on the same URL as store and registry, with an HTTP client).
HA_LANGS=${HA_LANGS:-py node serve}
# Leases: 3 s, renewed every second.
HA_TTL=3000
HA_SEG=() HA_SER=() HA_LEASE=() HA_HOLDERS=0 HA_SERVE_PID="" HA_SERVE_NAME=""

# ha_worker LANG KIND NAME ARG...: redis_ha.py or redis_ha.mjs in the background.
ha_worker() {
  local lang=$1 kind=$2 name=$3; shift 3
  local io=(--out "$SCEN_OUT/$name.ids" --summary "$SCEN_OUT/$name.json" --events "$SCEN_OUT/$name.events")
  rm -f "$SCEN_OUT/$name".{ids,json,events,err}
  case $lang in
    py) "$SCEN_PY" "$HERE/redis_ha.py" "$kind" "${io[@]}" "$@" 2>"$SCEN_OUT/$name.err" & ;;
    node) (cd "$SCEN_NODE_DIR" && exec node "$HERE/redis_ha.mjs" "$kind" "${io[@]}" "$@") 2>"$SCEN_OUT/$name.err" & ;;
  esac
  HA_PIDS+=($!)
}

# ha_workload URL TAG NAME: every process of HA_LANGS on URL (segments of TAG, serials
# under a prefix of their own, worker-ID leases), named ha-NAME-..., once each has issued.
ha_workload() {
  local url=$1 tag=$2 prefix="ha-$3-$$" w="ha-$3" lang n
  HA_SEG=() HA_SER=() HA_LEASE=() HA_HOLDERS=0
  for lang in $HA_LANGS; do
    case $lang in
      py | node)
        ha_worker "$lang" segments "$w-$lang-seg" --url "$url" --tag "$tag" --rate 5000 --step 1000
        ha_worker "$lang" serials "$w-$lang-ser" --url "$url" --prefix "$prefix" --rate 200
        lease_worker "$lang" "$w-$lang-lease" --registry "$url" --worker-bits 3 --lease-ttl-ms "$HA_TTL" --pause-ms 20
        HA_SEG+=("$w-$lang-seg") HA_SER+=("$w-$lang-ser") HA_LEASE+=("$w-$lang-lease")
        HA_HOLDERS=$((HA_HOLDERS + 1)) ;;
      serve)
        HA_SERVE_NAME="$w-serve"
        serve_start "$HA_SERVE_NAME" --store "$url" --registry "$url" --worker-bits 3 --lease-ttl-ms "$HA_TTL" \
          --step 1000 --dynamic-step false
        HA_SERVE_PID=$SERVE_PID
        ha_worker py http "$w-serve-http" --url "$SERVE_URL" --key "$tag" --rate 20 --count 100
        HA_SEG+=("$w-serve-http") HA_HOLDERS=$((HA_HOLDERS + 1)) ;;
      *) fail "HA_LANGS: unknown $lang" ;;
    esac
  done
  for n in "${HA_SEG[@]}" "${HA_SER[@]}"; do
    _wait_for 30 test -s "$SCEN_OUT/$n.ids" || fail "$n issued nothing: $(stderr_of "$n")"
  done
  for n in "${HA_LEASE[@]}"; do
    wait_for_lines "$SCEN_OUT/$n.txt" 30 || fail "$n issued nothing: $(stderr_of "$n")"
  done
}

# ha_recovered T_KILL FLOOR PORT: waits until every process issued again after the failover
# at T_KILL: segments from a range at or above FLOOR (allocated after it), serials counted
# after it, leases renewed on the new primary at PORT. Prints {name: ms after T_KILL}.
ha_recovered() {
  local specs=() n out
  for n in "${HA_SEG[@]}"; do specs+=("seg:$SCEN_OUT/$n.ids:$2"); done
  for n in "${HA_SER[@]}"; do specs+=("ser:$SCEN_OUT/$n.ids"); done
  [ "$HA_HOLDERS" = 0 ] || specs+=("lease:$3:$HA_HOLDERS:$HA_TTL")
  out=$(ha_py recovered --since-ms "$1" --timeout 30 "${specs[@]}") ||
    fail "not every process issued again within 30 s of the failover: $out; $(for n in "${HA_SEG[@]}" "${HA_SER[@]}" "${HA_LEASE[@]}"; do
      echo "$n: $(tail -n 1 "$SCEN_OUT/$n.events" 2>/dev/null) $(stderr_of "$n" | tail -n 2)"; done)"
  echo "$out"
}

# ha_stop_workers: SIGTERM; each must exit 0 with its summary written.
ha_stop_workers() {
  local p
  kill -TERM "${HA_PIDS[@]}" "${LEASE_PIDS[@]}" 2>/dev/null || true
  for p in "${HA_PIDS[@]}" "${LEASE_PIDS[@]}"; do
    wait "$p" || fail "a worker exited with $? after SIGTERM: $(tail -n 3 "$SCEN_OUT"/ha-*.err)"
  done
  [ -z "$HA_SERVE_PID" ] || serve_stop "$HA_SERVE_PID" "$HA_SERVE_NAME"
  HA_PIDS=() LEASE_PIDS=() HA_SERVE_PID=""
}

# ha_ids [allow]: the duplicate check over every process's segment IDs, serials and
# snowflake IDs (check.py's lines); fails on a duplicate unless told to allow them.
ha_ids() {
  local seg ser lease n files=()
  for n in "${HA_SEG[@]}"; do files+=("$SCEN_OUT/$n.ids"); done
  if ! seg=$(check_ids --min 1 "${files[@]}" 2>&1); then [ "${1:-}" = allow ] || fail "segment IDs: $seg"; fi
  files=()
  for n in "${HA_SER[@]}"; do files+=("$SCEN_OUT/$n.ids"); done
  ser="no serial workers"
  if [ ${#files[@]} -gt 0 ] && ! ser=$(check_ids "${files[@]}" 2>&1); then [ "${1:-}" = allow ] || fail "serials: $ser"; fi
  files=()
  for n in "${HA_LEASE[@]}"; do files+=("$SCEN_OUT/$n.txt"); done
  lease="no lease workers"
  if [ ${#files[@]} -gt 0 ] && ! lease=$(check_ids --text "${files[@]}" 2>&1); then [ "${1:-}" = allow ] || fail "snowflake IDs: $lease"; fi
  echo "segment IDs: $(head -n 1 <<<"$seg"); serials: $(head -n 1 <<<"$ser"); snowflake IDs: $(head -n 1 <<<"$lease")"
}

ha_summary() {
  local names=("${HA_SEG[@]}" "${HA_SER[@]}" "${HA_LEASE[@]}")
  ha_py summary --dir "$SCEN_OUT" "${names[@]}" || fail "a process did not work"
}

ha_now() { date +%s%3N; }

# ---------------------------------------------------------------------------------------
# scenarios

HA_KEY_PREFIX=segflake:leaf_alloc:

# ha_seed PORT TAG: the tag's counter at 1 (Leaf's fresh row) on the primary at PORT and
# on REPLICAS (default 2) replicas.
ha_seed() {
  redis-cli -p "$1" SET "$HA_KEY_PREFIX$2" 1 >/dev/null
  [ "$(redis-cli -p "$1" WAIT "${3:-2}" 5000)" = "${3:-2}" ] || fail "the replicas did not take the tag's key"
}

# ha_counter PORT KEY: the counter at KEY on the server at PORT (asked again for up to 10 s
# while the answer is not a number: a node that just took over may still refuse).
ha_counter() {
  local v i
  for ((i = 0; i < 100; i++)); do
    v=$(redis-cli -p "$1" GET "$2" 2>&1)
    [[ $v =~ ^[0-9]+$ ]] && { echo "$v"; return 0; }
    sleep 0.1
  done
  fail "GET $2 on port $1 answered \"$v\", not a counter"
}

# ha_promoted NOT_PORT: waits until a sentinel names a primary other than NOT_PORT that
# answers as one; prints its port.
ha_promoted() {
  ha_py sentinel-primary --sentinels "$HA_SENTINELS" --service "$HA_SERVICE" --not "$1" --timeout 30 ||
    fail "the sentinels promoted no replica"
}

# The primary killed -9, HA_ROUNDS times: each time the sentinels promote a replica, every
# process issues again by itself (its segments from a range the new primary allocated,
# serials counted after the kill, leases renewed on the new primary), and the killed
# server comes back as a replica of the new primary. The replica wait is the default (a
# write counts once both replicas have it).
ha_redis_sentinel_kill() {
  ha_on_exit ha_redis_sentinel_kill
  ha_sentinel_up
  local tag=ha_kill p name t0 promoted floor rec r rounds=()
  p=$(ha_sentinel_healthy)
  ha_seed "$p" "$tag"
  ha_workload "$HA_URL" "$tag" kill
  for ((r = 1; r <= HA_ROUNDS; r++)); do
    p=$(ha_sentinel_healthy)
    name=$(ha_name "$p")
    t0=$(ha_now)
    ha_kill "$name"
    HA_NEW=$(ha_promoted "$p")
    promoted=$(( $(ha_now) - t0 ))
    floor=$(ha_counter "$HA_NEW" "$HA_KEY_PREFIX$tag")
    # Back at once as a replica of the new primary (as a supervisor would restart it):
    # waiting for both replicas, nothing is written until it has caught up.
    ha_server "$name" "$p" --replicaof 127.0.0.1 "$HA_NEW"
    rec=$(ha_recovered "$t0" "$floor" "$HA_NEW")
    rounds+=("$r: $name killed, $(ha_name "$HA_NEW") promoted after $promoted ms, issuing again after $rec")
  done
  ha_sentinel_healthy >/dev/null
  ha_stop_workers
  local ids; ids=$(ha_ids)
  local sum; sum=$(ha_summary)
  note "ha_redis_sentinel_kill[$HA_LANGS]: primary killed -9 $HA_ROUNDS times; ${rounds[*]}; $ids; per process: ${sum% | *}"
}

# ha_partition_round TAG MODE: the primary cut off from both replicas (frozen with SIGSTOP,
# their links closed with CLIENT KILL TYPE replica) while it keeps taking writes; MODE
# wait: until every segment and serial process saw a write refused by the replica wait
# and an allocation reached only the primary; nowait: until 6 allocations did. Then the primary is killed -9,
# the replicas resumed, and the sentinels promote one without those writes. Sets
# HA_ROUND (what happened) and HA_LOST (allocations the promoted replica lacks).
ha_partition_round() {
  local tag=$1 mode=$2 key="$HA_KEY_PREFIX$1" p name r reps=() files=() n
  p=$(ha_sentinel_healthy)
  name=$(ha_name "$p")
  for r in r0 r1 r2; do [ "$r" = "$name" ] || reps+=("$(cat "$HA_DIR/$r/pid")"); done
  kill -STOP "${reps[@]}"
  redis-cli -p "$p" CLIENT KILL TYPE replica >/dev/null
  local t_cut at_cut; t_cut=$(ha_now); at_cut=$(ha_counter "$p" "$key")
  for n in "${HA_SEG[@]}" "${HA_SER[@]}"; do [[ $n == *-serve-http ]] || files+=("$SCEN_OUT/$n.events"); done
  if [ "$mode" = wait ] && [ ${#files[@]} -gt 0 ]; then
    ha_py wait-events --since-ms "$t_cut" --kind replica_wait --timeout 20 "${files[@]}" >/dev/null ||
      { kill -CONT "${reps[@]}"; fail "a process's writes to the cut-off primary were not refused by the replica wait"; }
  fi
  # Allocations that reached the primary only (one at least; without the wait, six).
  local need=1000; [ "$mode" = wait ] || need=6000
  ha_py wait-counter --port "$p" --key "$key" --at-least $((at_cut + need)) --timeout 20 >/dev/null ||
    { kill -CONT "${reps[@]}"; fail "no allocation reached the cut-off primary"; }
  local lost t_kill; lost=$(ha_counter "$p" "$key"); t_kill=$(ha_now)
  ha_kill "$name"
  kill -CONT "${reps[@]}"
  # What each replica holds: nobody writes to them until one is promoted.
  local held=()
  for r in r0 r1 r2; do [ "$r" = "$name" ] || held+=("$(cat "$HA_DIR/$r/port"):$(ha_counter "$(cat "$HA_DIR/$r/port")" "$key")"); done
  HA_NEW=$(ha_promoted "$p")
  local promoted=$(( $(ha_now) - t_kill ))
  local kept; kept=$(printf '%s\n' "${held[@]}" | sed -n "s/^$HA_NEW://p")
  [ "$lost" -gt "$kept" ] || fail "the promoted replica has every allocation (its counter $kept, the old primary's $lost)"
  HA_LOST=$(( (lost - kept) / 1000 ))
  # With the wait, a range from the new primary's counter on; without it, one above all
  # the lost ranges (which the new primary hands out again first).
  local floor=$kept; [ "$mode" = wait ] || floor=$lost
  ha_server "$name" "$p" --replicaof 127.0.0.1 "$HA_NEW"
  local rec; rec=$(ha_recovered "$t_kill" "$floor" "$HA_NEW")
  HA_ROUND="$name cut off for $((t_kill - t_cut)) ms, $HA_LOST allocations reached only it, $(ha_name "$HA_NEW") promoted $promoted ms after the kill, issuing again after $rec"
}

# The partition with the replica wait on: 0 duplicates; every write during the cut-off
# fails with the core's replica-wait error (counted), and nothing is issued from it.
HA_PARTITION_ROUNDS=${HA_PARTITION_ROUNDS:-3}
ha_redis_sentinel_partition() {
  ha_on_exit ha_redis_sentinel_partition
  ha_sentinel_up
  local tag=ha_partition p r rounds=() lost=0
  p=$(ha_sentinel_healthy)
  ha_seed "$p" "$tag"
  ha_workload "$HA_URL" "$tag" partition
  for ((r = 1; r <= HA_PARTITION_ROUNDS; r++)); do
    ha_partition_round "$tag" wait
    rounds+=("$r: $HA_ROUND")
    lost=$((lost + HA_LOST))
  done
  ha_sentinel_healthy >/dev/null
  ha_stop_workers
  local ids; ids=$(ha_ids)
  local sum; sum=$(ha_summary)
  [ "${sum##* | }" -gt 0 ] || fail "no write was refused by the replica wait: $sum"
  note "ha_redis_sentinel_partition[$HA_LANGS]: primary cut off from its replicas, then killed -9, $HA_PARTITION_ROUNDS times; ${rounds[*]}; $lost allocations lost with the old primaries, none issued; writes refused by the replica wait: ${sum##* | }; $ids; per process: ${sum% | *}"
}

# The same partition with the wait off (?replicas=0): the allocations that reached only
# the cut-off primary were issued, and the promoted replica hands their ranges out again.
# The duplicates are reported, not asserted.
ha_redis_sentinel_nowait() {
  ha_on_exit ha_redis_sentinel_nowait
  ha_sentinel_up
  local tag=ha_nowait p
  p=$(ha_sentinel_healthy)
  ha_seed "$p" "$tag"
  ha_workload "$HA_URL?replicas=0" "$tag" nowait
  # A second Python segment process (a process refuses a range below its own by itself: the
  # duplicates are between processes).
  ha_worker py segments ha-nowait-py2-seg --url "$HA_URL?replicas=0" --tag "$tag" --rate 5000 --step 1000
  HA_SEG+=(ha-nowait-py2-seg)
  _wait_for 30 test -s "$SCEN_OUT/ha-nowait-py2-seg.ids" || fail "ha-nowait-py2-seg issued nothing: $(stderr_of ha-nowait-py2-seg)"
  ha_partition_round "$tag" nowait
  ha_sentinel_healthy >/dev/null
  ha_stop_workers
  local ids; ids=$(ha_ids allow)
  local sum; sum=$(ha_summary)
  note "ha_redis_sentinel_nowait[$HA_LANGS]: replicas=0; $HA_ROUND; $ids; per process: ${sum% | *}"
}

# Redis Cluster, 3 primaries and 3 replicas: the primary that holds the leases' slot (and
# the segment tag's key) killed -9; its replica takes over; every process issues again.
ha_redis_cluster() {
  ha_on_exit ha_redis_cluster
  ha_cluster_up
  local first=${HA_NODES%%,*} slot owner tag="" i
  slot=$(redis-cli -p "$first" CLUSTER KEYSLOT '{segflake}')
  owner=$(ha_py cluster-owner --ports "$HA_NODES" --slot "$slot") || fail "no primary holds slot $slot"
  # A tag whose key lives on the same primary (SET without -c: MOVED elsewhere).
  for i in $(seq 0 300); do
    if [ "$(redis-cli -p "$owner" SET "${HA_KEY_PREFIX}ha_cluster_$i" 1)" = OK ]; then tag=ha_cluster_$i; break; fi
  done
  [ -n "$tag" ] || fail "no tag found on the primary at $owner"
  ha_seed "$owner" "$tag" 1
  ha_workload "$HA_URL" "$tag" cluster
  local name t0 new promoted floor rec survivors
  name=$(ha_name "$owner")
  survivors=$(tr ',' '\n' <<<"$HA_NODES" | grep -vx "$owner" | paste -sd,)
  t0=$(ha_now)
  ha_kill "$name"
  new=$(ha_py cluster-owner --ports "$survivors" --slot "$slot" --not "$owner") || fail "no replica took over slot $slot"
  promoted=$(( $(ha_now) - t0 ))
  floor=$(ha_counter "$new" "$HA_KEY_PREFIX$tag")
  # The promoted replica has no replica of its own: with the wait on, its slots take no
  # write until the killed node is back as its replica (restarted at once, as a
  # supervisor would).
  ha_server "$name" "$owner" --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 1000
  rec=$(ha_recovered "$t0" "$floor" "$new")
  ha_cluster_healthy >/dev/null
  ha_stop_workers
  local ids; ids=$(ha_ids)
  local sum; sum=$(ha_summary)
  note "ha_redis_cluster[$HA_LANGS]: the primary of slot $slot ({segflake} and $tag) killed -9, $(ha_name "$new") took over after $promoted ms (cluster_state:ok), issuing again after $rec; $ids; per process: ${sum% | *}"
}

# A live primary failed over (SENTINEL FAILOVER; Sentinel does the same by itself when a
# busy primary misses its pings for down-after-milliseconds, which these runs have seen):
# the chosen replica is promoted while the old primary still takes writes, and the other
# replica, not yet moved, acknowledges them; they are gone once it follows the new
# primary. HA_SWITCH_ROUNDS switchovers under two workloads on one deployment: every process
# with the default wait (a write counts once both replicas have it) on one tag: 0
# duplicates; two or more Python and Node segment processes waiting for one replica
# (replicas=1) on another tag: their duplicates are reported.
HA_SWITCH_ROUNDS=${HA_SWITCH_ROUNDS:-2}
ha_redis_sentinel_switchover() {
  ha_on_exit ha_redis_sentinel_switchover
  ha_sentinel_up
  local tag=ha_switch one=ha_switch_one p t0 floor rec r rounds=() lang ones=()
  p=$(ha_sentinel_healthy)
  ha_seed "$p" "$tag"
  ha_seed "$p" "$one"
  # (Two processes at least: one process refuses a range below its own by itself.)
  for lang in py $HA_LANGS; do
    case $lang in
      py | node)
        ha_worker "$lang" segments "ha-switch-one-$lang${#ones[@]}" --url "$HA_URL?replicas=1" --tag "$one" --rate 5000 --step 1000
        ones+=("$SCEN_OUT/ha-switch-one-$lang${#ones[@]}.ids") ;;
    esac
  done
  ha_workload "$HA_URL" "$tag" switch
  for ((r = 1; r <= HA_SWITCH_ROUNDS; r++)); do
    p=$(ha_sentinel_healthy)
    t0=$(ha_now)
    # (NOGOODSLAVE while the sentinel's view of the replicas is not fresh: asked again.)
    _wait_for 10 bash -c "[ \"\$(redis-cli -p ${HA_SENTINELS%%,*} SENTINEL FAILOVER $HA_SERVICE)\" = OK ]" ||
      fail "SENTINEL FAILOVER: $(redis-cli -p "${HA_SENTINELS%%,*}" SENTINEL FAILOVER "$HA_SERVICE")"
    HA_NEW=$(ha_promoted "$p")
    floor=$(ha_counter "$HA_NEW" "$HA_KEY_PREFIX$tag")
    rec=$(ha_recovered "$t0" "$floor" "$HA_NEW")
    rounds+=("$r: $(ha_name "$p") to $(ha_name "$HA_NEW") in $(( $(ha_now) - t0 )) ms, issuing again after $rec")
  done
  ha_sentinel_healthy >/dev/null
  ha_stop_workers
  local ids; ids=$(ha_ids)
  local sum; sum=$(ha_summary)
  local dups="no Python or Node processes"
  [ ${#ones[@]} = 0 ] || dups=$(check_ids --min 1 "${ones[@]}" 2>/dev/null | head -n 1) || true
  note "ha_redis_sentinel_switchover[$HA_LANGS]: SENTINEL FAILOVER $HA_SWITCH_ROUNDS times under load; ${rounds[*]}; default wait (both replicas): $ids; per process: ${sum% | *}; replicas=1, segment IDs: $dups"
}
