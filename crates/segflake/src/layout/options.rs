//! The layout's options table, the `compose` fields, and `Layout`/`DecodedId` as records.

use std::borrow::Cow;

use super::{DecodedId, FieldOrder, Layout, LayoutSpec, Preset};
use crate::error::{Error, Result};
use crate::host::{
    configure, field, opt, optional, respell, uint, Dialect, FieldKind, FieldSpec, Kind,
    OptionSpec, Options, Record, Setting, Value,
};

pub(crate) const PRESET_NAMES: &[&str] = &[
    "twitter",
    "sonyflake",
    "uid-generator",
    "js-safe",
    "twitter-dc",
];
const ORDER_NAMES: &[&str] = &["time-worker-sequence", "time-sequence-worker"];

impl LayoutSpec {
    pub(crate) const WHAT: &'static str = "layout";
}

impl Options for LayoutSpec {
    const WHAT: &'static str = LayoutSpec::WHAT;
    const SPECS: &'static [OptionSpec] = &[
        opt(
            "preset",
            "preset",
            Kind::Choice(PRESET_NAMES),
            "twitter",
            "The preset the other fields start from.",
        )
        .with_flag("layout"),
        opt(
            "time_bits",
            "timeBits",
            uint(8, 63),
            "41",
            "Width of the time field.",
        ),
        opt(
            "worker_bits",
            "workerBits",
            uint(0, 31),
            "10",
            "Width of the worker field.",
        ),
        opt(
            "datacenter_bits",
            "datacenterBits",
            uint(0, 31),
            "0",
            "How many of the worker field's high bits name a datacenter (at most worker_bits; \
             twitter-dc: 5). With them, a worker is datacenter_id and worker_id within it.",
        ),
        opt(
            "sequence_bits",
            "sequenceBits",
            uint(0, 31),
            "12",
            "Width of the sequence field.",
        ),
        opt(
            "tick_ms",
            "tickMs",
            uint(1, crate::layout::MAX_TICK_MS),
            "1",
            "Length of one time unit in milliseconds.",
        ),
        opt(
            "epoch_ms",
            "epochMs",
            Kind::Time,
            "the preset's epoch",
            "Time of tick 0; must not be in the future.",
        )
        .with_flag("epoch"),
        opt(
            "order",
            "order",
            Kind::Choice(ORDER_NAMES),
            "time-worker-sequence",
            "Order of the worker and sequence fields below the time field.",
        ),
        opt(
            "min_lifetime_years",
            "minLifetimeYears",
            uint(0, 10_000),
            "10",
            "Refuse the layout if its time runs out within this many years (0: no check).",
        ),
    ];
    fn defaults() -> Self {
        Preset::Twitter.spec()
    }
    fn apply(&mut self, name: &str, v: Setting) {
        match name {
            "preset" => {
                let min_lifetime_years = self.min_lifetime_years;
                *self = LayoutSpec {
                    min_lifetime_years,
                    ..Preset::from_name(v.choice()).map_or(*self, Preset::spec)
                };
            }
            "time_bits" => self.time_bits = v.uint() as u8,
            "worker_bits" => self.worker_bits = v.uint() as u8,
            "datacenter_bits" => self.datacenter_bits = v.uint() as u8,
            "sequence_bits" => self.sequence_bits = v.uint() as u8,
            "tick_ms" => self.tick_ms = v.uint(),
            "epoch_ms" => self.epoch_ms = v.uint(),
            "order" => {
                self.order = FieldOrder::from_name(v.choice()).unwrap_or(self.order);
            }
            "min_lifetime_years" => self.min_lifetime_years = v.uint() as u32,
            _ => {}
        }
    }
    fn finish(&mut self, _given: &[&'static str]) -> Result<()> {
        Ok(())
    }
    /// Layout fields are refused as [`Error::InvalidLayout`], like [`LayoutSpec::build_at`].
    fn refusal(err: Error) -> Error {
        match err {
            Error::InvalidArgument { name, reason } if name != LayoutSpec::WHAT => {
                Error::InvalidLayout {
                    reason: format!("{name}: {reason}"),
                }
            }
            other => other,
        }
    }
    fn settings(&self) -> Vec<(&'static str, Value)> {
        let mut settings = vec![
            ("time_bits", Value::uint(self.time_bits.into())),
            ("worker_bits", Value::uint(self.worker_bits.into())),
            ("sequence_bits", Value::uint(self.sequence_bits.into())),
            ("tick_ms", Value::uint(self.tick_ms)),
            ("epoch_ms", Value::uint(self.epoch_ms)),
            ("order", Value::Str(self.order.name().into())),
            (
                "min_lifetime_years",
                Value::uint(self.min_lifetime_years.into()),
            ),
        ];
        if self.datacenter_bits > 0 {
            settings.insert(
                2,
                ("datacenter_bits", Value::uint(self.datacenter_bits.into())),
            );
        }
        settings
    }
}

/// The fields `compose` packs into an ID: `tick` or `timestamp_ms` (exactly one),
/// `worker_id` (with `datacenter_id` on a layout that has one) and `sequence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ComposeFields {
    /// Ticks since the layout's epoch.
    pub tick: Option<u64>,
    /// Unix milliseconds (within the tick).
    pub timestamp_ms: Option<u64>,
    /// The worker ID (within `datacenter_id` when given).
    pub worker_id: Option<u64>,
    /// The datacenter, on a layout that has a datacenter field.
    pub datacenter_id: Option<u64>,
    /// The sequence number.
    pub sequence: u64,
}

impl Options for ComposeFields {
    const WHAT: &'static str = "compose fields";
    const SPECS: &'static [OptionSpec] = &[
        opt(
            "tick",
            "tick",
            uint(0, u64::MAX),
            "none",
            "Ticks since the layout's epoch (or give timestamp_ms).",
        ),
        opt(
            "timestamp_ms",
            "timestampMs",
            Kind::Time,
            "none",
            "A time, rounded down to its tick (or give tick).",
        ),
        opt(
            "worker_id",
            "workerId",
            uint(0, u64::MAX),
            "0 (a generator's own)",
            "The worker field; with datacenter_id, the worker within that datacenter.",
        ),
        opt(
            "datacenter_id",
            "datacenterId",
            uint(0, u64::MAX),
            "none",
            "The datacenter, on a layout with a datacenter field.",
        ),
        opt(
            "sequence",
            "sequence",
            uint(0, u64::MAX),
            "0",
            "The sequence field.",
        ),
    ];
    fn defaults() -> Self {
        ComposeFields::default()
    }
    fn apply(&mut self, name: &str, v: Setting) {
        let v = v.uint();
        match name {
            "tick" => self.tick = Some(v),
            "timestamp_ms" => self.timestamp_ms = Some(v),
            "worker_id" => self.worker_id = Some(v),
            "datacenter_id" => self.datacenter_id = Some(v),
            "sequence" => self.sequence = v,
            _ => {}
        }
    }
    fn finish(&mut self, _given: &[&'static str]) -> Result<()> {
        let why = match (self.tick, self.timestamp_ms) {
            (Some(_), Some(_)) => "both tick and timestamp_ms were given",
            (None, None) => "neither tick nor timestamp_ms was given",
            _ => return Ok(()),
        };
        Err(Error::invalid_argument(
            ComposeFields::WHAT,
            format!(
                "{why}; give exactly one of tick and timestamp_ms (worker_id and sequence \
                 default to 0)"
            ),
        ))
    }
    fn settings(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("tick", Value::opt_uint(self.tick)),
            ("timestamp_ms", Value::opt_uint(self.timestamp_ms)),
            ("worker_id", Value::opt_uint(self.worker_id)),
            ("datacenter_id", Value::opt_uint(self.datacenter_id)),
            ("sequence", Value::uint(self.sequence)),
        ]
    }
}

/// Packs `fields` (a map of [`ComposeFields`]) into an ID of `layout`; a missing
/// `worker_id` is `default_worker` (a generator's own worker field, or 0). Each field is
/// checked against its width; names in errors are spelled for `dialect`.
pub fn compose_of(
    layout: &Layout,
    fields: &Value,
    default_worker: u64,
    dialect: Dialect,
) -> Result<u64> {
    let Value::Map(pairs) = fields else {
        return Err(Error::InvalidArgument {
            name: Cow::Borrowed(ComposeFields::WHAT),
            reason: format!(
                "got {fields}; expected an object of {}",
                ComposeFields::SPECS
                    .iter()
                    .map(|s| s.key(dialect.spelling))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    };
    let f: ComposeFields = configure(pairs.iter().map(|(k, v)| (k, v.clone())), dialect)?;
    let respelled = |e| respell(e, ComposeFields::SPECS, dialect.spelling);
    let worker = match (f.datacenter_id, f.worker_id) {
        (None, None) => default_worker,
        (dc, worker) => layout
            .worker_field(dc, worker.unwrap_or(0))
            .map_err(respelled)?,
    };
    match (f.tick, f.timestamp_ms) {
        (Some(tick), _) => layout.compose(tick, worker, f.sequence),
        (_, at) => layout.compose_at(at.unwrap_or(0), worker, f.sequence),
    }
    .map_err(respelled)
}

/// A layout from a preset name or a map of layout options.
pub fn layout_of(value: &Value, dialect: Dialect) -> Result<LayoutSpec> {
    match value {
        Value::Str(name) => Preset::from_name(name).map(Preset::spec),
        Value::Map(pairs) => configure(pairs.iter().map(|(k, v)| (k, v.clone())), dialect),
        other => Err(Error::InvalidArgument {
            name: Cow::Borrowed(LayoutSpec::WHAT),
            reason: format!("got {other}; allowed {}", Kind::Layout.allowed()),
        }),
    }
}

impl Record for DecodedId {
    const NAME: &'static str = "DecodedId";
    const FIELDS: &'static [FieldSpec] = &[
        field(
            "timestamp_ms",
            "timestampMs",
            FieldKind::Count,
            "Unix milliseconds of the ID's tick.",
        ),
        field(
            "tick",
            "tick",
            FieldKind::Count,
            "The time field: ticks since the layout's epoch.",
        ),
        field(
            "worker_id",
            "workerId",
            FieldKind::Count,
            "The worker field (on a layout with a datacenter field, the worker within datacenter_id).",
        ),
        field(
            "sequence",
            "sequence",
            FieldKind::Count,
            "The sequence field.",
        ),
        optional(
            "datacenter_id",
            "datacenterId",
            FieldKind::Count,
            "The datacenter, on a layout with a datacenter field (then worker_id is the \
             worker within it).",
        ),
    ];
    fn values(&self) -> Vec<Value> {
        vec![
            Value::uint(self.timestamp_ms),
            Value::uint(self.tick),
            Value::uint(self.worker_id),
            Value::uint(self.sequence),
            Value::opt_uint(self.datacenter_id),
        ]
    }
}

impl Record for Layout {
    const NAME: &'static str = "Layout";
    const FIELDS: &'static [FieldSpec] = &[
        field(
            "time_bits",
            "timeBits",
            FieldKind::Count,
            "Width of the time field.",
        ),
        field(
            "worker_bits",
            "workerBits",
            FieldKind::Count,
            "Width of the worker field.",
        ),
        field(
            "sequence_bits",
            "sequenceBits",
            FieldKind::Count,
            "Width of the sequence field.",
        ),
        field(
            "tick_ms",
            "tickMs",
            FieldKind::Count,
            "Length of one time unit in milliseconds.",
        ),
        field(
            "epoch_ms",
            "epochMs",
            FieldKind::Count,
            "Unix milliseconds of tick 0.",
        ),
        field(
            "order",
            "order",
            FieldKind::Text,
            "time-worker-sequence or time-sequence-worker.",
        ),
        field(
            "min_lifetime_years",
            "minLifetimeYears",
            FieldKind::Count,
            "The lifetime the layout was checked for.",
        ),
        field(
            "total_bits",
            "totalBits",
            FieldKind::Count,
            "Bits in use (at most 63).",
        ),
        field(
            "lifetime_ms",
            "lifetimeMs",
            FieldKind::Count,
            "How long the time field lasts from the epoch.",
        ),
        field(
            "exhausts_at_ms",
            "exhaustsAtMs",
            FieldKind::Count,
            "When the time field runs out.",
        ),
        field(
            "max_ids_per_second",
            "maxIdsPerSecond",
            FieldKind::Count,
            "The most IDs one worker can issue per second.",
        ),
        optional(
            "js_safe_until_ms",
            "jsSafeUntilMs",
            FieldKind::Count,
            "When IDs pass 2^53 (absent if they never do).",
        ),
        field(
            "max_worker_id",
            "maxWorkerId",
            FieldKind::Count,
            "The largest worker ID.",
        ),
        field(
            "max_sequence",
            "maxSequence",
            FieldKind::Count,
            "The largest sequence number.",
        ),
        field("max_tick", "maxTick", FieldKind::Count, "The largest tick."),
        field("max_id", "maxId", FieldKind::Id, "The largest ID."),
        field(
            "datacenter_bits",
            "datacenterBits",
            FieldKind::Count,
            "How many of the worker field's high bits name a datacenter (0: none).",
        ),
    ];
    fn values(&self) -> Vec<Value> {
        let s = self.spec();
        vec![
            Value::uint(s.time_bits.into()),
            Value::uint(s.worker_bits.into()),
            Value::uint(s.sequence_bits.into()),
            Value::uint(s.tick_ms),
            Value::uint(s.epoch_ms),
            Value::Str(s.order.name().into()),
            Value::uint(s.min_lifetime_years.into()),
            Value::uint(self.total_bits().into()),
            Value::uint(self.lifetime_ms()),
            Value::uint(self.exhausts_at_ms()),
            Value::uint(self.max_ids_per_second()),
            Value::opt_uint(self.js_safe_until_ms()),
            Value::uint(self.max_worker_id()),
            Value::uint(self.max_sequence()),
            Value::uint(self.max_tick()),
            Value::uint(self.max_id()),
            Value::uint(s.datacenter_bits.into()),
        ]
    }
}
