//! `Layout`: a validated snowflake layout, built from a preset name or an object of fields.

use segflake::{DecodedId, Error, FieldOrder, Layout, LayoutSpec, Preset};
use wasm_bindgen::prelude::*;

use crate::clock;
use crate::convert::{self, check_keys, describe, field, to_u64, Accept, MAX_SAFE_INTEGER};
use crate::errors::IntoJs;

const LAYOUT_KEYS: &[&str] = &[
    "preset",
    "timeBits",
    "workerBits",
    "sequenceBits",
    "tickMs",
    "epochMs",
    "order",
    "minLifetimeYears",
];

const PRESET_NAMES: &str = "twitter, sonyflake, uid-generator, js-safe";

const COMPOSE_KEYS: &[&str] = &["timestampMs", "tick", "workerId", "sequence"];

fn invalid_layout(reason: String) -> Error {
    Error::InvalidLayout { reason }
}

fn bits(v: &JsValue, name: &'static str, range: &str) -> Result<u8, Error> {
    let n = to_u64(v, name, Accept::Integer, MAX_SAFE_INTEGER)?;
    u8::try_from(n).map_err(|_| invalid_layout(format!("{name} is {n}; allowed {range}")))
}

fn order(v: &JsValue) -> Result<FieldOrder, Error> {
    let name = convert::to_name(v, "order", "time-worker-sequence, time-sequence-worker")?;
    FieldOrder::from_name(&name)
}

fn min_lifetime_years(v: &JsValue) -> Result<u32, Error> {
    let n = to_u64(v, "minLifetimeYears", Accept::Integer, 10_000)?;
    Ok(n as u32)
}

/// The spec a JS `layout` option describes: `undefined` (twitter), a preset name, a
/// `Layout`, or an object of fields whose missing entries come from its `preset` (default
/// twitter).
pub fn spec_from_js(v: &JsValue) -> Result<LayoutSpec, Error> {
    if v.is_undefined() || v.is_null() {
        return Ok(Preset::Twitter.spec());
    }
    if let Some(name) = v.as_string() {
        return Ok(Preset::from_name(&name)?.spec());
    }
    if !v.is_object() || js_sys::Array::is_array(v) {
        return Err(Error::InvalidArgument {
            name: "layout".into(),
            reason: format!(
                "got {}; allowed: a preset name ({PRESET_NAMES}), a Layout, or an object with \
                 any of {}",
                describe(v),
                LAYOUT_KEYS.join(", ")
            ),
        });
    }
    check_keys(v, "layout", LAYOUT_KEYS)?;
    let mut spec = match field(v, "preset")? {
        Some(p) => Preset::from_name(&convert::to_name(&p, "preset", PRESET_NAMES)?)?.spec(),
        None => Preset::Twitter.spec(),
    };
    if let Some(x) = field(v, "timeBits")? {
        spec.time_bits = bits(&x, "timeBits", "8..=63")?;
    }
    if let Some(x) = field(v, "workerBits")? {
        spec.worker_bits = bits(&x, "workerBits", "0..=31")?;
    }
    if let Some(x) = field(v, "sequenceBits")? {
        spec.sequence_bits = bits(&x, "sequenceBits", "0..=31")?;
    }
    if let Some(x) = field(v, "tickMs")? {
        spec.tick_ms = to_u64(&x, "tickMs", Accept::Integer, MAX_SAFE_INTEGER)?;
    }
    if let Some(x) = field(v, "epochMs")? {
        spec.epoch_ms = convert::to_time_ms(&x, "epochMs")?;
    }
    if let Some(x) = field(v, "order")? {
        spec.order = order(&x)?;
    }
    if let Some(x) = field(v, "minLifetimeYears")? {
        spec.min_lifetime_years = min_lifetime_years(&x)?;
    }
    Ok(spec)
}

/// Validates `spec` at the JS clock's current time.
pub fn build(spec: LayoutSpec) -> Result<Layout, Error> {
    spec.build_at(clock::now_ms())
}

/// `{ timestampMs, tick, workerId, sequence }`.
pub fn decoded_to_js(d: DecodedId) -> JsValue {
    let o = js_sys::Object::new();
    let put = |k: &str, v: u64| {
        let _ = js_sys::Reflect::set(
            &o,
            &JsValue::from_str(k),
            &JsValue::from_f64(convert::num(v)),
        );
    };
    put("timestampMs", d.timestamp_ms);
    put("tick", d.tick);
    put("workerId", d.worker_id);
    put("sequence", d.sequence);
    o.into()
}

/// Packs `{ timestampMs | tick, workerId, sequence }`; `default_worker` fills a missing
/// `workerId`, 0 fills a missing `sequence`.
pub fn compose_from_js(
    layout: &Layout,
    parts: &JsValue,
    default_worker: u64,
) -> Result<u64, Error> {
    if !parts.is_object() || js_sys::Array::is_array(parts) {
        return Err(Error::InvalidArgument {
            name: "compose parts".into(),
            reason: format!(
                "got {}; allowed: an object {{ timestampMs | tick, workerId, sequence }}",
                describe(parts)
            ),
        });
    }
    check_keys(parts, "compose parts", COMPOSE_KEYS)?;
    let worker_id = match field(parts, "workerId")? {
        Some(w) => to_u64(&w, "workerId", Accept::Integer, u64::MAX)?,
        None => default_worker,
    };
    let sequence = match field(parts, "sequence")? {
        Some(s) => to_u64(&s, "sequence", Accept::Integer, u64::MAX)?,
        None => 0,
    };
    match (field(parts, "timestampMs")?, field(parts, "tick")?) {
        (Some(t), None) => {
            layout.compose_at(convert::to_time_ms(&t, "timestampMs")?, worker_id, sequence)
        }
        (None, Some(t)) => layout.compose(
            to_u64(&t, "tick", Accept::Integer, u64::MAX)?,
            worker_id,
            sequence,
        ),
        _ => Err(Error::InvalidArgument {
            name: "compose parts".into(),
            reason: "give exactly one of timestampMs and tick".into(),
        }),
    }
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
}

#[wasm_bindgen(js_class = Layout)]
impl JsLayout {
    /// `new Layout()` (twitter), `new Layout("sonyflake")`, `new Layout({ timeBits: 41, ... })`
    /// (missing fields from the twitter preset), or a copy of another `Layout`.
    #[wasm_bindgen(constructor)]
    pub fn new(layout: JsValue) -> Result<JsLayout, JsValue> {
        build(spec_from_js(&layout).js()?).js().map(JsLayout::wrap)
    }

    /// A preset, optionally with its epoch replaced (Unix ms, `Date` or ISO-8601 string).
    pub fn preset(name: JsValue, epoch_ms: JsValue) -> Result<JsLayout, JsValue> {
        let name = convert::to_name(&name, "preset", PRESET_NAMES).js()?;
        let mut spec = Preset::from_name(&name).js()?.spec();
        if !(epoch_ms.is_undefined() || epoch_ms.is_null()) {
            spec.epoch_ms = convert::to_time_ms(&epoch_ms, "epochMs").js()?;
        }
        build(spec).js().map(JsLayout::wrap)
    }

    #[wasm_bindgen(getter, js_name = timeBits)]
    pub fn time_bits(&self) -> u8 {
        self.inner.time_bits()
    }
    #[wasm_bindgen(getter, js_name = workerBits)]
    pub fn worker_bits(&self) -> u8 {
        self.inner.worker_bits()
    }
    #[wasm_bindgen(getter, js_name = sequenceBits)]
    pub fn sequence_bits(&self) -> u8 {
        self.inner.sequence_bits()
    }
    /// Bits used in all (at most 63).
    #[wasm_bindgen(getter, js_name = totalBits)]
    pub fn total_bits(&self) -> u32 {
        self.inner.total_bits()
    }
    #[wasm_bindgen(getter, js_name = tickMs)]
    pub fn tick_ms(&self) -> f64 {
        convert::num(self.inner.tick_ms())
    }
    #[wasm_bindgen(getter, js_name = epochMs)]
    pub fn epoch_ms(&self) -> f64 {
        convert::num(self.inner.epoch_ms())
    }
    /// `"time-worker-sequence"` or `"time-sequence-worker"`.
    #[wasm_bindgen(getter)]
    pub fn order(&self) -> String {
        self.inner.order().name().to_string()
    }
    #[wasm_bindgen(getter, js_name = minLifetimeYears)]
    pub fn min_lifetime_years(&self) -> u32 {
        self.inner.spec().min_lifetime_years
    }
    /// How long the time field lasts from the epoch, in ms.
    #[wasm_bindgen(getter, js_name = lifetimeMs)]
    pub fn lifetime_ms(&self) -> f64 {
        convert::num(self.inner.lifetime_ms())
    }
    /// Unix ms at which the time field overflows.
    #[wasm_bindgen(getter, js_name = exhaustsAtMs)]
    pub fn exhausts_at_ms(&self) -> f64 {
        convert::num(self.inner.exhausts_at_ms())
    }
    #[wasm_bindgen(getter, js_name = maxIdsPerSecond)]
    pub fn max_ids_per_second(&self) -> f64 {
        convert::num(self.inner.max_ids_per_second())
    }
    /// Unix ms from which IDs exceed 2^53, or `null` if they never do.
    #[wasm_bindgen(getter, js_name = jsSafeUntilMs, unchecked_return_type = "number | null")]
    pub fn js_safe_until_ms(&self) -> JsValue {
        match self.inner.js_safe_until_ms() {
            Some(ms) => JsValue::from_f64(convert::num(ms)),
            None => JsValue::NULL,
        }
    }
    #[wasm_bindgen(getter, js_name = maxWorkerId)]
    pub fn max_worker_id(&self) -> f64 {
        convert::num(self.inner.max_worker_id())
    }
    #[wasm_bindgen(getter, js_name = maxSequence)]
    pub fn max_sequence(&self) -> f64 {
        convert::num(self.inner.max_sequence())
    }
    /// The largest ID this layout can produce.
    #[wasm_bindgen(getter, js_name = maxId)]
    pub fn max_id(&self) -> u64 {
        self.inner.max_id()
    }

    /// Packs `{ timestampMs | tick, workerId, sequence = 0 }` into an ID.
    pub fn compose(&self, parts: JsValue) -> Result<u64, JsValue> {
        compose_from_js(&self.inner, &parts, 0).js()
    }

    /// Splits an ID into `{ timestampMs, tick, workerId, sequence }`.
    pub fn decode(&self, id: JsValue) -> Result<JsValue, JsValue> {
        let id = to_u64(&id, "id", Accept::Id, u64::MAX).js()?;
        self.inner.decode(id).js().map(decoded_to_js)
    }

    /// The layout's parameters as a plain object (what `JSON.stringify` shows).
    #[wasm_bindgen(js_name = toJSON)]
    pub fn to_json(&self) -> JsValue {
        let o = js_sys::Object::new();
        let put = |k: &str, v: JsValue| {
            let _ = js_sys::Reflect::set(&o, &JsValue::from_str(k), &v);
        };
        put("timeBits", self.time_bits().into());
        put("workerBits", self.worker_bits().into());
        put("sequenceBits", self.sequence_bits().into());
        put("tickMs", self.tick_ms().into());
        put("epochMs", self.epoch_ms().into());
        put("order", self.order().into());
        put("minLifetimeYears", self.min_lifetime_years().into());
        o.into()
    }
}
