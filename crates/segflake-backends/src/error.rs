//! The errors of building a store, registry or counter from a URL.
//!
//! Only construction fails with an [`Error`]: once built, a store answers with the core's
//! [`StoreFailure`](segflake::StoreFailure) and a registry or counter with a message, as
//! the core's traits say.

/// Why a store, registry or counter could not be built. URLs in these errors have their
/// password replaced by `***` ([`redact`](crate::redact)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No backend takes the URL's scheme; `allowed` lists the URLs that are taken.
    #[error("{url:?} is not supported; allowed: {allowed}")]
    UnsupportedUrl {
        /// The URL.
        url: String,
        /// The URLs this function takes, for the message.
        allowed: &'static str,
    },
    /// The URL's backend (or TLS, which it asks for) is left out of this build: enable the
    /// cargo feature `feature` of `segflake-backends`.
    #[error(
        "{url:?} needs the `{feature}` feature of segflake-backends, which this build leaves out"
    )]
    FeatureDisabled {
        /// The URL.
        url: String,
        /// The cargo feature to enable: `postgres`, `mysql`, `redis`, `zookeeper`, `etcd`
        /// or `rustls`.
        feature: &'static str,
    },
    /// The URL is malformed, or one of its parameters is not taken.
    #[error("{url:?}: {reason}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// What is wrong with it, and what the backend takes.
        reason: String,
    },
    /// The URL asks for TLS that cannot be set up: the CA file it names cannot be read or
    /// holds no certificate, or the local end of the TLS connection cannot be made.
    #[error("{url:?}: {reason}")]
    Tls {
        /// The URL.
        url: String,
        /// What failed.
        reason: String,
    },
    /// The ZooKeeper registry's node identity is not `IP:PORT`.
    #[error("{0}")]
    InvalidIdentity(String),
    /// The client's runtime (its thread) could not be started.
    #[error("cannot start the {client} client: {source}")]
    Start {
        /// The client: `PostgreSQL`, `ZooKeeper` or `etcd`.
        client: &'static str,
        /// The operating system's refusal.
        source: std::io::Error,
    },
    /// The core refused: the `file:` store's file cannot be opened or read.
    #[error(transparent)]
    Core(#[from] segflake::Error),
}

/// A result with an [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// [`Error::InvalidUrl`] of `url` (shown as given).
    pub(crate) fn invalid(url: &str, reason: impl Into<String>) -> Error {
        Error::InvalidUrl {
            url: url.to_string(),
            reason: reason.into(),
        }
    }

    /// [`Error::InvalidUrl`] from a message of the core's URL parsers, which start with
    /// the URL quoted (`"zk://…": why; allowed: …`): the URL and the rest apart.
    #[cfg(any(feature = "zookeeper", feature = "etcd"))]
    pub(crate) fn invalid_quoted(url: &str, message: String) -> Error {
        let quoted = format!("{url:?}: ");
        match message.strip_prefix(&quoted) {
            Some(reason) => Error::invalid(url, reason),
            None => Error::invalid(url, message),
        }
    }

    /// [`Error::Tls`] of `url`.
    #[cfg(any(
        feature = "postgres",
        feature = "mysql",
        feature = "redis",
        feature = "zookeeper",
        feature = "etcd"
    ))]
    pub(crate) fn tls(url: &str, reason: impl Into<String>) -> Error {
        Error::Tls {
            url: url.to_string(),
            reason: reason.into(),
        }
    }
}
