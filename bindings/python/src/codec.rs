//! Text codecs and the obfuscator.

use crate::convert::{bytes_like, given, refuse, str_arg, u64_arg, Obj};
use crate::errors::IntoPyResult;
use pyo3::prelude::*;
use pyo3::types::PyString;
use segflake::{codec, Format, Obfuscator};

const FORMATS: &str = "'decimal', 'base62' or 'base32'";

fn format_arg(format: Option<&Obj<'_>>) -> PyResult<Format> {
    match given(format) {
        None => Ok(Format::Decimal),
        Some(f) => {
            let name = str_arg(f, "format", FORMATS)?;
            Format::from_name(&name).py_err(f.py())
        }
    }
}

fn text_arg(text: &Obj<'_>) -> PyResult<String> {
    str_arg(text, "text", "the text form of an ID")
}

/// `id` as text in `format` (`"decimal"` by default, `"base62"`, `"base32"`).
#[pyfunction]
#[pyo3(signature = (id, format=None))]
pub fn encode(id: &Obj<'_>, format: Option<&Obj<'_>>) -> PyResult<String> {
    let id = u64_arg(id, "id")?;
    Ok(format_arg(format)?.encode(id))
}

/// Parses text produced by `encode` in the same format.
#[pyfunction]
#[pyo3(signature = (text, format=None))]
pub fn parse(text: &Obj<'_>, format: Option<&Obj<'_>>) -> PyResult<u64> {
    let f = format_arg(format)?;
    f.parse(&text_arg(text)?).py_err(text.py())
}

/// The decimal form of `id`.
#[pyfunction]
pub fn encode_decimal(id: &Obj<'_>) -> PyResult<String> {
    Ok(u64_arg(id, "id")?.to_string())
}

/// Parses a decimal ID: ASCII digits only, no sign or spaces, at most 2^64-1.
#[pyfunction]
pub fn parse_decimal(text: &Obj<'_>) -> PyResult<u64> {
    codec::parse_decimal(&text_arg(text)?).py_err(text.py())
}

/// The 11-character base62 form of `id` (sorts like the number).
#[pyfunction]
pub fn encode_base62(id: &Obj<'_>) -> PyResult<String> {
    Ok(codec::encode_base62(u64_arg(id, "id")?))
}

/// Parses an 11-character base62 ID.
#[pyfunction]
pub fn parse_base62(text: &Obj<'_>) -> PyResult<u64> {
    codec::parse_base62(&text_arg(text)?).py_err(text.py())
}

/// The 13-character Crockford base32 form of `id` (sorts like the number).
#[pyfunction]
pub fn encode_base32(id: &Obj<'_>) -> PyResult<String> {
    Ok(codec::encode_base32(u64_arg(id, "id")?))
}

/// Parses a 13-character Crockford base32 ID (case-insensitive; I and L read as 1, O as 0).
#[pyfunction]
pub fn parse_base32(text: &Obj<'_>) -> PyResult<u64> {
    codec::parse_base32(&text_arg(text)?).py_err(text.py())
}

/// A keyed, reversible permutation of `0..2^63` for IDs shown to the public.
#[pyclass(name = "Obfuscator", module = "segflake", frozen)]
pub struct PyObfuscator {
    inner: Obfuscator,
}

#[pymethods]
impl PyObfuscator {
    /// `key`: exactly 16 bytes, or a string of 32 hex digits.
    #[new]
    fn new(key: &Obj<'_>) -> PyResult<Self> {
        let py = key.py();
        let inner = if let Ok(s) = key.cast::<PyString>() {
            Obfuscator::from_hex_key(&s.to_cow()?)
        } else if let Some(b) = bytes_like(key)? {
            Obfuscator::from_key_bytes(&b)
        } else {
            return Err(refuse(key, "key", "16 bytes or a string of 32 hex digits"));
        };
        let inner = inner.py_err(py)?;
        Ok(PyObfuscator { inner })
    }

    /// Maps an ID below 2^63 to another ID below 2^63.
    fn obfuscate(&self, id: &Obj<'_>) -> PyResult<u64> {
        self.inner.obfuscate(u64_arg(id, "id")?).py_err(id.py())
    }

    /// The inverse of `obfuscate`.
    fn deobfuscate(&self, id: &Obj<'_>) -> PyResult<u64> {
        self.inner.deobfuscate(u64_arg(id, "id")?).py_err(id.py())
    }

    fn __repr__(&self) -> &'static str {
        "Obfuscator(<key hidden>)"
    }
}
