//! PostgreSQL on tokio-postgres, async: the store and the lease registry run the steps of
//! `crate::pg` (the same code the blocking adapters run with `block_on`) on connections
//! from a [`PostgresPool`]: [`SingleConnection`] (one connection of the adapter's own,
//! from a URL or a `tokio_postgres::Config`), a `deadpool_postgres::Pool` (the
//! `deadpool-postgres` feature), or any pool of the caller's.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use segflake::lease::conversation::{Protocol, Step};
use segflake::lease::sql::{Dialect as SqlDialect, SqlProtocol, SqlReply};
use segflake::segment::TagRecord;
use segflake::{Allocation, RegistryCall, StoreFailure, Value};
use segflake_tokio::{AsyncRegistry, AsyncSegmentStore};
use tokio_postgres::Statement;

use crate::pg::{self, Session};
use crate::sql::PgConfig;
use crate::stores::{allocation_of, give_back_token, lock, to_i64, FirstAllocation};
use crate::{RegistryOptions, StoreOptions};

/// A connection of a [`PostgresPool`]: a `tokio_postgres::Client` to run statements on.
pub trait PostgresConnection: Send + 'static {
    /// The client.
    fn client(&self) -> &tokio_postgres::Client;

    /// `sql`, prepared on this connection. The default prepares it on every call (two
    /// round trips a statement); a pool that caches statements per connection
    /// (deadpool's `prepare_cached`) should use its cache.
    fn prepare(
        &mut self,
        sql: &str,
    ) -> impl Future<Output = Result<Statement, tokio_postgres::Error>> + Send {
        self.client().prepare(sql)
    }

    /// Called instead of a plain drop when a call on this connection failed or outlived
    /// its deadline (a connection that died silently looks alive): a pool should not hand
    /// it out again. The default drops it.
    fn discard(self)
    where
        Self: Sized,
    {
    }
}

/// Where the async PostgreSQL store and registry take their connections from: a pool of
/// the caller's (implement it for yours: a `get` that yields a connection), a
/// `deadpool_postgres::Pool` (the `deadpool-postgres` feature), or the adapter's own
/// [`SingleConnection`].
pub trait PostgresPool: Send + Sync + 'static {
    /// A connection taken from the pool (returned to it on drop).
    type Connection: PostgresConnection;

    /// A connection, or why there is none.
    fn connection(&self) -> impl Future<Output = Result<Self::Connection, String>> + Send;

    /// For messages: `postgres://USER@HOST:PORT/DB`, or a word for the pool.
    fn describe(&self) -> String {
        "postgres://(pool)".into()
    }
}

impl<C: PostgresConnection> Session for C {
    fn client(&self) -> &tokio_postgres::Client {
        PostgresConnection::client(self)
    }

    async fn statement(&mut self, sql: &str) -> Result<Statement, String> {
        self.prepare(sql).await.map_err(pg::pg_error)
    }
}

/// One connection of the adapter's own, from a URL or a `tokio_postgres::Config`: opened
/// on first use (its I/O driven by a task on the caller's runtime), shared by concurrent
/// calls (tokio-postgres pipelines them), its statements prepared once, and replaced after
/// any failure or a call past the timeout.
pub struct SingleConnection {
    settings: PgConfig,
    timeout: Duration,
    slot: Arc<Mutex<Option<Arc<Own>>>>,
    /// One connect at a time.
    connecting: tokio::sync::Mutex<()>,
}

struct Own {
    client: tokio_postgres::Client,
    prepared: Mutex<HashMap<String, Statement>>,
}

/// A connection of a [`SingleConnection`] (the one it keeps).
pub struct SharedConnection {
    own: Arc<Own>,
    slot: Arc<Mutex<Option<Arc<Own>>>>,
}

impl SingleConnection {
    fn new(settings: PgConfig, timeout: Duration) -> SingleConnection {
        SingleConnection {
            settings,
            timeout,
            slot: Arc::new(Mutex::new(None)),
            connecting: tokio::sync::Mutex::new(()),
        }
    }

    /// The settings of `url`, as libpq takes it (TLS as [`crate::PostgresStore::new`]'s).
    fn from_url(url: &str, timeout: Duration) -> crate::Result<SingleConnection> {
        let settings = crate::sql::postgres_config(url, timeout)
            .map_err(|e| crate::config_error(&crate::redact(url), e))?;
        Ok(SingleConnection::new(settings, timeout))
    }

    /// The connection to the server of `config`, without TLS, with the deadlines of
    /// `timeout` added (as [`crate::PostgresStore::from_config`]).
    pub fn from_config(config: tokio_postgres::Config, timeout: Duration) -> SingleConnection {
        SingleConnection::new(crate::sql::postgres_plain(config, timeout), timeout)
    }

    /// [`from_config`](SingleConnection::from_config) over TLS with the caller's rustls
    /// client configuration.
    #[cfg(feature = "rustls")]
    pub fn from_config_tls(
        config: tokio_postgres::Config,
        tls: rustls::ClientConfig,
        timeout: Duration,
    ) -> SingleConnection {
        SingleConnection::new(crate::sql::postgres_tls(config, tls, timeout), timeout)
    }
}

impl PostgresPool for SingleConnection {
    type Connection = SharedConnection;

    async fn connection(&self) -> Result<SharedConnection, String> {
        let shared = |own| SharedConnection {
            own,
            slot: Arc::clone(&self.slot),
        };
        if let Some(own) = lock(&self.slot).clone() {
            return Ok(shared(own));
        }
        let _one = self.connecting.lock().await;
        if let Some(own) = lock(&self.slot).clone() {
            return Ok(shared(own));
        }
        let (client, driver) = pg::connect(&self.settings, self.timeout).await?;
        tokio::spawn(driver);
        let own = Arc::new(Own {
            client,
            prepared: Mutex::new(HashMap::new()),
        });
        *lock(&self.slot) = Some(Arc::clone(&own));
        Ok(shared(own))
    }

    fn describe(&self) -> String {
        crate::sql::pg_describe(&self.settings.config)
    }
}

impl PostgresConnection for SharedConnection {
    fn client(&self) -> &tokio_postgres::Client {
        &self.own.client
    }

    async fn prepare(&mut self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        if let Some(s) = lock(&self.own.prepared).get(sql) {
            return Ok(s.clone());
        }
        let s = self.own.client.prepare(sql).await?;
        lock(&self.own.prepared).insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Forgets the connection, if it is still the one kept: the next call connects.
    fn discard(self) {
        let mut slot = lock(&self.slot);
        if slot
            .as_ref()
            .is_some_and(|kept| Arc::ptr_eq(kept, &self.own))
        {
            *slot = None;
        }
    }
}

#[cfg(feature = "deadpool-postgres")]
impl PostgresPool for deadpool_postgres::Pool {
    type Connection = deadpool_postgres::Object;

    async fn connection(&self) -> Result<deadpool_postgres::Object, String> {
        self.get().await.map_err(|e| {
            format!(
                "no PostgreSQL connection from the pool: {}",
                crate::error_chain(&e)
            )
        })
    }

    fn describe(&self) -> String {
        "postgres://(deadpool)".into()
    }
}

#[cfg(feature = "deadpool-postgres")]
impl PostgresConnection for deadpool_postgres::Object {
    fn client(&self) -> &tokio_postgres::Client {
        self
    }

    async fn prepare(&mut self, sql: &str) -> Result<Statement, tokio_postgres::Error> {
        self.prepare_cached(sql).await
    }

    /// Taken out of the pool and closed.
    fn discard(self) {
        drop(deadpool_postgres::Object::take(self));
    }
}

/// A connection that is discarded when dropped before [`keep`](Held::keep): after a
/// failure, or when the call's future was dropped at a deadline.
struct Held<C: PostgresConnection>(Option<C>);

impl<C: PostgresConnection> Held<C> {
    fn get(&mut self) -> &mut C {
        self.0.as_mut().expect("held until kept or dropped")
    }

    fn keep(mut self) {
        drop(self.0.take());
    }
}

impl<C: PostgresConnection> Drop for Held<C> {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            c.discard();
        }
    }
}

/// Calls on a pool's connections, each within the timeout.
struct Calls<P> {
    pool: P,
    timeout: Duration,
}

impl<P: PostgresPool> Calls<P> {
    /// `work` on a connection within the timeout; the connection is discarded after a
    /// failure or past the deadline.
    async fn with<T>(
        &self,
        work: impl AsyncFnOnce(&mut P::Connection) -> Result<T, String>,
    ) -> Result<T, String> {
        let call = async {
            let mut held = Held(Some(self.pool.connection().await?));
            let result = work(held.get()).await;
            if result.is_ok() {
                held.keep();
            }
            result
        };
        match tokio::time::timeout(self.timeout, call).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "PostgreSQL did not answer within {:?} (the connection is dropped)",
                self.timeout
            )),
        }
    }
}

/// The async PostgreSQL store: Leaf's `leaf_alloc` table with the blocking
/// [`crate::PostgresStore`]'s statements and rules (the row's step on a tag's first
/// allocation, tags created on first use with `StoreOptions::create_missing_step`, give
/// backs recorded under a token), on connections of `P`; every call ends within
/// `StoreOptions::timeout_ms`.
pub struct PostgresStore<P: PostgresPool = SingleConnection> {
    calls: Calls<P>,
    described: String,
    settings: StoreOptions,
    /// Whether the table has the residue columns; read once.
    residue: Mutex<Option<bool>>,
    /// Tags allocated at least once: later allocations use the requested step.
    started: FirstAllocation,
    /// The give backs' marker table is known to exist.
    give_back_table: AtomicBool,
}

impl PostgresStore<SingleConnection> {
    /// The store of `url`, as libpq takes it (a URL or `key=value` words), TLS by
    /// `sslmode` and `sslrootcert` (the `rustls` feature). Nothing is connected yet.
    pub fn new(url: &str, options: &StoreOptions) -> crate::Result<Self> {
        let pool = SingleConnection::from_url(url, options.timeout())?;
        Ok(PostgresStore::with(pool, crate::redact(url), options))
    }

    /// The store on the server of a `tokio_postgres::Config` set up by the caller, without
    /// TLS (as [`crate::PostgresStore::from_config`]).
    pub fn from_config(config: tokio_postgres::Config, options: &StoreOptions) -> Self {
        let pool = SingleConnection::from_config(config, options.timeout());
        let described = pool.describe();
        PostgresStore::with(pool, described, options)
    }
}

impl<P: PostgresPool> PostgresStore<P> {
    /// The store on connections of `pool` (a `deadpool_postgres::Pool`, or a pool of
    /// yours); each call takes a connection for its statements and returns it.
    pub fn from_pool(pool: P, options: &StoreOptions) -> Self {
        let described = pool.describe();
        PostgresStore::with(pool, described, options)
    }

    fn with(pool: P, described: String, options: &StoreOptions) -> Self {
        PostgresStore {
            calls: Calls {
                pool,
                timeout: options.timeout(),
            },
            described,
            settings: *options,
            residue: Mutex::new(None),
            started: FirstAllocation::default(),
            give_back_table: AtomicBool::new(false),
        }
    }

    /// The store's URL without its password, for logs and errors.
    pub fn describe(&self) -> &str {
        &self.described
    }

    /// The pool the store takes its connections from.
    pub fn pool(&self) -> &P {
        &self.calls.pool
    }

    async fn residue(&self, c: &mut P::Connection) -> Result<bool, String> {
        if let Some(known) = *lock(&self.residue) {
            return Ok(known);
        }
        let known = pg::has_residue_columns(c).await?;
        *lock(&self.residue) = Some(known);
        Ok(known)
    }

    /// Raises the tag's `max_id` by `step`, or by the row's own step when `None`.
    pub async fn allocate_with(
        &self,
        tag: &str,
        step: Option<u64>,
    ) -> Result<Allocation, StoreFailure> {
        let signed = step.map(|s| to_i64(s, "step")).transpose()?;
        let create = self
            .settings
            .create_missing_step
            .map(|s| to_i64(s, "step"))
            .transpose()?;
        let row = self
            .calls
            .with(async |c| {
                let residue = self.residue(c).await?;
                let row = pg::allocate(c, tag, signed, residue).await?;
                match (row, create) {
                    (None, Some(new_step)) => {
                        pg::create(c, tag, new_step).await?;
                        pg::allocate(c, tag, signed, residue).await
                    }
                    (row, _) => Ok(row),
                }
            })
            .await?;
        let Some(row) = row else {
            return Err(StoreFailure::UnknownTag);
        };
        allocation_of(row, &self.settings)
    }

    /// Whether the store has a row for `tag`.
    pub async fn has_tag(&self, tag: &str) -> Result<bool, String> {
        self.calls.with(async |c| pg::has_tag(c, tag).await).await
    }

    /// Every tag's row.
    pub async fn records(&self) -> Result<Vec<TagRecord>, String> {
        self.calls.with(async |c| pg::records(c).await).await
    }

    /// A give back recorded and applied under `token`, as
    /// [`TagStore::give_back_as`](crate::TagStore::give_back_as).
    pub async fn give_back_as(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
        token: &str,
    ) -> Result<bool, StoreFailure> {
        if max_id >= expected_max_id {
            return Ok(false);
        }
        let expected = to_i64(expected_max_id, "max_id")?;
        let max_id = to_i64(max_id, "max_id")?;
        let known = self.give_back_table.load(Ordering::Relaxed);
        let lowered = self
            .calls
            .with(async |c| pg::give_back(c, known, token, tag, expected, max_id).await)
            .await?;
        self.give_back_table.store(true, Ordering::Relaxed);
        Ok(lowered)
    }
}

impl<P: PostgresPool> AsyncSegmentStore for PostgresStore<P> {
    async fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        let step = self.started.step(tag, step, self.settings.use_row_step);
        let a = self.allocate_with(tag, step).await?;
        self.started.allocated(tag);
        Ok(a)
    }

    async fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> Result<bool, StoreFailure> {
        let token = give_back_token()?;
        self.give_back_as(tag, expected_max_id, max_id, &token)
            .await
    }
}

/// The async PostgreSQL lease registry: the core's statements for the tables of
/// `segflake::lease::schema::postgres` (created if missing), as the blocking
/// [`crate::PostgresRegistry`] sends them, on connections of `P`; every statement ends
/// within `RegistryOptions::timeout_ms`.
pub struct PostgresRegistry<P: PostgresPool = SingleConnection> {
    calls: Calls<P>,
    protocol: tokio::sync::Mutex<SqlProtocol>,
    schema: AtomicBool,
}

impl PostgresRegistry<SingleConnection> {
    /// The registry of `url`, as libpq takes it. Nothing is connected yet.
    pub fn new(url: &str, options: &RegistryOptions) -> crate::Result<Self> {
        let pool = SingleConnection::from_url(url, options.timeout())?;
        Ok(PostgresRegistry::from_pool(pool, options))
    }

    /// The registry on the server of a `tokio_postgres::Config` set up by the caller,
    /// without TLS.
    pub fn from_config(config: tokio_postgres::Config, options: &RegistryOptions) -> Self {
        let pool = SingleConnection::from_config(config, options.timeout());
        PostgresRegistry::from_pool(pool, options)
    }
}

impl<P: PostgresPool> PostgresRegistry<P> {
    /// The registry on connections of `pool`.
    pub fn from_pool(pool: P, options: &RegistryOptions) -> Self {
        PostgresRegistry {
            calls: Calls {
                pool,
                timeout: options.timeout(),
            },
            protocol: tokio::sync::Mutex::new(SqlProtocol::new(
                SqlDialect::Postgres,
                &crate::registry::host_name(),
            )),
            schema: AtomicBool::new(false),
        }
    }

    async fn perform(&self, op: &segflake::lease::sql::SqlOp) -> SqlReply {
        let schema = self.schema.load(Ordering::Relaxed);
        let answer = self
            .calls
            .with(async |c| {
                if !schema {
                    pg::registry_schema(c).await?;
                }
                pg::registry_query(c, op).await
            })
            .await;
        match answer {
            Ok((rows, affected)) => {
                self.schema.store(true, Ordering::Relaxed);
                SqlReply::Rows { rows, affected }
            }
            Err(e) => SqlReply::Failed(e),
        }
    }
}

impl<P: PostgresPool> AsyncRegistry for PostgresRegistry<P> {
    async fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        let mut protocol = self.protocol.lock().await;
        let mut step = protocol.start(call.clone(), ());
        loop {
            match step {
                Step::Op(op) => {
                    let reply = self.perform(&op).await;
                    step = protocol.resume(reply);
                }
                Step::Answer(answer) => return answer,
            }
        }
    }
}
