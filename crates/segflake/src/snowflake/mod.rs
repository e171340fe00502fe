//! The snowflake generator: time-ordered IDs, coordination-free after start-up.
//!
//! # Invariants
//! * IDs from one generator strictly increase, from any number of threads: all state is
//!   one `AtomicU64` holding `tick << sequence_bits | sequence` of the last issued ID,
//!   advanced only by compare-and-swap to a strictly larger value.
//! * The logical tick never runs more than `max_drift_ms` ahead of the clock: sequence
//!   overflow borrows the next tick only within that bound, then waits for the clock.
//! * A clock that falls further behind the last issued tick than `max_drift_ms` gets
//!   [`Error::ClockMovedBackwards`], never an ID.
//! * With `not_before_ms`, no ID's timestamp is at or below that time.
//! * No ID's tick is above the cap of the generator's [`Fence`]: a worker-ID lease sets
//!   the cap to the time mark its registry accepted, so a holder paused past its lease
//!   issues nothing that the next holder of the worker ID can issue. Reading the cap and
//!   the worker ID is one relaxed atomic load per reservation.

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(loom)]
use loom::sync::{Mutex, MutexGuard};
use std::sync::Arc;
#[cfg(not(loom))]
use std::sync::{Mutex, MutexGuard};

mod config;

// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
pub use config::SnowflakeConfig;

use crate::clock::{Clock, SystemClock};
use crate::error::{quoted, Error, Result};
use crate::layout::{DecodedId, Layout};

/// Set in the state word by [`Snowflake::seal`]: no ID is issued after it.
const SEALED: u64 = 1 << 63;

/// Default bound on how far the logical tick may run ahead of the clock.
pub const DEFAULT_MAX_DRIFT_MS: u64 = 2000;
/// The largest accepted `max_drift_ms` (one hour).
pub const MAX_DRIFT_LIMIT_MS: u64 = 3_600_000;

/// Where the sequence starts in each new tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SequenceStart {
    /// At 0: densest packing.
    #[default]
    Zero,
    /// At a pseudo-random value below 100 (Leaf's rule), so `id % N` sharding stays even
    /// at low rates. Bounded by half the sequence space for narrow sequence fields.
    Random,
}

impl SequenceStart {
    /// `"zero"` or `"random"`.
    pub const fn name(self) -> &'static str {
        match self {
            SequenceStart::Zero => "zero",
            SequenceStart::Random => "random",
        }
    }

    /// Parses [`name`](SequenceStart::name).
    pub fn from_name(name: &str) -> Result<SequenceStart> {
        match name {
            "zero" => Ok(SequenceStart::Zero),
            "random" => Ok(SequenceStart::Random),
            other => Err(Error::invalid_argument(
                "sequence_start",
                format!(
                    "{other} is not allowed; allowed: zero, random",
                    other = quoted(other)
                ),
            )),
        }
    }
}

options_struct! {
    /// Per-generator settings besides the layout.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub struct SnowflakeOptions {
        /// This generator's worker ID: `0..2^worker_bits`. There is no default.
        pub worker_id: u64 => with_worker_id,
        /// How far the logical tick may run ahead of the clock (0 = strict Twitter behaviour).
        pub max_drift_ms: u64 => with_max_drift_ms,
        /// Where the sequence starts in each new tick (default [`SequenceStart::Zero`]).
        pub sequence_start: SequenceStart => with_sequence_start,
        /// A persisted high-water mark: no ID will carry a timestamp at or below it.
        pub not_before_ms: Option<u64> => with_not_before_ms,
    }
}

impl SnowflakeOptions {
    /// Defaults (drift 2000 ms, sequence from zero, no high-water mark) for `worker_id`.
    pub const fn new(worker_id: u64) -> SnowflakeOptions {
        SnowflakeOptions {
            worker_id,
            max_drift_ms: DEFAULT_MAX_DRIFT_MS,
            sequence_start: SequenceStart::Zero,
            not_before_ms: None,
        }
    }
}

/// The worker ID a generator issues with and the highest tick it may issue, in one atomic
/// word (`cap_tick << worker_bits | worker_id`; time and worker bits fit in 63 bits).
///
/// A plain generator's fence is open (the cap is the layout's last tick) and never
/// changes. A leased generator's fence is moved by its lease: raised as the registry
/// accepts time marks, shut when the lease may have expired, and re-pointed at another
/// worker ID after a new claim. Re-pointing is published lazily: the generator's own slow
/// path first raises its last issued tick above the new worker ID's previous mark, then
/// opens the new word, so no ID is ever composed with the new worker ID below that mark.
#[derive(Debug)]
pub struct Fence {
    word: AtomicU64,
    worker_bits: u32,
    slow: Mutex<FenceSlow>,
    origin: crate::fork::Origin,
}

#[derive(Debug, Default)]
struct FenceSlow {
    /// Why IDs are refused while the cap is shut (the cap is below every real tick).
    refusal: Option<Error>,
    /// A new (word, previous holder's mark) waiting to be opened by the generator.
    pending: Option<(u64, u64)>,
}

impl Fence {
    /// A fence that lets `worker_id` issue every tick of `layout`.
    pub fn open(layout: &Layout, worker_id: u64) -> Fence {
        let worker_bits = u32::from(layout.worker_bits());
        Fence {
            word: AtomicU64::new((layout.max_tick() << worker_bits) | worker_id),
            worker_bits,
            slow: Mutex::new(FenceSlow::default()),
            origin: crate::fork::Origin::here(),
        }
    }

    /// A fence that refuses every ID with `refusal` until [`Fence::rebind`] opens it.
    pub fn shut(layout: &Layout, refusal: Error) -> Fence {
        let fence = Fence::open(layout, 0);
        fence.word.store(0, Ordering::Relaxed);
        fence.lock().refusal = Some(refusal);
        fence
    }

    fn lock(&self) -> MutexGuard<'_, FenceSlow> {
        self.slow.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The worker ID IDs are composed with (once a pending rebind opens: its worker ID).
    pub fn worker_id(&self) -> u64 {
        let mask = (1u64 << self.worker_bits) - 1;
        match self.lock().pending {
            Some((word, _)) => word & mask,
            None => self.word.load(Ordering::Relaxed) & mask,
        }
    }

    /// The highest tick that may be issued now (0 while shut).
    pub fn cap_tick(&self) -> u64 {
        self.word.load(Ordering::Relaxed) >> self.worker_bits
    }

    /// Raises the cap of `worker_id` to `cap_tick` (never lowers it). Ignored while the
    /// fence is shut or points at another worker ID; a pending rebind to `worker_id` is
    /// raised instead.
    pub fn raise(&self, worker_id: u64, cap_tick: u64) {
        let mut slow = self.lock();
        let word = (cap_tick << self.worker_bits) | worker_id;
        if let Some((pending, _)) = slow.pending.as_mut() {
            if *pending & ((1u64 << self.worker_bits) - 1) == worker_id {
                *pending = (*pending).max(word);
            }
            return;
        }
        let current = self.word.load(Ordering::Relaxed);
        if slow.refusal.is_none() && current & ((1u64 << self.worker_bits) - 1) == worker_id {
            self.word.store(current.max(word), Ordering::Release);
        }
    }

    /// Refuses every further ID with `refusal` until [`Fence::rebind`]. The worker ID
    /// stays readable; the cap drops to tick 0, which no generator issues (its state
    /// starts with tick 0 used up).
    pub fn shut_with(&self, refusal: Error) {
        let mut slow = self.lock();
        slow.pending = None;
        slow.refusal = Some(refusal);
        self.word.fetch_and(self.worker_mask(), Ordering::AcqRel);
    }

    fn worker_mask(&self) -> u64 {
        (1u64 << self.worker_bits) - 1
    }

    /// Points the fence at `worker_id`, capped at `cap_tick`, for a generator whose IDs
    /// must then carry times above `not_before_ms` (the worker ID's previous mark).
    pub fn rebind(&self, worker_id: u64, cap_tick: u64, not_before_ms: u64) {
        let mut slow = self.lock();
        slow.pending = Some(((cap_tick << self.worker_bits) | worker_id, not_before_ms));
    }

    /// In a forked child: refuse everything, without taking the lock (another thread of
    /// the parent may have held it at the fork).
    pub(crate) fn shut_in_child(&self) {
        self.word.fetch_and(self.worker_mask(), Ordering::AcqRel);
    }

    /// Whether the fence is shut with no rebind pending.
    pub fn is_shut(&self) -> bool {
        let slow = self.lock();
        slow.refusal.is_some() && slow.pending.is_none()
    }
}

/// A lock-free snowflake generator. `Send + Sync`: share it by reference or `Arc`.
///
/// A layout of your own (here 41 time bits of 10 ms, 8 worker bits, 14 sequence bits),
/// on a [`ManualClock`](crate::ManualClock) so the example controls time:
/// ```
/// use segflake::{ManualClock, Preset, SequenceStart, Snowflake, SnowflakeOptions};
///
/// let now_ms = 1_767_225_600_000; // 2026-01-01T00:00:00Z
/// let layout = Preset::Twitter
///     .spec()
///     .with_tick_ms(10)
///     .with_worker_bits(8)
///     .with_sequence_bits(14)
///     .with_epoch_ms(1_735_689_600_000) // 2025-01-01T00:00:00Z
///     .build_at(now_ms)?;
/// let options = SnowflakeOptions::new(42)
///     .with_max_drift_ms(0) // strict: wait for the next tick rather than borrow it
///     .with_sequence_start(SequenceStart::Zero);
/// let generator = Snowflake::with_clock(layout, options, ManualClock::new(now_ms))?;
///
/// let ids = generator.next_ids_vec(3)?;
/// assert!(ids.windows(2).all(|w| w[0] < w[1]));
/// let first = generator.decode(ids[0])?;
/// assert_eq!((first.timestamp_ms, first.worker_id, first.sequence), (now_ms, 42, 0));
/// // Persist this, and pass it back as `not_before_ms` after a restart.
/// assert_eq!(generator.high_water_mark_ms(), now_ms);
/// # Ok::<(), segflake::Error>(())
/// ```
#[derive(Debug)]
pub struct Snowflake<C: Clock = SystemClock> {
    layout: Layout,
    options: SnowflakeOptions,
    /// The worker ID and the cap, read once per reservation.
    fence: Arc<Fence>,
    /// `tick << sequence_bits | sequence` of the last issued ID.
    state: AtomicU64,
    seed: u64,
    clock: C,
}

/// What one attempt at taking IDs decided.
enum Plan {
    /// Take `count` sequence numbers from `first` in `tick`; the new state is given.
    /// (A tick above the fence's cap is refused before it is taken.)
    Take {
        tick: u64,
        first: u64,
        count: u64,
        new_state: u64,
    },
    /// Nothing can be issued before the clock reads this time.
    WaitUntil(u64),
}

/// What [`Snowflake::try_reserve`] got: IDs, or the time to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reserve {
    /// IDs reserved for the caller (at least one); every ID issued later is above them.
    Ids(IdRun),
    /// Nothing was reserved: the generator can issue again once its clock reads this Unix
    /// time in milliseconds (its tick's sequence numbers and the `max_drift_ms` allowance
    /// are used up). Wait, then call again.
    WaitUntil(u64),
}

/// A run of strictly increasing IDs of one tick, reserved at once: `first`,
/// `first + stride`, … (`count` of them). The stride is 1 unless the layout puts the
/// worker ID below the sequence (Sonyflake's order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdRun {
    /// The first (smallest) ID.
    pub first: u64,
    /// How many IDs: at least 1.
    pub count: u64,
    /// The difference between consecutive IDs.
    pub stride: u64,
}

impl IdRun {
    /// The `i`-th ID of the run (`i < count`).
    #[inline]
    pub fn get(&self, i: u64) -> Option<u64> {
        (i < self.count).then(|| self.first + i * self.stride)
    }

    /// The last (largest) ID.
    #[inline]
    pub fn last(&self) -> u64 {
        self.first + (self.count - 1) * self.stride
    }

    /// The IDs, smallest first.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.count).map(move |i| self.first + i * self.stride)
    }

    /// Writes the first `out.len().min(count)` IDs to `out`; returns how many.
    #[inline]
    pub fn write_to(&self, out: &mut [u64]) -> usize {
        let n = out
            .len()
            .min(usize::try_from(self.count).unwrap_or(usize::MAX));
        for (i, slot) in out[..n].iter_mut().enumerate() {
            *slot = self.first + i as u64 * self.stride;
        }
        n
    }
}

impl Snowflake<SystemClock> {
    /// A generator on the system clock.
    pub fn new(layout: Layout, options: SnowflakeOptions) -> Result<Self> {
        Snowflake::with_clock(layout, options, SystemClock)
    }
}

impl<C: Clock> Snowflake<C> {
    /// A generator reading time from `clock`.
    pub fn with_clock(layout: Layout, options: SnowflakeOptions, clock: C) -> Result<Self> {
        layout.check_worker(options.worker_id)?;
        let fence = Arc::new(Fence::open(&layout, options.worker_id));
        Snowflake::with_fence(layout, options, clock, fence)
    }

    /// A generator whose worker ID and cap come from `fence` (a worker-ID lease's);
    /// `options.worker_id` must be the fence's worker ID.
    pub fn with_fence(
        layout: Layout,
        options: SnowflakeOptions,
        clock: C,
        fence: Arc<Fence>,
    ) -> Result<Self> {
        layout.check_worker(options.worker_id)?;
        if fence.worker_bits != u32::from(layout.worker_bits()) {
            return Err(Error::invalid_argument(
                "fence",
                "it was made for a layout with another number of worker bits",
            ));
        }
        if options.max_drift_ms > MAX_DRIFT_LIMIT_MS {
            return Err(Error::invalid_argument(
                "max_drift_ms",
                format!(
                    "{} is too large; allowed 0..={MAX_DRIFT_LIMIT_MS}",
                    options.max_drift_ms
                ),
            ));
        }
        let seq_bits = u32::from(layout.sequence_bits());
        // Start as if the tick of `not_before_ms` (or tick 0) were used up, so the first ID
        // lands in a later tick.
        let start_tick = options
            .not_before_ms
            .and_then(|t| layout.tick_of(t))
            .unwrap_or(0)
            .min(layout.max_tick());
        let state = (start_tick << seq_bits) | layout.max_sequence();
        let seed = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u64(options.worker_id);
            h.write_u64(clock.now_ms());
            h.finish()
        };
        Ok(Snowflake {
            layout,
            fence,
            options,
            state: AtomicU64::new(state),
            seed,
            clock,
        })
    }

    /// The layout IDs are packed with.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The options this generator was built with.
    pub fn options(&self) -> &SnowflakeOptions {
        &self.options
    }

    /// The worker ID IDs are composed with (a leased generator's may change after its
    /// lease is lost and a new worker ID claimed).
    pub fn worker_id(&self) -> u64 {
        self.fence.worker_id()
    }

    /// The fence holding this generator's worker ID and cap.
    pub fn fence(&self) -> &Arc<Fence> {
        &self.fence
    }

    /// The clock this generator reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// Replaces the random seed of [`SequenceStart::Random`] (drawn per generator from the
    /// process's random state) with `seed`, so a simulation or a test that fixes every
    /// random choice issues the same IDs on every run. The IDs stay unique either way.
    pub fn set_sequence_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    /// Unix milliseconds of the highest tick issued so far (including borrowed ticks).
    ///
    /// Persist it periodically; a restarted generator given it as `not_before_ms` issues
    /// only IDs with later timestamps. Before the first ID, it reflects `not_before_ms`.
    ///
    /// IDs issued after the last persist can carry times up to `max_drift_ms` ahead of the
    /// clock. To cover them too, persist `max(mark, now + persist_interval + max_drift_ms)`
    /// instead; a restart before the clock reaches that value then fails fast with
    /// [`Error::ClockMovedBackwards`] until it does, rather than risk a duplicate.
    pub fn high_water_mark_ms(&self) -> u64 {
        let state = self.state.load(Ordering::Acquire) & !SEALED;
        self.layout
            .time_of_tick(state >> self.layout.sequence_bits())
    }

    /// Ends issuing for good and returns the high-water mark (Unix ms) that no ID of this
    /// generator will ever exceed: a reservation racing the seal fails its
    /// compare-and-swap and is refused. Later calls fail with the fence's refusal (or
    /// [`Error::Closed`]). A lease releases its worker ID with this as the mark.
    pub fn seal(&self) -> u64 {
        let last = self.state.fetch_or(SEALED, Ordering::AcqRel) & !SEALED;
        self.layout
            .time_of_tick(last >> self.layout.sequence_bits())
    }

    /// Splits an ID of this generator's layout into its fields.
    pub fn decode(&self, id: u64) -> Result<DecodedId> {
        self.layout.decode(id)
    }

    /// The next ID: strictly greater than every ID this generator issued before.
    ///
    /// Waits for the clock through [`Clock::wait_until_ms`] when the generator may not
    /// issue yet; [`try_reserve`](Snowflake::try_reserve) is the same step without the wait.
    #[inline]
    pub fn next_id(&self) -> Result<u64> {
        let (tick, first, _, worker) = self.reserve(1)?;
        Ok(self.compose(tick, worker, first))
    }

    /// Reserves up to `max` IDs without ever waiting for the clock: either a run of
    /// strictly increasing IDs of one tick ([`Reserve::Ids`], at least one), or the time the
    /// clock must reach before this generator can issue again ([`Reserve::WaitUntil`]),
    /// with nothing reserved.
    ///
    /// This is the step [`next_id`](Snowflake::next_id) and
    /// [`next_ids`](Snowflake::next_ids) take before they wait: the same IDs, the same
    /// clock policy and the same errors. A driver that waits its own way (an async timer,
    /// an event loop) calls it, waits until the clock reads the time it answered, and calls
    /// it again.
    ///
    /// Errors: [`Error::InvalidArgument`] for `max = 0`, and those of
    /// [`next_id`](Snowflake::next_id) except [`Error::ClockStalled`] (which only a wait
    /// can give).
    ///
    /// ```
    /// use segflake::{Layout, ManualClock, Preset, Reserve, Snowflake, SnowflakeOptions};
    ///
    /// let now_ms = 1_767_225_600_000; // 2026-01-01T00:00:00Z
    /// let layout = Layout::preset(Preset::Twitter)?;
    /// let options = SnowflakeOptions::new(1).with_max_drift_ms(0);
    /// let generator = Snowflake::with_clock(layout, options, ManualClock::new(now_ms))?;
    /// // A tick holds 4096 sequence numbers: all of them in one run.
    /// let Reserve::Ids(run) = generator.try_reserve(5000)? else { unreachable!() };
    /// assert_eq!(run.count, 4096);
    /// assert!(run.last() > run.first);
    /// // The tick is used up and drift is 0: wait for the next millisecond.
    /// assert_eq!(generator.try_reserve(1)?, Reserve::WaitUntil(now_ms + 1));
    /// generator.clock().advance_ms(1);
    /// let Reserve::Ids(next) = generator.try_reserve(1)? else { unreachable!() };
    /// assert!(next.first > run.last());
    /// # Ok::<(), segflake::Error>(())
    /// ```
    #[inline]
    pub fn try_reserve(&self, max: u64) -> Result<Reserve> {
        if max == 0 {
            return Err(Error::invalid_argument(
                "max",
                "0 is out of range; allowed at least 1",
            ));
        }
        Ok(match self.step(max)? {
            Ok(reserved) => Reserve::Ids(self.run(reserved)),
            Err(unix_ms) => Reserve::WaitUntil(unix_ms),
        })
    }

    /// The IDs of a reservation `(tick, first, count, worker_id)`.
    #[inline(always)]
    fn run(&self, (tick, first, count, worker): (u64, u64, u64, u64)) -> IdRun {
        IdRun {
            first: self.compose(tick, worker, first),
            count,
            stride: self.layout.sequence_stride(),
        }
    }

    /// Reserves up to `want` consecutive sequence numbers of one tick with one
    /// compare-and-swap; returns `(tick, first, count, worker_id)` with
    /// `1 <= count <= want`, waiting for the clock as long as it must.
    #[inline(always)]
    fn reserve(&self, want: u64) -> Result<(u64, u64, u64, u64)> {
        loop {
            match self.step(want)? {
                Ok(reserved) => return Ok(reserved),
                Err(unix_ms) => self.clock.wait_until_ms(unix_ms)?,
            }
        }
    }

    /// One non-blocking step of [`reserve`](Snowflake::reserve): `Ok(Ok(reserved))`, or
    /// `Ok(Err(unix_ms))` when nothing can be issued before the clock reads `unix_ms`.
    #[inline(always)]
    fn step(&self, want: u64) -> Result<std::result::Result<(u64, u64, u64, u64), u64>> {
        loop {
            // State first, then the clock: the reading is then at least as late as that of
            // the thread that wrote the state, so a stale reading is never mistaken for the
            // clock moving backwards (the CAS fails instead, and the loop reads both again).
            let current = self.state.load(Ordering::Acquire);
            let now_ms = self.clock.now_ms();
            let fence = self.fence.word.load(Ordering::Relaxed);
            match self.plan(current, now_ms, want)? {
                Plan::Take { tick, .. } if tick > fence >> self.fence.worker_bits => {
                    self.at_cap(fence)?
                }
                Plan::Take {
                    tick,
                    first,
                    count,
                    new_state,
                } => {
                    if self
                        .state
                        .compare_exchange_weak(
                            current,
                            new_state,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        )
                        .is_ok()
                    {
                        let worker = fence & ((1u64 << self.fence.worker_bits) - 1);
                        return Ok(Ok((tick, first, count, worker)));
                    }
                }
                Plan::WaitUntil(unix_ms) => return Ok(Err(unix_ms)),
            }
        }
    }

    /// The next ID through exclusive access: the same sequence of IDs and the same clock
    /// policy as [`next_id`](Snowflake::next_id), without atomic read-modify-write
    /// instructions. For a generator owned by one thread or one JS event loop; the borrow
    /// checker guarantees no other caller can race it.
    #[cfg(not(loom))]
    #[inline]
    pub fn next_id_mut(&mut self) -> Result<u64> {
        loop {
            let current = *self.state.get_mut();
            let now_ms = self.clock.now_ms();
            let fence = self.fence.word.load(Ordering::Relaxed);
            match self.plan(current, now_ms, 1)? {
                Plan::Take { tick, .. } if tick > fence >> self.fence.worker_bits => {
                    self.at_cap(fence)?
                }
                Plan::Take {
                    tick,
                    first,
                    new_state,
                    ..
                } => {
                    *self.state.get_mut() = new_state;
                    let worker = fence & ((1u64 << self.fence.worker_bits) - 1);
                    return Ok(self.compose(tick, worker, first));
                }
                Plan::WaitUntil(unix_ms) => self.clock.wait_until_ms(unix_ms)?,
            }
        }
    }

    /// Fills `out` with strictly increasing IDs, reserving whole runs of sequence numbers
    /// with one compare-and-swap each. On error, the IDs already written stay valid and
    /// unique; the returned error says why the rest could not be issued.
    pub fn next_ids(&self, out: &mut [u64]) -> Result<()> {
        let mut filled = 0usize;
        while filled < out.len() {
            let reserved = self.reserve((out.len() - filled) as u64)?;
            filled += self.run(reserved).write_to(&mut out[filled..]);
        }
        Ok(())
    }

    /// `n` IDs in a new vector (see [`next_ids`](Snowflake::next_ids)).
    pub fn next_ids_vec(&self, n: usize) -> Result<Vec<u64>> {
        crate::check_batch_size(n)?;
        let mut v = vec![0; n];
        self.next_ids(&mut v)?;
        Ok(v)
    }

    #[inline(always)]
    fn compose(&self, tick: u64, worker: u64, sequence: u64) -> u64 {
        self.layout.compose_unchecked(tick, worker, sequence)
    }

    /// The slow path at the fence's cap (`seen` is the fence word the caller planned
    /// with): opens a pending rebind (after raising the last issued tick above the new
    /// worker ID's previous mark) so the caller retries; lets the caller retry if the word
    /// moved meanwhile (another thread opened a rebind, a renewal raised the cap); else
    /// returns the refusal.
    #[cold]
    fn at_cap(&self, seen: u64) -> Result<()> {
        self.fence.origin.check(
            "leased snowflake generator",
            "its worker ID is leased by the parent process",
        )?;
        let mut slow = self.fence.lock();
        if let Some((word, not_before_ms)) = slow.pending.take() {
            // The next ID takes a new tick: composed with a lower worker ID in the tick
            // already used, it would be smaller than the IDs issued before the switch.
            self.state
                .fetch_or(self.layout.max_sequence(), Ordering::AcqRel);
            self.raise_floor(not_before_ms);
            slow.refusal = None;
            self.fence.word.store(word, Ordering::Release);
            return Ok(());
        }
        let word = self.fence.word.load(Ordering::Acquire);
        if word != seen {
            return Ok(());
        }
        let cap_tick = word >> self.fence.worker_bits;
        Err(slow.refusal.clone().unwrap_or_else(|| Error::LeaseExpired {
            worker_id: word & ((1u64 << self.fence.worker_bits) - 1),
            reason: format!(
                "the clock reached the time mark the registry last accepted ({}) before a \
                 higher one was accepted",
                crate::datetime::format_iso8601_ms(self.layout.time_of_tick(cap_tick))
            ),
        }))
    }

    #[cold]
    fn sealed(&self) -> Error {
        self.fence.lock().refusal.clone().unwrap_or(Error::Closed)
    }

    /// Makes every later ID carry a time above `not_before_ms`.
    fn raise_floor(&self, not_before_ms: u64) {
        let Some(tick) = self.layout.tick_of(not_before_ms) else {
            return;
        };
        let seq_bits = u32::from(self.layout.sequence_bits());
        let floor = (tick.min(self.layout.max_tick()) << seq_bits) | self.layout.max_sequence();
        self.state.fetch_max(floor, Ordering::AcqRel);
    }

    #[inline]
    fn sequence_start(&self, tick: u64) -> u64 {
        match self.options.sequence_start {
            SequenceStart::Zero => 0,
            SequenceStart::Random => {
                let bound = self.layout.max_sequence().div_ceil(2).clamp(1, 100);
                splitmix64(self.seed ^ tick) % bound
            }
        }
    }

    /// Decides, from the last issued state and the clock, which IDs may be issued next.
    #[inline(always)]
    fn plan(&self, current: u64, now_ms: u64, want: u64) -> Result<Plan> {
        if current & SEALED != 0 {
            return Err(self.sealed());
        }
        let layout = &self.layout;
        let seq_bits = u32::from(layout.sequence_bits());
        let max_seq = layout.max_sequence();
        let now_tick = match layout.tick_of(now_ms) {
            Some(t) => t,
            None => {
                return Err(Error::ClockBeforeEpoch {
                    now_ms,
                    epoch_ms: layout.epoch_ms(),
                })
            }
        };
        let last_tick = current >> seq_bits;
        let last_seq = current & max_seq;
        let take = |tick: u64, first: u64| {
            let count = want.min(max_seq - first + 1);
            Plan::Take {
                tick,
                first,
                count,
                new_state: (tick << seq_bits) | (first + count - 1),
            }
        };
        if now_tick > last_tick {
            if now_tick > layout.max_tick() {
                return Err(Error::TimeExhausted {
                    exhausts_at_ms: layout.exhausts_at_ms(),
                });
            }
            return Ok(take(now_tick, self.sequence_start(now_tick)));
        }
        // The clock is in the last issued tick, or behind it (borrowed ticks or a step back).
        let ahead_ms = layout.time_of_tick(last_tick).saturating_sub(now_ms);
        if ahead_ms > self.options.max_drift_ms {
            return Err(Error::ClockMovedBackwards {
                by_ms: ahead_ms,
                max_drift_ms: self.options.max_drift_ms,
            });
        }
        if last_seq < max_seq {
            return Ok(take(last_tick, last_seq + 1));
        }
        let next_tick = last_tick + 1;
        if next_tick > layout.max_tick() {
            return Err(Error::TimeExhausted {
                exhausts_at_ms: layout.exhausts_at_ms(),
            });
        }
        let next_start = layout.time_of_tick(next_tick);
        if next_start - now_ms.min(next_start) <= self.options.max_drift_ms {
            Ok(take(next_tick, self.sequence_start(next_tick)))
        } else {
            Ok(Plan::WaitUntil(next_start - self.options.max_drift_ms))
        }
    }
}

#[inline]
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
