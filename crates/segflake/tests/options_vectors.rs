//! `tests/vectors/options.json`: host key/value inputs → accepted settings or `{code,
//! message}`, in snake case (Rust, Python, C) and camel case (JS). Every binding runs the
//! same file through its own host values; this test holds the core to it. After a
//! deliberate change, `SEGFLAKE_BLESS=1 cargo test --test options_vectors` rewrites the
//! expectations (review the diff: it is every binding's contract).

use segflake::host::{self, Dialect, Value};
use serde_json::{json, Map, Value as Json};

/// Inputs are valid or refused as stated at any time from 2026-11 to 2030.
const NOW_MS: u64 = 1_795_000_000_000; // the file's now_ms (2026-11-18)

fn path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors/options.json")
}

/// An input value: JSON scalars, objects for nested layouts, `{"int": "digits"}` for
/// integers beyond 2^53.
fn value_of(j: &Json, camel: bool) -> Value {
    match j {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) if n.is_i64() || n.is_u64() => {
            Value::Int(n.to_string().parse().expect("an integer"))
        }
        Json::Number(n) => Value::Float(n.as_f64().expect("a float")),
        Json::String(s) => Value::Str(s.clone()),
        Json::Object(o) if o.len() == 1 && o.contains_key("int") => {
            Value::Int(o["int"].as_str().unwrap().parse().unwrap())
        }
        Json::Object(o) => Value::Map(pairs_of(o, camel)),
        Json::Array(_) => Value::Opaque("an array".into()),
    }
}

/// Input keys are snake case; the camel dialect gets them in camel case.
fn pairs_of(o: &Map<String, Json>, camel: bool) -> Vec<(String, Value)> {
    o.iter()
        .map(|(k, v)| {
            let key = if camel { camel_case(k) } else { k.clone() };
            (key, value_of(v, camel))
        })
        .collect()
}

fn camel_case(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Settings as JSON: integers beyond 2^53 as decimal strings.
fn json_of(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) if i.unsigned_abs() <= (1 << 53) => json!(*i as i64),
        Value::Int(i) => json!(i.to_string()),
        Value::Float(f) => json!(f),
        Value::Str(s) | Value::Opaque(s) => json!(s),
        Value::Map(pairs) => {
            Json::Object(pairs.iter().map(|(k, v)| (k.clone(), json_of(v))).collect())
        }
        Value::List(items) => Json::Array(items.iter().map(json_of).collect()),
    }
}

fn outcome(set: &str, input: &Map<String, Json>, dialect: Dialect) -> Json {
    let camel = dialect == Dialect::JS;
    match segflake::catalog::settings_of(set, pairs_of(input, camel), dialect, NOW_MS) {
        Ok(settings) => json!({ "settings": json_of(&Value::Map(settings)) }),
        Err(e) => json!({ "error": { "code": e.code(), "message": e.to_string() } }),
    }
}

#[test]
fn the_core_gives_every_options_vector() {
    let text = std::fs::read_to_string(path()).unwrap();
    let mut doc: Json = serde_json::from_str(&text).unwrap();
    let bless = std::env::var_os("SEGFLAKE_BLESS").is_some();
    let mut mismatches = Vec::new();
    for case in doc["cases"].as_array_mut().unwrap() {
        let set = case["set"].as_str().unwrap().to_owned();
        let input = case["input"].as_object().unwrap().clone();
        for (key, dialect) in [("snake", Dialect::NATIVE), ("camel", Dialect::JS)] {
            let got = outcome(&set, &input, dialect);
            if bless {
                case[key] = got;
            } else if case[key] != got {
                mismatches.push(format!(
                    "{} ({key}):\n  expected {}\n  got      {got}",
                    case["name"], case[key]
                ));
            }
        }
    }
    if bless {
        std::fs::write(path(), serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn the_vectors_cover_every_option_and_both_outcomes() {
    let doc: Json = serde_json::from_str(&std::fs::read_to_string(path()).unwrap()).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    for (set, _, specs) in segflake::catalog::OPTION_SETS {
        for spec in *specs {
            let given = cases.iter().any(|c| {
                c["set"] == *set
                    && c["input"].as_object().unwrap().contains_key(spec.name)
                    && c["snake"].get("settings").is_some()
            });
            assert!(given, "no accepted case of {set} gives {}", spec.name);
            let refused = cases.iter().any(|c| {
                c["set"] == *set
                    && c["input"].as_object().unwrap().contains_key(spec.name)
                    && c["snake"].get("error").is_some()
            });
            let has_refusals =
                !matches!(spec.kind, host::Kind::Bool) || spec.name == "dynamic_step";
            assert!(
                refused || !has_refusals || spec.name == "preset",
                "no refused case of {set} names {}",
                spec.name
            );
        }
    }
}
