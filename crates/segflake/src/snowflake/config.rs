//! `SnowflakeConfig`: a layout plus the generator's options, and its options table.

use super::{SequenceStart, SnowflakeOptions, MAX_DRIFT_LIMIT_MS};
use crate::error::Result;
use crate::host::{
    doc_text, opt, respell, spelled_settings, uint, Kind, OptionSpec, Options, Setting, Spelling,
    Value,
};
use crate::layout::{Layout, LayoutSpec, Preset};

const SEQUENCE_START_NAMES: &[&str] = &["zero", "random"];

/// Bits of the worker within a datacenter.
fn low_bits(layout: &LayoutSpec) -> u8 {
    layout.worker_bits.saturating_sub(layout.datacenter_bits)
}

/// Everything a snowflake generator is built from: its layout and its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SnowflakeConfig {
    /// The layout, not yet validated.
    pub layout: LayoutSpec,
    /// The generator's options; `options.worker_id` is the whole worker field.
    pub options: SnowflakeOptions,
    /// The datacenter `options.worker_id` was composed from, when one was given.
    pub datacenter_id: Option<u64>,
}

impl SnowflakeConfig {
    /// Validates the layout at `now_ms` and the options against it (the worker ID's range,
    /// the drift bound), respelling names for `spelling`.
    pub fn build_at(&self, now_ms: u64, spelling: Spelling) -> Result<Layout> {
        let layout = self
            .layout
            .build_at(now_ms)
            .map_err(|e| respell(e, LayoutSpec::SPECS, spelling))?;
        layout
            .check_worker(self.options.worker_id)
            .map_err(|e| respell(e, SnowflakeConfig::SPECS, spelling))?;
        Ok(layout)
    }
}

impl Options for SnowflakeConfig {
    const WHAT: &'static str = "snowflake options";
    const SPECS: &'static [OptionSpec] = &[
        OptionSpec {
            name: "worker_id",
            camel: "workerId",
            kind: uint(0, u64::MAX),
            default: None,
            threads_only: false,
            flag: Some("worker"),
            doc: doc_text(
                "This generator's worker ID: 0..2^worker_bits of the layout (with \
                 datacenter_id, the worker within that datacenter). No default: two \
                 generators with one worker ID issue the same IDs.",
            ),
        },
        opt(
            "datacenter_id",
            "datacenterId",
            uint(0, u64::MAX),
            "none",
            "The datacenter, on a layout with a datacenter field (twitter-dc): worker_id is \
             then the worker within it (hutool's Snowflake(workerId, dataCenterId)).",
        )
        .with_flag("datacenter"),
        opt(
            "layout",
            "layout",
            Kind::Layout,
            "twitter",
            "The layout: a preset name or layout options.",
        ),
        opt(
            "epoch_ms",
            "epochMs",
            Kind::Time,
            "the layout's epoch",
            "Overrides the layout's epoch.",
        )
        .with_flag("epoch"),
        opt(
            "max_drift_ms",
            "maxDriftMs",
            uint(0, MAX_DRIFT_LIMIT_MS),
            "2000",
            "How far the logical clock may run ahead of the wall clock (0: strict Twitter \
             behaviour: wait for the next tick, fail on any step back).",
        ),
        opt(
            "sequence_start",
            "sequenceStart",
            Kind::Choice(SEQUENCE_START_NAMES),
            "zero",
            "Where each tick's sequence starts: zero, or random below 100 (Leaf's rule, \
             keeps id % N even at low rates).",
        ),
        opt(
            "not_before_ms",
            "notBeforeMs",
            Kind::Time,
            "none",
            "A persisted high-water mark: no ID carries a time at or below it.",
        )
        .with_flag("not-before"),
    ];
    fn defaults() -> Self {
        SnowflakeConfig {
            layout: Preset::Twitter.spec(),
            options: SnowflakeOptions::new(0),
            datacenter_id: None,
        }
    }
    fn apply(&mut self, name: &str, v: Setting) {
        let o = &mut self.options;
        match name {
            "worker_id" => o.worker_id = v.uint(),
            "datacenter_id" => self.datacenter_id = Some(v.uint()),
            "layout" => {
                if let Setting::Layout(spec) = v {
                    self.layout = spec;
                }
            }
            "epoch_ms" => self.layout.epoch_ms = v.uint(),
            "max_drift_ms" => o.max_drift_ms = v.uint(),
            "sequence_start" => {
                o.sequence_start = SequenceStart::from_name(v.choice()).unwrap_or_default();
            }
            "not_before_ms" => o.not_before_ms = Some(v.uint()),
            _ => {}
        }
    }
    fn finish(&mut self, _given: &[&'static str]) -> Result<()> {
        if self.datacenter_id.is_some() {
            self.options.worker_id = self
                .layout
                .worker_field(self.datacenter_id, self.options.worker_id)?;
        }
        Ok(())
    }
    /// The worker ID's range is the layout's.
    fn allowed(&self, spec: &OptionSpec) -> String {
        match spec.name {
            "worker_id" => format!(
                "integers 0..={} (the layout has {} worker bits); segflake never picks one, \
                 since two generators with one worker ID issue the same IDs",
                crate::layout::max_value(self.layout.worker_bits.min(63)),
                self.layout.worker_bits
            ),
            _ => spec.kind.allowed(),
        }
    }
    fn settings(&self) -> Vec<(&'static str, Value)> {
        let o = &self.options;
        // On a layout with a datacenter field, the worker field reads as its two parts.
        let low = low_bits(&self.layout);
        let (datacenter_id, worker_id) = if self.layout.datacenter_bits > 0 {
            (
                Value::uint(o.worker_id >> low),
                Value::uint(o.worker_id & crate::layout::max_value(low)),
            )
        } else {
            (Value::Null, Value::uint(o.worker_id))
        };
        let mut settings = vec![
            ("worker_id", worker_id),
            ("datacenter_id", datacenter_id),
            (
                "layout",
                Value::Map(spelled_settings(&self.layout, Spelling::Snake)),
            ),
            ("max_drift_ms", Value::uint(o.max_drift_ms)),
            ("sequence_start", Value::Str(o.sequence_start.name().into())),
            ("not_before_ms", Value::opt_uint(o.not_before_ms)),
        ];
        if self.layout.datacenter_bits == 0 {
            settings.retain(|(name, _)| *name != "datacenter_id");
        }
        settings
    }
}
