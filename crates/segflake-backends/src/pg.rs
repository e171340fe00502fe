//! The PostgreSQL protocol steps, written once as async functions over a connection: the
//! segment store's statements (`stores.rs`, the core's `segment::statements`) and the
//! lease registry's (`registry.rs`, the core's `lease::schema::postgres`). The blocking
//! adapters run them with `block_on` on a runtime of their own, the async ones
//! (`crate::tokio`) on the caller's; each caller puts its deadline around them.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use segflake::lease::sql::{Param, SqlOp};
use segflake::segment::statements::{is_read_only_error, numbered};
use segflake::segment::TagRecord;
use segflake::Value;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{NoTls, Statement};

use crate::error_chain;
use crate::sql::PgConfig;
use crate::stores::{core_statement, to_u64, Row, CREATED_BY};

/// A failed statement's message; one refused because the server is read-only (the core's
/// `read_only_errors`) starts with [`crate::sql::READ_ONLY`].
pub(crate) fn pg_error(e: tokio_postgres::Error) -> String {
    match e.code() {
        Some(code) if is_read_only_error("postgres", code.code()) => {
            crate::sql::read_only(&error_chain(&e))
        }
        _ => error_chain(&e),
    }
}

/// Whether the server of `client` takes writes: the core's `writable` statement, run while
/// `driver` carries the connection's I/O.
async fn writable(client: &tokio_postgres::Client, driver: &mut Driver) -> Result<bool, String> {
    let sql = segflake::segment::statements::statement("postgres", "writable", "")
        .expect("the core's writable statement");
    let mut query = std::pin::pin!(client.query_one(sql.as_str(), &[]));
    let answer = std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(row) = query.as_mut().poll(cx) {
            return std::task::Poll::Ready(Some(row));
        }
        match driver.as_mut().poll(cx) {
            std::task::Poll::Ready(()) => std::task::Poll::Ready(None),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    })
    .await;
    let row = answer.ok_or("the connection closed")?.map_err(pg_error)?;
    Ok(row.try_get::<_, i32>(0).map_err(pg_error)? == 1)
}

/// A connection the steps run on: its client, and its statements prepared once.
pub(crate) trait Session: Send {
    fn client(&self) -> &tokio_postgres::Client;
    /// `sql`, prepared on this connection (once, where the connection caches).
    fn statement(&mut self, sql: &str) -> impl Future<Output = Result<Statement, String>> + Send;
}

/// A client of its own and the statements prepared on it, by text: a call after the first
/// is one round trip (Bind/Execute), not two (Parse/Describe first).
pub(crate) struct PgSession {
    pub(crate) client: tokio_postgres::Client,
    prepared: HashMap<String, Statement>,
}

impl PgSession {
    pub(crate) fn new(client: tokio_postgres::Client) -> PgSession {
        PgSession {
            client,
            prepared: HashMap::new(),
        }
    }
}

impl Session for PgSession {
    fn client(&self) -> &tokio_postgres::Client {
        &self.client
    }

    async fn statement(&mut self, sql: &str) -> Result<Statement, String> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).await.map_err(pg_error)?;
        self.prepared.insert(sql.to_string(), s.clone());
        Ok(s)
    }
}

/// The task that drives a connection's I/O; it ends when the client is dropped.
pub(crate) type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Connects within `timeout` to the first host of the settings that takes writes: the
/// client, and the task to spawn that drives its connection. Failures start with "cannot
/// connect to PostgreSQL: ", or with [`crate::sql::READ_ONLY`] when every host that
/// answered is read-only (a standby).
pub(crate) async fn connect(
    settings: &PgConfig,
    timeout: Duration,
) -> Result<(tokio_postgres::Client, Driver), String> {
    let fail = |why: String| format!("cannot connect to PostgreSQL: {why}");
    let late = || fail(format!("no connection within {timeout:?}"));
    let targets = || crate::sql::pg_target(&settings.config);
    let (client, mut driver) = match open(settings, timeout, &fail, &late).await {
        // tokio-postgres's own read-write check (`SHOW transaction_read_only`) of the last
        // host it tried.
        Err(e) if e.ends_with("database does not allow writes") => {
            return Err(crate::sql::read_only(&format!(
                "{}: transaction_read_only is on, a standby",
                targets()
            )))
        }
        other => other?,
    };
    // A store or registry keeps a connection only to a server that takes writes.
    match tokio::time::timeout(timeout, writable(&client, &mut driver)).await {
        Err(_) => Err(late()),
        Ok(Err(e)) => Err(fail(e)),
        Ok(Ok(true)) => Ok((client, driver)),
        Ok(Ok(false)) => Err(crate::sql::read_only(&format!(
            "{}: in recovery (a standby) or transaction_read_only is on",
            targets()
        ))),
    }
}

/// Connects within `timeout`, without the writable check.
async fn open(
    settings: &PgConfig,
    timeout: Duration,
    fail: &(dyn Fn(String) -> String + Sync),
    late: &(dyn Fn() -> String + Sync),
) -> Result<(tokio_postgres::Client, Driver), String> {
    let config = &settings.config;
    match settings.tls_connector() {
        None => {
            let (client, connection) = tokio::time::timeout(timeout, config.connect(NoTls))
                .await
                .map_err(|_| late())?
                .map_err(|e| fail(error_chain(&e)))?;
            Ok((
                client,
                Box::pin(async move {
                    let _ = connection.await;
                }),
            ))
        }
        #[cfg(not(feature = "rustls"))]
        Some(never) => match never {},
        #[cfg(feature = "rustls")]
        Some((connector, ca)) => {
            let (client, connection) = tokio::time::timeout(timeout, config.connect(connector))
                .await
                .map_err(|_| late())?
                .map_err(|e| {
                    let e = error_chain(&e);
                    fail(if crate::tls::is_tls_error(&e) {
                        crate::tls::explain(&e, &crate::sql::pg_target(config), ca.as_deref())
                    } else {
                        e
                    })
                })?;
            Ok((
                client,
                Box::pin(async move {
                    let _ = connection.await;
                }),
            ))
        }
    }
}

async fn query_opt(
    s: &mut impl Session,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Option<tokio_postgres::Row>, String> {
    let statement = s.statement(sql).await?;
    s.client()
        .query_opt(&statement, params)
        .await
        .map_err(pg_error)
}

async fn execute(
    s: &mut impl Session,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<u64, String> {
    let statement = s.statement(sql).await?;
    s.client()
        .execute(&statement, params)
        .await
        .map_err(pg_error)
}

// The segment store's steps.

/// Raises `tag`'s max_id by `step` (the row's own when `None`) in one statement: the row
/// (`None` when the tag has none).
pub(crate) async fn allocate(
    s: &mut impl Session,
    tag: &str,
    step: Option<i64>,
    residue: bool,
) -> Result<Option<Row>, String> {
    let call = if residue {
        "allocate_residue"
    } else {
        "allocate"
    };
    let statement = numbered(&core_statement("postgres", call));
    let row = query_opt(s, &statement, &[&step, &tag, &step]).await?;
    row.map(|r| {
        let get = |i| r.try_get::<_, i64>(i).map_err(pg_error);
        let opt = |i| r.try_get::<_, Option<i64>>(i).map_err(pg_error);
        let class = if residue { opt(3)?.zip(opt(4)?) } else { None };
        Ok((get(0)?, get(1)?, get(2)?, class))
    })
    .transpose()
}

/// The core's `give_back_table`.
pub(crate) async fn give_back_table(s: &mut impl Session) -> Result<(), String> {
    execute(s, &core_statement("postgres", "give_back_table"), &[])
        .await
        .map(drop)
}

/// The core's `give_back_intent`.
pub(crate) async fn give_back_intent(
    s: &mut impl Session,
    token: &str,
    tag: &str,
    max_id: i64,
    expected: i64,
) -> Result<(), String> {
    let sql = numbered(&core_statement("postgres", "give_back_intent"));
    execute(s, &sql, &[&token, &tag, &max_id, &expected])
        .await
        .map(drop)
}

/// The core's `give_back`: whether it lowered max_id.
pub(crate) async fn give_back_apply(s: &mut impl Session, token: &str) -> Result<bool, String> {
    let sql = numbered(&core_statement("postgres", "give_back"));
    Ok(execute(s, &sql, &[&token]).await? == 1)
}

/// Records the give back under `token`, creating the marker table first unless `known`
/// (see [`crate::stores::record_outcome`]), then applies it: the async store's give back
/// (the blocking one runs the same steps through its dialect).
#[cfg(feature = "tokio")]
pub(crate) async fn give_back(
    s: &mut impl Session,
    known: bool,
    token: &str,
    tag: &str,
    expected: i64,
    max_id: i64,
) -> Result<bool, String> {
    let created = match known {
        true => Ok(()),
        false => give_back_table(s).await,
    };
    let intent = give_back_intent(s, token, tag, max_id, expected).await;
    crate::stores::record_outcome(intent, created)?;
    give_back_apply(s, token).await
}

/// Whether `leaf_alloc` has Tinyid's `delta` and `remainder` columns.
pub(crate) async fn has_residue_columns(s: &mut impl Session) -> Result<bool, String> {
    let sql = numbered(&core_statement("postgres", "residue_columns"));
    let row = query_opt(s, &sql, &[&"leaf_alloc"]).await?;
    let n: i64 = row.map_or(Ok(0), |r| r.try_get(0).map_err(pg_error))?;
    Ok(n == 2)
}

/// Inserts the tag's row (`max_id` 1) unless it exists.
pub(crate) async fn create(s: &mut impl Session, tag: &str, step: i64) -> Result<(), String> {
    let step = i32::try_from(step).map_err(|_| format!("step {step} does not fit an INTEGER"))?;
    let sql = numbered(&core_statement("postgres", "ensure_tag"));
    execute(s, &sql, &[&tag, &1i64, &step, &CREATED_BY])
        .await
        .map(drop)
}

pub(crate) async fn has_tag(s: &mut impl Session, tag: &str) -> Result<bool, String> {
    let row = query_opt(s, "SELECT 1 FROM leaf_alloc WHERE biz_tag = $1", &[&tag]).await?;
    Ok(row.is_some())
}

pub(crate) async fn records(s: &mut impl Session) -> Result<Vec<TagRecord>, String> {
    let sql = "SELECT biz_tag, max_id, step::bigint, \
               COALESCE((EXTRACT(EPOCH FROM update_time) * 1000)::bigint, 0) \
               FROM leaf_alloc ORDER BY biz_tag";
    let statement = s.statement(sql).await?;
    let rows = s.client().query(&statement, &[]).await.map_err(pg_error)?;
    rows.iter()
        .map(|r| {
            let get = |i| r.try_get::<_, i64>(i).map_err(pg_error);
            Ok(TagRecord {
                tag: r.try_get(0).map_err(pg_error)?,
                max_id: to_u64(get(1)?, "max_id")?,
                step: to_u64(get(2)?, "step")?,
                updated_ms: to_u64(get(3)?, "update_time")?,
            })
        })
        .collect()
}

// The lease registry's steps.

/// The registry's tables, created if missing.
pub(crate) async fn registry_schema(s: &mut impl Session) -> Result<(), String> {
    s.client()
        .batch_execute(segflake::lease::schema::postgres::SCHEMA)
        .await
        .map_err(pg_error)
}

/// One of the lease protocol's statements: the rows (integers, text or `Null`) and the
/// rows affected.
pub(crate) async fn registry_query(
    s: &mut impl Session,
    op: &SqlOp,
) -> Result<(Vec<Vec<Value>>, u64), String> {
    let statement = s.statement(&numbered(op.statement)).await?;
    // Parameters as the statement's types (an INTEGER worker_id is an i32).
    let params: Vec<Box<dyn ToSql + Sync + Send>> = op
        .params
        .iter()
        .zip(statement.params())
        .map(|(p, ty)| -> Result<Box<dyn ToSql + Sync + Send>, String> {
            Ok(match p {
                Param::Int(i) if *ty == Type::INT4 => {
                    Box::new(i32::try_from(*i).map_err(|_| format!("{i} does not fit an INTEGER"))?)
                }
                Param::Int(i) => Box::new(*i),
                Param::Text(t) => Box::new(t.clone()),
            })
        })
        .collect::<Result<_, _>>()?;
    let refs: Vec<&(dyn ToSql + Sync)> = params
        .iter()
        .map(|b| b.as_ref() as &(dyn ToSql + Sync))
        .collect();
    let rows = s
        .client()
        .query(&statement, &refs)
        .await
        .map_err(pg_error)?;
    let rows = rows
        .iter()
        .map(|row| {
            (0..row.len())
                .map(|i| {
                    Ok(match *row.columns()[i].type_() {
                        Type::INT4 => row
                            .try_get::<_, Option<i32>>(i)
                            .map_err(pg_error)?
                            .map(i128::from),
                        Type::INT8 => row
                            .try_get::<_, Option<i64>>(i)
                            .map_err(pg_error)?
                            .map(i128::from),
                        _ => {
                            return row
                                .try_get::<_, Option<String>>(i)
                                .map_err(pg_error)
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
