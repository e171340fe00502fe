//! The Redis adapters on replicated deployments, against real servers on 127.0.0.1: a
//! write IDs are issued from counts only once a replica has it (`WAIT`), a
//! `redis+sentinel://` URL follows a failover, and a `redis+cluster://` URL reaches each
//! key's primary and follows a replica's takeover. Blocking and async adapters alike.

#[path = "../../segflake-cli/tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use segflake::{Registry, RegistryCall, SegmentStore, SerialGenerator, SerialOptions, Value};
use segflake_backends::{
    RedisCounter, RedisRegistry, RedisStore, RegistryOptions, SerialCounter, StoreOptions,
};

/// One redis-server (or sentinel) process, killed on drop.
struct Node {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Node {
    fn start(name: &str, args: &[&str]) -> Node {
        let port = common::free_port();
        let dir = std::env::temp_dir().join(format!("segflake-ha-{name}-{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut cmd = Command::new("redis-server");
        if name.starts_with("sentinel") {
            let conf = dir.join("sentinel.conf");
            std::fs::write(&conf, args.join("\n") + "\n").unwrap();
            cmd.arg(&conf)
                .arg("--sentinel")
                .args(["--port", &port.to_string()]);
        } else {
            // A replica syncs at once (Redis 7 waits 5 s for more replicas by default).
            cmd.args(["--port", &port.to_string(), "--save", ""])
                .args(["--repl-diskless-sync-delay", "0"])
                .args(args);
        }
        cmd.args(["--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = cmd.spawn().expect("redis-server");
        common::wait_for_port(port);
        Node { child, port, dir }
    }

    fn cli(&self, args: &[&str]) -> String {
        redis_cli(self.port, args)
    }

    /// Sends `sig`; for `-STOP` and `-CONT`, returns once the process is stopped or running
    /// (`/proc/PID/stat`), so that what follows meets the process in that state.
    fn signal(&self, sig: &str) {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill {sig}");
        let stopped = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.starts_with('T')))
                .unwrap_or(false)
        };
        match sig {
            "-STOP" => wait_until("the process stops", 10, stopped),
            "-CONT" => wait_until("the process runs again", 10, || !stopped()),
            _ => {}
        }
    }
}

fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn installed() -> bool {
    common::available("Redis", "/usr/bin/redis-server")
}

fn wait_until(what: &str, seconds: u64, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {seconds} s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A primary and a replica that has synced.
fn primary_and_replica() -> (Node, Node) {
    let primary = Node::start("primary", &[]);
    let replica = Node::start(
        "replica",
        &["--replicaof", "127.0.0.1", &primary.port.to_string()],
    );
    // Online on the primary's side too: ROLE, which the wait is resolved from, lists a
    // replica only once it is.
    wait_until("the replica syncs", 20, || {
        replica
            .cli(&["INFO", "replication"])
            .contains("master_link_status:up")
            && primary
                .cli(&["INFO", "replication"])
                .contains("state=online")
    });
    (primary, replica)
}

/// A store whose calls take at most `timeout_ms`, half of it for the replicas (generous: a
/// busy machine delays a replica's acknowledgement).
fn store_options(timeout_ms: u64) -> StoreOptions {
    let mut options = StoreOptions::default();
    options.timeout_ms = timeout_ms;
    options.create_missing_step = Some(100);
    options
}

/// Allocates from `store` until it answers (a failover in progress fails calls), at most
/// `seconds`: the range's (first, max_id).
fn allocate_eventually(store: &RedisStore, tag: &str, seconds: u64) -> (u64, u64) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    loop {
        match store.allocate(tag, 100) {
            Ok(a) => return (a.max_id - a.step + 1, a.max_id),
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "no allocation within {seconds} s: {e:?}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// The ranges never overlap and each lies above the ones before.
fn assert_increasing(ranges: &[(u64, u64)]) {
    for pair in ranges.windows(2) {
        assert!(
            pair[1].0 > pair[0].1,
            "ranges overlap or go back: {ranges:?}"
        );
    }
}

#[test]
fn a_write_no_replica_acknowledged_fails_and_issues_nothing() {
    if !installed() {
        return;
    }
    let (primary, replica) = primary_and_replica();
    let url = format!("redis://127.0.0.1:{}/0", primary.port);
    let store = RedisStore::new(&url, &store_options(4_000)).unwrap();
    let counter_url = url.clone();
    let (first, _) = allocate_eventually(&store, "order", 5);
    assert_eq!(first, 2);

    // The replica frozen: the primary accepts the write, no replica has it.
    replica.signal("-STOP");
    let e = store.allocate("order", 100).unwrap_err();
    let text = format!("{e:?}");
    assert!(text.contains("reached 0 of the 1 replica(s)"), "{text}");
    assert!(text.contains("nothing is issued"), "{text}");
    let counter = RedisCounter::new(&counter_url, &Default::default()).unwrap();
    let serials = SerialGenerator::new(SerialOptions::default()).unwrap();
    let e = counter.sequence(&serials, 1_790_000_000).unwrap_err();
    assert!(e.to_string().contains("replica(s)"), "{e}");

    // replicas=0: the operator's choice not to wait.
    let unwaited = RedisStore::new(&format!("{url}?replicas=0"), &store_options(4_000)).unwrap();
    unwaited.allocate("order", 100).unwrap();

    replica.signal("-CONT");
    let (after, _) = allocate_eventually(&store, "order", 10);
    assert!(
        after > 300,
        "a range above the unacknowledged ones: {after}"
    );
    drop(primary);
}

/// A sentinel (named `name`) monitoring `primary` as `m`, once it knows it.
fn sentinel_of(primary: &Node, name: &str) -> Node {
    let sentinel = Node::start(
        name,
        &[
            &format!("sentinel monitor m 127.0.0.1 {} 1", primary.port),
            "sentinel down-after-milliseconds m 500",
            "sentinel failover-timeout m 2000",
        ],
    );
    wait_until("the sentinel knows the primary", 10, || {
        sentinel
            .cli(&["SENTINEL", "get-master-addr-by-name", "m"])
            .contains(&primary.port.to_string())
    });
    sentinel
}

#[test]
fn a_sentinel_url_follows_the_primary_through_a_failover() {
    if !installed() {
        return;
    }
    let (primary, replica) = primary_and_replica();
    let sentinel = sentinel_of(&primary, "sentinel");
    let url = format!("redis+sentinel://127.0.0.1:{}/m", sentinel.port);
    let store = RedisStore::new(&url, &store_options(4_000)).unwrap();
    let registry = RedisRegistry::new(&url, &RegistryOptions::default()).unwrap();
    let claimed = registry
        .call(&RegistryCall::Claim {
            worker_id: 4,
            owner: "a".into(),
            ttl_ms: 60_000,
        })
        .unwrap();
    assert_ne!(claimed, Value::Null, "the claim through the sentinel");
    let mut ranges = vec![allocate_eventually(&store, "order", 5)];
    ranges.push(allocate_eventually(&store, "order", 5));

    let old = primary.port;
    drop(primary); // killed
    wait_until("the sentinel promotes the replica", 30, || {
        sentinel
            .cli(&["SENTINEL", "get-master-addr-by-name", "m"])
            .contains(&replica.port.to_string())
    });
    // The promoted replica has no replica of its own: replicas=0 lets writes through; the
    // default (1, resolved at start-up) refuses them until a replica is back.
    // (The first call finds its connection to the dead primary gone, and reconnects.)
    wait_until(
        "the store refuses the unreplicated write",
        10,
        || match store.allocate("order", 100) {
            Ok(a) => panic!("an allocation no replica has: {a:?}"),
            Err(e) => format!("{e:?}").contains("reached 0 of the 1 replica(s)"),
        },
    );
    let lone = RedisStore::new(&format!("{url}?replicas=0"), &store_options(4_000)).unwrap();
    ranges.push(allocate_eventually(&lone, "order", 10));

    let rejoined = Node::start(
        "rejoined",
        &["--replicaof", "127.0.0.1", &replica.port.to_string()],
    );
    wait_until("a replica of the new primary", 20, || {
        rejoined
            .cli(&["INFO", "replication"])
            .contains("master_link_status:up")
            && replica
                .cli(&["INFO", "replication"])
                .contains("state=online")
    });
    ranges.push(allocate_eventually(&store, "order", 10));
    assert_increasing(&ranges);
    assert_ne!(old, replica.port);
}

/// Six servers in cluster mode: three primaries, each with a replica.
fn cluster() -> Vec<Node> {
    let nodes: Vec<Node> = (0..6)
        .map(|i| {
            Node::start(
                &format!("cluster{i}"),
                &[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-node-timeout",
                    "1000",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--appendonly",
                    "no",
                ],
            )
        })
        .collect();
    let addrs: Vec<String> = nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.port))
        .collect();
    let out = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addrs)
        .args(["--cluster-replicas", "1", "--cluster-yes"])
        .output()
        .expect("redis-cli --cluster create");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    wait_until("the cluster is up", 30, || {
        nodes
            .iter()
            .all(|n| n.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok"))
            && nodes[0].cli(&["CLUSTER", "NODES"]).matches("slave").count() == 3
            && nodes
                .iter()
                .filter(|n| n.cli(&["ROLE"]).starts_with("slave"))
                .all(|n| {
                    n.cli(&["INFO", "replication"])
                        .contains("master_link_status:up")
                })
    });
    nodes
}

#[test]
fn a_cluster_url_reaches_every_keys_primary_and_follows_a_takeover() {
    if !installed() {
        return;
    }
    let nodes = cluster();
    let url = format!(
        "redis+cluster://127.0.0.1:{},127.0.0.1:{}",
        nodes[0].port, nodes[1].port
    );
    let store = RedisStore::new(&url, &store_options(4_000)).unwrap();
    // Tags in different slots, so on different primaries.
    let tags = ["order", "payment", "invoice", "refund", "user"];
    let mut ranges: Vec<Vec<(u64, u64)>> = tags
        .iter()
        .map(|t| vec![allocate_eventually(&store, t, 10)])
        .collect();

    // Kill the primary that holds "order"'s key; its replica takes over.
    let slot = redis_cli(
        nodes[0].port,
        &["CLUSTER", "KEYSLOT", "segflake:leaf_alloc:order"],
    );
    let owner = nodes
        .iter()
        .position(|n| {
            n.cli(&["CLUSTER", "NODES"]).lines().any(|l| {
                l.contains("myself,master")
                    && l.split(' ').skip(8).any(|r| {
                        let (lo, hi) = r.split_once('-').unwrap_or((r, r));
                        let s: u64 = slot.parse().unwrap();
                        lo.parse::<u64>().is_ok_and(|lo| lo <= s)
                            && hi.parse::<u64>().is_ok_and(|hi| s <= hi)
                    })
            })
        })
        .expect("the primary of order's slot");
    let mut nodes = nodes;
    drop(nodes.remove(owner));
    let alive = nodes[0].port;
    wait_until("a replica takes over", 30, || {
        redis_cli(alive, &["CLUSTER", "INFO"]).contains("cluster_state:ok")
    });
    // The promoted replica has no replica now: the wait of 1 refuses its writes; the
    // other primaries' tags go on.
    for (i, tag) in tags.iter().enumerate() {
        let replicas = if *tag == "order" { "?replicas=0" } else { "" };
        let store = RedisStore::new(&format!("{url}{replicas}"), &store_options(4_000)).unwrap();
        ranges[i].push(allocate_eventually(&store, tag, 20));
    }
    for r in &ranges {
        assert_increasing(r);
    }
    let firsts: BTreeSet<u64> = ranges.iter().map(|r| r[0].0).collect();
    assert_eq!(firsts.len(), 1, "each tag starts at its own 2: {ranges:?}");
}

#[test]
fn the_async_adapters_wait_for_replicas_and_follow_a_sentinel() {
    if !installed() {
        return;
    }
    let (primary, replica) = primary_and_replica();
    let sentinel = sentinel_of(&primary, "sentinel-async");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use segflake_tokio::AsyncSegmentStore;
        let url = format!("redis+sentinel://127.0.0.1:{}/m", sentinel.port);
        let store = segflake_backends::tokio::RedisStore::new(&url, &store_options(4_000)).unwrap();
        let a = store.allocate("order", 100).await.unwrap();
        assert_eq!(a.max_id, 101);
        replica.signal("-STOP");
        let e = store.allocate("order", 100).await.unwrap_err();
        assert!(
            format!("{e:?}").contains("reached 0 of the 1 replica(s)"),
            "{e:?}"
        );
        replica.signal("-CONT");
        let deadline = Instant::now() + Duration::from_secs(10);
        let b = loop {
            match store.allocate("order", 100).await {
                Ok(b) => break b,
                Err(e) => assert!(Instant::now() < deadline, "{e:?}"),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(
            b.max_id > 201,
            "above the unacknowledged range: {}",
            b.max_id
        );

        let cluster_nodes = cluster();
        let url = format!("redis+cluster://127.0.0.1:{}", cluster_nodes[2].port);
        let store = segflake_backends::tokio::RedisStore::new(&url, &store_options(4_000)).unwrap();
        for tag in ["order", "payment", "invoice"] {
            let a = store.allocate(tag, 100).await.unwrap();
            assert_eq!(a.max_id, 101, "{tag}");
        }
    });
}
