//! segflake: distributed 64-bit ID generation without dependencies and without I/O.
//!
//! * [`Snowflake`]: time-ordered IDs packed by a validated [`Layout`] (Twitter, Sonyflake,
//!   uid-generator and JS-safe presets, or your own), lock-free, strictly increasing,
//!   with a bounded-drift clock policy.
//! * [`codec`]: decimal, base62 and Crockford base32 text forms that sort like numbers;
//!   [`Obfuscator`]: a keyed permutation of the 63-bit space for public IDs.
//! * [`segment`]: Leaf-compatible segment IDs: the sans-I/O [`SegmentEngine`], the std
//!   driver [`SegmentGenerator`] over a [`SegmentStore`], [`MemoryStore`] and the durable,
//!   multi-process [`FileStore`].
//! * [`serial`]: date-prefixed serial numbers ([`SerialGenerator`]).
//! * [`lease`]: worker IDs leased from a shared registry with a write-ahead time mark:
//!   the sans-I/O [`LeaseEngine`] and the std driver [`LeasedSnowflake`].
//!
//! Time comes through the [`Clock`] trait, so the core runs on `wasm32-unknown-unknown`
//! with a host-supplied clock.
//!
//! Cargo features, all on by default: `segment` ([`segment`]), `serial` ([`serial`]),
//! `lease` ([`lease`], which needs `serial`) and `docs` (the descriptions in the option and
//! record tables, `OptionSpec::doc` and `FieldSpec::doc`; empty strings without it). With
//! `default-features = false` the crate holds snowflake generation, layouts, decoding, the
//! codecs and obfuscation only (the snowflake build of the WebAssembly package).
//!
//! The crate has no dependencies and does no I/O of its own: whatever needs a database, a
//! registry or a file comes in through a small trait ([`SegmentStore`], [`Registry`]) or a
//! callback, and the protocols are sans-I/O state machines ([`SegmentEngine`],
//! [`LeaseEngine`]) that async runtimes and other languages drive their own way. Async
//! drivers for tokio are in [`segflake-tokio`](https://docs.rs/segflake-tokio); stores and
//! registries for PostgreSQL, MySQL, Redis, ZooKeeper and etcd in
//! [`segflake-backends`](https://docs.rs/segflake-backends).
//!
//! # Snowflake IDs
//! ```
//! use segflake::{Layout, Preset, Snowflake, SnowflakeOptions};
//!
//! // Twitter's layout (41 time, 10 worker, 12 sequence bits) and worker ID 7.
//! let layout = Layout::preset(Preset::Twitter)?;
//! let generator = Snowflake::new(layout, SnowflakeOptions::new(7))?;
//! let a = generator.next_id()?;
//! let b = generator.next_id()?;
//! assert!(b > a);
//! assert_eq!(generator.decode(b)?.worker_id, 7);
//! # Ok::<(), segflake::Error>(())
//! ```
//!
//! # Segment IDs (Leaf's segment mode)
//! ```
//! use segflake::{MemoryStore, SegmentGenerator, SegmentOptions};
//!
//! // MemoryStore stands in for the database table; the first range is 1..=1000.
//! let options = SegmentOptions::default().with_step(1000);
//! let generator = SegmentGenerator::new(MemoryStore::new(), options)?;
//! assert_eq!(generator.next_id("order")?, 1);
//! let order = generator.tag("order")?; // skips the tag lookup on hot paths
//! assert_eq!(order.next_id()?, 2);
//! generator.close(); // gives the unused tail back to the store
//! # Ok::<(), segflake::Error>(())
//! ```
//!
//! # Worker IDs leased from a registry
//! ```
//! use std::sync::Arc;
//! use segflake::{Layout, LeaseOptions, LeasedSnowflake, MemoryRegistry, Preset, SnowflakeOptions};
//!
//! let registry = Arc::new(MemoryRegistry::new()); // a shared registry in production
//! // A worker ID never used before starts above claim time + max_drift_ms + mark_ahead_ms +
//! // clock_skew_allowance_ms; small values keep this example fast.
//! let options = SnowflakeOptions::new(0).with_max_drift_ms(20);
//! let lease = LeaseOptions::default().with_mark_ahead_ms(50).with_clock_skew_allowance_ms(0);
//! let layout = Layout::preset(Preset::Twitter)?;
//! let a = LeasedSnowflake::start(layout, options, lease, registry.clone(), Some("a".into()))?;
//! let b = LeasedSnowflake::start(layout, options, lease, registry, Some("b".into()))?;
//! assert_ne!(a.worker_id(), b.worker_id());
//! assert_ne!(a.next_id()?, b.next_id()?);
//! a.close();
//! b.close();
//! # Ok::<(), segflake::Error>(())
//! ```
//!
//! # Date-prefixed serials
//! ```
//! use segflake::{ManualClock, SerialGenerator, SerialOptions};
//!
//! // 2025-04-13 12:00:00 UTC, 4 sequence digits.
//! let clock = ManualClock::new(1_744_545_600_000);
//! let serials = SerialGenerator::with_clock(SerialOptions::default(), clock)?;
//! assert_eq!(serials.next()?, 2504131200000001);
//! assert_eq!(serials.next()?, 2504131200000002);
//! # Ok::<(), segflake::Error>(())
//! ```

#![warn(missing_docs)]

#[macro_use]
mod setters;

// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
#[cfg(all(feature = "segment", feature = "lease", feature = "serial"))]
pub mod catalog;
pub mod clock;
pub mod codec;
// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
pub mod datetime;
pub mod error;
// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
pub mod fork;
// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
pub mod host;
pub mod layout;
#[cfg(feature = "lease")]
pub mod lease;
pub mod obfuscate;
// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
pub mod redis;
#[cfg(feature = "segment")]
pub mod segment;
#[cfg(feature = "serial")]
pub mod serial;
pub mod snowflake;
pub mod worker;

pub use clock::{Clock, ManualClock, SystemClock};
pub use codec::Format;
pub use error::{Detail, Error, ErrorKind, Result};
// Public only for the bindings and the CLI in this repository: not a stable API.
pub use host::Value;
#[doc(hidden)]
pub use host::{configure, Dialect, Options, Record, SnowflakeConfig, Spelling};
pub use layout::{DecodedId, FieldOrder, Layout, LayoutSpec, Preset};
#[cfg(feature = "lease")]
pub use lease::{LeaseEngine, LeaseOptions, LeaseStats, RegistryCall, Step};
#[cfg(all(
    feature = "lease",
    not(all(target_arch = "wasm32", target_os = "unknown"))
))]
pub use lease::{LeasedSnowflake, MemoryRegistry, Registry};
pub use obfuscate::Obfuscator;
#[cfg(feature = "segment")]
pub use segment::{
    Allocation, FetchRequest, FnStore, GiveBack, MemoryStore, MultiStore, Residue, SegmentEngine,
    SegmentOptions, SegmentStats, SegmentStore, StoreFailure,
};
#[cfg(all(
    feature = "segment",
    not(all(target_arch = "wasm32", target_os = "unknown"))
))]
pub use segment::{FileStore, FileStoreOptions, SegmentGenerator, TagHandle};
#[cfg(feature = "serial")]
pub use serial::{CounterRequest, SerialCount, SerialGenerator, SerialOptions, SerialParts};
pub use snowflake::{Fence, IdRun, Reserve, SequenceStart, Snowflake, SnowflakeOptions};
pub use worker::{worker_id_from_hostname, worker_id_from_ipv4, worker_id_from_text};

/// The largest batch any `next_ids`-style call accepts in one go (16,777,216).
pub const MAX_BATCH: usize = 1 << 24;

/// Refuses a batch size of 0 or above [`MAX_BATCH`], as [`host::BATCH_SIZE`] says.
// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
pub fn check_batch_size(n: usize) -> Result<()> {
    let n = host::Value::uint(u64::try_from(n).unwrap_or(u64::MAX));
    host::check(&host::BATCH_SIZE, &n, Dialect::NATIVE).map(|_| ())
}

/// The crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The README's examples, run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
