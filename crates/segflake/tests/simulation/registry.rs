//! Registry servers as state machines with each server's semantics, answering the requests
//! of the core's protocols (the same `Conversation`s the adapters carry): the registry
//! contract itself (as `MemoryRegistry` keeps it), Redis (the scripts' effect, keys that
//! expire, `ROLE`/`WAIT`, a replica that lags and may be promoted), PostgreSQL and MySQL
//! (the statements' effect on `segflake_worker_lease`, on the database's clock), and
//! ZooKeeper and etcd (tests/simulation/zookeeper.rs and etcd.rs: sessions and leases that
//! expire on the server).
//!
//! A model names the statement or script it applies; a request it does not know fails the
//! run (`unknown_request`), so a protocol that changes its requests cannot be simulated
//! against a stale model.

use std::collections::BTreeMap;

use segflake::lease::conversation::{Conversation, Protocol, Step};
use segflake::lease::etcd::{EtcdOp, EtcdProtocol, EtcdReply};
use segflake::lease::redis::{RedisOp, RedisProtocol, RedisReply};
use segflake::lease::schema::{mysql as my, postgres as pg};
use segflake::lease::sql::{Dialect, Param, SqlOp, SqlProtocol, SqlReply};
use segflake::lease::zookeeper::{
    self as zkp, ZkContext, ZkError, ZkOp, ZkReply, ZooKeeperProtocol,
};
use segflake::{RegistryCall, Value};

use crate::etcd::EtcdServer;
use crate::world::Rng;
use crate::zookeeper::{ZkServer, SESSION_EXPIRED};

/// Which server (and protocol) a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The registry contract answered directly (a callback registry in any language).
    Contract,
    Redis,
    Postgres,
    MySql,
    /// Leaf's layout: a forever node per identity, an ephemeral node per session.
    ZooKeeper,
    Etcd,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Contract,
        Kind::Redis,
        Kind::Postgres,
        Kind::MySql,
        Kind::ZooKeeper,
        Kind::Etcd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Contract => "contract",
            Kind::Redis => "redis",
            Kind::Postgres => "postgres",
            Kind::MySql => "mysql",
            Kind::ZooKeeper => "zookeeper",
            Kind::Etcd => "etcd",
        }
    }
}

/// One worker ID's record. For Redis, `owner`/`expires` is the worker key (gone once
/// expired) and `mark` the mark key (`None`: the key is gone); for SQL, the row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    pub owner: Option<String>,
    /// On the server's clock.
    pub expires: u64,
    pub mark: Option<u64>,
    /// `(reported_ms, server time it was stored)`.
    pub reported: Option<(u64, u64)>,
}

pub type State = BTreeMap<u64, Row>;

/// A request of one registry call's conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Contract(RegistryCall),
    Redis(RedisOp),
    Sql(SqlOp),
    /// A ZooKeeper request on the client's session.
    Zk {
        session: i64,
        op: ZkOp,
    },
    /// The client closes its session (`close()`): its ephemeral nodes go at once.
    ZkClose {
        session: i64,
    },
    Etcd(EtcdOp),
}

#[derive(Debug, Clone)]
pub enum Reply {
    Contract(Result<Value, String>),
    Redis(RedisReply),
    Sql(SqlReply),
    Zk(ZkReply),
    Etcd(EtcdReply),
}

impl Reply {
    /// The failure of a request the model does not know (`unknown_request`).
    pub fn model_error(&self) -> Option<&str> {
        let e = match self {
            Reply::Redis(RedisReply::Failed(e))
            | Reply::Sql(SqlReply::Failed(e))
            | Reply::Etcd(EtcdReply::Failed(e))
            | Reply::Zk(ZkReply::Failed {
                error: ZkError::Other(e),
                ..
            }) => e,
            _ => return None,
        };
        e.starts_with("SIMULATION MODEL").then_some(e.as_str())
    }
}

/// The adapter side of one registry call: the core's conversation for it.
pub enum Conv {
    Contract {
        call: RegistryCall,
        replied: Option<Result<Value, String>>,
    },
    Redis(Conversation<RedisProtocol>),
    Sql(Conversation<SqlProtocol>),
    /// Its requests go on the session the call began in (the adapter's client then).
    Zk {
        conv: Conversation<ZooKeeperProtocol>,
        session: i64,
    },
    Etcd(Conversation<EtcdProtocol>),
}

/// The ZooKeeper identity (`ip:port`, Leaf's node address) of a process given `label`:
/// processes given one label share one identity, hence one forever node and worker ID.
pub fn zk_identity(label: &str) -> String {
    format!("{}:8080", label.replace(['-', '/', '"', '\\'], "."))
}

/// A process's protocol objects (the adapters keep one each).
pub struct Adapter {
    pub kind: Kind,
    redis: RedisProtocol,
    sql: SqlProtocol,
    zk: ZooKeeperProtocol,
    etcd: EtcdProtocol,
    /// The ZooKeeper client's session (0: none opened yet), and whether the client learned
    /// that it expired (the next call opens a new one).
    session: i64,
    session_dead: bool,
    /// Session IDs are `session_base + n`: unique across processes and incarnations.
    session_base: i64,
    sessions_opened: i64,
}

impl Adapter {
    /// The adapter of process `slot`, given `label`.
    pub fn new(kind: Kind, wait_ms: u64, label: &str, slot: usize) -> Adapter {
        let dialect = if kind == Kind::MySql {
            Dialect::MySql
        } else {
            Dialect::Postgres
        };
        Adapter {
            kind,
            redis: RedisProtocol::new("", wait_ms),
            sql: SqlProtocol::new(dialect, "simulated-host"),
            zk: ZooKeeperProtocol::new(zkp::DEFAULT_ROOT, &zk_identity(label))
                .expect("a valid ZooKeeper identity"),
            etcd: EtcdProtocol::new(""),
            session: 0,
            session_dead: false,
            session_base: (slot as i64 + 1) << 32,
            sessions_opened: 0,
        }
    }

    /// A new process in this slot: ZooKeeper's and etcd's protocols start with nothing
    /// remembered, and no session is open.
    pub fn restart(&mut self) {
        self.zk = ZooKeeperProtocol::new(self.zk.root(), &self.zk.identity())
            .expect("a valid ZooKeeper identity");
        self.etcd = EtcdProtocol::new(self.etcd.prefix());
        self.session = 0;
        self.session_dead = false;
    }

    /// The ZooKeeper session the client keeps alive (pings), if one is open.
    pub fn live_session(&self) -> Option<i64> {
        (self.session != 0 && !self.session_dead).then_some(self.session)
    }

    /// The client learned that its session expired.
    pub fn session_expired(&mut self) {
        self.session_dead = true;
    }

    /// The requests a graceful close sends: ZooKeeper closes its session; etcd revokes the
    /// leases of the worker IDs still held.
    pub fn close(&mut self) -> Vec<Op> {
        match self.kind {
            Kind::ZooKeeper => match self.live_session() {
                Some(session) => {
                    self.session_dead = true;
                    vec![Op::ZkClose { session }]
                }
                None => vec![],
            },
            Kind::Etcd => {
                let leases = self.etcd.leases();
                self.etcd = EtcdProtocol::new(self.etcd.prefix());
                leases
                    .into_iter()
                    .map(|lease| Op::Etcd(EtcdOp::Revoke { lease }))
                    .collect()
            }
            _ => vec![],
        }
    }

    /// Begins the conversation of `call` at host wall time `wall_ms`.
    pub fn begin(&mut self, call: RegistryCall, wall_ms: u64) -> Conv {
        match self.kind {
            Kind::Contract => Conv::Contract {
                call,
                replied: None,
            },
            Kind::Redis => Conv::Redis(self.redis.begin(call, ())),
            Kind::Postgres | Kind::MySql => Conv::Sql(self.sql.begin(call, ())),
            Kind::ZooKeeper => {
                if self.live_session().is_none() {
                    self.sessions_opened += 1;
                    self.session = self.session_base + self.sessions_opened;
                    self.session_dead = false;
                }
                let context = ZkContext {
                    session: self.session,
                    now_ms: wall_ms,
                };
                Conv::Zk {
                    conv: self.zk.begin(call, context),
                    session: self.session,
                }
            }
            Kind::Etcd => Conv::Etcd(self.etcd.begin(call, ())),
        }
    }

    /// The conversation's next request, or the call's answer.
    pub fn next(&mut self, conv: &mut Conv) -> Result<Op, Result<Value, String>> {
        match conv {
            Conv::Contract { call, replied } => match replied.take() {
                Some(answer) => Err(answer),
                None => Ok(Op::Contract(call.clone())),
            },
            Conv::Redis(c) => match c.next(&mut self.redis) {
                Step::Op(op) => Ok(Op::Redis(op)),
                Step::Answer(a) => Err(a),
            },
            Conv::Sql(c) => match c.next(&mut self.sql) {
                Step::Op(op) => Ok(Op::Sql(op)),
                Step::Answer(a) => Err(a),
            },
            Conv::Zk { conv, session } => match conv.next(&mut self.zk) {
                Step::Op(op) => Ok(Op::Zk {
                    session: *session,
                    op,
                }),
                Step::Answer(a) => Err(a),
            },
            Conv::Etcd(c) => match c.next(&mut self.etcd) {
                Step::Op(op) => Ok(Op::Etcd(op)),
                Step::Answer(a) => Err(a),
            },
        }
    }

    /// The server's reply to the conversation's request. A ZooKeeper client told that its
    /// session expired opens a new one for the next call.
    pub fn reply(&mut self, conv: &mut Conv, reply: Reply) {
        match (conv, reply) {
            (Conv::Contract { replied, .. }, Reply::Contract(r)) => *replied = Some(r),
            (Conv::Redis(c), Reply::Redis(r)) => c.reply(r),
            (Conv::Sql(c), Reply::Sql(r)) => c.reply(r),
            (Conv::Zk { conv, session }, Reply::Zk(r)) => {
                let expired = matches!(&r, ZkReply::Failed { error: ZkError::Other(e), .. }
                    if e == SESSION_EXPIRED);
                if expired && *session == self.session {
                    self.session_dead = true;
                }
                conv.reply(r)
            }
            (Conv::Etcd(c), Reply::Etcd(r)) => c.reply(r),
            _ => panic!("a reply of another registry kind"),
        }
    }
}

/// A replica of a Redis primary: the primary's writes reach it after a lag, in order;
/// a cut link delays them until it heals.
#[derive(Debug, Clone)]
pub struct Replica {
    pub state: State,
    /// Writes not yet applied: (due on the true clock, worker ID, the row after the write).
    pending: Vec<(u64, u64, Option<Row>)>,
    pub lag_ms: u64,
    pub cut_until: u64,
    /// `WAIT` acknowledged every write due by then: those reach the replica at their
    /// time, whatever happens to the link later (replication is in order).
    promised_until: u64,
}

/// A registry server.
pub struct Server {
    pub kind: Kind,
    pub state: State,
    /// The server's clock: true time plus this offset.
    pub offset: i64,
    pub replica: Option<Replica>,
    /// For every (worker ID, owner): the highest mark the server ever stored while that
    /// owner held the worker ID (kept across data loss: what the holder was told).
    ghost: BTreeMap<u64, BTreeMap<String, u64>>,
    pub applied: u64,
    /// Failovers so far: a reply held by `WAIT` is lost with the primary that held it.
    pub epoch: u64,
    /// The ZooKeeper and etcd servers (used when `kind` is theirs; `state` is not).
    pub zk: ZkServer,
    pub etcd: EtcdServer,
}

/// A server's answer to one request, and how long `WAIT` holds it back.
pub struct Applied {
    pub reply: Reply,
    /// The reply leaves the server this much later, if the primary is still there.
    pub held_ms: u64,
}

impl Server {
    /// `session_ms`: the ZooKeeper session timeout the clients ask for.
    pub fn new(kind: Kind, offset: i64, replica: Option<(u64, u64)>, session_ms: u64) -> Server {
        Server {
            kind,
            state: State::new(),
            offset,
            replica: replica.map(|(lag_ms, _)| Replica {
                state: State::new(),
                pending: Vec::new(),
                lag_ms,
                cut_until: 0,
                promised_until: 0,
            }),
            ghost: BTreeMap::new(),
            applied: 0,
            epoch: 0,
            zk: ZkServer::new(zkp::DEFAULT_ROOT, session_ms),
            etcd: EtcdServer::new(segflake::lease::etcd::DEFAULT_PREFIX),
        }
    }

    /// The ZooKeeper client of `session` pings at true time `t`; false when the server
    /// answers that the session is over.
    pub fn zk_ping(&mut self, session: i64, t: u64) -> bool {
        let now = self.clock(t);
        self.zk.ping(session, now)
    }

    pub fn clock(&self, t: u64) -> u64 {
        (t as i64 + self.offset).max(0) as u64
    }

    /// Applies the replica's writes due by true time `t`.
    pub fn replicate(&mut self, t: u64) {
        if let Some(r) = &mut self.replica {
            let due = r.pending.iter().take_while(|(at, _, _)| *at <= t).count();
            for (_, w, row) in r.pending.drain(..due) {
                match row {
                    Some(row) => r.state.insert(w, row),
                    None => r.state.remove(&w),
                };
            }
        }
    }

    /// Cuts the replica's link from true time `t` until `until`: writes that had not
    /// reached it arrive after the link heals.
    pub fn cut_replica(&mut self, t: u64, until: u64) {
        if let Some(r) = &mut self.replica {
            r.cut_until = until;
            let from = t.max(r.promised_until);
            for p in r.pending.iter_mut().filter(|p| p.0 > from) {
                p.0 = p.0.max(until);
            }
        }
    }

    /// Promotes the replica: the new primary has what reached the replica by `t`, a
    /// clock of its own, and a fresh replica in sync with it.
    pub fn fail_over(&mut self, t: u64, offset: i64) -> usize {
        self.replicate(t);
        let Some(r) = &mut self.replica else {
            return 0;
        };
        let lost = r.pending.len();
        r.pending.clear();
        self.epoch += 1;
        self.state = r.state.clone();
        r.cut_until = 0;
        self.offset = offset;
        lost
    }

    /// The record of worker ID `w` a request wrote (it was `before`), sent on to the
    /// replica. Returns when the replica has it (true time).
    fn ship(&mut self, t: u64, w: Option<u64>, before: Option<Row>, rng: &mut Rng) -> u64 {
        let Some(r) = &mut self.replica else {
            return t;
        };
        let lag = rng.range(0, r.lag_ms);
        // In order, each write `lag` after it was made (or after the link heals).
        let at = (t + lag)
            .max(r.cut_until)
            .max(r.pending.last().map_or(0, |p| p.0));
        if let Some(w) = w {
            let now = self.state.get(&w);
            if before.as_ref() != now {
                r.pending.push((at, w, now.cloned()));
            }
        }
        at
    }

    fn note_mark(&mut self, w: u64) {
        let held = match self.kind {
            Kind::ZooKeeper => self.zk.holder_mark(w),
            Kind::Etcd => self.etcd.holder_mark(w),
            _ => self
                .state
                .get(&w)
                .and_then(|row| Some((row.owner.clone()?, row.mark?))),
        };
        if let Some((owner, mark)) = held {
            let g = self.ghost.entry(w).or_default().entry(owner).or_insert(0);
            *g = (*g).max(mark);
        }
    }

    /// The highest mark the server ever stored for worker ID `w` while `owner` held it
    /// (0 if none).
    pub fn ghost_mark(&self, w: u64, owner: &str) -> u64 {
        self.ghost
            .get(&w)
            .and_then(|owners| owners.get(owner))
            .copied()
            .unwrap_or(0)
    }

    /// Applies one request at true time `t`.
    pub fn apply(&mut self, op: &Op, t: u64, rng: &mut Rng) -> Applied {
        self.applied += 1;
        let now = self.clock(t);
        self.replicate(t);
        // A script writes one worker ID's record: what the replica must be sent.
        let written = touched(op);
        let before = written
            .filter(|_| self.replica.is_some())
            .and_then(|w| self.state.get(&w).cloned());
        let mut held_ms = 0;
        let reply = match op {
            Op::Contract(call) => Reply::Contract(Ok(self.contract(call, now))),
            Op::Redis(op) => {
                let (value, wait) = self.redis(op, now);
                match value {
                    Err(e) => Reply::Redis(RedisReply::Failed(e)),
                    Ok(RedisReply::Eval { value, .. }) => {
                        // WAIT answers once the replica has the writes, or at its timeout.
                        let reached = self.ship(t, written, before, rng);
                        let acked = wait.map(|(_, wait_ms)| {
                            held_ms = (reached - t).min(wait_ms);
                            u64::from(reached <= t + wait_ms)
                        });
                        if acked == Some(1) {
                            if let Some(r) = self.replica.as_mut() {
                                r.promised_until = r.promised_until.max(reached);
                            }
                        }
                        Reply::Redis(RedisReply::Eval { value, acked })
                    }
                    Ok(other) => Reply::Redis(other),
                }
            }
            Op::Sql(op) => Reply::Sql(self.sql(op, now)),
            Op::Zk { session, op } => Reply::Zk(self.zk.apply(*session, op, now)),
            Op::ZkClose { session } => {
                self.zk.close(*session, now);
                Reply::Zk(ZkReply::Done)
            }
            Op::Etcd(op) => Reply::Etcd(self.etcd.apply(op, now)),
        };
        if let Some(w) = written {
            self.note_mark(w);
        }
        Applied { reply, held_ms }
    }

    fn live(row: &Row, now: u64) -> Option<&str> {
        row.owner.as_deref().filter(|_| row.expires > now)
    }

    /// The registry contract, as `MemoryRegistry` answers it.
    fn contract(&mut self, call: &RegistryCall, now: u64) -> Value {
        match call {
            RegistryCall::Claim {
                worker_id,
                owner,
                ttl_ms,
            } => {
                let e = self.state.entry(*worker_id).or_default();
                if e.owner.is_none() || e.expires <= now || e.owner.as_deref() == Some(owner) {
                    e.owner = Some(owner.clone());
                    e.expires = now + ttl_ms;
                    Value::uint(e.mark.unwrap_or(0))
                } else {
                    Value::Null
                }
            }
            RegistryCall::Renew {
                worker_id,
                owner,
                ttl_ms,
                mark_ms,
                reported_ms,
            } => match self.state.get_mut(worker_id) {
                Some(e) if Self::live(e, now) == Some(owner.as_str()) => {
                    e.expires = now + ttl_ms;
                    let m = e.mark.unwrap_or(0).max(*mark_ms);
                    e.mark = Some(m);
                    e.reported = Some((*reported_ms, now));
                    Value::uint(m)
                }
                Some(e) if e.owner.is_some() => Value::Null,
                _ => Value::Int(-1),
            },
            RegistryCall::Release {
                worker_id,
                owner,
                mark_ms,
            } => match self.state.get_mut(worker_id) {
                Some(e) if Self::live(e, now) == Some(owner.as_str()) => {
                    e.owner = None;
                    e.expires = 0;
                    e.mark = Some(*mark_ms);
                    e.reported = None;
                    Value::Bool(true)
                }
                _ => Value::Bool(false),
            },
            RegistryCall::Peers => self.peers(now, |row, now| Self::live(row, now).is_some()),
        }
    }

    fn peers(&self, now: u64, held: impl Fn(&Row, u64) -> bool) -> Value {
        segflake::lease::peers_answer(self.state.iter().filter_map(|(w, row)| {
            let (reported, at) = row.reported?;
            held(row, now).then(|| (*w as i128, reported as i128, now as i128 - at as i128))
        }))
    }

    /// The core's Redis scripts' effect. Returns the reply and the `WAIT` asked for.
    #[allow(clippy::type_complexity)]
    fn redis(
        &mut self,
        op: &RedisOp,
        now: u64,
    ) -> (Result<RedisReply, String>, Option<(u64, u64)>) {
        let (script, keys, args, wait) = match op {
            RedisOp::Role => {
                let n = u64::from(self.replica.is_some());
                return (Ok(RedisReply::Replicas(n)), None);
            }
            RedisOp::Eval {
                script,
                keys,
                args,
                wait,
            } => (*script, keys, args, *wait),
        };
        let num = |i: usize| args.get(i).and_then(|a| a.parse::<u64>().ok()).unwrap_or(0);
        let eval = |value: Value| Ok(RedisReply::Eval { value, acked: None });
        // An expired worker key is gone.
        let holder = |state: &State, w: u64| {
            state
                .get(&w)
                .and_then(|r| Self::live(r, now).map(str::to_owned))
        };
        let value = match script {
            "claim" => {
                let w = worker_in_key(&keys[0]).expect("a worker key");
                let owner = &args[0];
                let current = holder(&self.state, w);
                if current.is_none() || current.as_deref() == Some(owner.as_str()) {
                    let row = self.state.entry(w).or_default();
                    row.owner = Some(owner.clone());
                    row.expires = now + num(1);
                    Value::uint(row.mark.unwrap_or(0))
                } else {
                    Value::Null
                }
            }
            "renew" => {
                let w = num(4);
                match holder(&self.state, w) {
                    None => Value::Int(-1),
                    Some(h) if h != args[0] => Value::Null,
                    Some(_) => {
                        let row = self.state.get_mut(&w).expect("held");
                        row.expires = now + num(1);
                        let m = row.mark.unwrap_or(0).max(num(2));
                        row.mark = Some(m);
                        row.reported = Some((num(3), now));
                        Value::uint(m)
                    }
                }
            }
            "release" => {
                let w = num(2);
                if holder(&self.state, w).as_deref() != Some(args[0].as_str()) {
                    Value::Int(0)
                } else {
                    let row = self.state.get_mut(&w).expect("held");
                    row.mark = Some(num(1));
                    row.owner = None;
                    row.expires = 0;
                    row.reported = None;
                    Value::Int(1)
                }
            }
            "peers" => self.peers(now, |row, now| Self::live(row, now).is_some()),
            other => return (Err(unknown_request("Redis script", other)), None),
        };
        (eval(value), wait)
    }

    /// The core's SQL statements' effect on `segflake_worker_lease` (the audit table is
    /// not modelled: its rows are never read).
    fn sql(&mut self, op: &SqlOp, now: u64) -> SqlReply {
        let int = |i: usize| match op.params.get(i) {
            Some(Param::Int(v)) => *v as u64,
            _ => 0,
        };
        let text = |i: usize| match op.params.get(i) {
            Some(Param::Text(t)) => t.clone(),
            _ => String::new(),
        };
        let rows = |rows: Vec<Vec<Value>>, affected: u64| SqlReply::Rows { rows, affected };
        let mark_row = |m: Option<i128>| vec![vec![m.map_or(Value::Null, Value::Int)]];
        let s = op.statement;
        // The row's columns: an absent mark column is 0 (NOT NULL DEFAULT 0).
        if s == pg::CLAIM {
            let (w, owner, ttl) = (int(0), text(1), int(2));
            let row = self.state.entry(w).or_insert_with(|| Row {
                mark: Some(0),
                ..Row::default()
            });
            if row.owner.is_none() || row.expires < now || row.owner.as_deref() == Some(&owner) {
                row.owner = Some(owner);
                row.expires = now + ttl;
                return rows(mark_row(Some(row.mark.unwrap_or(0) as i128)), 1);
            }
            return rows(vec![], 0);
        }
        if s == my::ENSURE {
            let w = int(0);
            let created = !self.state.contains_key(&w);
            self.state.entry(w).or_insert_with(|| Row {
                mark: Some(0),
                ..Row::default()
            });
            return rows(vec![], u64::from(created));
        }
        if s == my::CLAIM {
            let (owner, ttl, w, owner2) = (text(0), int(1), int(2), text(3));
            return match self.state.get_mut(&w) {
                Some(row)
                    if row.owner.is_none()
                        || row.expires < now
                        || row.owner.as_deref() == Some(&owner2) =>
                {
                    row.owner = Some(owner);
                    row.expires = now + ttl;
                    rows(vec![], 1)
                }
                _ => rows(vec![], 0),
            };
        }
        if s == my::CLAIMED {
            let (w, owner) = (int(0), text(1));
            return match self.state.get(&w) {
                Some(row) if row.owner.as_deref() == Some(&owner) => {
                    rows(mark_row(Some(row.mark.unwrap_or(0) as i128)), 0)
                }
                _ => rows(vec![], 0),
            };
        }
        let renew = |state: &mut State, ttl: u64, mark: u64, reported: u64, w: u64, owner: &str| {
            match state.get_mut(&w) {
                Some(row) if row.owner.as_deref() == Some(owner) && row.expires > now => {
                    row.expires = now + ttl;
                    row.mark = Some(row.mark.unwrap_or(0).max(mark));
                    row.reported = Some((reported, now));
                    1
                }
                _ => 0,
            }
        };
        if s == pg::RENEW {
            let (ttl, mark, reported, w, owner) = (int(0), int(1), int(2), int(3), text(4));
            if renew(&mut self.state, ttl, mark, reported, w, &owner) == 1 {
                let m = self.state[&w].mark.unwrap_or(0);
                return rows(mark_row(Some(m as i128)), 0);
            }
            let held = self.state.get(&w).is_some_and(|r| r.owner.is_some());
            return rows(mark_row(if held { None } else { Some(-1) }), 0);
        }
        if s == my::RENEW {
            let (ttl, mark, reported, w, owner) = (int(0), int(1), int(2), int(3), text(4));
            let n = renew(&mut self.state, ttl, mark, reported, w, &owner);
            return rows(vec![], n);
        }
        if s == my::RENEWED {
            let (owner, w) = (text(0), int(1));
            let answer = match self.state.get(&w) {
                None => Some(-1),
                Some(row) if row.owner.is_none() => Some(-1),
                Some(row) if row.owner.as_deref() == Some(&owner) && row.expires > now => {
                    Some(row.mark.unwrap_or(0) as i128)
                }
                Some(_) => None,
            };
            return rows(mark_row(answer), 0);
        }
        if s == pg::RELEASE || s == my::RELEASE {
            let (mark, w, owner) = (int(0), int(1), text(2));
            return match self.state.get_mut(&w) {
                Some(row) if row.owner.as_deref() == Some(&owner) => {
                    row.owner = None;
                    row.expires = 0;
                    row.mark = Some(mark);
                    let r = if s == pg::RELEASE {
                        vec![vec![Value::uint(w)]]
                    } else {
                        vec![]
                    };
                    rows(r, 1)
                }
                _ => rows(vec![], 0),
            };
        }
        if s == pg::PEERS || s == my::PEERS {
            let held = |row: &Row, now: u64| row.owner.is_some() && row.expires > now;
            let Value::List(items) = self.peers(now, held) else {
                unreachable!()
            };
            let out = items
                .into_iter()
                .map(|i| match i {
                    Value::List(cols) => cols,
                    _ => unreachable!(),
                })
                .collect();
            return rows(out, 0);
        }
        if s == pg::AUDIT || s == my::AUDIT {
            return rows(vec![], 1);
        }
        SqlReply::Failed(unknown_request("SQL statement", s))
    }

    /// Data lost: every record, or one worker ID's (`Some`), or only its mark (Redis: the
    /// mark key; SQL has one row, lost whole; ZooKeeper: the forever node, else with the
    /// live node; etcd: the mark key, else with the worker and report keys).
    pub fn lose(&mut self, worker: Option<u64>, mark_only: bool) {
        match self.kind {
            Kind::ZooKeeper => return self.zk.lose(worker, mark_only),
            Kind::Etcd => return self.etcd.lose(worker, mark_only),
            _ => {}
        }
        match worker {
            None => self.state.clear(),
            Some(w) if mark_only && self.kind == Kind::Redis => {
                if let Some(r) = self.state.get_mut(&w) {
                    r.mark = None;
                }
            }
            Some(w) => {
                self.state.remove(&w);
            }
        }
    }
}

/// The worker ID a request writes, if any.
fn touched(op: &Op) -> Option<u64> {
    match op {
        Op::Contract(call) => worker_of(call),
        Op::Redis(RedisOp::Eval { keys, .. }) => keys.first().and_then(|k| worker_in_key(k)),
        Op::Redis(RedisOp::Role) => None,
        Op::Zk { op, .. } => crate::zookeeper::touched(op),
        Op::ZkClose { .. } => None,
        Op::Etcd(op) => crate::etcd::touched(op),
        Op::Sql(op) => {
            let s = op.statement;
            let at = if s == pg::CLAIM || s == my::ENSURE || s == my::CLAIMED {
                0
            } else if s == my::RENEWED || s == pg::RELEASE || s == my::RELEASE {
                1
            } else if s == my::CLAIM {
                2
            } else if s == pg::RENEW || s == my::RENEW {
                3
            } else {
                return None;
            };
            match op.params.get(at) {
                Some(Param::Int(w)) => Some(*w as u64),
                _ => None,
            }
        }
    }
}

fn worker_of(call: &RegistryCall) -> Option<u64> {
    match call {
        RegistryCall::Claim { worker_id, .. }
        | RegistryCall::Renew { worker_id, .. }
        | RegistryCall::Release { worker_id, .. } => Some(*worker_id),
        RegistryCall::Peers => None,
    }
}

fn worker_in_key(key: &str) -> Option<u64> {
    key.rsplit(':').next()?.parse().ok()
}

/// A request the model does not know: the simulation must be taught it first.
pub fn unknown_request(what: &str, which: &str) -> String {
    format!("SIMULATION MODEL: unknown {what} {which:?}: teach tests/simulation/registry.rs")
}
