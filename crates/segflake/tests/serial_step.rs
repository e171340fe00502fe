//! The sans-I/O shared-counter step, `SerialGenerator::begin_count` / `SerialCount`: the
//! same serials, counter calls and errors as the blocking `next_with`, the requests it
//! makes, and its give-up and error rules.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use segflake::datetime::parse_time_ms;
use segflake::serial::COUNTER_ATTEMPTS;
use segflake::{
    Clock, CounterRequest, Error, ErrorKind, ManualClock, Result, SerialGenerator, SerialOptions,
    Value,
};

fn at(iso: &str) -> Arc<ManualClock> {
    Arc::new(ManualClock::new(parse_time_ms(iso).unwrap()))
}

/// A scripted counter: answers from `replies` in turn (then counts per second), records the
/// seconds it was asked for, and moves the clock by `tick_ms` on every call.
struct Script {
    clock: Arc<ManualClock>,
    replies: RefCell<Vec<Value>>,
    counts: RefCell<HashMap<u64, u64>>,
    asked: RefCell<Vec<u64>>,
    tick_ms: u64,
}

impl Script {
    fn new(clock: &Arc<ManualClock>, replies: Vec<Value>, tick_ms: u64) -> Script {
        Script {
            clock: Arc::clone(clock),
            replies: RefCell::new(replies.into_iter().rev().collect()),
            counts: RefCell::default(),
            asked: RefCell::default(),
            tick_ms,
        }
    }

    fn answer(&self, second: u64) -> Value {
        self.asked.borrow_mut().push(second);
        self.clock.advance_ms(self.tick_ms);
        if let Some(reply) = self.replies.borrow_mut().pop() {
            return reply;
        }
        let mut counts = self.counts.borrow_mut();
        let c = counts.entry(second).or_insert(0);
        *c += 1;
        Value::uint(*c)
    }
}

/// One serial through the blocking path.
fn blocking(g: &SerialGenerator<Arc<ManualClock>>, script: &Script) -> Result<u64> {
    g.next_with(|second| g.counter_sequence(second, &script.answer(second)))
}

/// One serial through the step, as a driver runs it.
fn stepping(g: &SerialGenerator<Arc<ManualClock>>, script: &Script) -> Result<u64> {
    let mut count = g.begin_count();
    loop {
        let request = count.request()?;
        assert_eq!(request.unix_second, count.second());
        assert_eq!(request.key, g.counter_key(request.unix_second)?);
        assert_eq!(request.args, g.counter_args(request.unix_second));
        if let Some(serial) = count.accept_reply(&script.answer(request.unix_second))? {
            return Ok(serial);
        }
    }
}

fn script_reply(status: u64, n: u64, now: u64) -> Value {
    Value::List(vec![Value::uint(status), Value::uint(n), Value::uint(now)])
}

type Run = (Vec<std::result::Result<u64, String>>, Vec<u64>, u64, u64);

/// Runs `rounds` serials through `take` on a fresh generator and script: the outcomes,
/// the seconds the counter was asked for, the last serial and the clock.
fn run(
    options: SerialOptions,
    replies: &[Value],
    rounds: usize,
    rewind_at: Option<usize>,
    take: fn(&SerialGenerator<Arc<ManualClock>>, &Script) -> Result<u64>,
) -> Run {
    let clock = at("2025-04-13T12:00:00.900Z");
    let g = SerialGenerator::with_clock(options, Arc::clone(&clock)).unwrap();
    let script = Script::new(&clock, replies.to_vec(), 37);
    let mut outcomes = Vec::new();
    for round in 0..rounds {
        if rewind_at == Some(round) {
            clock.rewind_ms(3000);
        }
        outcomes.push(take(&g, &script).map_err(|e| e.to_string()));
    }
    let asked = script.asked.borrow().clone();
    (outcomes, asked, g.last(), clock.now_ms())
}

#[test]
fn the_step_is_the_blocking_path() {
    let t0 = parse_time_ms("2025-04-13T12:00:00Z").unwrap();
    let cases: Vec<(SerialOptions, Vec<Value>, Option<usize>)> = vec![
        // A plain INCR per second; the clock steps back midway.
        (SerialOptions::default(), vec![], Some(40)),
        // Worker digits and an offset.
        (
            SerialOptions::default()
                .with_worker_id(7)
                .with_worker_digits(2)
                .with_utc_offset_minutes(480),
            vec![],
            None,
        ),
        // Answers not above the last serial, then accepted ones; the script's replies.
        (
            SerialOptions::default(),
            vec![
                Value::uint(5),
                Value::uint(3),
                Value::uint(4),
                script_reply(1, 9, t0),
                Value::uint(1),
            ],
            None,
        ),
        // A counter reset that never recovers: gives up after COUNTER_ATTEMPTS.
        (
            SerialOptions::default(),
            std::iter::once(Value::uint(50))
                .chain(std::iter::repeat_n(Value::uint(2), 20))
                .collect(),
            None,
        ),
        // Refused seconds (clock skew), bad replies, exhausted sequence digits.
        (
            SerialOptions::default().with_sequence_digits(1),
            vec![
                script_reply(0, 0, t0 + 90_000),
                Value::Str("5".into()),
                Value::Int(-1),
                Value::uint(10),
            ],
            None,
        ),
    ];
    for (options, replies, rewind) in cases {
        let a = run(options, &replies, 80, rewind, blocking);
        let b = run(options, &replies, 80, rewind, stepping);
        assert_eq!(a, b, "{options:?}");
        assert!(a.0.iter().any(Result::is_ok));
    }
}

#[test]
fn the_step_gives_up_after_counter_attempts() {
    let clock = at("2025-04-13T12:00:00Z");
    let g = SerialGenerator::with_clock(SerialOptions::default(), Arc::clone(&clock)).unwrap();
    let second = clock.now_ms() / 1000;
    assert_eq!(g.accept(second, 50).unwrap(), Some(2_504_131_200_000_050));
    let mut count = g.begin_count();
    for _ in 1..COUNTER_ATTEMPTS {
        assert_eq!(count.accept(7).unwrap(), None);
    }
    let e = count.accept(7).unwrap_err();
    assert_eq!(e.to_string(), g.counter_gave_up().to_string());
    assert_eq!(g.last(), 2_504_131_200_000_050);
}

#[test]
fn the_step_counts_in_the_second_of_the_last_serial_while_the_clock_is_behind() {
    let clock = at("2025-04-13T12:00:05Z");
    let g = SerialGenerator::with_clock(SerialOptions::default(), Arc::clone(&clock)).unwrap();
    let count = g.begin_count();
    assert_eq!(count.second() * 1000, clock.now_ms());
    g.accept(count.second(), 1).unwrap();
    clock.rewind_ms(4000);
    let mut count = g.begin_count();
    assert_eq!(count.second() * 1000, clock.now_ms() + 4000);
    assert_eq!(
        count.request().unwrap(),
        CounterRequest {
            unix_second: count.second(),
            key: "serial:250413120005".into(),
            args: g.counter_args(count.second()),
        }
    );
    // An answer not above the last serial: the next request reads the clock again.
    assert_eq!(count.accept(1).unwrap(), None);
    clock.advance_ms(10_000);
    assert_eq!(count.accept(1).unwrap(), None);
    assert_eq!(count.second() * 1000, clock.now_ms());
    assert_eq!(count.accept(1).unwrap(), Some(2_504_131_200_110_001));
}

#[test]
fn the_step_names_failures_and_timeouts() {
    let clock = at("2025-04-13T12:00:00Z");
    let options = SerialOptions::default()
        .with_worker_id(3)
        .with_worker_digits(1)
        .with_counter_timeout_ms(250);
    let g = SerialGenerator::with_clock(options, Arc::clone(&clock)).unwrap();
    let count = g.begin_count();
    let e = count.failed("connection refused");
    assert!(matches!(e, Error::Store { .. }));
    assert!(e.to_string().contains("connection refused"), "{e}");
    let e = count.timed_out();
    assert_eq!(e.kind(), ErrorKind::Store);
    let text = e.to_string();
    assert!(text.contains("serial:2504131200003"), "{text}");
    assert!(text.contains("250 ms (counter_timeout_ms)"), "{text}");
    // Years that cannot be written as yy: the request says so, before any count.
    let late = SerialGenerator::with_clock(SerialOptions::default(), ManualClock::new(0)).unwrap();
    assert_eq!(
        late.begin_count().request().unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}
