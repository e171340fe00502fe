//! Async drivers for [segflake]'s generators on tokio.
//!
//! The ID logic lives in the core's sans-I/O engines; this crate only drives them from a
//! tokio runtime, the way the std drivers drive them from threads:
//!
//! * [`SegmentGenerator`]: Leaf-compatible segment IDs over the core's
//!   [`SegmentEngine`](segflake::SegmentEngine) and an [`AsyncSegmentStore`].
//! * [`LeasedSnowflake`]: snowflake IDs whose worker ID is leased from an
//!   [`AsyncRegistry`] by the core's [`LeaseEngine`](segflake::LeaseEngine).
//! * [`SerialGenerator`]: date-prefixed serials whose per-second sequence comes from an
//!   [`AsyncSerialCounter`], over the core's [`segflake::SerialGenerator`].
//!
//! # What every driver promises
//! * **The hot path never awaits.** `next_id().await` takes an ID from the engine
//!   synchronously while one is ready: one poll, lock-free, no allocation. It awaits only
//!   when the buffer is empty (a segment being fetched, the clock's next tick).
//! * **Store, registry and counter calls run on the runtime** as tasks, each with the
//!   deadline the core's options give (`store_timeout_ms`, `registry_timeout_ms`,
//!   `counter_timeout_ms`); past it the call's future is dropped and the call counts as
//!   failed. Nothing blocks a runtime thread; every driver works on a current-thread
//!   runtime.
//! * **Cancellation-safe.** An ID is taken from the engine only in the poll that returns
//!   it, so a `next_id` future dropped at any await (a `select!`, a `timeout`, an aborted
//!   task) neither loses nor repeats an ID.
//! * **`close().await`** stops issuing, gives unused segment IDs back to the store and
//!   releases the lease. **`Drop`** without it stops issuing and aborts the background
//!   tasks (nothing is given back, the lease expires by itself); it never panics, inside a
//!   runtime or after the runtime is gone.
//! * Errors are the core's [`segflake::Error`].
//!
//! # Stores, registries and counters
//! The traits use `async fn` in traits (`impl Future + Send` in their signatures), so you
//! implement them with plain `async fn` over your own client or pool, and no call is
//! boxed by you. The drivers themselves are not generic: they keep the store behind an
//! internal object-safe form that boxes one future per call. A call is a network round
//! trip made once per segment, renewal or serial, so that allocation costs nothing next
//! to it, and you get plain `SegmentGenerator` / `LeasedSnowflake` types to put in your
//! application state.
//!
//! The core's synchronous stores and registries ([`segflake::MemoryStore`],
//! [`segflake::FileStore`], [`segflake::MemoryRegistry`], or any blocking database
//! adapter implementing [`segflake::SegmentStore`] / [`segflake::Registry`]) work through
//! [`Blocking`], which runs each call on tokio's blocking pool.
//!
//! # Example
//! ```
//! use segflake::{MemoryStore, SegmentOptions};
//! use segflake_tokio::{Blocking, SegmentGenerator};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> segflake::Result<()> {
//! let generator = SegmentGenerator::new(Blocking::new(MemoryStore::new()), SegmentOptions::default())?;
//! let orders = generator.tag("order")?;
//! let mut last = 0;
//! for _ in 0..5000 {
//!     let id = orders.next_id().await?;
//!     assert!(id > last);
//!     last = id;
//! }
//! generator.close().await;
//! # Ok(())
//! # }
//! ```
//!
//! [segflake]: https://docs.rs/segflake

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod lease;
mod segment;
mod serial;
mod time;
mod traits;

pub use lease::{LeasedGenerator, LeasedSnowflake, CLOCK_STALL_MS};
pub use segment::{SegmentGenerator, TagHandle};
pub use serial::SerialGenerator;
pub use traits::{
    AsyncRegistry, AsyncSegmentStore, AsyncSerialCounter, Blocking, CounterRequest, FnCounter,
};
