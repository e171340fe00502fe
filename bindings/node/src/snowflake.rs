//! `Snowflake`: the time-ordered generator.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use segflake::{SequenceStart, SnowflakeOptions};

use crate::convert::{self, field, num};
use crate::errors::{Fail, IntoJs, R};
use crate::layout::{compose_with, spec_of, DecodedId, Layout};

const OPTION_KEYS: &[&str] = &[
    "workerId",
    "layout",
    "epochMs",
    "maxDriftMs",
    "sequenceStart",
    "notBeforeMs",
];

/// A snowflake generator: strictly increasing 63-bit IDs, `time | worker | sequence`.
///
/// ```js
/// const gen = new Snowflake({ workerId: 7 });          // twitter layout
/// gen.nextId();          // 1862551466113253376n
/// gen.nextIdString();    // "1862551466113253377"
/// gen.nextIds(1000);     // BigUint64Array(1000)
/// ```
///
/// One generator per worker ID: two generators (in any process or thread) sharing a
/// worker ID can issue the same IDs. Each `worker_threads` worker or `cluster` worker
/// creates its own generator with its own `workerId`.
#[napi]
pub struct Snowflake {
    pub(crate) inner: std::sync::Arc<segflake::Snowflake>,
    js_safe: bool,
}

fn build(env: &Env, options: &Unknown<'_>) -> R<Snowflake> {
    let obj = convert::object_of(
        options,
        "options",
        "an options object such as { workerId: 1 } (workerId is required)",
    )?;
    convert::check_keys(&obj, "options", OPTION_KEYS)?;
    let worker_id = match field(&obj, "workerId")? {
        Some(v) => convert::u64_of(&v, "workerId")?,
        None => {
            return Err(Fail::arg(
                "workerId",
                "it is missing; every generator needs an explicit workerId (0..=1023 for the twitter layout), \
                 unique among the generators that run at the same time",
            ))
        }
    };
    let layout_v = field(&obj, "layout")?;
    let epoch_v = field(&obj, "epochMs")?;
    let layout = spec_of(env, layout_v.as_ref(), epoch_v.as_ref())?.build()?;
    let mut opts = SnowflakeOptions::new(worker_id);
    if let Some(v) = field(&obj, "maxDriftMs")? {
        opts.max_drift_ms = convert::u64_of(&v, "maxDriftMs")?;
    }
    if let Some(v) = field(&obj, "sequenceStart")? {
        let s = convert::string_of(&v, "sequenceStart", "\"zero\" or \"random\"")?;
        opts.sequence_start = SequenceStart::from_name(&s)?;
    }
    if let Some(v) = field(&obj, "notBeforeMs")? {
        opts.not_before_ms = Some(convert::time_of(env, &v, "notBeforeMs")?);
    }
    let inner = std::sync::Arc::new(segflake::Snowflake::new(layout, opts)?);
    Ok(Snowflake {
        js_safe: layout.total_bits() <= 53,
        inner,
    })
}

#[napi]
impl Snowflake {
    /// Creates a generator. `workerId` is required (there is no random default); the
    /// layout defaults to `"twitter"`. Throws `WorkerIdOutOfRangeError` for a worker ID
    /// that does not fit the layout, `InvalidLayoutError`/`LayoutExhaustedError` for a bad
    /// layout, and `InvalidArgumentError` for malformed options.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "SnowflakeOptions")] options: Unknown<'_>,
    ) -> Result<Snowflake> {
        build(&env, &options).js(&env)
    }

    /// The next ID, strictly greater than every ID this generator issued before.
    /// Throws `ClockMovedBackwardsError` if the clock fell behind the last issued tick by
    /// more than `maxDriftMs`.
    #[napi(ts_return_type = "bigint")]
    pub fn next_id(&self, env: Env) -> Result<u64> {
        self.inner.next_id().js(&env)
    }

    /// The next ID as a decimal string (JSON-safe).
    #[napi]
    pub fn next_id_string(&self, env: Env) -> Result<String> {
        self.inner.next_id().map(|id| id.to_string()).js(&env)
    }

    /// The next ID as a JS number. Only for layouts of at most 53 bits (`"js-safe"`);
    /// other layouts throw `InvalidLayoutError`.
    #[napi]
    pub fn next_id_number(&self, env: Env) -> Result<f64> {
        if !self.js_safe {
            return Err(crate::errors::to_js(
                &env,
                Fail::layout(format!(
                    "nextIdNumber() needs a layout of at most 53 bits (such as \"js-safe\"); this layout has {} bits: \
                     use nextId() (bigint) or nextIdString()",
                    self.inner.layout().total_bits()
                )),
            ));
        }
        self.inner.next_id().map(num).js(&env)
    }

    /// `n` strictly increasing IDs (1..=16777216), reserved in runs of the sequence field.
    #[napi]
    pub fn next_ids(
        &self,
        env: Env,
        #[napi(ts_arg_type = "number")] n: Unknown<'_>,
    ) -> Result<BigUint64Array> {
        let run = || -> R<Vec<u64>> {
            let n = convert::u64_of(&n, "batch size")?;
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            Ok(self.inner.next_ids_vec(n)?)
        };
        run().map(BigUint64Array::new).js(&env)
    }

    /// Fills `target` (a `BigUint64Array` of 1..=16777216 elements) with strictly increasing
    /// IDs without allocating; returns `target`.
    #[napi(ts_return_type = "BigUint64Array")]
    pub fn fill_ids<'a>(
        &self,
        env: Env,
        #[napi(ts_arg_type = "BigUint64Array")] target: Unknown<'a>,
    ) -> Result<Unknown<'a>> {
        let run = || -> R<()> {
            let slice = convert::biguint64_slice(&env, &target, "target")?;
            segflake::check_batch_size(slice.len())?;
            Ok(self.inner.next_ids(slice)?)
        };
        run().js(&env)?;
        Ok(target)
    }

    /// Unix milliseconds of the highest tick issued so far. Persist it now and then and
    /// pass it as `notBeforeMs` after a restart.
    #[napi(getter)]
    pub fn high_water_mark(&self) -> f64 {
        num(self.inner.high_water_mark_ms())
    }

    /// How far the logical clock may run ahead of the wall clock, in milliseconds.
    #[napi(getter)]
    pub fn max_drift_ms(&self) -> f64 {
        num(self.inner.options().max_drift_ms)
    }

    /// Where each tick's sequence starts: `"zero"` or `"random"`.
    #[napi(getter, ts_return_type = "'zero' | 'random'")]
    pub fn sequence_start(&self) -> &'static str {
        self.inner.options().sequence_start.name()
    }

    /// This generator's worker ID.
    #[napi(getter)]
    pub fn worker_id(&self) -> u32 {
        self.inner.worker_id() as u32
    }

    /// The layout IDs are packed with.
    #[napi(getter)]
    pub fn layout(&self) -> Layout {
        Layout {
            inner: *self.inner.layout(),
        }
    }

    /// Splits an ID of this generator's layout into its fields.
    #[napi]
    pub fn decode(
        &self,
        env: Env,
        #[napi(ts_arg_type = "IdInput")] id: Unknown<'_>,
    ) -> Result<DecodedId> {
        let run = || -> R<DecodedId> { Ok(self.inner.decode(convert::id_of(&id, "id")?)?.into()) };
        run().js(&env)
    }

    /// Packs fields with this generator's layout; `workerId` defaults to this generator's.
    #[napi(ts_return_type = "bigint")]
    pub fn compose(
        &self,
        env: Env,
        #[napi(ts_arg_type = "ComposeFields")] fields: Unknown<'_>,
    ) -> Result<BigInt> {
        compose_with(
            &env,
            self.inner.layout(),
            &fields,
            Some(self.inner.worker_id()),
        )
        .map(BigInt::from)
        .js(&env)
    }
}
