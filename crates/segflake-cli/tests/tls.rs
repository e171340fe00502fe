//! TLS to real servers started here with certificates made here (openssl): a CA, a server
//! certificate it signs for `DNS:localhost,IP:127.0.0.1`, and a second, unrelated CA. The
//! right CA works, the wrong one is refused with an error naming the certificate problem,
//! the host-name check of `verify-full`/`VERIFY_IDENTITY`/`rediss://` is real (the server
//! also listens on 127.0.0.2, a name its certificate lacks), and a URL asking for TLS never
//! falls back to plaintext. scripts/test-rust.sh installs the servers; without CI they are
//! skipped with a notice when absent.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

mod common;
use common::{etcd, free_port, mariadb, postgres, redis, stop_postgres, zookeeper, Tls};

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

#[test]
fn postgres_over_tls_checks_the_ca_and_for_verify_full_the_host_name() {
    let certs = Certs::make("pg");
    let Some(pg) = postgres(Some(&certs.tls())) else {
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
    let Some(pg) = postgres(None) else {
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

#[test]
fn mysql_over_tls_checks_the_ca_and_for_verify_identity_the_host_name() {
    let certs = Certs::make("mysql");
    let Some(db) = mariadb(Some(&certs.tls())) else {
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
    let Some(db) = mariadb(None) else {
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
