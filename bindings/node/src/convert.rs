//! JS values ↔ the core's host values ([`segflake::host::Value`]).
//!
//! Every option object goes through [`value_of`] and the core's `host::configure` (which
//! checks keys, kinds and ranges and words the messages); results come back through
//! [`Js`] and [`record`], one loop over the core's field tables.

use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;
use napi::ValueType;
use segflake::host::{self, Dialect, FieldKind, Kind, OptionSpec, Record, Setting, Value};

use crate::errors::{Fail, R};

/// `Number.MAX_SAFE_INTEGER`.
pub const MAX_SAFE: u64 = (1 << 53) - 1;

/// A JS value as a host value: safe-integer numbers and bigints (up to 128 bits) are
/// `Int`, other numbers `Float`, `Date` its Unix ms, a plain object a `Map` of its own
/// enumerable keys (function-valued keys skipped), a `Layout` the map of its parameters.
pub fn value_of(env: &Env, v: &Unknown<'_>, name: &str) -> R<Value> {
    value_at(env, v, name, 0)
}

/// Objects below the first nesting level (options nest once, for `layout`) are opaque, so
/// a store or a counter with cyclic fields is never walked.
fn value_at(env: &Env, v: &Unknown<'_>, name: &str, depth: u32) -> R<Value> {
    Ok(match v.get_type().map_err(Fail::from)? {
        ValueType::Undefined | ValueType::Null => Value::Null,
        ValueType::Boolean => Value::Bool(unsafe { v.cast::<bool>() }?),
        ValueType::String => Value::Str(unsafe { v.cast::<String>() }?),
        ValueType::Number => {
            let n: f64 = unsafe { v.cast::<f64>() }?;
            if n.fract() == 0.0 && n.abs() <= MAX_SAFE as f64 {
                Value::Int(n as i128)
            } else {
                Value::Float(n)
            }
        }
        ValueType::BigInt => {
            let b: BigInt = unsafe { v.cast::<BigInt>() }?;
            match b.get_i128() {
                _ if b.words.iter().all(|&w| w == 0) => Value::Int(0),
                (i, true) => Value::Int(i),
                _ => Value::Opaque("a bigint outside the 128-bit range".into()),
            }
        }
        ValueType::Function => Value::Opaque("a function".into()),
        ValueType::Symbol => Value::Opaque("a symbol".into()),
        ValueType::Object if depth < 2 => return object_value(env, v, name, depth),
        ValueType::Object => Value::Opaque("an object".into()),
        _ => Value::Opaque("a value of unknown type".into()),
    })
}

fn object_value(env: &Env, v: &Unknown<'_>, name: &str, depth: u32) -> R<Value> {
    let (e, raw) = (env.raw(), v.raw());
    let (mut is_date, mut is_array) = (false, false);
    unsafe { sys::napi_is_date(e, raw, &mut is_date) };
    if is_date {
        let mut ms = 0f64;
        unsafe { sys::napi_get_date_value(e, raw, &mut ms) };
        return Ok(if ms.is_finite() {
            Value::Int(ms as i128)
        } else {
            Value::Opaque("an invalid Date".into())
        });
    }
    unsafe { sys::napi_is_array(e, raw, &mut is_array) };
    if is_array {
        return Ok(Value::Opaque("an array".into()));
    }
    if let Ok(layout) = unsafe { ClassInstance::<crate::layout::Layout>::from_napi_value(e, raw) } {
        let spec = layout.inner.spec();
        return Ok(Value::Map(host::spelled_settings(
            &spec,
            host::Spelling::Camel,
        )));
    }
    let obj: Object<'_> = unsafe { v.cast() }?;
    let mut names = ptr::null_mut();
    let status = unsafe {
        sys::napi_get_all_property_names(
            e,
            raw,
            sys::KeyCollectionMode::own_only,
            sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
            sys::KeyConversion::numbers_to_strings,
            &mut names,
        )
    };
    let keys = match status {
        sys::Status::napi_ok => unsafe { Vec::<String>::from_napi_value(e, names) }?,
        _ => {
            return Err(thrown(
                e,
                name,
                "listing its keys",
                Error::from_reason("failed"),
            ))
        }
    };
    let mut pairs = Vec::with_capacity(keys.len());
    for key in keys {
        let field: Option<Unknown<'_>> = obj
            .get(&key)
            .map_err(|err| thrown(e, &key, "reading it", err))?;
        let field = match field {
            Some(f) if matches!(f.get_type(), Ok(ValueType::Function)) => continue,
            Some(f) if depth == 0 && SKIP.contains(&key.as_str()) => value_at(env, &f, &key, 2)?,
            Some(f) => value_at(env, &f, &key, depth + 1)?,
            None => Value::Null,
        };
        pairs.push((key, field));
    }
    Ok(Value::Map(pairs))
}

/// The JS-only keys of options objects (the segment store, the serial counter): checked by
/// the driver and never walked.
const SKIP: &[&str] = &["store", "counter"];

/// The key/value pairs of an options object (`None`: no object, no pairs), without the
/// JS-only keys in `drop`.
pub fn pairs_of(env: &Env, v: Option<&Unknown<'_>>, drop: &[&str]) -> R<Vec<(String, Value)>> {
    match v.map(|v| value_of(env, v, "options")).transpose()? {
        None => Ok(Vec::new()),
        Some(Value::Map(pairs)) => Ok(pairs
            .into_iter()
            .filter(|(k, _)| !drop.contains(&k.as_str()))
            .collect()),
        Some(other) => Err(Fail::arg(
            "options",
            format!("got {other}; expected an options object"),
        )),
    }
}

/// Options of `T` from a JS options object, as the core checks them.
pub fn configure<T: host::Options>(env: &Env, v: Option<&Unknown<'_>>, drop: &[&str]) -> R<T> {
    Ok(host::configure(pairs_of(env, v, drop)?, Dialect::JS)?)
}

/// A value checked by the core's rules for `kind`: `invalid <name>: got ...; allowed ...`.
pub fn check(name: &'static str, kind: Kind, value: &Value) -> R<Setting> {
    let (camel, default, threads_only, doc, flag) = (name, None, false, "", None);
    let spec = OptionSpec {
        name,
        camel,
        kind,
        default,
        threads_only,
        doc,
        flag,
    };
    Ok(host::check(&spec, value, Dialect::JS)?)
}

/// One argument checked by the core's rules for `kind`.
pub fn arg(env: &Env, v: &Unknown<'_>, name: &'static str, kind: Kind) -> R<Setting> {
    check(name, kind, &value_of(env, v, name)?)
}

/// An unsigned 64-bit integer from a `number` or a `bigint`.
pub fn u64_of(env: &Env, v: &Unknown<'_>, name: &'static str) -> R<u64> {
    uint(env, v, name, u64::MAX)
}

/// An integer in `0..=max`.
pub fn uint(env: &Env, v: &Unknown<'_>, name: &'static str, max: u64) -> R<u64> {
    match arg(env, v, name, Kind::UInt { min: 0, max })? {
        Setting::UInt(n) => Ok(n),
        _ => unreachable!("an unsigned kind gives an unsigned setting"),
    }
}

/// An ID: a `bigint`, a safe-integer `number`, or a decimal string (IDs above 2^53 are
/// often carried as strings in JSON), as the core reads it.
pub fn id_of(env: &Env, v: &Unknown<'_>, name: &'static str) -> R<u64> {
    Ok(host::id_of(&value_of(env, v, name)?, name, Dialect::JS)?)
}

/// A batch size, as the core checks it.
pub fn batch_size(env: &Env, v: &Unknown<'_>) -> R<usize> {
    Ok(host::batch_size_of(
        &value_of(env, v, "batch size")?,
        Dialect::JS,
    )?)
}

/// A string argument.
pub fn string_of(env: &Env, v: &Unknown<'_>, name: &str) -> R<String> {
    match value_of(env, v, name)? {
        Value::Str(s) => Ok(s),
        other => Err(Fail::arg(name, format!("got {other}; expected a string"))),
    }
}

/// A host value as JS: integers as numbers when safe, else bigints; `Null` as `null`.
pub struct Js(pub Value);

impl ToNapiValue for Js {
    unsafe fn to_napi_value(env: sys::napi_env, v: Self) -> Result<sys::napi_value> {
        unsafe {
            match v.0 {
                Value::Null => Null::to_napi_value(env, Null),
                Value::Bool(b) => bool::to_napi_value(env, b),
                Value::Int(i) if i.unsigned_abs() <= u128::from(MAX_SAFE) => {
                    f64::to_napi_value(env, i as f64)
                }
                Value::Int(i) => BigInt::to_napi_value(env, BigInt::from(i)),
                Value::Float(f) => f64::to_napi_value(env, f),
                Value::Str(s) | Value::Opaque(s) => String::to_napi_value(env, s),
                Value::Map(pairs) => {
                    let mut obj = Object::new(&Env::from_raw(env))?;
                    for (k, v) in pairs {
                        obj.set(k, Js(v))?;
                    }
                    Object::to_napi_value(env, obj)
                }
                Value::List(items) => {
                    let host_env = Env::from_raw(env);
                    let mut arr = host_env.create_array(items.len() as u32)?;
                    for (i, v) in items.into_iter().enumerate() {
                        arr.set(i as u32, Js(v))?;
                    }
                    Array::to_napi_value(env, arr)
                }
            }
        }
    }
}

/// A record field as JS: `Id` a bigint, counts and rates numbers, `Null` as `null`.
pub fn field_js(env: sys::napi_env, kind: FieldKind, v: Value) -> Result<sys::napi_value> {
    unsafe {
        match (kind, v) {
            (FieldKind::Id, Value::Int(i)) => BigInt::to_napi_value(env, BigInt::from(i)),
            (_, Value::Int(i)) => f64::to_napi_value(env, i as f64),
            (_, v) => Js::to_napi_value(env, Js(v)),
        }
    }
}

/// A record as a plain object (camel-case keys; absent optional fields left out).
pub fn record<'a, T: Record>(env: &Env, rec: &T) -> Result<Object<'a>> {
    let mut obj = Object::new(env)?;
    for (f, v) in T::FIELDS.iter().zip(rec.values()) {
        if v != Value::Null {
            obj.set(f.camel, unsafe {
                Unknown::from_raw_unchecked(env.raw(), field_js(env.raw(), f.kind, v)?)
            })?;
        }
    }
    Ok(obj)
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
        let object = unsafe { value.cast::<Object<'_>>() }.ok();
        let message = object.and_then(|o| o.get::<String>("message").ok().flatten());
        let mut ignored = ptr::null_mut(); // a `message` getter that threw
        unsafe { sys::napi_get_and_clear_last_exception(env, &mut ignored) };
        message.map_or("an error".into(), |m| format!("an error: {m}"))
    } else {
        match value_of(&Env::from_raw(env), &value, name) {
            Ok(Value::Int(i)) => format!("the number {i}"),
            Ok(v) => v.to_string(),
            Err(_) => "a value".into(),
        }
    };
    let mut fail = Fail::arg(name, format!("{doing} threw {text}"));
    fail.cause = Some(exception as usize);
    fail
}

/// The element type, data and length of a typed array, or `None` for any other value.
fn typed_array(env: &Env, v: &Unknown<'_>) -> Option<(sys::napi_typedarray_type, *mut u8, usize)> {
    let (mut is_typed, e) = (false, env.raw());
    unsafe { sys::napi_is_typedarray(e, v.raw(), &mut is_typed) };
    let (mut ty, mut len, mut data, mut buf, mut offset) =
        (0, 0, ptr::null_mut(), ptr::null_mut(), 0);
    let info = is_typed.then(|| unsafe {
        sys::napi_get_typedarray_info(
            e,
            v.raw(),
            &mut ty,
            &mut len,
            &mut data,
            &mut buf,
            &mut offset,
        )
    });
    info.map(|_| (ty, data as *mut u8, len))
}

/// An obfuscator from a `Uint8Array`/`Buffer` of 16 bytes or a string of 32 hex digits.
pub fn obfuscator_of(env: &Env, v: &Unknown<'_>) -> R<segflake::Obfuscator> {
    if let Some((ty, data, len)) = typed_array(env, v) {
        if ty != sys::TypedarrayType::uint8_array {
            return Err(Fail::arg(
                "key",
                "got a typed array that is not a Uint8Array; allowed 16 bytes or a string of 32 \
                 hex digits",
            ));
        }
        let bytes: &[u8] = match len {
            0 => &[],
            // SAFETY: napi reports `len` bytes at `data`, alive for this call.
            _ => unsafe { std::slice::from_raw_parts(data, len) },
        };
        return Ok(segflake::Obfuscator::from_key_bytes(bytes)?);
    }
    match value_of(env, v, "key")? {
        Value::Str(s) => Ok(segflake::Obfuscator::from_hex_key(&s)?),
        other => Err(Fail::arg(
            "key",
            format!("got {other}; allowed 16 bytes or a string of 32 hex digits"),
        )),
    }
}

/// The elements of a `BigUint64Array`, writable in place.
pub fn biguint64_slice<'a>(env: &Env, v: &Unknown<'a>, name: &str) -> R<&'a mut [u64]> {
    match typed_array(env, v) {
        Some((sys::TypedarrayType::biguint64_array, _, 0)) => Ok(&mut []),
        // SAFETY: napi reports `len` aligned u64s at `data`, kept alive by the caller's
        // handle scope for the duration of the call.
        Some((sys::TypedarrayType::biguint64_array, data, len)) => {
            Ok(unsafe { std::slice::from_raw_parts_mut(data as *mut u64, len) })
        }
        Some(_) => Err(Fail::arg(
            name,
            "got a typed array that is not a BigUint64Array; expected a BigUint64Array",
        )),
        None => Err(Fail::arg(
            name,
            format!("got {}; expected a BigUint64Array", value_of(env, v, name)?),
        )),
    }
}
