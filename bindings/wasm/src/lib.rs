//! The WebAssembly binding of segflake, published as the `segflake-wasm` npm package.
//!
//! Only type translation lives here: every ID rule is in the `segflake` core. Integers
//! arrive as `JsValue` and are range-checked (wasm-bindgen would wrap a negative `bigint`
//! into a huge `u64`), errors become the package's typed JS errors (see [`errors`]), and
//! time comes from `Date.now()`. The clock and the per-ID paths are in
//! [`segflake_wasm_hot`], compiled for speed while this crate is compiled for size.

pub mod codec;
pub mod convert;
pub mod errors;
pub mod layout;
#[cfg(feature = "full")]
pub mod lease;
#[cfg(feature = "full")]
pub mod redis;
#[cfg(feature = "full")]
pub mod segment;
pub mod snowflake;

#[cfg(feature = "testing")]
use segflake::host::{Dialect, Value};
use wasm_bindgen::prelude::*;

#[cfg(feature = "testing")]
use crate::errors::IntoJs;

/// The module's heap: talc, growing WebAssembly memory as it needs (the module runs on one
/// thread: no `atomics` target feature).
#[cfg(all(not(target_feature = "atomics"), target_family = "wasm"))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// The version of the segflake core inside this module.
#[wasm_bindgen(js_name = coreVersion)]
pub fn core_version() -> String {
    segflake::VERSION.to_string()
}

/// The preset names.
#[wasm_bindgen(unchecked_return_type = "PresetName[]")]
pub fn presets() -> Vec<String> {
    segflake::Preset::ALL
        .iter()
        .map(|p| p.name().to_string())
        .collect()
}

/// `[MAX_BATCH, BASE62_LENGTH, BASE32_LENGTH]`, read once at start-up into the package's
/// constants.
#[wasm_bindgen(js_name = "__constants")]
pub fn constants() -> Vec<u32> {
    vec![
        segflake::MAX_BATCH as u32,
        segflake::codec::BASE62_LEN as u32,
        segflake::codec::BASE32_LEN as u32,
    ]
}

/// The settings the core accepts for the options set `set` (`"layout"`, `"snowflake"`,
/// `"segment"`, `"serial"`) from `input`, validated as of `nowMs`; throws the typed error
/// otherwise. For the shared option vectors, in the tests' build only (`testing`).
#[cfg(feature = "testing")]
#[wasm_bindgen(js_name = "__options")]
pub fn options(set: String, input: JsValue, now_ms: JsValue) -> Result<JsValue, JsValue> {
    let run = || {
        let now = convert::u64_of(&now_ms, "nowMs")?;
        let pairs = convert::pairs_of(&input, &[])?;
        segflake::catalog::settings_of(&set, pairs, Dialect::JS, now)
    };
    run().map(|s| convert::js_of(Value::Map(s))).js()
}

/// The Redis settings `segflake/registries` reads at start-up; not part of the public API.
#[cfg(feature = "full")]
#[wasm_bindgen(js_name = "__redisDurabilitySettings")]
pub fn redis_durability_settings() -> Vec<String> {
    let settings = segflake::lease::schema::redis::DURABILITY_SETTINGS;
    settings.iter().map(|s| (*s).to_owned()).collect()
}

/// The warning for a Redis whose `CONFIG GET` replies are `flat` (`[name, value, ...]`), or
/// undefined when it keeps the marks; not part of the public API.
#[cfg(feature = "full")]
#[wasm_bindgen(js_name = "__redisDurabilityWarning")]
pub fn redis_durability_warning(flat: Vec<String>) -> Option<String> {
    segflake::lease::schema::redis::durability_warning_of_replies(&flat)
}

/// The Redis scripts and SQL statements the registry and store adapters send, as JSON text
/// (`{ registries: {registry: {call: text}}, segment_stores: {store: {call: text}} }`); not
/// part of the public API.
#[cfg(feature = "full")]
#[wasm_bindgen(js_name = "__statements")]
pub fn statements() -> String {
    segflake::catalog::statements_json()
}

/// The core's option and record tables and the statements as JSON text (`{ options: {set:
/// [...]}, records: {Name: [...]}, registries, segment_stores }`), for checking the type
/// declarations, in the tests' build only (`testing`).
#[cfg(feature = "testing")]
#[wasm_bindgen(js_name = "__tables")]
pub fn tables() -> String {
    segflake::catalog::tables_json()
}
