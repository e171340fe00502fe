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

use segflake::lease::conversation::Protocol;
use segflake::lease::schema::{mysql as my, postgres as pg};
use segflake::lease::sql::{Dialect as SqlDialect, Param, SqlOp, SqlProtocol, SqlReply};
use segflake::segment::statements::numbered;
use segflake::{Registry, RegistryCall, Value};

use crate::error::CliError;
use crate::sql::{mysql_connect, mysql_opts, postgres_config, PgConfig, Postgres as PgConn};

/// The registry for `url`: `redis://` (or `rediss://`), `postgres://` (or `postgresql://`), `mysql://`,
/// `zk://` (with Leaf's node `identity`) or `etcd://` (`zk+tls://`, `etcd+tls://`).
pub fn open(
    url: &str,
    timeout_ms: u64,
    identity: Option<&str>,
) -> Result<Arc<dyn Registry>, CliError> {
    let timeout = Duration::from_millis(timeout_ms.max(1));
    let scheme = url.split_once("://").map_or("", |(s, _)| s);
    Ok(match scheme {
        "redis" | "rediss" => Arc::new(crate::registry_redis::RedisRegistry::new(url, timeout_ms)?),
        "zk" | "zk+tls" => Arc::new(crate::registry_zk::ZooKeeperRegistry::new(url, identity, timeout_ms)?),
        "etcd" | "etcd+tls" => Arc::new(crate::registry_etcd::EtcdRegistry::new(url, timeout_ms)?),
        "postgres" | "postgresql" => {
            let config = postgres_config(url, timeout).map_err(|e| bad_url(url, e))?;
            Arc::new(Sql::new(Postgres { config, timeout }, SqlDialect::Postgres))
        }
        "mysql" => {
            let opts = mysql_opts(url, timeout).map_err(|e| bad_url(url, e))?;
            Arc::new(Sql::new(MySql { opts }, SqlDialect::MySql))
        }
        _ => {
            return Err(CliError::usage_for(
                "next",
                format!(
                    "--registry {url:?} is not supported; allowed: redis://HOST[:PORT][/DB] (rediss:// for TLS), \
                     postgres://USER[:PASSWORD]@HOST[:PORT]/DB, mysql://USER[:PASSWORD]@HOST[:PORT]/DB, \
                     zk://HOST:PORT[,HOST:PORT]/ROOT, etcd://HOST:PORT[,HOST:PORT][/PREFIX] (zk+tls://…, etcd+tls://…[?ca=PATH] for TLS)"
                ),
            ))
        }
    })
}

fn bad_url(url: &str, e: impl std::fmt::Display) -> CliError {
    CliError::usage_for("next", format!("--registry {url:?}: {e}"))
}

/// One SQL dialect: connect (creating the schema), and run one of the protocol's
/// statements on a connection.
trait Dialect: Send + Sync + 'static {
    type Conn: Send;
    fn connect(&self) -> Result<Self::Conn, String>;
    /// The rows (columns as integers, text or `Null`) and the rows affected.
    fn query(&self, conn: &mut Self::Conn, op: &SqlOp) -> Result<(Vec<Vec<Value>>, u64), String>;
}

struct Sql<D: Dialect> {
    dialect: D,
    state: Mutex<(SqlProtocol, Option<D::Conn>)>,
}

impl<D: Dialect> Sql<D> {
    fn new(dialect: D, protocol: SqlDialect) -> Sql<D> {
        Sql {
            dialect,
            state: Mutex::new((SqlProtocol::new(protocol, &host_name()), None)),
        }
    }
}

impl<D: Dialect> Registry for Sql<D> {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        let mut guard = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (protocol, conn) = &mut *guard;
        protocol.converse(call.clone(), (), |op| {
            if conn.is_none() {
                match self.dialect.connect() {
                    Ok(c) => *conn = Some(c),
                    Err(e) => return SqlReply::Failed(e),
                }
            }
            let c = conn.as_mut().expect("connected above");
            match self.dialect.query(c, &op) {
                Ok((rows, affected)) => SqlReply::Rows { rows, affected },
                Err(e) => {
                    // The connection may be broken: the next call reconnects.
                    *conn = None;
                    SqlReply::Failed(e)
                }
            }
        })
    }
}

/// This host's name for the audit row (`$HOSTNAME`, else the kernel's).
fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .unwrap_or_else(|| "unknown".into())
}

struct Postgres {
    config: PgConfig,
    timeout: Duration,
}

impl Dialect for Postgres {
    type Conn = PgConn;

    fn connect(&self) -> Result<PgConn, String> {
        let mut client = PgConn::connect(&self.config, self.timeout)?;
        client.batch_execute(pg::SCHEMA)?;
        Ok(client)
    }

    fn query(&self, c: &mut PgConn, op: &SqlOp) -> Result<(Vec<Vec<Value>>, u64), String> {
        use tokio_postgres::types::{ToSql, Type};
        let statement = c.prepare(&numbered(op.statement))?;
        // Parameters as the statement's types (an INTEGER worker_id is an i32).
        let params: Vec<Box<dyn ToSql + Sync>> = op
            .params
            .iter()
            .zip(statement.params())
            .map(|(p, ty)| -> Result<Box<dyn ToSql + Sync>, String> {
                Ok(match p {
                    Param::Int(i) if *ty == Type::INT4 => Box::new(
                        i32::try_from(*i).map_err(|_| format!("{i} does not fit an INTEGER"))?,
                    ),
                    Param::Int(i) => Box::new(*i),
                    Param::Text(t) => Box::new(t.clone()),
                })
            })
            .collect::<Result<_, _>>()?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|b| b.as_ref()).collect();
        let rows = c.query_prepared(&statement, &refs)?;
        let e = |e: tokio_postgres::Error| crate::stores::error_chain(&e);
        let rows = rows
            .iter()
            .map(|row| {
                (0..row.len())
                    .map(|i| {
                        Ok(match *row.columns()[i].type_() {
                            Type::INT4 => {
                                row.try_get::<_, Option<i32>>(i).map_err(e)?.map(i128::from)
                            }
                            Type::INT8 => {
                                row.try_get::<_, Option<i64>>(i).map_err(e)?.map(i128::from)
                            }
                            _ => {
                                return row
                                    .try_get::<_, Option<String>>(i)
                                    .map_err(e)
                                    .map(|t| t.map_or(Value::Null, Value::Str))
                            }
                        }
                        .map_or(Value::Null, Value::Int))
                    })
                    .collect::<Result<Vec<_>, String>>()
            })
            .collect::<Result<Vec<_>, String>>()?;
        let affected = rows.len() as u64;
        Ok((rows, affected))
    }
}

struct MySql {
    opts: mysql::OptsBuilder,
}

impl Dialect for MySql {
    type Conn = mysql::Conn;

    fn connect(&self) -> Result<mysql::Conn, String> {
        use mysql::prelude::Queryable;
        let mut conn = mysql_connect(&self.opts)?;
        conn.query_drop(my::SCHEMA).map_err(|e| e.to_string())?;
        Ok(conn)
    }

    fn query(&self, c: &mut mysql::Conn, op: &SqlOp) -> Result<(Vec<Vec<Value>>, u64), String> {
        use mysql::prelude::Queryable;
        let params: Vec<mysql::Value> = op
            .params
            .iter()
            .map(|p| match p {
                Param::Int(i) => mysql::Value::Int(*i),
                Param::Text(t) => mysql::Value::Bytes(t.clone().into_bytes()),
            })
            .collect();
        let e = |e: mysql::Error| e.to_string();
        let mut result = c.exec_iter(op.statement, params).map_err(e)?;
        let affected = result.affected_rows();
        let mut rows = Vec::new();
        for row in result.by_ref() {
            let row = row.map_err(e)?;
            rows.push(
                row.unwrap()
                    .into_iter()
                    .map(|v| match v {
                        mysql::Value::NULL => Value::Null,
                        mysql::Value::Int(i) => Value::Int(i.into()),
                        mysql::Value::UInt(u) => Value::Int(u.into()),
                        mysql::Value::Bytes(b) => {
                            let text = String::from_utf8_lossy(&b).into_owned();
                            text.parse::<i128>().map_or(Value::Str(text), Value::Int)
                        }
                        other => Value::Str(format!("{other:?}")),
                    })
                    .collect(),
            );
        }
        Ok((rows, affected))
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
            "zks://h:2281/snowflake/x",
            "zk+tls://h:2281/snowflake/x?ca=/no/such/ca.pem",
            "zk://h:2281/snowflake/x?ca=/ca.pem",
            "etcds://h:2379",
            "etcd://h:2379?ca=/ca.pem",
            "etcd+tls://h:2379?ca=/no/such/ca.pem",
            "etcd+tls://h:2379?tls=false",
            "redis://h?ca=/ca.pem",
            "postgres://u@h/db?sslmode=prefer",
            "mysql://u@h/db?ssl-mode=PREFERRED",
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
