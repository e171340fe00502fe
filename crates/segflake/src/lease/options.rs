//! How a leased generator claims, renews and checks its worker ID: `LeaseOptions`, its
//! table, and the split of one set of host pairs into snowflake and lease options.

use crate::error::{Error, Result};
use crate::host::SnowflakeConfig;
use crate::host::{
    configure, configure_onto, find, opt, uint, Dialect, OptionSpec, Options, Setting, Value,
    MAX_WAIT_MS,
};
use crate::layout::Layout;

options_struct! {
    /// How a leased generator claims, renews and checks its worker ID.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub struct LeaseOptions {
        /// How long a claim or renewal holds the worker ID without another renewal.
        pub lease_ttl_ms: u64 => with_lease_ttl_ms,
        /// How far beyond the clock plus `max_drift_ms` each renewal raises the time mark.
        pub mark_ahead_ms: u64 => with_mark_ahead_ms,
        /// The worker ID tried first (then the next ones, wrapping around).
        pub preferred_worker_id: Option<u64> => with_preferred_worker_id,
        /// How long start-up keeps sweeping when every worker ID is held.
        pub claim_wait_ms: u64 => with_claim_wait_ms,
        /// How long start-up waits for the clock to come within `max_drift_ms` of the mark.
        pub clock_wait_ms: u64 => with_clock_wait_ms,
        /// The largest accepted difference from the median of live holders' clocks (0: off).
        pub max_peer_skew_ms: u64 => with_max_peer_skew_ms,
        /// How long one registry call may run before it counts as failed.
        pub registry_timeout_ms: u64 => with_registry_timeout_ms,
        /// How far apart the fleet's clocks may be: a claim of a worker ID without a mark
        /// starts this much above the most an unseen predecessor could have reached.
        pub clock_skew_allowance_ms: u64 => with_clock_skew_allowance_ms,
    }
}

impl Default for LeaseOptions {
    fn default() -> Self {
        LeaseOptions {
            lease_ttl_ms: 30_000,
            mark_ahead_ms: 3_000,
            preferred_worker_id: None,
            claim_wait_ms: 10_000,
            clock_wait_ms: 10_000,
            max_peer_skew_ms: 0,
            registry_timeout_ms: 3_000,
            clock_skew_allowance_ms: 1_000,
        }
    }
}

impl LeaseOptions {
    /// How often the lease is renewed and the mark raised: a third of the shorter of the
    /// lease and the mark's lead (`mark_ahead_ms + max_drift_ms`), at least 10 ms.
    pub fn renew_every_ms(&self, max_drift_ms: u64) -> u64 {
        (self.lease_ttl_ms.min(self.mark_ahead_ms + max_drift_ms) / 3).max(10)
    }
}

impl Options for LeaseOptions {
    const WHAT: &'static str = "lease options";
    const SPECS: &'static [OptionSpec] = &[
        opt(
            "lease_ttl_ms",
            "leaseTtlMs",
            uint(100, 86_400_000),
            "30000",
            "How long a claim or renewal holds the worker ID; renewed every third of it (or \
             of mark_ahead_ms + max_drift_ms when shorter).",
        ),
        opt(
            "mark_ahead_ms",
            "markAheadMs",
            uint(0, 3_600_000),
            "3000",
            "How far ahead of the clock (beyond max_drift_ms) each renewal raises the worker \
             ID's time mark; IDs stop at the last accepted mark.",
        ),
        opt(
            "preferred_worker_id",
            "preferredWorkerId",
            uint(0, u64::MAX),
            "none",
            "The worker ID tried first (default: one derived from the owner token), then the \
             next ones.",
        ),
        opt(
            "claim_wait_ms",
            "claimWaitMs",
            uint(0, MAX_WAIT_MS),
            "10000",
            "How long start-up keeps trying while every worker ID is held (NoFreeWorkerId).",
        ),
        opt(
            "clock_wait_ms",
            "clockWaitMs",
            uint(0, MAX_WAIT_MS),
            "10000",
            "How long start-up waits for this host's clock to reach the worker ID's mark \
             (ClockBehindMark).",
        ),
        opt(
            "max_peer_skew_ms",
            "maxPeerSkewMs",
            uint(0, 3_600_000),
            "0",
            "Refuse to start when this host's clock differs from the median of live holders' \
             reports by more (ClockSkew); 0 disables the check.",
        ),
        opt(
            "registry_timeout_ms",
            "registryTimeoutMs",
            uint(1, MAX_WAIT_MS),
            "3000",
            "How long one registry call may run before it counts as failed (a late answer \
             is discarded).",
        ),
        opt(
            "clock_skew_allowance_ms",
            "clockSkewAllowanceMs",
            uint(0, 3_600_000),
            "1000",
            "How far apart the fleet's clocks may be: a worker ID claimed without a time mark \
             (never used, or forgotten by the registry) starts above claim time + max_drift_ms \
             + mark_ahead_ms + this.",
        ),
    ];
    fn defaults() -> Self {
        LeaseOptions::default()
    }
    fn apply(&mut self, name: &str, v: Setting) {
        match name {
            "lease_ttl_ms" => self.lease_ttl_ms = v.uint(),
            "mark_ahead_ms" => self.mark_ahead_ms = v.uint(),
            "preferred_worker_id" => self.preferred_worker_id = Some(v.uint()),
            "claim_wait_ms" => self.claim_wait_ms = v.uint(),
            "clock_wait_ms" => self.clock_wait_ms = v.uint(),
            "max_peer_skew_ms" => self.max_peer_skew_ms = v.uint(),
            "registry_timeout_ms" => self.registry_timeout_ms = v.uint(),
            "clock_skew_allowance_ms" => self.clock_skew_allowance_ms = v.uint(),
            _ => {}
        }
    }
    fn finish(&mut self, _given: &[&'static str]) -> Result<()> {
        Ok(())
    }
    fn settings(&self) -> Vec<(&'static str, Value)> {
        vec![
            ("lease_ttl_ms", Value::uint(self.lease_ttl_ms)),
            ("mark_ahead_ms", Value::uint(self.mark_ahead_ms)),
            (
                "preferred_worker_id",
                Value::opt_uint(self.preferred_worker_id),
            ),
            ("claim_wait_ms", Value::uint(self.claim_wait_ms)),
            ("clock_wait_ms", Value::uint(self.clock_wait_ms)),
            ("max_peer_skew_ms", Value::uint(self.max_peer_skew_ms)),
            ("registry_timeout_ms", Value::uint(self.registry_timeout_ms)),
            (
                "clock_skew_allowance_ms",
                Value::uint(self.clock_skew_allowance_ms),
            ),
        ]
    }
}

/// A leased generator's options from one set of host pairs: the snowflake options except
/// `worker_id` (the registry assigns it; `preferred_worker_id` is a lease option) and the
/// lease options. Returns the configuration (worker ID 0), its layout built at `now_ms`,
/// and the lease options.
pub fn configure_leased<K: AsRef<str>>(
    pairs: impl IntoIterator<Item = (K, Value)>,
    dialect: Dialect,
    now_ms: u64,
) -> Result<(SnowflakeConfig, Layout, LeaseOptions)> {
    let mut lease_pairs = Vec::new();
    let mut snowflake_pairs = Vec::new();
    for (key, value) in pairs {
        let key = key.as_ref();
        if find(LeaseOptions::SPECS, key, dialect).is_some() {
            lease_pairs.push((key.to_owned(), value));
        } else if find(&SnowflakeConfig::SPECS[..2], key, dialect).is_some() {
            let preferred = &LeaseOptions::SPECS[2];
            return Err(Error::invalid_argument(
                key.to_owned(),
                format!(
                    "a leased generator's worker ID (the whole worker field, datacenter bits \
                     included) is claimed from the registry; to try one first, give {}",
                    preferred.spelled(dialect.spelling)
                ),
            ));
        } else {
            snowflake_pairs.push((key.to_owned(), value));
        }
    }
    let lease: LeaseOptions = configure(lease_pairs, dialect)?;
    let config = configure_onto(SnowflakeConfig::defaults(), snowflake_pairs, dialect)?;
    let layout = config.build_at(now_ms, dialect.spelling)?;
    if let Some(p) = lease.preferred_worker_id {
        layout.check_worker(p)?;
    }
    Ok((config, layout, lease))
}
