//! The segment stores: `file:PATH` (the core's [`FileStore`]), and Leaf's `leaf_alloc`
//! table on PostgreSQL (`postgres://`, `postgresql://`, as libpq takes them) and
//! MySQL/MariaDB (`mysql://`), and a counter per tag on Redis (`redis://`), with the
//! statements and keys of the Python and Node adapters (`stores/README.md`), so all of
//! them can share one table.
//!
//! Leaf's rules for a tag: the first allocation after start uses the row's own `step`, and
//! every answer reports that step as the tag's, which the core then uses as the start and
//! floor of the dynamic step (`StoreOptions::use_row_step` switches this off). A tag
//! without a row is [`StoreFailure::UnknownTag`], or is created on first use with
//! `StoreOptions::create_missing_step`.
//!
//! The core's driver calls a store only from its own fetch threads, never on a request's
//! path, so these stores are blocking clients: tokio-postgres on a runtime of its own,
//! `mysql`, and the RESP connection of the Redis registry. Each keeps one connection,
//! opened on first use and dropped after any error so the next call reconnects; a
//! restarted database is picked up without a restart of the process. Every call ends
//! within the store timeout, also on a connection that died silently (`sql.rs`).

#[cfg(any(feature = "postgres", feature = "mysql"))]
use std::collections::HashSet;
#[cfg(any(feature = "postgres", feature = "mysql"))]
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(any(feature = "postgres", feature = "mysql", feature = "redis"))]
use std::sync::Mutex;
#[cfg(any(feature = "postgres", feature = "redis"))]
use std::time::Duration;

use segflake::segment::TagRecord;
#[cfg(feature = "redis")]
use segflake::Value;
use segflake::{Allocation, FileStore, FileStoreOptions, SegmentStore, StoreFailure};

#[cfg(feature = "redis")]
use crate::redis::{Connection as RedisConnection, RedisSource, Reply as RedisReply};
#[cfg(feature = "mysql")]
use crate::sql::{mysql_connect_writable, mysql_error};
#[cfg(feature = "postgres")]
use crate::sql::{pg_step, PgConfig, Postgres as PgConn};
use crate::StoreOptions;
#[cfg(feature = "redis")]
use segflake::redis::ReplicaWait;

/// The Redis key of a tag: the core's `key` (`segflake:leaf_alloc:<tag>`).
#[cfg(feature = "redis")]
fn redis_key(tag: &str) -> String {
    core_statement("redis", "key").replace("<tag>", tag)
}

/// A segment store that can also say which tags it has and list its rows: what every store
/// of this crate is, and what an ID service needs beside allocation (`segflake serve`'s
/// readiness, its status page, `segflake stats`).
pub trait TagStore: SegmentStore {
    /// Raises the tag's `max_id` by `step`, or by the row's own step when `None` (the
    /// default step on a store without one); the answer reports the row's step.
    fn allocate_with(&self, tag: &str, step: Option<u64>) -> Result<Allocation, StoreFailure>;
    /// Whether the store can serve `tag`: a row (key) exists. A file store creates tags on
    /// first use, so it has every tag.
    fn has_tag(&self, tag: &str) -> Result<bool, String>;
    /// Every tag's row.
    fn records(&self) -> Result<Vec<TagRecord>, String>;
    /// The store's URL without its password, for logs and errors.
    fn describe(&self) -> &str;
    /// [`SegmentStore::give_back`] recorded and applied under `token` (16 to 64 of
    /// `0-9a-f`, checked by the caller) instead of a fresh one: the SQL stores' marker
    /// row, the Redis store's marker key. Run again with the same token (a resent
    /// request), it changes nothing, on this process or any other. The file store keeps no
    /// record of its give backs and gives back as `give_back` does: its caller must not
    /// run one twice.
    fn give_back_as(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
        token: &str,
    ) -> Result<bool, StoreFailure>;
}

/// The data behind `m`, also when a panic elsewhere poisoned the lock.
#[cfg(any(feature = "postgres", feature = "mysql", feature = "redis"))]
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Leaf's step rule: a tag's first allocation after start uses the row's own step (with
/// `StoreOptions::use_row_step`); every later one the step the engine asks for.
#[cfg(any(feature = "postgres", feature = "mysql"))]
#[derive(Default)]
pub(crate) struct FirstAllocation(Mutex<HashSet<String>>);

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl FirstAllocation {
    /// The step to allocate `tag` by: `None` (the row's) for its first allocation when
    /// `use_row_step`, else `step`.
    pub(crate) fn step(&self, tag: &str, step: u64, use_row_step: bool) -> Option<u64> {
        let first = !lock(&self.0).contains(tag);
        (!(first && use_row_step)).then_some(step)
    }

    /// `tag` was allocated: its later allocations use the engine's step.
    pub(crate) fn allocated(&self, tag: &str) {
        lock(&self.0).insert(tag.to_owned());
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn to_i64(v: u64, what: &str) -> Result<i64, String> {
    i64::try_from(v).map_err(|_| format!("{what} {v} does not fit a BIGINT"))
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn to_u64(v: i64, what: &str) -> Result<u64, String> {
    u64::try_from(v).map_err(|_| format!("the store returned a negative {what} ({v})"))
}

/// `SegmentStore` and `TagStore` of a store type wrapping an `Sql<_>`.
#[cfg(any(feature = "postgres", feature = "mysql"))]
macro_rules! delegate_store {
    ($store:ident) => {
        impl SegmentStore for $store {
            fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
                self.0.allocate(tag, step)
            }

            fn give_back(
                &self,
                tag: &str,
                expected_max_id: u64,
                max_id: u64,
            ) -> Result<bool, StoreFailure> {
                self.0.give_back(tag, expected_max_id, max_id)
            }
        }

        impl TagStore for $store {
            fn allocate_with(
                &self,
                tag: &str,
                step: Option<u64>,
            ) -> Result<Allocation, StoreFailure> {
                self.0.allocate_with(tag, step)
            }

            fn has_tag(&self, tag: &str) -> Result<bool, String> {
                self.0.has_tag(tag)
            }

            fn records(&self) -> Result<Vec<TagRecord>, String> {
                self.0.records()
            }

            fn describe(&self) -> &str {
                self.0.describe()
            }

            fn give_back_as(
                &self,
                tag: &str,
                expected_max_id: u64,
                max_id: u64,
                token: &str,
            ) -> Result<bool, StoreFailure> {
                self.0.give_back_as(tag, expected_max_id, max_id, token)
            }
        }
    };
}

/// The `file:PATH` store: the core's [`FileStore`], with the URL it was opened from.
pub struct FileTagStore {
    store: FileStore,
    described: String,
}

impl FileTagStore {
    /// Opens (or creates) the file at `path`; new tags start at `initial_max_id`.
    // The core's option structs are to be `#[non_exhaustive]`: no struct literal.
    #[allow(clippy::field_reassign_with_default)]
    pub fn open(path: &str, initial_max_id: u64) -> crate::Result<FileTagStore> {
        let mut options = FileStoreOptions::default();
        options.initial_max_id = initial_max_id;
        Ok(FileTagStore {
            store: FileStore::with_options(path, options)?,
            described: format!("file:{path}"),
        })
    }

    /// The core's store underneath.
    pub fn file_store(&self) -> &FileStore {
        &self.store
    }
}

impl SegmentStore for FileTagStore {
    fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        self.store.allocate(tag, step)
    }

    fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> Result<bool, StoreFailure> {
        self.store.give_back(tag, expected_max_id, max_id)
    }
}

impl TagStore for FileTagStore {
    /// A file store keeps the step of each tag's last range, not a configured one.
    fn allocate_with(&self, tag: &str, step: Option<u64>) -> Result<Allocation, StoreFailure> {
        self.store
            .allocate(tag, step.unwrap_or(segflake::segment::DEFAULT_STEP))
    }

    fn has_tag(&self, tag: &str) -> Result<bool, String> {
        segflake::segment::check_tag(tag).map_err(|e| e.to_string())?;
        Ok(true)
    }

    fn records(&self) -> Result<Vec<TagRecord>, String> {
        self.store.records().map_err(|e| e.to_string())
    }

    fn describe(&self) -> &str {
        &self.described
    }

    /// The file keeps no tokens: the compare-and-set alone (`serve` remembers the tokens).
    fn give_back_as(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
        _token: &str,
    ) -> Result<bool, StoreFailure> {
        self.store.give_back(tag, expected_max_id, max_id)
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
/// An allocated row: max_id, the step used, the row's step, and its `(delta, remainder)`
/// when the table has those columns and the row sets them.
pub(crate) type Row = (i64, i64, i64, Option<(i64, i64)>);

#[cfg(any(feature = "postgres", feature = "mysql"))]
/// One SQL dialect: connect, allocate, look a tag up, list the rows.
trait Dialect: Send + Sync + 'static {
    type Conn: Send;
    fn connect(&self) -> Result<Self::Conn, String>;
    /// Raises max_id by `step`, or by the row's step when `None`: the new max_id, the step
    /// used, the row's step and, when `residue` (the table has Tinyid's `delta` and
    /// `remainder` columns), the row's residue class; `None` when the tag has no row.
    fn allocate(
        &self,
        conn: &mut Self::Conn,
        tag: &str,
        step: Option<i64>,
        residue: bool,
    ) -> Result<Option<Row>, String>;
    /// Whether `leaf_alloc` has the `delta` and `remainder` columns.
    fn has_residue_columns(&self, conn: &mut Self::Conn) -> Result<bool, String>;
    /// Inserts the tag's row (`max_id` 1) unless it exists.
    fn create(&self, conn: &mut Self::Conn, tag: &str, step: i64) -> Result<(), String>;
    fn has_tag(&self, conn: &mut Self::Conn, tag: &str) -> Result<bool, String>;
    fn records(&self, conn: &mut Self::Conn) -> Result<Vec<TagRecord>, String>;
    /// The core's `give_back_table`: the marker table of the give backs, unless it exists.
    fn give_back_table(&self, conn: &mut Self::Conn) -> Result<(), String>;
    /// The core's `give_back_intent`: records a give back under `token` (nothing if the
    /// token is recorded already).
    fn give_back_intent(
        &self,
        conn: &mut Self::Conn,
        token: &str,
        tag: &str,
        max_id: i64,
        expected: i64,
    ) -> Result<(), String>;
    /// The core's `give_back`: applies the give back recorded under `token`, at most once
    /// (`max_id` from the recorded expected value to the recorded one if unchanged); whether
    /// it lowered `max_id`.
    fn give_back_apply(&self, conn: &mut Self::Conn, token: &str) -> Result<bool, String>;
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
/// The description of a row created on first use (`StoreOptions::create_missing_step`).
pub(crate) const CREATED_BY: &str = "created by segflake";

#[cfg(any(feature = "postgres", feature = "mysql", feature = "redis"))]
/// The table the SQL stores use: Leaf's.
const TABLE: &str = "leaf_alloc";

#[cfg(any(feature = "postgres", feature = "mysql", feature = "redis"))]
/// The core's statement `call` of `store` for Leaf's table.
pub(crate) fn core_statement(store: &str, call: &str) -> String {
    segflake::segment::statements::statement(store, call, TABLE)
        .unwrap_or_else(|| panic!("the core has no {store} {call} statement"))
}

#[cfg(any(feature = "postgres", feature = "mysql", feature = "redis"))]
/// A fresh random token (128 bits, hex) naming one give back: the SQL stores' record in
/// `leaf_alloc_give_back`, the Redis store's marker key.
pub(crate) fn give_back_token() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| format!("no random token for the give back: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The outcome of recording a give back: the record written (`intent`) after the marker
/// table's creation was tried (`created`; `Ok` when it was known to exist). A user who may
/// not create tables can still write one made beforehand (PostgreSQL and MariaDB refuse
/// `CREATE TABLE IF NOT EXISTS` without the privilege even when the table exists), so a
/// failed creation is reported only if the record cannot be written either.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn record_outcome(
    intent: Result<(), String>,
    created: Result<(), String>,
) -> Result<(), String> {
    match (intent, created) {
        (Ok(()), _) => Ok(()),
        (Err(e), Ok(())) => Err(e),
        (Err(e), Err(create)) => Err(format!(
            "cannot give back: the marker table {TABLE}_give_back cannot be created \
             ({create}) nor written ({e}); creating it needs the CREATE privilege (on \
             the schema in PostgreSQL, on the database in MySQL), or create it \
             beforehand (stores/sql/leaf_alloc.*.sql) and grant SELECT, INSERT, UPDATE \
             on it (until then the IDs are not given back: a gap, never a duplicate)"
        )),
    }
}

/// The allocation an allocated row makes: its residue class, and the row's step as the
/// tag's when `settings.use_row_step` (Leaf's rule).
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn allocation_of(row: Row, settings: &StoreOptions) -> Result<Allocation, StoreFailure> {
    let (max_id, used, row_step, residue) = row;
    let mut a = Allocation::new(to_u64(max_id, "max_id")?, to_u64(used, "step")?);
    if let Some((delta, remainder)) = residue {
        a = a.with_residue(to_u64(delta, "delta")?, to_u64(remainder, "remainder")?);
    }
    match to_u64(row_step, "step")? {
        row_step if settings.use_row_step && row_step > 0 => Ok(a.with_tag_step(row_step)),
        _ => Ok(a),
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
struct Sql<D: Dialect> {
    dialect: D,
    /// The connection, and whether its table has the residue columns (read at connect).
    conn: Mutex<Option<(D::Conn, bool)>>,
    described: String,
    settings: StoreOptions,
    /// Tags allocated at least once: later allocations use the requested step.
    started: FirstAllocation,
    /// The give backs' marker table is known to exist (created, or written to).
    give_back_table: AtomicBool,
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl<D: Dialect> Sql<D> {
    fn new(dialect: D, described: String, settings: StoreOptions) -> Sql<D> {
        Sql {
            dialect,
            conn: Mutex::new(None),
            described,
            settings,
            started: FirstAllocation::default(),
            give_back_table: AtomicBool::new(false),
        }
    }

    /// Records the give back under `token` (`give_back_intent`), creating the marker table
    /// first unless this store saw it already. A user who may not create tables can still
    /// write one made beforehand (PostgreSQL and MariaDB refuse `CREATE TABLE IF NOT
    /// EXISTS` without the privilege even when the table exists), so a failed creation is
    /// reported only if the record cannot be written either.
    fn record_give_back(
        &self,
        d: &D,
        c: &mut D::Conn,
        token: &str,
        tag: &str,
        expected: i64,
        max_id: i64,
    ) -> Result<(), String> {
        let mut created = Ok(());
        if !self.give_back_table.load(Ordering::Relaxed) {
            created = d.give_back_table(c);
        }
        record_outcome(d.give_back_intent(c, token, tag, max_id, expected), created)?;
        self.give_back_table.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Runs `f` on the connection (and whether its table has the residue columns), opening
    /// it first if needed and dropping it on error.
    fn with<T>(
        &self,
        f: impl FnOnce(&D, &mut D::Conn, bool) -> Result<T, String>,
    ) -> Result<T, String> {
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let mut conn = self.dialect.connect()?;
            let residue = self.dialect.has_residue_columns(&mut conn)?;
            *guard = Some((conn, residue));
        }
        let (conn, residue) = guard.as_mut().expect("connected above");
        let result = f(&self.dialect, conn, *residue);
        if result.is_err() {
            *guard = None;
        }
        result
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl<D: Dialect> SegmentStore for Sql<D> {
    fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        let step = self.started.step(tag, step, self.settings.use_row_step);
        let a = self.allocate_with(tag, step)?;
        self.started.allocated(tag);
        Ok(a)
    }

    fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> Result<bool, StoreFailure> {
        self.give_back_as(tag, expected_max_id, max_id, &give_back_token()?)
    }
}

#[cfg(any(feature = "postgres", feature = "mysql"))]
impl<D: Dialect> TagStore for Sql<D> {
    fn allocate_with(&self, tag: &str, step: Option<u64>) -> Result<Allocation, StoreFailure> {
        let signed = step.map(|s| to_i64(s, "step")).transpose()?;
        let mut answer = self.with(|d, c, r| d.allocate(c, tag, signed, r))?;
        if let (None, Some(new_step)) = (answer, self.settings.create_missing_step) {
            let new_step = to_i64(new_step, "step")?;
            answer = self.with(|d, c, r| {
                d.create(c, tag, new_step)?;
                d.allocate(c, tag, signed, r)
            })?;
        }
        let Some(row) = answer else {
            return Err(StoreFailure::UnknownTag);
        };
        allocation_of(row, &self.settings)
    }

    fn has_tag(&self, tag: &str) -> Result<bool, String> {
        self.with(|d, c, _| d.has_tag(c, tag))
    }

    fn records(&self) -> Result<Vec<TagRecord>, String> {
        self.with(|d, c, _| d.records(c))
    }

    fn describe(&self) -> &str {
        &self.described
    }

    fn give_back_as(
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
        // Recorded under its token, then applied by token: a statement resent after a lost
        // reply (or run late), or the whole give back resent with its token, never lowers
        // max_id a second time.
        Ok(self.with(|d, c, _| {
            self.record_give_back(d, c, token, tag, expected, max_id)?;
            d.give_back_apply(c, token)
        })?)
    }
}

/// The PostgreSQL store (`postgres://…`, `postgresql://…`): Leaf's `leaf_alloc` table,
/// through tokio-postgres on a runtime of the store's own (callable and droppable from async
/// code too); every call ends within `StoreOptions::timeout_ms`.
#[cfg(feature = "postgres")]
pub struct PostgresStore(Sql<Postgres>);

#[cfg(feature = "postgres")]
impl PostgresStore {
    /// The store of `url`, as libpq takes it (a URL or `key=value` words), with TLS by
    /// `sslmode=disable|require|verify-ca|verify-full` and `sslrootcert=PATH` (the `rustls`
    /// feature). Nothing is connected yet: the first call connects.
    pub fn new(url: &str, options: &StoreOptions) -> crate::Result<PostgresStore> {
        let described = crate::redact(url);
        let timeout = options.timeout();
        let config = crate::sql::postgres_config(url, timeout)
            .map_err(|e| crate::config_error(&described, e))?;
        Ok(PostgresStore(Sql::new(
            Postgres { config, timeout },
            described,
            *options,
        )))
    }

    /// The store on the server of `config`, a [`tokio_postgres::Config`] set up by the
    /// caller (hosts, user, password, database, options), without TLS: tokio-postgres
    /// leaves TLS to a connector, so its `sslmode` is not used (see
    /// [`from_config_tls`](PostgresStore::from_config_tls)). Its connect timeout,
    /// keepalives and `TCP_USER_TIMEOUT` are set from `options.timeout_ms`, and
    /// `statement_timeout` is added to its options.
    pub fn from_config(config: tokio_postgres::Config, options: &StoreOptions) -> PostgresStore {
        let timeout = options.timeout();
        let config = crate::sql::postgres_plain(config, timeout);
        let described = crate::sql::pg_describe(&config.config);
        PostgresStore(Sql::new(Postgres { config, timeout }, described, *options))
    }

    /// [`from_config`](PostgresStore::from_config) over TLS with the caller's rustls
    /// client configuration (its roots and checks).
    #[cfg(feature = "rustls")]
    pub fn from_config_tls(
        config: tokio_postgres::Config,
        tls: rustls::ClientConfig,
        options: &StoreOptions,
    ) -> PostgresStore {
        let timeout = options.timeout();
        let config = crate::sql::postgres_tls(config, tls, timeout);
        let described = crate::sql::pg_describe(&config.config);
        PostgresStore(Sql::new(Postgres { config, timeout }, described, *options))
    }
}

#[cfg(feature = "postgres")]
delegate_store!(PostgresStore);

#[cfg(feature = "postgres")]
struct Postgres {
    config: PgConfig,
    timeout: Duration,
}

/// The blocking PostgreSQL dialect: the shared async steps of [`crate::pg`], each run on
/// the connection's own runtime within the store timeout.
#[cfg(feature = "postgres")]
impl Dialect for Postgres {
    type Conn = PgConn;

    fn connect(&self) -> Result<PgConn, String> {
        PgConn::connect(&self.config, self.timeout)
    }

    fn allocate(
        &self,
        c: &mut PgConn,
        tag: &str,
        step: Option<i64>,
        residue: bool,
    ) -> Result<Option<Row>, String> {
        pg_step!(c, allocate(tag, step, residue))
    }

    fn give_back_table(&self, c: &mut PgConn) -> Result<(), String> {
        pg_step!(c, give_back_table())
    }

    fn give_back_intent(
        &self,
        c: &mut PgConn,
        token: &str,
        tag: &str,
        max_id: i64,
        expected: i64,
    ) -> Result<(), String> {
        pg_step!(c, give_back_intent(token, tag, max_id, expected))
    }

    fn give_back_apply(&self, c: &mut PgConn, token: &str) -> Result<bool, String> {
        pg_step!(c, give_back_apply(token))
    }

    fn has_residue_columns(&self, c: &mut PgConn) -> Result<bool, String> {
        pg_step!(c, has_residue_columns())
    }

    fn create(&self, c: &mut PgConn, tag: &str, step: i64) -> Result<(), String> {
        pg_step!(c, create(tag, step))
    }

    fn has_tag(&self, c: &mut PgConn, tag: &str) -> Result<bool, String> {
        pg_step!(c, has_tag(tag))
    }

    fn records(&self, c: &mut PgConn) -> Result<Vec<TagRecord>, String> {
        pg_step!(c, records())
    }
}

/// The MySQL/MariaDB store (`mysql://…`): Leaf's `leaf_alloc` table through the blocking
/// `mysql` client; every call ends within `StoreOptions::timeout_ms`.
#[cfg(feature = "mysql")]
pub struct MySqlStore(Sql<MySql>);

#[cfg(feature = "mysql")]
impl MySqlStore {
    /// The store of `url`, `mysql://USER[:PASSWORD]@HOST[:PORT][,HOST[:PORT]…]/DB` (of
    /// several hosts, the first that takes writes is used), with TLS by
    /// `ssl-mode=DISABLED|REQUIRED|VERIFY_CA|VERIFY_IDENTITY` and `ssl-ca=PATH` (the
    /// `rustls` feature). Nothing is connected yet: the first call connects.
    pub fn new(url: &str, options: &StoreOptions) -> crate::Result<MySqlStore> {
        let described = crate::redact(url);
        // With CLIENT_FOUND_ROWS, affected_rows() counts the rows an UPDATE matched,
        // so a tag whose max_id did not change is still found.
        let opts = crate::sql::mysql_targets(url, options.timeout())
            .map_err(|e| crate::config_error(&described, e))?;
        Ok(MySqlStore(Sql::new(MySql { opts }, described, *options)))
    }

    /// The store on the server of `opts`, set up by the caller (address, credentials,
    /// database, TLS); its connect, read and write timeouts, keepalives and
    /// `innodb_lock_wait_timeout` are set from `options.timeout_ms`, and
    /// `CLIENT_FOUND_ROWS`, which the statements need, is added (its `init` statements
    /// and additional capabilities are replaced).
    pub fn from_opts(opts: mysql::Opts, options: &StoreOptions) -> MySqlStore {
        let described = crate::sql::mysql_describe(&opts);
        let opts =
            crate::sql::mysql_deadlines(mysql::OptsBuilder::from_opts(opts), options.timeout());
        MySqlStore(Sql::new(MySql { opts: vec![opts] }, described, *options))
    }
}

#[cfg(feature = "mysql")]
delegate_store!(MySqlStore);

#[cfg(feature = "mysql")]
struct MySql {
    /// Each server of the URL, in order: the first writable one is connected to.
    opts: Vec<mysql::OptsBuilder>,
}

#[cfg(feature = "mysql")]
impl Dialect for MySql {
    type Conn = mysql::Conn;

    fn connect(&self) -> Result<mysql::Conn, String> {
        mysql_connect_writable(&self.opts)
    }

    fn allocate(
        &self,
        c: &mut mysql::Conn,
        tag: &str,
        step: Option<i64>,
        residue: bool,
    ) -> Result<Option<Row>, String> {
        use mysql::prelude::Queryable;
        // The row's step is read first when none is given, so the step used is known
        // exactly even if an operator changes the row between the two statements.
        let step = match step {
            Some(step) => step,
            None => {
                let row: Option<i64> = c
                    .exec_first(core_statement("mysql", "row_step"), (tag,))
                    .map_err(mysql_error)?;
                match row {
                    Some(step) => step,
                    None => return Ok(None),
                }
            }
        };
        // One atomic statement (autocommit); LAST_INSERT_ID(expr) is this connection's.
        c.exec_drop(core_statement("mysql", "allocate"), (step, tag))
            .map_err(mysql_error)?;
        if c.affected_rows() == 0 {
            return Ok(None);
        }
        // Leaf's second statement: the new max_id, and the row's step (and residue class)
        // as it is now.
        let gone = || format!("the row of {tag:?} disappeared after its UPDATE");
        if residue {
            let row: Option<(i64, i64, Option<i64>, Option<i64>)> = c
                .exec_first(core_statement("mysql", "allocated_residue"), (tag,))
                .map_err(mysql_error)?;
            let (max_id, row_step, delta, remainder) = row.ok_or_else(gone)?;
            return Ok(Some((max_id, step, row_step, delta.zip(remainder))));
        }
        let row: Option<(i64, i64)> = c
            .exec_first(core_statement("mysql", "allocated"), (tag,))
            .map_err(mysql_error)?;
        let (max_id, row_step) = row.ok_or_else(gone)?;
        Ok(Some((max_id, step, row_step, None)))
    }

    fn give_back_table(&self, c: &mut mysql::Conn) -> Result<(), String> {
        use mysql::prelude::Queryable;
        c.query_drop(core_statement("mysql", "give_back_table"))
            .map_err(mysql_error)
    }

    fn give_back_intent(
        &self,
        c: &mut mysql::Conn,
        token: &str,
        tag: &str,
        max_id: i64,
        expected: i64,
    ) -> Result<(), String> {
        use mysql::prelude::Queryable;
        c.exec_drop(
            core_statement("mysql", "give_back_intent"),
            (token, tag, max_id, expected),
        )
        .map_err(mysql_error)
    }

    fn give_back_apply(&self, c: &mut mysql::Conn, token: &str) -> Result<bool, String> {
        use mysql::prelude::Queryable;
        c.exec_drop(core_statement("mysql", "give_back"), (token,))
            .map_err(mysql_error)?;
        // Both tables' rows (the tag's and the record's) when it lowered max_id.
        Ok(c.affected_rows() > 0)
    }

    fn has_residue_columns(&self, c: &mut mysql::Conn) -> Result<bool, String> {
        use mysql::prelude::Queryable;
        let n: Option<i64> = c
            .exec_first(core_statement("mysql", "residue_columns"), ("leaf_alloc",))
            .map_err(mysql_error)?;
        Ok(n == Some(2))
    }

    fn create(&self, c: &mut mysql::Conn, tag: &str, step: i64) -> Result<(), String> {
        use mysql::prelude::Queryable;
        c.exec_drop(
            core_statement("mysql", "ensure_tag"),
            (tag, 1, step, CREATED_BY),
        )
        .map_err(mysql_error)
    }

    fn has_tag(&self, c: &mut mysql::Conn, tag: &str) -> Result<bool, String> {
        use mysql::prelude::Queryable;
        let row: Option<i64> = c
            .exec_first("SELECT 1 FROM leaf_alloc WHERE biz_tag = ?", (tag,))
            .map_err(mysql_error)?;
        Ok(row.is_some())
    }

    fn records(&self, c: &mut mysql::Conn) -> Result<Vec<TagRecord>, String> {
        use mysql::prelude::Queryable;
        let rows: Vec<(String, i64, i64, Option<i64>)> = c
            .query(
                "SELECT biz_tag, max_id, step, CAST(UNIX_TIMESTAMP(update_time) * 1000 AS SIGNED) \
                 FROM leaf_alloc ORDER BY biz_tag",
            )
            .map_err(mysql_error)?;
        rows.into_iter()
            .map(|(tag, max_id, step, updated)| {
                Ok(TagRecord {
                    tag,
                    max_id: to_u64(max_id, "max_id")?,
                    step: to_u64(step, "step")?,
                    updated_ms: to_u64(updated.unwrap_or(0), "update_time")?,
                })
            })
            .collect()
    }
}

/// The Redis store (`redis://…`, `rediss://…`): a counter per tag, the key
/// `segflake:leaf_alloc:<tag>`, raised by the core's script. `INCRBY` would start a missing
/// key at 0, so a tag without a key is [`StoreFailure::UnknownTag`] (or created with
/// `StoreOptions::create_missing_step`). Redis keeps no step per tag: allocations use the
/// step asked for (`StoreOptions::default_step` by [`TagStore::allocate_with`]).
#[cfg(feature = "redis")]
pub struct RedisStore {
    source: RedisSource,
    timeout: Duration,
    connection: Mutex<Option<RedisConnection>>,
    /// The database's residue class, read from the core's `residue_key` on each connect.
    residue: Mutex<Option<(u64, u64)>>,
    /// The replicas an allocation or give back must reach, resolved on the first connect.
    wait: Mutex<Option<ReplicaWait>>,
    described: String,
    settings: StoreOptions,
}

#[cfg(feature = "redis")]
impl RedisStore {
    /// The store of `url`: `redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB]`,
    /// `redis[s]+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]…]/SERVICE[/DB]` (the
    /// primary the sentinels name, asked again after every failure) or
    /// `redis[s]+cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]…]`, with `replicas=N`
    /// (the replicas an allocation must reach; by default resolved from the server) and, for
    /// TLS, `ca=PATH` (the PEM file of the CA to trust instead of the system's). Nothing is
    /// connected yet: the first call connects.
    pub fn new(url: &str, options: &StoreOptions) -> crate::Result<RedisStore> {
        let described = crate::redact(url);
        let source = RedisSource::parse(url)?;
        Ok(RedisStore::with_source(source, described, options))
    }

    /// The store on the server of a client configured by the caller (its address,
    /// database, credentials and TLS); connections are made with
    /// `get_connection_with_timeout`, and every read and write is bounded by
    /// `options.timeout_ms`.
    pub fn from_client(client: redis::Client, options: &StoreOptions) -> RedisStore {
        let source = RedisSource::Client(client);
        let described = format!("redis://{}", source.target());
        RedisStore::with_source(source, described, options)
    }

    fn with_source(source: RedisSource, described: String, options: &StoreOptions) -> RedisStore {
        RedisStore {
            source,
            timeout: options.timeout(),
            connection: Mutex::new(None),
            residue: Mutex::new(None),
            wait: Mutex::new(None),
            described,
            settings: *options,
        }
    }

    fn command(&self, parts: &[&[u8]]) -> Result<Value, String> {
        self.run(|conn| conn.command(parts))
    }

    /// On the connection (opened, with the residue class read, when there is none): `call`;
    /// the connection is dropped after an I/O or protocol failure.
    fn run(
        &self,
        call: impl FnOnce(&mut RedisConnection) -> Result<RedisReply, String>,
    ) -> Result<Value, String> {
        self.run_waiting(|conn, _| call(conn))
    }

    /// [`run`](RedisStore::run) with the replica wait, which the first connect resolves.
    fn run_waiting(
        &self,
        call: impl FnOnce(&mut RedisConnection, ReplicaWait) -> Result<RedisReply, String>,
    ) -> Result<Value, String> {
        let mut guard = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let mut conn = RedisConnection::open(&self.source, self.timeout)?;
            let class = conn
                .command(&[b"GET", redis_steps::residue_key().as_bytes()])
                .and_then(|r| r.into_value())?;
            *lock(&self.residue) = redis_steps::residue_of(class)?;
            *guard = Some(conn);
        }
        let conn = guard.as_mut().expect("opened above");
        let wait = *lock(&self.wait)
            .get_or_insert_with(|| conn.resolve_wait(self.source.replicas(), self.timeout));
        match call(conn, wait) {
            Ok(reply) => reply.into_value(),
            Err(e) => {
                *guard = None;
                Err(e)
            }
        }
    }

    /// The script `text` as a write IDs are issued from: `WAIT` after it, and too few
    /// replicas the core's error for `what`.
    fn eval_replicated(
        &self,
        what: &str,
        text: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<Value, String> {
        let mut short = None;
        let value = self.run_waiting(|c, wait| {
            let (reply, acked) = c.eval_waiting(text, keys, args, Some(wait))?;
            // No count when the script was refused: its error reply is the answer.
            if let Some(acked) = acked {
                short = wait.check(what, acked).err();
            }
            Ok(reply)
        })?;
        match short {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
}

/// The Redis store's protocol steps, shared by the blocking [`RedisStore`] and the async
/// one (`crate::tokio`): keys, scripts and how their replies read.
#[cfg(feature = "redis")]
pub(crate) mod redis_steps {
    use super::*;

    /// The key of `tag`'s `max_id`.
    pub(crate) fn key(tag: &str) -> String {
        redis_key(tag)
    }

    /// The key of the database's residue class (`DELTA:REMAINDER`, Tinyid's).
    pub(crate) fn residue_key() -> String {
        core_statement("redis", "residue_key")
    }

    /// The residue class a `GET` of [`residue_key`] answered.
    pub(crate) fn residue_of(class: Value) -> Result<Option<(u64, u64)>, String> {
        Ok(match class {
            Value::Str(class) => Some(
                class
                    .split_once(':')
                    .and_then(|(d, r)| Some((d.parse().ok()?, r.parse().ok()?)))
                    .ok_or_else(|| {
                        format!("{} is {class:?}, not DELTA:REMAINDER", residue_key())
                    })?,
            ),
            _ => None,
        })
    }

    /// The core's allocation script (KEYS: the tag's key; ARGV: the step).
    pub(crate) fn allocate_script() -> String {
        core_statement("redis", "allocate")
    }

    /// The core's give-back script (KEYS: the tag's key and the marker; ARGV: the
    /// expected and the new `max_id`).
    pub(crate) fn give_back_script() -> String {
        core_statement("redis", "give_back")
    }

    /// The marker key of the give back under `token`.
    pub(crate) fn give_back_marker(key: &str, token: &str) -> String {
        segflake::segment::statements::redis_give_back_marker(key, token)
    }

    /// The allocation script refused: the tag has no key.
    pub(crate) fn unknown_tag(reply: &Result<Value, String>) -> bool {
        matches!(reply, Err(e) if e.contains("NOTAG"))
    }

    /// The allocation an allocation script's reply (or failure) makes.
    pub(crate) fn allocation(
        reply: Result<Value, String>,
        step: u64,
        residue: Option<(u64, u64)>,
    ) -> Result<Allocation, StoreFailure> {
        match reply {
            Ok(v) => {
                let a = Allocation::new(redis_int(&v, "max_id")?, step);
                Ok(match residue {
                    Some((delta, remainder)) => a.with_residue(delta, remainder),
                    None => a,
                })
            }
            Err(e) if e.contains("NOTAG") => Err(StoreFailure::UnknownTag),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the give-back script lowered `max_id`.
    pub(crate) fn given_back(reply: &Value) -> Result<bool, String> {
        Ok(redis_int(reply, "the give-back answer")? == 1)
    }

    /// Whether `EXISTS` found the key.
    pub(crate) fn exists(reply: &Value) -> Result<bool, String> {
        Ok(redis_int(reply, "EXISTS")? == 1)
    }
}

#[cfg(feature = "redis")]
fn redis_int(v: &Value, what: &str) -> Result<u64, String> {
    match v {
        Value::Int(i) => u64::try_from(*i).map_err(|_| format!("Redis returned {what} {i}")),
        Value::Str(s) => s
            .parse()
            .map_err(|_| format!("Redis returned {what} {s:?}, not a number")),
        other => Err(format!("Redis returned {what} {}", other.to_json())),
    }
}

#[cfg(feature = "redis")]
impl SegmentStore for RedisStore {
    fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        self.allocate_with(tag, Some(step))
    }

    fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> Result<bool, StoreFailure> {
        self.give_back_as(tag, expected_max_id, max_id, &give_back_token()?)
    }
}

#[cfg(feature = "redis")]
impl TagStore for RedisStore {
    /// Redis keeps only `max_id` per tag: no row step to report or use.
    fn allocate_with(&self, tag: &str, step: Option<u64>) -> Result<Allocation, StoreFailure> {
        let key = redis_steps::key(tag);
        let step = step.unwrap_or(self.settings.default_step);
        let step_text = step.to_string();
        let script = redis_steps::allocate_script();
        let eval = || {
            self.eval_replicated(
                "the allocation",
                &script,
                &[key.as_bytes()],
                &[step_text.as_bytes()],
            )
        };
        let mut reply = eval();
        if redis_steps::unknown_tag(&reply) && self.settings.create_missing_step.is_some() {
            self.command(&[b"SET", key.as_bytes(), b"1", b"NX"])?;
            reply = eval();
        }
        let residue = *lock(&self.residue);
        redis_steps::allocation(reply, step, residue)
    }

    fn has_tag(&self, tag: &str) -> Result<bool, String> {
        let key = redis_steps::key(tag);
        redis_steps::exists(&self.command(&[b"EXISTS", key.as_bytes()])?)
    }

    fn records(&self) -> Result<Vec<TagRecord>, String> {
        let prefix = redis_key("");
        let pattern = format!("{prefix}*");
        let mut cursor = "0".to_string();
        let mut records = Vec::new();
        loop {
            let reply = self.command(&[
                b"SCAN",
                cursor.as_bytes(),
                b"MATCH",
                pattern.as_bytes(),
                b"COUNT",
                b"1000",
            ])?;
            let Value::List(parts) = reply else {
                return Err("SCAN returned no list".into());
            };
            let (Some(Value::Str(next)), Some(Value::List(keys))) = (parts.first(), parts.get(1))
            else {
                return Err("SCAN returned an unexpected reply".into());
            };
            // One MGET per SCAN batch (not a GET per key: a round trip each).
            let keys: Vec<&String> = keys
                .iter()
                .filter_map(|k| match k {
                    Value::Str(k) => Some(k),
                    _ => None,
                })
                .collect();
            let mut mget: Vec<&[u8]> = vec![b"MGET"];
            mget.extend(keys.iter().map(|k| k.as_bytes()));
            let values = if keys.is_empty() {
                Vec::new()
            } else {
                match self.command(&mget)? {
                    Value::List(values) if values.len() == keys.len() => values,
                    other => return Err(format!("MGET returned {}", other.to_json())),
                }
            };
            for (key, value) in keys.into_iter().zip(values) {
                if value == Value::Null {
                    continue;
                }
                records.push(TagRecord {
                    tag: key[prefix.len()..].to_string(),
                    max_id: redis_int(&value, "max_id")?,
                    step: 0,
                    updated_ms: 0,
                });
            }
            cursor = next.clone();
            if cursor == "0" {
                break;
            }
        }
        records.sort_by(|a, b| a.tag.cmp(&b.tag));
        Ok(records)
    }

    fn describe(&self) -> &str {
        &self.described
    }

    /// The core's give-back script, with the marker key of `token`.
    fn give_back_as(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
        token: &str,
    ) -> Result<bool, StoreFailure> {
        if max_id >= expected_max_id {
            return Ok(false);
        }
        let key = redis_steps::key(tag);
        let marker = redis_steps::give_back_marker(&key, token);
        let script = redis_steps::give_back_script();
        let (expected, max_id) = (expected_max_id.to_string(), max_id.to_string());
        let reply = self.eval_replicated(
            "the give back",
            &script,
            &[key.as_bytes(), marker.as_bytes()],
            &[expected.as_bytes(), max_id.as_bytes()],
        )?;
        Ok(redis_steps::given_back(&reply)?)
    }
}
