//! Who may call which key: the config's `[keys]`, with each key's tokens and client
//! identities, held as the service checks them.
//!
//! * No token is kept in the clear: each is held as its SHA-256, and a presented token is
//!   hashed and compared in constant time against every digest of the key.
//! * A token is given as itself, as `sha256:<64 hex digits>` (its digest, as GitHub and
//!   Stripe store API keys), as `env:NAME` (the variable's value) or as `file:PATH` (each
//!   non-empty line not starting with `#`: a token or a `sha256:` digest; a mounted
//!   Secret), read when the config is loaded or reloaded.
//! * A key that lists `clients` needs a mutual-TLS client whose certificate names one of
//!   them (subject CN or a DNS/URI subjectAltName); a key that lists `tokens` needs one of
//!   them; a key that lists both needs both.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use hyper::StatusCode;
use sha2::{Digest, Sha256};

use super::tls::Peer;
use super::{reject, Reject};
use crate::serve_cmd::KeyConfig;

type Sha = [u8; 32];

/// One key's rule.
#[derive(Debug, Default)]
struct KeyRule {
    tokens: Vec<Sha>,
    clients: Vec<Box<str>>,
}

/// Every key's rule, as loaded; `None` keys: every key is open.
#[derive(Debug, Default)]
pub struct Access {
    keys: Option<HashMap<Box<str>, KeyRule>>,
    /// Every client identity some key lists (the bounded label values of the metrics).
    named_clients: Vec<Box<str>>,
}

/// `token`'s SHA-256.
fn digest(token: &str) -> Sha {
    Sha256::digest(token.as_bytes()).into()
}

/// Compares without stopping at the first difference.
fn same(a: &Sha, b: &Sha) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hex_digest(hex: &str) -> Option<Sha> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

const TOKEN_FORMS: &str = "a token, sha256:<64 hex digits> (its SHA-256), env:NAME or file:PATH";

/// A token or a `sha256:` digest (what a line of a token file may hold).
fn literal(spec: &str, what: &str) -> Result<Sha, String> {
    if let Some(hex) = spec.strip_prefix("sha256:") {
        return hex_digest(&hex.to_ascii_lowercase()).ok_or_else(|| {
            format!("{what}: sha256: takes 64 hex digits (the SHA-256 of the token, as `printf %s TOKEN | sha256sum` prints it)")
        });
    }
    if spec.is_empty() || spec.chars().any(char::is_whitespace) {
        return Err(format!(
            "{what}: a token is empty or holds whitespace; allowed: {TOKEN_FORMS}"
        ));
    }
    Ok(digest(spec))
}

/// `entry` with a relative `file:` path taken from `dir` (the directory of the config
/// file that holds it); any other entry as it is.
pub fn entry_from_dir(entry: &str, dir: &Path) -> String {
    match entry.strip_prefix("file:") {
        Some(path) if Path::new(path).is_relative() => {
            format!("file:{}", dir.join(path).display())
        }
        _ => entry.to_string(),
    }
}

/// The digests one `tokens` entry stands for, and the file it read (if any).
fn resolve(spec: &str, what: &str) -> Result<(Vec<Sha>, Option<PathBuf>), String> {
    if let Some(name) = spec.strip_prefix("env:") {
        let value = std::env::var(name)
            .map_err(|_| format!("{what}: env:{name}: the environment has no {name}"))?;
        return Ok((
            vec![literal(value.trim(), &format!("{what}: env:{name}"))?],
            None,
        ));
    }
    if let Some(path) = spec.strip_prefix("file:") {
        let what = format!("{what}: file:{path}");
        let text = std::fs::read_to_string(path).map_err(|e| format!("{what}: {e}"))?;
        let tokens = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| literal(l, &what))
            .collect::<Result<Vec<_>, _>>()?;
        if tokens.is_empty() {
            return Err(format!("{what}: no token in the file"));
        }
        return Ok((tokens, Some(path.into())));
    }
    Ok((vec![literal(spec, what)?], None))
}

impl Access {
    /// The rules of `keys` (`None`: every key open), with the token files they read.
    pub fn load(
        keys: Option<&BTreeMap<String, KeyConfig>>,
    ) -> Result<(Access, Vec<PathBuf>), String> {
        let Some(keys) = keys else {
            return Ok((Access::default(), Vec::new()));
        };
        let mut files = Vec::new();
        let mut rules = HashMap::with_capacity(keys.len());
        let mut named_clients: Vec<Box<str>> = Vec::new();
        for (key, config) in keys {
            let what = format!("config [keys.{key:?}] tokens");
            let mut rule = KeyRule::default();
            for spec in &config.tokens {
                let (digests, file) = resolve(spec, &what)?;
                rule.tokens.extend(digests);
                files.extend(file);
            }
            for client in &config.clients {
                if client.is_empty() || client.chars().any(char::is_control) {
                    return Err(format!(
                        "config [keys.{key:?}] clients: {client:?} is not an identity; allowed: a certificate's subject CN or a DNS or URI subjectAltName"
                    ));
                }
                rule.clients.push(client.as_str().into());
                if !named_clients.iter().any(|c| **c == **client) {
                    named_clients.push(client.as_str().into());
                }
            }
            rules.insert(key.as_str().into(), rule);
        }
        named_clients.sort();
        Ok((
            Access {
                keys: Some(rules),
                named_clients,
            },
            files,
        ))
    }

    /// Whether the config lists keys (so requests may need a token).
    pub fn has_keys(&self) -> bool {
        self.keys.is_some()
    }

    /// Whether `key` is served (listed, or `"*"` is, or no `[keys]`).
    pub fn serves(&self, key: &str) -> bool {
        self.keys
            .as_ref()
            .is_none_or(|k| k.contains_key(key) || k.contains_key("*"))
    }

    /// The identity the metrics count `peer` under: its name if some key lists it, else
    /// `"other"` (a bounded set of label values).
    pub fn client_label(&self, peer: &Peer) -> &str {
        self.named_clients
            .iter()
            .find(|c| peer.is_one_of(std::slice::from_ref(c)))
            .map_or("other", |c| c)
    }

    /// Checks that `key` is served and that the caller (its `presented` token and its
    /// mutual-TLS `peer`) may call it.
    pub(super) fn check(
        &self,
        key: &str,
        presented: Option<&str>,
        peer: Option<&Peer>,
    ) -> Result<(), Reject> {
        let Some(keys) = &self.keys else {
            return Ok(());
        };
        let rule = keys.get(key).or_else(|| keys.get("*")).ok_or_else(|| {
            reject(
                StatusCode::NOT_FOUND,
                "UNKNOWN_TAG",
                format!("key {key:?} is not served here (see [keys] in the config)"),
            )
        })?;
        if !rule.clients.is_empty() {
            match peer {
                None => {
                    return Err(reject(
                        StatusCode::UNAUTHORIZED,
                        "UNAUTHORIZED",
                        format!(
                            "key {key:?} needs a client certificate (mutual TLS) naming one of its clients"
                        ),
                    ))
                }
                Some(p) if !p.is_one_of(&rule.clients) => {
                    return Err(reject(
                        StatusCode::FORBIDDEN,
                        "FORBIDDEN",
                        format!(
                            "the client certificate of {:?} is not allowed for key {key:?}",
                            p.name()
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        if rule.tokens.is_empty() {
            return Ok(());
        }
        let Some(t) = presented else {
            return Err(reject(
                StatusCode::UNAUTHORIZED,
                "UNAUTHORIZED",
                format!("key {key:?} needs a token: Authorization: Bearer TOKEN"),
            ));
        };
        let d = digest(t.trim());
        // Every digest is compared, so the time taken does not tell which one matched.
        let matched = rule
            .tokens
            .iter()
            .fold(false, |found, x| same(x, &d) | found);
        if matched {
            Ok(())
        } else {
            Err(reject(
                StatusCode::FORBIDDEN,
                "FORBIDDEN",
                format!("the token is not valid for key {key:?}"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(entries: &[(&str, &[&str], &[&str])]) -> BTreeMap<String, KeyConfig> {
        entries
            .iter()
            .map(|(k, tokens, clients)| {
                let config = KeyConfig {
                    tokens: tokens.iter().map(|s| s.to_string()).collect(),
                    clients: clients.iter().map(|s| s.to_string()).collect(),
                };
                (k.to_string(), config)
            })
            .collect()
    }

    fn code(r: Result<(), Reject>) -> &'static str {
        r.err().map_or("OK", |e| e.code)
    }

    const S3CRET_SHA: &str =
        "sha256:e6a0f0a2ab4dbab6bfe8eb5bd27fb5a2ff1a9b8bd8b3d86e32b7f1ff51d1b0e0";

    #[test]
    fn tokens_in_the_clear_and_as_digests_are_the_same_token() {
        let sha = format!("sha256:{}", {
            let d = digest("s3cret");
            d.iter().map(|b| format!("{b:02x}")).collect::<String>()
        });
        let config = keys(&[("plain", &["s3cret"], &[]), ("hashed", &[&sha], &[])]);
        let (access, files) = Access::load(Some(&config)).unwrap();
        assert!(files.is_empty());
        for key in ["plain", "hashed"] {
            assert_eq!(code(access.check(key, Some("s3cret"), None)), "OK");
            assert_eq!(code(access.check(key, Some(" s3cret "), None)), "OK");
            assert_eq!(code(access.check(key, Some("s3cre"), None)), "FORBIDDEN");
            assert_eq!(code(access.check(key, None, None)), "UNAUTHORIZED");
        }
        assert_eq!(code(access.check("other", None, None)), "UNKNOWN_TAG");
        // A digest that is not this token's.
        let (other, _) = Access::load(Some(&keys(&[("k", &[S3CRET_SHA], &[])]))).unwrap();
        assert_eq!(code(other.check("k", Some("s3cret"), None)), "FORBIDDEN");
    }

    #[test]
    fn tokens_from_files_and_the_environment() {
        let dir = std::env::temp_dir().join(format!("segflake-access-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tokens");
        std::fs::write(&file, "# rotated weekly\nold-token\n\nnew-token\n").unwrap();
        std::env::set_var("SEGFLAKE_TEST_ACCESS_TOKEN", "from-env");
        let spec = format!("file:{}", file.display());
        let config = keys(&[("k", &[&spec, "env:SEGFLAKE_TEST_ACCESS_TOKEN"], &[])]);
        let (access, files) = Access::load(Some(&config)).unwrap();
        assert_eq!(files, vec![file.clone()]);
        for t in ["old-token", "new-token", "from-env"] {
            assert_eq!(code(access.check("k", Some(t), None)), "OK", "{t}");
        }
        assert_eq!(
            code(access.check("k", Some("# rotated weekly"), None)),
            "FORBIDDEN"
        );
        std::fs::write(&file, "\n# none\n").unwrap();
        let e = Access::load(Some(&config)).unwrap_err();
        assert!(e.contains("no token in the file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        let e =
            Access::load(Some(&keys(&[("k", &["env:SEGFLAKE_NO_SUCH_VAR"], &[])]))).unwrap_err();
        assert!(
            e.contains("the environment has no SEGFLAKE_NO_SUCH_VAR"),
            "{e}"
        );
    }

    #[test]
    fn malformed_tokens_are_refused_with_the_forms_allowed() {
        for bad in ["sha256:abc", "two words", ""] {
            let e = Access::load(Some(&keys(&[("k", &[bad], &[])]))).unwrap_err();
            assert!(
                e.contains("sha256:") && e.contains("[keys.\"k\"]"),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn clients_and_tokens_are_both_required_where_both_are_listed() {
        let config = keys(&[
            ("mtls", &[], &["order-svc"]),
            ("both", &["s3cret"], &["spiffe://segflake.test/order"]),
            ("*", &[], &[]),
        ]);
        let (access, _) = Access::load(Some(&config)).unwrap();
        let order = Peer::named(&["order-svc", "spiffe://segflake.test/order"]);
        let billing = Peer::named(&["billing-svc"]);
        assert_eq!(code(access.check("mtls", None, Some(&order))), "OK");
        assert_eq!(code(access.check("mtls", None, None)), "UNAUTHORIZED");
        assert_eq!(
            code(access.check("mtls", None, Some(&billing))),
            "FORBIDDEN"
        );
        assert_eq!(
            code(access.check("both", Some("s3cret"), Some(&order))),
            "OK"
        );
        assert_eq!(
            code(access.check("both", None, Some(&order))),
            "UNAUTHORIZED"
        );
        assert_eq!(
            code(access.check("both", Some("s3cret"), Some(&billing))),
            "FORBIDDEN"
        );
        assert_eq!(code(access.check("anything", None, None)), "OK");
        assert!(access.serves("anything"));
        assert_eq!(access.client_label(&order), "order-svc");
        assert_eq!(access.client_label(&billing), "other");
    }
}
