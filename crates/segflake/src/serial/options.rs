//! The serial options table, `SerialParts` as a record, and the shared counter's timeout.

use std::borrow::Cow;

use super::{SerialOptions, SerialParts};
use crate::error::{Error, Result};
use crate::host::{
    field, opt, uint, FieldKind, FieldSpec, Kind, OptionSpec, Options, Record, Setting, Spelling,
    Value, MAX_WAIT_MS,
};

impl Options for SerialOptions {
    const WHAT: &'static str = "serial options";
    const SPECS: &'static [OptionSpec] = &[
        opt(
            "worker_id",
            "workerId",
            uint(0, 999_999),
            "0",
            "This generator's worker number: 0..10^worker_digits.",
        )
        .with_flag("worker"),
        opt(
            "worker_digits",
            "workerDigits",
            uint(0, 6),
            "0",
            "Worker digits after the date.",
        ),
        opt(
            "sequence_digits",
            "sequenceDigits",
            uint(1, 7),
            "4",
            "Sequence digits at the end; worker_digits + sequence_digits is at most 7.",
        ),
        opt(
            "utc_offset_minutes",
            "utcOffsetMinutes",
            Kind::Int {
                min: -(crate::serial::MAX_UTC_OFFSET_MINUTES as i64),
                max: crate::serial::MAX_UTC_OFFSET_MINUTES as i64,
            },
            "0",
            "Print the date at this fixed offset from UTC.",
        ),
        opt(
            "last",
            "last",
            Kind::Id,
            "none",
            "A persisted last serial: nothing at or below it is issued.",
        ),
        opt(
            "counter_timeout_ms",
            "counterTimeoutMs",
            uint(1, MAX_WAIT_MS),
            "5000",
            "How long one call of a shared counter may run before it counts as failed.",
        ),
        opt(
            "counter_max_behind_ms",
            "counterMaxBehindMs",
            uint(0, crate::serial::MAX_COUNTER_WINDOW_MS),
            "60000",
            "The Redis counter refuses a second that ended more than this long before its \
             clock, and keeps each second's key that long; the same on every host.",
        ),
        opt(
            "counter_max_ahead_ms",
            "counterMaxAheadMs",
            uint(0, crate::serial::MAX_COUNTER_WINDOW_MS),
            "60000",
            "The Redis counter refuses a second that starts more than this long after its clock.",
        ),
    ];
    fn defaults() -> Self {
        SerialOptions::default()
    }
    fn apply(&mut self, name: &str, v: Setting) {
        match name {
            "worker_id" => self.worker_id = v.uint(),
            "worker_digits" => self.worker_digits = v.uint() as u8,
            "sequence_digits" => self.sequence_digits = v.uint() as u8,
            "utc_offset_minutes" => self.utc_offset_minutes = v.int() as i32,
            "last" => self.last = Some(v.uint()),
            "counter_timeout_ms" => self.counter_timeout_ms = v.uint(),
            "counter_max_behind_ms" => self.counter_max_behind_ms = v.uint(),
            "counter_max_ahead_ms" => self.counter_max_ahead_ms = v.uint(),
            _ => {}
        }
    }
    fn finish(&mut self, _given: &[&'static str]) -> Result<()> {
        // The generator checks the shape (digits, worker range, `last`) on construction.
        crate::serial::SerialGenerator::with_clock(*self, crate::clock::ManualClock::new(0))
            .map(|_| ())
    }
    fn settings(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("worker_id", Value::uint(self.worker_id)),
            ("worker_digits", Value::uint(self.worker_digits.into())),
            ("sequence_digits", Value::uint(self.sequence_digits.into())),
            (
                "utc_offset_minutes",
                Value::Int(self.utc_offset_minutes.into()),
            ),
            ("last", Value::opt_uint(self.last)),
            ("counter_timeout_ms", Value::uint(self.counter_timeout_ms)),
            (
                "counter_max_behind_ms",
                Value::uint(self.counter_max_behind_ms),
            ),
            (
                "counter_max_ahead_ms",
                Value::uint(self.counter_max_ahead_ms),
            ),
        ]
    }
}

/// The error when a serial's shared counter outlives `counter_timeout_ms`; `key` is the
/// counter's key (the date prefix).
pub fn counter_timeout_error(key: &str, timeout_ms: u64, spelling: Spelling) -> Error {
    let option = SerialOptions::SPECS
        .iter()
        .find(|s| s.name == "counter_timeout_ms")
        .map_or(Cow::Borrowed("counter_timeout_ms"), |s| s.spelled(spelling));
    Error::Store {
        message: format!("the counter did not answer for {key} within {timeout_ms} ms ({option})"),
    }
}

impl Record for SerialParts {
    const NAME: &'static str = "SerialParts";
    const FIELDS: &'static [FieldSpec] = &[
        field(
            "date",
            "date",
            FieldKind::Count,
            "yyMMddHHmmss as a number (e.g. 250413120000).",
        ),
        field(
            "unix_seconds",
            "unixSeconds",
            FieldKind::Count,
            "The Unix second of date.",
        ),
        field(
            "worker_id",
            "workerId",
            FieldKind::Count,
            "The worker digits.",
        ),
        field(
            "sequence",
            "sequence",
            FieldKind::Count,
            "The sequence digits.",
        ),
    ];
    fn values(&self) -> Vec<Value> {
        vec![
            Value::uint(self.date),
            Value::uint(self.unix_seconds),
            Value::uint(self.worker_id),
            Value::uint(self.sequence),
        ]
    }
}
