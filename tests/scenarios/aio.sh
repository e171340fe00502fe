# shellcheck shell=bash
# asyncio scenarios, sourced by run.sh: Python processes on one event loop each
# (tests/scenarios/aio_worker.py) draw IDs through the async stores, registries and serial
# counter on the real PostgreSQL, MariaDB and Redis, while a 10 ms ticker on the same loop
# measures how long the loop was held. Every scenario checks that no ID was issued twice.

# aio_proc NAME ARGS...: an aio_worker.py in the background; IDs in NAME.txt, summary in
# NAME.json. Sets $!.
aio_proc() {
  local name=$1; shift
  rm -f "$SCEN_OUT/$name".{txt,json,err}
  "$SCEN_PY" "$HERE/aio_worker.py" "$@" --out "$SCEN_OUT/$name.txt" --summary "$SCEN_OUT/$name.json" \
    2>"$SCEN_OUT/$name.err" &
}

aio_mysql_url() {
  echo "mysql://$SEGFLAKE_MYSQL_USER:$SEGFLAKE_MYSQL_PASSWORD@$SEGFLAKE_MYSQL_HOST:$SEGFLAKE_MYSQL_PORT/$SEGFLAKE_MYSQL_DB"
}

# aio_lag_ok MAX_MS NAME...: fails unless every named worker's loop lag stayed under MAX_MS.
aio_lag_ok() {
  local max=$1; shift
  "$SCEN_PY" - "$max" "$SCEN_OUT" "$@" <<'PY' || fail "event-loop lag over $1 ms"
import json, sys
limit, out, names = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
bad = [n for n in names if json.load(open(f"{out}/{n}.json"))["lag_max_ms"] >= limit]
sys.exit(1 if bad else 0)
PY
}

# Segments: per database, two processes with the async store and one with the synchronous
# store (on the generator's worker thread) share one tag with a small fixed step (many
# refills race); every ID distinct, and no loop held 500 ms or more.
aio_segments() {
  local db url pids=() names=() n
  for db in pg mysql redis; do
    case $db in
      pg) url=$SEGFLAKE_PG_DSN ;;
      mysql) url=$(aio_mysql_url) ;;
      redis) url=$SEGFLAKE_REDIS_URL ;;
    esac
    fresh_tag "$db" aio_seg 1
    for n in a1 a2 s1; do
      local extra=(); [ "$n" = s1 ] && extra=(--sync)
      aio_proc "aio-$db-$n" segments --db "$db" --url "$url" --tag aio_seg --seconds 3 --step 50 "${extra[@]}"
      pids+=($!); names+=("aio-$db-$n")
    done
  done
  wait_all "${pids[@]}"
  for db in pg mysql redis; do
    local files=(); for n in a1 a2 s1; do files+=("$SCEN_OUT/aio-$db-$n.txt"); done
    local line; line=$(check_ids --text --min 1 "${files[@]}") || fail "$db: $line"
    note "aio_segments $db: $line; lag max ms (async, async, sync on a thread): $(jfield lag_max_ms $(for n in a1 a2 s1; do echo "$SCEN_OUT/aio-$db-$n.json"; done))"
  done
  aio_lag_ok 500 "${names[@]}"
}

# A silent PostgreSQL: the async store (and the synchronous one, on a thread) reach the
# server through a proxy that drops every byte for 3 s (no close, no reset: only the
# deadlines end the calls). The loops must stay responsive (lag under 500 ms), the buffered
# IDs and then SegmentsExhaustedError come promptly, IDs flow again after the heal, and
# no ID is issued twice.
aio_blackhole_pg() {
  local port; port=$(_free_port 21990)
  "$SCEN_PY" "$HERE/tcp_proxy.py" "$port" "127.0.0.1:$PG_PORT" >"$SCEN_OUT/aio-proxy.log" 2>&1 &
  AIO_PROXY=$!
  local proxy=$AIO_PROXY
  trap 'kill "$AIO_PROXY" 2>/dev/null || true' EXIT
  wait_for_lines "$SCEN_OUT/aio-proxy.log" 10 || fail "the proxy did not start"
  local via="postgres://postgres@127.0.0.1:$port/postgres"
  fresh_tag pg aio_bh 1
  local pids=() names=(aio-bh-async aio-bh-sync) n
  for n in "${names[@]}"; do
    local extra=(); [ "$n" = aio-bh-sync ] && extra=(--sync)
    aio_proc "$n" segments --db pg --url "$via" --tag aio_bh --seconds 9 --step 100 --timeout 1 \
      --ready "$SCEN_OUT/$n.ready" "${extra[@]}"
    pids+=($!)
  done
  local i
  for ((i = 0; i < 100; i++)); do
    [ -f "$SCEN_OUT/aio-bh-async.ready" ] && [ -f "$SCEN_OUT/aio-bh-sync.ready" ] && break
    sleep 0.1
  done
  sleep 0.5
  kill -USR1 "$proxy"
  sleep 3
  kill -USR2 "$proxy"
  wait_all "${pids[@]}"
  kill "$proxy" 2>/dev/null || true
  local line; line=$(check_ids --text --min 1 "$SCEN_OUT/aio-bh-async.txt" "$SCEN_OUT/aio-bh-sync.txt") || fail "$line"
  "$SCEN_PY" - "$SCEN_OUT" "${names[@]}" <<'PY' || fail "the stores did not fail during the blackhole or did not recover"
import json, sys
out, names = sys.argv[1], sys.argv[2:]
for n in names:
    s = json.load(open(f"{out}/{n}.json"))
    ids = [int(l) for l in open(f"{out}/{n}.txt")]
    # Exhausted during the blackhole, and IDs from a range allocated after it.
    assert s["exhausted"] > 0, s
    assert ids and s["ids"] > 200, s
PY
  note "aio_blackhole_pg: $line; lag max ms (async, sync on a thread): $(jfield lag_max_ms "$SCEN_OUT/aio-bh-async.json" "$SCEN_OUT/aio-bh-sync.json"); p99: $(jfield lag_p99_ms "$SCEN_OUT/aio-bh-async.json" "$SCEN_OUT/aio-bh-sync.json"); exhausted: $(jfield exhausted "$SCEN_OUT/aio-bh-async.json" "$SCEN_OUT/aio-bh-sync.json")"
  aio_lag_ok 500 "${names[@]}"
}

# Leases and serials: per database, three processes lease worker IDs through the async
# registry (from_registry_async) and draw snowflake IDs; two processes draw serials from
# AsyncRedisSerialCounter. Distinct worker IDs, every ID and serial distinct.
aio_leases() {
  local db url pids=() names=() n
  for db in redis pg mysql; do
    reset_registry "$db"
    url=$(registry_url "$db")
    for n in 1 2 3; do
      aio_proc "aio-lease-$db-$n" lease --db "$db" --url "$url" --seconds 2
      pids+=($!); names+=("aio-lease-$db-$n")
    done
  done
  local prefix="aio-serial-$$-$RANDOM"
  for n in 1 2; do
    aio_proc "aio-serial-$n" serial --url "$SEGFLAKE_REDIS_URL" --prefix "$prefix" --seconds 2
    pids+=($!); names+=("aio-serial-$n")
  done
  wait_all "${pids[@]}"
  for db in redis pg mysql; do
    local files=() jsons=(); for n in 1 2 3; do files+=("$SCEN_OUT/aio-lease-$db-$n.txt"); jsons+=("$SCEN_OUT/aio-lease-$db-$n.json"); done
    local workers; workers=$(jfield worker_id "${jsons[@]}")
    [ "$(tr ' ' '\n' <<<"$workers" | sort -u | wc -l)" = 3 ] || fail "$db: worker IDs not distinct: $workers"
    local line; line=$(check_ids --text "${files[@]}") || fail "$db: $line"
    note "aio_leases $db: worker IDs $workers; $line"
  done
  local line; line=$(check_ids --text "$SCEN_OUT/aio-serial-1.txt" "$SCEN_OUT/aio-serial-2.txt") || fail "serials: $line"
  note "aio_leases serials: $line; lag max ms: $(jfield lag_max_ms $(for n in "${names[@]}"; do echo "$SCEN_OUT/$n.json"; done))"
  aio_lag_ok 500 "${names[@]}"
}

# TLS for the async adapters: TLS-only Redis, PostgreSQL and MariaDB of their own (tls.sh's
# servers and certificates); each async store, registry and the serial counter works with
# the right CA, is refused with the wrong one or a host name the certificate does not
# name, and never falls back to plaintext (tests/scenarios/aio_tls_client.py).
aio_tls() {
  local t0=$SECONDS
  tls_begin aio-tls 63919 54449 33189
  tls_databases_start
  local ca="$TLS_DIR/ca.pem" other="$TLS_DIR/other.pem" kind
  : >"$TLS_DIR/cases-py.part"
  local r="rediss://127.0.0.1:$TLS_REDIS_PORT/0"
  for kind in store registry counter; do
    tls_case py "redis $kind right CA" "$kind" "$r?ca=$ca" ok
    tls_case py "redis $kind wrong CA" "$kind" "$r?ca=$other" "$TLS_BAD_CA"
  done
  tls_case py "redis registry host not in the certificate" registry "rediss://127.0.0.2:$TLS_REDIS_PORT/0?ca=$ca" "$TLS_BAD_NAME"
  tls_case py "redis store plaintext server refuses rediss" store "rediss://${SEGFLAKE_REDIS_URL#redis://}" \
    'timed out|no answer within|wrong version number|packet length too long|unexpected eof|reset|Connection closed'
  local p="postgresql://postgres@127.0.0.1:$TLS_PG_PORT/postgres" p2="postgresql://postgres@127.0.0.2:$TLS_PG_PORT/postgres"
  for kind in store registry; do
    tls_case py "pg $kind verify-full right CA" "$kind" "$p?sslmode=verify-full&sslrootcert=$ca" ok
    tls_case py "pg $kind verify-full wrong CA" "$kind" "$p?sslmode=verify-full&sslrootcert=$other" "$TLS_BAD_CA"
  done
  tls_case py "pg registry verify-full host not in the certificate" registry "$p2?sslmode=verify-full&sslrootcert=$ca" "$TLS_BAD_NAME"
  tls_case py "pg store require on a plaintext server" store "$SEGFLAKE_PG_DSN?sslmode=require" 'server does not support SSL'
  local m="mysql://segflake:segflake@127.0.0.1:$TLS_MYSQL_PORT/segflake" m2="mysql://segflake:segflake@127.0.0.2:$TLS_MYSQL_PORT/segflake"
  for kind in store registry; do
    tls_case py "mysql $kind VERIFY_IDENTITY right CA" "$kind" "$m?ssl-mode=VERIFY_IDENTITY&ssl-ca=$ca" ok
    tls_case py "mysql $kind VERIFY_IDENTITY wrong CA" "$kind" "$m?ssl-mode=VERIFY_IDENTITY&ssl-ca=$other" "$TLS_BAD_CA"
  done
  tls_case py "mysql registry VERIFY_IDENTITY host not in the certificate" registry "$m2?ssl-mode=VERIFY_IDENTITY&ssl-ca=$ca" "$TLS_BAD_NAME"
  tls_case py "mysql registry VERIFY_CA other host name accepted" registry "$m2?ssl-mode=VERIFY_CA&ssl-ca=$ca" ok
  tls_case py "mysql store REQUIRED (encrypted, not verified)" store "$m?ssl-mode=REQUIRED" ok
  tls_case py "mysql store REQUIRED on a plaintext server" store "$(aio_mysql_url)?ssl-mode=REQUIRED" \
    'did not take TLS|not support|SSL is required'
  tls_json py
  local out rc=0
  out=$("$SCEN_PY" "$HERE/aio_tls_client.py" "$TLS_DIR/cases-py.json" 2>&1) || rc=1
  printf '%s\n' "$out" >"$SCEN_OUT/aio-tls.txt"
  [ $rc = 0 ] || fail "$(grep -v '^ok' <<<"$out")"
  note "aio_tls: $(grep -c '^ok' <<<"$out") cases as expected for the async stores, registries and counter; $((SECONDS - t0)) s"
}
