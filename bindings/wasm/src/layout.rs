//! `Layout`: a validated snowflake layout, built from a preset name or an object of fields.

use segflake::host::{self, ComposeFields, Dialect, Options, Record, Spelling, Value};
use segflake::{Error, Layout, LayoutSpec, Preset};
use wasm_bindgen::prelude::*;

use crate::convert::{self, id_of, value_of};
use crate::errors::IntoJs;

/// Validates `spec` at the JS clock's current time.
pub fn build(spec: LayoutSpec) -> Result<Layout, Error> {
    spec.build_at(segflake_wasm_hot::now_ms())
        .map_err(|e| host::respell(e, LayoutSpec::SPECS, Spelling::Camel))
}

/// Packs `{ timestampMs | tick, workerId, datacenterId, sequence }` (read by the core);
/// `default_worker` fills a missing `workerId`.
pub fn compose_from_js(
    layout: &Layout,
    parts: &JsValue,
    default_worker: u64,
) -> Result<u64, Error> {
    let fields = value_of(parts, ComposeFields::WHAT)?;
    host::compose_of(layout, &fields, default_worker, Dialect::JS)
}

/// A validated snowflake layout: which bits hold time, worker and sequence.
#[wasm_bindgen(js_name = Layout)]
#[derive(Clone)]
pub struct JsLayout {
    pub(crate) inner: Layout,
}

impl JsLayout {
    pub fn wrap(inner: Layout) -> JsLayout {
        JsLayout { inner }
    }

    /// The field `camel` of the layout's record (the core's `Layout::FIELDS`).
    fn field(&self, camel: &str) -> JsValue {
        let mut fields = Layout::FIELDS.iter().zip(self.inner.values());
        fields
            .find(|(f, _)| f.camel == camel)
            .map_or(JsValue::UNDEFINED, |(f, v)| convert::field_js(f.kind, v))
    }
}

/// One getter per field of the core's `Layout` record, named as the field in camel case:
/// widths, times and limits as numbers, `maxId` as a bigint, `jsSafeUntilMs` `null` when
/// IDs never pass 2^53.
macro_rules! layout_getters {
    ($($field:ident),*) => {
        #[wasm_bindgen(js_class = Layout)]
        #[allow(non_snake_case)]
        impl JsLayout {
            $(
                #[wasm_bindgen(getter)]
                pub fn $field(&self) -> JsValue {
                    self.field(stringify!($field))
                }
            )*
        }
    };
}

layout_getters!(
    timeBits,
    workerBits,
    sequenceBits,
    tickMs,
    epochMs,
    order,
    minLifetimeYears,
    totalBits,
    lifetimeMs,
    exhaustsAtMs,
    maxIdsPerSecond,
    jsSafeUntilMs,
    maxWorkerId,
    maxSequence,
    maxTick,
    maxId,
    datacenterBits
);

#[wasm_bindgen(js_class = Layout)]
impl JsLayout {
    /// `new Layout()` (twitter), `new Layout("sonyflake")`, `new Layout({ timeBits: 41, ... })`
    /// (missing fields from the twitter preset), or a copy of another `Layout`.
    #[wasm_bindgen(constructor)]
    pub fn new(layout: JsValue) -> Result<JsLayout, JsValue> {
        let spec = match value_of(&layout, "layout").js()? {
            Value::Null => Preset::Twitter.spec(),
            v => host::layout_of(&v, Dialect::JS).js()?,
        };
        build(spec).js().map(JsLayout::wrap)
    }

    /// A preset, optionally with its epoch replaced (Unix ms, `Date` or ISO-8601 string).
    pub fn preset(name: JsValue, epoch_ms: JsValue) -> Result<JsLayout, JsValue> {
        let pairs = [
            ("preset", value_of(&name, "preset").js()?),
            ("epochMs", value_of(&epoch_ms, "epochMs").js()?),
        ];
        let spec: LayoutSpec = host::configure(pairs, Dialect::JS).js()?;
        build(spec).js().map(JsLayout::wrap)
    }

    /// Packs `{ timestampMs | tick, workerId, sequence = 0 }` into an ID.
    pub fn compose(&self, parts: JsValue) -> Result<u64, JsValue> {
        compose_from_js(&self.inner, &parts, 0).js()
    }

    /// Splits an ID into `{ timestampMs, tick, workerId, sequence }`.
    pub fn decode(&self, id: JsValue) -> Result<JsValue, JsValue> {
        let id = id_of(&id, "id").js()?;
        self.inner.decode(id).js().map(|d| convert::record(&d))
    }

    /// The layout's parameters as a plain object (what `JSON.stringify` shows).
    #[wasm_bindgen(js_name = toJSON)]
    pub fn to_json(&self) -> JsValue {
        let settings = host::spelled_settings(&self.inner.spec(), Spelling::Camel);
        convert::js_of(Value::Map(settings))
    }
}
