//! Option tables: an option's names in each spelling, its kind and range, and the check of
//! one value against it.

use std::borrow::Cow;

use super::Value;
use crate::error::{quoted, Error, Result};
use crate::layout::{layout_of, LayoutSpec, PRESET_NAMES};

/// A batch size argument: `1..=MAX_BATCH` IDs in one call.
pub const BATCH_SIZE: OptionSpec = OptionSpec::argument(
    "batch size",
    "batch size",
    Kind::UInt {
        min: 1,
        max: crate::MAX_BATCH as u64,
    },
);

/// An ID argument: an integer `0..=2^64-1` or its decimal string.
pub const ID: OptionSpec = OptionSpec::argument("id", "id", Kind::Id);

/// An ID argument named `name`: an integer `0..=2^64-1`, or its decimal string (a malformed
/// string is an [`Error::Parse`], as [`crate::codec::parse_decimal`] refuses it).
pub fn id_of(value: &Value, name: &'static str, dialect: Dialect) -> Result<u64> {
    match value {
        Value::Str(s) => crate::codec::parse_decimal(s),
        other => {
            check(&OptionSpec::argument(name, name, Kind::Id), other, dialect).map(Setting::uint)
        }
    }
}

/// A batch size argument, checked against [`BATCH_SIZE`].
pub fn batch_size_of(value: &Value, dialect: Dialect) -> Result<usize> {
    check(&BATCH_SIZE, value, dialect).map(|s| s.uint() as usize)
}

/// How the users of a binding spell option names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Spelling {
    /// `max_step`: Rust, Python, C.
    Snake,
    /// `maxStep`: JavaScript.
    Camel,
    /// `--max-step`: the command line.
    Flag,
}

/// A binding's users: how they spell options and whether its driver runs threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dialect {
    pub spelling: Spelling,
    /// Whether options that only a threaded driver uses (`fetch_threads`) are accepted.
    pub threads: bool,
}

impl Dialect {
    /// Rust and C: snake case, threaded drivers.
    pub const NATIVE: Dialect = Dialect {
        spelling: Spelling::Snake,
        threads: true,
    };
    /// Python's threaded generators (the async ones use [`Dialect::PYTHON_ASYNC`]).
    pub const PYTHON: Dialect = Dialect::NATIVE;
    /// Python's asyncio generators: snake case, no threads.
    pub const PYTHON_ASYNC: Dialect = Dialect {
        spelling: Spelling::Snake,
        threads: false,
    };
    /// Node and WebAssembly: camel case, promises instead of threads.
    pub const JS: Dialect = Dialect {
        spelling: Spelling::Camel,
        threads: false,
    };
    /// The command line: `--flag-names`, threaded.
    pub const CLI: Dialect = Dialect {
        spelling: Spelling::Flag,
        threads: true,
    };
}

/// What an option holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An integer in `min..=max`.
    UInt {
        min: u64,
        max: u64,
    },
    /// A signed integer in `min..=max`.
    Int {
        min: i64,
        max: i64,
    },
    Bool,
    /// One of these names.
    Choice(&'static [&'static str]),
    /// A point in time: Unix milliseconds, or an ISO-8601 UTC date or time
    /// (`2025-01-01`, `2025-01-01T00:00:00.000Z`).
    Time,
    /// An ID-sized integer `0..=2^64-1`, also given as a decimal string (how IDs above
    /// 2^53 travel in JSON and JS).
    Id,
    /// A layout: a preset name, or a map of layout options (missing fields from `twitter`,
    /// or from the map's own `preset`).
    Layout,
}

impl Kind {
    /// What is allowed, for messages and docs: `1..=1000000`, `true or false`.
    pub fn allowed(&self) -> String {
        match self {
            Kind::UInt { min, max } => format!("integers {min}..={max}"),
            Kind::Int { min, max } => format!("integers {min}..={max}"),
            Kind::Bool => "true or false".into(),
            Kind::Id => "integers 0..=18446744073709551615 or their decimal strings".into(),
            Kind::Choice(names) => format!("one of {}", names.join(", ")),
            Kind::Time => {
                "Unix milliseconds or an ISO-8601 UTC date or time (2025-01-01T00:00:00Z)".into()
            }
            Kind::Layout => format!(
                "a preset name ({}) or an object of layout options",
                PRESET_NAMES.join(", ")
            ),
        }
    }

    /// The type's name in the docs' neutral vocabulary: `integer`, `boolean`, `string`,
    /// `time`, `layout`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Kind::UInt { .. } | Kind::Int { .. } => "integer",
            Kind::Bool => "boolean",
            Kind::Choice(_) => "string",
            Kind::Time => "time",
            Kind::Id => "id",
            Kind::Layout => "layout",
        }
    }
}

/// One option: its names, kind, default and meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSpec {
    /// The snake-case name (`max_step`), also the field of the Rust struct.
    pub name: &'static str,
    /// The camel-case name (`maxStep`).
    pub camel: &'static str,
    pub kind: Kind,
    /// The default as documented (`"1000"`, `"none"`); `None` when the option is required.
    pub default: Option<&'static str>,
    /// Only threaded drivers accept it.
    pub threads_only: bool,
    pub doc: &'static str,
    /// The command-line flag without its dashes when it is not the name in kebab case
    /// (`epoch` for `epoch_ms`).
    pub flag: Option<&'static str>,
}

impl OptionSpec {
    /// The name as users of `spelling` write it.
    pub fn spelled(&self, spelling: Spelling) -> Cow<'static, str> {
        match spelling {
            Spelling::Flag => Cow::Owned(format!("--{}", self.key(spelling))),
            s => self.key(s),
        }
    }

    /// The key as users of `spelling` pass it (a flag without its dashes).
    pub fn key(&self, spelling: Spelling) -> Cow<'static, str> {
        match spelling {
            Spelling::Snake => Cow::Borrowed(self.name),
            Spelling::Camel => Cow::Borrowed(self.camel),
            Spelling::Flag => match self.flag {
                Some(flag) => Cow::Borrowed(flag),
                None => Cow::Owned(self.name.replace('_', "-")),
            },
        }
    }

    /// A plain argument of a method (not an option of a table), checked by [`check`]:
    /// `OptionSpec::argument("count", "count", Kind::UInt { min: 1, max: 10 })`.
    pub const fn argument(name: &'static str, camel: &'static str, kind: Kind) -> OptionSpec {
        OptionSpec {
            name,
            camel,
            kind,
            default: None,
            threads_only: false,
            doc: "",
            flag: None,
        }
    }

    /// The same option under another command-line flag.
    pub(crate) const fn with_flag(self, flag: &'static str) -> OptionSpec {
        OptionSpec {
            flag: Some(flag),
            ..self
        }
    }

    /// Whether users of `dialect` can set it.
    pub fn accepted_by(&self, dialect: Dialect) -> bool {
        dialect.threads || !self.threads_only
    }
}

/// A checked option value, as [`Options::apply`] receives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setting {
    UInt(u64),
    Int(i64),
    Bool(bool),
    Choice(&'static str),
    Layout(LayoutSpec),
}

impl Setting {
    pub(crate) fn uint(self) -> u64 {
        match self {
            Setting::UInt(v) => v,
            _ => unreachable!("the table gives this option an unsigned kind"),
        }
    }
    #[cfg_attr(not(all(feature = "segment", feature = "serial")), allow(dead_code))]
    pub(crate) fn int(self) -> i64 {
        match self {
            Setting::Int(v) => v,
            _ => unreachable!("the table gives this option a signed kind"),
        }
    }
    #[cfg_attr(not(all(feature = "segment", feature = "serial")), allow(dead_code))]
    pub(crate) fn boolean(self) -> bool {
        match self {
            Setting::Bool(v) => v,
            _ => unreachable!("the table gives this option a boolean kind"),
        }
    }
    pub(crate) fn choice(self) -> &'static str {
        match self {
            Setting::Choice(v) => v,
            _ => unreachable!("the table gives this option a choice kind"),
        }
    }
}

/// A set of options described by a table.
pub trait Options: Sized {
    /// What the options configure, for messages (`"segment options"`).
    const WHAT: &'static str;
    /// Every option, in the order they are applied.
    const SPECS: &'static [OptionSpec];
    /// The defaults (only required options left unset).
    fn defaults() -> Self;
    /// Stores one checked value; `name` is the option's snake-case name.
    fn apply(&mut self, name: &str, value: Setting);
    /// Checks across options once all given ones are applied; `given` holds the snake-case
    /// names that were set. Errors name options by their snake-case name; [`configure`](fn@super::configure)
    /// respells them.
    fn finish(&mut self, given: &[&'static str]) -> Result<()>;
    /// The settings as (snake-case name, value), in table order.
    fn settings(&self) -> Vec<(&'static str, Value)>;
    /// What `spec` allows given the options set so far, for the "is required" message
    /// (default: its kind's range).
    fn allowed(&self, spec: &OptionSpec) -> String {
        spec.kind.allowed()
    }
    /// The error for a refused value (default: the [`Error::InvalidArgument`] as checked).
    fn refusal(err: Error) -> Error {
        err
    }
}

/// Looks `key` up as users of `dialect` spell it.
pub fn find<'a>(specs: &'a [OptionSpec], key: &str, dialect: Dialect) -> Option<&'a OptionSpec> {
    position(specs, key, dialect).map(|i| &specs[i])
}

pub(crate) fn position(specs: &[OptionSpec], key: &str, dialect: Dialect) -> Option<usize> {
    specs
        .iter()
        .position(|s| s.accepted_by(dialect) && s.key(dialect.spelling) == key)
}

/// Checks one value against its option's kind and range.
pub fn check(spec: &OptionSpec, value: &Value, dialect: Dialect) -> Result<Setting> {
    let refuse = |why: String| Error::InvalidArgument {
        name: spec.spelled(dialect.spelling),
        reason: format!("{why}; allowed {}", spec.kind.allowed()),
    };
    match spec.kind {
        Kind::UInt { min, max } => {
            let n = integer(value, dialect).map_err(&refuse)?;
            match u64::try_from(n) {
                Ok(v) if (min..=max).contains(&v) => Ok(Setting::UInt(v)),
                _ => Err(refuse(format!("got {n}"))),
            }
        }
        Kind::Int { min, max } => {
            let n = integer(value, dialect).map_err(&refuse)?;
            match i64::try_from(n) {
                Ok(v) if (min..=max).contains(&v) => Ok(Setting::Int(v)),
                _ => Err(refuse(format!("got {n}"))),
            }
        }
        Kind::Bool => match value {
            Value::Bool(b) => Ok(Setting::Bool(*b)),
            other => Err(refuse(format!("got {other}"))),
        },
        Kind::Choice(names) => match value {
            Value::Str(s) => names
                .iter()
                .find(|n| **n == s)
                .map(|n| Setting::Choice(n))
                .ok_or_else(|| refuse(format!("got {s}", s = quoted(s)))),
            other => Err(refuse(format!("got {other}"))),
        },
        Kind::Id => match value {
            Value::Str(s) => crate::codec::parse_decimal(s)
                .map(Setting::UInt)
                .map_err(|e| refuse(format!("got {s} ({e})", s = quoted(s)))),
            other => {
                let n = integer(other, dialect).map_err(&refuse)?;
                u64::try_from(n)
                    .map(Setting::UInt)
                    .map_err(|_| refuse(format!("got {n}")))
            }
        },
        Kind::Time => match value {
            Value::Str(s) => crate::datetime::parse_time_ms(s)
                .map(Setting::UInt)
                .map_err(|e| refuse(format!("got {s} ({e})", s = quoted(s)))),
            other => {
                let n = integer(other, dialect).map_err(&refuse)?;
                u64::try_from(n)
                    .map(Setting::UInt)
                    .map_err(|_| refuse(format!("got {n}, before 1970")))
            }
        },
        Kind::Layout => layout_of(value, dialect)
            .map(Setting::Layout)
            .map_err(|e| match e {
                Error::InvalidArgument { name, reason } if name == LayoutSpec::WHAT => {
                    Error::InvalidArgument {
                        name: spec.spelled(dialect.spelling),
                        reason,
                    }
                }
                other => other,
            }),
    }
}

/// An exact integer, or why the value is not one.
fn integer(value: &Value, dialect: Dialect) -> std::result::Result<i128, String> {
    match value {
        Value::Int(i) => Ok(*i),
        // JS hands over whole numbers as integers up to 2^53 (Value::from_f64).
        Value::Float(f)
            if f.is_finite() && f.fract() == 0.0 && dialect.spelling == Spelling::Camel =>
        {
            Err(format!(
                "got {value}, above 2^53 where numbers lose precision (pass a bigint)"
            ))
        }
        Value::Float(f) if f.is_finite() && f.fract() == 0.0 => {
            Err(format!("got {value}, a float (pass an integer)"))
        }
        Value::Float(_) => Err(format!("got {value}, not an integer")),
        other => Err(format!("got {other}")),
    }
}

/// Rewrites the snake-case option names in an error's message as `spelling` writes them.
pub fn respell(err: Error, specs: &[OptionSpec], spelling: Spelling) -> Error {
    if spelling == Spelling::Snake {
        return err;
    }
    let fix = |text: &str| respell_text(text, specs, spelling);
    match err {
        Error::InvalidArgument { name, reason } => Error::InvalidArgument {
            name: specs
                .iter()
                .find(|s| s.name == name)
                .map(|s| s.spelled(spelling))
                .unwrap_or(name),
            reason: fix(&reason),
        },
        Error::InvalidLayout { reason } => Error::InvalidLayout {
            reason: fix(&reason),
        },
        other => other,
    }
}

/// Replaces every whole-word snake-case option name in `text` (a run of ASCII letters,
/// digits and `_` equal to the name of a spec that has a `_`) with its spelling.
pub fn respell_text(text: &str, specs: &[OptionSpec], spelling: Spelling) -> String {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        // The next run of word characters, or of other characters.
        let in_word = rest.starts_with(word);
        let end = rest
            .find(|c: char| word(c) != in_word)
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at_checked(end).unwrap_or((rest, ""));
        match specs
            .iter()
            .find(|s| in_word && s.name == run && s.name.contains('_'))
        {
            Some(spec) => out.push_str(&spec.spelled(spelling)),
            None => out.push_str(run),
        }
        rest = tail;
    }
    out
}

pub(crate) const fn opt(
    name: &'static str,
    camel: &'static str,
    kind: Kind,
    default: &'static str,
    doc: &'static str,
) -> OptionSpec {
    OptionSpec {
        name,
        camel,
        kind,
        default: Some(default),
        threads_only: false,
        doc: doc_text(doc),
        flag: None,
    }
}

/// An option's or field's description, or `""` without the `docs` feature (the tables'
/// texts are kilobytes a WebAssembly module that never shows them does without).
pub(crate) const fn doc_text(text: &'static str) -> &'static str {
    if cfg!(feature = "docs") {
        text
    } else {
        ""
    }
}

pub(crate) const fn uint(min: u64, max: u64) -> Kind {
    Kind::UInt { min, max }
}

/// The longest wait any option accepts: one hour.
pub const MAX_WAIT_MS: u64 = 3_600_000;
