//! Configuring an options type from host pairs, and reading its settings back spelled for
//! the host.

use std::borrow::Cow;

use super::spec::position;
use super::{
    check, find, respell, respell_text, Dialect, OptionSpec, Options, Setting, Spelling, Value,
};
use crate::error::{quoted, Error, Result};
use crate::layout::LayoutSpec;

/// Options of `T` from host key/value pairs: unknown keys, wrong kinds and out-of-range
/// values are refused naming the key as given; `Value::Null` keeps the default; an option
/// without a default must be given.
pub fn configure<T, K>(pairs: impl IntoIterator<Item = (K, Value)>, dialect: Dialect) -> Result<T>
where
    T: Options,
    K: AsRef<str>,
{
    apply_pairs(T::defaults(), pairs, dialect, true)
}

/// As [`configure`], starting from `base` (which holds every required option already).
pub fn configure_onto<T, K>(
    base: T,
    pairs: impl IntoIterator<Item = (K, Value)>,
    dialect: Dialect,
) -> Result<T>
where
    T: Options,
    K: AsRef<str>,
{
    apply_pairs(base, pairs, dialect, false)
}

fn apply_pairs<T, K>(
    mut base: T,
    pairs: impl IntoIterator<Item = (K, Value)>,
    dialect: Dialect,
    require: bool,
) -> Result<T>
where
    T: Options,
    K: AsRef<str>,
{
    let mut checked: Vec<(usize, Setting)> = Vec::new();
    for (key, value) in pairs {
        check_pair::<T>(&mut checked, key.as_ref(), &value, dialect)?;
    }
    let (checked, given) = in_table_order(T::SPECS, checked);
    for (index, setting) in checked {
        base.apply(T::SPECS[index].name, setting);
    }
    if require {
        missing_required(T::SPECS, &given, dialect, &|spec| base.allowed(spec))?;
    }
    base.finish(&given)
        .map_err(|e| respell(e, T::SPECS, dialect.spelling))?;
    Ok(base)
}

/// The checked pairs in table order (each index is there once; picked rather than sorted:
/// the tables are short, and a sort is kilobytes of WebAssembly), and the names given.
fn in_table_order(
    specs: &'static [OptionSpec],
    checked: Vec<(usize, Setting)>,
) -> (Vec<(usize, Setting)>, Vec<&'static str>) {
    let checked: Vec<(usize, Setting)> = (0..specs.len())
        .filter_map(|index| checked.iter().find(|(i, _)| *i == index).copied())
        .collect();
    let given = checked.iter().map(|(i, _)| specs[*i].name).collect();
    (checked, given)
}

/// The error for the first option of `specs` without a default that is not `given`.
fn missing_required(
    specs: &'static [OptionSpec],
    given: &[&'static str],
    dialect: Dialect,
    allowed: &dyn Fn(&OptionSpec) -> String,
) -> Result<()> {
    match specs
        .iter()
        .find(|spec| spec.default.is_none() && !given.contains(&spec.name))
    {
        Some(spec) => Err(Error::InvalidArgument {
            name: spec.spelled(dialect.spelling),
            reason: format!("is required; allowed {}", allowed(spec)),
        }),
        None => Ok(()),
    }
}

/// One pair of [`apply_pairs`] checked into `checked` (a key given again replaces its
/// earlier value). Only this shim is generic: the work is one copy for every options type.
fn check_pair<T: Options>(
    checked: &mut Vec<(usize, Setting)>,
    key: &str,
    value: &Value,
    dialect: Dialect,
) -> Result<()> {
    check_pair_in(T::SPECS, T::WHAT, T::refusal, checked, key, value, dialect)
}

fn check_pair_in(
    specs: &'static [OptionSpec],
    what: &'static str,
    refusal: fn(Error) -> Error,
    checked: &mut Vec<(usize, Setting)>,
    key: &str,
    value: &Value,
    dialect: Dialect,
) -> Result<()> {
    let Some(index) = position(specs, key, dialect) else {
        return Err(unknown_key_in(specs, what, key, dialect));
    };
    if *value == Value::Null {
        return Ok(());
    }
    checked.retain(|(i, _)| *i != index);
    checked.push((
        index,
        check(&specs[index], value, dialect).map_err(refusal)?,
    ));
    Ok(())
}

/// Checks one key and value of `T` on their own, as [`configure`] would (unknown key,
/// kind, range, and `T`'s kind of refusal); cross-option rules wait for `configure`.
/// For hosts that set options one call at a time (the C builder).
pub fn check_key<T: Options>(key: &str, value: &Value, dialect: Dialect) -> Result<Setting> {
    let spec = find(T::SPECS, key, dialect).ok_or_else(|| unknown_key::<T>(key, dialect))?;
    check(spec, value, dialect).map_err(T::refusal)
}

/// Settings with nested maps flattened into dotted names (`layout.epoch_ms`), for hosts
/// that read results by name one field at a time.
pub fn flatten(settings: Vec<(String, Value)>) -> Vec<(String, Value)> {
    let mut out = Vec::with_capacity(settings.len());
    for (name, value) in settings {
        match value {
            Value::Map(inner) => out.extend(
                flatten(inner)
                    .into_iter()
                    .map(|(k, v)| (format!("{name}.{k}"), v)),
            ),
            other => out.push((name, other)),
        }
    }
    out
}

fn unknown_key<T: Options>(key: &str, dialect: Dialect) -> Error {
    unknown_key_in(T::SPECS, T::WHAT, key, dialect)
}

fn unknown_key_in(specs: &[OptionSpec], what: &'static str, key: &str, dialect: Dialect) -> Error {
    let allowed: Vec<String> = specs
        .iter()
        .filter(|s| s.accepted_by(dialect))
        .map(|s| s.spelled(dialect.spelling).into_owned())
        .collect();
    let hint = specs
        .iter()
        .filter(|s| s.accepted_by(dialect))
        .find(|s| {
            let plain = |n: &str| n.replace(['_', '-'], "").to_ascii_lowercase();
            plain(s.name) == plain(key)
        })
        .map(|s| format!(" (did you mean {}?)", s.spelled(dialect.spelling)))
        .unwrap_or_default();
    let key_text = match dialect.spelling {
        Spelling::Flag => format!("--{key}"),
        _ => quoted(key).to_string(),
    };
    Error::InvalidArgument {
        name: Cow::Borrowed(what),
        reason: format!(
            "unknown option {key_text}{hint}; allowed: {}",
            allowed.join(", ")
        ),
    }
}

/// The settings of `options` with names as `spelling` writes them (for `--json` output,
/// getters and the shared vectors).
pub fn spelled_settings<T: Options>(options: &T, spelling: Spelling) -> Vec<(String, Value)> {
    options
        .settings()
        .into_iter()
        .map(|(name, value)| {
            let spelled =
                T::SPECS
                    .iter()
                    .find(|s| s.name == name)
                    .map_or(Cow::Borrowed(name), |s| match spelling {
                        Spelling::Flag => Cow::Owned(s.name.replace('_', "-")),
                        _ => s.spelled(spelling),
                    });
            let value = match value {
                // Nested options are layouts (the only nested kind).
                Value::Map(pairs) => Value::Map(
                    pairs
                        .into_iter()
                        .map(|(k, v)| (respell_text(&k, LayoutSpec::SPECS, spelling), v))
                        .collect(),
                ),
                other => other,
            };
            (spelled.into_owned(), value)
        })
        .collect()
}
