//! Giving back the IDs a closed generator fetched and never issued: what the engine
//! offers, that the stores take it back only when nobody allocated since, and that a
//! restart then continues without a gap and without a duplicate.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use segflake::{
    FileStore, GiveBack, MemoryStore, SegmentEngine, SegmentGenerator, SegmentOptions, SegmentStore,
};

fn options(step: u64) -> SegmentOptions {
    SegmentOptions::default()
        .with_step(step)
        .with_dynamic_step(false)
}

/// Completes the engine's wanted fetch from `store`.
fn fetch(engine: &SegmentEngine, store: &dyn SegmentStore) {
    let req = engine.begin_fetch(0).expect("a fetch is wanted");
    engine
        .complete_fetch(0, store.allocate(engine.tag(), req.step))
        .unwrap();
}

#[test]
fn the_unissued_tail_of_the_current_range_is_offered_once_and_only_when_closed() {
    let store = MemoryStore::new();
    let engine = SegmentEngine::new("order", &options(100)).unwrap();
    fetch(&engine, &store); // [1, 101)
    let ids: Vec<u64> = (0..5).map(|_| engine.try_next().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5]);
    assert_eq!(
        engine.take_give_back(),
        None,
        "an open engine offers nothing"
    );
    engine.close();
    let offer = engine.take_give_back().unwrap();
    assert_eq!(
        offer,
        GiveBack {
            expected_max_id: 101,
            max_id: 6
        }
    );
    assert_eq!(engine.take_give_back(), None, "offered once");
    assert_eq!(engine.try_next(), None);
    assert!(store.give_back("order", 101, 6).unwrap());
    assert_eq!(store.max_id("order"), Some(6));
    // The next engine continues at the first ID the closed one did not issue.
    let next = SegmentEngine::new("order", &options(100)).unwrap();
    fetch(&next, &store);
    assert_eq!(next.try_next(), Some(6));
}

#[test]
fn a_prefetched_range_is_offered_with_the_tail_when_it_follows_directly() {
    let store = MemoryStore::new();
    let engine = SegmentEngine::new("order", &options(100)).unwrap();
    fetch(&engine, &store); // [1, 101)
    for _ in 0..20 {
        engine.try_next().unwrap(); // past the 10% trigger
    }
    fetch(&engine, &store); // [101, 201), prefetched
    engine.close();
    assert_eq!(
        engine.take_give_back(),
        Some(GiveBack {
            expected_max_id: 201,
            max_id: 21
        })
    );
}

#[test]
fn only_the_prefetched_range_is_offered_when_another_range_lies_between() {
    let store = MemoryStore::new();
    let engine = SegmentEngine::new("order", &options(100)).unwrap();
    fetch(&engine, &store); // [1, 101)
    for _ in 0..20 {
        engine.try_next().unwrap();
    }
    store.allocate("order", 100).unwrap(); // someone else: [101, 201)
    fetch(&engine, &store); // [201, 301)
    engine.close();
    assert_eq!(
        engine.take_give_back(),
        Some(GiveBack {
            expected_max_id: 301,
            max_id: 201
        })
    );
}

#[test]
fn nothing_is_offered_while_a_fetch_is_in_flight_or_with_the_option_off() {
    let store = MemoryStore::new();
    let engine = SegmentEngine::new("order", &options(100)).unwrap();
    fetch(&engine, &store);
    for _ in 0..20 {
        engine.try_next().unwrap();
    }
    let _req = engine.begin_fetch(0).unwrap();
    engine.close();
    assert_eq!(engine.take_give_back(), None);

    let off = options(100).with_give_back(false);
    let engine = SegmentEngine::new("order", &off).unwrap();
    fetch(&engine, &store);
    engine.try_next().unwrap();
    engine.close();
    assert_eq!(engine.take_give_back(), None);
}

#[test]
fn stores_take_ids_back_only_when_nobody_allocated_since() {
    let dir = std::env::temp_dir().join(format!("segflake-give-back-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = FileStore::open(dir.join("ids.txt")).unwrap();
    let memory = MemoryStore::new();
    for store in [&file as &dyn SegmentStore, &memory] {
        let mine = store.allocate("order", 100).unwrap(); // [1, 101)
        store.allocate("order", 100).unwrap(); // someone else's [101, 201)
        assert!(!store.give_back("order", mine.max_id, 50).unwrap());
        assert!(
            !store.give_back("order", 201, 201).unwrap(),
            "nothing to give"
        );
        assert!(!store.give_back("other", 201, 150).unwrap(), "no such row");
        assert!(store.give_back("order", 201, 150).unwrap());
        assert_eq!(store.allocate("order", 10).unwrap().max_id, 160);
    }
    assert_eq!(file.records().unwrap()[0].max_id, 160);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_restarted_generator_continues_where_the_closed_one_stopped() {
    let dir = std::env::temp_dir().join(format!("segflake-give-back-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ids.txt");
    let mut all = Vec::new();
    for _ in 0..3 {
        let g = SegmentGenerator::new(FileStore::open(&path).unwrap(), options(1000)).unwrap();
        all.extend((0..250).map(|_| g.next_id("order").unwrap()));
        g.close();
    }
    assert_eq!(all, (1..=750).collect::<Vec<u64>>(), "no gap, no duplicate");
    // Off: the rest of each range is skipped, as before.
    let off = options(1000).with_give_back(false);
    let g = SegmentGenerator::new(FileStore::open(&path).unwrap(), off.clone()).unwrap();
    assert_eq!(g.next_id("order").unwrap(), 751);
    g.close();
    let g = SegmentGenerator::new(FileStore::open(&path).unwrap(), off).unwrap();
    assert_eq!(g.next_id("order").unwrap(), 1751);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn takes_racing_close_never_issue_an_id_that_was_given_back() {
    for round in 0..50 {
        let store = Arc::new(MemoryStore::new());
        let engine = Arc::new(SegmentEngine::new("order", &options(1_000_000)).unwrap());
        fetch(&engine, store.as_ref());
        let go = Arc::new(AtomicBool::new(true));
        let takers: Vec<_> = (0..2)
            .map(|_| {
                let (engine, go) = (Arc::clone(&engine), Arc::clone(&go));
                std::thread::spawn(move || {
                    let mut got = Vec::new();
                    while go.load(Ordering::Relaxed) {
                        match engine.try_next() {
                            Some(id) => got.push(id),
                            None if engine.is_closed() => break,
                            None => {}
                        }
                    }
                    got
                })
            })
            .collect();
        std::thread::yield_now();
        engine.close();
        // No offer only when the takers issued the whole range before `close` (a
        // descheduled main thread on a busy machine): then nothing is left to give back.
        let offer = engine.take_give_back();
        go.store(false, Ordering::Relaxed);
        let given_back_from = offer.map_or(1_000_001, |o| o.max_id);
        let mut seen = HashSet::new();
        for t in takers {
            for id in t.join().unwrap() {
                assert!(
                    id < given_back_from,
                    "round {round}: {id} issued, but {given_back_from} was given back"
                );
                assert!(seen.insert(id), "round {round}: {id} issued twice");
            }
        }
        match offer {
            Some(o) => assert_eq!(o.expected_max_id, 1_000_001),
            None => assert_eq!(
                seen.len(),
                1_000_000,
                "round {round}: no offer, yet the range was not issued whole"
            ),
        }
    }
}

#[test]
fn a_retired_tag_gives_back_its_ids_and_the_others_go_on() {
    let store = Arc::new(MemoryStore::new());
    let g = SegmentGenerator::new(Arc::clone(&store), options(100)).unwrap();
    let order = g.tag("order").unwrap();
    let first: Vec<u64> = (0..10).map(|_| order.next_id().unwrap()).collect();
    assert_eq!(first, (1..=10).collect::<Vec<u64>>());
    assert_eq!(g.next_id("other").unwrap(), 1);
    let (offer, taken) = g.retire("order").expect("order had IDs left");
    assert_eq!(offer.max_id, 11, "the first ID not issued");
    assert!(taken, "nobody allocated since: the store takes them back");
    assert_eq!(store.max_id("order"), Some(11));
    assert!(
        matches!(order.next_id(), Err(segflake::Error::Closed)),
        "a handle on a retired tag issues nothing"
    );
    assert_eq!(g.retire("order"), None, "retired once");
    assert_eq!(g.next_id("other").unwrap(), 2, "the other tags go on");
    // Served again: a fresh engine continues where the retired one stopped.
    assert_eq!(g.next_id("order").unwrap(), 11);
    assert_eq!(g.retire("never-used"), None);
    g.close();
}
