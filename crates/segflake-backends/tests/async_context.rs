//! The adapters that drive an async client on a runtime of their own (PostgreSQL,
//! ZooKeeper, etcd) are built, called and dropped on threads that run a tokio runtime,
//! multi-threaded and current-thread, against real servers: no "Cannot start a runtime
//! from within a runtime", no "Cannot drop a runtime in a context where blocking is not
//! allowed", and the answers are the servers'.
//!
//! The servers are started as the CLI's tests start them (one copy of the helpers).

#[path = "../../segflake-cli/tests/common/mod.rs"]
mod common;

use std::process::Command;
use std::sync::Arc;

use segflake::{Registry, RegistryCall, SegmentStore, Value};
use segflake_backends::{
    EtcdRegistry, PostgresRegistry, PostgresStore, RegistryOptions, StoreOptions, TagStore,
    ZooKeeperRegistry,
};

/// A server the test needs: these tests never pass without it.
fn required<T>(server: Option<T>, what: &str) -> T {
    server.unwrap_or_else(|| panic!("{what} is not installed; scripts/test-rust.sh installs it"))
}

/// PostgreSQL with Leaf's table, the core's own `create_table`.
fn postgres_with_table() -> (common::Server, String) {
    let pg = required(common::postgres(None), "PostgreSQL");
    let table = segflake::segment::statements::statement("postgres", "create_table", "leaf_alloc")
        .expect("the core's create_table");
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
        .expect("psql");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port);
    (pg, url)
}

/// Allocations from the async thread itself: created on first use at the row's step, then
/// at the step asked for; the store is dropped there too.
fn use_postgres_store(url: &str) {
    let mut options = StoreOptions::default();
    options.timeout_ms = 5_000;
    options.create_missing_step = Some(100);
    let store = PostgresStore::new(url, &options).unwrap();
    let first = store.allocate("order", 7).unwrap();
    assert_eq!((first.max_id, first.step), (101, 100));
    let second = store.allocate("order", 7).unwrap();
    assert_eq!((second.max_id, second.step), (108, 7));
    assert!(store.has_tag("order").unwrap());
    assert_eq!(store.records().unwrap()[0].max_id, 108);
    drop(store);
}

/// Waits until the registry's server answers (a JVM that just opened its port may take a
/// few seconds on a busy machine before it grants sessions).
fn until_answering(registry: &dyn Registry) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while let Err(e) = registry.call(&RegistryCall::Peers) {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never answered: {e}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// A claim, the peers and a release from the async thread; the registry is dropped there.
fn use_registry(registry: Arc<dyn Registry>, worker_id: u64) {
    until_answering(&*registry);
    let owner = "async-owner".to_string();
    let claimed = registry
        .call(&RegistryCall::Claim {
            worker_id,
            owner: owner.clone(),
            ttl_ms: 10_000,
        })
        .unwrap();
    assert_ne!(claimed, Value::Null, "the claim of a free worker ID failed");
    let other = registry
        .call(&RegistryCall::Claim {
            worker_id,
            owner: "someone-else".into(),
            ttl_ms: 10_000,
        })
        .unwrap();
    assert_eq!(other, Value::Null, "a held worker ID was claimed again");
    assert!(matches!(
        registry.call(&RegistryCall::Peers).unwrap(),
        Value::List(_)
    ));
    registry
        .call(&RegistryCall::Release {
            worker_id,
            owner,
            mark_ms: 0,
        })
        .unwrap();
    drop(registry);
}

fn registry_options() -> RegistryOptions {
    let mut options = RegistryOptions::default();
    options.timeout_ms = 5_000;
    options.identity = Some("10.0.0.7:8080".into());
    options
}

async fn postgres() {
    let (pg, url) = postgres_with_table();
    use_postgres_store(&url);
    let registry = PostgresRegistry::new(&url, &registry_options()).unwrap();
    use_registry(Arc::new(registry), 3);
    // Built and dropped unused, and dropped after a failed call, also in async code.
    drop(PostgresStore::new(&url, &StoreOptions::default()).unwrap());
    common::stop_postgres(&pg);
    let store = PostgresStore::new(&url, &StoreOptions::default()).unwrap();
    assert!(store.allocate("order", 1).is_err());
    drop(store);
}

async fn zookeeper() {
    let zk = required(common::zookeeper(None), "ZooKeeper");
    let url = format!("zk://{}/snowflake/async", zk.endpoint());
    drop(ZooKeeperRegistry::new(&url, &registry_options()).unwrap());
    let registry = ZooKeeperRegistry::new(&url, &registry_options()).unwrap();
    // The identity's first node is worker ID 0 in Leaf's layout.
    use_registry(Arc::new(registry), 0);
}

async fn etcd() {
    let etcd = required(common::etcd(None), "etcd");
    let url = format!("etcd://{}/segflake-async", etcd.endpoint());
    drop(EtcdRegistry::new(&url, &registry_options()).unwrap());
    let registry = EtcdRegistry::new(&url, &registry_options()).unwrap();
    use_registry(Arc::new(registry), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_on_a_multi_threaded_runtime() {
    postgres().await;
}

#[tokio::test(flavor = "current_thread")]
async fn postgres_on_a_current_thread_runtime() {
    postgres().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_on_a_multi_threaded_runtime() {
    zookeeper().await;
}

#[tokio::test(flavor = "current_thread")]
async fn zookeeper_on_a_current_thread_runtime() {
    zookeeper().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_on_a_multi_threaded_runtime() {
    etcd().await;
}

#[tokio::test(flavor = "current_thread")]
async fn etcd_on_a_current_thread_runtime() {
    etcd().await;
}

/// The registry built from a URL is usable from spawned tasks too (each call moves to a
/// thread of its own, the runtime's worker waits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_is_called_from_spawned_tasks() {
    let etcd = required(common::etcd(None), "etcd");
    let url = format!("etcd://{}/segflake-tasks", etcd.endpoint());
    let registry = segflake_backends::registry(&url, &registry_options()).unwrap();
    let tasks: Vec<_> = (0..4u64)
        .map(|w| {
            let registry = registry.clone();
            tokio::spawn(async move {
                registry.call(&RegistryCall::Claim {
                    worker_id: w,
                    owner: format!("task-{w}"),
                    ttl_ms: 10_000,
                })
            })
        })
        .collect();
    for task in tasks {
        assert_ne!(task.await.unwrap().unwrap(), Value::Null);
    }
    drop(registry);
}
