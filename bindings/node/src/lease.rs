//! The worker-ID lease engine, for the JS driver (`Snowflake.fromRegistry` in the shared
//! `driver.js`): the core's sans-I/O [`segflake::LeaseEngine`], one native call per step.
//! The driver makes the registry calls as Promises and polls again on timers.
//!
//! Also the core's registry protocols ([`RegistryProtocol`]), which the adapters of
//! `segflake/registries` drive with their clients.

use std::sync::Mutex;

use napi::bindgen_prelude::*;
use napi::sys;
use napi::ValueType;
use napi_derive::napi;
use segflake::host::{Dialect, Spelling, Value};
use segflake::lease::HostedLease;
use segflake::{Clock, SystemClock};

use crate::convert::{self, value_of, Js};
use crate::errors::{self, Fail, IntoJs, R};
use crate::segment::now_ms;
use crate::snowflake::Snowflake;

/// One leased generator's engine (used by `Snowflake.fromRegistry`; not part of the public
/// API).
#[napi(js_name = "__LeaseEngine")]
pub struct LeaseEngine {
    inner: Mutex<HostedLease<SystemClock>>,
}

impl LeaseEngine {
    fn lock(&self) -> std::sync::MutexGuard<'_, HostedLease<SystemClock>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A registry's (or a script counter's) answer: arrays (the `peers` list and its
/// entries) as lists.
pub(crate) fn answer_of(env: &Env, v: &Unknown<'_>) -> R<Value> {
    let mut is_array = false;
    unsafe { sys::napi_is_array(env.raw(), v.raw(), &mut is_array) };
    if !is_array {
        return value_of(env, v, "answer");
    }
    let arr: Array = unsafe { v.cast() }?;
    let mut items = Vec::with_capacity(arr.len() as usize);
    for i in 0..arr.len() {
        let item: Option<Unknown<'_>> = arr.get(i)?;
        items.push(match item {
            Some(item) => answer_of(env, &item)?,
            None => Value::Null,
        });
    }
    Ok(Value::List(items))
}

#[napi]
impl LeaseEngine {
    /// `options`: the snowflake options without `workerId`, and the lease options.
    #[napi(
        constructor,
        ts_args_type = "options: LeasedSnowflakeOptions | undefined, owner: string"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>, owner: String) -> Result<LeaseEngine> {
        errors::run(&env, || {
            let pairs = convert::pairs_of(&env, options.as_ref(), &[])?;
            let times = (now_ms(), SystemClock.now_ms());
            let nonce = segflake::lease::fresh_nonce();
            let inner = HostedLease::new(pairs, Dialect::JS, owner, nonce, times)?;
            Ok(LeaseEngine {
                inner: Mutex::new(inner),
            })
        })
    }

    /// The next step at wall time `nowMs`: `{step: 'call', id, name, args}`, `{step:
    /// 'sleep', ms}`, `{step: 'ready', workerId}`, `{step: 'failed', code, message}` or
    /// `{step: 'closed'}`.
    #[napi(ts_return_type = "LeaseStep")]
    pub fn poll(&self, now_ms_wall: f64) -> Js {
        Js(self
            .lock()
            .poll(now_ms(), now_ms_wall as u64, SystemClock, Spelling::Camel))
    }

    /// The answer to call `id`: the registry's value, or the text of the error it threw
    /// (`error` given).
    #[napi(ts_args_type = "id: number, nowMs: number, value: unknown, error?: string")]
    pub fn answer(
        &self,
        env: Env,
        id: f64,
        now_ms_wall: f64,
        value: Unknown<'_>,
        error: Option<String>,
    ) -> Result<()> {
        let answer = match error {
            Some(e) => Err(e),
            None => Ok(answer_of(&env, &value).js(&env)?),
        };
        self.lock()
            .answer(id as u64, now_ms(), now_ms_wall as u64, answer);
        Ok(())
    }

    /// The generator, once `ready` was returned.
    #[napi]
    pub fn generator(&self) -> Option<Snowflake> {
        let inner = self.lock().generator()?;
        Some(Snowflake { inner })
    }

    /// Stops issuing IDs (sealing the generator) and starts the release; keep polling until
    /// `closed`.
    #[napi]
    pub fn close(&self) {
        self.lock().close();
    }

    /// The lease's state (`LeaseStats`).
    #[napi(ts_return_type = "LeaseStats")]
    pub fn stats<'a>(&self, env: Env, now_ms_wall: f64) -> Result<Object<'a>> {
        let stats = self.lock().stats(now_ms(), now_ms_wall as u64);
        convert::record(&env, &stats)
    }
}

/// The Redis settings `segflake/registries` reads at start-up (`CONFIG GET` each); not part
/// of the public API.
#[napi(js_name = "__redisDurabilitySettings")]
pub fn redis_durability_settings() -> Vec<&'static str> {
    segflake::lease::schema::redis::DURABILITY_SETTINGS.to_vec()
}

/// The warning for a Redis whose `CONFIG GET` replies are `flat` (`[name, value, ...]`), or
/// null when it keeps the marks; not part of the public API.
#[napi(js_name = "__redisDurabilityWarning")]
pub fn redis_durability_warning(flat: Vec<String>) -> Option<String> {
    segflake::lease::schema::redis::durability_warning_of_replies(&flat)
}

/// Any of the core's registry protocols (`RegistryProtocol`: ZooKeeper in Leaf's layout,
/// etcd, Redis, PostgreSQL, MySQL): `start` a registry call, perform each request it returns
/// and hand the client's reply to `resume`, until a step carries `answer` or `error`. Used by
/// `segflake/registries`; not part of the public API.
#[napi(js_name = "__RegistryProtocol")]
pub struct RegistryProtocol {
    inner: segflake::lease::conversation::RegistryProtocol,
}

/// How deep a protocol value nests at most (a reply's rows of columns are three levels).
const MAX_DEPTH: u32 = 16;

/// A protocol value (a config, a call's arguments, a context, a reply) as a host value:
/// arrays as lists and plain objects as maps at every level (their function-valued keys
/// skipped), anything else as [`value_of`] reads it.
fn protocol_value(env: &Env, v: &Unknown<'_>, name: &str, depth: u32) -> R<Value> {
    if depth > MAX_DEPTH {
        return Ok(Value::Opaque(format!(
            "a value nested over {MAX_DEPTH} deep"
        )));
    }
    let (e, raw) = (env.raw(), v.raw());
    let (mut is_array, mut is_date) = (false, false);
    unsafe { sys::napi_is_array(e, raw, &mut is_array) };
    if is_array {
        let arr: Array = unsafe { v.cast() }?;
        let mut items = Vec::with_capacity(arr.len() as usize);
        for i in 0..arr.len() {
            let item: Option<Unknown<'_>> = arr.get(i)?;
            items.push(match item {
                Some(item) => protocol_value(env, &item, name, depth + 1)?,
                None => Value::Null,
            });
        }
        return Ok(Value::List(items));
    }
    unsafe { sys::napi_is_date(e, raw, &mut is_date) };
    if is_date || v.get_type().map_err(Fail::from)? != ValueType::Object {
        return value_of(env, v, name);
    }
    let obj: Object<'_> = unsafe { v.cast() }?;
    let mut pairs = Vec::new();
    for key in Object::keys(&obj)? {
        let field: Unknown<'_> = obj.get_named_property(&key)?;
        if field.get_type().map_err(Fail::from)? != ValueType::Function {
            let value = protocol_value(env, &field, &key, depth + 1)?;
            pairs.push((key, value));
        }
    }
    Ok(Value::Map(pairs))
}

#[napi]
impl RegistryProtocol {
    /// The protocol of `kind` (`zookeeper`, `etcd`, `redis`, `postgres`, `mysql`) with
    /// `config`: ZooKeeper `{root?, identity}`, etcd `{prefix?}`, Redis `{prefix?, wait_ms}`,
    /// SQL `{host_name}`. Throws `InvalidArgumentError` with the core's reason when either
    /// is invalid.
    #[napi(
        constructor,
        ts_args_type = "kind: string, config?: Record<string, unknown> | null"
    )]
    pub fn new(
        env: Env,
        kind: Unknown<'_>,
        config: Option<Unknown<'_>>,
    ) -> Result<RegistryProtocol> {
        errors::run(&env, || {
            let kind = convert::string_of(&env, &kind, "kind")?;
            let config = match &config {
                Some(config) => protocol_value(&env, config, "config", 0)?,
                None => Value::Null,
            };
            segflake::lease::conversation::RegistryProtocol::new(&kind, &config)
                .map(|inner| RegistryProtocol { inner })
                .map_err(|e| Fail::arg(&format!("{kind} registry"), e))
        })
    }

    /// Begins registry call `name` (`claim`, `renew`, `release`, `peers`) with its arguments
    /// in call order; `context` is ZooKeeper's `{session, now_ms}` (the client's session ID as
    /// a bigint or a safe integer, the wall time), ignored by the others. Drops a conversation
    /// left unfinished. Returns the first step: a request `{op, ...}`, `{answer}` or
    /// `{error}`.
    #[napi(
        ts_args_type = "name: string, args: unknown[], context?: Record<string, unknown> | null",
        ts_return_type = "Record<string, unknown>"
    )]
    pub fn start(
        &mut self,
        env: Env,
        name: Unknown<'_>,
        args: Unknown<'_>,
        context: Option<Unknown<'_>>,
    ) -> Result<Js> {
        errors::run(&env, || {
            let name = convert::string_of(&env, &name, "name")?;
            let args = match protocol_value(&env, &args, "args", 0)? {
                Value::List(items) => items,
                other => return Err(Fail::arg("args", format!("got {other}; expected an array"))),
            };
            let context = match &context {
                Some(context) => protocol_value(&env, context, "context", 0)?,
                None => Value::Null,
            };
            Ok(Js(self.inner.start_value(&name, &args, &context)))
        })
    }

    /// The client's reply to the last request (the protocol's host value: `null` or an
    /// object), and the next step.
    #[napi(
        ts_args_type = "reply: unknown",
        ts_return_type = "Record<string, unknown>"
    )]
    pub fn resume(&mut self, env: Env, reply: Unknown<'_>) -> Result<Js> {
        errors::run(&env, || {
            let reply = protocol_value(&env, &reply, "reply", 0)?;
            Ok(Js(self.inner.resume_value(&reply)))
        })
    }

    /// What the adapter may need: ZooKeeper `{identity, root, worker_id}`, etcd `{prefix,
    /// leases}` (the etcd leases held now, to revoke at close), Redis `{}`, SQL `{schema}`
    /// (to run on each new connection).
    #[napi(ts_return_type = "Record<string, unknown>")]
    pub fn describe(&self) -> Js {
        Js(self.inner.describe())
    }
}
