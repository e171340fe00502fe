#!/usr/bin/env bash
# What one allocation costs each of segflake's segment stores as the number of tags grows,
# and what callers of next_id see while the store answers late. Markdown on stdout,
# progress on stderr.
#   bench/segment/stores.sh [--seconds S] [--tags 1,1000,10000,100000] [--delay-ms 50]
#
# Real servers on 127.0.0.1 (tests/scenarios/services.sh), each durable the way a
# production store must be: PostgreSQL with fsync on and synchronous commit, MariaDB with
# innodb_flush_log_at_trx_commit=1, Redis with appendfsync always, the file store with an
# fdatasync per allocation. Before each row the store holds exactly N tags (seeded in bulk
# with the database's own tools); `segflake bench --store URL --tags N` then allocates on
# tags picked at random. Last, `segflake bench --store` runs once more per database through
# tests/scenarios/tcp_proxy.py, which passes the server's answers on --delay-ms late.
. "$(dirname "$0")/../../scripts/ensure.sh"
SECONDS_PER_ROW=2 TAGS=1,1000,10000,100000 DELAY_MS=50
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) SECONDS_PER_ROW=$2; shift 2 ;;
    --tags) TAGS=$2; shift 2 ;;
    --delay-ms) DELAY_MS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
export PG_OPTIONS="-c fsync=on -c synchronous_commit=on"
. "$ROOT/tests/scenarios/services.sh"
cd "$ROOT"
export CARGO_TARGET_DIR="$ROOT/target/core"
log "cargo build --release -p segflake-cli"
cargo build --quiet --release -p segflake-cli >&2
SEGFLAKE="$CARGO_TARGET_DIR/release/segflake"
services_start postgres mariadb redis
W="$SERVICES_DIR/bench"
mkdir -p "$W"
MYSQL=(mariadb --no-defaults -uroot --socket="$SERVICES_DIR/mariadb/mysqld.sock" segflake)
PSQL=(psql -q -v ON_ERROR_STOP=1 "$SEGFLAKE_PG_DSN")
"${PSQL[@]}" -f stores/sql/leaf_alloc.postgres.sql
"${MYSQL[@]}" <stores/sql/leaf_alloc.mysql.sql
# prefer_socket=false: over TCP like the others (the client would move to the Unix socket).
MYSQL_URL="mysql://segflake:segflake@127.0.0.1:$SEGFLAKE_MYSQL_PORT/segflake?prefer_socket=false"

# seed STORE N: the store holds the tags bench-0000000 .. bench-{N-1}, with step 1000.
seed() {
  case $1 in
    file) python3 -c "import sys; n = int(sys.argv[1])
print('# segflake file store, format 1')
for i in range(n): print(f'bench-{i:07d} 1 1000 -')" "$2" >"$W/ids.txt" ;;
    postgres) "${PSQL[@]}" -c "INSERT INTO leaf_alloc (biz_tag, max_id, step)
        SELECT 'bench-' || lpad(i::text, 7, '0'), 1, 1000 FROM generate_series(0, $2 - 1) i
        ON CONFLICT DO NOTHING" ;;
    mariadb) "${MYSQL[@]}" -e "INSERT IGNORE INTO leaf_alloc (biz_tag, max_id, step)
        SELECT CONCAT('bench-', LPAD(seq, 7, '0')), 1, 1000 FROM seq_0_to_$(($2 - 1))" ;;
    redis) redis-cli -p "$REDIS_PORT" EVAL "for i = 0, tonumber(ARGV[1]) - 1 do
        redis.call('SET', string.format('segflake:leaf_alloc:bench-%07d', i), 1, 'NX') end" 0 "$2" >/dev/null ;;
  esac
}
url_of() {
  case $1 in
    file) echo "file:$W/ids.txt" ;;
    postgres) echo "$SEGFLAKE_PG_DSN" ;;
    mariadb) echo "$MYSQL_URL" ;;
    redis) echo "$SEGFLAKE_REDIS_URL" ;;
  esac
}

echo "## Segment stores as tags grow (\`bench/segment/stores.sh\`)"
echo
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the start, $(date -u +%F); up to ${SECONDS_PER_ROW} s or 10,000 allocations per row"
echo
echo "| store | tags | allocations/s | p50 ms | p99 ms | max ms |"
echo "|---|---:|---:|---:|---:|---:|"
for store in file postgres mariadb redis; do
  for n in ${TAGS//,/ }; do
    log "$store: $n tags"
    seed "$store" "$n"
    "$SEGFLAKE" bench --store "$(url_of "$store")" --tags "$n" --seconds "$SECONDS_PER_ROW" --rate 0 --json |
      python3 -c "import json, sys
r = json.loads(sys.stdin.readline())
print(f\"| $store | {r['tags']:,} | {r['allocations_per_second']:,.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['max_ms']:.2f} |\")"
  done
done

echo
echo "## next_id while the store answers ${DELAY_MS} ms late"
echo
echo "Through a TCP proxy that passes the server's bytes on ${DELAY_MS} ms late; 100,000 IDs/s on one tag for 10 s, the library's default segment options (dynamic step from the row's 1,000, prefetch at 10% used)."
echo
echo "| store | allocation p50 ms | next_id calls | store allocations | final step | failed | calls over 1 ms (after the first second) | p50 µs | p99 µs | p99.9 µs | max µs |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; services_stop' EXIT
proxy_port=$(_free_port 47100)
for store in postgres mariadb redis; do
  case $store in
    postgres) target="127.0.0.1:$PG_PORT" url="postgresql://postgres@127.0.0.1:$proxy_port/postgres" ;;
    mariadb) target="127.0.0.1:$SEGFLAKE_MYSQL_PORT" url="mysql://segflake:segflake@127.0.0.1:$proxy_port/segflake?prefer_socket=false" ;;
    redis) target="127.0.0.1:$REDIS_PORT" url="redis://127.0.0.1:$proxy_port/0" ;;
  esac
  log "$store through a proxy ${DELAY_MS} ms late"
  python3 -u tests/scenarios/tcp_proxy.py "$proxy_port" "$target" --delay-ms "$DELAY_MS" >"$W/proxy.log" 2>&1 &
  pids+=($!)
  _wait_for 10 grep -q ready "$W/proxy.log"
  "$SEGFLAKE" bench --store "$url" --tags 1 --seconds 2 --rate 100000 --json |
    python3 -c "import json, sys
a, n = (json.loads(line) for line in sys.stdin)
print(f\"| $store | {a['p50_ms']:.1f} | {n['calls']:,} | {n['store_allocations']} | {n['final_step']:,} | {n['failed_calls']} | {n['calls_over_1ms']} ({n['calls_over_1ms_after_first_second']}) | {n['p50_us']:.2f} | {n['p99_us']:.2f} | {n['p999_us']:.2f} | {n['max_us']:,.0f} |\")"
  kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
done
