//! The snowflake generator's guarantees: uniqueness and strict increase under threads,
//! the clock policy (bounded drift, fail fast, strict mode), sequence overflow, restarts.

use std::collections::HashSet;
use std::sync::Arc;

use segflake::{
    Clock, Error, Layout, ManualClock, Preset, SequenceStart, Snowflake, SnowflakeOptions,
};

const T0: u64 = 1_790_000_000_000; // 2026-09-21, well after every preset epoch

fn twitter() -> Layout {
    Preset::Twitter.spec().build_at(T0).unwrap()
}

/// A layout with a tiny sequence field (4 IDs per 1 ms tick) so overflow is easy to reach.
fn narrow() -> Layout {
    Preset::Twitter
        .spec()
        .with_sequence_bits(2)
        .build_at(T0)
        .unwrap()
}

fn manual(layout: Layout, options: SnowflakeOptions) -> Snowflake<Arc<ManualClock>> {
    Snowflake::with_clock(layout, options, Arc::new(ManualClock::new(T0))).unwrap()
}

fn opts(worker: u64) -> SnowflakeOptions {
    SnowflakeOptions::new(worker)
}

#[test]
fn many_threads_one_generator_unique_and_per_thread_increasing() {
    let gen = Arc::new(Snowflake::new(twitter(), opts(7)).unwrap());
    let threads = 8;
    let per_thread = 200_000;
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let gen = Arc::clone(&gen);
            std::thread::spawn(move || {
                let mut ids = Vec::with_capacity(per_thread);
                for _ in 0..per_thread {
                    ids.push(gen.next_id().unwrap());
                }
                ids
            })
        })
        .collect();
    let mut all = HashSet::with_capacity(threads * per_thread);
    for h in handles {
        let ids = h.join().unwrap();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "a thread saw a decrease"
        );
        for id in ids {
            assert_eq!(gen.decode(id).unwrap().worker_id, 7);
            assert!(all.insert(id), "duplicate id {id}");
        }
    }
    assert_eq!(all.len(), threads * per_thread);
}

#[test]
fn batches_and_singles_interleaved_across_threads_stay_unique() {
    let gen = Arc::new(Snowflake::new(twitter(), opts(1)).unwrap());
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let gen = Arc::clone(&gen);
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for round in 0..2000 {
                    if (round + t) % 2 == 0 {
                        ids.extend(gen.next_ids_vec(37).unwrap());
                    } else {
                        ids.push(gen.next_id().unwrap());
                    }
                }
                ids
            })
        })
        .collect();
    let mut all = HashSet::new();
    for h in handles {
        let ids = h.join().unwrap();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        for id in ids {
            assert!(all.insert(id), "duplicate id {id}");
        }
    }
}

#[test]
fn ids_carry_the_clock_time_worker_and_sequence() {
    let gen = manual(twitter(), opts(513));
    let a = gen.next_id().unwrap();
    let b = gen.next_id().unwrap();
    let (da, db) = (gen.decode(a).unwrap(), gen.decode(b).unwrap());
    assert_eq!(da.timestamp_ms, T0);
    assert_eq!((da.worker_id, da.sequence), (513, 0));
    assert_eq!((db.timestamp_ms, db.sequence), (T0, 1));
    gen.clock().advance_ms(5);
    let c = gen.decode(gen.next_id().unwrap()).unwrap();
    assert_eq!((c.timestamp_ms, c.sequence), (T0 + 5, 0));
}

#[test]
fn overflow_borrows_next_ticks_up_to_the_drift_bound_then_waits() {
    let gen = manual(narrow(), opts(0).with_max_drift_ms(3));
    // Tick T0 holds 4 IDs; ticks T0+1..=T0+3 may be borrowed; then the generator waits.
    let mut ids = Vec::new();
    for _ in 0..16 {
        ids.push(gen.next_id().unwrap());
    }
    assert_eq!(
        gen.clock().waits(),
        0,
        "borrowing within the bound must not wait"
    );
    let last = gen.decode(ids[15]).unwrap();
    assert_eq!((last.timestamp_ms, last.sequence), (T0 + 3, 3));
    assert_eq!(gen.clock().now_ms(), T0, "the clock did not move");
    let next = gen.decode(gen.next_id().unwrap()).unwrap();
    assert_eq!(
        gen.clock().waits(),
        1,
        "the 17th ID had to wait for the clock"
    );
    assert_eq!((next.timestamp_ms, next.sequence), (T0 + 4, 0));
    assert_eq!(
        gen.clock().now_ms(),
        T0 + 1,
        "waited only until borrowing was allowed"
    );
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn strict_mode_waits_for_the_next_tick_on_overflow() {
    let gen = manual(narrow(), opts(0).with_max_drift_ms(0));
    for _ in 0..4 {
        gen.next_id().unwrap();
    }
    assert_eq!(gen.clock().waits(), 0);
    let fifth = gen.decode(gen.next_id().unwrap()).unwrap();
    assert_eq!(gen.clock().waits(), 1);
    assert_eq!(fifth.timestamp_ms, T0 + 1);
    assert_eq!(gen.clock().now_ms(), T0 + 1);
}

#[test]
fn strict_mode_fails_on_any_step_back() {
    let gen = manual(twitter(), opts(0).with_max_drift_ms(0));
    let a = gen.next_id().unwrap();
    gen.clock().rewind_ms(1);
    match gen.next_id() {
        Err(Error::ClockMovedBackwards {
            by_ms,
            max_drift_ms,
        }) => assert_eq!((by_ms, max_drift_ms), (1, 0)),
        other => panic!("expected ClockMovedBackwards, got {other:?}"),
    }
    gen.clock().advance_ms(1);
    assert!(gen.next_id().unwrap() > a);
}

#[test]
fn clock_step_back_within_the_bound_keeps_issuing_from_the_logical_tick() {
    let gen = manual(narrow(), opts(3));
    let mut last = gen.next_id().unwrap();
    gen.clock().rewind_ms(1500); // within the default 2000 ms bound
    for _ in 0..100 {
        let id = gen.next_id().unwrap();
        assert!(id > last, "decrease after a step back within the bound");
        last = id;
    }
    // 4 IDs per tick: 100 IDs borrowed 25 ticks past T0, never behind it.
    let d = gen.decode(last).unwrap();
    assert!(d.timestamp_ms >= T0 && d.timestamp_ms <= T0 + 26, "{d:?}");
}

#[test]
fn clock_step_back_beyond_the_bound_fails_fast_with_the_amount_then_recovers() {
    let gen = manual(twitter(), opts(3));
    let before = gen.next_id().unwrap();
    gen.clock().rewind_ms(5000);
    let err = gen.next_id().unwrap_err();
    assert_eq!(
        err,
        Error::ClockMovedBackwards {
            by_ms: 5000,
            max_drift_ms: 2000
        }
    );
    assert!(err.to_string().contains("5000 ms"), "{err}");
    assert!(gen.next_ids_vec(10).is_err(), "batches refuse too");
    // Once the clock is back within the bound, IDs resume above the last one.
    gen.clock().advance_ms(3500);
    let after = gen.next_id().unwrap();
    assert!(after > before);
}

#[test]
fn a_stuck_clock_never_yields_a_duplicate() {
    let gen = manual(narrow(), opts(0));
    let mut seen = HashSet::new();
    // 2000 ms of drift at 4 IDs per tick is 8004 IDs before the generator must wait;
    // ManualClock's wait advances it, so 20000 IDs complete.
    for _ in 0..20_000 {
        assert!(seen.insert(gen.next_id().unwrap()));
    }
    assert!(gen.clock().waits() > 0);
    let hwm = gen.high_water_mark_ms();
    assert!(hwm <= gen.clock().now_ms() + 2000, "drift bound exceeded");
}

#[test]
fn a_forward_jump_moves_ids_forward() {
    let gen = manual(twitter(), opts(0));
    let a = gen.next_id().unwrap();
    gen.clock().advance_ms(3_600_000);
    let b = gen.next_id().unwrap();
    assert_eq!(gen.decode(b).unwrap().timestamp_ms, T0 + 3_600_000);
    assert!(b > a);
}

#[test]
fn restart_with_not_before_ahead_of_the_clock() {
    let layout = twitter();
    let first = manual(layout, opts(9));
    for _ in 0..10 {
        first.next_id().unwrap();
    }
    first.clock().advance_ms(700);
    let last_before_restart = first.next_id().unwrap();
    let hwm = first.high_water_mark_ms();
    assert_eq!(hwm, T0 + 700);

    // Restart on a machine whose clock is 500 ms behind: within the drift bound, so the
    // new generator issues IDs strictly above everything the old one issued.
    let clock = Arc::new(ManualClock::new(T0 + 200));
    let restarted = Snowflake::with_clock(
        layout,
        opts(9).with_not_before_ms(Some(hwm)),
        Arc::clone(&clock),
    )
    .unwrap();
    let id = restarted.next_id().unwrap();
    assert!(id > last_before_restart);
    assert!(restarted.decode(id).unwrap().timestamp_ms > hwm);

    // A clock further behind the mark than the drift bound is refused, with the amount.
    let far = Snowflake::with_clock(
        layout,
        opts(9).with_not_before_ms(Some(hwm)),
        ManualClock::new(hwm - 10_000),
    )
    .unwrap();
    match far.next_id() {
        Err(Error::ClockMovedBackwards { by_ms, .. }) => assert_eq!(by_ms, 10_000),
        other => panic!("expected ClockMovedBackwards, got {other:?}"),
    }
}

#[test]
fn random_sequence_start_stays_below_100_and_ids_still_increase() {
    let gen = manual(
        twitter(),
        opts(0).with_sequence_start(SequenceStart::Random),
    );
    let mut starts = HashSet::new();
    let mut last = 0;
    for _ in 0..200 {
        gen.clock().advance_ms(1);
        let id = gen.next_id().unwrap();
        assert!(id > last);
        last = id;
        let seq = gen.decode(id).unwrap().sequence;
        assert!(seq < 100);
        starts.insert(seq);
    }
    assert!(starts.len() > 20, "starts are not spread: {starts:?}");
}

#[test]
fn batches_fill_runs_of_consecutive_sequences() {
    let gen = manual(twitter(), opts(5));
    let ids = gen.next_ids_vec(5000).unwrap();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let first = gen.decode(ids[0]).unwrap();
    let last = gen.decode(ids[4999]).unwrap();
    assert_eq!((first.timestamp_ms, first.sequence), (T0, 0));
    // 4096 per tick: the batch borrowed one tick.
    assert_eq!((last.timestamp_ms, last.sequence), (T0 + 1, 903));
    assert!(ids.iter().all(|&id| gen.decode(id).unwrap().worker_id == 5));

    // Sonyflake order: consecutive sequences are 2^worker_bits apart.
    let sony = manual(Preset::Sonyflake.spec().build_at(T0).unwrap(), opts(42));
    let ids = sony.next_ids_vec(300).unwrap();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(ids[1] - ids[0], 1 << 16);
    assert!(ids
        .iter()
        .all(|&id| sony.decode(id).unwrap().worker_id == 42));
}

#[test]
fn refusals_name_the_allowed_range() {
    let err = Snowflake::new(twitter(), opts(1024)).unwrap_err();
    assert!(err.to_string().contains("0..=1023"), "{err}");
    let err = Snowflake::new(twitter(), opts(0).with_max_drift_ms(10_000_000)).unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    let gen = Snowflake::new(twitter(), opts(0)).unwrap();
    assert!(gen.next_ids_vec(0).is_err());
    assert!(gen.next_ids_vec(segflake::MAX_BATCH + 1).is_err());
}

#[test]
fn clock_before_epoch_and_time_exhaustion_are_errors() {
    let layout = twitter();
    let gen =
        Snowflake::with_clock(layout, opts(0), ManualClock::new(layout.epoch_ms() - 1)).unwrap();
    assert_eq!(gen.next_id().unwrap_err().code(), "CLOCK_BEFORE_EPOCH");
    let gen =
        Snowflake::with_clock(layout, opts(0), ManualClock::new(layout.exhausts_at_ms())).unwrap();
    assert_eq!(gen.next_id().unwrap_err().code(), "TIME_EXHAUSTED");
    // The last tick is usable, then the generator refuses rather than wrapping.
    let gen = Snowflake::with_clock(
        layout,
        opts(0).with_max_drift_ms(0),
        ManualClock::new(layout.exhausts_at_ms() - 1),
    )
    .unwrap();
    let ids = gen.next_ids_vec(4096).unwrap();
    assert_eq!(*ids.last().unwrap(), layout.max_id() & !(1023 << 12));
    assert_eq!(gen.next_id().unwrap_err().code(), "TIME_EXHAUSTED");
}

#[test]
fn generator_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Snowflake>();
    assert_send_sync::<Snowflake<Arc<ManualClock>>>();
}

/// A clock that, once armed, lets "another thread" run between the moment a caller reads
/// the time and the moment it uses it: the reading it returns is already stale.
struct RacingClock {
    time: ManualClock,
    armed: std::sync::atomic::AtomicBool,
    gen: std::sync::OnceLock<std::sync::Weak<Snowflake<Arc<RacingClock>>>>,
}

impl Clock for RacingClock {
    fn now_ms(&self) -> u64 {
        let reading = self.time.now_ms();
        if self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            // The other thread sees the next millisecond and borrows up to the drift bound.
            self.time.advance_ms(1);
            let gen = self.gen.get().unwrap().upgrade().unwrap();
            for _ in 0..12 {
                gen.next_id().unwrap();
            }
        }
        reading
    }
    fn wait_until_ms(&self, unix_ms: u64) -> segflake::Result<()> {
        self.time.wait_until_ms(unix_ms)
    }
}

#[test]
fn a_stale_clock_reading_is_not_mistaken_for_the_clock_moving_backwards() {
    let clock = Arc::new(RacingClock {
        time: ManualClock::new(T0),
        armed: Default::default(),
        gen: Default::default(),
    });
    let options = opts(0).with_max_drift_ms(2);
    let gen = Arc::new(Snowflake::with_clock(narrow(), options, Arc::clone(&clock)).unwrap());
    clock.gen.set(Arc::downgrade(&gen)).ok().unwrap();
    let first = gen.next_id().unwrap();
    clock.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let id = gen
        .next_id()
        .expect("a stale reading must lead to a retry, not an error");
    assert!(id > first);
}

#[test]
fn threads_at_the_drift_bound_never_see_a_spurious_clock_error() {
    // Four IDs per tick and 2 ms of drift: threads spend most of their time borrowing at
    // the bound. A thread whose clock reading is older than the state another thread just
    // advanced must not mistake that for the clock moving backwards.
    let layout = Preset::Twitter
        .spec()
        .with_sequence_bits(2)
        .build()
        .unwrap();
    let gen = Arc::new(Snowflake::new(layout, opts(0).with_max_drift_ms(2)).unwrap());
    // A count, not a deadline: under load the threads take longer, never fewer IDs.
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let gen = Arc::clone(&gen);
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                while ids.len() < 400 {
                    match gen.next_id() {
                        Ok(id) => ids.push(id),
                        Err(e) => panic!("spurious error at the drift bound: {e}"),
                    }
                }
                ids
            })
        })
        .collect();
    let mut all = HashSet::new();
    for h in handles {
        for id in h.join().unwrap() {
            assert!(all.insert(id));
        }
    }
    assert_eq!(all.len(), 1600);
}

#[test]
fn exclusive_next_id_follows_the_same_policy_as_the_shared_one() {
    let options = opts(2).with_max_drift_ms(3);
    let shared = manual(narrow(), options);
    let mut exclusive = manual(narrow(), options);
    let mut a = Vec::new();
    let mut b = Vec::new();
    for step in 0..40u64 {
        if step % 7 == 3 {
            shared.clock().rewind_ms(2);
            exclusive.clock().rewind_ms(2);
        }
        if step % 11 == 5 {
            shared.clock().advance_ms(9);
            exclusive.clock().advance_ms(9);
        }
        a.push(shared.next_id());
        b.push(exclusive.next_id_mut());
    }
    assert_eq!(a, b);
    assert_eq!(shared.clock().waits(), exclusive.clock().waits());
    assert!(
        shared.clock().waits() > 0,
        "the sequence must include waits"
    );
    exclusive.clock().rewind_ms(5000);
    assert_eq!(
        exclusive.next_id_mut().unwrap_err().code(),
        "CLOCK_MOVED_BACKWARDS"
    );
}

/// A host clock that never advances (a time frozen during synchronous work).
struct FrozenClock(u64);

impl Clock for FrozenClock {
    fn now_ms(&self) -> u64 {
        self.0
    }
}

#[test]
fn a_frozen_clock_is_an_error_not_a_hang() {
    let options = opts(0).with_max_drift_ms(0);
    let gen = Snowflake::with_clock(narrow(), options, FrozenClock(T0)).unwrap();
    let ids: Vec<u64> = (0..4).map(|_| gen.next_id().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    let err = gen.next_id().unwrap_err();
    assert_eq!(err.code(), "CLOCK_STALLED", "{err}");
    assert!(
        err.to_string().contains("must advance with real time"),
        "{err}"
    );
    let details = err.details();
    assert!(
        details.contains(&("reading_ms", segflake::Detail::Number(T0))),
        "{details:?}"
    );
    // Nothing was issued by the failed call: the next tick is still free.
    let later = Snowflake::with_clock(narrow(), options, ManualClock::new(T0 + 1)).unwrap();
    assert!(later.next_id().unwrap() > ids[3]);
}
