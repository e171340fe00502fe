//! The segment engine and date serials, for the JS drivers in the package's `segment.js`.
//!
//! The core's [`segflake::SegmentEngine`] is sans-I/O: the store is a user-supplied async
//! function, so the store call, the bounded wait and the timeouts are Promises and timers
//! in JS. This module exposes the engine's steps as one call each, with the same shape as
//! the native package's. A take also starts the fetch the engine asks for: it calls the
//! driver's `onFetch(step)` synchronously (once per segment).

use std::cell::Cell;
use std::sync::Arc;

use segflake::segment::{Allocation, SegmentOptions};
use segflake::{Clock, Error, ManualClock, SerialOptions};
use wasm_bindgen::prelude::*;

use crate::convert::{self, check_keys, describe, field, to_u64, Accept, MAX_SAFE_INTEGER};
use crate::errors::{to_js, IntoJs};

thread_local! {
    static LAST_NOW: Cell<u64> = const { Cell::new(0) };
}

/// Non-decreasing milliseconds for the engine (it only compares them): `Date.now()`,
/// never below a value returned before.
fn now_ms() -> u64 {
    let t = crate::clock::now_ms();
    LAST_NOW.with(|last| {
        let v = t.max(last.get());
        last.set(v);
        v
    })
}

const SEGMENT_KEYS: &[&str] = &[
    "store",
    "step",
    "maxStep",
    "dynamicStep",
    "prefetchPercent",
    "retryBackoffMs",
    "waitTimeoutMs",
    "storeTimeoutMs",
];

/// How long the driver lets one store call run before counting it as failed.
const DEFAULT_STORE_TIMEOUT_MS: u64 = 10_000;

fn int(v: &JsValue, name: &'static str) -> Result<u64, Error> {
    to_u64(v, name, Accept::Integer, u64::MAX)
}

/// Reads and validates the engine options of `new SegmentGenerator(options)`.
fn segment_options(options: &JsValue) -> Result<(SegmentOptions, u64), Error> {
    if !options.is_object() || js_sys::Array::is_array(options) {
        return Err(Error::InvalidArgument {
            name: "options".into(),
            reason: format!(
                "got {}; expected an options object such as {{ store: {{ allocate: async (tag, \
                 step) => ({{ maxId, step }}) }} }}",
                describe(options)
            ),
        });
    }
    check_keys(options, "options", SEGMENT_KEYS)?;
    let mut o = SegmentOptions::default();
    if let Some(v) = field(options, "step")? {
        o.step = int(&v, "step")?;
        if field(options, "maxStep")?.is_none() {
            o.max_step = o.max_step.max(o.step);
        }
    }
    if let Some(v) = field(options, "maxStep")? {
        o.max_step = int(&v, "maxStep")?;
    }
    if let Some(v) = field(options, "dynamicStep")? {
        o.dynamic_step = v.as_bool().ok_or_else(|| Error::InvalidArgument {
            name: "dynamicStep".into(),
            reason: format!("got {}; expected true or false", describe(&v)),
        })?;
    }
    if let Some(v) = field(options, "prefetchPercent")? {
        o.prefetch_percent = to_u64(&v, "prefetchPercent", Accept::Integer, 100)? as u8;
    }
    if let Some(v) = field(options, "retryBackoffMs")? {
        o.retry_backoff_ms = int(&v, "retryBackoffMs")?;
    }
    if let Some(v) = field(options, "waitTimeoutMs")? {
        o.wait_timeout_ms = int(&v, "waitTimeoutMs")?;
    }
    let store_timeout = match field(options, "storeTimeoutMs")? {
        Some(v) => int(&v, "storeTimeoutMs")?,
        None => DEFAULT_STORE_TIMEOUT_MS,
    };
    if store_timeout == 0 || store_timeout > 3_600_000 {
        return Err(Error::InvalidArgument {
            name: "storeTimeoutMs".into(),
            reason: format!("{store_timeout} is out of range; allowed 1..=3600000"),
        });
    }
    o.validate()?;
    Ok((o, store_timeout))
}

fn put(o: &js_sys::Object, key: &str, value: JsValue) {
    let _ = js_sys::Reflect::set(o, &JsValue::from_str(key), &value);
}

/// Validates the options of a segment generator: `{ waitTimeoutMs, storeTimeoutMs }`.
#[wasm_bindgen(js_name = "__segmentConfig")]
pub fn segment_config(options: JsValue) -> Result<JsValue, JsValue> {
    let (o, store_timeout) = segment_options(&options).js()?;
    let out = js_sys::Object::new();
    put(
        &out,
        "waitTimeoutMs",
        convert::num(o.wait_timeout_ms).into(),
    );
    put(&out, "storeTimeoutMs", convert::num(store_timeout).into());
    Ok(out.into())
}

/// One tag's engine (used by `SegmentGenerator`; not part of the public API).
#[wasm_bindgen(js_name = "__SegmentEngine")]
pub struct JsSegmentEngine {
    inner: segflake::SegmentEngine,
}

impl JsSegmentEngine {
    /// After a take: start the fetch the engine wants, by calling `on_fetch(step)`.
    #[inline]
    fn after_take(&self, on_fetch: &js_sys::Function) -> Result<(), JsValue> {
        if self.inner.wants_fetch() {
            if let Some(req) = self.inner.begin_fetch(now_ms()) {
                on_fetch.call1(&JsValue::UNDEFINED, &convert::num(req.step).into())?;
            }
        }
        Ok(())
    }
}

#[wasm_bindgen(js_class = "__SegmentEngine")]
impl JsSegmentEngine {
    #[wasm_bindgen(constructor)]
    pub fn new(tag: JsValue, options: JsValue) -> Result<JsSegmentEngine, JsValue> {
        let tag =
            convert::to_name(&tag, "tag", "a string of 1 to 128 bytes such as \"order\"").js()?;
        let (o, _) = segment_options(&options).js()?;
        Ok(JsSegmentEngine {
            inner: segflake::SegmentEngine::new(&tag, &o).js()?,
        })
    }

    /// One ID from a ready segment, or `null`.
    pub fn take(&self, on_fetch: &js_sys::Function) -> Result<Option<u64>, JsValue> {
        let id = self.inner.try_next();
        self.after_take(on_fetch)?;
        Ok(id)
    }

    /// Up to `n` IDs from ready segments (possibly none).
    #[wasm_bindgen(js_name = takeBatch)]
    pub fn take_batch(&self, n: JsValue, on_fetch: &js_sys::Function) -> Result<Vec<u64>, JsValue> {
        let n = to_u64(&n, "batch size", Accept::Integer, MAX_SAFE_INTEGER).js()?;
        if n > segflake::MAX_BATCH as u64 {
            return Err(to_js(Error::InvalidArgument {
                name: "batch size".into(),
                reason: format!("{n} is out of range; allowed 1..={}", segflake::MAX_BATCH),
            }));
        }
        segflake::check_batch_size(n as usize).js()?;
        let mut out = vec![0u64; n as usize];
        let got = self.inner.try_next_batch(&mut out);
        out.truncate(got);
        self.after_take(on_fetch)?;
        Ok(out)
    }

    /// Starts the fetch the engine wants, if any (`onFetch(step)`); call after creating it.
    pub fn poke(&self, on_fetch: &js_sys::Function) -> Result<(), JsValue> {
        self.after_take(on_fetch)
    }

    /// Hands the engine the store's answer. Throws `StoreContractViolationError` for a
    /// refused range (none of its IDs is issued).
    pub fn complete(&self, max_id: JsValue, step: JsValue) -> Result<(), JsValue> {
        let parsed = int(&max_id, "maxId").and_then(|m| Ok((m, int(&step, "step")?)));
        match parsed {
            Ok((m, s)) => self
                .inner
                .complete_fetch(now_ms(), Ok(Allocation::new(m, s)))
                .js(),
            Err(e) => {
                let err = Error::StoreContractViolation {
                    tag: self.inner.tag().to_string(),
                    reason: format!(
                        "the store resolved to an unusable {e}; expected {{ maxId, step }} with \
                         non-negative integers (number or bigint)"
                    ),
                };
                let _ = self.inner.complete_fetch(now_ms(), Err(err.to_string()));
                Err(to_js(err))
            }
        }
    }

    /// Records a failed fetch (the store threw, rejected, timed out or resolved to garbage).
    pub fn fail(&self, message: String) {
        let _ = self.inner.complete_fetch(now_ms(), Err(message));
    }

    /// One ID without starting a fetch (for the shared vectors).
    #[wasm_bindgen(js_name = "__takeRaw")]
    pub fn take_raw(&self) -> Option<u64> {
        self.inner.try_next()
    }

    /// `begin_fetch` at an explicit engine time: the step requested, or `null`.
    #[wasm_bindgen(js_name = "__beginFetchAt")]
    pub fn begin_fetch_at(&self, now: JsValue) -> Result<Option<f64>, JsValue> {
        let t = int(&now, "nowMs").js()?;
        Ok(self.inner.begin_fetch(t).map(|r| convert::num(r.step)))
    }

    /// `complete_fetch` at an explicit engine time.
    #[wasm_bindgen(js_name = "__completeAt")]
    pub fn complete_at(&self, now: JsValue, max_id: JsValue, step: JsValue) -> Result<(), JsValue> {
        let t = int(&now, "nowMs").js()?;
        let a = Allocation::new(int(&max_id, "maxId").js()?, int(&step, "step").js()?);
        self.inner.complete_fetch(t, Ok(a)).js()
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
        let s = self.inner.stats(now_ms());
        let o = js_sys::Object::new();
        put(&o, "tag", s.tag.as_str().into());
        put(&o, "currentStart", s.current_start.into());
        put(&o, "currentEnd", s.current_end.into());
        put(&o, "position", s.position.into());
        put(&o, "remaining", convert::num(s.remaining).into());
        put(&o, "nextReady", s.next_ready.into());
        put(&o, "nextStart", s.next_start.into());
        put(&o, "nextEnd", s.next_end.into());
        put(&o, "step", convert::num(s.step).into());
        put(&o, "fetchInFlight", s.fetch_in_flight.into());
        put(&o, "fetches", convert::num(s.fetches).into());
        put(&o, "failures", convert::num(s.failures).into());
        put(
            &o,
            "consecutiveFailures",
            convert::num(s.consecutive_failures).into(),
        );
        put(&o, "issued", convert::num(s.issued).into());
        put(&o, "idsPerSecond", s.ids_per_second.into());
        // Absent fields are left out, as in the native package.
        if let Some(e) = &s.last_error {
            put(&o, "lastError", e.as_str().into());
        }
        if let Some(ms) = s.last_fetch_latency_ms {
            put(&o, "lastFetchLatencyMs", convert::num(ms).into());
        }
        if let Some(r) = s.runway_seconds {
            put(&o, "runwaySeconds", r.into());
        }
        o.into()
    }

    pub fn close(&self) {
        self.inner.close();
    }

    #[wasm_bindgen(getter)]
    pub fn closed(&self) -> bool {
        self.inner.is_closed()
    }
}

/// The clock of a serial generator: `Date.now()`, or a manual one for the shared vectors.
pub enum SerialClock {
    Js,
    Manual(Arc<ManualClock>),
}

impl Clock for SerialClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        match self {
            SerialClock::Js => crate::clock::now_ms(),
            SerialClock::Manual(c) => c.now_ms(),
        }
    }
}

const SERIAL_KEYS: &[&str] = &[
    "workerId",
    "workerDigits",
    "sequenceDigits",
    "utcOffsetMinutes",
    "last",
    "counter",
];

fn parse_serial_options(options: &JsValue) -> Result<SerialOptions, Error> {
    let mut o = SerialOptions::default();
    if options.is_undefined() || options.is_null() {
        return Ok(o);
    }
    if !options.is_object() || js_sys::Array::is_array(options) {
        return Err(Error::InvalidArgument {
            name: "options".into(),
            reason: format!(
                "got {}; expected an options object such as {{ sequenceDigits: 4 }}",
                describe(options)
            ),
        });
    }
    check_keys(options, "options", SERIAL_KEYS)?;
    if let Some(v) = field(options, "workerId")? {
        o.worker_id = int(&v, "workerId")?;
    }
    if let Some(v) = field(options, "workerDigits")? {
        o.worker_digits = to_u64(&v, "workerDigits", Accept::Integer, 255)? as u8;
    }
    if let Some(v) = field(options, "sequenceDigits")? {
        o.sequence_digits = to_u64(&v, "sequenceDigits", Accept::Integer, 255)? as u8;
    }
    if let Some(v) = field(options, "utcOffsetMinutes")? {
        o.utc_offset_minutes = match v.as_f64() {
            Some(n) if n.fract() == 0.0 && n.abs() <= 1080.0 => n as i32,
            _ => {
                return Err(Error::InvalidArgument {
                    name: "utcOffsetMinutes".into(),
                    reason: format!("got {}; allowed integers -1080..=1080", describe(&v)),
                })
            }
        };
    }
    if let Some(v) = field(options, "last")? {
        o.last = Some(to_u64(&v, "last", Accept::Id, u64::MAX)?);
    }
    if let Some(v) = field(options, "counter")? {
        if !v.is_function() {
            return Err(Error::InvalidArgument {
                name: "counter".into(),
                reason: format!(
                    "got {}; expected an async function (key, unixSeconds) => sequence",
                    describe(&v)
                ),
            });
        }
    }
    Ok(o)
}

/// Date-prefixed decimal serial numbers (used by `SerialGenerator`; not part of the
/// public API).
#[wasm_bindgen(js_name = "__SerialGenerator")]
pub struct JsSerialGenerator {
    inner: segflake::SerialGenerator<SerialClock>,
    manual: Option<Arc<ManualClock>>,
}

#[wasm_bindgen(js_class = "__SerialGenerator")]
impl JsSerialGenerator {
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsSerialGenerator, JsValue> {
        let o = parse_serial_options(&options).js()?;
        Ok(JsSerialGenerator {
            inner: segflake::SerialGenerator::with_clock(o, SerialClock::Js).js()?,
            manual: None,
        })
    }

    /// A generator on a manual clock set to `nowMs` (for the shared vectors).
    #[wasm_bindgen(js_name = "__withManualClock")]
    pub fn with_manual_clock(
        options: JsValue,
        now_ms: JsValue,
    ) -> Result<JsSerialGenerator, JsValue> {
        let o = parse_serial_options(&options).js()?;
        let t = int(&now_ms, "nowMs").js()?;
        let clock = Arc::new(ManualClock::new(t));
        Ok(JsSerialGenerator {
            inner: segflake::SerialGenerator::with_clock(o, SerialClock::Manual(clock.clone()))
                .js()?,
            manual: Some(clock),
        })
    }

    /// Sets the manual clock (generators made by `__withManualClock` only).
    #[wasm_bindgen(js_name = "__setClockMs")]
    pub fn set_clock_ms(&self, now_ms: JsValue) -> Result<(), JsValue> {
        let t = int(&now_ms, "nowMs").js()?;
        match &self.manual {
            Some(c) => {
                c.set_ms(t);
                Ok(())
            }
            None => Err(to_js(Error::InvalidArgument {
                name: "clock".into(),
                reason: "this generator reads Date.now()".into(),
            })),
        }
    }

    /// `counter_second` at an explicit time (Unix ms).
    #[wasm_bindgen(js_name = "__counterSecondAt")]
    pub fn counter_second_at(&self, now_ms: JsValue) -> Result<f64, JsValue> {
        let t = int(&now_ms, "nowMs").js()?;
        Ok(convert::num(self.inner.counter_second(t)))
    }

    /// The next serial from the local per-second counter.
    pub fn next(&self) -> Result<u64, JsValue> {
        self.inner.next().js()
    }

    /// The next serial as a decimal string.
    #[wasm_bindgen(js_name = nextString)]
    pub fn next_string(&self) -> Result<String, JsValue> {
        self.inner.next().map(|s| s.to_string()).js()
    }

    /// The last serial issued (or restored); `0n` if none.
    #[wasm_bindgen(getter)]
    pub fn last(&self) -> u64 {
        self.inner.last()
    }

    /// Splits a serial into `{ date, unixSeconds, workerId, sequence }`.
    pub fn decode(&self, serial: JsValue) -> Result<JsValue, JsValue> {
        let s = to_u64(&serial, "serial", Accept::Id, u64::MAX).js()?;
        let p = self.inner.decode(s).js()?;
        let o = js_sys::Object::new();
        put(&o, "date", convert::num(p.date).into());
        put(&o, "unixSeconds", convert::num(p.unix_seconds).into());
        put(&o, "workerId", convert::num(p.worker_id).into());
        put(&o, "sequence", convert::num(p.sequence).into());
        Ok(o.into())
    }

    /// The serial for `sequence` in the Unix second `unixSeconds` (pure).
    pub fn format(&self, unix_seconds: JsValue, sequence: JsValue) -> Result<u64, JsValue> {
        let second = int(&unix_seconds, "unixSeconds").js()?;
        let seq = int(&sequence, "sequence").js()?;
        self.inner.format(second, seq).js()
    }

    /// `yyMMddHHmmss` of a Unix second at this generator's offset, as a 12-digit string.
    #[wasm_bindgen(js_name = datePrefix)]
    pub fn date_prefix(&self, unix_seconds: JsValue) -> Result<String, JsValue> {
        let second = int(&unix_seconds, "unixSeconds").js()?;
        Ok(format!("{:012}", self.inner.date_prefix(second).js()?))
    }

    /// Which Unix second a shared counter should count in now.
    #[wasm_bindgen(js_name = "__counterSecond")]
    pub fn counter_second(&self) -> f64 {
        convert::num(self.inner.counter_second(self.inner.clock().now_ms()))
    }

    /// Takes a shared counter's `sequence` for `unixSeconds`: the serial, or `null` when it
    /// is not above the last one (ask the counter again).
    #[wasm_bindgen(js_name = "__accept")]
    pub fn accept(&self, unix_seconds: JsValue, sequence: JsValue) -> Result<Option<u64>, JsValue> {
        let second = int(&unix_seconds, "unixSeconds").js()?;
        let seq = int(&sequence, "the counter's result").map_err(|e| {
            to_js(Error::Store {
                message: format!("the counter resolved to an unusable value: {e}"),
            })
        })?;
        self.inner.accept(second, seq).js()
    }
}

/// How many times `nextFromCounter` asks the counter while its numbers are not above the
/// last serial.
#[wasm_bindgen(js_name = "__counterAttempts")]
pub fn counter_attempts() -> u32 {
    segflake::serial::COUNTER_ATTEMPTS
}
