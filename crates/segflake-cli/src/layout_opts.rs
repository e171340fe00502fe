//! The layout options every snowflake command shares:
//! `--layout PRESET --epoch ISO|MS --time-bits N --worker-bits N --sequence-bits N
//! --tick-ms N --order ORDER --min-lifetime-years N`.

use crate::args::Args;
use crate::error::CliError;
use segflake::datetime::parse_time_ms;
use segflake::{FieldOrder, Layout, LayoutSpec, Preset};

/// Help text for the layout options, for inclusion in a command's `--help`.
pub const HELP: &str = "\
Layout options (start from a preset, then override any field):
  --layout PRESET           twitter (default), sonyflake, uid-generator, js-safe
  --epoch ISO|MS            epoch as 2025-01-01, 2025-01-01T00:00:00Z or Unix milliseconds
  --time-bits N             width of the time field, 8..=63
  --worker-bits N           width of the worker field, 0..=31
  --sequence-bits N         width of the sequence field, 0..=31
  --tick-ms N               length of one time unit in milliseconds, 1..=86400000
  --order ORDER             time-worker-sequence or time-sequence-worker
  --min-lifetime-years N    refuse a layout that runs out of time within N years
                            (default 10; 0 switches the check off)";

/// A layout as chosen on the command line, not yet validated.
#[derive(Debug, Clone, Copy)]
pub struct LayoutChoice {
    /// The preset it starts from.
    pub preset: Preset,
    /// `true` if any field was overridden.
    pub modified: bool,
    pub spec: LayoutSpec,
}

impl LayoutChoice {
    /// `twitter`, or `twitter (modified)` when fields were overridden.
    pub fn name(&self) -> String {
        if self.modified {
            format!("{} (modified)", self.preset.name())
        } else {
            self.preset.name().to_string()
        }
    }

    /// Validates the layout against the system clock.
    pub fn build(&self) -> Result<Layout, CliError> {
        Ok(self.spec.build()?)
    }
}

/// The layout options as given, before a preset is chosen.
#[derive(Debug, Clone)]
pub struct LayoutArgs {
    command: &'static str,
    layout: Option<String>,
    epoch_ms: Option<u64>,
    time_bits: Option<u8>,
    worker_bits: Option<u8>,
    sequence_bits: Option<u8>,
    tick_ms: Option<u64>,
    order: Option<FieldOrder>,
    min_lifetime_years: Option<u32>,
}

/// Takes the layout options out of `args` (before any positional arguments are taken).
pub fn take_args(args: &mut Args) -> Result<LayoutArgs, CliError> {
    let layout = args.value("--layout")?;
    let epoch_ms = match args.value("--epoch")? {
        Some(text) => Some(parse_time_ms(&text).map_err(|e| args.usage(format!("--epoch: {e}")))?),
        None => None,
    };
    let time_bits = args.parsed::<u8>("--time-bits", "8..=63")?;
    let worker_bits = args.parsed::<u8>("--worker-bits", "0..=31")?;
    let sequence_bits = args.parsed::<u8>("--sequence-bits", "0..=31")?;
    let tick_ms = args.parsed::<u64>("--tick-ms", "1..=86400000")?;
    let order = match args.value("--order")? {
        Some(text) => Some(FieldOrder::from_name(&text).map_err(|e| args.usage(e.to_string()))?),
        None => None,
    };
    let min_lifetime_years = args.parsed::<u32>("--min-lifetime-years", "0..=10000")?;
    Ok(LayoutArgs {
        command: args.command(),
        layout,
        epoch_ms,
        time_bits,
        worker_bits,
        sequence_bits,
        tick_ms,
        order,
        min_lifetime_years,
    })
}

impl LayoutArgs {
    /// Chooses the layout. `preset` is a preset name given another way (the positional
    /// argument of `segflake layout`); giving both that and `--layout` is an error.
    /// `default_min_lifetime` replaces the default of 10 years when
    /// `--min-lifetime-years` is absent (decoding accepts old layouts, so it uses 0).
    pub fn choose(
        self,
        preset: Option<String>,
        default_min_lifetime: Option<u32>,
    ) -> Result<LayoutChoice, CliError> {
        let usage = |m: String| CliError::usage_for(self.command, m);
        let name = match (preset, self.layout) {
            (Some(a), Some(b)) => {
                return Err(usage(format!(
                    "the layout is given twice ({a:?} and --layout {b:?}); give it once"
                )))
            }
            (a, b) => a.or(b),
        };
        let preset = match name {
            Some(name) => Preset::from_name(&name).map_err(|e| usage(e.to_string()))?,
            None => Preset::Twitter,
        };
        let mut spec = preset.spec();
        let mut modified = false;
        if let Some(v) = self.epoch_ms {
            spec.epoch_ms = v;
            modified = true;
        }
        if let Some(v) = self.time_bits {
            spec.time_bits = v;
            modified = true;
        }
        if let Some(v) = self.worker_bits {
            spec.worker_bits = v;
            modified = true;
        }
        if let Some(v) = self.sequence_bits {
            spec.sequence_bits = v;
            modified = true;
        }
        if let Some(v) = self.tick_ms {
            spec.tick_ms = v;
            modified = true;
        }
        if let Some(v) = self.order {
            spec.order = v;
            modified = true;
        }
        if let Some(v) = self.min_lifetime_years.or(default_min_lifetime) {
            spec.min_lifetime_years = v;
        }
        Ok(LayoutChoice {
            preset,
            modified,
            spec,
        })
    }
}

/// Takes the layout options and chooses the layout (for commands without a positional
/// preset); see [`LayoutArgs::choose`].
pub fn take(args: &mut Args, default_min_lifetime: Option<u32>) -> Result<LayoutChoice, CliError> {
    take_args(args)?.choose(None, default_min_lifetime)
}
