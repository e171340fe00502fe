//! Worker-ID leases: worker IDs that assign themselves from a shared registry, with a
//! write-ahead time mark that keeps two holders of one worker ID disjoint.
//!
//! [`LeaseEngine`] is the protocol as a sans-I/O state machine: the host's driver asks it
//! what to do ([`LeaseEngine::poll`] → call the registry, sleep, or start the generator),
//! performs the registry call on its own I/O model, and hands the answer back
//! ([`LeaseEngine::answer`]). The std driver ([`LeasedSnowflake`], over the [`Registry`]
//! trait) runs it on a thread; the JS and asyncio drivers run it on promises.
//!
//! # The registry
//! Per worker ID it holds an `owner` token, the lease's expiry (on the registry's clock),
//! a time mark `mark_ms` that only grows, and the holder's last clock report. Four calls,
//! the same in every language (argument names snake_case, or camelCase in JS):
//!
//! | call | arguments | answer |
//! |---|---|---|
//! | `claim` | `worker_id, owner, ttl_ms` | the ID's mark (0 if never used) when it was free, expired or already this owner's and is now leased to `owner`; `null` when another owner holds it. A registry that assigns worker IDs itself (ZooKeeper in Leaf's layout: one ID per node identity) claims its own choice and answers `{worker_id, mark_ms}` |
//! | `renew` | `worker_id, owner, ttl_ms, mark_ms, reported_ms` | if `owner` holds the ID: extends the lease, raises the mark to at least `mark_ms`, records the report, and answers the stored mark; else `null` |
//! | `release` | `worker_id, owner, mark_ms` | if `owner` holds the ID: sets the mark to `mark_ms` and ends the lease; answers whether it did |
//! | `peers` | — | the live holders' reports: a list of `{worker_id, reported_ms, age_ms}` (`age_ms` by the registry's clock) |
//!
//! # Invariants
//! * **The safety rule.** The generator never issues an ID whose time is above a mark the
//!   registry accepted from this owner (the generator's [`Fence`] caps it), and a new
//!   holder starts above the mark it found at claim time. A holder paused past its lease
//!   therefore issues only IDs at or below its mark, the next holder only above it.
//! * A lease is measured on the monotonic clock from the moment the successful call was
//!   *sent*; the fence is shut before it can have expired ([`Error::LeaseExpired`]).
//! * A late answer (after `registry_timeout_ms`) is discarded, never applied.
//! * Release lowers the mark only to the generator's sealed high-water mark, which no
//!   later ID can exceed.

pub mod conversation;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
mod driver;
pub mod etcd;
pub mod redis;
pub mod schema;
pub mod sql;
pub mod zookeeper;

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use driver::{LeasedSnowflake, MemoryRegistry, Registry};

use std::sync::Arc;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::host::{field, opt, optional, uint, FieldKind, FieldSpec, OptionSpec, Record};
use crate::host::{Options, Setting, Spelling, Value, MAX_WAIT_MS};
use crate::layout::Layout;
use crate::snowflake::{Fence, Snowflake, SnowflakeOptions};

/// How a leased generator claims, renews and checks its worker ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LeaseOptions {
    /// How long a claim or renewal holds the worker ID without another renewal.
    pub lease_ttl_ms: u64,
    /// How far beyond the clock plus `max_drift_ms` each renewal raises the time mark.
    pub mark_ahead_ms: u64,
    /// The worker ID tried first (then the next ones, wrapping around).
    pub preferred_worker_id: Option<u64>,
    /// How long start-up keeps sweeping when every worker ID is held.
    pub claim_wait_ms: u64,
    /// How long start-up waits for the clock to come within `max_drift_ms` of the mark.
    pub clock_wait_ms: u64,
    /// The largest accepted difference from the median of live holders' clocks (0: off).
    pub max_peer_skew_ms: u64,
    /// How long one registry call may run before it counts as failed.
    pub registry_timeout_ms: u64,
    /// How far apart the fleet's clocks may be: a claim of a worker ID without a mark
    /// starts this much above the most an unseen predecessor could have reached.
    pub clock_skew_allowance_ms: u64,
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

/// One registry call the driver must make (see the module docs for the contract).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryCall {
    Claim {
        worker_id: u64,
        owner: String,
        ttl_ms: u64,
    },
    Renew {
        worker_id: u64,
        owner: String,
        ttl_ms: u64,
        mark_ms: u64,
        reported_ms: u64,
    },
    Release {
        worker_id: u64,
        owner: String,
        mark_ms: u64,
    },
    Peers,
}

impl RegistryCall {
    /// The call named `name` with its arguments in call order (as
    /// [`args`](RegistryCall::args) lists them), for protocols driven by a host.
    pub fn from_args(name: &str, args: &[Value]) -> std::result::Result<RegistryCall, String> {
        let want = match name {
            "claim" => 3,
            "renew" => 5,
            "release" => 3,
            "peers" => 0,
            other => {
                return Err(format!(
                    "no registry call {other:?}; the calls are claim, renew, release and peers"
                ))
            }
        };
        if args.len() != want {
            return Err(format!("{name} takes {want} arguments, not {}", args.len()));
        }
        let int = |i: usize| {
            args[i].as_u64().ok_or_else(|| {
                format!(
                    "argument {} of {name} is {}, not a non-negative integer",
                    i + 1,
                    args[i].to_json()
                )
            })
        };
        let owner = || match &args[1] {
            Value::Str(s) => Ok(s.clone()),
            other => Err(format!(
                "the owner of {name} is {}, not a string",
                other.to_json()
            )),
        };
        Ok(match name {
            "claim" => RegistryCall::Claim {
                worker_id: int(0)?,
                owner: owner()?,
                ttl_ms: int(2)?,
            },
            "renew" => RegistryCall::Renew {
                worker_id: int(0)?,
                owner: owner()?,
                ttl_ms: int(2)?,
                mark_ms: int(3)?,
                reported_ms: int(4)?,
            },
            "release" => RegistryCall::Release {
                worker_id: int(0)?,
                owner: owner()?,
                mark_ms: int(2)?,
            },
            _ => RegistryCall::Peers,
        })
    }

    /// The method name: `claim`, `renew`, `release` or `peers`.
    pub fn name(&self) -> &'static str {
        match self {
            RegistryCall::Claim { .. } => "claim",
            RegistryCall::Renew { .. } => "renew",
            RegistryCall::Release { .. } => "release",
            RegistryCall::Peers => "peers",
        }
    }

    /// The arguments in call order, named as `spelling` spells them.
    pub fn args(&self, spelling: Spelling) -> Vec<(&'static str, Value)> {
        let camel = spelling == Spelling::Camel;
        let name = |snake: &'static str, camel_name: &'static str| {
            if camel {
                camel_name
            } else {
                snake
            }
        };
        let owner_of = |o: &String| (name("owner", "owner"), Value::Str(o.clone()));
        match self {
            RegistryCall::Claim {
                worker_id,
                owner,
                ttl_ms,
            } => vec![
                (name("worker_id", "workerId"), Value::uint(*worker_id)),
                owner_of(owner),
                (name("ttl_ms", "ttlMs"), Value::uint(*ttl_ms)),
            ],
            RegistryCall::Renew {
                worker_id,
                owner,
                ttl_ms,
                mark_ms,
                reported_ms,
            } => vec![
                (name("worker_id", "workerId"), Value::uint(*worker_id)),
                owner_of(owner),
                (name("ttl_ms", "ttlMs"), Value::uint(*ttl_ms)),
                (name("mark_ms", "markMs"), Value::uint(*mark_ms)),
                (name("reported_ms", "reportedMs"), Value::uint(*reported_ms)),
            ],
            RegistryCall::Release {
                worker_id,
                owner,
                mark_ms,
            } => vec![
                (name("worker_id", "workerId"), Value::uint(*worker_id)),
                owner_of(owner),
                (name("mark_ms", "markMs"), Value::uint(*mark_ms)),
            ],
            RegistryCall::Peers => vec![],
        }
    }
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Make this registry call and pass its answer to [`LeaseEngine::answer`] with `id`.
    Call { id: u64, call: RegistryCall },
    /// Poll again after this many milliseconds (or sooner, after an answer or `close`).
    Sleep(u64),
    /// Start-up succeeded: build the generator for `worker_id` with `not_before_ms` and the
    /// engine's [`fence`](LeaseEngine::fence), then keep polling. Returned once.
    Ready { worker_id: u64, not_before_ms: u64 },
    /// Start-up failed (any claimed worker ID is already released). Terminal.
    Failed(Error),
    /// Closed and released. Terminal.
    Closed,
}

impl Step {
    /// The step as a host value, for drivers written in the host's language:
    /// `{step: "call", id, name, args}`, `{step: "sleep", ms}`, `{step: "ready", worker_id}`,
    /// `{step: "failed", code, message}` or `{step: "closed"}`, with `worker_id` and the
    /// call's argument names as `spelling` spells them.
    pub fn to_value(&self, spelling: Spelling) -> Value {
        let text = |t: &str| Value::Str(t.to_owned());
        let mut pairs = Vec::new();
        let mut add = |k: &str, v: Value| pairs.push((k.to_owned(), v));
        match self {
            Step::Call { id, call } => {
                add("step", text("call"));
                add("id", Value::uint(*id));
                add("name", text(call.name()));
                let args = call.args(spelling).into_iter();
                add(
                    "args",
                    Value::Map(args.map(|(k, v)| (k.to_owned(), v)).collect()),
                );
            }
            Step::Sleep(ms) => {
                add("step", text("sleep"));
                add("ms", Value::uint(*ms));
            }
            Step::Ready { worker_id, .. } => {
                add("step", text("ready"));
                let key = if spelling == Spelling::Camel {
                    "workerId"
                } else {
                    "worker_id"
                };
                add(key, Value::uint(*worker_id));
            }
            Step::Failed(e) => {
                add("step", text("failed"));
                add("code", text(e.code()));
                add("message", Value::Str(e.to_string()));
            }
            Step::Closed => add("step", text("closed")),
        }
        Value::Map(pairs)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Sweeping worker IDs from `offset` past the preferred one.
    Claiming {
        offset: u64,
        held: u64,
        resume_at: u64,
    },
    /// Claimed `worker_id` whose previous mark is `prev_mark`; checking clocks, then the
    /// first renewal opens the fence.
    Starting {
        worker_id: u64,
        prev_mark: u64,
        peers_checked: bool,
    },
    Held {
        worker_id: u64,
    },
    /// Start-up must fail with the held error after releasing `worker_id`.
    Abandoning {
        worker_id: u64,
        mark: u64,
    },
    Releasing {
        worker_id: u64,
        mark: u64,
    },
    Failed,
    Closed,
}

#[derive(Debug, Clone, PartialEq)]
struct LeafCheck {
    identity: String,
    version: u64,
    recheck_at: u64,
}

/// A successful claim answer.
#[derive(Debug, Clone, PartialEq)]
struct Claimed {
    worker_id: u64,
    mark_ms: u64,
    /// From a registry in Leaf's layout: the identity's record (`identity`, `version`, and
    /// how long ago it was last written, `age_ms`, by the registry's clock).
    record: Option<(String, u64, u64)>,
}

/// How often a Leaf snowflake node rewrites its ZooKeeper record (Leaf's
/// `ScheduledExecutorService`, every 3 s).
pub const LEAF_REPORT_MS: u64 = 3_000;
/// Added to [`LEAF_REPORT_MS`] for a Leaf node's scheduling and network delays.
const LEAF_REPORT_SLACK_MS: u64 = 1_500;

#[derive(Debug, Clone, PartialEq)]
struct Pending {
    id: u64,
    call: RegistryCall,
    sent: u64,
}

/// The lease state of one leased generator; see the module docs.
#[derive(Debug)]
pub struct LeaseEngine {
    layout: Layout,
    options: LeaseOptions,
    max_drift_ms: u64,
    host_not_before_ms: u64,
    /// The caller's label (a host name, say), shown in audit rows; never trusted to be
    /// unique.
    label: String,
    /// `label#nonce`: the token every compare-and-set on the registry checks. The nonce
    /// is this engine's own, so two engines given one label never share a token.
    owner: String,
    fence: Arc<Fence>,
    phase: Phase,
    pending: Option<Pending>,
    next_id: u64,
    preferred: u64,
    /// Monotonic start of the current start-up (or recovery) attempt.
    started: u64,
    /// When the current lease may have expired (monotonic), while one is held.
    lease_until: Option<u64>,
    next_renew: u64,
    ready: bool,
    closing: bool,
    /// The error start-up ends with once the claimed ID is released.
    failure: Option<Error>,
    accepted_mark: u64,
    /// The time the current claim starts above (the mark found, or the lead a claim
    /// without a mark gives an unseen predecessor, raised to the host's `not_before_ms`).
    claim_mark: u64,
    /// The mark the current claim found, as the registry answered it: what a release
    /// gives back when this engine issued nothing with the worker ID.
    found_mark: u64,
    /// How much longer than `clock_wait_ms` start-up may wait for the clock: the lead a
    /// claim without a mark gives an unseen predecessor.
    unmarked_wait: u64,
    /// A Leaf node's record seen written within one report period at claim: re-read it
    /// after another period; a change means a live Leaf node.
    leaf_check: Option<LeafCheck>,
    /// Start-up's result, returned by the next poll.
    ready_step: Option<(u64, u64)>,
    stats: Counters,
}

#[derive(Debug, Default, Clone)]
struct Counters {
    claims: u64,
    renewals: u64,
    failures: u64,
    consecutive_failures: u64,
    lost: u64,
    last_error: Option<String>,
    last_renew_latency_ms: Option<u64>,
}

/// A leased generator's state, for monitoring.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseStats {
    pub owner: String,
    /// `claiming`, `starting`, `held`, `releasing`, `failed` or `closed`.
    pub state: &'static str,
    pub worker_id: Option<u64>,
    pub lease_remaining_ms: Option<u64>,
    /// The highest mark the registry accepted for the held worker ID.
    pub mark_ms: u64,
    /// How far the mark is ahead of the clock (negative: IDs are refused until it rises).
    pub mark_ahead_ms: i64,
    pub renewals: u64,
    pub last_renew_latency_ms: Option<u64>,
    pub failures: u64,
    pub consecutive_failures: u64,
    /// How many times a held lease was lost (expired or taken).
    pub lost: u64,
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

/// 64 fresh random bits for an engine's nonce ([`LeaseEngine::new`]): the process's
/// randomly keyed hasher over its ID, the time and a per-process counter, so two engines
/// of one process, of two processes, or of a parent and its forked child differ.
/// WebAssembly hosts take theirs from the host (`crypto.getRandomValues`).
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub fn fresh_nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// The default owner label: the host name where the platform tells it, else `segflake`.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub fn default_label() -> String {
    let from_env = ["HOSTNAME", "COMPUTERNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()));
    let from_file = || {
        std::fs::read_to_string("/etc/hostname")
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    from_env
        .or_else(from_file)
        .map(|h| h.chars().take(MAX_LABEL_BYTES).collect::<String>())
        .filter(|h| h.len() <= MAX_LABEL_BYTES)
        .unwrap_or_else(|| "segflake".into())
}

/// The longest owner label, in bytes. The token the registry stores is the label, `#` and
/// 16 hex digits: at most [`MAX_OWNER_TOKEN_BYTES`].
pub const MAX_LABEL_BYTES: usize = 128;
/// The longest owner token a registry stores (its columns hold at least this many).
pub const MAX_OWNER_TOKEN_BYTES: usize = MAX_LABEL_BYTES + 17;

/// The owner token of an engine labelled `label` with `nonce`.
pub fn owner_token(label: &str, nonce: u64) -> String {
    format!("{label}#{nonce:016x}")
}

fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A renewal that fails is retried after this long (or the renew interval, if shorter).
const RETRY_MS: u64 = 200;
/// Pause between sweeps when every worker ID was held.
const SWEEP_PAUSE_MS: u64 = 250;

impl LeaseEngine {
    /// An engine for a generator of `layout` whose logical clock may run `max_drift_ms`
    /// ahead, that must not issue at or below `not_before_ms` (a host-persisted mark, 0 if
    /// none), claiming as `label` (an audit label such as the host name: many engines may
    /// share it) with this engine's random `nonce` ([`fresh_nonce`]), starting at
    /// monotonic time `mono_ms`. The first worker ID tried is derived from the label, so a
    /// restarted process finds the ID it released (and its mark) first.
    pub fn new(
        layout: Layout,
        options: LeaseOptions,
        max_drift_ms: u64,
        not_before_ms: u64,
        label: String,
        nonce: u64,
        mono_ms: u64,
    ) -> Result<LeaseEngine> {
        if label.is_empty() || label.len() > MAX_LABEL_BYTES || label.contains('\0') {
            return Err(Error::invalid_argument(
                "owner",
                format!(
                    "{label:?} is not an owner label; allowed: 1 to {MAX_LABEL_BYTES} bytes \
                     without NUL"
                ),
            ));
        }
        let capacity = layout.max_worker_id() + 1;
        if let Some(p) = options.preferred_worker_id {
            layout.check_worker(p)?;
        }
        let preferred = options
            .preferred_worker_id
            .unwrap_or_else(|| fnv(&label) % capacity);
        let owner = owner_token(&label, nonce);
        let fence = Arc::new(Fence::shut(
            &layout,
            Error::Registry {
                message: "the generator has not claimed a worker ID yet".into(),
            },
        ));
        crate::fork::track(&fence);
        Ok(LeaseEngine {
            layout,
            options,
            max_drift_ms,
            host_not_before_ms: not_before_ms,
            label,
            owner,
            fence,
            phase: Phase::Claiming {
                offset: 0,
                held: 0,
                resume_at: mono_ms,
            },
            pending: None,
            next_id: 1,
            preferred,
            started: mono_ms,
            lease_until: None,
            next_renew: mono_ms,
            ready: false,
            closing: false,
            failure: None,
            accepted_mark: 0,
            claim_mark: 0,
            found_mark: 0,
            unmarked_wait: 0,
            leaf_check: None,
            ready_step: None,
            stats: Counters::default(),
        })
    }

    /// The fence the generator must be built with.
    pub fn fence(&self) -> &Arc<Fence> {
        &self.fence
    }

    /// The generator for a [`Step::Ready`]: `options` with the claimed `worker_id` and the
    /// mark to start above (`not_before_ms`), capped by this engine's fence.
    pub fn generator<C: Clock>(
        &self,
        options: SnowflakeOptions,
        clock: C,
        worker_id: u64,
        not_before_ms: u64,
    ) -> Result<Snowflake<C>> {
        let options = SnowflakeOptions {
            worker_id,
            not_before_ms: (not_before_ms > 0).then_some(not_before_ms),
            ..options
        };
        Snowflake::with_fence(self.layout, options, clock, self.fence.clone())
    }

    /// The owner token (`label#nonce`) this engine's registry calls carry.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The label the owner token was made from.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The options.
    pub fn options(&self) -> &LeaseOptions {
        &self.options
    }

    /// How many worker IDs the layout offers.
    fn capacity(&self) -> u64 {
        self.layout.max_worker_id() + 1
    }

    /// The worker ID held now, if any.
    pub fn worker_id(&self) -> Option<u64> {
        match self.phase {
            Phase::Starting { worker_id, .. }
            | Phase::Held { worker_id }
            | Phase::Abandoning { worker_id, .. }
            | Phase::Releasing { worker_id, .. } => Some(worker_id),
            _ => None,
        }
    }

    /// Whether the engine has ended (closed or failed at start-up).
    pub fn is_finished(&self) -> bool {
        matches!(self.phase, Phase::Closed | Phase::Failed)
    }

    /// Starts closing: the fence refuses IDs from now on; `high_water_mark_ms` is the
    /// generator's sealed high-water mark (see [`crate::Snowflake::seal`]), which the
    /// release sets as the worker ID's mark so a successor need not wait.
    pub fn close(&mut self, high_water_mark_ms: u64) {
        self.fence.shut_with(Error::Closed);
        if self.closing || self.is_finished() {
            return;
        }
        self.closing = true;
        // Every ID issued with the held worker ID is at or below the sealed high-water
        // mark; before the fence opened for it, none was, and the mark found at claim goes
        // back (not the claim's lead, which may come from a clock far ahead).
        let mark = match self.phase {
            Phase::Held { .. } => high_water_mark_ms.max(self.claim_mark),
            _ => high_water_mark_ms.max(self.found_mark),
        };
        self.phase = match self.worker_id() {
            Some(worker_id) => Phase::Releasing { worker_id, mark },
            None => Phase::Closed,
        };
    }

    /// What to do at monotonic time `mono_ms`, wall time `now_ms`.
    pub fn poll(&mut self, mono_ms: u64, now_ms: u64) -> Step {
        if let Some((worker_id, not_before_ms)) = self.ready_step.take() {
            return Step::Ready {
                worker_id,
                not_before_ms,
            };
        }
        self.check_lease(mono_ms);
        if let Some(p) = &self.pending {
            let timeout_at = p.sent + self.options.registry_timeout_ms;
            if mono_ms < timeout_at {
                let wake = self.lease_until.map_or(timeout_at, |u| u.min(timeout_at));
                return Step::Sleep(wake.saturating_sub(mono_ms).max(1));
            }
            let p = self.pending.take().expect("checked above");
            let message = format!(
                "{} timed out after {} ms (registry_timeout_ms)",
                p.call.name(),
                self.options.registry_timeout_ms
            );
            self.apply(p, mono_ms, now_ms, Err(message));
            return self.poll(mono_ms, now_ms);
        }
        match self.phase {
            Phase::Closed => Step::Closed,
            Phase::Failed => Step::Failed(self.failure.clone().unwrap_or(Error::Closed)),
            Phase::Releasing { worker_id, mark } | Phase::Abandoning { worker_id, mark } => self
                .send(
                    mono_ms,
                    RegistryCall::Release {
                        worker_id,
                        owner: self.owner.clone(),
                        mark_ms: mark,
                    },
                ),
            Phase::Claiming {
                offset, resume_at, ..
            } => {
                if self.closing {
                    self.phase = Phase::Closed;
                    return Step::Closed;
                }
                if mono_ms < resume_at {
                    return Step::Sleep(resume_at - mono_ms);
                }
                let worker_id = (self.preferred + offset) % self.capacity();
                self.send(
                    mono_ms,
                    RegistryCall::Claim {
                        worker_id,
                        owner: self.owner.clone(),
                        ttl_ms: self.options.lease_ttl_ms,
                    },
                )
            }
            Phase::Starting {
                worker_id,
                prev_mark,
                peers_checked,
            } => {
                if let Some(check) = &self.leaf_check {
                    // Nothing is written to the identity's record until the check is done;
                    // a repeated claim (which writes nothing there) keeps the lease.
                    let due = check.recheck_at.min(self.next_renew);
                    if mono_ms < due {
                        return Step::Sleep(due - mono_ms);
                    }
                    return self.send(
                        mono_ms,
                        RegistryCall::Claim {
                            worker_id,
                            owner: self.owner.clone(),
                            ttl_ms: self.options.lease_ttl_ms,
                        },
                    );
                }
                // The peers are asked before any renewal: a host whose clock is off must not
                // raise the worker ID's mark to its own clock first.
                if !peers_checked && self.options.max_peer_skew_ms > 0 && !self.ready {
                    return self.send(mono_ms, RegistryCall::Peers);
                }
                let behind = prev_mark.saturating_sub(now_ms);
                if behind > self.max_drift_ms {
                    let waited = mono_ms - self.started;
                    let needed = behind - self.max_drift_ms;
                    let allowed = self.options.clock_wait_ms + self.unmarked_wait;
                    if self.ready || waited + needed <= allowed {
                        // Keep the lease while the clock catches up.
                        if mono_ms >= self.next_renew {
                            return self.renew(worker_id, mono_ms, now_ms, prev_mark);
                        }
                        return Step::Sleep(needed.min(self.next_renew - mono_ms).max(1));
                    }
                    return self.abandon(
                        worker_id,
                        Error::ClockBehindMark {
                            worker_id,
                            mark_ms: prev_mark,
                            now_ms,
                            max_drift_ms: self.max_drift_ms,
                            waited_ms: waited,
                        },
                        mono_ms,
                        now_ms,
                    );
                }
                if mono_ms < self.next_renew && self.stats.consecutive_failures > 0 {
                    // A failed first renewal is retried after a pause; once the clock caught
                    // up with the mark, the renewal that opens the fence goes at once.
                    return Step::Sleep(self.next_renew - mono_ms);
                }
                self.renew(worker_id, mono_ms, now_ms, prev_mark)
            }
            Phase::Held { worker_id } => {
                if mono_ms >= self.next_renew {
                    return self.renew(worker_id, mono_ms, now_ms, 0);
                }
                let wake = self
                    .lease_until
                    .map_or(self.next_renew, |u| u.min(self.next_renew));
                Step::Sleep(wake.saturating_sub(mono_ms).max(1))
            }
        }
    }

    /// The answer to call `id`, received at `mono_ms`/`now_ms`: the registry's value, or
    /// the error it raised (as text). Answers to other calls (late ones) are ignored.
    pub fn answer(&mut self, id: u64, mono_ms: u64, now_ms: u64, answer: Result<Value, String>) {
        match self.pending.take() {
            Some(p) if p.id == id => self.apply(p, mono_ms, now_ms, answer),
            other => self.pending = other,
        }
    }

    /// The state for monitoring.
    pub fn stats(&self, mono_ms: u64, now_ms: u64) -> LeaseStats {
        let state = match self.phase {
            Phase::Claiming { .. } => "claiming",
            Phase::Starting { .. } => "starting",
            Phase::Held { .. } => "held",
            Phase::Releasing { .. } | Phase::Abandoning { .. } => "releasing",
            Phase::Failed => "failed",
            Phase::Closed => "closed",
        };
        let c = &self.stats;
        LeaseStats {
            owner: self.owner.clone(),
            state,
            worker_id: self.worker_id(),
            lease_remaining_ms: self
                .lease_until
                .filter(|_| self.worker_id().is_some())
                .map(|u| u.saturating_sub(mono_ms)),
            mark_ms: self.accepted_mark,
            mark_ahead_ms: self.accepted_mark as i64 - now_ms as i64,
            renewals: c.renewals,
            last_renew_latency_ms: c.last_renew_latency_ms,
            failures: c.failures,
            consecutive_failures: c.consecutive_failures,
            lost: c.lost,
            last_error: c.last_error.clone(),
        }
    }

    fn send(&mut self, mono_ms: u64, call: RegistryCall) -> Step {
        let id = self.next_id;
        self.next_id += 1;
        self.pending = Some(Pending {
            id,
            call: call.clone(),
            sent: mono_ms,
        });
        Step::Call { id, call }
    }

    fn renew(&mut self, worker_id: u64, mono_ms: u64, now_ms: u64, floor: u64) -> Step {
        let mark_ms = (now_ms + self.max_drift_ms + self.options.mark_ahead_ms)
            .max(floor)
            .max(self.accepted_mark);
        self.send(
            mono_ms,
            RegistryCall::Renew {
                worker_id,
                owner: self.owner.clone(),
                ttl_ms: self.options.lease_ttl_ms,
                mark_ms,
                reported_ms: now_ms,
            },
        )
    }

    fn abandon(&mut self, worker_id: u64, error: Error, mono_ms: u64, now_ms: u64) -> Step {
        self.failure = Some(error);
        // The fence never opened for this worker ID, so no ID carries it: the release gives
        // back the mark the claim found, not the claim's lead or the marks this engine's
        // renewals raised while it waited (from a clock that may be far ahead; a mark
        // given back as 0 makes the next claim take the lead again).
        self.phase = Phase::Abandoning {
            worker_id,
            mark: self.found_mark,
        };
        self.poll(mono_ms, now_ms)
    }

    /// Shuts the fence once the held lease may have expired.
    fn check_lease(&mut self, mono_ms: u64) {
        let Some(until) = self.lease_until else {
            return;
        };
        if mono_ms < until {
            return;
        }
        self.lease_until = None;
        let worker_id = match self.phase {
            Phase::Held { worker_id } | Phase::Starting { worker_id, .. } => worker_id,
            _ => return,
        };
        let last = self
            .stats
            .last_error
            .clone()
            .unwrap_or_else(|| "none".into());
        let reason = format!(
            "its lease may have expired: no renewal succeeded within lease_ttl_ms = {} (the \
             registry's last error: {last})",
            self.options.lease_ttl_ms
        );
        self.lose(mono_ms, Error::LeaseExpired { worker_id, reason });
    }

    /// The lease on a worker ID is gone (`why` says how): refuse IDs with it and start
    /// claiming again, from the same worker ID; after lost data, only after a pause, so a
    /// registry that keeps losing its records is not asked back to back.
    fn lose(&mut self, mono_ms: u64, why: Error) {
        let (worker_id, pause) = match &why {
            Error::LeaseExpired { worker_id, .. } => (*worker_id, 0),
            Error::RegistryLostData { worker_id, .. } => (*worker_id, RETRY_MS),
            _ => (self.preferred, 0),
        };
        self.stats.lost += 1;
        self.lease_until = None;
        self.leaf_check = None;
        if self.ready {
            self.fence.shut_with(why);
        }
        if self.closing {
            self.phase = Phase::Closed;
            return;
        }
        if self.ready {
            self.started = mono_ms;
        }
        self.preferred = worker_id;
        self.phase = Phase::Claiming {
            offset: 0,
            held: 0,
            resume_at: mono_ms + pause,
        };
    }

    fn fail(&mut self, message: String) {
        self.stats.failures += 1;
        self.stats.consecutive_failures += 1;
        self.stats.last_error = Some(message);
    }

    fn apply(&mut self, p: Pending, mono_ms: u64, now_ms: u64, answer: Result<Value, String>) {
        match (&p.call, self.phase) {
            (RegistryCall::Claim { worker_id, .. }, Phase::Claiming { offset, held, .. }) => {
                let asked = *worker_id;
                let held = match answer {
                    Ok(Value::Null) => {
                        self.stats.consecutive_failures = 0;
                        held + 1
                    }
                    Ok(v) => match claimed(&v, asked, &self.layout) {
                        Some(c) => {
                            let worker_id = c.worker_id;
                            self.stats.claims += 1;
                            self.stats.consecutive_failures = 0;
                            self.lease_until = Some(self.lease_end(p.sent));
                            self.next_renew = mono_ms;
                            self.started = mono_ms;
                            self.accepted_mark = 0;
                            self.found_mark = c.mark_ms;
                            self.claim_mark = self.start_above(c.mark_ms, now_ms);
                            self.leaf_check = c.record.and_then(|(identity, version, age)| {
                                (age < LEAF_REPORT_MS + LEAF_REPORT_SLACK_MS).then_some(LeafCheck {
                                    identity,
                                    version,
                                    recheck_at: mono_ms + LEAF_REPORT_MS + LEAF_REPORT_SLACK_MS,
                                })
                            });
                            if self.leaf_check.is_some() {
                                self.next_renew = p.sent + self.renew_every();
                            }
                            self.phase = Phase::Starting {
                                worker_id,
                                prev_mark: self.claim_mark,
                                peers_checked: false,
                            };
                            return;
                        }
                        None => {
                            self.fail(contract(
                                "claim",
                                &v,
                                &format!(
                                    "the worker ID's mark (an integer >= 0) when claimed, \
                                     {{worker_id, mark_ms[, identity, version, age_ms]}} when \
                                     the registry assigned a worker ID in 0..={}, or null when \
                                     another owner holds it",
                                    self.layout.max_worker_id()
                                ),
                            ));
                            held
                        }
                    },
                    Err(e) => {
                        self.fail(format!("claim of worker ID {asked} failed: {e}"));
                        held
                    }
                };
                // A failed call is retried on the same worker ID after a pause; an answered
                // one moves on to the next.
                let failing = self.stats.consecutive_failures > 0;
                let offset = if failing { offset } else { offset + 1 };
                let waited = mono_ms.saturating_sub(self.started);
                let swept = offset >= self.capacity();
                // Start-up gives up at the end of a sweep (every ID tried) when the next one
                // would start past the wait, or past the wait while the registry is failing;
                // a sweep of a very wide layout is cut at twice the wait.
                let wait = self.options.claim_wait_ms;
                let give_up = !self.ready
                    && ((swept && waited + SWEEP_PAUSE_MS > wait)
                        || (waited >= wait && (failing || waited >= 2 * wait)));
                if give_up {
                    let error = if swept && held == offset {
                        Error::NoFreeWorkerId {
                            capacity: self.capacity(),
                            held,
                            waited_ms: waited,
                        }
                    } else {
                        Error::Registry {
                            message: format!(
                                "no worker ID could be claimed within claim_wait_ms = {} \
                                 ({held} of the {offset} worker IDs that answered were held; \
                                 last error: {})",
                                self.options.claim_wait_ms,
                                self.stats.last_error.as_deref().unwrap_or("none")
                            ),
                        }
                    };
                    self.failure = Some(error);
                    self.phase = Phase::Failed;
                    return;
                }
                self.phase = if failing {
                    Phase::Claiming {
                        offset,
                        held,
                        resume_at: mono_ms + RETRY_MS,
                    }
                } else if swept {
                    Phase::Claiming {
                        offset: 0,
                        held: 0,
                        resume_at: mono_ms + SWEEP_PAUSE_MS,
                    }
                } else {
                    Phase::Claiming {
                        offset,
                        held,
                        resume_at: mono_ms,
                    }
                };
            }
            (
                RegistryCall::Claim { worker_id, .. },
                Phase::Starting {
                    worker_id: held, ..
                },
            ) if *worker_id == held => {
                let Some(check) = self.leaf_check.take() else {
                    return;
                };
                let again = answer
                    .as_ref()
                    .ok()
                    .and_then(|v| claimed(v, held, &self.layout));
                match again {
                    Some(Claimed {
                        record: Some((_, version, _)),
                        ..
                    }) if version != check.version => {
                        self.failure = Some(Error::LeafNodeAlive {
                            identity: check.identity,
                            worker_id: held,
                        });
                        self.phase = Phase::Abandoning {
                            worker_id: held,
                            mark: self.found_mark,
                        };
                    }
                    Some(_) => {
                        // Still ours: the claim renewed the lease. Done once a whole
                        // report period passed without a change.
                        self.stats.consecutive_failures = 0;
                        self.lease_until = Some(self.lease_end(p.sent));
                        self.next_renew = p.sent + self.renew_every();
                        if mono_ms < check.recheck_at {
                            self.leaf_check = Some(check);
                        } else {
                            self.next_renew = mono_ms;
                        }
                    }
                    None => {
                        // Not confirmed (a failed call, or the claim is gone): look again
                        // after a pause; a lost claim surfaces at the first renewal.
                        let why = match &answer {
                            Err(e) => format!("claim of worker ID {held} failed: {e}"),
                            Ok(v) => contract("claim", v, "the same answer as the first claim"),
                        };
                        self.fail(why);
                        self.leaf_check = Some(check);
                        self.next_renew = mono_ms + RETRY_MS;
                    }
                }
            }
            (
                RegistryCall::Peers,
                Phase::Starting {
                    worker_id,
                    prev_mark,
                    ..
                },
            ) => {
                match peer_median(&answer, worker_id) {
                    Ok(None) => {}
                    Ok(Some((median_ms, peers))) => {
                        if now_ms.abs_diff(median_ms) > self.options.max_peer_skew_ms {
                            let error = Error::ClockSkew {
                                now_ms,
                                median_ms,
                                peers,
                                max_peer_skew_ms: self.options.max_peer_skew_ms,
                            };
                            self.failure = Some(error);
                            self.phase = Phase::Abandoning {
                                worker_id,
                                mark: self.found_mark,
                            };
                            return;
                        }
                    }
                    Err(message) => {
                        self.fail(message.clone());
                        self.failure = Some(Error::Registry { message });
                        self.phase = Phase::Abandoning {
                            worker_id,
                            mark: self.found_mark,
                        };
                        return;
                    }
                }
                self.phase = Phase::Starting {
                    worker_id,
                    prev_mark,
                    peers_checked: true,
                };
            }
            (
                RegistryCall::Renew {
                    worker_id, mark_ms, ..
                },
                Phase::Starting { .. } | Phase::Held { .. },
            ) => {
                let (worker_id, asked) = (*worker_id, *mark_ms);
                match answer {
                    Ok(Value::Null) => {
                        self.fail(format!(
                            "renew of worker ID {worker_id}: the registry reports another owner"
                        ));
                        self.lose(
                            mono_ms,
                            Error::LeaseExpired {
                                worker_id,
                                reason: "the registry reports that another owner holds it (the \
                                         lease was lost)"
                                    .into(),
                            },
                        );
                    }
                    Ok(Value::Bool(false)) | Ok(Value::Int(..0)) => {
                        let detail = "its renewal found no record of the lease";
                        self.fail(format!("renew of worker ID {worker_id}: {detail}"));
                        self.lose(
                            mono_ms,
                            Error::RegistryLostData {
                                worker_id,
                                detail: detail.into(),
                            },
                        );
                    }
                    Ok(v) => match v.as_u64() {
                        Some(stored) if stored >= asked => {
                            self.renewed(&p, worker_id, asked, mono_ms, now_ms);
                        }
                        _ => {
                            self.fail(contract(
                                "renew",
                                &v,
                                &format!(
                                    "the stored mark (an integer >= the {asked} asked for) or \
                                     null when another owner holds the worker ID"
                                ),
                            ));
                            self.renew_failed(worker_id, mono_ms);
                        }
                    },
                    Err(e) => {
                        self.fail(format!("renew of worker ID {worker_id} failed: {e}"));
                        self.renew_failed(worker_id, mono_ms);
                    }
                }
            }
            (RegistryCall::Release { .. }, Phase::Releasing { .. } | Phase::Abandoning { .. }) => {
                if let Err(e) = &answer {
                    self.fail(format!("release failed: {e}"));
                }
                self.lease_until = None;
                self.phase = if matches!(self.phase, Phase::Abandoning { .. }) && !self.closing {
                    Phase::Failed
                } else {
                    Phase::Closed
                };
            }
            // An answer that no longer fits the phase (closed meanwhile): a successful claim
            // still has to be released.
            (RegistryCall::Claim { worker_id, .. }, _) => {
                if let Some(c) = answer
                    .ok()
                    .and_then(|v| claimed(&v, *worker_id, &self.layout))
                {
                    self.phase = Phase::Releasing {
                        worker_id: c.worker_id,
                        mark: c.mark_ms,
                    };
                }
            }
            _ => {}
        }
    }

    /// A renewal failed: retried soon; at start-up, given up (releasing the ID) once
    /// `claim_wait_ms` passed since the claim without one succeeding.
    fn renew_failed(&mut self, worker_id: u64, mono_ms: u64) {
        self.next_renew = mono_ms + RETRY_MS.min(self.renew_every());
        if self.ready || mono_ms.saturating_sub(self.started) < self.options.claim_wait_ms {
            return;
        }
        self.failure = Some(Error::Registry {
            message: format!(
                "worker ID {worker_id} was claimed, but no renewal succeeded within \
                 claim_wait_ms = {} (last error: {})",
                self.options.claim_wait_ms,
                self.stats.last_error.as_deref().unwrap_or("none")
            ),
        });
        self.phase = Phase::Abandoning {
            worker_id,
            mark: self.found_mark,
        };
    }

    /// The time a claim's new holder starts above, given the mark the claim found (0: no
    /// mark, never used or forgotten by the registry) at wall time `now_ms`. Without a
    /// mark, an unseen predecessor may still issue up to its last accepted mark, at most
    /// its clock + `max_drift_ms` + `mark_ahead_ms` when it last renewed (before this
    /// claim); its clock is at most `clock_skew_allowance_ms` ahead of this one.
    fn start_above(&mut self, mark_ms: u64, now_ms: u64) -> u64 {
        let o = &self.options;
        let (floor, wait) = if mark_ms == 0 {
            let lead = o.mark_ahead_ms + o.clock_skew_allowance_ms;
            (now_ms + self.max_drift_ms + lead, lead)
        } else {
            (mark_ms, 0)
        };
        self.unmarked_wait = wait;
        floor.max(self.host_not_before_ms)
    }

    fn renew_every(&self) -> u64 {
        self.options.renew_every_ms(self.max_drift_ms)
    }

    /// When a lease obtained by a call sent at `sent` may have expired: its TTL less a
    /// margin for the rate difference between this host's and the registry's clocks.
    fn lease_end(&self, sent: u64) -> u64 {
        let ttl = self.options.lease_ttl_ms;
        sent + ttl - (ttl / 20).min(1000)
    }

    fn renewed(&mut self, p: &Pending, worker_id: u64, asked: u64, mono_ms: u64, now_ms: u64) {
        let c = &mut self.stats;
        c.renewals += 1;
        c.consecutive_failures = 0;
        c.last_renew_latency_ms = Some(mono_ms - p.sent);
        self.lease_until = Some(self.lease_end(p.sent));
        self.next_renew = p.sent + self.renew_every();
        self.accepted_mark = self.accepted_mark.max(asked);
        let cap = self
            .layout
            .tick_of(self.accepted_mark)
            .unwrap_or(0)
            .min(self.layout.max_tick());
        if let Phase::Starting {
            prev_mark,
            peers_checked,
            ..
        } = self.phase
        {
            // A renewal while the clock catches up only keeps the lease.
            let clock_ok = prev_mark.saturating_sub(now_ms) <= self.max_drift_ms;
            let peers_ok = peers_checked || self.options.max_peer_skew_ms == 0 || self.ready;
            if clock_ok && peers_ok {
                self.fence.rebind(worker_id, cap, prev_mark);
                self.phase = Phase::Held { worker_id };
                if !self.ready {
                    self.ready = true;
                    self.ready_step = Some((worker_id, prev_mark));
                }
            }
        } else {
            self.fence.raise(worker_id, cap);
        }
    }
}

/// The `peers` answer for the live holders' reports `(worker_id, reported_ms, age_ms)`, as
/// registries written in Rust or C build it; a negative age (the registry's clock read the
/// report before it was stored) counts as 0.
pub fn peers_answer(reports: impl IntoIterator<Item = (i128, i128, i128)>) -> Value {
    let entry = |(w, reported, age): (i128, i128, i128)| {
        Value::List(vec![
            Value::Int(w),
            Value::Int(reported),
            Value::Int(age.max(0)),
        ])
    };
    Value::List(reports.into_iter().map(entry).collect())
}

/// A successful `claim` answer: the mark of the worker ID asked for, or `{worker_id,
/// mark_ms}` from a registry that assigns worker IDs itself (by node identity, as
/// ZooKeeper in Leaf's layout does; the assigned ID must fit the layout), which may add
/// its record's `identity`, `version` and `age_ms` (all three or none).
fn claimed(answer: &Value, asked: u64, layout: &Layout) -> Option<Claimed> {
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
    let find = |snake: &str, camel: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == snake || k == camel)
            .map(|(_, v)| v)
    };
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

fn contract(call: &str, got: &Value, allowed: &str) -> String {
    format!("{call} answered {got} outside the registry contract; allowed: {allowed}")
}

/// The median of the other live holders' clocks now, and how many there are.
fn peer_median(
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
    clocks.sort_unstable();
    let n = clocks.len();
    let median = if n % 2 == 1 {
        clocks[n / 2]
    } else {
        (clocks[n / 2 - 1] + clocks[n / 2]) / 2
    };
    Ok(Some((median, n as u64)))
}
