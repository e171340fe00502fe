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
use segflake::{Clock, Error, SerialGenerator, SerialOptions};

/// The method that makes a counter a script counter (`segflake.counters`).
const SCRIPT_METHOD: &str = "run_serial_script";

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
        // <generated: text_signature SerialGenerator>
        text_signature = "(*, worker_id=0, worker_digits=0, sequence_digits=4, \
            utc_offset_minutes=0, last=None, counter_timeout_ms=5000, \
            counter_max_behind_ms=60000, counter_max_ahead_ms=60000, counter=None, clock=None)")]
    fn new(
        py: Python<'_>,
        counter: Option<&Obj<'_>>,
        clock: Option<&Obj<'_>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let o: SerialOptions = configure(py, Vec::new(), options, Dialect::PYTHON)?;
        let counter = match given(counter) {
            None => None,
            Some(c) if c.is_callable() || c.hasattr(SCRIPT_METHOD).unwrap_or(false) => {
                Some(c.clone().unbind())
            }
            Some(c) => {
                return Err(refuse(
                    c,
                    "counter",
                    "a callable counter(unix_second) -> int, or a script counter \
                     (segflake.counters)",
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
    /// A counter with a `run_serial_script(key, args)` method (`segflake.counters`) is sent
    /// the core's script arguments; any other is called as `counter(unix_second)`.
    /// `SerialExhaustedError` when a second's sequence numbers are used up,
    /// `ClockSkewError` when a script counter refuses this host's second.
    fn next(&self, py: Python<'_>) -> PyResult<u64> {
        self.origin.checked(py, "SerialGenerator")?;
        let Some(counter) = &self.counter else {
            return self.inner.next().py_err(py);
        };
        let counter = counter.bind(py);
        let script = counter.hasattr(SCRIPT_METHOD)?;
        let mut raised: Option<PyErr> = None;
        let g = &self.inner;
        let result = g.next_with(|second| {
            let reply = if script {
                let key = g.counter_key(second)?;
                counter.call_method1(SCRIPT_METHOD, (key, g.counter_args(second).to_vec()))
            } else {
                counter.call1((second,))
            };
            let reply = reply.map_err(|e| {
                let message = crate::segment::describe_exception(py, &e);
                raised = Some(e);
                Error::Store {
                    message: format!("the counter raised {message}"),
                }
            })?;
            let value = value_of(&reply).map_err(|e| Error::Store {
                message: format!("the counter's answer could not be read: {e}"),
            })?;
            g.counter_sequence(second, &value)
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

    /// The shared counter's key for `unix_seconds`, to follow the adapter's prefix and a
    /// colon: `serial:<yyMMddHHmmss><worker digits>`.
    fn counter_key(&self, py: Python<'_>, unix_seconds: &Obj<'_>) -> PyResult<String> {
        let second = u64_arg(unix_seconds, "unix_seconds")?;
        self.inner.counter_key(second).py_err(py)
    }

    /// The serial script's arguments for `unix_seconds`: the second,
    /// `counter_max_behind_ms`, `counter_max_ahead_ms`, the expiry's grace.
    fn counter_args(&self, unix_seconds: &Obj<'_>) -> PyResult<Vec<u64>> {
        let second = u64_arg(unix_seconds, "unix_seconds")?;
        Ok(self.inner.counter_args(second).to_vec())
    }

    /// The sequence in a counter's answer for `unix_seconds` (an int, or the serial script's
    /// reply); `ClockSkewError` when the script refused the second, `StoreError` for
    /// anything else.
    fn counter_sequence(
        &self,
        py: Python<'_>,
        unix_seconds: &Obj<'_>,
        reply: &Obj<'_>,
    ) -> PyResult<u64> {
        let second = u64_arg(unix_seconds, "unix_seconds")?;
        let value = value_of(reply)?;
        self.inner.counter_sequence(second, &value).py_err(py)
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
