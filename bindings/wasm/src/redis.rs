//! The core's Redis deployment rules (`segflake::redis`) for the Redis adapters of the
//! `segflake` package, which runs them on this module where no native addon loads (see the
//! native package's `__redisTarget`, `__replicaWait` and `__replicaWaitCheck`). Translation
//! only; not part of the public API.

use segflake::host::Value;
use segflake::redis::{min_replicas_to_write, RedisTarget, ReplicaWait};
use wasm_bindgen::prelude::*;

use crate::convert;
use crate::errors::IntoJs;

/// The Redis URL `url` as the core reads it, as JSON text; throws `InvalidArgumentError`
/// saying what is wrong and listing the allowed spellings.
#[wasm_bindgen(js_name = "__redisTarget")]
pub fn redis_target(url: JsValue) -> Result<String, JsValue> {
    let run = || {
        let url = convert::string_of(&url, "Redis URL")?;
        RedisTarget::parse(&url)
            .map(|target| target.to_json())
            .map_err(|e| segflake::Error::invalid_argument("Redis URL", e))
    };
    run().js()
}

/// The replica wait `{replicas, timeoutMs}` (see the native package's `__replicaWait`).
#[wasm_bindgen(js_name = "__replicaWait")]
pub fn replica_wait(
    configured: JsValue,
    min_replicas_reply: Vec<String>,
    connected_replicas: JsValue,
    timeout_ms: JsValue,
) -> Result<JsValue, JsValue> {
    let run = || {
        let configured = if configured.is_null() || configured.is_undefined() {
            None
        } else {
            Some(convert::u64_of(&configured, "configured")?)
        };
        let wait = ReplicaWait::resolve(
            configured,
            min_replicas_to_write(&min_replicas_reply),
            convert::u64_of(&connected_replicas, "connectedReplicas")?,
            convert::u64_of(&timeout_ms, "timeoutMs")?,
        );
        Ok(convert::js_of(Value::Map(vec![
            ("replicas".into(), Value::uint(wait.replicas)),
            ("timeoutMs".into(), Value::uint(wait.timeout_ms)),
        ])))
    };
    run().js()
}

/// `undefined` when `acked` replicas are enough for the wait; else the core's message for
/// the write `what` (see the native package's `__replicaWaitCheck`).
#[wasm_bindgen(js_name = "__replicaWaitCheck")]
pub fn replica_wait_check(
    replicas: JsValue,
    timeout_ms: JsValue,
    what: JsValue,
    acked: JsValue,
) -> Result<Option<String>, JsValue> {
    let run = || {
        let wait = ReplicaWait {
            replicas: convert::u64_of(&replicas, "replicas")?,
            timeout_ms: convert::u64_of(&timeout_ms, "timeoutMs")?,
        };
        let what = convert::string_of(&what, "what")?;
        Ok(wait.check(&what, convert::u64_of(&acked, "acked")?).err())
    };
    run().js()
}
