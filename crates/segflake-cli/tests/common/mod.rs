//! What the tests that start servers share: free ports, waiting for a port, a child
//! process on a throwaway directory that is killed (and its directory removed) on drop, and
//! a minimal HTTP client.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Waits until something accepts connections on `port` of the loopback (at most 30 s).
pub fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "no server on port {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A server process on a throwaway directory, listening on `port`; killed on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub dir: PathBuf,
}

// Each test binary compiles this module and uses part of it.
#[allow(dead_code)]
impl Server {
    /// `127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// Whether `path` (a server's program or jar) is installed; without CI a missing one skips
/// the test with a notice, under CI it fails it (scripts/test-rust.sh installs them all).
#[allow(dead_code)]
pub fn available(what: &str, path: &str) -> bool {
    if std::path::Path::new(path).exists() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is missing ({path}); scripts/test-rust.sh installs it"
    );
    eprintln!("skipped: {what} is not installed ({path})");
    false
}

/// The server `cmd` starts (its output discarded), once it accepts connections on `port`.
#[allow(dead_code)]
pub fn start(cmd: &mut Command, port: u16, dir: PathBuf) -> Server {
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    wait_for_port(port);
    Server { child, port, dir }
}

/// A server's certificate and key (PEM files) and the CA that signed it.
#[allow(dead_code)]
pub struct Tls {
    pub cert: String,
    pub key: String,
    pub ca: String,
}

/// Redis on 127.0.0.1 and 127.0.0.2, without persistence; with `tls` only TLS.
#[allow(dead_code)]
pub fn redis(tls: Option<&Tls>) -> Option<Server> {
    if !available("Redis", "/usr/bin/redis-server") {
        return None;
    }
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("segflake-cli-redis-{port}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = Command::new("redis-server");
    cmd.args(["--bind", "127.0.0.1", "127.0.0.2", "--save", ""])
        .arg("--dir")
        .arg(&dir);
    match tls {
        Some(tls) => cmd
            .args(["--port", "0", "--tls-port", &port.to_string()])
            .args(["--tls-cert-file", &tls.cert, "--tls-key-file", &tls.key])
            .args(["--tls-ca-cert-file", &tls.ca, "--tls-auth-clients", "no"]),
        None => cmd.args(["--port", &port.to_string()]),
    };
    Some(start(&mut cmd, port, dir))
}

/// etcd on 127.0.0.1 and 127.0.0.2, over https with `tls`.
#[allow(dead_code)]
pub fn etcd(tls: Option<&Tls>) -> Option<Server> {
    if !available("etcd", "/usr/bin/etcd") {
        return None;
    }
    let (port, peer) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("segflake-cli-etcd-{port}"));
    let scheme = if tls.is_some() { "https" } else { "http" };
    let peer_url = format!("http://127.0.0.1:{peer}");
    let mut cmd = Command::new("etcd");
    cmd.arg("--data-dir").arg(&dir).args([
        "--listen-client-urls",
        &format!("{scheme}://127.0.0.1:{port},{scheme}://127.0.0.2:{port}"),
        "--advertise-client-urls",
        &format!("{scheme}://127.0.0.1:{port}"),
        "--listen-peer-urls",
        &peer_url,
        "--initial-advertise-peer-urls",
        &peer_url,
        "--initial-cluster",
        &format!("default={peer_url}"),
    ]);
    if let Some(tls) = tls {
        cmd.args(["--cert-file", &tls.cert, "--key-file", &tls.key]);
    }
    Some(start(&mut cmd, port, dir))
}

/// The classpath of Debian's ZooKeeper server.
const ZK_CLASSPATH: &str = "/usr/share/java/*:/usr/share/zookeeper/*:/etc/zookeeper/conf";

/// ZooKeeper on 127.0.0.1: plaintext, or with `tls` only TLS (Netty, `secureClientPort`, a
/// PEM key store).
#[allow(dead_code)]
pub fn zookeeper(tls: Option<&Tls>) -> Option<Server> {
    if !available("ZooKeeper", "/usr/share/java/zookeeper.jar") {
        return None;
    }
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("segflake-cli-zk-{port}"));
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let mut config = format!(
        "tickTime=200\ninitLimit=10\nsyncLimit=5\ndataDir={}\nadmin.enableServer=false\n",
        dir.join("data").display()
    );
    match tls {
        Some(tls) => {
            let key_store = dir.join("keystore.pem");
            let pem = std::fs::read_to_string(&tls.key).unwrap()
                + &std::fs::read_to_string(&tls.cert).unwrap();
            std::fs::write(&key_store, pem).unwrap();
            config += &format!(
                "secureClientPort={port}\nsecureClientPortAddress=127.0.0.1\n\
                 serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory\n\
                 ssl.keyStore.location={}\nssl.keyStore.type=PEM\n\
                 ssl.trustStore.location={}\nssl.trustStore.type=PEM\nssl.clientAuth=none\n",
                key_store.display(),
                tls.ca
            );
        }
        None => config += &format!("clientPort={port}\nclientPortAddress=127.0.0.1\n"),
    }
    std::fs::write(dir.join("zoo.cfg"), config).unwrap();
    let mut cmd = Command::new("java");
    cmd.args(["-cp", ZK_CLASSPATH])
        .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
        .arg(dir.join("zoo.cfg"));
    Some(start(&mut cmd, port, dir))
}

/// The programs of the newest PostgreSQL installed (`initdb`, `pg_ctl`, `psql`).
#[allow(dead_code)]
pub fn postgres_bin() -> PathBuf {
    std::fs::read_dir("/usr/lib/postgresql")
        .unwrap()
        .map(|e| e.unwrap().path().join("bin"))
        .max()
        .unwrap()
}

/// PostgreSQL on 127.0.0.1 and 127.0.0.2 (user `postgres`, trusted), with `tls` also TLS;
/// stop it with [`stop_postgres`] (its postmaster runs as a daemon).
#[allow(dead_code)]
pub fn postgres(tls: Option<&Tls>) -> Option<Server> {
    if !available("PostgreSQL", "/usr/lib/postgresql") {
        return None;
    }
    let bin = postgres_bin();
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("segflake-cli-pg-{port}"));
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
    if let Some(tls) = tls {
        std::fs::copy(&tls.cert, dir.join("server.pem")).unwrap();
        std::fs::copy(&tls.key, dir.join("server.key")).unwrap();
    }
    if root {
        as_postgres(
            Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir),
        );
        as_postgres(Command::new("chmod").arg("755").arg(&dir));
    }
    if tls.is_some() {
        as_postgres(Command::new("chmod").arg("600").arg(dir.join("server.key")));
    }
    as_postgres(
        runuser(bin.join("initdb"))
            .args(["-A", "trust", "-U", "postgres", "-D"])
            .arg(dir.join("data")),
    );
    let mut options = format!(
        "-p {port} -k {} -c listen_addresses=127.0.0.1,127.0.0.2 -c fsync=off",
        dir.join("sock").display()
    );
    if tls.is_some() {
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

#[allow(dead_code)]
fn nix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Stops a PostgreSQL server started by [`postgres`] (before its directory goes).
#[allow(dead_code)]
pub fn stop_postgres(server: &Server) {
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

/// MariaDB on 127.0.0.1 and 127.0.0.2 with the database `segflake` and the user
/// `segflake` (password `segflake`, all privileges on it); with `tls` also TLS.
#[allow(dead_code)]
pub fn mariadb(tls: Option<&Tls>) -> Option<Server> {
    if !available("MariaDB", "/usr/sbin/mariadbd") {
        return None;
    }
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("segflake-cli-mariadb-{port}"));
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
    if let Some(tls) = tls {
        cmd.arg(format!("--ssl-cert={}", tls.cert))
            .arg(format!("--ssl-key={}", tls.key))
            .arg(format!("--ssl-ca={}", tls.ca));
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

#[allow(dead_code)]
fn whoami() -> String {
    Command::new("id")
        .arg("-un")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|_| "root".into())
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

// Each test binary compiles this module and uses part of it.
#[allow(dead_code)]
mod http {
    use super::*;

    pub struct Reply {
        pub status: u16,
        /// The status line and headers, lower-cased.
        pub head: String,
        pub body: String,
    }

    impl Reply {
        pub fn json(&self) -> serde_json::Value {
            serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
        }

        pub fn code(&self) -> String {
            self.json()["code"].as_str().unwrap_or_default().to_string()
        }
    }

    /// One HTTP/1.1 request on a new connection to 127.0.0.1:`port`.
    pub fn request(port: u16, method: &str, path: &str, headers: &[&str]) -> Reply {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut req =
            format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
        for h in headers {
            req.push_str(h);
            req.push_str("\r\n");
        }
        req.push_str("\r\n");
        s.write_all(req.as_bytes()).unwrap();
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").expect("a complete response");
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        Reply {
            status,
            head: head.to_ascii_lowercase(),
            body: body.to_string(),
        }
    }

    pub fn get(port: u16, path: &str) -> Reply {
        request(port, "GET", path, &[])
    }
}
#[allow(unused_imports)]
pub use http::{get, request, Reply};
