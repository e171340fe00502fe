//! A ZooKeeper ensemble as the core's ZooKeeper protocol (Leaf's layout) meets it: znodes
//! with data versions and server times, persistent-sequential numbering from the parent's
//! child version, ephemeral nodes owned by sessions, `multi` all or nothing, and sessions
//! that expire when the server has not heard from their client for the session timeout.
//!
//! What the model follows, from ZooKeeper's server (`PrepRequestProcessor`, `DataTree`,
//! `SessionTrackerImpl`):
//! * A sequential node's number is its parent's `cversion` when it is created; every create
//!   under the parent raises it, a delete does not (3.4 and later), so numbers are never
//!   given twice while the parent lives.
//! * `set`/`delete` check the node first (`NoNode`), then the version (`BadVersion`; -1
//!   matches any); a `delete` of a node with children fails (`NotEmpty`).
//! * `multi` checks and applies its operations in order on the tree as the earlier ones
//!   left it; the first failure fails the whole, reported with its index.
//! * A request of a session the server expired or closed fails with `SESSION_EXPIRED`; the
//!   expiry (or a close) deletes every ephemeral node the session owns. A session is heard
//!   through its requests and its client's pings (`ping`).
//!
//! Simplified: a session is opened by its first request (the connect handshake travels with
//! it); the session timeout is the one the client asked for (no tick rounding or
//! negotiation); one server, no ensemble (a leader change keeps sessions and data, so it
//! changes nothing here); no ACLs, watches or quotas.

use std::collections::{BTreeMap, BTreeSet};

use segflake::lease::zookeeper::{ZkError, ZkMode, ZkOp, ZkReply, ZkStat, LEAF_REPORT_MS};
use segflake::Value;

use crate::registry::unknown_request;

/// What a request of an expired or closed session gets (ZooKeeper's `SESSION_EXPIRED`, as
/// the clients describe it).
pub const SESSION_EXPIRED: &str = "session expired";

#[derive(Debug, Clone, PartialEq)]
struct Znode {
    data: String,
    version: i32,
    ctime: i64,
    mtime: i64,
    ephemeral_owner: i64,
    /// Children created under this node so far: the next sequential child's number.
    cversion: i32,
}

impl Znode {
    fn stat(&self) -> ZkStat {
        ZkStat {
            version: self.version,
            ctime: self.ctime,
            mtime: self.mtime,
            ephemeral_owner: self.ephemeral_owner,
        }
    }
}

type Tree = BTreeMap<String, Znode>;

/// One ZooKeeper server (an ensemble that keeps its data and sessions across leader
/// changes looks the same to its clients).
#[derive(Debug, Clone)]
pub struct ZkServer {
    /// Leaf's `/snowflake/{name}`, where the protocol keeps its nodes.
    root: String,
    nodes: Tree,
    /// Live sessions: when the server last heard from each (server clock).
    sessions: BTreeMap<i64, u64>,
    /// Sessions expired or closed: their requests fail.
    ended: BTreeSet<i64>,
    pub session_ms: u64,
    /// Sessions the server expired (not closed by their client).
    pub expired: u64,
}

fn parent_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

fn failed(error: ZkError) -> ZkReply {
    ZkReply::error(error)
}

fn other(text: &str) -> ZkError {
    ZkError::Other(text.to_string())
}

impl ZkServer {
    pub fn new(root: &str, session_ms: u64) -> ZkServer {
        let mut s = ZkServer {
            root: root.to_string(),
            nodes: Tree::new(),
            sessions: BTreeMap::new(),
            ended: BTreeSet::new(),
            session_ms,
            expired: 0,
        };
        s.wipe();
        s
    }

    /// The tree as a new ensemble has it: the root node only.
    fn wipe(&mut self) {
        self.nodes.clear();
        self.nodes.insert(
            "/".into(),
            Znode {
                data: String::new(),
                version: 0,
                ctime: 0,
                mtime: 0,
                ephemeral_owner: 0,
                cversion: 0,
            },
        );
    }

    /// Ends every session whose client was last heard a session timeout or more before
    /// `now`: its ephemeral nodes go.
    fn expire(&mut self, now: u64) {
        let due: Vec<i64> = self
            .sessions
            .iter()
            .filter(|(_, heard)| now >= *heard + self.session_ms)
            .map(|(s, _)| *s)
            .collect();
        for s in due {
            self.expired += 1;
            self.end(s);
        }
    }

    fn end(&mut self, session: i64) {
        self.sessions.remove(&session);
        self.ended.insert(session);
        self.nodes.retain(|_, n| n.ephemeral_owner != session);
    }

    /// The client of `session` pinged at `now`: heard, unless the session is over. Returns
    /// whether the session is still alive (a client learns of its expiry this way when it
    /// reconnects).
    pub fn ping(&mut self, session: i64, now: u64) -> bool {
        self.expire(now);
        if let Some(heard) = self.sessions.get_mut(&session) {
            *heard = now;
        }
        !self.ended.contains(&session)
    }

    /// The client closed `session` (`closeSession`): its ephemeral nodes go at once.
    pub fn close(&mut self, session: i64, now: u64) {
        self.expire(now);
        self.end(session);
    }

    /// Applies one request of `session` at server time `now` (ms).
    pub fn apply(&mut self, session: i64, op: &ZkOp, now: u64) -> ZkReply {
        self.expire(now);
        if self.ended.contains(&session) {
            return failed(other(SESSION_EXPIRED));
        }
        self.sessions.insert(session, now);
        let now = now as i64;
        match op {
            ZkOp::Mkdir { path } => {
                let mut at = 0;
                while at < path.len() {
                    let end = path[at + 1..].find('/').map_or(path.len(), |i| at + 1 + i);
                    let prefix = &path[..end];
                    if !self.nodes.contains_key(prefix) {
                        if let Err(e) = create(
                            &mut self.nodes,
                            prefix,
                            "",
                            ZkMode::Persistent,
                            session,
                            now,
                        ) {
                            return failed(e);
                        }
                    }
                    at = end;
                }
                ZkReply::Done
            }
            ZkOp::Create { path, data, mode } => {
                match create(&mut self.nodes, path, data, *mode, session, now) {
                    Ok(name) => ZkReply::Created(name),
                    Err(e) => failed(e),
                }
            }
            ZkOp::Exists { path } => ZkReply::Stat(self.nodes.get(path).map(Znode::stat)),
            ZkOp::Get { path } => match self.nodes.get(path) {
                Some(n) => ZkReply::Data(n.data.clone(), n.stat()),
                None => failed(ZkError::NoNode),
            },
            ZkOp::Children { path } => match self.nodes.contains_key(path) {
                true => ZkReply::Children(children(&self.nodes, path)),
                false => failed(ZkError::NoNode),
            },
            ZkOp::Set { .. } | ZkOp::Delete { .. } => match write(&mut self.nodes, op, now) {
                Ok(reply) => reply,
                Err(e) => failed(e),
            },
            ZkOp::Multi(ops) => {
                let mut tree = self.nodes.clone();
                for (index, op) in ops.iter().enumerate() {
                    if !matches!(op, ZkOp::Set { .. } | ZkOp::Delete { .. }) {
                        let what = unknown_request("ZooKeeper multi-operation request", op.name());
                        return ZkReply::Failed {
                            index,
                            error: ZkError::Other(what),
                        };
                    }
                    if let Err(error) = write(&mut tree, op, now) {
                        return ZkReply::Failed { index, error };
                    }
                }
                self.nodes = tree;
                ZkReply::Done
            }
        }
    }

    /// Data lost: the whole tree (a wiped ensemble, which knows no session either), or one
    /// worker ID's forever node (`mark_only`) or its forever and live nodes.
    pub fn lose(&mut self, worker: Option<u64>, mark_only: bool) {
        let Some(w) = worker else {
            self.wipe();
            let live: Vec<i64> = self.sessions.keys().copied().collect();
            for s in live {
                self.end(s);
            }
            return;
        };
        if let Some(path) = self.forever_node(w) {
            self.nodes.remove(&path);
        }
        if !mark_only {
            self.nodes.remove(&self.live(w));
        }
    }

    fn live(&self, worker: u64) -> String {
        format!("{}/leaf_temporary/{worker}", self.root)
    }

    /// The forever node whose sequence number is `worker`.
    fn forever_node(&self, worker: u64) -> Option<String> {
        let forever = format!("{}/forever", self.root);
        children(&self.nodes, &forever)
            .into_iter()
            .find(|name| sequence(name) == Some(worker))
            .map(|name| format!("{forever}/{name}"))
    }

    /// The worker ID of `identity` (`ip:port`): its lowest forever node's number.
    pub fn worker_of(&self, identity: &str) -> Option<u64> {
        let forever = format!("{}/forever", self.root);
        children(&self.nodes, &forever)
            .iter()
            .filter_map(|name| {
                let (ident, _) = name.rsplit_once('-')?;
                (ident == identity).then(|| sequence(name))?
            })
            .min()
    }

    /// Who holds `worker` now (its live node's owner) and its mark (the forever node's
    /// timestamp plus Leaf's report period), when both nodes are there.
    pub fn holder_mark(&self, worker: u64) -> Option<(String, u64)> {
        let live = self.nodes.get(&self.live(worker))?;
        let owner = match json_field(&live.data, "owner")? {
            Value::Str(s) => s,
            _ => return None,
        };
        let forever = self.nodes.get(&self.forever_node(worker)?)?;
        let timestamp = json_field(&forever.data, "timestamp")?.as_u64()?;
        Some((owner, timestamp + LEAF_REPORT_MS))
    }
}

fn json_field(text: &str, key: &str) -> Option<Value> {
    match Value::from_json(text).ok()? {
        Value::Map(pairs) => pairs.into_iter().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    }
}

/// The sequence number a sequential node's name ends with.
fn sequence(name: &str) -> Option<u64> {
    let (_, seq) = name.rsplit_once('-')?;
    (seq.len() == 10).then_some(())?;
    seq.parse().ok()
}

/// The child names of `path`, in byte order (ZooKeeper gives no order; the protocol sorts).
fn children(tree: &Tree, path: &str) -> Vec<String> {
    let prefix = if path == "/" {
        "/".to_string()
    } else {
        format!("{path}/")
    };
    tree.range(prefix.clone()..)
        .take_while(|(k, _)| k.starts_with(&prefix))
        .filter_map(|(k, _)| {
            let rest = &k[prefix.len()..];
            (!rest.is_empty() && !rest.contains('/')).then(|| rest.to_string())
        })
        .collect()
}

/// Creates one node; a sequential one's name gets its parent's child version in ten digits.
fn create(
    tree: &mut Tree,
    path: &str,
    data: &str,
    mode: ZkMode,
    session: i64,
    now: i64,
) -> Result<String, ZkError> {
    if path.is_empty() || !path.starts_with('/') || path == "/" {
        return Err(other("bad arguments"));
    }
    let parent = tree.get_mut(parent_of(path)).ok_or(ZkError::NoNode)?;
    if parent.ephemeral_owner != 0 {
        return Err(other("no children for ephemerals"));
    }
    let name = match mode {
        ZkMode::PersistentSequential => format!("{path}{:010}", parent.cversion),
        ZkMode::Persistent | ZkMode::Ephemeral => path.to_string(),
    };
    if tree.contains_key(&name) {
        return Err(ZkError::NodeExists);
    }
    tree.get_mut(parent_of(path)).expect("checked").cversion += 1;
    let ephemeral_owner = if mode == ZkMode::Ephemeral {
        session
    } else {
        0
    };
    tree.insert(
        name.clone(),
        Znode {
            data: data.to_string(),
            version: 0,
            ctime: now,
            mtime: now,
            ephemeral_owner,
            cversion: 0,
        },
    );
    Ok(name)
}

/// A `set` or `delete` on `tree`.
fn write(tree: &mut Tree, op: &ZkOp, now: i64) -> Result<ZkReply, ZkError> {
    let (path, version) = match op {
        ZkOp::Set { path, version, .. } | ZkOp::Delete { path, version } => (path, *version),
        _ => unreachable!("only set and delete"),
    };
    let node = tree.get_mut(path).ok_or(ZkError::NoNode)?;
    if version != -1 && version != node.version {
        return Err(ZkError::BadVersion);
    }
    if let ZkOp::Set { data, .. } = op {
        node.data = data.clone();
        node.version += 1;
        node.mtime = now;
        return Ok(ZkReply::Stat(Some(node.stat())));
    }
    if !children(tree, path).is_empty() {
        return Err(other("not empty"));
    }
    tree.remove(path);
    Ok(ZkReply::Done)
}

/// The worker ID whose live node a request writes, if any.
pub fn touched(op: &ZkOp) -> Option<u64> {
    let live = |path: &str| {
        let (dir, name) = path.rsplit_once('/')?;
        dir.ends_with("/leaf_temporary")
            .then(|| name.parse().ok())
            .flatten()
    };
    match op {
        ZkOp::Create { path, .. } | ZkOp::Set { path, .. } => live(path),
        ZkOp::Multi(ops) => ops.iter().find_map(touched),
        _ => None,
    }
}
