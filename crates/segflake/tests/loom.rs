//! Model-checks the snowflake compare-and-swap with loom: every interleaving of two or
//! three threads taking IDs (singles and batches) yields distinct IDs, strictly
//! increasing per thread, also while a lease shuts and re-points the generator's fence. Run with:
//! `RUSTFLAGS="--cfg loom" cargo test -p segflake --test loom --release`
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use segflake::{ManualClock, Preset, Snowflake, SnowflakeOptions};

const T0: u64 = 1_790_000_000_000;

fn generator() -> Snowflake<ManualClock> {
    // Two IDs per tick and 1 ms of drift: the model covers same-tick increments,
    // borrowing the next tick, and waiting for the clock.
    let layout = Preset::Twitter
        .spec()
        .with_sequence_bits(1)
        .build_at(T0)
        .unwrap();
    let options = SnowflakeOptions::new(1).with_max_drift_ms(1);
    Snowflake::with_clock(layout, options, ManualClock::new(T0)).unwrap()
}

#[test]
fn two_threads_two_ids_each() {
    loom::model(|| {
        let gen = Arc::new(generator());
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let gen = gen.clone();
                thread::spawn(move || {
                    let a = gen.next_id().unwrap();
                    let b = gen.next_id().unwrap();
                    assert!(a < b);
                    [a, b]
                })
            })
            .collect();
        let mut all: Vec<u64> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 4);
    });
}

#[test]
fn batch_against_singles() {
    loom::model(|| {
        let gen = Arc::new(generator());
        let g2 = gen.clone();
        let batcher = thread::spawn(move || {
            let mut out = [0u64; 3];
            g2.next_ids(&mut out).unwrap();
            assert!(out[0] < out[1] && out[1] < out[2]);
            out.to_vec()
        });
        let a = gen.next_id().unwrap();
        let b = gen.next_id().unwrap();
        assert!(a < b);
        let mut all = batcher.join().unwrap();
        all.extend([a, b]);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 5);
    });
}

/// A lease moving the fence while a thread issues: the fence is shut (the lease may have
/// expired) and re-pointed at worker ID 0, whose previous holder's mark is two ticks ahead.
/// Every ID is distinct, each thread's IDs increase, IDs of worker 1 stay at or below the
/// old cap, and no ID of worker 0 is at or below the mark. Interleavings with up to six
/// preemptions (seconds; the unbounded model takes minutes).
#[test]
fn a_fence_rebound_while_another_thread_issues() {
    use segflake::{Error, Fence};
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(6);
    builder.check(|| {
        let layout = Preset::Twitter
            .spec()
            .with_sequence_bits(1)
            .with_worker_bits(1)
            .build_at(T0)
            .unwrap();
        let now_tick = layout.tick_of(T0).unwrap();
        let fence = std::sync::Arc::new(Fence::shut(&layout, Error::Closed));
        fence.rebind(1, now_tick + 1, 0);
        let options = SnowflakeOptions::new(1).with_max_drift_ms(8);
        let gen = Arc::new(
            Snowflake::with_fence(layout, options, ManualClock::new(T0), fence.clone()).unwrap(),
        );
        let mark_ms = T0 + 2;
        let g2 = gen.clone();
        let issuer = thread::spawn(move || {
            let ids: Vec<u64> = (0..3).filter_map(|_| g2.next_id().ok()).collect();
            assert!(ids.windows(2).all(|w| w[0] < w[1]));
            ids
        });
        fence.shut_with(Error::Closed);
        fence.rebind(0, now_tick + 6, mark_ms);
        let mine: Vec<u64> = (0..2)
            .map(|_| gen.next_id())
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("the rebound fence refused: {e}"));
        assert!(mine.windows(2).all(|w| w[0] < w[1]));
        let mut all = issuer.join().unwrap();
        all.extend(&mine);
        for &id in &all {
            let d = layout.decode(id).unwrap();
            match d.worker_id {
                1 => assert!(d.tick <= now_tick + 1, "above worker 1's cap: {d:?}"),
                _ => assert!(
                    d.timestamp_ms > mark_ms,
                    "worker 0 at or below its mark: {d:?}"
                ),
            }
        }
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n, "a duplicate ID");
        assert_eq!(mine.len(), 2, "the rebound fence issues");
    });
}
