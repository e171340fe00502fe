//! Date-prefixed serial numbers: `SerialGenerator` and `SerialParts`.

use crate::args::{opt_time_arg, short_repr, type_name, u64_arg};
use crate::errors::{invalid, to_py_err, IntoPyResult};
use crate::fork::Origin;
use crate::snowflake::{HostClock, PyManualClock};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};
use segflake::serial::COUNTER_ATTEMPTS;
use segflake::{Clock, SerialGenerator, SerialOptions, SerialParts};

/// The fields of a serial.
#[pyclass(name = "SerialParts", module = "segflake", frozen, eq, hash, get_all)]
#[derive(PartialEq, Eq, Hash)]
pub struct PySerialParts {
    /// `yyMMddHHmmss` as a number.
    date: u64,
    /// The Unix second of `date`.
    unix_seconds: u64,
    worker_id: u64,
    sequence: u64,
}

impl From<SerialParts> for PySerialParts {
    fn from(p: SerialParts) -> Self {
        PySerialParts {
            date: p.date,
            unix_seconds: p.unix_seconds,
            worker_id: p.worker_id,
            sequence: p.sequence,
        }
    }
}

#[pymethods]
impl PySerialParts {
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("date", self.date)?;
        d.set_item("unix_seconds", self.unix_seconds)?;
        d.set_item("worker_id", self.worker_id)?;
        d.set_item("sequence", self.sequence)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "SerialParts(date={:012}, unix_seconds={}, worker_id={}, sequence={})",
            self.date, self.unix_seconds, self.worker_id, self.sequence
        )
    }
}

fn small(obj: Option<&Bound<'_, PyAny>>, name: &'static str, default: u64) -> PyResult<u64> {
    match obj.filter(|o| !o.is_none()) {
        Some(o) => u64_arg(o, name),
        None => Ok(default),
    }
}

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
    #[pyo3(signature = (*, worker_id=None, worker_digits=None, sequence_digits=None,
        utc_offset_minutes=None, last=None, counter=None, clock=None),
        text_signature = "(*, worker_id=0, worker_digits=0, sequence_digits=4, \
            utc_offset_minutes=0, last=None, counter=None, clock=None)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        worker_id: Option<&Bound<'_, PyAny>>,
        worker_digits: Option<&Bound<'_, PyAny>>,
        sequence_digits: Option<&Bound<'_, PyAny>>,
        utc_offset_minutes: Option<&Bound<'_, PyAny>>,
        last: Option<&Bound<'_, PyAny>>,
        counter: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let d = SerialOptions::default();
        let mut o = SerialOptions {
            worker_id: small(worker_id, "worker_id", d.worker_id)?,
            ..d
        };
        let digits = |v: u64| u8::try_from(v).unwrap_or(u8::MAX);
        o.worker_digits = digits(small(
            worker_digits,
            "worker_digits",
            u64::from(d.worker_digits),
        )?);
        o.sequence_digits = digits(small(
            sequence_digits,
            "sequence_digits",
            u64::from(d.sequence_digits),
        )?);
        if let Some(off) = utc_offset_minutes.filter(|o| !o.is_none()) {
            if off.is_instance_of::<PyBool>() {
                return Err(invalid(
                    py,
                    "utc_offset_minutes",
                    "got a bool; expected an int",
                ));
            }
            let v: i64 = off.extract().map_err(|_| {
                invalid(
                    py,
                    "utc_offset_minutes",
                    format!(
                        "got {} of type {}; expected an int in -1080..=1080",
                        short_repr(off),
                        type_name(off)
                    ),
                )
            })?;
            o.utc_offset_minutes =
                i32::try_from(v).unwrap_or(if v < 0 { i32::MIN } else { i32::MAX });
        }
        if let Some(l) = last.filter(|l| !l.is_none()) {
            o.last = Some(u64_arg(l, "last")?);
        }
        let clock = match clock.filter(|c| !c.is_none()) {
            None => HostClock::System,
            Some(c) => match c.cast::<PyManualClock>() {
                Ok(m) => HostClock::Manual(m.get().inner.clone()),
                Err(_) => {
                    return Err(invalid(
                        py,
                        "clock",
                        format!(
                            "got {} of type {}; expected None or a segflake.ManualClock",
                            short_repr(c),
                            type_name(c)
                        ),
                    ))
                }
            },
        };
        let counter = match counter.filter(|c| !c.is_none()) {
            None => None,
            Some(c) if c.is_callable() => Some(c.clone().unbind()),
            Some(c) => {
                return Err(invalid(
                    py,
                    "counter",
                    format!(
                        "got {} of type {}; expected a callable counter(unix_second) -> int",
                        short_repr(c),
                        type_name(c)
                    ),
                ))
            }
        };
        Ok(PySerialGenerator {
            inner: SerialGenerator::with_clock(o, clock).py_err(py)?,
            counter,
            origin: Origin::here(),
        })
    }

    /// The next serial: from the shared counter if one was given, else the local one.
    /// `SerialExhaustedError` when a second's sequence numbers are used up.
    fn next(&self, py: Python<'_>) -> PyResult<u64> {
        self.origin.check(py, "SerialGenerator")?;
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
            if value.is_instance_of::<PyBool>() {
                return Err("the counter returned a bool; expected an int".to_owned());
            }
            value.extract::<u64>().map_err(|_| {
                format!(
                    "the counter returned {} of type {}; expected a non-negative int",
                    short_repr(&value),
                    type_name(&value)
                )
            })
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

    #[getter]
    fn worker_id(&self) -> u64 {
        self.inner.options().worker_id
    }
    #[getter]
    fn worker_digits(&self) -> u8 {
        self.inner.options().worker_digits
    }
    #[getter]
    fn sequence_digits(&self) -> u8 {
        self.inner.options().sequence_digits
    }
    #[getter]
    fn utc_offset_minutes(&self) -> i32 {
        self.inner.options().utc_offset_minutes
    }

    /// `yyMMddHHmmss` of a Unix second at this generator's offset.
    fn date_prefix(&self, py: Python<'_>, unix_seconds: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.inner
            .date_prefix(u64_arg(unix_seconds, "unix_seconds")?)
            .py_err(py)
    }

    /// The serial for `sequence` in `unix_seconds` (pure: issues nothing).
    fn format(
        &self,
        py: Python<'_>,
        unix_seconds: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
    ) -> PyResult<u64> {
        self.inner
            .format(
                u64_arg(unix_seconds, "unix_seconds")?,
                u64_arg(sequence, "sequence")?,
            )
            .py_err(py)
    }

    /// Splits a serial of this generator's shape into its fields.
    fn decode(&self, py: Python<'_>, serial: &Bound<'_, PyAny>) -> PyResult<PySerialParts> {
        Ok(self
            .inner
            .decode(u64_arg(serial, "serial")?)
            .py_err(py)?
            .into())
    }

    /// The second a shared counter should count in now (or at `now_ms`).
    #[pyo3(signature = (now_ms=None))]
    fn counter_second(&self, now_ms: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
        let now = match opt_time_arg(now_ms, "now_ms")? {
            Some(t) => t,
            None => self.inner.clock().now_ms(),
        };
        Ok(self.inner.counter_second(now))
    }

    /// Takes a shared counter's `sequence` for `unix_seconds`: the serial, or None when it
    /// would not be above the last one (ask the counter again).
    fn accept(
        &self,
        py: Python<'_>,
        unix_seconds: &Bound<'_, PyAny>,
        sequence: &Bound<'_, PyAny>,
    ) -> PyResult<Option<u64>> {
        self.origin.check(py, "SerialGenerator")?;
        self.inner
            .accept(
                u64_arg(unix_seconds, "unix_seconds")?,
                u64_arg(sequence, "sequence")?,
            )
            .py_err(py)
    }

    /// How often `next()` asks a shared counter again before giving up.
    #[classattr]
    const COUNTER_ATTEMPTS: u32 = COUNTER_ATTEMPTS;

    /// The `StoreError` for a counter that kept returning numbers at or below the last
    /// serial (used by the asyncio driver).
    fn _counter_stuck_error<'py>(
        &self,
        py: Python<'py>,
    ) -> Bound<'py, pyo3::exceptions::PyBaseException> {
        let e = segflake::Error::Store {
            message: format!(
                "the counter returned {COUNTER_ATTEMPTS} sequence numbers in a row that were not \
                 above the last serial {}; was the per-second counter reset, or is it shared \
                 with a generator using the same worker digits?",
                self.inner.last()
            ),
        };
        to_py_err(py, e).into_value(py).into_bound(py)
    }

    fn __repr__(&self) -> String {
        let o = self.inner.options();
        format!(
            "SerialGenerator(worker_id={}, worker_digits={}, sequence_digits={}, \
             utc_offset_minutes={}, last={})",
            o.worker_id,
            o.worker_digits,
            o.sequence_digits,
            o.utc_offset_minutes,
            self.inner.last()
        )
    }
}
