//! The JS wall clock.
//!
//! `std::time::SystemTime::now()` traps on `wasm32-unknown-unknown`, so every time the
//! binding needs comes from `Date.now()` through the core's [`Clock`] trait.

use segflake::Clock;

/// `Date.now()` as a [`Clock`].
#[derive(Debug, Clone, Copy, Default)]
pub struct JsClock;

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

impl Clock for JsClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        now_ms()
    }
    // `wait_until_ms` keeps the trait's default: a spin on `now_ms`. JS offers no way to
    // sleep synchronously, and the generator waits only when it has used the whole
    // sequence space of `max_drift_ms` worth of ticks ahead of the clock.
}
