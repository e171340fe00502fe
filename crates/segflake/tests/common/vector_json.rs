//! The shared vectors' JSON as the core's host values, for the tests that replay them
//! (`registry_vectors.rs`, the simulator's `vectors.rs`).

use segflake::Value;
use serde_json::Value as Json;

/// A JSON value as a host value (numbers are integers).
pub fn value(j: &Json) -> Value {
    match j {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::Int(
            n.as_i64()
                .map(i128::from)
                .or(n.as_u64().map(i128::from))
                .expect("an integer"),
        ),
        Json::String(s) => Value::Str(s.clone()),
        Json::Array(items) => Value::List(items.iter().map(value).collect()),
        Json::Object(map) => Value::Map(map.iter().map(|(k, v)| (k.clone(), value(v))).collect()),
    }
}

/// Maps compared regardless of key order.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.iter().any(|(k2, v2)| k == k2 && same(v, v2)))
        }
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        _ => a == b,
    }
}
