//! Text forms of IDs.
//!
//! * decimal: the plain number (JSON-safe as a string in JS);
//! * base62: exactly 11 characters from `0-9A-Za-z` (ASCII order);
//! * base32: exactly 13 characters of Crockford's alphabet `0-9A-HJKMNP-TV-Z`.
//!
//! The fixed-width forms are zero-padded, so for any two IDs the byte-wise order of
//! their encodings equals the numeric order. Parsers accept exactly what the encoders
//! produce (base32 also accepts lower case and Crockford's `I`/`L` → 1, `O` → 0) and
//! refuse anything else with the position and character at fault.

use crate::error::{quoted, quoted_char, Error, Result};

/// Length of a base62 ID.
pub const BASE62_LEN: usize = 11;
/// Length of a Crockford base32 ID.
pub const BASE32_LEN: usize = 13;

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BASE32: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// A text form of IDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// Decimal digits (`"1288834974657"`), as `Display` prints IDs.
    Decimal,
    /// Fixed-width base62: 11 characters of `0-9A-Za-z` that sort like the numbers.
    Base62,
    /// Fixed-width Crockford base32: 13 characters that sort like the numbers.
    Base32,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 3] = [Format::Decimal, Format::Base62, Format::Base32];

    /// `"decimal"`, `"base62"` or `"base32"`.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Decimal => "decimal",
            Format::Base62 => "base62",
            Format::Base32 => "base32",
        }
    }

    /// Parses [`name`](Format::name).
    pub fn from_name(name: &str) -> Result<Format> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                Error::invalid_argument(
                    "format",
                    format!(
                        "{name} is not a format; allowed: decimal, base62, base32",
                        name = quoted(name)
                    ),
                )
            })
    }

    /// Encodes `id`.
    #[inline]
    pub fn encode(self, id: u64) -> String {
        match self {
            Format::Decimal => id.to_string(),
            Format::Base62 => encode_base62(id),
            Format::Base32 => encode_base32(id),
        }
    }

    /// Parses text produced by [`encode`](Format::encode).
    pub fn parse(self, text: &str) -> Result<u64> {
        match self {
            Format::Decimal => parse_decimal(text),
            Format::Base62 => parse_base62(text),
            Format::Base32 => parse_base32(text),
        }
    }
}

/// Parses a decimal ID: ASCII digits only, no sign, no spaces, at most `u64::MAX`.
pub fn parse_decimal(text: &str) -> Result<u64> {
    if text.is_empty() {
        return Err(Error::parse(
            "decimal",
            "the text is empty; expected 1 to 20 digits",
        ));
    }
    let mut value: u64 = 0;
    for (i, c) in text.char_indices() {
        let d = c
            .to_digit(10)
            .filter(|_| c.is_ascii_digit())
            .ok_or_else(|| {
                Error::parse(
                    "decimal",
                    format!(
                        "{c} at position {i} is not a digit; expected only 0-9",
                        c = quoted_char(c)
                    ),
                )
            })?;
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d)))
            .ok_or_else(|| {
                Error::parse(
                    "decimal",
                    format!(
                        "{text} is larger than the largest ID, {}",
                        u64::MAX,
                        text = quoted(text)
                    ),
                )
            })?;
    }
    Ok(value)
}

/// Writes the 11-character base62 form of `id` into `out`.
pub fn encode_base62_into(mut id: u64, out: &mut [u8; BASE62_LEN]) {
    for slot in out.iter_mut().rev() {
        *slot = BASE62[(id % 62) as usize];
        id /= 62;
    }
}

/// The 11-character base62 form of `id`.
pub fn encode_base62(id: u64) -> String {
    let mut buf = [0u8; BASE62_LEN];
    encode_base62_into(id, &mut buf);
    buf.iter().map(|&b| b as char).collect()
}

/// Parses an 11-character base62 ID.
pub fn parse_base62(text: &str) -> Result<u64> {
    check_len("base62", text, BASE62_LEN)?;
    let mut value: u128 = 0;
    for (i, c) in text.chars().enumerate() {
        let d = match c {
            '0'..='9' => c as u8 - b'0',
            'A'..='Z' => c as u8 - b'A' + 10,
            'a'..='z' => c as u8 - b'a' + 36,
            _ => {
                return Err(Error::parse(
                    "base62",
                    format!(
                        "{c} at position {i} is not a base62 digit; allowed 0-9, A-Z, a-z",
                        c = quoted_char(c)
                    ),
                ))
            }
        };
        value = value * 62 + u128::from(d);
    }
    u64::try_from(value).map_err(|_| {
        Error::parse(
            "base62",
            format!(
                "{text} is larger than the largest ID, {} ({})",
                u64::MAX,
                encode_base62(u64::MAX),
                text = quoted(text)
            ),
        )
    })
}

/// Writes the 13-character Crockford base32 form of `id` into `out`.
pub fn encode_base32_into(mut id: u64, out: &mut [u8; BASE32_LEN]) {
    for slot in out.iter_mut().rev() {
        *slot = BASE32[(id & 31) as usize];
        id >>= 5;
    }
}

/// The 13-character Crockford base32 form of `id`.
pub fn encode_base32(id: u64) -> String {
    let mut buf = [0u8; BASE32_LEN];
    encode_base32_into(id, &mut buf);
    buf.iter().map(|&b| b as char).collect()
}

/// Parses a 13-character Crockford base32 ID (case-insensitive; `I`/`L` read as 1, `O` as 0).
pub fn parse_base32(text: &str) -> Result<u64> {
    check_len("base32", text, BASE32_LEN)?;
    let mut value: u128 = 0;
    for (i, c) in text.chars().enumerate() {
        let up = c.to_ascii_uppercase();
        let d = match up {
            'O' => 0,
            'I' | 'L' => 1,
            _ => BASE32
                .iter()
                .position(|&b| b as char == up)
                .ok_or_else(|| {
                    Error::parse(
                        "base32",
                        format!(
                            "{c} at position {i} is not a Crockford base32 digit; allowed \
                             0-9 and A-Z except U (I, L, O are read as 1, 1, 0)",
                            c = quoted_char(c)
                        ),
                    )
                })? as u8,
        };
        value = (value << 5) | u128::from(d);
    }
    u64::try_from(value).map_err(|_| {
        Error::parse(
            "base32",
            format!(
                "{text} is larger than the largest ID, {} ({})",
                u64::MAX,
                encode_base32(u64::MAX),
                text = quoted(text)
            ),
        )
    })
}

fn check_len(format: &'static str, text: &str, len: usize) -> Result<()> {
    let n = text.chars().count();
    if n != len {
        return Err(Error::parse(
            format,
            format!(
                "{format} IDs are exactly {len} characters; got {n} in {text}",
                text = quoted(text)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_width_and_order() {
        let ids = [0u64, 1, 61, 62, 1 << 40, (1 << 63) - 1, u64::MAX];
        for w in ids.windows(2) {
            for f in [Format::Base62, Format::Base32] {
                let (a, b) = (f.encode(w[0]), f.encode(w[1]));
                assert!(a < b, "{f:?} {a} {b}");
                assert_eq!(f.parse(&a).unwrap(), w[0]);
            }
        }
        assert_eq!(encode_base62(u64::MAX), "LygHa16AHYF");
        assert_eq!(encode_base32(u64::MAX), "FZZZZZZZZZZZZ");
    }

    #[test]
    fn parse_errors_are_precise() {
        let e = parse_base62("0000000000-").unwrap_err().to_string();
        assert!(e.contains("position 10"), "{e}");
        let e = parse_base62("LygHa16AHYG").unwrap_err().to_string();
        assert!(e.contains("larger than"), "{e}");
        assert!(parse_base32("0000000000U00").is_err());
        assert_eq!(parse_base32("000000000000o").unwrap(), 0);
        assert_eq!(parse_base32("000000000000l").unwrap(), 1);
        assert!(parse_decimal("18446744073709551616").is_err());
        assert!(parse_decimal("-1").is_err());
        assert!(parse_decimal(" 1").is_err());
        assert!(parse_decimal("").is_err());
        assert!(parse_decimal("١").is_err());
    }
}
