//! Every options set and record type by name, for hosts that choose one at run time (the C
//! builder, the shared vectors, generated type declarations). The only module that knows
//! all domains, so `host` stays free of them.

use crate::error::{quoted, Error, Result};
use crate::host::{
    configure, json_string, respell, spelled_settings, Dialect, FieldSpec, OptionSpec, Options,
    Record, SnowflakeConfig, Value,
};
use crate::layout::{DecodedId, Layout, LayoutSpec};
use crate::lease::{LeaseOptions, LeaseStats};
use crate::segment::{SegmentOptions, SegmentStats};
use crate::serial::{SerialOptions, SerialParts};

/// The options set named `name` (see [`OPTION_SETS`]): its description and table.
pub fn option_set(name: &str) -> Result<(&'static str, &'static [OptionSpec])> {
    OPTION_SETS
        .iter()
        .find(|(set, _, _)| *set == name)
        .map(|(_, what, specs)| (*what, *specs))
        .ok_or_else(|| {
            Error::invalid_argument(
                "options set",
                format!(
                    "{name} is not an options set; allowed: {}",
                    OPTION_SETS
                        .iter()
                        .map(|s| s.0)
                        .collect::<Vec<_>>()
                        .join(", "),
                    name = quoted(name)
                ),
            )
        })
}

/// The options types by name, for hosts that pick one at run time (the C builder, the
/// shared vectors): `layout`, `snowflake`, `segment`, `serial`.
pub const OPTION_SETS: &[(&str, &str, &[OptionSpec])] = &[
    ("layout", LayoutSpec::WHAT, LayoutSpec::SPECS),
    ("snowflake", SnowflakeConfig::WHAT, SnowflakeConfig::SPECS),
    ("segment", SegmentOptions::WHAT, SegmentOptions::SPECS),
    ("serial", SerialOptions::WHAT, SerialOptions::SPECS),
    ("lease", LeaseOptions::WHAT, LeaseOptions::SPECS),
];

/// Configures the options set named `set` (see [`OPTION_SETS`]), validates it as its
/// generator would at `now_ms` (layouts are built, worker IDs checked against them), and
/// returns its settings spelled as the dialect spells them.
pub fn settings_of<K: AsRef<str>>(
    set: &str,
    pairs: impl IntoIterator<Item = (K, Value)>,
    dialect: Dialect,
    now_ms: u64,
) -> Result<Vec<(String, Value)>> {
    let s = dialect.spelling;
    match set {
        "layout" => {
            let spec: LayoutSpec = configure(pairs, dialect)?;
            spec.build_at(now_ms)
                .map_err(|e| respell(e, LayoutSpec::SPECS, s))?;
            Ok(spelled_settings(&spec, s))
        }
        "snowflake" => {
            let config: SnowflakeConfig = configure(pairs, dialect)?;
            config.build_at(now_ms, s)?;
            Ok(spelled_settings(&config, s))
        }
        "segment" => {
            configure::<SegmentOptions, K>(pairs, dialect).map(|o| spelled_settings(&o, s))
        }
        "serial" => configure::<SerialOptions, K>(pairs, dialect).map(|o| spelled_settings(&o, s)),
        "lease" => configure::<LeaseOptions, K>(pairs, dialect).map(|o| spelled_settings(&o, s)),
        other => Err(option_set(other).err().unwrap_or_else(|| {
            Error::invalid_argument(
                "options set",
                format!("{other} has no settings", other = quoted(other)),
            )
        })),
    }
}

/// The record types by name, for hosts that build result objects at run time.
pub const RECORDS: &[(&str, &[FieldSpec])] = &[
    (SegmentStats::NAME, SegmentStats::FIELDS),
    (DecodedId::NAME, DecodedId::FIELDS),
    (SerialParts::NAME, SerialParts::FIELDS),
    (Layout::NAME, Layout::FIELDS),
    (LeaseStats::NAME, LeaseStats::FIELDS),
];

/// The option and record tables as JSON, for generated or checked type declarations:
/// `{"options": {"segment": [{"name", "camel", "type", "allowed", "default", "threads_only", "doc"}...]},
///   "records": {"SegmentStats": [{"name", "camel", "kind", "optional", "doc"}...]},
///   "registries": ..., "segment_stores": ...}` (the last two as [`statements_json`] has them).
pub fn tables_json() -> String {
    let options: Vec<String> = OPTION_SETS
        .iter()
        .map(|(set, _, specs)| {
            let rows: Vec<String> = specs
                .iter()
                .map(|s| {
                    format!(
                        "{{\"name\": {}, \"camel\": {}, \"type\": {}, \"allowed\": {}, \"default\": {}, \"threads_only\": {}, \"doc\": {}}}",
                        json_string(s.name),
                        json_string(s.camel),
                        json_string(s.kind.type_name()),
                        json_string(&s.kind.allowed()),
                        s.default.map_or("null".into(), json_string),
                        s.threads_only,
                        json_string(s.doc)
                    )
                })
                .collect();
            format!("{}: [{}]", json_string(set), rows.join(", "))
        })
        .collect();
    let records: Vec<String> = RECORDS
        .iter()
        .map(|(name, fields)| {
            let rows: Vec<String> = fields
                .iter()
                .map(|f| {
                    format!(
                        "{{\"name\": {}, \"camel\": {}, \"kind\": {}, \"optional\": {}, \"doc\": {}}}",
                        json_string(f.name),
                        json_string(f.camel),
                        json_string(&format!("{:?}", f.kind).to_ascii_lowercase()),
                        f.optional,
                        json_string(f.doc)
                    )
                })
                .collect();
            format!("{}: [{}]", json_string(name), rows.join(", "))
        })
        .collect();
    format!(
        "{{\"options\": {{{}}}, \"records\": {{{}}}, {}}}",
        options.join(", "),
        records.join(", "),
        statements_members()
    )
}

/// What the hosts' registry and store adapters send, as JSON: `{"registries": {registry:
/// {call: text}}, "segment_stores": {store: {call: text}}}` (the Redis scripts and SQL
/// statements of [`lease::schema::STATEMENTS`](crate::lease::schema::STATEMENTS) and
/// [`segment::statements::STATEMENTS`](crate::segment::statements::STATEMENTS)); also the
/// last two members of [`tables_json`].
pub fn statements_json() -> String {
    format!("{{{}}}", statements_members())
}

fn statements_members() -> String {
    let group = |rows: &[(&str, &str, &str)]| -> String {
        let mut by: Vec<(&str, Vec<String>)> = Vec::new();
        for (owner, call, text) in rows {
            let row = format!("{}: {}", json_string(call), json_string(text));
            match by.iter_mut().find(|(o, _)| o == owner) {
                Some((_, rows)) => rows.push(row),
                None => by.push((owner, vec![row])),
            }
        }
        by.iter()
            .map(|(o, rows)| format!("{}: {{{}}}", json_string(o), rows.join(", ")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "\"registries\": {{{}}}, \"segment_stores\": {{{}}}",
        group(crate::lease::schema::STATEMENTS),
        group(crate::segment::statements::STATEMENTS)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn tables_name_options_as_js_spells_them() {
        assert!(super::tables_json().contains("\"storeTimeoutMs\""));
    }

    #[test]
    fn tables_end_with_the_statements() {
        let statements = super::statements_json();
        assert!(statements.starts_with("{\"registries\": {\"redis\": {"));
        assert!(statements.contains("\"segment_stores\": {"));
        assert!(super::tables_json().ends_with(&statements[1..]));
    }
}
