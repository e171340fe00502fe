//! Per-ID cost of the async drivers beside the std drivers over the same core engines, in
//! one run: `cargo bench -p segflake-tokio`. Prints a Markdown table.
//!
//! Every row issues IDs from a store or registry in memory, so it measures the drivers and
//! the engines, not a database. Snowflake rows use a fresh generator (its own worker ID)
//! per measurement and stay within the layout's `max_drift_ms` allowance (4,096 IDs per
//! millisecond, borrowed up to 2 s ahead), so they measure the CPU cost rather than the
//! clock.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use segflake::{
    Clock, Layout, LeaseOptions, MemoryRegistry, MemoryStore, Preset, Registry, SegmentOptions,
    SnowflakeOptions, SystemClock,
};
use segflake_tokio::Blocking;

/// Tasks (async) or threads (std) in the concurrent column.
const TASKS: usize = 4;
const SEGMENT_IDS: u64 = 4_000_000;
const SNOWFLAKE_IDS: u64 = 1_000_000;

fn segment_options() -> SegmentOptions {
    SegmentOptions::default()
        .with_step(100_000)
        .with_give_back(false)
}

fn lease(worker: u64) -> LeaseOptions {
    LeaseOptions::default().with_preferred_worker_id(Some(worker))
}

fn registry() -> Arc<MemoryRegistry> {
    let registry = Arc::new(MemoryRegistry::new());
    let now = SystemClock.now_ms();
    for w in 0..64 {
        registry.set_mark(w, now - 60_000);
    }
    registry
}

fn layout() -> Layout {
    Layout::preset(Preset::Twitter).expect("the twitter preset")
}

fn ns_per_id(started: Instant, ids: u64) -> f64 {
    started.elapsed().as_nanos() as f64 / ids as f64
}

/// Best of three: the least disturbed by the rest of the machine.
fn best(mut f: impl FnMut() -> f64) -> f64 {
    (0..3).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn std_segment(threads: usize) -> f64 {
    let generator = segflake::SegmentGenerator::new(MemoryStore::new(), segment_options()).unwrap();
    let tag = generator.tag("bench").unwrap();
    tag.next_id().unwrap(); // the first segment
    let per = SEGMENT_IDS / threads as u64;
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let tag = tag.clone();
            s.spawn(move || {
                for _ in 0..per {
                    black_box(tag.next_id().unwrap());
                }
            });
        }
    });
    ns_per_id(started, per * threads as u64)
}

fn async_segment(runtime: &tokio::runtime::Runtime, tasks: usize) -> f64 {
    runtime.block_on(async {
        let generator = segflake_tokio::SegmentGenerator::new(
            Blocking::new(MemoryStore::new()),
            segment_options(),
        )
        .unwrap();
        let tag = generator.tag("bench").unwrap();
        tag.next_id().await.unwrap();
        let per = SEGMENT_IDS / tasks as u64;
        let started = Instant::now();
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let tag = tag.clone();
                tokio::spawn(async move {
                    for _ in 0..per {
                        black_box(tag.next_id().await.unwrap());
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        let ns = ns_per_id(started, per * tasks as u64);
        generator.close().await;
        ns
    })
}

fn std_leased(threads: usize, worker: u64) -> f64 {
    let registry: Arc<dyn Registry> = registry();
    let generator = segflake::LeasedSnowflake::start(
        layout(),
        SnowflakeOptions::new(0),
        lease(worker),
        registry,
        None,
    )
    .unwrap();
    let per = SNOWFLAKE_IDS / threads as u64;
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let generator = &generator;
            s.spawn(move || {
                for _ in 0..per {
                    black_box(generator.next_id().unwrap());
                }
            });
        }
    });
    let ns = ns_per_id(started, per * threads as u64);
    generator.close();
    ns
}

fn async_leased(runtime: &tokio::runtime::Runtime, tasks: usize, worker: u64) -> f64 {
    runtime.block_on(async {
        let generator = Arc::new(
            segflake_tokio::LeasedSnowflake::start(
                layout(),
                SnowflakeOptions::new(0),
                lease(worker),
                Blocking::from_arc(registry()),
                None,
            )
            .await
            .unwrap(),
        );
        let per = SNOWFLAKE_IDS / tasks as u64;
        let started = Instant::now();
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let generator = Arc::clone(&generator);
                tokio::spawn(async move {
                    for _ in 0..per {
                        black_box(generator.next_id().await.unwrap());
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        let ns = ns_per_id(started, per * tasks as u64);
        generator.close().await;
        ns
    })
}

fn main() {
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let single = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut worker = 0u64;
    let mut next_worker = || {
        worker += 1;
        worker
    };

    let rows = [
        (
            "std `SegmentGenerator` (threads)",
            best(|| std_segment(1)),
            best(|| std_segment(TASKS)),
        ),
        (
            "async `SegmentGenerator`, current_thread runtime",
            best(|| async_segment(&single, 1)),
            best(|| async_segment(&single, TASKS)),
        ),
        (
            "async `SegmentGenerator`, multi_thread runtime (2 workers)",
            best(|| async_segment(&multi, 1)),
            best(|| async_segment(&multi, TASKS)),
        ),
        (
            "std `LeasedSnowflake` (threads)",
            best(|| std_leased(1, next_worker())),
            best(|| std_leased(TASKS, next_worker())),
        ),
        (
            "async `LeasedSnowflake`, current_thread runtime",
            best(|| async_leased(&single, 1, next_worker())),
            best(|| async_leased(&single, TASKS, next_worker())),
        ),
        (
            "async `LeasedSnowflake`, multi_thread runtime (2 workers)",
            best(|| async_leased(&multi, 1, next_worker())),
            best(|| async_leased(&multi, TASKS, next_worker())),
        ),
    ];
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "Per-ID cost, best of 3 ({SEGMENT_IDS} segment IDs, {SNOWFLAKE_IDS} snowflake IDs per \
         measurement; {cores} cores; in-memory store and registry)\n"
    );
    println!("| driver | 1 task / thread (ns/ID) | {TASKS} tasks / threads (ns/ID) |");
    println!("|---|---:|---:|");
    for (name, one, many) in rows {
        println!("| {name} | {one:.1} | {many:.1} |");
    }
}
