//! The lease state machine: the phases one leased generator goes through, its public
//! driving interface (`poll`, `answer`, `close`), and the bookkeeping every step shares.

mod answers;
mod apply;

use std::sync::Arc;

use super::call::{RegistryCall, Step};
use super::owner::{fnv, owner_token, MAX_LABEL_BYTES};
use super::{LeaseOptions, LeaseStats};
use crate::clock::Clock;
use crate::error::{quoted, Error, Result};
use crate::host::Value;
use crate::layout::Layout;
use crate::snowflake::{Fence, Snowflake, SnowflakeOptions};

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
    /// The worker ID start-up claimed and then lost (its lease ran out, or another owner
    /// held it at the next renewal), if it did: named by the `NoFreeWorkerId` it may end
    /// with.
    lost_at_start: Option<u64>,
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

/// A renewal that fails is retried after this long (or the renew interval, if shorter).
const RETRY_MS: u64 = 200;
/// Pause between sweeps when every worker ID was held.
const SWEEP_PAUSE_MS: u64 = 250;
/// A sweep cut short by `claim_wait_ms` (a very wide layout) still tries this many worker
/// IDs, or all of a narrower layout's.
const SWEEP_MIN_IDS: u64 = 64;

impl LeaseEngine {
    /// An engine for a generator of `layout` whose logical clock may run `max_drift_ms`
    /// ahead, that must not issue at or below `not_before_ms` (a host-persisted mark, 0 if
    /// none), claiming as `label` (an audit label such as the host name: many engines may
    /// share it) with this engine's random `nonce` ([`fresh_nonce`](super::fresh_nonce)), starting at
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
                    "{label} is not an owner label; allowed: 1 to {MAX_LABEL_BYTES} bytes \
                     without NUL",
                    label = quoted(&label)
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
            lost_at_start: None,
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
        // mark. Before the fence opened for it, no ID carries it, and exactly the mark
        // found at claim goes back: not the claim's lead (which may come from a clock far
        // ahead), nor the generator's high-water mark, which belongs to the worker IDs it
        // held before. A claim that found no mark gives back none, so that the next claim
        // takes the lead again above what an unseen holder may still issue.
        let mark = match self.phase {
            Phase::Held { .. } => high_water_mark_ms.max(self.claim_mark),
            _ => self.found_mark,
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
        if !self.ready && matches!(why, Error::LeaseExpired { .. }) {
            self.lost_at_start = Some(worker_id);
        }
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
}
