//! `segflake serve` on an untrusted network, against the real server with certificates
//! made afresh (tests/tls/make-certs.sh): TLS on HTTP/1.1, HTTP/2 and gRPC; the client's
//! refusals (wrong CA, expired certificate, a name not in it); a plaintext client on the
//! TLS port; mutual TLS (a certificate missing, untrusted, expired, or trusted but not
//! allowed for the key); HTTP and gRPC on one port; reflection v1alpha; tokens given as
//! digests and files; reloads of keys, tokens and certificates, and a broken config
//! refused while the old one serves.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};

mod common;
use common::{free_port, wait_for_port, Server};

/// The certificates, made once per test binary.
fn certs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("segflake-serve-tls-{}", std::process::id()));
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/tls/make-certs.sh");
        let ok = Command::new("bash")
            .arg(script)
            .arg(&dir)
            .status()
            .expect("bash runs");
        assert!(ok.success(), "make-certs.sh failed");
        dir
    })
}

fn cert(name: &str) -> String {
    certs().join(name).display().to_string()
}

/// A fresh directory for test `name`'s server.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("segflake-tls-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `segflake serve --listen 127.0.0.1:PORT` with a file store in `dir`, then `args`, its
/// log in `dir`/serve.log; started from `/`, so only the paths it is given count.
fn start(dir: PathBuf, port: u16, args: &[&OsStr]) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_segflake"))
        .current_dir("/")
        .arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--store")
        .arg(format!("file:{}", dir.join("ids.txt").display()))
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("serve.log")).unwrap())
        .spawn()
        .expect("segflake serve starts");
    let server = Server { child, port, dir };
    wait_for_port(port);
    server
}

/// `segflake serve` with a file store, TLS from `server` (server.pem, server-expired.pem,
/// …), `args`, and `config` written to serve.toml in its directory.
fn serve(name: &str, server: &str, args: &[&str], config: &str) -> Server {
    let dir = fresh_dir(name);
    let (crt, key, toml) = (
        dir.join("tls.crt"),
        dir.join("tls.key"),
        dir.join("serve.toml"),
    );
    // The server's own copies, which a test may replace (a rotation).
    std::fs::copy(cert(&format!("{server}.pem")), &crt).unwrap();
    std::fs::copy(cert(&format!("{server}.key")), &key).unwrap();
    std::fs::write(&toml, config).unwrap();
    let mut all: Vec<&OsStr> = vec![
        "--tls-cert".as_ref(),
        crt.as_ref(),
        "--tls-key".as_ref(),
        key.as_ref(),
        "--config".as_ref(),
        toml.as_ref(),
    ];
    all.extend(args.iter().map(OsStr::new));
    start(dir, free_port(), &all)
}

/// A client that trusts `ca` (a file of certs()) and presents `identity` (NAME.pem and
/// NAME.key), offering `alpn`.
fn client(ca: &str, identity: Option<&str>, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(cert(ca)).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let mut config = match identity {
        None => builder.with_no_client_auth(),
        Some(name) => {
            let chain = CertificateDer::pem_file_iter(cert(&format!("{name}.pem")))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let key = PrivateKeyDer::from_pem_file(cert(&format!("{name}.key"))).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

const H1: &[&[u8]] = &[b"http/1.1"];
const H2: &[&[u8]] = &[b"h2"];

/// What came back: status, content-type, body, grpc-status (from the trailers or head).
#[derive(Debug)]
struct Answer {
    status: u16,
    body: Bytes,
    grpc_status: Option<String>,
    /// The server certificate the handshake showed.
    server_cert: Vec<u8>,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn code(&self) -> String {
        let v: serde_json::Value = serde_json::from_slice(&self.body).unwrap_or_default();
        v["code"].as_str().unwrap_or_default().to_string()
    }
}

/// One request over a new TLS connection to 127.0.0.1:`port`, verified as `name`.
async fn call(
    port: u16,
    name: &str,
    config: Arc<rustls::ClientConfig>,
    req: Request<Full<Bytes>>,
) -> Result<Answer, String> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let h2 = config.alpn_protocols == [b"h2".to_vec()];
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(ServerName::try_from(name.to_string()).unwrap(), tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let server_cert = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
    let io = TokioIo::new(tls);
    let response = if h2 {
        let (mut send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| format!("h2: {e}"))?;
        tokio::spawn(conn);
        send.send_request(req).await
    } else {
        let (mut send, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| format!("http/1.1: {e}"))?;
        tokio::spawn(conn);
        send.send_request(req).await
    }
    .map_err(|e| format!("request: {e:?}"))?;
    let status = response.status().as_u16();
    let head_grpc = response
        .headers()
        .get("grpc-status")
        .map(|v| v.to_str().unwrap().to_string());
    let collected = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?;
    let grpc_status = collected
        .trailers()
        .and_then(|t| t.get("grpc-status"))
        .map(|v| v.to_str().unwrap().to_string())
        .or(head_grpc);
    Ok(Answer {
        status,
        body: collected.to_bytes(),
        grpc_status,
        server_cert,
    })
}

fn get(path: &str, headers: &[(&str, &str)]) -> Request<Full<Bytes>> {
    let mut r = Request::get(format!("https://localhost{path}"));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.body(Full::default()).unwrap()
}

/// A gRPC unary call: `message` (protobuf bytes) framed, posted to `method`.
fn grpc(method: &str, message: &[u8], token: Option<&str>) -> Request<Full<Bytes>> {
    let mut frame = vec![0u8];
    frame.extend_from_slice(&(message.len() as u32).to_be_bytes());
    frame.extend_from_slice(message);
    let mut r = Request::post(format!("https://localhost{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(t) = token {
        r = r.header("authorization", format!("Bearer {t}"));
    }
    r.body(Full::new(Bytes::from(frame))).unwrap()
}

/// `IdsRequest { key, count }` of proto/segflake/v1/segflake.proto.
fn ids_request(key: &str, count: u8) -> Vec<u8> {
    let mut m = vec![0x0a, key.len() as u8];
    m.extend_from_slice(key.as_bytes());
    m.extend_from_slice(&[0x10, count]);
    m
}

/// The IDs of an `Ids` answer (field 2, packed fixed64), from its gRPC frame.
fn ids_of(body: &[u8]) -> Vec<u64> {
    assert!(body.len() >= 5, "no gRPC frame: {body:?}");
    let m = &body[5..];
    let mut i = 0;
    let mut ids = Vec::new();
    while i < m.len() {
        let (tag, len) = (m[i], m[i + 1] as usize);
        assert!(len < 128, "short fields only");
        if tag == 0x12 {
            ids.extend(
                m[i + 2..i + 2 + len]
                    .chunks(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap())),
            );
        }
        i += 2 + len;
    }
    ids
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The value of `series` on `/metrics` (0 while it is absent), or `None` when the request
/// fails.
async fn metric(port: u16, config: Arc<rustls::ClientConfig>, series: &str) -> Option<u64> {
    let m = call(port, "localhost", config, get("/metrics", &[]))
        .await
        .ok()?;
    Some(
        m.text()
            .lines()
            .find_map(|l| l.strip_prefix(series)?.trim().parse::<u64>().ok())
            .unwrap_or(0),
    )
}

/// Polls `/metrics` (over TLS) until the sample `series` is at least `n` (a reload is
/// asynchronous, and a file change and a SIGHUP may both reload).
async fn wait_for_metric(port: u16, config: Arc<rustls::ClientConfig>, series: &str, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let value = metric(port, config.clone(), series).await;
        if value.is_some_and(|v| v >= n) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{series} never reached {n}: {value:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Replaces `path`'s contents at once, as a Secret's or ConfigMap's files are swapped: a
/// reader sees the old file or the new one, never a part.
fn replace(path: &Path, contents: &[u8]) {
    let next = path.with_extension("next");
    std::fs::write(&next, contents).unwrap();
    std::fs::rename(&next, path).unwrap();
}

#[test]
fn https_serves_leaf_tinyid_and_grpc_over_http1_and_http2_and_refuses_plaintext() {
    let s = serve("paths", "server", &["--worker", "3"], "");
    runtime().block_on(async {
        let ca = || client("ca.pem", None, H1);
        let a = call(
            s.port,
            "localhost",
            ca(),
            get("/api/segment/get/order", &[]),
        )
        .await
        .unwrap();
        assert_eq!((a.status, a.text()), (200, "1".to_string()));
        let a = call(
            s.port,
            "127.0.0.1",
            client("ca.pem", None, H2),
            get("/api/segment/get/order", &[]),
        )
        .await
        .unwrap();
        assert_eq!(
            (a.status, a.text()),
            (200, "2".to_string()),
            "HTTP/2 by ALPN"
        );
        let a = call(
            s.port,
            "localhost",
            ca(),
            get("/tinyid/id/nextIdSimple?bizType=order&batchSize=2", &[]),
        )
        .await
        .unwrap();
        assert_eq!((a.status, a.text()), (200, "3,4".to_string()));
        let a = call(s.port, "localhost", ca(), get("/api/snowflake/get/x", &[]))
            .await
            .unwrap();
        assert_eq!(a.status, 200, "{}", a.text());
    });
    // A plaintext client on the TLS port: a 400 that says what to do, and the end.
    let r = common::request(s.port, "GET", "/api/segment/get/order", &[]);
    assert_eq!((r.status, r.code()), (400, "TLS_REQUIRED".to_string()));
    assert!(r.body.contains("https://"), "{}", r.body);
}

#[test]
fn clients_refuse_a_wrong_ca_an_expired_certificate_and_a_name_not_in_it() {
    let s = serve("refusals", "server", &["--worker", "3"], "");
    let expired = serve("expired", "server-expired", &["--worker", "3"], "");
    runtime().block_on(async {
        let path = || get("/healthz", &[]);
        let e = call(
            s.port,
            "localhost",
            client("other-ca.pem", None, H1),
            path(),
        )
        .await
        .unwrap_err();
        assert!(e.contains("UnknownIssuer"), "{e}");
        let e = call(s.port, "wrong.example", client("ca.pem", None, H1), path())
            .await
            .unwrap_err();
        assert!(e.contains("not valid for name \"wrong.example\""), "{e}");
        let e = call(
            expired.port,
            "localhost",
            client("ca.pem", None, H1),
            path(),
        )
        .await
        .unwrap_err();
        assert!(e.to_lowercase().contains("expired"), "{e}");
        // The right CA and name: served.
        let a = call(s.port, "127.0.0.1", client("ca.pem", None, H1), path())
            .await
            .unwrap();
        assert_eq!(a.status, 200);
    });
}

const MTLS_KEYS: &str = r#"
[keys.order]
clients = ["order-svc"]
[keys.both]
clients = ["spiffe://segflake.test/order"]
tokens = ["s3cret"]
[keys.open]
"#;

#[test]
fn mutual_tls_checks_the_certificate_and_each_keys_clients() {
    let ca = cert("ca.pem");
    let s = serve(
        "mtls",
        "server",
        &["--tls-client-ca", &ca, "--access-log"],
        MTLS_KEYS,
    );
    runtime().block_on(async {
        let order = || client("ca.pem", Some("order"), H1);
        let key = |k: &str| get(&format!("/api/segment/get/{k}"), &[]);
        // Missing, untrusted and expired client certificates fail the handshake (the
        // server's alert arrives with the first read).
        for who in [None, Some("stranger"), Some("client-expired")] {
            let e = call(s.port, "localhost", client("ca.pem", who, H1), key("open")).await;
            assert!(e.is_err(), "{who:?}: {e:?}");
        }
        let a = call(s.port, "localhost", order(), key("order"))
            .await
            .unwrap();
        assert_eq!((a.status, a.text()), (200, "1".to_string()));
        let billing = client("ca.pem", Some("billing"), H1);
        let a = call(s.port, "localhost", billing.clone(), key("order"))
            .await
            .unwrap();
        assert_eq!((a.status, a.code()), (403, "FORBIDDEN".to_string()));
        assert!(a.text().contains("billing-svc"), "{}", a.text());
        let a = call(s.port, "localhost", billing, key("open"))
            .await
            .unwrap();
        assert_eq!(
            a.status, 200,
            "a key without clients takes any trusted client"
        );
        // Both listed: the client (by its URI subjectAltName) and the token.
        let a = call(s.port, "localhost", order(), key("both"))
            .await
            .unwrap();
        assert_eq!((a.status, a.code()), (401, "UNAUTHORIZED".to_string()));
        let token = get(
            "/api/segment/get/both",
            &[("authorization", "Bearer s3cret")],
        );
        let a = call(s.port, "localhost", order(), token).await.unwrap();
        assert_eq!(a.status, 200, "{}", a.text());
        // gRPC over the same mutual TLS (its own port is tested below): by ALPN h2.
        let m = call(s.port, "localhost", order(), get("/metrics", &[]))
            .await
            .unwrap();
        assert!(
            m.text()
                .contains("segflake_client_requests_total{client=\"order-svc\"}"),
            "{}",
            m.text()
        );
        assert!(m
            .text()
            .contains("segflake_client_requests_total{client=\"other\"}"));
    });
    // The access log names the client of each request, and never a token.
    let log = std::fs::read_to_string(s.dir.join("serve.log")).unwrap();
    assert!(
        log.contains(r#""path":"/api/segment/get/order","status":"200","client":"order-svc""#),
        "{log}"
    );
    assert!(
        log.contains(r#""path":"/api/segment/get/order","status":"403","client":"billing-svc""#),
        "{log}"
    );
    assert!(!log.contains("s3cret"), "{log}");
    // Optional client certificates: a client without one connects; keys with clients
    // refuse it.
    let s = serve(
        "mtls-optional",
        "server",
        &["--tls-client-ca", &ca, "--tls-client-auth", "optional"],
        MTLS_KEYS,
    );
    runtime().block_on(async {
        let anonymous = || client("ca.pem", None, H1);
        let a = call(
            s.port,
            "localhost",
            anonymous(),
            get("/api/segment/get/open", &[]),
        )
        .await
        .unwrap();
        assert_eq!(a.status, 200);
        let a = call(
            s.port,
            "localhost",
            anonymous(),
            get("/api/segment/get/order", &[]),
        )
        .await
        .unwrap();
        assert_eq!((a.status, a.code()), (401, "UNAUTHORIZED".to_string()));
        assert!(a.text().contains("client certificate"), "{}", a.text());
    });
}

#[test]
fn grpc_over_tls_on_its_own_port_and_beside_http_on_one_port_with_reflection_v1alpha() {
    let ca = cert("ca.pem");
    let grpc_port = free_port();
    let own = format!("127.0.0.1:{grpc_port}");
    let s = serve(
        "grpc",
        "server",
        &[
            "--tls-client-ca",
            &ca,
            "--grpc-listen",
            &own,
            "--worker",
            "2",
        ],
        MTLS_KEYS,
    );
    wait_for_port(grpc_port);
    let next = "/segflake.v1.Segflake/NextSegmentIds";
    runtime().block_on(async {
        let order = || client("ca.pem", Some("order"), H2);
        let a = call(
            grpc_port,
            "localhost",
            order(),
            grpc(next, &ids_request("order", 3), None),
        )
        .await
        .unwrap();
        assert_eq!(a.grpc_status.as_deref(), Some("0"), "{a:?}");
        assert_eq!(ids_of(&a.body), [1, 2, 3]);
        let billing = client("ca.pem", Some("billing"), H2);
        let a = call(
            grpc_port,
            "localhost",
            billing,
            grpc(next, &ids_request("order", 1), None),
        )
        .await
        .unwrap();
        assert_eq!(
            a.grpc_status.as_deref(),
            Some("7"),
            "PERMISSION_DENIED: {a:?}"
        );
        let a = call(
            grpc_port,
            "localhost",
            order(),
            grpc(next, &ids_request("both", 1), Some("s3cret")),
        )
        .await
        .unwrap();
        assert_eq!(ids_of(&a.body), [1]);
    });
    drop(s);
    // One port: the --listen address for gRPC too.
    let port = free_port();
    let (server_pem, server_key) = (cert("server.pem"), cert("server.key"));
    let _s = start(
        fresh_dir("oneport"),
        port,
        &[
            "--grpc-listen".as_ref(),
            format!("127.0.0.1:{port}").as_ref(),
            "--worker".as_ref(),
            "2".as_ref(),
            "--tls-cert".as_ref(),
            server_pem.as_ref(),
            "--tls-key".as_ref(),
            server_key.as_ref(),
        ],
    );
    runtime().block_on(async {
        let h2 = || client("ca.pem", None, H2);
        let a = call(
            port,
            "localhost",
            h2(),
            grpc(next, &ids_request("k", 2), None),
        )
        .await
        .unwrap();
        assert_eq!(ids_of(&a.body), [1, 2]);
        let a = call(port, "localhost", h2(), get("/api/segment/get/k", &[]))
            .await
            .unwrap();
        assert_eq!(
            (a.status, a.text()),
            (200, "3".to_string()),
            "HTTP/2, not gRPC"
        );
        let a = call(
            port,
            "localhost",
            client("ca.pem", None, H1),
            get("/api/segment/get/k", &[]),
        )
        .await
        .unwrap();
        assert_eq!((a.status, a.text()), (200, "4".to_string()), "HTTP/1.1");
        // ServerReflectionRequest { list_services: "" } to both versions.
        for version in ["v1", "v1alpha"] {
            let method =
                format!("/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo");
            let a = call(port, "localhost", h2(), grpc(&method, &[0x3a, 0x00], None))
                .await
                .unwrap();
            assert_eq!(a.grpc_status.as_deref(), Some("0"), "{version}: {a:?}");
            assert!(
                a.text().contains("segflake.v1.Segflake"),
                "{version}: {:?}",
                a.text()
            );
        }
    });
}

#[test]
fn the_config_files_relative_paths_are_taken_from_its_directory() {
    let port = free_port();
    let dir = fresh_dir("relative");
    std::fs::create_dir_all(dir.join("tls")).unwrap();
    std::fs::copy(cert("server.pem"), dir.join("tls/server.crt")).unwrap();
    std::fs::copy(cert("server.key"), dir.join("tls/server.key")).unwrap();
    std::fs::write(dir.join("pay.tokens"), "pay-token\n").unwrap();
    std::fs::write(
        dir.join("serve.toml"),
        "[tls]\ncert = \"tls/server.crt\"\nkey = \"tls/server.key\"\n\
         [keys.pay]\ntokens = [\"file:pay.tokens\"]\n",
    )
    .unwrap();
    // Started from `/`: the paths are the config's, not the working directory's.
    let config = dir.join("serve.toml");
    let _s = start(dir, port, &["--config".as_ref(), config.as_ref()]);
    runtime().block_on(async {
        let ca = || client("ca.pem", None, H1);
        let as_pay = |t: &str| {
            get(
                "/api/segment/get/pay",
                &[("authorization", &format!("Bearer {t}"))],
            )
        };
        let a = call(port, "localhost", ca(), as_pay("pay-token"))
            .await
            .unwrap();
        assert_eq!((a.status, a.text()), (200, "1".to_string()));
        let a = call(port, "localhost", ca(), as_pay("other"))
            .await
            .unwrap();
        assert_eq!(a.status, 403);
    });
}

const APPLIED: &str = "segflake_reloads_total{result=\"applied\"}";
const REFUSED: &str = "segflake_reloads_total{result=\"refused\"}";

#[test]
fn a_reload_swaps_tokens_keys_and_certificates_and_refuses_a_broken_config() {
    let sha = |t: &str| {
        use sha2::Digest;
        let d = sha2::Sha256::digest(t.as_bytes());
        format!(
            "sha256:{}",
            d.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    };
    let config = format!(
        "[keys.pay]\ntokens = [\"{}\"]\n[keys.gone]\n",
        sha("old-token")
    );
    let s = serve("reload", "server", &["--step", "100"], &config);
    let pid = s.child.id().to_string();
    runtime().block_on(async {
        let ca = || client("ca.pem", None, H1);
        let as_pay = |t: &str| {
            get(
                "/api/segment/get/pay",
                &[("authorization", &format!("Bearer {t}"))],
            )
        };
        let a = call(s.port, "localhost", ca(), as_pay("old-token"))
            .await
            .unwrap();
        assert_eq!((a.status, a.text()), (200, "1".to_string()));
        for expected in 1..=5 {
            let a = call(s.port, "localhost", ca(), get("/api/segment/get/gone", &[]))
                .await
                .unwrap();
            assert_eq!(a.text(), expected.to_string());
        }
        // The token moves to a file; "gone" is removed, "new" added; SIGHUP.
        let tokens = s.dir.join("pay.tokens");
        replace(&tokens, format!("# pay\n{}\n", sha("new-token")).as_bytes());
        let good_config = format!(
            "[keys.pay]\ntokens = [\"file:{}\"]\n[keys.new]\n",
            tokens.display()
        );
        replace(&s.dir.join("serve.toml"), good_config.as_bytes());
        let hup = Command::new("kill").args(["-HUP", &pid]).status().unwrap();
        assert!(hup.success());
        wait_for_metric(s.port, ca(), APPLIED, 1).await;
        let a = call(s.port, "localhost", ca(), as_pay("old-token"))
            .await
            .unwrap();
        assert_eq!(
            (a.status, a.code()),
            (403, "FORBIDDEN".to_string()),
            "the old token"
        );
        let a = call(s.port, "localhost", ca(), as_pay("new-token"))
            .await
            .unwrap();
        assert_eq!((a.status, a.text()), (200, "2".to_string()));
        let a = call(s.port, "localhost", ca(), get("/api/segment/get/gone", &[]))
            .await
            .unwrap();
        assert_eq!((a.status, a.code()), (404, "UNKNOWN_TAG".to_string()));
        let a = call(s.port, "localhost", ca(), get("/api/segment/get/new", &[]))
            .await
            .unwrap();
        assert_eq!((a.status, a.text()), (200, "1".to_string()));
        // The removed key's unissued IDs went back to the store: its row is at 6 again.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let rows = std::fs::read_to_string(s.dir.join("ids.txt")).unwrap();
            let last = rows
                .lines()
                .rev()
                .find(|l| l.contains(" gone "))
                .unwrap_or("")
                .to_string();
            if last.starts_with("+ gone 6 ") {
                break;
            }
            assert!(Instant::now() < deadline, "not given back: {rows}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // A rotated token file alone triggers a reload (no SIGHUP).
        replace(&tokens, b"third-token\n");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let a = call(s.port, "localhost", ca(), as_pay("third-token"))
                .await
                .unwrap();
            if a.status == 200 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the rotated token is refused: {}",
                a.text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // A rotated certificate: new connections get it, without a signal.
        let before = call(s.port, "localhost", ca(), get("/healthz", &[]))
            .await
            .unwrap();
        std::fs::copy(cert("server2.key"), s.dir.join("tls.key.new")).unwrap();
        std::fs::copy(cert("server2.pem"), s.dir.join("tls.crt.new")).unwrap();
        // Renamed into place one after the other: a look between the two finds a key that
        // does not match the certificate and is refused; the next look takes both.
        std::fs::rename(s.dir.join("tls.key.new"), s.dir.join("tls.key")).unwrap();
        std::fs::rename(s.dir.join("tls.crt.new"), s.dir.join("tls.crt")).unwrap();
        let server2 = CertificateDer::pem_file_iter(cert("server2.pem"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let a = call(s.port, "localhost", ca(), get("/healthz", &[])).await;
            if a.as_ref().is_ok_and(|a| a.server_cert == server2.to_vec()) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "still the old certificate: {a:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_ne!(before.server_cert, server2.to_vec());
        // A config that does not load: refused, logged in the metrics, the old one serves.
        let refused = metric(s.port, ca(), REFUSED).await.unwrap();
        replace(&s.dir.join("serve.toml"), b"[keys.pay\n");
        Command::new("kill").args(["-HUP", &pid]).status().unwrap();
        wait_for_metric(s.port, ca(), REFUSED, refused + 1).await;
        let m = call(s.port, "localhost", ca(), get("/metrics", &[]))
            .await
            .unwrap();
        assert!(
            m.text()
                .contains("segflake_reload_error_info{error=\"--config"),
            "{}",
            m.text()
        );
        let a = call(s.port, "localhost", ca(), as_pay("third-token"))
            .await
            .unwrap();
        assert_eq!(a.status, 200, "the old configuration still serves");
        let page = call(s.port, "localhost", ca(), get("/", &[]))
            .await
            .unwrap();
        assert!(
            page.text().contains("The last reload was refused")
                && page.text().contains("TOML parse error"),
            "{}",
            page.text()
        );
        // The config mended, then a key file that does not match its certificate: refused.
        let applied = metric(s.port, ca(), APPLIED).await.unwrap();
        replace(&s.dir.join("serve.toml"), good_config.as_bytes());
        wait_for_metric(s.port, ca(), APPLIED, applied + 1).await;
        let refused = metric(s.port, ca(), REFUSED).await.unwrap();
        replace(
            &s.dir.join("tls.key"),
            &std::fs::read(cert("order.key")).unwrap(),
        );
        Command::new("kill").args(["-HUP", &pid]).status().unwrap();
        wait_for_metric(s.port, ca(), REFUSED, refused + 1).await;
        let m = call(s.port, "localhost", ca(), get("/metrics", &[]))
            .await
            .unwrap();
        assert!(
            m.text()
                .contains("segflake_reload_error_info{error=\"tls cert "),
            "{}",
            m.text()
        );
        let a = call(s.port, "localhost", ca(), get("/healthz", &[]))
            .await
            .unwrap();
        assert_eq!(
            a.server_cert,
            server2.to_vec(),
            "the running certificate stays"
        );
    });
}
