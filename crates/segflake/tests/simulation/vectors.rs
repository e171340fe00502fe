//! The ZooKeeper and etcd models against the shared vectors (tests/vectors/zookeeper.json
//! and etcd.json): a case whose replies are what a server does from an empty state (with,
//! where the case says so, a loss, another client's request or time passing between its
//! calls) is run with the core's protocol against the model, and every reply the model gives
//! must be the vector's.
//!
//! Compared: 5 of the 11 ZooKeeper cases and 4 of the 9 etcd cases (one of them for its
//! first call only). The others script what no model reaches from an empty state: a Leaf
//! process's nodes or another owner's records already there, a node rewritten by another
//! session between a read and a write, a failed request, a garbled mark, a stored mark
//! nobody in the case wrote.
//!
//! Where a vector's reply is not the server's exact reply, the comparison says so: etcd
//! answers a keepalive with the lease's whole TTL (`lessor.Renew` returns `l.ttl`) and a
//! lease that is gone with 0, where the vectors show a remaining time (9) and -1; the
//! protocol reads only the sign, and only the sign is compared. Lease IDs are the server's
//! to choose: a grant is compared as a grant, and the vector's ID stands for the model's.

use serde_json::Value as Json;

use segflake::lease::conversation::{Protocol, Request, Step};
use segflake::lease::etcd::{EtcdOp, EtcdProtocol, EtcdReply, TxnOp};
use segflake::lease::zookeeper::{ZkContext, ZkOp, ZkReply, ZooKeeperProtocol};
use segflake::{RegistryCall, Value};

use crate::etcd::EtcdServer;
use crate::vector_json::{same, value};
use crate::zookeeper::ZkServer;

/// What happens on the server before a call.
enum Before {
    /// The call's requests reach the server this much later (ms) than its `now_ms`, and so
    /// do the later calls'.
    Later(u64),
    /// Data loss: the model's `lose`.
    Lose { worker: u64, mark_only: bool },
    /// Another ZooKeeper client's request, in its own session.
    Zk(ZkOp),
    /// Another etcd client claims a worker key: a lease of 10 s, the key put on it.
    EtcdClaim {
        key: &'static str,
        owner: &'static str,
    },
}

/// What happens before which call (its index).
type Befores = Vec<(usize, Before)>;

fn load(file: &str) -> Json {
    let path = format!("{}/../../tests/vectors/{file}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn case<'d>(doc: &'d Json, name: &str) -> &'d Json {
    doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().unwrap().starts_with(name))
        .unwrap_or_else(|| panic!("no case {name:?}"))
}

fn call_of(c: &Json) -> RegistryCall {
    let args: Vec<Value> = c["args"].as_array().unwrap().iter().map(value).collect();
    RegistryCall::from_args(c["call"].as_str().unwrap(), &args).unwrap()
}

/// The call's answer must be the vector's.
fn check_answer(name: &str, n: usize, c: &Json, answer: Result<Value, String>) {
    match (answer, c.get("answer")) {
        (Ok(v), Some(want)) => assert!(
            same(&v, &value(want)),
            "{name}, call {n}: answered {}, the vector {want}",
            v.to_json()
        ),
        (other, _) => panic!("{name}, call {n}: {other:?}, the vector {c}"),
    }
}

#[test]
fn the_zookeeper_model_replies_as_the_vectors_say() {
    let doc = load("zookeeper.json");
    let (root, identity) = (
        doc["root"].as_str().unwrap(),
        doc["identity"].as_str().unwrap(),
    );
    let live0 = format!("{root}/leaf_temporary/0");
    let cases: Vec<(&str, Befores)> = vec![
        ("a new identity creates its forever node", vec![]),
        (
            "the registry lost the forever node",
            vec![(
                1,
                Before::Lose {
                    worker: 0,
                    mark_only: false,
                },
            )],
        ),
        (
            "the live node is gone at renewal",
            vec![(
                1,
                Before::Zk(ZkOp::Delete {
                    path: live0.clone(),
                    version: -1,
                }),
            )],
        ),
        // Session 5 goes unheard for a session timeout: it expires, its live node with it.
        (
            "a hold of an earlier session is not held",
            vec![(1, Before::Later(10_000))],
        ),
        (
            "a release without a renewal deletes only the live node",
            vec![],
        ),
    ];
    for (name, before) in &cases {
        let c = case(&doc, name);
        let mut server = ZkServer::new(root, 10_000);
        let mut protocol = ZooKeeperProtocol::new(root, identity).unwrap();
        let mut later = 0;
        for (n, call) in c["calls"].as_array().unwrap().iter().enumerate() {
            let now_ms = call["now_ms"].as_u64().unwrap();
            for (_, b) in before.iter().filter(|(i, _)| *i == n) {
                match b {
                    Before::Later(ms) => later += ms,
                    Before::Lose { worker, mark_only } => server.lose(Some(*worker), *mark_only),
                    Before::Zk(op) => {
                        let reply = server.apply(99, op, now_ms + later);
                        assert!(!matches!(reply, ZkReply::Failed { .. }), "{reply:?}");
                    }
                    Before::EtcdClaim { .. } => unreachable!(),
                }
            }
            let session = call["session"].as_i64().unwrap();
            let mut conv = protocol.begin(call_of(call), ZkContext { session, now_ms });
            let mut exchange = call["exchange"].as_array().unwrap().iter();
            let answer = loop {
                match conv.next(&mut protocol) {
                    Step::Op(op) => {
                        let x = exchange.next().expect("no more requests in the vector");
                        assert!(same(&op.to_value(), &value(&x["op"])), "{name}: {op:?}");
                        let reply = server.apply(session, &op, now_ms + later);
                        assert!(
                            same(&reply.to_value(), &value(&x["reply"])),
                            "{name}, call {n}: the model replied {} to {}, the vector {}",
                            reply.to_value().to_json(),
                            x["op"],
                            x["reply"]
                        );
                        conv.reply(reply);
                    }
                    Step::Answer(a) => break a,
                }
            };
            assert!(exchange.next().is_none(), "{name}, call {n}: requests left");
            check_answer(name, n, call, answer);
        }
    }
}

/// The reply as the vector spells it, a grant's lease ID as the vector's (`ids`: the
/// model's ID and the vector's), a TTL by its sign.
fn etcd_same(reply: &EtcdReply, want: &Json, ids: &mut Vec<(String, String)>) -> bool {
    match (reply, EtcdReply::from_value(&value(want))) {
        (EtcdReply::Lease(mine), EtcdReply::Lease(theirs)) => {
            ids.push((mine.clone(), theirs));
            true
        }
        (EtcdReply::Ttl(a), EtcdReply::Ttl(b)) => (*a > 0) == (b > 0),
        _ => same(&reply.to_value(), &value(want)),
    }
}

#[test]
fn the_etcd_model_replies_as_the_vectors_say() {
    let doc = load("etcd.json");
    let prefix = doc["prefix"].as_str().unwrap();
    // (case, how many of its calls, what happens before a call)
    let cases: Vec<(&str, usize, Befores)> = vec![
        ("a fresh worker ID", 4, vec![]),
        // Its second claim finds a mark (42) nobody in the case wrote.
        ("a repeated claim of this owner's own key", 1, vec![]),
        (
            "the etcd lease is gone",
            5,
            vec![
                (1, Before::Later(11_000)),
                (4, Before::Later(11_000)),
                (
                    4,
                    Before::EtcdClaim {
                        key: "/fleet/worker/5",
                        owner: "b#2",
                    },
                ),
            ],
        ),
        (
            "release by an owner that no longer holds the key",
            2,
            vec![(
                1,
                Before::Lose {
                    worker: 0,
                    mark_only: false,
                },
            )],
        ),
    ];
    for (name, calls, before) in &cases {
        let c = case(&doc, name);
        let mut server = EtcdServer::new(prefix.trim_end_matches('/'));
        let mut protocol = EtcdProtocol::new(prefix);
        let mut now = 1_000;
        let mut ids = Vec::new();
        let all = c["calls"].as_array().unwrap();
        for (n, call) in all.iter().take(*calls).enumerate() {
            now += 1_000;
            for (_, b) in before.iter().filter(|(i, _)| *i == n) {
                match b {
                    Before::Later(ms) => now += ms,
                    Before::Lose { worker, mark_only } => server.lose(Some(*worker), *mark_only),
                    Before::EtcdClaim { key, owner } => {
                        let EtcdReply::Lease(lease) =
                            server.apply(&EtcdOp::Grant { ttl_s: 10 }, now)
                        else {
                            panic!("no lease")
                        };
                        let put = TxnOp::Put {
                            key: key.to_string(),
                            value: owner.to_string(),
                            lease: Some(lease),
                        };
                        let txn = EtcdOp::Txn {
                            compare: vec![],
                            success: vec![put],
                            failure: vec![],
                        };
                        server.apply(&txn, now);
                    }
                    Before::Zk(_) => unreachable!(),
                }
            }
            let mut conv = protocol.begin(call_of(call), ());
            let mut exchange = call["exchange"].as_array().unwrap().iter();
            let answer = loop {
                match conv.next(&mut protocol) {
                    Step::Op(op) => {
                        let x = exchange.next().expect("no more requests in the vector");
                        let mut sent = op.to_value().to_json();
                        for (mine, theirs) in &ids {
                            sent = sent.replace(&format!("\"{mine}\""), &format!("\"{theirs}\""));
                        }
                        let sent = Value::from_json(&sent).unwrap();
                        assert!(same(&sent, &value(&x["op"])), "{name}: {op:?}");
                        let reply = server.apply(&op, now);
                        assert!(
                            etcd_same(&reply, &x["reply"], &mut ids),
                            "{name}, call {n}: the model replied {} to {}, the vector {}",
                            reply.to_value().to_json(),
                            x["op"],
                            x["reply"]
                        );
                        conv.reply(reply);
                    }
                    Step::Answer(a) => break a,
                }
            };
            assert!(exchange.next().is_none(), "{name}, call {n}: requests left");
            check_answer(name, n, call, answer);
        }
    }
}
