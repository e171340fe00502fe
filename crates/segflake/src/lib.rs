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

#[macro_use]
mod setters;

pub mod catalog;
pub mod clock;
pub mod codec;
pub mod datetime;
pub mod error;
pub mod fork;
pub mod host;
pub mod layout;
pub mod lease;
pub mod obfuscate;
pub mod segment;
pub mod serial;
pub mod snowflake;
pub mod worker;

pub use clock::{Clock, ManualClock, SystemClock};
pub use codec::Format;
pub use error::{Detail, Error, ErrorKind, Result};
pub use host::{configure, Dialect, Options, Record, SnowflakeConfig, Spelling, Value};
pub use layout::{DecodedId, FieldOrder, Layout, LayoutSpec, Preset};
pub use lease::{LeaseEngine, LeaseOptions, LeaseStats, RegistryCall, Step};
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use lease::{LeasedSnowflake, MemoryRegistry, Registry};
pub use obfuscate::Obfuscator;
pub use segment::{
    Allocation, FetchRequest, FnStore, GiveBack, MemoryStore, MultiStore, Residue, SegmentEngine,
    SegmentOptions, SegmentStats, SegmentStore, StoreFailure,
};
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use segment::{FileStore, FileStoreOptions, SegmentGenerator, TagHandle};
pub use serial::{SerialGenerator, SerialOptions, SerialParts};
pub use snowflake::{Fence, SequenceStart, Snowflake, SnowflakeOptions};
pub use worker::{worker_id_from_hostname, worker_id_from_ipv4, worker_id_from_text};

/// The largest batch any `next_ids`-style call accepts in one go (16,777,216).
pub const MAX_BATCH: usize = 1 << 24;

/// Refuses a batch size of 0 or above [`MAX_BATCH`], as [`host::BATCH_SIZE`] says.
pub fn check_batch_size(n: usize) -> Result<()> {
    let n = host::Value::uint(u64::try_from(n).unwrap_or(u64::MAX));
    host::check(&host::BATCH_SIZE, &n, Dialect::NATIVE).map(|_| ())
}

/// The crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
