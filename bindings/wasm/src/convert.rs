//! JS values ↔ the core's host values ([`segflake::host::Value`]).
//!
//! Every options object goes through [`value_of`] and the core's `host::configure`, which
//! checks keys, kinds and ranges and words the messages; single arguments are checked by
//! the same rules ([`arg`]). Results come back through [`js_of`] and [`record`], one loop
//! over the core's field tables. Integers never enter as `u64` parameters: wasm-bindgen
//! would wrap a negative `bigint` into a huge `u64`.

use segflake::host::{self, Dialect, FieldKind, Kind, OptionSpec, Record, Setting, Value};
use segflake::Error;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen]
extern "C" {
    /// `Object.keys(obj)`, with a throwing proxy trap as an `Err` (js_sys's binding lets the
    /// exception unwind through the module).
    #[wasm_bindgen(js_namespace = Object, js_name = keys, catch)]
    fn object_keys(obj: &JsValue) -> Result<js_sys::Array, JsValue>;
}

/// `Number.MAX_SAFE_INTEGER`.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A JS value as a host value: safe-integer numbers and bigints (up to 128 bits) are
/// `Int`, other numbers `Float`, a `Date` its Unix ms, a plain object a `Map` of its own
/// enumerable keys (function-valued keys skipped), a `Layout` the map of its parameters.
/// `name` names the value in the error for a getter that throws.
pub fn value_of(v: &JsValue, name: &str) -> Result<Value, Error> {
    value_at(v, name, 0)
}

/// Objects below the first nesting level (options nest once, for `layout`) are opaque.
fn value_at(v: &JsValue, name: &str, depth: u32) -> Result<Value, Error> {
    let opaque = |what: &str| Ok(Value::Opaque(what.into()));
    if v.is_undefined() || v.is_null() {
        return Ok(Value::Null);
    }
    if let Some(b) = v.as_bool() {
        return Ok(Value::Bool(b));
    }
    if let Some(s) = v.as_string() {
        return Ok(Value::Str(s));
    }
    if let Some(n) = v.as_f64() {
        return Ok(Value::from_f64(n));
    }
    if v.is_bigint() {
        return i128::try_from(v.clone()).map_or_else(
            |_| opaque("a bigint beyond 128 bits"),
            |i| Ok(Value::Int(i)),
        );
    }
    if let Some(date) = v.dyn_ref::<js_sys::Date>() {
        let t = date.get_time();
        return if t.is_finite() {
            Ok(Value::Int(t as i128))
        } else {
            opaque("an invalid Date")
        };
    }
    if v.is_function() {
        return opaque("a function");
    }
    if js_sys::Array::is_array(v) {
        return opaque("an array");
    }
    if !v.is_object() {
        return Ok(Value::Opaque(format!(
            "a {}",
            v.js_typeof().as_string().unwrap_or_default()
        )));
    }
    if depth >= 2 {
        return opaque("an object");
    }
    let keys = object_keys(v).map_err(|e| threw(name, "listing its keys", &e))?;
    if keys
        .iter()
        .any(|k| k.as_string().is_some_and(|k| k.starts_with("__wbg")))
    {
        // An object of this module: a `Layout` reads as its parameters (`toJSON`).
        let class = js_sys::Object::get_prototype_of(v).constructor().name();
        return match get(v, "toJSON", name)?.dyn_into::<js_sys::Function>() {
            Ok(f) => value_at(&f.call0(v).map_err(|e| thrown(name, &e))?, name, depth),
            Err(_) => Ok(Value::Opaque(format!("a {class}"))),
        };
    }
    let mut pairs = Vec::with_capacity(keys.length() as usize);
    for key in keys.iter().filter_map(|k| k.as_string()) {
        let field = get(v, &key, &key)?;
        // The JS-only keys (the segment store, the serial counter) are never walked.
        let depth = if depth == 0 && SKIP.contains(&key.as_str()) {
            2
        } else {
            depth + 1
        };
        if !field.is_function() {
            pairs.push((key.clone(), value_at(&field, &key, depth)?));
        }
    }
    Ok(Value::Map(pairs))
}

/// The JS-only keys of options objects, checked by the drivers.
const SKIP: &[&str] = &["store", "counter"];

/// `obj[key]`; a getter that throws (a freed `Layout`, a throwing accessor) is an error
/// naming `name`, not a missing option.
fn get(obj: &JsValue, key: &str, name: &str) -> Result<JsValue, Error> {
    js_sys::Reflect::get(obj, &JsValue::from_str(key)).map_err(|e| thrown(name, &e))
}

fn thrown(name: &str, e: &JsValue) -> Error {
    threw(name, "reading it", e)
}

/// `invalid <name>: <doing> threw: <what was thrown>`.
fn threw(name: &str, doing: &str, e: &JsValue) -> Error {
    let what = match e.dyn_ref::<js_sys::Error>() {
        Some(e) => String::from(e.message()),
        None => value_at(e, name, 2).map_or_else(|_| "a value".into(), |v| v.to_string()),
    };
    Error::invalid_argument(name.to_owned(), format!("{doing} threw: {what}"))
}

/// The key/value pairs of an options object (none for `undefined`/`null`), without the
/// JS-only keys in `drop`.
pub fn pairs_of(v: &JsValue, drop: &[&str]) -> Result<Vec<(String, Value)>, Error> {
    if v.is_undefined() || v.is_null() {
        return Ok(Vec::new());
    }
    match value_of(v, "options")? {
        Value::Map(mut pairs) => {
            pairs.retain(|(k, _)| !drop.contains(&k.as_str()));
            Ok(pairs)
        }
        other => Err(Error::invalid_argument(
            "options",
            format!("got {other}; expected an options object"),
        )),
    }
}

/// Options of `T` from a JS options object, as the core checks them.
pub fn configure<T: host::Options>(v: &JsValue, drop: &[&str]) -> Result<T, Error> {
    host::configure(pairs_of(v, drop)?, Dialect::JS)
}

/// One argument checked by the core's rules for `kind`: `invalid <name>: got ...; allowed ...`.
pub fn arg(v: &JsValue, name: &'static str, kind: Kind) -> Result<Setting, Error> {
    let spec = OptionSpec::argument(name, name, kind);
    let value = match value_at(v, name, 2)? {
        Value::Null => Value::Opaque(describe(v)),
        value => value,
    };
    host::check(&spec, &value, Dialect::JS)
}

/// An unsigned argument of `kind` (an integer range, a time, an ID).
pub fn uint_of(v: &JsValue, name: &'static str, kind: Kind) -> Result<u64, Error> {
    match arg(v, name, kind)? {
        Setting::UInt(n) => Ok(n),
        _ => unreachable!("an unsigned kind gives an unsigned setting"),
    }
}

/// An integer in `min..=max` (a `bigint` or a safe-integer `number`).
pub fn range(v: &JsValue, name: &'static str, min: u64, max: u64) -> Result<u64, Error> {
    uint_of(v, name, Kind::UInt { min, max })
}

/// Any unsigned 64-bit integer.
pub fn u64_of(v: &JsValue, name: &'static str) -> Result<u64, Error> {
    range(v, name, 0, u64::MAX)
}

/// A batch size, `1..=MAX_BATCH`.
pub fn batch_size(v: &JsValue) -> Result<usize, Error> {
    // A whole number in range is the common case: one look at the value, not the
    // conversion of any JS value that `range` does (which refuses the others).
    match v.as_f64() {
        Some(n) if n >= 1.0 && n <= segflake::MAX_BATCH as f64 && n.fract() == 0.0 => {
            Ok(n as usize)
        }
        _ => range(v, "batch size", 1, segflake::MAX_BATCH as u64).map(|n| n as usize),
    }
}

/// A time in Unix milliseconds: a `number`/`bigint`, a `Date`, or an ISO-8601 UTC string.
pub fn time_ms(v: &JsValue, name: &'static str) -> Result<u64, Error> {
    uint_of(v, name, Kind::Time)
}

/// An ID: a `bigint`, a safe-integer `number`, or a decimal string (IDs above 2^53 are
/// often carried as strings in JSON). A malformed string is a `ParseError`, as in the
/// native package.
pub fn id_of(v: &JsValue, name: &'static str) -> Result<u64, Error> {
    match v.as_string() {
        Some(s) => segflake::codec::parse_decimal(&s),
        None => uint_of(v, name, Kind::Id),
    }
}

/// A string argument.
pub fn string_of(v: &JsValue, name: &'static str) -> Result<String, Error> {
    let got = || format!("got {}; expected a string", describe(v));
    v.as_string()
        .ok_or_else(|| Error::invalid_argument(name, got()))
}

/// A JS value for messages: `undefined`, `null`, else as the core describes it (`the
/// string "x"`, `-1`, `a function`).
pub fn describe(v: &JsValue) -> String {
    match value_at(v, "value", 2) {
        _ if v.is_undefined() => "undefined".into(),
        _ if v.is_null() => "null".into(),
        Ok(value) => value.to_string(),
        Err(_) => "a value".into(),
    }
}

/// `target[key] = value` (on objects this module made, which cannot refuse it).
pub fn set(target: &JsValue, key: &str, value: &JsValue) {
    let _ = js_sys::Reflect::set(target, &JsValue::from_str(key), value);
}

/// A host value as JS: integers as numbers when safe, else bigints; `Null` as `null`; maps
/// as plain objects.
pub fn js_of(v: Value) -> JsValue {
    match v {
        Value::Null => JsValue::NULL,
        Value::Bool(b) => b.into(),
        Value::Int(i) if i.unsigned_abs() <= u128::from(MAX_SAFE_INTEGER) => (i as f64).into(),
        Value::Int(i) => i.into(),
        Value::Float(f) => f.into(),
        Value::Str(s) | Value::Opaque(s) => s.into(),
        Value::Map(pairs) => {
            let o = JsValue::from(js_sys::Object::new());
            for (k, v) in pairs {
                set(&o, &k, &js_of(v));
            }
            o
        }
        Value::List(items) => items
            .into_iter()
            .map(js_of)
            .collect::<js_sys::Array>()
            .into(),
    }
}

/// A record as a plain object: camel-case keys, `Id` fields as bigints, counts and rates as
/// numbers; absent optional fields (`undefined` when read) are left out, as in the native
/// package.
pub fn record<R: Record>(rec: &R) -> JsValue {
    let o = JsValue::from(js_sys::Object::new());
    for (f, v) in R::FIELDS.iter().zip(rec.values()) {
        if v != Value::Null {
            set(&o, f.camel, &field_js(f.kind, v));
        }
    }
    o
}

/// A record field as JS: `Id` a bigint, other integers numbers, `Null` as `null`.
pub fn field_js(kind: FieldKind, v: Value) -> JsValue {
    match (kind, v) {
        (FieldKind::Id, Value::Int(i)) => JsValue::from(i),
        (_, Value::Int(i)) => JsValue::from_f64(i as f64),
        (_, v) => js_of(v),
    }
}

/// A JS number for a `u64` that is a safe integer in practice (times, worker IDs, sequence
/// numbers); above 2^53 it is the nearest double.
#[inline]
pub fn num(x: u64) -> f64 {
    x as f64
}
