//! etcd, async: the blocking registry's members, deadlines and the core's conversation
//! (`crate::etcd::Etcd`), on the caller's runtime.

use segflake::{RegistryCall, Value};
use segflake_tokio::AsyncRegistry;

use crate::etcd::{Etcd, State};
use crate::RegistryOptions;

/// The async etcd lease registry: the core's
/// [`EtcdProtocol`](segflake::lease::etcd::EtcdProtocol) (keys under a prefix, leases,
/// transactions), performed by `etcd-client` on the caller's runtime (no runtime of its
/// own), as the blocking [`crate::EtcdRegistry`] performs it on its own. Every call is
/// bounded by `RegistryOptions::timeout_ms`.
pub struct EtcdRegistry {
    etcd: Etcd,
    state: tokio::sync::Mutex<State>,
}

impl EtcdRegistry {
    /// The registry of `url`: `etcd[+tls]://HOST:PORT[,HOST:PORT][/PREFIX][?ca=PATH]`
    /// (default prefix `/segflake`). The members are tried in the URL's order; after a
    /// failed request the next call connects again, starting with the next member. Nothing
    /// is connected yet.
    pub fn new(url: &str, options: &RegistryOptions) -> crate::Result<EtcdRegistry> {
        let (etcd, state) = Etcd::parse(url, options)?;
        Ok(EtcdRegistry {
            etcd,
            state: tokio::sync::Mutex::new(state),
        })
    }

    /// The registry on a caller's client (its endpoints, TLS, credentials), with the keys
    /// under `prefix` (the URL's path, `/segflake` by default). The client is kept after
    /// failures: its channel reconnects by itself.
    pub fn from_client(
        client: etcd_client::Client,
        prefix: &str,
        options: &RegistryOptions,
    ) -> EtcdRegistry {
        let (etcd, state) = Etcd::with_client(client, prefix, options);
        EtcdRegistry {
            etcd,
            state: tokio::sync::Mutex::new(state),
        }
    }
}

impl AsyncRegistry for EtcdRegistry {
    async fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        let mut state = self.state.lock().await;
        self.etcd.call(&mut state, call).await
    }
}
