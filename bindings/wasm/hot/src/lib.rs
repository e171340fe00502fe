//! What a segflake-wasm generator runs per ID: the JS wall clock and the takes of the
//! snowflake, segment and serial generators.
//!
//! A crate of its own so that it is compiled for speed (`opt-level = 3` in the workspace's
//! `[profile.wasm-release.package.segflake-wasm-hot]`) while the binding around it, whose
//! code runs once per generator or per error, is compiled for size. The generators' per-ID
//! code is generic over the clock (`Snowflake<JsClock>`) or `#[inline]`, so it is compiled
//! in whichever crate names the clock or calls it: this one. The binding calls no other
//! per-ID path; its errors from a sentinel-returning call wait in [`stash`].
//!
//! `std::time::SystemTime::now()` traps on `wasm32-unknown-unknown`, so every time the
//! binding needs comes from `Date.now()` through the core's [`Clock`] trait.

use std::cell::RefCell;
use std::sync::Arc;

use segflake::{Clock, Error, Result, Snowflake};
use wasm_bindgen::prelude::*;

thread_local! {
    static STASHED: RefCell<Option<Error>> = const { RefCell::new(None) };
}

/// Keeps `err` for [`take_stashed`] (for exports that signal failure with a sentinel value).
#[cold]
pub fn stash(err: Error) {
    STASHED.with(|s| *s.borrow_mut() = Some(err));
}

/// The error kept by the last failing sentinel-returning call, if any.
pub fn take_stashed() -> Option<Error> {
    STASHED.with(|s| s.borrow_mut().take())
}

/// `result`'s value, or `failed` (a value the call never returns otherwise) after
/// stashing the error.
#[inline]
fn or_stash<T>(result: Result<T>, failed: T) -> T {
    result.unwrap_or_else(|e| {
        stash(e);
        failed
    })
}

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

/// A second handle on a `Snowflake`'s generator that only issues IDs: the JS class's
/// `nextId`, `nextIdString` and `fillIds` call it, so that the per-ID call, the handle's
/// borrow check included, is compiled here. It holds the generator as the `Snowflake` does (an `Arc`); the package
/// frees it with the `Snowflake`.
#[wasm_bindgen(js_name = "__SnowflakeTake")]
pub struct SnowflakeTake {
    generator: Arc<Snowflake<JsClock>>,
}

impl SnowflakeTake {
    pub fn new(generator: Arc<Snowflake<JsClock>>) -> SnowflakeTake {
        SnowflakeTake { generator }
    }
}

#[wasm_bindgen(js_class = "__SnowflakeTake")]
impl SnowflakeTake {
    /// The next ID, or 0 after stashing the error for the binding's `__takeError` (0 is
    /// never an ID of a generator: its first ID is in tick 1 or later). A plain `u64`
    /// return, so the JS glue allocates nothing per call.
    #[wasm_bindgen(js_name = "__nextIdOrZero")]
    pub fn next_id_or_zero(&self) -> u64 {
        or_stash(self.generator.next_id(), 0)
    }

    /// Fills `target` with [`fill_ids`]: true, or false after stashing the error (the
    /// package checks that `target` is a `BigUint64Array` first).
    #[wasm_bindgen(js_name = "__fillIds")]
    pub fn fill_ids(&self, target: &js_sys::BigUint64Array) -> bool {
        or_stash(fill_ids(&self.generator, target).map(|()| true), false)
    }

    /// The next ID in decimal, or nothing after stashing the error, as
    /// [`__nextIdOrZero`](SnowflakeTake::next_id_or_zero).
    #[wasm_bindgen(js_name = "__nextIdString")]
    pub fn next_id_string(&self) -> Option<String> {
        let id = self.generator.next_id();
        or_stash(
            id.map(|id| Some(segflake::codec::Format::Decimal.encode(id))),
            None,
        )
    }
}

/// [`Snowflake::next_id`].
pub fn next_id(generator: &Snowflake<JsClock>) -> Result<u64> {
    generator.next_id()
}

/// Fills `array` (1..=[`segflake::MAX_BATCH`] elements) with [`Snowflake::next_ids`].
pub fn fill_ids(generator: &Snowflake<JsClock>, array: &js_sys::BigUint64Array) -> Result<()> {
    let len = array.length() as usize;
    segflake::check_batch_size(len)?;
    let mut ids = vec![0u64; len];
    generator.next_ids(&mut ids)?;
    array.copy_from(&ids);
    Ok(())
}

/// [`Snowflake::next_ids_vec`].
pub fn next_ids_vec(generator: &Snowflake<JsClock>, n: usize) -> Result<Vec<u64>> {
    generator.next_ids_vec(n)
}

#[cfg(feature = "full")]
pub use full::*;

#[cfg(feature = "full")]
mod full {
    use std::cell::Cell;
    use std::rc::Rc;

    use segflake::{Clock, ManualClock, SegmentEngine, SerialGenerator};
    use wasm_bindgen::prelude::*;

    use super::or_stash;

    thread_local! {
        static LAST_NOW: Cell<u64> = const { Cell::new(0) };
    }

    /// Non-decreasing milliseconds for the engines (they only compare them): `Date.now()`,
    /// never below a value returned before.
    pub fn engine_now_ms() -> u64 {
        let t = super::now_ms();
        LAST_NOW.with(|last| {
            let v = t.max(last.get());
            last.set(v);
            v
        })
    }

    /// The clock of a serial generator: `Date.now()`, or a manual one for the shared vectors.
    pub struct SerialClock(pub Option<ManualClock>);

    impl Clock for SerialClock {
        #[inline]
        fn now_ms(&self) -> u64 {
            self.0.as_ref().map_or_else(super::now_ms, |c| c.now_ms())
        }
    }

    /// A second handle on a segment engine that takes IDs, for the package's segment
    /// drivers (as [`SnowflakeTake`](super::SnowflakeTake) for a `Snowflake`).
    #[wasm_bindgen(js_name = "__SegmentTake")]
    pub struct SegmentTake {
        engine: Rc<SegmentEngine>,
    }

    impl SegmentTake {
        pub fn new(engine: Rc<SegmentEngine>) -> SegmentTake {
            SegmentTake { engine }
        }
    }

    /// After a take: starts the fetch `engine` wants, by calling `on_fetch(step)`.
    #[inline]
    pub fn after_take(engine: &SegmentEngine, on_fetch: &js_sys::Function) -> Result<(), JsValue> {
        if engine.wants_fetch() {
            if let Some(req) = engine.begin_fetch(engine_now_ms()) {
                on_fetch.call1(&JsValue::UNDEFINED, &JsValue::from_f64(req.step as f64))?;
            }
        }
        Ok(())
    }

    #[wasm_bindgen(js_class = "__SegmentTake")]
    impl SegmentTake {
        /// One ID from a ready segment, or `undefined`; then starts the fetch the engine
        /// wants, if any (`onFetch(step)`, synchronously).
        pub fn take(&self, on_fetch: &js_sys::Function) -> Result<Option<u64>, JsValue> {
            let id = self.engine.try_next();
            after_take(&self.engine, on_fetch)?;
            Ok(id)
        }
    }

    /// A second handle on a serial generator that issues serials, for the package's
    /// serial driver (as [`SnowflakeTake`](super::SnowflakeTake) for a `Snowflake`).
    #[wasm_bindgen(js_name = "__SerialTake")]
    pub struct SerialTake {
        generator: Rc<SerialGenerator<SerialClock>>,
    }

    impl SerialTake {
        pub fn new(generator: Rc<SerialGenerator<SerialClock>>) -> SerialTake {
            SerialTake { generator }
        }
    }

    #[wasm_bindgen(js_class = "__SerialTake")]
    impl SerialTake {
        /// The next serial, or 0 after stashing the error (a serial is never 0: it starts
        /// with its date).
        #[wasm_bindgen(js_name = "__nextOrZero")]
        pub fn next_or_zero(&self) -> u64 {
            or_stash(self.generator.next(), 0)
        }
    }
}
