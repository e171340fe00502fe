#!/usr/bin/env bash
# Distributed scenarios against real PostgreSQL, MariaDB, Redis, ZooKeeper and etcd (tests/scenarios/):
# builds the Python wheel, the Node tarballs and the C library through their build scripts
# and the CLI as the container image ships it (static, musl), installs them with the
# database clients into target/scenarios (a venv, a Node project, the C programs, the CLI),
# then runs tests/scenarios/run.sh in two lanes side by side (each with its own servers; a
# scenario mostly waits, so two share two cores). Ends with `N passed, N failed`.
#   scripts/test-scenarios.sh [SCENARIO...]      SCEN_LANES=1 for one lane
. "$(dirname "$0")/ensure.sh"

W="$ROOT/target/scenarios"
mkdir -p "$W"
ensure_apt postgresql mariadb-server-core mariadb-client-core redis-server redis-tools zookeeper etcd-server etcd-client \
  libpq-dev libmariadb-dev libhiredis-dev faketime pkg-config curl openssl chromium
ensure_protoc

# Other builds write the same target/ and dist/ folders: each artifact is copied into
# target/scenarios/pkgs as soon as it is built, and a build that fails (or whose artifact
# vanished meanwhile) is tried once more.
version="$(node -p "require('$ROOT/npm/segflake/package.json').version")"
PKGS="$W/pkgs"
rm -rf "$PKGS" && mkdir -p "$PKGS"
build_python() { local w; w="$(bash "$ROOT/scripts/build-python.sh" | tail -n 1)" && cp "$w" "$PKGS/"; }
build_node() {
  bash "$ROOT/scripts/build-node.sh" >/dev/null &&
    cp "$ROOT/dist/segflake-$version.tgz" "$ROOT/dist/segflake-linux-x64-gnu-$version.tgz" "$PKGS/"
}
build_c() { local t; t="$(bash "$ROOT/scripts/build-c.sh" | tail -n 1)" && cp "$t" "$PKGS/"; }
# segflake depends on segflake-wasm (its fallback where no addon loads).
build_wasm() { local t; t="$(bash "$ROOT/scripts/build-wasm.sh" | tail -n 1)" && cp "$t" "$PKGS/"; }
twice() { "$@" || { log "retrying: $*"; sleep 5; "$@"; }; }
log "building the bindings"
twice build_python
twice build_node
twice build_c
twice build_wasm
wheel="$(ls "$PKGS"/segflake-*.whl)"
ctar="$(ls "$PKGS"/libsegflake-*.tar.gz)"

log "Python venv with the wheel, the database clients, and FastAPI, uvicorn, gunicorn and Celery"
[ -x "$W/venv/bin/python" ] || python3 -m venv "$W/venv"
"$W/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  "psycopg[binary]>=3.1,<4" "pymysql>=1.1,<2" "aiomysql>=0.2,<1" "redis>=5,<9" "kazoo>=2.9,<3" "etcd3gw>=2.4,<3" \
  "fastapi>=0.110,<1" "uvicorn>=0.29,<1" "uvicorn-worker>=0.2,<1" "gunicorn>=22,<24" "celery[redis]>=5.3,<6" \
  "grpcio>=1.60,<2" "grpcio-tools>=1.60,<2" >&2
"$W/venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel" >&2

log "Node project with the packed segflake, pg, mysql2, ioredis, node-zookeeper-client, etcd3, playwright-core and grpc-js"
mkdir -p "$W/node"
[ -f "$W/node/package.json" ] || echo '{"name":"segflake-scenarios","private":true}' >"$W/node/package.json"
(cd "$W/node" && npm install --no-audit --no-fund --loglevel=error --no-save \
  "$PKGS/segflake-$version.tgz" "$PKGS/segflake-linux-x64-gnu-$version.tgz" "$PKGS/segflake-wasm-$version.tgz" \
  pg@8 mysql2@3 ioredis@5 node-zookeeper-client@1 etcd3@1 playwright-core@1.65.1 @grpc/grpc-js@1 @grpc/proto-loader@0.8 >&2)
# The scenarios import the adapters as users do, through the package's subpath exports.
[ -f "$W/node/node_modules/segflake/stores/pg.js" ] || { echo "the packed segflake has no stores/" >&2; exit 1; }

log "C programs against $(basename "$ctar")"
rm -rf "$W/c" && mkdir -p "$W/c"
tar -C "$W/c" -xzf "$ctar"
P="$(ls -d "$W"/c/libsegflake-*/)"
cflags=(-std=c99 -O2 -Wall -Wextra -Werror -I"$P/include")
gcc "${cflags[@]}" -I"$(pg_config --includedir)" "$ROOT/examples/c/pg_store.c" "$P/lib/libsegflake.a" \
  -lpq -lpthread -ldl -lm -o "$W/c/pg_store"
# shellcheck disable=SC2046 # pkg-config prints several flags
gcc "${cflags[@]}" $(pkg-config --cflags libmariadb) "$ROOT/tests/scenarios/c_worker.c" "$P/lib/libsegflake.a" \
  $(pkg-config --libs libmariadb) -lhiredis -lpthread -ldl -lm -o "$W/c/c_worker"
gcc "${cflags[@]}" "$ROOT/tests/scenarios/bad_store.c" "$P/lib/libsegflake.a" -lpthread -ldl -lm -o "$W/c/bad_store"
# The C lease worker is the Redis registry example.
gcc "${cflags[@]}" "$ROOT/examples/c/redis_registry.c" "$P/lib/libsegflake.a" -lhiredis -lpthread -ldl -lm \
  -o "$W/c/lease_worker"

# The C serial worker is the Redis serial counter example.
gcc "${cflags[@]}" "$ROOT/examples/c/redis_serial.c" "$P/lib/libsegflake.a" -lhiredis -lpthread -ldl -lm \
  -o "$W/c/redis_serial"

log "segflake CLI: the static binary the container image ships (deploy/build-static.sh)"
# The platforms suite builds it too, beside the others: cargo's lock lets one build it and
# the other find it built.
bash "$ROOT/deploy/build-static.sh" amd64 "$W/segflake" >&2
# libfaketime (LD_PRELOAD) reaches no static binary: the runs whose clock it moves take the
# dynamically linked debug build that the demo and the Rust suite make.
CARGO_TARGET_DIR="$ROOT/target/core" cargo build --quiet -p segflake-cli >&2
cp "$ROOT/target/core/debug/segflake" "$W/segflake-faketime"
# The Rust axum example (rust_axum), a debug build beside the CLI's: its task lag stays
# within the scenario's limits (p99 < 20 ms, max < 100 ms) with both cores busy, also with
# two more CPU hogs running (p99 up to 12 ms, max up to 23 ms there); a release build
# would add about 1.5 minutes of compiling.
CARGO_TARGET_DIR="$ROOT/target/core" cargo build --quiet -p axum-service >&2

export SCEN_PY="$W/venv/bin/python" SCEN_NODE_DIR="$W/node" SCEN_C_DIR="$W/c" \
  SCEN_CLI="$W/segflake" SCEN_CLI_FAKETIME="$W/segflake-faketime" \
  SCEN_AXUM="$ROOT/target/core/debug/axum-service"
export SCEN_LANES=${SCEN_LANES:-2}
exec bash "$ROOT/tests/scenarios/run.sh" "$@"
