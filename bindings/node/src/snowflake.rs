//! `Snowflake`: the time-ordered generator.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use segflake::host::{SnowflakeConfig, Spelling};

use crate::convert;
use crate::errors::{run, IntoJs, R};
use crate::layout::{compose_with, Layout};

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
}

fn build(env: &Env, options: &Unknown<'_>) -> R<Snowflake> {
    let config: SnowflakeConfig = convert::configure(env, Some(options), &[])?;
    let layout = config.build_at(
        segflake::Clock::now_ms(&segflake::SystemClock),
        Spelling::Camel,
    )?;
    let inner = std::sync::Arc::new(segflake::Snowflake::new(layout, config.options)?);
    Ok(Snowflake { inner })
}

#[napi]
impl Snowflake {
    /// Creates a generator. `workerId` is required (there is no random default); the
    /// layout defaults to `"twitter"`. Throws `WorkerIdOutOfRangeError` for a worker ID
    /// that does not fit the layout, `InvalidLayoutError`/`LayoutExhaustedError` for a bad
    /// layout, and `InvalidArgumentError` for malformed options.
    #[napi(constructor, ts_args_type = "options: SnowflakeOptions")]
    pub fn new(env: Env, options: Unknown<'_>) -> Result<Snowflake> {
        build(&env, &options).js(&env)
    }

    /// `n` strictly increasing IDs (1..=16777216), reserved in runs of the sequence field.
    #[napi(ts_args_type = "n: number")]
    pub fn next_ids(&self, env: Env, n: Unknown<'_>) -> Result<BigUint64Array> {
        run(&env, || {
            let n = convert::batch_size(&env, &n)?;
            Ok(BigUint64Array::new(self.inner.next_ids_vec(n)?))
        })
    }

    /// Fills `target` (a `BigUint64Array` of 1..=16777216 elements) with strictly increasing
    /// IDs without allocating; returns `target`.
    #[napi(
        ts_return_type = "BigUint64Array",
        ts_args_type = "target: BigUint64Array"
    )]
    pub fn fill_ids<'a>(&self, env: Env, target: Unknown<'a>) -> Result<Unknown<'a>> {
        run(&env, || {
            let slice = convert::biguint64_slice(&env, &target, "target")?;
            segflake::check_batch_size(slice.len())?;
            Ok(self.inner.next_ids(slice)?)
        })?;
        Ok(target)
    }

    /// Unix milliseconds of the highest tick issued so far. Persist it now and then and
    /// pass it as `notBeforeMs` after a restart.
    #[napi(getter)]
    pub fn high_water_mark(&self) -> f64 {
        self.inner.high_water_mark_ms() as f64
    }

    /// How far the logical clock may run ahead of the wall clock, in milliseconds.
    #[napi(getter)]
    pub fn max_drift_ms(&self) -> f64 {
        self.inner.options().max_drift_ms as f64
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
    #[napi(ts_return_type = "DecodedId", ts_args_type = "id: IdInput")]
    pub fn decode<'a>(&self, env: Env, id: Unknown<'_>) -> Result<Object<'a>> {
        let d = convert::id_of(&env, &id, "id")
            .and_then(|id| Ok(self.inner.decode(id)?))
            .js(&env)?;
        convert::record(&env, &d)
    }

    /// Packs fields with this generator's layout; `workerId` defaults to this generator's.
    #[napi(ts_return_type = "bigint", ts_args_type = "fields: ComposeFields")]
    pub fn compose(&self, env: Env, fields: Unknown<'_>) -> Result<BigInt> {
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
