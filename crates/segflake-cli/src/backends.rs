//! The stores behind `--store URL`, the registries behind `--registry URL` and the counter
//! behind `--counter URL`: built by the `segflake-backends` crate, whose errors become this
//! tool's usage errors, worded as the flags they came from.

use std::sync::Arc;

use segflake::Registry;
use segflake_backends::{
    CounterOptions, Error, RegistryOptions, SerialCounter, StoreOptions, REGISTRY_URLS,
};

use crate::error::CliError;

pub use segflake_backends::{redact, TagStore, STORE_URLS as ALLOWED};

/// How a store treats a tag's own step and tags it has no row for (`--ignore-row-step`,
/// `--create-missing-tags`, `--step`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreSettings {
    /// The first allocation of a tag uses its row's step, and answers report it (Leaf).
    pub use_row_step: bool,
    /// Create a tag without a row on first use (`max_id` 1, this step).
    pub create_missing_step: Option<u64>,
    /// The step of `allocate_with(tag, None)` on a store that keeps no step per tag (Redis).
    pub default_step: u64,
}

impl Default for StoreSettings {
    fn default() -> Self {
        let defaults = StoreOptions::default();
        StoreSettings {
            use_row_step: defaults.use_row_step,
            create_missing_step: defaults.create_missing_step,
            default_step: defaults.default_step,
        }
    }
}

/// Opens the store `url` names; `initial_max_id` is where a file store starts new tags.
pub fn open_store(
    url: &str,
    initial_max_id: u64,
    timeout_ms: u64,
    settings: StoreSettings,
    command: &'static str,
) -> Result<Arc<dyn TagStore>, CliError> {
    let mut options = StoreOptions::default();
    options.timeout_ms = timeout_ms;
    options.initial_max_id = initial_max_id;
    options.use_row_step = settings.use_row_step;
    options.create_missing_step = settings.create_missing_step;
    options.default_step = settings.default_step;
    segflake_backends::store(url, &options).map_err(|e| store_error(e, command))
}

fn store_error(e: Error, command: &'static str) -> CliError {
    match e {
        Error::Core(e) => CliError::Core(e),
        Error::UnsupportedUrl { url, allowed } => CliError::usage_for(
            command,
            format!("--store {url:?} is not supported; allowed: {allowed}"),
        ),
        Error::InvalidUrl { url, reason } | Error::Tls { url, reason } => {
            CliError::usage_for(command, format!("--store {url:?}: {reason}"))
        }
        other => CliError::usage_for(command, format!("--store {other}")),
    }
}

/// The registry for `url`: `redis://` (or `rediss://`), `postgres://` (or
/// `postgresql://`), `mysql://`, `zk://` (with Leaf's node `identity`) or `etcd://`
/// (`zk+tls://`, `etcd+tls://`). Warnings (a Redis server that may lose the marks) are
/// printed to stderr.
pub fn open_registry(
    url: &str,
    timeout_ms: u64,
    identity: Option<&str>,
) -> Result<Arc<dyn Registry>, CliError> {
    let mut options = RegistryOptions::default();
    options.timeout_ms = timeout_ms;
    options.identity = identity.map(str::to_string);
    options.on_warning = Some(Arc::new(|warning: &str| {
        eprintln!("segflake: warning: {warning}");
    }));
    segflake_backends::registry(url, &options).map_err(|e| registry_error(url, e))
}

fn registry_error(url: &str, e: Error) -> CliError {
    let usage = |message: String| CliError::usage_for("next", message);
    let scheme = url.split_once("://").map_or("", |(s, _)| s);
    match e {
        Error::Core(e) => CliError::Core(e),
        Error::UnsupportedUrl { .. } => usage(format!(
            "--registry {url:?} is not supported; allowed: {REGISTRY_URLS}"
        )),
        Error::InvalidUrl { url: shown, reason } | Error::Tls { url: shown, reason } => {
            match scheme {
                // The reason names the URL itself.
                "redis" | "rediss" | "redis+sentinel" | "rediss+sentinel" | "redis+cluster"
                | "rediss+cluster" => usage(format!("--registry: {reason}")),
                // The URL as given (the error's hides its password).
                "postgres" | "postgresql" | "mysql" => {
                    usage(format!("--registry {url:?}: {reason}"))
                }
                // The URL the error is about (without `+tls` and `ca` when the URL's
                // grammar refused it).
                _ => usage(format!("--registry {shown:?}: {reason}")),
            }
        }
        Error::InvalidIdentity(reason) => usage(format!("--identity: {reason}")),
        e @ Error::Start { client: "etcd", .. } => usage(format!("--registry {url:?}: {e}")),
        other => usage(other.to_string()),
    }
}

/// The shared counter of `segflake serial --counter URL`.
pub fn open_counter(
    url: &str,
    timeout_ms: u64,
    prefix: &str,
) -> Result<Arc<dyn SerialCounter>, CliError> {
    let mut options = CounterOptions::default();
    options.timeout_ms = timeout_ms;
    options.prefix = prefix.to_string();
    segflake_backends::counter(url, &options).map_err(|e| {
        let message = match e {
            Error::InvalidUrl { reason, .. } => reason,
            other => other.to_string(),
        };
        CliError::usage_for("serial", format!("--counter: {message}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_refusals_name_the_flag_and_hide_passwords() {
        let open = |url: &str| {
            open_store(url, 1, 100, StoreSettings::default(), "serve")
                .err()
                .expect(url)
                .to_string()
        };
        assert_eq!(
            open("sqlite:ids.db"),
            format!("--store \"sqlite:ids.db\" is not supported; allowed: {ALLOWED}")
        );
        assert_eq!(
            open("file:"),
            "--store \"file:\": file: needs a path: file:PATH"
        );
        let e = open("postgres://a:pw@h:notaport/db");
        assert!(
            e.starts_with("--store \"postgres://a:***@h:notaport/db\": "),
            "{e}"
        );
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
            let e = open_registry(url, 100, None).err().expect(url);
            assert_eq!(e.exit_code(), crate::error::EXIT_USAGE, "{url}: {e}");
            assert!(e.to_string().contains("--registry"), "{url}: {e}");
        }
        for identity in ["10.0.0.1", "10.0.0.1:99999", ":80", "a-b:80"] {
            let e = open_registry("zk://h:2181/snowflake/x", 100, Some(identity))
                .err()
                .expect(identity);
            assert!(e.to_string().starts_with("--identity: "), "{identity}: {e}");
            assert!(e.to_string().contains("IP:PORT"), "{identity}: {e}");
        }
    }

    #[test]
    fn registry_refusals_keep_their_wording() {
        let message = |url: &str| open_registry(url, 100, None).err().expect(url).to_string();
        assert_eq!(
            message("zk:///snowflake/x"),
            "--registry \"zk:///snowflake/x\": no HOST:PORT; allowed: \
             zk://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N]"
        );
        assert_eq!(
            message("etcd+tls://h:2379?tls=false"),
            "--registry \"etcd+tls://h:2379?tls=false\": etcd+tls:// contradicts tls=false"
        );
        assert_eq!(
            message("etcd+tls://nohostport"),
            "--registry \"etcd://nohostport\": every member is HOST:PORT; allowed: \
             etcd://HOST:PORT[,HOST:PORT][/PREFIX]"
        );
        assert!(message("redis://h:x")
            .starts_with("--registry: \"redis://h:x\": port \"x\" of \"h:x\" is not a port"));
        assert!(message("redis+sentinel://h:26379")
            .contains("a Sentinel URL names the monitored primary: /SERVICE"));
        assert!(message("mysql://u:pw@h/db?ssl-mode=PREFERRED")
            .starts_with("--registry \"mysql://u:pw@h/db?ssl-mode=PREFERRED\": "));
        assert_eq!(
            message("http://x"),
            format!("--registry \"http://x\" is not supported; allowed: {REGISTRY_URLS}")
        );
    }

    #[test]
    fn counter_refusals_name_the_flag() {
        let e = open_counter("http://h", 100, "segflake").err().unwrap();
        assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        assert!(
            e.to_string()
                .starts_with("--counter: \"http://h\": the scheme \"http\" is not a Redis scheme"),
            "{e}"
        );
    }
}
