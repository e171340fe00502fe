//! PostgreSQL and MySQL/MariaDB connections whose every call ends within a timeout, for the
//! lease registries (`registry.rs`) and the segment stores (`stores.rs`); each behind its
//! feature (`postgres`, `mysql`), TLS behind `rustls`.
//!
//! A connection that died silently (a peer that vanished, a proxy or firewall that stops
//! forwarding without closing) would otherwise stall a call until the kernel gives up,
//! about 15 minutes later, and hold the registry's or store's connection all that time. So:
//! * PostgreSQL: every call runs under a client-side deadline (the connection is dropped
//!   when it passes), plus a connect timeout, TCP keepalives, `TCP_USER_TIMEOUT` (Linux) and
//!   the server's `statement_timeout` (a statement stuck on a lock ends too);
//! * MySQL/MariaDB: connect, read and write timeouts on the socket, keepalives,
//!   `TCP_USER_TIMEOUT` (Linux) and `innodb_lock_wait_timeout`.
//!
//! The caller drops a connection after any error, so the next call reconnects.
//!
//! High availability: a URL may list several servers, and a connection is kept only to
//! one that takes writes (the core's `writable` statement, asked on every new connection):
//! * PostgreSQL: libpq's spelling, `postgres://USER@H1:P1,H2:P2/DB`, which tokio-postgres
//!   takes as it is; `target_session_attrs=read-write` (its check, `SHOW
//!   transaction_read_only`, skips a standby) is always set, so the first writable host in
//!   the list is used;
//! * MySQL/MariaDB: `mysql://USER:PASSWORD@H1:P1,H2:P2/DB` (the `mysql` client takes one
//!   host): the hosts are tried in order and the first whose `@@global.read_only` is off is
//!   kept (asked explicitly: a user with `SUPER` or `READ ONLY ADMIN` may write to a
//!   read-only server).
//!
//! A write that a server refuses because it is read-only (the core's `read_only_errors`)
//! fails with a message that starts with [`READ_ONLY`]; the caller drops that connection,
//! so the next call connects to a writable host.

use std::time::Duration;

#[cfg(feature = "postgres")]
use tokio_postgres::config::Host;
#[cfg(all(feature = "postgres", feature = "rustls"))]
use tokio_postgres::config::SslMode;
#[cfg(feature = "postgres")]
use tokio_postgres::Config;
#[cfg(all(feature = "postgres", feature = "rustls"))]
use tokio_postgres_rustls::MakeRustlsConnect;

#[cfg(feature = "postgres")]
use crate::error_chain;
use crate::tls;
#[cfg(feature = "rustls")]
use crate::tls::Verify;

/// How much of the server's certificate a URL asks to check, without the `rustls` feature
/// (every level is then refused).
#[cfg(not(feature = "rustls"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verify {
    Encrypt,
    Ca,
    Full,
}

/// The start of the message of a call refused because the server is read-only (a standby
/// or replica: the core's `writable` check answered no, or the write was refused with one
/// of the core's `read_only_errors`). Nothing was written; the connection is dropped and the
/// next call connects to the first writable server of the URL.
pub const READ_ONLY: &str = "the server is read-only";

/// The message of a write refused by a read-only server (`why`: the server's words).
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn read_only(why: &str) -> String {
    format!(
        "{READ_ONLY} ({why}): nothing was written; the connection is dropped and the next \
         call connects to a writable server"
    )
}

/// The URLs of each host of `url`, `SCHEME://[USERINFO@]HOST[:PORT][,HOST[:PORT]…][/REST]`
/// (a host may be `[IPv6]`), in the order given: `url` itself when it names one host. An
/// empty entry in the list is refused.
pub fn split_hosts(url: &str) -> Result<Vec<String>, String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok(vec![url.to_string()]);
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((u, h)) => (format!("{u}@"), h),
        None => (String::new(), authority),
    };
    if !hosts.contains(',') {
        return Ok(vec![url.to_string()]);
    }
    hosts
        .split(',')
        .map(|h| match h.trim() {
            "" => Err(format!(
                "empty host in the host list {hosts:?}: expected HOST[:PORT][,HOST[:PORT]…]"
            )),
            h => Ok(format!("{scheme}://{userinfo}{h}{tail}")),
        })
        .collect()
}

/// A PostgreSQL connection's settings: libpq's, and TLS when `sslmode` asks for it.
#[cfg(feature = "postgres")]
#[derive(Clone)]
pub struct PgConfig {
    pub config: Config,
    tls: Option<PgTls>,
}

#[cfg(all(feature = "postgres", not(feature = "rustls")))]
#[derive(Clone)]
enum PgTls {}

#[cfg(all(feature = "postgres", feature = "rustls"))]
#[derive(Clone)]
struct PgTls {
    connector: MakeRustlsConnect,
    /// `sslrootcert`, for error messages.
    ca: Option<String>,
}

#[cfg(feature = "postgres")]
impl PgConfig {
    /// The TLS connector and the CA file named (for messages), when TLS is on.
    #[cfg(feature = "rustls")]
    pub(crate) fn tls_connector(&self) -> Option<(MakeRustlsConnect, Option<String>)> {
        self.tls
            .as_ref()
            .map(|t| (t.connector.clone(), t.ca.clone()))
    }

    /// Without the `rustls` feature there is never TLS.
    #[cfg(not(feature = "rustls"))]
    pub(crate) fn tls_connector(&self) -> Option<std::convert::Infallible> {
        self.tls.as_ref().map(|never| match *never {})
    }
}

/// The PostgreSQL settings of `url` (as libpq takes it: a URL or `key=value` words) with
/// the deadlines of `timeout`. TLS: `sslmode=disable` (the default: plaintext),
/// `require` (encrypted, the certificate not checked, unless `sslrootcert` is given: then
/// as `verify-ca`), `verify-ca` (the certificate chains to `sslrootcert=PATH`, a PEM file)
/// or `verify-full` (and names the host connected to). `prefer` and `allow`, which may
/// connect without TLS, are refused.
#[cfg(feature = "postgres")]
pub fn postgres_config(url: &str, timeout: Duration) -> Result<PgConfig, String> {
    let (rest, found) = take_pg_params(url);
    let mut config: Config = rest.parse().map_err(|e| error_chain(&e))?;
    with_deadlines(&mut config, timeout);
    let [mode, ca, attrs] = found;
    if let Some(attrs) = attrs.filter(|a| a != "read-write") {
        return Err(format!(
            "target_session_attrs={attrs} is not taken: a store or registry writes, so it \
             connects only to a server that takes writes (read-write, the default here)"
        ));
    }
    let verify = match (mode.as_deref(), &ca) {
        (None | Some("disable"), None) => None,
        (None | Some("disable"), Some(_)) => {
            return Err(
                "sslrootcert is given but sslmode is not require, verify-ca or \
                        verify-full (TLS is off)"
                    .into(),
            )
        }
        (Some("require"), None) => Some(Verify::Encrypt),
        (Some("require" | "verify-ca"), Some(_)) => Some(Verify::Ca),
        (Some("verify-full"), Some(_)) => Some(Verify::Full),
        (Some(m @ ("verify-ca" | "verify-full")), None) => {
            return Err(format!(
                "sslmode={m} needs sslrootcert=PATH, the PEM file of the certificate \
                 authority that signed the server's certificate"
            ))
        }
        (Some(m @ ("prefer" | "allow")), _) => {
            return Err(format!(
                "sslmode={m} may connect without TLS; use sslmode=disable, require, verify-ca \
                 or verify-full"
            ))
        }
        (Some(m), _) => {
            return Err(format!(
                "sslmode={m:?} is not one of disable, require, verify-ca, verify-full"
            ))
        }
    };
    let tls = match verify {
        None => None,
        #[cfg(not(feature = "rustls"))]
        Some(_) => return Err(tls::NEEDS_RUSTLS.into()),
        #[cfg(feature = "rustls")]
        Some(verify) => {
            config.ssl_mode(SslMode::Require);
            let client = tls::client_config(verify, ca.as_deref())
                .map_err(|e| format!("sslrootcert: {e}"))?;
            Some(PgTls {
                connector: MakeRustlsConnect::new(client),
                ca,
            })
        }
    };
    Ok(PgConfig { config, tls })
}

/// The settings of a connection made from `config` without TLS (the `sslmode` of a
/// [`Config`] is not used: tokio-postgres leaves TLS to a connector), with the deadlines
/// of `timeout`.
#[cfg(feature = "postgres")]
pub fn postgres_plain(mut config: Config, timeout: Duration) -> PgConfig {
    with_deadlines(&mut config, timeout);
    PgConfig { config, tls: None }
}

/// The settings of a connection made from `config` over TLS with the rustls client
/// configuration `tls`, with the deadlines of `timeout`.
#[cfg(all(feature = "postgres", feature = "rustls"))]
pub fn postgres_tls(mut config: Config, tls: rustls::ClientConfig, timeout: Duration) -> PgConfig {
    with_deadlines(&mut config, timeout);
    config.ssl_mode(SslMode::Require);
    let tls = PgTls {
        connector: MakeRustlsConnect::new(tls),
        ca: None,
    };
    PgConfig {
        config,
        tls: Some(tls),
    }
}

/// The connect timeout, TCP keepalives, `TCP_USER_TIMEOUT` and the server's
/// `statement_timeout` of `timeout`, added to the options `config` has; and
/// `target_session_attrs=read-write`, so of several hosts the first writable one is used.
#[cfg(feature = "postgres")]
fn with_deadlines(config: &mut Config, timeout: Duration) {
    let second = Duration::from_secs(1);
    config
        .target_session_attrs(tokio_postgres::config::TargetSessionAttrs::ReadWrite)
        .connect_timeout(timeout)
        .keepalives(true)
        .keepalives_idle(timeout.max(second))
        .keepalives_interval((timeout / 3).max(second))
        .keepalives_retries(3)
        .tcp_user_timeout(timeout);
    // The server ends a statement that runs longer (one waiting on a row lock, say).
    let statement = format!("-c statement_timeout={}", timeout.as_millis().max(1));
    let options = match config.get_options() {
        Some(given) if !given.trim().is_empty() => format!("{given} {statement}"),
        _ => statement,
    };
    config.options(options);
}

/// `url` without `sslmode` and `sslrootcert` (which tokio-postgres does not take in full)
/// and `target_session_attrs` (always read-write here), and their values.
#[cfg(feature = "postgres")]
fn take_pg_params(url: &str) -> (String, [Option<String>; 3]) {
    const NAMES: [&str; 3] = ["sslmode", "sslrootcert", "target_session_attrs"];
    if url.contains("://") {
        let (rest, found) = tls::take_params(url, &NAMES);
        return (rest, [found[0].clone(), found[1].clone(), found[2].clone()]);
    }
    // `key=value` words.
    let mut found = [None, None, None];
    let mut kept = Vec::new();
    for word in url.split_whitespace() {
        let (k, v) = word.split_once('=').unwrap_or((word, ""));
        match NAMES.iter().position(|n| *n == k.trim()) {
            Some(i) => found[i] = Some(v.trim_matches('\'').to_string()),
            None => kept.push(word),
        }
    }
    (kept.join(" "), found)
}

/// `postgres://USER@HOST:PORT/DB` of a configuration (no password), for logs and errors.
#[cfg(feature = "postgres")]
pub fn pg_describe(config: &Config) -> String {
    let user = config.get_user().unwrap_or("");
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{user}@{}/{db}", pg_target(config))
}

/// `host:port` of a PostgreSQL configuration (`h1:p1,h2:p2` of several), for messages.
#[cfg(feature = "postgres")]
pub(crate) fn pg_target(config: &Config) -> String {
    let port = |i: usize| {
        let ports = config.get_ports();
        ports.get(i).or(ports.first()).copied().unwrap_or(5432)
    };
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| match h {
            Host::Tcp(h) => format!("{h}:{}", port(i)),
            #[cfg(unix)]
            Host::Unix(p) => format!("{}:{}", p.display(), port(i)),
        })
        .collect();
    match hosts.is_empty() {
        true => format!("localhost:{}", port(0)),
        false => hosts.join(","),
    }
}

/// One PostgreSQL connection, driven on its own one-thread runtime ([`crate::rt`]: callable
/// and droppable from async code too). The statements are the async steps of
/// [`crate::pg`], run with [`Postgres::run`]: every call ends within the timeout (an error
/// after it, and the connection should then be dropped).
#[cfg(feature = "postgres")]
pub struct Postgres {
    pub runtime: crate::rt::Runtime,
    pub session: crate::pg::PgSession,
    pub timeout: Duration,
}

#[cfg(feature = "postgres")]
impl Postgres {
    /// Connects (failures start with "cannot connect to PostgreSQL: ").
    pub fn connect(settings: &PgConfig, timeout: Duration) -> Result<Postgres, String> {
        let runtime = crate::rt::Runtime::current_thread("PostgreSQL")
            .map_err(|e| format!("cannot connect to PostgreSQL: {e}"))?;
        // The timer is made inside the runtime, whose clock it needs. The connection's I/O
        // runs while a call waits in `block_on`; it ends (closing the socket) when this
        // value, and with it the runtime, is dropped.
        let (client, driver) = runtime.block_on(crate::pg::connect(settings, timeout))?;
        runtime.spawn(driver);
        Ok(Postgres {
            runtime,
            session: crate::pg::PgSession::new(client),
            timeout,
        })
    }

    /// `step` (a future over `self.session`, made by the caller from the fields) on the
    /// runtime, within the timeout.
    pub fn run<T: Send>(
        runtime: &crate::rt::Runtime,
        timeout: Duration,
        step: impl std::future::Future<Output = Result<T, String>> + Send,
    ) -> Result<T, String> {
        match runtime.block_on(async { tokio::time::timeout(timeout, step).await }) {
            Ok(answer) => answer,
            Err(_) => Err(format!(
                "PostgreSQL did not answer within {timeout:?} (the connection is dropped)"
            )),
        }
    }
}

/// `crate::pg::$step(session, args…)` on the blocking connection `$c`, within its timeout.
#[cfg(feature = "postgres")]
macro_rules! pg_step {
    ($c:expr, $step:ident($($arg:expr),* $(,)?)) => {{
        let c: &mut crate::sql::Postgres = $c;
        crate::sql::Postgres::run(&c.runtime, c.timeout, crate::pg::$step(&mut c.session, $($arg),*))
    }};
}
#[cfg(feature = "postgres")]
pub(crate) use pg_step;

/// The MySQL/MariaDB settings of `url` with the deadlines of `timeout`. TLS, with the
/// names of MySQL's clients: `ssl-mode=DISABLED` (the default without `ssl-ca`),
/// `REQUIRED` (encrypted, the certificate not checked unless `ssl-ca` is given: then as
/// `VERIFY_CA`), `VERIFY_CA` (the certificate chains to `ssl-ca=PATH`, a PEM file, or to
/// the public web authorities without it) or `VERIFY_IDENTITY` (and names the host);
/// `ssl-ca` alone means `VERIFY_CA`. `PREFERRED`, which may connect without TLS, is refused.
#[cfg(feature = "mysql")]
pub fn mysql_opts(url: &str, timeout: Duration) -> Result<mysql::OptsBuilder, String> {
    let (rest, found) = tls::take_params(url, &["ssl-mode", "ssl-ca"]);
    let mode = found[0].as_deref().map(str::to_ascii_uppercase);
    let ca = found[1].clone();
    let verify = match (mode.as_deref(), &ca) {
        (None, None) | (Some("DISABLED"), None) => None,
        (Some("DISABLED"), Some(_)) => {
            return Err("ssl-ca is given but ssl-mode=DISABLED (TLS is off)".into())
        }
        (Some("REQUIRED"), None) => Some(Verify::Encrypt),
        (None | Some("REQUIRED" | "VERIFY_CA"), _) => Some(Verify::Ca),
        (Some("VERIFY_IDENTITY"), _) => Some(Verify::Full),
        (Some("PREFERRED"), _) => {
            return Err(
                "ssl-mode=PREFERRED may connect without TLS; use ssl-mode=DISABLED, \
                        REQUIRED, VERIFY_CA or VERIFY_IDENTITY"
                    .into(),
            )
        }
        (Some(m), _) => {
            return Err(format!(
                "ssl-mode={m:?} is not one of DISABLED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY"
            ))
        }
    };
    let opts = mysql::Opts::from_url(&rest).map_err(|e| e.to_string())?;
    let opts = mysql_deadlines(mysql::OptsBuilder::from_opts(opts), timeout);
    #[cfg(not(feature = "rustls"))]
    if verify.is_some() {
        return Err(tls::NEEDS_RUSTLS.into());
    }
    #[cfg(feature = "rustls")]
    let opts = match verify {
        None => opts,
        Some(verify) => {
            if let Some(path) = &ca {
                // Read here, so that a missing or malformed file is a clear error now.
                tls::load_roots(path).map_err(|e| format!("ssl-ca: {e}"))?;
            }
            let ssl = mysql::SslOpts::default()
                .with_root_cert_path(ca.map(std::path::PathBuf::from))
                .with_danger_accept_invalid_certs(verify == Verify::Encrypt)
                .with_danger_skip_domain_validation(verify == Verify::Ca);
            // The client would otherwise move to the server's Unix socket on a local host,
            // without TLS.
            opts.ssl_opts(ssl).prefer_socket(false)
        }
    };
    Ok(opts)
}

/// `opts` with the deadlines of `timeout` (connect, read and write timeouts, keepalives,
/// `TCP_USER_TIMEOUT` on Linux, `innodb_lock_wait_timeout`) and `CLIENT_FOUND_ROWS`, which
/// the core's statements need (an UPDATE reports the rows it matched).
#[cfg(feature = "mysql")]
pub fn mysql_deadlines(opts: mysql::OptsBuilder, timeout: Duration) -> mysql::OptsBuilder {
    let ms = u32::try_from(timeout.as_millis())
        .unwrap_or(u32::MAX)
        .max(1);
    let opts = opts
        .tcp_connect_timeout(Some(timeout))
        .read_timeout(Some(timeout))
        .write_timeout(Some(timeout))
        .tcp_keepalive_time_ms(Some(ms.max(1000)))
        // A statement waiting on a row lock gives up too (whole seconds, at least 1).
        .init(vec![format!(
            "SET SESSION innodb_lock_wait_timeout = {}",
            ms.div_ceil(1000)
        )])
        // An UPDATE reports the rows it matched (the statements' contract), not only those
        // it changed.
        .additional_capabilities(mysql::consts::CapabilityFlags::CLIENT_FOUND_ROWS);
    #[cfg(target_os = "linux")]
    let opts = opts.tcp_user_timeout_ms(Some(ms));
    opts
}

/// `mysql://USER@HOST:PORT/DB` of a configuration (no password), for logs and errors.
#[cfg(feature = "mysql")]
pub fn mysql_describe(opts: &mysql::Opts) -> String {
    format!(
        "mysql://{}@{}:{}/{}",
        opts.get_user().unwrap_or(""),
        opts.get_ip_or_hostname(),
        opts.get_tcp_port(),
        opts.get_db_name().unwrap_or("")
    )
}

/// Connects to MySQL/MariaDB (failures start with "cannot connect to MySQL: "; a TLS
/// failure says what to check).
#[cfg(feature = "mysql")]
pub fn mysql_connect(opts: &mysql::OptsBuilder) -> Result<mysql::Conn, String> {
    mysql::Conn::new(opts.clone()).map_err(|e| {
        let text = e.to_string();
        #[cfg(not(feature = "rustls"))]
        let why = text;
        #[cfg(feature = "rustls")]
        let o: mysql::Opts = opts.clone().into();
        #[cfg(feature = "rustls")]
        let why = match o.get_ssl_opts() {
            Some(ssl) if tls::is_tls_error(&text) => tls::explain(
                &text,
                &format!("{}:{}", o.get_ip_or_hostname(), o.get_tcp_port()),
                ssl.root_cert_path().and_then(|p| p.to_str()),
            ),
            _ => text,
        };
        format!("cannot connect to MySQL: {why}")
    })
}

/// The settings of each server of `url` in the order given (several:
/// `mysql://USER:PASSWORD@H1:P1,H2:P2/DB`, the same credentials, database and parameters
/// for each), as [`mysql_opts`] reads them.
#[cfg(feature = "mysql")]
pub fn mysql_targets(url: &str, timeout: Duration) -> Result<Vec<mysql::OptsBuilder>, String> {
    split_hosts(url)?
        .iter()
        .map(|u| mysql_opts(u, timeout))
        .collect()
}

/// A failed statement's message; one refused because the server is read-only (the core's
/// `read_only_errors`) starts with [`READ_ONLY`].
#[cfg(feature = "mysql")]
pub(crate) fn mysql_error(e: mysql::Error) -> String {
    use segflake::segment::statements::is_read_only_error;
    match &e {
        mysql::Error::MySqlError(m) if is_read_only_error("mysql", &m.code.to_string()) => {
            read_only(&e.to_string())
        }
        _ => e.to_string(),
    }
}

/// Connects to the first server of `targets` that takes writes (the core's `writable`
/// statement answers 1). With one server, its failure ("cannot connect to MySQL: …", or a
/// message starting with [`READ_ONLY`]); with several, why each was passed over.
#[cfg(feature = "mysql")]
pub fn mysql_connect_writable(targets: &[mysql::OptsBuilder]) -> Result<mysql::Conn, String> {
    use mysql::prelude::Queryable;
    let writable = segflake::segment::statements::statement("mysql", "writable", "")
        .expect("the core's writable statement");
    let mut passed = Vec::new();
    let mut all_read_only = true;
    for opts in targets {
        let o: mysql::Opts = opts.clone().into();
        let at = format!("{}:{}", o.get_ip_or_hostname(), o.get_tcp_port());
        let why = match mysql_connect(opts) {
            Err(e) => e,
            Ok(mut conn) => match conn.query_first::<i64, _>(&writable) {
                Ok(Some(1)) => return Ok(conn),
                Ok(_) => {
                    passed.push(read_only(&format!(
                        "{at}: @@global.read_only is set, a replica"
                    )));
                    continue;
                }
                Err(e) => format!("cannot connect to MySQL: {}", mysql_error(e)),
            },
        };
        all_read_only = false;
        passed.push(match targets.len() {
            1 => why,
            _ => format!("{at}: {why}"),
        });
    }
    Err(match (passed.len(), all_read_only) {
        (1, _) => passed.remove(0),
        (_, true) => read_only(&format!("every server of the URL: {}", passed.join("; "))),
        _ => format!(
            "cannot connect to MySQL: no writable server among {} hosts: {}",
            targets.len(),
            passed.join("; ")
        ),
    })
}

#[cfg(all(test, feature = "postgres", feature = "mysql", feature = "rustls"))]
mod tests {
    use super::*;

    #[test]
    fn postgres_settings_carry_the_deadlines_and_keep_given_options() {
        let t = Duration::from_millis(2500);
        let c = postgres_config("postgres://leaf@db/leaf", t)
            .unwrap()
            .config;
        assert_eq!(c.get_connect_timeout(), Some(&t));
        assert_eq!(c.get_tcp_user_timeout(), Some(&t));
        assert!(c.get_keepalives());
        assert_eq!(c.get_options(), Some("-c statement_timeout=2500"));
        let c = postgres_config("postgres://leaf@db/leaf?options=-c%20search_path%3Dids", t)
            .unwrap()
            .config;
        assert_eq!(
            c.get_options(),
            Some("-c search_path=ids -c statement_timeout=2500")
        );
    }

    #[test]
    fn a_silent_postgres_server_fails_the_call_within_the_timeout() {
        // A listener that accepts and never answers: the startup message gets no reply.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = silent.local_addr().unwrap().port();
        let t = Duration::from_millis(300);
        let config = postgres_config(&format!("postgres://leaf@127.0.0.1:{port}/leaf"), t).unwrap();
        let started = std::time::Instant::now();
        let e = Postgres::connect(&config, t).err().expect("no answer");
        assert!(started.elapsed() < Duration::from_secs(3), "{e}");
        assert!(e.starts_with("cannot connect to PostgreSQL: "), "{e}");
    }

    #[test]
    fn tls_settings_are_read_from_urls_and_key_value_words() {
        let t = Duration::from_millis(1000);
        let c = postgres_config("postgres://u@h/db?sslmode=require&application_name=a", t);
        let c = c.unwrap();
        assert!(c.tls.is_some());
        assert_eq!(c.config.get_ssl_mode(), SslMode::Require);
        assert_eq!(c.config.get_application_name(), Some("a"));
        let c = postgres_config("host=h user=u sslmode=require", t).unwrap();
        assert!(c.tls.is_some());
        assert!(postgres_config("host=h user=u", t).unwrap().tls.is_none());
        assert!(postgres_config("postgres://u@h/db?sslmode=disable", t)
            .unwrap()
            .tls
            .is_none());
        for (url, why) in [
            (
                "postgres://u@h/db?sslmode=prefer",
                "may connect without TLS",
            ),
            ("postgres://u@h/db?sslmode=verify-ca", "needs sslrootcert"),
            ("postgres://u@h/db?sslrootcert=/x.pem", "sslmode is not"),
            ("postgres://u@h/db?sslmode=bogus", "is not one of"),
            (
                "postgres://u@h/db?sslmode=verify-full&sslrootcert=/no/such.pem",
                "/no/such.pem",
            ),
        ] {
            let e = postgres_config(url, t).err().expect(url);
            assert!(e.contains(why), "{url}: {e}");
        }
        for (url, why) in [
            (
                "mysql://u@h/db?ssl-mode=PREFERRED",
                "may connect without TLS",
            ),
            (
                "mysql://u@h/db?ssl-mode=DISABLED&ssl-ca=/x.pem",
                "TLS is off",
            ),
            ("mysql://u@h/db?ssl-mode=bogus", "is not one of"),
            ("mysql://u@h/db?ssl-ca=/no/such.pem", "/no/such.pem"),
        ] {
            let e = mysql_opts(url, t).expect_err(url);
            assert!(e.contains(why), "{url}: {e}");
        }
        let o: mysql::Opts = mysql_opts("mysql://u@h/db?ssl-mode=required", t)
            .unwrap()
            .into();
        assert!(o.get_ssl_opts().unwrap().accept_invalid_certs());
        assert!(!o.get_prefer_socket());
    }

    #[test]
    fn a_url_with_several_hosts_is_split_into_one_url_per_host_in_order() {
        assert_eq!(
            split_hosts("mysql://u:p%40w@h1:3306,h2:3307,[::1]:3308/ids?ssl-mode=DISABLED")
                .unwrap(),
            [
                "mysql://u:p%40w@h1:3306/ids?ssl-mode=DISABLED",
                "mysql://u:p%40w@h2:3307/ids?ssl-mode=DISABLED",
                "mysql://u:p%40w@[::1]:3308/ids?ssl-mode=DISABLED",
            ]
        );
        assert_eq!(
            split_hosts("mysql://h1,h2").unwrap(),
            ["mysql://h1", "mysql://h2"]
        );
        assert_eq!(split_hosts("mysql://u@h/db").unwrap(), ["mysql://u@h/db"]);
        let e = split_hosts("mysql://u@h1,,h2/db").unwrap_err();
        assert!(e.contains("empty host"), "{e}");
        let t = Duration::from_millis(1000);
        let targets = mysql_targets("mysql://u:p@h1:3306,h2/ids", t).unwrap();
        let hosts: Vec<(String, u16, Option<String>)> = targets
            .into_iter()
            .map(|b| {
                let o: mysql::Opts = b.into();
                let host = o.get_ip_or_hostname().to_string();
                (host, o.get_tcp_port(), o.get_db_name().map(str::to_string))
            })
            .collect();
        assert_eq!(
            hosts,
            [
                ("h1".into(), 3306, Some("ids".into())),
                ("h2".into(), 3306, Some("ids".into()))
            ]
        );
    }

    #[test]
    fn postgres_urls_with_several_hosts_target_the_writable_one() {
        use tokio_postgres::config::TargetSessionAttrs;
        let t = Duration::from_millis(1000);
        for url in [
            "postgres://u@h1:5433,h2:5434/db",
            "postgres://u@h1:5433,h2:5434/db?target_session_attrs=read-write",
            "host=h1,h2 port=5433,5434 user=u",
        ] {
            let c = postgres_config(url, t).unwrap().config;
            assert_eq!(c.get_hosts().len(), 2, "{url}");
            assert_eq!(c.get_ports(), [5433, 5434], "{url}");
            assert_eq!(
                c.get_target_session_attrs(),
                TargetSessionAttrs::ReadWrite,
                "{url}"
            );
            assert_eq!(pg_target(&c), "h1:5433,h2:5434");
        }
        // A single host is checked the same way.
        let c = postgres_config("postgres://u@h/db", t).unwrap().config;
        assert_eq!(c.get_target_session_attrs(), TargetSessionAttrs::ReadWrite);
        for url in [
            "postgres://u@h1,h2/db?target_session_attrs=any",
            "postgres://u@h1,h2/db?target_session_attrs=read-only",
        ] {
            let e = postgres_config(url, t).err().expect(url);
            assert!(e.contains("read-write"), "{url}: {e}");
        }
    }

    #[test]
    fn refusals_of_a_read_only_server_say_so() {
        let e = read_only("h:1: @@global.read_only is set, a replica");
        assert!(e.starts_with(READ_ONLY), "{e}");
        assert!(e.contains("next call connects to a writable server"), "{e}");
        // Nothing listens: each host's failure is named, and none is taken for read-only.
        let t = Duration::from_millis(300);
        let closed = |_| {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let (p1, p2): (u16, u16) = (closed(()), closed(()));
        let targets =
            mysql_targets(&format!("mysql://u@127.0.0.1:{p1},127.0.0.1:{p2}/db"), t).unwrap();
        let e = mysql_connect_writable(&targets).expect_err("nothing listens");
        assert!(
            e.starts_with("cannot connect to MySQL: no writable server among 2 hosts"),
            "{e}"
        );
        assert!(
            e.contains(&format!("127.0.0.1:{p1}: ")) && e.contains(&format!("127.0.0.1:{p2}: ")),
            "{e}"
        );
        let one = mysql_targets(&format!("mysql://u@127.0.0.1:{p1}/db"), t).unwrap();
        let e = mysql_connect_writable(&one).expect_err("nothing listens");
        assert!(e.starts_with("cannot connect to MySQL: "), "{e}");
    }

    #[test]
    fn mysql_settings_carry_the_deadlines() {
        let t = Duration::from_millis(1500);
        let o: mysql::Opts = mysql_opts("mysql://u:p@db:3306/ids", t).unwrap().into();
        assert_eq!(o.get_read_timeout(), Some(&t));
        assert_eq!(o.get_write_timeout(), Some(&t));
        assert_eq!(o.get_tcp_connect_timeout(), Some(t));
        assert_eq!(o.get_init(), ["SET SESSION innodb_lock_wait_timeout = 2"]);
    }
}
