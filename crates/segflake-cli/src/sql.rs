//! PostgreSQL and MySQL/MariaDB connections whose every call ends within a timeout, for the
//! lease registries (`registry.rs`) and the segment stores (`stores.rs`).
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

use std::time::Duration;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Config, NoTls, Row};

use crate::stores::error_chain;

/// The PostgreSQL settings of `url` (as libpq takes it) with the deadlines of `timeout`.
pub fn postgres_config(url: &str, timeout: Duration) -> Result<Config, String> {
    let mut config: Config = url.parse().map_err(|e| error_chain(&e))?;
    let second = Duration::from_secs(1);
    config
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
    Ok(config)
}

/// One PostgreSQL connection, driven on its own one-thread runtime; every call ends within
/// the timeout (an error after it, and the connection should then be dropped).
pub struct Postgres {
    runtime: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
    timeout: Duration,
}

impl Postgres {
    /// Connects (failures start with "cannot connect to PostgreSQL: ").
    pub fn connect(config: &Config, timeout: Duration) -> Result<Postgres, String> {
        let fail = |why: String| format!("cannot connect to PostgreSQL: {why}");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| fail(e.to_string()))?;
        // The timer is made inside the runtime, whose clock it needs.
        let connected =
            runtime.block_on(async { tokio::time::timeout(timeout, config.connect(NoTls)).await });
        let (client, connection) = connected
            .map_err(|_| fail(format!("no connection within {timeout:?}")))?
            .map_err(|e| fail(error_chain(&e)))?;
        // The connection's I/O runs while a call waits in `block_on`; it ends (closing the
        // socket) when this value, and with it the runtime, is dropped.
        runtime.spawn(async move {
            let _ = connection.await;
        });
        Ok(Postgres {
            runtime,
            client,
            timeout,
        })
    }

    fn run<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, String> {
        match self
            .runtime
            .block_on(async { tokio::time::timeout(self.timeout, call).await })
        {
            Ok(answer) => answer.map_err(|e| error_chain(&e)),
            Err(_) => Err(format!(
                "PostgreSQL did not answer within {:?} (the connection is dropped)",
                self.timeout
            )),
        }
    }

    pub fn batch_execute(&mut self, statements: &str) -> Result<(), String> {
        self.run(self.client.batch_execute(statements))
    }

    pub fn execute(
        &mut self,
        statement: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, String> {
        self.run(self.client.execute(statement, params))
    }

    pub fn query(
        &mut self,
        statement: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, String> {
        self.run(self.client.query(statement, params))
    }

    /// Prepares `statement`: its parameter and column types.
    pub fn prepare(&mut self, statement: &str) -> Result<tokio_postgres::Statement, String> {
        self.run(self.client.prepare(statement))
    }

    pub fn query_prepared(
        &mut self,
        statement: &tokio_postgres::Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, String> {
        self.run(self.client.query(statement, params))
    }

    pub fn query_opt(
        &mut self,
        statement: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, String> {
        self.run(self.client.query_opt(statement, params))
    }
}

/// The MySQL/MariaDB settings of `url` with the deadlines of `timeout`.
pub fn mysql_opts(url: &str, timeout: Duration) -> Result<mysql::OptsBuilder, String> {
    let opts = mysql::Opts::from_url(url).map_err(|e| e.to_string())?;
    let ms = u32::try_from(timeout.as_millis())
        .unwrap_or(u32::MAX)
        .max(1);
    let opts = mysql::OptsBuilder::from_opts(opts)
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
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_settings_carry_the_deadlines_and_keep_given_options() {
        let t = Duration::from_millis(2500);
        let c = postgres_config("postgres://leaf@db/leaf", t).unwrap();
        assert_eq!(c.get_connect_timeout(), Some(&t));
        assert_eq!(c.get_tcp_user_timeout(), Some(&t));
        assert!(c.get_keepalives());
        assert_eq!(c.get_options(), Some("-c statement_timeout=2500"));
        let c =
            postgres_config("postgres://leaf@db/leaf?options=-c%20search_path%3Dids", t).unwrap();
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
    fn mysql_settings_carry_the_deadlines() {
        let t = Duration::from_millis(1500);
        let o: mysql::Opts = mysql_opts("mysql://u:p@db:3306/ids", t).unwrap().into();
        assert_eq!(o.get_read_timeout(), Some(&t));
        assert_eq!(o.get_write_timeout(), Some(&t));
        assert_eq!(o.get_tcp_connect_timeout(), Some(t));
        assert_eq!(o.get_init(), ["SET SESSION innodb_lock_wait_timeout = 2"]);
    }
}
