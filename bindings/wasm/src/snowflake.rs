//! `Snowflake`: the time-ordered generator, reading time from `Date.now()`.

use segflake::host::{SnowflakeConfig, Spelling};
use segflake::{Error, Snowflake};
use segflake_wasm_hot::{self as hot, JsClock};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::convert::{self, id_of};
use crate::errors::{to_js, IntoJs};
use crate::layout::{self, JsLayout};

fn build(options: &JsValue) -> Result<Snowflake<JsClock>, Error> {
    let config: SnowflakeConfig = convert::configure(options, &[])?;
    let layout = config.build_at(hot::now_ms(), Spelling::Camel)?;
    Snowflake::with_clock(layout, config.options, JsClock)
}

/// A snowflake generator: strictly increasing 64-bit IDs, time from `Date.now()`.
#[wasm_bindgen(js_name = Snowflake)]
pub struct JsSnowflake {
    pub(crate) inner: std::sync::Arc<Snowflake<JsClock>>,
}

#[wasm_bindgen(js_class = Snowflake)]
impl JsSnowflake {
    /// `new Snowflake({ workerId, layout?, epochMs?, maxDriftMs?, sequenceStart?, notBeforeMs? })`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsSnowflake, JsValue> {
        build(&options).js().map(|inner| JsSnowflake {
            inner: std::sync::Arc::new(inner),
        })
    }

    /// A handle on this generator that issues IDs, compiled for speed: the package's
    /// `nextId`, `nextIdString` and `fillIds` call it.
    #[wasm_bindgen(getter, js_name = "__take")]
    pub fn take(&self) -> hot::SnowflakeTake {
        hot::SnowflakeTake::new(std::sync::Arc::clone(&self.inner))
    }

    /// The next ID as a `number`; only for layouts of at most 53 bits (`js-safe`).
    #[wasm_bindgen(js_name = nextIdNumber)]
    pub fn next_id_number(&self) -> Result<f64, JsValue> {
        self.inner.layout().check_js_number().map_err(to_js)?;
        hot::next_id(&self.inner).map(convert::num).map_err(to_js)
    }

    /// `n` strictly increasing IDs (1..=16,777,216) in a `BigUint64Array`.
    #[wasm_bindgen(js_name = nextIds)]
    pub fn next_ids(&self, n: JsValue) -> Result<Vec<u64>, JsValue> {
        let n = convert::batch_size(&n).js()?;
        hot::next_ids_vec(&self.inner, n).map_err(to_js)
    }

    /// Fills `target` (a `BigUint64Array` of 1..=16,777,216 elements) with strictly
    /// increasing IDs and returns it.
    #[wasm_bindgen(js_name = fillIds, unchecked_return_type = "BigUint64Array")]
    pub fn fill_ids(
        &self,
        #[wasm_bindgen(unchecked_param_type = "BigUint64Array")] target: JsValue,
    ) -> Result<JsValue, JsValue> {
        let Some(array) = target.dyn_ref::<js_sys::BigUint64Array>() else {
            let why = format!(
                "got {}; allowed: a BigUint64Array",
                convert::describe(&target)
            );
            return Err(to_js(Error::invalid_argument("target", why)));
        };
        hot::fill_ids(&self.inner, array).map_err(to_js)?;
        Ok(target)
    }

    /// Unix ms of the highest tick issued so far: persist it and pass it as
    /// `notBeforeMs` to the next generator with this worker ID.
    #[wasm_bindgen(getter, js_name = highWaterMark)]
    pub fn high_water_mark(&self) -> f64 {
        convert::num(self.inner.high_water_mark_ms())
    }

    #[wasm_bindgen(getter, js_name = workerId)]
    pub fn worker_id(&self) -> f64 {
        convert::num(self.inner.worker_id())
    }

    #[wasm_bindgen(getter, js_name = maxDriftMs)]
    pub fn max_drift_ms(&self) -> f64 {
        convert::num(self.inner.options().max_drift_ms)
    }

    /// `"zero"` or `"random"`.
    #[wasm_bindgen(getter, js_name = sequenceStart)]
    pub fn sequence_start(&self) -> String {
        self.inner.options().sequence_start.name().to_string()
    }

    #[wasm_bindgen(getter)]
    pub fn layout(&self) -> JsLayout {
        JsLayout::wrap(*self.inner.layout())
    }

    /// Splits an ID of this generator's layout into `{ timestampMs, tick, workerId, sequence }`.
    pub fn decode(&self, id: JsValue) -> Result<JsValue, JsValue> {
        let id = id_of(&id, "id").js()?;
        self.inner.decode(id).js().map(|d| convert::record(&d))
    }

    /// Packs `{ timestampMs | tick, workerId = this.workerId, sequence = 0 }` with this
    /// generator's layout.
    pub fn compose(&self, parts: JsValue) -> Result<u64, JsValue> {
        layout::compose_from_js(self.inner.layout(), &parts, self.inner.worker_id()).js()
    }
}
