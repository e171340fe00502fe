//! Host values: what a binding hands over and what a record hands back, with JSON text in
//! and out.

use std::fmt;

use super::Kind;
use crate::error::quoted;

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
                    Err(_) => match super::float::parse_f64(text) {
                        Some(f) if matches!(kind, Kind::Time | Kind::Id) || !f.is_finite() => {
                            Value::Str(text.into())
                        }
                        Some(f) => Value::Float(f),
                        None => Value::Str(text.into()),
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
            // Without core::fmt's float formatting (see Display); as `{f}` writes it: JSON.
            Value::Float(f) if f.is_finite() => {
                let mut text = String::new();
                let _ = super::float::write_f64(&mut text, *f);
                text
            }
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
                    Err(_) => super::float::parse_f64(text)
                        .map(Value::Float)
                        .ok_or_else(|| self.error("a malformed number")),
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
            // core::fmt's float formatting is ~20 kB in a WebAssembly module: the same text
            // from a small routine (super::float).
            Value::Float(x) if x.fract() == 0.0 && x.abs() < 1e21 => {
                f.write_str("the number ")?;
                super::float::write_whole_f64(f, *x)
            }
            Value::Float(x) => {
                f.write_str("the number ")?;
                super::float::write_f64(f, *x)
            }
            Value::Str(s) if s.chars().count() > 60 => {
                write!(f, "a string of {} characters", s.chars().count())
            }
            Value::Str(s) => write!(f, "the string {s}", s = quoted(s)),
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
