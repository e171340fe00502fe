//! Async-native stores, registries and counters for [`segflake_tokio`]'s drivers (the
//! `tokio` feature): the same protocols as the blocking adapters of this crate (the core's
//! statements, scripts and conversations, and the same code for each step), on async
//! clients that run on the caller's runtime.
//!
//! | backend | store | registry | counter | how |
//! |---|---|---|---|---|
//! | PostgreSQL (`postgres`) | [`PostgresStore`] | [`PostgresRegistry`] | | tokio-postgres, async; one connection of its own, or a caller's pool ([`PostgresPool`], `deadpool_postgres::Pool` with the `deadpool-postgres` feature) |
//! | Redis (`redis`) | [`RedisStore`] | [`RedisRegistry`] | [`RedisCounter`] | the `redis` crate's multiplexed connection, or a caller's `ConnectionManager` |
//! | ZooKeeper (`zookeeper`) | | [`ZooKeeperRegistry`] | | `zookeeper-client`, async |
//! | etcd (`etcd`) | | [`EtcdRegistry`] | | `etcd-client`, async |
//! | MySQL/MariaDB (`mysql`) | [`MySqlStore`] | [`MySqlRegistry`] | | the blocking `mysql` client on tokio's blocking pool ([`Blocking`]) |
//! | `file:` | [`FileStore`] | | | the core's `FileStore` on tokio's blocking pool |
//!
//! Every call is bounded by the timeout of its options (`StoreOptions::timeout_ms`,
//! `RegistryOptions::timeout_ms`, `CounterOptions::timeout_ms`), besides the driver's own
//! deadline; a connection that failed, or whose call outlived the timeout, is dropped and
//! the next call connects again, so a restarted server is picked up without building the
//! adapter again. Nothing here owns a runtime: build them inside the runtime that runs the
//! generators, and drop them anywhere.
//!
//! [`store`], [`registry`] and [`counter`] build one from a URL, as the blocking
//! [`crate::store`], [`crate::registry`] and [`crate::counter`] do, into [`AnyStore`],
//! [`AnyRegistry`] and [`AnyCounter`], which the drivers take as they are:
//!
//! ```no_run
//! use segflake::{LeaseOptions, SegmentOptions, SnowflakeOptions};
//! use segflake_backends::{RegistryOptions, StoreOptions};
//! use segflake_tokio::{LeasedSnowflake, SegmentGenerator};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = segflake_backends::tokio::store("postgres://leaf@db/leaf", &StoreOptions::default())?;
//! let segments = SegmentGenerator::new(store, SegmentOptions::default())?;
//! let order_id = segments.next_id("order").await?;
//!
//! let registry =
//!     segflake_backends::tokio::registry("redis://cache:6379", &RegistryOptions::default()).await?;
//! let layout = segflake::Layout::preset(segflake::Preset::Twitter)?;
//! let snowflake = LeasedSnowflake::start(
//!     layout,
//!     SnowflakeOptions::new(0), // the worker ID comes from the lease
//!     LeaseOptions::default(),
//!     registry,
//!     None,
//! )
//! .await?;
//! let event_id = snowflake.next_id().await?;
//! # let _ = (order_id, event_id);
//! segments.close().await; // unused IDs go back to PostgreSQL
//! snowflake.close().await; // the worker ID is released
//! # Ok(()) }
//! ```

#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "zookeeper")]
mod zookeeper;

use segflake::{Allocation, RegistryCall, StoreFailure, Value};
pub use segflake_tokio::Blocking;
use segflake_tokio::{AsyncRegistry, AsyncSegmentStore, AsyncSerialCounter, CounterRequest};

use crate::{
    disabled, redact, scheme, CounterOptions, Error, RegistryOptions, Result, StoreOptions,
    REGISTRY_URLS, STORE_URLS,
};

#[cfg(feature = "etcd")]
pub use self::etcd::EtcdRegistry;
#[cfg(feature = "postgres")]
pub use self::postgres::{
    PostgresConnection, PostgresPool, PostgresRegistry, PostgresStore, SingleConnection,
};
#[cfg(feature = "redis")]
pub use self::redis::{RedisCounter, RedisRegistry, RedisStore};
#[cfg(feature = "zookeeper")]
pub use self::zookeeper::ZooKeeperRegistry;

/// The MySQL/MariaDB store on tokio's blocking pool: the blocking
/// [`crate::MySqlStore`] (the `mysql` client has no async form), each call on a thread of
/// the pool, so no runtime thread waits on it. Build it with
/// `Blocking::new(segflake_backends::MySqlStore::new(url, &options)?)`.
#[cfg(feature = "mysql")]
pub type MySqlStore = Blocking<crate::MySqlStore>;

/// The MySQL/MariaDB lease registry on tokio's blocking pool (as [`MySqlStore`]); its
/// calls never overlap. `Blocking::new(segflake_backends::MySqlRegistry::new(url, &o)?)`.
#[cfg(feature = "mysql")]
pub type MySqlRegistry = Blocking<crate::MySqlRegistry>;

/// The `file:PATH` store on tokio's blocking pool (file I/O and `fsync`).
pub type FileStore = Blocking<crate::FileTagStore>;

/// The segment store a URL names ([`store`]), for
/// [`SegmentGenerator::new`](segflake_tokio::SegmentGenerator::new).
// Built once per service and moved into a driver once: the size of a variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
pub enum AnyStore {
    /// `file:PATH`.
    File(FileStore),
    /// `postgres://…`, `postgresql://…`.
    #[cfg(feature = "postgres")]
    Postgres(PostgresStore),
    /// `mysql://…`.
    #[cfg(feature = "mysql")]
    MySql(MySqlStore),
    /// `redis://…`, `rediss://…`.
    #[cfg(feature = "redis")]
    Redis(RedisStore),
}

impl std::fmt::Debug for AnyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self {
            AnyStore::File(_) => "File",
            #[cfg(feature = "postgres")]
            AnyStore::Postgres(_) => "Postgres",
            #[cfg(feature = "mysql")]
            AnyStore::MySql(_) => "MySql",
            #[cfg(feature = "redis")]
            AnyStore::Redis(_) => "Redis",
        };
        f.debug_tuple("AnyStore").field(&kind).finish()
    }
}

/// The segment store `url` names: `file:PATH`, `postgres://…`, `mysql://…` or
/// `redis://…`, as [`crate::store`] takes them. Nothing is connected yet (a `file:` store
/// is opened now); call it inside the runtime that will run the store.
pub fn store(url: &str, options: &StoreOptions) -> Result<AnyStore> {
    if let Some(path) = url.strip_prefix("file:") {
        if path.is_empty() {
            return Err(Error::invalid(
                &redact(url),
                "file: needs a path: file:PATH",
            ));
        }
        let file = crate::FileTagStore::open(path, options.initial_max_id)?;
        return Ok(AnyStore::File(Blocking::new(file)));
    }
    Ok(match scheme(url) {
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => AnyStore::Postgres(PostgresStore::new(url, options)?),
        #[cfg(feature = "mysql")]
        "mysql" => AnyStore::MySql(Blocking::new(crate::MySqlStore::new(url, options)?)),
        #[cfg(feature = "redis")]
        "redis" | "rediss" | "redis+sentinel" | "rediss+sentinel" | "redis+cluster"
        | "rediss+cluster" => AnyStore::Redis(RedisStore::new(url, options)?),
        "zk" | "zk+tls" | "etcd" | "etcd+tls" => {
            return Err(Error::UnsupportedUrl {
                url: redact(url),
                allowed: STORE_URLS,
            })
        }
        _ => return Err(disabled(url, redact(url), STORE_URLS)),
    })
}

macro_rules! each_store {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            AnyStore::File($s) => $e,
            #[cfg(feature = "postgres")]
            AnyStore::Postgres($s) => $e,
            #[cfg(feature = "mysql")]
            AnyStore::MySql($s) => $e,
            #[cfg(feature = "redis")]
            AnyStore::Redis($s) => $e,
        }
    };
}

impl AsyncSegmentStore for AnyStore {
    async fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        each_store!(self, s => s.allocate(tag, step).await)
    }

    async fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> Result<bool, StoreFailure> {
        each_store!(self, s => s.give_back(tag, expected_max_id, max_id).await)
    }
}

/// The lease registry a URL names ([`registry`]), for
/// [`LeasedSnowflake::start`](segflake_tokio::LeasedSnowflake::start).
// Built once per service and moved into a driver once: the size of a variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
pub enum AnyRegistry {
    /// `postgres://…`, `postgresql://…`.
    #[cfg(feature = "postgres")]
    Postgres(PostgresRegistry),
    /// `mysql://…`.
    #[cfg(feature = "mysql")]
    MySql(MySqlRegistry),
    /// `redis://…`, `rediss://…`.
    #[cfg(feature = "redis")]
    Redis(RedisRegistry),
    /// `zk://…`, `zk+tls://…`.
    #[cfg(feature = "zookeeper")]
    ZooKeeper(ZooKeeperRegistry),
    /// `etcd://…`, `etcd+tls://…`.
    #[cfg(feature = "etcd")]
    Etcd(EtcdRegistry),
    /// Never built: keeps the type inhabited-or-not in every build.
    #[doc(hidden)]
    _None(std::convert::Infallible),
}

impl std::fmt::Debug for AnyRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind: &str = match self {
            #[cfg(feature = "postgres")]
            AnyRegistry::Postgres(_) => "Postgres",
            #[cfg(feature = "mysql")]
            AnyRegistry::MySql(_) => "MySql",
            #[cfg(feature = "redis")]
            AnyRegistry::Redis(_) => "Redis",
            #[cfg(feature = "zookeeper")]
            AnyRegistry::ZooKeeper(_) => "ZooKeeper",
            #[cfg(feature = "etcd")]
            AnyRegistry::Etcd(_) => "Etcd",
            AnyRegistry::_None(never) => match *never {},
        };
        f.debug_tuple("AnyRegistry").field(&kind).finish()
    }
}

/// The lease registry `url` names: `redis://…`, `postgres://…`, `mysql://…`, `zk://…` or
/// `etcd://…`, as [`crate::registry`] takes them. Nothing is connected yet, except that a
/// Redis registry asks the server for its persistence settings when it can (a warning goes
/// to `options.on_warning`). Call it inside the runtime that will run the registry.
pub async fn registry(url: &str, options: &RegistryOptions) -> Result<AnyRegistry> {
    Ok(match scheme(url) {
        #[cfg(feature = "redis")]
        "redis" | "rediss" | "redis+sentinel" | "rediss+sentinel" | "redis+cluster"
        | "rediss+cluster" => AnyRegistry::Redis(RedisRegistry::new(url, options).await?),
        #[cfg(feature = "zookeeper")]
        "zk" | "zk+tls" => AnyRegistry::ZooKeeper(ZooKeeperRegistry::new(url, options).await?),
        #[cfg(feature = "etcd")]
        "etcd" | "etcd+tls" => AnyRegistry::Etcd(EtcdRegistry::new(url, options)?),
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => AnyRegistry::Postgres(PostgresRegistry::new(url, options)?),
        #[cfg(feature = "mysql")]
        "mysql" => AnyRegistry::MySql(Blocking::new(crate::MySqlRegistry::new(url, options)?)),
        "file" => {
            return Err(Error::UnsupportedUrl {
                url: redact(url),
                allowed: REGISTRY_URLS,
            })
        }
        _ => return Err(disabled(url, redact(url), REGISTRY_URLS)),
    })
}

impl AsyncRegistry for AnyRegistry {
    async fn call(&self, call: &RegistryCall) -> std::result::Result<Value, String> {
        match self {
            #[cfg(feature = "postgres")]
            AnyRegistry::Postgres(r) => r.call(call).await,
            #[cfg(feature = "mysql")]
            AnyRegistry::MySql(r) => r.call(call).await,
            #[cfg(feature = "redis")]
            AnyRegistry::Redis(r) => r.call(call).await,
            #[cfg(feature = "zookeeper")]
            AnyRegistry::ZooKeeper(r) => r.call(call).await,
            #[cfg(feature = "etcd")]
            AnyRegistry::Etcd(r) => r.call(call).await,
            AnyRegistry::_None(never) => match *never {},
        }
    }
}

/// The serial counter a URL names ([`counter`]), for
/// [`SerialGenerator::new`](segflake_tokio::SerialGenerator::new).
// Built once per service and moved into a driver once: the size of a variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
pub enum AnyCounter {
    /// `redis://…`, `rediss://…`.
    #[cfg(feature = "redis")]
    Redis(RedisCounter),
    /// Never built: keeps the type inhabited-or-not in every build.
    #[doc(hidden)]
    _None(std::convert::Infallible),
}

impl std::fmt::Debug for AnyCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AnyCounter")
    }
}

/// The serial counter `url` names: `redis://…` or `rediss://…`. Nothing is connected yet.
pub fn counter(url: &str, options: &CounterOptions) -> Result<AnyCounter> {
    #[cfg(feature = "redis")]
    {
        Ok(AnyCounter::Redis(RedisCounter::new(url, options)?))
    }
    #[cfg(not(feature = "redis"))]
    {
        let _ = options;
        Err(Error::FeatureDisabled {
            url: redact(url),
            feature: "redis",
        })
    }
}

impl AsyncSerialCounter for AnyCounter {
    async fn count(&self, request: &CounterRequest) -> std::result::Result<Value, String> {
        match self {
            #[cfg(feature = "redis")]
            AnyCounter::Redis(c) => c.count(request).await,
            AnyCounter::_None(never) => {
                let _ = request;
                match *never {}
            }
        }
    }
}
