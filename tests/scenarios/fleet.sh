# shellcheck shell=bash
# Fleet-edge scenarios (worker-ID leases at the edges a real fleet meets), sourced by run.sh
# after leases.sh and serve.sh: processes that share one owner label (a host name), a
# Redis registry that forgets (FLUSHALL, a restart without the append-only file, eviction
# of the mark keys, a replica promoted without the primary's last writes) and a Leaf
# snowflake node that still reports while segflake claims its identity. Every scenario
# checks that no ID was issued twice, and which typed errors the processes saw.

# The leases' and the services' processes of a scenario, stopped when it ends (also when
# it fails), and the shared Redis put back as it was (fleet_restore).
FLEET_PIDS=()
FLEET_RESTORE=()
fleet_reap_on_exit() {
  trap 'kill -9 "${LEASE_PIDS[@]}" "${SERVE_PIDS[@]}" "${FLEET_PIDS[@]}" 2>/dev/null || true; fleet_restore' EXIT
}
fleet_restore() {
  local step
  for step in "${FLEET_RESTORE[@]}"; do eval "$step" >/dev/null 2>&1 || true; done
  FLEET_RESTORE=()
}

now_ms() { date +%s%3N; }

# ON_HOST LABEL CMD...: CMD on a host named LABEL (its own UTS namespace; $HOSTNAME too),
# the way gunicorn's or uwsgi's workers share one host name. It execs CMD: a process
# started with it in the background keeps the process ID $! gives.
ON_HOST=(unshare --uts sh -c 'hostname "$0" && HOSTNAME="$0" exec "$@"')

# fleet_node_worker NAME LABEL ARGS...: a Node lease worker on a host named LABEL (Node's
# owner label is the host name); sets $!.
fleet_node_worker() {
  local name=$1 label=$2; shift 2
  rm -f "$SCEN_OUT/$name".{txt,json,err}
  (cd "$SCEN_NODE_DIR" && exec "${ON_HOST[@]}" "$label" \
    node "$HERE/lease_worker.mjs" --out "$SCEN_OUT/$name.txt" --summary "$SCEN_OUT/$name.json" "$@") \
    2>"$SCEN_OUT/$name.err" &
  LEASE_PIDS+=($!)
}

# fleet_serve NAME LABEL ARGS...: `segflake serve` on a free port in the background, on a
# host named LABEL ("" for this host), without waiting for it. Sets SERVE_PID, SERVE_URL
# and SERVE_T0 (its start, Unix ms).
fleet_serve() {
  local name=$1 label=$2; shift 2
  SERVE_PORT=$(_free_port $((SERVE_PORT + 1)))
  local cmd=("$SCEN_CLI" serve --listen "127.0.0.1:$SERVE_PORT" "$@")
  [ -z "$label" ] || cmd=("${ON_HOST[@]}" "$label" "${cmd[@]}")
  SERVE_T0=$(now_ms)
  "${cmd[@]}" 2>"$SCEN_OUT/$name.log" &
  SERVE_PID=$!
  SERVE_PIDS+=("$SERVE_PID")
  SERVE_URL="http://127.0.0.1:$SERVE_PORT"
}

# ready_after URL T0 SECONDS: waits until URL/readyz answers 200 (the worker ID is held and
# IDs can be served); prints the milliseconds since T0. Fails after SECONDS.
ready_after() {
  local deadline=$(( $(date +%s) + $3 ))
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$1/readyz")" = 200 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
  echo $(( $(now_ms) - $2 ))
}

# first_line_after FILE T0 SECONDS: waits until FILE has a line; prints the milliseconds
# since T0 (the process's start-up wait, to within 0.1 s). Fails after SECONDS.
first_line_after() {
  wait_for_lines "$1" "$3" || return 1
  echo $(( $(now_ms) - $2 ))
}

# ids_to_text BIN TXT: u64 IDs (serve_client.py) as decimal lines, for check.py --text.
ids_to_text() {
  "$SCEN_PY" -c 'import array,sys; a=array.array("Q"); a.frombytes(open(sys.argv[1],"rb").read()); open(sys.argv[2],"w").write("".join(f"{i}\n" for i in a))' "$1" "$2"
}

# stop_workers PID...: SIGTERM, then each must exit 0 (its summary written).
stop_workers() {
  local p
  kill -TERM "$@" 2>/dev/null || true
  for p in "$@"; do wait "$p" || fail "a lease worker exited with $? after SIGTERM: $(tail -n 3 "$SCEN_OUT"/*.err)"; done
}

# Shared owner label: two Python processes given owner="web-1", a Node process and a
# `segflake serve` on a host named web-1 (their default label), all leasing from one Redis
# (3 worker bits). Every label derives the same preferred worker ID, so all four claim it
# first: each must end up on a different worker ID, with its own `web-1#<nonce>` token in
# the registry, and no ID issued twice. Each first claim finds no mark (a fresh registry)
# and so starts above claim time + max_drift_ms + mark_ahead_ms + clock_skew_allowance_ms.
fleet_shared_owner_redis() {
  fleet_reap_on_exit
  local url; url=$(registry_url redis); reset_registry redis
  local t0; t0=$(now_ms)
  lease_worker py own-py1 --registry "$url" --worker-bits 3 --owner web-1 --pause-ms 2; local p1=$!
  lease_worker py own-py2 --registry "$url" --worker-bits 3 --owner web-1 --pause-ms 2; local p2=$!
  fleet_node_worker own-node web-1 --registry "$url" --worker-bits 3 --pause-ms 2; local p3=$!
  fleet_serve own-serve web-1 --registry "$url" --worker-bits 3
  local s=$SERVE_PID s_url=$SERVE_URL
  local waits=() n w
  for n in own-py1 own-py2 own-node; do
    w=$(first_line_after "$SCEN_OUT/$n.txt" "$t0" 25) || fail "$n issued nothing: $(stderr_of "$n")"
    waits+=("$n ${w} ms")
  done
  w=$(ready_after "$s_url" "$SERVE_T0" 25) || fail "serve did not get ready: $(tail -n 3 "$SCEN_OUT/own-serve.log")"
  waits+=("serve ${w} ms")
  serve_client own-client --url "$s_url" --key web --kind snowflake --threads 2 --duration 4 --count 100
  local c=$!
  sleep 2
  # The registry while all four hold: one worker key each, four different tokens.
  local tokens; tokens=$(redis_cmd --scan --pattern '{segflake}:worker:*' | sort | while read -r k; do
    printf '%s=%s\n' "${k##*:}" "$(redis_cmd GET "$k")"; done)
  wait "$c" || fail "the HTTP client failed: $(stderr_of "own-client")"
  stop_workers "$p1" "$p2" "$p3"
  serve_stop "$s" own-serve
  ids_to_text "$SCEN_OUT/own-client.ids" "$SCEN_OUT/own-serve.txt"
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT" "$tokens" 2>&1 <<'PY'
import json, re, sys
out, tokens = sys.argv[1], sys.argv[2].split()
def ids(n):
    return [int(x) for x in open(f"{out}/{n}.txt", "rb").read().split(b"\n")[:-1]]
workers = {}
for n in ("own-py1", "own-py2", "own-node", "own-serve"):
    ws = {(i >> 12) & 7 for i in ids(n)}
    if len(ws) != 1:
        sys.exit(f"{n} issued IDs with worker IDs {sorted(ws)}")
    workers[n] = ws.pop()
if len(set(workers.values())) != 4:
    sys.exit(f"processes labelled web-1 share a worker ID: {workers}")
held = dict(t.split("=", 1) for t in tokens)
if len(held) != 4 or len(set(held.values())) != 4 or not all(re.fullmatch(r"web-1#[0-9a-f]{16}", o) for o in held.values()):
    sys.exit(f"the registry's worker keys: {held}")
if {int(k) for k in held} != set(workers.values()):
    sys.exit(f"worker keys {sorted(held)} are not the processes' worker IDs {workers}")
for n in ("own-py1", "own-py2", "own-node"):
    s = json.load(open(f"{out}/{n}.json"))
    owner = (s.get("stats") or {}).get("owner", "")
    if not owner.startswith("web-1#") or held.get(str(workers[n])) != owner:
        sys.exit(f"{n}: owner token {owner!r}, the registry holds {held.get(str(workers[n]))!r}")
    if s["errors"]:
        sys.exit(f"{n}: errors {s['errors']}")
print("worker IDs " + ", ".join(f"{n.removeprefix('own-')} {w}" for n, w in workers.items())
      + f"; tokens {', '.join(sorted(held.values()))}")
PY
) || fail "$verdict"
  local line; line=$(check_ids --text "$SCEN_OUT"/own-{py1,py2,node,serve}.txt) || fail "$line"
  note "fleet_shared_owner_redis: 2 Python (owner=\"web-1\"), 1 Node and segflake serve on a host named web-1, one Redis: $verdict; first start on a fresh registry: ${waits[*]}; $line"
}

# A Redis registry that forgets its lease and mark while a holder serves (MODE flushall:
# FLUSHALL; restart: Redis killed -9 and restarted without the append-only file or
# snapshots, so it comes back empty). Two `segflake serve --worker-bits 0` (one worker
# ID): the first serves an HTTP client (?count=100 batches) when the registry forgets, the
# second is started right after. Whichever claims the forgotten worker ID first finds no
# mark and starts above claim time + 6 s (max_drift 2 s + mark_ahead 3 s + skew 1 s); the
# first learns at its next renewal that its lease is gone (REGISTRY_LOST_DATA when no
# record is left, LEASE_EXPIRED when the second already holds it) and stops at once. When
# the first re-claimed the worker ID itself, it is stopped once it serves again, so the
# second gets it (above the first's released mark). No ID is answered by both.
fleet_forget() {
  local mode=$1 name=$2 url
  fleet_reap_on_exit
  if [ "$mode" = restart ]; then
    local d="$SERVICES_DIR/redis-nopersist"
    mkdir -p "$d"
    redis_stop
    FLEET_RESTORE+=("redis_stop kill9" "redis_start")
    redis_start --appendonly no --save '' --dir "$d"
  fi
  url=$(registry_url redis); reset_registry redis
  # Host names tell the two servers' owner tokens apart in the registry.
  fleet_serve forget-a serve-a --registry "$url" --worker-bits 0
  local a=$SERVE_PID a_url=$SERVE_URL
  local a_wait; a_wait=$(ready_after "$a_url" "$SERVE_T0" 25) || fail "the first server did not get ready: $(tail -n 3 "$SCEN_OUT/forget-a.log")"
  serve_client forget-ca --url "$a_url" --key x --kind snowflake --threads 2 --duration 13 --count 100
  local ca=$!
  sleep 2.5
  local t_forget; t_forget=$(now_ms)
  case $mode in
    flushall) redis_cmd FLUSHALL >/dev/null ;;
    restart) redis_stop kill9; redis_start --appendonly no --save '' --dir "$d" ;;
  esac
  local t_back; t_back=$(now_ms)
  fleet_serve forget-b serve-b --registry "$url" --worker-bits 0 --claim-wait-ms 30000
  local b=$SERVE_PID b_url=$SERVE_URL b_t0=$SERVE_T0 order="" i holder
  # Who claims the forgotten worker ID: the second at its start, or the first at its next
  # renewal (at most ~1.7 s: a third of mark_ahead_ms + max_drift_ms)?
  for ((i = 0; i < 250 && ${#order} == 0; i++)); do
    holder=$(redis_cmd GET '{segflake}:worker:0')
    case $holder in
      serve-b#*) order=second-first ;;
      serve-a#*) order=first-reclaimed ;;
      *) sleep 0.02 ;;
    esac
  done
  [ -n "$order" ] || fail "nobody claimed the forgotten worker ID within 5 s"
  local b_wait
  if [ "$order" = first-reclaimed ]; then
    # Let the first serve under its new claim, then stop it (it releases the ID).
    ready_after "$a_url" 0 10 >/dev/null || fail "the first did not serve again after re-claiming"
    sleep 2
    serve_stop "$a" forget-a
  fi
  b_wait=$(ready_after "$b_url" "$b_t0" 20) || fail "the second server never got the worker ID: $(tail -n 3 "$SCEN_OUT/forget-b.log")"
  serve_client forget-cb --url "$b_url" --key x --kind snowflake --threads 2 --duration 3 --count 100
  local cb=$!
  wait "$cb" || fail "the second's client failed"
  wait "$ca" || fail "the first's client failed"
  [ "$order" = first-reclaimed ] || serve_stop "$a" forget-a
  serve_stop "$b" forget-b
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT" "$t_forget" "$t_back" "$b_t0" "$order" 2>&1 <<'PY'
import array, json, sys
out, t_forget, t_back, b_t0, order = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
EPOCH = 1288834974657
def ids(n):
    a = array.array("Q"); a.frombytes(open(f"{out}/{n}.ids", "rb").read()); return a
ms = lambda i: (i >> 12) + EPOCH
a, b = ids("forget-ca"), ids("forget-cb")
sa, sb = (json.load(open(f"{out}/{n}.json")) for n in ("forget-ca", "forget-cb"))
codes = sa["codes"]
lost = {c: n for c, n in codes.items() if c in ("REGISTRY_LOST_DATA", "LEASE_EXPIRED")}
if not lost:
    sys.exit(f"the first server never answered REGISTRY_LOST_DATA or LEASE_EXPIRED: {codes} {sa['messages']}")
if not a or not b:
    sys.exit(f"IDs: first {len(a)}, second {len(b)}")
if sb["codes"]:
    sys.exit(f"the second server refused requests: {sb['codes']} {sb['messages']}")
before = [i for i in a if ms(i) <= t_forget]
after = [i for i in a if ms(i) > t_forget]
if order == "second-first":
    # The second claimed the forgotten ID without a mark: above claim time + 6 s.
    if ms(min(b)) <= b_t0 + 6000:
        sys.exit(f"the second's first ID ({ms(min(b)) - b_t0} ms after its start) is not above claim time + 6 s")
if max(a) >= min(b):
    sys.exit(f"the first issued {sum(1 for i in a if i >= min(b))} IDs at or above the second's first")
stall = sa["longest_stall_ms"]
print(f"first: {len(before)} IDs before the registry forgot, {len(after)} after "
      f"(all below the second's), then refused: {', '.join(f'{c} x{n}' for c, n in sorted(lost.items()))}"
      + (f", {', '.join(f'{c} x{n}' for c, n in sorted(codes.items()) if c not in lost)}" if len(codes) > len(lost) else "")
      + f"; longest stall {stall:.0f} ms; second: {len(b)} IDs, "
      f"its first ID stamped {ms(min(b)) - b_t0} ms after its start"
      f" | {order} | {sa['messages'][0][:200]}")
PY
) || fail "$verdict"
  local what ord msg
  IFS='|' read -r what ord msg <<<"$verdict"
  ord=${ord// /}
  local line; line=$(check_ids --min 1 "$SCEN_OUT/forget-ca.ids" "$SCEN_OUT/forget-cb.ids") || fail "$line"
  local how="FLUSHALL"; [ "$mode" = restart ] && how="Redis killed -9 and restarted without AOF (down $((t_back - t_forget)) ms)"
  local who="the second claimed the forgotten worker ID"
  [ "$ord" = first-reclaimed ] && who="the first re-claimed the forgotten worker ID itself (stopped once it served again, then the second took it)"
  note "$name: two serve --worker-bits 0; first ready after ${a_wait} ms on a fresh registry; $how while it served; $who; $what; second ready ${b_wait} ms after its start; first's error: \"$msg\"; $line"
}
fleet_flushall_redis() { fleet_forget flushall fleet_flushall_redis; }
fleet_redis_restart_no_aof() { fleet_forget restart fleet_redis_restart_no_aof; }

# fleet_cli_unmarked NAME URL: `segflake next --registry URL --worker-bits 0` for 1,000 IDs
# (decimal, NAME.txt) while the worker ID has no mark: its first ID must be stamped above
# its start + max_drift_ms + mark_ahead_ms + clock_skew_allowance_ms (6 s by default).
# Prints the milliseconds from its start to that stamp and how long it ran.
fleet_cli_unmarked() {
  local t0; t0=$(now_ms)
  "$SCEN_CLI" next --registry "$2" --worker-bits 0 --count 1000 >"$SCEN_OUT/$1.txt" 2>"$SCEN_OUT/$1.err" ||
    fail "segflake next on a worker ID without a mark: $(stderr_of "$1")"
  local took=$(( $(now_ms) - t0 ))
  local first; first=$(head -n 1 "$SCEN_OUT/$1.txt")
  local ahead=$(( (first >> 12) + 1288834974657 - t0 ))
  [ "$ahead" -gt 6000 ] || fail "the CLI's first ID is stamped $ahead ms after its start, not above claim time + 6 s"
  echo "$ahead $took"
}

# Eviction of the mark: a Python holder of the only worker ID (1 s leases) is SIGSTOPped;
# once its lease ran out, Redis is given a maxmemory just above what it uses with
# allkeys-lru and filled until it evicts the worker ID's mark key. A Node successor then
# claims the ID without a mark, so it starts above claim time + 6 s; the paused holder is
# resumed during the successor's start-up wait and issues at most up to its accepted mark
# (all below the successor's IDs), then stops with LeaseExpired. Then the successor's
# released mark is deleted too and the CLI claims: it starts above claim time + 6 s.
# The successor's lease is 3 s: with 1 s, a start-up stalled for ~0.7 s under load let its
# lease run out, the resumed holder claimed the ID again and kept it, and the successor
# failed with NoFreeWorkerId (correct behaviour, and not what this scenario is about).
fleet_eviction_redis() {
  fleet_reap_on_exit
  local url; url=$(registry_url redis); reset_registry redis
  lease_worker py evict-a --registry "$url" --worker-bits 0 --lease-ttl-ms 1000 --pause-ms 1
  local a=$!
  wait_for_lines "$SCEN_OUT/evict-a.txt" 20 || fail "the first holder issued nothing: $(stderr_of "evict-a")"
  local token_a; token_a=$(redis_cmd GET '{segflake}:worker:0')
  sleep 1
  kill -STOP "$a"
  local before; before=$(lines "$SCEN_OUT/evict-a.txt")
  sleep 1.5
  [ -n "$(redis_cmd GET '{segflake}:mark:0')" ] || fail "the paused holder left no mark to evict"
  [ -z "$(redis_cmd GET '{segflake}:worker:0')" ] || fail "the paused holder's lease did not run out"
  FLEET_RESTORE+=("redis_cmd CONFIG SET maxmemory 0"
                  "redis_cmd CONFIG SET maxmemory-policy $(redis_cmd CONFIG GET maxmemory-policy | tail -n 1)"
                  "redis_cmd CONFIG SET maxmemory-samples $(redis_cmd CONFIG GET maxmemory-samples | tail -n 1)"
                  "redis_cmd --scan --pattern 'fleet:junk:*' | xargs -r -n 1000 redis-cli -u '$SEGFLAKE_REDIS_URL' DEL")
  local evicted; evicted=$("$SCEN_PY" - "$SEGFLAKE_REDIS_URL" 2>&1 <<'PY'
import sys, redis
r = redis.Redis.from_url(sys.argv[1])
mark = "{segflake}:mark:0"
used = r.info("memory")["used_memory"]
r.config_set("maxmemory-policy", "allkeys-lru")
r.config_set("maxmemory-samples", 10)
r.config_set("maxmemory", used + 1_000_000)
e0 = r.info("stats")["evicted_keys"]
payload, i = b"x" * 1000, 0
while r.exists(mark):  # EXISTS does not touch the key's LRU clock
    if i >= 200_000:
        sys.exit(f"the mark key survived {i} writes of 1 kB under maxmemory")
    p = r.pipeline(transaction=False)
    for _ in range(200):
        p.set(f"fleet:junk:{i}", payload)
        i += 1
    p.execute()
print(f"{i} writes of 1 kB over maxmemory = used + 1 MB evicted {r.info('stats')['evicted_keys'] - e0} keys, the mark among them")
PY
) || fail "$evicted"
  fleet_restore
  local t_b; t_b=$(now_ms)
  # Who holds the worker ID from here on: each change, ms after the successor's start.
  fleet_watch_holder "$SCEN_OUT/evict-holders.txt" "$t_b" "$token_a" holder
  lease_worker node evict-b --registry "$url" --worker-bits 0 --lease-ttl-ms 3000 --pause-ms 1
  local b=$!
  # The holder resumes once the successor holds the ID (only it can claim while the holder
  # is stopped), in the successor's start-up wait: not after a fixed sleep, which a slow
  # Node start-up outlasts (the holder, resumed first, then kept the ID).
  _wait_for 20 bash -c "[ -n \"\$(redis-cli -u '$SEGFLAKE_REDIS_URL' GET '{segflake}:worker:0')\" ]" ||
    fail "the successor did not claim the worker ID: $(stderr_of evict-b)"
  kill -CONT "$a"
  local b_wait; b_wait=$(first_line_after "$SCEN_OUT/evict-b.txt" "$t_b" 20) ||
    fail "the successor issued nothing: $(stderr_of "evict-b"); the worker ID's holders (ms after its start): $(paste -sd, "$SCEN_OUT/evict-holders.txt")"
  sleep 1.5
  fleet_watch_end "$SCEN_OUT/evict-holders.txt"
  stop_workers "$a" "$b"
  local expired; expired=$(lease_sum error:LeaseExpired evict-a)
  local lostdata; lostdata=$(lease_sum error:RegistryLostData evict-a)
  [ $((expired + lostdata)) -gt 0 ] || fail "the resumed holder never reported LeaseExpired or RegistryLostData"
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT/evict-a.txt" "$SCEN_OUT/evict-b.txt" "$before" "$t_b" 2>&1 <<'PY'
import sys
def ids(p):
    return [int(x) for x in open(p, "rb").read().split(b"\n")[:-1]]
a, b, before, t_b = ids(sys.argv[1]), ids(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ms = lambda i: (i >> 12) + 1288834974657
if not b or min(b) <= max(a):
    sys.exit(f"a successor ID ({min(b)}) is not above the paused holder's last ({max(a)})")
if ms(min(b)) <= t_b + 6000:
    sys.exit(f"the successor's first ID is stamped {ms(min(b)) - t_b} ms after its start: not above claim time + 6 s")
print(f"paused holder: {before} IDs before the pause, {len(a) - before} after it resumed (all below the successor's); "
      f"successor (Node): {len(b)} IDs, the first stamped {ms(min(b)) - t_b} ms after its start")
PY
) || fail "$verdict"
  redis_cmd DEL '{segflake}:mark:0' >/dev/null
  local cli; cli=$(fleet_cli_unmarked evict-cli "$url")
  local line; line=$(check_ids --text "$SCEN_OUT"/evict-{a,b,cli}.txt) || fail "$line"
  note "fleet_eviction_redis: $evicted; $verdict, issuing ${b_wait} ms after its start; the resumed holder got LeaseExpired $expired and RegistryLostData $lostdata times; the CLI after the successor's released mark was deleted too: first ID stamped ${cli% *} ms after its start (ran ${cli#* } ms); $line"
}

# fleet_watch_holder FILE T0 TOKEN NAME: in the background until fleet_watch_end FILE,
# each change of who holds Redis's worker ID 0 as a line "MS HOLDER" in FILE, MS after T0,
# the owner token TOKEN written as NAME.
fleet_watch_holder() {
  local out=$1 t0=$2 token=$3 name=$4
  rm -f "$out.end"
  (
    prev=-
    until [ -e "$out.end" ]; do
      h=$(redis_cmd GET '{segflake}:worker:0' 2>/dev/null)
      [ "$h" != "$token" ] || h=$name
      [ "$h" = "$prev" ] || { echo "$(( $(now_ms) - t0 )) ${h:-nobody}"; prev=$h; }
      sleep 0.02
    done
  ) >"$out" &
  FLEET_PIDS+=($!)
}
fleet_watch_end() { : >"$1.end"; }

# fleet_redis NAME PORT ARG...: a scenario-private redis-server without persistence.
fleet_redis() {
  local d="$SERVICES_DIR/$1"
  mkdir -p "$d"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$2" --dir "$d" --appendonly no --save '' \
    --pidfile "$d/redis.pid" --logfile "$d/redis.log" "${@:3}" >/dev/null
  _wait_for 10 redis-cli -p "$2" ping || fail "redis-server $1 did not start"
  FLEET_RESTORE+=("_stop_pidfile '$d/redis.pid' 10 kill9")
}

# A replica promoted without the primary's last writes: a primary, and a replica that
# replicates through a TCP proxy. A Python holder of the only worker ID (2 s leases)
# renews on the primary; the proxy then drops the replication stream (the replica keeps
# the worker key and mark as they were), the holder keeps renewing on the primary for 5 s,
# the primary is killed -9 and the replica promoted (REPLICAOF NO ONE), with a worker key
# that expired long ago and a mark 5 s old. A Node successor claims the worker ID on the
# promoted replica while the holder, which lost its registry, still issues until its own
# lease ends; then the CLI after the successor. No ID may be issued twice.
fleet_replica_promotion_redis() {
  fleet_reap_on_exit
  local pp xp rp
  pp=$(_free_port 16390); fleet_redis fleet-primary "$pp"
  xp=$(_free_port $((pp + 1)))
  "$SCEN_PY" "$HERE/tcp_proxy.py" "$xp" "127.0.0.1:$pp" >"$SCEN_OUT/repl-proxy.log" 2>&1 &
  local proxy=$!; FLEET_PIDS+=("$proxy")
  wait_for_lines "$SCEN_OUT/repl-proxy.log" 10 || fail "the proxy did not start"
  rp=$(_free_port $((xp + 1))); fleet_redis fleet-replica "$rp" --replicaof 127.0.0.1 "$xp"
  _wait_for 10 bash -c "redis-cli -p $rp INFO replication | grep -q master_link_status:up" || fail "the replica did not sync"
  local primary="redis://127.0.0.1:$pp/0" replica="redis://127.0.0.1:$rp/0"
  lease_worker py repl-a --registry "$primary" --worker-bits 0 --lease-ttl-ms 2000 --pause-ms 1
  local a=$!
  wait_for_lines "$SCEN_OUT/repl-a.txt" 20 || fail "the holder issued nothing: $(stderr_of "repl-a")"
  sleep 1
  _wait_for 5 bash -c "[ \"\$(redis-cli -p $rp GET '{segflake}:mark:0')\" = \"\$(redis-cli -p $pp GET '{segflake}:mark:0')\" ]" ||
    fail "the replica does not follow the primary's mark"
  kill -USR1 "$proxy"
  local t_part; t_part=$(now_ms)
  sleep 5
  local p_mark r_mark
  p_mark=$(redis-cli -p "$pp" GET '{segflake}:mark:0'); r_mark=$(redis-cli -p "$rp" GET '{segflake}:mark:0')
  [ "$p_mark" -gt "$r_mark" ] || fail "the replica is not behind the primary (marks $r_mark, $p_mark)"
  # No waiting for the killed primary to be reaped: the failover follows at once.
  kill -9 "$(cat "$SERVICES_DIR/fleet-primary/redis.pid")"
  redis-cli -p "$rp" REPLICAOF NO ONE >/dev/null
  local t_b; t_b=$(now_ms)
  lease_worker node repl-b --registry "$replica" --worker-bits 0 --lease-ttl-ms 2000 --pause-ms 1
  local b=$!
  local b_wait; b_wait=$(first_line_after "$SCEN_OUT/repl-b.txt" "$t_b" 20) || fail "the successor issued nothing: $(stderr_of "repl-b")"
  sleep 3
  stop_workers "$a" "$b"
  local cli; cli=$("$SCEN_CLI" next --registry "$replica" --worker-bits 0 --count 1000 2>"$SCEN_OUT/repl-cli.err" >"$SCEN_OUT/repl-cli.txt" &&
    echo ok) || fail "the CLI after the successor: $(stderr_of "repl-cli")"
  local expired; expired=$(lease_sum error:LeaseExpired repl-a)
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT" "$t_part" "$t_b" "$p_mark" "$r_mark" 2>&1 <<'PY'
import json, sys
out, t_part, t_b, p_mark, r_mark = sys.argv[1], *map(int, sys.argv[2:])
def ids(n):
    return [int(x) for x in open(f"{out}/{n}.txt", "rb").read().split(b"\n")[:-1]]
ms = lambda i: (i >> 12) + 1288834974657
a, b, c = ids("repl-a"), ids("repl-b"), ids("repl-cli")
late = [i for i in a if ms(i) > t_b]
both = len(set(a) & set(b))
if both or min(b) <= max(a):
    sys.exit(f"the successor on the promoted replica issued {both} of the holder's IDs; holder's last ID stamped "
             f"{ms(max(a)) - t_b} ms after the promotion ({len(late)} IDs after it), successor's first {ms(min(b)) - t_b} ms; "
             f"replica's mark {r_mark - t_b} ms, primary's lost mark {p_mark - t_b} ms (relative to the promotion)")
if min(c) <= max(b):
    sys.exit("the CLI issued below the successor")
print(f"replica's mark {p_mark - r_mark} ms behind the primary's; holder: {len(a)} IDs, {len(late)} stamped after the promotion; "
      f"successor (Node): {len(b)} IDs, the first stamped {ms(min(b)) - t_b} ms after its start; CLI: {len(c)} IDs above")
PY
) || fail "$verdict"
  local line; line=$(check_ids --text "$SCEN_OUT"/repl-{a,b,cli}.txt) || fail "$line"
  note "fleet_replica_promotion_redis: replication partitioned 5 s before the primary was killed -9 and the replica promoted; $verdict; successor issuing ${b_wait} ms after its start; the holder got LeaseExpired $expired times; $line"
}

# A live Leaf node beside a segflake claim for its identity (ZooKeeper, Leaf's layout): a
# Leaf node (tests/scenarios/leaf_snowflake.py) reports for 10.0.0.3:8080 every 3 s and
# issues IDs. A Python lease worker and then `segflake next` claim that identity: each
# must be refused with LEAF_NODE_ALIVE within 10 s (the node's record changed during one
# report period), issue nothing and leave no claim behind, while the Leaf node keeps its
# worker ID and keeps issuing. Once the Leaf node is killed, a Python claim succeeds (its
# IDs above all of the Leaf node's, same worker ID), and the CLI after it.
fleet_live_leaf_zk() {
  fleet_reap_on_exit
  local root=/snowflake/fleet-leaf ident=10.0.0.3:8080
  local url="zk://$SEGFLAKE_ZK_HOSTS$root?identity=$ident&session_timeout_ms=2000"
  leaf_zk reset --root "$root"
  # Two other nodes first: the live one is worker ID 2.
  leaf_zk fleet --root "$root" --identities 10.0.0.1:8080,10.0.0.2:8080
  rm -f "$SCEN_OUT/live-leaf.txt"
  "$SCEN_PY" "$HERE/leaf_snowflake.py" node --zk "$SEGFLAKE_ZK_HOSTS" --root "$root" --identity "$ident" \
    --out "$SCEN_OUT/live-leaf.txt" 2>"$SCEN_OUT/live-leaf.err" &
  local leaf=$!; FLEET_PIDS+=("$leaf")
  wait_for_lines "$SCEN_OUT/live-leaf.txt" 20 || fail "the Leaf node issued nothing: $(stderr_of "live-leaf")"
  local t0 status=0 took_py took_cli
  t0=$(now_ms)
  # (2 s leases, as the other ZooKeeper scenarios: shorter than the check's wait.)
  timeout -k 2 30 "$SCEN_PY" "$HERE/lease_worker.py" --registry "$url" --worker-bits 10 --count 1000 --lease-ttl-ms 2000 \
    --out "$SCEN_OUT/live-py.txt" --summary "$SCEN_OUT/live-py.json" 2>"$SCEN_OUT/live-py.err" || status=$?
  took_py=$(( $(now_ms) - t0 ))
  [ "$status" != 124 ] || fail "a Python claim beside a live Leaf node was neither refused nor started within 30 s"
  [ "$status" = 3 ] || fail "a Python claim beside a live Leaf node was not refused (status $status): $(stderr_of "live-py")"
  grep -q 'LEAF_NODE_ALIVE' "$SCEN_OUT/live-py.err" || fail "Python: not LEAF_NODE_ALIVE: $(stderr_of "live-py")"
  [ "$(lines "$SCEN_OUT/live-py.txt")" = 0 ] || fail "the refused Python process wrote IDs"
  [ "$took_py" -le 10000 ] || fail "the Python refusal took $took_py ms"
  t0=$(now_ms); status=0
  timeout -k 2 30 "$SCEN_CLI" next --registry "$url" --count 10 >"$SCEN_OUT/live-cli.txt" 2>"$SCEN_OUT/live-cli.err" || status=$?
  took_cli=$(( $(now_ms) - t0 ))
  [ "$status" != 124 ] || fail "a CLI claim beside a live Leaf node was neither refused nor started within 30 s"
  [ "$status" != 0 ] || fail "the CLI issued IDs beside a live Leaf node"
  grep -q 'LEAF_NODE_ALIVE' "$SCEN_OUT/live-cli.err" || fail "CLI: not LEAF_NODE_ALIVE: $(stderr_of "live-cli")"
  [ "$(lines "$SCEN_OUT/live-cli.txt")" = 0 ] || fail "the refused CLI wrote IDs"
  [ "$took_cli" -le 10000 ] || fail "the CLI refusal took $took_cli ms"
  [ -z "$(leaf_zk held --root "$root" --worker 2)" ] || fail "a refused claim left its node behind"
  local mid; mid=$(lines "$SCEN_OUT/live-leaf.txt")
  sleep 1
  [ "$(lines "$SCEN_OUT/live-leaf.txt")" -gt "$mid" ] || fail "the Leaf node stopped issuing"
  kill -9 "$leaf"
  wait "$leaf" 2>/dev/null || true
  local t_py; t_py=$(now_ms)
  lease_worker py live-after --registry "$url" --worker-bits 10 --count 20000 --pause-ms 1
  local p=$!
  local after_wait; after_wait=$(first_line_after "$SCEN_OUT/live-after.txt" "$t_py" 20) ||
    fail "the claim after the Leaf node stopped issued nothing: $(stderr_of "live-after")"
  wait "$p" || fail "the claim after the Leaf node failed: $(stderr_of "live-after")"
  "$SCEN_CLI" next --registry "$url" --count 1000 >"$SCEN_OUT/live-cli-after.txt" 2>"$SCEN_OUT/live-cli-after.err" ||
    fail "the CLI after the Leaf node failed: $(stderr_of "live-cli-after")"
  local nodes; nodes=$(leaf_zk check --root "$root") || fail "Leaf cannot read its znodes afterwards"
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT" 2>&1 <<'PY'
import sys
out = sys.argv[1]
def ids(n):
    return [int(x) for x in open(f"{out}/{n}.txt", "rb").read().split(b"\n")[:-1]]
worker = lambda i: (i >> 12) & 1023
leaf, py, cli = ids("live-leaf"), ids("live-after"), ids("live-cli-after")
if {worker(i) for i in leaf} != {2}:
    sys.exit(f"the Leaf node's worker IDs: {sorted({worker(i) for i in leaf})}")
if {worker(i) for i in py + cli} != {2}:
    sys.exit(f"segflake after the Leaf node: worker IDs {sorted({worker(i) for i in py + cli})}")
if min(py) <= max(leaf) or min(cli) <= max(py):
    sys.exit("a claim after the Leaf node issued below its predecessor")
print(f"the Leaf node kept worker ID 2 ({len(leaf)} IDs); then Python {len(py)} IDs on worker ID 2, "
      f"the first {(min(py) >> 22) - (max(leaf) >> 22)} ms after the Leaf node's last; CLI {len(cli)} above them")
PY
) || fail "$verdict"
  local line; line=$(check_ids --text "$SCEN_OUT"/live-{leaf,after,cli-after}.txt) || fail "$line"
  local msg; msg=$(grep -m1 -o 'LEAF_NODE_ALIVE.*' "$SCEN_OUT/live-py.err" | cut -c1-170)
  note "fleet_live_leaf_zk: claims beside a live Leaf node refused with LEAF_NODE_ALIVE: Python after $took_py ms, CLI after $took_cli ms (\"$msg\"), no claim left; $verdict; the claim after the Leaf node was killed issued ${after_wait} ms after its start; Leaf reads its $(wc -l <<<"$nodes") znodes; $line"
}
