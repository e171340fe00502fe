//! `Layout`: a validated snowflake layout and its queries.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use segflake::{FieldOrder, LayoutSpec, Preset};

use crate::convert::{self, field, num};
use crate::errors::{Fail, IntoJs, R};

/// Option names of a custom layout object.
pub const LAYOUT_KEYS: &[&str] = &[
    "preset",
    "timeBits",
    "workerBits",
    "sequenceBits",
    "tickMs",
    "epochMs",
    "order",
    "minLifetimeYears",
];

/// Reads a layout option: `undefined` (twitter), a preset name, or a custom layout object
/// (missing fields default to the twitter preset's). `epoch` overrides the epoch.
pub fn spec_of(
    env: &Env,
    input: Option<&Unknown<'_>>,
    epoch: Option<&Unknown<'_>>,
) -> R<LayoutSpec> {
    let mut spec = match input.filter(|v| !convert::is_absent(v)) {
        None => Preset::Twitter.spec(),
        Some(v) => match v.get_type() {
            Ok(napi::ValueType::String) => {
                let name: String = unsafe { v.cast::<String>() }.map_err(Fail::from)?;
                Preset::from_name(&name)?.spec()
            }
            Ok(napi::ValueType::Object) => match layout_instance(env, v) {
                Some(spec) => spec,
                None => custom_spec(env, &unsafe { v.cast::<Object<'_>>() }.map_err(Fail::from)?)?,
            },
            _ => {
                return Err(Fail::arg(
                    "layout",
                    format!(
                        "got {}; expected a preset name (twitter, sonyflake, uid-generator, js-safe) or a layout object",
                        convert::describe(v)
                    ),
                ))
            }
        },
    };
    if let Some(e) = epoch.filter(|v| !convert::is_absent(v)) {
        spec.epoch_ms = convert::time_of(env, e, "epochMs")?;
    }
    Ok(spec)
}

/// The parameters of a `Layout` instance (re-validated by the caller).
fn layout_instance(env: &Env, v: &Unknown<'_>) -> Option<LayoutSpec> {
    let layout = unsafe { ClassInstance::<Layout>::from_napi_value(env.raw(), v.raw()) }.ok()?;
    Some(layout.inner.spec())
}

fn custom_spec(env: &Env, obj: &Object<'_>) -> R<LayoutSpec> {
    convert::check_keys(obj, "layout", LAYOUT_KEYS)?;
    let mut spec = match field(obj, "preset")? {
        None => Preset::Twitter.spec(),
        Some(v) => {
            let name = convert::string_of(
                &v,
                "preset",
                "one of twitter, sonyflake, uid-generator, js-safe",
            )?;
            Preset::from_name(&name)?.spec()
        }
    };
    let bits = |name: &str, max: u64| -> R<Option<u8>> {
        match field(obj, name)? {
            None => Ok(None),
            Some(v) => {
                let n = convert::u64_of(&v, name)?;
                if n > max {
                    return Err(Fail::layout(format!(
                        "{name} is {n}; allowed at most {max}"
                    )));
                }
                Ok(Some(n as u8))
            }
        }
    };
    if let Some(b) = bits("timeBits", 63)? {
        spec.time_bits = b;
    }
    if let Some(b) = bits("workerBits", 31)? {
        spec.worker_bits = b;
    }
    if let Some(b) = bits("sequenceBits", 31)? {
        spec.sequence_bits = b;
    }
    if let Some(v) = field(obj, "tickMs")? {
        spec.tick_ms = convert::u64_of(&v, "tickMs")?;
    }
    if let Some(v) = field(obj, "epochMs")? {
        spec.epoch_ms = convert::time_of(env, &v, "epochMs")?;
    }
    if let Some(v) = field(obj, "order")? {
        let s = convert::string_of(
            &v,
            "order",
            "\"time-worker-sequence\" or \"time-sequence-worker\"",
        )?;
        spec.order = FieldOrder::from_name(&s)?;
    }
    if let Some(v) = field(obj, "minLifetimeYears")? {
        spec.min_lifetime_years =
            convert::small_of(&v, "minLifetimeYears", u64::from(u32::MAX))? as u32;
    }
    Ok(spec)
}

/// The parameters of a layout, as accepted by `new Layout(...)`: a `preset` (default
/// `"twitter"`) whose fields the others override.
#[napi(object)]
pub struct LayoutOptions {
    /// The preset the other fields override (default `"twitter"`).
    #[napi(ts_type = "PresetName")]
    pub preset: Option<String>,
    /// Width of the time field, 8..=63.
    pub time_bits: Option<u32>,
    /// Width of the worker field, 0..=31.
    pub worker_bits: Option<u32>,
    /// Width of the sequence field, 0..=31.
    pub sequence_bits: Option<u32>,
    /// Length of one time unit in milliseconds, 1..=86400000.
    pub tick_ms: Option<f64>,
    /// Unix milliseconds of tick 0 (or a `Date`, or an ISO-8601 UTC string); not in the future.
    #[napi(ts_type = "number | bigint | string | Date")]
    pub epoch_ms: Option<f64>,
    /// `"time-worker-sequence"` (default) or `"time-sequence-worker"` (Sonyflake).
    #[napi(ts_type = "'time-worker-sequence' | 'time-sequence-worker'")]
    pub order: Option<String>,
    /// Refuse the layout if it runs out of time within this many years (default 10; 0 = off).
    pub min_lifetime_years: Option<u32>,
}

/// The fields of an ID.
#[napi(object)]
pub struct DecodedId {
    /// Unix milliseconds of the start of the ID's tick.
    pub timestamp_ms: f64,
    /// Ticks since the layout's epoch.
    pub tick: f64,
    pub worker_id: u32,
    pub sequence: u32,
}

impl From<segflake::DecodedId> for DecodedId {
    fn from(d: segflake::DecodedId) -> DecodedId {
        DecodedId {
            timestamp_ms: num(d.timestamp_ms),
            tick: num(d.tick),
            worker_id: d.worker_id as u32,
            sequence: d.sequence as u32,
        }
    }
}

/// Reads `{ tick | timestampMs, workerId, sequence }` and packs it with `layout`.
pub fn compose_with(
    env: &Env,
    layout: &segflake::Layout,
    fields: &Unknown<'_>,
    default_worker: Option<u64>,
) -> R<u64> {
    let obj = convert::object_of(
        fields,
        "fields",
        "an object { timestampMs | tick, workerId, sequence }",
    )?;
    convert::check_keys(
        &obj,
        "fields",
        &["tick", "timestampMs", "workerId", "sequence"],
    )?;
    let worker = match field(&obj, "workerId")? {
        Some(v) => convert::u64_of(&v, "workerId")?,
        None => default_worker.unwrap_or(0),
    };
    let sequence = match field(&obj, "sequence")? {
        Some(v) => convert::u64_of(&v, "sequence")?,
        None => 0,
    };
    match (field(&obj, "tick")?, field(&obj, "timestampMs")?) {
        (Some(t), None) => Ok(layout.compose(convert::u64_of(&t, "tick")?, worker, sequence)?),
        (None, Some(ts)) => Ok(layout.compose_at(convert::time_of(env, &ts, "timestampMs")?, worker, sequence)?),
        _ => Err(Fail::arg(
            "fields",
            "give exactly one of tick and timestampMs (with workerId and sequence, which default to 0)",
        )),
    }
}

/// A validated snowflake layout: how `time | worker | sequence` are packed into 63 bits.
///
/// ```js
/// new Layout()                       // twitter: 41/10/12 bits, 1 ms, epoch 2010-11-04
/// new Layout('sonyflake')
/// Layout.preset('twitter', '2024-01-01')   // a preset with another epoch
/// new Layout({ timeBits: 40, workerBits: 8, sequenceBits: 15, epochMs: '2025-01-01' })
/// ```
#[napi]
pub struct Layout {
    pub(crate) inner: segflake::Layout,
}

#[napi]
impl Layout {
    /// Builds and validates a layout: a preset name (`"twitter"` when omitted,
    /// `"sonyflake"`, `"uid-generator"`, `"js-safe"`) or an object of layout options whose
    /// missing fields default to the twitter preset's. Throws `InvalidLayoutError` or
    /// `LayoutExhaustedError` (says when it would run out).
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "PresetName | LayoutOptions | Layout")] layout: Option<Unknown<'_>>,
    ) -> Result<Layout> {
        let spec = spec_of(&env, layout.as_ref(), None).js(&env)?;
        Ok(Layout {
            inner: spec.build().js(&env)?,
        })
    }

    /// A preset, optionally with its epoch replaced (Unix ms, `Date` or ISO-8601 string).
    #[napi(factory)]
    pub fn preset(
        env: Env,
        #[napi(ts_arg_type = "PresetName")] name: Unknown<'_>,
        #[napi(ts_arg_type = "number | bigint | string | Date")] epoch_ms: Option<Unknown<'_>>,
    ) -> Result<Layout> {
        let name = convert::string_of(
            &name,
            "preset",
            "one of twitter, sonyflake, uid-generator, js-safe",
        )
        .js(&env)?;
        let run = || -> R<segflake::Layout> {
            let mut spec = Preset::from_name(&name)?.spec();
            if let Some(e) = epoch_ms.as_ref().filter(|v| !convert::is_absent(v)) {
                spec.epoch_ms = convert::time_of(&env, e, "epochMs")?;
            }
            Ok(spec.build()?)
        };
        Ok(Layout {
            inner: run().js(&env)?,
        })
    }

    /// Width of the time field.
    #[napi(getter)]
    pub fn time_bits(&self) -> u32 {
        u32::from(self.inner.time_bits())
    }
    /// Width of the worker field.
    #[napi(getter)]
    pub fn worker_bits(&self) -> u32 {
        u32::from(self.inner.worker_bits())
    }
    /// Width of the sequence field.
    #[napi(getter)]
    pub fn sequence_bits(&self) -> u32 {
        u32::from(self.inner.sequence_bits())
    }
    /// Bits used in all (at most 63).
    #[napi(getter)]
    pub fn total_bits(&self) -> u32 {
        self.inner.total_bits()
    }
    /// Length of one tick in milliseconds.
    #[napi(getter)]
    pub fn tick_ms(&self) -> f64 {
        num(self.inner.tick_ms())
    }
    /// Unix milliseconds of tick 0.
    #[napi(getter)]
    pub fn epoch_ms(&self) -> f64 {
        num(self.inner.epoch_ms())
    }
    /// `"time-worker-sequence"` or `"time-sequence-worker"`.
    #[napi(
        getter,
        ts_return_type = "'time-worker-sequence' | 'time-sequence-worker'"
    )]
    pub fn order(&self) -> &'static str {
        self.inner.order().name()
    }
    /// The lifetime check this layout passed (years; 0 = none).
    #[napi(getter)]
    pub fn min_lifetime_years(&self) -> u32 {
        self.inner.spec().min_lifetime_years
    }
    /// How long the time field lasts from the epoch, in milliseconds.
    #[napi(getter)]
    pub fn lifetime_ms(&self) -> f64 {
        num(self.inner.lifetime_ms())
    }
    /// Unix milliseconds at which the time field runs out.
    #[napi(getter)]
    pub fn exhausts_at_ms(&self) -> f64 {
        num(self.inner.exhausts_at_ms())
    }
    /// The layout's ceiling: IDs one worker can issue per second.
    #[napi(getter)]
    pub fn max_ids_per_second(&self) -> f64 {
        num(self.inner.max_ids_per_second())
    }
    /// Unix milliseconds from which IDs exceed `Number.MAX_SAFE_INTEGER`, or `null` if
    /// this layout's IDs always fit a JS number.
    #[napi(getter)]
    pub fn js_safe_until_ms(&self) -> Option<f64> {
        self.inner.js_safe_until_ms().map(num)
    }
    /// The largest worker ID.
    #[napi(getter)]
    pub fn max_worker_id(&self) -> u32 {
        self.inner.max_worker_id() as u32
    }
    /// The largest sequence number within a tick.
    #[napi(getter)]
    pub fn max_sequence(&self) -> u32 {
        self.inner.max_sequence() as u32
    }
    /// The largest ID this layout can produce.
    #[napi(getter)]
    pub fn max_id(&self) -> BigInt {
        BigInt::from(self.inner.max_id())
    }

    /// The parameters as a plain object (`new Layout(layout.toJSON())` rebuilds it).
    #[napi(js_name = "toJSON")]
    pub fn to_json(&self) -> LayoutOptions {
        let s = self.inner.spec();
        LayoutOptions {
            preset: None,
            time_bits: Some(u32::from(s.time_bits)),
            worker_bits: Some(u32::from(s.worker_bits)),
            sequence_bits: Some(u32::from(s.sequence_bits)),
            tick_ms: Some(num(s.tick_ms)),
            epoch_ms: Some(num(s.epoch_ms)),
            order: Some(s.order.name().to_string()),
            min_lifetime_years: Some(s.min_lifetime_years),
        }
    }

    /// Splits an ID into `{ timestampMs, tick, workerId, sequence }`. Throws
    /// `InvalidArgumentError` for an ID with bits above the layout's.
    #[napi]
    pub fn decode(
        &self,
        env: Env,
        #[napi(ts_arg_type = "IdInput")] id: Unknown<'_>,
    ) -> Result<DecodedId> {
        let run = || -> R<DecodedId> { Ok(self.inner.decode(convert::id_of(&id, "id")?)?.into()) };
        run().js(&env)
    }

    /// Packs fields into an ID: give `tick` or `timestampMs` (rounded down to its tick),
    /// plus `workerId` and `sequence` (both default to 0). Each is checked against its width.
    #[napi(ts_return_type = "bigint")]
    pub fn compose(
        &self,
        env: Env,
        #[napi(ts_arg_type = "ComposeFields")] fields: Unknown<'_>,
    ) -> Result<BigInt> {
        compose_with(&env, &self.inner, &fields, None)
            .map(BigInt::from)
            .js(&env)
    }
}

/// The preset names.
#[napi(ts_return_type = "PresetName[]")]
pub fn presets() -> Vec<&'static str> {
    Preset::ALL.iter().map(|p| p.name()).collect()
}
