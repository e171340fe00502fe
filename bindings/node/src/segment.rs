//! The segment engine and date serials, for the JS drivers in the package's `index.js`.
//!
//! Node drives the core's sans-I/O [`segflake::SegmentEngine`] from the event loop: the
//! store is a user-supplied async function, so the store call, the bounded wait and the
//! timeouts are Promises and timers in JS. This module exposes the engine's steps as one
//! native call each. A take also starts the fetch the engine asks for: it calls the
//! driver's `onFetch(step)` synchronously (once per segment), so the fast path stays one
//! native call returning a bigint.

use std::sync::OnceLock;
use std::time::Instant;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use segflake::segment::{Allocation, SegmentOptions};
use segflake::SerialOptions;

use crate::convert::{self, field, num};
use crate::errors::{Fail, IntoJs, R};

/// The clock of a serial generator: the system clock, or a manual one for the shared
/// vectors (through the internal `__withManualClock` factory).
pub enum SerialClock {
    System,
    Manual(std::sync::Arc<segflake::ManualClock>),
}

impl segflake::Clock for SerialClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        match self {
            SerialClock::System => segflake::SystemClock.now_ms(),
            SerialClock::Manual(c) => c.now_ms(),
        }
    }
}

/// Monotonic milliseconds for the engine (it only compares them).
pub(crate) fn now_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
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

/// Reads and validates the engine options of `new SegmentGenerator(options)`.
fn segment_options(options: &Unknown<'_>) -> R<(SegmentOptions, u64)> {
    let obj = convert::object_of(
        options,
        "options",
        "an options object such as { store: { allocate: async (tag, step) => ({ maxId, step }) } }",
    )?;
    convert::check_keys(&obj, "options", SEGMENT_KEYS)?;
    let mut o = SegmentOptions::default();
    if let Some(v) = field(&obj, "step")? {
        o.step = convert::u64_of(&v, "step")?;
        if field(&obj, "maxStep")?.is_none() {
            o.max_step = o.max_step.max(o.step);
        }
    }
    if let Some(v) = field(&obj, "maxStep")? {
        o.max_step = convert::u64_of(&v, "maxStep")?;
    }
    if let Some(v) = field(&obj, "dynamicStep")? {
        o.dynamic_step = match v.get_type() {
            Ok(napi::ValueType::Boolean) => unsafe { v.cast::<bool>() }.map_err(Fail::from)?,
            _ => {
                return Err(Fail::arg(
                    "dynamicStep",
                    format!("got {}; expected true or false", convert::describe(&v)),
                ))
            }
        };
    }
    if let Some(v) = field(&obj, "prefetchPercent")? {
        o.prefetch_percent = convert::small_of(&v, "prefetchPercent", 100)? as u8;
    }
    if let Some(v) = field(&obj, "retryBackoffMs")? {
        o.retry_backoff_ms = convert::u64_of(&v, "retryBackoffMs")?;
    }
    if let Some(v) = field(&obj, "waitTimeoutMs")? {
        o.wait_timeout_ms = convert::u64_of(&v, "waitTimeoutMs")?;
    }
    let store_timeout = match field(&obj, "storeTimeoutMs")? {
        Some(v) => convert::u64_of(&v, "storeTimeoutMs")?,
        None => DEFAULT_STORE_TIMEOUT_MS,
    };
    if store_timeout == 0 || store_timeout > 3_600_000 {
        return Err(Fail::arg(
            "storeTimeoutMs",
            format!("{store_timeout} is out of range; allowed 1..=3600000"),
        ));
    }
    o.validate()?;
    Ok((o, store_timeout))
}

/// How long the driver lets one store call run before counting it as failed.
const DEFAULT_STORE_TIMEOUT_MS: u64 = 10_000;

/// Validated driver settings.
#[napi(object)]
pub struct SegmentDriverConfig {
    pub wait_timeout_ms: f64,
    pub store_timeout_ms: f64,
}

/// Validates the options of a segment generator (not part of the public API).
#[napi(js_name = "__segmentConfig")]
pub fn segment_config(env: Env, options: Unknown<'_>) -> Result<SegmentDriverConfig> {
    let (o, store_timeout) = segment_options(&options).js(&env)?;
    Ok(SegmentDriverConfig {
        wait_timeout_ms: num(o.wait_timeout_ms),
        store_timeout_ms: num(store_timeout),
    })
}

/// A snapshot of one tag's segments. Ranges are half-open `[start, end)`.
#[napi(object)]
pub struct SegmentStats {
    pub tag: String,
    /// The current segment (`currentStart === currentEnd` when there is none yet).
    pub current_start: BigInt,
    pub current_end: BigInt,
    /// The next ID the current segment would issue.
    pub position: BigInt,
    /// IDs left in the current segment.
    pub remaining: f64,
    /// Whether the next segment is ready, and its range (0n, 0n when not).
    pub next_ready: bool,
    pub next_start: BigInt,
    pub next_end: BigInt,
    /// The step of the fetch in flight, or of the last request.
    pub step: f64,
    pub fetch_in_flight: bool,
    /// Completed fetches (successful or not), failures among them, failures in a row.
    pub fetches: f64,
    pub failures: f64,
    pub consecutive_failures: f64,
    /// The last failure (store error or refused range), if any.
    pub last_error: Option<String>,
    /// How long the last completed fetch took, in milliseconds.
    pub last_fetch_latency_ms: Option<f64>,
    /// IDs taken from this tag's segments so far.
    pub issued: f64,
    /// Recent consumption rate.
    pub ids_per_second: f64,
    /// Seconds the buffered IDs would last at `idsPerSecond` if the store went down now;
    /// `null` when nothing is being consumed.
    pub runway_seconds: Option<f64>,
}

/// One tag's engine (used by `SegmentGenerator`; not part of the public API).
#[napi(js_name = "__SegmentEngine")]
pub struct SegmentEngine {
    pub(crate) inner: std::sync::Arc<segflake::SegmentEngine>,
}

impl SegmentEngine {
    /// After a take: start the fetch the engine wants, by calling `on_fetch(step)`.
    #[inline]
    fn after_take(&self, on_fetch: &Function<'_, f64, ()>) -> Result<()> {
        if self.inner.wants_fetch() {
            if let Some(req) = self.inner.begin_fetch(now_ms()) {
                on_fetch.call(num(req.step))?;
            }
        }
        Ok(())
    }
}

#[napi]
impl SegmentEngine {
    #[napi(constructor)]
    pub fn new(env: Env, tag: Unknown<'_>, options: Unknown<'_>) -> Result<SegmentEngine> {
        let run = || -> R<SegmentEngine> {
            let tag =
                convert::string_of(&tag, "tag", "a string of 1 to 128 bytes such as \"order\"")?;
            let (o, _) = segment_options(&options)?;
            Ok(SegmentEngine {
                inner: std::sync::Arc::new(segflake::SegmentEngine::new(&tag, &o)?),
            })
        };
        run().js(&env)
    }

    /// One ID from a ready segment, or `null`.
    #[napi(ts_return_type = "bigint | null")]
    pub fn take(&self, on_fetch: Function<'_, f64, ()>) -> Result<Option<u64>> {
        let id = self.inner.try_next();
        self.after_take(&on_fetch)?;
        Ok(id)
    }

    /// Up to `n` IDs from ready segments (possibly none).
    #[napi]
    pub fn take_batch(
        &self,
        env: Env,
        n: Unknown<'_>,
        on_fetch: Function<'_, f64, ()>,
    ) -> Result<BigUint64Array> {
        let n = convert::u64_of(&n, "batch size")
            .and_then(|n| {
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                segflake::check_batch_size(n)?;
                Ok(n)
            })
            .js(&env)?;
        let mut out = vec![0u64; n];
        let got = self.inner.try_next_batch(&mut out);
        out.truncate(got);
        self.after_take(&on_fetch)?;
        Ok(BigUint64Array::new(out))
    }

    /// Starts the fetch the engine wants, if any (`onFetch(step)`); call after creating it.
    #[napi]
    pub fn poke(&self, on_fetch: Function<'_, f64, ()>) -> Result<()> {
        self.after_take(&on_fetch)
    }

    /// Hands the engine the store's answer. Throws `StoreContractViolationError` for a
    /// refused range (none of its IDs is issued).
    #[napi]
    pub fn complete(&self, env: Env, max_id: Unknown<'_>, step: Unknown<'_>) -> Result<()> {
        let run = || -> R<()> {
            let max_id = convert::u64_of(&max_id, "maxId");
            let step = convert::u64_of(&step, "step");
            match (max_id, step) {
                (Ok(m), Ok(s)) => Ok(self
                    .inner
                    .complete_fetch(now_ms(), Ok(Allocation::new(m, s)))?),
                (Err(e), _) | (_, Err(e)) => {
                    let message = format!(
                        "store contract violation for tag {:?}: the store resolved to an unusable \
                         {}; expected {{ maxId, step }} with non-negative integers (number or bigint)",
                        self.inner.tag(),
                        e.message
                    );
                    let _ = self.inner.complete_fetch(now_ms(), Err(message.clone()));
                    Err(Fail::new(
                        segflake::ErrorKind::StoreContractViolation,
                        message,
                    ))
                }
            }
        };
        run().js(&env)
    }

    /// Records a failed fetch (the store threw, rejected, timed out or resolved to garbage).
    #[napi]
    pub fn fail(&self, message: String) {
        let _ = self.inner.complete_fetch(now_ms(), Err(message));
    }

    /// One ID without starting a fetch (for the shared vectors).
    #[napi(js_name = "__takeRaw", ts_return_type = "bigint | null")]
    pub fn take_raw(&self) -> Option<u64> {
        self.inner.try_next()
    }

    /// `begin_fetch` at an explicit engine time: the step requested, or `null`.
    #[napi(js_name = "__beginFetchAt")]
    pub fn begin_fetch_at(&self, env: Env, now: Unknown<'_>) -> Result<Option<f64>> {
        let t = convert::u64_of(&now, "nowMs").js(&env)?;
        Ok(self.inner.begin_fetch(t).map(|r| num(r.step)))
    }

    /// `complete_fetch` at an explicit engine time.
    #[napi(js_name = "__completeAt")]
    pub fn complete_at(
        &self,
        env: Env,
        now: Unknown<'_>,
        max_id: Unknown<'_>,
        step: Unknown<'_>,
    ) -> Result<()> {
        let run = || -> R<()> {
            let t = convert::u64_of(&now, "nowMs")?;
            let a = Allocation::new(
                convert::u64_of(&max_id, "maxId")?,
                convert::u64_of(&step, "step")?,
            );
            Ok(self.inner.complete_fetch(t, Ok(a))?)
        };
        run().js(&env)
    }

    #[napi(getter)]
    pub fn failure_count(&self) -> f64 {
        num(self.inner.failure_count())
    }

    #[napi(getter)]
    pub fn completion_count(&self) -> f64 {
        num(self.inner.completion_count())
    }

    #[napi(getter)]
    pub fn fetch_in_flight(&self) -> bool {
        self.inner.fetch_in_flight()
    }

    #[napi(getter)]
    pub fn tag(&self) -> String {
        self.inner.tag().to_string()
    }

    /// The error for a caller that found no ID: `ClosedError` or `SegmentsExhaustedError`.
    #[napi]
    pub fn exhausted_error(&self, env: Env) -> Error {
        crate::errors::to_js(&env, self.inner.exhausted_error(now_ms()).into())
    }

    #[napi]
    pub fn stats(&self) -> SegmentStats {
        let s = self.inner.stats(now_ms());
        SegmentStats {
            tag: s.tag,
            current_start: BigInt::from(s.current_start),
            current_end: BigInt::from(s.current_end),
            position: BigInt::from(s.position),
            remaining: num(s.remaining),
            next_ready: s.next_ready,
            next_start: BigInt::from(s.next_start),
            next_end: BigInt::from(s.next_end),
            step: num(s.step),
            fetch_in_flight: s.fetch_in_flight,
            fetches: num(s.fetches),
            failures: num(s.failures),
            consecutive_failures: num(s.consecutive_failures),
            last_error: s.last_error,
            last_fetch_latency_ms: s.last_fetch_latency_ms.map(num),
            issued: num(s.issued),
            ids_per_second: s.ids_per_second,
            runway_seconds: s.runway_seconds,
        }
    }

    #[napi]
    pub fn close(&self) {
        self.inner.close();
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.inner.is_closed()
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

/// The fields of a serial.
#[napi(object)]
pub struct SerialParts {
    /// `yyMMddHHmmss` as a number (e.g. `250413120000`).
    pub date: f64,
    /// The Unix second of `date`.
    pub unix_seconds: f64,
    pub worker_id: f64,
    pub sequence: f64,
}

/// Date-prefixed decimal serial numbers (order numbers): `yyMMddHHmmss`, optional worker
/// digits, then a fixed number of sequence digits. Never smaller than the last one issued,
/// even when the clock steps back.
///
/// ```js
/// const serials = new SerialGenerator({ sequenceDigits: 4 })
/// serials.next()        // 2611220245170001n
/// serials.nextString()  // "2611220245170002"
/// ```
#[napi(js_name = "__SerialGenerator")]
pub struct SerialGenerator {
    inner: segflake::SerialGenerator<SerialClock>,
    manual: Option<std::sync::Arc<segflake::ManualClock>>,
}

#[napi]
impl SerialGenerator {
    /// Options: `workerId` (default 0) with `workerDigits` (0..=6, default 0),
    /// `sequenceDigits` (1..=7, default 4; worker + sequence digits at most 7),
    /// `utcOffsetMinutes` (print local time at a fixed offset, default 0 = UTC),
    /// `last` (a persisted last serial: nothing at or below it is issued), and `counter`
    /// (an async shared counter for `nextFromCounter`).
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "Record<string, unknown>")] options: Option<Unknown<'_>>,
    ) -> Result<SerialGenerator> {
        let o = parse_serial_options(options.as_ref()).js(&env)?;
        build_serial(&env, o, SerialClock::System, None)
    }

    /// A generator on a manual clock set to `nowMs` (for the shared vectors).
    #[napi(factory, js_name = "__withManualClock")]
    pub fn with_manual_clock(
        env: Env,
        options: Option<Unknown<'_>>,
        now_ms: Unknown<'_>,
    ) -> Result<SerialGenerator> {
        let o = parse_serial_options(options.as_ref()).js(&env)?;
        let t = convert::u64_of(&now_ms, "nowMs").js(&env)?;
        let clock = std::sync::Arc::new(segflake::ManualClock::new(t));
        build_serial(&env, o, SerialClock::Manual(clock.clone()), Some(clock))
    }

    /// Sets the manual clock (generators made by `__withManualClock` only).
    #[napi(js_name = "__setClockMs")]
    pub fn set_clock_ms(&self, env: Env, now_ms: Unknown<'_>) -> Result<()> {
        let t = convert::u64_of(&now_ms, "nowMs").js(&env)?;
        match &self.manual {
            Some(c) => {
                c.set_ms(t);
                Ok(())
            }
            None => Err(crate::errors::to_js(
                &env,
                Fail::arg("clock", "this generator reads the system clock"),
            )),
        }
    }

    /// `counter_second` at an explicit time (Unix ms).
    #[napi(js_name = "__counterSecondAt")]
    pub fn counter_second_at(&self, env: Env, now_ms: Unknown<'_>) -> Result<f64> {
        let t = convert::u64_of(&now_ms, "nowMs").js(&env)?;
        Ok(num(self.inner.counter_second(t)))
    }

    /// The next serial from the local per-second counter. Throws `SerialExhaustedError`
    /// when this second's sequence numbers are used up (the next second has new ones).
    #[napi(ts_return_type = "bigint")]
    pub fn next(&self, env: Env) -> Result<u64> {
        self.inner.next().js(&env)
    }

    /// The next serial as a decimal string.
    #[napi]
    pub fn next_string(&self, env: Env) -> Result<String> {
        self.inner.next().map(|s| s.to_string()).js(&env)
    }

    /// The last serial issued (or restored); `0n` if none. Persist it for restarts.
    #[napi(getter, ts_return_type = "bigint")]
    pub fn last(&self) -> u64 {
        self.inner.last()
    }

    /// Splits a serial of this generator's shape into its fields.
    #[napi]
    pub fn decode(
        &self,
        env: Env,
        #[napi(ts_arg_type = "bigint | number | string")] serial: Unknown<'_>,
    ) -> Result<SerialParts> {
        let run = || -> R<SerialParts> {
            let s = match serial.get_type() {
                Ok(napi::ValueType::String) => segflake::codec::parse_decimal(
                    &unsafe { serial.cast::<String>() }.map_err(Fail::from)?,
                )?,
                _ => convert::u64_of(&serial, "serial")?,
            };
            let p = self.inner.decode(s)?;
            Ok(SerialParts {
                date: num(p.date),
                unix_seconds: num(p.unix_seconds),
                worker_id: num(p.worker_id),
                sequence: num(p.sequence),
            })
        };
        run().js(&env)
    }

    /// The serial for `sequence` in the Unix second `unixSeconds` (pure: does not touch
    /// the last-issued state).
    #[napi(ts_return_type = "bigint")]
    pub fn format(
        &self,
        env: Env,
        #[napi(ts_arg_type = "number | bigint")] unix_seconds: Unknown<'_>,
        #[napi(ts_arg_type = "number | bigint")] sequence: Unknown<'_>,
    ) -> Result<u64> {
        let run = || -> R<u64> {
            Ok(self.inner.format(
                convert::u64_of(&unix_seconds, "unixSeconds")?,
                convert::u64_of(&sequence, "sequence")?,
            )?)
        };
        run().js(&env)
    }

    /// `yyMMddHHmmss` of a Unix second at this generator's offset, as a 12-digit string
    /// (name a shared counter's key after it).
    #[napi]
    pub fn date_prefix(
        &self,
        env: Env,
        #[napi(ts_arg_type = "number | bigint")] unix_seconds: Unknown<'_>,
    ) -> Result<String> {
        let run = || -> R<String> {
            Ok(format!(
                "{:012}",
                self.inner
                    .date_prefix(convert::u64_of(&unix_seconds, "unixSeconds")?)?
            ))
        };
        run().js(&env)
    }

    /// Which Unix second a shared counter should count in now.
    #[napi(js_name = "__counterSecond")]
    pub fn counter_second(&self) -> f64 {
        num(self
            .inner
            .counter_second(segflake::Clock::now_ms(self.inner.clock())))
    }

    /// Takes a shared counter's `sequence` for `unixSeconds`: the serial, or `null` when it
    /// is not above the last one (ask the counter again).
    #[napi(js_name = "__accept", ts_return_type = "bigint | null")]
    pub fn accept(
        &self,
        env: Env,
        unix_seconds: Unknown<'_>,
        sequence: Unknown<'_>,
    ) -> Result<Option<u64>> {
        let run = || -> R<Option<u64>> {
            let second = convert::u64_of(&unix_seconds, "unixSeconds")?;
            let seq = convert::u64_of(&sequence, "the counter's result").map_err(|e| {
                Fail::new(
                    segflake::ErrorKind::Store,
                    format!(
                        "store error: the counter resolved to an unusable value: {}",
                        e.message
                    ),
                )
            })?;
            Ok(self.inner.accept(second, seq)?)
        };
        run().js(&env)
    }
}

fn parse_serial_options(options: Option<&Unknown<'_>>) -> R<SerialOptions> {
    let mut o = SerialOptions::default();
    if let Some(v) = options.as_ref().filter(|v| !convert::is_absent(v)) {
        let obj = convert::object_of(
            v,
            "options",
            "an options object such as { sequenceDigits: 4 }",
        )?;
        convert::check_keys(&obj, "options", SERIAL_KEYS)?;
        if let Some(v) = field(&obj, "workerId")? {
            o.worker_id = convert::u64_of(&v, "workerId")?;
        }
        if let Some(v) = field(&obj, "workerDigits")? {
            o.worker_digits = convert::small_of(&v, "workerDigits", 255)? as u8;
        }
        if let Some(v) = field(&obj, "sequenceDigits")? {
            o.sequence_digits = convert::small_of(&v, "sequenceDigits", 255)? as u8;
        }
        if let Some(v) = field(&obj, "utcOffsetMinutes")? {
            o.utc_offset_minutes = match v.get_type() {
                Ok(napi::ValueType::Number) => {
                    let n: f64 = unsafe { v.cast::<f64>() }.map_err(Fail::from)?;
                    if n.fract() != 0.0 || n.abs() > 1080.0 {
                        return Err(Fail::arg(
                            "utcOffsetMinutes",
                            format!("got {n}; allowed integers -1080..=1080"),
                        ));
                    }
                    n as i32
                }
                _ => {
                    return Err(Fail::arg(
                        "utcOffsetMinutes",
                        format!(
                            "got {}; expected an integer -1080..=1080",
                            convert::describe(&v)
                        ),
                    ))
                }
            };
        }
        if let Some(v) = field(&obj, "last")? {
            o.last = Some(match v.get_type() {
                Ok(napi::ValueType::String) => segflake::codec::parse_decimal(
                    &unsafe { v.cast::<String>() }.map_err(Fail::from)?,
                )?,
                _ => convert::u64_of(&v, "last")?,
            });
        }
        if let Some(v) = field(&obj, "counter")? {
            if !matches!(v.get_type(), Ok(napi::ValueType::Function)) {
                return Err(Fail::arg(
                    "counter",
                    format!(
                        "got {}; expected an async function (key, unixSeconds) => sequence",
                        convert::describe(&v)
                    ),
                ));
            }
        }
    }
    Ok(o)
}

fn build_serial(
    env: &Env,
    o: SerialOptions,
    clock: SerialClock,
    manual: Option<std::sync::Arc<segflake::ManualClock>>,
) -> Result<SerialGenerator> {
    Ok(SerialGenerator {
        inner: segflake::SerialGenerator::with_clock(o, clock).js(env)?,
        manual,
    })
}

/// How many times `nextFromCounter` asks the counter while its numbers are not above the
/// last serial.
#[napi]
pub const COUNTER_ATTEMPTS: u32 = segflake::serial::COUNTER_ATTEMPTS;
