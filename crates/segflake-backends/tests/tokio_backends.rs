//! The async stores, registries and counter of `segflake_backends::tokio`, driven by
//! segflake-tokio's drivers against real servers, each on a current-thread and on a
//! multi-thread runtime: segment IDs unique and dense across two generators on one tag, a
//! close that gives back, a lease claimed, renewed and released, unique serials, a server
//! stopped and started again while the adapter lives on, and drops inside tasks.
//!
//! The servers are started as the CLI's tests start them (one copy of the helpers).

#[path = "../../segflake-cli/tests/common/mod.rs"]
mod common;

use std::collections::HashSet;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use segflake::{
    Layout, LeaseOptions, Preset, RegistryCall, SegmentOptions, SerialOptions, SnowflakeOptions,
    Value,
};
use segflake_backends::tokio as backends;
use segflake_backends::{CounterOptions, RegistryOptions, StoreOptions};
use segflake_tokio::{
    AsyncRegistry, AsyncSegmentStore, AsyncSerialCounter, LeasedSnowflake, SegmentGenerator,
    SerialGenerator,
};

/// Runs each named `async fn` as two tests: `name::current_thread` and
/// `name::multi_thread` (2 workers).
macro_rules! both_runtimes {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[tokio::test]
            async fn current_thread() {
                super::$scenario().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn multi_thread() {
                super::$scenario().await
            }
        }
    )*};
}

fn required<T>(server: Option<T>, what: &str) -> T {
    server.unwrap_or_else(|| panic!("{what} is not installed; scripts/test-rust.sh installs it"))
}

const STEP: u64 = 50;

fn store_options() -> StoreOptions {
    let mut options = StoreOptions::default();
    options.timeout_ms = 3_000;
    options.create_missing_step = Some(STEP);
    options
}

fn registry_options() -> RegistryOptions {
    let mut options = RegistryOptions::default();
    options.timeout_ms = 3_000;
    options.identity = Some("10.0.0.9:8080".into());
    options
}

fn segment_options() -> SegmentOptions {
    SegmentOptions::default()
        .with_step(STEP)
        .with_max_step(STEP)
        .with_dynamic_step(false)
        .with_store_timeout_ms(3_000)
        .with_wait_timeout_ms(10_000)
}

/// Polls `f` every 50 ms until it answers `Some`, at most `secs` seconds.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    secs: u64,
    mut f: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "not within {secs} s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Two generators on two adapters of one store take IDs of one tag side by side: every ID
/// is issued once, each generator's IDs increase, and the IDs fill the range they span but
/// for the segments still buffered. Then a close gives back: the next generator continues
/// right after the last ID issued.
async fn segments<S: AsyncSegmentStore>(a: S, b: S, c: S, tag: &str) {
    let a_store = Arc::new(a);
    let a = SegmentGenerator::new(Arc::clone(&a_store), segment_options()).unwrap();
    let b = SegmentGenerator::new(b, segment_options()).unwrap();
    let (ta, tb) = (a.tag(tag).unwrap(), b.tag(tag).unwrap());
    let take = |t: segflake_tokio::TagHandle| {
        tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..500 {
                ids.push(t.next_id().await.unwrap());
                if i % 20 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            ids
        })
    };
    let (ja, jb) = (take(ta), take(tb));
    let (ids_a, ids_b) = (ja.await.unwrap(), jb.await.unwrap());
    for ids in [&ids_a, &ids_b] {
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "not increasing");
    }
    let all: HashSet<u64> = ids_a.iter().chain(&ids_b).copied().collect();
    assert_eq!(all.len(), 1000, "an ID was issued twice");
    let (low, high) = (*all.iter().min().unwrap(), *all.iter().max().unwrap());
    // Each generator holds at most its current and its next segment unissued.
    assert!(
        high - low < 1000 + 4 * STEP,
        "the IDs are not dense: {low}..={high} for 1000 IDs"
    );
    b.close().await;
    a.close().await;
    // Alone on a tag of its own, `a` issues a few IDs and closes: its unused IDs go back to
    // the store, so the next generator starts right after `a`'s last ID.
    let tag = &format!("{tag}-alone");
    let a = SegmentGenerator::new(Arc::clone(&a_store), segment_options()).unwrap();
    let mut last = 0;
    for _ in 0..7 {
        last = a.next_id(tag).await.unwrap();
    }
    a.close().await;
    let c = SegmentGenerator::new(c, segment_options()).unwrap();
    let next = c.next_id(tag).await.unwrap();
    assert_eq!(next, last + 1, "the close gave nothing back");
    c.close().await;
}

/// A leased snowflake on `registry`: started (the worker ID claimed), renewed, closed (the
/// worker ID released: someone else can claim it at once).
async fn lease<R: AsyncRegistry>(registry: Arc<R>, worker: u64) {
    let layout = Layout::preset(Preset::Twitter).unwrap();
    let options = LeaseOptions::default()
        .with_preferred_worker_id(Some(worker))
        .with_lease_ttl_ms(3_000)
        .with_mark_ahead_ms(500)
        .with_clock_skew_allowance_ms(0)
        .with_registry_timeout_ms(3_000);
    let snowflake = LeasedSnowflake::start(
        layout,
        SnowflakeOptions::new(0).with_max_drift_ms(0),
        options,
        Arc::clone(&registry),
        Some("tokio-test".into()),
    )
    .await
    .unwrap();
    let held = snowflake.worker_id();
    let mut ids = HashSet::new();
    for _ in 0..2000 {
        assert!(ids.insert(snowflake.next_id().await.unwrap()));
    }
    eventually(15, || async {
        (snowflake.stats().renewals >= 1).then_some(())
    })
    .await;
    assert_eq!(snowflake.stats().state, "held");
    snowflake.close().await;
    let claimed = registry
        .call(&RegistryCall::Claim {
            worker_id: held,
            owner: "someone-else".into(),
            ttl_ms: 5_000,
        })
        .await
        .unwrap();
    assert_ne!(claimed, Value::Null, "worker ID {held} is still held");
    registry
        .call(&RegistryCall::Release {
            worker_id: held,
            owner: "someone-else".into(),
            mark_ms: 0,
        })
        .await
        .unwrap();
}

/// Two serial generators on two counters of one server never print the same serial.
async fn serials<C: AsyncSerialCounter>(a: C, b: C) {
    let take = |counter: C| {
        tokio::spawn(async move {
            let generator = SerialGenerator::new(SerialOptions::default(), counter).unwrap();
            let mut serials = Vec::new();
            for _ in 0..200 {
                serials.push(generator.next().await.unwrap());
            }
            serials
        })
    };
    let (ja, jb) = (take(a), take(b));
    let mut all = HashSet::new();
    for serials in [ja.await.unwrap(), jb.await.unwrap()] {
        for s in serials {
            assert!(all.insert(s), "serial {s} printed twice");
        }
    }
}

/// Built, used once and dropped inside a task, and dropped unused in another: no panic.
async fn dropped_in_tasks<T: Send + Sync + 'static, F>(
    make: impl Fn() -> T,
    use_once: fn(Arc<T>) -> F,
) where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let used = Arc::new(make());
    tokio::spawn(async move {
        use_once(Arc::clone(&used)).await;
        drop(used);
    })
    .await
    .unwrap();
    let unused = make();
    tokio::spawn(async move { drop(unused) }).await.unwrap();
}

// ---------------------------------------------------------------------------------------
// Redis

#[cfg(feature = "redis")]
mod redis_tests {
    use super::*;

    fn redis_url(server: &common::Server) -> String {
        format!("redis://{}/0", server.endpoint())
    }

    /// Redis started again on the port of `server` (a fresh server: it keeps nothing).
    fn restart_redis(server: &mut common::Server) {
        let _ = server.child.kill();
        let _ = server.child.wait();
        let mut cmd = Command::new("redis-server");
        cmd.args(["--bind", "127.0.0.1", "--save", ""])
            .args(["--port", &server.port.to_string()])
            .arg("--dir")
            .arg(&server.dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        server.child = cmd.spawn().unwrap();
        common::wait_for_port(server.port);
    }

    async fn redis_segments() {
        let server = required(common::redis(None), "Redis");
        let url = redis_url(&server);
        let store = || backends::RedisStore::new(&url, &store_options()).unwrap();
        segments(store(), store(), store(), "order").await;
        // From a caller's client and connection manager.
        let client = redis::Client::open(url.as_str()).unwrap();
        let manager = client.get_connection_manager().await.unwrap();
        segments(
            backends::RedisStore::from_client(client.clone(), &store_options()),
            backends::RedisStore::from_manager(manager.clone(), &store_options()),
            backends::RedisStore::from_manager(manager, &store_options()),
            "invoice",
        )
        .await;
        // And from the URL constructor.
        let any = || backends::store(&url, &store_options()).unwrap();
        segments(any(), any(), any(), "refund").await;
    }

    async fn redis_lease() {
        let server = required(common::redis(None), "Redis");
        let url = redis_url(&server);
        let registry = backends::RedisRegistry::new(&url, &registry_options())
            .await
            .unwrap();
        lease(Arc::new(registry), 3).await;
        let any = backends::registry(&url, &registry_options()).await.unwrap();
        lease(Arc::new(any), 4).await;
    }

    async fn redis_serials() {
        let server = required(common::redis(None), "Redis");
        let url = redis_url(&server);
        let counter = || backends::RedisCounter::new(&url, &CounterOptions::default()).unwrap();
        serials(counter(), counter()).await;
        let any = || backends::counter(&url, &CounterOptions::default()).unwrap();
        serials(any(), any()).await;
    }

    /// A Redis that stops and starts again (empty) is picked up by the same adapters.
    async fn redis_restarted() {
        let mut server = required(common::redis(None), "Redis");
        let url = redis_url(&server);
        let store = backends::RedisStore::new(&url, &store_options()).unwrap();
        let registry = backends::RedisRegistry::new(&url, &registry_options())
            .await
            .unwrap();
        let counter = backends::RedisCounter::new(&url, &CounterOptions::default()).unwrap();
        assert_eq!(store.allocate("order", 10).await.unwrap().max_id, 11);
        restart_redis(&mut server);
        let allocated = eventually(20, || async { store.allocate("order", 10).await.ok() }).await;
        assert_eq!(allocated.max_id, 11, "the restarted server keeps nothing");
        let claim = RegistryCall::Claim {
            worker_id: 1,
            owner: "after-restart".into(),
            ttl_ms: 5_000,
        };
        let claimed = eventually(20, || async { registry.call(&claim).await.ok() }).await;
        assert_ne!(claimed, Value::Null);
        let generator = SerialGenerator::new(SerialOptions::default(), counter).unwrap();
        eventually(20, || async { generator.next().await.ok() }).await;
    }

    async fn redis_drops() {
        let server = required(common::redis(None), "Redis");
        let url = redis_url(&server);
        let u = url.clone();
        dropped_in_tasks(
            move || backends::RedisStore::new(&u, &store_options()).unwrap(),
            |s| {
                Box::pin(async move {
                    s.allocate("order", 5).await.unwrap();
                })
            },
        )
        .await;
        let u = url.clone();
        dropped_in_tasks(
            move || backends::RedisCounter::new(&u, &CounterOptions::default()).unwrap(),
            |c| {
                Box::pin(async move {
                    let generator = SerialGenerator::new(SerialOptions::default(), c).unwrap();
                    generator.next().await.unwrap();
                })
            },
        )
        .await;
        let registry = backends::RedisRegistry::new(&url, &registry_options())
            .await
            .unwrap();
        tokio::spawn(async move {
            registry.call(&RegistryCall::Peers).await.unwrap();
            drop(registry);
        })
        .await
        .unwrap();
        // A generator over the store, dropped in a task without close.
        let store = backends::RedisStore::new(&url, &store_options()).unwrap();
        tokio::spawn(async move {
            let generator = SegmentGenerator::new(store, segment_options()).unwrap();
            generator.next_id("order").await.unwrap();
            drop(generator);
        })
        .await
        .unwrap();
    }

    both_runtimes!(
        redis_segments,
        redis_lease,
        redis_serials,
        redis_restarted,
        redis_drops,
    );
}

// ---------------------------------------------------------------------------------------
// PostgreSQL

#[cfg(feature = "postgres")]
mod postgres_tests {
    use super::*;

    fn is_root() -> bool {
        Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false)
    }

    /// PostgreSQL with Leaf's table (the core's `create_table`), and its URL.
    fn postgres_with_table() -> (common::Server, String) {
        let pg = required(common::postgres(None), "PostgreSQL");
        let table =
            segflake::segment::statements::statement("postgres", "create_table", "leaf_alloc")
                .unwrap();
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
        let url = format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port);
        (pg, url)
    }

    /// Starts the server of `pg` again on its data directory and port.
    fn start_again(pg: &common::Server) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1,127.0.0.2 -c fsync=off",
            pg.port,
            pg.dir.join("sock").display()
        );
        let pg_ctl = common::postgres_bin().join("pg_ctl");
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(pg_ctl);
            c
        } else {
            Command::new(pg_ctl)
        };
        // A killed postmaster may linger a moment: try until it starts.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let out = cmd
                .current_dir("/")
                .arg("-D")
                .arg(pg.dir.join("data"))
                .arg("-l")
                .arg(pg.dir.join("server.log"))
                .args(["-w", "-t", "30", "-o", &options, "start"])
                .output()
                .unwrap();
            if out.status.success() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(300));
            cmd = if is_root() {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"])
                    .arg(common::postgres_bin().join("pg_ctl"));
                c
            } else {
                Command::new(common::postgres_bin().join("pg_ctl"))
            };
        }
    }

    fn config(pg: &common::Server) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host("127.0.0.1")
            .port(pg.port)
            .user("postgres")
            .dbname("postgres");
        config
    }

    fn pool(pg: &common::Server) -> deadpool_postgres::Pool {
        let manager = deadpool_postgres::Manager::new(config(pg), tokio_postgres::NoTls);
        deadpool_postgres::Pool::builder(manager)
            .max_size(4)
            .build()
            .unwrap()
    }

    async fn postgres_segments() {
        let (pg, url) = postgres_with_table();
        let store = || backends::PostgresStore::new(&url, &store_options()).unwrap();
        segments(store(), store(), store(), "order").await;
        let config = || backends::PostgresStore::from_config(config(&pg), &store_options());
        segments(config(), config(), config(), "invoice").await;
        let pooled = || backends::PostgresStore::from_pool(pool(&pg), &store_options());
        segments(pooled(), pooled(), pooled(), "refund").await;
        let any = || backends::store(&url, &store_options()).unwrap();
        segments(any(), any(), any(), "payment").await;
        let store = store();
        assert!(store.has_tag("order").await.unwrap());
        assert!(!store.has_tag("missing").await.unwrap());
        assert_eq!(store.records().await.unwrap().len(), 8);
        common::stop_postgres(&pg);
    }

    async fn postgres_lease() {
        let (pg, url) = postgres_with_table();
        let registry = backends::PostgresRegistry::new(&url, &registry_options()).unwrap();
        lease(Arc::new(registry), 3).await;
        let pooled = backends::PostgresRegistry::from_pool(pool(&pg), &registry_options());
        lease(Arc::new(pooled), 4).await;
        let any = backends::registry(&url, &registry_options()).await.unwrap();
        lease(Arc::new(any), 5).await;
        common::stop_postgres(&pg);
    }

    /// A PostgreSQL stopped and started again is picked up by the same adapters (from a
    /// URL and on a pool): calls fail while it is down, within the timeout, and succeed
    /// once it is back.
    async fn postgres_restarted() {
        let (pg, url) = postgres_with_table();
        let store = backends::PostgresStore::new(&url, &store_options()).unwrap();
        let pooled = backends::PostgresStore::from_pool(pool(&pg), &store_options());
        let registry = backends::PostgresRegistry::new(&url, &registry_options()).unwrap();
        let first = store.allocate("order", 10).await.unwrap().max_id;
        pooled.allocate("order", 10).await.unwrap();
        registry.call(&RegistryCall::Peers).await.unwrap();
        common::stop_postgres(&pg);
        let started = Instant::now();
        assert!(store.allocate("order", 10).await.is_err());
        assert!(pooled.allocate("order", 10).await.is_err());
        assert!(registry.call(&RegistryCall::Peers).await.is_err());
        assert!(started.elapsed() < Duration::from_secs(10));
        start_again(&pg);
        let after = eventually(30, || async { store.allocate("order", 10).await.ok() }).await;
        assert!(after.max_id > first, "{} after {first}", after.max_id);
        eventually(30, || async { pooled.allocate("order", 10).await.ok() }).await;
        let claim = RegistryCall::Claim {
            worker_id: 2,
            owner: "after-restart".into(),
            ttl_ms: 5_000,
        };
        let claimed = eventually(30, || async { registry.call(&claim).await.ok() }).await;
        assert_ne!(claimed, Value::Null);
        common::stop_postgres(&pg);
    }

    async fn postgres_drops() {
        let (pg, url) = postgres_with_table();
        let u = url.clone();
        dropped_in_tasks(
            move || backends::PostgresStore::new(&u, &store_options()).unwrap(),
            |s| {
                Box::pin(async move {
                    s.allocate("order", 5).await.unwrap();
                })
            },
        )
        .await;
        let u = url.clone();
        dropped_in_tasks(
            move || backends::PostgresRegistry::new(&u, &registry_options()).unwrap(),
            |r| {
                Box::pin(async move {
                    r.call(&RegistryCall::Peers).await.unwrap();
                })
            },
        )
        .await;
        let store = backends::PostgresStore::new(&url, &store_options()).unwrap();
        tokio::spawn(async move {
            let generator = SegmentGenerator::new(store, segment_options()).unwrap();
            generator.next_id("order").await.unwrap();
            drop(generator);
        })
        .await
        .unwrap();
        common::stop_postgres(&pg);
    }

    both_runtimes!(
        postgres_segments,
        postgres_lease,
        postgres_restarted,
        postgres_drops,
    );
}

// ---------------------------------------------------------------------------------------
// ZooKeeper and etcd: on the caller's runtime

/// Waits until the registry's server answers (a JVM that just opened its port may take a
/// few seconds on a busy machine before it grants sessions).
#[cfg(any(feature = "zookeeper", feature = "etcd"))]
async fn until_answering<R: AsyncRegistry>(registry: &R) {
    eventually(60, || async {
        registry.call(&RegistryCall::Peers).await.ok()
    })
    .await;
}

#[cfg(feature = "zookeeper")]
mod zookeeper_tests {
    use super::*;

    async fn zookeeper_lease() {
        let zk = required(common::zookeeper(None), "ZooKeeper");
        let url = format!("zk://{}/snowflake/tokio", zk.endpoint());
        let registry = backends::ZooKeeperRegistry::new(&url, &registry_options())
            .await
            .unwrap();
        until_answering(&registry).await;
        // Leaf's layout: the identity's node is worker ID 0.
        lease(Arc::new(registry), 0).await;
        let any = backends::registry(&url, &registry_options()).await.unwrap();
        lease(Arc::new(any), 0).await;
    }

    async fn zookeeper_drops() {
        let zk = required(common::zookeeper(None), "ZooKeeper");
        let url = format!("zk://{}/snowflake/drops", zk.endpoint());
        let registry = backends::ZooKeeperRegistry::new(&url, &registry_options())
            .await
            .unwrap();
        until_answering(&registry).await;
        tokio::spawn(async move {
            registry.call(&RegistryCall::Peers).await.unwrap();
            drop(registry);
        })
        .await
        .unwrap();
        let unused = backends::ZooKeeperRegistry::new(&url, &registry_options())
            .await
            .unwrap();
        tokio::spawn(async move { drop(unused) }).await.unwrap();
    }

    both_runtimes!(zookeeper_lease, zookeeper_drops);
}

#[cfg(feature = "etcd")]
mod etcd_tests {
    use super::*;

    async fn etcd_lease() {
        let etcd = required(common::etcd(None), "etcd");
        let url = format!("etcd://{}/segflake-tokio", etcd.endpoint());
        let registry = backends::EtcdRegistry::new(&url, &registry_options()).unwrap();
        until_answering(&registry).await;
        lease(Arc::new(registry), 5).await;
        let any = backends::registry(&url, &registry_options()).await.unwrap();
        lease(Arc::new(any), 6).await;
        // A caller's client.
        let client = etcd_client::Client::connect([etcd.endpoint()], None)
            .await
            .unwrap();
        let own = backends::EtcdRegistry::from_client(client, "/segflake-own", &registry_options());
        lease(Arc::new(own), 7).await;
    }

    async fn etcd_drops() {
        let etcd = required(common::etcd(None), "etcd");
        let url = format!("etcd://{}/segflake-drops", etcd.endpoint());
        let u = url.clone();
        dropped_in_tasks(
            move || backends::EtcdRegistry::new(&u, &registry_options()).unwrap(),
            |r| {
                Box::pin(async move {
                    until_answering(&*r).await;
                })
            },
        )
        .await;
    }

    both_runtimes!(etcd_lease, etcd_drops);
}

// ---------------------------------------------------------------------------------------
// MySQL/MariaDB: the blocking client on tokio's blocking pool

#[cfg(feature = "mysql")]
mod mysql_tests {
    use super::*;

    fn mariadb_with_table() -> (common::Server, String) {
        let db = required(common::mariadb(None), "MariaDB");
        let url = format!("mysql://segflake:segflake@127.0.0.1:{}/segflake", db.port);
        let table = segflake::segment::statements::statement("mysql", "create_table", "leaf_alloc")
            .unwrap();
        use mysql::prelude::Queryable;
        let mut conn = mysql::Conn::new(mysql::Opts::from_url(&url).unwrap()).unwrap();
        conn.query_drop(table).unwrap();
        (db, url)
    }

    async fn mysql_on_the_blocking_pool() {
        let (_db, url) = tokio::task::spawn_blocking(mariadb_with_table)
            .await
            .unwrap();
        let store = || {
            backends::Blocking::new(
                segflake_backends::MySqlStore::new(&url, &store_options()).unwrap(),
            )
        };
        segments(store(), store(), store(), "order").await;
        let any = || backends::store(&url, &store_options()).unwrap();
        segments(any(), any(), any(), "invoice").await;
        let registry = backends::Blocking::new(
            segflake_backends::MySqlRegistry::new(&url, &registry_options()).unwrap(),
        );
        lease(Arc::new(registry), 3).await;
        let any = backends::registry(&url, &registry_options()).await.unwrap();
        lease(Arc::new(any), 4).await;
        let u = url.clone();
        dropped_in_tasks(
            move || backends::store(&u, &store_options()).unwrap(),
            |s| {
                Box::pin(async move {
                    s.allocate("order", 5).await.unwrap();
                })
            },
        )
        .await;
    }

    both_runtimes!(mysql_on_the_blocking_pool);
}
