//! `segflake serial`: date-prefixed serial numbers.

use crate::cli::SerialArgs;
use crate::error::CliError;
use crate::output::{JsonObject, Out};
use segflake::datetime::format_iso8601_ms;
use segflake::serial::counter;
use segflake::{Clock, ErrorKind, SerialGenerator, SerialOptions, SystemClock};

pub const HELP: &str = "\
segflake serial: date-prefixed serial numbers (order numbers)

Usage:
  segflake serial [options]

A serial is yyMMddHHmmss, then the worker digits, then the sequence digits, as one
decimal number: 250413120000 + 0001 -> 2504131200000001. The sequence counts from 1
in each second; when a second's numbers run out, the command waits for the next second.
Serials never decrease, even when the clock steps back; --last continues above a
persisted value.

Options:
  --count N               how many serials, 1..=16777216 (default 1), one per line
  --sequence-digits S     sequence digits, 1..=7 (default 4: 9999 per second)
  --worker N              this machine's number (default 0), printed in --worker-digits
  --worker-digits W       worker digits, 0..=6 (default 0; worker + sequence digits <= 7)
  --utc-offset OFFSET     print local time at a fixed offset: +08:00, -05:30, or minutes
                          (default UTC)
  --last SERIAL           a persisted last serial: print only serials above it
  --counter URL           count in a shared Redis counter, redis[s]://HOST[:PORT][/DB]: hosts
                          with the same digits, offset and window never print the same
                          serial (docs/serials.md)
  --counter-prefix P      the counter's key prefix (default segflake): keys are
                          P:serial:<yyMMddHHmmss><worker digits>
  --counter-max-behind-ms MS
                          the counter refuses a second that ended more than MS before
                          Redis's clock (CLOCK_SKEW), and keeps each second's key that
                          long; the same on every host (default 60000)
  --counter-max-ahead-ms MS
                          the counter refuses a second starting more than MS after
                          Redis's clock (default 60000)
  --counter-timeout-ms MS each counter call's connect, read and write timeout (default 5000)
  --json                  one JSON object per serial: serial, date, worker, sequence, time
  --help                  this help
";

/// `+08:00`, `-05:30`, `+0800`, `Z`/`UTC`, or a number of minutes.
fn parse_offset(text: &str) -> Option<i32> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("z") || t.eq_ignore_ascii_case("utc") {
        return Some(0);
    }
    if !t.starts_with('+') {
        if let Ok(m) = t.parse::<i32>() {
            return Some(m);
        }
    }
    let (sign, rest) = match t.as_bytes().first()? {
        b'+' => (1, &t[1..]),
        b'-' => (-1, &t[1..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) || rest.len() > 5 {
        return None;
    }
    let h: i32 = digits[..2].parse().ok()?;
    let m: i32 = digits[2..].parse().ok()?;
    (m < 60).then_some(sign * (h * 60 + m))
}

pub fn run(args: SerialArgs) -> Result<(), CliError> {
    let json = args.json;
    let count = args.count.unwrap_or(1);
    let mut pairs = args.serial.pairs;
    if let Some(text) = args.utc_offset {
        let minutes = parse_offset(&text).ok_or_else(|| {
            CliError::usage_for(
                "serial",
                format!(
                    "--utc-offset {text:?} is not valid; allowed: +HH:MM, -HH:MM, Z, or minutes"
                ),
            )
        })?;
        pairs.push((
            "utc-offset-minutes".into(),
            segflake::Value::Int(minutes.into()),
        ));
    }
    let options: SerialOptions = segflake::configure(pairs, segflake::Dialect::CLI)?;
    let generator = SerialGenerator::new(options)?;
    let prefix = args
        .counter_prefix
        .clone()
        .unwrap_or_else(|| counter::DEFAULT_PREFIX.to_string());
    let counter =
        match args.counter {
            Some(url) => Some(crate::backends::open_counter(
                &url,
                options.counter_timeout_ms,
                &prefix,
            )?),
            None if args.counter_prefix.is_some() => return Err(CliError::usage_for(
                "serial",
                "--counter-prefix names the keys of --counter; give --counter redis://HOST:PORT/DB",
            )),
            None => None,
        };
    let next = || match &counter {
        None => generator.next(),
        Some(counter) => counter.next(&generator),
    };
    let mut out = Out::new();
    for _ in 0..count {
        let serial = next_waiting(&next)?;
        if json {
            let p = generator.decode(serial)?;
            out.json(
                JsonObject::new()
                    .str("serial", &serial.to_string())
                    .str("date", &format!("{:012}", p.date))
                    .u64("worker", p.worker_id)
                    .u64("sequence", p.sequence)
                    .str("time", &format_iso8601_ms(p.unix_seconds * 1000)),
            )?;
        } else {
            out.line(&serial.to_string())?;
        }
    }
    out.flush()
}

/// The next serial; when a second's sequence numbers are used up, waits for the next
/// second (up to 5 s, in case the clock stepped back).
fn next_waiting(next: &impl Fn() -> segflake::Result<u64>) -> Result<u64, CliError> {
    let clock = SystemClock;
    let give_up = clock.now_ms() + 5000;
    loop {
        match next() {
            Err(e) if e.kind() == ErrorKind::SerialExhausted && clock.now_ms() < give_up => {
                let next_second = (clock.now_ms() / 1000 + 1) * 1000;
                clock.wait_until_ms(next_second)?;
            }
            other => return Ok(other?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_offset;

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("+08:00"), Some(480));
        assert_eq!(parse_offset("-05:30"), Some(-330));
        assert_eq!(parse_offset("+0545"), Some(345));
        assert_eq!(parse_offset("Z"), Some(0));
        assert_eq!(parse_offset("-120"), Some(-120));
        assert_eq!(parse_offset("+8"), None);
        assert_eq!(parse_offset("+08:75"), None);
        assert_eq!(parse_offset("08:00"), None);
    }
}
