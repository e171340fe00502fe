//! The async segment generator over the core's engines: density, order, cancellation,
//! close and give-back, store failures, drops.

mod common;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use common::{increasing, temp_path, TestStore};
use segflake::{ErrorKind, FileStore, MemoryStore, SegmentOptions, SegmentStore};
use segflake_tokio::{Blocking, SegmentGenerator};

fn options(step: u64) -> SegmentOptions {
    SegmentOptions::default()
        .with_step(step)
        .with_dynamic_step(false)
        // Generous: a busy machine must not turn a slow fetch into a failure.
        .with_wait_timeout_ms(30_000)
}

both_runtimes!(
    one_task_gets_dense_increasing_ids,
    many_tasks_get_unique_ids,
    a_cancelled_next_id_loses_and_repeats_nothing,
    a_store_timeout_fails_the_wait_and_the_next_call_recovers,
    close_racing_next_id_never_yields_an_id_given_back,
    buffered_ids_flow_through_a_store_failure_then_exhausted_then_recovery,
    close_gives_back_and_a_new_generator_continues_without_a_gap,
    a_file_store_continues_across_generators,
    a_generator_dropped_inside_a_task_stops_its_fetches,
    a_panicking_store_is_a_failed_fetch,
    tags_are_independent,
    a_shared_dyn_store_runs_through_blocking,
);

/// A store held as `Arc<dyn SegmentStore>` (what a URL constructor returns) serves a
/// generator through `Blocking::from_arc`, and close gives the tail back to it.
async fn a_shared_dyn_store_runs_through_blocking() {
    let memory = Arc::new(MemoryStore::new());
    let store: Arc<dyn SegmentStore> = Arc::clone(&memory) as Arc<dyn SegmentStore>;
    let generator = SegmentGenerator::new(Blocking::from_arc(store), options(100)).unwrap();
    let ids = [
        generator.next_id("order").await.unwrap(),
        generator.next_id("order").await.unwrap(),
    ];
    assert_eq!(ids, [1, 2]);
    generator.close().await;
    assert_eq!(memory.max_id("order"), Some(3));
}

async fn one_task_gets_dense_increasing_ids() {
    let store = Blocking::new(MemoryStore::new());
    let generator = SegmentGenerator::new(store, options(100)).unwrap();
    let order = generator.tag("order").unwrap();
    let mut ids = Vec::new();
    for _ in 0..1000 {
        ids.push(order.next_id().await.unwrap());
    }
    // Through the lookup too.
    for _ in 0..1000 {
        ids.push(generator.next_id("order").await.unwrap());
    }
    assert_eq!(ids, (1..=2000).collect::<Vec<u64>>());
    let mut batch = [0u64; 250];
    order.next_ids(&mut batch).await.unwrap();
    assert_eq!(batch.to_vec(), (2001..=2250).collect::<Vec<u64>>());
    let stats = generator.stats("order").unwrap();
    assert_eq!(stats.issued, 2250);
    assert_eq!(generator.tags(), ["order"]);
    generator.close().await;
}

async fn many_tasks_get_unique_ids() {
    let store = TestStore::new();
    let generator = Arc::new(SegmentGenerator::new(Arc::clone(&store), options(50)).unwrap());
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let generator = Arc::clone(&generator);
            tokio::spawn(async move {
                let handle = generator.tag("order").unwrap();
                let mut ids = Vec::with_capacity(2000);
                for i in 0..2000 {
                    let id = if i % 2 == 0 {
                        handle.next_id().await
                    } else {
                        generator.next_id("order").await
                    };
                    ids.push(id.unwrap());
                    if (i + t) % 97 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
                ids
            })
        })
        .collect();
    let mut all = HashSet::new();
    let mut count = 0;
    for task in tasks {
        let ids = task.await.unwrap();
        assert!(increasing(&ids), "each task sees increasing IDs");
        count += ids.len();
        all.extend(ids);
    }
    assert_eq!(all.len(), count, "no ID twice");
    let max = *all.iter().max().unwrap();
    // Dense but for the rare ID lost when tasks race at the end of a segment (at most
    // one per racing task and segment).
    let segments = store.allocations.load(Ordering::SeqCst);
    assert!(
        max as usize - count <= (segments * 8) as usize,
        "{max} {count}"
    );
    generator.close().await;
}

async fn a_cancelled_next_id_loses_and_repeats_nothing() {
    let store = TestStore::new();
    let mut o = options(10);
    o.prefetch_percent = 100; // fetch only when a segment is used up
    let generator = SegmentGenerator::new(Arc::clone(&store), o).unwrap();
    let order = generator.tag("order").unwrap();
    for expected in 1..=10 {
        assert_eq!(order.next_id().await.unwrap(), expected);
    }
    store.hold();
    // Cancelled while it waits for the fetch the store holds.
    for _ in 0..3 {
        let cancelled = tokio::time::timeout(Duration::from_millis(20), order.next_id()).await;
        assert!(cancelled.is_err(), "the store is held: {cancelled:?}");
    }
    // A cancelled wait on a task, too.
    let waiting = {
        let order = order.clone();
        tokio::spawn(async move { order.next_id().await })
    };
    tokio::time::sleep(Duration::from_millis(10)).await;
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    store.release();
    let ids: Vec<u64> = {
        let mut v = Vec::new();
        for _ in 0..20 {
            v.push(order.next_id().await.unwrap());
        }
        v
    };
    assert_eq!(ids, (11..=30).collect::<Vec<u64>>());
    generator.close().await;
}

async fn a_store_timeout_fails_the_wait_and_the_next_call_recovers() {
    let store = TestStore::new();
    let o = options(10)
        .with_prefetch_percent(100)
        .with_store_timeout_ms(100);
    let generator = SegmentGenerator::new(Arc::clone(&store), o).unwrap();
    let order = generator.tag("order").unwrap();
    for expected in 1..=10 {
        assert_eq!(order.next_id().await.unwrap(), expected);
    }
    store.hold();
    let e = order.next_id().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::SegmentsExhausted, "{e}");
    assert!(e.to_string().contains("100 ms"), "{e}");
    // The timed-out call was dropped before it allocated: nothing is skipped.
    store.release();
    assert_eq!(order.next_id().await.unwrap(), 11);
    assert_eq!(generator.stats("order").unwrap().failures, 1);
    generator.close().await;
}

async fn close_racing_next_id_never_yields_an_id_given_back() {
    for round in 0..5 {
        let memory = Arc::new(MemoryStore::new());
        let generator = Arc::new(
            SegmentGenerator::new(Blocking::from_arc(Arc::clone(&memory)), options(1000)).unwrap(),
        );
        let tasks: Vec<_> = (0..4)
            .map(|_| {
                let handle = generator.tag("order").unwrap();
                tokio::spawn(async move {
                    let mut ids = Vec::new();
                    loop {
                        match handle.next_id().await {
                            Ok(id) => ids.push(id),
                            Err(e) => {
                                assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
                                return ids;
                            }
                        }
                        if ids.len() % 64 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        // Let them run a while (fewer than a segment or several, by round).
        for _ in 0..round * 20 + 1 {
            tokio::task::yield_now().await;
        }
        generator.close().await;
        let mut issued = HashSet::new();
        for task in tasks {
            for id in task.await.unwrap() {
                assert!(issued.insert(id), "{id} twice");
            }
        }
        // The store's max_id after the give back lies above every issued ID.
        let max_id = memory.max_id("order").unwrap();
        if let Some(&top) = issued.iter().max() {
            assert!(
                top < max_id,
                "ID {top} issued, store gave back down to {max_id}"
            );
        }
        // A new generator never issues those IDs again.
        let next =
            SegmentGenerator::new(Blocking::from_arc(Arc::clone(&memory)), options(1000)).unwrap();
        let first = next.next_id("order").await.unwrap();
        assert!(!issued.contains(&first), "{first} issued twice");
        assert_eq!(first, max_id);
        next.close().await;
    }
}

async fn buffered_ids_flow_through_a_store_failure_then_exhausted_then_recovery() {
    let store = TestStore::new();
    let o = options(10)
        .with_prefetch_percent(50)
        .with_retry_backoff_ms(0);
    let generator = SegmentGenerator::new(Arc::clone(&store), o).unwrap();
    let order = generator.tag("order").unwrap();
    assert_eq!(order.next_id().await.unwrap(), 1);
    store.set_failing(true);
    for expected in 2..=10 {
        assert_eq!(order.next_id().await.unwrap(), expected);
    }
    let e = order.next_id().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::SegmentsExhausted, "{e}");
    assert!(e.to_string().contains("the database is down"), "{e}");
    assert!(generator.stats("order").unwrap().failures >= 1);
    // Each call asks the store again, and fails within the wait.
    assert!(order.next_id().await.is_err());
    store.set_failing(false);
    for expected in 11..=40 {
        assert_eq!(order.next_id().await.unwrap(), expected);
    }
    generator.close().await;
}

async fn close_gives_back_and_a_new_generator_continues_without_a_gap() {
    let store = TestStore::new();
    let generator = SegmentGenerator::new(Arc::clone(&store), options(100)).unwrap();
    for expected in 1..=30 {
        assert_eq!(generator.next_id("order").await.unwrap(), expected);
    }
    generator.close().await;
    generator.close().await; // idempotent
    assert!(generator.is_closed());
    assert_eq!(
        generator.next_id("order").await.unwrap_err().kind(),
        ErrorKind::Closed
    );
    assert_eq!(
        generator.tag("order").unwrap_err().kind(),
        ErrorKind::Closed
    );
    assert_eq!(store.inner.max_id("order"), Some(31));
    assert_eq!(store.give_backs.load(Ordering::SeqCst), 1);
    let next = SegmentGenerator::new(Arc::clone(&store), options(100)).unwrap();
    assert_eq!(next.next_id("order").await.unwrap(), 31);
    next.close().await;
}

async fn a_file_store_continues_across_generators() {
    let path = temp_path("file-store");
    {
        let store = Blocking::new(FileStore::open(&path).unwrap());
        let generator = SegmentGenerator::new(store, options(100)).unwrap();
        for expected in 1..=5 {
            assert_eq!(generator.next_id("invoice").await.unwrap(), expected);
        }
        generator.close().await;
    }
    let store = Blocking::new(FileStore::open(&path).unwrap());
    let generator = SegmentGenerator::new(store, options(100)).unwrap();
    assert_eq!(generator.next_id("invoice").await.unwrap(), 6);
    generator.close().await;
    let _ = std::fs::remove_file(&path);
}

async fn a_generator_dropped_inside_a_task_stops_its_fetches() {
    let store = TestStore::new();
    let o = options(10).with_prefetch_percent(100);
    let task = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            let generator = SegmentGenerator::new(Arc::clone(&store), o).unwrap();
            let order = generator.tag("order").unwrap();
            for _ in 0..10 {
                order.next_id().await.unwrap();
            }
            store.hold();
            // A fetch is now in flight and held by the store.
            assert!(order.try_next_id().unwrap().is_none());
            drop(generator);
            // The handle outlives the generator: closed, without panicking.
            assert_eq!(order.next_id().await.unwrap_err().kind(), ErrorKind::Closed);
            assert_eq!(order.try_next_id().unwrap_err().kind(), ErrorKind::Closed);
        })
    };
    task.await.unwrap();
    store.release();
    tokio::time::sleep(Duration::from_millis(20)).await;
    // The held fetch was aborted with its task: it never allocated.
    assert_eq!(store.allocations.load(Ordering::SeqCst), 1);
}

struct PanickingStore;

impl segflake_tokio::AsyncSegmentStore for PanickingStore {
    async fn allocate(
        &self,
        _tag: &str,
        _step: u64,
    ) -> Result<segflake::Allocation, segflake::StoreFailure> {
        panic!("the driver's bug")
    }
}

async fn a_panicking_store_is_a_failed_fetch() {
    let generator = SegmentGenerator::new(PanickingStore, options(10)).unwrap();
    let e = generator.next_id("order").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::SegmentsExhausted, "{e}");
    assert!(e.to_string().contains("abandoned"), "{e}");
    // A sync store that panics on the blocking pool, likewise.
    let sync = segflake::FnStore(|_: &str, _: u64| -> Result<segflake::Allocation, String> {
        panic!("a sync bug")
    });
    let generator = SegmentGenerator::new(Blocking::new(sync), options(10)).unwrap();
    let e = generator.next_id("order").await.unwrap_err();
    assert!(e.to_string().contains("a sync bug"), "{e}");
}

async fn tags_are_independent() {
    let generator = SegmentGenerator::new(TestStore::new(), options(10)).unwrap();
    for expected in 1..=25 {
        assert_eq!(generator.next_id("a").await.unwrap(), expected);
        assert_eq!(generator.next_id("b").await.unwrap(), expected);
    }
    assert_eq!(generator.tags(), ["a", "b"]);
    assert_eq!(
        generator.tag("no spaces").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        generator.stats("c").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    generator.close().await;
}

/// Dropped after its runtime is gone, with a fetch in flight: nothing panics.
#[test]
fn a_generator_outliving_its_runtime_drops_quietly() {
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
        let store = TestStore::new();
        let o = options(10).with_prefetch_percent(100);
        let (generator, order) = runtime.block_on(async {
            let generator = SegmentGenerator::new(Arc::clone(&store), o).unwrap();
            let order = generator.tag("order").unwrap();
            for _ in 0..10 {
                order.next_id().await.unwrap();
            }
            store.hold();
            assert_eq!(order.try_next_id().unwrap(), None);
            (generator, order)
        });
        drop(runtime);
        // No runtime: a take finds nothing and a new fetch cannot start, without a panic.
        assert_eq!(order.try_next_id().unwrap(), None);
        assert_eq!(generator.try_next_id("other").unwrap(), None);
        drop(generator);
        assert_eq!(order.try_next_id().unwrap_err().kind(), ErrorKind::Closed);
    }
}

#[test]
fn new_outside_a_runtime_is_refused() {
    let e = SegmentGenerator::new(TestStore::new(), options(10)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("tokio runtime"), "{e}");
}
