//! Where time comes from.
//!
//! The core never reads the wall clock directly: every generator takes a [`Clock`].
//! [`SystemClock`] is the default on native targets; on `wasm32-unknown-unknown`
//! `std::time::SystemTime` is unavailable, so the WebAssembly binding supplies a clock
//! backed by `Date.now()`. [`ManualClock`] is for tests and simulations.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// How many identical readings in a row the default [`Clock::wait_until_ms`] accepts
/// before it decides the clock is not advancing (2^24: a fraction of a second to a few
/// seconds of spinning, depending on the cost of one reading).
pub const STALL_READS: u64 = 1 << 24;

/// A source of Unix time in milliseconds.
///
/// Implementations must be cheap (`now_ms` is called once per ID) and thread-safe.
/// The time may jump in either direction; generators enforce their own guarantees.
pub trait Clock: Send + Sync {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    fn now_ms(&self) -> u64;

    /// Blocks until `now_ms() >= unix_ms` (or returns early; callers re-check).
    ///
    /// A clock that stops advancing must not hang its caller: the default spins on
    /// [`now_ms`](Clock::now_ms), which works on every target, and fails with
    /// [`Error::ClockStalled`] after [`STALL_READS`] identical readings (a host clock
    /// frozen during synchronous work, a callback returning a constant).
    fn wait_until_ms(&self, unix_ms: u64) -> Result<()> {
        let mut last = self.now_ms();
        let mut same = 0u64;
        while last < unix_ms {
            std::hint::spin_loop();
            let now = self.now_ms();
            if now != last {
                last = now;
                same = 0;
            } else {
                same += 1;
                if same >= STALL_READS {
                    return Err(stalled(last, unix_ms, "2^24 readings in a row"));
                }
            }
        }
        Ok(())
    }
}

/// The error for a clock that kept returning `reading` for `stalled_for` (say "2000 ms")
/// while a generator waited for `waiting_for`.
pub fn stalled(reading: u64, waiting_for: u64, stalled_for: impl Into<String>) -> Error {
    Error::ClockStalled {
        reading_ms: reading,
        waiting_for_ms: waiting_for,
        stalled_for: stalled_for.into(),
    }
}

/// How long a wait for the clock that runs outside [`Clock::wait_until_ms`] (an async
/// driver's timer, [`wait_until_ms_or_stall`] for a host callback clock) accepts one
/// reading before it decides the clock is not advancing: 2000 ms.
pub const STALL_MS: u64 = 2000;

/// The longest sleep [`ClockWait::poll`] suggests between two readings (1 s), so a clock
/// stepped forwards is noticed soon.
pub const MAX_POLL_SLEEP_MS: u64 = 1000;

/// A wait for a clock to reach a time, sans-I/O: the caller reads the clock (and its own
/// monotonic time), hands both to [`poll`](ClockWait::poll), and sleeps as long as it
/// says, until it answers `None` (the time is reached) or fails with
/// [`Error::ClockStalled`] (the clock kept one reading for `stall_ms` of monotonic time).
///
/// The wait an async driver makes on a [`Reserve::WaitUntil`](crate::Reserve::WaitUntil),
/// and the one [`wait_until_ms_or_stall`] makes for a host callback clock.
///
/// ```
/// use segflake::clock::ClockWait;
///
/// let mut wait = ClockWait::new(1_000, 2_000);
/// assert_eq!(wait.poll(990, 0)?, Some(10)); // sleep 10 ms, then read again
/// assert_eq!(wait.poll(995, 10)?, Some(5));
/// assert_eq!(wait.poll(1_000, 15)?, None); // reached
///
/// let mut frozen = ClockWait::new(1_000, 2_000);
/// assert_eq!(frozen.poll(990, 0)?, Some(10));
/// assert_eq!(frozen.poll(990, 1_999)?, Some(10));
/// assert!(frozen.poll(990, 2_000).is_err()); // ClockStalled after 2000 ms
/// # Ok::<(), segflake::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockWait {
    unix_ms: u64,
    stall_ms: u64,
    /// The last reading and the monotonic time it was first seen.
    seen: Option<(u64, u64)>,
}

impl ClockWait {
    /// A wait for the clock to read `unix_ms`, failing once it keeps one reading for
    /// `stall_ms` ([`STALL_MS`] is the core's default).
    pub const fn new(unix_ms: u64, stall_ms: u64) -> ClockWait {
        ClockWait {
            unix_ms,
            stall_ms,
            seen: None,
        }
    }

    /// The time waited for.
    pub const fn target_ms(&self) -> u64 {
        self.unix_ms
    }

    /// Takes a `reading` of the clock made at `monotonic_ms` (any monotonic time base in
    /// milliseconds, the same on every call): `None` once the reading is at or past the
    /// target; otherwise how long to sleep before reading again (the gap, between 1 and
    /// [`MAX_POLL_SLEEP_MS`]).
    ///
    /// Errors: [`Error::ClockStalled`] when the reading has not changed for `stall_ms`.
    pub fn poll(&mut self, reading: u64, monotonic_ms: u64) -> Result<Option<u64>> {
        if reading >= self.unix_ms {
            return Ok(None);
        }
        match self.seen {
            Some((last, since)) if last == reading => {
                if monotonic_ms.saturating_sub(since) >= self.stall_ms {
                    return Err(stalled(
                        reading,
                        self.unix_ms,
                        format!("{} ms", self.stall_ms),
                    ));
                }
            }
            _ => self.seen = Some((reading, monotonic_ms)),
        }
        Ok(Some((self.unix_ms - reading).clamp(1, MAX_POLL_SLEEP_MS)))
    }
}

/// Waits like [`Clock::wait_until_ms`] for a clock whose readings come from elsewhere (a
/// host callback), deciding it has stalled after `stall_ms` of real time without a change
/// ([`Error::ClockStalled`]). Yields the thread between readings. Not on
/// `wasm32-unknown-unknown`, which has no monotonic clock of its own.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub fn wait_until_ms_or_stall<C: Clock + ?Sized>(
    clock: &C,
    unix_ms: u64,
    stall_ms: u64,
) -> Result<()> {
    let start = std::time::Instant::now();
    let mut wait = ClockWait::new(unix_ms, stall_ms);
    loop {
        let reading = clock.now_ms();
        let monotonic_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
        if wait.poll(reading, monotonic_ms)?.is_none() {
            return Ok(());
        }
        std::thread::yield_now();
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn wait_until_ms(&self, unix_ms: u64) -> Result<()> {
        (**self).wait_until_ms(unix_ms)
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn wait_until_ms(&self, unix_ms: u64) -> Result<()> {
        (**self).wait_until_ms(unix_ms)
    }
}

impl<C: Clock + ?Sized> Clock for Box<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn wait_until_ms(&self, unix_ms: u64) -> Result<()> {
        (**self).wait_until_ms(unix_ms)
    }
}

/// The operating system's wall clock (`std::time::SystemTime`).
///
/// Not usable on `wasm32-unknown-unknown`, where `SystemTime::now` traps; supply a
/// clock from the host there.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        system_now_ms()
    }

    fn wait_until_ms(&self, unix_ms: u64) -> Result<()> {
        loop {
            let now = self.now_ms();
            if now >= unix_ms {
                return Ok(());
            }
            // Sleep most of the gap, then yield: waking a little early costs a re-check,
            // waking late costs throughput.
            if unix_ms - now > 1 {
                std::thread::sleep(std::time::Duration::from_micros((unix_ms - now - 1) * 1000));
            } else {
                std::thread::yield_now();
            }
        }
    }
}

#[inline]
fn system_now_ms() -> u64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_millis() as u64,
        Err(_) => 0,
    }
}

/// A clock that only moves when told to. Thread-safe.
///
/// [`wait_until_ms`](Clock::wait_until_ms) advances the clock to the target (so a
/// generator waiting for the next tick never hangs in a test) and counts the waits.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
    waits: AtomicU64,
}

impl ManualClock {
    /// A clock reading `unix_ms`.
    pub fn new(unix_ms: u64) -> ManualClock {
        ManualClock {
            now: AtomicU64::new(unix_ms),
            waits: AtomicU64::new(0),
        }
    }

    /// Sets the time (forwards or backwards).
    pub fn set_ms(&self, unix_ms: u64) {
        self.now.store(unix_ms, Ordering::SeqCst);
    }

    /// Moves the time forwards by `ms`.
    pub fn advance_ms(&self, ms: u64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }

    /// Moves the time backwards by `ms` (saturating at 0).
    pub fn rewind_ms(&self, ms: u64) {
        let _ = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_sub(ms))
            });
    }

    /// How many times a generator has waited on this clock.
    pub fn waits(&self) -> u64 {
        self.waits.load(Ordering::SeqCst)
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }

    fn wait_until_ms(&self, unix_ms: u64) -> Result<()> {
        self.waits.fetch_add(1, Ordering::SeqCst);
        self.now.fetch_max(unix_ms, Ordering::SeqCst);
        Ok(())
    }
}
