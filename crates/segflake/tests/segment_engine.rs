//! The sans-I/O segment engine, driven by hand the way the Node and WASM bindings drive it.

use segflake::segment::SEGMENT_DURATION_MS;
use segflake::{
    Allocation, ErrorKind, MemoryStore, SegmentEngine, SegmentOptions, SegmentStore, StoreFailure,
};

fn options(step: u64) -> SegmentOptions {
    SegmentOptions::default().with_step(step)
}

/// Runs any wanted fetch against `store` at `now_ms`; returns whether one ran.
fn pump(engine: &SegmentEngine, store: &dyn SegmentStore, now_ms: u64) -> bool {
    if !engine.wants_fetch() {
        return false;
    }
    match engine.begin_fetch(now_ms) {
        Some(req) => {
            let result = store.allocate(engine.tag(), req.step);
            let _ = engine.complete_fetch(now_ms, result);
            true
        }
        None => false,
    }
}

/// Takes `n` IDs, fetching synchronously whenever the engine asks.
fn take(engine: &SegmentEngine, store: &dyn SegmentStore, n: usize, now_ms: u64) -> Vec<u64> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        match engine.try_next() {
            Some(id) => out.push(id),
            None => assert!(
                pump(engine, store, now_ms),
                "engine empty but wants no fetch"
            ),
        }
        pump(engine, store, now_ms);
    }
    out
}

#[test]
fn fresh_leaf_row_gives_1_to_2000_then_2001_to_4000() {
    let store = MemoryStore::new();
    let engine = SegmentEngine::new("order", &options(2000)).unwrap();
    assert!(engine.wants_fetch(), "a new engine wants its first fetch");
    assert_eq!(engine.try_next(), None);
    let ids = take(&engine, &store, 4000, 0);
    assert_eq!(ids, (1..=4000).collect::<Vec<u64>>());
    // Both allocations used the configured step, as Leaf's first two do.
    // The third request (prefetched at 10% of the second segment) doubled the step:
    // both segments lasted well under Leaf's 15 minutes.
    assert_eq!(store.max_id("order"), Some(8001));
}

#[test]
fn a_table_leaf_already_advanced_continues_above_it() {
    let store = MemoryStore::new();
    store.set_max_id("order", 123_456_789);
    let engine = SegmentEngine::new("order", &options(1000)).unwrap();
    let ids = take(&engine, &store, 1500, 0);
    assert_eq!(ids[0], 123_456_789);
    assert_eq!(*ids.last().unwrap(), 123_456_789 + 1499);
}

#[test]
fn prefetch_starts_when_ten_percent_is_used() {
    let store = MemoryStore::new();
    let engine = SegmentEngine::new("t", &options(100)).unwrap();
    assert!(pump(&engine, &store, 0));
    for i in 0..10 {
        assert!(!engine.wants_fetch(), "fetch wanted after only {i} IDs");
        assert_eq!(engine.try_next(), Some(1 + i));
    }
    // The 11th ID crosses the trigger (10 of 100 used).
    assert_eq!(engine.try_next(), Some(11));
    assert!(engine.wants_fetch());
    let req = engine.begin_fetch(0).expect("a fetch request");
    assert_eq!(req.step, 100);
    assert!(
        engine.begin_fetch(0).is_none(),
        "at most one fetch in flight"
    );
    engine
        .complete_fetch(5, store.allocate("t", req.step))
        .unwrap();
    let s = engine.stats(5);
    assert!(s.next_ready);
    assert_eq!((s.next_start, s.next_end), (101, 201));
    assert_eq!((s.current_start, s.current_end, s.position), (1, 101, 12));
    assert_eq!(s.last_fetch_latency_ms, Some(5));
}

#[test]
fn prefetch_percent_100_fetches_only_when_used_up() {
    let store = MemoryStore::new();
    let o = options(10).with_prefetch_percent(100);
    let engine = SegmentEngine::new("t", &o).unwrap();
    assert!(pump(&engine, &store, 0));
    for _ in 0..10 {
        assert!(engine.try_next().is_some());
        assert!(!engine.wants_fetch());
    }
    assert_eq!(engine.try_next(), None);
    assert!(engine.wants_fetch());
}

#[test]
fn dynamic_step_follows_leaf() {
    let store = MemoryStore::new();
    let o = options(1000).with_prefetch_percent(100).with_max_step(8000);
    let engine = SegmentEngine::new("t", &o).unwrap();
    let mut now = 0;
    let mut steps = Vec::new();
    let run = |engine: &SegmentEngine, now: u64, steps: &mut Vec<u64>| {
        while engine.try_next().is_some() {}
        let req = engine.begin_fetch(now).unwrap();
        steps.push(req.step);
        engine
            .complete_fetch(now, store.allocate("t", req.step))
            .unwrap();
    };
    // Fast segments: 1000, 1000 (Leaf's first two), then doubling up to max_step.
    for _ in 0..6 {
        run(&engine, now, &mut steps);
        now += 60_000;
    }
    assert_eq!(steps, [1000, 1000, 2000, 4000, 8000, 8000]);
    // A segment lasting 20 minutes keeps the step; 40 minutes halves it, down to `step`.
    now += 20 * 60_000 - 60_000;
    run(&engine, now, &mut steps);
    assert_eq!(steps[6], 8000);
    for _ in 0..4 {
        now += 2 * SEGMENT_DURATION_MS + 1;
        run(&engine, now, &mut steps);
    }
    assert_eq!(&steps[7..], [4000, 2000, 1000, 1000]);
}

#[test]
fn fixed_step_when_dynamic_step_is_off() {
    let store = MemoryStore::new();
    let o = options(50).with_dynamic_step(false);
    let engine = SegmentEngine::new("t", &o).unwrap();
    take(&engine, &store, 1000, 0);
    assert_eq!(engine.stats(0).step, 50);
}

#[test]
fn every_bad_range_is_refused_and_never_issued() {
    let engine = SegmentEngine::new("t", &options(100)).unwrap();
    let req = engine.begin_fetch(0).unwrap();
    engine
        .complete_fetch(0, Ok(Allocation::new(1101, req.step)))
        .unwrap();
    let cases: [(Allocation, &str); 5] = [
        (Allocation::new(1101, 100), "overlaps"), // the same range again
        (Allocation::new(1050, 100), "overlaps"), // overlapping
        (Allocation::new(500, 100), "precedes"),  // earlier
        (Allocation::new(5000, 0), "step 0"),
        (Allocation::new(99, 100), "below step"),
    ];
    for (round, (alloc, words)) in cases.iter().enumerate() {
        while engine.try_next().is_some() {}
        let req = engine
            .begin_fetch(round as u64)
            .expect("empty engine retries at once");
        let err = engine
            .complete_fetch(round as u64, Ok(Allocation::new(alloc.max_id, alloc.step)))
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::StoreContractViolation, "{alloc:?}");
        let msg = err.to_string();
        assert!(
            msg.contains("overlaps or precedes") || msg.contains(words),
            "{msg}"
        );
        assert_eq!(engine.try_next(), None, "nothing from a refused range");
        let _ = req;
    }
    let too_big = Allocation::new(u64::MAX, 100);
    engine.begin_fetch(9).unwrap();
    let err = engine.complete_fetch(9, Ok(too_big)).unwrap_err();
    assert!(err.to_string().contains("i64::MAX"), "{err}");
    let s = engine.stats(10);
    assert_eq!(s.failures, 6);
    assert_eq!(s.consecutive_failures, 6);
    assert_eq!(s.issued, 100);
    let exhausted = engine.exhausted_error(10);
    assert_eq!(exhausted.kind(), ErrorKind::SegmentsExhausted);
    assert!(exhausted.to_string().contains("i64::MAX"), "{exhausted}");
    // A correct range above everything is accepted again.
    engine.begin_fetch(11).unwrap();
    engine
        .complete_fetch(11, Ok(Allocation::new(1201, 100)))
        .unwrap();
    assert_eq!(engine.try_next(), Some(1101));
}

#[test]
fn a_range_at_the_top_of_i64_is_usable_to_its_last_id() {
    let engine = SegmentEngine::new("t", &options(10)).unwrap();
    engine.begin_fetch(0).unwrap();
    let max = i64::MAX as u64;
    engine
        .complete_fetch(0, Ok(Allocation::new(max, 3)))
        .unwrap();
    assert_eq!(engine.try_next(), Some(max - 3));
    assert_eq!(engine.try_next(), Some(max - 2));
    assert_eq!(engine.try_next(), Some(max - 1));
    assert_eq!(engine.try_next(), None);
    assert_eq!(engine.try_next(), None);
}

#[test]
fn non_contiguous_ranges_skip_the_gap() {
    let engine = SegmentEngine::new("t", &options(5)).unwrap();
    engine.begin_fetch(0).unwrap();
    engine.complete_fetch(0, Ok(Allocation::new(6, 5))).unwrap();
    assert_eq!(engine.try_next(), Some(1));
    engine.begin_fetch(0).unwrap();
    // Another process took 6..=100.
    engine
        .complete_fetch(0, Ok(Allocation::new(106, 5)))
        .unwrap();
    let rest: Vec<u64> = std::iter::from_fn(|| engine.try_next()).collect();
    assert_eq!(rest, [2, 3, 4, 5, 101, 102, 103, 104, 105]);
}

#[test]
fn store_failures_are_counted_and_backed_off() {
    let engine = SegmentEngine::new("t", &options(100)).unwrap();
    let req = engine.begin_fetch(0).unwrap();
    let err = engine.complete_fetch(3, Err("db down".into())).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Store);
    assert_eq!(engine.failure_count(), 1);
    // Empty: the next call retries at once.
    assert!(engine.wants_fetch());
    let req2 = engine.begin_fetch(4).expect("immediate retry when empty");
    assert_eq!(req2, req);
    engine
        .complete_fetch(5, Ok(Allocation::new(101, 100)))
        .unwrap();
    for _ in 0..20 {
        engine.try_next().unwrap();
    }
    let req3 = engine.begin_fetch(100).expect("prefetch");
    assert_eq!(req3.step, 100);
    engine
        .complete_fetch(110, Err("db down again".into()))
        .unwrap_err();
    // IDs remain: the prefetch waits for the backoff (1000 ms) before retrying.
    assert!(engine.try_next().is_some());
    assert!(engine.wants_fetch());
    assert!(engine.begin_fetch(500).is_none());
    assert!(engine.begin_fetch(1109).is_none());
    assert!(engine.begin_fetch(1110).is_some());
    let s = engine.stats(1110);
    assert_eq!(s.last_error.as_deref(), Some("store error: db down again"));
    assert!(s.fetch_in_flight);
}

#[test]
fn completing_without_a_request_is_refused() {
    let engine = SegmentEngine::new("t", &options(100)).unwrap();
    let err = engine
        .complete_fetch(0, Ok(Allocation::new(101, 100)))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(engine.try_next(), None);
}

#[test]
fn batches_span_segments_and_stay_dense() {
    let store = MemoryStore::new();
    let engine = SegmentEngine::new("t", &options(100)).unwrap();
    pump(&engine, &store, 0);
    let mut out = vec![0u64; 250];
    let mut filled = 0;
    while filled < out.len() {
        let n = engine.try_next_batch(&mut out[filled..]);
        filled += n;
        pump(&engine, &store, 0);
    }
    assert_eq!(out, (1..=250).collect::<Vec<u64>>());
}

#[test]
fn stats_report_runway_from_the_consumption_rate() {
    let store = MemoryStore::new();
    let o = options(10_000).with_dynamic_step(false);
    let engine = SegmentEngine::new("t", &o).unwrap();
    assert_eq!(engine.stats(0).runway_seconds, None);
    pump(&engine, &store, 0);
    engine.stats(0);
    // 500 IDs per second for 4 seconds: one every 2 ms, stats polled every second.
    for k in 1..=2000u64 {
        let now = k * 2;
        engine.try_next().unwrap();
        pump(&engine, &store, now);
        if now % 1000 == 0 {
            engine.stats(now);
        }
    }
    let s = engine.stats(4000);
    assert_eq!(s.issued, 2000);
    assert!(
        (s.ids_per_second - 500.0).abs() < 1.0,
        "{}",
        s.ids_per_second
    );
    // Current remainder 8000 plus a ready next segment of 10000 at 500/s.
    assert!(s.next_ready);
    let runway = s.runway_seconds.unwrap();
    assert!((runway - 36.0).abs() < 0.1, "{runway}");
}

#[test]
fn close_stops_issuing() {
    let store = MemoryStore::new();
    let engine = SegmentEngine::new("t", &options(100)).unwrap();
    pump(&engine, &store, 0);
    assert!(engine.try_next().is_some());
    engine.close();
    assert!(engine.is_closed());
    assert_eq!(engine.try_next(), None);
    assert_eq!(engine.try_next_batch(&mut [0; 4]), 0);
    assert!(!engine.wants_fetch());
    assert_eq!(engine.exhausted_error(0).kind(), ErrorKind::Closed);
}

#[test]
fn a_fetch_completing_after_close_is_not_issued() {
    // prefetch_percent 0: installing crosses the trigger at once, the path that must not
    // reopen the fast path.
    let o = options(10).with_prefetch_percent(0);
    let engine = SegmentEngine::new("t", &o).unwrap();
    engine.begin_fetch(0).unwrap();
    engine.close();
    engine
        .complete_fetch(1, Ok(Allocation::new(11, 10)))
        .unwrap();
    assert_eq!(engine.try_next(), None);
    assert_eq!(engine.try_next_batch(&mut [0; 3]), 0);
}

#[test]
fn bad_tags_and_options_are_refused_with_the_allowed_range() {
    for tag in ["", "has space", "tab\t", &"x".repeat(129)] {
        let err = SegmentEngine::new(tag, &SegmentOptions::default()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{tag:?}");
    }
    let cases: [(SegmentOptions, &str); 6] = [
        (options(0), "step"),
        (options(100).with_max_step(10), "step"),
        (options(1).with_prefetch_percent(101), "0..=100"),
        (options(1).with_wait_timeout_ms(0), "wait_timeout_ms"),
        (options(1).with_fetch_threads(0), "fetch_threads"),
        (options(1).with_max_step(u64::MAX), "max_step"),
    ];
    for (o, words) in cases {
        let err = SegmentEngine::new("t", &o).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains(words), "{err}");
    }
}

#[test]
fn many_threads_on_one_engine_never_share_an_id() {
    let store = MemoryStore::new();
    let engine = SegmentEngine::new("t", &options(64)).unwrap();
    let threads = 4;
    let per = 50_000;
    let all: Vec<Vec<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::with_capacity(per);
                    while mine.len() < per {
                        if let Some(id) = engine.try_next() {
                            mine.push(id);
                        }
                        pump(&engine, &store, 0);
                    }
                    mine
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for mine in &all {
        assert!(mine.windows(2).all(|w| w[0] < w[1]), "per-thread order");
    }
    let mut ids: Vec<u64> = all.concat();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate IDs");
    let max = store.max_id("t").unwrap();
    assert!(ids.iter().all(|&id| id >= 1 && id < max));
}

/// Leaf's `leaf_alloc.step`: a store that reports the tag's own step makes it the start
/// and floor of the dynamic step in place of the generator's `step`.
#[test]
fn the_tag_step_a_store_reports_replaces_the_configured_step() {
    let engine = SegmentEngine::new("t", &options(1000)).unwrap();
    let mut max_id = 1;
    let mut fetch = |now: u64, tag_step: Option<u64>| {
        let req = engine.begin_fetch(now).expect("a fetch");
        // Like the packaged adapters: the first allocation uses the row's own step.
        let step = if max_id == 1 { 5000 } else { req.step };
        max_id += step;
        let a = Allocation::new(max_id, step);
        let a = tag_step.map_or(a, |t| a.with_tag_step(t));
        engine.complete_fetch(now, Ok(a)).unwrap();
        while engine.try_next().is_some() {}
        step
    };
    assert_eq!(fetch(0, Some(5000)), 5000);
    // The second fetch uses the tag's step (Leaf's init), not the configured 1000.
    assert_eq!(fetch(1, Some(5000)), 5000);
    // Segments lasting under 15 minutes double it...
    assert_eq!(fetch(2, Some(5000)), 10_000);
    // ...and long ones halve it, never below the tag's step.
    let later = 2 + 3 * SEGMENT_DURATION_MS;
    assert_eq!(fetch(later, Some(5000)), 5000);
    assert_eq!(fetch(later + 3 * SEGMENT_DURATION_MS, Some(5000)), 5000);
    // An operator raising the row's step raises the floor from the next answer on.
    let t = later + 6 * SEGMENT_DURATION_MS;
    assert_eq!(fetch(t, Some(8000)), 5000);
    assert_eq!(fetch(t + 3 * SEGMENT_DURATION_MS, Some(8000)), 8000);
    assert_eq!(engine.stats(t).step, 8000);
}

#[test]
fn a_tag_step_of_zero_is_a_contract_violation() {
    let engine = SegmentEngine::new("t", &options(100)).unwrap();
    engine.begin_fetch(0).unwrap();
    let a = Allocation::new(101, 100).with_tag_step(0);
    let err = engine.complete_fetch(0, Ok(a)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StoreContractViolation);
    assert_eq!(engine.try_next(), None);
}

/// Leaf answers "key not exists" for a tag without a row: callers get `UnknownTag`, and
/// the store is not asked again before `retry_backoff_ms`.
#[test]
fn an_unknown_tag_fails_with_its_own_error_and_is_retried_after_the_backoff() {
    let engine = SegmentEngine::new("nope", &options(100)).unwrap();
    engine.begin_fetch(0).unwrap();
    let err = engine
        .complete_fetch(0, Err(StoreFailure::UnknownTag))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnknownTag);
    assert!(err.to_string().contains("\"nope\""), "{err}");
    assert_eq!(engine.exhausted_error(1).kind(), ErrorKind::UnknownTag);
    assert!(
        engine.begin_fetch(500).is_none(),
        "asked again within the backoff"
    );
    assert_eq!(engine.exhausted_error(500).kind(), ErrorKind::UnknownTag);
    // Once the row exists, the retry after the backoff finds it.
    engine.begin_fetch(1000).expect("retry after the backoff");
    engine
        .complete_fetch(1000, Ok(Allocation::new(101, 100)))
        .unwrap();
    assert_eq!(engine.try_next(), Some(1));
    assert_eq!(
        engine.stats(1000).last_error.as_deref(),
        Some("the store has no such tag")
    );
}

#[test]
fn a_store_call_past_its_deadline_fails_the_fetch() {
    let o = options(100).with_store_timeout_ms(500);
    let run = |expire: &dyn Fn(&SegmentEngine, u64) -> bool| {
        let engine = SegmentEngine::new("order", &o).unwrap();
        let req = engine.begin_fetch(1000).unwrap();
        assert_eq!(engine.fetch_deadline_ms(), Some(1500));
        // Before the deadline, the engine's clock keeps it in flight ...
        let early = expire(&engine, 1499);
        (engine, req, early)
    };
    let (engine, _, early) = run(&|e, now| e.expire_overdue_fetch(now));
    assert!(!early);
    assert!(engine.fetch_in_flight());
    // ... at it, the fetch fails and names the option.
    assert!(engine.expire_overdue_fetch(1500));
    assert!(!engine.fetch_in_flight());
    assert!(!engine.expire_overdue_fetch(1600), "nothing in flight");
    assert_eq!(engine.failure_count(), 1);
    let cause = engine.stats(1500).last_error.unwrap();
    assert!(cause.contains("store_timeout_ms"), "{cause}");
    assert!(cause.contains("500 ms"), "{cause}");

    // A driver's own timer fails it whatever the engine's clock says, with the same cause.
    let (engine, _, early) = run(&|e, now| e.time_out_fetch_now(now));
    assert!(early);
    assert!(!engine.fetch_in_flight());
    assert_eq!(engine.stats(1500).last_error.unwrap(), cause);
    assert_eq!(
        engine.exhausted_error(1500).kind(),
        ErrorKind::SegmentsExhausted
    );
    // The next request asks the store again (after the backoff).
    assert!(!engine.time_out_fetch_now(1600), "nothing in flight");
}
