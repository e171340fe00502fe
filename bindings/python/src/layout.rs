//! `Layout`, `DecodedId` and the `layout=` argument of `decode` and `compose`.

use crate::convert::{
    configure, opt_time_arg, pairs_dict, record_class, repr_of, time_arg, to_py, u64_arg, value_of,
};
use crate::errors::{invalid, IntoPyResult};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use segflake::host::{self, Dialect, Record, Spelling, Value};
use segflake::{Clock, Layout, LayoutSpec, SystemClock};

record_class!(PyDecodedId, "DecodedId");

#[pymethods]
impl PyDecodedId {
    /// The start of the ID's tick as a timezone-aware UTC datetime.
    #[getter]
    fn datetime<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let ms = slf
            .as_super()
            .get()
            .get("timestamp_ms")
            .and_then(Value::as_u64);
        let m = py.import("datetime")?;
        let epoch = m.getattr("datetime")?.call1((
            1970,
            1,
            1,
            0,
            0,
            0,
            0,
            m.getattr("timezone")?.getattr("utc")?,
        ))?;
        epoch.add(m.getattr("timedelta")?.call1((0, 0, 0, ms.unwrap_or(0)))?)
    }
}

/// A validated snowflake layout.
#[pyclass(name = "Layout", module = "segflake", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct PyLayout {
    pub inner: Layout,
}

/// The layout a `layout=` argument names: a `Layout`, a preset name or a dict (validated now).
pub fn layout_arg(py: Python<'_>, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Layout> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return segflake::Preset::Twitter
            .spec()
            .build_at(SystemClock.now_ms())
            .py_err(py);
    };
    if let Ok(l) = obj.cast::<PyLayout>() {
        return Ok(l.get().inner);
    }
    let spec = host::layout_of(&value_of(obj)?, Dialect::PYTHON).py_err(py)?;
    spec.build_at(SystemClock.now_ms()).py_err(py)
}

/// Shared by `Layout.compose`, `Snowflake.compose` and `segflake.compose`.
pub fn compose_with(
    py: Python<'_>,
    layout: &Layout,
    tick: Option<&Bound<'_, PyAny>>,
    worker_id: Option<&Bound<'_, PyAny>>,
    default_worker: u64,
    sequence: Option<&Bound<'_, PyAny>>,
    timestamp_ms: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let opt = |o: Option<&Bound<'_, PyAny>>, name, default| match o.filter(|v| !v.is_none()) {
        Some(v) => u64_arg(v, name),
        None => Ok(default),
    };
    let worker = opt(worker_id, "worker_id", default_worker)?;
    let sequence = opt(sequence, "sequence", 0)?;
    match (
        tick.filter(|t| !t.is_none()),
        timestamp_ms.filter(|t| !t.is_none()),
    ) {
        (Some(t), None) => layout
            .compose(u64_arg(t, "tick")?, worker, sequence)
            .py_err(py),
        (None, Some(ts)) => layout
            .compose_at(time_arg(ts, "timestamp_ms")?, worker, sequence)
            .py_err(py),
        (t, _) => Err(invalid(
            py,
            "compose arguments",
            if t.is_some() {
                "both tick and timestamp_ms were given; give exactly one"
            } else {
                "neither tick nor timestamp_ms was given; give exactly one"
            },
        )),
    }
}

/// `Layout(time_bits=41, ...)`.
pub fn layout_repr(py: Python<'_>, l: &Layout) -> PyResult<String> {
    repr_of(
        py,
        "Layout",
        &host::spelled_settings(&l.spec(), Spelling::Snake),
    )
}

#[pymethods]
impl PyLayout {
    /// `Layout("sonyflake")`, `Layout("uid-generator", epoch_ms="2025-01-01")`,
    /// `Layout(time_bits=40, worker_bits=8, sequence_bits=15, ...)`: a preset, dict or
    /// Layout, with keyword overrides; missing fields come from the twitter preset.
    #[new]
    #[pyo3(signature = (preset=None, *, now_ms=None, **options),
        text_signature = "(preset=None, *, time_bits=None, worker_bits=None, \
            sequence_bits=None, tick_ms=None, epoch_ms=None, order=None, \
            min_lifetime_years=None, now_ms=None)")]
    fn new(
        py: Python<'_>,
        preset: Option<&Bound<'_, PyAny>>,
        now_ms: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let now = opt_time_arg(now_ms, "now_ms")?;
        let no_overrides = options.is_none_or(|o| o.is_empty());
        let base = match preset.filter(|p| !p.is_none()) {
            None => segflake::Preset::Twitter.spec(),
            Some(p) => match p.cast::<PyLayout>() {
                Ok(l) if no_overrides && now.is_none() => {
                    return Ok(PyLayout {
                        inner: l.get().inner,
                    })
                }
                Ok(l) => l.get().inner.spec(),
                Err(_) => host::layout_of(&value_of(p)?, Dialect::PYTHON).py_err(py)?,
            },
        };
        let pairs = crate::convert::pairs_of(options)?;
        let spec = host::configure_onto(base, pairs, Dialect::PYTHON).py_err(py)?;
        let inner = spec
            .build_at(now.unwrap_or_else(|| SystemClock.now_ms()))
            .py_err(py)?;
        Ok(PyLayout { inner })
    }

    /// A preset, optionally with its epoch replaced.
    #[staticmethod]
    #[pyo3(signature = (name, epoch_ms=None))]
    fn preset(
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        epoch_ms: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let pairs = vec![
            ("preset".to_owned(), value_of(name)?),
            (
                "epoch_ms".to_owned(),
                epoch_ms.map_or(Ok(Value::Null), value_of)?,
            ),
        ];
        let spec: LayoutSpec = configure(py, pairs, None, Dialect::PYTHON)?;
        let inner = spec.build_at(SystemClock.now_ms()).py_err(py)?;
        Ok(PyLayout { inner })
    }

    /// The layout's fields (`time_bits`, ..., `max_id`), read from the core's table.
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        match host::record_value(&self.inner, name).filter(|_| !name.contains(char::is_uppercase)) {
            Some(v) => to_py(py, &v),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "'Layout' object has no attribute '{name}'"
            ))),
        }
    }

    fn __dir__(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Layout::FIELDS.iter().map(|f| f.name).collect();
        names.extend(["decode", "compose", "to_dict", "preset"]);
        names
    }

    /// Splits an ID of this layout into its fields.
    fn decode<'py>(&self, id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDecodedId>> {
        let py = id.py();
        PyDecodedId::new(py, &self.inner.decode(u64_arg(id, "id")?).py_err(py)?)
    }

    /// Packs fields into an ID: give `tick` or `timestamp_ms` (exactly one).
    #[pyo3(signature = (tick=None, worker_id=None, sequence=None, *, timestamp_ms=None))]
    fn compose(
        &self,
        py: Python<'_>,
        tick: Option<&Bound<'_, PyAny>>,
        worker_id: Option<&Bound<'_, PyAny>>,
        sequence: Option<&Bound<'_, PyAny>>,
        timestamp_ms: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        compose_with(py, &self.inner, tick, worker_id, 0, sequence, timestamp_ms)
    }

    /// The parameters as a dict accepted by `layout=` and `Layout(...)`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        pairs_dict(
            py,
            &host::spelled_settings(&self.inner.spec(), Spelling::Snake),
        )
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        layout_repr(py, &self.inner)
    }
}

/// Module-level `decode(id, layout="twitter")`.
#[pyfunction]
#[pyo3(signature = (id, layout=None))]
pub fn decode<'py>(
    id: &Bound<'py, PyAny>,
    layout: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDecodedId>> {
    let py = id.py();
    let id = u64_arg(id, "id")?;
    PyDecodedId::new(py, &layout_arg(py, layout)?.decode(id).py_err(py)?)
}

/// Module-level `compose(tick=None, worker_id=None, sequence=0, *, timestamp_ms=None, layout="twitter")`.
#[pyfunction]
#[pyo3(signature = (tick=None, worker_id=None, sequence=None, *, timestamp_ms=None, layout=None))]
pub fn compose(
    py: Python<'_>,
    tick: Option<&Bound<'_, PyAny>>,
    worker_id: Option<&Bound<'_, PyAny>>,
    sequence: Option<&Bound<'_, PyAny>>,
    timestamp_ms: Option<&Bound<'_, PyAny>>,
    layout: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let layout = layout_arg(py, layout)?;
    compose_with(py, &layout, tick, worker_id, 0, sequence, timestamp_ms)
}
