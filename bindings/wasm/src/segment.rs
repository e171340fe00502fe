//! The segment engine and date serials, for the JS drivers in the package's `segment.js`.
//!
//! The core's [`segflake::SegmentEngine`] is sans-I/O: the store is a user-supplied async
//! function, so the store call, the bounded wait and the timeouts are Promises and timers
//! in JS. This module exposes the engine's steps as one call each, with the same shape as
//! the native package's. A take also starts the fetch the engine asks for: it calls the
//! driver's `onFetch(step)` synchronously (once per segment).

use std::rc::Rc;

use segflake::host::{self, Spelling, Value};
use segflake::segment::SegmentOptions;
use segflake::{Clock, Error, ManualClock, SerialOptions};
use wasm_bindgen::prelude::*;

use segflake_wasm_hot::{self as hot, SerialClock};

use crate::convert::{self, id_of, u64_of, value_of};
use crate::errors::{to_js, IntoJs};

pub(crate) use segflake_wasm_hot::engine_now_ms as now_ms;

/// The engine options of `new SegmentGenerator(options)` (an object: it holds the store).
fn segment_options(options: &JsValue) -> Result<SegmentOptions, Error> {
    if options.is_undefined() || options.is_null() {
        let why = format!(
            "got {}; expected an options object such as {{ store: {{ allocate: async (tag, step) => ({{ maxId, step }}) }} }}",
            if options.is_null() { "null" } else { "undefined" }
        );
        return Err(Error::invalid_argument("options", why));
    }
    convert::configure(options, &["store"])
}

/// Validates the options of a segment generator; returns the accepted settings
/// (`waitTimeoutMs`, `storeTimeoutMs`, ...).
#[wasm_bindgen(js_name = "__segmentConfig")]
pub fn segment_config(options: JsValue) -> Result<JsValue, JsValue> {
    let o = segment_options(&options).js()?;
    let settings = host::spelled_settings(&o, Spelling::Camel);
    Ok(convert::js_of(Value::Map(settings)))
}

/// One tag's engine (used by `SegmentGenerator`; not part of the public API).
#[wasm_bindgen(js_name = "__SegmentEngine")]
pub struct JsSegmentEngine {
    inner: Rc<segflake::SegmentEngine>,
}

impl JsSegmentEngine {
    /// Reads the store's answer (one value, or `maxId` and `step`) as the core does and hands
    /// it to the engine: a usable range, or the refusal as a failed fetch.
    fn complete_with(&self, now: u64, answer: &JsValue, step: &JsValue) -> Result<(), Error> {
        let answer = match step.is_undefined() {
            true => value_of(answer, "answer"),
            false => value_of(answer, "maxId").and_then(|m| {
                let step = value_of(step, "step")?;
                Ok(Value::Map(vec![("maxId".into(), m), ("step".into(), step)]))
            }),
        };
        match answer {
            Ok(answer) => self.inner.complete_answer(now, &answer, Spelling::Camel),
            Err(unreadable) => {
                let _ = self
                    .inner
                    .complete_fetch(now, Err(unreadable.clone().into()));
                Err(unreadable)
            }
        }
    }
}

#[wasm_bindgen(js_class = "__SegmentEngine")]
impl JsSegmentEngine {
    /// `stores`: how many stores the engine spans (a `MultiStore`'s length; default 1).
    #[wasm_bindgen(constructor)]
    pub fn new(
        tag: JsValue,
        options: JsValue,
        stores: Option<u32>,
    ) -> Result<JsSegmentEngine, JsValue> {
        let tag = convert::string_of(&tag, "tag").js()?;
        let o = segment_options(&options).js()?;
        let stores = stores.unwrap_or(1) as usize;
        Ok(JsSegmentEngine {
            inner: Rc::new(segflake::SegmentEngine::with_stores(&tag, &o, stores).js()?),
        })
    }

    /// The store the fetch in flight asks (an index into a `MultiStore`), or `null`.
    #[wasm_bindgen(getter, js_name = fetchStore)]
    pub fn fetch_store(&self) -> Option<u32> {
        self.inner.fetch_store().map(|s| s as u32)
    }

    /// A handle on this engine whose `take(onFetch)` takes one ID from a ready segment (or
    /// `undefined`), compiled for speed: the package's drivers take through it.
    #[wasm_bindgen(getter, js_name = "__take")]
    pub fn take(&self) -> hot::SegmentTake {
        hot::SegmentTake::new(Rc::clone(&self.inner))
    }

    /// Up to `n` IDs from ready segments (possibly none).
    #[wasm_bindgen(js_name = takeBatch)]
    pub fn take_batch(&self, n: JsValue, on_fetch: &js_sys::Function) -> Result<Vec<u64>, JsValue> {
        let mut out = vec![0u64; convert::batch_size(&n).js()?];
        let got = self.inner.try_next_batch(&mut out);
        out.truncate(got);
        hot::after_take(&self.inner, on_fetch)?;
        Ok(out)
    }

    /// Starts the fetch the engine wants, if any (`onFetch(step)`); call after creating it.
    pub fn poke(&self, on_fetch: &js_sys::Function) -> Result<(), JsValue> {
        hot::after_take(&self.inner, on_fetch)
    }

    /// Hands the engine the store's answer: `complete(answer)` with the value the store
    /// resolved to, or `complete(maxId, step)`. Throws `StoreContractViolationError` for an
    /// unusable answer or a refused range (none of its IDs is issued).
    pub fn complete(&self, answer: JsValue, step: JsValue) -> Result<(), JsValue> {
        self.complete_with(now_ms(), &answer, &step).js()
    }

    /// Records a failed fetch; `message` is the text of what the store threw or rejected with.
    pub fn fail(&self, message: String) {
        let _ = self.inner.fail_fetch(now_ms(), &message);
    }

    /// Fails the store call in flight as timed out (`storeTimeoutMs`), with the core's
    /// message; returns the failure text, or `null` when no call was in flight.
    #[wasm_bindgen(js_name = "timeOut")]
    pub fn time_out(&self) -> Option<String> {
        self.inner
            .time_out_fetch(now_ms(), segflake::Spelling::Camel, true)
            .then(|| self.inner.stats(now_ms()).last_error.unwrap_or_default())
    }

    /// One ID without starting a fetch (for the shared vectors).
    #[wasm_bindgen(js_name = "__takeRaw")]
    pub fn take_raw(&self) -> Option<u64> {
        self.inner.try_next()
    }

    /// `begin_fetch` at an explicit engine time: the step requested, or `null`.
    #[wasm_bindgen(js_name = "__beginFetchAt")]
    pub fn begin_fetch_at(&self, now: JsValue) -> Result<Option<f64>, JsValue> {
        let t = u64_of(&now, "nowMs").js()?;
        Ok(self.inner.begin_fetch(t).map(|r| convert::num(r.step)))
    }

    /// `complete_fetch` at an explicit engine time.
    #[wasm_bindgen(js_name = "__completeAt")]
    pub fn complete_at(&self, now: JsValue, max_id: JsValue, step: JsValue) -> Result<(), JsValue> {
        let t = u64_of(&now, "nowMs").js()?;
        self.complete_with(t, &max_id, &step).js()
    }

    #[wasm_bindgen(getter, js_name = failureCount)]
    pub fn failure_count(&self) -> f64 {
        convert::num(self.inner.failure_count())
    }

    #[wasm_bindgen(getter, js_name = completionCount)]
    pub fn completion_count(&self) -> f64 {
        convert::num(self.inner.completion_count())
    }

    #[wasm_bindgen(getter, js_name = fetchInFlight)]
    pub fn fetch_in_flight(&self) -> bool {
        self.inner.fetch_in_flight()
    }

    #[wasm_bindgen(getter)]
    pub fn tag(&self) -> String {
        self.inner.tag().to_string()
    }

    /// The error for a caller that found no ID: `ClosedError` or `SegmentsExhaustedError`.
    #[wasm_bindgen(js_name = exhaustedError)]
    pub fn exhausted_error(&self) -> JsValue {
        to_js(self.inner.exhausted_error(now_ms()))
    }

    /// A snapshot of this tag's segments (`SegmentStats`).
    pub fn stats(&self) -> JsValue {
        convert::record(&self.inner.stats(now_ms()))
    }

    pub fn close(&self) {
        self.inner.close();
    }

    /// After `close()`: the IDs this engine fetched and did not issue, to hand back to the
    /// store (`store.giveBack(tag, expectedMaxId, maxId)`: the tag's `max_id` goes from
    /// `expectedMaxId` down to `maxId` if it is still `expectedMaxId`), as bigints. Offered
    /// once; `null` while the engine is open, while a fetch is in flight, for a multi-store
    /// engine, with `giveBack: false`, when nothing is left, and on every later call.
    #[wasm_bindgen(js_name = takeGiveBack)]
    pub fn take_give_back(&self) -> JsValue {
        let Some(offer) = self.inner.take_give_back() else {
            return JsValue::NULL;
        };
        let o = JsValue::from(js_sys::Object::new());
        convert::set(&o, "expectedMaxId", &JsValue::from(offer.expected_max_id));
        convert::set(&o, "maxId", &JsValue::from(offer.max_id));
        o
    }

    #[wasm_bindgen(getter)]
    pub fn closed(&self) -> bool {
        self.inner.is_closed()
    }
}

/// Serial options as the core checks them; `counter` (the driver's) must be a function.
fn serial_options(options: &JsValue) -> Result<SerialOptions, Error> {
    let mut pairs = convert::pairs_of(options, &[])?;
    if let Some((_, got)) = pairs
        .iter()
        .find(|(k, v)| k == "counter" && *v != Value::Null)
    {
        let why = format!("got {got}; expected an async function (key, unixSeconds) => sequence");
        return Err(Error::invalid_argument("counter", why));
    }
    pairs.retain(|(k, _)| k != "counter");
    host::configure(pairs, host::Dialect::JS)
}

fn serial(options: &JsValue, clock: Option<ManualClock>) -> Result<JsSerialGenerator, Error> {
    let inner =
        segflake::SerialGenerator::with_clock(serial_options(options)?, SerialClock(clock))?;
    Ok(JsSerialGenerator {
        inner: Rc::new(inner),
    })
}

/// Date-prefixed decimal serial numbers (used by `SerialGenerator`; not part of the
/// public API).
#[wasm_bindgen(js_name = "__SerialGenerator")]
pub struct JsSerialGenerator {
    inner: Rc<segflake::SerialGenerator<SerialClock>>,
}

#[wasm_bindgen(js_class = "__SerialGenerator")]
impl JsSerialGenerator {
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsSerialGenerator, JsValue> {
        serial(&options, None).js()
    }

    /// A generator on a manual clock set to `nowMs` (for the shared vectors).
    #[wasm_bindgen(js_name = "__withManualClock")]
    pub fn with_manual_clock(
        options: JsValue,
        now_ms: JsValue,
    ) -> Result<JsSerialGenerator, JsValue> {
        let t = u64_of(&now_ms, "nowMs").js()?;
        serial(&options, Some(ManualClock::new(t))).js()
    }

    /// Sets the manual clock (generators made by `__withManualClock` only).
    #[wasm_bindgen(js_name = "__setClockMs")]
    pub fn set_clock_ms(&self, now_ms: JsValue) -> Result<(), JsValue> {
        let t = u64_of(&now_ms, "nowMs").js()?;
        let why = "this generator reads Date.now()";
        let clock = self.inner.clock().0.as_ref();
        clock
            .map(|c| c.set_ms(t))
            .ok_or_else(|| to_js(Error::invalid_argument("clock", why)))
    }

    /// A handle on this generator whose `__nextOrZero` issues the next serial from the local
    /// per-second counter, compiled for speed: the package's `next` calls it.
    #[wasm_bindgen(getter, js_name = "__take")]
    pub fn take(&self) -> hot::SerialTake {
        hot::SerialTake::new(Rc::clone(&self.inner))
    }

    /// The last serial issued (or restored); `0n` if none.
    #[wasm_bindgen(getter)]
    pub fn last(&self) -> u64 {
        self.inner.last()
    }

    /// Splits a serial into `{ date, unixSeconds, workerId, sequence }`.
    pub fn decode(&self, serial: JsValue) -> Result<JsValue, JsValue> {
        let s = id_of(&serial, "serial").js()?;
        self.inner.decode(s).js().map(|p| convert::record(&p))
    }

    /// The serial for `sequence` in the Unix second `unixSeconds` (pure).
    pub fn format(&self, unix_seconds: JsValue, sequence: JsValue) -> Result<u64, JsValue> {
        let second = u64_of(&unix_seconds, "unixSeconds").js()?;
        let seq = u64_of(&sequence, "sequence").js()?;
        self.inner.format(second, seq).js()
    }

    /// `yyMMddHHmmss` of a Unix second at this generator's offset, as a 12-digit string.
    #[wasm_bindgen(js_name = datePrefix)]
    pub fn date_prefix(&self, unix_seconds: JsValue) -> Result<String, JsValue> {
        let second = u64_of(&unix_seconds, "unixSeconds").js()?;
        Ok(format!("{:012}", self.inner.date_prefix(second).js()?))
    }

    /// How long one call of the shared counter may run (`counterTimeoutMs`, checked by the
    /// core with the other options).
    #[wasm_bindgen(getter, js_name = "__counterTimeoutMs")]
    pub fn counter_timeout_ms(&self) -> f64 {
        convert::num(self.inner.options().counter_timeout_ms)
    }

    /// The `StoreError` for a counter whose numbers stayed at or below the last serial for
    /// `__counterAttempts()` calls in a row.
    #[wasm_bindgen(js_name = "__counterGaveUp")]
    pub fn counter_gave_up(&self) -> JsValue {
        to_js(self.inner.counter_gave_up())
    }

    /// The `StoreError` for a counter call on `key` that outlived `counterTimeoutMs`.
    #[wasm_bindgen(js_name = "__counterTimedOut")]
    pub fn counter_timed_out(&self, key: String) -> JsValue {
        let ms = self.inner.options().counter_timeout_ms;
        to_js(segflake::host::counter_timeout_error(
            &key,
            ms,
            segflake::Spelling::Camel,
        ))
    }

    /// Which Unix second a shared counter should count in now (or at `nowMs`, Unix ms).
    #[wasm_bindgen(js_name = "__counterSecond")]
    pub fn counter_second(&self, now_ms: JsValue) -> Result<f64, JsValue> {
        let t = match now_ms.is_undefined() {
            true => self.inner.clock().now_ms(),
            false => u64_of(&now_ms, "nowMs").js()?,
        };
        Ok(convert::num(self.inner.counter_second(t)))
    }

    /// A script counter's key for `unixSeconds`, after its prefix and a colon:
    /// `serial:<yyMMddHHmmss><worker digits>`.
    #[wasm_bindgen(js_name = "__counterKey")]
    pub fn counter_key(&self, unix_seconds: JsValue) -> Result<String, JsValue> {
        let second = u64_of(&unix_seconds, "unixSeconds").js()?;
        self.inner.counter_key(second).js()
    }

    /// The serial script's arguments for `unixSeconds`: the second,
    /// `counterMaxBehindMs`, `counterMaxAheadMs`, the expiry's grace.
    #[wasm_bindgen(js_name = "__counterArgs")]
    pub fn counter_args(&self, unix_seconds: JsValue) -> Result<js_sys::Array, JsValue> {
        let second = u64_of(&unix_seconds, "unixSeconds").js()?;
        let args = self.inner.counter_args(second);
        Ok(args
            .iter()
            .map(|&a| JsValue::from(convert::num(a)))
            .collect())
    }

    /// Takes a counter's `reply` for `unixSeconds` (a sequence number, or the serial
    /// script's reply): the serial, or `null` when it is not above the last one (ask again).
    /// Throws `ClockSkewError` when the script refused the second, `StoreError` for an
    /// unusable reply.
    #[wasm_bindgen(js_name = "__acceptReply")]
    pub fn accept_reply(&self, unix_seconds: JsValue, reply: JsValue) -> Result<JsValue, JsValue> {
        let second = u64_of(&unix_seconds, "unixSeconds").js()?;
        let reply = crate::lease::answer_of(&reply).js()?;
        let serial = self.inner.accept_reply(second, &reply).js()?;
        Ok(serial.map_or(JsValue::NULL, JsValue::from))
    }
}

/// How many times `nextFromCounter` asks the counter while its numbers are not above the
/// last serial.
#[wasm_bindgen(js_name = "__counterAttempts")]
pub fn counter_attempts() -> u32 {
    segflake::serial::COUNTER_ATTEMPTS
}
