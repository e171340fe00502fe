//! Reading IDs given on the command line in any text form, and the `--format` options.

use crate::error::CliError;
use segflake::Format;
use std::io::BufRead;

/// How an input ID is read: one format, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    Auto,
    Exact(Format),
}

/// An input format by name (`auto` when not given).
pub fn input_format(name: Option<&str>) -> Result<InputFormat, CliError> {
    Ok(match name {
        None | Some("auto") => InputFormat::Auto,
        Some(name) => InputFormat::Exact(Format::from_name(name)?),
    })
}

/// An output format by name, `default` when not given.
pub fn output_format(name: Option<&str>, default: Format) -> Result<Format, CliError> {
    Ok(match name {
        None => default,
        Some(name) => Format::from_name(name)?,
    })
}

/// Which format `text` is in, by the `auto` rules: 11 characters → base62,
/// 13 → base32, otherwise digits → decimal. A decimal ID never starts with 0, so
/// 11 or 13 digits starting with 0 are base62/base32; 11 or 13 digits starting with
/// another digit could be either, and the caller is asked to say which.
pub fn detect_format(command: &'static str, text: &str) -> Result<Format, CliError> {
    let len = text.chars().count();
    let all_digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let fixed = match len {
        11 => Some(Format::Base62),
        13 => Some(Format::Base32),
        _ => None,
    };
    match (fixed, all_digits) {
        (Some(f), true) if !text.starts_with('0') => Err(CliError::usage_for(
            command,
            format!(
                "{text:?} is ambiguous: {len} digits read as a decimal ID or as a {} ID; \
                 pass --format decimal or --format {}",
                f.name(),
                f.name()
            ),
        )),
        (Some(f), _) => Ok(f),
        (None, true) => Ok(Format::Decimal),
        (None, false) => Err(CliError::runtime(format!(
            "cannot tell the format of {text:?}: decimal IDs are digits only, base62 IDs are \
             exactly 11 characters and base32 IDs exactly 13; pass --format to choose"
        ))),
    }
}

/// Parses `text` as an ID; returns the value and the format it was read in.
pub fn parse_id(
    command: &'static str,
    text: &str,
    format: InputFormat,
) -> Result<(u64, Format), CliError> {
    let text = text.trim();
    let format = match format {
        InputFormat::Auto => detect_format(command, text)?,
        InputFormat::Exact(f) => f,
    };
    Ok((format.parse(text)?, format))
}

/// The IDs to work on: the positional words, or with `-` the non-empty lines of
/// standard input. No ID at all is a usage error of `command`.
pub fn inputs(command: &'static str, positionals: Vec<String>) -> Result<Vec<String>, CliError> {
    if positionals.is_empty() {
        return Err(CliError::usage_for(
            command,
            "no ID given: pass one or more IDs, or - to read them from standard input (one per line)",
        ));
    }
    if positionals != ["-"] {
        if positionals.iter().any(|p| p == "-") {
            return Err(CliError::usage_for(
                command,
                "- (read standard input) cannot be mixed with IDs on the command line",
            ));
        }
        return Ok(positionals);
    }
    let mut out = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let t = line.trim();
        if !t.is_empty() {
            out.push(t.to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_detection() {
        assert_eq!(detect_format("decode", "1234").unwrap(), Format::Decimal);
        assert_eq!(
            detect_format("decode", "1865193265891057664").unwrap(),
            Format::Decimal
        );
        assert_eq!(
            detect_format("decode", "0ABCdef1234").unwrap(),
            Format::Base62
        );
        assert_eq!(
            detect_format("decode", "00000000001").unwrap(),
            Format::Base62
        );
        assert_eq!(
            detect_format("decode", "0000000000001").unwrap(),
            Format::Base32
        );
        assert_eq!(
            detect_format("decode", "1ztm8r6d0000g").unwrap(),
            Format::Base32
        );
        let e = detect_format("decode", "12345678901")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ambiguous") && e.contains("--format base62"),
            "{e}"
        );
        assert!(detect_format("decode", "12-34").is_err());
        assert!(detect_format("decode", "").is_err());
    }
}
