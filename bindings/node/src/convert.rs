//! Reading JS values into Rust types with typed, explanatory errors.
//!
//! JS has two number types: `number` (a double, exact up to 2^53 - 1) and `bigint`. Every
//! u64 input accepts both; a `number` must be a non-negative safe integer and a `bigint`
//! must lie in `0..=2^64-1`. Nothing is truncated or wrapped.

use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;
use napi::ValueType;

use crate::errors::{Fail, R};

/// `Number.MAX_SAFE_INTEGER`.
pub const MAX_SAFE: u64 = (1 << 53) - 1;

/// A short description of a JS value for error messages: its type and, for primitives,
/// its value.
pub fn describe(v: &Unknown<'_>) -> String {
    match v.get_type() {
        Ok(ValueType::Number) => match unsafe { v.cast::<f64>() } {
            Ok(n) => format!("the number {}", js_number(n)),
            Err(_) => "a number".into(),
        },
        Ok(ValueType::BigInt) => match unsafe { v.cast::<BigInt>() } {
            Ok(b) => format!("the bigint {}n", bigint_text(&b)),
            Err(_) => "a bigint".into(),
        },
        Ok(ValueType::String) => match unsafe { v.cast::<String>() } {
            Ok(s) if s.chars().count() <= 60 => format!("the string {s:?}"),
            Ok(s) => format!("a string of {} characters", s.chars().count()),
            Err(_) => "a string".into(),
        },
        Ok(ValueType::Boolean) => match unsafe { v.cast::<bool>() } {
            Ok(b) => format!("the boolean {b}"),
            Err(_) => "a boolean".into(),
        },
        Ok(ValueType::Undefined) => "undefined".into(),
        Ok(ValueType::Null) => "null".into(),
        Ok(ValueType::Symbol) => "a symbol".into(),
        Ok(ValueType::Function) => "a function".into(),
        Ok(ValueType::Object) => "an object".into(),
        _ => "a value of unknown type".into(),
    }
}

fn js_number(n: f64) -> String {
    if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{n:.0}")
    } else {
        format!("{n}")
    }
}

fn bigint_text(b: &BigInt) -> String {
    let sign = if b.sign_bit { "-" } else { "" };
    if b.words.len() == 1 {
        format!("{sign}{}", b.words[0])
    } else if b.words.len() == 2 {
        let v = (u128::from(b.words[1]) << 64) | u128::from(b.words[0]);
        format!("{sign}{v}")
    } else {
        format!("{sign}(more than 128 bits)")
    }
}

/// True for `undefined` and `null`: an option that was not given.
pub fn is_absent(v: &Unknown<'_>) -> bool {
    matches!(v.get_type(), Ok(ValueType::Undefined) | Ok(ValueType::Null))
}

/// An unsigned 64-bit integer from a `number` or a `bigint`.
pub fn u64_of(v: &Unknown<'_>, name: &str) -> R<u64> {
    let allowed =
        "expected a non-negative integer (a number up to 2^53-1 or a bigint up to 2^64-1)";
    match v.get_type() {
        Ok(ValueType::Number) => {
            let n: f64 = unsafe { v.cast::<f64>() }.map_err(Fail::from)?;
            if n.is_finite() && n.fract() == 0.0 && n >= 0.0 && n <= MAX_SAFE as f64 {
                Ok(n as u64)
            } else {
                let why = if !n.is_finite() || n.fract() != 0.0 {
                    "it is not an integer"
                } else if n < 0.0 {
                    "it is negative"
                } else {
                    "it is above Number.MAX_SAFE_INTEGER and may have lost precision; pass a bigint"
                };
                Err(Fail::arg(
                    name,
                    format!("got the number {}: {why}; {allowed}", js_number(n)),
                ))
            }
        }
        Ok(ValueType::BigInt) => {
            let b: BigInt = unsafe { v.cast::<BigInt>() }.map_err(Fail::from)?;
            let (negative, value, lossless) = b.get_u64();
            let zero = b.words.iter().all(|&w| w == 0);
            if zero {
                Ok(0)
            } else if negative {
                Err(Fail::arg(
                    name,
                    format!(
                        "got the bigint {}n: it is negative; {allowed}",
                        bigint_text(&b)
                    ),
                ))
            } else if !lossless {
                Err(Fail::arg(
                    name,
                    format!(
                        "got the bigint {}n: it is above 2^64-1; {allowed}",
                        bigint_text(&b)
                    ),
                ))
            } else {
                Ok(value)
            }
        }
        _ => Err(Fail::arg(name, format!("got {}; {allowed}", describe(v)))),
    }
}

/// An ID: a `bigint`, a safe-integer `number`, or a decimal string (IDs above 2^53 are
/// often carried as strings in JSON). A malformed string is a `ParseError`.
pub fn id_of(v: &Unknown<'_>, name: &str) -> R<u64> {
    match v.get_type() {
        Ok(ValueType::String) => {
            let s: String = unsafe { v.cast::<String>() }.map_err(Fail::from)?;
            Ok(segflake::codec::parse_decimal(&s)?)
        }
        _ => u64_of(v, name).map_err(|f| Fail {
            message: f.message.replace(
                "expected a non-negative integer (a number up to 2^53-1 or a bigint up to 2^64-1)",
                "expected an ID: a bigint, a non-negative safe integer or a decimal string",
            ),
            ..f
        }),
    }
}

/// A u64 that must also fit `max` (for small fields: bits, years, counts).
pub fn small_of(v: &Unknown<'_>, name: &str, max: u64) -> R<u64> {
    let n = u64_of(v, name)?;
    if n > max {
        return Err(Fail::arg(name, format!("got {n}; allowed 0..={max}")));
    }
    Ok(n)
}

/// A string value.
pub fn string_of(v: &Unknown<'_>, name: &str, allowed: &str) -> R<String> {
    match v.get_type() {
        Ok(ValueType::String) => Ok(unsafe { v.cast::<String>() }.map_err(Fail::from)?),
        _ => Err(Fail::arg(
            name,
            format!("got {}; expected {allowed}", describe(v)),
        )),
    }
}

/// A point in time: Unix milliseconds (number or bigint), a `Date`, or an ISO-8601 UTC
/// string (`2025-01-01`, `2025-01-01T00:00:00.000Z`).
pub fn time_of(env: &Env, v: &Unknown<'_>, name: &str) -> R<u64> {
    match v.get_type() {
        Ok(ValueType::String) => {
            let s: String = unsafe { v.cast::<String>() }.map_err(Fail::from)?;
            segflake::datetime::parse_time_ms(&s).map_err(|e| {
                let f = Fail::from(e);
                Fail::new(f.kind, format!("{name}: {}", f.message))
            })
        }
        Ok(ValueType::Object) => {
            let raw = v.value();
            let mut is_date = false;
            unsafe { sys::napi_is_date(env.raw(), raw.value, &mut is_date) };
            if !is_date {
                return Err(Fail::arg(
                    name,
                    format!("got {}; expected Unix milliseconds, a Date or an ISO-8601 UTC string", describe(v)),
                ));
            }
            let mut ms = 0f64;
            unsafe { sys::napi_get_date_value(env.raw(), raw.value, &mut ms) };
            if !ms.is_finite() || ms < 0.0 {
                return Err(Fail::arg(name, "got an invalid Date or one before 1970; expected a time at or after 1970-01-01"));
            }
            Ok(ms as u64)
        }
        Ok(ValueType::Number) | Ok(ValueType::BigInt) => u64_of(v, name),
        _ => Err(Fail::arg(
            name,
            format!("got {}; expected Unix milliseconds (number or bigint), a Date or an ISO-8601 UTC string", describe(v)),
        )),
    }
}

/// Reads `field` of an options object; `None` when it is absent, `undefined` or `null`.
pub fn field<'a>(obj: &Object<'a>, name: &str) -> R<Option<Unknown<'a>>> {
    let v: Option<Unknown<'a>> = obj
        .get(name)
        .map_err(|e| thrown(obj.value().env, name, "reading it", e))?;
    Ok(v.filter(|v| !is_absent(v)))
}

/// An `InvalidArgumentError` for user code (a getter, a proxy trap) that threw while the
/// binding read `name`; the exception becomes the error's `cause`.
pub fn thrown(env: sys::napi_env, name: &str, doing: &str, e: napi::Error) -> Fail {
    let mut pending = false;
    unsafe { sys::napi_is_exception_pending(env, &mut pending) };
    if !pending {
        return Fail::arg(name, format!("{doing} failed: {}", e.reason));
    }
    let mut exception = ptr::null_mut();
    unsafe { sys::napi_get_and_clear_last_exception(env, &mut exception) };
    let value = unsafe { Unknown::from_raw_unchecked(env, exception) };
    let mut is_error = false;
    unsafe { sys::napi_is_error(env, exception, &mut is_error) };
    let text = if is_error {
        let mut message = ptr::null_mut();
        let ok = unsafe {
            sys::napi_get_named_property(env, exception, c"message".as_ptr(), &mut message)
        } == sys::Status::napi_ok;
        let mut pending_again = false;
        unsafe { sys::napi_is_exception_pending(env, &mut pending_again) };
        if pending_again {
            let mut ignored = ptr::null_mut();
            unsafe { sys::napi_get_and_clear_last_exception(env, &mut ignored) };
        }
        match ok.then(|| unsafe { String::from_napi_value(env, message) }) {
            Some(Ok(m)) => format!("an error: {m}"),
            _ => "an error".to_string(),
        }
    } else {
        describe(&value)
    };
    // Held through an object: Node-API before version 10 cannot reference primitives,
    // and JS can throw anything.
    let mut holder = ptr::null_mut();
    let mut reference = ptr::null_mut();
    let status = unsafe {
        if sys::napi_create_object(env, &mut holder) == sys::Status::napi_ok
            && sys::napi_set_named_property(env, holder, c"value".as_ptr(), exception)
                == sys::Status::napi_ok
        {
            sys::napi_create_reference(env, holder, 1, &mut reference)
        } else {
            sys::Status::napi_generic_failure
        }
    };
    let mut fail = Fail::arg(name, format!("{doing} threw {text}"));
    if status == sys::Status::napi_ok {
        fail.cause = Some(reference as usize);
    }
    fail
}

/// Refuses own keys that are not in `allowed` (catches typos such as `workerID`).
pub fn check_keys(obj: &Object<'_>, what: &str, allowed: &[&str]) -> R<()> {
    let keys =
        Object::keys(obj).map_err(|e| thrown(obj.value().env, what, "listing its keys", e))?;
    for k in keys {
        if !allowed.contains(&k.as_str()) {
            // Methods are not options (a `Layout` instance carries its methods as own
            // properties and is accepted wherever layout options are).
            let v: Option<Unknown<'_>> = obj
                .get(&k)
                .map_err(|e| thrown(obj.value().env, &k, "reading it", e))?;
            if matches!(v.map(|v| v.get_type()), Some(Ok(ValueType::Function))) {
                continue;
            }
            return Err(Fail::arg(
                what,
                format!("unknown option {k:?}; allowed: {}", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

/// The value as an object, or an error naming what was expected.
pub fn object_of<'a>(v: &Unknown<'a>, name: &str, expected: &str) -> R<Object<'a>> {
    match v.get_type() {
        Ok(ValueType::Object) => Ok(unsafe { v.cast::<Object<'a>>() }.map_err(Fail::from)?),
        _ => Err(Fail::arg(
            name,
            format!("got {}; expected {expected}", describe(v)),
        )),
    }
}

/// u64 → JS number (exact up to 2^53; larger values round to the nearest double).
#[inline]
pub fn num(v: u64) -> f64 {
    v as f64
}

/// Key bytes from a `Uint8Array`/`Buffer` or a hex string.
pub fn key_bytes(env: &Env, v: &Unknown<'_>) -> R<Vec<u8>> {
    let allowed =
        "expected exactly 16 bytes: a Uint8Array/Buffer of length 16 or a string of 32 hex digits";
    match v.get_type() {
        Ok(ValueType::String) => {
            let s: String = unsafe { v.cast::<String>() }.map_err(Fail::from)?;
            if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(Fail::arg(
                    "key",
                    format!(
                        "got a string of {} characters that is not 32 hex digits; {allowed}",
                        s.chars().count()
                    ),
                ));
            }
            Ok((0..16)
                .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or(0))
                .collect())
        }
        Ok(ValueType::Object) => {
            let raw = v.value().value;
            let mut is_typed = false;
            unsafe { sys::napi_is_typedarray(env.raw(), raw, &mut is_typed) };
            if !is_typed {
                return Err(Fail::arg("key", format!("got {}; {allowed}", describe(v))));
            }
            let mut ty = 0;
            let mut len = 0usize;
            let mut data = ptr::null_mut();
            let mut buf = ptr::null_mut();
            let mut offset = 0usize;
            unsafe {
                sys::napi_get_typedarray_info(
                    env.raw(),
                    raw,
                    &mut ty,
                    &mut len,
                    &mut data,
                    &mut buf,
                    &mut offset,
                )
            };
            if ty != sys::TypedarrayType::uint8_array {
                return Err(Fail::arg(
                    "key",
                    format!("got a typed array that is not a Uint8Array; {allowed}"),
                ));
            }
            if len != 16 {
                return Err(Fail::arg("key", format!("got {len} bytes; {allowed}")));
            }
            let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, len) };
            Ok(bytes.to_vec())
        }
        _ => Err(Fail::arg("key", format!("got {}; {allowed}", describe(v)))),
    }
}

/// The elements of a `BigUint64Array`, writable in place.
#[allow(clippy::mut_from_ref)]
pub fn biguint64_slice<'a>(env: &Env, v: &Unknown<'a>, name: &str) -> R<&'a mut [u64]> {
    let raw = v.value().value;
    let mut is_typed = false;
    unsafe { sys::napi_is_typedarray(env.raw(), raw, &mut is_typed) };
    if !is_typed {
        return Err(Fail::arg(
            name,
            format!("got {}; expected a BigUint64Array", describe(v)),
        ));
    }
    let mut ty = 0;
    let mut len = 0usize;
    let mut data = ptr::null_mut();
    let mut buf = ptr::null_mut();
    let mut offset = 0usize;
    unsafe {
        sys::napi_get_typedarray_info(
            env.raw(),
            raw,
            &mut ty,
            &mut len,
            &mut data,
            &mut buf,
            &mut offset,
        )
    };
    if ty != sys::TypedarrayType::biguint64_array {
        return Err(Fail::arg(
            name,
            "got a typed array that is not a BigUint64Array; expected a BigUint64Array",
        ));
    }
    if len == 0 {
        return Ok(&mut []);
    }
    // SAFETY: napi reports `len` u64 elements at `data`, aligned (typed arrays are), kept
    // alive by the caller's handle scope for the duration of the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(data as *mut u64, len) })
}
