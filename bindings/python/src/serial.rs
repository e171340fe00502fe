//! Date-prefixed serial numbers: `SerialGenerator` and `SerialParts`.

use crate::convert::{
    configure, given, no_attribute, opt_time_arg, record_class, refuse, repr_of, settings_dict, Obj,
};
use crate::convert::{u64_arg, value_of};
use crate::errors::{to_py_err, IntoPyResult};
use crate::snowflake::{clock_arg, HostClock};
use crate::Checked;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use segflake::fork::Origin;
use segflake::host::{self, Dialect, Spelling, Value};
use segflake::serial::COUNTER_ATTEMPTS;
use segflake::{Clock, SerialGenerator, SerialOptions};

record_class!(PySerialParts, "SerialParts");

/// Date-prefixed decimal serials: `yyMMddHHmmss`, worker digits, sequence digits.
#[pyclass(name = "SerialGenerator", module = "segflake", frozen)]
pub struct PySerialGenerator {
    inner: SerialGenerator<HostClock>,
    counter: Option<Py<PyAny>>,
    origin: Origin,
}

#[pymethods]
impl PySerialGenerator {
    #[new]
    #[pyo3(signature = (*, counter=None, clock=None, **options),
        text_signature = "(*, worker_id=0, worker_digits=0, sequence_digits=4, \
            utc_offset_minutes=0, last=None, counter_timeout_ms=5000, counter=None, clock=None)")]
    fn new(
        py: Python<'_>,
        counter: Option<&Obj<'_>>,
        clock: Option<&Obj<'_>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let o: SerialOptions = configure(py, Vec::new(), options, Dialect::PYTHON)?;
        let counter = match given(counter) {
            None => None,
            Some(c) if c.is_callable() => Some(c.clone().unbind()),
            Some(c) => {
                return Err(refuse(
                    c,
                    "counter",
                    "a callable counter(unix_second) -> int",
                ))
            }
        };
        Ok(PySerialGenerator {
            inner: SerialGenerator::with_clock(o, clock_arg(clock)?).py_err(py)?,
            counter,
            origin: Origin::here(),
        })
    }

    /// The next serial: from the shared counter if one was given, else the local one.
    /// `SerialExhaustedError` when a second's sequence numbers are used up.
    fn next(&self, py: Python<'_>) -> PyResult<u64> {
        self.origin.checked(py, "SerialGenerator")?;
        let Some(counter) = &self.counter else {
            return self.inner.next().py_err(py);
        };
        let counter = counter.bind(py);
        let mut raised: Option<PyErr> = None;
        let result = self.inner.next_with_counter(|second| {
            let value = counter.call1((second,)).map_err(|e| {
                let message = crate::segment::describe_exception(py, &e);
                raised = Some(e);
                format!("the counter raised {message}")
            })?;
            let v = value_of(&value).map_err(|e| e.to_string())?;
            let why = || format!("the counter returned {v}; expected a non-negative int");
            v.as_u64().ok_or_else(why)
        });
        result.map_err(|e| {
            let err = to_py_err(py, e);
            if let Some(cause) = raised {
                err.set_cause(py, Some(cause));
            }
            err
        })
    }

    /// Alias of `next()`.
    fn next_id(&self, py: Python<'_>) -> PyResult<u64> {
        self.next(py)
    }

    /// The last serial issued (or restored); 0 if none. Persist it, pass it as `last`.
    #[getter]
    fn last(&self) -> u64 {
        self.inner.last()
    }

    /// The options in effect (`worker_id`, `worker_digits`, ...), read from the core's table.
    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Obj<'py>> {
        let settings = settings_dict(py, self.inner.options(), Dialect::PYTHON)?;
        settings
            .get_item(name)?
            .ok_or_else(|| no_attribute("SerialGenerator", name))
    }

    /// `yyMMddHHmmss` of a Unix second at this generator's offset.
    fn date_prefix(&self, py: Python<'_>, unix_seconds: &Obj<'_>) -> PyResult<u64> {
        let second = u64_arg(unix_seconds, "unix_seconds")?;
        self.inner.date_prefix(second).py_err(py)
    }

    /// The serial for `sequence` in `unix_seconds` (pure: issues nothing).
    fn format(&self, py: Python<'_>, unix_seconds: &Obj<'_>, sequence: &Obj<'_>) -> PyResult<u64> {
        let (second, sequence) = (
            u64_arg(unix_seconds, "unix_seconds")?,
            u64_arg(sequence, "sequence")?,
        );
        self.inner.format(second, sequence).py_err(py)
    }

    /// Splits a serial of this generator's shape into its fields.
    fn decode<'py>(&self, serial: &Obj<'py>) -> PyResult<Bound<'py, PySerialParts>> {
        let (py, serial) = (serial.py(), u64_arg(serial, "serial")?);
        PySerialParts::new(py, &self.inner.decode(serial).py_err(py)?)
    }

    /// The second a shared counter should count in now (or at `now_ms`).
    #[pyo3(signature = (now_ms=None))]
    fn counter_second(&self, now_ms: Option<&Obj<'_>>) -> PyResult<u64> {
        let now = opt_time_arg(now_ms, "now_ms")?;
        Ok(self
            .inner
            .counter_second(now.unwrap_or_else(|| self.inner.clock().now_ms())))
    }

    /// Takes a shared counter's `sequence` for `unix_seconds`: the serial, or None when it
    /// would not be above the last one (ask the counter again).
    fn accept(
        &self,
        py: Python<'_>,
        unix_seconds: &Obj<'_>,
        sequence: &Obj<'_>,
    ) -> PyResult<Option<u64>> {
        self.origin.checked(py, "SerialGenerator")?;
        let (second, sequence) = (
            u64_arg(unix_seconds, "unix_seconds")?,
            u64_arg(sequence, "sequence")?,
        );
        self.inner.accept(second, sequence).py_err(py)
    }

    /// How often `next()` asks a shared counter again before giving up.
    #[classattr]
    const COUNTER_ATTEMPTS: u32 = COUNTER_ATTEMPTS;

    /// The `StoreError` for a counter that kept returning numbers at or below the last
    /// serial (used by the asyncio driver).
    fn _counter_stuck_error<'py>(&self, py: Python<'py>) -> crate::errors::Exception<'py> {
        Ok(crate::errors::exception(py, self.inner.counter_gave_up()))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let mut settings = host::spelled_settings(self.inner.options(), Spelling::Snake);
        settings.retain(|(k, _)| k != "counter_timeout_ms");
        for (_, v) in settings.iter_mut().filter(|(k, _)| k == "last") {
            *v = Value::uint(self.inner.last());
        }
        repr_of(py, "SerialGenerator", &settings)
    }
}
