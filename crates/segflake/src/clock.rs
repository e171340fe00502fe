//! Where time comes from.
//!
//! The core never reads the wall clock directly: every generator takes a [`Clock`].
//! [`SystemClock`] is the default on native targets; on `wasm32-unknown-unknown`
//! `std::time::SystemTime` is unavailable, so the WebAssembly binding supplies a clock
//! backed by `Date.now()`. [`ManualClock`] is for tests and simulations.

use std::sync::atomic::{AtomicU64, Ordering};

/// A source of Unix time in milliseconds.
///
/// Implementations must be cheap (`now_ms` is called once per ID) and thread-safe.
/// The time may jump in either direction; generators enforce their own guarantees.
pub trait Clock: Send + Sync {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    fn now_ms(&self) -> u64;

    /// Blocks until `now_ms() >= unix_ms` (or returns early; callers re-check).
    ///
    /// The default spins on [`now_ms`](Clock::now_ms), which works on every target.
    fn wait_until_ms(&self, unix_ms: u64) {
        while self.now_ms() < unix_ms {
            std::hint::spin_loop();
        }
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn wait_until_ms(&self, unix_ms: u64) {
        (**self).wait_until_ms(unix_ms)
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn wait_until_ms(&self, unix_ms: u64) {
        (**self).wait_until_ms(unix_ms)
    }
}

impl<C: Clock + ?Sized> Clock for Box<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
    fn wait_until_ms(&self, unix_ms: u64) {
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

    fn wait_until_ms(&self, unix_ms: u64) {
        loop {
            let now = self.now_ms();
            if now >= unix_ms {
                return;
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

    fn wait_until_ms(&self, unix_ms: u64) {
        self.waits.fetch_add(1, Ordering::SeqCst);
        self.now.fetch_max(unix_ms, Ordering::SeqCst);
    }
}
