//! Several hosts in one URL and servers that take no writes, against real servers: the
//! stores and registries skip a host that is down, refuse a read-only server with a message
//! that says so (also a MariaDB user whose `SUPER` passes `read_only`: the core's writable
//! check is explicit), and write again once the server does.

#[path = "../../segflake-cli/tests/common/mod.rs"]
mod common;

use std::process::Command;

use segflake::{Registry, RegistryCall, SegmentStore, StoreFailure};
use segflake_backends::{
    MySqlRegistry, MySqlStore, PostgresRegistry, PostgresStore, RegistryOptions, StoreOptions,
};

fn required<T>(server: Option<T>, what: &str) -> T {
    server.unwrap_or_else(|| panic!("{what} is not installed; scripts/test-rust.sh installs it"))
}

fn store_options() -> StoreOptions {
    let mut options = StoreOptions::default();
    options.timeout_ms = 5_000;
    options.create_missing_step = Some(10);
    options
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn claim(registry: &dyn Registry) -> Result<segflake::Value, String> {
    registry.call(&RegistryCall::Claim {
        worker_id: 1,
        owner: "read-only-test".into(),
        ttl_ms: 10_000,
    })
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The message of a failed store call.
fn failure(e: StoreFailure) -> String {
    match e {
        StoreFailure::Failed(message) => message,
        other => panic!("not a failure: {other:?}"),
    }
}

/// What `attempt` gives, tried every 100 ms until it gives something, for at most 5 s (a
/// reloaded server setting takes effect when the server gets to it); `what` if it never does.
fn within_5s<T>(what: &str, mut attempt: impl FnMut() -> Option<T>) -> T {
    (0..50)
        .find_map(|_| {
            attempt().or_else(|| {
                std::thread::sleep(std::time::Duration::from_millis(100));
                None
            })
        })
        .unwrap_or_else(|| panic!("{what}"))
}

/// A refusal by (or of) a read-only server, saying so.
fn assert_read_only(e: &str) {
    assert!(e.contains("the server is read-only ("), "{e}");
}

#[test]
fn postgres_skips_a_host_that_is_down_and_refuses_a_read_only_server() {
    let pg = required(common::postgres(None), "PostgreSQL");
    let psql = |sql: &str| {
        run(Command::new(common::postgres_bin().join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &pg.port.to_string(),
                "-U",
                "postgres",
            ])
            .args(["-v", "ON_ERROR_STOP=1", "-c", sql]));
    };
    psql(
        &segflake::segment::statements::statement("postgres", "create_table", "leaf_alloc")
            .unwrap(),
    );
    // The first host is down: the second, writable, is used.
    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
        closed_port(),
        pg.port
    );
    let store = PostgresStore::new(&url, &store_options()).unwrap();
    let registry = PostgresRegistry::new(&url, &RegistryOptions::default()).unwrap();
    let mut last = store.allocate("order", 10).unwrap().max_id;
    assert_eq!(last, 11);
    assert!(claim(&registry).is_ok());
    // The server stops taking writes (as a demoted primary would): the open connection's
    // write is refused (SQLSTATE 25006), a new connection finds no writable host. A backend
    // reads the reloaded setting when it next gets to it, so a write or two may still pass:
    // each is a range handed out, and the ranges go on from the last one.
    psql("ALTER SYSTEM SET default_transaction_read_only = on");
    psql("SELECT pg_reload_conf()");
    let refused = within_5s("the read-only server kept taking writes", || {
        match store.allocate("order", 10) {
            Err(e) => Some(e),
            Ok(range) => {
                assert_eq!(range.max_id, last + 10, "a range not after the last one");
                last = range.max_id;
                None
            }
        }
    });
    let refused = failure(refused);
    assert!(
        refused.starts_with("the server is read-only ("),
        "{refused}"
    );
    assert!(refused.contains("read-only transaction"), "{refused}");
    // The next call connects anew and finds no writable host.
    let again = failure(store.allocate("order", 10).unwrap_err());
    assert_read_only(&again);
    assert_read_only(&claim(&registry).unwrap_err());
    // Writable again: the next call connects and writes, above every range handed out.
    // The postmaster reads the reloaded file when it gets to it: a connection made before
    // then is still read-only, and refused without a range handed out.
    psql("ALTER SYSTEM RESET default_transaction_read_only");
    psql("SELECT pg_reload_conf()");
    let written = within_5s(
        "the server stayed read-only after the reset",
        || match store.allocate("order", 10) {
            Ok(range) => Some(range),
            Err(e) => {
                assert_read_only(&failure(e));
                None
            }
        },
    );
    assert_eq!(written.max_id, last + 10);
    assert!(claim(&registry).is_ok());
    common::stop_postgres(&pg);
}

#[test]
fn mysql_skips_a_host_that_is_down_and_refuses_a_read_only_server_even_to_super() {
    let db = required(common::mariadb(None), "MariaDB");
    let root = |sql: &str| {
        run(Command::new("mariadb")
            .args(["--no-defaults", "-uroot"])
            .arg(format!("--socket={}", db.dir.join("mysqld.sock").display()))
            .args(["-e", sql]));
    };
    root(&format!(
        "USE segflake; {}; CREATE USER 'admin'@'%' IDENTIFIED BY 'admin'; \
         GRANT ALL ON *.* TO 'admin'@'%';",
        segflake::segment::statements::statement("mysql", "create_table", "leaf_alloc").unwrap()
    ));
    let hosts = format!("127.0.0.1:{},127.0.0.1:{}", closed_port(), db.port);
    let user = format!("mysql://segflake:segflake@{hosts}/segflake");
    let admin = format!("mysql://admin:admin@{hosts}/segflake");
    let store = MySqlStore::new(&user, &store_options()).unwrap();
    let registry = MySqlRegistry::new(&user, &RegistryOptions::default()).unwrap();
    assert_eq!(store.allocate("order", 10).unwrap().max_id, 11);
    assert!(claim(&registry).is_ok());
    root("SET GLOBAL read_only = 1");
    // The open connection's write is refused by the server (1290), the next connection by
    // the core's check; a user with SUPER, whom read_only lets write, only by the check.
    let refused = failure(store.allocate("order", 10).unwrap_err());
    assert!(
        refused.starts_with("the server is read-only ("),
        "{refused}"
    );
    assert!(refused.contains("1290"), "{refused}");
    let again = failure(store.allocate("order", 10).unwrap_err());
    assert!(
        again.starts_with("cannot connect to MySQL: no writable server among 2 hosts"),
        "{again}"
    );
    assert_read_only(&again);
    assert_read_only(&claim(&registry).unwrap_err());
    let as_super = MySqlStore::new(&admin, &store_options()).unwrap();
    let e = failure(as_super.allocate("order", 10).unwrap_err());
    assert!(
        e.contains(&format!("127.0.0.1:{}: @@global.read_only is set", db.port)),
        "{e}"
    );
    root("SET GLOBAL read_only = 0");
    assert_eq!(store.allocate("order", 10).unwrap().max_id, 21);
    assert_eq!(as_super.allocate("order", 10).unwrap().max_id, 31);
    assert!(claim(&registry).is_ok());
}
