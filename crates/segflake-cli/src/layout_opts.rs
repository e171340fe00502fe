//! The layout options every snowflake command shares, read through the core's layout
//! table: `--layout PRESET --epoch ISO|MS --time-bits N --worker-bits N --sequence-bits N
//! --tick-ms N --order ORDER --min-lifetime-years N`.

use crate::error::CliError;
use segflake::host::{self, Kind, Options, Value};
use segflake::{Dialect, Layout, LayoutSpec, Preset};

/// Help text for the layout options, from the core's table (names, ranges, defaults, docs).
pub fn help() -> String {
    table_help::<LayoutSpec>("Layout options (start from a preset, then override any field):")
}

/// The flags of an options table, one line each: flag, doc, allowed values, default.
pub fn table_help<T: segflake::Options>(title: &str) -> String {
    let mut text = format!("{title}\n");
    for spec in T::SPECS {
        if !spec.accepted_by(segflake::Dialect::CLI) {
            continue;
        }
        let flag = format!(
            "{} {}",
            spec.spelled(segflake::Spelling::Flag),
            value_name(spec)
        );
        // A flag longer than the column keeps one space before its text.
        text.push_str(&format!(
            "  {flag:<25} {} ({}; default {})\n",
            spec.doc.trim_end_matches('.'),
            spec.kind.allowed(),
            spec.default.unwrap_or("none")
        ));
    }
    text.pop();
    text
}

/// The placeholder of an option's value in help and usage lines: `N`, `ISO|MS`, `NAME`.
pub fn value_name(spec: &segflake::host::OptionSpec) -> &'static str {
    match spec.kind {
        Kind::Time => "ISO|MS",
        Kind::Choice(_) if spec.name == "preset" => "PRESET",
        Kind::Choice(_) => "NAME",
        _ => "N",
    }
}

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
        Ok(self
            .spec
            .build()
            .map_err(|e| host::respell(e, LayoutSpec::SPECS, segflake::Spelling::Flag))?)
    }
}

/// The layout options as given (flag without dashes, text), before a preset is chosen.
#[derive(Debug, Clone)]
pub struct LayoutArgs {
    command: &'static str,
    pairs: Vec<(String, Value)>,
}

/// The layout options as given on the command line (see `cli::Table`).
pub fn from_pairs(command: &'static str, pairs: Vec<(String, Value)>) -> LayoutArgs {
    LayoutArgs { command, pairs }
}

impl LayoutArgs {
    /// Chooses the layout. `preset` is a preset name given another way (the positional
    /// argument of `segflake layout`); giving both that and `--layout` is an error.
    /// `default_min_lifetime` replaces the default of 10 years when
    /// `--min-lifetime-years` is absent (decoding accepts old layouts, so it uses 0).
    pub fn choose(
        mut self,
        preset: Option<String>,
        default_min_lifetime: Option<u32>,
    ) -> Result<LayoutChoice, CliError> {
        let given = |pairs: &[(String, Value)], key: &str| pairs.iter().position(|(k, _)| k == key);
        if let Some(name) = preset {
            if let Some(i) = given(&self.pairs, "layout") {
                return Err(CliError::usage_for(
                    self.command,
                    format!(
                        "the layout is given twice ({name:?} and --layout {}); give it once",
                        self.pairs[i].1
                    ),
                ));
            }
            self.pairs.push(("layout".into(), Value::Str(name)));
        }
        let modified = self
            .pairs
            .iter()
            .any(|(k, _)| k != "layout" && k != "min-lifetime-years");
        if let Some(years) = default_min_lifetime {
            if given(&self.pairs, "min-lifetime-years").is_none() {
                self.pairs
                    .push(("min-lifetime-years".into(), Value::uint(years.into())));
            }
        }
        let preset = match given(&self.pairs, "layout").map(|i| &self.pairs[i].1) {
            Some(Value::Str(name)) => Preset::from_name(name).ok(),
            _ => Some(Preset::Twitter),
        };
        let spec: LayoutSpec = host::configure(self.pairs, Dialect::CLI)?;
        Ok(LayoutChoice {
            preset: preset.unwrap_or(Preset::Twitter),
            modified,
            spec,
        })
    }
}
