//! A worker-ID lease registry on ZooKeeper in Leaf's layout (`zk://…`, `zk+tls://…`), over
//! the `zookeeper-client` crate on a one-worker tokio runtime owned by the registry
//! (callable and droppable from async code too: `rt.rs`).
//!
//! TLS (the `rustls` feature): the client's own TLS would bring rustls's second provider
//! (aws-lc, a C build) into every build, so the client talks to a loopback listener of this
//! process per server instead, and each of its connections is carried to the server over
//! this crate's rustls (ring): the chain to `ca=PATH` (else the system's CAs) and the
//! server's host name are checked, and a handshake that fails closes the connection, never
//! falls back.
//!
//! The protocol (which nodes, data, versions, and what the answers mean) is the core's
//! [`ZooKeeperProtocol`]; this adapter performs its requests and hands back the server's
//! replies. A session that expired is replaced on the next call, and every call is bounded
//! by the registry timeout.

#[cfg(feature = "rustls")]
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

#[cfg(feature = "rustls")]
use rustls::pki_types::ServerName;
#[cfg(feature = "rustls")]
use rustls::ClientConfig;
use segflake::lease::conversation::Protocol;
use segflake::lease::zookeeper::{
    default_identity, ZkContext, ZkError, ZkMode, ZkOp, ZkReply, ZkStat, ZkStep, ZooKeeperProtocol,
    ZooKeeperUrl,
};
use segflake::{Registry, RegistryCall, Value};
#[cfg(feature = "rustls")]
use tokio::net::{TcpListener, TcpStream};
#[cfg(feature = "rustls")]
use tokio_rustls::TlsConnector;
use zookeeper_client as zk;

use crate::tls;
use crate::RegistryOptions;

/// The ZooKeeper lease registry (`zk://…`, `zk+tls://…`) in Leaf's layout (its
/// `forever` and `ephemeral` nodes under the URL's root): the core's
/// [`ZooKeeperProtocol`], performed by `zookeeper-client` on a runtime of the registry's
/// own. A session that expired is replaced on the next call; every call is bounded by
/// `RegistryOptions::timeout_ms`.
pub struct ZooKeeperRegistry {
    zk: Zk,
    state: Mutex<State>,
    /// Dropped last, after the client and the carrier that run on it.
    runtime: crate::rt::Runtime,
}

/// The session's settings and the protocol, from a URL and the options.
pub(crate) struct Settings {
    hosts: String,
    session_timeout: Duration,
    timeout: Duration,
    protocol: ZooKeeperProtocol,
    /// With TLS: the CA file (`None`: the system's CAs).
    tls: Option<Option<String>>,
    url: String,
}

impl Settings {
    /// The settings of `url`:
    /// `zk[+tls]://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N&ca=PATH]`.
    /// `RegistryOptions::identity` wins over the URL's `identity` (Leaf's node address;
    /// default: this host's outbound IPv4 address and port 0).
    pub(crate) fn parse(url: &str, options: &RegistryOptions) -> crate::Result<Settings> {
        let (plain, use_tls, ca) = tls::url_tls(url).map_err(|e| crate::Error::invalid(url, e))?;
        let parsed =
            ZooKeeperUrl::parse(&plain).map_err(|e| crate::Error::invalid_quoted(&plain, e))?;
        let identity = options
            .identity
            .clone()
            .or(parsed.identity)
            .unwrap_or_else(|| default_identity(outbound_ip().as_deref()));
        let protocol = ZooKeeperProtocol::new(&parsed.root, &identity)
            .map_err(crate::Error::InvalidIdentity)?;
        #[cfg(not(feature = "rustls"))]
        if use_tls {
            let _ = ca;
            return Err(crate::Error::FeatureDisabled {
                url: url.to_string(),
                feature: "rustls",
            });
        }
        Ok(Settings {
            hosts: parsed.hosts,
            session_timeout: Duration::from_millis(parsed.session_timeout_ms),
            timeout: options.timeout(),
            protocol,
            tls: use_tls.then_some(ca),
            url: url.to_string(),
        })
    }
}

/// A ZooKeeper session's settings and (with TLS) its carrier; the calls run on the
/// runtime the carrier was started on.
pub(crate) struct Zk {
    hosts: String,
    /// With TLS: the loopback listeners the client connects to instead of `hosts`.
    carrier: Option<TlsCarrier>,
    session_timeout: Duration,
    timeout: Duration,
}

/// The session (when there is one) and the protocol's memory.
pub(crate) struct State {
    client: Option<zk::Client>,
    protocol: ZooKeeperProtocol,
}

impl Zk {
    /// The session's settings, and the state of its calls; with TLS, the carrier's
    /// listeners start on the current runtime.
    pub(crate) async fn start(settings: Settings) -> crate::Result<(Zk, State)> {
        #[cfg(not(feature = "rustls"))]
        let carrier = None;
        #[cfg(feature = "rustls")]
        let carrier = match settings.tls {
            None => None,
            Some(ca) => {
                let url = &settings.url;
                let config =
                    tls::verifying_config(ca.as_deref()).map_err(|e| crate::Error::tls(url, e))?;
                let carrier = TlsCarrier::start(&settings.hosts, config, ca).await;
                Some(carrier.map_err(|e| crate::Error::tls(url, e))?)
            }
        };
        #[cfg(not(feature = "rustls"))]
        let _ = (&settings.tls, &settings.url);
        let zk = Zk {
            hosts: settings.hosts,
            carrier,
            session_timeout: settings.session_timeout,
            timeout: settings.timeout,
        };
        let state = State {
            client: None,
            protocol: settings.protocol,
        };
        Ok((zk, state))
    }

    async fn connected(&self, st: &mut State) -> Result<zk::Client, String> {
        if let Some(c) = &st.client {
            if !c.state().is_terminated() {
                return Ok(c.clone());
            }
        }
        let connector = zk::Client::connector()
            .with_session_timeout(self.session_timeout)
            .with_connection_timeout(self.timeout * 2 / 3);
        let target = self.carrier.as_ref().map_or(&self.hosts, TlsCarrier::local);
        // Shorter than the call's own timeout, so the failure names its cause.
        let connected = tokio::time::timeout(self.timeout * 2 / 3, connector.connect(target)).await;
        let tls_failure = || self.carrier.as_ref().and_then(TlsCarrier::failure);
        let client = connected
            .map_err(|_| {
                tls_failure().unwrap_or_else(|| {
                    format!(
                        "no ZooKeeper session with {} within {:?}",
                        self.hosts, self.timeout
                    )
                })
            })?
            .map_err(|e| {
                tls_failure().unwrap_or_else(|| format!("ZooKeeper {}: {e}", self.hosts))
            })?;
        st.client = Some(client.clone());
        Ok(client)
    }

    async fn converse(&self, st: &mut State, call: RegistryCall) -> Result<Value, String> {
        let c = self.connected(st).await?;
        let context = ZkContext {
            session: c.session_id().0,
            now_ms: now_ms(),
        };
        let mut step = st.protocol.start(call, context);
        loop {
            match step {
                ZkStep::Op(op) => {
                    let reply = perform(&c, op).await;
                    step = st.protocol.resume(reply);
                }
                ZkStep::Answer(answer) => return answer,
            }
        }
    }

    /// Answers `call` within the timeout: the client has no request timeout of its own, so
    /// a request on a connection that went silent would wait until the session's
    /// connection timeout.
    pub(crate) async fn call(&self, st: &mut State, call: &RegistryCall) -> Result<Value, String> {
        let timeout = self.timeout;
        let answer = tokio::time::timeout(timeout, self.converse(st, call.clone())).await;
        answer.unwrap_or_else(|_| {
            Err(format!(
                "ZooKeeper {} on {} took longer than {timeout:?}",
                call.name(),
                self.hosts
            ))
        })
    }
}

impl ZooKeeperRegistry {
    /// The registry of `url`:
    /// `zk[+tls]://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N&ca=PATH]`.
    /// `RegistryOptions::identity` wins over the URL's `identity` (Leaf's node address;
    /// default: this host's outbound IPv4 address and port 0). Nothing is connected yet.
    pub fn new(url: &str, options: &RegistryOptions) -> crate::Result<ZooKeeperRegistry> {
        let settings = Settings::parse(url, options)?;
        let runtime = crate::rt::Runtime::one_worker("ZooKeeper")?;
        let (zk, state) = runtime.block_on(Zk::start(settings))?;
        Ok(ZooKeeperRegistry {
            zk,
            state: Mutex::new(state),
            runtime,
        })
    }
}

impl Registry for ZooKeeperRegistry {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let st: &mut State = &mut guard;
        self.runtime.block_on(self.zk.call(st, call))
    }
}

/// Without the `rustls` feature there is no carrier (a TLS URL is refused).
#[cfg(not(feature = "rustls"))]
enum TlsCarrier {}

#[cfg(not(feature = "rustls"))]
impl TlsCarrier {
    fn failure(&self) -> Option<String> {
        match *self {}
    }

    fn local(&self) -> &String {
        match *self {}
    }
}

/// One loopback listener per ZooKeeper server; each connection accepted is carried to that
/// server over TLS. The listeners live as long as the registry's runtime.
#[cfg(feature = "rustls")]
struct TlsCarrier {
    /// The listeners' addresses, as the client takes hosts.
    local: String,
    /// The listeners' tasks, stopped when the carrier goes.
    listeners: Vec<tokio::task::AbortHandle>,
    /// Why the last connection to a server failed, if it did.
    last_failure: Arc<Mutex<Option<String>>>,
}

#[cfg(feature = "rustls")]
impl TlsCarrier {
    fn local(&self) -> &String {
        &self.local
    }

    async fn start(
        hosts: &str,
        config: ClientConfig,
        ca: Option<String>,
    ) -> Result<TlsCarrier, String> {
        let connector = TlsConnector::from(Arc::new(config));
        let last_failure = Arc::new(Mutex::new(None));
        let mut local = Vec::new();
        let mut listeners = Vec::new();
        for server in hosts.split(',') {
            let host = server.rsplit_once(':').map_or(server, |(h, _)| h);
            let name = ServerName::try_from(host.trim_matches(['[', ']']).to_string())
                .map_err(|e| format!("{host:?} is not a host name or IP address: {e}"))?;
            let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|e| {
                format!("cannot listen on the loopback for the TLS connection: {e}")
            })?;
            local.push(
                listener
                    .local_addr()
                    .map_err(|e| e.to_string())?
                    .to_string(),
            );
            let (server, connector, failure, ca) = (
                server.to_string(),
                connector.clone(),
                last_failure.clone(),
                ca.clone(),
            );
            let task = tokio::spawn(async move {
                while let Ok((mut plain, _)) = listener.accept().await {
                    let (server, connector, name, failure, ca) = (
                        server.clone(),
                        connector.clone(),
                        name.clone(),
                        failure.clone(),
                        ca.clone(),
                    );
                    tokio::spawn(async move {
                        let secure = match TcpStream::connect(&server).await {
                            Ok(tcp) => connector.connect(name, tcp).await,
                            Err(e) => Err(e),
                        };
                        match secure {
                            Ok(mut secure) => {
                                *failure.lock().unwrap_or_else(|p| p.into_inner()) = None;
                                let _ =
                                    tokio::io::copy_bidirectional(&mut plain, &mut secure).await;
                            }
                            Err(e) => {
                                let why = tls::explain(&e.to_string(), &server, ca.as_deref());
                                *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
                            }
                        }
                    });
                }
            });
            listeners.push(task.abort_handle());
        }
        Ok(TlsCarrier {
            local: local.join(","),
            listeners,
            last_failure,
        })
    }

    fn failure(&self) -> Option<String> {
        self.last_failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[cfg(feature = "rustls")]
impl Drop for TlsCarrier {
    fn drop(&mut self) {
        // The listeners close; connections already carried end with their client.
        for listener in &self.listeners {
            listener.abort();
        }
    }
}

/// Performs one of the protocol's requests.
async fn perform(c: &zk::Client, op: ZkOp) -> ZkReply {
    let open = |mode: zk::CreateMode| mode.with_acls(zk::Acls::anyone_all());
    let result = match op {
        ZkOp::Mkdir { path } => c
            .mkdir(&path, &open(zk::CreateMode::Persistent))
            .await
            .map(|()| ZkReply::Done),
        ZkOp::Create { path, data, mode } => {
            let mode = match mode {
                ZkMode::Persistent => zk::CreateMode::Persistent,
                ZkMode::PersistentSequential => zk::CreateMode::PersistentSequential,
                ZkMode::Ephemeral => zk::CreateMode::Ephemeral,
            };
            let sequential = mode == zk::CreateMode::PersistentSequential;
            c.create(&path, data.as_bytes(), &open(mode))
                .await
                .map(|(_, seq)| {
                    ZkReply::Created(if sequential {
                        format!("{path}{seq}")
                    } else {
                        path
                    })
                })
        }
        ZkOp::Exists { path } => c
            .check_stat(&path)
            .await
            .map(|s| ZkReply::Stat(s.map(|s| stat(&s)))),
        ZkOp::Get { path } => c
            .get_data(&path)
            .await
            .map(|(data, s)| ZkReply::Data(String::from_utf8_lossy(&data).into_owned(), stat(&s))),
        ZkOp::Children { path } => c.list_children(&path).await.map(ZkReply::Children),
        ZkOp::Set {
            path,
            data,
            version,
        } => c
            .set_data(&path, data.as_bytes(), Some(version))
            .await
            .map(|s| ZkReply::Stat(Some(stat(&s)))),
        ZkOp::Delete { path, version } => {
            c.delete(&path, Some(version)).await.map(|()| ZkReply::Done)
        }
        ZkOp::Multi(ops) => return multi(c, ops).await,
    };
    result.unwrap_or_else(|e| ZkReply::error(error(e)))
}

async fn multi(c: &zk::Client, ops: Vec<ZkOp>) -> ZkReply {
    let mut writer = c.new_multi_writer();
    for op in ops {
        let added = match op {
            ZkOp::Set {
                path,
                data,
                version,
            } => writer.add_set_data(&path, data.as_bytes(), Some(version)),
            ZkOp::Delete { path, version } => writer.add_delete(&path, Some(version)),
            other => {
                return ZkReply::error(ZkError::Other(format!(
                    "{} is not a multi-operation request",
                    other.name()
                )))
            }
        };
        if let Err(e) = added {
            return ZkReply::error(error(e));
        }
    }
    match writer.commit().await {
        Ok(_) => ZkReply::Done,
        Err(zk::MultiWriteError::OperationFailed { index, source }) => ZkReply::Failed {
            index,
            error: error(source),
        },
        Err(e) => ZkReply::error(ZkError::Other(e.to_string())),
    }
}

fn error(e: zk::Error) -> ZkError {
    match e {
        zk::Error::NoNode => ZkError::NoNode,
        zk::Error::NodeExists => ZkError::NodeExists,
        zk::Error::BadVersion => ZkError::BadVersion,
        other => ZkError::Other(other.to_string()),
    }
}

fn stat(s: &zk::Stat) -> ZkStat {
    ZkStat {
        version: s.version,
        ctime: s.ctime,
        mtime: s.mtime,
        ephemeral_owner: s.ephemeral_owner,
    }
}

/// This host's outbound IPv4 address (no packet is sent).
fn outbound_ip() -> Option<String> {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect("10.255.255.255:1")?;
            s.local_addr()
        })
        .map(|a| a.ip().to_string())
        .ok()
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
