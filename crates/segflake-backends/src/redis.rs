//! A worker-ID lease registry on Redis (`redis://…` or `rediss://…`), the serial counter,
//! and the connection the Redis segment store shares with them: the core's Lua scripts run
//! through the `redis` crate (EVALSHA, and EVAL when the server does not have the script
//! yet), over TLS for `rediss://` (the `rustls` feature; `?ca=PATH` names the PEM file of
//! the certificate authority to trust instead of the system's).
//!
//! The connection is opened on first use and dropped after any I/O or protocol error, so
//! the next call reconnects; every read and write is bounded by the registry timeout.

use std::sync::Mutex;
use std::time::Duration;

use segflake::lease::conversation::Protocol;
use segflake::lease::redis::{script_text, RedisOp, RedisProtocol, RedisReply};
use segflake::lease::schema::redis as scripts;
use segflake::redis::{RedisMode, RedisTarget, ReplicaWait};
use segflake::{Registry, RegistryCall, SerialGenerator, Value};

use crate::tls;
use crate::{CounterOptions, RegistryOptions};

/// Where the store, registry or counter lives: the core's reading of the URL
/// ([`RedisTarget`]: a single server, a Sentinel-monitored primary or a Cluster).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedisUrl {
    pub target: RedisTarget,
}

impl RedisUrl {
    pub fn parse(url: &str) -> Result<RedisUrl, String> {
        let target = RedisTarget::parse(url)?;
        #[cfg(feature = "rustls")]
        if let Some(path) = &target.ca {
            tls::load_roots(path).map_err(|e| format!("{url:?}: {e}"))?;
        }
        Ok(RedisUrl { target })
    }

    /// The CA file's certificates for the `redis` crate (`None`: the system's roots).
    fn certificates(&self) -> Result<Option<Vec<u8>>, String> {
        match &self.target.ca {
            None => Ok(None),
            #[cfg(not(feature = "rustls"))]
            Some(_) => Err(tls::NEEDS_RUSTLS.into()),
            #[cfg(feature = "rustls")]
            Some(path) => std::fs::read(path)
                .map(Some)
                .map_err(|e| format!("cannot read the CA file {path:?}: {e}")),
        }
    }

    /// A client of the data server at `host:port` (the URL's credentials and database).
    pub(crate) fn server_client(&self, host: &str, port: u16) -> Result<redis::Client, String> {
        self.client_of(&self.target.server_url(host, port))
    }

    /// A client of the sentinel at `host:port` (no credentials: those are the servers').
    pub(crate) fn sentinel_client(&self, host: &str, port: u16) -> Result<redis::Client, String> {
        let mut sentinel = self.target.clone();
        (sentinel.user, sentinel.password, sentinel.db) = (None, None, 0);
        self.client_of(&sentinel.server_url(host, port))
    }

    fn client_of(&self, url: &str) -> Result<redis::Client, String> {
        let made = match self.certificates()? {
            None => redis::Client::open(url),
            #[cfg(not(feature = "rustls"))]
            Some(_) => return Err(tls::NEEDS_RUSTLS.into()),
            #[cfg(feature = "rustls")]
            Some(pem) => redis::Client::build_with_tls(
                url,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem),
                },
            ),
        };
        made.map_err(|e| format!("{}: {e}", self.target()))
    }

    /// A client of the cluster whose seed nodes the URL lists.
    pub(crate) fn cluster_client(
        &self,
        timeout: Duration,
    ) -> Result<redis::cluster::ClusterClient, String> {
        let t = &self.target;
        let seeds: Vec<String> = t.nodes.iter().map(|(h, p)| t.server_url(h, *p)).collect();
        let builder = redis::cluster::ClusterClientBuilder::new(seeds)
            .connection_timeout(timeout)
            .response_timeout(timeout)
            .retries(1);
        #[cfg(feature = "rustls")]
        let builder = match self.certificates()? {
            Some(pem) => builder.certs(redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(pem),
            }),
            None => builder,
        };
        builder
            .build()
            .map_err(|e| format!("{}: {e}", self.target()))
    }

    /// The servers, for messages (no credentials).
    fn target(&self) -> String {
        self.target.describe()
    }
}

/// The first answer of the sentinels at `sentinels` to `SENTINEL get-master-addr-by-name`:
/// where the primary of `service` is now. `ask` sends the command to one sentinel.
pub(crate) fn primary_of<E: std::fmt::Display>(
    service: &str,
    sentinels: &[(String, u16)],
    mut ask: impl FnMut(&str, u16) -> Result<redis::Value, E>,
) -> Result<(String, u16), String> {
    let mut heard = Vec::new();
    for (host, port) in sentinels {
        let answer = ask(host, *port).map_err(|e| e.to_string());
        if let Some(primary) = primary_in(service, host, *port, answer, &mut heard) {
            return Ok(primary);
        }
    }
    Err(no_primary(service, &heard))
}

/// The primary a sentinel's `answer` names, or `None` with what it said added to `heard`.
pub(crate) fn primary_in(
    service: &str,
    host: &str,
    port: u16,
    answer: Result<redis::Value, String>,
    heard: &mut Vec<String>,
) -> Option<(String, u16)> {
    match answer {
        Ok(redis::Value::Array(pair)) => match pair.as_slice() {
            [redis::Value::BulkString(h), redis::Value::BulkString(p)] => {
                let named = String::from_utf8_lossy(h).into_owned();
                match String::from_utf8_lossy(p).parse::<u16>() {
                    Ok(p) => return Some((named, p)),
                    Err(_) => heard.push(format!("{host}:{port} answered a port that is not one")),
                }
            }
            _ => heard.push(format!("{host}:{port} answered {pair:?}")),
        },
        Ok(redis::Value::Nil) => heard.push(format!(
            "{host}:{port} monitors no primary named {service:?}"
        )),
        Ok(other) => heard.push(format!("{host}:{port} answered {other:?}")),
        Err(e) => heard.push(format!("{host}:{port}: {e}")),
    }
    None
}

/// The error when no sentinel named the primary of `service`.
pub(crate) fn no_primary(service: &str, heard: &[String]) -> String {
    format!(
        "no sentinel named the primary {service:?}: {}",
        heard.join("; ")
    )
}

/// The error when the server the sentinels named is not a primary (`ROLE`).
pub(crate) fn not_primary(service: &str, host: &str, port: u16) -> String {
    format!(
        "{host}:{port}, which the sentinels name the primary of {service:?}, is not a primary \
         now (a failover is under way); the next call asks again"
    )
}

/// The replica wait from the server's answers: `ROLE` (or, on a cluster, `CLUSTER NODES`)
/// and `CONFIG GET min-replicas-to-write` (either may be refused), unless `configured`.
pub(crate) fn wait_from(
    configured: Option<u64>,
    cluster: bool,
    role: Result<Value, String>,
    config: Result<Value, String>,
    timeout: Duration,
) -> ReplicaWait {
    let timeout_ms = timeout.as_millis() as u64;
    if configured.is_some() {
        return ReplicaWait::resolve(configured, 0, 0, timeout_ms);
    }
    let connected = match (cluster, role) {
        (true, Ok(Value::Str(nodes))) => cluster_replicas(&nodes),
        (false, Ok(role)) => replicas_of(role),
        _ => 0,
    };
    let min = match config {
        Ok(Value::List(pair)) => {
            let texts: Vec<String> = pair
                .into_iter()
                .map(|v| match v {
                    Value::Str(s) => s,
                    other => other.to_json(),
                })
                .collect();
            segflake::redis::min_replicas_to_write(&texts)
        }
        _ => 0,
    };
    ReplicaWait::resolve(None, min, connected, timeout_ms)
}

/// Whether a `ROLE` reply is a primary's (a sentinel's answer can be stale mid-failover).
pub(crate) fn is_primary(role: &redis::Value) -> bool {
    match role {
        redis::Value::Array(parts) => {
            matches!(
                parts.first(),
                Some(redis::Value::BulkString(r)) if r.as_slice() == b"master"
            ) || matches!(parts.first(), Some(redis::Value::SimpleString(r)) if r == "master")
        }
        _ => false,
    }
}

/// The replicas a cluster's primaries have, from a `CLUSTER NODES` reply: the fewest that
/// any primary serving slots has connected (`slave` nodes whose link is up), so that the
/// wait asks every primary for no more replicas than it has.
pub(crate) fn cluster_replicas(nodes: &str) -> u64 {
    let lines: Vec<Vec<&str>> = nodes.lines().map(|l| l.split(' ').collect()).collect();
    let primaries = lines
        .iter()
        .filter(|f| f.get(2).is_some_and(|flags| flags.contains("master")) && f.len() > 8);
    primaries
        .map(|p| {
            lines
                .iter()
                .filter(|f| {
                    f.get(2).is_some_and(|flags| flags.contains("slave"))
                        && f.get(3) == p.first()
                        && f.get(7) == Some(&"connected")
                })
                .count() as u64
        })
        .min()
        .unwrap_or(0)
}

/// Where connections come from: a URL (the client made on each connect), or a client the
/// caller configured.
#[derive(Debug, Clone)]
pub(crate) enum RedisSource {
    Url(RedisUrl),
    Client(redis::Client),
}

impl RedisSource {
    /// The servers, for messages.
    pub(crate) fn target(&self) -> String {
        match self {
            RedisSource::Url(url) => url.target(),
            RedisSource::Client(client) => client.get_connection_info().addr().to_string(),
        }
    }

    /// The replicas a write must reach when the URL says (`replicas=N`).
    pub(crate) fn replicas(&self) -> Option<u64> {
        match self {
            RedisSource::Url(url) => url.target.replicas,
            RedisSource::Client(_) => None,
        }
    }

    /// A Cluster URL.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, RedisSource::Url(u) if u.target.mode == RedisMode::Cluster)
    }

    fn tls(&self) -> bool {
        match self {
            RedisSource::Url(url) => url.target.tls,
            RedisSource::Client(client) => matches!(
                client.get_connection_info().addr(),
                redis::ConnectionAddr::TcpTls { .. }
            ),
        }
    }

    fn ca(&self) -> Option<&str> {
        match self {
            RedisSource::Url(url) => url.target.ca.as_deref(),
            RedisSource::Client(_) => None,
        }
    }

    /// Why a connection within `timeout` failed with `e`, naming a TLS handshake's failure.
    pub(crate) fn connect_error(&self, e: &str, timeout: Duration) -> String {
        if self.tls() && tls::is_tls_error(e) {
            tls::explain(e, &self.target(), self.ca())
        } else if self.tls() && (e.contains("timed out") || e.contains("temporarily unavailable")) {
            format!(
                "TLS connection to {} failed: no TLS handshake within {timeout:?} (is it the \
                 server's tls-port? rediss:// never falls back to plaintext); {e}",
                self.target()
            )
        } else {
            format!("cannot connect to {}: {e}", self.target())
        }
    }

    /// The source of `url` (a refusal says what a redis:// URL looks like, or that TLS
    /// needs the `rustls` feature).
    pub(crate) fn parse(url: &str) -> crate::Result<RedisSource> {
        let shown = crate::redact(url);
        let parsed = RedisUrl::parse(url).map_err(|e| crate::Error::invalid(&shown, e))?;
        if parsed.target.tls && !cfg!(feature = "rustls") {
            return Err(crate::Error::FeatureDisabled {
                url: shown,
                feature: "rustls",
            });
        }
        Ok(RedisSource::Url(parsed))
    }
}

/// The number of replicas in a `ROLE` reply (its third element on a primary; 0 on a
/// replica).
pub(crate) fn replicas_of(role: Value) -> u64 {
    match role {
        Value::List(role) => match role.get(2) {
            Some(Value::List(replicas)) => replicas.len() as u64,
            _ => 0,
        },
        _ => 0,
    }
}

/// A `CONFIG GET NAME` reply as the pair the core's `durability_warning` reads.
pub(crate) fn setting_pair(reply: Value) -> Option<(String, String)> {
    match reply {
        Value::List(pair) => match pair.as_slice() {
            [Value::Str(k), Value::Str(v)] => Some((k.clone(), v.clone())),
            _ => None,
        },
        _ => None,
    }
}

/// The counter's key of one second: the prefix, a colon and the core's key.
pub(crate) fn counter_key(prefix: &str, key: &str) -> String {
    format!("{prefix}:{key}")
}

/// The half of the registry timeout a lease write waits for replicas (`WAIT`).
pub(crate) fn wait_ms(options: &RegistryOptions) -> u64 {
    (options.timeout_ms / 2).max(1)
}

/// A Redis reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    Status(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// The reply as a registry answer: nil → null, integers, nested arrays → lists.
    pub(crate) fn into_value(self) -> Result<Value, String> {
        Ok(match self {
            Reply::Error(e) => return Err(e),
            Reply::Status(s) => Value::Str(s),
            Reply::Int(i) => Value::Int(i.into()),
            Reply::Bulk(None) | Reply::Array(None) => Value::Null,
            Reply::Bulk(Some(b)) => Value::Str(String::from_utf8_lossy(&b).into_owned()),
            Reply::Array(Some(items)) => Value::List(
                items
                    .into_iter()
                    .map(Reply::into_value)
                    .collect::<Result<_, _>>()?,
            ),
        })
    }

    pub(crate) fn from_redis(v: redis::Value) -> Reply {
        use redis::Value as V;
        match v {
            V::Nil => Reply::Bulk(None),
            V::Int(i) => Reply::Int(i),
            V::BulkString(b) => Reply::Bulk(Some(b)),
            V::Array(items) | V::Set(items) => {
                Reply::Array(Some(items.into_iter().map(Reply::from_redis).collect()))
            }
            V::SimpleString(s) => Reply::Status(s),
            V::Okay => Reply::Status("OK".into()),
            V::ServerError(e) => Reply::Error(match e.details() {
                Some(d) => format!("{} {d}", e.code()),
                None => e.code().to_string(),
            }),
            other => Reply::Status(format!("{other:?}")),
        }
    }

    /// A command's result: a server's error reply is a [`Reply::Error`]; anything else
    /// (I/O, protocol) an `Err`, after which the connection should be dropped.
    pub(crate) fn from_result(result: redis::RedisResult<redis::Value>) -> Result<Reply, String> {
        match result {
            Ok(v) => Ok(Reply::from_redis(v)),
            Err(e) => match e.code() {
                Some(code) => Ok(Reply::Error(match e.detail() {
                    Some(d) => format!("{code} {d}"),
                    None => code.to_string(),
                })),
                None => Err(e.to_string()),
            },
        }
    }
}

/// One connection to the primary: of a single server, of the primary the sentinels name
/// (asked again on every connect), or to a cluster (each key on the primary of its slot).
pub(crate) struct Connection {
    conn: Link,
    /// A cluster: scripts run by EVAL (routed by their first key), and `WAIT` is routed to
    /// the same slot's primary, whose one connection ran the script.
    cluster: bool,
}

enum Link {
    Single(redis::Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl Link {
    fn like(&mut self) -> &mut dyn redis::ConnectionLike {
        match self {
            Link::Single(c) => c,
            Link::Cluster(c) => &mut **c,
        }
    }
}

impl Connection {
    pub(crate) fn open(source: &RedisSource, timeout: Duration) -> Result<Connection, String> {
        let single = |client: redis::Client| -> Result<redis::Connection, String> {
            let conn = client
                .get_connection_with_timeout(timeout)
                .map_err(|e| source.connect_error(&e.to_string(), timeout))?;
            let io = |e: redis::RedisError| e.to_string();
            conn.set_read_timeout(Some(timeout)).map_err(io)?;
            conn.set_write_timeout(Some(timeout)).map_err(io)?;
            Ok(conn)
        };
        let boxed = |conn: redis::Connection| Connection {
            conn: Link::Single(conn),
            cluster: false,
        };
        let url = match source {
            RedisSource::Client(client) => return Ok(boxed(single(client.clone())?)),
            RedisSource::Url(url) => url,
        };
        match &url.target.mode {
            RedisMode::Single => {
                let (host, port) = &url.target.nodes[0];
                Ok(boxed(single(url.server_client(host, *port)?)?))
            }
            RedisMode::Sentinel { service } => {
                let (host, port) = primary_of(service, &url.target.nodes, |h, p| {
                    let mut sentinel = single(url.sentinel_client(h, p)?)?;
                    redis::cmd("SENTINEL")
                        .arg("get-master-addr-by-name")
                        .arg(service)
                        .query::<redis::Value>(&mut sentinel)
                        .map_err(|e| e.to_string())
                })?;
                let mut conn = single(url.server_client(&host, port)?)?;
                let role = redis::cmd("ROLE")
                    .query::<redis::Value>(&mut conn)
                    .map_err(|e| e.to_string())?;
                if !is_primary(&role) {
                    return Err(not_primary(service, &host, port));
                }
                Ok(boxed(conn))
            }
            RedisMode::Cluster => {
                let conn = url
                    .cluster_client(timeout)?
                    .get_connection()
                    .map_err(|e| source.connect_error(&e.to_string(), timeout))?;
                let io = |e: redis::RedisError| e.to_string();
                conn.set_read_timeout(Some(timeout)).map_err(io)?;
                conn.set_write_timeout(Some(timeout)).map_err(io)?;
                Ok(Connection {
                    conn: Link::Cluster(Box::new(conn)),
                    cluster: true,
                })
            }
        }
    }

    pub(crate) fn command(&mut self, parts: &[&[u8]]) -> Result<Reply, String> {
        let (name, args) = parts.split_first().ok_or("an empty command")?;
        let mut cmd = redis::cmd(&String::from_utf8_lossy(name));
        for a in args {
            cmd.arg(*a);
        }
        Reply::from_result(cmd.query(self.conn.like()))
    }

    /// Runs the script `text` by EVALSHA (loading it when the server lacks it; EVAL on a
    /// cluster).
    pub(crate) fn eval(
        &mut self,
        text: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<Reply, String> {
        if self.cluster {
            return Reply::from_result(eval_cmd(text, keys, args).query(self.conn.like()));
        }
        let script = redis::Script::new(text);
        let mut invocation = script.prepare_invoke();
        for k in keys {
            invocation.key(*k);
        }
        for a in args {
            invocation.arg(*a);
        }
        Reply::from_result(invocation.invoke(self.conn.like()))
    }

    /// [`eval`](Connection::eval), then `WAIT wait.replicas wait.timeout_ms` on the same
    /// connection (one pipeline): the script's reply, and how many replicas acknowledged it.
    pub(crate) fn eval_waiting(
        &mut self,
        text: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
        wait: Option<ReplicaWait>,
    ) -> Result<(Reply, Option<u64>), String> {
        let Some(wait) = wait.filter(ReplicaWait::waits) else {
            return Ok((self.eval(text, keys, args)?, None));
        };
        let (reply, waited) = match &mut self.conn {
            // One pipeline: one connection.
            Link::Single(conn) => {
                return waited_replies(wait_pipeline(text, keys, args, wait).query(conn));
            }
            // The script on its key's primary, then WAIT routed to that slot's primary: the
            // same node, on the one connection the cluster keeps to it.
            Link::Cluster(conn) => {
                use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
                let key = keys
                    .first()
                    .ok_or("a script without a key cannot be routed")?;
                let reply = Reply::from_result(eval_cmd(text, keys, args).query(&mut **conn))?;
                if matches!(reply, Reply::Error(_)) {
                    return Ok((reply, None));
                }
                let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(
                    Route::with_key(key, SlotAddr::Master),
                ));
                let waited = Reply::from_result(conn.route_command(&wait_cmd(wait), route))?;
                (reply, waited)
            }
        };
        Ok((reply, acked_of(waited)?))
    }

    /// The replica wait of this connection's server: `replicas` when the URL gave it, else
    /// resolved from the server (`ROLE`, or `CLUSTER NODES` on a cluster, and
    /// `min-replicas-to-write`), as the core's rule says.
    pub(crate) fn resolve_wait(
        &mut self,
        configured: Option<u64>,
        timeout: Duration,
    ) -> ReplicaWait {
        if configured.is_some() {
            return wait_from(configured, false, Ok(Value::Null), Ok(Value::Null), timeout);
        }
        let ask: &[&[u8]] = if self.cluster {
            &[b"CLUSTER", b"NODES"]
        } else {
            &[b"ROLE"]
        };
        let role = self.command(ask).and_then(Reply::into_value);
        let config = self
            .command(&[b"CONFIG", b"GET", b"min-replicas-to-write"])
            .and_then(Reply::into_value);
        wait_from(None, self.cluster, role, config, timeout)
    }
}

/// `WAIT replicas timeout_ms`.
fn wait_cmd(wait: ReplicaWait) -> redis::Cmd {
    let mut cmd = redis::cmd("WAIT");
    cmd.arg(wait.replicas).arg(wait.timeout_ms);
    cmd
}

/// `EVAL` of the script, then `WAIT`, as one pipeline (so on one connection), error replies
/// kept as replies.
pub(crate) fn wait_pipeline<K: redis::ToRedisArgs, A: redis::ToRedisArgs>(
    text: &str,
    keys: &[K],
    args: &[A],
    wait: ReplicaWait,
) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.ignore_errors()
        .add_command(eval_cmd(text, keys, args))
        .add_command(wait_cmd(wait));
    pipe
}

/// What [`wait_pipeline`] answered: the script's reply, and how many replicas acknowledged
/// it (`None` when the script was refused); an I/O failure is `Err`.
pub(crate) fn waited_replies(
    replies: redis::RedisResult<Vec<redis::Value>>,
) -> Result<(Reply, Option<u64>), String> {
    let replies = match replies {
        Ok(replies) => replies,
        Err(e) => return Reply::from_result(Err(e)).map(|r| (r, None)),
    };
    let mut replies = replies.into_iter().map(Reply::from_redis);
    let (Some(reply), Some(waited)) = (replies.next(), replies.next()) else {
        return Err("the EVAL and WAIT pipeline answered fewer than two replies".into());
    };
    match reply {
        Reply::Error(_) => Ok((reply, None)),
        _ => Ok((reply, acked_of(waited)?)),
    }
}

/// `WAIT`'s count of the replicas that acknowledged.
fn acked_of(waited: Reply) -> Result<Option<u64>, String> {
    Ok(waited.into_value()?.as_u64())
}

/// `EVAL text numkeys keys… args…`.
pub(crate) fn eval_cmd<K: redis::ToRedisArgs, A: redis::ToRedisArgs>(
    text: &str,
    keys: &[K],
    args: &[A],
) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(text).arg(keys.len());
    for k in keys {
        cmd.arg(k);
    }
    for a in args {
        cmd.arg(a);
    }
    cmd
}

/// One connection that runs the core's Lua scripts (EVALSHA), reconnecting after any
/// error; every read and write is bounded by its timeout. The replica wait of its writes is
/// resolved on its first connection and kept (a failover does not change it).
pub(crate) struct ScriptClient {
    url: RedisSource,
    timeout: Duration,
    connection: Mutex<Option<Connection>>,
    wait: Mutex<Option<ReplicaWait>>,
}

impl ScriptClient {
    /// A client for `url` (a refusal says what a Redis URL looks like, or that TLS needs
    /// the `rustls` feature).
    pub(crate) fn new(url: &str, timeout: Duration) -> crate::Result<ScriptClient> {
        Ok(ScriptClient::with_source(RedisSource::parse(url)?, timeout))
    }

    pub(crate) fn with_source(source: RedisSource, timeout: Duration) -> ScriptClient {
        ScriptClient {
            url: source,
            timeout,
            connection: Mutex::new(None),
            wait: Mutex::new(None),
        }
    }

    /// The replicas a write must reach, as the URL says (`None`: resolved from the server).
    pub(crate) fn configured_replicas(&self) -> Option<u64> {
        self.url.replicas()
    }

    /// A write the IDs are issued from: [`eval`](ScriptClient::eval), then `WAIT` for the
    /// resolved replica wait; too few acknowledgements are the error the core words for
    /// `what` (nothing may be issued from the reply).
    pub fn eval_replicated(
        &self,
        what: &str,
        script: &str,
        keys: &[String],
        args: &[String],
    ) -> Result<Value, String> {
        self.with_connection(|conn, wait| {
            let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            let (reply, acked) = conn.eval_waiting(script, &keys, &args, Some(wait))?;
            let value = reply.into_value()?;
            if let Some(acked) = acked {
                wait.check(what, acked)?;
            }
            Ok(value)
        })
    }

    /// [`eval`](ScriptClient::eval), then with `wait` = (replicas, timeout_ms) `WAIT` on the
    /// same connection: the script's reply and how many replicas acknowledged it.
    pub fn eval_waiting(
        &self,
        script: &str,
        keys: &[String],
        args: &[String],
        wait: Option<(u64, u64)>,
    ) -> Result<(Value, Option<u64>), String> {
        self.with_connection(|conn, _| {
            let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            let wait = wait.map(|(replicas, timeout_ms)| ReplicaWait {
                replicas,
                timeout_ms,
            });
            let (reply, acked) = conn.eval_waiting(script, &keys, &args, wait)?;
            Ok((reply.into_value()?, acked))
        })
    }

    /// The number of replicas connected to the server (`ROLE`'s third element on a
    /// primary; 0 on a replica). On a cluster, whose `ROLE` would reach any node, the
    /// resolved wait's count.
    pub fn replicas(&self) -> Result<u64, String> {
        let cluster = self.url.is_cluster();
        self.with_connection(|conn, wait| {
            if cluster {
                return Ok(wait.replicas);
            }
            Ok(replicas_of(conn.command(&[b"ROLE"])?.into_value()?))
        })
    }

    /// `work` on the connection (opened when there is none, the replica wait resolved on
    /// the first); an I/O or protocol failure drops the connection (the stream may hold half
    /// a reply), so the next call starts over. A server's error reply keeps it.
    fn with_connection<T>(
        &self,
        work: impl FnOnce(&mut Connection, ReplicaWait) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut guard = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(Connection::open(&self.url, self.timeout)?);
        }
        let conn = guard.as_mut().expect("opened above");
        let wait = *crate::stores::lock(&self.wait)
            .get_or_insert_with(|| conn.resolve_wait(self.url.replicas(), self.timeout));
        let out = work(conn, wait);
        if out.is_err() {
            *guard = None;
        }
        out
    }
}

/// The core's judgement of the server's persistence and eviction settings
/// ([`scripts::durability_warning`]); `None` when they keep the marks, or when the server
/// cannot be asked now (it is down, or refuses `CONFIG`).
fn durability_warning(client: &ScriptClient) -> Option<String> {
    let mut conn = Connection::open(&client.url, client.timeout).ok()?;
    let mut settings = Vec::new();
    for name in scripts::DURABILITY_SETTINGS {
        if let Ok(reply) = conn
            .command(&[b"CONFIG", b"GET", name.as_bytes()])
            .and_then(Reply::into_value)
        {
            settings.extend(setting_pair(reply));
        }
    }
    scripts::durability_warning(&settings)
}

/// The Redis lease registry (`redis://…`, `rediss://…`): the core's protocol
/// ([`RedisProtocol`]), its scripts run by EVALSHA on one connection, reconnecting after
/// any error; every read and write is bounded by `RegistryOptions::timeout_ms`.
pub struct RedisRegistry {
    client: ScriptClient,
    protocol: Mutex<RedisProtocol>,
}

impl RedisRegistry {
    /// The registry of `url`, `redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?ca=PATH]`.
    /// When the server can be asked now, its persistence and eviction settings are checked
    /// (the core's `durability_warning`) and a warning handed to
    /// `RegistryOptions::on_warning`.
    pub fn new(url: &str, options: &RegistryOptions) -> crate::Result<RedisRegistry> {
        let client = ScriptClient::new(url, options.timeout())?;
        Ok(RedisRegistry::with_client(client, options))
    }

    /// The registry on the server of a client configured by the caller (address,
    /// database, credentials, TLS); as [`new`](RedisRegistry::new) otherwise.
    pub fn from_client(client: redis::Client, options: &RegistryOptions) -> RedisRegistry {
        let client = ScriptClient::with_source(RedisSource::Client(client), options.timeout());
        RedisRegistry::with_client(client, options)
    }

    fn with_client(client: ScriptClient, options: &RegistryOptions) -> RedisRegistry {
        if let Some(warning) = durability_warning(&client) {
            options.warn(&warning);
        }
        let protocol = RedisProtocol::new(scripts::PREFIX, wait_ms(options))
            .with_replicas(client.configured_replicas());
        RedisRegistry {
            client,
            protocol: Mutex::new(protocol),
        }
    }

    fn perform(&self, op: &RedisOp) -> RedisReply {
        let reply = match op {
            RedisOp::Role => self.client.replicas().map(RedisReply::Replicas),
            RedisOp::Eval {
                script,
                keys,
                args,
                wait,
            } => match script_text(script) {
                Some(text) => self
                    .client
                    .eval_waiting(text, keys, args, *wait)
                    .map(|(value, acked)| RedisReply::Eval { value, acked }),
                None => Err(format!("no script {script:?}")),
            },
        };
        reply.unwrap_or_else(RedisReply::Failed)
    }
}

impl Registry for RedisRegistry {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        let mut protocol = self.protocol.lock().unwrap_or_else(|p| p.into_inner());
        protocol.converse(call.clone(), (), |op| self.perform(&op))
    }
}

/// A shared counter of serial numbers (`redis://…`): the core's counter script
/// ([`segflake::serial::counter::REDIS_SCRIPT`]) on a key per second, so that hosts with the
/// same digits, offset and window never hand out the same serial.
pub struct RedisCounter {
    client: ScriptClient,
    prefix: String,
}

impl RedisCounter {
    /// The counter of `url`, `redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?ca=PATH]`;
    /// keys are `PREFIX:serial:<yyMMddHHmmss><worker digits>` with
    /// `CounterOptions::prefix`. Nothing is connected yet.
    pub fn new(url: &str, options: &CounterOptions) -> crate::Result<RedisCounter> {
        Ok(RedisCounter {
            client: ScriptClient::new(url, options.timeout())?,
            prefix: options.prefix.clone(),
        })
    }

    /// The counter on the server of a client configured by the caller.
    pub fn from_client(client: redis::Client, options: &CounterOptions) -> RedisCounter {
        RedisCounter {
            client: ScriptClient::with_source(RedisSource::Client(client), options.timeout()),
            prefix: options.prefix.clone(),
        }
    }
}

impl crate::SerialCounter for RedisCounter {
    fn sequence(&self, generator: &SerialGenerator, unix_seconds: u64) -> segflake::Result<u64> {
        use segflake::serial::counter;
        let key = counter_key(&self.prefix, &generator.counter_key(unix_seconds)?);
        let argv = generator.counter_args(unix_seconds).map(|a| a.to_string());
        let reply = self
            .client
            .eval_replicated("the counter step", counter::REDIS_SCRIPT, &[key], &argv)
            .map_err(|e| segflake::Error::Store {
                message: format!("the counter failed: {e}"),
            })?;
        generator.counter_sequence(unix_seconds, &reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_the_cores_and_a_refusal_lists_every_spelling() {
        let u = RedisUrl::parse("redis://app:s3cr@t@127.0.0.1:6380/2").unwrap();
        assert_eq!(u.target.nodes, vec![("127.0.0.1".to_string(), 6380)]);
        assert_eq!(u.target.password.as_deref(), Some("s3cr@t"));
        assert_eq!(u.target.db, 2);
        for bad in ["http://h", "redis://", "redis://h:x", "redis://h/db"] {
            let e = RedisUrl::parse(bad).unwrap_err();
            assert!(e.contains("redis+sentinel://"), "{bad}: {e}");
        }
    }

    #[cfg(feature = "rustls")]
    #[test]
    fn rediss_urls_take_a_ca_file_and_plain_urls_refuse_one() {
        let u = RedisUrl::parse("rediss+sentinel://s1,s2:26380/orders").unwrap();
        assert!(u.target.tls && u.target.ca.is_none());
        let e = RedisUrl::parse("redis://h?ca=/x.pem").unwrap_err();
        assert!(e.contains("use rediss"), "{e}");
        let e = RedisUrl::parse("rediss://h?ca=/no/such/ca.pem").unwrap_err();
        assert!(e.contains("/no/such/ca.pem"), "{e}");
        let e = RedisUrl::parse("rediss://h?verify=no").unwrap_err();
        assert!(e.contains("\"verify\" is not taken"), "{e}");
    }

    #[test]
    fn the_first_sentinel_that_names_the_primary_wins() {
        use redis::Value as V;
        let sentinels = [
            ("a".to_string(), 1),
            ("b".to_string(), 2),
            ("c".to_string(), 3),
        ];
        let bulk = |s: &str| V::BulkString(s.as_bytes().to_vec());
        let mut asked = Vec::new();
        let found = primary_of("orders", &sentinels, |h, _| {
            asked.push(h.to_string());
            match h {
                "a" => Err("connection refused"),
                "b" => Ok(V::Nil),
                _ => Ok(V::Array(vec![bulk("127.0.0.9"), bulk("7001")])),
            }
        });
        assert_eq!(found, Ok(("127.0.0.9".to_string(), 7001)));
        assert_eq!(asked, ["a", "b", "c"]);
        let e = primary_of("orders", &sentinels[..2], |h, _| match h {
            "a" => Err("connection refused"),
            _ => Ok(V::Nil),
        })
        .unwrap_err();
        assert!(e.contains("a:1: connection refused"), "{e}");
        assert!(
            e.contains("b:2 monitors no primary named \"orders\""),
            "{e}"
        );
        assert!(is_primary(&V::Array(vec![bulk("master"), V::Int(1)])));
        assert!(!is_primary(&V::Array(vec![bulk("slave")])));
    }

    #[test]
    fn a_cluster_counts_its_connected_replicas() {
        let nodes = "\
a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
b1 127.0.0.1:7003@17003 slave a1 0 1 4 connected
c1 127.0.0.1:7005@17005 slave a1 0 1 4 connected
b2 127.0.0.1:7004@17004 slave a2 0 1 5 connected
a2 127.0.0.1:7001@17001 master - 0 1 2 connected 5461-16383";
        assert_eq!(cluster_replicas(nodes), 1, "a2 has one replica");
        let failed = nodes.replace(
            "slave a2 0 1 5 connected",
            "slave,fail a2 0 1 5 disconnected",
        );
        assert_eq!(cluster_replicas(&failed), 0);
        assert_eq!(cluster_replicas(""), 0);
    }

    #[test]
    fn replies_become_registry_answers() {
        use redis::Value as V;
        let value = |v| Reply::from_redis(v).into_value();
        assert_eq!(
            value(V::Int(1_790_000_005_000)),
            Ok(Value::Int(1_790_000_005_000))
        );
        assert_eq!(value(V::Nil), Ok(Value::Null));
        assert_eq!(
            value(V::Array(vec![V::Array(vec![
                V::Int(4),
                V::Int(17),
                V::Int(3)
            ])])),
            Ok(Value::List(vec![Value::List(vec![
                Value::Int(4),
                Value::Int(17),
                Value::Int(3)
            ])]))
        );
        assert_eq!(value(V::Okay), Ok(Value::Str("OK".into())));
    }
}
