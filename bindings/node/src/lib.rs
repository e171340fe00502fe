//! Node bindings for segflake (napi). All ID logic lives in the `segflake` crate; this
//! crate translates JS values, errors and callbacks.
#![deny(clippy::all)]

mod codec;
mod convert;
mod errors;
mod fast;
mod layout;
mod lease;
mod redis;
mod segment;
mod snowflake;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use segflake::host::{Dialect, Value};

/// The largest batch `nextIds` accepts (16,777,216).
#[napi]
pub const MAX_BATCH: u32 = segflake::MAX_BATCH as u32;

/// The version of the segflake core this addon was built from.
#[napi]
pub fn core_version() -> &'static str {
    segflake::VERSION
}

/// Does nothing and returns `0n`: the cost floor of a native call returning a bigint,
/// for benchmarks.
#[napi(js_name = "__noop", ts_return_type = "bigint")]
pub fn noop() -> u64 {
    0
}

/// The settings the core accepts for the options set `set` (`"layout"`, `"snowflake"`,
/// `"segment"`, `"serial"`) from `input`, validated as of `nowMs`; throws the typed error
/// otherwise. For the shared option vectors; not part of the public API.
#[napi(js_name = "__options", ts_return_type = "Record<string, unknown>")]
pub fn options(
    env: Env,
    set: String,
    input: Unknown<'_>,
    now_ms: Unknown<'_>,
) -> Result<convert::Js> {
    errors::run(&env, || {
        let now = convert::u64_of(&env, &now_ms, "nowMs")?;
        let pairs = convert::pairs_of(&env, Some(&input), &[])?;
        Ok(convert::Js(Value::Map(segflake::catalog::settings_of(
            &set,
            pairs,
            Dialect::JS,
            now,
        )?)))
    })
}

/// The core's option and record tables as JSON text (`{ options: {set: [...]}, records:
/// {Name: [...]} }`), for checking the type declarations; not part of the public API.
#[napi(js_name = "__tables")]
pub fn tables() -> String {
    segflake::catalog::tables_json()
}

/// The Redis scripts and SQL statements the registry and store adapters send, as JSON text
/// (`{ registries: {registry: {call: text}}, segment_stores: {store: {call: text}} }`), the
/// same call as segflake-wasm's; not part of the public API.
#[napi(js_name = "__statements")]
pub fn statements() -> String {
    segflake::catalog::statements_json()
}
