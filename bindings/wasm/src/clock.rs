//! The JS wall clock.
//!
//! `std::time::SystemTime::now()` traps on `wasm32-unknown-unknown`, so every time the
//! binding needs comes from `Date.now()` through the core's [`Clock`] trait.

use std::sync::atomic::{AtomicBool, Ordering};

use segflake::{Clock, Error};

/// How many reads of `Date.now()` in a row may return the same value while a generator
/// waits for the next tick before the wait gives up (about 0.3 to 1 s of spinning; a
/// running clock changes every millisecond, some tens of thousands of reads).
pub const STALL_READS: u64 = 1 << 24;

/// `Date.now()` in whole milliseconds (0 for a clock before 1970 or a non-finite value).
#[inline]
pub fn now_ms() -> u64 {
    let t = js_sys::Date::now();
    if t.is_finite() && t > 0.0 {
        t as u64
    } else {
        0
    }
}

/// `Date.now()` as a [`Clock`], with a guard against a clock that never advances.
///
/// JS cannot sleep synchronously, so a generator that must wait for the next tick spins on
/// `Date.now()`. Some runtimes freeze `Date.now()` while a request runs; such a wait would
/// never end. After [`STALL_READS`] unchanged reads the wait gives up and the clock reads
/// 0 until [`JsClock::take_stall`] is called, which makes the generator's current call
/// fail (the core sees a clock before its epoch) without touching its state; the binding
/// then reports the stall instead.
#[derive(Debug, Default)]
pub struct JsClock {
    stalled: AtomicBool,
}

impl JsClock {
    pub fn new() -> JsClock {
        JsClock::default()
    }

    /// If the last wait gave up, clears that and returns the error to report.
    pub fn take_stall(&self) -> Option<Error> {
        if self.stalled.swap(false, Ordering::Relaxed) {
            Some(Error::InvalidArgument {
                name: "clock",
                reason: format!(
                    "Date.now() returned the same time for {STALL_READS} reads in a row while \
                     the generator waited for the next tick (the sequence numbers of maxDriftMs \
                     worth of ticks were used up); this runtime's clock does not advance during \
                     synchronous work, so issue fewer IDs per burst or yield to the event loop"
                ),
            })
        } else {
            None
        }
    }
}

impl Clock for JsClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        if self.stalled.load(Ordering::Relaxed) {
            0
        } else {
            now_ms()
        }
    }

    fn wait_until_ms(&self, unix_ms: u64) {
        let mut last = now_ms();
        let mut same = 0u64;
        while last < unix_ms {
            let now = now_ms();
            if now != last {
                last = now;
                same = 0;
            } else {
                same += 1;
                if same >= STALL_READS {
                    self.stalled.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
    }
}
