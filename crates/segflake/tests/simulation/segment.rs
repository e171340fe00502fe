//! The segment world: 2–8 processes, each a real `SegmentEngine` over one to three Leaf
//! rows (Tinyid's multi-database mode beyond one), fetching through a network with drawn
//! faults, closing with a give back, crashing and restarting.
//!
//! The store model applies the core's statements by their meaning: `allocate` raises
//! `max_id` by the step; the give back is modelled from the core's statement text, so the
//! model follows the statement the adapters send: the marker-table pair
//! (`give_back_intent`, then `give_back` by token) where the core has it, else the plain
//! compare of `max_id`.
//!
//! A Redis store may have a replica (a third of the guaranteed seeds): every write reaches
//! it in order after a lag while the link is up; the link is cut and healed, and the
//! replica is promoted with what reached it (a failover). With the replica wait (the
//! core's `ReplicaWait` rule, what every Redis adapter carries), a write's reply counts
//! only once the replica has it within the wait; a range is handed out only then.
//!
//! Invariants: no ID twice across all processes and incarnations; each engine's IDs
//! strictly increase; the ranges a store hands out are pairwise disjoint (a range whose
//! tail was given back counts only up to where it was given back).

use std::collections::BTreeMap;

use segflake::redis::ReplicaWait;
use segflake::segment::statements::statement;
use segflake::{Allocation, SegmentEngine, SegmentOptions};

use crate::world::{IdMap, NetFaults, Outcome, Queue, Rng, Trace, Violation};

const T0: u64 = crate::lease::T0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regime {
    Guaranteed,
    /// A store rolled back to an older snapshot (an asynchronous replica promoted).
    StoreRollback,
    /// The SQL give back as it was before the marker table: a compare of `max_id` alone,
    /// run twice by a resend.
    CompareGiveBack,
    /// A replicated Redis store whose writes count on the primary's word alone
    /// (`replicas=0`): a failover loses ranges already handed out.
    UnwaitedReplica,
}

/// How the store takes a give back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveBackRule {
    /// `UPDATE … SET max_id = ? WHERE biz_tag = ? AND max_id = ?`: a compare on a value
    /// that comes back once others allocate again.
    Compare,
    /// SQL: a marker row per give back, by a token the adapter makes (`give_back_intent`),
    /// then the give back of that token (`give_back`): applied at most once.
    Marker,
    /// Redis: one script compares the counter and sets a marker key with `NX` before it
    /// lowers the counter.
    Script,
}

impl GiveBackRule {
    /// The rule of the core's SQL statements as they are now.
    pub fn of_core() -> GiveBackRule {
        let sql = statement("postgres", "give_back", "leaf_alloc").unwrap_or_default();
        if sql.contains("leaf_alloc_give_back") {
            GiveBackRule::Marker
        } else {
            GiveBackRule::Compare
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Allocate {
        step: u64,
    },
    /// The compare (`Compare`), or the intent and its application by token (`Marker`), or
    /// the script (`Script`).
    GiveBack {
        expected: u64,
        lowered: u64,
    },
    Script {
        token: u64,
        expected: u64,
        lowered: u64,
    },
    Intent {
        token: u64,
        expected: u64,
        lowered: u64,
    },
    /// PostgreSQL's statement marks the record applied even when `max_id` moved on;
    /// MySQL's multi-table update only when it lowers `max_id` (`applied_on_miss` false).
    ApplyToken {
        token: u64,
        applied_on_miss: bool,
    },
}

impl Op {
    fn gives_back(&self) -> bool {
        !matches!(self, Op::Allocate { .. })
    }
}

#[derive(Debug, Clone)]
enum Reply {
    Allocated(Allocation),
    Done(bool),
}

/// One Leaf row and its give-back markers.
#[derive(Debug, Clone, Default)]
struct Row {
    max_id: u64,
    /// token → (expected, lowered, applied)
    markers: BTreeMap<u64, (u64, u64, bool)>,
}

struct Store {
    row: Row,
    /// The ranges handed out, pairwise disjoint: start → (end, holder).
    ranges: BTreeMap<u64, (u64, u32)>,
    snapshot: Option<Row>,
    replica: Option<Replica>,
}

/// A Redis replica: the primary's row as the writes that reached it left it.
struct Replica {
    row: Row,
    link_up: bool,
    /// Bumped by every cut, resync and failover: a write on its way under an older epoch
    /// never arrives.
    epoch: u64,
}

/// How a store is replicated (Redis with a replica).
#[derive(Debug, Clone, Copy)]
struct ReplicaPlan {
    /// The replica wait is on (the guarantee) or off (`replicas=0`).
    wait: bool,
    /// How long a write takes to reach the replica, in ms.
    lag: u64,
}

/// A reply held back until the replica has the write (`WAIT`).
#[derive(Debug)]
struct Held {
    slot: usize,
    inc: u32,
    call: u64,
    op: Op,
    reply: Reply,
    /// When the wait ends: the write counts only if it reached the replica by then.
    deadline: u64,
}

#[derive(Debug)]
enum Event {
    Start {
        slot: usize,
    },
    Issue {
        slot: usize,
        inc: u32,
    },
    Expire {
        slot: usize,
        inc: u32,
    },
    Apply {
        slot: usize,
        inc: u32,
        store: usize,
        call: u64,
        op: Op,
        reply: bool,
    },
    Reply {
        slot: usize,
        inc: u32,
        store: usize,
        call: u64,
        reply: Reply,
    },
    /// A write reaches the replica of `store` (if the link's epoch is still `epoch`).
    Replicate {
        store: usize,
        epoch: u64,
        row: Row,
        held: Option<Held>,
    },
    Fault(Fault),
    Heal,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    Crash {
        slot: usize,
    },
    Close {
        slot: usize,
    },
    Snapshot {
        store: usize,
    },
    Rollback {
        store: usize,
    },
    /// The replication link of `store` is cut: writes from now on reach the primary only.
    CutLink {
        store: usize,
    },
    /// The link is back: the replica resynchronises with the primary.
    HealLink {
        store: usize,
    },
    /// The replica of `store` is promoted with what reached it; a fresh replica follows.
    Failover {
        store: usize,
    },
}

impl Fault {
    fn class(&self) -> &'static str {
        match self {
            Fault::Crash { .. } => "process crashed (no give back)",
            Fault::Close { .. } => "process closed (gives back) and restarted",
            Fault::Snapshot { .. } => "store snapshot taken",
            Fault::Rollback { .. } => "store rolled back to a snapshot",
            Fault::CutLink { .. } => "replication link cut",
            Fault::HealLink { .. } => "replication link healed",
            Fault::Failover { .. } => "replica promoted (failover)",
        }
    }
}

struct Plan {
    regime: Regime,
    rule: GiveBackRule,
    /// The SQL store is MySQL's (else PostgreSQL's).
    mysql: bool,
    processes: usize,
    stores: usize,
    options: SegmentOptions,
    js: Vec<bool>,
    net: NetFaults,
    faults_ms: u64,
    issue_every: u64,
    schedule: Vec<(u64, Fault)>,
    replica: Option<ReplicaPlan>,
}

impl Plan {
    fn draw(seed: u64, regime: Regime) -> Plan {
        let mut rng = Rng::new(seed ^ 0x5e6_3e47);
        let processes = rng.range(2, 8) as usize;
        let stores = if rng.chance(0.25) {
            rng.range(2, 3) as usize
        } else {
            1
        };
        let step = rng.range(1, 200);
        let options = SegmentOptions::default()
            .with_step(step)
            .with_max_step(step * rng.range(1, 8))
            .with_dynamic_step(rng.chance(0.5))
            .with_prefetch_percent(rng.range(0, 100) as u8)
            .with_retry_backoff_ms(rng.range(0, 500))
            .with_store_timeout_ms(rng.range(20, 500))
            .with_give_back(true);
        let faults_ms = rng.range(5_000, 15_000);
        let mut schedule = Vec::new();
        let at = |rng: &mut Rng| T0 + rng.range(0, faults_ms);
        for _ in 0..rng.range(0, 12) {
            let slot = rng.range(0, processes as u64 - 1) as usize;
            schedule.push((at(&mut rng), Fault::Close { slot }));
        }
        for _ in 0..rng.range(0, 3) {
            let slot = rng.range(0, processes as u64 - 1) as usize;
            schedule.push((at(&mut rng), Fault::Crash { slot }));
        }
        if regime == Regime::StoreRollback {
            let store = rng.range(0, stores as u64 - 1) as usize;
            let first = at(&mut rng);
            schedule.push((first, Fault::Snapshot { store }));
            schedule.push((first + rng.range(50, 2000), Fault::Rollback { store }));
        }
        let timeout = options.store_timeout_ms;
        let replicated = match regime {
            Regime::Guaranteed => rng.chance(0.33),
            Regime::UnwaitedReplica => true,
            _ => false,
        };
        // The lag stays within the wait once healed (else no write could ever count).
        let wait_ms = ReplicaWait::resolve(None, 0, 1, timeout).timeout_ms;
        let replica = replicated.then(|| ReplicaPlan {
            wait: regime != Regime::UnwaitedReplica,
            lag: rng.range(1, (wait_ms / 2).max(1)),
        });
        if replica.is_some() {
            for _ in 0..rng.range(1, 4) {
                let store = rng.range(0, stores as u64 - 1) as usize;
                let cut = at(&mut rng);
                schedule.push((cut, Fault::CutLink { store }));
                let promote = cut + rng.range(0, 1500);
                if rng.chance(0.7) {
                    schedule.push((promote, Fault::Failover { store }));
                }
                schedule.push((promote + rng.range(0, 500), Fault::HealLink { store }));
            }
            for _ in 0..rng.range(0, 2) {
                let store = rng.range(0, stores as u64 - 1) as usize;
                schedule.push((at(&mut rng), Fault::Failover { store }));
            }
        }
        schedule.sort_by_key(|(t, _)| *t);
        Plan {
            regime,
            rule: if regime == Regime::CompareGiveBack {
                GiveBackRule::Compare
            } else if replica.is_some() || rng.chance(0.3) {
                GiveBackRule::Script
            } else {
                GiveBackRule::of_core()
            },
            mysql: rng.chance(0.5),
            processes,
            stores,
            js: (0..processes).map(|_| rng.chance(0.5)).collect(),
            net: {
                // Store calls resent (by a pool, a driver, a user's retry) up to one in five.
                let mut net = NetFaults::draw(&mut rng, timeout);
                net.twice = rng.rate(0.2);
                net
            },
            faults_ms,
            issue_every: rng.range(1, 40),
            schedule,
            options,
            replica,
        }
    }

    fn describe(&self) -> Vec<String> {
        let mut out = vec![
            format!(
                "world segment, regime {:?}, give back {:?} (MySQL's: {}), {} processes, {} stores",
                self.regime, self.rule, self.mysql, self.processes, self.stores
            ),
            format!("options {:?}", self.options),
            format!("drivers (js?) {:?}", self.js),
            format!("replica {:?}", self.replica),
            format!("network {:?}", self.net),
            format!(
                "faults for {} ms, issue every <= {} ms",
                self.faults_ms, self.issue_every
            ),
        ];
        for (t, f) in &self.schedule {
            out.push(format!("at {} fault {f:?}", t - T0));
        }
        out
    }
}

struct Proc {
    inc: u32,
    up: bool,
    engine: Option<SegmentEngine>,
    /// The fetch in flight: (call id, store).
    fetch: Option<(u64, usize)>,
    /// A give back in progress: its remaining requests.
    giving: Vec<Op>,
    holder: u32,
    last_id: u64,
    started_at: u64,
    last_issued_at: u64,
    /// The first ID given back, once the engine gave back.
    given_from: Option<u64>,
    rng: Rng,
}

struct Holder {
    slot: usize,
    inc: u32,
}

struct World {
    plan: Plan,
    q: Queue<Event>,
    rng: Rng,
    stores: Vec<Store>,
    procs: Vec<Proc>,
    holders: Vec<Holder>,
    ids: IdMap<u32>,
    trace: Trace,
    violation: Option<Violation>,
    faults: BTreeMap<&'static str, u64>,
    healed: bool,
    next_call: u64,
    issued: u64,
}

pub fn run(seed: u64, regime: Regime, keep_trace: bool) -> Outcome {
    let plan = Plan::draw(seed, regime);
    let mut rng = Rng::new(seed ^ 0x0d15_ea5e);
    let stores = (0..plan.stores)
        .map(|_| Store {
            row: Row {
                max_id: 1,
                markers: BTreeMap::new(),
            },
            ranges: BTreeMap::new(),
            snapshot: None,
            replica: plan.replica.map(|_| Replica {
                row: Row {
                    max_id: 1,
                    markers: BTreeMap::new(),
                },
                link_up: true,
                epoch: 0,
            }),
        })
        .collect();
    let procs = (0..plan.processes)
        .map(|_| Proc {
            inc: 0,
            up: false,
            engine: None,
            fetch: None,
            giving: Vec::new(),
            holder: 0,
            last_id: 0,
            started_at: 0,
            last_issued_at: 0,
            given_from: None,
            rng: rng.fork(),
        })
        .collect();
    let mut w = World {
        q: Queue::new(T0),
        rng,
        stores,
        procs,
        holders: Vec::new(),
        ids: IdMap::default(),
        trace: Trace::new(keep_trace),
        violation: None,
        faults: BTreeMap::new(),
        healed: false,
        next_call: 0,
        issued: 0,
        plan,
    };
    for slot in 0..w.plan.processes {
        w.q.at(T0, Event::Start { slot });
    }
    for (t, f) in w.plan.schedule.clone() {
        w.q.at(t, Event::Fault(f));
    }
    w.q.at(T0 + w.plan.faults_ms, Event::Heal);
    let end = T0 + w.plan.faults_ms + 3000;
    while w.violation.is_none() {
        let Some(e) = w.q.pop(end) else { break };
        w.handle(e);
    }
    if w.violation.is_none() {
        w.check_healed(T0 + w.plan.faults_ms, end);
    }
    let drawn = w.plan.describe();
    Outcome::of(w.violation, drawn, w.faults, &w.q, w.issued, &w.trace)
}

impl World {
    fn note(&mut self, parts: &[u64], line: impl FnOnce() -> String) {
        let at = self.q.now - T0;
        self.trace.event(at, parts, line);
    }

    fn count(&mut self, class: &'static str) {
        *self.faults.entry(class).or_insert(0) += 1;
    }

    fn net(&self) -> NetFaults {
        if self.healed {
            NetFaults::NONE
        } else {
            self.plan.net
        }
    }

    fn current(&self, slot: usize, inc: u32) -> bool {
        self.procs[slot].up && self.procs[slot].inc == inc
    }

    fn handle(&mut self, e: Event) {
        match e {
            Event::Start { slot } => self.start(slot),
            Event::Issue { slot, inc } => {
                if self.current(slot, inc) && self.procs[slot].engine.is_some() {
                    self.issue(slot);
                    let d = self.procs[slot].rng.range(1, self.plan.issue_every);
                    self.q.after(d, Event::Issue { slot, inc });
                }
            }
            Event::Expire { slot, inc } => {
                if self.current(slot, inc) {
                    self.expire(slot);
                }
            }
            Event::Apply {
                slot,
                inc,
                store,
                call,
                op,
                reply,
            } => self.apply(slot, inc, store, call, op, reply),
            Event::Reply {
                slot,
                inc,
                store,
                call,
                reply,
            } => {
                if self.current(slot, inc) {
                    self.replied(slot, store, call, reply);
                }
            }
            Event::Replicate {
                store,
                epoch,
                row,
                held,
            } => self.replicate(store, epoch, row, held),
            Event::Fault(f) => {
                self.count(f.class());
                self.note(&[20], || format!("fault {f:?}"));
                match f {
                    Fault::Crash { slot } => {
                        if self.procs[slot].up {
                            self.end(slot);
                        }
                    }
                    Fault::Close { slot } => self.close(slot),
                    Fault::Snapshot { store } => {
                        let s = &mut self.stores[store];
                        s.snapshot = Some(s.row.clone());
                    }
                    Fault::Rollback { store } => {
                        let s = &mut self.stores[store];
                        if let Some(row) = s.snapshot.take() {
                            s.row = row;
                            // The ghost forgets nothing: the ranges handed out stay.
                        }
                    }
                    Fault::CutLink { store } => {
                        if let Some(r) = self.stores[store].replica.as_mut() {
                            r.link_up = false;
                            r.epoch += 1;
                        }
                    }
                    Fault::HealLink { store } => self.heal_link(store),
                    Fault::Failover { store } => {
                        let s = &mut self.stores[store];
                        if let Some(r) = s.replica.as_mut() {
                            // Promoted with what reached it; a fresh replica of it follows.
                            s.row = r.row.clone();
                            r.link_up = true;
                            r.epoch += 1;
                        }
                    }
                }
            }
            Event::Heal => {
                self.healed = true;
                self.note(&[21], || "heal".into());
                for store in 0..self.stores.len() {
                    if self.stores[store]
                        .replica
                        .as_ref()
                        .is_some_and(|r| !r.link_up)
                    {
                        self.heal_link(store);
                    }
                }
            }
        }
    }

    fn start(&mut self, slot: usize) {
        let stores = self.plan.stores;
        let p = &mut self.procs[slot];
        p.inc += 1;
        p.up = true;
        p.fetch = None;
        p.giving.clear();
        p.last_id = 0;
        p.given_from = None;
        p.started_at = self.q.now;
        p.engine = Some(
            SegmentEngine::with_stores("order", &self.plan.options, stores).expect("valid options"),
        );
        p.holder = self.holders.len() as u32;
        let inc = p.inc;
        self.holders.push(Holder { slot, inc });
        self.note(&[22, slot as u64], || format!("p{slot}.{inc} starts"));
        let d = self.procs[slot].rng.range(0, 20);
        self.q.after(d, Event::Issue { slot, inc });
    }

    /// The driver: takes IDs; with none ready, starts the fetch the engine asks for.
    fn issue(&mut self, slot: usize) {
        let n = self.procs[slot].rng.range(1, 20);
        for _ in 0..n {
            let p = &mut self.procs[slot];
            let Some(engine) = p.engine.as_ref() else {
                return;
            };
            let got = engine.try_next();
            let wants = engine.wants_fetch();
            if let Some(id) = got {
                if let Some(v) = self.record(slot, id) {
                    self.violation = Some(v);
                    return;
                }
            }
            if wants || got.is_none() {
                self.fetch(slot);
            }
            if got.is_none() {
                return;
            }
        }
    }

    fn fetch(&mut self, slot: usize) {
        let now = self.q.now;
        let p = &mut self.procs[slot];
        let Some(engine) = p.engine.as_ref() else {
            return;
        };
        let Some(req) = engine.begin_fetch(now) else {
            return;
        };
        self.next_call += 1;
        let call = self.next_call;
        p.fetch = Some((call, req.store));
        let inc = p.inc;
        let timeout = self.plan.options.store_timeout_ms;
        self.q.after(timeout, Event::Expire { slot, inc });
        self.note(&[23, slot as u64, call, req.step], || {
            format!(
                "p{slot}.{inc} fetch {call}: allocate step {} from store {}",
                req.step, req.store
            )
        });
        self.send(slot, req.store, call, Op::Allocate { step: req.step });
    }

    fn send(&mut self, slot: usize, store: usize, call: u64, op: Op) {
        let net = self.net();
        let inc = self.procs[slot].inc;
        if self.rng.chance(net.lose) {
            self.count("store request lost");
            self.note(&[24, slot as u64, call], || {
                format!("p{slot}.{inc} request {call} lost")
            });
            if op.gives_back() {
                // A give back whose request is lost gives nothing back.
                self.procs[slot].giving.clear();
                self.finish_close(slot);
            }
            return;
        }
        let deliveries = net.deliveries(&mut self.rng);
        if deliveries.1.is_some() {
            self.count("store request applied twice");
        }
        self.q.deliver(deliveries, |reply| Event::Apply {
            slot,
            inc,
            store,
            call,
            op: op.clone(),
            reply,
        });
    }

    fn apply(&mut self, slot: usize, inc: u32, store: usize, call: u64, op: Op, reply: bool) {
        let holder = self.holder_of(slot, inc);
        let s = &mut self.stores[store];
        let r = match &op {
            Op::Allocate { step } => {
                s.row.max_id += step;
                Reply::Allocated(Allocation::new(s.row.max_id, *step))
            }
            Op::GiveBack { expected, lowered } => {
                let done = s.row.max_id == *expected;
                if done {
                    s.row.max_id = *lowered;
                }
                Reply::Done(done)
            }
            Op::Script {
                token,
                expected,
                lowered,
            } => {
                // GET == expected, SET marker NX, SET: one atomic script.
                let fresh = !s.row.markers.contains_key(token);
                let done = s.row.max_id == *expected && fresh;
                if done {
                    s.row.markers.insert(*token, (*expected, *lowered, true));
                    s.row.max_id = *lowered;
                }
                Reply::Done(done)
            }
            Op::Intent {
                token,
                expected,
                lowered,
            } => {
                s.row
                    .markers
                    .entry(*token)
                    .or_insert((*expected, *lowered, false));
                Reply::Done(true)
            }
            Op::ApplyToken {
                token,
                applied_on_miss,
            } => {
                let mut done = false;
                if let Some(m) = s.row.markers.get_mut(token) {
                    if !m.2 {
                        if s.row.max_id == m.0 {
                            s.row.max_id = m.1;
                            done = true;
                        }
                        m.2 = done || *applied_on_miss;
                    }
                }
                Reply::Done(done)
            }
        };
        // A give back that lowered max_id returns the tails of its own ranges.
        let lowered_to = match (&op, &r) {
            (Op::GiveBack { lowered, .. } | Op::Script { lowered, .. }, Reply::Done(true)) => {
                Some(*lowered)
            }
            (Op::ApplyToken { .. }, Reply::Done(true)) => Some(s.row.max_id),
            _ => None,
        };
        if let Some(low) = lowered_to {
            let from = s.ranges.range(..=low).next_back().map_or(0, |(a, _)| *a);
            for (start, (end, h)) in s.ranges.range_mut(from..) {
                if *h == holder && *end > low {
                    *end = low.max(*start);
                }
            }
            // Empty ranges are gone: a new range may start where one was given back.
            s.ranges.retain(|a, (b, _)| a < b);
        }
        let max_id = s.row.max_id;
        self.note(&[25, slot as u64, call], || {
            format!(
                "store {store} applies p{slot}.{inc} {call}: {op:?} -> {r:?} (max_id now {max_id})"
            )
        });
        // The write travels to the replica; with the wait, its reply travels with it, and
        // an allocation no reply reports is handed to no one.
        let waited = self.plan.replica.is_some_and(|p| p.wait);
        let waits = waited && reply;
        let s = &self.stores[store];
        let link = s
            .replica
            .as_ref()
            .map(|r| (r.epoch, r.link_up, s.row.clone()));
        if let (Some(plan), Some((epoch, link_up, row))) = (self.plan.replica, link) {
            let wait = ReplicaWait::resolve(None, 0, 1, self.plan.options.store_timeout_ms);
            let held = waits.then(|| Held {
                slot,
                inc,
                call,
                op: op.clone(),
                reply: r.clone(),
                deadline: self.q.now + wait.timeout_ms,
            });
            if link_up {
                self.q.after(
                    plan.lag,
                    Event::Replicate {
                        store,
                        epoch,
                        row,
                        held,
                    },
                );
            } else if let Some(held) = held {
                self.unacknowledged(store, held);
            }
            if waited {
                return;
            }
        }
        if let Reply::Allocated(a) = &r {
            self.hand_out(store, a, slot, inc);
        }
        if !reply || self.violation.is_some() {
            return;
        }
        self.reply(slot, inc, store, call, op, r);
    }

    /// Records the range of `a` as handed to `slot`'s incarnation `inc`: a violation if it
    /// overlaps one handed out before and not given back.
    fn hand_out(&mut self, store: usize, a: &Allocation, slot: usize, inc: u32) {
        let holder = self.holder_of(slot, inc);
        let s = &mut self.stores[store];
        let (start, end) = (a.max_id - a.step, a.max_id);
        // Disjoint so far, so only the range starting last below `end` can overlap.
        let before = s.ranges.range(..end).next_back().map(|(a, b)| (*a, *b));
        if let Some((other_start, (other_end, other))) =
            before.filter(|(a, (b, _))| a < b && *b > start)
        {
            let o = &self.holders[other as usize];
            self.violation = Some(Violation {
                invariant: "the ranges a store hands out are disjoint",
                detail: format!(
                    "store {store} handed [{start}, {end}) to p{slot}.{inc}; [{}, {}) was \
                     handed to p{}.{} and not given back",
                    other_start, other_end, o.slot, o.inc
                ),
            });
        }
        s.ranges.insert(start, (end, holder));
    }

    /// A write reaches the replica; a reply held for it counts if the wait has not ended.
    fn replicate(&mut self, store: usize, epoch: u64, row: Row, held: Option<Held>) {
        let Some(replica) = self.stores[store].replica.as_mut() else {
            return;
        };
        let arrived = replica.epoch == epoch;
        if arrived {
            replica.row = row;
        }
        let Some(held) = held else { return };
        let wait = ReplicaWait::resolve(None, 0, 1, self.plan.options.store_timeout_ms);
        let acked = u64::from(arrived && self.q.now <= held.deadline);
        if wait.check("the write", acked).is_err() {
            return self.unacknowledged(store, held);
        }
        if let Reply::Allocated(a) = &held.reply {
            self.hand_out(store, a, held.slot, held.inc);
        }
        if self.violation.is_none() {
            self.reply(held.slot, held.inc, store, held.call, held.op, held.reply);
        }
    }

    /// A write too few replicas acknowledged: the adapter answers an error, which the
    /// engine meets as a failed call (a timed-out fetch; a give back that gave nothing).
    fn unacknowledged(&mut self, store: usize, held: Held) {
        self.count("write without the replica's acknowledgement refused");
        let (slot, inc, call) = (held.slot, held.inc, held.call);
        self.note(&[29, slot as u64, call], || {
            format!("p{slot}.{inc} {call}: store {store}'s replica did not acknowledge")
        });
        if held.op.gives_back() && self.procs[slot].inc == inc {
            self.procs[slot].giving.clear();
            self.finish_close(slot);
        }
    }

    fn heal_link(&mut self, store: usize) {
        let s = &mut self.stores[store];
        if let Some(r) = s.replica.as_mut() {
            // A full resynchronisation: the replica becomes the primary's copy.
            r.row = s.row.clone();
            r.link_up = true;
            r.epoch += 1;
        }
    }

    /// The reply of `call` on its way back (or lost).
    fn reply(&mut self, slot: usize, inc: u32, store: usize, call: u64, op: Op, r: Reply) {
        let net = self.net();
        if self.rng.chance(net.no_reply) {
            self.count("store request applied, reply lost");
            self.note(&[26, slot as u64, call], || {
                format!("p{slot}.{inc} reply {call} lost")
            });
            if op.gives_back() {
                if let Some(p) = self.procs.get_mut(slot).filter(|p| p.inc == inc) {
                    p.giving.clear();
                }
                if self.procs[slot].inc == inc {
                    self.finish_close(slot);
                }
            }
            return;
        }
        let d = net.leg(&mut self.rng);
        self.q.after(
            d,
            Event::Reply {
                slot,
                inc,
                store,
                call,
                reply: r,
            },
        );
    }

    fn holder_of(&self, slot: usize, inc: u32) -> u32 {
        self.holders
            .iter()
            .rposition(|h| h.slot == slot && h.inc == inc)
            .map_or(u32::MAX, |i| i as u32)
    }

    fn replied(&mut self, slot: usize, store: usize, call: u64, reply: Reply) {
        let now = self.q.now;
        let js = self.plan.js[slot];
        let p = &mut self.procs[slot];
        match reply {
            Reply::Allocated(a) => {
                let Some(engine) = p.engine.as_ref() else {
                    return;
                };
                // The std driver discards an answer after the call timed out; the JS
                // driver may hand a late answer to the next fetch (the engine checks it).
                let live = p.fetch == Some((call, store));
                if !live && !js {
                    return;
                }
                if live {
                    p.fetch = None;
                }
                let result = engine.complete_fetch_from(now, store, Ok(a));
                let inc = p.inc;
                if !live {
                    self.count("late store answer handed to the next fetch");
                }
                self.note(&[27, slot as u64, call], || {
                    format!("p{slot}.{inc} fetch {call} completes [{}, {}) from store {store}: {result:?}", a.start(), a.max_id)
                });
            }
            Reply::Done(_) => {
                if let Some(op) = (!p.giving.is_empty()).then(|| p.giving.remove(0)) {
                    self.send(slot, store, call, op);
                } else {
                    self.finish_close(slot);
                }
            }
        }
    }

    fn expire(&mut self, slot: usize) {
        let now = self.q.now;
        let p = &mut self.procs[slot];
        if let Some(engine) = p.engine.as_ref() {
            if engine.expire_fetch(now, segflake::Spelling::Snake) {
                p.fetch = None;
                self.count("store call timed out");
            }
        }
    }

    fn record(&mut self, slot: usize, id: u64) -> Option<Violation> {
        self.issued += 1;
        let p = &mut self.procs[slot];
        let me_of = || format!("p{slot}.{} at {} ms", p.inc, self.q.now - T0);
        if id <= p.last_id {
            let me = me_of();
            return Some(Violation {
                invariant: "each generator's IDs strictly increase",
                detail: format!("{me} issued {id} after {}", p.last_id),
            });
        }
        p.last_id = id;
        p.last_issued_at = self.q.now;
        if p.given_from.is_some_and(|g| id >= g) {
            let me = me_of();
            return Some(Violation {
                invariant: "nothing is issued from a range after it was given back",
                detail: format!("{me} issued {id} after giving back from {:?}", p.given_from),
            });
        }
        if let Some(first) = self.ids.insert(id, p.holder) {
            let o = &self.holders[first as usize];
            let me = me_of();
            return Some(Violation {
                invariant: "no ID issued twice",
                detail: format!("ID {id} issued by p{}.{} and again by {me}", o.slot, o.inc),
            });
        }
        None
    }

    /// A graceful close: the engine closes and gives back what it did not issue.
    fn close(&mut self, slot: usize) {
        let rule = self.plan.rule;
        let p = &mut self.procs[slot];
        if !p.up {
            return;
        }
        let Some(engine) = p.engine.as_ref() else {
            return;
        };
        engine.close();
        let Some(gb) = engine.take_give_back() else {
            self.end(slot);
            return;
        };
        p.given_from = Some(gb.max_id);
        let token = p.rng.next_u64();
        let (expected, lowered) = (gb.expected_max_id, gb.max_id);
        let mut ops = match rule {
            GiveBackRule::Compare => vec![Op::GiveBack { expected, lowered }],
            GiveBackRule::Script => vec![Op::Script {
                token,
                expected,
                lowered,
            }],
            GiveBackRule::Marker => vec![
                Op::Intent {
                    token,
                    expected,
                    lowered,
                },
                Op::ApplyToken {
                    token,
                    applied_on_miss: !self.plan.mysql,
                },
            ],
        };
        let first = ops.remove(0);
        p.giving = ops;
        self.next_call += 1;
        let call = self.next_call;
        let inc = p.inc;
        self.note(&[28, slot as u64, expected, lowered], || {
            format!("p{slot}.{inc} closes, gives back [{lowered}, {expected})")
        });
        self.send(slot, 0, call, first);
    }

    fn finish_close(&mut self, slot: usize) {
        if self.procs[slot].up
            && self.procs[slot]
                .engine
                .as_ref()
                .is_some_and(|e| e.is_closed())
        {
            self.end(slot);
        }
    }

    /// After the faults stop, every process that runs issues within the bound: a store
    /// call's timeout and the retry backoff.
    fn check_healed(&mut self, healed_at: u64, end: u64) {
        let o = &self.plan.options;
        let bound = o.store_timeout_ms + o.retry_backoff_ms + 500;
        for (i, p) in self.procs.iter().enumerate() {
            let since = healed_at.max(p.started_at);
            if p.up && since + bound < end && p.last_issued_at < since {
                self.violation = Some(Violation {
                    invariant: "after healing, every process issues again",
                    detail: format!(
                        "p{i}.{} issued nothing in the {} ms since {} (bound {bound} ms); engine: {:?}",
                        p.inc,
                        end - since,
                        since - T0,
                        p.engine.as_ref().map(|e| e.stats(end))
                    ),
                });
                return;
            }
        }
    }

    fn end(&mut self, slot: usize) {
        let p = &mut self.procs[slot];
        p.up = false;
        p.engine = None;
        p.fetch = None;
        p.giving.clear();
        let d = p.rng.range(0, 300);
        self.q.after(d, Event::Start { slot });
    }
}
