//! Shared test helpers: a store the tests can stall, fail and inspect, and a macro that runs
//! each scenario on a current-thread and on a multi-thread runtime.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use segflake::{Allocation, MemoryStore, SegmentStore, StoreFailure};
use segflake_tokio::AsyncSegmentStore;
use tokio::sync::Semaphore;

/// Runs each named `async fn` as two tests: `name::current_thread` and
/// `name::multi_thread` (2 workers).
#[macro_export]
macro_rules! both_runtimes {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            #[tokio::test]
            async fn current_thread() {
                super::$scenario().await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn multi_thread() {
                super::$scenario().await
            }
        }
    )*};
}

/// A `MemoryStore` behind an async store whose calls can be held at a gate or failed.
#[derive(Debug)]
pub struct TestStore {
    pub inner: MemoryStore,
    pub fail: AtomicBool,
    /// While set, every allocation waits for a permit of `gate` first.
    pub gated: AtomicBool,
    pub gate: Semaphore,
    pub allocations: AtomicU64,
    pub give_backs: AtomicU64,
}

impl TestStore {
    pub fn new() -> Arc<TestStore> {
        Arc::new(TestStore {
            inner: MemoryStore::new(),
            fail: AtomicBool::new(false),
            gated: AtomicBool::new(false),
            gate: Semaphore::new(0),
            allocations: AtomicU64::new(0),
            give_backs: AtomicU64::new(0),
        })
    }

    pub fn hold(&self) {
        self.gated.store(true, Ordering::SeqCst);
    }

    /// Lets every waiting and later allocation through.
    pub fn release(&self) {
        self.gated.store(false, Ordering::SeqCst);
        self.gate.add_permits(1000);
    }

    pub fn set_failing(&self, fail: bool) {
        self.fail.store(fail, Ordering::SeqCst);
    }
}

impl AsyncSegmentStore for TestStore {
    async fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        if self.gated.load(Ordering::SeqCst) {
            self.gate.acquire().await.expect("gate open").forget();
        }
        if self.fail.load(Ordering::SeqCst) {
            return Err(StoreFailure::Failed("the database is down".into()));
        }
        self.allocations.fetch_add(1, Ordering::SeqCst);
        self.inner.allocate(tag, step)
    }

    async fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> Result<bool, StoreFailure> {
        self.give_backs.fetch_add(1, Ordering::SeqCst);
        self.inner.give_back(tag, expected_max_id, max_id)
    }
}

/// Whether `ids` strictly increase.
pub fn increasing(ids: &[u64]) -> bool {
    ids.windows(2).all(|w| w[0] < w[1])
}

/// A fresh path under the system's temporary directory.
pub fn temp_path(name: &str) -> std::path::PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    std::env::temp_dir().join(format!(
        "segflake-tokio-{}-{name}-{n}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ))
}
