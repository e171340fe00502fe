//! The JS wall clock.
//!
//! `std::time::SystemTime::now()` traps on `wasm32-unknown-unknown`, so every time the
//! binding needs comes from `Date.now()` through the core's [`Clock`] trait.

use segflake::Clock;

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

/// `Date.now()` as a [`Clock`].
///
/// JS cannot sleep synchronously, so a generator that must wait for the next tick spins on
/// `Date.now()` (the core's default `wait_until_ms`). Some runtimes freeze `Date.now()`
/// while a request runs; the core's wait then gives up after `segflake::clock::STALL_READS`
/// identical readings and the call fails with a `ClockStalledError` instead of hanging,
/// leaving the generator's state untouched.
#[derive(Debug, Default, Clone, Copy)]
pub struct JsClock;

impl Clock for JsClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        now_ms()
    }
}
