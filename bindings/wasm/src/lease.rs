//! The worker-ID lease engine, for the JS driver (`Snowflake.fromRegistry` in the shared
//! `driver.js`): the core's sans-I/O [`segflake::LeaseEngine`], one call per step, with the
//! same shape as the native package's. Registry calls are Promises and timers in JS.
//!
//! Also the ZooKeeper registry's protocol ([`JsZooKeeperProtocol`]), which
//! `segflake/registries` drives with node-zookeeper-client.

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

/// The ZooKeeper registry's protocol in Leaf's layout (see the native package's
/// `__ZooKeeperProtocol`); not part of the public API.
#[wasm_bindgen(js_name = "__ZooKeeperProtocol")]
pub struct JsZooKeeperProtocol {
    inner: segflake::lease::zookeeper::ZooKeeperProtocol,
}

/// A ZooKeeper reply: `null`, or an object whose fields are values, stats or arrays
/// (`children`).
fn reply_of(v: &JsValue) -> Result<Value, segflake::Error> {
    if !v.is_object() || js_sys::Array::is_array(v) || v.is_function() {
        return answer_of(v);
    }
    let fail = |e: JsValue| {
        let what = e
            .dyn_ref::<js_sys::Error>()
            .map_or_else(|| "a value".into(), |e| String::from(e.message()));
        segflake::Error::invalid_argument("reply", format!("reading it threw: {what}"))
    };
    let keys = js_sys::Reflect::own_keys(v).map_err(fail)?;
    let mut pairs = Vec::with_capacity(keys.length() as usize);
    for key in keys.iter() {
        let Some(name) = key.as_string() else {
            continue;
        };
        let field = js_sys::Reflect::get(v, &key).map_err(fail)?;
        pairs.push((name, answer_of(&field)?));
    }
    Ok(Value::Map(pairs))
}

/// A ZooKeeper session ID: a 64-bit signed integer, as a bigint or a safe-integer number.
fn session_of(v: &JsValue) -> Result<i64, segflake::Error> {
    match value_of(v, "session")? {
        Value::Int(i) if i64::try_from(i).is_ok() => Ok(i as i64),
        _ => Err(segflake::Error::invalid_argument(
            "session",
            format!(
                "got {}; expected a 64-bit signed integer (a bigint or a safe-integer number)",
                convert::describe(v)
            ),
        )),
    }
}

#[wasm_bindgen(js_class = "__ZooKeeperProtocol")]
impl JsZooKeeperProtocol {
    /// The protocol for `identity` (`IP:PORT`) under `root`; throws `InvalidArgumentError`
    /// on either malformed.
    #[wasm_bindgen(constructor)]
    pub fn new(root: JsValue, identity: JsValue) -> Result<JsZooKeeperProtocol, JsValue> {
        let build = || {
            let root = convert::string_of(&root, "root")?;
            let identity = convert::string_of(&identity, "identity")?;
            segflake::lease::zookeeper::ZooKeeperProtocol::new(&root, &identity)
                .map(|inner| JsZooKeeperProtocol { inner })
                .map_err(|e| segflake::Error::invalid_argument("ZooKeeper registry", e))
        };
        build().js()
    }

    /// `IP:PORT`.
    #[wasm_bindgen(getter)]
    pub fn identity(&self) -> String {
        self.inner.identity()
    }

    /// Begins registry call `name` with its arguments in call order, in client session
    /// `session`, at wall time `nowMs`; returns the first step (a request, `{answer}` or
    /// `{error}`).
    pub fn start(
        &mut self,
        name: JsValue,
        args: JsValue,
        session: JsValue,
        now_ms: JsValue,
    ) -> Result<JsValue, JsValue> {
        let mut run = || {
            let name = convert::string_of(&name, "name")?;
            let args = match answer_of(&args)? {
                Value::List(items) => items,
                _ => {
                    return Err(segflake::Error::invalid_argument(
                        "args",
                        format!("got {}; expected an array", convert::describe(&args)),
                    ))
                }
            };
            let session = session_of(&session)?;
            let now = convert::u64_of(&now_ms, "nowMs")?;
            Ok(convert::js_of(
                self.inner.start_value(&name, &args, session, now),
            ))
        };
        run().js()
    }

    /// The client's reply to the last request, and the next step.
    pub fn resume(&mut self, reply: JsValue) -> Result<JsValue, JsValue> {
        let reply = reply_of(&reply).js()?;
        Ok(convert::js_of(self.inner.resume_value(&reply)))
    }
}
