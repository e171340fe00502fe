//! `segflake next --registry zk://…` and `etcd://…` against real ZooKeeper and etcd servers
//! started here on free ports, and `segflake serve` on registries that lose their data
//! (Redis, ZooKeeper, etcd); scripts/test-rust.sh installs the servers; without CI they are
//! skipped with a notice when absent.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

mod common;
use common::{etcd, free_port, get, redis, wait_for_port, zookeeper};

/// `segflake next ARGS --json` in the background.
fn spawn_next(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_segflake"))
        .arg("next")
        .args(args)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The IDs a run printed, as (worker, timestamp_ms, id).
fn ids_of(child: Child) -> Vec<(u64, u64, u64)> {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let j: Value = serde_json::from_str(l).unwrap();
            let n = |k: &str| j[k].as_u64().unwrap();
            (
                n("worker"),
                n("timestamp_ms"),
                j["decimal"].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

fn next(args: &[&str]) -> Vec<(u64, u64, u64)> {
    ids_of(spawn_next(args))
}

/// Lease options for runs whose first start need not wait: a worker ID without a mark
/// starts `mark_ahead_ms + clock_skew_allowance_ms` ahead of the clock.
const QUICK: [&str; 4] = ["--mark-ahead-ms", "300", "--clock-skew-allowance-ms", "0"];

/// `args` followed by [`QUICK`].
fn quick<'a>(args: &[&'a str]) -> Vec<&'a str> {
    args.iter().copied().chain(QUICK).collect()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn zookeeper_in_leafs_layout_gives_each_identity_its_worker_id_and_takes_over_leaf_nodes() {
    let Some(zk) = zookeeper(None) else { return };
    let url = format!(
        "zk://{}/snowflake/cli-test?session_timeout_ms=2000",
        zk.endpoint()
    );

    // A running Leaf node, created as Leaf's SnowflakeZookeeperHolder does: a persistent
    // sequential znode with its Endpoint JSON, reporting a time 1 s in the future.
    let reported = now_ms() + 1000;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let leaf_node = runtime.block_on(async {
        let c = zookeeper_client::Client::connect(&zk.endpoint())
            .await
            .unwrap();
        let persistent = zookeeper_client::CreateMode::Persistent
            .with_acls(zookeeper_client::Acls::anyone_all());
        c.mkdir("/snowflake/cli-test/forever", &persistent)
            .await
            .unwrap();
        let sequential = zookeeper_client::CreateMode::PersistentSequential
            .with_acls(zookeeper_client::Acls::anyone_all());
        let data = format!("{{\"ip\":\"10.0.0.9\",\"port\":\"8080\",\"timestamp\":{reported}}}");
        let (_, seq) = c
            .create(
                "/snowflake/cli-test/forever/10.0.0.9:8080-",
                data.as_bytes(),
                &sequential,
            )
            .await
            .unwrap();
        format!("/snowflake/cli-test/forever/10.0.0.9:8080-{seq}")
    });
    assert!(leaf_node.ends_with("-0000000000"), "{leaf_node}");

    // Taking over the Leaf node: its worker ID, above everything it could have issued.
    let takeover = next(&[
        "--registry",
        &url,
        "--identity",
        "10.0.0.9:8080",
        "--count",
        "1000",
    ]);
    assert!(takeover.iter().all(|&(w, _, _)| w == 0));
    assert!(
        takeover[0].1 > reported + 3000,
        "{} <= {}",
        takeover[0].1,
        reported + 3000
    );

    // Concurrent runs with other identities: new sequence numbers, distinct worker IDs.
    let runs: Vec<Child> = (1..=3)
        .map(|i| {
            let identity = format!("10.0.0.{}:8080", 9 + i);
            spawn_next(&quick(&[
                "--registry",
                &url,
                "--identity",
                &identity,
                "--count",
                "20000",
            ]))
        })
        .collect();
    let mut workers: Vec<u64> = runs.into_iter().map(|r| ids_of(r)[0].0).collect();
    workers.sort();
    assert_eq!(workers, vec![1, 2, 3]);

    // The same identity again: the same worker ID, above its previous run.
    let again = next(&[
        "--registry",
        &url,
        "--identity",
        "10.0.0.9:8080",
        "--count",
        "1",
    ]);
    assert_eq!(again[0].0, 0);
    assert!(again[0].2 > takeover.last().unwrap().2);

    // Leaf's znode still holds Leaf's JSON (the mark minus Leaf's report interval).
    let data = runtime.block_on(async {
        let c = zookeeper_client::Client::connect(&zk.endpoint())
            .await
            .unwrap();
        c.get_data(&leaf_node).await.unwrap().0
    });
    let leaf: Value = serde_json::from_slice(&data).unwrap();
    let keys: Vec<&String> = leaf.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["ip", "port", "timestamp"], "{leaf}");
    assert!(leaf["timestamp"].as_u64().unwrap() + 3000 >= again[0].1);

    // Another run of an identity that is held waits, then refuses: NoFreeWorkerId. (The
    // holder blocks on its full stdout pipe, holding its lease, until it is read.)
    let holder = spawn_next(&[
        "--registry",
        &url,
        "--identity",
        "10.0.0.9:8080",
        "--count",
        "100000",
    ]);
    std::thread::sleep(Duration::from_millis(800));
    let out = Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args([
            "next",
            "--registry",
            &url,
            "--identity",
            "10.0.0.9:8080",
            // Long enough to sweep all 1024 worker IDs on a loaded machine: a sweep cut
            // short is a registry error (some IDs unanswered), not "none free".
            "--claim-wait-ms",
            "3000",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("NO_FREE_WORKER_ID"),
        "{stderr}"
    );
    ids_of(holder);
}

#[test]
fn etcd_leases_distinct_worker_ids_to_concurrent_runs_and_releases_them() {
    let Some(etcd) = etcd(None) else { return };
    let url = format!("etcd://{}/segflake-cli-test", etcd.endpoint());
    let runs: Vec<Child> = (0..8)
        .map(|_| {
            spawn_next(&quick(&[
                "--registry",
                &url,
                "--worker-bits",
                "3",
                "--count",
                "20000",
            ]))
        })
        .collect();
    let all: Vec<Vec<(u64, u64, u64)>> = runs.into_iter().map(ids_of).collect();
    // Runs that overlapped in time held different worker IDs; a run that reused a released
    // ID issued only above it.
    let mut by_worker: std::collections::BTreeMap<u64, Vec<(u64, u64)>> = Default::default();
    for ids in &all {
        let (w, lo, hi) = (ids[0].0, ids[0].2, ids.last().unwrap().2);
        assert!(ids.iter().all(|&(x, _, _)| x == w));
        by_worker.entry(w).or_default().push((lo, hi));
    }
    for (w, spans) in &mut by_worker {
        spans.sort();
        for pair in spans.windows(2) {
            assert!(pair[1].0 > pair[0].1, "two runs held worker ID {w} at once");
        }
    }
    let again = next(&quick(&[
        "--registry",
        &url,
        "--worker-bits",
        "3",
        "--preferred-worker-id",
        "5",
        "--count",
        "1",
    ]));
    let before = all
        .iter()
        .flatten()
        .filter(|&&(w, _, _)| w == again[0].0)
        .map(|x| x.2)
        .max();
    assert!(before.is_none_or(|b| again[0].2 > b));
}

#[test]
fn serve_leases_its_worker_id_reports_the_lease_and_releases_it_on_sigterm() {
    let Some(etcd) = etcd(None) else { return };
    let url = format!("etcd://{}/segflake-serve-test", etcd.endpoint());
    let port = free_port();
    let mut serve = Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--registry", &url, "--worker-bits", "0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_port(port);
    assert_eq!(get(port, "/readyz").status, 200);
    let metrics = get(port, "/metrics").body;
    for line in [
        "segflake_lease_state{state=\"held\"} 1",
        "segflake_lease_worker_id 0",
    ] {
        assert!(metrics.contains(line), "no {line:?} in\n{metrics}");
    }
    let served: u64 = get(port, "/api/snowflake/get/order").body.parse().unwrap();
    // The only worker ID is the server's: another process finds none free.
    let out = Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args(["next", "--registry", &url, "--worker-bits", "0"])
        .args(["--claim-wait-ms", "500"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("NO_FREE_WORKER_ID"), "{stderr}");
    // SIGTERM: the server releases the ID, and the next holder starts above its IDs.
    let killed = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = serve.wait().unwrap();
    let mut log = String::new();
    std::io::Read::read_to_string(&mut serve.stderr.take().unwrap(), &mut log).unwrap();
    assert!(status.success(), "exit {status}: {log}");
    assert!(log.contains("worker lease released"), "{log}");
    let next_ids = next(&[
        "--registry",
        &url,
        "--worker-bits",
        "0",
        "--claim-wait-ms",
        "1000",
    ]);
    assert_eq!(next_ids[0].0, 0);
    assert!(
        next_ids[0].2 > served,
        "{} is not above {served}",
        next_ids[0].2
    );
}

/// A ZooKeeper client on a runtime of its own, for the tests' own reads and writes.
struct Zk {
    runtime: tokio::runtime::Runtime,
    client: zookeeper_client::Client,
}

impl Zk {
    fn connect(endpoint: &str) -> Zk {
        // A worker thread keeps the session alive between the test's calls.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let client = runtime
            .block_on(zookeeper_client::Client::connect(endpoint))
            .unwrap();
        Zk { runtime, client }
    }

    /// Creates Leaf's forever node for `identity` under `root` (Leaf's JSON with
    /// `timestamp`); its path.
    fn leaf_node(&self, root: &str, identity: &str, timestamp: u64) -> String {
        let (ip, port) = identity.split_once(':').unwrap();
        let data = format!("{{\"ip\":\"{ip}\",\"port\":\"{port}\",\"timestamp\":{timestamp}}}");
        self.runtime.block_on(async {
            let persistent = zookeeper_client::CreateMode::Persistent
                .with_acls(zookeeper_client::Acls::anyone_all());
            match self
                .client
                .mkdir(&format!("{root}/forever"), &persistent)
                .await
            {
                Ok(()) | Err(zookeeper_client::Error::NodeExists) => {}
                Err(e) => panic!("{e}"),
            }
            let sequential = zookeeper_client::CreateMode::PersistentSequential
                .with_acls(zookeeper_client::Acls::anyone_all());
            let prefix = format!("{root}/forever/{identity}-");
            let (_, seq) = self
                .client
                .create(&prefix, data.as_bytes(), &sequential)
                .await
                .unwrap();
            format!("{prefix}{seq}")
        })
    }

    /// Writes Leaf's JSON with `timestamp` into `path`, as a Leaf node's report does (no
    /// version check); the node's new version.
    fn report(&self, path: &str, identity: &str, timestamp: u64) -> i32 {
        let (ip, port) = identity.split_once(':').unwrap();
        let data = format!("{{\"ip\":\"{ip}\",\"port\":\"{port}\",\"timestamp\":{timestamp}}}");
        self.runtime
            .block_on(self.client.set_data(path, data.as_bytes(), None))
            .unwrap()
            .version
    }

    fn get(&self, path: &str) -> Option<(Vec<u8>, i32)> {
        match self.runtime.block_on(self.client.get_data(path)) {
            Ok((data, stat)) => Some((data, stat.version)),
            Err(zookeeper_client::Error::NoNode) => None,
            Err(e) => panic!("{path}: {e}"),
        }
    }

    fn delete(&self, path: &str) {
        self.runtime
            .block_on(self.client.delete(path, None))
            .unwrap();
    }
}

#[test]
fn zookeeper_refuses_to_take_over_a_leaf_node_that_still_reports_and_waits_out_a_stopped_one() {
    let Some(zk) = zookeeper(None) else { return };
    let root = "/snowflake/cli-leaf-alive";
    let url = format!("zk://{}{root}?session_timeout_ms=2000", zk.endpoint());
    let identity = "10.0.0.20:8080";
    let client = Zk::connect(&zk.endpoint());
    let node = client.leaf_node(root, identity, now_ms());

    // A live Leaf node: it reports every second (Leaf: every 3 s) until told to stop.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reporter = {
        let (stop, node, endpoint) = (stop.clone(), node.clone(), zk.endpoint());
        std::thread::spawn(move || {
            let leaf = Zk::connect(&endpoint);
            let mut last = (0, 0);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let ts = now_ms();
                last = (leaf.report(&node, identity, ts), ts);
                std::thread::sleep(Duration::from_millis(1000));
            }
            last
        })
    };
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args(["next", "--registry", &url, "--identity", identity])
        .args(QUICK)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("LEAF_NODE_ALIVE"),
        "{stderr}"
    );
    assert!(stderr.contains(identity), "{stderr}");
    // A second look (the repeated claim that keeps the lease, or one report period later)
    // saw the node changed: refused then, not much later.
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(20),
        "{took:?}"
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (version, reported) = reporter.join().unwrap();
    // The claim never wrote Leaf's node: only the Leaf node's reports changed it, and the
    // claim's live node is gone again.
    let (data, now_version) = client.get(&node).unwrap();
    assert_eq!(now_version, version);
    let leaf: Value = serde_json::from_slice(&data).unwrap();
    assert_eq!(leaf["timestamp"].as_u64(), Some(reported), "{leaf}");
    assert!(client.get(&format!("{root}/leaf_temporary/0")).is_none());

    // The Leaf node has stopped: the next claim waits one report period, sees no change,
    // and takes the worker ID over above everything the Leaf node could have issued.
    let started = std::time::Instant::now();
    let ids = next(&quick(&[
        "--registry",
        &url,
        "--identity",
        identity,
        "--count",
        "10",
    ]));
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(ids.iter().all(|&(w, _, _)| w == 0));
    assert!(
        ids[0].1 > reported + 3000,
        "{} <= {}",
        ids[0].1,
        reported + 3000
    );
}

/// `segflake serve --registry URL` with timings that make a lost registry record visible:
/// renewals every 0.7 s, IDs stop 2 s ahead of the clock, no clock-skew allowance.
fn serve_leased(url: &str, extra: &[&str]) -> (Child, u16) {
    let port = free_port();
    let serve = Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--registry", url, "--worker-bits", "2"])
        .args(["--max-drift-ms", "100", "--mark-ahead-ms", "2000"])
        .args(["--clock-skew-allowance-ms", "0"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_port(port);
    (serve, port)
}

fn snowflake_id(port: u16) -> Result<u64, String> {
    let r = get(port, "/api/snowflake/get/order");
    if r.status == 200 {
        Ok(r.body.trim().parse().unwrap())
    } else {
        Err(r.code())
    }
}

/// Makes the registry forget the server's lease (`forget`), then asks for IDs until they
/// come again: the codes of the refusals seen meanwhile, and the first ID after.
fn forget_and_recover(port: u16, forget: impl FnOnce()) -> (Vec<String>, u64) {
    forget();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut codes: Vec<String> = Vec::new();
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "no recovery: {codes:?}"
        );
        match snowflake_id(port) {
            Ok(id) if !codes.is_empty() => return (codes, id),
            Ok(_) => {}
            Err(code) => {
                if codes.last() != Some(&code) {
                    codes.push(code);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Checks a server's recovery from a registry that lost its lease, and stops it.
fn check_lost_and_recovered(mut serve: Child, port: u16, before: u64, seen: (Vec<String>, u64)) {
    let (codes, after) = seen;
    assert_eq!(codes, ["REGISTRY_LOST_DATA"], "the refusals seen");
    assert!(after > before, "{after} <= {before}");
    let metrics = get(port, "/metrics").body;
    assert!(metrics.contains("segflake_lease_lost_total 1"), "{metrics}");
    assert!(metrics.contains("segflake_lease_state{state=\"held\"} 1"));
    let _ = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status();
    let status = serve.wait().unwrap();
    let mut log = String::new();
    std::io::Read::read_to_string(&mut serve.stderr.take().unwrap(), &mut log).unwrap();
    assert!(status.success(), "exit {status}: {log}");
}

#[test]
fn a_redis_registry_that_forgets_stops_the_server_with_registry_lost_data_and_it_recovers() {
    let Some(redis) = redis(None) else { return };
    let url = format!("redis://{}/0", redis.endpoint());
    let (serve, port) = serve_leased(&url, &[]);
    let before = snowflake_id(port).unwrap();
    let seen = forget_and_recover(port, || {
        let flushed = Command::new("redis-cli")
            .args(["-p", &redis.port.to_string(), "FLUSHALL"])
            .output()
            .unwrap();
        assert!(flushed.status.success());
    });
    check_lost_and_recovered(serve, port, before, seen);
}

#[test]
fn a_zookeeper_registry_that_lost_the_live_node_stops_the_server_and_it_recovers() {
    let Some(zk) = zookeeper(None) else { return };
    let root = "/snowflake/cli-lost";
    let url = format!("zk://{}{root}?session_timeout_ms=2000", zk.endpoint());
    let (serve, port) = serve_leased(&url, &["--identity", "10.0.0.30:8080"]);
    let before = snowflake_id(port).unwrap();
    let client = Zk::connect(&zk.endpoint());
    let seen = forget_and_recover(port, || client.delete(&format!("{root}/leaf_temporary/0")));
    check_lost_and_recovered(serve, port, before, seen);
}

#[test]
fn an_etcd_registry_that_lost_the_worker_key_stops_the_server_and_it_recovers() {
    let Some(etcd) = etcd(None) else { return };
    let url = format!("etcd://{}/segflake-cli-lost", etcd.endpoint());
    let (serve, port) = serve_leased(&url, &[]);
    let before = snowflake_id(port).unwrap();
    let worker = segflake_worker(port);
    let seen = forget_and_recover(port, || {
        let key = base64(format!("/segflake-cli-lost/worker/{worker}").as_bytes());
        let body = format!("{{\"key\":\"{key}\"}}");
        let reply = post(etcd.port, "/v3/kv/deleterange", &body);
        assert!(reply.contains("\"deleted\":\"1\""), "{reply}");
    });
    check_lost_and_recovered(serve, port, before, seen);
}

/// The worker ID a server's metrics report.
fn segflake_worker(port: u16) -> u64 {
    let metrics = get(port, "/metrics").body;
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("segflake_lease_worker_id "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no worker ID in {metrics}"))
}

/// A POST of a JSON body to 127.0.0.1:`port` (HTTP/1.0); the response's body.
fn post(port: u16, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    raw.split_once("\r\n\r\n")
        .map_or(raw.clone(), |(_, b)| b.to_string())
}

fn base64(bytes: &[u8]) -> String {
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                B64[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

#[test]
fn a_redis_registry_that_would_lose_marks_is_named_in_a_warning_at_start() {
    let Some(redis) = redis(None) else { return };
    let url = format!("redis://{}/0", redis.endpoint());
    let run = || {
        let out = spawn_next(&quick(&["--registry", &url, "--count", "1"]))
            .wait_with_output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    // The test server runs without AOF: a restart would lose every lease and mark.
    let stderr = run();
    assert!(stderr.contains("appendonly is off"), "{stderr}");
    assert_eq!(stderr.matches("warning").count(), 1, "{stderr}");
    let set = Command::new("redis-cli")
        .args([
            "-p",
            &redis.port.to_string(),
            "CONFIG",
            "SET",
            "appendonly",
            "yes",
        ])
        .output()
        .unwrap();
    assert!(set.status.success());
    let stderr = run();
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// Tinyid's multi-database mode on Redis: each server states its residue class in
/// `segflake:leaf_alloc_residue`, so runs that list the two servers in either order issue
/// disjoint IDs; classes that are not a permutation are refused naming the store.
#[test]
fn redis_stores_report_their_residue_class_so_the_list_order_does_not_matter() {
    let (Some(a), Some(b)) = (redis(None), redis(None)) else {
        return;
    };
    let cli = |port: u16, args: &[&str]| {
        let out = Command::new("redis-cli")
            .args(["-p", &port.to_string()])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "redis-cli {args:?}");
    };
    for (server, class) in [(&a, "2:0"), (&b, "2:1")] {
        cli(server.port, &["SET", "segflake:leaf_alloc:order", "1"]);
        cli(server.port, &["SET", "segflake:leaf_alloc_residue", class]);
    }
    let (ua, ub) = (
        format!("redis://{}", a.endpoint()),
        format!("redis://{}", b.endpoint()),
    );
    let run = |first: &str, second: &str| -> Vec<u64> {
        let out = Command::new(env!("CARGO_BIN_EXE_segflake"))
            .args(["segment", "--store", first, "--store", second])
            .args(["--tag", "order", "--count", "3000", "--step", "500"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text.lines().map(|l| l.parse().unwrap()).collect()
    };
    let mut ids = run(&ua, &ub);
    ids.extend(run(&ub, &ua));
    ids.extend(run(&ua, &ub));
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "an ID was issued twice");
    assert!(ids.iter().any(|i| i % 2 == 0) && ids.iter().any(|i| i % 2 == 1));
    cli(b.port, &["SET", "segflake:leaf_alloc_residue", "3:1"]);
    let out = Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args(["segment", "--store", &ub, "--store", &ua])
        .args(["--tag", "order", "--count", "3000", "--step", "500"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let issued: Vec<u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    // Store 0 (b) is refused; store 1 (a) issues its class only, if anything.
    assert!(issued.iter().all(|i| i % 2 == 0), "{issued:?}");
    if !out.status.success() {
        assert!(
            err.contains("store 0 of 2") && err.contains("delta = 2"),
            "{err}"
        );
    }
}
