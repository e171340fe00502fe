//! The non-blocking snowflake step, `Snowflake::try_reserve`: the IDs it reserves strictly
//! increase (also mixed with the blocking calls and across threads), the time it asks to
//! wait for is exactly when the generator can issue again, it never waits on the clock,
//! it gives the same IDs and errors as the blocking path, and `ClockWait`'s stall rule.

use std::collections::HashSet;
use std::sync::Arc;

use segflake::clock::{ClockWait, STALL_MS};
use segflake::{
    Clock, Error, ErrorKind, Fence, IdRun, Layout, ManualClock, Preset, Reserve, SequenceStart,
    Snowflake, SnowflakeOptions,
};

const T0: u64 = 1_790_000_000_000; // 2026-09-21, well after every preset epoch

fn twitter() -> Layout {
    Preset::Twitter.spec().build_at(T0).unwrap()
}

/// 4 IDs per 1 ms tick, so waits are easy to reach.
fn narrow() -> Layout {
    Preset::Twitter
        .spec()
        .with_sequence_bits(2)
        .build_at(T0)
        .unwrap()
}

fn sonyflake() -> Layout {
    Preset::Sonyflake.spec().build_at(T0).unwrap()
}

fn manual(layout: Layout, options: SnowflakeOptions) -> Snowflake<Arc<ManualClock>> {
    Snowflake::with_clock(layout, options, Arc::new(ManualClock::new(T0))).unwrap()
}

fn ids(reserve: Reserve) -> IdRun {
    match reserve {
        Reserve::Ids(run) => run,
        Reserve::WaitUntil(ms) => panic!("asked to wait until {ms}"),
    }
}

/// Takes `n` IDs with `try_reserve(want)`, moving the clock to each time it asks for.
fn take_stepping(g: &Snowflake<Arc<ManualClock>>, n: usize, want: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let want = want.min((n - out.len()) as u64);
        match g.try_reserve(want).unwrap() {
            Reserve::Ids(run) => {
                assert!(run.count >= 1 && run.count <= want, "{run:?} for {want}");
                out.extend(run.iter());
            }
            Reserve::WaitUntil(ms) => {
                assert!(
                    ms > g.clock().now_ms(),
                    "asked to wait for a time already reached"
                );
                g.clock().set_ms(ms);
            }
        }
    }
    out
}

#[test]
fn reserved_ids_strictly_increase_mixed_with_blocking_calls() {
    for drift in [0, 3, 2000] {
        let g = manual(narrow(), SnowflakeOptions::new(5).with_max_drift_ms(drift));
        let mut all = Vec::new();
        for round in 0..200u64 {
            match round % 4 {
                0 => all.extend(take_stepping(&g, 7, 3)),
                1 => all.push(g.next_id().unwrap()),
                2 => all.extend(g.next_ids_vec(5).unwrap()),
                _ => {
                    if let Reserve::Ids(run) = g.try_reserve(1).unwrap() {
                        all.push(run.first);
                    }
                }
            }
            if round % 13 == 0 {
                g.clock().advance_ms(1);
            }
        }
        assert!(
            all.windows(2).all(|w| w[0] < w[1]),
            "drift {drift}: not strictly increasing"
        );
    }
}

#[test]
fn reserved_ids_are_unique_across_threads() {
    let g = Arc::new(Snowflake::new(twitter(), SnowflakeOptions::new(3)).unwrap());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let g = Arc::clone(&g);
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                while mine.len() < 50_000 {
                    match g.try_reserve(7).unwrap() {
                        Reserve::Ids(run) => mine.extend(run.iter()),
                        Reserve::WaitUntil(ms) => g.clock().wait_until_ms(ms).unwrap(),
                    }
                }
                mine
            })
        })
        .collect();
    let mut all = HashSet::new();
    for h in handles {
        let mine = h.join().unwrap();
        assert!(mine.windows(2).all(|w| w[0] < w[1]));
        for id in mine {
            assert!(all.insert(id), "duplicate {id}");
        }
    }
}

#[test]
fn wait_until_is_exactly_when_the_next_id_can_be_issued() {
    // Strict: a full tick waits for the next one.
    let g = manual(narrow(), SnowflakeOptions::new(1).with_max_drift_ms(0));
    assert_eq!(ids(g.try_reserve(10).unwrap()).count, 4);
    assert_eq!(g.try_reserve(1).unwrap(), Reserve::WaitUntil(T0 + 1));
    assert_eq!(g.try_reserve(4).unwrap(), Reserve::WaitUntil(T0 + 1));
    g.clock().set_ms(T0 + 1);
    let run = ids(g.try_reserve(1).unwrap());
    assert_eq!(g.decode(run.first).unwrap().timestamp_ms, T0 + 1);

    // Drift 3: three ticks are borrowed, then the wait is for the 4th tick's start less
    // the drift; one millisecond before it the generator still cannot issue.
    let g = manual(narrow(), SnowflakeOptions::new(1).with_max_drift_ms(3));
    for tick in 0..4 {
        let run = ids(g.try_reserve(4).unwrap());
        assert_eq!(run.count, 4);
        assert_eq!(g.decode(run.first).unwrap().timestamp_ms, T0 + tick);
    }
    assert_eq!(g.try_reserve(1).unwrap(), Reserve::WaitUntil(T0 + 1));
    g.clock().set_ms(T0 + 1);
    let run = ids(g.try_reserve(1).unwrap());
    assert_eq!(g.decode(run.first).unwrap().timestamp_ms, T0 + 4);
    // The step never waits on the clock.
    assert_eq!(g.clock().waits(), 0);
}

#[test]
fn the_step_gives_the_same_ids_as_the_blocking_path() {
    for (layout, drift, start) in [
        (narrow(), 0, SequenceStart::Zero),
        (narrow(), 2, SequenceStart::Random),
        (twitter(), 0, SequenceStart::Random),
        (sonyflake(), 20, SequenceStart::Zero),
    ] {
        let options = SnowflakeOptions::new(9)
            .with_max_drift_ms(drift)
            .with_sequence_start(start);
        let mut blocking = manual(layout, options);
        let mut stepping = manual(layout, options);
        blocking.set_sequence_seed(42);
        stepping.set_sequence_seed(42);
        let n = 3 * layout.max_sequence() as usize + 11;
        // ManualClock's wait moves the clock to the time waited for, as the caller of the
        // step does.
        let expected = blocking.next_ids_vec(n).unwrap();
        assert_eq!(take_stepping(&stepping, n, n as u64), expected);
        assert_eq!(blocking.clock().now_ms(), stepping.clock().now_ms());
        assert_eq!(blocking.high_water_mark_ms(), stepping.high_water_mark_ms());
        // One at a time too.
        let expected: Vec<u64> = (0..n).map(|_| blocking.next_id().unwrap()).collect();
        assert_eq!(take_stepping(&stepping, n, 1), expected);
    }
}

#[test]
fn a_run_lists_the_ids_of_its_layout() {
    // Sonyflake puts the worker ID below the sequence: consecutive IDs differ by 2^16.
    let g = manual(sonyflake(), SnowflakeOptions::new(77));
    let run = ids(g.try_reserve(5).unwrap());
    assert_eq!(run.count, 5);
    assert_eq!(run.stride, 1 << 16);
    let listed: Vec<u64> = run.iter().collect();
    for (i, id) in listed.iter().enumerate() {
        let d = g.decode(*id).unwrap();
        assert_eq!((d.worker_id, d.sequence), (77, i as u64));
        assert_eq!(run.get(i as u64), Some(*id));
    }
    assert_eq!(run.get(5), None);
    assert_eq!(run.last(), listed[4]);
    let mut out = [0u64; 3];
    assert_eq!(run.write_to(&mut out), 3);
    assert_eq!(out[..], listed[..3]);
    let mut out = [0u64; 8];
    assert_eq!(run.write_to(&mut out), 5);
    assert_eq!(out[..5], listed[..]);
}

#[test]
fn the_step_fails_as_the_blocking_path_does() {
    // The clock stepped back beyond the drift bound.
    let g = manual(twitter(), SnowflakeOptions::new(1).with_max_drift_ms(5));
    ids(g.try_reserve(1).unwrap());
    g.clock().rewind_ms(6);
    let stepped = g.try_reserve(1).unwrap_err();
    let blocked = g.next_id().unwrap_err();
    assert!(
        matches!(stepped, Error::ClockMovedBackwards { by_ms: 6, .. }),
        "{stepped}"
    );
    assert_eq!(stepped.to_string(), blocked.to_string());

    // Before the epoch.
    let g = Snowflake::with_clock(twitter(), SnowflakeOptions::new(1), ManualClock::new(0));
    let g = g.unwrap();
    assert_eq!(
        g.try_reserve(1).unwrap_err().kind(),
        ErrorKind::ClockBeforeEpoch
    );

    // Sealed.
    let g = manual(twitter(), SnowflakeOptions::new(1));
    g.seal();
    assert!(matches!(g.try_reserve(1), Err(Error::Closed)));

    // A shut fence refuses with its reason.
    let layout = twitter();
    let refusal = Error::LeaseExpired {
        worker_id: 4,
        reason: "test".into(),
    };
    let fence = Arc::new(Fence::shut(&layout, refusal.clone()));
    let g = Snowflake::with_fence(
        layout,
        SnowflakeOptions::new(0),
        ManualClock::new(T0),
        fence,
    )
    .unwrap();
    assert_eq!(
        g.try_reserve(3).unwrap_err().to_string(),
        refusal.to_string()
    );
    assert_eq!(g.next_id().unwrap_err().to_string(), refusal.to_string());

    // A reservation of nothing is refused.
    let g = manual(twitter(), SnowflakeOptions::new(1));
    assert_eq!(
        g.try_reserve(0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
fn the_step_stops_at_the_fence_cap_and_resumes_when_it_is_raised() {
    let layout = narrow();
    let refusal = Error::LeaseExpired {
        worker_id: 2,
        reason: "not claimed yet".into(),
    };
    let fence = Arc::new(Fence::shut(&layout, refusal));
    let cap = |ms: u64| layout.tick_of(ms).unwrap();
    fence.rebind(2, cap(T0 + 1), 0);
    let g = Snowflake::with_fence(
        layout,
        SnowflakeOptions::new(2).with_max_drift_ms(5),
        Arc::new(ManualClock::new(T0)),
        Arc::clone(&fence),
    )
    .unwrap();
    // Ticks T0 and T0 + 1 (borrowed) are under the cap; T0 + 2 is not.
    let issued = take_stepping(&g, 8, 8);
    assert_eq!(g.decode(issued[7]).unwrap().timestamp_ms, T0 + 1);
    assert_eq!(g.decode(issued[7]).unwrap().worker_id, 2);
    let e = g.try_reserve(1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeaseExpired, "{e}");
    fence.raise(2, cap(T0 + 10));
    let run = ids(g.try_reserve(1).unwrap());
    assert!(run.first > issued[7]);
    assert_eq!(g.clock().waits(), 0);
}

#[test]
fn clock_wait_follows_the_stall_rule() {
    let mut wait = ClockWait::new(T0 + 5000, STALL_MS);
    assert_eq!(wait.target_ms(), T0 + 5000);
    // Sleeps are the gap, capped at a second.
    assert_eq!(wait.poll(T0, 0).unwrap(), Some(1000));
    assert_eq!(wait.poll(T0 + 4999, 100).unwrap(), Some(1));
    // A reading that keeps changing never stalls.
    for i in 0..10 {
        assert!(wait.poll(T0 + 4990 + i, 10_000 * i).unwrap().is_some());
    }
    // One reading for STALL_MS does.
    let mut wait = ClockWait::new(T0 + 10, STALL_MS);
    assert_eq!(wait.poll(T0, 50).unwrap(), Some(10));
    assert_eq!(wait.poll(T0, 50 + STALL_MS - 1).unwrap(), Some(10));
    match wait.poll(T0, 50 + STALL_MS) {
        Err(Error::ClockStalled {
            reading_ms,
            waiting_for_ms,
            stalled_for,
        }) => {
            assert_eq!((reading_ms, waiting_for_ms), (T0, T0 + 10));
            assert_eq!(stalled_for, "2000 ms");
        }
        other => panic!("{other:?}"),
    }
    // Reached: done, whatever the monotonic time.
    assert_eq!(wait.poll(T0 + 10, u64::MAX).unwrap(), None);
    assert_eq!(ClockWait::new(5, 1).poll(9, 0).unwrap(), None);
}
