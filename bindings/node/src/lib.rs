//! Node bindings for segflake (napi). All ID logic lives in the `segflake` crate; this
//! crate translates JS values, errors and callbacks.
#![deny(clippy::all)]

mod codec;
mod convert;
mod errors;
mod fast;
mod layout;
mod segment;
mod snowflake;

use napi_derive::napi;

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
