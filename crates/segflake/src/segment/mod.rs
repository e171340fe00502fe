//! Leaf-compatible segment IDs: dense per-tag IDs from ranges a store hands out.
//!
//! # The store contract (Leaf's)
//! `allocate(tag, step)` atomically performs `max_id = max_id + step` for the tag and
//! returns an [`Allocation`] with the new `max_id` and the `step` it used; the caller then
//! owns `[max_id - step, max_id)`. A fresh Leaf row with `max_id = 1` and `step = 2000`
//! yields 1..=2000, then 2001..=4000. A table Leaf already advanced continues above it.
//! Stores in this crate: [`MemoryStore`], [`FileStore`] (`file:PATH`); any
//! closure `Fn(&str, u64) -> Result<Allocation, String> + Send + Sync` wrapped in
//! [`FnStore`] is a [`SegmentStore`].
//!
//! # Two layers
//! * [`SegmentEngine`]: the sans-I/O state of one tag. It never blocks, never spawns,
//!   never reads a clock (time comes in as `now_ms`, any monotonic milliseconds) and never
//!   calls the store. Node and WebAssembly drive it from the event loop with an async
//!   store; the std driver drives it with threads.
//! * [`SegmentGenerator`] (not on `wasm32-unknown-unknown`): the std driver over a
//!   [`SegmentStore`], with background fetch threads, a bounded wait, [`TagHandle`]s and
//!   [`close`](SegmentGenerator::close). C and Python use it with a foreign callback store.
//!
//! # Driving a [`SegmentEngine`] (the binding author's manual)
//! One engine per tag (`SegmentEngine::new(tag, &options)`); share it freely (`Send + Sync`).
//! 1. **Take**: [`try_next`](SegmentEngine::try_next) returns `Some(id)` or `None` ("no
//!    ready segment"); [`try_next_batch`](SegmentEngine::try_next_batch) fills a slice and
//!    returns the count. Both are lock-free and allocation-free while a segment lasts.
//! 2. **After every take (hit or miss)**, if [`wants_fetch`](SegmentEngine::wants_fetch)
//!    (one atomic load) call [`begin_fetch(now_ms)`](SegmentEngine::begin_fetch). When it
//!    returns `Some(FetchRequest { step, store })`, call store `store` (0 unless the engine
//!    spans several, see [`SegmentEngine::with_stores`]) with `(engine.tag(), step)`
//!    without holding any lock of yours the store might need. A new engine wants its first
//!    fetch at once, so call `begin_fetch` right after creating it to warm it up.
//! 3. **When the store answers** (or throws, rejects, times out in your own code), call
//!    [`complete_fetch(now_ms, Ok(Allocation) | Err(StoreFailure))`](SegmentEngine::complete_fetch)
//!    exactly once per request (`Err(message.into())` for a failure,
//!    [`StoreFailure::UnknownTag`] when the store has no such tag). It validates and installs the range (as the current
//!    segment if the current one is used up, else as the next one) or records the failure.
//!    Then wake whoever waits and let them call `try_next` again.
//! 4. **When a caller finds no ID** and wants to wait: make sure a fetch is in flight (step
//!    2; when none is, fail at once: a tag the store said it does not have is not asked
//!    again before `retry_backoff_ms`), wait for the completion (bounded: default [`DEFAULT_WAIT_TIMEOUT_MS`]), retry the
//!    take; if the completion was a failure
//!    ([`failure_count`](SegmentEngine::failure_count) went up) or the wait timed out, fail
//!    with [`exhausted_error(now_ms)`](SegmentEngine::exhausted_error)
//!    ([`Error::SegmentsExhausted`] with the last failure as
//!    `cause`, or [`Error::UnknownTag`]). The next call starts a new fetch: an empty engine retries at once; a
//!    prefetch that failed while IDs remain is retried after `retry_backoff_ms`.
//! 5. [`stats(now_ms)`](SegmentEngine::stats) returns a [`SegmentStats`];
//!    [`close`](SegmentEngine::close) makes every later take return `None`.
//!
//! Do not start fetches on your own initiative (for example in a loop after a failure):
//! only when `begin_fetch` hands out a request. That rule alone keeps at most one fetch per
//! tag in flight and a failing store from being hammered.
//!
//! # Invariants
//! * **No ID is ever issued twice**, from any number of threads: every ID comes from one
//!   atomic cursor that only increases, and is issued only if it lies in a range the engine
//!   accepted from the store. A range is accepted only if it starts at or above the end of
//!   every range accepted before for the tag, so no range is ever installed twice.
//! * A range the store returns that overlaps or precedes an earlier one, has step 0, a
//!   `max_id` below its step or above `i64::MAX` is refused with
//!   [`Error::StoreContractViolation`]; none of its IDs
//!   is issued, and the refusal counts as a failure.
//! * **Order**: each thread (and therefore a single-threaded JS caller) sees strictly
//!   increasing IDs, and every batch is strictly increasing. Across threads IDs are unique
//!   but two threads racing at the same instant may return them out of numeric order
//!   (as in Leaf).
//! * IDs are dense within a segment. Gaps appear where the store skipped (other processes
//!   took those ranges), when a process stops with buffered IDs unused, and, rarely, when
//!   threads race at the end of a segment (at most one ID per racing thread).
//! * At most one fetch per tag is in flight. The step of each request follows Leaf's rule:
//!   the first two use `step`; later ones double if the previous segment lasted under 15
//!   minutes (up to `max_step`), stay under 30 minutes, and halve beyond (not below `step`).
//!
//! # The std driver
//! [`SegmentGenerator::new(store, options)`](SegmentGenerator::new) starts
//! `fetch_threads` background threads that perform the store calls. `next_id(tag)` takes
//! from the engine; when a segment runs out it waits (without holding any lock the store
//! could need) for the fetch, at most `wait_timeout_ms`, then fails with
//! `SegmentsExhausted`. The store is called only from the background threads, never with an
//! internal lock held. A panic in the store becomes a failed fetch.
//! [`tag(name)`](SegmentGenerator::tag) returns a [`TagHandle`] that skips the tag lookup.
//! Dropping the generator (or [`close`](SegmentGenerator::close)) stops the threads after
//! their current store call; in a child process after `fork()` it does not touch the
//! threads or locks it inherited (bindings must still refuse to issue IDs from an inherited
//! generator: its buffered ranges are also in the parent).

mod engine;
mod memory;
mod options;
// Store statements for the adapters in this repository: not a stable API.
#[doc(hidden)]
pub mod statements;

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
mod driver;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
mod file;

pub use engine::{SegmentEngine, SEGMENT_DURATION_MS};
pub use memory::MemoryStore;
// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
pub use options::{allocation_of, store_failed_message, store_timeout_message};

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use driver::{SegmentGenerator, TagHandle};
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use file::{FileStore, FileStoreOptions, TagRecord};

use crate::error::{quoted, quoted_char, Error, Result};

/// The largest ID a segment can contain is `MAX_ID - 1` (`max_id` is at most `i64::MAX`).
pub const MAX_ID: u64 = i64::MAX as u64;
/// Leaf's upper bound for the dynamic step.
pub const DEFAULT_MAX_STEP: u64 = 1_000_000;
/// Default step of a request.
pub const DEFAULT_STEP: u64 = 1000;
/// Default prefetch trigger: the next segment is fetched once 10% of the current is used.
pub const DEFAULT_PREFETCH_PERCENT: u8 = 10;
/// Default bound on how long a caller waits for a segment (1 s).
pub const DEFAULT_WAIT_TIMEOUT_MS: u64 = 1000;
/// Default delay before a failed prefetch is retried while IDs remain.
pub const DEFAULT_RETRY_BACKOFF_MS: u64 = 1000;
/// Default bound on one store call (10 s).
pub const DEFAULT_STORE_TIMEOUT_MS: u64 = 10_000;
/// Longest accepted tag, in bytes (Leaf's `biz_tag` is `varchar(128)`).
pub const MAX_TAG_LEN: usize = 128;

/// What a store returns: the tag's new `max_id` and the step it used. The caller owns
/// `[max_id - step, max_id)`. `tag_step` is the step the store keeps for the tag (Leaf's
/// `leaf_alloc.step`), if it keeps one: it replaces [`SegmentOptions::step`] for that tag
/// as the start and floor of the dynamic step, as in Leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Allocation {
    /// The tag's new `max_id`: the end (exclusive) of the range handed out.
    pub max_id: u64,
    /// The size of the range handed out: `[max_id - step, max_id)`.
    pub step: u64,
    /// The step the store keeps for the tag (Leaf's `leaf_alloc.step`), if it keeps one.
    pub tag_step: Option<u64>,
    /// The residue class the store says its rows issue (Tinyid's `delta`/`remainder`),
    /// if it says: it must be the class the engine assigned to that store.
    pub residue: Option<Residue>,
}

/// A residue class: the IDs `≡ remainder (mod delta)`. In multi-store mode store `i` of
/// `n` issues only the class `(n, i)`; a single store issues `(1, 0)`, every ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Residue {
    /// The modulus: how many stores share the tag.
    pub delta: u64,
    /// The remainder of every ID of the class, below `delta`.
    pub remainder: u64,
}

impl Allocation {
    /// An allocation (unchecked; the engine checks it).
    pub const fn new(max_id: u64, step: u64) -> Allocation {
        Allocation {
            max_id,
            step,
            tag_step: None,
            residue: None,
        }
    }

    /// The same allocation, reporting the residue class the store issues.
    pub const fn with_residue(self, delta: u64, remainder: u64) -> Allocation {
        Allocation {
            residue: Some(Residue { delta, remainder }),
            ..self
        }
    }

    /// The same allocation, reporting the step the store keeps for the tag.
    pub const fn with_tag_step(self, tag_step: u64) -> Allocation {
        Allocation {
            tag_step: Some(tag_step),
            ..self
        }
    }

    /// The first ID of the range (`max_id - step`, saturating).
    pub const fn start(&self) -> u64 {
        self.max_id.saturating_sub(self.step)
    }
}

/// Why a store call gave no range.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StoreFailure {
    /// The call failed (connection, timeout, a refused answer); the text is the cause.
    Failed(String),
    /// The store has no such tag (Leaf's "key not exists"): callers get
    /// [`Error::UnknownTag`] once no buffered ID is left, and the store is asked again no
    /// sooner than `retry_backoff_ms` later.
    UnknownTag,
}

impl From<String> for StoreFailure {
    fn from(message: String) -> StoreFailure {
        StoreFailure::Failed(message)
    }
}

impl From<&str> for StoreFailure {
    fn from(message: &str) -> StoreFailure {
        StoreFailure::Failed(message.to_owned())
    }
}

/// A binding's refused answer: an unknown tag stays one, anything else is its message.
impl From<Error> for StoreFailure {
    fn from(e: Error) -> StoreFailure {
        match e {
            Error::UnknownTag { .. } => StoreFailure::UnknownTag,
            other => StoreFailure::Failed(other.to_string()),
        }
    }
}

impl std::fmt::Display for StoreFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreFailure::Failed(message) => f.write_str(message),
            StoreFailure::UnknownTag => f.write_str("the store has no such tag"),
        }
    }
}

/// A fetch the engine wants: call the store's `allocate(tag, step)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FetchRequest {
    /// The step to ask the store for.
    pub step: u64,
    /// Which store to ask: an index into the store list (always 0 for a single store).
    pub store: usize,
}

options_struct! {
    /// Settings of a segment engine and of the std driver. Plain data; build with
    /// `SegmentOptions::default()` and its `with_*` setters:
    ///
    /// ```
    /// use segflake::SegmentOptions;
    ///
    /// let options = SegmentOptions::default().with_step(1000).with_dynamic_step(false);
    /// assert_eq!((options.step, options.dynamic_step), (1000, false));
    /// assert!(options.validate().is_ok());
    /// ```
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub struct SegmentOptions {
        /// The step of the first requests and the floor of the dynamic step: `1..=max_step`
        /// (for a tag whose store reports its own step, that step).
        pub step: u64 => with_step,
        /// The ceiling of the dynamic step: `step..=i64::MAX` (default 1,000,000 like Leaf).
        pub max_step: u64 => with_max_step,
        /// Leaf's dynamic step on (default) or a fixed step.
        pub dynamic_step: bool => with_dynamic_step,
        /// Fetch the next segment once this percentage of the current one is used: `0..=100`
        /// (0 = at once, 100 = only when it is used up). Default 10.
        pub prefetch_percent: u8 => with_prefetch_percent,
        /// After a failed fetch, a prefetch is retried no sooner than this (while IDs remain;
        /// an empty engine retries on the next call), and with several stores the one that
        /// failed is not asked again before this. Default 1000 ms; at most 3,600,000.
        pub retry_backoff_ms: u64 => with_retry_backoff_ms,
        /// Std driver: how long `next_id` waits for a segment before `SegmentsExhausted`:
        /// `1..=3,600,000` ms, default 1000.
        pub wait_timeout_ms: u64 => with_wait_timeout_ms,
        /// Std driver: background threads calling the store (`1..=64`, default 1). With more
        /// than one, the store is called concurrently for different tags.
        pub fetch_threads: usize => with_fetch_threads,
        /// How long one store call may run before the driver counts it as failed:
        /// `1..=3,600,000` ms, default 10,000. A late answer is discarded, never issued.
        pub store_timeout_ms: u64 => with_store_timeout_ms,
        /// On a graceful close, hand the IDs that were fetched but not issued back to the store
        /// when nobody allocated after them ([`SegmentEngine::take_give_back`],
        /// [`SegmentStore::give_back`]), so that a restart continues without a gap. Default on.
        pub give_back: bool => with_give_back,
    }
}

impl Default for SegmentOptions {
    fn default() -> Self {
        SegmentOptions {
            step: DEFAULT_STEP,
            max_step: DEFAULT_MAX_STEP,
            dynamic_step: true,
            prefetch_percent: DEFAULT_PREFETCH_PERCENT,
            retry_backoff_ms: DEFAULT_RETRY_BACKOFF_MS,
            wait_timeout_ms: DEFAULT_WAIT_TIMEOUT_MS,
            fetch_threads: 1,
            store_timeout_ms: DEFAULT_STORE_TIMEOUT_MS,
            give_back: true,
        }
    }
}

const MAX_WAIT_MS: u64 = 3_600_000;

impl SegmentOptions {
    /// Checks every field; the error names the field and its allowed range.
    pub fn validate(&self) -> Result<()> {
        let range = Error::check_range;
        range("max_step", self.max_step, 1, MAX_ID, "")?;
        range("step", self.step, 1, self.max_step, " (max_step)")?;
        range("prefetch_percent", self.prefetch_percent.into(), 0, 100, "")?;
        range(
            "retry_backoff_ms",
            self.retry_backoff_ms,
            0,
            MAX_WAIT_MS,
            "",
        )?;
        range("wait_timeout_ms", self.wait_timeout_ms, 1, MAX_WAIT_MS, "")?;
        range(
            "store_timeout_ms",
            self.store_timeout_ms,
            1,
            MAX_WAIT_MS,
            "",
        )?;
        range("fetch_threads", self.fetch_threads as u64, 1, 64, "")?;
        Ok(())
    }
}

/// Checks a business tag: 1 to 128 bytes, no whitespace or control characters.
pub fn check_tag(tag: &str) -> Result<()> {
    if tag.is_empty() || tag.len() > MAX_TAG_LEN {
        return Err(Error::invalid_argument(
            "tag",
            format!(
                "{tag} has {} bytes; a tag must have 1..={MAX_TAG_LEN} bytes",
                tag.len(),
                tag = quoted(tag)
            ),
        ));
    }
    if let Some(c) = tag.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::invalid_argument(
            "tag",
            format!(
                "{tag} contains {c}; a tag may not contain whitespace or control characters",
                tag = quoted(tag),
                c = quoted_char(c)
            ),
        ));
    }
    Ok(())
}

/// A snapshot of one tag's state. Ranges are half-open `[start, end)`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SegmentStats {
    /// The business tag.
    pub tag: String,
    /// The current segment (`current_start == current_end` when there is none yet).
    pub current_start: u64,
    /// The end (exclusive) of the current segment.
    pub current_end: u64,
    /// The next ID the current segment would issue (`current_end` when it is used up).
    pub position: u64,
    /// IDs left in the current segment.
    pub remaining: u64,
    /// Whether the next segment is ready, and its range (0, 0 when not).
    pub next_ready: bool,
    /// The start of the next segment (0 when none is ready).
    pub next_start: u64,
    /// The end (exclusive) of the next segment (0 when none is ready).
    pub next_end: u64,
    /// The step of the fetch in flight, or of the last request.
    pub step: u64,
    /// Whether a fetch from the store is in flight.
    pub fetch_in_flight: bool,
    /// Completed fetches (successful or not), failures among them, failures in a row.
    pub fetches: u64,
    /// Failed fetches.
    pub failures: u64,
    /// Failed fetches since the last successful one.
    pub consecutive_failures: u64,
    /// The last failure (store error or refused range), if any.
    pub last_error: Option<String>,
    /// How long the last completed fetch took.
    pub last_fetch_latency_ms: Option<u64>,
    /// IDs taken from this tag's segments so far (including the rare IDs lost to races).
    pub issued: u64,
    /// Recent consumption rate (over the last second or more between observations).
    pub ids_per_second: f64,
    /// Seconds the buffered IDs (current remainder plus a ready next segment) would last at
    /// `ids_per_second` if the store went down now; `None` when nothing is being consumed.
    pub runway_seconds: Option<f64>,
}

/// Where IDs' ranges come from. Implement it for a database, or wrap a closure
/// `|tag: &str, step: u64| -> Result<Allocation, String>` in [`FnStore`].
///
/// `allocate` must atomically raise the tag's `max_id` by `step` (or by the step it
/// prefers, which it returns) and return the new `max_id`. It is called from the driver's
/// background threads, never with a driver lock held; with `fetch_threads > 1` it is
/// called concurrently for different tags. A failure's message is shown as the `cause`;
/// [`StoreFailure::UnknownTag`] says the tag does not exist.
///
/// A store of your own (here a map behind a mutex, standing in for Leaf's `leaf_alloc`
/// table: `UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?` and a `SELECT`
/// in one transaction):
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
/// use segflake::{Allocation, SegmentGenerator, SegmentOptions, SegmentStore, StoreFailure};
///
/// struct Table(Mutex<HashMap<String, u64>>);
///
/// impl SegmentStore for Table {
///     fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
///         let mut rows = self.0.lock().map_err(|_| "poisoned")?;
///         let max_id = rows.get_mut(tag).ok_or(StoreFailure::UnknownTag)?;
///         *max_id += step;
///         Ok(Allocation::new(*max_id, step))
///     }
/// }
///
/// let table = Table(Mutex::new(HashMap::from([("order".to_string(), 1)])));
/// let options = SegmentOptions::default().with_step(100).with_give_back(false);
/// let generator = SegmentGenerator::new(table, options)?;
/// let ids = generator.tag("order")?.next_ids_vec(150)?; // spans two segments
/// assert_eq!((ids[0], ids[149]), (1, 150));
/// assert!(generator.next_id("invoice").is_err()); // no such row
/// # Ok::<(), segflake::Error>(())
/// ```
pub trait SegmentStore: Send + Sync {
    /// Atomically raises `tag`'s `max_id` by `step` (or by the step the store prefers) and
    /// returns the new `max_id` and the step used; the caller owns `[max_id - step, max_id)`.
    fn allocate(&self, tag: &str, step: u64) -> std::result::Result<Allocation, StoreFailure>;

    /// How many databases the store spans: 1, or the length of a [`MultiStore`]'s list.
    /// The driver builds its engines with [`SegmentEngine::with_stores`] for this count.
    fn store_count(&self) -> usize {
        1
    }

    /// `allocate` on store `store` of [`store_count`](SegmentStore::store_count) (the
    /// index a [`FetchRequest`] names).
    fn allocate_from(
        &self,
        store: usize,
        tag: &str,
        step: u64,
    ) -> std::result::Result<Allocation, StoreFailure> {
        let _ = store;
        self.allocate(tag, step)
    }

    /// Lowers `tag`'s `max_id` from `expected_max_id` to `max_id` if, and only if, it is
    /// still `expected_max_id` (nobody allocated since this generator's last range), in one
    /// atomic step. Returns whether it did. The IDs `[max_id, expected_max_id)` were
    /// fetched by a generator that closed without issuing them ([`GiveBack`]). The default
    /// gives nothing back.
    ///
    /// A store's give back must be safe to run twice: a request resent after a lost reply
    /// (by a driver, a pool, a proxy) or delayed must not lower `max_id` again after other
    /// processes allocated exactly the range given back, which would hand those IDs out
    /// twice. A bare compare-and-set (`UPDATE … SET max_id = :max_id WHERE max_id =
    /// :expected_max_id`) is not: use a token made for each give back, as the SQL and
    /// Redis stores do (the core's `give_back_intent` and `give_back` statements and its
    /// Redis script, [`statements`]), so a second run with the same token changes nothing.
    fn give_back(
        &self,
        tag: &str,
        expected_max_id: u64,
        max_id: u64,
    ) -> std::result::Result<bool, StoreFailure> {
        let _ = (tag, expected_max_id, max_id);
        Ok(false)
    }
}

/// IDs a closed engine fetched and never issued, which its store may take back
/// ([`SegmentEngine::take_give_back`]): the store's `max_id` for the tag goes from
/// `expected_max_id` (the end of the engine's last range) down to `max_id` (the first ID it
/// did not issue), if nobody allocated since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GiveBack {
    /// The tag's `max_id` the store must still hold (the end of the engine's last range).
    pub expected_max_id: u64,
    /// The `max_id` to set: the first ID the engine did not issue.
    pub max_id: u64,
}

/// The most stores a [`MultiStore`] (and an engine) may span.
pub const MAX_STORES: usize = 64;

/// Checks a store count: `1..=`[`MAX_STORES`], the check
/// [`SegmentEngine::with_stores`] makes. For drivers that make their engines lazily (one
/// per tag, on first use) and want a bad store refused when they are built.
///
/// Errors: [`Error::InvalidArgument`] naming the allowed range.
pub fn check_store_count(stores: usize) -> Result<()> {
    if stores == 0 || stores > MAX_STORES {
        return Err(Error::invalid_argument(
            "stores",
            format!("{stores} stores given; a generator takes 1..={MAX_STORES} stores"),
        ));
    }
    Ok(())
}

/// Tinyid's multi-database mode: `n` stores (databases), each holding its own row for a
/// tag, where store `i` hands out only the IDs `≡ i (mod n)` of its ranges. The engine
/// asks one store at a time and moves to the next when it fails, so any store can be down
/// while another serves. See [`SegmentEngine::with_stores`] for the rules.
///
/// Only a driver can use it: `allocate(tag, step)` without a store index is refused,
/// because a range taken from one database without its residue class would collide with
/// the other databases' IDs.
#[derive(Debug, Clone)]
pub struct MultiStore<S> {
    stores: Vec<S>,
}

impl<S: SegmentStore> MultiStore<S> {
    /// Errors: [`Error::InvalidArgument`] for an empty list or more than [`MAX_STORES`].
    pub fn new(stores: Vec<S>) -> Result<MultiStore<S>> {
        check_store_count(stores.len())?;
        Ok(MultiStore { stores })
    }

    /// The stores, in residue order.
    pub fn stores(&self) -> &[S] {
        &self.stores
    }
}

impl<S: SegmentStore> SegmentStore for MultiStore<S> {
    fn allocate(&self, tag: &str, step: u64) -> std::result::Result<Allocation, StoreFailure> {
        let _ = (tag, step);
        Err(StoreFailure::Failed(format!(
            "a MultiStore of {} stores is asked through a segment generator, which picks the              store and keeps its residue class; allocate(tag, step) alone has no class",
            self.stores.len()
        )))
    }

    fn store_count(&self) -> usize {
        self.stores.len()
    }

    fn allocate_from(
        &self,
        store: usize,
        tag: &str,
        step: u64,
    ) -> std::result::Result<Allocation, StoreFailure> {
        match self.stores.get(store) {
            Some(s) => s.allocate(tag, step),
            None => Err(StoreFailure::Failed(format!(
                "store index {store} is out of range; this MultiStore has {} stores",
                self.stores.len()
            ))),
        }
    }
}

/// A [`SegmentStore`] made from a closure: `FnStore(|tag: &str, step| Ok(Allocation::new(..)))`.
#[derive(Debug, Clone, Copy)]
pub struct FnStore<F>(pub F);

impl<F, E> SegmentStore for FnStore<F>
where
    F: Fn(&str, u64) -> std::result::Result<Allocation, E> + Send + Sync,
    E: Into<StoreFailure>,
{
    fn allocate(&self, tag: &str, step: u64) -> std::result::Result<Allocation, StoreFailure> {
        (self.0)(tag, step).map_err(Into::into)
    }
}

/// A pointer to a store is the store.
macro_rules! forward_store {
    ($($ptr:ty),*) => {$(
        impl<S: SegmentStore + ?Sized> SegmentStore for $ptr {
            fn allocate(
                &self,
                tag: &str,
                step: u64,
            ) -> std::result::Result<Allocation, StoreFailure> {
                (**self).allocate(tag, step)
            }
            fn store_count(&self) -> usize {
                (**self).store_count()
            }
            fn allocate_from(
                &self,
                store: usize,
                tag: &str,
                step: u64,
            ) -> std::result::Result<Allocation, StoreFailure> {
                (**self).allocate_from(store, tag, step)
            }
            fn give_back(
                &self,
                tag: &str,
                expected_max_id: u64,
                max_id: u64,
            ) -> std::result::Result<bool, StoreFailure> {
                (**self).give_back(tag, expected_max_id, max_id)
            }
        }
    )*};
}

forward_store!(std::sync::Arc<S>, Box<S>, &S);
