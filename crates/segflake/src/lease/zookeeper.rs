//! The ZooKeeper registry's protocol in Leaf's layout, written once: every language's
//! adapter performs the operations a [`ZkConversation`] asks for and hands back what the
//! server answered; which nodes to read and write, with which data and versions, and what
//! the answers mean are decided here.
//!
//! # The layout
//! * `{root}/forever/{ip}:{port}-{seq}`: the identity's persistent sequential node, Leaf's
//!   own. `seq` is the worker ID; its data is Leaf's `{"ip","port","timestamp"}` JSON, and
//!   the mark is `timestamp + 3 s` (a Leaf process may have issued IDs up to one report
//!   period past the timestamp it last wrote). The lowest `seq` of the identity wins when
//!   several processes of one identity created nodes at once.
//! * `{root}/leaf_temporary/{worker_id}`: an ephemeral node that holds the lease for one
//!   session, with `{"owner","reported_ms"}`.
//!
//! # The calls
//! * `claim` never writes the forever node (a Leaf process may still report into it). It
//!   answers `{worker_id, mark_ms}`, plus the forever node's `identity`, `version` and
//!   `age_ms` (how long before this claim it was last written, by the server's clock) unless
//!   this protocol created or last wrote that node itself: the lease engine claims again one
//!   Leaf report period later and refuses to start if the version moved. The claim that
//!   created the identity's node answers mark 0. A claim of a worker ID other than the
//!   identity's, once one was answered, answers `null` (an identity has one worker ID).
//! * `renew` writes the report into the live node and the mark into the forever node in one
//!   multi-operation, each at the version last seen; it answers the stored mark, `null`
//!   when another session holds the live node, and `-1` when the live node or the forever
//!   node is gone (the ensemble lost them, or the session expired): the registry lost the
//!   worker ID's record, and IDs stop at once.
//! * `release` raises the forever node's mark to the release mark and deletes the live
//!   node in one multi-operation; a hold that never renewed (no ID was issued) only deletes
//!   its live node.
//! * `peers` lists the live nodes' reports, and the forever nodes of identities without a
//!   live node (Leaf processes), written within 10 s of the newest.
//!
//! # Driving a conversation
//! ```
//! use segflake::lease::conversation::Protocol;
//! use segflake::lease::zookeeper::{ZkContext, ZkOp, ZkReply, ZkStep, ZooKeeperProtocol};
//! use segflake::{RegistryCall, Value};
//!
//! fn call(
//!     protocol: &mut ZooKeeperProtocol,
//!     call: RegistryCall,
//!     (session, now_ms): (i64, u64),
//!     mut perform: impl FnMut(ZkOp) -> ZkReply,
//! ) -> Result<Value, String> {
//!     let mut conv = protocol.begin(call, ZkContext { session, now_ms });
//!     loop {
//!         match conv.next(protocol) {
//!             ZkStep::Op(op) => conv.reply(perform(op)), // the adapter's client call
//!             ZkStep::Answer(answer) => return answer,   // the registry call's answer
//!         }
//!     }
//! }
//! ```
//! A conversation changes the protocol's memory (the identity's node, this session's holds)
//! only when it ends with an answer; an adapter that gives up (a timeout) drops it. Run one
//! conversation at a time per protocol. `session_id` is the client's current session: a
//! hold taken in another session is not held (its ephemeral node went with that session).

use std::collections::HashMap;

use crate::error::quoted;
use crate::host::{json_string, Value};
use crate::lease::conversation::{
    self, unexpected_reply, Conversation, Protocol, Request, Script, Step,
};
use crate::lease::RegistryCall;

/// A Leaf process may have issued IDs up to its reported timestamp plus its report
/// interval.
pub const LEAF_REPORT_MS: u64 = crate::lease::LEAF_REPORT_MS;

/// Forever nodes written more than this before the newest are left out of `peers`.
const PEER_WINDOW_MS: i64 = 10_000;

/// A renewal or release retries its multi-operation this many times when the forever node
/// changed between its read and its write.
const WRITE_ATTEMPTS: usize = 5;

/// A znode's metadata, as every client library reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ZkStat {
    pub version: i32,
    /// Creation and last-modification times, milliseconds by the server's clock.
    pub ctime: i64,
    pub mtime: i64,
    /// The session that owns an ephemeral node, 0 for a persistent one.
    pub ephemeral_owner: i64,
}

/// How a node is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZkMode {
    Persistent,
    PersistentSequential,
    Ephemeral,
}

/// One ZooKeeper request. Every node is created with the open ACL (`world:anyone`, all
/// permissions), as Leaf creates them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZkOp {
    /// Create `path` and any missing parents as persistent nodes with no data; a node that
    /// exists already is fine. Reply [`ZkReply::Done`].
    Mkdir { path: String },
    /// Create one node. Reply [`ZkReply::Created`] with the path created (a sequential node's
    /// path ends in its ten-digit sequence number).
    Create {
        path: String,
        data: String,
        mode: ZkMode,
    },
    /// Reply [`ZkReply::Stat`]: the node's stat, or none when it does not exist.
    Exists { path: String },
    /// Reply [`ZkReply::Data`].
    Get { path: String },
    /// Reply [`ZkReply::Children`]: the child names (not paths).
    Children { path: String },
    /// Set the data if the node is at `version`. Reply [`ZkReply::Stat`] with the new stat.
    Set {
        path: String,
        data: String,
        version: i32,
    },
    /// Delete the node if it is at `version`. Reply [`ZkReply::Done`].
    Delete { path: String, version: i32 },
    /// The operations (only `Set` and `Delete`) as one transaction: all or none. Reply
    /// [`ZkReply::Done`], or [`ZkReply::Failed`] with the index of the operation that failed.
    Multi(Vec<ZkOp>),
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZkError {
    NoNode,
    NodeExists,
    BadVersion,
    /// Anything else (connection loss, no authorization, ...), as the client described it.
    Other(String),
}

/// The server's answer to a [`ZkOp`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZkReply {
    Done,
    Created(String),
    Stat(Option<ZkStat>),
    /// The node's data (as text; bytes that are not UTF-8 are replaced) and stat.
    Data(String, ZkStat),
    Children(Vec<String>),
    /// The request failed; `index` is the failed operation of a `Multi`, else 0.
    Failed {
        index: usize,
        error: ZkError,
    },
}

impl ZkReply {
    /// A failed single request.
    pub fn error(error: ZkError) -> ZkReply {
        ZkReply::Failed { index: 0, error }
    }

    /// The reply's kind, as the key the adapter gave it under (`null` for a bare success).
    pub fn kind(&self) -> &'static str {
        match self {
            ZkReply::Done => "null",
            ZkReply::Created(_) => "created",
            ZkReply::Stat(_) => "stat",
            ZkReply::Data(..) => "data",
            ZkReply::Children(_) => "children",
            ZkReply::Failed { .. } => "error",
        }
    }
}

/// What the adapter does next: perform a request, or return the call's answer.
pub type ZkStep = Step<ZkOp>;

/// One registry call's exchange of requests and replies.
pub type ZkConversation = Conversation<ZooKeeperProtocol>;

/// What a ZooKeeper call needs besides its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZkContext {
    /// The client's current session: a hold taken in another session is not held (its
    /// ephemeral node went with that session).
    pub session: i64,
    /// The wall clock, written as the timestamp of a forever node created now.
    pub now_ms: u64,
}

/// The identity's forever node.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    worker_id: u64,
    path: String,
}

/// This session's hold on a worker ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hold {
    /// The session that created the live node.
    session: i64,
    /// The live node's version.
    version: i32,
    /// A renewal wrote a mark since the claim (no ID is issued before one did).
    renewed: bool,
}

/// What the protocol remembers between calls.
#[derive(Debug, Clone, Default)]
pub struct Memory {
    node: Option<Node>,
    /// The forever node was created here and holds no mark yet: nobody issued with its
    /// worker ID. Cleared once a renewal or release wrote a mark into it, or another
    /// holder was found on its worker ID.
    created: bool,
    /// A claim was answered: claims of other worker IDs are refused.
    attempted: bool,
    /// The forever node's version after this protocol last wrote it: a node still at that
    /// version was last written here, by no Leaf process.
    wrote: Option<(String, i32)>,
    held: HashMap<u64, Hold>,
}

/// The ZooKeeper registry's protocol for one identity under one root.
#[derive(Debug, Clone)]
pub struct ZooKeeperProtocol {
    root: String,
    ip: String,
    port: String,
    memory: Memory,
    /// The conversation in progress of [`start`](Protocol::start).
    current: Option<ZkConversation>,
}

/// Where a `zk://` URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZooKeeperUrl {
    /// `HOST:PORT[,HOST:PORT]`, as ZooKeeper clients take it.
    pub hosts: String,
    pub root: String,
    /// The URL's `identity=IP:PORT`, if any.
    pub identity: Option<String>,
    pub session_timeout_ms: u64,
}

/// The default root: Leaf's `/snowflake/{leaf.name}` with the name `segflake`.
pub const DEFAULT_ROOT: &str = "/snowflake/segflake";
/// The default session timeout.
pub const DEFAULT_SESSION_TIMEOUT_MS: u64 = 10_000;

const URL_GRAMMAR: &str = "zk://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N]";

impl ZooKeeperUrl {
    /// Reads `zk://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N]`
    /// (the root defaults to [`DEFAULT_ROOT`], the session timeout to 10 s, 1..=3600000).
    pub fn parse(url: &str) -> Result<ZooKeeperUrl, String> {
        let bad = |why: String| format!("{url}: {why}; allowed: {URL_GRAMMAR}", url = quoted(url));
        let rest = url
            .strip_prefix("zk://")
            .ok_or_else(|| bad("not a zk:// URL".into()))?;
        let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (hosts, root) = location
            .find('/')
            .and_then(|i| location.split_at_checked(i))
            .unwrap_or((location, DEFAULT_ROOT));
        if hosts.is_empty() {
            return Err(bad("no HOST:PORT".into()));
        }
        check_root(root).map_err(bad)?;
        let mut parsed = ZooKeeperUrl {
            hosts: hosts.to_string(),
            root: root.to_string(),
            identity: None,
            session_timeout_ms: DEFAULT_SESSION_TIMEOUT_MS,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("identity", v)) => {
                    parse_identity(v).map_err(bad)?;
                    parsed.identity = Some(v.to_string());
                }
                Some(("session_timeout_ms", v)) => {
                    parsed.session_timeout_ms = v
                        .parse::<u64>()
                        .ok()
                        .filter(|ms| (1..=3_600_000).contains(ms))
                        .ok_or_else(|| {
                            bad(format!(
                                "session_timeout_ms {v} is not 1..=3600000",
                                v = quoted(v)
                            ))
                        })?
                }
                _ => {
                    return Err(bad(format!(
                        "unknown parameter {pair}",
                        pair = quoted(pair)
                    )))
                }
            }
        }
        Ok(parsed)
    }
}

fn check_root(root: &str) -> Result<(), String> {
    if !root.starts_with('/')
        || root.ends_with('/')
        || root.as_bytes().windows(2).any(|w| w == b"//")
    {
        return Err(format!(
            "root {root} is not an absolute znode path such as /snowflake/leaf-name",
            root = quoted(root)
        ));
    }
    Ok(())
}

/// `IP:PORT` (Leaf's node address) as its two parts.
pub fn parse_identity(identity: &str) -> Result<(String, String), String> {
    match identity.rsplit_once(':') {
        Some((ip, port))
            if !ip.is_empty()
                && !ip.contains(['/', '-', '"', '\\'])
                && port.parse::<u16>().is_ok() =>
        {
            Ok((ip.to_string(), port.to_string()))
        }
        _ => Err(format!(
            "identity {identity} is not IP:PORT (Leaf's node address, e.g. 10.0.0.7:8080)",
            identity = quoted(identity)
        )),
    }
}

/// The identity when none is given: this host's outbound IPv4 address (`default_ip`, found
/// by the adapter as the local address of a UDP socket connected to 10.255.255.255:1, no
/// packet sent; 127.0.0.1 when there is none) and port 0.
pub fn default_identity(default_ip: Option<&str>) -> String {
    format!("{}:0", default_ip.unwrap_or("127.0.0.1"))
}

impl ZooKeeperProtocol {
    /// The protocol for `identity` (`IP:PORT`) under `root` (Leaf's `/snowflake/{name}`).
    pub fn new(root: &str, identity: &str) -> Result<ZooKeeperProtocol, String> {
        check_root(root)?;
        let (ip, port) = parse_identity(identity)?;
        Ok(ZooKeeperProtocol {
            root: root.to_string(),
            ip,
            port,
            memory: Memory::default(),
            current: None,
        })
    }

    /// `IP:PORT`.
    pub fn identity(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    /// The identity's worker ID, once a claim found it.
    pub fn worker_id(&self) -> Option<u64> {
        self.memory.node.as_ref().map(|n| n.worker_id)
    }

    /// Leaf's `Endpoint` JSON, byte for byte.
    fn leaf_json(&self, timestamp: u64) -> String {
        format!(
            "{{\"ip\":\"{}\",\"port\":\"{}\",\"timestamp\":{timestamp}}}",
            self.ip, self.port
        )
    }

    fn live(&self, worker_id: u64) -> String {
        format!("{}/leaf_temporary/{worker_id}", self.root)
    }

    fn forever(&self) -> String {
        format!("{}/forever", self.root)
    }
}

type Flow<T> = conversation::Flow<T, ZkOp>;
type Stop = conversation::Stop<ZkOp>;

impl Protocol for ZooKeeperProtocol {
    type Op = ZkOp;
    type Reply = ZkReply;
    type Memory = Memory;
    type Context = ZkContext;

    fn memory(&mut self) -> &mut Memory {
        &mut self.memory
    }

    fn current(&mut self) -> &mut Option<ZkConversation> {
        &mut self.current
    }

    fn reply_of(value: &Value) -> ZkReply {
        ZkReply::from_value(value)
    }

    fn run(
        &self,
        memory: &mut Memory,
        context: &ZkContext,
        call: &RegistryCall,
        script: &mut Script<'_, ZkOp, ZkReply>,
    ) -> Flow<Value> {
        Run {
            p: self,
            m: memory,
            session: context.session,
            now_ms: context.now_ms,
            script,
        }
        .call(call)
    }
}

/// One run of the protocol over the replies received so far.
struct Run<'a, 's> {
    p: &'a ZooKeeperProtocol,
    m: &'a mut Memory,
    session: i64,
    now_ms: u64,
    script: &'a mut Script<'s, ZkOp, ZkReply>,
}

fn failed(path: &str, e: &ZkError) -> Stop {
    let what = match e {
        ZkError::NoNode => "no such node".to_string(),
        ZkError::NodeExists => "the node exists".to_string(),
        ZkError::BadVersion => "the node's version changed".to_string(),
        ZkError::Other(text) => text.clone(),
    };
    Stop::Fail(format!("{path}: {what}"))
}

fn unexpected(op: &ZkOp, reply: &ZkReply) -> Stop {
    Stop::Fail(unexpected_reply("ZooKeeper", op, reply.kind()))
}

impl Run<'_, '_> {
    fn ask(&mut self, op: ZkOp) -> Flow<ZkReply> {
        self.script.ask(op)
    }

    fn mkdir(&mut self, path: String) -> Flow<()> {
        let op = ZkOp::Mkdir { path: path.clone() };
        match self.ask(op.clone())? {
            ZkReply::Done
            | ZkReply::Failed {
                error: ZkError::NodeExists,
                ..
            } => Ok(()),
            ZkReply::Failed { error, .. } => Err(failed(&path, &error)),
            other => Err(unexpected(&op, &other)),
        }
    }

    fn exists(&mut self, path: &str) -> Flow<Option<ZkStat>> {
        let op = ZkOp::Exists { path: path.into() };
        match self.ask(op.clone())? {
            ZkReply::Stat(stat) => Ok(stat),
            ZkReply::Failed {
                error: ZkError::NoNode,
                ..
            } => Ok(None),
            ZkReply::Failed { error, .. } => Err(failed(path, &error)),
            other => Err(unexpected(&op, &other)),
        }
    }

    /// The node's data and stat, `Ok(None)` when it does not exist.
    fn get(&mut self, path: &str) -> Flow<Option<(String, ZkStat)>> {
        let op = ZkOp::Get { path: path.into() };
        match self.ask(op.clone())? {
            ZkReply::Data(data, stat) => Ok(Some((data, stat))),
            ZkReply::Failed {
                error: ZkError::NoNode,
                ..
            } => Ok(None),
            ZkReply::Failed { error, .. } => Err(failed(path, &error)),
            other => Err(unexpected(&op, &other)),
        }
    }

    /// The child names; none when the node does not exist.
    fn children(&mut self, path: &str) -> Flow<Vec<String>> {
        let op = ZkOp::Children { path: path.into() };
        match self.ask(op.clone())? {
            ZkReply::Children(names) => Ok(names),
            ZkReply::Failed {
                error: ZkError::NoNode,
                ..
            } => Ok(Vec::new()),
            ZkReply::Failed { error, .. } => Err(failed(path, &error)),
            other => Err(unexpected(&op, &other)),
        }
    }

    /// The mark in a forever node (Leaf's reported timestamp + its report interval) and the
    /// node's stat; `Ok(None)` when the node is gone.
    fn mark_of(&mut self, path: &str) -> Flow<Option<(u64, ZkStat)>> {
        let Some((data, stat)) = self.get(path)? else {
            return Ok(None);
        };
        let timestamp = json_u64(&data, "timestamp").ok_or_else(|| {
            let shown: String = data.chars().take(100).collect();
            Stop::Fail(format!(
                "{path} holds {shown}, not Leaf's {{ip, port, timestamp}} JSON",
                shown = quoted(&shown)
            ))
        })?;
        Ok(Some((timestamp.saturating_add(LEAF_REPORT_MS), stat)))
    }

    /// The identity's forever nodes, lowest sequence first.
    fn identity_nodes(&mut self, forever: &str) -> Flow<Vec<Node>> {
        let identity = self.p.identity();
        let mut mine: Vec<Node> = self
            .children(forever)?
            .into_iter()
            .filter_map(|name| {
                let (ident, seq) = name.rsplit_once('-')?;
                (ident == identity).then_some(())?;
                Some(Node {
                    worker_id: seq.parse().ok()?,
                    path: format!("{forever}/{name}"),
                })
            })
            .collect();
        crate::lease::sort_by_key(&mut mine, |n| n.worker_id);
        Ok(mine)
    }

    /// The identity's forever node: the one found before while it exists, else the lowest
    /// of the identity's nodes, else one created now.
    fn resolve(&mut self) -> Flow<Node> {
        if let Some(node) = self.m.node.clone() {
            if self.exists(&node.path)?.is_some() {
                return Ok(node);
            }
            // The node is gone (the ensemble lost its data, or an operator removed it):
            // find or create the identity's node again.
            *self.m = Memory {
                held: std::mem::take(&mut self.m.held),
                ..Memory::default()
            };
        }
        let forever = self.p.forever();
        self.mkdir(forever.clone())?;
        let mut mine = self.identity_nodes(&forever)?;
        if mine.is_empty() {
            let prefix = format!("{forever}/{}-", self.p.identity());
            let op = ZkOp::Create {
                path: prefix.clone(),
                data: self.p.leaf_json(self.now_ms),
                mode: ZkMode::PersistentSequential,
            };
            let created = match self.ask(op.clone())? {
                ZkReply::Created(path) => path,
                ZkReply::Failed { error, .. } => return Err(failed(&prefix, &error)),
                other => return Err(unexpected(&op, &other)),
            };
            mine = self.identity_nodes(&forever)?;
            if mine.first().map(|n| &n.path) == Some(&created) {
                self.m.created = true;
            } else {
                // Another process of this identity created one first: share its worker ID
                // (the live node lets one of them hold it) and drop the unused one. Its
                // deletion may fail; the node is then only an unused number.
                let op = ZkOp::Delete {
                    path: created,
                    version: 0,
                };
                self.ask(op)?;
            }
        }
        let node = mine
            .into_iter()
            .next()
            .ok_or_else(|| Stop::Fail("the identity's forever node vanished".into()))?;
        self.m.node = Some(node.clone());
        Ok(node)
    }

    fn call(&mut self, call: &RegistryCall) -> Flow<Value> {
        match call {
            RegistryCall::Claim {
                worker_id, owner, ..
            } => self.claim(*worker_id, owner),
            RegistryCall::Renew {
                worker_id,
                owner,
                mark_ms,
                reported_ms,
                ..
            } => self.renew(*worker_id, owner, *mark_ms, *reported_ms),
            RegistryCall::Release {
                worker_id, mark_ms, ..
            } => self.release(*worker_id, *mark_ms),
            RegistryCall::Peers => self.peers(),
        }
    }

    fn claim(&mut self, worker_id: u64, owner: &str) -> Flow<Value> {
        let node = self.resolve()?;
        if worker_id != node.worker_id && self.m.attempted {
            return Ok(Value::Null);
        }
        self.m.attempted = true;
        let live = self.p.live(node.worker_id);
        let data = live_json(owner, 0);
        self.mkdir(format!("{}/leaf_temporary", self.p.root))?;
        let create = ZkOp::Create {
            path: live.clone(),
            data: data.clone(),
            mode: ZkMode::Ephemeral,
        };
        // The live node's stat after this claim's write to it: its version, and the
        // server's time of the write.
        let written = match self.ask(create.clone())? {
            ZkReply::Created(_) => match self.exists(&live)? {
                Some(stat) if stat.ephemeral_owner == self.session => stat,
                // Gone or replaced at once (its session expired meanwhile): not held.
                _ => return Ok(Value::Null),
            },
            ZkReply::Failed {
                error: ZkError::NodeExists,
                ..
            } => {
                let Some((raw, stat)) = self.get(&live)? else {
                    return Ok(Value::Null);
                };
                if json_string_field(&raw, "owner").as_deref() != Some(owner)
                    || stat.ephemeral_owner != self.session
                {
                    // Another holder may issue with this worker ID: a node created here
                    // is no longer unused.
                    self.m.created = false;
                    return Ok(Value::Null);
                }
                // Already ours (a repeated claim): written again for the server's time.
                let set = ZkOp::Set {
                    path: live.clone(),
                    data,
                    version: stat.version,
                };
                match self.ask(set.clone())? {
                    ZkReply::Stat(Some(stat)) => stat,
                    ZkReply::Failed { error, .. } => return Err(failed(&live, &error)),
                    other => return Err(unexpected(&set, &other)),
                }
            }
            ZkReply::Failed { error, .. } => return Err(failed(&live, &error)),
            other => return Err(unexpected(&create, &other)),
        };
        let renewed = self
            .m
            .held
            .get(&node.worker_id)
            .is_some_and(|h| h.session == self.session && h.renewed);
        self.m.held.insert(
            node.worker_id,
            Hold {
                session: self.session,
                version: written.version,
                renewed,
            },
        );
        let mut answer = vec![("worker_id".to_string(), Value::uint(node.worker_id))];
        if self.m.created {
            // Created here a moment ago and never written since: no mark, and no Leaf
            // process reports into it.
            answer.push(("mark_ms".into(), Value::uint(0)));
            return Ok(Value::Map(answer));
        }
        // A failure here leaves the live node held: the next claim finds it ours.
        let Some((mark, stat)) = self.mark_of(&node.path)? else {
            return Err(Stop::Fail(format!("{}: no such node", node.path)));
        };
        answer.push(("mark_ms".into(), Value::uint(mark)));
        if self.m.wrote.as_ref() != Some(&(node.path.clone(), stat.version)) {
            // Possibly a Leaf process's node: how long ago it was written, by the server's
            // clock, so the lease engine can tell a live Leaf node from a stopped one.
            let age = written.mtime.saturating_sub(stat.mtime).max(0) as u64;
            answer.push(("identity".into(), Value::Str(self.p.identity())));
            answer.push(("version".into(), Value::uint(stat.version.max(0) as u64)));
            answer.push(("age_ms".into(), Value::uint(age)));
        }
        Ok(Value::Map(answer))
    }

    /// This session's hold on `worker_id` and the forever node, while it lasts.
    fn holding(&mut self, worker_id: u64) -> Option<(Hold, String)> {
        let hold = *self.m.held.get(&worker_id)?;
        let node = self.m.node.clone()?;
        if node.worker_id != worker_id || hold.session != self.session {
            self.m.held.remove(&worker_id);
            return None;
        }
        Some((hold, node.path))
    }

    /// Remembers the forever node's version after this protocol's write to it (the write
    /// replaced `replaced`); the node now holds a mark.
    fn wrote(&mut self, path: &str, replaced: i32) {
        self.m.wrote = Some((path.to_string(), replaced + 1));
        self.m.created = false;
    }

    fn renew(
        &mut self,
        worker_id: u64,
        owner: &str,
        mark_ms: u64,
        reported_ms: u64,
    ) -> Flow<Value> {
        let Some((hold, path)) = self.holding(worker_id) else {
            return self.not_held(worker_id);
        };
        let live = self.p.live(worker_id);
        let report = live_json(owner, reported_ms);
        for _ in 0..WRITE_ATTEMPTS {
            let Some((stored, forever)) = self.mark_of(&path)? else {
                // The forever node is gone: the registry lost the worker ID's record.
                self.m.held.remove(&worker_id);
                return Ok(Value::Int(-1));
            };
            let mark = stored.max(mark_ms);
            let multi = ZkOp::Multi(vec![
                ZkOp::Set {
                    path: live.clone(),
                    data: report.clone(),
                    version: hold.version,
                },
                ZkOp::Set {
                    path: path.clone(),
                    data: self.p.leaf_json(mark.saturating_sub(LEAF_REPORT_MS)),
                    version: forever.version,
                },
            ]);
            match self.ask(multi.clone())? {
                ZkReply::Done => {
                    self.m.held.insert(
                        worker_id,
                        Hold {
                            version: hold.version + 1,
                            renewed: true,
                            ..hold
                        },
                    );
                    self.wrote(&path, forever.version);
                    return Ok(Value::uint(mark));
                }
                ZkReply::Failed {
                    error: ZkError::NoNode,
                    ..
                } => {
                    // The live node (this session's, and nobody else's is there) or the
                    // forever node is gone.
                    self.m.held.remove(&worker_id);
                    return Ok(Value::Int(-1));
                }
                ZkReply::Failed {
                    index: 0,
                    error: ZkError::BadVersion,
                } => {
                    // The live node is not the one this session wrote.
                    self.m.held.remove(&worker_id);
                    return Ok(Value::Null);
                }
                // The forever node changed since it was read: read it again.
                ZkReply::Failed {
                    error: ZkError::BadVersion,
                    ..
                } => continue,
                ZkReply::Failed { error, .. } => {
                    return Err(failed(&format!("renew of worker ID {worker_id}"), &error))
                }
                other => return Err(unexpected(&multi, &other)),
            }
        }
        Err(Stop::Fail(format!(
            "renew of worker ID {worker_id}: {path} kept changing under it"
        )))
    }

    /// A renewal's answer without a hold of this session: -1 when the worker ID's live node
    /// is gone (the session that held it expired, or the ensemble lost it), null when
    /// another session's node is there.
    fn not_held(&mut self, worker_id: u64) -> Flow<Value> {
        if self.m.node.as_ref().map(|n| n.worker_id) != Some(worker_id) {
            return Ok(Value::Null);
        }
        let live = self.p.live(worker_id);
        Ok(match self.exists(&live)? {
            None => Value::Int(-1),
            Some(_) => Value::Null,
        })
    }

    fn release(&mut self, worker_id: u64, mark_ms: u64) -> Flow<Value> {
        let Some((hold, path)) = self.holding(worker_id) else {
            return Ok(Value::Bool(false));
        };
        let live = self.p.live(worker_id);
        let delete = ZkOp::Delete {
            path: live.clone(),
            version: hold.version,
        };
        if !hold.renewed {
            // No ID was issued with this hold, so there is no mark to keep; the forever
            // node (maybe a live Leaf node's, found at a claim) is left alone.
            self.m.held.remove(&worker_id);
            return match self.ask(delete.clone())? {
                ZkReply::Done => Ok(Value::Bool(true)),
                ZkReply::Failed {
                    error: ZkError::NoNode | ZkError::BadVersion,
                    ..
                } => Ok(Value::Bool(false)),
                ZkReply::Failed { error, .. } => Err(failed(&live, &error)),
                other => Err(unexpected(&delete, &other)),
            };
        }
        for _ in 0..WRITE_ATTEMPTS {
            let Some((stored, forever)) = self.mark_of(&path)? else {
                self.m.held.remove(&worker_id);
                return Ok(Value::Bool(false));
            };
            let multi = ZkOp::Multi(vec![
                ZkOp::Set {
                    path: path.clone(),
                    data: self
                        .p
                        .leaf_json(stored.max(mark_ms).saturating_sub(LEAF_REPORT_MS)),
                    version: forever.version,
                },
                delete.clone(),
            ]);
            match self.ask(multi.clone())? {
                ZkReply::Done => {
                    self.m.held.remove(&worker_id);
                    self.wrote(&path, forever.version);
                    return Ok(Value::Bool(true));
                }
                ZkReply::Failed {
                    index: 0,
                    error: ZkError::BadVersion,
                } => continue,
                ZkReply::Failed {
                    error: ZkError::NoNode | ZkError::BadVersion,
                    ..
                } => {
                    self.m.held.remove(&worker_id);
                    return Ok(Value::Bool(false));
                }
                ZkReply::Failed { error, .. } => {
                    return Err(failed(&format!("release of worker ID {worker_id}"), &error))
                }
                other => return Err(unexpected(&multi, &other)),
            }
        }
        Ok(Value::Bool(false))
    }

    fn peers(&mut self) -> Flow<Value> {
        let temporary = format!("{}/leaf_temporary", self.p.root);
        let forever = self.p.forever();
        // (worker ID, reported ms, server mtime)
        let mut entries: Vec<(u64, u64, i64)> = Vec::new();
        let mut live_ids = Vec::new();
        // The server's latest write seen: every live node counts, also one without a
        // report yet (the caller's own, written by its claim a moment ago), so stale
        // forever nodes are measured against the server's time now, not against each
        // other.
        let mut latest = i64::MIN;
        for name in self.children(&temporary)? {
            let Ok(id) = name.parse::<u64>() else {
                continue;
            };
            live_ids.push(id);
            // A node that vanished since the listing is left out.
            if let Some((raw, stat)) = self.get_or_skip(&format!("{temporary}/{name}"))? {
                latest = latest.max(stat.mtime);
                if let Some(r) = json_u64(&raw, "reported_ms").filter(|&r| r > 0) {
                    entries.push((id, r, stat.mtime));
                }
            }
        }
        for name in self.children(&forever)? {
            let Some(id) = name
                .rsplit_once('-')
                .and_then(|(_, s)| s.parse::<u64>().ok())
            else {
                continue;
            };
            if live_ids.contains(&id) {
                continue; // a segflake holder: its report is in its live node
            }
            if let Some((raw, stat)) = self.get_or_skip(&format!("{forever}/{name}"))? {
                if let Some(ts) = json_u64(&raw, "timestamp").filter(|&t| t > 0) {
                    entries.push((id, ts, stat.mtime));
                }
            }
        }
        let newest = entries.iter().map(|e| e.2).fold(latest, i64::max);
        Ok(crate::lease::peers_answer(
            entries
                .into_iter()
                .filter(|e| newest - e.2 <= PEER_WINDOW_MS)
                .map(|(w, r, m)| (i128::from(w), i128::from(r), i128::from(newest - m))),
        ))
    }

    /// A node's data for `peers`: any failure to read one node leaves it out.
    fn get_or_skip(&mut self, path: &str) -> Flow<Option<(String, ZkStat)>> {
        match self.get(path) {
            Err(Stop::Fail(_)) => Ok(None),
            other => other,
        }
    }
}

/// The live node's JSON.
fn live_json(owner: &str, reported_ms: u64) -> String {
    format!(
        "{{\"owner\":{},\"reported_ms\":{reported_ms}}}",
        json_string(owner)
    )
}

/// The field `key` of the JSON object `text`.
fn json_field(text: &str, key: &str) -> Option<Value> {
    match Value::from_json(text).ok()? {
        Value::Map(pairs) => pairs.into_iter().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    }
}

fn json_u64(text: &str, key: &str) -> Option<u64> {
    json_field(text, key)?.as_u64()
}

fn json_string_field(text: &str, key: &str) -> Option<String> {
    match json_field(text, key)? {
        Value::Str(s) => Some(s),
        _ => None,
    }
}

// ---- Host values: how bindings and the shared vectors spell requests and replies ----------
//
// A request is `{op, path, data?, mode?, version?, ops?}`: `op` is `mkdir`, `create`,
// `exists`, `get`, `children`, `set`, `delete` or `multi` (whose `ops` are `set`s and
// `delete`s); `mode` is `persistent`, `persistent_sequential` or `ephemeral`.
// A reply is `null` (done), `{created: path}`, `{stat: STAT | null}`, `{data, stat: STAT}`,
// `{children: [name, ...]}` or `{error, index?}` with `error` one of `no_node`,
// `node_exists`, `bad_version` or any other text; a STAT is `{version, ctime, mtime,
// ephemeral_owner}` (missing fields are 0).

impl ZkMode {
    pub fn name(self) -> &'static str {
        match self {
            ZkMode::Persistent => "persistent",
            ZkMode::PersistentSequential => "persistent_sequential",
            ZkMode::Ephemeral => "ephemeral",
        }
    }
}

impl Request for ZkOp {
    fn to_value(&self) -> Value {
        let s = |t: &str| Value::Str(t.to_string());
        let mut pairs = vec![("op".to_string(), s(self.name()))];
        let mut add = |k: &str, v: Value| pairs.push((k.to_string(), v));
        match self {
            ZkOp::Mkdir { path }
            | ZkOp::Exists { path }
            | ZkOp::Get { path }
            | ZkOp::Children { path } => add("path", s(path)),
            ZkOp::Create { path, data, mode } => {
                add("path", s(path));
                add("data", s(data));
                add("mode", s(mode.name()));
            }
            ZkOp::Set {
                path,
                data,
                version,
            } => {
                add("path", s(path));
                add("data", s(data));
                add("version", Value::Int(i128::from(*version)));
            }
            ZkOp::Delete { path, version } => {
                add("path", s(path));
                add("version", Value::Int(i128::from(*version)));
            }
            ZkOp::Multi(ops) => add("ops", Value::List(ops.iter().map(ZkOp::to_value).collect())),
        }
        Value::Map(pairs)
    }
}

impl ZkOp {
    /// The request's name: `mkdir`, `create`, `exists`, `get`, `children`, `set`, `delete`
    /// or `multi`.
    pub fn name(&self) -> &'static str {
        match self {
            ZkOp::Mkdir { .. } => "mkdir",
            ZkOp::Create { .. } => "create",
            ZkOp::Exists { .. } => "exists",
            ZkOp::Get { .. } => "get",
            ZkOp::Children { .. } => "children",
            ZkOp::Set { .. } => "set",
            ZkOp::Delete { .. } => "delete",
            ZkOp::Multi(_) => "multi",
        }
    }
}

fn field<'v>(pairs: &'v [(String, Value)], key: &str) -> Option<&'v Value> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn stat_of(v: &Value) -> Result<ZkStat, String> {
    let Value::Map(pairs) = v else {
        return Err(format!(
            "a stat is {{version, ctime, mtime, ephemeral_owner}}, not {}",
            v.to_json()
        ));
    };
    let int = |key: &str| -> Result<i128, String> {
        match field(pairs, key) {
            None | Some(Value::Null) => Ok(0),
            Some(Value::Int(i)) => Ok(*i),
            Some(other) => Err(format!(
                "stat field {key} is {}, not an integer",
                other.to_json()
            )),
        }
    };
    let version = int("version")?;
    Ok(ZkStat {
        version: i32::try_from(version)
            .map_err(|_| format!("stat version {version} is not a 32-bit integer"))?,
        ctime: int("ctime")? as i64,
        mtime: int("mtime")? as i64,
        ephemeral_owner: int("ephemeral_owner")? as i64,
    })
}

impl ZkStat {
    pub fn to_value(&self) -> Value {
        Value::Map(vec![
            ("version".into(), Value::Int(i128::from(self.version))),
            ("ctime".into(), Value::Int(i128::from(self.ctime))),
            ("mtime".into(), Value::Int(i128::from(self.mtime))),
            (
                "ephemeral_owner".into(),
                Value::Int(i128::from(self.ephemeral_owner)),
            ),
        ])
    }
}

impl ZkError {
    /// `no_node`, `node_exists`, `bad_version`, or the client's text.
    pub fn from_name(name: &str) -> ZkError {
        match name {
            "no_node" => ZkError::NoNode,
            "node_exists" => ZkError::NodeExists,
            "bad_version" => ZkError::BadVersion,
            other => ZkError::Other(other.to_string()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            ZkError::NoNode => "no_node",
            ZkError::NodeExists => "node_exists",
            ZkError::BadVersion => "bad_version",
            ZkError::Other(text) => text,
        }
    }
}

impl ZkReply {
    /// A reply from its host value; an unreadable one becomes a failure that says why
    /// (the conversation then ends with that error).
    pub fn from_value(v: &Value) -> ZkReply {
        Self::read(v).unwrap_or_else(|why| {
            ZkReply::error(ZkError::Other(format!(
                "the ZooKeeper adapter's reply {} is not one the protocol reads: {why}",
                v.to_json()
            )))
        })
    }

    fn read(v: &Value) -> Result<ZkReply, String> {
        let pairs = match v {
            Value::Null => return Ok(ZkReply::Done),
            Value::Map(pairs) if pairs.is_empty() => return Ok(ZkReply::Done),
            Value::Map(pairs) => pairs,
            _ => return Err("not null or an object".into()),
        };
        let text = |key: &str| match field(pairs, key) {
            Some(Value::Str(s)) => Ok(s.clone()),
            other => Err(format!(
                "{key} is {}, not a string",
                other.map_or("missing".into(), Value::to_json)
            )),
        };
        if let Some(e) = field(pairs, "error") {
            let Value::Str(name) = e else {
                return Err("error is not a string".into());
            };
            let index = match field(pairs, "index") {
                None | Some(Value::Null) => 0,
                Some(i) => i.as_u64().ok_or("index is not a non-negative integer")? as usize,
            };
            return Ok(ZkReply::Failed {
                index,
                error: ZkError::from_name(name),
            });
        }
        if field(pairs, "created").is_some() {
            return Ok(ZkReply::Created(text("created")?));
        }
        if let Some(names) = field(pairs, "children") {
            let Value::List(items) = names else {
                return Err("children is not a list".into());
            };
            return items
                .iter()
                .map(|n| match n {
                    Value::Str(s) => Ok(s.clone()),
                    other => Err(format!("child {} is not a string", other.to_json())),
                })
                .collect::<Result<_, _>>()
                .map(ZkReply::Children);
        }
        if field(pairs, "data").is_some() {
            let stat = stat_of(field(pairs, "stat").unwrap_or(&Value::Null))?;
            return Ok(ZkReply::Data(text("data")?, stat));
        }
        if let Some(stat) = field(pairs, "stat") {
            return Ok(ZkReply::Stat(match stat {
                Value::Null => None,
                s => Some(stat_of(s)?),
            }));
        }
        Err("none of created, stat, data, children or error".into())
    }

    /// The reply as a host value.
    pub fn to_value(&self) -> Value {
        let one = |k: &str, v: Value| Value::Map(vec![(k.to_string(), v)]);
        match self {
            ZkReply::Done => Value::Null,
            ZkReply::Created(path) => one("created", Value::Str(path.clone())),
            ZkReply::Stat(stat) => one("stat", stat.map_or(Value::Null, |s| s.to_value())),
            ZkReply::Data(data, stat) => Value::Map(vec![
                ("data".into(), Value::Str(data.clone())),
                ("stat".into(), stat.to_value()),
            ]),
            ZkReply::Children(names) => one(
                "children",
                Value::List(names.iter().cloned().map(Value::Str).collect()),
            ),
            ZkReply::Failed { index, error } => Value::Map(vec![
                ("error".into(), Value::Str(error.name().to_string())),
                ("index".into(), Value::uint(*index as u64)),
            ]),
        }
    }
}
