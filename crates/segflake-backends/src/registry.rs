//! The SQL lease registries: PostgreSQL (`postgres://…`) and MySQL/MariaDB (`mysql://…`),
//! the core's statements (`segflake::lease::schema`) sent through the `tokio-postgres` and
//! `mysql` clients. The schema is created if missing; a successful claim also writes
//! uid-generator's `WORKER_NODE` audit row. (Redis, ZooKeeper and etcd have modules of their
//! own.)
//!
//! Each registry keeps one connection, opened on first use and dropped after an error so
//! the next call reconnects; every call ends within the registry timeout (`sql.rs`).

use std::sync::Mutex;
#[cfg(feature = "postgres")]
use std::time::Duration;

use segflake::lease::conversation::Protocol;
#[cfg(feature = "mysql")]
use segflake::lease::schema::mysql as my;
#[cfg(all(test, feature = "postgres"))]
use segflake::lease::schema::postgres as pg;
use segflake::lease::sql::{Dialect as SqlDialect, Param, SqlOp, SqlProtocol, SqlReply};
#[cfg(all(test, feature = "postgres"))]
use segflake::segment::statements::numbered;
use segflake::{Registry, RegistryCall, Value};

#[cfg(feature = "mysql")]
use crate::sql::{mysql_connect_writable, mysql_error, mysql_targets};
#[cfg(feature = "postgres")]
use crate::sql::{pg_step, postgres_config, PgConfig, Postgres as PgConn};
use crate::RegistryOptions;

/// The PostgreSQL lease registry (`postgres://…`): the core's statements for the tables of
/// `segflake::lease::schema::postgres` (created if missing), through tokio-postgres on a
/// runtime of the registry's own (callable and droppable from async code too).
#[cfg(feature = "postgres")]
pub struct PostgresRegistry(Sql<Postgres>);

#[cfg(feature = "postgres")]
impl PostgresRegistry {
    /// The registry of `url`, as libpq takes it (TLS as [`PostgresStore::new`]'s).
    /// Nothing is connected yet: the first call connects.
    ///
    /// [`PostgresStore::new`]: crate::PostgresStore::new
    pub fn new(url: &str, options: &RegistryOptions) -> crate::Result<PostgresRegistry> {
        let timeout = options.timeout();
        let config = postgres_config(url, timeout)
            .map_err(|e| crate::config_error(&crate::redact(url), e))?;
        Ok(PostgresRegistry::with_config(config, timeout))
    }

    /// The registry on the server of `config`, set up by the caller, without TLS (as
    /// [`PostgresStore::from_config`](crate::PostgresStore::from_config)).
    pub fn from_config(config: tokio_postgres::Config, options: &RegistryOptions) -> Self {
        let timeout = options.timeout();
        Self::with_config(crate::sql::postgres_plain(config, timeout), timeout)
    }

    /// [`from_config`](PostgresRegistry::from_config) over TLS with the caller's rustls
    /// client configuration.
    #[cfg(feature = "rustls")]
    pub fn from_config_tls(
        config: tokio_postgres::Config,
        tls: rustls::ClientConfig,
        options: &RegistryOptions,
    ) -> Self {
        let timeout = options.timeout();
        Self::with_config(crate::sql::postgres_tls(config, tls, timeout), timeout)
    }

    fn with_config(config: PgConfig, timeout: Duration) -> PostgresRegistry {
        PostgresRegistry(Sql::new(Postgres { config, timeout }, SqlDialect::Postgres))
    }
}

#[cfg(feature = "postgres")]
impl Registry for PostgresRegistry {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        self.0.call(call)
    }
}

/// The MySQL/MariaDB lease registry (`mysql://…`): the core's statements for the tables of
/// `segflake::lease::schema::mysql` (created if missing), through the blocking `mysql`
/// client.
#[cfg(feature = "mysql")]
pub struct MySqlRegistry(Sql<MySql>);

#[cfg(feature = "mysql")]
impl MySqlRegistry {
    /// The registry of `url`, `mysql://USER[:PASSWORD]@HOST[:PORT][,HOST[:PORT]…]/DB` (of
    /// several hosts, the first that takes writes is used; TLS as
    /// [`MySqlStore::new`](crate::MySqlStore::new)'s). Nothing is connected yet.
    pub fn new(url: &str, options: &RegistryOptions) -> crate::Result<MySqlRegistry> {
        let opts = mysql_targets(url, options.timeout())
            .map_err(|e| crate::config_error(&crate::redact(url), e))?;
        Ok(MySqlRegistry(Sql::new(MySql { opts }, SqlDialect::MySql)))
    }

    /// The registry on the server of `opts`, set up by the caller (as
    /// [`MySqlStore::from_opts`](crate::MySqlStore::from_opts)).
    pub fn from_opts(opts: mysql::Opts, options: &RegistryOptions) -> MySqlRegistry {
        let opts =
            crate::sql::mysql_deadlines(mysql::OptsBuilder::from_opts(opts), options.timeout());
        MySqlRegistry(Sql::new(MySql { opts: vec![opts] }, SqlDialect::MySql))
    }
}

#[cfg(feature = "mysql")]
impl Registry for MySqlRegistry {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        self.0.call(call)
    }
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
pub(crate) fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(feature = "postgres")]
struct Postgres {
    config: PgConfig,
    timeout: Duration,
}

#[cfg(feature = "postgres")]
impl Dialect for Postgres {
    type Conn = PgConn;

    fn connect(&self) -> Result<PgConn, String> {
        let mut client = PgConn::connect(&self.config, self.timeout)?;
        pg_step!(&mut client, registry_schema())?;
        Ok(client)
    }

    fn query(&self, c: &mut PgConn, op: &SqlOp) -> Result<(Vec<Vec<Value>>, u64), String> {
        pg_step!(c, registry_query(op))
    }
}

#[cfg(feature = "mysql")]
struct MySql {
    /// Each server of the URL, in order: the first writable one is connected to.
    opts: Vec<mysql::OptsBuilder>,
}

#[cfg(feature = "mysql")]
impl Dialect for MySql {
    type Conn = mysql::Conn;

    fn connect(&self) -> Result<mysql::Conn, String> {
        use mysql::prelude::Queryable;
        let mut conn = mysql_connect_writable(&self.opts)?;
        conn.query_drop(my::SCHEMA).map_err(mysql_error)?;
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
        let e = mysql_error;
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

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_in_order() {
        assert_eq!(numbered("a = ? AND b = ?"), "a = $1 AND b = $2");
        assert_eq!(numbered(pg::RELEASE).matches('$').count(), 3);
    }
}
