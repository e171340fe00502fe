//! The host layer: every option a binding accepts, described once, set through one
//! generic path; every result readable as (name, value) pairs.
//!
//! A binding converts its host's values (a JS object, Python keyword arguments, C setter
//! calls, command-line flags) into [`Value`]s and calls [`configure`] with the
//! [`Dialect`] of its users. The options type's table ([`Options::SPECS`]) checks each
//! key, kind and range; every refusal names the option as the user spelled it
//! (`maxStep` in JS, `max_step` in Python, C and Rust, `--max-step` on the command line)
//! and says what is allowed. Results go the other way: a [`Record`] lists its
//! [`FieldSpec`]s and its values in the same order, so a binding builds a JS object, a
//! Python object or C getters with one loop.
//!
//! Adding an option is one row in a table here plus its field in the options struct; no
//! binding changes.

use std::borrow::Cow;
use std::fmt;

use crate::error::{Error, Result};
use crate::layout::{DecodedId, FieldOrder, Layout, LayoutSpec, Preset};
use crate::lease::{LeaseOptions, LeaseStats};
use crate::segment::{Allocation, SegmentOptions, SegmentStats, MAX_ID};
use crate::serial::{SerialOptions, SerialParts};
use crate::snowflake::{SequenceStart, SnowflakeOptions, MAX_DRIFT_LIMIT_MS};

/// A value as a host hands it over, or as a record hands it back.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Not given (`undefined`, `null`, `None`): the option keeps its default.
    Null,
    Bool(bool),
    /// Any exact integer (JS bigints and safe numbers, Python ints, C integers).
    Int(i128),
    /// A float, or a JS number that is not a safe integer.
    Float(f64),
    Str(String),
    /// A nested set of options (a JS object, a Python dict).
    Map(Vec<(String, Value)>),
    /// A sequence (a JS array, a Python list or tuple), as a registry's `peers` answers.
    List(Vec<Value>),
    /// A host value the core has no use for (a function, a symbol), described for messages
    /// ("a function").
    Opaque(String),
}

impl Value {
    /// An unsigned integer.
    pub fn uint(v: u64) -> Value {
        Value::Int(i128::from(v))
    }

    /// A double: an exact integer when it is whole and within ±(2^53 − 1) (the range where
    /// a double, like a JS number, holds every integer), else a float.
    pub fn from_f64(f: f64) -> Value {
        if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 {
            Value::Int(f as i128)
        } else {
            Value::Float(f)
        }
    }

    /// `v` or [`Value::Null`].
    pub fn opt_uint(v: Option<u64>) -> Value {
        v.map_or(Value::Null, Value::uint)
    }

    /// The value as a `u64`, if it is an integer in range.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        }
    }

    /// A value typed on a command line or in a text file, read as `kind` expects: an
    /// integer, `true`/`false`, else the text itself (so a malformed number is refused
    /// naming the text).
    pub fn from_text(kind: &Kind, text: &str) -> Value {
        match kind {
            Kind::UInt { .. } | Kind::Int { .. } | Kind::Time | Kind::Id => {
                match text.parse::<i128>() {
                    Ok(i) => Value::Int(i),
                    Err(_) => match text.parse::<f64>() {
                        Ok(f) if matches!(kind, Kind::Time | Kind::Id) || !f.is_finite() => {
                            Value::Str(text.into())
                        }
                        Ok(f) => Value::Float(f),
                        Err(_) => Value::Str(text.into()),
                    },
                }
            }
            Kind::Bool => match text {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::Str(text.into()),
            },
            Kind::Choice(_) | Kind::Layout => Value::Str(text.into()),
        }
    }

    /// A value from JSON text: objects as maps (keys in their order), arrays as lists,
    /// integers as [`Value::Int`], other numbers as [`Value::Float`]. Errors say where the
    /// text stopped being JSON.
    pub fn from_json(text: &str) -> std::result::Result<Value, String> {
        let mut r = JsonReader {
            b: text.as_bytes(),
            i: 0,
        };
        let v = r.value(0)?;
        r.ws();
        if r.i != r.b.len() {
            return Err(r.error("text after the value"));
        }
        Ok(v)
    }

    /// The value as JSON text (maps as objects, `Opaque` as a string).
    pub fn to_json(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) if f.is_finite() => format!("{f:?}"),
            Value::Float(_) => "null".into(),
            Value::Str(s) | Value::Opaque(s) => json_string(s),
            Value::Map(pairs) => {
                let body: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| format!("{}: {}", json_string(k), v.to_json()))
                    .collect();
                format!("{{{}}}", body.join(", "))
            }
            Value::List(items) => {
                let body: Vec<String> = items.iter().map(Value::to_json).collect();
                format!("[{}]", body.join(", "))
            }
        }
    }
}

/// Reads JSON for [`Value::from_json`]; nesting deeper than 64 levels is refused.
struct JsonReader<'a> {
    b: &'a [u8],
    i: usize,
}

impl JsonReader<'_> {
    fn error(&self, what: &str) -> String {
        format!("not JSON at byte {}: {what}", self.i)
    }

    fn ws(&mut self) {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.b.get(self.i) == Some(&c);
        self.i += usize::from(hit);
        hit
    }

    fn value(&mut self, depth: u32) -> std::result::Result<Value, String> {
        if depth > 64 {
            return Err(self.error("nested deeper than 64 levels"));
        }
        self.ws();
        match self.b.get(self.i) {
            None => Err(self.error("the text ended")),
            Some(b'{') => {
                self.i += 1;
                let mut pairs = Vec::new();
                self.ws();
                if self.eat(b'}') {
                    return Ok(Value::Map(pairs));
                }
                loop {
                    self.ws();
                    let key = self.string()?;
                    self.ws();
                    if !self.eat(b':') {
                        return Err(self.error("expected ':'"));
                    }
                    pairs.push((key, self.value(depth + 1)?));
                    self.ws();
                    if self.eat(b'}') {
                        return Ok(Value::Map(pairs));
                    }
                    if !self.eat(b',') {
                        return Err(self.error("expected ',' or '}'"));
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.eat(b']') {
                    return Ok(Value::List(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat(b']') {
                        return Ok(Value::List(items));
                    }
                    if !self.eat(b',') {
                        return Err(self.error("expected ',' or ']'"));
                    }
                }
            }
            Some(b'"') => self.string().map(Value::Str),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.i;
                while self
                    .b
                    .get(self.i)
                    .is_some_and(|c| c.is_ascii_digit() || b"+-.eE".contains(c))
                {
                    self.i += 1;
                }
                let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("");
                match text.parse::<i128>() {
                    Ok(i) => Ok(Value::Int(i)),
                    Err(_) => text
                        .parse::<f64>()
                        .map(Value::Float)
                        .map_err(|_| self.error("a malformed number")),
                }
            }
            Some(_) => {
                for (word, v) in [
                    ("true", Value::Bool(true)),
                    ("false", Value::Bool(false)),
                    ("null", Value::Null),
                ] {
                    if self.b[self.i..].starts_with(word.as_bytes()) {
                        self.i += word.len();
                        return Ok(v);
                    }
                }
                Err(self.error("expected a value"))
            }
        }
    }

    fn hex4(&mut self) -> std::result::Result<u32, String> {
        let digits = self
            .b
            .get(self.i..self.i + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.error("a malformed \\u escape"))?;
        self.i += 4;
        Ok(digits)
    }

    fn string(&mut self) -> std::result::Result<String, String> {
        if !self.eat(b'"') {
            return Err(self.error("expected a string"));
        }
        let mut out = String::new();
        loop {
            let start = self.i;
            while self
                .b
                .get(self.i)
                .is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20)
            {
                self.i += 1;
            }
            out.push_str(
                std::str::from_utf8(&self.b[start..self.i]).map_err(|_| self.error("not UTF-8"))?,
            );
            match self.b.get(self.i) {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let e = self.b.get(self.i).copied();
                    self.i += 1;
                    out.push(match e {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            let unit = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&unit)
                                && self.b[self.i..].starts_with(b"\\u")
                            {
                                self.i += 2;
                                let low = self.hex4()?;
                                0x10000 + ((unit - 0xD800) << 10) + low.wrapping_sub(0xDC00)
                            } else {
                                unit
                            };
                            char::from_u32(code).unwrap_or('\u{fffd}')
                        }
                        _ => return Err(self.error("a malformed escape")),
                    });
                }
                _ => return Err(self.error("an unterminated string")),
            }
        }
    }
}

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

/// The largest integer a double (a JS number) holds exactly with its neighbours: 2^53 − 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Describes a value for messages: `the string "x"`, `the number 1.5`, `a function`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("nothing"),
            Value::Bool(b) => write!(f, "the boolean {b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) if x.is_nan() => f.write_str("NaN"),
            Value::Float(x) if x.is_infinite() => {
                f.write_str(if *x > 0.0 { "Infinity" } else { "-Infinity" })
            }
            Value::Float(x) if x.fract() == 0.0 && x.abs() < 1e21 => write!(f, "the number {x:.0}"),
            Value::Float(x) => write!(f, "the number {x}"),
            Value::Str(s) if s.chars().count() > 60 => {
                write!(f, "a string of {} characters", s.chars().count())
            }
            Value::Str(s) => write!(f, "the string {s:?}"),
            Value::Map(_) => f.write_str("an object"),
            Value::List(items) if items.len() == 1 => f.write_str("a list of 1 item"),
            Value::List(items) => write!(f, "a list of {} items", items.len()),
            Value::Opaque(what) => f.write_str(what),
        }
    }
}

/// `s` as a JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    json_string_into(&mut out, s);
    out
}

/// Appends `s` as a JSON string literal: quotes, backslashes and every control character
/// are escaped (also DEL, U+2028 and U+2029, which break JavaScript sources); everything
/// else, non-ASCII included, is copied as UTF-8.
pub fn json_string_into(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '\u{7f}' || c == '\u{2028}' || c == '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
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
    const fn with_flag(self, flag: &'static str) -> OptionSpec {
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
    pub(crate) fn int(self) -> i64 {
        match self {
            Setting::Int(v) => v,
            _ => unreachable!("the table gives this option a signed kind"),
        }
    }
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
    /// names that were set. Errors name options by their snake-case name; [`configure`]
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

fn position(specs: &[OptionSpec], key: &str, dialect: Dialect) -> Option<usize> {
    specs
        .iter()
        .position(|s| s.accepted_by(dialect) && s.key(dialect.spelling) == key)
}

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
        let key = key.as_ref();
        let Some(index) = position(T::SPECS, key, dialect) else {
            return Err(unknown_key::<T>(key, dialect));
        };
        if value == Value::Null {
            continue;
        }
        let spec = &T::SPECS[index];
        checked.retain(|(i, _)| *i != index);
        checked.push((index, check(spec, &value, dialect).map_err(T::refusal)?));
    }
    checked.sort_by_key(|(i, _)| *i);
    let given: Vec<&'static str> = checked.iter().map(|(i, _)| T::SPECS[*i].name).collect();
    for (index, setting) in checked {
        base.apply(T::SPECS[index].name, setting);
    }
    for spec in T::SPECS.iter().filter(|_| require) {
        if spec.default.is_none() && !given.contains(&spec.name) {
            return Err(Error::InvalidArgument {
                name: spec.spelled(dialect.spelling),
                reason: format!("is required; allowed {}", base.allowed(spec)),
            });
        }
    }
    base.finish(&given)
        .map_err(|e| respell(e, T::SPECS, dialect.spelling))?;
    Ok(base)
}

/// Checks one key and value of `T` on their own, as [`configure`] would (unknown key,
/// kind, range, and `T`'s kind of refusal); cross-option rules wait for `configure`.
/// For hosts that set options one call at a time (the C builder).
pub fn check_key<T: Options>(key: &str, value: &Value, dialect: Dialect) -> Result<Setting> {
    let spec = find(T::SPECS, key, dialect).ok_or_else(|| unknown_key::<T>(key, dialect))?;
    check(spec, value, dialect).map_err(T::refusal)
}

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
                    "{name:?} is not an options set; allowed: {}",
                    OPTION_SETS
                        .iter()
                        .map(|s| s.0)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
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
    let allowed: Vec<String> = T::SPECS
        .iter()
        .filter(|s| s.accepted_by(dialect))
        .map(|s| s.spelled(dialect.spelling).into_owned())
        .collect();
    let hint = T::SPECS
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
        _ => format!("{key:?}"),
    };
    Error::InvalidArgument {
        name: Cow::Borrowed(T::WHAT),
        reason: format!(
            "unknown option {key_text}{hint}; allowed: {}",
            allowed.join(", ")
        ),
    }
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
                .ok_or_else(|| refuse(format!("got {s:?}"))),
            other => Err(refuse(format!("got {other}"))),
        },
        Kind::Id => match value {
            Value::Str(s) => crate::codec::parse_decimal(s)
                .map(Setting::UInt)
                .map_err(|e| refuse(format!("got {s:?} ({e})"))),
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
                .map_err(|e| refuse(format!("got {s:?} ({e})"))),
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

/// Replaces every whole-word snake-case option name in `text`.
pub fn respell_text(text: &str, specs: &[OptionSpec], spelling: Spelling) -> String {
    let mut out = text.to_owned();
    let mut names: Vec<&OptionSpec> = specs.iter().filter(|s| s.name.contains('_')).collect();
    names.sort_by_key(|s| std::cmp::Reverse(s.name.len()));
    for spec in names {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let mut result = String::with_capacity(out.len());
        let mut rest = out.as_str();
        while let Some(at) = rest.find(spec.name) {
            let before = rest[..at].chars().next_back();
            let after = rest[at + spec.name.len()..].chars().next();
            result.push_str(&rest[..at]);
            if before.is_some_and(word) || after.is_some_and(word) {
                result.push_str(spec.name);
            } else {
                result.push_str(&spec.spelled(spelling));
            }
            rest = &rest[at + spec.name.len()..];
        }
        result.push_str(rest);
        out = result;
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
        doc,
        flag: None,
    }
}

pub(crate) const fn uint(min: u64, max: u64) -> Kind {
    Kind::UInt { min, max }
}

const PRESET_NAMES: &[&str] = &[
    "twitter",
    "sonyflake",
    "uid-generator",
    "js-safe",
    "twitter-dc",
];
const ORDER_NAMES: &[&str] = &["time-worker-sequence", "time-sequence-worker"];
const SEQUENCE_START_NAMES: &[&str] = &["zero", "random"];
/// The longest wait any option accepts: one hour.
pub const MAX_WAIT_MS: u64 = 3_600_000;

impl LayoutSpec {
    const WHAT: &'static str = "layout";
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
    pub tick: Option<u64>,
    pub timestamp_ms: Option<u64>,
    pub worker_id: Option<u64>,
    pub datacenter_id: Option<u64>,
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

/// Bits of the worker within a datacenter.
fn low_bits(layout: &LayoutSpec) -> u8 {
    layout.worker_bits.saturating_sub(layout.datacenter_bits)
}

/// Everything a snowflake generator is built from: its layout and its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SnowflakeConfig {
    pub layout: LayoutSpec,
    /// `options.worker_id` is the whole worker field; this is the datacenter it was
    /// composed from, when one was given.
    pub options: SnowflakeOptions,
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
            doc: "This generator's worker ID: 0..2^worker_bits of the layout (with \
                  datacenter_id, the worker within that datacenter). No default: two \
                  generators with one worker ID issue the same IDs.",
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

impl Options for SegmentOptions {
    const WHAT: &'static str = "segment options";
    const SPECS: &'static [OptionSpec] = &[
        opt(
            "step",
            "step",
            uint(1, MAX_ID),
            "1000",
            "The step of the first requests, and the floor of the dynamic step (a store that \
             keeps a step per tag, as Leaf's leaf_alloc.step, overrides it for that tag).",
        ),
        opt(
            "max_step",
            "maxStep",
            uint(1, MAX_ID),
            "1000000",
            "The ceiling of the dynamic step (raised to step when only step is given).",
        ),
        opt(
            "dynamic_step",
            "dynamicStep",
            Kind::Bool,
            "true",
            "Leaf's dynamic step: double when a segment lasted under 15 minutes, halve over 30.",
        ),
        opt(
            "prefetch_percent",
            "prefetchPercent",
            uint(0, 100),
            "10",
            "Fetch the next segment once this percentage of the current one is used.",
        ),
        opt(
            "retry_backoff_ms",
            "retryBackoffMs",
            uint(0, MAX_WAIT_MS),
            "1000",
            "After a failed fetch, retry a prefetch no sooner than this while IDs remain.",
        ),
        opt(
            "wait_timeout_ms",
            "waitTimeoutMs",
            uint(1, MAX_WAIT_MS),
            "1000",
            "How long a caller waits for a segment before SegmentsExhausted.",
        ),
        opt(
            "store_timeout_ms",
            "storeTimeoutMs",
            uint(1, MAX_WAIT_MS),
            "10000",
            "How long one store call may run before it counts as failed (its late answer is \
             discarded, never issued).",
        ),
        OptionSpec {
            name: "fetch_threads",
            camel: "fetchThreads",
            kind: uint(1, 64),
            default: Some("1"),
            threads_only: true,
            flag: None,
            doc: "Background threads calling the store; with more than one, different tags \
                  are fetched concurrently.",
        },
    ];
    fn defaults() -> Self {
        SegmentOptions::default()
    }
    fn apply(&mut self, name: &str, v: Setting) {
        match name {
            "step" => self.step = v.uint(),
            "max_step" => self.max_step = v.uint(),
            "dynamic_step" => self.dynamic_step = v.boolean(),
            "prefetch_percent" => self.prefetch_percent = v.uint() as u8,
            "retry_backoff_ms" => self.retry_backoff_ms = v.uint(),
            "wait_timeout_ms" => self.wait_timeout_ms = v.uint(),
            "store_timeout_ms" => self.store_timeout_ms = v.uint(),
            "fetch_threads" => self.fetch_threads = v.uint() as usize,
            _ => {}
        }
    }
    fn finish(&mut self, given: &[&'static str]) -> Result<()> {
        if given.contains(&"step") && !given.contains(&"max_step") {
            self.max_step = self.max_step.max(self.step);
        }
        self.validate()
    }
    fn settings(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("step", Value::uint(self.step)),
            ("max_step", Value::uint(self.max_step)),
            ("dynamic_step", Value::Bool(self.dynamic_step)),
            (
                "prefetch_percent",
                Value::uint(self.prefetch_percent.into()),
            ),
            ("retry_backoff_ms", Value::uint(self.retry_backoff_ms)),
            ("wait_timeout_ms", Value::uint(self.wait_timeout_ms)),
            ("store_timeout_ms", Value::uint(self.store_timeout_ms)),
            ("fetch_threads", Value::uint(self.fetch_threads as u64)),
        ]
    }
}

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
            Error::invalid_argument("options set", format!("{other:?} has no settings"))
        })),
    }
}

/// A store's answer read from a host value: a map with `max_id` (JS: `maxId`) and `step`,
/// non-negative integers, and optionally `tag_step` (JS: `tagStep`), the step the store
/// keeps for the tag. `null`/`None` says the store has no such tag
/// ([`Error::UnknownTag`]). Anything else is refused with
/// [`Error::StoreContractViolation`] saying what the store returned and what is expected;
/// the engine then checks the range itself ([`crate::SegmentEngine::complete_fetch`]).
pub fn allocation_of(tag: &str, answer: &Value, spelling: Spelling) -> Result<Allocation> {
    let camel = spelling == Spelling::Camel;
    let (max_id_key, tag_step_key) = if camel {
        ("maxId", "tagStep")
    } else {
        ("max_id", "tag_step")
    };
    let expected = format!(
        "expected {{ {max_id_key}, step }} (and optionally {tag_step_key}, or delta and \
         remainder) with non-negative integers, or {} for a tag the store does not have",
        if camel { "null" } else { "None" }
    );
    let refuse = |what: String| Error::StoreContractViolation {
        tag: tag.to_owned(),
        reason: format!("the store returned {what}; {expected}"),
    };
    let pairs = match answer {
        Value::Map(pairs) => pairs,
        Value::Null => {
            return Err(Error::UnknownTag {
                tag: tag.to_owned(),
            })
        }
        other => return Err(refuse(other.to_string())),
    };
    let get = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .unwrap_or(&Value::Null)
    };
    let read = |key: &str| match get(key) {
        Value::Int(i) => u64::try_from(*i).map_err(|_| refuse(format!("{key} = {i}"))),
        Value::Null => Err(refuse(format!("an answer without {key}"))),
        other => Err(refuse(format!("{key} = {other}"))),
    };
    let mut allocation = Allocation::new(read(max_id_key)?, read("step")?);
    if !matches!(get(tag_step_key), Value::Null) {
        allocation = allocation.with_tag_step(read(tag_step_key)?);
    }
    if !matches!((get("delta"), get("remainder")), (Value::Null, Value::Null)) {
        allocation = allocation.with_residue(read("delta")?, read("remainder")?);
    }
    Ok(allocation)
}

/// The failure recorded when a store call outlives `store_timeout_ms`.
pub fn store_timeout_message(tag: &str, step: u64, timeout_ms: u64, spelling: Spelling) -> String {
    let option = SegmentOptions::SPECS
        .iter()
        .find(|s| s.name == "store_timeout_ms")
        .map_or(Cow::Borrowed("store_timeout_ms"), |s| s.spelled(spelling));
    format!("the store did not answer allocate({tag:?}, {step}) within {timeout_ms} ms ({option})")
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

/// The failure recorded when a store call fails; `error` is the host's text of its error.
pub fn store_failed_message(error: &str) -> String {
    format!("the store failed: {error}")
}

/// How a record field reads in each host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// An ID or a position among IDs: `bigint` in JS, `int` in Python, `uint64_t` in C.
    Id,
    /// A count, a duration or a small number: `number` in JS, `int` in Python, `uint64_t`
    /// in C.
    Count,
    /// A rate or a ratio: `number`, `float`, `double`.
    Float,
    Bool,
    Text,
}

/// One field of a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FieldSpec {
    pub name: &'static str,
    pub camel: &'static str,
    pub kind: FieldKind,
    /// May be absent (`undefined`/`None`/a getter returning "not set").
    pub optional: bool,
    pub doc: &'static str,
}

pub(crate) const fn field(
    name: &'static str,
    camel: &'static str,
    kind: FieldKind,
    doc: &'static str,
) -> FieldSpec {
    FieldSpec {
        name,
        camel,
        kind,
        optional: false,
        doc,
    }
}

pub(crate) const fn optional(
    name: &'static str,
    camel: &'static str,
    kind: FieldKind,
    doc: &'static str,
) -> FieldSpec {
    FieldSpec {
        name,
        camel,
        kind,
        optional: true,
        doc,
    }
}

/// A result type readable as (name, value) pairs.
pub trait Record {
    /// What the record is, for docs (`"SegmentStats"`).
    const NAME: &'static str;
    const FIELDS: &'static [FieldSpec];
    /// The values, in the order of [`Record::FIELDS`]; `Value::Null` for an absent optional.
    fn values(&self) -> Vec<Value>;
}

/// The value of the field named `name` (snake or camel case).
pub fn record_value<R: Record>(record: &R, name: &str) -> Option<Value> {
    let index = R::FIELDS
        .iter()
        .position(|f| f.name == name || f.camel == name)?;
    record.values().into_iter().nth(index)
}

impl Record for SegmentStats {
    const NAME: &'static str = "SegmentStats";
    const FIELDS: &'static [FieldSpec] = &[
        field("tag", "tag", FieldKind::Text, "The business tag."),
        field(
            "current_start",
            "currentStart",
            FieldKind::Id,
            "The current segment's first ID (equal to current_end when there is none yet).",
        ),
        field(
            "current_end",
            "currentEnd",
            FieldKind::Id,
            "The current segment's end (exclusive).",
        ),
        field(
            "position",
            "position",
            FieldKind::Id,
            "The next ID the current segment would issue.",
        ),
        field(
            "remaining",
            "remaining",
            FieldKind::Count,
            "IDs left in the current segment.",
        ),
        field(
            "next_ready",
            "nextReady",
            FieldKind::Bool,
            "Whether the next segment is ready.",
        ),
        field(
            "next_start",
            "nextStart",
            FieldKind::Id,
            "The next segment's first ID (0 when not ready).",
        ),
        field(
            "next_end",
            "nextEnd",
            FieldKind::Id,
            "The next segment's end (0 when not ready).",
        ),
        field(
            "step",
            "step",
            FieldKind::Count,
            "The step of the fetch in flight, or of the last request.",
        ),
        field(
            "fetch_in_flight",
            "fetchInFlight",
            FieldKind::Bool,
            "Whether a store call is running.",
        ),
        field(
            "fetches",
            "fetches",
            FieldKind::Count,
            "Completed fetches, successful or not.",
        ),
        field("failures", "failures", FieldKind::Count, "Failed fetches."),
        field(
            "consecutive_failures",
            "consecutiveFailures",
            FieldKind::Count,
            "Failed fetches in a row.",
        ),
        optional(
            "last_error",
            "lastError",
            FieldKind::Text,
            "The last failure (store error or refused range).",
        ),
        optional(
            "last_fetch_latency_ms",
            "lastFetchLatencyMs",
            FieldKind::Count,
            "How long the last completed fetch took, in milliseconds.",
        ),
        field(
            "issued",
            "issued",
            FieldKind::Count,
            "IDs taken from this tag's segments so far.",
        ),
        field(
            "ids_per_second",
            "idsPerSecond",
            FieldKind::Float,
            "Recent consumption rate.",
        ),
        optional(
            "runway_seconds",
            "runwaySeconds",
            FieldKind::Float,
            "Seconds the buffered IDs would last at ids_per_second if the store went down \
                  now; absent when nothing is being consumed.",
        ),
    ];
    fn values(&self) -> Vec<Value> {
        vec![
            Value::Str(self.tag.clone()),
            Value::uint(self.current_start),
            Value::uint(self.current_end),
            Value::uint(self.position),
            Value::uint(self.remaining),
            Value::Bool(self.next_ready),
            Value::uint(self.next_start),
            Value::uint(self.next_end),
            Value::uint(self.step),
            Value::Bool(self.fetch_in_flight),
            Value::uint(self.fetches),
            Value::uint(self.failures),
            Value::uint(self.consecutive_failures),
            self.last_error.clone().map_or(Value::Null, Value::Str),
            Value::opt_uint(self.last_fetch_latency_ms),
            Value::uint(self.issued),
            Value::Float(self.ids_per_second),
            self.runway_seconds.map_or(Value::Null, Value::Float),
        ]
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

/// The record types by name, for hosts that build result objects at run time.
pub const RECORDS: &[(&str, &[FieldSpec])] = &[
    (SegmentStats::NAME, SegmentStats::FIELDS),
    (DecodedId::NAME, DecodedId::FIELDS),
    (SerialParts::NAME, SerialParts::FIELDS),
    (Layout::NAME, Layout::FIELDS),
    (LeaseStats::NAME, LeaseStats::FIELDS),
];

/// A leased generator's options from one set of host pairs: the snowflake options except
/// `worker_id` (the registry assigns it; `preferred_worker_id` is a lease option) and the
/// lease options. Returns the configuration (worker ID 0), its layout built at `now_ms`,
/// and the lease options.
pub fn configure_leased<K: AsRef<str>>(
    pairs: impl IntoIterator<Item = (K, Value)>,
    dialect: Dialect,
    now_ms: u64,
) -> Result<(SnowflakeConfig, Layout, LeaseOptions)> {
    let mut lease_pairs = Vec::new();
    let mut snowflake_pairs = Vec::new();
    for (key, value) in pairs {
        let key = key.as_ref();
        if find(LeaseOptions::SPECS, key, dialect).is_some() {
            lease_pairs.push((key.to_owned(), value));
        } else if find(&SnowflakeConfig::SPECS[..2], key, dialect).is_some() {
            let preferred = &LeaseOptions::SPECS[2];
            return Err(Error::invalid_argument(
                key.to_owned(),
                format!(
                    "a leased generator's worker ID (the whole worker field, datacenter bits \
                     included) is claimed from the registry; to try one first, give {}",
                    preferred.spelled(dialect.spelling)
                ),
            ));
        } else {
            snowflake_pairs.push((key.to_owned(), value));
        }
    }
    let lease: LeaseOptions = configure(lease_pairs, dialect)?;
    let config = configure_onto(SnowflakeConfig::defaults(), snowflake_pairs, dialect)?;
    let layout = config.build_at(now_ms, dialect.spelling)?;
    if let Some(p) = lease.preferred_worker_id {
        layout.check_worker(p)?;
    }
    Ok((config, layout, lease))
}

/// The option and record tables as JSON, for generated or checked type declarations:
/// `{"options": {"segment": [{"name", "camel", "type", "allowed", "default", "threads_only", "doc"}...]},
///   "records": {"SegmentStats": [{"name", "camel", "kind", "optional", "doc"}...]}}`.
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
    let mut registries: Vec<(&str, Vec<String>)> = Vec::new();
    for (registry, call, text) in crate::lease::schema::STATEMENTS {
        let row = format!("{}: {}", json_string(call), json_string(text));
        match registries.iter_mut().find(|(r, _)| r == registry) {
            Some((_, rows)) => rows.push(row),
            None => registries.push((registry, vec![row])),
        }
    }
    let registries: Vec<String> = registries
        .iter()
        .map(|(r, rows)| format!("{}: {{{}}}", json_string(r), rows.join(", ")))
        .collect();
    format!(
        "{{\"options\": {{{}}}, \"records\": {{{}}}, \"registries\": {{{}}}}}",
        options.join(", "),
        records.join(", "),
        registries.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, Value)]) -> Vec<(String, Value)> {
        p.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn refusals_name_the_option_as_the_user_spelled_it() {
        let e = configure::<SegmentOptions, _>(
            pairs(&[("step", Value::Int(9)), ("maxStep", Value::Int(5))]),
            Dialect::JS,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid step: 9 is out of range; allowed 1..=5 (maxStep)"
        );
        let e =
            configure::<SegmentOptions, _>(pairs(&[("max_step", Value::Int(0))]), Dialect::PYTHON)
                .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid max_step: got 0; allowed integers 1..=9223372036854775807"
        );
        let e = configure::<SegmentOptions, _>(pairs(&[("max-step", Value::Int(0))]), Dialect::CLI)
            .unwrap_err();
        assert!(
            e.to_string().starts_with("invalid --max-step: got 0;"),
            "{e}"
        );
    }

    #[test]
    fn unknown_keys_list_the_allowed_ones_and_suggest_a_spelling() {
        let e = configure::<SegmentOptions, _>(pairs(&[("max_step", Value::Int(5))]), Dialect::JS)
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("unknown option \"max_step\" (did you mean maxStep?)"),
            "{text}"
        );
        assert!(
            !text.contains("fetchThreads"),
            "JS has no fetch threads: {text}"
        );
        let e = configure::<SegmentOptions, _>(
            pairs(&[("fetch_threads", Value::Int(2))]),
            Dialect::PYTHON_ASYNC,
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown option \"fetch_threads\""));
    }

    #[test]
    fn kinds_are_checked_before_ranges() {
        let spec = &SegmentOptions::SPECS[0];
        for (v, why) in [
            (Value::Float(1.5), "got the number 1.5, not an integer"),
            (Value::Str("5".into()), "got the string \"5\""),
            (Value::Bool(true), "got the boolean true"),
            (Value::Opaque("a function".into()), "got a function"),
            (Value::Int(-1), "got -1"),
        ] {
            let e = check(spec, &v, Dialect::PYTHON).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("invalid step: {why}; allowed integers 1..=9223372036854775807")
            );
        }
    }

    #[test]
    fn null_keeps_the_default_and_step_alone_raises_max_step() {
        let o: SegmentOptions = configure(
            pairs(&[
                ("step", Value::Int(2_000_000)),
                ("dynamic_step", Value::Null),
            ]),
            Dialect::PYTHON,
        )
        .unwrap();
        assert_eq!(
            (o.step, o.max_step, o.dynamic_step),
            (2_000_000, 2_000_000, true)
        );
    }

    /// hutool's `Snowflake(workerId = 5, dataCenterId = 1)` as options: the generator's
    /// worker field is 1 << 5 | 5; a datacenter needs a layout with a datacenter field.
    #[test]
    fn datacenter_and_worker_make_the_worker_field() {
        let c: SnowflakeConfig = configure(
            pairs(&[
                ("datacenterId", Value::Int(1)),
                ("workerId", Value::Int(5)),
                ("layout", Value::Str("twitter-dc".into())),
            ]),
            Dialect::JS,
        )
        .unwrap();
        assert_eq!((c.options.worker_id, c.datacenter_id), (37, Some(1)));
        let settings = spelled_settings(&c, Spelling::Camel);
        assert_eq!(settings[0], ("workerId".into(), Value::uint(5)));
        assert_eq!(settings[1], ("datacenterId".into(), Value::uint(1)));
        let refused = |items: &[(&str, Value)]| {
            configure::<SnowflakeConfig, _>(pairs(items), Dialect::JS)
                .unwrap_err()
                .to_string()
        };
        let e = refused(&[("datacenterId", Value::Int(1)), ("workerId", Value::Int(5))]);
        assert!(
            e.contains("datacenterId") && e.contains("no datacenter field"),
            "{e}"
        );
        let e = refused(&[
            ("layout", Value::Str("twitter-dc".into())),
            ("datacenterId", Value::Int(32)),
            ("workerId", Value::Int(5)),
        ]);
        assert!(e.contains("datacenterId") && e.contains("0..=31"), "{e}");
        let e = refused(&[
            ("layout", Value::Str("twitter-dc".into())),
            ("datacenterId", Value::Int(0)),
            ("workerId", Value::Int(32)),
        ]);
        assert!(e.contains("workerId") && e.contains("0..=31"), "{e}");
    }

    #[test]
    fn layouts_come_from_presets_or_maps_in_any_key_order() {
        let c: SnowflakeConfig = configure(
            pairs(&[
                ("workerId", Value::Int(3)),
                (
                    "layout",
                    Value::Map(pairs(&[
                        ("workerBits", Value::Int(16)),
                        ("preset", Value::Str("sonyflake".into())),
                    ])),
                ),
                ("epochMs", Value::Str("2025-01-01".into())),
            ]),
            Dialect::JS,
        )
        .unwrap();
        assert_eq!(c.layout.worker_bits, 16);
        assert_eq!(c.layout.tick_ms, 10);
        assert_eq!(c.layout.epoch_ms, 1_735_689_600_000);
        let e = configure::<SnowflakeConfig, _>(
            pairs(&[("layout", Value::Str("leaf".into()))]),
            Dialect::JS,
        )
        .unwrap_err();
        assert!(e.to_string().contains("\"leaf\" is not a preset"), "{e}");
        let e = configure::<SnowflakeConfig, _>(pairs(&[]), Dialect::JS).unwrap_err();
        assert!(
            e.to_string().starts_with("invalid workerId: is required"),
            "{e}"
        );
    }

    #[test]
    fn cross_field_layout_errors_are_respelled() {
        let c: SnowflakeConfig = configure(
            pairs(&[
                ("workerId", Value::Int(0)),
                (
                    "layout",
                    Value::Map(pairs(&[
                        ("timeBits", Value::Int(50)),
                        ("workerBits", Value::Int(10)),
                    ])),
                ),
            ]),
            Dialect::JS,
        )
        .unwrap();
        let e = c.build_at(1_800_000_000_000, Spelling::Camel).unwrap_err();
        assert!(
            e.to_string()
                .contains("timeBits + workerBits + sequenceBits = 50+10+12"),
            "{e}"
        );
    }

    #[test]
    fn records_list_one_value_per_field() {
        let layout = Layout::preset(Preset::Twitter).unwrap();
        assert_eq!(layout.values().len(), Layout::FIELDS.len());
        assert_eq!(
            record_value(&layout, "maxWorkerId"),
            Some(Value::uint(1023))
        );
        let d = layout.decode(1 << 22).unwrap();
        assert_eq!(d.values().len(), DecodedId::FIELDS.len());
        let json = tables_json();
        assert!(json.contains("\"storeTimeoutMs\""));
    }
}
