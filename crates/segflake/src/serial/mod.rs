//! Date-prefixed serial numbers (order numbers): `yyMMddHHmmss`, then optional worker
//! digits, then a fixed number of sequence digits, as one decimal `u64`.
//!
//! `250413120000` + worker `7` (1 digit) + sequence `0001` (4 digits) → `25041312000070001`.
//!
//! # Where the sequence comes from
//! * **Local counter** ([`SerialGenerator::next`]): per second, the sequence counts 1, 2, …
//!   (worker digits keep generators on different machines apart). Running out of sequence
//!   numbers within one second is [`Error::SerialExhausted`].
//! * **Shared counter** (Redis `INCR` on a per-second key), sans-I/O: ask
//!   [`counter_second(now_ms)`](SerialGenerator::counter_second) which second to count in,
//!   increment your counter for that second (name the key after
//!   [`date_prefix`](SerialGenerator::date_prefix)), then
//!   [`accept(second, sequence)`](SerialGenerator::accept): `Some(serial)`, or `None` when the
//!   number would not be above the last one issued (ask again). [`SerialCount`]
//!   ([`begin_count`](SerialGenerator::begin_count)) runs that protocol for one serial,
//!   with the attempts, the key and the reading of the reply, for a driver that makes the
//!   counter calls its own way (async, another language's event loop); the synchronous
//!   form is [`next_with_counter`](SerialGenerator::next_with_counter).
//! * **Redis** ([`counter`]): one script, with the key naming and expiry rule that keep a
//!   second's counter alive for every host allowed to count in it, and a typed
//!   [`Error::CounterClockSkew`] for the hosts whose clocks are too far off.
//!
//! # Never smaller than the last one
//! The generator keeps the last serial it issued (an atomic max). When the clock steps
//! back it keeps counting in the second of the last serial; a restart given the
//! host-persisted last value ([`SerialOptions::last`]) continues above it.
//!
//! # Time zone
//! UTC by default; `utc_offset_minutes` prints local time at a fixed offset (order numbers
//! are usually local). Two digits of year: serials are valid for the years 2000 to 2099.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::clock::{Clock, SystemClock};
use crate::datetime::{civil_from_unix_ms, days_from_civil, days_in_month};
use crate::error::{Error, Result};

pub mod counter;
mod options;

pub use counter::{CounterRequest, SerialCount};

// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
pub use options::counter_timeout_error;

/// Digits of the `yyMMddHHmmss` prefix.
pub const DATE_DIGITS: u8 = 12;
/// At most this many worker plus sequence digits (12 + 7 = 19 digits fit a `u64`).
pub const MAX_SUFFIX_DIGITS: u8 = 7;
/// The largest accepted UTC offset, in minutes (±18:00).
pub const MAX_UTC_OFFSET_MINUTES: i32 = 18 * 60;
/// How many times [`SerialGenerator::next_with_counter`] asks the counter again when its
/// number is not above the last serial.
pub const COUNTER_ATTEMPTS: u32 = 8;
/// The largest `counter_max_behind_ms` / `counter_max_ahead_ms`: one day.
pub const MAX_COUNTER_WINDOW_MS: u64 = 86_400_000;

options_struct! {
    /// Settings of a [`SerialGenerator`]. Plain data.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub struct SerialOptions {
        /// This generator's worker number: `0..10^worker_digits` (0 when there are none).
        pub worker_id: u64 => with_worker_id,
        /// Worker digits after the date: `0..=6`.
        pub worker_digits: u8 => with_worker_digits,
        /// Sequence digits at the end: `1..=7`, with `worker_digits + sequence_digits <= 7`.
        pub sequence_digits: u8 => with_sequence_digits,
        /// Print the date at this fixed offset from UTC: `-1080..=1080` minutes.
        pub utc_offset_minutes: i32 => with_utc_offset_minutes,
        /// A host-persisted last serial: nothing at or below it is issued.
        pub last: Option<u64> => with_last,
        /// How long one call of a shared counter may run before it counts as failed:
        /// `1..=3,600,000` ms, default 5,000.
        pub counter_timeout_ms: u64 => with_counter_timeout_ms,
        /// A shared counter ([`counter`]) refuses a second that ended more than this long
        /// before its own clock, and keeps each second's key this long after it ended (plus
        /// [`counter::COUNTER_GRACE_MS`]): `0..=86,400,000` ms, default 60,000. Every generator
        /// sharing the counter must use the same value.
        pub counter_max_behind_ms: u64 => with_counter_max_behind_ms,
        /// A shared counter refuses a second that starts more than this long after its own
        /// clock: `0..=86,400,000` ms, default 60,000.
        pub counter_max_ahead_ms: u64 => with_counter_max_ahead_ms,
    }
}

impl Default for SerialOptions {
    /// UTC, no worker digits, 4 sequence digits (up to 9,999 serials per second).
    fn default() -> Self {
        SerialOptions {
            worker_id: 0,
            worker_digits: 0,
            sequence_digits: 4,
            utc_offset_minutes: 0,
            last: None,
            counter_timeout_ms: 5000,
            counter_max_behind_ms: 60_000,
            counter_max_ahead_ms: 60_000,
        }
    }
}

/// The fields of a serial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SerialParts {
    /// `yyMMddHHmmss` as a number (e.g. `250413120000`).
    pub date: u64,
    /// The Unix second of `date` (the offset taken back out).
    pub unix_seconds: u64,
    /// The worker digits as a number (0 without worker digits).
    pub worker_id: u64,
    /// The sequence digits as a number.
    pub sequence: u64,
}

/// Issues date-prefixed serials. `Send + Sync`, lock-free.
///
/// ```
/// use segflake::{ManualClock, SerialGenerator, SerialOptions};
///
/// // Worker 3 of 10 (one digit), 3 sequence digits, dates printed at UTC+08:00.
/// let options = SerialOptions::default()
///     .with_worker_id(3)
///     .with_worker_digits(1)
///     .with_sequence_digits(3)
///     .with_utc_offset_minutes(480);
/// let clock = ManualClock::new(1_744_516_800_000); // 2025-04-13T04:00:00Z
/// let serials = SerialGenerator::with_clock(options, clock)?;
/// let serial = serials.next()?;
/// let parts = serials.decode(serial)?;
/// assert_eq!((parts.date, parts.worker_id), (250413120000, 3));
/// assert_eq!(serial, 250413120000 * 10_000 + 3 * 1000 + parts.sequence);
/// # Ok::<(), segflake::Error>(())
/// ```
#[derive(Debug)]
pub struct SerialGenerator<C: Clock = SystemClock> {
    options: SerialOptions,
    /// 10^sequence_digits.
    seq_scale: u64,
    /// 10^(worker_digits + sequence_digits).
    date_scale: u64,
    last: AtomicU64,
    clock: C,
}

impl SerialGenerator<SystemClock> {
    /// A generator on the system clock.
    pub fn new(options: SerialOptions) -> Result<Self> {
        SerialGenerator::with_clock(options, SystemClock)
    }
}

impl<C: Clock> SerialGenerator<C> {
    /// A generator reading time from `clock`.
    ///
    /// Errors: [`Error::InvalidArgument`] naming the field and its allowed range.
    pub fn with_clock(options: SerialOptions, clock: C) -> Result<Self> {
        let o = &options;
        if o.sequence_digits == 0 || o.sequence_digits > MAX_SUFFIX_DIGITS {
            return Err(Error::invalid_argument(
                "sequence_digits",
                format!(
                    "{} is out of range; allowed 1..={MAX_SUFFIX_DIGITS}",
                    o.sequence_digits
                ),
            ));
        }
        if u32::from(o.worker_digits) + u32::from(o.sequence_digits) > u32::from(MAX_SUFFIX_DIGITS)
        {
            return Err(Error::invalid_argument(
                "worker_digits",
                format!(
                    "{} worker digits with {} sequence digits make {} digits after the date; \
                     allowed at most {MAX_SUFFIX_DIGITS} (12 date digits + 7 fit a 64-bit integer)",
                    o.worker_digits,
                    o.sequence_digits,
                    u32::from(o.worker_digits) + u32::from(o.sequence_digits)
                ),
            ));
        }
        let worker_limit = 10u64.pow(u32::from(o.worker_digits));
        if o.worker_id >= worker_limit {
            return Err(Error::invalid_argument(
                "worker_id",
                format!(
                    "{} does not fit {} worker digits; allowed 0..={}",
                    o.worker_id,
                    o.worker_digits,
                    worker_limit - 1
                ),
            ));
        }
        if o.utc_offset_minutes.abs() > MAX_UTC_OFFSET_MINUTES {
            return Err(Error::invalid_argument(
                "utc_offset_minutes",
                format!(
                    "{} is out of range; allowed -{MAX_UTC_OFFSET_MINUTES}..={MAX_UTC_OFFSET_MINUTES}",
                    o.utc_offset_minutes
                ),
            ));
        }
        if o.counter_timeout_ms == 0 || o.counter_timeout_ms > crate::host::MAX_WAIT_MS {
            return Err(Error::invalid_argument(
                "counter_timeout_ms",
                format!(
                    "{} is out of range; allowed 1..={}",
                    o.counter_timeout_ms,
                    crate::host::MAX_WAIT_MS
                ),
            ));
        }
        for (name, value) in [
            ("counter_max_behind_ms", o.counter_max_behind_ms),
            ("counter_max_ahead_ms", o.counter_max_ahead_ms),
        ] {
            if value > MAX_COUNTER_WINDOW_MS {
                return Err(Error::invalid_argument(
                    name,
                    format!("{value} is out of range; allowed 0..={MAX_COUNTER_WINDOW_MS}"),
                ));
            }
        }
        let generator = SerialGenerator {
            seq_scale: 10u64.pow(u32::from(o.sequence_digits)),
            date_scale: 10u64.pow(u32::from(o.worker_digits + o.sequence_digits)),
            last: AtomicU64::new(o.last.unwrap_or(0)),
            options,
            clock,
        };
        if let Some(last) = o.last {
            generator.decode(last).map_err(|e| {
                Error::invalid_argument(
                    "last",
                    format!("{last} is not a serial of this shape: {e}"),
                )
            })?;
        }
        Ok(generator)
    }

    /// The options this generator was built with (`last` as given at construction).
    pub fn options(&self) -> &SerialOptions {
        &self.options
    }

    /// The clock this generator reads.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The last serial issued (or restored); 0 if none. Persist it to restore on restart.
    pub fn last(&self) -> u64 {
        self.last.load(Ordering::Acquire)
    }

    /// `yyMMddHHmmss` of a Unix second at this generator's offset, as a number.
    ///
    /// Errors: [`Error::InvalidArgument`] outside the years 2000 to 2099.
    pub fn date_prefix(&self, unix_seconds: u64) -> Result<u64> {
        // Local time as i128: no input can overflow; only 2000-01-01 .. 2100-01-01 is valid.
        let local = i128::from(unix_seconds) + i128::from(self.options.utc_offset_minutes) * 60;
        if !(946_684_800..4_102_444_800).contains(&local) {
            let days = local
                .div_euclid(86_400)
                .clamp(-1_000_000_000, 1_000_000_000) as i64;
            return Err(year_error(crate::datetime::civil_from_days(days).0));
        }
        let t = civil_from_unix_ms(local as u64 * 1000);
        if !(2000..=2099).contains(&t.year) {
            return Err(year_error(t.year));
        }
        Ok(
            (((((t.year as u64 - 2000) * 100 + u64::from(t.month)) * 100 + u64::from(t.day))
                * 100
                + u64::from(t.hour))
                * 100
                + u64::from(t.minute))
                * 100
                + u64::from(t.second),
        )
    }

    /// The Unix second a `yyMMddHHmmss` number stands for at this generator's offset.
    pub fn second_of_prefix(&self, date: u64) -> Result<u64> {
        let bad = || {
            Error::parse(
                "serial",
                format!("{date:012} is not a valid yyMMddHHmmss date"),
            )
        };
        let sec = (date % 100) as u32;
        let min = (date / 100 % 100) as u32;
        let hour = (date / 10_000 % 100) as u32;
        let day = (date / 1_000_000 % 100) as u32;
        let month = (date / 100_000_000 % 100) as u32;
        let yy = date / 10_000_000_000;
        if yy > 99 || sec > 59 || min > 59 || hour > 23 || !(1..=12).contains(&month) {
            return Err(bad());
        }
        let year = 2000 + yy as i64;
        if day == 0 || day > days_in_month(year, month) {
            return Err(bad());
        }
        let local = days_from_civil(year, month, day) * 86_400
            + i64::from(hour) * 3600
            + i64::from(min) * 60
            + i64::from(sec);
        let utc = local - i64::from(self.options.utc_offset_minutes) * 60;
        u64::try_from(utc).map_err(|_| bad())
    }

    /// The serial for `sequence` in `unix_seconds`, with this generator's worker digits.
    /// Pure: does not touch the last-issued state.
    ///
    /// Errors: [`Error::SerialExhausted`] when `sequence` does not fit the sequence digits;
    /// [`Error::InvalidArgument`] outside the years 2000 to 2099.
    pub fn format(&self, unix_seconds: u64, sequence: u64) -> Result<u64> {
        let date = self.date_prefix(unix_seconds)?;
        self.compose(date, sequence)
    }

    fn compose(&self, date: u64, sequence: u64) -> Result<u64> {
        if sequence >= self.seq_scale {
            return Err(Error::SerialExhausted {
                second: format!("{date:012}"),
                sequence_digits: self.options.sequence_digits,
            });
        }
        Ok(date * self.date_scale + self.options.worker_id * self.seq_scale + sequence)
    }

    /// Splits a serial of this generator's shape into its fields.
    pub fn decode(&self, serial: u64) -> Result<SerialParts> {
        let date = serial / self.date_scale;
        let unix_seconds = self.second_of_prefix(date)?;
        Ok(SerialParts {
            date,
            unix_seconds,
            worker_id: serial % self.date_scale / self.seq_scale,
            sequence: serial % self.seq_scale,
        })
    }

    /// The next serial from the local counter: above the last one, in the current second
    /// (or the last serial's second if the clock is behind it).
    ///
    /// Errors: [`Error::SerialExhausted`] when that second's sequence numbers are used up
    /// (retry in the next second); [`Error::InvalidArgument`] outside the years 2000–2099.
    pub fn next(&self) -> Result<u64> {
        loop {
            let now_s = self.clock.now_ms() / 1000;
            let last = self.last.load(Ordering::Acquire);
            let candidate = self.successor(now_s, last)?;
            if self
                .last
                .compare_exchange_weak(last, candidate, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Ok(candidate);
            }
        }
    }

    /// The smallest serial of this shape above `last`, in `now_s` or later.
    fn successor(&self, now_s: u64, last: u64) -> Result<u64> {
        let first_now = self.format(now_s, 1)?;
        if first_now > last {
            return Ok(first_now);
        }
        let p = self.decode(last)?;
        let me = self.options.worker_id;
        if p.worker_id == me {
            self.compose(p.date, p.sequence + 1)
        } else if me > p.worker_id {
            self.compose(p.date, 1)
        } else {
            // A restored serial of a higher worker number in that second: go to the next.
            self.format(p.unix_seconds + 1, 1)
        }
    }

    /// Which second a shared counter should count in at `now_ms`: the current second, or
    /// the last serial's second while the clock is behind it.
    pub fn counter_second(&self, now_ms: u64) -> u64 {
        let now_s = now_ms / 1000;
        let last = self.last.load(Ordering::Acquire);
        if last == 0 {
            return now_s;
        }
        match self.decode(last) {
            Ok(p) => now_s.max(p.unix_seconds),
            Err(_) => now_s,
        }
    }

    /// Takes a shared counter's `sequence` for `unix_seconds`: returns `Some(serial)` and
    /// records it as the last one if it is above the last serial issued, or `None` (ask the
    /// counter again, for [`counter_second`](SerialGenerator::counter_second)).
    ///
    /// Errors: [`Error::SerialExhausted`] when `sequence` does not fit the sequence digits;
    /// [`Error::InvalidArgument`] outside the years 2000 to 2099.
    pub fn accept(&self, unix_seconds: u64, sequence: u64) -> Result<Option<u64>> {
        let candidate = self.format(unix_seconds, sequence)?;
        let previous = self.last.fetch_max(candidate, Ordering::AcqRel);
        Ok((candidate > previous).then_some(candidate))
    }

    /// The next serial with the sequence from `counter(unix_second)` (for example Redis
    /// `INCR` on a key named after [`date_prefix`](SerialGenerator::date_prefix)); asks
    /// again, at most [`COUNTER_ATTEMPTS`] times, while its numbers are not above the last
    /// serial.
    ///
    /// Errors: [`Error::Store`] with the counter's message, or when it keeps returning
    /// numbers at or below the last serial; those of [`accept`](SerialGenerator::accept).
    pub fn next_with_counter<F>(&self, mut counter: F) -> Result<u64>
    where
        F: FnMut(u64) -> std::result::Result<u64, String>,
    {
        self.next_with(|second| counter(second).map_err(|message| Error::Store { message }))
    }

    /// [`next_with_counter`](SerialGenerator::next_with_counter) with a counter that fails
    /// with a typed error (as [`counter_sequence`](SerialGenerator::counter_sequence)
    /// gives), passed through as it is.
    pub fn next_with<F>(&self, mut counter: F) -> Result<u64>
    where
        F: FnMut(u64) -> Result<u64>,
    {
        let mut count = self.begin_count();
        loop {
            let sequence = counter(count.second())?;
            if let Some(serial) = count.accept(sequence)? {
                return Ok(serial);
            }
        }
    }

    /// The error after [`COUNTER_ATTEMPTS`] counter answers in a row that were not above the
    /// last serial (for hosts that drive the counter themselves).
    pub fn counter_gave_up(&self) -> Error {
        Error::Store {
            message: format!(
                "the counter returned {COUNTER_ATTEMPTS} sequence numbers in a row that were not \
                 above the last serial {}; was the per-second counter reset, or is it shared \
                 with a generator using the same worker digits?",
                self.last()
            ),
        }
    }
}

fn year_error(year: i64) -> Error {
    Error::invalid_argument(
        "time",
        format!("year {year} cannot be written as yy; serials cover the years 2000 to 2099"),
    )
}
