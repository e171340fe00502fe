//! ZooKeeper, async: the blocking registry's session handling and the core's
//! conversation (`crate::zookeeper::Zk`), on the caller's runtime.

use segflake::{RegistryCall, Value};
use segflake_tokio::AsyncRegistry;

use crate::zookeeper::{Settings, State, Zk};
use crate::RegistryOptions;

/// The async ZooKeeper lease registry in Leaf's layout: the core's
/// [`ZooKeeperProtocol`](segflake::lease::zookeeper::ZooKeeperProtocol), performed by
/// `zookeeper-client` on the caller's runtime (no runtime of its own), as the blocking
/// [`crate::ZooKeeperRegistry`] performs it on its own. A session that expired is replaced
/// on the next call; every call is bounded by `RegistryOptions::timeout_ms`.
///
/// The session is the registry's own (made from the URL): Leaf's layout ties the lease to
/// the session, which the registry must be able to replace, so a caller's client is not
/// taken.
pub struct ZooKeeperRegistry {
    zk: Zk,
    state: tokio::sync::Mutex<State>,
}

impl ZooKeeperRegistry {
    /// The registry of `url`:
    /// `zk[+tls]://HOST:PORT[,HOST:PORT]/ROOT[?identity=IP:PORT&session_timeout_ms=N&ca=PATH]`
    /// (as [`crate::ZooKeeperRegistry::new`]). Nothing is connected yet; with TLS, the
    /// local ends of the TLS connections listen on the loopback from now on, as tasks on
    /// the current runtime (stopped when the registry is dropped).
    pub async fn new(url: &str, options: &RegistryOptions) -> crate::Result<ZooKeeperRegistry> {
        let settings = Settings::parse(url, options)?;
        let (zk, state) = Zk::start(settings).await?;
        Ok(ZooKeeperRegistry {
            zk,
            state: tokio::sync::Mutex::new(state),
        })
    }
}

impl AsyncRegistry for ZooKeeperRegistry {
    async fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        let mut state = self.state.lock().await;
        self.zk.call(&mut state, call).await
    }
}
