# shellcheck shell=bash
# `segflake serve` on an untrusted network, sourced by run.sh: HTTP and gRPC on one port
# over mutual TLS (certificates from tests/tls/make-certs.sh), drawn from by Python (HTTP
# and gRPC, tests/scenarios/mtls_load.py) and Node (tests/scenarios/mtls_load.mjs) while,
# five times over, by editing files and sending SIGHUP: the token of key `pay` is rotated
# (old and new accepted, the clients switch, the old one removed), the server certificate
# is replaced, and a key is added while another is removed. No request that presented
# valid credentials fails, no ID is issued twice, the old token is refused after each
# rotation, and each removed key's unissued IDs are given back to the store.

# mtls_curl ARGS...: curl as the client order-svc of the scenario's CA.
mtls_curl() { curl -s --cacert "$MTLS_DIR/certs/ca.pem" --cert "$MTLS_DIR/certs/order.pem" --key "$MTLS_DIR/certs/order.key" "$@"; }

# mtls_reloads: the server's count of applied reloads.
mtls_reloads() { mtls_curl "$MTLS_URL/metrics" | awk '/^segflake_reloads_total\{result="applied"\}/ { print $2 }'; }

# mtls_applied_above N: whether the server applied more than N reloads.
mtls_applied_above() { [ "$(mtls_reloads)" -gt "$1" ]; }

# mtls_reload: SIGHUP, then wait until a reload after it was applied.
mtls_reload() {
  local before; before=$(mtls_reloads)
  kill -HUP "$MTLS_PID"
  _wait_for 15 mtls_applied_above "$before" ||
    fail "no reload was applied after SIGHUP: $(grep -h reload "$SCEN_OUT/serve-tls.log" | tail -n 3)"
}

# mtls_put FILE LINE...: FILE's new lines, renamed into place (a reader never sees it
# half written).
mtls_put() { local f=$1; shift; printf '%s\n' "$@" >"$f.new" && mv "$f.new" "$f"; }

# mtls_config ROUND: the config of a round: `pay` (token file and client), `order`
# (client only), and the round's extra key.
mtls_config() {
  printf '[keys.pay]\ntokens = ["file:%s"]\nclients = ["order-svc"]\n[keys.order]\nclients = ["order-svc"]\n[keys.extra-%s]\nclients = ["order-svc"]\n' \
    "$MTLS_DIR/pay.tokens" "$1" >"$MTLS_DIR/serve.toml.new"
  mv "$MTLS_DIR/serve.toml.new" "$MTLS_DIR/serve.toml"
}

serve_tls_rotation() {
  serve_reap_on_exit
  MTLS_DIR="$SCEN_OUT/serve-tls"
  rm -rf "$MTLS_DIR"; mkdir -p "$MTLS_DIR"
  bash "$ROOT/tests/tls/make-certs.sh" "$MTLS_DIR/certs"
  cp "$MTLS_DIR/certs/server.pem" "$MTLS_DIR/tls.crt"
  cp "$MTLS_DIR/certs/server.key" "$MTLS_DIR/tls.key"
  echo tok-0 >"$MTLS_DIR/pay.tokens"
  echo tok-0 >"$MTLS_DIR/client.token"
  mtls_config 0
  local port; port=$(_free_port 19620)
  "$SCEN_CLI" serve --listen "127.0.0.1:$port" --grpc-listen "127.0.0.1:$port" --store "file:$MTLS_DIR/ids.txt" \
    --worker 6 --step 200 --tls-cert "$MTLS_DIR/tls.crt" --tls-key "$MTLS_DIR/tls.key" \
    --tls-client-ca "$MTLS_DIR/certs/ca.pem" --config "$MTLS_DIR/serve.toml" 2>"$SCEN_OUT/serve-tls.log" &
  MTLS_PID=$!
  SERVE_PIDS+=("$MTLS_PID")
  MTLS_URL="https://localhost:$port"
  _wait_for 15 mtls_curl -f "$MTLS_URL/healthz" -o /dev/null || { cat "$SCEN_OUT/serve-tls.log" >&2; fail "serve did not start"; }
  local stop="$MTLS_DIR/stop" pids=()
  "$SCEN_PY" "$HERE/mtls_load.py" "127.0.0.1:$port" "$MTLS_DIR/certs" "$ROOT/proto" "$MTLS_DIR/client.token" "$stop" \
    "$SCEN_OUT/mtls-py" 2>"$SCEN_OUT/mtls-py.err" & pids+=($!)
  (cd "$SCEN_NODE_DIR" && exec node "$HERE/mtls_load.mjs" "127.0.0.1:$port" "$MTLS_DIR/certs" "$MTLS_DIR/client.token" "$stop" \
    "$SCEN_OUT/mtls-node") 2>"$SCEN_OUT/mtls-node.err" & pids+=($!)
  sleep 1
  local i old new served given=0 serial
  for i in 1 2 3 4 5; do
    old="tok-$((i - 1))" new="tok-$i"
    # The token: both accepted, the clients switch, the old one removed.
    mtls_put "$MTLS_DIR/pay.tokens" "$old" "$new"
    mtls_reload
    mtls_put "$MTLS_DIR/client.token" "$new"
    sleep 1
    mtls_put "$MTLS_DIR/pay.tokens" "$new"
    mtls_reload
    served=$(mtls_curl -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $old" "$MTLS_URL/api/segment/get/pay")
    [ "$served" = 403 ] || fail "round $i: the old token got $served after its removal"
    # The server certificate: the other one, swapped in by rename (as a Secret's files).
    if [ $((i % 2)) = 1 ]; then serial=server2; else serial=server; fi
    cp "$MTLS_DIR/certs/$serial.key" "$MTLS_DIR/tls.key.new"; cp "$MTLS_DIR/certs/$serial.pem" "$MTLS_DIR/tls.crt.new"
    mv "$MTLS_DIR/tls.key.new" "$MTLS_DIR/tls.key"; mv "$MTLS_DIR/tls.crt.new" "$MTLS_DIR/tls.crt"
    mtls_reload
    served=$(openssl s_client -connect "127.0.0.1:$port" -CAfile "$MTLS_DIR/certs/ca.pem" \
      -cert "$MTLS_DIR/certs/order.pem" -key "$MTLS_DIR/certs/order.key" </dev/null 2>/dev/null |
      openssl x509 -noout -fingerprint -sha256)
    [ "$served" = "$(openssl x509 -in "$MTLS_DIR/certs/$serial.pem" -noout -fingerprint -sha256)" ] ||
      fail "round $i: the server does not present $serial.pem after the rotation"
    # A key added, another removed (it had IDs buffered: they go back to the store).
    mtls_curl -f "$MTLS_URL/api/segment/get/extra-$((i - 1))" -o /dev/null || fail "round $i: extra-$((i - 1)) not served"
    mtls_config "$i"
    mtls_reload
    served=$(mtls_curl -o /dev/null -w '%{http_code}' "$MTLS_URL/api/segment/get/extra-$((i - 1))")
    [ "$served" = 404 ] || fail "round $i: the removed key extra-$((i - 1)) got $served"
    served=$(mtls_curl "$MTLS_URL/api/segment/get/extra-$i")
    [ "$served" = 1 ] || fail "round $i: the added key extra-$i answered $served, not its first ID"
  done
  touch "$stop"
  wait_all "${pids[@]}"
  # Each removed key's row went back to its first unissued ID: extra-0 issued one ID (2),
  # the others two (3: the check when added, the one before removal).
  local first
  for i in 0 1 2 3 4; do
    first=$([ "$i" = 0 ] && echo 2 || echo 3)
    _wait_for 10 grep -q "\"key\":\"extra-$i\",\"given_back\":\"$first\.\." "$SCEN_OUT/serve-tls.log" ||
      fail "extra-$i's IDs were not given back: $(grep -h "extra-$i" "$SCEN_OUT/serve-tls.log" | tail -n 2)"
    given=$((given + 1))
  done
  local verdict
  verdict=$("$SCEN_PY" - "$SCEN_OUT/mtls-py.json" "$SCEN_OUT/mtls-node.json" <<'PY'
import json, sys
py, node = (json.load(open(p)) for p in sys.argv[1:3])
bad = [f"{n}: {x['failures']} failed requests: {x['first_failures']}" for n, x in (("Python", py), ("Node", node)) if x["failures"]]
bad += [f"{n}: drew no IDs of {k}" for n, x in (("Python", py), ("Node", node)) for k in ("pay", "order") if not x["ids"][k]]
if bad:
    print("; ".join(bad)); sys.exit(1)
print(f"Python {py['requests']} requests ({py['ids']}), Node {node['requests']} ({node['ids']}), 0 failed")
PY
) || fail "$verdict"
  local pay order
  pay=$(check_ids --min 1 "$SCEN_OUT"/mtls-{py,node}.pay.ids) || fail "pay: $pay"
  order=$(check_ids --min 1 "$SCEN_OUT"/mtls-{py,node}.order.ids) || fail "order: $order"
  serve_stop "$MTLS_PID" serve-tls
  note "serve_tls_rotation: 5 rounds of token, certificate and key rotation under mutual TLS; $verdict; pay $pay; order $order; old tokens refused; $given removed keys gave their IDs back"
}
