//! Snowflake layouts: how `time | worker | sequence` are packed into the low 63 bits.
//!
//! A [`Layout`] is validated data: once built it is known to fit in 63 bits, to have
//! an epoch that is not in the future, and (unless switched off) to last at least
//! `min_lifetime_years` from the time it was checked. The time field is always the
//! most significant, so IDs sort by time.

mod options;

pub(crate) use options::PRESET_NAMES;
// Public only for the bindings and the CLI in this repository: not a stable API.
#[doc(hidden)]
pub use options::{compose_of, layout_of, ComposeFields};

use crate::datetime::format_iso8601_ms;
use crate::error::{quoted, Error, Result};
use std::fmt;

/// Default for [`LayoutSpec::min_lifetime_years`].
pub const DEFAULT_MIN_LIFETIME_YEARS: u32 = 10;

/// Milliseconds in a Julian year (365.25 days), the unit of lifetime checks.
pub const MS_PER_YEAR: u64 = 31_557_600_000;

/// The longest accepted tick: one day, in milliseconds.
pub const MAX_TICK_MS: u64 = 86_400_000;

/// The largest value of a `bits`-wide field.
#[inline]
pub const fn max_value(bits: u8) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// The order of the two low fields below the time field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOrder {
    /// `time | worker | sequence` (Twitter, Leaf, hutool, uid-generator).
    TimeWorkerSequence,
    /// `time | sequence | worker` (Sonyflake).
    TimeSequenceWorker,
}

impl FieldOrder {
    /// `"time-worker-sequence"` or `"time-sequence-worker"`.
    pub const fn name(self) -> &'static str {
        match self {
            FieldOrder::TimeWorkerSequence => "time-worker-sequence",
            FieldOrder::TimeSequenceWorker => "time-sequence-worker",
        }
    }

    /// Parses [`FieldOrder::name`].
    pub fn from_name(name: &str) -> Result<FieldOrder> {
        match name {
            "time-worker-sequence" => Ok(FieldOrder::TimeWorkerSequence),
            "time-sequence-worker" => Ok(FieldOrder::TimeSequenceWorker),
            other => Err(Error::invalid_argument(
                "field order",
                format!("{other} is not a field order; allowed: time-worker-sequence, time-sequence-worker", other = quoted(other)),
            )),
        }
    }
}

/// The named layouts, decode-compatible with the systems they are named after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Preset {
    /// 41/10/12 bits, 1 ms tick, epoch 2010-11-04T01:42:54.657Z (Twitter, Leaf, hutool).
    Twitter,
    /// 39/16/8 bits as time·sequence·machine, 10 ms tick, epoch 2025-01-01.
    Sonyflake,
    /// 28/22/13 bits, 1 s tick, epoch 2016-05-20 (exhausted on 2024-11-20: give a newer epoch).
    UidGenerator,
    /// 41/3/9 bits (53 in all, fits a JS `Number`), 1 ms tick, epoch 2025-01-01.
    JsSafe,
    /// Twitter's bits with the worker field split as 5 datacenter + 5 worker bits (hutool's
    /// `Snowflake(workerId, dataCenterId)`, Twitter's original): the same IDs as `twitter`.
    TwitterDc,
}

impl Preset {
    /// Every preset.
    pub const ALL: [Preset; 5] = [
        Preset::Twitter,
        Preset::Sonyflake,
        Preset::UidGenerator,
        Preset::JsSafe,
        Preset::TwitterDc,
    ];

    /// The preset's name: `twitter`, `sonyflake`, `uid-generator`, `js-safe`, `twitter-dc`.
    pub const fn name(self) -> &'static str {
        match self {
            Preset::Twitter => "twitter",
            Preset::Sonyflake => "sonyflake",
            Preset::UidGenerator => "uid-generator",
            Preset::JsSafe => "js-safe",
            Preset::TwitterDc => "twitter-dc",
        }
    }

    /// Looks a preset up by [`name`](Preset::name).
    pub fn from_name(name: &str) -> Result<Preset> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                Error::invalid_argument(
                    "layout",
                    format!(
                        "{name} is not a preset; allowed: twitter, sonyflake, uid-generator, \
                         js-safe, twitter-dc",
                        name = quoted(name)
                    ),
                )
            })
    }

    /// The preset's parameters, with its default epoch.
    pub const fn spec(self) -> LayoutSpec {
        let (time_bits, worker_bits, sequence_bits, tick_ms, epoch_ms, order) = match self {
            Preset::Twitter | Preset::TwitterDc => (
                41,
                10,
                12,
                1,
                1_288_834_974_657,
                FieldOrder::TimeWorkerSequence,
            ),
            Preset::Sonyflake => (
                39,
                16,
                8,
                10,
                1_735_689_600_000,
                FieldOrder::TimeSequenceWorker,
            ),
            Preset::UidGenerator => (
                28,
                22,
                13,
                1000,
                1_463_702_400_000,
                FieldOrder::TimeWorkerSequence,
            ),
            Preset::JsSafe => (
                41,
                3,
                9,
                1,
                1_735_689_600_000,
                FieldOrder::TimeWorkerSequence,
            ),
        };
        LayoutSpec {
            time_bits,
            worker_bits,
            datacenter_bits: if matches!(self, Preset::TwitterDc) {
                5
            } else {
                0
            },
            sequence_bits,
            tick_ms,
            epoch_ms,
            order,
            min_lifetime_years: DEFAULT_MIN_LIFETIME_YEARS,
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

options_struct! {
    /// Unvalidated layout parameters; [`build`](LayoutSpec::build) turns them into a [`Layout`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub struct LayoutSpec {
        /// Width of the time field, 8..=63.
        pub time_bits: u8 => with_time_bits,
        /// Width of the worker field, 0..=31.
        pub worker_bits: u8 => with_worker_bits,
        /// How many of the worker field's high bits name a datacenter, `0..=worker_bits` (0: no
        /// datacenter field). With a datacenter field, the worker field is two numbers:
        /// `datacenter_id` (its high bits) and `worker_id` within that datacenter (its low bits).
        pub datacenter_bits: u8 => with_datacenter_bits,
        /// Width of the sequence field, 0..=31.
        pub sequence_bits: u8 => with_sequence_bits,
        /// Length of one time unit in milliseconds, 1..=86,400,000.
        pub tick_ms: u64 => with_tick_ms,
        /// Unix milliseconds of tick 0; must not be in the future.
        pub epoch_ms: u64 => with_epoch_ms,
        /// Order of the worker and sequence fields.
        pub order: FieldOrder => with_order,
        /// Refuse the layout if its time runs out within this many years (0: no check).
        pub min_lifetime_years: u32 => with_min_lifetime_years,
    }
}

impl Default for LayoutSpec {
    fn default() -> Self {
        Preset::Twitter.spec()
    }
}

impl LayoutSpec {
    /// The worker field of `worker_id` in `datacenter_id`: without `datacenter_id`,
    /// `worker_id` is the whole field; with it (only on a layout with a datacenter field),
    /// the worker within that datacenter. Each part is checked against its width.
    pub fn worker_field(&self, datacenter_id: Option<u64>, worker_id: u64) -> Result<u64> {
        let Some(dc) = datacenter_id else {
            if worker_id > max_value(self.worker_bits) {
                return Err(Error::WorkerIdOutOfRange {
                    worker_id,
                    worker_bits: self.worker_bits,
                });
            }
            return Ok(worker_id);
        };
        let low = self.worker_bits.saturating_sub(self.datacenter_bits);
        if self.datacenter_bits == 0 {
            return Err(Error::invalid_argument(
                "datacenter_id",
                format!(
                    "{dc} was given, but the layout has no datacenter field; use a layout with \
                     datacenter_bits (the twitter-dc preset has 5) or give the whole worker_id"
                ),
            ));
        }
        if dc > max_value(self.datacenter_bits) {
            return Err(Error::invalid_argument(
                "datacenter_id",
                format!(
                    "{dc} does not fit the layout's {} datacenter bits; allowed 0..={}",
                    self.datacenter_bits,
                    max_value(self.datacenter_bits)
                ),
            ));
        }
        if worker_id > max_value(low) {
            return Err(Error::invalid_argument(
                "worker_id",
                format!(
                    "{worker_id} does not fit the {} worker bits within a datacenter; allowed \
                     0..={} (with datacenter_id, worker_id is the worker within that datacenter)",
                    low,
                    max_value(low)
                ),
            ));
        }
        Ok((dc << low) | worker_id)
    }

    /// Validates against the system clock. Not for `wasm32-unknown-unknown`: use
    /// [`build_at`](LayoutSpec::build_at) with the host's time there.
    pub fn build(self) -> Result<Layout> {
        self.build_at(crate::clock::Clock::now_ms(&crate::clock::SystemClock))
    }

    /// Validates as if the time were `now_ms` (Unix milliseconds).
    pub fn build_at(self, now_ms: u64) -> Result<Layout> {
        let invalid = |reason: String| Err(Error::InvalidLayout { reason });
        if !(8..=63).contains(&self.time_bits) {
            return invalid(format!("time_bits is {}; allowed 8..=63", self.time_bits));
        }
        if self.worker_bits > 31 {
            return invalid(format!(
                "worker_bits is {}; allowed 0..=31",
                self.worker_bits
            ));
        }
        if self.sequence_bits > 31 {
            return invalid(format!(
                "sequence_bits is {}; allowed 0..=31",
                self.sequence_bits
            ));
        }
        if self.datacenter_bits > self.worker_bits {
            return invalid(format!(
                "datacenter_bits is {}; allowed 0..={} (worker_bits: the datacenter is part \
                 of the worker field)",
                self.datacenter_bits, self.worker_bits
            ));
        }
        let total =
            u32::from(self.time_bits) + u32::from(self.worker_bits) + u32::from(self.sequence_bits);
        if total > 63 {
            return invalid(format!(
                "time_bits + worker_bits + sequence_bits = {}+{}+{} = {total}; at most 63 \
                 (the sign bit stays 0)",
                self.time_bits, self.worker_bits, self.sequence_bits
            ));
        }
        if !(1..=MAX_TICK_MS).contains(&self.tick_ms) {
            return invalid(format!(
                "tick_ms is {}; allowed 1..={MAX_TICK_MS}",
                self.tick_ms
            ));
        }
        if self.epoch_ms > now_ms {
            return invalid(format!(
                "epoch {} is in the future (now is {}); the epoch must not be after now",
                format_iso8601_ms(self.epoch_ms),
                format_iso8601_ms(now_ms)
            ));
        }
        if self.min_lifetime_years > 10_000 {
            return Err(Error::invalid_argument(
                "min_lifetime_years",
                format!(
                    "{} is too large; allowed 0..=10000",
                    self.min_lifetime_years
                ),
            ));
        }
        let layout = Layout::from_spec(self);
        if self.min_lifetime_years > 0 {
            let need = now_ms
                .saturating_add(u64::from(self.min_lifetime_years).saturating_mul(MS_PER_YEAR));
            if layout.exhausts_at_ms() < need {
                return Err(Error::LayoutExhausted {
                    exhausts_at_ms: layout.exhausts_at_ms(),
                    min_lifetime_years: self.min_lifetime_years,
                    checked_at_ms: now_ms,
                });
            }
        }
        Ok(layout)
    }
}

/// A validated snowflake layout. Cheap to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Layout {
    spec: LayoutSpec,
    time_shift: u32,
    worker_shift: u32,
    sequence_shift: u32,
}

/// The fields of a decoded ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DecodedId {
    /// Unix milliseconds of the start of the ID's tick.
    pub timestamp_ms: u64,
    /// Ticks since the layout's epoch.
    pub tick: u64,
    /// The worker field; on a layout with a datacenter field, the worker within
    /// `datacenter_id` (the field's low bits).
    pub worker_id: u64,
    /// The sequence number within the tick.
    pub sequence: u64,
    /// The datacenter (the worker field's high bits), on a layout that has one.
    pub datacenter_id: Option<u64>,
}

impl Layout {
    fn from_spec(spec: LayoutSpec) -> Layout {
        let (w, s) = (u32::from(spec.worker_bits), u32::from(spec.sequence_bits));
        let (worker_shift, sequence_shift) = match spec.order {
            FieldOrder::TimeWorkerSequence => (s, 0),
            FieldOrder::TimeSequenceWorker => (0, w),
        };
        Layout {
            spec,
            time_shift: w + s,
            worker_shift,
            sequence_shift,
        }
    }

    /// A preset with its default epoch, validated against the system clock.
    pub fn preset(preset: Preset) -> Result<Layout> {
        preset.spec().build()
    }

    /// The parameters this layout was built from.
    pub const fn spec(&self) -> LayoutSpec {
        self.spec
    }
    /// Width of the time field.
    pub const fn time_bits(&self) -> u8 {
        self.spec.time_bits
    }
    /// Width of the worker field (datacenter bits included).
    pub const fn worker_bits(&self) -> u8 {
        self.spec.worker_bits
    }
    /// Width of the sequence field.
    pub const fn sequence_bits(&self) -> u8 {
        self.spec.sequence_bits
    }
    /// Length of one time unit in milliseconds.
    pub const fn tick_ms(&self) -> u64 {
        self.spec.tick_ms
    }
    /// Unix milliseconds of tick 0.
    pub const fn epoch_ms(&self) -> u64 {
        self.spec.epoch_ms
    }
    /// Order of the worker and sequence fields.
    pub const fn order(&self) -> FieldOrder {
        self.spec.order
    }
    /// Total bits used (at most 63).
    pub const fn total_bits(&self) -> u32 {
        self.time_shift + self.spec.time_bits as u32
    }
    /// Whether every ID of this layout is an exact JavaScript number (at most 53 bits):
    /// the check of the JS packages' `nextIdNumber()`, with its one message.
    pub fn check_js_number(&self) -> Result<()> {
        match self.total_bits() {
            ..=53 => Ok(()),
            bits => Err(Error::InvalidLayout {
                reason: format!(
                    "nextIdNumber() needs a layout of at most 53 bits (such as \"js-safe\"), so \
                     that every ID is an exact JS number; this layout has {bits} bits: use \
                     nextId() (bigint) or nextIdString()"
                ),
            }),
        }
    }
    /// The largest value of the whole worker field (datacenter and worker together).
    pub const fn max_worker_id(&self) -> u64 {
        max_value(self.spec.worker_bits)
    }
    /// How many of the worker field's high bits name a datacenter (0: none).
    pub const fn datacenter_bits(&self) -> u8 {
        self.spec.datacenter_bits
    }
    /// The largest datacenter ID (0 without a datacenter field).
    pub const fn max_datacenter_id(&self) -> u64 {
        max_value(self.spec.datacenter_bits)
    }
    /// The largest worker ID within one datacenter (the whole field's without one).
    pub const fn max_worker_in_datacenter(&self) -> u64 {
        max_value(self.spec.worker_bits - self.spec.datacenter_bits)
    }

    /// The worker field of `worker_id` in `datacenter_id` (see [`LayoutSpec::worker_field`]).
    pub fn worker_field(&self, datacenter_id: Option<u64>, worker_id: u64) -> Result<u64> {
        self.spec.worker_field(datacenter_id, worker_id)
    }
    /// The largest sequence number of one tick.
    pub const fn max_sequence(&self) -> u64 {
        max_value(self.spec.sequence_bits)
    }
    /// The last tick the time field holds.
    pub const fn max_tick(&self) -> u64 {
        max_value(self.spec.time_bits)
    }
    /// The largest ID this layout can produce.
    pub const fn max_id(&self) -> u64 {
        max_value(self.total_bits() as u8)
    }

    /// How long the time field lasts from the epoch, in milliseconds (saturating).
    pub const fn lifetime_ms(&self) -> u64 {
        (self.max_tick() + 1).saturating_mul(self.spec.tick_ms)
    }

    /// Unix milliseconds at which the time field overflows (saturating).
    pub const fn exhausts_at_ms(&self) -> u64 {
        self.spec.epoch_ms.saturating_add(self.lifetime_ms())
    }

    /// IDs one worker can issue per second at most (the layout's ceiling).
    pub const fn max_ids_per_second(&self) -> u64 {
        (self.max_sequence() + 1) * 1000 / self.spec.tick_ms
    }

    /// Unix milliseconds from which IDs exceed 2^53 (JS `Number.MAX_SAFE_INTEGER + 1`),
    /// or `None` if this layout never gets there.
    pub fn js_safe_until_ms(&self) -> Option<u64> {
        if self.total_bits() <= 53 {
            return None;
        }
        let first_unsafe_tick = 1u64 << (53 - self.time_shift);
        Some(self.time_of_tick(first_unsafe_tick))
    }

    /// The tick containing `unix_ms`, or `None` if it is before the epoch.
    #[inline]
    pub const fn tick_of(&self, unix_ms: u64) -> Option<u64> {
        if unix_ms < self.spec.epoch_ms {
            None
        } else if self.spec.tick_ms == 1 {
            // The common 1 ms tick skips a 64-bit division on the hot path.
            Some(unix_ms - self.spec.epoch_ms)
        } else {
            Some((unix_ms - self.spec.epoch_ms) / self.spec.tick_ms)
        }
    }

    /// Unix milliseconds of the start of `tick` (saturating).
    #[inline]
    pub const fn time_of_tick(&self, tick: u64) -> u64 {
        self.spec
            .epoch_ms
            .saturating_add(tick.saturating_mul(self.spec.tick_ms))
    }

    /// Packs fields into an ID, checking each against its width.
    pub fn compose(&self, tick: u64, worker_id: u64, sequence: u64) -> Result<u64> {
        if tick > self.max_tick() {
            return Err(Error::invalid_argument(
                "tick",
                format!(
                    "{tick} does not fit {} time bits (max {})",
                    self.spec.time_bits,
                    self.max_tick()
                ),
            ));
        }
        self.check_worker(worker_id)?;
        if sequence > self.max_sequence() {
            return Err(Error::invalid_argument(
                "sequence",
                format!(
                    "{sequence} does not fit {} sequence bits (allowed 0..={})",
                    self.spec.sequence_bits,
                    self.max_sequence()
                ),
            ));
        }
        Ok(self.compose_unchecked(tick, worker_id, sequence))
    }

    /// Packs fields into an ID from a Unix time in milliseconds (rounded down to its tick).
    pub fn compose_at(&self, timestamp_ms: u64, worker_id: u64, sequence: u64) -> Result<u64> {
        let tick = self.tick_of(timestamp_ms).ok_or_else(|| {
            Error::invalid_argument(
                "timestamp_ms",
                format!(
                    "{} is before the layout epoch {}",
                    format_iso8601_ms(timestamp_ms),
                    format_iso8601_ms(self.spec.epoch_ms)
                ),
            )
        })?;
        self.compose(tick, worker_id, sequence)
    }

    /// Packs fields that are known to fit.
    #[inline(always)]
    pub const fn compose_unchecked(&self, tick: u64, worker_id: u64, sequence: u64) -> u64 {
        (tick << self.time_shift)
            | (worker_id << self.worker_shift)
            | (sequence << self.sequence_shift)
    }

    /// The distance between two IDs whose sequence numbers differ by one.
    #[inline]
    pub(crate) const fn sequence_stride(&self) -> u64 {
        1 << self.sequence_shift
    }

    /// Splits an ID into its fields. IDs with bits above [`total_bits`](Layout::total_bits)
    /// are refused: they were not made by this layout.
    pub fn decode(&self, id: u64) -> Result<DecodedId> {
        if id > self.max_id() {
            return Err(Error::invalid_argument(
                "id",
                format!(
                    "{id} has bits above the layout's {} bits (max {}); it was not made by this layout",
                    self.total_bits(),
                    self.max_id()
                ),
            ));
        }
        let tick = id >> self.time_shift;
        let field = (id >> self.worker_shift) & self.max_worker_id();
        let (datacenter_id, worker_id) = if self.spec.datacenter_bits == 0 {
            (None, field)
        } else {
            let low = self.spec.worker_bits - self.spec.datacenter_bits;
            (Some(field >> low), field & max_value(low))
        };
        Ok(DecodedId {
            timestamp_ms: self.time_of_tick(tick),
            tick,
            worker_id,
            sequence: (id >> self.sequence_shift) & self.max_sequence(),
            datacenter_id,
        })
    }

    /// Refuses a worker ID that does not fit the worker field.
    pub fn check_worker(&self, worker_id: u64) -> Result<()> {
        if worker_id > self.max_worker_id() {
            Err(Error::WorkerIdOutOfRange {
                worker_id,
                worker_bits: self.spec.worker_bits,
            })
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_795_000_000_000; // 2026-11-19

    #[test]
    fn presets_build_except_uid_generator() {
        for p in [Preset::Twitter, Preset::Sonyflake, Preset::JsSafe] {
            let l = p.spec().build_at(NOW).unwrap();
            assert!(l.total_bits() <= 63);
        }
        let err = Preset::UidGenerator.spec().build_at(NOW).unwrap_err();
        assert!(matches!(err, Error::LayoutExhausted { .. }));
        let msg = err.to_string();
        assert!(msg.contains("ran out of time on 2024-11-20"), "{msg}");
    }

    #[test]
    fn queries() {
        let t = Preset::Twitter.spec().build_at(NOW).unwrap();
        assert_eq!(t.max_ids_per_second(), 4_096_000);
        assert_eq!(t.lifetime_ms(), 1 << 41);
        assert_eq!(
            format_iso8601_ms(t.exhausts_at_ms()),
            "2080-07-10T17:30:30.209Z"
        );
        assert_eq!(
            format_iso8601_ms(t.js_safe_until_ms().unwrap()),
            "2010-11-28T22:14:18.305Z"
        );
        let js = Preset::JsSafe.spec().build_at(NOW).unwrap();
        assert_eq!(js.js_safe_until_ms(), None);
        assert_eq!(js.max_id(), (1 << 53) - 1);
        let s = Preset::Sonyflake.spec().build_at(NOW).unwrap();
        assert_eq!(s.max_ids_per_second(), 25_600);
    }

    #[test]
    fn refuses_bad_layouts() {
        let base = Preset::Twitter.spec();
        let cases = [
            LayoutSpec {
                time_bits: 42,
                ..base
            },
            LayoutSpec {
                time_bits: 7,
                ..base
            },
            LayoutSpec {
                worker_bits: 32,
                ..base
            },
            LayoutSpec { tick_ms: 0, ..base },
            LayoutSpec {
                epoch_ms: NOW + 1,
                ..base
            },
            LayoutSpec {
                time_bits: 30,
                min_lifetime_years: 10,
                ..base
            },
        ];
        for spec in cases {
            assert!(spec.build_at(NOW).is_err(), "{spec:?}");
        }
        assert!(LayoutSpec {
            time_bits: 30,
            min_lifetime_years: 0,
            epoch_ms: NOW,
            ..base
        }
        .build_at(NOW)
        .is_ok());
    }

    #[test]
    fn compose_decode_both_orders() {
        for p in [Preset::Twitter, Preset::Sonyflake, Preset::JsSafe] {
            let l = p.spec().build_at(NOW).unwrap();
            let id = l.compose(12345, l.max_worker_id(), 3).unwrap();
            let d = l.decode(id).unwrap();
            assert_eq!(
                (d.tick, d.worker_id, d.sequence),
                (12345, l.max_worker_id(), 3)
            );
            assert!(l.compose(0, l.max_worker_id() + 1, 0).is_err());
            assert!(l.compose(0, 0, l.max_sequence() + 1).is_err());
        }
        let js = Preset::JsSafe.spec().build_at(NOW).unwrap();
        assert!(js.decode(1 << 53).is_err());
    }

    /// hutool's `Snowflake(workerId = 5, dataCenterId = 1)` puts `1 << 17 | 5 << 12` below
    /// the time; `twitter-dc` reads it back as datacenter 1, worker 5, and `twitter` as 37.
    #[test]
    fn datacenter_field() {
        let dc = Preset::TwitterDc.spec().build_at(NOW).unwrap();
        let tw = Preset::Twitter.spec().build_at(NOW).unwrap();
        let id = (1000u64 << 22) | (1 << 17) | (5 << 12) | 9;
        let d = dc.decode(id).unwrap();
        assert_eq!((d.datacenter_id, d.worker_id, d.sequence), (Some(1), 5, 9));
        assert_eq!(tw.decode(id).unwrap().worker_id, 37);
        assert_eq!(tw.decode(id).unwrap().datacenter_id, None);
        assert_eq!(dc.worker_field(Some(1), 5).unwrap(), 37);
        assert_eq!(dc.compose(1000, 37, 9).unwrap(), id);
        assert!(dc.worker_field(Some(32), 0).is_err());
        assert!(dc.worker_field(Some(0), 32).is_err());
        assert!(tw.worker_field(Some(0), 1).is_err());
        let bad = LayoutSpec {
            datacenter_bits: 11,
            ..Preset::Twitter.spec()
        };
        assert!(bad.build_at(NOW).is_err());
    }
}
