//! Redis deployments, decided once for every language: how a URL names a single server, a
//! Sentinel-monitored primary or a Cluster, and the rule that makes a write count only once
//! replicas have it.
//!
//! ```text
//! redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]
//! redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]…]/SERVICE[/DB]
//! redis+cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]…]
//! ```
//!
//! `rediss…` for TLS. Parameters: `ca=PATH` (TLS only: the PEM file of the certificate
//! authorities to trust) and `replicas=N` (how many replicas a write must reach; 0 turns the
//! wait off). Sentinel's own port defaults to 26379; the servers' to 6379. The credentials
//! are the data servers'; sentinels are asked without them.
//!
//! **The replica wait.** A write acknowledged by the primary alone vanishes when a replica
//! that never received it is promoted; a range allocated from it would then be allocated
//! again. So every Redis write segflake issues from (a segment allocation, a give back, a
//! serial counter step, a lease renewal) is followed on the same connection by
//! `WAIT <replicas> <timeout>`, and a write fewer replicas acknowledged fails: nothing is
//! issued from it ([`ReplicaWait::check`]). The count is the URL's `replicas=N`, else
//! every replica the primary had at start-up ([`ReplicaWait::resolve`]).

use std::fmt::Write as _;

use crate::error::quoted;
use crate::host::json_string;

/// Sentinel's default port.
pub const SENTINEL_PORT: u16 = 26379;
/// Redis's default port.
pub const REDIS_PORT: u16 = 6379;

/// How the URL reaches the primary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisMode {
    /// `redis://`: one server, the primary.
    Single,
    /// `redis+sentinel://`: the sentinels in `nodes` name the primary of `service`, and name
    /// the new one after a failover.
    Sentinel {
        /// The monitored primary's name (`sentinel monitor <service> …`).
        service: String,
    },
    /// `redis+cluster://`: `nodes` are seeds; the cluster's slot map says which primary holds
    /// a key, and `MOVED`/`ASK` replies are followed.
    Cluster,
}

/// A parsed Redis URL: what every language's adapter connects to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisTarget {
    /// Single server, Sentinel or Cluster.
    pub mode: RedisMode,
    /// `rediss…`: TLS, the server's certificate checked (chain and host name).
    pub tls: bool,
    /// `HOST:PORT` pairs: the server, the sentinels, or the cluster's seed nodes (never empty).
    pub nodes: Vec<(String, u16)>,
    /// The database number (always 0 for Cluster).
    pub db: u32,
    /// The user of `USER:PASSWORD@` (ACL), when given.
    pub user: Option<String>,
    /// The password, when given.
    pub password: Option<String>,
    /// `replicas=N`: the replicas a write must reach; `None` resolves it at start-up.
    pub replicas: Option<u64>,
    /// `ca=PATH` (TLS only).
    pub ca: Option<String>,
}

const SPELLINGS: &str = "allowed: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], \
     redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB], \
     redis+cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...] (rediss... for TLS), \
     with the parameters replicas=N and, for TLS, ca=PATH";

impl RedisTarget {
    /// Parses a Redis URL; the error says what was wrong and lists the allowed spellings.
    pub fn parse(url: &str) -> Result<RedisTarget, String> {
        let bad = |what: String| format!("{url}: {what}; {SPELLINGS}", url = quoted(url));
        let (scheme, rest) = url
            .split_once(':')
            .and_then(|(scheme, rest)| Some((scheme, rest.strip_prefix("//")?)))
            .ok_or_else(|| bad("not a URL".into()))?;
        let (tls, mode) = match scheme.to_ascii_lowercase().as_str() {
            "redis" => (false, 0),
            "rediss" => (true, 0),
            "redis+sentinel" => (false, 1),
            "rediss+sentinel" => (true, 1),
            "redis+cluster" => (false, 2),
            "rediss+cluster" => (true, 2),
            other => {
                return Err(bad(format!(
                    "the scheme {other} is not a Redis scheme",
                    other = quoted(other)
                )))
            }
        };
        if rest.contains('#') {
            return Err(bad("a fragment (#) is not taken".into()));
        }
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut replicas = None;
        let mut ca = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "replicas" => {
                    replicas = Some(v.parse::<u64>().ok().filter(|n| *n <= 1000).ok_or_else(
                        || {
                            bad(format!(
                                "replicas={v} is not a number of replicas 0..=1000",
                                v = quoted(v)
                            ))
                        },
                    )?)
                }
                "ca" if !tls => {
                    return Err(bad(
                        "ca=PATH is for TLS connections: use rediss://, rediss+sentinel:// or \
                         rediss+cluster://"
                            .into(),
                    ))
                }
                "ca" if v.is_empty() => return Err(bad("ca= names no file".into())),
                "ca" => ca = Some(percent_decode(v)),
                other => {
                    return Err(bad(format!(
                        "the parameter {other} is not taken",
                        other = quoted(other)
                    )))
                }
            }
        }
        let (auth, rest) = match rest.rsplit_once('@') {
            Some((a, r)) => (Some(a), r),
            None => (None, rest),
        };
        let (user, password) = match auth {
            None => (None, None),
            Some(a) => match a.split_once(':') {
                Some((u, p)) => (
                    (!u.is_empty()).then(|| percent_decode(u)),
                    Some(percent_decode(p)),
                ),
                None => (None, Some(percent_decode(a))),
            },
        };
        let (hosts, path) = rest.split_once('/').unwrap_or((rest, ""));
        let default_port = if mode == 1 { SENTINEL_PORT } else { REDIS_PORT };
        let mut nodes = Vec::new();
        for node in hosts.split(',') {
            nodes.push(parse_node(node, default_port).map_err(bad)?);
        }
        if mode == 0 && nodes.len() > 1 {
            return Err(bad(
                "a redis:// URL names one server; list several with redis+sentinel:// or \
                 redis+cluster://"
                    .into(),
            ));
        }
        let number = |d: &str| {
            d.parse::<u32>()
                .map_err(|_| bad(format!("database {d} is not a number", d = quoted(d))))
        };
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let (mode, db) = match (mode, parts.as_slice()) {
            (0, []) => (RedisMode::Single, 0),
            (0, [d]) => (RedisMode::Single, number(d)?),
            (1, [service]) | (1, [service, _]) => (
                RedisMode::Sentinel {
                    service: percent_decode(service),
                },
                parts.get(1).map_or(Ok(0), |d| number(d))?,
            ),
            (1, []) => {
                return Err(bad(
                    "a Sentinel URL names the monitored primary: /SERVICE after the sentinels"
                        .into(),
                ))
            }
            (2, []) => (RedisMode::Cluster, 0),
            (2, _) => {
                return Err(bad(
                    "a Cluster has only database 0: no path after the nodes".into(),
                ))
            }
            _ => {
                return Err(bad(format!(
                    "the path {path} is not /DB or /SERVICE[/DB]",
                    path = quoted(path)
                )))
            }
        };
        Ok(RedisTarget {
            mode,
            tls,
            nodes,
            db,
            user,
            password,
            replicas,
            ca,
        })
    }

    /// The plain `redis[s]://[[USER]:PASSWORD@]HOST:PORT/DB` of one data server (`host`,
    /// `port`): what a client library that knows no Sentinel or Cluster connects to.
    pub fn server_url(&self, host: &str, port: u16) -> String {
        let mut url = String::from(if self.tls { "rediss://" } else { "redis://" });
        if self.user.is_some() || self.password.is_some() {
            if let Some(user) = &self.user {
                url.push_str(&percent_encode(user));
            }
            if let Some(password) = &self.password {
                url.push(':');
                url.push_str(&percent_encode(password));
            }
            url.push('@');
        }
        if host.contains(':') {
            let _ = write!(url, "[{host}]:{port}/{}", self.db);
        } else {
            let _ = write!(url, "{host}:{port}/{}", self.db);
        }
        url
    }

    /// `HOST:PORT[,HOST:PORT…]` and the service, for messages (no credentials).
    pub fn describe(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(|(h, p)| format!("{h}:{p}")).collect();
        match &self.mode {
            RedisMode::Single => nodes.join(","),
            RedisMode::Sentinel { service } => {
                format!(
                    "primary {service} of the sentinels {}",
                    nodes.join(","),
                    service = quoted(service)
                )
            }
            RedisMode::Cluster => format!("the cluster at {}", nodes.join(",")),
        }
    }

    /// The target as JSON, for the bindings: `{"mode": "single"|"sentinel"|"cluster",
    /// "service", "tls", "nodes": [[host, port]…], "db", "user", "password", "replicas",
    /// "ca"}` (absent values as `null`).
    pub fn to_json(&self) -> String {
        let opt = |v: &Option<String>| v.as_deref().map_or("null".into(), json_string);
        let (mode, service) = match &self.mode {
            RedisMode::Single => ("single", "null".to_string()),
            RedisMode::Sentinel { service } => ("sentinel", json_string(service)),
            RedisMode::Cluster => ("cluster", "null".to_string()),
        };
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|(h, p)| format!("[{}, {p}]", json_string(h)))
            .collect();
        format!(
            "{{\"mode\": \"{mode}\", \"service\": {service}, \"tls\": {}, \"nodes\": [{}], \
             \"db\": {}, \"user\": {}, \"password\": {}, \"replicas\": {}, \"ca\": {}}}",
            self.tls,
            nodes.join(", "),
            self.db,
            opt(&self.user),
            opt(&self.password),
            self.replicas.map_or("null".into(), |n| n.to_string()),
            opt(&self.ca),
        )
    }
}

fn parse_node(node: &str, default_port: u16) -> Result<(String, u16), String> {
    let (host, port) = if let Some(v6) = node.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(|| {
            format!(
                "{node} opens [ for an IPv6 address without closing it",
                node = quoted(node)
            )
        })?;
        match after.strip_prefix(':') {
            Some(p) => (host, Some(p)),
            None if after.is_empty() => (host, None),
            None => return Err(format!("{node} is not HOST[:PORT]", node = quoted(node))),
        }
    } else {
        match node.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (node, None),
        }
    };
    if host.is_empty() {
        return Err(format!("{node} names no host", node = quoted(node)));
    }
    let port = match port {
        None => default_port,
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
            format!(
                "port {p} of {node} is not a port 1..=65535",
                p = quoted(p),
                node = quoted(node)
            )
        })?,
    };
    Ok((host.to_string(), port))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// How many replicas a write must reach, and how long to wait for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaWait {
    /// `WAIT`'s first argument; 0: no wait (a single server, or `replicas=0`).
    pub replicas: u64,
    /// `WAIT`'s timeout in milliseconds (at least 1: `WAIT n 0` would block forever).
    pub timeout_ms: u64,
}

impl ReplicaWait {
    /// The wait for a store, registry or counter whose calls are bounded by `timeout_ms`:
    /// half of it goes to the replicas (the rule the lease renewals already follow).
    ///
    /// `replicas`: the URL's `replicas=N` when given; else every replica the primary had
    /// connected at start-up (`ROLE`), or the server's `min-replicas-to-write` if that is
    /// more. Every replica, not one: while the old primary still takes writes (a switchover,
    /// a partition that leaves it a replica), a write one replica acknowledged is lost when
    /// another is promoted; a write every replica has survives any promotion. The price is
    /// that writes fail while a replica is missing (`replicas=N` chooses fewer knowingly).
    pub fn resolve(
        configured: Option<u64>,
        min_replicas_to_write: u64,
        connected_replicas: u64,
        timeout_ms: u64,
    ) -> ReplicaWait {
        let replicas = configured.unwrap_or(min_replicas_to_write.max(connected_replicas));
        ReplicaWait {
            replicas,
            timeout_ms: (timeout_ms / 2).max(1),
        }
    }

    /// Whether `WAIT` must follow the write.
    pub fn waits(&self) -> bool {
        self.replicas > 0
    }

    /// `Ok` when `acked` replicas (`WAIT`'s answer) are enough; else the error of the write
    /// `what` (nothing may be issued from it).
    pub fn check(&self, what: &str, acked: u64) -> Result<(), String> {
        if acked >= self.replicas {
            return Ok(());
        }
        Err(format!(
            "{what} reached {acked} of the {} replica(s) it must reach within {} ms (WAIT); \
             a failover could lose it, so nothing is issued from it (the URL's replicas=N sets \
             how many replicas a write must reach; 0 turns the wait off)",
            self.replicas, self.timeout_ms
        ))
    }
}

/// The number in `CONFIG GET min-replicas-to-write`'s reply `[name, value]`, or 0 (refused,
/// as managed services do, or not set).
pub fn min_replicas_to_write(reply: &[String]) -> u64 {
    reply.get(1).and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> RedisTarget {
        RedisTarget::parse(url).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn single_server_urls_keep_their_defaults() {
        let t = parse("redis://127.0.0.1");
        assert_eq!(t.mode, RedisMode::Single);
        assert_eq!(t.nodes, vec![("127.0.0.1".into(), 6379)]);
        assert_eq!(
            (t.db, t.tls, t.replicas, t.ca.clone()),
            (0, false, None, None)
        );
        let t = parse("rediss://app:p%40ss@cache.internal:7000/3?replicas=2&ca=/etc/ca.pem");
        assert_eq!(t.nodes, vec![("cache.internal".into(), 7000)]);
        assert_eq!((t.db, t.tls, t.replicas), (3, true, Some(2)));
        assert_eq!(t.user.as_deref(), Some("app"));
        assert_eq!(t.password.as_deref(), Some("p@ss"));
        assert_eq!(t.ca.as_deref(), Some("/etc/ca.pem"));
        assert_eq!(
            t.server_url("10.0.0.2", 7001),
            "rediss://app:p%40ss@10.0.0.2:7001/3"
        );
        assert_eq!(
            parse("redis://:secret@[::1]:6380/1").server_url("::1", 6380),
            "redis://:secret@[::1]:6380/1"
        );
    }

    #[test]
    fn sentinel_urls_name_the_sentinels_and_the_service() {
        let t = parse("redis+sentinel://127.0.0.1:26380,127.0.0.2,[::1]:26382/orders/2");
        assert_eq!(
            t.mode,
            RedisMode::Sentinel {
                service: "orders".into()
            }
        );
        assert_eq!(
            t.nodes,
            vec![
                ("127.0.0.1".into(), 26380),
                ("127.0.0.2".into(), 26379),
                ("::1".into(), 26382)
            ]
        );
        assert_eq!(t.db, 2);
        let json = t.to_json();
        assert!(
            json.contains("\"mode\": \"sentinel\", \"service\": \"orders\""),
            "{json}"
        );
        assert!(json.contains("[\"::1\", 26382]"), "{json}");
        assert!(parse("rediss+sentinel://h/m?replicas=0").tls);
    }

    #[test]
    fn cluster_urls_name_seed_nodes_and_no_database() {
        let t = parse("redis+cluster://a:7000,b:7001?replicas=1");
        assert_eq!(t.mode, RedisMode::Cluster);
        assert_eq!(t.nodes.len(), 2);
        assert_eq!(t.replicas, Some(1));
        assert!(t.describe().starts_with("the cluster at a:7000,b:7001"));
    }

    #[test]
    fn bad_urls_say_what_is_wrong_and_what_is_allowed() {
        for (url, says) in [
            ("http://h", "not a Redis scheme"),
            ("redis://h:0", "not a port"),
            ("redis://h:99999", "not a port"),
            ("redis://h/x", "database \"x\" is not a number"),
            ("redis://a,b", "names one server"),
            ("redis+sentinel://h", "names the monitored primary"),
            ("redis+cluster://h/1", "only database 0"),
            ("redis://h?replicas=-1", "replicas=\"-1\""),
            ("redis://h?ca=/x.pem", "ca=PATH is for TLS"),
            ("redis://h?timeout=1", "\"timeout\" is not taken"),
            ("redis://:pw@", "names no host"),
            ("redis://[::1", "without closing"),
        ] {
            let e = RedisTarget::parse(url).unwrap_err();
            assert!(e.contains(says), "{url}: {e}");
            assert!(e.contains("allowed: redis://"), "{url}: {e}");
        }
    }

    #[test]
    fn the_wait_defaults_from_the_server_and_fails_short_writes() {
        assert_eq!(ReplicaWait::resolve(None, 0, 0, 1000).replicas, 0);
        assert_eq!(ReplicaWait::resolve(None, 0, 2, 1000).replicas, 2);
        assert_eq!(ReplicaWait::resolve(None, 2, 1, 1000).replicas, 2);
        assert_eq!(ReplicaWait::resolve(None, 1, 3, 1000).replicas, 3);
        assert_eq!(ReplicaWait::resolve(Some(0), 2, 2, 1000).replicas, 0);
        assert_eq!(ReplicaWait::resolve(Some(3), 0, 0, 1000).replicas, 3);
        let wait = ReplicaWait::resolve(None, 0, 2, 1);
        assert_eq!(wait.timeout_ms, 1);
        assert!(wait.waits());
        assert_eq!(wait.check("the allocation", 2), Ok(()));
        let e = wait.check("the allocation", 1).unwrap_err();
        assert!(e.contains("reached 1 of the 2 replica(s)"), "{e}");
        assert!(e.contains("nothing is issued"), "{e}");
        assert_eq!(
            min_replicas_to_write(&["min-replicas-to-write".into(), "2".into()]),
            2
        );
        assert_eq!(min_replicas_to_write(&[]), 0);
    }
}
