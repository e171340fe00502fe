# shellcheck shell=bash
# Python frameworks and process models, sourced by run.sh: the example apps of
# examples/python run as users run them, on the real PostgreSQL and Redis, and every ID
# any of their processes issued is checked for duplicates.

# The FastAPI example under uvicorn (one process) and under gunicorn (three uvicorn
# workers) at once, both behind one TCP proxy to PostgreSQL, both leasing snowflake worker
# IDs from Redis, with http_load.py clients on each. Mid-run PostgreSQL is blackholed for
# 3 s (the proxy drops every byte, no close), then stopped for 3 s and started again.
# Checked: no ID twice across the four processes, every loop kept running through the
# outages (lag max under 500 ms; the p99 is reported against a 50 ms goal), no snowflake
# request failed, segment requests failed only with 503 SEGMENTS_EXHAUSTED/STORE_ERROR and
# flowed again after each outage.
fastapi_outage_pg() {
  local proxy_port uv_port gu_port
  # Each port from the one above the last: in a lane (services.sh) nearby bases give one port.
  proxy_port=$(_free_port 21996) && uv_port=$(_free_port $((proxy_port + 1))) && gu_port=$(_free_port $((uv_port + 1)))
  "$SCEN_PY" "$HERE/tcp_proxy.py" "$proxy_port" "127.0.0.1:$PG_PORT" >"$SCEN_OUT/fw-proxy.log" 2>&1 &
  FW_PIDS=($!)
  trap 'kill "${FW_PIDS[@]}" 2>/dev/null || true' EXIT
  wait_for_lines "$SCEN_OUT/fw-proxy.log" 10 || fail "the proxy did not start"
  # A small fixed step (the row's step too: the store starts from it): a buffer lasts
  # about a second under this load, so the outages outlast it.
  pg_sql "DELETE FROM leaf_alloc WHERE biz_tag = 'fw_order';
          INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('fw_order', 1, 200, 'scenario')"
  reset_registry redis
  local lag="$SCEN_OUT/fw-lag"; rm -rf "$lag" && mkdir -p "$lag"
  local envs=(SCEN_LAG_DIR="$lag" SEGFLAKE_PG_URL="postgresql://postgres@127.0.0.1:$proxy_port/postgres"
              SEGFLAKE_REDIS_URL="$SEGFLAKE_REDIS_URL" SEGFLAKE_TAGS=fw_order SEGFLAKE_SEGMENT_STEP=200)
  env "${envs[@]}" "$SCEN_PY" -m uvicorn asgi_lag:app --app-dir "$HERE" --host 127.0.0.1 --port "$uv_port" \
    --log-level warning 2>"$SCEN_OUT/fw-uvicorn.err" &
  local uv=$!
  env "${envs[@]}" "$SCEN_PY" -m gunicorn asgi_lag:app --chdir "$HERE" -k uvicorn_worker.UvicornWorker -w 3 \
    -b "127.0.0.1:$gu_port" --graceful-timeout 20 --log-level warning 2>"$SCEN_OUT/fw-gunicorn.err" &
  local gu=$!
  FW_PIDS+=("$uv" "$gu")
  "$SCEN_PY" "$HERE/frameworks.py" ready "$uv_port" "$gu_port" --seconds 60 || {
    tail -n 20 "$SCEN_OUT"/fw-*.err >&2; fail "the servers did not get ready"; }
  local loads=()
  "$SCEN_PY" "$HERE/http_load.py" --port "$uv_port" --tag fw_order --seconds 15 --threads 3 \
    --out "$SCEN_OUT/fw-uvicorn" 2>"$SCEN_OUT/fw-load-uvicorn.err" &
  loads+=($!)
  "$SCEN_PY" "$HERE/http_load.py" --port "$gu_port" --tag fw_order --seconds 15 --threads 6 \
    --out "$SCEN_OUT/fw-gunicorn" 2>"$SCEN_OUT/fw-load-gunicorn.err" &
  loads+=($!)
  sleep 3
  local bh0 bh1 st0 st1
  bh0=$(date +%s.%N); kill -USR1 "${FW_PIDS[0]}"; sleep 3
  kill -USR2 "${FW_PIDS[0]}"; bh1=$(date +%s.%N)
  sleep 2
  st0=$(date +%s.%N); postgres_stop fast; sleep 3
  postgres_start >/dev/null; st1=$(date +%s.%N)
  wait_all "${loads[@]}"
  # TERM: each worker finishes its lifespan (releases its lease) and writes its lag samples.
  kill -TERM "$uv" "$gu"
  wait "$uv" "$gu" 2>/dev/null || true
  kill "${FW_PIDS[0]}" 2>/dev/null || true
  local line
  line=$(check_ids --text --min 1 "$SCEN_OUT/fw-uvicorn.seg" "$SCEN_OUT/fw-gunicorn.seg") || fail "segment IDs: $line"
  local sf; sf=$(check_ids --text "$SCEN_OUT/fw-uvicorn.sf" "$SCEN_OUT/fw-gunicorn.sf") || fail "snowflake IDs: $sf"
  local figures
  figures=$("$SCEN_PY" "$HERE/frameworks.py" outage "$SCEN_OUT/fw-figures.json" "$lag" \
    "blackhole:$bh0:$bh1,stopped:$st0:$st1" "$SCEN_OUT/fw-uvicorn" "$SCEN_OUT/fw-gunicorn") || {
    printf '%s\n' "$figures" >&2; fail "the outage figures are wrong (above)"; }
  note "fastapi_outage_pg: segment $line; snowflake $sf; $("$SCEN_PY" - "$SCEN_OUT/fw-figures.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))
lag = f["loop_lag_during_outages"]
parts = [f"loop lag during the outages over {lag['processes']} processes: p99 {lag['p99_ms']} ms, max {lag['max_ms']} ms (goal: p99 under 50 ms)"]
for name, s in f["servers"].items():
    parts.append(
        f"{name}: {s['requests']} requests, during the outages {s['seg_ok_during_outages']} segment requests served "
        f"from buffers and {s['seg_503_during_outages']} got 503, snowflake {s['sf_ok_during_outages']} served; "
        f"recovery after blackhole/stop {s['recovery_ms'].get('blackhole', '-')}/{s['recovery_ms'].get('stopped', '-')} ms"
    )
print("; ".join(parts))
PY
)"
}

# The Celery example with the prefork pool (three processes), broker and results on Redis:
# 200 tasks of each kind, 50 IDs each. Each pool process leased its own worker ID; no ID
# twice across the pool.
celery_prefork() {
  reset_registry redis
  local broker="${SEGFLAKE_REDIS_URL%/*}/5"
  redis-cli -u "$broker" FLUSHDB >/dev/null
  local envs=(SEGFLAKE_PG_URL="$SEGFLAKE_PG_DSN" SEGFLAKE_REDIS_URL="$SEGFLAKE_REDIS_URL" SEGFLAKE_TAG=celery_order
              CELERY_BROKER_URL="$broker" PYTHONPATH="$ROOT/examples/python")
  fresh_tag pg celery_order 1
  env "${envs[@]}" "$SCEN_PY" -m celery -A celery_app worker --pool prefork --concurrency 3 --loglevel WARNING \
    --without-gossip --without-mingle --without-heartbeat >"$SCEN_OUT/celery-worker.log" 2>&1 &
  CELERY_PID=$!
  trap 'kill "$CELERY_PID" 2>/dev/null || true' EXIT
  local figures
  figures=$(env "${envs[@]}" "$SCEN_PY" "$HERE/frameworks.py" celery "$SCEN_OUT/celery" 200 50) || {
    tail -n 30 "$SCEN_OUT/celery-worker.log" >&2; fail "celery: $figures"; }
  # TERM: a warm shutdown; each pool process closes its generators (releases its lease).
  kill -TERM "$CELERY_PID"; wait "$CELERY_PID" 2>/dev/null || true
  local line; line=$(check_ids --text --min 1 "$SCEN_OUT/celery.seg") || fail "segment IDs: $line"
  local sf; sf=$(check_ids --text "$SCEN_OUT/celery.sf") || fail "snowflake IDs: $sf"
  note "celery_prefork: $figures; segment $line; snowflake $sf"
}
