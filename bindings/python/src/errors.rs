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
use segflake::{Error, ErrorKind};

struct Classes {
    base: Py<PyType>,
    by_kind: Vec<(ErrorKind, Py<PyType>)>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn doc_for(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidLayout => {
            "A layout parameter is out of range (bit widths, tick, epoch in the future)."
        }
        ErrorKind::LayoutExhausted => {
            "The layout's time field runs out before now + min_lifetime_years."
        }
        ErrorKind::WorkerIdOutOfRange => "A worker ID does not fit the layout's worker field.",
        ErrorKind::ClockMovedBackwards => {
            "The clock is behind the last issued tick by more than max_drift_ms."
        }
        ErrorKind::ClockBeforeEpoch => "The clock reads a time before the layout's epoch.",
        ErrorKind::TimeExhausted => {
            "The layout's time field has run out: no further IDs can be issued."
        }
        ErrorKind::InvalidArgument => {
            "An argument has the wrong type, is out of its allowed range or is malformed."
        }
        ErrorKind::Parse => "A textual ID (decimal, base62, base32) could not be parsed.",
        ErrorKind::StoreContractViolation => {
            "A store returned a range that is invalid or overlaps one already received."
        }
        ErrorKind::SegmentsExhausted => {
            "Both segment buffers are empty and the store did not deliver in time."
        }
        ErrorKind::Store => "A store (or counter) operation failed.",
        ErrorKind::SerialExhausted => {
            "A date-prefixed serial ran out of sequence numbers within one second."
        }
        ErrorKind::Closed => {
            "The generator was closed, or was inherited by a forked child process."
        }
        _ => "A segflake error.",
    }
}

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
            let ns = PyDict::new(py);
            ns.set_item("__module__", "segflake")?;
            ns.set_item("__doc__", doc_for(kind))?;
            ns.set_item("code", kind.code())?;
            ns.set_item("status", kind.status())?;
            // Argument and parse errors are also ValueErrors, as Python code expects.
            let bases = if matches!(kind, ErrorKind::InvalidArgument | ErrorKind::Parse) {
                PyTuple::new(
                    py,
                    [
                        base.clone().into_any(),
                        py.get_type::<PyValueError>().into_any(),
                    ],
                )?
            } else {
                PyTuple::new(py, [base.clone().into_any()])?
            };
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
    match e {
        Error::LayoutExhausted {
            exhausts_at_ms,
            min_lifetime_years,
            checked_at_ms,
        } => {
            inst.setattr("exhausts_at_ms", exhausts_at_ms)?;
            inst.setattr("min_lifetime_years", min_lifetime_years)?;
            inst.setattr("checked_at_ms", checked_at_ms)?;
        }
        Error::WorkerIdOutOfRange {
            worker_id,
            worker_bits,
        } => {
            inst.setattr("worker_id", worker_id)?;
            inst.setattr("worker_bits", worker_bits)?;
        }
        Error::ClockMovedBackwards {
            by_ms,
            max_drift_ms,
        } => {
            inst.setattr("by_ms", by_ms)?;
            inst.setattr("max_drift_ms", max_drift_ms)?;
        }
        Error::ClockBeforeEpoch { now_ms, epoch_ms } => {
            inst.setattr("now_ms", now_ms)?;
            inst.setattr("epoch_ms", epoch_ms)?;
        }
        Error::TimeExhausted { exhausts_at_ms } => {
            inst.setattr("exhausts_at_ms", exhausts_at_ms)?;
        }
        Error::StoreContractViolation { tag, .. } | Error::SegmentsExhausted { tag, .. } => {
            inst.setattr("tag", tag)?;
        }
        _ => {}
    }
    Ok(PyErr::from_value(inst))
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
