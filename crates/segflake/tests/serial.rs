//! Date-prefixed serials: format, local counter, clock steps, restore, shared counter.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use segflake::datetime::parse_time_ms;
use segflake::{Clock, ErrorKind, ManualClock, SerialGenerator, SerialOptions};

fn at(iso: &str) -> Arc<ManualClock> {
    Arc::new(ManualClock::new(parse_time_ms(iso).unwrap()))
}

fn opts(worker_id: u64, worker_digits: u8, sequence_digits: u8) -> SerialOptions {
    SerialOptions::default()
        .with_worker_id(worker_id)
        .with_worker_digits(worker_digits)
        .with_sequence_digits(sequence_digits)
}

#[test]
fn the_spec_example() {
    // 2025-04-13 12:00:00 UTC, 4 sequence digits: 250413120000 + 0001.
    let clock = at("2025-04-13T12:00:00Z");
    let g = SerialGenerator::with_clock(SerialOptions::default(), Arc::clone(&clock)).unwrap();
    assert_eq!(g.next().unwrap(), 2_504_131_200_000_001);
    assert_eq!(g.next().unwrap(), 2_504_131_200_000_002);
    clock.advance_ms(1000);
    assert_eq!(g.next().unwrap(), 2_504_131_200_010_001);
    assert_eq!(g.last(), 2_504_131_200_010_001);
}

#[test]
fn worker_digits_sit_between_date_and_sequence() {
    let clock = at("2025-04-13T12:00:00Z");
    let g = SerialGenerator::with_clock(opts(7, 1, 4), Arc::clone(&clock)).unwrap();
    assert_eq!(g.next().unwrap(), 25_041_312_000_070_001);
    let p = g.decode(25_041_312_000_070_001).unwrap();
    assert_eq!((p.date, p.worker_id, p.sequence), (250_413_120_000, 7, 1));
    assert_eq!(
        p.unix_seconds * 1000,
        parse_time_ms("2025-04-13T12:00:00Z").unwrap()
    );
    // Two workers in the same second never collide.
    let g2 = SerialGenerator::with_clock(opts(8, 1, 4), Arc::clone(&clock)).unwrap();
    let a: HashSet<u64> = (0..500).map(|_| g.next().unwrap()).collect();
    let b: HashSet<u64> = (0..500).map(|_| g2.next().unwrap()).collect();
    assert!(a.is_disjoint(&b));
}

#[test]
fn a_fixed_utc_offset_prints_local_time() {
    let clock = at("2025-12-31T20:30:00Z");
    let o = SerialOptions::default().with_utc_offset_minutes(8 * 60);
    let g = SerialGenerator::with_clock(o, Arc::clone(&clock)).unwrap();
    // 20:30 UTC is 04:30 the next day at +08:00.
    assert_eq!(g.next().unwrap(), 2_601_010_430_000_001);
    let p = g.decode(2_601_010_430_000_001).unwrap();
    assert_eq!(p.unix_seconds * 1000, clock.now_ms());
    let west = SerialOptions::default().with_utc_offset_minutes(-(5 * 60 + 30));
    let g = SerialGenerator::with_clock(west, Arc::clone(&clock)).unwrap();
    assert_eq!(g.next().unwrap(), 2_512_311_500_000_001);
}

#[test]
fn running_out_of_sequence_numbers_in_a_second_is_a_clear_error() {
    let clock = at("2025-04-13T12:00:00Z");
    let g = SerialGenerator::with_clock(opts(0, 0, 1), Arc::clone(&clock)).unwrap();
    let got: Vec<u64> = (0..9).map(|_| g.next().unwrap()).collect();
    assert_eq!(got[0], 2_504_131_200_001);
    assert_eq!(got[8], 2_504_131_200_009);
    let err = g.next().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SerialExhausted);
    assert!(err.to_string().contains("250413120000"), "{err}");
    assert!(err.to_string().contains("1 sequence digits"), "{err}");
    clock.advance_ms(1000);
    assert_eq!(g.next().unwrap(), 2_504_131_200_011);
}

#[test]
fn the_clock_stepping_back_never_yields_a_smaller_serial() {
    let clock = at("2025-04-13T12:00:05Z");
    let g = SerialGenerator::with_clock(SerialOptions::default(), Arc::clone(&clock)).unwrap();
    let a = g.next().unwrap();
    clock.rewind_ms(3000);
    let b = g.next().unwrap();
    assert!(b > a);
    assert_eq!(b, a + 1, "keeps counting in the second of the last serial");
    clock.advance_ms(4000);
    assert_eq!(g.next().unwrap(), 2_504_131_200_060_001);
}

#[test]
fn a_restart_with_the_persisted_last_value_continues_above_it() {
    let clock = at("2025-04-13T12:00:00Z");
    let last = 2_504_131_200_100_042; // 10 s in the future, from before the restart
    let o = SerialOptions::default().with_last(Some(last));
    let g = SerialGenerator::with_clock(o, Arc::clone(&clock)).unwrap();
    assert_eq!(g.next().unwrap(), last + 1);
    // A restored serial of a higher worker number in that second: move to the next second.
    let o = (opts(3, 1, 4)).with_last(Some(25_041_312_000_090_005));
    let g = SerialGenerator::with_clock(o, Arc::clone(&clock)).unwrap();
    assert_eq!(g.next().unwrap(), 25_041_312_000_130_001);
    let bad = SerialOptions::default().with_last(Some(123));
    let err = SerialGenerator::with_clock(bad, Arc::clone(&clock)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn many_threads_get_unique_increasing_serials() {
    let clock = at("2025-04-13T12:00:00Z");
    let g = SerialGenerator::with_clock(opts(0, 0, 6), Arc::clone(&clock)).unwrap();
    let all: Vec<Vec<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| (0..20_000).map(|_| g.next().unwrap()).collect::<Vec<_>>()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for v in &all {
        assert!(v.windows(2).all(|w| w[0] < w[1]));
    }
    let set: HashSet<u64> = all.iter().flatten().copied().collect();
    assert_eq!(set.len(), 80_000);
}

#[test]
fn a_shared_counter_supplies_the_sequence() {
    // A Redis-like INCR per second shared by two hosts without worker digits.
    let counters: Arc<std::sync::Mutex<std::collections::HashMap<u64, u64>>> = Arc::default();
    let incr = |second: u64| -> Result<u64, String> {
        let mut m = counters.lock().unwrap();
        let c = m.entry(second).or_insert(0);
        *c += 1;
        Ok(*c)
    };
    let clock_a = at("2025-04-13T12:00:00Z");
    let clock_b = at("2025-04-13T12:00:00.500Z");
    let a = SerialGenerator::with_clock(SerialOptions::default(), Arc::clone(&clock_a)).unwrap();
    let b = SerialGenerator::with_clock(SerialOptions::default(), Arc::clone(&clock_b)).unwrap();
    let mut all = HashSet::new();
    for _ in 0..50 {
        assert!(all.insert(a.next_with_counter(incr).unwrap()));
        assert!(all.insert(b.next_with_counter(incr).unwrap()));
    }
    assert!(all.contains(&2_504_131_200_000_001));
    assert!(all.contains(&2_504_131_200_000_100));
    // Host a's clock steps back: it keeps counting in the second of its last serial.
    let last = a.last();
    clock_a.rewind_ms(5000);
    assert_eq!(a.counter_second(clock_a.now_ms()) * 1000, 1_744_545_600_000);
    let next = a.next_with_counter(incr).unwrap();
    assert!(next > last);
    assert!(all.insert(next));
}

#[test]
fn accept_is_the_sans_io_atomic_max() {
    let clock = at("2025-04-13T12:00:00Z");
    let g = SerialGenerator::with_clock(SerialOptions::default(), Arc::clone(&clock)).unwrap();
    let s = g.counter_second(clock.now_ms());
    assert_eq!(g.date_prefix(s).unwrap(), 250_413_120_000);
    assert_eq!(g.accept(s, 5).unwrap(), Some(2_504_131_200_000_005));
    // An answer that completed out of order is not above the last one: ask again.
    assert_eq!(g.accept(s, 4).unwrap(), None);
    assert_eq!(g.accept(s, 6).unwrap(), Some(2_504_131_200_000_006));
    let err = g.accept(s, 10_000).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SerialExhausted);
    assert_eq!(
        g.format(s, 0).unwrap(),
        2_504_131_200_000_000,
        "format is pure"
    );
    assert_eq!(g.last(), 2_504_131_200_000_006);
}

#[test]
fn a_counter_that_fails_or_was_reset_gives_typed_errors() {
    let clock = at("2025-04-13T12:00:00Z");
    let g = SerialGenerator::with_clock(SerialOptions::default(), Arc::clone(&clock)).unwrap();
    let err = g
        .next_with_counter(|_| Err("redis timeout".to_string()))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Store);
    assert!(err.to_string().contains("redis timeout"));
    g.accept(g.counter_second(clock.now_ms()), 50).unwrap();
    let calls = AtomicU64::new(0);
    let err = g
        .next_with_counter(|_| Ok(calls.fetch_add(1, Ordering::SeqCst) % 3 + 1))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Store);
    assert!(err.to_string().contains("reset"), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 8);
}

#[test]
fn bad_options_name_the_allowed_range() {
    let clock = at("2025-04-13T12:00:00Z");
    let cases: [(SerialOptions, &str); 5] = [
        (opts(0, 0, 0), "1..=7"),
        (opts(0, 0, 8), "1..=7"),
        (opts(0, 3, 5), "at most 7"),
        (opts(10, 1, 4), "0..=9"),
        (
            SerialOptions::default().with_utc_offset_minutes(24 * 60),
            "-1080..=1080",
        ),
    ];
    for (o, words) in cases {
        let err = SerialGenerator::with_clock(o, Arc::clone(&clock)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains(words), "{err}");
    }
    // 12 + 7 digits: the largest shape still fits a u64.
    let g = SerialGenerator::with_clock(opts(99, 2, 5), Arc::clone(&clock)).unwrap();
    assert_eq!(g.next().unwrap(), 2_504_131_200_009_900_001);
    // Years outside 2000..=2099 cannot be written as yy.
    let late = at("2100-01-01T00:00:00Z");
    let g = SerialGenerator::with_clock(SerialOptions::default(), late).unwrap();
    let err = g.next().unwrap_err();
    assert!(err.to_string().contains("2000 to 2099"), "{err}");
}

#[test]
fn extreme_inputs_are_errors_not_overflows() {
    let g =
        SerialGenerator::with_clock(SerialOptions::default(), at("2025-04-13T12:00:00Z")).unwrap();
    for secs in [
        0,
        946_684_799,
        4_102_444_800,
        20_000_000_000_000_000,
        u64::MAX / 1000,
        u64::MAX,
    ] {
        let err = g.date_prefix(secs).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{secs}: {err}");
        assert!(err.to_string().contains("2000 to 2099"), "{err}");
    }
    assert_eq!(g.date_prefix(946_684_800).unwrap(), 101_000_000);
    // Digit counts whose u8 sum would wrap are refused, not accepted.
    for (w, s) in [(250, 7), (255, 1), (7, 250)] {
        let err =
            SerialGenerator::with_clock(opts(0, w, s), at("2025-04-13T12:00:00Z")).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{w}+{s}: {err}");
    }
}
