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

#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::layout::{DecodedId, Layout};

/// Default bound on how far the logical tick may run ahead of the clock.
pub const DEFAULT_MAX_DRIFT_MS: u64 = 2000;
/// The largest accepted `max_drift_ms` (one hour).
pub const MAX_DRIFT_LIMIT_MS: u64 = 3_600_000;

/// Where the sequence starts in each new tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
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
                format!("{other:?} is not allowed; allowed: zero, random"),
            )),
        }
    }
}

/// Per-generator settings besides the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SnowflakeOptions {
    /// This generator's worker ID: `0..2^worker_bits`. There is no default.
    pub worker_id: u64,
    /// How far the logical tick may run ahead of the clock (0 = strict Twitter behaviour).
    pub max_drift_ms: u64,
    pub sequence_start: SequenceStart,
    /// A persisted high-water mark: no ID will carry a timestamp at or below it.
    pub not_before_ms: Option<u64>,
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

/// A lock-free snowflake generator. `Send + Sync`: share it by reference or `Arc`.
#[derive(Debug)]
pub struct Snowflake<C: Clock = SystemClock> {
    layout: Layout,
    options: SnowflakeOptions,
    /// `worker_id` shifted into place.
    worker_part: u64,
    /// `tick << sequence_bits | sequence` of the last issued ID.
    state: AtomicU64,
    seed: u64,
    clock: C,
}

/// What one attempt at taking IDs decided.
enum Plan {
    /// Take `count` sequence numbers from `first` in `tick`; the new state is given.
    Take {
        tick: u64,
        first: u64,
        count: u64,
        new_state: u64,
    },
    /// Nothing can be issued before the clock reads this time.
    WaitUntil(u64),
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
            worker_part: layout.compose_unchecked(0, options.worker_id, 0),
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

    /// This generator's worker ID.
    pub fn worker_id(&self) -> u64 {
        self.options.worker_id
    }

    /// The clock this generator reads.
    pub fn clock(&self) -> &C {
        &self.clock
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
        let state = self.state.load(Ordering::Acquire);
        self.layout
            .time_of_tick(state >> self.layout.sequence_bits())
    }

    /// Splits an ID of this generator's layout into its fields.
    pub fn decode(&self, id: u64) -> Result<DecodedId> {
        self.layout.decode(id)
    }

    /// The next ID: strictly greater than every ID this generator issued before.
    #[inline]
    pub fn next_id(&self) -> Result<u64> {
        let (tick, first, _) = self.reserve(1)?;
        Ok(self.compose(tick, first))
    }

    /// Reserves up to `want` consecutive sequence numbers of one tick with one
    /// compare-and-swap; returns `(tick, first, count)` with `1 <= count <= want`.
    #[inline(always)]
    fn reserve(&self, want: u64) -> Result<(u64, u64, u64)> {
        loop {
            // State first, then the clock: the reading is then at least as late as that of
            // the thread that wrote the state, so a stale reading is never mistaken for the
            // clock moving backwards (the CAS fails instead, and the loop reads both again).
            let current = self.state.load(Ordering::Acquire);
            let now_ms = self.clock.now_ms();
            match self.plan(current, now_ms, want)? {
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
                        return Ok((tick, first, count));
                    }
                }
                Plan::WaitUntil(unix_ms) => self.clock.wait_until_ms(unix_ms)?,
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
            match self.plan(current, now_ms, 1)? {
                Plan::Take {
                    tick,
                    first,
                    new_state,
                    ..
                } => {
                    *self.state.get_mut() = new_state;
                    return Ok(self.compose(tick, first));
                }
                Plan::WaitUntil(unix_ms) => self.clock.wait_until_ms(unix_ms)?,
            }
        }
    }

    /// Fills `out` with strictly increasing IDs, reserving whole runs of sequence numbers
    /// with one compare-and-swap each. On error, the IDs already written stay valid and
    /// unique; the returned error says why the rest could not be issued.
    pub fn next_ids(&self, out: &mut [u64]) -> Result<()> {
        let stride = self.layout.sequence_stride();
        let mut filled = 0usize;
        while filled < out.len() {
            let (tick, first, count) = self.reserve((out.len() - filled) as u64)?;
            let base = self.compose(tick, first);
            let run = &mut out[filled..filled + count as usize];
            for (i, slot) in run.iter_mut().enumerate() {
                *slot = base + i as u64 * stride;
            }
            filled += count as usize;
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
    fn compose(&self, tick: u64, sequence: u64) -> u64 {
        self.layout.compose_unchecked(tick, 0, sequence) | self.worker_part
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
