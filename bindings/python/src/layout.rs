//! `Layout`, `DecodedId` and the `layout=` option shared by every constructor.

use crate::args::{bits_arg, check_keys, short_repr, str_arg, time_arg, type_name, u64_arg};
use crate::errors::{invalid, IntoPyResult};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyType};
use segflake::{Clock, DecodedId, FieldOrder, Layout, LayoutSpec, Preset, SystemClock};

const LAYOUT_KEYS: [&str; 8] = [
    "preset",
    "time_bits",
    "worker_bits",
    "sequence_bits",
    "tick_ms",
    "epoch_ms",
    "order",
    "min_lifetime_years",
];

const LAYOUT_ALLOWED: &str = "a preset name ('twitter', 'sonyflake', 'uid-generator', \
     'js-safe'), a dict of time_bits, worker_bits, sequence_bits, tick_ms, epoch_ms, order, \
     min_lifetime_years (optionally with 'preset'), or a segflake.Layout";

/// Explicit field overrides, applied on top of a base spec.
#[derive(Default)]
pub struct Overrides<'a, 'py> {
    pub time_bits: Option<&'a Bound<'py, PyAny>>,
    pub worker_bits: Option<&'a Bound<'py, PyAny>>,
    pub sequence_bits: Option<&'a Bound<'py, PyAny>>,
    pub tick_ms: Option<&'a Bound<'py, PyAny>>,
    pub epoch_ms: Option<&'a Bound<'py, PyAny>>,
    pub order: Option<&'a Bound<'py, PyAny>>,
    pub min_lifetime_years: Option<&'a Bound<'py, PyAny>>,
}

fn present<'a, 'py>(o: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    o.filter(|v| !v.is_none())
}

impl Overrides<'_, '_> {
    fn is_empty(&self) -> bool {
        [
            self.time_bits,
            self.worker_bits,
            self.sequence_bits,
            self.tick_ms,
            self.epoch_ms,
            self.order,
            self.min_lifetime_years,
        ]
        .iter()
        .all(|o| present(*o).is_none())
    }

    fn apply(&self, spec: &mut LayoutSpec) -> PyResult<()> {
        if let Some(v) = present(self.time_bits) {
            spec.time_bits = bits_arg(v, "time_bits")?;
        }
        if let Some(v) = present(self.worker_bits) {
            spec.worker_bits = bits_arg(v, "worker_bits")?;
        }
        if let Some(v) = present(self.sequence_bits) {
            spec.sequence_bits = bits_arg(v, "sequence_bits")?;
        }
        if let Some(v) = present(self.tick_ms) {
            spec.tick_ms = u64_arg(v, "tick_ms")?;
        }
        if let Some(v) = present(self.epoch_ms) {
            spec.epoch_ms = time_arg(v, "epoch_ms")?;
        }
        if let Some(v) = present(self.order) {
            let name = str_arg(
                v,
                "order",
                "'time-worker-sequence' or 'time-sequence-worker'",
            )?;
            spec.order = FieldOrder::from_name(&name).py_err(v.py())?;
        }
        if let Some(v) = present(self.min_lifetime_years) {
            let years = u64_arg(v, "min_lifetime_years")?;
            spec.min_lifetime_years = u32::try_from(years).map_err(|_| {
                invalid(
                    v.py(),
                    "min_lifetime_years",
                    format!("{years} is too large; allowed 0..=10000"),
                )
            })?;
        }
        Ok(())
    }
}

fn preset_spec(obj: &Bound<'_, PyAny>) -> PyResult<LayoutSpec> {
    let name = str_arg(obj, "layout", LAYOUT_ALLOWED)?;
    Ok(Preset::from_name(&name).py_err(obj.py())?.spec())
}

/// What a `layout=` value describes: a finished layout or a spec still to validate.
enum Base {
    Built(Layout),
    Spec(LayoutSpec),
}

fn base_of<'py>(obj: Option<&Bound<'py, PyAny>>) -> PyResult<(Base, Option<Bound<'py, PyDict>>)> {
    let Some(obj) = present(obj) else {
        return Ok((Base::Spec(Preset::Twitter.spec()), None));
    };
    if let Ok(l) = obj.cast::<PyLayout>() {
        return Ok((Base::Built(l.get().inner), None));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok((Base::Spec(preset_spec(obj)?), None));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        check_keys(d, "layout", &LAYOUT_KEYS)?;
        let spec = match present(d.get_item("preset")?.as_ref()) {
            Some(p) => preset_spec(p)?,
            None => Preset::Twitter.spec(),
        };
        return Ok((Base::Spec(spec), Some(d.clone())));
    }
    Err(invalid(
        obj.py(),
        "layout",
        format!(
            "got {} of type {}; expected {LAYOUT_ALLOWED}",
            short_repr(obj),
            type_name(obj)
        ),
    ))
}

/// Resolves a `layout=` value plus explicit overrides into a validated layout.
///
/// A `Layout` given with no overrides is used as it is (it was validated when built);
/// anything else is validated now (or at `now_ms`, when given).
pub fn resolve(
    py: Python<'_>,
    layout: Option<&Bound<'_, PyAny>>,
    overrides: &Overrides<'_, '_>,
    now_ms: Option<u64>,
) -> PyResult<Layout> {
    let (base, dict) = base_of(layout)?;
    let mut spec = match base {
        Base::Built(l) if overrides.is_empty() && now_ms.is_none() => return Ok(l),
        Base::Built(l) => l.spec(),
        Base::Spec(s) => s,
    };
    if let Some(d) = dict {
        let get = |k: &str| d.get_item(k);
        let (tb, wb, sb, t, e, o, m) = (
            get("time_bits")?,
            get("worker_bits")?,
            get("sequence_bits")?,
            get("tick_ms")?,
            get("epoch_ms")?,
            get("order")?,
            get("min_lifetime_years")?,
        );
        Overrides {
            time_bits: tb.as_ref(),
            worker_bits: wb.as_ref(),
            sequence_bits: sb.as_ref(),
            tick_ms: t.as_ref(),
            epoch_ms: e.as_ref(),
            order: o.as_ref(),
            min_lifetime_years: m.as_ref(),
        }
        .apply(&mut spec)?;
    }
    overrides.apply(&mut spec)?;
    let now = now_ms.unwrap_or_else(|| SystemClock.now_ms());
    spec.build_at(now).py_err(py)
}

/// The fields of a decoded ID.
#[pyclass(name = "DecodedId", module = "segflake", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct PyDecodedId {
    /// Unix milliseconds of the start of the ID's tick.
    #[pyo3(get)]
    pub timestamp_ms: u64,
    /// Ticks since the layout's epoch.
    #[pyo3(get)]
    pub tick: u64,
    #[pyo3(get)]
    pub worker_id: u64,
    #[pyo3(get)]
    pub sequence: u64,
}

impl From<DecodedId> for PyDecodedId {
    fn from(d: DecodedId) -> Self {
        PyDecodedId {
            timestamp_ms: d.timestamp_ms,
            tick: d.tick,
            worker_id: d.worker_id,
            sequence: d.sequence,
        }
    }
}

static DATETIME_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// A timezone-aware UTC `datetime` for Unix milliseconds.
pub fn utc_datetime(py: Python<'_>, ms: u64) -> PyResult<Bound<'_, PyAny>> {
    let dt = DATETIME_TYPE.import(py, "datetime", "datetime")?;
    let module = py.import("datetime")?;
    let utc = module.getattr("timezone")?.getattr("utc")?;
    let epoch = dt.call1((1970, 1, 1, 0, 0, 0, 0, utc))?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("milliseconds", ms)?;
    let delta = module.getattr("timedelta")?.call((), Some(&kwargs))?;
    epoch.add(delta)
}

#[pymethods]
impl PyDecodedId {
    /// The start of the ID's tick as a timezone-aware UTC datetime.
    #[getter]
    fn datetime<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        utc_datetime(py, self.timestamp_ms)
    }

    /// `{"timestamp_ms", "tick", "worker_id", "sequence"}`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("timestamp_ms", self.timestamp_ms)?;
        d.set_item("tick", self.tick)?;
        d.set_item("worker_id", self.worker_id)?;
        d.set_item("sequence", self.sequence)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "DecodedId(timestamp_ms={}, tick={}, worker_id={}, sequence={})",
            self.timestamp_ms, self.tick, self.worker_id, self.sequence
        )
    }
}

/// A validated snowflake layout.
#[pyclass(name = "Layout", module = "segflake", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct PyLayout {
    pub inner: Layout,
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
    let worker = match present(worker_id) {
        Some(w) => u64_arg(w, "worker_id")?,
        None => default_worker,
    };
    let sequence = match present(sequence) {
        Some(s) => u64_arg(s, "sequence")?,
        None => 0,
    };
    match (present(tick), present(timestamp_ms)) {
        (Some(t), None) => layout
            .compose(u64_arg(t, "tick")?, worker, sequence)
            .py_err(py),
        (None, Some(ts)) => layout
            .compose_at(time_arg(ts, "timestamp_ms")?, worker, sequence)
            .py_err(py),
        (Some(_), Some(_)) => Err(invalid(
            py,
            "compose arguments",
            "both tick and timestamp_ms were given; give exactly one",
        )),
        (None, None) => Err(invalid(
            py,
            "compose arguments",
            "neither tick nor timestamp_ms was given; give exactly one",
        )),
    }
}

pub fn layout_dict<'py>(py: Python<'py>, l: &Layout) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("time_bits", l.time_bits())?;
    d.set_item("worker_bits", l.worker_bits())?;
    d.set_item("sequence_bits", l.sequence_bits())?;
    d.set_item("tick_ms", l.tick_ms())?;
    d.set_item("epoch_ms", l.epoch_ms())?;
    d.set_item("order", l.order().name())?;
    d.set_item("min_lifetime_years", l.spec().min_lifetime_years)?;
    Ok(d)
}

#[pymethods]
impl PyLayout {
    /// `Layout("sonyflake")`, `Layout("uid-generator", epoch_ms="2025-01-01")`,
    /// `Layout(time_bits=40, worker_bits=8, sequence_bits=15, ...)`: a preset, dict or
    /// Layout, with keyword overrides; missing fields come from the twitter preset.
    #[new]
    #[pyo3(signature = (preset=None, *, time_bits=None, worker_bits=None, sequence_bits=None,
        tick_ms=None, epoch_ms=None, order=None, min_lifetime_years=None, now_ms=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        preset: Option<&Bound<'_, PyAny>>,
        time_bits: Option<&Bound<'_, PyAny>>,
        worker_bits: Option<&Bound<'_, PyAny>>,
        sequence_bits: Option<&Bound<'_, PyAny>>,
        tick_ms: Option<&Bound<'_, PyAny>>,
        epoch_ms: Option<&Bound<'_, PyAny>>,
        order: Option<&Bound<'_, PyAny>>,
        min_lifetime_years: Option<&Bound<'_, PyAny>>,
        now_ms: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let now = crate::args::opt_time_arg(now_ms, "now_ms")?;
        let overrides = Overrides {
            time_bits,
            worker_bits,
            sequence_bits,
            tick_ms,
            epoch_ms,
            order,
            min_lifetime_years,
        };
        Ok(PyLayout {
            inner: resolve(py, preset, &overrides, now)?,
        })
    }

    /// A preset, optionally with its epoch replaced.
    #[staticmethod]
    #[pyo3(signature = (name, epoch_ms=None))]
    fn preset(
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        epoch_ms: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let name = str_arg(name, "layout", LAYOUT_ALLOWED)?;
        let preset = PyString::new(py, &name).into_any();
        let overrides = Overrides {
            epoch_ms,
            ..Overrides::default()
        };
        Ok(PyLayout {
            inner: resolve(py, Some(&preset), &overrides, None)?,
        })
    }

    #[getter]
    fn time_bits(&self) -> u8 {
        self.inner.time_bits()
    }
    #[getter]
    fn worker_bits(&self) -> u8 {
        self.inner.worker_bits()
    }
    #[getter]
    fn sequence_bits(&self) -> u8 {
        self.inner.sequence_bits()
    }
    #[getter]
    fn tick_ms(&self) -> u64 {
        self.inner.tick_ms()
    }
    #[getter]
    fn epoch_ms(&self) -> u64 {
        self.inner.epoch_ms()
    }
    #[getter]
    fn order(&self) -> &'static str {
        self.inner.order().name()
    }
    #[getter]
    fn min_lifetime_years(&self) -> u32 {
        self.inner.spec().min_lifetime_years
    }
    #[getter]
    fn total_bits(&self) -> u32 {
        self.inner.total_bits()
    }
    #[getter]
    fn lifetime_ms(&self) -> u64 {
        self.inner.lifetime_ms()
    }
    #[getter]
    fn exhausts_at_ms(&self) -> u64 {
        self.inner.exhausts_at_ms()
    }
    #[getter]
    fn max_ids_per_second(&self) -> u64 {
        self.inner.max_ids_per_second()
    }
    #[getter]
    fn js_safe_until_ms(&self) -> Option<u64> {
        self.inner.js_safe_until_ms()
    }
    #[getter]
    fn max_worker_id(&self) -> u64 {
        self.inner.max_worker_id()
    }
    #[getter]
    fn max_sequence(&self) -> u64 {
        self.inner.max_sequence()
    }
    #[getter]
    fn max_tick(&self) -> u64 {
        self.inner.max_tick()
    }
    #[getter]
    fn max_id(&self) -> u64 {
        self.inner.max_id()
    }

    /// Splits an ID of this layout into its fields.
    fn decode(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<PyDecodedId> {
        let id = u64_arg(id, "id")?;
        Ok(self.inner.decode(id).py_err(py)?.into())
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
        layout_dict(py, &self.inner)
    }

    fn __repr__(&self) -> String {
        layout_repr(&self.inner)
    }
}

/// `Layout(time_bits=41, ...)`.
pub fn layout_repr(l: &Layout) -> String {
    {
        format!(
            "Layout(time_bits={}, worker_bits={}, sequence_bits={}, tick_ms={}, epoch_ms={}, \
             order='{}', min_lifetime_years={})",
            l.time_bits(),
            l.worker_bits(),
            l.sequence_bits(),
            l.tick_ms(),
            l.epoch_ms(),
            l.order().name(),
            l.spec().min_lifetime_years
        )
    }
}

/// Module-level `decode(id, layout="twitter")`.
#[pyfunction]
#[pyo3(signature = (id, layout=None))]
pub fn decode(
    py: Python<'_>,
    id: &Bound<'_, PyAny>,
    layout: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyDecodedId> {
    let id = u64_arg(id, "id")?;
    let layout = resolve(py, layout, &Overrides::default(), None)?;
    Ok(layout.decode(id).py_err(py)?.into())
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
    let layout = resolve(py, layout, &Overrides::default(), None)?;
    compose_with(py, &layout, tick, worker_id, 0, sequence, timestamp_ms)
}
