//! The std driver: background fetches, bounded waits, failing and slow stores, threads.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use segflake::{
    Allocation, ErrorKind, FnStore, MemoryStore, SegmentGenerator, SegmentOptions, SegmentStore,
    StoreFailure,
};

fn options(step: u64) -> SegmentOptions {
    SegmentOptions::default().with_step(step)
}

/// A memory store that can be switched off, slowed down, and counts its calls.
struct Flaky {
    inner: MemoryStore,
    down: AtomicBool,
    delay_ms: AtomicU64,
    calls: AtomicU64,
}

impl Flaky {
    fn new() -> Arc<Flaky> {
        Arc::new(Flaky {
            inner: MemoryStore::new(),
            down: AtomicBool::new(false),
            delay_ms: AtomicU64::new(0),
            calls: AtomicU64::new(0),
        })
    }
}

impl SegmentStore for Flaky {
    fn allocate(&self, tag: &str, step: u64) -> Result<Allocation, StoreFailure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let delay = self.delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            std::thread::sleep(Duration::from_millis(delay));
        }
        if self.down.load(Ordering::SeqCst) {
            return Err("connection refused".into());
        }
        self.inner.allocate(tag, step)
    }
}

#[test]
fn fresh_row_semantics_through_the_driver() {
    let generator = SegmentGenerator::new(MemoryStore::new(), options(2000)).unwrap();
    let order = generator.tag("order").unwrap();
    let ids: Vec<u64> = (0..4000).map(|_| order.next_id().unwrap()).collect();
    assert_eq!(ids, (1..=4000).collect::<Vec<u64>>());
    let stats = generator.stats("order").unwrap();
    assert_eq!(stats.tag, "order");
    assert!(stats.fetches >= 2);
    assert_eq!(stats.failures, 0);
}

#[test]
fn tags_are_independent_and_lookups_match_handles() {
    let generator = SegmentGenerator::new(MemoryStore::new(), options(10)).unwrap();
    assert_eq!(generator.next_id("a").unwrap(), 1);
    assert_eq!(generator.next_id("b").unwrap(), 1);
    let a = generator.tag("a").unwrap();
    assert_eq!(a.next_id().unwrap(), 2);
    assert_eq!(generator.next_id("a").unwrap(), 3);
    assert_eq!(generator.tags(), ["a", "b"]);
    let err = generator.stats("nope").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = generator.next_id("bad tag").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn batches_are_dense_and_increasing() {
    let generator = SegmentGenerator::new(MemoryStore::new(), options(100)).unwrap();
    let t = generator.tag("t").unwrap();
    let v = t.next_ids_vec(1234).unwrap();
    assert_eq!(v, (1..=1234).collect::<Vec<u64>>());
    assert_eq!(t.next_id().unwrap(), 1235);
    assert_eq!(
        t.next_ids_vec(0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[test]
fn many_threads_on_one_tag_get_no_duplicates() {
    let generator = SegmentGenerator::new(MemoryStore::new(), options(500)).unwrap();
    let threads = 8;
    let per = 40_000;
    let all: Vec<Vec<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|i| {
                let generator = &generator;
                s.spawn(move || {
                    let t = generator.tag("shared").unwrap();
                    let mut mine = Vec::with_capacity(per);
                    while mine.len() < per {
                        if i % 2 == 0 {
                            mine.push(t.next_id().unwrap());
                        } else {
                            mine.extend(t.next_ids_vec(7).unwrap());
                        }
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
    let total: usize = all.iter().map(Vec::len).sum();
    let unique: HashSet<u64> = all.into_iter().flatten().collect();
    assert_eq!(unique.len(), total, "duplicate IDs across threads");
}

#[test]
fn a_slow_store_does_not_slow_next_id() {
    // 50 ms per allocation; a steady ~100k IDs/s load. Segments are prefetched at 10%,
    // so callers should never wait for the store.
    let store = Flaky::new();
    store.delay_ms.store(50, Ordering::SeqCst);
    let generator = SegmentGenerator::new(Arc::clone(&store), options(20_000)).unwrap();
    let t = generator.tag("slow").unwrap();
    t.next_id().unwrap(); // the first segment: one wait for the store
    let mut lat = Vec::with_capacity(200_000);
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(1500) {
        for _ in 0..100 {
            let t0 = Instant::now();
            t.next_id().unwrap();
            lat.push(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    lat.sort_unstable();
    let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    let stats = t.stats();
    eprintln!(
        "slow store: {} calls, p50 {:?} p99 {:?} p99.9 {:?} max {:?}; {} fetches",
        lat.len(),
        p(0.5),
        p(0.99),
        p(0.999),
        lat[lat.len() - 1],
        stats.fetches
    );
    assert!(stats.fetches >= 3, "the load crossed several segments");
    assert_eq!(stats.failures, 0);
    // Loose: far below the store's 50 ms, so nobody waited on the store.
    assert!(p(0.999) < Duration::from_millis(10), "p99.9 {:?}", p(0.999));
    assert!(stats.last_fetch_latency_ms.unwrap() >= 50);
}

#[test]
fn a_failing_store_drains_buffers_then_exhausts_within_the_bound_then_recovers() {
    let store = Flaky::new();
    let o = options(1000)
        .with_wait_timeout_ms(300)
        .with_dynamic_step(false);
    let generator = SegmentGenerator::new(Arc::clone(&store), o).unwrap();
    let t = generator.tag("t").unwrap();
    // Fill both buffers.
    let mut last = 0;
    for _ in 0..200 {
        last = t.next_id().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while !t.stats().next_ready {
        assert!(Instant::now() < deadline, "prefetch never arrived");
        std::thread::sleep(Duration::from_millis(1));
    }
    store.down.store(true, Ordering::SeqCst);
    // Everything buffered (the rest of segment 1 and all of segment 2) still flows.
    let mut served = 0;
    let err = loop {
        match t.next_id() {
            Ok(id) => {
                assert!(id > last);
                last = id;
                served += 1;
            }
            Err(e) => break e,
        }
    };
    assert_eq!(
        served, 1800,
        "all buffered IDs were served while the store was down"
    );
    assert_eq!(err.kind(), ErrorKind::SegmentsExhausted);
    assert!(err.to_string().contains("connection refused"), "{err}");
    // Every further call retries the store and fails within the bound, never hangs.
    for _ in 0..3 {
        let calls = store.calls.load(Ordering::SeqCst);
        let t0 = Instant::now();
        let err = t.next_id().unwrap_err();
        assert!(
            t0.elapsed() < Duration::from_millis(300 + 500),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(err.kind(), ErrorKind::SegmentsExhausted);
        assert!(
            store.calls.load(Ordering::SeqCst) > calls,
            "the call retried the store"
        );
    }
    let s = t.stats();
    assert!(s.failures >= 3);
    assert_eq!(s.remaining, 0);
    store.down.store(false, Ordering::SeqCst);
    let id = t.next_id().unwrap();
    assert!(id > last, "recovered above everything issued before");
    assert_eq!(t.stats().consecutive_failures, 0);
}

#[test]
fn a_hung_store_gives_segments_exhausted_not_a_hang() {
    let store = Flaky::new();
    store.delay_ms.store(3000, Ordering::SeqCst);
    let o = options(10).with_wait_timeout_ms(200);
    let generator = SegmentGenerator::new(Arc::clone(&store), o).unwrap();
    let t0 = Instant::now();
    let err = generator.next_id("t").unwrap_err();
    let waited = t0.elapsed();
    assert_eq!(err.kind(), ErrorKind::SegmentsExhausted);
    assert!(waited >= Duration::from_millis(190) && waited < Duration::from_millis(1500));
    assert!(err.to_string().contains("has not answered"), "{err}");
    // Closing does not wait for the hung call longer than its patience.
    let t1 = Instant::now();
    drop(generator);
    assert!(
        t1.elapsed() < Duration::from_millis(2500),
        "{:?}",
        t1.elapsed()
    );
}

#[test]
fn overlapping_ranges_are_refused_every_time() {
    // A broken store that always returns the same range.
    let calls = Arc::new(AtomicU64::new(0));
    let c = Arc::clone(&calls);
    let store = FnStore(move |_: &str, step: u64| {
        c.fetch_add(1, Ordering::SeqCst);
        Ok::<_, String>(Allocation::new(2001, step.min(2000)))
    });
    let o = options(2000).with_wait_timeout_ms(300);
    let generator = SegmentGenerator::new(store, o).unwrap();
    let t = generator.tag("t").unwrap();
    let mut ids = Vec::new();
    let mut refusals = 0;
    while refusals < 5 {
        match t.next_id() {
            Ok(id) => ids.push(id),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::SegmentsExhausted);
                assert!(e.to_string().contains("contract violation"), "{e}");
                refusals += 1;
            }
        }
    }
    assert_eq!(
        ids,
        (1..=2000).collect::<Vec<u64>>(),
        "only the first range"
    );
    assert!(t.stats().failures >= 5);
    assert!(calls.load(Ordering::SeqCst) >= 6);
}

#[test]
fn a_panicking_store_is_a_failed_fetch() {
    let store = FnStore(|_: &str, _: u64| -> Result<Allocation, String> { panic!("boom") });
    let o = options(10).with_wait_timeout_ms(500);
    let generator = SegmentGenerator::new(store, o).unwrap();
    let err = generator.next_id("t").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SegmentsExhausted);
    assert!(err.to_string().contains("panicked: boom"), "{err}");
    // The fetch thread survived: the next call is answered (with the same failure).
    let err = generator.next_id("t").unwrap_err();
    assert!(err.to_string().contains("boom"), "{err}");
}

#[test]
fn close_wakes_waiters_and_refuses_further_calls() {
    let store = Flaky::new();
    store.delay_ms.store(400, Ordering::SeqCst);
    let o = options(10).with_wait_timeout_ms(5000);
    let generator = Arc::new(SegmentGenerator::new(Arc::clone(&store), o).unwrap());
    let t = generator.tag("t").unwrap();
    let waiter = std::thread::spawn(move || {
        let t0 = Instant::now();
        (t.next_id(), t0.elapsed())
    });
    std::thread::sleep(Duration::from_millis(50));
    generator.close();
    let (result, waited) = waiter.join().unwrap();
    assert_eq!(result.unwrap_err().kind(), ErrorKind::Closed);
    assert!(waited < Duration::from_millis(2000), "{waited:?}");
    assert!(generator.is_closed());
    assert_eq!(
        generator.next_id("t").unwrap_err().kind(),
        ErrorKind::Closed
    );
    assert_eq!(generator.tag("u").unwrap_err().kind(), ErrorKind::Closed);
}

#[test]
fn taking_through_the_engine_with_poll_fetch_keeps_segments_coming() {
    let generator = SegmentGenerator::new(MemoryStore::new(), options(50)).unwrap();
    let t = generator.tag("t").unwrap();
    assert_eq!(t.next_id().unwrap(), 1);
    let mut ids = vec![1];
    let deadline = Instant::now() + Duration::from_secs(5);
    while ids.len() < 500 {
        let mut buf = [0u64; 7];
        let n = t.engine().try_next_batch(&mut buf);
        ids.extend_from_slice(&buf[..n]);
        t.poll_fetch();
        assert!(Instant::now() < deadline, "segments stopped coming");
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(ids[..500], (1..=500).collect::<Vec<u64>>()[..]);
}

#[test]
fn try_next_id_never_waits() {
    let store = Flaky::new();
    store.delay_ms.store(200, Ordering::SeqCst);
    let generator = SegmentGenerator::new(Arc::clone(&store), options(10)).unwrap();
    let t0 = Instant::now();
    assert_eq!(generator.try_next_id("t").unwrap(), None);
    assert!(t0.elapsed() < Duration::from_millis(100));
    let deadline = Instant::now() + Duration::from_secs(3);
    let id = loop {
        if let Some(id) = generator.try_next_id("t").unwrap() {
            break id;
        }
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(id, 1);
}

#[test]
fn several_fetch_threads_serve_several_tags() {
    let store = Flaky::new();
    store.delay_ms.store(100, Ordering::SeqCst);
    let o = options(10).with_fetch_threads(4);
    let generator = SegmentGenerator::new(Arc::clone(&store), o).unwrap();
    let t0 = Instant::now();
    let handles: Vec<_> = (0..4)
        .map(|i| generator.tag(&format!("t{i}")).unwrap())
        .collect();
    for h in &handles {
        assert_eq!(h.next_id().unwrap(), 1);
    }
    // Four first fetches of 100 ms ran side by side, not one after another.
    assert!(
        t0.elapsed() < Duration::from_millis(390),
        "{:?}",
        t0.elapsed()
    );
}

/// A store call that never returns holds neither the tag nor the fetch threads: after
/// `store_timeout_ms` it counts as failed (the cause says so), a fresh thread serves the
/// next fetch, and the hung call's late answer never yields a duplicate.
#[test]
fn a_hung_store_call_times_out_and_the_tag_recovers() {
    let (release, hold) = std::sync::mpsc::channel::<()>();
    let hold = std::sync::Mutex::new(Some(hold));
    let memory = Arc::new(MemoryStore::new());
    let store = {
        let memory = Arc::clone(&memory);
        FnStore(move |tag: &str, step: u64| {
            let first_call = hold.lock().unwrap().take();
            if let Some(rx) = first_call {
                let _ = rx.recv(); // the first call hangs until released
            }
            memory.allocate(tag, step)
        })
    };
    let g = SegmentGenerator::new(
        store,
        SegmentOptions::default()
            .with_step(10)
            .with_wait_timeout_ms(5000)
            .with_store_timeout_ms(150),
    )
    .unwrap();
    // The caller waits for the store call's timeout, not for its own longer bound.
    let asked = Instant::now();
    let timed_out = g.next_id("order").unwrap_err();
    let waited = asked.elapsed();
    assert!(
        waited >= Duration::from_millis(140) && waited < Duration::from_millis(2000),
        "{waited:?}"
    );
    assert_eq!(timed_out.kind(), ErrorKind::SegmentsExhausted);
    assert!(
        timed_out.to_string().contains(
            "the store did not answer allocate(\"order\", 10) within 150 ms (store_timeout_ms)"
        ),
        "{timed_out}"
    );
    let mut seen = HashSet::new();
    let start = Instant::now();
    while seen.len() < 30 {
        match g.next_id("order") {
            Ok(id) => assert!(seen.insert(id), "duplicate {id}"),
            Err(e) => assert!(start.elapsed() < Duration::from_secs(5), "no recovery: {e}"),
        }
    }
    release.send(()).unwrap();
    for _ in 0..100 {
        if let Ok(id) = g.next_id("order") {
            assert!(seen.insert(id), "duplicate {id} after the late answer");
        }
    }
    assert!(g.stats("order").unwrap().failures >= 1);
}

/// A tag the store does not have fails at once with `UnknownTag`, and repeated calls do
/// not reach the store again before `retry_backoff_ms`.
#[test]
fn unknown_tags_fail_fast_without_hammering_the_store() {
    let calls = Arc::new(AtomicU64::new(0));
    let c = Arc::clone(&calls);
    let store = FnStore(move |_: &str, _: u64| {
        c.fetch_add(1, Ordering::SeqCst);
        Err::<Allocation, _>(StoreFailure::UnknownTag)
    });
    let o = SegmentOptions::default().with_retry_backoff_ms(60_000);
    let generator = SegmentGenerator::new(store, o).unwrap();
    let started = Instant::now();
    for _ in 0..100 {
        let err = generator.next_id("missing").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::UnknownTag, "{err}");
    }
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    generator.close();
}
