//! `LeaseStats`: a leased generator's state for monitoring, readable as a record.

use crate::host::{field, optional, FieldKind, FieldSpec, Record, Value};

/// A leased generator's state, for monitoring.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LeaseStats {
    /// The owner token this engine claims with (its label, `#`, its nonce).
    pub owner: String,
    /// `claiming`, `starting`, `held`, `releasing`, `failed` or `closed`.
    pub state: &'static str,
    /// The worker ID held, if any.
    pub worker_id: Option<u64>,
    /// How long the lease holds without another renewal, if one is held.
    pub lease_remaining_ms: Option<u64>,
    /// The highest mark the registry accepted for the held worker ID.
    pub mark_ms: u64,
    /// How far the mark is ahead of the clock (negative: IDs are refused until it rises).
    pub mark_ahead_ms: i64,
    /// Successful renewals.
    pub renewals: u64,
    /// How long the last successful renewal took.
    pub last_renew_latency_ms: Option<u64>,
    /// Failed registry calls.
    pub failures: u64,
    /// Failed registry calls since the last successful one.
    pub consecutive_failures: u64,
    /// How many times a held lease was lost (expired or taken).
    pub lost: u64,
    /// The last registry failure, if any.
    pub last_error: Option<String>,
}

impl Record for LeaseStats {
    const NAME: &'static str = "LeaseStats";
    const FIELDS: &'static [FieldSpec] = &[
        field(
            "owner",
            "owner",
            FieldKind::Text,
            "This process incarnation's owner token.",
        ),
        field(
            "state",
            "state",
            FieldKind::Text,
            "claiming, starting, held, releasing, failed or closed.",
        ),
        optional(
            "worker_id",
            "workerId",
            FieldKind::Count,
            "The worker ID held (absent while none is).",
        ),
        optional(
            "lease_remaining_ms",
            "leaseRemainingMs",
            FieldKind::Count,
            "How long the lease is certainly still held without another renewal.",
        ),
        field(
            "mark_ms",
            "markMs",
            FieldKind::Id,
            "The highest time mark the registry accepted: no ID carries a later time.",
        ),
        field(
            "mark_ahead_ms",
            "markAheadMs",
            FieldKind::Float,
            "How far the mark is ahead of the clock (negative: IDs wait for a renewal).",
        ),
        field(
            "renewals",
            "renewals",
            FieldKind::Count,
            "Successful renewals.",
        ),
        optional(
            "last_renew_latency_ms",
            "lastRenewLatencyMs",
            FieldKind::Count,
            "How long the last successful renewal took.",
        ),
        field(
            "failures",
            "failures",
            FieldKind::Count,
            "Registry calls that failed or answered outside the contract.",
        ),
        field(
            "consecutive_failures",
            "consecutiveFailures",
            FieldKind::Count,
            "Failures since the last success.",
        ),
        field(
            "lost",
            "lost",
            FieldKind::Count,
            "Leases lost (expired or taken) while held.",
        ),
        optional(
            "last_error",
            "lastError",
            FieldKind::Text,
            "The registry's last error.",
        ),
    ];
    fn values(&self) -> Vec<Value> {
        vec![
            Value::Str(self.owner.clone()),
            Value::Str(self.state.to_string()),
            Value::opt_uint(self.worker_id),
            Value::opt_uint(self.lease_remaining_ms),
            Value::uint(self.mark_ms),
            Value::from_f64(self.mark_ahead_ms as f64),
            Value::uint(self.renewals),
            Value::opt_uint(self.last_renew_latency_ms),
            Value::uint(self.failures),
            Value::uint(self.consecutive_failures),
            Value::uint(self.lost),
            self.last_error.clone().map_or(Value::Null, Value::Str),
        ]
    }
}
