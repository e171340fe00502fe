//! Minimal UTC calendar arithmetic (proleptic Gregorian), without dependencies.
//!
//! Used to print exhaustion dates, decode IDs to ISO-8601, parse `--epoch 2025-01-01`,
//! and build date-prefixed serials.

use crate::error::{quoted, Error, Result};

/// A broken-down UTC time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilTime {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
    pub millisecond: u32,
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's `days_from_civil`).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Breaks Unix milliseconds into UTC fields.
pub fn civil_from_unix_ms(unix_ms: u64) -> CivilTime {
    let secs = (unix_ms / 1000) as i64;
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400) as u32;
    CivilTime {
        year,
        month,
        day,
        hour: sod / 3600,
        minute: sod / 60 % 60,
        second: sod % 60,
        millisecond: (unix_ms % 1000) as u32,
    }
}

/// `2024-11-20T21:24:16.000Z`.
pub fn format_iso8601_ms(unix_ms: u64) -> String {
    let t = civil_from_unix_ms(unix_ms);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.millisecond
    )
}

/// Parses `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS[.mmm]]Z` (UTC only; `Z` may be omitted,
/// a space may replace `T`), or a plain integer of Unix milliseconds.
pub fn parse_time_ms(text: &str) -> Result<u64> {
    let s = text.trim();
    let bad = |why: &str| {
        Error::invalid_argument(
            "time",
            format!(
                "{text} {why}; expected Unix milliseconds or an ISO-8601 UTC time such as \
                 2025-01-01 or 2025-01-01T00:00:00.000Z",
                text = quoted(text)
            ),
        )
    };
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<u64>().map_err(|_| bad("is too large"));
    }
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<u32> {
        let part = b.get(from..from + len)?;
        if part.iter().all(u8::is_ascii_digit) {
            std::str::from_utf8(part).ok()?.parse().ok()
        } else {
            None
        }
    };
    let year = num(0, 4).ok_or_else(|| bad("has no 4-digit year"))?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return Err(bad("is not YYYY-MM-DD"));
    }
    let month = num(5, 2).ok_or_else(|| bad("has no 2-digit month"))?;
    let day = num(8, 2).ok_or_else(|| bad("has no 2-digit day"))?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(i64::from(year), month) {
        return Err(bad("is not a valid calendar date"));
    }
    let (mut hour, mut minute, mut second, mut milli) = (0, 0, 0, 0);
    let tail = &b[10..];
    if !tail.is_empty() {
        if tail[0] != b'T' && tail[0] != b' ' {
            return Err(bad("has text after the date that is not a time"));
        }
        let t = &tail[1..];
        let n2 = |i: usize| -> Option<u32> {
            let p = t.get(i..i + 2)?;
            if p.iter().all(u8::is_ascii_digit) {
                Some(u32::from(p[0] - b'0') * 10 + u32::from(p[1] - b'0'))
            } else {
                None
            }
        };
        hour = n2(0).ok_or_else(|| bad("has no 2-digit hour"))?;
        if t.get(2) != Some(&b':') {
            return Err(bad("is not HH:MM"));
        }
        minute = n2(3).ok_or_else(|| bad("has no 2-digit minute"))?;
        let mut i = 5;
        if t.get(i) == Some(&b':') {
            second = n2(i + 1).ok_or_else(|| bad("has no 2-digit second"))?;
            i += 3;
            if t.get(i) == Some(&b'.') {
                let digits: Vec<u8> = t[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .copied()
                    .collect();
                if digits.is_empty() || digits.len() > 9 {
                    return Err(bad("has a malformed fraction of a second"));
                }
                let mut ms = 0u32;
                for k in 0..3 {
                    ms = ms * 10 + digits.get(k).map_or(0, |d| u32::from(d - b'0'));
                }
                milli = ms;
                i += 1 + digits.len();
            }
        }
        let zone = &t[i..];
        if !(zone.is_empty() || zone == b"Z" || zone == b"z" || zone == b"+00:00") {
            return Err(bad("has a time zone other than UTC (Z)"));
        }
        if hour > 23 || minute > 59 || second > 59 {
            return Err(bad("has a time of day out of range"));
        }
    }
    let days = days_from_civil(i64::from(year), month, day);
    if days < 0 {
        return Err(bad("is before 1970"));
    }
    let secs =
        days as u64 * 86_400 + u64::from(hour) * 3600 + u64::from(minute) * 60 + u64::from(second);
    Ok(secs * 1000 + u64::from(milli))
}

/// Days in `month` (1..=12) of the proleptic Gregorian `year`.
pub(crate) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_known_dates() {
        assert_eq!(format_iso8601_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_iso8601_ms(1_288_834_974_657),
            "2010-11-04T01:42:54.657Z"
        );
        assert_eq!(parse_time_ms("2016-05-20").unwrap(), 1_463_702_400_000);
        assert_eq!(
            parse_time_ms("2025-01-01T00:00:00Z").unwrap(),
            1_735_689_600_000
        );
        assert_eq!(
            parse_time_ms("2010-11-04T01:42:54.657Z").unwrap(),
            1_288_834_974_657
        );
        assert_eq!(parse_time_ms("1288834974657").unwrap(), 1_288_834_974_657);
        for ms in [0u64, 951_782_400_000, 4_102_444_800_123, 1_732_137_856_000] {
            assert_eq!(parse_time_ms(&format_iso8601_ms(ms)).unwrap(), ms);
        }
    }

    #[test]
    fn rejects_bad_dates() {
        for bad in [
            "",
            "2025-13-01",
            "2025-02-30",
            "2025-01-01T25:00Z",
            "2025-01-01+08:00",
            "x",
        ] {
            assert!(parse_time_ms(bad).is_err(), "{bad}");
        }
        assert!(parse_time_ms("2024-02-29").is_ok());
        assert!(parse_time_ms("2023-02-29").is_err());
    }
}
