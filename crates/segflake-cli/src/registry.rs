//! The registries behind `--registry URL`: Redis (`registry_redis.rs`), ZooKeeper
//! (`registry_zk.rs`), etcd (`registry_etcd.rs`), and PostgreSQL
//! (`postgres://…`) and MySQL/MariaDB (`mysql://…`) here: the core's statements
//! (`segflake::lease::schema`), sent through the `postgres` and `mysql` clients. The schema is created if missing; a successful claim
//! also writes uid-generator's `WORKER_NODE` audit row.
//!
//! Each registry keeps one connection, opened on first use and dropped after an error so
//! the next call reconnects; every call ends within the registry timeout (`sql.rs`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use segflake::lease::peers_answer;
use segflake::lease::schema::{self, mysql as my, postgres as pg};
use segflake::{Registry, RegistryCall, Value};

use crate::error::CliError;
use crate::sql::{mysql_opts, postgres_config, Postgres as PgConn};

/// The registry for `url`: `redis://`, `postgres://` (or `postgresql://`), `mysql://`,
/// `zk://` (with Leaf's node `identity`) or `etcd://`.
pub fn open(
    url: &str,
    timeout_ms: u64,
    identity: Option<&str>,
) -> Result<Arc<dyn Registry>, CliError> {
    let timeout = Duration::from_millis(timeout_ms.max(1));
    let scheme = url.split_once("://").map_or("", |(s, _)| s);
    Ok(match scheme {
        "redis" => Arc::new(crate::registry_redis::RedisRegistry::new(url, timeout_ms)?),
        "zk" => Arc::new(crate::registry_zk::ZooKeeperRegistry::new(url, identity, timeout_ms)?),
        "etcd" => Arc::new(crate::registry_etcd::EtcdRegistry::new(url, timeout_ms)?),
        "postgres" | "postgresql" => {
            let config = postgres_config(url, timeout).map_err(|e| bad_url(url, e))?;
            Arc::new(Sql::new(Postgres { config, timeout }))
        }
        "mysql" => {
            let opts = mysql_opts(url, timeout).map_err(|e| bad_url(url, e))?;
            Arc::new(Sql::new(MySql { opts }))
        }
        _ => {
            return Err(CliError::usage_for(
                "next",
                format!(
                    "--registry {url:?} is not supported; allowed: redis://HOST[:PORT][/DB], \
                     postgres://USER[:PASSWORD]@HOST[:PORT]/DB, mysql://USER[:PASSWORD]@HOST[:PORT]/DB, \
                     zk://HOST:PORT[,HOST:PORT]/ROOT, etcd://HOST:PORT[,HOST:PORT][/PREFIX]"
                ),
            ))
        }
    })
}

fn bad_url(url: &str, e: impl std::fmt::Display) -> CliError {
    CliError::usage_for("next", format!("--registry {url:?}: {e}"))
}

/// One SQL dialect: connect (creating the schema), and the four calls on a connection.
trait Dialect: Send + Sync + 'static {
    type Conn: Send;
    fn connect(&self) -> Result<Self::Conn, String>;
    fn call(&self, conn: &mut Self::Conn, call: &RegistryCall) -> Result<Value, String>;
}

struct Sql<D: Dialect> {
    dialect: D,
    conn: Mutex<Option<D::Conn>>,
}

impl<D: Dialect> Sql<D> {
    fn new(dialect: D) -> Sql<D> {
        Sql {
            dialect,
            conn: Mutex::new(None),
        }
    }
}

impl<D: Dialect> Registry for Sql<D> {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(self.dialect.connect()?);
        }
        let result = self
            .dialect
            .call(guard.as_mut().expect("connected above"), call);
        if result.is_err() {
            *guard = None;
        }
        result
    }
}

/// `?` placeholders as PostgreSQL's `$1, $2, …`.
fn numbered(statement: &str) -> String {
    let mut out = String::with_capacity(statement.len() + 8);
    let mut n = 0;
    for c in statement.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

/// This host's name for the audit row (`$HOSTNAME`, else the kernel's), at most 64 bytes.
fn host_name() -> String {
    let name = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .unwrap_or_else(|| "unknown".into());
    name.trim().chars().take(64).collect()
}

fn int(v: u64, what: &str) -> Result<i64, String> {
    i64::try_from(v).map_err(|_| format!("{what} {v} does not fit a BIGINT"))
}

fn worker(v: u64) -> Result<i32, String> {
    i32::try_from(v).map_err(|_| format!("worker ID {v} does not fit an INTEGER column"))
}

struct Postgres {
    config: tokio_postgres::Config,
    timeout: Duration,
}

impl Dialect for Postgres {
    type Conn = PgConn;

    fn connect(&self) -> Result<PgConn, String> {
        let mut client = PgConn::connect(&self.config, self.timeout)?;
        client.batch_execute(pg::SCHEMA)?;
        Ok(client)
    }

    fn call(&self, c: &mut PgConn, call: &RegistryCall) -> Result<Value, String> {
        let e = |e: tokio_postgres::Error| crate::stores::error_chain(&e);
        let mark = |row: Option<tokio_postgres::Row>| {
            row.map_or(Ok(Value::Null), |r| {
                r.try_get::<_, Option<i64>>(0)
                    .map(|m| m.map_or(Value::Null, |m| Value::Int(m.into())))
                    .map_err(|e| e.to_string())
            })
        };
        match call {
            RegistryCall::Claim {
                worker_id,
                owner,
                ttl_ms,
            } => {
                let row = c.query_opt(
                    &numbered(pg::CLAIM),
                    &[&worker(*worker_id)?, owner, &int(*ttl_ms, "ttl_ms")?],
                )?;
                if row.is_some() {
                    let port = schema::audit_port(*worker_id, owner);
                    c.execute(&numbered(pg::AUDIT), &[&host_name(), &port])?;
                }
                mark(row)
            }
            RegistryCall::Renew {
                worker_id,
                owner,
                ttl_ms,
                mark_ms,
                reported_ms,
            } => mark(c.query_opt(
                &numbered(pg::RENEW),
                &[
                    &int(*ttl_ms, "ttl_ms")?,
                    &int(*mark_ms, "mark_ms")?,
                    &int(*reported_ms, "reported_ms")?,
                    &worker(*worker_id)?,
                    owner,
                    &worker(*worker_id)?,
                ],
            )?),
            RegistryCall::Release {
                worker_id,
                owner,
                mark_ms,
            } => {
                let row = c.query_opt(
                    &numbered(pg::RELEASE),
                    &[&int(*mark_ms, "mark_ms")?, &worker(*worker_id)?, owner],
                )?;
                Ok(Value::Bool(row.is_some()))
            }
            RegistryCall::Peers => {
                let rows = c.query(pg::PEERS, &[])?;
                let reports = rows
                    .iter()
                    .map(|r| {
                        let w: i32 = r.try_get(0).map_err(e)?;
                        let reported: i64 = r.try_get(1).map_err(e)?;
                        let age: i64 = r.try_get(2).map_err(e)?;
                        Ok((w.into(), reported.into(), age.into()))
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                Ok(peers_answer(reports))
            }
        }
    }
}

struct MySql {
    opts: mysql::OptsBuilder,
}

impl Dialect for MySql {
    type Conn = mysql::Conn;

    fn connect(&self) -> Result<mysql::Conn, String> {
        use mysql::prelude::Queryable;
        let mut conn = mysql::Conn::new(self.opts.clone())
            .map_err(|e| format!("cannot connect to MySQL: {e}"))?;
        conn.query_drop(my::SCHEMA).map_err(|e| e.to_string())?;
        Ok(conn)
    }

    fn call(&self, c: &mut mysql::Conn, call: &RegistryCall) -> Result<Value, String> {
        use mysql::prelude::Queryable;
        let e = |e: mysql::Error| e.to_string();
        let claimed = |c: &mut mysql::Conn, worker_id: u64, owner: &str| {
            c.exec_first::<i64, _, _>(my::CLAIMED, (worker_id, owner))
                .map_err(e)
                .map(|m| m.map_or(Value::Null, |m| Value::Int(m.into())))
        };
        match call {
            RegistryCall::Claim {
                worker_id,
                owner,
                ttl_ms,
            } => {
                c.exec_drop(my::ENSURE, (worker_id,)).map_err(e)?;
                c.exec_drop(my::CLAIM, (owner, ttl_ms, worker_id, owner))
                    .map_err(e)?;
                let mark = claimed(c, *worker_id, owner)?;
                if mark != Value::Null {
                    let port = schema::audit_port(*worker_id, owner);
                    c.exec_drop(my::AUDIT, (host_name(), port)).map_err(e)?;
                }
                Ok(mark)
            }
            RegistryCall::Renew {
                worker_id,
                owner,
                ttl_ms,
                mark_ms,
                reported_ms,
            } => {
                c.exec_drop(my::RENEW, (ttl_ms, mark_ms, reported_ms, worker_id, owner))
                    .map_err(e)?;
                let mark = c
                    .exec_first::<Option<i64>, _, _>(my::RENEWED, (owner, worker_id))
                    .map_err(e)?;
                Ok(mark.flatten().map_or(Value::Null, |m| Value::Int(m.into())))
            }
            RegistryCall::Release {
                worker_id,
                owner,
                mark_ms,
            } => {
                c.exec_drop(my::RELEASE, (mark_ms, worker_id, owner))
                    .map_err(e)?;
                Ok(Value::Bool(c.affected_rows() == 1))
            }
            RegistryCall::Peers => {
                let rows: Vec<(i64, i64, i64)> = c.query(my::PEERS).map_err(e)?;
                Ok(peers_answer(rows.into_iter().map(|(w, reported, age)| {
                    (w.into(), reported.into(), age.into())
                })))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(numbered("a = ? AND b = ?"), "a = $1 AND b = $2");
        assert_eq!(numbered(pg::RELEASE).matches('$').count(), 3);
    }

    #[test]
    fn unknown_schemes_and_bad_urls_are_usage_errors() {
        for url in [
            "http://x",
            "zk:///snowflake/x",
            "zk://h:2181/snowflake/x?session_timeout_ms=0",
            "zk://h:2181/snowflake/x?ttl=3",
            "etcd://",
            "etcd://nohostport",
            "mysql://:bad port",
        ] {
            let e = open(url, 100, None).err().expect(url).to_string();
            assert!(e.contains("--registry"), "{url}: {e}");
        }
        for identity in ["10.0.0.1", "10.0.0.1:99999", ":80", "a-b:80"] {
            let e = open("zk://h:2181/snowflake/x", 100, Some(identity))
                .err()
                .expect(identity);
            assert!(e.to_string().contains("IP:PORT"), "{identity}: {e}");
        }
    }
}
