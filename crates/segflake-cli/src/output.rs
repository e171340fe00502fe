//! Output: a buffered stdout and JSON objects (serde_json), one per line.

use crate::error::CliError;
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

/// A JSON object built field by field, in insertion order (serde_json with
/// `preserve_order`).
///
/// IDs are 64-bit and JavaScript numbers are exact only up to 2^53, so callers put IDs in
/// as strings; small counts, bits and Unix milliseconds go in as numbers.
#[derive(Debug, Default)]
pub struct JsonObject {
    map: serde_json::Map<String, serde_json::Value>,
}

impl JsonObject {
    pub fn new() -> JsonObject {
        JsonObject::default()
    }

    fn with(mut self, key: &str, value: serde_json::Value) -> Self {
        self.map.insert(key.to_string(), value);
        self
    }

    /// A string field.
    pub fn str(self, key: &str, value: &str) -> Self {
        self.with(key, value.into())
    }

    /// An unsigned integer field.
    pub fn u64(self, key: &str, value: u64) -> Self {
        self.with(key, value.into())
    }

    /// A number field; non-finite values become `null` (JSON has no NaN or infinity).
    pub fn f64(self, key: &str, value: f64) -> Self {
        self.with(key, value.into())
    }

    /// A boolean field.
    pub fn bool(self, key: &str, value: bool) -> Self {
        self.with(key, value.into())
    }

    /// A `null` field.
    pub fn null(self, key: &str) -> Self {
        self.with(key, serde_json::Value::Null)
    }

    /// A nested object.
    pub fn object(self, key: &str, value: JsonObject) -> Self {
        self.with(key, serde_json::Value::Object(value.map))
    }

    /// A decoded ID's fields: `time`, `timestamp_ms`, `datacenter` (on a layout with a
    /// datacenter field), `worker`, `sequence`, `tick`.
    pub fn decoded(self, d: &segflake::DecodedId) -> Self {
        let mut o = self
            .str(
                "time",
                &segflake::datetime::format_iso8601_ms(d.timestamp_ms),
            )
            .u64("timestamp_ms", d.timestamp_ms);
        if let Some(dc) = d.datacenter_id {
            o = o.u64("datacenter", dc);
        }
        o.u64("worker", d.worker_id)
            .u64("sequence", d.sequence)
            .u64("tick", d.tick)
    }

    /// The object as a JSON value.
    pub fn into_value(self) -> serde_json::Value {
        serde_json::Value::Object(self.map)
    }

    /// The object's text.
    pub fn finish(self) -> String {
        serde_json::Value::Object(self.map).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_objects_in_order_with_escapes_and_no_nan() {
        let o = JsonObject::new()
            .str("id", "12")
            .u64("n", 3)
            .f64("x", 1.5)
            .f64("nan", f64::NAN)
            .bool("ok", true)
            .null("none")
            .str("text", "a\"b\\c\nd\u{1}é")
            .object("inner", JsonObject::new().u64("a", 1));
        assert_eq!(
            o.finish(),
            r#"{"id":"12","n":3,"x":1.5,"nan":null,"ok":true,"none":null,"text":"a\"b\\c\nd\u0001é","inner":{"a":1}}"#
        );
        assert_eq!(JsonObject::new().finish(), "{}");
    }
}
