//! Checked conversion of Python arguments. Every failure is an `InvalidArgumentError`
//! saying what was given and what is allowed; nothing wraps or truncates silently.

use crate::errors::{invalid, IntoPyResult};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyInt, PyString, PyType};

/// The Python type name of `obj`, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

/// A short `repr` of `obj`, for messages.
pub fn short_repr(obj: &Bound<'_, PyAny>) -> String {
    let r = obj
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| format!("<{}>", type_name(obj)));
    if r.chars().count() > 60 {
        let cut: String = r.chars().take(57).collect();
        format!("{cut}...")
    } else {
        r
    }
}

/// An int in `0..=u64::MAX`. Accepts `int` and objects with `__index__` (numpy
/// integers); refuses `bool`, floats, strings, negative and too-large values.
#[inline]
pub fn u64_arg(obj: &Bound<'_, PyAny>, name: &'static str) -> PyResult<u64> {
    if let Ok(v) = obj.extract::<u64>() {
        if !obj.is_instance_of::<PyBool>() {
            return Ok(v);
        }
    }
    Err(u64_error(obj, name, u64::MAX))
}

#[cold]
fn u64_error(obj: &Bound<'_, PyAny>, name: &'static str, max: u64) -> PyErr {
    let py = obj.py();
    let allowed = format!("expected an int in 0..={max}");
    if obj.is_instance_of::<PyBool>() {
        return invalid(
            py,
            name,
            format!("got a bool ({}); {allowed}", short_repr(obj)),
        );
    }
    let index = py
        .import("operator")
        .and_then(|op| op.getattr("index"))
        .and_then(|f| f.call1((obj,)));
    match index {
        Ok(i) => {
            let negative = i.lt(0).unwrap_or(false);
            let what = if negative {
                "is negative"
            } else {
                "is too large"
            };
            invalid(py, name, format!("{} {what}; {allowed}", short_repr(obj)))
        }
        Err(_) => invalid(
            py,
            name,
            format!(
                "got {} of type {}; {allowed}",
                short_repr(obj),
                type_name(obj)
            ),
        ),
    }
}

/// A batch size: an int in `1..=MAX_BATCH`.
pub fn batch_arg(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    let n = u64_arg(obj, "batch size")?;
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    segflake::check_batch_size(n).py_err(obj.py())?;
    Ok(n)
}

/// An int that must fit a `u8` bit width (the core checks the real range).
pub fn bits_arg(obj: &Bound<'_, PyAny>, name: &'static str) -> PyResult<u8> {
    let v = u64_arg(obj, name)?;
    u8::try_from(v).map_err(|_| {
        crate::errors::to_py_err(
            obj.py(),
            segflake::Error::InvalidLayout {
                reason: format!("{name} is {v}; bit widths are at most 63"),
            },
        )
    })
}

/// A `str` argument.
pub fn str_arg(obj: &Bound<'_, PyAny>, name: &'static str, allowed: &str) -> PyResult<String> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    Err(invalid(
        obj.py(),
        name,
        format!(
            "got {} of type {}; expected a str: {allowed}",
            short_repr(obj),
            type_name(obj)
        ),
    ))
}

static DATETIME: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DATE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A point in time as Unix milliseconds: an int, an ISO-8601 UTC string
/// (`segflake::datetime::parse_time_ms`), a timezone-aware `datetime` or a `date`
/// (midnight UTC).
pub fn time_arg(obj: &Bound<'_, PyAny>, name: &'static str) -> PyResult<u64> {
    let py = obj.py();
    if obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyBool>() {
        return u64_arg(obj, name);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return segflake::datetime::parse_time_ms(&s.to_cow()?).py_err(py);
    }
    let datetime = DATETIME.import(py, "datetime", "datetime")?;
    let date = DATE.import(py, "datetime", "date")?;
    if obj.is_instance(datetime)? {
        if obj.call_method0("utcoffset")?.is_none() {
            return Err(invalid(
                py,
                name,
                format!(
                    "{} is a naive datetime; give a timezone-aware one, e.g. \
                     datetime(2025, 1, 1, tzinfo=timezone.utc)",
                    short_repr(obj)
                ),
            ));
        }
        let utc = py.import("datetime")?.getattr("timezone")?.getattr("utc")?;
        let epoch = datetime.call1((1970, 1, 1, 0, 0, 0, 0, utc))?;
        let delta = obj.sub(epoch)?;
        let days: i64 = delta.getattr("days")?.extract()?;
        let seconds: i64 = delta.getattr("seconds")?.extract()?;
        let micros: i64 = delta.getattr("microseconds")?.extract()?;
        let ms = days
            .checked_mul(86_400_000)
            .and_then(|d| d.checked_add(seconds * 1000 + micros / 1000));
        return match ms.and_then(|ms| u64::try_from(ms).ok()) {
            Some(ms) => Ok(ms),
            None => Err(invalid(
                py,
                name,
                format!("{} is before 1970-01-01T00:00:00Z", short_repr(obj)),
            )),
        };
    }
    if obj.is_instance(date)? {
        let iso: String = obj.call_method0("isoformat")?.extract()?;
        return segflake::datetime::parse_time_ms(&iso).py_err(py);
    }
    if obj.hasattr("__index__")? {
        return u64_arg(obj, name);
    }
    Err(invalid(
        py,
        name,
        format!(
            "got {} of type {}; expected Unix milliseconds (int), an ISO-8601 UTC string such \
             as '2025-01-01T00:00:00Z', or a timezone-aware datetime",
            short_repr(obj),
            type_name(obj)
        ),
    ))
}

/// `None` or a time.
pub fn opt_time_arg(obj: Option<&Bound<'_, PyAny>>, name: &'static str) -> PyResult<Option<u64>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => time_arg(o, name).map(Some),
    }
}

/// Bytes of a `bytes`, `bytearray` or other buffer (through `bytes(obj)`), or `None` if
/// `obj` is not bytes-like.
pub fn bytes_like(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Some(b.as_bytes().to_vec()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Some(b.to_vec()));
    }
    let py = obj.py();
    let memoryview = py.import("builtins")?.getattr("memoryview")?;
    if obj.is_instance(&memoryview)? {
        let b = py.import("builtins")?.getattr("bytes")?.call1((obj,))?;
        return Ok(Some(b.cast::<PyBytes>()?.as_bytes().to_vec()));
    }
    Ok(None)
}

/// Looks up optional keys in a dict, refusing keys that are not in `allowed`.
pub fn check_keys(dict: &Bound<'_, PyDict>, what: &'static str, allowed: &[&str]) -> PyResult<()> {
    for key in dict.keys() {
        let ok = key
            .cast::<PyString>()
            .ok()
            .and_then(|k| k.to_cow().ok().map(|k| allowed.contains(&k.as_ref())))
            .unwrap_or(false);
        if !ok {
            return Err(invalid(
                dict.py(),
                what,
                format!(
                    "unknown key {}; allowed keys: {}",
                    short_repr(&key),
                    allowed.join(", ")
                ),
            ));
        }
    }
    Ok(())
}
