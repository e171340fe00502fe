//! Runs `tests/vectors/segments.json` against the sans-I/O engine (driven by hand, as the
//! Node and WASM bindings drive it) and against the std driver (as C and Python use it).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use segflake::{
    Allocation, Error, FnStore, MemoryStore, SegmentEngine, SegmentGenerator, SegmentOptions,
    SegmentStore,
};
use serde_json::Value;

fn load() -> Value {
    let path = format!(
        "{}/../../tests/vectors/segments.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn dec(v: &Value) -> u64 {
    v.as_str().unwrap().parse().unwrap()
}

fn options_of(case: &Value) -> SegmentOptions {
    let o = &case["options"];
    let mut opts = SegmentOptions::default();
    if let Some(v) = o.get("step").and_then(Value::as_u64) {
        opts.step = v;
    }
    if let Some(v) = o.get("max_step").and_then(Value::as_u64) {
        opts.max_step = v;
    }
    if let Some(v) = o.get("prefetch_percent").and_then(Value::as_u64) {
        opts.prefetch_percent = v as u8;
    }
    if let Some(v) = o.get("dynamic_step").and_then(Value::as_bool) {
        opts.dynamic_step = v;
    }
    opts.wait_timeout_ms = 2000;
    opts
}

/// The store a sequence case describes: Leaf semantics, or a script of allocations whose
/// last entry repeats forever.
fn store_of(case: &Value) -> Arc<dyn SegmentStore> {
    let store = &case["store"];
    if let Some(leaf) = store.get("leaf") {
        return Arc::new(MemoryStore::with_initial_max_id(dec(
            &leaf["initial_max_id"]
        )));
    }
    let script: Vec<Allocation> = store["script"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| Allocation::new(dec(&a["max_id"]), a["step"].as_u64().unwrap()))
        .collect();
    let next = AtomicUsize::new(0);
    Arc::new(FnStore(move |_: &str, _: u64| {
        let i = next.fetch_add(1, Ordering::SeqCst).min(script.len() - 1);
        Ok::<_, String>(script[i])
    }))
}

fn expected_ids(case: &Value) -> Vec<u64> {
    let mut ids = Vec::new();
    for run in case["ids"].as_array().unwrap() {
        ids.extend(dec(&run[0])..=dec(&run[1]));
    }
    assert_eq!(ids.len() as u64, case["take"].as_u64().unwrap(), "{case}");
    ids
}

fn check_error(err: &Error, case: &Value) {
    assert_eq!(
        err.code(),
        case["then_error"].as_str().unwrap(),
        "{case}: {err}"
    );
    let sub = case["message_contains"].as_str().unwrap();
    assert!(err.to_string().contains(sub), "{}: {err}", case["name"]);
}

/// Drives an engine by hand: fetch when asked, synchronously.
fn take_from_engine(
    engine: &SegmentEngine,
    store: &dyn SegmentStore,
    now: u64,
) -> Result<u64, Error> {
    loop {
        if let Some(id) = engine.try_next() {
            if engine.wants_fetch() {
                if let Some(req) = engine.begin_fetch(now) {
                    let _ = engine.complete_fetch(now, store.allocate(engine.tag(), req.step));
                }
            }
            return Ok(id);
        }
        let failures = engine.failure_count();
        match engine.begin_fetch(now) {
            Some(req) => {
                let _ = engine.complete_fetch(now, store.allocate(engine.tag(), req.step));
            }
            None => return Err(engine.exhausted_error(now)),
        }
        if engine.failure_count() != failures && engine.try_next().is_none() {
            return Err(engine.exhausted_error(now));
        }
    }
}

#[test]
fn sequences_through_the_engine() {
    let v = load();
    for case in v["sequences"].as_array().unwrap() {
        let store = store_of(case);
        let engine = SegmentEngine::new(case["tag"].as_str().unwrap(), &options_of(case)).unwrap();
        let want = expected_ids(case);
        let got: Vec<u64> = (0..want.len())
            .map(|_| take_from_engine(&engine, &*store, 0).unwrap())
            .collect();
        assert_eq!(got, want, "{}", case["name"]);
        if case.get("then_error").is_some() {
            let err = take_from_engine(&engine, &*store, 0).unwrap_err();
            check_error(&err, case);
        }
    }
}

#[test]
fn sequences_through_the_std_driver() {
    let v = load();
    for case in v["sequences"].as_array().unwrap() {
        let store = store_of(case);
        let generator = SegmentGenerator::new(store, options_of(case)).unwrap();
        let tag = generator.tag(case["tag"].as_str().unwrap()).unwrap();
        let want = expected_ids(case);
        let got: Vec<u64> = (0..want.len()).map(|_| tag.next_id().unwrap()).collect();
        assert_eq!(got, want, "{}", case["name"]);
        if case.get("then_error").is_some() {
            let err = tag.next_id().unwrap_err();
            check_error(&err, case);
        }
    }
}

#[test]
fn dynamic_steps_with_explicit_time() {
    let v = load();
    for case in v["dynamic_steps"].as_array().unwrap() {
        let store = MemoryStore::new();
        let engine = SegmentEngine::new("t", &options_of(case)).unwrap();
        for f in case["fetches"].as_array().unwrap() {
            let at = f["at_ms"].as_u64().unwrap();
            while engine.try_next().is_some() {}
            let req = engine
                .begin_fetch(at)
                .expect("a fetch when the segment is used up");
            assert_eq!(
                req.step,
                f["step"].as_u64().unwrap(),
                "{}: {f}",
                case["name"]
            );
            engine
                .complete_fetch(at, store.allocate("t", req.step))
                .unwrap();
        }
    }
}

#[test]
fn invalid_options_and_tags() {
    let v = load();
    for case in v["invalid"].as_array().unwrap() {
        let err = SegmentEngine::new(case["tag"].as_str().unwrap(), &options_of(case)).unwrap_err();
        assert_eq!(err.code(), case["error"].as_str().unwrap(), "{case}");
        let sub = case["message_contains"].as_str().unwrap();
        assert!(err.to_string().contains(sub), "{}: {err}", case["name"]);
    }
}
