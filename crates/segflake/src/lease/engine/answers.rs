//! Reading registry answers against the contract in the module docs; a refusal says what
//! the registry answered and what is allowed.

use crate::host::Value;
use crate::layout::Layout;

/// A successful claim answer.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Claimed {
    pub(super) worker_id: u64,
    pub(super) mark_ms: u64,
    /// From a registry in Leaf's layout: the identity's record (`identity`, `version`, and
    /// how long ago it was last written, `age_ms`, by the registry's clock).
    pub(super) record: Option<(String, u64, u64)>,
}

/// A successful `claim` answer: the mark of the worker ID asked for, or `{worker_id,
/// mark_ms}` from a registry that assigns worker IDs itself (by node identity, as
/// ZooKeeper in Leaf's layout does; the assigned ID must fit the layout), which may add
/// its record's `identity`, `version` and `age_ms` (all three or none).
pub(super) fn claimed(answer: &Value, asked: u64, layout: &Layout) -> Option<Claimed> {
    if let Some(mark_ms) = answer.as_u64() {
        return Some(Claimed {
            worker_id: asked,
            mark_ms,
            record: None,
        });
    }
    let Value::Map(pairs) = answer else {
        return None;
    };
    let find = |snake: &str, camel: &str| field(pairs, snake, camel);
    let get = |snake: &str, camel: &str| find(snake, camel).and_then(Value::as_u64);
    let worker_id = get("worker_id", "workerId")?;
    let mark_ms = get("mark_ms", "markMs")?;
    let record = match (
        find("identity", "identity"),
        get("version", "version"),
        get("age_ms", "ageMs"),
    ) {
        (Some(Value::Str(identity)), Some(version), Some(age)) => {
            Some((identity.clone(), version, age))
        }
        (None, None, None) => None,
        _ => return None,
    };
    let keys = if record.is_some() { 5 } else { 2 };
    (pairs.len() == keys && worker_id <= layout.max_worker_id()).then_some(Claimed {
        worker_id,
        mark_ms,
        record,
    })
}

/// The worker ID of a claim answer that is an assignment (`{worker_id, mark_ms, ...}`)
/// beyond `layout`'s worker IDs: a registry that numbers identities ran past the layout.
pub(super) fn assigned_beyond(answer: &Value, layout: &Layout) -> Option<u64> {
    let Value::Map(pairs) = answer else {
        return None;
    };
    let worker_id = field(pairs, "worker_id", "workerId").and_then(Value::as_u64)?;
    (worker_id > layout.max_worker_id()).then_some(worker_id)
}

/// The value of an answer's key, spelt `snake` or `camel` (adapters answer in their
/// language's case).
fn field<'a>(pairs: &'a [(String, Value)], snake: &str, camel: &str) -> Option<&'a Value> {
    pairs
        .iter()
        .find(|(k, _)| k == snake || k == camel)
        .map(|(_, v)| v)
}

pub(super) fn contract(call: &str, got: &Value, allowed: &str) -> String {
    format!("{call} answered {got} outside the registry contract; allowed: {allowed}")
}

/// The median of the other live holders' clocks now, and how many there are.
pub(super) fn peer_median(
    answer: &Result<Value, String>,
    me: u64,
) -> std::result::Result<Option<(u64, u64)>, String> {
    let list = match answer {
        Err(e) => return Err(format!("peers failed: {e}")),
        Ok(Value::List(items)) => items,
        Ok(other) => {
            return Err(contract(
                "peers",
                other,
                "a list of {worker_id, reported_ms, age_ms}",
            ))
        }
    };
    let mut clocks = Vec::with_capacity(list.len());
    for item in list {
        let get = |snake: &str, camel: &str| match item {
            Value::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| k == snake || k == camel)
                .and_then(|(_, v)| v.as_u64()),
            _ => None,
        };
        let fields = match item {
            Value::List(triple) if triple.len() == 3 => {
                (triple[0].as_u64(), triple[1].as_u64(), triple[2].as_u64())
            }
            _ => (
                get("worker_id", "workerId"),
                get("reported_ms", "reportedMs"),
                get("age_ms", "ageMs"),
            ),
        };
        match fields {
            (Some(w), Some(reported), Some(age)) => {
                if w != me {
                    clocks.push(reported + age);
                }
            }
            _ => {
                return Err(contract(
                    "peers",
                    item,
                    "entries {worker_id, reported_ms, age_ms} or [worker_id, reported_ms, \
                     age_ms] of integers",
                ))
            }
        }
    }
    if clocks.is_empty() {
        return Ok(None);
    }
    crate::lease::sort_by_key(&mut clocks, |c| *c);
    let n = clocks.len();
    let median = if n % 2 == 1 {
        clocks[n / 2]
    } else {
        (clocks[n / 2 - 1] + clocks[n / 2]) / 2
    };
    Ok(Some((median, n as u64)))
}
