//! Worker-ID leases: worker IDs that assign themselves from a shared registry, with a
//! write-ahead time mark that keeps two holders of one worker ID disjoint.
//!
//! [`LeaseEngine`] is the protocol as a sans-I/O state machine: the host's driver asks it
//! what to do ([`LeaseEngine::poll`] → call the registry, sleep, or start the generator),
//! performs the registry call on its own I/O model, and hands the answer back
//! ([`LeaseEngine::answer`]). The std driver ([`LeasedSnowflake`], over the [`Registry`]
//! trait) runs it on a thread; the JS and asyncio drivers run it on promises.
//!
//! # The registry
//! Per worker ID it holds an `owner` token, the lease's expiry (on the registry's clock),
//! a time mark `mark_ms` that only grows, and the holder's last clock report. Four calls,
//! the same in every language (argument names snake_case, or camelCase in JS):
//!
//! | call | arguments | answer |
//! |---|---|---|
//! | `claim` | `worker_id, owner, ttl_ms` | the ID's mark (0 if never used) when it was free, expired or already this owner's and is now leased to `owner`; `null` when another owner holds it. A registry that assigns worker IDs itself (ZooKeeper in Leaf's layout: one ID per node identity) claims its own choice and answers `{worker_id, mark_ms}` |
//! | `renew` | `worker_id, owner, ttl_ms, mark_ms, reported_ms` | if `owner` holds the ID: extends the lease, raises the mark to at least `mark_ms`, records the report, and answers the stored mark; else `null` |
//! | `release` | `worker_id, owner, mark_ms` | if `owner` holds the ID: sets the mark to `mark_ms` and ends the lease; answers whether it did |
//! | `peers` | — | the live holders' reports: a list of `{worker_id, reported_ms, age_ms}` (`age_ms` by the registry's clock) |
//!
//! # Invariants
//! * **The safety rule.** The generator never issues an ID whose time is above a mark the
//!   registry accepted from this owner (the generator's [`Fence`](crate::snowflake::Fence) caps it), and a new
//!   holder starts above the mark it found at claim time. A holder paused past its lease
//!   therefore issues only IDs at or below its mark, the next holder only above it.
//! * A lease is measured on the monotonic clock from the moment the successful call was
//!   *sent*; the fence is shut before it can have expired ([`Error::LeaseExpired`](crate::Error::LeaseExpired)).
//! * A late answer (after `registry_timeout_ms`) is discarded, never applied.
//! * Release lowers the mark only to the generator's sealed high-water mark, which no
//!   later ID can exceed.

// Registry protocols for the adapters in this repository (segflake-backends and the
// bindings): public for them, not a stable API.
#[doc(hidden)]
pub mod conversation;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
mod driver;
#[doc(hidden)]
pub mod etcd;
#[doc(hidden)]
pub mod redis;
#[doc(hidden)]
pub mod schema;
#[doc(hidden)]
pub mod sql;
#[doc(hidden)]
pub mod zookeeper;

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use driver::{LeasedSnowflake, MemoryRegistry, Registry};

mod call;
mod engine;
mod hosted;
mod options;
mod owner;
mod stats;

pub use call::{peers_answer, RegistryCall, Step};
pub use engine::{LeaseEngine, LEAF_REPORT_MS};
// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
pub use hosted::HostedLease;
// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
pub use options::configure_leased;
pub use options::LeaseOptions;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use owner::{default_label, fresh_nonce};
pub use owner::{owner_token, MAX_LABEL_BYTES, MAX_OWNER_TOKEN_BYTES};
pub use stats::LeaseStats;

/// Sorts `v` ascending by `key` (not stable: callers' keys are unique or plain numbers).
/// A heapsort: O(n log n) on the registries' peer and node lists in a few hundred bytes of
/// WebAssembly, where the standard library's sorts are kilobytes.
pub(crate) fn sort_by_key<T, K: Ord>(v: &mut [T], key: impl Fn(&T) -> K) {
    let sift_down = |v: &mut [T], mut parent: usize, end: usize| loop {
        let mut child = 2 * parent + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && key(&v[child]) < key(&v[child + 1]) {
            child += 1;
        }
        if key(&v[parent]) >= key(&v[child]) {
            return;
        }
        v.swap(parent, child);
        parent = child;
    };
    let n = v.len();
    for parent in (0..n / 2).rev() {
        sift_down(v, parent, n);
    }
    for end in (1..n).rev() {
        v.swap(0, end);
        sift_down(v, 0, end);
    }
}

#[cfg(test)]
mod sort_tests {
    use proptest::prelude::*;

    proptest! {
        /// The same order as the standard library's sort, duplicates included.
        #[test]
        fn sorts_as_the_standard_library(mut v in proptest::collection::vec(0u64..50, 0..200)) {
            let mut expected = v.clone();
            expected.sort_unstable();
            super::sort_by_key(&mut v, |x| *x);
            prop_assert_eq!(v, expected);
        }

        /// By a key: the keys come out ascending and no element is lost.
        #[test]
        fn sorts_by_a_key(v in proptest::collection::vec((0u64..1000, any::<u8>()), 0..200)) {
            let mut sorted = v.clone();
            super::sort_by_key(&mut sorted, |p| p.0);
            prop_assert!(sorted.windows(2).all(|w| w[0].0 <= w[1].0));
            let (mut a, mut b) = (v, sorted.clone());
            a.sort_unstable();
            b.sort_unstable();
            prop_assert_eq!(a, b);
        }
    }
}
