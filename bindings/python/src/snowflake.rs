//! `Snowflake` and `ManualClock`.

use crate::batch::{ids_bytes, ids_into, ids_list};
use crate::convert::record_class;
use crate::convert::{
    configure, given, no_attribute, pairs_of, refuse, settings_dict, time_arg, to_py, u64_arg,
    value_of, Obj,
};
use crate::errors::IntoPyResult;
use crate::layout::{compose_args, compose_with, PyDecodedId, PyLayout};
use crate::Checked;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use segflake::fork::Origin;
use segflake::host::{Dialect, SnowflakeConfig, Spelling, Value};
use segflake::{Clock, LeasedSnowflake, ManualClock, RegistryCall, Snowflake, SystemClock};
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
    inner: Arc<Snowflake<Arc<HostClock>>>,
    /// The worker-ID lease of a generator made by `from_registry` (its thread renews it).
    lease: Option<Arc<LeasedSnowflake<HostClock>>>,
    origin: Origin,
}

record_class!(PyLeaseStats, "LeaseStats");

/// A Python object with `claim`, `renew`, `release` and `peers` methods as the core's
/// registry. Calls come from the lease driver's threads and take the GIL; a method that
/// returns an awaitable is run on `event_loop` (the asyncio API's loop) and waited for
/// without the GIL, at most `timeout_ms` (`registry_timeout_ms`): past that it is cancelled
/// and the call fails, so a stalled coroutine or a stopped loop never holds up the lease
/// thread (the driver starts no other call while one is running).
struct PyRegistry {
    registry: Py<PyAny>,
    event_loop: Option<Py<PyAny>>,
    timeout_ms: u64,
}

impl segflake::Registry for PyRegistry {
    fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        Python::attach(|py| {
            let describe = |e: PyErr| {
                let kind = e
                    .get_type(py)
                    .name()
                    .map_or("Exception".into(), |n| n.to_string());
                format!("{kind}: {}", e.value(py))
            };
            let kwargs = PyDict::new(py);
            for (name, value) in call.args(Spelling::Snake) {
                kwargs
                    .set_item(name, to_py(py, &value).map_err(describe)?)
                    .map_err(describe)?;
            }
            let registry = self.registry.bind(py);
            let method = registry.getattr(call.name()).map_err(|_| {
                format!(
                    "the registry has no method {}(); a registry needs claim, renew, release \
                     and peers",
                    call.name()
                )
            })?;
            let mut answer = method.call((), Some(&kwargs)).map_err(describe)?;
            if answer.hasattr("__await__").map_err(describe)? {
                let Some(event_loop) = &self.event_loop else {
                    // Never awaited: closed, so Python does not warn about it.
                    let _ = answer.call_method0("close");
                    return Err(format!(
                        "the registry's {}() returned an awaitable; an async registry is used \
                         through segflake.from_registry_async",
                        call.name()
                    ));
                };
                let asyncio = py.import("asyncio").map_err(describe)?;
                let future = match asyncio
                    .getattr("run_coroutine_threadsafe")
                    .and_then(|f| f.call1((&answer, event_loop.bind(py))))
                {
                    Ok(future) => future,
                    Err(e) => {
                        // Not scheduled (a closed loop, say): never awaited, so closed.
                        let _ = answer.call_method0("close");
                        return Err(describe(e));
                    }
                };
                // Future.result(timeout) waits on a lock, which releases the GIL.
                answer = match future.call_method1("result", (self.timeout_ms as f64 / 1000.0,)) {
                    Ok(answer) => answer,
                    Err(e) => {
                        let timed_out = py
                            .import("concurrent.futures")
                            .and_then(|m| m.getattr("TimeoutError"))
                            .is_ok_and(|t| e.is_instance(py, &t));
                        if !timed_out {
                            return Err(describe(e));
                        }
                        // Cancels the task on its loop: a late answer is never used.
                        let _ = future.call_method0("cancel");
                        return Err(format!(
                            "the registry's {}() did not answer within registry_timeout_ms = \
                             {} ms on the event loop (cancelled; is the loop running and not \
                             blocked?)",
                            call.name(),
                            self.timeout_ms
                        ));
                    }
                };
            }
            value_of(&answer).map_err(describe)
        })
    }
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
        // <generated: text_signature Snowflake>
        text_signature = "(worker_id, *, datacenter_id=None, layout='twitter', epoch_ms=None, \
            max_drift_ms=2000, sequence_start='zero', not_before_ms=None, clock=None)")]
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
        let inner = Snowflake::with_clock(layout, config.options, Arc::new(clock)).py_err(py)?;
        Ok(PySnowflake {
            inner: Arc::new(inner),
            lease: None,
            origin: Origin::here(),
        })
    }

    /// A generator whose worker ID is leased from `registry` (an object with `claim`,
    /// `renew`, `release` and `peers`; see `segflake.registries`). Blocks until a worker ID
    /// is held and the clock checks passed; raises `NoFreeWorkerIdError`,
    /// `ClockBehindMarkError`, `ClockSkewError` or `RegistryError` otherwise. Options: the
    /// snowflake options without `worker_id`, and the lease options.
    #[staticmethod]
    #[pyo3(signature = (registry, *, owner=None, clock=None, _event_loop=None, **options),
        // <generated: text_signature from_registry>
        text_signature = "(registry, *, owner=None, layout='twitter', epoch_ms=None, \
            max_drift_ms=2000, sequence_start='zero', not_before_ms=None, lease_ttl_ms=30000, \
            mark_ahead_ms=3000, preferred_worker_id=None, claim_wait_ms=10000, \
            clock_wait_ms=10000, max_peer_skew_ms=0, registry_timeout_ms=3000, \
            clock_skew_allowance_ms=1000, clock=None)")]
    fn from_registry(
        py: Python<'_>,
        registry: &Obj<'_>,
        owner: Option<&Obj<'_>>,
        clock: Option<&Obj<'_>>,
        _event_loop: Option<&Obj<'_>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let clock = clock_arg(clock)?;
        let owner = match given(owner) {
            None => None,
            Some(o) => Some(
                o.extract::<String>()
                    .map_err(|_| refuse(o, "owner", "a string of 1 to 128 bytes"))?,
            ),
        };
        let (config, layout, lease) =
            segflake::lease::configure_leased(pairs_of(options)?, Dialect::PYTHON, clock.now_ms())
                .py_err(py)?;
        // The owner is a label (default: the host name); the engine adds its own nonce.
        let owner = owner.or_else(|| {
            py.import("socket")
                .and_then(|s| s.getattr("gethostname")?.call0()?.extract::<String>())
                .ok()
                .filter(|h| !h.is_empty() && h.len() <= segflake::lease::MAX_LABEL_BYTES)
        });
        let registry = Arc::new(PyRegistry {
            registry: registry.clone().unbind(),
            event_loop: given(_event_loop).map(|l| l.clone().unbind()),
            timeout_ms: lease.registry_timeout_ms,
        });
        let leased = py
            .detach(|| {
                LeasedSnowflake::start_with_clock(
                    layout,
                    config.options,
                    lease,
                    registry,
                    owner,
                    clock,
                )
            })
            .py_err(py)?;
        let (leased, origin) = (Arc::new(leased), Origin::here());
        crate::close_at_exit(
            Arc::downgrade(&leased) as std::sync::Weak<dyn crate::CloseAtExit>,
            origin,
        );
        Ok(PySnowflake {
            inner: leased.generator().clone(),
            lease: Some(leased),
            origin,
        })
    }

    /// The worker ID IDs are composed with (a leased generator's may change after its
    /// lease was lost and another claimed).
    #[getter]
    fn worker_id(&self) -> u64 {
        self.inner.worker_id()
    }

    /// Whether the worker ID is leased from a registry (`from_registry`).
    #[getter]
    fn leased(&self) -> bool {
        self.lease.is_some()
    }

    /// A leased generator's lease: worker ID held, lease remaining, the accepted time
    /// mark, renewals, failures and the registry's last error. `None` for a plain one.
    fn lease_stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyLeaseStats>>> {
        self.lease
            .as_ref()
            .map(|l| PyLeaseStats::new(py, &l.stats()))
            .transpose()
    }

    /// Stops issuing IDs for good; a leased generator releases its worker ID (with the
    /// time of its last ID as the mark, so a successor starts at once) and waits for the
    /// release, at most about `registry_timeout_ms`. Idempotent.
    fn close(&self, py: Python<'_>) {
        match &self.lease {
            Some(lease) => py.detach(|| lease.close()),
            None => {
                self.inner.seal();
            }
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) {
        self.close(py);
    }

    /// `async with`: an awaitable of the generator itself.
    fn __aenter__<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        py.import("segflake._aio")?
            .getattr("_itself")?
            .call1((slf,))
    }

    /// `async with`: closes the generator off the event loop (`segflake.close_async`: a
    /// release may await an async registry on this loop).
    #[pyo3(signature = (*_exc))]
    fn __aexit__<'py>(
        slf: Bound<'py, Self>,
        _exc: &Bound<'py, pyo3::types::PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        py.import("segflake._aio")?
            .getattr("close_async")?
            .call1((slf,))
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
        let config = settings_dict(
            py,
            &SnowflakeConfig {
                layout,
                options,
                datacenter_id: None,
            },
            Dialect::PYTHON,
        )?;
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
        compose_with(py, self.inner.layout(), args, self.inner.worker_id())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Snowflake(worker_id={}{}, layout={}, max_drift_ms={}, sequence_start='{}')",
            self.inner.worker_id(),
            if self.lease.is_some() {
                " (leased)"
            } else {
                ""
            },
            crate::layout::layout_repr(py, self.inner.layout())?,
            self.inner.options().max_drift_ms,
            self.inner.options().sequence_start.name()
        ))
    }
}
