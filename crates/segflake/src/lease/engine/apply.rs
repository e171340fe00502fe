//! The engine's transitions on a registry answer: one step per (call, phase) pair. Every
//! step keeps the safety rule of the module docs: the fence opens only after a renewal the
//! registry accepted, and only up to the mark it accepted.

use super::answers::{assigned_beyond, claimed, contract, peer_median, Claimed};
use super::{LeafCheck, LeaseEngine, Pending, Phase, LEAF_REPORT_MS, LEAF_REPORT_SLACK_MS};
use super::{RETRY_MS, SWEEP_MIN_IDS, SWEEP_PAUSE_MS};
use crate::error::Error;
use crate::host::Value;
use crate::lease::RegistryCall;

impl LeaseEngine {
    /// Applies the answer to `p` in the current phase; an answer that no longer fits the
    /// phase changes nothing, except that a successful claim is still released.
    pub(super) fn apply(
        &mut self,
        p: Pending,
        mono_ms: u64,
        now_ms: u64,
        answer: Result<Value, String>,
    ) {
        match (&p.call, self.phase) {
            (RegistryCall::Claim { worker_id, .. }, Phase::Claiming { offset, held, .. }) => {
                self.claim_answered(&p, *worker_id, (offset, held), (mono_ms, now_ms), answer)
            }
            (
                RegistryCall::Claim { worker_id, .. },
                Phase::Starting {
                    worker_id: held, ..
                },
            ) if *worker_id == held => self.leaf_rechecked(&p, held, mono_ms, answer),
            (
                RegistryCall::Peers,
                Phase::Starting {
                    worker_id,
                    prev_mark,
                    ..
                },
            ) => self.peers_answered(worker_id, prev_mark, now_ms, answer),
            (
                RegistryCall::Renew {
                    worker_id, mark_ms, ..
                },
                Phase::Starting { .. } | Phase::Held { .. },
            ) => self.renew_answered(&p, (*worker_id, *mark_ms), mono_ms, now_ms, answer),
            (RegistryCall::Release { .. }, Phase::Releasing { .. } | Phase::Abandoning { .. }) => {
                self.release_answered(answer)
            }
            (RegistryCall::Claim { worker_id, .. }, _) => {
                self.late_claim_answered(*worker_id, answer)
            }
            _ => {}
        }
    }

    /// A claim of `asked` answered during the sweep: a claimed ID starts up; a held or
    /// failed one moves the sweep on.
    fn claim_answered(
        &mut self,
        p: &Pending,
        asked: u64,
        (offset, held): (u64, u64),
        (mono_ms, now_ms): (u64, u64),
        answer: Result<Value, String>,
    ) {
        let held = match answer {
            Ok(Value::Null) => {
                self.stats.consecutive_failures = 0;
                held + 1
            }
            Ok(v) => {
                if let Some(c) = claimed(&v, asked, &self.layout) {
                    return self.start_with(p, c, mono_ms, now_ms);
                }
                let why = match assigned_beyond(&v, &self.layout) {
                    Some(w) => format!(
                        "the registry assigned worker ID {w}, beyond this layout's 0..={}: a \
                         registry that numbers identities (ZooKeeper numbers each ip:port's \
                         forever node once, as Leaf does, and never reuses a number) has given \
                         out more numbers than the layout has worker IDs; delete the forever \
                         nodes of identities that are gone, or use a layout with more worker \
                         bits",
                        self.layout.max_worker_id()
                    ),
                    None => contract(
                        "claim",
                        &v,
                        &format!(
                            "the worker ID's mark (an integer >= 0) when claimed, \
                             {{worker_id, mark_ms[, identity, version, age_ms]}} when \
                             the registry assigned a worker ID in 0..={}, or null when \
                             another owner holds it",
                            self.layout.max_worker_id()
                        ),
                    ),
                };
                self.fail(why);
                held
            }
            Err(e) => {
                self.fail(format!("claim of worker ID {asked} failed: {e}"));
                held
            }
        };
        self.sweep_on(offset, held, mono_ms);
    }

    /// Start-up with the claimed worker ID: it starts above the mark the claim found; a Leaf
    /// node's recently written record is checked again before the first renewal.
    fn start_with(&mut self, p: &Pending, c: Claimed, mono_ms: u64, now_ms: u64) {
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
    }

    /// The sweep after an unclaimed ID: the next ID, the same one after a pause while the
    /// registry fails, a new sweep after a pause once every ID was tried, or failure once
    /// start-up waited too long.
    fn sweep_on(&mut self, offset: u64, held: u64, mono_ms: u64) {
        // A failed call is retried on the same worker ID after a pause; an answered
        // one moves on to the next.
        let failing = self.stats.consecutive_failures > 0;
        let offset = if failing { offset } else { offset + 1 };
        let waited = mono_ms.saturating_sub(self.started);
        let swept = offset >= self.capacity();
        // Start-up gives up at the end of a sweep (every ID tried) when the next one
        // would start past the wait, or past the wait while the registry is failing;
        // a sweep of a very wide layout is cut at twice the wait, once it tried at least
        // SWEEP_MIN_IDS worker IDs (a short wait never stops at the first held one).
        let wait = self.options.claim_wait_ms;
        let cut = waited >= 2 * wait && offset >= SWEEP_MIN_IDS;
        let give_up = !self.ready
            && ((swept && waited + SWEEP_PAUSE_MS > wait) || (waited >= wait && (failing || cut)));
        if give_up {
            self.failure = Some(self.sweep_failure(swept, offset, held, waited));
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

    /// Why start-up gave up: every ID held, or the registry failed too long.
    fn sweep_failure(&self, swept: bool, offset: u64, held: u64, waited: u64) -> Error {
        if swept && held == offset {
            Error::NoFreeWorkerId {
                capacity: self.capacity(),
                held,
                waited_ms: waited,
                lost_worker_id: self.lost_at_start,
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
        }
    }

    /// The recheck of a Leaf node's record for the claimed `held`: a changed version means
    /// a live Leaf node (start-up fails after releasing the ID); an unchanged one after a
    /// whole report period lets start-up go on.
    fn leaf_rechecked(
        &mut self,
        p: &Pending,
        held: u64,
        mono_ms: u64,
        answer: Result<Value, String>,
    ) {
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

    /// The live holders' clocks: start-up fails (releasing `worker_id`) when this clock is
    /// more than `max_peer_skew_ms` from their median, or when the answer breaks the contract.
    fn peers_answered(
        &mut self,
        worker_id: u64,
        prev_mark: u64,
        now_ms: u64,
        answer: Result<Value, String>,
    ) {
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

    /// A renewal of `worker_id` asking for mark `asked`: an accepted mark raises the fence;
    /// another owner or a lost record loses the lease; a failure is retried.
    fn renew_answered(
        &mut self,
        p: &Pending,
        (worker_id, asked): (u64, u64),
        mono_ms: u64,
        now_ms: u64,
        answer: Result<Value, String>,
    ) {
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
                    self.renewed(p, worker_id, asked, mono_ms, now_ms);
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

    /// A release ends the lease whatever it answered; an abandoned start-up then fails.
    fn release_answered(&mut self, answer: Result<Value, String>) {
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

    /// A claim answered after the engine left the sweep (closed meanwhile): a successful
    /// one is released.
    fn late_claim_answered(&mut self, worker_id: u64, answer: Result<Value, String>) {
        if let Some(c) = answer
            .ok()
            .and_then(|v| claimed(&v, worker_id, &self.layout))
        {
            self.phase = Phase::Releasing {
                worker_id: c.worker_id,
                mark: c.mark_ms,
            };
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
        // The lead is waited out on the monotonic clock while the wall clock closes it: a
        // wall clock that runs slower needs a little longer (5%, the rate margin leases
        // allow too), or a claim with no other clock wait gives up a millisecond short.
        self.unmarked_wait = wait + wait / 20;
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
