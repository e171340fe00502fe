//! Stores, registries and counters built from clients the caller configured: a
//! `tokio_postgres::Config`, a `mysql::Opts`, a `redis::Client`, against real servers.

#[path = "../../segflake-cli/tests/common/mod.rs"]
mod common;

use std::process::Command;

use segflake::{Registry, RegistryCall, SegmentStore, SerialGenerator, SerialOptions, Value};
use segflake_backends::{
    CounterOptions, MySqlRegistry, MySqlStore, PostgresRegistry, PostgresStore, RedisCounter,
    RedisRegistry, RedisStore, RegistryOptions, SerialCounter, StoreOptions, TagStore,
};

fn required<T>(server: Option<T>, what: &str) -> T {
    server.unwrap_or_else(|| panic!("{what} is not installed; scripts/test-rust.sh installs it"))
}

fn store_options() -> StoreOptions {
    let mut options = StoreOptions::default();
    options.timeout_ms = 5_000;
    options.create_missing_step = Some(10);
    options
}

fn claim(registry: &dyn Registry, worker_id: u64) -> Value {
    registry
        .call(&RegistryCall::Claim {
            worker_id,
            owner: "own-client".into(),
            ttl_ms: 10_000,
        })
        .unwrap()
}

#[test]
fn postgres_from_a_tokio_postgres_config() {
    let pg = required(common::postgres(None), "PostgreSQL");
    let table =
        segflake::segment::statements::statement("postgres", "create_table", "leaf_alloc").unwrap();
    let out = Command::new(common::postgres_bin().join("psql"))
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &pg.port.to_string(),
            "-U",
            "postgres",
        ])
        .args(["-v", "ON_ERROR_STOP=1", "-c", &table])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut config = tokio_postgres::Config::new();
    config
        .host("127.0.0.1")
        .port(pg.port)
        .user("postgres")
        .dbname("postgres");
    let store = PostgresStore::from_config(config.clone(), &store_options());
    assert_eq!(
        store.describe(),
        format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port)
    );
    assert_eq!(store.allocate("order", 10).unwrap().max_id, 11);
    assert_eq!(store.allocate("order", 5).unwrap().max_id, 16);
    let registry = PostgresRegistry::from_config(config, &RegistryOptions::default());
    assert_ne!(claim(&registry, 1), Value::Null);
    common::stop_postgres(&pg);
}

#[test]
fn mysql_from_mysql_opts() {
    let db = required(common::mariadb(None), "MariaDB");
    let url = format!("mysql://segflake:segflake@127.0.0.1:{}/segflake", db.port);
    let table =
        segflake::segment::statements::statement("mysql", "create_table", "leaf_alloc").unwrap();
    let opts = mysql::Opts::from_url(&url).unwrap();
    {
        use mysql::prelude::Queryable;
        let mut conn = mysql::Conn::new(opts.clone()).unwrap();
        conn.query_drop(table).unwrap();
    }
    let store = MySqlStore::from_opts(opts.clone(), &store_options());
    assert_eq!(store.allocate("order", 10).unwrap().max_id, 11);
    assert_eq!(store.allocate("order", 3).unwrap().max_id, 14);
    assert!(store.has_tag("order").unwrap());
    assert!(!store.has_tag("missing").unwrap());
    let registry = MySqlRegistry::from_opts(opts, &RegistryOptions::default());
    assert_ne!(claim(&registry, 2), Value::Null);
}

#[test]
fn redis_from_a_redis_client() {
    let server = required(common::redis(None), "Redis");
    let client = redis::Client::open(format!("redis://{}/0", server.endpoint())).unwrap();
    let store = RedisStore::from_client(client.clone(), &store_options());
    assert_eq!(store.describe(), format!("redis://{}", server.endpoint()));
    assert_eq!(store.allocate("order", 10).unwrap().max_id, 11);
    let registry = RedisRegistry::from_client(client.clone(), &RegistryOptions::default());
    assert_ne!(claim(&registry, 4), Value::Null);
    let counter = RedisCounter::from_client(client, &CounterOptions::default());
    let generator = SerialGenerator::new(SerialOptions::default()).unwrap();
    let a = counter.next(&generator).unwrap();
    let b = counter.next(&generator).unwrap();
    assert!(b > a, "{a} then {b}");
}
