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
use segflake::host::{self, Spelling, Value};
use segflake::segment::SegmentOptions;
use segflake::SerialOptions;

use crate::convert::{self, value_of};
use crate::errors::{run, Fail, IntoJs, R};

/// The clock of a serial generator: the system clock, or a manual one for the shared
/// vectors (through the internal `__withManualClock` factory).
pub struct SerialClock(Option<std::sync::Arc<segflake::ManualClock>>);

impl segflake::Clock for SerialClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        self.0
            .as_ref()
            .map_or_else(|| segflake::SystemClock.now_ms(), |c| c.now_ms())
    }
}

/// Monotonic milliseconds for the engine (it only compares them).
pub(crate) fn now_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
}

/// Validates the options of a segment generator; returns the accepted settings
/// (`waitTimeoutMs`, `storeTimeoutMs`, ...). Not part of the public API.
#[napi(js_name = "__segmentConfig", ts_return_type = "SegmentDriverConfig")]
pub fn segment_config(env: Env, options: Unknown<'_>) -> Result<convert::Js> {
    let o: SegmentOptions = convert::configure(&env, Some(&options), &["store"]).js(&env)?;
    Ok(convert::Js(Value::Map(host::spelled_settings(
        &o,
        Spelling::Camel,
    ))))
}

/// One tag's engine (used by `SegmentGenerator`; not part of the public API).
#[napi(js_name = "__SegmentEngine")]
pub struct SegmentEngine {
    pub(crate) inner: std::sync::Arc<segflake::SegmentEngine>,
}

impl SegmentEngine {
    /// Reads the store's answer (one value, or `maxId` and `step`) as the core does, and
    /// hands it to the engine: a usable range, or the refusal as a failed fetch.
    fn complete_with(
        &self,
        env: &Env,
        now: u64,
        answer: &Unknown<'_>,
        step: Option<&Unknown<'_>>,
    ) -> R<()> {
        let read = |v: &Unknown<'_>, name: &str| value_of(env, v, name);
        let answer = match step {
            None => read(answer, "answer"),
            Some(step) => read(answer, "maxId").and_then(|m| {
                Ok(Value::Map(vec![
                    ("maxId".into(), m),
                    ("step".into(), read(step, "step")?),
                ]))
            }),
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(unreadable) => {
                let _ = self
                    .inner
                    .complete_fetch(now, Err(unreadable.message.clone().into()));
                return Err(unreadable);
            }
        };
        Ok(self.inner.complete_answer(now, &answer, Spelling::Camel)?)
    }

    /// After a take: start the fetch the engine wants, by calling `on_fetch(step)`.
    #[inline]
    fn after_take(&self, on_fetch: &Function<'_, f64, ()>) -> Result<()> {
        if self.inner.wants_fetch() {
            if let Some(req) = self.inner.begin_fetch(now_ms()) {
                on_fetch.call(req.step as f64)?;
            }
        }
        Ok(())
    }
}

#[napi]
impl SegmentEngine {
    /// `stores`: how many stores the engine spans (a `MultiStore`'s length; default 1).
    #[napi(constructor)]
    pub fn new(
        env: Env,
        tag: Unknown<'_>,
        options: Unknown<'_>,
        stores: Option<u32>,
    ) -> Result<SegmentEngine> {
        run(&env, || {
            let tag = convert::string_of(&env, &tag, "tag")?;
            let o: SegmentOptions = convert::configure(&env, Some(&options), &["store"])?;
            let stores = stores.unwrap_or(1) as usize;
            Ok(SegmentEngine {
                inner: std::sync::Arc::new(segflake::SegmentEngine::with_stores(&tag, &o, stores)?),
            })
        })
    }

    /// The store the fetch in flight asks (an index into a `MultiStore`), or `null`.
    #[napi(getter)]
    pub fn fetch_store(&self) -> Option<u32> {
        self.inner.fetch_store().map(|s| s as u32)
    }

    /// Up to `n` IDs from ready segments (possibly none).
    #[napi]
    pub fn take_batch(
        &self,
        env: Env,
        n: Unknown<'_>,
        on_fetch: Function<'_, f64, ()>,
    ) -> Result<BigUint64Array> {
        let n = convert::batch_size(&env, &n).js(&env)?;
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

    /// Hands the engine the store's answer: `complete(answer)` with the value the store
    /// resolved to, or `complete(maxId, step)`. Throws `StoreContractViolationError` for
    /// an unusable answer or a refused range (none of its IDs is issued).
    #[napi(ts_args_type = "answer: unknown, step?: unknown")]
    pub fn complete(&self, env: Env, answer: Unknown<'_>, step: Option<Unknown<'_>>) -> Result<()> {
        run(&env, || {
            self.complete_with(&env, now_ms(), &answer, step.as_ref())
        })
    }

    /// Records a failed fetch; `message` is the text of what the store threw or rejected with.
    #[napi]
    pub fn fail(&self, message: String) {
        let _ = self.inner.fail_fetch(now_ms(), &message);
    }

    /// Fails the store call in flight as timed out (`storeTimeoutMs`), with the core's
    /// message; returns the failure text, or `null` when no call was in flight.
    #[napi(js_name = "timeOut")]
    pub fn time_out(&self) -> Option<String> {
        self.inner
            .time_out_fetch(now_ms(), segflake::Spelling::Camel, true)
            .then(|| self.inner.stats(now_ms()).last_error.unwrap_or_default())
    }

    /// One ID without starting a fetch (for the shared vectors).
    #[napi(js_name = "__takeRaw", ts_return_type = "bigint | null")]
    pub fn take_raw(&self) -> Option<u64> {
        self.inner.try_next()
    }

    /// `begin_fetch` at an explicit engine time: the step requested, or `null`.
    #[napi(js_name = "__beginFetchAt")]
    pub fn begin_fetch_at(&self, env: Env, now: Unknown<'_>) -> Result<Option<f64>> {
        let t = convert::u64_of(&env, &now, "nowMs").js(&env)?;
        Ok(self.inner.begin_fetch(t).map(|r| r.step as f64))
    }

    /// `complete` at an explicit engine time.
    #[napi(js_name = "__completeAt")]
    pub fn complete_at(
        &self,
        env: Env,
        now: Unknown<'_>,
        max_id: Unknown<'_>,
        step: Unknown<'_>,
    ) -> Result<()> {
        run(&env, || {
            self.complete_with(
                &env,
                convert::u64_of(&env, &now, "nowMs")?,
                &max_id,
                Some(&step),
            )
        })
    }

    #[napi(getter)]
    pub fn failure_count(&self) -> f64 {
        self.inner.failure_count() as f64
    }

    #[napi(getter)]
    pub fn completion_count(&self) -> f64 {
        self.inner.completion_count() as f64
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

    #[napi(ts_return_type = "SegmentStats")]
    pub fn stats<'a>(&self, env: Env) -> Result<Object<'a>> {
        convert::record(&env, &self.inner.stats(now_ms()))
    }

    #[napi]
    pub fn close(&self) {
        self.inner.close();
    }

    /// After `close()`: the IDs this engine fetched and did not issue, to hand back to the
    /// store (`store.giveBack(tag, expectedMaxId, maxId)`: the tag's `max_id` goes from
    /// `expectedMaxId` down to `maxId` if it is still `expectedMaxId`). Offered once;
    /// `null` while the engine is open, while a fetch is in flight, for a multi-store
    /// engine, with `giveBack: false`, when nothing is left, and on every later call.
    #[napi(ts_return_type = "{ expectedMaxId: bigint; maxId: bigint } | null")]
    pub fn take_give_back<'a>(&self, env: Env) -> Result<Option<Object<'a>>> {
        let Some(offer) = self.inner.take_give_back() else {
            return Ok(None);
        };
        let mut obj = Object::new(&env)?;
        obj.set("expectedMaxId", BigInt::from(offer.expected_max_id))?;
        obj.set("maxId", BigInt::from(offer.max_id))?;
        Ok(Some(obj))
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.inner.is_closed()
    }
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
}

#[napi]
impl SerialGenerator {
    /// Options: `workerId` (default 0) with `workerDigits` (0..=6, default 0),
    /// `sequenceDigits` (1..=7, default 4; worker + sequence digits at most 7),
    /// `utcOffsetMinutes` (print local time at a fixed offset, default 0 = UTC),
    /// `last` (a persisted last serial: nothing at or below it is issued),
    /// `counterMaxBehindMs`/`counterMaxAheadMs` (the Redis counter's window), and `counter`
    /// (an async shared counter for `nextFromCounter`).
    #[napi(constructor, ts_args_type = "options?: Record<string, unknown>")]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> Result<SerialGenerator> {
        build_serial(&env, options.as_ref(), None)
    }

    /// A generator on a manual clock set to `nowMs` (for the shared vectors).
    #[napi(factory, js_name = "__withManualClock")]
    pub fn with_manual_clock(
        env: Env,
        options: Option<Unknown<'_>>,
        now_ms: Unknown<'_>,
    ) -> Result<SerialGenerator> {
        let t = convert::u64_of(&env, &now_ms, "nowMs").js(&env)?;
        build_serial(
            &env,
            options.as_ref(),
            Some(std::sync::Arc::new(segflake::ManualClock::new(t))),
        )
    }

    /// Sets the manual clock (generators made by `__withManualClock` only).
    #[napi(js_name = "__setClockMs")]
    pub fn set_clock_ms(&self, env: Env, now_ms: Unknown<'_>) -> Result<()> {
        let t = convert::u64_of(&env, &now_ms, "nowMs").js(&env)?;
        let fail = || Fail::arg("clock", "this generator reads the system clock");
        self.inner
            .clock()
            .0
            .as_ref()
            .ok_or_else(fail)
            .js(&env)?
            .set_ms(t);
        Ok(())
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
    #[napi(
        ts_return_type = "SerialParts",
        ts_args_type = "serial: bigint | number | string"
    )]
    pub fn decode<'a>(&self, env: Env, serial: Unknown<'_>) -> Result<Object<'a>> {
        let parts = run(&env, || {
            Ok(self
                .inner
                .decode(convert::id_of(&env, &serial, "serial")?)?)
        })?;
        convert::record(&env, &parts)
    }

    /// The serial for `sequence` in the Unix second `unixSeconds` (pure: does not touch
    /// the last-issued state).
    #[napi(
        ts_return_type = "bigint",
        ts_args_type = "unixSeconds: number | bigint, sequence: number | bigint"
    )]
    pub fn format(
        &self,
        env: Env,
        unix_seconds: Unknown<'_>,
        sequence: Unknown<'_>,
    ) -> Result<u64> {
        run(&env, || {
            Ok(self.inner.format(
                convert::u64_of(&env, &unix_seconds, "unixSeconds")?,
                convert::u64_of(&env, &sequence, "sequence")?,
            )?)
        })
    }

    /// `yyMMddHHmmss` of a Unix second at this generator's offset, as a 12-digit string
    /// (name a shared counter's key after it).
    #[napi(ts_args_type = "unixSeconds: number | bigint")]
    pub fn date_prefix(&self, env: Env, unix_seconds: Unknown<'_>) -> Result<String> {
        run(&env, || {
            Ok(format!(
                "{:012}",
                self.inner
                    .date_prefix(convert::u64_of(&env, &unix_seconds, "unixSeconds")?)?
            ))
        })
    }

    /// Which Unix second a shared counter should count in now (or at `nowMs`, Unix ms).
    #[napi(js_name = "__counterSecond")]
    pub fn counter_second(&self, env: Env, now_ms: Option<Unknown<'_>>) -> Result<f64> {
        let now = segflake::Clock::now_ms(self.inner.clock());
        let t = now_ms
            .map_or(Ok(now), |t| convert::u64_of(&env, &t, "nowMs"))
            .js(&env)?;
        Ok(self.inner.counter_second(t) as f64)
    }

    /// How long one call of the shared counter may run (`counterTimeoutMs`).
    #[napi(getter, js_name = "__counterTimeoutMs")]
    pub fn counter_timeout_ms(&self) -> f64 {
        self.inner.options().counter_timeout_ms as f64
    }

    /// The `StoreError` for a counter whose numbers stayed at or below the last serial for
    /// `COUNTER_ATTEMPTS` calls in a row.
    #[napi(js_name = "__counterGaveUp")]
    pub fn counter_gave_up(&self, env: Env) -> Error {
        crate::errors::to_js(&env, self.inner.counter_gave_up().into())
    }

    /// The `StoreError` for a counter call on `key` that outlived `counterTimeoutMs`.
    #[napi(js_name = "__counterTimedOut")]
    pub fn counter_timed_out(&self, env: Env, key: String) -> Error {
        let ms = self.inner.options().counter_timeout_ms;
        let e = segflake::host::counter_timeout_error(&key, ms, segflake::Spelling::Camel);
        crate::errors::to_js(&env, e.into())
    }

    /// A script counter's key for `unixSeconds`, after its prefix and a colon:
    /// `serial:<yyMMddHHmmss><worker digits>`.
    #[napi(js_name = "__counterKey", ts_args_type = "unixSeconds: number")]
    pub fn counter_key(&self, env: Env, unix_seconds: Unknown<'_>) -> Result<String> {
        run(&env, || {
            let second = convert::u64_of(&env, &unix_seconds, "unixSeconds")?;
            Ok(self.inner.counter_key(second)?)
        })
    }

    /// The serial script's arguments for `unixSeconds`: the second,
    /// `counterMaxBehindMs`, `counterMaxAheadMs`, the expiry's grace.
    #[napi(js_name = "__counterArgs", ts_args_type = "unixSeconds: number")]
    pub fn counter_args(&self, env: Env, unix_seconds: Unknown<'_>) -> Result<Vec<f64>> {
        run(&env, || {
            let second = convert::u64_of(&env, &unix_seconds, "unixSeconds")?;
            Ok(self.inner.counter_args(second).map(|a| a as f64).to_vec())
        })
    }

    /// Takes a counter's `reply` for `unixSeconds` (a sequence number, or the serial
    /// script's reply): the serial, or `null` when it is not above the last one (ask again).
    /// Throws `ClockSkewError` when the script refused the second, `StoreError` for an
    /// unusable reply.
    #[napi(
        js_name = "__acceptReply",
        ts_args_type = "unixSeconds: number, reply: unknown",
        ts_return_type = "bigint | null"
    )]
    pub fn accept_reply(
        &self,
        env: Env,
        unix_seconds: Unknown<'_>,
        reply: Unknown<'_>,
    ) -> Result<Option<u64>> {
        run(&env, || {
            let second = convert::u64_of(&env, &unix_seconds, "unixSeconds")?;
            let reply = crate::lease::answer_of(&env, &reply)?;
            Ok(self.inner.accept_reply(second, &reply)?)
        })
    }
}

/// Serial options as the core checks them; `counter` (the driver's) must be a function,
/// and `last` may be a decimal string (serials above 2^53 travel as strings).
fn serial_options(env: &Env, options: Option<&Unknown<'_>>) -> R<SerialOptions> {
    let mut pairs = convert::pairs_of(env, options, &[])?;
    if let Some((_, got)) = pairs
        .iter()
        .find(|(k, v)| k == "counter" && *v != Value::Null)
    {
        let why = format!(
            "got {got}; expected an async function (key, unixSeconds) => sequence, or a \
             script counter (segflake/counters)"
        );
        return Err(Fail::arg("counter", why));
    }
    pairs.retain(|(k, _)| k != "counter");
    for (k, v) in pairs.iter_mut() {
        if let (true, Value::Str(s)) = (k == "last", &*v) {
            *v = Value::uint(segflake::codec::parse_decimal(s)?);
        }
    }
    Ok(host::configure(pairs, host::Dialect::JS)?)
}

fn build_serial(
    env: &Env,
    options: Option<&Unknown<'_>>,
    manual: Option<std::sync::Arc<segflake::ManualClock>>,
) -> Result<SerialGenerator> {
    run(env, || {
        let o = serial_options(env, options)?;
        Ok(SerialGenerator {
            inner: segflake::SerialGenerator::with_clock(o, SerialClock(manual))?,
        })
    })
}

/// How many times `nextFromCounter` asks the counter while its numbers are not above the
/// last serial.
#[napi]
pub const COUNTER_ATTEMPTS: u32 = segflake::serial::COUNTER_ATTEMPTS;
