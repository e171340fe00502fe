//! Runs `tests/vectors/{zookeeper,etcd,redis,sql}.json`: the registry protocols' scripted
//! conversations, as every adapter's tests run them.

use segflake::lease::conversation::{Protocol, RegistryProtocol, Request, Step};
use segflake::lease::etcd::{EtcdProtocol, EtcdReply, EtcdUrl};
use segflake::lease::redis::{RedisProtocol, RedisReply};
use segflake::lease::schema;
use segflake::lease::sql::{Dialect, SqlProtocol, SqlReply};
use segflake::lease::zookeeper::{ZkContext, ZkReply, ZkStep, ZooKeeperProtocol, ZooKeeperUrl};
use segflake::{RegistryCall, Value};
use serde_json::Value as Json;

#[path = "common/vector_json.rs"]
mod vector_json;
use vector_json::{same, value};

/// Runs every case of `tests/vectors/{file}` on a protocol from `make(doc, case)`.
fn run_vectors<P: Protocol>(
    file: &str,
    make: impl Fn(&Json, &Json) -> P,
    context: impl Fn(&Json) -> P::Context,
    reply: impl Fn(&Value) -> P::Reply,
) where
    P::Op: Request,
{
    let path = format!("{}/../../tests/vectors/{file}", env!("CARGO_MANIFEST_DIR"));
    let doc: Json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 5, "{file}: {} cases", cases.len());
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let mut protocol = make(&doc, case);
        for (n, c) in case["calls"].as_array().unwrap().iter().enumerate() {
            let args: Vec<Value> = c["args"].as_array().unwrap().iter().map(value).collect();
            let call = RegistryCall::from_args(c["call"].as_str().unwrap(), &args).unwrap();
            let mut conv = protocol.begin(call, context(c));
            for (i, x) in c["exchange"].as_array().unwrap().iter().enumerate() {
                match conv.next(&mut protocol) {
                    Step::Op(op) => {
                        let sent = named_statements(op.to_value());
                        assert!(
                            same(&sent, &value(&x["op"])),
                            "{name}, call {n}, request {i}: sent {}, expected {}",
                            sent.to_json(),
                            x["op"]
                        )
                    }
                    other => panic!("{name}, call {n}: {other:?} before request {i}"),
                }
                conv.reply(reply(&value(&x["reply"])));
            }
            match (
                conv.next(&mut protocol),
                c.get("answer"),
                c.get("error_contains"),
            ) {
                (Step::Answer(Ok(v)), Some(want), None) => assert!(
                    same(&v, &value(want)),
                    "{name}, call {n}: answered {}, expected {want}",
                    v.to_json()
                ),
                (Step::Answer(Err(e)), None, Some(want)) => assert!(
                    e.contains(want.as_str().unwrap()),
                    "{name}, call {n}: {e:?} lacks {want}"
                ),
                (other, _, _) => panic!("{name}, call {n}: ended with {other:?}"),
            }
        }
    }
}

#[test]
fn every_zookeeper_conversation() {
    run_vectors(
        "zookeeper.json",
        |doc, _| {
            ZooKeeperProtocol::new(
                doc["root"].as_str().unwrap(),
                doc["identity"].as_str().unwrap(),
            )
            .unwrap()
        },
        |c| ZkContext {
            session: c["session"].as_i64().unwrap(),
            now_ms: c["now_ms"].as_u64().unwrap(),
        },
        |v| {
            let reply = ZkReply::from_value(v);
            assert_eq!(ZkReply::from_value(&reply.to_value()), reply);
            reply
        },
    );
}

#[test]
fn every_etcd_conversation() {
    run_vectors(
        "etcd.json",
        |doc, _| EtcdProtocol::new(doc["prefix"].as_str().unwrap()),
        |_| (),
        |v| {
            let reply = EtcdReply::from_value(v);
            assert_eq!(EtcdReply::from_value(&reply.to_value()), reply);
            reply
        },
    );
}

/// A SQL request's statement as `dialect.call` (its name in the core's table), as the
/// vectors spell it.
fn named_statements(op: Value) -> Value {
    let Value::Map(pairs) = op else { return op };
    Value::Map(
        pairs
            .into_iter()
            .map(|(k, v)| match (k.as_str(), &v) {
                ("statement", Value::Str(text)) => {
                    let (db, call, _) = schema::STATEMENTS
                        .iter()
                        .find(|(_, _, t)| t == text)
                        .expect("a statement of the core's table");
                    (k, Value::Str(format!("{db}.{call}")))
                }
                _ => (k, v),
            })
            .collect(),
    )
}

#[test]
fn every_redis_conversation() {
    run_vectors(
        "redis.json",
        |doc, _| {
            RedisProtocol::new(
                doc["prefix"].as_str().unwrap(),
                doc["wait_ms"].as_u64().unwrap(),
            )
        },
        |_| (),
        |v| {
            let reply = RedisReply::from_value(v);
            assert_eq!(RedisReply::from_value(&reply.to_value()), reply);
            reply
        },
    );
}

#[test]
fn every_sql_conversation() {
    run_vectors(
        "sql.json",
        |doc, case| {
            let dialect = match case["kind"].as_str().unwrap() {
                "postgres" => Dialect::Postgres,
                _ => Dialect::MySql,
            };
            SqlProtocol::new(dialect, doc["host_name"].as_str().unwrap())
        },
        |_| (),
        |v| {
            let reply = SqlReply::from_value(v);
            assert_eq!(SqlReply::from_value(&reply.to_value()), reply);
            reply
        },
    );
}

#[test]
fn urls_and_identities_are_checked_with_the_grammar_in_the_message() {
    let u = ZooKeeperUrl::parse("zk://a:2181,b:2181/snowflake/x?identity=10.1.2.3:80").unwrap();
    assert_eq!(u.hosts, "a:2181,b:2181");
    assert_eq!(u.root, "/snowflake/x");
    assert_eq!(u.identity.as_deref(), Some("10.1.2.3:80"));
    assert_eq!(u.session_timeout_ms, 10_000);
    assert_eq!(
        ZooKeeperUrl::parse("zk://h:1").unwrap().root,
        "/snowflake/segflake"
    );
    for (bad, why) in [
        ("zk:///x", "no HOST:PORT"),
        ("zk://h:1/x/", "not an absolute znode path"),
        ("zk://h:1/x?identity=h", "not IP:PORT"),
        ("zk://h:1/x?session_timeout_ms=0", "1..=3600000"),
        ("zk://h:1/x?color=red", "unknown parameter"),
        ("redis://h", "not a zk:// URL"),
    ] {
        let e = ZooKeeperUrl::parse(bad).unwrap_err();
        assert!(
            e.contains(why) && e.contains("allowed: zk://"),
            "{bad}: {e}"
        );
    }
    assert!(ZooKeeperProtocol::new("x", "1.2.3.4:5").is_err());
    assert!(ZooKeeperProtocol::new("/x", "1.2.3.4:99999").is_err());
}

#[test]
fn an_unreadable_reply_ends_the_call_saying_what_was_wrong() {
    let mut p = ZooKeeperProtocol::new("/r", "1.2.3.4:5").unwrap();
    let mut conv = p.begin(
        RegistryCall::Peers,
        ZkContext {
            session: 1,
            now_ms: 0,
        },
    );
    assert!(matches!(conv.next(&mut p), ZkStep::Op(_)));
    conv.reply(ZkReply::from_value(&Value::Str("huh".into())));
    match conv.next(&mut p) {
        ZkStep::Answer(Err(e)) => assert!(e.contains("not one the protocol reads"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reply_of_another_kind_ends_the_call_naming_the_request_and_the_kind() {
    let mut p = ZooKeeperProtocol::new("/r", "1.2.3.4:5").unwrap();
    let args = [
        Value::uint(0),
        Value::Str("o#1".into()),
        Value::uint(10_000),
    ];
    let context = ZkContext {
        session: 7,
        now_ms: 1000,
    };
    assert_eq!(
        p.start_value("claim", &args, context).to_json(),
        r#"{"op": "mkdir", "path": "/r/forever"}"#
    );
    let step = p.resume_value(&Value::Map(vec![("children".into(), Value::List(vec![]))]));
    assert_eq!(
        step.to_json(),
        r#"{"error": "the ZooKeeper adapter answered {\"op\": \"mkdir\", \"path\": \"/r/forever\"} with a children reply"}"#
    );
    let mut e = EtcdProtocol::new("");
    let args = [Value::uint(1), Value::Str("o".into()), Value::uint(1)];
    e.start_value("claim", &args, ());
    let step = e.resume_value(&Value::Map(vec![("ttl".into(), Value::Int(5))]));
    assert!(
        step.to_json().contains("the etcd adapter answered")
            && step.to_json().ends_with(r#"with a ttl reply"}"#),
        "{}",
        step.to_json()
    );
}

#[test]
fn the_binding_form_runs_a_conversation_as_host_values() {
    let mut p = ZooKeeperProtocol::new("/r", "1.2.3.4:5").unwrap();
    let args = [
        Value::uint(0),
        Value::Str("o#1".into()),
        Value::uint(10_000),
    ];
    let step = p.start_value(
        "claim",
        &args,
        ZkContext {
            session: 7,
            now_ms: 1000,
        },
    );
    assert_eq!(step.to_json(), r#"{"op": "mkdir", "path": "/r/forever"}"#);
    let step = p.resume_value(&Value::Map(vec![(
        "error".into(),
        Value::Str("connection loss".into()),
    )]));
    assert_eq!(
        step.to_json(),
        r#"{"error": "/r/forever: connection loss"}"#
    );
    let after = p.resume_value(&Value::Null);
    assert!(after
        .to_json()
        .contains("no registry conversation is in progress"));
    let bad = p.start_value(
        "claim",
        &args[..2],
        ZkContext {
            session: 7,
            now_ms: 1000,
        },
    );
    assert!(bad.to_json().contains("claim takes 3 arguments, not 2"));
}

#[test]
fn etcd_urls_are_checked_with_the_grammar_in_the_message() {
    let u = EtcdUrl::parse("etcd://a:2379,b:2379/fleet/").unwrap();
    assert_eq!(u.endpoints, ["a:2379", "b:2379"]);
    assert_eq!(u.prefix, "/fleet");
    assert_eq!(EtcdUrl::parse("etcd://a:1").unwrap().prefix, "/segflake");
    for bad in ["etcd://", "etcd://a", "etcd://a:x/p", "zk://a:1"] {
        let e = EtcdUrl::parse(bad).unwrap_err();
        assert!(e.contains("allowed: etcd://HOST:PORT"), "{bad}: {e}");
    }
    let mut p = EtcdProtocol::new("");
    assert_eq!(p.prefix(), "/segflake");
    let step = p.start_value(
        "claim",
        &[Value::uint(1), Value::Str("o".into()), Value::uint(1)],
        (),
    );
    assert_eq!(step.to_json(), r#"{"op": "grant", "ttl_s": 1}"#);
    let step = p.resume_value(&Value::Map(vec![("lease".into(), Value::Int(77))]));
    assert!(
        step.to_json().contains(r#""lease": "77""#),
        "{}",
        step.to_json()
    );
    assert!(
        p.leases().is_empty(),
        "a lease is remembered only when its claim answers"
    );
}

#[test]
fn json_text_reads_into_host_values() {
    let v = Value::from_json(
        r#" {"a": [1, -2, 3.5, "x\"\u00e9\ud83d\ude00\n"], "b": {}, "c": null, "d": true} "#,
    )
    .unwrap();
    assert_eq!(
        v,
        Value::Map(vec![
            (
                "a".into(),
                Value::List(vec![
                    Value::Int(1),
                    Value::Int(-2),
                    Value::Float(3.5),
                    Value::Str("x\"é😀\n".into())
                ])
            ),
            ("b".into(), Value::Map(vec![])),
            ("c".into(), Value::Null),
            ("d".into(), Value::Bool(true)),
        ])
    );
    assert_eq!(Value::from_json(&v.to_json()).unwrap(), v);
    for x in [
        0.1,
        -2.5e-7,
        1.5e300,
        f64::MIN_POSITIVE,
        123_456.789,
        -0.000_1,
    ] {
        let text = Value::Float(x).to_json();
        assert_eq!(text.parse::<f64>(), Ok(x), "{text}");
        assert_eq!(Value::from_json(&text).unwrap(), Value::Float(x), "{text}");
    }
    assert_eq!(
        Value::from_json("18446744073709551616").unwrap(),
        Value::Int(1 << 64)
    );
    for bad in ["", "{", "[1,]", "{\"a\" 1}", "\"x", "tru", "1 2", "\"\\q\""] {
        let e = Value::from_json(bad).unwrap_err();
        assert!(e.starts_with("not JSON at byte"), "{bad:?}: {e}");
    }
    let deep = "[".repeat(100) + &"]".repeat(100);
    assert!(Value::from_json(&deep).unwrap_err().contains("64 levels"));
}

/// The form bindings use: [`RegistryProtocol`] from each file's `kind` and `config`, driven
/// with host values.
#[test]
fn every_conversation_through_the_host_value_form() {
    for file in ["zookeeper.json", "etcd.json", "redis.json", "sql.json"] {
        let path = format!("{}/../../tests/vectors/{file}", env!("CARGO_MANIFEST_DIR"));
        let doc: Json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for case in doc["cases"].as_array().unwrap() {
            let kind = case.get("kind").unwrap_or(&doc["kind"]).as_str().unwrap();
            let mut p = RegistryProtocol::new(kind, &value(&doc["config"])).unwrap();
            for c in case["calls"].as_array().unwrap() {
                let args: Vec<Value> = c["args"].as_array().unwrap().iter().map(value).collect();
                let context = Value::Map(
                    ["session", "now_ms"]
                        .iter()
                        .filter_map(|k| c.get(*k).map(|v| (k.to_string(), value(v))))
                        .collect(),
                );
                let mut step = p.start_value(c["call"].as_str().unwrap(), &args, &context);
                for x in c["exchange"].as_array().unwrap() {
                    let sent = named_statements(step.clone());
                    assert!(same(&sent, &value(&x["op"])), "{file}: {}", sent.to_json());
                    step = p.resume_value(&value(&x["reply"]));
                }
                match (&step, c.get("answer")) {
                    (Value::Map(pairs), Some(want)) => {
                        assert_eq!(pairs[0].0, "answer", "{file}: {}", step.to_json());
                        assert!(
                            same(&pairs[0].1, &value(want)),
                            "{file}: {}",
                            step.to_json()
                        );
                    }
                    (Value::Map(pairs), None) => assert_eq!(pairs[0].0, "error"),
                    _ => panic!("{file}: {}", step.to_json()),
                }
            }
        }
    }
    let e = RegistryProtocol::new("consul", &Value::Null).unwrap_err();
    assert!(e.contains("zookeeper, etcd, redis, postgres, mysql"), "{e}");
    assert!(RegistryProtocol::new("redis", &Value::Null)
        .unwrap_err()
        .contains("wait_ms"));
    let mut zk = RegistryProtocol::new(
        "zookeeper",
        &Value::Map(vec![("identity".into(), Value::Str("1.2.3.4:5".into()))]),
    )
    .unwrap();
    let step = zk.start_value("peers", &[], &Value::Null);
    assert!(step
        .to_json()
        .contains("needs the context {session, now_ms}"));
    assert!(zk
        .describe()
        .to_json()
        .contains(r#""root": "/snowflake/segflake""#));
}
