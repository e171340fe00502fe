//! Model-checks the segment engine with loom: threads taking IDs while another installs
//! the next segment (contiguous or after a gap) never get the same ID, never get an ID
//! outside a range the store handed out, and each sees strictly increasing IDs. Run with:
//! `RUSTFLAGS="--cfg loom" cargo test -p segflake --test segment_loom --release`
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use segflake::{Allocation, SegmentEngine, SegmentOptions};

const FIRST: Allocation = Allocation::new(3, 2); // 1, 2

/// An engine holding [1, 3) with the fetch of the next segment in flight.
fn engine() -> SegmentEngine {
    let o = SegmentOptions::default()
        .with_step(2)
        .with_prefetch_percent(0);
    let e = SegmentEngine::new("t", &o).unwrap();
    e.begin_fetch(0).unwrap();
    e.complete_fetch(0, Ok(FIRST)).unwrap();
    assert_eq!(e.try_next(), Some(1));
    e.begin_fetch(0).expect("the trigger was crossed");
    e
}

fn check(all: &mut Vec<u64>, next: Allocation) {
    let owned = |id: u64| (2..3).contains(&id) || (next.start()..next.max_id).contains(&id);
    assert!(all.iter().all(|&id| owned(id)), "unowned ID in {all:?}");
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "duplicate ID");
}

fn takes_race_an_install(next: Allocation, takes: usize) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(move || {
        let engine = Arc::new(engine());
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let e = engine.clone();
                thread::spawn(move || (0..takes).filter_map(|_| e.try_next()).collect::<Vec<_>>())
            })
            .collect();
        engine.complete_fetch(0, Ok(next)).unwrap();
        let mut all = Vec::new();
        for t in takers {
            let mine = t.join().unwrap();
            assert!(
                mine.windows(2).all(|w| w[0] < w[1]),
                "per-thread order {mine:?}"
            );
            all.extend(mine);
        }
        check(&mut all, next);
        // Draining afterwards: still unique and owned. Of the three IDs left (2 and the next
        // range's two), races at a segment's end may lose some, never more than one per
        // racing thread.
        let rest: Vec<u64> = std::iter::from_fn(|| engine.try_next()).collect();
        all.extend(rest);
        check(&mut all, next);
        assert!(all.len() >= 3 - 2, "{all:?}");
    });
}

#[test]
fn takes_race_the_install_of_a_contiguous_segment() {
    takes_race_an_install(Allocation::new(5, 2), 2); // 3, 4
}

#[test]
fn takes_race_the_install_of_a_segment_after_a_gap() {
    takes_race_an_install(Allocation::new(12, 2), 2); // 10, 11
}

#[test]
fn a_batch_and_a_single_race_an_install() {
    let next = Allocation::new(12, 2);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(move || {
        let engine = Arc::new(engine());
        let e = engine.clone();
        let batcher = thread::spawn(move || {
            let mut out = [0u64; 3];
            let n = e.try_next_batch(&mut out);
            out[..n].to_vec()
        });
        let e = engine.clone();
        let single = thread::spawn(move || e.try_next());
        engine.complete_fetch(0, Ok(next)).unwrap();
        let mut all = batcher.join().unwrap();
        assert!(all.windows(2).all(|w| w[0] < w[1]), "batch order {all:?}");
        all.extend(single.join().unwrap());
        check(&mut all, next);
    });
}
