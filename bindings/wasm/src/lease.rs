//! The worker-ID lease engine, for the JS driver (`Snowflake.fromRegistry` in the shared
//! `driver.js`): the core's sans-I/O [`segflake::LeaseEngine`], one call per step, with the
//! same shape as the native package's. Registry calls are Promises and timers in JS.

use std::cell::RefCell;
use std::rc::Rc;

use segflake::host::{self, Dialect, Spelling, Value};
use segflake::{Snowflake, SnowflakeOptions, Step};
use wasm_bindgen::prelude::*;

use crate::clock::JsClock;
use crate::convert::{self, value_of};
use crate::errors::IntoJs;
use crate::segment::now_ms as mono_ms;
use crate::snowflake::JsSnowflake;

/// One leased generator's engine (used by `Snowflake.fromRegistry`; not part of the public
/// API).
#[wasm_bindgen(js_name = "__LeaseEngine")]
pub struct JsLeaseEngine {
    engine: RefCell<segflake::LeaseEngine>,
    options: SnowflakeOptions,
    generator: RefCell<Option<Rc<Snowflake<JsClock>>>>,
}

/// A registry's (or a script counter's) answer: arrays (the `peers` list and its
/// entries) as lists.
pub(crate) fn answer_of(v: &JsValue) -> Result<Value, segflake::Error> {
    if let Some(arr) = v.dyn_ref::<js_sys::Array>() {
        return arr
            .iter()
            .map(|item| answer_of(&item))
            .collect::<Result<_, _>>()
            .map(Value::List);
    }
    value_of(v, "answer")
}

use wasm_bindgen::JsCast;

/// 64 random bits for the engine's owner nonce, from the host's generator (seeded by the
/// host for each JS environment).
fn nonce() -> u64 {
    let half = || (js_sys::Math::random() * 4_294_967_296.0) as u64;
    (half() << 32) | half()
}

#[wasm_bindgen(js_class = "__LeaseEngine")]
impl JsLeaseEngine {
    /// `options`: the snowflake options without `workerId`, and the lease options.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue, owner: String) -> Result<JsLeaseEngine, JsValue> {
        let build = || {
            let pairs = convert::pairs_of(&options, &[])?;
            let now = crate::clock::now_ms();
            let (config, layout, lease) = host::configure_leased(pairs, Dialect::JS, now)?;
            let engine = segflake::LeaseEngine::new(
                layout,
                lease,
                config.options.max_drift_ms,
                config.options.not_before_ms.unwrap_or(0),
                owner,
                nonce(),
                mono_ms(),
            )?;
            Ok(JsLeaseEngine {
                engine: RefCell::new(engine),
                options: config.options,
                generator: RefCell::new(None),
            })
        };
        build().js()
    }

    /// The next step at wall time `nowMs` (see the native package's `__LeaseEngine`).
    pub fn poll(&self, now_ms: f64) -> JsValue {
        let mut engine = self.engine.borrow_mut();
        let mut step = engine.poll(mono_ms(), now_ms as u64);
        if let Step::Ready {
            worker_id,
            not_before_ms,
        } = step
        {
            match engine.generator(self.options, JsClock, worker_id, not_before_ms) {
                Ok(g) => *self.generator.borrow_mut() = Some(Rc::new(g)),
                Err(e) => {
                    engine.close(0);
                    step = Step::Failed(e);
                }
            }
        }
        convert::js_of(step.to_value(Spelling::Camel))
    }

    /// The answer to call `id`: the registry's value, or the text of the error it threw.
    pub fn answer(
        &self,
        id: f64,
        now_ms: f64,
        value: JsValue,
        error: Option<String>,
    ) -> Result<(), JsValue> {
        let answer = match error {
            Some(e) => Err(e),
            None => Ok(answer_of(&value).js()?),
        };
        self.engine
            .borrow_mut()
            .answer(id as u64, mono_ms(), now_ms as u64, answer);
        Ok(())
    }

    /// The generator, once `ready` was returned.
    pub fn generator(&self) -> Option<JsSnowflake> {
        self.generator
            .borrow()
            .clone()
            .map(|inner| JsSnowflake { inner })
    }

    /// Stops issuing IDs (sealing the generator) and starts the release; keep polling until
    /// `closed`.
    pub fn close(&self) {
        let hwm = self.generator.borrow().as_ref().map_or(0, |g| g.seal());
        self.engine.borrow_mut().close(hwm);
    }

    /// The lease's state (`LeaseStats`).
    pub fn stats(&self, now_ms: f64) -> JsValue {
        convert::record(&self.engine.borrow().stats(mono_ms(), now_ms as u64))
    }
}
