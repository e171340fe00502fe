//! Model-checks the snowflake compare-and-swap with loom: every interleaving of two or
//! three threads taking IDs (singles and batches) yields distinct IDs, strictly
//! increasing per thread. Run with:
//! `RUSTFLAGS="--cfg loom" cargo test -p segflake --test loom --release`
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use segflake::{LayoutSpec, ManualClock, Preset, Snowflake, SnowflakeOptions};

const T0: u64 = 1_790_000_000_000;

fn generator() -> Snowflake<ManualClock> {
    // Two IDs per tick and 1 ms of drift: the model covers same-tick increments,
    // borrowing the next tick, and waiting for the clock.
    let layout = LayoutSpec {
        sequence_bits: 1,
        ..Preset::Twitter.spec()
    }
    .build_at(T0)
    .unwrap();
    let options = SnowflakeOptions {
        max_drift_ms: 1,
        ..SnowflakeOptions::new(1)
    };
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
