//! Exception classes: one per `segflake::ErrorKind`, all under `SegflakeError`.
//!
//! The classes are created at import time by looping over `ErrorKind::ALL`, so a kind
//! added to the core gets its Python class without touching this file. Each class has a
//! `code` class attribute (`ErrorKind::code()`); instances carry the core's message and,
//! where the core error has data, that data as attributes (`by_ms`, `tag`, ...).

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use segflake::{Detail, Error, ErrorKind};

struct Classes {
    base: Py<PyType>,
    by_kind: Vec<(ErrorKind, Py<PyType>)>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn classes(py: Python<'_>) -> PyResult<&Classes> {
    CLASSES.get_or_try_init(py, || {
        let type_ = py.import("builtins")?.getattr("type")?;
        let ns = PyDict::new(py);
        ns.set_item("__module__", "segflake")?;
        ns.set_item(
            "__doc__",
            "Base class of every error segflake raises. `code` is a stable string such as \
             'CLOCK_MOVED_BACKWARDS'.",
        )?;
        let bases = PyTuple::new(py, [py.get_type::<PyException>()])?;
        let base = type_
            .call1(("SegflakeError", bases, ns))?
            .cast_into::<PyType>()?;
        let mut by_kind = Vec::with_capacity(ErrorKind::ALL.len());
        for kind in ErrorKind::ALL {
            let doc = kind.summary();
            let ns = PyDict::new(py);
            ns.set_item("__module__", "segflake")?;
            ns.set_item("__doc__", doc)?;
            ns.set_item("code", kind.code())?;
            ns.set_item("status", kind.status())?;
            // Argument and parse errors are also ValueErrors, as Python code expects.
            let mut bases = vec![base.clone().into_any()];
            if matches!(kind, ErrorKind::InvalidArgument | ErrorKind::Parse) {
                bases.push(py.get_type::<PyValueError>().into_any());
            }
            let bases = PyTuple::new(py, bases)?;
            let cls = type_
                .call1((kind.class_name(), bases, ns))?
                .cast_into::<PyType>()?;
            by_kind.push((kind, cls.unbind()));
        }
        Ok::<_, PyErr>(Classes {
            base: base.unbind(),
            by_kind,
        })
    })
}

/// Adds `SegflakeError` and every kind's class to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let c = classes(py)?;
    m.add("SegflakeError", c.base.bind(py))?;
    for (kind, cls) in &c.by_kind {
        m.add(kind.class_name(), cls.bind(py))?;
    }
    Ok(())
}

/// The Python class of `kind`.
pub fn class_of(py: Python<'_>, kind: ErrorKind) -> PyResult<Bound<'_, PyType>> {
    let c = classes(py)?;
    c.by_kind
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, cls)| cls.bind(py).clone())
        .ok_or_else(|| PyException::new_err(format!("segflake: no class for {kind:?}")))
}

/// Translates a core error into an instance of its class.
pub fn to_py_err(py: Python<'_>, e: Error) -> PyErr {
    match build(py, &e) {
        Ok(err) => err,
        Err(failed) => failed,
    }
}

fn build(py: Python<'_>, e: &Error) -> PyResult<PyErr> {
    let cls = class_of(py, e.kind())?;
    let inst = cls.call1((e.to_string(),))?;
    for (name, detail) in e.details() {
        match detail {
            Detail::Number(n) => inst.setattr(name, n)?,
            Detail::Text(t) => inst.setattr(name, t)?,
        }
    }
    Ok(PyErr::from_value(inst))
}

/// A core error as an exception instance (for Python code to raise).
pub type Exception<'py> = PyResult<Bound<'py, pyo3::exceptions::PyBaseException>>;

pub fn exception(py: Python<'_>, e: Error) -> Bound<'_, pyo3::exceptions::PyBaseException> {
    to_py_err(py, e).into_value(py).into_bound(py)
}

/// A binding-level `InvalidArgumentError`.
pub fn invalid(py: Python<'_>, name: &'static str, reason: impl Into<String>) -> PyErr {
    to_py_err(
        py,
        Error::InvalidArgument {
            name: name.into(),
            reason: reason.into(),
        },
    )
}

/// Result extension: `core_result.py_err(py)?`.
pub trait IntoPyResult<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    #[inline]
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py_err(py, e))
    }
}
