# shellcheck shell=bash
# Rust service scenarios, sourced by run.sh: examples/rust/axum-service ($SCEN_AXUM, built by
# scripts/test-scenarios.sh) serving IDs over HTTP while PostgreSQL fails under it.

# axum_port LOG: the port the service printed ("listening on 127.0.0.1:PORT"), once it did.
axum_port() {
  local i
  for ((i = 0; i < 300; i++)); do
    if grep -q 'listening on' "$1" 2>/dev/null; then
      sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1"
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# axum_warm NAME PORT TAG...: the first ID of each tag (the first segment fetch), within
# 10 s, into $SCEN_OUT/axum/NAME.warm-TAG.
axum_warm() {
  local name=$1 port=$2 tag i; shift 2
  for tag in "$@"; do
    for ((i = 0; i < 100; i++)); do
      curl -fs -w '\n' "http://127.0.0.1:$port/segment/$tag" >"$SCEN_OUT/axum/$name.warm-$tag" && continue 2
      sleep 0.1
    done
    return 1
  done
}

# axum_stop PID NAME: SIGTERM, then the exit status (0 expected) within 20 s.
axum_stop() {
  local i
  kill -TERM "$1"
  for ((i = 0; i < 200; i++)); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$1" 2>/dev/null && fail "$2 still running 20 s after SIGTERM: $(tail -n 3 "$SCEN_OUT/axum/$2.err")"
  local rc=0; wait "$1" || rc=$?
  [ "$rc" = 0 ] || fail "$2 exited with $rc after SIGTERM: $(tail -n 3 "$SCEN_OUT/axum/$2.err")"
}

# Two instances of the axum example (one on a multi-thread runtime, one on a current-thread
# runtime) take segment IDs from PostgreSQL through tcp_proxy.py and snowflake IDs under
# worker IDs leased from Redis, while keep-alive clients (axum_load.py) load both: per
# instance, a tag both share, a tag of its own, and snowflakes. PostgreSQL is blackholed for
# 3 s (no byte through, no close), healed, then stopped and started again. Checked: no ID
# twice across both instances; no snowflake request failed; segment requests fail only with
# 503 (naming the cause) during an outage and are answered again after each; each runtime's
# task lag (a 10 ms ticker) p99 < 20 ms and max < 100 ms; distinct worker IDs; after SIGTERM
# the lease is gone from Redis and each instance's own tag's max_id is back at its last
# issued ID + 1 (the unused segment IDs given back).
rust_axum() {
  : "${SCEN_AXUM:?set SCEN_AXUM (scripts/test-scenarios.sh builds it)}"
  local out="$SCEN_OUT/axum" port proxy
  mkdir -p "$out"
  port=$(_free_port 22990)
  "$SCEN_PY" "$HERE/tcp_proxy.py" "$port" "127.0.0.1:$PG_PORT" >"$out/proxy.log" 2>&1 &
  proxy=$!
  AXUM_PIDS=("$proxy")
  trap 'kill "${AXUM_PIDS[@]}" 2>/dev/null || true' EXIT
  wait_for_lines "$out/proxy.log" 10 || fail "the proxy did not start"
  local via="postgres://postgres@127.0.0.1:$port/postgres"
  # Segments of 200 IDs (the rows' step, and --max-step keeps Leaf's dynamic step from
  # doubling it): under this load well under a second of runway, so both outages empty
  # the buffers.
  local t
  for t in axum_shared axum_mt axum_ct; do
    fresh_tag pg "$t" 1
    pg_sql "UPDATE leaf_alloc SET step = 200 WHERE biz_tag = '$t'"
  done
  reset_registry redis

  local n pids=() names=(mt ct)
  for n in "${names[@]}"; do
    local flavour=(); [ "$n" = ct ] && flavour=(--current-thread)
    LAG_REPORT_FILE="$out/$n.lag.json" "$SCEN_AXUM" --store "$via" --registry "$SEGFLAKE_REDIS_URL" \
      --listen 127.0.0.1:0 --max-step 200 "${flavour[@]}" 2>"$out/$n.err" &
    pids+=($!); AXUM_PIDS+=($!)
  done
  local port_mt port_ct
  port_mt=$(axum_port "$out/mt.err") || fail "mt did not start: $(tail -n 3 "$out/mt.err")"
  port_ct=$(axum_port "$out/ct.err") || fail "ct did not start: $(tail -n 3 "$out/ct.err")"
  local w_mt w_ct
  w_mt=$(sed -n 's/.*worker ID \([0-9]*\) leased.*/\1/p' "$out/mt.err")
  w_ct=$(sed -n 's/.*worker ID \([0-9]*\) leased.*/\1/p' "$out/ct.err")
  if [ -z "$w_mt" ] || [ -z "$w_ct" ] || [ "$w_mt" = "$w_ct" ]; then
    fail "worker IDs not distinct: mt=$w_mt ct=$w_ct"
  fi
  if [ -z "$(lease_held redis "$w_mt")" ] || [ -z "$(lease_held redis "$w_ct")" ]; then
    fail "Redis shows no holder of worker IDs $w_mt and $w_ct while both run"
  fi
  # The first fetch of each tag before the load (a 503 outside the outages fails the run).
  axum_warm mt "$port_mt" axum_shared axum_mt || fail "mt never answered a segment ID"
  axum_warm ct "$port_ct" axum_shared axum_ct || fail "ct never answered a segment ID"

  # Load, then the outages. Phases go to phases.txt as `NAME unix_time`.
  local stop="$out/stop" phases="$out/phases.txt"
  rm -f "$stop"; : >"$phases"
  "$SCEN_PY" "$HERE/axum_load.py" --target "mt=$port_mt" --target "ct=$port_ct" --shared axum_shared \
    --threads 3 --stop-file "$stop" --out "$out" >"$out/load.log" 2>"$out/load.err" &
  local load=$!; AXUM_PIDS+=("$load")
  wait_for_lines "$out/load.log" 30 || fail "the load never got answers: $(tail -n 3 "$out/load.err")"
  phase() { echo "$1 $(date +%s.%N)" >>"$phases"; }
  phase load
  sleep 3
  phase blackhole; kill -USR1 "$proxy"
  sleep 3
  kill -USR2 "$proxy"; phase heal
  sleep 3
  phase pg_stop; svc_stop pg fast
  sleep 3
  svc_start pg >/dev/null; phase pg_up
  sleep 4
  phase end; touch "$stop"
  wait "$load" || fail "the load client failed: $(tail -n 3 "$out/load.err")"

  # The load is over: nothing is in flight.
  local before_shared; before_shared=$(row_max_id pg axum_shared)
  local verdict
  verdict=$("$SCEN_PY" - "$out" "$w_mt" "$w_ct" <<'PY'
import json, os, sys
out, workers = sys.argv[1], {"mt": int(sys.argv[2]), "ct": int(sys.argv[3])}
ph = {k: float(v) for k, v in (l.split() for l in open(os.path.join(out, "phases.txt")))}
# Segment requests may fail (503) from an outage's start until 3 s after its end (the
# store's retry and reconnect), and nowhere else.
windows = {"blackhole": (ph["blackhole"], ph["heal"] + 3), "restart": (ph["pg_stop"], ph["pg_up"] + 3)}
ends = {"blackhole": ph["heal"], "restart": ph["pg_up"]}
bad, parts = [], []
for name in ("mt", "ct"):
    rows = [l.split() for l in open(os.path.join(out, f"{name}.log"))]
    counts = {}
    for r in rows:
        counts[(r[1], r[2])] = counts.get((r[1], r[2]), 0) + 1
    sf_bad = [r for r in rows if r[1] == "sf" and r[2] != "200"]
    if sf_bad:
        bad.append(f"{name}: {len(sf_bad)} snowflake requests failed, e.g. {sf_bad[:3]}")
    sf_ms = sorted(float(r[3]) for r in rows if r[1] == "sf")
    seg = [(float(r[0]), r[2]) for r in rows if r[1] in ("shared", "own")]
    other = [x for x in seg if x[1] not in ("200", "503")]
    if other:
        bad.append(f"{name}: segment answers other than 200 and 503: {other[:5]}")
    in_w = {w: [t for t, s in seg if s == "503" and a <= t < b] for w, (a, b) in windows.items()}
    stray = [t for t, s in seg if s == "503" and not any(a <= t < b for a, b in windows.values())]
    if stray:
        bad.append(f"{name}: {len(stray)} segment 503s outside the outages, first at +{stray[0] - ph['load']:.2f} s")
    back = {}
    for w, ts in in_w.items():
        if not ts:
            bad.append(f"{name}: no segment 503 during the {w}: the outage went unnoticed")
            continue
        for kind in ("shared", "own"):
            ok = [float(r[0]) for r in rows if r[1] == kind and r[2] == "200" and float(r[0]) > max(ts)]
            if not ok:
                bad.append(f"{name}: no {kind} segment ID after the {w}")
                continue
            back[w] = max(back.get(w, -1e9), min(ok) - ends[w])
    sf = [int(x) for x in open(os.path.join(out, f"{name}.sf"))]
    seen = {(i >> 12) & 0x3FF for i in sf}
    if seen != {workers[name]}:
        bad.append(f"{name}: snowflake IDs carry worker IDs {sorted(seen)}, not {workers[name]}")
    seg_ok = sum(c for (k, s), c in counts.items() if k != "sf" and s == "200")
    parts.append(
        f"{name}: {seg_ok} segment IDs, {len(sf)} snowflakes (worker {workers[name]}, 0 failed, "
        f"latency p99 {sf_ms[int(len(sf_ms) * 0.99)]:.1f} ms max {sf_ms[-1]:.1f} ms); segment 503s: "
        + ", ".join(f"{w} {len(ts)}" for w, ts in in_w.items())
        + "; segment IDs again "
        + ", ".join(f"{d:+.2f} s after the {'heal' if w == 'blackhole' else 'restart (pg_isready)'}" for w, d in back.items())
    )
print("; ".join(parts))
first = open(os.path.join(out, "mt.503")).read().splitlines()[:1] or open(os.path.join(out, "ct.503")).read().splitlines()[:1]
print(f'first 503: {first[0][:300] if first else "-"}')
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
) || fail "$verdict"
  grep -q '"code":"SEGMENTS_EXHAUSTED"' "$out/mt.503" "$out/ct.503" || fail "no 503 names SEGMENTS_EXHAUSTED: $(cat "$out"/*.503)"

  # SIGTERM one instance at a time: each releases its worker ID and gives its unused
  # segment IDs back.
  local segline sfline
  segline=$(check_ids --text --min 1 "$out"/{mt,ct}.shared "$out"/{mt,ct}.warm-axum_shared) || fail "shared tag: $segline"
  local own
  for n in mt ct; do
    own=$(check_ids --text --min 1 "$out/$n.own" "$out/$n.warm-axum_$n") || fail "$n's own tag: $own"
  done
  sfline=$(check_ids --text "$out/mt.sf" "$out/ct.sf") || fail "snowflakes: $sfline"
  local i=0 gave=()
  for n in "${names[@]}"; do
    local pid=${pids[$i]} w; i=$((i + 1))
    if [ "$n" = mt ]; then w=$w_mt; else w=$w_ct; fi
    local row_before; row_before=$(row_max_id pg "axum_$n")
    axum_stop "$pid" "$n"
    local holder; holder=$(lease_held redis "$w")
    [ -z "$holder" ] || fail "$n: worker ID $w still held by $holder after SIGTERM"
    local row_after last
    row_after=$(row_max_id pg "axum_$n")
    last=$(sort -n "$out/$n.own" | tail -n 1)
    [ "$row_after" = $((last + 1)) ] ||
      fail "$n: its tag's max_id is $row_after after SIGTERM (was $row_before); its last ID was $last"
    gave+=("$n max_id $row_before -> $row_after (last ID $last)")
  done
  local after_shared max_shared
  after_shared=$(row_max_id pg axum_shared)
  max_shared=$(sed -n 's/.*max=\([0-9]*\).*/\1/p' <<<"$segline")
  [ "$after_shared" -gt "$max_shared" ] || fail "the shared tag's max_id $after_shared is not above its last ID $max_shared"
  kill "$proxy" 2>/dev/null || true
  local lags
  lags=$("$SCEN_PY" - "$out" <<'PY'
import json, sys
out, bad, parts = sys.argv[1], [], []
ph = sorted((float(v), k) for k, v in (l.split() for l in open(f"{out}/phases.txt")))
label = {"load": "load", "blackhole": "blackhole", "heal": "healed", "pg_stop": "PostgreSQL down",
         "pg_up": "restarted", "end": "shutdown"}
def when(t):
    # The phase a tick fell in, and its time from the load's start.
    name = "start-up"
    for at, k in ph:
        if t >= at:
            name = label[k]
    return f"at {t - ph[0][0]:+.1f} s, {name}"
for name in ("mt", "ct"):
    s = json.load(open(f"{out}/{name}.lag.json"))
    t = s["worst"][0][0]
    parts.append(f"{name} p99 {s['p99_ms']:.2f} ms max {s['max_ms']:.2f} ms ({when(t)}; {s['samples']} ticks)")
    if s["p99_ms"] >= 20 or s["max_ms"] >= 100:
        bad.append(name)
print(", ".join(parts))
sys.exit(1 if bad else 0)
PY
) || fail "task lag over the limits (p99 < 20 ms, max < 100 ms): $lags"
  note "rust_axum: $verdict"
  note "rust_axum: shared tag $segline; snowflakes $sfline; task lag $lags"
  note "rust_axum: after SIGTERM, leases released and own tags given back: ${gave[*]}; shared tag max_id $before_shared -> $after_shared (last ID $max_shared)"
}
