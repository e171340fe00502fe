#!/usr/bin/env bash
# What `segflake serve` holds in memory per key: a release server on a fresh file store
# (--create-missing-tags, step 1000), one keep-alive client asking one segment ID of each of
# N new keys, the server's resident memory (VmRSS) before and after. Markdown on stdout.
#   bench/serve/memory.sh [N ...]      (default: 1000 10000)
. "$(dirname "$0")/../../scripts/ensure.sh"
counts=("$@"); [ ${#counts[@]} -gt 0 ] || counts=(1000 10000)
log "cargo build --release -p segflake-cli"
CARGO_TARGET_DIR="$ROOT/target/core" cargo build --quiet --release -p segflake-cli >&2
cli="$ROOT/target/core/release/segflake"
dir=$(mktemp -d /tmp/segflake-serve-memory.XXXXXX)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$dir"' EXIT
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
# ask_keys PORT N PREFIX: one ID each of the keys PREFIX0 .. PREFIX{N-1}, on one connection.
ask_keys() {
  python3 - "$@" >/dev/null <<'PY'
import http.client, sys
port, n, prefix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port)
for i in range(n):
    c.request("GET", f"/api/segment/get/{prefix}{i}")
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
PY
}

echo "| keys | RSS before | RSS after | per key | file store after |"
echo "|---:|---:|---:|---:|---:|"
for n in "${counts[@]}"; do
  rm -f "$dir"/ids.txt*
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$cli" serve --listen "127.0.0.1:$port" --store "file:$dir/ids.txt" --create-missing-tags 1000 \
    --step 1000 2>"$dir/serve.log" &
  server=$!
  python3 - "$port" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", port)).close()
        break
    except OSError:
        time.sleep(0.05)
PY
  # One request first, so the "before" figure includes the server's steady state.
  ask_keys "$port" 1 warmup
  before=$(rss_kib "$server")
  ask_keys "$port" "$n" key
  after=$(rss_kib "$server")
  size=$(stat -c %s "$dir/ids.txt")
  kill "$server"; wait "$server" 2>/dev/null || true
  awk -v n="$n" -v b="$before" -v a="$after" -v s="$size" 'BEGIN {
    printf "| %d | %.1f MiB | %.1f MiB | %.0f bytes | %.0f KiB |\n", n, b / 1024, a / 1024, (a - b) * 1024 / n, s / 1024 }'
done
