//! A worker-ID lease registry on ZooKeeper in Leaf's layout (`--registry zk://…`), over the
//! `zookeeper-client` crate on a one-thread tokio runtime owned by the registry.
//!
//! The identity's persistent sequential node `{root}/forever/{ip}:{port}-{seq}` gives the
//! worker ID (`seq`) and, through Leaf's reported `timestamp`, the mark (`timestamp + 3 s`);
//! an ephemeral `{root}/leaf_temporary/{id}` holds the lease for this session. A session
//! that expired is replaced on the next call, and everything it held is gone.
//! `docs/leases.md` describes the layout; the Python and Node registries do the same.
//!
//! A claim never writes the forever node (a Leaf process may still report into it): it
//! answers `{worker_id, mark_ms, identity, version, age_ms}`, the node's version and how
//! long ago it was last written by the ZooKeeper server's clock, and the core claims again
//! after one Leaf report period to see whether it changed (the three are left out for a
//! node this registry created, or last wrote itself: no Leaf process reports into those).
//! Renewals write the mark into it. Every call is bounded by the registry timeout.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use segflake::{Registry, RegistryCall, Value};
use zookeeper_client as zk;

use crate::error::CliError;

/// A Leaf node may have issued IDs up to its reported timestamp plus its report interval.
const LEAF_REPORT_MS: u64 = 3000;

pub struct ZooKeeperRegistry {
    hosts: String,
    root: String,
    ip: String,
    port: String,
    session_timeout: Duration,
    timeout: Duration,
    runtime: tokio::runtime::Runtime,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    client: Option<zk::Client>,
    /// The identity's worker ID and forever node.
    node: Option<(u64, String)>,
    /// The forever node this registry created, while it holds no mark yet: nobody issued
    /// with its worker ID (claims answer mark 0). Cleared once a renewal or release wrote a
    /// mark into it, or another holder was found on its worker ID.
    created: Option<String>,
    /// A claim of this node was answered: later claims of other worker IDs are refused
    /// (the identity has one worker ID).
    attempted: bool,
    /// The forever node's version after this registry last wrote it: a node still at that
    /// version was last written here, by no Leaf process.
    wrote: Option<(String, i32)>,
    /// Worker ID → this session's hold on it.
    held: HashMap<u64, Hold>,
}

#[derive(Clone, Copy)]
struct Hold {
    /// The session that created the live node.
    session: i64,
    /// The live node's version.
    version: i32,
    /// A renewal wrote a mark since the claim (no ID is issued before one did).
    renewed: bool,
}

impl ZooKeeperRegistry {
    /// `url`: `zk://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N]`;
    /// `identity` (the `--identity` flag) wins over the URL's.
    pub fn new(
        url: &str,
        identity: Option<&str>,
        timeout_ms: u64,
    ) -> Result<ZooKeeperRegistry, CliError> {
        let allowed =
            "allowed: zk://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N]";
        let bad = |why: String| {
            CliError::usage_for("next", format!("--registry {url:?}: {why}; {allowed}"))
        };
        let rest = url.strip_prefix("zk://").unwrap_or(url);
        let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (hosts, root) = match location.find('/') {
            Some(i) => (&location[..i], &location[i..]),
            None => (location, "/snowflake/segflake"),
        };
        if hosts.is_empty() {
            return Err(bad("no HOST:PORT".into()));
        }
        if root.ends_with('/') || root.contains("//") {
            return Err(bad(format!(
                "{root:?} is not a znode path such as /snowflake/leaf-name"
            )));
        }
        let mut url_identity = None;
        let mut session_ms = 10_000;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            match pair.split_once('=') {
                Some(("identity", v)) => url_identity = Some(v.to_string()),
                Some(("session_timeout_ms", v)) => {
                    session_ms = v
                        .parse::<u64>()
                        .ok()
                        .filter(|ms| (1..=3_600_000).contains(ms))
                        .ok_or_else(|| {
                            bad(format!("session_timeout_ms {v:?} is not 1..=3600000"))
                        })?
                }
                _ => return Err(bad(format!("unknown parameter {pair:?}"))),
            }
        }
        let identity = identity.map(str::to_string).or(url_identity);
        let (ip, port) = match identity {
            Some(id) => parse_identity(&id).map_err(|e| CliError::usage_for("next", e))?,
            None => (default_ip(), "0".to_string()),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| {
                CliError::usage_for("next", format!("cannot start the ZooKeeper client: {e}"))
            })?;
        Ok(ZooKeeperRegistry {
            hosts: hosts.to_string(),
            root: root.to_string(),
            ip,
            port,
            session_timeout: Duration::from_millis(session_ms),
            timeout: Duration::from_millis(timeout_ms.max(1)),
            runtime,
            state: Mutex::new(State::default()),
        })
    }

    fn identity(&self) -> String {
        format!("{}:{}", self.ip, self.port)
    }

    /// Leaf's `Endpoint` JSON, byte for byte.
    fn leaf_json(&self, timestamp: u64) -> Vec<u8> {
        format!(
            "{{\"ip\":\"{}\",\"port\":\"{}\",\"timestamp\":{timestamp}}}",
            self.ip, self.port
        )
        .into_bytes()
    }

    fn live(&self, worker_id: u64) -> String {
        format!("{}/leaf_temporary/{worker_id}", self.root)
    }

    async fn connected(&self, st: &mut State) -> Result<zk::Client, String> {
        if let Some(c) = &st.client {
            if !c.state().is_terminated() {
                return Ok(c.clone());
            }
        }
        st.held.clear();
        let connector = zk::Client::connector()
            .with_session_timeout(self.session_timeout)
            .with_connection_timeout(self.timeout * 2 / 3);
        // Shorter than the call's own timeout, so the failure names its cause.
        let client = tokio::time::timeout(self.timeout * 2 / 3, connector.connect(&self.hosts))
            .await
            .map_err(|_| {
                format!(
                    "no ZooKeeper session with {} within {:?}",
                    self.hosts, self.timeout
                )
            })?
            .map_err(|e| format!("ZooKeeper {}: {e}", self.hosts))?;
        st.client = Some(client.clone());
        Ok(client)
    }

    /// The mark in a forever node (Leaf's reported timestamp + its report interval) and
    /// the node's stat.
    async fn mark_of(c: &zk::Client, path: &str) -> Result<(u64, zk::Stat), String> {
        let (data, stat) = c.get_data(path).await.map_err(|e| format!("{path}: {e}"))?;
        let ts = leaf_timestamp(&data).ok_or_else(|| {
            format!(
                "{path} holds {:?}, not Leaf's {{ip, port, timestamp}} JSON",
                String::from_utf8_lossy(&data)
            )
        })?;
        Ok((ts + LEAF_REPORT_MS, stat))
    }

    async fn identity_nodes(
        &self,
        c: &zk::Client,
        forever: &str,
    ) -> Result<Vec<(u64, String)>, String> {
        let identity = self.identity();
        let mut mine: Vec<(u64, String)> = c
            .list_children(forever)
            .await
            .map_err(|e| format!("{forever}: {e}"))?
            .into_iter()
            .filter_map(|name| {
                let (ident, seq) = name.rsplit_once('-')?;
                (ident == identity).then_some(())?;
                Some((seq.parse().ok()?, format!("{forever}/{name}")))
            })
            .collect();
        mine.sort();
        Ok(mine)
    }

    async fn resolve(&self, c: &zk::Client, st: &mut State) -> Result<(u64, String), String> {
        if let Some((id, path)) = st.node.clone() {
            match c.check_stat(&path).await {
                Ok(Some(_)) => return Ok((id, path)),
                // The node is gone (the ensemble lost its data, or an operator removed it):
                // find or create the identity's node again.
                Ok(None) => {
                    st.node = None;
                    st.created = None;
                    st.wrote = None;
                    st.attempted = false;
                }
                Err(e) => return Err(format!("{path}: {e}")),
            }
        }
        let forever = format!("{}/forever", self.root);
        let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        match c.mkdir(&forever, &persistent).await {
            Ok(()) | Err(zk::Error::NodeExists) => {}
            Err(e) => return Err(format!("{forever}: {e}")),
        }
        let mut mine = self.identity_nodes(c, &forever).await?;
        if mine.is_empty() {
            let sequential = zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all());
            let prefix = format!("{forever}/{}-", self.identity());
            let (_, seq) = c
                .create(&prefix, &self.leaf_json(now_ms()), &sequential)
                .await
                .map_err(|e| format!("{prefix}: {e}"))?;
            let created = format!("{prefix}{seq}");
            mine = self.identity_nodes(c, &forever).await?;
            if mine.first().map(|(_, p)| p) == Some(&created) {
                st.created = Some(created);
            } else {
                // Another process of this identity created one first: share its worker ID
                // (the ephemeral node lets one of them hold it) and drop the unused one.
                let _ = c.delete(&created, None).await;
            }
        }
        let node = mine
            .into_iter()
            .next()
            .ok_or("the identity's forever node vanished")?;
        st.node = Some(node.clone());
        Ok(node)
    }

    async fn claim(&self, st: &mut State, worker_id: u64, owner: &str) -> Result<Value, String> {
        let c = self.connected(st).await?;
        let (assigned, path) = self.resolve(&c, st).await?;
        if worker_id != assigned && st.attempted {
            return Ok(Value::Null);
        }
        st.attempted = true;
        let live = self.live(assigned);
        let session = c.session_id().0;
        let data = format!("{{\"owner\":{},\"reported_ms\":0}}", json_string(owner));
        let ephemeral = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
        let parent = format!("{}/leaf_temporary", self.root);
        let persistent = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
        match c.mkdir(&parent, &persistent).await {
            Ok(()) | Err(zk::Error::NodeExists) => {}
            Err(e) => return Err(format!("{parent}: {e}")),
        }
        // The live node's version, and the server's time of this claim's write to it.
        let (version, server_now) = match c.create(&live, data.as_bytes(), &ephemeral).await {
            Ok((stat, _)) => (stat.version, stat.ctime),
            Err(zk::Error::NodeExists) => {
                let (raw, stat) = c
                    .get_data(&live)
                    .await
                    .map_err(|e| format!("{live}: {e}"))?;
                if live_owner(&raw).as_deref() != Some(owner) || stat.ephemeral_owner != session {
                    // Another holder may issue with this worker ID: a node created here
                    // is no longer unused.
                    st.created = None;
                    return Ok(Value::Null);
                }
                // Already ours (a repeated claim): write it again for the server's time.
                let stat = c
                    .set_data(&live, data.as_bytes(), Some(stat.version))
                    .await
                    .map_err(|e| format!("{live}: {e}"))?;
                (stat.version, stat.mtime)
            }
            Err(e) => return Err(format!("{live}: {e}")),
        };
        let renewed = st
            .held
            .get(&assigned)
            .is_some_and(|h| h.session == session && h.renewed);
        st.held.insert(
            assigned,
            Hold {
                session,
                version,
                renewed,
            },
        );
        let mut answer = vec![("worker_id".into(), Value::uint(assigned))];
        if st.created.as_deref() == Some(path.as_str()) {
            // Created by this registry a moment ago and never written since: no mark, and
            // no Leaf process reports into it.
            answer.push(("mark_ms".into(), Value::uint(0)));
            return Ok(Value::Map(answer));
        }
        // A failure here leaves the live node held: the core's next claim finds it ours.
        let (mark, stat) = Self::mark_of(&c, &path).await?;
        answer.push(("mark_ms".into(), Value::uint(mark)));
        if st.wrote.as_ref() != Some(&(path.clone(), stat.version)) {
            // Possibly a Leaf process's node: how long ago it was written, by the
            // server's clock, so the core can tell a live Leaf node from a stopped one.
            let age = u64::try_from(server_now.saturating_sub(stat.mtime)).unwrap_or(0);
            answer.push(("identity".into(), Value::Str(self.identity())));
            answer.push(("version".into(), Value::uint(stat.version.max(0) as u64)));
            answer.push(("age_ms".into(), Value::uint(age)));
        }
        Ok(Value::Map(answer))
    }

    /// The client and this session's hold on `worker_id`, while it lasts.
    async fn holding(
        &self,
        st: &mut State,
        worker_id: u64,
    ) -> Result<Option<(zk::Client, Hold, String)>, String> {
        let (Some(&hold), Some((id, path))) = (st.held.get(&worker_id), st.node.clone()) else {
            return Ok(None);
        };
        let c = self.connected(st).await?;
        if id != worker_id || c.session_id().0 != hold.session {
            st.held.remove(&worker_id);
            return Ok(None);
        }
        Ok(Some((c, hold, path)))
    }

    async fn renew(
        &self,
        st: &mut State,
        worker_id: u64,
        owner: &str,
        mark_ms: u64,
        reported_ms: u64,
    ) -> Result<Value, String> {
        let Some((c, hold, path)) = self.holding(st, worker_id).await? else {
            return self.not_held(st, worker_id).await;
        };
        let version = hold.version;
        let live = self.live(worker_id);
        let report = format!(
            "{{\"owner\":{},\"reported_ms\":{reported_ms}}}",
            json_string(owner)
        );
        for _ in 0..5 {
            let (stored, forever) = match Self::mark_of(&c, &path).await {
                Ok(found) => found,
                Err(_) if matches!(c.check_stat(&path).await, Ok(None)) => {
                    // The forever node is gone: the registry lost the worker ID's record.
                    st.held.remove(&worker_id);
                    return Ok(Value::Int(-1));
                }
                Err(e) => return Err(e),
            };
            let mark = stored.max(mark_ms);
            let mut multi = c.new_multi_writer();
            multi
                .add_set_data(&live, report.as_bytes(), Some(version))
                .map_err(|e| e.to_string())?;
            multi
                .add_set_data(
                    &path,
                    &self.leaf_json(mark.saturating_sub(LEAF_REPORT_MS)),
                    Some(forever.version),
                )
                .map_err(|e| e.to_string())?;
            match multi.commit().await {
                Ok(results) => {
                    st.held.insert(
                        worker_id,
                        Hold {
                            version: version + 1,
                            renewed: true,
                            ..hold
                        },
                    );
                    self.wrote(st, &path, results.get(1), forever.version);
                    return Ok(Value::uint(mark));
                }
                Err(zk::MultiWriteError::OperationFailed {
                    index: 0,
                    source: zk::Error::NoNode,
                }) => {
                    // Our live node is gone, and nobody else's is there.
                    st.held.remove(&worker_id);
                    return Ok(Value::Int(-1));
                }
                Err(zk::MultiWriteError::OperationFailed { index: 0, .. }) => {
                    // The live node is not the one this session wrote.
                    st.held.remove(&worker_id);
                    return Ok(Value::Null);
                }
                Err(zk::MultiWriteError::OperationFailed {
                    source: zk::Error::NoNode,
                    ..
                }) => {
                    st.held.remove(&worker_id);
                    return Ok(Value::Int(-1));
                }
                Err(zk::MultiWriteError::OperationFailed { .. }) => continue,
                Err(e) => return Err(format!("renew of worker ID {worker_id}: {e}")),
            }
        }
        Err(format!(
            "renew of worker ID {worker_id}: {path} kept changing under it"
        ))
    }

    /// A renewal's answer without a hold of this session: -1 when the worker ID's live
    /// node is gone (the session that held it expired, or the ensemble lost it), null when
    /// another session's node is there.
    async fn not_held(&self, st: &mut State, worker_id: u64) -> Result<Value, String> {
        if st.node.as_ref().map(|(id, _)| *id) != Some(worker_id) {
            return Ok(Value::Null);
        }
        let c = self.connected(st).await?;
        let live = self.live(worker_id);
        match c.check_stat(&live).await {
            Ok(None) => Ok(Value::Int(-1)),
            Ok(Some(_)) => Ok(Value::Null),
            Err(e) => Err(format!("{live}: {e}")),
        }
    }

    /// Remembers the forever node's version after this registry's write (the stat the
    /// write returned, else the version it replaced + 1); the node now holds a mark.
    fn wrote(
        &self,
        st: &mut State,
        path: &str,
        result: Option<&zk::MultiWriteResult>,
        replaced: i32,
    ) {
        let version = match result {
            Some(zk::MultiWriteResult::SetData { stat }) => stat.version,
            _ => replaced + 1,
        };
        st.wrote = Some((path.to_string(), version));
        if st.created.as_deref() == Some(path) {
            st.created = None;
        }
    }

    async fn release(&self, st: &mut State, worker_id: u64, mark_ms: u64) -> Result<Value, String> {
        let Some((c, hold, path)) = self.holding(st, worker_id).await? else {
            return Ok(Value::Bool(false));
        };
        let live = self.live(worker_id);
        if !hold.renewed {
            // No ID was issued with this hold, so there is no mark to keep; the forever
            // node (maybe a live Leaf node's, found at a claim) is left alone.
            st.held.remove(&worker_id);
            return match c.delete(&live, Some(hold.version)).await {
                Ok(()) => Ok(Value::Bool(true)),
                Err(zk::Error::NoNode | zk::Error::BadVersion) => Ok(Value::Bool(false)),
                Err(e) => Err(format!("release of worker ID {worker_id}: {live}: {e}")),
            };
        }
        for _ in 0..5 {
            let (stored, forever) = Self::mark_of(&c, &path).await?;
            let mut multi = c.new_multi_writer();
            multi
                .add_set_data(
                    &path,
                    &self.leaf_json(stored.max(mark_ms).saturating_sub(LEAF_REPORT_MS)),
                    Some(forever.version),
                )
                .map_err(|e| e.to_string())?;
            multi
                .add_delete(&live, Some(hold.version))
                .map_err(|e| e.to_string())?;
            match multi.commit().await {
                Ok(results) => {
                    st.held.remove(&worker_id);
                    self.wrote(st, &path, results.first(), forever.version);
                    return Ok(Value::Bool(true));
                }
                Err(zk::MultiWriteError::OperationFailed { index: 0, .. }) => continue,
                Err(zk::MultiWriteError::OperationFailed { .. }) => {
                    st.held.remove(&worker_id);
                    return Ok(Value::Bool(false));
                }
                Err(e) => return Err(format!("release of worker ID {worker_id}: {e}")),
            }
        }
        Ok(Value::Bool(false))
    }

    async fn peers(&self, st: &mut State) -> Result<Value, String> {
        let c = self.connected(st).await?;
        let children = |path: String| {
            let c = c.clone();
            async move {
                match c.list_children(&path).await {
                    Ok(names) => Ok(names),
                    Err(zk::Error::NoNode) => Ok(vec![]),
                    Err(e) => Err(format!("{path}: {e}")),
                }
            }
        };
        let temporary = format!("{}/leaf_temporary", self.root);
        let forever = format!("{}/forever", self.root);
        let mut entries: Vec<(u64, u64, i64)> = Vec::new();
        let mut live_ids = Vec::new();
        for name in children(temporary.clone()).await? {
            let Ok(id) = name.parse::<u64>() else {
                continue;
            };
            live_ids.push(id);
            if let Ok((raw, stat)) = c.get_data(&format!("{temporary}/{name}")).await {
                if let Some(r) = json_u64(&raw, "reported_ms").filter(|&r| r > 0) {
                    entries.push((id, r, stat.mtime));
                }
            }
        }
        for name in children(forever.clone()).await? {
            let Some(id) = name
                .rsplit_once('-')
                .and_then(|(_, s)| s.parse::<u64>().ok())
            else {
                continue;
            };
            if live_ids.contains(&id) {
                continue; // a segflake holder: its report is in its live node
            }
            if let Ok((raw, stat)) = c.get_data(&format!("{forever}/{name}")).await {
                if let Some(ts) = leaf_timestamp(&raw).filter(|&t| t > 0) {
                    entries.push((id, ts, stat.mtime));
                }
            }
        }
        let newest = entries.iter().map(|e| e.2).max().unwrap_or(0);
        Ok(segflake::lease::peers_answer(
            entries
                .into_iter()
                .filter(|e| newest - e.2 <= 10_000)
                .map(|(w, r, m)| (i128::from(w), i128::from(r), i128::from(newest - m))),
        ))
    }
}

impl Registry for ZooKeeperRegistry {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let st = &mut *st;
        // The client has no request timeout of its own: a request on a connection that
        // went silent waits until the session's connection timeout. Bound every call.
        let timeout = self.timeout;
        let name = call.name();
        let answer = self
            .runtime
            .block_on(async { tokio::time::timeout(timeout, self.dispatch(st, call)).await });
        answer.unwrap_or_else(|_| {
            Err(format!(
                "ZooKeeper {name} on {} took longer than {timeout:?}",
                self.hosts
            ))
        })
    }
}

impl ZooKeeperRegistry {
    async fn dispatch(&self, st: &mut State, call: &RegistryCall) -> Result<Value, String> {
        {
            match call {
                RegistryCall::Claim {
                    worker_id, owner, ..
                } => self.claim(st, *worker_id, owner).await,
                RegistryCall::Renew {
                    worker_id,
                    owner,
                    mark_ms,
                    reported_ms,
                    ..
                } => {
                    self.renew(st, *worker_id, owner, *mark_ms, *reported_ms)
                        .await
                }
                RegistryCall::Release {
                    worker_id, mark_ms, ..
                } => self.release(st, *worker_id, *mark_ms).await,
                RegistryCall::Peers => self.peers(st).await,
            }
        }
    }
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
            "--identity {identity:?} is not IP:PORT (Leaf's node address, e.g. 10.0.0.7:8080)"
        )),
    }
}

/// This host's outbound IPv4 address (no packet is sent), else 127.0.0.1.
fn default_ip() -> String {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect("10.255.255.255:1")?;
            s.local_addr()
        })
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|_| "127.0.0.1".into())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn json_u64(raw: &[u8], key: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(raw).ok()?;
    v.get(key)?.as_u64()
}

fn leaf_timestamp(raw: &[u8]) -> Option<u64> {
    json_u64(raw, "timestamp")
}

fn live_owner(raw: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(raw).ok()?;
    Some(v.get("owner")?.as_str()?.to_string())
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}
