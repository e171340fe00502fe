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
use segflake::{Registry, RegistryCall, SerialGenerator, Value};

use crate::tls;
use crate::{CounterOptions, RegistryOptions};

/// Where the registry lives, from `redis[s]://[[user]:password@]host[:port][/db][?ca=PATH]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RedisUrl {
    pub host: String,
    pub port: u16,
    pub db: u32,
    pub user: Option<String>,
    pub password: Option<String>,
    /// `rediss://`: TLS, the server's certificate checked (chain and host name).
    pub tls: bool,
    /// `?ca=PATH` (`rediss://` only): the CA certificates to trust, instead of the system's.
    pub ca: Option<String>,
    /// The URL as the `redis` crate takes it (without `ca`).
    url: String,
}

impl RedisUrl {
    pub fn parse(url: &str) -> Result<RedisUrl, String> {
        let allowed = "allowed: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or \
                       rediss://[[USER]:PASSWORD@]HOST[:PORT][/DB][?ca=PATH]";
        let (bare, found) = tls::take_params(url, &["ca"]);
        let ca = found.into_iter().next().flatten();
        let (tls, rest) = match (
            bare.strip_prefix("redis://"),
            bare.strip_prefix("rediss://"),
        ) {
            (Some(rest), _) => (false, rest),
            (_, Some(rest)) => (true, rest),
            _ => return Err(format!("{url:?} is not a redis:// URL; {allowed}")),
        };
        if rest.contains('?') || rest.contains('#') {
            return Err(format!(
                "{url:?}: the only parameter taken is ca=PATH (rediss://); {allowed}"
            ));
        }
        if ca.is_some() && !tls {
            return Err(format!(
                "{url:?}: ca=PATH is for TLS connections: use rediss://; {allowed}"
            ));
        }
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((a, r)) => (Some(a), r),
            None => (None, rest),
        };
        let (hostport, db) = match rest.split_once('/') {
            Some((h, "")) => (h, 0),
            Some((h, d)) => (
                h,
                d.parse::<u32>()
                    .map_err(|_| format!("database {d:?} in {url:?} is not a number; {allowed}"))?,
            ),
            None => (rest, 0),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>()
                    .map_err(|_| format!("port {p:?} in {url:?} is not a port; {allowed}"))?,
            ),
            None => (hostport, 6379),
        };
        if host.is_empty() {
            return Err(format!("{url:?} names no host; {allowed}"));
        }
        let (user, password) = match auth {
            None => (None, None),
            Some(a) => match a.split_once(':') {
                Some((u, p)) => ((!u.is_empty()).then(|| u.to_string()), Some(p.to_string())),
                None => (None, Some(a.to_string())),
            },
        };
        #[cfg(feature = "rustls")]
        if let Some(path) = &ca {
            tls::load_roots(path).map_err(|e| format!("{url:?}: {e}"))?;
        }
        Ok(RedisUrl {
            host: host.trim_matches(['[', ']']).to_string(),
            port,
            db,
            user,
            password,
            tls,
            ca,
            url: bare,
        })
    }

    /// A client of the `redis` crate for this URL.
    fn client(&self) -> Result<redis::Client, String> {
        let made = match &self.ca {
            None => redis::Client::open(self.url.as_str()),
            #[cfg(not(feature = "rustls"))]
            Some(_) => return Err(tls::NEEDS_RUSTLS.into()),
            #[cfg(feature = "rustls")]
            Some(path) => {
                let pem = std::fs::read(path)
                    .map_err(|e| format!("cannot read the CA file {path:?}: {e}"))?;
                redis::Client::build_with_tls(
                    self.url.as_str(),
                    redis::TlsCertificates {
                        client_tls: None,
                        root_cert: Some(pem),
                    },
                )
            }
        };
        made.map_err(|e| format!("{}: {e}", self.target()))
    }

    /// `host:port`, for messages.
    fn target(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// Where connections come from: a URL (the client made on each connect), or a client the
/// caller configured.
#[derive(Debug, Clone)]
pub(crate) enum RedisSource {
    Url(RedisUrl),
    Client(redis::Client),
}

impl RedisSource {
    pub(crate) fn client(&self) -> Result<redis::Client, String> {
        match self {
            RedisSource::Url(url) => url.client(),
            RedisSource::Client(client) => Ok(client.clone()),
        }
    }

    /// `host:port`, for messages.
    pub(crate) fn target(&self) -> String {
        match self {
            RedisSource::Url(url) => url.target(),
            RedisSource::Client(client) => client.get_connection_info().addr().to_string(),
        }
    }

    fn tls(&self) -> bool {
        match self {
            RedisSource::Url(url) => url.tls,
            RedisSource::Client(client) => matches!(
                client.get_connection_info().addr(),
                redis::ConnectionAddr::TcpTls { .. }
            ),
        }
    }

    fn ca(&self) -> Option<&str> {
        match self {
            RedisSource::Url(url) => url.ca.as_deref(),
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
        if parsed.tls && !cfg!(feature = "rustls") {
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

    fn from_redis(v: redis::Value) -> Reply {
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

pub(crate) struct Connection {
    conn: redis::Connection,
}

impl Connection {
    pub(crate) fn open(url: &RedisSource, timeout: Duration) -> Result<Connection, String> {
        let client = url.client()?;
        let conn = client
            .get_connection_with_timeout(timeout)
            .map_err(|e| url.connect_error(&e.to_string(), timeout))?;
        let io = |e: redis::RedisError| e.to_string();
        conn.set_read_timeout(Some(timeout)).map_err(io)?;
        conn.set_write_timeout(Some(timeout)).map_err(io)?;
        Ok(Connection { conn })
    }

    pub(crate) fn command(&mut self, parts: &[&[u8]]) -> Result<Reply, String> {
        let (name, args) = parts.split_first().ok_or("an empty command")?;
        let mut cmd = redis::cmd(&String::from_utf8_lossy(name));
        for a in args {
            cmd.arg(*a);
        }
        Reply::from_result(cmd.query(&mut self.conn))
    }

    /// Runs `script` by EVALSHA (loading it when the server lacks it).
    pub(crate) fn eval(
        &mut self,
        script: &redis::Script,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<Reply, String> {
        let mut invocation = script.prepare_invoke();
        for k in keys {
            invocation.key(*k);
        }
        for a in args {
            invocation.arg(*a);
        }
        Reply::from_result(invocation.invoke(&mut self.conn))
    }
}

/// One connection that runs the core's Lua scripts (EVALSHA), reconnecting after any
/// error; every read and write is bounded by its timeout.
pub(crate) struct ScriptClient {
    url: RedisSource,
    timeout: Duration,
    connection: Mutex<Option<Connection>>,
}

impl ScriptClient {
    /// A client for `url` (a refusal says what a redis:// URL looks like, or that TLS
    /// needs the `rustls` feature).
    pub(crate) fn new(url: &str, timeout: Duration) -> crate::Result<ScriptClient> {
        Ok(ScriptClient::with_source(RedisSource::parse(url)?, timeout))
    }

    pub(crate) fn with_source(source: RedisSource, timeout: Duration) -> ScriptClient {
        ScriptClient {
            url: source,
            timeout,
            connection: Mutex::new(None),
        }
    }

    /// `EVALSHA script keys args` (EVAL when the server lacks the script), the reply as a
    /// [`Value`] (an error reply as `Err`).
    pub fn eval(&self, script: &str, keys: &[String], args: &[String]) -> Result<Value, String> {
        self.eval_then(script, keys, args, |_, v| Ok(v))
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
        let mut acked = None;
        let value = self.eval_then(script, keys, args, |conn, v| {
            if let Some((replicas, timeout_ms)) = wait {
                let (n, ms) = (replicas.to_string(), timeout_ms.to_string());
                let reply = conn.command(&[b"WAIT", n.as_bytes(), ms.as_bytes()])?;
                acked = reply.into_value()?.as_u64();
            }
            Ok(v)
        })?;
        Ok((value, acked))
    }

    /// The number of replicas connected to the server (`ROLE`'s third element on a
    /// primary; 0 on a replica).
    pub fn replicas(&self) -> Result<u64, String> {
        let mut guard = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(Connection::open(&self.url, self.timeout)?);
        }
        let conn = guard.as_mut().expect("opened above");
        let role = conn.command(&[b"ROLE"]).and_then(Reply::into_value);
        if role.is_err() {
            *guard = None;
        }
        Ok(replicas_of(role?))
    }

    fn eval_then(
        &self,
        script: &str,
        keys: &[String],
        args: &[String],
        then: impl FnOnce(&mut Connection, Value) -> Result<Value, String>,
    ) -> Result<Value, String> {
        let mut guard = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(Connection::open(&self.url, self.timeout)?);
        }
        let conn = guard.as_mut().expect("opened above");
        let keys: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let reply = match conn.eval(&redis::Script::new(script), &keys, &args) {
            Ok(reply) => reply,
            Err(e) => {
                // The stream may hold half a reply: start over on the next call.
                *guard = None;
                return Err(e);
            }
        };
        let value = reply.into_value()?;
        let conn = guard.as_mut().expect("opened above");
        let out = then(conn, value);
        if out.is_err() {
            // A follow-up command may have timed out mid-reply: start over.
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
        RedisRegistry {
            client,
            protocol: Mutex::new(RedisProtocol::new(scripts::PREFIX, wait_ms(options))),
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
            .eval(counter::REDIS_SCRIPT, &[key], &argv)
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
    fn urls_parse_with_their_defaults_and_refuse_what_is_not_redis() {
        let u = RedisUrl::parse("redis://127.0.0.1:6380/2").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.db), ("127.0.0.1", 6380, 2));
        let u = RedisUrl::parse("redis://app:s3cr@t@cache").unwrap();
        assert_eq!((u.port, u.db), (6379, 0));
        assert_eq!(u.user.as_deref(), Some("app"));
        assert_eq!(u.password.as_deref(), Some("s3cr@t"));
        let u = RedisUrl::parse("redis://:pw@h/").unwrap();
        assert_eq!((u.user, u.password.as_deref()), (None, Some("pw")));
        for bad in ["http://h", "redis://", "redis://h:x", "redis://h/db"] {
            let e = RedisUrl::parse(bad).unwrap_err();
            assert!(e.contains("allowed: redis://"), "{bad}: {e}");
        }
    }

    #[cfg(feature = "rustls")]
    #[test]
    fn rediss_urls_take_a_ca_file_and_plain_urls_refuse_one() {
        let u = RedisUrl::parse("rediss://cache:6380/1").unwrap();
        assert!(u.tls && u.ca.is_none());
        assert_eq!((u.port, u.db), (6380, 1));
        let e = RedisUrl::parse("redis://h?ca=/x.pem").unwrap_err();
        assert!(e.contains("use rediss://"), "{e}");
        let e = RedisUrl::parse("rediss://h?ca=/no/such/ca.pem").unwrap_err();
        assert!(e.contains("/no/such/ca.pem"), "{e}");
        let e = RedisUrl::parse("rediss://h?verify=no").unwrap_err();
        assert!(e.contains("only parameter"), "{e}");
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
