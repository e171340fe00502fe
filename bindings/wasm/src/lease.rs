//! The worker-ID lease engine, for the JS driver (`Snowflake.fromRegistry` in the shared
//! `driver.js`): the core's sans-I/O [`segflake::LeaseEngine`], one call per step, with the
//! same shape as the native package's. Registry calls are Promises and timers in JS.
//!
//! Also the core's registry protocols ([`JsRegistryProtocol`]), which the adapters of
//! `segflake/registries` drive with their clients.

use std::cell::RefCell;

use segflake::host::{Dialect, Spelling, Value};
use segflake::lease::HostedLease;
use wasm_bindgen::prelude::*;

use crate::convert::{self, value_of};
use crate::errors::IntoJs;
use crate::segment::now_ms as mono_ms;
use crate::snowflake::JsSnowflake;
use segflake_wasm_hot::JsClock;

/// One leased generator's engine (used by `Snowflake.fromRegistry`; not part of the public
/// API).
#[wasm_bindgen(js_name = "__LeaseEngine")]
pub struct JsLeaseEngine {
    inner: RefCell<HostedLease<JsClock>>,
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
        let pairs = convert::pairs_of(&options, &[]).js()?;
        let times = (mono_ms(), segflake_wasm_hot::now_ms());
        let inner = HostedLease::new(pairs, Dialect::JS, owner, nonce(), times).js()?;
        Ok(JsLeaseEngine {
            inner: RefCell::new(inner),
        })
    }

    /// The next step at wall time `nowMs` (see the native package's `__LeaseEngine`).
    pub fn poll(&self, now_ms: f64) -> JsValue {
        let step =
            (self.inner.borrow_mut()).poll(mono_ms(), now_ms as u64, JsClock, Spelling::Camel);
        convert::js_of(step)
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
        (self.inner.borrow_mut()).answer(id as u64, mono_ms(), now_ms as u64, answer);
        Ok(())
    }

    /// The generator, once `ready` was returned.
    pub fn generator(&self) -> Option<JsSnowflake> {
        let inner = self.inner.borrow().generator()?;
        Some(JsSnowflake { inner })
    }

    /// Stops issuing IDs (sealing the generator) and starts the release; keep polling until
    /// `closed`.
    pub fn close(&self) {
        self.inner.borrow_mut().close();
    }

    /// The lease's state (`LeaseStats`).
    pub fn stats(&self, now_ms: f64) -> JsValue {
        convert::record(&self.inner.borrow().stats(mono_ms(), now_ms as u64))
    }
}

/// Any of the core's registry protocols (see the native package's `__RegistryProtocol`);
/// not part of the public API.
#[wasm_bindgen(js_name = "__RegistryProtocol")]
pub struct JsRegistryProtocol {
    inner: segflake::lease::conversation::RegistryProtocol,
}

/// How deep a protocol value nests at most (a reply's rows of columns are three levels).
const MAX_DEPTH: u32 = 16;

/// A protocol value (a config, a call's arguments, a context, a reply) as a host value:
/// arrays as lists and plain objects as maps at every level (their function-valued keys
/// skipped), anything else as [`value_of`] reads it.
fn protocol_value(v: &JsValue, name: &str, depth: u32) -> Result<Value, segflake::Error> {
    if depth > MAX_DEPTH {
        return Ok(Value::Opaque(format!(
            "a value nested over {MAX_DEPTH} deep"
        )));
    }
    if let Some(arr) = v.dyn_ref::<js_sys::Array>() {
        return arr
            .iter()
            .map(|item| protocol_value(&item, name, depth + 1))
            .collect::<Result<_, _>>()
            .map(Value::List);
    }
    if !v.is_object() || v.is_function() || v.is_instance_of::<js_sys::Date>() {
        return value_of(v, name);
    }
    let fail = |e: JsValue| {
        let what = e
            .dyn_ref::<js_sys::Error>()
            .map_or_else(|| "a value".into(), |e| String::from(e.message()));
        segflake::Error::invalid_argument(name.to_owned(), format!("reading it threw: {what}"))
    };
    let keys = js_sys::Reflect::own_keys(v).map_err(fail)?;
    let mut pairs = Vec::with_capacity(keys.length() as usize);
    for key in keys.iter() {
        let Some(key_name) = key.as_string() else {
            continue;
        };
        let field = js_sys::Reflect::get(v, &key).map_err(fail)?;
        if !field.is_function() {
            let value = protocol_value(&field, &key_name, depth + 1)?;
            pairs.push((key_name, value));
        }
    }
    Ok(Value::Map(pairs))
}

#[wasm_bindgen(js_class = "__RegistryProtocol")]
impl JsRegistryProtocol {
    /// The protocol of `kind` (`zookeeper`, `etcd`, `redis`, `postgres`, `mysql`) with
    /// `config`; throws `InvalidArgumentError` with the core's reason when either is invalid.
    #[wasm_bindgen(constructor)]
    pub fn new(kind: JsValue, config: JsValue) -> Result<JsRegistryProtocol, JsValue> {
        let build = || {
            let kind = convert::string_of(&kind, "kind")?;
            let config = protocol_value(&config, "config", 0)?;
            segflake::lease::conversation::RegistryProtocol::new(&kind, &config)
                .map(|inner| JsRegistryProtocol { inner })
                .map_err(|e| segflake::Error::invalid_argument(format!("{kind} registry"), e))
        };
        build().js()
    }

    /// Begins registry call `name` with its arguments in call order; `context` is
    /// ZooKeeper's `{session, now_ms}` (ignored by the others). Returns the first step (a
    /// request, `{answer}` or `{error}`).
    pub fn start(
        &mut self,
        name: JsValue,
        args: JsValue,
        context: JsValue,
    ) -> Result<JsValue, JsValue> {
        let mut run = || {
            let name = convert::string_of(&name, "name")?;
            let args = match protocol_value(&args, "args", 0)? {
                Value::List(items) => items,
                _ => {
                    return Err(segflake::Error::invalid_argument(
                        "args",
                        format!("got {}; expected an array", convert::describe(&args)),
                    ))
                }
            };
            let context = protocol_value(&context, "context", 0)?;
            Ok(convert::js_of(
                self.inner.start_value(&name, &args, &context),
            ))
        };
        run().js()
    }

    /// The client's reply to the last request, and the next step.
    pub fn resume(&mut self, reply: JsValue) -> Result<JsValue, JsValue> {
        let reply = protocol_value(&reply, "reply", 0).js()?;
        Ok(convert::js_of(self.inner.resume_value(&reply)))
    }

    /// What the adapter may need: ZooKeeper `{identity, root, worker_id}`, etcd `{prefix,
    /// leases}`, Redis `{}`, SQL `{schema}`.
    pub fn describe(&self) -> JsValue {
        convert::js_of(self.inner.describe())
    }
}
