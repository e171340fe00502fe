//! Registry protocols as conversations: a protocol decides every request a registry call
//! sends and what every reply means; an adapter (in any language) only performs the
//! requests and hands back the replies.
//!
//! A protocol is written as straight-line code over [`Script::ask`]. It is deterministic:
//! given the same memory, call and replies, it sends the same requests. A conversation runs
//! it over the replies received so far; the first request without a reply stops the run and
//! is handed to the adapter, and the next run repeats the exchange up to there. The
//! protocol's memory changes only when a run ends with an answer, so a conversation the
//! adapter abandons (a timeout) leaves no trace.

use crate::error::quoted;
use crate::host::Value;
use crate::lease::RegistryCall;

/// A registry protocol: ZooKeeper's ([`super::zookeeper`]) and etcd's ([`super::etcd`]).
pub trait Protocol: Sized {
    /// A request the adapter performs.
    type Op: Clone + PartialEq + std::fmt::Debug;
    /// What the server answered.
    type Reply: Clone;
    /// What the protocol remembers between calls.
    type Memory: Clone;
    /// What the adapter tells a call besides its arguments (a session, the time).
    type Context: Clone;

    fn memory(&mut self) -> &mut Self::Memory;

    /// The conversation in progress of [`start`](Protocol::start).
    fn current(&mut self) -> &mut Option<Conversation<Self>>;

    /// A reply from its host value (an unreadable one becomes a failure that says why).
    fn reply_of(value: &Value) -> Self::Reply;

    /// Answers `call`, asking `script` for each reply.
    fn run(
        &self,
        memory: &mut Self::Memory,
        context: &Self::Context,
        call: &RegistryCall,
        script: &mut Script<'_, Self::Op, Self::Reply>,
    ) -> Flow<Value, Self::Op>;

    /// A conversation that answers `call`.
    fn begin(&self, call: RegistryCall, context: Self::Context) -> Conversation<Self> {
        Conversation {
            call,
            context,
            asked: Vec::new(),
            replies: Vec::new(),
        }
    }

    /// For bindings, which keep one object: begins the conversation for `call` and returns
    /// its first step; [`resume`](Protocol::resume) hands in each reply. A conversation left
    /// unfinished is dropped by the next `start`.
    fn start(&mut self, call: RegistryCall, context: Self::Context) -> Step<Self::Op> {
        let conv = self.begin(call, context);
        self.advance(conv)
    }

    /// The reply to the request of the conversation in progress, and its next step.
    fn resume(&mut self, reply: Self::Reply) -> Step<Self::Op> {
        let Some(mut conv) = self.current().take() else {
            return Step::Answer(Err(
                "no registry conversation is in progress: start one first".into(),
            ));
        };
        conv.reply(reply);
        self.advance(conv)
    }

    /// Answers `call`, performing each request with `perform`: the whole loop of a blocking
    /// adapter.
    fn converse(
        &mut self,
        call: RegistryCall,
        context: Self::Context,
        mut perform: impl FnMut(Self::Op) -> Self::Reply,
    ) -> Result<Value, String> {
        let mut step = self.start(call, context);
        loop {
            match step {
                Step::Op(op) => step = self.resume(perform(op)),
                Step::Answer(answer) => return answer,
            }
        }
    }

    /// [`start`](Protocol::start) with the call as its name and arguments in call order,
    /// and the step as a host value ([`Step::to_value`]).
    fn start_value(&mut self, name: &str, args: &[Value], context: Self::Context) -> Value
    where
        Self::Op: Request,
    {
        match RegistryCall::from_args(name, args) {
            Ok(call) => self.start(call, context).to_value(),
            Err(e) => Step::<Self::Op>::Answer(Err(e)).to_value(),
        }
    }

    /// [`resume`](Protocol::resume) with the reply as a host value, and the step as one.
    fn resume_value(&mut self, reply: &Value) -> Value
    where
        Self::Op: Request,
    {
        let reply = Self::reply_of(reply);
        self.resume(reply).to_value()
    }

    #[doc(hidden)]
    fn advance(&mut self, mut conv: Conversation<Self>) -> Step<Self::Op> {
        let step = conv.next(self);
        if matches!(step, Step::Op(_)) {
            *self.current() = Some(conv);
        }
        step
    }
}

/// What the adapter does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<Op> {
    /// Perform this request and hand back its reply.
    Op(Op),
    /// The registry call's answer (as the [`Registry`](crate::Registry) contract has it),
    /// or why it failed.
    Answer(Result<Value, String>),
}

/// A protocol's request, as bindings and the shared vectors spell it.
pub trait Request {
    /// The request as a host value: `{op: NAME, ...}`.
    fn to_value(&self) -> Value;
}

impl<Op: Request> Step<Op> {
    /// `{op: ...}` (a request), `{answer: VALUE}` or `{error: TEXT}`.
    pub fn to_value(&self) -> Value {
        match self {
            Step::Op(op) => op.to_value(),
            Step::Answer(Ok(v)) => Value::Map(vec![("answer".into(), v.clone())]),
            Step::Answer(Err(e)) => Value::Map(vec![("error".into(), Value::Str(e.clone()))]),
        }
    }
}

/// One registry call's exchange of requests and replies.
#[derive(Debug, Clone)]
pub struct Conversation<P: Protocol> {
    call: RegistryCall,
    context: P::Context,
    asked: Vec<P::Op>,
    replies: Vec<P::Reply>,
}

impl<P: Protocol> Conversation<P> {
    /// The next request, or the answer. Call again after each
    /// [`reply`](Conversation::reply); after an answer the conversation is over.
    pub fn next(&mut self, protocol: &mut P) -> Step<P::Op> {
        let mut memory = protocol.memory().clone();
        let mut script = Script {
            replies: &self.replies,
            asked: &self.asked,
            at: 0,
        };
        match protocol.run(&mut memory, &self.context, &self.call, &mut script) {
            Ok(answer) => {
                *protocol.memory() = memory;
                Step::Answer(Ok(answer))
            }
            Err(Stop::Ask(op)) => {
                self.asked.push(op.clone());
                Step::Op(op)
            }
            Err(Stop::Fail(why)) => Step::Answer(Err(why)),
        }
    }

    /// The reply to the request [`next`](Conversation::next) returned.
    pub fn reply(&mut self, reply: P::Reply) {
        if self.replies.len() < self.asked.len() {
            self.replies.push(reply);
        }
    }

    /// The call this conversation answers.
    pub fn call(&self) -> &RegistryCall {
        &self.call
    }
}

/// Why a run of a protocol stopped before its answer.
pub enum Stop<Op> {
    /// It needs the reply to this request.
    Ask(Op),
    /// The call failed.
    Fail(String),
}

/// A run's result.
pub type Flow<T, Op> = Result<T, Stop<Op>>;

/// The replies a run reads, in order.
pub struct Script<'a, Op, Reply> {
    replies: &'a [Reply],
    asked: &'a [Op],
    at: usize,
}

impl<Op: Clone + PartialEq + std::fmt::Debug, Reply: Clone> Script<'_, Op, Reply> {
    /// The reply to `op`, or a stop that hands `op` to the adapter.
    pub fn ask(&mut self, op: Op) -> Flow<Reply, Op> {
        let Some(reply) = self.replies.get(self.at) else {
            return Err(Stop::Ask(op));
        };
        debug_assert_eq!(self.asked.get(self.at), Some(&op), "a replayed run differs");
        self.at += 1;
        Ok(reply.clone())
    }
}

/// Why a run stops when `adapter` answered `op` with a reply of another kind (replies are
/// read by their keys, so an adapter can answer one request with another's reply): the
/// request as JSON, and the kind of reply that came.
pub(crate) fn unexpected_reply<Op: Request>(adapter: &str, op: &Op, reply_kind: &str) -> String {
    format!(
        "the {adapter} adapter answered {} with a {reply_kind} reply",
        op.to_value().to_json()
    )
}

/// Any registry protocol, configured from host values: what bindings expose as one class.
#[derive(Debug, Clone)]
pub enum RegistryProtocol {
    ZooKeeper(super::zookeeper::ZooKeeperProtocol),
    Etcd(super::etcd::EtcdProtocol),
    Redis(super::redis::RedisProtocol),
    Sql(super::sql::SqlProtocol),
}

/// The kinds [`RegistryProtocol::new`] takes.
pub const PROTOCOL_KINDS: &str = "zookeeper, etcd, redis, postgres, mysql";

impl RegistryProtocol {
    /// The protocol of `kind` with `config`, a map: `zookeeper` `{root, identity}`; `etcd`
    /// `{prefix?}`; `redis` `{prefix?, wait_ms}`; `postgres` and `mysql` `{host_name}`.
    pub fn new(kind: &str, config: &Value) -> Result<RegistryProtocol, String> {
        let empty = Vec::new();
        let pairs = match config {
            Value::Map(pairs) => pairs,
            Value::Null => &empty,
            other => {
                return Err(format!(
                    "the {kind} protocol's config is {}, not an object",
                    other.to_json()
                ))
            }
        };
        let text = |key: &str, default: Option<&str>| -> Result<String, String> {
            match pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v) {
                Some(Value::Str(s)) => Ok(s.clone()),
                None | Some(Value::Null) => default
                    .map(str::to_string)
                    .ok_or_else(|| format!("the {kind} protocol needs {key}")),
                Some(other) => Err(format!("{key} is {}, not a string", other.to_json())),
            }
        };
        use super::sql::Dialect;
        Ok(match kind {
            "zookeeper" => RegistryProtocol::ZooKeeper(super::zookeeper::ZooKeeperProtocol::new(
                &text("root", Some(super::zookeeper::DEFAULT_ROOT))?,
                &text("identity", None)?,
            )?),
            "etcd" => {
                RegistryProtocol::Etcd(super::etcd::EtcdProtocol::new(&text("prefix", Some(""))?))
            }
            "redis" => {
                let wait_ms = match pairs.iter().find(|(k, _)| k == "wait_ms").map(|(_, v)| v) {
                    Some(v) => v.as_u64().ok_or_else(|| {
                        format!("wait_ms is {}, not a count of milliseconds", v.to_json())
                    })?,
                    None => {
                        return Err(
                            "the redis protocol needs wait_ms (half the registry timeout)".into(),
                        )
                    }
                };
                let replicas = match pairs.iter().find(|(k, _)| k == "replicas").map(|(_, v)| v) {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(v.as_u64().ok_or_else(|| {
                        format!("replicas is {}, not a number of replicas", v.to_json())
                    })?),
                };
                RegistryProtocol::Redis(
                    super::redis::RedisProtocol::new(&text("prefix", Some(""))?, wait_ms)
                        .with_replicas(replicas),
                )
            }
            "postgres" | "mysql" => {
                let dialect = if kind == "postgres" {
                    Dialect::Postgres
                } else {
                    Dialect::MySql
                };
                RegistryProtocol::Sql(super::sql::SqlProtocol::new(
                    dialect,
                    &text("host_name", None)?,
                ))
            }
            other => {
                return Err(format!(
                    "no registry protocol {other}; the kinds are {PROTOCOL_KINDS}",
                    other = quoted(other)
                ))
            }
        })
    }

    /// The first step of the registry call `name` with `args` in call order, as a host value;
    /// `context` is ZooKeeper's `{session, now_ms}` (ignored by the others).
    pub fn start_value(&mut self, name: &str, args: &[Value], context: &Value) -> Value {
        match self {
            RegistryProtocol::ZooKeeper(p) => {
                let field = |key: &str| match context {
                    Value::Map(pairs) => {
                        pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
                    }
                    _ => None,
                };
                let session = match field("session") {
                    Some(Value::Int(i)) => i64::try_from(i).ok(),
                    _ => None,
                };
                let (Some(session), Some(now_ms)) =
                    (session, field("now_ms").and_then(|v| v.as_u64()))
                else {
                    return Value::Map(vec![(
                        "error".into(),
                        Value::Str(format!(
                            "a ZooKeeper call needs the context {{session, now_ms}}, not {}",
                            context.to_json()
                        )),
                    )]);
                };
                p.start_value(name, args, super::zookeeper::ZkContext { session, now_ms })
            }
            RegistryProtocol::Etcd(p) => p.start_value(name, args, ()),
            RegistryProtocol::Redis(p) => p.start_value(name, args, ()),
            RegistryProtocol::Sql(p) => p.start_value(name, args, ()),
        }
    }

    /// The next step after `reply`, the answer to the last request.
    pub fn resume_value(&mut self, reply: &Value) -> Value {
        match self {
            RegistryProtocol::ZooKeeper(p) => p.resume_value(reply),
            RegistryProtocol::Etcd(p) => p.resume_value(reply),
            RegistryProtocol::Redis(p) => p.resume_value(reply),
            RegistryProtocol::Sql(p) => p.resume_value(reply),
        }
    }

    /// What an adapter may need to know: ZooKeeper `{identity, root, worker_id}`, etcd
    /// `{prefix, leases}` (the etcd leases held now, to revoke at close), Redis `{}`, SQL
    /// `{schema}` (to run on each new connection).
    pub fn describe(&self) -> Value {
        let text = |s: &str| Value::Str(s.to_string());
        let pairs: Vec<(&str, Value)> = match self {
            RegistryProtocol::ZooKeeper(p) => vec![
                ("identity", Value::Str(p.identity())),
                ("root", text(p.root())),
                ("worker_id", Value::opt_uint(p.worker_id())),
            ],
            RegistryProtocol::Etcd(p) => vec![
                ("prefix", text(p.prefix())),
                (
                    "leases",
                    Value::List(p.leases().into_iter().map(Value::Str).collect()),
                ),
            ],
            RegistryProtocol::Redis(_) => vec![],
            RegistryProtocol::Sql(p) => vec![("schema", text(p.schema()))],
        };
        Value::Map(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
}
