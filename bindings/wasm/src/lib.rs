//! The WebAssembly binding of segflake, published as the `segflake-wasm` npm package.
//!
//! Only type translation lives here: every ID rule is in the `segflake` core. Integers
//! arrive as `JsValue` and are range-checked (wasm-bindgen would wrap a negative `bigint`
//! into a huge `u64`), errors become the package's typed JS errors (see [`errors`]), and
//! time comes from `Date.now()` (see [`clock`]).

pub mod clock;
pub mod codec;
pub mod convert;
pub mod errors;
pub mod layout;
pub mod segment;
pub mod snowflake;

use wasm_bindgen::prelude::*;

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
