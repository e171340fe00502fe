//! `Snowflake` and `ManualClock`.

use crate::convert::{batch_arg, configure, short_repr, time_arg, type_name, u64_arg, value_of};
use crate::errors::{invalid, IntoPyResult};
use crate::layout::{compose_with, PyDecodedId, PyLayout};
use crate::Checked;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PySlice};
use segflake::fork::Origin;
use segflake::host::{Dialect, SnowflakeConfig, Spelling};
use segflake::{Clock, ManualClock, Snowflake, SystemClock};
use std::sync::Arc;

/// Batches at least this large are filled with the GIL released.
const DETACH_AT: usize = 1 << 15;

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
    fn new(now_ms: &Bound<'_, PyAny>) -> PyResult<Self> {
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
    fn set_ms(&self, unix_ms: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.set_ms(time_arg(unix_ms, "unix_ms")?);
        Ok(())
    }
    /// Moves the time forwards.
    fn advance_ms(&self, ms: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.advance_ms(u64_arg(ms, "ms")?);
        Ok(())
    }
    /// Moves the time backwards (saturating at 0).
    fn rewind_ms(&self, ms: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.rewind_ms(u64_arg(ms, "ms")?);
        Ok(())
    }
    fn __repr__(&self) -> String {
        format!("ManualClock(now_ms={})", self.inner.now_ms())
    }
}

/// `clock=`: None (the system clock) or a `ManualClock`.
pub fn clock_arg(clock: Option<&Bound<'_, PyAny>>) -> PyResult<HostClock> {
    match clock.filter(|c| !c.is_none()) {
        None => Ok(HostClock::System),
        Some(c) => match c.cast::<PyManualClock>() {
            Ok(m) => Ok(HostClock::Manual(m.get().inner.clone())),
            Err(_) => Err(invalid(
                c.py(),
                "clock",
                format!(
                    "got {} of type {}; expected None (the system clock) or a \
                     segflake.ManualClock",
                    short_repr(c),
                    type_name(c)
                ),
            )),
        },
    }
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

    fn fill_bytes(&self, py: Python<'_>, buf: &mut [u8]) -> PyResult<()> {
        // SAFETY: every bit pattern is a valid u64; `align_to_mut` only yields an aligned
        // middle part.
        let (head, ids, tail) = unsafe { buf.align_to_mut::<u64>() };
        if head.is_empty() && tail.is_empty() {
            return self.fill(py, ids);
        }
        let mut v = vec![0u64; buf.len() / 8];
        self.fill(py, &mut v)?;
        for (chunk, id) in buf.chunks_exact_mut(8).zip(&v) {
            chunk.copy_from_slice(&id.to_ne_bytes());
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
        worker_id: &Bound<'_, PyAny>,
        clock: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let clock = clock_arg(clock)?;
        let first = vec![("worker_id".to_owned(), value_of(worker_id)?)];
        let config: SnowflakeConfig = configure(py, first, options, Dialect::PYTHON)?;
        // A `Layout` object was validated when it was built: used as it is.
        let given = match options.map(|o| o.get_item("layout")).transpose()?.flatten() {
            Some(l) => l.cast::<PyLayout>().ok().map(|l| l.get().inner),
            None => None,
        };
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
    fn next_ids<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.check(py)?;
        let n = batch_arg(n)?;
        let mut v = vec![0u64; n];
        self.fill(py, &mut v)?;
        PyList::new(py, v)
    }

    /// `n` IDs as native-endian unsigned 64-bit integers in a `bytes` object
    /// (`numpy.frombuffer(b, dtype=numpy.uint64)`, `array.array('Q', b)`).
    fn next_ids_bytes<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.check(py)?;
        let n = batch_arg(n)?;
        PyBytes::new_with(py, n * 8, |buf| self.fill_bytes(py, buf))
    }

    /// Fills a writable, C-contiguous buffer of 64-bit integers (a numpy `uint64`/`int64`
    /// array, `array.array('Q')`, a `memoryview`) with IDs; returns how many were written.
    fn next_ids_into(&self, py: Python<'_>, out: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.check(py)?;
        let view = writable_u64_view(out)?;
        let n = view.n;
        segflake::check_batch_size(n).py_err(py)?;
        let data = PyBytes::new_with(py, n * 8, |buf| self.fill_bytes(py, buf))?;
        view.bytes_view.set_item(PySlice::full(py), data)?;
        Ok(n)
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
        PyLayout {
            inner: *self.inner.layout(),
        }
    }
    #[getter]
    fn worker_id(&self) -> u64 {
        self.inner.worker_id()
    }
    #[getter]
    fn max_drift_ms(&self) -> u64 {
        self.inner.options().max_drift_ms
    }
    #[getter]
    fn sequence_start(&self) -> &'static str {
        self.inner.options().sequence_start.name()
    }
    #[getter]
    fn not_before_ms(&self) -> Option<u64> {
        self.inner.options().not_before_ms
    }
    /// The process that created this generator (it refuses to work in any other).
    #[getter]
    fn pid(&self) -> u32 {
        self.origin.pid
    }

    /// Splits an ID of this generator's layout into its fields.
    fn decode<'py>(&self, id: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDecodedId>> {
        let py = id.py();
        PyDecodedId::new(py, &self.inner.decode(u64_arg(id, "id")?).py_err(py)?)
    }

    /// Packs fields into an ID of this layout; `worker_id` defaults to this generator's.
    #[pyo3(signature = (tick=None, worker_id=None, sequence=None, *, timestamp_ms=None))]
    fn compose(
        &self,
        py: Python<'_>,
        tick: Option<&Bound<'_, PyAny>>,
        worker_id: Option<&Bound<'_, PyAny>>,
        sequence: Option<&Bound<'_, PyAny>>,
        timestamp_ms: Option<&Bound<'_, PyAny>>,
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

pub struct U64View<'py> {
    pub bytes_view: Bound<'py, PyAny>,
    pub n: usize,
}

/// Checks that `out` is a writable C-contiguous buffer of native 64-bit integers and
/// returns a byte view of it.
pub fn writable_u64_view<'py>(out: &Bound<'py, PyAny>) -> PyResult<U64View<'py>> {
    let py = out.py();
    let describe = || format!("{} of type {}", short_repr(out), type_name(out));
    let allowed = "expected a writable, C-contiguous buffer of 64-bit integers such as \
                   numpy.empty(n, dtype=numpy.uint64) or array.array('Q', bytes(8 * n))";
    let mv = match py.import("builtins")?.getattr("memoryview")?.call1((out,)) {
        Ok(mv) => mv,
        Err(_) => {
            return Err(invalid(
                py,
                "buffer",
                format!(
                    "{} does not support the buffer protocol; {allowed}",
                    describe()
                ),
            ))
        }
    };
    let readonly: bool = mv.getattr("readonly")?.extract()?;
    let itemsize: usize = mv.getattr("itemsize")?.extract()?;
    let contiguous: bool = mv.getattr("c_contiguous")?.extract()?;
    let format: String = mv.getattr("format")?.extract()?;
    let nbytes: usize = mv.getattr("nbytes")?.extract()?;
    let code = format.trim_start_matches(['@', '=']);
    let native_le = cfg!(target_endian = "little");
    let code = match code.strip_prefix('<') {
        Some(c) if native_le => c,
        Some(_) => "",
        None => code,
    };
    let int_format = matches!(code, "Q" | "q" | "L" | "l" | "K" | "k");
    let problem = if readonly {
        Some("is read-only".to_owned())
    } else if !contiguous {
        Some("is not C-contiguous".to_owned())
    } else if itemsize != 8 || !int_format {
        Some(format!(
            "has items of format '{format}' and size {itemsize}"
        ))
    } else {
        None
    };
    if let Some(p) = problem {
        return Err(invalid(
            py,
            "buffer",
            format!("{} {p}; {allowed}", describe()),
        ));
    }
    let bytes_view = mv.call_method1("cast", ("B",))?;
    Ok(U64View {
        bytes_view,
        n: nbytes / 8,
    })
}
