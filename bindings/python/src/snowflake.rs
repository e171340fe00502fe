//! `Snowflake` and `ManualClock`.

use crate::batch::{ids_bytes, ids_into, ids_list};
use crate::convert::{
    configure, given, no_attribute, refuse, settings_dict, time_arg, u64_arg, value_of, Obj,
};
use crate::errors::IntoPyResult;
use crate::layout::{compose_with, PyDecodedId, PyLayout};
use crate::Checked;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use segflake::fork::Origin;
use segflake::host::{Dialect, SnowflakeConfig, Spelling};
use segflake::{Clock, ManualClock, Snowflake, SystemClock};
use std::sync::Arc;

use crate::batch::DETACH_AT;

/// The clock a generator reads: the system clock (which releases the GIL while the
/// generator waits for the next tick) or a `ManualClock` for tests and simulations.
pub enum HostClock {
    System,
    Manual(Arc<ManualClock>),
}

impl Clock for HostClock {
    #[inline]
    fn now_ms(&self) -> u64 {
        match self {
            HostClock::System => SystemClock.now_ms(),
            HostClock::Manual(c) => c.now_ms(),
        }
    }

    fn wait_until_ms(&self, unix_ms: u64) -> segflake::Result<()> {
        match self {
            // Attaching is free when the caller holds the GIL, and takes it when the
            // caller had released it; either way it is released for the wait.
            HostClock::System => {
                Python::attach(|py| py.detach(|| SystemClock.wait_until_ms(unix_ms)))
            }
            HostClock::Manual(c) => c.wait_until_ms(unix_ms),
        }
    }
}

/// A clock that only moves when told to (for tests and simulations).
#[pyclass(name = "ManualClock", module = "segflake", frozen)]
pub struct PyManualClock {
    pub inner: Arc<ManualClock>,
}

#[pymethods]
impl PyManualClock {
    #[new]
    fn new(now_ms: &Obj<'_>) -> PyResult<Self> {
        Ok(PyManualClock {
            inner: Arc::new(ManualClock::new(time_arg(now_ms, "now_ms")?)),
        })
    }
    /// The current time in Unix milliseconds.
    #[getter]
    fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }
    /// How many times a generator waited on this clock.
    #[getter]
    fn waits(&self) -> u64 {
        self.inner.waits()
    }
    /// Sets the time (forwards or backwards).
    fn set_ms(&self, unix_ms: &Obj<'_>) -> PyResult<()> {
        self.inner.set_ms(time_arg(unix_ms, "unix_ms")?);
        Ok(())
    }
    /// Moves the time forwards.
    fn advance_ms(&self, ms: &Obj<'_>) -> PyResult<()> {
        self.inner.advance_ms(u64_arg(ms, "ms")?);
        Ok(())
    }
    /// Moves the time backwards (saturating at 0).
    fn rewind_ms(&self, ms: &Obj<'_>) -> PyResult<()> {
        self.inner.rewind_ms(u64_arg(ms, "ms")?);
        Ok(())
    }
    fn __repr__(&self) -> String {
        format!("ManualClock(now_ms={})", self.inner.now_ms())
    }
}

/// `clock=`: None (the system clock) or a `ManualClock`.
pub fn clock_arg(clock: Option<&Obj<'_>>) -> PyResult<HostClock> {
    let Some(c) = given(clock) else {
        return Ok(HostClock::System);
    };
    let expected = "None (the system clock) or a segflake.ManualClock";
    let manual = c
        .cast::<PyManualClock>()
        .map_err(|_| refuse(c, "clock", expected))?;
    Ok(HostClock::Manual(manual.get().inner.clone()))
}

/// A lock-free snowflake generator; share one instance between threads.
#[pyclass(name = "Snowflake", module = "segflake", frozen)]
pub struct PySnowflake {
    inner: Snowflake<HostClock>,
    origin: Origin,
}

impl PySnowflake {
    #[inline(always)]
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        self.origin.checked(py, "Snowflake")
    }

    /// Large batches are filled in chunks of about a quarter second of the layout's
    /// ceiling, with the GIL released, checking for signals (Ctrl-C) between chunks: a
    /// batch far above the ceiling waits for the clock and must stay interruptible.
    fn fill(&self, py: Python<'_>, out: &mut [u64]) -> PyResult<()> {
        if out.len() < DETACH_AT {
            return self.inner.next_ids(out).py_err(py);
        }
        let per_second = self.inner.layout().max_ids_per_second();
        let chunk = usize::try_from(per_second / 4)
            .unwrap_or(usize::MAX)
            .clamp(4096, 1 << 20);
        for part in out.chunks_mut(chunk) {
            py.detach(|| self.inner.next_ids(part)).py_err(py)?;
            py.check_signals()?;
        }
        Ok(())
    }
}

#[pymethods]
impl PySnowflake {
    #[new]
    #[pyo3(signature = (worker_id, *, clock=None, **options),
        text_signature = "(worker_id, *, layout='twitter', epoch_ms=None, max_drift_ms=2000, \
            sequence_start='zero', not_before_ms=None, clock=None)")]
    fn new(
        py: Python<'_>,
        worker_id: &Obj<'_>,
        clock: Option<&Obj<'_>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let clock = clock_arg(clock)?;
        let first = vec![("worker_id".to_owned(), value_of(worker_id)?)];
        let config: SnowflakeConfig = configure(py, first, options, Dialect::PYTHON)?;
        // A `Layout` object was validated when it was built: used as it is.
        let given = options.map(|o| o.get_item("layout")).transpose()?.flatten();
        let given = given.and_then(|l| Some(l.cast::<PyLayout>().ok()?.get().inner));
        let layout = match given {
            Some(l) if l.spec() == config.layout => l,
            _ => config
                .build_at(clock.now_ms(), Spelling::Snake)
                .py_err(py)?,
        };
        let inner = Snowflake::with_clock(layout, config.options, clock).py_err(py)?;
        Ok(PySnowflake {
            inner,
            origin: Origin::here(),
        })
    }

    /// The next ID: strictly greater than every ID this generator issued before.
    #[inline]
    fn next_id(&self, py: Python<'_>) -> PyResult<u64> {
        self.check(py)?;
        self.inner.next_id().py_err(py)
    }

    /// `n` strictly increasing IDs as a list.
    fn next_ids<'py>(&self, py: Python<'py>, n: &Obj<'py>) -> PyResult<Bound<'py, PyList>> {
        self.check(py)?;
        ids_list(py, n, |out| self.fill(py, out))
    }

    /// `n` IDs as native-endian unsigned 64-bit integers in a `bytes` object
    /// (`numpy.frombuffer(b, dtype=numpy.uint64)`, `array.array('Q', b)`).
    fn next_ids_bytes<'py>(&self, py: Python<'py>, n: &Obj<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.check(py)?;
        ids_bytes(py, n, |out| self.fill(py, out))
    }

    /// Fills a writable, C-contiguous buffer of 64-bit integers (a numpy `uint64`/`int64`
    /// array, `array.array('Q')`, a `memoryview`) with IDs; returns how many were written.
    fn next_ids_into(&self, py: Python<'_>, out: &Obj<'_>) -> PyResult<usize> {
        self.check(py)?;
        ids_into(out, |ids| self.fill(py, ids))
    }

    /// Unix milliseconds of the highest tick issued so far; persist it and pass it as
    /// `not_before_ms` after a restart.
    #[getter]
    fn high_water_mark_ms(&self) -> u64 {
        self.inner.high_water_mark_ms()
    }

    /// Alias of `high_water_mark_ms`.
    #[getter]
    fn high_water_mark(&self) -> u64 {
        self.inner.high_water_mark_ms()
    }

    #[getter]
    fn layout(&self) -> PyLayout {
        let inner = *self.inner.layout();
        PyLayout { inner }
    }
    /// The options in effect (`worker_id`, `max_drift_ms`, ...), read from the core's table.
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Obj<'py>> {
        let (layout, options) = (self.inner.layout().spec(), *self.inner.options());
        let config = settings_dict(py, &SnowflakeConfig { layout, options }, Dialect::PYTHON)?;
        config
            .get_item(name)?
            .ok_or_else(|| no_attribute("Snowflake", name))
    }
    /// The process that created this generator (it refuses to work in any other).
    #[getter]
    fn pid(&self) -> u32 {
        self.origin.pid
    }

    /// Splits an ID of this generator's layout into its fields.
    fn decode<'py>(&self, id: &Obj<'py>) -> PyResult<Bound<'py, PyDecodedId>> {
        let py = id.py();
        PyDecodedId::new(py, &self.inner.decode(u64_arg(id, "id")?).py_err(py)?)
    }

    /// Packs fields into an ID of this layout; `worker_id` defaults to this generator's.
    #[pyo3(signature = (tick=None, worker_id=None, sequence=None, *, timestamp_ms=None))]
    fn compose(
        &self,
        py: Python<'_>,
        tick: Option<&Obj<'_>>,
        worker_id: Option<&Obj<'_>>,
        sequence: Option<&Obj<'_>>,
        timestamp_ms: Option<&Obj<'_>>,
    ) -> PyResult<u64> {
        compose_with(
            py,
            self.inner.layout(),
            tick,
            worker_id,
            self.inner.worker_id(),
            sequence,
            timestamp_ms,
        )
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Snowflake(worker_id={}, layout={}, max_drift_ms={}, sequence_start='{}')",
            self.inner.worker_id(),
            crate::layout::layout_repr(py, self.inner.layout())?,
            self.inner.options().max_drift_ms,
            self.inner.options().sequence_start.name()
        ))
    }
}
