//! `Layout`: a validated snowflake layout and its queries.

use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;
use segflake::host::{self, Dialect, Options, Record, Spelling, Value};
use segflake::{LayoutSpec, Preset};

use crate::convert::{self, value_of, Js};
use crate::errors::{IntoJs, R};

/// A validated `Layout`; build errors name its fields as JS spells them.
fn build(spec: LayoutSpec) -> R<Layout> {
    let inner = spec
        .build()
        .map_err(|e| host::respell(e, LayoutSpec::SPECS, Spelling::Camel))?;
    Ok(Layout { inner })
}

/// Shared by `Layout.compose` and `Snowflake.compose`: the core reads the fields.
pub fn compose_with(
    env: &Env,
    layout: &segflake::Layout,
    fields: &Unknown<'_>,
    default_worker: Option<u64>,
) -> R<u64> {
    let fields = value_of(env, fields, "fields")?;
    Ok(host::compose_of(
        layout,
        &fields,
        default_worker.unwrap_or(0),
        Dialect::JS,
    )?)
}

/// A validated snowflake layout: how `time | worker | sequence` are packed into 63 bits.
/// Its read-only properties (`timeBits`, ..., `maxId`) are the core's layout record,
/// installed on the prototype by `fast_exports`.
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
    #[napi(
        constructor,
        ts_args_type = "layout?: PresetName | LayoutOptions | Layout"
    )]
    pub fn new(env: Env, layout: Option<Unknown<'_>>) -> Result<Layout> {
        crate::errors::run(&env, || match &layout {
            None => build(Preset::Twitter.spec()),
            Some(v) => build(host::layout_of(&value_of(&env, v, "layout")?, Dialect::JS)?),
        })
    }

    /// A preset, optionally with its epoch replaced (Unix ms, `Date` or ISO-8601 string).
    #[napi(
        factory,
        ts_args_type = "name: PresetName, epochMs?: number | bigint | string | Date"
    )]
    pub fn preset(env: Env, name: Unknown<'_>, epoch_ms: Option<Unknown<'_>>) -> Result<Layout> {
        crate::errors::run(&env, || {
            let mut pairs = vec![("preset", value_of(&env, &name, "preset")?)];
            if let Some(e) = epoch_ms.as_ref() {
                pairs.push(("epochMs", value_of(&env, e, "epochMs")?));
            }
            build(host::configure(pairs, Dialect::JS)?)
        })
    }

    /// The parameters as a plain object (`new Layout(layout.toJSON())` rebuilds it).
    #[napi(js_name = "toJSON", ts_return_type = "LayoutOptions")]
    pub fn to_json(&self) -> Js {
        Js(Value::Map(host::spelled_settings(
            &self.inner.spec(),
            Spelling::Camel,
        )))
    }

    /// Splits an ID into `{ timestampMs, tick, workerId, sequence }`. Throws
    /// `InvalidArgumentError` for an ID with bits above the layout's.
    #[napi(ts_return_type = "DecodedId", ts_args_type = "id: IdInput")]
    pub fn decode<'a>(&self, env: Env, id: Unknown<'_>) -> Result<Object<'a>> {
        let d = convert::id_of(&env, &id, "id")
            .and_then(|id| Ok(self.inner.decode(id)?))
            .js(&env)?;
        convert::record(&env, &d)
    }

    /// Packs fields into an ID: give `tick` or `timestampMs` (rounded down to its tick),
    /// plus `workerId` and `sequence` (both default to 0). Each is checked against its width.
    #[napi(ts_return_type = "bigint", ts_args_type = "fields: ComposeFields")]
    pub fn compose(&self, env: Env, fields: Unknown<'_>) -> Result<BigInt> {
        compose_with(&env, &self.inner, &fields, None)
            .map(BigInt::from)
            .js(&env)
    }
}

/// A `Layout` getter: the record field whose index is the callback's data (installed on
/// the prototype, one per field of the core's layout record, by `fast_exports`).
pub unsafe extern "C" fn layout_field(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let (mut this, mut data) = (ptr::null_mut(), ptr::null_mut());
    let mut argc = 0usize;
    unsafe { sys::napi_get_cb_info(env, info, &mut argc, ptr::null_mut(), &mut this, &mut data) };
    let field = &segflake::Layout::FIELDS[data as usize];
    let Some(layout) =
        (unsafe { crate::fast::receiver::<Layout>(env, this, field.camel, "Layout") })
    else {
        return ptr::null_mut();
    };
    let value = layout.inner.values().swap_remove(data as usize);
    convert::field_js(env, field.kind, value).unwrap_or(ptr::null_mut())
}

/// The preset names.
#[napi(ts_return_type = "PresetName[]")]
pub fn presets() -> Vec<&'static str> {
    Preset::ALL.iter().map(|p| p.name()).collect()
}
