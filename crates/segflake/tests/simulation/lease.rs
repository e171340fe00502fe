//! The lease world: 2–8 processes, each a real `LeaseEngine` and the `Snowflake` built on
//! its fence, driven as the std driver (one call at a time, no poll while it runs) or the
//! JS driver (polls on every wake, answers arriving whenever), against one registry
//! server through the core's protocol conversations, with faults drawn from the seed.
//!
//! Invariants checked on every ID: no ID twice across all processes and incarnations;
//! each generator's IDs strictly increase; no tick of a worker ID used by two holders;
//! no ID above the highest mark the registry ever stored for its holder. After the faults
//! stop (the healed phase), as many processes as there are worker IDs issue again within
//! the bound [`heal_bound_ms`] states.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use segflake::layout::{FieldOrder, LayoutSpec};
use segflake::{
    Clock, Layout, LeaseEngine, LeaseOptions, SequenceStart, Snowflake, SnowflakeOptions, Step,
};

use crate::registry::{zk_identity, Adapter, Conv, Kind, Op, Reply, Server};
use crate::world::{IdMap, NetFaults, Outcome, Partition, Queue, Rng, Trace, Violation};

/// Unix ms at which every run starts.
pub const T0: u64 = 1_750_000_000_000;

/// Which faults a run may draw: those the protocols are built to survive, or one class
/// beyond the guarantee (to show the boundary the docs state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regime {
    Guaranteed,
    /// The registry rolled back to an older snapshot (marks go back, not to zero).
    Rollback,
    /// A SQL registry fails over to an asynchronous standby that lacks the last commits.
    AsyncStandby,
    /// Marks lost while a host's clock is further off than `clock_skew_allowance_ms`.
    LossWithSkew,
}

/// A generator's clock: the host's wall clock, set by the world before each step.
#[derive(Debug, Clone, Default)]
pub struct SimClock(Arc<AtomicU64>);

impl SimClock {
    fn set(&self, ms: u64) {
        self.0.store(ms, Ordering::Relaxed);
    }
}

impl Clock for SimClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    /// The world moves time, never the generator: waiting is a refusal for now.
    fn wait_until_ms(&self, unix_ms: u64) -> segflake::Result<()> {
        Err(segflake::clock::stalled(
            self.now_ms(),
            unix_ms,
            "0 ms (simulated)",
        ))
    }
}

/// A host's clocks.
#[derive(Debug, Clone)]
struct Host {
    offset: i64,
    rate_ppm: i64,
    mono_ppm: i64,
    /// `(from, until, period, amplitude)`: the wall clock strobes by `amplitude`.
    strobe: Option<(u64, u64, u64, i64)>,
}

impl Host {
    fn wall(&self, t: u64) -> u64 {
        let el = (t - T0) as i64;
        let mut w = t as i64 + self.offset + el * self.rate_ppm / 1_000_000;
        if let Some((from, until, period, amp)) = self.strobe {
            if t >= from && t < until && ((t - from) / period) % 2 == 1 {
                w += amp;
            }
        }
        w.max(0) as u64
    }
    fn mono(&self, t: u64) -> u64 {
        let el = (t - T0) as i64;
        (el + el * self.mono_ppm / 1_000_000) as u64
    }
    /// True milliseconds for `ms` on the monotonic clock (rounded up).
    fn true_ms(&self, ms: u64) -> u64 {
        let scaled = ms as i128 * 1_000_000 / (1_000_000 + self.mono_ppm as i128);
        scaled as u64 + 1
    }
}

/// The options and faults drawn for one run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub kind: Kind,
    pub regime: Regime,
    pub processes: usize,
    layout: Layout,
    options: LeaseOptions,
    max_drift_ms: u64,
    sequence_start: SequenceStart,
    /// Per process: the JS driver (else std), persists `not_before_ms`, label.
    js: Vec<bool>,
    persist: Vec<bool>,
    labels: Vec<String>,
    hosts: Vec<Host>,
    net: NetFaults,
    partitions: Vec<Partition>,
    faults_ms: u64,
    heal_ms: u64,
    issue_every: u64,
    replica: Option<(u64, u64)>,
    /// Scheduled faults: (at, what).
    schedule: Vec<(u64, Fault)>,
    max_back_ms: u64,
    /// ZooKeeper's session timeout (0 for other registries).
    session_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    Pause { slot: usize, ms: u64 },
    Crash { slot: usize },
    Restart { slot: usize },
    Bump { slot: usize, by: i64 },
    LoseAll,
    LoseKey { worker: u64, mark_only: bool },
    Snapshot,
    Rollback,
    FailOver { offset: i64, keep_unsent: bool },
    CutReplica { ms: u64 },
}

impl Fault {
    fn class(&self) -> &'static str {
        match self {
            Fault::Pause { .. } => "process paused",
            Fault::Crash { .. } => "process crashed (restarted later)",
            Fault::Restart { .. } => "process closed and restarted",
            Fault::Bump { by, .. } if by.unsigned_abs() >= 60_000 => "wall clock stepped >= 1 min",
            Fault::Bump { .. } => "wall clock stepped",
            Fault::LoseAll => "registry lost all data",
            Fault::LoseKey {
                mark_only: true, ..
            } => "registry lost one mark",
            Fault::LoseKey { .. } => "registry lost one worker ID's record",
            Fault::Snapshot => "registry snapshot taken",
            Fault::Rollback => "registry rolled back to a snapshot",
            Fault::FailOver { .. } => "registry failed over",
            Fault::CutReplica { .. } => "replica link cut",
        }
    }
}

impl Plan {
    pub fn draw(seed: u64, regime: Regime, kind: Option<Kind>) -> Plan {
        let mut rng = Rng::new(seed);
        // ZooKeeper and etcd are drawn from a stream of their own, so that a seed that draws
        // one of the first four registries keeps the world it had before they came. They
        // are left out of the regimes that roll a registry back (out of their models).
        let first_four = Kind::ALL[rng.range(0, 3) as usize];
        let mut side = Rng::new(seed ^ 0x2c5e_55e5_10e7);
        let later =
            matches!(regime, Regime::Guaranteed | Regime::LossWithSkew) && side.chance(1.0 / 3.0);
        let kind = kind.unwrap_or(if later {
            [Kind::ZooKeeper, Kind::Etcd][side.range(0, 1) as usize]
        } else {
            first_four
        });
        let processes = rng.range(2, 8) as usize;
        let worker_bits = rng.range(1, 3) as u8;
        let layout = LayoutSpec::default()
            .with_time_bits(41)
            .with_worker_bits(worker_bits)
            .with_datacenter_bits(0)
            .with_sequence_bits(rng.range(2, 8) as u8)
            .with_tick_ms(1)
            .with_epoch_ms(1_600_000_000_000)
            .with_order(FieldOrder::TimeWorkerSequence)
            .with_min_lifetime_years(0)
            .build_at(T0)
            .expect("a valid layout");
        let ttl = rng.range(300, 5000);
        let session_ms = match kind {
            Kind::ZooKeeper => side.range((ttl / 2).max(200), 4 * ttl),
            _ => 0,
        };
        let timeout = rng.range(20, (ttl / 3).max(21));
        let allowance = rng.range(0, 2000);
        let options = LeaseOptions::default()
            .with_lease_ttl_ms(ttl)
            .with_mark_ahead_ms(rng.range(0, 3000))
            .with_preferred_worker_id(None)
            .with_claim_wait_ms(rng.range(0, 5000))
            .with_clock_wait_ms(rng.range(0, 5000))
            .with_max_peer_skew_ms(if rng.chance(0.3) {
                rng.range(100, 5000)
            } else {
                0
            })
            .with_registry_timeout_ms(timeout)
            .with_clock_skew_allowance_ms(allowance);
        let max_drift_ms = rng.range(0, 3000);
        let sequence_start = if rng.chance(0.5) {
            SequenceStart::Random
        } else {
            SequenceStart::Zero
        };
        let shared_label = rng.chance(0.3);
        let labels = (0..processes)
            .map(|i| {
                if shared_label {
                    "host".to_string()
                } else {
                    format!("host-{i}")
                }
            })
            .collect();
        let js = (0..processes).map(|_| rng.chance(0.5)).collect();
        let persist = (0..processes).map(|_| rng.chance(0.5)).collect();
        let faults_ms = rng.range(10_000, 30_000);
        // Data loss is survived only while the hosts' clocks stay within the allowance.
        let data_loss = matches!(regime, Regime::LossWithSkew) || rng.chance(0.35);
        let bounded = data_loss && regime != Regime::LossWithSkew;
        let half = (allowance / 2) as i64;
        let hosts: Vec<Host> = (0..processes)
            .map(|_| Host {
                offset: if bounded {
                    rng.signed(half as u64 / 2)
                } else {
                    {
                        let m = rng.tailed(500, 120_000, 0.2);
                        rng.signed(m)
                    }
                },
                rate_ppm: if bounded { 0 } else { rng.signed(500) },
                mono_ppm: rng.signed(300),
                strobe: None,
            })
            .collect();
        let mut schedule = Vec::new();
        let at = |rng: &mut Rng| T0 + rng.range(0, faults_ms);
        // How far any host's clock may end up from the truth: its offset, steps and strobe.
        let mut off_by: Vec<u64> = hosts.iter().map(|h| h.offset.unsigned_abs()).collect();
        let mut hosts = hosts;
        for (i, h) in hosts.iter_mut().enumerate() {
            if !bounded && rng.chance(0.15) {
                let from = at(&mut rng);
                let m = rng.tailed(100, 60_000, 0.2);
                let amp = rng.signed(m);
                h.strobe = Some((from, from + rng.range(100, 5000), rng.range(1, 200), amp));
                off_by[i] += amp.unsigned_abs();
            }
        }
        for _ in 0..rng.range(0, 6) {
            let slot = rng.range(0, processes as u64 - 1) as usize;
            let by = if bounded {
                rng.signed((half as u64 / 4).max(4))
            } else {
                {
                    let m = rng.tailed(1000, 300_000, 0.3).max(4);
                    rng.signed(m)
                }
            };
            off_by[slot] += by.unsigned_abs();
            schedule.push((at(&mut rng), Fault::Bump { slot, by }));
        }
        for _ in 0..rng.range(0, 4) {
            let slot = rng.range(0, processes as u64 - 1) as usize;
            let ms = rng.tailed(ttl, 4 * ttl, 0.4);
            schedule.push((at(&mut rng), Fault::Pause { slot, ms }));
        }
        for _ in 0..rng.range(0, 3) {
            let slot = rng.range(0, processes as u64 - 1) as usize;
            schedule.push((at(&mut rng), Fault::Crash { slot }));
        }
        for _ in 0..rng.range(0, 3) {
            let slot = rng.range(0, processes as u64 - 1) as usize;
            schedule.push((at(&mut rng), Fault::Restart { slot }));
        }
        let capacity = layout.max_worker_id() + 1;
        if data_loss {
            if rng.chance(0.3) {
                schedule.push((at(&mut rng), Fault::LoseAll));
            }
            for _ in 0..rng.range(1, 3) {
                let worker = rng.range(0, capacity - 1);
                let mark_only = rng.chance(0.5);
                schedule.push((at(&mut rng), Fault::LoseKey { worker, mark_only }));
            }
        }
        if regime == Regime::Rollback {
            let first = at(&mut rng);
            schedule.push((first, Fault::Snapshot));
            schedule.push((first + rng.range(ttl, 3 * ttl), Fault::Rollback));
        }
        let replica =
            (kind == Kind::Redis && rng.chance(0.6)).then(|| (rng.range(0, 3 * timeout / 4), 0));
        if replica.is_some() {
            for _ in 0..rng.range(0, 2) {
                let ms = rng.range(100, 3 * ttl);
                schedule.push((at(&mut rng), Fault::CutReplica { ms }));
            }
            for _ in 0..rng.range(0, 2) {
                let offset = rng.signed(2000);
                schedule.push((
                    at(&mut rng),
                    Fault::FailOver {
                        offset,
                        keep_unsent: false,
                    },
                ));
            }
        }
        if matches!(kind, Kind::Postgres | Kind::MySql) {
            // A synchronous standby promoted: nothing committed is lost, the clock changes.
            for _ in 0..rng.range(0, 2) {
                let offset = rng.signed(2000);
                let keep_unsent = regime != Regime::AsyncStandby;
                schedule.push((
                    at(&mut rng),
                    Fault::FailOver {
                        offset,
                        keep_unsent,
                    },
                ));
            }
        }
        if regime == Regime::AsyncStandby {
            // The standby is the primary as it was a moment before the failover.
            let offset = rng.signed(2000);
            let t = at(&mut rng) + 3000;
            schedule.push((t - rng.range(100, 3000), Fault::Snapshot));
            schedule.push((
                t,
                Fault::FailOver {
                    offset,
                    keep_unsent: false,
                },
            ));
        }
        schedule.sort_by_key(|(t, _)| *t);
        // Two hosts off in opposite directions: a mark from one, the clock of the other.
        off_by.sort_unstable();
        let max_back_ms = off_by.iter().rev().take(2).sum();
        let net = NetFaults::draw(&mut rng, timeout);
        let partitions = (0..rng.range(0, 3))
            .map(|_| Partition::draw(&mut rng, processes, T0, faults_ms, 3 * ttl))
            .collect();
        let mut plan = Plan {
            kind,
            regime,
            processes,
            layout,
            options,
            max_drift_ms,
            sequence_start,
            js,
            persist,
            labels,
            hosts,
            net,
            partitions,
            faults_ms,
            heal_ms: 0,
            issue_every: rng.range(2, 60),
            replica,
            schedule,
            max_back_ms,
            session_ms,
        };
        plan.heal_ms = plan.heal_bound_ms() + 3000;
        plan
    }

    /// How long after the faults stop every process that can hold a worker ID issues
    /// again: the old leases expire, a restart waits its delay, start-up sweeps and waits
    /// for the clock to reach a mark left by a clock that ran ahead.
    pub fn heal_bound_ms(&self) -> u64 {
        let o = &self.options;
        // A registry may hold a worker ID past the lease: a ZooKeeper session outlives its
        // client by the session timeout, an etcd lease lasts whole seconds, 2 at least.
        let held_past = match self.kind {
            Kind::ZooKeeper => self.session_ms,
            Kind::Etcd => {
                let s = o.lease_ttl_ms.div_ceil(1000).max(crate::etcd::MIN_TTL_S);
                s * 1000 - o.lease_ttl_ms
            }
            _ => 0,
        };
        // A pause drawn before the healing may run 4 leases into it.
        held_past
            + 7 * o.lease_ttl_ms
            + 2 * RESTART_MAX_MS
            + o.claim_wait_ms
            + o.clock_wait_ms
            + 4 * o.registry_timeout_ms
            + self.max_back_ms
            + self.max_drift_ms
            + o.mark_ahead_ms
            + o.clock_skew_allowance_ms
            + 2000
    }

    fn describe(&self) -> Vec<String> {
        let o = &self.options;
        let mut out = vec![
            format!(
                "world lease, registry {}, regime {:?}, {} processes, {} worker IDs, {} sequence bits",
                self.kind.name(),
                self.regime,
                self.processes,
                self.layout.max_worker_id() + 1,
                self.layout.sequence_bits()
            ),
            format!(
                "lease_ttl_ms {} mark_ahead_ms {} claim_wait_ms {} clock_wait_ms {} max_peer_skew_ms {} \
                 registry_timeout_ms {} clock_skew_allowance_ms {} max_drift_ms {} sequence_start {}",
                o.lease_ttl_ms,
                o.mark_ahead_ms,
                o.claim_wait_ms,
                o.clock_wait_ms,
                o.max_peer_skew_ms,
                o.registry_timeout_ms,
                o.clock_skew_allowance_ms,
                self.max_drift_ms,
                self.sequence_start.name()
            ),
            format!(
                "drivers (js?) {:?}, persisted not_before {:?}, labels {:?}",
                self.js, self.persist, self.labels
            ),
            format!("network {:?}", self.net),
            format!(
                "faults for {} ms, then healed for {} ms (bound {} ms); replica {:?}",
                self.faults_ms,
                self.heal_ms,
                self.heal_bound_ms(),
                self.replica
            ),
        ];
        if self.kind == Kind::ZooKeeper {
            out.push(format!("ZooKeeper session timeout {} ms", self.session_ms));
        }
        for (i, h) in self.hosts.iter().enumerate() {
            out.push(format!(
                "host {i}: offset {} ms, rate {} ppm, monotonic {} ppm, strobe {:?}",
                h.offset, h.rate_ppm, h.mono_ppm, h.strobe
            ));
        }
        for p in &self.partitions {
            out.push(format!("partition {p:?}"));
        }
        for (t, f) in &self.schedule {
            out.push(format!("at {} fault {f:?}", t - T0));
        }
        out
    }
}

const RESTART_MAX_MS: u64 = 2000;

#[derive(Debug)]
enum Event {
    Wake {
        slot: usize,
        inc: u32,
    },
    Apply {
        slot: usize,
        inc: u32,
        call: u64,
        op: Op,
        reply: bool,
    },
    Reply {
        slot: usize,
        inc: u32,
        call: u64,
        reply: Reply,
        epoch: Option<u64>,
    },
    Issue {
        slot: usize,
        inc: u32,
    },
    Persist {
        slot: usize,
        inc: u32,
    },
    Resume {
        slot: usize,
    },
    /// The ZooKeeper client pings the server (every third of the session timeout).
    Ping {
        slot: usize,
        inc: u32,
    },
    Start {
        slot: usize,
    },
    Fault(Fault),
    Heal,
}

struct Call {
    conv: Conv,
    sent_mono: u64,
}

/// One process slot: its current incarnation.
struct Proc {
    inc: u32,
    up: bool,
    paused_until: u64,
    engine: Option<LeaseEngine>,
    gen: Option<Snowflake<SimClock>>,
    clock: SimClock,
    adapter: Adapter,
    calls: BTreeMap<u64, Call>,
    /// The call the std driver is blocked on.
    blocked: Option<u64>,
    /// When the driver wakes next.
    wake_at: Option<u64>,
    holder: u32,
    last_id: u64,
    persisted: u64,
    rng: Rng,
    /// Events held while paused.
    held: Vec<Event>,
    last_issued_at: u64,
}

struct Holder {
    slot: usize,
    inc: u32,
    owner: String,
}

pub struct World {
    plan: Plan,
    q: Queue<Event>,
    rng: Rng,
    server: Server,
    procs: Vec<Proc>,
    holders: Vec<Holder>,
    ids: IdMap<u32>,
    ticks: IdMap<u32>,
    trace: Trace,
    violation: Option<Violation>,
    faults: BTreeMap<&'static str, u64>,
    healed: bool,
    snapshot: Option<crate::registry::State>,
    issued: u64,
}

pub fn run(seed: u64, regime: Regime, kind: Option<Kind>, keep_trace: bool) -> Outcome {
    let plan = Plan::draw(seed, regime, kind);
    let mut rng = Rng::new(seed ^ 0x05ee_d0f1_ea5e);
    let server = Server::new(plan.kind, rng.signed(1000), plan.replica, plan.session_ms);
    let procs = (0..plan.processes)
        .map(|slot| Proc {
            inc: 0,
            up: false,
            paused_until: 0,
            engine: None,
            gen: None,
            clock: SimClock::default(),
            adapter: Adapter::new(
                plan.kind,
                (plan.options.registry_timeout_ms / 2).max(1),
                &plan.labels[slot],
                slot,
            ),
            calls: BTreeMap::new(),
            blocked: None,
            wake_at: None,
            holder: u32::MAX,
            last_id: 0,
            persisted: 0,
            rng: rng.fork(),
            held: Vec::new(),
            last_issued_at: 0,
        })
        .collect();
    let mut w = World {
        q: Queue::new(T0),
        rng,
        server,
        procs,
        holders: Vec::new(),
        ids: IdMap::default(),
        ticks: IdMap::default(),
        trace: Trace::new(keep_trace),
        violation: None,
        faults: BTreeMap::new(),
        healed: false,
        snapshot: None,
        issued: 0,
        plan,
    };
    for slot in 0..w.plan.processes {
        let delay = w.rng.range(0, 500);
        w.q.at(T0 + delay, Event::Start { slot });
    }
    let drawn = [
        ("partition (one-way or two-way)", w.plan.partitions.len()),
        (
            "wall clock strobing",
            w.plan.hosts.iter().filter(|h| h.strobe.is_some()).count(),
        ),
        (
            "process on the JS driver",
            w.plan.js.iter().filter(|j| **j).count(),
        ),
        (
            "process on the std driver",
            w.plan.js.iter().filter(|j| !**j).count(),
        ),
    ];
    for (class, n) in drawn.into_iter().filter(|d| d.1 > 0) {
        *w.faults.entry(class).or_insert(0) += n as u64;
    }
    if w.plan.processes > 1 && w.plan.labels.iter().all(|l| *l == w.plan.labels[0]) {
        *w.faults
            .entry("processes sharing one owner label")
            .or_insert(0) += 1;
    }
    for (t, f) in w.plan.schedule.clone() {
        w.q.at(t, Event::Fault(f));
    }
    w.q.at(T0 + w.plan.faults_ms, Event::Heal);
    let end = T0 + w.plan.faults_ms + w.plan.heal_ms;
    let healed_at = T0 + w.plan.faults_ms;
    let mut checked = healed_at;
    while w.violation.is_none() {
        let Some(e) = w.q.pop(end) else { break };
        w.handle(e);
        // Done once every process that can hold a worker ID issued after the healing.
        if w.healed && w.q.now >= checked + 500 {
            checked = w.q.now;
            let (issuing, want) = w.healed_issuers(healed_at);
            if issuing >= want {
                break;
            }
        }
    }
    if w.violation.is_none() {
        w.check_healed(healed_at);
    }
    let expired = [
        ("ZooKeeper session expired", w.server.zk.expired),
        ("etcd lease expired", w.server.etcd.expired),
    ];
    for (class, n) in expired.into_iter().filter(|e| e.1 > 0) {
        *w.faults.entry(class).or_insert(0) += n;
    }
    let drawn = w.plan.describe();
    Outcome::of(w.violation, drawn, w.faults, &w.q, w.issued, &w.trace)
}

impl World {
    fn count(&mut self, class: &'static str) {
        *self.faults.entry(class).or_insert(0) += 1;
    }

    fn wall(&self, slot: usize) -> u64 {
        self.plan.hosts[slot].wall(self.q.now)
    }

    fn mono(&self, slot: usize) -> u64 {
        self.plan.hosts[slot].mono(self.q.now)
    }

    fn net(&self) -> NetFaults {
        if self.healed {
            NetFaults::NONE
        } else {
            self.plan.net
        }
    }

    fn note(&mut self, parts: &[u64], line: impl FnOnce() -> String) {
        let at = self.q.now - T0;
        self.trace.event(at, parts, line);
    }

    fn handle(&mut self, e: Event) {
        // A paused process receives nothing until it resumes.
        let slot_of = |e: &Event| match e {
            Event::Wake { slot, .. }
            | Event::Reply { slot, .. }
            | Event::Issue { slot, .. }
            | Event::Persist { slot, .. } => Some(*slot),
            _ => None,
        };
        if let Some(slot) = slot_of(&e) {
            if self.procs[slot].paused_until > self.q.now {
                self.procs[slot].held.push(e);
                return;
            }
        }
        match e {
            Event::Start { slot } => self.start(slot),
            Event::Wake { slot, inc } => {
                // Only the latest wake-up counts; the driver sleeps until the earliest.
                let due = self.procs[slot].wake_at.is_some_and(|w| w <= self.q.now);
                if self.current(slot, inc) && due {
                    self.procs[slot].wake_at = None;
                    self.drive(slot);
                }
            }
            Event::Apply {
                slot,
                inc,
                call,
                op,
                reply,
            } => self.apply(slot, inc, call, op, reply),
            Event::Reply {
                slot,
                inc,
                call,
                reply,
                epoch,
            } => {
                // A reply WAIT held back is lost with a primary that failed over.
                let dropped = epoch.is_some_and(|e| e != self.server.epoch);
                if dropped {
                    self.count("reply held by WAIT lost in a failover");
                    self.note(&[14, slot as u64, call], || {
                        format!("p{slot}.{inc} call {call}: reply lost in the failover")
                    });
                }
                if self.current(slot, inc) && !dropped {
                    self.replied(slot, call, reply);
                }
            }
            Event::Issue { slot, inc } => {
                if self.current(slot, inc) {
                    self.issue(slot);
                    let every = self.plan.issue_every;
                    let d = self.procs[slot].rng.range(1, every);
                    self.q.after(d, Event::Issue { slot, inc });
                }
            }
            Event::Persist { slot, inc } => {
                if self.current(slot, inc) {
                    self.persist(slot);
                    self.q.after(PERSIST_EVERY_MS, Event::Persist { slot, inc });
                }
            }
            Event::Resume { slot } => self.resume(slot),
            Event::Ping { slot, inc } => {
                if self.current(slot, inc) {
                    self.ping(slot);
                    let every = (self.plan.session_ms / 3).max(1);
                    self.q.after(every, Event::Ping { slot, inc });
                }
            }
            Event::Fault(f) => self.fault(f),
            Event::Heal => {
                self.healed = true;
                if let Some(r) = self.server.replica.as_mut() {
                    r.lag_ms = 0;
                    r.cut_until = 0;
                }
                self.note(&[1], || "heal: the faults stop".into());
            }
        }
    }

    fn current(&self, slot: usize, inc: u32) -> bool {
        let p = &self.procs[slot];
        p.up && p.inc == inc
    }

    fn start(&mut self, slot: usize) {
        let wall = self.wall(slot);
        let mono = self.mono(slot);
        let plan = &self.plan;
        let p = &mut self.procs[slot];
        p.inc += 1;
        p.up = true;
        p.calls.clear();
        p.blocked = None;
        p.wake_at = None;
        p.gen = None;
        p.holder = u32::MAX;
        p.last_id = 0;
        p.adapter.restart();
        let nonce = p.rng.next_u64();
        let not_before = if plan.persist[slot] { p.persisted } else { 0 };
        p.clock.set(wall);
        let engine = LeaseEngine::new(
            plan.layout,
            plan.options,
            plan.max_drift_ms,
            not_before,
            plan.labels[slot].clone(),
            nonce,
            mono,
        )
        .expect("valid lease options");
        let owner = engine.owner().to_string();
        p.engine = Some(engine);
        let inc = p.inc;
        self.note(&[2, slot as u64, inc as u64], || {
            format!("p{slot}.{inc} starts as {owner}, not_before_ms {not_before}")
        });
        if not_before > 0 {
            self.count("restart with a persisted not_before_ms");
        }
        self.wake(slot, 0);
        let d = self.procs[slot].rng.range(0, self.plan.issue_every);
        self.q.after(d, Event::Issue { slot, inc });
        if self.plan.persist[slot] {
            self.q.after(PERSIST_EVERY_MS, Event::Persist { slot, inc });
        }
        if self.plan.kind == Kind::ZooKeeper {
            let every = (self.plan.session_ms / 3).max(1);
            self.q.after(every, Event::Ping { slot, inc });
        }
    }

    /// A ZooKeeper client's ping: the server hears it unless the process is paused or cut
    /// off from it; a client told that its session expired opens a new one at its next call.
    fn ping(&mut self, slot: usize) {
        let Some(session) = self.procs[slot].adapter.live_session() else {
            return;
        };
        if self.procs[slot].paused_until > self.q.now || self.cut(slot, true) {
            return;
        }
        if !self.server.zk_ping(session, self.q.now) && !self.cut(slot, false) {
            let inc = self.procs[slot].inc;
            self.note(&[15, slot as u64], || {
                format!("p{slot}.{inc}: ZooKeeper session {session:#x} expired")
            });
            self.procs[slot].adapter.session_expired();
        }
    }

    /// The process ends its use of the registry: the adapter's close requests (ZooKeeper's
    /// session close, etcd's lease revocations) go out, no reply awaited.
    fn close_registry(&mut self, slot: usize) {
        let inc = self.procs[slot].inc;
        for op in self.procs[slot].adapter.close() {
            let net = self.net();
            if self.rng.chance(net.lose) || self.cut(slot, true) {
                self.note(&[7, slot as u64], || {
                    format!("p{slot}.{inc} close: request lost")
                });
                continue;
            }
            let d = net.leg(&mut self.rng);
            let apply = Event::Apply {
                slot,
                inc,
                call: u64::MAX,
                op,
                reply: false,
            };
            self.q.after(d, apply);
        }
    }

    /// The driver: polls the engine until it sleeps, performing what it asks.
    fn drive(&mut self, slot: usize) {
        loop {
            let (mono, wall) = (self.mono(slot), self.wall(slot));
            let p = &mut self.procs[slot];
            let js = self.plan.js[slot];
            if !js {
                // The std driver is blocked in its call until the answer or the timeout.
                if let Some(id) = p.blocked {
                    let sent = p.calls.get(&id).map(|c| c.sent_mono);
                    match sent {
                        Some(s) if mono < s + self.plan.options.registry_timeout_ms => {
                            let left = s + self.plan.options.registry_timeout_ms - mono;
                            let t = self.plan.hosts[slot].true_ms(left);
                            self.wake(slot, t);
                            return;
                        }
                        _ => p.blocked = None,
                    }
                }
            }
            let Some(engine) = p.engine.as_mut() else {
                return;
            };
            p.clock.set(wall);
            let step = engine.poll(mono, wall);
            let inc = p.inc;
            match step {
                Step::Call { id, call } => {
                    let conv = p.adapter.begin(call.clone(), wall);
                    p.calls.insert(
                        id,
                        Call {
                            conv,
                            sent_mono: mono,
                        },
                    );
                    if !js {
                        p.blocked = Some(id);
                        let t =
                            self.plan.hosts[slot].true_ms(self.plan.options.registry_timeout_ms);
                        self.wake(slot, t);
                    }
                    self.note(&[3, slot as u64, id], || {
                        format!("p{slot}.{inc} call {id}: {call:?}")
                    });
                    self.advance(slot, id);
                }
                Step::Sleep(ms) => {
                    let t = self.plan.hosts[slot].true_ms(ms);
                    self.wake(slot, t);
                    return;
                }
                Step::Ready {
                    worker_id,
                    not_before_ms,
                } => {
                    let options = SnowflakeOptions::new(worker_id)
                        .with_max_drift_ms(self.plan.max_drift_ms)
                        .with_sequence_start(self.plan.sequence_start);
                    let mut gen = engine
                        .generator(options, p.clock.clone(), worker_id, not_before_ms)
                        .expect("a generator for the claimed worker ID");
                    gen.set_sequence_seed(p.rng.next_u64());
                    let owner = engine.owner().to_string();
                    p.gen = Some(gen);
                    p.holder = self.holders.len() as u32;
                    self.holders.push(Holder { slot, inc, owner });
                    self.note(&[4, slot as u64, worker_id, not_before_ms], || {
                        format!("p{slot}.{inc} ready: worker {worker_id} above {not_before_ms}")
                    });
                }
                Step::Failed(e) => {
                    self.note(&[5, slot as u64], || {
                        format!("p{slot}.{inc} start-up failed: {e}")
                    });
                    self.close_registry(slot);
                    self.stop(slot, false);
                    return;
                }
                Step::Closed => {
                    self.note(&[6, slot as u64], || format!("p{slot}.{inc} closed"));
                    self.close_registry(slot);
                    self.stop(slot, false);
                    return;
                }
            }
        }
    }

    /// Wakes the driver `delay` ms from now, unless it wakes sooner already.
    fn wake(&mut self, slot: usize, delay: u64) {
        let at = self.q.now + delay;
        let p = &mut self.procs[slot];
        if p.wake_at.is_none_or(|w| at < w || w < self.q.now) {
            p.wake_at = Some(at);
            let inc = p.inc;
            self.q.at(at, Event::Wake { slot, inc });
        }
    }

    /// The conversation of call `id` goes on: its next request is sent, or its answer
    /// handed to the engine.
    fn advance(&mut self, slot: usize, id: u64) {
        let p = &mut self.procs[slot];
        let Some(call) = p.calls.get_mut(&id) else {
            return;
        };
        let next = p.adapter.next(&mut call.conv);
        let inc = p.inc;
        match next {
            Ok(op) => {
                let net = self.net();
                if self.rng.chance(net.lose) || self.cut(slot, true) {
                    self.count("request lost");
                    self.note(&[7, slot as u64, id], || {
                        format!("p{slot}.{inc} call {id}: request lost")
                    });
                    return;
                }
                let deliveries = net.deliveries(&mut self.rng);
                if deliveries.1.is_some() {
                    self.count("request applied twice");
                }
                self.q.deliver(deliveries, |reply| Event::Apply {
                    slot,
                    inc,
                    call: id,
                    op: op.clone(),
                    reply,
                });
            }
            Err(answer) => {
                let p = &mut self.procs[slot];
                p.calls.remove(&id);
                if p.blocked == Some(id) {
                    p.blocked = None;
                }
                let (mono, wall) = (self.mono(slot), self.wall(slot));
                let p = &mut self.procs[slot];
                let inc = p.inc;
                self.note(&[8, slot as u64, id], || {
                    format!("p{slot}.{inc} call {id} answered {answer:?}")
                });
                let p = &mut self.procs[slot];
                p.clock.set(wall);
                if let Some(engine) = p.engine.as_mut() {
                    engine.answer(id, mono, wall, answer);
                }
                self.drive(slot);
            }
        }
    }

    fn cut(&self, slot: usize, request: bool) -> bool {
        !self.healed
            && self
                .plan
                .partitions
                .iter()
                .any(|p| p.cuts(slot, self.q.now, request))
    }

    fn apply(&mut self, slot: usize, inc: u32, call: u64, op: Op, reply: bool) {
        let applied = self.server.apply(&op, self.q.now, &mut self.rng);
        let (r, held_ms) = (applied.reply, applied.held_ms);
        self.note(&[9, slot as u64, call], || {
            format!("server applies p{slot}.{inc} call {call}: {op:?} -> {r:?}")
        });
        if let Some(e) = r.model_error() {
            self.violation = Some(Violation {
                invariant: "the model knows every request",
                detail: e.to_string(),
            });
            return;
        }
        if !reply {
            return;
        }
        let net = self.net();
        if self.rng.chance(net.no_reply) || self.cut(slot, false) {
            self.count("request applied, reply lost");
            self.note(&[10, slot as u64, call], || {
                format!("p{slot}.{inc} call {call}: reply lost")
            });
            return;
        }
        let d = net.leg(&mut self.rng) + held_ms;
        let epoch = (held_ms > 0).then_some(self.server.epoch);
        self.q.after(
            d,
            Event::Reply {
                slot,
                inc,
                call,
                reply: r,
                epoch,
            },
        );
    }

    fn replied(&mut self, slot: usize, id: u64, reply: Reply) {
        let mono = self.mono(slot);
        let timeout = self.plan.options.registry_timeout_ms;
        let p = &mut self.procs[slot];
        let Some(call) = p.calls.get_mut(&id) else {
            return;
        };
        // The adapter stops a conversation its caller gave up on (`live()`).
        if mono >= call.sent_mono + timeout {
            p.calls.remove(&id);
            self.drive(slot);
            return;
        }
        p.adapter.reply(&mut call.conv, reply);
        self.advance(slot, id);
    }

    fn issue(&mut self, slot: usize) {
        let wall = self.wall(slot);
        let p = &mut self.procs[slot];
        let Some(gen) = p.gen.as_ref() else {
            return;
        };
        p.clock.set(wall);
        let n = p.rng.range(1, 8);
        let holder = p.holder;
        let ids: Vec<u64> = (0..n).map_while(|_| gen.next_id().ok()).collect();
        for id in ids {
            if let Some(v) = self.record(slot, holder, id) {
                self.violation = Some(v);
                return;
            }
        }
    }

    fn record(&mut self, slot: usize, holder: u32, id: u64) -> Option<Violation> {
        self.issued += 1;
        let layout = self.plan.layout;
        let d = layout.decode(id).expect("an ID of the layout");
        let p = &mut self.procs[slot];
        p.last_issued_at = self.q.now;
        let h = &self.holders[holder as usize];
        let me_of = || {
            format!(
                "p{}.{} ({}) at {} ms, host clock {}",
                h.slot,
                h.inc,
                h.owner,
                self.q.now - T0,
                self.plan.hosts[slot].wall(self.q.now)
            )
        };
        let who = |other: u32| {
            let o = &self.holders[other as usize];
            format!("p{}.{} ({})", o.slot, o.inc, o.owner)
        };
        if id <= p.last_id {
            let me = me_of();
            return Some(Violation {
                invariant: "each generator's IDs strictly increase",
                detail: format!("{me} issued {id} after {}", p.last_id),
            });
        }
        p.last_id = id;
        if let Some(first) = self.ids.insert(id, holder) {
            let me = me_of();
            return Some(Violation {
                invariant: "no ID issued twice",
                detail: format!(
                    "ID {id} (worker {}, tick {}, time {}) issued by {} and again by {me}",
                    d.worker_id,
                    d.tick,
                    d.timestamp_ms,
                    who(first)
                ),
            });
        }
        let key = (d.tick << 8) | d.worker_id;
        match self.ticks.get(&key) {
            Some(other) if *other != holder => {
                let me = me_of();
                return Some(Violation {
                    invariant: "no tick of a worker ID used by two holders",
                    detail: format!(
                        "tick {} (time {}) of worker {} used by {} and by {me} (ID {id})",
                        d.tick,
                        d.timestamp_ms,
                        d.worker_id,
                        who(*other)
                    ),
                });
            }
            Some(_) => {}
            None => {
                self.ticks.insert(key, holder);
            }
        }
        let owner = &self.holders[holder as usize].owner;
        let mark = self.server.ghost_mark(d.worker_id, owner);
        if d.timestamp_ms > mark {
            let me = me_of();
            return Some(Violation {
                invariant: "every ID at or below a mark the registry accepted from its holder",
                detail: format!(
                    "ID {id} of {me} has time {} on worker {}; the highest mark the registry ever \
                     stored for this holder is {mark}",
                    d.timestamp_ms, d.worker_id
                ),
            });
        }
        None
    }

    /// The documented rule: persist `max(mark, now + interval + max_drift_ms)`.
    fn persist(&mut self, slot: usize) {
        let wall = self.wall(slot);
        let drift = self.plan.max_drift_ms;
        let p = &mut self.procs[slot];
        if let Some(gen) = p.gen.as_ref() {
            let mark = gen.high_water_mark_ms();
            p.persisted = p.persisted.max(mark.max(wall + PERSIST_EVERY_MS + drift));
        }
    }

    /// Ends the incarnation: `graceful` closes (seal, release) first.
    fn stop(&mut self, slot: usize, graceful: bool) {
        let p = &mut self.procs[slot];
        if graceful {
            if let (Some(engine), gen) = (p.engine.as_mut(), p.gen.as_ref()) {
                let hwm = gen.map_or(0, |g| g.seal());
                engine.close(hwm);
                let inc = p.inc;
                self.note(&[11, slot as u64, hwm], || {
                    format!("p{slot}.{inc} closes, sealed at {hwm}")
                });
                self.drive(slot);
                return;
            }
        }
        if self.plan.persist[slot] {
            self.persist(slot);
        }
        let p = &mut self.procs[slot];
        p.up = false;
        p.engine = None;
        p.gen = None;
        p.calls.clear();
        let delay = p.rng.range(0, RESTART_MAX_MS);
        self.q.after(delay, Event::Start { slot });
    }

    fn resume(&mut self, slot: usize) {
        if self.procs[slot].paused_until > self.q.now {
            return;
        }
        let held = std::mem::take(&mut self.procs[slot].held);
        self.note(&[12, slot as u64], || {
            format!("p{slot} resumes ({} events held)", held.len())
        });
        // The issuing thread may run before the lease's: the fence alone must hold.
        for e in held {
            self.handle(e);
        }
    }

    fn fault(&mut self, f: Fault) {
        self.count(f.class());
        self.note(&[13], || format!("fault {f:?}"));
        match f {
            Fault::Pause { slot, ms } => {
                let until = self.q.now + ms;
                let p = &mut self.procs[slot];
                p.paused_until = p.paused_until.max(until);
                self.q.at(until, Event::Resume { slot });
            }
            Fault::Crash { slot } => {
                if self.procs[slot].up {
                    self.stop(slot, false);
                }
            }
            Fault::Restart { slot } => {
                if self.procs[slot].up && self.procs[slot].paused_until <= self.q.now {
                    self.stop(slot, true);
                }
            }
            Fault::Bump { slot, by } => self.plan.hosts[slot].offset += by,
            Fault::LoseAll => self.server.lose(None, false),
            Fault::LoseKey { worker, mark_only } => self.server.lose(Some(worker), mark_only),
            Fault::Snapshot => self.snapshot = Some(self.server.state.clone()),
            Fault::Rollback => {
                if let Some(s) = self.snapshot.take() {
                    self.server.state = s;
                }
            }
            Fault::FailOver {
                offset,
                keep_unsent,
            } => {
                if self.server.replica.is_some() {
                    let lost = self.server.fail_over(self.q.now, offset);
                    if lost > 0 {
                        self.count("failover lost unreplicated writes");
                    }
                } else {
                    // A SQL standby: synchronous keeps every commit; asynchronous loses
                    // the last second's.
                    self.server.offset = offset;
                    if !keep_unsent {
                        if let Some(s) = self.snapshot.take() {
                            self.server.state = s;
                        }
                    }
                }
            }
            Fault::CutReplica { ms } => self.server.cut_replica(self.q.now, self.q.now + ms),
        }
    }

    /// How many processes issued since `since`, and how many should: as many as there are
    /// worker IDs, less the hosts whose clocks the peers check refuses.
    fn healed_issuers(&self, since: u64) -> (usize, usize) {
        let end = self.q.now;
        let capacity = (self.plan.layout.max_worker_id() + 1) as usize;
        let mut issuing = self
            .procs
            .iter()
            .filter(|p| p.up && p.last_issued_at > since)
            .count();
        let mut holders = capacity.min(self.plan.processes);
        if self.plan.kind == Kind::ZooKeeper {
            // Leaf's layout gives each identity (here, each label) one worker ID, its forever
            // node's number, never given again: the identities whose number fits the layout
            // hold, one process each.
            let mut labels: Vec<&String> = self.plan.labels.iter().collect();
            labels.sort();
            labels.dedup();
            holders = labels
                .iter()
                .filter(|l| {
                    let w = self.server.zk.worker_of(&zk_identity(l));
                    w.is_some_and(|w| w < capacity as u64)
                })
                .count();
            let mut issued: Vec<&String> = (0..self.plan.processes)
                .filter(|&i| self.procs[i].up && self.procs[i].last_issued_at > since)
                .map(|i| &self.plan.labels[i])
                .collect();
            issued.sort();
            issued.dedup();
            issuing = issued.len();
        }
        // A host whose clock is further than max_peer_skew_ms from the median of the live
        // holders' clocks is refused at start-up (ClockSkew), as it should be. The live
        // holders may be a single other host: two hosts further apart than that may keep
        // each other out, whichever holds first (a skewed host that holds first can keep
        // correct ones out, docs/reliability.md). Then one must issue.
        let skew = self.plan.options.max_peer_skew_ms;
        // etcd keeps no server time to age the reports: a report may be one renewal
        // interval old, so a correct clock may read that much further from the median.
        let stale = match self.plan.kind {
            Kind::Etcd => self.plan.options.renew_every_ms(self.plan.max_drift_ms),
            _ => 0,
        };
        let offsets: Vec<i64> = (0..self.plan.processes)
            .map(|i| self.plan.hosts[i].wall(end) as i64 - end as i64)
            .collect();
        let apart = offsets.iter().max().zip(offsets.iter().min());
        let may_refuse = apart.is_some_and(|(hi, lo)| hi.abs_diff(*lo) + 50 + stale > skew);
        if skew > 0 && may_refuse {
            return (issuing, holders.min(1));
        }
        (issuing, holders)
    }

    /// After the faults stop, as many processes as can hold a worker ID issue again
    /// within the bound.
    fn check_healed(&mut self, since: u64) {
        let end = self.q.now;
        let (issuing, want) = self.healed_issuers(since);
        if issuing < want {
            let states: Vec<String> = self
                .procs
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let stats = p.engine.as_ref().map(|e| {
                        let s = e.stats(self.plan.hosts[i].mono(end), self.plan.hosts[i].wall(end));
                        format!(
                            "{} worker {:?} last error {:?}",
                            s.state, s.worker_id, s.last_error
                        )
                    });
                    format!(
                        "p{i}.{}: up {}, last issued at {} ms, lease {:?}",
                        p.inc,
                        p.up,
                        p.last_issued_at.saturating_sub(T0),
                        stats
                    )
                })
                .collect();
            self.violation = Some(Violation {
                invariant: "after healing, every process that can hold a worker ID issues again",
                detail: format!(
                    "{issuing} of the {want} processes that can hold a worker ID issued after the \
                     faults stopped, in {} ms (bound {} ms):\n  {}",
                    end - since,
                    self.plan.heal_bound_ms(),
                    states.join("\n  ")
                ),
            });
        }
    }
}

const PERSIST_EVERY_MS: u64 = 1000;
