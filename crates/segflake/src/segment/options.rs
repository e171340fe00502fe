//! The segment options table, `SegmentStats` as a record, and reading a store's answer from
//! a host value.

use std::borrow::Cow;

use super::{Allocation, SegmentEngine, SegmentOptions, SegmentStats, MAX_ID};
use crate::error::{quoted, Error, Result};
use crate::host::{
    field, opt, optional, uint, FieldKind, FieldSpec, Kind, OptionSpec, Options, Record, Setting,
    Spelling, Value, MAX_WAIT_MS,
};

impl Options for SegmentOptions {
    const WHAT: &'static str = "segment options";
    const SPECS: &'static [OptionSpec] = &[
        opt(
            "step",
            "step",
            uint(1, MAX_ID),
            "1000",
            "The step of the first requests, and the floor of the dynamic step (a store that \
             keeps a step per tag, as Leaf's leaf_alloc.step, overrides it for that tag).",
        ),
        opt(
            "max_step",
            "maxStep",
            uint(1, MAX_ID),
            "1000000",
            "The ceiling of the dynamic step (raised to step when only step is given).",
        ),
        opt(
            "dynamic_step",
            "dynamicStep",
            Kind::Bool,
            "true",
            "Leaf's dynamic step: double when a segment lasted under 15 minutes, halve over 30.",
        ),
        opt(
            "prefetch_percent",
            "prefetchPercent",
            uint(0, 100),
            "10",
            "Fetch the next segment once this percentage of the current one is used.",
        ),
        opt(
            "retry_backoff_ms",
            "retryBackoffMs",
            uint(0, MAX_WAIT_MS),
            "1000",
            "After a failed fetch, retry a prefetch no sooner than this while IDs remain.",
        ),
        opt(
            "wait_timeout_ms",
            "waitTimeoutMs",
            uint(1, MAX_WAIT_MS),
            "1000",
            "How long a caller waits for a segment before SegmentsExhausted.",
        ),
        opt(
            "store_timeout_ms",
            "storeTimeoutMs",
            uint(1, MAX_WAIT_MS),
            "10000",
            "How long one store call may run before it counts as failed (its late answer is \
             discarded, never issued).",
        ),
        opt(
            "give_back",
            "giveBack",
            Kind::Bool,
            "true",
            "On a graceful close, give the fetched but unissued IDs back to the store when \
             nobody allocated after them, so a restart continues without a gap.",
        ),
        OptionSpec {
            name: "fetch_threads",
            camel: "fetchThreads",
            kind: uint(1, 64),
            default: Some("1"),
            threads_only: true,
            flag: None,
            doc: crate::host::doc_text(
                "Background threads calling the store; with more than one, different tags \
                  are fetched concurrently.",
            ),
        },
    ];
    fn defaults() -> Self {
        SegmentOptions::default()
    }
    fn apply(&mut self, name: &str, v: Setting) {
        match name {
            "step" => self.step = v.uint(),
            "max_step" => self.max_step = v.uint(),
            "dynamic_step" => self.dynamic_step = v.boolean(),
            "prefetch_percent" => self.prefetch_percent = v.uint() as u8,
            "retry_backoff_ms" => self.retry_backoff_ms = v.uint(),
            "wait_timeout_ms" => self.wait_timeout_ms = v.uint(),
            "store_timeout_ms" => self.store_timeout_ms = v.uint(),
            "fetch_threads" => self.fetch_threads = v.uint() as usize,
            "give_back" => self.give_back = v.boolean(),
            _ => {}
        }
    }
    fn finish(&mut self, given: &[&'static str]) -> Result<()> {
        if given.contains(&"step") && !given.contains(&"max_step") {
            self.max_step = self.max_step.max(self.step);
        }
        self.validate()
    }
    fn settings(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("step", Value::uint(self.step)),
            ("max_step", Value::uint(self.max_step)),
            ("dynamic_step", Value::Bool(self.dynamic_step)),
            (
                "prefetch_percent",
                Value::uint(self.prefetch_percent.into()),
            ),
            ("retry_backoff_ms", Value::uint(self.retry_backoff_ms)),
            ("wait_timeout_ms", Value::uint(self.wait_timeout_ms)),
            ("store_timeout_ms", Value::uint(self.store_timeout_ms)),
            ("give_back", Value::Bool(self.give_back)),
            ("fetch_threads", Value::uint(self.fetch_threads as u64)),
        ]
    }
}

/// A store's answer read from a host value: a map with `max_id` (JS: `maxId`) and `step`,
/// non-negative integers, and optionally `tag_step` (JS: `tagStep`), the step the store
/// keeps for the tag. `null`/`None` says the store has no such tag
/// ([`Error::UnknownTag`]). Anything else is refused with
/// [`Error::StoreContractViolation`] saying what the store returned and what is expected;
/// the engine then checks the range itself ([`crate::SegmentEngine::complete_fetch`]).
pub fn allocation_of(tag: &str, answer: &Value, spelling: Spelling) -> Result<Allocation> {
    let camel = spelling == Spelling::Camel;
    let (max_id_key, tag_step_key) = if camel {
        ("maxId", "tagStep")
    } else {
        ("max_id", "tag_step")
    };
    let expected = format!(
        "expected {{ {max_id_key}, step }} (and optionally {tag_step_key}, or delta and \
         remainder) with non-negative integers, or {} for a tag the store does not have",
        if camel { "null" } else { "None" }
    );
    let refuse = |what: String| Error::StoreContractViolation {
        tag: tag.to_owned(),
        reason: format!("the store returned {what}; {expected}"),
    };
    let pairs = match answer {
        Value::Map(pairs) => pairs,
        Value::Null => {
            return Err(Error::UnknownTag {
                tag: tag.to_owned(),
            })
        }
        other => return Err(refuse(other.to_string())),
    };
    let get = |key: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .unwrap_or(&Value::Null)
    };
    let read = |key: &str| match get(key) {
        Value::Int(i) => u64::try_from(*i).map_err(|_| refuse(format!("{key} = {i}"))),
        Value::Null => Err(refuse(format!("an answer without {key}"))),
        other => Err(refuse(format!("{key} = {other}"))),
    };
    let mut allocation = Allocation::new(read(max_id_key)?, read("step")?);
    if !matches!(get(tag_step_key), Value::Null) {
        allocation = allocation.with_tag_step(read(tag_step_key)?);
    }
    if !matches!((get("delta"), get("remainder")), (Value::Null, Value::Null)) {
        allocation = allocation.with_residue(read("delta")?, read("remainder")?);
    }
    Ok(allocation)
}

impl SegmentEngine {
    /// Hands the store's `answer` (as [`allocation_of`] reads it) to the fetch in flight.
    /// An answer that is not a usable allocation is recorded as the fetch's failure and
    /// returned, so none of its IDs is issued and an unknown tag stays one.
    pub fn complete_answer(&self, now_ms: u64, answer: &Value, spelling: Spelling) -> Result<()> {
        match allocation_of(self.tag(), answer, spelling) {
            Ok(allocation) => self.complete_fetch(now_ms, Ok(allocation)),
            Err(refused) => {
                let _ = self.complete_fetch(now_ms, Err(refused.clone().into()));
                Err(refused)
            }
        }
    }

    /// Records the failure of the store call in flight; `error` is the host's text of the
    /// store's error, recorded as [`store_failed_message`] writes it. Returns that failure
    /// as [`Error::Store`], or [`Error::InvalidArgument`] when no fetch was in flight.
    pub fn fail_fetch(&self, now_ms: u64, error: &str) -> Result<()> {
        self.complete_fetch(now_ms, Err(store_failed_message(error).into()))
    }
}

/// The failure recorded when a store call outlives `store_timeout_ms`.
pub fn store_timeout_message(tag: &str, step: u64, timeout_ms: u64, spelling: Spelling) -> String {
    let option = SegmentOptions::SPECS
        .iter()
        .find(|s| s.name == "store_timeout_ms")
        .map_or(Cow::Borrowed("store_timeout_ms"), |s| s.spelled(spelling));
    format!(
        "the store did not answer allocate({tag}, {step}) within {timeout_ms} ms ({option})",
        tag = quoted(tag)
    )
}

/// The failure recorded when a store call fails; `error` is the host's text of its error.
pub fn store_failed_message(error: &str) -> String {
    format!("the store failed: {error}")
}

impl Record for SegmentStats {
    const NAME: &'static str = "SegmentStats";
    const FIELDS: &'static [FieldSpec] = &[
        field("tag", "tag", FieldKind::Text, "The business tag."),
        field(
            "current_start",
            "currentStart",
            FieldKind::Id,
            "The current segment's first ID (equal to current_end when there is none yet).",
        ),
        field(
            "current_end",
            "currentEnd",
            FieldKind::Id,
            "The current segment's end (exclusive).",
        ),
        field(
            "position",
            "position",
            FieldKind::Id,
            "The next ID the current segment would issue.",
        ),
        field(
            "remaining",
            "remaining",
            FieldKind::Count,
            "IDs left in the current segment.",
        ),
        field(
            "next_ready",
            "nextReady",
            FieldKind::Bool,
            "Whether the next segment is ready.",
        ),
        field(
            "next_start",
            "nextStart",
            FieldKind::Id,
            "The next segment's first ID (0 when not ready).",
        ),
        field(
            "next_end",
            "nextEnd",
            FieldKind::Id,
            "The next segment's end (0 when not ready).",
        ),
        field(
            "step",
            "step",
            FieldKind::Count,
            "The step of the fetch in flight, or of the last request.",
        ),
        field(
            "fetch_in_flight",
            "fetchInFlight",
            FieldKind::Bool,
            "Whether a store call is running.",
        ),
        field(
            "fetches",
            "fetches",
            FieldKind::Count,
            "Completed fetches, successful or not.",
        ),
        field("failures", "failures", FieldKind::Count, "Failed fetches."),
        field(
            "consecutive_failures",
            "consecutiveFailures",
            FieldKind::Count,
            "Failed fetches in a row.",
        ),
        optional(
            "last_error",
            "lastError",
            FieldKind::Text,
            "The last failure (store error or refused range).",
        ),
        optional(
            "last_fetch_latency_ms",
            "lastFetchLatencyMs",
            FieldKind::Count,
            "How long the last completed fetch took, in milliseconds.",
        ),
        field(
            "issued",
            "issued",
            FieldKind::Count,
            "IDs taken from this tag's segments so far.",
        ),
        field(
            "ids_per_second",
            "idsPerSecond",
            FieldKind::Float,
            "Recent consumption rate.",
        ),
        optional(
            "runway_seconds",
            "runwaySeconds",
            FieldKind::Float,
            "Seconds the buffered IDs would last at ids_per_second if the store went down \
                  now; absent when nothing is being consumed.",
        ),
    ];
    fn values(&self) -> Vec<Value> {
        vec![
            Value::Str(self.tag.clone()),
            Value::uint(self.current_start),
            Value::uint(self.current_end),
            Value::uint(self.position),
            Value::uint(self.remaining),
            Value::Bool(self.next_ready),
            Value::uint(self.next_start),
            Value::uint(self.next_end),
            Value::uint(self.step),
            Value::Bool(self.fetch_in_flight),
            Value::uint(self.fetches),
            Value::uint(self.failures),
            Value::uint(self.consecutive_failures),
            self.last_error.clone().map_or(Value::Null, Value::Str),
            Value::opt_uint(self.last_fetch_latency_ms),
            Value::uint(self.issued),
            Value::Float(self.ids_per_second),
            self.runway_seconds.map_or(Value::Null, Value::Float),
        ]
    }
}
