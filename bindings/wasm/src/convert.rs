//! Checked conversions from JS values.
//!
//! wasm-bindgen converts a JS argument declared as `u64` with `BigInt.asUintN`, so `-2n`
//! silently becomes `2^64 - 2`. Every integer therefore enters as a `JsValue` and is
//! checked here: a `bigint` must lie in `0..=2^64-1`, a `number` must be a non-negative
//! safe integer (above 2^53 a `number` is no longer exact), and, where IDs are expected, a
//! string must be a decimal ID. Anything else is an `InvalidArgument` error that says what
//! was given and what is allowed.

use segflake::{codec, Error};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

/// `Number.MAX_SAFE_INTEGER`.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A short description of a JS value for error messages: `-1`, `1.5`, `"abc"`, `-2n`,
/// `undefined`, `an object`.
pub fn describe(v: &JsValue) -> String {
    if let Some(s) = v.as_string() {
        let shown: String = s.chars().take(60).collect();
        let more = if shown.len() < s.len() { "..." } else { "" };
        return format!("the string {shown:?}{more}");
    }
    if v.is_bigint() {
        let text = v
            .unchecked_ref::<js_sys::BigInt>()
            .to_string(10)
            .map(String::from)
            .unwrap_or_default();
        return format!("{text}n");
    }
    if v.as_f64().is_some() {
        return v
            .unchecked_ref::<js_sys::Number>()
            .to_string_with_radix(10)
            .map(String::from)
            .unwrap_or_else(|_| "a number".into());
    }
    if v.is_undefined() {
        return "undefined".into();
    }
    if v.is_null() {
        return "null".into();
    }
    if let Some(b) = v.as_bool() {
        return format!("{b}");
    }
    match v.js_typeof().as_string().as_deref() {
        Some("object") if js_sys::Array::is_array(v) => "an array".into(),
        Some("object") => "an object".into(),
        Some("function") => "a function".into(),
        Some("symbol") => "a symbol".into(),
        Some(t) => format!("a value of type {t}"),
        None => "a value of unknown type".into(),
    }
}

fn invalid(name: &'static str, reason: String) -> Error {
    Error::InvalidArgument {
        name: name.into(),
        reason,
    }
}

/// What kinds of value an integer argument accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    /// `bigint` or `number`.
    Integer,
    /// `bigint`, `number` or a decimal string (IDs).
    Id,
}

/// A `u64` from a `bigint`, a safe-integer `number` or (for [`Accept::Id`]) a decimal
/// string, at most `max`.
pub fn to_u64(v: &JsValue, name: &'static str, accept: Accept, max: u64) -> Result<u64, Error> {
    let kinds = match accept {
        Accept::Integer => "a bigint or a safe-integer number",
        Accept::Id => "a bigint, a safe-integer number or a decimal string",
    };
    let allowed = if max == u64::MAX {
        format!("allowed: {kinds}, not negative")
    } else {
        format!("allowed: {kinds} in 0..={max}")
    };
    let value = if v.is_bigint() {
        match u64::try_from(v.clone()) {
            Ok(x) => x,
            Err(_) => {
                let sign = if v.lt(&JsValue::bigint_from_str("0")) {
                    "is negative"
                } else {
                    "is above 2^64-1"
                };
                return Err(invalid(name, format!("{} {sign}; {allowed}", describe(v))));
            }
        }
    } else if let Some(f) = v.as_f64() {
        if !(f.is_finite() && f.fract() == 0.0) {
            return Err(invalid(
                name,
                format!("{} is not an integer; {allowed}", describe(v)),
            ));
        }
        if f < 0.0 {
            return Err(invalid(
                name,
                format!("{} is negative; {allowed}", describe(v)),
            ));
        }
        if f > MAX_SAFE_INTEGER as f64 {
            return Err(invalid(
                name,
                format!(
                    "{} is above Number.MAX_SAFE_INTEGER, where numbers are no longer exact; \
                     pass a bigint{} instead",
                    describe(v),
                    if accept == Accept::Id {
                        " or a decimal string"
                    } else {
                        ""
                    }
                ),
            ));
        }
        f as u64
    } else if let (Accept::Id, Some(s)) = (accept, v.as_string()) {
        codec::parse_decimal(&s).map_err(|e| invalid(name, format!("{e}; {allowed}")))?
    } else {
        return Err(invalid(name, format!("got {}; {allowed}", describe(v))));
    };
    if value > max {
        return Err(invalid(name, format!("{value} is too large; {allowed}")));
    }
    Ok(value)
}

/// `obj[key]`. A getter that throws (for example on a freed `Layout`) is an error, not a
/// missing option.
pub fn get(obj: &JsValue, key: &'static str) -> Result<JsValue, Error> {
    js_sys::Reflect::get(obj, &JsValue::from_str(key)).map_err(|e| {
        let what = e
            .dyn_ref::<js_sys::Error>()
            .map(|e| String::from(e.message()))
            .unwrap_or_else(|| describe(&e));
        invalid(key, format!("reading it threw: {what}"))
    })
}

/// `obj[key]` unless it is `undefined` or `null`.
pub fn field(obj: &JsValue, key: &'static str) -> Result<Option<JsValue>, Error> {
    let v = get(obj, key)?;
    Ok(if v.is_undefined() || v.is_null() {
        None
    } else {
        Some(v)
    })
}

/// Refuses own enumerable keys of a plain options object that are not in `allowed`
/// (a misspelt option would otherwise be ignored silently).
pub fn check_keys(obj: &JsValue, what: &'static str, allowed: &[&str]) -> Result<(), Error> {
    let Some(obj) = obj.dyn_ref::<js_sys::Object>() else {
        return Ok(());
    };
    for key in js_sys::Object::keys(obj).iter() {
        let Some(key) = key.as_string() else { continue };
        if key.starts_with("__wbg") || allowed.contains(&key.as_str()) {
            continue;
        }
        return Err(invalid(
            what,
            format!("unknown option {key:?}; allowed: {}", allowed.join(", ")),
        ));
    }
    Ok(())
}

/// A time in Unix milliseconds: a `number`/`bigint`, a `Date`, or a string that
/// `segflake::datetime::parse_time_ms` reads (`2025-01-01`, `2025-01-01T00:00:00Z`, or
/// digits).
pub fn to_time_ms(v: &JsValue, name: &'static str) -> Result<u64, Error> {
    if let Some(date) = v.dyn_ref::<js_sys::Date>() {
        let t = date.get_time();
        if !t.is_finite() || t < 0.0 {
            return Err(invalid(
                name,
                "the Date is invalid or before 1970-01-01; allowed: a valid Date at or after 1970-01-01"
                    .into(),
            ));
        }
        return Ok(t as u64);
    }
    if let Some(s) = v.as_string() {
        return segflake::datetime::parse_time_ms(&s).map_err(|e| invalid(name, e.to_string()));
    }
    if v.is_bigint() || v.as_f64().is_some() {
        return to_u64(v, name, Accept::Integer, MAX_SAFE_INTEGER);
    }
    Err(invalid(
        name,
        format!(
            "got {}; allowed: Unix milliseconds (number or bigint), a Date, or an ISO-8601 UTC \
             string such as \"2025-01-01T00:00:00Z\"",
            describe(v)
        ),
    ))
}

/// A string argument from a fixed set of names.
pub fn to_name(v: &JsValue, name: &'static str, allowed: &str) -> Result<String, Error> {
    v.as_string().ok_or_else(|| {
        invalid(
            name,
            format!("got {}; allowed: one of the strings {allowed}", describe(v)),
        )
    })
}

/// A JS number for a `u64` that is known to be a safe integer in practice (times, worker
/// IDs, sequence numbers); above 2^53 it is the nearest double.
#[inline]
pub fn num(x: u64) -> f64 {
    x as f64
}
