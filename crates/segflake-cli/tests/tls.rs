//! TLS to real servers started here with certificates made here (openssl): a CA, a server
//! certificate it signs for `DNS:localhost,IP:127.0.0.1`, and a second, unrelated CA. The
//! right CA works, the wrong one is refused with an error naming the certificate problem,
//! the host-name check of `verify-full`/`VERIFY_IDENTITY`/`rediss://` is real (the server
//! also listens on 127.0.0.2, a name its certificate lacks), and a URL asking for TLS never
//! falls back to plaintext. scripts/test-rust.sh installs the servers; without CI they are
//! skipped with a notice when absent.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::{available, etcd, free_port, redis, wait_for_port, zookeeper, Server, Tls};

/// The certificates of one test, in a throwaway directory.
struct Certs {
    dir: PathBuf,
}

impl Certs {
    fn make(name: &str) -> Certs {
        let dir = std::env::temp_dir().join(format!("segflake-cli-tls-{name}-{}", free_port()));
        std::fs::create_dir_all(&dir).unwrap();
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .output()
                .expect("openssl");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        for ca in ["ca", "other-ca"] {
            openssl(&[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/CN=segflake test {ca}"),
                "-keyout",
                &format!("{ca}.key"),
                "-out",
                &format!("{ca}.pem"),
            ]);
        }
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ]);
        std::fs::write(
            dir.join("san.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "server.pem",
        ]);
        Certs { dir }
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }

    fn tls(&self) -> Tls {
        Tls {
            cert: self.path("server.pem"),
            key: self.path("server.key"),
            ca: self.path("ca.pem"),
        }
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `segflake next --registry URL --json` (one ID).
fn next(url: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args([
            "next",
            "--registry",
            url,
            "--json",
            "--registry-timeout-ms",
            "5000",
        ])
        .args(["--mark-ahead-ms", "300", "--clock-skew-allowance-ms", "0"])
        // A refused connection is retried until the claim wait ends.
        .args(["--claim-wait-ms", "1000"])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn works(url: &str) {
    let out = next(url);
    assert!(
        out.status.success(),
        "{url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(line.contains("\"decimal\""), "{url}: {line}");
}

/// Runs `url`, which must fail; its error message.
fn refused(url: &str) -> String {
    let out = next(url);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{url} worked: {stderr}");
    eprintln!("{url}:\n{stderr}");
    stderr
}

fn assert_mentions(text: &str, parts: &[&str]) {
    for p in parts {
        assert!(text.contains(p), "{p:?} not in: {text}");
    }
}

fn postgres(certs: &Certs, tls: bool) -> Option<Server> {
    if !available("PostgreSQL", "/usr/lib/postgresql") {
        return None;
    }
    let bin = std::fs::read_dir("/usr/lib/postgresql")
        .unwrap()
        .map(|e| e.unwrap().path().join("bin"))
        .max()
        .unwrap();
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("segflake-cli-tls-pg-{port}"));
    std::fs::create_dir_all(dir.join("sock")).unwrap();
    let as_postgres = |cmd: &mut Command| {
        let out = cmd.current_dir("/").output().unwrap();
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let root = nix_is_root();
    let runuser = |program: PathBuf| {
        if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    };
    std::fs::copy(certs.path("server.pem"), dir.join("server.pem")).unwrap();
    std::fs::copy(certs.path("server.key"), dir.join("server.key")).unwrap();
    if root {
        as_postgres(
            Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir),
        );
        as_postgres(Command::new("chmod").arg("755").arg(&dir));
    }
    as_postgres(Command::new("chmod").arg("600").arg(dir.join("server.key")));
    as_postgres(
        runuser(bin.join("initdb"))
            .args(["-A", "trust", "-U", "postgres", "-D"])
            .arg(dir.join("data")),
    );
    let mut options = format!(
        "-p {port} -k {} -c listen_addresses=127.0.0.1,127.0.0.2 -c fsync=off",
        dir.join("sock").display()
    );
    if tls {
        options.push_str(&format!(
            " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
            dir.join("server.pem").display(),
            dir.join("server.key").display()
        ));
    }
    as_postgres(
        runuser(bin.join("pg_ctl"))
            .arg("-D")
            .arg(dir.join("data"))
            .arg("-l")
            .arg(dir.join("server.log"))
            .args(["-w", "-t", "30", "-o", &options, "start"]),
    );
    // pg_ctl started the server as a daemon: a child that stops it on drop.
    let child = Command::new("sleep").arg("100000").spawn().unwrap();
    Some(Server { child, port, dir })
}

fn nix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Stops a PostgreSQL server started by [`postgres`] (before its directory goes).
fn stop_postgres(server: &Server) {
    let pid = std::fs::read_to_string(server.dir.join("data/postmaster.pid")).unwrap_or_default();
    if let Some(pid) = pid.lines().next().filter(|p| !p.is_empty()) {
        let _ = Command::new("kill").args(["-INT", pid]).status();
        for _ in 0..100 {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

#[test]
fn postgres_over_tls_checks_the_ca_and_for_verify_full_the_host_name() {
    let certs = Certs::make("pg");
    let Some(pg) = postgres(&certs, true) else {
        return;
    };
    let (ca, other) = (certs.path("ca.pem"), certs.path("other-ca.pem"));
    let url = |host: &str, query: &str| {
        format!("postgres://postgres@{host}:{}/postgres?{query}", pg.port)
    };
    let result = std::panic::catch_unwind(|| {
        works(&url(
            "127.0.0.1",
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        ));
        works(&url(
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        ));
        works(&url(
            "127.0.0.1",
            &format!("sslmode=verify-ca&sslrootcert={ca}"),
        ));
        works(&url("127.0.0.1", "sslmode=require"));
        // The wrong CA.
        let e = refused(&url(
            "127.0.0.1",
            &format!("sslmode=verify-ca&sslrootcert={other}"),
        ));
        assert_mentions(
            &e,
            &["TLS connection to 127.0.0.1:", "not signed by", &other],
        );
        // `require` with a CA file checks it, as libpq does.
        let e = refused(&url(
            "127.0.0.1",
            &format!("sslmode=require&sslrootcert={other}"),
        ));
        assert_mentions(&e, &["not signed by"]);
        // A host the certificate does not name: verify-ca takes it, verify-full does not.
        works(&url(
            "127.0.0.2",
            &format!("sslmode=verify-ca&sslrootcert={ca}"),
        ));
        let e = refused(&url(
            "127.0.0.2",
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        ));
        assert_mentions(&e, &["does not name the host", "127.0.0.2"]);
        // Modes that could fall back to plaintext, and a check without a CA file.
        let e = refused(&url("127.0.0.1", "sslmode=prefer"));
        assert_mentions(&e, &["sslmode=prefer may connect without TLS"]);
        let e = refused(&url("127.0.0.1", "sslmode=verify-full"));
        assert_mentions(&e, &["needs sslrootcert=PATH"]);
    });
    stop_postgres(&pg);
    result.unwrap();
}

#[test]
fn postgres_without_tls_is_refused_when_the_url_asks_for_it() {
    let certs = Certs::make("pg-plain");
    let Some(pg) = postgres(&certs, false) else {
        return;
    };
    let result = std::panic::catch_unwind(|| {
        let url = format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port);
        works(&url);
        let e = refused(&format!("{url}?sslmode=require"));
        assert_mentions(&e, &["does not accept TLS"]);
    });
    stop_postgres(&pg);
    result.unwrap();
}

fn mariadb(certs: &Certs, tls: bool) -> Option<Server> {
    if !available("MariaDB", "/usr/sbin/mariadbd") {
        return None;
    }
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("segflake-cli-tls-mariadb-{port}"));
    std::fs::create_dir_all(dir.join("data")).unwrap();
    // A temporary directory of its own: a starting server deletes the `#sql*` files of the
    // shared one, and with them another server's temporary tables.
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let tmpdir = format!("--tmpdir={}", dir.join("tmp").display());
    let out = Command::new("mariadb-install-db")
        .args(["--no-defaults", "--auth-root-authentication-method=normal"])
        .arg(format!("--user={}", whoami()))
        .arg(format!("--datadir={}", dir.join("data").display()))
        .arg(&tmpdir)
        .output()
        .expect("mariadb-install-db");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sock = dir.join("mysqld.sock");
    let mut cmd = Command::new("mariadbd");
    cmd.arg("--no-defaults")
        .arg(format!("--user={}", whoami()))
        .arg(format!("--datadir={}", dir.join("data").display()))
        .arg(&tmpdir)
        .arg(format!("--socket={}", sock.display()))
        .arg(format!("--port={port}"))
        .arg("--bind-address=127.0.0.1,127.0.0.2")
        .arg(format!("--pid-file={}", dir.join("mysqld.pid").display()))
        .arg("--skip-name-resolve");
    if tls {
        cmd.arg(format!("--ssl-cert={}", certs.path("server.pem")))
            .arg(format!("--ssl-key={}", certs.path("server.key")))
            .arg(format!("--ssl-ca={}", certs.path("ca.pem")));
    } else {
        cmd.arg("--skip-ssl");
    }
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mariadbd");
    wait_for_port(port);
    let out = Command::new("mariadb")
        .args(["--no-defaults", "-uroot"])
        .arg(format!("--socket={}", sock.display()))
        .arg("-e")
        .arg(
            "CREATE DATABASE segflake; \
             CREATE USER 'segflake'@'%' IDENTIFIED BY 'segflake'; \
             GRANT ALL ON segflake.* TO 'segflake'@'%';",
        )
        .output()
        .expect("mariadb");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(Server { child, port, dir })
}

fn whoami() -> String {
    Command::new("id")
        .arg("-un")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "root".into())
}

#[test]
fn mysql_over_tls_checks_the_ca_and_for_verify_identity_the_host_name() {
    let certs = Certs::make("mysql");
    let Some(db) = mariadb(&certs, true) else {
        return;
    };
    let (ca, other) = (certs.path("ca.pem"), certs.path("other-ca.pem"));
    let url = |host: &str, query: &str| {
        format!(
            "mysql://segflake:segflake@{host}:{}/segflake?{query}",
            db.port
        )
    };
    works(&url(
        "127.0.0.1",
        &format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
    ));
    works(&url(
        "localhost",
        &format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
    ));
    works(&url(
        "127.0.0.1",
        &format!("ssl-mode=VERIFY_CA&ssl-ca={ca}"),
    ));
    works(&url("127.0.0.1", &format!("ssl-ca={ca}")));
    works(&url("127.0.0.1", "ssl-mode=REQUIRED"));
    let e = refused(&url(
        "127.0.0.1",
        &format!("ssl-mode=VERIFY_CA&ssl-ca={other}"),
    ));
    assert_mentions(
        &e,
        &["TLS connection to 127.0.0.1:", "not signed by", &other],
    );
    works(&url(
        "127.0.0.2",
        &format!("ssl-mode=VERIFY_CA&ssl-ca={ca}"),
    ));
    let e = refused(&url(
        "127.0.0.2",
        &format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
    ));
    assert_mentions(&e, &["does not name the host", "127.0.0.2"]);
    let e = refused(&url("127.0.0.1", "ssl-mode=PREFERRED"));
    assert_mentions(&e, &["ssl-mode=PREFERRED may connect without TLS"]);
}

#[test]
fn mysql_without_tls_is_refused_when_the_url_asks_for_it() {
    let certs = Certs::make("mysql-plain");
    let Some(db) = mariadb(&certs, false) else {
        return;
    };
    let url = format!("mysql://segflake:segflake@127.0.0.1:{}/segflake", db.port);
    works(&url);
    let e = refused(&format!("{url}?ssl-mode=REQUIRED"));
    assert_mentions(&e, &["does not accept TLS"]);
}

#[test]
fn rediss_checks_the_ca_and_the_host_name() {
    let certs = Certs::make("redis");
    let Some(redis) = redis(Some(&certs.tls())) else {
        return;
    };
    let url = |host: &str, ca: &str| format!("rediss://{host}:{}/0?ca={ca}", redis.port);
    checks_the_ca_and_the_host_name(&certs, url, true);
    let ca = certs.path("ca.pem");
    // The serial counter takes the same URLs.
    let out = Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args([
            "serial",
            "--counter",
            &url("127.0.0.1", &ca),
            "--count",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}

#[test]
fn rediss_to_a_plaintext_redis_fails_and_redis_urls_refuse_a_ca_file() {
    let certs = Certs::make("redis-plain");
    let Some(redis) = redis(None) else {
        return;
    };
    let ca = certs.path("ca.pem");
    works(&format!("redis://127.0.0.1:{}/0", redis.port));
    // A plaintext server never answers the TLS handshake: the call ends at its timeout.
    let out = Command::new(env!("CARGO_BIN_EXE_segflake"))
        .args(["serial", "--counter-timeout-ms", "500", "--counter"])
        .arg(format!("rediss://127.0.0.1:{}/0?ca={ca}", redis.port))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert_mentions(
        &e,
        &["TLS connection to 127.0.0.1:", "no TLS handshake within"],
    );
    let e = refused(&format!("redis://127.0.0.1:{}/0?ca={ca}", redis.port));
    assert_mentions(&e, &["use rediss://"]);
}

/// The checks every TLS URL passes: the right CA works (by address and by name), a CA that
/// did not sign the server's certificate is refused saying so, and (`name_check`, where the
/// server also listens on 127.0.0.2) an address the certificate does not name is refused
/// saying so.
fn checks_the_ca_and_the_host_name(
    certs: &Certs,
    url: impl Fn(&str, &str) -> String,
    name_check: bool,
) {
    let (ca, other) = (certs.path("ca.pem"), certs.path("other-ca.pem"));
    until_ready(&url("127.0.0.1", &ca));
    works(&url("localhost", &ca));
    let e = refused(&url("127.0.0.1", &other));
    assert_mentions(
        &e,
        &["TLS connection to 127.0.0.1:", "not signed by", &other],
    );
    if name_check {
        let e = refused(&url("127.0.0.2", &ca));
        assert_mentions(&e, &["does not name the host", "127.0.0.2"]);
    }
}

/// Waits until `url` works: a new etcd accepts connections before it has elected itself
/// leader, and answers no request until then.
fn until_ready(url: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !next(url).status.success() {
        assert!(std::time::Instant::now() < deadline, "{url} never worked");
    }
    works(url);
}

#[test]
fn etcd_over_tls_checks_the_ca_and_the_host_name_and_never_falls_back_to_plaintext() {
    let certs = Certs::make("etcd");
    let Some(secure) = etcd(Some(&certs.tls())) else {
        return;
    };
    let url = |host: &str, ca: &str| format!("etcd+tls://{host}:{}/tls?ca={ca}", secure.port);
    checks_the_ca_and_the_host_name(&certs, url, true);
    let ca = certs.path("ca.pem");
    // `tls=true` asks for TLS as `+tls` does.
    works(&format!(
        "etcd://127.0.0.1:{}/tls?tls=true&ca={ca}",
        secure.port
    ));
    // A plaintext URL to the TLS port fails rather than reaching etcd.
    refused(&format!("etcd://127.0.0.1:{}/tls", secure.port));

    let Some(plain) = etcd(None) else {
        return;
    };
    until_ready(&format!("etcd://127.0.0.1:{}/tls", plain.port));
    let e = refused(&format!("etcd+tls://127.0.0.1:{}/tls?ca={ca}", plain.port));
    assert_mentions(
        &e,
        &["TLS connection to 127.0.0.1:", "not accept TLS connections"],
    );
    let e = refused(&format!("etcd://127.0.0.1:{}/tls?ca={ca}", plain.port));
    assert_mentions(&e, &["use etcd+tls://"]);
}

#[test]
fn zookeeper_over_tls_checks_the_ca_and_never_falls_back_to_plaintext() {
    let certs = Certs::make("zk");
    let Some(secure) = zookeeper(Some(&certs.tls())) else {
        return;
    };
    let url = |host: &str, ca: &str| {
        format!(
            "zk+tls://{host}:{}/snowflake/tls?identity=127.0.0.1:9&ca={ca}",
            secure.port
        )
    };
    // ZooKeeper listens on one address: the name check is the same rustls check as above.
    checks_the_ca_and_the_host_name(&certs, url, false);
    let ca = certs.path("ca.pem");
    // A plaintext URL to the TLS port never gets a session.
    refused(&format!(
        "zk://127.0.0.1:{}/snowflake/tls?identity=127.0.0.1:9",
        secure.port
    ));

    let Some(plain) = zookeeper(None) else {
        return;
    };
    let plain_url = |scheme: &str| {
        format!(
            "{scheme}://127.0.0.1:{}/snowflake/tls?identity=127.0.0.1:9",
            plain.port
        )
    };
    until_ready(&plain_url("zk"));
    let e = refused(&format!("{}&ca={ca}", plain_url("zk+tls")));
    assert_mentions(&e, &["TLS connection to 127.0.0.1:"]);
}
