# shellcheck shell=bash
# `segflake serve` scenarios, sourced by run.sh: the service on Leaf's table in real
# PostgreSQL, MariaDB and Redis, driven over HTTP by tests/scenarios/serve_client.py
# (keep-alive connections, every ID written for the duplicate check), two instances on
# one table, the store killed under load, and the CLI's segment and stats on the same
# store URLs.

SERVE_PIDS=()
serve_reap_on_exit() { trap 'kill -9 "${SERVE_PIDS[@]}" 2>/dev/null || true' EXIT; }

# store_url DB: the --store URL of a scenario database.
store_url() { registry_url "$1"; }

# serve_start NAME ARGS...: `segflake serve` on a free port in the background, once it
# answers /healthz. Sets SERVE_URL and SERVE_PID; its log is $SCEN_OUT/NAME.log.
SERVE_PORT=18600
serve_start() {
  local name=$1; shift
  SERVE_PORT=$(_free_port $((SERVE_PORT + 1)))
  "$SCEN_CLI" serve --listen "127.0.0.1:$SERVE_PORT" "$@" 2>"$SCEN_OUT/$name.log" &
  SERVE_PID=$!
  SERVE_PIDS+=("$SERVE_PID")
  SERVE_URL="http://127.0.0.1:$SERVE_PORT"
  _wait_for 15 curl -fs "$SERVE_URL/healthz" -o /dev/null || { cat "$SCEN_OUT/$name.log" >&2; fail "$name did not start"; }
}

# serve_stop PID NAME: SIGTERM; the server must drain and exit 0.
serve_stop() {
  kill -TERM "$1"
  wait "$1" || { tail -n 5 "$SCEN_OUT/$2.log" >&2; fail "$2 exited with $? after SIGTERM"; }
  grep -q '"msg":"stopped"' "$SCEN_OUT/$2.log" || fail "$2 did not log its stop"
}

# serve_client NAME ARGS...: tests/scenarios/serve_client.py in the background; sets $!.
serve_client() {
  local name=$1; shift
  "$SCEN_PY" "$HERE/serve_client.py" --out "$SCEN_OUT/$name.ids" --summary "$SCEN_OUT/$name.json" "$@" \
    2>"$SCEN_OUT/$name.err" &
}

# http_get URL: "STATUS BODY".
http_get() { curl -s -w ' %{http_code}' "$@" | awk '{s=$NF; $NF=""; sub(/ $/, ""); print s " " $0}'; }

# Leaf's contract and two instances on one table: a fresh row (max_id 1) gives ID 1 first;
# an unknown key is a 404 UNKNOWN_TAG; two servers on the same row serve 8 client threads
# while segments are also leased out over /api/segment/alloc; no ID twice; SIGTERM drains
# both; then the CLI's segment continues above everything and stats shows the row.
serve_store() {
  local db=$1 tag="serve_$1" url; url=$(store_url "$1")
  serve_reap_on_exit
  fresh_tag "$db" "$tag" 1
  serve_start "serve-$db-a" --store "$url" --worker 1 --step 2000
  local a_pid=$SERVE_PID a_url=$SERVE_URL
  local first; first=$(http_get "$a_url/api/segment/get/$tag")
  [ "$first" = "200 1" ] || fail "the first ID of a fresh Leaf row is not 1: $first"
  local unknown; unknown=$(http_get "$a_url/api/segment/get/no_such_tag_$db")
  [[ $unknown == 404*UNKNOWN_TAG* ]] || fail "an unknown key is not a 404 UNKNOWN_TAG: $unknown"
  serve_start "serve-$db-b" --store "$url" --worker 2 --step 2000
  local b_pid=$SERVE_PID b_url=$SERVE_URL
  local pids=()
  serve_client "serve-$db-single" --url "$a_url,$b_url" --key "$tag" --threads 6 --duration 4; pids+=($!)
  serve_client "serve-$db-batch" --url "$b_url,$a_url" --key "$tag" --threads 2 --duration 4 --count 100; pids+=($!)
  # Segment leases beside the load: each answer's range goes to the duplicate check.
  "$SCEN_PY" - "$a_url,$b_url" "$tag" "$SCEN_OUT/serve-$db-alloc.ids" <<'PY' &
import array, http.client, json, sys, time
from urllib.parse import urlsplit
urls, tag, out = sys.argv[1].split(","), sys.argv[2], sys.argv[3]
ids = array.array("Q")
deadline = time.monotonic() + 3.5
i = 0
while time.monotonic() < deadline:
    u = urlsplit(urls[i % 2]); i += 1
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request("POST", f"/api/segment/alloc/{tag}?step=500")
    r = c.getresponse(); body = json.loads(r.read())
    assert r.status == 200, body
    max_id, step = int(body["maxId"]), body["step"]
    assert step == 500, body
    ids.extend(range(max_id - step, max_id))
    time.sleep(0.05)
open(out, "wb").write(ids.tobytes())
PY
  pids+=($!)
  wait_all "${pids[@]}"
  local line; line=$(check_ids --min 1 "$SCEN_OUT/serve-$db"-{single,batch,alloc}.ids) || fail "$line"
  local figures; figures=$("$SCEN_PY" - "$SCEN_OUT/serve-$db-single.json" "$SCEN_OUT/serve-$db-batch.json" <<'PY'
import json, sys
single, batch = (json.load(open(p)) for p in sys.argv[1:])
for name, s in (("single", single), ("batch", batch)):
    if set(s["statuses"]) != {"200"} or s["transport_errors"]:
        sys.exit(f"{name}: not every request succeeded: {s}")
print(f'{single["requests"] / single["seconds"]:.0f} single-ID requests/s (Python clients, 6 threads), '
      f'{batch["ids_per_second"]} IDs/s in batches of 100 (2 threads)')
PY
) || fail "$figures"
  serve_stop "$a_pid" "serve-$db-a"
  serve_stop "$b_pid" "serve-$db-b"
  local row; row=$(row_max_id "$db" "$tag")
  "$SCEN_CLI" segment --store "$url" --tag "$tag" --count 1000 >"$SCEN_OUT/serve-$db-cli.txt" ||
    fail "segflake segment --store $db failed"
  local cli; cli=$(check_ids --text --min "$row" "$SCEN_OUT/serve-$db-cli.txt") ||
    fail "the CLI issued IDs below the row's max_id $row: $cli"
  "$SCEN_CLI" stats --store "$url" --json | grep -q "\"tag\":\"$tag\"" || fail "segflake stats --store $db does not list $tag"
  note "serve[$db]: first ID 1 on a fresh Leaf row; two servers + segment leases: $line; $figures; SIGTERM: both drained and exited 0; CLI segment after them: $cli"
}
serve_pg() { serve_store pg; }
serve_mysql() { serve_store mysql; }
serve_redis() { serve_store redis; }

# The store killed under load: a server with about 2 s of IDs buffered (step 1,000, fixed,
# at 1,000 requests/s) keeps answering while PostgreSQL is down, then answers 503 naming
# the database's error (and /readyz says not ready), then serves again after the restart.
serve_outage_pg() {
  local tag=serve_outage url; url=$(store_url pg)
  serve_reap_on_exit
  fresh_tag pg "$tag" 1
  serve_start serve-outage --store "$url" --worker 1 --step 1000 --dynamic-step false \
    --wait-timeout-ms 200 --store-timeout-ms 1000 --retry-backoff-ms 200
  local pid=$SERVE_PID
  http_get "$SERVE_URL/api/segment/get/$tag" >/dev/null
  serve_client serve-outage-client --url "$SERVE_URL" --key "$tag" --threads 4 --rate 1000 --duration 14
  local client=$!
  sleep 3
  svc_stop pg kill9
  sleep 3.5
  local ready; ready=$(http_get "$SERVE_URL/readyz")
  sleep 0.5
  svc_start pg >/dev/null
  wait_all "$client"
  [[ $ready == 503* ]] || fail "/readyz did not report the store down: $ready"
  local line; line=$(check_ids --min 1 "$SCEN_OUT/serve-outage-client.ids") || fail "$line"
  local verdict; verdict=$("$SCEN_PY" - "$SCEN_OUT/serve-outage-client.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
bad = []
first, last = s["first_503_s"], s["last_503_s"]
if first is None:
    bad.append("no 503 while the store was down")
elif first < 3.5:
    bad.append(f"503 at {first} s: the buffered IDs did not keep flowing after the kill at 3 s")
if "SEGMENTS_EXHAUSTED" not in s["codes"]:
    bad.append(f"no SEGMENTS_EXHAUSTED code: {s['codes']}")
if not any("cause" in m for m in s["messages"]):
    bad.append(f"the 503 does not name the cause: {s['messages']}")
if last is not None and last > 12:
    bad.append(f"still 503 at {last} s: no recovery after the restart at about 7 s")
if s["transport_errors"]:
    bad.append(f"{s['transport_errors']} requests got no HTTP answer")
print(f'{s["statuses"].get("200", 0)} answers 200, {s["statuses"].get("503", 0)} answers 503 '
      f'(first {first} s, last {last} s after the start; store killed at 3 s, back at about 7 s); '
      f'503 says: "{s["messages"][0][:200] if s["messages"] else ""}"')
if bad:
    sys.exit("; ".join(bad))
PY
) || fail "$verdict"
  serve_stop "$pid" serve-outage
  note "serve_outage[pg kill -9]: $line; $verdict"
}

# Applications without database credentials: Python and Node processes whose
# SegmentGenerator leases its segments from two servers on one PostgreSQL row through
# HttpStore (with the key's token), beside plain /get clients of the same key; no ID twice.
# A process with a wrong token issues nothing and its SegmentsExhausted names the 403.
serve_http_stores() {
  local tag=serve_http url; url=$(store_url pg)
  serve_reap_on_exit
  fresh_tag pg "$tag" 1
  printf '[keys.%s]\ntokens = ["s3cret"]\n' "$tag" >"$SCEN_OUT/serve-http.toml"
  serve_start serve-http-a --store "$url" --worker 1 --config "$SCEN_OUT/serve-http.toml"
  local a_pid=$SERVE_PID a_url=$SERVE_URL
  serve_start serve-http-b --store "$url" --worker 2 --config "$SCEN_OUT/serve-http.toml"
  local b_pid=$SERVE_PID b_url=$SERVE_URL
  local pids=()
  export SEGFLAKE_HTTP_TOKEN=s3cret
  export SEGFLAKE_HTTP_URL=$a_url
  py_worker http-py --db http --tag "$tag" --count 300000 --step 1000; pids+=($!)
  export SEGFLAKE_HTTP_URL=$b_url
  node_worker http-node --db http --tag "$tag" --count 300000 --step 1000; pids+=($!)
  serve_client serve-http-get --url "$a_url,$b_url" --key "$tag" --token s3cret --threads 2 --duration 3; pids+=($!)
  wait_all "${pids[@]}"
  local line; line=$(check_ids --min 1 "$SCEN_OUT"/http-{py,node}.ids "$SCEN_OUT/serve-http-get.ids") || fail "$line"
  export SEGFLAKE_HTTP_TOKEN=wrong
  py_worker http-py-forbidden --db http --tag "$tag" --rate 200 --duration 1.5 --step 1000
  wait_all $!
  local refused; refused=$("$SCEN_PY" - "$SCEN_OUT/http-py-forbidden.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
msgs = " | ".join(s["error_messages"])
if s["issued"] or "SegmentsExhausted" not in " ".join(s["errors"]) or "403 (FORBIDDEN)" not in msgs:
    sys.exit(f"a wrong token was not refused as expected: {s}")
print(msgs[:240])
PY
) || fail "$refused"
  unset SEGFLAKE_HTTP_URL SEGFLAKE_HTTP_TOKEN
  serve_stop "$a_pid" serve-http-a
  serve_stop "$b_pid" serve-http-b
  note "serve_http_stores[pg]: Python and Node HttpStore generators + /get clients on two servers: $line; a wrong token: \"$refused\""
}

# The status page (`/`, Leaf's `/cache`) in headless Chromium: after some traffic on two
# keys (one with a token) and a leased worker ID from Redis, then 4 s of load on both keys
# and on snowflake IDs (the charts take a sample every 250 ms), tests/scenarios/status_page.mjs
# reads /metrics, loads the page, reads /metrics again and checks that every number on the
# page is the scrape's, and that each chart's latest point is and its values follow from
# its samples; the key with a token is shown only with it; a screenshot is left in
# $SCEN_OUT/status-page.png.
serve_status_page() {
  local tag=status_page url; url=$(store_url pg)
  serve_reap_on_exit
  fresh_tag pg "$tag" 1
  fresh_tag pg "${tag}_secret" 1
  printf 'status_sample_ms = 250\n[keys.%s]\ntokens = []\n[keys.%s_secret]\ntokens = ["s3cret"]\n' "$tag" "$tag" >"$SCEN_OUT/status-page.toml"
  serve_start status-page --store "$url" --registry "$(registry_url redis)" --config "$SCEN_OUT/status-page.toml"
  local i
  for i in $(seq 20); do curl -fs "$SERVE_URL/api/segment/get/$tag" -o /dev/null || fail "GET $tag failed"; done
  curl -fs "$SERVE_URL/api/segment/get/$tag?count=2500" -o /dev/null || fail "a batch of $tag failed"
  curl -fs -H 'Authorization: Bearer s3cret' "$SERVE_URL/api/segment/get/${tag}_secret" -o /dev/null ||
    fail "GET ${tag}_secret with its token failed"
  curl -fs "$SERVE_URL/api/snowflake/get/$tag?count=10" -o /dev/null || fail "snowflake IDs failed"
  curl -s "$SERVE_URL/api/segment/get/no_such_$tag" -o /dev/null
  local pids=()
  serve_client status-page-load --url "$SERVE_URL" --key "$tag" --threads 2 --rate 200 --count 20 --duration 4; pids+=($!)
  serve_client status-page-secret --url "$SERVE_URL" --key "${tag}_secret" --token s3cret --threads 1 --rate 50 --duration 4
  pids+=($!)
  serve_client status-page-flake --url "$SERVE_URL" --key "$tag" --kind snowflake --threads 1 --rate 100 --count 5 --duration 4
  pids+=($!)
  wait_all "${pids[@]}"
  # Quiet from here on: the runway estimate (over the last 1 to 2 s) goes idle, and the
  # charts' latest samples and the scrapes around the page load see the same counters.
  sleep 2.5
  local out
  out=$(cd "$SCEN_NODE_DIR" && node "$HERE/status_page.mjs" "$SERVE_URL" "$SCEN_OUT/status-page.png" "${tag}_secret" s3cret 250 2>&1) ||
    fail "$out"
  note "serve_status_page: $out"
  serve_stop "$SERVE_PID" status-page
}

# gRPC beside HTTP (`--grpc-listen`) on Leaf's table in PostgreSQL: a Node client
# (@grpc/grpc-js, tests/scenarios/grpc_client.mjs) and a Python one (grpcio,
# grpc_client.py) take unary batches, streams (one cancelled mid-way, one dropped), a
# segment lease, decode, health and reflection, and are refused with the right status and
# segflake code for bad input and tokens, while HTTP clients draw from the same key; no ID
# twice across the two protocols; SIGTERM drains both and exits 0.
serve_grpc() {
  local tag=serve_grpc url; url=$(store_url pg)
  serve_reap_on_exit
  fresh_tag pg "$tag" 1
  fresh_tag pg "${tag}_secret" 1
  printf '[keys.%s]\ntokens = []\n[keys.%s_secret]\ntokens = ["s3cret"]\n' "$tag" "$tag" >"$SCEN_OUT/serve-grpc.toml"
  local gport; gport=$(_free_port 19510)
  serve_start serve-grpc --store "$url" --worker 4 --grpc-listen "127.0.0.1:$gport" --config "$SCEN_OUT/serve-grpc.toml"
  local out
  out=$(cd "$SCEN_NODE_DIR" && node "$HERE/grpc_client.mjs" "127.0.0.1:$gport" "$ROOT/proto" "$tag" "${tag}_secret" s3cret \
    "$SCEN_OUT/grpc-node.ids" 2>&1) || fail "$out"
  note "serve_grpc: $out"
  local pids=()
  serve_client serve-grpc-http --url "$SERVE_URL" --key "$tag" --threads 2 --duration 3; pids+=($!)
  out=$("$SCEN_PY" "$HERE/grpc_client.py" "127.0.0.1:$gport" "$ROOT/proto" "$tag" "$SCEN_OUT/grpc-py.ids" 2>&1) || fail "$out"
  note "serve_grpc: $out"
  wait_all "${pids[@]}"
  local line; line=$(check_ids --min 1 "$SCEN_OUT"/grpc-{node,py}.ids "$SCEN_OUT/serve-grpc-http.ids") || fail "$line"
  note "serve_grpc: gRPC (Node, Python) and HTTP on one key: $line"
  # SIGTERM with a stream open: the stream ends, the server drains and exits 0.
  (cd "$SCEN_NODE_DIR" && exec node "$HERE/grpc_client.mjs" --hold-stream "127.0.0.1:$gport" "$ROOT/proto" "$tag") \
    >"$SCEN_OUT/grpc-hold.log" 2>&1 &
  local holder=$!
  _wait_for 15 grep -q streaming "$SCEN_OUT/grpc-hold.log" || fail "the held stream did not start: $(cat "$SCEN_OUT/grpc-hold.log")"
  serve_stop "$SERVE_PID" serve-grpc
  wait "$holder" || fail "the held stream did not end cleanly: $(cat "$SCEN_OUT/grpc-hold.log")"
  note "serve_grpc: SIGTERM with a stream open: $(tail -n 1 "$SCEN_OUT/grpc-hold.log"), the server exited 0"
}

# `segflake serve` over HTTPS and gRPC with mutual TLS (--tls-cert, --tls-key,
# --tls-client-ca; tests/tls/make-certs.sh's certificates) on a file: store, no database: a
# key whose `clients` list names order-svc. The HttpStore of Python (and AsyncHttpStore),
# of the native Node package and of segflake-wasm (tests/scenarios/https_client.{py,mjs})
# lease segments with order-svc's certificate and are refused with a StoreError for a CA
# that did not sign the server's certificate, no client certificate, one from another CA,
# and billing-svc (trusted, not listed: 403 FORBIDDEN); with an http:// URL their
# certificate options are refused at construction. The gRPC clients (grpc_client.{mjs,py})
# run their whole contract over the same TLS; no ID twice across the gRPC clients.
serve_tls_clients() {
  local tag=serve_tls_clients d="$SCEN_OUT/serve-tls-clients-certs"
  serve_reap_on_exit
  bash "$ROOT/tests/tls/make-certs.sh" "$d"
  printf '%s\n' "[keys.$tag]" 'tokens = []' 'clients = ["order-svc"]' \
    "[keys.${tag}_grpc]" 'tokens = []' 'clients = ["order-svc"]' \
    "[keys.${tag}_grpc_secret]" 'tokens = ["s3cret"]' 'clients = ["order-svc", "billing-svc"]' >"$SCEN_OUT/serve-tls-clients.toml"
  SERVE_PORT=$(_free_port $((SERVE_PORT + 1)))
  local port=$SERVE_PORT gport; gport=$(_free_port $((SERVE_PORT + 1)))
  SERVE_PORT=$gport
  "$SCEN_CLI" serve --listen "127.0.0.1:$port" --grpc-listen "127.0.0.1:$gport" --store "file:$SCEN_OUT/serve-tls-clients.store" \
    --worker 4 --config "$SCEN_OUT/serve-tls-clients.toml" \
    --tls-cert "$d/server.pem" --tls-key "$d/server.key" --tls-client-ca "$d/ca.pem" 2>"$SCEN_OUT/serve-tls-clients.log" &
  SERVE_PID=$!
  SERVE_PIDS+=("$SERVE_PID")
  local url="https://localhost:$port" tls_curl=(--cacert "$d/ca.pem" --cert "$d/order.pem" --key "$d/order.key")
  _wait_for 15 curl -fs "${tls_curl[@]}" "$url/healthz" -o /dev/null || { cat "$SCEN_OUT/serve-tls-clients.log" >&2; fail "serve-tls-clients did not start"; }
  curl -fs "http://127.0.0.1:$port/healthz" -o /dev/null 2>&1 && fail "serve-tls-clients answered plaintext HTTP"
  local out t0=$SECONDS
  out=$("$SCEN_PY" "$HERE/https_client.py" "$url" "$d" "$tag" 2>&1) || fail "$out"
  note "serve_tls_clients: $out ($((SECONDS - t0)) s)"
  t0=$SECONDS
  out=$(cd "$SCEN_NODE_DIR" && node "$HERE/https_client.mjs" "$url" "$d" "$tag" 2>&1) || fail "$out"
  note "serve_tls_clients: $out ($((SECONDS - t0)) s)"
  export SEGFLAKE_TLS_CA="$d/ca.pem" SEGFLAKE_TLS_CERT="$d/order.pem" SEGFLAKE_TLS_KEY="$d/order.key"
  out=$(cd "$SCEN_NODE_DIR" && node "$HERE/grpc_client.mjs" "localhost:$gport" "$ROOT/proto" "${tag}_grpc" "${tag}_grpc_secret" s3cret \
    "$SCEN_OUT/grpc-tls-clients-node.ids" 2>&1) || fail "$out"
  note "serve_tls_clients: $out"
  out=$("$SCEN_PY" "$HERE/grpc_client.py" "localhost:$gport" "$ROOT/proto" "${tag}_grpc" "$SCEN_OUT/grpc-tls-clients-py.ids" 2>&1) || fail "$out"
  note "serve_tls_clients: $out"
  unset SEGFLAKE_TLS_CA SEGFLAKE_TLS_CERT SEGFLAKE_TLS_KEY
  local line; line=$(check_ids --min 1 "$SCEN_OUT"/grpc-tls-clients-{node,py}.ids) || fail "$line"
  note "serve_tls_clients: gRPC over mutual TLS (Node, Python) on one key: $line"
  serve_stop "$SERVE_PID" serve-tls-clients
}
