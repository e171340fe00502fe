//! Text forms of IDs, the obfuscator and the worker-ID helpers.

use napi::bindgen_prelude::*;
use napi_derive::napi;
use segflake::{codec, Format};

use segflake::host::Value;

use crate::convert::{self, value_of};
use crate::errors::{run, Fail, R};

fn format_of(env: &Env, format: Option<&Unknown<'_>>) -> R<Format> {
    match format.map(|v| value_of(env, v, "format")).transpose()? {
        None | Some(Value::Null) => Ok(Format::Decimal),
        Some(Value::Str(s)) => Ok(Format::from_name(&s)?),
        Some(other) => Err(Fail::arg(
            "format",
            format!("got {other}; expected \"decimal\", \"base62\" or \"base32\""),
        )),
    }
}

fn text_of(env: &Env, v: &Unknown<'_>) -> R<String> {
    convert::string_of(env, v, "text")
}

/// The text form of an ID: `"decimal"` (default), `"base62"` (11 characters) or
/// `"base32"` (13 characters, Crockford). The fixed-width forms sort like the numbers.
#[napi(ts_args_type = "id: IdInput, format?: IdFormat")]
pub fn encode(env: Env, id: Unknown<'_>, format: Option<Unknown<'_>>) -> Result<String> {
    run(&env, || {
        Ok(format_of(&env, format.as_ref())?.encode(convert::id_of(&env, &id, "id")?))
    })
}

/// Parses text made by `encode` in the same format. Throws `ParseError` saying which
/// character at which position is wrong.
#[napi(
    ts_return_type = "bigint",
    ts_args_type = "text: string, format?: IdFormat"
)]
pub fn parse(env: Env, text: Unknown<'_>, format: Option<Unknown<'_>>) -> Result<u64> {
    run(&env, || {
        Ok(format_of(&env, format.as_ref())?.parse(&text_of(&env, &text)?)?)
    })
}

macro_rules! named_codec {
    ($enc:ident, $dec:ident, $format:expr, $doc_enc:literal, $doc_dec:literal) => {
        #[doc = $doc_enc]
        #[napi]
        pub fn $enc(env: Env, #[napi(ts_arg_type = "IdInput")] id: Unknown<'_>) -> Result<String> {
            run(
                &env,
                || Ok($format.encode(convert::id_of(&env, &id, "id")?)),
            )
        }

        #[doc = $doc_dec]
        #[napi(ts_return_type = "bigint")]
        pub fn $dec(env: Env, #[napi(ts_arg_type = "string")] text: Unknown<'_>) -> Result<u64> {
            run(&env, || Ok($format.parse(&text_of(&env, &text)?)?))
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
    #[napi(constructor, ts_args_type = "key: Uint8Array | string")]
    pub fn new(env: Env, key: Unknown<'_>) -> Result<Obfuscator> {
        run(&env, || {
            Ok(Obfuscator {
                inner: convert::obfuscator_of(&env, &key)?,
            })
        })
    }

    /// Maps an ID below 2^63 to another ID below 2^63.
    #[napi(ts_return_type = "bigint", ts_args_type = "id: IdInput")]
    pub fn obfuscate(&self, env: Env, id: Unknown<'_>) -> Result<u64> {
        run(&env, || {
            Ok(self.inner.obfuscate(convert::id_of(&env, &id, "id")?)?)
        })
    }

    /// The inverse of `obfuscate`.
    #[napi(ts_return_type = "bigint", ts_args_type = "id: IdInput")]
    pub fn deobfuscate(&self, env: Env, id: Unknown<'_>) -> Result<u64> {
        run(&env, || {
            Ok(self.inner.deobfuscate(convert::id_of(&env, &id, "id")?)?)
        })
    }
}

/// The ordinal of a Kubernetes StatefulSet pod from its hostname: `web-7` → 7.
/// Pass `os.hostname()`.
#[napi(ts_args_type = "hostname: string")]
pub fn worker_id_from_hostname(env: Env, hostname: Unknown<'_>) -> Result<f64> {
    run(&env, || {
        let h = convert::string_of(&env, &hostname, "hostname")?;
        Ok(segflake::worker_id_from_hostname(&h)? as f64)
    })
}

/// The low `workerBits` bits of a dotted-quad IPv4 address: `10.0.3.7` with 10 bits → 775.
#[napi(ts_args_type = "address: string, workerBits: number")]
pub fn worker_id_from_ipv4(
    env: Env,
    address: Unknown<'_>,
    worker_bits: Unknown<'_>,
) -> Result<f64> {
    run(&env, || {
        let a = convert::string_of(&env, &address, "address")?;
        let bits = convert::uint(&env, &worker_bits, "workerBits", 32)? as u8;
        Ok(segflake::worker_id_from_ipv4(&a, bits)? as f64)
    })
}

/// A decimal worker ID from `text`, the value of environment variable `name` (`undefined`
/// or `null`: not set), checked against `workerBits` worker bits: `("POD_INDEX", "3", 10)`
/// → 3. Kubernetes fills such a variable from the `apps.kubernetes.io/pod-index` label
/// through the downward API. An unset, empty or non-decimal value is `INVALID_ARGUMENT`
/// naming `name`; a number beyond the layout is `WORKER_ID_OUT_OF_RANGE`.
/// `workerIdFromEnv(name, workerBits)` reads `process.env[name]`.
#[napi(ts_args_type = "name: string, text: string | undefined | null, workerBits: number")]
pub fn worker_id_from_text(
    env: Env,
    name: Unknown<'_>,
    text: Unknown<'_>,
    worker_bits: Unknown<'_>,
) -> Result<f64> {
    run(&env, || {
        let n = convert::string_of(&env, &name, "name")?;
        let t = match value_of(&env, &text, "text")? {
            Value::Null => None,
            Value::Str(s) => Some(s),
            other => {
                return Err(Fail::arg(
                    "text",
                    format!("got {other}; expected a string, or undefined when {n} is not set"),
                ))
            }
        };
        let bits = convert::uint(&env, &worker_bits, "workerBits", 63)? as u8;
        Ok(segflake::worker_id_from_text(&n, t.as_deref(), bits)? as f64)
    })
}

/// Parses Unix milliseconds or an ISO-8601 UTC time (`2025-01-01`,
/// `2025-01-01T00:00:00.000Z`) into Unix milliseconds.
#[napi(ts_args_type = "text: string")]
pub fn parse_time_ms(env: Env, text: Unknown<'_>) -> Result<f64> {
    run(&env, || {
        let t = convert::string_of(&env, &text, "time")?;
        Ok(segflake::datetime::parse_time_ms(&t)? as f64)
    })
}

/// Formats Unix milliseconds as ISO-8601 UTC (`2025-01-01T00:00:00.000Z`).
#[napi(ts_args_type = "unixMs: number | bigint")]
pub fn format_time_ms(env: Env, unix_ms: Unknown<'_>) -> Result<String> {
    run(&env, || {
        Ok(segflake::datetime::format_iso8601_ms(convert::u64_of(
            &env, &unix_ms, "unixMs",
        )?))
    })
}
