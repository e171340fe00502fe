//! Output: a buffered stdout and a small JSON object writer (one object per line).

use crate::error::CliError;
use std::fmt::Write as _;
use std::io::{self, BufWriter, Stdout, Write};

/// Buffered standard output. Write errors (a closed pipe) become [`CliError`]s.
pub struct Out {
    inner: BufWriter<Stdout>,
}

impl Out {
    pub fn new() -> Out {
        Out {
            inner: BufWriter::with_capacity(64 * 1024, io::stdout()),
        }
    }

    /// Writes `line` and a newline.
    pub fn line(&mut self, line: &str) -> Result<(), CliError> {
        self.inner.write_all(line.as_bytes())?;
        self.inner.write_all(b"\n")?;
        Ok(())
    }

    /// Writes a JSON object as one line.
    pub fn json(&mut self, obj: JsonObject) -> Result<(), CliError> {
        self.line(&obj.finish())
    }

    /// Flushes what is buffered (call before a long pause, and at the end).
    pub fn flush(&mut self) -> Result<(), CliError> {
        self.inner.flush()?;
        Ok(())
    }
}

impl Default for Out {
    fn default() -> Self {
        Out::new()
    }
}

/// A JSON object built field by field, in insertion order.
///
/// IDs are 64-bit and JavaScript numbers are exact only up to 2^53, so callers put IDs in
/// as strings; small counts, bits and Unix milliseconds go in as numbers.
#[derive(Debug, Default)]
pub struct JsonObject {
    buf: String,
}

impl JsonObject {
    pub fn new() -> JsonObject {
        JsonObject {
            buf: String::from("{"),
        }
    }

    fn key(&mut self, key: &str) {
        if self.buf.len() > 1 {
            self.buf.push(',');
        }
        escape_into(&mut self.buf, key);
        self.buf.push(':');
    }

    /// A string field.
    pub fn str(mut self, key: &str, value: &str) -> Self {
        self.key(key);
        escape_into(&mut self.buf, value);
        self
    }

    /// An unsigned integer field.
    pub fn u64(mut self, key: &str, value: u64) -> Self {
        self.key(key);
        let _ = write!(self.buf, "{value}");
        self
    }

    /// A number field; non-finite values become `null` (JSON has no NaN or infinity).
    pub fn f64(mut self, key: &str, value: f64) -> Self {
        self.key(key);
        if value.is_finite() {
            let _ = write!(self.buf, "{value}");
        } else {
            self.buf.push_str("null");
        }
        self
    }

    /// A boolean field.
    pub fn bool(mut self, key: &str, value: bool) -> Self {
        self.key(key);
        self.buf.push_str(if value { "true" } else { "false" });
        self
    }

    /// A `null` field.
    pub fn null(mut self, key: &str) -> Self {
        self.key(key);
        self.buf.push_str("null");
        self
    }

    /// A nested object.
    pub fn object(mut self, key: &str, value: JsonObject) -> Self {
        self.key(key);
        self.buf.push_str(&value.finish());
        self
    }

    /// The object's text.
    pub fn finish(mut self) -> String {
        self.buf.push('}');
        self.buf
    }
}

/// Appends `s` as a JSON string literal: quotes, backslashes and every control character
/// are escaped; everything else (including non-ASCII) is copied as UTF-8.
pub fn escape_into(out: &mut String, s: &str) {
    segflake::host::json_string_into(out, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_strings() {
        let mut s = String::new();
        escape_into(&mut s, "a\"b\\c\nd\u{1}e\u{7f}é\u{2028}");
        assert_eq!(s, r#""a\"b\\c\nd\u0001e\u007fé\u2028""#);
    }

    #[test]
    fn builds_objects() {
        let o = JsonObject::new()
            .str("id", "12")
            .u64("n", 3)
            .f64("x", 1.5)
            .f64("nan", f64::NAN)
            .bool("ok", true)
            .null("none")
            .object("inner", JsonObject::new().u64("a", 1));
        assert_eq!(
            o.finish(),
            r#"{"id":"12","n":3,"x":1.5,"nan":null,"ok":true,"none":null,"inner":{"a":1}}"#
        );
        assert_eq!(JsonObject::new().finish(), "{}");
    }
}
