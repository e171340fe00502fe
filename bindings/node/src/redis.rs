//! The core's Redis deployment rules (`segflake::redis`) for the Redis adapters of
//! `segflake/stores/redis`, `segflake/registries` and `segflake/counters`: how a URL names a
//! server, a Sentinel-monitored primary or a Cluster, and how many replicas a write must
//! reach. Translation only; not part of the public API.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use segflake::host::Value;
use segflake::redis::{min_replicas_to_write, RedisTarget, ReplicaWait};

use crate::convert::{self, Js};
use crate::errors::{self, Fail};

/// The Redis URL `url` as the core reads it, as JSON text: `{mode: "single" | "sentinel" |
/// "cluster", service, tls, nodes: [[host, port], ...], db, user, password, replicas, ca}`
/// (absent values `null`). Throws `InvalidArgumentError` saying what is wrong and listing
/// the allowed spellings.
#[napi(js_name = "__redisTarget", ts_args_type = "url: string")]
pub fn redis_target(env: Env, url: Unknown<'_>) -> Result<String> {
    errors::run(&env, || {
        let url = convert::string_of(&env, &url, "Redis URL")?;
        RedisTarget::parse(&url)
            .map(|target| target.to_json())
            .map_err(|e| Fail::from(segflake::Error::invalid_argument("Redis URL", e)))
    })
}

/// The replica wait of an adapter whose calls are bounded by `timeoutMs`: `configured` is the
/// URL's `replicas=N` (null: not given), `minReplicasToWrite` the server's `CONFIG GET
/// min-replicas-to-write` reply (`[]` when refused), `connectedReplicas` the replicas `ROLE`
/// listed. Returns `{replicas, timeoutMs}`, `WAIT`'s two arguments (no wait when `replicas`
/// is 0).
#[napi(
    js_name = "__replicaWait",
    ts_args_type = "configured: number | null | undefined, minReplicasToWrite: string[], connectedReplicas: number, timeoutMs: number",
    ts_return_type = "{ replicas: number, timeoutMs: number }"
)]
pub fn replica_wait(
    env: Env,
    configured: Option<Unknown<'_>>,
    min_replicas_reply: Vec<String>,
    connected_replicas: Unknown<'_>,
    timeout_ms: Unknown<'_>,
) -> Result<Js> {
    errors::run(&env, || {
        let configured = match &configured {
            Some(v) if !matches!(convert::value_of(&env, v, "configured")?, Value::Null) => {
                Some(convert::u64_of(&env, v, "configured")?)
            }
            _ => None,
        };
        let wait = ReplicaWait::resolve(
            configured,
            min_replicas_to_write(&min_replicas_reply),
            convert::u64_of(&env, &connected_replicas, "connectedReplicas")?,
            convert::u64_of(&env, &timeout_ms, "timeoutMs")?,
        );
        Ok(Js(Value::Map(vec![
            ("replicas".into(), Value::uint(wait.replicas)),
            ("timeoutMs".into(), Value::uint(wait.timeout_ms)),
        ])))
    })
}

/// `null` when `acked` replicas (`WAIT`'s answer) are enough for the wait `{replicas,
/// timeoutMs}`; else the core's message for the write `what`: nothing may be issued from it.
#[napi(
    js_name = "__replicaWaitCheck",
    ts_args_type = "replicas: number, timeoutMs: number, what: string, acked: number"
)]
pub fn replica_wait_check(
    env: Env,
    replicas: Unknown<'_>,
    timeout_ms: Unknown<'_>,
    what: Unknown<'_>,
    acked: Unknown<'_>,
) -> Result<Option<String>> {
    errors::run(&env, || {
        let wait = ReplicaWait {
            replicas: convert::u64_of(&env, &replicas, "replicas")?,
            timeout_ms: convert::u64_of(&env, &timeout_ms, "timeoutMs")?,
        };
        let what = convert::string_of(&env, &what, "what")?;
        Ok(wait
            .check(&what, convert::u64_of(&env, &acked, "acked")?)
            .err())
    })
}
