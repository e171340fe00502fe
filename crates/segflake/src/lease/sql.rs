//! The PostgreSQL and MySQL registries' protocol, written once: which of the core's
//! statements ([`schema`](super::schema)) each call runs, in which order, with which
//! parameters, and what the rows mean. Adapters run the statements a [`SqlConversation`]
//! asks for, in autocommit mode, on one connection (opened with the dialect's
//! [`schema`](SqlProtocol::schema) run once), and hand back the rows.
//!
//! Statements use `?` placeholders (no statement has a `?` anywhere else); a driver with
//! another style replaces each in turn (`$1, $2, …` for PostgreSQL's, `%s` for Python's).

use crate::host::Value;
use crate::lease::conversation::{self, Conversation, Protocol, Request, Script, Step};
use crate::lease::schema::{self, mysql as my, postgres as pg};
use crate::lease::RegistryCall;

/// The database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Postgres,
    /// MySQL and MariaDB.
    MySql,
}

/// A statement's parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    /// A BIGINT (or the INTEGER `worker_id`).
    Int(i64),
    Text(String),
}

/// One statement: reply [`SqlReply::Rows`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlOp {
    pub statement: &'static str,
    pub params: Vec<Param>,
}

/// What the database answered.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlReply {
    /// The rows returned (each column an integer, text or `Null`) and the rows affected
    /// (MySQL counts the rows an UPDATE matched: connect with `CLIENT_FOUND_ROWS`).
    Rows {
        rows: Vec<Vec<Value>>,
        affected: u64,
    },
    Failed(String),
}

pub type SqlStep = Step<SqlOp>;
pub type SqlConversation = Conversation<SqlProtocol>;

/// A SQL registry's protocol.
#[derive(Debug, Clone)]
pub struct SqlProtocol {
    dialect: Dialect,
    host_name: String,
    memory: (),
    current: Option<SqlConversation>,
}

impl SqlProtocol {
    /// The protocol for `dialect`; `host_name` (this host's name, at most 64 characters
    /// are kept) is written into the audit row of each claim.
    pub fn new(dialect: Dialect, host_name: &str) -> SqlProtocol {
        SqlProtocol {
            dialect,
            host_name: host_name.trim().chars().take(64).collect(),
            memory: (),
            current: None,
        }
    }

    /// The statements that create (or upgrade) the tables: run once per new connection.
    pub fn schema(&self) -> &'static str {
        match self.dialect {
            Dialect::Postgres => pg::SCHEMA,
            Dialect::MySql => my::SCHEMA,
        }
    }
}

type Flow<T> = conversation::Flow<T, SqlOp>;
type Stop = conversation::Stop<SqlOp>;

/// Runs one statement: its rows and affected count.
fn query(
    script: &mut Script<'_, SqlOp, SqlReply>,
    statement: &'static str,
    params: Vec<Param>,
) -> Flow<(Vec<Vec<Value>>, u64)> {
    let op = SqlOp { statement, params };
    match script.ask(op)? {
        SqlReply::Rows { rows, affected } => Ok((rows, affected)),
        SqlReply::Failed(e) => Err(Stop::Fail(e)),
    }
}

fn int(v: u64, what: &str) -> Flow<Param> {
    i64::try_from(v)
        .map(Param::Int)
        .map_err(|_| Stop::Fail(format!("{what} {v} does not fit a BIGINT")))
}

fn worker(v: u64) -> Flow<Param> {
    i32::try_from(v)
        .map(|w| Param::Int(w.into()))
        .map_err(|_| Stop::Fail(format!("worker ID {v} does not fit an INTEGER column")))
}

/// The first column of the first row: a mark, or `Null` (no row, or SQL NULL).
fn first(rows: &[Vec<Value>]) -> Flow<Value> {
    match rows.first().and_then(|r| r.first()) {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(Value::Int(i)) => Ok(Value::Int(*i)),
        Some(other) => Err(Stop::Fail(format!(
            "the database answered {}, not an integer mark",
            other.to_json()
        ))),
    }
}

impl Protocol for SqlProtocol {
    type Op = SqlOp;
    type Reply = SqlReply;
    type Memory = ();
    type Context = ();

    fn memory(&mut self) -> &mut () {
        &mut self.memory
    }

    fn current(&mut self) -> &mut Option<SqlConversation> {
        &mut self.current
    }

    fn reply_of(value: &Value) -> SqlReply {
        SqlReply::from_value(value)
    }

    fn run(
        &self,
        _memory: &mut (),
        _context: &(),
        call: &RegistryCall,
        s: &mut Script<'_, SqlOp, SqlReply>,
    ) -> Flow<Value> {
        let text = |t: &str| Param::Text(t.to_string());
        let postgres = self.dialect == Dialect::Postgres;
        match call {
            RegistryCall::Claim {
                worker_id,
                owner,
                ttl_ms,
            } => {
                let (w, ttl) = (worker(*worker_id)?, int(*ttl_ms, "ttl_ms")?);
                let rows = if postgres {
                    query(s, pg::CLAIM, vec![w, text(owner), ttl])?.0
                } else {
                    query(s, my::ENSURE, vec![w.clone()])?;
                    query(s, my::CLAIM, vec![text(owner), ttl, w.clone(), text(owner)])?;
                    query(s, my::CLAIMED, vec![w, text(owner)])?.0
                };
                let mark = first(&rows)?;
                if !rows.is_empty() {
                    let audit = if postgres { pg::AUDIT } else { my::AUDIT };
                    let port = schema::audit_port(*worker_id, owner);
                    query(s, audit, vec![text(&self.host_name), Param::Text(port)])?;
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
                let w = worker(*worker_id)?;
                let times = vec![
                    int(*ttl_ms, "ttl_ms")?,
                    int(*mark_ms, "mark_ms")?,
                    int(*reported_ms, "reported_ms")?,
                ];
                let rows = if postgres {
                    let params = [times, vec![w.clone(), text(owner), w]].concat();
                    query(s, pg::RENEW, params)?.0
                } else {
                    query(s, my::RENEW, [times, vec![w.clone(), text(owner)]].concat())?;
                    query(s, my::RENEWED, vec![text(owner), w])?.0
                };
                first(&rows)
            }
            RegistryCall::Release {
                worker_id,
                owner,
                mark_ms,
            } => {
                let params = vec![int(*mark_ms, "mark_ms")?, worker(*worker_id)?, text(owner)];
                let statement = if postgres { pg::RELEASE } else { my::RELEASE };
                let (rows, affected) = query(s, statement, params)?;
                Ok(Value::Bool(if postgres {
                    !rows.is_empty()
                } else {
                    affected == 1
                }))
            }
            RegistryCall::Peers => {
                let statement = if postgres { pg::PEERS } else { my::PEERS };
                let (rows, _) = query(s, statement, vec![])?;
                let mut reports = Vec::with_capacity(rows.len());
                for row in &rows {
                    match row.as_slice() {
                        [Value::Int(w), Value::Int(reported), Value::Int(age)] => {
                            reports.push((*w, *reported, *age))
                        }
                        _ => {
                            return Err(Stop::Fail(format!(
                                "a peers row is {}, not three integers",
                                Value::List(row.clone()).to_json()
                            )))
                        }
                    }
                }
                Ok(crate::lease::peers_answer(reports))
            }
        }
    }
}

// Host values: a request is `{op: "query", statement, params: [INT | TEXT, ...]}`; a reply
// is `{rows: [[COLUMN, ...], ...], affected?}` or `{error}`.

impl Request for SqlOp {
    fn to_value(&self) -> Value {
        let params = self
            .params
            .iter()
            .map(|p| match p {
                Param::Int(i) => Value::Int(i128::from(*i)),
                Param::Text(t) => Value::Str(t.clone()),
            })
            .collect();
        Value::Map(vec![
            ("op".into(), Value::Str("query".into())),
            ("statement".into(), Value::Str(self.statement.into())),
            ("params".into(), Value::List(params)),
        ])
    }
}

impl SqlReply {
    /// A reply from its host value; an unreadable one becomes a failure that says why.
    pub fn from_value(v: &Value) -> SqlReply {
        let fail =
            |why: &str| SqlReply::Failed(format!("the SQL adapter's reply {}: {why}", v.to_json()));
        let Value::Map(pairs) = v else {
            return fail("not an object");
        };
        let field = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        if let Some(e) = field("error") {
            return SqlReply::Failed(match e {
                Value::Str(s) => s.clone(),
                other => other.to_json(),
            });
        }
        let rows = match field("rows") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::List(rows)) => {
                let mut out = Vec::with_capacity(rows.len());
                for row in rows {
                    match row {
                        Value::List(cols) => out.push(cols.clone()),
                        _ => return fail("a row is not a list"),
                    }
                }
                out
            }
            Some(_) => return fail("rows is not a list"),
        };
        let affected = match field("affected") {
            None | Some(Value::Null) => 0,
            Some(n) => match n.as_u64() {
                Some(n) => n,
                None => return fail("affected is not a count"),
            },
        };
        SqlReply::Rows { rows, affected }
    }

    pub fn to_value(&self) -> Value {
        match self {
            SqlReply::Rows { rows, affected } => Value::Map(vec![
                (
                    "rows".into(),
                    Value::List(rows.iter().cloned().map(Value::List).collect()),
                ),
                ("affected".into(), Value::uint(*affected)),
            ]),
            SqlReply::Failed(e) => Value::Map(vec![("error".into(), Value::Str(e.clone()))]),
        }
    }
}
