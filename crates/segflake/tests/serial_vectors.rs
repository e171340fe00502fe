//! Runs `tests/vectors/serials.json`.

use std::sync::Arc;

use segflake::{Error, ManualClock, SerialGenerator, SerialOptions};
use serde_json::Value;

fn load() -> Value {
    let path = format!(
        "{}/../../tests/vectors/serials.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn dec(v: &Value) -> u64 {
    v.as_str().unwrap().parse().unwrap()
}

fn options_of(case: &Value) -> SerialOptions {
    let o = &case["options"];
    SerialOptions::default()
        .with_worker_id(o["worker_id"].as_u64().unwrap())
        .with_worker_digits(o["worker_digits"].as_u64().unwrap() as u8)
        .with_sequence_digits(o["sequence_digits"].as_u64().unwrap() as u8)
        .with_utc_offset_minutes(o["utc_offset_minutes"].as_i64().unwrap() as i32)
        .with_last(o.get("last").map(dec))
}

fn generator(case: &Value, now_ms: u64) -> (SerialGenerator<Arc<ManualClock>>, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(now_ms));
    let g = SerialGenerator::with_clock(options_of(case), Arc::clone(&clock))
        .unwrap_or_else(|e| panic!("{}: {e}", case["name"]));
    (g, clock)
}

fn check_error(err: Error, case: &Value) {
    assert_eq!(err.code(), case["error"].as_str().unwrap(), "{case}: {err}");
    let sub = case["message_contains"].as_str().unwrap();
    assert!(err.to_string().contains(sub), "{case}: {err}");
}

#[test]
fn format_and_decode() {
    let v = load();
    for case in v["format"].as_array().unwrap() {
        let (g, _) = generator(case, 0);
        let now = case["unix_ms"].as_u64().unwrap();
        let seq = case["sequence"].as_u64().unwrap();
        let serial = g.format(now / 1000, seq).unwrap();
        assert_eq!(serial, dec(&case["serial"]), "{}", case["name"]);
        assert_eq!(
            format!("{:012}", g.date_prefix(now / 1000).unwrap()),
            case["date"].as_str().unwrap()
        );
        let p = g.decode(serial).unwrap();
        assert_eq!(p.unix_seconds, case["unix_seconds"].as_u64().unwrap());
        assert_eq!(p.worker_id, case["options"]["worker_id"].as_u64().unwrap());
        assert_eq!(p.sequence, seq);
    }
    for case in v["format_errors"].as_array().unwrap() {
        let (g, _) = generator(case, 0);
        let now = case["unix_ms"].as_u64().unwrap();
        let err = g
            .format(now / 1000, case["sequence"].as_u64().unwrap())
            .unwrap_err();
        check_error(err, case);
    }
}

#[test]
fn local_counter_runs() {
    let v = load();
    for case in v["next"].as_array().unwrap() {
        let steps = case["steps"].as_array().unwrap();
        let (g, clock) = generator(case, steps[0]["unix_ms"].as_u64().unwrap());
        for step in steps {
            clock.set_ms(step["unix_ms"].as_u64().unwrap());
            match step.get("serial") {
                Some(s) => assert_eq!(g.next().unwrap(), dec(s), "{}: {step}", case["name"]),
                None => check_error(g.next().unwrap_err(), step),
            }
        }
    }
}

#[test]
fn shared_counter_runs() {
    let v = load();
    for case in v["counter"].as_array().unwrap() {
        let (g, _) = generator(case, 0);
        for step in case["steps"].as_array().unwrap() {
            let second = g.counter_second(step["now_ms"].as_u64().unwrap());
            assert_eq!(second, step["counter_second"].as_u64().unwrap(), "{step}");
            let got = g
                .accept(second, step["sequence"].as_u64().unwrap())
                .unwrap();
            let want = step["serial"].as_str().map(|s| s.parse::<u64>().unwrap());
            assert_eq!(got, want, "{}: {step}", case["name"]);
        }
    }
}

#[test]
fn invalid_options() {
    let v = load();
    for case in v["invalid_options"].as_array().unwrap() {
        let err = SerialGenerator::with_clock(options_of(case), ManualClock::new(0)).unwrap_err();
        check_error(err, case);
    }
}
