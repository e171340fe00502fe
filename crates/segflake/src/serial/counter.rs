//! The shared per-second counter in Redis, written once: the script every language sends,
//! the key it counts in, its expiry rule and the reading of its reply. Adapters only send
//! [`REDIS_SCRIPT`] with [`SerialGenerator::counter_key`] and
//! [`SerialGenerator::counter_args`], and hand the reply to
//! [`SerialGenerator::counter_sequence`].
//!
//! # The danger
//! Host B whose clock is `d` seconds behind host A's counts in a second A counted in `d`
//! seconds ago. If that second's key had expired, `INCR` would restart at 1 and repeat A's
//! serials.
//!
//! # The rule
//! The script reads Redis's own clock (`TIME`, `now`) and, for a second starting at
//! `start` ms:
//! * refuses when `now > start + 1000 + max_behind` (the second ended more than
//!   `counter_max_behind_ms` ago) or `start > now + max_ahead` (it starts more than
//!   `counter_max_ahead_ms` ahead): the reply `[0, 0, now]`, which
//!   [`counter_sequence`](SerialGenerator::counter_sequence) turns into
//!   [`Error::CounterClockSkew`];
//! * else `INCR`s the key and sets its absolute expiry to
//!   `start + 1000 + max_behind + COUNTER_GRACE_MS` (`PEXPIREAT`): the reply
//!   `[1, sequence, now]`.
//!
//! Every `INCR` of a second's key is accepted at a Redis time at or before
//! `start + 1000 + max_behind`, and the key lives past that, so from its first `INCR` to the
//! last one it can ever accept the key is never gone: within one second the counter never
//! restarts, whichever host created the key (a host ahead creates it early, its absolute
//! expiry still covers the hosts behind). A host further behind (or ahead) than the window
//! gets a typed error, never a repeated serial.
//!
//! Conditions (documented in `docs/serials.md`): every generator counting under one key
//! prefix uses the same shape, UTC offset and `counter_max_behind_ms`; Redis keeps the keys
//! for as long as their expiry says (no eviction policy that drops them, no failover to a
//! replica that lacks the last writes).

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::host::Value;

use super::SerialGenerator;

/// KEYS: the second's key. ARGV: the Unix second, `counter_max_behind_ms`,
/// `counter_max_ahead_ms`, [`COUNTER_GRACE_MS`]. Answers `[1, sequence, now_ms]`, or
/// `[0, 0, now_ms]` when the second lies outside the window around Redis's clock.
pub const REDIS_SCRIPT: &str = r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local start = tonumber(ARGV[1]) * 1000
local behind = tonumber(ARGV[2])
if now > start + 1000 + behind or start > now + tonumber(ARGV[3]) then
  return {0, 0, now}
end
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIREAT', KEYS[1], start + 1000 + behind + tonumber(ARGV[4]))
return {1, n, now}
";

/// The adapters' default key prefix: keys read `segflake:serial:<yyMMddHHmmss><worker
/// digits>`.
pub const DEFAULT_PREFIX: &str = "segflake";

/// How much longer than the window a second's key lives: slack for the instant between
/// the script's `TIME` and the expiry Redis applies.
pub const COUNTER_GRACE_MS: u64 = 1000;

impl<C: Clock> SerialGenerator<C> {
    /// The shared counter's key for `unix_seconds`, after the adapter's prefix and a colon:
    /// `serial:` then the serial's leading digits (`yyMMddHHmmss` at this generator's
    /// offset, then its worker digits), so exactly the generators that could issue the same
    /// serial count in the same key.
    ///
    /// Errors: [`Error::InvalidArgument`] outside the years 2000 to 2099.
    pub fn counter_key(&self, unix_seconds: u64) -> Result<String> {
        let leading = self.format(unix_seconds, 0)? / self.seq_scale;
        let width = usize::from(super::DATE_DIGITS + self.options.worker_digits);
        Ok(format!("serial:{leading:0width$}"))
    }

    /// The script's ARGV for `unix_seconds`: the second, `counter_max_behind_ms`,
    /// `counter_max_ahead_ms`, [`COUNTER_GRACE_MS`].
    pub fn counter_args(&self, unix_seconds: u64) -> [u64; 4] {
        let o = &self.options;
        [
            unix_seconds,
            o.counter_max_behind_ms,
            o.counter_max_ahead_ms,
            COUNTER_GRACE_MS,
        ]
    }

    /// The sequence a counter answered for `unix_seconds`: a plain count (a non-negative
    /// integer, as from `INCR`), or [`REDIS_SCRIPT`]'s reply `[status, sequence, now_ms]`.
    ///
    /// Errors: [`Error::CounterClockSkew`] when the script refused the second;
    /// [`Error::Store`] for any other answer.
    pub fn counter_sequence(&self, unix_seconds: u64, reply: &Value) -> Result<u64> {
        let shown = match reply {
            Value::List(_) => reply.to_json(),
            _ => reply.to_string(),
        };
        let bad = || Error::Store {
            message: format!(
                "the counter returned {shown}; expected a non-negative integer (or the serial \
                 script's [status, sequence, now_ms])"
            ),
        };
        match reply {
            Value::Int(_) => reply.as_u64().ok_or_else(bad),
            Value::List(items) => match items.iter().map(Value::as_u64).collect::<Vec<_>>()[..] {
                [Some(1), Some(sequence), Some(_)] => Ok(sequence),
                [Some(0), Some(_), Some(server_ms)] => Err(Error::CounterClockSkew {
                    second: unix_seconds,
                    server_ms,
                    max_behind_ms: self.options.counter_max_behind_ms,
                    max_ahead_ms: self.options.counter_max_ahead_ms,
                }),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    }

    /// Takes a counter's `reply` for `unix_seconds` ([`counter_sequence`] reads it): the
    /// serial, or `None` when it is not above the last one ([`accept`]).
    ///
    /// [`counter_sequence`]: SerialGenerator::counter_sequence
    /// [`accept`]: SerialGenerator::accept
    pub fn accept_reply(&self, unix_seconds: u64, reply: &Value) -> Result<Option<u64>> {
        self.accept(unix_seconds, self.counter_sequence(unix_seconds, reply)?)
    }
}

/// One call of a shared per-second counter: count once in `unix_second` and answer the
/// sequence. Made by [`SerialCount::request`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CounterRequest {
    /// The Unix second to count in.
    pub unix_second: u64,
    /// The second's key, `serial:<yyMMddHHmmss><worker digits>`
    /// ([`SerialGenerator::counter_key`]); adapters put their prefix and a colon before it
    /// (`segflake:serial:…` with [`DEFAULT_PREFIX`]).
    pub key: String,
    /// The ARGV of [`REDIS_SCRIPT`] ([`SerialGenerator::counter_args`]).
    pub args: [u64; 4],
}

/// One serial taken from a shared counter, sans-I/O: the protocol of
/// [`SerialGenerator::next_with`] (which second to count in, asking again while the
/// counter's numbers are not above the last serial, giving up after
/// [`COUNTER_ATTEMPTS`](super::COUNTER_ATTEMPTS) answers, reading the replies, the errors)
/// as a small state machine that a driver runs with its own I/O:
///
/// 1. [`SerialGenerator::begin_count`] starts it;
/// 2. send [`request`](SerialCount::request) to the counter (or count in
///    [`second`](SerialCount::second) your own way);
/// 3. hand the answer to [`accept_reply`](SerialCount::accept_reply) (or a plain number to
///    [`accept`](SerialCount::accept)): `Some(serial)` is issued; `None` means ask again
///    (go to 2; the state moved to the second to count in now); an error ends it. A counter
///    that fails or outlives `counter_timeout_ms` ends it with
///    [`failed`](SerialCount::failed) or [`timed_out`](SerialCount::timed_out).
///
/// ```
/// use segflake::{ManualClock, SerialGenerator, SerialOptions, Value};
///
/// let clock = ManualClock::new(1_744_545_600_000); // 2025-04-13T12:00:00Z
/// let serials = SerialGenerator::with_clock(SerialOptions::default(), clock)?;
/// let mut count = serials.begin_count();
/// let serial = loop {
///     let request = count.request()?;
///     assert_eq!(request.key, "serial:250413120000");
///     let reply = Value::uint(1); // Redis: EVALSHA on request.key with request.args
///     if let Some(serial) = count.accept_reply(&reply)? {
///         break serial;
///     }
/// };
/// assert_eq!(serial, 2504131200000001);
/// # Ok::<(), segflake::Error>(())
/// ```
#[derive(Debug)]
pub struct SerialCount<'a, C: Clock> {
    generator: &'a SerialGenerator<C>,
    /// The second to count in now.
    second: u64,
    /// Answers taken so far that were not above the last serial.
    refused: u32,
}

impl<C: Clock> SerialGenerator<C> {
    /// Starts taking one serial from a shared counter (see [`SerialCount`]): reads the
    /// clock for the second to count in.
    pub fn begin_count(&self) -> SerialCount<'_, C> {
        SerialCount {
            generator: self,
            second: self.counter_second(self.clock.now_ms()),
            refused: 0,
        }
    }
}

impl<C: Clock> SerialCount<'_, C> {
    /// The Unix second the counter should count in now.
    pub fn second(&self) -> u64 {
        self.second
    }

    /// The counter call to make now: the second, its key and the script's arguments.
    ///
    /// Errors: [`Error::InvalidArgument`] outside the years 2000 to 2099.
    pub fn request(&self) -> Result<CounterRequest> {
        Ok(CounterRequest {
            unix_second: self.second,
            key: self.generator.counter_key(self.second)?,
            args: self.generator.counter_args(self.second),
        })
    }

    /// Takes the counter's `sequence` for [`second`](SerialCount::second): `Some(serial)`
    /// (recorded as the last one), or `None` when it was not above the last serial (ask
    /// again, for the second this now names).
    ///
    /// Errors: [`SerialGenerator::counter_gave_up`] after
    /// [`COUNTER_ATTEMPTS`](super::COUNTER_ATTEMPTS) such answers; those of
    /// [`SerialGenerator::accept`].
    pub fn accept(&mut self, sequence: u64) -> Result<Option<u64>> {
        let g = self.generator;
        if let Some(serial) = g.accept(self.second, sequence)? {
            return Ok(Some(serial));
        }
        self.refused += 1;
        if self.refused >= super::COUNTER_ATTEMPTS {
            return Err(g.counter_gave_up());
        }
        self.second = g.counter_second(g.clock.now_ms());
        Ok(None)
    }

    /// Takes the counter's `reply` (a plain count, or [`REDIS_SCRIPT`]'s
    /// `[status, sequence, now_ms]`, read by [`SerialGenerator::counter_sequence`]) as
    /// [`accept`](SerialCount::accept) does.
    ///
    /// Errors: those of [`SerialGenerator::counter_sequence`] and
    /// [`accept`](SerialCount::accept).
    pub fn accept_reply(&mut self, reply: &Value) -> Result<Option<u64>> {
        let sequence = self.generator.counter_sequence(self.second, reply)?;
        self.accept(sequence)
    }

    /// The error for a counter call that failed with `message`: [`Error::Store`].
    pub fn failed(&self, message: &str) -> Error {
        Error::Store {
            message: format!("the counter failed: {message}"),
        }
    }

    /// The error for a counter call that outlived `counter_timeout_ms`: [`Error::Store`]
    /// naming the key and the option.
    pub fn timed_out(&self) -> Error {
        let g = self.generator;
        let key = g
            .counter_key(self.second)
            .unwrap_or_else(|_| format!("second {}", self.second));
        super::counter_timeout_error(
            &key,
            g.options.counter_timeout_ms,
            crate::host::Spelling::Snake,
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::error::ErrorKind;
    use crate::serial::SerialOptions;

    /// [`REDIS_SCRIPT`] in memory, on the server clock the test passes in; keys expire as
    /// `PEXPIREAT` does (gone once the clock is past the expiry). `expiry` computes a key's
    /// expiry from the script's arguments, so a test can show what a shorter one would do.
    struct Counter {
        keys: HashMap<String, (u64, u64)>,
        expiry: fn([u64; 4]) -> u64,
    }

    fn script_expiry(args: [u64; 4]) -> u64 {
        let [second, behind, _, grace] = args;
        second * 1000 + 1000 + behind + grace
    }

    impl Counter {
        fn new(expiry: fn([u64; 4]) -> u64) -> Self {
            Counter {
                keys: HashMap::new(),
                expiry,
            }
        }

        fn run(&mut self, now: u64, key: &str, args: [u64; 4]) -> Value {
            let [second, behind, ahead, _] = args;
            let reply = |status: u64, n: u64| {
                Value::List(vec![Value::uint(status), Value::uint(n), Value::uint(now)])
            };
            self.keys.retain(|_, (_, expires)| *expires >= now);
            let start = second * 1000;
            if now > start + 1000 + behind || start > now + ahead {
                return reply(0, 0);
            }
            let entry = self.keys.entry(key.to_owned()).or_insert((0, 0));
            entry.0 += 1;
            entry.1 = (self.expiry)(args);
            reply(1, entry.0)
        }
    }

    const T0: u64 = 1_744_545_600_000; // 2025-04-13T12:00:00Z

    struct Host {
        clock: Arc<ManualClock>,
        generator: SerialGenerator<Arc<ManualClock>>,
        offset_ms: i64,
    }

    fn host(offset_ms: i64, o: SerialOptions) -> Host {
        let clock = Arc::new(ManualClock::new(T0.saturating_add_signed(offset_ms)));
        let generator = SerialGenerator::with_clock(o, Arc::clone(&clock)).unwrap();
        Host {
            clock,
            generator,
            offset_ms,
        }
    }

    fn window(behind: u64, ahead: u64) -> SerialOptions {
        SerialOptions {
            counter_max_behind_ms: behind,
            counter_max_ahead_ms: ahead,
            ..SerialOptions::default()
        }
    }

    fn issue(counter: &mut Counter, h: &Host, now: u64) -> Result<u64> {
        h.clock.set_ms(now.saturating_add_signed(h.offset_ms));
        let g = &h.generator;
        g.next_with(|second| {
            let key = g.counter_key(second)?;
            g.counter_sequence(second, &counter.run(now, &key, g.counter_args(second)))
        })
    }

    /// Hosts at the window's edges and a clock stepped back mid-run, taking turns for 20
    /// seconds: answers the serials issued and the errors' kinds.
    fn fleet(expiry: fn([u64; 4]) -> u64) -> (Vec<u64>, Vec<ErrorKind>) {
        let o = window(5000, 3000);
        let mut hosts: Vec<Host> = [-5000, -2500, 0, 3000, 0]
            .into_iter()
            .map(|d| host(d, o))
            .collect();
        let mut counter = Counter::new(expiry);
        let (mut serials, mut errors) = (Vec::new(), Vec::new());
        let mut now = T0;
        for step in 0..4000u64 {
            now += 5;
            if step == 2000 {
                hosts[4].offset_ms = -4900; // the clock steps back, within the window
            }
            match issue(&mut counter, &hosts[(step % 5) as usize], now) {
                Ok(s) => serials.push(s),
                Err(e) => errors.push(e.kind()),
            }
        }
        (serials, errors)
    }

    #[test]
    fn hosts_within_the_window_never_repeat_a_serial() {
        let (serials, errors) = fleet(script_expiry);
        assert_eq!(errors, []);
        let unique: HashSet<u64> = serials.iter().copied().collect();
        assert_eq!(unique.len(), serials.len());
        assert_eq!(serials.len(), 4000);
    }

    #[test]
    fn a_key_that_expired_at_the_end_of_its_second_would_repeat_serials() {
        // The danger the expiry rule removes: with a plain one-second TTL the hosts behind
        // find their second's key gone and count from 1 again.
        let (serials, _) = fleet(|args| args[0] * 1000 + 1000);
        let unique: HashSet<u64> = serials.iter().copied().collect();
        assert!(unique.len() < serials.len());
    }

    #[test]
    fn a_host_outside_the_window_gets_a_typed_error_and_counts_nothing() {
        let mut counter = Counter::new(script_expiry);
        let behind = host(-6001 - 999, window(5000, 3000));
        let e = issue(&mut counter, &behind, T0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ClockSkew);
        let text = e.to_string();
        assert!(text.contains("2025-04-13T11:59:53.000Z"), "{text}");
        assert!(text.contains("ended 6000 ms before"), "{text}");
        assert!(text.contains("counter_max_behind_ms = 5000"), "{text}");
        assert!(counter.keys.is_empty());
        assert_eq!(behind.generator.last(), 0);

        let ahead = host(3001 + 999, window(5000, 3000));
        let e = issue(&mut counter, &ahead, T0).unwrap_err();
        assert!(e.to_string().contains("starts 4000 ms after"), "{e}");
        assert!(e.to_string().contains("counter_max_ahead_ms = 3000"), "{e}");
        // At the edge of the window: counted.
        let edge = host(-6000, window(5000, 3000));
        assert_eq!(
            issue(&mut counter, &edge, T0).unwrap(),
            2_504_131_159_540_001
        );
    }

    #[test]
    fn a_second_key_lives_until_the_last_host_allowed_in_it_is_done() {
        let mut counter = Counter::new(script_expiry);
        let g = host(3000, window(5000, 3000)).generator;
        let second = T0 / 1000 + 3;
        let key = g.counter_key(second).unwrap();
        // Created 3 s early by a host ahead, used by a host 5.9 s behind 9.9 s later.
        assert_eq!(
            counter.run(T0, &key, g.counter_args(second)),
            reply(1, 1, T0)
        );
        let late = T0 + 3000 + 1000 + 5000;
        assert_eq!(
            counter.run(late, &key, g.counter_args(second)),
            reply(1, 2, late)
        );
        assert_eq!(
            counter.run(late + 1, &key, g.counter_args(second)),
            reply(0, 0, late + 1)
        );
        assert_eq!(counter.keys[&key].1, late + COUNTER_GRACE_MS);
    }

    fn reply(status: u64, n: u64, now: u64) -> Value {
        Value::List(vec![Value::uint(status), Value::uint(n), Value::uint(now)])
    }

    #[test]
    fn the_key_is_the_serial_without_its_sequence() {
        let o = SerialOptions {
            worker_id: 7,
            worker_digits: 2,
            utc_offset_minutes: 480,
            ..SerialOptions::default()
        };
        let g = SerialGenerator::with_clock(o, ManualClock::new(T0)).unwrap();
        assert_eq!(g.counter_key(T0 / 1000).unwrap(), "serial:25041320000007");
        assert_eq!(g.format(T0 / 1000, 3).unwrap() / 10_000, 25_041_320_000_007);
        assert_eq!(g.counter_args(17), [17, 60_000, 60_000, COUNTER_GRACE_MS]);
    }

    #[test]
    fn replies_are_read_strictly() {
        let g =
            SerialGenerator::with_clock(SerialOptions::default(), ManualClock::new(T0)).unwrap();
        assert_eq!(g.counter_sequence(1, &Value::Int(5)).unwrap(), 5);
        assert_eq!(g.counter_sequence(1, &reply(1, 9, T0)).unwrap(), 9);
        for bad in [
            Value::Int(-1),
            Value::Str("5".into()),
            Value::List(vec![Value::Int(1), Value::Int(2)]),
            reply(2, 1, T0),
        ] {
            let e = g.counter_sequence(1, &bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Store, "{bad:?}");
            assert!(
                e.to_string().contains("expected a non-negative integer"),
                "{e}"
            );
        }
    }
}
