//! The async leased snowflake over the core's lease engine: start-up, renewal, registry
//! failure and recovery, close and release, cancellation, drops, waiting for the clock.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use segflake::{
    Clock, ErrorKind, Layout, LeaseOptions, ManualClock, MemoryRegistry, Preset, Registry,
    RegistryCall, SnowflakeOptions, SystemClock, Value,
};
use segflake_tokio::{AsyncRegistry, Blocking, LeasedSnowflake};

fn layout() -> Layout {
    Layout::preset(Preset::Twitter).unwrap()
}

fn now_ms() -> u64 {
    SystemClock.now_ms()
}

/// Options for worker ID `worker`: the lease is generous, so a busy machine never lets it
/// lapse by accident.
fn lease(worker: u64) -> LeaseOptions {
    LeaseOptions::default()
        .with_preferred_worker_id(Some(worker))
        .with_lease_ttl_ms(6_000)
        .with_mark_ahead_ms(3_000)
        .with_clock_skew_allowance_ms(0)
}

fn snowflake() -> SnowflakeOptions {
    SnowflakeOptions::new(0).with_max_drift_ms(0)
}

/// A registry whose worker IDs 0..16 were used (and released) a minute ago, so a claim
/// starts at once.
fn marked() -> Arc<MemoryRegistry> {
    let registry = Arc::new(MemoryRegistry::new());
    for w in 0..16 {
        registry.set_mark(w, now_ms() - 60_000);
    }
    registry
}

/// A registry the test can take down.
struct Flaky {
    inner: Arc<MemoryRegistry>,
    down: AtomicBool,
    calls: AtomicU64,
}

impl AsyncRegistry for Flaky {
    async fn call(&self, call: &RegistryCall) -> Result<Value, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            return Err("the registry is down".into());
        }
        self.inner.call(call)
    }
}

/// Polls `f` every 10 ms until it returns `Some`, at most `secs` seconds.
async fn eventually<T>(secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "not within {secs} s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

both_runtimes!(
    start_issue_close_releases,
    start_waits_until_the_clock_passes_the_mark,
    renewals_keep_the_lease,
    registry_failure_then_recovery,
    a_cancelled_start_releases_its_claim,
    next_id_awaits_the_clock_and_survives_cancellation,
    next_ids_fills_runs_and_awaits_the_clock_between_them,
    a_generator_dropped_inside_a_task_leaves_the_lease_to_expire,
    two_generators_on_one_registry_never_share_a_worker_id,
    a_shared_dyn_registry_runs_through_blocking,
);

/// A registry held as `Arc<dyn Registry>` (what `segflake_backends::registry(url, …)`
/// returns) drives a lease through `Blocking::from_arc`, and close releases it.
async fn a_shared_dyn_registry_runs_through_blocking() {
    let memory = marked();
    let registry: Arc<dyn Registry> = Arc::clone(&memory) as Arc<dyn Registry>;
    let generator = LeasedSnowflake::start(
        layout(),
        snowflake(),
        lease(5),
        Blocking::from_arc(registry),
        Some("dyn".into()),
    )
    .await
    .unwrap();
    assert_eq!(generator.worker_id(), 5);
    let (a, b) = (
        generator.next_id().await.unwrap(),
        generator.next_id().await.unwrap(),
    );
    assert!(a < b);
    generator.close().await;
    assert_eq!(memory.owner_of(5), None);
}

async fn start_issue_close_releases() {
    let registry = marked();
    let generator = Arc::new(
        LeasedSnowflake::start(
            layout(),
            snowflake(),
            lease(3),
            Blocking::from_arc(Arc::clone(&registry)),
            Some("test".into()),
        )
        .await
        .unwrap(),
    );
    assert_eq!(generator.worker_id(), 3);
    assert!(registry.owner_of(3).unwrap().starts_with("test#"));
    assert_eq!(generator.stats().state, "held");
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let generator = Arc::clone(&generator);
            tokio::spawn(async move {
                let mut ids = Vec::new();
                for i in 0..5000 {
                    ids.push(generator.next_id().await.unwrap());
                    if i % 100 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
                ids
            })
        })
        .collect();
    let mut all = HashSet::new();
    let mut top = 0;
    for task in tasks {
        let ids = task.await.unwrap();
        assert!(common::increasing(&ids));
        top = top.max(*ids.last().unwrap());
        all.extend(ids);
    }
    assert_eq!(all.len(), 20_000);
    generator.close().await;
    generator.close().await; // idempotent
    assert_eq!(registry.owner_of(3), None);
    let last_ms = generator.generator().decode(top).unwrap().timestamp_ms;
    assert!(registry.mark_of(3) >= last_ms);
    assert_eq!(
        generator.next_id().await.unwrap_err().kind(),
        ErrorKind::Closed
    );
}

async fn start_waits_until_the_clock_passes_the_mark() {
    let registry = Arc::new(MemoryRegistry::new());
    let mark = now_ms() + 400;
    registry.set_mark(5, mark);
    let started = Instant::now();
    let generator = LeasedSnowflake::start(
        layout(),
        snowflake(),
        lease(5),
        Blocking::from_arc(Arc::clone(&registry)),
        None,
    )
    .await
    .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    let id = generator.next_id().await.unwrap();
    let decoded = generator.generator().decode(id).unwrap();
    assert_eq!(decoded.worker_id, 5);
    assert!(
        decoded.timestamp_ms > mark,
        "{} <= {mark}",
        decoded.timestamp_ms
    );
    generator.close().await;
}

async fn renewals_keep_the_lease() {
    let registry = marked();
    let mut o = lease(2);
    o.lease_ttl_ms = 1200; // renewed every 400 ms
    let generator = LeasedSnowflake::start(
        layout(),
        snowflake(),
        o,
        Blocking::from_arc(Arc::clone(&registry)),
        None,
    )
    .await
    .unwrap();
    let mut last = 0;
    eventually(20, || (generator.stats().renewals >= 3).then_some(())).await;
    for _ in 0..10 {
        let id = generator.next_id().await.unwrap();
        assert!(id > last);
        last = id;
    }
    let stats = generator.stats();
    assert_eq!(stats.state, "held");
    assert!(stats.mark_ms > now_ms());
    assert!(registry.mark_of(2) > now_ms());
    generator.close().await;
    assert_eq!(registry.owner_of(2), None);
}

async fn registry_failure_then_recovery() {
    let registry = marked();
    let flaky = Arc::new(Flaky {
        inner: Arc::clone(&registry),
        down: AtomicBool::new(false),
        calls: AtomicU64::new(0),
    });
    let o = lease(4).with_lease_ttl_ms(600).with_mark_ahead_ms(300);
    let generator = LeasedSnowflake::start(layout(), snowflake(), o, Arc::clone(&flaky), None)
        .await
        .unwrap();
    let before = generator.next_id().await.unwrap();
    flaky.down.store(true, Ordering::SeqCst);
    // IDs flow until the mark or the lease runs out, then a typed error.
    let mut issued = vec![before];
    let e = loop {
        match generator.next_id().await {
            Ok(id) => issued.push(id),
            Err(e) => break e,
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    assert_eq!(e.kind(), ErrorKind::LeaseExpired, "{e}");
    assert!(common::increasing(&issued));
    assert!(generator.stats().failures >= 1);
    flaky.down.store(false, Ordering::SeqCst);
    // It recovers by itself: IDs resume, above every earlier one.
    let mut after = 0;
    for _ in 0..3000 {
        if let Ok(id) = generator.next_id().await {
            after = id;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(after > *issued.last().unwrap(), "no ID after recovery");
    generator.close().await;
    assert_eq!(registry.owner_of(generator.worker_id()), None);
}

async fn a_cancelled_start_releases_its_claim() {
    let registry = Arc::new(MemoryRegistry::new());
    registry.set_mark(6, now_ms() + 10_000);
    let start = {
        let registry = Arc::clone(&registry);
        tokio::spawn(async move {
            LeasedSnowflake::start(
                layout(),
                snowflake(),
                lease(6),
                Blocking::from_arc(registry),
                None,
            )
            .await
        })
    };
    // The claim is made at once; start-up then waits for the clock to pass the mark.
    eventually(20, || registry.owner_of(6)).await;
    let begun = Instant::now();
    start.abort();
    assert!(start.await.unwrap_err().is_cancelled());
    eventually(20, || registry.owner_of(6).is_none().then_some(())).await;
    assert!(begun.elapsed() < Duration::from_secs(5), "released at once");
    // Released with the mark it found: a successor waits for it, as it should.
    assert!(registry.mark_of(6) > now_ms());
}

async fn next_id_awaits_the_clock_and_survives_cancellation() {
    let registry = marked();
    let clock = Arc::new(ManualClock::new(now_ms()));
    let generator = LeasedSnowflake::start_with_clock(
        layout(),
        snowflake(),
        lease(7),
        Blocking::from_arc(Arc::clone(&registry)),
        None,
        Arc::clone(&clock),
    )
    .await
    .unwrap();
    let first = generator.next_id().await.unwrap();
    let tick = generator.generator().decode(first).unwrap().timestamp_ms;
    // Use up the tick's 4096 sequence numbers (max_drift_ms = 0: no borrowing).
    let mut last = first;
    for _ in 1..4096 {
        let id = generator.next_id().await.unwrap();
        assert!(id > last);
        last = id;
    }
    // The next ID needs the next millisecond: the future waits (on a timer) ...
    for _ in 0..3 {
        let waited = tokio::time::timeout(Duration::from_millis(30), generator.next_id()).await;
        assert!(waited.is_err(), "{waited:?}");
    }
    let generator = Arc::new(generator);
    let pending = {
        let generator = Arc::clone(&generator);
        tokio::spawn(async move { generator.next_id().await })
    };
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(!pending.is_finished());
    // ... and takes the first ID of it once the clock gets there; nothing was lost.
    clock.advance_ms(1);
    let next = pending.await.unwrap().unwrap();
    let decoded = generator.generator().decode(next).unwrap();
    assert_eq!(decoded.timestamp_ms, tick + 1);
    assert_eq!(decoded.sequence, 0);
    assert_eq!(clock.waits(), 0, "the clock's blocking wait is never used");
    generator.close().await;
}

async fn next_ids_fills_runs_and_awaits_the_clock_between_them() {
    let registry = marked();
    let clock = Arc::new(ManualClock::new(now_ms()));
    let generator = LeasedSnowflake::start_with_clock(
        layout(),
        snowflake(),
        lease(11),
        Blocking::from_arc(Arc::clone(&registry)),
        None,
        Arc::clone(&clock),
    )
    .await
    .unwrap();
    // One tick's worth: filled at once, no await on the clock.
    let mut first = vec![0u64; 4096];
    generator.next_ids(&mut first).await.unwrap();
    assert!(first.windows(2).all(|w| w[0] < w[1]));
    let tick = generator.generator().decode(first[0]).unwrap().timestamp_ms;
    assert_eq!(
        generator
            .generator()
            .decode(first[4095])
            .unwrap()
            .timestamp_ms,
        tick
    );
    // Two ticks' worth more: the batch waits (on a timer) for the clock between them.
    let generator = Arc::new(generator);
    let pending = {
        let generator = Arc::clone(&generator);
        tokio::spawn(async move {
            let mut more = vec![0u64; 2 * 4096];
            generator.next_ids(&mut more).await.map(|()| more)
        })
    };
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(!pending.is_finished(), "the batch waits for the next tick");
    clock.advance_ms(1);
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(!pending.is_finished(), "and for the one after");
    clock.advance_ms(1);
    let more = pending.await.unwrap().unwrap();
    assert!(more[0] > first[4095]);
    assert!(more.windows(2).all(|w| w[0] < w[1]));
    let times: Vec<u64> = [0, 4095, 4096, 8191]
        .iter()
        .map(|&i| generator.generator().decode(more[i]).unwrap().timestamp_ms)
        .collect();
    assert_eq!(times, [tick + 1, tick + 1, tick + 2, tick + 2]);
    assert_eq!(clock.waits(), 0, "the clock's blocking wait is never used");
    // An empty batch is nothing to do.
    generator.next_ids(&mut []).await.unwrap();
    generator.close().await;
    let mut after = [0u64; 2];
    assert_eq!(
        generator.next_ids(&mut after).await.unwrap_err().kind(),
        ErrorKind::Closed
    );
}

async fn a_generator_dropped_inside_a_task_leaves_the_lease_to_expire() {
    let registry = marked();
    let task = {
        let registry = Arc::clone(&registry);
        tokio::spawn(async move {
            let generator = LeasedSnowflake::start(
                layout(),
                snowflake(),
                lease(8),
                Blocking::from_arc(registry),
                None,
            )
            .await
            .unwrap();
            generator.next_id().await.unwrap();
            drop(generator);
        })
    };
    task.await.unwrap();
    // Not released (Drop cannot wait for the registry): held until the lease expires.
    assert!(registry.owner_of(8).is_some());
}

async fn two_generators_on_one_registry_never_share_a_worker_id() {
    let registry = marked();
    let start = || {
        LeasedSnowflake::start(
            layout(),
            snowflake(),
            lease(9),
            Blocking::from_arc(Arc::clone(&registry)),
            Some("same-label".into()),
        )
    };
    let a = start().await.unwrap();
    let b = start().await.unwrap();
    assert_ne!(a.worker_id(), b.worker_id());
    let mut ids = HashSet::new();
    for _ in 0..2000 {
        assert!(ids.insert(a.next_id().await.unwrap()));
        assert!(ids.insert(b.next_id().await.unwrap()));
    }
    a.close().await;
    b.close().await;
}

/// Dropped after its runtime is gone: nothing panics, and the generator refuses IDs.
#[test]
fn a_leased_snowflake_outliving_its_runtime_drops_quietly() {
    for multi in [false, true] {
        let runtime = if multi {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        .unwrap();
        let registry = marked();
        let generator = runtime.block_on(async {
            LeasedSnowflake::start(
                layout(),
                snowflake(),
                lease(10),
                Blocking::from_arc(Arc::clone(&registry)),
                None,
            )
            .await
            .unwrap()
        });
        drop(runtime);
        // The fence still caps IDs at the accepted mark; nothing needs the runtime.
        generator.generator().next_id().unwrap();
        let held = generator.worker_id();
        drop(generator);
        assert!(registry.owner_of(held).is_some());
    }
}

#[test]
fn start_outside_a_runtime_is_refused() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // A future polled outside any runtime context cannot spawn the lease task.
    let start = LeasedSnowflake::start(
        layout(),
        snowflake(),
        lease(11),
        Blocking::new(MemoryRegistry::new()),
        None,
    );
    drop(runtime);
    let e = futures_lite_block_on(start).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

/// Polls a future to completion on this thread without a runtime.
fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}
