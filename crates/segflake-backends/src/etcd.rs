//! A worker-ID lease registry on etcd v3 (`etcd://…`, `etcd+tls://…`), over etcd's gRPC
//! API with the `etcd-client` crate, on a one-worker tokio runtime owned by the registry
//! (callable and droppable from async code too: `rt.rs`). With TLS (the `rustls` feature)
//! the server's certificate must chain to `ca=PATH` (else to the system's CAs) and name the
//! host connected to; a TLS URL never falls back to plaintext.
//!
//! The protocol (keys, transactions, what each answer means) is the core's
//! [`EtcdProtocol`]; this adapter performs its requests and hands back the answers. The
//! members are tried in the URL's order until one connects; the connection is kept, and
//! after a failed request the next call connects again starting with the next member.
//! Every call ends within the registry timeout.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[cfg(feature = "rustls")]
use etcd_client::{Certificate, TlsOptions};
use etcd_client::{
    Client, Compare as Cmp, CompareOp, GetOptions, PutOptions, Txn, TxnOp as Op, TxnOpResponse,
};
use segflake::lease::conversation::{Protocol, Step};
use segflake::lease::etcd::{Compare, EtcdOp, EtcdProtocol, EtcdReply, EtcdUrl, TxnOp};
use segflake::{Registry, RegistryCall, Value};
use tonic::transport::Endpoint;

use crate::tls;
use crate::RegistryOptions;

/// Without the `rustls` feature there are no TLS options (a TLS URL is refused).
#[cfg(not(feature = "rustls"))]
#[derive(Clone)]
enum TlsOptions {}

/// The etcd lease registry (`etcd://…`, `etcd+tls://…`): the core's [`EtcdProtocol`]
/// (keys under the URL's prefix, leases, transactions), performed by `etcd-client` on a
/// runtime of the registry's own. The members are tried in the URL's order; every call is
/// bounded by `RegistryOptions::timeout_ms`.
pub struct EtcdRegistry {
    etcd: Etcd,
    state: Mutex<State>,
    /// Dropped last, after the client that runs on it.
    runtime: crate::rt::Runtime,
}

/// Where the calls go, and how long they may take; the calls run on the current runtime.
pub(crate) struct Etcd {
    /// `http://HOST:PORT` or `https://HOST:PORT`, in the URL's order (none for a caller's
    /// client).
    endpoints: Vec<String>,
    tls: Option<TlsOptions>,
    ca: Option<String>,
    timeout: Duration,
}

/// The client (when there is one) and the protocol's memory.
pub(crate) struct State {
    client: Option<Client>,
    /// The member the client is on, or the one to try first.
    member: usize,
    protocol: EtcdProtocol,
}

impl Etcd {
    /// The settings of `url`: `etcd[+tls]://HOST:PORT[,HOST:PORT][/PREFIX][?ca=PATH]`
    /// (default prefix `/segflake`), and the state of its calls. Nothing is connected yet.
    pub(crate) fn parse(url: &str, options: &RegistryOptions) -> crate::Result<(Etcd, State)> {
        let (plain, use_tls, ca) = tls::url_tls(url).map_err(|e| crate::Error::invalid(url, e))?;
        let parsed = EtcdUrl::parse(&plain).map_err(|e| crate::Error::invalid_quoted(&plain, e))?;
        let tls = match (use_tls, &ca) {
            (false, _) => None,
            #[cfg(not(feature = "rustls"))]
            (true, _) => {
                return Err(crate::Error::FeatureDisabled {
                    url: url.to_string(),
                    feature: "rustls",
                })
            }
            #[cfg(feature = "rustls")]
            (true, None) => Some(TlsOptions::new().with_native_roots()),
            #[cfg(feature = "rustls")]
            (true, Some(path)) => {
                let pem = std::fs::read(path).map_err(|e| {
                    crate::Error::tls(url, format!("cannot read the CA file {path:?}: {e}"))
                })?;
                Some(TlsOptions::new().ca_certificate(Certificate::from_pem(pem)))
            }
        };
        let scheme = if use_tls { "https" } else { "http" };
        let etcd = Etcd {
            endpoints: parsed
                .endpoints
                .iter()
                .map(|e| format!("{scheme}://{e}"))
                .collect(),
            tls,
            ca,
            timeout: options.timeout(),
        };
        let state = State {
            client: None,
            member: 0,
            protocol: EtcdProtocol::new(&parsed.prefix),
        };
        Ok((etcd, state))
    }

    /// Calls through a caller's `client` (kept after failures: its channel reconnects by
    /// itself), with the keys under `prefix`.
    #[cfg(feature = "tokio")]
    pub(crate) fn with_client(
        client: Client,
        prefix: &str,
        options: &RegistryOptions,
    ) -> (Etcd, State) {
        let etcd = Etcd {
            endpoints: Vec::new(),
            tls: None,
            ca: None,
            timeout: options.timeout(),
        };
        let state = State {
            client: Some(client),
            member: 0,
            protocol: EtcdProtocol::new(prefix),
        };
        (etcd, state)
    }

    /// The kept client, or a new one on the first member that connects before `deadline`.
    async fn connected(&self, st: &mut State, deadline: Instant) -> Result<Client, String> {
        if let Some(c) = &st.client {
            return Ok(c.clone());
        }
        let mut last = String::new();
        let n = self.endpoints.len();
        for member in (0..n).map(|k| (st.member + k) % n) {
            let url = &self.endpoints[member];
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.connect(url, left).await {
                Ok(client) => {
                    (st.client, st.member) = (Some(client.clone()), member);
                    return Ok(client);
                }
                Err(e) => last = e,
            }
        }
        Err(if last.is_empty() {
            format!("no etcd member answered within {:?}", self.timeout)
        } else {
            last
        })
    }

    async fn connect(&self, url: &str, left: Duration) -> Result<Client, String> {
        let fail = |e: &dyn std::error::Error| {
            let text = chain(e);
            let host = url.split_once("://").map_or(url, |(_, host)| host);
            // A connection cut while connecting over TLS is the handshake refused.
            let cut = ["Connection reset", "Broken pipe"]
                .iter()
                .any(|c| text.contains(c));
            let handshake = tls::is_tls_error(&text) || cut;
            match self.tls.is_some() && handshake {
                true => tls::explain(&text, host, self.ca.as_deref()),
                false => format!("etcd {url}: {text}"),
            }
        };
        #[cfg_attr(not(feature = "rustls"), allow(unused_mut))]
        let mut endpoint = Endpoint::from_shared(url.to_string())
            .map_err(|e| fail(&e))?
            .connect_timeout(left)
            .timeout(self.timeout);
        #[cfg(feature = "rustls")]
        if let Some(tls) = &self.tls {
            endpoint = endpoint.tls_config(tls.clone()).map_err(|e| fail(&e))?;
        }
        let channel = tokio::time::timeout(left, endpoint.connect())
            .await
            .map_err(|_| format!("etcd {url}: no connection within {left:?}"))?
            .map_err(|e| fail(&e))?;
        Client::from_channel(etcd_client::Channel::Tonic(channel), None)
            .await
            .map_err(|e| fail(&e))
    }

    /// Answers `call`: the connection and every request within the timeout.
    pub(crate) async fn call(&self, st: &mut State, call: &RegistryCall) -> Result<Value, String> {
        let (name, timeout) = (call.name(), self.timeout);
        let deadline = Instant::now() + timeout;
        let late = || format!("etcd {name} took longer than {timeout:?}");
        let client = tokio::time::timeout_at(deadline.into(), self.connected(st, deadline))
            .await
            .unwrap_or_else(|_| Err(late()))?;
        let mut failed = false;
        let mut step = st.protocol.start(call.clone(), ());
        let answer = loop {
            match step {
                Step::Op(op) => {
                    let done =
                        tokio::time::timeout_at(deadline.into(), perform(client.clone(), op)).await;
                    let reply = match done {
                        Ok(Ok(reply)) => reply,
                        Ok(Err(e)) => EtcdReply::Failed(format!("etcd {name}: {}", chain(&e))),
                        Err(_) => EtcdReply::Failed(late()),
                    };
                    failed |= matches!(reply, EtcdReply::Failed(_));
                    step = st.protocol.resume(reply);
                }
                Step::Answer(answer) => break answer,
            }
        };
        if failed && !self.endpoints.is_empty() {
            // The next call connects again, starting with the next member: one that
            // accepts connections but never answers (stopped, partitioned) is left.
            st.client = None;
            st.member = (st.member + 1) % self.endpoints.len();
        }
        answer
    }
}

impl EtcdRegistry {
    /// The registry of `url`: `etcd[+tls]://HOST:PORT[,HOST:PORT][/PREFIX][?ca=PATH]`
    /// (default prefix `/segflake`). Nothing is connected yet.
    pub fn new(url: &str, options: &RegistryOptions) -> crate::Result<EtcdRegistry> {
        let (etcd, state) = Etcd::parse(url, options)?;
        let runtime = crate::rt::Runtime::one_worker("etcd")?;
        Ok(EtcdRegistry {
            etcd,
            state: Mutex::new(state),
            runtime,
        })
    }
}

impl Registry for EtcdRegistry {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.runtime.block_on(self.etcd.call(&mut st, call))
    }
}

/// Performs one of the protocol's requests.
async fn perform(mut c: Client, op: EtcdOp) -> Result<EtcdReply, etcd_client::Error> {
    Ok(match op {
        EtcdOp::Grant { ttl_s } => {
            let granted = c.lease_grant(ttl_s as i64, None).await?;
            EtcdReply::Lease(granted.id().to_string())
        }
        EtcdOp::KeepAlive { lease } => {
            // The client reads the stream's first answer itself and refuses a TTL of 0
            // ("lease not found"); a second keep-alive on the stream reports the seconds left.
            let (mut keeper, mut answers) = match c.lease_keep_alive(lease_id(&lease)?).await {
                Err(etcd_client::Error::LeaseKeepAliveError(e)) if e == "lease not found" => {
                    return Ok(EtcdReply::Ttl(0))
                }
                other => other?,
            };
            keeper.keep_alive().await?;
            EtcdReply::Ttl(answers.message().await?.map_or(0, |a| a.ttl()))
        }
        EtcdOp::Revoke { lease } => {
            c.lease_revoke(lease_id(&lease)?).await?;
            EtcdReply::Done
        }
        EtcdOp::Prefix { prefix } => {
            let got = c.get(prefix, Some(GetOptions::new().with_prefix())).await?;
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            EtcdReply::Kvs(
                got.kvs()
                    .iter()
                    .map(|kv| (text(kv.key()), text(kv.value())))
                    .collect(),
            )
        }
        EtcdOp::Txn {
            compare,
            success,
            failure,
        } => {
            let txn = Txn::new()
                .when(compare.iter().map(comparison).collect::<Vec<_>>())
                .and_then(requests(&success)?)
                .or_else(requests(&failure)?);
            let done = c.txn(txn).await?;
            let values = done.op_responses().into_iter().filter_map(|r| match r {
                TxnOpResponse::Get(got) => Some(
                    got.kvs()
                        .first()
                        .map(|kv| String::from_utf8_lossy(kv.value()).into_owned()),
                ),
                _ => None,
            });
            EtcdReply::Txn {
                succeeded: done.succeeded(),
                values: values.collect(),
            }
        }
    })
}

fn lease_id(lease: &str) -> Result<i64, etcd_client::Error> {
    lease
        .parse()
        .map_err(|_| etcd_client::Error::InvalidArgs(format!("lease ID {lease:?}")))
}

fn comparison(c: &Compare) -> Cmp {
    match c {
        Compare::Missing { key } => Cmp::create_revision(key.as_str(), CompareOp::Equal, 0),
        Compare::Equal { key, value } => Cmp::value(key.as_str(), CompareOp::Equal, value.as_str()),
        Compare::Less { key, value } => Cmp::value(key.as_str(), CompareOp::Less, value.as_str()),
    }
}

fn requests(ops: &[TxnOp]) -> Result<Vec<Op>, etcd_client::Error> {
    ops.iter()
        .map(|op| {
            Ok(match op {
                TxnOp::Put { key, value, lease } => {
                    let options = match lease {
                        Some(l) => Some(PutOptions::new().with_lease(lease_id(l)?)),
                        None => None,
                    };
                    Op::put(key.as_str(), value.as_str(), options)
                }
                TxnOp::Range { key } => Op::get(key.as_str(), None),
                TxnOp::Delete { key } => Op::delete(key.as_str(), None),
            })
        })
        .collect()
}

/// An error and its causes, as one line (a transport error's own text names no cause).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = cause.source();
    }
    text
}
