//! Text forms of IDs and the obfuscator.

use segflake::{codec, worker, Error, Format, Obfuscator};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::convert::{self, id_of, string_of};
use crate::errors::{to_js, IntoJs};

fn format_of(v: &JsValue) -> Result<Format, Error> {
    match v.is_undefined() || v.is_null() {
        true => Ok(Format::Decimal),
        false => Format::from_name(&string_of(v, "format")?),
    }
}

/// The text form of `id`: `"decimal"` (default), `"base62"` (11 chars) or `"base32"`
/// (13 chars, Crockford). The fixed-width forms sort like the numbers.
#[wasm_bindgen]
pub fn encode(id: JsValue, format: JsValue) -> Result<String, JsValue> {
    let format = format_of(&format).js()?;
    Ok(format.encode(id_of(&id, "id").js()?))
}

/// Parses text made by `encode` in the same format (default `"decimal"`).
#[wasm_bindgen]
pub fn parse(text: JsValue, format: JsValue) -> Result<u64, JsValue> {
    let format = format_of(&format).js()?;
    format.parse(&string_of(&text, "text").js()?).js()
}

/// The decimal string of an ID.
#[wasm_bindgen(js_name = encodeDecimal)]
pub fn encode_decimal(id: JsValue) -> Result<String, JsValue> {
    Ok(Format::Decimal.encode(id_of(&id, "id").js()?))
}

/// Parses a decimal ID (digits only, at most 2^64-1).
#[wasm_bindgen(js_name = parseDecimal)]
pub fn parse_decimal(text: JsValue) -> Result<u64, JsValue> {
    codec::parse_decimal(&string_of(&text, "text").js()?).js()
}

/// The 11-character base62 form of `id`.
#[wasm_bindgen(js_name = encodeBase62)]
pub fn encode_base62(id: JsValue) -> Result<String, JsValue> {
    Ok(codec::encode_base62(id_of(&id, "id").js()?))
}

/// Parses an 11-character base62 ID.
#[wasm_bindgen(js_name = parseBase62)]
pub fn parse_base62(text: JsValue) -> Result<u64, JsValue> {
    codec::parse_base62(&string_of(&text, "text").js()?).js()
}

/// The 13-character Crockford base32 form of `id`.
#[wasm_bindgen(js_name = encodeBase32)]
pub fn encode_base32(id: JsValue) -> Result<String, JsValue> {
    Ok(codec::encode_base32(id_of(&id, "id").js()?))
}

/// Parses a 13-character Crockford base32 ID (case-insensitive; I/L read as 1, O as 0).
#[wasm_bindgen(js_name = parseBase32)]
pub fn parse_base32(text: JsValue) -> Result<u64, JsValue> {
    codec::parse_base32(&string_of(&text, "text").js()?).js()
}

/// Parses Unix milliseconds or an ISO-8601 UTC time (`2025-01-01`,
/// `2025-01-01T00:00:00.000Z`) into Unix milliseconds.
#[wasm_bindgen(js_name = parseTimeMs)]
pub fn parse_time_ms(text: JsValue) -> Result<f64, JsValue> {
    let text = string_of(&text, "time").js()?;
    let ms = segflake::datetime::parse_time_ms(&text).js()?;
    if ms > convert::MAX_SAFE_INTEGER {
        let why = format!("{ms} is above Number.MAX_SAFE_INTEGER milliseconds");
        return Err(to_js(Error::invalid_argument("time", why)));
    }
    Ok(convert::num(ms))
}

/// Formats Unix milliseconds as ISO-8601 UTC (`2025-01-01T00:00:00.000Z`).
#[wasm_bindgen(js_name = formatTimeMs)]
pub fn format_time_ms(unix_ms: JsValue) -> Result<String, JsValue> {
    let ms = convert::u64_of(&unix_ms, "unixMs").js()?;
    Ok(segflake::datetime::format_iso8601_ms(ms))
}

/// A Kubernetes StatefulSet ordinal from a hostname: `web-7` → 7.
#[wasm_bindgen(js_name = workerIdFromHostname)]
pub fn worker_id_from_hostname(hostname: JsValue) -> Result<f64, JsValue> {
    let name = string_of(&hostname, "hostname").js()?;
    worker::worker_id_from_hostname(&name)
        .map(convert::num)
        .js()
}

/// The low `workerBits` bits of a dotted-quad IPv4 address.
#[wasm_bindgen(js_name = workerIdFromIpv4)]
pub fn worker_id_from_ipv4(address: JsValue, worker_bits: JsValue) -> Result<f64, JsValue> {
    let address = string_of(&address, "address").js()?;
    let bits = convert::range(&worker_bits, "workerBits", 0, 32).js()?;
    worker::worker_id_from_ipv4(&address, bits as u8)
        .map(convert::num)
        .js()
}

/// A decimal worker ID from `text`, the value of environment variable `name` (`undefined`
/// or `null`: not set; pass `process.env.POD_INDEX`, `Deno.env.get("POD_INDEX")` or a
/// Worker binding), checked against `workerBits` worker bits: `("POD_INDEX", "3", 10)` → 3.
#[wasm_bindgen(js_name = workerIdFromText)]
pub fn worker_id_from_text(
    name: JsValue,
    text: JsValue,
    worker_bits: JsValue,
) -> Result<f64, JsValue> {
    let name = string_of(&name, "name").js()?;
    let text = match text.is_undefined() || text.is_null() {
        true => None,
        false => Some(string_of(&text, "text").js()?),
    };
    let bits = convert::range(&worker_bits, "workerBits", 0, 63).js()?;
    worker::worker_id_from_text(&name, text.as_deref(), bits as u8)
        .map(convert::num)
        .js()
}

/// An obfuscator from a `Uint8Array` of 16 bytes or a string of 32 hex digits.
fn obfuscator_of(key: &JsValue) -> Result<Obfuscator, Error> {
    if let Some(arr) = key.dyn_ref::<js_sys::Uint8Array>() {
        return Obfuscator::from_key_bytes(&arr.to_vec());
    }
    match key.as_string() {
        Some(s) => Obfuscator::from_hex_key(&s),
        None => Err(Error::invalid_argument(
            "key",
            format!(
                "got {}; allowed: a Uint8Array of exactly 16 bytes or a string of exactly 32 \
                 hex digits",
                convert::describe(key)
            ),
        )),
    }
}

/// A keyed, reversible permutation of the IDs below 2^63 (Speck64/128 with
/// cycle-walking): the same key gives the same mapping in every language.
#[wasm_bindgen(js_name = Obfuscator)]
pub struct JsObfuscator {
    inner: Obfuscator,
}

#[wasm_bindgen(js_class = Obfuscator)]
impl JsObfuscator {
    /// `new Obfuscator(key)`: 16 bytes, or 32 hex digits.
    #[wasm_bindgen(constructor)]
    pub fn new(key: JsValue) -> Result<JsObfuscator, JsValue> {
        Ok(JsObfuscator {
            inner: obfuscator_of(&key).js()?,
        })
    }

    /// Maps an ID below 2^63 to another ID below 2^63.
    pub fn obfuscate(&self, id: JsValue) -> Result<u64, JsValue> {
        self.inner.obfuscate(id_of(&id, "id").js()?).js()
    }

    /// The inverse of `obfuscate`.
    pub fn deobfuscate(&self, id: JsValue) -> Result<u64, JsValue> {
        self.inner.deobfuscate(id_of(&id, "id").js()?).js()
    }
}
