//! Runs the shared conformance vectors in `tests/vectors/` (see its README).

use segflake::{
    Error, FieldOrder, Format, Layout, LayoutSpec, Obfuscator, Preset, Snowflake, SnowflakeOptions,
};
use serde_json::Value;

fn load(name: &str) -> Value {
    let path = format!("{}/../../tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn spec_of(layout: &Value) -> LayoutSpec {
    let preset = layout
        .get("preset")
        .and_then(Value::as_str)
        .map(|p| Preset::from_name(p).unwrap())
        .unwrap_or(Preset::Twitter);
    let mut spec = preset.spec();
    let num = |k: &str| layout.get(k).and_then(Value::as_u64);
    if let Some(v) = num("time_bits") {
        spec.time_bits = v as u8;
    }
    if let Some(v) = num("worker_bits") {
        spec.worker_bits = v as u8;
    }
    if let Some(v) = num("sequence_bits") {
        spec.sequence_bits = v as u8;
    }
    if let Some(v) = num("datacenter_bits") {
        spec.datacenter_bits = v as u8;
    }
    if let Some(v) = num("tick_ms") {
        spec.tick_ms = v;
    }
    if let Some(v) = num("epoch_ms") {
        spec.epoch_ms = v;
    }
    if let Some(v) = num("min_lifetime_years") {
        spec.min_lifetime_years = v as u32;
    }
    if let Some(v) = layout.get("order").and_then(Value::as_str) {
        spec.order = FieldOrder::from_name(v).unwrap();
    }
    spec
}

fn layout_of(case: &Value) -> Layout {
    spec_of(&case["layout"]).build().unwrap()
}

fn id_of(v: &Value) -> u64 {
    v.as_str().unwrap().parse().unwrap()
}

fn assert_error(err: Error, case: &Value) {
    assert_eq!(err.code(), case["error"].as_str().unwrap(), "{case}: {err}");
    if let Some(sub) = case.get("message_contains").and_then(Value::as_str) {
        assert!(err.to_string().contains(sub), "{case}: {err}");
    }
}

#[test]
fn layouts() {
    let file = load("layouts.json");
    let cases = file["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for case in cases {
        let built = spec_of(&case["layout"]).build();
        if case.get("error").is_some() {
            assert_error(built.unwrap_err(), case);
            continue;
        }
        let l = built.unwrap_or_else(|e| panic!("{case}: {e}"));
        let e = &case["expect"];
        let n = |k: &str| e[k].as_u64().unwrap_or_else(|| panic!("{k} in {case}"));
        assert_eq!(u64::from(l.time_bits()), n("time_bits"));
        assert_eq!(u64::from(l.worker_bits()), n("worker_bits"));
        assert_eq!(u64::from(l.sequence_bits()), n("sequence_bits"));
        let dc_bits = e.get("datacenter_bits").and_then(Value::as_u64);
        assert_eq!(u64::from(l.datacenter_bits()), dc_bits.unwrap_or(0));
        assert_eq!(l.tick_ms(), n("tick_ms"));
        assert_eq!(l.epoch_ms(), n("epoch_ms"));
        assert_eq!(l.order().name(), e["order"].as_str().unwrap());
        assert_eq!(l.lifetime_ms(), n("lifetime_ms"));
        assert_eq!(l.exhausts_at_ms(), n("exhausts_at_ms"));
        assert_eq!(l.max_ids_per_second(), n("max_ids_per_second"));
        assert_eq!(l.js_safe_until_ms(), e["js_safe_until_ms"].as_u64());
        assert_eq!(l.max_worker_id(), n("max_worker_id"));
        assert_eq!(l.max_sequence(), n("max_sequence"));
    }
}

#[test]
fn snowflake_compose_and_decode() {
    let file = load("snowflake.json");
    let compose = file["compose"].as_array().unwrap();
    let decode = file["decode"].as_array().unwrap();
    assert!(compose.len() >= 10 && decode.len() >= 3);
    for case in compose.iter().chain(decode) {
        let l = layout_of(case);
        let id = id_of(&case["id"]);
        let d = l.decode(id).unwrap();
        let n = |k: &str| case[k].as_u64().unwrap();
        let datacenter_id = case.get("datacenter_id").and_then(Value::as_u64);
        assert_eq!(
            (
                d.timestamp_ms,
                d.tick,
                d.worker_id,
                d.sequence,
                d.datacenter_id
            ),
            (
                n("timestamp_ms"),
                n("tick"),
                n("worker_id"),
                n("sequence"),
                datacenter_id
            ),
            "{case}"
        );
        let worker = l.worker_field(datacenter_id, d.worker_id).unwrap();
        assert_eq!(l.compose(d.tick, worker, d.sequence).unwrap(), id);
        assert_eq!(
            l.compose_at(d.timestamp_ms, worker, d.sequence).unwrap(),
            id
        );
    }
    for case in file["invalid_options"].as_array().unwrap() {
        let l = layout_of(case);
        let datacenter_id = case.get("datacenter_id").and_then(Value::as_u64);
        let err = l
            .worker_field(datacenter_id, case["worker_id"].as_u64().unwrap())
            .and_then(|worker| Snowflake::new(l, SnowflakeOptions::new(worker)).map(|_| 0))
            .unwrap_err();
        assert_error(err, case);
    }
    for case in file["invalid_decode"].as_array().unwrap() {
        assert_error(
            layout_of(case).decode(id_of(&case["id"])).unwrap_err(),
            case,
        );
    }
}

#[test]
fn codecs() {
    let file = load("codecs.json");
    for case in file["valid"].as_array().unwrap() {
        let id = id_of(&case["id"]);
        for f in Format::ALL {
            let text = case[f.name()].as_str().unwrap();
            assert_eq!(f.encode(id), text);
            assert_eq!(f.parse(text).unwrap(), id);
        }
    }
    for case in file["parse_aliases"].as_array().unwrap() {
        let f = Format::from_name(case["format"].as_str().unwrap()).unwrap();
        assert_eq!(
            f.parse(case["text"].as_str().unwrap()).unwrap(),
            id_of(&case["id"])
        );
    }
    for case in file["invalid"].as_array().unwrap() {
        let f = Format::from_name(case["format"].as_str().unwrap()).unwrap();
        assert_error(f.parse(case["text"].as_str().unwrap()).unwrap_err(), case);
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

#[test]
fn obfuscation() {
    let file = load("obfuscation.json");
    let cases = file["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let o = Obfuscator::from_key_bytes(&hex(case["key_hex"].as_str().unwrap())).unwrap();
        let (id, ob) = (id_of(&case["id"]), id_of(&case["obfuscated"]));
        assert_eq!(o.obfuscate(id).unwrap(), ob, "{case}");
        assert_eq!(o.deobfuscate(ob).unwrap(), id, "{case}");
    }
    for case in file["invalid"].as_array().unwrap() {
        let built = Obfuscator::from_key_bytes(&hex(case["key_hex"].as_str().unwrap()));
        let err = match case.get("id") {
            Some(id) => built.unwrap().obfuscate(id_of(id)).unwrap_err(),
            None => built.unwrap_err(),
        };
        assert_error(err, case);
    }
}
