//! TLS and mutual TLS on the service's listeners (`--tls-cert`, `--tls-key`,
//! `--tls-client-ca`, the config's `[tls]`): rustls with the ring provider, TLS 1.2 and
//! 1.3 only, HTTP/2 by ALPN where the listener speaks it.
//!
//! * A listener's [`Acceptor`] holds the certificates it was last given; a reload swaps
//!   them in whole for the connections accepted after it (those in flight keep theirs).
//! * With a client CA, a client's certificate is verified against it during the handshake
//!   (an untrusted or expired one fails the handshake); `client_auth = "optional"` also
//!   admits clients without one, which keys that list `clients` then refuse.
//! * A client's identity ([`Peer`]) is its certificate's subject CN and its DNS and URI
//!   subjectAltNames, read only from a certificate the CA verified.
//! * A plaintext request on a TLS port is answered with a plaintext 400 that says to use
//!   `https://`, then the connection is closed (never a hang).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// How long a client has to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether clients must present a certificate when a client CA is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// Every client presents a certificate the CA signed (etcd's `--client-cert-auth`).
    #[default]
    Required,
    /// A client may come without one; keys that list `clients` refuse it.
    Optional,
}

impl ClientAuth {
    pub const NAMES: &'static str = "\"required\" or \"optional\"";

    pub fn parse(s: &str) -> Option<ClientAuth> {
        match s {
            "required" => Some(ClientAuth::Required),
            "optional" => Some(ClientAuth::Optional),
            _ => None,
        }
    }
}

/// The files a TLS listener reads (again on each reload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub client_ca: Option<PathBuf>,
    pub client_auth: ClientAuth,
}

impl TlsFiles {
    /// Every file, for the reload watcher.
    pub fn paths(&self) -> Vec<PathBuf> {
        let mut paths = vec![self.cert.clone(), self.key.clone()];
        paths.extend(self.client_ca.clone());
        paths
    }
}

/// The client behind a mutual-TLS connection: its certificate's subject CN, then its DNS
/// and URI subjectAltNames, as the CA signed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    names: Box<[Box<str>]>,
}

impl Peer {
    /// The identity logs and metrics show: the CN, else the first subjectAltName.
    pub fn name(&self) -> &str {
        self.names.first().map_or("", |n| n)
    }

    /// Whether `allowed` names this client (its CN or one of its subjectAltNames).
    pub fn is_one_of(&self, allowed: &[Box<str>]) -> bool {
        self.names.iter().any(|n| allowed.contains(n))
    }

    fn of(cert: &CertificateDer<'_>) -> Option<Peer> {
        use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};
        let (_, cert) = X509Certificate::from_der(cert.as_ref()).ok()?;
        let mut names: Vec<Box<str>> = Vec::new();
        if let Some(cn) = cert.subject().iter_common_name().next() {
            if let Ok(cn) = cn.as_str() {
                names.push(cn.into());
            }
        }
        if let Ok(Some(san)) = cert.subject_alternative_name() {
            for name in &san.value.general_names {
                match name {
                    GeneralName::DNSName(n) | GeneralName::URI(n) => names.push((*n).into()),
                    _ => {}
                }
            }
        }
        (!names.is_empty()).then(|| Peer {
            names: names.into(),
        })
    }

    #[cfg(test)]
    pub fn named(names: &[&str]) -> Peer {
        Peer {
            names: names.iter().map(|&n| n.into()).collect(),
        }
    }
}

fn read_pem(what: &str, path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{what} {}: {e}", path.display()))
}

fn certificates(what: &str, path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read_pem(what, path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what} {}: not PEM certificates: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{what} {}: no certificate in it (expected -----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    Ok(certs)
}

/// A server configuration for `files`, offering `alpn` (most preferred first).
pub fn server_config(files: &TlsFiles, alpn: &[&[u8]]) -> Result<Arc<ServerConfig>, String> {
    let chain = certificates("tls cert", &files.cert)?;
    let key_pem = read_pem("tls key", &files.key)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        format!(
            "tls key {}: no private key in it ({e}; expected PEM PKCS#8, PKCS#1 or SEC1)",
            files.key.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| format!("tls: {e}"))?;
    let builder = match &files.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in certificates("tls client_ca", ca)? {
                roots
                    .add(cert)
                    .map_err(|e| format!("tls client_ca {}: {e}", ca.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(roots.into(), provider);
            let verifier = match files.client_auth {
                ClientAuth::Required => verifier,
                ClientAuth::Optional => verifier.allow_unauthenticated(),
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| format!("tls client_ca {}: {e}", ca.display()))?,
            )
        }
    };
    let mut config = builder.with_single_cert(chain, key).map_err(|e| {
        format!(
            "tls cert {} and key {}: {e}",
            files.cert.display(),
            files.key.display()
        )
    })?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// The server certificate's `notAfter` (Unix seconds; 0 if it cannot be read), for the
/// metrics, the status page and the start-up log.
pub fn not_after(files: &TlsFiles) -> u64 {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let Ok(chain) = certificates("tls cert", &files.cert) else {
        return 0;
    };
    X509Certificate::from_der(chain[0].as_ref()).map_or(0, |(_, cert)| {
        cert.validity().not_after.timestamp().max(0) as u64
    })
}

/// What a TLS listener accepts with: the configuration swapped in by the last reload.
pub struct Acceptor {
    config: ArcSwap<ServerConfig>,
    alpn: &'static [&'static [u8]],
}

/// A connection after its handshake: the stream, whether it speaks HTTP/2, and its
/// client's identity (mutual TLS).
pub struct Accepted {
    pub stream: tokio_rustls::server::TlsStream<TcpStream>,
    pub h2: bool,
    pub peer: Option<Arc<Peer>>,
}

impl Acceptor {
    pub fn new(files: &TlsFiles, alpn: &'static [&'static [u8]]) -> Result<Acceptor, String> {
        Ok(Acceptor {
            config: ArcSwap::new(server_config(files, alpn)?),
            alpn,
        })
    }

    /// Builds the configuration anew from `files` without applying it.
    pub fn prepare(&self, files: &TlsFiles) -> Result<Arc<ServerConfig>, String> {
        server_config(files, self.alpn)
    }

    /// Applies a configuration [`prepare`](Acceptor::prepare) built.
    pub fn apply(&self, config: Arc<ServerConfig>) {
        self.config.store(config);
    }

    /// The handshake on `stream`; `Err` with a reason for the log when it fails (after
    /// answering a plaintext HTTP request with a 400).
    pub async fn accept(&self, mut stream: TcpStream) -> Result<Accepted, String> {
        let handshake = async {
            let mut first = [0u8; 1];
            let n = stream.peek(&mut first).await.map_err(|e| e.to_string())?;
            // 0x16: a TLS handshake record. A letter: an HTTP/1 method or HTTP/2's preface.
            if n == 1 && first[0].is_ascii_alphabetic() {
                let body = "{\"code\":\"TLS_REQUIRED\",\"message\":\"this port speaks TLS only: use https:// (or a TLS gRPC channel)\"}";
                let answer = format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
                return Err("a plaintext request on the TLS port".to_string());
            }
            let acceptor = tokio_rustls::TlsAcceptor::from(self.config.load_full());
            acceptor.accept(stream).await.map_err(|e| e.to_string())
        };
        let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake)
            .await
            .map_err(|_| {
                format!(
                    "the TLS handshake took over {} s",
                    HANDSHAKE_TIMEOUT.as_secs()
                )
            })??;
        let (_, conn) = tls.get_ref();
        let h2 = conn.alpn_protocol() == Some(b"h2");
        let peer = conn
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(Peer::of)
            .map(Arc::new);
        Ok(Accepted {
            stream: tls,
            h2,
            peer,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_known_by_its_cn_and_each_subject_alt_name() {
        let peer = Peer::named(&["order-svc", "spiffe://segflake.test/order"]);
        assert_eq!(peer.name(), "order-svc");
        assert!(peer.is_one_of(&["billing".into(), "spiffe://segflake.test/order".into()]));
        assert!(!peer.is_one_of(&["billing".into()]));
        assert!(!peer.is_one_of(&[]));
    }

    #[test]
    fn client_auth_names() {
        assert_eq!(ClientAuth::parse("required"), Some(ClientAuth::Required));
        assert_eq!(ClientAuth::parse("optional"), Some(ClientAuth::Optional));
        assert_eq!(ClientAuth::parse("yes"), None);
    }
}
