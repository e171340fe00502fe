//! The etcd v3 registry's protocol, written once: every language's adapter performs the
//! requests an [`EtcdConversation`] asks for (through etcd's gRPC API or its JSON gateway)
//! and hands back what etcd answered.
//!
//! # Keys (under the prefix, default `/segflake`)
//! * `worker/<id>`: the owner token, attached to an etcd lease of the registry lease's TTL
//!   (whole seconds, rounded up); it disappears with the lease.
//! * `mark/<id>`: the mark, as 20 zero-padded digits so that etcd's byte-wise comparison is
//!   numeric; never attached to a lease.
//! * `report/<id>`: the holder's last clock report, on the holder's etcd lease.
//!
//! # The calls
//! * `claim` grants an etcd lease, then in one transaction takes `worker/<id>` if it does
//!   not exist and reads the mark. A worker key holding this owner token (a retry of this
//!   protocol's own claim) counts as claimed; anything else answers `null` and revokes the
//!   new lease. A mark that was never written is created as 0.
//! * `renew` keeps the etcd lease alive once; a lease that is gone answers `-1` when nobody
//!   holds the worker key (the registry lost it) and `null` when another owner does. Then one
//!   transaction raises the mark if this owner holds the key and the mark is lower, and
//!   writes the report; otherwise it reads both keys: a missing worker key or mark while the
//!   lease lives answers `-1` (etcd lost them: a restore from an older snapshot, a
//!   deletion), another owner `null`, and a mark already at or above the one asked for is
//!   answered after the report is written.
//! * `release` sets the mark, deletes the worker and report keys if this owner holds the
//!   worker key, and revokes the etcd lease.
//! * `peers` reads every `report/` key (etcd has no server clock to age them: ages are 0).

use std::collections::BTreeMap;

use crate::error::quoted;
use crate::host::Value;
use crate::lease::conversation::{
    self, unexpected_reply, Conversation, Protocol, Request, Script, Step,
};
use crate::lease::RegistryCall;

/// One etcd request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EtcdOp {
    /// Grant a lease of `ttl_s` seconds. Reply [`EtcdReply::Lease`].
    Grant { ttl_s: u64 },
    /// Keep the lease alive once. Reply [`EtcdReply::Ttl`]: the seconds it has left, 0 or
    /// less when it no longer exists.
    KeepAlive { lease: String },
    /// Revoke the lease. Reply [`EtcdReply::Done`]; a failure is of no consequence (a lease
    /// that expired is gone already).
    Revoke { lease: String },
    /// A transaction: if every comparison holds, the `success` requests, else the `failure`
    /// ones. Reply [`EtcdReply::Txn`].
    Txn {
        compare: Vec<Compare>,
        success: Vec<TxnOp>,
        failure: Vec<TxnOp>,
    },
    /// Every key that starts with `prefix`. Reply [`EtcdReply::Kvs`].
    Prefix { prefix: String },
}

/// A transaction's comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compare {
    /// The key does not exist (`create_revision == 0`).
    Missing { key: String },
    /// The key's value equals `value`.
    Equal { key: String, value: String },
    /// The key's value is byte-wise less than `value` (false when the key does not exist).
    Less { key: String, value: String },
}

/// A request inside a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOp {
    Put {
        key: String,
        value: String,
        /// The etcd lease the key is attached to.
        lease: Option<String>,
    },
    /// Read the key: its value is one of the transaction reply's `values`.
    Range {
        key: String,
    },
    Delete {
        key: String,
    },
}

/// What etcd answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EtcdReply {
    Done,
    /// A granted lease's ID (decimal).
    Lease(String),
    Ttl(i64),
    /// Whether the comparisons held, and the value each `Range` of the branch taken read,
    /// in order (`None`: no such key).
    Txn {
        succeeded: bool,
        values: Vec<Option<String>>,
    },
    /// The keys and values read.
    Kvs(Vec<(String, String)>),
    /// The request failed, as the client described it.
    Failed(String),
}

impl EtcdReply {
    /// The reply's kind, as the key the adapter gave it under (`null` for a bare success).
    pub fn kind(&self) -> &'static str {
        match self {
            EtcdReply::Done => "null",
            EtcdReply::Lease(_) => "lease",
            EtcdReply::Ttl(_) => "ttl",
            EtcdReply::Txn { .. } => "txn",
            EtcdReply::Kvs(_) => "kvs",
            EtcdReply::Failed(_) => "error",
        }
    }
}

/// What the adapter does next: perform a request, or return the call's answer.
pub type EtcdStep = Step<EtcdOp>;

/// One registry call's exchange of requests and replies.
pub type EtcdConversation = Conversation<EtcdProtocol>;

/// What the protocol remembers between calls: worker ID → the etcd lease its key is on.
#[derive(Debug, Clone, Default)]
pub struct Leases(BTreeMap<u64, String>);

/// The etcd registry's protocol for one key prefix.
#[derive(Debug, Clone)]
pub struct EtcdProtocol {
    prefix: String,
    leases: Leases,
    current: Option<EtcdConversation>,
}

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "/segflake";

/// Where an `etcd://` URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdUrl {
    /// `HOST:PORT` of each member, in the URL's order.
    pub endpoints: Vec<String>,
    pub prefix: String,
}

impl EtcdUrl {
    /// Reads `etcd://HOST:PORT[,HOST:PORT][/PREFIX]` (the prefix defaults to
    /// [`DEFAULT_PREFIX`]; a trailing `/` is dropped).
    pub fn parse(url: &str) -> Result<EtcdUrl, String> {
        let bad = |why: &str| {
            format!(
                "{url}: {why}; allowed: etcd://HOST:PORT[,HOST:PORT][/PREFIX]",
                url = quoted(url)
            )
        };
        let rest = url
            .strip_prefix("etcd://")
            .ok_or_else(|| bad("not an etcd:// URL"))?;
        let (hosts, prefix) = rest
            .find('/')
            .and_then(|i| rest.split_at_checked(i))
            .unwrap_or((rest, DEFAULT_PREFIX));
        let endpoints: Vec<String> = hosts
            .split(',')
            .filter(|h| !h.is_empty())
            .map(str::to_string)
            .collect();
        let valid = |h: &String| {
            h.rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
        };
        if endpoints.is_empty() || !endpoints.iter().all(valid) {
            return Err(bad("every member is HOST:PORT"));
        }
        Ok(EtcdUrl {
            endpoints,
            prefix: EtcdProtocol::new(prefix).prefix,
        })
    }
}

impl EtcdProtocol {
    /// The protocol for keys under `prefix` (a trailing `/` is dropped; empty means
    /// [`DEFAULT_PREFIX`]).
    pub fn new(prefix: &str) -> EtcdProtocol {
        let prefix = prefix.trim_end_matches('/');
        EtcdProtocol {
            prefix: if prefix.is_empty() {
                DEFAULT_PREFIX.to_string()
            } else {
                prefix.to_string()
            },
            leases: Leases::default(),
            current: None,
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The etcd leases of the worker IDs held now, for an adapter that closes: revoking
    /// them ends the holds at once.
    pub fn leases(&self) -> Vec<String> {
        self.leases.0.values().cloned().collect()
    }

    fn key(&self, what: &str, worker_id: u64) -> String {
        format!("{}/{what}/{worker_id}", self.prefix)
    }
}

/// The mark as stored: 20 zero-padded digits.
fn pad(mark_ms: u64) -> String {
    format!("{mark_ms:020}")
}

type Flow<T> = conversation::Flow<T, EtcdOp>;
type Stop = conversation::Stop<EtcdOp>;

impl Protocol for EtcdProtocol {
    type Op = EtcdOp;
    type Reply = EtcdReply;
    type Memory = Leases;
    type Context = ();

    fn memory(&mut self) -> &mut Leases {
        &mut self.leases
    }

    fn current(&mut self) -> &mut Option<EtcdConversation> {
        &mut self.current
    }

    fn reply_of(value: &Value) -> EtcdReply {
        EtcdReply::from_value(value)
    }

    fn run(
        &self,
        memory: &mut Leases,
        _context: &(),
        call: &RegistryCall,
        script: &mut Script<'_, EtcdOp, EtcdReply>,
    ) -> Flow<Value> {
        let mut run = Run {
            p: self,
            leases: &mut memory.0,
            script,
        };
        match call {
            RegistryCall::Claim {
                worker_id,
                owner,
                ttl_ms,
            } => run.claim(*worker_id, owner, *ttl_ms),
            RegistryCall::Renew {
                worker_id,
                owner,
                mark_ms,
                reported_ms,
                ..
            } => run.renew(*worker_id, owner, *mark_ms, *reported_ms),
            RegistryCall::Release {
                worker_id,
                owner,
                mark_ms,
            } => run.release(*worker_id, owner, *mark_ms),
            RegistryCall::Peers => run.peers(),
        }
    }
}

struct Run<'a, 's> {
    p: &'a EtcdProtocol,
    leases: &'a mut BTreeMap<u64, String>,
    script: &'a mut Script<'s, EtcdOp, EtcdReply>,
}

fn unexpected(op: &EtcdOp, reply: &EtcdReply) -> Stop {
    Stop::Fail(unexpected_reply("etcd", op, reply.kind()))
}

impl Run<'_, '_> {
    /// A transaction's outcome and the values its ranges read.
    fn txn(
        &mut self,
        compare: Vec<Compare>,
        success: Vec<TxnOp>,
        failure: Vec<TxnOp>,
    ) -> Flow<(bool, Vec<Option<String>>)> {
        let op = EtcdOp::Txn {
            compare,
            success,
            failure,
        };
        match self.script.ask(op.clone())? {
            EtcdReply::Txn { succeeded, values } => Ok((succeeded, values)),
            EtcdReply::Failed(e) => Err(Stop::Fail(format!("etcd transaction: {e}"))),
            other => Err(unexpected(&op, &other)),
        }
    }

    /// Revokes `lease`; the reply does not matter.
    fn revoke(&mut self, lease: String) -> Flow<()> {
        self.script.ask(EtcdOp::Revoke { lease })?;
        Ok(())
    }

    fn claim(&mut self, worker_id: u64, owner: &str, ttl_ms: u64) -> Flow<Value> {
        let (worker, mark) = (
            self.p.key("worker", worker_id),
            self.p.key("mark", worker_id),
        );
        let grant = EtcdOp::Grant {
            ttl_s: ttl_ms.div_ceil(1000).max(1),
        };
        let lease = match self.script.ask(grant.clone())? {
            EtcdReply::Lease(id) => id,
            EtcdReply::Failed(e) => return Err(Stop::Fail(format!("etcd lease grant: {e}"))),
            other => return Err(unexpected(&grant, &other)),
        };
        let (ok, values) = self.txn(
            vec![Compare::Missing {
                key: worker.clone(),
            }],
            vec![
                TxnOp::Put {
                    key: worker.clone(),
                    value: owner.to_string(),
                    lease: Some(lease.clone()),
                },
                TxnOp::Range { key: mark.clone() },
            ],
            vec![
                TxnOp::Range { key: worker },
                TxnOp::Range { key: mark.clone() },
            ],
        )?;
        let value = |i: usize| values.get(i).cloned().flatten();
        let stored = if ok {
            self.leases.insert(worker_id, lease);
            value(0)
        } else {
            self.revoke(lease)?;
            if value(0).as_deref() != Some(owner) || !self.leases.contains_key(&worker_id) {
                return Ok(Value::Null);
            }
            value(1)
        };
        if stored.is_none() {
            self.txn(
                vec![Compare::Missing { key: mark.clone() }],
                vec![TxnOp::Put {
                    key: mark,
                    value: pad(0),
                    lease: None,
                }],
                vec![],
            )?;
        }
        parse_mark(stored.as_deref()).map(Value::uint)
    }

    fn renew(
        &mut self,
        worker_id: u64,
        owner: &str,
        mark_ms: u64,
        reported_ms: u64,
    ) -> Flow<Value> {
        let Some(lease) = self.leases.get(&worker_id).cloned() else {
            return Ok(Value::Null);
        };
        let (worker, mark, report) = (
            self.p.key("worker", worker_id),
            self.p.key("mark", worker_id),
            self.p.key("report", worker_id),
        );
        let keep = EtcdOp::KeepAlive {
            lease: lease.clone(),
        };
        let ttl = match self.script.ask(keep.clone())? {
            EtcdReply::Ttl(ttl) => ttl,
            EtcdReply::Failed(e) => return Err(Stop::Fail(format!("etcd lease keepalive: {e}"))),
            other => return Err(unexpected(&keep, &other)),
        };
        if ttl <= 0 {
            // The etcd lease is gone, and the worker key with it: another owner may have
            // claimed the key since (taken), or nobody has (the record is lost).
            self.leases.remove(&worker_id);
            let (_, values) = self.txn(vec![], vec![TxnOp::Range { key: worker }], vec![])?;
            return Ok(match values.first().cloned().flatten() {
                None => Value::Int(-1),
                Some(_) => Value::Null,
            });
        }
        let owned = Compare::Equal {
            key: worker.clone(),
            value: owner.to_string(),
        };
        let put_report = TxnOp::Put {
            key: report,
            value: reported_ms.to_string(),
            lease: Some(lease),
        };
        let (ok, values) = self.txn(
            vec![
                owned.clone(),
                Compare::Less {
                    key: mark.clone(),
                    value: pad(mark_ms),
                },
            ],
            vec![
                TxnOp::Put {
                    key: mark.clone(),
                    value: pad(mark_ms),
                    lease: None,
                },
                put_report.clone(),
            ],
            vec![TxnOp::Range { key: worker }, TxnOp::Range { key: mark }],
        )?;
        if ok {
            return Ok(Value::uint(mark_ms));
        }
        let value = |i: usize| values.get(i).cloned().flatten();
        match (value(0), value(1)) {
            // The worker key (or its mark) is gone while our etcd lease lives: the
            // registry lost the record.
            (None, _) | (Some(_), None) => {
                self.leases.remove(&worker_id);
                Ok(Value::Int(-1))
            }
            (Some(holder), Some(_)) if holder != owner => {
                self.leases.remove(&worker_id);
                Ok(Value::Null)
            }
            (Some(_), stored) => {
                self.txn(vec![owned], vec![put_report], vec![])?;
                parse_mark(stored.as_deref()).map(Value::uint)
            }
        }
    }

    fn release(&mut self, worker_id: u64, owner: &str, mark_ms: u64) -> Flow<Value> {
        let lease = self.leases.remove(&worker_id);
        let worker = self.p.key("worker", worker_id);
        let (ok, _) = self.txn(
            vec![Compare::Equal {
                key: worker.clone(),
                value: owner.to_string(),
            }],
            vec![
                TxnOp::Put {
                    key: self.p.key("mark", worker_id),
                    value: pad(mark_ms),
                    lease: None,
                },
                TxnOp::Delete { key: worker },
                TxnOp::Delete {
                    key: self.p.key("report", worker_id),
                },
            ],
            vec![],
        )?;
        if let Some(lease) = lease {
            self.revoke(lease)?;
        }
        Ok(Value::Bool(ok))
    }

    fn peers(&mut self) -> Flow<Value> {
        let op = EtcdOp::Prefix {
            prefix: format!("{}/report/", self.p.prefix),
        };
        let kvs = match self.script.ask(op.clone())? {
            EtcdReply::Kvs(kvs) => kvs,
            EtcdReply::Failed(e) => return Err(Stop::Fail(format!("etcd range: {e}"))),
            other => return Err(unexpected(&op, &other)),
        };
        let reports = kvs.iter().filter_map(|(key, value)| {
            let id = key.rsplit('/').next()?.parse::<i128>().ok()?;
            Some((id, value.parse::<i128>().ok()?, 0))
        });
        Ok(crate::lease::peers_answer(reports))
    }
}

fn parse_mark(stored: Option<&str>) -> Flow<u64> {
    match stored {
        None | Some("") => Ok(0),
        Some(s) => s.parse().map_err(|_| {
            Stop::Fail(format!(
                "the stored mark {s} is not a number",
                s = quoted(s)
            ))
        }),
    }
}

// ---- Host values ----------------------------------------------------------------------
//
// A request is `{op: "grant", ttl_s}`, `{op: "keepalive", lease}`, `{op: "revoke", lease}`,
// `{op: "prefix", prefix}` or `{op: "txn", compare, success, failure}`; a comparison is
// `{key, missing: true}`, `{key, equal: VALUE}` or `{key, less: VALUE}`; a transaction's
// request is `{put: KEY, value, lease?}`, `{range: KEY}` or `{delete: KEY}`. Keys and values
// are text; lease IDs are decimal text.
// A reply is `null` (done), `{lease: ID}` (text or integer), `{ttl: SECONDS}`,
// `{succeeded, values: [VALUE | null, ...]}`, `{kvs: [[KEY, VALUE], ...]}` or `{error}`.

fn text(s: &str) -> Value {
    Value::Str(s.to_string())
}

fn map(pairs: Vec<(&str, Value)>) -> Value {
    Value::Map(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

impl Compare {
    pub fn to_value(&self) -> Value {
        match self {
            Compare::Missing { key } => {
                map(vec![("key", text(key)), ("missing", Value::Bool(true))])
            }
            Compare::Equal { key, value } => map(vec![("key", text(key)), ("equal", text(value))]),
            Compare::Less { key, value } => map(vec![("key", text(key)), ("less", text(value))]),
        }
    }
}

impl TxnOp {
    pub fn to_value(&self) -> Value {
        match self {
            TxnOp::Put { key, value, lease } => {
                let mut pairs = vec![("put", text(key)), ("value", text(value))];
                if let Some(lease) = lease {
                    pairs.push(("lease", text(lease)));
                }
                map(pairs)
            }
            TxnOp::Range { key } => map(vec![("range", text(key))]),
            TxnOp::Delete { key } => map(vec![("delete", text(key))]),
        }
    }
}

impl Request for EtcdOp {
    fn to_value(&self) -> Value {
        let op = ("op", text(self.name()));
        match self {
            EtcdOp::Grant { ttl_s } => map(vec![op, ("ttl_s", Value::uint(*ttl_s))]),
            EtcdOp::KeepAlive { lease } | EtcdOp::Revoke { lease } => {
                map(vec![op, ("lease", text(lease))])
            }
            EtcdOp::Prefix { prefix } => map(vec![op, ("prefix", text(prefix))]),
            EtcdOp::Txn {
                compare,
                success,
                failure,
            } => {
                let list = |ops: &[TxnOp]| Value::List(ops.iter().map(TxnOp::to_value).collect());
                map(vec![
                    op,
                    (
                        "compare",
                        Value::List(compare.iter().map(Compare::to_value).collect()),
                    ),
                    ("success", list(success)),
                    ("failure", list(failure)),
                ])
            }
        }
    }
}

impl EtcdOp {
    /// The request's name: `grant`, `keepalive`, `revoke`, `txn` or `prefix`.
    pub fn name(&self) -> &'static str {
        match self {
            EtcdOp::Grant { .. } => "grant",
            EtcdOp::KeepAlive { .. } => "keepalive",
            EtcdOp::Revoke { .. } => "revoke",
            EtcdOp::Txn { .. } => "txn",
            EtcdOp::Prefix { .. } => "prefix",
        }
    }
}

impl EtcdReply {
    /// A reply from its host value; an unreadable one becomes a failure that says why.
    pub fn from_value(v: &Value) -> EtcdReply {
        Self::read(v).unwrap_or_else(|why| {
            EtcdReply::Failed(format!(
                "the etcd adapter's reply {} is not one the protocol reads: {why}",
                v.to_json()
            ))
        })
    }

    fn read(v: &Value) -> Result<EtcdReply, String> {
        let pairs = match v {
            Value::Null => return Ok(EtcdReply::Done),
            Value::Map(pairs) if pairs.is_empty() => return Ok(EtcdReply::Done),
            Value::Map(pairs) => pairs,
            _ => return Err("not null or an object".into()),
        };
        let field = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        let string = |v: &Value| match v {
            Value::Str(s) => Ok(s.clone()),
            other => Err(format!("{} is not a string", other.to_json())),
        };
        if let Some(e) = field("error") {
            return Ok(EtcdReply::Failed(match e {
                Value::Str(s) => s.clone(),
                other => other.to_json(),
            }));
        }
        if let Some(id) = field("lease") {
            return match id {
                Value::Str(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                    Ok(EtcdReply::Lease(s.clone()))
                }
                Value::Int(i) if *i >= 0 => Ok(EtcdReply::Lease(i.to_string())),
                other => Err(format!("lease {} is not a lease ID", other.to_json())),
            };
        }
        if let Some(ttl) = field("ttl") {
            return match ttl {
                Value::Int(i) => Ok(EtcdReply::Ttl(*i as i64)),
                Value::Str(s) => s
                    .parse()
                    .map(EtcdReply::Ttl)
                    .map_err(|_| format!("ttl {s} is not an integer", s = quoted(s))),
                other => Err(format!("ttl {} is not an integer", other.to_json())),
            };
        }
        if let Some(succeeded) = field("succeeded") {
            let Value::Bool(succeeded) = succeeded else {
                return Err("succeeded is not a boolean".into());
            };
            let values = match field("values") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::List(items)) => items
                    .iter()
                    .map(|v| match v {
                        Value::Null => Ok(None),
                        v => string(v).map(Some),
                    })
                    .collect::<Result<_, _>>()?,
                Some(other) => return Err(format!("values {} is not a list", other.to_json())),
            };
            return Ok(EtcdReply::Txn {
                succeeded: *succeeded,
                values,
            });
        }
        if let Some(kvs) = field("kvs") {
            let Value::List(items) = kvs else {
                return Err("kvs is not a list".into());
            };
            return items
                .iter()
                .map(|kv| match kv {
                    Value::List(pair) if pair.len() == 2 => {
                        Ok((string(&pair[0])?, string(&pair[1])?))
                    }
                    other => Err(format!("{} is not a [key, value] pair", other.to_json())),
                })
                .collect::<Result<_, _>>()
                .map(EtcdReply::Kvs);
        }
        Err("none of lease, ttl, succeeded, kvs or error".into())
    }

    /// The reply as a host value.
    pub fn to_value(&self) -> Value {
        match self {
            EtcdReply::Done => Value::Null,
            EtcdReply::Lease(id) => map(vec![("lease", text(id))]),
            EtcdReply::Ttl(ttl) => map(vec![("ttl", Value::Int(i128::from(*ttl)))]),
            EtcdReply::Txn { succeeded, values } => map(vec![
                ("succeeded", Value::Bool(*succeeded)),
                (
                    "values",
                    Value::List(
                        values
                            .iter()
                            .map(|v| v.as_deref().map_or(Value::Null, text))
                            .collect(),
                    ),
                ),
            ]),
            EtcdReply::Kvs(kvs) => map(vec![(
                "kvs",
                Value::List(
                    kvs.iter()
                        .map(|(k, v)| Value::List(vec![text(k), text(v)]))
                        .collect(),
                ),
            )]),
            EtcdReply::Failed(e) => map(vec![("error", text(e))]),
        }
    }
}
