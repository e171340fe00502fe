//! `Layout`, `DecodedId` and the `layout=` argument of `decode` and `compose`.

use crate::convert::{
    configure, given, no_attribute, opt_time_arg, pairs_dict, record_class, repr_of, to_py,
    u64_arg, value_of, Obj,
};
use crate::errors::IntoPyResult;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use segflake::host::{self, Dialect, Record, Spelling, Value};
use segflake::{Clock, Layout, LayoutSpec, SystemClock};

record_class!(PyDecodedId, "DecodedId");

#[pymethods]
impl PyDecodedId {
    /// The start of the ID's tick as a timezone-aware UTC datetime.
    #[getter]
    fn datetime<'py>(slf: &Bound<'py, Self>) -> PyResult<Obj<'py>> {
        let py = slf.py();
        let ms = slf
            .as_super()
            .get()
            .get("timestamp_ms")
            .and_then(Value::as_u64);
        let (epoch, one_ms) = crate::convert::epoch_and_ms(py)?;
        epoch.add(one_ms.mul(ms.unwrap_or(0))?)
    }
}

/// A validated snowflake layout.
#[pyclass(name = "Layout", module = "segflake", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct PyLayout {
    pub inner: Layout,
}

/// The layout a `layout=` argument names: a `Layout`, a preset name or a dict (validated now).
pub fn layout_arg(py: Python<'_>, obj: Option<&Obj<'_>>) -> PyResult<Layout> {
    let spec = match given(obj) {
        None => segflake::Preset::Twitter.spec(),
        Some(o) => match o.cast::<PyLayout>() {
            Ok(l) => return Ok(l.get().inner),
            Err(_) => host::layout_of(&value_of(o)?, Dialect::PYTHON).py_err(py)?,
        },
    };
    spec.build_at(SystemClock.now_ms()).py_err(py)
}

/// Shared by `Layout.compose`, `Snowflake.compose` and `segflake.compose`: the given
/// keyword arguments (`tick`, `worker_id`, `sequence`, `timestamp_ms`, `datacenter_id`),
/// read by the core.
pub fn compose_with(
    py: Python<'_>,
    layout: &Layout,
    args: [(&str, Option<&Obj<'_>>); 5],
    default_worker: u64,
) -> PyResult<u64> {
    let mut pairs = Vec::new();
    for (name, arg) in args {
        if let Some(obj) = given(arg) {
            pairs.push((name.to_owned(), value_of(obj)?));
        }
    }
    host::compose_of(layout, &Value::Map(pairs), default_worker, Dialect::PYTHON).py_err(py)
}

/// `Layout(time_bits=41, ...)`.
pub fn layout_repr(py: Python<'_>, l: &Layout) -> PyResult<String> {
    let settings = host::spelled_settings(&l.spec(), Spelling::Snake);
    repr_of(py, "Layout", &settings)
}

#[pymethods]
impl PyLayout {
    /// `Layout("sonyflake")`, `Layout("uid-generator", epoch_ms="2025-01-01")`,
    /// `Layout(time_bits=40, worker_bits=8, sequence_bits=15, ...)`: a preset, dict or
    /// Layout, with keyword overrides; missing fields come from the twitter preset.
    #[new]
    #[pyo3(signature = (preset=None, *, now_ms=None, **options),
        // <generated: text_signature Layout>
        text_signature = "(preset=None, *, time_bits=None, worker_bits=None, \
            datacenter_bits=None, sequence_bits=None, tick_ms=None, epoch_ms=None, order=None, \
            min_lifetime_years=None, now_ms=None)")]
    fn new(
        py: Python<'_>,
        preset: Option<&Obj<'_>>,
        now_ms: Option<&Obj<'_>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let now = opt_time_arg(now_ms, "now_ms")?;
        let no_overrides = options.is_none_or(|o| o.is_empty());
        let base = match given(preset) {
            None => segflake::Preset::Twitter.spec(),
            Some(p) => match p.cast::<PyLayout>() {
                Ok(l) if no_overrides && now.is_none() => return Ok(PyLayout { ..*l.get() }),
                Ok(l) => l.get().inner.spec(),
                Err(_) => host::layout_of(&value_of(p)?, Dialect::PYTHON).py_err(py)?,
            },
        };
        let pairs = crate::convert::pairs_of(options)?;
        let spec = host::configure_onto(base, pairs, Dialect::PYTHON).py_err(py)?;
        let now = now.unwrap_or_else(|| SystemClock.now_ms());
        Ok(PyLayout {
            inner: spec.build_at(now).py_err(py)?,
        })
    }

    /// A preset, optionally with its epoch replaced.
    #[staticmethod]
    #[pyo3(signature = (name, epoch_ms=None))]
    fn preset(py: Python<'_>, name: &Obj<'_>, epoch_ms: Option<&Obj<'_>>) -> PyResult<Self> {
        let epoch = epoch_ms.map_or(Ok(Value::Null), value_of)?;
        let pairs = vec![
            ("preset".into(), value_of(name)?),
            ("epoch_ms".into(), epoch),
        ];
        let spec: LayoutSpec = configure(py, pairs, None, Dialect::PYTHON)?;
        let inner = spec.build_at(SystemClock.now_ms()).py_err(py)?;
        Ok(PyLayout { inner })
    }

    /// The layout's fields (`time_bits`, ..., `max_id`), read from the core's table.
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Obj<'py>> {
        let snake = !name.contains(char::is_uppercase);
        let value = host::record_value(&self.inner, name).filter(|_| snake);
        to_py(py, &value.ok_or_else(|| no_attribute("Layout", name))?)
    }

    fn __dir__(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Layout::FIELDS.iter().map(|f| f.name).collect();
        names.extend(["decode", "compose", "to_dict", "preset"]);
        names
    }

    /// Splits an ID of this layout into its fields.
    fn decode<'py>(&self, id: &Obj<'py>) -> PyResult<Bound<'py, PyDecodedId>> {
        let py = id.py();
        PyDecodedId::new(py, &self.inner.decode(u64_arg(id, "id")?).py_err(py)?)
    }

    /// Packs fields into an ID: give `tick` or `timestamp_ms` (exactly one); with
    /// `datacenter_id`, `worker_id` is the worker within that datacenter.
    #[pyo3(signature = (tick=None, worker_id=None, sequence=None, *, timestamp_ms=None, datacenter_id=None))]
    fn compose(
        &self,
        py: Python<'_>,
        tick: Option<&Obj<'_>>,
        worker_id: Option<&Obj<'_>>,
        sequence: Option<&Obj<'_>>,
        timestamp_ms: Option<&Obj<'_>>,
        datacenter_id: Option<&Obj<'_>>,
    ) -> PyResult<u64> {
        let args = compose_args(tick, worker_id, sequence, timestamp_ms, datacenter_id);
        compose_with(py, &self.inner, args, 0)
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
pub fn decode<'py>(id: &Obj<'py>, layout: Option<&Obj<'py>>) -> PyResult<Bound<'py, PyDecodedId>> {
    let py = id.py();
    let id = u64_arg(id, "id")?;
    PyDecodedId::new(py, &layout_arg(py, layout)?.decode(id).py_err(py)?)
}

/// Module-level `compose(tick=None, worker_id=None, sequence=0, *, timestamp_ms=None,
/// datacenter_id=None, layout="twitter")`.
#[pyfunction]
#[pyo3(signature = (tick=None, worker_id=None, sequence=None, *, timestamp_ms=None, datacenter_id=None, layout=None))]
pub fn compose(
    py: Python<'_>,
    tick: Option<&Obj<'_>>,
    worker_id: Option<&Obj<'_>>,
    sequence: Option<&Obj<'_>>,
    timestamp_ms: Option<&Obj<'_>>,
    datacenter_id: Option<&Obj<'_>>,
    layout: Option<&Obj<'_>>,
) -> PyResult<u64> {
    let layout = layout_arg(py, layout)?;
    let args = compose_args(tick, worker_id, sequence, timestamp_ms, datacenter_id);
    compose_with(py, &layout, args, 0)
}

/// The keyword arguments of the `compose` methods, named as the core reads them.
pub fn compose_args<'a, 'py>(
    tick: Option<&'a Obj<'py>>,
    worker_id: Option<&'a Obj<'py>>,
    sequence: Option<&'a Obj<'py>>,
    timestamp_ms: Option<&'a Obj<'py>>,
    datacenter_id: Option<&'a Obj<'py>>,
) -> [(&'static str, Option<&'a Obj<'py>>); 5] {
    [
        ("tick", tick),
        ("worker_id", worker_id),
        ("sequence", sequence),
        ("timestamp_ms", timestamp_ms),
        ("datacenter_id", datacenter_id),
    ]
}
