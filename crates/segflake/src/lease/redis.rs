//! The Redis registry's protocol, written once: which of the core's scripts
//! ([`schema::redis`](super::schema::redis)) each call runs, with which keys and arguments,
//! when a write must wait for the replicas, and what each reply means. Adapters run the
//! requests a [`RedisConversation`] asks for and hand back the replies.
//!
//! A renewal first asks for `ROLE` (the number of connected replicas); with replicas, its
//! script and `WAIT <replicas> <wait_ms>` run on one connection (a pipeline), and a renewal
//! that fewer replicas acknowledged fails: its mark does not count until every replica has
//! it, so a failover never loses a mark the holder issued under. With a replica count given
//! (the URL's `replicas=N`, see [`crate::redis`]), `ROLE` is not asked: every renewal waits
//! for that many replicas (0: none).

use crate::host::Value;
use crate::lease::conversation::{
    self, unexpected_reply, Conversation, Protocol, Request, Script, Step,
};
use crate::lease::schema::redis as scripts;
use crate::lease::RegistryCall;

/// One Redis request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisOp {
    /// `ROLE`. Reply [`RedisReply::Replicas`]: the length of the reply's third element (the
    /// connected replicas) on a primary; 0 on a replica, or when `ROLE` is refused.
    Role,
    /// `EVAL` of the core's script `script` (`claim`, `renew`, `release` or `peers`; its text
    /// is [`script_text`]) with `keys` and `args`; with `wait`, then `WAIT replicas
    /// timeout_ms` on the same connection. Reply [`RedisReply::Eval`].
    Eval {
        script: &'static str,
        keys: Vec<String>,
        args: Vec<String>,
        wait: Option<(u64, u64)>,
    },
}

/// What Redis answered.
#[derive(Debug, Clone, PartialEq)]
pub enum RedisReply {
    Replicas(u64),
    /// The script's reply (`nil` as [`Value::Null`], integers, lists), and `WAIT`'s count of
    /// the replicas that acknowledged, when it was asked for.
    Eval {
        value: Value,
        acked: Option<u64>,
    },
    Failed(String),
}

impl RedisReply {
    /// The reply's kind, as the key the adapter gave it under.
    pub fn kind(&self) -> &'static str {
        match self {
            RedisReply::Replicas(_) => "replicas",
            RedisReply::Eval { .. } => "value",
            RedisReply::Failed(_) => "error",
        }
    }
}

/// The text of the core's script `name`.
pub fn script_text(name: &str) -> Option<&'static str> {
    Some(match name {
        "claim" => scripts::CLAIM,
        "renew" => scripts::RENEW,
        "release" => scripts::RELEASE,
        "peers" => scripts::PEERS,
        _ => return None,
    })
}

pub type RedisStep = Step<RedisOp>;
pub type RedisConversation = Conversation<RedisProtocol>;

/// The Redis registry's protocol for one key prefix.
#[derive(Debug, Clone)]
pub struct RedisProtocol {
    /// `{prefix}`: braces keep every key in one cluster slot.
    braced: String,
    wait_ms: u64,
    /// The replicas every renewal must reach; `None`: every replica `ROLE` lists.
    replicas: Option<u64>,
    /// Nothing is remembered between calls.
    memory: (),
    current: Option<RedisConversation>,
}

impl RedisProtocol {
    /// Keys under `{prefix}` (empty: [`scripts::PREFIX`]); a replicated renewal waits at most
    /// `wait_ms` for the replicas (half the registry timeout is the rule).
    pub fn new(prefix: &str, wait_ms: u64) -> RedisProtocol {
        let prefix = if prefix.is_empty() {
            scripts::PREFIX
        } else {
            prefix
        };
        RedisProtocol {
            braced: format!("{{{prefix}}}"),
            wait_ms: wait_ms.max(1),
            replicas: None,
            memory: (),
            current: None,
        }
    }

    /// Every renewal waits for `replicas` replicas (0: none) instead of those `ROLE` lists;
    /// `None` keeps asking `ROLE`.
    pub fn with_replicas(mut self, replicas: Option<u64>) -> RedisProtocol {
        self.replicas = replicas;
        self
    }

    fn key(&self, what: &str, worker_id: u64) -> String {
        format!("{}:{what}:{worker_id}", self.braced)
    }
}

type Flow<T> = conversation::Flow<T, RedisOp>;
type Stop = conversation::Stop<RedisOp>;

impl Protocol for RedisProtocol {
    type Op = RedisOp;
    type Reply = RedisReply;
    type Memory = ();
    type Context = ();

    fn memory(&mut self) -> &mut () {
        &mut self.memory
    }

    fn current(&mut self) -> &mut Option<RedisConversation> {
        &mut self.current
    }

    fn reply_of(value: &Value) -> RedisReply {
        RedisReply::from_value(value)
    }

    fn run(
        &self,
        _memory: &mut (),
        _context: &(),
        call: &RegistryCall,
        script: &mut Script<'_, RedisOp, RedisReply>,
    ) -> Flow<Value> {
        let reports = format!("{}:reports", self.braced);
        match call {
            RegistryCall::Claim {
                worker_id,
                owner,
                ttl_ms,
            } => {
                let keys = vec![self.key("worker", *worker_id), self.key("mark", *worker_id)];
                let (value, _) = eval(
                    script,
                    "claim",
                    keys,
                    vec![owner.clone(), ttl_ms.to_string()],
                    None,
                )?;
                mark_or_null(value)
            }
            RegistryCall::Renew {
                worker_id,
                owner,
                ttl_ms,
                mark_ms,
                reported_ms,
            } => {
                let replicas = match self.replicas {
                    Some(n) => n,
                    None => match script.ask(RedisOp::Role)? {
                        RedisReply::Replicas(n) => n,
                        // ROLE refused (a proxy, a managed service): no replicas to wait for.
                        _ => 0,
                    },
                };
                let keys = vec![
                    self.key("worker", *worker_id),
                    self.key("mark", *worker_id),
                    reports,
                ];
                let args = vec![
                    owner.clone(),
                    ttl_ms.to_string(),
                    mark_ms.to_string(),
                    reported_ms.to_string(),
                    worker_id.to_string(),
                ];
                let wait = (replicas > 0).then_some((replicas, self.wait_ms));
                let (value, acked) = eval(script, "renew", keys, args, wait)?;
                let answer = mark_or_null(value)?;
                let renewed = answer.as_u64().is_some();
                if renewed && replicas > 0 && acked.unwrap_or(0) < replicas {
                    return Err(Stop::Fail(format!(
                        "the renewal reached {} of the {replicas} replicas within {} ms (WAIT); \
                         it does not count until every replica has it",
                        acked.unwrap_or(0),
                        self.wait_ms
                    )));
                }
                Ok(answer)
            }
            RegistryCall::Release {
                worker_id,
                owner,
                mark_ms,
            } => {
                let keys = vec![
                    self.key("worker", *worker_id),
                    self.key("mark", *worker_id),
                    reports,
                ];
                let args = vec![owner.clone(), mark_ms.to_string(), worker_id.to_string()];
                let (value, _) = eval(script, "release", keys, args, None)?;
                Ok(Value::Bool(value.as_u64() == Some(1)))
            }
            RegistryCall::Peers => {
                let prefix = format!("{}:worker:", self.braced);
                let (value, _) = eval(script, "peers", vec![reports], vec![prefix], None)?;
                Ok(value)
            }
        }
    }
}

/// Runs the core's script `name`; its reply and `WAIT`'s count.
fn eval(
    script: &mut Script<'_, RedisOp, RedisReply>,
    name: &'static str,
    keys: Vec<String>,
    args: Vec<String>,
    wait: Option<(u64, u64)>,
) -> Flow<(Value, Option<u64>)> {
    let op = RedisOp::Eval {
        script: name,
        keys,
        args,
        wait,
    };
    match script.ask(op.clone())? {
        RedisReply::Eval { value, acked } => Ok((value, acked)),
        RedisReply::Failed(e) => Err(Stop::Fail(format!("Redis {name}: {e}"))),
        other => Err(Stop::Fail(unexpected_reply("Redis", &op, other.kind()))),
    }
}

/// A script's mark: an integer, or `nil` (held by another owner).
fn mark_or_null(value: Value) -> Flow<Value> {
    match value {
        Value::Null | Value::Int(_) => Ok(value),
        other => Err(Stop::Fail(format!(
            "the script answered {}, not an integer or nil",
            other.to_json()
        ))),
    }
}

// Host values: a request is `{op: "role"}` or `{op: "eval", script, keys, args, wait?:
// {replicas, timeout_ms}}`; a reply is `{replicas}`, `{value, acked?}` or `{error}`.

impl Request for RedisOp {
    fn to_value(&self) -> Value {
        let text = |s: &str| Value::Str(s.to_string());
        let list = |items: &[String]| Value::List(items.iter().map(|s| text(s)).collect());
        match self {
            RedisOp::Role => Value::Map(vec![("op".into(), text("role"))]),
            RedisOp::Eval {
                script,
                keys,
                args,
                wait,
            } => {
                let mut pairs = vec![
                    ("op".to_string(), text("eval")),
                    ("script".into(), text(script)),
                    ("keys".into(), list(keys)),
                    ("args".into(), list(args)),
                ];
                if let Some((replicas, timeout_ms)) = wait {
                    pairs.push((
                        "wait".into(),
                        Value::Map(vec![
                            ("replicas".into(), Value::uint(*replicas)),
                            ("timeout_ms".into(), Value::uint(*timeout_ms)),
                        ]),
                    ));
                }
                Value::Map(pairs)
            }
        }
    }
}

impl RedisReply {
    /// A reply from its host value; an unreadable one becomes a failure that says why.
    pub fn from_value(v: &Value) -> RedisReply {
        let Value::Map(pairs) = v else {
            return RedisReply::Failed(format!(
                "the Redis adapter's reply {} is not an object",
                v.to_json()
            ));
        };
        let field = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        if let Some(e) = field("error") {
            return RedisReply::Failed(match e {
                Value::Str(s) => s.clone(),
                other => other.to_json(),
            });
        }
        if let Some(n) = field("replicas") {
            return RedisReply::Replicas(n.as_u64().unwrap_or(0));
        }
        if let Some(value) = field("value") {
            return RedisReply::Eval {
                value: value.clone(),
                acked: field("acked").and_then(Value::as_u64),
            };
        }
        RedisReply::Failed(format!(
            "the Redis adapter's reply {} has none of replicas, value or error",
            v.to_json()
        ))
    }

    pub fn to_value(&self) -> Value {
        match self {
            RedisReply::Replicas(n) => Value::Map(vec![("replicas".into(), Value::uint(*n))]),
            RedisReply::Eval { value, acked } => {
                let mut pairs = vec![("value".to_string(), value.clone())];
                if let Some(n) = acked {
                    pairs.push(("acked".into(), Value::uint(*n)));
                }
                Value::Map(pairs)
            }
            RedisReply::Failed(e) => Value::Map(vec![("error".into(), Value::Str(e.clone()))]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renew() -> RegistryCall {
        RegistryCall::Renew {
            worker_id: 3,
            owner: "o".into(),
            ttl_ms: 1000,
            mark_ms: 5,
            reported_ms: 5,
        }
    }

    /// The requests a renewal makes when Redis answers `acked` to every `WAIT`, and its answer.
    fn renewal(protocol: &mut RedisProtocol, connected: u64, acked: u64) -> (Vec<RedisOp>, bool) {
        let mut asked = Vec::new();
        let answer = protocol.converse(renew(), (), |op| {
            asked.push(op.clone());
            match op {
                RedisOp::Role => RedisReply::Replicas(connected),
                RedisOp::Eval { wait, .. } => RedisReply::Eval {
                    value: Value::Int(9),
                    acked: wait.map(|_| acked),
                },
            }
        });
        (asked, answer.is_ok())
    }

    #[test]
    fn a_given_replica_count_replaces_role_and_is_waited_for() {
        let mut asked_role = RedisProtocol::new("p", 500);
        let (ops, ok) = renewal(&mut asked_role, 2, 2);
        assert_eq!(ops[0], RedisOp::Role);
        assert!(
            matches!(
                &ops[1],
                RedisOp::Eval {
                    wait: Some((2, 500)),
                    ..
                }
            ) && ok
        );

        let mut fixed = RedisProtocol::new("p", 500).with_replicas(Some(1));
        let (ops, ok) = renewal(&mut fixed, 0, 1);
        assert_eq!(ops.len(), 1, "no ROLE: {ops:?}");
        assert!(
            matches!(
                &ops[0],
                RedisOp::Eval {
                    wait: Some((1, 500)),
                    ..
                }
            ) && ok
        );
        assert!(
            !renewal(&mut fixed, 0, 0).1,
            "a renewal no replica acknowledged counts"
        );

        let mut off = RedisProtocol::new("p", 500).with_replicas(Some(0));
        let (ops, ok) = renewal(&mut off, 2, 0);
        assert!(matches!(&ops[..], [RedisOp::Eval { wait: None, .. }]) && ok);
    }
}
