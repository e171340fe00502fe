//! A worker-ID lease registry on Redis (`--registry redis://…`) and the serial counter
//! (`segflake serial --counter redis://…`): the core's Lua scripts sent over a minimal
//! RESP2 client on one TCP connection.
//!
//! The connection is opened on first use and dropped after any I/O or protocol error, so
//! the next call reconnects; every read and write is bounded by the registry timeout.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::Duration;

use segflake::lease::conversation::Protocol;
use segflake::lease::redis::{script_text, RedisOp, RedisProtocol, RedisReply};
use segflake::lease::schema::redis as scripts;
use segflake::{Registry, RegistryCall, Value};

use crate::error::CliError;

/// Where the registry lives, from `redis://[[user]:password@]host[:port][/db]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisUrl {
    pub host: String,
    pub port: u16,
    pub db: u32,
    pub user: Option<String>,
    pub password: Option<String>,
}

impl RedisUrl {
    pub fn parse(url: &str) -> Result<RedisUrl, String> {
        let allowed = "allowed: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]";
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| format!("{url:?} is not a redis:// URL; {allowed}"))?;
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
        Ok(RedisUrl {
            host: host.trim_matches(['[', ']']).to_string(),
            port,
            db,
            user,
            password,
        })
    }
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
}

pub(crate) struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Connection {
    pub(crate) fn open(url: &RedisUrl, timeout: Duration) -> Result<Connection, String> {
        let addrs: Vec<_> = (url.host.as_str(), url.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}:{}: {e}", url.host, url.port))?
            .collect();
        let mut last = format!("{}:{} resolves to no address", url.host, url.port);
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(stream) => {
                    let io = |e: std::io::Error| e.to_string();
                    stream.set_read_timeout(Some(timeout)).map_err(io)?;
                    stream.set_write_timeout(Some(timeout)).map_err(io)?;
                    stream.set_nodelay(true).map_err(io)?;
                    let mut c = Connection {
                        reader: BufReader::new(stream.try_clone().map_err(io)?),
                        writer: stream,
                    };
                    if let Some(password) = &url.password {
                        let mut auth = vec!["AUTH".as_bytes()];
                        if let Some(user) = &url.user {
                            auth.push(user.as_bytes());
                        }
                        auth.push(password.as_bytes());
                        c.command(&auth)?.into_value()?;
                    }
                    if url.db != 0 {
                        c.command(&[b"SELECT", url.db.to_string().as_bytes()])?
                            .into_value()?;
                    }
                    return Ok(c);
                }
                Err(e) => last = format!("cannot connect to {addr}: {e}"),
            }
        }
        Err(last)
    }

    pub(crate) fn command(&mut self, parts: &[&[u8]]) -> Result<Reply, String> {
        let mut out = format!("*{}\r\n", parts.len()).into_bytes();
        for p in parts {
            out.extend_from_slice(format!("${}\r\n", p.len()).as_bytes());
            out.extend_from_slice(p);
            out.extend_from_slice(b"\r\n");
        }
        self.writer
            .write_all(&out)
            .map_err(|e| format!("write: {e}"))?;
        read_reply(&mut self.reader, 0)
    }
}

fn read_reply(r: &mut impl BufRead, depth: u32) -> Result<Reply, String> {
    if depth > 8 {
        return Err("a reply nested deeper than 8 arrays".into());
    }
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)
        .map_err(|e| format!("read: {e}"))?;
    if line.len() < 3 || !line.ends_with(b"\r\n") {
        return Err("the connection closed mid-reply".into());
    }
    let text = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
    let number = |t: &str| {
        t.parse::<i64>()
            .map_err(|_| format!("a malformed reply length or integer {t:?}"))
    };
    Ok(match line[0] {
        b'+' => Reply::Status(text),
        b'-' => Reply::Error(text),
        b':' => Reply::Int(number(&text)?),
        b'$' => match number(&text)? {
            -1 => Reply::Bulk(None),
            n if (0..=512 << 20).contains(&n) => {
                let mut buf = vec![0; n as usize + 2];
                r.read_exact(&mut buf).map_err(|e| format!("read: {e}"))?;
                buf.truncate(n as usize);
                Reply::Bulk(Some(buf))
            }
            n => return Err(format!("a bulk reply of {n} bytes")),
        },
        b'*' => match number(&text)? {
            -1 => Reply::Array(None),
            n if (0..=1 << 20).contains(&n) => Reply::Array(Some(
                (0..n)
                    .map(|_| read_reply(r, depth + 1))
                    .collect::<Result<_, _>>()?,
            )),
            n => return Err(format!("an array reply of {n} items")),
        },
        other => return Err(format!("an unknown reply type {:?}", other as char)),
    })
}

/// One connection that runs the core's Lua scripts with EVAL, reconnecting after any
/// error; every read and write is bounded by its timeout.
pub struct ScriptClient {
    url: RedisUrl,
    timeout: Duration,
    connection: Mutex<Option<Connection>>,
}

impl ScriptClient {
    /// A client for `url` (a refusal says what a redis:// URL looks like).
    pub fn new(url: &str, timeout_ms: u64) -> Result<ScriptClient, String> {
        Ok(ScriptClient {
            url: RedisUrl::parse(url)?,
            timeout: Duration::from_millis(timeout_ms.max(1)),
            connection: Mutex::new(None),
        })
    }

    /// `EVAL script keys args`, the reply as a [`Value`] (an error reply as `Err`).
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
        Ok(match role? {
            Value::List(role) => match role.get(2) {
                Some(Value::List(replicas)) => replicas.len() as u64,
                _ => 0,
            },
            _ => 0,
        })
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
        let numkeys = keys.len().to_string();
        let mut parts: Vec<&[u8]> = vec![b"EVAL", script.as_bytes(), numkeys.as_bytes()];
        parts.extend(keys.iter().map(|k| k.as_bytes()));
        parts.extend(args.iter().map(|a| a.as_bytes()));
        let reply = match conn.command(&parts) {
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
        if let Ok(Value::List(pair)) = conn
            .command(&[b"CONFIG", b"GET", name.as_bytes()])
            .and_then(Reply::into_value)
        {
            if let [Value::Str(k), Value::Str(v)] = pair.as_slice() {
                settings.push((k.clone(), v.clone()));
            }
        }
    }
    scripts::durability_warning(&settings)
}

/// The registry: the core's protocol ([`RedisProtocol`]), its scripts sent with EVAL.
pub struct RedisRegistry {
    client: ScriptClient,
    protocol: Mutex<RedisProtocol>,
}

impl RedisRegistry {
    pub fn new(url: &str, timeout_ms: u64) -> Result<RedisRegistry, CliError> {
        let client = ScriptClient::new(url, timeout_ms)
            .map_err(|e| CliError::usage_for("next", format!("--registry: {e}")))?;
        if let Some(warning) = durability_warning(&client) {
            eprintln!("segflake: warning: {warning}");
        }
        let wait_ms = (timeout_ms / 2).max(1);
        Ok(RedisRegistry {
            client,
            protocol: Mutex::new(RedisProtocol::new(scripts::PREFIX, wait_ms)),
        })
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

    #[test]
    fn replies_parse_into_registry_answers() {
        let parse = |b: &[u8]| read_reply(&mut &b[..], 0).and_then(Reply::into_value);
        assert_eq!(
            parse(b":1790000005000\r\n"),
            Ok(Value::Int(1_790_000_005_000))
        );
        assert_eq!(parse(b"$-1\r\n"), Ok(Value::Null));
        assert_eq!(
            parse(b"*1\r\n*3\r\n:4\r\n:17\r\n:3\r\n"),
            Ok(Value::List(vec![Value::List(vec![
                Value::Int(4),
                Value::Int(17),
                Value::Int(3)
            ])]))
        );
        assert_eq!(parse(b"-NOAUTH x\r\n"), Err("NOAUTH x".into()));
        assert!(parse(b":12").is_err(), "a truncated reply");
        assert!(parse(b"$5\r\nab").is_err(), "a truncated bulk");
        assert!(parse(b"?\r\n").is_err());
    }
}
