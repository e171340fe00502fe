//! TLS to the registries' and stores' servers: rustls with the ring provider, the
//! certificate authorities of a PEM file, and the three levels of checking the servers' own
//! clients name (PostgreSQL's `sslmode=require|verify-ca|verify-full`, MySQL's
//! `ssl-mode=REQUIRED|VERIFY_CA|VERIFY_IDENTITY`, Redis's `rediss://`).
//!
//! A URL that asks for TLS never falls back to plaintext: the connection fails instead.
//! Without the `rustls` feature only the URL parsing is here, and a URL that asks for TLS
//! is refused when its store or registry is built.

#[cfg(feature = "rustls")]
use std::sync::Arc;

#[cfg(feature = "rustls")]
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
#[cfg(feature = "rustls")]
use rustls::client::WebPkiServerVerifier;
#[cfg(feature = "rustls")]
use rustls::crypto::CryptoProvider;
#[cfg(feature = "rustls")]
use rustls::pki_types::pem::PemObject;
#[cfg(feature = "rustls")]
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
#[cfg(feature = "rustls")]
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, Error, RootCertStore};

#[cfg(feature = "rustls")]
/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Encrypted, the certificate not checked (`sslmode=require` without a CA file,
    /// `ssl-mode=REQUIRED`).
    Encrypt,
    /// The certificate chains to the CA file; the host name is not checked.
    Ca,
    /// The certificate chains to the CA file and names the host connected to.
    Full,
}

#[cfg(feature = "rustls")]
/// The crypto provider used everywhere (ring).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

#[cfg(feature = "rustls")]
/// The certificates of the PEM file `path` (at least one).
pub fn load_roots(path: &str) -> Result<RootCertStore, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read the CA file {path:?}: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the CA file {path:?} is not PEM certificates: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "the CA file {path:?} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        ));
    }
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| format!("a certificate in the CA file {path:?} is unusable: {e}"))?;
    }
    Ok(roots)
}

#[cfg(feature = "rustls")]
/// A client configuration checking as `verify` says, with the CA file `ca` (needed for
/// [`Verify::Ca`] and [`Verify::Full`]).
pub fn client_config(verify: Verify, ca: Option<&str>) -> Result<ClientConfig, String> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let verifier: Arc<dyn ServerCertVerifier> = match (verify, ca) {
        (Verify::Encrypt, _) => Arc::new(EncryptOnly(provider.clone())),
        (_, None) => return Err("checking the server's certificate needs a CA file".into()),
        (level, Some(path)) => {
            let webpki = WebPkiServerVerifier::builder_with_provider(
                Arc::new(load_roots(path)?),
                provider.clone(),
            )
            .build()
            .map_err(|e| e.to_string())?;
            if level == Verify::Full {
                webpki
            } else {
                Arc::new(AnyHostName(webpki))
            }
        }
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// What a failed TLS connection means, for an error message: the text `error` of the
/// client's error, the server `target` (host:port) and the CA file given.
pub fn explain(error: &str, target: &str, ca: Option<&str>) -> String {
    let ca_text = ca.map_or("no CA file".to_string(), |c| format!("the CA file {c:?}"));
    let why = if error.contains("UnknownIssuer") || error.contains("unknown issuer") {
        format!(
            "the server's certificate is not signed by a certificate authority in {ca_text} \
             (check that the CA file is the one that signed the server's certificate)"
        )
    } else if error.contains("NotValidForName") || error.contains("not valid for name") {
        format!(
            "the server's certificate does not name the host {target:?} connected to (connect \
             with a host name or IP address in its subjectAltName, or check only the CA)"
        )
    } else if error.contains("Expired") || error.contains("expired") {
        "the server's certificate has expired (or is not valid yet: check the clocks)".into()
    } else if error.contains("does not support TLS")
        || error.contains("requires secure connection but server does not")
        || error.contains("tls handshake eof")
        || error.contains("InvalidContentType")
    {
        "the server does not accept TLS connections (no plaintext fallback is tried)".into()
    } else if error.contains("Connection reset") || error.contains("Broken pipe") {
        "the server closed the connection during the TLS handshake, as one that does not \
         accept TLS connections does (no plaintext fallback is tried)"
            .into()
    } else {
        return format!("TLS connection to {target} failed: {error}");
    };
    format!("TLS connection to {target} refused: {why}; {error}")
}

/// Whether `error` looks like a TLS failure (for [`explain`]).
pub fn is_tls_error(error: &str) -> bool {
    let lower = error.to_ascii_lowercase();
    [
        "tls",
        "certificate",
        "handshake",
        "secure connection",
        "unknownissuer",
        "notvalidforname",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

#[cfg(feature = "rustls")]
/// Checks the chain but accepts any host name (`verify-ca`, `VERIFY_CA`).
#[derive(Debug)]
struct AnyHostName(Arc<WebPkiServerVerifier>);

#[cfg(feature = "rustls")]
impl ServerCertVerifier for AnyHostName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(feature = "rustls")]
/// Accepts any certificate, but still checks the handshake's signatures with it
/// (`sslmode=require`, `ssl-mode=REQUIRED`: encryption without authentication).
#[derive(Debug)]
struct EncryptOnly(Arc<CryptoProvider>);

#[cfg(feature = "rustls")]
impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(feature = "rustls")]
/// A client configuration that checks the server's chain (against `ca`, a PEM file, else the
/// system's CAs) and its host name.
pub fn verifying_config(ca: Option<&str>) -> Result<ClientConfig, String> {
    if ca.is_some() {
        return client_config(Verify::Full, ca);
    }
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    Ok(ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// A `zk`/`etcd` URL's TLS request, as Python's and Node's registries read it: `+tls` on the
/// scheme (or `tls=true`) asks for TLS, `ca=PATH` names the PEM file of the CA to trust
/// (else the system's). Returns the URL with the bare scheme and without `tls` and `ca`,
/// whether TLS is asked for, and the CA file (checked to hold certificates).
pub fn url_tls(url: &str) -> Result<(String, bool, Option<String>), String> {
    let (rest, found) = take_params(url, &["tls", "ca"]);
    let (scheme, tail) = rest.split_once("://").unwrap_or((&rest, ""));
    let bare = scheme.strip_suffix("+tls").unwrap_or(scheme);
    let mut tls = bare != scheme;
    if let Some(flag) = &found[0] {
        let asked = match flag.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => true,
            "false" | "0" | "no" | "off" => false,
            _ => {
                return Err(format!(
                    "invalid tls value {flag:?}: expected true or false"
                ))
            }
        };
        if tls && !asked {
            return Err(format!("{bare}+tls:// contradicts tls={flag}"));
        }
        tls |= asked;
    }
    let ca = found[1].clone();
    match &ca {
        Some(_) if !tls => {
            return Err(format!(
                "ca=PATH is for TLS, but the URL does not ask for it: use {bare}+tls://"
            ))
        }
        #[cfg(feature = "rustls")]
        Some(path) => drop(load_roots(path)?),
        // Without TLS support the URL is refused when it is used.
        #[cfg(not(feature = "rustls"))]
        Some(_) => {}
        None => {}
    }
    Ok((format!("{bare}://{tail}"), tls, ca))
}

/// The refusal of a URL that asks for TLS in a build without the `rustls` feature (the
/// caller turns it into [`Error::FeatureDisabled`](crate::Error::FeatureDisabled)).
pub(crate) const NEEDS_RUSTLS: &str = "TLS needs the `rustls` feature of segflake-backends";

/// `url` without the query parameters named in `names`, and their values (the last of
/// each, percent-decoded), in the order of `names`.
pub fn take_params(url: &str, names: &[&str]) -> (String, Vec<Option<String>>) {
    let mut found = vec![None; names.len()];
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), found);
    };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match names.iter().position(|n| n.eq_ignore_ascii_case(k)) {
            Some(i) => found[i] = Some(percent_decode(v)),
            None => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (url, found)
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_taken_out_of_the_url() {
        let (url, found) = take_params(
            "postgres://u@h/db?sslmode=verify-full&application_name=x&sslrootcert=%2Ftmp%2Fca.pem",
            &["sslmode", "sslrootcert"],
        );
        assert_eq!(url, "postgres://u@h/db?application_name=x");
        assert_eq!(
            found,
            [Some("verify-full".into()), Some("/tmp/ca.pem".into())]
        );
        let (url, found) = take_params("mysql://u@h/db", &["ssl-mode"]);
        assert_eq!((url.as_str(), found), ("mysql://u@h/db", vec![None]));
        let (url, _) = take_params("mysql://u@h/db?ssl-mode=REQUIRED", &["ssl-mode"]);
        assert_eq!(url, "mysql://u@h/db");
    }

    #[cfg(feature = "rustls")]
    #[test]
    fn a_missing_or_empty_ca_file_is_refused_clearly() {
        let e = client_config(Verify::Full, None).unwrap_err();
        assert!(e.contains("CA file"), "{e}");
        let e = client_config(Verify::Ca, Some("/nonexistent/ca.pem")).unwrap_err();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
        assert!(client_config(Verify::Encrypt, None).is_ok());
    }

    #[cfg(feature = "rustls")]
    #[test]
    fn a_tls_request_comes_from_the_scheme_or_the_tls_parameter() {
        let plain = |url: &str| url_tls(url).map(|(u, tls, ca)| (u, tls, ca.is_some()));
        assert_eq!(
            plain("etcd+tls://h:1/p"),
            Ok(("etcd://h:1/p".into(), true, false))
        );
        assert_eq!(
            plain("zk://h:1/r?identity=10.0.0.1:80&tls=true"),
            Ok(("zk://h:1/r?identity=10.0.0.1:80".into(), true, false))
        );
        assert_eq!(plain("etcd://h:1"), Ok(("etcd://h:1".into(), false, false)));
        let e = url_tls("etcd+tls://h:1?tls=false").unwrap_err();
        assert_eq!(e, "etcd+tls:// contradicts tls=false");
        let e = url_tls("etcd://h:1?ca=/x.pem").unwrap_err();
        assert!(e.contains("use etcd+tls://"), "{e}");
        let e = url_tls("etcd+tls://h:1?ca=/no/such/ca.pem").unwrap_err();
        assert!(e.contains("/no/such/ca.pem"), "{e}");
        let e = url_tls("etcd://h:1?tls=maybe").unwrap_err();
        assert!(e.contains("expected true or false"), "{e}");
    }
}
