//! Python values ↔ the core's host values, and the few argument checks that are not
//! options (IDs, batch sizes, tags). Options go through the core's tables
//! ([`configure`]); results come back through one generic record class ([`PyRecord`]).

use crate::errors::{invalid, IntoPyResult};
use crate::layout::PyLayout;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};
use segflake::host::{self, Dialect, FieldSpec, Kind, OptionSpec, Options, Record, Setting};
use segflake::host::{Spelling, Value};

/// Any Python object.
pub type Obj<'py> = Bound<'py, PyAny>;

/// The Python type name of `obj`, for messages.
pub fn type_name(obj: &Obj<'_>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

/// A short `repr` of `obj`, for messages.
pub fn short_repr(obj: &Obj<'_>) -> String {
    let r = obj
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| format!("<{}>", type_name(obj)));
    if r.chars().count() > 60 {
        format!("{}...", r.chars().take(57).collect::<String>())
    } else {
        r
    }
}

static DATETIME: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DATE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The one converter from Python to [`Value`]: bool, int (and `__index__` objects), float,
/// str, None, list/tuple, dict/Mapping, a `Layout` (its spec), a `datetime` (aware: Unix ms) or a
/// `date` (its ISO text); anything else is described for messages.
pub fn value_of(obj: &Obj<'_>) -> PyResult<Value> {
    let py = obj.py();
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(i) = obj.extract::<i128>() {
        return Ok(Value::Int(i));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Value::Opaque(short_repr(obj)));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Value::Float(f.value()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::Str(s.to_cow()?.into_owned()));
    }
    if obj.hasattr("__index__")? {
        return value_of(&py.import("operator")?.getattr("index")?.call1((obj,))?);
    }
    if let Ok(l) = obj.cast::<PyLayout>() {
        let spec = l.get().inner.spec();
        return Ok(Value::Map(host::spelled_settings(&spec, Spelling::Snake)));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items = obj
            .try_iter()?
            .map(|item| value_of(&item?))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Value::List(items));
    }
    let mapping = py.import("collections.abc")?.getattr("Mapping")?;
    if obj.is_instance(&mapping)? {
        let mut pairs = Vec::new();
        for item in obj.call_method0("items")?.try_iter()? {
            let (k, v): (Obj<'_>, Obj<'_>) = item?.extract()?;
            let key = k.extract::<String>().unwrap_or_else(|_| short_repr(&k));
            pairs.push((key, value_of(&v)?));
        }
        return Ok(Value::Map(pairs));
    }
    if obj.is_instance(DATETIME.import(py, "datetime", "datetime")?)? {
        if obj.call_method0("utcoffset")?.is_none() {
            return Ok(Value::Opaque(format!(
                "a naive datetime ({}; give a timezone-aware one, e.g. \
                 datetime(2025, 1, 1, tzinfo=timezone.utc))",
                short_repr(obj)
            )));
        }
        let (epoch, one_ms) = epoch_and_ms(py)?;
        return Ok(Value::Int(obj.sub(epoch)?.floor_div(one_ms)?.extract()?));
    }
    if obj.is_instance(DATE.import(py, "datetime", "date")?)? {
        return Ok(Value::Str(obj.call_method0("isoformat")?.extract()?));
    }
    let what = format!("an object of type {}", type_name(obj));
    Ok(Value::Opaque(what))
}

/// 1970-01-01T00:00:00Z as an aware `datetime`, and one millisecond as a `timedelta`.
pub fn epoch_and_ms(py: Python<'_>) -> PyResult<(Obj<'_>, Obj<'_>)> {
    let m = py.import("datetime")?;
    let utc = m.getattr("timezone")?.getattr("utc")?;
    let epoch = m
        .getattr("datetime")?
        .call_method1("fromtimestamp", (0, utc))?;
    Ok((epoch, m.getattr("timedelta")?.call1((0, 0, 0, 1))?))
}

/// A [`Value`] as a Python object (`Opaque` as its text).
pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Obj<'py>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) | Value::Opaque(s) => PyString::new(py, s).into_any(),
        Value::Map(pairs) => pairs_dict(py, pairs)?.into_any(),
        Value::List(items) => PyList::new(
            py,
            items
                .iter()
                .map(|v| to_py(py, v))
                .collect::<PyResult<Vec<_>>>()?,
        )?
        .into_any(),
    })
}

/// `(name, value)` pairs as a dict.
pub fn pairs_dict<'py, K: AsRef<str>>(
    py: Python<'py>,
    pairs: &[(K, Value)],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in pairs {
        d.set_item(k.as_ref(), to_py(py, v)?)?;
    }
    Ok(d)
}

/// The `(key, value)` pairs of keyword arguments.
pub fn pairs_of(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, Value)>> {
    let mut pairs = Vec::new();
    for (k, v) in kwargs.into_iter().flat_map(|d| d.iter()) {
        pairs.push((k.extract::<String>()?, value_of(&v)?));
    }
    Ok(pairs)
}

/// Options of `T` from keyword arguments, checked by the core's table.
pub fn configure<T: Options>(
    py: Python<'_>,
    first: Vec<(String, Value)>,
    kwargs: Option<&Bound<'_, PyDict>>,
    dialect: Dialect,
) -> PyResult<T> {
    let mut pairs = first;
    pairs.extend(pairs_of(kwargs)?);
    host::configure(pairs, dialect).py_err(py)
}

/// The settings of `options` as a dict, without options `dialect` does not have.
pub fn settings_dict<'py, T: Options>(
    py: Python<'py>,
    options: &T,
    dialect: Dialect,
) -> PyResult<Bound<'py, PyDict>> {
    let mut pairs = host::spelled_settings(options, host::Spelling::Snake);
    pairs.retain(|(k, _)| {
        T::SPECS
            .iter()
            .any(|s| s.name == k && s.accepted_by(dialect))
    });
    pairs_dict(py, &pairs)
}

/// Reads one value as the core reads an (unsigned) option of `kind` named `name`; the
/// fast path takes an int already in range.
fn checked(obj: &Obj<'_>, name: &'static str, min: u64, kind: Kind) -> PyResult<u64> {
    let max = match kind {
        Kind::UInt { max, .. } => max,
        _ => u64::MAX,
    };
    match obj.extract::<u64>() {
        Ok(v) if (min..=max).contains(&v) && !obj.is_instance_of::<PyBool>() => return Ok(v),
        _ => {}
    }
    let spec = OptionSpec::argument(name, name, kind);
    match host::check(&spec, &value_of(obj)?, Dialect::PYTHON).py_err(obj.py())? {
        Setting::UInt(v) => Ok(v),
        _ => unreachable!("an unsigned kind"),
    }
}

/// An int in `0..=u64::MAX` (`__index__` objects too; not bool).
#[inline]
pub fn u64_arg(obj: &Obj<'_>, name: &'static str) -> PyResult<u64> {
    checked(
        obj,
        name,
        0,
        Kind::UInt {
            min: 0,
            max: u64::MAX,
        },
    )
}

/// A point in time: Unix ms, an ISO-8601 UTC string, an aware `datetime` or a `date`.
pub fn time_arg(obj: &Obj<'_>, name: &'static str) -> PyResult<u64> {
    checked(obj, name, 0, Kind::Time)
}

/// A batch size: an int in `1..=MAX_BATCH`.
pub fn batch_arg(obj: &Obj<'_>) -> PyResult<usize> {
    let max = segflake::MAX_BATCH as u64;
    Ok(checked(obj, "batch size", 1, Kind::UInt { min: 1, max })? as usize)
}

/// The argument unless it is absent or `None`.
pub fn given<'a, 'py>(obj: Option<&'a Obj<'py>>) -> Option<&'a Obj<'py>> {
    obj.filter(|o| !o.is_none())
}

/// `None` or a time.
pub fn opt_time_arg(obj: Option<&Obj<'_>>, name: &'static str) -> PyResult<Option<u64>> {
    given(obj).map(|o| time_arg(o, name)).transpose()
}

/// A `str` argument.
pub fn str_arg(obj: &Obj<'_>, name: &'static str, allowed: &str) -> PyResult<String> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_cow()?.into_owned());
    }
    Err(refuse(obj, name, &format!("a str: {allowed}")))
}

/// The `InvalidArgumentError` for `obj` given as `name`: what it is, what is expected.
pub fn refuse(obj: &Obj<'_>, name: &'static str, expected: &str) -> PyErr {
    let got = format!("got {} of type {}", short_repr(obj), type_name(obj));
    invalid(obj.py(), name, format!("{got}; expected {expected}"))
}

/// A business tag.
pub fn tag_arg(obj: &Obj<'_>) -> PyResult<String> {
    str_arg(obj, "tag", "a business tag such as 'order'")
}

/// Bytes of a `bytes`, `bytearray` or `memoryview`, or `None` if `obj` is none of them.
pub fn bytes_like(obj: &Obj<'_>) -> PyResult<Option<Vec<u8>>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Some(b.as_bytes().to_vec()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Some(b.to_vec()));
    }
    let builtins = obj.py().import("builtins")?;
    if obj.is_instance(&builtins.getattr("memoryview")?)? {
        let b = builtins.getattr("bytes")?.call1((obj,))?;
        return Ok(Some(b.cast::<PyBytes>()?.as_bytes().to_vec()));
    }
    Ok(None)
}

/// A result of the core (`DecodedId`, `SegmentStats`, `SerialParts`): its fields as
/// attributes, read from the core's field table.
#[pyclass(name = "Record", module = "segflake", frozen, subclass)]
pub struct PyRecord {
    name: &'static str,
    fields: &'static [FieldSpec],
    values: Vec<Value>,
}

impl PyRecord {
    pub fn of<R: Record>(r: &R) -> Self {
        let (name, fields, values) = (R::NAME, R::FIELDS, r.values());
        PyRecord {
            name,
            fields,
            values,
        }
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values
            .get(self.fields.iter().position(|f| f.name == name)?)
    }

    fn pairs(&self) -> Vec<(String, Value)> {
        let names = self.fields.iter().map(|f| f.name.to_owned());
        names.zip(self.values.iter().cloned()).collect()
    }
}

/// The `AttributeError` for a missing attribute.
pub fn no_attribute(class: &str, name: &str) -> PyErr {
    let message = format!("'{class}' object has no attribute '{name}'");
    pyo3::exceptions::PyAttributeError::new_err(message)
}

/// `Name(field=repr, ...)` for `(name, value)` pairs.
pub fn repr_of<K: AsRef<str>>(
    py: Python<'_>,
    name: &str,
    pairs: &[(K, Value)],
) -> PyResult<String> {
    let mut parts = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        parts.push(format!("{}={}", k.as_ref(), to_py(py, v)?.repr()?));
    }
    Ok(format!("{name}({})", parts.join(", ")))
}

#[pymethods]
impl PyRecord {
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Obj<'py>> {
        let value = self
            .get(name)
            .ok_or_else(|| no_attribute(self.name, name))?;
        to_py(py, value)
    }

    fn __dir__(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = self.fields.iter().map(|f| f.name).collect();
        names.push("to_dict");
        names
    }

    /// Every field in a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        pairs_dict(py, &self.pairs())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr_of(py, self.name, &self.pairs())
    }

    fn __eq__(&self, other: &Obj<'_>) -> bool {
        other
            .cast::<PyRecord>()
            .is_ok_and(|o| o.get().name == self.name && o.get().values == self.values)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        Value::Map(self.pairs()).to_json().hash(&mut h);
        h.finish()
    }
}

/// A record class per core record type, all sharing [`PyRecord`].
macro_rules! record_class {
    ($rust:ident, $name:literal) => {
        #[doc = concat!("A `", $name, "` result of the core (fields from its table).")]
        #[pyclass(name = $name, module = "segflake", frozen, extends = crate::convert::PyRecord)]
        pub struct $rust;

        impl $rust {
            pub fn new<'py, R: segflake::host::Record>(
                py: Python<'py>,
                r: &R,
            ) -> PyResult<Bound<'py, $rust>> {
                let init = pyo3::PyClassInitializer::from(crate::convert::PyRecord::of(r));
                Bound::new(py, init.add_subclass($rust))
            }
        }
    };
}
pub(crate) use record_class;
