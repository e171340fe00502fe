//! `segflake next --registry zk://…` and `etcd://…` against real ZooKeeper and etcd servers
//! started here on free ports (scripts/test-rust.sh installs them; without CI they are
//! skipped with a notice when absent).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

mod common;
use common::{free_port, get, wait_for_port, Server};

const ZK_CLASSPATH: &str = "/usr/share/java/*:/usr/share/zookeeper/*:/etc/zookeeper/conf";

fn available(what: &str, path: &str) -> bool {
    if Path::new(path).exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is missing ({path}); scripts/test-rust.sh installs it"
    );
    eprintln!("skipped: {what} is not installed ({path})");
    false
}

fn zookeeper() -> Option<Server> {
    if !available("ZooKeeper", "/usr/share/java/zookeeper.jar") {
        return None;
    }
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("segflake-cli-zk-{port}"));
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let config = format!(
        "tickTime=200\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={port}\n\
         clientPortAddress=127.0.0.1\nadmin.enableServer=false\n",
        dir.join("data").display()
    );
    std::fs::write(dir.join("zoo.cfg"), config).unwrap();
    let child = Command::new("java")
        .args([
            "-cp",
            ZK_CLASSPATH,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        ])
        .arg(dir.join("zoo.cfg"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("java");
    wait_for_port(port);
    Some(Server { child, port, dir })
}

fn etcd() -> Option<Server> {
    if !available("etcd", "/usr/bin/etcd") {
        return None;
    }
    let (port, peer) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("segflake-cli-etcd-{port}"));
    let client_url = format!("http://127.0.0.1:{port}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let child = Command::new("etcd")
        .arg("--data-dir")
        .arg(&dir)
        .args([
            "--listen-client-urls",
            &client_url,
            "--advertise-client-urls",
            &client_url,
        ])
        .args([
            "--listen-peer-urls",
            &peer_url,
            "--initial-advertise-peer-urls",
            &peer_url,
        ])
        .args(["--initial-cluster", &format!("default={peer_url}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("etcd");
    wait_for_port(port);
    Some(Server { child, port, dir })
}

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

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn zookeeper_in_leafs_layout_gives_each_identity_its_worker_id_and_takes_over_leaf_nodes() {
    let Some(zk) = zookeeper() else { return };
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
            spawn_next(&[
                "--registry",
                &url,
                "--identity",
                &identity,
                "--count",
                "20000",
            ])
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
    let Some(etcd) = etcd() else { return };
    let url = format!("etcd://{}/segflake-cli-test", etcd.endpoint());
    let runs: Vec<Child> = (0..8)
        .map(|_| {
            spawn_next(&[
                "--registry",
                &url,
                "--worker-bits",
                "3",
                "--count",
                "200000",
            ])
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
    let again = next(&[
        "--registry",
        &url,
        "--worker-bits",
        "3",
        "--preferred-worker-id",
        "5",
        "--count",
        "1",
    ]);
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
    let Some(etcd) = etcd() else { return };
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
