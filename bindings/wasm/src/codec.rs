//! Text forms of IDs and the obfuscator.

use segflake::{codec, worker, Error, Format, Obfuscator};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::convert::{self, describe, to_u64, Accept};
use crate::errors::{to_js, IntoJs};

fn format_of(v: &JsValue) -> Result<Format, Error> {
    if v.is_undefined() || v.is_null() {
        return Ok(Format::Decimal);
    }
    Format::from_name(&convert::to_name(v, "format", "decimal, base62, base32")?)
}

fn text_of(v: &JsValue, format: Format) -> Result<String, Error> {
    v.as_string().ok_or_else(|| Error::InvalidArgument {
        name: "text".into(),
        reason: format!(
            "got {}; allowed: a string holding a {} ID",
            describe(v),
            format.name()
        ),
    })
}

fn id_of(v: &JsValue) -> Result<u64, Error> {
    to_u64(v, "id", Accept::Id, u64::MAX)
}

/// The text form of `id`: `"decimal"` (default), `"base62"` (11 chars) or `"base32"`
/// (13 chars, Crockford). The fixed-width forms sort like the numbers.
#[wasm_bindgen]
pub fn encode(id: JsValue, format: JsValue) -> Result<String, JsValue> {
    let format = format_of(&format).js()?;
    Ok(format.encode(id_of(&id).js()?))
}

/// Parses text made by `encode` in the same format (default `"decimal"`).
#[wasm_bindgen]
pub fn parse(text: JsValue, format: JsValue) -> Result<u64, JsValue> {
    let format = format_of(&format).js()?;
    format.parse(&text_of(&text, format).js()?).js()
}

/// The decimal string of an ID.
#[wasm_bindgen(js_name = encodeDecimal)]
pub fn encode_decimal(id: JsValue) -> Result<String, JsValue> {
    Ok(Format::Decimal.encode(id_of(&id).js()?))
}

/// Parses a decimal ID (digits only, at most 2^64-1).
#[wasm_bindgen(js_name = parseDecimal)]
pub fn parse_decimal(text: JsValue) -> Result<u64, JsValue> {
    codec::parse_decimal(&text_of(&text, Format::Decimal).js()?).js()
}

/// The 11-character base62 form of `id`.
#[wasm_bindgen(js_name = encodeBase62)]
pub fn encode_base62(id: JsValue) -> Result<String, JsValue> {
    Ok(codec::encode_base62(id_of(&id).js()?))
}

/// Parses an 11-character base62 ID.
#[wasm_bindgen(js_name = parseBase62)]
pub fn parse_base62(text: JsValue) -> Result<u64, JsValue> {
    codec::parse_base62(&text_of(&text, Format::Base62).js()?).js()
}

/// The 13-character Crockford base32 form of `id`.
#[wasm_bindgen(js_name = encodeBase32)]
pub fn encode_base32(id: JsValue) -> Result<String, JsValue> {
    Ok(codec::encode_base32(id_of(&id).js()?))
}

/// Parses a 13-character Crockford base32 ID (case-insensitive; I/L read as 1, O as 0).
#[wasm_bindgen(js_name = parseBase32)]
pub fn parse_base32(text: JsValue) -> Result<u64, JsValue> {
    codec::parse_base32(&text_of(&text, Format::Base32).js()?).js()
}

/// Parses Unix milliseconds or an ISO-8601 UTC time (`2025-01-01`,
/// `2025-01-01T00:00:00.000Z`) into Unix milliseconds.
#[wasm_bindgen(js_name = parseTimeMs)]
pub fn parse_time_ms(text: JsValue) -> Result<f64, JsValue> {
    let text = convert::to_name(&text, "time", "such as \"2025-01-01T00:00:00Z\"").js()?;
    let ms = segflake::datetime::parse_time_ms(&text).js()?;
    if ms > convert::MAX_SAFE_INTEGER {
        return Err(to_js(Error::InvalidArgument {
            name: "time".into(),
            reason: format!("{ms} is above Number.MAX_SAFE_INTEGER milliseconds"),
        }));
    }
    Ok(convert::num(ms))
}

/// Formats Unix milliseconds as ISO-8601 UTC (`2025-01-01T00:00:00.000Z`).
#[wasm_bindgen(js_name = formatTimeMs)]
pub fn format_time_ms(unix_ms: JsValue) -> Result<String, JsValue> {
    let ms = to_u64(&unix_ms, "unixMs", Accept::Integer, u64::MAX).js()?;
    Ok(segflake::datetime::format_iso8601_ms(ms))
}

/// A Kubernetes StatefulSet ordinal from a hostname: `web-7` → 7.
#[wasm_bindgen(js_name = workerIdFromHostname)]
pub fn worker_id_from_hostname(hostname: JsValue) -> Result<f64, JsValue> {
    let name = convert::to_name(&hostname, "hostname", "such as \"web-7\"").js()?;
    worker::worker_id_from_hostname(&name)
        .map(convert::num)
        .js()
}

/// The low `workerBits` bits of a dotted-quad IPv4 address.
#[wasm_bindgen(js_name = workerIdFromIpv4)]
pub fn worker_id_from_ipv4(address: JsValue, worker_bits: JsValue) -> Result<f64, JsValue> {
    let address = convert::to_name(&address, "address", "such as \"10.0.3.7\"").js()?;
    let bits = to_u64(&worker_bits, "workerBits", Accept::Integer, 32).js()?;
    worker::worker_id_from_ipv4(&address, bits as u8)
        .map(convert::num)
        .js()
}

fn key_bytes(key: &JsValue) -> Result<[u8; 16], Error> {
    let invalid = |reason: String| Error::InvalidArgument {
        name: "key".into(),
        reason,
    };
    let allowed = "allowed: a Uint8Array of exactly 16 bytes or a string of exactly 32 hex digits";
    if let Some(s) = key.as_string() {
        let digits = s.as_bytes();
        if digits.len() != 32 || !digits.iter().all(u8::is_ascii_hexdigit) {
            return Err(invalid(format!(
                "the string has {} characters{}; {allowed}",
                s.chars().count(),
                if digits.iter().all(u8::is_ascii_hexdigit) {
                    ""
                } else {
                    ", not all hex digits"
                }
            )));
        }
        let mut out = [0u8; 16];
        for (i, pair) in digits.chunks(2).enumerate() {
            let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
            out[i] = hex(pair[0]) << 4 | hex(pair[1]);
        }
        return Ok(out);
    }
    if let Some(arr) = key.dyn_ref::<js_sys::Uint8Array>() {
        let bytes = arr.to_vec();
        return bytes.as_slice().try_into().map_err(|_| {
            invalid(format!(
                "the key is {} bytes; it must be exactly 16 bytes (128 bits); {allowed}",
                bytes.len()
            ))
        });
    }
    Err(invalid(format!("got {}; {allowed}", describe(key))))
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
            inner: Obfuscator::new(key_bytes(&key).js()?),
        })
    }

    /// Maps an ID below 2^63 to another ID below 2^63.
    pub fn obfuscate(&self, id: JsValue) -> Result<u64, JsValue> {
        self.inner.obfuscate(id_of(&id).js()?).js()
    }

    /// The inverse of `obfuscate`.
    pub fn deobfuscate(&self, id: JsValue) -> Result<u64, JsValue> {
        self.inner.deobfuscate(id_of(&id).js()?).js()
    }
}
