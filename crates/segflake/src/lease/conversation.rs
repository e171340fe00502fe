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
