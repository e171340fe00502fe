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
    let mut last = clock.now_ms();
    let mut since = std::time::Instant::now();
    while last < unix_ms {
        std::thread::yield_now();
        let now = clock.now_ms();
        if now != last {
            last = now;
            since = std::time::Instant::now();
        } else if since.elapsed().as_millis() >= u128::from(stall_ms) {
            return Err(stalled(last, unix_ms, format!("{stall_ms} ms")));
        }
    }
    Ok(())
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
