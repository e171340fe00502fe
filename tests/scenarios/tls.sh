# shellcheck shell=bash
# TLS scenarios, sourced by run.sh: Redis, PostgreSQL, MariaDB, etcd and ZooKeeper servers of
# their own that speak only TLS (on free ports, listening on 127.0.0.1 and 127.0.0.2; ZooKeeper
# on 127.0.0.1 only), with
# certificates made here: a CA, a server certificate it signed for DNS:localhost and
# IP:127.0.0.1 (not 127.0.0.2), and an unrelated second CA. The Python and Node adapters
# (tests/scenarios/tls_client.{py,mjs}: a store allocates a segment, a registry claims a
# worker ID) must work with the right CA, be refused with a certificate error with the wrong
# one, be refused when verify-full / VERIFY_IDENTITY / rediss / https reach the server by an
# address its certificate does not name (127.0.0.2), and never fall back to plaintext (a
# TLS URL against the shared plaintext servers fails). ZooKeeper: Python through kazoo;
# Node's registry refuses zk+tls:// (node-zookeeper-client has no TLS).

TLS_DIR=""
TLS_STARTED=()

# tls_certs DIR: ca.pem/ca.key, srv.pem/srv.key (signed by ca, SAN DNS:localhost,
# IP:127.0.0.1) and other.pem (an unrelated CA).
tls_certs() {
  local d=$1
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$d/ca.key" -out "$d/ca.pem" -days 2 -subj /CN=segflake-scenario-ca 2>/dev/null
  openssl req -x509 "${ec[@]}" -keyout "$d/other.key" -out "$d/other.pem" -days 2 -subj /CN=segflake-unrelated-ca 2>/dev/null
  openssl req "${ec[@]}" -keyout "$d/srv.key" -out "$d/srv.csr" -subj /CN=localhost 2>/dev/null
  printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
    "keyUsage=digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" >"$d/srv.ext"
  openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
    -extfile "$d/srv.ext" -out "$d/srv.pem" 2>/dev/null
  chmod 644 "$d"/*.pem "$d/srv.key"
}

# tls_begin NAME REDIS_PORT PG_PORT MYSQL_PORT: a directory with the certificates
# (tls_certs), traps that stop its servers however the scenario ends, and free ports from
# the ones given.
tls_begin() {
  TLS_DIR=$(mktemp -d "/tmp/segflake-$1.XXXXXX")
  chmod 755 "$TLS_DIR"
  trap tls_stop EXIT
  # Stopped by run.sh's watchdog or a Ctrl-C: through the EXIT trap, so the servers go too.
  trap 'exit 143' TERM
  trap 'exit 130' INT
  tls_certs "$TLS_DIR"
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  TLS_REDIS_PORT=$(_free_port "$2") TLS_PG_PORT=$(_free_port "$3") TLS_MYSQL_PORT=$(_free_port "$4")
}

# tls_databases_start: the TLS-only Redis, PostgreSQL and MariaDB (the two data directories
# made at once).
tls_databases_start() {
  tls_redis_start
  local inits=()
  tls_postgres_init & inits+=($!)
  tls_mariadb_init & inits+=($!)
  wait "${inits[@]}"
  tls_postgres_start
  tls_mariadb_start
}

tls_redis_start() {
  local d="$TLS_DIR/redis"; mkdir -p "$d"
  redis-server --daemonize yes --bind 127.0.0.1 127.0.0.2 --port 0 --tls-port "$TLS_REDIS_PORT" \
    --tls-cert-file "$TLS_DIR/srv.pem" --tls-key-file "$TLS_DIR/srv.key" --tls-ca-cert-file "$TLS_DIR/ca.pem" \
    --tls-auth-clients no --dir "$d" --appendonly yes --pidfile "$d/redis.pid" --logfile "$d/redis.log" >/dev/null
  TLS_STARTED+=(redis)
  _wait_for 20 bash -c "[ \"\$(redis-cli --tls --cacert $TLS_DIR/ca.pem -h 127.0.0.1 -p $TLS_REDIS_PORT ping 2>/dev/null)\" = PONG ]"
}

# tls_postgres_init / tls_postgres_start: its data directory (initdb), then the server.
tls_postgres_init() {
  local d="$TLS_DIR/pg"; mkdir -p "$d/data" "$d/sock"
  cp "$TLS_DIR/srv.pem" "$TLS_DIR/srv.key" "$d/"
  chown -R postgres:postgres "$d" && chmod 600 "$d/srv.key"
  (cd / && runuser -u postgres -- "$PG_BIN/initdb" -D "$d/data" -A trust -U postgres >"$d/initdb.log" 2>&1)
  # TCP only with TLS (hostssl): a client that did not start TLS is refused by the server too.
  printf '%s\n' "local all all trust" "hostssl all all 127.0.0.0/8 trust" >"$d/data/pg_hba.conf"
}

tls_postgres_start() {
  local d="$TLS_DIR/pg"
  (cd / && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$d/data" -l "$d/server.log" -w -t 30 \
     -o "-p $TLS_PG_PORT -k $d/sock -c listen_addresses=127.0.0.1,127.0.0.2 -c fsync=off -c ssl=on -c ssl_cert_file=$d/srv.pem -c ssl_key_file=$d/srv.key" \
     start >/dev/null)
  TLS_STARTED+=(postgres)
}

# tls_mariadb_init / tls_mariadb_start: its data directory, then the server.
tls_mariadb_init() {
  local d="$TLS_DIR/mariadb"; mkdir -p "$d/data" "$d/tmp"
  mariadb-install-db --no-defaults --user=root --datadir="$d/data" --tmpdir="$d/tmp" --auth-root-authentication-method=normal \
    >"$d/install.log" 2>&1
}

tls_mariadb_start() {
  local d="$TLS_DIR/mariadb"
  mariadbd --no-defaults --user=root --datadir="$d/data" --tmpdir="$d/tmp" --socket="$d/mysqld.sock" --port="$TLS_MYSQL_PORT" \
    --bind-address=127.0.0.1,127.0.0.2 --pid-file="$d/mysqld.pid" --skip-name-resolve \
    --ssl-cert="$TLS_DIR/srv.pem" --ssl-key="$TLS_DIR/srv.key" --ssl-ca="$TLS_DIR/ca.pem" >"$d/server.log" 2>&1 &
  TLS_STARTED+=(mariadb)
  _wait_for 30 mariadb --no-defaults -uroot --socket="$d/mysqld.sock" -e "SELECT 1"
  # REQUIRE SSL: the server refuses this user over plaintext too.
  mariadb --no-defaults -uroot --socket="$d/mysqld.sock" -e "
    CREATE DATABASE IF NOT EXISTS segflake;
    CREATE USER IF NOT EXISTS 'segflake'@'%' IDENTIFIED BY 'segflake' REQUIRE SSL;
    GRANT ALL ON segflake.* TO 'segflake'@'%';"
}

# ZooKeeper's TLS port (Netty, secureClientPort) with a PEM key store; tls_zookeeper_wait
# waits for its TLS handshake.
tls_zookeeper_start() {
  local d="$TLS_DIR/zookeeper"; mkdir -p "$d/data"
  cat "$TLS_DIR/srv.key" "$TLS_DIR/srv.pem" >"$d/keystore.pem"
  printf '%s\n' "tickTime=200" "initLimit=10" "syncLimit=5" "dataDir=$d/data" "secureClientPort=$TLS_ZK_PORT" \
    "secureClientPortAddress=127.0.0.1" "admin.enableServer=false" \
    "serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory" \
    "ssl.keyStore.location=$d/keystore.pem" "ssl.keyStore.type=PEM" \
    "ssl.trustStore.location=$TLS_DIR/ca.pem" "ssl.trustStore.type=PEM" "ssl.clientAuth=none" >"$d/zoo.cfg"
  java -Dzookeeper.log.dir="$d" -Dzookeeper.root.logger=WARN,CONSOLE \
    -cp "/usr/share/java/*:/usr/share/zookeeper/*:/etc/zookeeper/conf" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" >"$d/server.log" 2>&1 &
  echo $! >"$d/zk.pid"
  TLS_STARTED+=(zookeeper)
}

tls_zookeeper_wait() {
  _wait_for 30 openssl s_client -connect "127.0.0.1:$TLS_ZK_PORT" -CAfile "$TLS_DIR/ca.pem" -verify_return_error </dev/null
}

# etcd with https client URLs; tls_etcd_wait waits until it is healthy.
tls_etcd_start() {
  local d="$TLS_DIR/etcd" peer=$TLS_ETCD_PEER_PORT; mkdir -p "$d"
  etcd --name tls --data-dir "$d/data" \
    --listen-client-urls "https://127.0.0.1:$TLS_ETCD_PORT,https://127.0.0.2:$TLS_ETCD_PORT" \
    --advertise-client-urls "https://127.0.0.1:$TLS_ETCD_PORT" --cert-file "$TLS_DIR/srv.pem" --key-file "$TLS_DIR/srv.key" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "tls=http://127.0.0.1:$peer" >"$d/server.log" 2>&1 &
  echo $! >"$d/etcd.pid"
  TLS_STARTED+=(etcd)
}

tls_etcd_wait() {
  _wait_for 30 env ETCDCTL_API=3 etcdctl --endpoints "https://127.0.0.1:$TLS_ETCD_PORT" --cacert "$TLS_DIR/ca.pem" endpoint health
}

tls_stop() {
  local s
  for s in "${TLS_STARTED[@]}"; do
    case $s in
      redis) _stop_pidfile "$TLS_DIR/redis/redis.pid" 15 ;;
      postgres) (cd / && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$TLS_DIR/pg/data" -m immediate -w stop >/dev/null 2>&1) ;;
      mariadb) _stop_pidfile "$TLS_DIR/mariadb/mysqld.pid" 30 ;;
      etcd) _stop_pidfile "$TLS_DIR/etcd/etcd.pid" 15 ;;
      zookeeper) _stop_pidfile "$TLS_DIR/zookeeper/zk.pid" 15 ;;
    esac
  done >/dev/null 2>&1 || true
  TLS_STARTED=()
  [ -n "$TLS_DIR" ] && rm -rf "$TLS_DIR"
}

# tls_case LANGS NAME KIND URL EXPECT: one case for tls_client.py (LANGS py or both) and
# tls_client.mjs (node or both); EXPECT: ok, or a regular expression the error must match.
tls_case() {
  local langs=$1 lang; shift
  for lang in py node; do
    [ "$langs" = both ] || [ "$langs" = "$lang" ] || continue
    "$SCEN_PY" -c 'import json, sys; print(json.dumps(dict(zip(("name", "kind", "url", "expect"), sys.argv[1:]))) + ",")' \
      "$@" >>"$TLS_DIR/cases-$lang.part"
  done
}

# tls_json LANG: the cases of LANG as a JSON list, in $TLS_DIR/cases-LANG.json.
tls_json() { { echo '['; sed '$ s/,$//' "$TLS_DIR/cases-$1.part"; echo ']'; } >"$TLS_DIR/cases-$1.json"; }

# The certificate errors the clients report: OpenSSL's (Python) and Node's.
TLS_BAD_CA='certificate verify failed|unable to get local issuer certificate|self[- ]signed certificate|unable to verify'
TLS_BAD_NAME="hostname mismatch|doesn't match|does not match|not in the cert's list|IP address mismatch|Hostname/IP does not match"

tls_all() {
  local t0=$SECONDS
  tls_begin tls 63899 24429 26169
  TLS_ZK_PORT=$(_free_port 22819) TLS_ETCD_PORT=$(_free_port 23899)
  TLS_ETCD_PEER_PORT=$(_free_port $((TLS_ETCD_PORT + 1)))
  # The slow starts overlap: ZooKeeper's JVM and etcd start while the databases initialise.
  tls_zookeeper_start
  tls_etcd_start
  tls_databases_start
  tls_etcd_wait
  tls_zookeeper_wait
  local up=$((SECONDS - t0))
  local ca="$TLS_DIR/ca.pem" other="$TLS_DIR/other.pem" kind
  : >"$TLS_DIR/cases-py.part"; : >"$TLS_DIR/cases-node.part"
  # Redis: rediss:// with ca=PATH; the host name is always checked.
  local r="rediss://127.0.0.1:$TLS_REDIS_PORT/0"
  for kind in store registry; do
    tls_case both "redis $kind right CA" "$kind" "$r?ca=$ca" ok
    tls_case both "redis $kind wrong CA" "$kind" "$r?ca=$other" "$TLS_BAD_CA"
  done
  tls_case both "redis registry host not in the certificate" registry "rediss://127.0.0.2:$TLS_REDIS_PORT/0?ca=$ca" "$TLS_BAD_NAME"
  tls_case both "redis store plaintext server refuses rediss" store "rediss://${SEGFLAKE_REDIS_URL#redis://}" \
    'timed out|ETIMEDOUT|wrong version number|packet length too long|unexpected eof|ECONNRESET|socket disconnected'
  # PostgreSQL: libpq's sslmode / sslrootcert.
  local p="postgresql://postgres@127.0.0.1:$TLS_PG_PORT/postgres" p2="postgresql://postgres@127.0.0.2:$TLS_PG_PORT/postgres"
  for kind in store registry; do
    tls_case both "pg $kind verify-full right CA" "$kind" "$p?sslmode=verify-full&sslrootcert=$ca" ok
    tls_case both "pg $kind verify-full wrong CA" "$kind" "$p?sslmode=verify-full&sslrootcert=$other" "$TLS_BAD_CA"
  done
  tls_case both "pg registry verify-full host not in the certificate" registry "$p2?sslmode=verify-full&sslrootcert=$ca" "$TLS_BAD_NAME"
  tls_case both "pg registry verify-ca other host name accepted" registry "$p2?sslmode=verify-ca&sslrootcert=$ca" ok
  tls_case both "pg registry verify-ca wrong CA" registry "$p2?sslmode=verify-ca&sslrootcert=$other" "$TLS_BAD_CA"
  tls_case both "pg store require (encrypted, not verified)" store "$p?sslmode=require" ok
  tls_case both "pg store require on a plaintext server" store "$SEGFLAKE_PG_DSN?sslmode=require" \
    'server does not support SSL'
  # MariaDB: ssl-mode / ssl-ca as MySQL's clients name them.
  local m="mysql://segflake:segflake@127.0.0.1:$TLS_MYSQL_PORT/segflake" m2="mysql://segflake:segflake@127.0.0.2:$TLS_MYSQL_PORT/segflake"
  for kind in store registry; do
    tls_case both "mysql $kind VERIFY_IDENTITY right CA" "$kind" "$m?ssl-mode=VERIFY_IDENTITY&ssl-ca=$ca" ok
    tls_case both "mysql $kind VERIFY_IDENTITY wrong CA" "$kind" "$m?ssl-mode=VERIFY_IDENTITY&ssl-ca=$other" "$TLS_BAD_CA"
  done
  tls_case both "mysql registry VERIFY_IDENTITY host not in the certificate" registry "$m2?ssl-mode=VERIFY_IDENTITY&ssl-ca=$ca" "$TLS_BAD_NAME"
  tls_case both "mysql registry VERIFY_CA other host name accepted" registry "$m2?ssl-mode=VERIFY_CA&ssl-ca=$ca" ok
  tls_case both "mysql store REQUIRED (encrypted, not verified)" store "$m?ssl-mode=REQUIRED" ok
  tls_case both "mysql store REQUIRED on a plaintext server" store \
    "mysql://$SEGFLAKE_MYSQL_USER:$SEGFLAKE_MYSQL_PASSWORD@$SEGFLAKE_MYSQL_HOST:$SEGFLAKE_MYSQL_PORT/$SEGFLAKE_MYSQL_DB?ssl-mode=REQUIRED" \
    'not support|does not support secure connection|SSL is required'
  # etcd: https endpoints with the CA file.
  local e="etcd+tls://127.0.0.1:$TLS_ETCD_PORT/segflake-tls"
  tls_case both "etcd registry right CA" registry "$e?ca=$ca" ok
  tls_case both "etcd registry wrong CA" registry "$e?ca=$other" "$TLS_BAD_CA"
  tls_case both "etcd registry etcd+tls on a plaintext server" registry "etcd+tls://$SEGFLAKE_ETCD_ENDPOINT/segflake-tls" \
    'wrong version number|UNEXPECTED_EOF|EOF occurred in violation of protocol|disconnected before secure TLS connection|ECONNRESET|Connection reset'
  tls_case both "etcd registry host not in the certificate" registry "etcd+tls://127.0.0.2:$TLS_ETCD_PORT/segflake-tls?ca=$ca" "$TLS_BAD_NAME"
  # ZooKeeper: kazoo's TLS in Python; node-zookeeper-client has none, so Node refuses
  # instead of going plaintext.
  local z="zk+tls://127.0.0.1:$TLS_ZK_PORT/snowflake/segflake-tls?identity=127.0.0.1:9"
  tls_case py "zookeeper registry right CA" registry "$z&ca=$ca" ok
  tls_case py "zookeeper registry wrong CA" registry "$z&ca=$other" "$TLS_BAD_CA"
  tls_case node "zookeeper zk+tls refused" registry "$z&ca=$ca" 'not supported by node-zookeeper-client'
  # segflake serve over HTTPS (a stand-in server in tls_client.py): Python's HttpStore.
  tls_case py "http store right CA" http "https://127.0.0.1:PORT#$ca" ok
  tls_case py "http store wrong CA" http "https://127.0.0.1:PORT#$other" "$TLS_BAD_CA"
  tls_case py "http store host not in the certificate" http "https://127.0.0.2:PORT#$ca" "$TLS_BAD_NAME"
  tls_json py; tls_json node
  local out rc=0 n
  out=$(TLS_SERVER_CERT="$TLS_DIR/srv.pem" TLS_SERVER_KEY="$TLS_DIR/srv.key" \
    "$SCEN_PY" "$HERE/tls_client.py" "$TLS_DIR/cases-py.json" 2>&1) || rc=1
  printf '%s\n' "$out" >"$SCEN_OUT/tls-python.txt"
  [ $rc = 0 ] || fail "python: $(grep -v '^ok' <<<"$out")"
  n=$(grep -c '^ok' <<<"$out")
  out=$(cd "$SCEN_NODE_DIR" && node "$HERE/tls_client.mjs" "$TLS_DIR/cases-node.json" 2>&1) || rc=1
  printf '%s\n' "$out" >"$SCEN_OUT/tls-node.txt"
  [ $rc = 0 ] || fail "node: $(grep -v '^ok' <<<"$out")"
  n="$n python + $(grep -c '^ok' <<<"$out") node"
  note "tls: $n cases as expected (right CA works, wrong CA and names not in the certificate refused, no plaintext fallback) on TLS-only Redis, PostgreSQL, MariaDB, etcd and ZooKeeper (servers up in ${up} s); $((SECONDS - t0)) s"
}
