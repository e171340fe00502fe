#!/usr/bin/env bash
# The Rust side: one release version everywhere, formatting, lints, the core's unit/integration/vector tests, the loom
# model of the generator's compare-and-swap, the CLI's tests (with a real Redis), and the wasm32 build of the core.
. "$(dirname "$0")/ensure.sh"
cd "$ROOT"
export CARGO_TARGET_DIR="$ROOT/target/core"
ensure_rust_component rustfmt
ensure_rust_component clippy
ensure_rust_target wasm32-unknown-unknown
ensure_protoc
# The CLI's --registry tests start their own redis-server, ZooKeeper and etcd; its TLS tests
# (tests/tls.rs) also PostgreSQL and MariaDB, with certificates made by openssl.
ensure_apt redis-server zookeeper etcd-server postgresql mariadb-server-core mariadb-client-core openssl

log "vectors are what tests/vectors/generate.py writes"
python3 tests/vectors/generate.py --check

log "one version in Cargo, npm, Python and the C header"
python3 scripts/check_release.py versions

log "cargo fmt --check"
cargo fmt --all --check

log "cargo clippy (core and CLI, all targets)"
cargo clippy -p segflake -p segflake-cli -p segflake-backends -p segflake-tokio -p axum-service --all-targets --all-features -- -D warnings
log "cargo clippy (the Node, Python and WebAssembly bindings' libraries)"
cargo clippy -p segflake-node -p segflake-python -p segflake-wasm -p segflake-wasm-hot -- -D warnings

log "the core without default features (the snowflake build), each feature alone, and segflake-wasm's snowflake build lint clean"
for features in "" segment serial lease; do
  cargo clippy -q -p segflake --no-default-features ${features:+--features "$features"} -- -D warnings ||
    { echo "segflake with features [$features] is not clippy-clean" >&2; exit 1; }
done
cargo clippy -q -p segflake-wasm -p segflake-wasm-hot --no-default-features -- -D warnings

log "segflake-backends: no features, each feature alone, and the CLI's set lint clean"
for features in "" postgres mysql redis zookeeper etcd rustls tokio postgres,mysql,redis,zookeeper,etcd,rustls; do
  cargo clippy -q -p segflake-backends --no-default-features ${features:+--features "$features"} -- -D warnings ||
    { echo "segflake-backends with features [$features] is not clippy-clean" >&2; exit 1; }
done

log "the core has no dependencies"
deps=$(cargo tree -p segflake -e normal --prefix none | tail -n +2)
if [ -n "$deps" ]; then echo "segflake has dependencies: $deps" >&2; exit 1; fi

log "cargo test (core and CLI)"
# The simulator (tests/simulation) runs its fixed seeds and, from this commit, more.
SEGFLAKE_SIM_COMMIT="$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || true)"
export SEGFLAKE_SIM_COMMIT
# TEST_NAME=TEXT: only the tests whose name contains TEXT.
cargo test --no-fail-fast -p segflake -p segflake-cli -p segflake-backends -p segflake-tokio --all-features -- ${TEST_NAME:+"$TEST_NAME"}

log "declarations written from the core's tables are current (scripts/gen_declarations.py --check)"
python3 scripts/gen_declarations.py --check

log "the publishable crates: built from what cargo package uploads, docs clean (scripts/check-crates.sh)"
bash scripts/check-crates.sh segflake segflake-tokio segflake-backends

log "loom model of the snowflake compare-and-swap"
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$ROOT/target/loom" \
  cargo test -p segflake --test loom --test segment_loom --release

log "the core builds for wasm32-unknown-unknown"
cargo build -p segflake --target wasm32-unknown-unknown --release
