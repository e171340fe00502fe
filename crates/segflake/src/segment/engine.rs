//! The sans-I/O per-tag segment engine. See the [module documentation](super) for the
//! contract.

// Under `--cfg loom` the engine's atomics and lock come from loom, which model-checks
// the interleavings of takes and installs (`tests/segment_loom.rs`).
#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(loom)]
use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::{Mutex, MutexGuard};

use super::{
    check_store_count, check_tag, Allocation, FetchRequest, GiveBack, Residue, SegmentOptions,
    SegmentStats, StoreFailure, MAX_ID,
};
use crate::error::{quoted, Error, Result};

/// Leaf's segment duration: a segment that lasted less than this doubles the step.
pub const SEGMENT_DURATION_MS: u64 = 15 * 60 * 1000;

/// A half-open range `[start, end)` owned by the engine, of which the engine issues every
/// `delta`-th ID from `start` (its store's residue class; `start` is in the class).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seg {
    start: u64,
    end: u64,
}

impl Seg {
    #[inline]
    fn contains(&self, id: u64, delta: u64) -> bool {
        self.start <= id && id < self.end && (id - self.start).is_multiple_of(delta)
    }
    /// How many IDs of the class the range holds.
    #[inline]
    fn len(&self, delta: u64) -> u64 {
        (self.end - self.start).div_ceil(delta)
    }
    /// How many of them lie below `position` (clamped to the range).
    #[inline]
    fn below(&self, position: u64, delta: u64) -> u64 {
        (position.clamp(self.start, self.end) - self.start).div_ceil(delta)
    }
}

/// The smallest `x >= lo` with `x ≡ remainder (mod delta)`.
fn align(lo: u64, remainder: u64, delta: u64) -> u64 {
    lo + (remainder + delta - lo % delta) % delta
}

#[derive(Debug, Clone, Copy)]
struct Flight {
    step: u64,
    started_ms: u64,
    store: usize,
}

/// What the engine knows of one store of a multi-store engine.
#[derive(Debug, Clone, Copy, Default)]
struct StoreSlot {
    /// `max_id` of the highest range this store handed out (its own overlap check).
    high_water: Option<u64>,
    /// After a failure the store is not asked before this (engine milliseconds).
    skip_until_ms: u64,
    /// The residue class the store's rows reported (Tinyid's `remainder`), bound by its
    /// first report; `None` while it has not answered, or when stores report no class.
    remainder: Option<u64>,
}

/// A (time, IDs consumed) sample for the consumption-rate estimate.
#[derive(Debug, Clone, Copy)]
struct Sample {
    at_ms: u64,
    consumed: u64,
}

/// Samples closer together than this do not replace the older one.
const RATE_WINDOW_MS: u64 = 1000;

#[derive(Debug)]
struct Inner {
    current: Option<Seg>,
    /// The prefetch trigger of `current`: the first cursor value at which the next
    /// segment is wanted.
    trigger: u64,
    next: Option<Seg>,
    in_flight: Option<Flight>,
    /// The exclusive end of the highest range ever installed (every store's ranges are
    /// clipped to start at or above it).
    high_water: Option<u64>,
    /// One slot per store. A store issues the residue class its rows report (Tinyid's
    /// `delta`/`remainder`); when the stores report none, store `i` issues `i (mod n)`.
    stores: Vec<StoreSlot>,
    /// Whether the stores report their residue classes: decided by the first answer,
    /// then required of every store (all or none).
    reporting: Option<bool>,
    /// The store asked first: the last one that answered, or the next after a failure.
    active: usize,
    /// The step of the next request.
    step: u64,
    successes: u64,
    last_success_ms: Option<u64>,
    fetches: u64,
    failures: u64,
    consecutive_failures: u64,
    last_error: Option<String>,
    /// The last fetch was answered "no such tag".
    unknown_tag: bool,
    /// The step the store keeps for the tag, from its last answer that said.
    tag_step: Option<u64>,
    last_latency_ms: Option<u64>,
    /// IDs in segments that were used up and replaced.
    retired: u64,
    older: Option<Sample>,
    newer: Option<Sample>,
    closed: bool,
    /// `take_give_back` ran: nothing more is offered.
    given_back: bool,
}

/// The per-tag segment engine: a double buffer of store-issued ranges with a lock-free
/// fast path. It never blocks, never spawns, never reads a clock and never calls the
/// store: the driver asks it what to fetch ([`begin_fetch`](SegmentEngine::begin_fetch)),
/// performs the store call its own way (a thread, a Promise), and hands the result back
/// ([`complete_fetch`](SegmentEngine::complete_fetch)). `Send + Sync`.
#[derive(Debug)]
pub struct SegmentEngine {
    /// The next candidate ID. Only ever increases (`fetch_add`, `fetch_max`), so no value
    /// is ever handed out twice.
    cursor: AtomicU64,
    /// IDs below this value may be taken on the fast path. It is published (Release) only
    /// after `cursor` was raised to the start of the segment it belongs to.
    limit: AtomicU64,
    want_fetch: AtomicBool,
    retry_at_ms: AtomicU64,
    failures: AtomicU64,
    completions: AtomicU64,
    /// The number of stores: IDs step by it (1 for a single store).
    delta: u64,
    tag: Box<str>,
    options: SegmentOptions,
    inner: Mutex<Inner>,
}

impl SegmentEngine {
    /// An engine for `tag` with no segment yet; it wants its first fetch at once.
    ///
    /// Errors: [`Error::InvalidArgument`] for a malformed tag or options.
    pub fn new(tag: &str, options: &SegmentOptions) -> Result<SegmentEngine> {
        Self::with_stores(tag, options, 1)
    }

    /// An engine over `stores` stores (Tinyid's multi-database mode, `1..=MAX_STORES`).
    ///
    /// * **Residues**: from a store's range `[max_id - step, max_id)` the engine issues
    ///   only the IDs of the store's residue class, so stores whose ranges interleave
    ///   numerically never give the same ID. Stores that report their class
    ///   ([`Allocation::residue`], Tinyid's `delta`/`remainder` columns) issue it whatever
    ///   their position in the list, so a reordered list or a database added in a rolling
    ///   change cannot make two stores share a class: every store must then report, with
    ///   `delta` equal to the number of stores and a `remainder` no other store reported
    ///   (the remainders are a permutation of `0..stores`). Stores that report nothing
    ///   issue `≡ i (mod stores)` by list position `i`. A report that breaks these rules, or
    ///   a range that overlaps or precedes one the same store handed out before, is refused
    ///   with [`Error::StoreContractViolation`] naming the store, before any of its IDs is
    ///   issued.
    /// * **Steps**: a request asks at least `stores` IDs (a configured or dynamic step below
    ///   that is raised), so every range holds at least one ID of its store's class.
    /// * **Order**: IDs still strictly increase per thread. A range is clipped to start
    ///   above every range installed before; a range wholly below them (a store that fell
    ///   behind while another served) is not installed, and that store is asked again at
    ///   once with its step raised by how far it is behind, so its next range lands above.
    /// * **Failover**: requests go to the last store that answered. When one fails, it is
    ///   not asked for `retry_backoff_ms` and the next store is asked at once; a waiting
    ///   caller keeps waiting (within `wait_timeout_ms`) until every store has failed in
    ///   turn ([`failure_count`](SegmentEngine::failure_count) moves once per round).
    ///
    /// Errors: [`Error::InvalidArgument`] for a malformed tag, options or store count.
    pub fn with_stores(
        tag: &str,
        options: &SegmentOptions,
        stores: usize,
    ) -> Result<SegmentEngine> {
        check_tag(tag)?;
        options.validate()?;
        check_store_count(stores)?;
        Ok(SegmentEngine {
            cursor: AtomicU64::new(0),
            limit: AtomicU64::new(0),
            want_fetch: AtomicBool::new(true),
            retry_at_ms: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            completions: AtomicU64::new(0),
            delta: stores as u64,
            tag: tag.into(),
            options: options.clone(),
            inner: Mutex::new(Inner {
                current: None,
                trigger: 0,
                next: None,
                in_flight: None,
                high_water: None,
                stores: vec![StoreSlot::default(); stores],
                reporting: None,
                active: 0,
                step: options.step,
                successes: 0,
                last_success_ms: None,
                fetches: 0,
                failures: 0,
                consecutive_failures: 0,
                last_error: None,
                unknown_tag: false,
                tag_step: None,
                last_latency_ms: None,
                retired: 0,
                older: None,
                newer: None,
                closed: false,
                given_back: false,
            }),
        })
    }

    /// The business tag this engine serves.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The options this engine was built with.
    pub fn options(&self) -> &SegmentOptions {
        &self.options
    }

    /// How many stores the engine spans (the `delta` of its residue classes).
    pub fn store_count(&self) -> usize {
        self.delta as usize
    }

    /// The store the fetch in flight asks, if one is in flight (for drivers that learn the
    /// step through a callback and need the store too).
    pub fn fetch_store(&self) -> Option<usize> {
        self.lock().in_flight.map(|f| f.store)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The lock is never held across a call that can panic with the state half-updated,
        // so a poisoned lock still guards consistent data.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes one ID from a ready segment, or `None` when no segment is ready (or the engine
    /// is closed). Lock-free and allocation-free while the current segment lasts: one
    /// atomic load and one `fetch_add`. Crossing the prefetch trigger or the end of a
    /// segment takes a short internal lock once per segment.
    ///
    /// After a take, check [`wants_fetch`](SegmentEngine::wants_fetch).
    #[inline]
    pub fn try_next(&self) -> Option<u64> {
        let limit = self.limit.load(Ordering::Acquire);
        // Checking before the increment keeps callers that poll an empty engine from
        // pushing the cursor past IDs of the next segment.
        if self.cursor.load(Ordering::Relaxed) < limit {
            let id = self.cursor.fetch_add(self.delta, Ordering::Relaxed);
            if id < limit {
                return Some(id);
            }
            return self.next_slow(Some(id));
        }
        self.next_slow(None)
    }

    /// Fills `out` from ready segments, reserving runs with one compare-and-swap each;
    /// returns how many IDs were written (fewer than `out.len()` when the buffers ran dry;
    /// the written ones are valid). IDs in `out` strictly increase.
    pub fn try_next_batch(&self, out: &mut [u64]) -> usize {
        let d = self.delta;
        let mut filled = 0usize;
        while filled < out.len() {
            let limit = self.limit.load(Ordering::Acquire);
            let c = self.cursor.load(Ordering::Relaxed);
            if c < limit {
                let n = (limit - c).div_ceil(d).min((out.len() - filled) as u64);
                if self
                    .cursor
                    .compare_exchange_weak(c, c + n * d, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    for (i, slot) in out[filled..filled + n as usize].iter_mut().enumerate() {
                        *slot = c + i as u64 * d;
                    }
                    filled += n as usize;
                }
                continue;
            }
            match self.next_slow(None) {
                Some(id) => {
                    out[filled] = id;
                    filled += 1;
                }
                None => break,
            }
        }
        filled
    }

    #[cold]
    #[inline(never)]
    fn next_slow(&self, reserved: Option<u64>) -> Option<u64> {
        let mut inner = self.lock();
        if inner.closed {
            return None;
        }
        if let Some(id) = reserved {
            // `id` came from the cursor, so nobody else holds it; issue it if it lies in a
            // range this engine owns.
            if inner.current.is_some_and(|c| c.contains(id, self.delta)) {
                if id >= inner.trigger {
                    self.cross_trigger(&mut inner);
                }
                return Some(id);
            }
            if inner.next.is_some_and(|n| n.contains(id, self.delta)) {
                self.switch(&mut inner);
                return Some(id);
            }
        }
        loop {
            let Some(cur) = inner.current else {
                self.mark_wanted(&inner);
                return None;
            };
            let c = self.cursor.load(Ordering::Relaxed);
            if c < cur.end {
                if c >= inner.trigger {
                    self.cross_trigger(&mut inner);
                }
                let id = self.cursor.fetch_add(self.delta, Ordering::Relaxed);
                if cur.contains(id, self.delta) {
                    return Some(id);
                }
                if inner.next.is_some_and(|n| n.contains(id, self.delta)) {
                    self.switch(&mut inner);
                    return Some(id);
                }
                continue;
            }
            if inner.next.is_some() {
                self.switch(&mut inner);
                continue;
            }
            self.mark_wanted(&inner);
            return None;
        }
    }

    /// The cursor reached the prefetch trigger of the current segment: ask for the next
    /// segment (unless one is ready or coming) and open the fast path up to the end.
    fn cross_trigger(&self, inner: &mut Inner) {
        if inner.closed {
            return;
        }
        if let Some(cur) = inner.current {
            if inner.next.is_none() && inner.in_flight.is_none() {
                self.want_fetch.store(true, Ordering::Release);
            }
            self.limit.fetch_max(cur.end, Ordering::Release);
        }
    }

    fn mark_wanted(&self, inner: &Inner) {
        if inner.in_flight.is_none() && inner.next.is_none() {
            self.want_fetch.store(true, Ordering::Release);
        }
    }

    /// Makes `seg` the current segment (the previous one, if any, is used up).
    fn install_current(&self, inner: &mut Inner, seg: Seg) {
        if let Some(old) = inner.current {
            inner.retired += old.len(self.delta);
        }
        inner.current = Some(seg);
        let len = seg.end - seg.start;
        let pct = u64::from(self.options.prefetch_percent);
        // u128: len * pct overflows u64 for segments near 2^63.
        inner.trigger = seg.start + (u128::from(len) * u128::from(pct) / 100) as u64;
        // Order matters: raise the cursor to the segment (and into its residue class) first,
        // then publish the limit with Release, so a thread that reads the new limit can only
        // draw IDs >= start of the segment's class: every later move of the cursor adds
        // `delta`.
        let mut c = self.cursor.load(Ordering::Relaxed);
        loop {
            let target = align(c.max(seg.start), seg.start % self.delta, self.delta);
            if target == c {
                break;
            }
            match self
                .cursor
                .compare_exchange_weak(c, target, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => c = now,
            }
        }
        let limit = if inner.next.is_some() || inner.in_flight.is_some() {
            seg.end
        } else {
            inner.trigger.max(seg.start)
        };
        if !inner.closed {
            self.limit.store(limit, Ordering::Release);
        }
    }

    fn switch(&self, inner: &mut Inner) {
        if let Some(next) = inner.next.take() {
            self.install_current(inner, next);
            if self.cursor.load(Ordering::Relaxed) >= inner.trigger {
                self.cross_trigger(inner);
            }
        }
    }

    /// Whether the engine wants a fetch started: call
    /// [`begin_fetch`](SegmentEngine::begin_fetch). One atomic load; cheap enough to check
    /// after every take.
    #[inline]
    pub fn wants_fetch(&self) -> bool {
        self.want_fetch.load(Ordering::Acquire)
    }

    /// Should a fetch start now, and with which step? Returns a request (and marks it in
    /// flight: at most one fetch per tag is outstanding) when a segment is wanted: no
    /// segment yet, the current one is used up, or its prefetch trigger was crossed and no
    /// next segment is ready. After a failed fetch, a prefetch (while the current segment
    /// still has IDs) is retried only after `retry_backoff_ms`; an empty engine retries at
    /// once. The step follows Leaf's dynamic rule. Returns `None` when nothing is to be done.
    pub fn begin_fetch(&self, now_ms: u64) -> Option<FetchRequest> {
        if !self.want_fetch.load(Ordering::Acquire) {
            return None;
        }
        let mut inner = self.lock();
        if inner.closed || inner.in_flight.is_some() || inner.next.is_some() {
            self.want_fetch.store(false, Ordering::Release);
            return None;
        }
        let c = self.cursor.load(Ordering::Relaxed);
        let empty = inner.current.is_none_or(|cur| c >= cur.end);
        let past_trigger = inner.current.is_some_and(|_| c >= inner.trigger);
        if !empty && !past_trigger {
            self.want_fetch.store(false, Ordering::Release);
            return None;
        }
        // A failed prefetch waits for the backoff; so does an empty engine whose store
        // said it has no such tag (it is not asked again on every call).
        if (!empty || inner.unknown_tag) && now_ms < self.retry_at_ms.load(Ordering::Relaxed) {
            return None;
        }
        self.sample(&mut inner, now_ms);
        let store = Self::pick_store(&inner, now_ms);
        // At least one ID per store: `stores` consecutive IDs hold one of every residue
        // class, a shorter range may hold none of the store's (a step of 2 from the second
        // of 3 stores whose other callers keep its ranges at residues 2 and 0 never issues).
        let mut step = self.request_step(&mut inner, now_ms).max(self.delta);
        // A store behind the ranges installed from others is asked past them in one step.
        if let (Some(own), Some(hw)) = (inner.stores[store].high_water, inner.high_water) {
            if own < hw {
                step = step.saturating_add(hw - own).min(MAX_ID);
            }
        }
        inner.in_flight = Some(Flight {
            step,
            started_ms: now_ms,
            store,
        });
        self.want_fetch.store(false, Ordering::Release);
        // A fetch in flight: the fast path may run to the end of the current segment.
        if let Some(cur) = inner.current {
            if !inner.closed {
                self.limit.fetch_max(cur.end, Ordering::Release);
            }
        }
        Some(FetchRequest { step, store })
    }

    /// The active store unless it is backing off after a failure, else the next one in
    /// order that is not; when all are, the one whose backoff ends first.
    fn pick_store(inner: &Inner, now_ms: u64) -> usize {
        let n = inner.stores.len();
        (0..n)
            .map(|k| (inner.active + k) % n)
            .find(|&i| inner.stores[i].skip_until_ms <= now_ms)
            .or_else(|| (0..n).min_by_key(|&i| inner.stores[i].skip_until_ms))
            .unwrap_or(0)
    }

    /// The step requests start from and the dynamic step never goes below: the step the
    /// store keeps for the tag (once it said), else `step`.
    fn base_step(&self, inner: &Inner) -> u64 {
        inner.tag_step.unwrap_or(self.options.step)
    }

    /// Leaf's dynamic step: the first two fetches use the base step (the store's step for
    /// the tag, else the configured one); later ones double it if the last segment lasted
    /// under 15 minutes (up to `max_step`, or the base if that is higher), keep it under 30
    /// minutes, and halve it otherwise (not below the base).
    fn request_step(&self, inner: &mut Inner, now_ms: u64) -> u64 {
        let base = self.base_step(inner);
        if !self.options.dynamic_step || inner.successes < 2 {
            inner.step = base;
            return base;
        }
        let lasted = now_ms.saturating_sub(inner.last_success_ms.unwrap_or(now_ms));
        let step = inner.step.max(base);
        let ceiling = self.options.max_step.max(base);
        inner.step = if lasted < SEGMENT_DURATION_MS {
            if step.saturating_mul(2) > ceiling {
                step
            } else {
                step * 2
            }
        } else if lasted < 2 * SEGMENT_DURATION_MS {
            step
        } else if step / 2 >= base {
            step / 2
        } else {
            step
        };
        inner.step
    }

    /// When the fetch in flight, if any, reaches `store_timeout_ms` (engine milliseconds):
    /// a waiting driver wakes then to [`expire_fetch`](SegmentEngine::expire_fetch) it.
    pub fn fetch_deadline_ms(&self) -> Option<u64> {
        let inner = self.lock();
        inner
            .in_flight
            .map(|f| f.started_ms.saturating_add(self.options.store_timeout_ms))
    }

    /// Fails the fetch in flight if it started `store_timeout_ms` or more before `now_ms`
    /// (the store did not answer in time): it counts as a failed fetch whose cause is
    /// [`store_timeout_message`](crate::host::store_timeout_message), and the tag may fetch
    /// again. Returns whether it did. A late answer to the expired call is then either
    /// refused (no fetch in flight) or taken as the answer to the next request, which is
    /// safe: it is a range the store really handed out, checked like any other.
    ///
    /// `spelling` is how the cause names `store_timeout_ms` (bindings name options in their
    /// language's case); Rust drivers call
    /// [`expire_overdue_fetch`](SegmentEngine::expire_overdue_fetch).
    pub fn expire_fetch(&self, now_ms: u64, spelling: crate::host::Spelling) -> bool {
        self.time_out_fetch(now_ms, spelling, false)
    }

    /// Fails the fetch in flight if it started `store_timeout_ms` or more before `now_ms`
    /// (engine milliseconds): the store did not answer in time. It counts as a failed fetch
    /// whose cause names the tag, the step and `store_timeout_ms`, and the tag may fetch
    /// again. Returns whether it did. For drivers that wake at
    /// [`fetch_deadline_ms`](SegmentEngine::fetch_deadline_ms); a late answer to the
    /// expired call is safe to hand in (see [`expire_fetch`](SegmentEngine::expire_fetch)).
    pub fn expire_overdue_fetch(&self, now_ms: u64) -> bool {
        self.time_out_fetch(now_ms, crate::host::Spelling::Snake, false)
    }

    /// Fails the fetch in flight now, as [`expire_overdue_fetch`] would at its deadline,
    /// whatever the engine's clock says: for drivers that time store calls with their own
    /// timers (an async `timeout` around the store call) and saw it run out. Returns
    /// whether a fetch was in flight.
    ///
    /// [`expire_overdue_fetch`]: SegmentEngine::expire_overdue_fetch
    pub fn time_out_fetch_now(&self, now_ms: u64) -> bool {
        self.time_out_fetch(now_ms, crate::host::Spelling::Snake, true)
    }

    /// As [`expire_fetch`](SegmentEngine::expire_fetch), for drivers that time store calls
    /// with their own timers: with `now` true the fetch in flight fails whatever the
    /// engine's clock says. `spelling` is for bindings; Rust drivers call
    /// [`time_out_fetch_now`](SegmentEngine::time_out_fetch_now).
    pub fn time_out_fetch(&self, now_ms: u64, spelling: crate::host::Spelling, now: bool) -> bool {
        let timeout = self.options.store_timeout_ms;
        let step = {
            let inner = self.lock();
            match inner.in_flight {
                Some(f) if now || now_ms.saturating_sub(f.started_ms) >= timeout => f.step,
                _ => return false,
            }
        };
        let message = crate::host::store_timeout_message(&self.tag, step, timeout, spelling);
        let _ = self.complete_fetch(now_ms, Err(message.into()));
        true
    }

    /// Hands the engine the result of the fetch it asked for. An allocation is checked
    /// (step at least 1, `max_id` at least `step` and at most `i64::MAX`, the range above
    /// every range received before for this tag) and installed as the current segment (if
    /// the current one is used up) or as the next one.
    ///
    /// Errors: [`Error::Store`] echoing a failed fetch, [`Error::StoreContractViolation`]
    /// for a refused range (none of its IDs is ever issued); both count as failures and
    /// become the `cause` of [`exhausted_error`](SegmentEngine::exhausted_error).
    /// [`Error::InvalidArgument`] if no fetch was in flight (the result is ignored).
    ///
    /// With several stores, a driver that may deliver the late answer of a call that timed
    /// out must use [`complete_fetch_from`](SegmentEngine::complete_fetch_from): a range is
    /// issued only in the residue class of the store that handed it out.
    pub fn complete_fetch(
        &self,
        now_ms: u64,
        result: std::result::Result<Allocation, StoreFailure>,
    ) -> Result<()> {
        self.complete(now_ms, None, result)
    }

    /// [`complete_fetch`](SegmentEngine::complete_fetch) for the answer of store `store`:
    /// refused ([`Error::InvalidArgument`], the fetch in flight stays in flight) when the
    /// fetch in flight asks another store, as the late answer of a timed-out call to a
    /// different store would be. None of its IDs is issued.
    pub fn complete_fetch_from(
        &self,
        now_ms: u64,
        store: usize,
        result: std::result::Result<Allocation, StoreFailure>,
    ) -> Result<()> {
        self.complete(now_ms, Some(store), result)
    }

    fn complete(
        &self,
        now_ms: u64,
        from: Option<usize>,
        result: std::result::Result<Allocation, StoreFailure>,
    ) -> Result<()> {
        let mut inner = self.lock();
        if let (Some(from), Some(f)) = (from, inner.in_flight) {
            if f.store != from {
                return Err(Error::invalid_argument(
                    "fetch result",
                    format!(
                        "an answer of store {from} for tag {}, but the fetch in flight asks \
                         store {}; the answer of a call that timed out is not issued",
                        quoted(&self.tag),
                        f.store
                    ),
                ));
            }
        }
        let Some(flight) = inner.in_flight.take() else {
            return Err(Error::invalid_argument(
                "fetch result",
                format!(
                    "no fetch is in flight for tag {}; call begin_fetch first and complete \
                     each request exactly once",
                    quoted(&self.tag)
                ),
            ));
        };
        inner.fetches += 1;
        inner.last_latency_ms = Some(now_ms.saturating_sub(flight.started_ms));
        let outcome = match result {
            Err(StoreFailure::Failed(message)) => Err(Error::Store { message }),
            Err(StoreFailure::UnknownTag) => Err(Error::UnknownTag {
                tag: self.tag.to_string(),
            }),
            Ok(a) => self.check(&inner, flight.store, a).map(|()| a),
        };
        inner.unknown_tag = matches!(outcome, Err(Error::UnknownTag { .. }));
        let result = match outcome {
            Ok(a) => {
                let class = match a.residue {
                    Some(r) => r.remainder,
                    None => flight.store as u64,
                };
                inner.reporting = Some(a.residue.is_some());
                let slot = &mut inner.stores[flight.store];
                slot.high_water = Some(a.max_id);
                slot.skip_until_ms = 0;
                slot.remainder = a.residue.map(|r| r.remainder);
                inner.active = flight.store;
                if a.tag_step.is_some() {
                    inner.tag_step = a.tag_step;
                }
                inner.consecutive_failures = 0;
                self.retry_at_ms.store(0, Ordering::Relaxed);
                // The store's class, above every range installed before.
                let lo = (a.max_id - a.step).max(inner.high_water.unwrap_or(0));
                let start = align(lo, class, self.delta);
                if start >= a.max_id {
                    // Wholly below what was installed: nothing to issue; the next request
                    // to this store asks past the others' ranges.
                    self.mark_wanted(&inner);
                    self.sample(&mut inner, now_ms);
                    self.completions.fetch_add(1, Ordering::Release);
                    return Ok(());
                }
                let seg = Seg {
                    start,
                    end: a.max_id,
                };
                inner.high_water = Some(a.max_id);
                inner.successes += 1;
                inner.last_success_ms = Some(now_ms);
                let c = self.cursor.load(Ordering::Relaxed);
                let exhausted = inner.current.is_none_or(|cur| c >= cur.end);
                if exhausted {
                    self.install_current(&mut inner, seg);
                    if self.cursor.load(Ordering::Relaxed) >= inner.trigger {
                        self.cross_trigger(&mut inner);
                    }
                } else {
                    inner.next = Some(seg);
                    if let Some(cur) = inner.current {
                        if !inner.closed {
                            self.limit.fetch_max(cur.end, Ordering::Release);
                        }
                    }
                }
                Ok(())
            }
            Err(e) => {
                inner.failures += 1;
                inner.consecutive_failures += 1;
                let which = if self.delta > 1 {
                    format!("store {} of {}: ", flight.store, self.delta)
                } else {
                    String::new()
                };
                inner.last_error = Some(match &e {
                    Error::Store { message } => format!("{which}store error: {message}"),
                    Error::StoreContractViolation { reason, .. } => {
                        format!("{which}store contract violation: {reason}")
                    }
                    Error::UnknownTag { .. } => format!("{which}the store has no such tag"),
                    other => format!("{which}{other}"),
                });
                let backoff_until = now_ms.saturating_add(self.options.retry_backoff_ms);
                inner.stores[flight.store].skip_until_ms = backoff_until;
                // Fail over at once to the next store, until every store has failed in
                // turn; then the round counts as one failure for waiters.
                let n = inner.stores.len();
                match inner.consecutive_failures % n as u64 {
                    0 => {
                        self.failures.fetch_add(1, Ordering::Release);
                        self.retry_at_ms.store(backoff_until, Ordering::Relaxed);
                    }
                    _ => {
                        inner.active = (flight.store + 1) % n;
                        self.retry_at_ms.store(0, Ordering::Relaxed);
                    }
                }
                self.want_fetch.store(true, Ordering::Release);
                Err(e)
            }
        };
        self.sample(&mut inner, now_ms);
        self.completions.fetch_add(1, Ordering::Release);
        result
    }

    /// Whether store `store` may issue the class it reported (`residue`), by the rules of
    /// [`with_stores`](SegmentEngine::with_stores); the refusal's reason otherwise.
    fn check_residue(
        &self,
        inner: &Inner,
        store: usize,
        residue: Option<Residue>,
    ) -> std::result::Result<(), String> {
        let n = self.delta;
        let which = if n > 1 {
            format!("store {store} of {n}")
        } else {
            "the store".to_string()
        };
        let Some(r) = residue else {
            return match inner.reporting {
                Some(true) => Err(format!(
                    "{which} reported no residue class (delta/remainder) while the other \
                     stores do; every store of a multi-store generator must report its class, \
                     or none"
                )),
                _ => Ok(()),
            };
        };
        if inner.reporting == Some(false) {
            return Err(format!(
                "{which} reported residue class {} (mod {}) while the other stores report \
                 none; every store of a multi-store generator must report its class, or none",
                r.remainder, r.delta
            ));
        }
        if r.delta != n || r.remainder >= n {
            return Err(format!(
                "{which} reported residue class {} (mod {}), but the generator spans {n} \
                 store(s): every store must report delta = {n} and a remainder in 0..{n}",
                r.remainder, r.delta
            ));
        }
        if let Some(own) = inner.stores[store].remainder.filter(|&c| c != r.remainder) {
            return Err(format!(
                "{which} reported remainder {} after remainder {own}; a store's residue \
                 class never changes",
                r.remainder
            ));
        }
        let twin = (0..inner.stores.len())
            .find(|&i| i != store && inner.stores[i].remainder == Some(r.remainder));
        if let Some(twin) = twin {
            return Err(format!(
                "{which} reported remainder {} (mod {n}), which store {twin} reported too: \
                 the remainders must be a permutation of 0..{n}, one per database",
                r.remainder
            ));
        }
        Ok(())
    }

    fn check(&self, inner: &Inner, store: usize, a: Allocation) -> Result<()> {
        let violation = |reason: String| Error::StoreContractViolation {
            tag: self.tag.to_string(),
            reason,
        };
        if a.step == 0 {
            return Err(violation(
                "the store returned step 0; a step must be at least 1".into(),
            ));
        }
        if a.tag_step == Some(0) || a.tag_step.is_some_and(|t| t > MAX_ID) {
            return Err(violation(format!(
                "the store reported tag_step {}; a tag's step must be in 1..={MAX_ID}",
                a.tag_step.unwrap_or(0)
            )));
        }
        if a.max_id > MAX_ID {
            return Err(violation(format!(
                "max_id {} is beyond i64::MAX ({MAX_ID}); IDs must fit a signed 64-bit column",
                a.max_id
            )));
        }
        if a.max_id < a.step {
            return Err(violation(format!(
                "max_id {} is below step {}: the range [max_id - step, max_id) would start \
                 below 0",
                a.max_id, a.step
            )));
        }
        self.check_residue(inner, store, a.residue)
            .map_err(violation)?;
        if let Some(hw) = inner.stores[store].high_water {
            let start = a.max_id - a.step;
            if start < hw {
                return Err(violation(format!(
                    "the range [{start}, {}) overlaps or precedes IDs up to {} already received \
                     for this tag; a store must only move max_id upwards, by at least step",
                    a.max_id,
                    hw - 1
                )));
            }
        }
        Ok(())
    }

    /// How many fetches have failed (store error or refused range). Drivers compare it
    /// before and after waiting to fail fast.
    pub fn failure_count(&self) -> u64 {
        self.failures.load(Ordering::Acquire)
    }

    /// How many fetches have completed (successfully or not).
    pub fn completion_count(&self) -> u64 {
        self.completions.load(Ordering::Acquire)
    }

    /// Whether a fetch is in flight.
    pub fn fetch_in_flight(&self) -> bool {
        self.lock().in_flight.is_some()
    }

    /// Closes the engine: from now on the fast path and the slow path return `None`, no
    /// fetch is requested, and a completing fetch is still accepted (so its range is
    /// never reused) but not issued.
    pub fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        // A limit of 0 lets nothing through: storing it never makes an unowned ID takeable.
        self.limit.store(0, Ordering::Release);
        self.want_fetch.store(false, Ordering::Release);
    }

    /// Whether [`close`](SegmentEngine::close) was called.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// What a closed engine can give back to its store: the IDs of its ranges it did not
    /// issue, from the first of them up to the end of its last range, if that end is still
    /// the tag's `max_id` in the store (the store checks: [`crate::SegmentStore::give_back`]).
    /// The current range's unissued tail is offered when the prefetched range follows it
    /// directly (or there is none); otherwise only the prefetched range.
    ///
    /// `None` when the engine is open, when the `give_back` option is off, while a fetch is
    /// in flight (its range would end above), for a multi-store engine or stores that report
    /// residue classes (their rows interleave), when nothing is left, and on every call after
    /// the first. Once it returns, no ID at or above the offered `max_id` can be issued by
    /// this engine, even by a take that raced with [`close`](SegmentEngine::close).
    pub fn take_give_back(&self) -> Option<GiveBack> {
        let mut inner = self.lock();
        if !inner.closed || inner.given_back || !self.options.give_back {
            return None;
        }
        inner.given_back = true;
        if inner.in_flight.is_some() || self.delta != 1 || inner.reporting == Some(true) {
            return None;
        }
        let cur = inner.current?;
        let top = inner.next.map_or(cur.end, |n| n.end);
        // Moving the cursor to the top makes every later take (one that loaded the limit
        // before `close`) fail, and returns where issuing stopped.
        let stopped = self.cursor.fetch_max(top, Ordering::AcqRel);
        let first_unissued = stopped.clamp(cur.start, cur.end);
        let max_id = match inner.next {
            Some(n) if n.start != cur.end => n.start,
            _ => first_unissued,
        };
        (max_id < top).then_some(GiveBack {
            expected_max_id: top,
            max_id,
        })
    }

    /// The error to give a caller when no ID is ready (after it waited, if the driver
    /// waits): [`Error::Closed`], or [`Error::SegmentsExhausted`] whose `cause` is the last
    /// failure, or says that a fetch is still in flight or was never started.
    pub fn exhausted_error(&self, now_ms: u64) -> Error {
        let inner = self.lock();
        if inner.closed {
            return Error::Closed;
        }
        if inner.unknown_tag && inner.in_flight.is_none() {
            return Error::UnknownTag {
                tag: self.tag.to_string(),
            };
        }
        let cause = match (
            &inner.in_flight,
            &inner.last_error,
            inner.consecutive_failures,
        ) {
            (Some(f), last, _) => {
                let waited = now_ms.saturating_sub(f.started_ms);
                let mut s = format!("the store has not answered a fetch started {waited} ms ago");
                if let Some(e) = last {
                    s.push_str(&format!("; the previous fetch failed with {e}"));
                }
                s
            }
            (None, Some(e), n) if n > 0 => e.clone(),
            _ => "no segment has been fetched yet".to_string(),
        };
        Error::SegmentsExhausted {
            tag: self.tag.to_string(),
            cause,
        }
    }

    fn consumed(&self, inner: &Inner) -> u64 {
        let c = self.cursor.load(Ordering::Relaxed);
        inner.retired + inner.current.map_or(0, |cur| cur.below(c, self.delta))
    }

    fn sample(&self, inner: &mut Inner, now_ms: u64) {
        let s = Sample {
            at_ms: now_ms,
            consumed: self.consumed(inner),
        };
        match inner.newer {
            None => inner.newer = Some(s),
            Some(n) if now_ms >= n.at_ms.saturating_add(RATE_WINDOW_MS) => {
                inner.older = Some(n);
                inner.newer = Some(s);
            }
            Some(n) if now_ms < n.at_ms => {
                // Time went backwards (a host clock): restart the estimate.
                inner.older = None;
                inner.newer = Some(s);
            }
            Some(_) => {}
        }
    }

    /// A snapshot of the engine's state at `now_ms` (which also feeds the consumption-rate
    /// estimate behind `runway_seconds`).
    pub fn stats(&self, now_ms: u64) -> SegmentStats {
        let mut inner = self.lock();
        self.sample(&mut inner, now_ms);
        let c = self.cursor.load(Ordering::Relaxed);
        let consumed = self.consumed(&inner);
        // The rate over the older sample's window (at least RATE_WINDOW_MS when available).
        let base = inner.older.or(inner.newer);
        let ids_per_second = match base {
            Some(b) if now_ms > b.at_ms => {
                (consumed.saturating_sub(b.consumed)) as f64 * 1000.0 / (now_ms - b.at_ms) as f64
            }
            _ => 0.0,
        };
        let (current_start, current_end, position, remaining) = match inner.current {
            Some(cur) => (
                cur.start,
                cur.end,
                c.clamp(cur.start, cur.end),
                cur.len(self.delta) - cur.below(c, self.delta),
            ),
            None => (0, 0, 0, 0),
        };
        let (next_ready, next_start, next_end) = match inner.next {
            Some(n) => (true, n.start, n.end),
            None => (false, 0, 0),
        };
        let buffered = remaining + inner.next.map_or(0, |n| n.len(self.delta));
        let runway_seconds = if ids_per_second > 0.0 {
            Some(buffered as f64 / ids_per_second)
        } else {
            None
        };
        SegmentStats {
            tag: self.tag.to_string(),
            current_start,
            current_end,
            position,
            remaining,
            next_ready,
            next_start,
            next_end,
            step: inner.in_flight.map_or(inner.step, |f| f.step),
            fetch_in_flight: inner.in_flight.is_some(),
            fetches: inner.fetches,
            failures: inner.failures,
            consecutive_failures: inner.consecutive_failures,
            last_error: inner.last_error.clone(),
            last_fetch_latency_ms: inner.last_latency_ms,
            issued: consumed,
            ids_per_second,
            runway_seconds,
        }
    }
}
