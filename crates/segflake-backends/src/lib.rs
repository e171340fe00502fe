//! The stores, registries and counters behind segflake's generators, built from the same
//! URLs every segflake binding and the `segflake` command take.
//!
//! The core crate, `segflake`, decides every protocol (the SQL statements, the Redis
//! scripts, the ZooKeeper and etcd conversations) and defines the traits its generators
//! call: [`SegmentStore`](segflake::SegmentStore) for Leaf-style segments and
//! [`Registry`] for worker-ID leases. This crate carries those
//! protocols to real servers:
//!
//! | URL | [`store`] | [`registry`] | [`counter`] | feature |
//! |---|---|---|---|---|
//! | `file:PATH` | [`FileTagStore`] | | | always |
//! | `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` (`postgresql://`, libpq's `key=value` words) | [`PostgresStore`] | [`PostgresRegistry`] | | `postgres` |
//! | `mysql://USER[:PASSWORD]@HOST[:PORT]/DB` | [`MySqlStore`] | [`MySqlRegistry`] | | `mysql` |
//! | `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`, `redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]…]/SERVICE[/DB]`, `redis+cluster://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]…]`, each with `?replicas=N` | [`RedisStore`] | [`RedisRegistry`] | [`RedisCounter`] | `redis` |
//! | `zk://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N]` | | [`ZooKeeperRegistry`] | | `zookeeper` |
//! | `etcd://HOST:PORT[,HOST:PORT][/PREFIX]` | | [`EtcdRegistry`] | | `etcd` |
//!
//! TLS is the `rustls` feature (rustls with the ring provider: no OpenSSL, no C toolchain
//! beyond `cc`), for every backend enabled beside it: PostgreSQL's `sslmode=require`,
//! `verify-ca` or `verify-full` with `sslrootcert=PATH`; MySQL's `ssl-mode=REQUIRED`,
//! `VERIFY_CA` or `VERIFY_IDENTITY` with `ssl-ca=PATH`; `rediss://…[?ca=PATH]`;
//! `zk+tls://…[&ca=PATH]` and `etcd+tls://…[?ca=PATH]` (without `ca`, the system's
//! certificate authorities). A URL that asks for TLS never falls back to plaintext.
//!
//! No feature is on by default, so a build carries only the clients it names:
//!
//! ```toml
//! [dependencies]
//! segflake-backends = { version = "0.1", features = ["postgres", "redis", "rustls"] }
//! ```
//!
//! A URL whose backend is left out of the build is refused with
//! [`Error::FeatureDisabled`], which names the feature to enable.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use segflake::{SegmentGenerator, SegmentOptions};
//! use segflake_backends::StoreOptions;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut options = StoreOptions::default();
//! options.timeout_ms = 2_000;
//! let store = segflake_backends::store("postgres://leaf:secret@db/leaf", &options)?;
//! let generator = SegmentGenerator::new(store, SegmentOptions::default())?;
//! let id = generator.next_id("order")?;
//! # let _ = id; Ok(()) }
//! ```
//!
//! Every store, registry and counter is a blocking client, as the core's traits are: the
//! generators call them from their own background threads. They may also be called, and
//! dropped, on a thread that runs a tokio runtime: the PostgreSQL, ZooKeeper and etcd
//! adapters drive their async clients on a runtime of their own, move a call made from
//! async code to a thread of its own, and shut their runtime down without blocking. Every
//! call ends within the timeout of its options, also on a connection that died silently.
//!
//! Each adapter keeps one connection, opened on first use (construction only parses and
//! checks the URL) and dropped after any error, so the next call reconnects.
//!
//! Clients configured by the caller are taken where that is cheap:
//! [`PostgresStore::from_config`] (a `tokio_postgres::Config`, and
//! `from_config_tls` with a `rustls::ClientConfig`), [`MySqlStore::from_opts`] (a
//! `mysql::Opts`), [`RedisStore::from_client`] (a `redis::Client`), and the same on the
//! registries and [`RedisCounter`].
//!
//! # Async services (the `tokio` feature)
//!
//! For [segflake-tokio](https://docs.rs/segflake-tokio)'s drivers, the module
//! `segflake_backends::tokio` has async-native adapters that implement its
//! `AsyncSegmentStore`, `AsyncRegistry` and `AsyncSerialCounter` with the same protocols
//! (the same code for each step): PostgreSQL and Redis on their async clients, ZooKeeper
//! and etcd on the caller's runtime (no runtime of their own), MySQL/MariaDB and `file:`
//! on tokio's blocking pool (`segflake_tokio::Blocking`: the `mysql` client is blocking).
//! `tokio::store`, `tokio::registry` and `tokio::counter` build them from the same URLs;
//! PostgreSQL also runs on a caller's pool (`tokio::PostgresPool`; a `deadpool_postgres::Pool`
//! with the `deadpool-postgres` feature), Redis on a caller's `redis::Client` or
//! `ConnectionManager`, etcd on a caller's `etcd_client::Client`.
//!
//! ```no_run
//! # #[cfg(all(feature = "tokio", feature = "postgres"))]
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use segflake::SegmentOptions;
//! use segflake_backends::StoreOptions;
//! use segflake_tokio::SegmentGenerator;
//!
//! let store = segflake_backends::tokio::store("postgres://leaf@db/leaf", &StoreOptions::default())?;
//! let generator = SegmentGenerator::new(store, SegmentOptions::default())?;
//! let id = generator.next_id("order").await?;
//! generator.close().await; // unused IDs go back to the table
//! # let _ = id; Ok(()) }
//! # fn main() {}
//! ```

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// Helpers shared by several backends go unused in builds that leave some of them out.
#![cfg_attr(
    not(all(
        feature = "postgres",
        feature = "mysql",
        feature = "redis",
        feature = "zookeeper",
        feature = "etcd",
        feature = "rustls"
    )),
    allow(dead_code, unused_imports, unused_variables, unreachable_code)
)]

use std::sync::Arc;
use std::time::Duration;

use segflake::{Registry, SerialGenerator};

mod error;
#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "postgres")]
mod pg;
#[cfg(feature = "redis")]
mod redis;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod registry;
#[cfg(any(feature = "postgres", feature = "zookeeper", feature = "etcd"))]
mod rt;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod sql;
mod stores;
mod tls;
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub mod tokio;
#[cfg(feature = "zookeeper")]
mod zookeeper;

pub use error::{Error, Result};
#[cfg(feature = "etcd")]
pub use etcd::EtcdRegistry;
#[cfg(feature = "redis")]
pub use redis::{RedisCounter, RedisRegistry};
#[cfg(feature = "mysql")]
pub use registry::MySqlRegistry;
#[cfg(feature = "postgres")]
pub use registry::PostgresRegistry;
#[cfg(feature = "mysql")]
pub use stores::MySqlStore;
#[cfg(feature = "postgres")]
pub use stores::PostgresStore;
#[cfg(feature = "redis")]
pub use stores::RedisStore;
pub use stores::{FileTagStore, TagStore};
#[cfg(feature = "zookeeper")]
pub use zookeeper::ZooKeeperRegistry;

/// The URLs [`store`] takes, for messages and help.
pub const STORE_URLS: &str = "file:PATH, postgres://USER[:PASSWORD]@HOST[:PORT]/DB (or \
                              postgresql://), mysql://USER[:PASSWORD]@HOST[:PORT]/DB, \
                              redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (or rediss://), \
                              redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB], \
                              redis+cluster://HOST[:PORT][,HOST[:PORT]...]";

/// The URLs [`registry`] takes, for messages and help.
pub const REGISTRY_URLS: &str = "redis://HOST[:PORT][/DB] (rediss:// for TLS), \
     redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB], \
     redis+cluster://HOST[:PORT][,HOST[:PORT]...], \
     postgres://USER[:PASSWORD]@HOST[:PORT]/DB, mysql://USER[:PASSWORD]@HOST[:PORT]/DB, \
     zk://HOST:PORT[,HOST:PORT]/ROOT, etcd://HOST:PORT[,HOST:PORT][/PREFIX] (zk+tls://…, \
     etcd+tls://…[?ca=PATH] for TLS)";

/// The URLs [`counter`] takes, for messages and help.
pub const COUNTER_URLS: &str = "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], \
     rediss://[[USER]:PASSWORD@]HOST[:PORT][/DB][?ca=PATH], \
     redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/SERVICE[/DB] or \
     redis+cluster://HOST[:PORT][,HOST[:PORT]...]";

/// How a store is built: its timeout, and how it treats a tag's own step and tags it has
/// no row for. Build it from [`Default`] and set the fields you need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreOptions {
    /// Every call's deadline (connect, each statement or command), in milliseconds
    /// (default the core's `DEFAULT_STORE_TIMEOUT_MS`, 10 s).
    pub timeout_ms: u64,
    /// Where the `file:` store starts a new tag (default 1).
    pub initial_max_id: u64,
    /// The first allocation of a tag after start uses its row's step, and answers report
    /// it as the tag's step (Leaf; default true). SQL stores only.
    pub use_row_step: bool,
    /// Create a tag without a row on first use (`max_id` 1, this step) instead of
    /// answering `StoreFailure::UnknownTag` (default `None`).
    pub create_missing_step: Option<u64>,
    /// The step of [`TagStore::allocate_with`]`(tag, None)` on a store that keeps no step
    /// per tag (Redis; default the core's `DEFAULT_STEP`).
    pub default_step: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            timeout_ms: segflake::segment::DEFAULT_STORE_TIMEOUT_MS,
            initial_max_id: 1,
            use_row_step: true,
            create_missing_step: None,
            default_step: segflake::segment::DEFAULT_STEP,
        }
    }
}

impl StoreOptions {
    fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.max(1))
    }
}

/// A function handed the warnings of a registry (a Redis server whose settings may lose
/// the leases' marks).
pub type WarningHandler = Arc<dyn Fn(&str) + Send + Sync>;

/// How a registry is built. Build it from [`Default`] and set the fields you need.
#[derive(Clone)]
#[non_exhaustive]
pub struct RegistryOptions {
    /// Every call's deadline, in milliseconds (default 3 s, the core's
    /// `LeaseOptions::registry_timeout_ms`; pass the same value).
    pub timeout_ms: u64,
    /// The ZooKeeper registry's node address, `IP:PORT` (Leaf's), instead of the URL's
    /// `identity` or this host's outbound address.
    pub identity: Option<String>,
    /// Where warnings go (default: nowhere).
    pub on_warning: Option<WarningHandler>,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        RegistryOptions {
            timeout_ms: segflake::LeaseOptions::default().registry_timeout_ms,
            identity: None,
            on_warning: None,
        }
    }
}

impl std::fmt::Debug for RegistryOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryOptions")
            .field("timeout_ms", &self.timeout_ms)
            .field("identity", &self.identity)
            .field("on_warning", &self.on_warning.as_ref().map(|_| "Fn(&str)"))
            .finish()
    }
}

impl RegistryOptions {
    fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.max(1))
    }

    fn warn(&self, warning: &str) {
        if let Some(handler) = &self.on_warning {
            handler(warning);
        }
    }
}

/// How a serial counter is built. Build it from [`Default`] and set the fields you need.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CounterOptions {
    /// Every call's deadline, in milliseconds (default 5 s, the core's
    /// `SerialOptions::counter_timeout_ms`).
    pub timeout_ms: u64,
    /// The keys' prefix: keys are `PREFIX:serial:<yyMMddHHmmss><worker digits>` (default
    /// the core's `serial::counter::DEFAULT_PREFIX`, `segflake`).
    pub prefix: String,
}

impl Default for CounterOptions {
    fn default() -> Self {
        CounterOptions {
            timeout_ms: segflake::SerialOptions::default().counter_timeout_ms,
            prefix: segflake::serial::counter::DEFAULT_PREFIX.to_string(),
        }
    }
}

impl CounterOptions {
    fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.max(1))
    }
}

/// A counter shared by the hosts that print serial numbers with the same digits, offset
/// and window, so that none prints the same serial twice.
pub trait SerialCounter: Send + Sync {
    /// The sequence number the counter hands out for `unix_seconds`, as
    /// [`SerialGenerator::counter_sequence`] reads the counter's reply.
    fn sequence(&self, generator: &SerialGenerator, unix_seconds: u64) -> segflake::Result<u64>;

    /// `generator`'s next serial, its sequence from this counter.
    fn next(&self, generator: &SerialGenerator) -> segflake::Result<u64> {
        generator.next_with(|second| self.sequence(generator, second))
    }
}

/// The scheme of `url` (before `://`), or `file` for `file:PATH`.
fn scheme(url: &str) -> &str {
    if url.starts_with("file:") {
        return "file";
    }
    url.split_once("://").map_or("", |(s, _)| s)
}

/// The feature a scheme needs, for [`Error::FeatureDisabled`].
fn feature_of(scheme: &str) -> Option<&'static str> {
    Some(match scheme {
        "postgres" | "postgresql" => "postgres",
        "mysql" => "mysql",
        "redis" | "rediss" | "redis+sentinel" | "rediss+sentinel" | "redis+cluster"
        | "rediss+cluster" => "redis",
        "zk" | "zk+tls" => "zookeeper",
        "etcd" | "etcd+tls" => "etcd",
        _ => return None,
    })
}

fn disabled(url: &str, shown: String, allowed: &'static str) -> Error {
    match feature_of(scheme(url)) {
        Some(feature) => Error::FeatureDisabled {
            url: shown,
            feature,
        },
        None => Error::UnsupportedUrl {
            url: shown,
            allowed,
        },
    }
}

/// The segment store `url` names (see the [crate docs](crate) for the URLs):
/// `file:PATH`, `postgres://…`, `mysql://…` or `redis://…`. Nothing is connected yet: the
/// first call connects (a `file:` store is opened now).
pub fn store(url: &str, options: &StoreOptions) -> Result<Arc<dyn TagStore>> {
    let shown = redact(url);
    if let Some(path) = url.strip_prefix("file:") {
        if path.is_empty() {
            return Err(Error::invalid(&shown, "file: needs a path: file:PATH"));
        }
        return Ok(Arc::new(FileTagStore::open(path, options.initial_max_id)?));
    }
    Ok(match scheme(url) {
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => Arc::new(PostgresStore::new(url, options)?),
        #[cfg(feature = "mysql")]
        "mysql" => Arc::new(MySqlStore::new(url, options)?),
        #[cfg(feature = "redis")]
        "redis" | "rediss" | "redis+sentinel" | "rediss+sentinel" | "redis+cluster"
        | "rediss+cluster" => Arc::new(RedisStore::new(url, options)?),
        "zk" | "zk+tls" | "etcd" | "etcd+tls" => {
            return Err(Error::UnsupportedUrl {
                url: shown,
                allowed: STORE_URLS,
            })
        }
        _ => return Err(disabled(url, shown, STORE_URLS)),
    })
}

/// The lease registry `url` names (see the [crate docs](crate) for the URLs):
/// `redis://…`, `postgres://…`, `mysql://…`, `zk://…` or `etcd://…` (`rediss://`,
/// `zk+tls://`, `etcd+tls://` for TLS). Nothing is connected yet, except that a Redis
/// registry asks the server for its persistence settings when it can (a warning goes to
/// `options.on_warning`).
pub fn registry(url: &str, options: &RegistryOptions) -> Result<Arc<dyn Registry>> {
    Ok(match scheme(url) {
        #[cfg(feature = "redis")]
        "redis" | "rediss" | "redis+sentinel" | "rediss+sentinel" | "redis+cluster"
        | "rediss+cluster" => Arc::new(RedisRegistry::new(url, options)?),
        #[cfg(feature = "zookeeper")]
        "zk" | "zk+tls" => Arc::new(ZooKeeperRegistry::new(url, options)?),
        #[cfg(feature = "etcd")]
        "etcd" | "etcd+tls" => Arc::new(EtcdRegistry::new(url, options)?),
        #[cfg(feature = "postgres")]
        "postgres" | "postgresql" => Arc::new(PostgresRegistry::new(url, options)?),
        #[cfg(feature = "mysql")]
        "mysql" => Arc::new(MySqlRegistry::new(url, options)?),
        "file" => {
            return Err(Error::UnsupportedUrl {
                url: redact(url),
                allowed: REGISTRY_URLS,
            })
        }
        _ => return Err(disabled(url, redact(url), REGISTRY_URLS)),
    })
}

/// The serial counter `url` names: `redis://…` or `rediss://…`. Nothing is connected yet.
pub fn counter(url: &str, options: &CounterOptions) -> Result<Arc<dyn SerialCounter>> {
    #[cfg(feature = "redis")]
    {
        // Any other scheme is refused by the URL's parser, which says what it takes.
        Ok(Arc::new(RedisCounter::new(url, options)?))
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

/// `url` with the password between `:` and `@` replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((auth, host)) = rest.rsplit_once('@') else {
        return url.to_string();
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_string(),
    }
}

/// An error and its sources, `outer: inner: …` (the PostgreSQL client puts the server's
/// message and the I/O error in the sources).
#[cfg(feature = "postgres")]
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// A refusal of the SQL settings' parsers as an [`Error`] about `shown`.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn config_error(shown: &str, reason: String) -> Error {
    if reason == tls::NEEDS_RUSTLS {
        return Error::FeatureDisabled {
            url: shown.to_string(),
            feature: "rustls",
        };
    }
    Error::invalid(shown, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_and_unknown_schemes_refused_naming_the_allowed_ones() {
        assert_eq!(
            redact("postgres://leaf:s3cret@db:5432/ids"),
            "postgres://leaf:***@db:5432/ids"
        );
        assert_eq!(redact("redis://db:6379/0"), "redis://db:6379/0");
        let o = StoreOptions::default();
        let e = store("sqlite:ids.db", &o).err().unwrap();
        assert!(matches!(e, Error::UnsupportedUrl { .. }), "{e}");
        assert!(e.to_string().contains("allowed: file:PATH"), "{e}");
        let e = store("file:", &o).err().unwrap();
        assert!(e.to_string().contains("needs a path"), "{e}");
        let e = store("zk://h:2181/x", &o).err().unwrap();
        assert!(matches!(e, Error::UnsupportedUrl { .. }), "{e}");
        let e = registry("file:ids.txt", &RegistryOptions::default())
            .err()
            .unwrap();
        assert!(matches!(e, Error::UnsupportedUrl { .. }), "{e}");
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_bad_url_is_refused_without_its_password() {
        let e = store("postgres://a:pw@h:notaport/db", &StoreOptions::default())
            .err()
            .unwrap();
        assert!(matches!(e, Error::InvalidUrl { .. }), "{e}");
        assert!(!e.to_string().contains("pw"), "{e}");
    }

    #[cfg(all(feature = "postgres", feature = "redis"))]
    #[test]
    fn a_database_that_is_down_is_reported_with_the_underlying_error() {
        // Nothing listens on port 9 of the loopback: the connection is refused at once.
        let o = StoreOptions {
            timeout_ms: 2000,
            ..StoreOptions::default()
        };
        let store_ = store("postgres://leaf@127.0.0.1:9/leaf", &o).unwrap();
        let e = store_.allocate("order", 10).unwrap_err().to_string();
        assert!(e.starts_with("cannot connect to PostgreSQL: "), "{e}");
        assert!(
            e.to_lowercase().contains("refused"),
            "the cause is missing: {e}"
        );
        let store_ = store("redis://127.0.0.1:9", &o).unwrap();
        let e = store_.allocate("order", 10).unwrap_err().to_string();
        assert!(e.to_lowercase().contains("refused"), "{e}");
    }

    #[test]
    fn a_scheme_whose_feature_is_off_names_the_feature() {
        let cases = [
            ("postgres://u@h/db", "postgres", cfg!(feature = "postgres")),
            ("mysql://u@h/db", "mysql", cfg!(feature = "mysql")),
            ("redis://h", "redis", cfg!(feature = "redis")),
        ];
        for (url, feature, on) in cases {
            let got = store(url, &StoreOptions::default());
            match got {
                Ok(_) => assert!(on, "{url} was built without the {feature} feature"),
                Err(Error::FeatureDisabled { feature: f, .. }) => {
                    assert!(!on, "{url}: refused with the feature on");
                    assert_eq!(f, feature);
                }
                Err(e) => panic!("{url}: {e}"),
            }
        }
        let registries = [
            (
                "zk://h:2181/snowflake/x",
                "zookeeper",
                cfg!(feature = "zookeeper"),
            ),
            ("etcd://h:2379", "etcd", cfg!(feature = "etcd")),
        ];
        for (url, feature, on) in registries {
            match registry(url, &RegistryOptions::default()) {
                Ok(_) => assert!(on, "{url} was built without the {feature} feature"),
                Err(Error::FeatureDisabled { feature: f, .. }) => {
                    assert!(!on, "{url}: refused with the feature on");
                    assert_eq!(f, feature);
                }
                Err(e) => panic!("{url}: {e}"),
            }
        }
    }

    #[cfg(all(feature = "postgres", not(feature = "rustls")))]
    #[test]
    fn tls_without_the_rustls_feature_names_it() {
        let e = store(
            "postgres://u@h/db?sslmode=require",
            &StoreOptions::default(),
        )
        .err()
        .unwrap();
        assert!(
            matches!(
                e,
                Error::FeatureDisabled {
                    feature: "rustls",
                    ..
                }
            ),
            "{e}"
        );
    }
}
