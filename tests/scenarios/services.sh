# shellcheck shell=bash
# Real PostgreSQL, MariaDB, Redis, ZooKeeper and etcd servers on 127.0.0.1 for the scenario
# tests. Source it, then `services_start postgres mariadb redis zookeeper etcd`; everything
# started is stopped by
# `services_stop` (installed as an EXIT trap), even when a scenario fails.
#
# Exports: SEGFLAKE_PG_DSN (and SEGFLAKE_PG2_DSN for postgres2), SEGFLAKE_MYSQL_{HOST,PORT,USER,PASSWORD,DB}, SEGFLAKE_REDIS_URL,
# SEGFLAKE_ZK_HOSTS (HOST:PORT), SEGFLAKE_ETCD_ENDPOINT (HOST:PORT), and SERVICES_DIR (data and logs). Ports are non-default so a developer's own servers are
# left alone, and every server a scenario starts listens below Linux's ephemeral range
# (32768-60999): a port found free there can be taken by a client connection's local end
# before the server binds it.

. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/ensure.sh"

PG_PORT=${PG_PORT:-24329}
PG2_PORT=${PG2_PORT:-24339}
MYSQL_PORT=${MYSQL_PORT:-26069}
REDIS_PORT=${REDIS_PORT:-63799}
ZK_PORT=${ZK_PORT:-21819}
ETCD_PORT=${ETCD_PORT:-23799}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-23809}
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
SERVICES_DIR=${SERVICES_DIR:-}
_started=()

# _port_busy PORT: whether something listens on 127.0.0.1:PORT.
_port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# _free_port PORT: PORT, or the next port up that nothing listens on (another run of the
# scenarios on this machine keeps its servers; restarts reuse the port chosen first). With
# SCEN_LANES lanes side by side (tests/scenarios/run.sh), lane SCEN_LANE (1-based) takes only
# the ports p with p % SCEN_LANES == SCEN_LANE - 1, so two lanes never pick the same port
# between one's check and its server's bind.
_free_port() {
  local p=$1 lanes=${SCEN_LANES:-1} lane=${SCEN_LANE:-1}
  while [ $((p % lanes)) -ne $((lane - 1)) ] || _port_busy "$p"; do p=$((p + 1)); done
  echo "$p"
}

_services_dir() {
  if [ -z "$SERVICES_DIR" ]; then
    SERVICES_DIR=$(mktemp -d /tmp/segflake-services.XXXXXX)
    chmod 755 "$SERVICES_DIR"
    PG_PORT=$(_free_port "$PG_PORT")
    PG2_PORT=$(_free_port "$PG2_PORT")
    MYSQL_PORT=$(_free_port "$MYSQL_PORT")
    REDIS_PORT=$(_free_port "$REDIS_PORT")
    ZK_PORT=$(_free_port "$ZK_PORT")
    ETCD_PORT=$(_free_port "$ETCD_PORT")
    ETCD_PEER_PORT=$(_free_port "$ETCD_PEER_PORT")
  fi
  export SERVICES_DIR
}

_wait_for() { # _wait_for SECONDS CMD...
  local deadline=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# PG_OPTIONS: more server options (`-c fsync=on` for a benchmark; later ones win).
# _pg_start NAME PORT / _pg_stop NAME [fast|immediate|kill9]: a PostgreSQL server with its
# own data directory $SERVICES_DIR/NAME on 127.0.0.1:PORT.
_pg_start() {
  local d="$SERVICES_DIR/$1" port=$2
  if [ ! -d "$d/data" ]; then
    mkdir -p "$d/data" "$d/sock" && chown -R postgres:postgres "$d"
    (cd / && runuser -u postgres -- "$PG_BIN/initdb" -D "$d/data" -A trust -U postgres >"$d/initdb.log" 2>&1)
  fi
  (cd / && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$d/data" -l "$d/server.log" -w -t 30 \
     -o "-p $port -k $d/sock -c listen_addresses=127.0.0.1 -c fsync=off ${PG_OPTIONS:-}" start >/dev/null)
  _wait_for 20 "$PG_BIN/pg_isready" -h 127.0.0.1 -p "$port"
}

_pg_stop() {
  local d="$SERVICES_DIR/$1" mode=${2:-fast}
  if [ "$mode" = kill9 ]; then
    # The postmaster and its backends, by process ID (never by name: other PostgreSQL
    # servers on this machine are left alone).
    local pid pids
    pid=$(head -n 1 "$d/data/postmaster.pid" 2>/dev/null) || return 0
    pids="$pid $(pgrep -P "$pid" | tr '\n' ' ')"
    # shellcheck disable=SC2086 # one word per process ID
    kill -9 $pids 2>/dev/null || true
    # A killed process lingers as a zombie for a moment; PostgreSQL will not start again
    # while its old postmaster or backends exist.
    _wait_for 15 bash -c "for p in $pids; do s=\$(ps -o stat= -p \$p 2>/dev/null) && [ \"\${s#Z}\" = \"\$s\" ] && exit 1; done; exit 0"
    rm -f "$d/data/postmaster.pid"
  else
    (cd / && runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$d/data" -m "$mode" -w stop >/dev/null 2>&1) || true
  fi
}

# _pg_up NAME PORT_VAR DSN_VAR SERVICE: starts server NAME on the port PORT_VAR names and
# exports its URL as DSN_VAR.
_pg_up() {
  ensure_apt postgresql
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  _services_dir
  local port=${!2}
  _pg_start "$1" "$port"
  export "$3=postgresql://postgres@127.0.0.1:$port/postgres"
  _started+=("$4")
}

postgres_start() { _pg_up pg PG_PORT SEGFLAKE_PG_DSN postgres; }
postgres_stop() { _pg_stop pg "$@"; } # [fast|immediate|kill9]

# A second PostgreSQL server (multi-store scenarios: one database per residue class).
postgres2_start() { _pg_up pg2 PG2_PORT SEGFLAKE_PG2_DSN postgres2; }
postgres2_stop() { _pg_stop pg2 "$@"; } # [fast|immediate|kill9]

mariadb_start() {
  ensure_apt mariadb-server-core mariadb-client-core
  _services_dir
  local d="$SERVICES_DIR/mariadb"
  # A temporary directory of its own: a starting server deletes the #sql* files of the
  # shared one, and with them another server's temporary tables.
  mkdir -p "$d/tmp"
  if [ ! -d "$d/data" ]; then
    mkdir -p "$d/data"
    mariadb-install-db --no-defaults --user=root --datadir="$d/data" --tmpdir="$d/tmp" --auth-root-authentication-method=normal \
      >"$d/install.log" 2>&1
  fi
  mariadbd --no-defaults --user=root --datadir="$d/data" --tmpdir="$d/tmp" --socket="$d/mysqld.sock" \
    --port="$MYSQL_PORT" --bind-address=127.0.0.1 --pid-file="$d/mysqld.pid" \
    --innodb-flush-log-at-trx-commit=1 --skip-name-resolve >"$d/server.log" 2>&1 &
  _wait_for 30 mariadb --no-defaults -uroot --socket="$d/mysqld.sock" -e "SELECT 1"
  mariadb --no-defaults -uroot --socket="$d/mysqld.sock" -e "
    CREATE DATABASE IF NOT EXISTS segflake;
    CREATE USER IF NOT EXISTS 'segflake'@'%' IDENTIFIED BY 'segflake';
    CREATE USER IF NOT EXISTS 'segflake'@'localhost' IDENTIFIED BY 'segflake';
    GRANT ALL ON segflake.* TO 'segflake'@'%';
    GRANT ALL ON segflake.* TO 'segflake'@'localhost';"
  export SEGFLAKE_MYSQL_HOST=127.0.0.1 SEGFLAKE_MYSQL_PORT=$MYSQL_PORT SEGFLAKE_MYSQL_USER=segflake \
    SEGFLAKE_MYSQL_PASSWORD=segflake SEGFLAKE_MYSQL_DB=segflake
  _started+=(mariadb)
}

# _stop_pidfile FILE SECONDS [graceful|kill9]: stops the process whose ID FILE holds, and
# waits up to SECONDS for it to be gone.
_stop_pidfile() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 0
  if [ "${3:-graceful}" = kill9 ]; then kill -9 "$pid" 2>/dev/null || true; else kill "$pid" 2>/dev/null || true; fi
  _wait_for "$2" bash -c "! kill -0 $pid 2>/dev/null"
}

mariadb_stop() { _stop_pidfile "$SERVICES_DIR/mariadb/mysqld.pid" 30 "$@"; } # [graceful|kill9]

# redis_start [ARG...]: ARGs are added to redis-server's command line (later ones win:
# `--appendonly no --save '' --dir D` for a server that forgets everything on a restart).
redis_start() {
  ensure_apt redis-server redis-tools
  _services_dir
  local d="$SERVICES_DIR/redis"
  mkdir -p "$d"
  # appendonly + fsync always: a restarted server never hands out a counter value twice.
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$d" \
    --appendonly yes --appendfsync always --pidfile "$d/redis.pid" --logfile "$d/redis.log" "$@" >/dev/null
  # PONG, not "LOADING": a restarted server answers errors until its dataset is loaded.
  _wait_for 30 bash -c "[ \"\$(redis-cli -p $REDIS_PORT ping 2>/dev/null)\" = PONG ]"
  export SEGFLAKE_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
  _started+=(redis)
}

redis_stop() { _stop_pidfile "$SERVICES_DIR/redis/redis.pid" 15 "$@"; } # [graceful|kill9]

# ZooKeeper with a 200 ms tick: session timeouts between 0.4 s and 4 s, so expiry tests are
# fast. Started directly (not zkServer.sh), its snapshot and log synced as by default.
zookeeper_start() {
  ensure_apt zookeeper
  _services_dir
  local d="$SERVICES_DIR/zookeeper"
  mkdir -p "$d/data"
  printf '%s\n' "tickTime=200" "initLimit=10" "syncLimit=5" "dataDir=$d/data" "clientPort=$ZK_PORT" \
    "clientPortAddress=127.0.0.1" "admin.enableServer=false" "maxClientCnxns=0" \
    "4lw.commands.whitelist=srvr,stat" >"$d/zoo.cfg"
  java -Dzookeeper.log.dir="$d" -Dzookeeper.root.logger=WARN,CONSOLE \
    -cp "/usr/share/java/*:/usr/share/zookeeper/*:/etc/zookeeper/conf" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zoo.cfg" >"$d/server.log" 2>&1 &
  echo $! >"$d/zk.pid"
  _wait_for 30 timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$ZK_PORT && printf srvr >&3 && grep -q Mode <&3"
  export SEGFLAKE_ZK_HOSTS="127.0.0.1:$ZK_PORT"
  _started+=(zookeeper)
}

zookeeper_stop() { _stop_pidfile "$SERVICES_DIR/zookeeper/zk.pid" 15 "$@"; } # [graceful|kill9]

etcd_start() {
  ensure_apt etcd-server etcd-client
  _services_dir
  local d="$SERVICES_DIR/etcd"
  mkdir -p "$d"
  etcd --name segflake --data-dir "$d/data" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "segflake=http://127.0.0.1:$ETCD_PEER_PORT" >"$d/server.log" 2>&1 &
  echo $! >"$d/etcd.pid"
  _wait_for 30 env ETCDCTL_API=3 etcdctl --endpoints "127.0.0.1:$ETCD_PORT" endpoint health
  export SEGFLAKE_ETCD_ENDPOINT="127.0.0.1:$ETCD_PORT"
  _started+=(etcd)
}

etcd_stop() { _stop_pidfile "$SERVICES_DIR/etcd/etcd.pid" 15 "$@"; } # [graceful|kill9]

services_start() {
  trap services_stop EXIT
  # A TERM or INT (Ctrl-C, a CI timeout) exits through the EXIT trap too.
  trap 'exit 143' TERM
  trap 'exit 130' INT
  for s in "$@"; do log "starting $s"; "${s}_start"; done
}

services_stop() {
  for s in "${_started[@]}"; do "${s}_stop" >/dev/null 2>&1 || true; done
  _started=()
  [ -n "$SERVICES_DIR" ] && rm -rf "$SERVICES_DIR"
}
