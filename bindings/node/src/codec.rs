//! Text forms of IDs, the obfuscator and the worker-ID helpers.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use segflake::{codec, Format};

use crate::convert;
use crate::errors::{IntoJs, R};

fn format_of(format: Option<&Unknown<'_>>) -> R<Format> {
    match format.filter(|v| !convert::is_absent(v)) {
        None => Ok(Format::Decimal),
        Some(v) => {
            let s = convert::string_of(v, "format", "\"decimal\", \"base62\" or \"base32\"")?;
            Ok(Format::from_name(&s)?)
        }
    }
}

fn text_of(v: &Unknown<'_>) -> R<String> {
    convert::string_of(v, "text", "a string")
}

/// The text form of an ID: `"decimal"` (default), `"base62"` (11 characters) or
/// `"base32"` (13 characters, Crockford). The fixed-width forms sort like the numbers.
#[napi]
pub fn encode(
    env: Env,
    #[napi(ts_arg_type = "IdInput")] id: Unknown<'_>,
    #[napi(ts_arg_type = "IdFormat")] format: Option<Unknown<'_>>,
) -> Result<String> {
    let run =
        || -> R<String> { Ok(format_of(format.as_ref())?.encode(convert::id_of(&id, "id")?)) };
    run().js(&env)
}

/// Parses text made by `encode` in the same format. Throws `ParseError` saying which
/// character at which position is wrong.
#[napi(ts_return_type = "bigint")]
pub fn parse(
    env: Env,
    #[napi(ts_arg_type = "string")] text: Unknown<'_>,
    #[napi(ts_arg_type = "IdFormat")] format: Option<Unknown<'_>>,
) -> Result<u64> {
    let run = || -> R<u64> { Ok(format_of(format.as_ref())?.parse(&text_of(&text)?)?) };
    run().js(&env)
}

macro_rules! named_codec {
    ($enc:ident, $dec:ident, $format:expr, $doc_enc:literal, $doc_dec:literal) => {
        #[doc = $doc_enc]
        #[napi]
        pub fn $enc(env: Env, #[napi(ts_arg_type = "IdInput")] id: Unknown<'_>) -> Result<String> {
            let run = || -> R<String> { Ok($format.encode(convert::id_of(&id, "id")?)) };
            run().js(&env)
        }

        #[doc = $doc_dec]
        #[napi(ts_return_type = "bigint")]
        pub fn $dec(env: Env, #[napi(ts_arg_type = "string")] text: Unknown<'_>) -> Result<u64> {
            let run = || -> R<u64> { Ok($format.parse(&text_of(&text)?)?) };
            run().js(&env)
        }
    };
}

named_codec!(
    encode_decimal,
    parse_decimal,
    Format::Decimal,
    "The decimal string of an ID.",
    "Parses a decimal ID: digits only, at most 2^64-1."
);
named_codec!(
    encode_base62,
    parse_base62,
    Format::Base62,
    "The 11-character base62 form (`0-9A-Za-z`); sorts like the number.",
    "Parses an 11-character base62 ID."
);
named_codec!(
    encode_base32,
    parse_base32,
    Format::Base32,
    "The 13-character Crockford base32 form; sorts like the number.",
    "Parses a 13-character Crockford base32 ID (case-insensitive; I, L read as 1 and O as 0)."
);

/// Length of a base62 ID.
#[napi]
pub const BASE62_LENGTH: u32 = codec::BASE62_LEN as u32;
/// Length of a base32 ID.
#[napi]
pub const BASE32_LENGTH: u32 = codec::BASE32_LEN as u32;

/// A keyed, reversible permutation of the IDs below 2^63 (Speck64/128 with
/// cycle-walking), for IDs shown to the public. The same key gives the same mapping in
/// every segflake binding.
#[napi]
pub struct Obfuscator {
    inner: segflake::Obfuscator,
}

#[napi]
impl Obfuscator {
    /// `key`: exactly 16 bytes (a `Uint8Array`/`Buffer`) or a string of 32 hex digits.
    #[napi(constructor)]
    pub fn new(
        env: Env,
        #[napi(ts_arg_type = "Uint8Array | string")] key: Unknown<'_>,
    ) -> Result<Obfuscator> {
        let run = || -> R<Obfuscator> {
            let bytes = convert::key_bytes(&env, &key)?;
            Ok(Obfuscator {
                inner: segflake::Obfuscator::from_key_bytes(&bytes)?,
            })
        };
        run().js(&env)
    }

    /// Maps an ID below 2^63 to another ID below 2^63.
    #[napi(ts_return_type = "bigint")]
    pub fn obfuscate(
        &self,
        env: Env,
        #[napi(ts_arg_type = "IdInput")] id: Unknown<'_>,
    ) -> Result<u64> {
        let run = || -> R<u64> { Ok(self.inner.obfuscate(convert::id_of(&id, "id")?)?) };
        run().js(&env)
    }

    /// The inverse of `obfuscate`.
    #[napi(ts_return_type = "bigint")]
    pub fn deobfuscate(
        &self,
        env: Env,
        #[napi(ts_arg_type = "IdInput")] id: Unknown<'_>,
    ) -> Result<u64> {
        let run = || -> R<u64> { Ok(self.inner.deobfuscate(convert::id_of(&id, "id")?)?) };
        run().js(&env)
    }
}

/// The ordinal of a Kubernetes StatefulSet pod from its hostname: `web-7` → 7.
/// Pass `os.hostname()`.
#[napi]
pub fn worker_id_from_hostname(
    env: Env,
    #[napi(ts_arg_type = "string")] hostname: Unknown<'_>,
) -> Result<f64> {
    let run = || -> R<f64> {
        let h = convert::string_of(&hostname, "hostname", "a string such as os.hostname()")?;
        Ok(convert::num(segflake::worker_id_from_hostname(&h)?))
    };
    run().js(&env)
}

/// The low `workerBits` bits of a dotted-quad IPv4 address: `10.0.3.7` with 10 bits → 775.
#[napi]
pub fn worker_id_from_ipv4(
    env: Env,
    #[napi(ts_arg_type = "string")] address: Unknown<'_>,
    #[napi(ts_arg_type = "number")] worker_bits: Unknown<'_>,
) -> Result<f64> {
    let run = || -> R<f64> {
        let a = convert::string_of(
            &address,
            "address",
            "a dotted-quad IPv4 address such as 10.0.3.7",
        )?;
        let bits = convert::small_of(&worker_bits, "workerBits", 32)? as u8;
        Ok(convert::num(segflake::worker_id_from_ipv4(&a, bits)?))
    };
    run().js(&env)
}

/// Parses Unix milliseconds or an ISO-8601 UTC time (`2025-01-01`,
/// `2025-01-01T00:00:00.000Z`) into Unix milliseconds.
#[napi]
pub fn parse_time_ms(env: Env, #[napi(ts_arg_type = "string")] text: Unknown<'_>) -> Result<f64> {
    let run = || -> R<f64> {
        let t = convert::string_of(&text, "time", "a string")?;
        Ok(convert::num(segflake::datetime::parse_time_ms(&t)?))
    };
    run().js(&env)
}

/// Formats Unix milliseconds as ISO-8601 UTC (`2025-01-01T00:00:00.000Z`).
#[napi]
pub fn format_time_ms(
    env: Env,
    #[napi(ts_arg_type = "number | bigint")] unix_ms: Unknown<'_>,
) -> Result<String> {
    let run = || -> R<String> {
        Ok(segflake::datetime::format_iso8601_ms(convert::u64_of(
            &unix_ms, "unixMs",
        )?))
    };
    run().js(&env)
}
